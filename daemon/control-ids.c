/*
 * Job ids as a client writes them, and whole arrays: the one resolver of
 * job ids (an integer, "42", "A42", "A42_3"; control_resolve), the "id"
 * param of the job methods read through it (control_param_id, and
 * control_param_ref where a whole array may be named), and a whole array
 * answered (control_answer_array; its elements are checked by
 * control.c's control_element_owner).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "array-spec.h"
#include "control.h"
#include "jobs.h"
#include "proto.h"
#include "store.h"
#include "wire.h"

int
control_resolve(struct daemon *d, const cJSON *v, const char *what,
                int allow_array, int64_t *id, int64_t *array_id, int64_t **ids,
                size_t *n, char *cause, size_t causelen)
{
	int64_t aid, index, *el = NULL, *idx = NULL;
	int is_array, rc;
	size_t k, count = 0;

	*id = 0;
	*array_id = 0;
	*ids = NULL;
	*n = 0;
	if (cJSON_IsNumber(v)) {
		if (!isfinite(v->valuedouble) || v->valuedouble < 1 ||
		    v->valuedouble > 9007199254740992.0 ||
		    v->valuedouble != floor(v->valuedouble)) {
			snprintf(cause, causelen,
			         "invalid params: %s: a job id is an integer "
			         "from 1",
			         what);
			return PROTO_E_PARAMS;
		}
		*id = (int64_t)v->valuedouble;
		return 0;
	}
	if (!cJSON_IsString(v) ||
	    array_id_parse(v->valuestring, &aid, &is_array, &index) != 0) {
		snprintf(cause, causelen,
		         "invalid params: %s: '%.40s' is not a job id: give "
		         "42 (a job), A42 (an array) or A42_3 (its element of "
		         "index 3)",
		         what, cJSON_IsString(v) ? v->valuestring : "");
		return PROTO_E_PARAMS;
	}
	if (!is_array) {
		*id = aid;
		return 0;
	}
	if (index < 0 && !allow_array) {
		snprintf(cause, causelen,
		         "invalid params: %s: A%" PRId64 " is a whole array; "
		         "this takes one job: name an element (A%" PRId64
		         "_INDEX; show A%" PRId64 " lists them)",
		         what, aid, aid, aid);
		return PROTO_E_PARAMS;
	}
	if ((rc = store_array_elements(d->store, aid, &el, &idx, &count)) !=
	    0) {
		snprintf(cause, causelen,
		         "storage error reading array A%" PRId64 ": %s", aid,
		         strerror(-rc));
		return PROTO_E_STORAGE;
	}
	if (count == 0) {
		snprintf(cause, causelen, "no array A%" PRId64, aid);
		rc = PROTO_E_NOJOB;
		goto out;
	}
	if (index >= 0) {
		for (k = 0; k < count && idx[k] != index; k++)
			;
		if (k == count) {
			snprintf(cause, causelen,
			         "no job A%" PRId64 "_%" PRId64
			         ": array A%" PRId64 " has no index %" PRId64,
			         aid, index, aid, index);
			rc = PROTO_E_NOJOB;
			goto out;
		}
		*id = el[k];
		rc = 0;
		goto out;
	}
	*array_id = aid;
	*ids = el;
	*n = count;
	el = NULL;
	rc = 0;
out:
	free(el);
	free(idx);
	return rc;
}

int
control_param_ref(struct daemon *d, const cJSON *params, int64_t *id,
                  int64_t *array_id, int64_t **ids, size_t *n, char *cause,
                  size_t causelen)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(params, "id");

	*array_id = 0;
	*ids = NULL;
	*n = 0;
	if (!cJSON_IsString(v))
		return proto_param_int(params, "id", 1, 1, INT64_MAX, id, cause,
		                       causelen);
	return control_resolve(d, v, "id", 1, id, array_id, ids, n, cause,
	                       causelen);
}

int
control_param_id(struct daemon *d, const cJSON *params, int64_t *id,
                 char *cause, size_t causelen)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(params, "id");
	int64_t array_id, *ids;
	size_t n;

	if (!cJSON_IsString(v))
		return proto_param_int(params, "id", 1, 1, INT64_MAX, id, cause,
		                       causelen);
	return control_resolve(d, v, "id", 0, id, &array_id, &ids, &n, cause,
	                       causelen);
}

int
control_answer_array(struct daemon *d, const struct peer *p, int64_t array_id,
                     const int64_t *ids, size_t n, cJSON **result, char *cause,
                     size_t causelen)
{
	cJSON *jobs, *job;
	size_t i;
	int rc;

	*result = cJSON_CreateObject();
	proto_add_int(*result, "array_id", array_id);
	jobs = cJSON_AddArrayToObject(*result, "jobs");
	jobs_positions(d); /* once for all of them */
	for (i = 0; i < n; i++) {
		struct jobs_view v;

		/* As the lists have a job (command, not argv: the elements
		 * share one, which show of an element gives), so that an
		 * array of 1000 is not 1000 reads of its env. */
		if ((rc = jobs_get_lean(d, ids[i], &v, cause, causelen)) ==
		    PROTO_E_NOJOB)
			continue; /* pruned meanwhile */
		if (rc != 0) {
			cJSON_Delete(*result);
			*result = NULL;
			return rc;
		}
		job = wire_job_list(&v, p->uid);
		if (job != NULL && v.live && v.j->state == JOB_QUEUED &&
		    v.wait == ADMIT_WAIT_NONE)
			cJSON_ReplaceItemInObjectCaseSensitive(
			    job, "waiting_for", cJSON_CreateNull());
		jobs_view_free(&v);
		cJSON_AddItemToArray(jobs, job);
	}
	return 0;
}
