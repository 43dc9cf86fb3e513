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

#include "array-spec.h"
#include "cli.h"
#include "desktop.h"

static int cmd_hold(struct cli *, struct cli_args *);
static int cmd_release(struct cli *, struct cli_args *);
static int cmd_resubmit(struct cli *, struct cli_args *);
static int cmd_update(struct cli *, struct cli_args *);

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

const struct cli_entry cmd_update_entry = {
    .name = "update",
    .summary = "change a queued job's priority, wait-free, budget, expect, "
               "time limits or begin",
    .operands = "ID",
    .min_operands = 1,
    .max_operands = 1,
    .options = cli_update_options,
    .exec = cmd_update,
};

void
cli_submit_extra_free(struct cli_submit_extra *x)
{
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
 * /bin/sh -c. */
int
cli_submit_shell(const struct cli_args *a, sl_job_spec *spec,
                 struct cli_submit_extra *x)
{
	size_t len = 0, i;

	memset(x, 0, sizeof *x);
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

/* A whole array, A42, in one call: the daemon holds (or releases) each
 * of its queued elements at once, so none starts meanwhile. */
static int
hold_array(struct cli *cli, const char *ref, int held)
{
	const cJSON *jobs, *it, *state;
	struct cli_tally t = {{NULL}, {0}, 0};
	char params[96], *out = NULL;
	cJSON *r;

	snprintf(params, sizeof params, "{\"id\":\"%.40s\"}", ref);
	if (sl_call(cli->client, held ? "hold" : "release", params, &out) < 0)
		return cli_fail(cli);
	r = cJSON_Parse(out);
	sl_free(out);
	jobs = cJSON_GetObjectItemCaseSensitive(r, "jobs");
	cJSON_ArrayForEach(it, jobs)
	{
		state = cJSON_GetObjectItemCaseSensitive(it, "state");
		if (!cJSON_IsString(state))
			continue;
		/* a queued element was held or released; the rest are as
		 * their state says */
		cli_tally_add(&t, strcmp(state->valuestring, "queued") != 0
		                      ? state->valuestring
		                  : held ? "held"
		                         : "released");
	}
	cli_tally_print(&t, ref);
	cJSON_Delete(r);
	return -1;
}

static int
hold_each(struct cli *cli, struct cli_args *args, int held)
{
	struct sl_job j;
	int64_t id, index, *ids;
	int i, k, n, rc, is_array, status = EXIT_OK;

	if ((rc = cli_check_job_refs(cli, args->argc, args->argv)) != 0 ||
	    (rc = cli_connect(cli)) != 0)
		return rc;
	for (i = 0; i < args->argc; i++) {
		if (cli_parse_id(args->argv[i], &id) < 0 &&
		    array_id_parse(args->argv[i], &id, &is_array, &index) ==
		        0 &&
		    index < 0) {
			if ((rc = hold_array(cli, args->argv[i], held)) >= 0) {
				status = rc;
				if (sl_error_is_connection(
				        sl_errcode(cli->client)))
					break;
			}
			continue;
		}
		if ((rc = cli_job_refs(cli, 1, &args->argv[i], &ids, &n)) >=
		    0) {
			status = rc;
			continue;
		}
		for (k = 0; k < n; k++) {
			id = ids[k];
			rc = held ? sl_hold(cli->client, id, &j)
			          : sl_release(cli->client, id, &j);
			if (rc < 0) {
				status = cli_fail_job(cli, id);
				continue;
			}
			printf("job %" PRId64 ": %s\n", id,
			       held ? "held" : "released");
			sl_job_clear(&j);
		}
		free(ids);
		if (sl_error_is_connection(sl_errcode(cli->client)))
			break;
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
	char list[256];
	int64_t id;
	int rc, given;

	if (cli_parse_id(args->argv[0], &id) < 0)
		return cli_usage_error(cli, "bad job id '%s'", args->argv[0]);
	if ((u = sl_job_spec_new()) == NULL) {
		cli_error("out of memory");
		return EXIT_ERR;
	}
	/* Only what is given; a --wait-free of either kind replaces the
	 * job's condition. */
	if ((rc = cli_job_options_set(cli, args, CLI_USE_UPDATE, u, &given)) >=
	    0) {
		sl_job_spec_free(u);
		return rc;
	}
	/* As every command, it says first that no daemon answers. */
	if ((rc = cli_connect(cli)) != 0) {
		sl_job_spec_free(u);
		return rc;
	}
	if (given == 0) {
		sl_job_spec_free(u);
		return cli_usage_error(
		    cli, "nothing to update: give %s",
		    cli_job_options_list(CLI_USE_UPDATE, list, sizeof list));
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
