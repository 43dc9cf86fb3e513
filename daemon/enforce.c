/*
 * Swap-budget enforcement decisions. Swap used is a system-wide number, so
 * a job's growth is measured against the lowest value seen while it ran:
 * swap freed by others never counts as the job's headroom, and swap that
 * was used before it started never counts against it.
 */
#include <stddef.h>
#include <stdint.h>

#include "enforce.h"

long
enforce_decide(struct enforce_job *jobs, size_t n, uint64_t swap_used_bytes)
{
	long victim = -1;
	int kill_in_progress = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		struct enforce_job *j = &jobs[i];

		j->base_changed = 0;
		if (swap_used_bytes < j->swap_base_bytes) {
			j->swap_base_bytes = swap_used_bytes;
			j->base_changed = 1;
		}
		j->growth_bytes = swap_used_bytes - j->swap_base_bytes;
		j->breaching = j->swap_budget_bytes > 0 &&
		               j->growth_bytes > j->swap_budget_bytes;
		if (j->breach_kill)
			kill_in_progress = 1;
		if (!j->breaching || j->breach_kill)
			continue;
		if (victim < 0 || j->admitted_ms > jobs[victim].admitted_ms ||
		    (j->admitted_ms == jobs[victim].admitted_ms &&
		     j->job_id > jobs[victim].job_id))
			victim = (long)i;
	}
	return kill_in_progress ? -1 : victim;
}

void
enforce_restart(struct enforce_job *jobs, size_t n, uint64_t swap_used_bytes)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (jobs[i].breach_kill)
			continue;
		jobs[i].base_changed =
		    jobs[i].swap_base_bytes != swap_used_bytes;
		jobs[i].swap_base_bytes = swap_used_bytes;
		jobs[i].growth_bytes = 0;
		jobs[i].breaching = 0;
	}
}

int
enforce_requeues(int attempt, int retry_on_breach)
{
	/* retry_on_breach N allows N more attempts after the first. */
	return attempt <= retry_on_breach;
}
