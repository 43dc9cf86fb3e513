/*
 * Admission: the queue's order and who may start, over a queue the caller
 * puts in order with admit_order. docs/jobs.md ("Queue order",
 * "Admission") is the rules' home.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "admit.h"

const char *
admit_wait_name(enum admit_wait w)
{
	return names_wait_name((int)w);
}

/* ---- order ---- */

/* By user, then as each user's own jobs are ordered: what admit_order
 * needs to find each user's counts and oldest job in one walk. */
static int
cmp_by_user(const void *a, const void *b)
{
	const struct admit_queued *x = a, *y = b;

	if (x->uid != y->uid)
		return x->uid < y->uid ? -1 : 1;
	if (x->priority != y->priority)
		return x->priority > y->priority ? -1 : 1;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return x->job_id < y->job_id ? -1 : x->job_id > y->job_id;
}

static int
cmp_queue(const void *a, const void *b)
{
	const struct admit_queued *x = a, *y = b;

	if (x->priority != y->priority)
		return x->priority > y->priority ? -1 : 1;
	if (x->holding != y->holding)
		return x->holding < y->holding ? -1 : 1;
	if (x->user_first != y->user_first)
		return x->user_first < y->user_first ? -1 : 1;
	/* Two users whose oldest jobs share a seq (never, as seq is an id;
	 * but the order must be total). */
	if (x->uid != y->uid)
		return x->uid < y->uid ? -1 : 1;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return x->job_id < y->job_id ? -1 : x->job_id > y->job_id;
}

void
admit_order(struct admit_queued *q, size_t n,
            const struct admit_running *running, size_t nrunning)
{
	size_t i, k, u, holding;

	if (n == 0)
		return;
	qsort(q, n, sizeof *q, cmp_by_user);
	for (u = 0; u < n; u = i) {
		/* One user: q[u..i). Users are few; so is a scan of the
		 * running jobs per user. */
		for (i = u; i < n && q[i].uid == q[u].uid; i++)
			;
		holding = 0;
		for (k = 0; k < nrunning; k++)
			if (running[k].uid == q[u].uid)
				holding++;
		for (k = u; k < i; k++) {
			q[k].holding = holding;
			/* The first of each priority is that user's oldest
			 * at that priority. */
			q[k].user_first =
			    k > u && q[k].priority == q[k - 1].priority
			        ? q[k - 1].user_first
			        : q[k].seq;
		}
	}
	qsort(q, n, sizeof *q, cmp_queue);
}

/* ---- who may start ---- */

int
admit_settled(const struct admit_running *r, int64_t now_ms,
              const struct admit_config *cfg)
{
	uint64_t first, last;
	size_t window;

	if (now_ms - r->admitted_ms >= cfg->settle_ms)
		return 1;
	if (r->recent_footprints == NULL || r->nrecent == 0)
		return 0;
	last = r->recent_footprints[r->nrecent - 1];
	if (r->recent_ms != NULL && cfg->settle_window_ms > 0) {
		/* Over the last settle_window_ms, at any rate: the newest
		 * sample at least that much older than the last (a tenth of
		 * the window's slack for a timer's jitter). A job not
		 * sampled that long has not shown it stopped growing,
		 * unless the ring is full: then its oldest. */
		int64_t edge = r->recent_ms[r->nrecent - 1] -
		               cfg->settle_window_ms +
		               cfg->settle_window_ms / 10;
		size_t k = r->nrecent;

		while (k > 0 && r->recent_ms[k - 1] > edge)
			k--;
		if (k == 0 && r->nrecent < ADMIT_RECENT_MAX)
			return 0;
		first = r->recent_footprints[k > 0 ? k - 1 : 0];
	} else {
		window =
		    cfg->settle_samples > 1 ? (size_t)cfg->settle_samples : 1;
		/* A job not yet sampled that often (or not started at
		 * all) has not shown that it stopped growing. */
		if (r->nrecent < window)
			return 0;
		first = r->recent_footprints[r->nrecent - window];
	}
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

/* What holds for every candidate alike, worked out once per decision. */
struct admit_state {
	int exclusive_running; /* an exclusive job holds memory */
	uid_t exclusive_uid;   /* its user */
	/* It is unprivileged and has held the machine alone for hol_bound
	 * since it started or since the last job passed it. */
	int exclusive_passable;
	int at_max;    /* max_running reached */
	int unsettled; /* the latest admitted job has not settled */
};

/*
 * What running job r still reserves: its expect less its footprint. An
 * unprivileged reservation (given or learned) is capped at max_wait_free %
 * of total memory and lapses once the job has settled, so that no user's
 * promise can hold every --wait-free job for long (docs/jobs.md).
 */
static uint64_t
admit_reserved(const struct admit_running *r, const struct admit_input *in)
{
	uint64_t expect = r->expect_bytes, cap;

	if (!r->privileged) {
		if (admit_settled(r, in->now_ms, &in->cfg))
			return 0;
		cap = (uint64_t)((double)in->total_bytes *
		                 in->cfg.max_wait_free_pct / 100.0);
		if (expect > cap)
			expect = cap;
	}
	return expect > r->footprint_bytes ? expect - r->footprint_bytes : 0;
}

/* Is an exclusive job running, and may a job of another user start beside
 * it? Not beside a privileged one; beside an unprivileged one once it has
 * held the machine alone for hol_bound, then once per hol_bound. */
static void
admit_exclusive(const struct admit_input *in, struct admit_state *st)
{
	const struct admit_running *r;
	int64_t since;
	size_t i;

	for (i = 0; i < in->nrunning; i++) {
		r = &in->running[i];
		if (!r->exclusive)
			continue;
		st->exclusive_running = 1;
		st->exclusive_uid = r->uid;
		since = r->admitted_ms;
		if (in->claim.exclusive_pass_ms > since)
			since = in->claim.exclusive_pass_ms;
		st->exclusive_passable =
		    !r->privileged &&
		    in->now_ms - since >= in->cfg.hol_bound_ms;
		return;
	}
}

static void
admit_passed_exclusive(const struct admit_input *in, struct admit_result *res)
{
	res->passed_exclusive = 1;
	res->claim.exclusive_pass_ms = in->now_ms;
}

/* Why job q may not start now as the head, or ADMIT_WAIT_NONE when it
 * may. The order decides which reason is shown when several hold: the
 * daemon's own state first, then the most structural, then memory, then
 * the transient settle wait. */
static enum admit_wait
admit_wait_of(const struct admit_input *in, const struct admit_state *st,
              const struct admit_queued *q, const struct admit_result *res)
{
	if (!in->storage_ok)
		return ADMIT_WAIT_STORAGE;
	if (in->nrunning > 0 && q->exclusive)
		return ADMIT_WAIT_EXCLUSIVE;
	if (st->exclusive_running &&
	    !(st->exclusive_passable && q->uid != st->exclusive_uid))
		return ADMIT_WAIT_EXCLUSIVE;
	if (st->at_max)
		return ADMIT_WAIT_MAX_RUNNING;
	if (!in->have_sample || res->free_pct < q->wait_free_pct)
		return ADMIT_WAIT_FREE;
	if (res->effective_free_pct < q->wait_free_pct)
		return ADMIT_WAIT_EXPECT;
	if (st->unsettled)
		return ADMIT_WAIT_SETTLE;
	return ADMIT_WAIT_NONE;
}

void
admit_decide(const struct admit_input *in, enum admit_wait *waits,
             struct admit_result *res)
{
	const struct admit_running *latest;
	const struct admit_queued *head;
	struct admit_state st;
	enum admit_wait w;
	uint64_t reserved = 0;
	int may_pass;
	size_t i;

	res->admit = -1;
	res->head = -1;
	res->passed = 0;
	res->passed_exclusive = 0;
	res->free_pct = 0;
	res->effective_free_pct = 0;
	res->claim = in->claim;
	/* Memory promised to running jobs that they have not taken yet. */
	for (i = 0; i < in->nrunning; i++)
		reserved += admit_reserved(&in->running[i], in);
	res->reserved_bytes = reserved;
	if (in->have_sample && in->total_bytes > 0) {
		res->free_pct = in->free_pct;
		res->effective_free_pct =
		    in->free_pct -
		    (double)reserved * 100.0 / (double)in->total_bytes;
		if (res->effective_free_pct < 0)
			res->effective_free_pct = 0;
	}

	/* The head is the first job that may be the head; the ones before
	 * it keep their places and say why they are passed over. */
	for (i = 0; i < in->nqueued; i++) {
		if (in->queued[i].blocked == ADMIT_WAIT_NONE)
			break;
		if (waits != NULL)
			waits[i] = in->queued[i].blocked;
	}
	if (i == in->nqueued) {
		res->claim.have = 0;
		return;
	}
	res->head = (long)i;
	head = &in->queued[i];

	memset(&st, 0, sizeof st);
	admit_exclusive(in, &st);
	st.at_max = in->cfg.max_running > 0 &&
	            in->nrunning >= (size_t)in->cfg.max_running;
	latest = admit_latest(in->running, in->nrunning);
	st.unsettled =
	    latest != NULL && !admit_settled(latest, in->now_ms, &in->cfg);

	/* A head of another user than the claim's starts a claim of its
	 * own; one of the same user carries it on (a job cancelled and
	 * submitted again does not start it afresh). */
	if (!res->claim.have || res->claim.uid != head->uid) {
		res->claim.have = 1;
		res->claim.uid = head->uid;
		res->claim.since_ms = in->now_ms;
	}

	w = admit_wait_of(in, &st, head, res);
	if (waits != NULL)
		waits[res->head] = w;
	if (w == ADMIT_WAIT_NONE) {
		res->admit = res->head;
		/* The queue moved: the next head starts a claim of its own. */
		res->claim.have = 0;
	}
	if (w == ADMIT_WAIT_NONE && st.exclusive_running)
		admit_passed_exclusive(in, res);
	/* Past its claim an unprivileged head that cannot start lets one job
	 * of another user start, the first that passes every rule as if it
	 * were the head. */
	may_pass = res->admit < 0 && !head->privileged &&
	           in->now_ms - res->claim.since_ms >= in->cfg.hol_bound_ms;
	for (i = (size_t)res->head + 1; i < in->nqueued; i++) {
		const struct admit_queued *q = &in->queued[i];

		if (q->blocked != ADMIT_WAIT_NONE)
			w = q->blocked;
		else if (!may_pass || q->uid == head->uid)
			w = ADMIT_WAIT_HEAD;
		else if ((w = admit_wait_of(in, &st, q, res)) ==
		         ADMIT_WAIT_NONE) {
			if (res->admit < 0) {
				res->admit = (long)i;
				res->passed = 1;
				/* The head's claim starts again. */
				res->claim.since_ms = in->now_ms;
				if (st.exclusive_running)
					admit_passed_exclusive(in, res);
			} else
				w = ADMIT_WAIT_HEAD; /* one at a time */
		}
		if (waits != NULL)
			waits[i] = w;
		else if (res->admit >= 0)
			break;
	}
}
