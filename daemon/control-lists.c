/*
 * The job methods whose answers are lists: status (live and ended jobs),
 * events and a job's history. Each is written a page or a part at a time
 * (answers.h), so none holds the loop or waits in memory whole.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <uv.h>

#include "answers.h"
#include "control.h"
#include "jobs-filter.h"
#include "jobs.h"
#include "notify.h"
#include "platform.h"
#include "proto.h"
#include "store.h"
#include "units.h"
#include "wire.h"

#define STATUS_PAGE_DEFAULT 100
#define STATUS_PAGE_MAX 1000
#define EVENTS_PAGE_MAX 10000
/* What a filtered list reads of the database at a time, at least. */
#define FILTER_CHUNK 64

/* The job states that are ends, as a filter's bits. */
#define ENDED_STATE_BITS                                                       \
	((1u << JOB_EXITED) | (1u << JOB_KILLED) | (1u << JOB_FAILED) |        \
	 (1u << JOB_CANCELLED) | (1u << JOB_LOST))

struct ended_ctx {
	struct page *pg;
	uid_t viewer;
	const struct job_filter *f;
	int64_t last_ms, last_id; /* the last ended job read */
	int64_t n;                /* jobs read in this chunk */
};

/* A job read: added, or passed over by the filter; either way the next
 * page begins after it. */
static int
ended_cb(void *arg, struct job *j)
{
	struct ended_ctx *c = arg;
	int read = 1, stop = 0;

	if (!jobs_filter_match(c->f, j))
		stop = answers_page_pass(c->pg);
	else
		read = answers_page_add(
		    c->pg, c->pg->v2 ? wire_job_ended_list(j, c->viewer)
		                     : wire_job_ended(j, c->viewer, 0));
	if (read) {
		c->last_ms = j->ended_ms;
		c->last_id = j->id;
		c->n++;
	}
	job_free(j);
	return !read || stop; /* full, or its time is up: the rest waits */
}

/*
 * A v2 cursor names where the previous page ended: "l<id>.<index>" in the
 * table's list (live jobs, then those ended but not written yet), the last
 * job's id and its place; "e<ended_ms>.<id>" among the ended jobs of the
 * database, newest first. A job that stays put is never missed nor
 * repeated: the next page begins after the cursor's job, found by its id,
 * or, when that job has left the list meanwhile, at the place it had.
 */
static int
cursor_parse(const char *cur, char *phase, int64_t *a, int64_t *b)
{
	long long x, y;
	int used = 0;

	if ((cur[0] != 'l' && cur[0] != 'e') ||
	    sscanf(cur + 1, "%lld.%lld%n", &x, &y, &used) != 2 ||
	    cur[1 + used] != '\0' || x < 0 || y < 0)
		return -1;
	*phase = cur[0];
	*a = x;
	*b = y;
	return 0;
}

/* Where a status answer is: a version 2 page, or the pages a version 1
 * answer is built of, a slice at a time (answers.h). */
struct status_walk {
	uid_t viewer;
	int all, v2;
	struct job_filter f;
	int ended; /* the ended part alone: no walk through the queue */
	int64_t ended_left; /* v1: ended jobs still wanted */
	char cursor[64];    /* where the next page begins ("": the start) */
	int more;           /* a next page exists */
	struct page pg;     /* v1: the answer so far */
};

/* One page from w->cursor into pg: live jobs (unless w->ended), then with
 * all the ended ones; it ends when pg is full, or has had its slice of
 * time. Leaves w->cursor after the last entry added, and w->more. */
static int
status_walk(struct daemon *d, struct status_walk *w, struct page *pg,
            char *cause, size_t causelen)
{
	struct jobs_view *v = NULL;
	struct ended_ctx ctx;
	char phase = 'l';
	int64_t ca = 0, cb = 0, want;
	size_t n = 0, i, start = 0, before;
	int rc = 0, filtered = jobs_filter_any(&w->f);

	if (w->cursor[0] != '\0' &&
	    cursor_parse(w->cursor, &phase, &ca, &cb) != 0) {
		snprintf(cause, causelen,
		         "invalid params: 'cursor' is not one this daemon "
		         "gave");
		return PROTO_E_PARAMS;
	}
	if (phase == 'l' && !w->ended && jobs_list(d, w->all, &v, &n) != 0) {
		snprintf(cause, causelen, "out of memory");
		return PROTO_E_INTERNAL;
	}
	if (phase == 'l' && w->cursor[0] != '\0') {
		start = (size_t)cb < n ? (size_t)cb : n;
		for (i = 0; i < n; i++)
			if (v[i].j->id == ca) {
				start = i + 1;
				break;
			}
	}
	for (i = start; phase == 'l' && i < n; i++) {
		int64_t id = v[i].j->id;
		cJSON *o;

		if (!jobs_filter_match(&w->f, v[i].j)) {
			int stop = answers_page_pass(pg);

			jobs_view_free(&v[i]);
			snprintf(w->cursor, sizeof w->cursor,
			         "l%" PRId64 ".%zu", id, i);
			if (stop)
				break;
			continue;
		}
		/* Version 1 shows argv, which the table does not keep. */
		if (!w->v2 && wire_may_see(w->viewer, v[i].j) &&
		    (rc = jobs_view_args(d, &v[i], cause, causelen)) != 0)
			break;
		o = w->v2 ? wire_job_list(&v[i], w->viewer)
		          : wire_job(&v[i], w->viewer, 0);
		jobs_view_free(&v[i]);
		if (!answers_page_add(pg, o))
			break;
		snprintf(w->cursor, sizeof w->cursor, "l%" PRId64 ".%zu", id,
		         i);
	}
	free(v);
	if (rc != 0)
		return rc;
	/* The ended jobs of the database, when the page has room: a page
	 * holding the last live job goes on with the first ended one. */
	if (w->all && !pg->full && !pg->yield && !pg->over &&
	    (w->v2 || w->ended_left > 0)) {
		memset(&ctx, 0, sizeof ctx);
		ctx.pg = pg;
		ctx.viewer = w->viewer;
		ctx.f = &w->f;
		if (phase == 'l') {
			ca = INT64_MAX;
			cb = INT64_MAX;
		}
		ctx.last_ms = ca;
		ctx.last_id = cb;
		/* A chunk at a time while the filter leaves the page room,
		 * to the end of the list or of the slice's time. */
		for (;;) {
			before = pg->n;
			/* v2: one more than fits says whether a next page
			 * exists. */
			want = w->v2 ? pg->limit - (int64_t)pg->n + 1
			             : w->ended_left;
			if (filtered && want < FILTER_CHUNK)
				want = FILTER_CHUNK;
			ctx.n = 0;
			rc = w->f.has_uid
			         ? store_jobs_ended_of(d->store, w->f.uid,
			                               ctx.last_ms, ctx.last_id,
			                               want, ended_cb, &ctx)
			         : store_jobs_ended_before(
			               d->store, ctx.last_ms, ctx.last_id, want,
			               ended_cb, &ctx);
			if (rc < 0) {
				snprintf(cause, causelen,
				         "storage error reading jobs");
				return PROTO_E_STORAGE;
			}
			if (!w->v2)
				w->ended_left -= (int64_t)(pg->n - before);
			if (ctx.last_id != cb || ctx.last_ms != ca)
				snprintf(w->cursor, sizeof w->cursor,
				         "e%" PRId64 ".%" PRId64, ctx.last_ms,
				         ctx.last_id);
			if (rc > 0 || ctx.n < want ||
			    (!w->v2 && w->ended_left <= 0))
				break;
		}
		rc = 0;
	}
	w->more = (pg->full || pg->yield) && w->cursor[0] != '\0' &&
	          (w->v2 || !pg->full);
	return 0;
}

static void
status_free(void *state)
{
	struct status_walk *w = state;

	answers_page_free(&w->pg);
	free(w);
}

/* Version 1: the pages one after the other, a slice each, into one
 * answer; refused whole past ANSWERS_PAGE_MAX. */
static int
status_fill(struct daemon *d, void *state, struct answers_buf *out, char *cause,
            size_t causelen)
{
	struct status_walk *w = state;
	int rc;

	answers_page_slice(&w->pg);
	if ((rc = status_walk(d, w, &w->pg, cause, causelen)) != 0)
		return rc;
	if (w->pg.over)
		return answers_page_over(&w->pg, "status", STATUS_PAGE_MAX,
		                         cause, causelen);
	if (w->more)
		return 1;
	return answers_page_result(&w->pg, "jobs", out, cause, causelen);
}

static const struct answers_ops status_ops = {status_fill, status_free};

int
control_status(struct daemon *d, const struct peer *p, const cJSON *req_id,
               const cJSON *params, cJSON **result, char *cause,
               size_t causelen)
{
	struct status_walk *w;
	const char *cursor = NULL;
	int all = 0, ended = 0, v2 = p->version >= 2, rc;
	int64_t limit = v2 ? STATUS_PAGE_DEFAULT : 50;

	if ((rc = proto_param_bool(params, "all", 0, &all, cause, causelen)) <
	        0 ||
	    (rc = proto_param_bool(params, "ended", 0, &ended, cause,
	                           causelen)) < 0 ||
	    (rc = proto_param_int(params, "limit", 0, v2 ? 1 : 0,
	                          v2 ? STATUS_PAGE_MAX : 100000, &limit, cause,
	                          causelen)) < 0 ||
	    (rc = proto_param_string(params, "cursor", 0, 64, &cursor, cause,
	                             causelen)) < 0)
		return rc;
	if ((w = calloc(1, sizeof *w)) == NULL) {
		snprintf(cause, causelen, "out of memory");
		return PROTO_E_INTERNAL;
	}
	w->viewer = p->uid;
	if ((rc = store_filter_read(params, p->uid, &w->f, cause, causelen)) !=
	    0) {
		free(w);
		return rc;
	}
	/* Given states say whether the ended jobs are read: a state that is
	 * an end is looked for among them too, and only live states never
	 * are. */
	w->all = w->f.states != 0 ? (w->f.states & ENDED_STATE_BITS) != 0
	                          : all || ended;
	w->ended = ended;
	w->v2 = v2;
	w->ended_left = limit;
	if (cursor != NULL)
		snprintf(w->cursor, sizeof w->cursor, "%s", cursor);
	/* v1: every live job, then up to limit ended ones. */
	if ((rc = answers_page_begin(&w->pg, v2, v2 ? limit : INT64_MAX, cursor,
	                             cause, causelen)) != 0) {
		free(w);
		return rc;
	}
	if (!v2) {
		if ((rc = answers_start(d, p, req_id, &status_ops, w, cause,
		                        causelen)) != 0)
			return rc;
		return CONTROL_DEFERRED;
	}
	if ((rc = status_walk(d, w, &w->pg, cause, causelen)) != 0) {
		status_free(w);
		return rc;
	}
	*result = cJSON_CreateObject();
	cJSON_AddItemToObject(*result, "jobs", answers_page_array(&w->pg));
	if (w->more)
		cJSON_AddStringToObject(*result, "next_cursor", w->cursor);
	else
		cJSON_AddNullToObject(*result, "next_cursor");
	status_free(w);
	return 0;
}

struct events_ctx {
	struct daemon *d;
	struct page *pg;
	uid_t viewer;
	int64_t job_id; /* this job's alone; 0: all */
	const struct job_filter *f;
	struct job_filter_cache cache;
	int64_t last; /* the last event read: added, or passed over */
	int64_t n;    /* events read in this chunk */
};

static int
events_cb(void *arg, const struct store_event *e)
{
	struct events_ctx *c = arg;
	int stop = 0;

	if (!jobs_filter_event(c->d, c->f, &c->cache, e))
		stop = answers_page_pass(c->pg);
	else if (!answers_page_add(c->pg, wire_event(e, c->viewer)))
		return 1; /* full: the rest is not read */
	c->last = e->id;
	c->n++;
	return stop;
}

/* Version 2 takes the cursor of events as the id of the last one: a
 * decimal string, as next_cursor gives it; newest first (before_id) it is
 * "b" and the id of the oldest one so far. */
static int
events_cursor(const char *cur, int64_t *after, int64_t *before)
{
	long long x;
	int used = 0, b = cur[0] == 'b';

	if (cur[b] < '0' || cur[b] > '9' ||
	    sscanf(cur + b, "%lld%n", &x, &used) != 1 ||
	    cur[b + used] != '\0' || x < 0 || (b && x == 0))
		return -1;
	*(b ? before : after) = x;
	return 0;
}

/*
 * Events into ctx's page until it holds want of them: oldest first after
 * ctx->last, or newest first below *before (then updated to the oldest
 * one read). A chunk at a time while a filter passes events over. 1 when
 * the page stopped (full, or its slice had its time) or holds want, 0 at
 * the end of the events, < 0 on a storage error.
 */
static int
events_read(struct daemon *d, int64_t *before, struct events_ctx *ctx,
            int64_t want)
{
	int filtered = jobs_filter_any(ctx->f), rc;
	int64_t ask;

	for (;;) {
		ask = want - (int64_t)ctx->pg->n;
		if (filtered && ask < FILTER_CHUNK)
			ask = FILTER_CHUNK;
		ctx->n = 0;
		rc = *before > 0
		         ? store_events_before(d->store, *before, ctx->job_id,
		                               ask, events_cb, ctx)
		         : store_events(d->store, ctx->last, ctx->job_id, ask,
		                        events_cb, ctx);
		if (*before > 0 && ctx->n > 0)
			*before = ctx->last; /* go on below the oldest read */
		if (rc != 0)
			return rc;
		if (ctx->n < ask)
			return 0;
		if ((int64_t)ctx->pg->n >= want || ctx->pg->yield)
			return 1;
	}
}

/* A version 1 events answer, built a slice at a time. */
struct events_walk {
	struct events_ctx ctx;
	struct job_filter f;
	struct page pg;
	int64_t limit;
	int64_t before; /* newest first, before this id (0: oldest first) */
	uint64_t client_id;
	int follow;
};

static void
events_free(void *state)
{
	struct events_walk *w = state;

	answers_page_free(&w->pg);
	free(w);
}

static int
events_fill(struct daemon *d, void *state, struct answers_buf *out, char *cause,
            size_t causelen)
{
	struct events_walk *w = state;
	int rc;

	answers_page_slice(&w->pg);
	w->ctx.pg = &w->pg;
	if ((rc = events_read(d, &w->before, &w->ctx, w->limit)) < 0) {
		snprintf(cause, causelen, "storage error reading events");
		return PROTO_E_STORAGE;
	}
	if (w->pg.over)
		return answers_page_over(&w->pg, "events", EVENTS_PAGE_MAX,
		                         cause, causelen);
	if (rc > 0 && w->pg.yield && (int64_t)w->pg.n < w->limit)
		return 1;
	/* The follow begins after the last event of the answer; what it
	 * sends comes after the answer (notify sends it later). */
	if (w->follow &&
	    notify_follow_events(d, w->client_id, w->ctx.viewer, w->ctx.last,
	                         w->ctx.job_id, &w->f) != 0) {
		snprintf(cause, causelen, "out of memory");
		return PROTO_E_INTERNAL;
	}
	return answers_page_result(&w->pg, "events", out, cause, causelen);
}

static const struct answers_ops events_ops = {events_fill, events_free};

int
control_events(struct daemon *d, const struct peer *p, const cJSON *req_id,
               const cJSON *params, cJSON **result, char *cause,
               size_t causelen)
{
	struct events_walk *w;
	const char *cursor = NULL;
	int64_t after = 0, before = 0, job = 0, limit = 100;
	int follow = 0, v2 = p->version >= 2, rc, more;
	char next[32];

	if ((rc = proto_param_int(params, "after_id", 0, 0, INT64_MAX, &after,
	                          cause, causelen)) < 0 ||
	    (rc = proto_param_int(params, "before_id", 0, 1, INT64_MAX, &before,
	                          cause, causelen)) < 0 ||
	    (rc = proto_param_string(params, "cursor", 0, 32, &cursor, cause,
	                             causelen)) < 0 ||
	    (rc = proto_param_int(params, "job_id", 0, 1, INT64_MAX, &job,
	                          cause, causelen)) < 0 ||
	    (rc = proto_param_int(params, "limit", 0, 1, EVENTS_PAGE_MAX,
	                          &limit, cause, causelen)) < 0 ||
	    (rc = proto_param_bool(params, "follow", 0, &follow, cause,
	                           causelen)) < 0)
		return rc;
	if (cursor != NULL &&
	    (cJSON_GetObjectItemCaseSensitive(params, "after_id") != NULL ||
	     cJSON_GetObjectItemCaseSensitive(params, "before_id") != NULL ||
	     events_cursor(cursor, &after, &before) != 0)) {
		snprintf(cause, causelen,
		         "invalid params: 'cursor' must be a next_cursor this "
		         "daemon gave, without after_id or before_id");
		return PROTO_E_PARAMS;
	}
	if (before > 0 && (after > 0 || follow)) {
		snprintf(cause, causelen,
		         "invalid params: 'before_id' (newest first) cannot go "
		         "with after_id or follow");
		return PROTO_E_PARAMS;
	}
	if ((w = calloc(1, sizeof *w)) == NULL) {
		snprintf(cause, causelen, "out of memory");
		return PROTO_E_INTERNAL;
	}
	if ((rc = store_filter_read(params, p->uid, &w->f, cause, causelen)) !=
	        0 ||
	    (rc = answers_page_begin(&w->pg, v2, limit, cursor, cause,
	                             causelen)) != 0) {
		free(w);
		return rc;
	}
	w->ctx.d = d;
	w->ctx.pg = &w->pg;
	w->ctx.viewer = p->uid;
	w->ctx.job_id = job;
	w->ctx.f = &w->f;
	w->ctx.last = before > 0 ? before : after;
	w->limit = limit;
	w->before = before;
	w->client_id = p->client_id;
	w->follow = follow;
	if (!v2) {
		if ((rc = answers_start(d, p, req_id, &events_ops, w, cause,
		                        causelen)) != 0)
			return rc;
		return CONTROL_DEFERRED;
	}
	/* One more than the page says whether a next one exists. */
	if ((more = events_read(d, &before, &w->ctx, limit + 1)) < 0) {
		events_free(w);
		snprintf(cause, causelen, "storage error reading events");
		return PROTO_E_STORAGE;
	}
	if (follow && notify_follow_events(d, p->client_id, p->uid, w->ctx.last,
	                                   w->ctx.job_id, &w->f) != 0) {
		events_free(w);
		snprintf(cause, causelen, "out of memory");
		return PROTO_E_INTERNAL;
	}
	*result = cJSON_CreateObject();
	cJSON_AddItemToObject(*result, "events", answers_page_array(&w->pg));
	snprintf(next, sizeof next, "%s%" PRId64, before > 0 ? "b" : "",
	         w->ctx.last);
	/* A page a filter ended early (its slice had its time) is not the
	 * end: it goes on after the last event read, shown or not. */
	if (more > 0 && !follow && w->ctx.last != (before > 0 ? 0 : after))
		cJSON_AddStringToObject(*result, "next_cursor", next);
	else
		cJSON_AddNullToObject(*result, "next_cursor");
	events_free(w);
	return 0;
}

/* A job's history answer: its buckets read, written JOB_HISTORY_PART
 * at a time. */
#define JOB_HISTORY_PART 500
struct job_history_answer {
	struct job_bucket *b;
	size_t n, i;
	struct store_stage *st;
	size_t nst;
	int64_t step;
	char head[96];
};

static void
job_history_free(void *state)
{
	struct job_history_answer *h = state;

	store_stages_free(h->st, h->nst);
	free(h->b);
	free(h);
}

static int
job_history_fill(struct daemon *d, void *state, struct answers_buf *out,
                 char *cause, size_t causelen)
{
	struct job_history_answer *h = state;
	size_t end =
	    h->i + JOB_HISTORY_PART < h->n ? h->i + JOB_HISTORY_PART : h->n;
	int rc = 0;

	(void)d;
	if (h->i == 0)
		rc = answers_append(out, h->head, strlen(h->head));
	for (; h->i < end && rc == 0; h->i++) {
		const struct job_bucket *b = &h->b[h->i];
		const char *stage =
		    store_stage_at(h->st, h->nst, b->ts_ms,
		                   b->ts_ms + (h->step > 0 ? h->step : 1));
		cJSON *o = store_read_job_bucket_json(b);

		if (stage != NULL)
			cJSON_AddStringToObject(o, "stage", stage);
		else
			cJSON_AddNullToObject(o, "stage");
		if (h->i > 0)
			rc = answers_append(out, ",", 1);
		if (rc == 0)
			rc = answers_append_json(out, o);
		else
			cJSON_Delete(o);
	}
	if (rc == 0 && h->i == h->n)
		rc = answers_append(out, "]}", 2);
	if (rc != 0) {
		snprintf(cause, causelen, "out of memory");
		return PROTO_E_INTERNAL;
	}
	return h->i < h->n;
}

static const struct answers_ops job_history_ops = {job_history_fill,
                                                   job_history_free};

int
control_job_history(struct daemon *d, const struct peer *p, const cJSON *req_id,
                    const cJSON *params, cJSON **result, char *cause,
                    size_t causelen)
{
	struct job_bucket *b = NULL;
	struct job_history_answer *h;
	struct jobs_view v;
	int64_t id, since = 0, until = INT64_MAX, step = -1, lo, hi;
	const struct job *j;
	size_t n = 0;
	char scause[256];
	int rc;

	if ((rc = proto_param_int(params, "job_id", 1, 1, INT64_MAX, &id, cause,
	                          causelen)) != 0 ||
	    (rc = proto_param_int(params, "since_ms", 0, 0, INT64_MAX, &since,
	                          cause, causelen)) < 0 ||
	    (rc = proto_param_int(params, "until_ms", 0, 0, INT64_MAX, &until,
	                          cause, causelen)) < 0 ||
	    (rc = proto_param_int(params, "step_ms", 0, 0, INT64_MAX, &step,
	                          cause, causelen)) < 0)
		return rc;
	if ((rc = jobs_get(d, id, &v, cause, causelen)) != 0)
		return rc;
	if (step < 0) {
		/* As for system history: about 60 buckets over the span asked,
		 * or over the job's life, never finer than the samples. */
		j = v.j;
		lo = since > 0 ? since : j->submitted_ms;
		hi = until != INT64_MAX ? until
		     : j->ended_ms > 0  ? j->ended_ms
		                        : clock_wall_ms();
		step = hi > lo ? (hi - lo) / 60 : 0;
		if (step < d->cfg.interval_ms)
			step = d->cfg.interval_ms;
	}
	jobs_view_free(&v);
	if ((rc = control_history_flush(d, id, until, cause, causelen)) != 0)
		return rc;
	if ((rc = store_job_history(d->store, id, since, until, step, &b, &n,
	                            scause, sizeof scause)) != 0) {
		/* Too many buckets is the protocol's limit, not a failing
		 * database: asking again would not help. */
		snprintf(cause, causelen, "%s: %s",
		         rc == -E2BIG ? "limit reached" : "storage error",
		         scause);
		return rc == -E2BIG ? PROTO_E_LIMIT : PROTO_E_STORAGE;
	}
	if ((h = calloc(1, sizeof *h)) == NULL) {
		free(b);
		snprintf(cause, causelen, "out of memory");
		return PROTO_E_INTERNAL;
	}
	if (jobs_stages(d, id, &h->st, &h->nst) != 0) {
		h->st = NULL;
		h->nst = 0;
	}
	h->b = b;
	h->n = n;
	h->step = step;
	snprintf(h->head, sizeof h->head,
	         "{\"job_id\":%" PRId64 ",\"step_ms\":%" PRId64
	         ",\"buckets\":[",
	         id, step);
	/* Read whole (its bound is the protocol's), written a slice at a
	 * time: the encoding is what took the loop's time. */
	if ((rc = answers_start(d, p, req_id, &job_history_ops, h, cause,
	                        causelen)) != 0)
		return rc;
	return CONTROL_DEFERRED;
}
