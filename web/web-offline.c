/*
 * History with the daemon down (stageload-web --db PATH): a sanitised copy
 * of the database (docs/storage.md, "Privacy") read through the store's
 * own reading code (daemon/store-read.c, as `stageloadctl history` does
 * with the daemon down), turned into the objects the daemon would answer
 * with (a history result, Jobs, Events), each through web-json.c's
 * allow-lists, so the page draws them as it draws the daemon's.
 *
 * This program never reads the daemon's own database: a copy that still
 * holds a private column (proto/job-fields.h's OWNER text columns: cwd,
 * on_end, end_detail, job_token), a job's argv or environment (job_args) or the
 * events of a job other than its stages is refused, as is a file it
 * cannot open read-only.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "job-fields.h"
#include "names.h"
#include "store-read.h"
#include "text.h"
#include "web.h"

/* The events of one page at most (the newest of the window). */
#define OFFLINE_EVENTS_MAX 2000

/* The private text columns of a jobs row: OWNER and S_TEXT in
 * proto/job-fields.h. The sanitised copy has them NULL. */
#define OFF_PRIV_S_TEXT_OWNER(col) " OR " col " IS NOT NULL"
#define OFF_PRIV_S_TEXT_PUBLIC(col)
#define OFF_PRIV_S_NO(v, col)
#define OFF_PRIV_S_INT(v, col)
#define OFF_PRIV_S_DBL(v, col)
#define OFF_PRIV_S_STATE(v, col)
#define OFF_PRIV_S_EXPECT(v, col)
#define OFF_PRIV_S_GROUPS(v, col)
#define OFF_PRIV_S_IDS(v, col)
#define OFF_PRIV_S_TEXT(v, col) OFF_PRIV_S_TEXT_##v(col)
#define OFF_PRIV(m, w, store, col, job, vis, submit, upd, lo, hi, unit, web)   \
	OFF_PRIV_##store(vis, col)
#define OFF_PRIVATE_COLUMNS JOB_FIELDS(OFF_PRIV)
static const char private_sql[] =
    "SELECT EXISTS (SELECT 1 FROM job_args)"
    " OR EXISTS (SELECT 1 FROM jobs WHERE 0" OFF_PRIVATE_COLUMNS ")"
    " OR EXISTS (SELECT 1 FROM events WHERE job_id != 0"
    " AND kind NOT IN ('stage', 'stage_end'))";

/* The public columns of a jobs row the page shows (W_YES or W_SPECIAL),
 * with their wire names and how to read them: a W_SPECIAL member (after,
 * kill, an array or object) is JSON text in its column, parsed for
 * web_public_job to copy by its own members. */
enum off_kind { OFF_INT, OFF_DBL, OFF_TEXT, OFF_JSON };
struct off_col {
	const char *column, *wire;
	enum off_kind kind;
	int time; /* U_TIME: 0 is "not yet", left out */
};
#define OFF_TIME_U_TIME 1
#define OFF_TIME_U_SIZE 0
#define OFF_TIME_U_DURATION 0
#define OFF_TIME_U_PERCENT 0
#define OFF_TIME_U_COUNT 0
#define OFF_TIME_U_NONE 0
#define OFF_K_S_INT OFF_INT
#define OFF_K_S_DBL OFF_DBL
#define OFF_K_S_TEXT OFF_TEXT
#define OFF_K_S_STATE OFF_TEXT
#define OFF_K_S_EXPECT OFF_TEXT
#define OFF_K_S_IDS OFF_JSON
#define OFF_COL_PUBLIC_W_YES(store, col, w, unit)                              \
	{col, w, OFF_K_##store, OFF_TIME_##unit},
#define OFF_COL_PUBLIC_W_SPECIAL(store, col, w, unit) {col, w, OFF_JSON, 0},
#define OFF_COL_PUBLIC_W_NO(store, col, w, unit)
#define OFF_COL_OWNER_W_YES(store, col, w, unit)
#define OFF_COL_OWNER_W_SPECIAL(store, col, w, unit)
#define OFF_COL_OWNER_W_NO(store, col, w, unit)
#define OFF_COL_S(vis, web, store, col, w, unit)                               \
	OFF_COL_##vis##_##web(store, col, w, unit)
#define OFF_COL_S_NO(vis, web, col, w, unit)
#define OFF_COL_S_GROUPS(vis, web, col, w, unit)
#define OFF_COL_S_INT(vis, web, col, w, unit)                                  \
	OFF_COL_S(vis, web, S_INT, col, w, unit)
#define OFF_COL_S_DBL(vis, web, col, w, unit)                                  \
	OFF_COL_S(vis, web, S_DBL, col, w, unit)
#define OFF_COL_S_TEXT(vis, web, col, w, unit)                                 \
	OFF_COL_S(vis, web, S_TEXT, col, w, unit)
#define OFF_COL_S_STATE(vis, web, col, w, unit)                                \
	OFF_COL_S(vis, web, S_STATE, col, w, unit)
#define OFF_COL_S_EXPECT(vis, web, col, w, unit)                               \
	OFF_COL_S(vis, web, S_EXPECT, col, w, unit)
#define OFF_COL_S_IDS(vis, web, col, w, unit)                                  \
	OFF_COL_S(vis, web, S_IDS, col, w, unit)
#define OFF_COL(m, w, store, col, job, vis, submit, upd, lo, hi, unit, web)    \
	OFF_COL_##store(vis, web, col, w, unit)
static const struct off_col job_cols[] = {JOB_FIELDS(OFF_COL)};
#define NJOB_COLS (sizeof job_cols / sizeof job_cols[0])

static int
off_errno(sqlite3 *db, const char *what, char *cause, size_t len)
{
	return proto_cause(cause, len, -EIO, "%s: %s", what,
	                   sqlite3_errmsg(db));
}

/* Open path and check that it is a sanitised copy. */
static int
off_open(const char *path, sqlite3 **dbp, char *cause, size_t len)
{
	sqlite3_stmt *st;
	sqlite3 *db;
	int rc, priv = 1;

	if ((rc = store_read_open_file(path, &db, cause, len)) != 0)
		return rc;
	rc = sqlite3_prepare_v2(db, private_sql, -1, &st, NULL);
	if (rc == SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW)
			priv = sqlite3_column_int(st, 0);
		else
			rc = SQLITE_ERROR;
		sqlite3_finalize(st);
	}
	if (rc != SQLITE_OK) {
		rc = off_errno(db, path, cause, len);
		sqlite3_close(db);
		return rc;
	}
	if (priv) {
		sqlite3_close(db);
		return proto_cause(
		    cause, len, -EPERM,
		    "%s holds jobs' commands, directories, environments or "
		    "private events: give stageload-web a sanitised copy "
		    "(docs/storage.md, \"Privacy\"), never the daemon's own "
		    "database",
		    path);
	}
	*dbp = db;
	return 0;
}

int
web_offline_check(const char *path, char *cause, size_t len)
{
	sqlite3 *db;
	int rc;

	if ((rc = off_open(path, &db, cause, len)) == 0)
		sqlite3_close(db);
	return rc;
}

static int
off_history(sqlite3 *db, int64_t since, int64_t until, int64_t step,
            cJSON **out, char *cause, size_t len)
{
	struct store_history_cursor c;
	struct history_bucket *b = NULL;
	struct store_read *r = NULL;
	cJSON *h = cJSON_CreateObject(), *arr;
	size_t n, i;
	int rc;

	*out = NULL;
	if (h == NULL)
		return -ENOMEM;
	cJSON_AddNumberToObject(h, "since_ms", (double)since);
	cJSON_AddNumberToObject(h, "until_ms", (double)until);
	cJSON_AddNumberToObject(h, "step_ms", (double)step);
	arr = cJSON_AddArrayToObject(h, "buckets");
	if (until / step - since / step + 1 > STORE_HISTORY_MAX)
		rc = proto_cause(cause, len, -E2BIG, "too many buckets");
	else if ((rc = store_read_open(&r, db, cause, len)) == 0 &&
	         (rc = store_read_history_begin(r, since, until, step, &c,
	                                        cause, len)) == 0) {
		cJSON_AddStringToObject(h, "tier", c.tier);
		while (rc == 0 && !c.done) {
			rc = store_read_history_next(r, &c, 0, &b, &n, cause,
			                             len);
			for (i = 0; rc == 0 && i < n; i++)
				cJSON_AddItemToArray(
				    arr, store_read_bucket_json(&b[i]));
			free(b);
			b = NULL;
		}
	}
	store_read_close(r);
	if (rc != 0) {
		cJSON_Delete(h);
		return rc;
	}
	*out = h;
	return 0;
}

/* The time of the newest thing the copy knows: a sample of any tier (raw
 * samples are kept the shortest), a job's end or an event (a job may end
 * after the last sample, just before the daemon stopped); 0 when it has
 * no sample. */
static int
off_last_ms(sqlite3 *db, int64_t *last, char *cause, size_t len)
{
	sqlite3_stmt *st;
	int rc;

	*last = 0;
	rc = sqlite3_prepare_v2(
	    db,
	    "SELECT max(m) FROM (SELECT max(ts_ms) AS m FROM samples"
	    " UNION ALL SELECT max(ts_ms) FROM rollup_10s"
	    " UNION ALL SELECT max(ts_ms) FROM rollup_1m"
	    " UNION ALL SELECT max(ts_ms) FROM rollup_10m)",
	    -1, &st, NULL);
	if (rc != SQLITE_OK)
		return off_errno(db, "reading the last sample", cause, len);
	if (sqlite3_step(st) == SQLITE_ROW)
		*last = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	if (*last <= 0)
		return 0;
	rc = sqlite3_prepare_v2(db,
	                        "SELECT max(m) FROM (SELECT max(ended_ms) AS m"
	                        " FROM jobs UNION ALL SELECT max(ts_ms)"
	                        " FROM events)",
	                        -1, &st, NULL);
	if (rc != SQLITE_OK)
		return off_errno(db, "reading the last end", cause, len);
	if (sqlite3_step(st) == SQLITE_ROW &&
	    sqlite3_column_int64(st, 0) > *last)
		*last = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return 0;
}

/* A time of the Job, or null for none. */
static void
add_ms(cJSON *o, const char *name, double ms)
{
	if (ms > 0)
		cJSON_AddNumberToObject(o, name, ms);
	else
		cJSON_AddNullToObject(o, name);
}

/* The Job's attempts as the daemon shows them (daemon/wire.c,
 * wire_job_attempts): the column holds the attempts before the current
 * one, which is made from the job's own times and end. */
static void
off_attempts(cJSON *j)
{
	cJSON *a = cJSON_DetachItemFromObjectCaseSensitive(j, "attempts"), *e,
	      *last;
	double queued = web_num(j, "submitted_at_ms", 0),
	       ended = web_num(j, "ended_at_ms", 0);

	if (!cJSON_IsArray(a)) {
		cJSON_Delete(a);
		if ((a = cJSON_CreateArray()) == NULL)
			return;
	}
	last = cJSON_GetArrayItem(a, cJSON_GetArraySize(a) - 1);
	if (last != NULL)
		queued = web_num(last, "ended_at_ms", queued);
	if ((e = cJSON_CreateObject()) != NULL) {
		cJSON_AddNumberToObject(e, "attempt", web_num(j, "attempt", 1));
		cJSON_AddNumberToObject(e, "queued_at_ms", queued);
		add_ms(e, "admitted_at_ms", web_num(j, "admitted_at_ms", 0));
		add_ms(e, "started_at_ms", web_num(j, "started_at_ms", 0));
		add_ms(e, "ended_at_ms", ended);
		if (ended > 0 && web_str(j, "end_reason") != NULL)
			cJSON_AddStringToObject(e, "end_reason",
			                        web_str(j, "end_reason"));
		else
			cJSON_AddNullToObject(e, "end_reason");
		cJSON_AddItemToArray(a, e);
	}
	cJSON_AddItemToObject(j, "attempts", a);
}

/* The jobs whose lives meet [t0, t1], newest first, or with id > 0 that
 * job alone, as public Jobs. */
static int
off_jobs(sqlite3 *db, int64_t t0, int64_t t1, int64_t id, cJSON *jobs,
         char *cause, size_t len)
{
	char sql[4096];
	size_t i, o;
	sqlite3_stmt *st;
	int rc;

	o = (size_t)snprintf(sql, sizeof sql, "SELECT id");
	for (i = 0; i < NJOB_COLS && o < sizeof sql; i++)
		o += (size_t)snprintf(sql + o, sizeof sql - o, ", %s",
		                      job_cols[i].column);
	if (o >= sizeof sql)
		return proto_cause(cause, len, -E2BIG, "jobs query too long");
	snprintf(sql + o, sizeof sql - o,
	         " FROM jobs WHERE (?3 > 0 AND id = ?3) OR (?3 = 0"
	         " AND submitted_ms <= ?2 AND (ended_ms = 0 OR ended_ms >= ?1))"
	         " ORDER BY id DESC LIMIT %d",
	         WEB_ENDED_MAX);
	rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return off_errno(db, "reading jobs", cause, len);
	sqlite3_bind_int64(st, 1, t0);
	sqlite3_bind_int64(st, 2, t1);
	sqlite3_bind_int64(st, 3, id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		cJSON *j = cJSON_CreateObject(), *pub;

		cJSON_AddNumberToObject(j, "id",
		                        (double)sqlite3_column_int64(st, 0));
		for (i = 0; i < NJOB_COLS; i++) {
			int c = (int)i + 1;

			if (sqlite3_column_type(st, c) == SQLITE_NULL)
				continue;
			switch (job_cols[i].kind) {
			case OFF_INT:
				if (job_cols[i].time &&
				    sqlite3_column_int64(st, c) <= 0)
					break;
				cJSON_AddNumberToObject(
				    j, job_cols[i].wire,
				    (double)sqlite3_column_int64(st, c));
				break;
			case OFF_DBL:
				cJSON_AddNumberToObject(
				    j, job_cols[i].wire,
				    sqlite3_column_double(st, c));
				break;
			case OFF_TEXT:
				cJSON_AddStringToObject(
				    j, job_cols[i].wire,
				    (const char *)sqlite3_column_text(st, c));
				break;
			case OFF_JSON:
				cJSON_AddItemToObject(
				    j, job_cols[i].wire,
				    cJSON_Parse(
				        (const char *)sqlite3_column_text(st,
				                                          c)));
				break;
			}
		}
		off_attempts(j);
		/* The members the daemon shows of an ended job only. */
		if (web_num(j, "ended_at_ms", 0) <= 0) {
			cJSON_DeleteItemFromObject(j, "exit_code");
			cJSON_DeleteItemFromObject(j, "signal");
			cJSON_DeleteItemFromObject(j, "end_reason");
		} else if (web_num(j, "signal", 0) > 0)
			cJSON_DeleteItemFromObject(j, "exit_code");
		else
			cJSON_DeleteItemFromObject(j, "signal");
		pub = web_public_job(j);
		cJSON_Delete(j);
		if (pub != NULL)
			cJSON_AddItemToArray(jobs, pub);
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return off_errno(db, "reading jobs", cause, len);
	return 0;
}

/* The events of [t0, t1] (the newest OFFLINE_EVENTS_MAX), of job id
 * alone when id > 0, oldest first, as public Events. */
static int
off_events(sqlite3 *db, int64_t t0, int64_t t1, int64_t id, cJSON *events,
           char *cause, size_t len)
{
	sqlite3_stmt *st;
	int rc;

	rc = sqlite3_prepare_v2(
	    db,
	    "SELECT * FROM (SELECT id, ts_ms, job_id, kind, detail FROM events"
	    " WHERE ts_ms >= ?1 AND ts_ms <= ?2 AND (?4 = 0 OR job_id = ?4)"
	    " ORDER BY id DESC LIMIT ?3)"
	    " ORDER BY id",
	    -1, &st, NULL);
	if (rc != SQLITE_OK)
		return off_errno(db, "reading events", cause, len);
	sqlite3_bind_int64(st, 1, t0);
	sqlite3_bind_int64(st, 2, t1);
	sqlite3_bind_int(st, 3, OFFLINE_EVENTS_MAX);
	sqlite3_bind_int64(st, 4, id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		cJSON *e = cJSON_CreateObject(), *pub;
		const char *d = (const char *)sqlite3_column_text(st, 4);

		cJSON_AddNumberToObject(e, "id",
		                        (double)sqlite3_column_int64(st, 0));
		cJSON_AddNumberToObject(e, "ts_ms",
		                        (double)sqlite3_column_int64(st, 1));
		cJSON_AddNumberToObject(e, "job_id",
		                        (double)sqlite3_column_int64(st, 2));
		cJSON_AddStringToObject(
		    e, "kind", (const char *)sqlite3_column_text(st, 3));
		if (d != NULL)
			cJSON_AddItemToObject(e, "detail", cJSON_Parse(d));
		pub = web_public_event(e);
		cJSON_Delete(e);
		if (pub != NULL)
			cJSON_AddItemToArray(events, pub);
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return off_errno(db, "reading events", cause, len);
	return 0;
}

int
web_offline_open(struct web_offline *off, const char *path, char *cause,
                 size_t len)
{
	memset(off, 0, sizeof *off);
	return off_open(path, &off->db, cause, len);
}

void
web_offline_close(struct web_offline *off)
{
	sqlite3_close(off->db);
	off->db = NULL;
}

int
web_offline_last_ms(struct web_offline *off, int64_t *last, char *cause,
                    size_t len)
{
	return off_last_ms(off->db, last, cause, len);
}

int
web_offline_history(struct web_offline *off, int64_t since, int64_t until,
                    int64_t step, cJSON **out, char *cause, size_t len)
{
	return off_history(off->db, since, until, step, out, cause, len);
}

int
web_offline_snap(struct web_offline *off, int64_t t0, int64_t t1,
                 struct web_snap *snap, cJSON **events, char *cause, size_t len)
{
	int rc;

	memset(snap, 0, sizeof *snap);
	snap->now_ms = t1;
	snap->jobs = cJSON_CreateArray();
	*events = cJSON_CreateArray();
	if (snap->jobs == NULL || *events == NULL)
		return proto_cause(cause, len, -ENOMEM, "out of memory");
	if ((rc = off_jobs(off->db, t0, t1, 0, snap->jobs, cause, len)) != 0 ||
	    (rc = off_events(off->db, t0, t1, 0, *events, cause, len)) != 0)
		return rc;
	snap->events = *events;
	return 0;
}

int
web_offline_job(struct web_offline *off, int64_t id, cJSON **job,
                cJSON **history, cJSON *events, char *cause, size_t len)
{
	struct job_bucket *jb = NULL;
	struct store_read *r = NULL;
	cJSON *jobs = cJSON_CreateArray(), *arr;
	int64_t lo, hi, step;
	size_t n = 0, i;
	int rc;

	*job = *history = NULL;
	if (jobs == NULL)
		return proto_cause(cause, len, -ENOMEM, "out of memory");
	if ((rc = off_jobs(off->db, 0, 0, id, jobs, cause, len)) != 0)
		goto out;
	if (cJSON_GetArraySize(jobs) == 0) {
		rc = proto_cause(cause, len, -ENOENT, "no job %" PRId64, id);
		goto out;
	}
	*job = cJSON_DetachItemFromArray(jobs, 0);
	if ((rc = off_events(off->db, 0, INT64_MAX, id, events, cause, len)) !=
	    0)
		goto out;
	/* As the daemon's history {job_id} steps it: about 60 buckets over
	 * the job's life, never finer than the default interval (the
	 * daemon's own is not in the copy). */
	lo = (int64_t)web_num(*job, "submitted_at_ms", 0);
	hi = (int64_t)web_num(*job, "ended_at_ms", 0);
	if (hi <= 0 && (rc = off_last_ms(off->db, &hi, cause, len)) != 0)
		goto out;
	step = hi > lo ? (hi - lo) / 60 : 0;
	if (step < 500)
		step = 500;
	if ((rc = store_read_open(&r, off->db, cause, len)) != 0 ||
	    (rc = store_read_job_history(r, id, 0, INT64_MAX, step, &jb, &n,
	                                 cause, len)) != 0)
		goto out;
	*history = cJSON_CreateObject();
	cJSON_AddNumberToObject(*history, "job_id", (double)id);
	cJSON_AddNumberToObject(*history, "step_ms", (double)step);
	arr = cJSON_AddArrayToObject(*history, "buckets");
	for (i = 0; i < n; i++) {
		cJSON_AddItemToArray(arr, store_read_job_bucket_json(&jb[i]));
	}
out:
	free(jb);
	store_read_close(r);
	cJSON_Delete(jobs);
	if (rc != 0) {
		cJSON_Delete(*job);
		cJSON_Delete(*history);
		*job = *history = NULL;
	}
	return rc;
}
