/* The sample timer: one system sample per interval, pushed to the store,
 * to jobs and to subscribers (subscribe/meter). */
#ifndef SL_SAMPLER_H
#define SL_SAMPLER_H

#include <cjson/cJSON.h>

#include "daemon.h"

int sampler_start(struct daemon *d, char *cause, size_t causelen);
void sampler_stop(struct daemon *d); /* flushes the store */
/* Take the sample now if it is due: the server calls it after each read,
 * so busy I/O never delays enforcement (see sampler.c). */
void sampler_run_due(struct daemon *d);
/* Commit the samples not yet written (before a history query). */
void sampler_flush(struct daemon *d);

/* "normal", "warn", "critical" or "unknown". */
const char *sampler_pressure_name(enum pressure_level p);
/* The Sample object of PROTOCOL.md; NULL when out of memory. */
cJSON *sampler_sample_json(const struct sys_sample *s);

/*
 * A client's subscription (PROTOCOL.md, subscribe); a new one replaces the
 * previous. pid > 0 meters that process tree: the caller has checked that
 * the peer may (owner or root) and passes the start time it saw, so a
 * recycled pid is never metered. uid is the peer's, for what events it may
 * see. Dropped when the client closes.
 */
int sampler_subscribe(struct daemon *d, uint64_t client_id, uid_t uid,
                      int samples, int events, pid_t pid, uint64_t start_time,
                      char *cause, size_t causelen);
void sampler_unsubscribe(struct daemon *d, uint64_t client_id);

#endif
