/*
 * The two clocks, one helper each, named by the clock. Wall time is what
 * records carry (samples, jobs, events), so history lines up with the
 * user's clock; monotonic time measures waits and deadlines, which a
 * change of the wall clock must not stretch or cut.
 */
#ifndef SL_CLOCK_H
#define SL_CLOCK_H

#include <stdint.h>

/* CLOCK_REALTIME in ms since the epoch. */
int64_t clock_wall_ms(void);
/* CLOCK_MONOTONIC in ms, and in µs. */
int64_t clock_mono_ms(void);
int64_t clock_mono_us(void);

#endif
