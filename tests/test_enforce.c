/* Breach decisions against every rule of docs/jobs.md "Swap budgets". */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "enforce.h"

#define GIB (1024ull * 1024 * 1024)
#define MIB (1024ull * 1024)

static void
job_set(struct enforce_job *j, int64_t id, int64_t admitted_ms, uint64_t budget,
        uint64_t base)
{
	memset(j, 0, sizeof(*j));
	j->job_id = id;
	j->admitted_ms = admitted_ms;
	j->swap_budget_bytes = budget;
	j->swap_base_bytes = base;
}

static void
test_growth_within_budget(void **state)
{
	struct enforce_job j;

	job_set(&j, 1, 1000, 8 * GIB, 1 * GIB);
	assert_int_equal(enforce_decide(&j, 1, 9 * GIB), -1);
	assert_true(j.growth_bytes == 8 * GIB);
	/* Growth equal to the budget is not past it. */
	assert_false(j.breaching);
	assert_false(j.base_changed);

	assert_int_equal(enforce_decide(&j, 1, 9 * GIB + 1), 0);
	assert_true(j.breaching);
	assert_true(j.growth_bytes == 8 * GIB + 1);
}

static void
test_growth_from_lowest(void **state)
{
	struct enforce_job j;

	/* Admitted at 4G swap used; swap falls to 1G, then rises to 9.5G:
	 * the growth is 8.5G, counted from the lowest point. */
	job_set(&j, 1, 1000, 8 * GIB, 4 * GIB);
	assert_int_equal(enforce_decide(&j, 1, 2 * GIB), -1);
	assert_true(j.base_changed);
	assert_true(j.swap_base_bytes == 2 * GIB);
	assert_true(j.growth_bytes == 0);
	assert_int_equal(enforce_decide(&j, 1, 1 * GIB), -1);
	assert_true(j.swap_base_bytes == 1 * GIB);
	assert_int_equal(enforce_decide(&j, 1, 5 * GIB), -1);
	assert_false(j.base_changed);
	assert_true(j.swap_base_bytes == 1 * GIB);
	assert_true(j.growth_bytes == 4 * GIB);
	assert_int_equal(enforce_decide(&j, 1, 9 * GIB + GIB / 2), 0);
	assert_true(j.growth_bytes == 8 * GIB + GIB / 2);
}

static void
test_budget_zero_never_breaches(void **state)
{
	struct enforce_job j;

	job_set(&j, 1, 1000, 0, 0);
	assert_int_equal(enforce_decide(&j, 1, 400 * GIB), -1);
	assert_false(j.breaching);
	/* Growth is still measured, for show and history. */
	assert_true(j.growth_bytes == 400 * GIB);
}

static void
test_youngest_breaching_first(void **state)
{
	struct enforce_job j[3];

	job_set(&j[0], 1, 1000, 1 * GIB, 0);
	job_set(&j[1], 2, 3000, 1 * GIB, 0);
	job_set(&j[2], 3, 2000, 1 * GIB, 0);
	assert_int_equal(enforce_decide(j, 3, 2 * GIB), 1);
	assert_true(j[0].breaching && j[1].breaching && j[2].breaching);

	/* The youngest within budget is spared; the youngest breaching one
	 * goes. */
	j[1].swap_budget_bytes = 4 * GIB;
	assert_int_equal(enforce_decide(j, 3, 2 * GIB), 2);
	assert_false(j[1].breaching);

	/* Same admission time: the later id is the younger. */
	job_set(&j[0], 4, 5000, 1 * GIB, 0);
	job_set(&j[1], 5, 5000, 1 * GIB, 0);
	assert_int_equal(enforce_decide(j, 2, 2 * GIB), 1);
}

static void
test_only_breaching_one_dies(void **state)
{
	struct enforce_job j[2];

	/* Job 1 has a generous budget, job 2 (older) a tight one. */
	job_set(&j[0], 1, 1000, 1 * GIB, 0);
	job_set(&j[1], 2, 2000, 16 * GIB, 0);
	assert_int_equal(enforce_decide(j, 2, 3 * GIB), 0);
	assert_false(j[1].breaching);
}

static void
test_one_victim_at_a_time(void **state)
{
	struct enforce_job j[2];

	job_set(&j[0], 1, 1000, 1 * GIB, 0);
	job_set(&j[1], 2, 2000, 1 * GIB, 0);
	assert_int_equal(enforce_decide(j, 2, 2 * GIB), 1);
	j[1].breach_kill = 1;
	/* While job 2 is being terminated, job 1 is not chosen even though
	 * it is past its budget too. */
	assert_int_equal(enforce_decide(j, 2, 3 * GIB), -1);
	assert_true(j[0].breaching);
}

static void
test_survivors_restart(void **state)
{
	struct enforce_job j[2];

	job_set(&j[0], 1, 1000, 4 * GIB, 0);
	job_set(&j[1], 2, 2000, 4 * GIB, 0);
	/* Swap at 5G: both past 4G; the younger is chosen. */
	assert_int_equal(enforce_decide(j, 2, 5 * GIB), 1);
	j[1].breach_kill = 1;
	/* It exits with swap at 5G: the survivor's growth restarts there,
	 * so the breach does not kill it as well. */
	enforce_restart(j, 2, 5 * GIB);
	assert_true(j[0].swap_base_bytes == 5 * GIB);
	assert_true(j[0].base_changed);
	assert_true(j[0].growth_bytes == 0);
	assert_true(j[1].swap_base_bytes == 0); /* the victim untouched */

	assert_int_equal(enforce_decide(j, 1, 5 * GIB + 512 * MIB), -1);
	assert_true(j[0].growth_bytes == 512 * MIB);
	/* Swap freed as the victim's pages go lowers the base further. */
	assert_int_equal(enforce_decide(j, 1, 3 * GIB), -1);
	assert_true(j[0].swap_base_bytes == 3 * GIB);
	/* And only new growth past the budget kills the survivor. */
	assert_int_equal(enforce_decide(j, 1, 7 * GIB), -1);
	assert_int_equal(enforce_decide(j, 1, 7 * GIB + 1), 0);
}

static void
test_retries(void **state)
{
	/* No retries: the first breach is final. */
	assert_false(enforce_requeues(1, 0));
	/* Two retries: attempts 1 and 2 requeue, the third is final. */
	assert_true(enforce_requeues(1, 2));
	assert_true(enforce_requeues(2, 2));
	assert_false(enforce_requeues(3, 2));
}

static void
test_no_jobs(void **state)
{
	assert_int_equal(enforce_decide(NULL, 0, 5 * GIB), -1);
	enforce_restart(NULL, 0, 5 * GIB);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_growth_within_budget),
	    cmocka_unit_test(test_growth_from_lowest),
	    cmocka_unit_test(test_budget_zero_never_breaches),
	    cmocka_unit_test(test_youngest_breaching_first),
	    cmocka_unit_test(test_only_breaching_one_dies),
	    cmocka_unit_test(test_one_victim_at_a_time),
	    cmocka_unit_test(test_survivors_restart),
	    cmocka_unit_test(test_retries),
	    cmocka_unit_test(test_no_jobs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
