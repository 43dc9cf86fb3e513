/* The monotonic clock in milliseconds, for the deadlines of unit tests. */
#ifndef SL_TESTCLOCK_H
#define SL_TESTCLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#endif
