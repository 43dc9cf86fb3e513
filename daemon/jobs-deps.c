/*
 * The queue's own controls over a job: dependencies (submit's after and
 * after_any), holds, and updates of a queued job's options. A job that waits
 * for either keeps its place and is passed over (admit.h, blocked); a job whose
 * dependency ended otherwise than as it needed is cancelled with reason
 * "dependency". The rules are in docs/jobs.md, "Dependencies and holds".
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobs-internal.h"

/* A uid's holds and releases in a minute that get an event each. */
#define JOBS_HOLD_EVENTS_PER_MINUTE 60
#include "log.h"
#include "proto.h"
#include "store.h"

/* Did j end as a job after it (not after_any) needs: exit 0? */
static int
deps_ended_ok(const struct job *j)
{
	return j->state == JOB_EXITED && j->term_signal == 0 &&
	       j->exit_code == 0;
}

/* How j ended, for the dependents' record: "exited 1", "killed
 * (swap_budget)", "cancelled". */
static void
deps_outcome(const struct job *j, char *buf, size_t len)
{
	if (j->state == JOB_EXITED && j->term_signal > 0)
		snprintf(buf, len, "exited on signal %d", j->term_signal);
	else if (j->state == JOB_EXITED)
		snprintf(buf, len, "exited %d", j->exit_code);
	else if (j->end_reason != NULL)
		snprintf(buf, len, "%s (%s)", job_state_name(j->state),
		         j->end_reason);
	else
		snprintf(buf, len, "%s", job_state_name(j->state));
}

double
jobs_wait_free_pct(const struct job *j, uint64_t total_bytes)
{
	double pct;

	if (j->wait_free_bytes == 0)
		return j->wait_free_pct;
	/* Unknown total: never met (nothing is admitted before a sample). */
	if (total_bytes == 0)
		return 101;
	pct = (double)j->wait_free_bytes * 100.0 / (double)total_bytes;
	return pct > j->wait_free_pct ? pct : j->wait_free_pct;
}

static int
cmp_id(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* The index of j's group in the config when it has a limit, else -1. */
static int
group_limited(struct daemon *d, const struct job *j)
{
	int g;

	if (j->group == NULL)
		return -1;
	for (g = 0; g < d->cfg.ngroups; g++)
		if (strcmp(d->cfg.groups[g].name, j->group) == 0)
			return d->cfg.groups[g].max_running > 0 ? g : -1;
	return -1;
}

/* Count j, which holds memory in limited group g, for its user's share. */
static void
group_use_add(struct jobs_deps_ctx *c, int g, const struct job *j)
{
	size_t k;

	if (c->use == NULL)
		return;
	for (k = 0; k < c->nuse; k++) {
		if (c->use[k].group == g && c->use[k].uid == j->uid) {
			c->use[k].running++;
			return;
		}
	}
	c->use[c->nuse].group = g;
	c->use[c->nuse].uid = j->uid;
	c->use[c->nuse].running = 1;
	c->nuse++;
}

/* Does r wait for an after dependency not yet ended (c's live ids)? */
static int
deps_unmet(const struct jrec *r, const struct jobs_deps_ctx *c)
{
	int i;

	for (i = 0; i < r->j->nafter; i++)
		if (c->nomem || bsearch(&r->j->after[i], c->live, c->nlive,
		                        sizeof *c->live, cmp_id) != NULL)
			return 1;
	return 0;
}

/* Count r's user as waiting in r's limited group when r could use a slot
 * of it: queued, not held, not waiting for a dependency or for its
 * client. A job that could not start anyway keeps no one to half. */
static void
group_note_waiting(struct daemon *d, struct jobs_deps_ctx *c,
                   const struct jrec *r)
{
	const struct job *j = r->j;
	int g;

	if (!jrec_is_live(r) || j->state != JOB_QUEUED || j->held ||
	    (j->attached && r->client_id == 0) || deps_unmet(r, c) ||
	    j->begin_ms > c->now_ms || (g = group_limited(d, j)) < 0)
		return;
	if (c->waiting_uids[g] == 0) {
		c->waiting_uid[g] = j->uid;
		c->waiting_uids[g] = 1;
	} else if (c->waiting_uid[g] != j->uid)
		c->waiting_uids[g] = 2;
}

void
jobs_deps_prepare(struct daemon *d, struct jobs_deps_ctx *c)
{
	struct jobs *js = d->jobs;
	size_t i;
	int g, deps = 0;

	memset(c, 0, sizeof *c);
	c->now_ms = clock_wall_ms();
	/* At most one entry a job; without it no share is held back. */
	c->use = malloc(sizeof *c->use * (js->n ? js->n : 1));
	for (i = 0; i < js->n; i++) {
		const struct jrec *r = js->v[i];
		const struct job *j = r->j;
		int queued = jrec_is_live(r) && j->state == JOB_QUEUED;

		if (j->nafter > 0 && queued)
			deps = 1;
		if (j->array_limit > 0 && jrec_holds_memory(r)) {
			struct umap_slot *a =
			    umap_get(&c->arrays, (uint64_t)j->array_id);

			if (a == NULL)
				c->arrays_nomem = 1;
			else
				a->a++;
		}
		if ((g = group_limited(d, j)) < 0)
			continue;
		if (jrec_holds_memory(r)) {
			c->running[g]++;
			group_use_add(c, g, j);
		}
	}
	/* Not done: jobs_find's records, whose ends are not yet announced. */
	if (deps &&
	    (c->live = malloc(sizeof *c->live * (js->n ? js->n : 1))) == NULL)
		c->nomem = 1;
	for (i = 0; c->live != NULL && i < js->n; i++)
		if (!js->v[i]->done)
			c->live[c->nlive++] = js->v[i]->j->id;
	if (c->live != NULL)
		qsort(c->live, c->nlive, sizeof *c->live, cmp_id);
	for (i = 0; c->use != NULL && i < js->n; i++)
		group_note_waiting(d, c, js->v[i]);
}

void
jobs_deps_release(struct jobs_deps_ctx *c)
{
	free(c->live);
	c->live = NULL;
	free(c->use);
	c->use = NULL;
	umap_free(&c->arrays);
}

/* Is j's group at its limit? */
static int
group_full(struct daemon *d, const struct job *j, const int *running)
{
	int g = group_limited(d, j);

	return g >= 0 && running[g] >= d->cfg.groups[g].max_running;
}

/* Does j's user already hold its share of j's group, ceil(max_running/2),
 * while another user's job in the group waits? Then j waits too, so one
 * user cannot keep a shared group's slots to itself. Root, the daemon's
 * user and the admin group are not held to it (docs/jobs.md, "Groups"). */
static int
group_share_used(struct daemon *d, const struct job *j,
                 const struct jobs_deps_ctx *c)
{
	int g = group_limited(d, j);
	size_t k;

	if (g < 0 || j->privileged || c->use == NULL)
		return 0;
	if (c->waiting_uids[g] < 2 && c->waiting_uid[g] == j->uid)
		return 0; /* nobody else waits in it */
	for (k = 0; k < c->nuse; k++)
		if (c->use[k].group == g && c->use[k].uid == j->uid)
			return c->use[k].running >=
			       (d->cfg.groups[g].max_running + 1) / 2;
	return 0;
}

static int
array_frozen(const struct jobs *js, int64_t array_id)
{
	size_t i;

	for (i = 0; i < js->nfrozen; i++)
		if (js->frozen[i] == array_id)
			return 1;
	return 0;
}

int
jobs_array_freeze(struct daemon *d, int64_t array_id)
{
	struct jobs *js = d->jobs;

	if (js->nfrozen == js->capfrozen) {
		size_t cap = js->capfrozen ? js->capfrozen * 2 : 4;
		int64_t *nv = realloc(js->frozen, cap * sizeof *nv);

		if (nv == NULL)
			return -ENOMEM;
		js->frozen = nv;
		js->capfrozen = cap;
	}
	js->frozen[js->nfrozen++] = array_id;
	return 0;
}

void
jobs_array_thaw(struct daemon *d, int64_t array_id)
{
	struct jobs *js = d->jobs;
	size_t i;

	if (js == NULL) /* shut down while a walk was under way */
		return;
	for (i = 0; i < js->nfrozen; i++)
		if (js->frozen[i] == array_id) {
			js->frozen[i] = js->frozen[--js->nfrozen];
			break;
		}
	if (js->nfrozen == 0) {
		free(js->frozen);
		js->frozen = NULL;
		js->capfrozen = 0;
	}
	/* what the walk left (it failed, or only held some) may go now */
	jobs_admit_soon(d);
}

enum admit_wait
jobs_deps_blocked(struct daemon *d, struct jrec *r,
                  const struct jobs_deps_ctx *c)
{
	const struct job *j = r->j;
	int i;

	r->wait_after = 0;
	if (j->held)
		return ADMIT_WAIT_HELD;
	/* A dependency in the table has not ended, or its end is not yet on
	 * disk; one gone from the table has ended, and had it ended as this
	 * job could not accept, this job would have been cancelled. */
	for (i = 0; i < j->nafter; i++) {
		if (c->nomem || bsearch(&j->after[i], c->live, c->nlive,
		                        sizeof *c->live, cmp_id) != NULL) {
			r->wait_after = j->after[i];
			return ADMIT_WAIT_AFTER;
		}
	}
	/* Passed over until its time comes; the sample tick (every
	 * interval) looks again. */
	if (j->begin_ms > c->now_ms)
		return ADMIT_WAIT_BEGIN;
	if (group_full(d, j, c->running) || group_share_used(d, j, c))
		return ADMIT_WAIT_GROUP;
	if (j->array_id > 0 && array_frozen(d->jobs, j->array_id))
		return ADMIT_WAIT_ARRAY;
	if (j->array_limit > 0) {
		struct umap_slot *a;

		if (c->arrays_nomem)
			return ADMIT_WAIT_ARRAY;
		a = umap_find((struct umap *)&c->arrays, (uint64_t)j->array_id);
		if (a != NULL && a->a >= j->array_limit)
			return ADMIT_WAIT_ARRAY;
	}
	return ADMIT_WAIT_NONE;
}

/* Cancel r, which needed dep (id) to exit 0; outcome says how it ended. */
static void
deps_cancel(struct daemon *d, struct jrec *r, int64_t dep, const char *outcome)
{
	log_info("jobs: job %" PRId64 " cancelled: job %" PRId64
	         " it runs after %s",
	         r->j->id, dep, outcome);
	jrec_end(d, r, JOB_CANCELLED, "dependency",
	         jobs_fmt_detail("cancelled before it started: job %" PRId64
	                         " it runs after %s",
	                         dep, outcome));
}

static int
deps_has(const struct job *j, int64_t id)
{
	int i;

	for (i = 0; i < j->nafter; i++)
		if (j->after[i] == id)
			return 1;
	return 0;
}

void
jobs_deps_ended(struct daemon *d, const struct job *ended)
{
	struct jobs *js = d->jobs;
	char outcome[96];
	size_t i;

	if (deps_ended_ok(ended))
		return;
	deps_outcome(ended, outcome, sizeof outcome);
	/* jrec_end marks records, it does not move the table: the walk stays
	 * valid, and a cancelled dependent's own dependents follow it
	 * through this same function. */
	for (i = 0; i < js->n; i++) {
		struct jrec *r = js->v[i];

		if (!jrec_is_live(r) || r->j->state != JOB_QUEUED ||
		    r->j->after_any || !deps_has(r->j, ended->id))
			continue;
		deps_cancel(d, r, ended->id, outcome);
	}
}

void
jobs_deps_load(struct daemon *d)
{
	struct jobs *js = d->jobs;
	struct job *dep;
	char outcome[96];
	size_t i;
	int k;

	for (i = 0; i < js->n; i++) {
		struct jrec *r = js->v[i];

		if (!jrec_is_live(r) || r->j->state != JOB_QUEUED ||
		    r->j->after_any)
			continue;
		for (k = 0; k < r->j->nafter; k++) {
			int64_t id = r->j->after[k];

			if (jobs_find(js, id) != NULL)
				continue;
			dep = NULL;
			if (store_job_get(d->store, id, &dep) != 0 ||
			    dep == NULL) {
				/* Pruned: how it ended cannot be told, and a
				 * job that needed it to succeed must not run
				 * on a guess. */
				deps_cancel(
				    d, r, id,
				    "is no longer recorded (its outcome "
				    "is unknown)");
				break;
			}
			if (!deps_ended_ok(dep)) {
				deps_outcome(dep, outcome, sizeof outcome);
				job_free(dep);
				deps_cancel(d, r, id, outcome);
				break;
			}
			job_free(dep);
		}
	}
}

int
jobs_after_check(struct daemon *d, struct job *j, char *cause, size_t causelen)
{
	struct jobs_view v;
	char outcome[96];
	int i, k, rc;

	/* Without jobs to start after, "any end of theirs" means nothing:
	 * the Job says false. */
	if (j->nafter == 0)
		j->after_any = 0;
	for (i = 0; i < j->nafter; i++) {
		for (k = 0; k < i; k++) {
			if (j->after[k] == j->after[i]) {
				snprintf(cause, causelen,
				         "invalid params: after: job %" PRId64
				         " is listed twice",
				         j->after[i]);
				return PROTO_E_PARAMS;
			}
		}
		/* lean: no queue pass, no argv, per job after */
		if ((rc = jobs_get_lean(d, j->after[i], &v, cause, causelen)) !=
		    0)
			return rc;
		if (j->uid != 0 && v.j->uid != j->uid) {
			snprintf(cause, causelen,
			         "after: job %" PRId64 " is not yours: a job "
			         "may start only after its own user's jobs",
			         j->after[i]);
			jobs_view_free(&v);
			return PROTO_E_PERM;
		}
		/* A condition that can never hold is refused now. */
		if (!j->after_any && !v.in_table && !deps_ended_ok(v.j)) {
			deps_outcome(v.j, outcome, sizeof outcome);
			snprintf(cause, causelen,
			         "after: job %" PRId64 " has already ended %s; "
			         "a job after it would never start (after_any "
			         "runs after any end)",
			         j->after[i], outcome);
			jobs_view_free(&v);
			return PROTO_E_STATE;
		}
		jobs_view_free(&v);
	}
	return 0;
}

/* One uid's holds and releases in the minute from since_ms; past the
 * bound, what they did, for the one event that says so. */
struct hold_rate {
	uid_t uid;
	int64_t since_ms;
	int n;
	int held, released; /* past the bound */
	int64_t first_ms, last_ms, job_id;
	int last_held;
};

/* Write the event that counts what h did past the bound: the kind of the
 * last of them, on the last job, with how many of each. */
static void
hold_summary(struct daemon *d, const struct hold_rate *h)
{
	struct job j;
	cJSON *det;

	if (h->held + h->released == 0)
		return;
	memset(&j, 0, sizeof j);
	j.id = h->job_id;
	j.uid = h->uid;
	det = cJSON_CreateObject();
	proto_add_int(det, "count", h->held + h->released);
	proto_add_int(det, "held", h->held);
	proto_add_int(det, "released", h->released);
	proto_add_int(det, "since_ms", h->first_ms);
	proto_add_int(det, "until_ms", h->last_ms);
	jobs_event(d, &j,
	           h->last_held ? NAMES_EVENT_HELD : NAMES_EVENT_RELEASED, det);
}

void
jobs_hold_flush(struct daemon *d, int64_t now, int all)
{
	struct jobs *js = d->jobs;
	size_t i = 0;

	while (i < js->nholds) {
		struct hold_rate *h = &js->holds[i];

		if (!all && now - h->since_ms < 60000) {
			i++;
			continue;
		}
		hold_summary(d, h);
		js->holds[i] = js->holds[--js->nholds];
	}
	if (all) {
		free(js->holds);
		js->holds = NULL;
		js->capholds = 0;
	}
}

/*
 * Record j's hold or release: its own event for each of the first
 * JOBS_HOLD_EVENTS_PER_MINUTE of its uid's minute, then counted, and one
 * event for the rest when the minute ends (jobs_hold_flush). A loop of
 * holds and releases added a row a request (168,600 in 30 s); they still
 * act, each committed to the job's row before the answer.
 */
static void
hold_record(struct daemon *d, const struct job *j, int held)
{
	struct jobs *js = d->jobs;
	struct hold_rate *h = NULL, *nv;
	int64_t now = clock_wall_ms();
	size_t i;

	for (i = 0; i < js->nholds; i++)
		if (js->holds[i].uid == j->uid)
			h = &js->holds[i];
	if (h != NULL && now - h->since_ms >= 60000) {
		hold_summary(d, h);
		memset(h, 0, sizeof *h);
		h->uid = j->uid;
		h->since_ms = now;
	}
	if (h == NULL) {
		if (js->nholds == js->capholds) {
			size_t cap = js->capholds ? js->capholds * 2 : 8;
			if ((nv = realloc(js->holds, cap * sizeof *nv)) == NULL)
				goto own; /* not counted: its own event */
			js->holds = nv;
			js->capholds = cap;
		}
		h = &js->holds[js->nholds++];
		memset(h, 0, sizeof *h);
		h->uid = j->uid;
		h->since_ms = now;
	}
	if (++h->n <= JOBS_HOLD_EVENTS_PER_MINUTE)
		goto own;
	if (h->held + h->released == 0)
		h->first_ms = now;
	h->last_ms = now;
	h->job_id = j->id;
	h->last_held = held;
	if (held)
		h->held++;
	else
		h->released++;
	return;
own:
	jobs_event(d, j, held ? NAMES_EVENT_HELD : NAMES_EVENT_RELEASED, NULL);
}

int
jobs_hold(struct daemon *d, int64_t id, int held, char *cause, size_t causelen)
{
	struct jrec *r = jobs_find(d->jobs, id);
	const char *health;

	if (r == NULL || !jrec_is_live(r) || r->j->state != JOB_QUEUED) {
		snprintf(cause, causelen,
		         "job %" PRId64 " is not queued: only a queued job "
		         "can be %s",
		         id, held ? "held" : "released");
		return PROTO_E_STATE;
	}
	if (r->j->held == held)
		return 0;
	if ((health = store_health(d->store)) != NULL) {
		snprintf(cause, causelen,
		         "storage error: %s; job %" PRId64 " is unchanged, try "
		         "again",
		         health, id);
		return PROTO_E_STORAGE;
	}
	r->j->held = held;
	if (jrec_commit(d, r) != 0) {
		r->j->held = !held;
		r->dirty = 0;
		snprintf(cause, causelen,
		         "storage error: job %" PRId64 " is unchanged, try "
		         "again",
		         id);
		return PROTO_E_STORAGE;
	}
	hold_record(d, r->j, held);
	/* hold and release answer the job as it is now: held, or what it
	 * waits for once released. */
	jobs_classify(d);
	jobs_admit_soon(d);
	return 0;
}

/* The update fields of proto/job-fields.h: applied from vals when seen,
 * undone from was, and the new values in the event's detail. */
#define UPD_APPLY_0(m)
#define UPD_APPLY_1(m)                                                         \
	if (seen->m)                                                           \
		j->m = vals->m;
#define UPD_UNDO_0(m)
#define UPD_UNDO_1(m) j->m = was.m;
#define UPD_DET_J_INT(m, w) proto_add_int(det, w, (int64_t)j->m);
#define UPD_DET_J_POS(m, w) proto_add_int(det, w, (int64_t)j->m);
#define UPD_DET_J_NUM(m, w) cJSON_AddNumberToObject(det, w, (double)j->m);
#define UPD_DET_J_BOOL(m, w) cJSON_AddBoolToObject(det, w, j->m);
#define UPD_DET_0(m, w, job)
#define UPD_DET_1(m, w, job)                                                   \
	if (seen->m) {                                                         \
		UPD_DET_##job(m, w)                                            \
	}
#define UPD_APPLY(m, w, store, col, job, vis, submit, upd, ...)                \
	UPD_APPLY_##upd(m)
#define UPD_UNDO(m, w, store, col, job, vis, submit, upd, ...) UPD_UNDO_##upd(m)
#define UPD_DET(m, w, store, col, job, vis, submit, upd, ...)                  \
	UPD_DET_##upd(m, w, job)

int
jobs_update(struct daemon *d, int64_t id, const struct job *vals,
            const struct job_seen *seen, char *cause, size_t causelen)
{
	struct jrec *r = jobs_find(d->jobs, id);
	const char *health;
	struct job *j, was;
	cJSON *det;

	if (r == NULL || !jrec_is_live(r) || r->j->state != JOB_QUEUED) {
		snprintf(cause, causelen,
		         "job %" PRId64 " is not queued: only a queued job "
		         "can be updated",
		         id);
		return PROTO_E_STATE;
	}
	if ((health = store_health(d->store)) != NULL) {
		snprintf(cause, causelen,
		         "storage error: %s; job %" PRId64 " is unchanged, try "
		         "again",
		         health, id);
		return PROTO_E_STORAGE;
	}
	j = r->j;
	was = *j;
	JOB_FIELDS(UPD_APPLY)
	if (seen->expect_bytes) {
		/* Given now: no learned peak replaces it (0 opts out). */
		j->expect_source = JOB_EXPECT_GIVEN;
		j->expect_runs = 0;
	}
	if (jrec_commit(d, r) != 0) {
		JOB_FIELDS(UPD_UNDO)
		j->expect_source = was.expect_source;
		j->expect_runs = was.expect_runs;
		r->dirty = 0;
		snprintf(cause, causelen,
		         "storage error: job %" PRId64 " is unchanged, try "
		         "again",
		         id);
		return PROTO_E_STORAGE;
	}
	det = cJSON_CreateObject();
	JOB_FIELDS(UPD_DET)
	jobs_event(d, j, NAMES_EVENT_UPDATED, det);
	jobs_classify(d); /* what it waits for under its new values */
	jobs_admit_soon(d);
	return 0;
}
