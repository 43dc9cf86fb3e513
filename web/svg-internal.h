/*
 * svg-plot's insides, shared by svg-plot.c (the buffer, axes, series,
 * lanes and the whole plot) and svg-marks.c (the marks of ends, stages
 * and restarts, their labels that never overlap, the list of them, the
 * legend and the budget line).
 */
#ifndef SL_SVG_INTERNAL_H
#define SL_SVG_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "svg-plot.h"

#define PAD_L 52
#define PAD_R 64
#define TOP 40
#define CHART_H 200
#define STRIP_H 8
#define TICKS_H 20
#define LANE_H 18
/* the legend's first baseline, and its rows on a narrow plot */
#define LEGEND_Y 34
#define LEGEND_ROW_H 16

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

static inline double
gx(const struct geom *g, int64_t t)
{
	double span = (double)(g->p->t1_ms - g->p->t0_ms);

	if (span <= 0)
		return g->x0;
	return g->x0 + (double)(t - g->p->t0_ms) * (g->x1 - g->x0) / span;
}

static inline double
clampx(const struct geom *g, double x)
{
	return x < g->x0 ? g->x0 : x > g->x1 ? g->x1 : x;
}

static inline double
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

/* A clock label of t_ms for ticks step_ms apart (or a duration from 0 on
 * an elapsed axis). */
void svgp_clock_label(const struct geom *g, int64_t t_ms, int64_t step_ms,
                      char *buf, size_t len);
/* An end's mark centred on (x, y); job_id < 0: the legend's key. */
void svgp_draw_end_marker(struct svgp_buf *b, double x, double y,
                          enum svgp_end e, int64_t job_id);
/* Which kinds of marks the plot draws, for its legend. */
void svgp_scan_seen(struct geom *g);
/* The rows the legend takes at the plot's width. */
int svgp_legend_rows(const struct geom *g);
void svgp_draw_legend(const struct geom *g, struct svgp_buf *b);
/* The budget line, its label's box taken before any mark's. */
void svgp_draw_budget(struct geom *g, struct svgp_buf *b);
/* The marks, their labels placed where they overlap nothing: 0, or -1
 * out of memory. */
int svgp_draw_marks(struct geom *g, struct svgp_buf *b);
/* The marks as <li> items, oldest first: 0, or -1 out of memory. */
int svgp_list_marks(const struct geom *g, struct svgp_buf *out);

#endif
