/*
 * The job table: queue, admission, enforcement, spawning and re-adoption.
 * The pure decisions live in admit.c and enforce.c; this module applies
 * them, commits every transition to the store before announcing it, and
 * talks to clients.
 */
#ifndef SL_JOBS_H
#define SL_JOBS_H

#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "daemon.h"

/* An attached job whose client has not come back after a daemon restart is
 * given up (queued: cancelled, admitted: lost) after this long. */
#define JOBS_RESUME_GRACE_MS 30000

/* Load unended jobs from the store and re-adopt or mark them. Registers
 * its own server_on_gone callback. */
int jobs_init(struct daemon *d, char *cause, size_t causelen);
void jobs_shutdown(struct daemon *d); /* leaves running jobs alone */
/* Called by the sampler after every system sample: samples job trees,
 * enforces budgets, then admits. Never waits on storage. */
void jobs_on_sample(struct daemon *d, const struct sys_sample *s);
/* Jobs fill the "jobs" member of info (counts by state). */
void jobs_info(struct daemon *d, cJSON *info);

/* A client connection closed (registered with server_on_gone by
 * jobs_init; safe to call more than once). */
void jobs_client_gone(struct daemon *d, uint64_t client_id);
/* Deferred answers (wait, logs) a client is still owed: a connection the
 * peer half-closed stays open until they are sent. */
size_t jobs_client_deferred(struct daemon *d, uint64_t client_id);
/* Everything queued for a client was written: the logs it reads are sent
 * on, at the pace it reads them. */
void jobs_client_writable(struct daemon *d, uint64_t client_id);

/*
 * Every committed event is passed to this hook (one at most), so the
 * module serving `subscribe` with events can forward it. jobs_event_json()
 * builds the wire Event as viewer_uid may see it (detail of another user's
 * job only for root).
 */
typedef void (*jobs_event_cb)(struct daemon *d, const struct store_event *e);
void jobs_on_event(struct daemon *d, jobs_event_cb cb);
cJSON *jobs_event_json(const struct store_event *e, uid_t viewer_uid);

#endif
