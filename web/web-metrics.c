/*
 * /metrics: the Prometheus text exposition format (version 0.0.4) of the
 * daemon's state, docs/dashboards.md lists every metric. Counters are the
 * daemon's since-start counters (info.counters), so they begin at 0 when
 * it restarts, as Prometheus counters may.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "names.h"
#include "web.h"

/* A label value: backslash, double quote and newline escaped. */
static void
label(struct svgp_buf *b, const char *s)
{
	const char *run = s;

	for (; s != NULL && *s != '\0'; s++) {
		const char *rep = NULL;
		if (*s == '\\')
			rep = "\\\\";
		else if (*s == '"')
			rep = "\\\"";
		else if (*s == '\n')
			rep = "\\n";
		if (rep == NULL)
			continue;
		svgp_putn(b, run, (size_t)(s - run));
		svgp_puts(b, rep);
		run = s + 1;
	}
	if (s != NULL)
		svgp_putn(b, run, (size_t)(s - run));
}

static void
family(struct svgp_buf *b, const char *name, const char *type, const char *help)
{
	svgp_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void
value(struct svgp_buf *b, double v)
{
	if (isnan(v))
		svgp_puts(b, " NaN\n");
	else if (v == floor(v) && fabs(v) < 9007199254740992.0)
		svgp_printf(b, " %.0f\n", v);
	else
		svgp_printf(b, " %.15g\n", v);
}

static void
gauge(struct svgp_buf *b, const char *name, const char *help, double v)
{
	family(b, name, "gauge", help);
	svgp_puts(b, name);
	value(b, v);
}

static void
system_metrics(const struct web_snap *s, struct svgp_buf *b)
{
	const cJSON *smp = cJSON_GetObjectItemCaseSensitive(s->info, "sample");
	const cJSON *psi;

	if (!cJSON_IsObject(smp))
		return;
	gauge(b, "stageload_memory_free_ratio",
	      "Free memory as the daemon measures it (macOS "
	      "kern.memorystatus_level, Linux MemAvailable/MemTotal), 0-1.",
	      web_num(smp, "free_pct", 0) / 100.0);
	gauge(b, "stageload_memory_available_bytes",
	      "Available memory in bytes.", web_num(smp, "available_bytes", 0));
	gauge(b, "stageload_memory_total_bytes", "Physical memory in bytes.",
	      web_num(smp, "total_bytes", 0));
	gauge(b, "stageload_swap_used_bytes", "Swap used in bytes.",
	      web_num(smp, "swap_used_bytes", 0));
	gauge(b, "stageload_swap_total_bytes", "Swap total in bytes.",
	      web_num(smp, "swap_total_bytes", 0));
	gauge(b, "stageload_memory_compressed_bytes",
	      "Compressed memory in bytes (macOS; 0 elsewhere).",
	      web_num(smp, "compressed_bytes", 0));
	gauge(b, "stageload_memory_wired_bytes",
	      "Wired memory in bytes (macOS; 0 elsewhere).",
	      web_num(smp, "wired_bytes", 0));
	gauge(b, "stageload_memory_pressure_level",
	      "Memory pressure: 0 normal, 1 warn, 2 critical, -1 unknown.",
	      names_pressure_level(web_str(smp, "pressure")));
	psi = cJSON_GetObjectItemCaseSensitive(smp, "psi_some_avg10");
	if (cJSON_IsNumber(psi))
		gauge(b, "stageload_memory_psi_some_avg10_ratio",
		      "Linux PSI memory some avg10, 0-1.",
		      psi->valuedouble / 100.0);
	gauge(b, "stageload_sample_age_seconds",
	      "Age of the daemon's latest sample in seconds.",
	      (double)(s->now_ms - (int64_t)web_num(smp, "sampled_at_ms", 0)) /
	          1000.0);
}

static void
queue_metrics(const struct web_snap *s, struct svgp_buf *b)
{
	const cJSON *jobs = cJSON_GetObjectItemCaseSensitive(s->info, "jobs");
	const cJSON *wf =
	    cJSON_GetObjectItemCaseSensitive(s->info, "waiting_for");
	const cJSON *w;
	int nwait[NAMES_WAIT_COUNT] = {0}, other = 0, k;

	family(b, "stageload_jobs", "gauge", "Jobs not ended, by state.");
	/* The states before the end, as info counts them. */
	for (k = NAMES_STATE_QUEUED; k <= NAMES_STATE_RUNNING; k++)
		svgp_printf(b, "stageload_jobs{state=\"%s\"} %.0f\n",
		            names_state_name(k),
		            web_num(jobs, names_state_name(k), 0));
	/* info counts them (waiting_for), so the queue is not read. */
	cJSON_ArrayForEach(w, wf)
	{
		if (!cJSON_IsNumber(w))
			continue;
		if ((k = names_wait_parse(w->string)) >= 0)
			nwait[k] += (int)w->valuedouble;
		else
			other += (int)w->valuedouble;
	}
	family(b, "stageload_jobs_waiting", "gauge",
	       "Queued jobs by what they wait for (PROTOCOL.md, Job: "
	       "waiting_for).");
	/* Every waiting_for the daemon knows (proto/names.h), 0 or not, so a
	 * series does not vanish while nothing waits for it. */
	for (k = 0; k < NAMES_WAIT_COUNT; k++)
		svgp_printf(b,
		            "stageload_jobs_waiting{waiting_for=\"%s\"} %d\n",
		            names_wait_name(k), nwait[k]);
	if (other > 0)
		svgp_printf(
		    b, "stageload_jobs_waiting{waiting_for=\"other\"} %d\n",
		    other);
}

/* A job's labels (id, user, name), and stage when it is not NULL. */
static void
job_labels(struct svgp_buf *b, const char *name, const cJSON *j,
           const char *stage)
{
	svgp_printf(b, "%s{id=\"%.0f\",user=\"", name, web_num(j, "id", 0));
	label(b, web_str(j, "user"));
	svgp_puts(b, "\",name=\"");
	label(b, web_str(j, "name"));
	if (stage != NULL) {
		svgp_puts(b, "\",stage=\"");
		label(b, stage);
	}
	svgp_puts(b, "\"}");
}

static void
job_metric(const struct web_snap *s, struct svgp_buf *b, const char *name,
           const char *help, const char *member)
{
	const cJSON *j;

	family(b, name, "gauge", help);
	cJSON_ArrayForEach(j, s->jobs)
	{
		const char *st = web_str(j, "state");
		if (st == NULL ||
		    (strcmp(st, "admitted") != 0 && strcmp(st, "running") != 0))
			continue;
		job_labels(b, name, j, NULL);
		value(b, web_num(j, member, 0));
	}
}

/* The stage a job holding memory is in: its latest `stage`, still open
 * (show's stages, PROTOCOL.md), labelled with its name; the value is
 * when it began. One `show` a held job (they are few: they hold the
 * memory); a job in no stage has no line. */
static void
stage_metric(struct web_daemon *wd, const struct web_snap *s,
             struct svgp_buf *b)
{
	const cJSON *j;
	char params[48];

	family(b, "stageload_job_stage_started_seconds", "gauge",
	       "When a job holding memory began the stage it reported last "
	       "and is in, in seconds since the epoch.");
	cJSON_ArrayForEach(j, s->jobs)
	{
		const char *st = web_str(j, "state"), *name;
		const cJSON *stages, *last;
		cJSON *r = NULL;

		if (st == NULL ||
		    (strcmp(st, "admitted") != 0 && strcmp(st, "running") != 0))
			continue;
		snprintf(params, sizeof params, "{\"id\":%.0f}",
		         web_num(j, "id", 0));
		if (web_daemon_call(wd, "show", params, &r) < 0)
			continue;
		stages = cJSON_GetObjectItemCaseSensitive(r, "stages");
		last =
		    cJSON_GetArrayItem(stages, cJSON_GetArraySize(stages) - 1);
		name = web_str(last, "name");
		if (name != NULL &&
		    cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(
		        last, "ended_at_ms"))) {
			job_labels(b, "stageload_job_stage_started_seconds", j,
			           name);
			value(b, web_num(last, "started_at_ms", 0) / 1000.0);
		}
		cJSON_Delete(r);
	}
}

static void
counter_metrics(const struct web_snap *s, struct svgp_buf *b)
{
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(s->info, "counters");
	const cJSON *e;

	family(b, "stageload_jobs_ended_total", "counter",
	       "Jobs ended since the daemon started, by state and end "
	       "reason (reason \"\" when none).");
	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(c, "jobs_ended"))
	{
		svgp_puts(b, "stageload_jobs_ended_total{state=\"");
		label(b, web_str(e, "state"));
		svgp_puts(b, "\",reason=\"");
		label(b, web_str(e, "reason"));
		svgp_puts(b, "\"}");
		value(b, web_num(e, "count", 0));
	}
	family(b, "stageload_breaches_total", "counter",
	       "Swap budget breaches since the daemon started (requeued "
	       "attempts too).");
	if (cJSON_IsObject(c)) {
		svgp_puts(b, "stageload_breaches_total");
		value(b, web_num(c, "breaches", 0));
	}
}

int
web_metrics(struct web_daemon *wd, const struct web_request *rq,
            struct svgp_buf *b, const char **type)
{
	struct web_snap s;
	const char *err;

	(void)rq;
	*type = "text/plain; version=0.0.4; charset=utf-8";
	web_snap_take(wd, WEB_SNAP_HELD, 0, &s);
	gauge(b, "stageload_up",
	      "1 when the web program reached the daemon for this scrape.",
	      s.up);
	family(b, "stageload_daemon_restarts_total", "counter",
	       "Daemon restarts the web program saw (its start time "
	       "changed) since the web program started.");
	svgp_printf(b, "stageload_daemon_restarts_total %" PRIu64 "\n",
	            wd->restarts);
	family(b, "stageload_web_reconnects_total", "counter",
	       "Connections to the daemon the web program made again after "
	       "it lost one.");
	svgp_printf(b, "stageload_web_reconnects_total %" PRIu64 "\n",
	            wd->reconnects);
	if (s.info != NULL) {
		family(b, "stageload_info", "gauge",
		       "The daemon's version, protocol and sample interval.");
		svgp_puts(b, "stageload_info{version=\"");
		label(b, web_str(s.info, "daemon_version"));
		svgp_puts(b, "\",os=\"");
		label(b, web_str(s.info, "os"));
		svgp_printf(b, "\",protocol=\"%.0f\",interval_ms=\"%.0f\"} 1\n",
		            web_num(s.info, "version", 0),
		            web_num(s.info, "interval_ms", 0));
		gauge(b, "stageload_sample_interval_seconds",
		      "The daemon's sample interval in seconds.",
		      web_num(s.info, "interval_ms", 0) / 1000.0);
		gauge(b, "stageload_daemon_start_time_seconds",
		      "When the daemon started, seconds since the epoch.",
		      web_num(s.info, "started_at_ms", 0) / 1000.0);
		err = web_str(s.info, "storage_error");
		gauge(b, "stageload_storage_ok",
		      "1 while the daemon's database works, 0 while it fails.",
		      err == NULL);
		gauge(b, "stageload_database_size_bytes",
		      "Size of the daemon's database in bytes.",
		      web_num(s.info, "db_bytes", 0));
		system_metrics(&s, b);
		queue_metrics(&s, b);
		job_metric(&s, b, "stageload_job_footprint_bytes",
		           "Footprint of a job holding memory in bytes.",
		           "footprint_bytes");
		job_metric(&s, b, "stageload_job_swap_growth_bytes",
		           "Swap growth of a job holding memory in bytes.",
		           "swap_growth_bytes");
		job_metric(&s, b, "stageload_job_swap_budget_bytes",
		           "Swap budget of a job holding memory in bytes (0: "
		           "none).",
		           "swap_budget_bytes");
		stage_metric(wd, &s, b);
		counter_metrics(&s, b);
	}
	web_snap_free(&s);
	return b->oom ? 500 : 200;
}
