/*
 * Admission: strict head of line over a queue the caller keeps ordered by
 * priority then submission. docs/jobs.md ("Admission") is the rule's home.
 */
#include <stddef.h>
#include <stdint.h>

#include "admit.h"

const char *
admit_wait_name(enum admit_wait w)
{
	switch (w) {
	case ADMIT_WAIT_NONE:
		return "none";
	case ADMIT_WAIT_FREE:
		return "free";
	case ADMIT_WAIT_SETTLE:
		return "settle";
	case ADMIT_WAIT_EXPECT:
		return "expect";
	case ADMIT_WAIT_EXCLUSIVE:
		return "exclusive";
	case ADMIT_WAIT_MAX_RUNNING:
		return "max_running";
	case ADMIT_WAIT_HEAD:
		return "head";
	case ADMIT_WAIT_STORAGE:
		return "storage";
	}
	return "unknown";
}

int
admit_settled(const struct admit_running *r, int64_t now_ms,
              const struct admit_config *cfg)
{
	uint64_t first, last;
	size_t window;

	if (now_ms - r->admitted_ms >= cfg->settle_ms)
		return 1;
	window = cfg->settle_samples > 1 ? (size_t)cfg->settle_samples : 1;
	/* A job not yet sampled that often (or not started at all) has not
	 * shown that it stopped growing. */
	if (r->recent_footprints == NULL || r->nrecent < window)
		return 0;
	first = r->recent_footprints[r->nrecent - window];
	last = r->recent_footprints[r->nrecent - 1];
	if (last <= first)
		return 1;
	/* Growth below settle_growth_pct of where the window started. */
	return (double)(last - first) * 100.0 <
	       cfg->settle_growth_pct * (double)first;
}

/* The job admitted most recently among those holding memory, or NULL. */
static const struct admit_running *
admit_latest(const struct admit_running *running, size_t n)
{
	const struct admit_running *latest = NULL;
	size_t i;

	for (i = 0; i < n; i++) {
		if (latest == NULL ||
		    running[i].admitted_ms > latest->admitted_ms ||
		    (running[i].admitted_ms == latest->admitted_ms &&
		     running[i].job_id > latest->job_id))
			latest = &running[i];
	}
	return latest;
}

/* Why the head may not start now, or ADMIT_WAIT_NONE when it may. The
 * order decides which reason is shown when several hold: the daemon's own
 * state first, then the most structural, then memory, then the transient
 * settle wait. */
static enum admit_wait
admit_head_wait(const struct admit_input *in, const struct admit_queued *head,
                const struct admit_result *res)
{
	const struct admit_running *latest;
	size_t i;

	if (!in->storage_ok)
		return ADMIT_WAIT_STORAGE;
	if (in->nrunning > 0 && head->exclusive)
		return ADMIT_WAIT_EXCLUSIVE;
	for (i = 0; i < in->nrunning; i++)
		if (in->running[i].exclusive)
			return ADMIT_WAIT_EXCLUSIVE;
	if (in->cfg.max_running > 0 &&
	    in->nrunning >= (size_t)in->cfg.max_running)
		return ADMIT_WAIT_MAX_RUNNING;
	if (!in->have_sample || res->free_pct < head->wait_free_pct)
		return ADMIT_WAIT_FREE;
	if (res->effective_free_pct < head->wait_free_pct)
		return ADMIT_WAIT_EXPECT;
	latest = admit_latest(in->running, in->nrunning);
	if (latest != NULL && !admit_settled(latest, in->now_ms, &in->cfg))
		return ADMIT_WAIT_SETTLE;
	return ADMIT_WAIT_NONE;
}

void
admit_decide(const struct admit_input *in, enum admit_wait *waits,
             struct admit_result *res)
{
	enum admit_wait head_wait;
	uint64_t reserved = 0;
	size_t i;

	res->admit = -1;
	res->free_pct = 0;
	res->effective_free_pct = 0;
	/* Memory promised to running jobs that they have not taken yet. */
	for (i = 0; i < in->nrunning; i++) {
		const struct admit_running *r = &in->running[i];
		if (r->expect_bytes > r->footprint_bytes)
			reserved += r->expect_bytes - r->footprint_bytes;
	}
	res->reserved_bytes = reserved;
	if (in->have_sample && in->total_bytes > 0) {
		res->free_pct = in->free_pct;
		res->effective_free_pct =
		    in->free_pct -
		    (double)reserved * 100.0 / (double)in->total_bytes;
		if (res->effective_free_pct < 0)
			res->effective_free_pct = 0;
	}
	if (in->nqueued == 0)
		return;

	head_wait = admit_head_wait(in, &in->queued[0], res);
	if (head_wait == ADMIT_WAIT_NONE)
		res->admit = 0;
	if (waits == NULL)
		return;
	waits[0] = head_wait;
	/* Strict head of line: nobody overtakes the head, even a job that
	 * would fit. */
	for (i = 1; i < in->nqueued; i++)
		waits[i] = ADMIT_WAIT_HEAD;
}
