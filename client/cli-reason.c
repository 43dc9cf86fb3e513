/*
 * Why a queued job waits, in words: the one place that turns the
 * protocol's waiting_for (proto/PROTOCOL.md, Job) into the REASON column
 * of status and top, the progress line of run, wait and logs -f, and the
 * clause of show ("Waiting for 2m so far: ..."). A new waiting_for is one row
 * of reasons[]; a value this table does not know reads as "other" (PROTOCOL.md
 * says clients treat it so).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* How a reason reads in each form: "%F" stands for the free % compared
 * with the job's, "%f" for the free %, "%w" for the job's wait_free and
 * "%R" for the bytes promised to running jobs ("memory" when unknown). */
static const struct {
	const char *name;
	const char *column;   /* status and top */
	const char *line;     /* after "queued: position P of N, " */
	const char *sentence; /* show: "Waiting for 2m so far: ..." */
} reasons[] = {
    {"free", "free %F", "free %F", "free memory is %F (its --wait-free)"},
    {"expect", "expect %R reserved",
     "free %f, less than %w once %R promised to running jobs counts",
     "%R of memory is promised to running jobs (--expect), which leaves "
     "less than the %w free it waits for"},
    {"settle", "settle", "free %f, waiting for the last job to settle",
     "the job admitted before it is still growing (settle)"},
    {"head", "head", "free %f, waiting for the jobs ahead",
     "a job ahead of it holds the head of the queue"},
    {"exclusive", "exclusive", "free %f, waiting to run alone",
     "it or a running job has to run alone (--exclusive)"},
    {"max_running", "max_running", "free %f, too many jobs running",
     "the daemon already runs as many jobs as its max_running allows"},
    {"storage", "storage",
     "free %f, waiting for the daemon's database to work again",
     "the daemon's database fails, so nothing is admitted (storage)"},
    {"client", "client", "free %f, waiting for its stageloadctl to come back",
     "its stageloadctl has not come back since the daemon restarted"},
    {"held", "held", "free %f, held (release ID lets it start)",
     "it is held (hold): it starts only once released"},
    {"group", "group", "free %f, its group runs as many jobs as it may",
     "its group already has as many jobs running as the daemon's "
     "group.NAME.max_running allows"},
    {"none", "-", "free %f, being admitted",
     "nothing holds it back: it is being admitted"},
};

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

/* Expand the row's text: %F the comparison, %f the free %, %w the wanted
 * free %, %R the reserved bytes. */
static void
expand(const char *fmt, const struct cli_wait *w, char *buf, size_t len)
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
				if (isnan(w->free_pct))
					snprintf(part, sizeof part,
					         "below %.0f%%",
					         w->wait_free_pct);
				else
					cli_pct_compare(w->free_pct,
					                w->wait_free_pct, part,
					                sizeof part);
				break;
			case 'f':
				if (isnan(w->free_pct))
					snprintf(part, sizeof part, "?%%");
				else
					snprintf(part, sizeof part, "%.0f%%",
					         w->free_pct);
				break;
			case 'w':
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

void
cli_wait_reason(const struct cli_wait *w, enum cli_reason_form form, char *buf,
                size_t len)
{
	const char *why = w->waiting_for != NULL ? w->waiting_for : "";
	char word[64];
	size_t i;

	/* "after N": a job it starts after (submit --after) has not ended;
	 * N is digits, so it is safe in the template. */
	if (strncmp(why, "after ", 6) == 0 && why[6] != '\0' &&
	    strspn(why + 6, "0123456789") == strlen(why + 6) &&
	    strlen(why + 6) < 20) {
		char tmpl[128];

		if (form == CLI_REASON_COLUMN)
			snprintf(tmpl, sizeof tmpl, "after %s", why + 6);
		else if (form == CLI_REASON_LINE)
			snprintf(tmpl, sizeof tmpl,
			         "free %%f, waiting for job %s to end",
			         why + 6);
		else
			snprintf(tmpl, sizeof tmpl,
			         "job %s, which it starts after (--after), "
			         "has not ended",
			         why + 6);
		expand(tmpl, w, buf, len);
		return;
	}
	for (i = 0; i < sizeof reasons / sizeof reasons[0]; i++) {
		if (strcmp(why, reasons[i].name) != 0)
			continue;
		if (strcmp(why, "expect") == 0 && w->reserved_bytes < 0 &&
		    form != CLI_REASON_LINE)
			expand(
			    form == CLI_REASON_COLUMN
			        ? "expect"
			        : "memory is promised to running jobs "
			          "(--expect), which leaves less than the %w "
			          "free it waits for",
			    w, buf, len);
		else
			expand(form == CLI_REASON_COLUMN ? reasons[i].column
			       : form == CLI_REASON_LINE ? reasons[i].line
			                                 : reasons[i].sentence,
			       w, buf, len);
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
cli_queue_line(int position, int of, double free_pct, double wait_free_pct,
               const char *waiting_for, char *buf, size_t len)
{
	struct cli_wait w = {waiting_for, free_pct, wait_free_pct, -1};
	char why[192];

	cli_wait_reason(&w, CLI_REASON_LINE, why, sizeof why);
	snprintf(buf, len, "queued: position %d of %d, %s", position, of, why);
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
cli_job_reason(const struct sl_job *j, double free_pct, int64_t reserved_bytes,
               enum cli_reason_form form, char *buf, size_t len)
{
	struct cli_wait w = {j->waiting_for, free_pct, j->wait_free_pct,
	                     reserved_bytes};

	if (strcmp(j->state, "queued") != 0 || j->waiting_for[0] == '\0') {
		snprintf(buf, len, form == CLI_REASON_COLUMN ? "" : "-");
		return;
	}
	cli_wait_reason(&w, form, buf, len);
}
