/*
 * What the front asks of the job table (jobs.h): views of one job or of
 * the table, and the transitions submit and cancel. Who may ask is decided
 * before these are called (control-jobs.c); what the job's state allows is
 * decided here.
 */
#include <sys/types.h> /* before sys/random.h: macOS declares getentropy with size_t */
#include <sys/random.h>

#include <errno.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jobs-internal.h"
#include "log.h"
#include "platform.h"
#include "proto.h"
#include "store.h"
#include "umap.h"

int
jobs_ctl_end_recorded(struct daemon *d, const struct jrec *r, char *cause,
                      size_t causelen)
{
	const char *health = store_health(d->store);

	if (!r->end_pending)
		return 0;
	snprintf(cause, causelen,
	         "storage error: %s; job %" PRId64 " is %s here, and its "
	         "record is written once storage works again",
	         health != NULL ? health : "a write failed", r->j->id,
	         job_state_name(r->j->state));
	return PROTO_E_STORAGE;
}

/* The live record of id: through idx (id -> 1 + its place in the table)
 * when there is one, for a list; else a walk. */
static const struct jrec *
view_find(struct jobs *js, struct umap *idx, int64_t id)
{
	struct umap_slot *s;

	if (idx == NULL)
		return jobs_find(js, id);
	s = umap_find(idx, (uint64_t)id);
	return s != NULL && s->a > 0 && (size_t)s->a <= js->n ? js->v[s->a - 1]
	                                                      : NULL;
}

static void
view_of(const struct jrec *r, struct jobs_view *v, struct umap *idx)
{
	int i;

	memset(v, 0, sizeof *v);
	v->j = r->j;
	v->in_table = 1;
	v->live = jrec_is_live(r);
	v->end_pending = r->end_pending;
	v->terminating = r->term_reason != NULL && !r->requeue;
	v->position = r->position;
	v->wait = r->wait;
	v->wait_after = r->wait_after;
	v->wait_until_ms = r->wait_until_ms;
	for (i = 0; i < r->nwait_on; i++) {
		const struct jrec *w = view_find(r->js, idx, r->wait_on[i]);
		if (w == NULL)
			continue;
		v->wait_on[v->nwait_on].id = w->j->id;
		v->wait_on[v->nwait_on].user = w->j->user;
		v->wait_on[v->nwait_on].name = w->j->name;
		v->nwait_on++;
	}
	v->growth_bytes = r->growth_bytes;
	v->client_id = r->client_id;
}

void
jobs_view_of(const struct jrec *r, struct jobs_view *v)
{
	view_of(r, v, NULL);
}

/* The live record (fresh queue positions) or, for an ended job, the
 * stored one; an ended job not yet on disk is the record: memory is the
 * truth then. */
int
jobs_get(struct daemon *d, int64_t id, struct jobs_view *v, char *cause,
         size_t causelen)
{
	struct jrec *r = jobs_find(d->jobs, id);
	struct job *stored = NULL;
	size_t nq;

	if (r != NULL) {
		if (r->j->state == JOB_QUEUED)
			free(jobs_queue(d->jobs, &nq));
		view_of(r, v, NULL);
		return 0;
	}
	memset(v, 0, sizeof *v);
	if (store_job_get(d->store, id, &stored) == 0 && stored != NULL) {
		v->j = v->stored = stored;
		return 0;
	}
	snprintf(cause, causelen, "no job %" PRId64, id);
	return PROTO_E_NOJOB;
}

void
jobs_positions(struct daemon *d)
{
	size_t nq;

	free(jobs_queue(d->jobs, &nq));
}

int
jobs_get_lean(struct daemon *d, int64_t id, struct jobs_view *v, char *cause,
              size_t causelen)
{
	struct jrec *r = jobs_find(d->jobs, id);
	struct job *stored = NULL;

	if (r != NULL) {
		view_of(r, v, NULL);
		return 0;
	}
	memset(v, 0, sizeof *v);
	if (store_job_get_lean(d->store, id, &stored) == 0 && stored != NULL) {
		v->j = v->stored = stored;
		return 0;
	}
	snprintf(cause, causelen, "no job %" PRId64, id);
	return PROTO_E_NOJOB;
}

void
jobs_view_free(struct jobs_view *v)
{
	job_free(v->stored);
	job_free(v->args);
	v->stored = NULL;
	v->args = NULL;
	v->j = NULL;
}

int
jobs_view_args(struct daemon *d, struct jobs_view *v, char *cause,
               size_t causelen)
{
	int rc;

	if (v->j->argv != NULL || v->args != NULL)
		return 0;
	if ((rc = store_job_get(d->store, v->j->id, &v->args)) != 0) {
		snprintf(cause, causelen,
		         "storage error reading job %" PRId64 ": %s", v->j->id,
		         rc < 0 ? strerror(-rc) : "no row");
		return PROTO_E_STORAGE;
	}
	return 0;
}

int
jobs_list(struct daemon *d, int ended, struct jobs_view **out, size_t *n)
{
	struct jobs *js = d->jobs;
	struct jobs_view *v;
	struct jrec **q;
	struct umap idx = {NULL, 0, 0}, *ip = &idx;
	struct umap_slot *s;
	size_t nq, i, k = 0;

	*out = NULL;
	*n = 0;
	/* Each job a queued one waits behind is found here, not by a walk
	 * of the table per job (out of memory: by the walk). */
	for (i = 0; ip != NULL && i < js->n; i++) {
		if (js->v[i]->done)
			continue;
		if ((s = umap_get(&idx, (uint64_t)js->v[i]->j->id)) == NULL)
			ip = NULL;
		else
			s->a = (int64_t)i + 1;
	}
	q = jobs_queue(js, &nq);
	v = malloc((js->n ? js->n : 1) * sizeof *v);
	if (v == NULL || (q == NULL && js->n > 0)) {
		umap_free(&idx);
		free(v);
		free(q);
		return -ENOMEM;
	}
	for (i = 0; i < js->n; i++)
		if (jrec_holds_memory(js->v[i]))
			view_of(js->v[i], &v[k++], ip);
	for (i = 0; i < nq; i++)
		view_of(q[i], &v[k++], ip);
	for (i = 0; ended && i < js->n; i++)
		if (js->v[i]->end_pending)
			view_of(js->v[i], &v[k++], ip);
	umap_free(&idx);
	free(q);
	*out = v;
	*n = k;
	return 0;
}

int
jobs_is_live(struct daemon *d, int64_t id)
{
	struct jrec *r = d->jobs != NULL ? jobs_find(d->jobs, id) : NULL;

	return r != NULL && jrec_is_live(r);
}

int
jobs_privileged(struct daemon *d, uid_t uid, gid_t gid, const gid_t *groups,
                int ngroups)
{
	int i;

	if (uid == 0 || uid == geteuid())
		return 1;
	if (!d->cfg.admin_group_set)
		return 0;
	if (gid == d->cfg.admin_gid)
		return 1;
	for (i = 0; i < ngroups; i++)
		if (groups[i] == d->cfg.admin_gid)
			return 1;
	return 0;
}

static void
submit_forget_job(void *arg, int64_t id)
{
	struct daemon *d = arg;

	spawn_forget(d->cfg.state_dir, id);
}

/*
 * What one uid may make the daemon store (docs/storage.md, "Bounds per
 * user"; root exempt): refused when its unended jobs alone, with this one,
 * pass max_stored_bytes_per_uid; else its oldest ended jobs (and their
 * files) go, before the insert, until this one fits and it has at most
 * max_ended_jobs_per_uid ended. O(1) unless something must go.
 */
static int
submit_make_room(struct daemon *d, const struct job *j, int64_t need,
                 char *cause, size_t causelen)
{
	int64_t max_bytes = (int64_t)d->cfg.max_stored_bytes_per_uid;
	int64_t max_ended = d->cfg.max_ended_jobs_per_uid;
	struct store_usage u;
	char scause[256];
	int pruned = 0;

	if (j->uid == 0)
		return 0;
	/* Below the free-space floor only root writes (tick_disk). */
	if (d->disk_low && j->uid != geteuid()) {
		snprintf(cause, causelen,
		         "storage: the disk holding the database is nearly "
		         "full (%" PRIu64 " bytes free, below min_free_disk, "
		         "%" PRIu64 "); only root's jobs are taken until "
		         "there is more",
		         d->disk_free_bytes, d->disk_floor_bytes);
		return PROTO_E_STORAGE;
	}
	store_usage(d->store, j->uid, &u);
	if (u.bytes - u.ended_bytes + need > max_bytes) {
		snprintf(cause, causelen,
		         "limit reached: %" PRId64 " bytes stored per user "
		         "(max_stored_bytes_per_uid); your unended jobs hold "
		         "%" PRId64 " and this %s %" PRId64,
		         max_bytes, u.bytes - u.ended_bytes,
		         j->array != NULL ? "array" : "one", need);
		return PROTO_E_LIMIT;
	}
	if (u.bytes + need <= max_bytes && u.ended <= max_ended)
		return 0;
	if (store_make_room(d->store, j->uid, need, max_bytes, max_ended,
	                    submit_forget_job, d, &pruned, scause,
	                    sizeof scause) != 0) {
		snprintf(cause, causelen, "storage error: %s", scause);
		return PROTO_E_STORAGE;
	}
	if (pruned > 0)
		log_debug("uid %u: pruned its %d oldest ended jobs to make "
		          "room",
		          (unsigned)j->uid, pruned);
	return 0;
}

/* The job's token: 16 bytes of the system's random source, in hex. */
static int
jobs_new_token(struct job *j)
{
	unsigned char raw[16];
	char hex[2 * sizeof raw + 1];
	size_t i;

	if (getentropy(raw, sizeof raw) == -1)
		return -errno;
	for (i = 0; i < sizeof raw; i++)
		snprintf(hex + 2 * i, 3, "%02x", raw[i]);
	free(j->job_token);
	if ((j->job_token = strdup(hex)) == NULL)
		return -ENOMEM;
	return 0;
}

int
jobs_token_matches(const struct job *j, const char *token)
{
	size_t n, i;
	unsigned char diff = 0;

	if (j->job_token == NULL)
		return 1; /* a job from before tokens: as it was */
	n = strlen(j->job_token);
	if (token == NULL || strlen(token) != n)
		return 0;
	/* Every byte compared, whatever differs first. */
	for (i = 0; i < n; i++)
		diff |= (unsigned char)(j->job_token[i] ^ token[i]);
	return diff == 0;
}

int
jobs_submit(struct daemon *d, struct job *j, uint64_t client_id, int64_t *id,
            long *position, size_t *queued, char *cause, size_t causelen)
{
	struct jobs *js = d->jobs;
	struct jrec *r;
	char scause[256];
	cJSON *det;
	int rc;

	if ((rc = submit_make_room(d, j, store_job_bytes(j), cause,
	                           causelen)) != 0) {
		job_free(j);
		return rc;
	}
	j->attempt = 1;
	j->state = JOB_QUEUED;
	j->submitted_ms = clock_wall_ms();
	if ((rc = jobs_new_token(j)) < 0) {
		job_free(j);
		snprintf(cause, causelen,
		         "cannot read the system's random "
		         "source: %s",
		         strerror(-rc));
		return PROTO_E_INTERNAL;
	}
	jobs_learn_expect(d, j);
	if (store_job_insert(d->store, j, scause, sizeof scause) != 0) {
		job_free(j);
		snprintf(cause, causelen, "storage error: %s", scause);
		return PROTO_E_STORAGE;
	}
	if ((r = jrec_new(js, j)) == NULL) {
		job_free(j);
		snprintf(cause, causelen, "out of memory");
		return PROTO_E_INTERNAL;
	}
	if (j->attached)
		r->client_id = client_id;
	det = cJSON_CreateObject();
	cJSON_AddStringToObject(det, "name", j->name);
	proto_add_int(det, "priority", j->priority);
	cJSON_AddNumberToObject(det, "wait_free_pct", j->wait_free_pct);
	if (j->wait_free_bytes > 0)
		proto_add_int(det, "wait_free_bytes",
		              (int64_t)j->wait_free_bytes);
	proto_add_int(det, "swap_budget_bytes", (int64_t)j->swap_budget_bytes);
	cJSON_AddBoolToObject(det, "attached", j->attached);
	jobs_event(d, j, NAMES_EVENT_SUBMITTED, det);
	free(jobs_queue(js, queued));
	*id = j->id;
	*position = r->position;
	/* A list before the pass that admits it says what it waits for,
	 * not "none" (jobs_admit runs on the next loop turn). */
	jobs_classify(d);
	jobs_admit_soon(d);
	return 0;
}

static char *
dup_or_null(const char *s, int *nomem)
{
	char *c;

	if (s == NULL)
		return NULL;
	if ((c = strdup(s)) == NULL)
		*nomem = 1;
	return c;
}

/* An element like t, but for its argv and env, which the elements share
 * in the store (t's row): its command line is t's. NULL when out of
 * memory. */
static struct job *
array_element_new(const struct job *t, const char *command)
{
	struct job *j = malloc(sizeof *j);
	int nomem = 0;

	if (j == NULL)
		return NULL;
	*j = *t;
	j->argv = j->env = NULL;
	j->end_reason = j->end_detail = j->kill = j->array = NULL;
	j->job_token = j->attempts = NULL;
	j->groups = NULL;
	j->after = NULL;
	if (t->ngroups > 0 && (j->groups = malloc(sizeof *j->groups *
	                                          (size_t)t->ngroups)) != NULL)
		memcpy(j->groups, t->groups,
		       sizeof *j->groups * (size_t)t->ngroups);
	if (t->nafter > 0 &&
	    (j->after = malloc(sizeof *j->after * (size_t)t->nafter)) != NULL)
		memcpy(j->after, t->after,
		       sizeof *j->after * (size_t)t->nafter);
	j->user = dup_or_null(t->user, &nomem);
	j->name = dup_or_null(t->name, &nomem);
	j->cwd = dup_or_null(t->cwd, &nomem);
	j->group = dup_or_null(t->group, &nomem);
	j->on_end = dup_or_null(t->on_end, &nomem);
	j->exit_reporter = dup_or_null(t->exit_reporter, &nomem);
	j->command = dup_or_null(command, &nomem);
	if (nomem || (t->ngroups > 0 && j->groups == NULL) ||
	    (t->nafter > 0 && j->after == NULL)) {
		job_free(j);
		return NULL;
	}
	return j;
}

int
jobs_submit_array(struct daemon *d, struct job *t, const int64_t *indices,
                  size_t n, int limit, int64_t *array_id, long *position,
                  size_t *queued, char *cause, size_t causelen)
{
	struct jrec *r, *first = NULL;
	struct jobs *js = d->jobs;
	char cmd[JOB_COMMAND_MAX + 1], scause[256];
	struct job **v = NULL;
	int64_t need;
	size_t i, k;
	cJSON *det;
	int rc;

	/* What its rows hold: t's argv and env once, each element's own
	 * name, cwd and the rest (store_job_bytes of an element). */
	job_command(t->argv, cmd, sizeof cmd);
	if ((v = calloc(n, sizeof *v)) == NULL)
		goto nomem;
	t->attempt = 1;
	t->state = JOB_QUEUED;
	t->submitted_ms = clock_wall_ms();
	t->array_limit = limit;
	jobs_learn_expect(d, t);
	v[0] = t;
	t->array_index = indices[0];
	for (i = 1; i < n; i++) {
		if ((v[i] = array_element_new(t, cmd)) == NULL)
			goto nomem;
		v[i]->array_index = indices[i];
	}
	/* each element its own token, as any job (STAGELOAD_JOB_TOKEN) */
	for (i = 0; i < n; i++) {
		if ((rc = jobs_new_token(v[i])) < 0) {
			snprintf(cause, causelen,
			         "cannot read the system's random source: %s",
			         strerror(-rc));
			rc = PROTO_E_INTERNAL;
			goto out;
		}
	}
	need = store_job_bytes(t);
	if (n > 1)
		need += (int64_t)(n - 1) * store_job_bytes(v[1]);
	if ((rc = submit_make_room(d, t, need, cause, causelen)) != 0)
		goto out;
	if (store_array_insert(d->store, v, n, scause, sizeof scause) != 0) {
		snprintf(cause, causelen, "storage error: %s", scause);
		rc = PROTO_E_STORAGE;
		goto out;
	}
	*array_id = t->id;
	jobs_events_batch(d, 1);
	for (k = 0; k < n; k++) {
		struct job *j = v[k];

		v[k] = NULL;
		if ((r = jrec_new(js, j)) == NULL) {
			/* Stored: the next start loads the rest. */
			job_free(j);
			log_warnx("array A%" PRId64 ": out of memory adding "
			          "its elements",
			          *array_id);
			continue;
		}
		det = cJSON_CreateObject();
		cJSON_AddStringToObject(det, "name", j->name);
		proto_add_int(det, "array_id", j->array_id);
		proto_add_int(det, "array_index", j->array_index);
		proto_add_int(det, "priority", j->priority);
		cJSON_AddNumberToObject(det, "wait_free_pct", j->wait_free_pct);
		proto_add_int(det, "swap_budget_bytes",
		              (int64_t)j->swap_budget_bytes);
		cJSON_AddBoolToObject(det, "attached", 0);
		jobs_event(d, j, NAMES_EVENT_SUBMITTED, det);
		if (first == NULL)
			first = r;
	}
	jobs_events_batch(d, 0);
	free(v);
	free(jobs_queue(js, queued));
	*position = first != NULL ? first->position : 0;
	jobs_classify(d); /* as jobs_submit */
	jobs_admit_soon(d);
	return 0;
nomem:
	snprintf(cause, causelen, "out of memory");
	rc = PROTO_E_INTERNAL;
out:
	for (i = 0; v != NULL && i < n; i++)
		job_free(v[i]);
	if (v == NULL)
		job_free(t);
	free(v);
	return rc;
}

int
jobs_cancel(struct daemon *d, int64_t id, const char *who, char *cause,
            size_t causelen)
{
	struct jrec *r = jobs_find(d->jobs, id);
	const char *health;
	char at[24];

	if (r == NULL || !jrec_is_live(r)) {
		snprintf(cause, causelen, "job %" PRId64 " has already ended",
		         id);
		return PROTO_E_STATE;
	}
	jobs_clock_hms(clock_wall_ms(), at, sizeof at);
	if (r->j->state == JOB_QUEUED || (r->j->state == JOB_ADMITTED &&
	                                  r->tree == NULL && r->j->attached)) {
		/* Not started: it simply leaves the queue. While storage
		 * fails (admissions are held) it stays, unchanged. */
		if ((health = store_health(d->store)) != NULL) {
			snprintf(cause, causelen,
			         "storage error: %s; job %" PRId64
			         " is not cancelled, try again",
			         health, id);
			return PROTO_E_STORAGE;
		}
		jrec_end(
		    d, r, JOB_CANCELLED, "cancel",
		    jobs_fmt_detail("cancelled by %s at %s before it started",
		                    who, at));
		return jobs_ctl_end_recorded(d, r, cause, causelen);
	}
	/* A retry pending is abandoned: cancel is final, and is then why the
	 * job ends (a breach that was final stays the reason). */
	if (r->requeue) {
		r->requeue = 0;
		r->term_reason = NULL;
		free(r->term_detail);
		r->term_detail = NULL;
	}
	if (r->term_reason == NULL)
		jobs_kill_start(
		    d, r, "cancel",
		    jobs_fmt_detail("cancelled by %s at %s while %s", who, at,
		                    job_state_name(r->j->state)));
	return 0;
}
