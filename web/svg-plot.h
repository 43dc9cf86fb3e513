/*
 * svg-plot: the one SVG renderer of stageload's plots, shared by the web
 * program's page and `stageloadctl plot`. It draws series on a time axis
 * (a percentage axis on the left, a bytes axis on the right), a pressure
 * strip, job lanes on the same axis (queued, running, the end marked by how
 * it ended) and marks (ends, stages, daemon restarts), with a legend. Mark
 * labels that would overlap are left out of the drawing (each keeps its
 * <title>, shown on hover; the page lists them all under the plot).
 *
 * Every name from users (jobs, users, stages) is escaped for XML here;
 * callers pass raw text. The output is plain SVG 1.1 with classes and
 * data-* attributes (data-series, data-job, data-mark) that tests and
 * style sheets can find; colours come from a small <style> inside the
 * SVG, with a dark variant under prefers-color-scheme.
 */
#ifndef SL_SVG_PLOT_H
#define SL_SVG_PLOT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* A growing text buffer; on out of memory it sets oom and stops growing. */
struct svgp_buf {
	char *p;
	size_t n, cap;
	int oom;
};
void svgp_buf_free(struct svgp_buf *b);
void svgp_puts(struct svgp_buf *b, const char *s);
void svgp_putn(struct svgp_buf *b, const char *s, size_t n);
void svgp_printf(struct svgp_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Text for XML or HTML content and attribute values: & < > " ' escaped,
 * control characters (but tab and newline) dropped. */
void svgp_esc(struct svgp_buf *b, const char *s);

/* "1.5G", "512M", "4.0G", "0B": sizes in powers of 1024, the CLI's own
 * form (proto/units.c, units_format_size), on the page and in plots. */
void svgp_size(uint64_t bytes, char *buf, size_t len);

enum svgp_axis {
	SVGP_AXIS_PCT = 0, /* 0..100, left */
	SVGP_AXIS_BYTES =
	    1, /* 0..max, right (left when there is no % series) */
};

struct svgp_point {
	int64_t t_ms;
	double v;
	int gap; /* the line breaks before this point */
};

struct svgp_series {
	const char *id;    /* data-series: "free_pct", "swap_used_bytes" */
	const char *label; /* for the legend */
	enum svgp_axis axis;
	int style; /* 0..5: a colour of the palette */
	const struct svgp_point *pts;
	size_t n;
};

/* pressure strip: one cell per point, 0 normal, 1 warn, 2 critical,
 * -1 unknown. */
struct svgp_level {
	int64_t t_ms;
	int level;
};

/* How a job ended, when not on its own: each has its own mark and legend
 * entry, so a cancel never reads as a swap kill. */
enum svgp_end {
	SVGP_END_NONE = 0, /* running, or ended on its own */
	SVGP_END_KILL,     /* killed for its swap budget */
	SVGP_END_CANCEL, /* cancelled (cancel, its client gone, a dependency) */
	SVGP_END_TIMELIMIT, /* ended by a time limit */
	SVGP_END_FAILED,    /* failed, or could not be started */
	SVGP_END_LOST,      /* the daemon lost track of it */
	SVGP_END_COUNT,
};

struct svgp_lane {
	int64_t job_id;
	const char *name;                           /* the job's name */
	const char *user;                           /* the job's user */
	const char *state;                          /* its state now */
	int64_t submitted_ms, started_ms, ended_ms; /* 0 when not (yet) */
	enum svgp_end end; /* its end's mark at ended_ms */
};

enum svgp_mark_kind {
	SVGP_MARK_END = 0, /* a job's end (end says which) */
	SVGP_MARK_STAGE,
	SVGP_MARK_RESTART,
};

struct svgp_mark {
	enum svgp_mark_kind kind;
	enum svgp_end end; /* for SVGP_MARK_END */
	int64_t t_ms;
	int64_t job_id; /* 0: not about a job */
	const char *label;
};

struct svgp_plot {
	const char *title;
	int64_t t0_ms, t1_ms;
	int width; /* pixels; 0: 960 */
	/* Clock labels in UTC rather than local time (tests, servers). */
	int utc;
	/* Times are durations from a start (0), not clock times: the time
	 * axis reads "0", "30s", "1m00s" (two runs compared). */
	int elapsed;
	const struct svgp_series *series;
	size_t nseries;
	const struct svgp_level *levels;
	size_t nlevels;
	const struct svgp_lane *lanes;
	size_t nlanes;
	const struct svgp_mark *marks;
	size_t nmarks;
	/* Least top of the bytes axis (e.g. swap total), 0: from the data. */
	double bytes_max;
	/* A horizontal line on the bytes axis (a job's swap budget), 0: none.
	 * Above the axis it is drawn at the top, its label saying so. */
	double budget_bytes;
	/* When not NULL, every mark in the window is also listed here, in
	 * time order, as HTML <li> items (time, kind, job, whole label): the
	 * list a page shows under the plot, since labels that would overlap
	 * are not drawn. */
	struct svgp_buf *list;
	/* Marks, lanes and list items of a job link to /job/ID (the web
	 * page's job page). */
	int job_links;
};

/* The mark's name ("kill", "cancel", "time limit", ...) for a legend and
 * labels. */
const char *svgp_end_name(enum svgp_end e);
/* data-mark of an end: "kill", "cancel", "timelimit", "failed", "lost". */
const char *svgp_end_id(enum svgp_end e);

/* Appends the <svg> element to out. 0, or -ENOMEM (out->oom). */
int svgp_render(const struct svgp_plot *p, struct svgp_buf *out);

#endif
