/*
 * /api/status, /api/history, /api/events: JSON of the protocol's objects
 * (public members only, web-json.c) for Grafana's JSON and Infinity data
 * sources and for scripts. docs/dashboards.md lists the parameters.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "web.h"

#define MAX_2_53 9007199254740992LL

int
web_arg_int(const struct web_request *rq, const char *name, int64_t min,
            int64_t max, int64_t *out)
{
	const char *v = rq->arg(rq->ctx, name);
	long long n = 0;
	const char *p;

	if (v == NULL)
		return 0;
	p = v;
	if (*p == '-')
		p++;
	if (*p == '\0' || strlen(p) > 16)
		return -1;
	for (; *p != '\0'; p++)
		if (*p < '0' || *p > '9')
			return -1;
	n = strtoll(v, NULL, 10);
	if (n < min || n > max)
		return -1;
	*out = n;
	return 1;
}

int
web_arg_duration_ms(const struct web_request *rq, const char *name,
                    int64_t *out)
{
	const char *v = rq->arg(rq->ctx, name);
	char *end;
	double d;
	int64_t unit = 1000;

	if (v == NULL)
		return 0;
	if (*v < '0' || *v > '9')
		return -1;
	d = strtod(v, &end);
	if (strcmp(end, "s") == 0 || *end == '\0')
		unit = 1000;
	else if (strcmp(end, "m") == 0)
		unit = 60000;
	else if (strcmp(end, "h") == 0)
		unit = 3600000;
	else if (strcmp(end, "d") == 0)
		unit = 86400000;
	else
		return -1;
	if (!(d > 0) || d * (double)unit > 400.0 * 86400000)
		return -1;
	*out = (int64_t)(d * (double)unit);
	return 1;
}

static int
api_error(struct svgp_buf *b, int status, int code, const char *msg)
{
	cJSON *o = cJSON_CreateObject(), *e;
	char *t;

	e = cJSON_AddObjectToObject(o, "error");
	if (code != 0)
		cJSON_AddNumberToObject(e, "code", code);
	cJSON_AddStringToObject(e, "message", msg);
	if ((t = web_json_print(o)) != NULL) {
		svgp_puts(b, t);
		svgp_puts(b, "\n");
	}
	free(t);
	cJSON_Delete(o);
	return status;
}

static int
api_out(struct svgp_buf *b, cJSON *o)
{
	char *t = o != NULL ? web_json_print(o) : NULL;

	cJSON_Delete(o);
	if (t == NULL)
		return api_error(b, 500, 0, "out of memory");
	svgp_puts(b, t);
	svgp_puts(b, "\n");
	free(t);
	return b->oom ? 500 : 200;
}

/* A parameter this path does not take is an error, not ignored: a
 * misspelt step_ms would otherwise give another step silently. */
static int
unknown_arg(const struct web_request *rq, const char *const *known,
            struct svgp_buf *b, int *status)
{
	char name[64], msg[320];
	const char *const *k;
	size_t n;

	if (rq->unknown == NULL ||
	    !rq->unknown(rq->ctx, known, name, sizeof name))
		return 0;
	/* The name is the client's text, perhaps not UTF-8, perhaps cut
	 * inside a character: only ASCII of it is shown. */
	for (n = 0; name[n] != '\0'; n++)
		if ((unsigned char)name[n] < 0x20 ||
		    (unsigned char)name[n] >= 0x7f)
			name[n] = '?';
	n = (size_t)snprintf(msg, sizeof msg,
	                     "unknown parameter '%s'; %s takes:", name,
	                     rq->path);
	for (k = known; *k != NULL && n < sizeof msg; k++)
		n += (size_t)snprintf(msg + n, sizeof msg - n, "%s %s",
		                      k == known ? "" : ",", *k);
	*status = api_error(b, 400, 0, msg);
	return 1;
}

static int
daemon_down(struct web_daemon *wd, struct svgp_buf *b)
{
	char msg[320];

	snprintf(msg, sizeof msg, "daemon not reachable: %s", wd->error);
	return api_error(b, 503, 0, msg);
}

/*
 * The daemon's job filter from user, state (comma-separated) and name,
 * added to params: these alone, as the daemon takes them (PROTOCOL.md,
 * "Job filters"); mine would be this program's own jobs, and is not
 * passed. 1 when any is given, 0 when none, -1 when out of memory.
 */
static int
api_filter(const struct web_request *rq, cJSON *params)
{
	const char *user = rq->arg(rq->ctx, "user");
	const char *state = rq->arg(rq->ctx, "state");
	const char *name = rq->arg(rq->ctx, "name");
	const char *p, *end;
	cJSON *a, *s;
	char *w;

	if ((user != NULL &&
	     cJSON_AddStringToObject(params, "user", user) == NULL) ||
	    (name != NULL &&
	     cJSON_AddStringToObject(params, "name", name) == NULL))
		return -1;
	if (state != NULL) {
		if ((a = cJSON_AddArrayToObject(params, "state")) == NULL)
			return -1;
		for (p = state; p != NULL; p = end != NULL ? end + 1 : NULL) {
			end = strchr(p, ',');
			w = strndup(p, end != NULL ? (size_t)(end - p)
			                           : strlen(p));
			s = w != NULL ? cJSON_CreateString(w) : NULL;
			free(w);
			if (s == NULL)
				return -1;
			cJSON_AddItemToArray(a, s);
		}
	}
	return user != NULL || state != NULL || name != NULL;
}

/* status with a filter: the daemon's pages, the newest WEB_ENDED_MAX
 * ended jobs at most, into jobs. The daemon's error code, or 0. */
static int
api_status_filtered(struct web_daemon *wd, cJSON *params, cJSON *jobs)
{
	const cJSON *next, *j;
	int nended = 0, rc;
	cJSON *r;
	char *text;

	cJSON_AddNumberToObject(params, "limit", 1000);
	for (;;) {
		if ((text = cJSON_PrintUnformatted(params)) == NULL)
			return -ENOMEM;
		rc = web_daemon_call(wd, "status", text, &r);
		free(text);
		if (rc < 0)
			return rc;
		cJSON_ArrayForEach(j,
		                   cJSON_GetObjectItemCaseSensitive(r, "jobs"))
		{
			if (web_num(j, "ended_at_ms", 0) > 0 &&
			    ++nended > WEB_ENDED_MAX)
				break;
			cJSON_AddItemToArray(jobs, web_public_job(j));
		}
		next = cJSON_GetObjectItemCaseSensitive(r, "next_cursor");
		if (nended > WEB_ENDED_MAX || !cJSON_IsString(next)) {
			cJSON_Delete(r);
			return 0;
		}
		cJSON_DeleteItemFromObjectCaseSensitive(params, "cursor");
		cJSON_AddStringToObject(params, "cursor", next->valuestring);
		cJSON_Delete(r);
	}
}

static int
api_status(struct web_daemon *wd, const struct web_request *rq,
           struct svgp_buf *b)
{
	struct web_snap s;
	int64_t all = 0;
	cJSON *o, *params, *jobs;
	int rc;

	static const char *const known[] = {"all", "user", "state", "name",
	                                    NULL};
	int st;

	if (unknown_arg(rq, known, b, &st))
		return st;
	if (web_arg_int(rq, "all", 0, 1, &all) < 0)
		return api_error(b, 400, 0, "all: 0 or 1");
	if ((params = cJSON_CreateObject()) == NULL ||
	    (rc = api_filter(rq, params)) < 0) {
		cJSON_Delete(params);
		return api_error(b, 500, 0, "out of memory");
	}
	if (rc > 0) {
		cJSON_AddBoolToObject(params, "all", all != 0);
		jobs = cJSON_CreateArray();
		rc = jobs != NULL ? api_status_filtered(wd, params, jobs)
		                  : -ENOMEM;
		cJSON_Delete(params);
		web_snap_take(wd, 0, 0, &s);
		if (rc < 0 && sl_error_is_connection(rc)) {
			cJSON_Delete(jobs);
			web_snap_free(&s);
			return daemon_down(wd, b);
		}
		if (rc < 0 || !s.up) {
			cJSON_Delete(jobs);
			web_snap_free(&s);
			return rc < 0 ? api_error(b, 400, rc, wd->error)
			              : daemon_down(wd, b);
		}
		o = cJSON_CreateObject();
		cJSON_AddItemToObject(o, "info", web_public_info(s.info));
		cJSON_AddItemToObject(o, "jobs", jobs);
		web_snap_free(&s);
		return api_out(b, o);
	}
	cJSON_Delete(params);
	web_snap_take(
	    wd, WEB_SNAP_JOBS | WEB_SNAP_QUEUE_ALL | (all ? WEB_SNAP_ENDED : 0),
	    0, &s);
	if (!s.up) {
		web_snap_free(&s);
		return daemon_down(wd, b);
	}
	o = cJSON_CreateObject();
	cJSON_AddItemToObject(o, "info", web_public_info(s.info));
	cJSON_AddItemToObject(o, "jobs", s.jobs);
	s.jobs = NULL;
	web_snap_free(&s);
	return api_out(b, o);
}

static int
api_history(struct web_daemon *wd, const struct web_request *rq,
            struct svgp_buf *b)
{
	int64_t since = 0, until = 0, step = 0, job = 0, ago = 0;
	int has_since, has_until, has_step, has_job, has_ago;
	char params[256];
	size_t n = 0;
	cJSON *r = NULL;
	int rc;

	static const char *const known[] = {"since",   "since_ms", "until_ms",
	                                    "step_ms", "job_id",   NULL};

	if (unknown_arg(rq, known, b, &rc))
		return rc;
	has_since = web_arg_int(rq, "since_ms", 0, MAX_2_53, &since);
	has_until = web_arg_int(rq, "until_ms", 0, MAX_2_53, &until);
	has_step = web_arg_int(rq, "step_ms", 0, MAX_2_53, &step);
	has_job = web_arg_int(rq, "job_id", 1, MAX_2_53, &job);
	has_ago = web_arg_duration_ms(rq, "since", &ago);
	if (has_since < 0 || has_until < 0 || has_step < 0 || has_job < 0 ||
	    has_ago < 0)
		return api_error(b, 400, 0,
		                 "since_ms, until_ms, step_ms, job_id: "
		                 "integers; since: a duration (15m, 1h, 7d)");
	if (has_ago > 0 && has_since > 0)
		return api_error(b, 400, 0, "since and since_ms: one of them");
	if (has_ago > 0)
		since = clock_wall_ms() - ago, has_since = 1;
	if (!has_since && !has_job)
		since = clock_wall_ms() - 3600000, has_since = 1;
	n += (size_t)snprintf(params + n, sizeof params - n, "{");
#define ADD(flag, name, v)                                                     \
	if (flag)                                                              \
	n += (size_t)snprintf(params + n, sizeof params - n,                   \
	                      "%s\"" name "\":%" PRId64, n > 1 ? "," : "", v)
	ADD(has_since, "since_ms", since);
	ADD(has_until, "until_ms", until);
	ADD(has_step, "step_ms", step);
	ADD(has_job, "job_id", job);
#undef ADD
	snprintf(params + n, sizeof params - n, "}");
	rc = web_daemon_call(wd, "history", params, &r);
	if (rc < 0 && sl_error_is_connection(rc))
		return daemon_down(wd, b);
	if (rc < 0)
		return api_error(b, rc == SL_E_NOJOB ? 404 : 400, rc,
		                 wd->error);
	/* A history answer is numbers only (and a tier name): public. */
	return api_out(b, r);
}

/* The events after after_id, up to limit, into a: the daemon's pages
 * until limit or the end (a page may end early, its slice of the daemon's
 * loop over, with more to come), API_EVENTS_PAGES of them at most, so a
 * filter that passes few events over a long log does not hold this
 * program's one thread. *last: the last event read, shown or not. The
 * daemon's error code, or 0. */
#define API_EVENTS_PAGES 100
static int
api_events_read(struct web_daemon *wd, cJSON *p, int64_t limit, cJSON *a,
                int64_t *last)
{
	const cJSON *e, *next;
	char *params;
	cJSON *r;
	int64_t n = 0, cur;
	int rc, pages;

	for (pages = 1;; pages++) {
		cJSON_DeleteItemFromObjectCaseSensitive(p, "limit");
		cJSON_AddNumberToObject(p, "limit", (double)(limit - n));
		if ((params = cJSON_PrintUnformatted(p)) == NULL)
			return -ENOMEM;
		rc = web_daemon_call(wd, "events", params, &r);
		free(params);
		if (rc < 0)
			return rc;
		cJSON_ArrayForEach(
		    e, cJSON_GetObjectItemCaseSensitive(r, "events"))
		{
			cJSON_AddItemToArray(a, web_public_event(e));
			*last = (int64_t)web_num(e, "id", (double)*last);
			n++;
		}
		next = cJSON_GetObjectItemCaseSensitive(r, "next_cursor");
		if (!cJSON_IsString(next)) {
			cJSON_Delete(r);
			return 0;
		}
		if ((cur = strtoll(next->valuestring, NULL, 10)) > *last)
			*last = cur;
		cJSON_DeleteItemFromObjectCaseSensitive(p, "after_id");
		cJSON_DeleteItemFromObjectCaseSensitive(p, "cursor");
		cJSON_AddStringToObject(p, "cursor", next->valuestring);
		cJSON_Delete(r);
		if (n >= limit || pages == API_EVENTS_PAGES)
			return 0;
	}
}

static int
api_events(struct web_daemon *wd, const struct web_request *rq,
           struct svgp_buf *b)
{
	int64_t after = 0, limit = 100;
	cJSON *o, *a, *p;
	int rc;

	static const char *const known[] = {"after_id", "limit", "user",
	                                    "state",    "name",  NULL};

	if (unknown_arg(rq, known, b, &rc))
		return rc;
	if (web_arg_int(rq, "after_id", 0, MAX_2_53, &after) < 0 ||
	    web_arg_int(rq, "limit", 1, 10000, &limit) < 0)
		return api_error(b, 400, 0,
		                 "after_id: an integer; limit: 1-10000");
	o = cJSON_CreateObject();
	a = cJSON_AddArrayToObject(o, "events");
	p = cJSON_CreateObject();
	if (o == NULL || a == NULL || p == NULL ||
	    cJSON_AddNumberToObject(p, "after_id", (double)after) == NULL ||
	    api_filter(rq, p) < 0) {
		cJSON_Delete(o);
		cJSON_Delete(p);
		return api_error(b, 500, 0, "out of memory");
	}
	rc = api_events_read(wd, p, limit, a, &after);
	cJSON_Delete(p);
	if (rc < 0) {
		cJSON_Delete(o);
		if (sl_error_is_connection(rc))
			return daemon_down(wd, b);
		return api_error(b, 400, rc, wd->error);
	}
	cJSON_AddNumberToObject(o, "last_id", (double)after);
	return api_out(b, o);
}

int
web_api(struct web_daemon *wd, const struct web_request *rq, struct svgp_buf *b,
        const char **type)
{
	*type = "application/json; charset=utf-8";
	if (strcmp(rq->path, "/api/status") == 0)
		return api_status(wd, rq, b);
	if (strcmp(rq->path, "/api/history") == 0)
		return api_history(wd, rq, b);
	if (strcmp(rq->path, "/api/events") == 0)
		return api_events(wd, rq, b);
	return api_error(b, 404, 0, "no such path");
}
