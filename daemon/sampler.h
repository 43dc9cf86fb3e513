/*
 * The clock: one system sample per interval, handed to one tick callback
 * (tick.c), which does everything else in order. It knows nothing above
 * it. While asked to (sampler_set_fast) it samples at the fast interval
 * instead; the samples that fall on the normal schedule say so (full), and
 * only those are stored and published (docs/jobs.md, "Sampling rate").
 */
#ifndef SL_SAMPLER_H
#define SL_SAMPLER_H

#include "daemon.h"

/* s is NULL when the system could not be sampled this time (logged here,
 * once per failing stretch): the tick still does its housekeeping. full:
 * the sample is on the normal interval's schedule (every sample while not
 * fast); 0 for the ones in between. */
typedef void (*sampler_tick_cb)(struct daemon *d, const struct sys_sample *s,
                                int full);

/* The first tick comes at once, so `info` has a sample right away. */
int sampler_start(struct daemon *d, sampler_tick_cb tick, char *cause,
                  size_t causelen);
void sampler_stop(struct daemon *d);
/* Take the sample now if it is due: the server calls it after each read,
 * so busy I/O never delays enforcement (see sampler.c). */
void sampler_run_due(struct daemon *d);
/* Sample at the fast interval (cfg.fast_interval_ms) or at the normal one
 * from the next sample on; a fast interval of 0, or one not below the
 * interval, is never fast. */
void sampler_set_fast(struct daemon *d, int fast);
/* The interval in force now (ms). */
int64_t sampler_interval_ms(const struct daemon *d);
/* Take a sample on the next turn of the loop (a job ended: the next
 * admission should see what it freed), then go on as before. */
void sampler_soon(struct daemon *d);

#endif
