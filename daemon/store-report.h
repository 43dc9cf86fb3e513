/*
 * Accounting (stageloadctl report, PROTOCOL.md "report"): the per-day
 * rollup of ended jobs, the store's table job_days (docs/storage.md), read
 * back and summed into rows per user, per name or per both. One
 * implementation for the daemon (a slice of rows at a time, answers.c) and
 * for stageloadctl's report with the daemon stopped (client/cli-offline.c),
 * so the two answer alike. The writing is the store's (store-jobs.c), in
 * the transaction that ends the job; the run time histogram is defined
 * here for both.
 */
#ifndef SL_STORE_REPORT_H
#define SL_STORE_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "store-filter.h"
#include "store-read.h"

#define STORE_REPORT_DAY_MS (24LL * 3600 * 1000)
/* At most this many names a day per uid; the rest are summed in one row
 * of name STORE_REPORT_OTHER (docs/security.md). */
#define STORE_REPORT_NAMES_PER_DAY 100
#define STORE_REPORT_OTHER "(other)"

/*
 * Run times are kept as a histogram, so that a median over any span of
 * days is one sum away: bucket 0 holds runs under 1 s, bucket k >= 1 runs
 * from 2^((k-1)/8) s to 2^(k/8) s (each 9 % wide), the last one everything
 * longer (over 300 days). The median is the geometric middle of the bucket
 * holding it: within 4.5 % of the exact one (0.5 s under 1 s).
 */
#define STORE_REPORT_HIST 200
int store_report_hist_bucket(int64_t run_ms);
/* The median of n runs in hist (the lower one for an even n): -1 when
 * n is 0. */
int64_t store_report_hist_median(const uint32_t *hist, int64_t n);
/* The histogram's text as job_days.run_hist keeps it: "k:count" pairs,
 * comma-separated, of the buckets that are not 0. Parse adds to hist. */
int store_report_hist_parse(const char *text, uint32_t *hist);
char *store_report_hist_text(const uint32_t *hist);

/* How rows are summed, and which days and rows count. */
enum store_report_by {
	STORE_REPORT_BY_USER = 1,
	STORE_REPORT_BY_NAME = 2,
	STORE_REPORT_BY_BOTH = 3,
};
struct store_report_query {
	int64_t since_ms, until_ms; /* the days that hold them, both in */
	enum store_report_by by;
	/* the rows whose uid and name pass (store-filter.h; its states
	 * are not compared: a row counts ended jobs of every end) */
	struct job_filter filter;
};

/* 1 when the glob pat (*, ?, [a-z], [!a-z], \\ to quote) matches all of
 * s, as fnmatch(3) with no flags, in at most strlen(pat) x strlen(s)
 * steps whatever the pattern. */
int store_report_glob(const char *pat, const char *s);

/* One row of the answer: a sum of job_days rows. */
/* A report sums rows by key; at most this many keys (each about 1 KiB,
 * its histogram most of it), so that one request's memory is bounded
 * (docs/security.md): past it the report is -E2BIG, saying how to narrow
 * it. */
#define STORE_REPORT_MAX_ROWS 20000

struct store_report_row {
	int64_t uid;  /* -1 when summed over users */
	char *user;   /* NULL when summed over users */
	char *name;   /* NULL when summed over names */
	int64_t runs; /* jobs that ended: the next seven add up to it */
	int64_t exited_0, exited_nonzero, failed, killed, cancelled, lost;
	cJSON *killed_by; /* an object: end reason -> jobs killed so */
	int64_t ran;      /* jobs that started, whose run times count */
	int64_t run_time_ms, time_waited_ms;
	int64_t footprint_peak_bytes, swap_growth_peak_bytes;
	uint32_t hist[STORE_REPORT_HIST];
};

struct store_report;

/* Begin a report (its statement is prepared here, so that a database
 * from before job_days is told of by this call: -ENOENT). next reads up
 * to max_rows job_days rows (<= 0: all) from where the last call ended:
 * 1 while more follow, 0 once all are in, or a negative errno with cause.
 * No read transaction is held between calls. */
int store_report_begin(struct store_read *r, const struct store_report_query *q,
                       struct store_report **out, char *cause, size_t causelen);
int store_report_next(struct store_report *rep, int64_t max_rows, char *cause,
                      size_t causelen);
/* The rows once all are in, ordered by user, then name. */
size_t store_report_rows(struct store_report *rep,
                         const struct store_report_row **rows);
/* The earliest day the table holds, as ms since the epoch; -1: none. */
int64_t store_report_oldest_ms(const struct store_report *rep);
/* The result as PROTOCOL.md's report gives it (without rows: its rows
 * member empty); NULL out of memory. */
cJSON *store_report_json(const struct store_report *rep, int rows);
cJSON *store_report_row_json(const struct store_report_row *row);
void store_report_free(struct store_report *rep);

/* by's word and back: "user", "name", "user,name"; -1 for none. */
const char *store_report_by_name(enum store_report_by by);
int store_report_by_parse(const char *text);

#endif
