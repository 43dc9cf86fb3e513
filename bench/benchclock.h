/* CPU time of this process, user + system, in microseconds: the benches'
 * measure (reading /proc is kernel work charged to the reader). */
#ifndef SL_BENCHCLOCK_H
#define SL_BENCHCLOCK_H

#include <time.h>

static inline double
cpu_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

#endif
