/*
 * The commands of stageloadctl as entries: the list (cmd-list.h), the one
 * parser of their arguments, which checks every option against the entry
 * before the command runs, and the help made from the entries. Errors are
 * said here too, in one style (a daemon's refusal in the words of the
 * command line: cli-daemon-errors.c; the options that pick jobs:
 * cli-filter.c).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "clock.h"
#include "text.h"
#include "units.h"

/* A size option given as a bare number below this (other than 0) is
 * refused with a suggestion: 1M bytes and up are plausibly meant. */
#define SIZE_BARE_MIN (1024 * 1024)

#define CLI_COMMAND(x) extern const struct cli_entry cmd_##x##_entry;
#include "cmd-list.h"
#undef CLI_COMMAND

const struct cli_entry *const cli_entries[] = {
#define CLI_COMMAND(x) &cmd_##x##_entry,
#include "cmd-list.h"
#undef CLI_COMMAND
    NULL,
};

const struct cli_option cli_global_options[] = {
    {"socket", 0, CLI_TEXT, "PATH", 0, 0,
     "the daemon's socket (default: $STAGELOAD_SOCKET, then\n"
     "/var/run/stageload.sock if it exists, then the per-user one)"},
    {"json", 0, CLI_FLAG, NULL, 0, 0, "machine-readable output"},
    {"help", 'h', CLI_FLAG, NULL, 0, 0, "this help"},
    {NULL, 0, 0, NULL, 0, 0, NULL},
};

static const char *prog = "stageloadctl";

const struct cli_entry *
cli_find_entry(const char *name)
{
	size_t i;

	for (i = 0; cli_entries[i] != NULL; i++) {
		const struct cli_entry *e = cli_entries[i];
		if (strcmp(e->name, name) == 0 ||
		    (e->alias != NULL && strcmp(e->alias, name) == 0))
			return e;
	}
	return NULL;
}

/* ---- errors ---- */

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
cli_usage_error(const struct cli *cli, const char *fmt, ...)
{
	char small[512];
	const char *msg;
	va_list ap;

	va_start(ap, fmt);
	msg = proto_text_vformat(small, sizeof small, fmt, ap);
	va_end(ap);
	if (cli->name != NULL)
		cli_error("%s: %s", cli->name, msg);
	else
		cli_error("%s", msg);
	if (msg != small && msg != fmt)
		free((char *)msg);
	return EXIT_USAGE;
}

int
cli_check_wait_free(struct cli *cli, uint64_t bytes)
{
	struct sl_info info;
	char want[24], total[24];

	if (bytes == 0 || sl_info(cli->client, &info) < 0 || !info.has_sample ||
	    info.sample.total_bytes == 0 || bytes <= info.sample.total_bytes)
		return -1;
	return cli_usage_error(
	    cli,
	    "--wait-free %s is above the machine's total "
	    "memory (%s): it could never be free",
	    cli_size(bytes, want, sizeof want),
	    cli_size(info.sample.total_bytes, total, sizeof total));
}

int
cli_socket_given(const struct cli *cli)
{
	const char *env = getenv("STAGELOAD_SOCKET");

	return (cli->socket != NULL && cli->socket[0] != '\0') ||
	       (env != NULL && env[0] != '\0');
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

/* ---- parsing ---- */

/* The rows a command's arguments are read against: its own options (in
 * cli_args' order), then the global ones. */
struct rows {
	const struct cli_option *row[CLI_MAX_OPTIONS + 8];
	size_t n, nown;
};

static int
rows_init(struct rows *r, const struct cli_entry *e)
{
	const struct cli_option *tables[] = {e->options, e->more_options,
	                                     cli_global_options};
	const struct cli_option *o;
	size_t t;

	r->n = 0;
	for (t = 0; t < 3; t++) {
		if (t == 2)
			r->nown = r->n;
		for (o = tables[t]; o != NULL && o->name != NULL; o++) {
			if (r->n == sizeof r->row / sizeof r->row[0] ||
			    (t < 2 && r->n == CLI_MAX_OPTIONS))
				return -E2BIG;
			r->row[r->n++] = o;
		}
	}
	return 0;
}

/* What a value of the option must be, for its errors: "a whole number
 * from 1 to 10000". */
static const char *
explain(const struct cli_option *o, char *buf, size_t len)
{
	const char *v = o->value != NULL ? o->value : "";
	size_t i, n, pos = 0;

	switch (o->type) {
	case CLI_INT:
		snprintf(buf, len, "a whole number from %ld to %ld", o->min,
		         o->max);
		break;
	case CLI_ID:
		snprintf(buf, len, "a job id (1 or more)");
		break;
	case CLI_PCT:
		snprintf(buf, len,
		         "a percentage from 0 to 100 (40, 40%%, 37.5)");
		break;
	case CLI_FREE:
		snprintf(
		    buf, len,
		    "a percentage from 0 to 100 (40, 40%%, 37.5) or a size "
		    "(30G)");
		break;
	case CLI_SIZE:
		snprintf(buf, len, "a size such as 8G, 512M or 0");
		break;
	case CLI_DURATION:
		snprintf(buf, len,
		         "a duration above 0 such as 500ms, 2s, 0.5 or 1m");
		break;
	case CLI_LIMIT:
		snprintf(buf, len,
		         "a duration such as 90m, 2h or 1d (0: none)");
		break;
	case CLI_BEGIN:
		snprintf(buf, len,
		         "a time such as +30m, 23:10 or 2026-12-24T08:00");
		break;
	case CLI_CHOICE:
		/* "table|json|csv" reads "table, json or csv" */
		buf[0] = '\0';
		for (i = 0; v[i] != '\0' && pos + 1 < len; i += n) {
			if (v[i] == '|') {
				n = 1;
				snprintf(buf + pos, len - pos, "%s",
				         strchr(v + i + 1, '|') ? ", "
				                                : " or ");
				pos += strlen(buf + pos);
				continue;
			}
			n = strcspn(v + i, "|");
			snprintf(buf + pos, len - pos, "%.*s", (int)n, v + i);
			pos += strlen(buf + pos);
		}
		break;
	case CLI_TEXT:
	case CLI_FLAG:
		snprintf(buf, len, "a value (%s)", v);
		break;
	}
	return buf;
}

static int
is_choice(const char *choices, const char *text)
{
	size_t n = strlen(text);
	const char *p = choices;

	while (p != NULL) {
		if (strncmp(p, text, n) == 0 && (p[n] == '|' || p[n] == '\0'))
			return n > 0;
		p = strchr(p, '|');
		if (p != NULL)
			p++;
	}
	return 0;
}

/* Read text as the option's value into slot; -EINVAL when it is not one. */
static int
set_value(const struct cli_option *o, const char *text, int given,
          struct cli_args *a, size_t slot)
{
	uint64_t bytes;
	int64_t ms, id;
	double pct;
	long v;

	switch (o->type) {
	case CLI_FLAG:
	case CLI_TEXT:
		break;
	case CLI_CHOICE:
		if (!is_choice(o->value, text))
			return -EINVAL;
		break;
	case CLI_INT:
		if (cli_parse_int(text, o->min, o->max, &v) < 0)
			return -EINVAL;
		a->opt[slot].n = v;
		break;
	case CLI_ID:
		if (cli_parse_id(text, &id) < 0)
			return -EINVAL;
		a->opt[slot].n = id;
		break;
	case CLI_PCT:
		if (cli_parse_pct(text, &pct) < 0)
			return -EINVAL;
		a->opt[slot].pct = pct;
		break;
	case CLI_FREE:
		/* A plain number is a percentage; a size has its unit. */
		if (cli_parse_pct(text, &pct) == 0) {
			a->opt[slot].pct = pct;
			break;
		}
		if (strpbrk(text, "KMGTkmgt") == NULL ||
		    units_parse_size(text, &bytes) < 0)
			return -EINVAL;
		a->opt[slot].pct = -1;
		a->opt[slot].n = (int64_t)bytes;
		break;
	case CLI_SIZE:
		if (units_parse_size(text, &bytes) < 0)
			return -EINVAL;
		/* "--swap-budget 8" is 8 bytes, almost surely not what was
		 * meant: a bare number under 1M is asked about instead
		 * (docs/units.md). "8B" still says bytes on purpose. */
		if (bytes > 0 && bytes < SIZE_BARE_MIN &&
		    text[strspn(text, "0123456789")] == '\0')
			return -ERANGE;
		a->opt[slot].n = (int64_t)bytes;
		break;
	case CLI_DURATION:
		if (units_parse_duration_ms(text, &ms) < 0 || ms <= 0)
			return -EINVAL;
		a->opt[slot].n = ms;
		break;
	case CLI_LIMIT:
		/* "--time 90" is 90 seconds to units_parse_duration_ms, and
		 * 90 minutes to a Slurm user: a unit is asked for. */
		if (units_parse_duration_ms(text, &ms) < 0)
			return -EINVAL;
		if (ms > 0 && text[strspn(text, "0123456789.")] == '\0')
			return -EDOM;
		a->opt[slot].n = ms;
		break;
	case CLI_BEGIN:
		if (units_parse_begin_ms(text, clock_wall_ms(), &ms) < 0)
			return units_parse_duration_ms(text, &ms) == 0 &&
			               strpbrk(text, "smhdwy") != NULL
			           ? -EDOM
			           : -EINVAL;
		a->opt[slot].n = ms;
		break;
	}
	a->opt[slot].given = given;
	a->opt[slot].text = text;
	return 0;
}

/* The row an argument "--name[=value]" names: exactly, or by a prefix
 * no other row shares. */
static int
find_long(const struct rows *r, const char *arg, size_t n, char *cause,
          size_t causelen)
{
	size_t i, pos;
	int found = -1, count = 0;

	for (i = 0; i < r->n; i++)
		if (strlen(r->row[i]->name) == n &&
		    strncmp(r->row[i]->name, arg, n) == 0)
			return (int)i;
	for (i = 0; i < r->n; i++)
		if (strncmp(r->row[i]->name, arg, n) == 0) {
			found = (int)i;
			count++;
		}
	if (count == 1)
		return found;
	if (count == 0) {
		snprintf(cause, causelen, "unknown option '--%.*s'", (int)n,
		         arg);
		return -EINVAL;
	}
	pos = (size_t)snprintf(cause, causelen,
	                       "option '--%.*s' is ambiguous (", (int)n, arg);
	for (i = 0; i < r->n && pos < causelen; i++)
		if (strncmp(r->row[i]->name, arg, n) == 0) {
			snprintf(cause + pos, causelen - pos, "%s--%s",
			         cause[pos - 1] == '(' ? "" : ", ",
			         r->row[i]->name);
			pos += strlen(cause + pos);
		}
	if (pos + 1 < causelen)
		snprintf(cause + pos, causelen - pos, ")");
	return -EINVAL;
}

static int
find_letter(const struct rows *r, char letter)
{
	size_t i;

	for (i = 0; i < r->n; i++)
		if (r->row[i]->letter != 0 && r->row[i]->letter == letter)
			return (int)i;
	return -1;
}

/* One option and its value (NULL for a flag); 1 for --help. */
static int
take(const struct rows *r, size_t i, const char *text, struct cli *cli,
     struct cli_args *a, char *cause, size_t causelen)
{
	const struct cli_option *o = r->row[i];
	char what[128];
	unsigned long long v;
	int rc;

	if (i >= r->nown) {
		if (strcmp(o->name, "help") == 0)
			return 1;
		if (strcmp(o->name, "json") == 0)
			cli->json = 1;
		else if (strcmp(o->name, "socket") == 0)
			cli->socket = text;
		return 0;
	}
	rc = set_value(o, text != NULL ? text : "", a->opt[i].given + 1, a, i);
	if (rc == -ERANGE) {
		/* The number back with a unit: below 1024 as G, else M. */
		v = strtoull(text, NULL, 10);
		snprintf(cause, causelen,
		         "--%s %s is %s bytes: did you mean %s%s? (write "
		         "%sB for bytes)",
		         o->name, text, text, text, v < 1024 ? "G" : "M", text);
		return -EINVAL;
	}
	if (rc == -EDOM && o->type == CLI_LIMIT) {
		snprintf(cause, causelen,
		         "--%s %s has no unit: did you mean %sm? (90m, 2h, 1d)",
		         o->name, text, text);
		return -EINVAL;
	}
	if (rc == -EDOM) {
		/* "--begin 3s": from now, or 3 s past midnight? */
		snprintf(cause, causelen,
		         "--%s %s: did you mean +%s? (a duration from now "
		         "takes a +)",
		         o->name, text, text);
		return -EINVAL;
	}
	if (rc < 0) {
		snprintf(cause, causelen, "--%s takes %s, not '%s'", o->name,
		         explain(o, what, sizeof what), text);
		return -EINVAL;
	}
	return 0;
}

int
cli_parse(const struct cli_entry *e, int argc, char **argv, struct cli *cli,
          struct cli_args *a, char *cause, size_t causelen)
{
	struct rows r;
	char what[128];
	int i, k, rc, nops = 0;

	memset(a, 0, sizeof *a);
	a->entry = e;
	cause[0] = '\0';
	if (rows_init(&r, e) < 0) {
		snprintf(cause, causelen, "more than %d options in its entry",
		         CLI_MAX_OPTIONS);
		return -EINVAL;
	}
	/* The operands are gathered at the front of argv + 1, in order. */
	a->argv = argv + 1;
	for (i = 1; i < argc; i++) {
		const char *arg = argv[i], *eq, *text = NULL;
		size_t n;

		if (strcmp(arg, "--") == 0) {
			for (i++; i < argc; i++)
				a->argv[nops++] = argv[i];
			break;
		}
		if (arg[0] != '-' || arg[1] == '\0') {
			a->argv[nops++] = argv[i];
			if (e->flags & CLI_COMMAND_LINE) {
				for (i++; i < argc; i++)
					a->argv[nops++] = argv[i];
				break;
			}
			continue;
		}
		if (arg[1] == '-') {
			eq = strchr(arg + 2, '=');
			n = eq != NULL ? (size_t)(eq - arg - 2)
			               : strlen(arg + 2);
			if ((k = find_long(&r, arg + 2, n, cause, causelen)) <
			    0)
				return -EINVAL;
			if (r.row[k]->type == CLI_FLAG && eq != NULL) {
				snprintf(cause, causelen, "--%s takes no value",
				         r.row[k]->name);
				return -EINVAL;
			}
			if (r.row[k]->type != CLI_FLAG) {
				if (eq == NULL && i + 1 >= argc) {
					snprintf(cause, causelen,
					         "--%s needs %s",
					         r.row[k]->name,
					         explain(r.row[k], what,
					                 sizeof what));
					return -EINVAL;
				}
				text = eq != NULL ? eq + 1 : argv[++i];
			}
			rc = take(&r, (size_t)k, text, cli, a, cause, causelen);
			if (rc != 0)
				return rc > 0 ? CLI_ARGS_HELP : rc;
			continue;
		}
		/* -f, -fq, -lVALUE, -l VALUE */
		for (arg++; *arg != '\0'; arg++) {
			if ((k = find_letter(&r, *arg)) < 0) {
				snprintf(cause, causelen,
				         "unknown option '-%c'", *arg);
				return -EINVAL;
			}
			text = NULL;
			if (r.row[k]->type != CLI_FLAG) {
				if (arg[1] == '\0' && i + 1 >= argc) {
					snprintf(cause, causelen,
					         "-%c needs %s", *arg,
					         explain(r.row[k], what,
					                 sizeof what));
					return -EINVAL;
				}
				text = arg[1] != '\0' ? arg + 1 : argv[++i];
			}
			rc = take(&r, (size_t)k, text, cli, a, cause, causelen);
			if (rc != 0)
				return rc > 0 ? CLI_ARGS_HELP : rc;
			if (text != NULL)
				break;
		}
	}
	a->argc = nops;
	a->argv[nops] = NULL; /* argv[argc] was NULL: there is room */
	if (cli->json && e->json == NULL) {
		if (e->no_json != NULL)
			snprintf(cause, causelen, "has no --json (%s)",
			         e->no_json);
		else
			snprintf(cause, causelen, "has no --json");
		return -EINVAL;
	}
	if (nops < e->min_operands) {
		if (e->flags & CLI_COMMAND_LINE)
			snprintf(cause, causelen,
			         "no command given (put it after --)");
		else
			snprintf(cause, causelen, "missing %s",
			         e->operands != NULL ? e->operands : "operand");
		return -EINVAL;
	}
	if (e->max_operands >= 0 && nops > e->max_operands) {
		snprintf(cause, causelen, "unexpected argument '%s'",
		         a->argv[e->max_operands]);
		return -EINVAL;
	}
	return 0;
}

/* 1 when the command has option name. */
int
has_option(const struct cli_args *a, const char *name)
{
	struct rows r;
	size_t i;

	if (rows_init(&r, a->entry) == 0)
		for (i = 0; i < r.nown; i++)
			if (strcmp(r.row[i]->name, name) == 0)
				return 1;
	return 0;
}

/* The slot of an option the command asks for: one of its entry's rows. */
static size_t
slot_of(const struct cli_args *a, const char *name)
{
	struct rows r;
	size_t i;

	if (rows_init(&r, a->entry) == 0)
		for (i = 0; i < r.nown; i++)
			if (strcmp(r.row[i]->name, name) == 0)
				return i;
	/* A command asking for an option its entry does not have is a
	 * mistake in stageloadctl itself, never the user's. */
	fprintf(stderr, "%s: %s: internal error: no option --%s\n", prog,
	        a->entry->name, name);
	abort();
}

int
cli_has(const struct cli_args *a, const char *name)
{
	return a->opt[slot_of(a, name)].given;
}

const char *
cli_text(const struct cli_args *a, const char *name, const char *dflt)
{
	size_t s = slot_of(a, name);

	return a->opt[s].given ? a->opt[s].text : dflt;
}

int
cli_time_option(struct cli *cli, const struct cli_args *a, const char *name,
                const char *dflt, int64_t now, int64_t *ms)
{
	const char *t = cli_text(a, name, dflt);

	*ms = 0;
	if (t != NULL && units_parse_time_ms(t, now, ms) < 0)
		return cli_usage_error(cli,
		                       "--%s takes a time such as 1h, 7d, "
		                       "\"2026-11-30 05:00\" or an epoch, not "
		                       "'%s'",
		                       name, t);
	return -1;
}

int64_t
cli_number(const struct cli_args *a, const char *name, int64_t dflt)
{
	size_t s = slot_of(a, name);

	return a->opt[s].given ? a->opt[s].n : dflt;
}

double
cli_pct(const struct cli_args *a, const char *name, double dflt)
{
	size_t s = slot_of(a, name);

	return a->opt[s].given ? a->opt[s].pct : dflt;
}

/* ---- help ---- */

const char *
cli_option_label(const struct cli_option *o, char *buf, size_t len)
{
	if (o->letter != 0)
		snprintf(buf, len, "-%c, --%s%s%s", o->letter, o->name,
		         o->value != NULL ? " " : "",
		         o->value != NULL ? o->value : "");
	else
		snprintf(buf, len, "--%s%s%s", o->name,
		         o->value != NULL ? " " : "",
		         o->value != NULL ? o->value : "");
	return buf;
}

/* Append a word to the synopsis in f, wrapping before width. */
static void
synopsis_word(FILE *f, const char *word, size_t *col, size_t indent,
              size_t width)
{
	size_t n = strlen(word);

	if (width > 0 && *col + 1 + n > width) {
		fprintf(f, "\n%*s%s", (int)indent, "", word);
		*col = indent + n;
	} else {
		fprintf(f, " %s", word);
		*col += 1 + n;
	}
}

char *
cli_synopsis(const struct cli_entry *e, size_t indent, size_t width)
{
	const struct cli_option *tables[] = {e->options, e->more_options};
	const struct cli_option *o;
	char *text = NULL, word[128];
	size_t len = 0, col, t;
	FILE *f = open_memstream(&text, &len);

	if (f == NULL)
		return NULL;
	fprintf(f, "%s %s", prog, e->name);
	col = indent + strlen(prog) + 1 + strlen(e->name);
	indent = indent + strlen(prog) + 1 + strlen(e->name) + 1;
	for (t = 0; t < 2; t++)
		for (o = tables[t]; o != NULL && o->name != NULL; o++) {
			snprintf(word, sizeof word, "[--%s%s%s]", o->name,
			         o->value != NULL ? " " : "",
			         o->value != NULL ? o->value : "");
			synopsis_word(f, word, &col, indent, width);
		}
	if (e->json != NULL)
		synopsis_word(f, "[--json]", &col, indent, width);
	if (e->operands != NULL)
		synopsis_word(f, e->operands, &col, indent, width);
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

/* Help lines: the label in a column, the text beside it, its further
 * lines under the text. */
static void
print_option_line(FILE *f, const char *label, const char *help, int column)
{
	const char *p = help != NULL ? help : "";
	size_t n;

	n = strcspn(p, "\n");
	fprintf(f, "  %-*s  %.*s\n", column, label, (int)n, p);
	for (p += n; *p == '\n'; p += n) {
		p++;
		n = strcspn(p, "\n");
		fprintf(f, "  %-*s  %.*s\n", column, "", (int)n, p);
	}
}

static void
print_command(FILE *f, const struct cli_entry *e)
{
	const struct cli_option *tables[] = {e->options, e->more_options};
	const struct cli_option *o;
	char label[128], *syn = cli_synopsis(e, 7, 79);
	const char *ex;
	int column = 6;
	size_t t, n;

	fprintf(f, "usage: %s\n\n%s.\n", syn != NULL ? syn : e->name,
	        e->summary);
	free(syn);
	if (e->alias != NULL)
		fprintf(f, "Also: %s %s.\n", prog, e->alias);
	for (t = 0; t < 2; t++)
		for (o = tables[t]; o != NULL && o->name != NULL; o++) {
			n = strlen(cli_option_label(o, label, sizeof label));
			if ((int)n > column)
				column = (int)n;
		}
	if (column > 22)
		column = 22;
	if (e->options != NULL || e->more_options != NULL || e->json != NULL)
		fprintf(f, "\nOptions:\n");
	for (t = 0; t < 2; t++)
		for (o = tables[t]; o != NULL && o->name != NULL; o++) {
			cli_option_label(o, label, sizeof label);
			if ((int)strlen(label) > column) {
				fprintf(f, "  %s\n", label);
				print_option_line(f, "", o->help, column);
			} else {
				print_option_line(f, label, o->help, column);
			}
		}
	if (e->json != NULL)
		print_option_line(f, "--json", e->json, column);
	fprintf(f,
	        "\nGlobal options, before or after the command: --socket "
	        "PATH%s, -h, --help.\n",
	        e->json != NULL ? ", --json" : "");
	if ((ex = cli_examples(e->name)) != NULL) {
		fprintf(f, "\nExamples:\n");
		for (; *ex != '\0'; ex += n + (ex[n] == '\n')) {
			n = strcspn(ex, "\n");
			fprintf(f, "  %s %.*s\n", prog, (int)n, ex);
		}
	}
}

static void
print_overview(FILE *f)
{
	const struct cli_option *o;
	char name[64], label[96];
	size_t i;

	fprintf(f,
	        "usage: %s [--socket PATH] [--json] COMMAND [ARGS...]\n"
	        "\n"
	        "Talk to stageloadd, the memory-aware job queue.\n"
	        "\n"
	        "Commands:\n",
	        prog);
	for (i = 0; cli_entries[i] != NULL; i++) {
		const struct cli_entry *e = cli_entries[i];
		if (e->alias != NULL)
			snprintf(name, sizeof name, "%s, %s", e->name,
			         e->alias);
		else
			snprintf(name, sizeof name, "%s", e->name);
		fprintf(f, "  %-12s %s\n", name, e->summary);
	}
	fprintf(f, "\nGlobal options (before or after the command):\n");
	for (o = cli_global_options; o->name != NULL; o++)
		print_option_line(f, cli_option_label(o, label, sizeof label),
		                  o->help, 13);
	fprintf(
	    f,
	    "  --version      print the version\n"
	    "  %s help COMMAND, or COMMAND --help: one command\n"
	    "  %s completions bash|zsh|fish: the shell's completions\n"
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
	    "See docs/cli.md and stageloadctl(1).\n",
	    prog, prog, prog, prog, prog, prog, prog, prog, prog);
}

void
cli_print_help(FILE *f, const struct cli_entry *e)
{
	if (e != NULL)
		print_command(f, e);
	else
		print_overview(f);
}
