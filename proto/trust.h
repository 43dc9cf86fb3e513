/*
 * Whether the daemon may trust a path: the files it keeps (database, its
 * -wal, -shm and -journal, the socket's lock file) and the directories it
 * keeps them in (database, state and socket directories). The rule is
 * sshd's StrictModes, made precise in trust.c and docs/security.md: what
 * the daemon reads back and acts on as its own user (root, for a system
 * daemon) must be its own, in a directory nobody else can write, under
 * ancestors nobody else can rename. Clients check the directory of the
 * socket they talk to with the same rule (socket-trust.c).
 */
#ifndef SL_TRUST_H
#define SL_TRUST_H

#include <stddef.h>
#include <sys/types.h>

enum trust_kind {
	TRUST_FILE, /* a regular file, never a symbolic link */
	TRUST_DIR,  /* a directory; a link root or uid made is followed */
};

/*
 * Check path for a daemon running as uid. Every directory on the way,
 * links resolved, must be owned by root or uid and not writable by group
 * or others; an ancestor (not the directory the file or directory itself
 * is in) may be writable by others if it has the sticky bit (/tmp). A
 * symbolic link on the way must be root's or uid's and is followed; at the
 * path of a TRUST_FILE it is refused. The file itself must be uid's (a
 * directory: root's or uid's) and not writable by group or others.
 *
 * A path that does not exist (from some component on) passes when what
 * exists of it does: the daemon creates the rest, and checks again after
 * creating it. A relative path is taken from the current directory, whose
 * own ancestors are checked too.
 *
 * Returns 0, or a negative errno with cause naming the path at fault and
 * why: -EPERM (owner, mode), -ELOOP (a link refused, or too many),
 * -ENOTDIR, -EINVAL (not a regular file), -ENAMETOOLONG, or what lstat or
 * readlink failed with.
 */
int trust_path_check(const char *path, uid_t uid, enum trust_kind kind,
                     char *cause, size_t causelen);

#endif
