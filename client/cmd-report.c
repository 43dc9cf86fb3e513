/* stageloadctl report: accounting of ended jobs per user and name. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "clock.h"
#include "cli.h"
#include "names.h"
#include "proto.h"
#include "units.h"

#define DAY_MS (24LL * 3600 * 1000)

static int cmd_report(struct cli *, struct cli_args *);

static const struct cli_option report_options[] = {
    {"since", 0, CLI_TEXT, "T", 0, 0,
     "from the day that holds T: a duration back from now\n(7d), an epoch "
     "or \"2026-11-30\" (default: every day kept)"},
    {"until", 0, CLI_TEXT, "T", 0, 0,
     "to the day that holds T, that day included (default now)"},
    {"by", 0, CLI_CHOICE, "user|name|user,name", 0, 0,
     "one row per user, per job name or per both (default\nuser,name)"},
    {"csv", 0, CLI_FLAG, NULL, 0, 0, "comma-separated, a header line first"},
    {"db", 0, CLI_TEXT, "PATH", 0, 0,
     "with the daemon down, the database to read\n(default: the one it "
     "uses without --db)"},
    {NULL, 0, 0, NULL, 0, 0, NULL},
};

const struct cli_entry cmd_report_entry = {
    .name = "report",
    .summary = "accounting of ended jobs per user and name: runs, how they "
               "ended, run times, peaks",
    .options = report_options,
    .more_options = cli_filter_options_ended,
    .json = "one object per row and line; keys as the CSV's columns",
    .exec = cmd_report,
};

/* The day of ms, UTC, "2026-11-30". */
static const char *
report_day(int64_t ms, char *buf, size_t len)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	if (gmtime_r(&t, &tm) == NULL ||
	    strftime(buf, len, "%Y-%m-%d", &tm) == 0)
		snprintf(buf, len, "?");
	return buf;
}

/* The jobs of row w killed for reason (a word of proto/names.h), or
 * for any reason this build does not know (NAMES_END_OTHER). */
static int64_t
killed_for(const struct sl_report_row *w, int reason)
{
	int64_t n = 0;
	size_t k;

	for (k = 0; k < w->nkilled_by; k++)
		if (names_end_parse(w->killed_by[k].reason) == reason)
			n += w->killed_by[k].jobs;
	return n;
}

/* The columns of --json and --csv: their keys, in order. Reasons of a
 * kill are every end reason proto/names.h lists, then "other". */
#define REPORT_MAX_COLS 40
struct report_cols {
	const char *key[REPORT_MAX_COLS];
	int reason[REPORT_MAX_COLS]; /* killed_<reason>: its index, else 0 */
	char killed_key[NAMES_END_COUNT][48];
	size_t n;
};

static void
report_cols(const struct sl_report *r, struct report_cols *c)
{
	static const char *const head[] = {"runs", "exited_0", "exited_nonzero",
	                                   "failed", "killed"};
	static const char *const tail[] = {"cancelled",
	                                   "lost",
	                                   "ran",
	                                   "run_time_ms",
	                                   "run_time_median_ms",
	                                   "time_waited_ms",
	                                   "footprint_peak_bytes",
	                                   "swap_growth_peak_bytes"};
	size_t i;
	int e;

	memset(c, 0, sizeof *c);
	if (strstr(r->by, "user") != NULL) {
		c->key[c->n++] = "user";
		c->key[c->n++] = "uid";
	}
	if (strstr(r->by, "name") != NULL)
		c->key[c->n++] = "name";
	for (i = 0; i < sizeof head / sizeof head[0]; i++)
		c->key[c->n++] = head[i];
	for (e = NAMES_END_NONE + 1; e < NAMES_END_COUNT; e++) {
		snprintf(c->killed_key[e], sizeof c->killed_key[e], "killed_%s",
		         names_end_name(e));
		c->reason[c->n] = e;
		c->key[c->n++] = c->killed_key[e];
	}
	for (i = 0; i < sizeof tail / sizeof tail[0]; i++)
		c->key[c->n++] = tail[i];
}

/* The value of column i of row w: a number (*num) or text (returned). */
static const char *
report_value(const struct report_cols *c, size_t i,
             const struct sl_report_row *w, int64_t *num)
{
	const char *k = c->key[i];

	if (c->reason[i] > 0) {
		*num = killed_for(w, c->reason[i]);
		return NULL;
	}
	if (strcmp(k, "user") == 0)
		return w->user ? w->user : "";
	if (strcmp(k, "name") == 0)
		return w->name ? w->name : "";
#define NUM(f)                                                                 \
	if (strcmp(k, #f) == 0) {                                              \
		*num = (int64_t)w->f;                                          \
		return NULL;                                                   \
	}
	NUM(uid)
	NUM(runs)
	NUM(exited_0)
	NUM(exited_nonzero)
	NUM(failed)
	NUM(killed)
	NUM(cancelled)
	NUM(lost)
	NUM(ran)
	NUM(run_time_ms)
	NUM(run_time_median_ms)
	NUM(time_waited_ms)
	NUM(footprint_peak_bytes)
	NUM(swap_growth_peak_bytes)
#undef NUM
	*num = 0;
	return NULL;
}

static int
print_json_rows(const struct sl_report *r)
{
	struct report_cols c;
	size_t i, k;

	report_cols(r, &c);
	for (i = 0; i < r->nrows; i++) {
		cJSON *o = cJSON_CreateObject();
		char *text;

		for (k = 0; o != NULL && k < c.n; k++) {
			int64_t v = 0;
			const char *t = report_value(&c, k, &r->rows[i], &v);

			if (t != NULL)
				cJSON_AddStringToObject(o, c.key[k], t);
			else if (strcmp(c.key[k], "run_time_median_ms") == 0 &&
			         v < 0)
				cJSON_AddNullToObject(o, c.key[k]);
			else
				proto_add_int(o, c.key[k], v);
		}
		text = o != NULL ? proto_print(o, 0) : NULL;
		cJSON_Delete(o);
		if (text == NULL || cli_print_json(stdout, text) != 0) {
			free(text);
			cli_error("out of memory");
			return EXIT_ERR;
		}
		free(text);
	}
	return EXIT_OK;
}

static void
print_csv(const struct sl_report *r)
{
	struct report_cols c;
	size_t i, k;

	report_cols(r, &c);
	for (k = 0; k < c.n; k++)
		printf("%s%s", k ? "," : "", c.key[k]);
	putchar('\n');
	for (i = 0; i < r->nrows; i++) {
		for (k = 0; k < c.n; k++) {
			int64_t v = 0;
			const char *t = report_value(&c, k, &r->rows[i], &v);

			if (k > 0)
				putchar(',');
			if (t != NULL)
				cli_csv_field(t);
			else if (!(strcmp(c.key[k], "run_time_median_ms") ==
			               0 &&
			           v < 0))
				printf("%" PRId64, v);
		}
		putchar('\n');
	}
}

/* The table: the kill reasons that occur get a column each. */
static int
print_table(const struct sl_report *r)
{
	static const char *const fixed[] = {
	    "RUNS", "EXIT 0",    "EXIT>0", "FAILED", "KILLED", "CANCELLED",
	    "LOST", "RUN TOTAL", "MEDIAN", "WAITED", "PEAK",   "SWAP+"};
	int by_user = strstr(r->by, "user") != NULL;
	int by_name = strstr(r->by, "name") != NULL;
	int used[NAMES_END_COUNT] = {0};
	const char *head[32];
	char hbuf[NAMES_END_COUNT][48], cells[32][64];
	const char *row[32];
	int right[32];
	struct cli_table t;
	size_t i, k, n = 0, nfix;
	int e;

	for (i = 0; i < r->nrows; i++)
		for (k = 0; k < r->rows[i].nkilled_by; k++)
			used[names_end_parse(r->rows[i].killed_by[k].reason)] =
			    1;
	if (by_user)
		head[n++] = "USER";
	if (by_name)
		head[n++] = "NAME";
	nfix = n;
	for (k = 0; k < 5; k++)
		head[n++] = fixed[k];
	for (e = NAMES_END_NONE + 1; e < NAMES_END_COUNT; e++) {
		if (!used[e])
			continue;
		snprintf(hbuf[e], sizeof hbuf[e], "KILLED:%s",
		         names_end_name(e));
		head[n++] = hbuf[e];
	}
	for (k = 5; k < sizeof fixed / sizeof fixed[0]; k++)
		head[n++] = fixed[k];
	for (k = 0; k < n; k++)
		right[k] = k >= nfix;
	if (cli_table_init(&t, n, head, right) != 0) {
		cli_error("out of memory");
		return EXIT_ERR;
	}
	for (i = 0; i < r->nrows; i++) {
		const struct sl_report_row *w = &r->rows[i];
		int64_t fix[5] = {w->runs, w->exited_0, w->exited_nonzero,
		                  w->failed, w->killed};
		size_t c = 0;

		if (by_user)
			cli_fit(w->user ? w->user : "", 16, cells[c++], 64);
		if (by_name)
			cli_fit(w->name ? w->name : "", 24, cells[c++], 64);
		for (k = 0; k < 5; k++)
			snprintf(cells[c++], 64, "%" PRId64, fix[k]);
		for (e = NAMES_END_NONE + 1; e < NAMES_END_COUNT; e++)
			if (used[e])
				snprintf(cells[c++], 64, "%" PRId64,
				         killed_for(w, e));
		snprintf(cells[c++], 64, "%" PRId64, w->cancelled);
		snprintf(cells[c++], 64, "%" PRId64, w->lost);
		if (w->ran > 0) {
			cli_duration(w->run_time_ms, cells[c++], 64);
			cli_duration(w->run_time_median_ms, cells[c++], 64);
		} else {
			snprintf(cells[c++], 64, "-");
			snprintf(cells[c++], 64, "-");
		}
		cli_duration(w->time_waited_ms, cells[c++], 64);
		cli_size(w->footprint_peak_bytes, cells[c++], 64);
		cli_size(w->swap_growth_peak_bytes, cells[c++], 64);
		for (k = 0; k < c; k++)
			row[k] = cells[k];
		if (cli_table_add(&t, row) != 0) {
			cli_table_free(&t);
			cli_error("out of memory");
			return EXIT_ERR;
		}
	}
	cli_table_print(&t, stdout);
	cli_table_free(&t);
	return EXIT_OK;
}

/* What the days are, on stderr so that stdout is the rows alone: the
 * oldest day kept, and a warning when --since asks for days before it. */
static void
report_days(const struct sl_report *r, int since_given, int quiet)
{
	char a[32], b[32], c[32];

	if (r->oldest_ms < 0) {
		cli_error("no ended job is counted yet");
		return;
	}
	if (since_given && r->since_ms / DAY_MS < r->oldest_ms / DAY_MS) {
		cli_error("warning: the oldest day kept is %s (UTC); jobs that "
		          "ended before it are not counted",
		          report_day(r->oldest_ms, a, sizeof a));
		return;
	}
	if (!quiet)
		fprintf(stderr,
		        "days %s to %s (UTC); the oldest day kept: %s\n",
		        report_day(r->since_ms > r->oldest_ms ? r->since_ms
		                                              : r->oldest_ms,
		                   a, sizeof a),
		        report_day(r->until_ms, b, sizeof b),
		        report_day(r->oldest_ms, c, sizeof c));
}

/* The daemon does not answer: the database read directly (history does
 * the same, docs/cli.md "history"). */
static int
report_offline(struct cli *cli, const struct cli_args *args,
               const struct sl_report_query *q, const cJSON *filter,
               struct sl_report **out)
{
	char db[1024], cause[1200];
	const char *why = sl_errmsg(cli->client);
	int rc;

	if (cli_has(args, "db"))
		snprintf(db, sizeof db, "%s", cli_text(args, "db", ""));
	else if (cli_offline_db_path(sl_path(cli->client),
	                             cli_socket_given(cli), db,
	                             sizeof db) != 0) {
		cli_error("%s; and no database to read (--db names one)", why);
		return EXIT_UNAVAILABLE;
	}
	rc = cli_offline_report(db, q, filter, out, cause, sizeof cause);
	if (rc == -EACCES || rc == -EPERM) {
		cli_error("%s; cannot read its database: %s (the system "
		          "daemon's is root's: sudo %s report)",
		          why, cause, cli->prog);
		return EXIT_NOPERM;
	}
	if (rc == -EINVAL)
		return cli_usage_error(cli, "%s", cause);
	if (rc != 0) {
		cli_error("%s; cannot read its database: %s", why, cause);
		return EXIT_UNAVAILABLE;
	}
	cli_error("the daemon is down: read %s directly, read-only", db);
	return 0;
}

static int
cmd_report(struct cli *cli, struct cli_args *args)
{
	struct sl_report_query q = {0};
	int64_t now = clock_wall_ms();
	struct sl_report *r = NULL;
	sl_filter *f = NULL;
	cJSON *fp = NULL;
	int rc;

	q.by = cli_text(args, "by", "user,name");
	if ((rc = cli_time_option(cli, args, "since", NULL, now,
	                          &q.since_ms)) >= 0 ||
	    (rc = cli_time_option(cli, args, "until", NULL, now,
	                          &q.until_ms)) >= 0)
		return rc;
	if (q.until_ms > 0 && q.until_ms < q.since_ms)
		return cli_usage_error(cli, "--until must be after --since");
	/* status's filter options, read by the same code */
	if ((rc = cli_filter(cli, args, &f)) >= 0)
		return rc;
	q.filter = f;
	if (cli->client == NULL && (cli->client = sl_client_new()) == NULL) {
		sl_filter_free(f);
		cli_error("out of memory");
		return EXIT_ERR;
	}
	if (sl_connect(cli->client, cli->socket) < 0) {
		if (!sl_error_is_connection(sl_errcode(cli->client))) {
			sl_filter_free(f);
			return cli_fail(cli);
		}
		if ((fp = cJSON_CreateObject()) == NULL ||
		    cli_filter_params(args, fp) != 0) {
			cJSON_Delete(fp);
			sl_filter_free(f);
			cli_error("out of memory");
			return EXIT_ERR;
		}
		rc = report_offline(cli, args, &q, fp, &r);
		cJSON_Delete(fp);
		sl_filter_free(f);
		if (rc != 0)
			return rc;
	} else {
		rc = sl_report(cli->client, &q, &r);
		sl_filter_free(f);
		if (rc < 0)
			return cli_fail(cli);
	}
	report_days(r, cli_has(args, "since"),
	            cli->json || cli_has(args, "csv"));
	if (cli->json)
		rc = print_json_rows(r);
	else if (cli_has(args, "csv")) {
		print_csv(r);
		rc = EXIT_OK;
	} else
		rc = print_table(r);
	sl_report_free(r);
	return rc;
}
