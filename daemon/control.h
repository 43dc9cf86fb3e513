/*
 * The dispatch table: method name -> handler, with who may call it and the
 * parameters it knows. server.c calls control_dispatch() for every request
 * after hello; authorisation by peer credentials happens here and in the
 * handlers, never from anything the client claims.
 */
#ifndef SL_CONTROL_H
#define SL_CONTROL_H

#include <cjson/cJSON.h>

#include "server.h"

struct daemon;

/*
 * A handler either answers at once (returns 0 with *result set, or a
 * PROTO_E_* code with cause filled) or defers: it returns CONTROL_DEFERRED
 * after keeping a copy of req_id (cJSON_Duplicate) to answer later with
 * server_reply(). The handler does not own params.
 */
#define CONTROL_DEFERRED 1

typedef int (*control_handler)(struct daemon *d, const struct peer *p,
                               const cJSON *req_id, const cJSON *params,
                               cJSON **result, char *cause, size_t causelen);

/* Returns what the handler returned; on error the caller sends cause. */
int control_dispatch(struct daemon *d, const struct peer *p, const char *method,
                     const cJSON *req_id, const cJSON *params, cJSON **result,
                     char *cause, size_t causelen);

/* Job method handlers, in jobs-ctl.c, jobs-attached.c (job_pid, job_exit,
 * resume) and jobs-logs.c (logs); see PROTOCOL.md for each. The method
 * names are those of PROTOCOL.md; jobs_ctl_attach answers job_pid. */
int jobs_ctl_submit(struct daemon *, const struct peer *, const cJSON *,
                    const cJSON *, cJSON **, char *, size_t);
int jobs_ctl_attach(struct daemon *, const struct peer *, const cJSON *,
                    const cJSON *, cJSON **, char *, size_t);
int jobs_ctl_status(struct daemon *, const struct peer *, const cJSON *,
                    const cJSON *, cJSON **, char *, size_t);
int jobs_ctl_show(struct daemon *, const struct peer *, const cJSON *,
                  const cJSON *, cJSON **, char *, size_t);
int jobs_ctl_cancel(struct daemon *, const struct peer *, const cJSON *,
                    const cJSON *, cJSON **, char *, size_t);
int jobs_ctl_wait(struct daemon *, const struct peer *, const cJSON *,
                  const cJSON *, cJSON **, char *, size_t);
int jobs_ctl_logs(struct daemon *, const struct peer *, const cJSON *,
                  const cJSON *, cJSON **, char *, size_t);
int jobs_ctl_events(struct daemon *, const struct peer *, const cJSON *,
                    const cJSON *, cJSON **, char *, size_t);
int jobs_ctl_job_history(struct daemon *, const struct peer *, const cJSON *,
                         const cJSON *, cJSON **, char *, size_t);
int jobs_ctl_job_exit(struct daemon *, const struct peer *, const cJSON *,
                      const cJSON *, cJSON **, char *, size_t);
int jobs_ctl_resume(struct daemon *, const struct peer *, const cJSON *,
                    const cJSON *, cJSON **, char *, size_t);

#endif
