/*
 * The keep-awake rule (awake.h). A job that holds memory keeps the machine
 * awake for as long as it does: stopping it by sleep would stop the work
 * itself. A queue that waits for memory, settle or its turn keeps it
 * awake too, or an overnight queue would stall at the first idle timeout;
 * but only for keep_awake_queue since the last admission (a queue that
 * has not moved in that long is not going to by morning) and only on AC
 * power (the platform's queue hold is one macOS honours on AC alone).
 */
#include <stddef.h>

#include "awake.h"

int
awake_wait_counts(enum admit_wait w)
{
	switch (w) {
	case ADMIT_WAIT_HELD:
	case ADMIT_WAIT_AFTER:
	case ADMIT_WAIT_CLIENT:
		return 0;
	default:
		return 1;
	}
}

void
awake_decide(const struct awake_in *in, struct awake_out *out)
{
	out->hold = AWAKE_NONE;
	out->until_ms = 0;
	out->why = NULL;
	if (!in->enabled)
		return;
	if (in->holding > 0) {
		out->hold = AWAKE_JOBS;
		out->why = "a job holds memory";
		return;
	}
	if (in->ready <= 0)
		return;
	if (in->queue_ms <= 0) {
		out->why = "not held for queued jobs (keep_awake_queue = 0)";
		return;
	}
	/* A clock set back puts the last admission in the future: the
	 * bound then counts from now, never longer than queue_ms. */
	out->until_ms =
	    (in->last_admit_ms < in->now_ms ? in->last_admit_ms : in->now_ms) +
	    in->queue_ms;
	if (in->now_ms >= out->until_ms) {
		out->why = "no longer held: the queue has waited "
		           "keep_awake_queue since the last admission";
		return;
	}
	out->hold = AWAKE_QUEUE;
	out->why = "a queued job could start (on AC power only)";
}

const char *
awake_hold_name(enum awake_hold h)
{
	switch (h) {
	case AWAKE_JOBS:
		return "jobs";
	case AWAKE_QUEUE:
		return "queue";
	default:
		return NULL;
	}
}
