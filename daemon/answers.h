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
/* Answers being written (or waiting their turn) per connection, and per
 * uid across its connections, root's excepted (docs/security.md). */
#define ANSWERS_PER_CLIENT 4
#define ANSWERS_PER_UID 16

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
	 * takes well under ANSWERS_SLICE_NS: 1 while more follows, 0 after
	 * the last part (the result's text is then complete JSON). On
	 * failure a PROTO_E_* code with cause: the client gets that error
	 * when nothing of the answer was written yet (a fill may keep its
	 * parts and write them at the end, to refuse an answer that grows
	 * too large), else the connection is closed. */
	int (*fill)(struct daemon *d, void *state, struct answers_buf *out,
	            char *cause, size_t causelen);
	void (*free)(void *state);
};

/* Begin writing the answer to req_id of p: the result's text comes from
 * ops->fill. state is owned from here, whatever the outcome. 0 (the answer
 * is under way: the handler returns CONTROL_DEFERRED) or PROTO_E_LIMIT
 * with cause past ANSWERS_PER_CLIENT or ANSWERS_PER_UID, PROTO_E_INTERNAL.
 * A client's answers are written in the order they were asked for. */
int answers_start(struct daemon *d, const struct peer *p, const cJSON *req_id,
                  const struct answers_ops *ops, void *state, char *cause,
                  size_t causelen);
/* Answers still being written to a client (the server's deferred hook). */
size_t answers_owed(struct daemon *d, uint64_t client_id);
/* The client's queue was written out: its answer goes on. */
void answers_writable(struct daemon *d, uint64_t client_id);
/* The client has gone: its answers are dropped. */
void answers_client_gone(struct daemon *d, uint64_t client_id);
/* One slice of work: what the idle handle runs each loop turn, and what
 * a test without a running loop calls. */
void answers_run(struct daemon *d);
/* At stop: every answer is dropped. */
void answers_stop(struct daemon *d);

/*
 * Answers are bounded (PROTOCOL.md, "status", "events"): a list answer is
 * built entry by entry, each encoded once into the page's text, so it
 * stops at ANSWERS_PAGE_MAX bytes. Version 1 answers whole or not at all
 * (-32004 naming the page size to use); a version 2 page ends there early,
 * or once it has taken ANSWERS_SLICE_NS of the loop, its next_cursor saying
 * where the next one begins.
 */
#define ANSWERS_PAGE_MAX (4u << 20)

struct page {
	char *text; /* "[" and the entries so far, comma-separated */
	size_t len, cap;
	int64_t limit; /* entries wanted (v2: the page size) */
	size_t n;
	uint64_t t0;    /* uv_hrtime() when this slice began */
	size_t n_slice; /* entries added in this slice */
	int v2;
	int over;  /* v1: the answer would pass the budget */
	int full;  /* v2: no more entries fit in this page */
	int yield; /* this slice has had its time: go on in the next */
};

void answers_page_slice(struct page *pg);
int answers_page_add(struct page *pg, cJSON *o);
/* An entry read and left out (a filter passed it over): 1 when the slice
 * has had its time (yield is set; the entry counts as read), else 0. A
 * page a filter ends early so still ends within its slice, and is not the
 * end of the list. */
int answers_page_pass(struct page *pg);
int answers_page_begin(struct page *pg, int v2, int64_t limit,
                       const char *cursor, char *cause, size_t causelen);
void answers_page_free(struct page *pg);
cJSON *answers_page_array(struct page *pg);
int answers_page_result(struct page *pg, const char *member,
                        struct answers_buf *out, char *cause, size_t causelen);
/* A version 1 answer past the budget: the page goes, the error names
 * what to page and at most page_max a page. */
int answers_page_over(struct page *pg, const char *what, int page_max,
                      char *cause, size_t causelen);

#endif
