/*
 * stageloadctl: the command-line client of stageloadd. Global options,
 * the command table and usage live here; each command is in cmd-*.c and
 * talks to the daemon only through libstageload. docs/cli.md is the
 * manual.
 */
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "text.h"
#include "version.h"

#define JOB_OPTIONS                                                            \
	"  --wait-free PCT        start only when free memory is >= PCT%\n"    \
	"  --swap-budget SIZE     kill it when swap grows by more than SIZE "  \
	"(0: none)\n"                                                          \
	"  --expect SIZE          memory it will use: held back from others "  \
	"until reached\n"                                                      \
	"  --priority N           -1000..1000, higher runs first (default "    \
	"0;\n"                                                                 \
	"                         above 0: root and the daemon's "             \
	"admin_group only)\n"                                                  \
	"  --name NAME            a label (default: the command's name)\n"     \
	"  --exclusive            run only when no other job runs\n"           \
	"  --retry-on-breach N    requeue up to N times after a breach\n"

static const struct cli_command commands[] = {
    {"info", NULL, cmd_info, "[--json]",
     "daemon version, sample interval and the latest memory sample", NULL},
    {"history", NULL, cmd_history,
     "[--since T] [--until T] [--step D] [--format table|json|csv] "
     "[--job ID]",
     "memory over time, bucketed min/avg/max",
     "  --since T      start: a duration back from now (1h), an epoch or\n"
     "                 \"2026-11-30 05:00\" (default 1h)\n"
     "  --until T      end (default now)\n"
     "  --step D       bucket size, e.g. 10s, 1m (default: span / 60)\n"
     "  --format F     table, json or csv (--json is --format json)\n"
     "  --job ID       a job's footprint and swap instead of the system's\n"},
    {"meter", NULL, cmd_meter,
     "[--interval S] [--count N] [--pid PID] [--out FILE]",
     "a JSONL trace of memory, one line per sample",
     "  --interval S   seconds between lines (default: the daemon's "
     "interval);\n"
     "                 coarser than the daemon's keeps every Nth sample\n"
     "  --count N      stop after N lines\n"
     "  --pid PID      add that process tree's footprint_bytes and "
     "swap_bytes\n"
     "  --out FILE     write to FILE instead of stdout\n"},
    {"plot", NULL, cmd_plot,
     "[--since T] [--until T] [--job ID] [--trace FILE] -o FILE.svg",
     "an SVG plot of memory and swap with job lanes, a job, or a trace",
     "  --since T      start (default 8h: 8 hours ago; forms as history)\n"
     "  --until T      end (default now)\n"
     "  --job ID       one job's footprint and swap over its life\n"
     "  --trace FILE   a JSONL trace (meter, the Python MemoryMeter)\n"
     "  -o FILE        the SVG file to write (- for stdout)\n"
     "  --width PX     width in pixels (default 960)\n"
     "  --utc          clock times in UTC\n"},
    {"top", NULL, cmd_top, "[--minutes N]",
     "live view of memory, swap, pressure and jobs (q quits)",
     "  --minutes N    span of the sparkline (default 10)\n"},
    {"submit", NULL, cmd_submit, "[options] -- CMD [ARGS...]",
     "queue a detached job; prints its id", JOB_OPTIONS},
    {"run", "guard", cmd_run, "[options] -- CMD [ARGS...]",
     "wait for admission, run CMD here, exit with its status",
     JOB_OPTIONS "  -q, --quiet            no queue status on stderr\n"},
    {"status", "ps", cmd_status, "[--all] [--limit N] [--json]",
     "the queue: running and queued jobs (--all: ended ones too)", NULL},
    {"show", NULL, cmd_show, "[--env] [--json] ID",
     "one job in a readable paragraph, with why it ended", NULL},
    {"cancel", NULL, cmd_cancel, "ID...",
     "remove queued jobs; terminate running ones", NULL},
    {"wait", NULL, cmd_wait, "[--json] ID...",
     "wait for jobs to end; exit with the last failing job's status", NULL},
    {"logs", NULL, cmd_logs, "[-f] [--raw] ID",
     "print a detached job's output (-f: follow until it ends)",
     "  -f, --follow   follow until the job has ended\n"
     "  --raw          another user's job's output as it is, not "
     "escaped\n"},
    {"events", NULL, cmd_events, "[-f] [--after ID] [--limit N] [--json]",
     "the event log (-f: follow)", NULL},
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static const char *prog = "stageloadctl";

static const struct cli_command *
find_command(const char *name)
{
	size_t i;

	for (i = 0; i < NCOMMANDS; i++) {
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
		if (commands[i].alias != NULL &&
		    strcmp(commands[i].alias, name) == 0)
			return &commands[i];
	}
	return NULL;
}

static void
print_overview(FILE *f)
{
	size_t i;
	char name[32];

	fprintf(f,
	        "usage: %s [--socket PATH] [--json] COMMAND [ARGS...]\n"
	        "\n"
	        "Talk to stageloadd, the memory-aware job queue.\n"
	        "\n"
	        "Commands:\n",
	        prog);
	for (i = 0; i < NCOMMANDS; i++) {
		if (commands[i].alias != NULL)
			snprintf(name, sizeof name, "%s, %s", commands[i].name,
			         commands[i].alias);
		else
			snprintf(name, sizeof name, "%s", commands[i].name);
		fprintf(f, "  %-12s %s\n", name, commands[i].summary);
	}
	fprintf(
	    f,
	    "\n"
	    "Global options:\n"
	    "  --socket PATH   daemon socket (default: $STAGELOAD_SOCKET, "
	    "then\n"
	    "                  /var/run/stageload.sock if it exists, then the "
	    "per-user one)\n"
	    "  --json          machine-readable output\n"
	    "  -h, --help      this help; '%s help COMMAND' for one command\n"
	    "  --version       print the version\n"
	    "\n"
	    "Examples:\n"
	    "  %s info\n"
	    "  %s guard --wait-free 40 --swap-budget 8G -- python generate.py\n"
	    "  %s submit --name qwen --swap-budget 8G -- python gen.py\n"
	    "  %s status --all\n"
	    "  %s logs -f 12\n"
	    "  %s history --since 24h --step 10m\n"
	    "  %s meter --interval 1 --pid 4242 --out trace.jsonl\n"
	    "\n"
	    "Sizes: 8G = 8 GiB (powers of 1024). Exit codes: 0 ok, 1 error, 2 "
	    "usage,\n"
	    "69 daemon unavailable, 76 other protocol version, 77 permission "
	    "denied;\n"
	    "run/guard/wait exit with the job's status.\n"
	    "See docs/cli.md.\n",
	    prog, prog, prog, prog, prog, prog, prog, prog);
}

static void
print_command(FILE *f, const struct cli_command *c)
{
	fprintf(f, "usage: %s %s %s\n\n%s.\n", prog, c->name, c->args,
	        c->summary);
	if (c->alias != NULL)
		fprintf(f, "Also: %s %s.\n", prog, c->alias);
	if (c->help != NULL)
		fprintf(f, "\nOptions:\n%s", c->help);
}

int
cli_usage(const char *command)
{
	const struct cli_command *c = command ? find_command(command) : NULL;

	if (c != NULL)
		print_command(stderr, c);
	else
		print_overview(stderr);
	return EXIT_USAGE;
}

int
cli_help(const char *command)
{
	const struct cli_command *c = command ? find_command(command) : NULL;

	if (c != NULL)
		print_command(stdout, c);
	else
		print_overview(stdout);
	return EXIT_OK;
}

void
cli_verror(const char *fmt, va_list ap)
{
	char small[512], *safe;
	const char *msg = proto_text_vformat(small, sizeof small, fmt, ap);
	/* The message may quote the daemon, a job or the command line:
	 * escaped like all text from users (proto/text.h). */
	safe = cli_safe_dup(msg);
	fflush(stdout);
	fprintf(stderr, "%s: %s\n", prog,
	        safe != NULL ? safe : "(out of memory for a message)");
	free(safe);
	if (msg != small && msg != fmt)
		free((char *)msg);
}

void
cli_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cli_verror(fmt, ap);
	va_end(ap);
}

int
cli_fail(struct cli *cli)
{
	int code = sl_errcode(cli->client);

	cli_error("%s", sl_errmsg(cli->client));
	return cli_exit_for_error(code);
}

int
cli_connect(struct cli *cli)
{
	if (cli->client == NULL) {
		cli->client = sl_client_new();
		if (cli->client == NULL) {
			cli_error("out of memory");
			return EXIT_ERR;
		}
	}
	if (sl_is_connected(cli->client))
		return 0;
	if (sl_connect(cli->client, cli->socket) < 0)
		return cli_fail(cli);
	return 0;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"socket", required_argument, NULL, 's'},
	    {"json", no_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {NULL, 0, NULL, 0},
	};
	const struct cli_command *c;
	struct cli cli;
	int ch, rc;

	memset(&cli, 0, sizeof cli);
	cli.prog = prog;
	/* A reader that went away (| head) ends us quietly. */
	signal(SIGPIPE, SIG_DFL);

	/* "+": options after the command belong to the command. */
	while ((ch = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		switch (ch) {
		case 's':
			cli.socket = optarg;
			break;
		case 'j':
			cli.json = 1;
			break;
		case 'h':
			return cli_help(NULL);
		case 'V':
			printf("stageloadctl %s (protocol %d)\n",
			       STAGELOAD_VERSION, SL_PROTOCOL_VERSION);
			return EXIT_OK;
		default:
			return cli_usage(NULL);
		}
	}
	if (optind >= argc)
		return cli_usage(NULL);
	if (strcmp(argv[optind], "help") == 0)
		return cli_help(optind + 1 < argc ? argv[optind + 1] : NULL);
	c = find_command(argv[optind]);
	if (c == NULL) {
		cli_error("unknown command '%s'", argv[optind]);
		return cli_usage(NULL);
	}
	argc -= optind;
	argv += optind;
	/* Each command parses its own options with getopt from the start. */
	optind = 0;
	rc = c->fn(&cli, argc, argv);
	sl_client_free(cli.client);
	/* ferror too: commands that flush as they go (events, wait, logs)
	 * leave nothing for this flush to fail on. */
	if ((fflush(stdout) != 0 || ferror(stdout)) && rc == EXIT_OK) {
		cli_error("cannot write output");
		rc = EXIT_ERR;
	}
	return rc;
}
