/*
 * stageloadctl internals shared by the command files (cmd-*.c): the
 * command table entry, exit codes, connection and output helpers. The
 * helpers in cli.c print nothing themselves unless their name says so
 * (cli_error, cli_fail), so they can be unit-tested.
 */
#ifndef SL_CLI_H
#define SL_CLI_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "stageload.h"

/* Exit codes; docs/cli.md is the reference and must match. */
#define EXIT_OK 0
#define EXIT_ERR 1          /* the daemon refused or failed the request */
#define EXIT_USAGE 2        /* bad command line */
#define EXIT_NOPERM 77      /* EX_NOPERM: the daemon said permission denied */
#define EXIT_UNAVAILABLE 69 /* EX_UNAVAILABLE: cannot reach the daemon */
#define EXIT_PROTOCOL 76    /* EX_PROTOCOL: the daemon speaks another version */
/* Statuses of a job (run, guard, wait), in the spirit of timeout(1) and
 * the shells: the command's own code, or 128+N for signal N, or: */
#define EXIT_JOB_LOST 123      /* the daemon lost track of the job */
#define EXIT_JOB_BUDGET 124    /* killed for its swap budget */
#define EXIT_JOB_NOTRUN 125    /* cancelled, or refused, before it ran */
#define EXIT_JOB_CANNOTRUN 126 /* could not be started */
#define EXIT_JOB_NOTFOUND 127  /* command not found (run) */

struct cli {
	const char *socket; /* --socket, or NULL */
	int json;           /* --json */
	sl_client *client;  /* connected by cli_connect() */
	const char *prog;
};

struct cli_command {
	const char *name;
	const char *alias;
	int (*fn)(struct cli *cli, int argc, char **argv);
	const char *args;    /* "[--all] [--json]" */
	const char *summary; /* one line for the overview */
	const char *help;    /* options, one per line, or NULL */
};

/* cmd-*.c */
int cmd_info(struct cli *, int, char **);
int cmd_history(struct cli *, int, char **);
int cmd_meter(struct cli *, int, char **);
int cmd_top(struct cli *, int, char **);
int cmd_submit(struct cli *, int, char **);
int cmd_status(struct cli *, int, char **);
int cmd_show(struct cli *, int, char **);
int cmd_cancel(struct cli *, int, char **);
int cmd_wait(struct cli *, int, char **);
int cmd_logs(struct cli *, int, char **);
int cmd_events(struct cli *, int, char **);
int cmd_run(struct cli *, int, char **);
int cmd_plot(struct cli *, int, char **);

/* stageloadctl.c: the command's usage on stderr; returns EXIT_USAGE. */
int cli_usage(const char *command);
/* The same on stdout for --help; returns EXIT_OK. */
int cli_help(const char *command);
/* Print "stageloadctl: " and the message on stderr, escaped as text from
 * users is (cli_safe). */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void cli_verror(const char *fmt, va_list ap)
    __attribute__((format(printf, 1, 0)));
/* Report the client's last error on stderr; returns its exit code. */
int cli_fail(struct cli *cli);
/* Connect once; on failure reports and returns the exit code, else 0. */
int cli_connect(struct cli *cli);

/* ---- pure helpers (cli.c) ---- */

/*
 * Parse the job options of submit and run (argv[0] is the command name)
 * into spec (initialised by the caller); quiet may be NULL when -q is not
 * accepted. Returns the index of the job's command in argv (after an
 * optional "--"), CLI_ARGS_HELP for --help, or -EINVAL with cause set.
 * Uses getopt_long: the caller resets optind first.
 */
int cli_parse_job_args(int argc, char **argv, struct sl_job_spec *spec,
                       int *quiet, int *json, char *cause, size_t causelen);
#define CLI_ARGS_HELP (-1000)

/* The exit code for a library error code. */
int cli_exit_for_error(int code);
/* The exit status that `wait` (and `run` after the fact) gives a job
 * that has ended; docs/cli.md lists the mapping. */
int cli_job_status(const struct sl_job *j);

int cli_parse_id(const char *s, int64_t *id);
int cli_parse_int(const char *s, long min, long max, long *out);
/* "40", "40%", "37.5": 0..100 */
int cli_parse_pct(const char *s, double *out);

/* "8.0G"; "-" for none when dash_zero and bytes is 0. */
const char *cli_size(uint64_t bytes, char *buf, size_t len);
/*
 * Text from other users (a job's name, its command, a user name) made safe
 * for a terminal with proto_text_escape (proto/text.h: "\e", "\n",
 * "\x07", "\u{202E}", "\\"), cut after max characters (0: no limit)
 * at a character boundary, never inside an escape, and never past len-1
 * bytes (PROTO_TEXT_GROWTH * strlen(s) + 1 always holds it whole).
 * Returns buf.
 */
const char *cli_safe(const char *s, size_t max, char *buf, size_t len);
/* The same, whole, into a malloc'd string (NULL when out of memory). */
char *cli_safe_dup(const char *s);
/* Print JSON text (cJSON's, one value) and a newline to f with the
 * controls, C1 and bidi characters in its strings as JSON escapes
 * (PROTO_TEXT_JSON): the same JSON to a reader, safe on a terminal.
 * -ENOMEM (nothing printed) when out of memory. */
int cli_print_json(FILE *f, const char *json);
/* Display width of UTF-8 text: code points, not bytes. */
size_t cli_text_width(const char *s);
/* "1h02m", "45s" */
const char *cli_duration(int64_t ms, char *buf, size_t len);
/* local "2026-11-30 05:00:01"; with_ms adds ".123" */
const char *cli_time(int64_t ms, int with_ms, char *buf, size_t len);
int64_t cli_now_ms(void);

/* How long a job waited in the queue and ran, as shown by status: "-"
 * when it does not apply yet. */
void cli_job_waited(const struct sl_job *j, int64_t now, char *buf, size_t len);
void cli_job_ran(const struct sl_job *j, int64_t now, char *buf, size_t len);
/* "1.2G/8.0G", "0B/-" (no budget) */
void cli_job_swap(const struct sl_job *j, char *buf, size_t len);
/* "exited 0", "killed (swap_budget)", "queued #2" */
void cli_job_state(const struct sl_job *j, char *buf, size_t len);
/* The readable paragraph of `show`, into a malloc'd string. */
char *cli_job_paragraph(const struct sl_job *j, int64_t now);

/* The status line of an attached job while queued:
 * "queued: position 2 of 3, free 34% < 40%". */
void cli_queue_line(int position, int of, double free_pct, double wait_free_pct,
                    const char *waiting_for, char *buf, size_t len);

/*
 * A sparkline of n values scaled between lo and hi, one block character
 * (U+2581..U+2588) per value; NaN values print as a space. Writes at most
 * len-1 bytes (3 per character) and returns buf.
 */
char *cli_sparkline(const double *values, size_t n, double lo, double hi,
                    char *buf, size_t len);

/*
 * meter's decimation: whether a sample at ts_ms is written when the last
 * written one was at last_ms (-1: none yet), for a requested interval
 * and the daemon's sample interval. A sample is due once at least the
 * requested interval minus half a daemon interval has passed, so jitter
 * in the daemon's tick never skips one.
 */
int cli_meter_due(int64_t last_ms, int64_t ts_ms, int64_t interval_ms,
                  int64_t daemon_interval_ms);

/* A table: rows of strings, printed with columns padded to fit. */
struct cli_table {
	size_t ncols;
	size_t nrows;
	char ***rows; /* rows[r][c], owned */
	int *right;   /* per column: right-align */
};
int cli_table_init(struct cli_table *t, size_t ncols, const char *const *head,
                   const int *right);
int cli_table_add(struct cli_table *t, const char *const *cells);
void cli_table_print(const struct cli_table *t, FILE *f);
void cli_table_free(struct cli_table *t);

/* NO_COLOR (no-color.org) and a TTY decide whether to use colour. */
int cli_use_color(int fd);
/* Stop this process as Ctrl-Z would (SIGTSTP's default action, whatever
 * handler is set); returns once it is continued. */
void cli_stop_self(void);

#endif
