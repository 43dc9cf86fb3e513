/*
 * Job ids as a client writes them, and whole arrays: the one resolver of
 * job ids (an integer, "42", "A42", "A42_3"; control_resolve), the "id"
 * param of the job methods read through it (control_param_id, and
 * control_param_ref where a whole array may be named), and a whole array
 * shown, cancelled, held or released a slice at a time (control_array_start).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <uv.h>

#include "admit.h"
#include "answers.h"
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

/*
 * A whole array's action and answer, a slice of the loop's time at a time
 * (answers.c): each element's cancel or hold is a commit, and an array has
 * up to max_queued_per_uid of them. First the action on every element it
 * applies to (nothing is written yet, so a failure is the client's error,
 * saying how many were done), then {"array_id": A, "jobs": [each element's
 * Job, as the lists have it]}.
 */
struct array_walk {
	struct daemon *d;
	int64_t array_id, *ids;
	size_t n, i, done, written;
	enum control_array_act act;
	int acting, answering; /* the phases: the action, then the answer */
	int frozen;            /* jobs_array_freeze while it cancels or holds */
	uid_t uid;
	char who[64];
};

static void
array_walk_free(void *state)
{
	struct array_walk *w = state;

	if (w->frozen)
		jobs_array_thaw(w->d, w->array_id);
	free(w->ids);
	free(w);
}

/* The action on one element: 1 done, 0 not for it (ended, not queued,
 * pruned), else a PROTO_E_* code. */
static int
array_act_one(struct daemon *d, struct array_walk *w, int64_t id, char *cause,
              size_t causelen)
{
	struct jobs_view v;
	int rc, live, queued;

	if ((rc = jobs_get_lean(d, id, &v, cause, causelen)) == PROTO_E_NOJOB)
		return 0;
	if (rc != 0)
		return rc;
	live = v.live && !v.terminating;
	queued = v.live && v.j->state == JOB_QUEUED;
	jobs_view_free(&v);
	if (w->act == CONTROL_ARRAY_CANCEL && live)
		rc = jobs_cancel(d, id, w->who, cause, causelen);
	else if (w->act != CONTROL_ARRAY_CANCEL && queued)
		rc = jobs_hold(d, id, w->act == CONTROL_ARRAY_HOLD, cause,
		               causelen);
	else
		return 0;
	/* one that ended meanwhile is as it is */
	return rc == 0 ? 1 : rc == PROTO_E_STATE ? 0 : rc;
}

/* An element's Job as the lists have it (command, not argv: the elements
 * share one, which show of an element gives), so that an array of 1000 is
 * not 1000 reads of its env; NULL when it was pruned meanwhile. */
static cJSON *
array_element_json(struct daemon *d, uid_t uid, int64_t id)
{
	struct jobs_view v;
	char cause[128];
	cJSON *job;

	if (jobs_get_lean(d, id, &v, cause, sizeof cause) != 0)
		return NULL;
	job = wire_job_list(&v, uid);
	if (job != NULL && v.live && v.j->state == JOB_QUEUED &&
	    v.wait == ADMIT_WAIT_NONE)
		cJSON_ReplaceItemInObjectCaseSensitive(job, "waiting_for",
		                                       cJSON_CreateNull());
	jobs_view_free(&v);
	return job;
}

static int
array_walk_fill(struct daemon *d, void *state, struct answers_buf *out,
                char *cause, size_t causelen)
{
	struct array_walk *w = state;
	uint64_t t0 = uv_hrtime();
	char why[256], head[64];
	cJSON *job;
	int rc = 0;

	for (; w->acting && w->i < w->n; w->i++) {
		if (uv_hrtime() - t0 > ANSWERS_SLICE_NS)
			return 1;
		if ((rc = array_act_one(d, w, w->ids[w->i], why, sizeof why)) <
		    0) {
			snprintf(
			    cause, causelen,
			    "%s (%zu of the array's %zu elements were done "
			    "before it)",
			    why, w->done, w->n);
			return rc;
		}
		w->done += (size_t)rc;
	}
	if (w->frozen) {
		w->frozen = 0;
		jobs_array_thaw(d, w->array_id);
	}
	if (w->acting || !w->answering) {
		w->acting = 0;
		w->answering = 1;
		w->i = 0;
		jobs_positions(d); /* once for all of them */
		snprintf(head, sizeof head,
		         "{\"array_id\":%" PRId64 ",\"jobs\":[", w->array_id);
		rc = answers_append(out, head, strlen(head));
	}
	for (; w->i < w->n && rc == 0; w->i++) {
		if (uv_hrtime() - t0 > ANSWERS_SLICE_NS)
			return 1;
		if ((job = array_element_json(d, w->uid, w->ids[w->i])) == NULL)
			continue;
		if (w->written++ > 0)
			rc = answers_append(out, ",", 1);
		if (rc == 0)
			rc = answers_append_json(out, job);
		else
			cJSON_Delete(job);
	}
	if (rc == 0)
		rc = answers_append(out, "]}", 2);
	if (rc != 0) {
		snprintf(cause, causelen, "out of memory");
		return PROTO_E_INTERNAL;
	}
	return 0;
}

static const struct answers_ops array_walk_ops = {array_walk_fill,
                                                  array_walk_free};

int
control_array_start(struct daemon *d, const struct peer *p, const cJSON *req_id,
                    int64_t array_id, int64_t *ids, size_t n,
                    enum control_array_act act, char *cause, size_t causelen)
{
	struct array_walk *w;
	struct jobs_view v;
	int rc;

	/* An array is one user's: its first element says whose. */
	if (act != CONTROL_ARRAY_SHOW && n > 0) {
		if ((rc = control_element_owner(d, p, ids[0], &v, cause,
		                                causelen)) != 0) {
			free(ids);
			return rc;
		}
		jobs_view_free(&v);
	}
	if ((w = calloc(1, sizeof *w)) == NULL) {
		free(ids);
		snprintf(cause, causelen, "out of memory");
		return PROTO_E_INTERNAL;
	}
	w->d = d;
	w->array_id = array_id;
	w->ids = ids;
	w->n = n;
	w->act = act;
	w->acting = act != CONTROL_ARRAY_SHOW;
	w->uid = p->uid;
	wire_user_name(p->uid, w->who, sizeof w->who);
	/* Between slices, none of its elements starts only to be cancelled
	 * or held by the next; a release lets each go as it comes. */
	if (act == CONTROL_ARRAY_CANCEL || act == CONTROL_ARRAY_HOLD) {
		if (jobs_array_freeze(d, array_id) != 0) {
			array_walk_free(w);
			snprintf(cause, causelen, "out of memory");
			return PROTO_E_INTERNAL;
		}
		w->frozen = 1;
	}
	if ((rc = answers_start(d, p, req_id, &array_walk_ops, w, cause,
	                        causelen)) != 0)
		return rc;
	return CONTROL_DEFERRED;
}
