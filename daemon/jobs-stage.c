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
	jobs_stage_close(d, r, now_ms());
	st->name = dup;
	st->count++;
	st->started_ms = now_ms();
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

struct stage_collect {
	struct jobs_stage_row *rows;
	size_t n, cap;
	int err;
};

static int
stage_push(struct stage_collect *c, const char *name, int64_t started_ms,
           int64_t ended_ms, uint64_t fp, uint64_t growth)
{
	struct jobs_stage_row *row;

	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 8;
		if ((row = realloc(c->rows, cap * sizeof *row)) == NULL)
			return -1;
		c->rows = row;
		c->cap = cap;
	}
	row = &c->rows[c->n];
	if ((row->name = strdup(name)) == NULL)
		return -1;
	row->started_ms = started_ms;
	row->ended_ms = ended_ms;
	row->footprint_peak_bytes = fp;
	row->swap_growth_bytes = growth;
	c->n++;
	return 0;
}

static int64_t
det_int(const cJSON *o, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	return cJSON_IsNumber(v) && v->valuedouble >= 0
	           ? (int64_t)v->valuedouble
	           : 0;
}

static int
stage_row_cb(void *arg, const struct store_event *e)
{
	struct stage_collect *c = arg;
	cJSON *o;
	const cJSON *name;

	if (e->detail == NULL || (o = cJSON_Parse(e->detail)) == NULL)
		return 0;
	name = cJSON_GetObjectItemCaseSensitive(o, "name");
	if (cJSON_IsString(name) &&
	    stage_push(c, name->valuestring, det_int(o, "started_at_ms"),
	               det_int(o, "ended_at_ms"),
	               (uint64_t)det_int(o, "footprint_peak_bytes"),
	               (uint64_t)det_int(o, "swap_growth_bytes")) != 0)
		c->err = 1;
	cJSON_Delete(o);
	return c->err;
}

void
jobs_stages_free(struct jobs_stage_row *rows, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(rows[i].name);
	free(rows);
}

int
jobs_stages(struct daemon *d, int64_t id, struct jobs_stage_row **out,
            size_t *n)
{
	struct stage_collect c = {0};
	struct jrec *r = jobs_find(d->jobs, id);
	int rc;

	*out = NULL;
	*n = 0;
	rc = store_job_events(d->store, id, "stage_end", JOBS_MAX_STAGES,
	                      stage_row_cb, &c);
	if (rc == 0 && c.err)
		rc = -1;
	if (rc == 0 && r != NULL && r->stage != NULL &&
	    r->stage->name != NULL &&
	    stage_push(&c, r->stage->name, r->stage->started_ms, 0,
	               r->stage->footprint_peak_bytes,
	               stage_growth(r->stage)) != 0)
		rc = -1;
	if (rc != 0) {
		jobs_stages_free(c.rows, c.n);
		return rc;
	}
	*out = c.rows;
	*n = c.n;
	return 0;
}
