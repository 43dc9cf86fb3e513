/*
 * stageloadctl helpers that do not talk to the daemon: exit statuses,
 * parsing of arguments, and formatting of sizes, times, jobs, tables and
 * sparklines. Kept apart from the commands so they are unit-tested.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "array-spec.h"
#include "cli.h"
#include "text.h"
#include "units.h"

int
cli_exit_for_error(int code)
{
	if (sl_error_is_connection(code))
		return EXIT_UNAVAILABLE;
	switch (code) {
	case SL_E_PERM:
		return EXIT_NOPERM;
	case SL_E_VERSION:
	case SL_E_HELLO:
		return EXIT_PROTOCOL;
	}
	return EXIT_ERR;
}

int
cli_job_status(const struct sl_job *j)
{
	if (strcmp(j->state, "exited") == 0) {
		if (j->signal > 0)
			return 128 + j->signal;
		return j->has_exit_code ? (j->exit_code & 0xff) : EXIT_ERR;
	}
	if (strcmp(j->state, "killed") == 0) {
		if (strcmp(j->end_reason, "swap_budget") == 0 ||
		    strcmp(j->end_reason, "time_limit") == 0)
			return EXIT_JOB_BUDGET;
		return 128 + (j->signal > 0 ? j->signal : SIGTERM);
	}
	if (strcmp(j->state, "cancelled") == 0)
		return EXIT_JOB_NOTRUN;
	if (strcmp(j->state, "failed") == 0)
		return EXIT_JOB_CANNOTRUN;
	if (strcmp(j->state, "lost") == 0)
		return EXIT_JOB_LOST;
	return EXIT_ERR; /* not ended: the caller should not ask */
}

int
cli_parse_int(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	if (s == NULL || *s == '\0')
		return -EINVAL;
	errno = 0;
	v = strtol(s, &end, 10);
	if (*end != '\0')
		return -EINVAL;
	if (errno == ERANGE || v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int
cli_parse_id(const char *s, int64_t *id)
{
	long v;
	int rc;

	if (s != NULL && s[0] == '#')
		s++;
	rc = cli_parse_int(s, 1, 0x7fffffffL, &v);
	if (rc == 0)
		*id = v;
	return rc;
}

int
cli_check_job_refs(struct cli *cli, int argc, char **argv)
{
	int64_t id, index;
	int i, is_array;

	for (i = 0; i < argc; i++)
		if (cli_parse_id(argv[i], &id) < 0 &&
		    array_id_parse(argv[i], &id, &is_array, &index) != 0)
			return cli_usage_error(
			    cli,
			    "bad job id '%s' (give 42, an "
			    "array A42 or its element A42_3)",
			    argv[i]);
	return 0;
}

int
cli_job_refs(struct cli *cli, int argc, char **argv, int64_t **ids, int *n)
{
	int64_t id = 0, aid, *got, *v = NULL, *nv;
	size_t k, len = 0, cap = 0;
	int i, rc;

	*ids = NULL;
	*n = 0;
	if ((rc = cli_check_job_refs(cli, argc, argv)) != 0 ||
	    (rc = cli_connect(cli)) != 0)
		return rc;
	for (i = 0; i < argc; i++) {
		if (cli_parse_id(argv[i], &id) == 0) {
			got = NULL;
			k = 1;
		} else if (sl_resolve(cli->client, argv[i], &got, &k, &aid) <
		           0) {
			free(v);
			return cli_fail(cli);
		}
		if (len + k > cap) {
			cap = (len + k) * 2;
			if ((nv = realloc(v, cap * sizeof *v)) == NULL) {
				sl_free(got);
				free(v);
				cli_error("out of memory");
				return EXIT_ERR;
			}
			v = nv;
		}
		if (got == NULL)
			v[len++] = id;
		else {
			memcpy(v + len, got, k * sizeof *v);
			len += k;
			sl_free(got);
		}
	}
	*ids = v;
	*n = (int)len;
	return -1;
}

int
cli_parse_pct(const char *s, double *out)
{
	char *end;
	double v;

	if (s == NULL || *s == '\0')
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (end == s || (*end != '\0' && strcmp(end, "%") != 0))
		return -EINVAL;
	if (errno == ERANGE || isnan(v) || v < 0 || v > 100)
		return -ERANGE;
	*out = v;
	return 0;
}

const char *
cli_duration(int64_t ms, char *buf, size_t len)
{
	if (ms < 0)
		ms = 0;
	return units_format_duration(ms, buf, len);
}

const char *
cli_time(int64_t ms, int with_ms, char *buf, size_t len)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	size_t n;

	if (ms <= 0 || localtime_r(&t, &tm) == NULL) {
		snprintf(buf, len, "-");
		return buf;
	}
	n = strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm);
	if (with_ms && n > 0 && n < len)
		snprintf(buf + n, len - n, ".%03d", (int)(ms % 1000));
	return buf;
}

const char *
cli_clock(int64_t ms, int64_t now, char *buf, size_t len)
{
	time_t t = (time_t)(ms / 1000), n = (time_t)(now / 1000);
	struct tm tm, today;

	if (ms <= 0 || localtime_r(&t, &tm) == NULL ||
	    localtime_r(&n, &today) == NULL) {
		snprintf(buf, len, "-");
		return buf;
	}
	if (tm.tm_year == today.tm_year && tm.tm_yday == today.tm_yday)
		strftime(buf, len, "%H:%M:%S", &tm);
	else
		strftime(buf, len, "%Y-%m-%d %H:%M", &tm);
	return buf;
}

/* A member of an attempt's record (PROTOCOL.md, Job: attempts): 0 when
 * null or missing. */
static int64_t
attempt_ms(const cJSON *a, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(a, name);

	return cJSON_IsNumber(v) && v->valuedouble > 0 ? (int64_t)v->valuedouble
	                                               : 0;
}

/* What attempt a waited in the queue: from queued until admitted, or
 * until it ended (cancelled while queued), or until now. */
static int64_t
attempt_waited(const cJSON *a, int64_t now)
{
	int64_t q = attempt_ms(a, "queued_at_ms"),
	        end = attempt_ms(a, "admitted_at_ms");

	if (end == 0)
		end = attempt_ms(a, "ended_at_ms");
	if (end == 0)
		end = now;
	return q > 0 && end > q ? end - q : 0;
}

/* The Job's attempts, or NULL (a daemon from before them). */
static const cJSON *
job_attempts(const struct sl_job *j)
{
	const cJSON *a =
	    j->obj != NULL
	        ? cJSON_GetObjectItemCaseSensitive(j->obj, "attempts")
	        : NULL;

	return cJSON_IsArray(a) && cJSON_GetArraySize(a) > 0 ? a : NULL;
}

void
cli_job_waited(const struct sl_job *j, int64_t now, char *buf, size_t len)
{
	const cJSON *attempts = job_attempts(j), *a;
	int64_t end, waited = 0;

	if (j->submitted_at_ms <= 0) {
		snprintf(buf, len, "-");
		return;
	}
	/* The time queued only, summed over attempts: never the run of an
	 * attempt a breach requeued. */
	if (attempts != NULL) {
		cJSON_ArrayForEach(a, attempts) waited +=
		    attempt_waited(a, now);
		cli_duration(waited, buf, len);
		return;
	}
	if (j->admitted_at_ms > 0)
		end = j->admitted_at_ms;
	else if (j->ended_at_ms > 0)
		end = j->ended_at_ms; /* cancelled while queued */
	else
		end = now;
	cli_duration(end - j->submitted_at_ms, buf, len);
}

void
cli_job_ran(const struct sl_job *j, int64_t now, char *buf, size_t len)
{
	int64_t end = j->ended_at_ms > 0 ? j->ended_at_ms : now;

	if (j->started_at_ms <= 0) {
		snprintf(buf, len, "-");
		return;
	}
	cli_duration(end - j->started_at_ms, buf, len);
}

void
cli_job_swap(const struct sl_job *j, char *buf, size_t len)
{
	char a[16], b[16];
	uint64_t growth =
	    sl_job_ended(j) ? j->swap_growth_peak_bytes : j->swap_growth_bytes;

	cli_size(growth, a, sizeof a);
	if (j->swap_budget_bytes > 0)
		cli_size(j->swap_budget_bytes, b, sizeof b);
	else
		snprintf(b, sizeof b, "-");
	snprintf(buf, len, "%s/%s", a, b);
}

void
cli_job_state(const struct sl_job *j, char *buf, size_t len)
{
	cli_state_words(j->state, j->position, j->exit_code, j->signal,
	                j->end_reason, buf, len);
}

/* A growable string for the paragraph. */
struct sbuf {
	char *s;
	size_t len, cap;
	int oom;
};

static void sb_add(struct sbuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
sb_add_safe(struct sbuf *b, const char *text)
{
	char *safe = cli_safe_dup(text);

	if (safe == NULL) {
		b->oom = 1;
		return;
	}
	sb_add(b, "%s", safe);
	free(safe);
}

static void
sb_add(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->oom)
		return;
	for (;;) {
		size_t room = b->cap - b->len;
		va_start(ap, fmt);
		n = vsnprintf(b->s != NULL ? b->s + b->len : NULL, room, fmt,
		              ap);
		va_end(ap);
		if (n < 0) {
			b->oom = 1;
			return;
		}
		if ((size_t)n < room) {
			b->len += (size_t)n;
			return;
		}
		size_t cap = (b->cap + (size_t)n + 1) * 2;
		char *p = realloc(b->s, cap);
		if (p == NULL) {
			b->oom = 1;
			return;
		}
		b->s = p;
		b->cap = cap;
	}
}

/* The state as the paragraph's first sentence says it: "is running",
 * "has exited", "was killed" (not "is exited"). */
static const char *
state_phrase(const char *state)
{
	static const struct {
		const char *state, *phrase;
	} phrases[] = {
	    {"exited", "has exited"},       {"killed", "was killed"},
	    {"cancelled", "was cancelled"}, {"failed", "failed to start"},
	    {"lost", "was lost"},
	};
	static char other[48];
	size_t i;

	for (i = 0; i < sizeof phrases / sizeof phrases[0]; i++)
		if (strcmp(state, phrases[i].state) == 0)
			return phrases[i].phrase;
	/* queued, admitted, running, and a state this client does not
	 * know */
	snprintf(other, sizeof other, "is %s", state);
	return other;
}

/* The Job's member that a job option sets, when above 0. */
static int
job_option_int(const struct sl_job *j, const char *option, int64_t *v)
{
	const char *param = cli_job_option_param(option);

	return param != NULL && sl_job_get_int(j, param, v) == 0 && *v > 0;
}

char *
cli_job_paragraph(const struct sl_job *j, int64_t now, const struct cli_wait *w)
{
	struct sbuf b = {0};
	char t[64], d[32], s1[16], s2[16], own[16];

	sb_add(&b, "Job %lld \"", (long long)j->id);
	sb_add_safe(&b, j->name);
	sb_add(&b, "\" of ");
	sb_add_safe(&b, j->user[0] != '\0' ? j->user : "?");
	if (j->attached)
		sb_add(&b, " (attached)");
	sb_add(&b, " %s", state_phrase(j->state));
	if (strcmp(j->state, "queued") == 0 && j->position > 0)
		sb_add(&b, " at position %d", j->position);
	if (j->attempt > 1)
		sb_add(&b, ", attempt %d of %d", j->attempt,
		       j->retry_on_breach + 1);
	sb_add(&b, ".\n");

	if (j->argv != NULL) {
		/* Quoted so that it can be pasted back into a shell. */
		char *cmd = cli_shell_command(j->argv);
		if (cmd == NULL)
			b.oom = 1;
		else
			sb_add(&b, "Command: %s\n", cmd);
		free(cmd);
	}
	if (j->cwd != NULL) {
		sb_add(&b, "Directory: ");
		sb_add_safe(&b, j->cwd);
		sb_add(&b, "\n");
	}
	{
		/* A Slurm task's job (docs/slurm.md): which task of which step.
		 */
		int64_t sj, ss, st;

		if (sl_job_get_int(j, "slurm_job_id", &sj) == 0 &&
		    sl_job_get_int(j, "slurm_step_id", &ss) == 0 &&
		    sl_job_get_int(j, "slurm_task_id", &st) == 0)
			sb_add(&b, "Slurm: job %lld, step %lld, task %lld.\n",
			       (long long)sj, (long long)ss, (long long)st);
	}
	{
		/* An array's element (docs/jobs.md, "Arrays"). */
		int64_t aid, ai, al;

		if (sl_job_get_int(j, "array_id", &aid) == 0 &&
		    sl_job_get_int(j, "array_index", &ai) == 0) {
			sb_add(&b, "Array: element A%lld_%lld of array A%lld",
			       (long long)aid, (long long)ai, (long long)aid);
			if (sl_job_get_int(j, "array_limit", &al) == 0)
				sb_add(&b,
				       ", at most %lld of it running at once",
				       (long long)al);
			sb_add(&b, ".\n");
		}
	}
	if (j->group[0] != '\0') {
		/* Its group (docs/jobs.md, "Groups"), whose limit it shares. */
		sb_add(&b, "Group: ");
		sb_add_safe(&b, j->group);
		sb_add(&b, ".\n");
	}

	sb_add(&b, "Submitted %s",
	       cli_time(j->submitted_at_ms, 0, t, sizeof t));
	if (j->wait_free_bytes > 0 && j->wait_free_pct > 0)
		sb_add(&b, "; waits for %s and %g%% free",
		       cli_size(j->wait_free_bytes, s1, sizeof s1),
		       j->wait_free_pct);
	else if (j->wait_free_bytes > 0)
		sb_add(&b, "; waits for %s free",
		       cli_size(j->wait_free_bytes, s1, sizeof s1));
	else
		sb_add(&b, "; waits for %g%% free", j->wait_free_pct);
	if (j->swap_budget_bytes > 0)
		sb_add(&b, ", swap budget %s",
		       cli_size(j->swap_budget_bytes, s1, sizeof s1));
	else
		sb_add(&b, ", no swap budget");
	if (j->expect_bytes > 0)
		sb_add(&b, ", expects %s",
		       cli_size(j->expect_bytes, s1, sizeof s1));
	if (j->expect_bytes > 0 && strcmp(j->expect_source, "learned") == 0)
		sb_add(&b, " (learned from %d run%s)", j->expect_runs,
		       j->expect_runs == 1 ? "" : "s");
	if (j->priority != 0)
		sb_add(&b, ", priority %d", j->priority);
	if (j->exclusive)
		sb_add(&b, ", exclusive");
	if (j->retry_on_breach > 0)
		sb_add(&b, ", %d retries on breach", j->retry_on_breach);
	{
		/* The time options, by their rows (proto/job-fields.h):
		 * the limits, and when it may begin while it has not. */
		int64_t v;

		if (job_option_int(j, "time", &v))
			sb_add(&b, ", time limit %s",
			       cli_duration(v, s1, sizeof s1));
		if (job_option_int(j, "time-per-attempt", &v))
			sb_add(&b, ", %s an attempt",
			       cli_duration(v, s1, sizeof s1));
		if (job_option_int(j, "begin", &v) && j->admitted_at_ms <= 0 &&
		    !sl_job_ended(j))
			sb_add(&b, ", begins at %s",
			       cli_clock(v, now, t, sizeof t));
	}
	sb_add(&b, ".\n");

	if (j->admitted_at_ms > 0) {
		cli_job_waited(j, now, d, sizeof d);
		sb_add(&b, "Admitted %s after waiting %s",
		       cli_time(j->admitted_at_ms, 0, t, sizeof t), d);
		if (j->started_at_ms > 0) {
			cli_job_ran(j, now, d, sizeof d);
			sb_add(&b, "; started as pid %lld and %s %s",
			       (long long)j->pid,
			       j->ended_at_ms > 0 ? "ran for" : "has run for",
			       d);
		}
		sb_add(&b, ".\n");
	} else if (!sl_job_ended(j)) {
		char why[256];
		cli_job_waited(j, now, d, sizeof d);
		cli_job_reason(j, w != NULL ? w->free_pct : NAN,
		               w != NULL ? w->available_bytes : 0,
		               w != NULL ? w->reserved_bytes : -1,
		               CLI_REASON_SENTENCE, why, sizeof why);
		if (strcmp(why, "-") != 0)
			sb_add(&b, "Waiting for %s so far: %s.\n", d, why);
		else
			sb_add(&b, "Waiting for %s so far.\n", d);
	}
	if (j->attempt > 1 && job_attempts(j) != NULL) {
		/* Each attempt's wait and run (PROTOCOL.md, Job: attempts). */
		const cJSON *a;
		int n = cJSON_GetArraySize(job_attempts(j)), k = 0;

		cJSON_ArrayForEach(a, job_attempts(j))
		{
			int64_t st = attempt_ms(a, "started_at_ms"),
			        en = attempt_ms(a, "ended_at_ms");
			const cJSON *why =
			    cJSON_GetObjectItemCaseSensitive(a, "end_reason");
			const char *text =
			    cJSON_IsString(why)
			        ? names_end_text(why->valuestring)
			        : NULL;

			k++;
			cli_duration(attempt_waited(a, now), d, sizeof d);
			sb_add(&b, "Attempt %d: waited %s", k, d);
			if (st > 0) {
				cli_duration((en > 0 ? en : now) - st, s1,
				             sizeof s1);
				sb_add(&b, ", %s %s",
				       en > 0 ? "ran" : "has run", s1);
			}
			if (k < n)
				sb_add(&b, ", requeued%s%s", text ? ": " : "",
				       text ? text : "");
			else if (en > 0 && text != NULL)
				sb_add(&b, ", %s because %s", j->state, text);
			else if (en > 0)
				sb_add(&b, ", %s", j->state);
			sb_add(&b, ".\n");
		}
	}
	if (j->started_at_ms > 0)
		sb_add(&b,
		       "Memory: footprint %s (peak %s); the system's swap grew "
		       "%s while it ran (peak %s)%s%s.\n",
		       cli_size(j->footprint_bytes, s1, sizeof s1),
		       cli_size(j->footprint_peak_bytes, s2, sizeof s2),
		       cli_size(j->swap_growth_bytes, t, sizeof t),
		       cli_size(j->swap_growth_peak_bytes, d, sizeof d),
		       j->job_swap_bytes > 0 ? "; its own swap " : "",
		       j->job_swap_bytes > 0
		           ? cli_size(j->job_swap_bytes, own, sizeof own)
		           : "");

	if (sl_job_ended(j)) {
		sb_add(&b,
		       "Ended %s: ", cli_time(j->ended_at_ms, 0, t, sizeof t));
		if (strcmp(j->state, "exited") == 0 && j->signal > 0)
			sb_add(&b, "killed by signal %d", j->signal);
		else if (strcmp(j->state, "exited") == 0)
			sb_add(&b, "exited with code %d", j->exit_code);
		else if (j->end_reason[0] != '\0' &&
		         names_end_text(j->end_reason) != NULL)
			sb_add(&b, "%s because %s", j->state,
			       names_end_text(j->end_reason));
		else if (j->end_reason[0] != '\0')
		/* a reason newer than this client: its wire name,
		 * never "because time_limit" as if it were words */
		{
			sb_add(&b, "%s (end reason: ", j->state);
			sb_add_safe(&b, j->end_reason);
			sb_add(&b, ")");
		} else
			sb_add(&b, "%s", j->state);
		if (strcmp(j->state, "killed") == 0 && j->signal > 0)
			sb_add(&b, " (signal %d)", j->signal);
		sb_add(&b, "; stageloadctl wait gives %d.\n",
		       cli_job_status(j));
		if (j->end_detail != NULL && j->end_detail[0] != '\0') {
			sb_add_safe(&b, j->end_detail);
			sb_add(&b, "\n");
		}
	}
	if (b.oom) {
		free(b.s);
		return NULL;
	}
	return b.s;
}

char *
cli_sparkline(const double *values, size_t n, double lo, double hi, char *buf,
              size_t len)
{
	/* U+2581 .. U+2588: the eight heights of a block */
	static const char *const blocks[] = {
	    "\xe2\x96\x81", "\xe2\x96\x82", "\xe2\x96\x83", "\xe2\x96\x84",
	    "\xe2\x96\x85", "\xe2\x96\x86", "\xe2\x96\x87", "\xe2\x96\x88"};
	size_t i, out = 0;

	if (len == 0)
		return buf;
	for (i = 0; i < n; i++) {
		const char *cell = " ";
		size_t w;

		if (!isnan(values[i])) {
			double f = hi > lo ? (values[i] - lo) / (hi - lo) : 0.5;
			int k;
			if (f < 0)
				f = 0;
			if (f > 1)
				f = 1;
			k = (int)(f * 7 + 0.5);
			cell = blocks[k];
		}
		w = strlen(cell);
		if (out + w >= len)
			break;
		memcpy(buf + out, cell, w);
		out += w;
	}
	buf[out] = '\0';
	return buf;
}

int
cli_meter_due(int64_t last_ms, int64_t ts_ms, int64_t interval_ms,
              int64_t daemon_interval_ms)
{
	if (last_ms < 0 || interval_ms <= daemon_interval_ms)
		return 1;
	return ts_ms - last_ms >= interval_ms - daemon_interval_ms / 2;
}

int
cli_table_init(struct cli_table *t, size_t ncols, const char *const *head,
               const int *right)
{
	memset(t, 0, sizeof *t);
	t->ncols = ncols;
	t->right = calloc(ncols, sizeof *t->right);
	if (t->right == NULL)
		return -ENOMEM;
	if (right != NULL)
		memcpy(t->right, right, ncols * sizeof *right);
	return head != NULL ? cli_table_add(t, head) : 0;
}

int
cli_table_add(struct cli_table *t, const char *const *cells)
{
	char ***rows = realloc(t->rows, (t->nrows + 1) * sizeof *rows);
	size_t c;

	if (rows == NULL)
		return -ENOMEM;
	t->rows = rows;
	rows[t->nrows] = calloc(t->ncols, sizeof **rows);
	if (rows[t->nrows] == NULL)
		return -ENOMEM;
	for (c = 0; c < t->ncols; c++) {
		rows[t->nrows][c] = strdup(cells[c] != NULL ? cells[c] : "");
		if (rows[t->nrows][c] == NULL) {
			t->nrows++; /* so cli_table_free releases it */
			return -ENOMEM;
		}
	}
	t->nrows++;
	return 0;
}

char *
cli_safe_dup(const char *s)
{
	return proto_text_escape_dup(s, strlen(s), 0, NULL);
}

void
cli_tally_add(struct cli_tally *t, const char *word)
{
	size_t i;

	for (i = 0; i < t->len; i++)
		if (strcmp(t->word[i], word) == 0) {
			t->n[i]++;
			return;
		}
	if (t->len < sizeof t->word / sizeof t->word[0]) {
		t->word[t->len] = word;
		t->n[t->len++] = 1;
	}
}

void
cli_tally_print(const struct cli_tally *t, const char *ref)
{
	size_t i;

	printf("%s:", ref);
	for (i = 0; i < t->len; i++)
		printf("%s %ld %s", i > 0 ? "," : "", t->n[i], t->word[i]);
	printf("%s\n", t->len == 0 ? " no elements" : "");
}

int
cli_print_json(FILE *f, const char *json)
{
	char *safe =
	    proto_text_escape_dup(json, strlen(json), PROTO_TEXT_JSON, NULL);

	if (safe == NULL)
		return -ENOMEM; /* never the text unescaped */
	fprintf(f, "%s\n", safe);
	free(safe);
	return 0;
}

void
cli_table_print(const struct cli_table *t, FILE *f)
{
	cli_table_print_rows(t, f, t->nrows, "");
}

void
cli_table_print_rows(const struct cli_table *t, FILE *f, size_t nrows,
                     const char *eol)
{
	size_t *width = calloc(t->ncols, sizeof *width);
	size_t r, c, w, pad;

	if (width == NULL)
		return;
	if (nrows > t->nrows)
		nrows = t->nrows;
	/* Widths in terminal cells, of the rows printed only. */
	for (r = 0; r < nrows; r++)
		for (c = 0; c < t->ncols; c++)
			if ((w = cli_text_width(t->rows[r][c])) > width[c])
				width[c] = w;
	for (r = 0; r < nrows; r++) {
		size_t last = 0;
		/* no padding after the last non-empty cell of a row */
		for (c = 0; c < t->ncols; c++)
			if (t->rows[r][c][0] != '\0')
				last = c;
		for (c = 0; c <= last; c++) {
			const char *cell = t->rows[r][c];
			pad = width[c] - cli_text_width(cell);
			if (c > 0)
				fputs("  ", f);
			if (t->right[c])
				fprintf(f, "%*s%s", (int)pad, "", cell);
			else if (c < last)
				fprintf(f, "%s%*s", cell, (int)pad, "");
			else
				fputs(cell, f);
		}
		fputs(eol, f);
		fputc('\n', f);
	}
	free(width);
}

void
cli_table_free(struct cli_table *t)
{
	size_t r, c;

	for (r = 0; r < t->nrows; r++) {
		if (t->rows[r] == NULL)
			continue;
		for (c = 0; c < t->ncols; c++)
			free(t->rows[r][c]);
		free(t->rows[r]);
	}
	free(t->rows);
	free(t->right);
	memset(t, 0, sizeof *t);
}

void
cli_stop_self(void)
{
	struct sigaction sa, old;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = SIG_DFL;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTSTP, &sa, &old);
	raise(SIGTSTP);
	sigaction(SIGTSTP, &old, NULL);
}

int
cli_use_color(int fd)
{
	const char *no = getenv("NO_COLOR");

	if (no != NULL && no[0] != '\0')
		return 0;
	return isatty(fd);
}

int
cli_progress_due(struct cli_progress *p, const char *key, const char *line,
                 int64_t now_ms)
{
	if (key == NULL)
		key = "";
	if (p->shown && strcmp(p->line, line) == 0)
		return 0;
	/* Numbers alone (free %, position) wait out the quiet minute. */
	if (p->shown && strcmp(p->key, key) == 0 &&
	    now_ms - p->at_ms < CLI_PROGRESS_QUIET_MS)
		return 0;
	snprintf(p->key, sizeof p->key, "%s", key);
	snprintf(p->line, sizeof p->line, "%s", line);
	p->at_ms = now_ms;
	p->shown = 1;
	return 1;
}

int64_t
cli_spec_budget(const sl_job_spec *spec)
{
	int64_t v;

	return sl_job_spec_get_int(spec, "swap_budget_bytes", &v) == 0 ? v : -1;
}

uint64_t
cli_spec_wait_free_bytes(const sl_job_spec *spec)
{
	int64_t v;

	return sl_job_spec_get_int(spec, "wait_free_bytes", &v) == 0 && v > 0
	           ? (uint64_t)v
	           : 0;
}

void
cli_csv_field(const char *t)
{
	char *safe = cli_safe_dup(t != NULL ? t : "");
	const char *s = safe != NULL ? safe : "", *p;

	if (strpbrk(s, ",\"\r\n") == NULL) {
		fputs(s, stdout);
	} else {
		putchar('"');
		for (p = s; *p != '\0'; p++) {
			if (*p == '"')
				putchar('"');
			putchar(*p);
		}
		putchar('"');
	}
	free(safe);
}
