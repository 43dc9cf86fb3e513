/* Small helpers shared by the daemon's modules. */
#include <time.h>

#include "daemon.h"

/* Wall-clock time is what samples and job records carry, so history lines
 * up with the user's clock; intervals use the loop's monotonic time. */
int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
