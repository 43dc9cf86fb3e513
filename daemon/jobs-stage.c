/*
 * Stages: a running job says which part of its work it is in ("encode",
 * "decode"), so its record can say what each part cost and a kill can say
 * where it came. The open stage lives in the job's record; each stage that
 * ends is committed as a `stage_end` event carrying its numbers, which is
 * what `show` reads back. docs/jobs.md, "Stages", has the definitions.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobs-internal.h"
#include "proto.h"
#include "store.h"

struct jobs_stage {
	char *name;
	int64_t started_ms;
	uint64_t swap_start_bytes; /* system swap used when it began */
	uint64_t swap_peak_bytes;  /* the highest since */
	uint64_t footprint_peak_bytes;
	unsigned count;   /* stages this job reported, this one included */
	int swap_unknown; /* reopened after a restart: the next sample is
	                     where its swap growth counts from */
};

static uint64_t
stage_growth(const struct jobs_stage *st)
{
	return st->swap_peak_bytes > st->swap_start_bytes
	           ? st->swap_peak_bytes - st->swap_start_bytes
	           : 0;
}

/* Commit the open stage's numbers as a stage_end event; it stays in the
 * record (for its count) with no name. */
void
jobs_stage_close(struct daemon *d, struct jrec *r, int64_t ended_ms)
{
	struct jobs_stage *st = r->stage;
	cJSON *det;

	if (st == NULL || st->name == NULL)
		return;
	det = cJSON_CreateObject();
	cJSON_AddStringToObject(det, "name", st->name);
	proto_add_int(det, "started_at_ms", st->started_ms);
	proto_add_int(det, "ended_at_ms", ended_ms);
	proto_add_int(det, "footprint_peak_bytes",
	              (int64_t)st->footprint_peak_bytes);
	proto_add_int(det, "swap_growth_bytes", (int64_t)stage_growth(st));
	jobs_event(d, r->j, NAMES_EVENT_STAGE_END, det);
	free(st->name);
	st->name = NULL;
}

void
jobs_stage_free(struct jrec *r)
{
	if (r->stage != NULL) {
		free(r->stage->name);
		free(r->stage);
		r->stage = NULL;
	}
}

void
jobs_stage_sample(struct jrec *r, const struct sys_sample *s)
{
	struct jobs_stage *st = r->stage;

	if (st == NULL || st->name == NULL)
		return;
	if (st->swap_unknown) {
		st->swap_start_bytes = st->swap_peak_bytes = s->swap_used_bytes;
		st->swap_unknown = 0;
	}
	if (s->swap_used_bytes > st->swap_peak_bytes)
		st->swap_peak_bytes = s->swap_used_bytes;
	if (r->j->footprint_bytes > st->footprint_peak_bytes)
		st->footprint_peak_bytes = r->j->footprint_bytes;
}

const char *
jobs_stage_current(const struct jrec *r)
{
	return r->stage != NULL ? r->stage->name : NULL;
}

static int
stage_count_cb(void *arg, const struct store_event *e)
{
	(void)e;
	(*(unsigned *)arg)++;
	return 0;
}

int
jobs_stage(struct daemon *d, int64_t id, const char *name, char *cause,
           size_t causelen)
{
	struct jrec *r = jobs_find(d->jobs, id);
	struct jobs_stage *st;
	const char *health;
	cJSON *det;
	char *dup;

	if (r == NULL || !jrec_is_live(r)) {
		snprintf(cause, causelen, "job %" PRId64 " has ended", id);
		return PROTO_E_STATE;
	}
	/* Admitted too: a detached job's first command can report before
	 * the daemon has heard from its monitor that it started. */
	if (r->j->state != JOB_RUNNING && r->j->state != JOB_ADMITTED) {
		snprintf(cause, causelen, "job %" PRId64 " is %s, not running",
		         id, job_state_name(r->j->state));
		return PROTO_E_STATE;
	}
	if ((health = store_health(d->store)) != NULL) {
		/* Its events could not be written: nothing is kept in memory
		 * for them. */
		snprintf(
		    cause, causelen,
		    "the database fails (%s): stage not recorded; try again",
		    health);
		return PROTO_E_STORAGE;
	}
	if (r->stage == NULL) {
		if ((r->stage = calloc(1, sizeof *st)) == NULL) {
			snprintf(cause, causelen, "out of memory");
			return PROTO_E_INTERNAL;
		}
		/* Those it reported before a daemon restart count too. */
		(void)store_job_events(d->store, id, "stage_end",
		                       JOBS_MAX_STAGES, stage_count_cb,
		                       &r->stage->count);
	}
	if (r->stage->count >= JOBS_MAX_STAGES) {
		snprintf(cause, causelen,
		         "limit reached: job %" PRId64
		         " has reported %d stages "
		         "(at most %d a job)",
		         id, JOBS_MAX_STAGES, JOBS_MAX_STAGES);
		return PROTO_E_LIMIT;
	}
	if ((dup = strdup(name)) == NULL) {
		snprintf(cause, causelen, "out of memory");
		return PROTO_E_INTERNAL;
	}
	st = r->stage;
	jobs_stage_close(d, r, clock_wall_ms());
	st->name = dup;
	st->count++;
	st->started_ms = clock_wall_ms();
	st->swap_start_bytes = st->swap_peak_bytes = d->last.swap_used_bytes;
	st->footprint_peak_bytes = r->j->footprint_bytes;
	det = cJSON_CreateObject();
	cJSON_AddStringToObject(det, "name", name);
	jobs_event(d, r->j, NAMES_EVENT_STAGE, det);
	return 0;
}

/* The newest event of a kind, and how many there are. */
struct stage_last {
	int64_t id, ts_ms;
	char *name;
	unsigned n;
};

static int
stage_last_cb(void *arg, const struct store_event *e)
{
	struct stage_last *l = arg;
	const cJSON *name;
	cJSON *o;

	l->n++;
	if (e->detail == NULL || (o = cJSON_Parse(e->detail)) == NULL)
		return 0;
	name = cJSON_GetObjectItemCaseSensitive(o, "name");
	if (cJSON_IsString(name)) {
		free(l->name);
		l->name = strdup(name->valuestring);
		l->id = e->id;
		l->ts_ms = e->ts_ms;
	}
	cJSON_Delete(o);
	return 0;
}

void
jobs_stage_restore(struct daemon *d, struct jrec *r)
{
	struct stage_last open = {0}, closed = {0};

	/* Each stage began once: at most the limit, plus one a restart. */
	if (store_job_events(d->store, r->j->id, "stage",
	                     (int64_t)JOBS_MAX_STAGES * 4, stage_last_cb,
	                     &open) != 0 ||
	    store_job_events(d->store, r->j->id, "stage_end",
	                     (int64_t)JOBS_MAX_STAGES * 4, stage_last_cb,
	                     &closed) != 0 ||
	    open.name == NULL || open.id < closed.id ||
	    (r->stage = calloc(1, sizeof *r->stage)) == NULL) {
		free(open.name);
		free(closed.name);
		return;
	}
	/* The stage open when the daemon stopped goes on. */
	r->stage->name = open.name;
	r->stage->started_ms = open.ts_ms;
	r->stage->count = closed.n + 1;
	r->stage->swap_unknown = 1;
	free(closed.name);
}

int
jobs_stages(struct daemon *d, int64_t id, struct store_stage **out, size_t *n)
{
	struct jrec *r = jobs_find(d->jobs, id);
	char why[256];
	int rc;

	rc = store_read_job_stages(store_reader(d->store), id, JOBS_MAX_STAGES,
	                           0, out, n, why, sizeof why);
	if (rc == 0 && r != NULL && r->stage != NULL &&
	    r->stage->name != NULL &&
	    (rc = store_stage_push(out, n, r->stage->name, r->stage->started_ms,
	                           0, r->stage->footprint_peak_bytes,
	                           stage_growth(r->stage))) != 0) {
		store_stages_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	return rc;
}
