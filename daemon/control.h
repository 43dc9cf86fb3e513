/*
 * The dispatch table: method name -> handler, with who may call it and the
 * parameters it takes. control_dispatch() is the server's dispatch hook: it
 * refuses unknown methods, callers the row does not admit and parameters
 * the row does not list (unknown names, wrong types, required ones
 * missing) before any handler runs. What depends on one object (whose
 * job, whose process) or on several fields together is checked in the
 * handler, always against the peer's credentials, never against anything
 * the client claims.
 */
#ifndef SL_CONTROL_H
#define SL_CONTROL_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "jobs.h"
#include "proto.h"
#include "server.h"

struct daemon;

/*
 * A handler either answers at once (returns 0 with *result set, or a
 * PROTO_E_* code with cause filled) or defers: it returns CONTROL_DEFERRED
 * after keeping a copy of req_id to answer later with server_reply(). The
 * handler does not own params.
 */
#define CONTROL_DEFERRED SERVER_DEFERRED

typedef int (*control_handler)(struct daemon *d, const struct peer *p,
                               const cJSON *req_id, const cJSON *params,
                               cJSON **result, char *cause, size_t causelen);

enum control_auth {
	AUTH_ANYONE, /* anyone connected; the answer is the same for all */
	AUTH_OWNER,  /* anyone; the handler checks each object it touches
	                against the peer (control_job_owner) */
	AUTH_ROOT,   /* root only */
};

/* A parameter the method takes; the handler checks ranges and lengths. */
struct control_param {
	const char *name;
	enum proto_type type;
	int required; /* JSON null counts as absent */
};

struct control_method {
	const char *name;
	control_handler handler;
	enum control_auth auth;
	const struct control_param *params; /* ends with a NULL name */
};

/* The server's dispatch hook: the daemon's table. Returns what the handler
 * returned; on error the caller sends cause. */
int control_dispatch(struct daemon *d, const struct peer *p, const char *method,
                     const cJSON *req_id, const cJSON *params, cJSON **result,
                     char *cause, size_t causelen);
/* The same checks against any table (tests add rows of their own). */
int control_dispatch_in(const struct control_method *table, size_t n,
                        struct daemon *d, const struct peer *p,
                        const char *method, const cJSON *req_id,
                        const cJSON *params, cJSON **result, char *cause,
                        size_t causelen);

/* Per-object check of AUTH_OWNER rows: the job, in *v, when the peer is
 * its owner or root; PROTO_E_NOJOB or PROTO_E_PERM with cause otherwise. */
/* A new job of peer p: the connection's credentials and groups, its
 * login name, and copies of name, cwd, argv and env (env NULL for an
 * attached job). The caller sets the rest. NULL when out of memory. */
struct job *control_job_new(const struct peer *p, const char *name,
                            const char *cwd, const char *const *argv,
                            const char *const *env);
int control_job_owner(struct daemon *d, const struct peer *p, int64_t id,
                      struct jobs_view *v, char *cause, size_t causelen);

/* Job method handlers (control-jobs.c); PROTOCOL.md describes each. */
int control_submit(struct daemon *, const struct peer *, const cJSON *,
                   const cJSON *, cJSON **, char *, size_t);
int control_job_pid(struct daemon *, const struct peer *, const cJSON *,
                    const cJSON *, cJSON **, char *, size_t);
int control_job_exit(struct daemon *, const struct peer *, const cJSON *,
                     const cJSON *, cJSON **, char *, size_t);
int control_resume(struct daemon *, const struct peer *, const cJSON *,
                   const cJSON *, cJSON **, char *, size_t);
int control_status(struct daemon *, const struct peer *, const cJSON *,
                   const cJSON *, cJSON **, char *, size_t);
int control_stage(struct daemon *, const struct peer *, const cJSON *,
                  const cJSON *, cJSON **, char *, size_t);
int control_show(struct daemon *, const struct peer *, const cJSON *,
                 const cJSON *, cJSON **, char *, size_t);
int control_cancel(struct daemon *, const struct peer *, const cJSON *,
                   const cJSON *, cJSON **, char *, size_t);
int control_cancel_matching(struct daemon *, const struct peer *, const cJSON *,
                            const cJSON *, cJSON **, char *, size_t);
int control_wait(struct daemon *, const struct peer *, const cJSON *,
                 const cJSON *, cJSON **, char *, size_t);
int control_logs(struct daemon *, const struct peer *, const cJSON *,
                 const cJSON *, cJSON **, char *, size_t);
int control_events(struct daemon *, const struct peer *, const cJSON *,
                   const cJSON *, cJSON **, char *, size_t);
int control_job_history(struct daemon *, const struct peer *, const cJSON *,
                        const cJSON *, cJSON **, char *, size_t);
/* Accounting of ended jobs (control-report.c). */
int control_report(struct daemon *, const struct peer *, const cJSON *,
                   const cJSON *, cJSON **, char *, size_t);
/* The queue's controls (control-queue.c). */
int control_hold(struct daemon *, const struct peer *, const cJSON *,
                 const cJSON *, cJSON **, char *, size_t);
int control_release(struct daemon *, const struct peer *, const cJSON *,
                    const cJSON *, cJSON **, char *, size_t);
/* The parameters proto/job-fields.h marks P_INT, P_NUM and P_BOOL, each
 * within its lo..hi, into j's members (update: only those it marks for
 * update too), in the table's order; an absent one leaves its member as
 * it was. 0, or PROTO_E_PARAMS with cause. seen says which were given.
 * Strings, arrays and checks across fields are the handlers'. */
int control_fields_read(const cJSON *params, int update, struct job *j,
                        struct job_seen *seen, char *cause, size_t causelen);
/* Submit's after, group and on_end into j, with the checks of the queue's
 * own fields; 0 or PROTO_E_* with cause. */
int control_submit_queue(struct daemon *d, const cJSON *params, struct job *j,
                         char *cause, size_t causelen);
int control_resubmit(struct daemon *, const struct peer *, const cJSON *,
                     const cJSON *, cJSON **, char *, size_t);
int control_update(struct daemon *, const struct peer *, const cJSON *,
                   const cJSON *, cJSON **, char *, size_t);
/* The submit parameters that could hold the queue for everyone: a
 * priority above 0, a wait_free_pct or expect_bytes that can never be met.
 * 0, or PROTO_E_PARAMS with the cause (control-jobs.c). */
int control_submit_fair(struct daemon *d, int privileged, int64_t priority,
                        double wait_free, int64_t expect, char *cause,
                        size_t causelen);
/* submit's wait_free_bytes: at most the machine's total memory (the
 * latest sample's; anything before the first), and for the unprivileged
 * at most max_wait_free % of it. 0 or PROTO_E_PARAMS with cause. */
int control_wait_free_bytes_check(struct daemon *d, int privileged,
                                  uint64_t bytes, char *cause, size_t causelen);
/* The peer's queued and running jobs below max_queued_per_uid (root
 * exempt): 0, or PROTO_E_LIMIT with the cause. */
int control_submit_count(struct daemon *d, const struct peer *p, char *cause,
                         size_t causelen);
/* The job as the peer may see it, as most job methods answer. */
/* The "id" param of a job method (control-ids.c): an integer
 * (1..2^63-1), or a string naming a job ("42") or an array's element
 * ("A42_3"), resolved to its job id; a whole array ("A42") is
 * PROTO_E_PARAMS here. */
int control_param_id(struct daemon *d, const cJSON *params, int64_t *id,
                     char *cause, size_t causelen);
/* The same, where a whole array may be named: then *ids (malloc'd) holds
 * its elements' job ids by index, *n of them, and *array_id is set;
 * otherwise *ids is NULL and *array_id 0. */
int control_param_ref(struct daemon *d, const cJSON *params, int64_t *id,
                      int64_t *array_id, int64_t **ids, size_t *n, char *cause,
                      size_t causelen);
/* A job id as a client wrote it (an integer, "42", "A42", "A42_3"): the
 * job, or with allow_array the elements of an array (as control_param_ref
 * says). The one resolver of job ids: every method's id and submit's after
 * come through it. */
int control_resolve(struct daemon *d, const cJSON *v, const char *what,
                    int allow_array, int64_t *id, int64_t *array_id,
                    int64_t **ids, size_t *n, char *cause, size_t causelen);
int control_answer_job(struct daemon *d, const struct peer *p, int64_t id,
                       cJSON **result, char *cause, size_t causelen);
/* control_job_owner for one of an array's elements: the job as a list
 * has it (jobs_get_lean), so that a whole array is not one queue pass per
 * element. */
int control_element_owner(struct daemon *d, const struct peer *p, int64_t id,
                          struct jobs_view *v, char *cause, size_t causelen);
/* What a method does to a whole array. */
enum control_array_act {
	CONTROL_ARRAY_SHOW,
	CONTROL_ARRAY_CANCEL, /* its live elements */
	CONTROL_ARRAY_HOLD,   /* its queued elements */
	CONTROL_ARRAY_RELEASE
};
/* A whole array's action, then its answer {"array_id": A, "jobs": [each
 * element's Job]}, a slice of the loop's time at a time (answers.c); the
 * caller must own the array but to show it. ids (the elements) are owned
 * from here. CONTROL_DEFERRED, or a PROTO_E_* code with cause. */
int control_array_start(struct daemon *d, const struct peer *p,
                        const cJSON *req_id, int64_t array_id, int64_t *ids,
                        size_t n, enum control_array_act act, char *cause,
                        size_t causelen);
/* Before history answers: commit the buffered samples. 0, or, when that
 * fails and [.., until] reaches the oldest sample not yet committed (of
 * the system, job_id 0, or of that job), PROTO_E_STORAGE with the cause. */
int control_history_flush(struct daemon *d, int64_t job_id, int64_t until,
                          char *cause, size_t causelen);

#endif
