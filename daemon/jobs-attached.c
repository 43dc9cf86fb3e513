/*
 * Attached jobs: the client runs the command itself once the job is
 * admitted (job_pid), reports its end (job_exit) and may come back after a
 * daemon restart (resume). A job whose client goes away before starting it
 * is cancelled; one already running is still enforced, and its end is
 * noticed when its processes are gone. One the daemon ends (a kill, a
 * breach) ends, or goes back to the queue, once its process is gone, with
 * no wait for its client's job_exit: a stuck or crashed client must not
 * keep it running in everyone's view.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "jobs-internal.h"
#include "log.h"
#include "platform.h"
#include "proto.h"

/* job_pid: the front checked the job, the peer and the process. */
int
jobs_attach(struct daemon *d, int64_t id, uint64_t client_id, pid_t pid,
            pid_t pgid, uint64_t start_time)
{
	struct jrec *r = jobs_find(d->jobs, id);

	if (r == NULL || !jrec_is_live(r))
		return PROTO_E_STATE;
	r->client_id = client_id;
	r->orphan_since_ms = 0;
	/* A new attempt: the client reported the one before, or never
	 * will. */
	r->exit_owed = 0;
	jrec_started(d, r, pid, pgid, start_time, clock_wall_ms());
	return 0;
}

int
jobs_exit_owed(struct daemon *d, int64_t id)
{
	struct jrec *r = jobs_find(d->jobs, id);

	if (r == NULL || !jrec_is_live(r) || !r->exit_owed)
		return 0;
	r->exit_owed = 0;
	return 1;
}

int
jobs_exit(struct daemon *d, int64_t id, int code, int sig, char *cause,
          size_t causelen)
{
	struct jrec *r = jobs_find(d->jobs, id);

	if (r == NULL || !jrec_is_live(r)) {
		snprintf(cause, causelen, "job %" PRId64 " has ended", id);
		return PROTO_E_STATE;
	}
	if (r->j->state == JOB_ADMITTED && r->term_reason == NULL) {
		/* Its client ran the command, which ended (and was reaped)
		 * before job_pid could be sent: the end is known, though the
		 * daemon never watched it. It started after its admission. */
		r->term_pending = 0;
		r->j->started_ms = r->j->admitted_ms;
		r->j->exit_code = code < 0 ? 0 : code;
		r->j->term_signal = sig < 0 ? 0 : sig;
		jrec_end(d, r, JOB_EXITED, NULL,
		         jobs_fmt_detail("it ended before its client reported "
		                         "its pid, so the daemon did not watch "
		                         "it"));
		return jobs_ctl_end_recorded(d, r, cause, causelen);
	}
	jrec_proc_exited(d, r, 1, code < 0 ? 0 : code, sig < 0 ? 0 : sig);
	return jobs_ctl_end_recorded(d, r, cause, causelen);
}

void
jobs_resume(struct daemon *d, int64_t id, uint64_t client_id)
{
	struct jrec *r = jobs_find(d->jobs, id);

	if (r == NULL || !jrec_is_live(r))
		return;
	r->client_id = client_id;
	r->orphan_since_ms = 0;
	r->note_pos = -1;
	jobs_admit_soon(d);
}

void
jobs_client_gone(struct daemon *d, uint64_t client_id)
{
	struct jobs *js = d->jobs;
	size_t i;

	if (js == NULL)
		return;
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
		/* A Slurm task's client is its own process, whose
		 * connection closes at exec by design: nothing to say. */
		if (!jrec_root_reports(r))
			log_info("jobs: job %" PRId64 ": client gone, still "
			         "enforcing its budget",
			         r->j->id);
	}
	jobs_admit_soon(d);
}

/* Is the job's own process gone: no such pid, another process under its
 * pid (a start time of its own), or a zombie (platform_proc_info fails
 * for one: exited, only not reaped yet by its client)? */
static int
attached_proc_gone(const struct job *j)
{
	struct proc_info pi;

	if (j->pid <= 0)
		return 0;
	if (platform_proc_info(j->pid, &pi) != 0)
		return 1;
	return j->start_time != 0 && pi.start_time != j->start_time;
}

/*
 * A running job the daemon is ending (term_reason: a kill; requeue: a
 * breach with retries left) whose process is gone ends now, with the
 * daemon's reason, or goes back to the queue. Its client has not said how
 * the process ended and may never (stuck, crashed): the end is the
 * daemon's anyway, the exit status unknown. The client's later job_exit
 * is answered with the job as it is then (PROTOCOL.md, job_exit).
 */
static void
attached_end_by_daemon(struct daemon *d, struct jrec *r)
{
	struct job *j = r->j;

	if (j->state != JOB_RUNNING || r->client_id == 0 ||
	    (r->term_reason == NULL && !r->requeue) || !attached_proc_gone(j))
		return;
	log_info("jobs: job %" PRId64 ": its process %ld is gone; ended by "
	         "the daemon (%s) without its client's report",
	         j->id, (long)j->pid, r->requeue ? "requeued" : r->term_reason);
	r->exit_owed = 1;
	jrec_proc_exited(d, r, 0, 0, 0);
}

int
jrec_root_reports(const struct jrec *r)
{
	return r->j->exit_reporter != NULL &&
	       strcmp(r->j->exit_reporter, "root") == 0;
}

void
jobs_attached_check(struct daemon *d, struct jrec *r, int64_t now)
{
	struct job *j = r->j;

	if (j->state == JOB_RUNNING && r->report_wait_ms > 0 &&
	    r->client_id == 0 && r->tree_gone &&
	    now - r->report_wait_ms >= JOBS_REPORT_GRACE_MS) {
		r->report_wait_ms = 0;
		jrec_proc_exited(d, r, 0, 0, 0);
		return;
	}

	if (j->attached)
		attached_end_by_daemon(d, r);
	if (!jrec_is_live(r))
		return;
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
