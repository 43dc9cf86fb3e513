/*
 * Ending a job's process tree: SIGTERM to its process group and every
 * process found in its tree, SIGKILL to what is left after the grace
 * period (config grace_ms). Why a job is terminated (breach, cancel) is
 * decided elsewhere; this file only makes it happen.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>

#include <uv.h>

#include "jobs-internal.h"
#include "log.h"
#include "proctree.h"
#include "spawn.h"

static pid_t sig_pids[PROCTREE_MAX_PIDS];

void
jobs_kill_signal(struct jrec *r, int sig)
{
	pid_t pgid = 0;
	int n;

	if (r->tree == NULL)
		return;
	n = proctree_pids(r->tree, sig_pids, PROCTREE_MAX_PIDS, &pgid);
	if (n < 0) {
		/* Fall back to what is certainly ours: the group. */
		n = 0;
		pgid = r->j->pgid;
	}
	if ((size_t)n > PROCTREE_MAX_PIDS)
		n = PROCTREE_MAX_PIDS;
	if (r->js->ops->signal_tree(pgid, sig_pids, (size_t)n, sig) < 0)
		log_warnx("jobs: job %" PRId64 ": signal %d failed", r->j->id,
		          sig);
	log_debug("jobs: job %" PRId64 ": signal %d to group %d and %d pids",
	          r->j->id, sig, (int)pgid, n);
}

static void
kill_timer_closed(uv_handle_t *h)
{
	free(h);
}

void
jobs_kill_stop_timer(struct jrec *r)
{
	if (r->kill_timer != NULL) {
		uv_timer_stop(r->kill_timer);
		uv_close((uv_handle_t *)r->kill_timer, kill_timer_closed);
		r->kill_timer = NULL;
	}
}

static void
kill_timer_cb(uv_timer_t *t)
{
	struct jrec *r = t->data;
	struct daemon *d = r->js->d;

	r->signalled_kill = 1;
	jobs_kill_signal(r, SIGKILL);
	jobs_kill_stop_timer(r);
	if (r->done)
		jobs_admit_soon(d); /* reaps it */
}

/* SIGTERM to the tree now, SIGKILL after the grace period. */
void
jobs_kill_term(struct daemon *d, struct jrec *r)
{
	jobs_kill_signal(r, SIGTERM);
	if (r->kill_timer != NULL)
		return;
	r->kill_timer = malloc(sizeof *r->kill_timer);
	if (r->kill_timer == NULL) {
		jobs_kill_signal(r, SIGKILL);
		return;
	}
	uv_timer_init(d->loop, r->kill_timer);
	r->kill_timer->data = r;
	uv_timer_start(r->kill_timer, kill_timer_cb,
	               (uint64_t)(d->cfg.grace_ms > 0 ? d->cfg.grace_ms : 0),
	               0);
}

/*
 * Start terminating a running job: reason is what its record will say
 * (detail, malloc'd, is consumed). The signal goes first: a write can wait
 * out the busy timeout or a disk stalled by the very swapping being
 * stopped, and enforcement never waits on storage. The reason is committed
 * next, so a daemon restart still knows why the job ended.
 */
void
jobs_kill_start(struct daemon *d, struct jrec *r, const char *reason,
                char *detail)
{
	if (r->term_reason != NULL) {
		free(detail);
		return;
	}
	r->term_reason = reason;
	r->term_detail = detail;
	if (r->tree == NULL)
		r->term_pending = 1;
	else
		jobs_kill_term(d, r);
	/* Also for a breach that will requeue: a restarted daemon then
	 * carries the kill on and requeues just the same (the requeue
	 * clears the reason again). */
	free(r->j->end_reason);
	r->j->end_reason = xstrdup(reason);
	jrec_commit(d, r);
}
