/*
 * The public objects: each answer of the web program is built from these
 * allow-lists of members, never from the daemon's objects as they come.
 * A member the daemon adds later, or one it shows this program because
 * it runs as root (argv, command, cwd, env, end_detail, an event's
 * detail), is left out until it is named here.
 */
#include <stdlib.h>
#include <string.h>

#include "job-fields.h"
#include "web.h"

/* The Job's members proto/job-fields.h marks W_YES, in its order: scalars
 * copied as they come. after, waiting_on, attempts and kill (W_SPECIAL) are
 * copied below by their own members; W_NO is never shown. tests/test_fields.c
 * holds the literal list of what may come out. */
#define WEB_W_YES(w) w,
#define WEB_W_SPECIAL(w)
#define WEB_W_NO(w)
#define WEB_FIELD(m, w, store, col, job, vis, submit, upd, lo, hi, unit, web)  \
	WEB_##web(w)
static const char *const job_members[] = {JOB_FIELDS(WEB_FIELD) NULL};

/* The numbers of a kill (PROTOCOL.md, Job: kill): a breach's, a time
 * limit's. */
static const char *const kill_members[] = {
    "at_ms",
    "swap_budget_bytes",
    "swap_growth_bytes",
    "swap_used_bytes",
    "footprint_bytes",
    "free_pct",
    "pressure",
    "attempt",
    "limit",
    "limit_ms",
    "ran_ms",
    NULL,
};

/* Each attempt's record (PROTOCOL.md, Job: attempts). */
static const char *const attempt_members[] = {
    "attempt",
    "queued_at_ms",
    "admitted_at_ms",
    "started_at_ms",
    "ended_at_ms",
    "end_reason",
    NULL,
};

static const char *const sample_members[] = {
    "sampled_at_ms",
    "total_bytes",
    "available_bytes",
    "free_pct",
    "swap_total_bytes",
    "swap_used_bytes",
    "pressure",
    "psi_some_avg10",
    "compressed_bytes",
    "wired_bytes",
    NULL,
};

static const char *const info_members[] = {
    "daemon_version", "version",       "os",   "interval_ms", "started_at_ms",
    "db_bytes",       "storage_error", "jobs", NULL,
};

static const char *const event_members[] = {
    "id", "ts_ms", "job_id", "user", "kind", NULL,
};

/* Copy the named members that are scalars (numbers, strings, booleans,
 * null): an object or array in their place is not what the protocol
 * says, and is dropped. */
static void
copy_scalars(cJSON *to, const cJSON *from, const char *const *names)
{
	for (; *names != NULL; names++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(from, *names);
		if (v == NULL || cJSON_IsObject(v) || cJSON_IsArray(v))
			continue;
		cJSON_AddItemToObject(to, *names, cJSON_Duplicate(v, 0));
	}
}

cJSON *
web_public_job(const cJSON *job)
{
	cJSON *o = cJSON_CreateObject();
	const cJSON *k;

	if (o == NULL)
		return NULL;
	copy_scalars(o, job, job_members);
	/* The ids a job waits for (public, as the jobs are): numbers only. */
	k = cJSON_GetObjectItemCaseSensitive(job, "after");
	if (cJSON_IsArray(k)) {
		cJSON *after = cJSON_AddArrayToObject(o, "after"), *id;

		cJSON_ArrayForEach(id, k)
		{
			if (after != NULL && cJSON_IsNumber(id))
				cJSON_AddItemToArray(after,
				                     cJSON_Duplicate(id, 0));
		}
	}
	/* The jobs a queued job waits behind: ids, users and names, public
	 * as those jobs are. */
	k = cJSON_GetObjectItemCaseSensitive(job, "waiting_on");
	if (cJSON_IsArray(k)) {
		static const char *const on_members[] = {"id", "user", "name",
		                                         NULL};
		cJSON *on = cJSON_AddArrayToObject(o, "waiting_on"), *w, *x;

		cJSON_ArrayForEach(w, k)
		{
			if (on == NULL || !cJSON_IsObject(w) ||
			    (x = cJSON_CreateObject()) == NULL)
				continue;
			copy_scalars(x, w, on_members);
			cJSON_AddItemToArray(on, x);
		}
	}
	k = cJSON_GetObjectItemCaseSensitive(job, "attempts");
	if (cJSON_IsArray(k)) {
		cJSON *attempts = cJSON_AddArrayToObject(o, "attempts"), *e;

		cJSON_ArrayForEach(e, k)
		{
			cJSON *eo;

			if (attempts == NULL || !cJSON_IsObject(e) ||
			    (eo = cJSON_CreateObject()) == NULL)
				continue;
			copy_scalars(eo, e, attempt_members);
			cJSON_AddItemToArray(attempts, eo);
		}
	}
	k = cJSON_GetObjectItemCaseSensitive(job, "kill");
	if (cJSON_IsObject(k)) {
		cJSON *ko = cJSON_AddObjectToObject(o, "kill");
		if (ko != NULL)
			copy_scalars(ko, k, kill_members);
	} else
		cJSON_AddNullToObject(o, "kill");
	return o;
}

cJSON *
web_public_event(const cJSON *ev)
{
	cJSON *o = cJSON_CreateObject();
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(ev, "detail");
	const char *kind = web_str(ev, "kind");
	const char *stage = NULL;

	if (o == NULL)
		return NULL;
	copy_scalars(o, ev, event_members);
	/* A stage event's detail is {"name"} (PROTOCOL.md, stage): that name
	 * is public (it is drawn on the lanes); the rest of a detail, and
	 * the numbers of a stage_end, stay out. */
	if (kind != NULL && strcmp(kind, "stage") == 0 && cJSON_IsObject(d))
		stage = web_str(d, "name");
	if (stage != NULL)
		cJSON_AddStringToObject(o, "stage", stage);
	return o;
}

cJSON *
web_public_info(const cJSON *info)
{
	cJSON *o = cJSON_CreateObject(), *to;
	const cJSON *v;

	if (o == NULL)
		return NULL;
	copy_scalars(o, info, info_members);
	v = cJSON_GetObjectItemCaseSensitive(info, "jobs");
	if (cJSON_IsObject(v))
		cJSON_AddItemToObject(o, "jobs", cJSON_Duplicate(v, 1));
	v = cJSON_GetObjectItemCaseSensitive(info, "sample");
	if (cJSON_IsObject(v) &&
	    (to = cJSON_AddObjectToObject(o, "sample")) != NULL)
		copy_scalars(to, v, sample_members);
	else
		cJSON_AddNullToObject(o, "sample");
	v = cJSON_GetObjectItemCaseSensitive(info, "waiting_for");
	if (cJSON_IsObject(v))
		cJSON_AddItemToObject(o, "waiting_for", cJSON_Duplicate(v, 1));
	/* Counts: public numbers (jobs ended by state and reason). */
	v = cJSON_GetObjectItemCaseSensitive(info, "counters");
	if (cJSON_IsObject(v))
		cJSON_AddItemToObject(o, "counters", cJSON_Duplicate(v, 1));
	return o;
}

char *
web_json_print(const cJSON *o)
{
	char *t = cJSON_PrintUnformatted(o), *out, *q;
	const char *p;
	size_t n = 0;

	if (t == NULL)
		return NULL;
	for (p = t; *p != '\0'; p++)
		n += (*p == '<' || *p == '>' || *p == '&') ? 6 : 1;
	if ((out = malloc(n + 1)) == NULL) {
		cJSON_free(t);
		return NULL;
	}
	/* These three only occur inside strings in JSON text, where \u
	 * escapes mean the same. */
	for (p = t, q = out; *p != '\0'; p++) {
		if (*p == '<' || *p == '>' || *p == '&') {
			static const char hex[] = "0123456789abcdef";
			*q++ = '\\';
			*q++ = 'u';
			*q++ = '0';
			*q++ = '0';
			*q++ = hex[(unsigned char)*p >> 4];
			*q++ = hex[(unsigned char)*p & 15];
		} else
			*q++ = *p;
	}
	*q = '\0';
	cJSON_free(t);
	return out;
}

double
web_num(const cJSON *o, const char *name, double def)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	return cJSON_IsNumber(v) ? v->valuedouble : def;
}

const char *
web_str(const cJSON *o, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}
