/*
 * Samples: the system and per-job sample rings (store_add_sample,
 * store_add_job_sample), store_flush, which commits them together with the
 * rollup buckets they touch, gap markers, history at every tier, a job's
 * history, the latest sample, and retention (store_prune, which leaves the
 * jobs' part to store_prune_jobs in store-jobs.c).
 *
 * Samples arrive every interval from the event loop, so the hot path only
 * copies them into preallocated rings; store_flush writes a ring in one
 * transaction together with the rollup buckets it touches, using statements
 * prepared once at open. Flushes and markers record their outcome in the
 * store's health (store_health_note in store.c).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "store-internal.h"

#define STORE_TOTALS_EVERY_MS (3600 * 1000)
#define MS_PER_DAY (24LL * 3600 * 1000)

/* One rollup bucket being accumulated during a flush. */
struct rollup_acc {
	int64_t ts_ms;
	int64_t n;
	int64_t free_min, free_max, free_sum;
	int64_t swap_min, swap_max, swap_sum;
	int64_t avail_min, avail_max, avail_sum;
	int64_t pressure_max;
};

static int64_t
clamp_u64(uint64_t v)
{
	return v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v;
}

static int64_t
floor_to(int64_t v, int64_t step)
{
	int64_t r = v % step;

	return r < 0 ? v - r - step : v - r;
}

void
store_add_sample(struct store *s, const struct sys_sample *ss)
{
	if (s->slen == s->scap) {
		/* Storage has been failing for a long time: keep the most
		 * recent history rather than the oldest. */
		s->shead = (s->shead + 1) % s->scap;
		s->slen--;
		s->dropped++;
	}
	s->sbuf[(s->shead + s->slen) % s->scap] = *ss;
	s->slen++;
	s->last = *ss;
	s->have_last = 1;
}

void
store_add_job_sample(struct store *s, int64_t job_id, int64_t ts_ms,
                     uint64_t footprint_bytes, uint64_t swap_bytes)
{
	struct job_sample_rec *r;

	if (s->jlen == s->jcap) {
		s->jhead = (s->jhead + 1) % s->jcap;
		s->jlen--;
		s->dropped++;
	}
	r = &s->jbuf[(s->jhead + s->jlen) % s->jcap];
	r->job_id = job_id;
	r->ts_ms = ts_ms;
	r->footprint_bytes = footprint_bytes;
	r->swap_bytes = swap_bytes;
	s->jlen++;
}

size_t
store_pending(struct store *s)
{
	return s->slen + s->jlen;
}

int64_t
store_unwritten_since(struct store *s, int64_t job_id)
{
	int64_t oldest = INT64_MAX;
	const struct job_sample_rec *r;
	size_t i;

	if (job_id == 0)
		return s->slen > 0 ? s->sbuf[s->shead].ts_ms : INT64_MAX;
	for (i = 0; i < s->jlen; i++) {
		r = &s->jbuf[(s->jhead + i) % s->jcap];
		if (r->job_id == job_id && r->ts_ms < oldest)
			oldest = r->ts_ms;
	}
	return oldest;
}

uint64_t
store_dropped(struct store *s)
{
	return s->dropped;
}

/* Round a non-negative measure to an integer (no libm needed). */
static int64_t
round_pos(double v)
{
	return (int64_t)(v + 0.5);
}

static int64_t
store_free_bp(double free_pct)
{
	if (!(free_pct > 0)) /* also NaN */
		return 0;
	if (free_pct >= 100)
		return 10000;
	return round_pos(free_pct * 100);
}

static void
rollup_add(struct rollup_acc *a, int64_t bucket_ms, int64_t free_bp,
           int64_t swap, int64_t avail, int64_t pressure)
{
	if (a->n == 0) {
		a->ts_ms = bucket_ms;
		a->free_min = a->free_max = free_bp;
		a->swap_min = a->swap_max = swap;
		a->avail_min = a->avail_max = avail;
		a->pressure_max = pressure;
		a->free_sum = a->swap_sum = a->avail_sum = 0;
	}
	a->n++;
	if (free_bp < a->free_min)
		a->free_min = free_bp;
	if (free_bp > a->free_max)
		a->free_max = free_bp;
	if (swap < a->swap_min)
		a->swap_min = swap;
	if (swap > a->swap_max)
		a->swap_max = swap;
	if (avail < a->avail_min)
		a->avail_min = avail;
	if (avail > a->avail_max)
		a->avail_max = avail;
	if (pressure > a->pressure_max)
		a->pressure_max = pressure;
	a->free_sum += free_bp;
	a->swap_sum += swap;
	a->avail_sum += avail;
}

/* Merge an accumulated bucket into its tier table. */
static int
rollup_emit(struct store *s, int tier, struct rollup_acc *a)
{
	sqlite3_stmt *st = s->upsert[tier];
	int rc;

	if (a->n == 0)
		return SQLITE_OK;
	sqlite3_bind_int64(st, 1, a->ts_ms);
	sqlite3_bind_int64(st, 2, a->n);
	sqlite3_bind_int64(st, 3, a->free_min);
	sqlite3_bind_int64(st, 4, a->free_max);
	sqlite3_bind_int64(st, 5, a->free_sum);
	sqlite3_bind_int64(st, 6, a->swap_min);
	sqlite3_bind_int64(st, 7, a->swap_max);
	sqlite3_bind_int64(st, 8, a->swap_sum);
	sqlite3_bind_int64(st, 9, a->avail_min);
	sqlite3_bind_int64(st, 10, a->avail_max);
	sqlite3_bind_int64(st, 11, a->avail_sum);
	sqlite3_bind_int64(st, 12, a->pressure_max);
	rc = store_run(st);
	a->n = 0;
	return rc;
}

/* Insert one buffered sample; *inserted is 0 for a duplicate timestamp. */
static int
store_insert_sample(struct store *s, const struct sys_sample *ss, int *inserted)
{
	sqlite3_stmt *st = s->ins_sample;
	int64_t total = clamp_u64(ss->total_bytes);
	int64_t swap_total = clamp_u64(ss->swap_total_bytes);
	int with_totals, rc;

	/* Totals rarely change: store them when they do, on the first row
	 * after open, and hourly, so the latest value is never far back. */
	with_totals = total != s->written_total ||
	              swap_total != s->written_swap_total ||
	              ss->ts_ms < s->written_totals_ms ||
	              ss->ts_ms - s->written_totals_ms >= STORE_TOTALS_EVERY_MS;
	sqlite3_bind_int64(st, 1, ss->ts_ms);
	sqlite3_bind_int64(st, 2, store_free_bp(ss->free_pct));
	sqlite3_bind_int64(st, 3, clamp_u64(ss->available_bytes));
	sqlite3_bind_int64(st, 4, clamp_u64(ss->swap_used_bytes));
	sqlite3_bind_int(st, 5, (int)ss->pressure);
	if (ss->psi_some_avg10 >= 0)
		sqlite3_bind_int64(st, 6, round_pos(ss->psi_some_avg10 * 100));
	else
		sqlite3_bind_null(st, 6);
	if (with_totals) {
		sqlite3_bind_int64(st, 7, total);
		sqlite3_bind_int64(st, 8, swap_total);
	} else {
		sqlite3_bind_null(st, 7);
		sqlite3_bind_null(st, 8);
	}
	sqlite3_bind_int64(st, 9, clamp_u64(ss->compressed_bytes));
	sqlite3_bind_int64(st, 10, clamp_u64(ss->wired_bytes));
	rc = store_run(st);
	*inserted = rc == SQLITE_OK && sqlite3_changes(s->db) > 0;
	if (*inserted && with_totals) {
		s->written_total = total;
		s->written_swap_total = swap_total;
		s->written_totals_ms = ss->ts_ms;
	}
	return rc;
}

static int
flush_samples(struct store *s, char *cause, size_t causelen)
{
	struct rollup_acc acc[NTIERS];
	int64_t saved_total = s->written_total;
	int64_t saved_swap_total = s->written_swap_total;
	int64_t saved_totals_ms = s->written_totals_ms;
	const char *what = "beginning the transaction";
	size_t i;
	int t, rc, inserted;

	if (s->slen == 0 && s->jlen == 0)
		return 0;
	memset(acc, 0, sizeof acc);
	if ((rc = store_run(s->begin)) != SQLITE_OK)
		goto fail;
	for (i = 0; i < s->slen; i++) {
		const struct sys_sample *ss =
		    &s->sbuf[(s->shead + i) % s->scap];
		int64_t free_bp, swap, avail;

		what = "inserting a sample";
		rc = store_insert_sample(s, ss, &inserted);
		if (rc != SQLITE_OK)
			goto fail;
		if (!inserted)
			continue; /* the same instant twice: count it once */
		free_bp = store_free_bp(ss->free_pct);
		swap = clamp_u64(ss->swap_used_bytes);
		avail = clamp_u64(ss->available_bytes);
		what = "updating a rollup";
		for (t = 0; t < NTIERS; t++) {
			int64_t b = floor_to(ss->ts_ms, store_tiers[t].res_ms);

			if (acc[t].n > 0 && acc[t].ts_ms != b &&
			    (rc = rollup_emit(s, t, &acc[t])) != SQLITE_OK)
				goto fail;
			rollup_add(&acc[t], b, free_bp, swap, avail,
			           ss->pressure);
		}
	}
	what = "updating a rollup";
	for (t = 0; t < NTIERS; t++)
		if ((rc = rollup_emit(s, t, &acc[t])) != SQLITE_OK)
			goto fail;
	what = "inserting a job sample";
	for (i = 0; i < s->jlen; i++) {
		const struct job_sample_rec *r =
		    &s->jbuf[(s->jhead + i) % s->jcap];
		sqlite3_stmt *st = s->ins_job_sample;

		sqlite3_bind_int64(st, 1, r->job_id);
		sqlite3_bind_int64(st, 2, r->ts_ms);
		sqlite3_bind_int64(st, 3, clamp_u64(r->footprint_bytes));
		sqlite3_bind_int64(st, 4, clamp_u64(r->swap_bytes));
		if ((rc = store_run(st)) != SQLITE_OK)
			goto fail;
	}
	what = "committing samples";
	if ((rc = store_run(s->commit)) != SQLITE_OK)
		goto fail;
	s->shead = s->slen = 0;
	s->jhead = s->jlen = 0;
	return 0;
fail:
	rc = store_fail(s, rc, what, cause, causelen);
	store_abort(s);
	/* The rows carrying totals were rolled back too. */
	s->written_total = saved_total;
	s->written_swap_total = saved_swap_total;
	s->written_totals_ms = saved_totals_ms;
	return rc;
}

int
store_flush(struct store *s, char *cause, size_t causelen)
{
	char why[STORE_CAUSE_MAX] = "";

	return store_health_note(s, STORE_AREA_SAMPLES, "samples",
	                         flush_samples(s, why, sizeof why), why, cause,
	                         causelen);
}

int
store_prune(struct store *s, int64_t now_ms, const struct store_retention *r,
            char *cause, size_t causelen)
{
	static const char *const tier_delete[NTIERS] = {
	    "DELETE FROM rollup_10s WHERE ts_ms < ?1",
	    "DELETE FROM rollup_1m WHERE ts_ms < ?1",
	    "DELETE FROM rollup_10m WHERE ts_ms < ?1",
	};
	const int64_t tier_keep[NTIERS] = {r->t10s_ms, r->t1m_ms, r->t10m_ms};
	int64_t longest = r->raw_ms;
	int t, rc;

	/* Prune runs rarely (hourly), so its SQL is prepared on the spot. */
	if ((rc = store_run(s->begin)) != SQLITE_OK)
		goto fail;
	if (r->raw_ms > 0 &&
	    (rc = store_exec_cut(s, "DELETE FROM samples WHERE ts_ms < ?1",
	                         now_ms - r->raw_ms)) != SQLITE_OK)
		goto fail;
	for (t = 0; t < NTIERS; t++) {
		if (tier_keep[t] <= 0) {
			longest = 0;
			continue;
		}
		if (longest > 0 && tier_keep[t] > longest)
			longest = tier_keep[t];
		if ((rc = store_exec_cut(s, tier_delete[t],
		                         now_ms - tier_keep[t])) != SQLITE_OK)
			goto fail;
	}
	/* Markers matter as long as any tier can show their gap. */
	if (longest > 0 && r->raw_ms > 0 &&
	    (rc = store_exec_cut(s, "DELETE FROM markers WHERE ts_ms < ?1",
	                         now_ms - longest)) != SQLITE_OK)
		goto fail;
	if ((rc = store_prune_jobs(s, now_ms, r)) != SQLITE_OK)
		goto fail;
	if ((rc = store_run(s->commit)) != SQLITE_OK)
		goto fail;
	if (s->usage_stale)
		(void)store_usage_load(s);
	return 0;
fail:
	rc = store_fail(s, rc, "pruning", cause, causelen);
	store_abort(s);
	/* store_prune_jobs took what it deleted from store_usage: nothing
	 * was, so count again. */
	(void)store_usage_load(s);
	return rc;
}

static int
write_marker(struct store *s, int64_t ts_ms, const char *kind, char *cause,
             size_t causelen)
{
	int rc;

	sqlite3_bind_int64(s->ins_marker, 1, ts_ms);
	sqlite3_bind_text(s->ins_marker, 2, kind, -1, SQLITE_TRANSIENT);
	rc = store_run(s->ins_marker);
	sqlite3_clear_bindings(s->ins_marker);
	if (rc != SQLITE_OK)
		return store_fail(s, rc, "writing a marker", cause, causelen);
	return 0;
}

int
store_mark(struct store *s, int64_t ts_ms, const char *kind, char *cause,
           size_t causelen)
{
	char why[STORE_CAUSE_MAX] = "";

	return store_health_note(s, STORE_AREA_SAMPLES, "samples",
	                         write_marker(s, ts_ms, kind, why, sizeof why),
	                         why, cause, causelen);
}

int
store_history_begin(struct store *s, int64_t since_ms, int64_t until_ms,
                    int64_t step_ms, struct store_history_cursor *c,
                    char *cause, size_t causelen)
{
	return store_read_history_begin(s->reader, since_ms, until_ms, step_ms,
	                                c, cause, causelen);
}

int
store_history_next(struct store *s, struct store_history_cursor *c,
                   int64_t max_buckets, struct history_bucket **out, size_t *n,
                   char *cause, size_t causelen)
{
	return store_read_history_next(s->reader, c, max_buckets, out, n, cause,
	                               causelen);
}

int
store_history(struct store *s, int64_t since_ms, int64_t until_ms,
              int64_t step_ms, const char **tier, struct history_bucket **out,
              size_t *n, char *cause, size_t causelen)
{
	struct store_history_cursor c;
	int rc;

	*out = NULL;
	*n = 0;
	if ((rc = store_history_begin(s, since_ms, until_ms, step_ms, &c, cause,
	                              causelen)) != 0)
		return rc;
	if (tier != NULL)
		*tier = c.tier;
	return store_history_next(s, &c, 0, out, n, cause, causelen);
}

int
store_job_history(struct store *s, int64_t job_id, int64_t since_ms,
                  int64_t until_ms, int64_t step_ms, struct job_bucket **out,
                  size_t *n, char *cause, size_t causelen)
{
	return store_read_job_history(s->reader, job_id, since_ms, until_ms,
	                              step_ms, out, n, cause, causelen);
}

struct store_read *
store_reader(struct store *s)
{
	return s->reader;
}

int
store_latest(struct store *s, struct sys_sample *out)
{
	sqlite3_stmt *st = s->latest;
	int rc;

	if (s->have_last) {
		*out = s->last;
		return 0;
	}
	memset(out, 0, sizeof *out);
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		sqlite3_reset(st);
		return rc == SQLITE_DONE ? 1 : store_errno(rc);
	}
	out->ts_ms = sqlite3_column_int64(st, 0);
	out->free_pct = sqlite3_column_int64(st, 1) / 100.0;
	out->available_bytes = (uint64_t)sqlite3_column_int64(st, 2);
	out->swap_used_bytes = (uint64_t)sqlite3_column_int64(st, 3);
	out->pressure = (enum pressure_level)sqlite3_column_int(st, 4);
	out->psi_some_avg10 = sqlite3_column_type(st, 5) == SQLITE_NULL
	                          ? -1
	                          : sqlite3_column_int64(st, 5) / 100.0;
	out->compressed_bytes = (uint64_t)sqlite3_column_int64(st, 6);
	out->wired_bytes = (uint64_t)sqlite3_column_int64(st, 7);
	sqlite3_reset(st);
	st = s->latest_totals;
	if ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		out->total_bytes = (uint64_t)sqlite3_column_int64(st, 0);
		out->swap_total_bytes = (uint64_t)sqlite3_column_int64(st, 1);
	}
	sqlite3_reset(st);
	return 0;
}
