/*
 * The keep-awake rule (daemon/awake.c) on fixture queues: which waits
 * count, a job holding memory against a waiting queue, the
 * keep_awake_queue bound (12 h by default) and the switches that turn it
 * off.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "awake.h"

#define HOUR_MS (3600LL * 1000)
#define T0 1764480000000LL /* an evening, ms since the epoch */

/* The rule's input for a queue: queued jobs waiting on waits[0..n), and
 * holding jobs admitted or running. */
static struct awake_in
queue(const enum admit_wait *waits, size_t n, int holding, int64_t now_ms,
      int64_t last_admit_ms)
{
	struct awake_in in = {
	    .enabled = 1,
	    .queue_ms = 12 * HOUR_MS,
	    .holding = holding,
	    .now_ms = now_ms,
	    .last_admit_ms = last_admit_ms,
	};
	size_t i;

	for (i = 0; i < n; i++)
		in.ready += awake_wait_counts(waits[i]);
	return in;
}

static void
test_waits_that_count(void **state)
{
	enum admit_wait w;

	(void)state;
	/* Waiting on the machine: memory, settle, a reservation, its turn,
	 * a running job, the database. */
	assert_true(awake_wait_counts(ADMIT_WAIT_NONE));
	assert_true(awake_wait_counts(ADMIT_WAIT_FREE));
	assert_true(awake_wait_counts(ADMIT_WAIT_SETTLE));
	assert_true(awake_wait_counts(ADMIT_WAIT_EXPECT));
	assert_true(awake_wait_counts(ADMIT_WAIT_EXCLUSIVE));
	assert_true(awake_wait_counts(ADMIT_WAIT_MAX_RUNNING));
	assert_true(awake_wait_counts(ADMIT_WAIT_HEAD));
	assert_true(awake_wait_counts(ADMIT_WAIT_STORAGE));
	assert_true(awake_wait_counts(ADMIT_WAIT_GROUP));
	/* Waiting on a person: a hold, a dependency, a client gone. */
	assert_false(awake_wait_counts(ADMIT_WAIT_HELD));
	assert_false(awake_wait_counts(ADMIT_WAIT_AFTER));
	assert_false(awake_wait_counts(ADMIT_WAIT_CLIENT));
	/* Every wait has an answer (a new one must be placed). */
	for (w = ADMIT_WAIT_NONE; w <= ADMIT_WAIT_LAST; w++)
		assert_in_range(awake_wait_counts(w), 0, 1);
}

static void
test_running_job_holds(void **state)
{
	static const enum admit_wait held[] = {ADMIT_WAIT_HELD};
	struct awake_in in = queue(held, 1, 1, T0 + 20 * HOUR_MS, T0);
	struct awake_out out;

	(void)state;
	awake_decide(&in, &out);
	/* A running job holds past the queue's bound: its work would stop. */
	assert_int_equal(out.hold, AWAKE_JOBS);
	assert_string_equal(awake_hold_name(out.hold), "jobs");
	assert_int_equal(out.until_ms, 0);
	assert_non_null(strstr(out.why, "holds memory"));
}

static void
test_overnight_queue(void **state)
{
	/* 22:00 the last job was admitted; two wait for memory, one is held
	 * and one waits for another job. */
	static const enum admit_wait waits[] = {
	    ADMIT_WAIT_FREE, ADMIT_WAIT_HEAD, ADMIT_WAIT_HELD,
	    ADMIT_WAIT_AFTER};
	struct awake_in in = queue(waits, 4, 0, T0 + HOUR_MS, T0);
	struct awake_out out;

	(void)state;
	assert_int_equal(in.ready, 2);
	awake_decide(&in, &out);
	assert_int_equal(out.hold, AWAKE_QUEUE);
	assert_string_equal(awake_hold_name(out.hold), "queue");
	assert_int_equal(out.until_ms, T0 + 12 * HOUR_MS);
	assert_non_null(strstr(out.why, "AC power"));

	/* A minute before the bound: still held. */
	in.now_ms = T0 + 12 * HOUR_MS - 60000;
	awake_decide(&in, &out);
	assert_int_equal(out.hold, AWAKE_QUEUE);
	/* At the bound and after: let go, and info says why. */
	in.now_ms = T0 + 12 * HOUR_MS;
	awake_decide(&in, &out);
	assert_int_equal(out.hold, AWAKE_NONE);
	assert_null(awake_hold_name(out.hold));
	assert_int_equal(out.until_ms, T0 + 12 * HOUR_MS);
	assert_non_null(strstr(out.why, "keep_awake_queue"));
	in.now_ms = T0 + 30 * HOUR_MS;
	awake_decide(&in, &out);
	assert_int_equal(out.hold, AWAKE_NONE);

	/* An admission at 09:00 starts the bound again. */
	in.last_admit_ms = T0 + 11 * HOUR_MS;
	in.now_ms = T0 + 13 * HOUR_MS;
	awake_decide(&in, &out);
	assert_int_equal(out.hold, AWAKE_QUEUE);
	assert_int_equal(out.until_ms, T0 + 23 * HOUR_MS);
}

static void
test_queue_of_people_does_not_hold(void **state)
{
	/* Only held jobs, jobs after others and clients gone: nothing to
	 * stay awake for. */
	static const enum admit_wait waits[] = {
	    ADMIT_WAIT_HELD, ADMIT_WAIT_AFTER, ADMIT_WAIT_CLIENT};
	struct awake_in in = queue(waits, 3, 0, T0 + 60000, T0);
	struct awake_out out;

	(void)state;
	awake_decide(&in, &out);
	assert_int_equal(out.hold, AWAKE_NONE);
	assert_null(out.why);
	/* An empty queue, nothing running. */
	in = queue(NULL, 0, 0, T0, T0);
	awake_decide(&in, &out);
	assert_int_equal(out.hold, AWAKE_NONE);
}

static void
test_switches(void **state)
{
	static const enum admit_wait waits[] = {ADMIT_WAIT_FREE};
	struct awake_in in = queue(waits, 1, 1, T0 + 60000, T0);
	struct awake_out out;

	(void)state;
	/* keep_awake = 0: never, not even for a running job. */
	in.enabled = 0;
	awake_decide(&in, &out);
	assert_int_equal(out.hold, AWAKE_NONE);
	/* keep_awake_queue = 0: running jobs only. */
	in.enabled = 1;
	in.queue_ms = 0;
	awake_decide(&in, &out);
	assert_int_equal(out.hold, AWAKE_JOBS);
	in.holding = 0;
	awake_decide(&in, &out);
	assert_int_equal(out.hold, AWAKE_NONE);
	assert_non_null(strstr(out.why, "keep_awake_queue = 0"));
}

static void
test_clock_set_back(void **state)
{
	/* The last admission lies ahead of now: the bound counts from now,
	 * never past queue_ms. */
	static const enum admit_wait waits[] = {ADMIT_WAIT_SETTLE};
	struct awake_in in = queue(waits, 1, 0, T0, T0 + 5 * HOUR_MS);
	struct awake_out out;

	(void)state;
	awake_decide(&in, &out);
	assert_int_equal(out.hold, AWAKE_QUEUE);
	assert_int_equal(out.until_ms, T0 + 12 * HOUR_MS);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_waits_that_count),
	    cmocka_unit_test(test_running_job_holds),
	    cmocka_unit_test(test_overnight_queue),
	    cmocka_unit_test(test_queue_of_people_does_not_hold),
	    cmocka_unit_test(test_switches),
	    cmocka_unit_test(test_clock_set_back),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
