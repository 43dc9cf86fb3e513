/*
 * The job table. Every job not yet ended has a record here (struct jrec);
 * ended jobs live only in the store. The rules (state machine, admission,
 * breach) are specified in docs/jobs.md; admit.c and enforce.c decide, this
 * file applies the decisions: it commits each transition to the store
 * before announcing it, signals process trees, follows detached jobs
 * through their monitors and answers the job methods of PROTOCOL.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <uv.h>

#include "admit.h"
#include "control.h"
#include "daemon.h"
#include "enforce.h"
#include "job.h"
#include "jobs.h"
#include "log.h"
#include "proctree.h"
#include "proto.h"
#include "server.h"
#include "spawn.h"
#include "store.h"
#include "units.h"

#define JOBS_WINDOW 16 /* footprints kept for settle */
#define JOBS_MAX_NAME 256
#define JOBS_MAX_CWD 4096
#define JOBS_LOG_CHUNK (64 * 1024)
#define JOBS_LOG_PER_PASS (1024 * 1024) /* per follower per pass */
#define JOBS_ADMIT_PER_PASS 64

struct jobs;

/* A job that has not ended (or whose end is not yet committed). */
struct jrec {
	struct jobs *js;
	struct job *j;
	struct proctree *tree;
	uint64_t
	    fp[JOBS_WINDOW]; /* footprints since it started, oldest first */
	size_t nfp;
	uint64_t growth_bytes;
	int64_t growth_restarted_ms; /* 0: growth counts from admission */
	long position;               /* 1-based while queued */
	enum admit_wait wait;

	uint64_t client_id;      /* attached: the connection that owns it */
	int64_t orphan_since_ms; /* attached, no client since (restart) */

	const char *term_reason; /* being terminated: why (static string) */
	char *term_detail;       /* the paragraph for end_detail */
	int term_pending;        /* terminate as soon as there is a pid */
	int breach_kill;         /* the current breach victim */
	int requeue;             /* breach with retries left */
	uv_timer_t *kill_timer;
	int signalled_kill;

	uv_poll_t *poll; /* detached: the monitor's report pipe */
	int adopted;     /* detached without a pipe: spawn_check each sample */

	int dirty;       /* the store is behind this record */
	int end_pending; /* ended in memory; announce once committed */
	int done;        /* ended and announced; kept while kill_timer runs */

	long note_pos, note_of; /* last queue notification sent */
	int note_free;
	enum admit_wait note_wait;
};

struct waiter {
	struct waiter *next;
	uint64_t client_id;
	uid_t uid;
	cJSON *req_id;
	int64_t job_id;
};

struct log_reader {
	struct log_reader *next;
	uint64_t client_id;
	cJSON *req_id;
	int64_t job_id;
	uint64_t offset;
	int follow;
};

struct event_follower {
	struct event_follower *next;
	uint64_t client_id;
	uid_t uid;
};

struct pending_event {
	struct pending_event *next;
	struct store_event e;
	char kind[16];
	char *detail;
};

struct monitor_poll {
	struct jobs *js;
	int64_t job_id;
	int fd;
};

struct jobs {
	struct daemon *d;
	struct jrec **v;
	size_t n, cap;
	struct waiter *waiters;
	struct log_reader *logs;
	struct event_follower *followers;
	struct pending_event *pending, **pending_tail;
	jobs_event_cb event_cb;
	uv_timer_t *admit_timer;
	int storage_failed; /* d->storage_error was set by this module */
};

static void jobs_admit_soon(struct daemon *d);
static void jrec_release(struct daemon *d, struct jrec *r);
static void jrec_proc_exited(struct daemon *d, struct jrec *r, int known,
                             int exit_code, int term_signal);

/* ---- small helpers ---- */

static char *
xstrdup(const char *s)
{
	return s == NULL ? NULL : strdup(s);
}

static void
user_name(uid_t uid, char *buf, size_t len)
{
	struct passwd pw, *res = NULL;
	char tmp[2048];

	if (getpwuid_r(uid, &pw, tmp, sizeof tmp, &res) == 0 && res != NULL)
		snprintf(buf, len, "%s", pw.pw_name);
	else
		snprintf(buf, len, "%u", (unsigned)uid);
}

static const char *
pressure_name(enum pressure_level p)
{
	switch (p) {
	case PRESSURE_NORMAL:
		return "normal";
	case PRESSURE_WARN:
		return "warn";
	case PRESSURE_CRITICAL:
		return "critical";
	default:
		return "unknown";
	}
}

static void
clock_hms(int64_t ms, char *buf, size_t len)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	if (localtime_r(&t, &tm) == NULL)
		snprintf(buf, len, "%" PRId64, ms);
	else
		strftime(buf, len, "%H:%M:%S", &tm);
}

static char *
size_str(uint64_t bytes, char *buf, size_t len)
{
	if (units_format_size(bytes, buf, len) == NULL)
		snprintf(buf, len, "%" PRIu64 "B", bytes);
	return buf;
}

static int
is_live(const struct jrec *r)
{
	return !r->done && !r->end_pending;
}

static int
holds_memory(const struct jrec *r)
{
	return is_live(r) &&
	       (r->j->state == JOB_ADMITTED || r->j->state == JOB_RUNNING);
}

static struct jrec *
jobs_find(struct jobs *js, int64_t id)
{
	size_t i;

	for (i = 0; i < js->n; i++)
		if (js->v[i]->j->id == id && !js->v[i]->done)
			return js->v[i];
	return NULL;
}

static int
jobs_add(struct jobs *js, struct jrec *r)
{
	if (js->n == js->cap) {
		size_t cap = js->cap ? js->cap * 2 : 64;
		struct jrec **v = realloc(js->v, cap * sizeof *v);
		if (v == NULL)
			return -ENOMEM;
		js->v = v;
		js->cap = cap;
	}
	js->v[js->n++] = r;
	return 0;
}

static struct jrec *
jrec_new(struct jobs *js, struct job *j)
{
	struct jrec *r = calloc(1, sizeof *r);

	if (r == NULL)
		return NULL;
	r->js = js;
	r->j = j;
	r->position = 0;
	r->note_pos = -1;
	r->note_of = -1;
	r->note_free = -1;
	r->note_wait = ADMIT_WAIT_NONE;
	if (jobs_add(js, r) != 0) {
		free(r);
		return NULL;
	}
	return r;
}

/* ---- storage: commit before announcing ---- */

static void
jobs_storage_failed(struct daemon *d, const char *what, const char *cause)
{
	if (d->storage_error[0] == '\0')
		log_warnx("jobs: %s: %s; holding admissions", what, cause);
	snprintf(d->storage_error, sizeof d->storage_error, "%s: %s", what,
	         cause);
	d->jobs->storage_failed = 1;
}

/* Clear the error only when it is this module's: the sampler manages
 * its own (prefixed "samples: "). */
static void
jobs_storage_ok(struct daemon *d)
{
	const char *e = d->storage_error;

	if (!d->jobs->storage_failed)
		return;
	d->jobs->storage_failed = 0;
	if (strncmp(e, "job ", 4) == 0 || strncmp(e, "event: ", 7) == 0) {
		log_info("jobs: storage works again");
		d->storage_error[0] = '\0';
	}
}

static int
jrec_commit(struct daemon *d, struct jrec *r)
{
	char cause[256];

	if (store_job_update(d->store, r->j, cause, sizeof cause) != 0) {
		r->dirty = 1;
		jobs_storage_failed(d, "job update", cause);
		return -1;
	}
	r->dirty = 0;
	jobs_storage_ok(d);
	return 0;
}

cJSON *
jobs_event_json(const struct store_event *e, uid_t viewer_uid)
{
	cJSON *o = cJSON_CreateObject(), *detail = NULL;
	char user[64];

	if (o == NULL)
		return NULL;
	proto_add_int(o, "id", e->id);
	proto_add_int(o, "ts_ms", e->ts_ms);
	if (e->job_id > 0) {
		proto_add_int(o, "job_id", e->job_id);
		user_name(e->uid, user, sizeof user);
		cJSON_AddStringToObject(o, "user", user);
	} else {
		cJSON_AddNullToObject(o, "job_id");
		cJSON_AddNullToObject(o, "user");
	}
	cJSON_AddStringToObject(o, "kind", e->kind);
	if (e->detail != NULL &&
	    (e->job_id <= 0 || viewer_uid == 0 || viewer_uid == e->uid))
		detail = cJSON_Parse(e->detail);
	if (detail != NULL)
		cJSON_AddItemToObject(o, "detail", detail);
	else
		cJSON_AddNullToObject(o, "detail");
	return o;
}

static void
jobs_announce_event(struct daemon *d, const struct store_event *e)
{
	struct event_follower *f;

	for (f = d->jobs->followers; f != NULL; f = f->next) {
		cJSON *ev = jobs_event_json(e, f->uid);
		if (ev != NULL)
			server_notify(d, f->client_id, "event", ev);
	}
	if (d->jobs->event_cb != NULL)
		d->jobs->event_cb(d, e);
}

/* Commit the events held back by a storage failure, in order. */
static int
jobs_flush_events(struct daemon *d)
{
	struct jobs *js = d->jobs;
	struct pending_event *p;
	char cause[256];

	while ((p = js->pending) != NULL) {
		if (store_event_add(d->store, &p->e, cause, sizeof cause) !=
		    0) {
			jobs_storage_failed(d, "event", cause);
			return -1;
		}
		jobs_announce_event(d, &p->e);
		js->pending = p->next;
		if (js->pending == NULL)
			js->pending_tail = &js->pending;
		free(p->detail);
		free(p);
	}
	jobs_storage_ok(d);
	return 0;
}

/* Record an event (detail: JSON object, consumed). Announced once it is
 * committed; kept in memory and retried while storage fails. */
static void
jobs_event(struct daemon *d, const struct job *j, const char *kind,
           cJSON *detail)
{
	struct jobs *js = d->jobs;
	struct pending_event *p = calloc(1, sizeof *p);

	if (p == NULL) {
		cJSON_Delete(detail);
		return;
	}
	snprintf(p->kind, sizeof p->kind, "%s", kind);
	p->detail = detail != NULL ? cJSON_PrintUnformatted(detail) : NULL;
	cJSON_Delete(detail);
	p->e.ts_ms = now_ms();
	p->e.job_id = j != NULL ? j->id : 0;
	p->e.uid = j != NULL ? j->uid : 0;
	p->e.kind = p->kind;
	p->e.detail = p->detail;
	*js->pending_tail = p;
	js->pending_tail = &p->next;
	jobs_flush_events(d);
}

/* ---- the Job object ---- */

static int
may_see(uid_t viewer, const struct job *j)
{
	return viewer == 0 || viewer == j->uid;
}

static cJSON *
strv_json(char *const *v)
{
	cJSON *a = cJSON_CreateArray();

	for (; a != NULL && v != NULL && *v != NULL; v++)
		cJSON_AddItemToArray(a, cJSON_CreateString(*v));
	return a;
}

static void
add_opt_int(cJSON *o, const char *name, int64_t v, int present)
{
	if (present)
		proto_add_int(o, name, v);
	else
		cJSON_AddNullToObject(o, name);
}

/* The wire Job; r is the live record when there is one. */
static cJSON *
job_json(const struct job *j, const struct jrec *r, uid_t viewer, int with_env)
{
	cJSON *o = cJSON_CreateObject();
	int ended = JOB_STATE_ENDED(j->state);
	int visible = may_see(viewer, j);

	if (o == NULL)
		return NULL;
	proto_add_int(o, "id", j->id);
	cJSON_AddStringToObject(o, "user", j->user ? j->user : "");
	proto_add_int(o, "uid", j->uid);
	cJSON_AddStringToObject(o, "name", j->name ? j->name : "");
	cJSON_AddStringToObject(o, "state", job_state_name(j->state));
	cJSON_AddBoolToObject(o, "attached", j->attached);
	proto_add_int(o, "priority", j->priority);
	cJSON_AddNumberToObject(o, "wait_free_pct", j->wait_free_pct);
	proto_add_int(o, "swap_budget_bytes", (int64_t)j->swap_budget_bytes);
	proto_add_int(o, "expect_bytes", (int64_t)j->expect_bytes);
	cJSON_AddBoolToObject(o, "exclusive", j->exclusive);
	proto_add_int(o, "retry_on_breach", j->retry_on_breach);
	proto_add_int(o, "attempt", j->attempt);
	add_opt_int(o, "position", r ? r->position : 0,
	            r != NULL && j->state == JOB_QUEUED && r->position > 0);
	if (r != NULL && j->state == JOB_QUEUED)
		cJSON_AddStringToObject(o, "waiting_for",
		                        admit_wait_name(r->wait));
	proto_add_int(o, "submitted_at_ms", j->submitted_ms);
	add_opt_int(o, "admitted_at_ms", j->admitted_ms, j->admitted_ms > 0);
	add_opt_int(o, "started_at_ms", j->started_ms, j->started_ms > 0);
	add_opt_int(o, "ended_at_ms", j->ended_ms, ended && j->ended_ms > 0);
	add_opt_int(o, "pid", j->pid, j->pid > 0);
	proto_add_int(o, "footprint_bytes", (int64_t)j->footprint_bytes);
	proto_add_int(o, "footprint_peak_bytes",
	              (int64_t)j->footprint_peak_bytes);
	proto_add_int(o, "swap_growth_bytes",
	              r != NULL && !ended ? (int64_t)r->growth_bytes : 0);
	proto_add_int(o, "swap_growth_peak_bytes",
	              (int64_t)j->swap_growth_peak_bytes);
	proto_add_int(o, "job_swap_bytes", (int64_t)j->job_swap_bytes);
	/* A killed job may have ended with a code of its own (a TERM
	 * handler's exit), which is worth showing too. */
	add_opt_int(o, "exit_code", j->exit_code,
	            ended && j->term_signal == 0 && j->started_ms > 0 &&
	                (j->state == JOB_EXITED || j->state == JOB_KILLED));
	add_opt_int(o, "signal", j->term_signal, ended && j->term_signal > 0);
	if (ended && j->end_reason != NULL)
		cJSON_AddStringToObject(o, "end_reason", j->end_reason);
	else
		cJSON_AddNullToObject(o, "end_reason");
	if (visible) {
		cJSON_AddItemToObject(o, "argv", strv_json(j->argv));
		cJSON_AddStringToObject(o, "cwd", j->cwd ? j->cwd : "");
		if (ended && j->end_detail != NULL)
			cJSON_AddStringToObject(o, "end_detail", j->end_detail);
		else
			cJSON_AddNullToObject(o, "end_detail");
		if (with_env)
			cJSON_AddItemToObject(o, "env",
			                      j->env != NULL
			                          ? strv_json(j->env)
			                          : cJSON_CreateNull());
	}
	return o;
}

/* ---- queue order ---- */

static int
queue_cmp(const void *a, const void *b)
{
	const struct job *x = (*(struct jrec *const *)a)->j;
	const struct job *y = (*(struct jrec *const *)b)->j;

	if (x->priority != y->priority)
		return x->priority > y->priority ? -1 : 1;
	if (x->queue_seq != y->queue_seq)
		return x->queue_seq < y->queue_seq ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* The queued records in queue order (malloc'd; NULL with *n 0 when none);
 * also sets every queued record's position. */
static struct jrec **
jobs_queue(struct jobs *js, size_t *n)
{
	struct jrec **q;
	size_t i, k = 0;

	*n = 0;
	q = malloc((js->n ? js->n : 1) * sizeof *q);
	if (q == NULL)
		return NULL;
	for (i = 0; i < js->n; i++)
		if (is_live(js->v[i]) && js->v[i]->j->state == JOB_QUEUED)
			q[k++] = js->v[i];
	qsort(q, k, sizeof *q, queue_cmp);
	for (i = 0; i < k; i++)
		q[i]->position = (long)i + 1;
	*n = k;
	return q;
}

/* ---- signalling ---- */

static pid_t sig_pids[PROCTREE_MAX_PIDS];

static void
jrec_signal(struct jrec *r, int sig)
{
	pid_t pgid = 0;
	int n;

	if (r->tree == NULL)
		return;
	n = proctree_pids(r->tree, sig_pids, PROCTREE_MAX_PIDS, &pgid);
	if (n < 0) {
		/* Fall back to what is certainly ours: the group. */
		n = 0;
		pgid = r->j->pgid;
	}
	if ((size_t)n > PROCTREE_MAX_PIDS)
		n = PROCTREE_MAX_PIDS;
	if (spawn_signal_tree(pgid, sig_pids, (size_t)n, sig) < 0)
		log_warnx("jobs: job %" PRId64 ": signal %d failed", r->j->id,
		          sig);
	log_debug("jobs: job %" PRId64 ": signal %d to group %d and %d pids",
	          r->j->id, sig, (int)pgid, n);
}

static void
kill_timer_closed(uv_handle_t *h)
{
	free(h);
}

static void
jrec_stop_timer(struct jrec *r)
{
	if (r->kill_timer != NULL) {
		uv_timer_stop(r->kill_timer);
		uv_close((uv_handle_t *)r->kill_timer, kill_timer_closed);
		r->kill_timer = NULL;
	}
}

static void
kill_timer_cb(uv_timer_t *t)
{
	struct jrec *r = t->data;
	struct daemon *d = r->js->d;

	r->signalled_kill = 1;
	jrec_signal(r, SIGKILL);
	jrec_stop_timer(r);
	if (r->done)
		jobs_admit_soon(d); /* reaps it */
}

/* SIGTERM to the tree now, SIGKILL after the grace period. */
static void
jrec_send_term(struct daemon *d, struct jrec *r)
{
	jrec_signal(r, SIGTERM);
	if (r->kill_timer != NULL)
		return;
	r->kill_timer = malloc(sizeof *r->kill_timer);
	if (r->kill_timer == NULL) {
		jrec_signal(r, SIGKILL);
		return;
	}
	uv_timer_init(d->loop, r->kill_timer);
	r->kill_timer->data = r;
	uv_timer_start(r->kill_timer, kill_timer_cb,
	               (uint64_t)(d->cfg.grace_ms > 0 ? d->cfg.grace_ms : 0),
	               0);
}

/*
 * Start terminating a running job: reason is what its record will say
 * (detail, malloc'd, is consumed). The reason is committed first so a
 * daemon restart still knows why it ended; enforcement does not wait for
 * that commit to succeed.
 */
static void
jrec_terminate(struct daemon *d, struct jrec *r, const char *reason,
               char *detail)
{
	if (r->term_reason != NULL) {
		free(detail);
		return;
	}
	r->term_reason = reason;
	r->term_detail = detail;
	if (!r->requeue) {
		free(r->j->end_reason);
		r->j->end_reason = xstrdup(reason);
		jrec_commit(d, r);
	}
	if (r->tree == NULL) {
		r->term_pending = 1;
		return;
	}
	jrec_send_term(d, r);
}

/* ---- ending ---- */

static const char *
end_event_kind(enum job_state s)
{
	switch (s) {
	case JOB_EXITED:
		return "exited";
	case JOB_KILLED:
		return "killed";
	case JOB_FAILED:
		return "failed";
	case JOB_CANCELLED:
		return "cancelled";
	default:
		return "lost";
	}
}

static void
jobs_answer_waiters(struct daemon *d, struct jrec *r)
{
	struct waiter **wp = &d->jobs->waiters, *w;

	while ((w = *wp) != NULL) {
		if (w->job_id != r->j->id) {
			wp = &w->next;
			continue;
		}
		*wp = w->next;
		server_reply(d, w->client_id, w->req_id,
		             job_json(r->j, NULL, w->uid, 0));
		cJSON_Delete(w->req_id);
		free(w);
	}
}

/* The end is committed: tell everyone and drop the record. */
static void
jrec_announce_end(struct daemon *d, struct jrec *r)
{
	struct job *j = r->j;
	cJSON *det = cJSON_CreateObject();

	r->end_pending = 0;
	if (j->end_reason != NULL)
		cJSON_AddStringToObject(det, "reason", j->end_reason);
	if (j->state == JOB_EXITED || j->state == JOB_KILLED) {
		if (j->term_signal > 0)
			proto_add_int(det, "signal", j->term_signal);
		else if (j->started_ms > 0)
			proto_add_int(det, "exit_code", j->exit_code);
	}
	if (j->end_detail != NULL)
		cJSON_AddStringToObject(det, "detail", j->end_detail);
	jobs_event(d, j, end_event_kind(j->state), det);
	jobs_answer_waiters(d, r);
	jrec_release(d, r);
	jobs_admit_soon(d);
}

/* End the job in state s; detail is consumed. */
static void
jrec_end(struct daemon *d, struct jrec *r, enum job_state s, const char *reason,
         char *detail)
{
	struct job *j = r->j;

	j->state = s;
	j->ended_ms = now_ms();
	free(j->end_reason);
	j->end_reason = xstrdup(reason);
	free(j->end_detail);
	j->end_detail = detail;
	r->end_pending = 1;
	r->breach_kill = 0;
	if (jrec_commit(d, r) == 0)
		jrec_announce_end(d, r);
}

static char *fmt_detail(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

static char *
fmt_detail(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || (s = malloc((size_t)n + 1)) == NULL)
		return NULL;
	va_start(ap, fmt);
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return s;
}

/* The breach victim's process is gone: the survivors' growth restarts
 * from the swap used now. */
static void
jobs_victim_gone(struct daemon *d, struct jrec *victim)
{
	struct jobs *js = d->jobs;
	struct enforce_job ej;
	size_t i;

	if (!victim->breach_kill)
		return;
	victim->breach_kill = 0;
	for (i = 0; i < js->n; i++) {
		struct jrec *r = js->v[i];
		if (r == victim || !holds_memory(r))
			continue;
		memset(&ej, 0, sizeof ej);
		ej.swap_base_bytes = r->j->swap_base_bytes;
		enforce_restart(&ej, 1, d->last.swap_used_bytes);
		r->j->swap_base_bytes = ej.swap_base_bytes;
		r->growth_bytes = 0;
		r->growth_restarted_ms = now_ms();
		if (ej.base_changed)
			jrec_commit(d, r);
	}
}

static void
jrec_forget_process(struct jrec *r)
{
	if (r->tree != NULL && r->kill_timer == NULL) {
		proctree_free(r->tree);
		r->tree = NULL;
	}
}

/* Back to the queue for another attempt, keeping its place. */
static void
jrec_requeue(struct daemon *d, struct jrec *r)
{
	struct job *j = r->j;
	cJSON *det;

	/* Anything of the attempt still alive goes now, so two attempts
	 * never overlap. */
	if (r->tree != NULL) {
		jrec_signal(r, SIGKILL);
		jrec_stop_timer(r);
		proctree_free(r->tree);
		r->tree = NULL;
	}
	j->state = JOB_QUEUED;
	j->attempt++;
	j->pid = 0;
	j->pgid = 0;
	j->start_time = 0;
	j->monitor_pid = 0;
	j->admitted_ms = 0;
	j->started_ms = 0;
	j->footprint_bytes = 0;
	free(j->end_reason);
	j->end_reason = NULL;
	r->term_reason = NULL;
	free(r->term_detail);
	r->term_detail = NULL;
	r->requeue = 0;
	r->term_pending = 0;
	r->nfp = 0;
	r->growth_bytes = 0;
	r->growth_restarted_ms = 0;
	r->adopted = 0;
	r->note_pos = -1;
	jrec_commit(d, r);
	det = cJSON_CreateObject();
	proto_add_int(det, "attempt", j->attempt);
	jobs_event(d, j, "requeued", det);
	jobs_admit_soon(d);
}

/*
 * The job's process has ended. known: exit_code/term_signal are real (from
 * the monitor or the attached client); otherwise nobody could collect them.
 */
static void
jrec_proc_exited(struct daemon *d, struct jrec *r, int known, int exit_code,
                 int term_signal)
{
	struct job *j = r->j;
	const char *reason;
	char *detail;

	if (r->breach_kill)
		jobs_victim_gone(d, r);
	j->exit_code = known ? exit_code : 0;
	j->term_signal = known ? term_signal : 0;
	if (r->requeue) {
		jrec_requeue(d, r);
		return;
	}
	if (r->term_reason != NULL) {
		reason = r->term_reason;
		detail = r->term_detail;
		r->term_detail = NULL;
		/* Let the kill timer finish off descendants that ignore
		 * SIGTERM; the record ends now. */
		jrec_end(d, r, JOB_KILLED, reason, detail);
		return;
	}
	jrec_forget_process(r);
	if (known) {
		jrec_end(d, r, JOB_EXITED, NULL, NULL);
		return;
	}
	detail = fmt_detail("its client disconnected and the process ended "
	                    "without anyone to collect its exit status");
	jrec_end(d, r, JOB_LOST, "client_gone", detail);
}

/* ---- detached jobs: the monitor's pipe ---- */

static void
monitor_poll_closed(uv_handle_t *h)
{
	struct monitor_poll *mp = h->data;

	close(mp->fd);
	free(mp);
	free(h);
}

static void
jrec_close_poll(struct jrec *r)
{
	if (r->poll != NULL) {
		uv_poll_stop(r->poll);
		uv_close((uv_handle_t *)r->poll, monitor_poll_closed);
		r->poll = NULL;
	}
}

static void
jrec_started(struct daemon *d, struct jrec *r, pid_t pid, pid_t pgid,
             uint64_t start_time, int64_t started_ms)
{
	struct job *j = r->j;
	cJSON *det;

	j->pid = pid;
	j->pgid = pgid;
	j->start_time = start_time;
	j->started_ms = started_ms > 0 ? started_ms : now_ms();
	j->state = JOB_RUNNING;
	r->nfp = 0;
	proctree_free(r->tree);
	r->tree = proctree_new(pid, pgid, start_time);
	if (r->tree != NULL)
		proctree_set_scan_interval(
		    r->tree, d->cfg.interval_ms < PROCTREE_SCAN_INTERVAL_MS
		                 ? d->cfg.interval_ms
		                 : PROCTREE_SCAN_INTERVAL_MS);
	jrec_commit(d, r);
	det = cJSON_CreateObject();
	proto_add_int(det, "pid", pid);
	proto_add_int(det, "attempt", j->attempt);
	jobs_event(d, j, "started", det);
	if (r->term_pending) {
		r->term_pending = 0;
		jrec_send_term(d, r);
	}
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
			jrec_close_poll(r);
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
			jrec_close_poll(r);
			jrec_end(d, r, JOB_FAILED, "spawn",
			         xstrdup(ev.status.cause));
			return;
		case SPAWN_EV_ENDED:
			jrec_close_poll(r);
			if (ev.status.failed) {
				jrec_end(d, r, JOB_FAILED, "spawn",
				         xstrdup(ev.status.cause));
				return;
			}
			jrec_proc_exited(d, r, 1, ev.status.exit_code,
			                 ev.status.term_signal);
			return;
		}
	}
}

static void
jrec_watch_monitor(struct daemon *d, struct jrec *r, int fd)
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

/* ---- admission ---- */

static void
jrec_admit(struct daemon *d, struct jrec *r)
{
	struct job *j = r->j;
	struct spawn_child child;
	char cause[256];
	cJSON *det, *note;

	j->state = JOB_ADMITTED;
	j->admitted_ms = now_ms();
	j->swap_base_bytes = d->last.swap_used_bytes;
	j->swap_growth_peak_bytes = 0;
	r->growth_bytes = 0;
	r->growth_restarted_ms = 0;
	r->nfp = 0;
	r->position = 0;
	/* Never start a job whose admission is not on disk: after a crash
	 * it would be queued again and could run twice. */
	if (jrec_commit(d, r) != 0) {
		j->state = JOB_QUEUED;
		j->admitted_ms = 0;
		r->dirty = 0;
		return;
	}
	det = cJSON_CreateObject();
	proto_add_int(det, "attempt", j->attempt);
	cJSON_AddNumberToObject(det, "free_pct", d->last.free_pct);
	cJSON_AddNumberToObject(det, "wait_free_pct", j->wait_free_pct);
	proto_add_int(det, "swap_used_bytes", (int64_t)d->last.swap_used_bytes);
	proto_add_int(det, "sampled_at_ms", d->last.ts_ms);
	jobs_event(d, j, "admitted", det);

	if (j->attached) {
		if (r->client_id != 0) {
			note = cJSON_CreateObject();
			proto_add_int(note, "id", j->id);
			proto_add_int(note, "attempt", j->attempt);
			server_notify(d, r->client_id, "admitted", note);
		}
		return;
	}
	if (spawn_detached(d->cfg.state_dir, j, &child, cause, sizeof cause) !=
	    0) {
		jrec_end(d, r, JOB_FAILED, "spawn", xstrdup(cause));
		return;
	}
	j->monitor_pid = child.monitor_pid;
	jrec_commit(d, r);
	jrec_watch_monitor(d, r, child.fd);
}

static void
jobs_notify_queue(struct daemon *d, struct jrec *r, long of, double free_pct)
{
	cJSON *n;
	int free_int = (int)(free_pct + 0.5);

	if (!r->j->attached || r->client_id == 0)
		return;
	if (r->note_pos == r->position && r->note_of == of &&
	    r->note_free == free_int && r->note_wait == r->wait)
		return;
	r->note_pos = r->position;
	r->note_of = of;
	r->note_free = free_int;
	r->note_wait = r->wait;
	n = cJSON_CreateObject();
	proto_add_int(n, "id", r->j->id);
	proto_add_int(n, "position", r->position);
	proto_add_int(n, "of", of);
	cJSON_AddNumberToObject(n, "free_pct", free_pct);
	cJSON_AddNumberToObject(n, "wait_free_pct", r->j->wait_free_pct);
	cJSON_AddStringToObject(n, "waiting_for", admit_wait_name(r->wait));
	server_notify(d, r->client_id, "queue", n);
}

/* One admission pass: admit heads while the rule allows, then tell the
 * attached clients where they stand. */
static void
jobs_admit(struct daemon *d)
{
	struct jobs *js = d->jobs;
	struct jrec **q = NULL, **run = NULL;
	struct admit_queued *aq = NULL;
	struct admit_running *ar = NULL;
	enum admit_wait *waits = NULL;
	struct admit_input in;
	struct admit_result res;
	size_t nq = 0, nr, i;
	int round;

	for (round = 0; round < JOBS_ADMIT_PER_PASS; round++) {
		free(q);
		free(run);
		free(aq);
		free(ar);
		free(waits);
		run = NULL;
		aq = NULL;
		ar = NULL;
		waits = NULL;
		q = jobs_queue(js, &nq);
		if (q == NULL || nq == 0)
			break;
		run = malloc(js->n * sizeof *run);
		aq = malloc(nq * sizeof *aq);
		ar = malloc(js->n * sizeof *ar);
		waits = malloc(nq * sizeof *waits);
		if (run == NULL || aq == NULL || ar == NULL || waits == NULL)
			break;
		for (i = 0; i < nq; i++) {
			aq[i].job_id = q[i]->j->id;
			aq[i].wait_free_pct = q[i]->j->wait_free_pct;
			aq[i].exclusive = q[i]->j->exclusive;
		}
		for (i = 0, nr = 0; i < js->n; i++) {
			struct jrec *r = js->v[i];
			if (!holds_memory(r))
				continue;
			run[nr] = r;
			ar[nr].job_id = r->j->id;
			ar[nr].admitted_ms = r->j->admitted_ms;
			ar[nr].footprint_bytes = r->j->footprint_bytes;
			ar[nr].expect_bytes = r->j->expect_bytes;
			ar[nr].exclusive = r->j->exclusive;
			ar[nr].recent_footprints = r->fp;
			ar[nr].nrecent = r->nfp;
			nr++;
		}
		memset(&in, 0, sizeof in);
		in.queued = aq;
		in.nqueued = nq;
		in.running = ar;
		in.nrunning = nr;
		in.have_sample = d->have_last;
		in.free_pct = d->last.free_pct;
		in.total_bytes = d->last.total_bytes;
		in.now_ms = now_ms();
		in.cfg.settle_ms = d->cfg.settle_ms;
		in.cfg.settle_growth_pct = d->cfg.settle_growth_pct;
		in.cfg.settle_samples = d->cfg.settle_samples;
		in.cfg.max_running = d->cfg.max_running;
		admit_decide(&in, waits, &res);
		for (i = 0; i < nq; i++)
			q[i]->wait = waits[i];
		if (res.admit < 0 || d->stopping || d->storage_error[0] != '\0')
			break;
		/* An attached job nobody is there to run waits for its
		 * client to come back (or for the resume grace to end). */
		if (q[res.admit]->j->attached && q[res.admit]->client_id == 0)
			break;
		jrec_admit(d, q[res.admit]);
	}
	free(run);
	free(aq);
	free(ar);
	free(waits);
	/* Positions may have moved: refresh them and notify. */
	free(q);
	q = jobs_queue(js, &nq);
	for (i = 0; q != NULL && i < nq; i++)
		jobs_notify_queue(d, q[i], (long)nq, d->last.free_pct);
	free(q);
}

static void jobs_reap(struct daemon *d);

static void
admit_timer_cb(uv_timer_t *t)
{
	jobs_reap(t->data);
	jobs_admit(t->data);
}

/* Admit on the next loop turn, after the reply that triggered it has been
 * queued: a client learns its job id before it hears it was admitted. */
static void
jobs_admit_soon(struct daemon *d)
{
	struct jobs *js = d->jobs;

	if (js == NULL || js->admit_timer == NULL || d->stopping)
		return;
	uv_timer_start(js->admit_timer, admit_timer_cb, 0, 0);
}

/* ---- release ---- */

static void
jrec_free(struct daemon *d, struct jrec *r)
{
	struct jobs *js = d->jobs;
	size_t i;

	for (i = 0; i < js->n; i++) {
		if (js->v[i] == r) {
			memmove(&js->v[i], &js->v[i + 1],
			        (js->n - i - 1) * sizeof js->v[0]);
			js->n--;
			break;
		}
	}
	jrec_close_poll(r);
	jrec_stop_timer(r);
	proctree_free(r->tree);
	free(r->term_detail);
	job_free(r->j);
	free(r);
}

/* Mark an ended record for freeing. It is freed later, by jobs_reap, so
 * callers up the stack may still read it; its kill timer, if any, first
 * finishes off what is left of its tree. */
static void
jrec_release(struct daemon *d, struct jrec *r)
{
	r->done = 1;
	jrec_close_poll(r);
	if (r->tree == NULL)
		jrec_stop_timer(r);
}

static void
jobs_reap(struct daemon *d)
{
	struct jobs *js = d->jobs;
	size_t i = 0;

	while (i < js->n) {
		struct jrec *r = js->v[i];
		if (r->done && r->kill_timer == NULL)
			jrec_free(d, r); /* shifts the table */
		else
			i++;
	}
}

/* ---- sampling and enforcement ---- */

static void
jrec_sample(struct daemon *d, struct jrec *r, const struct sys_sample *s)
{
	struct job *j = r->j;
	uint64_t fp = 0, swap = 0;
	size_t nprocs = 0;

	if (r->tree == NULL || j->state != JOB_RUNNING)
		return;
	proctree_sample(r->tree, s->ts_ms, &fp, &swap, &nprocs);
	if (nprocs == 0) {
		/* Gone. An attached job's client reports how it ended; with
		 * no client nobody will. Detached jobs hear it from their
		 * monitor. */
		if (r->breach_kill)
			jobs_victim_gone(d, r);
		if (j->attached && r->client_id == 0)
			jrec_proc_exited(d, r, 0, 0, 0);
		return;
	}
	j->footprint_bytes = fp;
	j->job_swap_bytes = swap;
	if (fp > j->footprint_peak_bytes)
		j->footprint_peak_bytes = fp;
	if (r->nfp == JOBS_WINDOW) {
		memmove(r->fp, r->fp + 1, (JOBS_WINDOW - 1) * sizeof r->fp[0]);
		r->nfp--;
	}
	r->fp[r->nfp++] = fp;
	store_add_job_sample(d->store, j->id, s->ts_ms, fp, swap);
}

static char *
breach_paragraph(const struct jrec *r, const struct sys_sample *s, int requeued)
{
	const struct job *j = r->j;
	char at[16], since[64], grew[16], from[16], to[16], budget[16], fp[16];

	clock_hms(s->ts_ms, at, sizeof at);
	if (r->growth_restarted_ms > 0) {
		char t[16];
		clock_hms(r->growth_restarted_ms, t, sizeof t);
		snprintf(since, sizeof since,
		         "since its growth restarted at %s", t);
	} else
		snprintf(since, sizeof since, "since admission");
	size_str(r->growth_bytes, grew, sizeof grew);
	size_str(j->swap_base_bytes, from, sizeof from);
	size_str(s->swap_used_bytes, to, sizeof to);
	size_str(j->swap_budget_bytes, budget, sizeof budget);
	size_str(j->footprint_bytes, fp, sizeof fp);
	return fmt_detail("%s at %s: swap grew %s %s (from %s to %s), "
	                  "over its %s budget; free %.0f%%, footprint %s, "
	                  "pressure %s%s",
	                  requeued ? "breach" : "killed", at, grew, since, from,
	                  to, budget, s->free_pct, fp,
	                  pressure_name(s->pressure),
	                  requeued ? "; requeued for another attempt" : "");
}

static void
jobs_breach(struct daemon *d, struct jrec *r, const struct sys_sample *s)
{
	struct job *j = r->j;
	int requeued = enforce_requeues(j->attempt, j->retry_on_breach);
	cJSON *det, *note;
	char *para = breach_paragraph(r, s, requeued);

	log_info("jobs: job %" PRId64 " (%s): %s", j->id,
	         j->name ? j->name : "", para ? para : "breach");
	r->breach_kill = 1;
	r->requeue = requeued;
	det = cJSON_CreateObject();
	proto_add_int(det, "attempt", j->attempt);
	cJSON_AddBoolToObject(det, "requeued", requeued);
	proto_add_int(det, "swap_growth_bytes", (int64_t)r->growth_bytes);
	proto_add_int(det, "swap_budget_bytes", (int64_t)j->swap_budget_bytes);
	proto_add_int(det, "swap_base_bytes", (int64_t)j->swap_base_bytes);
	proto_add_int(det, "swap_used_bytes", (int64_t)s->swap_used_bytes);
	cJSON_AddNumberToObject(det, "free_pct", s->free_pct);
	proto_add_int(det, "footprint_bytes", (int64_t)j->footprint_bytes);
	cJSON_AddStringToObject(det, "pressure", pressure_name(s->pressure));
	proto_add_int(det, "sampled_at_ms", s->ts_ms);
	if (para != NULL)
		cJSON_AddStringToObject(det, "detail", para);
	jobs_event(d, j, "breach", det);
	if (j->attached && r->client_id != 0) {
		note = cJSON_CreateObject();
		proto_add_int(note, "id", j->id);
		proto_add_int(note, "swap_growth_bytes",
		              (int64_t)r->growth_bytes);
		proto_add_int(note, "swap_budget_bytes",
		              (int64_t)j->swap_budget_bytes);
		cJSON_AddBoolToObject(note, "requeued", requeued);
		server_notify(d, r->client_id, "breach", note);
	}
	jrec_terminate(d, r, "swap_budget", para);
	if (r->tree == NULL && j->attached) {
		/* Admitted but its client never reported a pid: nothing to
		 * signal, nothing started. */
		r->term_pending = 0;
		jrec_proc_exited(d, r, 0, 0, 0);
	}
}

static void
jobs_enforce(struct daemon *d, const struct sys_sample *s)
{
	struct jobs *js = d->jobs;
	struct enforce_job *ej;
	struct jrec **rs;
	size_t i, n = 0;
	long victim;

	ej = calloc(js->n ? js->n : 1, sizeof *ej);
	rs = calloc(js->n ? js->n : 1, sizeof *rs);
	if (ej == NULL || rs == NULL) {
		free(ej);
		free(rs);
		return;
	}
	for (i = 0; i < js->n; i++) {
		struct jrec *r = js->v[i];
		if (!holds_memory(r))
			continue;
		rs[n] = r;
		ej[n].job_id = r->j->id;
		ej[n].admitted_ms = r->j->admitted_ms;
		ej[n].swap_budget_bytes = r->j->swap_budget_bytes;
		ej[n].swap_base_bytes = r->j->swap_base_bytes;
		/* One being terminated for another reason still counts as
		 * a kill in progress only when it is a breach victim. */
		ej[n].breach_kill = r->breach_kill;
		n++;
	}
	victim = enforce_decide(ej, n, s->swap_used_bytes);
	for (i = 0; i < n; i++) {
		struct jrec *r = rs[i];
		r->growth_bytes = ej[i].growth_bytes;
		r->j->swap_base_bytes = ej[i].swap_base_bytes;
		if (ej[i].growth_bytes > r->j->swap_growth_peak_bytes)
			r->j->swap_growth_peak_bytes = ej[i].growth_bytes;
		/* The minimum is persisted so a restart measures from it. */
		if (ej[i].base_changed)
			jrec_commit(d, r);
	}
	/* A job already being terminated (cancel) is not chosen again. */
	if (victim >= 0 && rs[victim]->term_reason == NULL)
		jobs_breach(d, rs[victim], s);
	free(ej);
	free(rs);
}

/* Re-adopted detached jobs (no pipe) and attached jobs without a client. */
static void
jobs_follow_unpiped(struct daemon *d, int64_t now)
{
	struct jobs *js = d->jobs;
	struct spawn_status st;
	char cause[256];
	size_t i;
	int fate;

	for (i = 0; i < js->n; i++) {
		struct jrec *r = js->v[i];
		struct job *j = r->j;

		if (!is_live(r))
			continue;
		if (r->adopted && !j->attached &&
		    (j->state == JOB_RUNNING || j->state == JOB_ADMITTED)) {
			memset(&st, 0, sizeof st);
			fate = spawn_check(d->cfg.state_dir, j, &st, cause,
			                   sizeof cause);
			if (fate == SPAWN_ENDED) {
				if (st.failed)
					jrec_end(d, r, JOB_FAILED, "spawn",
					         xstrdup(st.cause));
				else
					jrec_proc_exited(d, r, 1, st.exit_code,
					                 st.term_signal);
				continue;
			}
			if (fate == SPAWN_LOST) {
				if (r->breach_kill)
					jobs_victim_gone(d, r);
				jrec_end(
				    d, r, JOB_LOST, "lost",
				    fmt_detail("the daemon could not follow "
				               "it: %s",
				               cause));
				continue;
			}
		}
		if (j->attached && r->client_id == 0 &&
		    r->orphan_since_ms > 0 &&
		    now - r->orphan_since_ms >= JOBS_RESUME_GRACE_MS) {
			if (j->state == JOB_QUEUED) {
				jrec_end(d, r, JOB_CANCELLED, "client_gone",
				         fmt_detail("its client did not come "
				                    "back after a daemon "
				                    "restart"));
			} else if (j->state == JOB_ADMITTED) {
				jrec_end(d, r, JOB_LOST, "client_gone",
				         fmt_detail("admitted, but its client "
				                    "did not come back after a "
				                    "daemon restart to start "
				                    "it"));
			}
		}
	}
}

/* Retry what storage refused. */
static void
jobs_retry_storage(struct daemon *d)
{
	struct jobs *js = d->jobs;
	size_t i;

	if (js->pending != NULL && jobs_flush_events(d) != 0)
		return;
	for (i = 0; i < js->n; i++) {
		struct jrec *r = js->v[i];
		if (r->done || !r->dirty)
			continue;
		if (jrec_commit(d, r) != 0)
			return;
		if (r->end_pending)
			jrec_announce_end(d, r);
	}
}

/* ---- logs ---- */

/* Copy src[0..n) to a NUL-terminated string, replacing bytes that are not
 * UTF-8 (and NUL, which JSON strings here cannot carry) by U+FFFD. Returns
 * the bytes of src consumed: an incomplete sequence at the end is left for
 * the next read unless at_eof. */
static size_t
utf8_sanitize(const unsigned char *src, size_t n, int at_eof, char *dst)
{
	size_t i = 0, o = 0, len, k;
	unsigned char c;

	while (i < n) {
		c = src[i];
		if (c >= 0x01 && c < 0x80) {
			dst[o++] = (char)c;
			i++;
			continue;
		}
		len = c >= 0xc2 && c <= 0xdf   ? 2
		      : c >= 0xe0 && c <= 0xef ? 3
		      : c >= 0xf0 && c <= 0xf4 ? 4
		                               : 0;
		if (len > 0 && i + len > n && !at_eof) {
			/* Maybe complete in the next read. */
			int ok = 1;
			for (k = 1; i + k < n; k++)
				if ((src[i + k] & 0xc0) != 0x80)
					ok = 0;
			if (ok)
				break;
		}
		if (len > 0 && i + len <= n &&
		    proto_utf8_valid((const char *)src + i, len)) {
			memcpy(dst + o, src + i, len);
			o += len;
			i += len;
			continue;
		}
		memcpy(dst + o, "\xef\xbf\xbd", 3);
		o += 3;
		i++;
	}
	dst[o] = '\0';
	return i;
}

/* Send what is new in the log. Returns 1 when the reader is finished
 * (answered), 0 to keep it. */
static int
jobs_pump_log(struct daemon *d, struct log_reader *lr)
{
	static unsigned char buf[JOBS_LOG_CHUNK];
	static char out[JOBS_LOG_CHUNK * 3 + 1];
	char path[1024];
	struct jrec *r = jobs_find(d->jobs, lr->job_id);
	int ended = r == NULL || !is_live(r);
	size_t sent = 0, used;
	ssize_t got;
	cJSON *res, *note;
	int fd, eof = 0;

	if (spawn_log_path(d->cfg.state_dir, lr->job_id, path, sizeof path) !=
	    0)
		eof = 1;
	fd = eof ? -1
	         : open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		/* No log yet (not started) or never (failed). */
		eof = 1;
	}
	while (fd >= 0 && sent < JOBS_LOG_PER_PASS) {
		got = pread(fd, buf, sizeof buf, (off_t)lr->offset);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			eof = 1;
			break;
		}
		used = utf8_sanitize(buf, (size_t)got,
		                     ended && (size_t)got < sizeof buf, out);
		if (used == 0) {
			eof = 1;
			break;
		}
		note = cJSON_CreateObject();
		proto_add_int(note, "id", lr->job_id);
		proto_add_int(note, "offset", (int64_t)lr->offset);
		cJSON_AddStringToObject(note, "data", out);
		if (server_notify(d, lr->client_id, "log", note) == -ENOENT) {
			close(fd);
			return 1;
		}
		lr->offset += used;
		sent += used;
	}
	if (fd >= 0)
		close(fd);
	if (!eof)
		return 0; /* more next pass */
	if (lr->follow && !ended)
		return 0;
	res = cJSON_CreateObject();
	proto_add_int(res, "id", lr->job_id);
	proto_add_int(res, "offset", (int64_t)lr->offset);
	cJSON_AddBoolToObject(res, "eof", 1);
	server_reply(d, lr->client_id, lr->req_id, res);
	return 1;
}

static void
jobs_pump_logs(struct daemon *d)
{
	struct log_reader **lp = &d->jobs->logs, *lr;

	while ((lr = *lp) != NULL) {
		if (jobs_pump_log(d, lr)) {
			*lp = lr->next;
			cJSON_Delete(lr->req_id);
			free(lr);
		} else
			lp = &lr->next;
	}
}

/* ---- the sample tick ---- */

void
jobs_on_sample(struct daemon *d, const struct sys_sample *s)
{
	struct jobs *js = d->jobs;
	size_t i;

	if (js == NULL)
		return;
	jobs_reap(d);
	for (i = 0; i < js->n; i++)
		jrec_sample(d, js->v[i], s);
	jobs_follow_unpiped(d, s->ts_ms);
	jobs_enforce(d, s);
	/* Always: one record's commit can succeed (and clear the error)
	 * while another's failed, e.g. on a full disk with WAL space left,
	 * and that one must still be written and its end announced. */
	jobs_retry_storage(d);
	jobs_pump_logs(d);
	jobs_admit(d);
}

/* ---- client connections ---- */

void
jobs_client_gone(struct daemon *d, uint64_t client_id)
{
	struct jobs *js = d->jobs;
	struct waiter **wp, *w;
	struct log_reader **lp, *lr;
	struct event_follower **fp, *f;
	size_t i;

	if (js == NULL)
		return;
	for (wp = &js->waiters; (w = *wp) != NULL;) {
		if (w->client_id == client_id) {
			*wp = w->next;
			cJSON_Delete(w->req_id);
			free(w);
		} else
			wp = &w->next;
	}
	for (lp = &js->logs; (lr = *lp) != NULL;) {
		if (lr->client_id == client_id) {
			*lp = lr->next;
			cJSON_Delete(lr->req_id);
			free(lr);
		} else
			lp = &lr->next;
	}
	for (fp = &js->followers; (f = *fp) != NULL;) {
		if (f->client_id == client_id) {
			*fp = f->next;
			free(f);
		} else
			fp = &f->next;
	}
	/* A daemon that is stopping closes every client: its attached jobs
	 * are not given up, the next daemon awaits their resume. */
	for (i = 0; i < js->n && !d->stopping; i++) {
		struct jrec *r = js->v[i];
		if (!is_live(r) || r->client_id != client_id)
			continue;
		r->client_id = 0;
		r->orphan_since_ms = 0;
		if (r->j->state == JOB_QUEUED || r->j->state == JOB_ADMITTED) {
			/* Nobody will start it. */
			jrec_end(d, r, JOB_CANCELLED, "client_gone",
			         fmt_detail("its client disconnected before it "
			                    "started"));
			continue;
		}
		log_info("jobs: job %" PRId64 ": client gone, still "
		         "enforcing its budget",
		         r->j->id);
	}
	jobs_admit_soon(d);
}

/* ---- handlers ---- */

static int
get_job_id(const cJSON *params, int64_t *id, char *cause, size_t causelen)
{
	return proto_param_int(params, "id", 1, 1, INT64_MAX, id, cause,
	                       causelen);
}

/* The live record or, for an ended job, the stored one (*owned set). */
static int
lookup(struct daemon *d, int64_t id, struct jrec **r, struct job **stored,
       char *cause, size_t causelen)
{
	*stored = NULL;
	*r = jobs_find(d->jobs, id);
	if (*r != NULL && !(*r)->end_pending)
		return 0;
	if (*r != NULL) {
		/* Ended but not on disk yet: memory is the truth. */
		return 0;
	}
	if (store_job_get(d->store, id, stored) == 0 && *stored != NULL)
		return 0;
	snprintf(cause, causelen, "no job %" PRId64, id);
	return PROTO_E_NOJOB;
}

static char **
strv_dup(const char **v)
{
	size_t n = 0, i;
	char **out;

	while (v[n] != NULL)
		n++;
	out = calloc(n + 1, sizeof *out);
	if (out == NULL)
		return NULL;
	for (i = 0; i < n; i++) {
		if ((out[i] = strdup(v[i])) == NULL) {
			while (i > 0)
				free(out[--i]);
			free(out);
			return NULL;
		}
	}
	return out;
}

int
jobs_ctl_submit(struct daemon *d, const struct peer *p, const cJSON *req_id,
                const cJSON *params, cJSON **result, char *cause,
                size_t causelen)
{
	static const char *const known[] = {"argv",
	                                    "cwd",
	                                    "env",
	                                    "attached",
	                                    "name",
	                                    "priority",
	                                    "wait_free_pct",
	                                    "swap_budget_bytes",
	                                    "expect_bytes",
	                                    "exclusive",
	                                    "retry_on_breach",
	                                    NULL};
	struct jobs *js = d->jobs;
	const char **argv = NULL, **env = NULL, *cwd = NULL, *name = NULL;
	int64_t priority = 0, budget, expect = 0, retry = 0;
	double wait_free = d->cfg.default_wait_free_pct;
	int attached = 0, exclusive = 0, rc, count = 0;
	struct job *j = NULL;
	struct jrec *r;
	char user[64], scause[256];
	const char *base;
	size_t i, nq;
	struct jrec **q;

	budget = (int64_t)d->cfg.default_swap_budget_bytes;
	if ((rc = proto_params_check(params, known, cause, causelen)) != 0)
		return rc;
	if ((rc = proto_param_bool(params, "attached", 0, &attached, cause,
	                           causelen)) < 0 ||
	    (rc = proto_param_strv(params, "argv", 1, 4096,
	                           d->cfg.max_argv_bytes, &argv, cause,
	                           causelen)) < 0)
		goto out;
	if (argv[0] == NULL || argv[0][0] == '\0') {
		snprintf(cause, causelen, "argv must name a command");
		rc = PROTO_E_PARAMS;
		goto out;
	}
	if ((rc = proto_param_string(params, "cwd", 1, JOBS_MAX_CWD, &cwd,
	                             cause, causelen)) < 0)
		goto out;
	if (cwd[0] != '/') {
		snprintf(cause, causelen, "cwd must be an absolute path");
		rc = PROTO_E_PARAMS;
		goto out;
	}
	if ((rc = proto_param_strv(params, "env", !attached, 4096,
	                           d->cfg.max_env_bytes, &env, cause,
	                           causelen)) < 0)
		goto out;
	for (i = 0; env != NULL && env[i] != NULL; i++) {
		const char *eq = strchr(env[i], '=');
		if (eq == NULL || eq == env[i]) {
			snprintf(cause, causelen, "env[%zu] must be NAME=value",
			         i);
			rc = PROTO_E_PARAMS;
			goto out;
		}
	}
	if ((rc = proto_param_string(params, "name", 0, JOBS_MAX_NAME, &name,
	                             cause, causelen)) < 0 ||
	    (rc = proto_param_int(params, "priority", 0, -1000, 1000, &priority,
	                          cause, causelen)) < 0 ||
	    (rc = proto_param_double(params, "wait_free_pct", 0, 0, 100,
	                             &wait_free, cause, causelen)) < 0 ||
	    (rc = proto_param_int(params, "swap_budget_bytes", 0, 0, INT64_MAX,
	                          &budget, cause, causelen)) < 0 ||
	    (rc = proto_param_int(params, "expect_bytes", 0, 0, INT64_MAX,
	                          &expect, cause, causelen)) < 0 ||
	    (rc = proto_param_bool(params, "exclusive", 0, &exclusive, cause,
	                           causelen)) < 0 ||
	    (rc = proto_param_int(params, "retry_on_breach", 0, 0, 100, &retry,
	                          cause, causelen)) < 0)
		goto out;

	if (p->uid != 0) {
		for (i = 0; i < js->n; i++)
			if (is_live(js->v[i]) && js->v[i]->j->uid == p->uid)
				count++;
		if (count >= d->cfg.max_queued_per_uid) {
			snprintf(cause, causelen,
			         "limit reached: %d queued or running jobs per "
			         "user",
			         d->cfg.max_queued_per_uid);
			rc = PROTO_E_LIMIT;
			goto out;
		}
	}

	j = calloc(1, sizeof *j);
	if (j == NULL)
		goto nomem;
	user_name(p->uid, user, sizeof user);
	base = strrchr(argv[0], '/');
	base = base != NULL && base[1] != '\0' ? base + 1 : argv[0];
	j->uid = p->uid;
	j->gid = p->gid;
	j->user = strdup(user);
	j->name = strdup(name != NULL && name[0] != '\0' ? name : base);
	j->argv = strv_dup(argv);
	j->cwd = strdup(cwd);
	j->env = attached ? NULL : strv_dup(env);
	if (j->user == NULL || j->name == NULL || j->argv == NULL ||
	    j->cwd == NULL || (!attached && j->env == NULL))
		goto nomem;
	j->attached = attached;
	j->priority = (int)priority;
	j->wait_free_pct = wait_free;
	j->swap_budget_bytes = (uint64_t)budget;
	j->expect_bytes = (uint64_t)expect;
	j->exclusive = exclusive;
	j->retry_on_breach = (int)retry;
	j->attempt = 1;
	j->state = JOB_QUEUED;
	j->submitted_ms = now_ms();
	if (store_job_insert(d->store, j, scause, sizeof scause) != 0) {
		jobs_storage_failed(d, "job insert", scause);
		snprintf(cause, causelen, "storage error: %s", scause);
		rc = PROTO_E_STORAGE;
		goto out;
	}
	r = jrec_new(js, j);
	if (r == NULL)
		goto nomem;
	j = NULL;
	if (attached)
		r->client_id = p->client_id;
	{
		cJSON *det = cJSON_CreateObject();
		cJSON_AddStringToObject(det, "name", r->j->name);
		proto_add_int(det, "priority", r->j->priority);
		cJSON_AddNumberToObject(det, "wait_free_pct",
		                        r->j->wait_free_pct);
		proto_add_int(det, "swap_budget_bytes",
		              (int64_t)r->j->swap_budget_bytes);
		cJSON_AddBoolToObject(det, "attached", r->j->attached);
		jobs_event(d, r->j, "submitted", det);
	}
	q = jobs_queue(js, &nq);
	free(q);
	*result = cJSON_CreateObject();
	proto_add_int(*result, "id", r->j->id);
	proto_add_int(*result, "position", r->position);
	proto_add_int(*result, "queued", (int64_t)nq);
	jobs_admit_soon(d);
	rc = 0;
	goto out;
nomem:
	snprintf(cause, causelen, "out of memory");
	rc = PROTO_E_INTERNAL;
out:
	job_free(j);
	free(argv);
	free(env);
	return rc > 0 ? 0 : rc;
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
	struct job *stored;
	int64_t id, pid;
	int rc;

	if ((rc = proto_params_check(params, known, cause, causelen)) != 0 ||
	    (rc = get_job_id(params, &id, cause, causelen)) != 0 ||
	    (rc = proto_param_int(params, "pid", 1, 2, INT32_MAX, &pid, cause,
	                          causelen)) != 0)
		return rc;
	if ((rc = lookup(d, id, &r, &stored, cause, causelen)) != 0)
		return rc;
	if (stored != NULL || r->end_pending) {
		job_free(stored);
		snprintf(cause, causelen, "job %" PRId64 " has ended", id);
		return PROTO_E_STATE;
	}
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
	struct job *stored;
	int64_t id, code = -1, sig = -1;
	int rc;

	if ((rc = proto_params_check(params, known, cause, causelen)) != 0 ||
	    (rc = get_job_id(params, &id, cause, causelen)) != 0)
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
	if ((rc = lookup(d, id, &r, &stored, cause, causelen)) != 0)
		return rc;
	if (stored != NULL || r->end_pending) {
		job_free(stored);
		snprintf(cause, causelen, "job %" PRId64 " has ended", id);
		return PROTO_E_STATE;
	}
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
	/* Ended (maybe not yet on disk), or requeued for another attempt. */
	*result = job_json(r->j, is_live(r) ? r : NULL, p->uid, 0);
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
	    (rc = get_job_id(params, &id, cause, causelen)) != 0)
		return rc;
	if ((rc = lookup(d, id, &r, &stored, cause, causelen)) != 0)
		return rc;
	if (stored != NULL) {
		if (!may_see(p->uid, stored)) {
			job_free(stored);
			snprintf(cause, causelen,
			         "job %" PRId64 " is not yours", id);
			return PROTO_E_PERM;
		}
		*result = job_json(stored, NULL, p->uid, 0);
		job_free(stored);
		return 0; /* ended: the client learns how */
	}
	if (!may_see(p->uid, r->j)) {
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
	*result = job_json(r->j, r, p->uid, 0);
	jobs_admit_soon(d);
	return 0;
}

struct ended_ctx {
	cJSON *arr;
	uid_t viewer;
};

static int
ended_cb(void *arg, struct job *j)
{
	struct ended_ctx *c = arg;

	cJSON_AddItemToArray(c->arr, job_json(j, NULL, c->viewer, 0));
	job_free(j);
	return 0;
}

int
jobs_ctl_status(struct daemon *d, const struct peer *p, const cJSON *req_id,
                const cJSON *params, cJSON **result, char *cause,
                size_t causelen)
{
	static const char *const known[] = {"all", "limit", NULL};
	struct jobs *js = d->jobs;
	struct jrec **q, **run;
	struct ended_ctx ctx;
	int all = 0, rc;
	int64_t limit = 50;
	size_t nq, i, nr = 0;
	cJSON *arr;

	if ((rc = proto_params_check(params, known, cause, causelen)) != 0 ||
	    (rc = proto_param_bool(params, "all", 0, &all, cause, causelen)) <
	        0 ||
	    (rc = proto_param_int(params, "limit", 0, 0, 100000, &limit, cause,
	                          causelen)) < 0)
		return rc;
	arr = cJSON_CreateArray();
	run = malloc((js->n ? js->n : 1) * sizeof *run);
	q = jobs_queue(js, &nq);
	if (arr == NULL || run == NULL) {
		cJSON_Delete(arr);
		free(run);
		free(q);
		snprintf(cause, causelen, "out of memory");
		return PROTO_E_INTERNAL;
	}
	for (i = 0; i < js->n; i++)
		if (holds_memory(js->v[i]))
			run[nr++] = js->v[i];
	for (i = 0; i < nr; i++)
		cJSON_AddItemToArray(arr,
		                     job_json(run[i]->j, run[i], p->uid, 0));
	for (i = 0; q != NULL && i < nq; i++)
		cJSON_AddItemToArray(arr, job_json(q[i]->j, q[i], p->uid, 0));
	/* Ended, not yet on disk. */
	for (i = 0; i < js->n; i++)
		if (js->v[i]->end_pending && all)
			cJSON_AddItemToArray(
			    arr, job_json(js->v[i]->j, NULL, p->uid, 0));
	free(run);
	free(q);
	if (all) {
		ctx.arr = arr;
		ctx.viewer = p->uid;
		store_jobs_ended(d->store, limit, ended_cb, &ctx);
	}
	*result = cJSON_CreateObject();
	cJSON_AddItemToObject(*result, "jobs", arr);
	return 0;
}

int
jobs_ctl_show(struct daemon *d, const struct peer *p, const cJSON *req_id,
              const cJSON *params, cJSON **result, char *cause, size_t causelen)
{
	static const char *const known[] = {"id", "env", NULL};
	struct jrec *r;
	struct job *stored;
	int64_t id;
	int env = 0, rc;
	size_t nq;

	if ((rc = proto_params_check(params, known, cause, causelen)) != 0 ||
	    (rc = get_job_id(params, &id, cause, causelen)) != 0 ||
	    (rc = proto_param_bool(params, "env", 0, &env, cause, causelen)) <
	        0)
		return rc;
	if ((rc = lookup(d, id, &r, &stored, cause, causelen)) != 0)
		return rc;
	if (stored != NULL) {
		*result = job_json(stored, NULL, p->uid, env);
		job_free(stored);
		return 0;
	}
	free(jobs_queue(d->jobs, &nq)); /* fresh position */
	*result = job_json(r->j, r->end_pending ? NULL : r, p->uid, env);
	return 0;
}

int
jobs_ctl_cancel(struct daemon *d, const struct peer *p, const cJSON *req_id,
                const cJSON *params, cJSON **result, char *cause,
                size_t causelen)
{
	static const char *const known[] = {"id", NULL};
	struct jrec *r;
	struct job *stored;
	int64_t id;
	int rc;
	char at[16], who[64];

	if ((rc = proto_params_check(params, known, cause, causelen)) != 0 ||
	    (rc = get_job_id(params, &id, cause, causelen)) != 0)
		return rc;
	if ((rc = lookup(d, id, &r, &stored, cause, causelen)) != 0)
		return rc;
	if (stored != NULL || r->end_pending) {
		if (stored != NULL && !may_see(p->uid, stored))
			rc = PROTO_E_PERM;
		else
			rc = PROTO_E_STATE;
		job_free(stored);
		snprintf(cause, causelen,
		         rc == PROTO_E_PERM ? "job %" PRId64 " is not yours"
		                            : "job %" PRId64
		                              " has already ended",
		         id);
		return rc;
	}
	if (!may_see(p->uid, r->j)) {
		snprintf(cause, causelen, "job %" PRId64 " is not yours", id);
		return PROTO_E_PERM;
	}
	clock_hms(now_ms(), at, sizeof at);
	user_name(p->uid, who, sizeof who);
	if (r->j->state == JOB_QUEUED || (r->j->state == JOB_ADMITTED &&
	                                  r->tree == NULL && r->j->attached)) {
		/* Not started: it simply leaves the queue. */
		jrec_end(d, r, JOB_CANCELLED, "cancel",
		         fmt_detail("cancelled by %s at %s before it started",
		                    who, at));
		*result = job_json(r->j, NULL, p->uid, 0);
		return 0;
	}
	/* A retry pending is abandoned: cancel is final. */
	r->requeue = 0;
	if (r->term_reason == NULL)
		jrec_terminate(d, r, "cancel",
		               fmt_detail("cancelled by %s at %s while %s", who,
		                          at, job_state_name(r->j->state)));
	*result = job_json(r->j, r, p->uid, 0);
	return 0;
}

int
jobs_ctl_wait(struct daemon *d, const struct peer *p, const cJSON *req_id,
              const cJSON *params, cJSON **result, char *cause, size_t causelen)
{
	static const char *const known[] = {"id", NULL};
	struct jrec *r;
	struct job *stored;
	struct waiter *w;
	int64_t id;
	int rc;

	if ((rc = proto_params_check(params, known, cause, causelen)) != 0 ||
	    (rc = get_job_id(params, &id, cause, causelen)) != 0)
		return rc;
	if ((rc = lookup(d, id, &r, &stored, cause, causelen)) != 0)
		return rc;
	if (stored != NULL) {
		*result = job_json(stored, NULL, p->uid, 0);
		job_free(stored);
		return 0;
	}
	w = calloc(1, sizeof *w);
	if (w == NULL || (w->req_id = cJSON_Duplicate(req_id, 1)) == NULL) {
		free(w);
		snprintf(cause, causelen, "out of memory");
		return PROTO_E_INTERNAL;
	}
	w->client_id = p->client_id;
	w->uid = p->uid;
	w->job_id = id;
	w->next = d->jobs->waiters;
	d->jobs->waiters = w;
	return CONTROL_DEFERRED;
}

int
jobs_ctl_logs(struct daemon *d, const struct peer *p, const cJSON *req_id,
              const cJSON *params, cJSON **result, char *cause, size_t causelen)
{
	static const char *const known[] = {"id", "offset", "follow", NULL};
	struct jrec *r;
	struct job *stored;
	struct log_reader *lr;
	const struct job *j;
	int64_t id, offset = 0;
	int follow = 0, rc, attached, owner;

	if ((rc = proto_params_check(params, known, cause, causelen)) != 0 ||
	    (rc = get_job_id(params, &id, cause, causelen)) != 0 ||
	    (rc = proto_param_int(params, "offset", 0, 0, INT64_MAX, &offset,
	                          cause, causelen)) < 0 ||
	    (rc = proto_param_bool(params, "follow", 0, &follow, cause,
	                           causelen)) < 0)
		return rc;
	if ((rc = lookup(d, id, &r, &stored, cause, causelen)) != 0)
		return rc;
	j = stored != NULL ? stored : r->j;
	attached = j->attached;
	owner = may_see(p->uid, j);
	job_free(stored);
	if (!owner) {
		snprintf(cause, causelen, "job %" PRId64 " is not yours", id);
		return PROTO_E_PERM;
	}
	if (attached) {
		snprintf(cause, causelen,
		         "job %" PRId64 " is attached: its output went to its "
		         "terminal",
		         id);
		return PROTO_E_STATE;
	}
	lr = calloc(1, sizeof *lr);
	if (lr == NULL || (lr->req_id = cJSON_Duplicate(req_id, 1)) == NULL) {
		free(lr);
		snprintf(cause, causelen, "out of memory");
		return PROTO_E_INTERNAL;
	}
	lr->client_id = p->client_id;
	lr->job_id = id;
	lr->offset = (uint64_t)offset;
	lr->follow = follow;
	/* Read now what is there; the rest on the following samples. The
	 * reply goes through server_reply, after the log notifications. */
	if (jobs_pump_log(d, lr)) {
		cJSON_Delete(lr->req_id);
		free(lr);
		return CONTROL_DEFERRED;
	}
	lr->next = d->jobs->logs;
	d->jobs->logs = lr;
	return CONTROL_DEFERRED;
}

struct events_ctx {
	cJSON *arr;
	uid_t viewer;
};

static int
events_cb(void *arg, const struct store_event *e)
{
	struct events_ctx *c = arg;

	cJSON_AddItemToArray(c->arr, jobs_event_json(e, c->viewer));
	return 0;
}

int
jobs_ctl_events(struct daemon *d, const struct peer *p, const cJSON *req_id,
                const cJSON *params, cJSON **result, char *cause,
                size_t causelen)
{
	static const char *const known[] = {"after_id", "limit", "follow",
	                                    NULL};
	struct events_ctx ctx;
	struct event_follower *f;
	int64_t after = 0, limit = 100;
	int follow = 0, rc;

	if ((rc = proto_params_check(params, known, cause, causelen)) != 0 ||
	    (rc = proto_param_int(params, "after_id", 0, 0, INT64_MAX, &after,
	                          cause, causelen)) < 0 ||
	    (rc = proto_param_int(params, "limit", 0, 1, 10000, &limit, cause,
	                          causelen)) < 0 ||
	    (rc = proto_param_bool(params, "follow", 0, &follow, cause,
	                           causelen)) < 0)
		return rc;
	ctx.arr = cJSON_CreateArray();
	ctx.viewer = p->uid;
	if (store_events(d->store, after, limit, events_cb, &ctx) < 0) {
		cJSON_Delete(ctx.arr);
		snprintf(cause, causelen, "storage error reading events");
		return PROTO_E_STORAGE;
	}
	if (follow) {
		for (f = d->jobs->followers; f != NULL; f = f->next)
			if (f->client_id == p->client_id)
				break;
		if (f == NULL && (f = calloc(1, sizeof *f)) != NULL) {
			f->client_id = p->client_id;
			f->uid = p->uid;
			f->next = d->jobs->followers;
			d->jobs->followers = f;
		}
	}
	*result = cJSON_CreateObject();
	cJSON_AddItemToObject(*result, "events", ctx.arr);
	return 0;
}

static cJSON *
mma_json(double mn, double avg, double mx)
{
	cJSON *o = cJSON_CreateObject();

	proto_add_int(o, "min", (int64_t)mn);
	proto_add_int(o, "avg", (int64_t)avg);
	proto_add_int(o, "max", (int64_t)mx);
	return o;
}

int
jobs_ctl_job_history(struct daemon *d, const struct peer *p,
                     const cJSON *req_id, const cJSON *params, cJSON **result,
                     char *cause, size_t causelen)
{
	static const char *const known[] = {"job_id", "since_ms", "until_ms",
	                                    "step_ms", NULL};
	struct job_bucket *b = NULL;
	struct job *stored = NULL;
	struct jrec *r;
	int64_t id, since = 0, until = INT64_MAX, step = 0;
	size_t n = 0, i, kept = 0;
	char scause[256];
	cJSON *arr;
	int rc;

	if ((rc = proto_params_check(params, known, cause, causelen)) != 0 ||
	    (rc = proto_param_int(params, "job_id", 1, 1, INT64_MAX, &id, cause,
	                          causelen)) != 0 ||
	    (rc = proto_param_int(params, "since_ms", 0, 0, INT64_MAX, &since,
	                          cause, causelen)) < 0 ||
	    (rc = proto_param_int(params, "until_ms", 0, 0, INT64_MAX, &until,
	                          cause, causelen)) < 0 ||
	    (rc = proto_param_int(params, "step_ms", 0, 0, INT64_MAX, &step,
	                          cause, causelen)) < 0)
		return rc;
	if ((rc = lookup(d, id, &r, &stored, cause, causelen)) != 0)
		return rc;
	job_free(stored);
	if (store_job_history(d->store, id, step, &b, &n, scause,
	                      sizeof scause) != 0) {
		snprintf(cause, causelen, "storage error: %s", scause);
		return PROTO_E_STORAGE;
	}
	arr = cJSON_CreateArray();
	for (i = 0; i < n; i++) {
		cJSON *o;
		if (b[i].ts_ms < since || b[i].ts_ms > until)
			continue;
		if (++kept > 100000) {
			cJSON_Delete(arr);
			free(b);
			snprintf(
			    cause, causelen,
			    "limit reached: more than 100000 buckets; use a "
			    "larger step_ms");
			return PROTO_E_LIMIT;
		}
		o = cJSON_CreateObject();
		proto_add_int(o, "ts_ms", b[i].ts_ms);
		cJSON_AddItemToObject(o, "footprint_bytes",
		                      mma_json(b[i].footprint_min,
		                               b[i].footprint_avg,
		                               b[i].footprint_max));
		cJSON_AddItemToObject(
		    o, "swap_bytes",
		    mma_json(b[i].swap_min, b[i].swap_avg, b[i].swap_max));
		cJSON_AddItemToArray(arr, o);
	}
	free(b);
	*result = cJSON_CreateObject();
	proto_add_int(*result, "job_id", id);
	proto_add_int(*result, "step_ms", step);
	cJSON_AddItemToObject(*result, "buckets", arr);
	return 0;
}

/* ---- start-up, info, shutdown ---- */

struct load_ctx {
	struct daemon *d;
	int64_t now;
	int n;
};

/* Re-adopt one job found unended in the store. Jobs run at most once: a
 * job that was admitted and has no live process is lost, never started. */
static int
load_cb(void *arg, struct job *j)
{
	struct load_ctx *c = arg;
	struct daemon *d = c->d;
	struct spawn_status st;
	struct jrec *r;
	char cause[256];
	uint64_t start;
	int fate;

	r = jrec_new(d->jobs, j);
	if (r == NULL) {
		job_free(j);
		return 0;
	}
	c->n++;
	/* A kill that was under way before the restart carries on. */
	if (j->end_reason != NULL && !JOB_STATE_ENDED(j->state)) {
		if (strcmp(j->end_reason, "swap_budget") == 0)
			r->term_reason = "swap_budget";
		else if (strcmp(j->end_reason, "cancel") == 0)
			r->term_reason = "cancel";
		if (r->term_reason != NULL)
			r->term_detail = fmt_detail("terminated (%s); the "
			                            "daemon restarted "
			                            "meanwhile",
			                            r->term_reason);
	}
	if (j->attached) {
		r->orphan_since_ms = c->now;
		if (j->state != JOB_RUNNING)
			return 0; /* queued or admitted: await resume */
		if (j->pid > 0 &&
		    platform_proc_start_time(j->pid, &start) == 0 &&
		    start == j->start_time) {
			r->tree = proctree_new(j->pid, j->pgid, j->start_time);
			if (r->term_reason != NULL)
				jrec_send_term(d, r);
			return 0;
		}
		jrec_end(d, r, JOB_LOST, "client_gone",
		         fmt_detail("its process was gone when the daemon "
		                    "restarted; its exit status is unknown"));
		return 0;
	}
	if (j->state == JOB_QUEUED)
		return 0;
	/* The daemon stopped before it heard the job start: the monitor's
	 * record says which process it is, so it is followed, not lost. */
	if (j->pid <= 0)
		(void)spawn_started(d->cfg.state_dir, j);
	memset(&st, 0, sizeof st);
	fate = spawn_check(d->cfg.state_dir, j, &st, cause, sizeof cause);
	if (fate == SPAWN_RUNNING) {
		r->adopted = 1;
		if (j->pid > 0) {
			j->state = JOB_RUNNING;
			r->tree = proctree_new(j->pid, j->pgid, j->start_time);
			if (r->term_reason != NULL)
				jrec_send_term(d, r);
		}
		log_info("jobs: job %" PRId64 " re-adopted (pid %d)", j->id,
		         (int)j->pid);
	} else if (fate == SPAWN_ENDED) {
		if (st.failed)
			jrec_end(d, r, JOB_FAILED, "spawn", xstrdup(st.cause));
		else {
			/* Ended while no daemon watched it. */
			j->exit_code = st.exit_code;
			j->term_signal = st.term_signal;
			if (st.ended_ms > 0)
				j->ended_ms = st.ended_ms;
			jrec_proc_exited(d, r, 1, st.exit_code, st.term_signal);
		}
	} else {
		jrec_end(
		    d, r, JOB_LOST, "lost",
		    fmt_detail("the daemon restarted and could not find it: "
		               "%s",
		               fate < 0 ? strerror(-fate) : cause));
	}
	return 0;
}

int
jobs_init(struct daemon *d, char *cause, size_t causelen)
{
	struct jobs *js = calloc(1, sizeof *js);
	struct load_ctx c;
	cJSON *det;

	if (js == NULL) {
		snprintf(cause, causelen, "out of memory");
		return -ENOMEM;
	}
	js->d = d;
	js->pending_tail = &js->pending;
	d->jobs = js;
	js->admit_timer = malloc(sizeof *js->admit_timer);
	if (js->admit_timer == NULL) {
		snprintf(cause, causelen, "out of memory");
		return -ENOMEM;
	}
	uv_timer_init(d->loop, js->admit_timer);
	js->admit_timer->data = d;
	server_on_gone(d, jobs_client_gone);

	c.d = d;
	c.now = now_ms();
	c.n = 0;
	if (store_jobs_unended(d->store, load_cb, &c) < 0) {
		snprintf(cause, causelen, "cannot load jobs from the store");
		return -EIO;
	}
	det = cJSON_CreateObject();
	proto_add_int(det, "jobs", c.n);
	jobs_event(d, NULL, "daemon_start", det);
	if (c.n > 0)
		log_info("jobs: %d unended jobs loaded", c.n);
	return 0;
}

void
jobs_info(struct daemon *d, cJSON *info)
{
	struct jobs *js = d->jobs;
	int counts[JOB_LOST + 1] = {0};
	cJSON *o = cJSON_CreateObject();
	size_t i;

	for (i = 0; js != NULL && i < js->n; i++)
		if (is_live(js->v[i]))
			counts[js->v[i]->j->state]++;
	proto_add_int(o, "queued", counts[JOB_QUEUED]);
	proto_add_int(o, "admitted", counts[JOB_ADMITTED]);
	proto_add_int(o, "running", counts[JOB_RUNNING]);
	cJSON_AddItemToObject(info, "jobs", o);
}

void
jobs_on_event(struct daemon *d, jobs_event_cb cb)
{
	if (d->jobs != NULL)
		d->jobs->event_cb = cb;
}

static void
admit_timer_closed(uv_handle_t *h)
{
	free(h);
}

void
jobs_shutdown(struct daemon *d)
{
	struct jobs *js = d->jobs;
	struct waiter *w;
	struct log_reader *lr;
	struct event_follower *f;
	struct pending_event *p;
	cJSON *det;

	if (js == NULL)
		return;
	/* Subscribers have been closed by now. */
	js->event_cb = NULL;
	det = cJSON_CreateObject();
	proto_add_int(det, "jobs", (int64_t)js->n);
	jobs_event(d, NULL, "daemon_stop", det);
	while (js->n > 0) {
		struct jrec *r = js->v[js->n - 1];
		/* Running jobs are left to their monitors; but one whose
		 * termination was under way is not left half-killed. */
		if (r->kill_timer != NULL)
			jrec_signal(r, SIGKILL);
		if (r->dirty) {
			char c2[256];
			store_job_update(d->store, r->j, c2, sizeof c2);
		}
		jrec_free(d, r);
	}
	free(js->v);
	while ((w = js->waiters) != NULL) {
		js->waiters = w->next;
		cJSON_Delete(w->req_id);
		free(w);
	}
	while ((lr = js->logs) != NULL) {
		js->logs = lr->next;
		cJSON_Delete(lr->req_id);
		free(lr);
	}
	while ((f = js->followers) != NULL) {
		js->followers = f->next;
		free(f);
	}
	while ((p = js->pending) != NULL) {
		js->pending = p->next;
		free(p->detail);
		free(p);
	}
	uv_timer_stop(js->admit_timer);
	uv_close((uv_handle_t *)js->admit_timer, admit_timer_closed);
	free(js);
	d->jobs = NULL;
}
