/*
 * Answers too large to build in one go (a history of 100,000 buckets is
 * 25 MiB and took half a second): written a slice at a time, between the
 * loop's other work, so no answer holds the loop for more than about
 * ANSWERS_SLICE_NS, and paced by what the client reads, so none waits in
 * memory whole (docs/architecture.md, "Large answers").
 */
#ifndef SL_ANSWERS_H
#define SL_ANSWERS_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

struct daemon;
struct peer;

/* The loop time one slice may take, all answers together. */
#define ANSWERS_SLICE_NS (2u * 1000 * 1000)
/* Written while the client has fewer bytes than this queued. */
#define ANSWERS_LOW_WATER (256u << 10)
/* Answers being written per uid (docs/security.md); root is not bound. */
#define ANSWERS_PER_UID 4

/* A growing text: what a fill appends to. */
struct answers_buf {
	char *text;
	size_t len, cap;
};
/* -ENOMEM; the text stays NUL-terminated. */
int answers_append(struct answers_buf *b, const char *text, size_t len);
/* cJSON_PrintUnformatted of o (consumed), appended; -ENOMEM. */
int answers_append_json(struct answers_buf *b, cJSON *o);

struct answers_ops {
	/* Append the next part of the result's text to out, a part that
	 * takes well under ANSWERS_SLICE_NS; 1 while more follows, 0 after
	 * the last part (the result's text is then complete JSON), < 0 on
	 * failure (the connection is closed: part of the answer is out). */
	int (*fill)(struct daemon *d, void *state, struct answers_buf *out);
	void (*free)(void *state);
};

/* Begin writing the answer to req_id of p: the result's text comes from
 * ops->fill. state is owned from here, whatever the outcome. 0 (the answer
 * is under way: the handler returns CONTROL_DEFERRED) or PROTO_E_LIMIT
 * with cause past ANSWERS_PER_UID, PROTO_E_INTERNAL. */
int answers_start(struct daemon *d, const struct peer *p, const cJSON *req_id,
                  const struct answers_ops *ops, void *state, char *cause,
                  size_t causelen);
/* Answers still being written to a client (the server's deferred hook). */
size_t answers_owed(struct daemon *d, uint64_t client_id);
/* The client's queue was written out: its answer goes on. */
void answers_writable(struct daemon *d, uint64_t client_id);
/* The client has gone: its answers are dropped. */
void answers_client_gone(struct daemon *d, uint64_t client_id);
/* At stop: every answer is dropped. */
void answers_stop(struct daemon *d);

#endif
