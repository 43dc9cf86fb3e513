/*
 * Jobs and events: inserting, updating and loading jobs, walking the
 * unended and ended ones, adding and listing events (retention and the
 * per-uid bounds are store-prune.c's, the per-day rollup store-days.c's).
 * Each write commits
 * before it returns and records its outcome in the store's health
 * (store_health_note in store.c).
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

/* argv and env are stored as JSON arrays so dashboards can json_extract
 * them; NULL stays NULL. */
static char *
store_strv_json(char *const *v)
{
	cJSON *a;
	char *text;

	if (v == NULL)
		return NULL;
	if ((a = cJSON_CreateArray()) == NULL)
		return NULL;
	for (; *v != NULL; v++) {
		cJSON *str = cJSON_CreateString(*v);

		if (str == NULL) {
			cJSON_Delete(a);
			return NULL;
		}
		cJSON_AddItemToArray(a, str);
	}
	text = cJSON_PrintUnformatted(a);
	cJSON_Delete(a);
	return text;
}

static char **
store_json_strv(const char *text, int *err)
{
	cJSON *a, *it;
	char **v;
	size_t i = 0;
	int count;

	*err = 0;
	if (text == NULL)
		return NULL;
	if ((a = cJSON_Parse(text)) == NULL || !cJSON_IsArray(a)) {
		cJSON_Delete(a);
		*err = -EINVAL;
		return NULL;
	}
	count = cJSON_GetArraySize(a);
	if ((v = calloc((size_t)count + 1, sizeof *v)) == NULL) {
		cJSON_Delete(a);
		*err = -ENOMEM;
		return NULL;
	}
	cJSON_ArrayForEach(it, a)
	{
		if (!cJSON_IsString(it) ||
		    (v[i] = strdup(it->valuestring)) == NULL) {
			while (i > 0)
				free(v[--i]);
			free(v);
			cJSON_Delete(a);
			*err = -ENOMEM;
			return NULL;
		}
		i++;
	}
	cJSON_Delete(a);
	return v;
}

/* Groups are a JSON array of gids, like argv and env a text column. */
static char *
store_groups_json(const gid_t *g, int n)
{
	size_t cap = 3 + (size_t)(n > 0 ? n : 0) * 11, len = 1;
	char *t;
	int i;

	if ((t = malloc(cap)) == NULL)
		return NULL;
	t[0] = '[';
	for (i = 0; i < n; i++)
		len += (size_t)snprintf(t + len, cap - len, "%s%u",
		                        i > 0 ? "," : "", (unsigned)g[i]);
	t[len++] = ']';
	t[len] = '\0';
	return t;
}

/* The column back: every member a gid (0 to 2^32 - 2), at most 65536. */
static int
store_json_groups(const char *text, gid_t **out, int *n)
{
	cJSON *a, *it;
	gid_t *g;
	int count, i = 0;

	*out = NULL;
	*n = 0;
	if (text == NULL || (a = cJSON_Parse(text)) == NULL)
		return -EINVAL;
	count = cJSON_IsArray(a) ? cJSON_GetArraySize(a) : -1;
	if (count < 0 || count > 65536) {
		cJSON_Delete(a);
		return -EINVAL;
	}
	if ((g = malloc(sizeof *g * (size_t)(count > 0 ? count : 1))) == NULL) {
		cJSON_Delete(a);
		return -ENOMEM;
	}
	cJSON_ArrayForEach(it, a)
	{
		double v = it->valuedouble;

		if (!cJSON_IsNumber(it) || !(v >= 0 && v < 4294967295.0) ||
		    (double)(uint32_t)v != v) {
			free(g);
			cJSON_Delete(a);
			return -EINVAL;
		}
		g[i++] = (gid_t)v;
	}
	cJSON_Delete(a);
	*out = g;
	*n = count;
	return 0;
}

void
store_bind_text_or_null(sqlite3_stmt *st, int i, const char *text)
{
	if (text == NULL)
		sqlite3_bind_null(st, i);
	else
		sqlite3_bind_text(st, i, text, -1, SQLITE_TRANSIENT);
}

/* Job ids as a JSON array ("[3,4]"); none is NULL. */
static int
store_ids_bind(sqlite3_stmt *st, int i, const int64_t *ids, int n)
{
	size_t cap = 3 + (size_t)(n > 0 ? n : 0) * 21, len = 1;
	char *t;
	int k;

	if (n <= 0) {
		sqlite3_bind_null(st, i);
		return 0;
	}
	if ((t = malloc(cap)) == NULL)
		return -ENOMEM;
	t[0] = '[';
	for (k = 0; k < n; k++)
		len += (size_t)snprintf(t + len, cap - len, "%s%lld",
		                        k > 0 ? "," : "", (long long)ids[k]);
	t[len++] = ']';
	t[len] = '\0';
	sqlite3_bind_text(st, i, t, -1, SQLITE_TRANSIENT);
	free(t);
	return 0;
}

/* The column back: NULL or an array of ids (1 to 2^53), at most 1024. */
static int
store_json_ids(const char *text, int64_t **out, int *n)
{
	cJSON *a, *it;
	int64_t *v;
	int count, i = 0;

	*out = NULL;
	*n = 0;
	if (text == NULL)
		return 0;
	if ((a = cJSON_Parse(text)) == NULL)
		return -EINVAL;
	count = cJSON_IsArray(a) ? cJSON_GetArraySize(a) : -1;
	if (count < 0 || count > 1024) {
		cJSON_Delete(a);
		return -EINVAL;
	}
	if (count == 0) {
		cJSON_Delete(a);
		return 0;
	}
	if ((v = malloc(sizeof *v * (size_t)count)) == NULL) {
		cJSON_Delete(a);
		return -ENOMEM;
	}
	cJSON_ArrayForEach(it, a)
	{
		double d = it->valuedouble;

		if (!cJSON_IsNumber(it) ||
		    !(d >= 1 && d <= 9007199254740992.0) ||
		    (double)(int64_t)d != d) {
			free(v);
			cJSON_Delete(a);
			return -EINVAL;
		}
		v[i++] = (int64_t)d;
	}
	cJSON_Delete(a);
	*out = v;
	*n = count;
	return 0;
}

/* STORED_<store cell>(x): x for a field with a column, nothing without. */
#define STORED_S_NO(x)
#define STORED_S_INT(x) x
#define STORED_S_DBL(x) x
#define STORED_S_TEXT(x) x
#define STORED_S_STATE(x) x
#define STORED_S_EXPECT(x) x
#define STORED_S_GROUPS(x) x
#define STORED_S_IDS(x) x
#define COLUMN_FIELD(m, w, store, col, ...) STORED_##store(", " col)
#define BINDS_FIELD(m, w, store, col, ...) STORED_##store(", ?")
const char store_job_columns[] = "" JOB_FIELDS(COLUMN_FIELD);
const char store_job_binds[] = "" JOB_FIELDS(BINDS_FIELD);
#define COUNT_FIELD(m, w, store, col, ...) STORED_##store(+1)
enum { JOB_NCOLUMNS = 0 JOB_FIELDS(COUNT_FIELD) };

/* Groups as their JSON array, bound as text. */
static int
store_groups_bind(sqlite3_stmt *st, int i, const gid_t *g, int n)
{
	char *groups;

	if ((groups = store_groups_json(g, n)) == NULL)
		return -ENOMEM;
	sqlite3_bind_text(st, i, groups, -1, SQLITE_TRANSIENT);
	free(groups);
	return 0;
}

static void
store_expect_bind(sqlite3_stmt *st, int i, enum job_expect_source e)
{
	if (e == JOB_EXPECT_NONE)
		sqlite3_bind_null(st, i);
	else
		sqlite3_bind_text(st, i, job_expect_source_name(e), -1,
		                  SQLITE_STATIC);
}

/* One bind per column of proto/job-fields.h, in its order (that of
 * store_job_columns). Integers of every width are
 * int64 in sqlite; uint64 values are kept bit for bit. */
#define BIND_S_NO(m)
#define BIND_S_INT(m) sqlite3_bind_int64(st, k++, (int64_t)j->m);
#define BIND_S_DBL(m) sqlite3_bind_double(st, k++, j->m);
#define BIND_S_TEXT(m) store_bind_text_or_null(st, k++, j->m);
#define BIND_S_STATE(m)                                                        \
	sqlite3_bind_text(st, k++, job_state_name(j->m), -1, SQLITE_STATIC);
#define BIND_S_EXPECT(m) store_expect_bind(st, k++, j->m);
#define BIND_S_GROUPS(m)                                                       \
	if (store_groups_bind(st, k++, j->m, j->n##m) != 0)                    \
		return -ENOMEM;
#define BIND_S_IDS(m)                                                          \
	if (store_ids_bind(st, k++, j->m, j->n##m) != 0)                       \
		return -ENOMEM;
#define BIND_FIELD(m, w, store, col, ...) BIND_##store(m)

static int
store_job_bind(sqlite3_stmt *st, const struct job *j)
{
	int k = 1;

	JOB_FIELDS(BIND_FIELD)
	return 0;
}

/* A new job's argv and env, into job_args. */
static int
store_args_bind(sqlite3_stmt *st, int64_t id, const struct job *j)
{
	char *argv = NULL, *env = NULL;

	if (j->argv != NULL && (argv = store_strv_json(j->argv)) == NULL)
		return -ENOMEM;
	if (j->env != NULL && (env = store_strv_json(j->env)) == NULL) {
		cJSON_free(argv);
		return -ENOMEM;
	}
	sqlite3_bind_int64(st, 1, id);
	store_bind_text_or_null(st, 2, argv);
	store_bind_text_or_null(st, 3, env);
	cJSON_free(argv);
	cJSON_free(env);
	return 0;
}

static char *
column_strdup(sqlite3_stmt *st, int i, int *err)
{
	const unsigned char *t;
	char *c;

	if (sqlite3_column_type(st, i) == SQLITE_NULL)
		return NULL;
	t = sqlite3_column_text(st, i);
	if (t == NULL || (c = strdup((const char *)t)) == NULL) {
		*err = -ENOMEM;
		return NULL;
	}
	return c;
}

/* The reading of each column, as BIND_ wrote it. */
#define ROW_S_NO(m)
#define ROW_S_INT(m) j->m = (__typeof__(j->m))sqlite3_column_int64(st, k++);
#define ROW_S_DBL(m) j->m = sqlite3_column_double(st, k++);
#define ROW_S_TEXT(m) j->m = column_strdup(st, k++, &err);
#define ROW_S_STATE(m)                                                         \
	if (job_state_parse((const char *)sqlite3_column_text(st, k++),        \
	                    &j->m) != 0)                                       \
		err = -EINVAL;
#define ROW_S_EXPECT(m)                                                        \
	j->m = job_expect_source_parse(                                        \
	    (const char *)sqlite3_column_text(st, k++));
#define ROW_S_GROUPS(m)                                                        \
	if ((e2 =                                                              \
	         store_json_groups((const char *)sqlite3_column_text(st, k++), \
	                           &j->m, &j->n##m)) != 0)                     \
		err = e2;
#define ROW_S_IDS(m)                                                           \
	if ((e2 = store_json_ids((const char *)sqlite3_column_text(st, k++),   \
	                         &j->m, &j->n##m)) != 0)                       \
		err = e2;
#define ROW_FIELD(m, w, store, col, ...) ROW_##store(m)

/* Build a job from a row of store_job_sql's select: id, the columns,
 * then JOB_ARGS. */
static int
store_job_row(sqlite3_stmt *st, struct job **out)
{
	struct job *j;
	int err = 0, e2 = 0, k = 1;

	*out = NULL;
	if ((j = calloc(1, sizeof *j)) == NULL)
		return -ENOMEM;
	j->id = sqlite3_column_int64(st, 0);
	JOB_FIELDS(ROW_FIELD)
	j->argv =
	    store_json_strv((const char *)sqlite3_column_text(st, k++), &e2);
	if (e2 != 0)
		err = e2;
	j->env =
	    store_json_strv((const char *)sqlite3_column_text(st, k++), &e2);
	if (e2 != 0)
		err = e2;
	if (err != 0) {
		job_free(j);
		return err;
	}
	*out = j;
	return 0;
}

/* j's row inside the caller's transaction; with args its job_args row
 * too. Sets j->id (and queue_seq when 0). An sqlite result, or -ENOMEM. */
static int
insert_row(struct store *s, struct job *j, int args)
{
	int64_t id;
	int rc;

	j->bytes = store_job_bytes(j);
	if ((rc = store_job_bind(s->job_ins, j)) != 0)
		return rc;
	rc = store_run(s->job_ins);
	sqlite3_clear_bindings(s->job_ins);
	if (rc != SQLITE_OK)
		return rc;
	id = sqlite3_last_insert_rowid(s->db);
	if (args) {
		if ((rc = store_args_bind(s->args_ins, id, j)) != 0)
			return rc;
		rc = store_run(s->args_ins);
		sqlite3_clear_bindings(s->args_ins);
		if (rc != SQLITE_OK)
			return rc;
	}
	if (j->queue_seq == 0) {
		sqlite3_bind_int64(s->job_seq, 1, id);
		if ((rc = store_run(s->job_seq)) != SQLITE_OK)
			return rc;
		j->queue_seq = id;
	}
	j->id = id;
	return SQLITE_OK;
}

/* Jobs inserted, then their transaction failed: none of them exists. */
static void
insert_undo(struct job **v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		/* A queue_seq given before (a requeue's) is an older id. */
		if (v[i]->id > 0 && v[i]->queue_seq == v[i]->id)
			v[i]->queue_seq = 0;
		v[i]->id = 0;
		v[i]->array_id = 0;
	}
}

/* v[0] and, when an array, the rest of its elements, in one transaction:
 * the rows, the one args row (v[0]'s, which the elements share) and the
 * array's id (v[0]'s job id) all commit together, or nothing does. */
static int
insert_jobs(struct store *s, struct job **v, size_t n, int array, char *cause,
            size_t causelen)
{
	const char *what = "inserting a job";
	size_t i;
	int rc;

	if ((rc = store_run(s->begin)) != SQLITE_OK)
		goto fail;
	for (i = 0; i < n; i++) {
		if (i > 0)
			v[i]->array_id = v[0]->id;
		if ((rc = insert_row(s, v[i], i == 0)) == -ENOMEM) {
			store_abort(s);
			insert_undo(v, i + 1);
			store_cause(cause, causelen,
			            "inserting a job: out of memory");
			return rc;
		}
		if (rc != SQLITE_OK)
			goto fail;
		if (i == 0 && array) {
			sqlite3_bind_int64(s->job_array, 1, v[0]->id);
			if ((rc = store_run(s->job_array)) != SQLITE_OK)
				goto fail;
			v[0]->array_id = v[0]->id;
		}
	}
	what = "committing a job";
	if ((rc = store_run(s->commit)) != SQLITE_OK)
		goto fail;
	for (i = 0; i < n; i++)
		store_usage_add(s, v[i]->uid, v[i]->bytes,
		                JOB_STATE_ENDED(v[i]->state) ? v[i]->bytes : 0,
		                1, JOB_STATE_ENDED(v[i]->state));
	return 0;
fail:
	insert_undo(v, n);
	rc = store_fail(s, rc, what, cause, causelen);
	store_abort(s);
	return rc;
}

int
store_job_insert(struct store *s, struct job *j, char *cause, size_t causelen)
{
	char why[STORE_CAUSE_MAX] = "";

	return store_health_note(s, STORE_AREA_SUBMIT, "job insert",
	                         insert_jobs(s, &j, 1, 0, why, sizeof why), why,
	                         cause, causelen);
}

int
store_array_insert(struct store *s, struct job **v, size_t n, char *cause,
                   size_t causelen)
{
	char why[STORE_CAUSE_MAX] = "";

	return store_health_note(s, STORE_AREA_SUBMIT, "array insert",
	                         insert_jobs(s, v, n, 1, why, sizeof why), why,
	                         cause, causelen);
}

static int
update_job(struct store *s, const struct job *j, char *cause, size_t causelen)
{
	int rc, days, was_ended = -1, ended = JOB_STATE_ENDED(j->state);

	/* Whether this update ends the row, for store_usage. */
	if (ended) {
		sqlite3_bind_int64(s->job_was_ended, 1, j->id);
		if (sqlite3_step(s->job_was_ended) == SQLITE_ROW)
			was_ended = sqlite3_column_int(s->job_was_ended, 0);
		sqlite3_reset(s->job_was_ended);
	}
	if ((rc = store_job_bind(s->job_upd, j)) != 0) {
		store_cause(cause, causelen, "updating a job: out of memory");
		return rc;
	}
	/* The update that ends the job and its day's accounting commit
	 * together, so a job counts once (store-report.h). */
	days = ended && was_ended == 0;
	if (days && (rc = store_run(s->begin)) != SQLITE_OK) {
		sqlite3_clear_bindings(s->job_upd);
		return store_fail(s, rc, "updating a job", cause, causelen);
	}
	sqlite3_bind_int64(s->job_upd, JOB_NCOLUMNS + 1, j->id);
	rc = store_run(s->job_upd);
	sqlite3_clear_bindings(s->job_upd);
	if (rc == SQLITE_OK && sqlite3_changes(s->db) == 0) {
		store_abort(s);
		store_cause(cause, causelen, "updating job %lld: no such job",
		            (long long)j->id);
		return -ENOENT;
	}
	if (rc == SQLITE_OK && days)
		rc = store_days_add(s, j);
	if (rc == SQLITE_OK && days)
		rc = store_run(s->commit);
	if (rc != SQLITE_OK) {
		rc = store_fail(s, rc, "updating a job", cause, causelen);
		store_abort(s);
		return rc;
	}
	if (days)
		store_usage_add(s, j->uid, 0, j->bytes, 0, 1);
	return 0;
}

int
store_job_update(struct store *s, const struct job *j, char *cause,
                 size_t causelen)
{
	char why[STORE_CAUSE_MAX] = "";

	return store_health_note(s, STORE_AREA_JOBS, "job update",
	                         update_job(s, j, why, sizeof why), why, cause,
	                         causelen);
}

int
store_array_elements(struct store *s, int64_t array_id, int64_t **ids,
                     int64_t **indices, size_t *n)
{
	sqlite3_stmt *st = s->array_elements;
	int64_t *v = NULL, *x = NULL, *nv;
	size_t len = 0, cap = 0;
	int rc;

	*ids = *indices = NULL;
	*n = 0;
	sqlite3_bind_int64(st, 1, array_id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (len == cap) {
			cap = cap == 0 ? 16 : 2 * cap;
			if ((nv = realloc(v, cap * sizeof *v)) == NULL)
				goto nomem;
			v = nv;
			if ((nv = realloc(x, cap * sizeof *x)) == NULL)
				goto nomem;
			x = nv;
		}
		v[len] = sqlite3_column_int64(st, 0);
		x[len++] = sqlite3_column_int64(st, 1);
	}
	sqlite3_reset(st);
	if (rc != SQLITE_DONE) {
		free(v);
		free(x);
		return store_errno(rc);
	}
	*ids = v;
	*indices = x;
	*n = len;
	return 0;
nomem:
	sqlite3_reset(st);
	free(v);
	free(x);
	return -ENOMEM;
}

static int job_get_with(struct store *s, sqlite3_stmt *st, int64_t id,
                        struct job **out);

int
store_job_get(struct store *s, int64_t id, struct job **out)
{
	return job_get_with(s, s->job_get, id, out);
}

int
store_job_get_lean(struct store *s, int64_t id, struct job **out)
{
	int rc = job_get_with(s, s->job_get_lean, id, out);

	if (rc == 0 && (rc = job_drop_args(*out)) != 0) {
		job_free(*out);
		*out = NULL;
	}
	return rc;
}

static int
job_get_with(struct store *s, sqlite3_stmt *st, int64_t id, struct job **out)
{
	int rc;

	*out = NULL;
	sqlite3_bind_int64(st, 1, id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		rc = store_job_row(st, out);
	else if (rc == SQLITE_DONE)
		rc = 1;
	else
		rc = store_errno(rc);
	sqlite3_reset(st);
	return rc;
}

/*
 * Read every row first, then call back: a callback may update the very
 * jobs being listed, which must not disturb the scan. With lean, each row's
 * argv is made its command line at once and dropped, so the rows read
 * together hold no argv or env (one user's queue at max_stored_bytes_per_uid
 * would otherwise be read whole into memory at start).
 */
static int
store_jobs_each(struct store *s, sqlite3_stmt *st, int lean,
                int (*cb)(void *arg, struct job *j), void *arg)
{
	struct job **v = NULL, **nv, *j;
	size_t len = 0, cap = 0, i;
	int rc;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (len == cap) {
			cap = cap == 0 ? 16 : 2 * cap;
			if ((nv = realloc(v, cap * sizeof *v)) == NULL) {
				rc = -ENOMEM;
				goto out;
			}
			v = nv;
		}
		if ((rc = store_job_row(st, &j)) != 0)
			goto out;
		if (lean && (rc = job_drop_args(j)) != 0) {
			job_free(j);
			goto out;
		}
		v[len++] = j;
	}
	rc = rc == SQLITE_DONE ? 0 : store_errno(rc);
out:
	sqlite3_reset(st);
	for (i = 0; i < len; i++) {
		if (rc == 0)
			rc = cb(arg, v[i]);
		else
			job_free(v[i]);
	}
	free(v);
	return rc;
}

int
store_jobs_unended(struct store *s, int (*cb)(void *arg, struct job *j),
                   void *arg)
{
	return store_jobs_each(s, s->jobs_unended, 1, cb, arg);
}

int
store_jobs_ended(struct store *s, int64_t limit,
                 int (*cb)(void *arg, struct job *j), void *arg)
{
	return store_jobs_ended_before(s, INT64_MAX, INT64_MAX, limit, cb, arg);
}

int
store_jobs_ended_before(struct store *s, int64_t ended_ms, int64_t id,
                        int64_t limit, int (*cb)(void *arg, struct job *j),
                        void *arg)
{
	sqlite3_bind_int64(s->jobs_ended, 1, limit > 0 ? limit : -1);
	sqlite3_bind_int64(s->jobs_ended, 2, ended_ms);
	sqlite3_bind_int64(s->jobs_ended, 3, id);
	return store_jobs_each(s, s->jobs_ended, 0, cb, arg);
}

int
store_jobs_ended_of(struct store *s, uid_t uid, int64_t ended_ms, int64_t id,
                    int64_t limit, int (*cb)(void *arg, struct job *j),
                    void *arg)
{
	sqlite3_bind_int64(s->jobs_ended_uid, 1, limit > 0 ? limit : -1);
	sqlite3_bind_int64(s->jobs_ended_uid, 2, ended_ms);
	sqlite3_bind_int64(s->jobs_ended_uid, 3, id);
	sqlite3_bind_int64(s->jobs_ended_uid, 4, (int64_t)uid);
	return store_jobs_each(s, s->jobs_ended_uid, 0, cb, arg);
}

static int
insert_event(struct store *s, struct store_event *e, char *cause,
             size_t causelen)
{
	sqlite3_stmt *st = s->ev_ins;
	int rc;

	sqlite3_bind_int64(st, 1, e->ts_ms);
	sqlite3_bind_int64(st, 2, e->job_id);
	sqlite3_bind_int64(st, 3, (int64_t)e->uid);
	sqlite3_bind_text(st, 4, e->kind != NULL ? e->kind : "", -1,
	                  SQLITE_TRANSIENT);
	store_bind_text_or_null(st, 5, e->detail);
	rc = store_run(st);
	sqlite3_clear_bindings(st);
	if (rc != SQLITE_OK)
		return store_fail(s, rc, "writing an event", cause, causelen);
	e->id = sqlite3_last_insert_rowid(s->db);
	return 0;
}

/* n events in one transaction (one alone needs none): an array's
 * submitted events are 1,000 commits otherwise. */
static int
insert_events(struct store *s, struct store_event **v, size_t n, char *cause,
              size_t causelen)
{
	size_t i;
	int rc;

	if (n == 1)
		return insert_event(s, v[0], cause, causelen);
	if ((rc = store_run(s->begin)) != SQLITE_OK)
		return store_fail(s, rc, "writing events", cause, causelen);
	for (i = 0; i < n; i++)
		if ((rc = insert_event(s, v[i], cause, causelen)) != 0) {
			store_abort(s);
			return rc;
		}
	if ((rc = store_run(s->commit)) != SQLITE_OK) {
		rc = store_fail(s, rc, "writing events", cause, causelen);
		store_abort(s);
	}
	return rc;
}

int
store_events_add(struct store *s, struct store_event **v, size_t n, char *cause,
                 size_t causelen)
{
	char why[STORE_CAUSE_MAX] = "";

	return store_health_note(s, STORE_AREA_EVENTS, "event",
	                         insert_events(s, v, n, why, sizeof why), why,
	                         cause, causelen);
}

int
store_event_add(struct store *s, struct store_event *e, char *cause,
                size_t causelen)
{
	return store_events_add(s, &e, 1, cause, causelen);
}

/* cb for each row of "SELECT id, ts_ms, job_id, uid, kind, detail": 0,
 * cb's non-zero return, or a negative errno. */
static int
event_rows(sqlite3_stmt *st, int (*cb)(void *arg, const struct store_event *e),
           void *arg)
{
	struct store_event e;
	int rc;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		e.id = sqlite3_column_int64(st, 0);
		e.ts_ms = sqlite3_column_int64(st, 1);
		e.job_id = sqlite3_column_int64(st, 2);
		e.uid = (uid_t)sqlite3_column_int64(st, 3);
		e.kind = (const char *)sqlite3_column_text(st, 4);
		e.detail = (const char *)sqlite3_column_text(st, 5);
		if ((rc = cb(arg, &e)) != 0)
			return rc;
	}
	return rc == SQLITE_DONE ? 0 : store_errno(rc);
}

int
store_events(struct store *s, int64_t after_id, int64_t job_id, int64_t limit,
             int (*cb)(void *arg, const struct store_event *e), void *arg)
{
	sqlite3_stmt *st = job_id > 0 ? s->ev_list_job : s->ev_list;
	int rc;

	sqlite3_bind_int64(st, 1, after_id);
	sqlite3_bind_int64(st, 2, limit > 0 ? limit : -1);
	if (job_id > 0)
		sqlite3_bind_int64(st, 3, job_id);
	rc = event_rows(st, cb, arg);
	sqlite3_reset(st);
	return rc;
}

int
store_events_before(struct store *s, int64_t before_id, int64_t job_id,
                    int64_t limit,
                    int (*cb)(void *arg, const struct store_event *e),
                    void *arg)
{
	sqlite3_stmt *st =
	    job_id > 0 ? s->ev_list_before_job : s->ev_list_before;
	int rc;

	sqlite3_bind_int64(st, 1, before_id > 0 ? before_id : INT64_MAX);
	sqlite3_bind_int64(st, 2, limit > 0 ? limit : -1);
	if (job_id > 0)
		sqlite3_bind_int64(st, 3, job_id);
	rc = event_rows(st, cb, arg);
	sqlite3_reset(st);
	return rc;
}

int
store_job_events(struct store *s, int64_t job_id, const char *kind,
                 int64_t limit,
                 int (*cb)(void *arg, const struct store_event *e), void *arg)
{
	sqlite3_stmt *st;
	int rc;

	rc = sqlite3_prepare_v2(s->db,
	                        "SELECT id, ts_ms, job_id, uid, kind, detail"
	                        " FROM events WHERE job_id = ?1 AND kind = ?2"
	                        " ORDER BY id LIMIT ?3",
	                        -1, &st, NULL);
	if (rc != SQLITE_OK)
		return store_errno(rc);
	sqlite3_bind_int64(st, 1, job_id);
	sqlite3_bind_text(st, 2, kind, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, limit > 0 ? limit : -1);
	rc = event_rows(st, cb, arg);
	sqlite3_finalize(st);
	return rc;
}
