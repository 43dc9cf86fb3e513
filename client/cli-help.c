/*
 * What the help adds to a command's entry: its examples (COMMAND --help,
 * help COMMAND and the man page show them), and the command a mistyped
 * name was probably meant to be ("stauts": did you mean status?). Kept
 * apart from the entries so a command's code and its examples can change
 * without touching each other.
 */
#include <string.h>

#include "cli.h"

/* Each command's examples, one per line, without the program's name. */
static const struct {
	const char *name, *lines;
} examples[] = {
    {"info", "info\n"
             "info --json\n"},
    {"history", "history --since 24h --step 10m\n"
                "history --job 12\n"
                "history --since 2h --format csv > memory.csv\n"},
    {"meter", "meter --interval 1\n"
              "meter --interval 1 --pid 4242 --out trace.jsonl\n"},
    {"plot", "plot --since 8h -o memory.svg\n"
             "plot --job 12 -o job12.svg\n"
             "plot --trace trace.jsonl -o trace.svg\n"},
    {"top", "top\n"
            "top --minutes 30\n"},
    {"submit",
     "submit --name qwen --wait-free 40 --swap-budget 8G -- python gen.py\n"
     "submit --wait-free 30G --expect 20G -- python serve.py\n"
     "submit --after 12 --shell -- 'python eval.py > eval.txt'\n"},
    {"run", "guard --wait-free 40 --swap-budget 8G -- python generate.py\n"
            "run --retry-on-breach 2 --swap-budget 4G -- ./train.sh\n"},
    {"status", "status\n"
               "status --all --limit 10\n"
               "status -o id,user,state,reason\n"
               "status --mine --state queued,running\n"
               "status --name 'sweep-*' -o id,name,submitted,started,ended\n"},
    {"show", "show 12\n"
             "show --env 12\n"},
    {"cancel", "cancel 12\n"
               "cancel 12 13 14\n"
               "cancel --all\n"
               "cancel --name 'sweep-*' --state queued\n"},
    {"hold", "hold 12\n"},
    {"release", "release 12\n"},
    {"resubmit", "resubmit 12\n"},
    {"update", "update 12 --priority 10\n"
               "update 12 --wait-free 30G --swap-budget 8G\n"},
    {"wait", "wait 12\n"
             "wait --notify 12 13\n"
             "wait --all\n"},
    {"logs", "logs 12\n"
             "logs -f -n 20 12\n"
             "logs -f A42\n"},
    {"events", "events\n"
               "events -f --job 12\n"
               "events --since 1h --user ana\n"
               "events --mine --state killed,failed\n"},
    {"report", "report --since 7d\n"
               "report --by name --since 30d --csv > month.csv\n"
               "report --mine --name 'gen-*' --json\n"},
    {"stage", "stage load\n"
              "stage --job 12 generate\n"},
    {"doctor", "doctor\n"
               "doctor --json\n"},
};

const char *
cli_examples(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof examples / sizeof examples[0]; i++)
		if (strcmp(examples[i].name, name) == 0)
			return examples[i].lines;
	return NULL;
}

/* The Damerau-Levenshtein distance (adjacent swaps count one) of a and
 * b, or more than limit when it is larger than that. */
static size_t
distance(const char *a, const char *b, size_t limit)
{
	size_t la = strlen(a), lb = strlen(b), i, j, d[24][24], c;

	if (la >= 24 || lb >= 24)
		return limit + 1;
	for (i = 0; i <= la; i++)
		d[i][0] = i;
	for (j = 0; j <= lb; j++)
		d[0][j] = j;
	for (i = 1; i <= la; i++)
		for (j = 1; j <= lb; j++) {
			c = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
			if (d[i - 1][j] + 1 < c)
				c = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < c)
				c = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
			    a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < c)
				c = d[i - 2][j - 2] + 1;
			d[i][j] = c;
		}
	return d[la][lb];
}

/* Each name a command is known by: the entries' names and aliases, then
 * main()'s own help and completions; NULL after the last. */
static const char *
nth_name(size_t n)
{
	static const char *const more[] = {"help", "completions"};
	size_t i;

	for (i = 0; cli_entries[i] != NULL; i++) {
		if (n == 0)
			return cli_entries[i]->name;
		n--;
		if (cli_entries[i]->alias != NULL && n-- == 0)
			return cli_entries[i]->alias;
	}
	return n < sizeof more / sizeof more[0] ? more[n] : NULL;
}

const char *
cli_suggest_command(const char *typed)
{
	const char *best = NULL, *name, *prefixed = NULL;
	/* One edit for a short name (two would make "bogus" "logs"), two for
	 * a long one. */
	size_t n, d, best_d, nprefixed = 0, len = strlen(typed),
	                     limit = len >= 7 ? 2 : 1;

	best_d = limit + 1;
	for (n = 0; (name = nth_name(n)) != NULL; n++) {
		/* "stat": the start of one name only */
		if (len >= 3 && strncmp(name, typed, len) == 0) {
			prefixed = name;
			nprefixed++;
		}
		if ((d = distance(typed, name, limit)) < best_d) {
			best_d = d;
			best = name;
		}
	}
	if (best_d <= limit)
		return best;
	return nprefixed == 1 ? prefixed : NULL;
}
