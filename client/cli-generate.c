/*
 * stageloadctl --generate KIND: the man page and the shell completions,
 * made from the command entries (cli-cmd.c), so they can never list an
 * option the commands do not take or miss one they do. The build runs it
 * to install them (CMakeLists.txt); packagers can run it too.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "version.h"

#define FOR_OPTIONS(e, t, o)                                                   \
	for ((t) = 0; (t) < 2; (t)++)                                          \
		for ((o) = (t) == 0 ? (e)->options : (e)->more_options;        \
		     (o) != NULL && (o)->name != NULL; (o)++)

/* ---- man page (man(7) macros) ---- */

/* Text for roff: backslashes and dashes escaped, help lines joined. */
static void
roff(FILE *f, const char *s)
{
	for (; *s != '\0'; s++) {
		if (*s == '\\')
			fputs("\\e", f);
		else if (*s == '-')
			fputs("\\-", f);
		else if (*s == '\n')
			fputc(' ', f);
		else
			fputc(*s, f);
	}
}

static void
man_option(FILE *f, const struct cli_option *o)
{
	fputs(".TP\n", f);
	if (o->letter != 0)
		fprintf(f, "\\fB\\-%c\\fR, ", o->letter);
	fputs("\\fB\\-\\-", f);
	roff(f, o->name);
	fputs("\\fR", f);
	if (o->value != NULL) {
		fputs(" \\fI", f);
		roff(f, o->value);
		fputs("\\fR", f);
	}
	fputc('\n', f);
	roff(f, o->help);
	fputc('\n', f);
}

static void
man_page(FILE *f)
{
	const struct cli_entry *e;
	const struct cli_option *o;
	char *syn;
	size_t i, t;

	fprintf(f,
	        ".\\\" Made by stageloadctl --generate man from its command "
	        "entries.\n"
	        ".TH STAGELOADCTL 1 \"\" \"stageload %s\" \"User Commands\"\n"
	        ".SH NAME\n"
	        "stageloadctl \\- talk to stageloadd, the memory\\-aware job "
	        "queue\n"
	        ".SH SYNOPSIS\n"
	        ".nf\n"
	        "\\fBstageloadctl\\fR [\\-\\-socket \\fIPATH\\fR] [\\-\\-json] "
	        "\\fICOMMAND\\fR [\\fIARGS\\fR...]\n",
	        STAGELOAD_VERSION);
	for (i = 0; (e = cli_entries[i]) != NULL; i++) {
		syn = cli_synopsis(e, 0, 0);
		if (syn != NULL)
			roff(f, syn);
		fputc('\n', f);
		free(syn);
	}
	fputs(".fi\n"
	      ".SH DESCRIPTION\n"
	      "\\fBstageloadctl\\fR is the command\\-line client of "
	      "\\fBstageloadd\\fR, which samples memory, queues jobs until "
	      "memory is free enough and kills jobs whose swap grows past "
	      "their budget. Global options may come before or after the "
	      "command. Sizes are powers of 1024 (8G is 8 GiB).\n"
	      ".SH GLOBAL OPTIONS\n",
	      f);
	for (o = cli_global_options; o->name != NULL; o++)
		man_option(f, o);
	fputs(".TP\n\\fB\\-\\-version\\fR\nprint the version\n"
	      ".SH COMMANDS\n",
	      f);
	for (i = 0; (e = cli_entries[i]) != NULL; i++) {
		fputs(".SS ", f);
		roff(f, e->name);
		if (e->alias != NULL) {
			fputs(", ", f);
			roff(f, e->alias);
		}
		fputs("\n.B ", f);
		syn = cli_synopsis(e, 0, 0);
		if (syn != NULL)
			roff(f, syn);
		free(syn);
		fputs("\n.PP\n", f);
		roff(f, e->summary);
		fputs(".\n", f);
		FOR_OPTIONS(e, t, o)
		man_option(f, o);
		if (e->json != NULL) {
			fputs(".TP\n\\fB\\-\\-json\\fR\n", f);
			roff(f, e->json);
			fputc('\n', f);
		}
	}
	fputs(".SH EXIT STATUS\n"
	      "0 success; 1 the daemon refused or failed the request; 2 usage "
	      "(an unknown command or option, a bad value); 69 the daemon is "
	      "unavailable; 76 it speaks another protocol version; 77 "
	      "permission denied. \\fBrun\\fR, \\fBguard\\fR and "
	      "\\fBwait\\fR exit with the job's status: its own code, "
	      "128+N for signal N, 124 killed for its swap budget, 125 "
	      "cancelled before it ran, 126 could not be started, 127 "
	      "command not found, 123 lost.\n"
	      ".SH ENVIRONMENT\n"
	      ".TP\n.B STAGELOAD_SOCKET\n"
	      "the daemon's socket when \\-\\-socket is not given\n"
	      ".TP\n.B NO_COLOR\n"
	      "no colours in \\fBtop\\fR\n"
	      ".SH SEE ALSO\n"
	      "docs/cli.md in the stageload sources, which is the full "
	      "manual.\n",
	      f);
}

/* ---- bash ---- */

/* The options a command takes, as words for compgen. */
static void
bash_words(FILE *f, const struct cli_entry *e)
{
	const struct cli_option *o;
	size_t t;

	FOR_OPTIONS(e, t, o)
	{
		if (o->letter != 0)
			fprintf(f, "-%c ", o->letter);
		fprintf(f, "--%s ", o->name);
	}
	if (e->json != NULL)
		fputs("--json ", f);
	fputs("--socket --help", f);
}

/* What follows the option in prev: files, the choices, or nothing. */
static void
bash_value(FILE *f, const struct cli_option *o)
{
	const char *p;

	if (o->type == CLI_FLAG)
		return;
	fprintf(f, "\t--%s)\n\t\t", o->name);
	if (o->type == CLI_CHOICE) {
		fputs("COMPREPLY=($(compgen -W '", f);
		for (p = o->value; *p != '\0'; p++)
			fputc(*p == '|' ? ' ' : *p, f);
		fputs("' -- \"$cur\"))\n", f);
	} else if (o->type == CLI_TEXT && o->value != NULL &&
	           (strcmp(o->value, "PATH") == 0 ||
	            strcmp(o->value, "FILE") == 0)) {
		fputs("COMPREPLY=($(compgen -f -- \"$cur\"))\n", f);
	} else {
		fputs("COMPREPLY=()\n", f);
	}
	fputs("\t\treturn\n\t\t;;\n", f);
}

static void
bash(FILE *f)
{
	const struct cli_entry *e;
	const struct cli_option *o;
	const char *seen[128];
	size_t i, t, k, nseen = 0;

	fputs("# bash completion for stageloadctl, made by stageloadctl "
	      "--generate complete-bash\n"
	      "_stageloadctl() {\n"
	      "\tlocal cur=${COMP_WORDS[COMP_CWORD]} "
	      "prev=${COMP_WORDS[COMP_CWORD-1]} cmd= i\n"
	      "\tCOMPREPLY=()\n"
	      "\tfor ((i = 1; i < COMP_CWORD; i++)); do\n"
	      "\t\tcase ${COMP_WORDS[i]} in\n"
	      "\t\t--socket) ((i++)) ;;\n"
	      "\t\t-*) ;;\n"
	      "\t\t*) cmd=${COMP_WORDS[i]}; break ;;\n"
	      "\t\tesac\n"
	      "\tdone\n"
	      "\tcase $prev in\n",
	      f);
	/* Every option that takes a value, once: two commands may share a
	 * name, and then the value is of the same kind. */
	for (o = cli_global_options; o->name != NULL; o++) {
		seen[nseen++] = o->name;
		bash_value(f, o);
	}
	for (i = 0; (e = cli_entries[i]) != NULL; i++)
		FOR_OPTIONS(e, t, o)
		{
			for (k = 0; k < nseen && strcmp(seen[k], o->name) != 0;
			     k++)
				;
			if (k < nseen || nseen == sizeof seen / sizeof seen[0])
				continue;
			seen[nseen++] = o->name;
			bash_value(f, o);
		}
	fputs("\tesac\n"
	      "\tcase $cmd in\n"
	      "\t'')\n"
	      "\t\tCOMPREPLY=($(compgen -W 'help --socket --json --help "
	      "--version",
	      f);
	for (i = 0; (e = cli_entries[i]) != NULL; i++) {
		fprintf(f, " %s", e->name);
		if (e->alias != NULL)
			fprintf(f, " %s", e->alias);
	}
	fputs("' -- \"$cur\")) ;;\n"
	      "\thelp)\n"
	      "\t\tCOMPREPLY=($(compgen -W '",
	      f);
	for (i = 0; (e = cli_entries[i]) != NULL; i++)
		fprintf(f, "%s%s", i > 0 ? " " : "", e->name);
	fputs("' -- \"$cur\")) ;;\n", f);
	for (i = 0; (e = cli_entries[i]) != NULL; i++) {
		fprintf(f, "\t%s%s%s)\n", e->name, e->alias != NULL ? "|" : "",
		        e->alias != NULL ? e->alias : "");
		if (e->flags & CLI_COMMAND_LINE)
			/* after the options, a command line: the shell's own
			 * completion */
			fputs("\t\t[[ $cur == -* ]] || { compopt -o default; "
			      "return; }\n",
			      f);
		fputs("\t\tCOMPREPLY=($(compgen -W '", f);
		bash_words(f, e);
		fputs("' -- \"$cur\")) ;;\n", f);
	}
	fputs("\tesac\n"
	      "}\n"
	      "complete -F _stageloadctl stageloadctl\n",
	      f);
}

/* ---- zsh ---- */

/* Text inside a single-quoted _arguments spec's [description], its
 * lines joined. */
static void
zsh_text(FILE *f, const char *s)
{
	for (; *s != '\0'; s++) {
		if (*s == '\'')
			fputs("'\\''", f);
		else if (*s == '\n')
			fputc(' ', f);
		else if (*s == '[' || *s == ']' || *s == ':' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else
			fputc(*s, f);
	}
}

static void
zsh_option(FILE *f, const struct cli_option *o)
{
	const char *p;

	fputs("\t\t\t", f);
	if (o->letter != 0)
		fprintf(f, "'(-%c --%s)'{-%c%s,--%s%s}'", o->letter, o->name,
		        o->letter, o->type == CLI_FLAG ? "" : "+", o->name,
		        o->type == CLI_FLAG ? "" : "=");
	else
		fprintf(f, "'--%s%s", o->name, o->type == CLI_FLAG ? "" : "=");
	fputc('[', f);
	zsh_text(f, o->help);
	fputc(']', f);
	if (o->type == CLI_CHOICE) {
		fprintf(f, ":%s:(", o->name);
		for (p = o->value; *p != '\0'; p++)
			fputc(*p == '|' ? ' ' : *p, f);
		fputc(')', f);
	} else if (o->type == CLI_TEXT && o->value != NULL &&
	           (strcmp(o->value, "PATH") == 0 ||
	            strcmp(o->value, "FILE") == 0)) {
		fputs(":file:_files", f);
	} else if (o->type != CLI_FLAG) {
		fprintf(f, ":%s: ", o->value != NULL ? o->value : o->name);
	}
	fputs("' \\\n", f);
}

static void
zsh(FILE *f)
{
	const struct cli_entry *e;
	const struct cli_option *o;
	size_t i, t;

	fputs("#compdef stageloadctl\n"
	      "# zsh completion for stageloadctl, made by stageloadctl "
	      "--generate complete-zsh\n"
	      "_stageloadctl() {\n"
	      "\tlocal curcontext=$curcontext state line\n"
	      "\tlocal -a commands\n"
	      "\tcommands=(\n",
	      f);
	for (i = 0; (e = cli_entries[i]) != NULL; i++) {
		fprintf(f, "\t\t'%s:", e->name);
		zsh_text(f, e->summary);
		fputs("'\n", f);
		if (e->alias != NULL) {
			fprintf(f, "\t\t'%s:", e->alias);
			zsh_text(f, e->summary);
			fputs("'\n", f);
		}
	}
	fputs("\t)\n"
	      "\t_arguments -C \\\n",
	      f);
	for (o = cli_global_options; o->name != NULL; o++)
		zsh_option(f, o);
	fputs("\t\t\t'--version[print the version]' \\\n"
	      "\t\t\t'1:command:->command' \\\n"
	      "\t\t\t'*::argument:->argument'\n"
	      "\tcase $state in\n"
	      "\tcommand) _describe -t commands command commands ;;\n"
	      "\targument)\n"
	      "\t\tcase $words[1] in\n",
	      f);
	for (i = 0; (e = cli_entries[i]) != NULL; i++) {
		fprintf(f, "\t\t%s%s%s)\n\t\t\t_arguments \\\n", e->name,
		        e->alias != NULL ? "|" : "",
		        e->alias != NULL ? e->alias : "");
		FOR_OPTIONS(e, t, o)
		zsh_option(f, o);
		for (o = cli_global_options; o->name != NULL; o++)
			if (strcmp(o->name, "json") != 0 || e->json != NULL)
				zsh_option(f, o);
		if (e->flags & CLI_COMMAND_LINE)
			fputs("\t\t\t'*::command:_normal' ;;\n", f);
		else if (e->operands != NULL)
			fprintf(f, "\t\t\t'*:%s: ' ;;\n", e->operands);
		else
			fputs("\t\t\t;;\n", f);
	}
	fputs("\t\thelp) _describe -t commands command commands ;;\n"
	      "\t\tesac ;;\n"
	      "\tesac\n"
	      "}\n"
	      "_stageloadctl \"$@\"\n",
	      f);
}

int
cli_generate(FILE *f, const char *kind)
{
	if (strcmp(kind, "man") == 0)
		man_page(f);
	else if (strcmp(kind, "complete-bash") == 0)
		bash(f);
	else if (strcmp(kind, "complete-zsh") == 0)
		zsh(f);
	else
		return -EINVAL;
	return 0;
}
