/*
 * /: the dashboard page. One HTML document with its style inline and the
 * plot as inline SVG (plot-data.c): no script, no external resource, so
 * it works offline and under a Content-Security-Policy of default-src
 * 'none'. It reloads itself every few seconds (meta refresh), keeping its
 * window.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "plot-data.h"
#include "web.h"

#define WEB_REFRESH_S 5
/* Rows of the queue table; the rest are counted. */
#define WEB_QUEUE_ROWS WEB_QUEUED_MAX

static const struct {
	const char *arg, *label;
	int64_t span_ms, step_ms;
} windows[] = {
    {"15m", "15 min", 15 * 60000LL, 2000},
    {"1h", "1 h", 3600000LL, 10000},
    {"24h", "24 h", 86400000LL, 120000},
    {"7d", "7 d", 7 * 86400000LL, 600000},
};
#define NWINDOWS (sizeof windows / sizeof windows[0])

static const char page_style[] =
    "<style>"
    ":root{color-scheme:light dark;--fg:#222;--bg:#fff;--mut:#666;"
    "--line:#ddd;--bad:#c00;--ok:#1a7f37}"
    "@media (prefers-color-scheme:dark){:root{--fg:#ddd;--bg:#161616;"
    "--mut:#999;--line:#333;--bad:#ff6b6b;--ok:#4ac26b}}"
    "body{font:14px/1.4 system-ui,sans-serif;margin:0 auto;padding:8px;"
    "max-width:1100px;color:var(--fg);background:var(--bg)}"
    "h1{font-size:18px;margin:4px 0}h2{font-size:15px;margin:16px 0 4px}"
    ".mut{color:var(--mut)}.bad{color:var(--bad)}.ok{color:var(--ok)}"
    "nav a{margin-right:8px}nav a[aria-current]{font-weight:700}"
    ".scroll{overflow-x:auto}"
    "table{border-collapse:collapse;width:100%}"
    "th,td{text-align:left;padding:3px 6px;border-bottom:1px solid "
    "var(--line);white-space:nowrap}"
    "td.n,th.n{text-align:right}"
    "meter{width:80px}"
    "svg{display:block;max-width:100%;height:auto}"
    /* The plot is drawn at three widths and the one that fits is shown,
     * so its text stays at least 10 CSS px from a 400 px phone up. */
    ".pw{display:none}"
    "@media (max-width:700px){#plot-360{display:block}}"
    "@media (min-width:701px) and (max-width:1000px){#plot-640{display:"
    "block}}"
    "@media (min-width:1001px){#plot-960{display:block}}"
    "#marks li{white-space:nowrap}#marks ol{margin:4px 0;"
    "max-height:12em;overflow:auto}"
    "</style>";

static void
clock_str(int64_t ms, int64_t now_ms, char *buf, size_t len)
{
	time_t t = (time_t)(ms / 1000), n = (time_t)(now_ms / 1000);
	struct tm tm, tn;

	if (ms <= 0) {
		snprintf(buf, len, "-");
		return;
	}
	localtime_r(&t, &tm);
	localtime_r(&n, &tn);
	if (tm.tm_yday == tn.tm_yday && tm.tm_year == tn.tm_year)
		strftime(buf, len, "%H:%M:%S", &tm);
	else
		strftime(buf, len, "%a %d %b %H:%M", &tm);
}

static void
td_size(struct svgp_buf *b, double v)
{
	char s[32];

	svgp_size((uint64_t)(v < 0 ? 0 : v), s, sizeof s);
	svgp_printf(b, "<td class=\"n\">%s</td>", s);
}

static void
td_text(struct svgp_buf *b, const char *t)
{
	svgp_puts(b, "<td>");
	svgp_esc(b, t ? t : "");
	svgp_puts(b, "</td>");
}

/* What a queued job waits for, in the words `stageloadctl run` prints
 * after "queued: position P of N, " (proto/names.h's list). */
static void
wait_words(const cJSON *j, const cJSON *smp, int64_t reserved, char *buf,
           size_t len)
{
	struct cli_wait w = {web_str(j, "waiting_for"),
	                     web_num(smp, "free_pct", 0),
	                     web_num(j, "wait_free_pct", 0),
	                     reserved,
	                     (uint64_t)web_num(j, "wait_free_bytes", 0),
	                     (int64_t)web_num(smp, "available_bytes", 0),
	                     (int64_t)web_num(j, "id", 0)};

	if (w.waiting_for == NULL)
		w.waiting_for = "";
	cli_wait_reason(&w, CLI_REASON_LINE, buf, len);
}

static int
state_is(const cJSON *j, const char *st)
{
	const char *s = web_str(j, "state");

	return s != NULL && strcmp(s, st) == 0;
}

/* Memory promised to the jobs holding memory, as admission counts it
 * (docs/jobs.md, "Admission"; cli_reserved_bytes for stageloadctl): what
 * each expects and has not reached yet. */
static int64_t
reserved_bytes(const struct web_snap *s)
{
	const cJSON *j;
	double r = 0;

	cJSON_ArrayForEach(j, s->jobs)
	{
		const char *st = web_str(j, "state");
		double e = web_num(j, "expect_bytes", 0);
		double f = web_num(j, "footprint_bytes", 0);
		if (st != NULL &&
		    (strcmp(st, "admitted") == 0 ||
		     strcmp(st, "running") == 0) &&
		    e > f)
			r += e - f;
	}
	return (int64_t)r;
}

static void
queue_table(const struct web_snap *s, const cJSON *smp, struct svgp_buf *b)
{
	const cJSON *j;
	int n = 0;
	int64_t reserved = reserved_bytes(s);
	char buf[256];

	svgp_puts(b,
	          "<section id=\"queue\"><h2>Queue</h2><div class=\"scroll\">"
	          "<table><thead><tr><th class=\"n\">#</th><th "
	          "class=\"n\">id</th><th>user</th><th>name</th><th>waits "
	          "for</th><th>submitted</th></tr></thead><tbody>");
	cJSON_ArrayForEach(j, s->jobs)
	{
		if (!state_is(j, "queued"))
			continue;
		if (++n > WEB_QUEUE_ROWS)
			continue;
		svgp_printf(b,
		            "<tr data-job=\"%.0f\"><td class=\"n\">%.0f</td>"
		            "<td class=\"n\">%.0f</td>",
		            web_num(j, "id", 0), web_num(j, "position", 0),
		            web_num(j, "id", 0));
		td_text(b, web_str(j, "user"));
		td_text(b, web_str(j, "name"));
		wait_words(j, smp, reserved, buf, sizeof buf);
		td_text(b, buf);
		clock_str((int64_t)web_num(j, "submitted_at_ms", 0), s->now_ms,
		          buf, sizeof buf);
		td_text(b, buf);
		svgp_puts(b, "</tr>");
	}
	if (n == 0)
		svgp_puts(b, "<tr><td colspan=\"6\" class=\"mut\">nothing "
		             "queued</td></tr>");
	if (n + s->queued_left > WEB_QUEUE_ROWS)
		svgp_printf(b,
		            "<tr><td colspan=\"6\" class=\"mut\">and %d more "
		            "(/api/status lists them all)</td></tr>",
		            n + s->queued_left - WEB_QUEUE_ROWS);
	svgp_puts(b, "</tbody></table></div></section>");
}

static void
running_table(const struct web_snap *s, struct svgp_buf *b)
{
	const cJSON *j;
	int n = 0;
	char buf[64];

	svgp_puts(b, "<section id=\"running\"><h2>Running</h2><div "
	             "class=\"scroll\"><table><thead><tr><th "
	             "class=\"n\">id</th><th>user</th><th>name</th>"
	             "<th>state</th><th class=\"n\">footprint</th><th "
	             "class=\"n\">swap growth</th><th class=\"n\">budget</th>"
	             "<th></th><th>started</th></tr></thead><tbody>");
	cJSON_ArrayForEach(j, s->jobs)
	{
		double g = web_num(j, "swap_growth_bytes", 0);
		double bud = web_num(j, "swap_budget_bytes", 0);

		if (!state_is(j, "running") && !state_is(j, "admitted"))
			continue;
		n++;
		svgp_printf(b,
		            "<tr data-job=\"%.0f\"><td class=\"n\">%.0f</td>",
		            web_num(j, "id", 0), web_num(j, "id", 0));
		td_text(b, web_str(j, "user"));
		td_text(b, web_str(j, "name"));
		td_text(b, web_str(j, "state"));
		td_size(b, web_num(j, "footprint_bytes", 0));
		td_size(b, g);
		if (bud > 0) {
			td_size(b, bud);
			svgp_printf(
			    b,
			    "<td><meter min=\"0\" max=\"%.0f\" "
			    "value=\"%.0f\" high=\"%.0f\">%.0f%%</meter>"
			    "</td>",
			    bud, g < bud ? g : bud, bud * 0.8, 100.0 * g / bud);
		} else
			svgp_puts(b, "<td class=\"n\">none</td><td></td>");
		clock_str((int64_t)web_num(j, "started_at_ms", 0), s->now_ms,
		          buf, sizeof buf);
		td_text(b, buf);
		svgp_puts(b, "</tr>");
	}
	if (n == 0)
		svgp_puts(b, "<tr><td colspan=\"9\" class=\"mut\">nothing "
		             "running</td></tr>");
	svgp_puts(b, "</tbody></table></div></section>");
}

/* The stage a job last reported before t, from the events. */
static const char *
stage_before(const struct web_snap *s, double job_id, double t)
{
	const cJSON *e;
	const char *st = NULL;

	cJSON_ArrayForEach(e, s->events)
	{
		if (web_num(e, "job_id", 0) != job_id ||
		    web_num(e, "ts_ms", 0) > t || web_str(e, "stage") == NULL)
			continue;
		st = web_str(e, "stage");
	}
	return st;
}

static void
kills_table(const struct web_snap *s, struct svgp_buf *b)
{
	const cJSON *j, *k;
	int n = 0;
	char buf[64];

	svgp_puts(b, "<section id=\"kills\"><h2>Latest kills</h2><div "
	             "class=\"scroll\"><table><thead><tr><th "
	             "class=\"n\">id</th><th>user</th><th>name</th>"
	             "<th>killed</th><th class=\"n\">budget</th><th "
	             "class=\"n\">growth</th><th class=\"n\">footprint</th>"
	             "<th class=\"n\">free</th><th>pressure</th><th>stage</th>"
	             "</tr></thead><tbody>");
	cJSON_ArrayForEach(j, s->jobs)
	{
		const char *stage;
		double at;

		k = cJSON_GetObjectItemCaseSensitive(j, "kill");
		if (!state_is(j, "killed") || !cJSON_IsObject(k) || n >= 20)
			continue;
		n++;
		at = web_num(k, "at_ms", 0);
		svgp_printf(b,
		            "<tr class=\"kill\" data-job=\"%.0f\"><td "
		            "class=\"n\">%.0f</td>",
		            web_num(j, "id", 0), web_num(j, "id", 0));
		td_text(b, web_str(j, "user"));
		td_text(b, web_str(j, "name"));
		clock_str((int64_t)at, s->now_ms, buf, sizeof buf);
		td_text(b, buf);
		td_size(b, web_num(k, "swap_budget_bytes", 0));
		td_size(b, web_num(k, "swap_growth_bytes", 0));
		td_size(b, web_num(k, "footprint_bytes", 0));
		svgp_printf(b, "<td class=\"n\">%.0f%%</td>",
		            web_num(k, "free_pct", 0));
		td_text(b, web_str(k, "pressure"));
		/* The kill numbers name no stage: the stage event before
		 * the kill does. */
		stage = stage_before(s, web_num(j, "id", 0), at);
		td_text(b, stage ? stage : "-");
		svgp_puts(b, "</tr>");
	}
	if (n == 0)
		svgp_puts(b, "<tr><td colspan=\"10\" class=\"mut\">no kills "
		             "recently</td></tr>");
	svgp_puts(b, "</tbody></table></div></section>");
}

static void
now_line(struct web_daemon *wd, const struct web_snap *s, struct svgp_buf *b)
{
	const cJSON *smp = cJSON_GetObjectItemCaseSensitive(s->info, "sample");
	char used[32], total[32], when[64];

	svgp_puts(b, "<p id=\"daemon\" class=\"");
	if (!s->up) {
		svgp_puts(b, "bad\">daemon not reachable: ");
		svgp_esc(b, wd->error);
		svgp_printf(b, " (retrying every %d s)</p>", WEB_REFRESH_S);
		return;
	}
	svgp_puts(b, "ok\">daemon ");
	svgp_esc(b, web_str(s->info, "daemon_version"));
	clock_str((int64_t)web_num(s->info, "started_at_ms", 0), s->now_ms,
	          when, sizeof when);
	svgp_printf(b, ", up since %s", when);
	if (wd->last_restart_ms > 0) {
		clock_str(wd->last_restart_ms, s->now_ms, when, sizeof when);
		svgp_printf(b,
		            "; <span id=\"restarted\">reconnected at %s: the "
		            "daemon restarted</span>",
		            when);
	}
	if (web_str(s->info, "storage_error") != NULL) {
		svgp_puts(b, "; <span class=\"bad\">storage fails: ");
		svgp_esc(b, web_str(s->info, "storage_error"));
		svgp_puts(b, "</span>");
	}
	svgp_puts(b, "</p>");
	if (!cJSON_IsObject(smp)) {
		svgp_puts(b, "<p id=\"now\" class=\"mut\">no sample yet</p>");
		return;
	}
	svgp_size((uint64_t)web_num(smp, "swap_used_bytes", 0), used,
	          sizeof used);
	svgp_size((uint64_t)web_num(smp, "swap_total_bytes", 0), total,
	          sizeof total);
	svgp_printf(b,
	            "<p id=\"now\">free <b id=\"free-pct\">%.1f%%</b> · swap "
	            "used <b id=\"swap-used\">%s</b> of %s · pressure <b "
	            "id=\"pressure\">",
	            web_num(smp, "free_pct", 0), used, total);
	svgp_esc(b, web_str(smp, "pressure"));
	svgp_printf(
	    b, "</b> · <span class=\"mut\">sampled %.1f s ago</span></p>",
	    (double)(s->now_ms - (int64_t)web_num(smp, "sampled_at_ms", 0)) /
	        1000.0);
}

int
web_page(struct web_daemon *wd, const struct web_request *rq,
         struct svgp_buf *b, const char **type)
{
	const char *warg = rq->arg(rq->ctx, "window");
	struct web_snap s;
	size_t w = 1, i;
	int64_t t0, t1;

	*type = "text/html; charset=utf-8";
	for (i = 0; warg != NULL && i < NWINDOWS; i++)
		if (strcmp(warg, windows[i].arg) == 0)
			w = i;
	t1 = web_now_ms();
	t0 = t1 - windows[w].span_ms;
	web_snap_take(wd, WEB_SNAP_JOBS | WEB_SNAP_ENDED | WEB_SNAP_EVENTS, t0,
	              &s);
	svgp_printf(b,
	            "<!doctype html><html lang=\"en\"><head><meta "
	            "charset=\"utf-8\"><meta name=\"viewport\" "
	            "content=\"width=device-width,initial-scale=1\"><meta "
	            "http-equiv=\"refresh\" content=\"%d\"><title>stageload"
	            "</title>%s</head><body><header><h1>stageload</h1>",
	            WEB_REFRESH_S, page_style);
	now_line(wd, &s, b);
	svgp_puts(b, "</header><nav id=\"window\">window: ");
	for (i = 0; i < NWINDOWS; i++)
		svgp_printf(
		    b, "<a href=\"/?window=%s\"%s>%s</a>", windows[i].arg,
		    i == w ? " aria-current=\"page\"" : "", windows[i].label);
	svgp_puts(b, "</nav>");
	if (s.up) {
		char params[160];
		cJSON *hist = NULL;
		const cJSON *smp =
		    cJSON_GetObjectItemCaseSensitive(s.info, "sample");
		struct plotd_opts o = {0};

		snprintf(params, sizeof params,
		         "{\"since_ms\":%" PRId64 ",\"until_ms\":%" PRId64
		         ",\"step_ms\":%" PRId64 "}",
		         t0, t1 + 1, windows[w].step_ms);
		web_daemon_call(wd, "history", params, &hist);
		/* The default window starts at the first sample in it: a
		 * daemon up 15 min fills the plot rather than its right
		 * quarter. Asked again at the step of the window that fits
		 * (a window the user picks is drawn whole). */
		if (warg == NULL &&
		    plotd_first_ts(hist) > t0 + windows[w].step_ms) {
			size_t f = 0;

			t0 = plotd_first_ts(hist);
			while (f + 1 < NWINDOWS && windows[f].span_ms < t1 - t0)
				f++;
			snprintf(params, sizeof params,
			         "{\"since_ms\":%" PRId64
			         ",\"until_ms\":%" PRId64
			         ",\"step_ms\":%" PRId64 "}",
			         t0, t1 + 1, windows[f].step_ms);
			cJSON_Delete(hist);
			hist = NULL;
			web_daemon_call(wd, "history", params, &hist);
			if (plotd_first_ts(hist) > t0)
				t0 = plotd_first_ts(hist);
		}
		o.title = "memory";
		o.max_lanes = WEB_LANES_MAX;
		o.bytes_max = web_num(smp, "swap_total_bytes", 0);
		static const int widths[] = {360, 640, 960};
		struct svgp_buf list = {0};

		svgp_puts(b, "<section id=\"plot\">");
		for (i = 0; i < sizeof widths / sizeof widths[0]; i++) {
			o.width = widths[i];
			/* The marks are the same at each width: listed once. */
			o.marks_list = i == 0 ? &list : NULL;
			svgp_printf(b, "<div class=\"pw\" id=\"plot-%d\">",
			            widths[i]);
			plotd_system(&o, hist, s.jobs, s.events, t0, t1, b);
			svgp_puts(b, "</div>");
		}
		/* Every mark, also those whose label had no room. */
		svgp_puts(b, "<details id=\"marks\"><summary>marks in the "
		             "window</summary><ol>");
		if (list.n > 0)
			svgp_putn(b, list.p, list.n);
		svgp_puts(b, "</ol></details></section>");
		if (list.oom)
			b->oom = 1;
		svgp_buf_free(&list);
		cJSON_Delete(hist);
		queue_table(&s, smp, b);
		running_table(&s, b);
		kills_table(&s, b);
	}
	svgp_puts(b, "<footer class=\"mut\"><p><a href=\"/metrics\">metrics"
	             "</a> · <a href=\"/api/status\">api/status</a> · <a "
	             "href=\"/api/history\">api/history</a> · <a "
	             "href=\"/api/events\">api/events</a></p></footer>"
	             "</body></html>\n");
	web_snap_free(&s);
	return b->oom ? 500 : 200;
}
