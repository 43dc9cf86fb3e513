/*
 * The queue's own controls, as methods (PROTOCOL.md): submit's after,
 * after_any and held; hold and release. docs/jobs.md, "Dependencies and
 * holds", has the rules; jobs-deps.c applies them.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "control.h"
#include "jobs.h"
#include "proto.h"

/* At most this many jobs a job may start after. */
#define CONTROL_MAX_AFTER 64

int
control_submit_queue(struct daemon *d, const cJSON *params, struct job *j,
                     char *cause, size_t causelen)
{
	int64_t *after = NULL;
	size_t n = 0;
	int rc, any = 0, held = 0;

	if ((rc = proto_param_intv(params, "after", 0, CONTROL_MAX_AFTER, 1,
	                           INT64_MAX, &after, &n, cause, causelen)) <
	        0 ||
	    (rc = proto_param_bool(params, "after_any", 0, &any, cause,
	                           causelen)) < 0 ||
	    (rc = proto_param_bool(params, "held", 0, &held, cause, causelen)) <
	        0) {
		free(after);
		return rc;
	}
	j->after = after;
	j->nafter = (int)n;
	j->after_any = n > 0 && any;
	j->held = held;
	return jobs_after_check(d, j, cause, causelen);
}

static int
control_hold_set(struct daemon *d, const struct peer *p, const cJSON *params,
                 int held, cJSON **result, char *cause, size_t causelen)
{
	struct jobs_view v;
	int64_t id;
	int rc;

	if ((rc = proto_param_int(params, "id", 1, 1, INT64_MAX, &id, cause,
	                          causelen)) != 0)
		return rc;
	if ((rc = control_job_owner(d, p, id, &v, cause, causelen)) != 0)
		return rc;
	jobs_view_free(&v);
	if ((rc = jobs_hold(d, id, held, cause, causelen)) != 0)
		return rc;
	return control_answer_job(d, p, id, result, cause, causelen);
}

int
control_hold(struct daemon *d, const struct peer *p, const cJSON *req_id,
             const cJSON *params, cJSON **result, char *cause, size_t causelen)
{
	(void)req_id;
	return control_hold_set(d, p, params, 1, result, cause, causelen);
}

int
control_release(struct daemon *d, const struct peer *p, const cJSON *req_id,
                const cJSON *params, cJSON **result, char *cause,
                size_t causelen)
{
	(void)req_id;
	return control_hold_set(d, p, params, 0, result, cause, causelen);
}
