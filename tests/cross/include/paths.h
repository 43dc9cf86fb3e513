/*
 * <paths.h> for the macOS target of the cross build: zig 0.11 ships the
 * macOS libc headers without it, and libuv includes it. The values are the
 * standard BSD paths that macOS's own <paths.h> defines; only the cross
 * build sees this file (tests/cross-macos.sh), a Mac build uses the SDK's.
 */
#ifndef _PATHS_H_
#define _PATHS_H_

#define _PATH_BSHELL "/bin/sh"
#define _PATH_CONSOLE "/dev/console"
#define _PATH_CSHELL "/bin/csh"
#define _PATH_DEFPATH "/usr/bin:/bin"
#define _PATH_DEV "/dev/"
#define _PATH_DEVNULL "/dev/null"
#define _PATH_KMEM "/dev/kmem"
#define _PATH_MAILDIR "/var/mail"
#define _PATH_MEM "/dev/mem"
#define _PATH_NOLOGIN "/etc/nologin"
#define _PATH_SENDMAIL "/usr/sbin/sendmail"
#define _PATH_SHELLS "/etc/shells"
#define _PATH_STDPATH "/usr/bin:/bin:/usr/sbin:/sbin"
#define _PATH_TTY "/dev/tty"
#define _PATH_VI "/usr/bin/vi"
#define _PATH_TMP "/tmp/"
#define _PATH_VARDB "/var/db/"
#define _PATH_VARRUN "/var/run/"
#define _PATH_VARTMP "/var/tmp/"

#endif
