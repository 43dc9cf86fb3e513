/*
 * Whether a path is the daemon's own, after sshd's StrictModes.
 *
 * The daemon runs as root and acts on what its files say: a queued job in
 * the database is started as the uid written in it. So a file another
 * user made, or could replace, is a way to run anything as root. A user
 * could replace a file when:
 *
 * - it is theirs (they made it before the daemon started, or they own the
 *   directory it is in, which amounts to the same);
 * - they may write the directory it is in: they can create the -wal the
 *   database does not have yet, or rename ours away and put theirs in its
 *   place. The sticky bit does not help there: it stops them removing our
 *   files, not creating the ones we do not have yet (a -wal is created
 *   and removed at every start and stop). So the file's own directory must
 *   not be writable by group or others at all (/tmp is refused);
 * - they may write an ancestor: they rename the whole subtree away and put
 *   one of theirs in its place. Here the sticky bit does help: in a
 *   sticky directory only the owner of an entry (and the directory's
 *   owner, and root) may rename or remove it, so a directory of root's (or
 *   the daemon's) inside /tmp stays where it is. An ancestor writable by
 *   others is therefore accepted when it is sticky, the entry under it
 *   being root's or ours like every component. A directory must be owned
 *   by root or the daemon's uid whatever its mode: its owner may chmod it.
 * - a symbolic link on the way is someone else's: in a sticky directory
 *   they may repoint it (replace it) at will. Links root or the daemon's
 *   uid made are followed (/var/run -> /run, macOS's /var -> private/var)
 *   and where they lead is checked like the rest; at the path of a file
 *   itself no link is followed at all: sqlite would open the target, and
 *   put the -wal beside whichever name it resolved to.
 *
 * Links are resolved here, one component at a time, rather than with
 * realpath(): each directory is checked in the role it has for the file
 * (its own directory, or an ancestor), and each link by its owner. Access
 * control lists are not read (nor does sshd read them); a directory given
 * to others by an ACL alone is not seen.
 *
 * The check and the open that follows are not one step, but once every
 * directory on the way is writable only by root and the daemon, nobody
 * else can change what the path names in between.
 */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "text.h"
#include "trust.h"

#define TRUST_PATH_MAX 4096
#define TRUST_MAX_LINKS 40 /* as the kernel's ELOOP */

/* May a uid other than root and the owner write this directory? */
static int
trust_others_write(const struct stat *st)
{
	if (st->st_mode & S_IWOTH)
		return 1;
	if ((st->st_mode & S_IWGRP) == 0)
		return 0;
#ifdef __APPLE__
	/* macOS's own /private/var/run, where the system socket lives, is
	 * root:daemon 0775: group daemon (gid 1) is a system group whose
	 * only member is root, not a local user's. */
	if (st->st_uid == 0 && st->st_gid == 1)
		return 0;
#endif
	return 1;
}

/*
 * A directory on the way. own: it is the directory the checked file is in
 * (or the checked directory itself), where a sticky bit is not enough.
 */
static int
trust_dir(const char *dir, const struct stat *st, uid_t uid, int own,
          char *cause, size_t causelen)
{
	if (!S_ISDIR(st->st_mode))
		return proto_cause(cause, causelen, -ENOTDIR,
		                   "%s is not a directory", dir);
	if (st->st_uid != 0 && st->st_uid != uid) {
		/* Named, so whoever reads it knows whom to ask. */
		struct passwd *pw = getpwuid(st->st_uid);
		return proto_cause(
		    cause, causelen, -EPERM,
		    "directory %s is owned by uid %u%s%s%s, neither "
		    "root nor uid %u: its owner could replace "
		    "what is in it",
		    dir, (unsigned)st->st_uid, pw != NULL ? " (" : "",
		    pw != NULL ? pw->pw_name : "", pw != NULL ? ")" : "",
		    (unsigned)uid);
	}
	if (!trust_others_write(st))
		return 0;
	if (!own && (st->st_mode & S_ISVTX))
		return 0;
	if (own)
		return proto_cause(
		    cause, causelen, -EPERM,
		    "directory %s is writable by other users (mode %04o)%s: "
		    "they could put their own files in it; give a directory "
		    "only root and uid %u can write",
		    dir, (unsigned)(st->st_mode & 07777),
		    (st->st_mode & S_ISVTX) ? ", sticky or not" : "",
		    (unsigned)uid);
	return proto_cause(cause, causelen, -EPERM,
	                   "directory %s is writable by other users (mode "
	                   "%04o) and not sticky: they could move what is "
	                   "in it away and put their own in its place",
	                   dir, (unsigned)(st->st_mode & 07777));
}

/* The path's last component, when it exists. */
static int
trust_final(const char *path, const struct stat *st, uid_t uid,
            enum trust_kind kind, char *cause, size_t causelen)
{
	if (kind == TRUST_DIR)
		return trust_dir(path, st, uid, 1, cause, causelen);
	if (!S_ISREG(st->st_mode))
		return proto_cause(cause, causelen, -EINVAL,
		                   "%s is not a regular file", path);
	if (st->st_uid != uid)
		return proto_cause(
		    cause, causelen, -EPERM,
		    "%s is owned by uid %u, not by this daemon's "
		    "uid %u: another user made it",
		    path, (unsigned)st->st_uid, (unsigned)uid);
	if (st->st_mode & (S_IWGRP | S_IWOTH))
		return proto_cause(cause, causelen, -EPERM,
		                   "%s is writable by other users (mode %04o)",
		                   path, (unsigned)(st->st_mode & 07777));
	return 0;
}

/* Take the next component off *rest (skipping empty ones and "."); 0 when
 * none is left. */
static size_t
trust_next(const char **rest, const char **comp)
{
	const char *p = *rest;
	size_t n;

	for (;;) {
		while (*p == '/')
			p++;
		n = strcspn(p, "/");
		if (n == 0) {
			*rest = p;
			return 0;
		}
		if (n == 1 && p[0] == '.') {
			p += 1;
			continue;
		}
		*comp = p;
		*rest = p + n;
		return n;
	}
}

static int
trust_last(const char *rest)
{
	const char *comp;

	return trust_next(&rest, &comp) == 0;
}

int
trust_path_check(const char *path, uid_t uid, enum trust_kind kind, char *cause,
                 size_t causelen)
{
	/* cur: the directory resolved so far, links and ".." taken out;
	 * todo: what is still to walk, in buf (a link's target is put in
	 * front of what followed the link). */
	char cur[TRUST_PATH_MAX], next[TRUST_PATH_MAX], buf[2][TRUST_PATH_MAX];
	char target[TRUST_PATH_MAX];
	const char *rest, *comp;
	struct stat st;
	int links = 0, which = 0, last;
	size_t n;
	ssize_t tn;

	if (path == NULL || path[0] == '\0')
		return proto_cause(cause, causelen, -EINVAL, "empty path");
	if (path[0] == '/') {
		if (snprintf(buf[0], sizeof buf[0], "%s", path) >=
		    (int)sizeof buf[0])
			return proto_cause(cause, causelen, -ENAMETOOLONG,
			                   "%s: path too long", path);
	} else {
		if (getcwd(cur, sizeof cur) == NULL)
			return proto_cause(cause, causelen, -errno,
			                   "%s: the current directory: %s",
			                   path, strerror(errno));
		if (snprintf(buf[0], sizeof buf[0], "%s/%s", cur, path) >=
		    (int)sizeof buf[0])
			return proto_cause(cause, causelen, -ENAMETOOLONG,
			                   "%s: path too long", path);
	}
	rest = buf[0];
	snprintf(cur, sizeof cur, "/");

	while ((n = trust_next(&rest, &comp)) > 0) {
		if (n == 2 && comp[0] == '.' && comp[1] == '.') {
			char *slash = strrchr(cur, '/');

			if (slash == cur)
				cur[1] = '\0';
			else
				*slash = '\0';
			continue;
		}
		last = trust_last(rest);
		/* The directory the component is looked up in: its own
		 * directory when the component is the file, else an
		 * ancestor of what is checked. */
		if (lstat(cur, &st) != 0)
			return proto_cause(cause, causelen, -errno, "%s: %s",
			                   cur, strerror(errno));
		{
			int rc =
			    trust_dir(cur, &st, uid, last && kind == TRUST_FILE,
			              cause, causelen);
			if (rc != 0)
				return rc;
		}
		if (snprintf(next, sizeof next, "%s%s%.*s",
		             cur[1] == '\0' ? "" : cur, "/", (int)n,
		             comp) >= (int)sizeof next)
			return proto_cause(cause, causelen, -ENAMETOOLONG,
			                   "%s: path too long", path);
		if (lstat(next, &st) != 0) {
			/* Missing from here on: the daemon creates the rest
			 * in what was checked, and checks again. */
			if (errno == ENOENT)
				return 0;
			return proto_cause(cause, causelen, -errno, "%s: %s",
			                   next, strerror(errno));
		}
		if (S_ISLNK(st.st_mode)) {
			if (last && kind == TRUST_FILE)
				return proto_cause(
				    cause, causelen, -ELOOP,
				    "%s is a symbolic link (owner uid %u): "
				    "refusing to follow it; give the real "
				    "path",
				    next, (unsigned)st.st_uid);
			if (st.st_uid != 0 && st.st_uid != uid)
				return proto_cause(
				    cause, causelen, -ELOOP,
				    "%s is a symbolic link owned by uid %u, "
				    "neither root nor this daemon's uid %u: "
				    "its owner could repoint it",
				    next, (unsigned)st.st_uid, (unsigned)uid);
			if (++links > TRUST_MAX_LINKS)
				return proto_cause(
				    cause, causelen, -ELOOP,
				    "%s: too many symbolic links", path);
			tn = readlink(next, target, sizeof target);
			if (tn < 0)
				return proto_cause(cause, causelen, -errno,
				                   "%s: %s", next,
				                   strerror(errno));
			if ((size_t)tn >= sizeof target)
				return proto_cause(cause, causelen,
				                   -ENAMETOOLONG,
				                   "%s: link too long", next);
			target[tn] = '\0';
			/* The target, then what followed the link. */
			if (snprintf(buf[!which], sizeof buf[!which], "%s/%s",
			             target, rest) >= (int)sizeof buf[!which])
				return proto_cause(cause, causelen,
				                   -ENAMETOOLONG,
				                   "%s: path too long", path);
			which = !which;
			rest = buf[which];
			if (target[0] == '/')
				snprintf(cur, sizeof cur, "/");
			continue;
		}
		if (last)
			return trust_final(next, &st, uid, kind, cause,
			                   causelen);
		if (!S_ISDIR(st.st_mode))
			return proto_cause(cause, causelen, -ENOTDIR,
			                   "%s is not a directory", next);
		memcpy(cur, next, strlen(next) + 1);
	}
	/* The path ends in a directory ("/", "..", a link to one). */
	if (lstat(cur, &st) != 0)
		return proto_cause(cause, causelen, -errno, "%s: %s", cur,
		                   strerror(errno));
	return trust_final(cur, &st, uid, kind, cause, causelen);
}
