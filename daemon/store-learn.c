/*
 * Learned peaks: what past runs of a job name reached, per uid, so that a
 * job submitted again under that name without --expect reserves it
 * (docs/jobs.md, "Learned peaks"; the table in docs/storage.md). Rows are
 * written when a run ends and read at submit, at admission and by show.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "store-internal.h"

int
store_learn_add(struct store *s, const struct store_learn_run *run, char *cause,
                size_t causelen)
{
	sqlite3_stmt *st = NULL;
	int rc;

	if ((rc = sqlite3_exec(s->db, "BEGIN", NULL, NULL, NULL)) != SQLITE_OK)
		return store_fail(s, rc, "learned peaks", cause, causelen);
	rc = sqlite3_prepare_v2(
	    s->db,
	    "INSERT INTO learned_peaks (uid, name, job_id, ended_ms, killed,"
	    " footprint_peak_bytes, swap_growth_peak_bytes, stages)"
	    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
	    -1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, (int64_t)run->uid);
		sqlite3_bind_text(st, 2, run->name, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 3, run->job_id);
		sqlite3_bind_int64(st, 4, run->ended_ms);
		sqlite3_bind_int(st, 5, run->killed != 0);
		sqlite3_bind_int64(st, 6, (int64_t)run->footprint_peak_bytes);
		sqlite3_bind_int64(st, 7, (int64_t)run->swap_growth_peak_bytes);
		if (run->stages != NULL)
			sqlite3_bind_text(st, 8, run->stages, -1,
			                  SQLITE_STATIC);
		else
			sqlite3_bind_null(st, 8);
		rc = sqlite3_step(st);
		rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
	}
	sqlite3_finalize(st);
	st = NULL;
	/* The bounds: the newest runs of the name, and of the uid. */
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(
		    s->db,
		    "DELETE FROM learned_peaks WHERE uid = ?1 AND ("
		    " (name = ?2 AND id <= (SELECT id FROM learned_peaks"
		    "  WHERE uid = ?1 AND name = ?2 ORDER BY id DESC"
		    "  LIMIT 1 OFFSET ?3))"
		    " OR id <= (SELECT id FROM learned_peaks WHERE uid = ?1"
		    "  ORDER BY id DESC LIMIT 1 OFFSET ?4))",
		    -1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, (int64_t)run->uid);
		sqlite3_bind_text(st, 2, run->name, -1, SQLITE_STATIC);
		sqlite3_bind_int(st, 3, STORE_LEARN_RUNS_MAX);
		sqlite3_bind_int(st, 4, STORE_LEARN_ROWS_PER_UID);
		rc = sqlite3_step(st);
		rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
	}
	sqlite3_finalize(st);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
	if (rc != SQLITE_OK) {
		store_fail(s, rc, "learned peaks", cause, causelen);
		store_abort(s);
		return store_errno(rc);
	}
	return 0;
}

/* Fold one run's stages into acc (name -> the highest of each number). */
static void
learn_fold_stages(cJSON *acc, const char *text)
{
	static const char *const nums[] = {"footprint_peak_bytes",
	                                   "swap_growth_bytes"};
	cJSON *a, *it;
	size_t k;

	if (text == NULL || (a = cJSON_Parse(text)) == NULL)
		return;
	cJSON_ArrayForEach(it, a)
	{
		cJSON *name = cJSON_GetObjectItemCaseSensitive(it, "name");
		cJSON *have = NULL, *e;

		if (!cJSON_IsString(name))
			continue;
		cJSON_ArrayForEach(e, acc)
		{
			cJSON *n = cJSON_GetObjectItemCaseSensitive(e, "name");
			if (strcmp(n->valuestring, name->valuestring) == 0) {
				have = e;
				break;
			}
		}
		if (have == NULL) {
			if ((have = cJSON_CreateObject()) == NULL)
				break;
			cJSON_AddStringToObject(have, "name",
			                        name->valuestring);
			for (k = 0; k < 2; k++)
				cJSON_AddNumberToObject(have, nums[k], 0);
			cJSON_AddItemToArray(acc, have);
		}
		for (k = 0; k < 2; k++) {
			cJSON *v =
			    cJSON_GetObjectItemCaseSensitive(it, nums[k]);
			cJSON *m =
			    cJSON_GetObjectItemCaseSensitive(have, nums[k]);
			if (cJSON_IsNumber(v) &&
			    v->valuedouble > m->valuedouble)
				cJSON_SetNumberValue(m, v->valuedouble);
		}
	}
	cJSON_Delete(a);
}

int
store_learn_get(struct store *s, uid_t uid, const char *name, int n,
                struct store_learned *out)
{
	sqlite3_stmt *st;
	cJSON *acc;
	int rc;

	memset(out, 0, sizeof *out);
	if (name == NULL || n <= 0)
		return 0;
	rc = sqlite3_prepare_v2(
	    s->db,
	    "SELECT killed, footprint_peak_bytes, swap_growth_peak_bytes,"
	    " stages FROM learned_peaks WHERE uid = ?1 AND name = ?2"
	    " ORDER BY id DESC LIMIT ?3",
	    -1, &st, NULL);
	if (rc != SQLITE_OK)
		return store_errno(rc);
	if ((acc = cJSON_CreateArray()) == NULL) {
		sqlite3_finalize(st);
		return -ENOMEM;
	}
	sqlite3_bind_int64(st, 1, (int64_t)uid);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 3, n);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		uint64_t fp = (uint64_t)sqlite3_column_int64(st, 1);
		uint64_t sw = (uint64_t)sqlite3_column_int64(st, 2);

		out->runs++;
		out->killed += sqlite3_column_int(st, 0) != 0;
		if (fp > out->footprint_peak_bytes)
			out->footprint_peak_bytes = fp;
		if (sw > out->swap_growth_peak_bytes)
			out->swap_growth_peak_bytes = sw;
		learn_fold_stages(acc,
		                  (const char *)sqlite3_column_text(st, 3));
	}
	sqlite3_finalize(st);
	if (cJSON_GetArraySize(acc) > 0)
		out->stages = cJSON_PrintUnformatted(acc);
	cJSON_Delete(acc);
	return rc == SQLITE_DONE ? 0 : store_errno(rc);
}

void
store_learned_clear(struct store_learned *l)
{
	if (l->stages != NULL)
		cJSON_free(l->stages);
	memset(l, 0, sizeof *l);
}
