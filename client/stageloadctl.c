/*
 * stageloadctl: the command-line client of stageloadd. main() reads the
 * options before the command, finds the command's entry (cmd-list.h),
 * checks its arguments against it (cli-cmd.c) and runs it; each command
 * is in cmd-*.c and talks to the daemon only through libstageload.
 * docs/cli.md is the manual.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "version.h"

static const struct cli_option main_options[] = {
    {"version", 0, CLI_FLAG, NULL, 0, 0, "print the version"},
    {"generate", 0, CLI_CHOICE, "man|complete-bash|complete-zsh|complete-fish",
     0, 0, "print the man page or a shell's completions"},
    {NULL, 0, 0, NULL, 0, 0, NULL},
};

/* What comes before the command: the global options and these. */
static const struct cli_entry main_entry = {
    .name = "stageloadctl",
    .summary = "talk to stageloadd",
    .operands = "COMMAND [ARGS...]",
    .max_operands = -1,
    .flags = CLI_COMMAND_LINE,
    .options = main_options,
    .json = "machine-readable output",
};

/* "unknown command 'stauts' (did you mean status?)" */
static int
unknown_command(struct cli *cli, const char *typed)
{
	const char *near = cli_suggest_command(typed);

	if (near != NULL)
		return cli_usage_error(cli,
		                       "unknown command '%s' (did you mean "
		                       "%s?)",
		                       typed, near);
	return cli_usage_error(cli,
	                       "unknown command '%s' (%s --help lists "
	                       "them)",
	                       typed, cli->prog);
}

static void
completions_help(FILE *f, const char *prog)
{
	fprintf(f,
	        "usage: %s completions bash|zsh|fish\n"
	        "\n"
	        "print the shell's completions of %s's commands, options "
	        "and job ids\n"
	        "(the same as %s --generate complete-SHELL).\n"
	        "\n"
	        "Examples:\n"
	        "  source <(%s completions bash)      # in ~/.bashrc\n"
	        "  %s completions zsh > \"${fpath[1]}/_%s\"\n"
	        "  %s completions fish > "
	        "~/.config/fish/completions/%s.fish\n",
	        prog, prog, prog, prog, prog, prog, prog, prog);
}

static int
help(struct cli *cli, const struct cli_args *top)
{
	const struct cli_entry *e = NULL;

	cli->name = "help";
	if (top->argc > 2)
		return cli_usage_error(cli, "unexpected argument '%s'",
		                       top->argv[2]);
	if (top->argc == 2 && strcmp(top->argv[1], "completions") == 0) {
		completions_help(stdout, cli->prog);
		return EXIT_OK;
	}
	if (top->argc == 2 && strcmp(top->argv[1], "help") == 0)
		top = NULL; /* the overview says how help works */
	else if (top->argc == 2 && (e = cli_find_entry(top->argv[1])) == NULL)
		return unknown_command(cli, top->argv[1]);
	cli_print_help(stdout, e);
	return EXIT_OK;
}

/* completions SHELL: as --generate complete-SHELL, by the name people
 * look for ("source <(stageloadctl completions bash)"). */
static int
completions(struct cli *cli, const struct cli_args *top)
{
	char kind[32];

	cli->name = "completions";
	if (top->argc == 2 && (strcmp(top->argv[1], "--help") == 0 ||
	                       strcmp(top->argv[1], "-h") == 0)) {
		completions_help(stdout, cli->prog);
		return EXIT_OK;
	}
	if (top->argc != 2)
		return cli_usage_error(cli, "which shell: bash, zsh or fish");
	if (strcmp(top->argv[1], "bash") != 0 &&
	    strcmp(top->argv[1], "zsh") != 0 &&
	    strcmp(top->argv[1], "fish") != 0)
		return cli_usage_error(cli, "takes bash, zsh or fish, not '%s'",
		                       top->argv[1]);
	snprintf(kind, sizeof kind, "complete-%s", top->argv[1]);
	return cli_generate(stdout, kind) < 0 ? EXIT_ERR : EXIT_OK;
}

static int
dispatch(struct cli *cli, int argc, char **argv)
{
	const struct cli_entry *e;
	struct cli_args top, args;
	char cause[512];
	int rc;

	rc = cli_parse(&main_entry, argc, argv, cli, &top, cause, sizeof cause);
	if (rc == CLI_ARGS_HELP) {
		cli_print_help(stdout, NULL);
		return EXIT_OK;
	}
	if (rc < 0)
		return cli_usage_error(cli, "%s", cause);
	if (cli_has(&top, "version")) {
		printf("stageloadctl %s (protocol %d)\n", STAGELOAD_VERSION,
		       SL_PROTOCOL_VERSION);
		return EXIT_OK;
	}
	if (cli_has(&top, "generate"))
		return cli_generate(stdout, cli_text(&top, "generate", "")) < 0
		           ? EXIT_ERR
		           : EXIT_OK;
	if (top.argc == 0)
		return cli_usage_error(cli,
		                       "no command given (%s --help "
		                       "lists them)",
		                       cli->prog);
	if (strcmp(top.argv[0], "help") == 0)
		return help(cli, &top);
	if (strcmp(top.argv[0], "completions") == 0)
		return completions(cli, &top);
	e = cli_find_entry(top.argv[0]);
	if (e == NULL)
		return unknown_command(cli, top.argv[0]);
	/* Errors name the command as it was typed (guard, ps). */
	cli->name = top.argv[0];
	rc = cli_parse(e, top.argc, top.argv, cli, &args, cause, sizeof cause);
	if (rc == CLI_ARGS_HELP) {
		cli_print_help(stdout, e);
		return EXIT_OK;
	}
	if (rc < 0)
		return cli_usage_error(cli, "%s", cause);
	return e->exec(cli, &args);
}

int
main(int argc, char **argv)
{
	struct cli cli;
	int rc;

	memset(&cli, 0, sizeof cli);
	cli.prog = "stageloadctl";
	/* A reader that went away (| head) ends us quietly. */
	signal(SIGPIPE, SIG_DFL);

	rc = dispatch(&cli, argc, argv);
	sl_client_free(cli.client);
	/* ferror too: commands that flush as they go (events, wait, logs)
	 * leave nothing for this flush to fail on. */
	if ((fflush(stdout) != 0 || ferror(stdout)) && rc == EXIT_OK) {
		cli_error("cannot write output");
		rc = EXIT_ERR;
	}
	return rc;
}
