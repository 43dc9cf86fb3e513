/*
 * /: the dashboard page. One HTML document with its style inline and the
 * plot as inline SVG (plot-data.c): no script, no external resource, so
 * it works offline and under a Content-Security-Policy of default-src
 * 'none'. It reloads itself every few seconds (meta refresh), keeping its
 * window.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "cli.h"
#include "plot-data.h"
#include "units.h"
#include "web.h"

/* Rows of the recently ended table. */
#define WEB_ENDED_ROWS 20

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
    /* the queue and the recent ends side by side where there is room */
    ".pair{display:grid;gap:0 16px;grid-template-columns:minmax(0,1fr)}"
    "@media (min-width:1001px){.pair{"
    "grid-template-columns:minmax(0,1fr) minmax(0,1fr)}}"
    "#fields table{width:auto}#marks li{white-space:nowrap}"
    "#marks ol{margin:4px 0;"
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
	                     (int64_t)web_num(j, "id", 0),
	                     (int64_t)web_num(j, "begin_ms", 0),
	                     NULL,
	                     (int64_t)web_num(j, "waiting_until_ms", 0),
	                     web_str(j, "group")};
	/* The jobs it waits behind, named as run names them. */
	char *on = cJSON_PrintUnformatted(
	    cJSON_GetObjectItemCaseSensitive(j, "waiting_on"));

	if (w.waiting_for == NULL)
		w.waiting_for = "";
	w.on_json = on;
	cli_wait_reason(&w, CLI_REASON_LINE, buf, len);
	cJSON_free(on);
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
		svgp_printf(
		    b,
		    "<tr data-job=\"%.0f\"><td class=\"n\">%.0f</td>"
		    "<td class=\"n\"><a href=\"/job/%.0f\">%.0f</a></td>",
		    web_num(j, "id", 0), web_num(j, "position", 0),
		    web_num(j, "id", 0), web_num(j, "id", 0));
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

	svgp_puts(
	    b, "<section id=\"running\"><h2>Running</h2><div "
	       "class=\"scroll\"><table><thead><tr><th "
	       "class=\"n\">id</th><th>user</th><th>name</th>"
	       "<th>state</th><th class=\"n\">footprint</th><th "
	       "class=\"n\">system swap growth</th><th class=\"n\">budget</th>"
	       "<th></th><th>started</th></tr></thead><tbody>");
	cJSON_ArrayForEach(j, s->jobs)
	{
		double g = web_num(j, "swap_growth_bytes", 0);
		double bud = web_num(j, "swap_budget_bytes", 0);

		if (!state_is(j, "running") && !state_is(j, "admitted"))
			continue;
		n++;
		svgp_printf(b,
		            "<tr data-job=\"%.0f\"><td class=\"n\"><a "
		            "href=\"/job/%.0f\">%.0f</a></td>",
		            web_num(j, "id", 0), web_num(j, "id", 0),
		            web_num(j, "id", 0));
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
		const char *stage, *why;
		double at;

		k = cJSON_GetObjectItemCaseSensitive(j, "kill");
		/* swap kills: a time limit's kill has no swap numbers */
		why = web_str(j, "end_reason");
		if (!state_is(j, "killed") || !cJSON_IsObject(k) || n >= 20 ||
		    (why != NULL && strcmp(why, "swap_budget") != 0))
			continue;
		n++;
		at = web_num(k, "at_ms", 0);
		svgp_printf(b,
		            "<tr class=\"kill\" data-job=\"%.0f\"><td "
		            "class=\"n\"><a href=\"/job/%.0f\">%.0f</a></td>",
		            web_num(j, "id", 0), web_num(j, "id", 0),
		            web_num(j, "id", 0));
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

/* A job's state in the words of `stageloadctl status` ("killed
 * (swap_budget)", "exited 0", "queued #2"): cli_state_words. */
static void
end_words(const cJSON *j, char *buf, size_t len)
{
	const char *st = web_str(j, "state");

	cli_state_words(st ? st : "?", (int)web_num(j, "position", 0),
	                (int)web_num(j, "exit_code", 0),
	                (int)web_num(j, "signal", 0), web_str(j, "end_reason"),
	                buf, len);
}

static void
td_duration(struct svgp_buf *b, const cJSON *j)
{
	double s = web_num(j, "started_at_ms", 0),
	       e = web_num(j, "ended_at_ms", 0);
	char d[32];

	if (s <= 0 || e < s) {
		svgp_puts(b, "<td class=\"n\">-</td>");
		return;
	}
	units_format_duration((int64_t)(e - s), d, sizeof d);
	svgp_printf(b, "<td class=\"n\">%s</td>", d);
}

/* The jobs that ended lately, newest first: how each ended, its peak
 * footprint, its highest swap growth and how long it ran. */
static void
ended_table(const struct web_snap *s, struct svgp_buf *b)
{
	const cJSON *j;
	int n = 0;
	char buf[96];

	svgp_puts(b,
	          "<section id=\"ended\"><h2>Recently ended</h2><div "
	          "class=\"scroll\"><table><thead><tr><th "
	          "class=\"n\">id</th><th>user</th><th>name</th>"
	          "<th>end</th><th class=\"n\">peak</th><th "
	          "class=\"n\">system swap growth</th><th class=\"n\">ran</th>"
	          "<th>ended</th></tr></thead><tbody>");
	cJSON_ArrayForEach(j, s->jobs)
	{
		if (web_num(j, "ended_at_ms", 0) <= 0 || n >= WEB_ENDED_ROWS)
			continue;
		n++;
		svgp_printf(b,
		            "<tr data-job=\"%.0f\"><td class=\"n\"><a "
		            "href=\"/job/%.0f\">%.0f</a></td>",
		            web_num(j, "id", 0), web_num(j, "id", 0),
		            web_num(j, "id", 0));
		td_text(b, web_str(j, "user"));
		td_text(b, web_str(j, "name"));
		end_words(j, buf, sizeof buf);
		td_text(b, buf);
		td_size(b, web_num(j, "footprint_peak_bytes", 0));
		td_size(b, web_num(j, "swap_growth_peak_bytes", 0));
		td_duration(b, j);
		clock_str((int64_t)web_num(j, "ended_at_ms", 0), s->now_ms, buf,
		          sizeof buf);
		td_text(b, buf);
		svgp_puts(b, "</tr>");
	}
	if (n == 0)
		svgp_puts(b, "<tr><td colspan=\"8\" class=\"mut\">nothing "
		             "ended in the window</td></tr>");
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

static const int plot_widths[] = {360, 640, 960};
#define NPLOT_WIDTHS (sizeof plot_widths / sizeof plot_widths[0])

static void
page_head(struct svgp_buf *b, const char *title, int refresh)
{
	svgp_puts(b, "<!doctype html><html lang=\"en\"><head><meta "
	             "charset=\"utf-8\"><meta name=\"viewport\" "
	             "content=\"width=device-width,initial-scale=1\">");
	if (refresh)
		svgp_printf(b, "<meta http-equiv=\"refresh\" content=\"%d\">",
		            WEB_REFRESH_S);
	svgp_puts(b, "<title>");
	svgp_esc(b, title);
	svgp_printf(b, "</title>%s</head><body>", page_style);
}

/* A row of the job page's field table; value escaped. */
static void
field_row(struct svgp_buf *b, const char *name, const char *value)
{
	svgp_printf(b, "<tr data-field=\"%s\"><th>%s</th><td>", name, name);
	svgp_esc(b, value);
	svgp_puts(b, "</td></tr>");
}

static void
field_size(struct svgp_buf *b, const char *name, const cJSON *j,
           const char *member)
{
	char s[32];

	svgp_size((uint64_t)web_num(j, member, 0), s, sizeof s);
	field_row(b, name, s);
}

static void
field_clock(struct svgp_buf *b, const char *name, const cJSON *j,
            const char *member, int64_t now)
{
	char s[64];

	clock_str((int64_t)web_num(j, member, 0), now, s, sizeof s);
	field_row(b, name, s);
}

/* The public fields of a job (j is web_public_job's copy: nothing else
 * can be printed from it). */
static void
job_fields(struct svgp_buf *b, const cJSON *j, int64_t now)
{
	char s[128];
	double v;

	svgp_puts(b, "<section id=\"fields\"><div class=\"scroll\"><table>"
	             "<tbody>");
	field_row(b, "user", web_str(j, "user") ? web_str(j, "user") : "");
	field_row(b, "name", web_str(j, "name") ? web_str(j, "name") : "");
	end_words(j, s, sizeof s);
	field_row(b, "state", s);
	if (web_str(j, "waiting_for") != NULL)
		field_row(b, "waits for", web_str(j, "waiting_for"));
	snprintf(s, sizeof s, "%.0f of %.0f", web_num(j, "attempt", 1),
	         web_num(j, "retry_on_breach", 0) + 1);
	field_row(b, "attempt", s);
	field_clock(b, "submitted", j, "submitted_at_ms", now);
	field_clock(b, "started", j, "started_at_ms", now);
	field_clock(b, "ended", j, "ended_at_ms", now);
	v = web_num(j, "started_at_ms", 0);
	if (v > 0) {
		double e = web_num(j, "ended_at_ms", 0);
		units_format_duration((int64_t)((e > 0 ? e : (double)now) - v),
		                      s, sizeof s);
		field_row(b, "ran", s);
	}
	field_size(b, "footprint", j, "footprint_bytes");
	field_size(b, "footprint peak", j, "footprint_peak_bytes");
	field_size(b, "system swap growth", j, "swap_growth_bytes");
	field_size(b, "system swap growth peak", j, "swap_growth_peak_bytes");
	if (web_num(j, "swap_budget_bytes", 0) > 0)
		field_size(b, "swap budget", j, "swap_budget_bytes");
	else
		field_row(b, "swap budget", "none");
	if (web_num(j, "expect_bytes", 0) > 0)
		field_size(b, "expects", j, "expect_bytes");
	if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(j, "exit_code"))) {
		snprintf(s, sizeof s, "%.0f", web_num(j, "exit_code", 0));
		field_row(b, "exit code", s);
	}
	if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(j, "signal"))) {
		snprintf(s, sizeof s, "%.0f", web_num(j, "signal", 0));
		field_row(b, "signal", s);
	}
	svgp_puts(b, "</tbody></table></div></section>");
}

/* A member of an attempt's record in ms, 0 when null or missing. */
static int64_t
attempt_ms(const cJSON *a, const char *name)
{
	double v = web_num(a, name, 0);

	return v > 0 ? (int64_t)v : 0;
}

static void
td_ms(struct svgp_buf *b, int64_t ms)
{
	char d[32];

	if (ms < 0) {
		svgp_puts(b, "<td class=\"n\">-</td>");
		return;
	}
	units_format_duration(ms, d, sizeof d);
	svgp_printf(b, "<td class=\"n\">%s</td>", d);
}

/* The job's attempts (PROTOCOL.md, Job: attempts), the first first: when
 * each was queued, admitted, started and ended, how long it waited in the
 * queue and ran (as stageloadctl show says them), and why it ended; none
 * for a daemon from before them. */
static void
attempts_table(struct svgp_buf *b, const cJSON *j, int64_t now)
{
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(j, "attempts"), *a;
	int n = cJSON_GetArraySize(arr), k = 0;
	char s[64];

	if (!cJSON_IsArray(arr) || n == 0)
		return;
	svgp_puts(b, "<section id=\"attempts\"><h2>Attempts</h2><div "
	             "class=\"scroll\"><table><thead><tr><th "
	             "class=\"n\">#</th><th>queued</th><th>admitted</th>"
	             "<th>started</th><th>ended</th><th class=\"n\">waited"
	             "</th><th class=\"n\">ran</th><th>end</th></tr></thead>"
	             "<tbody>");
	cJSON_ArrayForEach(a, arr)
	{
		int64_t q = attempt_ms(a, "queued_at_ms"),
		        ad = attempt_ms(a, "admitted_at_ms"),
		        st = attempt_ms(a, "started_at_ms"),
		        en = attempt_ms(a, "ended_at_ms"), w = ad ? ad : en;
		const char *why = web_str(a, "end_reason");

		/* the current attempt's end is the Job's */
		if (++k == n && why == NULL)
			why = web_str(j, "end_reason");
		svgp_printf(b,
		            "<tr data-attempt=\"%.0f\"><td class=\"n\">%.0f"
		            "</td>",
		            web_num(a, "attempt", k), web_num(a, "attempt", k));
		clock_str(q, now, s, sizeof s);
		td_text(b, s);
		clock_str(ad, now, s, sizeof s);
		td_text(b, s);
		clock_str(st, now, s, sizeof s);
		td_text(b, s);
		clock_str(en, now, s, sizeof s);
		td_text(b, s);
		/* queued until admitted, or until it ended (cancelled while
		 * queued), or until now */
		td_ms(b, q > 0 ? (w ? w : now) - q : -1);
		td_ms(b, st > 0 ? (en ? en : now) - st : -1);
		if (k < n)
			snprintf(s, sizeof s, "requeued%s%s", why ? ": " : "",
			         why ? why : "");
		else
			snprintf(s, sizeof s, "%s", why ? why : "-");
		td_text(b, s);
		svgp_puts(b, "</tr>");
	}
	svgp_puts(b, "</tbody></table></div></section>");
}

/* The id of a /job/ID path: digits, 1 to 2^53; 0 when it is not one. */
static int64_t
job_path_id(const char *path)
{
	const char *p = path + strlen("/job/");
	int64_t id = 0;

	if (*p == '\0' || strlen(p) > 16 ||
	    strspn(p, "0123456789") != strlen(p))
		return 0;
	for (; *p != '\0'; p++)
		id = id * 10 + (*p - '0');
	return id <= ((int64_t)1 << 53) ? id : 0;
}

/* /job/ID with the daemon down and --db: says so, then reads the job
 * from the copy; the HTTP status (200: *job, *hist and events filled). */
static int
offline_job(struct web_daemon *wd, int64_t id, struct svgp_buf *b, cJSON **job,
            cJSON **hist, cJSON *events)
{
	struct web_offline off;
	char why[512];
	int rc;

	svgp_puts(b, "<p id=\"daemon\" class=\"bad\">daemon not reachable: ");
	svgp_esc(b, wd->error);
	svgp_puts(b, "</p>");
	rc = web_offline_open(&off, wd->db, why, sizeof why);
	if (rc == 0) {
		rc = web_offline_job(&off, id, job, hist, events, why,
		                     sizeof why);
		web_offline_close(&off);
	}
	if (rc != 0) {
		svgp_puts(b, "<p id=\"offline-error\" class=\"bad\">");
		if (rc == -ENOENT)
			svgp_printf(b, "no job %" PRId64 " in <code>", id);
		else
			svgp_puts(b, "no history: ");
		svgp_esc(b, rc == -ENOENT ? wd->db : why);
		svgp_puts(b, rc == -ENOENT ? "</code></p>" : "</p>");
		return rc == -ENOENT ? 404 : 503;
	}
	svgp_puts(b, "<p id=\"offline-source\">As <code>");
	svgp_esc(b, wd->db);
	svgp_puts(b, "</code> has it.</p>");
	return 200;
}

int
web_job_page(struct web_daemon *wd, const struct web_request *rq,
             struct svgp_buf *b, const char **type)
{
	int64_t id = job_path_id(rq->path), now = clock_wall_ms();
	cJSON *shown = NULL, *job = NULL, *hist = NULL;
	cJSON *events = cJSON_CreateArray();
	struct svgp_buf list = {0};
	char params[96], title[64];
	int rc, status = 200;
	size_t i;

	*type = "text/html; charset=utf-8";
	snprintf(title, sizeof title, "job %" PRId64 " - stageload", id);
	page_head(b, title, 1);
	svgp_printf(b,
	            "<header><h1>job %" PRId64 "</h1><nav><a href=\"/\">all "
	            "jobs</a></nav></header>",
	            id);
	snprintf(params, sizeof params, "{\"id\":%" PRId64 "}", id);
	rc = id > 0 ? web_daemon_call(wd, "show", params, &shown) : SL_E_NOJOB;
	if (rc < 0 && rc != SL_E_NOJOB && wd->db != NULL) {
		/* The daemon is down: the job as the copy (--db) has it. */
		status = offline_job(wd, id, b, &job, &hist, events);
		if (status != 200)
			goto out;
	} else if (rc < 0) {
		status = rc == SL_E_NOJOB ? 404 : 503;
		svgp_puts(b, "<p id=\"daemon\" class=\"bad\">");
		if (rc == SL_E_NOJOB)
			svgp_printf(b, "no job %" PRId64, id);
		else {
			svgp_puts(b, "daemon not reachable: ");
			svgp_esc(b, wd->error);
		}
		svgp_puts(b, "</p>");
		goto out;
	} else {
		/* Only the allow-listed members: never argv, env, cwd,
		 * on_end or end_detail, whoever this program runs as. */
		job = web_public_job(shown);
		snprintf(params, sizeof params, "{\"job_id\":%" PRId64 "}", id);
		(void)web_daemon_call(wd, "history", params, &hist);
		(void)web_daemon_job_events(wd, id, events);
	}
	job_fields(b, job, now);
	attempts_table(b, job, now);
	svgp_puts(b, "<section id=\"plot\">");
	for (i = 0; i < NPLOT_WIDTHS; i++) {
		struct plotd_opts o = {0};

		snprintf(title, sizeof title,
		         "job %" PRId64 ": footprint and swap", id);
		o.title = title;
		o.width = plot_widths[i];
		o.marks_list = i == 0 ? &list : NULL;
		o.job_links = 1;
		svgp_printf(b, "<div class=\"pw\" id=\"plot-%d\">",
		            plot_widths[i]);
		plotd_job(&o, job, hist, events, b);
		svgp_puts(b, "</div>");
	}
	svgp_puts(b, "<details id=\"marks\" open><summary>stages and "
	             "end</summary><ol>");
	if (list.n > 0)
		svgp_putn(b, list.p, list.n);
	svgp_puts(b, "</ol></details></section>");
	if (list.oom)
		b->oom = 1;
out:
	svgp_puts(b, "</body></html>\n");
	svgp_buf_free(&list);
	cJSON_Delete(shown);
	cJSON_Delete(job);
	cJSON_Delete(hist);
	cJSON_Delete(events);
	return b->oom ? 500 : status;
}

/* Where a page's history comes from: the daemon, or with the daemon down
 * the copy of its database (--db). */
struct hist_src {
	struct web_daemon *wd;
	struct web_offline *off; /* NULL: the daemon */
};

static cJSON *
src_history(const struct hist_src *src, int64_t since, int64_t until,
            int64_t step)
{
	char params[160], why[256];
	cJSON *hist = NULL;

	if (src->off != NULL) {
		(void)web_offline_history(src->off, since, until, step, &hist,
		                          why, sizeof why);
		return hist;
	}
	snprintf(params, sizeof params,
	         "{\"since_ms\":%" PRId64 ",\"until_ms\":%" PRId64
	         ",\"step_ms\":%" PRId64 "}",
	         since, until, step);
	web_daemon_call(src->wd, "history", params, &hist);
	return hist;
}

/* The history of window w up to t1. The default window (from_first)
 * starts at the first sample in it: a daemon up 15 min fills the plot
 * rather than its right quarter; it is asked again from there at the step
 * of the window that fits (a window the user picks is drawn whole). *t0
 * is where the plot starts. */
static cJSON *
window_history(const struct hist_src *src, size_t w, int from_first,
               int64_t *t0, int64_t t1)
{
	cJSON *hist;
	size_t f = 0;

	hist = src_history(src, *t0, t1 + 1, windows[w].step_ms);
	if (!from_first || plotd_first_ts(hist) <= *t0 + windows[w].step_ms)
		return hist;
	*t0 = plotd_first_ts(hist);
	while (f + 1 < NWINDOWS && windows[f].span_ms < t1 - *t0)
		f++;
	cJSON_Delete(hist);
	hist = src_history(src, *t0, t1 + 1, windows[f].step_ms);
	if (plotd_first_ts(hist) > *t0)
		*t0 = plotd_first_ts(hist);
	return hist;
}

/* The system plot at each width (CSS shows the one that fits), then the
 * list of its marks. */
static void
system_plots(struct svgp_buf *b, const struct web_snap *s, const cJSON *hist,
             int64_t t0, int64_t t1)
{
	const cJSON *smp = cJSON_GetObjectItemCaseSensitive(s->info, "sample");
	struct plotd_opts o = {0};
	struct svgp_buf list = {0};
	size_t i;

	o.title = "memory";
	o.max_lanes = WEB_LANES_MAX;
	o.bytes_max = web_num(smp, "swap_total_bytes", 0);
	o.job_links = 1;
	svgp_puts(b, "<section id=\"plot\">");
	for (i = 0; i < NPLOT_WIDTHS; i++) {
		o.width = plot_widths[i];
		/* The marks are the same at each width: listed once. */
		o.marks_list = i == 0 ? &list : NULL;
		svgp_printf(b, "<div class=\"pw\" id=\"plot-%d\">",
		            plot_widths[i]);
		plotd_system(&o, hist, s->jobs, s->events, t0, t1, b);
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
}

/* With the daemon down: how to start it, and where its history is. */
static void
start_hint(const struct web_daemon *wd, struct svgp_buf *b)
{
	svgp_puts(b, "<p id=\"start\">Start it with <code>"
#ifdef __APPLE__
	             "sudo launchctl kickstart system/org.stageload.stageloadd"
#else
	             "sudo systemctl start stageloadd"
#endif
	             "</code> (or <code>stageloadd</code> for a daemon of your "
	             "own); <code>stageloadctl doctor</code> says what keeps "
	             "it from running.");
	if (wd->db == NULL)
		svgp_puts(b, " Its history shows here while it is down when "
		             "stageload-web is given <code>--db PATH</code>, a "
		             "sanitised copy of its database "
		             "(docs/dashboards.md).");
	svgp_puts(b, "</p>");
}

/* The daemon is down and --db names a copy of its database: the window
 * up to the copy's last record, its plot and the jobs that ended in it. */
static void
offline_view(struct web_daemon *wd, size_t w, int from_first,
             struct svgp_buf *b)
{
	struct web_offline off;
	struct hist_src src = {wd, &off};
	struct web_snap s = {0};
	cJSON *events = NULL, *hist;
	int64_t last = 0, t0, t1;
	char why[512], when[64];
	int rc;

	svgp_puts(b, "<section id=\"offline\">");
	rc = web_offline_open(&off, wd->db, why, sizeof why);
	if (rc == 0)
		rc = web_offline_last_ms(&off, &last, why, sizeof why);
	if (rc == 0 && last <= 0)
		rc = snprintf(why, sizeof why, "%s has no samples", wd->db);
	if (rc == 0) {
		t1 = last;
		t0 = t1 - windows[w].span_ms;
		rc = web_offline_snap(&off, t0, t1, &s, &events, why,
		                      sizeof why);
	}
	if (rc != 0) {
		svgp_puts(b, "<p id=\"offline-error\" class=\"bad\">no "
		             "history: ");
		svgp_esc(b, why);
		svgp_puts(b, "</p>");
		goto out;
	}
	s.now_ms = clock_wall_ms();
	clock_str(last, s.now_ms, when, sizeof when);
	svgp_puts(b, "<p id=\"offline-source\">History from <code>");
	svgp_esc(b, wd->db);
	svgp_printf(b, "</code>, up to its last record at %s.</p>", when);
	hist = window_history(&src, w, from_first, &t0, t1);
	system_plots(b, &s, hist, t0, t1);
	cJSON_Delete(hist);
	ended_table(&s, b);
out:
	svgp_puts(b, "</section>");
	web_snap_free(&s);
	cJSON_Delete(events);
	if (off.db != NULL)
		web_offline_close(&off);
}

int
web_page(struct web_daemon *wd, const struct web_request *rq,
         struct svgp_buf *b, const char **type)
{
	const char *warg = rq->arg(rq->ctx, "window");
	struct web_snap s;
	size_t w = 1, i;
	int64_t t0, t1;

	for (i = 0; warg != NULL && i < NWINDOWS; i++)
		if (strcmp(warg, windows[i].arg) == 0)
			break;
	if (warg != NULL && i == NWINDOWS) {
		/* A window the page does not have is not shown as another. */
		*type = "text/plain; charset=utf-8";
		svgp_puts(b, "400 bad request: window is one of");
		for (i = 0; i < NWINDOWS; i++)
			svgp_printf(b, " %s", windows[i].arg);
		svgp_puts(b, "\n");
		return 400;
	}
	if (warg != NULL)
		w = i;
	*type = "text/html; charset=utf-8";
	t1 = clock_wall_ms();
	t0 = t1 - windows[w].span_ms;
	web_snap_take(wd, WEB_SNAP_JOBS | WEB_SNAP_ENDED | WEB_SNAP_EVENTS, t0,
	              &s);
	page_head(b, "stageload", 1);
	svgp_puts(b, "<header><h1>stageload</h1>");
	now_line(wd, &s, b);
	svgp_puts(b, "</header><nav id=\"window\">window: ");
	for (i = 0; i < NWINDOWS; i++)
		svgp_printf(
		    b, "<a href=\"/?window=%s\"%s>%s</a>", windows[i].arg,
		    i == w ? " aria-current=\"page\"" : "", windows[i].label);
	svgp_puts(b, "</nav>");
	if (s.up) {
		const cJSON *smp =
		    cJSON_GetObjectItemCaseSensitive(s.info, "sample");
		struct hist_src src = {wd, NULL};
		cJSON *hist = window_history(&src, w, warg == NULL, &t0, t1);

		system_plots(b, &s, hist, t0, t1);
		cJSON_Delete(hist);
		svgp_puts(b, "<div class=\"pair\">");
		queue_table(&s, smp, b);
		ended_table(&s, b);
		svgp_puts(b, "</div>");
		running_table(&s, b);
		kills_table(&s, b);
	} else {
		start_hint(wd, b);
		if (wd->db != NULL)
			offline_view(wd, w, warg == NULL, b);
	}
	svgp_puts(b, "<footer class=\"mut\"><p><a href=\"/metrics\">metrics"
	             "</a> · <a href=\"/api/status\">api/status</a> · <a "
	             "href=\"/api/history\">api/history</a> · <a "
	             "href=\"/api/events\">api/events</a></p></footer>"
	             "</body></html>\n");
	web_snap_free(&s);
	return b->oom ? 500 : 200;
}
