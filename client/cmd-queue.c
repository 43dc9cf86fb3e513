/*
 * stageloadctl commands about the queue's own controls: hold and release,
 * and the dependencies of submit (--after, --after-any, --hold), whose
 * options are read here. docs/jobs.md, "Dependencies and holds".
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static int cmd_hold(struct cli *, struct cli_args *);
static int cmd_release(struct cli *, struct cli_args *);

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
