/*
 * Job filters (jobs-filter.h): read once from a request's params,
 * matched against each job a list or a bulk action passes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobs-filter.h"
#include "jobs.h"
#include "names.h"
#include "proto.h"
#include "store.h"

int
jobs_filter_any(const struct job_filter *f)
{
	return f->has_uid || f->states != 0 || f->has_name;
}

int
jobs_filter_match(const struct job_filter *f, const struct job *j)
{
	return store_filter_match(f, j->uid, j->name, (int)j->state);
}

/* The state an event kind says a job entered; -1 for none. */
static int
event_state(const char *kind)
{
	if (strcmp(kind, "submitted") == 0 || strcmp(kind, "requeued") == 0)
		return JOB_QUEUED;
	if (strcmp(kind, "started") == 0)
		return JOB_RUNNING;
	/* admitted and the end states are their own kinds */
	return names_state_parse(kind);
}

int
jobs_filter_event(struct daemon *d, const struct job_filter *f,
                  struct job_filter_cache *cache, const struct store_event *e)
{
	struct jobs_view v;
	char cause[128];
	int s;

	if (e->job_id <= 0)
		return !f->has_uid && !f->has_name && f->states == 0;
	if (f->has_uid && e->uid != f->uid)
		return 0;
	if (f->states != 0 &&
	    ((s = event_state(e->kind)) < 0 || !(f->states & (1u << s))))
		return 0;
	if (!f->has_name)
		return 1;
	if (cache->job_id != e->job_id) {
		cache->job_id = e->job_id;
		cache->name_ok = 0;
		/* a job pruned since has no name left to match */
		if (jobs_get_lean(d, e->job_id, &v, cause, sizeof cause) == 0) {
			cache->name_ok =
			    store_filter_match(f, v.j->uid, v.j->name, -1);
			jobs_view_free(&v);
		}
	}
	return cache->name_ok;
}
