/*
 * The job methods of PROTOCOL.md: submit, status, show, cancel, wait,
 * events, history of a job, logs, and the attached flow's job_pid,
 * job_exit and resume. Each reads its parameters, checks the peer against
 * the job (one helper, control_job_owner) and asks the job table
 * (jobs.h); answers are built from wire.h's objects.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <uv.h>

#include "answers.h"
#include "control.h"
#include "jobs.h"
#include "notify.h"
#include "platform.h"
#include "proto.h"
#include "store.h"
#include "units.h"
#include "wire.h"

#define JOBS_MAX_NAME 256
#define JOBS_MAX_CWD 4096

static int
param_id(const cJSON *params, int64_t *id, char *cause, size_t causelen)
{
	return proto_param_int(params, "id", 1, 1, INT64_MAX, id, cause,
	                       causelen);
}

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

/*
 * Answers are bounded (PROTOCOL.md, "status", "events"): a list answer is
 * built entry by entry, each encoded once into the page's text, so it
 * stops at CONTROL_ANSWER_MAX bytes. Version 1 answers whole or not at all
 * (-32004 naming the page size to use); a version 2 page ends there early,
 * or once it has taken CONTROL_PAGE_NS of the loop, its next_cursor saying
 * where the next one begins.
 */
#define CONTROL_ANSWER_MAX (4u << 20)
#define CONTROL_PAGE_NS (2u * 1000 * 1000)
#define STATUS_PAGE_DEFAULT 100
#define STATUS_PAGE_MAX 1000
#define EVENTS_PAGE_MAX 10000

struct page {
	char *text; /* "[" and the entries so far, comma-separated */
	size_t len, cap;
	int64_t limit; /* entries wanted (v2: the page size) */
	size_t n;
	uint64_t t0;    /* uv_hrtime() when this slice began */
	size_t n_slice; /* entries added in this slice */
	int v2;
	int over;  /* v1: the answer would pass the budget */
	int full;  /* v2: no more entries fit in this page */
	int yield; /* this slice has had its time: go on in the next */
};

/* A new slice of work on the page (page_begin starts the first). */
static void
page_slice(struct page *pg)
{
	pg->t0 = uv_hrtime();
	pg->n_slice = 0;
	pg->yield = 0;
}

/* Adds an entry (consumed) unless the page is full; 1 when added. */
static int
page_add(struct page *pg, cJSON *o)
{
	char *text, *t;
	size_t len;

	if (o == NULL)
		return 0;
	if (pg->n_slice > 0 && !pg->yield &&
	    uv_hrtime() - pg->t0 > CONTROL_PAGE_NS)
		pg->yield = 1;
	if (pg->full || pg->over || pg->yield || (int64_t)pg->n >= pg->limit) {
		if (!pg->over && !pg->yield)
			pg->full = 1;
		cJSON_Delete(o);
		return 0;
	}
	text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (text == NULL) {
		pg->over = 1;
		return 0;
	}
	len = strlen(text);
	if (pg->len + len + 2 > CONTROL_ANSWER_MAX) {
		if (!pg->v2)
			pg->over = 1;
		else if (pg->n > 0)
			pg->full = 1;
		if (pg->over || pg->full) {
			free(text);
			return 0;
		}
	}
	if (pg->len + len + 2 > pg->cap) {
		size_t cap = pg->cap * 2 > pg->len + len + 2
		                 ? pg->cap * 2
		                 : pg->len + len + 2;

		if ((t = realloc(pg->text, cap)) == NULL) {
			free(text);
			pg->over = 1;
			return 0;
		}
		pg->text = t;
		pg->cap = cap;
	}
	if (pg->n > 0)
		pg->text[pg->len++] = ',';
	memcpy(pg->text + pg->len, text, len);
	pg->len += len;
	pg->text[pg->len] = '\0';
	free(text);
	pg->n++;
	pg->n_slice++;
	return 1;
}

/* A page begun: the cursor is version 2's only. */
static int
page_begin(struct page *pg, int v2, int64_t limit, const char *cursor,
           char *cause, size_t causelen)
{
	memset(pg, 0, sizeof *pg);
	if (cursor != NULL && !v2) {
		snprintf(cause, causelen,
		         "invalid params: 'cursor' is for protocol version 2");
		return PROTO_E_PARAMS;
	}
	pg->v2 = v2;
	pg->limit = limit;
	page_slice(pg);
	pg->cap = 4096;
	if ((pg->text = malloc(pg->cap)) == NULL) {
		snprintf(cause, causelen, "out of memory");
		return PROTO_E_INTERNAL;
	}
	memcpy(pg->text, "[", 2);
	pg->len = 1;
	return 0;
}

static void
page_free(struct page *pg)
{
	free(pg->text);
	pg->text = NULL;
}

/* The page's entries as the JSON array they are (consumed). */
static cJSON *
page_array(struct page *pg)
{
	cJSON *a;

	pg->text[pg->len++] = ']';
	pg->text[pg->len] = '\0';
	a = cJSON_CreateRaw(pg->text);
	page_free(pg);
	return a;
}

/* A version 1 answer built in slices, at its end: {"member": [page]}. */
static int
page_result(struct page *pg, const char *member, struct answers_buf *out,
            char *cause, size_t causelen)
{
	if (answers_append(out, "{\"", 2) != 0 ||
	    answers_append(out, member, strlen(member)) != 0 ||
	    answers_append(out, "\":", 2) != 0 ||
	    answers_append(out, pg->text, pg->len) != 0 ||
	    answers_append(out, "]}", 2) != 0) {
		snprintf(cause, causelen, "out of memory");
		return PROTO_E_INTERNAL;
	}
	return 0;
}

/* A version 1 answer past the budget: the page goes, the error names the
 * way out. */
static int
page_over(struct page *pg, const char *what, char *cause, size_t causelen)
{
	page_free(pg);
	snprintf(cause, causelen,
	         "answer larger than %u bytes: use protocol version 2 and "
	         "page %s with limit (at most %d per page)",
	         CONTROL_ANSWER_MAX, what,
	         strcmp(what, "status") == 0 ? STATUS_PAGE_MAX
	                                     : EVENTS_PAGE_MAX);
	return PROTO_E_LIMIT;
}

struct ended_ctx {
	struct page *pg;
	uid_t viewer;
	int64_t last_ms, last_id; /* the last ended job added */
};

static int
ended_cb(void *arg, struct job *j)
{
	struct ended_ctx *c = arg;

	int added =
	    page_add(c->pg, c->pg->v2 ? wire_job_ended_list(j, c->viewer)
	                              : wire_job_ended(j, c->viewer, 0));

	if (added) {
		c->last_ms = j->ended_ms;
		c->last_id = j->id;
	}
	job_free(j);
	return !added; /* full: the rest is not read */
}

/*
 * A v2 cursor names where the previous page ended: "l<id>.<index>" in the
 * table's list (live jobs, then those ended but not written yet), the last
 * job's id and its place; "e<ended_ms>.<id>" among the ended jobs of the
 * database, newest first. A job that stays put is never missed nor
 * repeated: the next page begins after the cursor's job, found by its id,
 * or, when that job has left the list meanwhile, at the place it had.
 */
static int
cursor_parse(const char *cur, char *phase, int64_t *a, int64_t *b)
{
	long long x, y;
	int used = 0;

	if ((cur[0] != 'l' && cur[0] != 'e') ||
	    sscanf(cur + 1, "%lld.%lld%n", &x, &y, &used) != 2 ||
	    cur[1 + used] != '\0' || x < 0 || y < 0)
		return -1;
	*phase = cur[0];
	*a = x;
	*b = y;
	return 0;
}

/* Where a status answer is: a version 2 page, or the pages a version 1
 * answer is built of, a slice at a time (answers.h). */
struct status_walk {
	uid_t viewer;
	int all, v2;
	int ended; /* the ended part alone: no walk through the queue */
	int64_t ended_left; /* v1: ended jobs still wanted */
	char cursor[64];    /* where the next page begins ("": the start) */
	int more;           /* a next page exists */
	struct page pg;     /* v1: the answer so far */
};

/* One page from w->cursor into pg: live jobs (unless w->ended), then with
 * all the ended ones; it ends when pg is full, or has had its slice of
 * time. Leaves w->cursor after the last entry added, and w->more. */
static int
status_walk(struct daemon *d, struct status_walk *w, struct page *pg,
            char *cause, size_t causelen)
{
	struct jobs_view *v = NULL;
	struct ended_ctx ctx;
	char phase = 'l';
	int64_t ca = 0, cb = 0;
	size_t n = 0, i, start = 0, before;
	int rc = 0;

	if (w->cursor[0] != '\0' &&
	    cursor_parse(w->cursor, &phase, &ca, &cb) != 0) {
		snprintf(cause, causelen,
		         "invalid params: 'cursor' is not one this daemon "
		         "gave");
		return PROTO_E_PARAMS;
	}
	if (phase == 'l' && !w->ended && jobs_list(d, w->all, &v, &n) != 0) {
		snprintf(cause, causelen, "out of memory");
		return PROTO_E_INTERNAL;
	}
	if (phase == 'l' && w->cursor[0] != '\0') {
		start = (size_t)cb < n ? (size_t)cb : n;
		for (i = 0; i < n; i++)
			if (v[i].j->id == ca) {
				start = i + 1;
				break;
			}
	}
	for (i = start; phase == 'l' && i < n; i++) {
		int64_t id = v[i].j->id;
		cJSON *o;

		/* Version 1 shows argv, which the table does not keep. */
		if (!w->v2 && wire_may_see(w->viewer, v[i].j) &&
		    (rc = jobs_view_args(d, &v[i], cause, causelen)) != 0)
			break;
		o = w->v2 ? wire_job_list(&v[i], w->viewer)
		          : wire_job(&v[i], w->viewer, 0);
		jobs_view_free(&v[i]);
		if (!page_add(pg, o))
			break;
		snprintf(w->cursor, sizeof w->cursor, "l%" PRId64 ".%zu", id,
		         i);
	}
	free(v);
	if (rc != 0)
		return rc;
	/* The ended jobs of the database, when the page has room: a page
	 * holding the last live job goes on with the first ended one. */
	if (w->all && !pg->full && !pg->yield && !pg->over &&
	    (w->v2 || w->ended_left > 0)) {
		memset(&ctx, 0, sizeof ctx);
		ctx.pg = pg;
		ctx.viewer = w->viewer;
		if (phase == 'l') {
			ca = INT64_MAX;
			cb = INT64_MAX;
		}
		before = pg->n;
		/* v2: one more than fits says whether a next page exists. */
		if (store_jobs_ended_before(
		        d->store, ca, cb,
		        w->v2 ? pg->limit - (int64_t)pg->n + 1 : w->ended_left,
		        ended_cb, &ctx) < 0) {
			snprintf(cause, causelen, "storage error reading jobs");
			return PROTO_E_STORAGE;
		}
		if (ctx.last_id > 0)
			snprintf(w->cursor, sizeof w->cursor,
			         "e%" PRId64 ".%" PRId64, ctx.last_ms,
			         ctx.last_id);
		if (!w->v2)
			w->ended_left -= (int64_t)(pg->n - before);
	}
	w->more = (pg->full || pg->yield) && w->cursor[0] != '\0' &&
	          (w->v2 || !pg->full);
	return 0;
}

static void
status_free(void *state)
{
	struct status_walk *w = state;

	page_free(&w->pg);
	free(w);
}

/* Version 1: the pages one after the other, a slice each, into one
 * answer; refused whole past CONTROL_ANSWER_MAX. */
static int
status_fill(struct daemon *d, void *state, struct answers_buf *out, char *cause,
            size_t causelen)
{
	struct status_walk *w = state;
	int rc;

	page_slice(&w->pg);
	if ((rc = status_walk(d, w, &w->pg, cause, causelen)) != 0)
		return rc;
	if (w->pg.over)
		return page_over(&w->pg, "status", cause, causelen);
	if (w->more)
		return 1;
	return page_result(&w->pg, "jobs", out, cause, causelen);
}

static const struct answers_ops status_ops = {status_fill, status_free};

int
control_status(struct daemon *d, const struct peer *p, const cJSON *req_id,
               const cJSON *params, cJSON **result, char *cause,
               size_t causelen)
{
	struct status_walk *w;
	const char *cursor = NULL;
	int all = 0, ended = 0, v2 = p->version >= 2, rc;
	int64_t limit = v2 ? STATUS_PAGE_DEFAULT : 50;

	if ((rc = proto_param_bool(params, "all", 0, &all, cause, causelen)) <
	        0 ||
	    (rc = proto_param_bool(params, "ended", 0, &ended, cause,
	                           causelen)) < 0 ||
	    (rc = proto_param_int(params, "limit", 0, v2 ? 1 : 0,
	                          v2 ? STATUS_PAGE_MAX : 100000, &limit, cause,
	                          causelen)) < 0 ||
	    (rc = proto_param_string(params, "cursor", 0, 64, &cursor, cause,
	                             causelen)) < 0)
		return rc;
	if ((w = calloc(1, sizeof *w)) == NULL) {
		snprintf(cause, causelen, "out of memory");
		return PROTO_E_INTERNAL;
	}
	w->viewer = p->uid;
	w->all = all || ended;
	w->ended = ended;
	w->v2 = v2;
	w->ended_left = limit;
	if (cursor != NULL)
		snprintf(w->cursor, sizeof w->cursor, "%s", cursor);
	/* v1: every live job, then up to limit ended ones. */
	if ((rc = page_begin(&w->pg, v2, v2 ? limit : INT64_MAX, cursor, cause,
	                     causelen)) != 0) {
		free(w);
		return rc;
	}
	if (!v2) {
		if ((rc = answers_start(d, p, req_id, &status_ops, w, cause,
		                        causelen)) != 0)
			return rc;
		return CONTROL_DEFERRED;
	}
	if ((rc = status_walk(d, w, &w->pg, cause, causelen)) != 0) {
		status_free(w);
		return rc;
	}
	*result = cJSON_CreateObject();
	cJSON_AddItemToObject(*result, "jobs", page_array(&w->pg));
	if (w->more)
		cJSON_AddStringToObject(*result, "next_cursor", w->cursor);
	else
		cJSON_AddNullToObject(*result, "next_cursor");
	status_free(w);
	return 0;
}

static void add_stages(struct daemon *d, int64_t id, cJSON *job);
static void add_learned(struct daemon *d, cJSON *job);
static void add_groups_dropped(struct daemon *d, const struct peer *p,
                               int64_t id, cJSON *job);

int
control_show(struct daemon *d, const struct peer *p, const cJSON *req_id,
             const cJSON *params, cJSON **result, char *cause, size_t causelen)
{
	int64_t id;
	int env = 0, rc;

	if ((rc = param_id(params, &id, cause, causelen)) != 0 ||
	    (rc = proto_param_bool(params, "env", 0, &env, cause, causelen)) <
	        0)
		return rc;
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
	const char *name;
	int64_t id;
	int rc;

	if ((rc = param_id(params, &id, cause, causelen)) != 0 ||
	    (rc = proto_param_string(params, "name", 1, JOBS_MAX_NAME, &name,
	                             cause, causelen)) != 0)
		return rc;
	if (name[0] == '\0') {
		snprintf(cause, causelen,
		         "name: a stage name may not be empty");
		return PROTO_E_PARAMS;
	}
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
	int64_t id;
	int rc;
	char who[64];

	if ((rc = param_id(params, &id, cause, causelen)) != 0)
		return rc;
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

int
control_wait(struct daemon *d, const struct peer *p, const cJSON *req_id,
             const cJSON *params, cJSON **result, char *cause, size_t causelen)
{
	struct jobs_view v;
	int64_t id;
	int rc, ended;

	if ((rc = param_id(params, &id, cause, causelen)) != 0)
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

struct events_ctx {
	struct page *pg;
	uid_t viewer;
	int64_t job_id; /* this job's alone; 0: all */
	int64_t last;   /* the last event's id in the answer */
};

static int
events_cb(void *arg, const struct store_event *e)
{
	struct events_ctx *c = arg;

	if (!page_add(c->pg, wire_event(e, c->viewer)))
		return 1; /* full: the rest is not read */
	c->last = e->id;
	return 0;
}

/* Version 2 takes the cursor of events as the id of the last one: a
 * decimal string, as next_cursor gives it; newest first (before_id) it is
 * "b" and the id of the oldest one so far. */
static int
events_cursor(const char *cur, int64_t *after, int64_t *before)
{
	long long x;
	int used = 0, b = cur[0] == 'b';

	if (cur[b] < '0' || cur[b] > '9' ||
	    sscanf(cur + b, "%lld%n", &x, &used) != 1 ||
	    cur[b + used] != '\0' || x < 0 || (b && x == 0))
		return -1;
	*(b ? before : after) = x;
	return 0;
}

/* A page of events: oldest first after ctx->last, or newest first
 * before w->before (updated to the oldest one added). */
static int
events_read(struct daemon *d, int64_t before, struct events_ctx *ctx,
            int64_t limit)
{
	if (before > 0)
		return store_events_before(d->store, before, ctx->job_id, limit,
		                           events_cb, ctx);
	return store_events(d->store, ctx->last, ctx->job_id, limit, events_cb,
	                    ctx);
}

/* A version 1 events answer, built a slice at a time. */
struct events_walk {
	struct events_ctx ctx;
	struct page pg;
	int64_t left;   /* events still wanted */
	int64_t before; /* newest first, before this id (0: oldest first) */
	uint64_t client_id;
	int follow;
};

static void
events_free(void *state)
{
	struct events_walk *w = state;

	page_free(&w->pg);
	free(w);
}

static int
events_fill(struct daemon *d, void *state, struct answers_buf *out, char *cause,
            size_t causelen)
{
	struct events_walk *w = state;
	size_t before = w->pg.n;

	page_slice(&w->pg);
	w->ctx.pg = &w->pg;
	if (w->before > 0 && w->pg.n > 0)
		w->before = w->ctx.last; /* go on below the oldest so far */
	if (events_read(d, w->before, &w->ctx, w->left) < 0) {
		snprintf(cause, causelen, "storage error reading events");
		return PROTO_E_STORAGE;
	}
	if (w->pg.over)
		return page_over(&w->pg, "events", cause, causelen);
	w->left -= (int64_t)(w->pg.n - before);
	if (w->pg.yield && w->left > 0)
		return 1;
	/* The follow begins after the last event of the answer; what it
	 * sends comes after the answer (notify sends it later). */
	if (w->follow &&
	    notify_follow_events(d, w->client_id, w->ctx.viewer, w->ctx.last,
	                         w->ctx.job_id) != 0) {
		snprintf(cause, causelen, "out of memory");
		return PROTO_E_INTERNAL;
	}
	return page_result(&w->pg, "events", out, cause, causelen);
}

static const struct answers_ops events_ops = {events_fill, events_free};

int
control_events(struct daemon *d, const struct peer *p, const cJSON *req_id,
               const cJSON *params, cJSON **result, char *cause,
               size_t causelen)
{
	struct events_walk *w;
	const char *cursor = NULL;
	int64_t after = 0, before = 0, job = 0, limit = 100;
	int follow = 0, v2 = p->version >= 2, rc;
	char next[32];

	if ((rc = proto_param_int(params, "after_id", 0, 0, INT64_MAX, &after,
	                          cause, causelen)) < 0 ||
	    (rc = proto_param_int(params, "before_id", 0, 1, INT64_MAX, &before,
	                          cause, causelen)) < 0 ||
	    (rc = proto_param_string(params, "cursor", 0, 32, &cursor, cause,
	                             causelen)) < 0 ||
	    (rc = proto_param_int(params, "job_id", 0, 1, INT64_MAX, &job,
	                          cause, causelen)) < 0 ||
	    (rc = proto_param_int(params, "limit", 0, 1, EVENTS_PAGE_MAX,
	                          &limit, cause, causelen)) < 0 ||
	    (rc = proto_param_bool(params, "follow", 0, &follow, cause,
	                           causelen)) < 0)
		return rc;
	if (cursor != NULL &&
	    (cJSON_GetObjectItemCaseSensitive(params, "after_id") != NULL ||
	     cJSON_GetObjectItemCaseSensitive(params, "before_id") != NULL ||
	     events_cursor(cursor, &after, &before) != 0)) {
		snprintf(cause, causelen,
		         "invalid params: 'cursor' must be a next_cursor this "
		         "daemon gave, without after_id or before_id");
		return PROTO_E_PARAMS;
	}
	if (before > 0 && (after > 0 || follow)) {
		snprintf(cause, causelen,
		         "invalid params: 'before_id' (newest first) cannot go "
		         "with after_id or follow");
		return PROTO_E_PARAMS;
	}
	if ((w = calloc(1, sizeof *w)) == NULL) {
		snprintf(cause, causelen, "out of memory");
		return PROTO_E_INTERNAL;
	}
	if ((rc = page_begin(&w->pg, v2, limit, cursor, cause, causelen)) !=
	    0) {
		free(w);
		return rc;
	}
	w->ctx.pg = &w->pg;
	w->ctx.viewer = p->uid;
	w->ctx.job_id = job;
	w->ctx.last = after;
	w->left = limit;
	w->before = before;
	w->client_id = p->client_id;
	w->follow = follow;
	if (!v2) {
		if ((rc = answers_start(d, p, req_id, &events_ops, w, cause,
		                        causelen)) != 0)
			return rc;
		return CONTROL_DEFERRED;
	}
	/* One more than the page says whether a next one exists. */
	if (events_read(d, before, &w->ctx, limit + 1) < 0) {
		events_free(w);
		snprintf(cause, causelen, "storage error reading events");
		return PROTO_E_STORAGE;
	}
	if (follow && notify_follow_events(d, p->client_id, p->uid, w->ctx.last,
	                                   w->ctx.job_id) != 0) {
		events_free(w);
		snprintf(cause, causelen, "out of memory");
		return PROTO_E_INTERNAL;
	}
	*result = cJSON_CreateObject();
	cJSON_AddItemToObject(*result, "events", page_array(&w->pg));
	snprintf(next, sizeof next, "%s%" PRId64, before > 0 ? "b" : "",
	         w->ctx.last);
	if ((w->pg.full || w->pg.yield) && !follow && w->pg.n > 0)
		cJSON_AddStringToObject(*result, "next_cursor", next);
	else
		cJSON_AddNullToObject(*result, "next_cursor");
	events_free(w);
	return 0;
}

static cJSON *
mma_json(double mn, double avg, double mx)
{
	cJSON *o = cJSON_CreateObject();

	proto_add_int(o, "min", (int64_t)mn);
	proto_add_int(o, "avg", (int64_t)avg);
	proto_add_int(o, "max", (int64_t)mx);
	return o;
}

/* A job's history answer: its buckets read, written JOB_HISTORY_PART
 * at a time. */
#define JOB_HISTORY_PART 500
struct job_history_answer {
	struct job_bucket *b;
	size_t n, i;
	struct store_stage *st;
	size_t nst;
	int64_t step;
	char head[96];
};

static void
job_history_free(void *state)
{
	struct job_history_answer *h = state;

	store_stages_free(h->st, h->nst);
	free(h->b);
	free(h);
}

static int
job_history_fill(struct daemon *d, void *state, struct answers_buf *out,
                 char *cause, size_t causelen)
{
	struct job_history_answer *h = state;
	size_t end =
	    h->i + JOB_HISTORY_PART < h->n ? h->i + JOB_HISTORY_PART : h->n;
	int rc = 0;

	(void)d;
	if (h->i == 0)
		rc = answers_append(out, h->head, strlen(h->head));
	for (; h->i < end && rc == 0; h->i++) {
		const struct job_bucket *b = &h->b[h->i];
		const char *stage =
		    store_stage_at(h->st, h->nst, b->ts_ms,
		                   b->ts_ms + (h->step > 0 ? h->step : 1));
		cJSON *o = cJSON_CreateObject();

		proto_add_int(o, "ts_ms", b->ts_ms);
		proto_add_int(o, "n", b->n);
		cJSON_AddItemToObject(o, "footprint_bytes",
		                      mma_json(b->footprint_min,
		                               b->footprint_avg,
		                               b->footprint_max));
		cJSON_AddItemToObject(
		    o, "swap_bytes",
		    mma_json(b->swap_min, b->swap_avg, b->swap_max));
		if (stage != NULL)
			cJSON_AddStringToObject(o, "stage", stage);
		else
			cJSON_AddNullToObject(o, "stage");
		if (h->i > 0)
			rc = answers_append(out, ",", 1);
		if (rc == 0)
			rc = answers_append_json(out, o);
		else
			cJSON_Delete(o);
	}
	if (rc == 0 && h->i == h->n)
		rc = answers_append(out, "]}", 2);
	if (rc != 0) {
		snprintf(cause, causelen, "out of memory");
		return PROTO_E_INTERNAL;
	}
	return h->i < h->n;
}

static const struct answers_ops job_history_ops = {job_history_fill,
                                                   job_history_free};

int
control_job_history(struct daemon *d, const struct peer *p, const cJSON *req_id,
                    const cJSON *params, cJSON **result, char *cause,
                    size_t causelen)
{
	struct job_bucket *b = NULL;
	struct job_history_answer *h;
	struct jobs_view v;
	int64_t id, since = 0, until = INT64_MAX, step = -1, lo, hi;
	const struct job *j;
	size_t n = 0;
	char scause[256];
	int rc;

	if ((rc = proto_param_int(params, "job_id", 1, 1, INT64_MAX, &id, cause,
	                          causelen)) != 0 ||
	    (rc = proto_param_int(params, "since_ms", 0, 0, INT64_MAX, &since,
	                          cause, causelen)) < 0 ||
	    (rc = proto_param_int(params, "until_ms", 0, 0, INT64_MAX, &until,
	                          cause, causelen)) < 0 ||
	    (rc = proto_param_int(params, "step_ms", 0, 0, INT64_MAX, &step,
	                          cause, causelen)) < 0)
		return rc;
	if ((rc = jobs_get(d, id, &v, cause, causelen)) != 0)
		return rc;
	if (step < 0) {
		/* As for system history: about 60 buckets over the span asked,
		 * or over the job's life, never finer than the samples. */
		j = v.j;
		lo = since > 0 ? since : j->submitted_ms;
		hi = until != INT64_MAX ? until
		     : j->ended_ms > 0  ? j->ended_ms
		                        : now_ms();
		step = hi > lo ? (hi - lo) / 60 : 0;
		if (step < d->cfg.interval_ms)
			step = d->cfg.interval_ms;
	}
	jobs_view_free(&v);
	if ((rc = control_history_flush(d, id, until, cause, causelen)) != 0)
		return rc;
	if ((rc = store_job_history(d->store, id, since, until, step, &b, &n,
	                            scause, sizeof scause)) != 0) {
		/* Too many buckets is the protocol's limit, not a failing
		 * database: asking again would not help. */
		snprintf(cause, causelen, "%s: %s",
		         rc == -E2BIG ? "limit reached" : "storage error",
		         scause);
		return rc == -E2BIG ? PROTO_E_LIMIT : PROTO_E_STORAGE;
	}
	if ((h = calloc(1, sizeof *h)) == NULL) {
		free(b);
		snprintf(cause, causelen, "out of memory");
		return PROTO_E_INTERNAL;
	}
	if (jobs_stages(d, id, &h->st, &h->nst) != 0) {
		h->st = NULL;
		h->nst = 0;
	}
	h->b = b;
	h->n = n;
	h->step = step;
	snprintf(h->head, sizeof h->head,
	         "{\"job_id\":%" PRId64 ",\"step_ms\":%" PRId64
	         ",\"buckets\":[",
	         id, step);
	/* Read whole (its bound is the protocol's), written a slice at a
	 * time: the encoding is what took the loop's time. */
	if ((rc = answers_start(d, p, req_id, &job_history_ops, h, cause,
	                        causelen)) != 0)
		return rc;
	return CONTROL_DEFERRED;
}

/* The job, live: job_pid, job_exit. */
static int
job_live(struct daemon *d, int64_t id, struct jobs_view *v, char *cause,
         size_t causelen)
{
	int rc;

	if ((rc = jobs_get(d, id, v, cause, causelen)) != 0)
		return rc;
	if (!v->live) {
		jobs_view_free(v);
		snprintf(cause, causelen, "job %" PRId64 " has ended", id);
		return PROTO_E_STATE;
	}
	return 0;
}

/* job_pid: the attached client started its command. */
int
control_job_pid(struct daemon *d, const struct peer *p, const cJSON *req_id,
                const cJSON *params, cJSON **result, char *cause,
                size_t causelen)
{
	struct proc_info pi, leader;
	struct jobs_view v;
	int64_t id, pid;
	int rc, attached, tree = 0;
	enum job_state state;

	if ((rc = param_id(params, &id, cause, causelen)) != 0 ||
	    (rc = proto_param_int(params, "pid", 1, 2, INT32_MAX, &pid, cause,
	                          causelen)) != 0 ||
	    (rc = proto_param_bool(params, "tree", 0, &tree, cause, causelen)) <
	        0)
		return rc;
	if ((rc = job_live(d, id, &v, cause, causelen)) != 0)
		return rc;
	/* Authorisation first: whose job, whose process. Only the owner
	 * runs it, root included. */
	rc = p->uid != v.j->uid;
	attached = v.j->attached;
	state = v.j->state;
	jobs_view_free(&v);
	if (rc) {
		snprintf(cause, causelen, "job %" PRId64 " is not yours", id);
		return PROTO_E_PERM;
	}
	if (platform_proc_info((pid_t)pid, &pi) != 0) {
		snprintf(cause, causelen, "no process %" PRId64, pid);
		return PROTO_E_NOPROC;
	}
	if (p->uid != 0 && pi.uid != p->uid) {
		snprintf(cause, causelen,
		         "process %" PRId64 " belongs to another user", pid);
		return PROTO_E_PERM;
	}
	/* The job's whole process group is signalled, as root: a process of
	 * the caller's inside another user's group (a root service's worker
	 * running as this user) must not hand the caller that group. With
	 * tree no group is followed or signalled: the pid and its
	 * descendants only. */
	if (!tree && p->uid != 0 && pi.pgid != (pid_t)pid &&
	    (platform_proc_info(pi.pgid, &leader) != 0 ||
	     leader.uid != p->uid)) {
		snprintf(cause, causelen,
		         "process %" PRId64 " is in process group %d, which is "
		         "not yours: start the command in a group of its own",
		         pid, (int)pi.pgid);
		return PROTO_E_PERM;
	}
	if (!attached || state != JOB_ADMITTED) {
		snprintf(cause, causelen,
		         "job %" PRId64 " is %s, not an admitted attached job",
		         id, job_state_name(state));
		return PROTO_E_STATE;
	}
	if ((rc = jobs_attach(d, id, p->client_id, (pid_t)pid,
	                      tree ? 0 : pi.pgid, pi.start_time)) != 0) {
		snprintf(cause, causelen, "job %" PRId64 " has ended", id);
		return rc;
	}
	*result = cJSON_CreateObject();
	return 0;
}

int
control_job_exit(struct daemon *d, const struct peer *p, const cJSON *req_id,
                 const cJSON *params, cJSON **result, char *cause,
                 size_t causelen)
{
	struct jobs_view v;
	int64_t id, code = -1, sig = -1;
	int rc;

	if ((rc = param_id(params, &id, cause, causelen)) != 0)
		return rc;
	if ((rc = proto_param_int(params, "exit_code", 0, 0, 255, &code, cause,
	                          causelen)) < 0 ||
	    (rc = proto_param_int(params, "signal", 0, 1, 128, &sig, cause,
	                          causelen)) < 0)
		return rc;
	if ((code < 0) == (sig < 0)) {
		snprintf(cause, causelen,
		         "exactly one of exit_code and signal is required");
		return PROTO_E_PARAMS;
	}
	if ((rc = jobs_get(d, id, &v, cause, causelen)) != 0)
		return rc;
	if (p->uid != v.j->uid || (v.live && v.client_id != p->client_id)) {
		jobs_view_free(&v);
		snprintf(cause, causelen,
		         "job %" PRId64 " is not attached to this connection",
		         id);
		return PROTO_E_PERM;
	}
	if (!v.live) {
		/* Ended: by the daemon (a kill, once its process was gone)
		 * or otherwise. Its owner learns how; nothing changes. */
		*result = wire_job(&v, p->uid, 0);
		jobs_view_free(&v);
		return 0;
	}
	if (jobs_exit_owed(d, id)) {
		/* The daemon already took this attempt's end (requeued it):
		 * the report is answered with the job as it is now. */
		jobs_view_free(&v);
		return answer_job(d, p, id, 0, result, cause, causelen);
	}
	if (v.j->state != JOB_RUNNING && v.j->state != JOB_ADMITTED) {
		snprintf(cause, causelen, "job %" PRId64 " is %s, not running",
		         id, job_state_name(v.j->state));
		jobs_view_free(&v);
		return PROTO_E_STATE;
	}
	jobs_view_free(&v);
	if ((rc = jobs_exit(d, id, (int)code, (int)sig, cause, causelen)) != 0)
		return rc;
	/* Ended, or requeued for another attempt. */
	return answer_job(d, p, id, 0, result, cause, causelen);
}

int
control_resume(struct daemon *d, const struct peer *p, const cJSON *req_id,
               const cJSON *params, cJSON **result, char *cause,
               size_t causelen)
{
	struct jobs_view v;
	int64_t id;
	int rc;

	if ((rc = param_id(params, &id, cause, causelen)) != 0)
		return rc;
	if ((rc = control_job_owner(d, p, id, &v, cause, causelen)) != 0)
		return rc;
	if (!v.live) {
		/* Ended, detached or attached, still in the table or not:
		 * the client learns how (PROTOCOL.md, resume). */
		*result = wire_job(&v, p->uid, 0);
		jobs_view_free(&v);
		return 0;
	}
	if (!v.j->attached) {
		jobs_view_free(&v);
		snprintf(cause, causelen,
		         "job %" PRId64 " is detached: nothing to resume", id);
		return PROTO_E_STATE;
	}
	jobs_resume(d, id, p->client_id);
	jobs_view_free(&v);
	return answer_job(d, p, id, 0, result, cause, causelen);
}

int
control_logs(struct daemon *d, const struct peer *p, const cJSON *req_id,
             const cJSON *params, cJSON **result, char *cause, size_t causelen)
{
	struct jobs_view v;
	int64_t id, offset = 0;
	int follow = 0, rc, attached;

	if ((rc = param_id(params, &id, cause, causelen)) != 0 ||
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
