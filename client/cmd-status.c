/*
 * stageloadctl status (ps): the queue and the jobs, as a table with a REASON
 * for each queued job, or --json (every page of the daemon's answer joined).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "clock.h"
#include "cli.h"
#include "proto.h"
#include "text.h"
#include "units.h"

static int cmd_status(struct cli *, struct cli_args *);

static const struct cli_option status_options[] = {
    {"all", 'a', CLI_FLAG, NULL, 0, 0, "ended jobs too, newest first"},
    {"limit", 'l', CLI_INT, "N", 1, 100000,
     "at most N ended jobs (default 50)"},
    {"group", 'g', CLI_TEXT, "NAME", 0, 0, "only the jobs of group NAME"},
    {"format", 'o', CLI_TEXT, "COLS", 0, 0,
     "the columns, comma-separated, of: id, user, state,\n"
     "name, waited, ran, footprint, swap, reason, command,\n"
     "submitted, started, ended, group, priority (default:\n"
     "id to reason); times are local: HH:MM:SS today"},
    {NULL, 0, 0, NULL, 0, 0, NULL},
};

const struct cli_entry cmd_status_entry = {
    .name = "status",
    .alias = "ps",
    .summary = "the queue: running and queued jobs (--all: ended ones too)",
    .options = status_options,
    .more_options = cli_filter_options,
    .json = "the daemon's {\"jobs\": [...]}, every page joined",
    .exec = cmd_status,
};

/*
 * status --json with protocol version 2: the daemon's pages joined into
 * one {"jobs": [...]}, as version 1 answered it: every live job, then up to
 * limit ended ones (default 50).
 */
/* status's params as text: all, limit, cursor (or NULL) and the filter
 * options; NULL when out of memory. */
static char *
status_params(const struct cli_args *args, int all, long limit,
              const char *cursor)
{
	cJSON *p = cJSON_CreateObject();
	char *text = NULL;

	if (p != NULL && cJSON_AddBoolToObject(p, "all", all) != NULL &&
	    (limit <= 0 || proto_add_int(p, "limit", limit) != NULL) &&
	    (cursor == NULL ||
	     cJSON_AddStringToObject(p, "cursor", cursor) != NULL) &&
	    cli_filter_params(args, p) == 0)
		text = cJSON_PrintUnformatted(p);
	cJSON_Delete(p);
	return text;
}

struct json_pages {
	cJSON *jobs;
	const char *group;
	int all;
	long ended, want;
};

/* One page's jobs into p->jobs: 1 once the wanted ended ones are in. */
static int
json_page(const char *items_json, void *arg)
{
	struct json_pages *p = arg;
	cJSON *page = cJSON_Parse(items_json), *item;
	int done = 0;

	if (page == NULL)
		return -ENOMEM;
	while ((item = cJSON_DetachItemFromArray(page, 0)) != NULL) {
		const cJSON *e =
		    cJSON_GetObjectItemCaseSensitive(item, "ended_at_ms");
		if ((p->group != NULL && !cli_json_in_group(item, p->group)) ||
		    (p->all && cJSON_IsNumber(e) && p->ended++ >= p->want)) {
			done |= p->all && p->ended > p->want;
			cJSON_Delete(item);
			continue;
		}
		cJSON_AddItemToArray(p->jobs, item);
	}
	cJSON_Delete(page);
	return done;
}

static int
status_json_pages(struct cli *cli, const struct cli_args *args, int all,
                  long limit, const char *group)
{
	struct json_pages p = {cJSON_CreateArray(), group, all, 0,
	                       limit > 0 ? limit : 50};
	char *params = status_params(args, all, 1000, NULL), *text;
	cJSON *r;
	int rc = EXIT_OK;

	if (p.jobs == NULL || params == NULL) {
		cJSON_Delete(p.jobs);
		free(params);
		cli_error("out of memory");
		return EXIT_ERR;
	}
	rc =
	    sl_call_pages(cli->client, "status", params, "jobs", json_page, &p);
	free(params);
	if (rc < 0) {
		cJSON_Delete(p.jobs);
		return cli_fail(cli);
	}
	rc = EXIT_OK;
	if ((r = cJSON_CreateObject()) == NULL) {
		cJSON_Delete(p.jobs);
		cli_error("out of memory");
		return EXIT_ERR;
	}
	cJSON_AddItemToObject(r, "jobs", p.jobs);
	text = cJSON_PrintUnformatted(r);
	cJSON_Delete(r);
	if (text == NULL || cli_print_json(stdout, text) < 0) {
		cli_error("out of memory");
		rc = EXIT_ERR;
	}
	free(text);
	return rc;
}

/* ---- status ---- */

/* The columns status can show (-o), in their default order. */
enum status_col {
	COL_ID,
	COL_USER,
	COL_STATE,
	COL_NAME,
	COL_WAITED,
	COL_RAN,
	COL_FOOTPRINT,
	COL_SWAP,
	COL_REASON,
	COL_COMMAND,
	COL_SUBMITTED,
	COL_STARTED,
	COL_ENDED,
	COL_GROUP,
	COL_PRIORITY,
	NCOLS
};

static const struct {
	const char *name, *head;
	int right, dflt;
} status_cols[NCOLS] = {
    {"id", "ID", 1, 1},
    {"user", "USER", 0, 1},
    {"state", "STATE", 0, 1},
    {"name", "NAME", 0, 1},
    {"waited", "WAITED", 1, 1},
    {"ran", "RAN", 1, 1},
    {"footprint", "FOOTPRINT", 1, 1},
    {"swap", "SWAP/BUDGET", 1, 1},
    {"reason", "REASON", 0, 1},
    {"command", "COMMAND", 0, 0},
    {"submitted", "SUBMITTED", 0, 0},
    {"started", "STARTED", 0, 0},
    {"ended", "ENDED", 0, 0},
    {"group", "GROUP", 0, 0},
    {"priority", "PRIORITY", 1, 0},
};

/* -o's list of columns into cols; -EINVAL naming the bad one. */
static int
status_columns(const char *spec, int *cols, size_t *n, char *cause,
               size_t causelen)
{
	const char *p = spec, *end;
	size_t len, k;

	*n = 0;
	if (spec == NULL) {
		for (k = 0; k < NCOLS; k++)
			if (status_cols[k].dflt)
				cols[(*n)++] = (int)k;
		return 0;
	}
	for (;;) {
		end = strchr(p, ',');
		len = end != NULL ? (size_t)(end - p) : strlen(p);
		for (k = 0; k < NCOLS; k++)
			if (strlen(status_cols[k].name) == len &&
			    strncasecmp(p, status_cols[k].name, len) == 0)
				break;
		if (*n == NCOLS * 2) {
			snprintf(cause, causelen,
			         "--format: at most %d columns", NCOLS * 2);
			return -EINVAL;
		}
		if (k == NCOLS) {
			char bad[64];
			snprintf(bad, sizeof bad, "%.*s",
			         (int)(len < 40 ? len : 40), p);
			snprintf(cause, causelen,
			         "--format: no column '%s' (columns: id, user, "
			         "state, name, waited, ran, footprint, swap, "
			         "reason, command, submitted, started, ended, "
			         "group, priority)",
			         bad);
			return -EINVAL;
		}
		cols[(*n)++] = (int)k;
		if (end == NULL)
			return 0;
		p = end + 1;
	}
}

/* What the cells of a list need besides the job. */
struct status_ctx {
	int64_t now;
	double free_pct;         /* NAN before the daemon's first sample */
	int64_t available_bytes; /* 0 before the daemon's first sample */
	int64_t reserved_bytes;  /* promised to jobs holding memory */
};

static void
status_cell(int col, const struct sl_job *j, const struct status_ctx *x,
            char *buf, size_t len)
{
	switch (col) {
	case COL_ID:
		snprintf(buf, len, "%" PRId64, j->id);
		break;
	case COL_USER:
		cli_fit(j->user, 16, buf, len);
		break;
	case COL_STATE:
		cli_job_state(j, buf, len);
		break;
	case COL_NAME:
		/* cut to leave room for the attached mark */
		cli_fit(j->name, j->attached ? 34 : 40, buf, len);
		if (j->attached && strlen(buf) + 7 < len)
			strcat(buf, " (att)");
		break;
	case COL_WAITED:
		cli_job_waited(j, x->now, buf, len);
		break;
	case COL_RAN:
		cli_job_ran(j, x->now, buf, len);
		break;
	case COL_FOOTPRINT:
		if (j->started_at_ms <= 0)
			snprintf(buf, len, "-");
		else
			cli_size(sl_job_ended(j) ? j->footprint_peak_bytes
			                         : j->footprint_bytes,
			         buf, len);
		/* and a reservation, with where it came from */
		cli_job_expect(j, buf, len);
		break;
	case COL_SWAP:
		cli_job_swap(j, buf, len);
		break;
	case COL_REASON:
		cli_job_reason(j, x->free_pct, x->available_bytes,
		               x->reserved_bytes, CLI_REASON_COLUMN, buf, len);
		break;
	case COL_COMMAND:
		/* only the owner and root are given it */
		if (j->command != NULL)
			cli_fit_text(j->command, 1, 60, buf, len);
		else
			snprintf(buf, len, "-");
		break;
	case COL_SUBMITTED:
		cli_clock(j->submitted_at_ms, x->now, buf, len);
		break;
	case COL_STARTED:
		cli_clock(j->started_at_ms, x->now, buf, len);
		break;
	case COL_ENDED:
		cli_clock(j->ended_at_ms, x->now, buf, len);
		break;
	case COL_GROUP:
		cli_fit(j->group[0] != '\0' ? j->group : "-", 32, buf, len);
		break;
	case COL_PRIORITY:
		snprintf(buf, len, "%d", j->priority);
		break;
	}
}

/* Whether --state names a state that is an end: those are looked for
 * among the ended jobs, as with --all. */
static int
status_states_ended(const char *states)
{
	const char *p, *end;
	char word[32];
	size_t len;

	for (p = states; p != NULL; p = end != NULL ? end + 1 : NULL) {
		end = strchr(p, ',');
		len = end != NULL ? (size_t)(end - p) : strlen(p);
		snprintf(word, sizeof word, "%.*s", (int)(len < 31 ? len : 31),
		         p);
		if (names_state_parse(word) >= NAMES_STATE_EXITED)
			return 1;
	}
	return 0;
}

static int
cmd_status(struct cli *cli, struct cli_args *args)
{
	int all = cli_has(args, "all");
	long limit = (long)cli_number(args, "limit", 0);
	const char *group = cli_text(args, "group", NULL);
	int cols[NCOLS * 2], right[NCOLS * 2];
	const char *head[NCOLS * 2];
	char cause[256], c[NCOLS * 2][256];
	const char *cells[NCOLS * 2];
	struct status_ctx x;
	struct sl_info info;
	struct sl_job *jobs;
	struct cli_table t;
	sl_filter *f = NULL;
	size_t n, i, k, ncols;
	int rc;

	if (status_columns(cli_text(args, "format", NULL), cols, &ncols, cause,
	                   sizeof cause) < 0)
		return cli_usage_error(cli, "%s", cause);
	if ((rc = cli_filter(cli, args, &f)) >= 0)
		return rc;
	/* The daemon reads the ended jobs for such a state: so do the
	 * pages' count of them. */
	if (status_states_ended(cli_text(args, "state", NULL)))
		all = 1;
	if ((rc = cli_connect(cli)) != 0) {
		sl_filter_free(f);
		return rc;
	}
	if (cli->json && sl_hello_info(cli->client)->version >= 2) {
		sl_filter_free(f);
		return status_json_pages(cli, args, all, limit, group);
	}
	if (cli->json && group != NULL) {
		sl_filter_free(f);
		return cli_usage_error(cli,
		                       "--group with --json needs a daemon "
		                       "of protocol version 2");
	}
	if (cli->json) {
		char *params = status_params(args, all, limit, NULL);

		sl_filter_free(f);
		if (params == NULL) {
			cli_error("out of memory");
			return EXIT_ERR;
		}
		rc = cli_raw_call(cli, "status", params);
		free(params);
		return rc;
	}
	rc = sl_status_filtered(cli->client, all, (int)limit, f, &jobs, &n);
	if (rc < 0) {
		sl_filter_free(f);
		return cli_fail(cli);
	}
	if (n == 0) {
		printf(f != NULL ? "no jobs match\n"
		       : all     ? "no jobs\n"
		                 : "no jobs queued or running\n");
		sl_filter_free(f);
		sl_jobs_free(jobs, n);
		return EXIT_OK;
	}
	/* The free % the reasons compare: the daemon's latest sample. */
	x.now = clock_wall_ms();
	x.free_pct = NAN;
	x.available_bytes = 0;
	if (sl_info(cli->client, &info) == 0 && info.has_sample) {
		x.free_pct = info.sample.free_pct;
		x.available_bytes = (int64_t)info.sample.available_bytes;
	}
	x.reserved_bytes = cli_reserved_bytes(jobs, n);
	for (k = 0; k < ncols; k++) {
		head[k] = status_cols[cols[k]].head;
		right[k] = status_cols[cols[k]].right;
		cells[k] = c[k];
	}
	cli_table_init(&t, ncols, head, right);
	for (i = 0; i < n; i++) {
		if (group != NULL && strcmp(jobs[i].group, group) != 0)
			continue;
		for (k = 0; k < ncols; k++)
			status_cell(cols[k], &jobs[i], &x, c[k], sizeof c[k]);
		cli_table_add(&t, cells);
	}
	cli_table_print(&t, stdout);
	cli_table_free(&t);
	sl_jobs_free(jobs, n);
	sl_filter_free(f);
	return EXIT_OK;
}
