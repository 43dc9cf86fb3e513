/*
 * stageloadctl history without the daemon: the database read directly,
 * read-only, with the user's own rights (never more: a system daemon's
 * database is root's, mode 0600, so that is `sudo stageloadctl history`).
 * The buckets are made as the daemon makes them (daemon/store-samples.c,
 * store_history_begin and store_history_next; PROTOCOL.md, history): the
 * same tier, the same sums and averages, the same gap marks, so a range
 * prints the same before and after the daemon stops. docs/cli.md,
 * "history".
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "cli.h"
#include "doctor.h"

/* daemon/store.c: the application_id of a stageload database, and the
 * rollup tiers, finest first. */
#define OFFLINE_APP_ID 0x53544c44
static const struct {
	const char *name, *table;
	int64_t res_ms;
} tiers[] = {
    {"10s", "rollup_10s", 10 * 1000},
    {"1m", "rollup_1m", 60 * 1000},
    {"10m", "rollup_10m", 600 * 1000},
};
#define NTIERS ((int)(sizeof tiers / sizeof tiers[0]))

static int64_t
floor_to(int64_t v, int64_t step)
{
	int64_t r = v % step;

	return r < 0 ? v - r - step : v - r;
}

static const char *
pressure_word(int p)
{
	switch (p) {
	case 1:
		return "normal";
	case 2:
		return "warn";
	case 4:
		return "critical";
	default:
		return "unknown";
	}
}

static int fail(char *cause, size_t causelen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int
fail(char *cause, size_t causelen, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cause, causelen, fmt, ap);
	va_end(ap);
	return rc;
}

/* The earliest row of tier t (-1: the raw samples); INT64_MAX when none. */
static int64_t
first_ts(sqlite3 *db, int t)
{
	char sql[128];
	sqlite3_stmt *st;
	int64_t v = INT64_MAX;

	snprintf(sql, sizeof sql, "SELECT min(ts_ms) FROM %s",
	         t < 0 ? "samples" : tiers[t].table);
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return v;
	if (sqlite3_step(st) == SQLITE_ROW &&
	    sqlite3_column_type(st, 0) != SQLITE_NULL)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

static int
history_rows(sqlite3 *db, int t, int64_t lower, int64_t upper, int64_t step,
             struct sl_history *h, char *cause, size_t causelen)
{
	struct sl_bucket *b = NULL, *nb;
	double *sums = NULL, *ns; /* free, swap, available sums per bucket */
	size_t cap = 0, i;
	char sql[512];
	sqlite3_stmt *st;
	int rc;

	if (t < 0)
		snprintf(sql, sizeof sql,
		         "SELECT ts_ms, 1, free_bp, free_bp, free_bp,"
		         " swap_used_bytes, swap_used_bytes, swap_used_bytes,"
		         " available_bytes, available_bytes, available_bytes,"
		         " pressure FROM samples"
		         " WHERE ts_ms >= ?1 AND ts_ms < ?2 ORDER BY ts_ms");
	else
		snprintf(sql, sizeof sql,
		         "SELECT ts_ms, n, free_bp_min, free_bp_max,"
		         " free_bp_sum, swap_used_min, swap_used_max,"
		         " swap_used_sum, available_min, available_max,"
		         " available_sum, pressure_max"
		         " FROM %s WHERE ts_ms >= ?1 AND ts_ms < ?2"
		         " ORDER BY ts_ms",
		         tiers[t].table);
	if ((rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL)) != SQLITE_OK)
		return fail(cause, causelen, -EIO, "reading history: %s",
		            sqlite3_errmsg(db));
	sqlite3_bind_int64(st, 1, lower);
	sqlite3_bind_int64(st, 2, upper);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t ts = floor_to(sqlite3_column_int64(st, 0), step);
		double fmin = sqlite3_column_int64(st, 2) / 100.0;
		double fmax = sqlite3_column_int64(st, 3) / 100.0;
		double smin = (double)sqlite3_column_int64(st, 5);
		double smax = (double)sqlite3_column_int64(st, 6);
		double amin = (double)sqlite3_column_int64(st, 8);
		double amax = (double)sqlite3_column_int64(st, 9);
		int pmax = sqlite3_column_int(st, 11);
		struct sl_bucket *c;
		double *sum;

		if (h->nbuckets == 0 || b[h->nbuckets - 1].ts_ms != ts) {
			if (h->nbuckets == cap) {
				cap = cap > 0 ? 2 * cap : 256;
				nb = realloc(b, cap * sizeof *b);
				ns = nb != NULL
				         ? realloc(sums, cap * 3 * sizeof *sums)
				         : NULL;
				if (nb != NULL)
					b = nb;
				if (ns == NULL) {
					sqlite3_finalize(st);
					free(b);
					free(sums);
					return fail(cause, causelen, -ENOMEM,
					            "out of memory");
				}
				sums = ns;
			}
			c = &b[h->nbuckets];
			memset(c, 0, sizeof *c);
			sum = &sums[3 * h->nbuckets++];
			sum[0] = sum[1] = sum[2] = 0;
			c->ts_ms = ts;
			c->free_pct.min = fmin;
			c->free_pct.max = fmax;
			c->swap_used_bytes.min = smin;
			c->swap_used_bytes.max = smax;
			c->available_bytes.min = amin;
			c->available_bytes.max = amax;
			c->gap = pmax; /* the pressure level, until the end */
		}
		c = &b[h->nbuckets - 1];
		sum = &sums[3 * (h->nbuckets - 1)];
		c->n += sqlite3_column_int64(st, 1);
		sum[0] += (double)sqlite3_column_int64(st, 4);
		sum[1] += (double)sqlite3_column_int64(st, 7);
		sum[2] += (double)sqlite3_column_int64(st, 10);
		if (fmin < c->free_pct.min)
			c->free_pct.min = fmin;
		if (fmax > c->free_pct.max)
			c->free_pct.max = fmax;
		if (smin < c->swap_used_bytes.min)
			c->swap_used_bytes.min = smin;
		if (smax > c->swap_used_bytes.max)
			c->swap_used_bytes.max = smax;
		if (amin < c->available_bytes.min)
			c->available_bytes.min = amin;
		if (amax > c->available_bytes.max)
			c->available_bytes.max = amax;
		if (pmax > c->gap)
			c->gap = pmax;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		free(b);
		free(sums);
		return fail(cause, causelen, -EIO, "reading history: %s",
		            sqlite3_errstr(rc));
	}
	/* As the daemon's answer carries them: sizes in whole bytes. */
	for (i = 0; i < h->nbuckets; i++) {
		struct sl_bucket *c = &b[i];
		double n = (double)c->n;
		c->free_pct.avg = sums[3 * i] / (100.0 * n);
		c->swap_used_bytes.avg =
		    (double)(int64_t)(sums[3 * i + 1] / n + 0.5);
		c->available_bytes.avg =
		    (double)(int64_t)(sums[3 * i + 2] / n + 0.5);
		c->swap_used_bytes.min =
		    (double)(int64_t)(c->swap_used_bytes.min + 0.5);
		c->swap_used_bytes.max =
		    (double)(int64_t)(c->swap_used_bytes.max + 0.5);
		c->available_bytes.min =
		    (double)(int64_t)(c->available_bytes.min + 0.5);
		c->available_bytes.max =
		    (double)(int64_t)(c->available_bytes.max + 0.5);
		snprintf(c->pressure_max, sizeof c->pressure_max, "%s",
		         pressure_word(c->gap));
		c->gap = 0;
	}
	free(sums);
	h->buckets = b;
	return 0;
}

/* A start marker means nothing was sampled between it and the stop
 * before: the first bucket that ends after it is marked. */
static int
history_gaps(sqlite3 *db, int64_t lower, int64_t upper, struct sl_history *h,
             char *cause, size_t causelen)
{
	sqlite3_stmt *st;
	size_t i = 0;
	int rc;

	if (sqlite3_prepare_v2(db,
	                       "SELECT ts_ms FROM markers WHERE kind = 'start'"
	                       " AND ts_ms >= ?1 AND ts_ms < ?2 ORDER BY ts_ms",
	                       -1, &st, NULL) != SQLITE_OK)
		return fail(cause, causelen, -EIO, "reading markers: %s",
		            sqlite3_errmsg(db));
	sqlite3_bind_int64(st, 1, lower);
	sqlite3_bind_int64(st, 2, upper);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t m = sqlite3_column_int64(st, 0);
		while (i < h->nbuckets && h->buckets[i].ts_ms + h->step_ms <= m)
			i++;
		if (i < h->nbuckets)
			h->buckets[i].gap = 1;
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE
	           ? 0
	           : fail(cause, causelen, -EIO, "reading markers: %s",
	                  sqlite3_errstr(rc));
}

/* file: URI of path, percent-encoded (sqlite's URI filenames). */
static int
offline_uri(const char *path, const char *query, char *buf, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;
	const unsigned char *p;
	int n;

	n = snprintf(buf, len, "file:");
	o = (size_t)n;
	for (p = (const unsigned char *)path; *p != '\0'; p++) {
		if (o + 4 >= len)
			return -ENAMETOOLONG;
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || strchr("/-._~", *p) != NULL) {
			buf[o++] = (char)*p;
		} else {
			buf[o++] = '%';
			buf[o++] = hex[*p >> 4];
			buf[o++] = hex[*p & 15];
		}
	}
	n = snprintf(buf + o, len - o, "?%s", query);
	return n < 0 || (size_t)n >= len - o ? -ENAMETOOLONG : 0;
}

static int
file_exists(const char *path, const char *suffix)
{
	char p[1100];
	FILE *f;

	snprintf(p, sizeof p, "%s%s", path, suffix);
	if ((f = fopen(p, "rb")) == NULL)
		return errno != ENOENT;
	fclose(f);
	return 1;
}

/*
 * Open read-only, creating nothing: sqlite would create the -shm (and
 * -wal) files of a WAL database a reader opens without them, and files of
 * root's left beside a user's database would stop that user's daemon
 * (it trusts only its own). Without a -wal the file is all there is
 * (immutable: no locks, no -shm); with both, they are read as they are.
 */
static int
offline_open(const char *path, sqlite3 **dbp, char *cause, size_t causelen)
{
	char uri[4200];
	sqlite3 *db = NULL;
	sqlite3_stmt *st;
	int64_t app = 0;
	FILE *f;
	int rc;

	*dbp = NULL;
	/* Whether this user may read it, told apart from a missing file,
	 * before sqlite says only "unable to open". */
	if ((f = fopen(path, "rb")) == NULL)
		return fail(cause, causelen, -errno, "%s: %s", path,
		            strerror(errno));
	fclose(f);
	if (offline_uri(path,
	                file_exists(path, "-wal") && file_exists(path, "-shm")
	                    ? "mode=ro"
	                    : "immutable=1",
	                uri, sizeof uri) != 0)
		return fail(cause, causelen, -ENAMETOOLONG, "%s: path too long",
		            path);
	rc = sqlite3_open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI,
	                     NULL);
	if (rc != SQLITE_OK) {
		fail(cause, causelen, -EIO, "%s: %s", path,
		     db != NULL ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
		sqlite3_close(db);
		return -EIO;
	}
	sqlite3_busy_timeout(db, 2000);
	if (sqlite3_prepare_v2(db, "PRAGMA application_id", -1, &st, NULL) ==
	    SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW)
			app = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
	}
	if (app != OFFLINE_APP_ID) {
		fail(cause, causelen, -EINVAL,
		     "%s: not a stageload database (or not readable: %s)", path,
		     sqlite3_errmsg(db));
		sqlite3_close(db);
		return -EINVAL;
	}
	*dbp = db;
	return 0;
}

int
cli_offline_history(const char *path, int64_t since_ms, int64_t until_ms,
                    int64_t step_ms, struct sl_history **out, char *cause,
                    size_t causelen)
{
	struct sl_history *h;
	int64_t first, f, lower;
	sqlite3 *db;
	int t, u, rc;

	*out = NULL;
	if ((rc = offline_open(path, &db, cause, causelen)) != 0)
		return rc;
	if ((h = calloc(1, sizeof *h)) == NULL) {
		sqlite3_close(db);
		return fail(cause, causelen, -ENOMEM, "out of memory");
	}
	/* The daemon's defaults: until the millisecond after now; a step
	 * of the span / 60, at least the default interval (the daemon's
	 * own is not known here). */
	if (until_ms <= 0)
		until_ms = cli_now_ms() + 1;
	if (step_ms <= 0) {
		step_ms = (until_ms - since_ms) / 60;
		if (step_ms < 500)
			step_ms = 500;
	}
	h->step_ms = step_ms;
	h->since_ms = since_ms;
	h->until_ms = until_ms;
	if (until_ms / step_ms - since_ms / step_ms + 1 > 100000) {
		free(h);
		sqlite3_close(db);
		return fail(cause, causelen, -E2BIG,
		            "more than 100000 buckets in the range; use a "
		            "larger --step");
	}
	/* The tier: the coarsest whose resolution fits the step, or a
	 * coarser one that reaches back to since when it does not. */
	for (t = NTIERS - 1; t >= 0 && tiers[t].res_ms > step_ms; t--)
		;
	snprintf(h->tier, sizeof h->tier, "%s", t < 0 ? "raw" : tiers[t].name);
	first = first_ts(db, t);
	for (u = t + 1; u < NTIERS && since_ms < first; u++) {
		f = first_ts(db, u);
		if (f <= first - tiers[u].res_ms) {
			t = u;
			first = f;
			snprintf(h->tier, sizeof h->tier, "%s", tiers[t].name);
		}
	}
	lower = floor_to(since_ms, step_ms);
	rc = lower < until_ms ? history_rows(db, t, lower, until_ms, step_ms, h,
	                                     cause, causelen)
	                      : 0;
	if (rc == 0 && lower < until_ms)
		rc = history_gaps(db, lower, until_ms, h, cause, causelen);
	sqlite3_close(db);
	if (rc != 0) {
		sl_history_free(h);
		return rc;
	}
	*out = h;
	return 0;
}

int
cli_offline_db_path(const char *socket_path, int socket_given, char *buf,
                    size_t len)
{
	int sys_sock = socket_path != NULL &&
	               strcmp(socket_path, "/var/run/stageload.sock") == 0;

	/* A socket named (--socket, $STAGELOAD_SOCKET) says which daemon;
	 * root's daemon is always the system one; otherwise this user's
	 * database when there is one, else the system daemon's (whose socket
	 * is gone while it is down). */
	if (sys_sock || (!socket_given && geteuid() == 0))
		return doctor_default_db(1, buf, len);
	if (socket_given ||
	    (doctor_default_db(0, buf, len) == 0 && access(buf, F_OK) == 0))
		return doctor_default_db(0, buf, len);
	return doctor_default_db(1, buf, len);
}
