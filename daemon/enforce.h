/*
 * The breach decision, as a pure function: swap growth per job, which job
 * (if any) to terminate now, and what happens to the others once it has
 * exited. No I/O. docs/jobs.md ("Swap budgets") is the rule's home.
 */
#ifndef SL_ENFORCE_H
#define SL_ENFORCE_H

#include <stddef.h>
#include <stdint.h>

struct enforce_job {
	int64_t job_id;
	int64_t admitted_ms;
	uint64_t swap_budget_bytes; /* 0: no budget */
	/* in/out: the lowest swap used seen since admission, or since the
	 * last breach kill restarted growth (job.swap_base_bytes). */
	uint64_t swap_base_bytes;
	int breach_kill; /* in: being terminated for a breach */

	uint64_t growth_bytes; /* out */
	int breaching;         /* out: growth > budget */
	int base_changed;      /* out: swap_base_bytes went down */
};

/*
 * Given swap used now, update every job's base and growth and return the
 * index of the job to terminate, or -1. Of the breaching jobs the youngest
 * (admitted last) is chosen; while a breach kill is still in progress no
 * other victim is chosen, since its exit may be all it takes.
 */
long enforce_decide(struct enforce_job *jobs, size_t n,
                    uint64_t swap_used_bytes);

/*
 * A breach victim has exited: the survivors' growth restarts from the swap
 * used now (what grew so far is counted as the victim's). Jobs with
 * breach_kill set are left alone.
 */
void enforce_restart(struct enforce_job *jobs, size_t n,
                     uint64_t swap_used_bytes);

/* After a breach on attempt `attempt` (1-based): 1 when the job goes back
 * to the queue for another attempt, 0 when it ends killed(swap_budget). */
int enforce_requeues(int attempt, int retry_on_breach);

#endif
