/*
 * Detached jobs: spawn.c starts each one under a monitor when it is
 * admitted; the monitor reports its start and end through a pipe, watched
 * here. A job re-adopted after a restart has no pipe: spawn_check() tells
 * at every sample whether it still runs.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "jobs-internal.h"
#include "log.h"
#include "platform.h"
#include "proto.h"
#include "spawn.h"
#include "units.h"

/* Most groups looked up for one user; more are not read (a group past
 * them counts as lost). */
#define DETACHED_GROUPS_MAX 65536

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

/* A marker line is at most this long; the monitor keeps a reserve of
 * 4 KiB below each of the log's bounds for such closing lines. */
#define MARK_LINE_MAX 320

int
jobs_mark_text(const struct job *j, int next_attempt, char *buf, size_t len)
{
	const char *reason = j->end_reason, *text;
	char at[24], grew[24], budget[24], own[64] = "", then[48] = "";
	cJSON *k = NULL;
	int64_t at_ms = j->ended_ms > 0 ? j->ended_ms : clock_wall_ms();
	uint64_t growth = 0, budget_bytes = j->swap_budget_bytes;
	int n;

	if (reason == NULL || strcmp(reason, "spawn") == 0)
		return -1; /* ended on its own; a spawn error says so itself */
	if (j->kill != NULL && (k = cJSON_Parse(j->kill)) != NULL) {
		cJSON *v = cJSON_GetObjectItemCaseSensitive(k, "at_ms");
		if (cJSON_IsNumber(v) && v->valuedouble > 0)
			at_ms = (int64_t)v->valuedouble;
		v = cJSON_GetObjectItemCaseSensitive(k, "swap_growth_bytes");
		if (cJSON_IsNumber(v) && v->valuedouble > 0)
			growth = (uint64_t)v->valuedouble;
		v = cJSON_GetObjectItemCaseSensitive(k, "swap_budget_bytes");
		if (cJSON_IsNumber(v) && v->valuedouble > 0)
			budget_bytes = (uint64_t)v->valuedouble;
		cJSON_Delete(k);
	}
	jobs_clock_hms(at_ms, at, sizeof at);
	if (next_attempt > 0)
		snprintf(then, sizeof then, "; requeued for attempt %d",
		         next_attempt);
	if (strcmp(reason, "swap_budget") == 0) {
		if (PLATFORM_JOB_SWAP)
			snprintf(own, sizeof own, "; its own swap %s",
			         jobs_size_words(j->job_swap_bytes, grew,
			                         sizeof grew));
		n = snprintf(
		    buf, len,
		    "stageload: %s at %s: the system's swap grew %s "
		    "while it ran, over its %s budget%s%s\n",
		    next_attempt > 0 ? "stopped" : "killed", at,
		    jobs_size_words(growth, grew, sizeof grew),
		    jobs_size_words(budget_bytes, budget, sizeof budget), own,
		    then);
	} else {
		text = names_end_text(reason);
		n = snprintf(buf, len, "stageload: %s at %s: %s (%s)%s\n",
		             next_attempt > 0 ? "stopped"
		                              : job_state_name(j->state),
		             at, text != NULL ? text : reason, reason, then);
	}
	return n > 0 && (size_t)n < len ? n : -1;
}

void
jobs_detached_mark(struct daemon *d, const struct job *j, int next_attempt)
{
	char path[1024], line[MARK_LINE_MAX];
	struct stat sb;
	int fd, n;

	/* Only a log its monitor made: never one of an attempt that did not
	 * start (it is not there, or an old one the next monitor replaces). */
	if (j->attached ||
	    (j->started_ms <= 0 && j->attempt <= 1 && next_attempt == 0))
		return;
	if ((n = jobs_mark_text(j, next_attempt, line, sizeof line)) < 0)
		return;
	if (spawn_log_path(d->cfg.state_dir, j->id, path, sizeof path) != 0)
		return;
	/* One small append to a file its monitor has finished with (the
	 * job's end, or its attempt's, is known only once the monitor has
	 * closed the log): as the exit hint reads it. */
	fd = open(path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_NONBLOCK |
	                    O_CLOEXEC | O_NOCTTY);
	if (fd == -1)
		return;
	if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_nlink == 1 &&
	    sb.st_uid == j->uid && write(fd, line, (size_t)n) != n)
		log_warnx("jobs: job %" PRId64 ": cannot write its log's "
		          "marker line",
		          j->id);
	close(fd);
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

/*
 * The groups uid is in now, by the group database (its primary group
 * included), into *out (malloc'd), as initgroups(3) would read them:
 * 0; 1 when the user is not found (it is in none); -1 when the database
 * could not be read (nothing is known).
 */
static int
detached_user_groups(uid_t uid, gid_t **out, int *n)
{
	struct passwd pw, *res = NULL;
	char *buf = NULL, *nb;
	size_t len = 1024;
	gid_t *v = NULL, *nv;
	int cap = 64, got, rc = -1;

	*out = NULL;
	*n = 0;
	for (;;) {
		if ((nb = realloc(buf, len)) == NULL)
			goto out;
		buf = nb;
		rc = getpwuid_r(uid, &pw, buf, len, &res);
		if (rc != ERANGE || len >= (1 << 20))
			break;
		len *= 2;
	}
	if (rc != 0) {
		rc = -1;
		goto out;
	}
	if (res == NULL) {
		rc = 1;
		goto out;
	}
	rc = -1;
	for (;;) {
		if ((nv = realloc(v, sizeof *v * (size_t)cap)) == NULL)
			break;
		v = nv;
		got = cap;
#ifdef __APPLE__
		if (getgrouplist(pw.pw_name, (int)pw.pw_gid, (int *)v, &got) >=
		    0) {
#else
		if (getgrouplist(pw.pw_name, pw.pw_gid, v, &got) >= 0) {
#endif
			*out = v;
			*n = got;
			v = NULL;
			rc = 0;
			break;
		}
		if (cap >= DETACHED_GROUPS_MAX)
			break;
		cap *= 2;
	}
out:
	free(v);
	free(buf);
	return rc;
}

/*
 * A queued job's groups were those of the process that submitted it; it
 * may have waited long (held, say) since. At its start each one its user
 * is no longer in, by the group database, is dropped: it runs without it,
 * an event "groups_dropped" names them, and show says so (docs/jobs.md,
 * "Groups a job runs with"). Its gid, root's jobs and the daemon's own
 * user's are left as they are.
 */
static void
detached_groups_recheck(struct daemon *d, struct jrec *r)
{
	struct job *j = r->j;
	gid_t *now = NULL;
	cJSON *det, *gone;
	int i, k, n = 0, kept = 0, found;

	if (j->ngroups == 0 || j->uid == 0 || j->uid == geteuid())
		return;
	/* Not found (deleted): in no group but its own gid. Unreadable: as
	 * submitted, rather than take away what it may well still have. */
	if (detached_user_groups(j->uid, &now, &n) < 0) {
		log_warnx("jobs: job %" PRId64 " starts with its submitter's "
		          "groups: the group database could not be read",
		          j->id);
		return;
	}
	det = cJSON_CreateObject();
	gone = cJSON_AddArrayToObject(det, "groups");
	for (i = 0; i < j->ngroups; i++) {
		found = j->groups[i] == j->gid;
		for (k = 0; !found && k < n; k++)
			found = now[k] == j->groups[i];
		if (found)
			j->groups[kept++] = j->groups[i];
		else
			cJSON_AddItemToArray(
			    gone, cJSON_CreateNumber((double)j->groups[i]));
	}
	free(now);
	if (kept == j->ngroups) {
		cJSON_Delete(det);
		return;
	}
	log_info("jobs: job %" PRId64 " starts without %d of its groups: "
	         "uid %u is no longer in them",
	         j->id, j->ngroups - kept, (unsigned)j->uid);
	j->ngroups = kept;
	j->privileged =
	    jobs_privileged(d, j->uid, j->gid, j->groups, j->ngroups);
	/* Not committed, it still starts without them: the spawn that
	 * follows commits the record again. */
	jrec_commit(d, r);
	jobs_event(d, j, NAMES_EVENT_GROUPS_DROPPED, det);
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
	detached_groups_recheck(d, r);
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
