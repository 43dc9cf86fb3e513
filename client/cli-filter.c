/*
 * The options that pick jobs by user, state and name (--user, --mine,
 * --state, --name), shared by the commands that list jobs, and what they
 * become: a filter for the library or the params the daemon takes.
 */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"

const struct cli_option cli_filter_options[] = {
    {"user", 'u', CLI_TEXT, "NAME", 0, 0, "only the jobs of user NAME"},
    {"mine", 0, CLI_FLAG, NULL, 0, 0, "only your own jobs"},
    {"state", 0, CLI_TEXT, "STATE,...", 0, 0,
     "only jobs in one of these states: queued, admitted,\n"
     "running, exited, killed, failed, cancelled, lost"},
    {"name", 0, CLI_TEXT, "GLOB", 0, 0,
     "only jobs whose name matches GLOB (fnmatch(3):\n"
     "* ? [...]; quote it from the shell)"},
    {NULL, 0, 0, NULL, 0, 0, NULL},
};

/* The same rows but --state (keep their texts alike). */
const struct cli_option cli_filter_options_ended[] = {
    {"user", 'u', CLI_TEXT, "NAME", 0, 0, "only the jobs of user NAME"},
    {"mine", 0, CLI_FLAG, NULL, 0, 0, "only your own jobs"},
    {"name", 0, CLI_TEXT, "GLOB", 0, 0,
     "only jobs whose name matches GLOB (fnmatch(3):\n"
     "* ? [...]; quote it from the shell)"},
    {NULL, 0, 0, NULL, 0, 0, NULL},
};

/* --state, when the command has it. */
static const char *
filter_states(const struct cli_args *args)
{
	return has_option(args, "state") ? cli_text(args, "state", NULL) : NULL;
}

int
cli_filter(struct cli *cli, const struct cli_args *args, sl_filter **out)
{
	const char *user = cli_text(args, "user", NULL);
	const char *states = filter_states(args);
	const char *name = cli_text(args, "name", NULL);
	int mine = cli_has(args, "mine");
	char word[32];
	const char *p, *end;
	size_t len;
	sl_filter *f;

	*out = NULL;
	if (user == NULL && states == NULL && name == NULL && !mine)
		return -1;
	if (user != NULL && mine)
		return cli_usage_error(cli, "--user and --mine: one or the "
		                            "other");
	/* A name nobody has would list nothing, as if that user had no
	 * jobs; digits are a uid. */
	if (user != NULL && getpwnam(user) == NULL &&
	    strspn(user, "0123456789") != strlen(user))
		return cli_usage_error(cli, "--user %s: no such user", user);
	if ((f = sl_filter_new()) == NULL ||
	    (user != NULL && sl_filter_set_user(f, user) != 0) ||
	    (mine && sl_filter_set_mine(f, 1) != 0) ||
	    (name != NULL && sl_filter_set_name(f, name) != 0)) {
		sl_filter_free(f);
		cli_error("out of memory");
		return EXIT_ERR;
	}
	for (p = states; p != NULL; p = end != NULL ? end + 1 : NULL) {
		end = strchr(p, ',');
		len = end != NULL ? (size_t)(end - p) : strlen(p);
		snprintf(word, sizeof word, "%.*s", (int)(len < 31 ? len : 31),
		         p);
		if (len >= sizeof word || sl_filter_add_state(f, word) != 0) {
			sl_filter_free(f);
			return cli_usage_error(
			    cli,
			    "--state: no state '%s' (states: queued, "
			    "admitted, running, exited, killed, failed, "
			    "cancelled, lost)",
			    word);
		}
	}
	*out = f;
	return -1;
}

int
cli_filter_params(const struct cli_args *args, cJSON *params)
{
	const char *user = cli_text(args, "user", NULL);
	const char *states = filter_states(args);
	const char *name = cli_text(args, "name", NULL);
	const char *p, *end;
	cJSON *a;

	if ((user != NULL &&
	     cJSON_AddStringToObject(params, "user", user) == NULL) ||
	    (cli_has(args, "mine") &&
	     cJSON_AddTrueToObject(params, "mine") == NULL) ||
	    (name != NULL &&
	     cJSON_AddStringToObject(params, "name", name) == NULL))
		return -ENOMEM;
	if (states == NULL)
		return 0;
	if ((a = cJSON_AddArrayToObject(params, "state")) == NULL)
		return -ENOMEM;
	for (p = states; p != NULL; p = end != NULL ? end + 1 : NULL) {
		cJSON *s;
		char *w;

		end = strchr(p, ',');
		if ((w = strndup(p, end != NULL ? (size_t)(end - p)
		                                : strlen(p))) == NULL)
			return -ENOMEM;
		s = cJSON_CreateString(w);
		free(w);
		if (s == NULL)
			return -ENOMEM;
		cJSON_AddItemToArray(a, s);
	}
	return 0;
}
