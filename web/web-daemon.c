/*
 * The web program's connection to the daemon: connect on demand,
 * reconnect once when a call finds the connection gone, and notice a
 * daemon restart (its started_at_ms changes). Snapshots are read fresh
 * for every answer: the daemon's answers are cheap and there is nothing
 * to keep in step.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "web.h"

/* Jobs asked for per status page: small pages keep what one answer
 * holds in memory small (the web program's RSS), at a few more calls. */
#define WEB_STATUS_PAGE 200
/* Events a page keeps (stage marks and daemon starts come from them). */
#define WEB_EVENTS_KEPT 500
/* A call waits this long for the daemon; a page must not hang. */
#define WEB_CALL_TIMEOUT_MS 5000

void
web_daemon_init(struct web_daemon *wd, const char *socket)
{
	memset(wd, 0, sizeof wd[0]);
	wd->socket = socket;
}

static void forget_events(struct web_daemon *wd);

void
web_daemon_close(struct web_daemon *wd)
{
	sl_client_free(wd->c);
	wd->c = NULL;
	forget_events(wd);
}

static int
web_connect(struct web_daemon *wd)
{
	int rc;

	if (wd->c != NULL && sl_is_connected(wd->c))
		return 0;
	if (wd->c == NULL && (wd->c = sl_client_new()) == NULL) {
		snprintf(wd->error, sizeof wd->error, "out of memory");
		return -ENOMEM;
	}
	sl_set_timeout(wd->c, WEB_CALL_TIMEOUT_MS);
	if ((rc = sl_connect(wd->c, wd->socket)) < 0) {
		snprintf(wd->error, sizeof wd->error, "%s", sl_errmsg(wd->c));
		return rc;
	}
	if (wd->ever)
		wd->reconnects++;
	wd->ever = 1;
	wd->connected_at_ms = clock_wall_ms();
	wd->error[0] = '\0';
	return 0;
}

int
web_daemon_call(struct web_daemon *wd, const char *method, const char *params,
                cJSON **result)
{
	char *text = NULL;
	int rc, tries;

	*result = NULL;
	for (tries = 0; tries < 2; tries++) {
		if ((rc = web_connect(wd)) < 0)
			return rc;
		rc = sl_call(wd->c, method, params, &text);
		if (rc >= 0)
			break;
		snprintf(wd->error, sizeof wd->error, "%s", sl_errmsg(wd->c));
		if (!sl_error_is_connection(rc))
			return rc;
		sl_close(wd->c);
	}
	if (rc < 0)
		return rc;
	*result = cJSON_Parse(text);
	sl_free(text);
	if (*result == NULL) {
		snprintf(wd->error, sizeof wd->error,
		         "the daemon's answer to %s is not JSON", method);
		return -EPROTO;
	}
	return 0;
}

/* A paged method through sl_call_pages: each gets each page's items (the
 * result's member items) as parsed JSON, and returns as sl_call_pages'
 * callback does. A connection found gone before the first page is tried
 * again once, as web_daemon_call does. */
struct web_pages {
	int (*each)(cJSON *items, void *arg);
	void *arg;
	int pages;
};

static int
web_pages_each(const char *items_json, void *arg)
{
	struct web_pages *w = arg;
	cJSON *items = cJSON_Parse(items_json);
	int rc;

	if (items == NULL)
		return -ENOMEM;
	w->pages++;
	rc = w->each(items, w->arg);
	cJSON_Delete(items);
	return rc;
}

static int
web_daemon_pages(struct web_daemon *wd, const char *method, const char *params,
                 const char *items, int (*each)(cJSON *items, void *arg),
                 void *arg)
{
	struct web_pages w = {each, arg, 0};
	int rc, tries;

	for (tries = 0; tries < 2; tries++) {
		if ((rc = web_connect(wd)) < 0)
			return rc;
		rc = sl_call_pages(wd->c, method, params, items, web_pages_each,
		                   &w);
		if (rc >= 0)
			return 0;
		snprintf(wd->error, sizeof wd->error, "%s", sl_errmsg(wd->c));
		if (!sl_error_is_connection(rc) || w.pages > 0)
			return rc;
		sl_close(wd->c);
	}
	return rc;
}

/* What take_jobs keeps of status's answers, and where it stops. */
struct take {
	cJSON *into;
	int64_t since_ms;
	int max_queued, nqueued, nended;
	int queued_left; /* queued jobs seen past max_queued */
	int count_rest;  /* go on counting them (one version 1 answer) */
	int stop;        /* past what is wanted: no more pages */
};

static void
take_one(struct take *t, const cJSON *j)
{
	const char *st = web_str(j, "state");
	int queued = st != NULL && strcmp(st, "queued") == 0;
	int live = queued || (st != NULL && (strcmp(st, "admitted") == 0 ||
	                                     strcmp(st, "running") == 0));

	if (!live && (++t->nended > WEB_ENDED_MAX ||
	              web_num(j, "ended_at_ms", 0) < (double)t->since_ms)) {
		t->stop = 1;
		return;
	}
	if (queued && ++t->nqueued > t->max_queued) {
		t->queued_left++;
		t->stop = !t->count_rest;
		return;
	}
	cJSON_AddItemToArray(t->into, web_public_job(j));
}

static int
take_page(cJSON *jobs, void *arg)
{
	struct take *t = arg;
	const cJSON *j;

	cJSON_ArrayForEach(j, jobs)
	{
		take_one(t, j);
		if (t->stop)
			return 1;
	}
	return 0;
}

/* One part of status (which: its params; limit: the page's size, in
 * version 1 the ended jobs'), page after page until its end or t->stop. */
static int
take_part(struct web_daemon *wd, const char *which, int limit, struct take *t)
{
	char params[160];

	if (t->stop)
		return 0;
	snprintf(params, sizeof params, "{%s,\"limit\":%d}", which, limit);
	return web_daemon_pages(wd, "status", params, "jobs", take_page, t);
}

/* Jobs of status: those holding memory and the first max_queued of the
 * queue (*queued_left: how many more, as info counts them), and (ended)
 * the ended ones back to since_ms, at most WEB_ENDED_MAX, read from the
 * ended part itself (status's ended), not by paging through the queue. */
static int
take_jobs(struct web_daemon *wd, const cJSON *info, int ended, int64_t since_ms,
          cJSON *into, int max_queued, int *queued_left)
{
	const cJSON *counts = cJSON_GetObjectItemCaseSensitive(info, "jobs");
	struct take t;
	char params[64];
	int rc;

	memset(&t, 0, sizeof t);
	t.into = into;
	t.since_ms = since_ms;
	t.max_queued = max_queued;
	/* Version 1 knows no cursor: one answer holds the list. */
	if (sl_hello_info(wd->c)->version < 2) {
		t.count_rest = 1;
		snprintf(params, sizeof params, "\"all\":%s",
		         ended ? "true" : "false");
		rc = take_part(wd, params, WEB_ENDED_MAX, &t);
		*queued_left = t.queued_left;
		return rc;
	}
	if ((rc = take_part(wd, "\"all\":false", WEB_STATUS_PAGE, &t)) < 0)
		return rc;
	if (t.queued_left > 0) {
		double left = web_num(counts, "queued", 0) - max_queued;
		*queued_left = left > t.queued_left ? (int)left : t.queued_left;
	}
	if (!ended)
		return 0;
	t.stop = 0;
	return take_part(wd, "\"ended\":true", WEB_STATUS_PAGE, &t);
}

struct held {
	cJSON *into;
	int got, want;
};

static int
held_page(cJSON *jobs, void *arg)
{
	struct held *h = arg;
	const cJSON *j;

	cJSON_ArrayForEach(j, jobs)
	{
		const char *st = web_str(j, "state");
		if (st == NULL ||
		    (strcmp(st, "admitted") != 0 && strcmp(st, "running") != 0))
			return 1; /* past the held ones */
		cJSON_AddItemToArray(h->into, web_public_job(j));
		h->got++;
	}
	return h->got >= h->want;
}

/* The jobs holding memory: status lists them first, so pages of as many
 * as info counts hold them all; a version 2 page may end early (its time
 * is up), and the next one goes on (a job admitted in between pushes the
 * last one further; the next scrape has it). */
static int
take_held(struct web_daemon *wd, const cJSON *info, cJSON *into)
{
	const cJSON *counts = cJSON_GetObjectItemCaseSensitive(info, "jobs");
	double held =
	    web_num(counts, "admitted", 0) + web_num(counts, "running", 0);
	struct held h = {into, 0, 0};
	char params[96];

	if (held > 1000)
		held = 1000;
	if (held < 1)
		return 0;
	h.want = (int)held;
	snprintf(params, sizeof params, "{\"all\":false,\"limit\":%d}", h.want);
	return web_daemon_pages(wd, "status", params, "jobs", held_page, &h);
}

static int
job_events_page(cJSON *items, void *arg)
{
	cJSON *into = arg, *e, *pe;

	cJSON_ArrayForEach(e, items)
	{
		if (cJSON_GetArraySize(into) >= WEB_JOB_EVENTS)
			return 1;
		if ((pe = web_public_event(e)) == NULL)
			return -ENOMEM;
		cJSON_AddItemToArray(into, pe);
	}
	return cJSON_GetArraySize(into) >= WEB_JOB_EVENTS;
}

int
web_daemon_job_events(struct web_daemon *wd, int64_t id, cJSON *into)
{
	char params[96];

	/* The daemon's default page: a job's 100 stages are 200 events. */
	snprintf(params, sizeof params,
	         "{\"job_id\":%" PRId64 ",\"limit\":100}", id);
	return web_daemon_pages(wd, "events", params, "events", job_events_page,
	                        into);
}

/* The latest WEB_EVENTS_KEPT events, oldest first, in wd->events: the
 * first answer reads all the daemon has, once; each later one only the
 * events after the newest it holds (reading the same 500 again for every
 * page was a fifth of the page's time with a long queue). */
static int
take_events(struct web_daemon *wd)
{
	char params[96];
	cJSON *r, *evs, *e;
	int rc, n, more, pages = 0;

	if (wd->events == NULL) {
		if ((wd->events = cJSON_CreateArray()) == NULL)
			return -ENOMEM;
		wd->events_last = 0;
	}
	for (;;) {
		snprintf(params, sizeof params,
		         "{\"after_id\":%" PRId64 ",\"limit\":%d}",
		         wd->events_last, WEB_STATUS_PAGE);
		if ((rc = web_daemon_call(wd, "events", params, &r)) < 0)
			return rc;
		evs = cJSON_GetObjectItemCaseSensitive(r, "events");
		n = cJSON_GetArraySize(evs);
		cJSON_ArrayForEach(e, evs)
		{
			cJSON *pe = web_public_event(e);
			if (pe == NULL) {
				cJSON_Delete(r);
				return -ENOMEM;
			}
			cJSON_AddItemToArray(wd->events, pe);
			wd->events_last =
			    (int64_t)web_num(e, "id", (double)wd->events_last);
		}
		while (cJSON_GetArraySize(wd->events) > WEB_EVENTS_KEPT)
			cJSON_DeleteItemFromArray(wd->events, 0);
		/* A version 2 page may end early (its time or size is up)
		 * with a next_cursor; a full one may be the last. */
		more = n == WEB_STATUS_PAGE ||
		       cJSON_IsString(
		           cJSON_GetObjectItemCaseSensitive(r, "next_cursor"));
		cJSON_Delete(r);
		pages++;
		if (!more || n == 0 || pages > 100000)
			break;
	}
	return 0;
}

static void
forget_events(struct web_daemon *wd)
{
	cJSON_Delete(wd->events);
	wd->events = NULL;
	wd->events_last = 0;
}

void
web_snap_take(struct web_daemon *wd, int what, int64_t since_ms,
              struct web_snap *s)
{
	int64_t started;

	memset(s, 0, sizeof *s);
	s->now_ms = clock_wall_ms();
	if (web_daemon_call(wd, "info", NULL, &s->info) < 0)
		return;
	started = (int64_t)web_num(s->info, "started_at_ms", 0);
	if (wd->started_at_ms != 0 && started != wd->started_at_ms) {
		wd->restarts++;
		wd->last_restart_ms = s->now_ms;
		forget_events(wd); /* perhaps a new database, ids anew */
	}
	wd->started_at_ms = started;
	if (what & WEB_SNAP_HELD) {
		s->jobs = cJSON_CreateArray();
		if (s->jobs == NULL || take_held(wd, s->info, s->jobs) < 0)
			return;
	} else if (what & WEB_SNAP_JOBS) {
		s->jobs = cJSON_CreateArray();
		if (s->jobs == NULL ||
		    take_jobs(wd, s->info, (what & WEB_SNAP_ENDED) != 0,
		              since_ms, s->jobs,
		              (what & WEB_SNAP_QUEUE_ALL) ? INT_MAX
		                                          : WEB_QUEUED_MAX,
		              &s->queued_left) < 0)
			return;
	}
	if (what & WEB_SNAP_EVENTS) {
		if (take_events(wd) < 0) {
			forget_events(wd); /* read whole the next time */
			return;
		}
		s->events = wd->events;
	}
	s->up = 1;
}

void
web_snap_free(struct web_snap *s)
{
	cJSON_Delete(s->info);
	cJSON_Delete(s->jobs);
	cJSON_Delete(s->history);
	memset(s, 0, sizeof *s);
}
