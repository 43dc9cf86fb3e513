/*
 * stageloadctl history (and report) without the daemon: the database read
 * directly, read-only, with the user's own rights (never more: a system
 * daemon's database is root's, mode 0600, so that is `sudo stageloadctl
 * history`). The reading is the daemon's own (daemon/store-read.c, linked
 * here): the same tier, the same sums and averages, the same gap marks and
 * stages, so a range prints the same before and after the daemon stops
 * (tests/admin-history.py compares them). This file opens the database
 * and turns the buckets into libstageload's, as the daemon's answer would
 * carry them. docs/cli.md, "history".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "text.h"
#include "clock.h"
#include "cli.h"
#include "doctor.h"
#include "names.h"
#include "store-read.h"
#include "store-report.h"

/* A size as the daemon's answer carries it: whole bytes, rounded. */
static double
whole(double v)
{
	return (double)(int64_t)(v + 0.5);
}

/* The buckets of one read, appended to h as the daemon's answer gives
 * them (control.c, minavgmax). */
static int
history_append(struct sl_history *h, const struct history_bucket *b, size_t n)
{
	struct sl_bucket *nb, *c;
	size_t i;

	if (n == 0)
		return 0;
	if ((nb = realloc(h->buckets, (h->nbuckets + n) * sizeof *nb)) == NULL)
		return -ENOMEM;
	h->buckets = nb;
	for (i = 0; i < n; i++) {
		c = &h->buckets[h->nbuckets++];
		memset(c, 0, sizeof *c);
		c->ts_ms = b[i].ts_ms;
		c->n = b[i].n;
		c->free_pct.min = b[i].free_pct_min;
		c->free_pct.avg = b[i].free_pct_avg;
		c->free_pct.max = b[i].free_pct_max;
		c->swap_used_bytes.min = whole(b[i].swap_used_min);
		c->swap_used_bytes.avg = whole(b[i].swap_used_avg);
		c->swap_used_bytes.max = whole(b[i].swap_used_max);
		c->available_bytes.min = whole(b[i].available_min);
		c->available_bytes.avg = whole(b[i].available_avg);
		c->available_bytes.max = whole(b[i].available_max);
		snprintf(c->pressure_max, sizeof c->pressure_max, "%s",
		         names_pressure_name(b[i].pressure_max));
		c->gap = b[i].gap_before;
	}
	return 0;
}

int
cli_offline_history(const char *path, int64_t since_ms, int64_t until_ms,
                    int64_t step_ms, struct sl_history **out, char *cause,
                    size_t causelen)
{
	struct store_history_cursor c;
	struct history_bucket *b = NULL;
	struct store_read *r = NULL;
	struct sl_history *h;
	sqlite3 *db;
	size_t n;
	int rc;

	*out = NULL;
	if ((rc = store_read_open_file(path, &db, cause, causelen)) != 0)
		return rc;
	if ((h = calloc(1, sizeof *h)) == NULL) {
		sqlite3_close(db);
		return proto_cause(cause, causelen, -ENOMEM, "out of memory");
	}
	/* The daemon's defaults: until the millisecond after now; a step
	 * of the span / 60, at least the default interval (the daemon's
	 * own is not known here). */
	if (until_ms <= 0)
		until_ms = clock_wall_ms() + 1;
	if (step_ms <= 0) {
		step_ms = (until_ms - since_ms) / 60;
		if (step_ms < 500)
			step_ms = 500;
	}
	h->step_ms = step_ms;
	h->since_ms = since_ms;
	h->until_ms = until_ms;
	if (until_ms / step_ms - since_ms / step_ms + 1 > STORE_HISTORY_MAX)
		rc = proto_cause(
		    cause, causelen, -E2BIG,
		    "more than %d buckets in the range; use a larger "
		    "--step",
		    STORE_HISTORY_MAX);
	else if ((rc = store_read_open(&r, db, cause, causelen)) == 0 &&
	         (rc = store_read_history_begin(r, since_ms, until_ms, step_ms,
	                                        &c, cause, causelen)) == 0) {
		snprintf(h->tier, sizeof h->tier, "%s", c.tier);
		while (rc == 0 && !c.done) {
			rc = store_read_history_next(r, &c, 0, &b, &n, cause,
			                             causelen);
			if (rc == 0 && history_append(h, b, n) != 0)
				rc = proto_cause(cause, causelen, -ENOMEM,
				                 "out of memory");
			free(b);
			b = NULL;
		}
	}
	store_read_close(r);
	sqlite3_close(db);
	if (rc != 0) {
		sl_history_free(h);
		return rc;
	}
	*out = h;
	return 0;
}

/* ---- a job's history (daemon/control-jobs.c, control_job_history) ---- */

/* The stages the daemon lists (jobs-stage.c): the ended ones, at most
 * this many, then the one open when the daemon stopped. */
#define OFFLINE_MAX_STAGES 100

int
cli_offline_job_history(const char *path, int64_t job_id, int64_t since_ms,
                        int64_t until_ms, int64_t step_ms,
                        struct sl_history **out, char *cause, size_t causelen)
{
	struct sl_history *h = NULL;
	struct store_stage *st = NULL;
	struct store_read *r = NULL;
	struct job_bucket *jb = NULL;
	int64_t submitted = 0, ended = 0, lo, hi;
	size_t nst = 0, njb = 0, i;
	struct sl_bucket *b;
	sqlite3_stmt *q;
	sqlite3 *db;
	int rc, found = 0;

	*out = NULL;
	if ((rc = store_read_open_file(path, &db, cause, causelen)) != 0)
		return rc;
	if (sqlite3_prepare_v2(db,
	                       "SELECT submitted_ms, ended_ms FROM jobs"
	                       " WHERE id = ?1",
	                       -1, &q, NULL) == SQLITE_OK) {
		sqlite3_bind_int64(q, 1, job_id);
		if (sqlite3_step(q) == SQLITE_ROW) {
			found = 1;
			submitted = sqlite3_column_int64(q, 0);
			ended = sqlite3_column_int64(q, 1);
		}
		sqlite3_finalize(q);
	}
	if (!found) {
		sqlite3_close(db);
		return proto_cause(cause, causelen, -ENOENT, "%s: no job %lld",
		                   path, (long long)job_id);
	}
	if (step_ms <= 0) {
		lo = since_ms > 0 ? since_ms : submitted;
		hi = until_ms > 0 ? until_ms
		     : ended > 0  ? ended
		                  : clock_wall_ms();
		step_ms = hi > lo ? (hi - lo) / 60 : 0;
		if (step_ms < 500)
			step_ms = 500;
	}
	if ((h = calloc(1, sizeof *h)) == NULL)
		rc = proto_cause(cause, causelen, -ENOMEM, "out of memory");
	else if ((rc = store_read_open(&r, db, cause, causelen)) == 0 &&
	         (rc = store_read_job_stages(r, job_id, OFFLINE_MAX_STAGES, 1,
	                                     &st, &nst, cause, causelen)) == 0)
		rc = store_read_job_history(
		    r, job_id, since_ms, until_ms > 0 ? until_ms : INT64_MAX,
		    step_ms, &jb, &njb, cause, causelen);
	store_read_close(r);
	sqlite3_close(db);
	if (rc == 0 && njb > 0 &&
	    (h->buckets = calloc(njb, sizeof *h->buckets)) == NULL)
		rc = proto_cause(cause, causelen, -ENOMEM, "out of memory");
	if (rc != 0) {
		free(jb);
		store_stages_free(st, nst);
		if (h != NULL)
			sl_history_free(h);
		return rc;
	}
	h->job_id = job_id;
	h->step_ms = step_ms;
	h->since_ms = since_ms;
	h->until_ms = until_ms;
	for (i = 0; i < njb; i++) {
		/* As the daemon's answer carries them: whole bytes, cut. */
		b = &h->buckets[h->nbuckets++];
		b->ts_ms = jb[i].ts_ms;
		b->footprint_bytes.min = (double)(int64_t)jb[i].footprint_min;
		b->footprint_bytes.avg = (double)(int64_t)jb[i].footprint_avg;
		b->footprint_bytes.max = (double)(int64_t)jb[i].footprint_max;
		b->swap_bytes.min = (double)(int64_t)jb[i].swap_min;
		b->swap_bytes.avg = (double)(int64_t)jb[i].swap_avg;
		b->swap_bytes.max = (double)(int64_t)jb[i].swap_max;
		b->n = jb[i].n;
	}
	free(jb);
	for (i = 0; i < h->nbuckets; i++) {
		const char *name =
		    store_stage_at(st, nst, h->buckets[i].ts_ms,
		                   h->buckets[i].ts_ms + h->step_ms);
		if (name == NULL)
			continue;
		if (h->stages == NULL &&
		    (h->stages = calloc(h->nbuckets + 1, sizeof *h->stages)) ==
		        NULL)
			break;
		h->stages[i] = strdup(name);
	}
	store_stages_free(st, nst);
	*out = h;
	return 0;
}

int
cli_offline_db_path(const char *socket_path, int socket_given, char *buf,
                    size_t len)
{
	int sys_sock = socket_path != NULL &&
	               strcmp(socket_path, "/var/run/stageload.sock") == 0;

	/* A socket named (--socket, $STAGELOAD_SOCKET) says which daemon;
	 * root's daemon is always the system one; otherwise this user's
	 * database when there is one, else the system daemon's (whose socket
	 * is gone while it is down). */
	if (sys_sock || (!socket_given && geteuid() == 0))
		return doctor_default_db(1, buf, len);
	if (socket_given ||
	    (doctor_default_db(0, buf, len) == 0 && access(buf, F_OK) == 0))
		return doctor_default_db(0, buf, len);
	return doctor_default_db(1, buf, len);
}

/* ---- report (daemon/control-report.c) ---- */

/* A row of the store's sums as libstageload decodes the daemon's. */
static int
report_row(struct sl_report_row *w, const struct store_report_row *r)
{
	const cJSON *it;
	int n = cJSON_GetArraySize(r->killed_by);

	memset(w, 0, sizeof *w);
	w->uid = r->user != NULL ? r->uid : -1;
	if ((r->user != NULL && (w->user = strdup(r->user)) == NULL) ||
	    (r->name != NULL && (w->name = strdup(r->name)) == NULL))
		return -ENOMEM;
	w->runs = r->runs;
	w->exited_0 = r->exited_0;
	w->exited_nonzero = r->exited_nonzero;
	w->failed = r->failed;
	w->killed = r->killed;
	w->cancelled = r->cancelled;
	w->lost = r->lost;
	w->ran = r->ran;
	w->run_time_ms = r->run_time_ms;
	w->run_time_median_ms = store_report_hist_median(r->hist, r->ran);
	w->time_waited_ms = r->time_waited_ms;
	w->footprint_peak_bytes = (uint64_t)r->footprint_peak_bytes;
	w->swap_growth_peak_bytes = (uint64_t)r->swap_growth_peak_bytes;
	if (n > 0 &&
	    (w->killed_by = calloc((size_t)n, sizeof *w->killed_by)) == NULL)
		return -ENOMEM;
	cJSON_ArrayForEach(it, r->killed_by)
	{
		struct sl_report_kill *k = &w->killed_by[w->nkilled_by];

		if ((k->reason = strdup(it->string)) == NULL)
			return -ENOMEM;
		k->jobs = (int64_t)it->valuedouble;
		w->nkilled_by++;
	}
	return 0;
}

int
cli_offline_report(const char *path, const struct sl_report_query *q,
                   const cJSON *filter, struct sl_report **out, char *cause,
                   size_t causelen)
{
	struct store_report_query sq = {.since_ms = q->since_ms,
	                                .until_ms = q->until_ms};
	const struct store_report_row *rows;
	struct store_report *rep = NULL;
	struct store_read *r = NULL;
	struct sl_report *w;
	sqlite3 *db;
	size_t n, i;
	int rc, by = store_report_by_parse(q->by ? q->by : "user,name");

	*out = NULL;
	if (by < 0)
		return proto_cause(cause, causelen, -EINVAL, "by: %s", q->by);
	sq.by = (enum store_report_by)by;
	/* the daemon's own reading of the filter params (store-filter.c) */
	if (filter != NULL && store_filter_read(filter, getuid(), &sq.filter,
	                                        cause, causelen) != 0)
		return -EINVAL;
	if (sq.until_ms <= 0)
		sq.until_ms = clock_wall_ms();
	if ((rc = store_read_open_file(path, &db, cause, causelen)) != 0)
		return rc;
	if ((w = calloc(1, sizeof *w)) == NULL) {
		sqlite3_close(db);
		return proto_cause(cause, causelen, -ENOMEM, "out of memory");
	}
	if ((rc = store_read_open(&r, db, cause, causelen)) == 0 &&
	    (rc = store_report_begin(r, &sq, &rep, cause, causelen)) == 0)
		rc = store_report_next(rep, 0, cause, causelen);
	if (rc == 0) {
		snprintf(w->by, sizeof w->by, "%s",
		         store_report_by_name(sq.by));
		w->since_ms = sq.since_ms;
		w->until_ms = sq.until_ms;
		w->oldest_ms = store_report_oldest_ms(rep);
		n = store_report_rows(rep, &rows);
		if (n > 0 && (w->rows = calloc(n, sizeof *w->rows)) == NULL)
			rc = -ENOMEM;
		for (i = 0; rc == 0 && i < n; i++) {
			w->nrows++;
			rc = report_row(&w->rows[i], &rows[i]);
		}
		if (rc != 0)
			proto_cause(cause, causelen, rc, "out of memory");
	}
	store_report_free(rep);
	store_read_close(r);
	sqlite3_close(db);
	if (rc != 0) {
		sl_report_free(w);
		return rc;
	}
	*out = w;
	return 0;
}
