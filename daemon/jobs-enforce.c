/*
 * Enforcement applied: at each sample, enforce.c's decision over the
 * running jobs (who breached its swap budget, which one is the victim),
 * confirmed by a second reading of swap; the breach recorded with the
 * numbers that decided it (the paragraph show prints, the breach event)
 * and the job requeued or killed; and ending a job's process tree for
 * any reason: SIGTERM to its process group and every process found in its
 * tree, SIGKILL to what is left after the grace period (config grace_ms).
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include <uv.h>

#include "enforce.h"
#include "jobs-internal.h"
#include "log.h"
#include "platform.h"
#include "proto.h"
#include "proctree.h"
#include "spawn.h"
#include "units.h"

static pid_t sig_pids[PROCTREE_MAX_PIDS];

char *
jobs_size_words(uint64_t bytes, char *buf, size_t len)
{
	if (units_format_size(bytes, buf, len) == NULL)
		snprintf(buf, len, "%" PRIu64 "B", bytes);
	return buf;
}

void
jobs_kill_signal(struct jrec *r, int sig)
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
	if (r->js->ops->signal_tree(pgid, sig_pids, (size_t)n, sig) < 0)
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

void
jobs_kill_stop_timer(struct jrec *r)
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
	jobs_kill_signal(r, SIGKILL);
	jobs_kill_stop_timer(r);
	if (r->done)
		jobs_admit_soon(d); /* reaps it */
}

/* SIGTERM to the tree now, SIGKILL after the grace period. */
void
jobs_kill_term(struct daemon *d, struct jrec *r)
{
	jobs_kill_signal(r, SIGTERM);
	if (r->kill_timer != NULL)
		return;
	r->kill_timer = malloc(sizeof *r->kill_timer);
	if (r->kill_timer == NULL) {
		jobs_kill_signal(r, SIGKILL);
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
 * (detail, malloc'd, is consumed). The signal goes first: a write can wait
 * out the busy timeout or a disk stalled by the very swapping being
 * stopped, and enforcement never waits on storage. The reason is committed
 * next, so a daemon restart still knows why the job ended.
 */
void
jobs_kill_start(struct daemon *d, struct jrec *r, const char *reason,
                char *detail)
{
	if (r->term_reason != NULL) {
		free(detail);
		return;
	}
	r->term_reason = reason;
	r->term_detail = detail;
	if (r->tree == NULL)
		r->term_pending = 1;
	else
		jobs_kill_term(d, r);
	/* Also for a breach that will requeue: a restarted daemon then
	 * carries the kill on and requeues just the same (the requeue
	 * clears the reason again). */
	free(r->j->end_reason);
	r->j->end_reason = xstrdup(reason);
	jrec_commit(d, r);
}

static char *
breach_paragraph(const struct jrec *r, const struct sys_sample *s, int requeued)
{
	const struct job *j = r->j;
	char at[24], since[64], grew[16], from[16], to[16], budget[16], fp[16];
	char during[300] = "", own[48] = "", js[16];
	const char *stage = jobs_stage_current(r);

	jobs_clock_hms(s->ts_ms, at, sizeof at);
	if (r->growth_restarted_ms > 0) {
		char t[24];
		jobs_clock_hms(r->growth_restarted_ms, t, sizeof t);
		snprintf(since, sizeof since,
		         "since its growth restarted at %s", t);
	} else
		snprintf(since, sizeof since, "since admission");
	jobs_size_words(r->growth_bytes, grew, sizeof grew);
	jobs_size_words(j->swap_base_bytes, from, sizeof from);
	jobs_size_words(s->swap_used_bytes, to, sizeof to);
	jobs_size_words(j->swap_budget_bytes, budget, sizeof budget);
	jobs_size_words(j->footprint_bytes, fp, sizeof fp);
	if (stage != NULL)
		snprintf(during, sizeof during, " during %s", stage);
	/* Swap is the system's: what the job's own processes hold is said
	 * beside it where the system measures it (docs/jobs.md, "Swap
	 * budgets"). */
	if (PLATFORM_JOB_SWAP)
		snprintf(own, sizeof own, "; its own swap %s",
		         jobs_size_words(j->job_swap_bytes, js, sizeof js));
	return jobs_fmt_detail(
	    "%s%s at %s: the system's swap grew %s while it ran (%s, from %s "
	    "to %s), over its %s budget%s; free %.0f%%, footprint %s, "
	    "pressure %s%s",
	    requeued ? "breach" : "killed", during, at, grew, since, from, to,
	    budget, own, s->free_pct, fp, pressure_name(s->pressure),
	    requeued ? "; requeued for another attempt" : "");
}

/* The Job's public `kill`: the numbers of the breach, none of them
 * private (PROTOCOL.md, Job). Committed with the kill's reason. */
static void
breach_kill_numbers(struct job *j, const struct jrec *r,
                    const struct sys_sample *s)
{
	cJSON *k = cJSON_CreateObject();

	free(j->kill);
	j->kill = NULL;
	if (k == NULL)
		return;
	proto_add_int(k, "at_ms", s->ts_ms);
	proto_add_int(k, "swap_budget_bytes", (int64_t)j->swap_budget_bytes);
	proto_add_int(k, "swap_growth_bytes", (int64_t)r->growth_bytes);
	proto_add_int(k, "swap_used_bytes", (int64_t)s->swap_used_bytes);
	proto_add_int(k, "footprint_bytes", (int64_t)j->footprint_bytes);
	cJSON_AddNumberToObject(k, "free_pct", s->free_pct);
	cJSON_AddStringToObject(k, "pressure", pressure_name(s->pressure));
	proto_add_int(k, "attempt", j->attempt);
	j->kill = cJSON_PrintUnformatted(k);
	cJSON_Delete(k);
}

static void
jobs_breach(struct daemon *d, struct jrec *r, const struct sys_sample *s)
{
	struct job *j = r->j;
	int requeued = enforce_requeues(j->attempt, j->retry_on_breach) &&
	               jrec_may_retry(r);
	struct jobs_note n = {.kind = JOBS_NOTE_BREACH, .job = j};
	cJSON *det;
	char *note_detail;
	char *para = breach_paragraph(r, s, requeued);
	/* What the record says if the retry is abandoned after all (a
	 * cancel, the client leaving): the final paragraph. */
	char *final = requeued ? breach_paragraph(r, s, 0) : para;

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
	/* The client's copy: jobs_kill_start consumes final. */
	note_detail = xstrdup(para);
	d->jobs->breaches++;
	breach_kill_numbers(j, r, s);
	/* The signal before any write: enforcement never waits on storage. */
	jobs_kill_start(d, r, "swap_budget", final);
	if (para != final)
		free(para);
	jobs_event(d, j, NAMES_EVENT_BREACH, det);
	if (j->attached && r->client_id != 0) {
		n.client_id = r->client_id;
		n.growth_bytes = r->growth_bytes;
		n.requeued = requeued;
		n.detail = note_detail;
		jobs_note(d, &n);
	}
	free(note_detail);
	if (r->tree == NULL && j->attached) {
		/* Admitted but its client never reported a pid: nothing to
		 * signal, nothing started. */
		r->term_pending = 0;
		jrec_proc_exited(d, r, 0, 0, 0);
	}
}

/*
 * Time limits (docs/jobs.md, "Time limits"): a running job past its
 * --time-per-attempt (this attempt's run) or its --time (its runs summed
 * over attempts) is terminated, reason time_limit, with the numbers in its
 * `kill`. Never a retry: only a breach is retried. No I/O and no
 * allocation unless a job is past its limit.
 */
void
jobs_time_limits(struct daemon *d, int64_t now)
{
	struct jobs *js = d->jobs;
	size_t i;

	for (i = 0; i < js->n; i++) {
		struct jrec *r = js->v[i];
		struct job *j = r->j;
		int64_t ran, total, limit;
		const char *which, *option;
		char at[24], ran_s[32], limit_s[32], over[48] = "";
		cJSON *k;

		if (!jrec_is_live(r) || j->state != JOB_RUNNING ||
		    j->started_ms <= 0 || r->term_reason != NULL ||
		    (j->time_limit_ms <= 0 &&
		     j->time_limit_per_attempt_ms <= 0))
			continue;
		ran = now > j->started_ms ? now - j->started_ms : 0;
		total = r->ran_before_ms + ran;
		if (j->time_limit_per_attempt_ms > 0 &&
		    ran >= j->time_limit_per_attempt_ms) {
			which = "per_attempt";
			option = "--time-per-attempt";
			limit = j->time_limit_per_attempt_ms;
			if (j->attempt > 1)
				snprintf(over, sizeof over, " in attempt %d",
				         j->attempt);
		} else if (j->time_limit_ms > 0 && total >= j->time_limit_ms) {
			which = "total";
			option = "--time";
			limit = j->time_limit_ms;
			ran = total;
			if (j->attempt > 1)
				snprintf(over, sizeof over, " over %d attempts",
				         j->attempt);
		} else
			continue;
		jobs_clock_hms(now, at, sizeof at);
		units_format_duration(ran, ran_s, sizeof ran_s);
		units_format_duration(limit, limit_s, sizeof limit_s);
		log_info("jobs: job %" PRId64 " (%s): ran %s%s, its time limit "
		         "(%s %s)",
		         j->id, j->name ? j->name : "", ran_s, over, option,
		         limit_s);
		free(j->kill);
		j->kill = NULL;
		if ((k = cJSON_CreateObject()) != NULL) {
			proto_add_int(k, "at_ms", now);
			cJSON_AddStringToObject(k, "limit", which);
			proto_add_int(k, "limit_ms", limit);
			proto_add_int(k, "ran_ms", ran);
			proto_add_int(k, "attempt", j->attempt);
			j->kill = cJSON_PrintUnformatted(k);
			cJSON_Delete(k);
		}
		jobs_kill_start(d, r, "time_limit",
		                jobs_fmt_detail("killed at %s: it ran %s%s, "
		                                "its time limit (%s %s)",
		                                at, ran_s, over, option,
		                                limit_s));
	}
}

/*
 * A breach is acted on only when a second reading of swap used, taken now
 * in the same tick, shows it too: one reading can be wrong (a torn
 * vm.swapusage on macOS, docs/macos.md), and waiting for the next sample
 * would cost an interval. *used is then the lower of the two, on which
 * the breach is judged again; -1 when swap could not be read again (then
 * nothing is killed this tick).
 */
static int
jobs_swap_again(const struct sys_sample *s, uint64_t *used)
{
	char cause[256];
	uint64_t again;

	cause[0] = '\0';
	if (platform_swap_used(&again, cause, sizeof cause) != 0) {
		log_warnx(
		    "jobs: a breach not confirmed, swap could not be read "
		    "again (%s): nothing killed",
		    cause);
		return -1;
	}
	*used = again < s->swap_used_bytes ? again : s->swap_used_bytes;
	return 0;
}

static void
jobs_enforce_fill(struct jrec **rs, struct enforce_job *ej, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		struct jrec *r = rs[i];

		memset(&ej[i], 0, sizeof ej[i]);
		ej[i].job_id = r->j->id;
		ej[i].admitted_ms = r->j->admitted_ms;
		ej[i].swap_budget_bytes = r->j->swap_budget_bytes;
		ej[i].swap_base_bytes = r->j->swap_base_bytes;
		/* One being terminated for another reason still counts as
		 * a kill in progress only when it is a breach victim. */
		ej[i].breach_kill = r->breach_kill;
	}
}

void
jobs_enforce(struct daemon *d, const struct sys_sample *s)
{
	struct jobs *js = d->jobs;
	struct enforce_job *ej;
	struct jrec **rs;
	struct sys_sample judged = *s;
	size_t i, n = 0;
	long victim, first;

	ej = calloc(js->n ? js->n : 1, sizeof *ej);
	rs = calloc(js->n ? js->n : 1, sizeof *rs);
	if (ej == NULL || rs == NULL) {
		free(ej);
		free(rs);
		return;
	}
	for (i = 0; i < js->n; i++) {
		struct jrec *r = js->v[i];
		if (!jrec_holds_memory(r) || r->tree_gone)
			continue;
		rs[n++] = r;
	}
	jobs_enforce_fill(rs, ej, n);
	victim = first = enforce_decide(ej, n, s->swap_used_bytes);
	if (victim >= 0 && rs[victim]->term_reason == NULL) {
		/* Judged again on the lower of two readings, so growth, its
		 * peak and the record never hold a reading the second one
		 * did not bear out. */
		if (jobs_swap_again(s, &judged.swap_used_bytes) < 0)
			victim = -1;
		else if (judged.swap_used_bytes < s->swap_used_bytes) {
			jobs_enforce_fill(rs, ej, n);
			victim = enforce_decide(ej, n, judged.swap_used_bytes);
		}
		if (victim < 0) {
			char seen[16], again[16];

			jobs_size_words(s->swap_used_bytes, seen, sizeof seen);
			jobs_size_words(judged.swap_used_bytes, again,
			                sizeof again);
			log_warnx("jobs: job %" PRId64 " (%s): breach not "
			          "confirmed: swap used read %s, then %s at "
			          "once: nothing killed",
			          rs[first]->j->id,
			          rs[first]->j->name ? rs[first]->j->name : "",
			          seen, again);
		}
	}
	for (i = 0; i < n; i++) {
		struct jrec *r = rs[i];
		r->growth_bytes = ej[i].growth_bytes;
		r->j->swap_base_bytes = ej[i].swap_base_bytes;
		if (ej[i].growth_bytes > r->j->swap_growth_peak_bytes)
			r->j->swap_growth_peak_bytes = ej[i].growth_bytes;
	}
	/* A job already being terminated (cancel) is not signalled again,
	 * but it is the victim all the same: nobody else is chosen while it
	 * dies, and its exit restarts the survivors' growth. */
	if (victim >= 0 && rs[victim]->term_reason != NULL)
		rs[victim]->breach_kill = 1;
	else if (victim >= 0)
		jobs_breach(d, rs[victim], &judged);
	/* The minimum is persisted so a restart measures from it; after the
	 * kill, which must not wait for these writes. */
	for (i = 0; i < n; i++)
		if (ej[i].base_changed && jrec_is_live(rs[i]))
			jrec_commit(d, rs[i]);
	free(ej);
	free(rs);
}
