/*
 * Detached jobs: spawn.c starts each one under a monitor when it is
 * admitted; the monitor reports its start and end through a pipe, watched
 * here. A job re-adopted after a restart has no pipe: spawn_check() tells
 * at every sample whether it still runs.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "jobs-internal.h"
#include "platform.h"
#include "proto.h"
#include "spawn.h"

struct monitor_poll {
	struct jobs *js;
	int64_t job_id;
	int fd;
};

static void
monitor_poll_closed(uv_handle_t *h)
{
	struct monitor_poll *mp = h->data;

	close(mp->fd);
	free(mp);
	free(h);
}

void
jobs_detached_unwatch(struct jrec *r)
{
	if (r->poll != NULL) {
		uv_poll_stop(r->poll);
		uv_close((uv_handle_t *)r->poll, monitor_poll_closed);
		r->poll = NULL;
	}
}

/* How much of a log's end is read for a hint: a traceback's last lines. */
#define EXIT_HINT_TAIL 8192

char *
jobs_detached_exit_hint(struct daemon *d, const struct job *j)
{
	char path[1024], buf[EXIT_HINT_TAIL], hint[512];
	const char *home = NULL;
	struct stat st;
	ssize_t n;
	off_t from;
	size_t i;
	int fd;

	if (spawn_log_path(d->cfg.state_dir, j->id, path, sizeof path) != 0 ||
	    (fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) == -1)
		return NULL;
	/* One small read of a file the monitor has finished writing. */
	from = fstat(fd, &st) == 0 && st.st_size > EXIT_HINT_TAIL
	           ? st.st_size - EXIT_HINT_TAIL
	           : 0;
	n = pread(fd, buf, sizeof buf, from);
	close(fd);
	if (n <= 0)
		return NULL;
	for (i = 0; j->env != NULL && j->env[i] != NULL; i++)
		if (strncmp(j->env[i], "HOME=", 5) == 0)
			home = j->env[i] + 5;
	platform_log_hint(buf, (size_t)n, home, hint, sizeof hint);
	return hint[0] != '\0' ? xstrdup(hint) : NULL;
}

void
jobs_detached_ended(struct daemon *d, struct jrec *r,
                    const struct spawn_status *st)
{
	if (st->failed)
		jrec_end(d, r, JOB_FAILED, "spawn", xstrdup(st->cause));
	else
		jrec_proc_exited(d, r, 1, st->exit_code, st->term_signal);
}

/* Its log stopped growing: the job runs on, its output is dropped (the
 * log's last line will say from where); an event says so now. */
static void
detached_log_stopped(struct daemon *d, struct jrec *r,
                     const struct spawn_event *ev)
{
	cJSON *det = cJSON_CreateObject();

	if (det != NULL) {
		proto_add_int(det, "from_byte", ev->log_from);
		cJSON_AddStringToObject(det, "bound", ev->status.cause);
	}
	jobs_event(d, r->j, NAMES_EVENT_OUTPUT_DROPPED, det);
}

static void
monitor_poll_cb(uv_poll_t *h, int status, int events)
{
	struct monitor_poll *mp = h->data;
	struct daemon *d = mp->js->d;
	struct jrec *r = jobs_find(mp->js, mp->job_id);
	struct spawn_event ev;
	int rc;

	if (r == NULL || r->poll != h) {
		uv_poll_stop(h);
		return;
	}
	for (;;) {
		rc = spawn_read_event(mp->fd, &ev);
		if (rc == 0)
			return;
		if (rc < 0) {
			/* The monitor is gone: from now on spawn_check
			 * tells what became of the job. */
			jobs_detached_unwatch(r);
			if (!JOB_STATE_ENDED(r->j->state))
				r->adopted = 1;
			return;
		}
		switch (ev.kind) {
		case SPAWN_EV_STARTED:
			jrec_started(d, r, ev.pid, ev.pgid, ev.start_time,
			             ev.started_ms);
			break;
		case SPAWN_EV_FAILED:
			jobs_detached_unwatch(r);
			jrec_end(d, r, JOB_FAILED, "spawn",
			         xstrdup(ev.status.cause));
			return;
		case SPAWN_EV_ENDED:
			jobs_detached_unwatch(r);
			jobs_detached_ended(d, r, &ev.status);
			return;
		case SPAWN_EV_LOG:
			detached_log_stopped(d, r, &ev);
			break;
		}
	}
}

static void
detached_watch(struct daemon *d, struct jrec *r, int fd)
{
	struct monitor_poll *mp = malloc(sizeof *mp);
	uv_poll_t *h = malloc(sizeof *h);

	if (mp == NULL || h == NULL || uv_poll_init(d->loop, h, fd) != 0) {
		free(mp);
		free(h);
		close(fd);
		r->adopted = 1;
		return;
	}
	mp->js = d->jobs;
	mp->job_id = r->j->id;
	mp->fd = fd;
	h->data = mp;
	r->poll = h;
	uv_poll_start(h, UV_READABLE | UV_DISCONNECT, monitor_poll_cb);
}

void
jobs_detached_spawn(struct daemon *d, struct jrec *r)
{
	struct job *j = r->j, *row = NULL;
	struct spawn_child child;
	char cause[256];
	int rc;

	/* Its argv and env are read from its row for the start only
	 * (job_drop_args). */
	if (j->argv == NULL &&
	    ((rc = store_job_get(d->store, j->id, &row)) != 0 ||
	     row->argv == NULL)) {
		job_free(row);
		jrec_end(d, r, JOB_FAILED, "spawn",
		         jobs_fmt_detail("could not read its command from the "
		                         "database (%s)",
		                         rc < 0 ? strerror(-rc) : "no row"));
		return;
	}
	if (row != NULL) {
		j->argv = row->argv;
		j->env = row->env;
		row->argv = row->env = NULL;
		job_free(row);
	}
	j->max_log_bytes = d->cfg.max_log_bytes;
	rc = d->jobs->ops->spawn(d->cfg.state_dir, j, &child, cause,
	                         sizeof cause);
	(void)job_drop_args(j); /* j->command is set: it cannot fail */
	if (rc != 0) {
		jrec_end(d, r, JOB_FAILED, "spawn", xstrdup(cause));
		return;
	}
	j->monitor_pid = child.monitor_pid;
	jrec_commit(d, r);
	detached_watch(d, r, child.fd);
}

void
jobs_detached_check(struct daemon *d, struct jrec *r)
{
	struct job *j = r->j;
	struct spawn_status st;
	char cause[256];
	int fate;

	if (!r->adopted || j->attached ||
	    (j->state != JOB_RUNNING && j->state != JOB_ADMITTED))
		return;
	/* The pipe went before its STARTED report: the monitor's record of
	 * the start says which process to follow, as after a restart. */
	if (j->pid <= 0 && spawn_started(d->cfg.state_dir, j) == 0 &&
	    j->pid > 0)
		jrec_started(d, r, j->pid, j->pgid, j->start_time,
		             j->started_ms);
	memset(&st, 0, sizeof st);
	fate = spawn_check(d->cfg.state_dir, j, &st, cause, sizeof cause);
	if (fate == SPAWN_ENDED) {
		jobs_detached_ended(d, r, &st);
		return;
	}
	if (fate == SPAWN_LOST) {
		if (r->breach_kill)
			jobs_victim_gone(d, r);
		jrec_end(d, r, JOB_LOST, "lost",
		         jobs_fmt_detail("the daemon could not follow it: %s",
		                         cause));
	}
}
