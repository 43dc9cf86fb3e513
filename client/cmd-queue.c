/*
 * stageloadctl commands about the queue's own controls: hold, release,
 * resubmit and update, and the dependencies of submit (--after, --after-any,
 * --hold), whose options are read here. docs/jobs.md, "Dependencies and holds".
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static int cmd_hold(struct cli *, struct cli_args *);
static int cmd_release(struct cli *, struct cli_args *);
static int cmd_resubmit(struct cli *, struct cli_args *);
static int cmd_update(struct cli *, struct cli_args *);

const struct cli_option cli_submit_queue_options[] = {
    {"after", 0, CLI_TEXT, "ID[,ID...]", 0, 0,
     "start after these jobs exited 0; if one\n"
     "fails, is killed or cancelled, this one is cancelled"},
    {"after-any", 0, CLI_TEXT, "ID[,ID...]", 0, 0,
     "start after these jobs ended, however they ended"},
    {"hold", 0, CLI_FLAG, NULL, 0, 0,
     "queue it held: it starts only after 'release ID'"},
    {NULL, 0, 0, NULL, 0, 0, NULL},
};

const struct cli_entry cmd_hold_entry = {
    .name = "hold",
    .summary = "keep queued jobs from starting; they keep their place",
    .operands = "ID...",
    .min_operands = 1,
    .max_operands = -1,
    .exec = cmd_hold,
};

const struct cli_entry cmd_release_entry = {
    .name = "release",
    .summary = "let held jobs start again",
    .operands = "ID...",
    .min_operands = 1,
    .max_operands = -1,
    .exec = cmd_release,
};

const struct cli_entry cmd_resubmit_entry = {
    .name = "resubmit",
    .summary = "queue your job again: same command, directory, environment, "
               "options",
    .operands = "ID",
    .min_operands = 1,
    .max_operands = 1,
    .json = "{\"id\",\"position\",\"queued\"} instead of the id alone",
    .exec = cmd_resubmit,
};

static const struct cli_option update_options[] = {
    {"wait-free", 0, CLI_PCT, "PCT", 0, 0,
     "start only when free memory is >= PCT%"},
    {"swap-budget", 0, CLI_SIZE, "SIZE", 0, 0,
     "kill it when swap grows by more than SIZE (0: none)"},
    {"expect", 0, CLI_SIZE, "SIZE", 0, 0,
     "memory it will use: held back from others until reached"},
    {"priority", 0, CLI_INT, "N", -1000, 1000,
     "-1000..1000, higher runs first (above 0: root\n"
     "and the daemon's admin_group only)"},
    {NULL, 0, 0, NULL, 0, 0, NULL},
};

const struct cli_entry cmd_update_entry = {
    .name = "update",
    .summary = "change a queued job's priority, wait-free, budget or expect",
    .operands = "ID",
    .min_operands = 1,
    .max_operands = 1,
    .options = update_options,
    .exec = cmd_update,
};

int
cli_submit_queue(struct cli *cli, const struct cli_args *a,
                 struct sl_job_spec *spec, int64_t **ids)
{
	const char *after = cli_text(a, "after", NULL);
	const char *any = cli_text(a, "after-any", NULL);
	const char *list = after != NULL ? after : any;
	char *copy, *tok, *save = NULL;
	size_t n = 0, cap = 0;
	int64_t *v = NULL, id;

	*ids = NULL;
	spec->held = cli_has(a, "hold");
	if (after != NULL && any != NULL)
		return cli_usage_error(cli, "--after and --after-any: give one "
		                            "of them");
	if (list == NULL)
		return -1;
	if ((copy = strdup(list)) == NULL) {
		cli_error("out of memory");
		return EXIT_ERR;
	}
	for (tok = strtok_r(copy, ",", &save); tok != NULL;
	     tok = strtok_r(NULL, ",", &save)) {
		if (cli_parse_id(tok, &id) < 0) {
			free(copy);
			free(v);
			return cli_usage_error(
			    cli, "--%s: bad job id '%s'",
			    after != NULL ? "after" : "after-any", tok);
		}
		if (n == cap) {
			int64_t *nv;
			cap = cap ? cap * 2 : 8;
			if ((nv = realloc(v, cap * sizeof *v)) == NULL) {
				free(copy);
				free(v);
				cli_error("out of memory");
				return EXIT_ERR;
			}
			v = nv;
		}
		v[n++] = id;
	}
	free(copy);
	if (n == 0)
		return cli_usage_error(cli, "--%s: no job id",
		                       after != NULL ? "after" : "after-any");
	spec->after = v;
	spec->nafter = n;
	spec->after_any = any != NULL;
	*ids = v;
	return -1;
}

static int
hold_each(struct cli *cli, struct cli_args *args, int held)
{
	struct sl_job j;
	int64_t id;
	int i, rc, status = EXIT_OK;

	for (i = 0; i < args->argc; i++)
		if (cli_parse_id(args->argv[i], &id) < 0)
			return cli_usage_error(cli, "bad job id '%s'",
			                       args->argv[i]);
	if ((rc = cli_connect(cli)) != 0)
		return rc;
	for (i = 0; i < args->argc; i++) {
		cli_parse_id(args->argv[i], &id);
		rc = held ? sl_hold(cli->client, id, &j)
		          : sl_release(cli->client, id, &j);
		if (rc < 0) {
			int code = sl_errcode(cli->client);
			cli_error("job %" PRId64 ": %s", id,
			          sl_errmsg(cli->client));
			status = cli_exit_for_error(code);
			if (sl_error_is_connection(code))
				break;
			continue;
		}
		printf("job %" PRId64 ": %s\n", id, held ? "held" : "released");
		sl_job_clear(&j);
	}
	return status;
}

static int
cmd_hold(struct cli *cli, struct cli_args *args)
{
	return hold_each(cli, args, 1);
}

static int
cmd_release(struct cli *cli, struct cli_args *args)
{
	return hold_each(cli, args, 0);
}

static int
cmd_resubmit(struct cli *cli, struct cli_args *args)
{
	struct sl_submitted sub;
	int64_t id;
	int rc;

	if (cli_parse_id(args->argv[0], &id) < 0)
		return cli_usage_error(cli, "bad job id '%s'", args->argv[0]);
	if ((rc = cli_connect(cli)) != 0)
		return rc;
	if (sl_resubmit(cli->client, id, &sub) < 0)
		return cli_fail(cli);
	if (cli->json)
		printf("{\"id\":%" PRId64 ",\"position\":%d,\"queued\":%d}\n",
		       sub.id, sub.position, sub.queued);
	else
		printf("%" PRId64 "\n", sub.id);
	return EXIT_OK;
}

static int
cmd_update(struct cli *cli, struct cli_args *args)
{
	struct sl_job_update u;
	struct sl_job j;
	int64_t id;
	int rc;

	if (cli_parse_id(args->argv[0], &id) < 0)
		return cli_usage_error(cli, "bad job id '%s'", args->argv[0]);
	memset(&u, 0, sizeof u);
	u.has_priority = cli_has(args, "priority");
	u.priority = (int)cli_number(args, "priority", 0);
	u.has_wait_free = cli_has(args, "wait-free");
	u.wait_free_pct = cli_pct(args, "wait-free", 0);
	u.has_swap_budget = cli_has(args, "swap-budget");
	u.swap_budget_bytes = (uint64_t)cli_number(args, "swap-budget", 0);
	u.has_expect = cli_has(args, "expect");
	u.expect_bytes = (uint64_t)cli_number(args, "expect", 0);
	/* As every command, it says first that no daemon answers. */
	if ((rc = cli_connect(cli)) != 0)
		return rc;
	if (!u.has_priority && !u.has_wait_free && !u.has_swap_budget &&
	    !u.has_expect)
		return cli_usage_error(cli,
		                       "nothing to update: give --priority, "
		                       "--wait-free, --swap-budget or "
		                       "--expect");
	if (sl_update(cli->client, id, &u, &j) < 0)
		return cli_fail(cli);
	printf("job %" PRId64 ": updated; position %d\n", id, j.position);
	sl_job_clear(&j);
	return EXIT_OK;
}
