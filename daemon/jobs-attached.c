/*
 * Attached jobs: the client runs the command itself once the job is
 * admitted (job_pid), reports its end (job_exit) and may come back after a
 * daemon restart (resume). A job whose client goes away before starting it
 * is cancelled; one already running is still enforced, and its end is
 * noticed when its processes are gone.
 */
#include <inttypes.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "control.h"
#include "jobs-internal.h"
#include "log.h"
#include "platform.h"
#include "proto.h"

/* The record of a job that has not ended. */
static int
attached_lookup_live(struct daemon *d, int64_t id, struct jrec **r, char *cause,
                     size_t causelen)
{
	struct job *stored;
	int rc;

	if ((rc = jobs_ctl_lookup(d, id, r, &stored, cause, causelen)) != 0)
		return rc;
	if (stored != NULL || (*r)->end_pending) {
		job_free(stored);
		snprintf(cause, causelen, "job %" PRId64 " has ended", id);
		return PROTO_E_STATE;
	}
	return 0;
}

/* job_pid: the attached client started its command. */
int
jobs_ctl_attach(struct daemon *d, const struct peer *p, const cJSON *req_id,
                const cJSON *params, cJSON **result, char *cause,
                size_t causelen)
{
	static const char *const known[] = {"id", "pid", NULL};
	struct proc_info pi, leader;
	struct jrec *r;
	int64_t id, pid;
	int rc;

	if ((rc = proto_params_check(params, known, cause, causelen)) != 0 ||
	    (rc = jobs_ctl_param_id(params, &id, cause, causelen)) != 0 ||
	    (rc = proto_param_int(params, "pid", 1, 2, INT32_MAX, &pid, cause,
	                          causelen)) != 0)
		return rc;
	if ((rc = attached_lookup_live(d, id, &r, cause, causelen)) != 0)
		return rc;
	/* Authorisation first: whose job, whose process. */
	if (p->uid != r->j->uid) {
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
	 * running as this user) must not hand the caller that group. */
	if (p->uid != 0 && pi.pgid != (pid_t)pid &&
	    (platform_proc_info(pi.pgid, &leader) != 0 ||
	     leader.uid != p->uid)) {
		snprintf(cause, causelen,
		         "process %" PRId64 " is in process group %d, which is "
		         "not yours: start the command in a group of its own",
		         pid, (int)pi.pgid);
		return PROTO_E_PERM;
	}
	if (!r->j->attached || r->j->state != JOB_ADMITTED) {
		snprintf(cause, causelen,
		         "job %" PRId64 " is %s, not an admitted attached job",
		         id, job_state_name(r->j->state));
		return PROTO_E_STATE;
	}
	r->client_id = p->client_id;
	r->orphan_since_ms = 0;
	jrec_started(d, r, (pid_t)pid, pi.pgid, pi.start_time, now_ms());
	*result = cJSON_CreateObject();
	return 0;
}

int
jobs_ctl_job_exit(struct daemon *d, const struct peer *p, const cJSON *req_id,
                  const cJSON *params, cJSON **result, char *cause,
                  size_t causelen)
{
	static const char *const known[] = {"id", "exit_code", "signal", NULL};
	struct jrec *r;
	int64_t id, code = -1, sig = -1;
	int rc;

	if ((rc = proto_params_check(params, known, cause, causelen)) != 0 ||
	    (rc = jobs_ctl_param_id(params, &id, cause, causelen)) != 0)
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
	if ((rc = attached_lookup_live(d, id, &r, cause, causelen)) != 0)
		return rc;
	if (p->uid != r->j->uid || r->client_id != p->client_id) {
		snprintf(cause, causelen,
		         "job %" PRId64 " is not attached to this connection",
		         id);
		return PROTO_E_PERM;
	}
	if (r->j->state != JOB_RUNNING) {
		snprintf(cause, causelen, "job %" PRId64 " is %s, not running",
		         id, job_state_name(r->j->state));
		return PROTO_E_STATE;
	}
	jrec_proc_exited(d, r, 1, code < 0 ? 0 : (int)code,
	                 sig < 0 ? 0 : (int)sig);
	if ((rc = jobs_ctl_end_recorded(d, r, cause, causelen)) != 0)
		return rc;
	/* Ended, or requeued for another attempt. */
	*result =
	    jobs_ctl_job_json(r->j, jrec_is_live(r) ? r : NULL, p->uid, 0);
	return 0;
}

int
jobs_ctl_resume(struct daemon *d, const struct peer *p, const cJSON *req_id,
                const cJSON *params, cJSON **result, char *cause,
                size_t causelen)
{
	static const char *const known[] = {"id", NULL};
	struct jrec *r;
	struct job *stored;
	int64_t id;
	int rc;

	if ((rc = proto_params_check(params, known, cause, causelen)) != 0 ||
	    (rc = jobs_ctl_param_id(params, &id, cause, causelen)) != 0)
		return rc;
	if ((rc = jobs_ctl_lookup(d, id, &r, &stored, cause, causelen)) != 0)
		return rc;
	if (stored != NULL) {
		if (!jobs_ctl_may_see(p->uid, stored)) {
			job_free(stored);
			snprintf(cause, causelen,
			         "job %" PRId64 " is not yours", id);
			return PROTO_E_PERM;
		}
		*result = jobs_ctl_job_json(stored, NULL, p->uid, 0);
		job_free(stored);
		return 0; /* ended: the client learns how */
	}
	if (!jobs_ctl_may_see(p->uid, r->j)) {
		snprintf(cause, causelen, "job %" PRId64 " is not yours", id);
		return PROTO_E_PERM;
	}
	if (!r->j->attached) {
		snprintf(cause, causelen,
		         "job %" PRId64 " is detached: nothing to resume", id);
		return PROTO_E_STATE;
	}
	r->client_id = p->client_id;
	r->orphan_since_ms = 0;
	r->note_pos = -1;
	*result = jobs_ctl_job_json(r->j, r, p->uid, 0);
	jobs_admit_soon(d);
	return 0;
}

void
jobs_client_gone(struct daemon *d, uint64_t client_id)
{
	struct jobs *js = d->jobs;
	size_t i;

	if (js == NULL)
		return;
	jobs_ctl_drop(js, client_id, 0);
	jobs_logs_drop(js, client_id, 0);
	/* A daemon that is stopping closes every client: its attached jobs
	 * are not given up, the next daemon awaits their resume. */
	for (i = 0; i < js->n && !d->stopping; i++) {
		struct jrec *r = js->v[i];
		if (!jrec_is_live(r) || r->client_id != client_id)
			continue;
		r->client_id = 0;
		r->orphan_since_ms = 0;
		if (r->j->state == JOB_QUEUED || r->j->state == JOB_ADMITTED) {
			/* Nobody will start it. */
			jrec_end(
			    d, r, JOB_CANCELLED, "client_gone",
			    jobs_fmt_detail("its client disconnected before it "
			                    "started"));
			continue;
		}
		log_info("jobs: job %" PRId64 ": client gone, still "
		         "enforcing its budget",
		         r->j->id);
	}
	jobs_admit_soon(d);
}

void
jobs_attached_check(struct daemon *d, struct jrec *r, int64_t now)
{
	struct job *j = r->j;

	if (!j->attached || r->client_id != 0 || r->orphan_since_ms <= 0 ||
	    now - r->orphan_since_ms < JOBS_RESUME_GRACE_MS)
		return;
	if (j->state == JOB_QUEUED) {
		jrec_end(d, r, JOB_CANCELLED, "client_gone",
		         jobs_fmt_detail("its client did not come back after a "
		                         "daemon restart"));
	} else if (j->state == JOB_ADMITTED) {
		jrec_end(d, r, JOB_LOST, "client_gone",
		         jobs_fmt_detail("admitted, but its client did not "
		                         "come back after a daemon restart to "
		                         "start it"));
	}
}
