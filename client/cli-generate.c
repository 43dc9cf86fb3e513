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

/* The date of the man pages (mdoc .Dd): when they last changed. */
#define STAGELOAD_MANDATE "December 1, 2026"

#define FOR_OPTIONS(e, t, o)                                                   \
	for ((t) = 0; (t) < 2; (t)++)                                          \
		for ((o) = (t) == 0 ? (e)->options : (e)->more_options;        \
		     (o) != NULL && (o)->name != NULL; (o)++)

/* ---- man page (mdoc(7), as OpenBSD's) ---- */

/*
 * Text for a text line of mdoc: backslashes escaped, each sentence on a
 * line of its own (mdoc wants it so), help lines joined, and nothing at
 * a line's start that roff would read as a request.
 */
static void
mdoc_text(FILE *f, const char *s)
{
	size_t col = 0, n;
	const char *p;

	while (*s != '\0') {
		while (*s == ' ' || *s == '\n')
			s++;
		for (n = 0; s[n] != '\0' && s[n] != ' ' && s[n] != '\n'; n++)
			;
		if (n == 0)
			break;
		/* A word past the 72nd column, or after a sentence's end,
		 * begins a line. */
		if (col > 0 && col + 1 + n > 72) {
			fputc('\n', f);
			col = 0;
		} else if (col > 0) {
			fputc(' ', f);
			col++;
		}
		if (col == 0 && (*s == '.' || *s == '\''))
			fputs("\\&", f);
		for (p = s; p < s + n; p++) {
			if (*p == '\\')
				fputs("\\e", f);
			else
				fputc(*p, f);
		}
		col += n;
		s += n;
		/* (not after "e.g." and "i.e.", which end no sentence) */
		if (s[-1] == '.' && *s == ' ' &&
		    !(n == 4 && (strncmp(s - 4, "e.g.", 4) == 0 ||
		                 strncmp(s - 4, "i.e.", 4) == 0))) {
			fputc('\n', f);
			col = 0;
		}
	}
}

/* One word as a macro argument: quoted when it has a space. */
static void
mdoc_arg(FILE *f, const char *s)
{
	int quote = strpbrk(s, " \t\"") != NULL || *s == '\0';

	if (quote)
		fputc('"', f);
	for (; *s != '\0'; s++) {
		if (*s == '"')
			fputs("\\(dq", f);
		else if (*s == '\\')
			fputs("\\e", f);
		else
			fputc(*s, f);
	}
	if (quote)
		fputc('"', f);
}

/* The operands of an entry ("ID...", "-- CMD [ARGS...]") as macros on
 * the current line. */
static void
mdoc_operands(FILE *f, const char *ops)
{
	char word[128];
	const char *p = ops;
	size_t n;

	while (*p != '\0') {
		while (*p == ' ')
			p++;
		for (n = 0; p[n] != '\0' && p[n] != ' '; n++)
			;
		if (n == 0)
			break;
		snprintf(word, sizeof word, "%.*s", (int)n, p);
		p += n;
		if (strcmp(word, "--") == 0) {
			fputs(" Fl -", f);
			continue;
		}
		/* "[X]" and "[X [Y]]": each "[" opens an Op, which runs to the
		 * end of the line, so the "]"s that close them go. */
		while (word[0] == '[') {
			fputs(" Op", f);
			memmove(word, word + 1, strlen(word));
		}
		n = strlen(word);
		while (n > 0 && word[n - 1] == ']')
			word[--n] = '\0';
		if (n > 3 && strcmp(word + n - 3, "...") == 0) {
			word[n - 3] = '\0';
			fprintf(f, " Ar %s No ...", word);
		} else {
			fprintf(f, " Ar %s", word);
		}
	}
}

static void
mdoc_option_head(FILE *f, const struct cli_option *o)
{
	fputs(".It", f);
	if (o->letter != 0)
		fprintf(f, " Fl %c ,", o->letter);
	fprintf(f, " Fl -%s", o->name);
	if (o->value != NULL) {
		fputs(" Ar ", f);
		mdoc_arg(f, o->value);
	}
	fputc('\n', f);
}

static void
mdoc_option(FILE *f, const struct cli_option *o)
{
	mdoc_option_head(f, o);
	mdoc_text(f, o->help);
	fputc('\n', f);
}

/* A command's synopsis: its name, its options as [--name VALUE], its
 * operands. */
static void
mdoc_synopsis(FILE *f, const struct cli_entry *e)
{
	const struct cli_option *o;
	size_t t;

	fprintf(f, ".Nm\n.Cm %s\n", e->name);
	FOR_OPTIONS(e, t, o)
	{
		fprintf(f, ".Op Fl -%s", o->name);
		if (o->value != NULL) {
			fputs(" Ar ", f);
			mdoc_arg(f, o->value);
		}
		fputc('\n', f);
	}
	if (e->json != NULL)
		fputs(".Op Fl -json\n", f);
	if (e->operands != NULL) {
		/* The line begins with its first macro. */
		char *line = NULL;
		size_t len = 0;
		FILE *m = open_memstream(&line, &len);
		if (m != NULL) {
			mdoc_operands(m, e->operands);
			fclose(m);
			if (line != NULL && line[0] == ' ')
				fprintf(f, ".%s\n", line + 1);
			free(line);
		}
	}
}

/* Every command's examples, as --help shows them, in a literal display
 * (no word in it is read as a macro). */
static void
man_examples(FILE *f)
{
	const struct cli_entry *e;
	const char *ex;
	size_t i, n;

	fputs(".Sh EXAMPLES\n"
	      ".Bd -literal -offset indent\n",
	      f);
	for (i = 0; (e = cli_entries[i]) != NULL; i++)
		for (ex = cli_examples(e->name); ex != NULL && *ex != '\0';
		     ex += n + (ex[n] == '\n')) {
			n = strcspn(ex, "\n");
			fprintf(f, "stageloadctl %.*s\n", (int)n, ex);
		}
	fputs(".Ed\n", f);
}

static void
man_page(FILE *f)
{
	const struct cli_entry *e;
	const struct cli_option *o;
	size_t i, t;

	fprintf(f,
	        ".\\\" Made by stageloadctl --generate man from its command "
	        "entries.\n"
	        ".Dd %s\n"
	        ".Dt STAGELOADCTL 1\n"
	        ".Os\n"
	        ".Sh NAME\n"
	        ".Nm stageloadctl\n"
	        ".Nd talk to stageloadd, the memory-aware job queue\n"
	        ".Sh SYNOPSIS\n"
	        ".Nm\n"
	        ".Op Fl -socket Ar PATH\n"
	        ".Op Fl -json\n"
	        ".Ar command\n"
	        ".Op Ar args ...\n"
	        ".Nm\n"
	        ".Cm completions\n"
	        ".Ar bash | zsh | fish\n",
	        STAGELOAD_MANDATE);
	for (i = 0; (e = cli_entries[i]) != NULL; i++)
		mdoc_synopsis(f, e);
	fputs(".Sh DESCRIPTION\n"
	      ".Nm\n"
	      "is the command-line client of\n"
	      ".Xr stageloadd 8 ,\n"
	      "which samples memory, queues jobs until memory is free\n"
	      "enough and kills jobs whose swap grows past their budget.\n"
	      "Global options may come before or after the command.\n"
	      "Sizes are powers of 1024\n"
	      ".Pq 8G is 8 GiB .\n"
	      ".Pp\n"
	      "The global options are:\n"
	      ".Bl -tag -width Ds\n",
	      f);
	for (o = cli_global_options; o->name != NULL; o++)
		mdoc_option(f, o);
	fputs(".It Fl -version\n"
	      "print the version\n"
	      ".It Fl -generate Ar kind\n"
	      "print this page\n"
	      ".Pq Cm man\n"
	      "or a shell's completions\n"
	      ".Pq Cm complete-bash , complete-zsh , complete-fish\n"
	      ".El\n"
	      ".Pp\n"
	      "The commands are:\n"
	      ".Bl -tag -width Ds\n",
	      f);
	for (i = 0; (e = cli_entries[i]) != NULL; i++) {
		fprintf(f, ".It Cm %s", e->name);
		if (e->alias != NULL)
			fprintf(f, " , Cm %s", e->alias);
		fputc('\n', f);
		mdoc_text(f, e->summary);
		fputs(".\n", f);
		if (e->options == NULL && e->more_options == NULL &&
		    e->json == NULL)
			continue;
		fputs(".Bl -tag -width Ds\n", f);
		FOR_OPTIONS(e, t, o)
		mdoc_option(f, o);
		if (e->json != NULL) {
			fputs(".It Fl -json\n", f);
			mdoc_text(f, e->json);
			fputc('\n', f);
		}
		fputs(".El\n", f);
	}
	fputs(".It Cm completions Ar shell\n"
	      "print the completions of\n"
	      ".Nm\n"
	      "for\n"
	      ".Ar shell :\n"
	      ".Cm bash , zsh\n"
	      "or\n"
	      ".Cm fish .\n"
	      "For example,\n"
	      ".Ql source <(stageloadctl completions bash) .\n"
	      ".It Cm help Op Ar command\n"
	      "the usage of\n"
	      ".Nm\n"
	      "or of one command.\n"
	      ".El\n"
	      ".Sh ENVIRONMENT\n"
	      ".Bl -tag -width Ds\n"
	      ".It Ev STAGELOAD_SOCKET\n"
	      "the daemon's socket when\n"
	      ".Fl -socket\n"
	      "is not given\n"
	      ".It Ev NO_COLOR\n"
	      "no colours in\n"
	      ".Cm top\n"
	      ".El\n"
	      ".Sh FILES\n"
	      ".Bl -tag -width Ds\n"
	      ".It Pa /var/run/stageload.sock\n"
	      "the system daemon's socket\n"
	      ".El\n"
	      ".Sh EXIT STATUS\n"
	      "0 success; 1 the daemon refused or failed the request, or\n"
	      ".Cm doctor\n"
	      "found a failed check; 2 usage\n"
	      ".Pq an unknown command or option, a bad value ;\n"
	      "69 the daemon is unavailable; 76 it speaks another protocol\n"
	      "version; 77 permission denied.\n"
	      ".Cm run , guard\n"
	      "and\n"
	      ".Cm wait\n"
	      "exit with the job's status: its own code, 128+N for signal N,\n"
	      "124 killed for its swap budget, 125 cancelled before it ran,\n"
	      "126 could not be started, 127 command not found, 123 lost.\n",
	      f);
	man_examples(f);
	fputs(".Sh SEE ALSO\n"
	      ".Xr stageload.conf 5 ,\n"
	      ".Xr stageloadd 8\n"
	      ".Pp\n"
	      "docs/cli.md in the stageload sources is the full manual.\n",
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
	} else if (o->type == CLI_ID) {
		fputs("_stageloadctl_ids\n", f);
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
	      /* Job ids: those status lists, of the daemon the command
	       * line names (sock, of _stageloadctl). */
	      "_stageloadctl_ids() {\n"
	      "\tlocal ids\n"
	      "\tids=$(command stageloadctl ${sock:+--socket \"$sock\"} "
	      "status --all -o id 2>/dev/null | tail -n +2)\n"
	      "\tCOMPREPLY=($(compgen -W \"$ids\" -- \"$cur\"))\n"
	      "}\n"
	      "_stageloadctl() {\n"
	      "\tlocal cur=${COMP_WORDS[COMP_CWORD]} "
	      "prev=${COMP_WORDS[COMP_CWORD-1]} cmd= sock= i\n"
	      "\tCOMPREPLY=()\n"
	      "\tfor ((i = 1; i < COMP_CWORD; i++)); do\n"
	      "\t\tcase ${COMP_WORDS[i]} in\n"
	      "\t\t--socket) ((i++)); sock=${COMP_WORDS[i]} ;;\n"
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
	      "\t\tCOMPREPLY=($(compgen -W 'help completions --socket --json "
	      "--help --version",
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
	fputs("' -- \"$cur\")) ;;\n"
	      "\tcompletions)\n"
	      "\t\tCOMPREPLY=($(compgen -W 'bash zsh fish' -- \"$cur\")) ;;\n",
	      f);
	for (i = 0; (e = cli_entries[i]) != NULL; i++) {
		fprintf(f, "\t%s%s%s)\n", e->name, e->alias != NULL ? "|" : "",
		        e->alias != NULL ? e->alias : "");
		if (e->flags & CLI_COMMAND_LINE)
			/* after the options, a command line: the shell's own
			 * completion */
			fputs("\t\t[[ $cur == -* ]] || { compopt -o default; "
			      "return; }\n",
			      f);
		else if (e->operands != NULL &&
		         strncmp(e->operands + (e->operands[0] == '['), "ID",
		                 2) == 0)
			/* an operand: the job ids there are */
			fputs("\t\t[[ $cur == -* ]] || { _stageloadctl_ids; "
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
	fputs("\t\t'completions:print the completions for bash, zsh or fish'\n"
	      "\t\t'help:the usage of stageloadctl or of a command'\n"
	      "\t)\n"
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
	      "\t\tcompletions) _values shell bash zsh fish ;;\n"
	      "\t\tesac ;;\n"
	      "\tesac\n"
	      "}\n"
	      "_stageloadctl \"$@\"\n",
	      f);
}

/* ---- fish ---- */

/* Text inside a single-quoted fish string, its lines joined. */
static void
fish_text(FILE *f, const char *s)
{
	for (; *s != '\0'; s++) {
		if (*s == '\'' || *s == '\\')
			fputc('\\', f);
		fputc(*s == '\n' ? ' ' : *s, f);
	}
}

static void
fish_option(FILE *f, const char *cond, const struct cli_option *o)
{
	const char *p;

	fprintf(f, "complete -c stageloadctl -n '%s' -l %s", cond, o->name);
	if (o->letter != 0)
		fprintf(f, " -s %c", o->letter);
	if (o->type == CLI_CHOICE) {
		fputs(" -x -a '", f);
		for (p = o->value; *p != '\0'; p++)
			fputc(*p == '|' ? ' ' : *p, f);
		fputc('\'', f);
	} else if (o->type == CLI_TEXT && o->value != NULL &&
	           (strcmp(o->value, "PATH") == 0 ||
	            strcmp(o->value, "FILE") == 0)) {
		fputs(" -r -F", f);
	} else if (o->type != CLI_FLAG) {
		fputs(" -x", f);
	}
	fputs(" -d '", f);
	fish_text(f, o->help);
	fputs("'\n", f);
}

static void
fish(FILE *f)
{
	const struct cli_entry *e;
	const struct cli_option *o;
	char cond[256];
	size_t i, t;

	fputs("# fish completion for stageloadctl, made by stageloadctl "
	      "--generate complete-fish\n"
	      "complete -c stageloadctl -f\n",
	      f);
	/* --json where the command has a JSON form (below), or before it */
	for (o = cli_global_options; o->name != NULL; o++)
		fish_option(f,
		            strcmp(o->name, "json") == 0
		                ? "__fish_use_subcommand"
		                : "true",
		            o);
	fputs("complete -c stageloadctl -n __fish_use_subcommand -l version "
	      "-d 'print the version'\n"
	      "complete -c stageloadctl -n __fish_use_subcommand -a help "
	      "-d 'the usage of stageloadctl or of a command'\n"
	      "complete -c stageloadctl -n __fish_use_subcommand -a "
	      "completions -d 'print the completions for bash, zsh or "
	      "fish'\n"
	      "complete -c stageloadctl -n '__fish_seen_subcommand_from "
	      "completions' -a 'bash zsh fish'\n",
	      f);
	for (i = 0; (e = cli_entries[i]) != NULL; i++) {
		fprintf(f,
		        "complete -c stageloadctl -n __fish_use_subcommand -a "
		        "%s -d '",
		        e->name);
		fish_text(f, e->summary);
		fputs("'\n", f);
		if (e->alias != NULL) {
			fprintf(f,
			        "complete -c stageloadctl -n "
			        "__fish_use_subcommand -a %s -d '",
			        e->alias);
			fish_text(f, e->summary);
			fputs("'\n", f);
		}
		fprintf(
		    f,
		    "complete -c stageloadctl -n '__fish_seen_subcommand_from "
		    "help' -a %s\n",
		    e->name);
		snprintf(cond, sizeof cond,
		         "__fish_seen_subcommand_from %s%s%s", e->name,
		         e->alias != NULL ? " " : "",
		         e->alias != NULL ? e->alias : "");
		FOR_OPTIONS(e, t, o)
		fish_option(f, cond, o);
		if (e->json != NULL)
			fprintf(f,
			        "complete -c stageloadctl -n '%s' -l json -d "
			        "'machine-readable output'\n",
			        cond);
		if (e->flags & CLI_COMMAND_LINE)
			/* after the options, a command line: files and
			 * commands, as fish completes them */
			fprintf(f,
			        "complete -c stageloadctl -n '%s' -F -a "
			        "'(__fish_complete_subcommand --fcs-skip=2)'\n",
			        cond);
	}
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
	else if (strcmp(kind, "complete-fish") == 0)
		fish(f);
	else
		return -EINVAL;
	return 0;
}
