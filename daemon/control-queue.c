/*
 * The queue's own controls, as methods (PROTOCOL.md): submit's after,
 * group and on_end; hold and release; resubmit and update. docs/jobs.md,
 * "Dependencies and holds", has the rules; jobs-deps.c applies them.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "array-spec.h"
#include "control.h"
#include "daemon.h"
#include "jobs.h"
#include "proto.h"
#include "units.h"
#include "wire.h"

/* At most this many items in after, and this many jobs once its arrays
 * are counted by element: each is checked at submit and looked at by
 * every pass of the queue while the job waits. */
#define CONTROL_MAX_AFTER 64
#define CONTROL_MAX_AFTER_JOBS 1024
/* The longest on-end command. */
#define CONTROL_MAX_ON_END 4096

int
control_wait_free_bytes_check(struct daemon *d, int privileged, uint64_t bytes,
                              char *cause, size_t causelen)
{
	uint64_t total = d->have_last ? d->last.total_bytes : 0;
	char t[16];

	/* Before the first sample the total is not known: accepted. */
	if (bytes == 0 || total == 0)
		return 0;
	if (units_format_size(total, t, sizeof t) == NULL)
		snprintf(t, sizeof t, "?");
	if (bytes > total) {
		snprintf(cause, causelen,
		         "wait_free_bytes %" PRIu64 " is above the machine's "
		         "total memory (%" PRIu64 " bytes, %s): it could never "
		         "be free",
		         bytes, total, t);
		return PROTO_E_PARAMS;
	}
	if (!privileged &&
	    (double)bytes * 100.0 / (double)total > d->cfg.max_wait_free_pct) {
		snprintf(cause, causelen,
		         "wait_free_bytes %" PRIu64 " is above the daemon's "
		         "max_wait_free (%g %% of %s)",
		         bytes, d->cfg.max_wait_free_pct, t);
		return PROTO_E_PARAMS;
	}
	return 0;
}

/* Append n ids to *v (length *len, room *cap). */
static int
ids_append(int64_t **v, size_t *len, size_t *cap, const int64_t *ids, size_t n)
{
	int64_t *nv;

	if (*len + n > *cap) {
		size_t c = *cap ? *cap : 8;

		while (c < *len + n)
			c *= 2;
		if ((nv = realloc(*v, c * sizeof *nv)) == NULL)
			return -1;
		*v = nv;
		*cap = c;
	}
	memcpy(*v + *len, ids, n * sizeof *ids);
	*len += n;
	return 0;
}

/* submit's after: at most CONTROL_MAX_AFTER job ids, each an integer or
 * a string the resolver reads ("42", "A42_3"; "A42": every element of the
 * array), so *out may hold more ids than were given. */
static int
after_read(struct daemon *d, const cJSON *params, int64_t **out, size_t *n,
           char *cause, size_t causelen)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(params, "after"), *it;
	int64_t *vec = NULL, id, array_id, *ids;
	size_t len = 0, cap = 0, count = 0, k;
	int rc;

	*out = NULL;
	*n = 0;
	if (v == NULL || cJSON_IsNull(v))
		return 0;
	cJSON_ArrayForEach(it, v) count++;
	if (count > CONTROL_MAX_AFTER) {
		snprintf(cause, causelen,
		         "invalid params: 'after' has more than %d items",
		         CONTROL_MAX_AFTER);
		return PROTO_E_PARAMS;
	}
	cJSON_ArrayForEach(it, v)
	{
		double x = it->valuedouble;

		if (cJSON_IsNumber(it)) {
			if (!isfinite(x) || x < 1 || x > PROTO_MAX_SAFE_INT ||
			    x != floor(x)) {
				free(vec);
				snprintf(cause, causelen,
				         "invalid params: 'after' must be an "
				         "array of job ids: integers from 1, "
				         "or \"A42\", \"A42_3\"");
				return PROTO_E_PARAMS;
			}
			id = (int64_t)x;
			ids = NULL;
			k = 0;
		} else if ((rc = control_resolve(d, it, "after", 1, &id,
		                                 &array_id, &ids, &k, cause,
		                                 causelen)) != 0) {
			free(vec);
			return rc;
		}
		if ((ids != NULL ? k : 1) > CONTROL_MAX_AFTER_JOBS - len) {
			free(ids);
			free(vec);
			snprintf(cause, causelen,
			         "invalid params: 'after' names more than %d "
			         "jobs (an array counts each element)",
			         CONTROL_MAX_AFTER_JOBS);
			return PROTO_E_PARAMS;
		}
		rc = ids != NULL ? ids_append(&vec, &len, &cap, ids, k)
		                 : ids_append(&vec, &len, &cap, &id, 1);
		free(ids);
		if (rc != 0) {
			free(vec);
			snprintf(cause, causelen, "out of memory");
			return PROTO_E_INTERNAL;
		}
	}
	*out = vec;
	*n = len;
	return 0;
}

int
control_submit_queue(struct daemon *d, const cJSON *params, struct job *j,
                     char *cause, size_t causelen)
{
	int64_t *after = NULL;
	const char *group = NULL, *on_end = NULL;
	size_t n = 0;
	int rc;

	if ((rc = after_read(d, params, &after, &n, cause, causelen)) < 0 ||
	    (rc = proto_param_string(params, "group", 0, CONFIG_GROUP_NAME_MAX,
	                             &group, cause, causelen)) < 0 ||
	    (rc = control_wait_free_bytes_check(
	         d, j->privileged, j->wait_free_bytes, cause, causelen)) < 0 ||
	    (rc = proto_param_string(params, "on_end", 0, CONTROL_MAX_ON_END,
	                             &on_end, cause, causelen)) < 0) {
		free(after);
		return rc;
	}
	/* An empty list names no job: refused like one past 64 rather than
	 * read as "none", so a client that meant to list some learns it
	 * sent none (PROTOCOL.md, submit). */
	if (n == 0 &&
	    cJSON_GetObjectItemCaseSensitive(params, "after") != NULL) {
		snprintf(
		    cause, causelen,
		    "invalid params: 'after' must list 1-%d job ids (leave "
		    "it out for none)",
		    CONTROL_MAX_AFTER);
		return PROTO_E_PARAMS;
	}
	if (group != NULL && !config_group_name_ok(group)) {
		free(after);
		snprintf(cause, causelen,
		         "invalid params: group: 1-%d letters, digits, _ and -",
		         CONFIG_GROUP_NAME_MAX);
		return PROTO_E_PARAMS;
	}
	if (on_end != NULL && (on_end[0] == '\0' || j->attached)) {
		free(after);
		snprintf(cause, causelen, "invalid params: on_end: %s",
		         j->attached ? "only for a detached job (an attached "
		                       "job's client is there when it ends)"
		                     : "may not be empty");
		return PROTO_E_PARAMS;
	}
	if (on_end != NULL && (j->on_end = strdup(on_end)) == NULL) {
		free(after);
		snprintf(cause, causelen, "out of memory");
		return PROTO_E_INTERNAL;
	}
	if (group != NULL && (j->group = strdup(group)) == NULL) {
		free(after);
		snprintf(cause, causelen, "out of memory");
		return PROTO_E_INTERNAL;
	}
	j->after = after;
	j->nafter = (int)n;
	return jobs_after_check(d, j, cause, causelen);
}

static int
control_hold_set(struct daemon *d, const struct peer *p, const cJSON *req_id,
                 const cJSON *params, int held, cJSON **result, char *cause,
                 size_t causelen)
{
	struct jobs_view v;
	int64_t id, array_id, *ids;
	size_t n;
	int rc;

	if ((rc = control_param_ref(d, params, &id, &array_id, &ids, &n, cause,
	                            causelen)) != 0)
		return rc;
	if (ids != NULL) /* its queued elements; the rest as they are */
		return control_array_start(d, p, req_id, array_id, ids, n,
		                           held ? CONTROL_ARRAY_HOLD
		                                : CONTROL_ARRAY_RELEASE,
		                           cause, causelen);
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
	return control_hold_set(d, p, req_id, params, 1, result, cause,
	                        causelen);
}

int
control_release(struct daemon *d, const struct peer *p, const cJSON *req_id,
                const cJSON *params, cJSON **result, char *cause,
                size_t causelen)
{
	return control_hold_set(d, p, req_id, params, 0, result, cause,
	                        causelen);
}

/* The numbers and flags submit takes (proto/job-fields.h), as old had
 * them; strings, arrays and the rules below are resubmit_copy's. */
#define RESUBMIT_P_NO(m)
#define RESUBMIT_P_STRING(m)
#define RESUBMIT_P_STRING_REQ(m)
#define RESUBMIT_P_STRV(m)
#define RESUBMIT_P_STRV_REQ(m)
#define RESUBMIT_P_INTV(m)
#define RESUBMIT_P_INT(m) j->m = old->m;
#define RESUBMIT_P_NUM(m) j->m = old->m;
#define RESUBMIT_P_BOOL(m) j->m = old->m;
#define RESUBMIT_FIELD(m, w, store, col, job, vis, submit, ...)                \
	RESUBMIT_##submit(m)

/* A new job as old was submitted (argv, cwd, env, options), by peer p:
 * its credentials are the connection's now. NULL when out of memory. */
static struct job *
resubmit_copy(const struct peer *p, const struct job *old,
              const struct job *args, int privileged)
{
	struct job *j;

	if ((j = control_job_new(p, old->name != NULL ? old->name : "",
	                         old->cwd != NULL ? old->cwd : "/",
	                         (const char *const *)args->argv,
	                         (const char *const *)args->env)) == NULL)
		return NULL;
	JOB_FIELDS(RESUBMIT_FIELD)
	/* An array's element comes back as a job of its own, running what
	 * the element ran: its {} are its index now. */
	if (old->array_id > 0 && j->argv != NULL) {
		char **w;

		for (w = j->argv; *w != NULL; w++) {
			char *sub = array_subst_word(*w, old->array_index);

			if (sub == NULL)
				goto nomem;
			free(*w);
			*w = sub;
		}
	}
	/* Not held: the hold was on the old job, as its place was. It starts
	 * after nothing (jobs_after_check, at resubmit, clears the rest). */
	j->held = 0;
	/* Nor does it wait for the old job's --begin: it is queued now. */
	j->begin_ms = 0;
	/* A given expect goes with it; a learned one is learned afresh
	 * (jobs_learn_expect, at submit). */
	j->name_given = old->name_given;
	if (old->expect_source == JOB_EXPECT_GIVEN)
		j->expect_source = JOB_EXPECT_GIVEN;
	else
		j->expect_bytes = 0;
	j->privileged = privileged;
	if (old->group != NULL && (j->group = strdup(old->group)) == NULL)
		goto nomem;
	if (old->on_end != NULL && (j->on_end = strdup(old->on_end)) == NULL)
		goto nomem;
	return j;
nomem:
	job_free(j);
	return NULL;
}

int
control_resubmit(struct daemon *d, const struct peer *p, const cJSON *req_id,
                 const cJSON *params, cJSON **result, char *cause,
                 size_t causelen)
{
	struct jobs_view v;
	const struct job *args;
	struct job *j;
	int64_t id, new_id;
	long position;
	size_t nq;
	int rc, privileged;

	(void)req_id;
	if ((rc = control_param_id(d, params, &id, cause, causelen)) != 0)
		return rc;
	if ((rc = jobs_get(d, id, &v, cause, causelen)) != 0)
		return rc;
	/* Its owner's alone, root's too: a job runs as whoever submits it,
	 * and another user's command is not root's to run as root. */
	if (v.j->uid != p->uid) {
		jobs_view_free(&v);
		snprintf(cause, causelen,
		         "job %" PRId64 " is not yours: only its owner may "
		         "resubmit it",
		         id);
		return PROTO_E_PERM;
	}
	if (v.j->attached) {
		jobs_view_free(&v);
		snprintf(cause, causelen,
		         "job %" PRId64
		         " was attached (run, guard): its client "
		         "ran it, so the daemon cannot run it again",
		         id);
		return PROTO_E_STATE;
	}
	if ((rc = jobs_view_args(d, &v, cause, causelen)) != 0) {
		jobs_view_free(&v);
		return rc;
	}
	args = v.args != NULL ? v.args : v.j;
	if (args->argv == NULL || args->env == NULL) {
		jobs_view_free(&v);
		snprintf(cause, causelen,
		         "job %" PRId64 ": its command is not recorded", id);
		return PROTO_E_STATE;
	}
	/* What submit checks, judged now and from this connection. */
	privileged = jobs_privileged(d, p->uid, p->gid, p->groups, p->ngroups);
	if ((rc = control_submit_fair(
	         d, privileged, v.j->priority, v.j->wait_free_pct,
	         (int64_t)v.j->expect_bytes, cause, causelen)) != 0 ||
	    (rc = control_wait_free_bytes_check(
	         d, privileged, v.j->wait_free_bytes, cause, causelen)) != 0 ||
	    (rc = control_submit_count(d, p, cause, causelen)) != 0) {
		jobs_view_free(&v);
		return rc;
	}
	j = resubmit_copy(p, v.j, args, privileged);
	jobs_view_free(&v);
	if (j == NULL) {
		snprintf(cause, causelen, "out of memory");
		return PROTO_E_INTERNAL;
	}
	if ((rc = jobs_after_check(d, j, cause, causelen)) != 0) {
		job_free(j);
		return rc;
	}
	if ((rc = jobs_submit(d, j, p->client_id, &new_id, &position, &nq,
	                      cause, causelen)) != 0)
		return rc;
	*result = cJSON_CreateObject();
	proto_add_int(*result, "id", new_id);
	proto_add_int(*result, "position", position);
	proto_add_int(*result, "queued", (int64_t)nq);
	proto_add_int(*result, "resubmitted", id);
	return 0;
}

/* "priority, ... or expect_bytes": update's fields, for the cause. */
#define UPD_NAME_0(w)
#define UPD_NAME_1(w) w,
#define UPD_NAME(m, w, store, col, job, vis, submit, upd, ...) UPD_NAME_##upd(w)
static const char *const update_names[] = {JOB_FIELDS(UPD_NAME) NULL};

static void
update_nothing(char *cause, size_t causelen)
{
	size_t i, len;

	len = (size_t)snprintf(cause, causelen,
	                       "invalid params: nothing to update: give ");
	for (i = 0; update_names[i] != NULL && len < causelen; i++)
		len += (size_t)snprintf(cause + len, causelen - len, "%s%s",
		                        i == 0                        ? ""
		                        : update_names[i + 1] == NULL ? " or "
		                                                      : ", ",
		                        update_names[i]);
}

#define UPD_ANY_0(m)
#define UPD_ANY_1(m) || seen.m
#define UPD_ANY(m, w, store, col, job, vis, submit, upd, ...) UPD_ANY_##upd(m)

int
control_update(struct daemon *d, const struct peer *p, const cJSON *req_id,
               const cJSON *params, cJSON **result, char *cause,
               size_t causelen)
{
	struct job_seen seen;
	struct jobs_view v;
	struct job cur;
	int64_t id;
	int rc, privileged;

	(void)req_id;
	if ((rc = control_param_id(d, params, &id, cause, causelen)) != 0)
		return rc;
	if ((rc = control_job_owner(d, p, id, &v, cause, causelen)) != 0)
		return rc;
	/* Its numbers only: the pointers are the view's, freed with it. */
	cur = *v.j;
	jobs_view_free(&v);
	if ((rc = control_fields_read(params, 1, &cur, &seen, cause,
	                              causelen)) < 0)
		return rc;
	if (!(0 JOB_FIELDS(UPD_ANY))) {
		update_nothing(cause, causelen);
		return PROTO_E_PARAMS;
	}
	/* A new free condition replaces the old one, of either kind. */
	if (seen.wait_free_pct != seen.wait_free_bytes) {
		if (seen.wait_free_pct)
			cur.wait_free_bytes = 0;
		else
			cur.wait_free_pct = 0;
		seen.wait_free_pct = seen.wait_free_bytes = 1;
	}
	/* Submit's rules, for the caller: root may raise a user's job. */
	privileged = jobs_privileged(d, p->uid, p->gid, p->groups, p->ngroups);
	if ((rc = control_submit_fair(
	         d, privileged, seen.priority ? cur.priority : 0,
	         seen.wait_free_pct ? cur.wait_free_pct : 0,
	         seen.expect_bytes ? (int64_t)cur.expect_bytes : 0, cause,
	         causelen)) != 0 ||
	    (rc = control_wait_free_bytes_check(
	         d, privileged, seen.wait_free_bytes ? cur.wait_free_bytes : 0,
	         cause, causelen)) != 0)
		return rc;
	if ((rc = jobs_update(d, id, &cur, &seen, cause, causelen)) != 0)
		return rc;
	return control_answer_job(d, p, id, result, cause, causelen);
}
