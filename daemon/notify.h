/*
 * Who hears what: the one list of what each client waits for (samples and
 * metered trees, events, a job's end, a job's log), filled by the control
 * handlers and drained as the job table's notes (jobs.h), each tick's
 * sample and a client's writes come in. Notes become wire messages here
 * and nowhere else. A client that goes is dropped from the list; entries
 * dropped while the list is walked are removed after the walk.
 */
#ifndef SL_NOTIFY_H
#define SL_NOTIFY_H

#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "daemon.h"
#include "jobs.h"
#include "store.h"

/* Answers one connection may have pending (wait, logs), and the bytes of
 * the request ids kept for them: a client that asks and never reads must
 * not pin daemon memory without bound. Across one uid's connections the
 * bound is max_deferred_per_uid (config). */
#define NOTIFY_MAX_DEFERRED 1024
#define NOTIFY_MAX_DEFERRED_ID_BYTES (1u << 20)

int notify_start(struct daemon *d, char *cause, size_t causelen);
void notify_stop(struct daemon *d); /* drops everything, answers nothing */

/* The job table's note callback (jobs_init). */
void notify_job(struct daemon *d, const struct jobs_note *n);
/* Each tick, after enforcement: samples to subscribers, metered trees,
 * then the logs being followed. */
void notify_sample(struct daemon *d, const struct sys_sample *s);

/*
 * A client's subscription (PROTOCOL.md, subscribe); a new one replaces the
 * previous. pid > 0 meters that process tree: the caller has checked that
 * the peer may (owner or root) and passes the start time it saw, so a
 * recycled pid is never metered. uid is the peer's, for what events it may
 * see. 0, or a PROTO_E_* code with cause (-32004 past max_meters_per_uid).
 */
int notify_subscribe(struct daemon *d, uint64_t client_id, uid_t uid,
                     int samples, int events, pid_t pid, uint64_t start_time,
                     char *cause, size_t causelen);
void notify_unsubscribe(struct daemon *d, uint64_t client_id);
/* events with follow: every event after after_id (the answer's last), of
 * job job_id alone when > 0, as uid may see it: those already recorded are
 * read from the store once the answer is out, then each new one as it
 * comes. unsubscribe ends it. */
struct job_filter;
/* f (copied; NULL: none) keeps the events it passes (jobs-filter.h). */
int notify_follow_events(struct daemon *d, uint64_t client_id, uid_t uid,
                         int64_t after_id, int64_t job_id,
                         const struct job_filter *f);
/* wait: answer req_id with the job once it has ended. 0 (deferred), or a
 * PROTO_E_* code with cause. */
int notify_wait(struct daemon *d, uint64_t client_id, uid_t uid,
                const cJSON *req_id, int64_t job_id, char *cause,
                size_t causelen);
/* logs: send the job's log from offset, following it while the job lives
 * when follow; the answer comes after the last chunk. 0 (deferred) or a
 * PROTO_E_* code with cause. */
int notify_logs(struct daemon *d, uint64_t client_id, uid_t uid,
                const cJSON *req_id, int64_t job_id, uint64_t offset,
                int follow, char *cause, size_t causelen);

/* The server's hooks: answers still owed, writes drained, client gone. */
size_t notify_deferred(struct daemon *d, uint64_t client_id);
void notify_writable(struct daemon *d, uint64_t client_id);
void notify_client_gone(struct daemon *d, uint64_t client_id);

#endif
