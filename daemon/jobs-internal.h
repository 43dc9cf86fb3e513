/*
 * What the files of the jobs module share; not for other modules (their
 * contract is jobs.h).
 *
 *   jobs.c          the job table, transitions (commit, then note) and
 *                   the per-sample pass
 *   jobs-admit.c    admission applied: the queue as admit.c sees it, its
 *                   decision acted on, each queued job told its place
 *   jobs-enforce.c  enforcement applied: enforce.c's decision confirmed,
 *                   the breach recorded, the victim requeued or killed;
 *                   ending a job's process tree: TERM, grace, KILL
 *   jobs-detached.c detached jobs: spawning, the monitor's pipe, following
 *                   re-adopted jobs without one
 *   jobs-attached.c attached jobs: job_pid, job_exit, resume, client gone
 *   jobs-adopt.c    start-up: loading unended jobs, re-adoption
 *   jobs-ctl.c      what the front asks of the table: views, submit,
 *                   cancel
 *   jobs-stage.c    the stages a running job reports, and their numbers
 *   jobs-deps.c     dependencies (after) and holds
 *   jobs-onend.c    a job's on-end command
 *   jobs-fast.c     when the sampler should be fast (adaptive sampling)
 *   jobs-learn.c    learned peaks: what a named job reserves, and
 *                   learning from each run that ends
 *
 * The rules (state machine, admission, breach) are in docs/jobs.md.
 */
#ifndef SL_JOBS_INTERNAL_H
#define SL_JOBS_INTERNAL_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include <cjson/cJSON.h>
#include <uv.h>

#include "admit.h"
#include "daemon.h"
#include "job.h"
#include "jobs.h"
#include "umap.h"
#include "proctree.h"
#include "spawn.h"

/* Footprints kept for settle: settle is judged over settle_samples
 * normal intervals of time whatever the rate (docs/jobs.md, "Sampling
 * rate"), so at 0.1 s the default 1.5 s takes 16, the most (16 x 0.5 s)
 * 81. Beyond that the window is what the ring holds. */
#define JOBS_WINDOW ADMIT_RECENT_MAX

/* A job that has not ended (or whose end is not yet committed). */
struct jrec {
	struct jobs *js;
	struct job *j;
	struct proctree *tree;
	uint64_t
	    fp[JOBS_WINDOW]; /* footprints since it started, oldest first */
	int64_t fp_ms[JOBS_WINDOW]; /* and when each was sampled */
	size_t nfp;
	uint64_t growth_bytes;
	int64_t growth_restarted_ms; /* 0: growth counts from admission */
	/* What its attempts before this one ran, summed (job->attempts),
	 * for --time. */
	int64_t ran_before_ms;
	long position; /* 1-based while queued */
	enum admit_wait wait;
	int64_t wait_after; /* ADMIT_WAIT_AFTER: the first unended one */
	/* The jobs it waits behind (waiting_on: the job still settling, the
	 * head, the exclusive or running ones, those it starts after, its
	 * group's) and, where known, until when (0: not known): set with
	 * wait by jobs_wait_on. */
	int64_t wait_on[JOBS_WAIT_ON_MAX];
	int nwait_on;
	int64_t wait_until_ms;

	uint64_t client_id;      /* attached: the connection that owns it */
	int64_t orphan_since_ms; /* attached, no client since (restart) */

	const char *term_reason; /* being terminated: why (static string) */
	char *term_detail;       /* the paragraph for end_detail */
	int term_pending;        /* terminate as soon as there is a pid */
	int breach_kill;         /* the current breach victim */
	int requeue;             /* breach with retries left */
	uv_timer_t *kill_timer;
	int signalled_kill;

	int tree_gone;   /* running, no process left: awaits its end report */
	uv_poll_t *poll; /* detached: the monitor's report pipe */
	int adopted;     /* detached without a pipe: spawn_check each sample */
	/* exit_reporter "root", no client: when its processes were first
	 * seen gone (0: not), for JOBS_REPORT_GRACE_MS */
	int64_t report_wait_ms;

	int dirty;       /* the store is behind this record */
	int end_pending; /* ended in memory; announce once committed */
	int done;        /* ended and announced; kept while kill_timer runs */

	long note_pos, note_of; /* last queue notification sent */
	int note_free;
	enum admit_wait note_wait;
	int64_t note_after;
	int64_t note_on; /* the first job it waited behind, when told */
	int owe_queue;   /* back in the queue: its client is told before it is
	                    admitted again */
	int exit_owed;   /* attached: the daemon ended the attempt its client
	                    has not reported yet; that job_exit only asks */

	struct jobs_stage *stage; /* jobs-stage.c; NULL before the first */
};

struct pending_event; /* jobs.c */
struct onend_run;     /* jobs-onend.c */

struct jobs {
	struct daemon *d;
	struct jrec **v;
	size_t n, cap;
	struct pending_event *pending, **pending_tail;
	jobs_note_cb note;
	const struct jobs_ops *ops;
	uv_timer_t *admit_timer;
	struct admit_claim claim; /* the head's claim (admit.h), in memory */
	/* jobs-fast.c: the last swap used seen and when it last rose; until
	 * when a job's end keeps the sampler fast */
	uint64_t fast_swap_prev;
	int fast_have_prev;
	int64_t fast_swap_rose_ms;
	int64_t fast_ended_until_ms;
	/* Since the daemon started (jobs_counters). */
	uint64_t ended[JOB_LOST + 1][JOBS_NREASONS];
	uint64_t breaches;
	struct onend_run *onend; /* on-end commands running */
	/* jobs-deps.c: each uid's holds and releases in its current minute */
	struct hold_rate *holds;
	size_t nholds, capholds;
	/* jobs-deps.c: the arrays a cancel or hold walks (a few at most) */
	int64_t *frozen;
	size_t nfrozen, capfrozen;
	int loading;  /* jobs_init is loading the store's unended jobs */
	int batching; /* jobs_events_batch: events wait to commit together */
	int64_t last_admit_ms; /* the latest admission (jobs_awake_counts) */
};

static inline char *
xstrdup(const char *s)
{
	return s == NULL ? NULL : strdup(s);
}

static inline int
jrec_is_live(const struct jrec *r)
{
	return !r->done && !r->end_pending;
}

static inline int
jrec_holds_memory(const struct jrec *r)
{
	return jrec_is_live(r) &&
	       (r->j->state == JOB_ADMITTED || r->j->state == JOB_RUNNING);
}

/* ---- jobs.c ---- */

struct jrec *jobs_find(struct jobs *js, int64_t id);
struct jrec *jrec_new(struct jobs *js, struct job *j);
/* The queued records in queue order (malloc'd; NULL with *n 0 when none);
 * also sets every queued record's position. */
struct jrec **jobs_queue(struct jobs *js, size_t *n);
void jobs_admit_soon(struct daemon *d);
/* jobs-admit.c: one admission pass now (jobs_on_sample_at's), and
 * jobs.c's freeing of the records that ended since the last. */
void jobs_admit(struct daemon *d);
void jobs_reap(struct daemon *d);
/* Every queued record's position and wait as the next admission pass would
 * find them, admitting nothing; for answers given before that pass. */
void jobs_classify(struct daemon *d);
/* Tell the layers above (jobs.h, struct jobs_note). */
void jobs_note(struct daemon *d, struct jobs_note *n);
/* Write the record; on failure it is kept dirty and retried each sample. */
int jrec_commit(struct daemon *d, struct jrec *r);
/* Events are committed JOBS_EVENTS_BATCH at most to a transaction. */
#define JOBS_EVENTS_BATCH 256
/* Between on (1) and off (0) the events recorded wait, and are committed
 * in transactions of JOBS_EVENTS_BATCH at the off (an array's submitted
 * events, one commit each before: docs/benchmarks.md, "Whole arrays").
 * Nests. */
void jobs_events_batch(struct daemon *d, int on);
/* Record an event (detail: JSON object, consumed); announced once it is
 * committed. */
void jobs_event(struct daemon *d, const struct job *j, enum names_event kind,
                cJSON *detail);
/* The job's process started (attached: job_pid; detached: the monitor). */
void jrec_started(struct daemon *d, struct jrec *r, pid_t pid, pid_t pgid,
                  uint64_t start_time, int64_t started_ms);
/* End the job in state s; detail is consumed. */
void jrec_end(struct daemon *d, struct jrec *r, enum job_state s,
              const char *reason, char *detail);
void jrec_proc_exited(struct daemon *d, struct jrec *r, int known,
                      int exit_code, int term_signal);
void jobs_victim_gone(struct daemon *d, struct jrec *victim);
char *jobs_fmt_detail(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
/* HH:MM:SS local time; the number of ms when that fails (len >= 21). */
void jobs_clock_hms(int64_t ms, char *buf, size_t len);

/* ---- jobs-stage.c ---- */

/* Commit the open stage, if any, as a stage_end event ending at ended_ms. */
void jobs_stage_close(struct daemon *d, struct jrec *r, int64_t ended_ms);
/* Each sample of a running job: the open stage's peaks. */
void jobs_stage_sample(struct jrec *r, const struct sys_sample *s);
/* The open stage's name, or NULL. */
const char *jobs_stage_current(const struct jrec *r);
void jobs_stage_free(struct jrec *r);
/* Start-up: a re-adopted job's stage that had not ended goes on. */
void jobs_stage_restore(struct daemon *d, struct jrec *r);

/* ---- jobs-fast.c ---- */

/* A job has ended: sample at once if a job waits (it may fit now), and
 * stay fast a moment. */
void jobs_fast_ended(struct daemon *d);

/* ---- jobs-learn.c ---- */

/* Set j's expect from what the last runs of its name reached, when its
 * name was given, no expect was, and learning is on (else it reserves
 * nothing it learnt). At submit, and again at admission. */
void jobs_learn_expect(struct daemon *d, struct job *j);
/* The job's end is committed: what it reached joins its name's runs. */
void jobs_learn_record(struct daemon *d, const struct job *j);

/* ---- jobs-enforce.c: ending a process tree ---- */

void jobs_kill_signal(struct jrec *r, int sig);
/* SIGTERM to the tree now, SIGKILL after the grace period. */
void jobs_kill_term(struct daemon *d, struct jrec *r);
/* jobs-enforce.c: at each sample, enforce.c's decision applied (breach
 * confirmed by a second reading, recorded, the victim requeued or
 * killed). */
void jobs_enforce(struct daemon *d, const struct sys_sample *s);
/* Also at each sample: the running jobs past a time limit are
 * terminated (reason time_limit). */
void jobs_time_limits(struct daemon *d, int64_t now);
/* Another attempt is possible: not an attached job whose client has gone
 * for good. */
int jrec_may_retry(const struct jrec *r);
void jobs_kill_start(struct daemon *d, struct jrec *r, const char *reason,
                     char *detail);
void jobs_kill_stop_timer(struct jrec *r);

/* ---- jobs-detached.c ---- */

/* The job was admitted: start its monitor and follow its pipe. */
void jobs_detached_spawn(struct daemon *d, struct jrec *r);
/* A re-adopted job without a pipe: has it ended? (each sample) */
void jobs_detached_check(struct daemon *d, struct jrec *r);
/* The monitor recorded the job's end (or that it could not start). */
/* Why a detached job exited non-zero, when the end of its log tells
 * (platform_log_hint), as a malloc'd end_detail; NULL when it does not. */
char *jobs_detached_exit_hint(struct daemon *d, const struct job *j);
void jobs_detached_ended(struct daemon *d, struct jrec *r,
                         const struct spawn_status *st);
void jobs_detached_unwatch(struct jrec *r);
/* The view of a record (jobs_get's, without refreshing the queue). */
void jobs_view_of(const struct jrec *r, struct jobs_view *v);
/*
 * The marker line a detached job's log gets for an end the daemon caused
 * (its end_reason: a kill, a cancel, ...), or for the end of an attempt
 * that is requeued (next_attempt > 0: the attempt that follows): "stageload:
 * killed at 23:02:11: the system's swap grew 2.6G while it ran, over its
 * 2.0G budget". jobs_mark_text writes the line (with its newline) and
 * returns its length, or -1 when there is none.
 */
int jobs_mark_text(const struct job *j, int next_attempt, char *buf,
                   size_t len);
void jobs_detached_mark(struct daemon *d, const struct job *j,
                        int next_attempt);

/* ---- jobs-attached.c ---- */

/* Each sample: end an attached job the daemon is ending once its process
 * is gone; give up one whose client did not come back after a restart. */
void jobs_attached_check(struct daemon *d, struct jrec *r, int64_t now);
/* The job's end is root's to report (exit_reporter "root"). */
int jrec_root_reports(const struct jrec *r);

/* ---- jobs-adopt.c ---- */

/* Load the unended jobs of the store (*n: how many); < 0 when it fails. */
int jobs_adopt_load(struct daemon *d, int *n);

/* ---- jobs-deps.c ---- */

/* The free % j waits for: its wait_free_pct, or the share of total its
 * wait_free_bytes is when that is more (available bytes are free % x
 * total / 100 on either platform). */
double jobs_wait_free_pct(const struct job *j, uint64_t total_bytes);

/* What jobs_deps_blocked needs, worked out once per queue snapshot: the
 * jobs holding memory in each group of the config (in d->cfg.groups'
 * order) and the ids of the jobs not ended, sorted (only when a queued job
 * has dependencies), so each check is a binary search. */
/* One user's jobs of a limited group that hold memory. */
struct jobs_group_use {
	int group; /* index in cfg.groups */
	uid_t uid;
	int running;
};
struct jobs_deps_ctx {
	int running[CONFIG_MAX_GROUPS];
	/* Per limited group: the uid of a job in it that could use a slot
	 * (queued, not held, no dependency pending), and whether another
	 * uid has one too (for the share of one user). */
	uid_t waiting_uid[CONFIG_MAX_GROUPS];
	int waiting_uids[CONFIG_MAX_GROUPS]; /* 0, 1 or 2 (two or more) */
	struct jobs_group_use *use;          /* NULL: no share is held back */
	size_t nuse;
	int64_t *live; /* NULL when no queued job has dependencies */
	size_t nlive;
	int nomem; /* live could not be built: dependencies count as unmet */
	int64_t now_ms; /* for --begin */
	/* Per array with a limit (%N): its elements holding memory (a). */
	struct umap arrays;
	int arrays_nomem; /* then no element of a limited array starts */
};
void jobs_deps_prepare(struct daemon *d, struct jobs_deps_ctx *c);
void jobs_deps_release(struct jobs_deps_ctx *c);
/* Why r cannot be the head (held, an unended dependency: sets
 * r->wait_after, its --begin still to come, its group at its limit or its
 * user at its share of it), or ADMIT_WAIT_NONE. */
enum admit_wait jobs_deps_blocked(struct daemon *d, struct jrec *r,
                                  const struct jobs_deps_ctx *c);
/* Past JOBS_HOLD_EVENTS_PER_MINUTE a uid's holds and releases are counted
 * and written as one event when its minute ends: at the sample tick, or
 * all of them (all) at shutdown. */
void jobs_hold_flush(struct daemon *d, int64_t now, int all);
/* ended's end is recorded: the queued jobs that needed it to exit 0 are
 * cancelled (reason "dependency"), and theirs in turn. */
void jobs_deps_ended(struct daemon *d, const struct job *ended);
/* Start-up: the same for dependencies that ended while no daemon ran. */
void jobs_deps_load(struct daemon *d);

/* ---- jobs-onend.c ---- */

/* j's end is recorded: run its on-end command, if it has one (or record
 * why not). */
void jobs_onend_start(struct daemon *d, const struct job *j);
/* Stop watching the on-end commands; they go on under their monitors. */
void jobs_onend_shutdown(struct daemon *d);

/* ---- jobs-ctl.c ---- */

/* 0 once r's end is on disk; else PROTO_E_STORAGE with the cause: an end
 * is announced only once committed. */
int jobs_ctl_end_recorded(struct daemon *d, const struct jrec *r, char *cause,
                          size_t causelen);

/* jobs-enforce.c: a size in the words of the log and of a kill's record
 * ("2.6G"); buf of 24 bytes holds any. Returns buf. */
char *jobs_size_words(uint64_t bytes, char *buf, size_t len);

#endif
