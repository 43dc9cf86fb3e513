/*
 * Admission applied: the queue in order and the jobs holding memory as
 * admit.c sees them (a snapshot of the table), admit_decide's answer
 * acted on (the job admitted, the pass over a head logged), each queued
 * job told where it stands, and the pass run again soon after anything
 * that may let a job start (a submit, an end, a release).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "admit.h"
#include "jobs-internal.h"
#include "log.h"
#include "proto.h"
#include "store.h"

#define JOBS_ADMIT_PER_PASS 64

/* The queue in order and the jobs holding memory, as admit.c sees them;
 * valid until the table next changes. */
struct queue_snap {
	struct jrec **q;         /* the queued records, in queue order */
	struct admit_queued *aq; /* the same, for admit_decide */
	size_t nq;
	struct admit_running *ar; /* the jobs holding memory */
	struct jrec **rr;         /* and their records */
	size_t nr;
};

static void
snap_free(struct queue_snap *s)
{
	free(s->q);
	free(s->aq);
	free(s->ar);
	free(s->rr);
	memset(s, 0, sizeof *s);
}

/* Order the queue (admit_order: docs/jobs.md, "Queue order") and set
 * every queued record's position. -ENOMEM. */
static int
jobs_snapshot(struct jobs *js, struct queue_snap *s)
{
	size_t cap = js->n ? js->n : 1, i, k = 0;
	struct jobs_deps_ctx deps;

	memset(s, 0, sizeof *s);
	s->q = malloc(cap * sizeof *s->q);
	s->aq = malloc(cap * sizeof *s->aq);
	s->ar = calloc(cap, sizeof *s->ar);
	s->rr = calloc(cap, sizeof *s->rr);
	if (s->q == NULL || s->aq == NULL || s->ar == NULL || s->rr == NULL) {
		snap_free(s);
		return -ENOMEM;
	}
	/* Groups' counts and the live ids, for what holds a job back. */
	jobs_deps_prepare(js->d, &deps);
	for (i = 0; i < js->n; i++) {
		struct jrec *r = js->v[i];
		const struct job *j = r->j;

		if (jrec_holds_memory(r)) {
			struct admit_running *a = &s->ar[s->nr];
			s->rr[s->nr++] = r;
			memset(a, 0, sizeof *a);
			a->job_id = j->id;
			a->uid = j->uid;
			a->admitted_ms = j->admitted_ms;
			a->footprint_bytes = j->footprint_bytes;
			a->expect_bytes = j->expect_bytes;
			a->exclusive = j->exclusive;
			a->privileged = j->privileged;
			a->recent_footprints = r->fp;
			a->recent_ms = r->fp_ms;
			a->nrecent = r->nfp;
		} else if (jrec_is_live(r) && j->state == JOB_QUEUED) {
			struct admit_queued *a = &s->aq[k++];
			memset(a, 0, sizeof *a);
			a->job_id = j->id;
			a->uid = j->uid;
			a->priority = j->priority;
			a->seq = j->queue_seq;
			a->wait_free_pct =
			    jobs_wait_free_pct(j, js->d->last.total_bytes);
			a->exclusive = j->exclusive;
			a->privileged = j->privileged;
			/* An attached job nobody is there to run (its client
			 * not back since a restart) cannot be the head. */
			a->blocked = j->attached && r->client_id == 0
			                 ? ADMIT_WAIT_CLIENT
			                 : jobs_deps_blocked(js->d, r, &deps);
			a->ref = i;
		}
	}
	jobs_deps_release(&deps);
	admit_order(s->aq, k, s->ar, s->nr);
	for (i = 0; i < k; i++) {
		s->q[i] = js->v[s->aq[i].ref];
		s->q[i]->position = (long)i + 1;
	}
	s->nq = k;
	return 0;
}

/* The queued records in queue order (malloc'd; NULL with *n 0 when none);
 * also sets every queued record's position. */
struct jrec **
jobs_queue(struct jobs *js, size_t *n)
{
	struct queue_snap s;
	struct jrec **q;

	*n = 0;
	if (jobs_snapshot(js, &s) != 0)
		return NULL;
	q = s.q;
	s.q = NULL;
	*n = s.nq;
	snap_free(&s);
	return q;
}

/* reserved_bytes: what the jobs holding memory had been promised and not
 * taken when it was decided (admit_result), for the event: with free_pct
 * it says what the decision saw. */
static void
jrec_admit(struct daemon *d, struct jrec *r, uint64_t reserved_bytes)
{
	struct job *j = r->j;
	struct jobs_note n = {.kind = JOBS_NOTE_ADMITTED, .job = j};
	cJSON *det;

	/* Runs of its name that ended while it waited count too. */
	jobs_learn_expect(d, j);
	j->state = JOB_ADMITTED;
	j->admitted_ms = clock_wall_ms();
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
	d->jobs->last_admit_ms = j->admitted_ms;
	det = cJSON_CreateObject();
	proto_add_int(det, "attempt", j->attempt);
	cJSON_AddNumberToObject(det, "free_pct", d->last.free_pct);
	cJSON_AddNumberToObject(det, "wait_free_pct", j->wait_free_pct);
	if (j->wait_free_bytes > 0)
		proto_add_int(det, "wait_free_bytes",
		              (int64_t)j->wait_free_bytes);
	proto_add_int(det, "swap_used_bytes", (int64_t)d->last.swap_used_bytes);
	proto_add_int(det, "sampled_at_ms", d->last.ts_ms);
	proto_add_int(det, "reserved_bytes", (int64_t)reserved_bytes);
	jobs_event(d, j, NAMES_EVENT_ADMITTED, det);

	if (j->attached) {
		if ((n.client_id = r->client_id) != 0)
			jobs_note(d, &n);
		return;
	}
	jobs_detached_spawn(d, r);
}

static void
jobs_notify_queue(struct daemon *d, struct jrec *r, long of, double free_pct)
{
	struct jobs_note n = {.kind = JOBS_NOTE_QUEUE};
	struct jobs_view v;
	int free_int = (int)(free_pct + 0.5);
	int64_t on = r->nwait_on > 0 ? r->wait_on[0] : 0;

	if (!r->j->attached || r->client_id == 0)
		return;
	if (!r->owe_queue && r->note_pos == r->position && r->note_of == of &&
	    r->note_free == free_int && r->note_wait == r->wait &&
	    r->note_after == r->wait_after && r->note_on == on)
		return;
	r->note_on = on;
	r->owe_queue = 0;
	r->note_pos = r->position;
	r->note_of = of;
	r->note_free = free_int;
	r->note_wait = r->wait;
	r->note_after = r->wait_after;
	n.client_id = r->client_id;
	n.job = r->j;
	n.position = r->position;
	n.of = of;
	n.free_pct = free_pct;
	n.wait = r->wait;
	n.wait_after = r->wait_after;
	jobs_view_of(r, &v);
	n.view = &v;
	jobs_note(d, &n);
}

/* r passes head, whose user's claim was before. */
static void
jobs_log_pass(const struct jrec *r, const struct jrec *head,
              const struct admit_claim *before, int64_t now)
{
	int64_t held = before->have && before->uid == head->j->uid
	                   ? now - before->since_ms
	                   : 0;

	log_info("jobs: job %" PRId64 " (uid %u) passes job %" PRId64
	         " (uid %u) at the head, whose user has held the queue for "
	         "%" PRId64 " ms",
	         r->j->id, (unsigned)r->j->uid, head->j->id,
	         (unsigned)head->j->uid, held);
}

/* What admission decides on: the queue and the jobs holding memory of s,
 * the latest sample, the daemon's health, settings and head claim. */
static void
admit_input(struct daemon *d, const struct queue_snap *s,
            struct admit_input *in)
{
	memset(in, 0, sizeof *in);
	in->queued = s->aq;
	in->nqueued = s->nq;
	in->running = s->ar;
	in->nrunning = s->nr;
	in->have_sample = d->have_last;
	in->storage_ok = store_health(d->store) == NULL;
	in->free_pct = d->last.free_pct;
	in->total_bytes = d->last.total_bytes;
	in->now_ms = clock_wall_ms();
	in->claim = d->jobs->claim;
	in->cfg.settle_ms = d->cfg.settle_ms;
	in->cfg.settle_growth_pct = d->cfg.settle_growth_pct;
	in->cfg.settle_samples = d->cfg.settle_samples;
	in->cfg.settle_window_ms =
	    (int64_t)d->cfg.settle_samples * d->cfg.interval_ms;
	in->cfg.max_running = d->cfg.max_running;
	in->cfg.hol_bound_ms = d->cfg.hol_bound_ms;
	in->cfg.max_wait_free_pct = d->cfg.max_wait_free_pct;
}

static void
wait_on_add(struct jrec *r, int64_t id)
{
	int i;

	for (i = 0; i < r->nwait_on; i++)
		if (r->wait_on[i] == id)
			return;
	if (r->nwait_on < JOBS_WAIT_ON_MAX && id != r->j->id)
		r->wait_on[r->nwait_on++] = id;
}

/*
 * What the queued job s->q[i] waits behind, after a decision (in, res)
 * gave it s->q[i]->wait: the jobs, and when it is known, until when
 * (PROTOCOL.md, Job: waiting_on, waiting_until_ms). settle: the job
 * admitted last, until its settle time has passed at most; head: the
 * head, until its claim runs out (hol_bound) for a job of another user
 * behind an unprivileged head; exclusive: the exclusive job (or, for an
 * exclusive job, every job holding memory); max_running: the running
 * jobs; expect: those whose reservation counts; after: those it starts
 * after that have not ended; group: its group's running jobs.
 */
static void
jobs_wait_on(const struct queue_snap *s, const struct admit_input *in,
             const struct admit_result *res, size_t i)
{
	struct jrec *r = s->q[i], *o;
	const struct job *j = r->j;
	const struct admit_running *a, *latest = NULL;
	size_t k;

	r->nwait_on = 0;
	r->wait_until_ms = 0;
	switch (r->wait) {
	case ADMIT_WAIT_SETTLE:
		for (k = 0; k < s->nr; k++) {
			a = &s->ar[k];
			if (latest == NULL ||
			    a->admitted_ms > latest->admitted_ms ||
			    (a->admitted_ms == latest->admitted_ms &&
			     a->job_id > latest->job_id))
				latest = a;
		}
		if (latest != NULL) {
			wait_on_add(r, latest->job_id);
			if (in->cfg.settle_ms > 0)
				r->wait_until_ms =
				    latest->admitted_ms + in->cfg.settle_ms;
		}
		break;
	case ADMIT_WAIT_HEAD:
		if (res->head < 0)
			break;
		o = s->q[res->head];
		wait_on_add(r, o->j->id);
		if (!o->j->privileged && o->j->uid != j->uid &&
		    res->claim.have && res->claim.uid == o->j->uid)
			r->wait_until_ms =
			    res->claim.since_ms + in->cfg.hol_bound_ms;
		break;
	case ADMIT_WAIT_EXCLUSIVE:
	case ADMIT_WAIT_MAX_RUNNING:
	case ADMIT_WAIT_EXPECT:
		for (k = 0; k < s->nr; k++) {
			a = &s->ar[k];
			if ((r->wait == ADMIT_WAIT_EXCLUSIVE && !j->exclusive &&
			     !a->exclusive) ||
			    (r->wait == ADMIT_WAIT_EXPECT &&
			     a->expect_bytes <= a->footprint_bytes))
				continue;
			wait_on_add(r, a->job_id);
		}
		break;
	case ADMIT_WAIT_AFTER:
		/* The first that has not ended (jobs_deps_blocked's). */
		if (r->wait_after > 0)
			wait_on_add(r, r->wait_after);
		break;
	case ADMIT_WAIT_GROUP:
		for (k = 0; k < s->nr; k++) {
			o = s->rr[k];
			if (o->j->group != NULL && j->group != NULL &&
			    strcmp(o->j->group, j->group) == 0)
				wait_on_add(r, o->j->id);
		}
		break;
	default:
		break;
	}
}

void
jobs_classify(struct daemon *d)
{
	struct queue_snap s;
	struct admit_input in;
	struct admit_result res;
	enum admit_wait *waits;
	size_t i;

	if (d->jobs == NULL)
		return;
	memset(&s, 0, sizeof s);
	if (jobs_snapshot(d->jobs, &s) != 0)
		return;
	if (s.nq > 0 && (waits = malloc(s.nq * sizeof *waits)) != NULL) {
		admit_input(d, &s, &in);
		admit_decide(&in, waits, &res);
		/* The claim and the queue stay as they are: the pass that
		 * admits is jobs_admit's. */
		for (i = 0; i < s.nq; i++) {
			s.q[i]->wait = waits[i];
			jobs_wait_on(&s, &in, &res, i);
		}
		free(waits);
	}
	snap_free(&s);
}

/* One admission pass: admit while the rule allows, then tell the attached
 * clients where they stand. */
void
jobs_admit(struct daemon *d)
{
	struct jobs *js = d->jobs;
	struct queue_snap s;
	enum admit_wait *waits = NULL;
	struct admit_claim before;
	struct admit_input in;
	struct admit_result res;
	struct jrec *r;
	size_t i;
	int round;

	memset(&s, 0, sizeof s);
	for (round = 0; round < JOBS_ADMIT_PER_PASS; round++) {
		snap_free(&s);
		free(waits);
		waits = NULL;
		if (jobs_snapshot(js, &s) != 0)
			break;
		if (s.nq == 0) {
			js->claim.have = 0; /* the next head starts afresh */
			break;
		}
		if ((waits = malloc(s.nq * sizeof *waits)) == NULL)
			break;
		admit_input(d, &s, &in);
		admit_decide(&in, waits, &res);
		before = js->claim;
		js->claim = res.claim;
		for (i = 0; i < s.nq; i++) {
			s.q[i]->wait = waits[i];
			jobs_wait_on(&s, &in, &res, i);
		}
		if (res.admit < 0 || d->stopping) {
			if (res.admit >= 0)
				js->claim = before; /* nothing moved */
			break;
		}
		r = s.q[res.admit];
		if (res.passed)
			jobs_log_pass(r, s.q[res.head], &before, in.now_ms);
		if (res.passed_exclusive)
			log_info("jobs: job %" PRId64 " (uid %u) starts beside "
			         "an exclusive job of another user, which has "
			         "run alone for hol_bound",
			         r->j->id, (unsigned)r->j->uid);
		/* A job back in the queue after a breach hears its place
		 * before it hears it is admitted again. */
		if (r->owe_queue)
			jobs_notify_queue(d, r, (long)s.nq, d->last.free_pct);
		jrec_admit(d, r, res.reserved_bytes);
		if (r->j->state == JOB_QUEUED)
			js->claim = before; /* not on disk: nothing moved */
	}
	snap_free(&s);
	free(waits);
	/* Positions may have moved: refresh them and notify. */
	if (jobs_snapshot(js, &s) == 0) {
		for (i = 0; i < s.nq; i++)
			jobs_notify_queue(d, s.q[i], (long)s.nq,
			                  d->last.free_pct);
		snap_free(&s);
	}
}

static void
admit_timer_cb(uv_timer_t *t)
{
	jobs_reap(t->data);
	jobs_admit(t->data);
}

/* Admit on the next loop turn, after the reply that triggered it has been
 * queued: a client learns its job id before it hears it was admitted. */
void
jobs_admit_soon(struct daemon *d)
{
	struct jobs *js = d->jobs;

	if (js == NULL || js->admit_timer == NULL || d->stopping)
		return;
	uv_timer_start(js->admit_timer, admit_timer_cb, 0, 0);
}
