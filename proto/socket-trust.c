/*
 * Which socket a client may talk to. The threat: with no system daemon and
 * no $XDG_RUNTIME_DIR, another user who made /tmp/stageload-UID first
 * listened there and received the victim's whole environment from
 * `submit`, and could claim any uid in `hello`. So a socket is used only
 * when root or the caller made it, in a directory nobody else can write:
 * then nobody else can have put a listener there, nor swap one in between
 * the check and the connect. Once connected, the listener's own uid, as the
 * kernel recorded it, is checked too: a directory given to others by an
 * access control list alone is not seen by the path rule.
 */
#ifdef __linux__
#define _GNU_SOURCE /* struct ucred */
#endif
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "text.h"
#include "socket-trust.h"
#include "trust.h"

#define SOCKET_NAME "stageload.sock"
#define SOCKET_HOME_DIR ".stageload"

/* The longest path a socket address holds (sun_path, its NUL excluded). */
#define SOCKET_PATH_MAX (sizeof(((struct sockaddr_un *)0)->sun_path) - 1)

const char *
socket_home(void)
{
	const char *home = getenv("HOME");
	struct passwd *pw;

	if (home != NULL && home[0] == '/')
		return home;
	if ((pw = getpwuid(getuid())) == NULL || pw->pw_dir == NULL ||
	    pw->pw_dir[0] != '/')
		return NULL;
	return pw->pw_dir;
}

static int
socket_put(char *buf, size_t len, const char *fmt, const char *s,
           unsigned long u)
{
	int n =
	    s != NULL ? snprintf(buf, len, fmt, s) : snprintf(buf, len, fmt, u);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int
socket_user_path(const char *xdg_runtime, const char *home, uid_t uid,
                 char *buf, size_t len, enum socket_kind *kind)
{
	struct stat st;
	char path[1024];

	if (kind != NULL)
		*kind = SOCKET_USER;
	/* Only an absolute one, as the XDG base directory specification
	 * says. */
	if (xdg_runtime != NULL && xdg_runtime[0] == '/')
		return socket_put(buf, len, "%s/" SOCKET_NAME, xdg_runtime, 0);
	/* Under the home, which only its user writes; the daemon makes the
	 * directory. A home that is not there, not the user's (HOME=/ of a
	 * service account) or too deep for a socket address leaves /tmp. */
	if (home != NULL && home[0] == '/' && stat(home, &st) == 0 &&
	    S_ISDIR(st.st_mode) && st.st_uid == uid &&
	    socket_put(path, sizeof path, "%s/" SOCKET_HOME_DIR "/" SOCKET_NAME,
	               home, 0) == 0 &&
	    strlen(path) <= SOCKET_PATH_MAX)
		return socket_put(buf, len, "%s", path, 0);
	if (kind != NULL)
		*kind = SOCKET_TMP;
	return socket_put(buf, len, "/tmp/stageload-%lu/" SOCKET_NAME, NULL,
	                  (unsigned long)uid);
}

/* "uid 1001 (mallory)", or the number alone when it has no name. */
static const char *
socket_owner(uid_t uid, char *buf, size_t len)
{
	struct passwd *pw = getpwuid(uid);

	if (pw != NULL && pw->pw_name != NULL)
		snprintf(buf, len, "uid %lu (%s)", (unsigned long)uid,
		         pw->pw_name);
	else
		snprintf(buf, len, "uid %lu", (unsigned long)uid);
	return buf;
}

/* What to do instead, for a socket of this kind. */
static const char *
socket_way_out(enum socket_kind kind)
{
	switch (kind) {
	case SOCKET_SYSTEM:
		return "ask an administrator to remove it and restart "
		       "stageloadd; meanwhile --socket or $STAGELOAD_SOCKET "
		       "can name the socket of a daemon you trust";
	case SOCKET_TMP:
		return "set XDG_RUNTIME_DIR to a directory only you can write "
		       "(mode 0700) and start your stageloadd with it, or have "
		       "root remove it; --socket or $STAGELOAD_SOCKET can "
		       "name another socket";
	case SOCKET_USER:
	case SOCKET_NAMED:
		break;
	}
	return "use a socket root or you made, in a directory only root and "
	       "you can write (--socket, $STAGELOAD_SOCKET, or the per-user "
	       "default of PROTOCOL.md)";
}

int
socket_peer_check(int fd, const char *path, enum socket_kind kind, uid_t uid,
                  char *cause, size_t causelen)
{
	uid_t want = kind == SOCKET_SYSTEM ? 0 : uid, peer;
	char who[96];
#ifdef SO_PEERCRED
	struct ucred cr;
	socklen_t len = sizeof cr;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0)
		return proto_cause(cause, causelen, -errno,
		                   "cannot read the credentials of the daemon "
		                   "at %s: %s",
		                   path, strerror(errno));
	peer = cr.uid;
#else
	gid_t gid;

	if (getpeereid(fd, &peer, &gid) != 0)
		return proto_cause(cause, causelen, -errno,
		                   "cannot read the credentials of the daemon "
		                   "at %s: %s",
		                   path, strerror(errno));
#endif
	if (peer == 0 || peer == want)
		return 0;
	return proto_cause(
	    cause, causelen, -EPERM,
	    "refusing the daemon at %s: it runs as %s, %s, and would receive "
	    "what you send (a job's command, environment and directory); %s",
	    path, socket_owner(peer, who, sizeof who),
	    kind == SOCKET_SYSTEM ? "not as root"
	                          : "neither as root nor as you",
	    socket_way_out(kind));
}

/* The directory a path is in. */
static void
socket_dir(const char *path, char *dir, size_t len)
{
	const char *slash = strrchr(path, '/');

	if (slash == NULL)
		snprintf(dir, len, ".");
	else if (slash == path)
		snprintf(dir, len, "/");
	else
		snprintf(dir, len, "%.*s", (int)(slash - path), path);
}

int
socket_check(const char *path, enum socket_kind kind, uid_t uid, char *cause,
             size_t causelen)
{
	/* The system socket is root's alone: a daemon of uid's own listens
	 * elsewhere. */
	uid_t want = kind == SOCKET_SYSTEM ? 0 : uid;
	char dir[1024], why[768], who[96];
	struct stat st;
	int rc;

	if (path == NULL || path[0] == '\0')
		return proto_cause(cause, causelen, -EINVAL, "empty path");
	socket_dir(path, dir, sizeof dir);
	if (kind == SOCKET_TMP) {
		/* A directory anyone could have made first: it must be the
		 * user's own and private, as the daemon makes it. */
		if (lstat(dir, &st) != 0) {
			if (errno == ENOENT)
				return 0;
			return proto_cause(cause, causelen, -errno, "%s: %s",
			                   dir, strerror(errno));
		}
		if (!S_ISDIR(st.st_mode) || st.st_uid != uid ||
		    (st.st_mode & 07777) != 0700)
			return proto_cause(
			    cause, causelen, -EPERM,
			    "refusing the socket %s: %s %s %s, not a "
			    "directory of uid %lu with mode 0700, so another "
			    "user may be listening there and would receive "
			    "what you send (a job's command, environment and "
			    "directory); %s",
			    path, dir,
			    S_ISLNK(st.st_mode)   ? "is a symbolic link of"
			    : S_ISDIR(st.st_mode) ? "is a directory of"
			                          : "is a file of",
			    socket_owner(st.st_uid, who, sizeof who),
			    (unsigned long)uid, socket_way_out(kind));
	}
	rc = trust_path_check(dir, want, TRUST_DIR, why, sizeof why);
	if (rc == -ENOENT)
		return 0;
	if (rc != 0)
		return proto_cause(
		    cause, causelen, rc == -EPERM || rc == -ELOOP ? -EPERM : rc,
		    "refusing the socket %s: %s; another user could have put "
		    "their own listener there, which would receive what you "
		    "send (a job's command, environment and directory); %s",
		    path, why, socket_way_out(kind));
	if (lstat(path, &st) != 0) {
		if (errno == ENOENT)
			return 0;
		return proto_cause(cause, causelen, -errno, "%s: %s", path,
		                   strerror(errno));
	}
	if (S_ISLNK(st.st_mode))
		return proto_cause(cause, causelen, -EPERM,
		                   "refusing the socket %s: it is a symbolic "
		                   "link (of %s); name the socket itself",
		                   path,
		                   socket_owner(st.st_uid, who, sizeof who));
	if (st.st_uid != 0 && st.st_uid != want)
		return proto_cause(
		    cause, causelen, -EPERM,
		    "refusing the socket %s: it is owned by %s, %s, so "
		    "another user's program listens there and would receive "
		    "what you send (a job's command, environment and "
		    "directory); %s",
		    path, socket_owner(st.st_uid, who, sizeof who),
		    kind == SOCKET_SYSTEM ? "not by root"
		                          : "neither by root nor by you",
		    socket_way_out(kind));
	return 0;
}
