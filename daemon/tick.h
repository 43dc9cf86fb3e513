/*
 * The tick: what the daemon does with each sample, in order (tick.c).
 */
#ifndef SL_TICK_H
#define SL_TICK_H

#include "daemon.h"

int tick_start(struct daemon *d, char *cause, size_t causelen);
/* The sampler's callback; s is NULL when sampling failed; full: a sample
 * on the normal schedule (sampler.h). */
void tick_run(struct daemon *d, const struct sys_sample *s, int full);
/* Write what is buffered, last. */
void tick_stop(struct daemon *d);

#endif
