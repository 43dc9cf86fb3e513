/*
 * What the control socket's files share (server.c: connections, reading,
 * turns; server-accept.c: accepting and its limits; server-output.c: what
 * is sent; server-socket.c: the socket file). Nothing outside them
 * includes this: the rest of the daemon sees server.h.
 */
#ifndef STAGELOAD_SERVER_INTERNAL_H
#define STAGELOAD_SERVER_INTERNAL_H

#include <sys/types.h>
#include <uv.h>

#include "daemon.h"
#include "proto.h"
#include "server.h"

#define SERVER_REFUSAL_UIDS 32 /* uids counted apart; the rest together */

/* What one uid's connections make the daemon hold, so that it is bounded
 * per uid, not only per connection: partial lines (input the daemon must
 * keep until its newline comes, max_input_bytes_per_uid) and output queued
 * for connections that read slowly or not at all (max_unread_per_uid). */
struct uid_input {
	uid_t uid;
	size_t clients;   /* clients counted here */
	size_t bytes;     /* the sum of their readers' buffers (cap) */
	size_t unwritten; /* the memory their queued output takes */
	uint64_t turn_ms; /* the loop time turn_lines are counted in */
	int turn_lines;   /* requests handled in that turn */
};

struct client {
	uv_pipe_t pipe; /* first member: the handle's data is the client */
	uv_timer_t timer;
	struct server *srv; /* NULL once closing: the server may go first */
	struct daemon *d;
	const struct server_hooks *hooks; /* outlives the server */
	uint64_t id;
	struct peer peer;
	struct proto_reader reader;
	/* Its uid's input entry (NULL once closing), and the part of it
	 * that is this reader's buffer. */
	struct uid_input *input;
	size_t input_counted;
	size_t unwritten;  /* bytes handed to uv_write, not yet written */
	size_t queued_mem; /* the memory those take, requests included */
	size_t oversized;  /* of those, an answer larger than the limit */
	int handles;       /* handles still open; freed when it reaches 0 */
	/* While an answer is written in parts (server_stream_open), what
	 * else is sent to the client waits here, whole lines, so that no
	 * line lands inside the answer's. */
	char *held;
	size_t held_len, held_cap;
	unsigned streaming : 1;
	unsigned hello : 1;
	unsigned closing : 1;     /* uv_close called */
	unsigned draining : 1;    /* no more input; close once output is out */
	unsigned half_closed : 1; /* EOF read; open for deferred answers */
	/* Not read: its uid's requests this turn are spent (resumed next
	 * turn). */
	unsigned wait_turn : 1;
};

/* Refused connections of one uid not yet logged (uid -1: every uid past
 * SERVER_REFUSAL_UIDS; the global cap is counted under its own flag). */
struct refusals {
	uid_t uid;
	int global; /* refused by the global cap, not the uid's */
	unsigned long n;
};

struct server {
	struct daemon *d;
	const struct server_hooks *hooks;
	uv_pipe_t listener;
	/* The next turn: the accept of a connection left waiting (see
	 * SERVER_ACCEPTS_PER_TURN), the requests of clients that had spent
	 * theirs; the once-a-minute refusal report; giving freed memory back.
	 */
	uv_idle_t resume;
	uv_timer_t report, trim;
	int handles; /* freed when the last of the four has closed */
	int listening;
	int accept_waiting; /* libuv holds a connection for us */
	size_t resume_from; /* where the next resume starts: each in turn */
	size_t freed;       /* bytes freed since the last trim */
	uint64_t turn_ms; /* the loop time of the turn accepts are counted in */
	int turn_accepts;
	struct refusals refused[SERVER_REFUSAL_UIDS + 1];
	size_t nrefused;
	/* Sorted by id: ids only grow, so adding is an append. */
	struct client **clients;
	size_t nclients, cap;
	uint64_t next_id;
	/* One entry per uid with a client; a client points at its own. */
	struct uid_input **inputs;
	size_t ninputs, inputs_cap;
};

struct wreq {
	uv_write_t req;
	struct client *c;
	size_t len;
	int oversized; /* counted in c->oversized */
	char *buf;     /* owned; may point into data[] */
	char data[];
};

/* server.c */
struct client *client_find(struct server *srv, uint64_t id);
struct uid_input *uid_input_get(struct server *srv, uid_t uid);
void client_closed_cb(uv_handle_t *h);
void client_close(struct client *c);
void client_drain(struct client *c);
void client_timer_cb(uv_timer_t *t);
void client_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
void client_read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);
void server_freed(struct server *srv, size_t n);
void server_resume_cb(uv_idle_t *h);

/* server-accept.c */
void server_connection_cb(uv_stream_t *ls, int status);
void server_accept(struct server *srv);

/* server-output.c */
int client_send_error(struct client *c, const cJSON *id, int code,
                      const char *msg);

/* server-socket.c */
int server_probe(const char *path, char *cause, size_t causelen);
int server_lock(const char *path, int *fdp, char *cause, size_t causelen);
int server_listen_fd(struct daemon *d, const char *path, mode_t mode, int *fdp);
int server_mkdir(const char *path, int system, char *cause, size_t causelen);

#endif
