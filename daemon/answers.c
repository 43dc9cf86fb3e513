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
	int open;    /* its stream is open (the client's first answer) */
	int blocked; /* waits for the client to read */
	struct answer *next;
};

struct answers {
	uv_idle_t idle;
	int idling;
	struct answer *head; /* in the order they came */
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

/* Unlink and free a; the pointer to it is *pp. */
static void
answer_drop(struct answer **pp)
{
	struct answer *a = *pp;

	*pp = a->next;
	answer_free(a);
}

static int
client_has_open(struct answers *as, uint64_t client_id)
{
	struct answer *a;

	for (a = as->head; a != NULL; a = a->next)
		if (a->client_id == client_id && a->open)
			return 1;
	return 0;
}

/* One fill of a; 1 when it did work, 0 when it waits; *pp may be
 * unlinked. */
static int
answer_step(struct daemon *d, struct answers *as, struct answer **pp)
{
	struct answer *a = *pp;
	int rc;

	if (a->blocked)
		return 0;
	if (!a->open) {
		if (client_has_open(as, a->client_id))
			return 0;
		if (server_stream_open(d, a->client_id, a->req_id) != 0) {
			answer_drop(pp); /* the client has gone */
			return 1;
		}
		a->open = 1;
	}
	if (server_client_unwritten(d, a->client_id) >= ANSWERS_LOW_WATER) {
		a->blocked = 1;
		return 0;
	}
	as->buf.len = 0;
	rc = a->ops->fill(d, a->state, &as->buf);
	if (as->buf.len > 0 &&
	    server_stream_write(d, a->client_id, as->buf.text, as->buf.len) !=
	        0) {
		answer_drop(pp);
		return 1;
	}
	if (rc < 0) {
		log_warn("an answer to client %llu failed (%s): closing it",
		         (unsigned long long)a->client_id, strerror(-rc));
		server_close_client(d, a->client_id);
		answer_drop(pp);
	} else if (rc == 0) {
		(void)server_stream_close(d, a->client_id);
		answer_drop(pp);
	}
	return 1;
}

static void
answers_idle_cb(uv_idle_t *h)
{
	struct daemon *d = h->data;
	struct answers *as = d->answers;
	struct answer **pp;
	uint64_t t0 = uv_hrtime();
	int worked;

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
	if (!worked) {
		uv_idle_stop(&as->idle);
		as->idling = 0;
	}
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
	struct answer *a, **pp;
	int n = 0;

	if (as == NULL) {
		if ((as = calloc(1, sizeof *as)) == NULL)
			goto nomem;
		uv_idle_init(d->loop, &as->idle);
		as->idle.data = d;
		d->answers = as;
	}
	for (a = as->head; a != NULL; a = a->next)
		n += a->uid == p->uid;
	if (p->uid != 0 && n >= ANSWERS_PER_UID) {
		if (ops->free != NULL)
			ops->free(state);
		snprintf(cause, causelen,
		         "limit reached: %d large answers being written per "
		         "user; read them first",
		         ANSWERS_PER_UID);
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
	for (pp = &as->head; *pp != NULL; pp = &(*pp)->next)
		;
	*pp = a;
	answers_wake(as);
	return 0;
nomem:
	if (ops->free != NULL)
		ops->free(state);
	snprintf(cause, causelen, "out of memory");
	return PROTO_E_INTERNAL;
}

size_t
answers_owed(struct daemon *d, uint64_t client_id)
{
	struct answer *a;
	size_t n = 0;

	for (a = d->answers != NULL ? d->answers->head : NULL; a != NULL;
	     a = a->next)
		n += a->client_id == client_id;
	return n;
}

void
answers_writable(struct daemon *d, uint64_t client_id)
{
	struct answer *a;
	int any = 0;

	if (d->answers == NULL)
		return;
	for (a = d->answers->head; a != NULL; a = a->next)
		if (a->client_id == client_id && a->blocked) {
			a->blocked = 0;
			any = 1;
		}
	if (any)
		answers_wake(d->answers);
}

void
answers_client_gone(struct daemon *d, uint64_t client_id)
{
	struct answer **pp;

	if (d->answers == NULL)
		return;
	for (pp = &d->answers->head; *pp != NULL;)
		if ((*pp)->client_id == client_id)
			answer_drop(pp);
		else
			pp = &(*pp)->next;
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
