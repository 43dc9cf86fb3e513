/*
 * stageloadctl commands about the queue's own controls: hold, release,
 * resubmit and update, and the dependencies of submit (--after, --after-any,
 * --hold), whose options are read here. docs/jobs.md, "Dependencies and holds".
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "desktop.h"

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
    {"group", 0, CLI_TEXT, "NAME", 0, 0,
     "its group: the daemon may limit how many of a\n"
     "group's jobs run at once (group.NAME.max_running)"},
    {"on-end", 0, CLI_TEXT, "CMD", 0, 0,
     "when the job ends, the daemon runs CMD (/bin/sh -c)\n"
     "as you, its output appended to the job's log"},
    {"shell", 0, CLI_FLAG, NULL, 0, 0,
     "run the words of CMD as one /bin/sh -c script,\n"
     "pipes and redirections too ('a | b')"},
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
    {"wait-free", 0, CLI_FREE, "PCT|SIZE", 0, 0,
     "start only when free memory is >= PCT%, or\n"
     "(a size, 30G) when that much is available"},
    {"swap-budget", 0, CLI_SIZE, "SIZE", 0, 0,
     "kill it when swap grows by more than SIZE (0: none)"},
    {"expect", 0, CLI_SIZE, "SIZE", 0, 0,
     "memory it will use: held back from others until reached"},
    {"priority", 0, CLI_INT, "N", -1000, 1000,
     "-1000..1000, higher runs first (above 0: root\n"
     "and the daemon's admin_group only)"},
    {"time", 0, CLI_LIMIT, "DUR", 0, 0,
     "kill it once it has run that long (90m, 2h, 1d;\n"
     "0: none), summed over its attempts"},
    {"time-per-attempt", 0, CLI_LIMIT, "DUR", 0, 0,
     "kill an attempt once it has run that long"},
    {"begin", 0, CLI_BEGIN, "TIME", 0, 0,
     "start no earlier than TIME (+30m, 23:10,\n"
     "2026-12-24T08:00)"},
    {NULL, 0, 0, NULL, 0, 0, NULL},
};

const struct cli_entry cmd_update_entry = {
    .name = "update",
    .summary = "change a queued job's priority, wait-free, budget, expect, "
               "time limits or begin",
    .operands = "ID",
    .min_operands = 1,
    .max_operands = 1,
    .options = update_options,
    .exec = cmd_update,
};

void
cli_submit_extra_free(struct cli_submit_extra *x)
{
	free(x->after);
	free(x->script);
	memset(x, 0, sizeof *x);
}

/* Is path a file this process may execute? 0, -ENOENT (none there, or
 * not a regular file) or -EACCES. */
static int
exec_check(const char *path)
{
	struct stat st;

	if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
		return -ENOENT;
	return access(path, X_OK) == 0 ? 0 : -EACCES;
}

/*
 * Find cmd as execvp would in the job: a name with a slash as it is
 * (relative to the current directory, which is the job's), else along
 * PATH (an empty or relative element relative to that directory; unset:
 * the system's default path). 0 when found; -ENOENT, or -EACCES when only
 * files that may not be executed were found.
 */
int
cli_submit_which(const char *cmd, const char *path_env)
{
	char def[256], *copy, *dir, *save = NULL, *full;
	size_t n;
	int rc, best = -ENOENT;

	if (cmd[0] == '\0')
		return -ENOENT;
	if (strchr(cmd, '/') != NULL)
		return exec_check(cmd);
	if (path_env == NULL) {
		n = confstr(_CS_PATH, def, sizeof def);
		path_env = n > 0 && n <= sizeof def ? def : "/bin:/usr/bin";
	}
	/* strtok would skip empty elements, which mean the directory. */
	if ((copy = strdup(path_env)) == NULL)
		return -ENOMEM;
	for (dir = copy; dir != NULL; dir = save) {
		if ((save = strchr(dir, ':')) != NULL)
			*save++ = '\0';
		n = strlen(dir) + strlen(cmd) + 3;
		if ((full = malloc(n)) == NULL) {
			free(copy);
			return -ENOMEM;
		}
		snprintf(full, n, "%s%s%s", dir[0] != '\0' ? dir : ".", "/",
		         cmd);
		rc = exec_check(full);
		free(full);
		if (rc == 0) {
			free(copy);
			return 0;
		}
		if (rc == -EACCES)
			best = rc;
	}
	free(copy);
	return best;
}

void
cli_wait_notify(const struct sl_job *j)
{
	char state[64], body[400], cause[256], *name;

	cli_job_state(j, state, sizeof state);
	/* The name is the user's own text: escaped like everywhere. */
	name = cli_safe_dup(j->name);
	snprintf(body, sizeof body, "job %" PRId64 " (%s): %s", j->id,
	         name != NULL ? name : "", state);
	free(name);
	if (desktop_notify("stageload", body, cause, sizeof cause) < 0)
		cli_error("no desktop notification for job %" PRId64 ": %s",
		          j->id, cause);
}

int
cli_json_in_group(const cJSON *job, const char *group)
{
	const cJSON *g = cJSON_GetObjectItemCaseSensitive(job, "group");

	return cJSON_IsString(g) && strcmp(g->valuestring, group) == 0;
}

int
cli_submit_command(const sl_job_spec *spec)
{
	const char *cmd = sl_job_spec_get_strv(spec, "argv", 0);
	char *safe;
	int rc;

	if (cmd == NULL)
		return -1;
	rc = cli_submit_which(cmd, getenv("PATH"));
	if (rc != -ENOENT && rc != -EACCES)
		return -1;
	if ((safe = cli_safe_dup(cmd)) == NULL) {
		cli_error("out of memory");
		return EXIT_ERR;
	}
	cli_error("cannot run %s: %s (no job was queued)", safe,
	          rc == -ENOENT ? "command not found" : "permission denied");
	free(safe);
	return rc == -ENOENT ? EXIT_JOB_NOTFOUND : EXIT_JOB_CANNOTRUN;
}

/* --shell: the words joined by spaces, as pueue and nq take them, run by
 * /bin/sh -c. -1, or EXIT_ERR. */
static int
submit_shell(const struct cli_args *a, sl_job_spec *spec,
             struct cli_submit_extra *x)
{
	size_t len = 0, i;

	if (!cli_has(a, "shell"))
		return -1;
	for (i = 0; a->argv[i] != NULL; i++)
		len += strlen(a->argv[i]) + 1;
	if ((x->script = malloc(len + 1)) == NULL) {
		cli_error("out of memory");
		return EXIT_ERR;
	}
	x->script[0] = '\0';
	for (i = 0; a->argv[i] != NULL; i++) {
		if (i > 0)
			strcat(x->script, " ");
		strcat(x->script, a->argv[i]);
	}
	x->shargv[0] = "/bin/sh";
	x->shargv[1] = "-c";
	x->shargv[2] = x->script;
	x->shargv[3] = NULL;
	if (sl_job_spec_set_strv(spec, "argv",
	                         (const char *const *)x->shargv) != 0) {
		cli_error("out of memory");
		return EXIT_ERR;
	}
	return -1;
}

/* The spec takes a copy of each; EXIT_ERR when it could not. */
static int
submit_set(int rc, const char *option)
{
	if (rc == 0)
		return -1;
	cli_error("--%s: %s", option,
	          rc == -ENOMEM ? "out of memory" : "not a value submit takes");
	return EXIT_ERR;
}

int
cli_submit_queue(struct cli *cli, const struct cli_args *a, sl_job_spec *spec,
                 struct cli_submit_extra *x)
{
	const char *after = cli_text(a, "after", NULL);
	const char *any = cli_text(a, "after-any", NULL);
	const char *list = after != NULL ? after : any;
	char *copy, *tok, *save = NULL;
	size_t n = 0, cap = 0;
	int64_t *v = NULL, id;
	int rc;

	memset(x, 0, sizeof *x);
	if ((cli_has(a, "hold") &&
	     (rc = submit_set(sl_job_spec_set_bool(spec, "held", 1), "hold")) >=
	         0) ||
	    (rc = submit_set(
	         sl_job_spec_set_str(spec, "group", cli_text(a, "group", NULL)),
	         "group")) >= 0 ||
	    (rc = submit_set(sl_job_spec_set_str(spec, "on_end",
	                                         cli_text(a, "on-end", NULL)),
	                     "on-end")) >= 0)
		return rc;
	if (after != NULL && any != NULL)
		return cli_usage_error(cli, "--after and --after-any: give one "
		                            "of them");
	if (list == NULL)
		return submit_shell(a, spec, x);
	if ((copy = strdup(list)) == NULL) {
		cli_error("out of memory");
		return EXIT_ERR;
	}
	for (tok = strtok_r(copy, ",", &save); tok != NULL;
	     tok = strtok_r(NULL, ",", &save)) {
		if (cli_parse_id(tok, &id) < 0) {
			/* tok is in copy: the error first, then the frees. */
			rc = cli_usage_error(
			    cli, "--%s: bad job id '%s'",
			    after != NULL ? "after" : "after-any", tok);

			free(copy);
			free(v);
			return rc;
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
	x->after = v;
	if ((rc = submit_set(sl_job_spec_set_ids(spec, "after", v, n),
	                     after != NULL ? "after" : "after-any")) >= 0 ||
	    (any != NULL &&
	     (rc = submit_set(sl_job_spec_set_bool(spec, "after_any", 1),
	                      "after-any")) >= 0))
		return rc;
	return submit_shell(a, spec, x);
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
			status = cli_fail_job(cli, id);
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
	sl_job_spec *u;
	struct sl_job j;
	double pct = cli_pct(args, "wait-free", -1);
	int64_t id;
	int rc = 0;

	if (cli_parse_id(args->argv[0], &id) < 0)
		return cli_usage_error(cli, "bad job id '%s'", args->argv[0]);
	if ((u = sl_job_spec_new()) == NULL) {
		cli_error("out of memory");
		return EXIT_ERR;
	}
	/* Only what is given; a --wait-free size replaces a percentage
	 * (the daemon sets the other to 0). */
	if (cli_has(args, "priority"))
		rc = sl_job_spec_set_int(u, "priority",
		                         cli_number(args, "priority", 0));
	if (rc == 0 && cli_has(args, "wait-free"))
		rc =
		    pct >= 0
		        ? sl_job_spec_set_num(u, "wait_free_pct", pct)
		        : sl_job_spec_set_int(u, "wait_free_bytes",
		                              cli_number(args, "wait-free", 0));
	if (rc == 0 && cli_has(args, "swap-budget"))
		rc = sl_job_spec_set_int(u, "swap_budget_bytes",
		                         cli_number(args, "swap-budget", 0));
	if (rc == 0 && cli_has(args, "expect"))
		rc = sl_job_spec_set_int(u, "expect_bytes",
		                         cli_number(args, "expect", 0));
	if (rc == 0)
		rc = cli_spec_times(args, u);
	if (rc != 0) {
		sl_job_spec_free(u);
		cli_error("%s", rc == -ENOMEM ? "out of memory"
		                              : "an option is out of range");
		return EXIT_ERR;
	}
	/* As every command, it says first that no daemon answers. */
	if ((rc = cli_connect(cli)) != 0) {
		sl_job_spec_free(u);
		return rc;
	}
	if (!cli_has(args, "priority") && !cli_has(args, "wait-free") &&
	    !cli_has(args, "swap-budget") && !cli_has(args, "expect") &&
	    !cli_has(args, "time") && !cli_has(args, "time-per-attempt") &&
	    !cli_has(args, "begin")) {
		sl_job_spec_free(u);
		return cli_usage_error(cli,
		                       "nothing to update: give --priority, "
		                       "--wait-free, --swap-budget, --expect, "
		                       "--time, --time-per-attempt or --begin");
	}
	if ((rc = cli_check_wait_free(cli, cli_spec_wait_free_bytes(u))) >= 0) {
		sl_job_spec_free(u);
		return rc;
	}
	rc = sl_update(cli->client, id, u, &j);
	sl_job_spec_free(u);
	if (rc < 0)
		return cli_fail_job(cli, id);
	printf("job %" PRId64 ": updated; position %d\n", id, j.position);
	sl_job_clear(&j);
	return EXIT_OK;
}
