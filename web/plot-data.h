/*
 * plot-data: the three plots of stageload built from protocol objects
 * (PROTOCOL.md) and drawn with svg-plot. The web page and `stageloadctl
 * plot` call the same functions, so a plot looks the same in both.
 */
#ifndef SL_PLOT_DATA_H
#define SL_PLOT_DATA_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "svg-plot.h"

struct plotd_opts {
	const char *title;
	int width;        /* 0: svg-plot's default */
	int utc;          /* clock labels in UTC */
	size_t max_lanes; /* 0: no lanes */
	double bytes_max; /* least top of the bytes axis (swap total) */
	struct svgp_buf *marks_list; /* svgp_plot's list, or NULL */
	int job_links;               /* svgp_plot's job_links */
};

/* System memory over [t0_ms, t1_ms]: free % (each bucket's min) and swap
 * used (each bucket's max) from a history
 * result, the pressure strip, one lane per job of jobs (an array of Job)
 * whose life meets the range, kills (a Job's kill) and stages and daemon
 * starts (from events, an array of Event; may be NULL). */
int plotd_system(const struct plotd_opts *o, const cJSON *history,
                 const cJSON *jobs, const cJSON *events, int64_t t0_ms,
                 int64_t t1_ms, struct svgp_buf *out);

/* The start of a history result's first bucket, 0 when it has none: where
 * a plot's axis starts when the window reaches back before the first
 * sample (a young daemon), so the data fills the plot. */
int64_t plotd_first_ts(const cJSON *history);

/* One job over its life: footprint and swap (each bucket's max) from a job
 * history result, its lane, its stages (events of kind stage with its id) and
 * its kill. */
int plotd_job(const struct plotd_opts *o, const cJSON *job,
              const cJSON *history, const cJSON *events, struct svgp_buf *out);

/* Two runs side by side (`stageloadctl plot --compare A B`): each job's
 * footprint and swap (each bucket's max), its stages and its end, on one
 * time axis of durations from each job's start, so the runs line up at
 * 0; jobs, histories and events are each job's (events may be NULL). */
int plotd_compare(const struct plotd_opts *o, const cJSON *const jobs[2],
                  const cJSON *const histories[2], const cJSON *const events[2],
                  struct svgp_buf *out);

/* A JSONL trace (`stageloadctl meter`, the Python MemoryMeter): one
 * object a line with ts_ms and any of free_pct, swap_used_bytes,
 * footprint_bytes, swap_bytes, pressure; a line with a `stage` string
 * marks a stage. -EINVAL with cause for a line that is not such an
 * object, or a trace with no line. */
int plotd_trace(const struct plotd_opts *o, const char *text,
                struct svgp_buf *out, char *cause, size_t causelen);

#endif
