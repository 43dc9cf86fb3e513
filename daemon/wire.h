/*
 * The wire objects of PROTOCOL.md that the daemon sends: Job, Event and
 * Sample, each as a given peer may see it. One home for them, so an answer
 * (control.c, control-jobs.c) and a notification (notify.c) of the same
 * object never differ.
 */
#ifndef SL_WIRE_H
#define SL_WIRE_H

#include <sys/types.h>

#include <cjson/cJSON.h>

#include "jobs.h"
#include "platform.h"
#include "store.h"

/* Root and the job's owner see its command, directory, environment and
 * end detail; others see the rest. */
int wire_may_see(uid_t viewer, const struct job *j);
/* The user's name, or the uid as a number when it has none. */
void wire_user_name(uid_t uid, char *buf, size_t len);
/* A queued job's waiting_for: admit_wait_name, but "after ID" for an
 * unended dependency (after: its id). Writes buf (at least 32 bytes). */
/* A queued job's waiting_on and waiting_until_ms (PROTOCOL.md, Job), for
 * the queue notification. */
void wire_add_waiting_on(cJSON *o, const struct jobs_view *v);
const char *wire_waiting_for(enum admit_wait w, int64_t after, char *buf,
                             size_t len);
/* The wire Job; what only a live job has (position, waiting_for, growth)
 * comes from v when v->live. NULL when out of memory. */
cJSON *wire_job(const struct jobs_view *v, uid_t viewer, int with_env);
/* The wire Job of a job that is not in the table. */
cJSON *wire_job_ended(const struct job *j, uid_t viewer, int with_env);
/* The Job of a list answer (status in protocol version 2): no argv and no
 * env, but `command`, the argv shell-quoted and cut at JOB_COMMAND_MAX
 * bytes (null for those who may not see it). */
cJSON *wire_job_list(const struct jobs_view *v, uid_t viewer);
cJSON *wire_job_ended_list(const struct job *j, uid_t viewer);
/* The wire Event; another user's job's detail only for root. */
cJSON *wire_event(const struct store_event *e, uid_t viewer);
/* The Sample object. */
cJSON *wire_sample(const struct sys_sample *s);

#endif
