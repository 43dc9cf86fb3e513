/*
 * libstageload, decoding: the daemon's JSON results and notifications
 * into the structs of stageload.h, and freeing them. Nothing here does
 * I/O; client-transport.c and client.c call it. Numbers are read from
 * valuedouble (proto/PROTOCOL.md).
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "client-internal.h"
#include "job-fields.h"
#include "proto.h"
#include "stageload.h"

const cJSON *
client_member(const cJSON *obj, const char *name)
{
	if (obj == NULL || !cJSON_IsObject(obj))
		return NULL;
	return cJSON_GetObjectItemCaseSensitive(obj, name);
}

/* A member that must be an array: NULL when it is anything else, so a
 * malformed answer is never walked as one (cJSON iterates objects too). */
const cJSON *
client_array(const cJSON *obj, const char *name)
{
	const cJSON *v = client_member(obj, name);

	return cJSON_IsArray(v) ? v : NULL;
}

int64_t
client_i64(const cJSON *obj, const char *name, int64_t dflt)
{
	const cJSON *v = client_member(obj, name);

	if (v == NULL || !cJSON_IsNumber(v))
		return dflt;
	return (int64_t)v->valuedouble;
}

uint64_t
client_u64(const cJSON *obj, const char *name)
{
	const cJSON *v = client_member(obj, name);

	if (v == NULL || !cJSON_IsNumber(v) || v->valuedouble < 0)
		return 0;
	return (uint64_t)v->valuedouble;
}

double
client_dbl(const cJSON *obj, const char *name, double dflt)
{
	const cJSON *v = client_member(obj, name);

	if (v == NULL || !cJSON_IsNumber(v))
		return dflt;
	return v->valuedouble;
}

int
client_bool(const cJSON *obj, const char *name)
{
	return cJSON_IsTrue(client_member(obj, name));
}

int
client_has_number(const cJSON *obj, const char *name)
{
	return cJSON_IsNumber(client_member(obj, name));
}

void
client_str(const cJSON *obj, const char *name, char *buf, size_t len)
{
	const cJSON *v = client_member(obj, name);

	buf[0] = '\0';
	if (v != NULL && cJSON_IsString(v) && v->valuestring != NULL)
		snprintf(buf, len, "%s", v->valuestring);
}

char *
client_dup_str(const cJSON *obj, const char *name)
{
	const cJSON *v = client_member(obj, name);

	if (v == NULL || !cJSON_IsString(v) || v->valuestring == NULL)
		return NULL;
	return strdup(v->valuestring);
}

char **
client_dup_strv(const cJSON *obj, const char *name)
{
	const cJSON *v = client_member(obj, name), *item;
	char **out;
	size_t n = 0;

	if (v == NULL || !cJSON_IsArray(v))
		return NULL;
	out = calloc((size_t)cJSON_GetArraySize(v) + 1, sizeof *out);
	if (out == NULL)
		return NULL;
	cJSON_ArrayForEach(item, v)
	{
		if (cJSON_IsString(item) && item->valuestring != NULL)
			out[n++] = strdup(item->valuestring);
	}
	return out;
}

static void
strv_free(char **v)
{
	size_t i;

	if (v == NULL)
		return;
	for (i = 0; v[i] != NULL; i++)
		free(v[i]);
	free(v);
}

void
client_decode_sample(const cJSON *o, struct sl_sample *s)
{
	memset(s, 0, sizeof *s);
	s->sampled_at_ms = client_i64(o, "sampled_at_ms", 0);
	s->total_bytes = client_u64(o, "total_bytes");
	s->available_bytes = client_u64(o, "available_bytes");
	s->free_pct = client_dbl(o, "free_pct", 0);
	s->swap_total_bytes = client_u64(o, "swap_total_bytes");
	s->swap_used_bytes = client_u64(o, "swap_used_bytes");
	client_str(o, "pressure", s->pressure, sizeof s->pressure);
	if (s->pressure[0] == '\0')
		snprintf(s->pressure, sizeof s->pressure, "unknown");
	s->has_psi = client_has_number(o, "psi_some_avg10");
	s->psi_some_avg10 = client_dbl(o, "psi_some_avg10", 0);
	s->compressed_bytes = client_u64(o, "compressed_bytes");
	s->wired_bytes = client_u64(o, "wired_bytes");
	s->has_pid = client_has_number(o, "pid");
	if (s->has_pid) {
		s->pid = client_i64(o, "pid", 0);
		s->footprint_bytes = client_u64(o, "footprint_bytes");
		s->has_swap_bytes = client_has_number(o, "swap_bytes");
		s->swap_bytes = client_u64(o, "swap_bytes");
		s->nprocs = (int)client_i64(o, "nprocs", 0);
	}
}

void
client_decode_event(const cJSON *o, struct sl_event *e)
{
	const cJSON *d;

	memset(e, 0, sizeof *e);
	e->id = client_i64(o, "id", 0);
	e->ts_ms = client_i64(o, "ts_ms", 0);
	e->job_id = client_i64(o, "job_id", 0);
	client_str(o, "user", e->user, sizeof e->user);
	client_str(o, "kind", e->kind, sizeof e->kind);
	/* The daemon sends an object (breach: the triggering sample); keep
	 * it as compact JSON text so callers need no cJSON. */
	d = client_member(o, "detail");
	if (d != NULL && (cJSON_IsObject(d) || cJSON_IsArray(d)))
		e->detail = proto_print(d, 0);
	else
		e->detail = client_dup_str(o, "detail");
}

/*
 * struct sl_job's decoded copies (sl-job.h), each named by its JOB_FIELDS
 * member: the Job's member it copies is the table's wire name, and a copy
 * of no field does not compile. A new field needs no row here: programs,
 * stageloadctl too, read it with the sl_job_get_* accessors.
 */
enum copy_kind {
	COPY_I64,  /* int64_t */
	COPY_INT,  /* int */
	COPY_U64,  /* uint64_t, 0 when negative */
	COPY_DBL,  /* double */
	COPY_BOOL, /* int, 1 for true */
	COPY_TEXT, /* char[], "" when not a string */
	COPY_DUP,  /* char *, malloc'd or NULL */
	COPY_STRV, /* char **, malloc'd NULL-terminated or NULL */
};
#define JOB_COPY_INDEX(m, ...) JOB_COPY_##m,
enum { JOB_FIELDS(JOB_COPY_INDEX) JOB_COPY_NFIELDS };
#define JOB_COPY_WIRE(m, w, ...) w,
static const char *const job_wire[] = {JOB_FIELDS(JOB_COPY_WIRE)};
/* clang-format off */
#define JOB_COPIES(X) \
	X(id, id, I64, 0) \
	X(user, user, TEXT, 0) \
	X(uid, uid, I64, -1) \
	X(name, name, TEXT, 0) \
	X(state, state, TEXT, 0) \
	X(attached, attached, BOOL, 0) \
	X(priority, priority, INT, 0) \
	X(wait_free_pct, wait_free_pct, DBL, 0) \
	X(wait_free_bytes, wait_free_bytes, U64, 0) \
	X(swap_budget_bytes, swap_budget_bytes, U64, 0) \
	X(expect_bytes, expect_bytes, U64, 0) \
	X(expect_source, expect_source, TEXT, 0) \
	X(expect_runs, expect_runs, INT, 0) \
	X(name_given, name_given, BOOL, 0) \
	X(exclusive, exclusive, BOOL, 0) \
	X(retry_on_breach, retry_on_breach, INT, 0) \
	X(attempt, attempt, INT, 1) \
	X(group, group, TEXT, 0) \
	X(position, position, INT, 0) \
	X(waiting_for, waiting_for, TEXT, 0) \
	X(submitted_ms, submitted_at_ms, I64, 0) \
	X(admitted_ms, admitted_at_ms, I64, 0) \
	X(started_ms, started_at_ms, I64, 0) \
	X(ended_ms, ended_at_ms, I64, 0) \
	X(pid, pid, I64, 0) \
	X(footprint_bytes, footprint_bytes, U64, 0) \
	X(footprint_peak_bytes, footprint_peak_bytes, U64, 0) \
	X(swap_growth_bytes, swap_growth_bytes, U64, 0) \
	X(swap_growth_peak_bytes, swap_growth_peak_bytes, U64, 0) \
	X(job_swap_bytes, job_swap_bytes, U64, 0) \
	X(exit_code, exit_code, INT, 0) \
	X(term_signal, signal, INT, 0) \
	X(end_reason, end_reason, TEXT, 0) \
	X(command, command, DUP, 0) \
	X(argv, argv, STRV, 0) \
	X(cwd, cwd, DUP, 0) \
	X(end_detail, end_detail, DUP, 0) \
	X(env, env, STRV, 0)
/* clang-format on */
#define JOB_COPY(field, member, kind, dflt)                                    \
	{JOB_COPY_##field, offsetof(struct sl_job, member),                    \
	 sizeof(((struct sl_job *)0)->member), COPY_##kind, dflt},
static const struct job_copy {
	int field;
	size_t offset, size;
	enum copy_kind kind;
	int64_t dflt; /* a number's when the Job has none */
} job_copies[] = {JOB_COPIES(JOB_COPY)};

/* Each copy's member is of its kind's type. */
#define COPY_IS_I64(x) _Generic((x), int64_t : 1, default : 0)
#define COPY_IS_INT(x) _Generic((x), int : 1, default : 0)
#define COPY_IS_BOOL(x) _Generic((x), int : 1, default : 0)
#define COPY_IS_U64(x) _Generic((x), uint64_t : 1, default : 0)
#define COPY_IS_DBL(x) _Generic((x), double : 1, default : 0)
#define COPY_IS_TEXT(x)                                                        \
	_Generic((x), char * : sizeof(x) != sizeof(char *), default : 0)
#define COPY_IS_DUP(x)                                                         \
	_Generic((x), char * : sizeof(x) == sizeof(char *), default : 0)
#define COPY_IS_STRV(x) _Generic((x), char ** : 1, default : 0)
#define JOB_COPY_CHECK(field, member, kind, dflt)                              \
	_Static_assert(COPY_IS_##kind(((struct sl_job *)0)->member),           \
	               "struct sl_job's " #member " is no " #kind);
JOB_COPIES(JOB_COPY_CHECK)

static void
job_copy(const cJSON *o, const struct job_copy *c, struct sl_job *j)
{
	const char *w = job_wire[c->field];
	char *at = (char *)j + c->offset;
	int64_t i64;
	uint64_t u64;
	double dbl;
	int i;
	char *dup;
	char **strv;

	switch (c->kind) {
	case COPY_I64:
		i64 = client_i64(o, w, c->dflt);
		memcpy(at, &i64, sizeof i64);
		break;
	case COPY_INT:
	case COPY_BOOL:
		i = c->kind == COPY_BOOL ? client_bool(o, w)
		                         : (int)client_i64(o, w, c->dflt);
		memcpy(at, &i, sizeof i);
		break;
	case COPY_U64:
		u64 = client_u64(o, w);
		memcpy(at, &u64, sizeof u64);
		break;
	case COPY_DBL:
		dbl = client_dbl(o, w, (double)c->dflt);
		memcpy(at, &dbl, sizeof dbl);
		break;
	case COPY_TEXT:
		client_str(o, w, at, c->size);
		break;
	case COPY_DUP:
		dup = client_dup_str(o, w);
		memcpy(at, &dup, sizeof dup);
		break;
	case COPY_STRV:
		strv = client_dup_strv(o, w);
		memcpy(at, &strv, sizeof strv);
		break;
	}
}

void
client_decode_job(const cJSON *o, struct sl_job *j)
{
	size_t i;

	memset(j, 0, sizeof *j);
	for (i = 0; i < sizeof job_copies / sizeof job_copies[0]; i++)
		job_copy(o, &job_copies[i], j);
	j->has_exit_code = client_has_number(o, "exit_code");
	/* For the accessors; without it they answer -ENOENT. */
	j->obj = cJSON_Duplicate(o, 1);
}

void
sl_job_clear(struct sl_job *j)
{
	if (j == NULL)
		return;
	free(j->end_detail);
	strv_free(j->argv);
	free(j->cwd);
	strv_free(j->env);
	free(j->command);
	cJSON_Delete(j->obj);
	memset(j, 0, sizeof *j);
}

int
sl_job_ended(const struct sl_job *j)
{
	static const char *const ended[] = {"exited",    "killed", "failed",
	                                    "cancelled", "lost",   NULL};
	size_t i;

	for (i = 0; ended[i] != NULL; i++)
		if (strcmp(j->state, ended[i]) == 0)
			return 1;
	return 0;
}

void
sl_notification_clear(struct sl_notification *n)
{
	if (n == NULL)
		return;
	free(n->params_json);
	free(n->event.detail);
	free(n->log.data);
	memset(n, 0, sizeof *n);
}

static int
kind_of(const char *method)
{
	static const struct {
		const char *name;
		enum sl_notification_kind kind;
	} kinds[] = {
	    {"sample", SL_N_SAMPLE},     {"process_gone", SL_N_PROCESS_GONE},
	    {"event", SL_N_EVENT},       {"queue", SL_N_QUEUE},
	    {"admitted", SL_N_ADMITTED}, {"breach", SL_N_BREACH},
	    {"log", SL_N_LOG},           {"ended", SL_N_ENDED},
	};
	size_t i;

	for (i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
		if (strcmp(method, kinds[i].name) == 0)
			return kinds[i].kind;
	return SL_N_OTHER;
}

void
client_decode_notification(const char *method, const cJSON *o,
                           struct sl_notification *n)
{
	memset(n, 0, sizeof *n);
	snprintf(n->method, sizeof n->method, "%s", method);
	n->kind = kind_of(method);
	n->params_json = o != NULL ? proto_print(o, 0) : strdup("{}");
	switch (n->kind) {
	case SL_N_SAMPLE:
		client_decode_sample(o, &n->sample);
		break;
	case SL_N_PROCESS_GONE:
		n->pid = client_i64(o, "pid", 0);
		break;
	case SL_N_EVENT:
		client_decode_event(o, &n->event);
		break;
	case SL_N_QUEUE:
		n->queue.id = client_i64(o, "id", 0);
		n->queue.position = (int)client_i64(o, "position", 0);
		n->queue.of = (int)client_i64(o, "of", 0);
		n->queue.free_pct = client_dbl(o, "free_pct", 0);
		n->queue.wait_free_pct = client_dbl(o, "wait_free_pct", 0);
		client_str(o, "waiting_for", n->queue.waiting_for,
		           sizeof n->queue.waiting_for);
		break;
	case SL_N_ADMITTED:
		n->admitted.id = client_i64(o, "id", 0);
		n->admitted.attempt = (int)client_i64(o, "attempt", 1);
		break;
	case SL_N_BREACH:
		n->breach.id = client_i64(o, "id", 0);
		n->breach.swap_growth_bytes =
		    client_u64(o, "swap_growth_bytes");
		n->breach.swap_budget_bytes =
		    client_u64(o, "swap_budget_bytes");
		n->breach.requeued = client_bool(o, "requeued");
		break;
	case SL_N_LOG:
		n->log.id = client_i64(o, "id", 0);
		n->log.offset = client_i64(o, "offset", 0);
		n->log.data = client_dup_str(o, "data");
		n->log.len = n->log.data != NULL ? strlen(n->log.data) : 0;
		break;
	case SL_N_ENDED:
		n->ended.id = client_i64(o, "id", 0);
		client_str(o, "state", n->ended.state, sizeof n->ended.state);
		client_str(o, "end_reason", n->ended.end_reason,
		           sizeof n->ended.end_reason);
		break;
	case SL_N_OTHER:
		break;
	}
}

static void
decode_stat(const cJSON *o, const char *name, struct sl_stat *s)
{
	const cJSON *v = client_member(o, name);

	s->min = client_dbl(v, "min", 0);
	s->avg = client_dbl(v, "avg", 0);
	s->max = client_dbl(v, "max", 0);
}

void
client_decode_hello(const cJSON *r, struct sl_hello *h)
{
	memset(h, 0, sizeof *h);
	h->version = (int)client_i64(r, "version", 0);
	client_str(r, "daemon_version", h->daemon_version,
	           sizeof h->daemon_version);
	client_str(r, "os", h->os, sizeof h->os);
	h->interval_ms = client_i64(r, "interval_ms", 0);
	h->uid = client_i64(r, "uid", -1);
}

void
client_decode_info(const cJSON *r, struct sl_info *info)
{
	const cJSON *jobs, *sample, *sampling;

	memset(info, 0, sizeof *info);
	client_str(r, "daemon_version", info->daemon_version,
	           sizeof info->daemon_version);
	info->version = (int)client_i64(r, "version", 0);
	client_str(r, "os", info->os, sizeof info->os);
	info->interval_ms = client_i64(r, "interval_ms", 0);
	info->started_at_ms = client_i64(r, "started_at_ms", 0);
	client_str(r, "socket", info->socket, sizeof info->socket);
	client_str(r, "db_path", info->db_path, sizeof info->db_path);
	info->db_bytes = client_u64(r, "db_bytes");
	client_str(r, "storage_error", info->storage_error,
	           sizeof info->storage_error);
	sample = client_member(r, "sample");
	if (sample != NULL && cJSON_IsObject(sample)) {
		info->has_sample = 1;
		client_decode_sample(sample, &info->sample);
	}
	jobs = client_member(r, "jobs");
	info->jobs_queued = (int)client_i64(jobs, "queued", 0);
	info->jobs_running = (int)client_i64(jobs, "running", 0);
	sampling = client_member(r, "sampling");
	info->sampling_interval_ms =
	    client_i64(sampling, "interval_ms", info->interval_ms);
	info->sampling_fast = client_bool(sampling, "fast");
	client_str(sampling, "reason", info->sampling_reason,
	           sizeof info->sampling_reason);
}

static void
decode_bucket(const cJSON *b, struct sl_bucket *k)
{
	k->ts_ms = client_i64(b, "ts_ms", 0);
	k->n = client_i64(b, "n", 0);
	decode_stat(b, "free_pct", &k->free_pct);
	decode_stat(b, "swap_used_bytes", &k->swap_used_bytes);
	decode_stat(b, "available_bytes", &k->available_bytes);
	client_str(b, "pressure_max", k->pressure_max, sizeof k->pressure_max);
	k->gap = client_bool(b, "gap");
	decode_stat(b, "footprint_bytes", &k->footprint_bytes);
	decode_stat(b, "swap_bytes", &k->swap_bytes);
}

/* Each kind of list: the result's member holding it and its items. */
static const struct {
	const char *name;
	size_t size;
} lists[] = {
    [CLIENT_JOBS] = {"jobs", sizeof(struct sl_job)},
    [CLIENT_EVENTS] = {"events", sizeof(struct sl_event)},
    [CLIENT_BUCKETS] = {"buckets", sizeof(struct sl_bucket)},
};

int
client_decode_list(const cJSON *result, enum client_list k,
                   int (*stop)(const void *elem, void *arg), void *arg,
                   void **items, size_t *n)
{
	const cJSON *array = client_array(result, lists[k].name), *item;
	size_t size = lists[k].size;
	size_t count = array != NULL ? (size_t)cJSON_GetArraySize(array) : 0;
	char *v, *elem;

	/* one zeroed element past the end: an empty list is not NULL */
	v = realloc(*items, (*n + count + 1) * size);
	if (v == NULL)
		return -ENOMEM;
	*items = v;
	memset(v + *n * size, 0, (count + 1) * size);
	cJSON_ArrayForEach(item, array)
	{
		elem = v + (*n)++ * size;
		if (k == CLIENT_JOBS)
			client_decode_job(item, (struct sl_job *)elem);
		else if (k == CLIENT_EVENTS)
			client_decode_event(item, (struct sl_event *)elem);
		else
			decode_bucket(item, (struct sl_bucket *)elem);
		if (stop != NULL && stop(elem, arg))
			return 1;
	}
	return 0;
}

void
client_list_free(enum client_list k, void *items, size_t n)
{
	size_t i;

	if (items == NULL)
		return;
	for (i = 0; i < n; i++) {
		if (k == CLIENT_JOBS)
			sl_job_clear((struct sl_job *)items + i);
		else if (k == CLIENT_EVENTS)
			free(((struct sl_event *)items)[i].detail);
	}
	free(items);
}

/* Job history: each bucket's stage, kept beside the buckets (struct
 * sl_bucket keeps its size); the array stays NULL while no bucket has one,
 * and out of memory loses the labels only. */
static void
decode_stages(const cJSON *r, struct sl_history *h)
{
	const cJSON *array = client_array(r, "buckets"), *b, *stage;
	size_t i = 0;

	cJSON_ArrayForEach(b, array)
	{
		if (i >= h->nbuckets)
			break;
		stage = cJSON_GetObjectItemCaseSensitive(b, "stage");
		if (cJSON_IsString(stage)) {
			if (h->stages == NULL &&
			    (h->stages = calloc(h->nbuckets + 1,
			                        sizeof *h->stages)) == NULL)
				return;
			h->stages[i] = strdup(stage->valuestring);
		}
		i++;
	}
}

int
client_decode_history(const cJSON *r, int64_t since_ms, int64_t until_ms,
                      struct sl_history **out)
{
	struct sl_history *h = calloc(1, sizeof *h);
	void *buckets = NULL;

	*out = NULL;
	if (h == NULL || client_decode_list(r, CLIENT_BUCKETS, NULL, NULL,
	                                    &buckets, &h->nbuckets) < 0) {
		free(buckets);
		free(h);
		return -ENOMEM;
	}
	h->buckets = buckets;
	client_str(r, "tier", h->tier, sizeof h->tier);
	h->job_id = client_i64(r, "job_id", 0);
	h->step_ms = client_i64(r, "step_ms", 0);
	h->since_ms = client_i64(r, "since_ms", since_ms);
	h->until_ms = client_i64(r, "until_ms", until_ms);
	decode_stages(r, h);
	*out = h;
	return 0;
}

static char *
decode_strdup(const cJSON *o, const char *name, int *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
	char *t;

	if (!cJSON_IsString(v))
		return NULL;
	if ((t = strdup(v->valuestring)) == NULL)
		*err = 1;
	return t;
}

static int
decode_report_row(const cJSON *o, struct sl_report_row *w)
{
	const cJSON *kb = cJSON_GetObjectItemCaseSensitive(o, "killed_by"), *it;
	int err = 0;

	w->user = decode_strdup(o, "user", &err);
	w->name = decode_strdup(o, "name", &err);
	w->uid = w->user != NULL ? client_i64(o, "uid", -1) : -1;
	w->runs = client_i64(o, "runs", 0);
	w->exited_0 = client_i64(o, "exited_0", 0);
	w->exited_nonzero = client_i64(o, "exited_nonzero", 0);
	w->failed = client_i64(o, "failed", 0);
	w->killed = client_i64(o, "killed", 0);
	w->cancelled = client_i64(o, "cancelled", 0);
	w->lost = client_i64(o, "lost", 0);
	w->ran = client_i64(o, "ran", 0);
	w->run_time_ms = client_i64(o, "run_time_ms", 0);
	w->run_time_median_ms = client_i64(o, "run_time_median_ms", -1);
	w->time_waited_ms = client_i64(o, "time_waited_ms", 0);
	w->footprint_peak_bytes = client_u64(o, "footprint_peak_bytes");
	w->swap_growth_peak_bytes = client_u64(o, "swap_growth_peak_bytes");
	if (cJSON_IsObject(kb) && cJSON_GetArraySize(kb) > 0) {
		w->killed_by = calloc((size_t)cJSON_GetArraySize(kb),
		                      sizeof *w->killed_by);
		if (w->killed_by == NULL)
			err = 1;
		cJSON_ArrayForEach(it, kb)
		{
			struct sl_report_kill *k;

			if (err || !cJSON_IsNumber(it))
				continue;
			k = &w->killed_by[w->nkilled_by];
			if ((k->reason = strdup(it->string)) == NULL) {
				err = 1;
				continue;
			}
			k->jobs = (int64_t)it->valuedouble;
			w->nkilled_by++;
		}
	}
	return err ? -ENOMEM : 0;
}

int
client_decode_report(const cJSON *r, struct sl_report **out)
{
	const cJSON *rows = cJSON_GetObjectItemCaseSensitive(r, "rows"), *it;
	struct sl_report *rep = calloc(1, sizeof *rep);
	int rc = 0;

	*out = NULL;
	if (rep == NULL)
		return -ENOMEM;
	client_str(r, "by", rep->by, sizeof rep->by);
	rep->since_ms = client_i64(r, "since_ms", 0);
	rep->until_ms = client_i64(r, "until_ms", 0);
	rep->oldest_ms = client_i64(r, "oldest_ms", -1);
	if (cJSON_IsArray(rows) && cJSON_GetArraySize(rows) > 0) {
		rep->rows =
		    calloc((size_t)cJSON_GetArraySize(rows), sizeof *rep->rows);
		if (rep->rows == NULL)
			rc = -ENOMEM;
		cJSON_ArrayForEach(it, rows)
		{
			if (rc != 0 || !cJSON_IsObject(it))
				continue;
			rc = decode_report_row(it, &rep->rows[rep->nrows++]);
		}
	}
	if (rc != 0) {
		sl_report_free(rep);
		return rc;
	}
	*out = rep;
	return 0;
}

void
sl_report_free(struct sl_report *r)
{
	size_t i, k;

	if (r == NULL)
		return;
	for (i = 0; i < r->nrows; i++) {
		for (k = 0; k < r->rows[i].nkilled_by; k++)
			free(r->rows[i].killed_by[k].reason);
		free(r->rows[i].killed_by);
		free(r->rows[i].user);
		free(r->rows[i].name);
	}
	free(r->rows);
	free(r);
}

void
sl_history_free(struct sl_history *h)
{
	size_t i;

	if (h == NULL)
		return;
	for (i = 0; h->stages != NULL && i < h->nbuckets; i++)
		free(h->stages[i]);
	free(h->stages);
	free(h->buckets);
	free(h);
}

void
sl_jobs_free(struct sl_job *jobs, size_t njobs)
{
	client_list_free(CLIENT_JOBS, jobs, njobs);
}

void
sl_events_free(struct sl_event *events, size_t nevents)
{
	client_list_free(CLIENT_EVENTS, events, nevents);
}
