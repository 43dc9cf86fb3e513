/*
 * The jobs' part of retention and the per-uid bounds: which ended jobs
 * expire (store_jobs_expiring, store_prune_jobs), the bytes and counts each
 * uid holds (store_usage, kept as rows change) and making room for a uid
 * at its bounds (store_make_room).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "job-fields.h"
#include "job.h"
#include "store-internal.h"
#include "store-report.h"

int
store_jobs_expiring(struct store *s, int64_t now_ms,
                    const struct store_retention *r,
                    void (*cb)(void *arg, int64_t id), void *arg)
{
	sqlite3_stmt *st;
	int rc;

	if (r->jobs_ms <= 0)
		return 0;
	rc = sqlite3_prepare_v2(
	    s->db,
	    "SELECT id FROM jobs WHERE state IN " JOB_ENDED_STATES
	    " AND ended_ms < ?1",
	    -1, &st, NULL);
	if (rc != SQLITE_OK)
		return store_errno(rc);
	sqlite3_bind_int64(st, 1, now_ms - r->jobs_ms);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		cb(arg, sqlite3_column_int64(st, 0));
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : store_errno(rc);
}

static int
prune_usage(struct store *s, int64_t cut)
{
	sqlite3_stmt *st;
	int rc;

	rc = sqlite3_prepare_v2(
	    s->db,
	    "SELECT uid, count(*), total(b) FROM (SELECT uid, bytes"
	    " AS b FROM jobs WHERE state IN " JOB_ENDED_STATES
	    " AND ended_ms < ?1) GROUP BY uid",
	    -1, &st, NULL);
	if (rc != SQLITE_OK)
		return rc;
	sqlite3_bind_int64(st, 1, cut);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t n = sqlite3_column_int64(st, 1);
		int64_t b = (int64_t)sqlite3_column_double(st, 2);

		store_usage_add(s, (uid_t)sqlite3_column_int64(st, 0), -b, -b,
		                -n, -n);
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* store_prune's part for jobs, inside its transaction: the ended jobs past
 * r->jobs_ms with their samples and events, and daemon events as old. An
 * sqlite result. */
int
store_prune_jobs(struct store *s, int64_t now_ms,
                 const struct store_retention *r)
{
	const int64_t keep[] = {r->raw_ms, r->t10s_ms, r->t1m_ms, r->t10m_ms,
	                        r->jobs_ms};
	int64_t longest = 0;
	size_t k;
	int rc;

	/* Accounting is kept as long as the longest retention (forever
	 * when any of them is), in whole days. */
	for (k = 0; k < sizeof keep / sizeof keep[0]; k++) {
		if (keep[k] <= 0) {
			longest = 0;
			break;
		}
		if (keep[k] > longest)
			longest = keep[k];
	}
	if (longest > 0 &&
	    (rc = store_exec_cut(s, "DELETE FROM job_days WHERE day < ?1",
	                         (now_ms - longest) / STORE_REPORT_DAY_MS)) !=
	        SQLITE_OK)
		return rc;
	if (r->jobs_ms > 0) {
		int64_t cut = now_ms - r->jobs_ms;

		/* store_usage loses what goes: only those rows are read
		 * (store_prune recounts if the transaction fails). */
		if ((rc = prune_usage(s, cut)) != SQLITE_OK)
			return rc;
		if ((rc = store_exec_cut(
		         s,
		         "DELETE FROM job_samples WHERE job_id IN"
		         " (SELECT id FROM jobs WHERE state "
		         "IN " JOB_ENDED_STATES " AND ended_ms < ?1)",
		         cut)) != SQLITE_OK ||
		    (rc = store_exec_cut(
		         s,
		         "DELETE FROM job_args WHERE job_id IN"
		         " (SELECT CASE WHEN array_id > 0 THEN array_id ELSE id"
		         " END FROM jobs WHERE state IN " JOB_ENDED_STATES
		         " AND ended_ms < ?1) AND NOT EXISTS (SELECT 1 FROM "
		         "jobs"
		         " j2 WHERE j2.array_id > 0 AND j2.array_id ="
		         " job_args.job_id AND NOT (j2.state "
		         "IN " JOB_ENDED_STATES " AND j2.ended_ms < ?1))",
		         cut)) != SQLITE_OK ||
		    (rc = store_exec_cut(s,
		                         "DELETE FROM events WHERE job_id IN"
		                         " (SELECT id FROM jobs WHERE state "
		                         "IN " JOB_ENDED_STATES
		                         " AND ended_ms < ?1)"
		                         " OR (job_id = 0 AND ts_ms < ?1)",
		                         cut)) != SQLITE_OK ||
		    (rc = store_exec_cut(
		         s,
		         "DELETE FROM jobs WHERE state IN " JOB_ENDED_STATES
		         " AND ended_ms < ?1",
		         cut)) != SQLITE_OK ||
		    (rc = store_exec_cut(s,
		                         "DELETE FROM learned_peaks"
		                         " WHERE ended_ms < ?1",
		                         cut)) != SQLITE_OK)
			return rc;
	}
	return SQLITE_OK;
}

/* ---- bounds per user ---- */

static int64_t
strv_bytes(char *const *v)
{
	int64_t n = 0;

	for (; v != NULL && *v != NULL; v++)
		n += (int64_t)strlen(*v);
	return n;
}

int64_t
store_job_bytes(const struct job *j)
{
	return strv_bytes(j->argv) + strv_bytes(j->env) +
	       (j->cwd != NULL ? (int64_t)strlen(j->cwd) : 0) +
	       (j->name != NULL ? (int64_t)strlen(j->name) : 0) +
	       (j->on_end != NULL ? (int64_t)strlen(j->on_end) : 0) +
	       (j->group != NULL ? (int64_t)strlen(j->group) : 0);
}

/* Add to uid's counts (negative to take away). Out of memory the counts
 * are recounted at the next prune (usage_stale). */
void
store_usage_add(struct store *s, uid_t uid, int64_t bytes, int64_t ended_bytes,
                int64_t jobs, int64_t ended)
{
	struct umap_slot *b = umap_get(&s->usage_bytes, (uint64_t)uid + 1);
	struct umap_slot *r;

	if (b == NULL) {
		s->usage_stale = 1;
		return;
	}
	b->a += bytes;
	b->b += ended_bytes;
	if ((r = umap_get(&s->usage_rows, (uint64_t)uid + 1)) == NULL) {
		s->usage_stale = 1;
		return;
	}
	r->a += jobs;
	r->b += ended;
}

void
store_usage(struct store *s, uid_t uid, struct store_usage *u)
{
	struct umap_slot *b = umap_find(&s->usage_bytes, (uint64_t)uid + 1);
	struct umap_slot *r = umap_find(&s->usage_rows, (uint64_t)uid + 1);

	memset(u, 0, sizeof *u);
	if (b != NULL) {
		u->bytes = b->a;
		u->ended_bytes = b->b;
	}
	if (r != NULL) {
		u->jobs = r->a;
		u->ended = r->b;
	}
}

int
store_usage_load(struct store *s)
{
	sqlite3_stmt *st;
	int rc;

	rc = sqlite3_prepare_v2(
	    s->db,
	    "SELECT uid, total(b), total(e * b), count(*), total(e) FROM"
	    " (SELECT uid, state IN " JOB_ENDED_STATES " AS e, bytes"
	    " AS b FROM jobs) GROUP BY uid",
	    -1, &st, NULL);
	if (rc != SQLITE_OK)
		return store_errno(rc);
	umap_clear(&s->usage_bytes);
	umap_clear(&s->usage_rows);
	s->usage_stale = 0;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		store_usage_add(s, (uid_t)sqlite3_column_int64(st, 0),
		                (int64_t)sqlite3_column_double(st, 1),
		                (int64_t)sqlite3_column_double(st, 2),
		                sqlite3_column_int64(st, 3),
		                (int64_t)sqlite3_column_double(st, 4));
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : store_errno(rc);
}

int
store_make_room(struct store *s, uid_t uid, int64_t need_bytes,
                int64_t max_bytes, int64_t max_ended,
                void (*cb)(void *arg, int64_t id), void *arg, int *pruned,
                char *cause, size_t causelen)
{
	sqlite3_stmt *st = s->jobs_oldest_ended;
	struct store_usage u;
	int64_t *ids = NULL, *nids, bytes = 0, gone_bytes = 0;
	size_t n = 0, cap = 0, i;
	int rc;

	*pruned = 0;
	store_usage(s, uid, &u);
	/* The oldest first, as many as it takes. */
	sqlite3_bind_int64(st, 1, (int64_t)uid);
	while ((u.bytes - gone_bytes + need_bytes > max_bytes ||
	        u.ended - (int64_t)n > max_ended) &&
	       (rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (n == cap) {
			cap = cap == 0 ? 64 : 2 * cap;
			if ((nids = realloc(ids, cap * sizeof *ids)) == NULL) {
				sqlite3_reset(st);
				free(ids);
				store_cause(cause, causelen,
				            "pruning: out of memory");
				return -ENOMEM;
			}
			ids = nids;
		}
		ids[n++] = sqlite3_column_int64(st, 0);
		gone_bytes += sqlite3_column_int64(st, 1);
	}
	rc = sqlite3_reset(st);
	if (rc != SQLITE_OK) {
		free(ids);
		return store_fail(s, rc, "listing the oldest ended jobs", cause,
		                  causelen);
	}
	if (n == 0) {
		free(ids);
		return 0;
	}
	if ((rc = store_run(s->begin)) != SQLITE_OK)
		goto fail;
	for (i = 0; i < n; i++) {
		sqlite3_bind_int64(s->del_job_samples, 1, ids[i]);
		sqlite3_bind_int64(s->del_job_events, 1, ids[i]);
		sqlite3_bind_int64(s->del_job, 1, ids[i]);
		sqlite3_bind_int64(s->del_job_args, 1, ids[i]);
		if ((rc = store_run(s->del_job_samples)) != SQLITE_OK ||
		    (rc = store_run(s->del_job_events)) != SQLITE_OK ||
		    (rc = store_run(s->del_job_args)) != SQLITE_OK ||
		    (rc = store_run(s->del_job)) != SQLITE_OK)
			goto fail;
	}
	if ((rc = store_run(s->commit)) != SQLITE_OK)
		goto fail;
	bytes = gone_bytes;
	store_usage_add(s, uid, -bytes, -bytes, -(int64_t)n, -(int64_t)n);
	for (i = 0; cb != NULL && i < n; i++)
		cb(arg, ids[i]);
	free(ids);
	*pruned = (int)n;
	return 0;
fail:
	free(ids);
	rc =
	    store_fail(s, rc, "pruning the oldest ended jobs", cause, causelen);
	store_abort(s);
	return rc;
}
