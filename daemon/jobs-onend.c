/*
 * A job's on-end command (submit's on_end; docs/jobs.md, "When a job
 * ends"): run once, as the job's submitter, when its end is recorded by a
 * running daemon, through spawn.c's monitor as a detached job is
 * (spawn_hook), with the job's id, state, exit code and end reason in its
 * environment and its output appended to the job's log. Bounded: each runs
 * at most on_end_timeout (its monitor ends it), at most
 * max_on_end_per_uid at once per uid (root exempt) and JOBS_ONEND_MAX in
 * all; one past a bound is not run, and its event says so.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "jobs-internal.h"
#include "log.h"
#include "proto.h"
#include "spawn.h"
#include "store.h"

#define JOBS_ONEND_MAX 64

/* One on-end command running: its monitor's pipe, watched. */
struct onend_run {
	struct onend_run *next;
	struct daemon *d;
	uv_poll_t poll;
	int fd;
	uid_t uid;
	int64_t job_id;
	int done;
};

static size_t
onend_running(struct jobs *js, uid_t uid)
{
	struct onend_run *o;
	size_t n = 0;

	for (o = js->onend; o != NULL; o = o->next)
		if (!o->done && (uid == (uid_t)-1 || o->uid == uid))
			n++;
	return n;
}

static void
onend_closed(uv_handle_t *h)
{
	struct onend_run *o = h->data;

	close(o->fd);
	free(o);
}

/* Stop watching o and free it (in its close callback). */
static void
onend_drop(struct jobs *js, struct onend_run *o)
{
	struct onend_run **pp;

	for (pp = &js->onend; *pp != NULL; pp = &(*pp)->next)
		if (*pp == o) {
			*pp = o->next;
			break;
		}
	o->done = 1;
	uv_poll_stop(&o->poll);
	uv_close((uv_handle_t *)&o->poll, onend_closed);
}

/* The event of a job's on-end command: how it ended, or why it did not
 * run. Recorded against the job, its owner's to read. */
static void
onend_event(struct daemon *d, int64_t job_id, uid_t uid, cJSON *det)
{
	struct job j;

	memset(&j, 0, sizeof j);
	j.id = job_id;
	j.uid = uid;
	jobs_event(d, &j, NAMES_EVENT_ON_END, det);
}

static void
onend_poll_cb(uv_poll_t *h, int status, int events)
{
	struct onend_run *o = h->data;
	struct spawn_event ev;
	cJSON *det;
	int rc;

	(void)status;
	(void)events;
	for (;;) {
		rc = spawn_read_event(o->fd, &ev);
		if (rc == 0)
			return;
		if (rc < 0) {
			/* The monitor went without a word: nothing more to
			 * learn, its own timeout still holds. */
			onend_drop(o->d->jobs, o);
			return;
		}
		/* Its output stopped growing the log: the log's own line
		 * says so; only its end makes the on_end event. */
		if (ev.kind == SPAWN_EV_STARTED || ev.kind == SPAWN_EV_LOG)
			continue;
		det = cJSON_CreateObject();
		if (ev.kind == SPAWN_EV_FAILED)
			cJSON_AddStringToObject(det, "failed", ev.status.cause);
		else if (ev.status.term_signal > 0)
			proto_add_int(det, "signal", ev.status.term_signal);
		else
			proto_add_int(det, "exit_code", ev.status.exit_code);
		onend_event(o->d, o->job_id, o->uid, det);
		onend_drop(o->d->jobs, o);
		return;
	}
}

/* "NAME=value" into a malloc'd string; NULL when out of memory. */
static char *
onend_var(const char *name, const char *value)
{
	return jobs_fmt_detail("%s=%s", name, value != NULL ? value : "");
}

void
jobs_onend_start(struct daemon *d, const struct job *j)
{
	struct jobs *js = d->jobs;
	struct spawn_child child;
	struct onend_run *o;
	struct job *row = NULL;
	char cause[256], code[16] = "", *extra[5] = {NULL};
	const char *skip = NULL;
	cJSON *det;
	int rc, i;

	if (j->on_end == NULL || j->attached)
		return;
	if (js->loading)
		skip = "the job ended while no daemon ran";
	else if (d->stopping)
		skip = "the daemon was stopping";
	else if (onend_running(js, (uid_t)-1) >= JOBS_ONEND_MAX)
		skip = "too many on-end commands running (64 in all)";
	else if (j->uid != 0 &&
	         onend_running(js, j->uid) >= (size_t)d->cfg.max_on_end_per_uid)
		skip = "too many of this user's on-end commands running "
		       "(max_on_end_per_uid)";
	if (skip != NULL) {
		log_info("jobs: job %" PRId64 ": on-end command not run: %s",
		         j->id, skip);
		det = cJSON_CreateObject();
		cJSON_AddStringToObject(det, "not_run", skip);
		onend_event(d, j->id, j->uid, det);
		return;
	}
	/* Its env is in its row only (job_drop_args). */
	if ((rc = store_job_get(d->store, j->id, &row)) != 0 || row == NULL) {
		snprintf(cause, sizeof cause,
		         "could not read the job from the database (%s)",
		         rc < 0 ? strerror(-rc) : "no row");
		goto fail;
	}
	row->max_log_bytes = d->cfg.max_log_bytes;
	if (j->state == JOB_EXITED && j->term_signal == 0 && j->started_ms > 0)
		snprintf(code, sizeof code, "%d", j->exit_code);
	extra[0] = onend_var("STAGELOAD_JOB_STATE", job_state_name(j->state));
	extra[1] = onend_var("STAGELOAD_JOB_EXIT_CODE", code);
	extra[2] = onend_var("STAGELOAD_JOB_END_REASON", j->end_reason);
	extra[3] = onend_var("STAGELOAD_JOB_NAME", j->name);
	for (i = 0; i < 4; i++)
		if (extra[i] == NULL) {
			snprintf(cause, sizeof cause, "out of memory");
			goto fail;
		}
	o = calloc(1, sizeof *o);
	if (o == NULL) {
		snprintf(cause, sizeof cause, "out of memory");
		goto fail;
	}
	rc = spawn_hook(d->cfg.state_dir, row, j->on_end, extra,
	                d->cfg.on_end_timeout_ms, &child, cause, sizeof cause);
	if (rc != 0 || uv_poll_init(d->loop, &o->poll, child.fd) != 0) {
		if (rc == 0) {
			close(child.fd);
			snprintf(cause, sizeof cause, "cannot watch it");
		}
		free(o);
		goto fail;
	}
	o->d = d;
	o->fd = child.fd;
	o->uid = j->uid;
	o->job_id = j->id;
	o->poll.data = o;
	o->next = js->onend;
	js->onend = o;
	uv_poll_start(&o->poll, UV_READABLE | UV_DISCONNECT, onend_poll_cb);
	goto out;
fail:
	log_warnx("jobs: job %" PRId64 ": on-end command not started: %s",
	          j->id, cause);
	det = cJSON_CreateObject();
	cJSON_AddStringToObject(det, "failed", cause);
	onend_event(d, j->id, j->uid, det);
out:
	for (i = 0; i < 4; i++)
		free(extra[i]);
	job_free(row);
}

void
jobs_onend_shutdown(struct daemon *d)
{
	struct jobs *js = d->jobs;

	/* The commands go on under their monitors, bounded by them. */
	while (js->onend != NULL)
		onend_drop(js, js->onend);
}
