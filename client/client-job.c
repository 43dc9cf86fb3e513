/*
 * libstageload, a Job read by its members' names: sl_job_new, sl_job_at
 * and the sl_job_get_* accessors. The names a Job has are those
 * proto/job-fields.h shows in it; each accessor reads the Job as it came
 * (struct sl_job's obj), so a member the daemon adds needs a row in the
 * table and nothing here.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "client-internal.h"
#include "job-fields.h"
#include "stageload.h"

/* The Job's member names, from the table. */
#define JOB_NAME_J_NO(w)
#define JOB_NAME_J_INT(w) w,
#define JOB_NAME_J_BOOL(w) w,
#define JOB_NAME_J_NUM(w) w,
#define JOB_NAME_J_STR(w) w,
#define JOB_NAME_J_STRN(w) w,
#define JOB_NAME_J_STATE(w) w,
#define JOB_NAME_J_EXPECT(w) w,
#define JOB_NAME_J_IDS(w) w,
#define JOB_NAME_J_POS(w) w,
#define JOB_NAME_J_FN(w) w,
#define JOB_NAME(m, w, store, col, job, ...) JOB_NAME_##job(w)
static const char *const job_names[] = {JOB_FIELDS(JOB_NAME) NULL};

sl_job *
sl_job_new(void)
{
	return calloc(1, sizeof(struct sl_job));
}

void
sl_job_free(sl_job *j)
{
	sl_job_clear(j);
	free(j);
}

const sl_job *
sl_job_at(const sl_job *jobs, size_t i)
{
	return jobs != NULL ? &jobs[i] : NULL;
}

/* The member of that name: NULL with *rc -EINVAL when the Job has no such
 * name, -ENOENT when this one lacks it or it is null. */
static const cJSON *
job_member(const sl_job *j, const char *name, int *rc)
{
	const cJSON *v;
	size_t i;

	*rc = -EINVAL;
	if (j == NULL || name == NULL)
		return NULL;
	for (i = 0; job_names[i] != NULL; i++)
		if (strcmp(job_names[i], name) == 0)
			break;
	if (job_names[i] == NULL)
		return NULL;
	*rc = -ENOENT;
	v = cJSON_GetObjectItemCaseSensitive(j->obj, name);
	if (v == NULL || cJSON_IsNull(v))
		return NULL;
	*rc = 0;
	return v;
}

int
sl_job_get_int(const sl_job *j, const char *name, int64_t *out)
{
	int rc;
	const cJSON *v = job_member(j, name, &rc);

	if (v == NULL)
		return rc;
	if (cJSON_IsBool(v)) {
		*out = cJSON_IsTrue(v);
		return 0;
	}
	if (!cJSON_IsNumber(v))
		return -ENOENT;
	*out = (int64_t)v->valuedouble;
	return 0;
}

int
sl_job_get_num(const sl_job *j, const char *name, double *out)
{
	int rc;
	const cJSON *v = job_member(j, name, &rc);

	if (v == NULL)
		return rc;
	if (!cJSON_IsNumber(v))
		return -ENOENT;
	*out = v->valuedouble;
	return 0;
}

const char *
sl_job_get_str(const sl_job *j, const char *name)
{
	int rc;

	return cJSON_GetStringValue(job_member(j, name, &rc));
}

const char *
sl_job_get_strv(const sl_job *j, const char *name, size_t i)
{
	int rc;
	const cJSON *v = job_member(j, name, &rc);

	if (!cJSON_IsArray(v) || i >= (size_t)cJSON_GetArraySize(v))
		return NULL;
	return cJSON_GetStringValue(cJSON_GetArrayItem(v, (int)i));
}

char *
sl_job_get_json(const sl_job *j, const char *name)
{
	int rc;
	const cJSON *v = job_member(j, name, &rc);

	return v != NULL ? cJSON_PrintUnformatted(v) : NULL;
}
