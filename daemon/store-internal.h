/*
 * Internal to the store (store.c, store-samples.c, store-jobs.c): the
 * struct behind struct store, the rollup tiers, the job columns and the
 * helpers the three files share. Not for other modules: they use store.h
 * only.
 */
#ifndef SL_STORE_INTERNAL_H
#define SL_STORE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "store.h"
#include "umap.h"

/* A write's cause before it is copied to the caller's buffer. */
#define STORE_CAUSE_MAX 512
/* store_health's text, cause included. */
#define STORE_HEALTH_LEN 256

/* The rollup tiers: store-read.h. */

/* The columns of a jobs row, each ", name" in bind order, and as many
 * ", ?": the rows of proto/job-fields.h with a column (store-jobs.c).
 * Skip the first two bytes for a list. argv and env live in job_args
 * (schema 5): most reads of a job need neither, and a row that held them
 * was read whole to reach the columns after them. */
extern const char store_job_columns[];
extern const char store_job_binds[];
/* A whole job: "SELECT id" store_job_columns ", " JOB_ARGS JOB_FROM;
 * lists read argv alone (for the command line): JOB_LIST_ARGS. */
#define JOB_ARGS "a.argv, a.env"
#define JOB_LIST_ARGS "a.argv, NULL"
/* An array's elements share their first element's row (schema 10). */
#define JOB_FROM                                                               \
	" FROM jobs LEFT JOIN job_args a ON a.job_id = CASE WHEN"              \
	" jobs.array_id > 0 THEN jobs.array_id ELSE jobs.id END"
#define JOB_ENDED_STATES "('exited','killed','failed','cancelled','lost')"

struct job_sample_rec {
	int64_t job_id;
	int64_t ts_ms;
	uint64_t footprint_bytes;
	uint64_t swap_bytes;
};

/* One area's health: since orders the failures (0 while its writes work),
 * msg is the last failure's text. */
struct store_area_health {
	uint64_t since;
	char msg[STORE_HEALTH_LEN];
};

struct store {
	sqlite3 *db;
	char *path;
	struct store_ckpt *ckpt; /* NULL: checkpoints on the loop */

	/* rings of samples not yet committed; oldest at head */
	struct sys_sample *sbuf;
	size_t shead, slen, scap;
	struct job_sample_rec *jbuf;
	size_t jhead, jlen, jcap;
	uint64_t dropped; /* samples lost because the ring was full */

	struct sys_sample last; /* latest sample seen, committed or not */
	int have_last;
	/* totals of the last row that carried them, and its time */
	int64_t written_total, written_swap_total, written_totals_ms;

	/* store_health: per kind of write, and the last since handed out */
	struct store_area_health health[STORE_NAREAS];
	uint64_t health_seq;

	sqlite3_stmt *begin, *commit, *rollback;
	sqlite3_stmt *ins_sample, *ins_job_sample;
	sqlite3_stmt *upsert[NTIERS];
	struct store_read *reader; /* history, read back (store-read.c) */
	sqlite3_stmt *ins_marker;
	sqlite3_stmt *latest, *latest_totals;
	sqlite3_stmt *job_ins, *args_ins, *job_seq, *job_array, *job_upd,
	    *job_get;
	sqlite3_stmt *array_elements, *job_get_lean;
	sqlite3_stmt *jobs_unended, *jobs_ended, *jobs_ended_uid;
	sqlite3_stmt *ev_ins, *ev_list, *ev_list_before;
	/* the same for one job: events_job is its index */
	sqlite3_stmt *ev_list_job, *ev_list_before_job;
	sqlite3_stmt *job_was_ended, *jobs_oldest_ended;
	sqlite3_stmt *del_job_samples, *del_job_events, *del_job, *del_job_args;
	/* store-days.c's */
	sqlite3_stmt *days_name, *days_row, *days_add;

	/* Per uid (key uid + 1) what its job rows hold (store_usage):
	 * bytes: a = all rows, b = ended rows; rows: a = all, b = ended. */
	struct umap usage_bytes, usage_rows;
	int usage_stale; /* an update was lost (out of memory): recount */
};

/* store.c: shared statement helpers. */

/* Map an sqlite result to a negative errno the caller can reason about. */
int store_errno(int rc);
/* Write "what: <sqlite's message>" to cause; returns store_errno(rc). */
int store_fail(struct store *s, int rc, const char *what, char *cause,
               size_t causelen);
void store_cause(char *cause, size_t causelen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Leave no transaction open after a failure, whatever failed. */
void store_abort(struct store *s);
/* Step and reset a prepared statement: SQLITE_OK or the failing result. */
int store_run(sqlite3_stmt *st);
/* Run a one-off statement with ?1 bound to cut: an sqlite result. */
int store_exec_cut(struct store *s, const char *sql, int64_t cut);

/* store-checkpoint.c: the thread that checkpoints the WAL, started once
 * the database is open and stopped (joined) before it is closed; without
 * it, checkpoints run on the caller's thread. */
void store_checkpointer_start(struct store *s);
void store_checkpointer_stop(struct store *s);

/* store-prune.c: recount store_usage from the rows (at open, and at a
 * prune after it could not be kept): one query. */
int store_usage_load(struct store *s);

/* store.c: record the outcome rc of a write of area a, whose cause is why.
 * Non-zero sets the area's text to "what: why" (cut to fit) and copies why
 * to cause; 0 clears the area. Returns rc. */
int store_health_note(struct store *s, enum store_area a, const char *what,
                      int rc, const char *why, char *cause, size_t causelen);

/* store-prune.c: store_prune's part for jobs, in its transaction. */
int store_prune_jobs(struct store *s, int64_t now_ms,
                     const struct store_retention *r);

/* store-prune.c: add to uid's counts of stored bytes and jobs (all and
 * ended), as a row is inserted, ends or is pruned. */
void store_usage_add(struct store *s, uid_t uid, int64_t bytes,
                     int64_t ended_bytes, int64_t jobs, int64_t ended);

/* store-jobs.c: bind text, or NULL for a NULL pointer (a copy). */
void store_bind_text_or_null(sqlite3_stmt *st, int i, const char *text);

/* store.c: prepare sql once, for the store's life (finalized at close). */
int store_prepare(struct store *s, sqlite3_stmt **st, const char *sql,
                  char *cause, size_t causelen);

/* store-days.c: count the ended job j in its day's job_days row, inside
 * the caller's transaction. An sqlite result. Its statements are
 * prepared with the others, by store_days_prepare. */
int store_days_add(struct store *s, const struct job *j);
int store_days_prepare(struct store *s, char *cause, size_t causelen);

#endif
