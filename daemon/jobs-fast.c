/*
 * Adaptive sampling: when the daemon should sample at its fast interval
 * (docs/jobs.md, "Sampling rate"). Fast while a job holding memory has
 * grown past fast_swap % of its budget, while swap rose lately with a
 * budget to guard, while a job admitted a few seconds ago still grows and
 * another waits for it to settle, and for a moment after a job ends while
 * another waits. An idle daemon, or one whose jobs are calm, samples at
 * the normal interval: the fast rate costs only while it can matter.
 */
#include <stdint.h>

#include "admit.h"
#include "jobs-internal.h"
#include "sampler.h"

/* Swap rose within this long: a breach may be coming. */
#define FAST_SWAP_QUIET_MS 1500
/* A job admitted this recently that still grows keeps it fast. */
#define FAST_NEW_MS 10000
/* After a job ends, while a job waits. */
#define FAST_ENDED_MS 1000

static int
jobs_fast_on(const struct daemon *d)
{
	return d->cfg.fast_interval_ms > 0 &&
	       d->cfg.fast_interval_ms < d->cfg.interval_ms;
}

void
jobs_fast_ended(struct daemon *d)
{
	struct jobs *js = d->jobs;
	size_t i;

	if (!jobs_fast_on(d))
		return;
	for (i = 0; i < js->n; i++) {
		if (jrec_is_live(js->v[i]) &&
		    js->v[i]->j->state == JOB_QUEUED) {
			js->fast_ended_until_ms =
			    clock_wall_ms() + FAST_ENDED_MS;
			sampler_soon(d);
			return;
		}
	}
}

const char *
jobs_fast_reason(struct daemon *d, const struct sys_sample *s)
{
	struct jobs *js = d->jobs;
	const struct jrec *latest = NULL;
	int budget = 0, queued = 0;
	size_t i;

	if (js == NULL)
		return NULL;
	if (js->fast_have_prev && s->swap_used_bytes > js->fast_swap_prev)
		js->fast_swap_rose_ms = s->ts_ms;
	js->fast_swap_prev = s->swap_used_bytes;
	js->fast_have_prev = 1;
	if (!jobs_fast_on(d) || js->n == 0)
		return NULL;
	for (i = 0; i < js->n; i++) {
		const struct jrec *r = js->v[i];
		const struct job *j = r->j;

		if (jrec_is_live(r) && j->state == JOB_QUEUED)
			queued = 1;
		if (!jrec_holds_memory(r))
			continue;
		if (latest == NULL || j->admitted_ms > latest->j->admitted_ms)
			latest = r;
		if (j->swap_budget_bytes == 0)
			continue;
		budget = 1;
		if ((double)r->growth_bytes * 100.0 >
		    d->cfg.fast_swap_pct * (double)j->swap_budget_bytes)
			return "swap growth near a budget";
	}
	if (budget && js->fast_swap_rose_ms > 0 &&
	    s->ts_ms - js->fast_swap_rose_ms < FAST_SWAP_QUIET_MS)
		return "swap rising";
	if (!queued)
		return NULL;
	if (s->ts_ms < js->fast_ended_until_ms)
		return "a job ended";
	if (latest != NULL && d->cfg.settle_ms > 0 &&
	    s->ts_ms - latest->j->admitted_ms < FAST_NEW_MS) {
		struct admit_config cfg = {
		    .settle_ms = d->cfg.settle_ms,
		    .settle_growth_pct = d->cfg.settle_growth_pct,
		    .settle_samples = d->cfg.settle_samples,
		    .settle_window_ms =
		        (int64_t)d->cfg.settle_samples * d->cfg.interval_ms,
		};
		struct admit_running a = {
		    .admitted_ms = latest->j->admitted_ms,
		    .recent_footprints = latest->fp,
		    .recent_ms = latest->fp_ms,
		    .nrecent = latest->nfp,
		};
		if (!admit_settled(&a, s->ts_ms, &cfg))
			return "a new job is still growing";
	}
	return NULL;
}
