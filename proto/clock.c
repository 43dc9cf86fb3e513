/* The two clocks (clock.h). */
#include <time.h>

#include "clock.h"

static int64_t
clock_read(clockid_t id, int64_t per_s)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * per_s + ts.tv_nsec / (1000000000 / per_s);
}

int64_t
clock_wall_ms(void)
{
	return clock_read(CLOCK_REALTIME, 1000);
}

int64_t
clock_mono_ms(void)
{
	return clock_read(CLOCK_MONOTONIC, 1000);
}

int64_t
clock_mono_us(void)
{
	return clock_read(CLOCK_MONOTONIC, 1000000);
}
