/*
 * stageloadctl commands about detached jobs and the queue: submit,
 * status (ps), show, cancel, wait, logs, events. Attached jobs (run,
 * guard) are in cmd-run.c.
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

#include "cli.h"
#include "proto.h"
#include "text.h"
#include "units.h"

static int cmd_submit(struct cli *, struct cli_args *);
static int cmd_status(struct cli *, struct cli_args *);
static int cmd_show(struct cli *, struct cli_args *);
static int cmd_cancel(struct cli *, struct cli_args *);
static int cmd_wait(struct cli *, struct cli_args *);
static int cmd_logs(struct cli *, struct cli_args *);
static int cmd_events(struct cli *, struct cli_args *);

const struct cli_entry cmd_submit_entry = {
    .name = "submit",
    .summary = "queue a detached job; prints its id",
    .operands = "-- CMD [ARGS...]",
    .min_operands = 1,
    .max_operands = -1,
    .flags = CLI_COMMAND_LINE,
    .options = cli_submit_queue_options,
    .more_options = cli_job_options,
    .json = "{\"id\",\"position\",\"queued\"} instead of the id alone",
    .exec = cmd_submit,
};

static const struct cli_option status_options[] = {
    {"all", 'a', CLI_FLAG, NULL, 0, 0, "ended jobs too, newest first"},
    {"limit", 'l', CLI_INT, "N", 1, 100000,
     "at most N ended jobs (default 50)"},
    {"group", 'g', CLI_TEXT, "NAME", 0, 0, "only the jobs of group NAME"},
    {"format", 'o', CLI_TEXT, "COLS", 0, 0,
     "the columns, comma-separated, of: id, user, state,\n"
     "name, waited, ran, footprint, swap, reason, command\n"
     "(default: all but command)"},
    {NULL, 0, 0, NULL, 0, 0, NULL},
};

const struct cli_entry cmd_status_entry = {
    .name = "status",
    .alias = "ps",
    .summary = "the queue: running and queued jobs (--all: ended ones too)",
    .options = status_options,
    .json = "the daemon's {\"jobs\": [...]}, every page joined",
    .exec = cmd_status,
};

static const struct cli_option show_options[] = {
    {"env", 0, CLI_FLAG, NULL, 0, 0, "the job's environment too"},
    {NULL, 0, 0, NULL, 0, 0, NULL},
};

const struct cli_entry cmd_show_entry = {
    .name = "show",
    .summary = "one job in a readable paragraph, with why it ended",
    .operands = "ID",
    .min_operands = 1,
    .max_operands = 1,
    .options = show_options,
    .json = "the daemon's job object",
    .exec = cmd_show,
};

const struct cli_entry cmd_cancel_entry = {
    .name = "cancel",
    .summary = "remove queued jobs; terminate running ones",
    .operands = "ID...",
    .min_operands = 1,
    .max_operands = -1,
    .exec = cmd_cancel,
};

static const struct cli_option wait_options[] = {
    {"notify", 'n', CLI_FLAG, NULL, 0, 0,
     "post a desktop notification as each job ends\n"
     "(macOS: osascript; Linux: notify-send)"},
    {NULL, 0, 0, NULL, 0, 0, NULL},
};

const struct cli_entry cmd_wait_entry = {
    .name = "wait",
    .summary = "wait for jobs to end; exit with the last failing job's status",
    .operands = "ID...",
    .min_operands = 1,
    .max_operands = -1,
    .options = wait_options,
    .json = "the final job objects, one per line",
    .exec = cmd_wait,
};

static const struct cli_option logs_options[] = {
    {"follow", 'f', CLI_FLAG, NULL, 0, 0, "follow until the job has ended"},
    {"lines", 'n', CLI_INT, "N", 1, 1000000,
     "only the last N lines (with -f: then follow)"},
    {"raw", 0, CLI_FLAG, NULL, 0, 0,
     "another user's job's output as it is, not escaped"},
    {NULL, 0, 0, NULL, 0, 0, NULL},
};

const struct cli_entry cmd_logs_entry = {
    .name = "logs",
    .summary = "print a detached job's output (-n N: the last N lines, -f: "
               "follow until it ends)",
    .operands = "ID",
    .min_operands = 1,
    .max_operands = 1,
    .options = logs_options,
    .no_json = "it prints the job's own bytes",
    .exec = cmd_logs,
};

static const struct cli_option events_options[] = {
    {"lines", 'n', CLI_INT, "N", 1, 100000,
     "the newest N events (default 20); with -f, N of\nbacklog first"},
    {"follow", 'f', CLI_FLAG, NULL, 0, 0, "keep following"},
    {"since", 0, CLI_TEXT, "T", 0, 0,
     "events at or after T: a duration back from now\n(1h), an epoch or "
     "\"2026-11-30 05:00\""},
    {"until", 0, CLI_TEXT, "T", 0, 0, "events before T (not with -f)"},
    {"job", 0, CLI_ID, "ID", 0, 0, "only that job's events"},
    {"user", 0, CLI_TEXT, "NAME", 0, 0, "only that user's jobs' events"},
    {"after", 0, CLI_INT, "ID", 0, 0x7fffffffL,
     "oldest first, from after that event id"},
    {"limit", 0, CLI_INT, "N", 1, 10000,
     "oldest first, N at a time (default 100): without\n-f only the first "
     "N after --after"},
    {NULL, 0, 0, NULL, 0, 0, NULL},
};

const struct cli_entry cmd_events_entry = {
    .name = "events",
    .summary = "the event log: the newest 20 (-n N), -f: follow",
    .options = events_options,
    .json = "one event object per line",
    .exec = cmd_events,
};

/* Print a JSON-text result from sl_call() as it came, but terminal-safe
 * (cli_print_json). */
static int
raw_call(struct cli *cli, const char *method, const char *params)
{
	char *out = NULL;
	int rc;

	if (sl_call(cli->client, method, params, &out) < 0)
		return cli_fail(cli);
	rc = cli_print_json(stdout, out);
	sl_free(out);
	if (rc < 0) {
		cli_error("out of memory");
		return EXIT_ERR;
	}
	return EXIT_OK;
}

/*
 * status --json with protocol version 2: the daemon's pages joined into
 * one {"jobs": [...]}, as version 1 answered it: every live job, then up to
 * limit ended ones (default 50).
 */
static int
status_json_pages(struct cli *cli, int all, long limit, const char *group)
{
	cJSON *jobs = cJSON_CreateArray(), *page, *item, *next;
	char params[256], cursor[128] = "", *out = NULL, *text;
	long ended = 0, want = limit > 0 ? limit : 50;
	int rc = EXIT_OK, done = 0;

	while (jobs != NULL && !done) {
		if (cursor[0] != '\0')
			snprintf(
			    params, sizeof params,
			    "{\"all\":%s,\"limit\":1000,\"cursor\":\"%s\"}",
			    all ? "true" : "false", cursor);
		else
			snprintf(params, sizeof params,
			         "{\"all\":%s,\"limit\":1000}",
			         all ? "true" : "false");
		if (sl_call(cli->client, "status", params, &out) < 0) {
			cJSON_Delete(jobs);
			return cli_fail(cli);
		}
		page = cJSON_Parse(out);
		sl_free(out);
		while ((item = cJSON_DetachItemFromArray(
		            cJSON_GetObjectItemCaseSensitive(page, "jobs"),
		            0)) != NULL) {
			const cJSON *e = cJSON_GetObjectItemCaseSensitive(
			    item, "ended_at_ms");
			if (group != NULL && !cli_json_in_group(item, group)) {
				cJSON_Delete(item);
				continue;
			}
			if (all && cJSON_IsNumber(e) && ended++ >= want) {
				cJSON_Delete(item);
				done = 1;
				continue;
			}
			cJSON_AddItemToArray(jobs, item);
		}
		next = cJSON_GetObjectItemCaseSensitive(page, "next_cursor");
		if (!cJSON_IsString(next) ||
		    strlen(next->valuestring) >= sizeof cursor)
			done = 1;
		else
			snprintf(cursor, sizeof cursor, "%s",
			         next->valuestring);
		cJSON_Delete(page);
	}
	if ((page = cJSON_CreateObject()) == NULL || jobs == NULL) {
		cJSON_Delete(page);
		cJSON_Delete(jobs);
		cli_error("out of memory");
		return EXIT_ERR;
	}
	cJSON_AddItemToObject(page, "jobs", jobs);
	text = cJSON_PrintUnformatted(page);
	cJSON_Delete(page);
	if (text == NULL || cli_print_json(stdout, text) < 0) {
		cli_error("out of memory");
		rc = EXIT_ERR;
	}
	free(text);
	return rc;
}

/* ---- submit ---- */

static int
cmd_submit(struct cli *cli, struct cli_args *args)
{
	sl_job_spec *spec;
	struct sl_submitted sub;
	struct cli_submit_extra x;
	int rc;

	if ((spec = cli_job_spec(args)) == NULL)
		return EXIT_ERR;
	if ((rc = cli_submit_queue(cli, args, spec, &x)) >= 0) {
		sl_job_spec_free(spec);
		return rc;
	}
	/* A command that cannot start is refused here, as run refuses it,
	 * rather than queued to fail later. */
	if ((rc = cli_connect(cli)) != 0 ||
	    (rc = cli_submit_command(spec)) >= 0 ||
	    (rc = cli_check_wait_free(cli, cli_spec_wait_free_bytes(spec))) >=
	        0) {
		cli_submit_extra_free(&x);
		sl_job_spec_free(spec);
		return rc;
	}
	cli_warn_no_swap(cli, cli_spec_budget(spec));
	rc = sl_submit(cli->client, spec, &sub);
	cli_submit_extra_free(&x);
	sl_job_spec_free(spec);
	if (rc < 0)
		return cli_fail(cli);
	if (sub.groups_capped)
		cli_error("warning: this shell has as many groups as macOS "
		          "passes on to the daemon (macOS: 16): job %" PRId64
		          " gets these, and any more groups your account has "
		          "are left out (docs/macos.md, \"Detached jobs on a "
		          "Mac\"); stageloadctl run keeps them all",
		          sub.id);
	if (cli->json)
		printf("{\"id\":%" PRId64 ",\"position\":%d,\"queued\":%d%s}\n",
		       sub.id, sub.position, sub.queued,
		       sub.groups_capped ? ",\"groups_capped\":true" : "");
	else
		printf("%" PRId64 "\n", sub.id);
	return EXIT_OK;
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
			         "reason, command)",
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
	}
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
	size_t n, i, k, ncols;
	int rc;

	if (status_columns(cli_text(args, "format", NULL), cols, &ncols, cause,
	                   sizeof cause) < 0)
		return cli_usage_error(cli, "%s", cause);
	if ((rc = cli_connect(cli)) != 0)
		return rc;
	if (cli->json && sl_hello_info(cli->client)->version >= 2)
		return status_json_pages(cli, all, limit, group);
	if (cli->json && group != NULL)
		return cli_usage_error(cli,
		                       "--group with --json needs a daemon "
		                       "of protocol version 2");
	if (cli->json) {
		char params[64];
		if (limit > 0)
			snprintf(params, sizeof params,
			         "{\"all\":%s,\"limit\":%ld}",
			         all ? "true" : "false", limit);
		else
			snprintf(params, sizeof params, "{\"all\":%s}",
			         all ? "true" : "false");
		return raw_call(cli, "status", params);
	}
	if (sl_status(cli->client, all, (int)limit, &jobs, &n) < 0)
		return cli_fail(cli);
	if (n == 0) {
		printf(all ? "no jobs\n" : "no jobs queued or running\n");
		sl_jobs_free(jobs, n);
		return EXIT_OK;
	}
	/* The free % the reasons compare: the daemon's latest sample. */
	x.now = cli_now_ms();
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
	return EXIT_OK;
}

/* ---- show ---- */ /* ---- show ---- */

/* The groups the job started without, its user having left them since it
 * was submitted (the show answer's groups_dropped). */
static void
show_groups_dropped(const char *show_json, FILE *f)
{
	const cJSON *g, *v;
	cJSON *r;
	int first = 1;

	if (show_json == NULL || (r = cJSON_Parse(show_json)) == NULL)
		return;
	g = cJSON_GetObjectItemCaseSensitive(r, "groups_dropped");
	if (cJSON_IsArray(g) && cJSON_GetArraySize(g) > 0) {
		fprintf(f, "Started without group%s",
		        cJSON_GetArraySize(g) > 1 ? "s" : "");
		cJSON_ArrayForEach(v, g)
		{
			if (cJSON_IsNumber(v)) {
				fprintf(f, "%s %.0f", first ? "" : ",",
				        v->valuedouble);
				first = 0;
			}
		}
		fprintf(f, " of its submitter's: its user was no longer in "
		           "them when it started.\n");
	}
	cJSON_Delete(r);
}

/* The job's stages, what past runs of its name reached and the groups it
 * lost come with the show answer as JSON, which sl_job does not carry. */
static void
show_stages(struct cli *cli, int64_t id)
{
	char params[64], *out = NULL;

	snprintf(params, sizeof params, "{\"id\":%" PRId64 "}", id);
	if (sl_call(cli->client, "show", params, &out) == 0) {
		show_groups_dropped(out, stdout);
		cli_print_stages(out, cli_now_ms(), stdout);
		cli_print_learned(out, stdout);
	}
	sl_free(out);
}

/* A detached job whose log stopped growing (docs/jobs.md): the daemon's
 * newest output_dropped event says from which byte of its output and at
 * which bound. */
static void
show_output_dropped(struct cli *cli, int64_t id)
{
	const cJSON *evs, *e, *kind, *det, *from, *bound;
	char params[96], *out = NULL;
	cJSON *r = NULL;
	const cJSON *last = NULL;

	snprintf(params, sizeof params,
	         "{\"job_id\":%" PRId64 ",\"before_id\":9007199254740992,"
	         "\"limit\":1000}",
	         id);
	if (sl_call(cli->client, "events", params, &out) != 0 ||
	    (r = cJSON_Parse(out)) == NULL)
		goto done;
	evs = cJSON_GetObjectItemCaseSensitive(r, "events");
	cJSON_ArrayForEach(e, evs)
	{
		kind = cJSON_GetObjectItemCaseSensitive(e, "kind");
		if (cJSON_IsString(kind) &&
		    strcmp(kind->valuestring, "output_dropped") == 0) {
			last = e; /* newest first: the first is the newest */
			break;
		}
	}
	if (last == NULL)
		goto done;
	det = cJSON_GetObjectItemCaseSensitive(last, "detail");
	from = cJSON_GetObjectItemCaseSensitive(det, "from_byte");
	bound = cJSON_GetObjectItemCaseSensitive(det, "bound");
	printf("Output dropped from byte %.0f (%s): the log says how much\n",
	       cJSON_IsNumber(from) ? from->valuedouble : 0.0,
	       cJSON_IsString(bound) &&
	               strcmp(bound->valuestring, "max_log_bytes_per_uid") == 0
	           ? "max_log_bytes_per_uid"
	           : "min_free_disk");
done:
	cJSON_Delete(r);
	sl_free(out);
}

/* The numbers a reason is said with: the daemon's latest free % and what
 * the jobs holding memory have been promised (unknown where the daemon
 * does not answer). */
static int
wait_numbers(struct cli *cli, struct cli_wait *w)
{
	struct sl_info info;
	struct sl_job *jobs;
	size_t n, i;
	int queued = 0;

	if (sl_info(cli->client, &info) == 0 && info.has_sample) {
		w->free_pct = info.sample.free_pct;
		w->available_bytes = (int64_t)info.sample.available_bytes;
	}
	if (sl_status(cli->client, 0, 0, &jobs, &n) == 0) {
		w->reserved_bytes = cli_reserved_bytes(jobs, n);
		for (i = 0; i < n; i++)
			queued += strcmp(jobs[i].state, "queued") == 0;
		sl_jobs_free(jobs, n);
	}
	return queued;
}

/*
 * While job id is queued, say where it is and why it waits on stderr, as
 * run does for an attached job: in place on a terminal, one line per
 * change otherwise. Returns once it is not queued (or the daemon does not
 * answer: the call that follows reports that).
 */
static void
watch_queued(struct cli *cli, int64_t id)
{
	struct sl_notification note;
	struct sl_job j;
	struct cli_progress progress;
	char why[192], line[256], last[256] = "";
	int tty = isatty(STDERR_FILENO), subscribed = 0, of, due;

	memset(&progress, 0, sizeof progress);
	for (;;) {
		struct cli_wait w = {NULL, NAN, 0, -1, 0, 0, 0};
		if (sl_show(cli->client, id, 0, &j) < 0)
			break;
		if (strcmp(j.state, "queued") != 0) {
			sl_job_clear(&j);
			break;
		}
		of = wait_numbers(cli, &w);
		cli_job_reason(&j, w.free_pct, w.available_bytes,
		               w.reserved_bytes, CLI_REASON_LINE, why,
		               sizeof why);
		snprintf(line, sizeof line, "queued: position %d of %d, %s",
		         j.position, of > j.position ? of : j.position, why);
		/* Not a terminal: a line when the kind of wait changes,
		 * else at most one a minute. */
		due = strcmp(line, last) != 0 &&
		      (tty || cli_progress_due(&progress, j.waiting_for, line,
		                               cli_now_ms()));
		sl_job_clear(&j);
		if (due) {
			fprintf(stderr, tty ? "\r\033[K%s" : "%s\n", line);
			fflush(stderr);
			snprintf(last, sizeof last, "%s", line);
		}
		/* Look again after a second, or at once when an event (the
		 * job admitted, cancelled) comes. */
		if (!subscribed) {
			if (sl_subscribe(cli->client, 0, 1, 0, NULL) < 0)
				break;
			subscribed = 1;
		}
		if (sl_next_notification(cli->client, 1000, &note) == 1)
			sl_notification_clear(&note);
		while (sl_next_notification(cli->client, 0, &note) == 1)
			sl_notification_clear(&note);
	}
	if (subscribed)
		(void)sl_unsubscribe(cli->client);
	if (tty && last[0] != '\0') {
		fputs("\r\033[K", stderr);
		fflush(stderr);
	}
}

static int
cmd_show(struct cli *cli, struct cli_args *args)
{
	struct cli_wait w = {NULL, NAN, 0, -1, 0, 0, 0};
	struct sl_job j;
	int64_t id;
	int env = cli_has(args, "env"), rc;
	char *text;
	size_t i;

	if (cli_parse_id(args->argv[0], &id) < 0)
		return cli_usage_error(cli, "bad job id '%s'", args->argv[0]);
	if ((rc = cli_connect(cli)) != 0)
		return rc;
	if (cli->json) {
		char params[96];
		snprintf(params, sizeof params, "{\"id\":%" PRId64 "%s}", id,
		         env ? ",\"env\":true" : "");
		return raw_call(cli, "show", params);
	}
	if (sl_show(cli->client, id, env, &j) < 0)
		return cli_fail(cli);
	if (strcmp(j.state, "queued") == 0)
		wait_numbers(cli, &w);
	text = cli_job_paragraph(&j, cli_now_ms(), &w);
	if (text != NULL)
		fputs(text, stdout);
	free(text);
	show_stages(cli, id);
	if (!j.attached)
		show_output_dropped(cli, id);
	if (env && j.env != NULL) {
		printf("Environment:\n");
		for (i = 0; j.env[i] != NULL; i++) {
			char *safe = cli_safe_dup(j.env[i]);
			printf("  %s\n",
			       safe != NULL ? safe : "(out of memory)");
			free(safe);
		}
	}
	sl_job_clear(&j);
	return EXIT_OK;
}

/* ---- cancel and wait ---- */

/* The job ids that are the operands; -1 to go on, else the exit code. */
static int
job_ids(struct cli *cli, const struct cli_args *args, int64_t **ids, int *n)
{
	int i;

	*n = args->argc;
	*ids = calloc((size_t)*n, sizeof **ids);
	if (*ids == NULL) {
		cli_error("out of memory");
		return EXIT_ERR;
	}
	for (i = 0; i < *n; i++) {
		if (cli_parse_id(args->argv[i], &(*ids)[i]) < 0) {
			free(*ids);
			return cli_usage_error(cli, "bad job id '%s'",
			                       args->argv[i]);
		}
	}
	return -1;
}

static int
cmd_cancel(struct cli *cli, struct cli_args *args)
{
	struct sl_job j;
	int64_t *ids;
	int n, i, rc, status = EXIT_OK;

	if ((rc = job_ids(cli, args, &ids, &n)) >= 0)
		return rc;
	if ((rc = cli_connect(cli)) != 0) {
		free(ids);
		return rc;
	}
	for (i = 0; i < n; i++) {
		if (sl_cancel(cli->client, ids[i], &j) < 0) {
			int code = sl_errcode(cli->client);
			status = cli_fail_job(cli, ids[i]);
			if (sl_error_is_connection(code))
				break;
			continue;
		}
		if (strcmp(j.state, "cancelled") == 0)
			printf("job %" PRId64 ": cancelled\n", ids[i]);
		else if (sl_job_ended(&j))
			printf("job %" PRId64 ": %s\n", ids[i], j.state);
		else
			printf("job %" PRId64 ": terminating (SIGTERM, then "
			       "SIGKILL after the grace period)\n",
			       ids[i]);
		sl_job_clear(&j);
	}
	free(ids);
	return status;
}

static int
cmd_wait(struct cli *cli, struct cli_args *args)
{
	struct sl_job j;
	char state[64], params[64], *out;
	int64_t *ids;
	int n, i, rc, s, status = EXIT_OK;

	if ((rc = job_ids(cli, args, &ids, &n)) >= 0)
		return rc;
	if ((rc = cli_connect(cli)) != 0) {
		free(ids);
		return rc;
	}
	for (i = 0; i < n; i++) {
		watch_queued(cli, ids[i]);
		if (cli->json) {
			snprintf(params, sizeof params, "{\"id\":%" PRId64 "}",
			         ids[i]);
			sl_set_timeout(cli->client, -1);
			if (sl_call(cli->client, "wait", params, &out) < 0) {
				status = cli_fail(cli);
				break;
			}
			cli_print_json(stdout, out);
			fflush(stdout);
			/* the status comes from the same answer, typed */
			sl_free(out);
		}
		if (sl_wait(cli->client, ids[i], &j) < 0) {
			status = cli_fail(cli);
			break;
		}
		s = cli_job_status(&j);
		if (!cli->json) {
			cli_job_state(&j, state, sizeof state);
			printf("job %" PRId64 ": %s\n", ids[i], state);
			fflush(stdout);
		}
		if (cli_has(args, "notify"))
			cli_wait_notify(&j);
		if (s != 0)
			status = s;
		sl_job_clear(&j);
	}
	free(ids);
	return status;
}

/* ---- logs ---- */

/*
 * Where the log goes. A job's output is shown as it is to the job's own
 * user (what cat(1) of their own file would do: their job already runs
 * as them). Anyone else (root) gets it escaped, newlines and tabs kept
 * (PROTO_TEXT_MULTILINE), unless --raw: what another user's job printed
 * must not drive the viewer's terminal (docs/security.md, "Text from
 * users").
 */
struct log_out {
	int err;    /* errno of our own output, told apart from the daemon's
	               connection failing (both could be EPIPE) */
	int escape; /* the viewer is not the job's user */
	char tail[4];
	size_t ntail; /* an incomplete character held for the next chunk */
};

/* Escape data to stdout; flags may hold PROTO_TEXT_PARTIAL, and then an
 * incomplete character at the end is kept in o->tail. */
static int
log_put_escaped(struct log_out *o, const char *data, size_t len, unsigned flags)
{
	char buf[4096];
	size_t done, n;

	while (len > 0) {
		done =
		    proto_text_escape(data, len, PROTO_TEXT_MULTILINE | flags,
		                      0, buf, sizeof buf, &n);
		if (n > 0 && fwrite(buf, 1, n, stdout) != n)
			return -1;
		if (done == 0)
			break; /* an incomplete character: at most 3 bytes */
		data += done;
		len -= done;
	}
	if (len > sizeof o->tail)
		return -1; /* cannot happen: PARTIAL leaves less */
	memcpy(o->tail, data, len);
	o->ntail = len;
	return 0;
}

static int
write_log(void *arg, int64_t offset, const char *data, size_t len)
{
	struct log_out *o = arg;
	char *joined = NULL;
	int rc = 0;

	(void)offset;
	errno = 0;
	if (!o->escape) {
		rc = fwrite(data, 1, len, stdout) != len ? -1 : 0;
	} else {
		if (o->ntail > 0) {
			joined = malloc(o->ntail + len);
			if (joined == NULL) {
				o->err = ENOMEM;
				return -EPIPE;
			}
			memcpy(joined, o->tail, o->ntail);
			memcpy(joined + o->ntail, data, len);
			data = joined;
			len += o->ntail;
			o->ntail = 0;
		}
		rc = log_put_escaped(o, data, len, PROTO_TEXT_PARTIAL);
		free(joined);
	}
	if (rc != 0 || fflush(stdout) != 0) {
		o->err = errno != 0 ? errno : EIO;
		return -EPIPE;
	}
	return 0;
}

/*
 * logs -n: the log is read to its end and only its last n lines are kept
 * (a last line without its newline counts as one), then written as the
 * whole log would be.
 */
struct log_tail {
	char *buf;
	size_t len, cap;
	long n;
};

/* Drop what comes before the last t->n lines. */
static void
log_tail_cut(struct log_tail *t)
{
	size_t i = t->len, start = 0;
	long lines = 0;

	if (i > 0 && t->buf[i - 1] == '\n')
		i--;
	while (i > 0) {
		if (t->buf[i - 1] == '\n' && ++lines == t->n) {
			start = i;
			break;
		}
		i--;
	}
	if (start > 0) {
		memmove(t->buf, t->buf + start, t->len - start);
		t->len -= start;
	}
}

static int
log_tail_add(void *arg, int64_t offset, const char *data, size_t len)
{
	struct log_tail *t = arg;
	char *nb;

	(void)offset;
	if (t->len + len > t->cap) {
		size_t cap = t->cap > 0 ? t->cap : 65536;
		while (cap < t->len + len)
			cap *= 2;
		if ((nb = realloc(t->buf, cap)) == NULL)
			return -ENOMEM;
		t->buf = nb;
		t->cap = cap;
	}
	memcpy(t->buf + t->len, data, len);
	t->len += len;
	/* Bounded by the lines kept, not by the log's size. */
	if (t->len > t->cap / 2)
		log_tail_cut(t);
	return 0;
}

static int
cmd_logs(struct cli *cli, struct cli_args *args)
{
	struct log_out out = {0, 0, {0}, 0};
	struct sl_job j;
	int64_t id;
	int rc;

	if (cli_parse_id(args->argv[0], &id) < 0)
		return cli_usage_error(cli, "bad job id '%s'", args->argv[0]);
	if ((rc = cli_connect(cli)) != 0)
		return rc;
	if (!cli_has(args, "raw")) {
		/* Whose job it is decides whether its bytes are escaped: raw
		 * only for the viewer's own job, the viewer being this
		 * process's uid and who the daemon sees (hello's uid) alike.
		 * What the daemon says is believed only because the socket
		 * passed the checks of sl_connect (root's or ours, in a
		 * directory nobody else writes): a listener of another user's
		 * is refused there, before it could claim our uid. */
		const struct sl_hello *h = sl_hello_info(cli->client);
		int64_t viewer = (int64_t)geteuid();
		if (sl_show(cli->client, id, 0, &j) < 0)
			return cli_fail(cli);
		out.escape = j.uid != viewer || h == NULL || h->uid != viewer;
		sl_job_clear(&j);
	}
	if (cli_has(args, "follow"))
		watch_queued(cli, id);
	if (cli_has(args, "lines")) {
		struct log_tail t = {NULL, 0, 0,
		                     (long)cli_number(args, "lines", 1)};
		int64_t end = 0;
		rc = sl_logs(cli->client, id, 0, 0, log_tail_add, &t, &end);
		if (rc == -ENOMEM) {
			free(t.buf);
			cli_error("out of memory");
			return EXIT_ERR;
		}
		if (rc == 0) {
			log_tail_cut(&t);
			if (t.len > 0)
				write_log(&out, 0, t.buf, t.len);
			if (out.err == 0 && cli_has(args, "follow"))
				rc = sl_logs(cli->client, id, end, 1, write_log,
				             &out, NULL);
		}
		free(t.buf);
	} else {
		rc = sl_logs(cli->client, id, 0, cli_has(args, "follow"),
		             write_log, &out, NULL);
	}
	/* A character the log ended inside: its bytes, escaped. */
	errno = 0;
	if (out.err == 0 && out.ntail > 0 &&
	    (log_put_escaped(&out, out.tail, out.ntail, 0) != 0 ||
	     fflush(stdout) != 0))
		out.err = errno != 0 ? errno : EIO;
	if (out.err != 0) {
		if (out.err != EPIPE) /* a reader that left knows */
			cli_error("cannot write output: %s", strerror(out.err));
		return EXIT_ERR;
	}
	if (rc < 0)
		return cli_fail(cli);
	return EXIT_OK;
}

/* ---- events ---- */

static void
print_event(const struct sl_event *e, int json)
{
	char t[64], job[32];

	if (json) {
		cJSON *o = cJSON_CreateObject(), *d;
		char *text;
		if (o == NULL)
			return;
		cJSON_AddNumberToObject(o, "id", (double)e->id);
		cJSON_AddNumberToObject(o, "ts_ms", (double)e->ts_ms);
		if (e->job_id > 0)
			cJSON_AddNumberToObject(o, "job_id", (double)e->job_id);
		else
			cJSON_AddNullToObject(o, "job_id");
		/* The daemon's own events have no user: null, as it sent
		 * them (no user name is empty). */
		if (e->user[0] != '\0')
			cJSON_AddStringToObject(o, "user", e->user);
		else
			cJSON_AddNullToObject(o, "user");
		cJSON_AddStringToObject(o, "kind", e->kind);
		/* The detail is the daemon's object: pass it on as one. */
		if (e->detail != NULL && (d = cJSON_Parse(e->detail)) != NULL)
			cJSON_AddItemToObject(o, "detail", d);
		else if (e->detail != NULL)
			cJSON_AddStringToObject(o, "detail", e->detail);
		else
			cJSON_AddNullToObject(o, "detail");
		text = proto_print(o, 0);
		if (text != NULL)
			cli_print_json(stdout, text);
		free(text);
		cJSON_Delete(o);
	} else {
		if (e->job_id > 0)
			snprintf(job, sizeof job, "job %" PRId64, e->job_id);
		else
			snprintf(job, sizeof job, "-");
		char user[64];
		/* The detail is the daemon's object as JSON text: escaped as
		 * JSON, so it stays JSON (a name's ESC is already "\u001b" in
		 * it); any other text as text. */
		char *detail = NULL;
		if (e->detail != NULL && e->detail[0] == '{')
			detail =
			    proto_text_escape_dup(e->detail, strlen(e->detail),
			                          PROTO_TEXT_JSON, NULL);
		else if (e->detail != NULL)
			detail = cli_safe_dup(e->detail);

		printf("%7" PRId64 "  %s  %-8s %-10s %-10s %s\n", e->id,
		       cli_time(e->ts_ms, 0, t, sizeof t), job,
		       e->user[0] ? cli_safe(e->user, 32, user, sizeof user)
		                  : "-",
		       e->kind, detail != NULL ? detail : "");
		free(detail);
	}
	fflush(stdout);
}

/* What events prints: --job, --user, --since and --until. */
struct events_filter {
	int64_t job_id; /* 0: any */
	const char *user;
	int64_t since_ms, until_ms; /* 0: none */
};

static int
events_match(const struct events_filter *f, const struct sl_event *e)
{
	if (f->job_id > 0 && e->job_id != f->job_id)
		return 0;
	if (f->user != NULL && strcmp(e->user, f->user) != 0)
		return 0;
	if (f->since_ms > 0 && e->ts_ms < f->since_ms)
		return 0;
	if (f->until_ms > 0 && e->ts_ms >= f->until_ms)
		return 0;
	return 1;
}

/*
 * The newest n events that match, as journalctl -n shows them: the log is
 * read newest first (before_id), a page of up to 10000 at a time, until n
 * match or the log (or --since) is behind; they are printed oldest first.
 * --job asks the daemon for that job's alone: an old job's few events are
 * read by their index, not found by walking the whole log back to them.
 * *last gets the newest id there is, where a follow goes on from.
 */
static int
events_tail(struct cli *cli, const struct events_filter *f, long n,
            int64_t *last)
{
	struct sl_events_query q = {0, -1, f->job_id, 10000, 0};
	struct sl_event *kept, *ev;
	size_t nev, i, nkept = 0;
	int rc = EXIT_OK, older = 1;

	if ((kept = calloc((size_t)n, sizeof *kept)) == NULL) {
		cli_error("out of memory");
		return EXIT_ERR;
	}
	*last = 0;
	while (older && nkept < (size_t)n) {
		if (sl_events_query(cli->client, &q, &ev, &nev) < 0) {
			rc = cli_fail(cli);
			break;
		}
		/* A page may end early (its time or size is up: PROTOCOL.md,
		 * events), but is never empty while older events remain. */
		older = nev > 0;
		for (i = 0; i < nev; i++) {
			if (ev[i].id > *last)
				*last = ev[i].id;
			q.before_id = ev[i].id;
			if (f->since_ms > 0 && ev[i].ts_ms < f->since_ms)
				older = 0; /* the rest is older still */
			if (nkept == (size_t)n || !events_match(f, &ev[i]))
				continue;
			/* Kept, detail and all. */
			kept[nkept++] = ev[i];
			ev[i].detail = NULL;
		}
		sl_events_free(ev, nev);
	}
	for (i = nkept; i-- > 0;) {
		if (rc == EXIT_OK)
			print_event(&kept[i], cli->json);
		free(kept[i].detail);
	}
	free(kept);
	return rc;
}

static int
events_time(struct cli *cli, const struct cli_args *args, const char *name,
            int64_t now, int64_t *ms)
{
	const char *s = cli_text(args, name, NULL);

	*ms = 0;
	if (s != NULL && units_parse_time_ms(s, now, ms) < 0)
		return cli_usage_error(cli,
		                       "--%s takes a time such as 1h, "
		                       "\"2026-11-30 05:00\" or an epoch, not "
		                       "'%s'",
		                       name, s);
	return -1;
}

static int
cmd_events(struct cli *cli, struct cli_args *args)
{
	int follow = cli_has(args, "follow");
	int forward = cli_has(args, "after") || cli_has(args, "limit");
	int64_t after = cli_number(args, "after", 0);
	long limit = (long)cli_number(args, "limit", 0);
	struct events_filter f;
	struct sl_events_query q;
	struct sl_notification n;
	struct sl_event *ev;
	size_t nev, i;
	int64_t last, now = cli_now_ms();
	int rc;

	memset(&f, 0, sizeof f);
	f.job_id = cli_number(args, "job", 0);
	f.user = cli_text(args, "user", NULL);
	if ((rc = events_time(cli, args, "since", now, &f.since_ms)) >= 0 ||
	    (rc = events_time(cli, args, "until", now, &f.until_ms)) >= 0)
		return rc;
	/* The filter compares names: a name nobody has would print
	 * nothing, as if that user had no events. */
	if (f.user != NULL && getpwnam(f.user) == NULL)
		return cli_usage_error(cli, "--user %s: no such user", f.user);
	if (follow && f.until_ms > 0)
		return cli_usage_error(cli, "--until cannot be used with -f");
	if (forward && cli_has(args, "lines"))
		return cli_usage_error(cli, "-n shows the newest events; "
		                            "--after and --limit list from "
		                            "the oldest: not both");
	if ((rc = cli_connect(cli)) != 0)
		return rc;
	if (!forward) {
		/* The newest -n, then (following) what comes after them. */
		if ((rc = events_tail(cli, &f,
		                      (long)cli_number(args, "lines", 20),
		                      &last)) != EXIT_OK ||
		    !follow)
			return rc;
		after = last;
	}
	/*
	 * Following, the backlog comes a page at a time until a page is not
	 * full, and only then do notifications take over; the daemon starts
	 * them with the last page, so an event seen twice (a notification
	 * and a page) is printed once, by id.
	 */
	last = after;
	memset(&q, 0, sizeof q);
	q.job_id = f.job_id;
	q.limit = limit > 0 ? (int)limit : 100; /* the daemon's default */
	q.follow = follow;
	do {
		q.after_id = last;
		if (sl_events_query(cli->client, &q, &ev, &nev) < 0)
			return cli_fail(cli);
		for (i = 0; i < nev; i++)
			if (ev[i].id > last) {
				if (events_match(&f, &ev[i]))
					print_event(&ev[i], cli->json);
				last = ev[i].id;
			}
		sl_events_free(ev, nev);
	} while (follow && nev == (size_t)q.limit);
	while (follow) {
		rc = sl_next_notification(cli->client, -1, &n);
		if (rc == -EINTR)
			continue;
		if (rc < 0)
			return cli_fail(cli);
		if (n.kind == SL_N_EVENT && n.event.id > last) {
			if (events_match(&f, &n.event))
				print_event(&n.event, cli->json);
			last = n.event.id;
		}
		sl_notification_clear(&n);
	}
	return EXIT_OK;
}
