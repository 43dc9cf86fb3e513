/* The store: schema and migration, samples to history at every tier,
 * gaps, pruning, jobs, events, behaviour when writes fail, and storage
 * health. */
#include <errno.h>
#include <fnmatch.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "store.h"
#include "store-report.h"

#define T0 1764480000000LL /* a multiple of 10 minutes */
#define APP_ID 0x53544c44

struct fixture {
	char dir[256];
	char path[300];
	struct store *s;
};

/* The retention the daemon's configuration starts with. */
static struct store_retention
retention_defaults(void)
{
	struct config cfg;

	config_defaults(&cfg, 0);
	return cfg.retention;
}

static int
setup(void **state)
{
	struct fixture *f = calloc(1, sizeof *f);
	const char *tmp = getenv("TMPDIR");
	char cause[256] = "";

	assert_non_null(f);
	snprintf(f->dir, sizeof f->dir, "%s/sl-store-XXXXXX",
	         tmp != NULL ? tmp : "/tmp");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof f->path, "%s/stageload.db", f->dir);
	if (store_open(&f->s, f->path, cause, sizeof cause) != 0)
		fail_msg("store_open: %s", cause);
	*state = f;
	return 0;
}

static sqlite3 *
raw_open(const char *path)
{
	sqlite3 *db = NULL;

	assert_int_equal(
	    sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
	sqlite3_busy_timeout(db, 1000);
	return db;
}

static int64_t
raw_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	int64_t v = -1;

	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

static int64_t
count_rows(const char *path, const char *sql)
{
	sqlite3 *db = raw_open(path);
	int64_t v = raw_int(db, sql);

	sqlite3_close(db);
	return v;
}

static void
raw_text(sqlite3 *db, const char *sql, char *buf, size_t len)
{
	sqlite3_stmt *st;

	buf[0] = '\0';
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	if (sqlite3_step(st) == SQLITE_ROW &&
	    sqlite3_column_text(st, 0) != NULL)
		snprintf(buf, len, "%s", sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
}

static void
raw_exec(sqlite3 *db, const char *sql)
{
	char *err = NULL;

	if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK)
		fail_msg("%s: %s", sql, err);
}

static void
remove_db_files(const char *path)
{
	char p[512];

	unlink(path);
	snprintf(p, sizeof p, "%s-wal", path);
	unlink(p);
	snprintf(p, sizeof p, "%s-shm", path);
	unlink(p);
}

/* Every test ends with the database intact. */
static int
teardown(void **state)
{
	struct fixture *f = *state;
	char ok[64];
	sqlite3 *db;

	store_close(f->s);
	db = raw_open(f->path);
	raw_text(db, "PRAGMA integrity_check", ok, sizeof ok);
	sqlite3_close(db);
	remove_db_files(f->path);
	chmod(f->dir, 0700);
	rmdir(f->dir);
	free(f);
	assert_string_equal(ok, "ok");
	return 0;
}

/* Deterministic, irregular sample number i, every 500 ms from T0. */
static void
sample_at(int64_t i, struct sys_sample *ss)
{
	memset(ss, 0, sizeof *ss);
	ss->ts_ms = T0 + i * 500;
	ss->total_bytes = 48ULL << 30;
	ss->free_pct = (1000 + (i * 7919) % 8000) / 100.0;
	ss->available_bytes =
	    1000000000ULL + (uint64_t)((i * 13) % 977) * 1000000ULL;
	ss->swap_total_bytes = 4ULL << 30;
	ss->swap_used_bytes = (uint64_t)((i * i) % 1000) * 4096;
	ss->pressure = i % 50 == 0  ? PRESSURE_CRITICAL
	               : i % 7 == 0 ? PRESSURE_WARN
	                            : PRESSURE_NORMAL;
	ss->psi_some_avg10 = i % 3 == 0 ? -1 : (double)(i % 100) / 4;
}

static void
flush_ok(struct store *s)
{
	char cause[256] = "";

	if (store_flush(s, cause, sizeof cause) != 0)
		fail_msg("store_flush: %s", cause);
}

/* Feed samples [from, to) in uneven batches so buckets span flushes. */
static void
feed(struct store *s, int64_t from, int64_t to)
{
	struct sys_sample ss;
	int64_t i;

	for (i = from; i < to; i++) {
		sample_at(i, &ss);
		store_add_sample(s, &ss);
		if (i % 7 == 3)
			flush_ok(s);
	}
	flush_ok(s);
}

static void
test_fresh_database(void **state)
{
	struct fixture *f = *state;
	char mode[32];
	struct stat sb;
	sqlite3 *db;

	db = raw_open(f->path);
	assert_int_equal(raw_int(db, "PRAGMA application_id"), APP_ID);
	assert_int_equal(raw_int(db, "PRAGMA user_version"), 13);
	raw_text(db, "PRAGMA journal_mode", mode, sizeof mode);
	assert_string_equal(mode, "wal");
	assert_int_equal(raw_int(db, "SELECT count(*) FROM sqlite_master "
	                             "WHERE type = 'table' AND name IN "
	                             "('samples', 'rollup_10s', 'rollup_1m',"
	                             " 'rollup_10m', 'markers', 'jobs',"
	                             " 'job_args', 'job_samples', 'events')"),
	                 9);
	/* Rollups need their primary key for the upsert. */
	assert_int_equal(raw_int(db, "SELECT count(*) FROM pragma_table_info("
	                             "'rollup_1m') WHERE pk = 1 AND name = "
	                             "'ts_ms'"),
	                 1);
	sqlite3_close(db);
	/* It holds argv and environments: private. */
	assert_int_equal(stat(f->path, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
}

/* A database of this schema turned back into schema 12's: no arrays. */
static void
raw_to_schema_12(sqlite3 *db)
{
	raw_exec(db, "DROP INDEX jobs_array");
	raw_exec(db, "ALTER TABLE jobs DROP COLUMN array_id");
	raw_exec(db, "ALTER TABLE jobs DROP COLUMN array_index");
	raw_exec(db, "ALTER TABLE jobs DROP COLUMN array_limit");
}

/* ... and into schema 11's shape: no job token. */
static void
raw_to_schema_11(sqlite3 *db)
{
	raw_to_schema_12(db);
	raw_exec(db, "ALTER TABLE jobs DROP COLUMN job_token");
}

/* ... and into schema 10's: no time limits, no begin, no attempts. */
static void
raw_to_schema_10(sqlite3 *db)
{
	raw_to_schema_11(db);
	raw_exec(db, "ALTER TABLE jobs DROP COLUMN time_limit_ms");
	raw_exec(db, "ALTER TABLE jobs DROP COLUMN time_limit_per_attempt_ms");
	raw_exec(db, "ALTER TABLE jobs DROP COLUMN begin_ms");
	raw_exec(db, "ALTER TABLE jobs DROP COLUMN attempts");
}

/* ... and into schema 9's: no accounting rollup either. */
static void
raw_to_schema_9(sqlite3 *db)
{
	raw_to_schema_10(db);
	raw_exec(db, "DROP TABLE job_days");
}

/* A database of schema 10 is brought to 11: its jobs have no limits, no
 * begin and no records of past attempts. */
static void
test_migrate_from_10(void **state)
{
	struct fixture *f = *state;
	char cause[256] = "";
	struct job j, *got;
	sqlite3 *db;

	memset(&j, 0, sizeof j);
	j.state = JOB_QUEUED;
	j.attempt = 2;
	j.uid = 1000;
	j.name = "n";
	j.cwd = "/tmp";
	j.time_limit_ms = 5000;
	j.begin_ms = 7;
	j.attempts = "[]";
	assert_int_equal(store_job_insert(f->s, &j, cause, sizeof cause), 0);
	store_close(f->s);
	f->s = NULL;
	db = raw_open(f->path);
	raw_to_schema_10(db);
	raw_exec(db, "PRAGMA user_version = 10");
	sqlite3_close(db);

	assert_int_equal(store_open(&f->s, f->path, cause, sizeof cause), 0);
	assert_int_equal(store_job_get(f->s, j.id, &got), 0);
	assert_int_equal(got->attempt, 2);
	assert_int_equal(got->time_limit_ms, 0);
	assert_int_equal(got->time_limit_per_attempt_ms, 0);
	assert_int_equal(got->begin_ms, 0);
	assert_null(got->attempts);
	job_free(got);
	/* and the new columns take values */
	assert_int_equal(store_job_insert(f->s, &j, cause, sizeof cause), 0);
	assert_int_equal(store_job_get(f->s, j.id, &got), 0);
	assert_int_equal(got->time_limit_ms, 5000);
	assert_int_equal(got->begin_ms, 7);
	assert_string_equal(got->attempts, "[]");
	job_free(got);
}

/* A database of schema 12 is brought to 13: its jobs are no array's, and
 * each reads its own args row. */
static void
test_migrate_from_12(void **state)
{
	struct fixture *f = *state;
	char cause[256] = "";
	char *argv[] = {"/bin/echo", "{}", NULL};
	struct job j, *got;
	sqlite3 *db;

	memset(&j, 0, sizeof j);
	j.state = JOB_QUEUED;
	j.attempt = 1;
	j.argv = argv;
	assert_int_equal(store_job_insert(f->s, &j, cause, sizeof cause), 0);
	store_close(f->s);
	f->s = NULL;
	db = raw_open(f->path);
	raw_to_schema_12(db);
	raw_exec(db, "PRAGMA user_version = 12");
	sqlite3_close(db);

	assert_int_equal(store_open(&f->s, f->path, cause, sizeof cause), 0);
	assert_int_equal(store_job_get(f->s, j.id, &got), 0);
	assert_int_equal(got->array_id, 0);
	assert_int_equal(got->array_limit, 0);
	assert_non_null(got->argv);
	assert_string_equal(got->argv[1], "{}");
	job_free(got);
}

/* An array's elements share their first element's args row: each reads
 * it, and it goes only with the last of them. */
static void
test_array_args(void **state)
{
	struct fixture *f = *state;
	char cause[256] = "";
	char *argv[] = {"/bin/echo", "{}", NULL}, *env[] = {"A=1", NULL};
	struct job e[3], *v[3], *got;
	int64_t *ids, *idx;
	size_t n, i;
	int pruned;
	sqlite3 *db;

	for (i = 0; i < 3; i++) {
		memset(&e[i], 0, sizeof e[i]);
		e[i].state = JOB_EXITED;
		e[i].attempt = 1;
		e[i].uid = 1000;
		e[i].array_index = (int64_t)i * 10;
		e[i].array_limit = 2;
		e[i].ended_ms = 1000 + (int64_t)i;
		v[i] = &e[i];
	}
	e[0].argv = argv;
	e[0].env = env;
	assert_int_equal(store_array_insert(f->s, v, 3, cause, sizeof cause),
	                 0);
	for (i = 0; i < 3; i++)
		assert_int_equal(e[i].array_id, e[0].id);
	assert_int_equal(store_array_elements(f->s, e[0].id, &ids, &idx, &n),
	                 0);
	assert_int_equal(n, 3);
	assert_int_equal(ids[2], e[2].id);
	assert_int_equal(idx[2], 20);
	free(ids);
	free(idx);
	assert_int_equal(store_job_get(f->s, e[2].id, &got), 0);
	assert_non_null(got->argv);
	assert_string_equal(got->argv[1], "{}");
	assert_string_equal(got->env[0], "A=1");
	assert_int_equal(got->array_limit, 2);
	job_free(got);
	/* the first goes (oldest): the others still read the row */
	assert_int_equal(store_make_room(f->s, 1000, 0, INT64_MAX, 2, NULL,
	                                 NULL, &pruned, cause, sizeof cause),
	                 0);
	assert_int_equal(pruned, 1);
	assert_int_equal(store_job_get(f->s, e[1].id, &got), 0);
	assert_non_null(got->argv);
	job_free(got);
	/* the last goes with it */
	assert_int_equal(store_make_room(f->s, 1000, 0, INT64_MAX, 0, NULL,
	                                 NULL, &pruned, cause, sizeof cause),
	                 0);
	assert_int_equal(pruned, 2);
	db = raw_open(f->path);
	assert_int_equal(raw_int(db, "SELECT count(*) FROM job_args"), 0);
	sqlite3_close(db);
}

static void
raw_to_schema_8(sqlite3 *db)
{
	raw_to_schema_9(db);
	raw_exec(db, "ALTER TABLE jobs DROP COLUMN slurm_job_id");
	raw_exec(db, "ALTER TABLE jobs DROP COLUMN slurm_step_id");
	raw_exec(db, "ALTER TABLE jobs DROP COLUMN slurm_task_id");
	raw_exec(db, "ALTER TABLE jobs DROP COLUMN exit_reporter");
}

/* ... and into schema 7's: no learned peaks, no name_given, expect_source
 * or expect_runs. */
static void
raw_to_schema_7(sqlite3 *db)
{
	raw_to_schema_8(db);
	raw_exec(db, "DROP TABLE learned_peaks");
	raw_exec(db, "ALTER TABLE jobs DROP COLUMN name_given");
	raw_exec(db, "ALTER TABLE jobs DROP COLUMN expect_source");
	raw_exec(db, "ALTER TABLE jobs DROP COLUMN expect_runs");
}

/* A database of schema 11 is brought to 12: its jobs have no token (a
 * stage report's token is then not checked), and a token round-trips. */
static void
test_migrate_from_11(void **state)
{
	struct fixture *f = *state;
	char cause[256] = "";
	struct job j, *got;
	sqlite3 *db;

	memset(&j, 0, sizeof j);
	j.state = JOB_QUEUED;
	j.attempt = 1;
	j.uid = 1000;
	j.name = "n";
	j.cwd = "/tmp";
	j.job_token = "00112233445566778899aabbccddeeff";
	assert_int_equal(store_job_insert(f->s, &j, cause, sizeof cause), 0);
	assert_int_equal(store_job_get(f->s, j.id, &got), 0);
	assert_string_equal(got->job_token, j.job_token);
	job_free(got);
	store_close(f->s);
	f->s = NULL;
	db = raw_open(f->path);
	raw_to_schema_11(db);
	raw_exec(db, "PRAGMA user_version = 11");
	sqlite3_close(db);

	assert_int_equal(store_open(&f->s, f->path, cause, sizeof cause), 0);
	assert_int_equal(store_job_get(f->s, j.id, &got), 0);
	assert_null(got->job_token);
	job_free(got);
}

/* A database of schema 7 is brought to 8: its jobs did not say whether
 * their name was given (they never learn), an expect they had was given,
 * and the learned peaks table is there, empty. */
static void
test_migrate_from_7(void **state)
{
	struct fixture *f = *state;
	char cause[256] = "";
	struct job j, *got;
	struct store_learned l;
	struct store_learn_run run;
	sqlite3 *db;

	memset(&j, 0, sizeof j);
	j.state = JOB_QUEUED;
	j.attempt = 1;
	j.uid = 1000;
	j.name = "n";
	j.cwd = "/tmp";
	j.expect_bytes = 1 << 20;
	j.name_given = 1;
	assert_int_equal(store_job_insert(f->s, &j, cause, sizeof cause), 0);
	store_close(f->s);
	f->s = NULL;
	db = raw_open(f->path);
	raw_to_schema_7(db);
	raw_exec(db, "PRAGMA user_version = 7");
	sqlite3_close(db);

	assert_int_equal(store_open(&f->s, f->path, cause, sizeof cause), 0);
	assert_int_equal(store_job_get(f->s, j.id, &got), 0);
	assert_int_equal(got->name_given, 0);
	assert_int_equal(got->expect_source, JOB_EXPECT_GIVEN);
	assert_int_equal(got->expect_runs, 0);
	job_free(got);
	assert_int_equal(store_learn_get(f->s, 1000, "n", 5, &l), 0);
	assert_int_equal(l.runs, 0);
	/* Rows go in; the last n are read back, killed ones flagged, stages
	 * folded by name; a name keeps STORE_LEARN_RUNS_MAX rows. */
	memset(&run, 0, sizeof run);
	run.uid = 1000;
	run.name = "n";
	for (int i = 1; i <= STORE_LEARN_RUNS_MAX + 3; i++) {
		run.job_id = i;
		run.ended_ms = i;
		run.killed = i % 2;
		run.footprint_peak_bytes = (uint64_t)i << 20;
		run.swap_growth_peak_bytes = (uint64_t)(100 - i);
		run.stages =
		    i == STORE_LEARN_RUNS_MAX + 3
		        ? "[{\"name\":\"load\",\"footprint_peak_bytes\":5,"
		          "\"swap_growth_bytes\":1}]"
		        : "[{\"name\":\"load\",\"footprint_peak_bytes\":7,"
		          "\"swap_growth_bytes\":0}]";
		assert_int_equal(
		    store_learn_add(f->s, &run, cause, sizeof cause), 0);
	}
	assert_int_equal(store_learn_get(f->s, 1000, "n", 2, &l), 0);
	assert_int_equal(l.runs, 2);
	assert_int_equal(l.killed, 1);
	assert_int_equal(l.footprint_peak_bytes,
	                 (uint64_t)(STORE_LEARN_RUNS_MAX + 3) << 20);
	assert_int_equal(l.swap_growth_peak_bytes,
	                 100 - (STORE_LEARN_RUNS_MAX + 2));
	assert_string_equal(l.stages, "[{\"name\":\"load\",\"footprint_peak_"
	                              "bytes\":7,\"swap_growth_bytes\":1}]");
	store_learned_clear(&l);
	assert_int_equal(store_learn_get(f->s, 1000, "n", 100, &l), 0);
	assert_int_equal(l.runs, STORE_LEARN_RUNS_MAX);
	store_learned_clear(&l);
	assert_int_equal(store_learn_get(f->s, 1001, "n", 5, &l), 0);
	assert_int_equal(l.runs, 0);
}

/* A database of this schema turned back into schema 4's shape: argv and
 * env in the jobs rows, no job_args, no bytes, no kill. */
static void
raw_to_schema_6(sqlite3 *db)
{
	raw_to_schema_7(db);
	raw_exec(db, "ALTER TABLE jobs DROP COLUMN after_ids");
	raw_exec(db, "ALTER TABLE jobs DROP COLUMN after_any");
	raw_exec(db, "ALTER TABLE jobs DROP COLUMN held");
	raw_exec(db, "ALTER TABLE jobs DROP COLUMN queue_group");
	raw_exec(db, "ALTER TABLE jobs DROP COLUMN wait_free_bytes");
	raw_exec(db, "ALTER TABLE jobs DROP COLUMN on_end");
}

static void
raw_to_schema_4(sqlite3 *db)
{
	raw_to_schema_6(db);
	raw_exec(db, "ALTER TABLE jobs DROP COLUMN kill");
	raw_exec(db, "ALTER TABLE jobs ADD COLUMN argv TEXT");
	raw_exec(db, "ALTER TABLE jobs ADD COLUMN env TEXT");
	raw_exec(db,
	         "UPDATE jobs SET"
	         " argv = (SELECT argv FROM job_args WHERE job_id = jobs.id),"
	         " env = (SELECT env FROM job_args WHERE job_id = jobs.id)");
	raw_exec(db, "DROP TABLE job_args");
	raw_exec(db, "ALTER TABLE jobs DROP COLUMN bytes");
}

/* A database of schema 4 (argv and env in the jobs rows) is brought to 6:
 * they move to job_args unchanged, the rows count the same bytes against
 * their uid, and the jobs rows hold neither any more. */
static void
test_migrate_from_4(void **state)
{
	struct fixture *f = *state;
	char cause[256] = "";
	char *argv[] = {"sh", "-c", "echo 'it''s'", NULL};
	char *env[] = {"PATH=/bin", "HOME=/home/\xc3\xa9", NULL};
	struct store_usage u;
	struct job j, *got;
	sqlite3 *db;

	memset(&j, 0, sizeof j);
	j.state = JOB_QUEUED;
	j.attempt = 1;
	j.uid = 1000;
	j.name = "n";
	j.cwd = "/tmp";
	j.argv = argv;
	j.env = env;
	assert_int_equal(store_job_insert(f->s, &j, cause, sizeof cause), 0);
	assert_int_equal(j.bytes, store_job_bytes(&j));
	store_close(f->s);
	f->s = NULL;
	db = raw_open(f->path);
	raw_to_schema_4(db);
	raw_exec(db, "PRAGMA user_version = 4");
	sqlite3_close(db);

	assert_int_equal(store_open(&f->s, f->path, cause, sizeof cause), 0);
	db = raw_open(f->path);
	assert_int_equal(raw_int(db, "PRAGMA user_version"), 13);
	assert_int_equal(raw_int(db, "SELECT count(*) FROM pragma_table_info("
	                             "'jobs') WHERE name IN ('argv', 'env')"),
	                 0);
	sqlite3_close(db);
	assert_int_equal(store_job_get(f->s, j.id, &got), 0);
	assert_non_null(got->argv);
	assert_string_equal(got->argv[2], "echo 'it''s'");
	assert_null(got->argv[3]);
	assert_string_equal(got->env[1], "HOME=/home/\xc3\xa9");
	assert_int_equal(got->bytes, j.bytes);
	job_free(got);
	store_usage(f->s, 1000, &u);
	assert_int_equal(u.bytes, j.bytes);
	assert_int_equal(u.jobs, 1);
}

/* A database of schema 1 (before jobs had a umask) is brought to 3: its
 * jobs keep what they ran with, the daemon's usual 022. */
static void
test_migrate_from_1(void **state)
{
	struct fixture *f = *state;
	char cause[256] = "";
	struct job j, *got;
	sqlite3 *db;

	memset(&j, 0, sizeof j);
	j.state = JOB_QUEUED;
	j.attempt = 1;
	j.umask = 077;
	assert_int_equal(store_job_insert(f->s, &j, cause, sizeof cause), 0);
	store_close(f->s);
	f->s = NULL;
	db = raw_open(f->path);
	raw_to_schema_4(db);
	raw_exec(db, "DROP INDEX jobs_uid_ended");
	raw_exec(db, "ALTER TABLE jobs DROP COLUMN groups");
	raw_exec(db, "ALTER TABLE jobs DROP COLUMN umask");
	raw_exec(db, "PRAGMA user_version = 1");
	sqlite3_close(db);

	assert_int_equal(store_open(&f->s, f->path, cause, sizeof cause), 0);
	db = raw_open(f->path);
	assert_int_equal(raw_int(db, "PRAGMA user_version"), 13);
	sqlite3_close(db);
	assert_int_equal(store_job_get(f->s, j.id, &got), 0);
	assert_int_equal(got->umask, 022);
	job_free(got);
}

/* A database of schema 2 (before jobs had groups) is brought to 3: its
 * jobs get their primary gid alone, never a group their submitters may
 * not have had; jobs stored after keep their lists. */
static void
test_migrate_from_2(void **state)
{
	struct fixture *f = *state;
	gid_t had[] = {27, 1001, 4242};
	char cause[256] = "";
	struct job j, k, *got;
	sqlite3 *db;

	memset(&j, 0, sizeof j);
	j.state = JOB_QUEUED;
	j.attempt = 1;
	j.uid = 1000;
	j.gid = 1000;
	j.groups = had;
	j.ngroups = 3;
	j.umask = 027;
	assert_int_equal(store_job_insert(f->s, &j, cause, sizeof cause), 0);
	k = j;
	k.id = 0;
	k.queue_seq = 0;
	k.gid = 0;
	assert_int_equal(store_job_insert(f->s, &k, cause, sizeof cause), 0);
	store_close(f->s);
	f->s = NULL;
	db = raw_open(f->path);
	raw_to_schema_4(db);
	raw_exec(db, "DROP INDEX jobs_uid_ended");
	raw_exec(db, "ALTER TABLE jobs DROP COLUMN groups");
	raw_exec(db, "PRAGMA user_version = 2");
	sqlite3_close(db);

	assert_int_equal(store_open(&f->s, f->path, cause, sizeof cause), 0);
	db = raw_open(f->path);
	assert_int_equal(raw_int(db, "PRAGMA user_version"), 13);
	sqlite3_close(db);
	assert_int_equal(store_job_get(f->s, j.id, &got), 0);
	assert_int_equal(got->umask, 027);
	assert_int_equal(got->ngroups, 1);
	assert_int_equal(got->groups[0], 1000);
	job_free(got);
	assert_int_equal(store_job_get(f->s, k.id, &got), 0);
	assert_int_equal(got->ngroups, 1);
	assert_int_equal(got->groups[0], 0);
	job_free(got);

	/* A job stored now keeps its list, and an update keeps it too. */
	j.id = 0;
	j.queue_seq = 0;
	assert_int_equal(store_job_insert(f->s, &j, cause, sizeof cause), 0);
	j.state = JOB_ADMITTED;
	j.attempt = 2;
	assert_int_equal(store_job_update(f->s, &j, cause, sizeof cause), 0);
	assert_int_equal(store_job_get(f->s, j.id, &got), 0);
	assert_int_equal(got->ngroups, 3);
	assert_memory_equal(got->groups, had, sizeof had);
	job_free(got);
}

/* Groups round trip through a reopen exactly: none, one, the largest
 * gid, 65536 of them; a list that is not one of gids is refused. */
static void
test_job_groups_roundtrip(void **state)
{
	struct fixture *f = *state;
	static gid_t many[65536];
	gid_t some[] = {0, 5, 4294967294u, 5};
	struct {
		gid_t *g;
		int n;
	} lists[] = {{NULL, 0}, {some, 1}, {some, 4}, {many, 65536}};
	int64_t ids[4];
	char cause[256] = "", sql[128];
	struct job j, *got;
	sqlite3 *db;
	size_t i;

	for (i = 0; i < 65536; i++)
		many[i] = (gid_t)(i * 7);
	for (i = 0; i < 4; i++) {
		memset(&j, 0, sizeof j);
		j.state = JOB_QUEUED;
		j.attempt = 1;
		j.gid = 5;
		j.groups = lists[i].g;
		j.ngroups = lists[i].n;
		assert_int_equal(
		    store_job_insert(f->s, &j, cause, sizeof cause), 0);
		ids[i] = j.id;
	}
	store_close(f->s);
	f->s = NULL;
	assert_int_equal(store_open(&f->s, f->path, cause, sizeof cause), 0);
	for (i = 0; i < 4; i++) {
		assert_int_equal(store_job_get(f->s, ids[i], &got), 0);
		assert_int_equal(got->ngroups, lists[i].n);
		if (lists[i].n > 0)
			assert_memory_equal(got->groups, lists[i].g,
			                    sizeof(gid_t) * (size_t)lists[i].n);
		job_free(got);
	}

	/* What the store did not write is not taken for a list of gids. */
	db = raw_open(f->path);
	for (i = 0; i < 6; i++) {
		static const char *const bad[] = {
		    "[-1]", "[4294967295]", "[1.5]", "[\"5\"]", "{}", "[1,"};

		snprintf(sql, sizeof sql,
		         "UPDATE jobs SET groups = '%s' WHERE id = %lld",
		         bad[i], (long long)ids[1]);
		raw_exec(db, sql);
		assert_int_equal(store_job_get(f->s, ids[1], &got), -EINVAL);
	}
	raw_exec(db, "DELETE FROM jobs");
	sqlite3_close(db);
}

static void
test_reopen_keeps_data(void **state)
{
	struct fixture *f = *state;
	struct history_bucket *b;
	struct sys_sample latest, want;
	char cause[256] = "";
	const char *tier;
	struct job j, *got;
	size_t n;

	feed(f->s, 0, 40);
	memset(&j, 0, sizeof j);
	j.state = JOB_QUEUED;
	j.attempt = 1;
	j.umask = 027;
	assert_int_equal(store_job_insert(f->s, &j, cause, sizeof cause), 0);
	store_close(f->s);
	f->s = NULL;

	assert_int_equal(store_open(&f->s, f->path, cause, sizeof cause), 0);
	assert_int_equal(store_history(f->s, T0, T0 + 20000, 1000, &tier, &b,
	                               &n, cause, sizeof cause),
	                 0);
	assert_string_equal(tier, "raw");
	assert_int_equal(n, 20);
	free(b);
	assert_int_equal(store_job_get(f->s, j.id, &got), 0);
	assert_int_equal(got->state, JOB_QUEUED);
	assert_int_equal(got->umask, 027);
	job_free(got);

	/* Nothing buffered after a reopen: the latest comes from disk,
	 * totals included although only some rows carry them. */
	sample_at(39, &want);
	assert_int_equal(store_latest(f->s, &latest), 0);
	assert_int_equal(latest.ts_ms, want.ts_ms);
	assert_true(latest.free_pct == want.free_pct);
	assert_int_equal(latest.total_bytes, want.total_bytes);
	assert_int_equal(latest.swap_total_bytes, want.swap_total_bytes);
	assert_int_equal(latest.swap_used_bytes, want.swap_used_bytes);
	assert_int_equal(latest.available_bytes, want.available_bytes);
	assert_int_equal(latest.pressure, want.pressure);
	assert_true(latest.psi_some_avg10 == want.psi_some_avg10);
}

/* Totals are stored only when they change (and hourly); the latest
 * sample read back from disk still carries the right ones. */
static void
test_totals_sparse(void **state)
{
	struct fixture *f = *state;
	struct sys_sample ss, got;
	char cause[256] = "";
	int64_t i;

	for (i = 0; i < 30; i++) {
		sample_at(i, &ss);
		if (i >= 10)
			ss.swap_total_bytes = 6ULL
			                      << 30; /* a swap file added */
		store_add_sample(f->s, &ss);
	}
	flush_ok(f->s);
	assert_int_equal(count_rows(f->path, "SELECT count(*) FROM "
	                                     "samples WHERE total_bytes "
	                                     "IS NOT NULL"),
	                 2);
	store_close(f->s);
	assert_int_equal(store_open(&f->s, f->path, cause, sizeof cause), 0);
	assert_int_equal(store_latest(f->s, &got), 0);
	assert_int_equal(got.ts_ms, ss.ts_ms);
	assert_int_equal(got.total_bytes, 48ULL << 30);
	assert_int_equal(got.swap_total_bytes, 6ULL << 30);
}

static void
test_latest_empty(void **state)
{
	struct fixture *f = *state;
	struct sys_sample ss, got;

	assert_int_equal(store_latest(f->s, &got), 1);
	sample_at(5, &ss);
	store_add_sample(f->s, &ss);
	/* Buffered counts: it is what the daemon last measured. */
	assert_int_equal(store_latest(f->s, &got), 0);
	assert_int_equal(got.ts_ms, ss.ts_ms);
}

static void
test_refuse_foreign(void **state)
{
	struct fixture *f = *state;
	char path[400], cause[256] = "", mode[32];
	struct store *s = NULL;
	sqlite3 *db;
	FILE *fp;

	/* Another application's database is left untouched. */
	snprintf(path, sizeof path, "%s/other.db", f->dir);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	raw_exec(db, "CREATE TABLE notes (x TEXT)");
	sqlite3_close(db);
	assert_int_equal(store_open(&s, path, cause, sizeof cause), -EINVAL);
	assert_null(s);
	assert_non_null(strstr(cause, "not a stageload database"));
	db = raw_open(path);
	raw_text(db, "PRAGMA journal_mode", mode, sizeof mode);
	assert_string_equal(mode, "delete");
	assert_int_equal(raw_int(db, "PRAGMA user_version"), 0);
	sqlite3_close(db);
	remove_db_files(path);

	/* Not sqlite at all. */
	assert_non_null(fp = fopen(path, "w"));
	fputs(
	    "this is a text file, long enough to have a header...........\n"
	    "................................................................",
	    fp);
	fclose(fp);
	cause[0] = '\0';
	assert_true(store_open(&s, path, cause, sizeof cause) < 0);
	assert_null(s);
	assert_true(strlen(cause) > 0);
	remove_db_files(path);

	/* A database from a newer stageload. */
	store_close(f->s);
	f->s = NULL;
	db = raw_open(f->path);
	raw_exec(db, "PRAGMA user_version = 99");
	sqlite3_close(db);
	cause[0] = '\0';
	assert_int_equal(store_open(&s, f->path, cause, sizeof cause),
	                 -EPROTONOSUPPORT);
	assert_non_null(strstr(cause, "newer"));
	db = raw_open(f->path);
	raw_exec(db, "PRAGMA user_version = 13");
	sqlite3_close(db);
	assert_int_equal(store_open(&f->s, f->path, cause, sizeof cause), 0);
}

/* A database of schema 6 is brought to 7: its jobs start after nothing
 * and are not held; a job's dependencies and hold round-trip. */
static void
test_migrate_from_6(void **state)
{
	struct fixture *f = *state;
	char cause[256] = "";
	int64_t after[] = {3, 9007199254740992LL};
	struct job j, k, *got;
	sqlite3 *db;

	memset(&j, 0, sizeof j);
	j.state = JOB_QUEUED;
	j.attempt = 1;
	assert_int_equal(store_job_insert(f->s, &j, cause, sizeof cause), 0);
	store_close(f->s);
	f->s = NULL;
	db = raw_open(f->path);
	raw_to_schema_6(db);
	raw_exec(db, "PRAGMA user_version = 6");
	sqlite3_close(db);

	assert_int_equal(store_open(&f->s, f->path, cause, sizeof cause), 0);
	assert_int_equal(store_job_get(f->s, j.id, &got), 0);
	assert_null(got->after);
	assert_int_equal(got->nafter, 0);
	assert_int_equal(got->after_any, 0);
	assert_int_equal(got->held, 0);
	assert_null(got->group);
	assert_int_equal(got->wait_free_bytes, 0);
	job_free(got);

	memset(&k, 0, sizeof k);
	k.state = JOB_QUEUED;
	k.attempt = 1;
	k.after = after;
	k.nafter = 2;
	k.after_any = 1;
	k.held = 1;
	k.group = "gpu";
	k.wait_free_bytes = (uint64_t)30 << 30;
	k.on_end = "echo done";
	assert_int_equal(store_job_insert(f->s, &k, cause, sizeof cause), 0);
	assert_int_equal(store_job_get(f->s, k.id, &got), 0);
	assert_int_equal(got->nafter, 2);
	assert_int_equal(got->after[0], 3);
	assert_int_equal(got->after[1], 9007199254740992LL);
	assert_int_equal(got->after_any, 1);
	assert_int_equal(got->held, 1);
	assert_string_equal(got->group, "gpu");
	assert_int_equal(got->wait_free_bytes, (uint64_t)30 << 30);
	assert_string_equal(got->on_end, "echo done");
	job_free(got);
}

struct expect {
	int64_t n;
	int64_t free_min, free_max, free_sum; /* basis points */
	int64_t swap_min, swap_max, swap_sum;
	int64_t avail_min, avail_max, avail_sum;
	int pressure_max;
};

/* The answer computed from the input, independently of the store. */
static void
expect_bucket(int64_t from, int64_t to, int64_t bstart, int64_t step,
              struct expect *e)
{
	struct sys_sample ss;
	int64_t i;

	memset(e, 0, sizeof *e);
	for (i = from; i < to; i++) {
		int64_t bp, sw, av;

		sample_at(i, &ss);
		if (ss.ts_ms < bstart || ss.ts_ms >= bstart + step)
			continue;
		bp = (int64_t)(ss.free_pct * 100 + 0.5);
		sw = (int64_t)ss.swap_used_bytes;
		av = (int64_t)ss.available_bytes;
		if (e->n == 0) {
			e->free_min = e->free_max = bp;
			e->swap_min = e->swap_max = sw;
			e->avail_min = e->avail_max = av;
		}
		e->n++;
		e->free_min = bp < e->free_min ? bp : e->free_min;
		e->free_max = bp > e->free_max ? bp : e->free_max;
		e->swap_min = sw < e->swap_min ? sw : e->swap_min;
		e->swap_max = sw > e->swap_max ? sw : e->swap_max;
		e->avail_min = av < e->avail_min ? av : e->avail_min;
		e->avail_max = av > e->avail_max ? av : e->avail_max;
		e->free_sum += bp;
		e->swap_sum += sw;
		e->avail_sum += av;
		if ((int)ss.pressure > e->pressure_max)
			e->pressure_max = (int)ss.pressure;
	}
}

static void
check_history(struct store *s, int64_t from, int64_t to, int64_t since,
              int64_t until, int64_t step, const char *want_tier)
{
	struct history_bucket *b;
	struct expect e;
	char cause[256] = "";
	const char *tier = NULL;
	size_t n, i, want_n;
	int64_t bs;

	if (store_history(s, since, until, step, &tier, &b, &n, cause,
	                  sizeof cause) != 0)
		fail_msg("store_history: %s", cause);
	assert_string_equal(tier, want_tier);
	want_n = 0;
	for (bs = since - since % step; bs < until; bs += step) {
		expect_bucket(from, to, bs, step, &e);
		if (e.n > 0)
			want_n++;
	}
	assert_int_equal(n, want_n);
	for (i = 0; i < n; i++) {
		assert_int_equal(b[i].ts_ms % step, 0);
		expect_bucket(from, to, b[i].ts_ms, step, &e);
		assert_int_equal(b[i].n, e.n);
		assert_true(b[i].free_pct_min == e.free_min / 100.0);
		assert_true(b[i].free_pct_max == e.free_max / 100.0);
		assert_float_equal(b[i].free_pct_avg,
		                   (double)e.free_sum / e.n / 100.0, 1e-9);
		assert_true(b[i].swap_used_min == (double)e.swap_min);
		assert_true(b[i].swap_used_max == (double)e.swap_max);
		assert_float_equal(b[i].swap_used_avg, (double)e.swap_sum / e.n,
		                   1e-3);
		assert_true(b[i].available_min == (double)e.avail_min);
		assert_true(b[i].available_max == (double)e.avail_max);
		assert_float_equal(b[i].available_avg,
		                   (double)e.avail_sum / e.n, 1e-3);
		assert_int_equal(b[i].pressure_max, e.pressure_max);
		assert_int_equal(b[i].gap_before, 0);
	}
	free(b);
}

static void
test_history_tiers(void **state)
{
	struct fixture *f = *state;
	const int64_t count = 2 * 3600 * 2; /* two hours at 0.5 s */
	const int64_t end = T0 + count * 500;

	feed(f->s, 0, count);
	check_history(f->s, 0, count, T0, end, 500, "raw");
	check_history(f->s, 0, count, T0 + 1234, T0 + 60000, 3000, "raw");
	check_history(f->s, 0, count, T0, end, 10000, "10s");
	check_history(f->s, 0, count, T0, end, 30000, "10s");
	check_history(f->s, 0, count, T0, end, 60000, "1m");
	check_history(f->s, 0, count, T0 + 3600000, end, 300000, "1m");
	check_history(f->s, 0, count, T0, end, 600000, "10m");
	check_history(f->s, 0, count, T0, end, 3600000, "10m");
	check_history(f->s, 0, count, T0 - 86400000, end + 86400000, 86400000,
	              "10m");
}

static void
test_history_rejects(void **state)
{
	struct fixture *f = *state;
	struct history_bucket *b;
	char cause[256] = "";
	size_t n;

	assert_int_equal(store_history(f->s, T0, T0 + 1000, 0, NULL, &b, &n,
	                               cause, sizeof cause),
	                 -EINVAL);
	assert_true(strlen(cause) > 0);
	assert_int_equal(store_history(f->s, T0 + 1000, T0, 1000, NULL, &b, &n,
	                               cause, sizeof cause),
	                 -EINVAL);
	assert_int_equal(store_history(f->s, T0, T0 + 86400000LL * 30, 1000,
	                               NULL, &b, &n, cause, sizeof cause),
	                 -E2BIG);
	assert_int_equal(store_history(f->s, T0, T0, 1000, NULL, &b, &n, cause,
	                               sizeof cause),
	                 0);
	assert_int_equal(n, 0);
	free(b);
}

static void
test_gap_marker(void **state)
{
	struct fixture *f = *state;
	struct history_bucket *b;
	char cause[256] = "";
	const char *tier;
	size_t n, i;

	/* Sampling from 0 to 60 s, a restart, sampling again from 125 s. */
	assert_int_equal(store_mark(f->s, T0, "start", cause, sizeof cause), 0);
	feed(f->s, 0, 120);
	assert_int_equal(
	    store_mark(f->s, T0 + 60000, "stop", cause, sizeof cause), 0);
	assert_int_equal(
	    store_mark(f->s, T0 + 125000, "start", cause, sizeof cause), 0);
	feed(f->s, 250, 400);

	assert_int_equal(store_history(f->s, T0 + 10000, T0 + 200000, 10000,
	                               &tier, &b, &n, cause, sizeof cause),
	                 0);
	assert_string_equal(tier, "10s");
	assert_int_equal(n, 5 + 8); /* 10..60 s and 120..200 s */
	for (i = 0; i < n; i++)
		assert_int_equal(b[i].gap_before, b[i].ts_ms == T0 + 120000);
	free(b);

	/* The start at T0 marks the first bucket when it is in range. */
	assert_int_equal(store_history(f->s, T0, T0 + 200000, 60000, &tier, &b,
	                               &n, cause, sizeof cause),
	                 0);
	assert_string_equal(tier, "1m");
	/* 0, 2 and 3 min; the minute between is empty and omitted */
	assert_int_equal(n, 3);
	free(b);
	assert_int_equal(store_history(f->s, T0 + 1, T0 + 200000, 60000, &tier,
	                               &b, &n, cause, sizeof cause),
	                 0);
	for (i = 0; i < n; i++)
		assert_int_equal(b[i].gap_before,
		                 b[i].ts_ms == T0 || b[i].ts_ms == T0 + 120000);
	free(b);
}

/* History read in parts of any size is the history read whole, the gap
 * marks included: the start marked at 110 s falls in a part holding no
 * sample (nothing was sampled from 60 to 125 s) and flags the first bucket
 * of a later part, at 125 s. */
static void
test_history_parts(void **state)
{
	struct fixture *f = *state;
	struct store_history_cursor c;
	struct history_bucket *whole, *part;
	char cause[256] = "";
	const char *tier;
	size_t n, np, got, i;
	int64_t max;

	assert_int_equal(store_mark(f->s, T0, "start", cause, sizeof cause), 0);
	feed(f->s, 0, 120);
	assert_int_equal(
	    store_mark(f->s, T0 + 60000, "stop", cause, sizeof cause), 0);
	assert_int_equal(
	    store_mark(f->s, T0 + 110000, "start", cause, sizeof cause), 0);
	feed(f->s, 250, 400);
	assert_int_equal(store_history(f->s, T0 + 500, T0 + 200000, 1000, &tier,
	                               &whole, &n, cause, sizeof cause),
	                 0);
	assert_true(n > 100);
	for (max = 1; max <= 70; max += 23) {
		assert_int_equal(store_history_begin(f->s, T0 + 500,
		                                     T0 + 200000, 1000, &c,
		                                     cause, sizeof cause),
		                 0);
		assert_string_equal(c.tier, tier);
		got = 0;
		while (!c.done) {
			assert_int_equal(store_history_next(f->s, &c, max,
			                                    &part, &np, cause,
			                                    sizeof cause),
			                 0);
			assert_true(np <= (size_t)max);
			assert_true(got + np <= n);
			for (i = 0; i < np; i++) {
				size_t k = got++;

				assert_int_equal(part[i].ts_ms, whole[k].ts_ms);
				assert_int_equal(part[i].n, whole[k].n);
				assert_int_equal(part[i].gap_before,
				                 whole[k].gap_before);
				assert_true(part[i].free_pct_avg ==
				            whole[k].free_pct_avg);
			}
			free(part);
		}
		assert_int_equal(got, n);
	}
	for (i = 0; i < n; i++)
		assert_int_equal(whole[i].gap_before,
		                 whole[i].ts_ms == T0 ||
		                     whole[i].ts_ms == T0 + 125000);
	free(whole);
}

static void
fill_job(struct job *j, int priority, enum job_state st, int64_t ended)
{
	memset(j, 0, sizeof *j);
	j->priority = priority;
	j->state = st;
	j->attempt = 1;
	j->ended_ms = ended;
}

static int64_t expiring_id;
static int expiring_n;

static void
note_expiring(void *arg, int64_t id)
{
	(*(int *)arg)++;
	expiring_id = id;
}

static void
test_prune(void **state)
{
	struct fixture *f = *state;
	struct store_retention r;
	struct store_event ev;
	struct job old, recent, live, *got;
	char cause[256] = "";
	const int64_t day = 86400000LL;
	int64_t now = T0 + 3 * day;
	int64_t i;

	r = retention_defaults();
	assert_int_equal(r.raw_ms, 2 * day);
	assert_int_equal(r.t10s_ms, 14 * day);
	assert_int_equal(r.t1m_ms, 90 * day);
	assert_int_equal(r.t10m_ms, 730 * day);
	assert_int_equal(r.jobs_ms, 90 * day);

	/* One sample an hour for three days (batch of 72). */
	for (i = 0; i < 72; i++) {
		struct sys_sample ss;

		sample_at(i * 7200, &ss);
		store_add_sample(f->s, &ss);
		store_add_job_sample(f->s, 1, ss.ts_ms, 100, 0);
	}
	flush_ok(f->s);
	fill_job(&old, 0, JOB_EXITED, now - 100 * day);
	fill_job(&recent, 0, JOB_KILLED, now - day);
	fill_job(&live, 0, JOB_RUNNING, 0);
	assert_int_equal(store_job_insert(f->s, &old, cause, sizeof cause), 0);
	assert_int_equal(store_job_insert(f->s, &recent, cause, sizeof cause),
	                 0);
	assert_int_equal(store_job_insert(f->s, &live, cause, sizeof cause), 0);
	assert_int_equal(old.id, 1);
	memset(&ev, 0, sizeof ev);
	ev.kind = "exited";
	ev.job_id = old.id;
	ev.ts_ms = now - 100 * day;
	assert_int_equal(store_event_add(f->s, &ev, cause, sizeof cause), 0);
	ev.job_id = recent.id;
	assert_int_equal(store_event_add(f->s, &ev, cause, sizeof cause), 0);
	assert_int_equal(store_mark(f->s, T0, "start", cause, sizeof cause), 0);

	r.t10s_ms = day + day / 2;
	/* What will go is listed first, so its files can go too: only the
	 * old ended job. */
	expiring_n = 0;
	assert_int_equal(
	    store_jobs_expiring(f->s, now, &r, note_expiring, &expiring_n), 0);
	assert_int_equal(expiring_n, 1);
	assert_int_equal(expiring_id, old.id);
	if (store_prune(f->s, now, &r, cause, sizeof cause) != 0)
		fail_msg("store_prune: %s", cause);
	/* raw keeps the last 2 days: hours 24..71 */
	assert_int_equal(count_rows(f->path, "SELECT count(*) FROM samples"),
	                 48);
	assert_int_equal(count_rows(f->path, "SELECT min(ts_ms) - "
	                                     "1764480000000 FROM samples"),
	                 (int)day);
	assert_int_equal(count_rows(f->path, "SELECT count(*) FROM rollup_10s"),
	                 36);
	assert_int_equal(count_rows(f->path, "SELECT count(*) FROM rollup_1m"),
	                 72);
	assert_int_equal(count_rows(f->path, "SELECT count(*) FROM rollup_10m"),
	                 72);
	assert_int_equal(count_rows(f->path, "SELECT count(*) FROM markers"),
	                 1);
	/* History past a tier's retention comes from the next coarser tier
	 * that still holds it (10 s was cut later than raw: skipped). */
	{
		struct history_bucket *hb;
		const char *tier = NULL;
		const int64_t hour = 3600000LL;
		size_t n;

		assert_int_equal(store_history(f->s, T0, T0 + 12 * hour, 1000,
		                               &tier, &hb, &n, cause,
		                               sizeof cause),
		                 0);
		assert_string_equal(tier, "1m");
		assert_int_equal(n, 12);
		assert_int_equal(hb[11].ts_ms, T0 + 11 * hour);
		free(hb);
		assert_int_equal(store_history(f->s, T0 + 30 * hour,
		                               T0 + 32 * hour, 1000, &tier, &hb,
		                               &n, cause, sizeof cause),
		                 0);
		assert_string_equal(tier, "raw");
		assert_int_equal(n, 2);
		free(hb);
		assert_int_equal(store_history(f->s, T0 + 37 * hour,
		                               T0 + 40 * hour, 10000, &tier,
		                               &hb, &n, cause, sizeof cause),
		                 0);
		assert_string_equal(tier, "10s");
		assert_int_equal(n, 3);
		free(hb);
	}
	/* The old ended job goes with its samples and events. */
	assert_int_equal(store_job_get(f->s, old.id, &got), 1);
	assert_int_equal(store_job_get(f->s, recent.id, &got), 0);
	job_free(got);
	assert_int_equal(store_job_get(f->s, live.id, &got), 0);
	job_free(got);
	assert_int_equal(
	    count_rows(f->path, "SELECT count(*) FROM job_samples"), 0);
	assert_int_equal(count_rows(f->path, "SELECT count(*) FROM events"), 1);

	/* Ids are never reused after a prune. */
	fill_job(&old, 0, JOB_QUEUED, 0);
	assert_int_equal(store_job_insert(f->s, &old, cause, sizeof cause), 0);
	assert_int_equal(old.id, 4);
}

static char *
xstrdup(const char *s)
{
	char *d = strdup(s);

	assert_non_null(d);
	return d;
}

static char **
strv(const char *a, const char *b, const char *c)
{
	char **v = calloc(4, sizeof *v);

	assert_non_null(v);
	v[0] = xstrdup(a);
	if (b != NULL)
		v[1] = xstrdup(b);
	if (b != NULL && c != NULL)
		v[2] = xstrdup(c);
	return v;
}

static void
assert_strv_equal(char **a, char **b)
{
	size_t i;

	if (a == NULL || b == NULL) {
		assert_ptr_equal(a, b);
		return;
	}
	for (i = 0; a[i] != NULL || b[i] != NULL; i++) {
		assert_non_null(a[i]);
		assert_non_null(b[i]);
		assert_string_equal(a[i], b[i]);
	}
}

static void
assert_job_equal(const struct job *a, const struct job *b)
{
	assert_int_equal(a->id, b->id);
	assert_int_equal(a->queue_seq, b->queue_seq);
	assert_int_equal(a->uid, b->uid);
	assert_int_equal(a->gid, b->gid);
	assert_string_equal(a->user, b->user);
	assert_string_equal(a->name, b->name);
	assert_strv_equal(a->argv, b->argv);
	assert_string_equal(a->cwd, b->cwd);
	assert_strv_equal(a->env, b->env);
	assert_int_equal(a->attached, b->attached);
	assert_int_equal(a->priority, b->priority);
	assert_true(a->wait_free_pct == b->wait_free_pct);
	assert_int_equal(a->swap_budget_bytes, b->swap_budget_bytes);
	assert_int_equal(a->expect_bytes, b->expect_bytes);
	assert_int_equal(a->exclusive, b->exclusive);
	assert_int_equal(a->retry_on_breach, b->retry_on_breach);
	assert_int_equal(a->attempt, b->attempt);
	assert_int_equal(a->state, b->state);
	assert_int_equal(a->submitted_ms, b->submitted_ms);
	assert_int_equal(a->admitted_ms, b->admitted_ms);
	assert_int_equal(a->started_ms, b->started_ms);
	assert_int_equal(a->ended_ms, b->ended_ms);
	assert_int_equal(a->pid, b->pid);
	assert_int_equal(a->pgid, b->pgid);
	assert_int_equal(a->start_time, b->start_time);
	assert_int_equal(a->monitor_pid, b->monitor_pid);
	assert_int_equal(a->exit_code, b->exit_code);
	assert_int_equal(a->term_signal, b->term_signal);
	if (a->end_reason == NULL || b->end_reason == NULL)
		assert_ptr_equal(a->end_reason, b->end_reason);
	else
		assert_string_equal(a->end_reason, b->end_reason);
	if (a->end_detail == NULL || b->end_detail == NULL)
		assert_ptr_equal(a->end_detail, b->end_detail);
	else
		assert_string_equal(a->end_detail, b->end_detail);
	assert_int_equal(a->swap_base_bytes, b->swap_base_bytes);
	assert_int_equal(a->footprint_bytes, b->footprint_bytes);
	assert_int_equal(a->footprint_peak_bytes, b->footprint_peak_bytes);
	assert_int_equal(a->swap_growth_peak_bytes, b->swap_growth_peak_bytes);
	assert_int_equal(a->job_swap_bytes, b->job_swap_bytes);
}

static void
test_job_roundtrip(void **state)
{
	struct fixture *f = *state;
	char cause[256] = "";
	struct job *j, *got, *first;

	assert_non_null(j = calloc(1, sizeof *j));
	j->uid = 501;
	j->gid = 20;
	j->user = xstrdup("ana");
	j->name = xstrdup("qwen-1024");
	j->argv =
	    strv("python3", "generate.py", "--prompt=\"a \\ cat\"\n\xc3\xa9");
	j->cwd = xstrdup("/Users/ana/work");
	j->env = strv("PATH=/usr/bin", "EMPTY=", "TAB=\t");
	j->priority = -7;
	j->wait_free_pct = 40.5;
	j->swap_budget_bytes = 8ULL << 30;
	j->expect_bytes = 20ULL << 30;
	j->exclusive = 1;
	j->retry_on_breach = 3;
	j->attempt = 2;
	j->state = JOB_QUEUED;
	j->submitted_ms = T0;
	assert_int_equal(store_job_insert(f->s, j, cause, sizeof cause), 0);
	assert_int_equal(j->id, 1);
	assert_int_equal(j->queue_seq, 1);
	assert_int_equal(store_job_get(f->s, j->id, &first), 0);
	assert_job_equal(j, first);

	/* Every field changes and comes back, but argv and env: they stay as
	 * inserted, as the table keeps neither (job_drop_args). */
	assert_int_equal(job_drop_args(j), 0);
	assert_null(j->argv);
	assert_null(j->env);
	j->queue_seq = 99;
	j->uid = 0;
	j->gid = 0;
	free(j->name);
	j->name = xstrdup("renamed");
	j->attached = 1;
	j->priority = 1000;
	j->wait_free_pct = 0;
	j->swap_budget_bytes = UINT64_MAX - 1;
	j->expect_bytes = 1;
	j->exclusive = 0;
	j->retry_on_breach = 0;
	j->attempt = 4;
	j->state = JOB_KILLED;
	j->admitted_ms = T0 + 1;
	j->started_ms = T0 + 2;
	j->ended_ms = T0 + 3;
	j->pid = 4242;
	j->pgid = 4242;
	j->start_time = 0xfedcba9876543210ULL;
	j->monitor_pid = 4241;
	j->exit_code = 3;
	j->term_signal = 9;
	j->end_reason = xstrdup("swap_budget");
	j->end_detail = xstrdup("swap grew 8.1 GiB (budget 8 GiB) at ...");
	j->swap_base_bytes = 1ULL << 30;
	j->footprint_bytes = 30ULL << 30;
	j->footprint_peak_bytes = 31ULL << 30;
	j->swap_growth_peak_bytes = 9ULL << 30;
	j->job_swap_bytes = 5ULL << 30;
	assert_int_equal(store_job_update(f->s, j, cause, sizeof cause), 0);
	assert_int_equal(store_job_get(f->s, j->id, &got), 0);
	j->argv = first->argv;
	j->env = first->env;
	first->argv = first->env = NULL;
	assert_job_equal(j, got);
	job_free(got);
	job_free(first);

	assert_int_equal(store_job_get(f->s, 77, &got), 1);
	assert_null(got);
	j->id = 77;
	assert_int_equal(store_job_update(f->s, j, cause, sizeof cause),
	                 -ENOENT);
	job_free(j);
}

struct collected {
	int64_t ids[16];
	int n;
	int stop_after;
};

static int
collect_job(void *arg, struct job *j)
{
	struct collected *c = arg;

	c->ids[c->n++] = j->id;
	job_free(j);
	return c->stop_after > 0 && c->n == c->stop_after ? 42 : 0;
}

struct relabel {
	struct store *s;
	int n;
};

/* A callback that writes to the jobs being listed. */
static int
end_each_job(void *arg, struct job *j)
{
	struct relabel *r = arg;
	char cause[128];

	j->state = JOB_LOST;
	j->ended_ms = T0;
	assert_int_equal(store_job_update(r->s, j, cause, sizeof cause), 0);
	r->n++;
	job_free(j);
	return 0;
}

static void
test_unended_order(void **state)
{
	struct fixture *f = *state;
	static const struct {
		int priority;
		enum job_state st;
		int64_t ended;
	} spec[] = {
	    {0, JOB_QUEUED, 0},          /* 1 */
	    {5, JOB_QUEUED, 0},          /* 2 */
	    {0, JOB_EXITED, T0 + 10},    /* 3 */
	    {0, JOB_RUNNING, 0},         /* 4 */
	    {5, JOB_ADMITTED, 0},        /* 5 */
	    {-3, JOB_QUEUED, 0},         /* 6 */
	    {9, JOB_CANCELLED, T0 + 30}, /* 7 */
	    {0, JOB_LOST, T0 + 20},      /* 8 */
	};
	/* job 9 is requeued with priority 5 and an early queue_seq */
	static const int64_t want_unended[] = {9, 2, 5, 1, 4, 6};
	static const int64_t want_ended[] = {7, 8, 3};
	struct collected c;
	struct relabel rl;
	char cause[256] = "";
	struct job j;
	size_t i;

	for (i = 0; i < sizeof spec / sizeof spec[0]; i++) {
		fill_job(&j, spec[i].priority, spec[i].st, spec[i].ended);
		assert_int_equal(
		    store_job_insert(f->s, &j, cause, sizeof cause), 0);
		assert_int_equal(j.id, (int64_t)i + 1);
	}
	/* A requeued job keeps its place: an explicit, early queue_seq. */
	fill_job(&j, 0, JOB_QUEUED, 0);
	j.queue_seq = 0;
	assert_int_equal(store_job_insert(f->s, &j, cause, sizeof cause), 0);
	j.queue_seq = -1;
	j.priority = 5;
	assert_int_equal(store_job_update(f->s, &j, cause, sizeof cause), 0);

	memset(&c, 0, sizeof c);
	assert_int_equal(store_jobs_unended(f->s, collect_job, &c), 0);
	assert_int_equal(c.n, 6);
	for (i = 0; i < 6; i++)
		assert_int_equal(c.ids[i], want_unended[i]);
	memset(&c, 0, sizeof c);
	assert_int_equal(store_jobs_ended(f->s, 0, collect_job, &c), 0);
	assert_int_equal(c.n, 3);
	for (i = 0; i < 3; i++)
		assert_int_equal(c.ids[i], want_ended[i]);
	memset(&c, 0, sizeof c);
	assert_int_equal(store_jobs_ended(f->s, 2, collect_job, &c), 0);
	assert_int_equal(c.n, 2);

	/* A non-zero return stops the walk and the rest is freed. */
	memset(&c, 0, sizeof c);
	c.stop_after = 2;
	assert_int_equal(store_jobs_unended(f->s, collect_job, &c), 42);
	assert_int_equal(c.n, 2);

	/* The start-up walk may end the jobs it is given. */
	rl.s = f->s;
	rl.n = 0;
	assert_int_equal(store_jobs_unended(f->s, end_each_job, &rl), 0);
	assert_int_equal(rl.n, 6);
	memset(&c, 0, sizeof c);
	assert_int_equal(store_jobs_unended(f->s, collect_job, &c), 0);
	assert_int_equal(c.n, 0);
}

struct evlist {
	int64_t ids[16];
	char kinds[16][32];
	char details[16][64];
	int n;
};

static int
collect_event(void *arg, const struct store_event *e)
{
	struct evlist *l = arg;

	l->ids[l->n] = e->id;
	snprintf(l->kinds[l->n], sizeof l->kinds[0], "%s", e->kind);
	snprintf(l->details[l->n], sizeof l->details[0], "%s",
	         e->detail != NULL ? e->detail : "(null)");
	l->n++;
	return 0;
}

static void
test_events(void **state)
{
	struct fixture *f = *state;
	static const char *kinds[] = {"daemon_start", "submitted", "admitted",
	                              "started", "exited"};
	struct store_event e[5], *last[2] = {&e[3], &e[4]};
	struct evlist l;
	char cause[256] = "", detail[5][64];
	size_t i;

	for (i = 0; i < 5; i++) {
		memset(&e[i], 0, sizeof e[i]);
		e[i].ts_ms = T0 + (int64_t)i;
		e[i].job_id = i == 0 ? 0 : 12;
		e[i].uid = i == 0 ? 0 : 501;
		e[i].kind = kinds[i];
		snprintf(detail[i], sizeof detail[i], "{\"n\":%zu}", i);
		e[i].detail = i == 4 ? NULL : detail[i];
		if (i < 3)
			assert_int_equal(
			    store_event_add(f->s, &e[i], cause, sizeof cause),
			    0);
	}
	/* the last two in one transaction, as an array's are */
	assert_int_equal(store_events_add(f->s, last, 2, cause, sizeof cause),
	                 0);
	for (i = 0; i < 5; i++)
		assert_int_equal(e[i].id, (int64_t)i + 1);
	memset(&l, 0, sizeof l);
	assert_int_equal(store_events(f->s, 0, 0, 0, collect_event, &l), 0);
	assert_int_equal(l.n, 5);
	assert_string_equal(l.kinds[0], "daemon_start");
	assert_string_equal(l.details[1], "{\"n\":1}");
	assert_string_equal(l.details[4], "(null)");
	memset(&l, 0, sizeof l);
	assert_int_equal(store_events(f->s, 2, 0, 2, collect_event, &l), 0);
	assert_int_equal(l.n, 2);
	assert_int_equal(l.ids[0], 3);
	assert_int_equal(l.ids[1], 4);
	assert_string_equal(l.kinds[1], "started");
	/* One job's alone, either way, by its index. */
	memset(&l, 0, sizeof l);
	assert_int_equal(store_events(f->s, 0, 12, 0, collect_event, &l), 0);
	assert_int_equal(l.n, 4);
	assert_int_equal(l.ids[0], 2);
	memset(&l, 0, sizeof l);
	assert_int_equal(store_events_before(f->s, 5, 12, 2, collect_event, &l),
	                 0);
	assert_int_equal(l.n, 2);
	assert_int_equal(l.ids[0], 4);
	assert_int_equal(l.ids[1], 3);
	memset(&l, 0, sizeof l);
	assert_int_equal(store_events(f->s, 0, 13, 0, collect_event, &l), 0);
	assert_int_equal(l.n, 0);
}

static void
test_job_samples(void **state)
{
	struct fixture *f = *state;
	struct job_bucket *b;
	char cause[256] = "";
	size_t n;
	int64_t i;

	for (i = 0; i < 40; i++) {
		store_add_job_sample(f->s, 7, T0 + i * 500,
		                     (uint64_t)(1000 + i), (uint64_t)(i % 4));
		store_add_job_sample(f->s, 8, T0 + i * 500, 5, 5);
	}
	flush_ok(f->s);
	assert_int_equal(store_job_history(f->s, 7, 0, INT64_MAX, 0, &b, &n,
	                                   cause, sizeof cause),
	                 0);
	assert_int_equal(n, 40);
	assert_true(b[39].footprint_max == 1039);
	assert_true(b[39].swap_avg == 3);
	free(b);
	assert_int_equal(store_job_history(f->s, 7, 0, INT64_MAX, 10000, &b, &n,
	                                   cause, sizeof cause),
	                 0);
	assert_int_equal(n, 2);
	assert_int_equal(b[1].ts_ms, T0 + 10000);
	assert_true(b[1].footprint_min == 1020);
	assert_true(b[1].footprint_max == 1039);
	assert_float_equal(b[1].footprint_avg, 1029.5, 1e-9);
	assert_true(b[1].swap_min == 0);
	assert_true(b[1].swap_max == 3);
	assert_float_equal(b[1].swap_avg, 1.5, 1e-9);
	free(b);
}

/* A range picks whole buckets within it, and only the samples in it count
 * against the limit: a long job's last minute is not refused for its
 * length. */
static void
test_job_history_range(void **state)
{
	struct fixture *f = *state;
	struct job_bucket *b;
	char cause[256] = "";
	size_t n;
	int64_t i;

	for (i = 0; i < STORE_HISTORY_MAX + 20000; i++) {
		store_add_job_sample(f->s, 9, T0 + i * 500, (uint64_t)i, 0);
		if (i % 10000 == 9999)
			flush_ok(f->s); /* within the ring's capacity */
	}
	flush_ok(f->s);
	assert_int_equal(store_job_history(f->s, 9, T0, INT64_MAX, 0, &b, &n,
	                                   cause, sizeof cause),
	                 -E2BIG);
	assert_int_equal(store_job_history(f->s, 9, T0 + 5000, T0 + 9999, 0, &b,
	                                   &n, cause, sizeof cause),
	                 0);
	assert_int_equal(n, 10);
	assert_int_equal(b[0].ts_ms, T0 + 5000);
	assert_int_equal(b[9].ts_ms, T0 + 9500);
	free(b);
	/* since inside a bucket: that bucket is left out; until inside one:
	 * it is kept whole. */
	assert_int_equal(store_job_history(f->s, 9, T0 + 1, T0 + 20001, 10000,
	                                   &b, &n, cause, sizeof cause),
	                 0);
	assert_int_equal(n, 2);
	assert_int_equal(b[0].ts_ms, T0 + 10000);
	assert_int_equal(b[1].ts_ms, T0 + 20000);
	assert_int_equal(b[1].n, 20);
	assert_true(b[1].footprint_min == 40 && b[1].footprint_max == 59);
	free(b);
}

/* A writer elsewhere holds the lock: the flush fails, keeps everything,
 * and the next one after the lock is gone commits it all. */
static void
test_flush_busy(void **state)
{
	struct fixture *f = *state;
	struct sys_sample ss;
	char cause[256] = "";
	sqlite3 *db;
	int64_t i;

	db = raw_open(f->path);
	raw_exec(db, "BEGIN EXCLUSIVE");
	raw_exec(db, "INSERT INTO markers (ts_ms, kind) VALUES (1, 'x')");
	for (i = 0; i < 30; i++) {
		sample_at(i, &ss);
		store_add_sample(f->s, &ss);
		store_add_job_sample(f->s, 3, ss.ts_ms, 1, 2);
	}
	assert_int_equal(store_flush(f->s, cause, sizeof cause), -EBUSY);
	assert_non_null(strstr(cause, "locked"));
	assert_int_equal(store_pending(f->s), 60);
	raw_exec(db, "ROLLBACK");
	sqlite3_close(db);

	feed(f->s, 30, 60);
	assert_int_equal(store_pending(f->s), 0);
	assert_int_equal(store_dropped(f->s), 0);
	check_history(f->s, 0, 60, T0, T0 + 60000, 1000, "raw");
	check_history(f->s, 0, 60, T0, T0 + 60000, 10000, "10s");
	assert_int_equal(
	    count_rows(f->path, "SELECT count(*) FROM job_samples"), 30);
}

/* A failure in the middle of the transaction rolls back the raw rows as
 * well as the rollups, so a retry never counts a sample twice. */
static void
test_flush_fails_midway(void **state)
{
	struct fixture *f = *state;
	char cause[256] = "";
	struct sys_sample ss;
	sqlite3 *db;
	int64_t i;

	feed(f->s, 0, 10);
	db = raw_open(f->path);
	raw_exec(db, "CREATE TRIGGER no_room BEFORE INSERT ON rollup_1m "
	             "BEGIN SELECT RAISE(ABORT, 'disk said no'); END");
	for (i = 10; i < 200; i++) {
		sample_at(i, &ss);
		store_add_sample(f->s, &ss);
	}
	assert_true(store_flush(f->s, cause, sizeof cause) < 0);
	assert_non_null(strstr(cause, "disk said no"));
	assert_int_equal(store_pending(f->s), 190);
	assert_int_equal(count_rows(f->path, "SELECT count(*) FROM samples"),
	                 10);
	/* Still failing: still kept. */
	assert_true(store_flush(f->s, cause, sizeof cause) < 0);
	assert_int_equal(store_pending(f->s), 190);
	raw_exec(db, "DROP TRIGGER no_room");
	sqlite3_close(db);

	flush_ok(f->s);
	assert_int_equal(store_pending(f->s), 0);
	check_history(f->s, 0, 200, T0, T0 + 100000, 500, "raw");
	check_history(f->s, 0, 200, T0, T0 + 100000, 10000, "10s");
	check_history(f->s, 0, 200, T0, T0 + 100000, 60000, "1m");
	check_history(f->s, 0, 200, T0, T0 + 100000, 600000, "10m");
}

/* A write-protected database is refused at open with a clear cause
 * rather than failing every write later. Skipped as root, whom file
 * permissions do not stop. */
static void
test_open_readonly(void **state)
{
	struct fixture *f = *state;
	struct store *ro = NULL;
	char cause[256] = "";

	if (geteuid() == 0)
		skip();
	feed(f->s, 0, 4);
	store_close(f->s);
	f->s = NULL;
	assert_int_equal(chmod(f->path, 0400), 0);
	assert_int_equal(store_open(&ro, f->path, cause, sizeof cause), -EROFS);
	assert_null(ro);
	assert_non_null(strstr(cause, "read-only"));
	assert_int_equal(chmod(f->path, 0600), 0);
	if (store_open(&f->s, f->path, cause, sizeof cause) != 0)
		fail_msg("reopen: %s", cause);
	check_history(f->s, 0, 4, T0, T0 + 2000, 500, "raw");
}

static void
test_buffer_bounded(void **state)
{
	struct fixture *f = *state;
	struct history_bucket *b;
	char cause[256] = "";
	struct sys_sample ss;
	const int64_t over = 100;
	size_t n, cap;
	int64_t i;

	for (i = 0; i < 8000; i++) {
		sample_at(i, &ss);
		store_add_sample(f->s, &ss);
	}
	cap = store_pending(f->s);
	assert_true(cap > 0 && cap < 8000);
	assert_int_equal(store_dropped(f->s), 8000 - cap);
	for (i = 8000; i < 8000 + over; i++) {
		sample_at(i, &ss);
		store_add_sample(f->s, &ss);
	}
	assert_int_equal(store_pending(f->s), cap);
	assert_int_equal(store_dropped(f->s), 8000 + over - cap);
	flush_ok(f->s);
	/* The newest are the ones kept. */
	assert_int_equal(store_history(f->s, T0, T0 + 86400000LL, 3600000, NULL,
	                               &b, &n, cause, sizeof cause),
	                 0);
	assert_true(n >= 1);
	free(b);
	assert_int_equal(count_rows(f->path, "SELECT count(*) FROM samples"),
	                 (int)cap);
	assert_int_equal(count_rows(f->path, "SELECT max(ts_ms) - "
	                                     "min(ts_ms) FROM samples"),
	                 (int)((cap - 1) * 500));
	assert_int_equal(count_rows(f->path, "SELECT sum(n) FROM rollup_10s"),
	                 (int)cap);
}

static void
test_duplicate_timestamp(void **state)
{
	struct fixture *f = *state;
	struct sys_sample ss;

	sample_at(3, &ss);
	store_add_sample(f->s, &ss);
	flush_ok(f->s);
	store_add_sample(f->s, &ss); /* the clock did not move */
	flush_ok(f->s);
	assert_int_equal(count_rows(f->path, "SELECT sum(n) FROM rollup_1m"),
	                 1);
	assert_int_equal(count_rows(f->path, "SELECT count(*) FROM samples"),
	                 1);
}

static void
test_checkpoint_and_size(void **state)
{
	struct fixture *f = *state;
	int64_t before;

	before = store_size_bytes(f->s);
	assert_true(before > 0);
	feed(f->s, 0, 2000);
	assert_true(store_size_bytes(f->s) > before);
	assert_int_equal(store_checkpoint(f->s), 0);
}

/* Commits that take the WAL past 1000 pages wake the checkpoint thread,
 * which copies it into the database file by itself; store_checkpoint asks
 * it for one more. */
static int
ckpt_runs_past(struct store *s, uint64_t runs)
{
	struct store_ckpt_stats st;
	struct timespec ts = {0, 5 * 1000 * 1000};
	int i;

	for (i = 0; i < 2000; i++) { /* at most 10 s */
		assert_int_equal(store_checkpoint_stats(s, &st), 0);
		if (st.runs > runs) {
			assert_int_equal(st.last_rc, 0);
			assert_true(st.max_us >= st.last_us);
			return 1;
		}
		nanosleep(&ts, NULL);
	}
	return 0;
}

static void
test_checkpoint_thread(void **state)
{
	struct fixture *f = *state;
	struct store_ckpt_stats st;
	struct stat sb;
	off_t before;

	assert_int_equal(store_checkpoint_stats(f->s, &st), 0);
	assert_int_equal(st.runs, 0);
	assert_int_equal(stat(f->path, &sb), 0);
	before = sb.st_size;
	feed(f->s, 0, 6000); /* some 850 commits, several pages each */
	assert_true(ckpt_runs_past(f->s, 0));
	assert_int_equal(stat(f->path, &sb), 0);
	assert_true(sb.st_size > before);
	assert_int_equal(store_checkpoint_stats(f->s, &st), 0);
	assert_int_equal(store_checkpoint(f->s), 0);
	assert_true(ckpt_runs_past(f->s, st.runs));
}

/* Commits faster than the thread copies them: the WAL stays within its
 * bound (32 MiB of pages, then the commit finishes the copy and the next
 * one restarts it), where it would otherwise grow by every commit. */
static void
test_checkpoint_wal_bounded(void **state)
{
	struct fixture *f = *state;
	struct store_ckpt_stats st;
	char cause[256] = "", wal[320], *big;
	char *argv[] = {"x", NULL, NULL};
	struct stat sb;
	off_t most = 0;
	struct job j;
	int i;

	snprintf(wal, sizeof wal, "%s-wal", f->path);
	assert_non_null(big = malloc(1 << 20));
	memset(big, 'a', (1 << 20) - 1);
	big[(1 << 20) - 1] = '\0';
	argv[1] = big;
	for (i = 0; i < 120; i++) { /* 120 MiB, a commit each */
		memset(&j, 0, sizeof j);
		j.state = JOB_QUEUED;
		j.attempt = 1;
		j.uid = 1000;
		j.name = "big";
		j.cwd = "/tmp";
		j.argv = argv;
		assert_int_equal(
		    store_job_insert(f->s, &j, cause, sizeof cause), 0);
		if (stat(wal, &sb) == 0 && sb.st_size > most)
			most = sb.st_size;
	}
	free(big);
	assert_int_equal(store_checkpoint_stats(f->s, &st), 0);
	assert_true(st.capped > 0);
	/* The bound, the commit that passed it, and sqlite's headers. */
	assert_true(most < (off_t)40 << 20);
}

/* ---- storage health (store_health): a real failure, not a mock: another
 * connection holds the write lock, so every write of the store waits out
 * its busy timeout and fails with "database is locked". ---- */

static sqlite3 *
lock_writes(const char *path)
{
	sqlite3 *db = raw_open(path);

	raw_exec(db, "BEGIN EXCLUSIVE");
	raw_exec(db, "INSERT INTO markers (ts_ms, kind) VALUES (1, 'x')");
	return db;
}

static void
unlock_writes(sqlite3 *db)
{
	raw_exec(db, "ROLLBACK");
	sqlite3_close(db);
}

/* store_health is what + ": " + the cause the write handed back. */
static void
assert_health(struct store *s, const char *what, const char *cause)
{
	char want[256];

	snprintf(want, sizeof want, "%s: %s", what, cause);
	assert_non_null(store_health(s));
	assert_string_equal(store_health(s), want);
}

static void
assert_failing(struct store *s, int samples, int jobs, int events)
{
	assert_int_equal(!!store_area_failing(s, STORE_AREA_SAMPLES), samples);
	assert_int_equal(!!store_area_failing(s, STORE_AREA_JOBS), jobs);
	assert_int_equal(!!store_area_failing(s, STORE_AREA_EVENTS), events);
}

static void
test_health_job_update(void **state)
{
	struct fixture *f = *state;
	char cause[256] = "", raise[512], longmsg[301];
	struct job j;
	sqlite3 *db;

	assert_null(store_health(NULL));
	assert_int_equal(store_area_failing(NULL, STORE_AREA_JOBS), 0);
	assert_null(store_health(f->s));
	assert_failing(f->s, 0, 0, 0);
	fill_job(&j, 0, JOB_QUEUED, 0);
	assert_int_equal(store_job_insert(f->s, &j, cause, sizeof cause), 0);
	flush_ok(f->s);
	assert_null(store_health(f->s));

	db = lock_writes(f->path);
	j.state = JOB_RUNNING;
	assert_int_equal(store_job_update(f->s, &j, cause, sizeof cause),
	                 -EBUSY);
	assert_non_null(strstr(cause, "locked"));
	assert_health(f->s, "job update", cause);
	assert_int_equal(strncmp(store_health(f->s), "job update: ", 12), 0);
	assert_failing(f->s, 0, 1, 0);
	/* Failing again: the text is the last failure's, still one area. */
	j.state = JOB_EXITED;
	assert_true(store_job_update(f->s, &j, cause, sizeof cause) < 0);
	assert_health(f->s, "job update", cause);
	assert_failing(f->s, 0, 1, 0);
	unlock_writes(db);

	/* The next update that works clears it. */
	assert_int_equal(store_job_update(f->s, &j, cause, sizeof cause), 0);
	assert_null(store_health(f->s));
	assert_failing(f->s, 0, 0, 0);

	/* A long cause is cut to fit the 256 bytes. */
	memset(longmsg, 'x', sizeof longmsg - 1);
	longmsg[sizeof longmsg - 1] = '\0';
	snprintf(raise, sizeof raise,
	         "CREATE TRIGGER no_update BEFORE UPDATE ON jobs "
	         "BEGIN SELECT RAISE(ABORT, '%s'); END",
	         longmsg);
	db = raw_open(f->path);
	raw_exec(db, raise);
	assert_true(store_job_update(f->s, &j, cause, sizeof cause) < 0);
	assert_non_null(strstr(cause, "xxxx"));
	assert_int_equal(strlen(store_health(f->s)), 255);
	assert_int_equal(
	    strncmp(store_health(f->s), "job update: updating a job: xxxx", 32),
	    0);
	raw_exec(db, "DROP TRIGGER no_update");
	sqlite3_close(db);
	assert_int_equal(store_job_update(f->s, &j, cause, sizeof cause), 0);
	assert_null(store_health(f->s));
}

/* An update that failed and was undone is never written again: the probe
 * writes each failing area once writes work, changing nothing, and keeps
 * the area's own cause while they still fail. */
static void
test_health_probe(void **state)
{
	struct fixture *f = *state;
	char jcause[256] = "", ecause[256] = "", scause[256] = "";
	struct store_event e;
	struct sys_sample ss;
	struct job j, *got = NULL;
	sqlite3 *db;

	assert_int_equal(store_health_probe(NULL), 0);
	assert_int_equal(store_health_probe(f->s), 0); /* healthy: nothing */
	fill_job(&j, 0, JOB_QUEUED, 0);
	assert_int_equal(store_job_insert(f->s, &j, jcause, sizeof jcause), 0);
	memset(&e, 0, sizeof e);
	e.kind = "submitted";
	e.job_id = j.id;
	e.ts_ms = T0;
	assert_int_equal(store_event_add(f->s, &e, ecause, sizeof ecause), 0);

	db = lock_writes(f->path);
	j.state = JOB_ADMITTED;
	assert_true(store_job_update(f->s, &j, jcause, sizeof jcause) < 0);
	j.state = JOB_QUEUED; /* undone, as an admission that failed is */
	e.kind = "admitted";
	assert_true(store_event_add(f->s, &e, ecause, sizeof ecause) < 0);
	sample_at(0, &ss);
	store_add_sample(f->s, &ss);
	assert_true(store_flush(f->s, scause, sizeof scause) < 0);
	assert_failing(f->s, 1, 1, 1);
	/* Still locked: the probe fails, and says nothing new. */
	assert_int_equal(store_health_probe(f->s), 3);
	assert_failing(f->s, 1, 1, 1);
	assert_health(f->s, "job update", jcause);
	unlock_writes(db);

	/* Writes work: jobs and events clear with no write of their own;
	 * samples are left to their flush, retried every tick. */
	assert_int_equal(store_health_probe(f->s), 1);
	assert_failing(f->s, 1, 0, 0);
	assert_health(f->s, "samples", scause);
	flush_ok(f->s);
	assert_null(store_health(f->s));
	/* Nothing changed: the job as it was, one event. */
	assert_int_equal(store_job_get(f->s, j.id, &got), 0);
	assert_int_equal(got->state, JOB_QUEUED);
	job_free(got);
	db = raw_open(f->path);
	assert_int_equal(raw_int(db, "SELECT count(*) FROM events"), 1);
	sqlite3_close(db);
}

/* Several kinds failing at once: the oldest failure shows, and a kind
 * that works again clears only itself. */
static void
test_health_oldest_first(void **state)
{
	struct fixture *f = *state;
	char jcause[256] = "", scause[256] = "", ecause[256] = "";
	struct store_event e;
	struct sys_sample ss;
	struct job j, k;
	sqlite3 *db;

	fill_job(&j, 0, JOB_QUEUED, 0);
	assert_int_equal(store_job_insert(f->s, &j, jcause, sizeof jcause), 0);

	/* Jobs first, then samples, then events. */
	db = lock_writes(f->path);
	j.state = JOB_RUNNING;
	assert_true(store_job_update(f->s, &j, jcause, sizeof jcause) < 0);
	sample_at(0, &ss);
	store_add_sample(f->s, &ss);
	assert_int_equal(store_flush(f->s, scause, sizeof scause), -EBUSY);
	assert_non_null(strstr(scause, "locked"));
	assert_health(f->s, "job update", jcause);
	assert_failing(f->s, 1, 1, 0);
	/* A later failure of samples does not put them first. */
	assert_true(store_flush(f->s, scause, sizeof scause) < 0);
	memset(&e, 0, sizeof e);
	e.ts_ms = T0;
	e.kind = "daemon_start";
	assert_true(store_event_add(f->s, &e, ecause, sizeof ecause) < 0);
	assert_health(f->s, "job update", jcause);
	assert_failing(f->s, 1, 1, 1);
	unlock_writes(db);

	/* Jobs work again: samples, the next oldest, show. */
	assert_int_equal(store_job_update(f->s, &j, jcause, sizeof jcause), 0);
	assert_health(f->s, "samples", scause);
	assert_int_equal(strncmp(store_health(f->s), "samples: ", 9), 0);
	assert_failing(f->s, 1, 0, 1);
	flush_ok(f->s);
	assert_health(f->s, "event", ecause);
	assert_failing(f->s, 0, 0, 1);
	assert_int_equal(store_event_add(f->s, &e, ecause, sizeof ecause), 0);
	assert_null(store_health(f->s));
	assert_failing(f->s, 0, 0, 0);

	/* Samples first this time, then a job insert. */
	db = lock_writes(f->path);
	sample_at(1, &ss);
	store_add_sample(f->s, &ss);
	assert_true(store_flush(f->s, scause, sizeof scause) < 0);
	fill_job(&k, 0, JOB_QUEUED, 0);
	assert_true(store_job_insert(f->s, &k, jcause, sizeof jcause) < 0);
	assert_non_null(strstr(jcause, "locked"));
	assert_health(f->s, "samples", scause);
	assert_failing(f->s, 1, 0, 0);
	assert_true(store_area_failing(f->s, STORE_AREA_SUBMIT));
	unlock_writes(db);

	/* A marker is a write of samples too: it clears them, and the
	 * failed insert, which nothing retries: the database takes writes. */
	assert_int_equal(
	    store_mark(f->s, T0 + 1000, "start", scause, sizeof scause), 0);
	assert_null(store_health(f->s));
	assert_false(store_area_failing(f->s, STORE_AREA_SUBMIT));

	/* A failed insert alone shows until any write works. */
	db = lock_writes(f->path);
	assert_true(store_job_insert(f->s, &k, jcause, sizeof jcause) < 0);
	assert_health(f->s, "job insert", jcause);
	assert_failing(f->s, 0, 0, 0);
	unlock_writes(db);
	sample_at(2, &ss);
	store_add_sample(f->s, &ss);
	flush_ok(f->s);
	assert_null(store_health(f->s));
	assert_int_equal(store_job_insert(f->s, &k, jcause, sizeof jcause), 0);
	assert_null(store_health(f->s));
	flush_ok(f->s);
	assert_null(store_health(f->s));
	assert_int_equal(count_rows(f->path, "SELECT count(*) FROM samples"),
	                 3);
}

static int64_t forgot[64];
static int nforgot;

static void
note_forgot(void *arg, int64_t id)
{
	(void)arg;
	if (nforgot < 64)
		forgot[nforgot++] = id;
}

/* A job of uid whose argv holds bytes bytes (cwd "/", name "n"). */
static void
usage_job(struct job *j, char **argv, char *arg, size_t bytes, uid_t uid,
          enum job_state st, int64_t ended)
{
	fill_job(j, 0, st, ended);
	memset(arg, 'x', bytes);
	arg[bytes] = '\0';
	argv[0] = arg;
	argv[1] = NULL;
	j->argv = argv;
	j->cwd = "/";
	j->name = "n";
	j->uid = uid;
}

/* Per-uid accounting: kept at insert and at the end of a job, recounted
 * the same at open; store_make_room deletes that uid's oldest ended jobs
 * first (samples and events with them), never another uid's, never an
 * unended one, and names each so its files can go. */
static void
test_usage_and_make_room(void **state)
{
	struct fixture *f = *state;
	struct store_usage u;
	struct store_event ev;
	struct job j[6], other;
	char *argv[6][2], *oargv[2], arg[6][200], oarg[200];
	char cause[256] = "";
	int i, pruned = -1;

	/* uid 1000: ended at T0+5, T0+1, T0+3 (so age order is 1, 2, 0),
	 * one running, one queued; uid 2000: one old ended job. */
	usage_job(&j[0], argv[0], arg[0], 100, 1000, JOB_EXITED, T0 + 5);
	usage_job(&j[1], argv[1], arg[1], 100, 1000, JOB_CANCELLED, T0 + 1);
	usage_job(&j[2], argv[2], arg[2], 100, 1000, JOB_KILLED, T0 + 3);
	usage_job(&j[3], argv[3], arg[3], 100, 1000, JOB_RUNNING, 0);
	usage_job(&j[4], argv[4], arg[4], 100, 1000, JOB_QUEUED, 0);
	usage_job(&other, oargv, oarg, 100, 2000, JOB_EXITED, T0);
	for (i = 0; i < 5; i++)
		assert_int_equal(
		    store_job_insert(f->s, &j[i], cause, sizeof cause), 0);
	assert_int_equal(store_job_insert(f->s, &other, cause, sizeof cause),
	                 0);
	store_usage(f->s, 1000, &u);
	assert_int_equal(store_job_bytes(&j[0]), 102);
	assert_int_equal(u.bytes, 5 * 102);
	assert_int_equal(u.ended_bytes, 3 * 102);
	assert_int_equal(u.jobs, 5);
	assert_int_equal(u.ended, 3);
	/* The running job ends: it counts as ended from then on. */
	j[3].state = JOB_EXITED;
	j[3].ended_ms = T0 + 9;
	assert_int_equal(store_job_update(f->s, &j[3], cause, sizeof cause), 0);
	assert_int_equal(store_job_update(f->s, &j[3], cause, sizeof cause), 0);
	store_usage(f->s, 1000, &u);
	assert_int_equal(u.ended, 4);
	assert_int_equal(u.ended_bytes, 4 * 102);
	/* Reopened: the same counts from the rows (one query). */
	store_close(f->s);
	assert_int_equal(store_open(&f->s, f->path, cause, sizeof cause), 0);
	store_usage(f->s, 1000, &u);
	assert_int_equal(u.bytes, 5 * 102);
	assert_int_equal(u.ended_bytes, 4 * 102);
	assert_int_equal(u.jobs, 5);
	assert_int_equal(u.ended, 4);
	store_usage(f->s, 2000, &u);
	assert_int_equal(u.bytes, 102);
	assert_int_equal(u.ended, 1);

	memset(&ev, 0, sizeof ev);
	ev.kind = "cancelled";
	ev.job_id = j[1].id;
	ev.uid = 1000;
	assert_int_equal(store_event_add(f->s, &ev, cause, sizeof cause), 0);
	store_add_job_sample(f->s, j[1].id, T0, 100, 0);
	flush_ok(f->s);

	/* Room for 150 bytes under 500: two must go, the two oldest. */
	nforgot = 0;
	assert_int_equal(store_make_room(f->s, 1000, 150, 500, 100, note_forgot,
	                                 NULL, &pruned, cause, sizeof cause),
	                 0);
	assert_int_equal(pruned, 2);
	assert_int_equal(nforgot, 2);
	assert_int_equal(forgot[0], j[1].id);
	assert_int_equal(forgot[1], j[2].id);
	store_usage(f->s, 1000, &u);
	assert_int_equal(u.bytes, 3 * 102);
	assert_int_equal(u.ended, 2);
	assert_int_equal(count_rows(f->path, "SELECT count(*) FROM jobs"), 4);
	assert_int_equal(
	    count_rows(f->path, "SELECT count(*) FROM events WHERE job_id = 2"),
	    0);
	assert_int_equal(count_rows(f->path, "SELECT count(*) FROM job_samples"
	                                     " WHERE job_id = 2"),
	                 0);
	/* Exactly max_ended ended: all are kept. */
	nforgot = 0;
	assert_int_equal(store_make_room(f->s, 1000, 0, 1 << 20, 2, note_forgot,
	                                 NULL, &pruned, cause, sizeof cause),
	                 0);
	assert_int_equal(pruned, 0);
	/* More than max_ended ended: the oldest go until max_ended are left
	 * (j[0], not the later-ended j[3]). */
	assert_int_equal(store_make_room(f->s, 1000, 0, 1 << 20, 1, note_forgot,
	                                 NULL, &pruned, cause, sizeof cause),
	                 0);
	assert_int_equal(pruned, 1);
	assert_int_equal(forgot[0], j[0].id);
	/* Nothing fits: every ended job goes, the unended one stays. */
	assert_int_equal(store_make_room(f->s, 1000, 1000, 500, 100,
	                                 note_forgot, NULL, &pruned, cause,
	                                 sizeof cause),
	                 0);
	assert_int_equal(pruned, 1);
	store_usage(f->s, 1000, &u);
	assert_int_equal(u.bytes, 102);
	assert_int_equal(u.ended, 0);
	assert_int_equal(u.jobs, 1);
	assert_int_equal(
	    count_rows(f->path, "SELECT count(*) FROM jobs WHERE uid = 1000"),
	    1);
	/* The other uid's ended job was never touched. */
	assert_int_equal(
	    count_rows(f->path, "SELECT count(*) FROM jobs WHERE uid = 2000"),
	    1);
	store_usage(f->s, 2000, &u);
	assert_int_equal(u.bytes, 102);
	/* The age prune takes what it deletes off the counts. */
	{
		struct store_retention r;

		r = retention_defaults();
		r.jobs_ms = 86400000LL;
		assert_int_equal(store_prune(f->s, T0 + 2 * r.jobs_ms, &r,
		                             cause, sizeof cause),
		                 0);
	}
	store_usage(f->s, 2000, &u);
	assert_int_equal(u.bytes, 0);
	assert_int_equal(u.jobs, 0);
	assert_int_equal(u.ended, 0);
	store_usage(f->s, 1000, &u);
	assert_int_equal(u.bytes, 102);
	assert_int_equal(u.jobs, 1);
	/* Both prunes took the args of what they deleted. */
	assert_int_equal(count_rows(f->path, "SELECT count(*) FROM job_args"),
	                 count_rows(f->path, "SELECT count(*) FROM jobs"));
	assert_int_equal(count_rows(f->path, "SELECT count(*) FROM jobs"), 1);
}

/* ---- accounting (store-report.h) ---- */

/* An ended job of uid, named name, as the daemon ends one. */
static struct job *
ended_job(uid_t uid, const char *name, enum job_state st, int64_t ended_ms,
          int64_t run_ms)
{
	struct job *j = calloc(1, sizeof *j);

	assert_non_null(j);
	j->uid = uid;
	j->user = xstrdup(uid == 501 ? "ana" : "bo");
	j->name = xstrdup(name);
	j->state = st;
	j->submitted_ms = ended_ms - run_ms - 1000;
	j->started_ms = st == JOB_CANCELLED ? 0 : ended_ms - run_ms;
	j->ended_ms = ended_ms;
	j->attempt = 1;
	return j;
}

/* Sum the report of q wholly, in parts of part rows. */
static struct store_report *
report_all(struct fixture *f, const struct store_report_query *q, int64_t part)
{
	struct store_report *rep;
	char cause[256] = "";
	int rc;

	if (store_report_begin(store_reader(f->s), q, &rep, cause,
	                       sizeof cause) != 0)
		fail_msg("store_report_begin: %s", cause);
	while ((rc = store_report_next(rep, part, cause, sizeof cause)) == 1)
		;
	if (rc != 0)
		fail_msg("store_report_next: %s", cause);
	return rep;
}

static void
test_report_days(void **state)
{
	struct fixture *f = *state;
	struct store_report_query q = {.since_ms = T0,
	                               .until_ms = T0 + 3 * STORE_REPORT_DAY_MS,
	                               .by = STORE_REPORT_BY_BOTH};
	const struct store_report_row *rows;
	struct store_report *rep;
	struct job *jobs[130], *j;
	char cause[256] = "", name[32];
	size_t i, n;
	int64_t day0 = T0 / STORE_REPORT_DAY_MS * STORE_REPORT_DAY_MS;

	/* 120 names of uid 501 in one day: the first 100 keep their rows,
	 * the 20 after them are summed in one "(other)" row. */
	for (i = 0; i < 120; i++) {
		snprintf(name, sizeof name, "n%03zu", i);
		jobs[i] =
		    ended_job(501, name, JOB_EXITED, day0 + 3600000 + i, 2000);
		jobs[i]->footprint_peak_bytes = (uint64_t)i << 20;
	}
	jobs[119]->exit_code = 1;
	assert_int_equal(store_account(f->s, jobs, 120, cause, sizeof cause),
	                 0);
	/* A name that has its row takes no new one; another uid's names
	 * are its own. */
	jobs[120] = ended_job(501, "n000", JOB_KILLED, day0 + 7200000, 500);
	jobs[120]->end_reason = xstrdup("swap_budget");
	jobs[121] = ended_job(502, "n200", JOB_CANCELLED, day0 + 7200000, 0);
	/* the next day: a fresh hundred */
	jobs[122] = ended_job(501, "n150", JOB_FAILED,
	                      day0 + STORE_REPORT_DAY_MS + 10, 0);
	jobs[122]->started_ms = 0;
	assert_int_equal(
	    store_account(f->s, jobs + 120, 3, cause, sizeof cause), 0);
	assert_int_equal(count_rows(f->path, "SELECT count(*) FROM job_days"),
	                 100 + 1 + 1 + 1);
	assert_int_equal(count_rows(f->path, "SELECT runs FROM job_days WHERE"
	                                     " name = '(other)'"),
	                 20);

	/* Read back in parts of 7 rows, summed by user and name. */
	rep = report_all(f, &q, 7);
	assert_int_equal(store_report_oldest_ms(rep), day0);
	n = store_report_rows(rep, &rows);
	/* 100 names and (other) of ana's day 1, n150 of her day 2 (a name
	 * of day 1's (other) has a row of its own on another day), bo's */
	assert_int_equal(n, 100 + 1 + 1 + 1);
	/* ordered by user, then name: ana's "(other)" first ('(' < 'n') */
	assert_string_equal(rows[0].user, "ana");
	assert_string_equal(rows[0].name, "(other)");
	assert_int_equal(rows[0].runs, 20);
	assert_int_equal(rows[0].exited_0, 19);
	assert_int_equal(rows[0].exited_nonzero, 1);
	assert_int_equal(rows[0].footprint_peak_bytes, 119LL << 20);
	assert_int_equal(rows[0].run_time_ms, 20 * 2000);
	assert_string_equal(rows[1].name, "n000");
	assert_int_equal(rows[1].runs, 2);
	assert_int_equal(rows[1].exited_0, 1);
	assert_int_equal(rows[1].killed, 1);
	assert_int_equal(
	    cJSON_GetObjectItem(rows[1].killed_by, "swap_budget")->valueint, 1);
	assert_int_equal(rows[1].ran, 2);
	assert_int_equal(rows[1].run_time_ms, 2500);
	/* the median of 500 ms and 2 s: the lower, in its bucket (2 s) */
	assert_int_equal(store_report_hist_median(rows[1].hist, 2), 500);
	for (i = 0; i < n && strcmp(rows[i].name, "n150") != 0; i++)
		;
	assert_true(i < n);
	assert_int_equal(rows[i].runs, 1);
	assert_int_equal(rows[i].failed, 1);
	assert_int_equal(rows[i].ran, 0);
	assert_string_equal(rows[n - 1].user, "bo");
	assert_int_equal(rows[n - 1].cancelled, 1);
	store_report_free(rep);

	/* By user: one row each, every job counted once. */
	q.by = STORE_REPORT_BY_USER;
	rep = report_all(f, &q, 0);
	n = store_report_rows(rep, &rows);
	assert_int_equal(n, 2);
	assert_int_equal(rows[0].runs, 122);
	assert_null(rows[0].name);
	assert_int_equal(rows[1].runs, 1);
	store_report_free(rep);
	/* One uid, a glob of names, a range of one day. */
	{
		/* read as the daemon reads report's params: user as digits
		 * is a uid (no such login name here) */
		cJSON *p = cJSON_Parse("{\"user\":\"501\",\"name\":\"n09*\"}");

		assert_non_null(p);
		assert_int_equal(
		    store_filter_read(p, 0, &q.filter, cause, sizeof cause), 0);
		cJSON_Delete(p);
		assert_true(q.filter.has_uid && q.filter.uid == 501);
	}
	q.since_ms = day0;
	q.until_ms = day0 + 1000;
	rep = report_all(f, &q, 3);
	n = store_report_rows(rep, &rows);
	assert_int_equal(n, 1);
	assert_int_equal(rows[0].runs, 10);
	store_report_free(rep);

	/* The accounting outlives the jobs' retention: only the longest
	 * (2 years by default) prunes it. */
	{
		struct store_retention r = retention_defaults();

		assert_int_equal(store_prune(f->s,
		                             day0 + 400LL * STORE_REPORT_DAY_MS,
		                             &r, cause, sizeof cause),
		                 0);
		assert_int_equal(
		    count_rows(f->path, "SELECT count(*) FROM job_days"), 103);
		assert_int_equal(store_prune(f->s,
		                             day0 + 800LL * STORE_REPORT_DAY_MS,
		                             &r, cause, sizeof cause),
		                 0);
		assert_int_equal(
		    count_rows(f->path, "SELECT count(*) FROM job_days"), 0);
	}
	for (i = 0; i < 123; i++) {
		j = jobs[i];
		job_free(j);
	}
}

/* The update that ends a job counts it, once; later updates do not. */
static void
test_report_job_end(void **state)
{
	struct fixture *f = *state;
	struct job *j = ended_job(501, "gen", JOB_QUEUED, T0 + 5000, 3000);
	char cause[256] = "";

	j->argv = strv("true", NULL, NULL);
	j->cwd = xstrdup("/");
	assert_int_equal(store_job_insert(f->s, j, cause, sizeof cause), 0);
	j->state = JOB_RUNNING;
	assert_int_equal(store_job_update(f->s, j, cause, sizeof cause), 0);
	assert_int_equal(count_rows(f->path, "SELECT count(*) FROM job_days"),
	                 0);
	j->state = JOB_EXITED;
	j->footprint_peak_bytes = 7 << 20;
	assert_int_equal(store_job_update(f->s, j, cause, sizeof cause), 0);
	assert_int_equal(store_job_update(f->s, j, cause, sizeof cause), 0);
	assert_int_equal(count_rows(f->path, "SELECT runs FROM job_days"), 1);
	assert_int_equal(count_rows(f->path, "SELECT run_ms FROM job_days"),
	                 3000);
	assert_int_equal(count_rows(f->path, "SELECT waited_ms FROM job_days"),
	                 1000);
	assert_int_equal(
	    count_rows(f->path, "SELECT footprint_peak_bytes FROM job_days"),
	    7 << 20);
	job_free(j);
}

/* A report of more keys than STORE_REPORT_MAX_ROWS is refused, saying how
 * to narrow it; by user alone the same days are one row. */
static void
test_report_bound(void **state)
{
	struct fixture *f = *state;
	struct store_report_query q = {.since_ms = T0,
	                               .until_ms = T0 + STORE_REPORT_DAY_MS,
	                               .by = STORE_REPORT_BY_BOTH};
	const struct store_report_row *rows;
	struct store_report *rep;
	char cause[256] = "", sql[512];
	sqlite3 *db = raw_open(f->path);
	int rc;

	snprintf(sql, sizeof sql,
	         "WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 "
	         "FROM k WHERE i <= %d) INSERT INTO job_days SELECT %lld, "
	         "501, 'n' || i, 'ana', 1, 1, 0, 0, 0, 0, 0, NULL, 1, 1000, "
	         "'1:1', 0, 0, 0 FROM k",
	         STORE_REPORT_MAX_ROWS, (long long)(T0 / STORE_REPORT_DAY_MS));
	raw_exec(db, sql);
	sqlite3_close(db);
	assert_int_equal(store_report_begin(store_reader(f->s), &q, &rep, cause,
	                                    sizeof cause),
	                 0);
	while ((rc = store_report_next(rep, 5000, cause, sizeof cause)) == 1)
		;
	assert_int_equal(rc, -E2BIG);
	assert_non_null(strstr(cause, "narrow the report"));
	store_report_free(rep);
	q.by = STORE_REPORT_BY_USER;
	rep = report_all(f, &q, 5000);
	assert_int_equal(store_report_rows(rep, &rows), 1);
	assert_int_equal(rows[0].runs, STORE_REPORT_MAX_ROWS + 1);
	store_report_free(rep);
}

/* The histogram's buckets and its median's bound (store-report.h). */
static void
test_report_hist(void **state)
{
	uint32_t h[STORE_REPORT_HIST] = {0};
	int64_t v, m;
	char *t;

	(void)state;
	assert_int_equal(store_report_hist_bucket(0), 0);
	assert_int_equal(store_report_hist_bucket(999), 0);
	assert_int_equal(store_report_hist_bucket(1000), 1);
	assert_int_equal(store_report_hist_bucket(INT64_MAX),
	                 STORE_REPORT_HIST - 1);
	for (v = 1000; v < 100LL * 24 * 3600 * 1000; v = v * 11 / 10) {
		memset(h, 0, sizeof h);
		h[store_report_hist_bucket(v)] = 1;
		m = store_report_hist_median(h, 1);
		assert_true(m >= v * 0.955 && m <= v * 1.045);
	}
	memset(h, 0, sizeof h);
	h[0] = 1;
	h[5] = 2;
	h[199] = 4000000000u;
	assert_non_null(t = store_report_hist_text(h));
	assert_string_equal(t, "0:1,5:2,199:4000000000");
	memset(h, 0, sizeof h);
	assert_int_equal(store_report_hist_parse(t, h), 0);
	assert_int_equal(store_report_hist_parse(t, h), 0);
	assert_int_equal(h[5], 4);
	assert_int_equal(store_report_hist_parse("7", h), -EINVAL);
	assert_int_equal(store_report_hist_parse("300:1", h), -EINVAL);
	free(t);
	assert_int_equal(store_report_hist_median(h, 0), -1);
}

/* store_report_glob matches as fnmatch(3) does, in bounded time. */
static void
test_report_glob(void **state)
{
	static const char *const pats[] = {
	    "*",    "gen-*",     "gen-?",     "*-1*",
	    "g*n*", "[a-g]en-*", "[!g]*",     "gen-[0-9][0-9]",
	    "\\*x", "*[",        "[]x]*",     "a*b*c",
	    "",     "*a*",       "gen-1[45]", "[^a]*"};
	static const char *const names[] = {"gen-1", "gen-14", "gen-",    "abc",
	                                    "axbxc", "*x",     "[",       "]x",
	                                    "",      "x",      "gen-15b", "ab"};
	char longname[257], pat[64];
	size_t i, k;
	time_t t0;

	(void)state;
	for (i = 0; i < sizeof pats / sizeof pats[0]; i++)
		for (k = 0; k < sizeof names / sizeof names[0]; k++)
			if (store_report_glob(pats[i], names[k]) !=
			    (fnmatch(pats[i], names[k], 0) == 0))
				fail_msg(
				    "glob '%s' of '%s': %d, fnmatch says %d",
				    pats[i], names[k],
				    store_report_glob(pats[i], names[k]),
				    fnmatch(pats[i], names[k], 0) == 0);
	/* "*a*a*...*b" against 256 a's: fnmatch's backtracking would take
	 * ages; this is 64 x 256 steps. */
	memset(longname, 'a', 256);
	longname[256] = '\0';
	for (i = 0; i + 2 < sizeof pat; i += 2)
		memcpy(pat + i, "*a", 2);
	pat[i] = 'b';
	pat[i + 1] = '\0';
	t0 = time(NULL);
	for (k = 0; k < 1000; k++)
		assert_false(store_report_glob(pat, longname));
	assert_true(time(NULL) - t0 <= 2);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	    T(test_fresh_database),
	    T(test_reopen_keeps_data),
	    T(test_migrate_from_1),
	    T(test_migrate_from_4),
	    T(test_migrate_from_6),
	    T(test_migrate_from_11),
	    T(test_migrate_from_7),
	    T(test_migrate_from_10),
	    T(test_migrate_from_12),
	    T(test_array_args),
	    T(test_history_parts),
	    T(test_migrate_from_2),
	    T(test_job_groups_roundtrip),
	    T(test_latest_empty),
	    T(test_totals_sparse),
	    T(test_refuse_foreign),
	    T(test_history_tiers),
	    T(test_history_rejects),
	    T(test_gap_marker),
	    T(test_prune),
	    T(test_job_roundtrip),
	    T(test_unended_order),
	    T(test_events),
	    T(test_job_samples),
	    T(test_job_history_range),
	    T(test_flush_busy),
	    T(test_flush_fails_midway),
	    T(test_open_readonly),
	    T(test_buffer_bounded),
	    T(test_duplicate_timestamp),
	    T(test_checkpoint_and_size),
	    T(test_checkpoint_thread),
	    T(test_checkpoint_wal_bounded),
	    T(test_health_job_update),
	    T(test_health_oldest_first),
	    T(test_health_probe),
	    T(test_usage_and_make_room),
	    T(test_report_days),
	    T(test_report_job_end),
	    T(test_report_bound),
	    T(test_report_hist),
	    T(test_report_glob),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
