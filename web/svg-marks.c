/*
 * svg-marks: the marks of a stageload plot (svg-plot.h): each kind of end
 * with its own shape, stages and daemon starts as vertical lines, their
 * labels placed where they overlap no other text (each keeps its whole
 * label as its title), the list of them, the legend and the budget line.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "svg-internal.h"

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

/* An end's mark centred on (x, y): a swap kill an ×, a cancel a circle
 * with a bar, a time limit an hourglass, a failure a filled triangle, a
 * lost job a dashed square. */
void
svgp_draw_end_marker(struct svgp_buf *b, double x, double y, enum svgp_end e,
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

int
svgp_draw_marks(struct geom *g, struct svgp_buf *b)
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
			svgp_draw_end_marker(b, x, g->y0 + 8, m->end,
			                     m->job_id);
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
int
svgp_list_marks(const struct geom *g, struct svgp_buf *out)
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
		svgp_clock_label(g, m->t_ms, 1000, when, sizeof when);
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

void
svgp_draw_budget(struct geom *g, struct svgp_buf *b)
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

static double
legend_width(const struct legend_item *it)
{
	return 22 + text_width(it->text, 11) + 12;
}

/* Which kinds of marks the plot draws, for its legend. */
void
svgp_scan_seen(struct geom *g)
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

int
svgp_legend_rows(const struct geom *g)
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

void
svgp_draw_legend(const struct geom *g, struct svgp_buf *b)
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
			svgp_draw_end_marker(b, x + 7, y - 4,
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
