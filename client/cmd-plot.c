/*
 * stageloadctl plot: the web page's plot as an SVG file (web/plot-data.c
 * draws both): system memory and swap with job lanes, one job over its
 * life, or a JSONL trace.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "clock.h"
#include "cli.h"
#include "plot-data.h"
#include "units.h"

static int cmd_plot(struct cli *, struct cli_args *);

static const struct cli_option plot_options[] = {
    {"since", 0, CLI_TEXT, "T", 0, 0,
     "start (default 8h: 8 hours ago; the forms of history)"},
    {"until", 0, CLI_TEXT, "T", 0, 0, "end (default now)"},
    {"job", 0, CLI_ID, "ID", 0, 0,
     "one job's footprint and swap over its life"},
    {"compare", 0, CLI_ID, "ID", 0, 0,
     "two jobs side by side from their start: --compare ID ID2"},
    {"trace", 0, CLI_TEXT, "FILE", 0, 0,
     "a JSONL trace (meter, the Python MemoryMeter)"},
    {"out", 'o', CLI_TEXT, "FILE", 0, 0,
     "the SVG file to write (default -: stdout)"},
    {"width", 0, CLI_INT, "PX", 320, 10000, "width in pixels (default 960)"},
    {"utc", 0, CLI_FLAG, NULL, 0, 0, "clock times in UTC"},
    {NULL, 0, 0, NULL, 0, 0, NULL},
};

const struct cli_entry cmd_plot_entry = {
    .name = "plot",
    .summary = "an SVG plot of memory and swap with job lanes, a job, or a "
               "trace",
    /* plot 12: as --job 12; plot 12 15: as --compare 12 15 */
    .operands = "[ID [ID2]]",
    .min_operands = 0,
    .max_operands = 2,
    .options = plot_options,
    .no_json = "it writes SVG",
    .exec = cmd_plot,
};

/* Jobs a system plot reads at most (lanes: plotd_system draws fewer). */
#define PLOT_JOBS_MAX 1000

/* One call; the result as cJSON (NULL and a report on failure). */
static cJSON *
plot_call(struct cli *cli, const char *method, const char *params)
{
	char *text = NULL;
	cJSON *r;

	if (sl_call(cli->client, method, params, &text) < 0)
		return NULL;
	r = cJSON_Parse(text);
	sl_free(text);
	return r;
}

/* Events of the kinds a plot marks (stages, daemon starts), of one job
 * when job > 0 (the daemon reads that job's alone), read page by page. */
static cJSON *
plot_events(struct cli *cli, int64_t job)
{
	cJSON *all = cJSON_CreateArray(), *r, *e, *next;
	int64_t after = 0;
	char params[96], only[40] = "";
	int n;

	if (job > 0)
		snprintf(only, sizeof only, ",\"job_id\":%" PRId64, job);
	while (all != NULL) {
		snprintf(params, sizeof params,
		         "{\"after_id\":%" PRId64 ",\"limit\":10000%s}", after,
		         only);
		if ((r = plot_call(cli, "events", params)) == NULL) {
			cJSON_Delete(all);
			return NULL;
		}
		n = 0;
		cJSON_ArrayForEach(
		    e, cJSON_GetObjectItemCaseSensitive(r, "events"))
		{
			const cJSON *k =
			    cJSON_GetObjectItemCaseSensitive(e, "kind");
			const cJSON *d =
			    cJSON_GetObjectItemCaseSensitive(e, "detail");
			const cJSON *id =
			    cJSON_GetObjectItemCaseSensitive(e, "id");
			const cJSON *jid =
			    cJSON_GetObjectItemCaseSensitive(e, "job_id");
			const cJSON *st;

			n++;
			if (cJSON_IsNumber(id))
				after = (int64_t)id->valuedouble;
			if (!cJSON_IsString(k) ||
			    (job > 0 && (!cJSON_IsNumber(jid) ||
			                 (int64_t)jid->valuedouble != job)))
				continue;
			if (strcmp(k->valuestring, "stage") == 0) {
				/* detail {"name"} (PROTOCOL.md, stage) as
				 * the web program's public event carries it:
				 * a member "stage". */
				st =
				    cJSON_GetObjectItemCaseSensitive(d, "name");
				if (cJSON_IsString(st))
					cJSON_AddStringToObject(
					    e, "stage", st->valuestring);
			} else if (strcmp(k->valuestring, "daemon_start") != 0)
				continue;
			cJSON_AddItemToArray(all, cJSON_Duplicate(e, 1));
		}
		next = cJSON_GetObjectItemCaseSensitive(r, "next_cursor");
		cJSON_Delete(r);
		if (n < 10000 && !cJSON_IsString(next))
			break;
	}
	return all;
}

static int
write_svg(const char *path, const struct svgp_buf *b)
{
	FILE *f = strcmp(path, "-") == 0 ? stdout : fopen(path, "w");

	if (f == NULL) {
		cli_error("cannot write %s: %s", path, strerror(errno));
		return EXIT_ERR;
	}
	if (fwrite(b->p, 1, b->n, f) != b->n || (f != stdout && fclose(f)) ||
	    (f == stdout && fflush(f))) {
		cli_error("cannot write %s: %s", path, strerror(errno));
		return EXIT_ERR;
	}
	return EXIT_OK;
}

static char *
read_file(const char *path, char *cause, size_t causelen)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL, *nb;
	size_t n = 0, cap = 0, got;

	if (f == NULL) {
		snprintf(cause, causelen, "cannot open %s: %s", path,
		         strerror(errno));
		return NULL;
	}
	for (;;) {
		if (cap - n < 65536) {
			cap = cap ? cap * 2 : 131072;
			if (cap > ((size_t)1 << 30) ||
			    (nb = realloc(buf, cap + 1)) == NULL) {
				snprintf(cause, causelen,
				         "%s is too large (over 1 GiB) or out "
				         "of memory",
				         path);
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = nb;
		}
		got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0)
			break;
	}
	fclose(f);
	buf[n] = '\0';
	return buf;
}

static int
plot_jobs_page(const char *items, void *arg)
{
	cJSON *into = arg, *page = cJSON_Parse(items), *j;

	if (page == NULL)
		return -ENOMEM;
	while ((j = cJSON_DetachItemFromArray(page, 0)) != NULL &&
	       cJSON_GetArraySize(into) < PLOT_JOBS_MAX)
		cJSON_AddItemToArray(into, j);
	cJSON_Delete(j);
	cJSON_Delete(page);
	return cJSON_GetArraySize(into) >= PLOT_JOBS_MAX;
}

/* The jobs whose lanes a system plot draws: the live ones and the newest
 * ended ones, PLOT_JOBS_MAX at most, every page read (a version 2 page
 * ends early when its slice of the daemon's loop is over). */
static cJSON *
plot_jobs(struct cli *cli)
{
	cJSON *jobs = cJSON_CreateArray();

	if (jobs != NULL && sl_call_pages(cli->client, "status",
	                                  "{\"all\":true,\"limit\":1000}",
	                                  "jobs", plot_jobs_page, jobs) < 0) {
		cJSON_Delete(jobs); /* plot_system reports it */
		return NULL;
	}
	return jobs;
}

static int
plot_system(struct cli *cli, const struct plotd_opts *o, int64_t since,
            int64_t until, struct svgp_buf *b)
{
	cJSON *info = NULL, *hist = NULL, *jobs = NULL, *events = NULL;
	struct plotd_opts oo = *o;
	char params[192];
	int64_t step = (until - since) / 600, first;
	int rc = EXIT_ERR;

	if ((info = plot_call(cli, "info", NULL)) == NULL)
		goto out;
	if (step < 1)
		step = 1;
	snprintf(params, sizeof params,
	         "{\"since_ms\":%" PRId64 ",\"until_ms\":%" PRId64
	         ",\"step_ms\":%" PRId64 "}",
	         since, until, step);
	if ((hist = plot_call(cli, "history", params)) == NULL)
		goto out;
	/* The axis starts at the first sample in the window: 8 h asked of a
	 * daemon up 15 min would squeeze its data into the right 3 % of the
	 * plot. Asked again from there, at a step that fits the shorter span
	 * (docs/cli.md, plot). */
	first = plotd_first_ts(hist);
	if (first > since + step) {
		since = first;
		step = (until - since) / 600;
		if (step < 1)
			step = 1;
		snprintf(params, sizeof params,
		         "{\"since_ms\":%" PRId64 ",\"until_ms\":%" PRId64
		         ",\"step_ms\":%" PRId64 "}",
		         since, until, step);
		cJSON_Delete(hist);
		if ((hist = plot_call(cli, "history", params)) == NULL)
			goto out;
		/* The first bucket was rounded down to the coarse step: the
		 * fine one starts where the samples do. */
		if (plotd_first_ts(hist) > since)
			since = plotd_first_ts(hist);
	}
	if ((jobs = plot_jobs(cli)) == NULL ||
	    (events = plot_events(cli, 0)) == NULL)
		goto out;
	oo.bytes_max = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(info, "sample"),
	    "swap_total_bytes"));
	if (oo.bytes_max != oo.bytes_max) /* NaN: no sample yet */
		oo.bytes_max = 0;
	if (plotd_system(&oo, hist, jobs, events, since, until, b) != 0) {
		cli_error("out of memory");
		goto out;
	}
	rc = EXIT_OK;
out:
	if (rc != EXIT_OK && sl_errcode(cli->client) != 0)
		rc = cli_fail(cli);
	cJSON_Delete(info);
	cJSON_Delete(hist);
	cJSON_Delete(jobs);
	cJSON_Delete(events);
	return rc;
}

static int
plot_job(struct cli *cli, const struct plotd_opts *o, int64_t id,
         struct svgp_buf *b)
{
	cJSON *job = NULL, *hist = NULL, *events = NULL;
	char params[96];
	int rc = EXIT_ERR;

	snprintf(params, sizeof params, "{\"id\":%" PRId64 "}", id);
	if ((job = plot_call(cli, "show", params)) == NULL)
		goto out;
	snprintf(params, sizeof params, "{\"job_id\":%" PRId64 "}", id);
	if ((hist = plot_call(cli, "history", params)) == NULL ||
	    (events = plot_events(cli, id)) == NULL)
		goto out;
	if (plotd_job(o, job, hist, events, b) != 0) {
		cli_error("out of memory");
		goto out;
	}
	rc = EXIT_OK;
out:
	if (rc != EXIT_OK && sl_errcode(cli->client) != 0)
		rc = cli_fail(cli);
	cJSON_Delete(job);
	cJSON_Delete(hist);
	cJSON_Delete(events);
	return rc;
}

/* Two jobs side by side: each one's show, job history and events. */
static int
plot_compare(struct cli *cli, const struct plotd_opts *o, const int64_t id[2],
             struct svgp_buf *b)
{
	cJSON *job[2] = {NULL, NULL}, *hist[2] = {NULL, NULL};
	cJSON *events[2] = {NULL, NULL};
	char params[96];
	int k, rc = EXIT_ERR;

	for (k = 0; k < 2; k++) {
		snprintf(params, sizeof params, "{\"id\":%" PRId64 "}", id[k]);
		if ((job[k] = plot_call(cli, "show", params)) == NULL)
			goto out;
		snprintf(params, sizeof params, "{\"job_id\":%" PRId64 "}",
		         id[k]);
		if ((hist[k] = plot_call(cli, "history", params)) == NULL ||
		    (events[k] = plot_events(cli, id[k])) == NULL)
			goto out;
	}
	if (plotd_compare(o, (const cJSON *const *)job,
	                  (const cJSON *const *)hist,
	                  (const cJSON *const *)events, b) != 0) {
		cli_error("out of memory");
		goto out;
	}
	rc = EXIT_OK;
out:
	if (rc != EXIT_OK && sl_errcode(cli->client) != 0)
		rc = cli_fail(cli);
	for (k = 0; k < 2; k++) {
		cJSON_Delete(job[k]);
		cJSON_Delete(hist[k]);
		cJSON_Delete(events[k]);
	}
	return rc;
}

/* The operands: --compare's second job, or one job (as --job), or two
 * (as --compare). 0, or a usage error's exit. */
static int
plot_operands(struct cli *cli, const struct cli_args *args, int64_t *job,
              int64_t cmp[2])
{
	int i;

	if (cmp[0] > 0 ? args->argc != 1 : *job > 0 && args->argc > 0)
		return cli_usage_error(cli, "--compare takes two jobs "
		                            "(--compare ID ID2), --job one");
	for (i = 0; i < args->argc; i++) {
		int64_t *to = cmp[0] > 0        ? &cmp[1]
		              : args->argc == 1 ? job
		                                : &cmp[i];
		if (cli_parse_id(args->argv[i], to) < 0)
			return cli_usage_error(cli, "bad job id '%s'",
			                       args->argv[i]);
	}
	return 0;
}

static int
cmd_plot(struct cli *cli, struct cli_args *args)
{
	int64_t now = clock_wall_ms(), since = now - 8 * 3600000LL, until = now;
	int64_t job = cli_number(args, "job", 0);
	int64_t cmp[2] = {cli_number(args, "compare", 0), 0};
	const char *trace = cli_text(args, "trace", NULL);
	const char *out = cli_text(args, "out", "-");
	const char *t;
	struct plotd_opts o = {0};
	struct svgp_buf b = {0};
	char title[128], cause[256];
	int rc;

	o.width = (int)cli_number(args, "width", 0);
	o.utc = cli_has(args, "utc");
	if ((t = cli_text(args, "since", NULL)) != NULL &&
	    units_parse_time_ms(t, now, &since) < 0)
		return cli_usage_error(cli,
		                       "bad --since '%s' (8h, now, "
		                       "2026-11-30T05:00, an epoch)",
		                       t);
	if ((t = cli_text(args, "until", NULL)) != NULL &&
	    units_parse_time_ms(t, now, &until) < 0)
		return cli_usage_error(cli,
		                       "bad --until '%s' (8h, now, "
		                       "2026-11-30T05:00, an epoch)",
		                       t);
	if ((rc = plot_operands(cli, args, &job, cmp)) != 0)
		return rc;
	if ((trace != NULL) + (job > 0) + (cmp[0] > 0) > 1)
		return cli_usage_error(
		    cli, "--trace, a job (--job) and --compare: one of them");
	if (until <= since)
		return cli_usage_error(cli, "--until must be after --since");
	if (trace != NULL) {
		char *text = read_file(trace, cause, sizeof cause);
		if (text == NULL) {
			cli_error("%s", cause);
			return EXIT_ERR;
		}
		snprintf(title, sizeof title, "trace %s", trace);
		o.title = title;
		rc = plotd_trace(&o, text, &b, cause, sizeof cause);
		free(text);
		if (rc == -EINVAL) {
			cli_error("%s: %s", trace, cause);
			return EXIT_ERR;
		}
		rc = rc < 0 ? EXIT_ERR : EXIT_OK;
	} else {
		if ((rc = cli_connect(cli)) != 0)
			return rc;
		if (job > 0) {
			snprintf(title, sizeof title,
			         "job %" PRId64 ": footprint and swap", job);
			o.title = title;
			rc = plot_job(cli, &o, job, &b);
		} else if (cmp[0] > 0) {
			snprintf(title, sizeof title,
			         "jobs %" PRId64 " and %" PRId64
			         ": footprint and swap from their start",
			         cmp[0], cmp[1]);
			o.title = title;
			rc = plot_compare(cli, &o, cmp, &b);
		} else {
			o.title = "memory and swap";
			o.max_lanes = 40;
			rc = plot_system(cli, &o, since, until, &b);
		}
	}
	if (rc == EXIT_OK)
		rc = write_svg(out, &b);
	svgp_buf_free(&b);
	return rc;
}
