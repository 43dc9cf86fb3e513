/* stageloadctl history: memory over time, from the daemon's rollups. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "clock.h"
#include "cli.h"
#include "proto.h"
#include "units.h"

enum format { FMT_TABLE, FMT_JSON, FMT_CSV };

static int cmd_history(struct cli *, struct cli_args *);

static const struct cli_option history_options[] = {
    {"since", 0, CLI_TEXT, "T", 0, 0,
     "start: a duration back from now (1h), an epoch or\n"
     "\"2026-11-30 05:00\" (default 1h)"},
    {"until", 0, CLI_TEXT, "T", 0, 0, "end (default now)"},
    {"step", 0, CLI_DURATION, "D", 0, 0,
     "bucket size, e.g. 10s, 1m (default: span / 60)"},
    {"format", 0, CLI_CHOICE, "table|json|csv", 0, 0,
     "table, json or csv (default table)"},
    {"job", 0, CLI_ID, "ID", 0, 0,
     "a job's footprint and swap instead of the system's"},
    {"db", 0, CLI_TEXT, "PATH", 0, 0,
     "with the daemon down, the database to read\n(default: the one it "
     "uses without --db)"},
    {NULL, 0, 0, NULL, 0, 0, NULL},
};

const struct cli_entry cmd_history_entry = {
    .name = "history",
    .summary = "memory over time, bucketed min/avg/max (the daemon down: from "
               "its database)",
    .options = history_options,
    .json = "the same as --format json",
    .exec = cmd_history,
};

static void
print_table(const struct sl_history *h)
{
	static const char *const sys_head[] = {
	    "TIME", "N",   "FREE% MIN", "AVG",      "MAX", "SWAP MIN",
	    "AVG",  "MAX", "AVAIL",     "PRESSURE", ""};
	static const int sys_right[] = {0, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0};
	static const char *const job_head[] = {"TIME", "N",   "FOOTPRINT MIN",
	                                       "AVG",  "MAX", "SWAP MIN",
	                                       "AVG",  "MAX", "STAGE"};
	static const int job_right[] = {0, 1, 1, 1, 1, 1, 1, 1, 0};
	struct cli_table t;
	char c[11][32], stage[1100];
	const char *cells[11];
	size_t i, k;

	if (h->job_id > 0)
		cli_table_init(&t, 9, job_head, job_right);
	else
		cli_table_init(&t, 11, sys_head, sys_right);
	for (k = 0; k < 11; k++)
		cells[k] = c[k];
	for (i = 0; i < h->nbuckets; i++) {
		const struct sl_bucket *b = &h->buckets[i];
		/* Buckets under a second apart need the milliseconds. */
		cli_time(b->ts_ms, h->step_ms < 1000, c[0], sizeof c[0]);
		snprintf(c[1], sizeof c[1], "%" PRId64, b->n);
		if (h->job_id > 0) {
			cli_size((uint64_t)b->footprint_bytes.min, c[2], 32);
			cli_size((uint64_t)b->footprint_bytes.avg, c[3], 32);
			cli_size((uint64_t)b->footprint_bytes.max, c[4], 32);
			cli_size((uint64_t)b->swap_bytes.min, c[5], 32);
			cli_size((uint64_t)b->swap_bytes.avg, c[6], 32);
			cli_size((uint64_t)b->swap_bytes.max, c[7], 32);
			cells[8] = h->stages != NULL && h->stages[i] != NULL
			               ? cli_safe(h->stages[i], 40, stage,
			                          sizeof stage)
			               : "";
		} else {
			snprintf(c[2], 32, "%.1f", b->free_pct.min);
			snprintf(c[3], 32, "%.1f", b->free_pct.avg);
			snprintf(c[4], 32, "%.1f", b->free_pct.max);
			cli_size((uint64_t)b->swap_used_bytes.min, c[5], 32);
			cli_size((uint64_t)b->swap_used_bytes.avg, c[6], 32);
			cli_size((uint64_t)b->swap_used_bytes.max, c[7], 32);
			cli_size((uint64_t)b->available_bytes.avg, c[8], 32);
			snprintf(c[9], 32, "%s", b->pressure_max);
			snprintf(c[10], 32, "%s", b->gap ? "(gap before)" : "");
		}
		cli_table_add(&t, cells);
	}
	cli_table_print(&t, stdout);
	cells[8] = c[8];
	cli_table_free(&t);
	if (h->nbuckets == 0)
		printf("(no samples in this span)\n");
}

/*
 * The column time is ts_ms as local time ("2026-11-30 05:00:00", with
 * milliseconds when the step is under a second), for a reader or a
 * spreadsheet. It follows the numbers so that they keep their places: it
 * is the last column, but in a job's CSV before stage, the free text,
 * which stays last.
 */
static void
print_csv(const struct sl_history *h)
{
	char t[64];
	size_t i;

	if (h->job_id > 0)
		printf("ts_ms,n,footprint_min_bytes,footprint_avg_bytes,"
		       "footprint_max_bytes,swap_min_bytes,swap_avg_bytes,"
		       "swap_max_bytes,time,stage\n");
	else
		printf("ts_ms,n,free_pct_min,free_pct_avg,free_pct_max,"
		       "swap_used_min_bytes,swap_used_avg_bytes,"
		       "swap_used_max_bytes,available_min_bytes,"
		       "available_avg_bytes,available_max_bytes,pressure_max,"
		       "gap,time\n");
	for (i = 0; i < h->nbuckets; i++) {
		const struct sl_bucket *b = &h->buckets[i];
		cli_time(b->ts_ms, h->step_ms < 1000, t, sizeof t);
		if (h->job_id > 0) {
			printf("%" PRId64 ",%" PRId64 ",%.0f,%.0f,%.0f,%.0f,"
			       "%.0f,%.0f,%s,",
			       b->ts_ms, b->n, b->footprint_bytes.min,
			       b->footprint_bytes.avg, b->footprint_bytes.max,
			       b->swap_bytes.min, b->swap_bytes.avg,
			       b->swap_bytes.max, t);
			cli_csv_field(h->stages != NULL ? h->stages[i] : NULL);
			putchar('\n');
		} else
			printf("%" PRId64 ",%" PRId64 ",%.2f,%.2f,%.2f,%.0f,"
			       "%.0f,%.0f,%.0f,%.0f,%.0f,%s,%d,%s\n",
			       b->ts_ms, b->n, b->free_pct.min, b->free_pct.avg,
			       b->free_pct.max, b->swap_used_bytes.min,
			       b->swap_used_bytes.avg, b->swap_used_bytes.max,
			       b->available_bytes.min, b->available_bytes.avg,
			       b->available_bytes.max, b->pressure_max, b->gap,
			       t);
	}
}

static cJSON *
stat_json(const struct sl_stat *st)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddNumberToObject(o, "min", st->min);
	cJSON_AddNumberToObject(o, "avg", st->avg);
	cJSON_AddNumberToObject(o, "max", st->max);
	return o;
}

/* The daemon's answer as it would have been (PROTOCOL.md, history), with
 * where it was read from. */
static int
print_json(const struct sl_history *h, const char *db)
{
	cJSON *r = cJSON_CreateObject(), *a, *o;
	char *text;
	size_t i;

	if (h->job_id > 0) {
		cJSON_AddNumberToObject(r, "job_id", (double)h->job_id);
	} else {
		cJSON_AddStringToObject(r, "tier", h->tier);
		cJSON_AddNumberToObject(r, "since_ms", (double)h->since_ms);
		cJSON_AddNumberToObject(r, "until_ms", (double)h->until_ms);
	}
	cJSON_AddNumberToObject(r, "step_ms", (double)h->step_ms);
	cJSON_AddStringToObject(r, "read_from", db);
	a = cJSON_AddArrayToObject(r, "buckets");
	for (i = 0; i < h->nbuckets; i++) {
		const struct sl_bucket *b = &h->buckets[i];
		o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "ts_ms", (double)b->ts_ms);
		cJSON_AddNumberToObject(o, "n", (double)b->n);
		cJSON_AddItemToArray(a, o);
		if (h->job_id > 0) {
			cJSON_AddItemToObject(o, "footprint_bytes",
			                      stat_json(&b->footprint_bytes));
			cJSON_AddItemToObject(o, "swap_bytes",
			                      stat_json(&b->swap_bytes));
			if (h->stages != NULL && h->stages[i] != NULL)
				cJSON_AddStringToObject(o, "stage",
				                        h->stages[i]);
			else
				cJSON_AddNullToObject(o, "stage");
			continue;
		}
		cJSON_AddItemToObject(o, "free_pct", stat_json(&b->free_pct));
		cJSON_AddItemToObject(o, "swap_used_bytes",
		                      stat_json(&b->swap_used_bytes));
		cJSON_AddItemToObject(o, "available_bytes",
		                      stat_json(&b->available_bytes));
		cJSON_AddStringToObject(o, "pressure_max", b->pressure_max);
		cJSON_AddBoolToObject(o, "gap", b->gap);
	}
	text = proto_print(r, 0);
	cJSON_Delete(r);
	if (text == NULL) {
		cli_error("out of memory");
		return EXIT_ERR;
	}
	cli_print_json(stdout, text);
	free(text);
	return EXIT_OK;
}

/*
 * The daemon does not answer: the database is read directly, read-only,
 * as this user (docs/cli.md, "history"). Says so on stderr, so what is on
 * stdout is what the daemon's answer would have printed.
 */
static int
history_offline(struct cli *cli, const struct cli_args *args, enum format fmt,
                int64_t since_ms, int64_t until_ms, int64_t step_ms)
{
	char db[1024], cause[1200];
	const char *why = sl_errmsg(cli->client);
	struct sl_history *h;
	int rc;

	int64_t job_id = cli_number(args, "job", 0);

	if (cli_has(args, "db"))
		snprintf(db, sizeof db, "%s", cli_text(args, "db", ""));
	else if (cli_offline_db_path(sl_path(cli->client),
	                             cli_socket_given(cli), db,
	                             sizeof db) != 0) {
		cli_error("%s; and no database to read (--db names one)", why);
		return EXIT_UNAVAILABLE;
	}
	if (job_id > 0)
		rc = cli_offline_job_history(db, job_id, since_ms, until_ms,
		                             step_ms, &h, cause, sizeof cause);
	else
		rc = cli_offline_history(db, since_ms, until_ms, step_ms, &h,
		                         cause, sizeof cause);
	if (rc == -EACCES || rc == -EPERM) {
		cli_error("%s; cannot read its database: %s (the system "
		          "daemon's is root's: sudo %s history)",
		          why, cause, cli->prog);
		return EXIT_NOPERM;
	}
	if (rc == -E2BIG) {
		cli_error("%s", cause);
		return EXIT_USAGE;
	}
	if (rc == -ENOENT && job_id > 0) {
		cli_error("%s", cause);
		return EXIT_ERR;
	}
	if (rc != 0) {
		cli_error("%s; cannot read its database: %s", why, cause);
		return EXIT_UNAVAILABLE;
	}
	cli_error("the daemon is down: read %s directly, read-only", db);
	if (fmt == FMT_JSON)
		rc = print_json(h, db);
	else if (fmt == FMT_CSV)
		print_csv(h);
	else
		print_table(h);
	sl_history_free(h);
	return rc;
}

static int
cmd_history(struct cli *cli, struct cli_args *args)
{
	const char *since = cli_text(args, "since", "1h");
	const char *format = cli_text(args, "format", "table");
	int64_t now = clock_wall_ms(), since_ms, until_ms = 0;
	int64_t step_ms = cli_number(args, "step", 0);
	int64_t job_id = cli_number(args, "job", 0);
	enum format fmt = FMT_TABLE;
	struct sl_history *h;
	int rc;

	if (strcmp(format, "json") == 0 || cli->json)
		fmt = FMT_JSON;
	else if (strcmp(format, "csv") == 0)
		fmt = FMT_CSV;
	if ((rc = cli_time_option(cli, args, "since", "1h", now, &since_ms)) >=
	        0 ||
	    (rc = cli_time_option(cli, args, "until", NULL, now, &until_ms)) >=
	        0)
		return rc;
	if (until_ms > 0 && until_ms <= since_ms)
		return cli_usage_error(cli, "--until must be after --since");
	if (until_ms == 0 && since_ms >= now)
		return cli_usage_error(cli, "--since '%s' is in the future",
		                       since);
	if (cli->client == NULL && (cli->client = sl_client_new()) == NULL) {
		cli_error("out of memory");
		return EXIT_ERR;
	}
	if (sl_connect(cli->client, cli->socket) < 0) {
		if (sl_error_is_connection(sl_errcode(cli->client)))
			return history_offline(cli, args, fmt, since_ms,
			                       until_ms, step_ms);
		return cli_fail(cli);
	}

	if (fmt == FMT_JSON) {
		char params[256], *out = NULL;
		int n = snprintf(params, sizeof params,
		                 "{\"since_ms\":%" PRId64, since_ms);
		if (until_ms > 0)
			n += snprintf(params + n, sizeof params - (size_t)n,
			              ",\"until_ms\":%" PRId64, until_ms);
		if (step_ms > 0)
			n += snprintf(params + n, sizeof params - (size_t)n,
			              ",\"step_ms\":%" PRId64, step_ms);
		if (job_id > 0)
			n += snprintf(params + n, sizeof params - (size_t)n,
			              ",\"job_id\":%" PRId64, job_id);
		snprintf(params + n, sizeof params - (size_t)n, "}");
		if (sl_call(cli->client, "history", params, &out) < 0)
			return cli_fail(cli);
		printf("%s\n", out);
		sl_free(out);
		return EXIT_OK;
	}
	if (sl_history(cli->client, since_ms, until_ms, step_ms, job_id, &h) <
	    0)
		return cli_fail(cli);
	if (fmt == FMT_CSV)
		print_csv(h);
	else
		print_table(h);
	sl_history_free(h);
	return EXIT_OK;
}
