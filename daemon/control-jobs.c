/*
 * The job methods of PROTOCOL.md that act on one job: submit, show,
 * stage, cancel, wait and logs, and cancel_matching, cancel's bulk form
 * (the lists, status, events and a job's
 * history, are control-lists.c's; the attached flow control-attached.c's).
 * Each reads its parameters, checks the peer against the job (one helper,
 * control_job_owner) and asks the job table (jobs.h); answers are built
 * from wire.h's objects. Job ids as clients write them (42, A42, A42_3)
 * and a whole array's answer are control-ids.c's.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <uv.h>

#include "answers.h"
#include "array-spec.h"
#include "control.h"
#include "jobs-filter.h"
#include "jobs.h"
#include "notify.h"
#include "platform.h"
#include "proto.h"
#include "store.h"
#include "units.h"
#include "wire.h"

#define JOBS_MAX_NAME 256
#define JOBS_MAX_CWD 4096

/* The answer of most job methods: the job as it stands now, as the peer
 * may see it. */
static int
answer_job(struct daemon *d, const struct peer *p, int64_t id, int with_env,
           cJSON **result, char *cause, size_t causelen)
{
	struct jobs_view v;
	int rc;

	if ((rc = jobs_get(d, id, &v, cause, causelen)) != 0)
		return rc;
	if (wire_may_see(p->uid, v.j) &&
	    (rc = jobs_view_args(d, &v, cause, causelen)) != 0) {
		jobs_view_free(&v);
		return rc;
	}
	*result = wire_job(&v, p->uid, with_env);
	/* Queued with nothing holding it back (released, or requeued after
	 * a breach, before the pass that admits it): the Job's list has no
	 * word for that, so null (PROTOCOL.md, Job). */
	if (*result != NULL && v.live && v.j->state == JOB_QUEUED &&
	    v.wait == ADMIT_WAIT_NONE)
		cJSON_ReplaceItemInObjectCaseSensitive(*result, "waiting_for",
		                                       cJSON_CreateNull());
	jobs_view_free(&v);
	return 0;
}

int
control_answer_job(struct daemon *d, const struct peer *p, int64_t id,
                   cJSON **result, char *cause, size_t causelen)
{
	return answer_job(d, p, id, 0, result, cause, causelen);
}

/* NULL stays NULL: an attached job has no env. */
static char **
strv_dup(const char *const *v, int *nomem)
{
	size_t n = 0, i;
	char **out;

	if (v == NULL)
		return NULL;
	while (v[n] != NULL)
		n++;
	out = calloc(n + 1, sizeof *out);
	for (i = 0; out != NULL && i < n; i++) {
		if ((out[i] = strdup(v[i])) == NULL) {
			while (i > 0)
				free(out[--i]);
			free(out);
			out = NULL;
		}
	}
	if (out == NULL)
		*nomem = 1;
	return out;
}

struct job *
control_job_new(const struct peer *p, const char *name, const char *cwd,
                const char *const *argv, const char *const *env)
{
	struct job *j = calloc(1, sizeof *j);
	char user[64];
	int nomem = 0;

	if (j == NULL)
		return NULL;
	wire_user_name(p->uid, user, sizeof user);
	j->uid = p->uid;
	j->gid = p->gid;
	/* The connection's groups, not the group database's: a process that
	 * dropped a group does not get it back in its jobs. */
	if (p->ngroups > 0) {
		j->groups = malloc(sizeof *j->groups * (size_t)p->ngroups);
		if (j->groups == NULL)
			goto nomem;
		memcpy(j->groups, p->groups,
		       sizeof *j->groups * (size_t)p->ngroups);
		j->ngroups = p->ngroups;
	}
	j->user = strdup(user);
	j->name = strdup(name);
	j->cwd = strdup(cwd);
	j->argv = strv_dup(argv, &nomem);
	j->env = strv_dup(env, &nomem);
	if (j->user == NULL || j->name == NULL || j->cwd == NULL ||
	    j->argv == NULL || nomem)
		goto nomem;
	return j;
nomem:
	job_free(j);
	return NULL;
}

/* Does a peer with ngroups groups have as many as the system passes on
 * (platform_peer_groups_max), so maybe more that it could not? */
static int
control_groups_capped(int ngroups)
{
	int max = platform_peer_groups_max();

	return max > 0 && ngroups >= max;
}

int
control_submit_fair(struct daemon *d, int privileged, int64_t priority,
                    double wait_free, int64_t expect, char *cause,
                    size_t causelen)
{
	char total[16];

	if (privileged)
		return 0;
	if (priority > 0) {
		snprintf(cause, causelen,
		         "priority %" PRId64 ": only root%s may set a priority "
		         "above 0",
		         priority,
		         d->cfg.admin_group_set
		             ? " and members of the daemon's admin_group"
		             : "");
		return PROTO_E_PARAMS;
	}
	if (wait_free > d->cfg.max_wait_free_pct) {
		snprintf(cause, causelen,
		         "wait_free_pct %g is above the daemon's max_wait_free "
		         "(%g)",
		         wait_free, d->cfg.max_wait_free_pct);
		return PROTO_E_PARAMS;
	}
	/* Before the first sample the total is not known: accepted. */
	if (d->have_last && d->last.total_bytes > 0 &&
	    (uint64_t)expect > d->last.total_bytes) {
		if (units_format_size(d->last.total_bytes, total,
		                      sizeof total) == NULL)
			snprintf(total, sizeof total, "?");
		snprintf(cause, causelen,
		         "expect_bytes %" PRId64 " is above the machine's "
		         "total memory (%" PRIu64 " bytes, %s)",
		         expect, d->last.total_bytes, total);
		return PROTO_E_PARAMS;
	}
	return 0;
}

int
control_submit_count(struct daemon *d, const struct peer *p, char *cause,
                     size_t causelen)
{
	int counts[JOB_LOST + 1];

	if (p->uid == 0)
		return 0;
	jobs_count(d, p->uid, counts);
	if (counts[JOB_QUEUED] + counts[JOB_ADMITTED] + counts[JOB_RUNNING] >=
	    d->cfg.max_queued_per_uid) {
		snprintf(cause, causelen,
		         "limit reached: %d queued or running jobs per user",
		         d->cfg.max_queued_per_uid);
		return PROTO_E_LIMIT;
	}
	return 0;
}

/*
 * A task of a Slurm step (slurm/spank_stageload.c, docs/slurm.md): its
 * ids, and exit_reporter "root": the task's own process submits and
 * execs, so its connection closes at exec, and slurmstepd (root) reports
 * the end. Without a name of its own it is called slurm-JOB.STEP.TASK,
 * which is not "given" (such names never repeat, so they learn nothing).
 */
static int
submit_slurm(const cJSON *params, struct job *j, int attached,
             const struct job_seen *seen, char *cause, size_t causelen)
{
	const char *reporter = NULL;
	char name[64];
	int rc;

	if ((rc = proto_param_string(params, "exit_reporter", 0, 16, &reporter,
	                             cause, causelen)) < 0)
		return rc;
	if (reporter != NULL) {
		if (strcmp(reporter, "root") != 0 || !attached) {
			snprintf(
			    cause, causelen,
			    "invalid params: exit_reporter: only \"root\", "
			    "for an attached job");
			return PROTO_E_PARAMS;
		}
		if ((j->exit_reporter = strdup("root")) == NULL)
			goto nomem;
	}
	if ((seen->slurm_step_id || seen->slurm_task_id) &&
	    !seen->slurm_job_id) {
		snprintf(cause, causelen,
		         "invalid params: slurm_step_id and slurm_task_id need "
		         "slurm_job_id");
		return PROTO_E_PARAMS;
	}
	if (seen->slurm_job_id && !j->name_given) {
		char *dup;

		snprintf(name, sizeof name,
		         "slurm-%" PRId64 ".%" PRId64 ".%" PRId64,
		         j->slurm_job_id, j->slurm_step_id, j->slurm_task_id);
		if ((dup = strdup(name)) == NULL)
			goto nomem;
		free(j->name);
		j->name = dup;
	}
	return 0;
nomem:
	snprintf(cause, causelen, "out of memory");
	return PROTO_E_INTERNAL;
}

/*
 * submit's array (docs/jobs.md, "Arrays"): j is the template of its
 * elements (consumed). The SPEC is bounded by max_queued_per_uid elements
 * (root's too), and the elements with the uid's queued and running jobs
 * by it too (root exempt), so an array that does not fit is refused whole.
 */
static int
submit_array(struct daemon *d, const struct peer *p, const cJSON *params,
             struct job *j, int attached, cJSON **result, char *cause,
             size_t causelen)
{
	struct array_spec spec;
	const char *text = NULL;
	int counts[JOB_LOST + 1];
	int64_t array_id, *ids = NULL, *idx = NULL;
	size_t i, nq, have, k;
	long position;
	cJSON *a;
	int rc;

	if ((rc = proto_param_string(params, "array", 0, 4096, &text, cause,
	                             causelen)) < 0)
		goto out;
	if (attached) {
		snprintf(cause, causelen,
		         "invalid params: array: only for a detached job "
		         "(submit)");
		rc = PROTO_E_PARAMS;
		goto out;
	}
	if (array_spec_parse(text, (size_t)d->cfg.max_queued_per_uid, &spec,
	                     cause, causelen) != 0) {
		rc = PROTO_E_PARAMS;
		goto out;
	}
	jobs_count(d, p->uid, counts);
	have = (size_t)(counts[JOB_QUEUED] + counts[JOB_ADMITTED] +
	                counts[JOB_RUNNING]);
	if (p->uid != 0 && have + spec.n > (size_t)d->cfg.max_queued_per_uid) {
		snprintf(cause, causelen,
		         "limit reached: %d queued or running jobs per user; "
		         "you have %zu and the array %zu more",
		         d->cfg.max_queued_per_uid, have, spec.n);
		array_spec_free(&spec);
		rc = PROTO_E_LIMIT;
		goto out;
	}
	if ((j->array = strdup(text)) == NULL) {
		array_spec_free(&spec);
		snprintf(cause, causelen, "out of memory");
		rc = PROTO_E_INTERNAL;
		goto out;
	}
	rc = jobs_submit_array(d, j, spec.indices, spec.n, spec.limit,
	                       &array_id, &position, &nq, cause, causelen);
	j = NULL;
	array_spec_free(&spec);
	if (rc != 0)
		goto out;
	if (store_array_elements(d->store, array_id, &ids, &idx, &k) != 0)
		k = 0; /* stored and queued: only the list is missing */
	free(idx);
	*result = cJSON_CreateObject();
	proto_add_int(*result, "id", array_id);
	proto_add_int(*result, "array_id", array_id);
	a = cJSON_AddArrayToObject(*result, "ids");
	for (i = 0; a != NULL && i < k; i++)
		cJSON_AddItemToArray(a, proto_int_create(ids[i]));
	free(ids);
	proto_add_int(*result, "position", position);
	proto_add_int(*result, "queued", (int64_t)nq);
	rc = 0;
out:
	job_free(j);
	return rc;
}

int
control_submit(struct daemon *d, const struct peer *p, const cJSON *req_id,
               const cJSON *params, cJSON **result, char *cause,
               size_t causelen)
{
	const char **argv = NULL, **env = NULL, *cwd = NULL, *name = NULL;
	struct job_seen seen;
	int attached = 0, rc;
	struct job *j = NULL;
	const char *base;
	size_t i, nq;
	int64_t id;
	long position;

	/* attached first: whether env is required depends on it. */
	if ((rc = proto_param_bool(params, "attached", 0, &attached, cause,
	                           causelen)) < 0 ||
	    (rc = proto_param_strv(params, "argv", 1, 4096,
	                           d->cfg.max_argv_bytes, &argv, cause,
	                           causelen)) < 0)
		goto out;
	if (argv[0] == NULL || argv[0][0] == '\0') {
		snprintf(cause, causelen, "argv must name a command");
		rc = PROTO_E_PARAMS;
		goto out;
	}
	if ((rc = proto_param_string(params, "cwd", 1, JOBS_MAX_CWD, &cwd,
	                             cause, causelen)) < 0)
		goto out;
	if (cwd[0] != '/') {
		snprintf(cause, causelen, "cwd must be an absolute path");
		rc = PROTO_E_PARAMS;
		goto out;
	}
	if ((rc = proto_param_strv(params, "env", !attached, 4096,
	                           d->cfg.max_env_bytes, &env, cause,
	                           causelen)) < 0)
		goto out;
	for (i = 0; env != NULL && env[i] != NULL; i++) {
		const char *eq = strchr(env[i], '=');
		if (eq == NULL || eq == env[i]) {
			snprintf(cause, causelen, "env[%zu] must be NAME=value",
			         i);
			rc = PROTO_E_PARAMS;
			goto out;
		}
	}
	if ((rc = proto_param_string(params, "name", 0, JOBS_MAX_NAME, &name,
	                             cause, causelen)) < 0)
		goto out;
	base = strrchr(argv[0], '/');
	base = base != NULL && base[1] != '\0' ? base + 1 : argv[0];
	if ((j = control_job_new(p,
	                         name != NULL && name[0] != '\0' ? name : base,
	                         cwd, argv, attached ? NULL : env)) == NULL)
		goto nomem;
	/* The daemon's defaults, then what the request gives. A client that
	 * does not say gets the most private mask. */
	j->wait_free_pct = d->cfg.default_wait_free_pct;
	j->swap_budget_bytes = d->cfg.default_swap_budget_bytes;
	j->umask = 077;
	if ((rc = control_fields_read(params, 0, j, &seen, cause, causelen)) <
	    0)
		goto out;
	/* Given (0 too: it opts out of a learned peak), or left to what the
	 * name's past runs reached (jobs_learn_expect). */
	j->expect_source =
	    seen.expect_bytes ? JOB_EXPECT_GIVEN : JOB_EXPECT_NONE;
	j->name_given = name != NULL && name[0] != '\0';
	if ((rc = submit_slurm(params, j, attached, &seen, cause, causelen)) <
	    0)
		goto out;
	/* What would hold the queue: only the trusted may ask for it
	 * (docs/jobs.md, "Queue order"), judged from the peer's own groups. */
	j->privileged =
	    jobs_privileged(d, p->uid, p->gid, p->groups, p->ngroups);
	if ((rc = control_submit_fair(
	         d, j->privileged, j->priority, j->wait_free_pct,
	         (int64_t)j->expect_bytes, cause, causelen)) < 0 ||
	    (rc = control_submit_count(d, p, cause, causelen)) < 0)
		goto out;
	if ((rc = control_submit_queue(d, params, j, cause, causelen)) != 0)
		goto out;
	if (cJSON_GetObjectItemCaseSensitive(params, "array") != NULL &&
	    !cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(params, "array"))) {
		rc = submit_array(d, p, params, j, attached, result, cause,
		                  causelen);
		j = NULL;
		goto out;
	}
	/* The table owns the job from here, whatever the outcome. */
	rc = jobs_submit(d, j, p->client_id, &id, &position, &nq, cause,
	                 causelen);
	j = NULL;
	if (rc != 0)
		goto out;
	*result = cJSON_CreateObject();
	proto_add_int(*result, "id", id);
	proto_add_int(*result, "position", position);
	proto_add_int(*result, "queued", (int64_t)nq);
	/* An attached job's command is started by its client, which puts
	 * the token in its environment as the daemon does a detached one's. */
	if (attached) {
		struct jobs_view tv;
		char tcause[64];
		if (jobs_get(d, id, &tv, tcause, sizeof tcause) == 0) {
			if (tv.j->job_token != NULL)
				cJSON_AddStringToObject(*result, "job_token",
				                        tv.j->job_token);
			jobs_view_free(&tv);
		}
	}
	/* The job gets the groups the connection had, never more from the
	 * directory (docs/security.md, Groups); a list cut at the system's
	 * cap may leave some out, which the submitter is told. */
	if (!attached && control_groups_capped(p->ngroups))
		cJSON_AddBoolToObject(*result, "groups_capped", 1);
	goto out;
nomem:
	snprintf(cause, causelen, "out of memory");
	rc = PROTO_E_INTERNAL;
out:
	job_free(j);
	free(argv);
	free(env);
	return rc > 0 ? 0 : rc;
}

static void add_stages(struct daemon *d, int64_t id, cJSON *job);
static void add_learned(struct daemon *d, cJSON *job);
static void add_groups_dropped(struct daemon *d, const struct peer *p,
                               int64_t id, cJSON *job);

int
control_show(struct daemon *d, const struct peer *p, const cJSON *req_id,
             const cJSON *params, cJSON **result, char *cause, size_t causelen)
{
	int64_t id, array_id, *ids;
	size_t n;
	int env = 0, rc;

	if ((rc = control_param_ref(d, params, &id, &array_id, &ids, &n, cause,
	                            causelen)) != 0 ||
	    (rc = proto_param_bool(params, "env", 0, &env, cause, causelen)) <
	        0) {
		free(ids);
		return rc;
	}
	if (ids != NULL)
		return control_array_start(d, p, req_id, array_id, ids, n,
		                           CONTROL_ARRAY_SHOW, cause, causelen);
	if ((rc = answer_job(d, p, id, env, result, cause, causelen)) != 0)
		return rc;
	add_stages(d, id, *result);
	add_learned(d, *result);
	add_groups_dropped(d, p, id, *result);
	return 0;
}

static int
groups_dropped_cb(void *arg, const struct store_event *e)
{
	cJSON **groups = arg, *det;

	if (*groups == NULL && e->detail != NULL &&
	    (det = cJSON_Parse(e->detail)) != NULL) {
		*groups =
		    cJSON_DetachItemFromObjectCaseSensitive(det, "groups");
		cJSON_Delete(det);
	}
	return 0;
}

/* The groups the job lost at its start because its user was no longer in
 * them (jobs-detached.c): for its owner and root, as its groups are; null
 * when none were, or for anyone else. */
static void
add_groups_dropped(struct daemon *d, const struct peer *p, int64_t id,
                   cJSON *job)
{
	const cJSON *uid;
	cJSON *groups = NULL;

	if (job == NULL)
		return;
	uid = cJSON_GetObjectItemCaseSensitive(job, "uid");
	if ((p->uid == 0 ||
	     (cJSON_IsNumber(uid) && (uid_t)uid->valuedouble == p->uid)) &&
	    store_job_events(d->store, id, "groups_dropped", 1,
	                     groups_dropped_cb, &groups) == 0 &&
	    cJSON_IsArray(groups)) {
		cJSON_AddItemToObject(job, "groups_dropped", groups);
		return;
	}
	cJSON_Delete(groups);
	cJSON_AddNullToObject(job, "groups_dropped");
}

/* What the past runs of the job's name reached (public, as the name is):
 * null when the name was not given (it never learns) or the database
 * could not be read; runs 0 when it never ran. */
static void
add_learned(struct daemon *d, cJSON *job)
{
	const cJSON *given, *name, *uid;
	struct store_learned l;
	cJSON *o, *stages;

	if (job == NULL)
		return;
	given = cJSON_GetObjectItemCaseSensitive(job, "name_given");
	name = cJSON_GetObjectItemCaseSensitive(job, "name");
	uid = cJSON_GetObjectItemCaseSensitive(job, "uid");
	if (!cJSON_IsTrue(given) || !cJSON_IsString(name) ||
	    !cJSON_IsNumber(uid) ||
	    jobs_learned(d, (uid_t)uid->valuedouble, name->valuestring, &l) !=
	        0) {
		cJSON_AddNullToObject(job, "learned");
		return;
	}
	o = cJSON_AddObjectToObject(job, "learned");
	if (o != NULL) {
		proto_add_int(o, "runs", l.runs);
		proto_add_int(o, "killed", l.killed);
		proto_add_int(o, "footprint_peak_bytes",
		              (int64_t)l.footprint_peak_bytes);
		proto_add_int(o, "swap_growth_peak_bytes",
		              (int64_t)l.swap_growth_peak_bytes);
		stages = l.stages != NULL ? cJSON_Parse(l.stages) : NULL;
		if (stages == NULL)
			stages = cJSON_CreateArray();
		cJSON_AddItemToObject(o, "stages", stages);
	}
	store_learned_clear(&l);
}

/* The job's stages (public, as its name is): null when the database could
 * not be read. */
static void
add_stages(struct daemon *d, int64_t id, cJSON *job)
{
	struct store_stage *rows;
	cJSON *a, *o;
	size_t i, n;

	if (job == NULL)
		return;
	if (jobs_stages(d, id, &rows, &n) != 0) {
		cJSON_AddNullToObject(job, "stages");
		return;
	}
	a = cJSON_AddArrayToObject(job, "stages");
	for (i = 0; a != NULL && i < n; i++) {
		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", rows[i].name);
		proto_add_int(o, "started_at_ms", rows[i].started_ms);
		if (rows[i].ended_ms > 0)
			proto_add_int(o, "ended_at_ms", rows[i].ended_ms);
		else
			cJSON_AddNullToObject(o, "ended_at_ms");
		proto_add_int(o, "footprint_peak_bytes",
		              (int64_t)rows[i].footprint_peak_bytes);
		proto_add_int(o, "swap_growth_bytes",
		              (int64_t)rows[i].swap_growth_bytes);
		cJSON_AddItemToArray(a, o);
	}
	store_stages_free(rows, n);
}

int
control_stage(struct daemon *d, const struct peer *p, const cJSON *req_id,
              const cJSON *params, cJSON **result, char *cause, size_t causelen)
{
	struct jobs_view v;
	const char *name, *token = NULL;
	int64_t id;
	int rc;

	if ((rc = control_param_id(d, params, &id, cause, causelen)) != 0 ||
	    (rc = proto_param_string(params, "name", 1, JOBS_MAX_NAME, &name,
	                             cause, causelen)) != 0 ||
	    (rc = proto_param_string(params, "token", 0, 128, &token, cause,
	                             causelen)) < 0)
		return rc;
	if (name[0] == '\0') {
		snprintf(cause, causelen,
		         "name: a stage name may not be empty");
		return PROTO_E_PARAMS;
	}
	if ((rc = jobs_get(d, id, &v, cause, causelen)) != 0)
		return rc;
	/* A report from inside a job carries its token: one that is not
	 * this job's comes from another daemon's job of the same id (or
	 * from someone guessing), and is never recorded here. */
	if (token != NULL && !jobs_token_matches(v.j, token)) {
		jobs_view_free(&v);
		snprintf(cause, causelen,
		         "job %" PRId64 " of this daemon is not the job the "
		         "report comes from (its STAGELOAD_JOB_TOKEN does not "
		         "match): is STAGELOAD_SOCKET the socket of the daemon "
		         "that runs it?",
		         id);
		return PROTO_E_PERM;
	}
	jobs_view_free(&v);
	if ((rc = control_job_owner(d, p, id, &v, cause, causelen)) != 0)
		return rc;
	jobs_view_free(&v);
	if ((rc = jobs_stage(d, id, name, cause, causelen)) != 0)
		return rc;
	*result = cJSON_CreateObject();
	return 0;
}

int
control_cancel(struct daemon *d, const struct peer *p, const cJSON *req_id,
               const cJSON *params, cJSON **result, char *cause,
               size_t causelen)
{
	struct jobs_view v;
	int64_t id, array_id, *ids;
	size_t n;
	int rc;
	char who[64];

	if ((rc = control_param_ref(d, params, &id, &array_id, &ids, &n, cause,
	                            causelen)) != 0)
		return rc;
	if (ids != NULL) /* every element that has not ended */
		return control_array_start(d, p, req_id, array_id, ids, n,
		                           CONTROL_ARRAY_CANCEL, cause,
		                           causelen);
	if ((rc = control_job_owner(d, p, id, &v, cause, causelen)) != 0)
		return rc;
	if (!v.live) {
		jobs_view_free(&v);
		snprintf(cause, causelen, "job %" PRId64 " has already ended",
		         id);
		return PROTO_E_STATE;
	}
	wire_user_name(p->uid, who, sizeof who);
	if ((rc = jobs_cancel(d, id, who, cause, causelen)) != 0)
		return rc;
	/* Ended now, or being terminated: as it stands. */
	return answer_job(d, p, id, 0, result, cause, causelen);
}

/* A cancel_matching answer: the jobs it matched when asked, cancelled a
 * slice of the loop's time at a time (each is a commit), then one
 * answer. */
struct cancel_walk {
	int64_t *ids;
	size_t n, i;
	int64_t done;
	cJSON *cancelled; /* the ids cancelled */
	char who[64];
};

static void
cancel_walk_free(void *state)
{
	struct cancel_walk *w = state;

	cJSON_Delete(w->cancelled);
	free(w->ids);
	free(w);
}

static int
cancel_walk_fill(struct daemon *d, void *state, struct answers_buf *out,
                 char *cause, size_t causelen)
{
	struct cancel_walk *w = state;
	uint64_t t0 = uv_hrtime();
	char why[256];
	cJSON *o;
	int rc;

	for (; w->i < w->n; w->i++) {
		if (uv_hrtime() - t0 > ANSWERS_SLICE_NS)
			return 1;
		rc = jobs_cancel(d, w->ids[w->i], w->who, why, sizeof why);
		/* One that ended meanwhile is not counted, nor refused. */
		if (rc == PROTO_E_STATE)
			continue;
		if (rc != 0) {
			snprintf(cause, causelen,
			         "%s (%" PRId64 " of the %zu jobs matched were "
			         "cancelled before it)",
			         why, w->done, w->n);
			return rc;
		}
		w->done++;
		cJSON_AddItemToArray(w->cancelled,
		                     proto_int_create(w->ids[w->i]));
	}
	if ((o = cJSON_CreateObject()) == NULL) {
		snprintf(cause, causelen, "out of memory");
		return PROTO_E_INTERNAL;
	}
	proto_add_int(o, "cancelled", w->done);
	cJSON_AddItemToObject(o, "ids", w->cancelled);
	w->cancelled = NULL;
	if (answers_append_json(out, o) != 0) {
		snprintf(cause, causelen, "out of memory");
		return PROTO_E_INTERNAL;
	}
	return 0;
}

static const struct answers_ops cancel_walk_ops = {cancel_walk_fill,
                                                   cancel_walk_free};

/*
 * cancel_matching: the caller's live jobs that pass the filter (PROTOCOL.md,
 * "Job filters") end as cancel ends each. A caller other than root has its
 * own jobs alone: its filter is always of its uid, and user naming another
 * or all_users is refused. Root has its own too, unless user names another
 * or all_users takes everyone's.
 */
int
control_cancel_matching(struct daemon *d, const struct peer *p,
                        const cJSON *req_id, const cJSON *params,
                        cJSON **result, char *cause, size_t causelen)
{
	struct cancel_walk *w;
	struct job_filter f;
	struct jobs_view *v = NULL;
	int all_users = 0, rc;
	size_t n = 0, i;

	(void)result;
	if ((rc = store_filter_read(params, p->uid, &f, cause, causelen)) !=
	        0 ||
	    (rc = proto_param_bool(params, "all_users", 0, &all_users, cause,
	                           causelen)) < 0)
		return rc;
	if (all_users && p->uid != 0) {
		snprintf(cause, causelen,
		         "all_users is for root only: others cancel their own "
		         "jobs alone");
		return PROTO_E_PERM;
	}
	if (all_users && f.has_uid) {
		snprintf(cause, causelen,
		         "invalid params: 'all_users' cannot go with 'user' or "
		         "'mine'");
		return PROTO_E_PARAMS;
	}
	if (f.has_uid && f.uid != p->uid && p->uid != 0) {
		snprintf(cause, causelen,
		         "you may cancel only your own jobs (user names "
		         "another)");
		return PROTO_E_PERM;
	}
	if (!all_users && !f.has_uid) {
		f.has_uid = 1;
		f.uid = p->uid;
	}
	if ((w = calloc(1, sizeof *w)) == NULL ||
	    (w->cancelled = cJSON_CreateArray()) == NULL ||
	    jobs_list(d, 0, &v, &n) != 0 ||
	    (n > 0 && (w->ids = calloc(n, sizeof *w->ids)) == NULL)) {
		free(v);
		if (w != NULL)
			cancel_walk_free(w);
		snprintf(cause, causelen, "out of memory");
		return PROTO_E_INTERNAL;
	}
	for (i = 0; i < n; i++) {
		/* one being terminated is ending already */
		if (v[i].live && !v[i].terminating &&
		    jobs_filter_match(&f, v[i].j))
			w->ids[w->n++] = v[i].j->id;
		jobs_view_free(&v[i]);
	}
	free(v);
	wire_user_name(p->uid, w->who, sizeof w->who);
	if ((rc = answers_start(d, p, req_id, &cancel_walk_ops, w, cause,
	                        causelen)) != 0)
		return rc;
	return CONTROL_DEFERRED;
}

int
control_wait(struct daemon *d, const struct peer *p, const cJSON *req_id,
             const cJSON *params, cJSON **result, char *cause, size_t causelen)
{
	struct jobs_view v;
	int64_t id;
	int rc, ended;

	if ((rc = control_param_id(d, params, &id, cause, causelen)) != 0)
		return rc;
	if ((rc = jobs_get(d, id, &v, cause, causelen)) != 0)
		return rc;
	ended = !v.in_table;
	if (ended)
		*result = wire_job(&v, p->uid, 0);
	jobs_view_free(&v);
	if (ended)
		return 0;
	if ((rc = notify_wait(d, p->client_id, p->uid, req_id, id, cause,
	                      causelen)) != 0)
		return rc;
	return CONTROL_DEFERRED;
}

int
control_logs(struct daemon *d, const struct peer *p, const cJSON *req_id,
             const cJSON *params, cJSON **result, char *cause, size_t causelen)
{
	struct jobs_view v;
	int64_t id, offset = 0;
	int follow = 0, rc, attached;

	if ((rc = control_param_id(d, params, &id, cause, causelen)) != 0 ||
	    (rc = proto_param_int(params, "offset", 0, 0, INT64_MAX, &offset,
	                          cause, causelen)) < 0 ||
	    (rc = proto_param_bool(params, "follow", 0, &follow, cause,
	                           causelen)) < 0)
		return rc;
	if ((rc = control_job_owner(d, p, id, &v, cause, causelen)) != 0)
		return rc;
	attached = v.j->attached;
	jobs_view_free(&v);
	if (attached) {
		snprintf(cause, causelen,
		         "job %" PRId64 " is attached: its output went to its "
		         "terminal",
		         id);
		return PROTO_E_STATE;
	}
	if ((rc = notify_logs(d, p->client_id, p->uid, req_id, id,
	                      (uint64_t)offset, follow, cause, causelen)) != 0)
		return rc;
	return CONTROL_DEFERRED;
}
