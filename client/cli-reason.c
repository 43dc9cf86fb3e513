/*
 * Why a queued job waits, in words: the one place that turns the
 * protocol's waiting_for (proto/PROTOCOL.md, Job) into the REASON column
 * of status and top, the progress line of run, wait and logs -f, and the
 * clause of show ("Waiting for 2m so far: ..."), with the words of
 * proto/names.h's list; a value the list does not know reads as "other"
 * (PROTOCOL.md says clients treat it so).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "clock.h"

/* A percentage with as few decimals as it needs (at most 2): "40",
 * "37.5". */
static void
pct_text(double v, char *buf, size_t len)
{
	char *dot;
	size_t n;

	snprintf(buf, len, "%.2f", v);
	if ((dot = strchr(buf, '.')) == NULL)
		return;
	n = strlen(buf);
	while (n > 0 && buf[n - 1] == '0')
		buf[--n] = '\0';
	if (n > 0 && buf[n - 1] == '.')
		buf[--n] = '\0';
}

void
cli_pct_compare(double free_pct, double want_pct, char *buf, size_t len)
{
	char f[32], w[32];
	int d, below = free_pct < want_pct;

	pct_text(want_pct, w, sizeof w);
	/* The fewest decimals that keep what the numbers say: 39.7 against
	 * 40 is "39.7%", never "40% < 40%". */
	for (d = 0; d <= 3; d++) {
		snprintf(f, sizeof f, "%.*f", d, free_pct);
		if ((strtod(f, NULL) < strtod(w, NULL)) == below)
			break;
	}
	if (d > 3) /* closer than 0.0005: cut rather than round */
		snprintf(f, sizeof f, "%.3f",
		         below ? floor(free_pct * 1000) / 1000
		               : ceil(free_pct * 1000) / 1000);
	snprintf(buf, len, "%s%% %s %s%%", f, below ? "<" : ">=", w);
}

/* bytes, below the size want but rounded to the same text: in want's unit
 * with the decimals, cut rather than rounded, that keep it below ("14.9G
 * < 15G", never "15G < 15G"). */
static void
size_below(int64_t bytes, const char *want, char *buf, size_t len)
{
	static const char units[] = "KMGTPE";
	const char *u = strchr(units, want[strlen(want) - 1]);
	double scale = 1024, v, cut = 0;
	int d, k;

	if (u == NULL || *u == '\0')
		return;
	for (k = 0; units + k < u; k++)
		scale *= 1024;
	v = (double)bytes / scale;
	for (d = 1; d <= 3; d++) {
		double p = pow(10, d);
		cut = floor(v * p) / p;
		if (cut < strtod(want, NULL))
			break;
	}
	snprintf(buf, len, "%.*f%c", d > 3 ? 3 : d, cut, *u);
}

/* Free memory against what the job waits for: a size when it waits for
 * wait_free_bytes ("free 8.1G < 22G"), else a percentage; with both, the
 * one not met (the size first). */
static void
free_compare(const struct cli_wait *w, char *buf, size_t len)
{
	char have[24], want[24];
	int below;

	if (w->wait_free_bytes == 0 ||
	    (w->wait_free_pct > 0 && w->available_bytes > 0 &&
	     (uint64_t)w->available_bytes >= w->wait_free_bytes)) {
		if (isnan(w->free_pct))
			snprintf(buf, len, "below %.0f%%", w->wait_free_pct);
		else
			cli_pct_compare(w->free_pct, w->wait_free_pct, buf,
			                len);
		return;
	}
	cli_size(w->wait_free_bytes, want, sizeof want);
	if (w->available_bytes <= 0) {
		snprintf(buf, len, "below %s", want);
		return;
	}
	below = (uint64_t)w->available_bytes < w->wait_free_bytes;
	cli_size((uint64_t)w->available_bytes, have, sizeof have);
	if (below && strcmp(have, want) == 0)
		size_below(w->available_bytes, want, have, sizeof have);
	snprintf(buf, len, "%s %s %s", have, below ? "<" : ">=", want);
}

/* When a job may begin, as a local clock time: "23:10", with the date
 * when it is not today ("2026-12-24 23:10"), seconds when it has them. */
static void
begin_text(int64_t ms, char *buf, size_t len)
{
	time_t t = (time_t)(ms / 1000), now = time(NULL);
	struct tm tm, today;

	if (ms <= 0 || localtime_r(&t, &tm) == NULL ||
	    localtime_r(&now, &today) == NULL) {
		snprintf(buf, len, "?");
		return;
	}
	strftime(
	    buf, len,
	    tm.tm_year == today.tm_year && tm.tm_yday == today.tm_yday
	        ? (tm.tm_sec != 0 ? "%H:%M:%S" : "%H:%M")
	        : (tm.tm_sec != 0 ? "%Y-%m-%d %H:%M:%S" : "%Y-%m-%d %H:%M"),
	    &tm);
}

/* Expand a template of proto/names.h: %F the comparison, %f the free %,
 * %w what the job waits for, %R the reserved bytes, %a the job it starts
 * after, %i the job's id, %b when it may begin. */
static void
expand(const char *fmt, const struct cli_wait *w, const char *after, char *buf,
       size_t len)
{
	char part[64];
	size_t out = 0, n;

	if (len == 0)
		return;
	for (; *fmt != '\0'; fmt++) {
		part[0] = *fmt;
		part[1] = '\0';
		if (fmt[0] == '%' && fmt[1] != '\0') {
			switch (*++fmt) {
			case 'F':
				free_compare(w, part, sizeof part);
				break;
			case 'f':
				if (isnan(w->free_pct))
					snprintf(part, sizeof part, "?%%");
				else
					snprintf(part, sizeof part, "%.0f%%",
					         w->free_pct);
				break;
			case 'w':
				if (w->wait_free_bytes > 0) {
					cli_size(w->wait_free_bytes, part,
					         sizeof part);
					break;
				}
				pct_text(w->wait_free_pct, part, sizeof part);
				strcat(part, "%");
				break;
			case 'R':
				if (w->reserved_bytes < 0)
					snprintf(part, sizeof part, "memory");
				else
					cli_size((uint64_t)w->reserved_bytes,
					         part, sizeof part);
				break;
			case 'i':
				if (w->job_id > 0)
					snprintf(part, sizeof part, "%" PRId64,
					         w->job_id);
				else
					snprintf(part, sizeof part, "ID");
				break;
			case 'a':
				snprintf(part, sizeof part, "%s",
				         after != NULL ? after : "?");
				break;
			case 'g':
				cli_safe(w->group != NULL && w->group[0] != '\0'
				             ? w->group
				             : "NAME",
				         32, part, sizeof part);
				break;
			case 'b':
				begin_text(w->begin_ms, part, sizeof part);
				break;
			default:
				snprintf(part, sizeof part, "%%%c", *fmt);
			}
		}
		n = strlen(part);
		if (out + n >= len)
			n = len - 1 - out;
		memcpy(buf + out, part, n);
		out += n;
		buf[out] = '\0';
		if (out == len - 1)
			return;
	}
	buf[out] = '\0';
}

/* "job 12 (ana, qwen)", "jobs 12 (ana, qwen) and 14 (bo)", "jobs 1 (a),
 * 2 (b), 3 (c) and 4 more": the jobs of a waiting_on array, their names
 * made safe to print. 0 when it names none. */
static int
on_text(const char *json, char *buf, size_t len)
{
	cJSON *a = json != NULL ? cJSON_Parse(json) : NULL;
	const cJSON *o;
	int n = cJSON_IsArray(a) ? cJSON_GetArraySize(a) : 0, k = 0;
	size_t out;

	buf[0] = '\0';
	if (n == 0) {
		cJSON_Delete(a);
		return 0;
	}
	snprintf(buf, len, "job%s ", n > 1 ? "s" : "");
	cJSON_ArrayForEach(o, a)
	{
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "id");
		const cJSON *user = cJSON_GetObjectItemCaseSensitive(o, "user");
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(o, "name");
		char u[80], nm[80], one[200];

		if (k == 3 && n > 4) {
			out = strlen(buf);
			snprintf(buf + out, len - out, " and %d more", n - k);
			break;
		}
		cli_safe(cJSON_IsString(user) ? user->valuestring : "", 16, u,
		         sizeof u);
		cli_safe(cJSON_IsString(name) ? name->valuestring : "", 24, nm,
		         sizeof nm);
		snprintf(one, sizeof one, "%s%" PRId64 " (%s%s%s)",
		         k == 0       ? ""
		         : k == n - 1 ? " and "
		                      : ", ",
		         cJSON_IsNumber(id) ? (int64_t)id->valuedouble : 0, u,
		         nm[0] != '\0' ? ", " : "", nm);
		out = strlen(buf);
		snprintf(buf + out, len - out, "%s", one);
		k++;
	}
	cJSON_Delete(a);
	return 1;
}

/* "18 s", "2 min 10 s", "1 h 5 min": how long until a time (this file
 * is the web program's too, which has not cli.c's cli_duration). */
static void
left_text(int64_t ms, char *buf, size_t len)
{
	int64_t s = (ms + 999) / 1000;

	if (s < 60)
		snprintf(buf, len, "%" PRId64 " s", s);
	else if (s < 3600)
		snprintf(buf, len, "%" PRId64 " min %" PRId64 " s", s / 60,
		         s % 60);
	else
		snprintf(buf, len, "%" PRId64 " h %" PRId64 " min", s / 3600,
		         s / 60 % 60);
}

/* The local clock time of ms, "23:10". */
static void
clock_text(int64_t ms, char *buf, size_t len)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	if (localtime_r(&t, &tm) == NULL ||
	    strftime(buf, len, "%H:%M", &tm) == 0)
		snprintf(buf, len, "?");
}

/*
 * What a line or sentence adds when the daemon says what the job waits
 * behind (PROTOCOL.md, Job: waiting_on, waiting_until_ms): ": job 12
 * (ana, qwen) still growing, at most 18 s more" (settle), ": job 13 (ana)
 * until 23:10, then others may pass" (head), ": job 12 (ana, qwen)"
 * (exclusive, after), ": jobs ... running" (max_running, group), ":
 * promised to job 12 (ana, qwen)" (expect).
 */
static void
behind(const struct cli_wait *w, int k, char *buf, size_t len)
{
	char on[400], t[64], d[32];
	int64_t now = clock_wall_ms();

	buf[0] = '\0';
	if (!on_text(w->on_json, on, sizeof on))
		return;
	switch (k) {
	case NAMES_WAIT_SETTLE:
		left_text(w->until_ms - now, d, sizeof d);
		if (w->until_ms > now)
			snprintf(buf, len,
			         ": %s still growing, at most %s more", on, d);
		else
			snprintf(buf, len, ": %s still growing", on);
		break;
	case NAMES_WAIT_HEAD:
		clock_text(w->until_ms, t, sizeof t);
		if (w->until_ms > now)
			/* the clock time (hol_bound is minutes: a date is
			 * rarely needed) */
			snprintf(buf, len,
			         ": %s until %s, then others may pass", on, t);
		else if (w->until_ms > 0)
			snprintf(buf, len,
			         ": %s, whose turn has run out: others "
			         "may pass",
			         on);
		else
			snprintf(buf, len, ": %s", on);
		break;
	case NAMES_WAIT_EXPECT:
		snprintf(buf, len, ": promised to %s", on);
		break;
	case NAMES_WAIT_MAX_RUNNING:
	case NAMES_WAIT_GROUP:
		snprintf(buf, len, ": %s running", on);
		break;
	default:
		snprintf(buf, len, ": %s", on);
	}
}

void
cli_wait_reason(const struct cli_wait *w, enum cli_reason_form form, char *buf,
                size_t len)
{
	const char *why = w->waiting_for != NULL ? w->waiting_for : "";
	const char *after = NULL;
	const struct names_wait_words *words;
	char word[64];
	int k = names_wait_parse(why);

	/* "after N": N, digits, is the job it starts after (submit --after). */
	if (k == NAMES_WAIT_AFTER) {
		after = why + strlen("after");
		after += *after == ' ';
		if (*after == '\0' || strlen(after) >= 20 ||
		    strspn(after, "0123456789") != strlen(after))
			k = -1;
	}
	if (k >= 0) {
		words = &names_wait_words[k];
		/* Reserved bytes unknown: no number to say. */
		if (k == NAMES_WAIT_EXPECT && w->reserved_bytes < 0 &&
		    form != CLI_REASON_LINE)
			expand(
			    form == CLI_REASON_COLUMN
			        ? "expect"
			        : "memory is promised to running jobs "
			          "(--expect), which leaves less than the %w "
			          "free it waits for",
			    w, after, buf, len);
		else
			expand(form == CLI_REASON_COLUMN ? words->column
			       : form == CLI_REASON_LINE ? words->line
			                                 : words->sentence,
			       w, after, buf, len);
		if (form != CLI_REASON_COLUMN) {
			char more[512];
			size_t n = strlen(buf);
			behind(w, k, more, sizeof more);
			if (n < len)
				snprintf(buf + n, len - n, "%s", more);
		}
		return;
	}
	/* A waiting_for this stageloadctl does not know: "other". */
	cli_safe(why, 32, word, sizeof word);
	if (form == CLI_REASON_COLUMN)
		snprintf(buf, len, "other");
	else if (form == CLI_REASON_LINE)
		snprintf(buf, len, "free %.0f%%, waiting (other: %s)",
		         isnan(w->free_pct) ? 0 : w->free_pct, word);
	else
		snprintf(buf, len,
		         "it is held back by something this stageloadctl does "
		         "not know (%s)",
		         word);
}

void
cli_queue_line_wait(int position, int of, const struct cli_wait *w, char *buf,
                    size_t len)
{
	char why[512];

	cli_wait_reason(w, CLI_REASON_LINE, why, sizeof why);
	snprintf(buf, len, "queued: position %d of %d, %s", position, of, why);
}

void
cli_queue_line(int position, int of, double free_pct, double wait_free_pct,
               const char *waiting_for, char *buf, size_t len)
{
	struct cli_wait w = {waiting_for, free_pct, wait_free_pct, -1, 0,   0,
	                     0,           0,        NULL,          0,  NULL};

	cli_queue_line_wait(position, of, &w, buf, len);
}

int64_t
cli_reserved_bytes(const struct sl_job *jobs, size_t n)
{
	int64_t reserved = 0;
	size_t i;

	/* As admission counts it (docs/jobs.md, "Admission"): what each job
	 * holding memory expects and has not reached yet. */
	for (i = 0; i < n; i++) {
		const struct sl_job *j = &jobs[i];
		if ((strcmp(j->state, "admitted") == 0 ||
		     strcmp(j->state, "running") == 0) &&
		    j->expect_bytes > j->footprint_bytes)
			reserved +=
			    (int64_t)(j->expect_bytes - j->footprint_bytes);
	}
	return reserved;
}

void
cli_job_reason(const struct sl_job *j, double free_pct, int64_t available_bytes,
               int64_t reserved_bytes, enum cli_reason_form form, char *buf,
               size_t len)
{
	struct cli_wait w = {j->waiting_for,
	                     free_pct,
	                     j->wait_free_pct,
	                     reserved_bytes,
	                     j->wait_free_bytes,
	                     available_bytes,
	                     j->id,
	                     0,
	                     NULL,
	                     0,
	                     NULL};
	char *on = NULL;
	int64_t begin;

	if (sl_job_get_int(j, "begin_ms", &begin) == 0)
		w.begin_ms = begin;

	if (strcmp(j->state, "queued") != 0 || j->waiting_for[0] == '\0') {
		snprintf(buf, len, form == CLI_REASON_COLUMN ? "" : "-");
		return;
	}
	if (form != CLI_REASON_COLUMN) {
		on = sl_job_get_json(j, "waiting_on");
		if (sl_job_get_int(j, "waiting_until_ms", &w.until_ms) < 0)
			w.until_ms = 0;
	}
	w.on_json = on;
	w.group = j->group;
	cli_wait_reason(&w, form, buf, len);
	free(on);
}
