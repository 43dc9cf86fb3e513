/*
 * The per-day rollup of ended jobs that `report` reads (store-report.h):
 * a job counted in its day's row as it ends, in the transaction that ends
 * it (store_account does the same for tests and benchmarks that seed the
 * table); past STORE_REPORT_NAMES_PER_DAY names a uid's day folds the rest
 * into "(other)".
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

/* The job_days row a job counts in: its own name's, or the uid's
 * "(other)" once the day has STORE_REPORT_NAMES_PER_DAY names. An sqlite
 * result; *name is the row's. */
/* The statements, prepared once with the store's (store_days_prepare). */
#define DAYS_NAME_SQL                                                          \
	"SELECT (SELECT count(*) FROM job_days WHERE"                          \
	" day = ?1 AND uid = ?2 AND name = ?3),"                               \
	" (SELECT count(*) FROM job_days WHERE"                                \
	" day = ?1 AND uid = ?2 AND name != ?4)"
#define DAYS_ROW_SQL                                                           \
	"SELECT killed_by, run_hist FROM job_days"                             \
	" WHERE day = ?1 AND uid = ?2 AND name = ?3"
#define DAYS_ADD_SQL                                                           \
	"INSERT INTO job_days (day, uid, name, user, runs, exited_0,"          \
	" exited_nonzero, failed, killed, cancelled, lost, killed_by, ran,"    \
	" run_ms, run_hist, waited_ms, footprint_peak_bytes,"                  \
	" swap_growth_peak_bytes) VALUES (?1, ?2, ?3, ?4, 1, ?5, ?6, ?7,"      \
	" ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)"                     \
	" ON CONFLICT (day, uid, name) DO UPDATE SET user = excluded.user,"    \
	" runs = runs + 1, exited_0 = exited_0 + excluded.exited_0,"           \
	" exited_nonzero = exited_nonzero + excluded.exited_nonzero,"          \
	" failed = failed + excluded.failed,"                                  \
	" killed = killed + excluded.killed,"                                  \
	" cancelled = cancelled + excluded.cancelled,"                         \
	" lost = lost + excluded.lost, killed_by = excluded.killed_by,"        \
	" ran = ran + excluded.ran, run_ms = run_ms + excluded.run_ms,"        \
	" run_hist = excluded.run_hist,"                                       \
	" waited_ms = waited_ms + excluded.waited_ms,"                         \
	" footprint_peak_bytes = max(footprint_peak_bytes,"                    \
	"  excluded.footprint_peak_bytes),"                                    \
	" swap_growth_peak_bytes = max(swap_growth_peak_bytes,"                \
	"  excluded.swap_growth_peak_bytes)"

int
store_days_prepare(struct store *s, char *cause, size_t causelen)
{
	int rc;

	if ((rc = store_prepare(s, &s->days_name, DAYS_NAME_SQL, cause,
	                        causelen)) != 0 ||
	    (rc = store_prepare(s, &s->days_row, DAYS_ROW_SQL, cause,
	                        causelen)) != 0)
		return rc;
	return store_prepare(s, &s->days_add, DAYS_ADD_SQL, cause, causelen);
}

/* The job_days row a job counts in: its own name's, or the uid's
 * "(other)" once the day has STORE_REPORT_NAMES_PER_DAY names. An sqlite
 * result; *name is the row's. */
static int
days_name(struct store *s, int64_t day, uid_t uid, const char *want,
          const char **name)
{
	sqlite3_stmt *st = s->days_name;
	int rc, have = 0;
	int64_t n = 0;

	*name = want;
	sqlite3_bind_int64(st, 1, day);
	sqlite3_bind_int64(st, 2, (int64_t)uid);
	sqlite3_bind_text(st, 3, want, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, STORE_REPORT_OTHER, -1, SQLITE_STATIC);
	if ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		have = sqlite3_column_int(st, 0) > 0;
		n = sqlite3_column_int64(st, 1);
		rc = SQLITE_OK;
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (rc == SQLITE_OK && !have && n >= STORE_REPORT_NAMES_PER_DAY)
		*name = STORE_REPORT_OTHER;
	return rc;
}

int
store_days_add(struct store *s, const struct job *j)
{
	int64_t ended = j->ended_ms > 0 ? j->ended_ms : 0;
	int64_t day = ended / STORE_REPORT_DAY_MS, run = 0, waited;
	uint32_t hist[STORE_REPORT_HIST] = {0};
	const char *name = NULL;
	char *hist_text = NULL, *kb_text = NULL;
	cJSON *kb = NULL;
	sqlite3_stmt *st = NULL;
	int rc, killed = j->state == JOB_KILLED;
	int ran = j->started_ms > 0 && ended >= j->started_ms;

	if ((rc = days_name(s, day, j->uid, j->name ? j->name : "", &name)) !=
	    SQLITE_OK)
		return rc;
	/* The row as it is, to add the job to (its killed_by and run_hist
	 * are merged here; the numbers in SQL). */
	st = s->days_row;
	sqlite3_bind_int64(st, 1, day);
	sqlite3_bind_int64(st, 2, (int64_t)j->uid);
	sqlite3_bind_text(st, 3, name, -1, SQLITE_STATIC);
	if ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *t = (const char *)sqlite3_column_text(st, 0);

		kb = t != NULL ? cJSON_Parse(t) : NULL;
		(void)store_report_hist_parse(
		    (const char *)sqlite3_column_text(st, 1), hist);
		rc = SQLITE_DONE;
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	st = NULL;
	if (rc != SQLITE_DONE)
		return rc;
	if (kb == NULL && (kb = cJSON_CreateObject()) == NULL)
		return SQLITE_NOMEM;
	if (killed) {
		const char *reason =
		    j->end_reason && *j->end_reason ? j->end_reason : "other";
		cJSON *c = cJSON_GetObjectItemCaseSensitive(kb, reason);

		if (c != NULL)
			cJSON_SetNumberValue(c, c->valuedouble + 1);
		else
			cJSON_AddNumberToObject(kb, reason, 1);
	}
	if (ran) {
		run = ended - j->started_ms;
		hist[store_report_hist_bucket(run)]++;
	}
	waited = (ran ? j->started_ms : ended) - j->submitted_ms;
	if (waited < 0 || j->submitted_ms <= 0)
		waited = 0;
	kb_text = cJSON_PrintUnformatted(kb);
	cJSON_Delete(kb);
	hist_text = store_report_hist_text(hist);
	if (kb_text == NULL || hist_text == NULL) {
		rc = SQLITE_NOMEM;
		goto out;
	}
	st = s->days_add;
	sqlite3_bind_int64(st, 1, day);
	sqlite3_bind_int64(st, 2, (int64_t)j->uid);
	sqlite3_bind_text(st, 3, name, -1, SQLITE_STATIC);
	store_bind_text_or_null(st, 4, j->user);
	sqlite3_bind_int(st, 5,
	                 j->state == JOB_EXITED && j->exit_code == 0 &&
	                     j->term_signal == 0);
	sqlite3_bind_int(st, 6,
	                 j->state == JOB_EXITED &&
	                     (j->exit_code != 0 || j->term_signal != 0));
	sqlite3_bind_int(st, 7, j->state == JOB_FAILED);
	sqlite3_bind_int(st, 8, killed);
	sqlite3_bind_int(st, 9, j->state == JOB_CANCELLED);
	sqlite3_bind_int(st, 10, j->state == JOB_LOST);
	sqlite3_bind_text(st, 11, kb_text, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 12, ran);
	sqlite3_bind_int64(st, 13, run);
	sqlite3_bind_text(st, 14, hist_text, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 15, waited);
	sqlite3_bind_int64(st, 16, (int64_t)j->footprint_peak_bytes);
	sqlite3_bind_int64(st, 17, (int64_t)j->swap_growth_peak_bytes);
	rc = sqlite3_step(st);
	rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
out:
	if (st != NULL) {
		sqlite3_reset(st);
		sqlite3_clear_bindings(st);
	}
	free(kb_text);
	free(hist_text);
	return rc;
}

int
store_account(struct store *s, struct job *const *jobs, size_t n, char *cause,
              size_t causelen)
{
	size_t i;
	int rc;

	if ((rc = store_run(s->begin)) != SQLITE_OK)
		return store_fail(s, rc, "accounting", cause, causelen);
	for (i = 0; i < n && rc == SQLITE_OK; i++)
		if (JOB_STATE_ENDED(jobs[i]->state))
			rc = store_days_add(s, jobs[i]);
	if (rc == SQLITE_OK)
		rc = store_run(s->commit);
	if (rc != SQLITE_OK) {
		rc = store_fail(s, rc, "accounting", cause, causelen);
		store_abort(s);
		return rc;
	}
	return 0;
}
