/*
 * The tick: what the daemon does with each sample, in order (tick.c).
 */
#ifndef SL_TICK_H
#define SL_TICK_H

#include "awake.h"
#include "daemon.h"

int tick_start(struct daemon *d, char *cause, size_t causelen);
/* The sampler's callback; s is NULL when sampling failed; full: a sample
 * on the normal schedule (sampler.h). */
void tick_run(struct daemon *d, const struct sys_sample *s, int full);
/* The keep-awake decision of the last normal sample, for info: its hold
 * is what the platform was asked for (all zero before the first). */
void tick_awake(struct daemon *d, struct awake_out *out);
/* Write what is buffered, last. */
void tick_stop(struct daemon *d);

#endif
