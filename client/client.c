/*
 * libstageload, the API: each sl_* call of stageload.h builds its
 * request, sends it through the transport (client-transport.c) and
 * decodes the answer (client-decode.c). proto/PROTOCOL.md is the wire.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "clock.h"
#include "client-internal.h"
#include "array-spec.h"
#include "names.h"
#include "proto.h"
#include "stageload.h"

int
sl_next_sample(sl_client *c, int timeout_ms, struct sl_sample *s)
{
	struct sl_notification n;
	int64_t deadline = timeout_ms < 0 ? -1 : clock_mono_ms() + timeout_ms;
	int rc, left;

	for (;;) {
		left = -1;
		if (deadline >= 0) {
			int64_t l = deadline - clock_mono_ms();
			left = l < 0 ? 0 : (int)l;
		}
		rc = sl_next_notification(c, left, &n);
		if (rc <= 0)
			return rc;
		if (n.kind == SL_N_SAMPLE) {
			*s = n.sample;
			sl_notification_clear(&n);
			return 1;
		}
		if (n.kind == SL_N_PROCESS_GONE) {
			memset(s, 0, sizeof *s);
			s->pid = n.pid;
			sl_notification_clear(&n);
			return SL_GONE;
		}
		sl_notification_clear(&n);
	}
}

/* params for methods whose only member is the job id */
static cJSON *
id_params(int64_t id)
{
	cJSON *p = cJSON_CreateObject();

	if (p != NULL)
		proto_add_int(p, "id", id);
	return p;
}

static int
need(sl_client *c, const void *p)
{
	return p == NULL ? client_error(c, -ENOMEM, "out of memory") : 0;
}

int
sl_info(sl_client *c, struct sl_info *info)
{
	const cJSON *r;
	cJSON *root;
	int rc;

	rc = client_call(c, "info", NULL, c->timeout_ms, &root, &r);
	if (rc < 0)
		return rc;
	client_decode_info(r, info);
	cJSON_Delete(root);
	return 0;
}

int
sl_history(sl_client *c, int64_t since_ms, int64_t until_ms, int64_t step_ms,
           int64_t job_id, struct sl_history **out)
{
	const cJSON *r;
	cJSON *params, *root;
	int rc;

	*out = NULL;
	params = cJSON_CreateObject();
	if ((rc = need(c, params)) < 0)
		return rc;
	proto_add_int(params, "since_ms", since_ms);
	if (until_ms > 0)
		proto_add_int(params, "until_ms", until_ms);
	if (step_ms > 0)
		proto_add_int(params, "step_ms", step_ms);
	if (job_id > 0)
		proto_add_int(params, "job_id", job_id);
	rc = client_call(c, "history", params, c->timeout_ms, &root, &r);
	if (rc < 0)
		return rc;
	rc = client_decode_history(r, since_ms, until_ms, out);
	cJSON_Delete(root);
	return rc < 0 ? client_error(c, rc, "out of memory") : 0;
}

static cJSON *filter_into(cJSON *params, const sl_filter *f);

int
sl_report(sl_client *c, const struct sl_report_query *q, struct sl_report **out)
{
	const cJSON *r;
	cJSON *params, *root;
	int rc;

	*out = NULL;
	params = cJSON_CreateObject();
	if ((rc = need(c, params)) < 0)
		return rc;
	if (q->since_ms > 0)
		proto_add_int(params, "since_ms", q->since_ms);
	if (q->until_ms > 0)
		proto_add_int(params, "until_ms", q->until_ms);
	if (q->by != NULL)
		cJSON_AddStringToObject(params, "by", q->by);
	params = filter_into(params, q->filter);
	if ((rc = need(c, params)) < 0)
		return rc;
	rc = client_call(c, "report", params, c->timeout_ms, &root, &r);
	if (rc < 0)
		return rc;
	rc = client_decode_report(r, out);
	cJSON_Delete(root);
	return rc < 0 ? client_error(c, rc, "out of memory") : 0;
}

int
sl_subscribe(sl_client *c, int samples, int events, int64_t pid,
             int64_t *interval_ms)
{
	const cJSON *r;
	cJSON *params, *root;
	int rc;

	params = cJSON_CreateObject();
	if ((rc = need(c, params)) < 0)
		return rc;
	cJSON_AddBoolToObject(params, "samples", samples != 0);
	cJSON_AddBoolToObject(params, "events", events != 0);
	if (pid > 0)
		proto_add_int(params, "pid", pid);
	rc = client_call(c, "subscribe", params, c->timeout_ms, &root, &r);
	if (rc < 0)
		return rc;
	if (interval_ms != NULL)
		*interval_ms =
		    client_i64(r, "interval_ms", c->hello.interval_ms);
	cJSON_Delete(root);
	return 0;
}

int
sl_unsubscribe(sl_client *c)
{
	return sl_call(c, "unsubscribe", NULL, NULL);
}

/* Call a method whose result is a Job. */
static int
job_call(sl_client *c, const char *method, cJSON *params, int timeout_ms,
         struct sl_job *out)
{
	const cJSON *r;
	cJSON *root;
	int rc;

	if (params == NULL)
		return client_error(c, -ENOMEM, "out of memory");
	rc = client_call(c, method, params, timeout_ms, &root, &r);
	if (rc < 0)
		return rc;
	if (out != NULL)
		client_decode_job(r, out);
	cJSON_Delete(root);
	return 0;
}

/*
 * One list call: its items appended to *items (stop as in
 * client_decode_list). Returns 1 when stop stopped it, 0, or a negative
 * code with the error set and the whole vector freed (*items NULL, *n 0).
 */
static int
list_call(sl_client *c, const char *method, cJSON *params, enum client_list k,
          int (*stop)(const void *, void *), void *arg, void **items, size_t *n)
{
	const cJSON *r;
	cJSON *root;
	int rc;

	if ((rc = need(c, params)) < 0)
		goto fail;
	rc = client_call(c, method, params, c->timeout_ms, &root, &r);
	if (rc < 0)
		goto fail;
	rc = client_decode_list(r, k, stop, arg, items, n);
	cJSON_Delete(root);
	if (rc >= 0)
		return rc;
	rc = client_error(c, rc, "out of memory");
fail:
	client_list_free(k, *items, *n);
	*items = NULL;
	*n = 0;
	return rc;
}

/* The longest next_cursor followed: a daemon's are a few dozen bytes. */
#define CURSOR_MAX 256

int
client_pages(sl_client *c, const char *method, cJSON *params,
             int (*each)(const cJSON *result, void *arg), void *arg)
{
	const cJSON *r, *next;
	cJSON *root, *p, *cursor;
	int rc;

	if ((rc = need(c, params)) < 0)
		return rc;
	for (;;) {
		if ((rc = need(c, p = cJSON_Duplicate(params, 1))) < 0)
			break;
		if ((rc = client_call(c, method, p, c->timeout_ms, &root, &r)) <
		    0)
			break;
		if ((rc = each(r, arg)) < 0) {
			cJSON_Delete(root);
			rc = client_error(c, rc,
			                  rc == -ENOMEM ? "out of memory"
			                                : "the caller stopped "
			                                  "reading '%s' pages",
			                  method);
			break;
		}
		next = client_member(r, "next_cursor");
		if (rc > 0 || !cJSON_IsString(next)) {
			cJSON_Delete(root);
			rc = 0;
			break;
		}
		cursor = strlen(next->valuestring) < CURSOR_MAX
		             ? cJSON_CreateString(next->valuestring)
		             : NULL;
		cJSON_Delete(root);
		if (cursor == NULL) {
			rc =
			    client_error(c, -EPROTO,
			                 "the daemon's next_cursor for '%s' is "
			                 "too long, or out of memory",
			                 method);
			break;
		}
		/* The cursor is the place to go on from, instead of the
		 * first page's (events: after_id or before_id). */
		cJSON_DeleteItemFromObjectCaseSensitive(params, "cursor");
		cJSON_DeleteItemFromObjectCaseSensitive(params, "after_id");
		cJSON_DeleteItemFromObjectCaseSensitive(params, "before_id");
		cJSON_AddItemToObject(params, "cursor", cursor);
	}
	cJSON_Delete(params);
	return rc;
}

/* A page of the public sl_call_pages: its items as JSON text. */
struct text_pages {
	const char *items;
	int (*each)(const char *items_json, void *arg);
	void *arg;
};

static int
text_page(const cJSON *result, void *arg)
{
	struct text_pages *t = arg;
	const cJSON *items = client_array(result, t->items);
	char *text = items != NULL ? proto_print(items, 0) : strdup("[]");
	int rc;

	if (text == NULL)
		return -ENOMEM;
	rc = t->each(text, t->arg);
	free(text);
	return rc < 0 ? rc : rc > 0;
}

int
sl_call_pages(sl_client *c, const char *method, const char *params_json,
              const char *items, int (*each)(const char *items_json, void *arg),
              void *arg)
{
	struct text_pages t = {items, each, arg};
	cJSON *params;
	int rc;

	if (method == NULL || method[0] == '\0' || items == NULL ||
	    each == NULL)
		return client_error(c, -EINVAL, "no method, items or callback");
	if ((rc = client_params(c, method, params_json, &params)) < 0)
		return rc;
	if (params == NULL)
		params = cJSON_CreateObject();
	return client_pages(c, method, params, text_page, &t);
}

/* The pages of status up to `want` ended jobs (--all), into a vector. */
struct status_page {
	int all;
	size_t want, ended;
	void **jobs;
	size_t *njobs;
};

static int
status_page_full(const void *job, void *arg)
{
	struct status_page *p = arg;

	if (sl_job_ended(job))
		p->ended++;
	return p->all && p->ended >= p->want;
}

/* A filter is the params it adds: user, mine, state, name. */
struct sl_filter {
	cJSON *params;
};

sl_filter *
sl_filter_new(void)
{
	sl_filter *f = calloc(1, sizeof *f);

	if (f != NULL && (f->params = cJSON_CreateObject()) == NULL) {
		free(f);
		return NULL;
	}
	return f;
}

void
sl_filter_free(sl_filter *f)
{
	if (f == NULL)
		return;
	cJSON_Delete(f->params);
	free(f);
}

/* Sets (or, with NULL, removes) a member. */
static int
filter_set(sl_filter *f, const char *name, cJSON *v)
{
	cJSON_DeleteItemFromObjectCaseSensitive(f->params, name);
	if (v == NULL)
		return 0;
	if (!cJSON_AddItemToObject(f->params, name, v)) {
		cJSON_Delete(v);
		return -ENOMEM;
	}
	return 0;
}

int
sl_filter_set_user(sl_filter *f, const char *user)
{
	cJSON *v = NULL;

	if (user != NULL && (v = cJSON_CreateString(user)) == NULL)
		return -ENOMEM;
	return filter_set(f, "user", v);
}

int
sl_filter_set_mine(sl_filter *f, int mine)
{
	cJSON *v = NULL;

	if (mine && (v = cJSON_CreateTrue()) == NULL)
		return -ENOMEM;
	return filter_set(f, "mine", v);
}

int
sl_filter_add_state(sl_filter *f, const char *state)
{
	cJSON *a = cJSON_GetObjectItemCaseSensitive(f->params, "state"), *s;

	if (state == NULL || names_state_parse(state) < 0)
		return -EINVAL;
	if (a == NULL &&
	    (a = cJSON_AddArrayToObject(f->params, "state")) == NULL)
		return -ENOMEM;
	if ((s = cJSON_CreateString(state)) == NULL)
		return -ENOMEM;
	cJSON_AddItemToArray(a, s);
	return 0;
}

int
sl_filter_set_name(sl_filter *f, const char *glob)
{
	cJSON *v = NULL;

	if (glob != NULL && (v = cJSON_CreateString(glob)) == NULL)
		return -ENOMEM;
	return filter_set(f, "name", v);
}

/* The filter's members, copied into params (NULL stays NULL). */
static cJSON *
filter_into(cJSON *params, const sl_filter *f)
{
	const cJSON *m;
	cJSON *v;

	if (params == NULL || f == NULL)
		return params;
	cJSON_ArrayForEach(m, f->params)
	{
		if ((v = cJSON_Duplicate(m, 1)) == NULL) {
			cJSON_Delete(params);
			return NULL;
		}
		cJSON_AddItemToObject(params, m->string, v);
	}
	return params;
}

static int
status_page(const cJSON *result, void *arg)
{
	struct status_page *p = arg;

	return client_decode_list(result, CLIENT_JOBS, status_page_full, p,
	                          p->jobs, p->njobs);
}

/* Protocol version 2: every page of the list, up to `want` ended jobs. */
static int
status_pages(sl_client *c, int all, int want, const sl_filter *f, void **jobs,
             size_t *njobs)
{
	struct status_page page = {all, (size_t)want, 0, jobs, njobs};
	cJSON *params = cJSON_CreateObject();
	int rc;

	if (params != NULL) {
		if (all)
			cJSON_AddBoolToObject(params, "all", 1);
		proto_add_int(params, "limit", 1000);
	}
	params = filter_into(params, f);
	if ((rc = client_pages(c, "status", params, status_page, &page)) < 0) {
		client_list_free(CLIENT_JOBS, *jobs, *njobs);
		*jobs = NULL;
		*njobs = 0;
	}
	return rc;
}

int
sl_status(sl_client *c, int all, int limit, struct sl_job **jobs, size_t *njobs)
{
	return sl_status_filtered(c, all, limit, NULL, jobs, njobs);
}

int
sl_status_filtered(sl_client *c, int all, int limit, const sl_filter *f,
                   struct sl_job **jobs, size_t *njobs)
{
	cJSON *params;
	void *v = NULL;
	int rc;

	*njobs = 0;
	if (c->hello.version >= 2) {
		rc = status_pages(c, all, limit > 0 ? limit : 50, f, &v, njobs);
	} else {
		params = cJSON_CreateObject();
		if (params != NULL && all)
			cJSON_AddBoolToObject(params, "all", 1);
		if (params != NULL && limit > 0)
			proto_add_int(params, "limit", limit);
		params = filter_into(params, f);
		rc = list_call(c, "status", params, CLIENT_JOBS, NULL, NULL, &v,
		               njobs);
	}
	*jobs = v;
	return rc < 0 ? rc : 0;
}

int
sl_show(sl_client *c, int64_t id, int env, struct sl_job *out)
{
	cJSON *params = id_params(id);

	if (params != NULL && env)
		cJSON_AddBoolToObject(params, "env", 1);
	return job_call(c, "show", params, c->timeout_ms, out);
}

int
sl_resolve(sl_client *c, const char *ref, int64_t **ids, size_t *n,
           int64_t *array_id)
{
	const cJSON *r, *jobs, *it;
	cJSON *params, *root;
	int64_t id, index, *v;
	int is_array, rc;
	size_t k = 0;

	*ids = NULL;
	*n = 0;
	*array_id = 0;
	if (ref == NULL || array_id_parse(ref, &id, &is_array, &index) != 0)
		return client_error(c, -EINVAL,
		                    "bad job id: give 42, A42 or A42_3");
	if ((params = cJSON_CreateObject()) == NULL ||
	    cJSON_AddStringToObject(params, "id", ref) == NULL) {
		cJSON_Delete(params);
		return client_error(c, -ENOMEM, "out of memory");
	}
	rc = client_call(c, "show", params, c->timeout_ms, &root, &r);
	if (rc < 0)
		return rc;
	jobs = cJSON_GetObjectItemCaseSensitive(r, "jobs");
	if (!cJSON_IsArray(jobs)) {
		/* one job */
		if ((v = malloc(sizeof *v)) == NULL) {
			cJSON_Delete(root);
			return client_error(c, -ENOMEM, "out of memory");
		}
		v[0] = client_i64(r, "id", 0);
		*ids = v;
		*n = 1;
		cJSON_Delete(root);
		return 0;
	}
	v = malloc(sizeof *v * ((size_t)cJSON_GetArraySize(jobs) + 1));
	if (v == NULL) {
		cJSON_Delete(root);
		return client_error(c, -ENOMEM, "out of memory");
	}
	cJSON_ArrayForEach(it, jobs) v[k++] = client_i64(it, "id", 0);
	*ids = v;
	*n = k;
	*array_id = client_i64(r, "array_id", 0);
	cJSON_Delete(root);
	return 0;
}

int
sl_cancel(sl_client *c, int64_t id, struct sl_job *out)
{
	return job_call(c, "cancel", id_params(id), c->timeout_ms, out);
}

int
sl_cancel_matching(sl_client *c, const sl_filter *f, int all_users,
                   int64_t *cancelled)
{
	const cJSON *r, *n;
	cJSON *params = filter_into(cJSON_CreateObject(), f), *root;
	int rc;

	if (params != NULL && all_users)
		cJSON_AddBoolToObject(params, "all_users", 1);
	if ((rc = need(c, params)) < 0)
		return rc;
	/* Each job is a commit: as long as a wait, not the timeout. */
	rc = client_call(c, "cancel_matching", params, -1, &root, &r);
	if (rc < 0)
		return rc;
	n = client_member(r, "cancelled");
	if (cancelled != NULL)
		*cancelled = cJSON_IsNumber(n) ? (int64_t)n->valuedouble : 0;
	cJSON_Delete(root);
	return 0;
}

int
sl_hold(sl_client *c, int64_t id, struct sl_job *out)
{
	return job_call(c, "hold", id_params(id), c->timeout_ms, out);
}

int
sl_release(sl_client *c, int64_t id, struct sl_job *out)
{
	return job_call(c, "release", id_params(id), c->timeout_ms, out);
}

int
sl_resubmit(sl_client *c, int64_t id, struct sl_submitted *out)
{
	const cJSON *r;
	cJSON *root, *params = id_params(id);
	int rc;

	if (params == NULL)
		return client_error(c, -ENOMEM, "out of memory");
	if ((rc = client_call(c, "resubmit", params, c->timeout_ms, &root,
	                      &r)) < 0)
		return rc;
	if (out != NULL) {
		out->id = client_i64(r, "id", 0);
		out->position = (int)client_i64(r, "position", 0);
		out->queued = (int)client_i64(r, "queued", 0);
		/* A resubmit keeps the groups of the first submit. */
		out->groups_capped = 0;
	}
	cJSON_Delete(root);
	return 0;
}

int
sl_update(sl_client *c, int64_t id, const sl_job_spec *changes,
          struct sl_job *out)
{
	const char *bad;
	cJSON *params, *set, *it;

	if (changes == NULL)
		return client_error(c, -EINVAL, "nothing to update");
	if ((bad = client_spec_not_update(changes)) != NULL)
		return client_error(c, -EINVAL, "update does not change %s",
		                    bad);
	if ((params = id_params(id)) == NULL ||
	    (set = client_spec_params(changes)) == NULL) {
		cJSON_Delete(params);
		return client_error(c, -ENOMEM, "out of memory");
	}
	while ((it = set->child) != NULL) {
		cJSON_DetachItemViaPointer(set, it);
		cJSON_AddItemToObject(params, it->string, it);
	}
	cJSON_Delete(set);
	return job_call(c, "update", params, c->timeout_ms, out);
}

int
sl_wait(sl_client *c, int64_t id, struct sl_job *out)
{
	return job_call(c, "wait", id_params(id), -1, out);
}

int
sl_resume(sl_client *c, int64_t id, struct sl_job *out)
{
	return job_call(c, "resume", id_params(id), c->timeout_ms, out);
}

int
sl_job_pid(sl_client *c, int64_t id, int64_t pid)
{
	cJSON *params = id_params(id);

	if (params != NULL)
		proto_add_int(params, "pid", pid);
	return job_call(c, "job_pid", params, c->timeout_ms, NULL);
}

const char *
sl_job_token(const sl_client *c, int64_t id)
{
	return c->token_id == id && id > 0 && c->token[0] != '\0' ? c->token
	                                                          : NULL;
}

int
sl_stage(sl_client *c, int64_t id, const char *name)
{
	cJSON *params = id_params(id);
	const char *envid = getenv("STAGELOAD_JOB_ID");
	const char *token = getenv("STAGELOAD_JOB_TOKEN");
	char idtext[32];

	if (name == NULL) {
		cJSON_Delete(params);
		return -EINVAL;
	}
	if (params != NULL)
		cJSON_AddStringToObject(params, "name", name);
	/* From inside the job: its token, so that another daemon's job of
	 * the same id refuses the report. */
	snprintf(idtext, sizeof idtext, "%" PRId64, id);
	if (params != NULL && envid != NULL && strcmp(envid, idtext) == 0 &&
	    token != NULL && token[0] != '\0')
		cJSON_AddStringToObject(params, "token", token);
	return job_call(c, "stage", params, c->timeout_ms, NULL);
}

int
sl_job_exit(sl_client *c, int64_t id, int exit_code, int signal,
            struct sl_job *out)
{
	cJSON *params = id_params(id);

	if (params != NULL) {
		if (signal > 0)
			proto_add_int(params, "signal", signal);
		else
			proto_add_int(params, "exit_code", exit_code);
	}
	return job_call(c, "job_exit", params, c->timeout_ms, out);
}

int
sl_logs(sl_client *c, int64_t id, int64_t offset, int follow, sl_log_cb cb,
        void *arg, int64_t *end_offset)
{
	const cJSON *r;
	cJSON *params, *root;
	int rc;

	params = id_params(id);
	if ((rc = need(c, params)) < 0)
		return rc;
	if (offset > 0)
		proto_add_int(params, "offset", offset);
	if (follow)
		cJSON_AddBoolToObject(params, "follow", 1);
	c->log_cb = cb;
	c->log_arg = arg;
	c->log_id = id;
	c->log_offset = offset;
	c->log_stop = 0;
	rc = client_call(c, "logs", params, follow ? -1 : c->timeout_ms, &root,
	                 &r);
	c->log_cb = NULL;
	if (rc == 0 && c->log_stop != 0) {
		/* The callback refused a chunk that came in one read with
		 * the answer: its value all the same, as documented. */
		rc = c->log_stop;
		cJSON_Delete(root);
		client_drop(c);
	}
	c->log_stop = 0;
	if (rc != 0)
		return rc;
	if (end_offset != NULL)
		*end_offset = client_i64(r, "offset", c->log_offset);
	cJSON_Delete(root);
	return 0;
}

int
sl_events_query(sl_client *c, const struct sl_events_query *q,
                struct sl_event **events, size_t *nevents)
{
	return sl_events_filtered(c, q, NULL, events, nevents);
}

/* A filtered page may end early (its slice passed over events that did
 * not match) and is not the end: the pages after it are read, to limit
 * events or the end of the log, so the answer is short only at the end.
 * Following, one page: the daemon's follow sends the rest. */
/* The pages of a filtered events list, up to limit events. */
struct event_pages {
	int64_t limit;
	void **events;
	size_t *n;
};

static int
event_pages_full(const void *event, void *arg)
{
	struct event_pages *p = arg;

	(void)event;
	return (int64_t)*p->n >= p->limit;
}

static int
event_page(const cJSON *result, void *arg)
{
	struct event_pages *p = arg;

	return client_decode_list(result, CLIENT_EVENTS, event_pages_full, p,
	                          p->events, p->n);
}

int
sl_events_filtered(sl_client *c, const struct sl_events_query *q,
                   const sl_filter *f, struct sl_event **events,
                   size_t *nevents)
{
	int64_t limit = q->limit > 0 ? q->limit : 100;
	int pages = f != NULL && f->params->child != NULL && !q->follow &&
	            c->hello.version >= 2;
	struct event_pages ep = {limit, NULL, nevents};
	cJSON *params;
	void *v = NULL;
	int rc;

	*nevents = 0;
	ep.events = &v;
	if ((params = cJSON_CreateObject()) != NULL) {
		if (q->after_id > 0)
			proto_add_int(params, "after_id", q->after_id);
		/* 2^53, the largest a JSON integer may be, is above every id:
		 * the newest first. */
		if (q->before_id != 0)
			proto_add_int(params, "before_id",
			              q->before_id > 0 ? q->before_id
			                               : (int64_t)1 << 53);
		if (q->job_id > 0)
			proto_add_int(params, "job_id", q->job_id);
		if (q->limit > 0 || pages)
			proto_add_int(params, "limit", limit);
		if (q->follow)
			cJSON_AddBoolToObject(params, "follow", 1);
	}
	params = filter_into(params, f);
	if (!pages) {
		rc = list_call(c, "events", params, CLIENT_EVENTS, NULL, NULL,
		               &v, nevents);
	} else if ((rc = client_pages(c, "events", params, event_page, &ep)) <
	           0) {
		client_list_free(CLIENT_EVENTS, v, *nevents);
		v = NULL;
		*nevents = 0;
	}
	*events = v;
	return rc < 0 ? rc : 0;
}

int
sl_events(sl_client *c, int64_t after_id, int limit, int follow,
          struct sl_event **events, size_t *nevents)
{
	struct sl_events_query q = {after_id, 0, 0, limit, follow};

	return sl_events_query(c, &q, events, nevents);
}

int
sl_events_before(sl_client *c, int64_t before_id, int limit,
                 struct sl_event **events, size_t *nevents)
{
	struct sl_events_query q = {0, before_id > 0 ? before_id : -1, 0, limit,
	                            0};

	return sl_events_query(c, &q, events, nevents);
}
