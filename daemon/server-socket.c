/*
 * The socket file: its directory, a lock beside it, refusing to take the
 * place of a daemon that answers, and removing it at exit only if it is
 * still ours.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "log.h"
#include "server-internal.h"
#include "trust.h"

/*
 * Make room for our socket: refuse when a daemon answers on it, remove it
 * when nobody does (a crash left it behind), and never remove anything
 * that is not a socket.
 */
int
server_probe(const char *path, char *cause, size_t causelen)
{
	struct sockaddr_un sun;
	struct stat st;
	int fd, rc, err;

	if (lstat(path, &st) != 0) {
		if (errno == ENOENT)
			return 0;
		snprintf(cause, causelen, "%s: %s", path, strerror(errno));
		return -errno;
	}
	if (!S_ISSOCK(st.st_mode)) {
		snprintf(cause, causelen,
		         "%s exists and is not a socket; "
		         "refusing to replace it",
		         path);
		return -EEXIST;
	}
	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, path, strlen(path) + 1);
	if ((fd = socket(AF_UNIX, SOCK_STREAM, 0)) < 0) {
		snprintf(cause, causelen, "socket: %s", strerror(errno));
		return -errno;
	}
	rc = connect(fd, (struct sockaddr *)&sun, sizeof sun);
	err = errno;
	close(fd);
	if (rc == 0) {
		snprintf(cause, causelen,
		         "another stageloadd is already "
		         "running on %s",
		         path);
		return -EADDRINUSE;
	}
	if (err != ECONNREFUSED) {
		snprintf(cause, causelen, "%s: %s", path, strerror(err));
		return -err;
	}
	if (unlink(path) != 0 && errno != ENOENT) {
		snprintf(cause, causelen, "cannot remove stale socket %s: %s",
		         path, strerror(errno));
		return -errno;
	}
	log_info("removed stale socket %s", path);
	return 0;
}

/*
 * The lock beside the socket says which daemon owns it. A socket alone
 * cannot: between another daemon's bind() and listen() it refuses
 * connections like a stale one, and the probe would remove it. The lock
 * file is never removed (removing it would let two daemons lock two
 * files); the kernel drops the lock when its holder exits, however it
 * exits. It is readable by its owner only: flock() needs no more than a
 * descriptor open for reading, and another user holding the lock of the
 * system socket would keep the daemon from starting.
 */
int
server_lock(const char *path, int *fdp, char *cause, size_t causelen)
{
	char lock[1100];
	struct stat st;
	int fd, err;

	snprintf(lock, sizeof lock, "%s.lock", path);
	fd = open(lock, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	/* server_mkdir checked it; nobody else can have changed it since,
	 * but what is opened is what counts. */
	if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	                st.st_uid != geteuid())) {
		close(fd);
		snprintf(cause, causelen,
		         "refusing the socket's lock file %s: not a regular "
		         "file of uid %u",
		         lock, (unsigned)geteuid());
		return -EPERM;
	}
	if (fd >= 0 && fchmod(fd, 0600) != 0) {
		err = errno;
		close(fd);
		snprintf(cause, causelen, "cannot make %s private: %s", lock,
		         strerror(err));
		return -err;
	}
	if (fd < 0) {
		err = errno;
		snprintf(cause, causelen, "cannot open the lock file %s: %s",
		         lock, strerror(err));
		return -err;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		err = errno;
		close(fd);
		if (err == EWOULDBLOCK) {
			snprintf(cause, causelen,
			         "another stageloadd is already running on %s "
			         "(it holds %s)",
			         path, lock);
			return -EADDRINUSE;
		}
		snprintf(cause, causelen, "cannot lock %s: %s", lock,
		         strerror(err));
		return -err;
	}
	*fdp = fd;
	return 0;
}

/*
 * The listening socket, made here and handed to libuv with uv_pipe_open:
 * a socket bound by uv_pipe_bind is unlinked by name when libuv closes it,
 * whoever's it is by then, while server_release removes only our own.
 */
int
server_listen_fd(struct daemon *d, const char *path, mode_t mode, int *fdp)
{
	struct sockaddr_un sun;
	struct stat st;
	mode_t old;
	int fd, rc;

	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, path, strlen(path) + 1);
	if ((fd = socket(AF_UNIX, SOCK_STREAM, 0)) < 0)
		return -errno;
	if (fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	/* A per-user socket is private from the moment it exists (umask),
	 * not only after chmod. */
	old = umask(d->cfg.system ? 0111 : 0177);
	rc = bind(fd, (struct sockaddr *)&sun, sizeof sun);
	umask(old);
	if (rc != 0 || chmod(path, mode) != 0 || stat(path, &st) != 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	d->sock_dev = st.st_dev;
	d->sock_ino = st.st_ino;
	*fdp = fd;
	return 0;
}

/*
 * The socket's directory and the lock file in it must be the daemon's, in
 * the sense of trust.c: another user who could write the directory could
 * take the socket's name for a socket of theirs, and one who owned the
 * lock could hold it and keep the daemon from starting. So must every
 * directory above it (a sticky one such as /tmp may be above it, not be
 * it). A link root or this user made is followed and its target checked
 * (/var/run is often a link to /run, macOS's /tmp to /private/tmp);
 * another user's is refused, since they could repoint it later. A missing
 * directory is created, 0755 for root (everyone connects to its socket),
 * 0700 otherwise, and checked again.
 */
int
server_mkdir(const char *path, int system, char *cause, size_t causelen)
{
	char dir[1024], lock[1100], why[768], *slash;
	const char *what = "the socket directory", *bad = dir;
	int rc;

	snprintf(dir, sizeof dir, "%s", path);
	if ((slash = strrchr(dir, '/')) == NULL)
		snprintf(dir, sizeof dir, ".");
	else if (slash == dir)
		slash[1] = '\0';
	else
		*slash = '\0';
	snprintf(lock, sizeof lock, "%s.lock", path);
	if ((rc = trust_path_check(dir, geteuid(), TRUST_DIR, why,
	                           sizeof why)) != 0)
		goto refuse;
	if (mkdir(dir, system ? 0755 : 0700) != 0 && errno != EEXIST) {
		rc = -errno;
		snprintf(cause, causelen, "socket directory %s: %s", dir,
		         strerror(-rc));
		return rc;
	}
	if ((rc = trust_path_check(dir, geteuid(), TRUST_DIR, why,
	                           sizeof why)) != 0)
		goto refuse;
	what = "the socket's lock file";
	bad = lock;
	if ((rc = trust_path_check(lock, geteuid(), TRUST_FILE, why,
	                           sizeof why)) != 0)
		goto refuse;
	return 0;
refuse:
	snprintf(cause, causelen, "refusing %s %s: %s", what, bad, why);
	return rc;
}

void
server_release(struct daemon *d)
{
	struct stat st;

	if (d->sock_lock_fd < 0)
		return;
	/* Only if it is still ours: a socket someone put in its place
	 * (by hand, or a daemon of a version without the lock) stays. */
	if (d->sock_ino != 0 && stat(d->cfg.socket_path, &st) == 0 &&
	    st.st_dev == d->sock_dev && st.st_ino == d->sock_ino)
		unlink(d->cfg.socket_path);
	d->sock_dev = 0;
	d->sock_ino = 0;
	close(d->sock_lock_fd);
	d->sock_lock_fd = -1;
}
