/*
 * The clock: one system sample per interval, handed to one tick callback
 * (tick.c), which does everything else in order. It knows nothing above
 * it.
 */
#ifndef SL_SAMPLER_H
#define SL_SAMPLER_H

#include "daemon.h"

/* s is NULL when the system could not be sampled this time (logged here,
 * once per failing stretch): the tick still does its housekeeping. */
typedef void (*sampler_tick_cb)(struct daemon *d, const struct sys_sample *s);

/* The first tick comes at once, so `info` has a sample right away. */
int sampler_start(struct daemon *d, sampler_tick_cb tick, char *cause,
                  size_t causelen);
void sampler_stop(struct daemon *d);
/* Take the sample now if it is due: the server calls it after each read,
 * so busy I/O never delays enforcement (see sampler.c). */
void sampler_run_due(struct daemon *d);

#endif
