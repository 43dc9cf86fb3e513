/*
 * Start-up: every job the store holds unended is loaded back into the
 * table and re-adopted (its process is followed again) or marked with what
 * became of it while no daemon watched.
 */
#include <inttypes.h>
#include <string.h>

#include "enforce.h"
#include "jobs-internal.h"
#include "log.h"
#include "platform.h"
#include "proctree.h"
#include "spawn.h"
#include "store.h"

struct adopt_ctx {
	struct daemon *d;
	int64_t now;
	int n;
};

/* Re-adopt one job found unended in the store. Jobs run at most once: a
 * job that was admitted and has no live process is lost, never started. */
static int
adopt_one(void *arg, struct job *j)
{
	struct adopt_ctx *c = arg;
	struct daemon *d = c->d;
	struct spawn_status st;
	struct jrec *r;
	char cause[256];
	uint64_t start;
	int fate;

	/* Judged again with the config of this start (admin_group). */
	j->privileged =
	    jobs_privileged(d, j->uid, j->gid, j->groups, j->ngroups);
	r = jrec_new(d->jobs, j);
	if (r == NULL) {
		job_free(j);
		return 0;
	}
	c->n++;
	if (j->state == JOB_RUNNING || j->state == JOB_ADMITTED)
		jobs_stage_restore(d, r);
	/* A kill that was under way before the restart carries on. */
	if (j->end_reason != NULL && !JOB_STATE_ENDED(j->state)) {
		if (strcmp(j->end_reason, "swap_budget") == 0) {
			/* Still the breach victim, and retried as it would
			 * have been: the decision depends on the job alone. */
			r->term_reason = "swap_budget";
			r->breach_kill = 1;
			r->requeue =
			    enforce_requeues(j->attempt, j->retry_on_breach);
		} else if (strcmp(j->end_reason, "cancel") == 0)
			r->term_reason = "cancel";
		if (r->term_reason != NULL)
			r->term_detail = jobs_fmt_detail("terminated (%s); the "
			                                 "daemon restarted "
			                                 "meanwhile",
			                                 r->term_reason);
	}
	if (j->attached) {
		r->orphan_since_ms = c->now;
		if (j->state != JOB_RUNNING)
			return 0; /* queued or admitted: await resume */
		if (j->pid > 0 &&
		    platform_proc_start_time(j->pid, &start) == 0 &&
		    start == j->start_time) {
			r->tree = proctree_new(j->pid, j->pgid, j->start_time);
			if (r->term_reason != NULL)
				jobs_kill_term(d, r);
			return 0;
		}
		jrec_end(
		    d, r, JOB_LOST, "client_gone",
		    jobs_fmt_detail("its process was gone when the daemon "
		                    "restarted; its exit status is unknown"));
		return 0;
	}
	if (j->state == JOB_QUEUED)
		return 0;
	/* The daemon stopped before it heard the job start: the monitor's
	 * record says which process it is, so it is followed, not lost. */
	if (j->pid <= 0)
		(void)spawn_started(d->cfg.state_dir, j);
	memset(&st, 0, sizeof st);
	fate = spawn_check(d->cfg.state_dir, j, &st, cause, sizeof cause);
	if (fate == SPAWN_RUNNING) {
		r->adopted = 1;
		if (j->pid > 0) {
			j->state = JOB_RUNNING;
			r->tree = proctree_new(j->pid, j->pgid, j->start_time);
			if (r->term_reason != NULL)
				jobs_kill_term(d, r);
		}
		log_info("jobs: job %" PRId64 " re-adopted (pid %d)", j->id,
		         (int)j->pid);
	} else if (fate == SPAWN_ENDED) {
		if (!st.failed) {
			/* Ended while no daemon watched it. */
			j->exit_code = st.exit_code;
			j->term_signal = st.term_signal;
			if (st.ended_ms > 0)
				j->ended_ms = st.ended_ms;
		}
		jobs_detached_ended(d, r, &st);
	} else {
		jrec_end(d, r, JOB_LOST, "lost",
		         jobs_fmt_detail(
		             "the daemon restarted and could not find it: "
		             "%s",
		             fate < 0 ? strerror(-fate) : cause));
	}
	return 0;
}

int
jobs_adopt_load(struct daemon *d, int *n)
{
	struct adopt_ctx c;
	int rc;

	c.d = d;
	c.now = clock_wall_ms();
	c.n = 0;
	rc = store_jobs_unended(d->store, adopt_one, &c);
	*n = c.n;
	return rc;
}
