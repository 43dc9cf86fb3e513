/*
 * stageloadctl history without the daemon: the database read directly,
 * read-only, with the user's own rights (never more: a system daemon's
 * database is root's, mode 0600, so that is `sudo stageloadctl history`).
 * The buckets are made as the daemon makes them (daemon/store-samples.c,
 * store_history_begin, store_history_next and store_job_history;
 * daemon/control-jobs.c for a job's stages; PROTOCOL.md, history): the
 * same tier, the same sums and averages, the same gap marks and stages,
 * so a range prints the same before and after the daemon stops
 * (tests/admin-history.py compares them). docs/cli.md, "history".
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "cli.h"
#include "doctor.h"
#include "names.h"

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
		         names_pressure_name(c->gap));
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

/* ---- a job's history (daemon/control-jobs.c, control_job_history) ---- */

struct stage_row {
	char *name;
	int64_t started_ms, ended_ms; /* ended 0: still open */
};

static void
stages_free(struct stage_row *st, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(st[i].name);
	free(st);
}

static int64_t
detail_int(const cJSON *o, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	return cJSON_IsNumber(v) && v->valuedouble >= 0
	           ? (int64_t)v->valuedouble
	           : 0;
}

/*
 * The job's stages as the daemon lists them (daemon/jobs-stage.c): each
 * ended one from its stage_end event (at most 100), then the stage open
 * when the daemon stopped, from the last stage event when no stage_end
 * came after it.
 */
static int
job_stages(sqlite3 *db, int64_t id, struct stage_row **out, size_t *n)
{
	struct stage_row *st = NULL, *ns;
	int64_t open_id = 0, open_ts = 0, end_id = 0;
	char *open_name = NULL;
	size_t cap = 0;
	sqlite3_stmt *q;
	int rc, ok = 1, ended = 0;

	*out = NULL;
	*n = 0;
	if (sqlite3_prepare_v2(db,
	                       "SELECT id, ts_ms, kind, detail FROM events"
	                       " WHERE job_id = ?1 AND kind IN ('stage',"
	                       " 'stage_end') ORDER BY id",
	                       -1, &q, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_int64(q, 1, id);
	while (ok && (rc = sqlite3_step(q)) == SQLITE_ROW) {
		const char *kind = (const char *)sqlite3_column_text(q, 2);
		const char *det = (const char *)sqlite3_column_text(q, 3);
		cJSON *o = det != NULL ? cJSON_Parse(det) : NULL;
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(o, "name");

		if (cJSON_IsString(name) && strcmp(kind, "stage") == 0) {
			free(open_name);
			open_name = strdup(name->valuestring);
			open_id = sqlite3_column_int64(q, 0);
			open_ts = sqlite3_column_int64(q, 1);
			ok = open_name != NULL;
		} else if (cJSON_IsString(name) && ended < 100) {
			end_id = sqlite3_column_int64(q, 0);
			ended++;
			if (*n == cap) {
				cap = cap > 0 ? 2 * cap : 8;
				if ((ns = realloc(st, cap * sizeof *st)) ==
				    NULL)
					ok = 0;
				else
					st = ns;
			}
			if (ok &&
			    (st[*n].name = strdup(name->valuestring)) == NULL)
				ok = 0;
			if (ok) {
				st[*n].started_ms =
				    detail_int(o, "started_at_ms");
				st[*n].ended_ms = detail_int(o, "ended_at_ms");
				(*n)++;
			}
		}
		cJSON_Delete(o);
	}
	sqlite3_finalize(q);
	if (ok && open_name != NULL && open_id > end_id) {
		if (*n == cap &&
		    (ns = realloc(st, (cap + 1) * sizeof *st)) != NULL)
			st = ns, cap++;
		if (*n < cap) {
			st[*n].name = open_name;
			st[*n].started_ms = open_ts;
			st[*n].ended_ms = 0;
			(*n)++;
			open_name = NULL;
		} else {
			ok = 0;
		}
	}
	free(open_name);
	if (!ok) {
		stages_free(st, *n);
		*n = 0;
		return -ENOMEM;
	}
	*out = st;
	return 0;
}

/* The stage of a bucket [t0, t1): the last one that began before its end
 * and had not ended before its start. */
static const char *
bucket_stage(const struct stage_row *st, size_t n, int64_t t0, int64_t t1)
{
	const char *name = NULL;
	size_t i;

	for (i = 0; i < n; i++)
		if (st[i].started_ms < t1 &&
		    (st[i].ended_ms == 0 || st[i].ended_ms > t0))
			name = st[i].name;
	return name;
}

int
cli_offline_job_history(const char *path, int64_t job_id, int64_t since_ms,
                        int64_t until_ms, int64_t step_ms,
                        struct sl_history **out, char *cause, size_t causelen)
{
	struct sl_history *h = NULL;
	struct stage_row *st = NULL;
	int64_t submitted = 0, ended = 0, lo, hi, until;
	size_t nst = 0, cap = 0, i;
	struct sl_bucket *b, *nb;
	sqlite3_stmt *q;
	sqlite3 *db;
	int rc, found = 0;

	*out = NULL;
	if ((rc = offline_open(path, &db, cause, causelen)) != 0)
		return rc;
	if (sqlite3_prepare_v2(db,
	                       "SELECT submitted_ms, ended_ms FROM jobs"
	                       " WHERE id = ?1",
	                       -1, &q, NULL) == SQLITE_OK) {
		sqlite3_bind_int64(q, 1, job_id);
		if (sqlite3_step(q) == SQLITE_ROW) {
			found = 1;
			submitted = sqlite3_column_int64(q, 0);
			ended = sqlite3_column_int64(q, 1);
		}
		sqlite3_finalize(q);
	}
	if (!found) {
		sqlite3_close(db);
		return fail(cause, causelen, -ENOENT, "%s: no job %lld", path,
		            (long long)job_id);
	}
	until = until_ms > 0 ? until_ms : INT64_MAX;
	if (step_ms <= 0) {
		lo = since_ms > 0 ? since_ms : submitted;
		hi = until_ms > 0 ? until_ms : ended > 0 ? ended : cli_now_ms();
		step_ms = hi > lo ? (hi - lo) / 60 : 0;
		if (step_ms < 500)
			step_ms = 500;
	}
	/* Whole buckets: from the first that starts at or after since to the
	 * end of the one that starts at until. */
	lo = since_ms % step_ms == 0 ? since_ms
	     : since_ms > INT64_MAX - step_ms
	         ? INT64_MAX
	         : (since_ms / step_ms + 1) * step_ms;
	hi = floor_to(until, step_ms);
	hi = hi > INT64_MAX - step_ms ? INT64_MAX : hi + step_ms - 1;
	if ((h = calloc(1, sizeof *h)) == NULL ||
	    job_stages(db, job_id, &st, &nst) != 0 ||
	    sqlite3_prepare_v2(
	        db,
	        "SELECT (ts_ms / ?2) * ?2 AS b, min(footprint_bytes),"
	        " total(footprint_bytes) / count(*), max(footprint_bytes),"
	        " min(swap_bytes), total(swap_bytes) / count(*),"
	        " max(swap_bytes), count(*) FROM job_samples WHERE job_id = ?1"
	        " AND ts_ms BETWEEN ?3 AND ?4 GROUP BY b ORDER BY b",
	        -1, &q, NULL) != SQLITE_OK) {
		free(h);
		stages_free(st, nst);
		fail(cause, causelen, -EIO, "reading job history: %s",
		     sqlite3_errmsg(db));
		sqlite3_close(db);
		return -EIO;
	}
	h->job_id = job_id;
	h->step_ms = step_ms;
	h->since_ms = since_ms;
	h->until_ms = until_ms;
	sqlite3_bind_int64(q, 1, job_id);
	sqlite3_bind_int64(q, 2, step_ms);
	sqlite3_bind_int64(q, 3, lo);
	sqlite3_bind_int64(q, 4, hi);
	rc = 0;
	while (rc == 0 && sqlite3_step(q) == SQLITE_ROW) {
		if (h->nbuckets == 100000) {
			rc = fail(cause, causelen, -E2BIG,
			          "job history: more than 100000 buckets; use "
			          "a larger --step");
			break;
		}
		if (h->nbuckets == cap) {
			cap = cap > 0 ? 2 * cap : 256;
			if ((nb = realloc(h->buckets, cap * sizeof *nb)) ==
			    NULL) {
				rc = fail(cause, causelen, -ENOMEM,
				          "out of memory");
				break;
			}
			h->buckets = nb;
		}
		/* As the daemon's answer carries them: whole bytes, cut. */
		b = &h->buckets[h->nbuckets++];
		memset(b, 0, sizeof *b);
		b->ts_ms = sqlite3_column_int64(q, 0);
		b->footprint_bytes.min =
		    (double)(int64_t)sqlite3_column_double(q, 1);
		b->footprint_bytes.avg =
		    (double)(int64_t)sqlite3_column_double(q, 2);
		b->footprint_bytes.max =
		    (double)(int64_t)sqlite3_column_double(q, 3);
		b->swap_bytes.min =
		    (double)(int64_t)sqlite3_column_double(q, 4);
		b->swap_bytes.avg =
		    (double)(int64_t)sqlite3_column_double(q, 5);
		b->swap_bytes.max =
		    (double)(int64_t)sqlite3_column_double(q, 6);
		b->n = sqlite3_column_int64(q, 7);
	}
	sqlite3_finalize(q);
	sqlite3_close(db);
	for (i = 0; rc == 0 && i < h->nbuckets; i++) {
		const char *name =
		    bucket_stage(st, nst, h->buckets[i].ts_ms,
		                 h->buckets[i].ts_ms + h->step_ms);
		if (name == NULL)
			continue;
		if (h->stages == NULL &&
		    (h->stages = calloc(h->nbuckets + 1, sizeof *h->stages)) ==
		        NULL)
			break;
		h->stages[i] = strdup(name);
	}
	stages_free(st, nst);
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
