/*
 * Reading the store's history back: the rollup tiers, system history in
 * buckets (whole, or a part at a time), a job's samples in buckets and its
 * stages from its events. One implementation for the daemon (store.c opens
 * it on its own connection) and for stageloadctl's history with the daemon
 * stopped (client/cli-offline.c opens it on a read-only connection), so the
 * two answer alike (docs/storage.md). It only reads; errors come back as
 * negative errno values with a readable cause, and the caller reports them
 * its way.
 */
#ifndef SL_STORE_READ_H
#define SL_STORE_READ_H

#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

/* The rollup tiers, finest first. Resolution is also the bucket width. */
enum { TIER_10S, TIER_1M, TIER_10M, NTIERS };
struct store_tier {
	const char *name;
	const char *table;
	int64_t res_ms;
};
extern const struct store_tier store_tiers[NTIERS];

/* The most buckets one history answer holds. */
#define STORE_HISTORY_MAX 100000

struct history_bucket {
	int64_t ts_ms; /* bucket start */
	int64_t n;     /* samples in the bucket */
	double free_pct_min, free_pct_avg, free_pct_max;
	double swap_used_min, swap_used_avg, swap_used_max; /* bytes */
	double available_min, available_avg, available_max; /* bytes */
	int pressure_max;
	int gap_before; /* a start marker falls in or just before this bucket */
};

/* A history read in parts, for an answer written a slice at a time:
 * begin checks the range and picks the tier once (-EINVAL, -E2BIG); each
 * next gives the buckets of up to max_buckets steps (<= 0: the rest) from
 * where the last part ended, until c->done. A part may hold no bucket
 * (nothing sampled then); gap_before is set as for the whole. */
struct store_history_cursor {
	const char *tier; /* its name: "raw", "10s", "1m", "10m" */
	int t;            /* its index, -1 for raw */
	int64_t next_ms, until_ms, step_ms;
	int gap_pending; /* a start marker after the last bucket so far */
	int done;
};

struct job_bucket {
	int64_t ts_ms;
	double footprint_min, footprint_avg, footprint_max;
	double swap_min, swap_avg, swap_max;
	int64_t n; /* samples in the bucket */
};

/* A stage of a job: from its stage_end event, or the one still open. */
struct store_stage {
	char *name;
	int64_t started_ms, ended_ms; /* ended 0: still open */
	uint64_t footprint_peak_bytes, swap_growth_bytes;
};

struct store_read;

/* daemon/store.c's PRAGMA application_id of a stageload database. */
#define STORE_READ_APP_ID 0x53544c44

/* Open the database at path read-only from another program (stageloadctl
 * with the daemon down, stageload-web --db), creating nothing beside it:
 * with no -wal and -shm beside it, immutable (no locks); otherwise
 * mode=ro. Refuses what is not a stageload database; the cause says why
 * (a missing file, no permission). Closed with sqlite3_close. */
int store_read_open_file(const char *path, sqlite3 **dbp, char *cause,
                         size_t causelen);

int store_read_open(struct store_read **rp, sqlite3 *db, char *cause,
                    size_t causelen);
void store_read_close(struct store_read *r);
/* The connection it reads through (store-report.c prepares its own). */
sqlite3 *store_read_db(struct store_read *r);

/* The tier for step_ms and its resolution (0 for raw). */
const char *store_tier_for_step(int64_t step_ms, int64_t *res_ms);

int store_read_history_begin(struct store_read *r, int64_t since_ms,
                             int64_t until_ms, int64_t step_ms,
                             struct store_history_cursor *c, char *cause,
                             size_t causelen);
int store_read_history_next(struct store_read *r,
                            struct store_history_cursor *c, int64_t max_buckets,
                            struct history_bucket **out, size_t *n, char *cause,
                            size_t causelen);

/* A job's samples in buckets of step_ms (0: every sample), the buckets
 * that start within [since_ms, until_ms]; -E2BIG beyond
 * STORE_HISTORY_MAX. *out is malloc'd. */
int store_read_job_history(struct store_read *r, int64_t job_id,
                           int64_t since_ms, int64_t until_ms, int64_t step_ms,
                           struct job_bucket **out, size_t *n, char *cause,
                           size_t causelen);

/* A job's ended stages from its stage_end events (the first max of them),
 * oldest first, and with open, the stage its last stage event opened when
 * no stage_end came after it (what a daemon that stopped left open).
 * Freed with store_stages_free. */
int store_read_job_stages(struct store_read *r, int64_t job_id, size_t max,
                          int open, struct store_stage **out, size_t *n,
                          char *cause, size_t causelen);
void store_stages_free(struct store_stage *st, size_t n);
/* Append a stage (name copied); -ENOMEM. */
int store_stage_push(struct store_stage **st, size_t *n, const char *name,
                     int64_t started_ms, int64_t ended_ms,
                     uint64_t footprint_peak_bytes, uint64_t swap_growth_bytes);
/* The stage of a bucket [t0, t1): the last one that began before its end
 * and had not ended before its start (PROTOCOL.md, history). */
const char *store_stage_at(const struct store_stage *st, size_t n, int64_t t0,
                           int64_t t1);

/* A bucket as history's answer has it (PROTOCOL.md, history): the
 * daemon's answers and stageload-web's --db pages write them alike.
 * NULL when out of memory. A job's has no stage: the caller adds it. */
struct cJSON *store_read_bucket_json(const struct history_bucket *b);
struct cJSON *store_read_job_bucket_json(const struct job_bucket *b);

#endif
