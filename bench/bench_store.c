/*
 * Storage benchmark: CPU per sample, database bytes per day at 0.5 s, and
 * the 24 h / 1 min history query over 30 days of data.
 *
 * Every sample goes through the real store API (store_add_sample, then
 * store_flush every --flush-every samples, default 4 = every 2 s as the
 * sampler does, store_prune and store_checkpoint every simulated hour with
 * the default retention), as the daemon drives it; no bulk insert
 * shortcut. The samples are synthetic but vary like real ones
 * (free % and available drift, swap steps, pressure changes).
 *
 * usage: bench_store [--days N] [--flush-every N] [--dir DIR] [--runs N]
 *                    [--queries-only]
 *
 * --dir keeps the database; --queries-only then times the queries again
 * on it without generating (same --days).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "benchclock.h"
#include "store.h"

#define INTERVAL_MS 500
#define DAY_MS (86400LL * 1000)
#define HOUR_MS (3600LL * 1000)

static double
wall_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A cheap deterministic generator so runs are comparable. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t
rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

struct synth {
	double free_pct;
	uint64_t swap_used;
};

static void
synth_next(struct synth *m, int64_t ts_ms, struct sys_sample *ss)
{
	const uint64_t total = 48ULL << 30;

	m->free_pct += ((double)(rng() % 2001) - 1000) / 2000.0;
	if (m->free_pct < 3)
		m->free_pct = 3;
	if (m->free_pct > 95)
		m->free_pct = 95;
	if (rng() % 400 == 0)
		m->swap_used = (rng() % 64) * (64ULL << 20);
	memset(ss, 0, sizeof *ss);
	ss->ts_ms = ts_ms;
	ss->total_bytes = total;
	ss->free_pct = m->free_pct;
	ss->available_bytes = (uint64_t)(total * (m->free_pct / 100.0));
	ss->swap_total_bytes = 8ULL << 30;
	ss->swap_used_bytes = m->swap_used;
	ss->pressure = m->free_pct < 10   ? PRESSURE_CRITICAL
	               : m->free_pct < 20 ? PRESSURE_WARN
	                                  : PRESSURE_NORMAL;
	ss->psi_some_avg10 = m->free_pct < 20 ? (20 - m->free_pct) * 2 : 0;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Bytes per table from sqlite's dbstat, when the library has it. */
static void
print_table_sizes(const char *path)
{
	sqlite3 *db;
	sqlite3_stmt *st;

	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
		return;
	if (sqlite3_prepare_v2(
	        db,
	        "SELECT name, sum(pgsize) FROM dbstat GROUP BY name "
	        "HAVING sum(pgsize) > 65536 ORDER BY 2 DESC",
	        -1, &st, NULL) != SQLITE_OK) {
		printf("  (dbstat not available: no per-table sizes)\n");
		sqlite3_close(db);
		return;
	}
	while (sqlite3_step(st) == SQLITE_ROW)
		printf("  %-24s %10.2f MiB\n",
		       (const char *)sqlite3_column_text(st, 0),
		       sqlite3_column_int64(st, 1) / 1048576.0);
	sqlite3_finalize(st);
	sqlite3_close(db);
}

static int64_t
count_rows(const char *path, const char *table)
{
	char sql[128];
	sqlite3 *db;
	sqlite3_stmt *st;
	int64_t n = -1;

	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
		return -1;
	snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", table);
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW)
			n = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
	return n;
}

/* Bytes of pages in use in the main file (after a checkpoint), and the
 * size of the WAL file beside it. */
static void
db_bytes(const char *path, int64_t *used, int64_t *wal)
{
	char p[600];
	sqlite3 *db;
	sqlite3_stmt *st;
	FILE *fp;

	*used = *wal = -1;
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) ==
	    SQLITE_OK) {
		if (sqlite3_prepare_v2(
		        db,
		        "SELECT (page_count - freelist_count) * "
		        "page_size FROM pragma_page_count, "
		        "pragma_freelist_count, pragma_page_size",
		        -1, &st, NULL) == SQLITE_OK) {
			if (sqlite3_step(st) == SQLITE_ROW)
				*used = sqlite3_column_int64(st, 0);
			sqlite3_finalize(st);
		}
		sqlite3_close(db);
	}
	snprintf(p, sizeof p, "%s-wal", path);
	if ((fp = fopen(p, "r")) != NULL) {
		if (fseek(fp, 0, SEEK_END) == 0)
			*wal = ftell(fp);
		fclose(fp);
	}
}

/* Time one history query shape, runs times: wall and process CPU. */
static int
time_query(struct store *s, int64_t until, int64_t span_ms, int64_t step_ms,
           int runs, const char *label)
{
	struct history_bucket *b;
	char cause[256];
	const char *tier = "?";
	double *t, *cpu, t0, c0;
	size_t n = 0;
	int i;

	if ((t = calloc((size_t)runs, sizeof *t)) == NULL ||
	    (cpu = calloc((size_t)runs, sizeof *cpu)) == NULL) {
		free(t);
		return -ENOMEM;
	}
	for (i = 0; i < runs; i++) {
		t0 = wall_seconds();
		c0 = cpu_us() / 1e6;
		if (store_history(s, until - span_ms, until, step_ms, &tier, &b,
		                  &n, cause, sizeof cause) != 0) {
			fprintf(stderr, "history: %s\n", cause);
			free(t);
			free(cpu);
			return -1;
		}
		cpu[i] = (cpu_us() / 1e6 - c0) * 1000;
		t[i] = (wall_seconds() - t0) * 1000;
		free(b);
	}
	qsort(t, (size_t)runs, sizeof *t, cmp_double);
	qsort(cpu, (size_t)runs, sizeof *cpu, cmp_double);
	/* p99 of 100 runs is the 99th value (index 98). */
	printf("| %-16s | %-3s | %6zu | %7.3f | %7.3f | %7.3f | %7.3f |\n",
	       label, tier, n, t[runs / 2], t[(runs * 99 + 99) / 100 - 1],
	       cpu[runs / 2], cpu[(runs * 99 + 99) / 100 - 1]);
	free(t);
	free(cpu);
	return 0;
}

/* Feed days of samples through the store as the daemon would, and report
 * CPU per sample, bytes per day and the size under the default
 * retention. */
static int
generate(struct store *s, const char *path, int days, int flush_every,
         int64_t start)
{
	struct store_retention ret;
	struct sys_sample ss;
	struct synth m = {50, 0};
	char cause[256];
	int64_t ts, end = start + days * DAY_MS, nsamples, day1_bytes = 0;
	double cpu0, cpu_add, cpu_prune = 0, cpu_other = 0, wall0, c;
	int64_t prune_runs = 0;

	store_retention_defaults(&ret);
	nsamples = 0;
	printf("generating %d days at %d ms through store_add_sample, "
	       "store_flush every %d samples, store_prune hourly\n",
	       days, INTERVAL_MS, flush_every);
	fflush(stdout);
	wall0 = wall_seconds();
	if (store_mark(s, start, "start", cause, sizeof cause) != 0) {
		fprintf(stderr, "store_mark: %s\n", cause);
		return 1;
	}
	/* The process CPU clock is read only around the rare work, so the
	 * clock itself does not weigh on the per-sample figure. */
	cpu0 = cpu_us() / 1e6;
	for (ts = start; ts < end; ts += INTERVAL_MS) {
		synth_next(&m, ts, &ss);
		store_add_sample(s, &ss);
		if (++nsamples % flush_every == 0 &&
		    store_flush(s, cause, sizeof cause) != 0) {
			fprintf(stderr, "store_flush: %s\n", cause);
			return 1;
		}
		if ((ts - start) % HOUR_MS == HOUR_MS - INTERVAL_MS) {
			c = cpu_us() / 1e6;
			if (store_prune(s, ts, &ret, cause, sizeof cause) !=
			    0) {
				fprintf(stderr, "store_prune: %s\n", cause);
				return 1;
			}
			store_checkpoint(s);
			cpu_prune += cpu_us() / 1e6 - c;
			prune_runs++;
		}
		/* Day one, before any retention applies: bytes per day. */
		if (ts == start + DAY_MS - INTERVAL_MS) {
			c = cpu_us() / 1e6;
			int64_t wal;

			store_flush(s, cause, sizeof cause);
			store_checkpoint(s);
			db_bytes(path, &day1_bytes, &wal);
			printf("\nafter day 1 (%lld samples, nothing pruned "
			       "yet):\n",
			       (long long)nsamples);
			printf("database bytes per day at 0.5 s (raw + 3 "
			       "rollups, pages in use): %.2f MB (%.2f MiB)\n",
			       day1_bytes / 1e6, day1_bytes / 1048576.0);
			printf("WAL file beside it (bounded, not per day): "
			       "%.2f MB\n",
			       wal / 1e6);
			print_table_sizes(path);
			fflush(stdout);
			cpu_other += cpu_us() / 1e6 - c;
		}
	}
	cpu_add = cpu_us() / 1e6 - cpu0 - cpu_prune - cpu_other;
	if (store_flush(s, cause, sizeof cause) != 0) {
		fprintf(stderr, "store_flush: %s\n", cause);
		return 1;
	}
	store_checkpoint(s);
	printf("\ngenerated %lld samples in %.1f s wall\n", (long long)nsamples,
	       wall_seconds() - wall0);
	printf("CPU per store_add_sample + amortised store_flush (every %d, "
	       "sample synthesis included): %.2f us\n",
	       flush_every, cpu_add / nsamples * 1e6);
	printf("CPU per hourly store_prune + checkpoint: %.2f ms (%lld runs)\n",
	       cpu_prune / prune_runs * 1e3, (long long)prune_runs);
	printf("\nafter %d days with the default retention (raw 2 d, 10 s 14 "
	       "d, 1 min 90 d, 10 min 2 y):\n",
	       days);
	printf("database size: %.2f MB\n", store_size_bytes(s) / 1e6);
	printf("rows: samples %lld, rollup_10s %lld, rollup_1m %lld, "
	       "rollup_10m %lld\n",
	       (long long)count_rows(path, "samples"),
	       (long long)count_rows(path, "rollup_10s"),
	       (long long)count_rows(path, "rollup_1m"),
	       (long long)count_rows(path, "rollup_10m"));
	print_table_sizes(path);
	return 0;
}

int
main(int argc, char **argv)
{
	int days = 30, flush_every = 4, runs = 100, queries_only = 0, i;
	const char *dir = NULL;
	char tmpl[] = "/tmp/sl-bench-store-XXXXXX", path[512], cause[256];
	struct store *s;
	int64_t start, end;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--days") == 0 && i + 1 < argc)
			days = atoi(argv[++i]);
		else if (strcmp(argv[i], "--flush-every") == 0 && i + 1 < argc)
			flush_every = atoi(argv[++i]);
		else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
			runs = atoi(argv[++i]);
		else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
			dir = argv[++i];
		else if (strcmp(argv[i], "--queries-only") == 0)
			queries_only = 1;
		else {
			fprintf(
			    stderr,
			    "usage: bench_store [--days N] [--flush-every N] "
			    "[--dir DIR] [--runs N] [--queries-only]\n");
			return 2;
		}
	}
	if (days < 2 || flush_every < 1 || runs < 1) {
		fprintf(stderr, "bench_store: need --days >= 2, --flush-every "
		                ">= 1, --runs >= 1\n");
		return 2;
	}
	if (queries_only && dir == NULL) {
		fprintf(stderr, "bench_store: --queries-only needs --dir\n");
		return 2;
	}
	if (dir == NULL && (dir = mkdtemp(tmpl)) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(path, sizeof path, "%s/bench.db", dir);
	if (store_open(&s, path, cause, sizeof cause) != 0) {
		fprintf(stderr, "store_open: %s\n", cause);
		return 1;
	}

	/* Midnight UTC some day, so days line up with tiers. */
	start = (1764480000000LL / DAY_MS) * DAY_MS;
	end = start + days * DAY_MS;
	if (!queries_only && generate(s, path, days, flush_every, start) != 0)
		return 1;
	printf("\nhistory queries, %d runs each, ending at the last sample "
	       "(ms):\n\n",
	       runs);
	printf("| query            | tier | buckets | wall median | wall p99 "
	       "| CPU median | CPU p99 |\n");
	printf("|---|---|---:|---:|---:|---:|---:|\n");
	if (time_query(s, end, DAY_MS, 60000, runs, "24h / 1min") != 0 ||
	    time_query(s, end, DAY_MS, 10000, runs, "24h / 10s") != 0 ||
	    time_query(s, end, HOUR_MS, 1000, runs, "1h / 1s (raw)") != 0 ||
	    time_query(s, end, 7 * DAY_MS, 600000, runs, "7d / 10min") != 0 ||
	    time_query(s, end, (int64_t)days * DAY_MS, HOUR_MS, runs,
	               "all / 1h") != 0 ||
	    time_query(s, end - 10 * DAY_MS, DAY_MS, 60000, runs,
	               "24h / 1min old") != 0)
		return 1;
	store_close(s);
	if (dir == tmpl) {
		char p[600];

		unlink(path);
		snprintf(p, sizeof p, "%s-wal", path);
		unlink(p);
		snprintf(p, sizeof p, "%s-shm", path);
		unlink(p);
		rmdir(dir);
	}
	return 0;
}
