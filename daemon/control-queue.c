/*
 * The queue's own controls, as methods (PROTOCOL.md): submit's after,
 * group and on_end; hold and release; resubmit and update. docs/jobs.md,
 * "Dependencies and holds", has the rules; jobs-deps.c applies them.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "control.h"
#include "daemon.h"
#include "jobs.h"
#include "proto.h"
#include "units.h"
#include "wire.h"

/* At most this many jobs a job may start after. */
#define CONTROL_MAX_AFTER 64
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

int
control_submit_queue(struct daemon *d, const cJSON *params, struct job *j,
                     char *cause, size_t causelen)
{
	int64_t *after = NULL;
	const char *group = NULL, *on_end = NULL;
	size_t n = 0;
	int rc;

	if ((rc = proto_param_intv(params, "after", 0, CONTROL_MAX_AFTER, 1,
	                           INT64_MAX, &after, &n, cause, causelen)) <
	        0 ||
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
	if ((rc = proto_param_int(params, "id", 1, 1, INT64_MAX, &id, cause,
	                          causelen)) != 0)
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
	if ((rc = proto_param_int(params, "id", 1, 1, INT64_MAX, &id, cause,
	                          causelen)) != 0)
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
