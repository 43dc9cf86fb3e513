/*
 * The job methods of PROTOCOL.md (submit, status, show, cancel, wait,
 * events, job_history; job_pid, job_exit and resume are in jobs-attached.c,
 * logs in jobs-logs.c), the wire Job and Event objects and who may see
 * what of them: another user's job shows no argv, cwd, env or detail.
 */
#include <errno.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "control.h"
#include "jobs-internal.h"
#include "proto.h"
#include "server.h"
#include "store.h"

#define JOBS_MAX_NAME 256
#define JOBS_MAX_CWD 4096

struct waiter {
	struct waiter *next;
	uint64_t client_id;
	uid_t uid;
	cJSON *req_id;
	int64_t job_id;
};

struct event_follower {
	struct event_follower *next;
	uint64_t client_id;
	uid_t uid;
};

static void
user_name(uid_t uid, char *buf, size_t len)
{
	struct passwd pw, *res = NULL;
	char tmp[2048];

	if (getpwuid_r(uid, &pw, tmp, sizeof tmp, &res) == 0 && res != NULL)
		snprintf(buf, len, "%s", pw.pw_name);
	else
		snprintf(buf, len, "%u", (unsigned)uid);
}

cJSON *
jobs_event_json(const struct store_event *e, uid_t viewer_uid)
{
	cJSON *o = cJSON_CreateObject(), *detail = NULL;
	char user[64];

	if (o == NULL)
		return NULL;
	proto_add_int(o, "id", e->id);
	proto_add_int(o, "ts_ms", e->ts_ms);
	if (e->job_id > 0) {
		proto_add_int(o, "job_id", e->job_id);
		user_name(e->uid, user, sizeof user);
		cJSON_AddStringToObject(o, "user", user);
	} else {
		cJSON_AddNullToObject(o, "job_id");
		cJSON_AddNullToObject(o, "user");
	}
	cJSON_AddStringToObject(o, "kind", e->kind);
	if (e->detail != NULL &&
	    (e->job_id <= 0 || viewer_uid == 0 || viewer_uid == e->uid))
		detail = cJSON_Parse(e->detail);
	if (detail != NULL)
		cJSON_AddItemToObject(o, "detail", detail);
	else
		cJSON_AddNullToObject(o, "detail");
	return o;
}

void
jobs_ctl_notify_followers(struct daemon *d, const struct store_event *e)
{
	struct event_follower *f;

	for (f = d->jobs->followers; f != NULL; f = f->next) {
		cJSON *ev = jobs_event_json(e, f->uid);
		if (ev != NULL)
			server_notify(d, f->client_id, "event", ev);
	}
}

int
jobs_ctl_may_see(uid_t viewer, const struct job *j)
{
	return viewer == 0 || viewer == j->uid;
}

int
jobs_ctl_end_recorded(struct daemon *d, const struct jrec *r, char *cause,
                      size_t causelen)
{
	if (!r->end_pending)
		return 0;
	snprintf(cause, causelen,
	         "storage error: %s; job %" PRId64 " is %s here, and its "
	         "record is written once storage works again",
	         d->storage_error, r->j->id, job_state_name(r->j->state));
	return PROTO_E_STORAGE;
}

static cJSON *
strv_json(char *const *v)
{
	cJSON *a = cJSON_CreateArray();

	for (; a != NULL && v != NULL && *v != NULL; v++)
		cJSON_AddItemToArray(a, cJSON_CreateString(*v));
	return a;
}

static void
add_opt_int(cJSON *o, const char *name, int64_t v, int present)
{
	if (present)
		proto_add_int(o, name, v);
	else
		cJSON_AddNullToObject(o, name);
}

/* The wire Job; r is the live record when there is one. */
cJSON *
jobs_ctl_job_json(const struct job *j, const struct jrec *r, uid_t viewer,
                  int with_env)
{
	cJSON *o = cJSON_CreateObject();
	int ended = JOB_STATE_ENDED(j->state);
	int visible = jobs_ctl_may_see(viewer, j);

	if (o == NULL)
		return NULL;
	proto_add_int(o, "id", j->id);
	cJSON_AddStringToObject(o, "user", j->user ? j->user : "");
	proto_add_int(o, "uid", j->uid);
	cJSON_AddStringToObject(o, "name", j->name ? j->name : "");
	cJSON_AddStringToObject(o, "state", job_state_name(j->state));
	cJSON_AddBoolToObject(o, "attached", j->attached);
	proto_add_int(o, "priority", j->priority);
	cJSON_AddNumberToObject(o, "wait_free_pct", j->wait_free_pct);
	proto_add_int(o, "swap_budget_bytes", (int64_t)j->swap_budget_bytes);
	proto_add_int(o, "expect_bytes", (int64_t)j->expect_bytes);
	cJSON_AddBoolToObject(o, "exclusive", j->exclusive);
	proto_add_int(o, "retry_on_breach", j->retry_on_breach);
	proto_add_int(o, "attempt", j->attempt);
	add_opt_int(o, "position", r ? r->position : 0,
	            r != NULL && j->state == JOB_QUEUED && r->position > 0);
	if (r != NULL && j->state == JOB_QUEUED)
		cJSON_AddStringToObject(o, "waiting_for",
		                        admit_wait_name(r->wait));
	proto_add_int(o, "submitted_at_ms", j->submitted_ms);
	add_opt_int(o, "admitted_at_ms", j->admitted_ms, j->admitted_ms > 0);
	add_opt_int(o, "started_at_ms", j->started_ms, j->started_ms > 0);
	add_opt_int(o, "ended_at_ms", j->ended_ms, ended && j->ended_ms > 0);
	add_opt_int(o, "pid", j->pid, j->pid > 0);
	proto_add_int(o, "footprint_bytes", (int64_t)j->footprint_bytes);
	proto_add_int(o, "footprint_peak_bytes",
	              (int64_t)j->footprint_peak_bytes);
	proto_add_int(o, "swap_growth_bytes",
	              r != NULL && !ended ? (int64_t)r->growth_bytes : 0);
	proto_add_int(o, "swap_growth_peak_bytes",
	              (int64_t)j->swap_growth_peak_bytes);
	proto_add_int(o, "job_swap_bytes", (int64_t)j->job_swap_bytes);
	/* A killed job may have ended with a code of its own (a TERM
	 * handler's exit), which is worth showing too. */
	add_opt_int(o, "exit_code", j->exit_code,
	            ended && j->term_signal == 0 && j->started_ms > 0 &&
	                (j->state == JOB_EXITED || j->state == JOB_KILLED));
	add_opt_int(o, "signal", j->term_signal, ended && j->term_signal > 0);
	if (ended && j->end_reason != NULL)
		cJSON_AddStringToObject(o, "end_reason", j->end_reason);
	else
		cJSON_AddNullToObject(o, "end_reason");
	if (visible) {
		cJSON_AddItemToObject(o, "argv", strv_json(j->argv));
		cJSON_AddStringToObject(o, "cwd", j->cwd ? j->cwd : "");
		if (ended && j->end_detail != NULL)
			cJSON_AddStringToObject(o, "end_detail", j->end_detail);
		else
			cJSON_AddNullToObject(o, "end_detail");
		if (with_env)
			cJSON_AddItemToObject(o, "env",
			                      j->env != NULL
			                          ? strv_json(j->env)
			                          : cJSON_CreateNull());
	}
	return o;
}

void
jobs_ctl_answer_waiters(struct daemon *d, struct jrec *r)
{
	struct waiter **wp = &d->jobs->waiters, *w;

	while ((w = *wp) != NULL) {
		if (w->job_id != r->j->id) {
			wp = &w->next;
			continue;
		}
		*wp = w->next;
		server_reply(d, w->client_id, w->req_id,
		             jobs_ctl_job_json(r->j, NULL, w->uid, 0));
		cJSON_Delete(w->req_id);
		free(w);
	}
}

void
jobs_ctl_drop(struct jobs *js, uint64_t client_id, int all)
{
	struct waiter **wp, *w;
	struct event_follower **fp, *f;

	for (wp = &js->waiters; (w = *wp) != NULL;) {
		if (all || w->client_id == client_id) {
			*wp = w->next;
			cJSON_Delete(w->req_id);
			free(w);
		} else
			wp = &w->next;
	}
	for (fp = &js->followers; (f = *fp) != NULL;) {
		if (all || f->client_id == client_id) {
			*fp = f->next;
			free(f);
		} else
			fp = &f->next;
	}
}

size_t
jobs_ctl_id_bytes(const cJSON *req_id)
{
	if (cJSON_IsString(req_id) && req_id->valuestring != NULL)
		return strlen(req_id->valuestring);
	return 0;
}

int
jobs_ctl_defer_check(struct jobs *js, uint64_t client_id, const cJSON *req_id,
                     char *cause, size_t causelen)
{
	struct waiter *w;
	size_t n = 1, bytes = jobs_ctl_id_bytes(req_id);

	for (w = js->waiters; w != NULL; w = w->next) {
		if (w->client_id != client_id)
			continue;
		n++;
		bytes += jobs_ctl_id_bytes(w->req_id);
	}
	jobs_logs_pending(js, client_id, &n, &bytes);
	if (n > JOBS_MAX_DEFERRED || bytes > JOBS_MAX_DEFERRED_ID_BYTES) {
		snprintf(cause, causelen,
		         "limit reached: at most %d wait and logs requests "
		         "pending on one connection, their ids %u bytes in all",
		         JOBS_MAX_DEFERRED, JOBS_MAX_DEFERRED_ID_BYTES);
		return PROTO_E_LIMIT;
	}
	return 0;
}

size_t
jobs_client_deferred(struct daemon *d, uint64_t client_id)
{
	struct waiter *w;
	size_t n = 0, bytes = 0;

	if (d->jobs == NULL)
		return 0;
	for (w = d->jobs->waiters; w != NULL; w = w->next)
		if (w->client_id == client_id)
			n++;
	jobs_logs_pending(d->jobs, client_id, &n, &bytes);
	return n;
}

int
jobs_ctl_param_id(const cJSON *params, int64_t *id, char *cause,
                  size_t causelen)
{
	return proto_param_int(params, "id", 1, 1, INT64_MAX, id, cause,
	                       causelen);
}

/* The live record or, for an ended job, the stored one (*owned set). */
int
jobs_ctl_lookup(struct daemon *d, int64_t id, struct jrec **r,
                struct job **stored, char *cause, size_t causelen)
{
	*stored = NULL;
	*r = jobs_find(d->jobs, id);
	if (*r != NULL && !(*r)->end_pending)
		return 0;
	if (*r != NULL) {
		/* Ended but not on disk yet: memory is the truth. */
		return 0;
	}
	if (store_job_get(d->store, id, stored) == 0 && *stored != NULL)
		return 0;
	snprintf(cause, causelen, "no job %" PRId64, id);
	return PROTO_E_NOJOB;
}

static char **
strv_dup(const char **v)
{
	size_t n = 0, i;
	char **out;

	while (v[n] != NULL)
		n++;
	out = calloc(n + 1, sizeof *out);
	if (out == NULL)
		return NULL;
	for (i = 0; i < n; i++) {
		if ((out[i] = strdup(v[i])) == NULL) {
			while (i > 0)
				free(out[--i]);
			free(out);
			return NULL;
		}
	}
	return out;
}

int
jobs_ctl_submit(struct daemon *d, const struct peer *p, const cJSON *req_id,
                const cJSON *params, cJSON **result, char *cause,
                size_t causelen)
{
	static const char *const known[] = {"argv",
	                                    "cwd",
	                                    "env",
	                                    "attached",
	                                    "name",
	                                    "priority",
	                                    "wait_free_pct",
	                                    "swap_budget_bytes",
	                                    "expect_bytes",
	                                    "exclusive",
	                                    "retry_on_breach",
	                                    "umask",
	                                    NULL};
	struct jobs *js = d->jobs;
	const char **argv = NULL, **env = NULL, *cwd = NULL, *name = NULL;
	/* A client that does not say: the most private mask. */
	int64_t priority = 0, budget, expect = 0, retry = 0, mask = 077;
	double wait_free = d->cfg.default_wait_free_pct;
	int attached = 0, exclusive = 0, rc, count = 0;
	struct job *j = NULL;
	struct jrec *r;
	char user[64], scause[256];
	const char *base;
	size_t i, nq;
	struct jrec **q;

	budget = (int64_t)d->cfg.default_swap_budget_bytes;
	if ((rc = proto_params_check(params, known, cause, causelen)) != 0)
		return rc;
	if ((rc = proto_param_bool(params, "attached", 0, &attached, cause,
	                           causelen)) < 0 ||
	    (rc = proto_param_strv(params, "argv", 1, 4096,
	                           d->cfg.max_argv_bytes, &argv, cause,
	                           causelen)) < 0)
		goto out;
	if (argv[0] == NULL || argv[0][0] == '\0') {
		snprintf(cause, causelen, "argv must name a command");
		rc = PROTO_E_PARAMS;
		goto out;
	}
	if ((rc = proto_param_string(params, "cwd", 1, JOBS_MAX_CWD, &cwd,
	                             cause, causelen)) < 0)
		goto out;
	if (cwd[0] != '/') {
		snprintf(cause, causelen, "cwd must be an absolute path");
		rc = PROTO_E_PARAMS;
		goto out;
	}
	if ((rc = proto_param_strv(params, "env", !attached, 4096,
	                           d->cfg.max_env_bytes, &env, cause,
	                           causelen)) < 0)
		goto out;
	for (i = 0; env != NULL && env[i] != NULL; i++) {
		const char *eq = strchr(env[i], '=');
		if (eq == NULL || eq == env[i]) {
			snprintf(cause, causelen, "env[%zu] must be NAME=value",
			         i);
			rc = PROTO_E_PARAMS;
			goto out;
		}
	}
	if ((rc = proto_param_string(params, "name", 0, JOBS_MAX_NAME, &name,
	                             cause, causelen)) < 0 ||
	    (rc = proto_param_int(params, "priority", 0, -1000, 1000, &priority,
	                          cause, causelen)) < 0 ||
	    (rc = proto_param_double(params, "wait_free_pct", 0, 0, 100,
	                             &wait_free, cause, causelen)) < 0 ||
	    (rc = proto_param_int(params, "swap_budget_bytes", 0, 0, INT64_MAX,
	                          &budget, cause, causelen)) < 0 ||
	    (rc = proto_param_int(params, "expect_bytes", 0, 0, INT64_MAX,
	                          &expect, cause, causelen)) < 0 ||
	    (rc = proto_param_bool(params, "exclusive", 0, &exclusive, cause,
	                           causelen)) < 0 ||
	    (rc = proto_param_int(params, "retry_on_breach", 0, 0, 100, &retry,
	                          cause, causelen)) < 0 ||
	    (rc = proto_param_int(params, "umask", 0, 0, 0777, &mask, cause,
	                          causelen)) < 0)
		goto out;

	if (p->uid != 0) {
		for (i = 0; i < js->n; i++)
			if (jrec_is_live(js->v[i]) &&
			    js->v[i]->j->uid == p->uid)
				count++;
		if (count >= d->cfg.max_queued_per_uid) {
			snprintf(cause, causelen,
			         "limit reached: %d queued or running jobs per "
			         "user",
			         d->cfg.max_queued_per_uid);
			rc = PROTO_E_LIMIT;
			goto out;
		}
	}

	j = calloc(1, sizeof *j);
	if (j == NULL)
		goto nomem;
	user_name(p->uid, user, sizeof user);
	base = strrchr(argv[0], '/');
	base = base != NULL && base[1] != '\0' ? base + 1 : argv[0];
	j->uid = p->uid;
	j->gid = p->gid;
	j->user = strdup(user);
	j->name = strdup(name != NULL && name[0] != '\0' ? name : base);
	j->argv = strv_dup(argv);
	j->cwd = strdup(cwd);
	j->env = attached ? NULL : strv_dup(env);
	if (j->user == NULL || j->name == NULL || j->argv == NULL ||
	    j->cwd == NULL || (!attached && j->env == NULL))
		goto nomem;
	j->attached = attached;
	j->priority = (int)priority;
	j->wait_free_pct = wait_free;
	j->swap_budget_bytes = (uint64_t)budget;
	j->expect_bytes = (uint64_t)expect;
	j->exclusive = exclusive;
	j->retry_on_breach = (int)retry;
	j->umask = (int)mask;
	j->attempt = 1;
	j->state = JOB_QUEUED;
	j->submitted_ms = now_ms();
	if (store_job_insert(d->store, j, scause, sizeof scause) != 0) {
		jobs_storage_failed(d, "job insert", scause);
		snprintf(cause, causelen, "storage error: %s", scause);
		rc = PROTO_E_STORAGE;
		goto out;
	}
	r = jrec_new(js, j);
	if (r == NULL)
		goto nomem;
	j = NULL;
	if (attached)
		r->client_id = p->client_id;
	{
		cJSON *det = cJSON_CreateObject();
		cJSON_AddStringToObject(det, "name", r->j->name);
		proto_add_int(det, "priority", r->j->priority);
		cJSON_AddNumberToObject(det, "wait_free_pct",
		                        r->j->wait_free_pct);
		proto_add_int(det, "swap_budget_bytes",
		              (int64_t)r->j->swap_budget_bytes);
		cJSON_AddBoolToObject(det, "attached", r->j->attached);
		jobs_event(d, r->j, "submitted", det);
	}
	q = jobs_queue(js, &nq);
	free(q);
	*result = cJSON_CreateObject();
	proto_add_int(*result, "id", r->j->id);
	proto_add_int(*result, "position", r->position);
	proto_add_int(*result, "queued", (int64_t)nq);
	jobs_admit_soon(d);
	rc = 0;
	goto out;
nomem:
	snprintf(cause, causelen, "out of memory");
	rc = PROTO_E_INTERNAL;
out:
	job_free(j);
	free(argv);
	free(env);
	return rc > 0 ? 0 : rc;
}

struct ended_ctx {
	cJSON *arr;
	uid_t viewer;
};

static int
ended_cb(void *arg, struct job *j)
{
	struct ended_ctx *c = arg;

	cJSON_AddItemToArray(c->arr, jobs_ctl_job_json(j, NULL, c->viewer, 0));
	job_free(j);
	return 0;
}

int
jobs_ctl_status(struct daemon *d, const struct peer *p, const cJSON *req_id,
                const cJSON *params, cJSON **result, char *cause,
                size_t causelen)
{
	static const char *const known[] = {"all", "limit", NULL};
	struct jobs *js = d->jobs;
	struct jrec **q, **run;
	struct ended_ctx ctx;
	int all = 0, rc;
	int64_t limit = 50;
	size_t nq, i, nr = 0;
	cJSON *arr;

	if ((rc = proto_params_check(params, known, cause, causelen)) != 0 ||
	    (rc = proto_param_bool(params, "all", 0, &all, cause, causelen)) <
	        0 ||
	    (rc = proto_param_int(params, "limit", 0, 0, 100000, &limit, cause,
	                          causelen)) < 0)
		return rc;
	arr = cJSON_CreateArray();
	run = malloc((js->n ? js->n : 1) * sizeof *run);
	q = jobs_queue(js, &nq);
	if (arr == NULL || run == NULL) {
		cJSON_Delete(arr);
		free(run);
		free(q);
		snprintf(cause, causelen, "out of memory");
		return PROTO_E_INTERNAL;
	}
	for (i = 0; i < js->n; i++)
		if (jrec_holds_memory(js->v[i]))
			run[nr++] = js->v[i];
	for (i = 0; i < nr; i++)
		cJSON_AddItemToArray(
		    arr, jobs_ctl_job_json(run[i]->j, run[i], p->uid, 0));
	for (i = 0; q != NULL && i < nq; i++)
		cJSON_AddItemToArray(
		    arr, jobs_ctl_job_json(q[i]->j, q[i], p->uid, 0));
	/* Ended, not yet on disk. */
	for (i = 0; i < js->n; i++)
		if (js->v[i]->end_pending && all)
			cJSON_AddItemToArray(
			    arr,
			    jobs_ctl_job_json(js->v[i]->j, NULL, p->uid, 0));
	free(run);
	free(q);
	/* limit 0 shows none; the store takes <= 0 as no limit at all. */
	if (all && limit > 0) {
		ctx.arr = arr;
		ctx.viewer = p->uid;
		store_jobs_ended(d->store, limit, ended_cb, &ctx);
	}
	*result = cJSON_CreateObject();
	cJSON_AddItemToObject(*result, "jobs", arr);
	return 0;
}

int
jobs_ctl_show(struct daemon *d, const struct peer *p, const cJSON *req_id,
              const cJSON *params, cJSON **result, char *cause, size_t causelen)
{
	static const char *const known[] = {"id", "env", NULL};
	struct jrec *r;
	struct job *stored;
	int64_t id;
	int env = 0, rc;
	size_t nq;

	if ((rc = proto_params_check(params, known, cause, causelen)) != 0 ||
	    (rc = jobs_ctl_param_id(params, &id, cause, causelen)) != 0 ||
	    (rc = proto_param_bool(params, "env", 0, &env, cause, causelen)) <
	        0)
		return rc;
	if ((rc = jobs_ctl_lookup(d, id, &r, &stored, cause, causelen)) != 0)
		return rc;
	if (stored != NULL) {
		*result = jobs_ctl_job_json(stored, NULL, p->uid, env);
		job_free(stored);
		return 0;
	}
	free(jobs_queue(d->jobs, &nq)); /* fresh position */
	*result =
	    jobs_ctl_job_json(r->j, r->end_pending ? NULL : r, p->uid, env);
	return 0;
}

int
jobs_ctl_cancel(struct daemon *d, const struct peer *p, const cJSON *req_id,
                const cJSON *params, cJSON **result, char *cause,
                size_t causelen)
{
	static const char *const known[] = {"id", NULL};
	struct jrec *r;
	struct job *stored;
	int64_t id;
	int rc;
	char at[24], who[64];

	if ((rc = proto_params_check(params, known, cause, causelen)) != 0 ||
	    (rc = jobs_ctl_param_id(params, &id, cause, causelen)) != 0)
		return rc;
	if ((rc = jobs_ctl_lookup(d, id, &r, &stored, cause, causelen)) != 0)
		return rc;
	if (stored != NULL || r->end_pending) {
		if (stored != NULL && !jobs_ctl_may_see(p->uid, stored))
			rc = PROTO_E_PERM;
		else
			rc = PROTO_E_STATE;
		job_free(stored);
		snprintf(cause, causelen,
		         rc == PROTO_E_PERM ? "job %" PRId64 " is not yours"
		                            : "job %" PRId64
		                              " has already ended",
		         id);
		return rc;
	}
	if (!jobs_ctl_may_see(p->uid, r->j)) {
		snprintf(cause, causelen, "job %" PRId64 " is not yours", id);
		return PROTO_E_PERM;
	}
	jobs_clock_hms(now_ms(), at, sizeof at);
	user_name(p->uid, who, sizeof who);
	if (r->j->state == JOB_QUEUED || (r->j->state == JOB_ADMITTED &&
	                                  r->tree == NULL && r->j->attached)) {
		/* Not started: it simply leaves the queue. While storage
		 * fails (admissions are held) it stays, unchanged. */
		if (d->storage_error[0] != '\0') {
			snprintf(cause, causelen,
			         "storage error: %s; job %" PRId64
			         " is not cancelled, try again",
			         d->storage_error, id);
			return PROTO_E_STORAGE;
		}
		jrec_end(
		    d, r, JOB_CANCELLED, "cancel",
		    jobs_fmt_detail("cancelled by %s at %s before it started",
		                    who, at));
		if ((rc = jobs_ctl_end_recorded(d, r, cause, causelen)) != 0)
			return rc;
		*result = jobs_ctl_job_json(r->j, NULL, p->uid, 0);
		return 0;
	}
	/* A retry pending is abandoned: cancel is final, and is then why the
	 * job ends (a breach that was final stays the reason). */
	if (r->requeue) {
		r->requeue = 0;
		r->term_reason = NULL;
		free(r->term_detail);
		r->term_detail = NULL;
	}
	if (r->term_reason == NULL)
		jobs_kill_start(
		    d, r, "cancel",
		    jobs_fmt_detail("cancelled by %s at %s while %s", who, at,
		                    job_state_name(r->j->state)));
	*result = jobs_ctl_job_json(r->j, r, p->uid, 0);
	return 0;
}

int
jobs_ctl_wait(struct daemon *d, const struct peer *p, const cJSON *req_id,
              const cJSON *params, cJSON **result, char *cause, size_t causelen)
{
	static const char *const known[] = {"id", NULL};
	struct jrec *r;
	struct job *stored;
	struct waiter *w;
	int64_t id;
	int rc;

	if ((rc = proto_params_check(params, known, cause, causelen)) != 0 ||
	    (rc = jobs_ctl_param_id(params, &id, cause, causelen)) != 0)
		return rc;
	if ((rc = jobs_ctl_lookup(d, id, &r, &stored, cause, causelen)) != 0)
		return rc;
	if (stored != NULL) {
		*result = jobs_ctl_job_json(stored, NULL, p->uid, 0);
		job_free(stored);
		return 0;
	}
	if ((rc = jobs_ctl_defer_check(d->jobs, p->client_id, req_id, cause,
	                               causelen)) != 0)
		return rc;
	w = calloc(1, sizeof *w);
	if (w == NULL || (w->req_id = cJSON_Duplicate(req_id, 1)) == NULL) {
		free(w);
		snprintf(cause, causelen, "out of memory");
		return PROTO_E_INTERNAL;
	}
	w->client_id = p->client_id;
	w->uid = p->uid;
	w->job_id = id;
	w->next = d->jobs->waiters;
	d->jobs->waiters = w;
	return CONTROL_DEFERRED;
}

struct events_ctx {
	cJSON *arr;
	uid_t viewer;
};

static int
events_cb(void *arg, const struct store_event *e)
{
	struct events_ctx *c = arg;

	cJSON_AddItemToArray(c->arr, jobs_event_json(e, c->viewer));
	return 0;
}

int
jobs_ctl_events(struct daemon *d, const struct peer *p, const cJSON *req_id,
                const cJSON *params, cJSON **result, char *cause,
                size_t causelen)
{
	static const char *const known[] = {"after_id", "limit", "follow",
	                                    NULL};
	struct events_ctx ctx;
	struct event_follower *f;
	int64_t after = 0, limit = 100;
	int follow = 0, rc;

	if ((rc = proto_params_check(params, known, cause, causelen)) != 0 ||
	    (rc = proto_param_int(params, "after_id", 0, 0, INT64_MAX, &after,
	                          cause, causelen)) < 0 ||
	    (rc = proto_param_int(params, "limit", 0, 1, 10000, &limit, cause,
	                          causelen)) < 0 ||
	    (rc = proto_param_bool(params, "follow", 0, &follow, cause,
	                           causelen)) < 0)
		return rc;
	ctx.arr = cJSON_CreateArray();
	ctx.viewer = p->uid;
	if (store_events(d->store, after, limit, events_cb, &ctx) < 0) {
		cJSON_Delete(ctx.arr);
		snprintf(cause, causelen, "storage error reading events");
		return PROTO_E_STORAGE;
	}
	if (follow) {
		for (f = d->jobs->followers; f != NULL; f = f->next)
			if (f->client_id == p->client_id)
				break;
		if (f == NULL && (f = calloc(1, sizeof *f)) != NULL) {
			f->client_id = p->client_id;
			f->uid = p->uid;
			f->next = d->jobs->followers;
			d->jobs->followers = f;
		}
	}
	*result = cJSON_CreateObject();
	cJSON_AddItemToObject(*result, "events", ctx.arr);
	return 0;
}

static cJSON *
mma_json(double mn, double avg, double mx)
{
	cJSON *o = cJSON_CreateObject();

	proto_add_int(o, "min", (int64_t)mn);
	proto_add_int(o, "avg", (int64_t)avg);
	proto_add_int(o, "max", (int64_t)mx);
	return o;
}

int
jobs_ctl_job_history(struct daemon *d, const struct peer *p,
                     const cJSON *req_id, const cJSON *params, cJSON **result,
                     char *cause, size_t causelen)
{
	static const char *const known[] = {"job_id", "since_ms", "until_ms",
	                                    "step_ms", NULL};
	struct job_bucket *b = NULL;
	struct job *stored = NULL;
	struct jrec *r;
	int64_t id, since = 0, until = INT64_MAX, step = -1, lo, hi;
	const struct job *j;
	size_t n = 0, i;
	char scause[256];
	cJSON *arr;
	int rc;

	if ((rc = proto_params_check(params, known, cause, causelen)) != 0 ||
	    (rc = proto_param_int(params, "job_id", 1, 1, INT64_MAX, &id, cause,
	                          causelen)) != 0 ||
	    (rc = proto_param_int(params, "since_ms", 0, 0, INT64_MAX, &since,
	                          cause, causelen)) < 0 ||
	    (rc = proto_param_int(params, "until_ms", 0, 0, INT64_MAX, &until,
	                          cause, causelen)) < 0 ||
	    (rc = proto_param_int(params, "step_ms", 0, 0, INT64_MAX, &step,
	                          cause, causelen)) < 0)
		return rc;
	if ((rc = jobs_ctl_lookup(d, id, &r, &stored, cause, causelen)) != 0)
		return rc;
	if (step < 0) {
		/* As for system history: about 60 buckets over the span asked,
		 * or over the job's life, never finer than the samples. */
		j = stored != NULL ? stored : r->j;
		lo = since > 0 ? since : j->submitted_ms;
		hi = until != INT64_MAX ? until
		     : j->ended_ms > 0  ? j->ended_ms
		                        : now_ms();
		step = hi > lo ? (hi - lo) / 60 : 0;
		if (step < d->cfg.interval_ms)
			step = d->cfg.interval_ms;
	}
	job_free(stored);
	if ((rc = store_job_history(d->store, id, since, until, step, &b, &n,
	                            scause, sizeof scause)) != 0) {
		/* Too many buckets is the protocol's limit, not a failing
		 * database: asking again would not help. */
		snprintf(cause, causelen, "%s: %s",
		         rc == -E2BIG ? "limit reached" : "storage error",
		         scause);
		return rc == -E2BIG ? PROTO_E_LIMIT : PROTO_E_STORAGE;
	}
	arr = cJSON_CreateArray();
	for (i = 0; i < n; i++) {
		cJSON *o = cJSON_CreateObject();

		proto_add_int(o, "ts_ms", b[i].ts_ms);
		proto_add_int(o, "n", b[i].n);
		cJSON_AddItemToObject(o, "footprint_bytes",
		                      mma_json(b[i].footprint_min,
		                               b[i].footprint_avg,
		                               b[i].footprint_max));
		cJSON_AddItemToObject(
		    o, "swap_bytes",
		    mma_json(b[i].swap_min, b[i].swap_avg, b[i].swap_max));
		cJSON_AddItemToArray(arr, o);
	}
	free(b);
	*result = cJSON_CreateObject();
	proto_add_int(*result, "job_id", id);
	proto_add_int(*result, "step_ms", step);
	cJSON_AddItemToObject(*result, "buckets", arr);
	return 0;
}
