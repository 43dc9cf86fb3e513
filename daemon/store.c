/*
 * The store's core: opening the database (identity check, WAL and pragmas,
 * schema migrations, prepared statements), closing it, its size (WAL
 * checkpoints are store-checkpoint.c's), the statement helpers the other
 * store-*.c files share, and storage health (store_health). Samples and rollups
 * are in store-samples.c, jobs and events in store-jobs.c. docs/storage.md is
 * the reference for the schema, the rollup tiers, retention and how readers
 * open the file.
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

#include <sqlite3.h>

#include "store-internal.h"

#define STORE_APPLICATION_ID 0x53544c44 /* "STLD" */
#define STORE_BUSY_TIMEOUT_MS 50
#define STORE_SAMPLE_CAP 7200      /* one hour at 0.5 s */
#define STORE_JOB_SAMPLE_CAP 16384 /* several jobs for a while */

#ifndef SQLITE_OPEN_NOFOLLOW
#define SQLITE_OPEN_NOFOLLOW 0
#endif

/* The rollup tiers, finest first (store-internal.h). */
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
    /* 3: the submitter's groups as its connection had them, a JSON
     * array of gids. Jobs from before get their primary gid alone: what
     * their submitters really had was never recorded. */
    ("ALTER TABLE jobs ADD COLUMN groups TEXT NOT NULL DEFAULT '[]';"
     "UPDATE jobs SET groups = '[' || gid || ']';"),
    /* 4: the ended jobs of one uid, oldest first: what store_make_room
     * prunes when the uid passes its storage bounds. */
    ("CREATE INDEX jobs_uid_ended ON jobs(uid, ended_ms, id)"
     " WHERE state IN " JOB_ENDED_STATES ";"),
    /* 5: argv and env in a table of their own, read only to start or
     * show a job: a jobs row that held them (up to 1.25 MiB) was read
     * whole to reach the columns after them, by every list and sort.
     * What a row counts against its uid's bound, the bytes of its argv
     * and env strings, cwd and name, is a column (store_job_bytes). */
    ("CREATE TABLE job_args (job_id INTEGER PRIMARY KEY, argv TEXT,"
     " env TEXT);"
     "INSERT INTO job_args SELECT id, argv, env FROM jobs;"
     "ALTER TABLE jobs ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0;"
     "UPDATE jobs SET bytes ="
     " coalesce((SELECT sum(length(CAST(value AS BLOB)))"
     " FROM json_each(argv)), 0) +"
     " coalesce((SELECT sum(length(CAST(value AS BLOB)))"
     " FROM json_each(env)), 0) +"
     " coalesce(length(CAST(cwd AS BLOB)), 0) +"
     " coalesce(length(CAST(name AS BLOB)), 0);"
     "ALTER TABLE jobs DROP COLUMN argv;"
     "ALTER TABLE jobs DROP COLUMN env;"),
    /* 6: the numbers of a breach kill (a JSON object: budget, growth,
     * footprint, free %, pressure, time), public members of the Job. */
    "ALTER TABLE jobs ADD COLUMN kill TEXT;",
    /* 7: the queue's own controls: the jobs a job starts after (a JSON
     * array of ids, NULL for none), whether any end of theirs will do,
     * a hold, its group (NULL for none), and the available memory it
     * waits for (0: none), and its on-end command (NULL for none). */
    ("ALTER TABLE jobs ADD COLUMN after_ids TEXT;"
     "ALTER TABLE jobs ADD COLUMN after_any INTEGER NOT NULL DEFAULT 0;"
     "ALTER TABLE jobs ADD COLUMN held INTEGER NOT NULL DEFAULT 0;"
     "ALTER TABLE jobs ADD COLUMN queue_group TEXT;"
     "ALTER TABLE jobs ADD COLUMN wait_free_bytes INTEGER NOT NULL DEFAULT 0;"
     "ALTER TABLE jobs ADD COLUMN on_end TEXT;"),
    /* 8: learned peaks. Whether a job's name was given (only those
     * learn: docs/jobs.md, "Learned peaks"), where its expect came from
     * ('given', 'learned', NULL: neither) and from how many runs, and
     * one row per ended run of a given name: what it reached. Jobs from
     * before did not say whether their name was given: they never
     * learn. */
    ("ALTER TABLE jobs ADD COLUMN name_given INTEGER NOT NULL DEFAULT 0;"
     "ALTER TABLE jobs ADD COLUMN expect_source TEXT;"
     "ALTER TABLE jobs ADD COLUMN expect_runs INTEGER NOT NULL DEFAULT 0;"
     "UPDATE jobs SET expect_source = 'given' WHERE expect_bytes > 0;"
     "CREATE TABLE learned_peaks ("
     " id INTEGER PRIMARY KEY AUTOINCREMENT,"
     " uid INTEGER NOT NULL,"
     " name TEXT NOT NULL,"
     " job_id INTEGER NOT NULL,"
     " ended_ms INTEGER NOT NULL,"
     " killed INTEGER NOT NULL,"
     " footprint_peak_bytes INTEGER NOT NULL,"
     " swap_growth_peak_bytes INTEGER NOT NULL,"
     " stages TEXT);"
     "CREATE INDEX learned_peaks_name ON learned_peaks(uid, name, id);"
     "CREATE INDEX learned_peaks_uid ON learned_peaks(uid, id);"),
    /* 9: a Slurm task's ids (0: not one) and who reports an attached
     * job's end (NULL: its client). */
    ("ALTER TABLE jobs ADD COLUMN slurm_job_id INTEGER NOT NULL DEFAULT 0;"
     "ALTER TABLE jobs ADD COLUMN slurm_step_id INTEGER NOT NULL DEFAULT 0;"
     "ALTER TABLE jobs ADD COLUMN slurm_task_id INTEGER NOT NULL DEFAULT 0;"
     "ALTER TABLE jobs ADD COLUMN exit_reporter TEXT;"),
    /* 10: accounting, a rollup of ended jobs per UTC day, uid and name
     * (at most 100 names a uid a day, the rest under "(other)"), written
     * in the transaction that ends a job and kept as long as the longest
     * retention (store-report.h, docs/storage.md "job_days"). Jobs that
     * ended before it are not counted. */
    ("CREATE TABLE IF NOT EXISTS job_days ("
     " day INTEGER NOT NULL, uid INTEGER NOT NULL, name TEXT NOT NULL,"
     " user TEXT,"
     " runs INTEGER NOT NULL, exited_0 INTEGER NOT NULL,"
     " exited_nonzero INTEGER NOT NULL, failed INTEGER NOT NULL,"
     " killed INTEGER NOT NULL, cancelled INTEGER NOT NULL,"
     " lost INTEGER NOT NULL, killed_by TEXT,"
     " ran INTEGER NOT NULL, run_ms INTEGER NOT NULL, run_hist TEXT,"
     " waited_ms INTEGER NOT NULL,"
     " footprint_peak_bytes INTEGER NOT NULL,"
     " swap_growth_peak_bytes INTEGER NOT NULL,"
     " PRIMARY KEY (day, uid, name)) WITHOUT ROWID;"),
    /* 11: time limits (0: none), the time before which a job is not
     * admitted (0: at once) and the records of the attempts before the
     * current one (a JSON array, NULL: none). */
    ("ALTER TABLE jobs ADD COLUMN time_limit_ms INTEGER NOT NULL DEFAULT 0;"
     "ALTER TABLE jobs ADD COLUMN time_limit_per_attempt_ms INTEGER NOT "
     "NULL DEFAULT 0;"
     "ALTER TABLE jobs ADD COLUMN begin_ms INTEGER NOT NULL DEFAULT 0;"
     "ALTER TABLE jobs ADD COLUMN attempts TEXT;"),
    /* 12: the job's token (STAGELOAD_JOB_TOKEN), which a stage report
     * from inside the job carries; NULL for jobs from before, whose
     * reports are taken as they were. */
    "ALTER TABLE jobs ADD COLUMN job_token TEXT;",
    /* 13: arrays: an element's array (its first element's id, 0: not an
     * element), its index and the array's limit of elements running at
     * once (0: none). The elements share their first element's job_args
     * row. */
    ("ALTER TABLE jobs ADD COLUMN array_id INTEGER NOT NULL DEFAULT 0;"
     "ALTER TABLE jobs ADD COLUMN array_index INTEGER NOT NULL DEFAULT 0;"
     "ALTER TABLE jobs ADD COLUMN array_limit INTEGER NOT NULL DEFAULT 0;"
     "CREATE INDEX jobs_array ON jobs(array_id, array_index)"
     " WHERE array_id > 0;"),
};
#define STORE_SCHEMA_VERSION                                                   \
	((int)(sizeof store_migrations / sizeof store_migrations[0]))

/* Map an sqlite result to a negative errno the caller can reason about. */
int
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

int
store_fail(struct store *s, int rc, const char *what, char *cause,
           size_t causelen)
{
	if (cause != NULL && causelen > 0)
		snprintf(cause, causelen, "%s: %s", what,
		         s->db != NULL ? sqlite3_errmsg(s->db)
		                       : sqlite3_errstr(rc));
	return store_errno(rc);
}

void
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
void
store_abort(struct store *s)
{
	if (!sqlite3_get_autocommit(s->db)) {
		sqlite3_reset(s->rollback);
		sqlite3_step(s->rollback);
		sqlite3_reset(s->rollback);
	}
}

int
store_run(sqlite3_stmt *st)
{
	int rc;

	rc = sqlite3_step(st);
	sqlite3_reset(st);
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? SQLITE_OK : rc;
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

int
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
	char sql[1024], jsql[4096];
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
	}
	PREP(s->ins_marker,
	     "INSERT INTO markers (ts_ms, kind) VALUES (?1, ?2)");
	PREP(s->latest,
	     "SELECT ts_ms, free_bp, available_bytes, swap_used_bytes,"
	     " pressure, psi_x100, compressed_bytes, wired_bytes"
	     " FROM samples ORDER BY ts_ms DESC LIMIT 1");
	PREP(s->latest_totals,
	     "SELECT total_bytes, swap_total_bytes FROM samples"
	     " WHERE total_bytes IS NOT NULL ORDER BY ts_ms DESC LIMIT 1");
	/* The jobs row's columns come from proto/job-fields.h: the
	 * statements that name them all are built here. */
	snprintf(jsql, sizeof jsql, "INSERT INTO jobs (%s) VALUES (%s)",
	         store_job_columns + 2, store_job_binds + 2);
	PREP(s->job_ins, jsql);
	PREP(s->args_ins,
	     "INSERT INTO job_args (job_id, argv, env) VALUES (?1, ?2, ?3)");
	PREP(s->job_seq, "UPDATE jobs SET queue_seq = id WHERE id = ?1");
	PREP(s->job_array, "UPDATE jobs SET array_id = id WHERE id = ?1");
	PREP(s->array_elements, "SELECT id, array_index FROM jobs"
	                        " WHERE array_id = ?1 AND array_id > 0"
	                        " ORDER BY array_index");
	/* An anonymous ? takes the number after the largest before it. */
	snprintf(jsql, sizeof jsql, "UPDATE jobs SET (%s) = (%s) WHERE id = ?",
	         store_job_columns + 2, store_job_binds + 2);
	PREP(s->job_upd, jsql);
	snprintf(jsql, sizeof jsql,
	         "SELECT id%s, " JOB_ARGS JOB_FROM " WHERE id = ?1",
	         store_job_columns);
	PREP(s->job_get, jsql);
	/* A list's: argv (for the command line), no env. */
	snprintf(jsql, sizeof jsql,
	         "SELECT id%s, " JOB_LIST_ARGS JOB_FROM " WHERE id = ?1",
	         store_job_columns);
	PREP(s->job_get_lean, jsql);
	/* The table keeps a queued job's command line alone; its env and
	 * argv are read again when it starts or is shown. */
	snprintf(jsql, sizeof jsql,
	         "SELECT id%s, " JOB_LIST_ARGS JOB_FROM
	         " WHERE state NOT IN " JOB_ENDED_STATES
	         " ORDER BY priority DESC, queue_seq, id",
	         store_job_columns);
	PREP(s->jobs_unended, jsql);
	/* Lists show no env: it is not read. */
	snprintf(jsql, sizeof jsql,
	         "SELECT id%s, " JOB_LIST_ARGS JOB_FROM
	         " WHERE state IN " JOB_ENDED_STATES " AND (ended_ms < ?2 OR"
	         " (ended_ms = ?2 AND id < ?3)) ORDER BY ended_ms DESC, id DESC"
	         " LIMIT ?1",
	         store_job_columns);
	PREP(s->jobs_ended, jsql);
	/* The same of one uid (a filtered status), by jobs_uid_ended. */
	snprintf(jsql, sizeof jsql,
	         "SELECT id%s, " JOB_LIST_ARGS JOB_FROM
	         " WHERE uid = ?4 AND state IN " JOB_ENDED_STATES
	         " AND (ended_ms < ?2 OR (ended_ms = ?2 AND id < ?3))"
	         " ORDER BY ended_ms DESC, id DESC LIMIT ?1",
	         store_job_columns);
	PREP(s->jobs_ended_uid, jsql);
	PREP(s->ev_ins, "INSERT INTO events (ts_ms, job_id, uid, kind, detail)"
	                " VALUES (?1, ?2, ?3, ?4, ?5)");
	PREP(s->ev_list, "SELECT id, ts_ms, job_id, uid, kind, detail"
	                 " FROM events WHERE id > ?1 ORDER BY id LIMIT ?2");
	PREP(s->ev_list_before,
	     "SELECT id, ts_ms, job_id, uid, kind, detail FROM events"
	     " WHERE id < ?1 ORDER BY id DESC LIMIT ?2");
	PREP(s->ev_list_job, "SELECT id, ts_ms, job_id, uid, kind, detail"
	                     " FROM events WHERE job_id = ?3 AND id > ?1"
	                     " ORDER BY id LIMIT ?2");
	PREP(s->ev_list_before_job,
	     "SELECT id, ts_ms, job_id, uid, kind, detail FROM events"
	     " WHERE job_id = ?3 AND id < ?1 ORDER BY id DESC LIMIT ?2");
	PREP(s->job_was_ended,
	     "SELECT state IN " JOB_ENDED_STATES " FROM jobs WHERE id = ?1");
	PREP(s->jobs_oldest_ended,
	     "SELECT id, bytes FROM jobs WHERE uid = ?1 AND state"
	     " IN " JOB_ENDED_STATES " ORDER BY uid, ended_ms, id");
	PREP(s->del_job_samples, "DELETE FROM job_samples WHERE job_id = ?1");
	PREP(s->del_job_events, "DELETE FROM events WHERE job_id = ?1");
	PREP(s->del_job, "DELETE FROM jobs WHERE id = ?1");
	/* A job's args row (an array's, shared: once no other element
	 * is left). Before the job's own row goes. */
	PREP(s->del_job_args,
	     "DELETE FROM job_args WHERE job_id = (SELECT CASE WHEN"
	     " array_id > 0 THEN array_id ELSE id END FROM jobs WHERE id = ?1)"
	     " AND NOT EXISTS (SELECT 1 FROM jobs j2 WHERE j2.array_id > 0"
	     " AND j2.array_id = job_args.job_id AND j2.id != ?1)");
#undef PREP
	return store_days_prepare(s, cause, causelen);
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
	if ((rc = store_prepare_all(s, cause, causelen)) != 0 ||
	    (rc = store_read_open(&s->reader, s->db, cause, causelen)) != 0)
		goto fail;
	if ((rc = store_usage_load(s)) != 0) {
		store_cause(cause, causelen,
		            "%s: counting the jobs' bytes per user failed",
		            path);
		goto fail;
	}
	store_checkpointer_start(s);
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
	/* Its connection first: the loop's, closed last, checkpoints the
	 * WAL into the database and removes it. */
	store_checkpointer_stop(s);
	/* The reader's statements are on the same connection: its own. */
	store_read_close(s->reader);
	s->reader = NULL;
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
	umap_free(&s->usage_bytes);
	umap_free(&s->usage_rows);
	free(s);
}

int
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

/* ---- storage health: what failed last, per kind of write ---- */

int
store_health_note(struct store *s, enum store_area a, const char *what, int rc,
                  const char *why, char *cause, size_t causelen)
{
	struct store_area_health *h = &s->health[a];

	if (rc == 0) {
		h->since = 0;
		h->msg[0] = '\0';
		/* The database takes writes again: an insert that failed is
		 * not retried, so nothing else would clear it. */
		s->health[STORE_AREA_SUBMIT].since = 0;
		s->health[STORE_AREA_SUBMIT].msg[0] = '\0';
		return 0;
	}
	if (h->since == 0)
		h->since = ++s->health_seq;
	/* A long cause is cut to fit. */
	snprintf(h->msg, sizeof h->msg, "%s: %s", what, why);
	store_cause(cause, causelen, "%s", why);
	return rc;
}

const char *
store_health(const struct store *s)
{
	const struct store_area_health *oldest = NULL;
	int a;

	if (s == NULL)
		return NULL;
	for (a = 0; a < STORE_NAREAS; a++)
		if (s->health[a].since != 0 &&
		    (oldest == NULL || s->health[a].since < oldest->since))
			oldest = &s->health[a];
	return oldest != NULL ? oldest->msg : NULL;
}

/*
 * A failed job update is not always retried: a transition that could not
 * be committed is often undone (an admission, a hold), so no later write
 * of that area would come to clear it, and admissions wait on it. The
 * probe rewrites the newest row of the area's table as it is, in its own
 * transaction: it needs what such a write needs (a WAL frame, so free
 * space) and changes no data. Samples have none: their flush is retried
 * every tick while anything fails, and its success clears SUBMIT too.
 */
static const char *const store_probe_sql[STORE_NAREAS] = {
    [STORE_AREA_JOBS] = "UPDATE jobs SET state = state"
                        " WHERE id = (SELECT max(id) FROM jobs)",
    [STORE_AREA_EVENTS] = "UPDATE events SET kind = kind"
                          " WHERE id = (SELECT max(id) FROM events)",
};

static int
store_probe_area(struct store *s, enum store_area a)
{
	int rc;

	if ((rc = sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL)) !=
	    SQLITE_OK)
		return store_errno(rc);
	rc = sqlite3_exec(s->db, store_probe_sql[a], NULL, NULL, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
	if (rc != SQLITE_OK) {
		store_abort(s);
		return store_errno(rc);
	}
	return 0;
}

int
store_health_probe(struct store *s)
{
	int a, failing = 0;

	if (s == NULL)
		return 0;
	for (a = 0; a < STORE_NAREAS; a++) {
		if (s->health[a].since == 0)
			continue;
		/* A probe that fails keeps the area's own cause: it says
		 * what the daemon could not record. */
		if (store_probe_sql[a] != NULL && store_probe_area(s, a) == 0)
			store_health_note(s, a, "", 0, "", NULL, 0);
		else
			failing++;
	}
	return failing;
}

int
store_area_failing(const struct store *s, enum store_area a)
{
	if (s == NULL || (int)a < 0 || a >= STORE_NAREAS)
		return 0;
	return s->health[a].since != 0;
}
