/*
 * svg-plot: stageload's SVG plots (svg-plot.h). Layout, from the top: the
 * title and legend, the chart (series over a time axis, marks as vertical
 * lines), the pressure strip, the clock labels, then one lane per job.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "names.h"
#include "svg-internal.h"
#include "units.h"

/* ---- the buffer ---- */

void
svgp_buf_free(struct svgp_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof *b);
}

static int
buf_room(struct svgp_buf *b, size_t more)
{
	size_t cap;
	char *p;

	if (b->oom)
		return -1;
	if (b->n + more + 1 <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 4096;
	while (cap < b->n + more + 1)
		cap *= 2;
	if ((p = realloc(b->p, cap)) == NULL) {
		b->oom = 1;
		return -1;
	}
	b->p = p;
	b->cap = cap;
	return 0;
}

void
svgp_putn(struct svgp_buf *b, const char *s, size_t n)
{
	if (buf_room(b, n) != 0)
		return;
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = '\0';
}

void
svgp_puts(struct svgp_buf *b, const char *s)
{
	svgp_putn(b, s, strlen(s));
}

void
svgp_printf(struct svgp_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || buf_room(b, (size_t)n) != 0)
		return;
	va_start(ap, fmt);
	vsnprintf(b->p + b->n, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->n += (size_t)n;
}

void
svgp_esc(struct svgp_buf *b, const char *s)
{
	const char *run = s;

	for (; s != NULL && *s != '\0'; s++) {
		const char *rep = NULL;
		unsigned char c = (unsigned char)*s;

		switch (c) {
		case '&':
			rep = "&amp;";
			break;
		case '<':
			rep = "&lt;";
			break;
		case '>':
			rep = "&gt;";
			break;
		case '"':
			rep = "&quot;";
			break;
		case '\'':
			rep = "&#39;";
			break;
		default:
			/* XML 1.0 has no place for other control characters. */
			if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7f)
				rep = "";
		}
		if (rep == NULL)
			continue;
		svgp_putn(b, run, (size_t)(s - run));
		svgp_puts(b, rep);
		run = s + 1;
	}
	if (s != NULL)
		svgp_putn(b, run, (size_t)(s - run));
}

void
svgp_size(uint64_t bytes, char *buf, size_t len)
{
	units_format_size(bytes, buf, len);
}

/* A round top for the bytes axis: 1, 2, 4 or 8 times a power of 1024 (or
 * of two below it), at least max. */
static double
nice_bytes(double max)
{
	double t = 1;

	if (max <= 0)
		return 1024.0 * 1024 * 1024;
	while (t < max)
		t *= 2;
	/* 1.5 of a step is rounder than the next power of two. */
	if (t * 0.75 >= max)
		t *= 0.75;
	return t;
}

void
svgp_clock_label(const struct geom *g, int64_t t_ms, int64_t step_ms, char *buf,
                 size_t len)
{
	time_t t = (time_t)(t_ms / 1000);
	struct tm tm;

	if (g->p->elapsed) {
		if (t_ms == 0)
			snprintf(buf, len, "0");
		else
			units_format_duration(t_ms, buf, len);
		return;
	}
	if (g->p->utc)
		gmtime_r(&t, &tm);
	else
		localtime_r(&t, &tm);
	if (step_ms >= 86400000)
		strftime(buf, len, "%a %d", &tm);
	else if (g->p->t1_ms - g->p->t0_ms > 86400000 && tm.tm_hour == 0 &&
	         tm.tm_min == 0)
		strftime(buf, len, "%a %d", &tm);
	else if (step_ms < 1000) {
		/* A job of a few seconds still gets clock labels. */
		size_t n = strftime(buf, len, "%H:%M:%S", &tm);
		int ms = (int)((t_ms % 1000 + 1000) % 1000);
		if (step_ms < 100)
			snprintf(buf + n, len - n, ".%03d", ms);
		else
			snprintf(buf + n, len - n, ".%d", ms / 100);
	} else if (step_ms < 60000)
		strftime(buf, len, "%H:%M:%S", &tm);
	else
		strftime(buf, len, "%H:%M", &tm);
}

/* Seconds east of UTC at t, for ticks on local round hours. */
static int64_t
utc_offset_ms(const struct geom *g, int64_t t_ms)
{
	time_t t = (time_t)(t_ms / 1000);
	struct tm tm;

	if (g->p->utc || g->p->elapsed || localtime_r(&t, &tm) == NULL)
		return 0;
	return (int64_t)tm.tm_gmtoff * 1000;
}

static void
draw_time_axis(const struct geom *g, struct svgp_buf *b)
{
	static const int64_t steps[] = {
	    1,        2,        5,        10,       20,      50,
	    100,      200,      500,      1000,     2000,    5000,
	    10000,    15000,    30000,    60000,    120000,  300000,
	    600000,   900000,   1800000,  3600000,  7200000, 10800000,
	    21600000, 43200000, 86400000, 172800000};
	int64_t span = g->p->t1_ms - g->p->t0_ms, step = steps[0], t, off;
	double ymax = (g->x1 - g->x0) / 90; /* at most a label per 90 px */
	size_t i;
	char lab[32];

	for (i = 0; i < sizeof steps / sizeof steps[0]; i++) {
		step = steps[i];
		if ((double)span / (double)step <= ymax)
			break;
	}
	off = utc_offset_ms(g, g->p->t0_ms);
	t = g->p->t0_ms + off;
	t = t - t % step + step - off;
	svgp_puts(b, "<g class=\"slp-time\">");
	for (; t <= g->p->t1_ms; t += step) {
		double x = gx(g, t);
		svgp_clock_label(g, t, step, lab, sizeof lab);
		svgp_printf(b,
		            "<line class=\"slp-grid\" x1=\"%.1f\" y1=\"%.1f\" "
		            "x2=\"%.1f\" y2=\"%.1f\"/>"
		            "<text x=\"%.1f\" y=\"%.1f\" "
		            "text-anchor=\"middle\">%s</text>",
		            x, g->y0, x, g->y1, x,
		            g->y1 + STRIP_H + TICKS_H - 6, lab);
	}
	svgp_puts(b, "</g>");
}

static void
draw_value_axes(const struct geom *g, struct svgp_buf *b)
{
	int i;
	char lab[16];

	svgp_puts(b, "<g class=\"slp-values\">");
	for (i = 0; i <= 4; i++) {
		double y = g->y1 - i * (g->y1 - g->y0) / 4;
		svgp_printf(b,
		            "<line class=\"slp-grid\" x1=\"%.1f\" y1=\"%.1f\" "
		            "x2=\"%.1f\" y2=\"%.1f\"/>",
		            g->x0, y, g->x1, y);
		if (g->has_pct)
			svgp_printf(b,
			            "<text x=\"%.1f\" y=\"%.1f\" "
			            "text-anchor=\"end\">%d%%</text>",
			            g->x0 - 4, y + 4, i * 25);
		svgp_size((uint64_t)(g->bytes_max * i / 4), lab, sizeof lab);
		svgp_printf(b,
		            "<text x=\"%.1f\" y=\"%.1f\" "
		            "text-anchor=\"%s\">%s</text>",
		            g->has_pct ? g->x1 + 4 : g->x0 - 4, y + 4,
		            g->has_pct ? "start" : "end", lab);
	}
	svgp_printf(b,
	            "<rect class=\"slp-frame\" x=\"%.1f\" y=\"%.1f\" "
	            "width=\"%.1f\" height=\"%.1f\"/></g>",
	            g->x0, g->y0, g->x1 - g->x0, g->y1 - g->y0);
}

static void
draw_series(const struct geom *g, const struct svgp_series *s,
            struct svgp_buf *b)
{
	size_t i;
	int pen = 0;

	svgp_puts(b, "<path class=\"slp-line slp-s");
	svgp_printf(b, "%d\" data-series=\"", s->style % 6);
	svgp_esc(b, s->id);
	svgp_puts(b, "\" d=\"");
	for (i = 0; i < s->n; i++) {
		const struct svgp_point *pt = &s->pts[i];
		if (pt->t_ms < g->p->t0_ms || pt->t_ms > g->p->t1_ms)
			continue;
		svgp_printf(b, "%s%.1f %.1f ", pen && !pt->gap ? "L" : "M",
		            gx(g, pt->t_ms), gy(g, s->axis, pt->v));
		pen = 1;
	}
	svgp_puts(b, "\"><title>");
	svgp_esc(b, s->label);
	svgp_puts(b, "</title></path>");
}

static void
draw_levels(const struct geom *g, struct svgp_buf *b)
{
	const struct svgp_plot *p = g->p;
	size_t i, j;

	if (p->nlevels == 0)
		return;
	svgp_puts(b, "<g class=\"slp-pressure\" data-series=\"pressure\">");
	for (i = 0; i < p->nlevels; i = j) {
		double xa, xz;
		for (j = i + 1;
		     j < p->nlevels && p->levels[j].level == p->levels[i].level;
		     j++)
			;
		xa = clampx(g, gx(g, p->levels[i].t_ms));
		xz = clampx(g, j < p->nlevels ? gx(g, p->levels[j].t_ms)
		                              : gx(g, p->t1_ms));
		if (xz <= xa)
			continue;
		svgp_printf(b,
		            "<rect class=\"slp-p-%s\" x=\"%.1f\" y=\"%.1f\" "
		            "width=\"%.1f\" height=\"%d\"/>",
		            names_pressure_level_name(p->levels[i].level), xa,
		            g->y1 + 1, xz - xa, STRIP_H - 2);
	}
	svgp_puts(b, "</g>");
}

static void
draw_lanes(struct geom *g, struct svgp_buf *b)
{
	const struct svgp_plot *p = g->p;
	double y = g->y1 + STRIP_H + TICKS_H;
	size_t i;

	for (i = 0; i < p->nlanes; i++, y += LANE_H) {
		const struct svgp_lane *l = &p->lanes[i];
		int64_t end = l->ended_ms > 0 ? l->ended_ms : p->t1_ms;
		int64_t qend = l->started_ms > 0 ? l->started_ms : end;

		if (p->job_links)
			svgp_printf(b, "<a href=\"/job/%" PRId64 "\">",
			            l->job_id);
		svgp_printf(b,
		            "<g class=\"slp-lane lane\" data-job=\"%" PRId64
		            "\" data-state=\"",
		            l->job_id);
		svgp_esc(b, l->state);
		svgp_puts(b, "\"><title>");
		svgp_printf(b, "job %" PRId64 " ", l->job_id);
		svgp_esc(b, l->name);
		svgp_puts(b, " (");
		svgp_esc(b, l->user);
		svgp_puts(b, "): ");
		svgp_esc(b, l->state);
		svgp_puts(b, "</title>");
		if (l->submitted_ms > 0 && qend > l->submitted_ms)
			svgp_printf(b,
			            "<rect class=\"slp-queued\" x=\"%.1f\" "
			            "y=\"%.1f\" width=\"%.1f\" height=\"%d\"/>",
			            clampx(g, gx(g, l->submitted_ms)), y + 4,
			            clampx(g, gx(g, qend)) -
			                clampx(g, gx(g, l->submitted_ms)),
			            LANE_H - 8);
		if (l->started_ms > 0 && end >= l->started_ms)
			svgp_printf(b,
			            "<rect class=\"slp-running\" x=\"%.1f\" "
			            "y=\"%.1f\" width=\"%.1f\" height=\"%d\"/>",
			            clampx(g, gx(g, l->started_ms)), y + 2,
			            clampx(g, gx(g, end)) -
			                clampx(g, gx(g, l->started_ms)),
			            LANE_H - 4);
		if (l->end != SVGP_END_NONE && l->ended_ms >= p->t0_ms &&
		    l->ended_ms <= p->t1_ms)
			svgp_draw_end_marker(b, gx(g, l->ended_ms),
			                     y + LANE_H / 2.0, l->end,
			                     l->job_id);
		svgp_printf(b,
		            "<text class=\"slp-lane-label\" x=\"%.1f\" "
		            "y=\"%.1f\">",
		            g->x0 + 4, y + LANE_H - 5);
		svgp_printf(b, "%" PRId64 " ", l->job_id);
		svgp_esc(b, l->name);
		svgp_puts(b, " · ");
		svgp_esc(b, l->user);
		svgp_puts(b, "</text></g>");
		if (p->job_links)
			svgp_puts(b, "</a>");
	}
}

static const char style_sheet[] =
    "<style>"
    ".slp text{font:11px system-ui,sans-serif;fill:#333}"
    ".slp .slp-bg{fill:#fff}"
    ".slp .slp-grid{stroke:#e4e4e4}"
    ".slp .slp-frame{fill:none;stroke:#999}"
    ".slp .slp-line{fill:none;stroke-width:1.6}"
    ".slp .slp-s0{stroke:#1f6fb4}.slp .slp-s1{stroke:#d2452a}"
    ".slp .slp-s2{stroke:#2a9d4a}.slp .slp-s3{stroke:#8a5cc2}"
    ".slp .slp-s4{stroke:#c28a00}.slp .slp-s5{stroke:#555}"
    ".slp .slp-p-normal{fill:#bfe3c4}.slp .slp-p-warn{fill:#f2cf5b}"
    ".slp .slp-p-critical{fill:#e0564a}.slp .slp-p-unknown{fill:#ddd}"
    ".slp .slp-queued{fill:#d5d5d5}.slp .slp-running{fill:#8cc0e6}"
    ".slp path.slp-kill{stroke:#d00;stroke-width:2;fill:none}"
    ".slp .slp-mark-label{font-size:10px}"
    ".slp .slp-mark line{stroke-width:1;stroke-dasharray:3 3}"
    ".slp .slp-mark.slp-kill line{stroke:#d00}"
    ".slp .slp-stage line,.slp .slp-stage-key{stroke:#8a5cc2;"
    "stroke-dasharray:2 2}"
    ".slp .slp-restart line,.slp .slp-restart-key{stroke:#888;"
    "stroke-dasharray:3 3}"
    ".slp .slp-endmark line{stroke:#888}"
    ".slp path.slp-end{stroke-width:1.6;fill:none}"
    ".slp path.slp-e-cancel{stroke:#c27c00}"
    ".slp path.slp-e-timelimit{stroke:#1f6fb4}"
    ".slp path.slp-e-failed{stroke:#7a2a8a;fill:#7a2a8a}"
    ".slp path.slp-e-lost{stroke:#666;stroke-dasharray:2 1}"
    ".slp .slp-budget line,.slp .slp-budget-key{stroke:#c28a00;"
    "stroke-width:1.4;stroke-dasharray:6 3}"
    ".slp .slp-budget-label{font-size:10px}"
    ".slp .slp-lane-label{font-size:10px;paint-order:stroke;"
    "stroke:#fff;stroke-width:3px}"
    ".slp .slp-title{font-weight:600;font-size:13px}"
    "@media (prefers-color-scheme:dark){"
    ".slp text{fill:#ddd}.slp .slp-bg{fill:#161616}"
    ".slp .slp-grid{stroke:#2c2c2c}.slp .slp-frame{stroke:#666}"
    ".slp .slp-s0{stroke:#5aa9ef}.slp .slp-s1{stroke:#ff7a5c}"
    ".slp .slp-queued{fill:#444}.slp .slp-running{fill:#2f6f9c}"
    ".slp .slp-p-normal{fill:#2f5a36}.slp .slp-p-unknown{fill:#333}"
    ".slp path.slp-kill{stroke:#ff5050}"
    ".slp .slp-lane-label{stroke:#161616}}"
    "</style>";

int
svgp_render(const struct svgp_plot *p, struct svgp_buf *b)
{
	struct geom g;
	size_t i, j;

	memset(&g, 0, sizeof g);
	g.p = p;
	g.w = p->width > 0 ? p->width : 960;
	g.x0 = PAD_L;
	g.x1 = g.w - PAD_R;
	g.bytes_max = p->bytes_max;
	for (i = 0; i < p->nseries; i++) {
		if (p->series[i].axis == SVGP_AXIS_PCT) {
			g.has_pct = 1;
			continue;
		}
		for (j = 0; j < p->series[i].n; j++)
			if (p->series[i].pts[j].v > g.bytes_max)
				g.bytes_max = p->series[i].pts[j].v;
	}
	/* A budget near the data is on the axis; one far above it would
	 * flatten the job's own lines, so it is drawn at the top instead. */
	if (p->budget_bytes > g.bytes_max && p->budget_bytes <= 2 * g.bytes_max)
		g.bytes_max = p->budget_bytes;
	g.bytes_max = nice_bytes(g.bytes_max);
	svgp_scan_seen(&g);
	/* The legend may take more rows on a narrow plot: the chart moves
	 * down under it. */
	g.y0 = TOP + (svgp_legend_rows(&g) - 1) * LEGEND_ROW_H;
	g.y1 = g.y0 + CHART_H;
	g.h = (int)g.y1 + STRIP_H + TICKS_H + (int)p->nlanes * LANE_H + 8;

	svgp_printf(b,
	            "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"slp\" "
	            "viewBox=\"0 0 %d %d\" width=\"100%%\" "
	            "preserveAspectRatio=\"xMinYMin meet\" role=\"img\" "
	            "data-t0=\"%" PRId64 "\" data-t1=\"%" PRId64 "\">",
	            g.w, g.h, p->t0_ms, p->t1_ms);
	svgp_puts(b, style_sheet);
	svgp_printf(b,
	            "<rect class=\"slp-bg\" x=\"0\" y=\"0\" width=\"%d\" "
	            "height=\"%d\"/>",
	            g.w, g.h);
	svgp_printf(b, "<text class=\"slp-title\" x=\"%.1f\" y=\"16\">", g.x0);
	svgp_esc(b, p->title ? p->title : "");
	svgp_puts(b, "</text>");
	svgp_draw_legend(&g, b);
	draw_value_axes(&g, b);
	draw_time_axis(&g, b);
	for (i = 0; i < p->nseries; i++)
		draw_series(&g, &p->series[i], b);
	draw_levels(&g, b);
	svgp_draw_budget(&g, b);
	if (svgp_draw_marks(&g, b) != 0)
		b->oom = 1;
	draw_lanes(&g, b);
	svgp_puts(b, "</svg>\n");
	if (p->list != NULL && svgp_list_marks(&g, p->list) != 0)
		p->list->oom = 1;
	if (p->list != NULL && p->list->oom)
		b->oom = 1;
	return b->oom ? -ENOMEM : 0;
}
