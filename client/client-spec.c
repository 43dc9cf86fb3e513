/*
 * libstageload, what to submit: sl_job_spec, opaque. It is submit's
 * params as they will be sent, and its setters take a parameter by its
 * protocol name, checked against proto/job-fields.h (a name submit takes,
 * with that type, within its range): a field the daemon learns later
 * needs no new function and changes no struct, so no ABI.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "client-internal.h"
#include "job-fields.h"
#include "array-spec.h"
#include "proto.h"
#include "stageload.h"

struct sl_job_spec {
	cJSON *params;
};

/* submit's parameters, from the table. */
struct spec_field {
	const char *name;
	enum proto_type type;
	double lo, hi;
};
#define SPEC_P_NO(w, lo, hi)
#define SPEC_P_INT(w, lo, hi) {w, PROTO_T_INT, (double)(lo), (double)(hi)},
#define SPEC_P_NUM(w, lo, hi) {w, PROTO_T_NUMBER, lo, hi},
#define SPEC_P_BOOL(w, lo, hi) {w, PROTO_T_BOOL, 0, 1},
#define SPEC_P_STRING(w, lo, hi) {w, PROTO_T_STRING, 0, 0},
#define SPEC_P_STRING_REQ(w, lo, hi) {w, PROTO_T_STRING, 0, 0},
#define SPEC_P_STRV(w, lo, hi) {w, PROTO_T_STRV, 0, 0},
#define SPEC_P_STRV_REQ(w, lo, hi) {w, PROTO_T_STRV, 0, 0},
#define SPEC_P_INTV(w, lo, hi) {w, PROTO_T_INTV, (double)(lo), (double)(hi)},
#define SPEC_FIELD(m, w, store, col, job, vis, submit, upd, lo, hi, ...)       \
	SPEC_##submit(w, lo, hi)
static const struct spec_field spec_fields[] = {JOB_FIELDS(SPEC_FIELD)};
#define NSPEC_FIELDS (sizeof spec_fields / sizeof spec_fields[0])

static const struct spec_field *
spec_field(const char *name, enum proto_type type)
{
	size_t i;

	if (name == NULL)
		return NULL;
	for (i = 0; i < NSPEC_FIELDS; i++)
		if (strcmp(spec_fields[i].name, name) == 0)
			return spec_fields[i].type == type ? &spec_fields[i]
			                                   : NULL;
	return NULL;
}

sl_job_spec *
sl_job_spec_new(void)
{
	sl_job_spec *s = calloc(1, sizeof *s);

	if (s == NULL)
		return NULL;
	if ((s->params = cJSON_CreateObject()) == NULL) {
		free(s);
		return NULL;
	}
	return s;
}

void
sl_job_spec_free(sl_job_spec *spec)
{
	if (spec == NULL)
		return;
	cJSON_Delete(spec->params);
	free(spec);
}

/* Replace name's value with v (NULL: unset); v is consumed. */
static int
spec_put(sl_job_spec *spec, const char *name, cJSON *v, int unset)
{
	cJSON_DeleteItemFromObjectCaseSensitive(spec->params, name);
	if (unset)
		return 0;
	if (v == NULL)
		return -ENOMEM;
	if (!cJSON_AddItemToObject(spec->params, name, v)) {
		cJSON_Delete(v);
		return -ENOMEM;
	}
	return 0;
}

int
sl_job_spec_set_int(sl_job_spec *spec, const char *name, int64_t v)
{
	const struct spec_field *f = spec_field(name, PROTO_T_INT);

	if (f == NULL)
		return -EINVAL;
	if ((double)v < f->lo || (double)v > f->hi)
		return -ERANGE;
	return spec_put(spec, name, proto_int_create(v), 0);
}

int
sl_job_spec_set_num(sl_job_spec *spec, const char *name, double v)
{
	const struct spec_field *f = spec_field(name, PROTO_T_NUMBER);

	if (f == NULL)
		return -EINVAL;
	if (!(v >= f->lo && v <= f->hi))
		return -ERANGE;
	return spec_put(spec, name, cJSON_CreateNumber(v), 0);
}

int
sl_job_spec_set_bool(sl_job_spec *spec, const char *name, int v)
{
	if (spec_field(name, PROTO_T_BOOL) == NULL)
		return -EINVAL;
	return spec_put(spec, name, cJSON_CreateBool(v != 0), 0);
}

int
sl_job_spec_set_str(sl_job_spec *spec, const char *name, const char *v)
{
	if (spec_field(name, PROTO_T_STRING) == NULL)
		return -EINVAL;
	return spec_put(spec, name, v != NULL ? cJSON_CreateString(v) : NULL,
	                v == NULL);
}

int
sl_job_spec_set_strv(sl_job_spec *spec, const char *name, const char *const *v)
{
	cJSON *a;
	size_t i;

	if (spec_field(name, PROTO_T_STRV) == NULL)
		return -EINVAL;
	if (v == NULL)
		return spec_put(spec, name, NULL, 1);
	if ((a = cJSON_CreateArray()) == NULL)
		return -ENOMEM;
	for (i = 0; v[i] != NULL; i++) {
		cJSON *s = cJSON_CreateString(v[i]);

		if (s == NULL || !cJSON_AddItemToArray(a, s)) {
			cJSON_Delete(s);
			cJSON_Delete(a);
			return -ENOMEM;
		}
	}
	return spec_put(spec, name, a, 0);
}

int
sl_job_spec_set_ids(sl_job_spec *spec, const char *name, const int64_t *ids,
                    size_t n)
{
	const struct spec_field *f = spec_field(name, PROTO_T_INTV);
	cJSON *a;
	size_t i;

	if (f == NULL || (n > 0 && ids == NULL))
		return -EINVAL;
	for (i = 0; i < n; i++)
		if ((double)ids[i] < f->lo || (double)ids[i] > f->hi)
			return -ERANGE;
	if (n == 0)
		return spec_put(spec, name, NULL, 1);
	if ((a = cJSON_CreateArray()) == NULL)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		cJSON *id = proto_int_create(ids[i]);

		if (id == NULL || !cJSON_AddItemToArray(a, id)) {
			cJSON_Delete(id);
			cJSON_Delete(a);
			return -ENOMEM;
		}
	}
	return spec_put(spec, name, a, 0);
}

int
sl_job_spec_set_refs(sl_job_spec *spec, const char *name,
                     const char *const *refs, size_t n)
{
	const struct spec_field *f = spec_field(name, PROTO_T_INTV);
	int64_t id, index;
	int is_array;
	cJSON *a, *item;
	size_t i;

	if (f == NULL || (n > 0 && refs == NULL))
		return -EINVAL;
	for (i = 0; i < n; i++)
		if (refs[i] == NULL ||
		    array_id_parse(refs[i], &id, &is_array, &index) != 0)
			return -EINVAL;
	if (n == 0)
		return spec_put(spec, name, NULL, 1);
	if ((a = cJSON_CreateArray()) == NULL)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		array_id_parse(refs[i], &id, &is_array, &index);
		item = is_array ? cJSON_CreateString(refs[i])
		                : proto_int_create(id);
		if (item == NULL || !cJSON_AddItemToArray(a, item)) {
			cJSON_Delete(item);
			cJSON_Delete(a);
			return -ENOMEM;
		}
	}
	return spec_put(spec, name, a, 0);
}

/* A set member of that name, or NULL. */
static const cJSON *
spec_get(const sl_job_spec *spec, const char *name)
{
	return cJSON_GetObjectItemCaseSensitive(spec->params, name);
}

int
sl_job_spec_get_int(const sl_job_spec *spec, const char *name, int64_t *out)
{
	const cJSON *v = spec_get(spec, name);

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
sl_job_spec_get_num(const sl_job_spec *spec, const char *name, double *out)
{
	const cJSON *v = spec_get(spec, name);

	if (!cJSON_IsNumber(v))
		return -ENOENT;
	*out = v->valuedouble;
	return 0;
}

const char *
sl_job_spec_get_str(const sl_job_spec *spec, const char *name)
{
	return cJSON_GetStringValue(spec_get(spec, name));
}

const char *
sl_job_spec_get_strv(const sl_job_spec *spec, const char *name, size_t i)
{
	const cJSON *a = spec_get(spec, name);

	if (!cJSON_IsArray(a) || i >= (size_t)cJSON_GetArraySize(a))
		return NULL;
	return cJSON_GetStringValue(cJSON_GetArrayItem(a, (int)i));
}

/* update's parameters, from the table. */
#define SPEC_UPD_0(w)
#define SPEC_UPD_1(w) w,
#define SPEC_UPD(m, w, store, col, job, vis, submit, upd, ...) SPEC_UPD_##upd(w)
static const char *const update_names[] = {JOB_FIELDS(SPEC_UPD) NULL};

const char *
client_spec_not_update(const sl_job_spec *spec)
{
	const cJSON *it;
	size_t i;

	cJSON_ArrayForEach(it, spec->params)
	{
		for (i = 0; update_names[i] != NULL; i++)
			if (strcmp(update_names[i], it->string) == 0)
				break;
		if (update_names[i] == NULL)
			return it->string;
	}
	return NULL;
}

cJSON *
client_spec_params(const sl_job_spec *spec)
{
	return cJSON_Duplicate(spec->params, 1);
}
