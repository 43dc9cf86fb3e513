/*
 * Large answers, a slice at a time (answers.h). Each answer is a fill
 * callback and its state; an idle handle runs the fills of the answers
 * whose clients have read what they were sent, round robin, until the
 * slice's time is used, so the loop goes back to its timers and sockets
 * within about ANSWERS_SLICE_NS. A client's answers are written one after
 * the other (the server holds its other lines meanwhile).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "answers.h"
#include "daemon.h"
#include "log.h"
#include "proto.h"
#include "server.h"

struct answer {
	uint64_t client_id;
	uid_t uid;
	cJSON *req_id; /* a copy */
	const struct answers_ops *ops;
	void *state;
	int open;             /* its stream is open */
	int blocked;          /* waits for the client to read */
	struct answer *next;  /* the next client's answer */
	struct answer *after; /* this client's next answer, waiting */
};

struct answers {
	uv_idle_t idle;
	int idling;
	/* One answer per client, in the order they came; the client's
	 * others wait behind it (after). */
	struct answer *head;
	struct answers_buf buf;
};

int
answers_append(struct answers_buf *b, const char *text, size_t len)
{
	size_t cap;
	char *t;

	if (b->len + len + 1 > b->cap) {
		cap = b->cap * 2 > b->len + len + 1 ? b->cap * 2
		                                    : b->len + len + 1;
		if (cap < 4096)
			cap = 4096;
		if ((t = realloc(b->text, cap)) == NULL)
			return -ENOMEM;
		b->text = t;
		b->cap = cap;
	}
	memcpy(b->text + b->len, text, len);
	b->len += len;
	b->text[b->len] = '\0';
	return 0;
}

int
answers_append_json(struct answers_buf *b, cJSON *o)
{
	char *text;
	int rc;

	if (o == NULL)
		return -ENOMEM;
	text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (text == NULL)
		return -ENOMEM;
	rc = answers_append(b, text, strlen(text));
	free(text);
	return rc;
}

static void
answer_free(struct answer *a)
{
	if (a->ops->free != NULL)
		a->ops->free(a->state);
	cJSON_Delete(a->req_id);
	free(a);
}

/* Free a, whose pointer is *pp: the client's next answer takes its
 * place. */
static void
answer_drop(struct answer **pp)
{
	struct answer *a = *pp;

	if (a->after != NULL) {
		a->after->next = a->next;
		*pp = a->after;
	} else
		*pp = a->next;
	answer_free(a);
}

/* One fill of a; 1 when it did work, 0 when it waits; *pp may be
 * unlinked. The stream opens with the first part written, so a fill can
 * still refuse before. */
static int
answer_step(struct daemon *d, struct answers *as, struct answer **pp)
{
	struct answer *a = *pp;
	char cause[256] = "";
	int rc;

	if (a->blocked)
		return 0;
	if (a->open &&
	    server_client_unwritten(d, a->client_id) >= ANSWERS_LOW_WATER) {
		a->blocked = 1;
		return 0;
	}
	as->buf.len = 0;
	rc = a->ops->fill(d, a->state, &as->buf, cause, sizeof cause);
	if (rc < 0 && !a->open) {
		(void)server_reply_error(
		    d, a->client_id, a->req_id,
		    rc <= PROTO_E_HELLO ? rc : PROTO_E_INTERNAL,
		    cause[0] != '\0' ? cause : "internal error");
		answer_drop(pp);
		return 1;
	}
	if (as->buf.len > 0 && !a->open) {
		if (server_stream_open(d, a->client_id, a->req_id) != 0) {
			answer_drop(pp); /* the client has gone */
			return 1;
		}
		a->open = 1;
	}
	if (as->buf.len > 0 &&
	    server_stream_write(d, a->client_id, as->buf.text, as->buf.len) !=
	        0) {
		answer_drop(pp);
		return 1;
	}
	if (rc < 0) {
		log_warnx("an answer to client %llu failed (%s): closing it",
		          (unsigned long long)a->client_id, cause);
		server_close_client(d, a->client_id);
		answer_drop(pp);
	} else if (rc == 0) {
		(void)server_stream_close(d, a->client_id);
		answer_drop(pp);
	}
	return 1;
}

void
answers_run(struct daemon *d)
{
	struct answers *as = d->answers;
	struct answer **pp;
	uint64_t t0 = uv_hrtime();
	int worked;

	if (as == NULL)
		return;
	do {
		worked = 0;
		for (pp = &as->head; *pp != NULL;) {
			struct answer *a = *pp;

			worked |= answer_step(d, as, pp);
			if (*pp == a)
				pp = &a->next;
			if (uv_hrtime() - t0 >= ANSWERS_SLICE_NS)
				break;
		}
	} while (worked && uv_hrtime() - t0 < ANSWERS_SLICE_NS);
	/* Nothing to do until a client reads: no spinning meanwhile. */
	if (!worked && as->idling) {
		uv_idle_stop(&as->idle);
		as->idling = 0;
	}
}

static void
answers_idle_cb(uv_idle_t *h)
{
	answers_run(h->data);
}

static void
answers_wake(struct answers *as)
{
	if (!as->idling) {
		uv_idle_start(&as->idle, answers_idle_cb);
		as->idling = 1;
	}
}

int
answers_start(struct daemon *d, const struct peer *p, const cJSON *req_id,
              const struct answers_ops *ops, void *state, char *cause,
              size_t causelen)
{
	struct answers *as = d->answers;
	struct answer *a, *b, **pp, **mine = NULL;
	int n_uid = 0, n_client = 0;

	if (as == NULL) {
		if ((as = calloc(1, sizeof *as)) == NULL)
			goto nomem;
		uv_idle_init(d->loop, &as->idle);
		as->idle.data = d;
		d->answers = as;
	}
	for (pp = &as->head; *pp != NULL; pp = &(*pp)->next)
		for (b = *pp; b != NULL; b = b->after) {
			n_uid += b->uid == p->uid;
			if (b->client_id == p->client_id) {
				n_client++;
				mine = &b->after;
			}
		}
	if (n_client >= ANSWERS_PER_CLIENT ||
	    (p->uid != 0 && n_uid >= ANSWERS_PER_UID)) {
		if (ops->free != NULL)
			ops->free(state);
		snprintf(cause, causelen,
		         "limit reached: %d large answers being written %s; "
		         "read them first",
		         n_client >= ANSWERS_PER_CLIENT ? ANSWERS_PER_CLIENT
		                                        : ANSWERS_PER_UID,
		         n_client >= ANSWERS_PER_CLIENT ? "on this connection"
		                                        : "per user");
		return PROTO_E_LIMIT;
	}
	if ((a = calloc(1, sizeof *a)) == NULL ||
	    (a->req_id = cJSON_Duplicate(req_id, 1)) == NULL) {
		free(a);
		goto nomem;
	}
	a->client_id = p->client_id;
	a->uid = p->uid;
	a->ops = ops;
	a->state = state;
	/* Behind the client's last answer, or the last in the list. */
	*(mine != NULL ? mine : pp) = a;
	answers_wake(as);
	return 0;
nomem:
	if (ops->free != NULL)
		ops->free(state);
	snprintf(cause, causelen, "out of memory");
	return PROTO_E_INTERNAL;
}

/* The client's first answer, or NULL. */
static struct answer **
client_answer(struct daemon *d, uint64_t client_id)
{
	struct answer **pp;

	if (d->answers == NULL)
		return NULL;
	for (pp = &d->answers->head; *pp != NULL; pp = &(*pp)->next)
		if ((*pp)->client_id == client_id)
			return pp;
	return NULL;
}

size_t
answers_owed(struct daemon *d, uint64_t client_id)
{
	struct answer **pp = client_answer(d, client_id), *a;
	size_t n = 0;

	for (a = pp != NULL ? *pp : NULL; a != NULL; a = a->after)
		n++;
	return n;
}

void
answers_writable(struct daemon *d, uint64_t client_id)
{
	struct answer **pp = client_answer(d, client_id);

	if (pp != NULL && (*pp)->blocked) {
		(*pp)->blocked = 0;
		answers_wake(d->answers);
	}
}

void
answers_client_gone(struct daemon *d, uint64_t client_id)
{
	struct answer **pp = client_answer(d, client_id);

	while (pp != NULL && *pp != NULL && (*pp)->client_id == client_id)
		answer_drop(pp);
}

static void
answers_closed_cb(uv_handle_t *h)
{
	struct answers *as = h->data;

	free(as->buf.text);
	free(as);
}

void
answers_stop(struct daemon *d)
{
	struct answers *as = d->answers;

	if (as == NULL)
		return;
	while (as->head != NULL)
		answer_drop(&as->head);
	d->answers = NULL;
	as->idle.data = as;
	uv_close((uv_handle_t *)&as->idle, answers_closed_cb);
}

/* ---- list answers built a page at a time (answers.h) ---- */

/* A new slice of work on the page (page_begin starts the first). */
void
answers_page_slice(struct page *pg)
{
	pg->t0 = uv_hrtime();
	pg->n_slice = 0;
	pg->yield = 0;
}

int
answers_page_pass(struct page *pg)
{
	pg->n_slice++;
	if (!pg->yield && uv_hrtime() - pg->t0 > ANSWERS_SLICE_NS)
		pg->yield = 1;
	return pg->yield;
}

/* Adds an entry (consumed) unless the page is full; 1 when added. */
int
answers_page_add(struct page *pg, cJSON *o)
{
	char *text, *t;
	size_t len;

	if (o == NULL)
		return 0;
	if (pg->n_slice > 0 && !pg->yield &&
	    uv_hrtime() - pg->t0 > ANSWERS_SLICE_NS)
		pg->yield = 1;
	if (pg->full || pg->over || pg->yield || (int64_t)pg->n >= pg->limit) {
		if (!pg->over && !pg->yield)
			pg->full = 1;
		cJSON_Delete(o);
		return 0;
	}
	text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (text == NULL) {
		pg->over = 1;
		return 0;
	}
	len = strlen(text);
	if (pg->len + len + 2 > ANSWERS_PAGE_MAX) {
		if (!pg->v2)
			pg->over = 1;
		else if (pg->n > 0)
			pg->full = 1;
		if (pg->over || pg->full) {
			free(text);
			return 0;
		}
	}
	if (pg->len + len + 2 > pg->cap) {
		size_t cap = pg->cap * 2 > pg->len + len + 2
		                 ? pg->cap * 2
		                 : pg->len + len + 2;

		if ((t = realloc(pg->text, cap)) == NULL) {
			free(text);
			pg->over = 1;
			return 0;
		}
		pg->text = t;
		pg->cap = cap;
	}
	if (pg->n > 0)
		pg->text[pg->len++] = ',';
	memcpy(pg->text + pg->len, text, len);
	pg->len += len;
	pg->text[pg->len] = '\0';
	free(text);
	pg->n++;
	pg->n_slice++;
	return 1;
}

/* A page begun: the cursor is version 2's only. */
int
answers_page_begin(struct page *pg, int v2, int64_t limit, const char *cursor,
                   char *cause, size_t causelen)
{
	memset(pg, 0, sizeof *pg);
	if (cursor != NULL && !v2) {
		snprintf(cause, causelen,
		         "invalid params: 'cursor' is for protocol version 2");
		return PROTO_E_PARAMS;
	}
	pg->v2 = v2;
	pg->limit = limit;
	answers_page_slice(pg);
	pg->cap = 4096;
	if ((pg->text = malloc(pg->cap)) == NULL) {
		snprintf(cause, causelen, "out of memory");
		return PROTO_E_INTERNAL;
	}
	memcpy(pg->text, "[", 2);
	pg->len = 1;
	return 0;
}

void
answers_page_free(struct page *pg)
{
	free(pg->text);
	pg->text = NULL;
}

/* The page's entries as the JSON array they are (consumed). */
cJSON *
answers_page_array(struct page *pg)
{
	cJSON *a;

	pg->text[pg->len++] = ']';
	pg->text[pg->len] = '\0';
	a = cJSON_CreateRaw(pg->text);
	answers_page_free(pg);
	return a;
}

/* A version 1 answer built in slices, at its end: {"member": [page]}. */
int
answers_page_result(struct page *pg, const char *member,
                    struct answers_buf *out, char *cause, size_t causelen)
{
	if (answers_append(out, "{\"", 2) != 0 ||
	    answers_append(out, member, strlen(member)) != 0 ||
	    answers_append(out, "\":", 2) != 0 ||
	    answers_append(out, pg->text, pg->len) != 0 ||
	    answers_append(out, "]}", 2) != 0) {
		snprintf(cause, causelen, "out of memory");
		return PROTO_E_INTERNAL;
	}
	return 0;
}

/* A version 1 answer past the budget: the page goes, the error names the
 * way out. */
int
answers_page_over(struct page *pg, const char *what, int page_max, char *cause,
                  size_t causelen)
{
	answers_page_free(pg);
	snprintf(cause, causelen,
	         "answer larger than %u bytes: use protocol version 2 and "
	         "page %s with limit (at most %d per page)",
	         ANSWERS_PAGE_MAX, what, page_max);
	return PROTO_E_LIMIT;
}
