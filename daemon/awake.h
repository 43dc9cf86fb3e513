/*
 * When the daemon keeps the machine out of idle sleep (docs/jobs.md,
 * "Keeping the machine awake"): a rule on counts and times only, so it is
 * unit-tested on fixture queues (tests/test_awake.c); tick.c gathers the
 * inputs each sample and hands the result to platform_keep_awake.
 */
#ifndef SL_AWAKE_H
#define SL_AWAKE_H

#include <stdint.h>

#include "admit.h"
#include "platform.h"

enum awake_hold {
	AWAKE_NONE = 0, /* the machine may sleep */
	/* a job holds memory: held on battery too */
	AWAKE_JOBS = PLATFORM_AWAKE_JOBS,
	/* a queued job could start: held on AC power only */
	AWAKE_QUEUE = PLATFORM_AWAKE_QUEUE,
};

struct awake_in {
	int enabled;      /* keep_awake */
	int64_t queue_ms; /* keep_awake_queue; 0: never for the queue */
	int holding;      /* jobs admitted or running */
	int ready;        /* queued jobs awake_wait_counts says could start */
	int64_t now_ms;
	int64_t last_admit_ms; /* the last admission, or the daemon's start */
};

struct awake_out {
	enum awake_hold hold;
	/* AWAKE_QUEUE: when the queue's hold lapses; the time it lapsed
	 * when ready jobs are left waiting past it; else 0 */
	int64_t until_ms;
	const char *why; /* a static sentence for info and the log */
};

/*
 * Does a queued job waiting on w count as one that could be admitted
 * within its rules: waiting for memory, settle, its turn or a running
 * job, which the machine going to sleep would only delay? A held job, one
 * after another that has not ended, and an attached job whose client has
 * not come back wait on a person, not on the machine: they do not.
 */
int awake_wait_counts(enum admit_wait w);

/* The hold for in (see awake_hold). */
void awake_decide(const struct awake_in *in, struct awake_out *out);

/* "jobs", "queue" or NULL (none): the wire's names. */
const char *awake_hold_name(enum awake_hold h);

#endif
