/*
 * The control socket: accepts clients, frames lines, checks peers and
 * limits, and hands well-formed requests to the dispatch hook it was given
 * at start. It knows nothing of the modules above it: they reach it only
 * through its hooks and the send functions below. Clients are known to
 * other modules only by their 64-bit id, so a reply to a client that has
 * gone is simply dropped.
 */
#ifndef SL_SERVER_H
#define SL_SERVER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

struct daemon;

/* Who is connected, as the kernel recorded it at connect and the server
 * read at accept; never anything the client sends. */
struct peer {
	uint64_t client_id;
	uid_t uid;
	gid_t gid; /* effective */
	pid_t pid;
	/* Its groups (platform_peer_groups): what its jobs may have. Owned
	 * by the server for the life of the connection. */
	gid_t *groups;
	int ngroups;
	/* The protocol version hello agreed on (0 before it): set by the
	 * hello handler with server_set_version(). */
	int version;
};

/* A dispatch hook's answer when it will reply later with server_reply(). */
#define SERVER_DEFERRED 1

/*
 * What the layers above give the server at start; a NULL member does
 * nothing. The hooks must outlive the server (a client's close callback
 * runs after server_stop).
 */
struct server_hooks {
	/* A request: 0 with *result set (ownership passes), SERVER_DEFERRED
	 * after keeping a copy of the id, or a PROTO_E_* code with cause. */
	int (*dispatch)(struct daemon *d, const struct peer *p,
	                const char *method, const cJSON *id,
	                const cJSON *params, cJSON **result, char *cause,
	                size_t causelen);
	/* Deferred answers still owed to a client: a connection the peer
	 * half-closed stays open until they are sent. */
	size_t (*deferred)(struct daemon *d, uint64_t client_id);
	/* Everything queued for a client was written. */
	void (*writable)(struct daemon *d, uint64_t client_id);
	/* A client has gone: called once its handles are closed, never from
	 * inside a send, and not while the daemon stops. */
	void (*gone)(struct daemon *d, uint64_t client_id);
	/* After each read: busy I/O must not delay a due sample. */
	void (*after_read)(struct daemon *d);
};

/* Claims the socket's path: its directory checked, its lock (PATH.lock)
 * taken, no daemon answering on it. A second daemon stops here, before it
 * touches the first one's files. */
int server_claim(struct daemon *d, char *cause, size_t causelen);
/* Then, once the daemon's own files are trusted: the socket, listening.
 * On failure the claim is released too. */
int server_start(struct daemon *d, const struct server_hooks *hooks,
                 char *cause, size_t causelen);
/* Closes the listener and every client; the socket file stays. */
void server_stop(struct daemon *d);
/* Removes the socket file if it is still ours and drops the lock: last. */
void server_release(struct daemon *d);

/* Send to one client; ownership of result/params passes. Return -ENOENT
 * when the client is gone. */
int server_reply(struct daemon *d, uint64_t client_id, const cJSON *id,
                 cJSON *result);
int server_reply_error(struct daemon *d, uint64_t client_id, const cJSON *id,
                       int code, const char *message);
int server_notify(struct daemon *d, uint64_t client_id, const char *method,
                  cJSON *params);
/* Send an already encoded, newline-terminated line (copied as needed), so
 * one notification can be encoded once for many clients. */
int server_send_line(struct daemon *d, uint64_t client_id, const char *line,
                     size_t len);
/*
 * An answer written in parts, for one too large to build at once
 * (answers.h): open writes the start of the result line for id; each
 * write sends part of the result as it is (valid JSON text, UTF-8, no
 * newline); close ends the line. Meanwhile every other line for the
 * client is held and sent after, so none lands inside the answer. The
 * writer paces itself by server_client_unwritten. -ENOENT when the client
 * has gone (or is not streaming); open is -EBUSY while one is open.
 */
int server_stream_open(struct daemon *d, uint64_t client_id, const cJSON *id);
int server_stream_write(struct daemon *d, uint64_t client_id, const char *part,
                        size_t len);
int server_stream_close(struct daemon *d, uint64_t client_id);
/* Close a client after what is queued for it has been written. */
void server_close_client(struct daemon *d, uint64_t client_id);
/* The protocol version the client's hello agreed on: its peer's version
 * from now on. -ENOENT when the client is gone. */
int server_set_version(struct daemon *d, uint64_t client_id, int version);
/* Number of open client connections. */
size_t server_client_count(struct daemon *d);
/* Bytes queued for a client and not yet written (0 when it is gone). */
size_t server_client_unwritten(struct daemon *d, uint64_t client_id);

#endif
