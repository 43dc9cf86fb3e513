/*
 * Which socket a client talks to, and whether it may: what it sends there
 * (a job's command, environment and directory) goes to whoever listens, so
 * a client only uses a socket that root or its own user made, in a
 * directory nobody else can write (PROTOCOL.md, "Transport";
 * docs/security.md, "The socket a client trusts"). The per-user default
 * path is declared here once, for the daemon and the clients alike.
 */
#ifndef SL_SOCKET_TRUST_H
#define SL_SOCKET_TRUST_H

#include <stddef.h>
#include <sys/types.h>

/* Where a socket path came from: each has its own rule. */
enum socket_kind {
	SOCKET_NAMED,  /* --socket, $STAGELOAD_SOCKET, a path a program gave */
	SOCKET_SYSTEM, /* the system daemon's, /var/run/stageload.sock */
	SOCKET_USER,   /* per user: $XDG_RUNTIME_DIR, or under the home */
	SOCKET_TMP,    /* per user, the last resort: /tmp/stageload-UID */
};

/* The system daemon's socket. */
#define SOCKET_SYSTEM_PATH "/var/run/stageload.sock"

/*
 * The user's home: $HOME when it is absolute, else the password
 * database's; NULL when neither is known.
 */
const char *socket_home(void);

/*
 * The per-user socket of uid: $XDG_RUNTIME_DIR/stageload.sock when
 * xdg_runtime is absolute; else HOME/.stageload/stageload.sock when home
 * is an existing directory owned by uid and the path fits a socket
 * address; else /tmp/stageload-UID/stageload.sock. *kind (may be NULL)
 * says which rule applies to it. Returns 0 or -ENAMETOOLONG.
 */
int socket_user_path(const char *xdg_runtime, const char *home, uid_t uid,
                     char *buf, size_t len, enum socket_kind *kind);

/*
 * May uid send to the socket at path, which came from kind? Its directory
 * must pass trust_path_check for uid (root's or uid's, writable by nobody
 * else, under ancestors nobody else can rename); the socket, when it
 * exists, must be uid's or root's, and not a symbolic link. The system
 * socket and its directory must be root's. /tmp/stageload-UID must be
 * uid's own with mode 0700. A socket or directory that does not exist
 * passes (connecting then says the daemon is not running).
 *
 * Returns 0, or -EPERM with cause naming the path, its owner and the way
 * out; another negative errno when a path cannot be examined.
 */
int socket_check(const char *path, enum socket_kind kind, uid_t uid,
                 char *cause, size_t causelen);

/*
 * After connecting fd to path, before sending anything: the listener's uid
 * as the kernel recorded it (SO_PEERCRED, getpeereid) must be root's or,
 * but for the system socket, uid. Returns 0, or -EPERM with cause naming
 * it; another negative errno when it cannot be read.
 */
int socket_peer_check(int fd, const char *path, enum socket_kind kind,
                      uid_t uid, char *cause, size_t causelen);

#endif
