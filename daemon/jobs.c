/*
 * The job table. Every job not yet ended has a record here (struct jrec);
 * ended jobs live only in the store. The rules (state machine, admission,
 * breach) are specified in docs/jobs.md; admit.c and enforce.c decide, this
 * file applies the decisions: it commits each transition to the store
 * before announcing it, admits, and at every sample measures the running
 * jobs' trees and enforces their budgets. jobs-internal.h lists the files
 * that do the rest.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>
#include <uv.h>

#include "admit.h"
#include "awake.h"
#include "daemon.h"
#include "enforce.h"
#include "job.h"
#include "jobs-internal.h"
#include "jobs.h"
#include "log.h"
#include "platform.h"
#include "proctree.h"
#include "proto.h"
#include "store.h"
#include "units.h"

struct pending_event {
	struct pending_event *next;
	struct store_event e;
	char kind[16];
	char *detail;
};

static void jrec_release(struct daemon *d, struct jrec *r);

/* ---- small helpers ---- */

void
jobs_clock_hms(int64_t ms, char *buf, size_t len)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	if (localtime_r(&t, &tm) == NULL)
		snprintf(buf, len, "%" PRId64, ms);
	else
		strftime(buf, len, "%H:%M:%S", &tm);
}

struct jrec *
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

/* What the attempts of j->attempts ran, summed. */
static int64_t
attempts_ran_ms(const struct job *j)
{
	cJSON *a, *e;
	int64_t ran = 0;

	if (j->attempts == NULL || (a = cJSON_Parse(j->attempts)) == NULL)
		return 0;
	cJSON_ArrayForEach(e, a)
	{
		const cJSON *s = cJSON_GetObjectItemCaseSensitive(
		                e, "started_at_ms"),
		            *x = cJSON_GetObjectItemCaseSensitive(
		                e, "ended_at_ms");

		if (cJSON_IsNumber(s) && cJSON_IsNumber(x) &&
		    x->valuedouble > s->valuedouble)
			ran += (int64_t)(x->valuedouble - s->valuedouble);
	}
	cJSON_Delete(a);
	return ran;
}

/*
 * The attempt that ends now (ended_ms) joins the records of those before
 * it (PROTOCOL.md, Job: attempts): when it was queued (submitted, or the
 * previous attempt's end), admitted, started and ended, and why it ended.
 * -ENOMEM, the records unchanged.
 */
static int
attempt_record(struct job *j, int64_t ended_ms)
{
	cJSON *a = job_attempts_json(j, 1, ended_ms);
	char *text = a != NULL ? cJSON_PrintUnformatted(a) : NULL;

	cJSON_Delete(a);
	if (text == NULL)
		return -ENOMEM;
	free(j->attempts);
	j->attempts = text;
	return 0;
}

struct jrec *
jrec_new(struct jobs *js, struct job *j)
{
	struct jrec *r;

	/* The row holds them; the table does not (job_drop_args). */
	if (job_drop_args(j) != 0 || (r = calloc(1, sizeof *r)) == NULL)
		return NULL;
	r->js = js;
	r->j = j;
	r->position = 0;
	r->note_pos = -1;
	r->note_of = -1;
	r->note_free = -1;
	r->note_wait = ADMIT_WAIT_NONE;
	r->ran_before_ms = attempts_ran_ms(j);
	if (jobs_add(js, r) != 0) {
		free(r);
		return NULL;
	}
	return r;
}

/* ---- storage: commit before announcing ---- */

/* The store keeps its health (store_health); a record it could not write is
 * kept dirty and retried each tick. */
int
jrec_commit(struct daemon *d, struct jrec *r)
{
	char cause[256];

	if (store_job_update(d->store, r->j, cause, sizeof cause) != 0) {
		r->dirty = 1;
		return -1;
	}
	r->dirty = 0;
	return 0;
}

void
jobs_note(struct daemon *d, struct jobs_note *n)
{
	if (d->jobs->note != NULL)
		d->jobs->note(d, n);
}

static void
jobs_announce_event(struct daemon *d, const struct store_event *e)
{
	struct jobs_note n = {.kind = JOBS_NOTE_EVENT, .event = e};

	jobs_note(d, &n);
}

/* The record of the event's job holds a transition it could not commit:
 * the event waits for it, so nothing is announced before it is on disk. */
static int
jobs_event_held(struct jobs *js, const struct store_event *e)
{
	size_t i;

	if (e->job_id <= 0)
		return 0;
	for (i = 0; i < js->n; i++)
		if (js->v[i]->j->id == e->job_id && js->v[i]->dirty)
			return 1;
	return 0;
}

/* Commit the events held back by a storage failure, in order. Returns 1
 * when the first one waits for its job's record (jobs_event_held). */
static int
jobs_flush_events(struct daemon *d)
{
	struct jobs *js = d->jobs;
	struct pending_event *p;
	struct store_event *v[JOBS_EVENTS_BATCH];
	char cause[256];
	size_t n, i;

	while (js->pending != NULL && js->batching == 0) {
		/* the events up to the first held back, in one commit */
		for (n = 0, p = js->pending; p != NULL && n < JOBS_EVENTS_BATCH;
		     p = p->next) {
			if (jobs_event_held(js, &p->e))
				break;
			v[n++] = &p->e;
		}
		if (n == 0)
			return 1;
		if (store_events_add(d->store, v, n, cause, sizeof cause) != 0)
			return -1;
		for (i = 0; i < n; i++) {
			p = js->pending;
			jobs_announce_event(d, &p->e);
			js->pending = p->next;
			if (js->pending == NULL)
				js->pending_tail = &js->pending;
			free(p->detail);
			free(p);
		}
	}
	return 0;
}

void
jobs_events_batch(struct daemon *d, int on)
{
	struct jobs *js = d->jobs;

	js->batching += on ? 1 : -1;
	if (js->batching == 0)
		jobs_flush_events(d);
}

/* Record an event (detail: JSON object, consumed). Announced once it is
 * committed; kept in memory and retried while storage fails. */
void
jobs_event(struct daemon *d, const struct job *j, enum names_event kind,
           cJSON *detail)
{
	struct jobs *js = d->jobs;
	struct pending_event *p = calloc(1, sizeof *p);

	if (p == NULL) {
		cJSON_Delete(detail);
		return;
	}
	snprintf(p->kind, sizeof p->kind, "%s", names_event_name(kind));
	p->detail = detail != NULL ? cJSON_PrintUnformatted(detail) : NULL;
	cJSON_Delete(detail);
	p->e.ts_ms = clock_wall_ms();
	p->e.job_id = j != NULL ? j->id : 0;
	p->e.uid = j != NULL ? j->uid : 0;
	p->e.kind = p->kind;
	p->e.detail = p->detail;
	*js->pending_tail = p;
	js->pending_tail = &p->next;
	jobs_flush_events(d);
}

/* ---- queue order ---- */

/* ---- ending ---- */

static enum names_event
end_event_kind(enum job_state s)
{
	switch (s) {
	case JOB_EXITED:
		return NAMES_EVENT_EXITED;
	case JOB_KILLED:
		return NAMES_EVENT_KILLED;
	case JOB_FAILED:
		return NAMES_EVENT_FAILED;
	case JOB_CANCELLED:
		return NAMES_EVENT_CANCELLED;
	default:
		return NAMES_EVENT_LOST;
	}
}

int
jobs_reason_index(const char *reason)
{
	return names_end_parse(reason);
}

const char *
jobs_reason_name(int i)
{
	return names_end_name(i);
}

void
jobs_counters(struct daemon *d, struct jobs_counters *c)
{
	memset(c, 0, sizeof *c);
	if (d->jobs == NULL)
		return;
	memcpy(c->ended, d->jobs->ended, sizeof c->ended);
	c->breaches = d->jobs->breaches;
}

/* The end is committed: tell everyone and drop the record. */
static void
jrec_announce_end(struct daemon *d, struct jrec *r)
{
	struct job *j = r->j;
	cJSON *det = cJSON_CreateObject();
	struct jobs_note n = {.kind = JOBS_NOTE_ENDED, .job = j};

	if (j->attached)
		n.client_id = r->client_id;
	r->end_pending = 0;
	if (JOB_STATE_ENDED(j->state))
		d->jobs->ended[j->state][jobs_reason_index(j->end_reason)]++;
	jobs_learn_record(d, j);
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
	jobs_note(d, &n);
	jrec_release(d, r);
	jobs_onend_start(d, j);
	/* The jobs that needed it to succeed end too (jobs-deps.c). */
	jobs_deps_ended(d, j);
	jobs_admit_soon(d);
	jobs_fast_ended(d);
}

/* End the job in state s; detail is consumed. */
void
jrec_end(struct daemon *d, struct jrec *r, enum job_state s, const char *reason,
         char *detail)
{
	struct job *j = r->j;

	j->state = s;
	/* Set already when the job ended while no daemon watched it. */
	if (j->ended_ms <= 0)
		j->ended_ms = clock_wall_ms();
	jobs_stage_close(d, r, j->ended_ms);
	free(j->end_reason);
	j->end_reason = xstrdup(reason);
	free(j->end_detail);
	j->end_detail = detail;
	/* Its log says so too, when the daemon ended it. */
	jobs_detached_mark(d, j, 0);
	r->end_pending = 1;
	r->breach_kill = 0;
	if (jrec_commit(d, r) == 0)
		jrec_announce_end(d, r);
}

char *
jobs_fmt_detail(const char *fmt, ...)
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
void
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
		if (r == victim || !jrec_holds_memory(r))
			continue;
		memset(&ej, 0, sizeof ej);
		ej.swap_base_bytes = r->j->swap_base_bytes;
		enforce_restart(&ej, 1, d->last.swap_used_bytes);
		r->j->swap_base_bytes = ej.swap_base_bytes;
		r->growth_bytes = 0;
		r->growth_restarted_ms = clock_wall_ms();
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

/* An attached job whose client is gone for good (not one awaiting its
 * client after a restart) has nobody to run another attempt. */
int
jrec_may_retry(const struct jrec *r)
{
	return !r->j->attached || r->client_id != 0 || r->orphan_since_ms > 0;
}

/* Back to the queue for another attempt, keeping its place. */
static void
jrec_requeue(struct daemon *d, struct jrec *r)
{
	struct job *j = r->j;
	cJSON *det;
	int64_t now;

	/* Anything of the attempt still alive goes now, so two attempts
	 * never overlap. */
	if (r->tree != NULL) {
		jobs_kill_signal(r, SIGKILL);
		jobs_kill_stop_timer(r);
		proctree_free(r->tree);
		r->tree = NULL;
	}
	now = clock_wall_ms();
	jobs_stage_close(d, r, now);
	/* Its record before anything of it is reset: the requeue is
	 * committed with it. */
	if (attempt_record(j, now) != 0)
		log_warnx("jobs: job %" PRId64 ": attempt %d not recorded: "
		          "out of memory",
		          j->id, j->attempt);
	if (j->started_ms > 0 && now > j->started_ms)
		r->ran_before_ms += now - j->started_ms;
	/* Between the attempts' output in its log: why this one stopped. */
	jobs_detached_mark(d, j, j->attempt + 1);
	j->state = JOB_QUEUED;
	j->attempt++;
	j->pid = 0;
	j->pgid = 0;
	j->start_time = 0;
	j->monitor_pid = 0;
	j->admitted_ms = 0;
	j->started_ms = 0;
	j->ended_ms = 0;
	j->footprint_bytes = 0;
	free(j->end_reason);
	j->end_reason = NULL;
	free(j->kill);
	j->kill = NULL;
	r->term_reason = NULL;
	free(r->term_detail);
	r->term_detail = NULL;
	r->requeue = 0;
	r->term_pending = 0;
	r->nfp = 0;
	r->growth_bytes = 0;
	r->growth_restarted_ms = 0;
	r->adopted = 0;
	r->tree_gone = 0;
	r->note_pos = -1;
	/* Its client hears its place again before it is admitted again. */
	r->owe_queue = 1;
	jrec_commit(d, r);
	det = cJSON_CreateObject();
	proto_add_int(det, "attempt", j->attempt);
	jobs_event(d, j, NAMES_EVENT_REQUEUED, det);
	/* What it waits for now, not what it waited for before its last
	 * admission (answers before the next pass: job_exit's). */
	jobs_classify(d);
	jobs_admit_soon(d);
}

/*
 * The job's process has ended. known: exit_code/term_signal are real (from
 * the monitor or the attached client); otherwise nobody could collect them.
 */
void
jrec_proc_exited(struct daemon *d, struct jrec *r, int known, int exit_code,
                 int term_signal)
{
	struct job *j = r->j;
	const char *reason;
	char *detail;

	if (r->breach_kill)
		jobs_victim_gone(d, r);
	if (known && j->attached && j->pgid == 0 && r->tree != NULL) {
		/* Followed as a tree (job_pid with tree): its root is the
		 * client's own process, which said it is done and goes on,
		 * so nothing of it is followed or signalled any more, not
		 * even by a kill already under way or a requeue. */
		jobs_kill_stop_timer(r);
		proctree_free(r->tree);
		r->tree = NULL;
	}
	j->exit_code = known ? exit_code : 0;
	j->term_signal = known ? term_signal : 0;
	if (r->requeue && jrec_may_retry(r)) {
		jrec_requeue(d, r);
		return;
	}
	if (r->requeue) {
		/* Its client left during the grace: the breach is final. */
		r->requeue = 0;
		detail = jobs_fmt_detail("%s; not retried: its client "
		                         "disconnected",
		                         r->term_detail ? r->term_detail : "");
		free(r->term_detail);
		r->term_detail = detail;
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
		jrec_end(d, r, JOB_EXITED, NULL,
		         !j->attached && exit_code != 0 && term_signal == 0
		             ? jobs_detached_exit_hint(d, j)
		             : NULL);
		return;
	}
	if (jrec_root_reports(r)) {
		detail = jobs_fmt_detail("its processes ended and root "
		                         "reported no exit status within "
		                         "%d s",
		                         JOBS_REPORT_GRACE_MS / 1000);
		jrec_end(d, r, JOB_LOST, "no_report", detail);
		return;
	}
	detail =
	    jobs_fmt_detail("its client disconnected and the process ended "
	                    "without anyone to collect its exit status");
	jrec_end(d, r, JOB_LOST, "client_gone", detail);
}

/* ---- starting ---- */

void
jrec_started(struct daemon *d, struct jrec *r, pid_t pid, pid_t pgid,
             uint64_t start_time, int64_t started_ms)
{
	struct job *j = r->j;
	cJSON *det;

	j->pid = pid;
	j->pgid = pgid;
	j->start_time = start_time;
	j->started_ms = started_ms > 0 ? started_ms : clock_wall_ms();
	j->state = JOB_RUNNING;
	r->nfp = 0;
	r->tree_gone = 0;
	proctree_free(r->tree);
	/* The default rescan (PROCTREE_SCAN_INTERVAL_MS) finds new
	 * descendants within a second, as for re-adopted jobs; a kill
	 * rescans at once anyway (proctree_pids). */
	r->tree = proctree_new(pid, pgid, start_time);
	jrec_commit(d, r);
	det = cJSON_CreateObject();
	proto_add_int(det, "pid", pid);
	proto_add_int(det, "attempt", j->attempt);
	jobs_event(d, j, NAMES_EVENT_STARTED, det);
	if (r->term_pending) {
		r->term_pending = 0;
		jobs_kill_term(d, r);
	}
}

/* ---- admission ---- */

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
	jobs_detached_unwatch(r);
	jobs_kill_stop_timer(r);
	proctree_free(r->tree);
	free(r->term_detail);
	jobs_stage_free(r);
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
	jobs_detached_unwatch(r);
	if (r->tree == NULL)
		jobs_kill_stop_timer(r);
}

void
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
jrec_sample(struct daemon *d, struct jrec *r, const struct sys_sample *s,
            int full)
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
		 * monitor. Until then it holds no memory: enforcement passes
		 * it over, so it is never chosen (and gone) again. */
		r->tree_gone = 1;
		if (r->breach_kill)
			jobs_victim_gone(d, r);
		if (j->attached && r->client_id == 0) {
			/* Root reports a Slurm task's end (slurmstepd's
			 * task_exit), which may come a little after: it is
			 * given JOBS_REPORT_GRACE_MS (jobs_attached_check).
			 * A kill under way ends it now, as killed. */
			if (jrec_root_reports(r) && r->term_reason == NULL &&
			    !r->requeue) {
				if (r->report_wait_ms == 0)
					r->report_wait_ms = s->ts_ms;
			} else {
				jrec_proc_exited(d, r, 0, 0, 0);
			}
		}
		return;
	}
	r->tree_gone = 0; /* a rescan can find descendants again */
	r->report_wait_ms = 0;
	j->footprint_bytes = fp;
	j->job_swap_bytes = swap;
	if (fp > j->footprint_peak_bytes)
		j->footprint_peak_bytes = fp;
	if (r->nfp == JOBS_WINDOW) {
		memmove(r->fp, r->fp + 1, (JOBS_WINDOW - 1) * sizeof r->fp[0]);
		memmove(r->fp_ms, r->fp_ms + 1,
		        (JOBS_WINDOW - 1) * sizeof r->fp_ms[0]);
		r->nfp--;
	}
	r->fp_ms[r->nfp] = s->ts_ms;
	r->fp[r->nfp++] = fp;
	jobs_stage_sample(r, s);
	/* Stored at the normal interval only (docs/jobs.md, "Sampling
	 * rate"). */
	if (full)
		store_add_job_sample(d->store, j->id, s->ts_ms, fp, swap);
}

/* Re-adopted detached jobs (no pipe) and attached jobs without a client. */
static void
jobs_follow_unpiped(struct daemon *d, int64_t now)
{
	struct jobs *js = d->jobs;
	size_t i;

	for (i = 0; i < js->n; i++) {
		struct jrec *r = js->v[i];

		if (!jrec_is_live(r))
			continue;
		if (r->j->attached)
			jobs_attached_check(d, r, now);
		else
			jobs_detached_check(d, r);
	}
}

/* Retry what storage refused. */
static void
jobs_retry_storage(struct daemon *d)
{
	struct jobs *js = d->jobs;
	size_t i;

	/* Records first: their events wait for them. */
	for (i = 0; i < js->n; i++) {
		struct jrec *r = js->v[i];
		if (r->done || !r->dirty)
			continue;
		if (jrec_commit(d, r) != 0)
			return;
		if (r->end_pending)
			jrec_announce_end(d, r);
	}
	if (js->pending != NULL)
		jobs_flush_events(d);
}

/* ---- the sample tick ---- */

void
jobs_on_sample(struct daemon *d, const struct sys_sample *s)
{
	jobs_on_sample_at(d, s, 1);
}

void
jobs_on_sample_at(struct daemon *d, const struct sys_sample *s, int full)
{
	struct jobs *js = d->jobs;
	size_t i;

	/* No job, and no event waiting: nothing to measure, enforce or
	 * admit. That is an idle daemon, most of its life; the passes below
	 * allocate and would cost it several us a sample. */
	if (js == NULL ||
	    (js->n == 0 && js->pending == NULL && js->nholds == 0))
		return;
	jobs_reap(d);
	for (i = 0; i < js->n; i++)
		jrec_sample(d, js->v[i], s, full);
	jobs_follow_unpiped(d, s->ts_ms);
	jobs_enforce(d, s);
	jobs_time_limits(d, s->ts_ms);
	/* Always: one record's commit can succeed (and clear the error)
	 * while another's failed, e.g. on a full disk with WAL space left,
	 * and that one must still be written and its end announced. */
	jobs_retry_storage(d);
	jobs_hold_flush(d, s->ts_ms, 0);
	jobs_admit(d);
}

/* ---- start-up, info, shutdown ---- */

int
jobs_init(struct daemon *d, jobs_note_cb note, const struct jobs_ops *ops,
          char *cause, size_t causelen)
{
	static const struct jobs_ops real_ops = {spawn_detached,
	                                         spawn_signal_tree};
	struct jobs *js = calloc(1, sizeof *js);
	cJSON *det;
	int n, rc;

	if (js == NULL) {
		snprintf(cause, causelen, "out of memory");
		return -ENOMEM;
	}
	js->d = d;
	js->note = note;
	js->ops = ops != NULL ? ops : &real_ops;
	js->pending_tail = &js->pending;
	d->jobs = js;
	js->admit_timer = malloc(sizeof *js->admit_timer);
	if (js->admit_timer == NULL) {
		snprintf(cause, causelen, "out of memory");
		return -ENOMEM;
	}
	uv_timer_init(d->loop, js->admit_timer);
	js->admit_timer->data = d;

	js->loading = 1;
	rc = jobs_adopt_load(d, &n);
	js->loading = 0;
	if (rc < 0) {
		snprintf(cause, causelen, "cannot load jobs from the store");
		return -EIO;
	}
	/* Dependencies that ended while no daemon ran. */
	jobs_deps_load(d);
	det = cJSON_CreateObject();
	proto_add_int(det, "jobs", n);
	jobs_event(d, NULL, NAMES_EVENT_DAEMON_START, det);
	if (n > 0)
		log_info("jobs: %d unended jobs loaded", n);
	return 0;
}

void
jobs_count(struct daemon *d, uid_t uid, int counts[JOB_LOST + 1])
{
	struct jobs *js = d->jobs;
	size_t i;

	memset(counts, 0, (JOB_LOST + 1) * sizeof counts[0]);
	for (i = 0; js != NULL && i < js->n; i++)
		if (jrec_is_live(js->v[i]) &&
		    (uid == (uid_t)-1 || js->v[i]->j->uid == uid))
			counts[js->v[i]->j->state]++;
}

void
jobs_awake_counts(struct daemon *d, int *holding, int *ready,
                  int64_t *last_admit_ms)
{
	struct jobs *js = d->jobs;
	const struct jrec *r;
	size_t i;

	*holding = *ready = 0;
	*last_admit_ms = 0;
	for (i = 0; js != NULL && i < js->n; i++) {
		r = js->v[i];
		if (!jrec_is_live(r))
			continue;
		if (r->j->state == JOB_ADMITTED || r->j->state == JOB_RUNNING)
			(*holding)++;
		else if (r->j->state == JOB_QUEUED &&
		         awake_wait_counts(r->wait))
			(*ready)++;
		if (r->j->admitted_ms > *last_admit_ms)
			*last_admit_ms = r->j->admitted_ms;
	}
	/* One that ended between two samples is seen here only. */
	if (js != NULL && js->last_admit_ms > *last_admit_ms)
		*last_admit_ms = js->last_admit_ms;
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
	struct pending_event *p;
	cJSON *det;

	if (js == NULL)
		return;
	/* Clients have been closed by now. */
	js->note = NULL;
	jobs_onend_shutdown(d);
	jobs_hold_flush(d, clock_wall_ms(), 1);
	det = cJSON_CreateObject();
	proto_add_int(det, "jobs", (int64_t)js->n);
	jobs_event(d, NULL, NAMES_EVENT_DAEMON_STOP, det);
	while (js->n > 0) {
		struct jrec *r = js->v[js->n - 1];
		/* Running jobs are left to their monitors; but one whose
		 * termination was under way is not left half-killed. */
		if (r->kill_timer != NULL)
			jobs_kill_signal(r, SIGKILL);
		if (r->dirty) {
			char c2[256];
			store_job_update(d->store, r->j, c2, sizeof c2);
		}
		jrec_free(d, r);
	}
	free(js->v);
	free(js->frozen);
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
