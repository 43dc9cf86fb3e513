/*
 * stageloadctl commands about one detached job: submit, show, cancel and
 * wait (status is cmd-status.c, logs cmd-logs.c, events cmd-events.c;
 * attached jobs, run and guard, cmd-run.c).
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
#include "array-spec.h"
#include "cli.h"
#include "proto.h"
#include "text.h"
#include "units.h"

static int cmd_submit(struct cli *, struct cli_args *);
static int cmd_show(struct cli *, struct cli_args *);
static int cmd_cancel(struct cli *, struct cli_args *);
static int cmd_wait(struct cli *, struct cli_args *);

const struct cli_entry cmd_submit_entry = {
    .name = "submit",
    .summary = "queue a detached job; prints its id",
    .operands = "-- CMD [ARGS...]",
    .min_operands = 1,
    .max_operands = -1,
    .flags = CLI_COMMAND_LINE,
    .options = cli_submit_queue_options,
    .more_options = cli_job_options,
    .json = "{\"id\",\"position\",\"queued\"} instead of the id alone\n"
            "(and \"array_id\" for an array)",
    .exec = cmd_submit,
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

static const struct cli_option cancel_options[] = {
    {"all", 'a', CLI_FLAG, NULL, 0, 0,
     "all your queued and running jobs (root: root's)"},
    {"all-users", 0, CLI_FLAG, NULL, 0, 0, "everyone's jobs (root only)"},
    {NULL, 0, 0, NULL, 0, 0, NULL},
};

const struct cli_entry cmd_cancel_entry = {
    .name = "cancel",
    .summary = "remove queued jobs; terminate running ones",
    .operands = "[ID...]", /* --all or a filter instead */
    .min_operands = 0,
    .max_operands = -1,
    .options = cancel_options,
    .more_options = cli_filter_options,
    .json = "each job's object as cancel left it, one per line; with\n"
            "--all or a filter {\"cancelled\": N, \"ids\": [...]}",
    .exec = cmd_cancel,
};

static const struct cli_option wait_options[] = {
    {"all", 'a', CLI_FLAG, NULL, 0, 0,
     "all your queued and running jobs, as they are now"},
    {"notify", 'n', CLI_FLAG, NULL, 0, 0,
     "post a desktop notification as each job ends\n"
     "(macOS: osascript; Linux: notify-send)"},
    {NULL, 0, 0, NULL, 0, 0, NULL},
};

const struct cli_entry cmd_wait_entry = {
    .name = "wait",
    .summary = "wait for jobs to end; exit with the last failing job's status",
    .operands = "[ID...]", /* or --all */
    .min_operands = 0,
    .max_operands = -1,
    .options = wait_options,
    .json = "the final job objects, one per line",
    .exec = cmd_wait,
};

/* Print a JSON-text result from sl_call() as it came, but terminal-safe
 * (cli_print_json). */
int
cli_raw_call(struct cli *cli, const char *method, const char *params)
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

/* ---- submit ---- */

static int
cmd_submit(struct cli *cli, struct cli_args *args)
{
	sl_job_spec *spec;
	struct sl_submitted sub;
	struct cli_submit_extra x;
	int rc, is_array;

	if ((spec = cli_job_spec(cli, args, CLI_USE_SUBMIT, &rc)) == NULL)
		return rc;
	if ((rc = cli_submit_shell(args, spec, &x)) >= 0) {
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
	is_array = sl_job_spec_get_str(spec, "array") != NULL;
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
	if (cli->json && is_array)
		printf("{\"id\":%" PRId64 ",\"array_id\":%" PRId64
		       ",\"position\":%d,\"queued\":%d%s}\n",
		       sub.id, sub.id, sub.position, sub.queued,
		       sub.groups_capped ? ",\"groups_capped\":true" : "");
	else if (cli->json)
		printf("{\"id\":%" PRId64 ",\"position\":%d,\"queued\":%d%s}\n",
		       sub.id, sub.position, sub.queued,
		       sub.groups_capped ? ",\"groups_capped\":true" : "");
	else if (is_array)
		/* An array: its id (its first element's job id) as A42. */
		printf("A%" PRId64 "\n", sub.id);
	else
		printf("%" PRId64 "\n", sub.id);
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
		cli_print_stages(out, clock_wall_ms(), stdout);
		cli_print_learned(out, stdout);
	}
	sl_free(out);
}

/* The newest output_dropped event of a page (newest first) into *arg: 1
 * (stop) once found. */
static int
dropped_page(const char *items, void *arg)
{
	cJSON **found = arg, *page = cJSON_Parse(items), *e;
	const cJSON *kind;

	if (page == NULL)
		return -ENOMEM;
	cJSON_ArrayForEach(e, page)
	{
		kind = cJSON_GetObjectItemCaseSensitive(e, "kind");
		if (cJSON_IsString(kind) &&
		    strcmp(kind->valuestring, "output_dropped") == 0) {
			*found = cJSON_Duplicate(e, 1);
			break;
		}
	}
	cJSON_Delete(page);
	return *found != NULL;
}

/* A detached job whose log stopped growing (docs/jobs.md): the daemon's
 * newest output_dropped event says from which byte of its output and at
 * which bound. The job's events newest first, page by page (a version 2
 * page may end early), until one is found. */
static void
show_output_dropped(struct cli *cli, int64_t id)
{
	const cJSON *det, *from, *bound;
	cJSON *last = NULL;
	char params[96];

	snprintf(params, sizeof params,
	         "{\"job_id\":%" PRId64 ",\"before_id\":9007199254740992,"
	         "\"limit\":1000}",
	         id);
	if (sl_call_pages(cli->client, "events", params, "events", dropped_page,
	                  &last) < 0 ||
	    last == NULL) {
		cJSON_Delete(last);
		return;
	}
	det = cJSON_GetObjectItemCaseSensitive(last, "detail");
	from = cJSON_GetObjectItemCaseSensitive(det, "from_byte");
	bound = cJSON_GetObjectItemCaseSensitive(det, "bound");
	printf("Output dropped from byte %.0f (%s): the log says how much\n",
	       cJSON_IsNumber(from) ? from->valuedouble : 0.0,
	       cJSON_IsString(bound) &&
	               strcmp(bound->valuestring, "max_log_bytes_per_uid") == 0
	           ? "max_log_bytes_per_uid"
	           : "min_free_disk");
	cJSON_Delete(last);
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
void
cli_watch_queued(struct cli *cli, int64_t id)
{
	struct sl_notification note;
	struct sl_job j;
	struct cli_progress progress;
	char why[512], line[640], last[640] = "", key[64];
	int tty = isatty(STDERR_FILENO), subscribed = 0, of, due;

	memset(&progress, 0, sizeof progress);
	for (;;) {
		struct cli_wait w = {NULL, NAN, 0,    -1, 0,   0,
		                     0,    0,   NULL, 0,  NULL};
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
		/* Not a terminal: a line when the kind of wait or the job
		 * it waits behind changes, else at most one a minute. */
		{
			char *on = sl_job_get_json(&j, "waiting_on");
			cJSON *a = on != NULL ? cJSON_Parse(on) : NULL;
			const cJSON *fid = cJSON_GetObjectItemCaseSensitive(
			    cJSON_GetArrayItem(a, 0), "id");
			snprintf(key, sizeof key, "%s %lld", j.waiting_for,
			         cJSON_IsNumber(fid)
			             ? (long long)fid->valuedouble
			             : 0LL);
			cJSON_Delete(a);
			free(on);
		}
		due = strcmp(line, last) != 0 &&
		      (tty ||
		       cli_progress_due(&progress, key, line, clock_wall_ms()));
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

static int show_one(struct cli *cli, int64_t id, int env);

static int
cmd_show(struct cli *cli, struct cli_args *args)
{
	int64_t id, *ids;
	int env = cli_has(args, "env"), rc, n, k;

	if (cli_parse_id(args->argv[0], &id) < 0) {
		/* A42 or A42_3: resolved by the daemon; an array shows each
		 * element in turn. */
		if ((rc = cli_job_refs(cli, 1, args->argv, &ids, &n)) >= 0)
			return rc;
		if (cli->json) {
			char params[96];
			free(ids);
			snprintf(params, sizeof params, "{\"id\":\"%.40s\"%s}",
			         args->argv[0], env ? ",\"env\":true" : "");
			return cli_raw_call(cli, "show", params);
		}
		for (k = 0, rc = EXIT_OK; k < n && rc == EXIT_OK; k++) {
			if (k > 0)
				printf("\n");
			rc = show_one(cli, ids[k], env);
		}
		free(ids);
		return rc;
	}
	if ((rc = cli_connect(cli)) != 0)
		return rc;
	if (cli->json) {
		char params[96];
		snprintf(params, sizeof params, "{\"id\":%" PRId64 "%s}", id,
		         env ? ",\"env\":true" : "");
		return cli_raw_call(cli, "show", params);
	}
	return show_one(cli, id, env);
}

static int
show_one(struct cli *cli, int64_t id, int env)
{
	struct cli_wait w = {NULL, NAN, 0, -1, 0, 0, 0, 0, NULL, 0, NULL};
	struct sl_job j;
	char *text;
	size_t i;

	if (sl_show(cli->client, id, env, &j) < 0)
		return cli_fail(cli);
	if (strcmp(j.state, "queued") == 0)
		wait_numbers(cli, &w);
	text = cli_job_paragraph(&j, clock_wall_ms(), &w);
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
	return cli_job_refs(cli, args->argc, args->argv, ids, n);
}

/* One job's cancel and its line; the exit status, or -1 when fine. */
static int
cancel_one(struct cli *cli, int64_t id)
{
	struct sl_job j;

	if (sl_cancel(cli->client, id, &j) < 0)
		return cli_fail_job(cli, id);
	if (strcmp(j.state, "cancelled") == 0)
		printf("job %" PRId64 ": cancelled\n", id);
	else if (sl_job_ended(&j))
		printf("job %" PRId64 ": %s\n", id, j.state);
	else
		printf("job %" PRId64 ": terminating (SIGTERM, then "
		       "SIGKILL after the grace period)\n",
		       id);
	sl_job_clear(&j);
	return -1;
}

/* A whole array, A42, in one call: the daemon cancels each element that
 * has not ended at once, so none starts meanwhile (as one call per
 * element would let the next start when a slot of its %N frees). */
static int
cancel_array(struct cli *cli, const char *ref)
{
	const cJSON *jobs, *it, *state, *ended;
	struct cli_tally t = {{NULL}, {0}, 0};
	char params[96], *out = NULL;
	cJSON *r;

	snprintf(params, sizeof params, "{\"id\":\"%.40s\"}", ref);
	if (sl_call(cli->client, "cancel", params, &out) < 0)
		return cli_fail(cli);
	r = cJSON_Parse(out);
	sl_free(out);
	jobs = cJSON_GetObjectItemCaseSensitive(r, "jobs");
	cJSON_ArrayForEach(it, jobs)
	{
		state = cJSON_GetObjectItemCaseSensitive(it, "state");
		ended = cJSON_GetObjectItemCaseSensitive(it, "ended_at_ms");
		if (!cJSON_IsString(state))
			continue;
		cli_tally_add(&t,
		              strcmp(state->valuestring, "cancelled") == 0 ||
		                      cJSON_IsNumber(ended)
		                  ? state->valuestring
		                  : "terminating (SIGTERM, then SIGKILL "
		                    "after the grace period)");
	}
	cli_tally_print(&t, ref);
	cJSON_Delete(r);
	return -1;
}

/*
 * cancel --all, --all-users or a filter: one cancel_matching call, which
 * ends them all and says how many (PROTOCOL.md); nothing is asked first,
 * as with scancel -u.
 */
static int
cancel_matching(struct cli *cli, struct cli_args *args)
{
	int all_users = cli_has(args, "all-users");
	sl_filter *f = NULL;
	int64_t n = 0;
	cJSON *p;
	char *params;
	int rc;

	if (all_users && (cli_has(args, "user") || cli_has(args, "mine")))
		return cli_usage_error(cli, "--all-users is everyone's: not "
		                            "with --user or --mine");
	if ((rc = cli_filter(cli, args, &f)) >= 0)
		return rc;
	if ((rc = cli_connect(cli)) != 0) {
		sl_filter_free(f);
		return rc;
	}
	if (cli->json) {
		sl_filter_free(f);
		p = cJSON_CreateObject();
		params = NULL;
		if (p != NULL && cli_filter_params(args, p) == 0 &&
		    (!all_users || cJSON_AddTrueToObject(p, "all_users")))
			params = cJSON_PrintUnformatted(p);
		cJSON_Delete(p);
		if (params == NULL) {
			cli_error("out of memory");
			return EXIT_ERR;
		}
		sl_set_timeout(cli->client, -1);
		rc = cli_raw_call(cli, "cancel_matching", params);
		free(params);
		return rc;
	}
	rc = sl_cancel_matching(cli->client, f, all_users, &n);
	sl_filter_free(f);
	if (rc < 0)
		return cli_fail(cli);
	printf("cancelled %" PRId64 " job%s\n", n, n == 1 ? "" : "s");
	return EXIT_OK;
}

static int
cmd_cancel(struct cli *cli, struct cli_args *args)
{
	int64_t id, index, *ids;
	int n, i, k, rc, is_array, status = EXIT_OK;
	int bulk = cli_has(args, "all") || cli_has(args, "all-users") ||
	           cli_has(args, "user") || cli_has(args, "mine") ||
	           cli_has(args, "state") || cli_has(args, "name");

	if (bulk && args->argc > 0)
		return cli_usage_error(cli, "job ids, or --all, --all-users "
		                            "and the filters: not both");
	if (bulk)
		return cancel_matching(cli, args);
	if (args->argc == 0)
		return cli_usage_error(cli,
		                       "which jobs? job ids, --all (yours) "
		                       "or a filter (--name, --state)");
	if (cli->json) {
		/* Each job's answer, an array's elements each. */
		if ((rc = job_ids(cli, args, &ids, &n)) >= 0)
			return rc;
		for (i = 0; i < n; i++) {
			char params[64], *out = NULL;

			snprintf(params, sizeof params, "{\"id\":%" PRId64 "}",
			         ids[i]);
			if (sl_call(cli->client, "cancel", params, &out) < 0) {
				int code = sl_errcode(cli->client);
				status = cli_fail_job(cli, ids[i]);
				if (sl_error_is_connection(code))
					break;
				continue;
			}
			cli_print_json(stdout, out);
			sl_free(out);
		}
		free(ids);
		return status;
	}
	if ((rc = cli_check_job_refs(cli, args->argc, args->argv)) != 0 ||
	    (rc = cli_connect(cli)) != 0)
		return rc;
	for (i = 0; i < args->argc; i++) {
		rc = -1;
		if (cli_parse_id(args->argv[i], &id) == 0)
			rc = cancel_one(cli, id);
		else if (array_id_parse(args->argv[i], &id, &is_array,
		                        &index) == 0 &&
		         index < 0)
			rc = cancel_array(cli, args->argv[i]);
		else if ((rc = cli_job_refs(cli, 1, &args->argv[i], &ids, &n)) <
		         0) {
			for (k = 0; k < n && rc < 0; k++)
				rc = cancel_one(cli, ids[k]);
			free(ids);
		}
		if (rc >= 0) {
			status = rc;
			if (sl_error_is_connection(sl_errcode(cli->client)))
				break;
		}
	}
	return status;
}

/* wait --all: the caller's live jobs now, as ids. -1 to go on, else
 * the exit code. */
static int
wait_all_ids(struct cli *cli, int64_t **ids, int *n)
{
	struct sl_job *jobs;
	sl_filter *f;
	size_t nj, i;
	int rc;

	*ids = NULL;
	*n = 0;
	if ((f = sl_filter_new()) == NULL || sl_filter_set_mine(f, 1) != 0) {
		sl_filter_free(f);
		cli_error("out of memory");
		return EXIT_ERR;
	}
	rc = sl_status_filtered(cli->client, 0, 0, f, &jobs, &nj);
	sl_filter_free(f);
	if (rc < 0)
		return cli_fail(cli);
	if (nj > 0 && (*ids = calloc(nj, sizeof **ids)) == NULL) {
		sl_jobs_free(jobs, nj);
		cli_error("out of memory");
		return EXIT_ERR;
	}
	for (i = 0; i < nj; i++)
		if (!sl_job_ended(sl_job_at(jobs, i)))
			(*ids)[(*n)++] = jobs[i].id;
	sl_jobs_free(jobs, nj);
	return -1;
}

static int
cmd_wait(struct cli *cli, struct cli_args *args)
{
	struct sl_job j;
	char state[64], params[64], *out;
	int64_t *ids;
	int n, i, rc, s, status = EXIT_OK, all = cli_has(args, "all");

	if (all && args->argc > 0)
		return cli_usage_error(cli, "job ids or --all: not both");
	if (!all && args->argc == 0)
		return cli_usage_error(cli, "which jobs? job ids, or --all "
		                            "(all yours)");
	if (!all && (rc = job_ids(cli, args, &ids, &n)) >= 0)
		return rc;
	if ((rc = cli_connect(cli)) != 0) {
		if (!all)
			free(ids);
		return rc;
	}
	if (all && (rc = wait_all_ids(cli, &ids, &n)) >= 0)
		return rc;
	if (all && n == 0 && !cli->json)
		printf("no jobs of yours queued or running\n");
	for (i = 0; i < n; i++) {
		cli_watch_queued(cli, ids[i]);
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
