/*
 * trust_path_check (proto/trust.c): which files and directories the daemon
 * takes as its own; socket_check (proto/socket-trust.c): which sockets a
 * client talks to. Each test builds a tree in a private temporary
 * directory (mkdtemp, under $TMPDIR or /tmp: a sticky directory above it is
 * what /tmp is for everyone). Cases that need another user's files make
 * them with chown, so they need root; without it they skip, and under
 * CI=true fail.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "socket-trust.h"
#include "trust.h"

#define OTHER 65534 /* the uid and gid another user's files get */

static char top[256];

static void
need_root(void)
{
	const char *ci = getenv("CI");

	if (geteuid() == 0)
		return;
	if (ci != NULL && strcmp(ci, "true") == 0)
		fail_msg("needs root (chown), and CI=true forbids skipping");
	skip();
}

/* top/rel */
static const char *
at(const char *rel)
{
	static char buf[4][PATH_MAX];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof buf[i], "%s/%s", top, rel);
	return buf[i];
}

static void
mkdir_mode(const char *rel, mode_t mode)
{
	assert_int_equal(mkdir(at(rel), 0700), 0);
	assert_int_equal(chmod(at(rel), mode), 0); /* whatever the umask */
}

static void
touch_mode(const char *rel, mode_t mode)
{
	int fd = open(at(rel), O_WRONLY | O_CREAT | O_EXCL, 0600);

	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(chmod(at(rel), mode), 0);
}

/* check(): trust_path_check with the result's cause kept for asserts. */
static char cause[1024];

static int
check(const char *path, uid_t uid, enum trust_kind kind)
{
	cause[0] = '\0';
	return trust_path_check(path, uid, kind, cause, sizeof cause);
}

static void
cause_has(const char *word)
{
	if (strstr(cause, word) == NULL)
		fail_msg("cause \"%s\" does not say \"%s\"", cause, word);
}

static int
setup(void **state)
{
	const char *tmp = getenv("TMPDIR");
	char cause0[1024];

	(void)state;
	snprintf(top, sizeof top, "%s/sl-trust-XXXXXX",
	         tmp != NULL && tmp[0] == '/' ? tmp : "/tmp");
	if (mkdtemp(top) == NULL)
		return -1;
	/* Everything below relies on the place itself passing. */
	if (trust_path_check(top, geteuid(), TRUST_DIR, cause0,
	                     sizeof cause0) != 0) {
		fprintf(stderr, "the temporary directory does not pass: %s\n",
		        cause0);
		return -1;
	}
	mkdir_mode("priv", 0700);
	touch_mode("priv/f", 0600);
	return 0;
}

static int
rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return flag == FTW_DP ? rmdir(path) : unlink(path);
}

static int
teardown(void **state)
{
	(void)state;
	return nftw(top, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* A private directory and the daemon's own file in it pass, and so do
 * paths still to be made in it, relative paths and "..". */
static void
test_private_path_passes(void **state)
{
	char cwd[PATH_MAX];

	(void)state;
	assert_int_equal(check(at("priv/f"), geteuid(), TRUST_FILE), 0);
	assert_int_equal(check(at("priv"), geteuid(), TRUST_DIR), 0);
	assert_int_equal(check(at("priv/"), geteuid(), TRUST_DIR), 0);
	assert_int_equal(check(at("priv/new.db"), geteuid(), TRUST_FILE), 0);
	assert_int_equal(check(at("priv/a/b/c"), geteuid(), TRUST_DIR), 0);
	assert_int_equal(check(at("priv/./x/../f"), geteuid(), TRUST_FILE), 0);
	/* 0644 is readable, not writable, by others: the daemon's concern
	 * here is what it reads back. */
	assert_int_equal(chmod(at("priv/f"), 0644), 0);
	assert_int_equal(check(at("priv/f"), geteuid(), TRUST_FILE), 0);

	assert_non_null(getcwd(cwd, sizeof cwd));
	assert_int_equal(chdir(at("priv")), 0);
	assert_int_equal(check("f", geteuid(), TRUST_FILE), 0);
	assert_int_equal(check("../priv/f", geteuid(), TRUST_FILE), 0);
	assert_int_equal(chdir(cwd), 0);
}

/* Another user's file, or directory, is refused, naming it and its owner;
 * for a per-user daemon a root-owned directory is fine, a root-owned
 * file is not its own. */
static void
test_foreign_owner_refused(void **state)
{
	(void)state;
	need_root();
	assert_int_equal(chown(at("priv/f"), OTHER, OTHER), 0);
	assert_int_equal(check(at("priv/f"), 0, TRUST_FILE), -EPERM);
	cause_has(at("priv/f"));
	cause_has("owned by uid 65534");
	/* The same file is the per-user daemon's own. */
	assert_int_equal(check(at("priv/f"), OTHER, TRUST_FILE), 0);

	touch_mode("priv/r", 0600); /* root's */
	assert_int_equal(check(at("priv/r"), OTHER, TRUST_FILE), -EPERM);
	cause_has("owned by uid 0");
	assert_int_equal(check(at("priv"), OTHER, TRUST_DIR), 0);

	/* A directory of theirs, anywhere on the way. */
	mkdir_mode("theirs", 0755);
	mkdir_mode("theirs/sub", 0700);
	assert_int_equal(chown(at("theirs"), OTHER, OTHER), 0);
	assert_int_equal(check(at("theirs/x.db"), 0, TRUST_FILE), -EPERM);
	cause_has("directory ");
	cause_has(at("theirs"));
	cause_has("owned by uid 65534");
	assert_int_equal(check(at("theirs/sub/x.db"), 0, TRUST_FILE), -EPERM);
	cause_has(at("theirs"));
	assert_int_equal(check(at("theirs"), 0, TRUST_DIR), -EPERM);
	/* Even where the file does not exist yet: it would be made there. */
	assert_int_equal(check(at("theirs/new/x.db"), 0, TRUST_FILE), -EPERM);
}

/* A directory others may write, by group or by all, is refused as the
 * file's directory and as an ancestor; so is a file others may write. */
static void
test_writable_dir_refused(void **state)
{
	(void)state;
	mkdir_mode("gw", 0770);
	touch_mode("gw/f", 0600);
	assert_int_equal(check(at("gw/f"), geteuid(), TRUST_FILE), -EPERM);
	cause_has(at("gw"));
	cause_has("writable by other users (mode 0770)");
	assert_int_equal(check(at("gw"), geteuid(), TRUST_DIR), -EPERM);

	mkdir_mode("ow", 0707);
	assert_int_equal(check(at("ow/new.db"), geteuid(), TRUST_FILE), -EPERM);
	cause_has("mode 0707");

	/* An ancestor: the private directory under it could be renamed
	 * away and replaced. */
	mkdir_mode("gw/sub", 0700);
	touch_mode("gw/sub/f", 0600);
	assert_int_equal(check(at("gw/sub/f"), geteuid(), TRUST_FILE), -EPERM);
	cause_has(at("gw"));
	cause_has("not sticky");
	assert_int_equal(check(at("gw/sub"), geteuid(), TRUST_DIR), -EPERM);

	assert_int_equal(chmod(at("priv/f"), 0620), 0);
	assert_int_equal(check(at("priv/f"), geteuid(), TRUST_FILE), -EPERM);
	cause_has(at("priv/f"));
	cause_has("mode 0620");
	assert_int_equal(chmod(at("priv/f"), 0602), 0);
	assert_int_equal(check(at("priv/f"), geteuid(), TRUST_FILE), -EPERM);
}

/* A sticky directory like /tmp: never the file's own directory (others
 * may create the -wal it does not have yet), but fine above a directory
 * of the daemon's, which nobody else can rename there. */
static void
test_sticky_dir(void **state)
{
	(void)state;
	mkdir_mode("tmp", 01777);
	touch_mode("tmp/sl.db", 0600);
	assert_int_equal(check(at("tmp/sl.db"), geteuid(), TRUST_FILE), -EPERM);
	cause_has(at("tmp"));
	cause_has("mode 1777");
	cause_has("sticky or not");
	assert_int_equal(check(at("tmp/sl.db-wal"), geteuid(), TRUST_FILE),
	                 -EPERM);
	assert_int_equal(check(at("tmp"), geteuid(), TRUST_DIR), -EPERM);

	mkdir_mode("tmp/mine", 0700);
	touch_mode("tmp/mine/sl.db", 0600);
	assert_int_equal(check(at("tmp/mine/sl.db"), geteuid(), TRUST_FILE), 0);
	assert_int_equal(check(at("tmp/mine"), geteuid(), TRUST_DIR), 0);
	/* Missing under a sticky directory: what the daemon makes there is
	 * its own, and checked again once made. */
	assert_int_equal(check(at("tmp/new/sl.db"), geteuid(), TRUST_FILE), 0);
}

/* Under a sticky directory, a directory another user made is theirs. */
static void
test_sticky_dir_foreign_entry(void **state)
{
	(void)state;
	need_root();
	mkdir_mode("tmp", 01777);
	mkdir_mode("tmp/sl", 0700);
	assert_int_equal(chown(at("tmp/sl"), OTHER, OTHER), 0);
	assert_int_equal(check(at("tmp/sl/sl.db"), 0, TRUST_FILE), -EPERM);
	cause_has(at("tmp/sl"));
	cause_has("owned by uid 65534");
}

/* No link is followed at the path of a file, whoever made it and wherever
 * it points: to the daemon's own file, or to nothing (sqlite would create
 * its target). */
static void
test_symlink_at_path_refused(void **state)
{
	(void)state;
	assert_int_equal(symlink("f", at("priv/l")), 0);
	assert_int_equal(check(at("priv/l"), geteuid(), TRUST_FILE), -ELOOP);
	cause_has(at("priv/l"));
	cause_has("symbolic link");
	assert_int_equal(symlink("nothing", at("priv/dangling")), 0);
	assert_int_equal(check(at("priv/dangling"), geteuid(), TRUST_FILE),
	                 -ELOOP);
	cause_has("symbolic link");
}

/* A link above the file: one the daemon's user (or root) made is followed
 * and where it leads is checked; another user's is refused, since they
 * could repoint it. */
static void
test_symlink_in_ancestor(void **state)
{
	(void)state;
	mkdir_mode("priv/real", 0700);
	touch_mode("priv/real/f", 0600);
	assert_int_equal(symlink("real", at("priv/lnk")), 0);
	assert_int_equal(check(at("priv/lnk/f"), geteuid(), TRUST_FILE), 0);
	assert_int_equal(check(at("priv/lnk"), geteuid(), TRUST_DIR), 0);
	/* lnk/.. is the target's parent, as the kernel has it. */
	assert_int_equal(check(at("priv/lnk/../f"), geteuid(), TRUST_FILE), 0);

	/* Followed to a directory others may write: refused, naming it. */
	mkdir_mode("open", 0777);
	assert_int_equal(symlink(at("open"), at("priv/toopen")), 0);
	assert_int_equal(check(at("priv/toopen/sl.db"), geteuid(), TRUST_FILE),
	                 -EPERM);
	cause_has(at("open"));
	assert_int_equal(check(at("priv/toopen"), geteuid(), TRUST_DIR),
	                 -EPERM);

	/* A loop ends. */
	assert_int_equal(symlink("loop2", at("priv/loop1")), 0);
	assert_int_equal(symlink("loop1", at("priv/loop2")), 0);
	assert_int_equal(check(at("priv/loop1/f"), geteuid(), TRUST_FILE),
	                 -ELOOP);
	cause_has("too many");
}

static void
test_foreign_symlink_in_ancestor_refused(void **state)
{
	(void)state;
	need_root();
	mkdir_mode("priv/real", 0700);
	assert_int_equal(symlink("real", at("priv/lnk")), 0);
	assert_int_equal(lchown(at("priv/lnk"), OTHER, OTHER), 0);
	assert_int_equal(check(at("priv/lnk/sl.db"), 0, TRUST_FILE), -ELOOP);
	cause_has(at("priv/lnk"));
	cause_has("owned by uid 65534");
	assert_int_equal(check(at("priv/lnk"), 0, TRUST_DIR), -ELOOP);
	/* The per-user daemon of that uid made it: followed. */
	assert_int_equal(check(at("priv/lnk"), OTHER, TRUST_DIR), 0);
}

/* Wrong kinds of things where a directory or a file must be. */
static void
test_wrong_kinds(void **state)
{
	(void)state;
	assert_int_equal(check(at("priv/f/x.db"), geteuid(), TRUST_FILE),
	                 -ENOTDIR);
	cause_has("not a directory");
	assert_int_equal(check(at("priv/f"), geteuid(), TRUST_DIR), -ENOTDIR);
	assert_int_equal(check(at("priv"), geteuid(), TRUST_FILE), -EINVAL);
	cause_has("not a regular file");
	assert_int_equal(mkfifo(at("priv/fifo"), 0600), 0);
	assert_int_equal(check(at("priv/fifo"), geteuid(), TRUST_FILE),
	                 -EINVAL);
	assert_int_equal(check("", geteuid(), TRUST_FILE), -EINVAL);
}

/* socket_check(): its result's cause kept for asserts. */
static int
sock(const char *path, enum socket_kind kind, uid_t uid)
{
	cause[0] = '\0';
	return socket_check(path, kind, uid, cause, sizeof cause);
}

/* A socket of the caller's in a private directory passes, for every kind
 * but the system's (root's alone); one not there yet passes too. */
static void
test_socket_own_passes(void **state)
{
	uid_t me = geteuid();

	(void)state;
	assert_int_equal(sock(at("priv/f"), SOCKET_NAMED, me), 0);
	assert_int_equal(sock(at("priv/f"), SOCKET_USER, me), 0);
	assert_int_equal(sock(at("priv/none"), SOCKET_NAMED, me), 0);
	assert_int_equal(sock(at("none/none"), SOCKET_TMP, me), 0);
	assert_int_equal(sock(at("priv/f"), SOCKET_TMP, me), 0);
	assert_int_equal(sock(at("priv/f"), SOCKET_SYSTEM, me),
	                 me == 0 ? 0 : -EPERM);
}

/* A directory others can write, or a link at the socket's path: another
 * user could have put their listener there. */
static void
test_socket_open_dir_refused(void **state)
{
	(void)state;
	mkdir_mode("open", 01777);
	touch_mode("open/s", 0600);
	assert_int_equal(sock(at("open/s"), SOCKET_NAMED, geteuid()), -EPERM);
	cause_has("writable by other users");
	cause_has("--socket");
	assert_int_equal(symlink(at("priv/f"), at("priv/link")), 0);
	assert_int_equal(sock(at("priv/link"), SOCKET_NAMED, geteuid()),
	                 -EPERM);
	cause_has("symbolic link");
}

/* /tmp/stageload-UID must be the user's own, mode 0700 exactly. */
static void
test_socket_tmp_mode(void **state)
{
	(void)state;
	mkdir_mode("shared", 0755);
	touch_mode("shared/s", 0600);
	/* trust_path_check alone would take it: nobody else writes it */
	assert_int_equal(sock(at("shared/s"), SOCKET_NAMED, geteuid()), 0);
	assert_int_equal(sock(at("shared/s"), SOCKET_TMP, geteuid()), -EPERM);
	cause_has("mode 0700");
	cause_has("XDG_RUNTIME_DIR");
}

/* Another user's directory or socket is refused, naming the owner. */
static void
test_socket_foreign_refused(void **state)
{
	(void)state;
	need_root();
	/* the spoof: another user made the per-user directory first */
	mkdir_mode("spoof", 0700);
	touch_mode("spoof/s", 0600);
	assert_int_equal(chown(at("spoof"), OTHER, OTHER), 0);
	assert_int_equal(chown(at("spoof/s"), OTHER, OTHER), 0);
	assert_int_equal(sock(at("spoof/s"), SOCKET_TMP, 1000), -EPERM);
	cause_has("uid 65534");
	cause_has("XDG_RUNTIME_DIR");
	assert_int_equal(sock(at("spoof/s"), SOCKET_NAMED, 1000), -EPERM);
	cause_has("uid 65534");
	/* its socket in a directory of ours */
	touch_mode("priv/other", 0600);
	assert_int_equal(chown(at("priv/other"), OTHER, OTHER), 0);
	assert_int_equal(sock(at("priv/other"), SOCKET_NAMED, 0), -EPERM);
	cause_has("owned by uid 65534");
	/* the system socket is root's alone, whoever asks */
	assert_int_equal(sock(at("priv/other"), SOCKET_SYSTEM, OTHER), -EPERM);
	cause_has("not by root");
	/* root's socket in root's directory: anyone may use it */
	assert_int_equal(sock(at("priv/f"), SOCKET_NAMED, 1000), 0);
	assert_int_equal(sock(at("priv/f"), SOCKET_SYSTEM, 1000), 0);
}

int
main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
	    T(test_private_path_passes),
	    T(test_foreign_owner_refused),
	    T(test_writable_dir_refused),
	    T(test_sticky_dir),
	    T(test_sticky_dir_foreign_entry),
	    T(test_symlink_at_path_refused),
	    T(test_symlink_in_ancestor),
	    T(test_foreign_symlink_in_ancestor_refused),
	    T(test_wrong_kinds),
	    T(test_socket_own_passes),
	    T(test_socket_open_dir_refused),
	    T(test_socket_tmp_mode),
	    T(test_socket_foreign_refused),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
