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

#include "names.h"
#include "stageload.h"
#include "sl-job.h"

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
#define EXIT_JOB_BUDGET 124    /* killed for its swap budget or time limit */
#define EXIT_JOB_NOTRUN 125    /* cancelled, or refused, before it ran */
#define EXIT_JOB_CANNOTRUN 126 /* could not be started */
#define EXIT_JOB_NOTFOUND 127  /* command not found (run) */

struct cli {
	const char *socket; /* --socket, or NULL */
	int json;           /* --json */
	sl_client *client;  /* connected by cli_connect() */
	const char *prog;
	const char *name; /* the command as typed, for its errors */
};

/*
 * What an option's value is. The parser (cli-cmd.c) checks it, and says
 * what is valid, before the command runs.
 */
enum cli_value {
	CLI_FLAG,     /* no value */
	CLI_TEXT,     /* any text */
	CLI_CHOICE,   /* one of the words of `value`: "table|json|csv" */
	CLI_INT,      /* a whole number from min to max */
	CLI_ID,       /* a job id: 1 or more, "#12" too */
	CLI_PCT,      /* 0..100: "40", "40%", "37.5" */
	CLI_FREE,     /* CLI_PCT, or a size ("30G": that much available);
	                 a size sets n and pct -1 */
	CLI_SIZE,     /* "8G", "512M", "0" (docs/units.md) */
	CLI_DURATION, /* above 0: "500ms", "2s", "0.5" (seconds), "1m" */
	CLI_LIMIT,    /* a duration with its unit ("90m", "2h"), or 0: none */
	CLI_BEGIN,    /* a time to begin: "+3s", "23:10", "2026-12-24T08:00"
	                 (docs/units.md); n is ms since the epoch */
};

/* One option of a command: a row of its entry's table. */
struct cli_option {
	const char *name; /* "limit" is --limit */
	char letter;      /* also -f; 0: no short form */
	enum cli_value type;
	const char *value; /* its value in the usage: "N", "T", ... */
	long min, max;     /* CLI_INT's range */
	const char *help;  /* its lines in --help ("\n" between lines) */
};

struct cli_entry;

#define CLI_MAX_OPTIONS 24

/* A command's arguments, parsed and checked against its entry. */
struct cli_args {
	const struct cli_entry *entry;
	int argc; /* the operands: what is left after the options */
	char **argv;
	struct {
		int given;
		const char *text; /* as typed */
		int64_t n;        /* CLI_INT, CLI_ID, CLI_SIZE, CLI_DURATION and
		                     CLI_LIMIT (ms), CLI_BEGIN (ms since the epoch) */
		double pct;       /* CLI_PCT, CLI_FREE */
	} opt[CLI_MAX_OPTIONS];
};

/* Options end at the first operand, which starts a command line. */
#define CLI_COMMAND_LINE 0x1

/*
 * A command: everything stageloadctl knows of it, defined in its
 * cmd-*.c next to its code and listed in cmd-list.h. --help, `help CMD`,
 * the errors, the man page and the shell completions are made from it.
 */
struct cli_entry {
	const char *name;
	const char *alias;   /* another name, or NULL */
	const char *summary; /* one line for the overview */
	const char
	    *operands; /* what follows the options, e.g. "ID...", or NULL */
	int min_operands;
	int max_operands;                      /* -1: any number */
	int flags;                             /* CLI_COMMAND_LINE */
	const struct cli_option *options;      /* ends with a {NULL} row */
	const struct cli_option *more_options; /* a table shared with other
	                                          commands, or NULL */
	const char *json;    /* --json's line in the help: it has a JSON form */
	const char *no_json; /* else, why --json is refused (or NULL) */
	int (*exec)(struct cli *cli, struct cli_args *args);
};

/* cli-help.c: a command's examples, one per line without the program's
 * name, or NULL; the command (or alias) a mistyped name is closest to,
 * when one is close enough to suggest, else NULL. */
const char *cli_examples(const char *name);
const char *cli_suggest_command(const char *typed);

/* cmd-list.h, in the order --help shows them; NULL-terminated. */
extern const struct cli_entry *const cli_entries[];
/* The entry called name (or with that alias), or NULL. */
const struct cli_entry *cli_find_entry(const char *name);

/* The options every command takes, before or after its name. */
extern const struct cli_option cli_global_options[];

/*
 * Parse a command's arguments (argv[0] is its name) against its entry and
 * the global options, which set cli->socket and cli->json. Returns 0,
 * CLI_ARGS_HELP for --help, or -EINVAL with the reason in cause, one line
 * without the command's name ("--limit takes a whole number from 1 to
 * 10000, not '0'").
 */
int cli_parse(const struct cli_entry *e, int argc, char **argv, struct cli *cli,
              struct cli_args *a, char *cause, size_t causelen);
#define CLI_ARGS_HELP (-1000)

/* Whether the option called name was given; its value as parsed (the
 * default when not given). name must be in the entry's tables. */
int cli_has(const struct cli_args *a, const char *name);
const char *cli_text(const struct cli_args *a, const char *name,
                     const char *dflt);
int64_t cli_number(const struct cli_args *a, const char *name, int64_t dflt);
/* The time option name (its text, or dflt: NULL for none, *ms 0) read
 * against now (docs/units.md: 1h, "2026-11-30 05:00", an epoch), as ms
 * since the epoch. Times are read when the command runs, not by the
 * parser, since "1h" means an hour before now. -1 to go on, else the
 * usage error's exit code (said). */
int cli_time_option(struct cli *cli, const struct cli_args *a, const char *name,
                    const char *dflt, int64_t now, int64_t *ms);
double cli_pct(const struct cli_args *a, const char *name, double dflt);
/* 1 when the command has option name (cli-cmd.c; cli-filter.c asks it
 * of --state). */
int has_option(const struct cli_args *a, const char *name);

/*
 * cli-job-options.c: the job options of proto/job-fields.h's JOB_CLI, as
 * option rows: those of submit and run (cli_job_options), submit's own
 * (with --shell, which is no parameter) and update's.
 */
extern const struct cli_option cli_job_options[];
extern const struct cli_option cli_submit_queue_options[];
extern const struct cli_option cli_update_options[];
/* Which command's options: run's, submit's (all) or update's. */
enum cli_job_use { CLI_USE_RUN, CLI_USE_SUBMIT, CLI_USE_UPDATE };
/* The options of use given in a, as their parameters into spec, with
 * *given (when not NULL) how many. -1 to go on, else the exit status
 * after saying why (a usage error, out of memory). */
int cli_job_options_set(struct cli *cli, const struct cli_args *a,
                        enum cli_job_use use, sl_job_spec *spec, int *given);
/* The parameter an option ("time") sets, as the Job names it; NULL for
 * none. */
const char *cli_job_option_param(const char *option);
/* use's options as a sentence's list: "--a, --b or --c"; returns buf. */
const char *cli_job_options_list(enum cli_job_use use, char *buf, size_t len);
/* The job options of use given, and the command, as a spec to submit;
 * NULL after saying why, with *status the exit status. */
sl_job_spec *cli_job_spec(struct cli *cli, const struct cli_args *a,
                          enum cli_job_use use, int *status);
/* submit --shell: the command's words as one /bin/sh -c script in spec
 * (free x with cli_submit_extra_free once submitted). -1 to go on, else
 * the exit status. */
struct cli_submit_extra {
	char *script;
	char *shargv[4];
};
int cli_submit_shell(const struct cli_args *a, sl_job_spec *spec,
                     struct cli_submit_extra *x);
void cli_submit_extra_free(struct cli_submit_extra *x);
/* Could the job's command be started, found as execvp finds it along
 * path_env from the current directory? 0, -ENOENT or -EACCES. */
int cli_submit_which(const char *cmd, const char *path_env);
/* The same for spec's argv[0] and this process's PATH: -1 when found,
 * else it says why and returns 127 (not found) or 126 (not executable). */
int cli_submit_command(const sl_job_spec *spec);
/* wait --notify: a desktop notification that job j ended (cmd-queue.c);
 * when none can be posted, a line on stderr saying why. */
void cli_wait_notify(const struct sl_job *j);
/* Is a Job object (cJSON) of group? */
struct cJSON;
int cli_json_in_group(const struct cJSON *job, const char *group);
/* The spec's swap_budget_bytes, -1 when it leaves it to the daemon. */
int64_t cli_spec_budget(const sl_job_spec *spec);
/* The spec's wait_free_bytes, 0 when it has none. */
uint64_t cli_spec_wait_free_bytes(const sl_job_spec *spec);

/* cli-cmd.c: the overview (e NULL) or a command's help, as --help shows. */
void cli_print_help(FILE *f, const struct cli_entry *e);
/* A command's usage line, "stageloadctl NAME [--all] ... ID...", into a
 * malloc'd string; when width is not 0 wrapped before that column, the
 * first line starting at column indent. */
char *cli_synopsis(const struct cli_entry *e, size_t indent, size_t width);
/* The option's switches as the help shows them: "-f, --follow" or
 * "--since T". */
const char *cli_option_label(const struct cli_option *o, char *buf, size_t len);

/* cmd-stage.c: the stages of a show answer (JSON text) as a table;
 * nothing when the job reported none. */
void cli_print_stages(const char *show_json, int64_t now, FILE *f);

/* cmd-doctor.c: a warning on stderr when the job's swap budget (< 0: the
 * daemon's default one) can never stop it: the daemon's Linux machine has
 * no swap. Says nothing when the daemon cannot tell. */
void cli_warn_no_swap(struct cli *cli, int64_t budget_bytes);

/* cli-offline.c: system history read from the database at path itself,
 * read-only with this user's rights, bucketed as the daemon buckets it
 * (until_ms and step_ms 0: the daemon's defaults). -errno with a cause. */
int cli_offline_history(const char *path, int64_t since_ms, int64_t until_ms,
                        int64_t step_ms, struct sl_history **out, char *cause,
                        size_t causelen);
/* The same for a job's footprint and swap (until_ms 0: no end), each
 * bucket with its stage; -ENOENT when the database has no such job. */
int cli_offline_job_history(const char *path, int64_t job_id, int64_t since_ms,
                            int64_t until_ms, int64_t step_ms,
                            struct sl_history **out, char *cause,
                            size_t causelen);
/* report's rows summed from the database at path itself, as the daemon
 * sums them (until_ms 0: now) of the jobs that pass filter (the filter
 * params as the daemon takes them, cli_filter_params; NULL: every job);
 * -ENOENT for a database from before accounting, -EINVAL with cause for
 * a filter the daemon would refuse. */
struct cJSON;
int cli_offline_report(const char *path, const struct sl_report_query *q,
                       const struct cJSON *filter, struct sl_report **out,
                       char *cause, size_t causelen);
/* The database of the daemon that would serve socket_path (socket_given:
 * named by --socket or $STAGELOAD_SOCKET): the system daemon's for the
 * system socket and for root; else this user's when it names a socket or
 * this user has a database, else the system daemon's. */
int cli_offline_db_path(const char *socket_path, int socket_given, char *buf,
                        size_t len);

/* cli-generate.c: --generate KIND (man, complete-bash, complete-zsh,
 * complete-fish) to f; -EINVAL for another kind. */
int cli_generate(FILE *f, const char *kind);

/* The filter options of status, events and cancel (cli-cmd.c): --user,
 * --mine, --state and --name, the daemon's job filter (PROTOCOL.md, "Job
 * filters"). */
extern const struct cli_option cli_filter_options[];
/* The same but --state, for report (a rollup of ended jobs, which keeps
 * no state): cli_filter and cli_filter_params take either table. */
extern const struct cli_option cli_filter_options_ended[];
/* The filter they give into *f (NULL when none is given: free it with
 * sl_filter_free); -1 to go on, else the exit code of a usage error (an
 * unknown user or state). */
int cli_filter(struct cli *cli, const struct cli_args *args, sl_filter **f);
/* The same options added to params as the daemon takes them, for a call
 * made with sl_call (checked by cli_filter first); -ENOMEM. */
struct cJSON;
int cli_filter_params(const struct cli_args *args, struct cJSON *params);
/* local "05:00:01" when ms is today, else "2026-11-30 05:00"; "-" for 0 */
const char *cli_clock(int64_t ms, int64_t now, char *buf, size_t len);

/* Print "stageloadctl: " and the message on stderr, escaped as text from
 * users is (cli_safe). */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void cli_verror(const char *fmt, va_list ap)
    __attribute__((format(printf, 1, 0)));
/* A usage error of the running command, in the one style: "stageloadctl:
 * CMD: reason" on one line. Returns EXIT_USAGE. */
int cli_usage_error(const struct cli *cli, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Report the client's last error on stderr (in the words of the command
 * line: cli_daemon_words); returns its exit code. */
int cli_fail(struct cli *cli);
/* The same for job id: "job 4: no such job", or the message alone when it
 * names the job already ("job 4 is not yours"). */
int cli_fail_job(struct cli *cli, int64_t id);
/* A daemon's message in the words of the command line: the wire names of
 * job options as their options ("wait_free_bytes 42949672960" reads
 * "--wait-free 40G"), a byte count beside its size dropped ("(25276502016
 * bytes, 24G)" reads "(24G)"). */
void cli_daemon_words(const char *msg, char *buf, size_t len);
/* --wait-free SIZE against the machine's total memory from `info`: -1
 * when it could be free (or the total is not known yet), else it says why
 * and returns EXIT_USAGE. Needs a connection. */
int cli_check_wait_free(struct cli *cli, uint64_t bytes);
/* Whether the socket was named: --socket, or $STAGELOAD_SOCKET set and
 * not empty (sl_socket_path's order). */
int cli_socket_given(const struct cli *cli);
/* Connect once; on failure reports and returns the exit code, else 0. */
int cli_connect(struct cli *cli);

/* ---- pure helpers (cli.c) ---- */

/* The exit code for a library error code. */
int cli_exit_for_error(int code);
/* The exit status that `wait` (and `run` after the fact) gives a job
 * that has ended; docs/cli.md lists the mapping. */
int cli_job_status(const struct sl_job *j);

int cli_parse_id(const char *s, int64_t *id);
/* The operands as job ids, connected: 42 a job, A42 every element of
 * array 42, A42_3 one element (sl_resolve: the daemon resolves them).
 * -1 to go on (*ids malloc'd), else the exit code. */
int cli_job_refs(struct cli *cli, int argc, char **argv, int64_t **ids, int *n);
/* 0 when every operand is 42, A42 or A42_3, else the usage error's exit
 * code (said). */
int cli_check_job_refs(struct cli *cli, int argc, char **argv);
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
/* Text from users as one CSV field on stdout: escaped as cli_safe does,
 * quoted when it holds a comma, a quote or a line break (RFC 4180); NULL
 * is an empty field. */
void cli_csv_field(const char *t);
/* Print JSON text (cJSON's, one value) and a newline to f with the
 * controls, C1 and bidi characters in its strings as JSON escapes
 * (PROTO_TEXT_JSON): the same JSON to a reader, safe on a terminal.
 * -ENOMEM (nothing printed) when out of memory. */
/* What a whole array's hold, release or cancel did, told in one line,
 * "A42: 198 cancelled, 2 exited": how many elements each word (a state,
 * or what was done) counts, in the order first seen. The words must live
 * until it is printed. */
struct cli_tally {
	const char *word[12];
	long n[12];
	size_t len;
};
void cli_tally_add(struct cli_tally *t, const char *word);
void cli_tally_print(const struct cli_tally *t, const char *ref);
int cli_print_json(FILE *f, const char *json);
/* sl_call(method, params) and its JSON result printed as it came, but
 * terminal-safe (cli_print_json); an exit code. */
int cli_raw_call(struct cli *cli, const char *method, const char *params);
/* While job id is queued, say where it is and why it waits on stderr
 * (wait and logs -f; run does so for its own job). */
void cli_watch_queued(struct cli *cli, int64_t id);
/* cli-width.c: terminal cells of a code point (0, 1 or 2: East Asian
 * Wide and Fullwidth take two, combining marks none), the same in every
 * locale; of UTF-8 text; and text from users (escaped as cli_safe does)
 * cut to at most cells cells and len - 1 bytes, ending with "\u2026" when
 * cut (cells 0: only len limits it). */
int cli_char_width(uint32_t cp);
size_t cli_text_width(const char *s);
const char *cli_fit(const char *s, size_t cells, char *buf, size_t len);
/* The same; with keep_backslashes, text that needs no escape but of its
 * backslashes is kept as it is (a shell command line). */
const char *cli_fit_text(const char *s, int keep_backslashes, size_t cells,
                         char *buf, size_t len);
/* "1h02m", "45s" */
const char *cli_duration(int64_t ms, char *buf, size_t len);
/* local "2026-11-30 05:00:01"; with_ms adds ".123" */
const char *cli_time(int64_t ms, int with_ms, char *buf, size_t len);

/* How long a job waited in the queue and ran, as shown by status: "-"
 * when it does not apply yet. */
void cli_job_waited(const struct sl_job *j, int64_t now, char *buf, size_t len);
void cli_job_ran(const struct sl_job *j, int64_t now, char *buf, size_t len);
/* "1.2G/8.0G", "0B/-" (no budget) */
void cli_job_swap(const struct sl_job *j, char *buf, size_t len);
/* cli-learned.c: status's footprint cell of a job with a reservation
 * gets ", expects 19G" and where it came from ("learned, 3 runs"); buf
 * holds the cell and is appended to. */
void cli_job_expect(const struct sl_job *j, char *buf, size_t len);
/* show: "Learned from N runs of NAME: ..." and the stages' peaks, from
 * the show answer's learned (nothing when null or no run). */
void cli_print_learned(const char *show_json, FILE *f);
/* "exited 0", "killed (swap_budget)", "queued #2" */
void cli_job_state(const struct sl_job *j, char *buf, size_t len);
/* The same from the Job's members (cli-base.c: stageload-web's tables and
 * job page say a state as status does); end_reason may be NULL. */
void cli_state_words(const char *state, int position, int exit_code, int signal,
                     const char *end_reason, char *buf, size_t len);
/* What a queued job waits for and the numbers to say it with. */
struct cli_wait {
	const char *waiting_for;  /* the protocol's word; unknown ones: other */
	double free_pct;          /* the latest sample's; NAN: unknown */
	double wait_free_pct;     /* the job's */
	int64_t reserved_bytes;   /* promised to running jobs; -1: unknown */
	uint64_t wait_free_bytes; /* the job's; 0: it waits for a % */
	int64_t available_bytes;  /* the latest sample's; 0: unknown */
	int64_t job_id;           /* the job's, for "release 12"; 0: unknown */
	int64_t begin_ms;         /* the job's --begin; 0: none or unknown */
	/* The jobs it waits behind: the Job's waiting_on (JSON text, an
	 * array of {"id","user","name"}), and waiting_until_ms (0: not
	 * known); NULL, 0 from a daemon that does not say. */
	const char *on_json;
	int64_t until_ms;
	const char *group; /* its group, named in the group sentence */
};
/* The readable paragraph of `show`, into a malloc'd string; a queued
 * job's says why it waits, with the numbers of w (its waiting_for and
 * wait_free_pct are the job's; w may be NULL: numbers unknown). */
char *cli_job_paragraph(const struct sl_job *j, int64_t now,
                        const struct cli_wait *w);
/* cli-quote.c: argv as one command line a shell reads back as the same
 * words, safe to print on a terminal; malloc'd, NULL when out of
 * memory. */
char *cli_shell_command(char *const *argv);

/* ---- why a queued job waits (cli-reason.c) ---- */

enum cli_reason_form {
	CLI_REASON_COLUMN,   /* "free 34% < 40%", "expect 12.0G reserved" */
	CLI_REASON_LINE,     /* "free 55%, waiting for the last job to ..." */
	CLI_REASON_SENTENCE, /* show: "free memory is 34% < 40%, ..." */
};
void cli_wait_reason(const struct cli_wait *w, enum cli_reason_form form,
                     char *buf, size_t len);
/* The reason of a job from a list (empty, or "-" in the other forms, when
 * it is not queued). */
void cli_job_reason(const struct sl_job *j, double free_pct,
                    int64_t available_bytes, int64_t reserved_bytes,
                    enum cli_reason_form form, char *buf, size_t len);
/* Memory promised to the jobs of the list that hold memory: the sum of
 * expect - footprint where positive, as admission counts it. */
int64_t cli_reserved_bytes(const struct sl_job *jobs, size_t n);
/* "39.7% < 40%": free % against a wanted %, with the fewest decimals that
 * keep the comparison true ("40% < 40%" never). */
void cli_pct_compare(double free_pct, double want_pct, char *buf, size_t len);

/* The status line of a job while queued:
 * "queued: position 2 of 3, free 34% < 40%". */
void cli_queue_line(int position, int of, double free_pct, double wait_free_pct,
                    const char *waiting_for, char *buf, size_t len);
/* The same with every number of w (a --wait-free SIZE's too). */
void cli_queue_line_wait(int position, int of, const struct cli_wait *w,
                         char *buf, size_t len);

/* Progress lines where they are not redrawn in place (stderr is a log or a
 * pipe, not a terminal): a new line at once when what the job waits for
 * changes (the waiting_for kind, or the job it waits behind, which the
 * word carries: "after 7"), else at most one a minute, so a free % creeping
 * by a point does not fill the log with lines. Zero it to start afresh. */
#define CLI_PROGRESS_QUIET_MS 60000
struct cli_progress {
	char key[64];   /* the waiting_for of the last line printed */
	char line[256]; /* the last line printed */
	int64_t at_ms;  /* when it was printed, on the caller's clock */
	int shown;      /* a line has been printed */
};
/* 1 when line, of a job waiting for key, is to be printed at now_ms (and
 * it is remembered as printed), else 0. */
int cli_progress_due(struct cli_progress *p, const char *key, const char *line,
                     int64_t now_ms);

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
/* The first nrows rows (the header is row 0), each line ending with eol
 * before its newline ("\033[K" in top); widths are of those rows. */
void cli_table_print_rows(const struct cli_table *t, FILE *f, size_t nrows,
                          const char *eol);
void cli_table_free(struct cli_table *t);

/* NO_COLOR (no-color.org) and a TTY decide whether to use colour. */
int cli_use_color(int fd);
/* Stop this process as Ctrl-Z would (SIGTSTP's default action, whatever
 * handler is set); returns once it is continued. */
void cli_stop_self(void);

#endif
