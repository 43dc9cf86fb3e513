/*
 * The attached flow (PROTOCOL.md, "Attached jobs"): job_pid (the client
 * names the process it runs), job_exit (it reports how that ended) and
 * resume (a client back after a restart or a lost connection takes its
 * job again).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <uv.h>

#include "answers.h"
#include "control.h"
#include "jobs.h"
#include "notify.h"
#include "platform.h"
#include "proto.h"
#include "store.h"
#include "units.h"
#include "wire.h"

/* The job, live: job_pid, job_exit. */
static int
job_live(struct daemon *d, int64_t id, struct jobs_view *v, char *cause,
         size_t causelen)
{
	int rc;

	if ((rc = jobs_get(d, id, v, cause, causelen)) != 0)
		return rc;
	if (!v->live) {
		jobs_view_free(v);
		snprintf(cause, causelen, "job %" PRId64 " has ended", id);
		return PROTO_E_STATE;
	}
	return 0;
}

/* job_pid: the attached client started its command. */
int
control_job_pid(struct daemon *d, const struct peer *p, const cJSON *req_id,
                const cJSON *params, cJSON **result, char *cause,
                size_t causelen)
{
	struct proc_info pi, leader;
	struct jobs_view v;
	int64_t id, pid;
	int rc, attached, tree = 0;
	enum job_state state;

	if ((rc = control_param_id(d, params, &id, cause, causelen)) != 0 ||
	    (rc = proto_param_int(params, "pid", 1, 2, INT32_MAX, &pid, cause,
	                          causelen)) != 0 ||
	    (rc = proto_param_bool(params, "tree", 0, &tree, cause, causelen)) <
	        0)
		return rc;
	if ((rc = job_live(d, id, &v, cause, causelen)) != 0)
		return rc;
	/* Authorisation first: whose job, whose process. Only the owner
	 * runs it, root included. */
	rc = p->uid != v.j->uid;
	attached = v.j->attached;
	state = v.j->state;
	jobs_view_free(&v);
	if (rc) {
		snprintf(cause, causelen, "job %" PRId64 " is not yours", id);
		return PROTO_E_PERM;
	}
	if (platform_proc_info((pid_t)pid, &pi) != 0) {
		snprintf(cause, causelen, "no process %" PRId64, pid);
		return PROTO_E_NOPROC;
	}
	if (p->uid != 0 && pi.uid != p->uid) {
		snprintf(cause, causelen,
		         "process %" PRId64 " belongs to another user", pid);
		return PROTO_E_PERM;
	}
	/* The job's whole process group is signalled, as root: a process of
	 * the caller's inside another user's group (a root service's worker
	 * running as this user) must not hand the caller that group. With
	 * tree no group is followed or signalled: the pid and its
	 * descendants only. */
	if (!tree && p->uid != 0 && pi.pgid != (pid_t)pid &&
	    (platform_proc_info(pi.pgid, &leader) != 0 ||
	     leader.uid != p->uid)) {
		snprintf(cause, causelen,
		         "process %" PRId64 " is in process group %d, which is "
		         "not yours: start the command in a group of its own",
		         pid, (int)pi.pgid);
		return PROTO_E_PERM;
	}
	if (!attached || state != JOB_ADMITTED) {
		snprintf(cause, causelen,
		         "job %" PRId64 " is %s, not an admitted attached job",
		         id, job_state_name(state));
		return PROTO_E_STATE;
	}
	if ((rc = jobs_attach(d, id, p->client_id, (pid_t)pid,
	                      tree ? 0 : pi.pgid, pi.start_time)) != 0) {
		snprintf(cause, causelen, "job %" PRId64 " has ended", id);
		return rc;
	}
	*result = cJSON_CreateObject();
	return 0;
}

int
control_job_exit(struct daemon *d, const struct peer *p, const cJSON *req_id,
                 const cJSON *params, cJSON **result, char *cause,
                 size_t causelen)
{
	struct jobs_view v;
	int64_t id, code = -1, sig = -1;
	int rc;

	if ((rc = control_param_id(d, params, &id, cause, causelen)) != 0)
		return rc;
	if ((rc = proto_param_int(params, "exit_code", 0, 0, 255, &code, cause,
	                          causelen)) < 0 ||
	    (rc = proto_param_int(params, "signal", 0, 1, 128, &sig, cause,
	                          causelen)) < 0)
		return rc;
	if ((code < 0) == (sig < 0)) {
		snprintf(cause, causelen,
		         "exactly one of exit_code and signal is required");
		return PROTO_E_PARAMS;
	}
	if ((rc = jobs_get(d, id, &v, cause, causelen)) != 0)
		return rc;
	/* Root reports the end of a job that says root will (a Slurm
	 * task's, from slurmstepd), on any connection. */
	if (!(p->uid == 0 && v.j->exit_reporter != NULL &&
	      strcmp(v.j->exit_reporter, "root") == 0) &&
	    (p->uid != v.j->uid || (v.live && v.client_id != p->client_id))) {
		jobs_view_free(&v);
		snprintf(cause, causelen,
		         "job %" PRId64 " is not attached to this connection",
		         id);
		return PROTO_E_PERM;
	}
	if (!v.live) {
		/* Ended: by the daemon (a kill, once its process was gone)
		 * or otherwise. Its owner learns how; nothing changes. */
		*result = wire_job(&v, p->uid, 0);
		jobs_view_free(&v);
		return 0;
	}
	if (jobs_exit_owed(d, id)) {
		/* The daemon already took this attempt's end (requeued it):
		 * the report is answered with the job as it is now. */
		jobs_view_free(&v);
		return control_answer_job(d, p, id, result, cause, causelen);
	}
	if (v.j->state != JOB_RUNNING && v.j->state != JOB_ADMITTED) {
		snprintf(cause, causelen, "job %" PRId64 " is %s, not running",
		         id, job_state_name(v.j->state));
		jobs_view_free(&v);
		return PROTO_E_STATE;
	}
	jobs_view_free(&v);
	if ((rc = jobs_exit(d, id, (int)code, (int)sig, cause, causelen)) != 0)
		return rc;
	/* Ended, or requeued for another attempt. */
	return control_answer_job(d, p, id, result, cause, causelen);
}

int
control_resume(struct daemon *d, const struct peer *p, const cJSON *req_id,
               const cJSON *params, cJSON **result, char *cause,
               size_t causelen)
{
	struct jobs_view v;
	int64_t id;
	int rc;

	if ((rc = control_param_id(d, params, &id, cause, causelen)) != 0)
		return rc;
	if ((rc = control_job_owner(d, p, id, &v, cause, causelen)) != 0)
		return rc;
	if (!v.live) {
		/* Ended, detached or attached, still in the table or not:
		 * the client learns how (PROTOCOL.md, resume). */
		*result = wire_job(&v, p->uid, 0);
		jobs_view_free(&v);
		return 0;
	}
	if (!v.j->attached) {
		jobs_view_free(&v);
		snprintf(cause, causelen,
		         "job %" PRId64 " is detached: nothing to resume", id);
		return PROTO_E_STATE;
	}
	jobs_resume(d, id, p->client_id);
	jobs_view_free(&v);
	return control_answer_job(d, p, id, result, cause, causelen);
}
