/*
 * stageloadctl helpers without a daemon: argument parsing, exit statuses,
 * formatting of jobs, queue lines, tables, sparklines and meter
 * decimation.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../client/cli.h"
#include "clock.h"

extern const struct cli_entry cmd_run_entry, cmd_submit_entry;

/* Parse argv as its command's entry does (run or submit), and read the job
 * options into spec: returns the index of the job's command in argv, as
 * the operands start there, or cli_parse's error. */
static int
parse(int argc, char **argv, sl_job_spec **spec, int *quiet, char *cause,
      size_t len)
{
	const struct cli_entry *e = cli_find_entry(argv[0]);
	/* cli_parse gathers the operands at the front of its argv: a copy,
	 * which a.argv points into afterwards */
	static char *copy[32];
	static struct cli_args a;
	struct cli cli;
	int rc, i;

	memset(&cli, 0, sizeof cli);
	assert_non_null(e);
	assert_true(argc < 32);
	memcpy(copy, argv, (size_t)(argc + 1) * sizeof *argv);
	rc = cli_parse(e, argc, copy, &cli, &a, cause, len);
	if (rc < 0)
		return rc;
	assert_non_null(*spec = cli_job_spec(&cli, &a,
	                                     strcmp(e->name, "run") == 0
	                                         ? CLI_USE_RUN
	                                         : CLI_USE_SUBMIT,
	                                     &rc));
	if (quiet != NULL)
		*quiet = cli_has(&a, "quiet");
	for (i = 0; i < argc; i++)
		if (a.argv[0] == argv[i])
			return i;
	return -1;
}

static void
test_job_args(void **state)
{
	char *argv[] = {"run",         "--wait-free",
	                "40",          "--swap-budget",
	                "8G",          "--expect=1.5G",
	                "--priority",  "-5",
	                "--name",      "qwen",
	                "--exclusive", "--retry-on-breach",
	                "2",           "-q",
	                "--",          "python",
	                "gen.py",      "--wait-free",
	                NULL};
	sl_job_spec *spec = NULL;
	char cause[128];
	int quiet = 0, first;
	int64_t v;
	double d;

	first = parse(18, argv, &spec, &quiet, cause, sizeof cause);
	assert_int_equal(first, 15);
	assert_string_equal(argv[first], "python");
	assert_int_equal(sl_job_spec_get_num(spec, "wait_free_pct", &d), 0);
	assert_true(fabs(d - 40) < 1e-9);
	assert_int_equal(sl_job_spec_get_int(spec, "swap_budget_bytes", &v), 0);
	assert_int_equal(v, 8LL << 30);
	assert_int_equal(sl_job_spec_get_int(spec, "expect_bytes", &v), 0);
	assert_int_equal(v, 3ULL << 29);
	assert_int_equal(sl_job_spec_get_int(spec, "priority", &v), 0);
	assert_int_equal(v, -5);
	assert_string_equal(sl_job_spec_get_str(spec, "name"), "qwen");
	assert_int_equal(sl_job_spec_get_int(spec, "exclusive", &v), 0);
	assert_int_equal(v, 1);
	assert_int_equal(sl_job_spec_get_int(spec, "retry_on_breach", &v), 0);
	assert_int_equal(v, 2);
	assert_string_equal(sl_job_spec_get_strv(spec, "argv", 0), "python");
	assert_string_equal(sl_job_spec_get_strv(spec, "argv", 2),
	                    "--wait-free");
	assert_int_equal(quiet, 1);
	sl_job_spec_free(spec);
}

static void
test_job_args_defaults(void **state)
{
	char *argv[] = {"submit", "sleep", "1", NULL};
	sl_job_spec *spec = NULL;
	char cause[128];
	int64_t v;
	double d;

	/* no "--": the command starts at the first non-option; nothing
	 * else is set, so the daemon's defaults hold */
	assert_int_equal(parse(3, argv, &spec, NULL, cause, sizeof cause), 1);
	assert_int_equal(sl_job_spec_get_num(spec, "wait_free_pct", &d),
	                 -ENOENT);
	assert_int_equal(sl_job_spec_get_int(spec, "swap_budget_bytes", &v),
	                 -ENOENT);
	assert_int_equal(sl_job_spec_get_int(spec, "priority", &v), -ENOENT);
	assert_null(sl_job_spec_get_str(spec, "name"));
	assert_int_equal(cli_spec_budget(spec), -1);
	sl_job_spec_free(spec);
}

static void
test_job_args_errors(void **state)
{
	char *bad_size[] = {"run", "--swap-budget", "8X", "--", "x", NULL};
	char *bad_pct[] = {"run", "--wait-free", "140", "--", "x", NULL};
	char *bad_prio[] = {"run", "--priority", "2000", "--", "x", NULL};
	char *no_cmd[] = {"run", "--wait-free", "40", "--", NULL};
	char *unknown[] = {"run", "--bogus", "--", "x", NULL};
	char *quiet_submit[] = {"submit", "-q", "--", "x", NULL};
	char *help[] = {"run", "--help", NULL};
	sl_job_spec *spec = NULL;
	char cause[128];

	assert_int_equal(parse(5, bad_size, &spec, NULL, cause, sizeof cause),
	                 -EINVAL);
	assert_non_null(strstr(cause, "--swap-budget"));
	assert_non_null(strstr(cause, "8X"));
	assert_int_equal(parse(5, bad_pct, &spec, NULL, cause, sizeof cause),
	                 -EINVAL);
	assert_int_equal(parse(5, bad_prio, &spec, NULL, cause, sizeof cause),
	                 -EINVAL);
	assert_int_equal(parse(4, no_cmd, &spec, NULL, cause, sizeof cause),
	                 -EINVAL);
	assert_non_null(strstr(cause, "no command"));
	assert_int_equal(parse(4, unknown, &spec, NULL, cause, sizeof cause),
	                 -EINVAL);
	assert_non_null(strstr(cause, "--bogus"));
	/* -q belongs to run only */
	assert_int_equal(
	    parse(4, quiet_submit, &spec, NULL, cause, sizeof cause), -EINVAL);
	assert_int_equal(parse(2, help, &spec, NULL, cause, sizeof cause),
	                 CLI_ARGS_HELP);
}

/* Every entry is whole: a name, a summary, a handler, options with help
 * lines, no option twice (its name or letter) nor one shadowing a global
 * option, and a usage line naming each option. */
static void
test_entries(void **state)
{
	const struct cli_option *o, *p, *tables[3];
	const struct cli_entry *e;
	size_t i, t, u, n;
	char *syn;

	for (i = 0; (e = cli_entries[i]) != NULL; i++) {
		assert_non_null(e->name);
		assert_non_null(e->summary);
		assert_non_null(e->exec);
		assert_ptr_equal(cli_find_entry(e->name), e);
		if (e->alias != NULL)
			assert_ptr_equal(cli_find_entry(e->alias), e);
		tables[0] = e->options;
		tables[1] = e->more_options;
		tables[2] = cli_global_options;
		syn = cli_synopsis(e, 0, 0);
		assert_non_null(syn);
		n = 0;
		for (t = 0; t < 2; t++)
			for (o = tables[t]; o != NULL && o->name != NULL; o++) {
				char word[64];
				n++;
				assert_non_null(o->help);
				assert_true(o->help[0] != '\0');
				assert_true(o->type == CLI_FLAG ||
				            o->value != NULL);
				snprintf(word, sizeof word, "--%s", o->name);
				assert_non_null(strstr(syn, word));
				for (u = t; u < 3; u++)
					for (p = u == t ? o + 1 : tables[u];
					     p != NULL && p->name != NULL;
					     p++) {
						assert_string_not_equal(
						    p->name, o->name);
						assert_true(o->letter == 0 ||
						            p->letter !=
						                o->letter);
					}
			}
		assert_true(n <= CLI_MAX_OPTIONS);
		assert_true(e->max_operands < 0 ||
		            e->max_operands >= e->min_operands);
		free(syn);
	}
	assert_true(i > 0);
	assert_null(cli_find_entry("help"));
}

/* Global options on either side, values checked, operands counted. */
static void
test_parse_entry(void **state)
{
	char *a1[] = {"events", "-f", "--limit", "5", "--socket", "S", NULL};
	char *a2[] = {"logs", "12", "-f", "--json", NULL};
	char *a2b[] = {"logs", "12", "-f", NULL};
	char *a3[] = {"events", "--lim=0", NULL};
	char *a4[] = {"events", "--lim", "5", NULL};
	char *a5[] = {"show", NULL};
	char *a6[] = {"history", "--s", "1h", NULL};
	const struct cli_entry *ev = cli_find_entry("events");
	const struct cli_entry *logs = cli_find_entry("logs");
	struct cli_args a;
	struct cli cli;
	char cause[256];

	memset(&cli, 0, sizeof cli);
	assert_int_equal(cli_parse(ev, 6, a1, &cli, &a, cause, sizeof cause),
	                 0);
	assert_true(cli_has(&a, "follow"));
	assert_int_equal(cli_number(&a, "limit", 0), 5);
	assert_int_equal(cli_number(&a, "after", 7), 7);
	assert_string_equal(cli.socket, "S");
	assert_int_equal(a.argc, 0);
	/* options after the operand; --json refused where there is none */
	assert_int_equal(cli_parse(logs, 4, a2, &cli, &a, cause, sizeof cause),
	                 -EINVAL);
	assert_string_equal(cause,
	                    "has no --json (it prints the job's own bytes)");
	cli.json = 0;
	assert_int_equal(cli_parse(logs, 3, a2b, &cli, &a, cause, sizeof cause),
	                 0);
	assert_int_equal(a.argc, 1);
	assert_string_equal(a.argv[0], "12");
	assert_true(cli_has(&a, "follow"));
	assert_int_equal(cli_parse(ev, 2, a3, &cli, &a, cause, sizeof cause),
	                 -EINVAL);
	assert_string_equal(
	    cause, "--limit takes a whole number from 1 to 10000, not '0'");
	/* a prefix one option has, and one that three share */
	assert_int_equal(cli_parse(ev, 3, a4, &cli, &a, cause, sizeof cause),
	                 0);
	assert_int_equal(cli_number(&a, "limit", 0), 5);
	assert_int_equal(cli_parse(cli_find_entry("history"), 3, a6, &cli, &a,
	                           cause, sizeof cause),
	                 -EINVAL);
	assert_string_equal(
	    cause, "option '--s' is ambiguous (--since, --step, --socket)");
	assert_int_equal(cli_parse(cli_find_entry("show"), 1, a5, &cli, &a,
	                           cause, sizeof cause),
	                 -EINVAL);
	assert_string_equal(cause, "missing ID");
}

static void
test_parse_numbers(void **state)
{
	int64_t id;
	double pct;
	long v;

	assert_int_equal(cli_parse_id("12", &id), 0);
	assert_int_equal(id, 12);
	assert_int_equal(cli_parse_id("#7", &id), 0);
	assert_int_equal(id, 7);
	assert_true(cli_parse_id("0", &id) < 0);
	assert_true(cli_parse_id("12x", &id) < 0);
	assert_true(cli_parse_id("", &id) < 0);
	assert_int_equal(cli_parse_pct("40%", &pct), 0);
	assert_true(fabs(pct - 40) < 1e-9);
	assert_int_equal(cli_parse_pct("37.5", &pct), 0);
	assert_true(fabs(pct - 37.5) < 1e-9);
	assert_true(cli_parse_pct("101", &pct) < 0);
	assert_true(cli_parse_pct("-1", &pct) < 0);
	assert_true(cli_parse_pct("nan", &pct) < 0);
	assert_true(cli_parse_pct("4o", &pct) < 0);
	assert_int_equal(cli_parse_int("-1000", -1000, 1000, &v), 0);
	assert_int_equal(cli_parse_int("1001", -1000, 1000, &v), -ERANGE);
	assert_int_equal(cli_parse_int("99999999999999999999", 0, 10, &v),
	                 -ERANGE);
}

static void
job(struct sl_job *j, const char *state_name)
{
	memset(j, 0, sizeof *j);
	j->id = 3;
	snprintf(j->state, sizeof j->state, "%s", state_name);
	snprintf(j->name, sizeof j->name, "qwen");
	snprintf(j->user, sizeof j->user, "ana");
}

static void
test_job_status(void **state)
{
	struct sl_job j;

	job(&j, "exited");
	j.has_exit_code = 1;
	j.exit_code = 7;
	assert_int_equal(cli_job_status(&j), 7);
	j.exit_code = 0;
	assert_int_equal(cli_job_status(&j), 0);
	j.has_exit_code = 0;
	j.signal = SIGINT;
	assert_int_equal(cli_job_status(&j), 130);

	job(&j, "killed");
	snprintf(j.end_reason, sizeof j.end_reason, "swap_budget");
	j.signal = SIGKILL;
	assert_int_equal(cli_job_status(&j), EXIT_JOB_BUDGET);
	snprintf(j.end_reason, sizeof j.end_reason, "cancel");
	assert_int_equal(cli_job_status(&j), 128 + SIGKILL);
	j.signal = 0;
	assert_int_equal(cli_job_status(&j), 128 + SIGTERM);

	job(&j, "cancelled");
	assert_int_equal(cli_job_status(&j), EXIT_JOB_NOTRUN);
	job(&j, "failed");
	assert_int_equal(cli_job_status(&j), EXIT_JOB_CANNOTRUN);
	job(&j, "lost");
	assert_int_equal(cli_job_status(&j), EXIT_JOB_LOST);

	/* the codes documented in docs/cli.md */
	assert_int_equal(EXIT_JOB_BUDGET, 124);
	assert_int_equal(EXIT_UNAVAILABLE, 69);
	assert_int_equal(EXIT_USAGE, 2);
}

static void
test_exit_for_error(void **state)
{
	assert_int_equal(cli_exit_for_error(-ECONNREFUSED), EXIT_UNAVAILABLE);
	assert_int_equal(cli_exit_for_error(-ENOENT), EXIT_UNAVAILABLE);
	assert_int_equal(cli_exit_for_error(-ETIMEDOUT), EXIT_UNAVAILABLE);
	assert_int_equal(cli_exit_for_error(SL_E_PERM), EXIT_NOPERM);
	assert_int_equal(cli_exit_for_error(SL_E_VERSION), EXIT_PROTOCOL);
	assert_int_equal(cli_exit_for_error(SL_E_NOJOB), EXIT_ERR);
	assert_int_equal(cli_exit_for_error(SL_E_PARAMS), EXIT_ERR);
}

static void
test_job_columns(void **state)
{
	struct sl_job j;
	char buf[64];

	job(&j, "running");
	j.submitted_at_ms = 1000;
	j.admitted_at_ms = 61000;
	j.started_at_ms = 61010;
	j.swap_growth_bytes = 1ULL << 30;
	j.swap_budget_bytes = 8ULL << 30;
	cli_job_waited(&j, 500000, buf, sizeof buf);
	assert_string_equal(buf, "1m00s");
	cli_job_ran(&j, 61010 + 45000, buf, sizeof buf);
	assert_string_equal(buf, "45s");
	cli_job_swap(&j, buf, sizeof buf);
	assert_string_equal(buf, "1.0G/8.0G");
	cli_job_state(&j, buf, sizeof buf);
	assert_string_equal(buf, "running");

	job(&j, "queued");
	j.position = 2;
	j.submitted_at_ms = 1000;
	cli_job_waited(&j, 11000, buf, sizeof buf);
	assert_string_equal(buf, "10s");
	cli_job_ran(&j, 11000, buf, sizeof buf);
	assert_string_equal(buf, "-");
	cli_job_swap(&j, buf, sizeof buf);
	assert_string_equal(buf, "0B/-");
	cli_job_state(&j, buf, sizeof buf);
	assert_string_equal(buf, "queued #2");

	job(&j, "killed");
	snprintf(j.end_reason, sizeof j.end_reason, "swap_budget");
	j.swap_growth_bytes = 0;
	j.swap_growth_peak_bytes = 9ULL << 30;
	j.swap_budget_bytes = 8ULL << 30;
	cli_job_state(&j, buf, sizeof buf);
	assert_string_equal(buf, "killed (swap_budget)");
	/* an ended job shows the growth that ended it */
	cli_job_swap(&j, buf, sizeof buf);
	assert_string_equal(buf, "9.0G/8.0G");
}

static void
test_paragraph(void **state)
{
	struct sl_job j;
	char *text;

	job(&j, "killed");
	snprintf(j.end_reason, sizeof j.end_reason, "swap_budget");
	j.swap_budget_bytes = 8ULL << 30;
	j.submitted_at_ms = 1764480000000;
	j.admitted_at_ms = 1764480001000;
	j.started_at_ms = 1764480001010;
	j.ended_at_ms = 1764480061010;
	j.pid = 4242;
	j.signal = SIGTERM;
	j.end_detail = "swap grew 9.0G since admission, over its 8.0G budget";
	text = cli_job_paragraph(&j, 1764480100000, NULL);
	assert_non_null(text);
	assert_non_null(strstr(text, "Job 3 \"qwen\" of ana was killed."));
	assert_non_null(strstr(text, "swap budget 8.0G"));
	assert_non_null(strstr(text, "pid 4242"));
	assert_non_null(strstr(text, "ran for 1m00s"));
	assert_non_null(strstr(
	    text, "the system's swap grew past its budget while it ran"));
	assert_non_null(strstr(text, "wait gives 124"));
	assert_non_null(strstr(text, j.end_detail));
	free(text);

	/* every ended state in words; a reason in words, or (one newer
	 * than this client) named as a reason, never "because wall_clock" */
	job(&j, "cancelled");
	snprintf(j.end_reason, sizeof j.end_reason, "dependency");
	j.ended_at_ms = 1764480061010;
	text = cli_job_paragraph(&j, 1764480100000, NULL);
	assert_non_null(strstr(text, "Job 3 \"qwen\" of ana was cancelled."));
	assert_non_null(
	    strstr(text, "cancelled because a job it starts after"));
	free(text);
	job(&j, "killed");
	snprintf(j.end_reason, sizeof j.end_reason, "wall_clock");
	j.ended_at_ms = 1764480061010;
	text = cli_job_paragraph(&j, 1764480100000, NULL);
	assert_non_null(strstr(text, "killed (end reason: wall_clock)"));
	assert_null(strstr(text, "because"));
	free(text);
	/* a time limit is one this client knows */
	snprintf(j.end_reason, sizeof j.end_reason, "time_limit");
	text = cli_job_paragraph(&j, 1764480100000, NULL);
	assert_non_null(
	    strstr(text, "killed because it ran past its time limit"));
	free(text);
	job(&j, "exited");
	j.ended_at_ms = 1764480061010;
	text = cli_job_paragraph(&j, 1764480100000, NULL);
	assert_non_null(strstr(text, "Job 3 \"qwen\" of ana has exited."));
	free(text);
}

static void
test_queue_line(void **state)
{
	char buf[160];

	cli_queue_line(2, 3, 34.2, 40, "free", buf, sizeof buf);
	assert_string_equal(buf, "queued: position 2 of 3, free 34% < 40%");
	cli_queue_line(1, 1, 55, 40, "settle", buf, sizeof buf);
	assert_string_equal(buf, "queued: position 1 of 1, free 55%, waiting "
	                         "for the last job to settle");
	cli_queue_line(1, 2, 45, 40, "exclusive", buf, sizeof buf);
	assert_non_null(strstr(buf, "alone"));
	/* Neither is a free % below the job's wait_free. */
	cli_queue_line(1, 1, 80, 40, "storage", buf, sizeof buf);
	assert_string_equal(buf, "queued: position 1 of 1, free 80%, waiting "
	                         "for the daemon's database to work again");
	cli_queue_line(1, 2, 80, 40, "none", buf, sizeof buf);
	assert_string_equal(
	    buf, "queued: position 1 of 2, free 80%, being admitted");
	/* a small buffer truncates, never overflows */
	cli_queue_line(2, 3, 34, 40, "free", buf, 10);
	assert_string_equal(buf, "queued: p");
}

/* The free % against the job's: never "40% < 40%". */
static void
test_pct_compare(void **state)
{
	char buf[64];

	(void)state;
	cli_pct_compare(39.7, 40, buf, sizeof buf);
	assert_string_equal(buf, "39.7% < 40%");
	cli_pct_compare(34.2, 40, buf, sizeof buf);
	assert_string_equal(buf, "34% < 40%");
	cli_pct_compare(39.96, 40, buf, sizeof buf);
	assert_string_equal(buf, "39.96% < 40%");
	cli_pct_compare(39.9999, 40, buf, sizeof buf);
	assert_string_equal(buf, "39.999% < 40%");
	cli_pct_compare(37.45, 37.5, buf, sizeof buf);
	assert_string_equal(buf, "37% < 37.5%");
	/* a free % that has passed it since: said as it is */
	cli_pct_compare(40.2, 40, buf, sizeof buf);
	assert_string_equal(buf, "40% >= 40%");
	cli_queue_line(1, 1, 39.7, 40, "free", buf, sizeof buf);
	assert_string_equal(buf, "queued: position 1 of 1, free 39.7% < 40%");
}

/* A held job's reason names the release that lets it go, with its id
 * when known. */
static void
test_wait_reason_held(void **state)
{
	struct cli_wait w = {"held", 50, 40, -1, 0, 0, 12, 0, NULL, 0, NULL};
	char buf[256];

	(void)state;
	cli_wait_reason(&w, CLI_REASON_LINE, buf, sizeof buf);
	assert_string_equal(buf, "free 50%, held: stageloadctl release 12");
	cli_wait_reason(&w, CLI_REASON_SENTENCE, buf, sizeof buf);
	assert_string_equal(buf, "it is held (hold): it starts only once "
	                         "released (stageloadctl release 12)");
	w.job_id = 0;
	cli_wait_reason(&w, CLI_REASON_LINE, buf, sizeof buf);
	assert_string_equal(buf, "free 50%, held: stageloadctl release ID");
}

/* A reason names the jobs it waits behind (waiting_on) and, where the
 * daemon knows it, until when; the group sentence names the group. */
static void
test_wait_reason_behind(void **state)
{
	struct cli_wait w = {"settle", 50, 40, -1, 0, 0, 14, 0, NULL, 0, NULL};
	char buf[512];

	(void)state;
	w.on_json = "[{\"id\":12,\"user\":\"ana\",\"name\":\"qwen\"}]";
	w.until_ms = clock_wall_ms() + 17500;
	cli_wait_reason(&w, CLI_REASON_LINE, buf, sizeof buf);
	assert_string_equal(buf, "free 50%, waiting for the last job to "
	                         "settle: job 12 (ana, qwen) still growing, "
	                         "at most 18 s more");
	cli_wait_reason(&w, CLI_REASON_COLUMN, buf, sizeof buf);
	assert_string_equal(buf, "settle");
	w.waiting_for = "head";
	w.on_json = "[{\"id\":13,\"user\":\"ana\",\"name\":\"\"}]";
	w.until_ms = 0;
	cli_wait_reason(&w, CLI_REASON_SENTENCE, buf, sizeof buf);
	assert_string_equal(buf, "a job ahead of it holds the head of the "
	                         "queue: job 13 (ana)");
	w.until_ms = clock_wall_ms() + 600000;
	cli_wait_reason(&w, CLI_REASON_LINE, buf, sizeof buf);
	assert_non_null(strstr(buf, ": job 13 (ana) until "));
	assert_non_null(strstr(buf, ", then others may pass"));
	w.waiting_for = "group";
	w.group = "gpu";
	w.on_json = "[{\"id\":3,\"user\":\"bo\",\"name\":\"a\"},"
	            "{\"id\":4,\"user\":\"bo\",\"name\":\"b\"}]";
	cli_wait_reason(&w, CLI_REASON_SENTENCE, buf, sizeof buf);
	assert_non_null(strstr(buf, "the daemon's group.gpu.max_running "
	                            "allows"));
	assert_non_null(strstr(buf, ": jobs 3 (bo, a) and 4 (bo, b) running"));
	w.on_json = "[]"; /* a daemon that names none: the words as before */
	w.waiting_for = "settle";
	cli_wait_reason(&w, CLI_REASON_LINE, buf, sizeof buf);
	assert_string_equal(buf,
	                    "free 50%, waiting for the last job to settle");
}

static void
test_wait_reason(void **state)
{
	struct cli_wait w = {"free", 34.2, 40, -1, 0, 0, 0, 0, NULL, 0, NULL};
	char buf[256];

	(void)state;
	cli_wait_reason(&w, CLI_REASON_COLUMN, buf, sizeof buf);
	assert_string_equal(buf, "free 34% < 40%");
	w.free_pct = NAN;
	cli_wait_reason(&w, CLI_REASON_COLUMN, buf, sizeof buf);
	assert_string_equal(buf, "free below 40%");
	w.waiting_for = "expect";
	w.reserved_bytes = (int64_t)12 << 30;
	cli_wait_reason(&w, CLI_REASON_COLUMN, buf, sizeof buf);
	assert_string_equal(buf, "expect 12G reserved");
	w.reserved_bytes = -1;
	cli_wait_reason(&w, CLI_REASON_COLUMN, buf, sizeof buf);
	assert_string_equal(buf, "expect");
	cli_wait_reason(&w, CLI_REASON_SENTENCE, buf, sizeof buf);
	assert_string_equal(buf,
	                    "memory is promised to running jobs (--expect), "
	                    "which leaves less than the 40% free it waits "
	                    "for");
	w.waiting_for = "settle";
	cli_wait_reason(&w, CLI_REASON_COLUMN, buf, sizeof buf);
	assert_string_equal(buf, "settle");
	/* a waiting_for this client does not know reads as other, its word
	 * escaped where a sentence names it */
	w.waiting_for = "held\x1b[2J";
	cli_wait_reason(&w, CLI_REASON_COLUMN, buf, sizeof buf);
	assert_string_equal(buf, "other");
	cli_wait_reason(&w, CLI_REASON_SENTENCE, buf, sizeof buf);
	assert_non_null(strstr(buf, "(held\\e[2J)"));
	/* a small buffer truncates, never overflows */
	w.waiting_for = "settle";
	cli_wait_reason(&w, CLI_REASON_LINE, buf, 8);
	assert_int_equal(strlen(buf), 7);
}

/* --wait-free 22G: the reason names the size against the available memory,
 * in every form, never the 0 % it does not wait for. */
static void
test_wait_reason_bytes(void **state)
{
	struct cli_wait w = {
	    "free", 92,   0, -1,  (uint64_t)22 << 30, (int64_t)8 << 30, 0,
	    0,      NULL, 0, NULL};
	char buf[256];

	(void)state;
	cli_wait_reason(&w, CLI_REASON_COLUMN, buf, sizeof buf);
	assert_string_equal(buf, "free 8.0G < 22G");
	cli_wait_reason(&w, CLI_REASON_SENTENCE, buf, sizeof buf);
	assert_string_equal(buf, "free memory is 8.0G < 22G (its --wait-free)");
	/* just below: never "22G < 22G" */
	w.available_bytes = ((int64_t)22 << 30) - ((int64_t)40 << 20);
	cli_wait_reason(&w, CLI_REASON_COLUMN, buf, sizeof buf);
	assert_string_equal(buf, "free 21.9G < 22G");
	w.available_bytes = ((int64_t)22 << 30) + 1;
	cli_wait_reason(&w, CLI_REASON_COLUMN, buf, sizeof buf);
	assert_string_equal(buf, "free 22G >= 22G");
	/* with a % besides, the one not met is said */
	w.wait_free_pct = 95;
	cli_wait_reason(&w, CLI_REASON_COLUMN, buf, sizeof buf);
	assert_string_equal(buf, "free 92% < 95%");
	w.available_bytes = (int64_t)8 << 30;
	cli_wait_reason(&w, CLI_REASON_COLUMN, buf, sizeof buf);
	assert_string_equal(buf, "free 8.0G < 22G");
	w.wait_free_pct = 0;
	w.available_bytes = 0; /* no sample yet */
	cli_wait_reason(&w, CLI_REASON_LINE, buf, sizeof buf);
	assert_string_equal(buf, "free below 22G");
	w.waiting_for = "expect";
	w.reserved_bytes = (int64_t)4 << 30;
	cli_wait_reason(&w, CLI_REASON_LINE, buf, sizeof buf);
	assert_string_equal(buf,
	                    "free 92%, less than 22G once 4.0G promised to "
	                    "running jobs counts");
	/* and after N names the job */
	w.waiting_for = "after 17";
	cli_wait_reason(&w, CLI_REASON_COLUMN, buf, sizeof buf);
	assert_string_equal(buf, "after 17");
	w.waiting_for = "group";
	cli_wait_reason(&w, CLI_REASON_COLUMN, buf, sizeof buf);
	assert_string_equal(buf, "group");
}

/* Cells, not code points: CJK and emoji take two, combining marks none,
 * whatever the locale. */
static void
test_text_width(void **state)
{
	char buf[128];

	(void)state;
	assert_int_equal(cli_text_width("abc"), 3);
	assert_int_equal(cli_text_width("\xe6\x97\xa5\xe6\x9c\xac"), 4);
	assert_int_equal(cli_text_width("\xf0\x9f\x9a\x80"), 2); /* rocket */
	assert_int_equal(cli_text_width("e\xcc\x81"), 1);        /* e + acute */
	assert_int_equal(cli_text_width("\xef\xbc\xa1"), 2); /* fullwidth A */
	assert_int_equal(cli_text_width("\xe2\x80\xa6"), 1); /* ellipsis */
	assert_int_equal(cli_char_width(0x4e00), 2);
	assert_int_equal(cli_char_width(0x200d), 0);
	assert_int_equal(cli_char_width('x'), 1);
	/* cut to cells with an ellipsis; a wide character is not split */
	cli_fit("\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e", 5, buf, sizeof buf);
	assert_string_equal(buf, "\xe6\x97\xa5\xe6\x9c\xac\xe2\x80\xa6");
	cli_fit("\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e", 6, buf, sizeof buf);
	assert_string_equal(buf, "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e");
	cli_fit("abcdef", 4, buf, sizeof buf);
	assert_string_equal(buf, "abc\xe2\x80\xa6");
	/* escaped first: an ESC never reaches the terminal */
	cli_fit("a\x1b[2Jb", 0, buf, sizeof buf);
	assert_string_equal(buf, "a\\e[2Jb");
	/* never inside an escape */
	cli_fit("ab\xe2\x80\xae", 6, buf, sizeof buf);
	assert_string_equal(buf, "ab\xe2\x80\xa6");
	cli_fit("ab\x1b", 4, buf, sizeof buf);
	assert_string_equal(buf, "ab\\e");
	cli_fit("ab\x1b"
	        "c",
	        4, buf, sizeof buf);
	assert_string_equal(buf, "ab\xe2\x80\xa6");
	cli_fit("abcdef", 0, buf, 5);
	assert_string_equal(buf, "a\xe2\x80\xa6");
}

static void
test_shell_command(void **state)
{
	char *argv[] = {"sh", "-c", "echo \"$1\"", "it's", "", "a\nb", NULL};
	char *s;

	(void)state;
	s = cli_shell_command(argv);
	assert_non_null(s);
	assert_string_equal(s, "sh -c 'echo \"$1\"' 'it'\\''s' '' $'a\\nb'");
	free(s);
}

static void
test_sparkline(void **state)
{
	double v[] = {0, 50, 100, NAN, 150, -5};
	char buf[64];

	cli_sparkline(v, 6, 0, 100, buf, sizeof buf);
	assert_string_equal(buf, "\xe2\x96\x81\xe2\x96\x85\xe2\x96\x88 "
	                         "\xe2\x96\x88\xe2\x96\x81");
	/* a flat series sits in the middle */
	cli_sparkline(v, 1, 5, 5, buf, sizeof buf);
	assert_string_equal(buf, "\xe2\x96\x85");
	/* room for one block only: never a partial character */
	cli_sparkline(v, 6, 0, 100, buf, 5);
	assert_string_equal(buf, "\xe2\x96\x81");
	cli_sparkline(v, 0, 0, 100, buf, sizeof buf);
	assert_string_equal(buf, "");
}

static void
test_meter_due(void **state)
{
	int64_t ts, last = -1;
	int n = 0;

	/* every sample when the interval is the daemon's or finer */
	assert_true(cli_meter_due(1000, 1500, 500, 500));
	assert_true(cli_meter_due(1000, 1500, 0, 500));
	assert_true(cli_meter_due(-1, 1500, 2000, 500));
	/* 2 s over 0.5 s samples with jitter: every 4th sample */
	for (ts = 0; ts < 20000; ts += 500) {
		int64_t jittered = ts + ((ts / 500) % 3) * 20;
		if (cli_meter_due(last, jittered, 2000, 500)) {
			if (last >= 0)
				assert_in_range(jittered - last, 1750, 2250);
			last = jittered;
			n++;
		}
	}
	assert_int_equal(n, 10);
}

static void
test_table(void **state)
{
	static const char *const head[] = {"ID", "NAME", "SIZE"};
	static const char *const r1[] = {"7", "qwen", "8.0G"};
	static const char *const r2[] = {"12", "fl\xc3\xbcx", "512M"};
	static const int right[] = {1, 0, 1};
	struct cli_table t;
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	assert_non_null(f);
	assert_int_equal(cli_table_init(&t, 3, head, right), 0);
	assert_int_equal(cli_table_add(&t, r1), 0);
	assert_int_equal(cli_table_add(&t, r2), 0);
	cli_table_print(&t, f);
	fclose(f);
	/* widths count characters, not bytes (ü is two bytes) */
	assert_string_equal(out, "ID  NAME  SIZE\n"
	                         " 7  qwen  8.0G\n"
	                         "12  fl\xc3\xbcx  512M\n");
	free(out);
	cli_table_free(&t);
}

static void
test_no_color(void **state)
{
	setenv("NO_COLOR", "1", 1);
	assert_int_equal(cli_use_color(0), 0);
	unsetenv("NO_COLOR");
}

/* Every command has examples in its --help, and each is a command line
 * this build's parser accepts as it stands. */
static void
test_examples_parse(void **state)
{
	char line[256], *argv[32], *save, cause[256];
	const struct cli_entry *e, *as;
	const char *ex;
	struct cli_args a;
	struct cli cli;
	size_t i, n;
	int argc;

	(void)state;
	for (i = 0; (e = cli_entries[i]) != NULL; i++) {
		ex = cli_examples(e->name);
		assert_non_null(ex);
		for (; *ex != '\0'; ex += n + (ex[n] == '\n')) {
			n = strcspn(ex, "\n");
			assert_true(n < sizeof line);
			snprintf(line, sizeof line, "%.*s", (int)n, ex);
			argc = 0;
			for (argv[argc] = strtok_r(line, " ", &save);
			     argv[argc] != NULL && argc < 31;
			     argv[argc] = strtok_r(NULL, " ", &save)) {
				if (argv[argc][0] == '>') /* the shell's */
					break;
				argc++;
			}
			argv[argc] = NULL;
			as = cli_find_entry(argv[0]);
			assert_ptr_equal(as, e);
			memset(&cli, 0, sizeof cli);
			if (cli_parse(e, argc, argv, &cli, &a, cause,
			              sizeof cause) != 0)
				fail_msg("%s: example '%.*s': %s", e->name,
				         (int)n, ex, cause);
		}
	}
	assert_string_equal(cli_suggest_command("stauts"), "status");
	assert_string_equal(cli_suggest_command("sumbit"), "submit");
	assert_string_equal(cli_suggest_command("hlep"), "help");
	assert_string_equal(cli_suggest_command("guadr"), "guard");
	assert_string_equal(cli_suggest_command("stat"), "status");
	assert_string_equal(cli_suggest_command("complet"), "completions");
	assert_null(cli_suggest_command("st")); /* status, stage, show */
	assert_null(cli_suggest_command("bogus"));
	assert_null(cli_suggest_command("xyz"));
	assert_null(cli_suggest_command("frobnicate"));
}

/* A daemon's refusal in the command line's words: options, not wire
 * names; sizes, not byte counts. */
static void
test_daemon_words(void **state)
{
	char buf[256];

	(void)state;
	cli_daemon_words("wait_free_bytes 42949672960 is above the machine's "
	                 "total memory (25276502016 bytes, 24G): it could "
	                 "never be free",
	                 buf, sizeof buf);
	assert_string_equal(buf, "--wait-free 40G is above the machine's "
	                         "total memory (24G): it could never be free");
	cli_daemon_words("expect_bytes 1024 is above x; wait_free_pct 95 is "
	                 "above the daemon's max_wait_free (90)",
	                 buf, sizeof buf);
	assert_string_equal(buf, "--expect 1.0K is above x; --wait-free 95 is "
	                         "above the daemon's max_wait_free (90)");
	/* only whole words */
	cli_daemon_words("my_expect_bytes 3 and expect_bytes_x", buf,
	                 sizeof buf);
	assert_string_equal(buf, "my_expect_bytes 3 and expect_bytes_x");
	cli_daemon_words("no job 99", buf, 4);
	assert_string_equal(buf, "no ");
}

/* Not on a terminal: a line when the kind of wait changes, else at most
 * one a minute; the same line never twice. */
static void
test_progress_due(void **state)
{
	struct cli_progress p;

	(void)state;
	memset(&p, 0, sizeof p);
	assert_int_equal(cli_progress_due(&p, "free", "free 25% < 40%", 0), 1);
	assert_int_equal(cli_progress_due(&p, "free", "free 26% < 40%", 1000),
	                 0);
	assert_int_equal(cli_progress_due(&p, "free", "free 27% < 40%", 59999),
	                 0);
	assert_int_equal(
	    cli_progress_due(&p, "held", "free 27%, held", 60000 - 1), 1);
	assert_int_equal(cli_progress_due(&p, "after 7", "job 7", 60500), 1);
	assert_int_equal(cli_progress_due(&p, "after 8", "job 8", 60600), 1);
	assert_int_equal(cli_progress_due(&p, "after 8", "job 8", 200000), 0);
	assert_int_equal(cli_progress_due(&p, "after 8", "job 8.", 120599), 0);
	assert_int_equal(cli_progress_due(&p, "after 8", "job 8.", 120600), 1);
}

static void
test_safe(void **state)
{
	char buf[64], *dup;

	(void)state;
	/* C0, DEL, C1 and bidi controls are escaped (proto/text.h); text is
	 * kept */
	assert_string_equal(cli_safe("a\x1b[2J\nb\x7f", 0, buf, sizeof buf),
	                    "a\\e[2J\\nb\\x7f");
	assert_string_equal(cli_safe("x\xc2\x9b"
	                             "31m",
	                             0, buf, sizeof buf),
	                    "x\\u{009B}31m");
	assert_string_equal(cli_safe("a\xe2\x80\xae"
	                             "b",
	                             0, buf, sizeof buf),
	                    "a\\u{202E}b");
	assert_string_equal(
	    cli_safe("caf\xc3\xa9 \xe2\x96\x81", 0, buf, sizeof buf),
	    "caf\xc3\xa9 \xe2\x96\x81");
	/* cut by characters, never inside one */
	assert_string_equal(
	    cli_safe("\xc3\xa9\xc3\xa9\xc3\xa9", 2, buf, sizeof buf),
	    "\xc3\xa9\xc3\xa9");
	assert_string_equal(cli_safe("ab\xc3\xa9", 0, buf, 4), "ab");
	/* an escape that would pass max is left out whole */
	assert_string_equal(cli_safe("abc\x01", 5, buf, sizeof buf), "abc");
	assert_int_equal(
	    cli_text_width(cli_safe("\xc3\xa9\x01z", 0, buf, sizeof buf)), 6);
	/* whole, however many bytes need escaping */
	dup = cli_safe_dup("\x01\x02\x03\x04");
	assert_non_null(dup);
	assert_string_equal(dup, "\\x01\\x02\\x03\\x04");
	free(dup);
}

static void
test_print_json(void **state)
{
	FILE *f = tmpfile();
	char out[256];
	size_t n;

	(void)state;
	assert_non_null(f);
	/* a JSON answer holding OSC 52, a C1 CSI and U+202E: the same JSON,
	 * nothing a terminal acts on */
	assert_int_equal(cli_print_json(f,
	                                "{\"name\":\"\\u001b]52;c;eA==\\u0007"
	                                "\xc2\x9b\xe2\x80\xae\"}"),
	                 0);
	rewind(f);
	n = fread(out, 1, sizeof out - 1, f);
	out[n] = '\0';
	fclose(f);
	assert_string_equal(out, "{\"name\":\"\\u001b]52;c;eA==\\u0007"
	                         "\\u009b\\u202e\"}\n");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_job_args),
	    cmocka_unit_test(test_job_args_defaults),
	    cmocka_unit_test(test_job_args_errors),
	    cmocka_unit_test(test_entries),
	    cmocka_unit_test(test_parse_entry),
	    cmocka_unit_test(test_parse_numbers),
	    cmocka_unit_test(test_job_status),
	    cmocka_unit_test(test_exit_for_error),
	    cmocka_unit_test(test_job_columns),
	    cmocka_unit_test(test_paragraph),
	    cmocka_unit_test(test_queue_line),
	    cmocka_unit_test(test_pct_compare),
	    cmocka_unit_test(test_wait_reason),
	    cmocka_unit_test(test_wait_reason_held),
	    cmocka_unit_test(test_wait_reason_bytes),
	    cmocka_unit_test(test_wait_reason_behind),
	    cmocka_unit_test(test_text_width),
	    cmocka_unit_test(test_shell_command),
	    cmocka_unit_test(test_sparkline),
	    cmocka_unit_test(test_meter_due),
	    cmocka_unit_test(test_table),
	    cmocka_unit_test(test_no_color),
	    cmocka_unit_test(test_examples_parse),
	    cmocka_unit_test(test_daemon_words),
	    cmocka_unit_test(test_progress_due),
	    cmocka_unit_test(test_safe),
	    cmocka_unit_test(test_print_json),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
