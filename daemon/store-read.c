/*
 * Reading history back (store-read.h): the daemon's and stageloadctl's one
 * implementation.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "names.h"
#include "proto.h"
#include "text.h"
#include "store-read.h"

const struct store_tier store_tiers[NTIERS] = {
    {"10s", "rollup_10s", 10 * 1000},
    {"1m", "rollup_1m", 60 * 1000},
    {"10m", "rollup_10m", 600 * 1000},
};

struct store_read {
	sqlite3 *db;
	sqlite3_stmt *hist_raw, *hist[NTIERS];
	sqlite3_stmt *first_raw, *first[NTIERS]; /* earliest row of each */
	sqlite3_stmt *start_markers;
	sqlite3_stmt *job_hist_raw, *job_hist;
	sqlite3_stmt *stages;
};

/* sqlite's result as an errno value: busy and locked are worth a retry. */
static int
read_errno(int rc)
{
	switch (rc & 0xff) {
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return -EAGAIN;
	case SQLITE_NOMEM:
		return -ENOMEM;
	default:
		return -EIO;
	}
}

static int64_t
floor_to(int64_t v, int64_t step)
{
	int64_t r = v % step;

	return r < 0 ? v - r - step : v - r;
}

static int
prep(struct store_read *r, sqlite3_stmt **st, const char *sql, char *cause,
     size_t causelen)
{
	int rc = sqlite3_prepare_v3(r->db, sql, -1, SQLITE_PREPARE_PERSISTENT,
	                            st, NULL);

	if (rc != SQLITE_OK)
		return proto_cause(cause, causelen, read_errno(rc),
		                   "preparing a history read: %s",
		                   sqlite3_errmsg(r->db));
	return 0;
}

/* file: URI of path, percent-encoded (sqlite's URI filenames). */
static int
file_uri(const char *path, const char *query, char *buf, size_t len)
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
int
store_read_open_file(const char *path, sqlite3 **dbp, char *cause,
                     size_t causelen)
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
		return proto_cause(cause, causelen, -errno, "%s: %s", path,
		                   strerror(errno));
	fclose(f);
	if (file_uri(path,
	             file_exists(path, "-wal") && file_exists(path, "-shm")
	                 ? "mode=ro"
	                 : "immutable=1",
	             uri, sizeof uri) != 0)
		return proto_cause(cause, causelen, -ENAMETOOLONG,
		                   "%s: path too long", path);
	rc = sqlite3_open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI,
	                     NULL);
	if (rc != SQLITE_OK) {
		proto_cause(cause, causelen, -EIO, "%s: %s", path,
		            db != NULL ? sqlite3_errmsg(db)
		                       : sqlite3_errstr(rc));
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
	if (app != STORE_READ_APP_ID) {
		proto_cause(
		    cause, causelen, -EINVAL,
		    "%s: not a stageload database (or not readable: %s)", path,
		    sqlite3_errmsg(db));
		sqlite3_close(db);
		return -EINVAL;
	}
	*dbp = db;
	return 0;
}

int
store_read_open(struct store_read **rp, sqlite3 *db, char *cause,
                size_t causelen)
{
	struct store_read *r;
	char sql[512];
	int t, rc = 0;

	*rp = NULL;
	if ((r = calloc(1, sizeof *r)) == NULL)
		return proto_cause(cause, causelen, -ENOMEM, "out of memory");
	r->db = db;
	for (t = 0; t < NTIERS && rc == 0; t++) {
		/* Rows in time order straight from the rowid b-tree;
		 * store_read_history_next buckets them (see there). */
		snprintf(sql, sizeof sql,
		         "SELECT ts_ms, n, free_bp_min, free_bp_max,"
		         " free_bp_sum, swap_used_min, swap_used_max,"
		         " swap_used_sum, available_min, available_max,"
		         " available_sum, pressure_max"
		         " FROM %s WHERE ts_ms >= ?1 AND ts_ms < ?2"
		         " ORDER BY ts_ms",
		         store_tiers[t].table);
		rc = prep(r, &r->hist[t], sql, cause, causelen);
		snprintf(sql, sizeof sql, "SELECT min(ts_ms) FROM %s",
		         store_tiers[t].table);
		if (rc == 0)
			rc = prep(r, &r->first[t], sql, cause, causelen);
	}
	/* The fixed statements; raw rows in the tiers' shape: each sample a
	 * bucket of one. */
	const struct {
		sqlite3_stmt **st;
		const char *sql;
	} fixed[] = {
	    {&r->first_raw, "SELECT min(ts_ms) FROM samples"},
	    {&r->hist_raw,
	     "SELECT ts_ms, 1, free_bp, free_bp, free_bp, swap_used_bytes,"
	     " swap_used_bytes, swap_used_bytes, available_bytes,"
	     " available_bytes, available_bytes, pressure FROM samples"
	     " WHERE ts_ms >= ?1 AND ts_ms < ?2 ORDER BY ts_ms"},
	    {&r->start_markers,
	     "SELECT ts_ms FROM markers WHERE kind = 'start'"
	     " AND ts_ms >= ?1 AND ts_ms < ?2 ORDER BY ts_ms"},
	    {&r->job_hist_raw,
	     "SELECT ts_ms, footprint_bytes, footprint_bytes, footprint_bytes,"
	     " swap_bytes, swap_bytes, swap_bytes, 1 FROM job_samples"
	     " WHERE job_id = ?1 AND ts_ms BETWEEN ?3 AND ?4 ORDER BY ts_ms"},
	    {&r->job_hist,
	     "SELECT (ts_ms / ?2) * ?2 AS b, min(footprint_bytes),"
	     " total(footprint_bytes) / count(*), max(footprint_bytes),"
	     " min(swap_bytes), total(swap_bytes) / count(*), max(swap_bytes),"
	     " count(*) FROM job_samples WHERE job_id = ?1"
	     " AND ts_ms BETWEEN ?3 AND ?4 GROUP BY b ORDER BY b"},
	    {&r->stages, "SELECT id, ts_ms, kind, detail FROM events"
	                 " WHERE job_id = ?1 AND kind IN ('stage', 'stage_end')"
	                 " ORDER BY id"},
	};
	size_t i;

	for (i = 0; rc == 0 && i < sizeof fixed / sizeof fixed[0]; i++)
		rc = prep(r, fixed[i].st, fixed[i].sql, cause, causelen);
	if (rc != 0) {
		store_read_close(r);
		return rc;
	}
	*rp = r;
	return 0;
}

void
store_read_close(struct store_read *r)
{
	int t;

	if (r == NULL)
		return;
	for (t = 0; t < NTIERS; t++) {
		sqlite3_finalize(r->hist[t]);
		sqlite3_finalize(r->first[t]);
	}
	sqlite3_finalize(r->first_raw);
	sqlite3_finalize(r->hist_raw);
	sqlite3_finalize(r->start_markers);
	sqlite3_finalize(r->job_hist_raw);
	sqlite3_finalize(r->job_hist);
	sqlite3_finalize(r->stages);
	free(r);
}

const char *
store_tier_for_step(int64_t step_ms, int64_t *res_ms)
{
	int t;

	for (t = NTIERS - 1; t >= 0; t--) {
		if (store_tiers[t].res_ms <= step_ms) {
			if (res_ms != NULL)
				*res_ms = store_tiers[t].res_ms;
			return store_tiers[t].name;
		}
	}
	if (res_ms != NULL)
		*res_ms = 0;
	return "raw";
}

/* The earliest row of tier t (-1: the raw samples), INT64_MAX when it has
 * none. */
static int64_t
first_ts(struct store_read *r, int t)
{
	sqlite3_stmt *st = t < 0 ? r->first_raw : r->first[t];
	int64_t v = INT64_MAX;

	if (sqlite3_step(st) == SQLITE_ROW &&
	    sqlite3_column_type(st, 0) != SQLITE_NULL)
		v = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	return v;
}

int
store_read_history_begin(struct store_read *r, int64_t since_ms,
                         int64_t until_ms, int64_t step_ms,
                         struct store_history_cursor *c, char *cause,
                         size_t causelen)
{
	int64_t res_ms, est, first;
	int t, u;

	memset(c, 0, sizeof c[0]);
	if (step_ms <= 0 || until_ms < since_ms) {
		return proto_cause(
		    cause, causelen, -EINVAL,
		    "history: bad range (since %lld, until %lld, step %lld ms)",
		    (long long)since_ms, (long long)until_ms,
		    (long long)step_ms);
	}
	c->tier = store_tier_for_step(step_ms, &res_ms);
	for (t = NTIERS - 1; t >= 0 && store_tiers[t].res_ms != res_ms; t--)
		;
	/*
	 * Finer tiers are pruned sooner: when this one's rows begin after
	 * since, the next coarser ones that reach further back answer
	 * instead, until one reaches since (further back by more than its
	 * resolution: its first row covers a bucket that may start before
	 * the first sample without holding anything older).
	 */
	first = first_ts(r, t);
	for (u = t + 1; u < NTIERS && since_ms < first; u++) {
		int64_t f = first_ts(r, u);

		if (f <= first - store_tiers[u].res_ms) {
			t = u;
			first = f;
			c->tier = store_tiers[t].name;
		}
	}
	c->t = t;
	/* Whole buckets only: the first one starts at since rounded down. */
	c->next_ms = floor_to(since_ms, step_ms);
	c->until_ms = until_ms;
	c->step_ms = step_ms;
	c->done = c->next_ms >= until_ms;
	est = (until_ms - c->next_ms) / step_ms + 2;
	if (est > STORE_HISTORY_MAX + 2) {
		return proto_cause(
		    cause, causelen, -E2BIG,
		    "history: %lld buckets asked for, at most %lld; use a "
		    "larger step",
		    (long long)est - 2, (long long)STORE_HISTORY_MAX);
	}
	return 0;
}

int
store_read_history_next(struct store_read *r, struct store_history_cursor *c,
                        int64_t max_buckets, struct history_bucket **out,
                        size_t *n, char *cause, size_t causelen)
{
	struct history_bucket *buf = NULL, *b, *nb;
	sqlite3_stmt *st;
	size_t len = 0, cap, i;
	int64_t lower = c->next_ms, upper = c->until_ms;
	int rc;

	*out = NULL;
	*n = 0;
	if (c->done)
		return 0;
	if (max_buckets > 0 &&
	    (c->until_ms - lower) / c->step_ms >= max_buckets)
		upper = lower + max_buckets * c->step_ms;
	st = c->t < 0 ? r->hist_raw : r->hist[c->t];
	cap = (size_t)((upper - lower) / c->step_ms + 2);
	if ((buf = malloc(cap * sizeof *buf)) == NULL)
		return -ENOMEM;
	/*
	 * Bucketing happens here rather than in a GROUP BY on the computed
	 * bucket: sqlite cannot tell that bucket follows ts_ms, so it sorts
	 * through a temporary b-tree, about 20 times slower than this one
	 * ordered pass (7 ms against 0.3 ms for a day of 1 min rows).
	 */
	sqlite3_bind_int64(st, 1, lower);
	sqlite3_bind_int64(st, 2, upper);
	b = NULL;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t ts = floor_to(sqlite3_column_int64(st, 0), c->step_ms);
		int64_t cnt = sqlite3_column_int64(st, 1);
		double fmin = sqlite3_column_int64(st, 2) / 100.0;
		double fmax = sqlite3_column_int64(st, 3) / 100.0;
		double smin = (double)sqlite3_column_int64(st, 5);
		double smax = (double)sqlite3_column_int64(st, 6);
		double amin = (double)sqlite3_column_int64(st, 8);
		double amax = (double)sqlite3_column_int64(st, 9);
		int pmax = sqlite3_column_int(st, 11);

		if (b == NULL || b->ts_ms != ts) {
			if (len == cap) {
				nb = realloc(buf, 2 * cap * sizeof *buf);
				if (nb == NULL) {
					sqlite3_reset(st);
					free(buf);
					return -ENOMEM;
				}
				buf = nb;
				cap *= 2;
			}
			b = &buf[len++];
			memset(b, 0, sizeof *b);
			b->ts_ms = ts;
			b->free_pct_min = fmin;
			b->free_pct_max = fmax;
			b->swap_used_min = smin;
			b->swap_used_max = smax;
			b->available_min = amin;
			b->available_max = amax;
			b->pressure_max = pmax;
		}
		b->n += cnt;
		/* The avg members hold sums until the end. */
		b->free_pct_avg += (double)sqlite3_column_int64(st, 4);
		b->swap_used_avg += (double)sqlite3_column_int64(st, 7);
		b->available_avg += (double)sqlite3_column_int64(st, 10);
		if (fmin < b->free_pct_min)
			b->free_pct_min = fmin;
		if (fmax > b->free_pct_max)
			b->free_pct_max = fmax;
		if (smin < b->swap_used_min)
			b->swap_used_min = smin;
		if (smax > b->swap_used_max)
			b->swap_used_max = smax;
		if (amin < b->available_min)
			b->available_min = amin;
		if (amax > b->available_max)
			b->available_max = amax;
		if (pmax > b->pressure_max)
			b->pressure_max = pmax;
	}
	sqlite3_reset(st);
	if (rc != SQLITE_DONE) {
		free(buf);
		return proto_cause(cause, causelen, read_errno(rc),
		                   "reading history: %s",
		                   sqlite3_errmsg(r->db));
	}
	for (i = 0; i < len; i++) {
		buf[i].free_pct_avg /= 100.0 * (double)buf[i].n;
		buf[i].swap_used_avg /= (double)buf[i].n;
		buf[i].available_avg /= (double)buf[i].n;
	}

	/* A start marker means nothing was sampled between it and the
	 * previous stop: flag the first bucket that ends after it, which may
	 * be in a later part (gap_pending). */
	if (len > 0 && c->gap_pending) {
		buf[0].gap_before = 1;
		c->gap_pending = 0;
	}
	st = r->start_markers;
	sqlite3_bind_int64(st, 1, lower);
	sqlite3_bind_int64(st, 2, upper);
	i = 0;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t m = sqlite3_column_int64(st, 0);

		while (i < len && buf[i].ts_ms + c->step_ms <= m)
			i++;
		if (i < len)
			buf[i].gap_before = 1;
		else
			c->gap_pending = 1;
	}
	sqlite3_reset(st);
	if (rc != SQLITE_DONE) {
		free(buf);
		return proto_cause(cause, causelen, read_errno(rc),
		                   "reading markers: %s",
		                   sqlite3_errmsg(r->db));
	}
	c->next_ms = upper;
	c->done = upper >= c->until_ms;
	*out = buf;
	*n = len;
	return 0;
}

int
store_read_job_history(struct store_read *r, int64_t job_id, int64_t since_ms,
                       int64_t until_ms, int64_t step_ms,
                       struct job_bucket **out, size_t *n, char *cause,
                       size_t causelen)
{
	struct job_bucket *buf = NULL, *nb, *b;
	int64_t lo = since_ms, hi = until_ms;
	size_t len = 0, cap = 0;
	sqlite3_stmt *st;
	int rc;

	*out = NULL;
	*n = 0;
	if (step_ms < 0 || since_ms < 0) {
		return proto_cause(
		    cause, causelen, -EINVAL,
		    "job history: bad step %lld ms or since %lld",
		    (long long)step_ms, (long long)since_ms);
	}
	if (step_ms > 0) {
		/* Whole buckets: the samples from the first bucket start at
		 * or after since to the end of the one starting at until. */
		lo = since_ms % step_ms == 0 ? since_ms
		     : since_ms > INT64_MAX - step_ms
		         ? INT64_MAX
		         : (since_ms / step_ms + 1) * step_ms;
		hi = floor_to(until_ms, step_ms);
		hi = hi > INT64_MAX - step_ms ? INT64_MAX : hi + step_ms - 1;
	}
	st = step_ms == 0 ? r->job_hist_raw : r->job_hist;
	sqlite3_bind_int64(st, 1, job_id);
	if (step_ms > 0)
		sqlite3_bind_int64(st, 2, step_ms);
	sqlite3_bind_int64(st, 3, lo);
	sqlite3_bind_int64(st, 4, hi);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (len == STORE_HISTORY_MAX) {
			sqlite3_reset(st);
			free(buf);
			return proto_cause(
			    cause, causelen, -E2BIG,
			    "job history: more than %lld buckets; "
			    "use a larger step",
			    (long long)STORE_HISTORY_MAX);
		}
		if (len == cap) {
			cap = cap == 0 ? 256 : 2 * cap;
			if (cap > STORE_HISTORY_MAX)
				cap = STORE_HISTORY_MAX;
			if ((nb = realloc(buf, cap * sizeof *buf)) == NULL) {
				sqlite3_reset(st);
				free(buf);
				return -ENOMEM;
			}
			buf = nb;
		}
		b = &buf[len++];
		b->ts_ms = sqlite3_column_int64(st, 0);
		b->footprint_min = sqlite3_column_double(st, 1);
		b->footprint_avg = sqlite3_column_double(st, 2);
		b->footprint_max = sqlite3_column_double(st, 3);
		b->swap_min = sqlite3_column_double(st, 4);
		b->swap_avg = sqlite3_column_double(st, 5);
		b->swap_max = sqlite3_column_double(st, 6);
		b->n = sqlite3_column_int64(st, 7);
	}
	sqlite3_reset(st);
	if (rc != SQLITE_DONE) {
		free(buf);
		return proto_cause(cause, causelen, read_errno(rc),
		                   "reading job history: %s",
		                   sqlite3_errmsg(r->db));
	}
	*out = buf;
	*n = len;
	return 0;
}

static int64_t
detail_int(const cJSON *o, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	return cJSON_IsNumber(v) && v->valuedouble >= 0
	           ? (int64_t)v->valuedouble
	           : 0;
}

int
store_stage_push(struct store_stage **st, size_t *n, const char *name,
                 int64_t started_ms, int64_t ended_ms,
                 uint64_t footprint_peak_bytes, uint64_t swap_growth_bytes)
{
	struct store_stage *ns, *s;

	/* At most a hundred or so: one more each time is cheap enough. */
	if ((ns = realloc(*st, (*n + 1) * sizeof *ns)) == NULL)
		return -ENOMEM;
	*st = ns;
	s = &ns[*n];
	if ((s->name = strdup(name)) == NULL)
		return -ENOMEM;
	s->started_ms = started_ms;
	s->ended_ms = ended_ms;
	s->footprint_peak_bytes = footprint_peak_bytes;
	s->swap_growth_bytes = swap_growth_bytes;
	(*n)++;
	return 0;
}

void
store_stages_free(struct store_stage *st, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(st[i].name);
	free(st);
}

int
store_read_job_stages(struct store_read *r, int64_t job_id, size_t max,
                      int open, struct store_stage **out, size_t *n,
                      char *cause, size_t causelen)
{
	struct store_stage *st = NULL;
	sqlite3_stmt *q = r->stages;
	int64_t open_id = 0, open_ts = 0, end_id = 0;
	char *open_name = NULL;
	size_t got = 0;
	int rc, err = 0;

	*out = NULL;
	*n = 0;
	sqlite3_bind_int64(q, 1, job_id);
	while (err == 0 && (rc = sqlite3_step(q)) == SQLITE_ROW) {
		const char *kind = (const char *)sqlite3_column_text(q, 2);
		const char *det = (const char *)sqlite3_column_text(q, 3);
		cJSON *o = det != NULL ? cJSON_Parse(det) : NULL;
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(o, "name");

		if (!cJSON_IsString(name) || kind == NULL) {
			/* not a stage we can name: skipped */
		} else if (strcmp(kind, "stage") == 0) {
			free(open_name);
			open_name = strdup(name->valuestring);
			open_id = sqlite3_column_int64(q, 0);
			open_ts = sqlite3_column_int64(q, 1);
			if (open_name == NULL)
				err = -ENOMEM;
		} else if (got < max) {
			end_id = sqlite3_column_int64(q, 0);
			err = store_stage_push(
			    &st, &got, name->valuestring,
			    detail_int(o, "started_at_ms"),
			    detail_int(o, "ended_at_ms"),
			    (uint64_t)detail_int(o, "footprint_peak_bytes"),
			    (uint64_t)detail_int(o, "swap_growth_bytes"));
		}
		cJSON_Delete(o);
	}
	sqlite3_reset(q);
	if (err == 0 && rc != SQLITE_DONE)
		err = proto_cause(cause, causelen, read_errno(rc),
		                  "reading stages: %s", sqlite3_errmsg(r->db));
	if (err == 0 && open && open_name != NULL && open_id > end_id)
		err = store_stage_push(&st, &got, open_name, open_ts, 0, 0, 0);
	free(open_name);
	if (err != 0) {
		store_stages_free(st, got);
		if (err == -ENOMEM)
			proto_cause(cause, causelen, err, "out of memory");
		return err;
	}
	*out = st;
	*n = got;
	return 0;
}

const char *
store_stage_at(const struct store_stage *st, size_t n, int64_t t0, int64_t t1)
{
	const char *name = NULL;
	size_t i;

	for (i = 0; i < n; i++)
		if (st[i].started_ms < t1 &&
		    (st[i].ended_ms == 0 || st[i].ended_ms > t0))
			name = st[i].name;
	return name;
}

sqlite3 *
store_read_db(struct store_read *r)
{
	return r->db;
}

/* min, avg and max; sizes whole (rounded for the system's averages, cut
 * for a job's, as each answer always had them). */
static cJSON *
mma_json(double min, double avg, double max, int whole, double round)
{
	cJSON *o = cJSON_CreateObject();

	if (o == NULL)
		return NULL;
	if (whole) {
		proto_add_int(o, "min", (int64_t)(min + round));
		proto_add_int(o, "avg", (int64_t)(avg + round));
		proto_add_int(o, "max", (int64_t)(max + round));
	} else {
		cJSON_AddNumberToObject(o, "min", min);
		cJSON_AddNumberToObject(o, "avg", avg);
		cJSON_AddNumberToObject(o, "max", max);
	}
	return o;
}

cJSON *
store_read_bucket_json(const struct history_bucket *b)
{
	cJSON *o = cJSON_CreateObject();

	if (o == NULL)
		return NULL;
	proto_add_int(o, "ts_ms", b->ts_ms);
	proto_add_int(o, "n", b->n);
	cJSON_AddItemToObject(
	    o, "free_pct",
	    mma_json(b->free_pct_min, b->free_pct_avg, b->free_pct_max, 0, 0));
	cJSON_AddItemToObject(o, "swap_used_bytes",
	                      mma_json(b->swap_used_min, b->swap_used_avg,
	                               b->swap_used_max, 1, 0.5));
	cJSON_AddItemToObject(o, "available_bytes",
	                      mma_json(b->available_min, b->available_avg,
	                               b->available_max, 1, 0.5));
	cJSON_AddStringToObject(o, "pressure_max",
	                        names_pressure_name(b->pressure_max));
	cJSON_AddBoolToObject(o, "gap", b->gap_before != 0);
	return o;
}

cJSON *
store_read_job_bucket_json(const struct job_bucket *b)
{
	cJSON *o = cJSON_CreateObject();

	if (o == NULL)
		return NULL;
	proto_add_int(o, "ts_ms", b->ts_ms);
	proto_add_int(o, "n", b->n);
	cJSON_AddItemToObject(o, "footprint_bytes",
	                      mma_json(b->footprint_min, b->footprint_avg,
	                               b->footprint_max, 1, 0));
	cJSON_AddItemToObject(
	    o, "swap_bytes",
	    mma_json(b->swap_min, b->swap_avg, b->swap_max, 1, 0));
	return o;
}
