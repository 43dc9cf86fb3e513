/*
 * The queue's own controls over a job: dependencies (submit's after and
 * after_any), holds, and updates of a queued job's options. A job that waits
 * for either keeps its place and is passed over (admit.h, blocked); a job whose
 * dependency ended otherwise than as it needed is cancelled with reason
 * "dependency". The rules are in docs/jobs.md, "Dependencies and holds".
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "jobs-internal.h"
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

void
jobs_deps_prepare(struct daemon *d, struct jobs_deps_ctx *c)
{
	struct jobs *js = d->jobs;
	size_t i;
	int g, deps = 0;

	memset(c, 0, sizeof *c);
	for (i = 0; i < js->n; i++) {
		const struct jrec *r = js->v[i];
		const struct job *j = r->j;

		if (j->nafter > 0 && jrec_is_live(r) && j->state == JOB_QUEUED)
			deps = 1;
		if (j->group == NULL || !jrec_holds_memory(r))
			continue;
		for (g = 0; g < d->cfg.ngroups; g++)
			if (strcmp(d->cfg.groups[g].name, j->group) == 0)
				c->running[g]++;
	}
	if (!deps)
		return;
	/* Not done: jobs_find's records, whose ends are not yet announced. */
	if ((c->live = malloc(sizeof *c->live * (js->n ? js->n : 1))) == NULL) {
		c->nomem = 1;
		return;
	}
	for (i = 0; i < js->n; i++)
		if (!js->v[i]->done)
			c->live[c->nlive++] = js->v[i]->j->id;
	qsort(c->live, c->nlive, sizeof *c->live, cmp_id);
}

void
jobs_deps_release(struct jobs_deps_ctx *c)
{
	free(c->live);
	c->live = NULL;
}

/* Is j's group at its limit? */
static int
group_full(struct daemon *d, const struct job *j, const int *running)
{
	int g;

	if (j->group == NULL)
		return 0;
	for (g = 0; g < d->cfg.ngroups; g++)
		if (strcmp(d->cfg.groups[g].name, j->group) == 0)
			return d->cfg.groups[g].max_running > 0 &&
			       running[g] >= d->cfg.groups[g].max_running;
	return 0;
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
	if (group_full(d, j, c->running))
		return ADMIT_WAIT_GROUP;
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
		if ((rc = jobs_get(d, j->after[i], &v, cause, causelen)) != 0)
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
	jobs_event(d, r->j, held ? "held" : "released", NULL);
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
	jobs_event(d, j, "updated", det);
	jobs_admit_soon(d);
	return 0;
}
