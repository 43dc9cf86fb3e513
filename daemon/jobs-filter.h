/*
 * Which jobs a list or a bulk action is about (PROTOCOL.md, "Job
 * filters"): the params user, mine, state and name, read once from a
 * request into a struct job_filter and matched against each job. status,
 * events (and an events follow) and cancel_matching read them here, so
 * every method that takes a filter takes the same one. The pure part,
 * struct job_filter, its reading and a job's parts matched, is
 * store-filter.h's, which report (and stageloadctl report --db) shares.
 */
#ifndef SL_JOBS_FILTER_H
#define SL_JOBS_FILTER_H

#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "job.h"
#include "store-filter.h"

struct daemon;
struct store_event;

/* A filter is read with store_filter_read (store-filter.h). */
/* 1 when the filter leaves a job out at all. */
int jobs_filter_any(const struct job_filter *f);
/* 1 when the job passes. */
int jobs_filter_match(const struct job_filter *f, const struct job *j);
/*
 * An event passes when its job does by user and name (the daemon's own
 * events, of no job, pass only a filter that has neither), and, with
 * states, when it is one by which a job entered one of them (queued:
 * submitted or requeued; admitted; running: started; an end state: its
 * own kind). The job's name is looked up (jobs_get) only for a name
 * pattern, once for a run of one job's events.
 */
struct job_filter_cache {
	int64_t job_id; /* the job last looked up (0: none) */
	int name_ok;
};
int jobs_filter_event(struct daemon *d, const struct job_filter *f,
                      struct job_filter_cache *cache,
                      const struct store_event *e);

#endif
