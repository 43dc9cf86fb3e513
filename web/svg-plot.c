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
#include "svg-plot.h"
#include "units.h"

#define PAD_L 52
#define PAD_R 64
#define TOP 40
#define CHART_H 200
#define STRIP_H 8
#define TICKS_H 20
#define LANE_H 18

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
	static const char units[] = "KMGTPE";
	double v = (double)bytes;
	int u = -1;

	while (v >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	if (u < 0)
		snprintf(buf, len, "%" PRIu64, bytes);
	else if (v < 10 && v != floor(v))
		snprintf(buf, len, "%.1f%c", v, units[u]);
	else
		snprintf(buf, len, "%.0f%c", v, units[u]);
}

static const char *const end_names[SVGP_END_COUNT] = {
    "", "kill", "cancel", "time limit", "failed", "lost"};
static const char *const end_ids[SVGP_END_COUNT] = {
    "", "kill", "cancel", "timelimit", "failed", "lost"};

const char *
svgp_end_name(enum svgp_end e)
{
	return e > SVGP_END_NONE && e < SVGP_END_COUNT ? end_names[e] : "";
}

const char *
svgp_end_id(enum svgp_end e)
{
	return e > SVGP_END_NONE && e < SVGP_END_COUNT ? end_ids[e] : "";
}

/* ---- text boxes ---- */

#define MARK_FONT 10.0
#define LABEL_CHARS 28 /* a mark's label is cut here; its title is whole */

/* A generous width of text in a sans-serif font of size px: wide letters
 * and anything outside ASCII (CJK is a full em) count more, so an
 * estimated box holds the real one and boxes that do not meet here do not
 * meet in a browser either. */
static double
text_width(const char *s, double px)
{
	double w = 0;

	for (; s != NULL && *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;
		if ((c & 0xc0) == 0x80)
			continue; /* a continuation byte */
		if (c >= 0x80)
			w += 1.0;
		else if (strchr("mwMW@%", c) != NULL)
			w += 0.95;
		else if (c >= 'A' && c <= 'Z')
			w += 0.75;
		else if (strchr("iljtf.,:;'|!", c) != NULL)
			w += 0.4;
		else
			w += 0.62;
	}
	return w * px;
}

/* s cut to at most n characters (not bytes), with an ellipsis when cut,
 * never inside a UTF-8 sequence; buf holds n characters and the ellipsis
 * (4 n + 4 bytes). */
static void
cut_chars(const char *s, size_t n, char *buf, size_t len)
{
	size_t i, chars = 0;

	for (i = 0; s[i] != '\0'; i++) {
		if (((unsigned char)s[i] & 0xc0) == 0x80)
			continue;
		if (chars++ == n)
			break;
	}
	if (s[i] == '\0')
		snprintf(buf, len, "%s", s);
	else
		snprintf(buf, len, "%.*s\xe2\x80\xa6", (int)i, s);
}

/* ---- geometry ---- */

/* A text's box, for the labels that must not overlap. */
struct box {
	double x0, y0, x1, y1;
};

#define MAX_BOXES 512

struct geom {
	const struct svgp_plot *p;
	int w, h;
	/* the boxes of the labels drawn so far in the chart */
	struct box boxes[MAX_BOXES];
	size_t nboxes;
	unsigned ends_seen; /* bit per enum svgp_end drawn */
	int stages_seen, restarts_seen;
	double x0, x1; /* the chart's pixel range */
	double y0, y1; /* top and bottom of the chart */
	double bytes_max;
	int has_pct;
};

static int
box_free(const struct geom *g, const struct box *b)
{
	size_t i;

	for (i = 0; i < g->nboxes; i++) {
		const struct box *o = &g->boxes[i];
		if (b->x0 < o->x1 && o->x0 < b->x1 && b->y0 < o->y1 &&
		    o->y0 < b->y1)
			return 0;
	}
	return 1;
}

static void
box_take(struct geom *g, const struct box *b)
{
	if (g->nboxes < MAX_BOXES)
		g->boxes[g->nboxes++] = *b;
}

static double
gx(const struct geom *g, int64_t t)
{
	double span = (double)(g->p->t1_ms - g->p->t0_ms);

	if (span <= 0)
		return g->x0;
	return g->x0 + (double)(t - g->p->t0_ms) * (g->x1 - g->x0) / span;
}

static double
clampx(const struct geom *g, double x)
{
	return x < g->x0 ? g->x0 : x > g->x1 ? g->x1 : x;
}

static double
gy(const struct geom *g, enum svgp_axis a, double v)
{
	double top = a == SVGP_AXIS_PCT ? 100.0 : g->bytes_max;

	if (top <= 0)
		top = 1;
	if (v < 0)
		v = 0;
	if (v > top)
		v = top;
	return g->y1 - v * (g->y1 - g->y0) / top;
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

static void
clock_label(const struct geom *g, int64_t t_ms, int64_t step_ms, char *buf,
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
		clock_label(g, t, step, lab, sizeof lab);
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

/* An end's mark centred on (x, y): a swap kill an ×, a cancel a circle
 * with a bar, a time limit an hourglass, a failure a filled triangle, a
 * lost job a dashed square. */
static void
draw_end_marker(struct svgp_buf *b, double x, double y, enum svgp_end e,
                int64_t job_id)
{
	const char *id = svgp_end_id(e);

	if (e <= SVGP_END_NONE || e >= SVGP_END_COUNT)
		return;
	if (job_id < 0) /* the legend's key: no job, nothing to find */
		svgp_printf(b, "<path class=\"%s%s\" d=\"",
		            e == SVGP_END_KILL ? "slp-kill" : "slp-end slp-e-",
		            e == SVGP_END_KILL ? "" : id);
	else if (e == SVGP_END_KILL)
		svgp_printf(b,
		            "<path class=\"slp-kill kill-marker end-marker\" "
		            "data-mark=\"kill\" data-job=\"%" PRId64 "\" d=\"",
		            job_id);
	else
		svgp_printf(b,
		            "<path class=\"slp-end slp-e-%s end-marker\" "
		            "data-mark=\"%s\" data-job=\"%" PRId64 "\" d=\"",
		            id, id, job_id);
	switch (e) {
	case SVGP_END_KILL:
		svgp_printf(b, "M%.1f %.1f l8 8 m0 -8 l-8 8", x - 4, y - 4);
		break;
	case SVGP_END_CANCEL:
		svgp_printf(b,
		            "M%.1f %.1f a4 4 0 1 0 8 0 a4 4 0 1 0 -8 0 "
		            "M%.1f %.1f l6 0",
		            x - 4, y, x - 3, y);
		break;
	case SVGP_END_TIMELIMIT:
		svgp_printf(b, "M%.1f %.1f l8 0 l-8 8 l8 0 z", x - 4, y - 4);
		break;
	case SVGP_END_FAILED:
		svgp_printf(b, "M%.1f %.1f l4 -8 l4 8 z", x - 4, y + 4);
		break;
	default: /* lost */
		svgp_printf(b, "M%.1f %.1f h8 v8 h-8 z", x - 4, y - 4);
		break;
	}
	svgp_puts(b, "\"/>");
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
			draw_end_marker(b, gx(g, l->ended_ms), y + LANE_H / 2.0,
			                l->end, l->job_id);
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

/* Rows of mark labels under the chart's top, below the end markers. */
#define LABEL_ROWS 3
#define LABEL_ROW0 24
#define LABEL_ROW_H 13

static int
mark_rank(const struct svgp_mark *m)
{
	/* Ends first, then daemon starts, then stages: when labels must be
	 * left out, the kills and cancels keep theirs. */
	return m->kind == SVGP_MARK_END       ? 0
	       : m->kind == SVGP_MARK_RESTART ? 1
	                                      : 2;
}

/* qsort has no context argument: the array being sorted. A plot is drawn
 * by one thread at a time (stageloadctl; stageload-web answers on one). */
static const struct svgp_mark *sort_marks_base;

static int
mark_cmp(const void *a, const void *b)
{
	const struct svgp_mark *x = &sort_marks_base[*(const size_t *)a];
	const struct svgp_mark *y = &sort_marks_base[*(const size_t *)b];

	if (mark_rank(x) != mark_rank(y))
		return mark_rank(x) - mark_rank(y);
	return x->t_ms < y->t_ms ? -1 : x->t_ms > y->t_ms;
}

/* Where m's label goes: the first row where its box meets no other
 * label's, to the right of the line, or to its left near the right edge.
 * 0 and the text's x, y and anchor, or -1: no room, no label (the mark
 * keeps its title). */
static int
place_label(struct geom *g, double x, const char *text, double *tx, double *ty,
            const char **anchor)
{
	double w = text_width(text, MARK_FONT);
	int row, side;

	for (row = 0; row < LABEL_ROWS; row++) {
		double base = g->y0 + LABEL_ROW0 + row * LABEL_ROW_H;
		for (side = 0; side < 2; side++) {
			struct box bx;
			int left = side == 1 || x + 3 + w > g->x1;
			if (side == 1 && x + 3 + w > g->x1)
				break; /* already tried the left */
			bx.x0 = left ? x - 3 - w : x + 3;
			bx.x1 = left ? x - 3 : x + 3 + w;
			/* A 10 px font's box: ascent and descent. */
			bx.y0 = base - MARK_FONT;
			bx.y1 = base + 2.5;
			/* No room left to remember it: no label, rather than
			 * one a later label could overprint. */
			if (g->nboxes >= MAX_BOXES)
				return -1;
			if (bx.x0 < g->x0 || !box_free(g, &bx))
				continue;
			box_take(g, &bx);
			*tx = left ? x - 3 : x + 3;
			*ty = base;
			*anchor = left ? "end" : "start";
			return 0;
		}
	}
	return -1;
}

static int
draw_marks(struct geom *g, struct svgp_buf *b)
{
	static const char *const kinds[] = {"end", "stage", "restart"};
	const struct svgp_plot *p = g->p;
	size_t i, k, *order;

	if (p->nmarks == 0)
		return 0;
	if ((order = malloc(p->nmarks * sizeof *order)) == NULL)
		return -1;
	for (i = 0; i < p->nmarks; i++)
		order[i] = i;
	sort_marks_base = p->marks;
	qsort(order, p->nmarks, sizeof *order, mark_cmp);
	for (k = 0; k < p->nmarks; k++) {
		const struct svgp_mark *m = &p->marks[order[k]];
		const char *kind = m->kind == SVGP_MARK_END
		                       ? svgp_end_id(m->end)
		                       : kinds[m->kind];
		const char *label = m->label ? m->label : kind;
		char shown[4 * LABEL_CHARS + 8];
		const char *anchor;
		double x, tx, ty;

		if (m->t_ms < p->t0_ms || m->t_ms > p->t1_ms)
			continue;
		x = gx(g, m->t_ms);
		if (p->job_links && m->job_id > 0)
			svgp_printf(b, "<a href=\"/job/%" PRId64 "\">",
			            m->job_id);
		svgp_printf(b,
		            "<g class=\"slp-mark slp-%s%s\" data-mark=\"%s\" "
		            "data-job=\"%" PRId64 "\" data-ts=\"%" PRId64
		            "\"><line x1=\"%.1f\" "
		            "y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>",
		            m->kind == SVGP_MARK_END && m->end == SVGP_END_KILL
		                ? "kill"
		                : kind,
		            m->kind == SVGP_MARK_END ? " slp-endmark" : "",
		            kind, m->job_id, m->t_ms, x, g->y0, x, g->y1);
		if (m->kind == SVGP_MARK_END)
			draw_end_marker(b, x, g->y0 + 8, m->end, m->job_id);
		cut_chars(label, LABEL_CHARS, shown, sizeof shown);
		if (place_label(g, x, shown, &tx, &ty, &anchor) == 0) {
			svgp_printf(b,
			            "<text class=\"slp-mark-label\" x=\"%.1f\" "
			            "y=\"%.1f\" text-anchor=\"%s\">",
			            tx, ty, anchor);
			svgp_esc(b, shown);
			svgp_puts(b, "</text>");
		}
		svgp_puts(b, "<title>");
		svgp_esc(b, label);
		svgp_puts(b, "</title></g>");
		if (p->job_links && m->job_id > 0)
			svgp_puts(b, "</a>");
	}
	free(order);
	return 0;
}

static int
mark_time_cmp(const void *a, const void *b)
{
	const struct svgp_mark *x = &sort_marks_base[*(const size_t *)a];
	const struct svgp_mark *y = &sort_marks_base[*(const size_t *)b];

	return x->t_ms < y->t_ms ? -1 : x->t_ms > y->t_ms;
}

/* The marks in the window as <li> items, oldest first. */
static int
list_marks(const struct geom *g, struct svgp_buf *out)
{
	static const char *const kinds[] = {"end", "stage", "daemon start"};
	const struct svgp_plot *p = g->p;
	size_t i, *order;

	if (p->nmarks == 0)
		return 0;
	if ((order = malloc(p->nmarks * sizeof *order)) == NULL)
		return -1;
	for (i = 0; i < p->nmarks; i++)
		order[i] = i;
	sort_marks_base = p->marks;
	qsort(order, p->nmarks, sizeof *order, mark_time_cmp);
	for (i = 0; i < p->nmarks; i++) {
		const struct svgp_mark *m = &p->marks[order[i]];
		const char *kind = m->kind == SVGP_MARK_END
		                       ? svgp_end_name(m->end)
		                       : kinds[m->kind];
		char when[32];

		if (m->t_ms < p->t0_ms || m->t_ms > p->t1_ms)
			continue;
		clock_label(g, m->t_ms, 1000, when, sizeof when);
		svgp_printf(out,
		            "<li data-mark=\"%s\" data-job=\"%" PRId64
		            "\"><time>%s</time> ",
		            m->kind == SVGP_MARK_END     ? svgp_end_id(m->end)
		            : m->kind == SVGP_MARK_STAGE ? "stage"
		                                         : "restart",
		            m->job_id, when);
		svgp_esc(out, kind);
		if (m->job_id > 0 && p->job_links)
			svgp_printf(out,
			            " · <a href=\"/job/%" PRId64
			            "\">job %" PRId64 "</a>",
			            m->job_id, m->job_id);
		else if (m->job_id > 0)
			svgp_printf(out, " · job %" PRId64, m->job_id);
		if (m->kind == SVGP_MARK_STAGE && m->label != NULL) {
			svgp_puts(out, " · ");
			svgp_esc(out, m->label);
		}
		svgp_puts(out, "</li>");
	}
	free(order);
	return 0;
}

static void
draw_budget(struct geom *g, struct svgp_buf *b)
{
	const struct svgp_plot *p = g->p;
	char size[16], text[64];
	int above = p->budget_bytes > g->bytes_max;
	double y = gy(g, SVGP_AXIS_BYTES, p->budget_bytes), w;
	struct box bx;

	if (p->budget_bytes <= 0)
		return;
	svgp_size((uint64_t)p->budget_bytes, size, sizeof size);
	snprintf(text, sizeof text,
	         above ? "swap budget %s, above" : "swap budget %s", size);
	w = text_width(text, MARK_FONT);
	svgp_printf(b,
	            "<g class=\"slp-budget\" data-bytes=\"%.0f\"%s>"
	            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>",
	            p->budget_bytes, above ? " data-above=\"1\"" : "", g->x0, y,
	            g->x1, y);
	/* Its label sits on the line's right end, inside the chart. */
	bx.x0 = g->x1 - 4 - w;
	bx.x1 = g->x1 - 4;
	bx.y1 = (y - 3 < g->y0 + MARK_FONT + 1 ? g->y0 + MARK_FONT + 1 : y - 3);
	bx.y0 = bx.y1 - MARK_FONT;
	box_take(g, &bx);
	svgp_printf(b,
	            "<text class=\"slp-budget-label\" x=\"%.1f\" y=\"%.1f\" "
	            "text-anchor=\"end\">%s</text></g>",
	            bx.x1, bx.y1 - 2, text);
}

/* The legend: one entry per series, then the pressure strip and each kind
 * of mark the plot draws, flowing into a second row (or more) when the
 * plot is narrow. Returns the rows it took. */
struct legend_item {
	const char *text;
	int key; /* 0 series, 1 pressure, 2 end, 3 stage, 4 restart */
	int arg; /* series style, end */
};

static size_t
legend_items(const struct geom *g, struct legend_item *it, size_t cap)
{
	const struct svgp_plot *p = g->p;
	size_t n = 0, i;
	int e;

	for (i = 0; i < p->nseries && n < cap; i++)
		it[n++] = (struct legend_item){
		    p->series[i].label ? p->series[i].label : "", 0,
		    p->series[i].style};
	if (p->nlevels > 0 && n < cap)
		it[n++] = (struct legend_item){"pressure", 1, 0};
	for (e = SVGP_END_KILL; e < SVGP_END_COUNT && n < cap; e++)
		if (g->ends_seen & (1u << e))
			it[n++] = (struct legend_item){end_names[e], 2, e};
	if (g->stages_seen && n < cap)
		it[n++] = (struct legend_item){"stage", 3, 0};
	if (g->restarts_seen && n < cap)
		it[n++] = (struct legend_item){"daemon start", 4, 0};
	if (p->budget_bytes > 0 && n < cap)
		it[n++] = (struct legend_item){"swap budget", 5, 0};
	return n;
}

#define LEGEND_Y 34
#define LEGEND_ROW_H 16

static double
legend_width(const struct legend_item *it)
{
	return 22 + text_width(it->text, 11) + 12;
}

/* Which kinds of marks the plot draws, for its legend. */
static void
scan_seen(struct geom *g)
{
	const struct svgp_plot *p = g->p;
	size_t i;

	for (i = 0; i < p->nmarks; i++) {
		const struct svgp_mark *m = &p->marks[i];
		if (m->t_ms < p->t0_ms || m->t_ms > p->t1_ms)
			continue;
		if (m->kind == SVGP_MARK_END && m->end > SVGP_END_NONE &&
		    m->end < SVGP_END_COUNT)
			g->ends_seen |= 1u << m->end;
		else if (m->kind == SVGP_MARK_STAGE)
			g->stages_seen = 1;
		else if (m->kind == SVGP_MARK_RESTART)
			g->restarts_seen = 1;
	}
	for (i = 0; i < p->nlanes; i++) {
		const struct svgp_lane *l = &p->lanes[i];
		if (l->end > SVGP_END_NONE && l->end < SVGP_END_COUNT &&
		    l->ended_ms >= p->t0_ms && l->ended_ms <= p->t1_ms)
			g->ends_seen |= 1u << l->end;
	}
}

static int
legend_rows(const struct geom *g)
{
	struct legend_item it[16];
	size_t n = legend_items(g, it, 16), i;
	double x = PAD_L;
	int rows = 1;

	for (i = 0; i < n; i++) {
		if (x > PAD_L && x + legend_width(&it[i]) > g->w - 8) {
			rows++;
			x = PAD_L;
		}
		x += legend_width(&it[i]);
	}
	return rows;
}

static void
draw_legend(const struct geom *g, struct svgp_buf *b)
{
	struct legend_item it[16];
	size_t n = legend_items(g, it, 16), i;
	double x = PAD_L, y = LEGEND_Y;

	svgp_puts(b, "<g class=\"slp-legend\">");
	for (i = 0; i < n; i++) {
		if (x > PAD_L && x + legend_width(&it[i]) > g->w - 8) {
			y += LEGEND_ROW_H;
			x = PAD_L;
		}
		svgp_printf(b, "<g class=\"slp-key\" data-key=\"%s\">",
		            it[i].key == 2 ? end_ids[it[i].arg] : it[i].text);
		switch (it[i].key) {
		case 0:
			svgp_printf(b,
			            "<line class=\"slp-line slp-s%d\" "
			            "x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
			            "y2=\"%.1f\"/>",
			            it[i].arg % 6, x, y - 4, x + 14, y - 4);
			break;
		case 1:
			svgp_printf(b,
			            "<rect class=\"slp-p-warn\" x=\"%.1f\" "
			            "y=\"%.1f\" width=\"14\" height=\"8\"/>",
			            x, y - 8);
			break;
		case 2:
			draw_end_marker(b, x + 7, y - 4,
			                (enum svgp_end)it[i].arg, -1);
			break;
		case 3:
			svgp_printf(b,
			            "<line class=\"slp-stage-key\" x1=\"%.1f\" "
			            "y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>",
			            x + 7, y - 9, x + 7, y + 1);
			break;
		case 4:
			svgp_printf(
			    b,
			    "<line class=\"slp-restart-key\" x1=\"%.1f\" "
			    "y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>",
			    x + 7, y - 9, x + 7, y + 1);
			break;
		default:
			svgp_printf(
			    b,
			    "<line class=\"slp-budget-key\" x1=\"%.1f\" "
			    "y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>",
			    x, y - 4, x + 14, y - 4);
		}
		svgp_printf(b, "<text x=\"%.1f\" y=\"%.1f\">", x + 20, y);
		svgp_esc(b, it[i].text);
		svgp_puts(b, "</text></g>");
		x += legend_width(&it[i]);
	}
	svgp_puts(b, "</g>");
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
	scan_seen(&g);
	/* The legend may take more rows on a narrow plot: the chart moves
	 * down under it. */
	g.y0 = TOP + (legend_rows(&g) - 1) * LEGEND_ROW_H;
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
	draw_legend(&g, b);
	draw_value_axes(&g, b);
	draw_time_axis(&g, b);
	for (i = 0; i < p->nseries; i++)
		draw_series(&g, &p->series[i], b);
	draw_levels(&g, b);
	draw_budget(&g, b);
	if (draw_marks(&g, b) != 0)
		b->oom = 1;
	draw_lanes(&g, b);
	svgp_puts(b, "</svg>\n");
	if (p->list != NULL && list_marks(&g, p->list) != 0)
		p->list->oom = 1;
	if (p->list != NULL && p->list->oom)
		b->oom = 1;
	return b->oom ? -ENOMEM : 0;
}
