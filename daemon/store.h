/*
 * Storage: one sqlite database in WAL mode. Samples are buffered and
 * committed in small batches (store_flush); job state and events are
 * committed at once, before the daemon announces them. docs/storage.md
 * describes the schema, tiers and retention. Every function returns 0 or a
 * negative errno-style code and writes a readable cause; the daemon must
 * keep running (and enforcing) when they fail.
 */
#ifndef SL_STORE_H
#define SL_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "daemon.h"
#include "job.h"
#include "store-read.h"
#include "platform.h"

int store_open(struct store **sp, const char *path, char *cause,
               size_t causelen);
/* Closes without flushing: call store_flush first. */
void store_close(struct store *s);

/* Buffer one system sample (no I/O, no allocation). The buffer holds an
 * hour at 0.5 s; when storage keeps failing the oldest samples are dropped
 * and counted (store_dropped). */
void store_add_sample(struct store *s, const struct sys_sample *ss);
/* Buffer one per-job sample (no I/O). */
void store_add_job_sample(struct store *s, int64_t job_id, int64_t ts_ms,
                          uint64_t footprint_bytes, uint64_t swap_bytes);
/* Commit buffered samples and update rollups in one transaction. On failure
 * the buffer is kept (bounded) and retried on the next call. */
int store_flush(struct store *s, char *cause, size_t causelen);
/* Samples buffered and not yet committed. */
size_t store_pending(struct store *s);
/* The time of the oldest system sample (job_id 0) or sample of job job_id
 * not yet committed; INT64_MAX when there is none. */
int64_t store_unwritten_since(struct store *s, int64_t job_id);
/* Samples (system and job) dropped because the buffer was full. */
uint64_t store_dropped(struct store *s);
/* A passive WAL checkpoint: asked of the checkpoint thread, which also runs
 * one whenever a commit leaves the WAL past 1000 pages (store-checkpoint.c;
 * past 8000 the commit finishes the copy itself, so that the WAL restarts);
 * here and now when there is no such thread. */
int store_checkpoint(struct store *s);
struct store_ckpt_stats {
	uint64_t runs;           /* checkpoints the thread ran */
	uint64_t capped;         /* the loop's, past the WAL's bound (32 MiB) */
	int64_t last_us, max_us; /* how long they took */
	int last_rc;             /* the last one's: 0 or a negative errno */
};
/* The checkpoint thread's counts; -ENOTSUP when there is none. */
int store_checkpoint_stats(struct store *s, struct store_ckpt_stats *st);
/* Drop data older than the retention; a member <= 0 keeps that data
 * forever. */
/* Every ended job store_prune would delete now: cb(arg, id) for each, so
 * what it left outside the database goes too. */
int store_jobs_expiring(struct store *s, int64_t now_ms,
                        const struct store_retention *r,
                        void (*cb)(void *arg, int64_t id), void *arg);
int store_prune(struct store *s, int64_t now_ms,
                const struct store_retention *r, char *cause, size_t causelen);

/* A gap marker ("start", "stop") so history shows a gap, not a line. */
int store_mark(struct store *s, int64_t ts_ms, const char *kind, char *cause,
               size_t causelen);

/* History: buckets of step_ms between since and until, from the coarsest
 * tier whose resolution is <= step_ms, or a coarser one when that one's
 * rows begin after since (docs/storage.md). Buckets start at multiples of
 * step_ms (the first at since rounded down); a rollup row counts in the
 * bucket holding its start; empty buckets are omitted; *out is malloc'd (free
 * it). Only committed samples are seen. -E2BIG beyond STORE_HISTORY_MAX
 * buckets. The reading itself is store-read.c's, shared with stageloadctl;
 * these read through the daemon's connection. */
int store_history(struct store *s, int64_t since_ms, int64_t until_ms,
                  int64_t step_ms, const char **tier,
                  struct history_bucket **out, size_t *n, char *cause,
                  size_t causelen);
int store_history_begin(struct store *s, int64_t since_ms, int64_t until_ms,
                        int64_t step_ms, struct store_history_cursor *c,
                        char *cause, size_t causelen);
int store_history_next(struct store *s, struct store_history_cursor *c,
                       int64_t max_buckets, struct history_bucket **out,
                       size_t *n, char *cause, size_t causelen);
int store_job_history(struct store *s, int64_t job_id, int64_t since_ms,
                      int64_t until_ms, int64_t step_ms,
                      struct job_bucket **out, size_t *n, char *cause,
                      size_t causelen);
/* The daemon's reader, for what store.h does not wrap (a job's stages). */
struct store_read *store_reader(struct store *s);
/* Most recent system sample (buffered or committed), 1 when there is
 * none. */
int store_latest(struct store *s, struct sys_sample *out);

/* Jobs. insert assigns j->id (and j->queue_seq when 0). update writes every
 * field. Both commit before returning. */
int store_job_insert(struct store *s, struct job *j, char *cause,
                     size_t causelen);
/* An array's elements v[0..n-1] in one transaction: each its row, v[0]
 * the args row they share; sets each one's id and array_id (v[0]'s id).
 * On failure nothing is stored and their ids stay 0. */
int store_array_insert(struct store *s, struct job **v, size_t n, char *cause,
                       size_t causelen);
int store_job_update(struct store *s, const struct job *j, char *cause,
                     size_t causelen);
/* The elements of array array_id, by index: their job ids and indices
 * (malloc'd, both NULL with *n 0 when none is stored). < 0 on failure. */
int store_array_elements(struct store *s, int64_t array_id, int64_t **ids,
                         int64_t **indices, size_t *n);
/* Count ended jobs in their days' accounting (store-report.h), in one
 * transaction: what store_job_update does for the update that ends a
 * job, for tests and benchmarks that seed the table. */
int store_account(struct store *s, struct job *const *jobs, size_t n,
                  char *cause, size_t causelen);
/* Load one job (malloc'd, free with job_free), 1 when absent. */
int store_job_get(struct store *s, int64_t id, struct job **out);
/* The same without its env, and its argv made its command line (a list's
 * job: wire_job_list). */
int store_job_get_lean(struct store *s, int64_t id, struct job **out);
/* Call cb for every job not ended, in queue order (priority desc,
 * queue_seq asc) — used at start-up to rebuild the queue. Each job has its
 * command line and no argv or env (store_job_get reads them). The callback may
 * call store functions. A non-zero return from cb stops the walk (the jobs
 * not yet passed are freed) and is returned. */
int store_jobs_unended(struct store *s,
                       int (*cb)(void *arg,
                                 struct job *j /* ownership passes */),
                       void *arg);
/* Ended jobs, newest ended first, at most limit (<= 0: all); ownership of
 * each job passes to cb as for store_jobs_unended. */
int store_jobs_ended(struct store *s, int64_t limit,
                     int (*cb)(void *arg, struct job *j), void *arg);
/* The same, from the first that ends before (ended_ms, id) in that order:
 * a page of the list that follows the one ending with that job. */
int store_jobs_ended_before(struct store *s, int64_t ended_ms, int64_t id,
                            int64_t limit, int (*cb)(void *arg, struct job *j),
                            void *arg);
/* The same, of one uid's jobs alone (read by its index). */
int store_jobs_ended_of(struct store *s, uid_t uid, int64_t ended_ms,
                        int64_t id, int64_t limit,
                        int (*cb)(void *arg, struct job *j), void *arg);

/* What one uid's job rows hold (docs/storage.md, "Bounds per user"):
 * kept in memory, counted from the rows at open, updated by every insert,
 * the update that ends a job, store_make_room and store_prune, so reading
 * it is O(1). Bytes are store_job_bytes of each row. */
struct store_usage {
	int64_t bytes, ended_bytes; /* all rows, ended rows */
	int64_t jobs, ended;        /* rows, ended rows */
};
void store_usage(struct store *s, uid_t uid, struct store_usage *u);
/* The bytes a job counts: its argv and env strings, cwd and name. */
int64_t store_job_bytes(const struct job *j);
/* Make room for a job of need_bytes of uid: delete that uid's oldest ended
 * jobs (by ended_ms, then id), with their samples and events, in one
 * transaction, until its rows hold at most max_bytes - need_bytes and
 * at most max_ended ended jobs, or none is left. Then cb(arg, id) for
 * each deleted job, so what it left outside the database goes too.
 * *pruned: how many. Unended jobs are never deleted: the caller refuses
 * first when they alone pass the bound. */
int store_make_room(struct store *s, uid_t uid, int64_t need_bytes,
                    int64_t max_bytes, int64_t max_ended,
                    void (*cb)(void *arg, int64_t id), void *arg, int *pruned,
                    char *cause, size_t causelen);

/* Events: submitted, admitted, started, breach, killed, exited, failed,
 * cancelled, lost, requeued, stage, stage_end, daemon_start, daemon_stop. */
struct store_event {
	int64_t id;
	int64_t ts_ms;
	int64_t job_id; /* 0 for daemon events */
	uid_t uid;      /* job owner; 0 for daemon events */
	const char *kind;
	const char *detail; /* JSON object text */
};
/* Commits the event and sets e->id. */
int store_event_add(struct store *s, struct store_event *e, char *cause,
                    size_t causelen);
/* The same for n events, in one transaction: all or none. */
int store_events_add(struct store *s, struct store_event **v, size_t n,
                     char *cause, size_t causelen);
/* Events with id > after_id, oldest first, at most limit (<= 0: all), of
 * job job_id only when it is > 0 (read by its index, however old the job).
 * The event's strings are valid only during the callback; a non-zero return
 * stops the walk and is returned. */
int store_events(struct store *s, int64_t after_id, int64_t job_id,
                 int64_t limit,
                 int (*cb)(void *arg, const struct store_event *e), void *arg);
/* The same newest first: events with id < before_id (<= 0: all). */
int store_events_before(struct store *s, int64_t before_id, int64_t job_id,
                        int64_t limit,
                        int (*cb)(void *arg, const struct store_event *e),
                        void *arg);

/* One job's events of one kind, oldest first, at most limit. As
 * store_events otherwise. */
int store_job_events(struct store *s, int64_t job_id, const char *kind,
                     int64_t limit,
                     int (*cb)(void *arg, const struct store_event *e),
                     void *arg);

/*
 * Learned peaks (store-learn.c, docs/jobs.md "Learned peaks"): one row per
 * ended run of a job whose name was given. A uid keeps at most
 * STORE_LEARN_RUNS_MAX rows per name and STORE_LEARN_ROWS_PER_UID in all
 * (the oldest go first); retention prunes them with the ended jobs.
 */
#define STORE_LEARN_RUNS_MAX CONFIG_LEARN_RUNS_MAX
#define STORE_LEARN_ROWS_PER_UID 1000
struct store_learn_run {
	uid_t uid;
	const char *name;
	int64_t job_id;
	int64_t ended_ms;
	int killed; /* killed by the daemon: its peaks are lower bounds */
	uint64_t footprint_peak_bytes;
	uint64_t swap_growth_peak_bytes;
	const char *stages; /* JSON array of {name, footprint_peak_bytes,
	                       swap_growth_bytes}, or NULL */
};
int store_learn_add(struct store *s, const struct store_learn_run *run,
                    char *cause, size_t causelen);
/* What the last runs (at most n) of (uid, name) reached. */
struct store_learned {
	int runs;   /* rows read, 0 when the name never ran */
	int killed; /* of them, killed: their peaks are lower bounds */
	uint64_t footprint_peak_bytes;   /* the highest of them */
	uint64_t swap_growth_peak_bytes; /* the highest of them */
	/* Per stage, the highest of each over the runs that reported it: a
	 * JSON array as store_learn_run's (malloc'd), NULL when none. */
	char *stages;
};
int store_learn_get(struct store *s, uid_t uid, const char *name, int n,
                    struct store_learned *out);
void store_learned_clear(struct store_learned *l);

/* Size of the database file(s) in bytes, for info and benchmarks. */
int64_t store_size_bytes(struct store *s);

/* Storage health. The write functions record their own outcome:
 * store_flush and store_mark as SAMPLES, store_job_update as JOBS,
 * store_event_add as EVENTS, store_job_insert as SUBMIT. The store does
 * not log it; the caller logs the transitions. s may be NULL (no
 * database): healthy. */
/* What failed last, per kind of write; a kind's next successful write
 * clears it. A failed insert is told to its submitter and never retried,
 * so any later write that works clears SUBMIT: health follows the writes
 * instead of waiting for the next submit. */
enum store_area {
	STORE_AREA_SAMPLES,
	STORE_AREA_JOBS,
	STORE_AREA_EVENTS,
	STORE_AREA_SUBMIT,
	STORE_NAREAS
};
/* NULL while every kind of write works, else the cause of the failing one
 * (the oldest failure first), prefixed with what failed: "samples: ...",
 * "job insert: ...", "job update: ...", "event: ..." — the texts
 * info.storage_error shows today. */
const char *store_health(const struct store *s);
/* While an area fails, a write that would clear it may never come (a
 * transition that failed is undone, not retried): this writes each failing
 * area (jobs, events) once, changing no data, and notes the outcome as
 * that area's writes do. Returns how many areas still fail. The caller
 * paces it (every few seconds while unhealthy). */
int store_health_probe(struct store *s);
/* Non-zero while writes of that area fail. */
int store_area_failing(const struct store *s, enum store_area a);

#endif
