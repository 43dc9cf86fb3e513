/* The queue order and admission decisions against every rule of
 * docs/jobs.md "Queue order" and "Admission". */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "admit.h"

#define GIB (1024ull * 1024 * 1024)
#define TOTAL (48 * GIB)

struct fixture {
	struct admit_queued q[8];
	struct admit_running r[8];
	enum admit_wait waits[8];
	struct admit_input in;
	struct admit_result res;
};

static void
fx_init(struct fixture *f, double free_pct)
{
	memset(f, 0, sizeof(*f));
	f->in.queued = f->q;
	f->in.running = f->r;
	f->in.have_sample = 1;
	f->in.storage_ok = 1;
	f->in.free_pct = free_pct;
	f->in.total_bytes = TOTAL;
	f->in.now_ms = 1000000;
	f->in.cfg.settle_ms = 30000;
	f->in.cfg.settle_growth_pct = 1;
	f->in.cfg.settle_samples = 3;
	f->in.cfg.max_running = 0;
}

static void
fx_queue(struct fixture *f, int64_t id, double wait_free, int exclusive)
{
	struct admit_queued *q = &f->q[f->in.nqueued++];

	q->job_id = id;
	q->wait_free_pct = wait_free;
	q->exclusive = exclusive;
}

/* A queued job of a user; seq is its submission order. */
static struct admit_queued *
fx_queue_u(struct fixture *f, int64_t id, uid_t uid, int priority,
           double wait_free)
{
	struct admit_queued *q = &f->q[f->in.nqueued++];

	q->job_id = id;
	q->uid = uid;
	q->priority = priority;
	q->seq = id;
	q->wait_free_pct = wait_free;
	q->ref = f->in.nqueued - 1;
	return q;
}

static struct admit_running *
fx_run(struct fixture *f, int64_t id, int64_t admitted_ms, uint64_t footprint,
       uint64_t expect)
{
	struct admit_running *r = &f->r[f->in.nrunning++];

	r->job_id = id;
	r->admitted_ms = admitted_ms;
	r->footprint_bytes = footprint;
	r->expect_bytes = expect;
	return r;
}

static void
fx_decide(struct fixture *f)
{
	for (size_t i = 0; i < 8; i++)
		f->waits[i] = (enum admit_wait)99;
	admit_decide(&f->in, f->waits, &f->res);
}

static void
test_empty_queue(void **state)
{
	struct fixture f;

	fx_init(&f, 50);
	fx_decide(&f);
	assert_int_equal(f.res.admit, -1);
	assert_true(f.res.free_pct == 50);
}

static void
test_wait_free(void **state)
{
	struct fixture f;

	fx_init(&f, 39.9);
	fx_queue(&f, 1, 40, 0);
	fx_decide(&f);
	assert_int_equal(f.res.admit, -1);
	assert_int_equal(f.waits[0], ADMIT_WAIT_FREE);

	f.in.free_pct = 40; /* >= is enough */
	fx_decide(&f);
	assert_int_equal(f.res.admit, 0);
	assert_int_equal(f.waits[0], ADMIT_WAIT_NONE);
}

static void
test_no_sample_holds(void **state)
{
	struct fixture f;

	fx_init(&f, 90);
	f.in.have_sample = 0;
	fx_queue(&f, 1, 0, 0);
	fx_decide(&f);
	assert_int_equal(f.res.admit, -1);
	assert_int_equal(f.waits[0], ADMIT_WAIT_FREE);
}

static void
test_strict_head_of_line(void **state)
{
	struct fixture f;

	/* The second job would fit, but the head waits, so it waits too. */
	fx_init(&f, 30);
	fx_queue(&f, 1, 40, 0);
	fx_queue(&f, 2, 10, 0);
	fx_queue(&f, 3, 0, 0);
	fx_decide(&f);
	assert_int_equal(f.res.admit, -1);
	assert_int_equal(f.waits[0], ADMIT_WAIT_FREE);
	assert_int_equal(f.waits[1], ADMIT_WAIT_HEAD);
	assert_int_equal(f.waits[2], ADMIT_WAIT_HEAD);
}

static void
test_only_head_admitted(void **state)
{
	struct fixture f;

	/* The caller orders the queue (priority, then FIFO); the decision
	 * admits its first entry and only that one. */
	fx_init(&f, 90);
	fx_queue(&f, 7, 0, 0);
	fx_queue(&f, 3, 0, 0);
	fx_decide(&f);
	assert_int_equal(f.res.admit, 0);
	assert_int_equal(f.waits[0], ADMIT_WAIT_NONE);
	assert_int_equal(f.waits[1], ADMIT_WAIT_HEAD);
}

static void
test_settle_window(void **state)
{
	struct fixture f;
	struct admit_running *r;
	uint64_t growing[] = {1 * GIB, 2 * GIB, 3 * GIB};
	uint64_t flat[] = {3 * GIB, 3 * GIB + GIB / 200, 3 * GIB + GIB / 150};
	uint64_t one_pct[] = {100 * 1000000ull, 100 * 1000000ull,
	                      101 * 1000000ull};
	uint64_t short_window[] = {1 * GIB, 1 * GIB};

	fx_init(&f, 90);
	fx_queue(&f, 2, 0, 0);
	r = fx_run(&f, 1, f.in.now_ms - 2000, 3 * GIB, 0);

	r->recent_footprints = growing;
	r->nrecent = 3;
	fx_decide(&f);
	assert_int_equal(f.res.admit, -1);
	assert_int_equal(f.waits[0], ADMIT_WAIT_SETTLE);

	/* Grew 0.67 % over the window: settled. */
	r->recent_footprints = flat;
	fx_decide(&f);
	assert_int_equal(f.res.admit, 0);

	/* Exactly 1 % is not "less than 1 %". */
	r->recent_footprints = one_pct;
	fx_decide(&f);
	assert_int_equal(f.waits[0], ADMIT_WAIT_SETTLE);

	/* Fewer samples than the window: not shown to be settled. */
	r->recent_footprints = short_window;
	r->nrecent = 2;
	fx_decide(&f);
	assert_int_equal(f.waits[0], ADMIT_WAIT_SETTLE);

	/* No samples at all (not started yet) either. */
	r->recent_footprints = NULL;
	r->nrecent = 0;
	fx_decide(&f);
	assert_int_equal(f.waits[0], ADMIT_WAIT_SETTLE);
}

/* With the samples' times, settle is judged over settle_window_ms
 * whatever the rate: three flat fast samples (0.3 s) are not enough, a
 * loader that paused between two models within the window has not
 * settled, and flat for the whole window has. */
static void
test_settle_window_in_time(void **state)
{
	struct fixture f;
	struct admit_running *r;
	uint64_t fp[20];
	int64_t ms[20];
	size_t i;

	fx_init(&f, 90);
	f.in.cfg.settle_window_ms = 1500;
	fx_queue(&f, 2, 0, 0);
	r = fx_run(&f, 1, f.in.now_ms - 5000, 3 * GIB, 0);
	/* Three samples 0.1 s apart, flat: 0.2 s observed. */
	for (i = 0; i < 3; i++) {
		fp[i] = 3 * GIB;
		ms[i] = f.in.now_ms - 200 + (int64_t)i * 100;
	}
	r->recent_footprints = fp;
	r->recent_ms = ms;
	r->nrecent = 3;
	fx_decide(&f);
	assert_int_equal(f.waits[0], ADMIT_WAIT_SETTLE);
	/* 16 samples 0.1 s apart: grew 1G at first, then flat for 1.0 s
	 * (a pause between two loads): not settled over 1.5 s. */
	for (i = 0; i < 16; i++) {
		fp[i] = i < 5 ? 2 * GIB : 3 * GIB;
		ms[i] = f.in.now_ms - 1500 + (int64_t)i * 100;
	}
	r->nrecent = 16;
	fx_decide(&f);
	assert_int_equal(f.waits[0], ADMIT_WAIT_SETTLE);
	/* Flat for all of them: settled. */
	for (i = 0; i < 16; i++)
		fp[i] = 3 * GIB;
	fx_decide(&f);
	assert_int_equal(f.res.admit, 0);
	/* The same at the normal rate: 0.5 s apart, flat over 1.5 s. */
	for (i = 0; i < 4; i++)
		ms[i] = f.in.now_ms - 1500 + (int64_t)i * 500;
	r->nrecent = 4;
	fx_decide(&f);
	assert_int_equal(f.res.admit, 0);
}

static void
test_settle_uses_last_window(void **state)
{
	struct fixture f;
	struct admit_running *r;
	/* Grew a lot early, flat over the last three samples. */
	uint64_t fp[] = {GIB, 5 * GIB, 9 * GIB, 9 * GIB, 9 * GIB};
	/* Shrinking counts as settled. */
	uint64_t shrinking[] = {9 * GIB, 8 * GIB, 7 * GIB};

	fx_init(&f, 90);
	fx_queue(&f, 2, 0, 0);
	r = fx_run(&f, 1, f.in.now_ms - 3000, 9 * GIB, 0);
	r->recent_footprints = fp;
	r->nrecent = 5;
	fx_decide(&f);
	assert_int_equal(f.res.admit, 0);

	r->recent_footprints = shrinking;
	r->nrecent = 3;
	fx_decide(&f);
	assert_int_equal(f.res.admit, 0);
}

static void
test_settle_time_passes(void **state)
{
	struct fixture f;
	struct admit_running *r;
	uint64_t growing[] = {1 * GIB, 2 * GIB, 3 * GIB};

	fx_init(&f, 90);
	fx_queue(&f, 2, 0, 0);
	r = fx_run(&f, 1, f.in.now_ms - 29999, 3 * GIB, 0);
	r->recent_footprints = growing;
	r->nrecent = 3;
	fx_decide(&f);
	assert_int_equal(f.waits[0], ADMIT_WAIT_SETTLE);

	r->admitted_ms = f.in.now_ms - 30000;
	fx_decide(&f);
	assert_int_equal(f.res.admit, 0);

	/* settle_ms 0: no settle wait at all. */
	r->admitted_ms = f.in.now_ms;
	f.in.cfg.settle_ms = 0;
	fx_decide(&f);
	assert_int_equal(f.res.admit, 0);
}

static void
test_settle_only_latest_admitted(void **state)
{
	struct fixture f;
	struct admit_running *old, *young;
	uint64_t growing[] = {1 * GIB, 2 * GIB, 3 * GIB};
	uint64_t flat[] = {3 * GIB, 3 * GIB, 3 * GIB};

	fx_init(&f, 90);
	fx_queue(&f, 3, 0, 0);
	old = fx_run(&f, 1, f.in.now_ms - 5000, 3 * GIB, 0);
	young = fx_run(&f, 2, f.in.now_ms - 2000, 3 * GIB, 0);
	/* The older job still grows; only the previous admission counts. */
	old->recent_footprints = growing;
	old->nrecent = 3;
	young->recent_footprints = flat;
	young->nrecent = 3;
	fx_decide(&f);
	assert_int_equal(f.res.admit, 0);

	old->recent_footprints = flat;
	young->recent_footprints = growing;
	fx_decide(&f);
	assert_int_equal(f.waits[0], ADMIT_WAIT_SETTLE);
}

static void
test_expect_reservation(void **state)
{
	struct fixture f;
	struct admit_running *r;
	uint64_t flat[] = {4 * GIB, 4 * GIB, 4 * GIB};

	/* 48G total, 50 % free = 24G available. Job 1 expects 16G and has
	 * 4G: 12G promised, so effective free = (24 - 12) / 48 = 25 %. */
	fx_init(&f, 50);
	fx_queue(&f, 2, 30, 0);
	r = fx_run(&f, 1, f.in.now_ms - 1000, 4 * GIB, 16 * GIB);
	r->privileged =
	    1; /* whole and lasting: test_reservation_unprivileged */
	r->recent_footprints = flat;
	r->nrecent = 3;
	fx_decide(&f);
	assert_int_equal(f.res.admit, -1);
	assert_int_equal(f.waits[0], ADMIT_WAIT_EXPECT);
	assert_true(f.res.reserved_bytes == 12 * GIB);
	assert_true(f.res.effective_free_pct > 24.999 &&
	            f.res.effective_free_pct < 25.001);

	/* Lower wait_free: 25 % effective is enough. */
	f.q[0].wait_free_pct = 25;
	fx_decide(&f);
	assert_int_equal(f.res.admit, 0);

	/* Once the footprint reached expect, nothing is reserved. */
	f.q[0].wait_free_pct = 30;
	r->footprint_bytes = 17 * GIB;
	fx_decide(&f);
	assert_true(f.res.reserved_bytes == 0);
	assert_int_equal(f.res.admit, 0);
}

static void
test_expect_sums_and_clamps(void **state)
{
	struct fixture f;

	/* Two jobs not started (footprint 0): their whole expects count;
	 * reservations beyond what is free clamp the effective at 0. */
	fx_init(&f, 25);
	f.in.cfg.settle_ms = 0;
	fx_queue(&f, 3, 0, 0);
	fx_run(&f, 1, f.in.now_ms, 0, 10 * GIB)->privileged = 1;
	fx_run(&f, 2, f.in.now_ms, 0, 10 * GIB)->privileged = 1;
	fx_decide(&f);
	assert_true(f.res.reserved_bytes == 20 * GIB);
	assert_true(f.res.effective_free_pct == 0);
	/* wait_free 0 still admits at effective 0 %. */
	assert_int_equal(f.res.admit, 0);

	f.q[0].wait_free_pct = 1;
	fx_decide(&f);
	assert_int_equal(f.waits[0], ADMIT_WAIT_EXPECT);
}

static void
test_reservation_unprivileged(void **state)
{
	struct fixture f;
	struct admit_running *r;
	uint64_t growing[] = {1 * GIB, 2 * GIB, 4 * GIB};
	uint64_t flat[] = {4 * GIB, 4 * GIB, 4 * GIB};

	/* An ordinary user's job expecting all 48G reserves at most
	 * max_wait_free (50 % here) of total while it grows... */
	fx_init(&f, 90);
	f.in.cfg.max_wait_free_pct = 50;
	fx_queue(&f, 2, 30, 0);
	r = fx_run(&f, 1, f.in.now_ms - 1000, 4 * GIB, 48 * GIB);
	r->recent_footprints = growing;
	r->nrecent = 3;
	fx_decide(&f);
	assert_true(f.res.reserved_bytes == 20 * GIB); /* 24G less 4G */
	/* ...and nothing once it has settled. */
	r->recent_footprints = flat;
	fx_decide(&f);
	assert_true(f.res.reserved_bytes == 0);
	/* Root's (or the admin group's) is whole and lasts. */
	r->privileged = 1;
	fx_decide(&f);
	assert_true(f.res.reserved_bytes == 44 * GIB);
	r->recent_footprints = growing;
	fx_decide(&f);
	assert_true(f.res.reserved_bytes == 44 * GIB);
}

static void
test_exclusive_passed_after_hol(void **state)
{
	struct fixture f;
	struct admit_running *r;
	const int64_t hol = 600000;

	/* User 1000's exclusive job runs; user 2000's job fits. */
	fx_init(&f, 90);
	f.in.cfg.settle_ms = 0;
	f.in.cfg.hol_bound_ms = hol;
	fx_queue_u(&f, 2, 1000, 0, 10);
	fx_queue_u(&f, 3, 2000, 0, 10);
	r = fx_run(&f, 1, f.in.now_ms - hol + 1, GIB, 0);
	r->uid = 1000;
	r->exclusive = 1;
	fx_decide(&f);
	assert_int_equal(f.res.admit, -1);
	assert_int_equal(f.waits[0], ADMIT_WAIT_EXCLUSIVE);
	/* Alone for hol_bound: one job of another user starts beside it,
	 * passing the head, which is the exclusive job's user's own. */
	r->admitted_ms = f.in.now_ms - hol;
	f.in.claim.have = 1;
	f.in.claim.uid = 1000;
	f.in.claim.since_ms = f.in.now_ms - hol;
	fx_decide(&f);
	assert_int_equal(f.res.admit, 1);
	assert_int_equal(f.res.passed_exclusive, 1);
	assert_int_equal(f.waits[0], ADMIT_WAIT_EXCLUSIVE);
	assert_true(f.res.claim.exclusive_pass_ms == f.in.now_ms);
	/* Once per hol_bound: with the claim it was given back, nobody
	 * until another bound has gone by. */
	f.in.claim = f.res.claim;
	f.in.now_ms += hol - 1;
	fx_decide(&f);
	assert_int_equal(f.res.admit, -1);
	f.in.now_ms += 1;
	fx_decide(&f);
	assert_int_equal(f.res.admit, 1);
	/* A privileged exclusive job is never passed. */
	f.in.claim = f.res.claim;
	f.in.now_ms += 10 * hol;
	r->privileged = 1;
	fx_decide(&f);
	assert_int_equal(f.res.admit, -1);
	assert_int_equal(f.waits[1], ADMIT_WAIT_EXCLUSIVE);
}

static void
test_exclusive_head(void **state)
{
	struct fixture f;

	fx_init(&f, 90);
	f.in.cfg.settle_ms = 0;
	fx_queue(&f, 2, 0, 1);
	fx_run(&f, 1, f.in.now_ms - 100000, GIB, 0);
	fx_decide(&f);
	assert_int_equal(f.res.admit, -1);
	assert_int_equal(f.waits[0], ADMIT_WAIT_EXCLUSIVE);

	f.in.nrunning = 0;
	fx_decide(&f);
	assert_int_equal(f.res.admit, 0);
}

static void
test_exclusive_running(void **state)
{
	struct fixture f;
	struct admit_running *r;

	/* While an exclusive job runs nothing else starts. */
	fx_init(&f, 90);
	f.in.cfg.settle_ms = 0;
	fx_queue(&f, 2, 0, 0);
	r = fx_run(&f, 1, f.in.now_ms - 100000, GIB, 0);
	r->exclusive = 1;
	fx_decide(&f);
	assert_int_equal(f.waits[0], ADMIT_WAIT_EXCLUSIVE);
	assert_int_equal(f.waits[1], 99); /* only nqueued entries written */
}

static void
test_max_running(void **state)
{
	struct fixture f;

	fx_init(&f, 90);
	f.in.cfg.settle_ms = 0;
	f.in.cfg.max_running = 2;
	fx_queue(&f, 3, 0, 0);
	fx_queue(&f, 4, 0, 0);
	fx_run(&f, 1, f.in.now_ms - 10000, GIB, 0);
	fx_decide(&f);
	assert_int_equal(f.res.admit, 0);

	fx_run(&f, 2, f.in.now_ms - 5000, GIB, 0);
	fx_decide(&f);
	assert_int_equal(f.res.admit, -1);
	assert_int_equal(f.waits[0], ADMIT_WAIT_MAX_RUNNING);
	assert_int_equal(f.waits[1], ADMIT_WAIT_HEAD);

	f.in.cfg.max_running = 0; /* no limit */
	fx_decide(&f);
	assert_int_equal(f.res.admit, 0);
}

static void
test_reason_order(void **state)
{
	struct fixture f;
	struct admit_running *r;
	uint64_t growing[] = {1 * GIB, 2 * GIB, 3 * GIB};

	/* Free too low and the previous job unsettled: free is shown. */
	fx_init(&f, 10);
	fx_queue(&f, 2, 40, 0);
	r = fx_run(&f, 1, f.in.now_ms - 1000, 3 * GIB, 0);
	r->recent_footprints = growing;
	r->nrecent = 3;
	fx_decide(&f);
	assert_int_equal(f.waits[0], ADMIT_WAIT_FREE);
	/* Enough free: now it is the settle wait. */
	f.in.free_pct = 60;
	fx_decide(&f);
	assert_int_equal(f.waits[0], ADMIT_WAIT_SETTLE);
}

/* ---- queue order ---- */

static void
order_of(struct fixture *f, int64_t *ids)
{
	admit_order(f->q, f->in.nqueued, f->r, f->in.nrunning);
	for (size_t i = 0; i < f->in.nqueued; i++)
		ids[i] = f->q[i].job_id;
}

static void
test_order_priority_then_submission(void **state)
{
	struct fixture f;
	int64_t ids[8];

	/* One user: priority, then submission, whatever order they come
	 * in. */
	fx_init(&f, 50);
	fx_queue_u(&f, 3, 1000, 0, 0);
	fx_queue_u(&f, 1, 1000, 0, 0);
	fx_queue_u(&f, 4, 1000, 5, 0);
	fx_queue_u(&f, 2, 1000, -3, 0);
	order_of(&f, ids);
	assert_int_equal(ids[0], 4);
	assert_int_equal(ids[1], 1);
	assert_int_equal(ids[2], 3);
	assert_int_equal(ids[3], 2);
}

static void
test_order_fewest_holding_first(void **state)
{
	struct fixture f;
	int64_t ids[8];

	/* A (1000) holds one job, B (2000) none: at equal priority B's
	 * jobs go first though A's were submitted before them; a priority
	 * still goes first of all. */
	fx_init(&f, 50);
	fx_run(&f, 90, f.in.now_ms - 1000, GIB, 0)->uid = 1000;
	fx_queue_u(&f, 1, 1000, 0, 0);
	fx_queue_u(&f, 2, 1000, 0, 0);
	fx_queue_u(&f, 3, 2000, 0, 0);
	fx_queue_u(&f, 4, 2000, 0, 0);
	fx_queue_u(&f, 5, 0, 2, 0); /* root's, priority 2 */
	order_of(&f, ids);
	assert_int_equal(ids[0], 5);
	assert_int_equal(ids[1], 3);
	assert_int_equal(ids[2], 4);
	assert_int_equal(ids[3], 1);
	assert_int_equal(ids[4], 2);
	assert_int_equal(f.q[1].holding, 0);
	assert_int_equal(f.q[3].holding, 1);

	/* Once B holds two, A (one) goes first. */
	fx_run(&f, 91, f.in.now_ms - 900, GIB, 0)->uid = 2000;
	fx_run(&f, 92, f.in.now_ms - 800, GIB, 0)->uid = 2000;
	order_of(&f, ids);
	assert_int_equal(ids[0], 5);
	assert_int_equal(ids[1], 1);
	assert_int_equal(ids[2], 2);
	assert_int_equal(ids[3], 3);
	assert_int_equal(ids[4], 4);
}

static void
test_order_tie_oldest_user_first(void **state)
{
	struct fixture f;
	int64_t ids[8];

	/* Both hold one: the user whose oldest queued job is older goes
	 * first, all of that user's jobs, then the other's. B's oldest (2)
	 * is older than A's (3) at priority 0; A's priority -1 job does not
	 * count for priority 0. */
	fx_init(&f, 50);
	fx_run(&f, 90, f.in.now_ms - 1000, GIB, 0)->uid = 1000;
	fx_run(&f, 91, f.in.now_ms - 900, GIB, 0)->uid = 2000;
	fx_queue_u(&f, 1, 1000, -1, 0);
	fx_queue_u(&f, 2, 2000, 0, 0);
	fx_queue_u(&f, 3, 1000, 0, 0);
	fx_queue_u(&f, 4, 2000, 0, 0);
	fx_queue_u(&f, 5, 1000, 0, 0);
	order_of(&f, ids);
	assert_int_equal(ids[0], 2);
	assert_int_equal(ids[1], 4);
	assert_int_equal(ids[2], 3);
	assert_int_equal(ids[3], 5);
	assert_int_equal(ids[4], 1);
	/* ref is the caller's, carried along. */
	assert_int_equal(f.q[0].ref, 1);
	assert_int_equal(f.q[4].ref, 0);
}

static void
test_blocked_keeps_place(void **state)
{
	struct fixture f;

	/* The first job cannot be the head yet (an attached job whose
	 * client is not back): it keeps its place, says why, and the next
	 * one is the head. */
	fx_init(&f, 90);
	fx_queue_u(&f, 1, 1000, 0, 0)->blocked = ADMIT_WAIT_CLIENT;
	fx_queue_u(&f, 2, 1000, 0, 0);
	fx_queue_u(&f, 3, 1000, 0, 0);
	fx_decide(&f);
	assert_int_equal(f.res.head, 1);
	assert_int_equal(f.res.admit, 1);
	assert_int_equal(f.res.passed, 0);
	assert_int_equal(f.waits[0], ADMIT_WAIT_CLIENT);
	assert_int_equal(f.waits[1], ADMIT_WAIT_NONE);
	assert_int_equal(f.waits[2], ADMIT_WAIT_HEAD);

	/* None may be the head: nothing is admitted, no claim. */
	f.q[1].blocked = ADMIT_WAIT_CLIENT;
	f.q[2].blocked = ADMIT_WAIT_CLIENT;
	f.in.claim.have = 1;
	fx_decide(&f);
	assert_int_equal(f.res.admit, -1);
	assert_int_equal(f.res.head, -1);
	assert_int_equal(f.res.claim.have, 0);
	assert_int_equal(f.waits[2], ADMIT_WAIT_CLIENT);
}

static void
test_storage_holds(void **state)
{
	struct fixture f;

	/* While storage fails nothing is admitted, and the head says so
	 * (it used to say "none", as if it were being admitted). */
	fx_init(&f, 90);
	f.in.storage_ok = 0;
	fx_queue_u(&f, 1, 1000, 0, 40);
	fx_queue_u(&f, 2, 1000, 0, 0);
	fx_decide(&f);
	assert_int_equal(f.res.admit, -1);
	assert_int_equal(f.waits[0], ADMIT_WAIT_STORAGE);
	assert_int_equal(f.waits[1], ADMIT_WAIT_HEAD);
	assert_string_equal(admit_wait_name(ADMIT_WAIT_STORAGE), "storage");

	f.in.storage_ok = 1;
	fx_decide(&f);
	assert_int_equal(f.res.admit, 0);
}

/* ---- the head's claim (hol_bound) ---- */

#define HOL (600 * 1000)

/* A's big head (wait_free 60 at 50 % free), B's small job behind it. */
static void
fx_hol(struct fixture *f)
{
	fx_init(f, 50);
	f->in.cfg.hol_bound_ms = HOL;
	fx_queue_u(f, 1, 1000, 0, 60);
	fx_queue_u(f, 2, 1000, 0, 10); /* A's own: never passes A */
	fx_queue_u(f, 3, 2000, 0, 10);
	fx_queue_u(f, 4, 2000, 0, 10);
}

static void
test_hol_claim_starts(void **state)
{
	struct fixture f;

	/* A head with no claim yet starts one now, and holds everyone. */
	fx_hol(&f);
	fx_decide(&f);
	assert_int_equal(f.res.admit, -1);
	assert_int_equal(f.res.claim.have, 1);
	assert_int_equal(f.res.claim.uid, 1000);
	assert_true(f.res.claim.since_ms == f.in.now_ms);
	assert_int_equal(f.waits[0], ADMIT_WAIT_FREE);
	assert_int_equal(f.waits[1], ADMIT_WAIT_HEAD);
	assert_int_equal(f.waits[2], ADMIT_WAIT_HEAD);
	assert_int_equal(f.waits[3], ADMIT_WAIT_HEAD);
}

static void
test_hol_pass_after_bound(void **state)
{
	struct fixture f;

	fx_hol(&f);
	f.in.claim.have = 1;
	f.in.claim.uid = 1000;
	/* 1 ms short of the bound: the head's claim holds. */
	f.in.claim.since_ms = f.in.now_ms - HOL + 1;
	fx_decide(&f);
	assert_int_equal(f.res.admit, -1);
	assert_true(f.res.claim.since_ms == f.in.claim.since_ms);
	assert_int_equal(f.waits[2], ADMIT_WAIT_HEAD);

	/* At the bound: B's first job passes (A's own second job does
	 * not: it is the head's user), and only that one; the head keeps
	 * its place and its claim starts again. */
	f.in.claim.since_ms = f.in.now_ms - HOL;
	fx_decide(&f);
	assert_int_equal(f.res.admit, 2);
	assert_int_equal(f.res.passed, 1);
	assert_int_equal(f.res.head, 0);
	assert_int_equal(f.waits[0], ADMIT_WAIT_FREE);
	assert_int_equal(f.waits[1], ADMIT_WAIT_HEAD);
	assert_int_equal(f.waits[2], ADMIT_WAIT_NONE);
	assert_int_equal(f.waits[3], ADMIT_WAIT_HEAD);
	assert_int_equal(f.res.claim.have, 1);
	assert_int_equal(f.res.claim.uid, 1000);
	assert_true(f.res.claim.since_ms == f.in.now_ms);

	/* The next decision, with the claim it was given back, passes
	 * nobody until another bound has gone by. */
	f.in.claim = f.res.claim;
	f.in.now_ms += HOL - 1;
	fx_decide(&f);
	assert_int_equal(f.res.admit, -1);
	f.in.now_ms += 1;
	fx_decide(&f);
	assert_int_equal(f.res.admit, 2);
}

static void
test_hol_passer_obeys_rules(void **state)
{
	struct fixture f;
	struct admit_running *r;
	uint64_t growing[] = {1 * GIB, 2 * GIB, 3 * GIB};

	/* Past the bound, a job of another user that does not fit either
	 * shows its own reason; the first that fits passes. */
	fx_hol(&f);
	f.q[2].wait_free_pct = 55;
	f.in.claim.have = 1;
	f.in.claim.uid = 1000;
	f.in.claim.since_ms = f.in.now_ms - HOL;
	fx_decide(&f);
	assert_int_equal(f.res.admit, 3);
	assert_int_equal(f.waits[2], ADMIT_WAIT_FREE);

	/* Every rule, as for the head: settle holds it too. */
	r = fx_run(&f, 9, f.in.now_ms - 1000, 3 * GIB, 0);
	r->uid = 3000;
	r->recent_footprints = growing;
	r->nrecent = 3;
	fx_decide(&f);
	assert_int_equal(f.res.admit, -1);
	assert_int_equal(f.waits[3], ADMIT_WAIT_SETTLE);
	assert_true(f.res.claim.since_ms == f.in.claim.since_ms);
}

static void
test_hol_privileged_never_passed(void **state)
{
	struct fixture f;

	/* Root's (or the admin group's) head is never passed, however long
	 * it has waited. */
	fx_hol(&f);
	f.q[0].uid = 0;
	f.q[0].privileged = 1;
	f.in.claim.have = 1;
	f.in.claim.uid = 0;
	f.in.claim.since_ms = f.in.now_ms - 100 * HOL;
	fx_decide(&f);
	assert_int_equal(f.res.admit, -1);
	assert_int_equal(f.waits[2], ADMIT_WAIT_HEAD);
	assert_int_equal(f.waits[3], ADMIT_WAIT_HEAD);
}

static void
test_hol_claim_follows_user(void **state)
{
	struct fixture f;

	/* The claim is the head's user's: another job of the same user at
	 * the head (the first cancelled, another submitted) carries it on;
	 * a head of another user starts its own. */
	fx_hol(&f);
	f.in.claim.have = 1;
	f.in.claim.uid = 1000;
	f.in.claim.since_ms = f.in.now_ms - HOL;
	f.q[0].job_id = 7;
	fx_decide(&f);
	assert_int_equal(f.res.admit, 2);

	f.in.claim.uid = 2000;
	fx_decide(&f);
	assert_int_equal(f.res.admit, -1);
	assert_int_equal(f.res.claim.uid, 1000);
	assert_true(f.res.claim.since_ms == f.in.now_ms);

	/* The head admitted: the queue moved, the next head starts
	 * afresh. */
	f.in.free_pct = 70;
	fx_decide(&f);
	assert_int_equal(f.res.admit, 0);
	assert_int_equal(f.res.passed, 0);
	assert_int_equal(f.res.claim.have, 0);
}

static void
test_hol_bound_zero(void **state)
{
	struct fixture f;

	/* hol_bound 0: no sole claim, a fitting job of another user may
	 * pass at once. */
	fx_hol(&f);
	f.in.cfg.hol_bound_ms = 0;
	fx_decide(&f);
	assert_int_equal(f.res.admit, 2);
	assert_int_equal(f.res.passed, 1);
}

static void
test_wait_names(void **state)
{
	assert_string_equal(admit_wait_name(ADMIT_WAIT_FREE), "free");
	assert_string_equal(admit_wait_name(ADMIT_WAIT_SETTLE), "settle");
	assert_string_equal(admit_wait_name(ADMIT_WAIT_EXPECT), "expect");
	assert_string_equal(admit_wait_name(ADMIT_WAIT_EXCLUSIVE), "exclusive");
	assert_string_equal(admit_wait_name(ADMIT_WAIT_MAX_RUNNING),
	                    "max_running");
	assert_string_equal(admit_wait_name(ADMIT_WAIT_HEAD), "head");
	assert_string_equal(admit_wait_name(ADMIT_WAIT_STORAGE), "storage");
	assert_string_equal(admit_wait_name(ADMIT_WAIT_CLIENT), "client");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_empty_queue),
	    cmocka_unit_test(test_wait_free),
	    cmocka_unit_test(test_settle_window_in_time),
	    cmocka_unit_test(test_no_sample_holds),
	    cmocka_unit_test(test_strict_head_of_line),
	    cmocka_unit_test(test_only_head_admitted),
	    cmocka_unit_test(test_settle_window),
	    cmocka_unit_test(test_settle_uses_last_window),
	    cmocka_unit_test(test_settle_time_passes),
	    cmocka_unit_test(test_settle_only_latest_admitted),
	    cmocka_unit_test(test_expect_reservation),
	    cmocka_unit_test(test_expect_sums_and_clamps),
	    cmocka_unit_test(test_reservation_unprivileged),
	    cmocka_unit_test(test_exclusive_passed_after_hol),
	    cmocka_unit_test(test_exclusive_head),
	    cmocka_unit_test(test_exclusive_running),
	    cmocka_unit_test(test_max_running),
	    cmocka_unit_test(test_reason_order),
	    cmocka_unit_test(test_order_priority_then_submission),
	    cmocka_unit_test(test_order_fewest_holding_first),
	    cmocka_unit_test(test_order_tie_oldest_user_first),
	    cmocka_unit_test(test_blocked_keeps_place),
	    cmocka_unit_test(test_storage_holds),
	    cmocka_unit_test(test_hol_claim_starts),
	    cmocka_unit_test(test_hol_pass_after_bound),
	    cmocka_unit_test(test_hol_passer_obeys_rules),
	    cmocka_unit_test(test_hol_privileged_never_passed),
	    cmocka_unit_test(test_hol_claim_follows_user),
	    cmocka_unit_test(test_hol_bound_zero),
	    cmocka_unit_test(test_wait_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
