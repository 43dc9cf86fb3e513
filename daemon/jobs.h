/*
 * The job table: queue, admission, enforcement, spawning and re-adoption.
 * The pure decisions live in admit.c and enforce.c; this module applies
 * them, commits every transition to the store before announcing it, and
 * talks to clients.
 */
#ifndef SL_JOBS_H
#define SL_JOBS_H

#include "daemon.h"

/* Load unended jobs from the store and re-adopt or mark them. */
int jobs_init(struct daemon *d, char *cause, size_t causelen);
void jobs_shutdown(struct daemon *d); /* leaves running jobs alone */
/* Called by the sampler after every system sample: samples job trees,
 * enforces budgets, then admits. Never waits on storage. */
void jobs_on_sample(struct daemon *d, const struct sys_sample *s);
/* Jobs fill the "jobs" member of info (counts by state). */
void jobs_info(struct daemon *d, cJSON *info);

#endif
