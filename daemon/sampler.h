/* The sample timer: one system sample per interval, pushed to the store,
 * to jobs and to subscribers (subscribe/meter). */
#ifndef SL_SAMPLER_H
#define SL_SAMPLER_H

#include "daemon.h"

int sampler_start(struct daemon *d, char *cause, size_t causelen);
void sampler_stop(struct daemon *d); /* flushes the store */

#endif
