/*
 * The control socket: accepts clients, frames lines, checks peers and
 * limits, and hands well-formed requests to control.c. Clients are known to
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

struct peer {
	uint64_t client_id;
	uid_t uid;
	gid_t gid;
	pid_t pid;
};

/* Takes the socket's lock (PATH.lock), then the socket. */
int server_start(struct daemon *d, char *cause, size_t causelen);
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
/* Close a client after what is queued for it has been written. */
void server_close_client(struct daemon *d, uint64_t client_id);
/* Number of open client connections. */
size_t server_client_count(struct daemon *d);
/* Bytes queued for a client and not yet written (0 when it is gone). */
size_t server_client_unwritten(struct daemon *d, uint64_t client_id);

/* Called when a client closes, so modules can drop what they hold for it.
 * Several modules may register (up to 8); registering the same callback
 * again does nothing. */
typedef void (*server_gone_cb)(struct daemon *d, uint64_t client_id);
void server_on_gone(struct daemon *d, server_gone_cb cb);

#endif
