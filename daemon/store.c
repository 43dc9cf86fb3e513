/*
 * Storage in one sqlite database. docs/storage.md is the reference for the
 * schema, the rollup tiers, retention and how readers open the file.
 *
 * Samples arrive every interval from the event loop, so the hot path only
 * copies them into preallocated rings; store_flush writes a ring in one
 * transaction together with the rollup buckets it touches, using statements
 * prepared once at open. Jobs and events are committed as they happen.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "store.h"

#define STORE_APPLICATION_ID 0x53544c44 /* "STLD" */
#define STORE_BUSY_TIMEOUT_MS 50
#define STORE_SAMPLE_CAP 7200      /* one hour at 0.5 s */
#define STORE_JOB_SAMPLE_CAP 16384 /* several jobs for a while */
#define STORE_TOTALS_EVERY_MS (3600 * 1000)

#ifndef SQLITE_OPEN_NOFOLLOW
#define SQLITE_OPEN_NOFOLLOW 0
#endif

#define MS_PER_DAY (24LL * 3600 * 1000)

/* The rollup tiers, finest first. Resolution is also the bucket width. */
enum { TIER_10S, TIER_1M, TIER_10M, NTIERS };
static const struct store_tier {
	const char *name;
	const char *table;
	int64_t res_ms;
} store_tiers[NTIERS] = {
    {"10s", "rollup_10s", 10 * 1000},
    {"1m", "rollup_1m", 60 * 1000},
    {"10m", "rollup_10m", 600 * 1000},
};

/* Per bucket: sample count, and min/max/sum of each measure. */
#define ROLLUP_TABLE(name)                                                     \
	"CREATE TABLE " name " ("                                              \
	" ts_ms INTEGER PRIMARY KEY, n INTEGER NOT NULL,"                      \
	" free_bp_min INTEGER NOT NULL, free_bp_max INTEGER NOT NULL,"         \
	" free_bp_sum INTEGER NOT NULL,"                                       \
	" swap_used_min INTEGER NOT NULL, swap_used_max INTEGER NOT NULL,"     \
	" swap_used_sum INTEGER NOT NULL,"                                     \
	" available_min INTEGER NOT NULL, available_max INTEGER NOT NULL,"     \
	" available_sum INTEGER NOT NULL,"                                     \
	" pressure_max INTEGER NOT NULL);"

/*
 * Schema migrations: entry i brings user_version from i to i + 1. Append
 * only; never edit a released entry.
 */
static const char *const store_migrations[] = {
    /* 1: samples, rollups, markers, jobs, job samples, events */
    "CREATE TABLE samples ("
    " ts_ms INTEGER PRIMARY KEY,"
    " free_bp INTEGER NOT NULL,"
    " available_bytes INTEGER NOT NULL,"
    " swap_used_bytes INTEGER NOT NULL,"
    " pressure INTEGER NOT NULL,"
    " psi_x100 INTEGER,"
    " total_bytes INTEGER,"
    " swap_total_bytes INTEGER,"
    " compressed_bytes INTEGER NOT NULL,"
    " wired_bytes INTEGER NOT NULL);" ROLLUP_TABLE("rollup_10s")
        ROLLUP_TABLE("rollup_1m") ROLLUP_TABLE(
            "rollup_10m") "CREATE TABLE markers ("
                          " id INTEGER PRIMARY KEY,"
                          " ts_ms INTEGER NOT NULL,"
                          " kind TEXT NOT NULL);"
                          "CREATE INDEX markers_ts ON markers(ts_ms);"
                          "CREATE TABLE jobs ("
                          " id INTEGER PRIMARY KEY AUTOINCREMENT,"
                          " queue_seq INTEGER NOT NULL,"
                          " uid INTEGER NOT NULL, gid INTEGER NOT NULL,"
                          " user TEXT, name TEXT, argv TEXT, cwd TEXT, env "
                          "TEXT,"
                          " attached INTEGER NOT NULL,"
                          " priority INTEGER NOT NULL,"
                          " wait_free_pct REAL NOT NULL,"
                          " swap_budget_bytes INTEGER NOT NULL,"
                          " expect_bytes INTEGER NOT NULL,"
                          " exclusive INTEGER NOT NULL,"
                          " retry_on_breach INTEGER NOT NULL,"
                          " attempt INTEGER NOT NULL,"
                          " state TEXT NOT NULL,"
                          " submitted_ms INTEGER NOT NULL, admitted_ms INTEGER "
                          "NOT NULL,"
                          " started_ms INTEGER NOT NULL, ended_ms INTEGER NOT "
                          "NULL,"
                          " pid INTEGER NOT NULL, pgid INTEGER NOT NULL,"
                          " start_time INTEGER NOT NULL, monitor_pid INTEGER "
                          "NOT NULL,"
                          " exit_code INTEGER NOT NULL, term_signal INTEGER "
                          "NOT NULL,"
                          " end_reason TEXT, end_detail TEXT,"
                          " swap_base_bytes INTEGER NOT NULL,"
                          " footprint_bytes INTEGER NOT NULL,"
                          " footprint_peak_bytes INTEGER NOT NULL,"
                          " swap_growth_peak_bytes INTEGER NOT NULL,"
                          " job_swap_bytes INTEGER NOT NULL);"
                          "CREATE INDEX jobs_queue ON jobs(priority DESC, "
                          "queue_seq);"
                          "CREATE INDEX jobs_ended ON jobs(ended_ms);"
                          "CREATE TABLE job_samples ("
                          " job_id INTEGER NOT NULL,"
                          " ts_ms INTEGER NOT NULL,"
                          " footprint_bytes INTEGER NOT NULL,"
                          " swap_bytes INTEGER NOT NULL,"
                          " PRIMARY KEY (job_id, ts_ms)) WITHOUT ROWID;"
                          "CREATE TABLE events ("
                          " id INTEGER PRIMARY KEY AUTOINCREMENT,"
                          " ts_ms INTEGER NOT NULL,"
                          " job_id INTEGER NOT NULL,"
                          " uid INTEGER NOT NULL,"
                          " kind TEXT NOT NULL,"
                          " detail TEXT);"
                          "CREATE INDEX events_job ON events(job_id);",
    /* 2: a detached job's umask, its submitter's. Jobs from before ran
     * with the daemon's, 022 almost always. */
    "ALTER TABLE jobs ADD COLUMN umask INTEGER NOT NULL DEFAULT 18;",
};
#define STORE_SCHEMA_VERSION                                                   \
	((int)(sizeof store_migrations / sizeof store_migrations[0]))

/* The job columns in bind order; ?1..?35, and ?36 is the id for update. */
#define JOB_COLUMNS                                                            \
	"queue_seq, uid, gid, user, name, argv, cwd, env, attached, "          \
	"priority, wait_free_pct, swap_budget_bytes, expect_bytes, "           \
	"exclusive, retry_on_breach, attempt, state, submitted_ms, "           \
	"admitted_ms, started_ms, ended_ms, pid, pgid, start_time, "           \
	"monitor_pid, exit_code, term_signal, end_reason, end_detail, "        \
	"swap_base_bytes, footprint_bytes, footprint_peak_bytes, "             \
	"swap_growth_peak_bytes, job_swap_bytes, umask"
#define JOB_NCOLUMNS 35
#define JOB_ENDED_STATES "('exited','killed','failed','cancelled','lost')"

struct job_sample_rec {
	int64_t job_id;
	int64_t ts_ms;
	uint64_t footprint_bytes;
	uint64_t swap_bytes;
};

/* One rollup bucket being accumulated during a flush. */
struct rollup_acc {
	int64_t ts_ms;
	int64_t n;
	int64_t free_min, free_max, free_sum;
	int64_t swap_min, swap_max, swap_sum;
	int64_t avail_min, avail_max, avail_sum;
	int64_t pressure_max;
};

struct store {
	sqlite3 *db;
	char *path;

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

	sqlite3_stmt *begin, *commit, *rollback;
	sqlite3_stmt *ins_sample, *ins_job_sample;
	sqlite3_stmt *upsert[NTIERS];
	sqlite3_stmt *hist_raw, *hist[NTIERS];
	sqlite3_stmt *first_raw, *first[NTIERS]; /* earliest row of each */
	sqlite3_stmt *start_markers, *ins_marker;
	sqlite3_stmt *latest, *latest_totals;
	sqlite3_stmt *job_ins, *job_seq, *job_upd, *job_get;
	sqlite3_stmt *jobs_unended, *jobs_ended;
	sqlite3_stmt *job_hist_raw, *job_hist;
	sqlite3_stmt *ev_ins, *ev_list;
};

void
store_retention_defaults(struct store_retention *r)
{
	r->raw_ms = 2 * MS_PER_DAY;
	r->t10s_ms = 14 * MS_PER_DAY;
	r->t1m_ms = 90 * MS_PER_DAY;
	r->t10m_ms = 2 * 365 * MS_PER_DAY;
	r->jobs_ms = 90 * MS_PER_DAY;
}

/* Map an sqlite result to a negative errno the caller can reason about. */
static int
store_errno(int rc)
{
	switch (rc & 0xff) {
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return -EBUSY;
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_READONLY:
		return -EROFS;
	case SQLITE_FULL:
		return -ENOSPC;
	case SQLITE_PERM:
	case SQLITE_AUTH:
		return -EACCES;
	case SQLITE_CANTOPEN:
		return -ENOENT;
	case SQLITE_NOTADB:
	case SQLITE_CORRUPT:
	case SQLITE_CONSTRAINT:
	case SQLITE_MISMATCH:
	case SQLITE_RANGE:
		return -EINVAL;
	default:
		return -EIO;
	}
}

static int
store_fail(struct store *s, int rc, const char *what, char *cause,
           size_t causelen)
{
	if (cause != NULL && causelen > 0)
		snprintf(cause, causelen, "%s: %s", what,
		         s->db != NULL ? sqlite3_errmsg(s->db)
		                       : sqlite3_errstr(rc));
	return store_errno(rc);
}

static void store_cause(char *cause, size_t causelen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
store_cause(char *cause, size_t causelen, const char *fmt, ...)
{
	va_list ap;

	if (cause == NULL || causelen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(cause, causelen, fmt, ap);
	va_end(ap);
}

/* Leave no transaction open after a failure, whatever failed. */
static void
store_abort(struct store *s)
{
	if (!sqlite3_get_autocommit(s->db)) {
		sqlite3_reset(s->rollback);
		sqlite3_step(s->rollback);
		sqlite3_reset(s->rollback);
	}
}

static int
store_run(sqlite3_stmt *st)
{
	int rc;

	rc = sqlite3_step(st);
	sqlite3_reset(st);
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? SQLITE_OK : rc;
}

static int64_t
clamp_u64(uint64_t v)
{
	return v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v;
}

static int64_t
floor_to(int64_t v, int64_t step)
{
	int64_t r = v % step;

	return r < 0 ? v - r - step : v - r;
}

static int
store_pragma_int(sqlite3 *db, const char *sql, int64_t *out)
{
	sqlite3_stmt *st;
	int rc;

	rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return rc;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*out = sqlite3_column_int64(st, 0);
		rc = SQLITE_OK;
	} else if (rc == SQLITE_DONE) {
		*out = 0;
		rc = SQLITE_OK;
	}
	sqlite3_finalize(st);
	return rc;
}

/*
 * Refuse a file that is not ours before touching it (switching a foreign
 * database to WAL would already change it).
 */
static int
store_check_identity(struct store *s, char *cause, size_t causelen)
{
	int64_t app_id = 0, version = 0, nobjects = 0;
	int rc;

	if ((rc = store_pragma_int(s->db, "PRAGMA application_id", &app_id)) !=
	        SQLITE_OK ||
	    (rc = store_pragma_int(s->db, "PRAGMA user_version", &version)) !=
	        SQLITE_OK ||
	    (rc = store_pragma_int(s->db, "SELECT count(*) FROM sqlite_master",
	                           &nobjects)) != SQLITE_OK)
		return store_fail(s, rc, "reading the database header", cause,
		                  causelen);
	if (app_id != STORE_APPLICATION_ID &&
	    !(app_id == 0 && version == 0 && nobjects == 0)) {
		store_cause(
		    cause, causelen,
		    "%s is not a stageload database (application_id %#llx, "
		    "%lld schema objects); refusing to modify it",
		    s->path, (long long)(app_id & 0xffffffff),
		    (long long)nobjects);
		return -EINVAL;
	}
	if (version > STORE_SCHEMA_VERSION) {
		store_cause(
		    cause, causelen,
		    "%s has schema version %lld, newer than this build "
		    "understands (%lld); upgrade stageload or use another "
		    "database",
		    s->path, (long long)version,
		    (long long)STORE_SCHEMA_VERSION);
		return -EPROTONOSUPPORT;
	}
	return 0;
}

static int
store_migrate(struct store *s, char *cause, size_t causelen)
{
	char sql[64], what[64];
	int64_t version = 0;
	int rc;

	/* Up to date: no write lock needed to open. */
	rc = store_pragma_int(s->db, "PRAGMA user_version", &version);
	if (rc == SQLITE_OK && version == STORE_SCHEMA_VERSION)
		return 0;
	rc = sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
	if (rc != SQLITE_OK)
		return store_fail(s, rc, "starting the migration", cause,
		                  causelen);
	/* Read again under the write lock: another opener may have won. */
	rc = store_pragma_int(s->db, "PRAGMA user_version", &version);
	if (rc != SQLITE_OK) {
		rc = store_fail(s, rc, "reading user_version", cause, causelen);
		goto fail;
	}
	if (version > STORE_SCHEMA_VERSION) {
		store_cause(cause, causelen,
		            "%s has schema version %lld, newer than this build "
		            "understands (%lld)",
		            s->path, (long long)version,
		            (long long)STORE_SCHEMA_VERSION);
		rc = -EPROTONOSUPPORT;
		goto fail;
	}
	for (; version < STORE_SCHEMA_VERSION; version++) {
		rc = sqlite3_exec(s->db, store_migrations[version], NULL, NULL,
		                  NULL);
		if (rc != SQLITE_OK) {
			snprintf(what, sizeof what, "migration to version %lld",
			         (long long)version + 1);
			rc = store_fail(s, rc, what, cause, causelen);
			goto fail;
		}
	}
	snprintf(sql, sizeof sql, "PRAGMA application_id = %d",
	         STORE_APPLICATION_ID);
	if ((rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL)) != SQLITE_OK) {
		rc = store_fail(s, rc, "setting application_id", cause,
		                causelen);
		goto fail;
	}
	snprintf(sql, sizeof sql, "PRAGMA user_version = %d",
	         STORE_SCHEMA_VERSION);
	if ((rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL)) != SQLITE_OK) {
		rc = store_fail(s, rc, "setting user_version", cause, causelen);
		goto fail;
	}
	rc = sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
	if (rc != SQLITE_OK) {
		rc = store_fail(s, rc, "committing the migration", cause,
		                causelen);
		goto fail;
	}
	return 0;
fail:
	sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

static int
store_prepare(struct store *s, sqlite3_stmt **st, const char *sql, char *cause,
              size_t causelen)
{
	int rc;

	rc = sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, st,
	                        NULL);
	if (rc != SQLITE_OK)
		return store_fail(s, rc, "preparing a statement", cause,
		                  causelen);
	return 0;
}

static int
store_prepare_all(struct store *s, char *cause, size_t causelen)
{
	char sql[1024];
	int i, rc;

#define PREP(st, q)                                                            \
	do {                                                                   \
		if ((rc = store_prepare(s, &(st), (q), cause, causelen)) != 0) \
			return rc;                                             \
	} while (0)

	PREP(s->begin, "BEGIN IMMEDIATE");
	PREP(s->commit, "COMMIT");
	PREP(s->rollback, "ROLLBACK");
	PREP(s->ins_sample,
	     "INSERT OR IGNORE INTO samples (ts_ms, free_bp, available_bytes,"
	     " swap_used_bytes, pressure, psi_x100, total_bytes,"
	     " swap_total_bytes, compressed_bytes, wired_bytes)"
	     " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)");
	PREP(s->ins_job_sample,
	     "INSERT OR IGNORE INTO job_samples (job_id, ts_ms,"
	     " footprint_bytes, swap_bytes) VALUES (?1, ?2, ?3, ?4)");
	for (i = 0; i < NTIERS; i++) {
		snprintf(
		    sql, sizeof sql,
		    "INSERT INTO %s VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8,"
		    " ?9, ?10, ?11, ?12) ON CONFLICT (ts_ms) DO UPDATE SET"
		    " n = n + excluded.n,"
		    " free_bp_min = min(free_bp_min, excluded.free_bp_min),"
		    " free_bp_max = max(free_bp_max, excluded.free_bp_max),"
		    " free_bp_sum = free_bp_sum + excluded.free_bp_sum,"
		    " swap_used_min = min(swap_used_min, "
		    "excluded.swap_used_min),"
		    " swap_used_max = max(swap_used_max, "
		    "excluded.swap_used_max),"
		    " swap_used_sum = swap_used_sum + excluded.swap_used_sum,"
		    " available_min = min(available_min, "
		    "excluded.available_min),"
		    " available_max = max(available_max, "
		    "excluded.available_max),"
		    " available_sum = available_sum + excluded.available_sum,"
		    " pressure_max = max(pressure_max, excluded.pressure_max)",
		    store_tiers[i].table);
		PREP(s->upsert[i], sql);
		/* Rows in time order straight from the rowid b-tree;
		 * store_history buckets them (see there). */
		snprintf(sql, sizeof sql,
		         "SELECT ts_ms, n, free_bp_min, free_bp_max,"
		         " free_bp_sum, swap_used_min, swap_used_max,"
		         " swap_used_sum, available_min, available_max,"
		         " available_sum, pressure_max"
		         " FROM %s WHERE ts_ms >= ?1 AND ts_ms < ?2"
		         " ORDER BY ts_ms",
		         store_tiers[i].table);
		PREP(s->hist[i], sql);
		snprintf(sql, sizeof sql, "SELECT min(ts_ms) FROM %s",
		         store_tiers[i].table);
		PREP(s->first[i], sql);
	}
	PREP(s->first_raw, "SELECT min(ts_ms) FROM samples");
	/* Raw rows in the same shape: each sample a bucket of one. */
	PREP(s->hist_raw, "SELECT ts_ms, 1, free_bp, free_bp, free_bp,"
	                  " swap_used_bytes, swap_used_bytes, swap_used_bytes,"
	                  " available_bytes, available_bytes, available_bytes,"
	                  " pressure FROM samples"
	                  " WHERE ts_ms >= ?1 AND ts_ms < ?2 ORDER BY ts_ms");
	PREP(s->start_markers,
	     "SELECT ts_ms FROM markers WHERE kind = 'start'"
	     " AND ts_ms >= ?1 AND ts_ms < ?2 ORDER BY ts_ms");
	PREP(s->ins_marker,
	     "INSERT INTO markers (ts_ms, kind) VALUES (?1, ?2)");
	PREP(s->latest,
	     "SELECT ts_ms, free_bp, available_bytes, swap_used_bytes,"
	     " pressure, psi_x100, compressed_bytes, wired_bytes"
	     " FROM samples ORDER BY ts_ms DESC LIMIT 1");
	PREP(s->latest_totals,
	     "SELECT total_bytes, swap_total_bytes FROM samples"
	     " WHERE total_bytes IS NOT NULL ORDER BY ts_ms DESC LIMIT 1");
	PREP(s->job_ins, "INSERT INTO jobs (" JOB_COLUMNS ") VALUES (?1, ?2,"
	                 " ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13,"
	                 " ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23,"
	                 " ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31, ?32, ?33,"
	                 " ?34, ?35)");
	PREP(s->job_seq, "UPDATE jobs SET queue_seq = id WHERE id = ?1");
	PREP(s->job_upd,
	     "UPDATE jobs SET (" JOB_COLUMNS ") = (?1, ?2, ?3, ?4, ?5, ?6,"
	     " ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19,"
	     " ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31,"
	     " ?32, ?33, ?34, ?35) WHERE id = ?36");
	PREP(s->job_get, "SELECT id, " JOB_COLUMNS " FROM jobs WHERE id = ?1");
	PREP(s->jobs_unended, "SELECT id, " JOB_COLUMNS
	                      " FROM jobs WHERE state NOT IN " JOB_ENDED_STATES
	                      " ORDER BY priority DESC, queue_seq, id");
	PREP(s->jobs_ended,
	     "SELECT id, " JOB_COLUMNS " FROM jobs WHERE state IN"
	     " " JOB_ENDED_STATES " ORDER BY ended_ms DESC, id DESC LIMIT ?1");
	PREP(s->job_hist_raw,
	     "SELECT ts_ms, footprint_bytes, footprint_bytes, footprint_bytes,"
	     " swap_bytes, swap_bytes, swap_bytes, 1 FROM job_samples"
	     " WHERE job_id = ?1 AND ts_ms BETWEEN ?3 AND ?4 ORDER BY ts_ms");
	PREP(s->job_hist,
	     "SELECT (ts_ms / ?2) * ?2 AS b, min(footprint_bytes),"
	     " total(footprint_bytes) / count(*), max(footprint_bytes),"
	     " min(swap_bytes), total(swap_bytes) / count(*), max(swap_bytes),"
	     " count(*) FROM job_samples WHERE job_id = ?1"
	     " AND ts_ms BETWEEN ?3 AND ?4 GROUP BY b ORDER BY b");
	PREP(s->ev_ins, "INSERT INTO events (ts_ms, job_id, uid, kind, detail)"
	                " VALUES (?1, ?2, ?3, ?4, ?5)");
	PREP(s->ev_list, "SELECT id, ts_ms, job_id, uid, kind, detail"
	                 " FROM events WHERE id > ?1 ORDER BY id LIMIT ?2");
#undef PREP
	return 0;
}

/*
 * The database holds jobs' argv and environment, which only their owners
 * may read: create it private. sqlite gives -wal and -shm the same mode.
 */
static int
store_create_private(const char *path, char *cause, size_t causelen)
{
	int fd, rc;

	if (path[0] == ':' || strncmp(path, "file:", 5) == 0)
		return 0;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	          0600);
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	if (errno == EEXIST)
		return 0;
	rc = -errno;
	store_cause(cause, causelen, "creating %s: %s", path, strerror(-rc));
	return rc;
}

/* Readers never block the writer, and commits need no fsync (the WAL is
 * synced at checkpoints): the daemon loses at most the last commits on
 * power loss, never consistency. */
static int
store_wal(struct store *s, char *cause, size_t causelen)
{
	sqlite3_stmt *st;
	const char *mode;
	int rc;

	rc = sqlite3_prepare_v2(s->db, "PRAGMA journal_mode = WAL", -1, &st,
	                        NULL);
	if (rc != SQLITE_OK)
		return store_fail(s, rc, "setting WAL mode", cause, causelen);
	rc = sqlite3_step(st);
	mode =
	    rc == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : NULL;
	if (mode == NULL || strcmp(mode, "wal") != 0) {
		store_cause(cause, causelen, "switching %s to WAL mode: %s",
		            s->path,
		            mode != NULL ? mode : sqlite3_errmsg(s->db));
		sqlite3_finalize(st);
		return -EIO;
	}
	sqlite3_finalize(st);
	return 0;
}

int
store_open(struct store **sp, const char *path, char *cause, size_t causelen)
{
	struct store *s;
	int rc;

	*sp = NULL;
	if ((s = calloc(1, sizeof *s)) == NULL)
		return -ENOMEM;
	s->scap = STORE_SAMPLE_CAP;
	s->jcap = STORE_JOB_SAMPLE_CAP;
	s->path = strdup(path);
	s->sbuf = calloc(s->scap, sizeof *s->sbuf);
	s->jbuf = calloc(s->jcap, sizeof *s->jbuf);
	s->written_total = s->written_swap_total = -1;
	s->written_totals_ms = 0;
	if (s->path == NULL || s->sbuf == NULL || s->jbuf == NULL) {
		rc = -ENOMEM;
		goto fail;
	}
	if ((rc = store_create_private(path, cause, causelen)) != 0)
		goto fail;
	/* One thread (the event loop) uses the connection: no mutexes. */
	rc = sqlite3_open_v2(path, &s->db,
	                     SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
	                         SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_URI |
	                         SQLITE_OPEN_NOMUTEX,
	                     NULL);
	if (rc != SQLITE_OK) {
		store_cause(cause, causelen, "opening %s: %s", path,
		            s->db != NULL ? sqlite3_errmsg(s->db)
		                          : sqlite3_errstr(rc));
		rc = store_errno(rc);
		goto fail;
	}
	sqlite3_extended_result_codes(s->db, 0);
	sqlite3_busy_timeout(s->db, STORE_BUSY_TIMEOUT_MS);
	if ((rc = store_check_identity(s, cause, causelen)) != 0)
		goto fail;
	/* sqlite quietly opens a write-protected file read-only; every
	 * later write would fail, so say it now. */
	if (sqlite3_db_readonly(s->db, "main") == 1) {
		store_cause(
		    cause, causelen,
		    "%s is read-only for this user; the daemon needs to write "
		    "it (and its -wal and -shm files)",
		    path);
		rc = -EROFS;
		goto fail;
	}

	if ((rc = store_wal(s, cause, causelen)) != 0)
		goto fail;
	/* The WAL shrinks back to 4 MiB after a checkpoint resets it. */
	rc = sqlite3_exec(s->db,
	                  "PRAGMA synchronous = NORMAL;"
	                  "PRAGMA journal_size_limit = 4194304;",
	                  NULL, NULL, NULL);
	if (rc != SQLITE_OK) {
		rc = store_fail(s, rc, "setting pragmas", cause, causelen);
		goto fail;
	}
	if ((rc = store_migrate(s, cause, causelen)) != 0)
		goto fail;
	if ((rc = store_prepare_all(s, cause, causelen)) != 0)
		goto fail;
	*sp = s;
	return 0;
fail:
	store_close(s);
	return rc;
}

void
store_close(struct store *s)
{
	sqlite3_stmt *st;

	if (s == NULL)
		return;
	if (s->db != NULL) {
		/* Statements are finalized by walking the connection's list
		 * so none is forgotten. */
		while ((st = sqlite3_next_stmt(s->db, NULL)) != NULL)
			sqlite3_finalize(st);
		sqlite3_close(s->db);
	}
	free(s->sbuf);
	free(s->jbuf);
	free(s->path);
	free(s);
}

void
store_add_sample(struct store *s, const struct sys_sample *ss)
{
	if (s->slen == s->scap) {
		/* Storage has been failing for a long time: keep the most
		 * recent history rather than the oldest. */
		s->shead = (s->shead + 1) % s->scap;
		s->slen--;
		s->dropped++;
	}
	s->sbuf[(s->shead + s->slen) % s->scap] = *ss;
	s->slen++;
	s->last = *ss;
	s->have_last = 1;
}

void
store_add_job_sample(struct store *s, int64_t job_id, int64_t ts_ms,
                     uint64_t footprint_bytes, uint64_t swap_bytes)
{
	struct job_sample_rec *r;

	if (s->jlen == s->jcap) {
		s->jhead = (s->jhead + 1) % s->jcap;
		s->jlen--;
		s->dropped++;
	}
	r = &s->jbuf[(s->jhead + s->jlen) % s->jcap];
	r->job_id = job_id;
	r->ts_ms = ts_ms;
	r->footprint_bytes = footprint_bytes;
	r->swap_bytes = swap_bytes;
	s->jlen++;
}

size_t
store_pending(struct store *s)
{
	return s->slen + s->jlen;
}

uint64_t
store_dropped(struct store *s)
{
	return s->dropped;
}

/* Round a non-negative measure to an integer (no libm needed). */
static int64_t
round_pos(double v)
{
	return (int64_t)(v + 0.5);
}

static int64_t
store_free_bp(double free_pct)
{
	if (!(free_pct > 0)) /* also NaN */
		return 0;
	if (free_pct >= 100)
		return 10000;
	return round_pos(free_pct * 100);
}

static void
rollup_add(struct rollup_acc *a, int64_t bucket_ms, int64_t free_bp,
           int64_t swap, int64_t avail, int64_t pressure)
{
	if (a->n == 0) {
		a->ts_ms = bucket_ms;
		a->free_min = a->free_max = free_bp;
		a->swap_min = a->swap_max = swap;
		a->avail_min = a->avail_max = avail;
		a->pressure_max = pressure;
		a->free_sum = a->swap_sum = a->avail_sum = 0;
	}
	a->n++;
	if (free_bp < a->free_min)
		a->free_min = free_bp;
	if (free_bp > a->free_max)
		a->free_max = free_bp;
	if (swap < a->swap_min)
		a->swap_min = swap;
	if (swap > a->swap_max)
		a->swap_max = swap;
	if (avail < a->avail_min)
		a->avail_min = avail;
	if (avail > a->avail_max)
		a->avail_max = avail;
	if (pressure > a->pressure_max)
		a->pressure_max = pressure;
	a->free_sum += free_bp;
	a->swap_sum += swap;
	a->avail_sum += avail;
}

/* Merge an accumulated bucket into its tier table. */
static int
rollup_emit(struct store *s, int tier, struct rollup_acc *a)
{
	sqlite3_stmt *st = s->upsert[tier];
	int rc;

	if (a->n == 0)
		return SQLITE_OK;
	sqlite3_bind_int64(st, 1, a->ts_ms);
	sqlite3_bind_int64(st, 2, a->n);
	sqlite3_bind_int64(st, 3, a->free_min);
	sqlite3_bind_int64(st, 4, a->free_max);
	sqlite3_bind_int64(st, 5, a->free_sum);
	sqlite3_bind_int64(st, 6, a->swap_min);
	sqlite3_bind_int64(st, 7, a->swap_max);
	sqlite3_bind_int64(st, 8, a->swap_sum);
	sqlite3_bind_int64(st, 9, a->avail_min);
	sqlite3_bind_int64(st, 10, a->avail_max);
	sqlite3_bind_int64(st, 11, a->avail_sum);
	sqlite3_bind_int64(st, 12, a->pressure_max);
	rc = store_run(st);
	a->n = 0;
	return rc;
}

/* Insert one buffered sample; *inserted is 0 for a duplicate timestamp. */
static int
store_insert_sample(struct store *s, const struct sys_sample *ss, int *inserted)
{
	sqlite3_stmt *st = s->ins_sample;
	int64_t total = clamp_u64(ss->total_bytes);
	int64_t swap_total = clamp_u64(ss->swap_total_bytes);
	int with_totals, rc;

	/* Totals rarely change: store them when they do, on the first row
	 * after open, and hourly, so the latest value is never far back. */
	with_totals = total != s->written_total ||
	              swap_total != s->written_swap_total ||
	              ss->ts_ms < s->written_totals_ms ||
	              ss->ts_ms - s->written_totals_ms >= STORE_TOTALS_EVERY_MS;
	sqlite3_bind_int64(st, 1, ss->ts_ms);
	sqlite3_bind_int64(st, 2, store_free_bp(ss->free_pct));
	sqlite3_bind_int64(st, 3, clamp_u64(ss->available_bytes));
	sqlite3_bind_int64(st, 4, clamp_u64(ss->swap_used_bytes));
	sqlite3_bind_int(st, 5, (int)ss->pressure);
	if (ss->psi_some_avg10 >= 0)
		sqlite3_bind_int64(st, 6, round_pos(ss->psi_some_avg10 * 100));
	else
		sqlite3_bind_null(st, 6);
	if (with_totals) {
		sqlite3_bind_int64(st, 7, total);
		sqlite3_bind_int64(st, 8, swap_total);
	} else {
		sqlite3_bind_null(st, 7);
		sqlite3_bind_null(st, 8);
	}
	sqlite3_bind_int64(st, 9, clamp_u64(ss->compressed_bytes));
	sqlite3_bind_int64(st, 10, clamp_u64(ss->wired_bytes));
	rc = store_run(st);
	*inserted = rc == SQLITE_OK && sqlite3_changes(s->db) > 0;
	if (*inserted && with_totals) {
		s->written_total = total;
		s->written_swap_total = swap_total;
		s->written_totals_ms = ss->ts_ms;
	}
	return rc;
}

int
store_flush(struct store *s, char *cause, size_t causelen)
{
	struct rollup_acc acc[NTIERS];
	int64_t saved_total = s->written_total;
	int64_t saved_swap_total = s->written_swap_total;
	int64_t saved_totals_ms = s->written_totals_ms;
	const char *what = "beginning the transaction";
	size_t i;
	int t, rc, inserted;

	if (s->slen == 0 && s->jlen == 0)
		return 0;
	memset(acc, 0, sizeof acc);
	if ((rc = store_run(s->begin)) != SQLITE_OK)
		goto fail;
	for (i = 0; i < s->slen; i++) {
		const struct sys_sample *ss =
		    &s->sbuf[(s->shead + i) % s->scap];
		int64_t free_bp, swap, avail;

		what = "inserting a sample";
		rc = store_insert_sample(s, ss, &inserted);
		if (rc != SQLITE_OK)
			goto fail;
		if (!inserted)
			continue; /* the same instant twice: count it once */
		free_bp = store_free_bp(ss->free_pct);
		swap = clamp_u64(ss->swap_used_bytes);
		avail = clamp_u64(ss->available_bytes);
		what = "updating a rollup";
		for (t = 0; t < NTIERS; t++) {
			int64_t b = floor_to(ss->ts_ms, store_tiers[t].res_ms);

			if (acc[t].n > 0 && acc[t].ts_ms != b &&
			    (rc = rollup_emit(s, t, &acc[t])) != SQLITE_OK)
				goto fail;
			rollup_add(&acc[t], b, free_bp, swap, avail,
			           ss->pressure);
		}
	}
	what = "updating a rollup";
	for (t = 0; t < NTIERS; t++)
		if ((rc = rollup_emit(s, t, &acc[t])) != SQLITE_OK)
			goto fail;
	what = "inserting a job sample";
	for (i = 0; i < s->jlen; i++) {
		const struct job_sample_rec *r =
		    &s->jbuf[(s->jhead + i) % s->jcap];
		sqlite3_stmt *st = s->ins_job_sample;

		sqlite3_bind_int64(st, 1, r->job_id);
		sqlite3_bind_int64(st, 2, r->ts_ms);
		sqlite3_bind_int64(st, 3, clamp_u64(r->footprint_bytes));
		sqlite3_bind_int64(st, 4, clamp_u64(r->swap_bytes));
		if ((rc = store_run(st)) != SQLITE_OK)
			goto fail;
	}
	what = "committing samples";
	if ((rc = store_run(s->commit)) != SQLITE_OK)
		goto fail;
	s->shead = s->slen = 0;
	s->jhead = s->jlen = 0;
	return 0;
fail:
	rc = store_fail(s, rc, what, cause, causelen);
	store_abort(s);
	/* The rows carrying totals were rolled back too. */
	s->written_total = saved_total;
	s->written_swap_total = saved_swap_total;
	s->written_totals_ms = saved_totals_ms;
	return rc;
}

int
store_checkpoint(struct store *s)
{
	int rc;

	rc = sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_PASSIVE,
	                               NULL, NULL);
	return rc == SQLITE_OK ? 0 : store_errno(rc);
}

static int
store_exec_cut(struct store *s, const char *sql, int64_t cut)
{
	sqlite3_stmt *st;
	int rc;

	rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return rc;
	sqlite3_bind_int64(st, 1, cut);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

int
store_prune(struct store *s, int64_t now_ms, const struct store_retention *r,
            char *cause, size_t causelen)
{
	static const char *const tier_delete[NTIERS] = {
	    "DELETE FROM rollup_10s WHERE ts_ms < ?1",
	    "DELETE FROM rollup_1m WHERE ts_ms < ?1",
	    "DELETE FROM rollup_10m WHERE ts_ms < ?1",
	};
	const int64_t tier_keep[NTIERS] = {r->t10s_ms, r->t1m_ms, r->t10m_ms};
	int64_t longest = r->raw_ms;
	int t, rc;

	/* Prune runs rarely (hourly), so its SQL is prepared on the spot. */
	if ((rc = store_run(s->begin)) != SQLITE_OK)
		goto fail;
	if (r->raw_ms > 0 &&
	    (rc = store_exec_cut(s, "DELETE FROM samples WHERE ts_ms < ?1",
	                         now_ms - r->raw_ms)) != SQLITE_OK)
		goto fail;
	for (t = 0; t < NTIERS; t++) {
		if (tier_keep[t] <= 0) {
			longest = 0;
			continue;
		}
		if (longest > 0 && tier_keep[t] > longest)
			longest = tier_keep[t];
		if ((rc = store_exec_cut(s, tier_delete[t],
		                         now_ms - tier_keep[t])) != SQLITE_OK)
			goto fail;
	}
	/* Markers matter as long as any tier can show their gap. */
	if (longest > 0 && r->raw_ms > 0 &&
	    (rc = store_exec_cut(s, "DELETE FROM markers WHERE ts_ms < ?1",
	                         now_ms - longest)) != SQLITE_OK)
		goto fail;
	if (r->jobs_ms > 0) {
		int64_t cut = now_ms - r->jobs_ms;

		if ((rc = store_exec_cut(
		         s,
		         "DELETE FROM job_samples WHERE job_id IN"
		         " (SELECT id FROM jobs WHERE state "
		         "IN " JOB_ENDED_STATES " AND ended_ms < ?1)",
		         cut)) != SQLITE_OK ||
		    (rc = store_exec_cut(s,
		                         "DELETE FROM events WHERE job_id IN"
		                         " (SELECT id FROM jobs WHERE state "
		                         "IN " JOB_ENDED_STATES
		                         " AND ended_ms < ?1)"
		                         " OR (job_id = 0 AND ts_ms < ?1)",
		                         cut)) != SQLITE_OK ||
		    (rc = store_exec_cut(
		         s,
		         "DELETE FROM jobs WHERE state IN " JOB_ENDED_STATES
		         " AND ended_ms < ?1",
		         cut)) != SQLITE_OK)
			goto fail;
	}
	if ((rc = store_run(s->commit)) != SQLITE_OK)
		goto fail;
	return 0;
fail:
	rc = store_fail(s, rc, "pruning", cause, causelen);
	store_abort(s);
	return rc;
}

int
store_jobs_expiring(struct store *s, int64_t now_ms,
                    const struct store_retention *r,
                    void (*cb)(void *arg, int64_t id), void *arg)
{
	sqlite3_stmt *st;
	int rc;

	if (r->jobs_ms <= 0)
		return 0;
	rc = sqlite3_prepare_v2(
	    s->db,
	    "SELECT id FROM jobs WHERE state IN " JOB_ENDED_STATES
	    " AND ended_ms < ?1",
	    -1, &st, NULL);
	if (rc != SQLITE_OK)
		return store_errno(rc);
	sqlite3_bind_int64(st, 1, now_ms - r->jobs_ms);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		cb(arg, sqlite3_column_int64(st, 0));
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : store_errno(rc);
}

int
store_mark(struct store *s, int64_t ts_ms, const char *kind, char *cause,
           size_t causelen)
{
	int rc;

	sqlite3_bind_int64(s->ins_marker, 1, ts_ms);
	sqlite3_bind_text(s->ins_marker, 2, kind, -1, SQLITE_TRANSIENT);
	rc = store_run(s->ins_marker);
	sqlite3_clear_bindings(s->ins_marker);
	if (rc != SQLITE_OK)
		return store_fail(s, rc, "writing a marker", cause, causelen);
	return 0;
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
store_first_ts(struct store *s, int t)
{
	sqlite3_stmt *st = t < 0 ? s->first_raw : s->first[t];
	int64_t v = INT64_MAX;

	if (sqlite3_step(st) == SQLITE_ROW &&
	    sqlite3_column_type(st, 0) != SQLITE_NULL)
		v = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	return v;
}

int
store_history(struct store *s, int64_t since_ms, int64_t until_ms,
              int64_t step_ms, const char **tier, struct history_bucket **out,
              size_t *n, char *cause, size_t causelen)
{
	struct history_bucket *buf = NULL, *b, *nb;
	sqlite3_stmt *st;
	size_t len = 0, cap, i;
	int64_t lower = since_ms, res_ms, est, first;
	const char *name;
	int t, u, rc;

	*out = NULL;
	*n = 0;
	if (step_ms <= 0 || until_ms < since_ms) {
		store_cause(
		    cause, causelen,
		    "history: bad range (since %lld, until %lld, step %lld ms)",
		    (long long)since_ms, (long long)until_ms,
		    (long long)step_ms);
		return -EINVAL;
	}
	name = store_tier_for_step(step_ms, &res_ms);
	for (t = NTIERS - 1; t >= 0 && store_tiers[t].res_ms != res_ms; t--)
		;
	/*
	 * Finer tiers are pruned sooner: when this one's rows begin after
	 * since, the next coarser ones that reach further back answer
	 * instead, until one reaches since (further back by more than its
	 * resolution: its first row covers a bucket that may start before
	 * the first sample without holding anything older).
	 */
	first = store_first_ts(s, t);
	for (u = t + 1; u < NTIERS && since_ms < first; u++) {
		int64_t f = store_first_ts(s, u);

		if (f <= first - store_tiers[u].res_ms) {
			t = u;
			first = f;
			name = store_tiers[t].name;
		}
	}
	if (tier != NULL)
		*tier = name;
	st = t < 0 ? s->hist_raw : s->hist[t];
	/* Whole buckets only: the first one starts at since rounded down. */
	lower = floor_to(since_ms, step_ms);
	est = (until_ms - lower) / step_ms + 2;
	if (est > STORE_HISTORY_MAX + 2) {
		store_cause(
		    cause, causelen,
		    "history: %lld buckets asked for, at most %lld; use a "
		    "larger step",
		    (long long)est - 2, (long long)STORE_HISTORY_MAX);
		return -E2BIG;
	}
	cap = (size_t)est;
	if ((buf = malloc(cap * sizeof *buf)) == NULL)
		return -ENOMEM;
	/*
	 * Bucketing happens here rather than in a GROUP BY on the computed
	 * bucket: sqlite cannot tell that bucket follows ts_ms, so it sorts
	 * through a temporary b-tree, about 20 times slower than this one
	 * ordered pass (7 ms against 0.3 ms for a day of 1 min rows).
	 */
	sqlite3_bind_int64(st, 1, lower);
	sqlite3_bind_int64(st, 2, until_ms);
	b = NULL;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t ts = floor_to(sqlite3_column_int64(st, 0), step_ms);
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
		return store_fail(s, rc, "reading history", cause, causelen);
	}
	for (i = 0; i < len; i++) {
		buf[i].free_pct_avg /= 100.0 * (double)buf[i].n;
		buf[i].swap_used_avg /= (double)buf[i].n;
		buf[i].available_avg /= (double)buf[i].n;
	}

	/* A start marker means nothing was sampled between it and the
	 * previous stop: flag the first bucket that ends after it. */
	st = s->start_markers;
	sqlite3_bind_int64(st, 1, lower);
	sqlite3_bind_int64(st, 2, until_ms);
	i = 0;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t m = sqlite3_column_int64(st, 0);

		while (i < len && buf[i].ts_ms + step_ms <= m)
			i++;
		if (i < len)
			buf[i].gap_before = 1;
	}
	sqlite3_reset(st);
	if (rc != SQLITE_DONE) {
		free(buf);
		return store_fail(s, rc, "reading markers", cause, causelen);
	}
	*out = buf;
	*n = len;
	return 0;
}

int
store_job_history(struct store *s, int64_t job_id, int64_t since_ms,
                  int64_t until_ms, int64_t step_ms, struct job_bucket **out,
                  size_t *n, char *cause, size_t causelen)
{
	struct job_bucket *buf = NULL, *nb, *b;
	int64_t lo = since_ms, hi = until_ms;
	size_t len = 0, cap = 0;
	sqlite3_stmt *st;
	int rc;

	*out = NULL;
	*n = 0;
	if (step_ms < 0 || since_ms < 0) {
		store_cause(cause, causelen,
		            "job history: bad step %lld ms or since %lld",
		            (long long)step_ms, (long long)since_ms);
		return -EINVAL;
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
	st = step_ms == 0 ? s->job_hist_raw : s->job_hist;
	sqlite3_bind_int64(st, 1, job_id);
	if (step_ms > 0)
		sqlite3_bind_int64(st, 2, step_ms);
	sqlite3_bind_int64(st, 3, lo);
	sqlite3_bind_int64(st, 4, hi);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (len == STORE_HISTORY_MAX) {
			sqlite3_reset(st);
			free(buf);
			store_cause(cause, causelen,
			            "job history: more than %lld buckets; "
			            "use a larger step",
			            (long long)STORE_HISTORY_MAX);
			return -E2BIG;
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
		return store_fail(s, rc, "reading job history", cause,
		                  causelen);
	}
	*out = buf;
	*n = len;
	return 0;
}

int
store_latest(struct store *s, struct sys_sample *out)
{
	sqlite3_stmt *st = s->latest;
	int rc;

	if (s->have_last) {
		*out = s->last;
		return 0;
	}
	memset(out, 0, sizeof *out);
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		sqlite3_reset(st);
		return rc == SQLITE_DONE ? 1 : store_errno(rc);
	}
	out->ts_ms = sqlite3_column_int64(st, 0);
	out->free_pct = sqlite3_column_int64(st, 1) / 100.0;
	out->available_bytes = (uint64_t)sqlite3_column_int64(st, 2);
	out->swap_used_bytes = (uint64_t)sqlite3_column_int64(st, 3);
	out->pressure = (enum pressure_level)sqlite3_column_int(st, 4);
	out->psi_some_avg10 = sqlite3_column_type(st, 5) == SQLITE_NULL
	                          ? -1
	                          : sqlite3_column_int64(st, 5) / 100.0;
	out->compressed_bytes = (uint64_t)sqlite3_column_int64(st, 6);
	out->wired_bytes = (uint64_t)sqlite3_column_int64(st, 7);
	sqlite3_reset(st);
	st = s->latest_totals;
	if ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		out->total_bytes = (uint64_t)sqlite3_column_int64(st, 0);
		out->swap_total_bytes = (uint64_t)sqlite3_column_int64(st, 1);
	}
	sqlite3_reset(st);
	return 0;
}

/* argv and env are stored as JSON arrays so dashboards can json_extract
 * them; NULL stays NULL. */
static char *
store_strv_json(char *const *v)
{
	cJSON *a;
	char *text;

	if (v == NULL)
		return NULL;
	if ((a = cJSON_CreateArray()) == NULL)
		return NULL;
	for (; *v != NULL; v++) {
		cJSON *str = cJSON_CreateString(*v);

		if (str == NULL) {
			cJSON_Delete(a);
			return NULL;
		}
		cJSON_AddItemToArray(a, str);
	}
	text = cJSON_PrintUnformatted(a);
	cJSON_Delete(a);
	return text;
}

static char **
store_json_strv(const char *text, int *err)
{
	cJSON *a, *it;
	char **v;
	size_t i = 0;
	int count;

	*err = 0;
	if (text == NULL)
		return NULL;
	if ((a = cJSON_Parse(text)) == NULL || !cJSON_IsArray(a)) {
		cJSON_Delete(a);
		*err = -EINVAL;
		return NULL;
	}
	count = cJSON_GetArraySize(a);
	if ((v = calloc((size_t)count + 1, sizeof *v)) == NULL) {
		cJSON_Delete(a);
		*err = -ENOMEM;
		return NULL;
	}
	cJSON_ArrayForEach(it, a)
	{
		if (!cJSON_IsString(it) ||
		    (v[i] = strdup(it->valuestring)) == NULL) {
			while (i > 0)
				free(v[--i]);
			free(v);
			cJSON_Delete(a);
			*err = -ENOMEM;
			return NULL;
		}
		i++;
	}
	cJSON_Delete(a);
	return v;
}

static void
bind_text_or_null(sqlite3_stmt *st, int i, const char *text)
{
	if (text == NULL)
		sqlite3_bind_null(st, i);
	else
		sqlite3_bind_text(st, i, text, -1, SQLITE_TRANSIENT);
}

static int
store_job_bind(sqlite3_stmt *st, const struct job *j)
{
	char *argv = NULL, *env = NULL;

	if (j->argv != NULL && (argv = store_strv_json(j->argv)) == NULL)
		return -ENOMEM;
	if (j->env != NULL && (env = store_strv_json(j->env)) == NULL) {
		cJSON_free(argv);
		return -ENOMEM;
	}
	sqlite3_bind_int64(st, 1, j->queue_seq);
	sqlite3_bind_int64(st, 2, (int64_t)j->uid);
	sqlite3_bind_int64(st, 3, (int64_t)j->gid);
	bind_text_or_null(st, 4, j->user);
	bind_text_or_null(st, 5, j->name);
	bind_text_or_null(st, 6, argv);
	bind_text_or_null(st, 7, j->cwd);
	bind_text_or_null(st, 8, env);
	sqlite3_bind_int(st, 9, j->attached);
	sqlite3_bind_int(st, 10, j->priority);
	sqlite3_bind_double(st, 11, j->wait_free_pct);
	sqlite3_bind_int64(st, 12, (int64_t)j->swap_budget_bytes);
	sqlite3_bind_int64(st, 13, (int64_t)j->expect_bytes);
	sqlite3_bind_int(st, 14, j->exclusive);
	sqlite3_bind_int(st, 15, j->retry_on_breach);
	sqlite3_bind_int(st, 16, j->attempt);
	sqlite3_bind_text(st, 17, job_state_name(j->state), -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 18, j->submitted_ms);
	sqlite3_bind_int64(st, 19, j->admitted_ms);
	sqlite3_bind_int64(st, 20, j->started_ms);
	sqlite3_bind_int64(st, 21, j->ended_ms);
	sqlite3_bind_int64(st, 22, (int64_t)j->pid);
	sqlite3_bind_int64(st, 23, (int64_t)j->pgid);
	/* uint64 values are stored bit for bit in sqlite's int64. */
	sqlite3_bind_int64(st, 24, (int64_t)j->start_time);
	sqlite3_bind_int64(st, 25, (int64_t)j->monitor_pid);
	sqlite3_bind_int(st, 26, j->exit_code);
	sqlite3_bind_int(st, 27, j->term_signal);
	bind_text_or_null(st, 28, j->end_reason);
	bind_text_or_null(st, 29, j->end_detail);
	sqlite3_bind_int64(st, 30, (int64_t)j->swap_base_bytes);
	sqlite3_bind_int64(st, 31, (int64_t)j->footprint_bytes);
	sqlite3_bind_int64(st, 32, (int64_t)j->footprint_peak_bytes);
	sqlite3_bind_int64(st, 33, (int64_t)j->swap_growth_peak_bytes);
	sqlite3_bind_int64(st, 34, (int64_t)j->job_swap_bytes);
	sqlite3_bind_int(st, 35, j->umask);
	cJSON_free(argv);
	cJSON_free(env);
	return 0;
}

static char *
column_strdup(sqlite3_stmt *st, int i, int *err)
{
	const unsigned char *t;
	char *c;

	if (sqlite3_column_type(st, i) == SQLITE_NULL)
		return NULL;
	t = sqlite3_column_text(st, i);
	if (t == NULL || (c = strdup((const char *)t)) == NULL) {
		*err = -ENOMEM;
		return NULL;
	}
	return c;
}

/* Build a job from a row of "SELECT id, JOB_COLUMNS". */
static int
store_job_row(sqlite3_stmt *st, struct job **out)
{
	struct job *j;
	int err = 0, e2 = 0;

	*out = NULL;
	if ((j = calloc(1, sizeof *j)) == NULL)
		return -ENOMEM;
	j->id = sqlite3_column_int64(st, 0);
	j->queue_seq = sqlite3_column_int64(st, 1);
	j->uid = (uid_t)sqlite3_column_int64(st, 2);
	j->gid = (gid_t)sqlite3_column_int64(st, 3);
	j->user = column_strdup(st, 4, &err);
	j->name = column_strdup(st, 5, &err);
	j->argv =
	    store_json_strv((const char *)sqlite3_column_text(st, 6), &e2);
	if (e2 != 0)
		err = e2;
	j->cwd = column_strdup(st, 7, &err);
	j->env = store_json_strv((const char *)sqlite3_column_text(st, 8), &e2);
	if (e2 != 0)
		err = e2;
	j->attached = sqlite3_column_int(st, 9);
	j->priority = sqlite3_column_int(st, 10);
	j->wait_free_pct = sqlite3_column_double(st, 11);
	j->swap_budget_bytes = (uint64_t)sqlite3_column_int64(st, 12);
	j->expect_bytes = (uint64_t)sqlite3_column_int64(st, 13);
	j->exclusive = sqlite3_column_int(st, 14);
	j->retry_on_breach = sqlite3_column_int(st, 15);
	j->attempt = sqlite3_column_int(st, 16);
	if (job_state_parse((const char *)sqlite3_column_text(st, 17),
	                    &j->state) != 0)
		err = -EINVAL;
	j->submitted_ms = sqlite3_column_int64(st, 18);
	j->admitted_ms = sqlite3_column_int64(st, 19);
	j->started_ms = sqlite3_column_int64(st, 20);
	j->ended_ms = sqlite3_column_int64(st, 21);
	j->pid = (pid_t)sqlite3_column_int64(st, 22);
	j->pgid = (pid_t)sqlite3_column_int64(st, 23);
	j->start_time = (uint64_t)sqlite3_column_int64(st, 24);
	j->monitor_pid = (pid_t)sqlite3_column_int64(st, 25);
	j->exit_code = sqlite3_column_int(st, 26);
	j->term_signal = sqlite3_column_int(st, 27);
	j->end_reason = column_strdup(st, 28, &err);
	j->end_detail = column_strdup(st, 29, &err);
	j->swap_base_bytes = (uint64_t)sqlite3_column_int64(st, 30);
	j->footprint_bytes = (uint64_t)sqlite3_column_int64(st, 31);
	j->footprint_peak_bytes = (uint64_t)sqlite3_column_int64(st, 32);
	j->swap_growth_peak_bytes = (uint64_t)sqlite3_column_int64(st, 33);
	j->job_swap_bytes = (uint64_t)sqlite3_column_int64(st, 34);
	j->umask = sqlite3_column_int(st, 35);
	if (err != 0) {
		job_free(j);
		return err;
	}
	*out = j;
	return 0;
}

int
store_job_insert(struct store *s, struct job *j, char *cause, size_t causelen)
{
	const char *what = "inserting a job";
	int64_t id;
	int rc;

	if ((rc = store_job_bind(s->job_ins, j)) != 0) {
		store_cause(cause, causelen, "inserting a job: out of memory");
		return rc;
	}
	/* The insert and the queue_seq that follows it commit together. */
	if ((rc = store_run(s->begin)) != SQLITE_OK)
		goto fail;
	rc = store_run(s->job_ins);
	sqlite3_clear_bindings(s->job_ins);
	if (rc != SQLITE_OK)
		goto fail;
	id = sqlite3_last_insert_rowid(s->db);
	if (j->queue_seq == 0) {
		sqlite3_bind_int64(s->job_seq, 1, id);
		if ((rc = store_run(s->job_seq)) != SQLITE_OK)
			goto fail;
	}
	what = "committing a job";
	if ((rc = store_run(s->commit)) != SQLITE_OK)
		goto fail;
	j->id = id;
	if (j->queue_seq == 0)
		j->queue_seq = id;
	return 0;
fail:
	rc = store_fail(s, rc, what, cause, causelen);
	store_abort(s);
	return rc;
}

int
store_job_update(struct store *s, const struct job *j, char *cause,
                 size_t causelen)
{
	int rc;

	if ((rc = store_job_bind(s->job_upd, j)) != 0) {
		store_cause(cause, causelen, "updating a job: out of memory");
		return rc;
	}
	sqlite3_bind_int64(s->job_upd, JOB_NCOLUMNS + 1, j->id);
	rc = store_run(s->job_upd);
	sqlite3_clear_bindings(s->job_upd);
	if (rc != SQLITE_OK)
		return store_fail(s, rc, "updating a job", cause, causelen);
	if (sqlite3_changes(s->db) == 0) {
		store_cause(cause, causelen, "updating job %lld: no such job",
		            (long long)j->id);
		return -ENOENT;
	}
	return 0;
}

int
store_job_get(struct store *s, int64_t id, struct job **out)
{
	sqlite3_stmt *st = s->job_get;
	int rc;

	*out = NULL;
	sqlite3_bind_int64(st, 1, id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		rc = store_job_row(st, out);
	else if (rc == SQLITE_DONE)
		rc = 1;
	else
		rc = store_errno(rc);
	sqlite3_reset(st);
	return rc;
}

/*
 * Read every row first, then call back: a callback may update the very
 * jobs being listed, which must not disturb the scan.
 */
static int
store_jobs_each(struct store *s, sqlite3_stmt *st,
                int (*cb)(void *arg, struct job *j), void *arg)
{
	struct job **v = NULL, **nv, *j;
	size_t len = 0, cap = 0, i;
	int rc;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (len == cap) {
			cap = cap == 0 ? 16 : 2 * cap;
			if ((nv = realloc(v, cap * sizeof *v)) == NULL) {
				rc = -ENOMEM;
				goto out;
			}
			v = nv;
		}
		if ((rc = store_job_row(st, &j)) != 0)
			goto out;
		v[len++] = j;
	}
	rc = rc == SQLITE_DONE ? 0 : store_errno(rc);
out:
	sqlite3_reset(st);
	for (i = 0; i < len; i++) {
		if (rc == 0)
			rc = cb(arg, v[i]);
		else
			job_free(v[i]);
	}
	free(v);
	return rc;
}

int
store_jobs_unended(struct store *s, int (*cb)(void *arg, struct job *j),
                   void *arg)
{
	return store_jobs_each(s, s->jobs_unended, cb, arg);
}

int
store_jobs_ended(struct store *s, int64_t limit,
                 int (*cb)(void *arg, struct job *j), void *arg)
{
	sqlite3_bind_int64(s->jobs_ended, 1, limit > 0 ? limit : -1);
	return store_jobs_each(s, s->jobs_ended, cb, arg);
}

int
store_event_add(struct store *s, struct store_event *e, char *cause,
                size_t causelen)
{
	sqlite3_stmt *st = s->ev_ins;
	int rc;

	sqlite3_bind_int64(st, 1, e->ts_ms);
	sqlite3_bind_int64(st, 2, e->job_id);
	sqlite3_bind_int64(st, 3, (int64_t)e->uid);
	sqlite3_bind_text(st, 4, e->kind != NULL ? e->kind : "", -1,
	                  SQLITE_TRANSIENT);
	bind_text_or_null(st, 5, e->detail);
	rc = store_run(st);
	sqlite3_clear_bindings(st);
	if (rc != SQLITE_OK)
		return store_fail(s, rc, "writing an event", cause, causelen);
	e->id = sqlite3_last_insert_rowid(s->db);
	return 0;
}

int
store_events(struct store *s, int64_t after_id, int64_t limit,
             int (*cb)(void *arg, const struct store_event *e), void *arg)
{
	sqlite3_stmt *st = s->ev_list;
	struct store_event e;
	int rc;

	sqlite3_bind_int64(st, 1, after_id);
	sqlite3_bind_int64(st, 2, limit > 0 ? limit : -1);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		e.id = sqlite3_column_int64(st, 0);
		e.ts_ms = sqlite3_column_int64(st, 1);
		e.job_id = sqlite3_column_int64(st, 2);
		e.uid = (uid_t)sqlite3_column_int64(st, 3);
		e.kind = (const char *)sqlite3_column_text(st, 4);
		e.detail = (const char *)sqlite3_column_text(st, 5);
		if ((rc = cb(arg, &e)) != 0) {
			sqlite3_reset(st);
			return rc;
		}
	}
	sqlite3_reset(st);
	return rc == SQLITE_DONE ? 0 : store_errno(rc);
}

int64_t
store_size_bytes(struct store *s)
{
	static const char *const suffix[] = {"", "-wal"};
	char p[PATH_MAX];
	struct stat sb;
	int64_t total = 0;
	size_t i;

	for (i = 0; i < 2; i++) {
		snprintf(p, sizeof p, "%s%s", s->path, suffix[i]);
		if (stat(p, &sb) == 0)
			total += (int64_t)sb.st_size;
	}
	return total;
}
