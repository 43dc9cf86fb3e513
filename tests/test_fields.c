/* The job field table (proto/job-fields.h) against what its consumers
 * make of it: the store's schema and a round trip of every stored member,
 * the Job's members for a stranger, its owner and a list, and the web
 * program's public Job. The lists here are literal on purpose: a wrong
 * cell in the table shows as a difference from them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "job-fields.h"
#include "store.h"
#include "web.h"
#include "wire.h"

/* Everyone's: what a stranger sees of an ended job. */
static const char *const public_members[] = {
    "attempts",
    "time_limit_ms",
    "time_limit_per_attempt_ms",
    "begin_ms",
    "slurm_job_id",
    "slurm_step_id",
    "slurm_task_id",
    "exit_reporter",
    "id",
    "user",
    "uid",
    "name",
    "state",
    "attached",
    "priority",
    "wait_free_pct",
    "wait_free_bytes",
    "swap_budget_bytes",
    "expect_bytes",
    "expect_source",
    "expect_runs",
    "name_given",
    "exclusive",
    "retry_on_breach",
    "attempt",
    "after",
    "after_any",
    "held",
    "group",
    "position",
    "submitted_at_ms",
    "admitted_at_ms",
    "started_at_ms",
    "ended_at_ms",
    "pid",
    "footprint_bytes",
    "footprint_peak_bytes",
    "swap_growth_bytes",
    "swap_growth_peak_bytes",
    "job_swap_bytes",
    "exit_code",
    "signal",
    "end_reason",
    "kill",
    NULL,
};

/* The owner's and root's alone (show with env). */
static const char *const owner_members[] = {
    "argv", "cwd", "on_end", "end_detail", "env", NULL,
};

/* All the web program may ever show of a Job: the public members, a
 * queued job's waiting_for, never a command, path or text of the job's. */
static const char *const web_members[] = {
    "attempts",
    "time_limit_ms",
    "time_limit_per_attempt_ms",
    "begin_ms",
    "slurm_job_id",
    "slurm_step_id",
    "slurm_task_id",
    "exit_reporter",
    "id",
    "user",
    "uid",
    "name",
    "state",
    "attached",
    "priority",
    "wait_free_pct",
    "wait_free_bytes",
    "swap_budget_bytes",
    "expect_bytes",
    "expect_source",
    "expect_runs",
    "name_given",
    "exclusive",
    "retry_on_breach",
    "attempt",
    "after",
    "after_any",
    "held",
    "group",
    "position",
    "waiting_for",
    "waiting_on",
    "waiting_until_ms",
    "submitted_at_ms",
    "admitted_at_ms",
    "started_at_ms",
    "ended_at_ms",
    "pid",
    "footprint_bytes",
    "footprint_peak_bytes",
    "swap_growth_bytes",
    "swap_growth_peak_bytes",
    "job_swap_bytes",
    "exit_code",
    "signal",
    "end_reason",
    "kill",
    NULL,
};

/* The columns of a jobs row, as the migrations of daemon/store.c make
 * them. */
static const char *const store_columns[] = {
    "attempts",
    "time_limit_ms",
    "time_limit_per_attempt_ms",
    "begin_ms",
    "slurm_job_id",
    "slurm_step_id",
    "slurm_task_id",
    "exit_reporter",
    "id",
    "queue_seq",
    "uid",
    "gid",
    "user",
    "name",
    "cwd",
    "attached",
    "priority",
    "wait_free_pct",
    "swap_budget_bytes",
    "expect_bytes",
    "exclusive",
    "retry_on_breach",
    "attempt",
    "state",
    "submitted_ms",
    "admitted_ms",
    "started_ms",
    "ended_ms",
    "pid",
    "pgid",
    "start_time",
    "monitor_pid",
    "exit_code",
    "term_signal",
    "end_reason",
    "end_detail",
    "swap_base_bytes",
    "footprint_bytes",
    "footprint_peak_bytes",
    "swap_growth_peak_bytes",
    "job_swap_bytes",
    "umask",
    "groups",
    "bytes",
    "kill",
    "after_ids",
    "after_any",
    "held",
    "queue_group",
    "wait_free_bytes",
    "on_end",
    "name_given",
    "expect_source",
    "expect_runs",
    "job_token",
    NULL,
};

/* The members older than the table whose wire name is another word. */
static const char *const renamed_members[] = {
    "submitted_ms=submitted_at_ms", "admitted_ms=admitted_at_ms",
    "started_ms=started_at_ms",     "ended_ms=ended_at_ms",
    "term_signal=signal",           NULL,
};

static size_t
list_len(const char *const *l)
{
	size_t n = 0;

	while (l[n] != NULL)
		n++;
	return n;
}

static int
in_list(const char *const *l, const char *name)
{
	for (; *l != NULL; l++)
		if (strcmp(*l, name) == 0)
			return 1;
	return 0;
}

/* o's member names are exactly a's and b's (b may be NULL). */
static void
assert_members(const cJSON *o, const char *const *a, const char *const *b,
               const char *what)
{
	const cJSON *it;
	size_t n = 0;

	assert_non_null(o);
	cJSON_ArrayForEach(it, o)
	{
		if (!in_list(a, it->string) &&
		    (b == NULL || !in_list(b, it->string)))
			fail_msg("%s: member %s is not in the list", what,
			         it->string);
		n++;
	}
	for (size_t i = 0; a[i] != NULL; i++)
		if (cJSON_GetObjectItemCaseSensitive(o, a[i]) == NULL)
			fail_msg("%s: no member %s", what, a[i]);
	for (size_t i = 0; b != NULL && b[i] != NULL; i++)
		if (cJSON_GetObjectItemCaseSensitive(o, b[i]) == NULL)
			fail_msg("%s: no member %s", what, b[i]);
	assert_int_equal(n, list_len(a) + (b != NULL ? list_len(b) : 0));
}

/* A job with every member set: killed, after a breach, by its owner 1000. */
static char *argv_[] = {"/bin/echo", "secret-arg", NULL};
static char *env_[] = {"SECRET=1", NULL};
static int64_t after_[] = {3, 4};
static gid_t groups_[] = {1000, 27};

static void
full_job(struct job *j)
{
	memset(j, 0, sizeof *j);
	j->id = 7;
	j->queue_seq = 7;
	j->uid = 1000;
	j->gid = 1000;
	j->groups = groups_;
	j->ngroups = 2;
	j->user = "alice";
	j->name = "train";
	j->argv = argv_;
	j->cwd = "/home/alice/secret-dir";
	j->env = env_;
	j->priority = -3;
	j->wait_free_pct = 12.5;
	j->wait_free_bytes = 1 << 30;
	j->swap_budget_bytes = 2ull << 30;
	j->expect_bytes = 3ull << 30;
	j->expect_source = JOB_EXPECT_GIVEN;
	j->expect_runs = 2;
	j->name_given = 1;
	j->exclusive = 1;
	j->retry_on_breach = 2;
	j->umask = 027;
	j->after = after_;
	j->nafter = 2;
	j->after_any = 1;
	j->held = 1;
	j->group = "gpu";
	j->on_end = "notify-secret";
	j->slurm_job_id = 1234;
	j->slurm_step_id = 5;
	j->slurm_task_id = 3;
	j->exit_reporter = "root";
	j->attempt = 2;
	j->state = JOB_KILLED;
	j->submitted_ms = 1000;
	j->admitted_ms = 2000;
	j->started_ms = 3000;
	j->ended_ms = 4000;
	j->pid = 4242;
	j->pgid = 4242;
	j->start_time = 99;
	j->monitor_pid = 4241;
	j->exit_code = 0;
	j->term_signal = 9;
	j->end_reason = "swap_budget";
	j->end_detail = "secret detail";
	j->kill = "{\"at_ms\":4000,\"swap_budget_bytes\":5}";
	j->attempts = "[{\"attempt\":1,\"queued_at_ms\":1000}]";
	j->time_limit_ms = 7200000;
	j->time_limit_per_attempt_ms = 3600000;
	j->begin_ms = 1700000000000;
	j->swap_base_bytes = 11;
	j->footprint_bytes = 12;
	j->footprint_peak_bytes = 13;
	j->swap_growth_peak_bytes = 14;
	j->job_swap_bytes = 15;
	j->bytes = 16;
	j->job_token = "00112233445566778899aabbccddeeff";
}

static void
test_renamed_members(void **state)
{
	char pair[128];

	(void)state;
#define RENAMED(m, w, ...)                                                     \
	if (strcmp(#m, w) != 0) {                                              \
		snprintf(pair, sizeof pair, "%s=%s", #m, w);                   \
		if (!in_list(renamed_members, pair))                           \
			fail_msg("member %s has another wire name, %s", #m,    \
			         w);                                           \
	}
	JOB_FIELDS(RENAMED)
#undef RENAMED
}

static void
test_wire_members(void **state)
{
	struct jobs_view v;
	struct job j;
	cJSON *o;

	(void)state;
	full_job(&j);
	o = wire_job_ended(&j, 2000, 1);
	assert_members(o, public_members, NULL, "a stranger's show");
	cJSON_Delete(o);
	o = wire_job_ended(&j, 1000, 1);
	assert_members(o, public_members, owner_members, "the owner's show");
	cJSON_Delete(o);
	o = wire_job_ended(&j, 0, 1);
	assert_members(o, public_members, owner_members, "root's show");
	cJSON_Delete(o);
	/* A list: command instead of argv and env, null for a stranger. */
	o = wire_job_ended_list(&j, 2000);
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(o, "command")));
	cJSON_DeleteItemFromObject(o, "command");
	assert_members(o, public_members, NULL, "a stranger's list");
	cJSON_Delete(o);
	/* A queued one in the table says what it waits for. */
	j.state = JOB_QUEUED;
	memset(&v, 0, sizeof v);
	v.j = &j;
	v.in_table = v.live = 1;
	v.position = 1;
	v.wait = ADMIT_WAIT_SETTLE;
	o = wire_job(&v, 2000, 0);
	assert_string_equal(
	    cJSON_GetStringValue(cJSON_GetObjectItem(o, "waiting_for")),
	    "settle");
	cJSON_DeleteItemFromObject(o, "waiting_for");
	/* and what it waits behind: none named here, no time known */
	assert_int_equal(
	    cJSON_GetArraySize(cJSON_GetObjectItem(o, "waiting_on")), 0);
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(o, "waiting_until_ms")));
	cJSON_DeleteItemFromObject(o, "waiting_on");
	cJSON_DeleteItemFromObject(o, "waiting_until_ms");
	assert_members(o, public_members, NULL, "a stranger's queued job");
	cJSON_Delete(o);
}

/* What root's daemon gives the web program, the most it could pass on. */
static void
test_web_members(void **state)
{
	struct jobs_view v;
	struct job j;
	cJSON *in, *list, *out;
	const cJSON *it;
	const char *const never[] = {"argv",   "env",     "cwd", "end_detail",
	                             "on_end", "command", NULL};

	(void)state;
	full_job(&j);
	j.state = JOB_QUEUED;
	memset(&v, 0, sizeof v);
	v.j = &j;
	v.in_table = v.live = 1;
	v.position = 1;
	v.wait = ADMIT_WAIT_SETTLE;
	in = wire_job(&v, 0, 1);
	list = wire_job_list(&v, 0);
	cJSON_ArrayForEach(it, list) if (!cJSON_HasObjectItem(in, it->string))
	    cJSON_AddItemToObject(in, it->string, cJSON_Duplicate(it, 1));
	/* An ended job's kill, to see its numbers copied. */
	cJSON_ReplaceItemInObject(
	    in, "kill", cJSON_Parse("{\"at_ms\":1,\"swap_budget_bytes\":2}"));
	out = web_public_job(in);
	assert_members(out, web_members, NULL, "the web program's Job");
	for (size_t i = 0; never[i] != NULL; i++)
		assert_null(cJSON_GetObjectItem(out, never[i]));
	{
		char *t = cJSON_PrintUnformatted(in);
		assert_non_null(strstr(t, "secret"));
		cJSON_free(t);
		t = cJSON_PrintUnformatted(out);
		assert_null(strstr(t, "secret"));
		cJSON_free(t);
	}
	cJSON_Delete(in);
	cJSON_Delete(list);
	cJSON_Delete(out);
}

struct store_fixture {
	char dir[256];
	char path[300];
	struct store *s;
};

static void
store_remove(struct store_fixture *f)
{
	const char *sfx[] = {"", "-wal", "-shm"};
	char p[320];

	if (f->s != NULL)
		store_close(f->s);
	for (size_t i = 0; i < 3; i++) {
		snprintf(p, sizeof p, "%s%s", f->path, sfx[i]);
		unlink(p);
	}
	rmdir(f->dir);
	free(f);
}

static int
store_setup(void **state)
{
	struct store_fixture *f = calloc(1, sizeof *f);
	const char *tmp = getenv("TMPDIR");
	char cause[256] = "";

	assert_non_null(f);
	snprintf(f->dir, sizeof f->dir, "%s/sl-fields-XXXXXX",
	         tmp != NULL ? tmp : "/tmp");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof f->path, "%s/stageload.db", f->dir);
	*state = f;
	if (store_open(&f->s, f->path, cause, sizeof cause) != 0) {
		/* A wrong cell can fail the open: leave no directory. */
		store_remove(f);
		fail_msg("store_open: %s", cause);
	}
	return 0;
}

static int
store_teardown(void **state)
{
	store_remove(*state);
	return 0;
}

/* The schema's columns are the table's, and no others. */
static void
test_store_columns(void **state)
{
	struct store_fixture *f = *state;
	sqlite3 *db;
	sqlite3_stmt *st;
	size_t n = 0;

	assert_int_equal(
	    sqlite3_open_v2(f->path, &db, SQLITE_OPEN_READONLY, NULL),
	    SQLITE_OK);
	assert_int_equal(
	    sqlite3_prepare_v2(db, "PRAGMA table_info(jobs)", -1, &st, NULL),
	    SQLITE_OK);
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(st, 1);

		if (!in_list(store_columns, name))
			fail_msg("the schema has a column %s", name);
		n++;
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
	assert_int_equal(n, list_len(store_columns));
#define COLUMN(m, w, store, col, ...)                                          \
	if (strcmp(#store, "S_NO") != 0 && !in_list(store_columns, col))       \
		fail_msg("field %s: no column %s", #m, col);                   \
	if (strcmp(#store, "S_NO") != 0)                                       \
		n--;
	JOB_FIELDS(COLUMN)
#undef COLUMN
	/* The table names each column once, id aside. */
	assert_int_equal(n, 1);
}

/* Every stored member comes back as it went in, through an update too. */
static void
test_store_roundtrip(void **state)
{
	struct store_fixture *f = *state;
	char cause[256] = "";
	struct job j, *got;

	full_job(&j);
	j.queue_seq = 0;
	assert_int_equal(store_job_insert(f->s, &j, cause, sizeof cause), 0);
	assert_int_equal(store_job_get(f->s, j.id, &got), 0);
	j.queue_seq = got->queue_seq;
	j.bytes = got->bytes; /* the store's count of its strings */
	for (int pass = 0; pass < 2; pass++) {
#define SAME_S_NO(m)
#define SAME_S_INT(m) assert_int_equal((int64_t)got->m, (int64_t)j.m);
#define SAME_S_DBL(m) assert_true(got->m == j.m);
#define SAME_S_TEXT(m) assert_string_equal(got->m, j.m);
#define SAME_S_STATE(m) assert_int_equal(got->m, j.m);
#define SAME_S_EXPECT(m) assert_int_equal(got->m, j.m);
#define SAME_S_GROUPS(m)                                                       \
	assert_int_equal(got->n##m, j.n##m);                                   \
	assert_memory_equal(got->m, j.m, sizeof *j.m *(size_t)j.n##m);
#define SAME_S_IDS(m) SAME_S_GROUPS(m)
#define SAME(m, w, store, ...) SAME_##store(m)
		JOB_FIELDS(SAME)
		assert_string_equal(got->argv[1], "secret-arg");
		assert_string_equal(got->env[0], "SECRET=1");
		job_free(got);
		if (pass == 1)
			break;
		/* Each changed, then updated. */
		j.priority = 5;
		j.wait_free_pct = 1.25;
		j.wait_free_bytes = 77;
		j.held = 0;
		j.group = "cpu";
		j.state = JOB_EXITED;
		j.expect_source = JOB_EXPECT_LEARNED;
		j.term_signal = 0;
		j.exit_code = 3;
		assert_int_equal(
		    store_job_update(f->s, &j, cause, sizeof cause), 0);
		assert_int_equal(store_job_get(f->s, j.id, &got), 0);
	}
}

/* Submit parameters set otherwise than by a job option of JOB_CLI: the
 * command line's operands, the caller's directory, environment and
 * umask, run's attached, and the Slurm plugin's. */
static const char *const not_options[] = {
    "argv",          "cwd",          "env",           "umask",
    "attached",      "slurm_job_id", "slurm_step_id", "slurm_task_id",
    "exit_reporter", NULL,
};

enum cli_param {
	T_P_NO,
	T_P_INT,
	T_P_NUM,
	T_P_BOOL,
	T_P_STRING,
	T_P_STRING_REQ,
	T_P_STRV,
	T_P_STRV_REQ,
	T_P_INTV,
};
/* A member JOB_CLI names that is no field fails to compile here. */
#define CLI_FIELD_INDEX(m, ...) JF_##m,
enum { JOB_FIELDS(CLI_FIELD_INDEX) JF_none };
#define CLI_FIELD_ROW(m, w, store, col, job, vis, submit, upd, lo, hi, ...)    \
	{#m, T_##submit, upd, (double)(lo), (double)(hi)},
static const struct {
	const char *member;
	enum cli_param submit;
	int update;
	double lo, hi;
} cli_fields[] = {JOB_FIELDS(CLI_FIELD_ROW){"none", T_P_NO, 0, 0, 0}};

enum cli_kind {
	V_CLI_FLAG,
	V_CLI_TEXT,
	V_CLI_INT,
	V_CLI_SIZE,
	V_CLI_DURATION,
	V_CLI_LIMIT,
	V_CLI_BEGIN,
	V_CLI_PCT,
	V_CLI_FREE
};
#define CLI_ROW(m, opt, l, mv, v, lo, hi, also, cmds, upd, help)               \
	{JF_##m, JF_##also, opt, V_##v, lo, hi, upd},
static const struct {
	int field, also;
	const char *option;
	enum cli_kind value;
	double lo, hi;
	int update;
} cli_rows[] = {JOB_CLI(CLI_ROW)};
#define NCLI_ROWS (sizeof cli_rows / sizeof cli_rows[0])

static int
cli_param_fits(enum cli_kind v, enum cli_param p)
{
	switch (v) {
	case V_CLI_FLAG:
		return p == T_P_BOOL;
	case V_CLI_TEXT:
		return p == T_P_STRING || p == T_P_INTV;
	case V_CLI_INT:
	case V_CLI_SIZE:
	case V_CLI_DURATION:
	case V_CLI_LIMIT:
	case V_CLI_BEGIN:
		return p == T_P_INT;
	case V_CLI_PCT:
	case V_CLI_FREE:
		return p == T_P_NUM;
	}
	return 0;
}

/* Each option of JOB_CLI sets a parameter of its field's type (update's
 * only where update takes the field), within the field's range; every
 * submit parameter has an option or is in not_options. */
static void
test_cli_options(void **state)
{
	size_t i, k;
	int f, named;

	(void)state;
	for (i = 0; i < NCLI_ROWS; i++) {
		const char *m = cli_fields[cli_rows[i].field].member;
		f = cli_rows[i].field;
		if (!cli_param_fits(cli_rows[i].value, cli_fields[f].submit))
			fail_msg("--%s: its kind does not set %s",
			         cli_rows[i].option, m);
		if (cli_rows[i].update && !cli_fields[f].update)
			fail_msg("--%s: update takes no %s", cli_rows[i].option,
			         m);
		if (cli_rows[i].value == V_CLI_INT &&
		    (cli_rows[i].lo != cli_fields[f].lo ||
		     cli_rows[i].hi != cli_fields[f].hi))
			fail_msg("--%s: range %g..%g, %s's is %g..%g",
			         cli_rows[i].option, cli_rows[i].lo,
			         cli_rows[i].hi, m, cli_fields[f].lo,
			         cli_fields[f].hi);
		if (cli_rows[i].also != JF_none &&
		    cli_fields[cli_rows[i].also].submit !=
		        (cli_rows[i].value == V_CLI_FREE ? T_P_INT : T_P_BOOL))
			fail_msg("--%s: sets %s, of another type",
			         cli_rows[i].option,
			         cli_fields[cli_rows[i].also].member);
		if (cli_rows[i].value == V_CLI_FREE &&
		    cli_rows[i].also == JF_none)
			fail_msg("--%s: a size sets no member",
			         cli_rows[i].option);
		for (k = 0; k < i; k++)
			if (strcmp(cli_rows[k].option, cli_rows[i].option) == 0)
				fail_msg("--%s: twice", cli_rows[i].option);
	}
	for (f = 0; f < JF_none; f++) {
		if (cli_fields[f].submit == T_P_NO)
			continue;
		named = 0;
		for (i = 0; i < NCLI_ROWS; i++)
			named |=
			    cli_rows[i].field == f || cli_rows[i].also == f;
		if (named == in_list(not_options, cli_fields[f].member))
			fail_msg("submit's %s: %s", cli_fields[f].member,
			         named ? "an option, and in not_options"
			               : "no option, and not in not_options");
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_renamed_members),
	    cmocka_unit_test(test_wire_members),
	    cmocka_unit_test(test_web_members),
	    cmocka_unit_test(test_cli_options),
	    cmocka_unit_test_setup_teardown(test_store_columns, store_setup,
	                                    store_teardown),
	    cmocka_unit_test_setup_teardown(test_store_roundtrip, store_setup,
	                                    store_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
