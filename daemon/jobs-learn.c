/*
 * Learned peaks: a job whose name was given and that ran before reserves
 * what its last runs reached, as if --expect had said so; each run of a
 * given name that ends on its own or is killed adds what it reached.
 * docs/jobs.md, "Learned peaks", has the rule; store-learn.c the rows.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "jobs-internal.h"
#include "log.h"
#include "proto.h"
#include "store.h"

void
jobs_learn_expect(struct daemon *d, struct job *j)
{
	struct store_learned l;
	uint64_t expect;

	if (j->expect_source == JOB_EXPECT_GIVEN)
		return;
	/* Learning off, or a default name: today's rule, nothing
	 * reserved. */
	j->expect_source = JOB_EXPECT_NONE;
	j->expect_runs = 0;
	j->expect_bytes = 0;
	if (!d->cfg.learn || !j->name_given || j->name == NULL)
		return;
	if (store_learn_get(d->store, j->uid, j->name, d->cfg.learn_runs, &l) !=
	        0 ||
	    l.runs == 0 || l.footprint_peak_bytes == 0) {
		store_learned_clear(&l);
		return;
	}
	expect = l.footprint_peak_bytes;
	/* Never more than the machine has: it could never be met. */
	if (d->have_last && d->last.total_bytes > 0 &&
	    expect > d->last.total_bytes)
		expect = d->last.total_bytes;
	j->expect_bytes = expect;
	j->expect_source = JOB_EXPECT_LEARNED;
	j->expect_runs = l.runs;
	store_learned_clear(&l);
}

/* The run's stages as the learned row keeps them (malloc'd), or NULL. */
static char *
learn_stages_json(struct daemon *d, int64_t id)
{
	struct store_stage *rows;
	cJSON *a, *o;
	char *text;
	size_t i, n;

	if (jobs_stages(d, id, &rows, &n) != 0)
		return NULL;
	if (n == 0 || (a = cJSON_CreateArray()) == NULL) {
		store_stages_free(rows, n);
		return NULL;
	}
	for (i = 0; i < n; i++) {
		if ((o = cJSON_CreateObject()) == NULL)
			break;
		cJSON_AddStringToObject(o, "name", rows[i].name);
		proto_add_int(o, "footprint_peak_bytes",
		              (int64_t)rows[i].footprint_peak_bytes);
		proto_add_int(o, "swap_growth_bytes",
		              (int64_t)rows[i].swap_growth_bytes);
		cJSON_AddItemToArray(a, o);
	}
	store_stages_free(rows, n);
	text = cJSON_PrintUnformatted(a);
	cJSON_Delete(a);
	return text;
}

void
jobs_learn_record(struct daemon *d, const struct job *j)
{
	struct store_learn_run run;
	char cause[256];
	char *stages;

	/* Only runs that ran and ended on their own or by the daemon's
	 * hand: a lost one's numbers stop where the daemon lost it. */
	if (!d->cfg.learn || !j->name_given || j->name == NULL ||
	    j->started_ms <= 0 || j->footprint_peak_bytes == 0 ||
	    (j->state != JOB_EXITED && j->state != JOB_KILLED))
		return;
	stages = learn_stages_json(d, j->id);
	memset(&run, 0, sizeof run);
	run.uid = j->uid;
	run.name = j->name;
	run.job_id = j->id;
	run.ended_ms = j->ended_ms;
	run.killed = j->state == JOB_KILLED;
	run.footprint_peak_bytes = j->footprint_peak_bytes;
	run.swap_growth_peak_bytes = j->swap_growth_peak_bytes;
	run.stages = stages;
	cause[0] = '\0';
	if (store_learn_add(d->store, &run, cause, sizeof cause) != 0)
		log_warnx("jobs: job %" PRId64 " (%s): its peaks are not "
		          "learnt: %s",
		          j->id, j->name, cause);
	cJSON_free(stages);
}

int
jobs_learned(struct daemon *d, uid_t uid, const char *name,
             struct store_learned *out)
{
	return store_learn_get(d->store, uid, name, d->cfg.learn_runs, out);
}
