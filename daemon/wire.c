/*
 * The wire objects (wire.h): Job, Event and Sample as PROTOCOL.md defines
 * them, and who may see what of a job.
 */
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>

#include <uv.h>

#include "job-fields.h"
#include "proto.h"
#include "wire.h"

int
wire_may_see(uid_t viewer, const struct job *j)
{
	return viewer == 0 || viewer == j->uid;
}

/* The names of recent uids: an events page names up to 10,000 users, and
 * each getpwuid_r may read the whole of /etc/passwd. A renamed user shows
 * the old name for up to WIRE_NAME_TTL_NS. */
#define WIRE_NAMES 16
#define WIRE_NAME_TTL_NS (10ull * 1000 * 1000 * 1000)
static struct {
	uid_t uid;
	uint64_t at_ns; /* 0: empty */
	char name[64];
} wire_names[WIRE_NAMES];
static unsigned wire_names_next;

void
wire_user_name(uid_t uid, char *buf, size_t len)
{
	struct passwd pw, *res = NULL;
	uint64_t now = uv_hrtime();
	char tmp[2048];
	unsigned i;

	for (i = 0; i < WIRE_NAMES; i++)
		if (wire_names[i].at_ns != 0 && wire_names[i].uid == uid &&
		    now - wire_names[i].at_ns < WIRE_NAME_TTL_NS) {
			snprintf(buf, len, "%s", wire_names[i].name);
			return;
		}
	if (getpwuid_r(uid, &pw, tmp, sizeof tmp, &res) == 0 && res != NULL)
		snprintf(buf, len, "%s", pw.pw_name);
	else
		snprintf(buf, len, "%u", (unsigned)uid);
	i = wire_names_next++ % WIRE_NAMES;
	wire_names[i].uid = uid;
	wire_names[i].at_ns = now;
	snprintf(wire_names[i].name, sizeof wire_names[i].name, "%s", buf);
}

/* What of another user's event detail any caller may read, by kind
 * (PROTOCOL.md, events): stage names are public as job names are, and a
 * stage's numbers and a breach's numbers are those the Job's public `kill`
 * already shows. Kinds not listed (killed, on_end, updated, ...) may carry
 * the job's own text or settings, so their detail stays the owner's and
 * root's; so does the breach's sentence, which may quote a stage name
 * beside the job's numbers and is the owner's end_detail. */
static const char *const wire_public_stage[] = {"name", NULL};
static const char *const wire_public_stage_end[] = {"name",
                                                    "started_at_ms",
                                                    "ended_at_ms",
                                                    "footprint_peak_bytes",
                                                    "swap_growth_bytes",
                                                    NULL};
static const char *const wire_public_breach[] = {
    "attempt",         "requeued", "swap_growth_bytes", "swap_budget_bytes",
    "swap_used_bytes", "free_pct", "footprint_bytes",   "pressure",
    "sampled_at_ms",   NULL};
static const struct {
	const char *kind;
	const char *const *members;
} wire_public_details[] = {
    {"stage", wire_public_stage},
    {"stage_end", wire_public_stage_end},
    {"breach", wire_public_breach},
};

/* The public part of detail (a parsed object, consumed) for an event of
 * kind, or NULL when none of it is public. */
static cJSON *
wire_public_detail(const char *kind, cJSON *detail)
{
	const char *const *m = NULL;
	cJSON *o;
	size_t i;

	for (i = 0;
	     i < sizeof wire_public_details / sizeof *wire_public_details; i++)
		if (strcmp(kind, wire_public_details[i].kind) == 0)
			m = wire_public_details[i].members;
	if (m == NULL || !cJSON_IsObject(detail) ||
	    (o = cJSON_CreateObject()) == NULL) {
		cJSON_Delete(detail);
		return NULL;
	}
	for (; *m != NULL; m++) {
		cJSON *v = cJSON_DetachItemFromObjectCaseSensitive(detail, *m);
		if (v != NULL)
			cJSON_AddItemToObject(o, *m, v);
	}
	cJSON_Delete(detail);
	return o;
}

cJSON *
wire_event(const struct store_event *e, uid_t viewer_uid)
{
	cJSON *o = cJSON_CreateObject(), *detail = NULL;
	char user[64];

	if (o == NULL)
		return NULL;
	proto_add_int(o, "id", e->id);
	proto_add_int(o, "ts_ms", e->ts_ms);
	if (e->job_id > 0) {
		proto_add_int(o, "job_id", e->job_id);
		wire_user_name(e->uid, user, sizeof user);
		cJSON_AddStringToObject(o, "user", user);
	} else {
		cJSON_AddNullToObject(o, "job_id");
		cJSON_AddNullToObject(o, "user");
	}
	cJSON_AddStringToObject(o, "kind", e->kind);
	if (e->detail != NULL) {
		detail = cJSON_Parse(e->detail);
		if (e->job_id > 0 && viewer_uid != 0 && viewer_uid != e->uid)
			detail = wire_public_detail(e->kind, detail);
	}
	if (detail != NULL)
		cJSON_AddItemToObject(o, "detail", detail);
	else
		cJSON_AddNullToObject(o, "detail");
	return o;
}

static cJSON *
strv_json(char *const *v)
{
	cJSON *a = cJSON_CreateArray();

	for (; a != NULL && v != NULL && *v != NULL; v++)
		cJSON_AddItemToArray(a, cJSON_CreateString(*v));
	return a;
}

const char *
wire_waiting_for(enum admit_wait w, int64_t after, char *buf, size_t len)
{
	if (w != ADMIT_WAIT_AFTER || after <= 0)
		return admit_wait_name(w);
	snprintf(buf, len, "after %" PRId64, after);
	return buf;
}

/* What the writers of the Job's members look at. */
struct wire_ctx {
	const struct job *j;
	const struct jobs_view *r; /* the live view, or NULL */
	const struct job *args;    /* where argv and env are */
	int ended, visible, with_env, list;
};

/* The members the table marks J_FN: each computed from the live queue,
 * or shown only in some states. */
static void
wire_job_position(cJSON *o, const struct wire_ctx *c)
{
	job_add_int_or_null(o, "position", c->r ? c->r->position : 0,
	                    c->r != NULL && c->j->state == JOB_QUEUED &&
	                        c->r->position > 0);
}

static void
wire_job_waiting_for(cJSON *o, const struct wire_ctx *c)
{
	char why[48];

	if (c->r != NULL && c->j->state == JOB_QUEUED)
		cJSON_AddStringToObject(o, "waiting_for",
		                        wire_waiting_for(c->r->wait,
		                                         c->r->wait_after, why,
		                                         sizeof why));
}

/* Each attempt (PROTOCOL.md, Job: attempts): the records of those before
 * this one, then this one as it stands. */
static void
wire_job_attempts(cJSON *o, const struct wire_ctx *c)
{
	cJSON *a = job_attempts_json(c->j, c->ended, c->j->ended_ms);

	if (a != NULL)
		cJSON_AddItemToObject(o, "attempts", a);
}

static void
wire_waiting_on_array(cJSON *o, const struct jobs_view *v)
{
	cJSON *a = cJSON_AddArrayToObject(o, "waiting_on"), *w;
	int i;

	for (i = 0; a != NULL && i < v->nwait_on; i++) {
		if ((w = cJSON_CreateObject()) == NULL)
			break;
		proto_add_int(w, "id", v->wait_on[i].id);
		cJSON_AddStringToObject(
		    w, "user",
		    v->wait_on[i].user != NULL ? v->wait_on[i].user : "");
		cJSON_AddStringToObject(
		    w, "name",
		    v->wait_on[i].name != NULL ? v->wait_on[i].name : "");
		cJSON_AddItemToArray(a, w);
	}
}

void
wire_add_waiting_on(cJSON *o, const struct jobs_view *v)
{
	wire_waiting_on_array(o, v);
	job_add_int_or_null(o, "waiting_until_ms", v->wait_until_ms,
	                    v->wait_until_ms > 0);
}

/* While queued: the jobs it waits behind, public as those jobs are. */
static void
wire_job_waiting_on(cJSON *o, const struct wire_ctx *c)
{
	if (c->r != NULL && c->j->state == JOB_QUEUED)
		wire_waiting_on_array(o, c->r);
}

static void
wire_job_waiting_until_ms(cJSON *o, const struct wire_ctx *c)
{
	if (c->r != NULL && c->j->state == JOB_QUEUED)
		job_add_int_or_null(o, "waiting_until_ms", c->r->wait_until_ms,
		                    c->r->wait_until_ms > 0);
}

static void
wire_job_ended_ms(cJSON *o, const struct wire_ctx *c)
{
	job_add_int_or_null(o, "ended_at_ms", c->j->ended_ms,
	                    c->ended && c->j->ended_ms > 0);
}

static void
wire_job_swap_growth_bytes(cJSON *o, const struct wire_ctx *c)
{
	proto_add_int(o, "swap_growth_bytes",
	              c->r != NULL && !c->ended ? (int64_t)c->r->growth_bytes
	                                        : 0);
}

/* A killed job may have ended with a code of its own (a TERM handler's
 * exit), which is worth showing too. */
static void
wire_job_exit_code(cJSON *o, const struct wire_ctx *c)
{
	const struct job *j = c->j;

	job_add_int_or_null(
	    o, "exit_code", j->exit_code,
	    c->ended && j->term_signal == 0 && j->started_ms > 0 &&
	        (j->state == JOB_EXITED || j->state == JOB_KILLED));
}

static void
wire_job_term_signal(cJSON *o, const struct wire_ctx *c)
{
	job_add_int_or_null(o, "signal", c->j->term_signal,
	                    c->ended && c->j->term_signal > 0);
}

static void
wire_job_end_reason(cJSON *o, const struct wire_ctx *c)
{
	if (c->ended && c->j->end_reason != NULL)
		cJSON_AddStringToObject(o, "end_reason", c->j->end_reason);
	else
		cJSON_AddNullToObject(o, "end_reason");
}

/* The numbers of a breach kill are public: no command, path or text of
 * the job's own is among them. */
static void
wire_job_kill(cJSON *o, const struct wire_ctx *c)
{
	cJSON *k;

	if (c->j->state == JOB_KILLED && c->j->kill != NULL &&
	    (k = cJSON_Parse(c->j->kill)) != NULL)
		cJSON_AddItemToObject(o, "kill", k);
	else
		cJSON_AddNullToObject(o, "kill");
}

/* A Slurm task's ids: null for a job that is not one (its job id 0). */
static void
wire_job_slurm_job_id(cJSON *o, const struct wire_ctx *c)
{
	job_add_int_or_null(o, "slurm_job_id", c->j->slurm_job_id,
	                    c->j->slurm_job_id > 0);
}

static void
wire_job_slurm_step_id(cJSON *o, const struct wire_ctx *c)
{
	job_add_int_or_null(o, "slurm_step_id", c->j->slurm_step_id,
	                    c->j->slurm_job_id > 0);
}

static void
wire_job_slurm_task_id(cJSON *o, const struct wire_ctx *c)
{
	job_add_int_or_null(o, "slurm_task_id", c->j->slurm_task_id,
	                    c->j->slurm_job_id > 0);
}

/* An element's array and index; null when the job is not one. */
static void
wire_job_array_id(cJSON *o, const struct wire_ctx *c)
{
	job_add_int_or_null(o, "array_id", c->j->array_id, c->j->array_id > 0);
}

static void
wire_job_array_index(cJSON *o, const struct wire_ctx *c)
{
	job_add_int_or_null(o, "array_index", c->j->array_index,
	                    c->j->array_id > 0);
}

/* Lists only: the argv as one line, null when not the viewer's. */
static void
wire_job_command(cJSON *o, const struct wire_ctx *c)
{
	char cmd[JOB_COMMAND_MAX + 1];

	if (!c->list)
		return;
	if (!c->visible) {
		cJSON_AddNullToObject(o, "command");
		return;
	}
	if (c->j->command == NULL)
		job_command(c->j->argv, cmd, sizeof cmd);
	cJSON_AddStringToObject(o, "command",
	                        c->j->command != NULL ? c->j->command : cmd);
}

static void
wire_job_argv(cJSON *o, const struct wire_ctx *c)
{
	if (!c->list)
		cJSON_AddItemToObject(o, "argv",
		                      c->args->argv != NULL
		                          ? strv_json(c->args->argv)
		                          : cJSON_CreateNull());
}

static void
wire_job_end_detail(cJSON *o, const struct wire_ctx *c)
{
	if (c->ended && c->j->end_detail != NULL)
		cJSON_AddStringToObject(o, "end_detail", c->j->end_detail);
	else
		cJSON_AddNullToObject(o, "end_detail");
}

static void
wire_job_env(cJSON *o, const struct wire_ctx *c)
{
	if (c->with_env && !c->list)
		cJSON_AddItemToObject(o, "env",
		                      c->args->env != NULL
		                          ? strv_json(c->args->env)
		                          : cJSON_CreateNull());
}

static void
wire_job_ids(cJSON *o, const char *name, const int64_t *ids, int n)
{
	cJSON *a;
	int i;

	if ((a = cJSON_AddArrayToObject(o, name)) != NULL)
		for (i = 0; i < n; i++)
			cJSON_AddItemToArray(a, proto_int_create(ids[i]));
}

static void
wire_job_str(cJSON *o, const char *name, const char *v, int null)
{
	if (v != NULL)
		cJSON_AddStringToObject(o, name, v);
	else if (null)
		cJSON_AddNullToObject(o, name);
	else
		cJSON_AddStringToObject(o, name, "");
}

/* Each member as proto/job-fields.h's job cell says, in its order. */
#define JOB_J_NO(o, c, m, w)
#define JOB_J_INT(o, c, m, w) proto_add_int(o, w, (int64_t)c.j->m);
#define JOB_J_BOOL(o, c, m, w) cJSON_AddBoolToObject(o, w, c.j->m);
#define JOB_J_NUM(o, c, m, w) cJSON_AddNumberToObject(o, w, c.j->m);
#define JOB_J_STR(o, c, m, w) wire_job_str(o, w, c.j->m, 0);
#define JOB_J_STRN(o, c, m, w) wire_job_str(o, w, c.j->m, 1);
#define JOB_J_STATE(o, c, m, w)                                                \
	cJSON_AddStringToObject(o, w, job_state_name(c.j->m));
#define JOB_J_EXPECT(o, c, m, w)                                               \
	wire_job_str(o, w, job_expect_source_name(c.j->m), 1);
#define JOB_J_IDS(o, c, m, w) wire_job_ids(o, w, c.j->m, c.j->n##m);
#define JOB_J_POS(o, c, m, w) job_add_int_or_null(o, w, c.j->m, c.j->m > 0);
#define JOB_J_FN(o, c, m, w) wire_job_##m(o, &c);
#define JOB_VIS_PUBLIC(c) 1
#define JOB_VIS_OWNER(c) c.visible
#define JOB_FIELD(m, w, store, col, job, vis, ...)                             \
	if (JOB_VIS_##vis(c)) {                                                \
		JOB_##job(o, c, m, w)                                          \
	}

static cJSON *
job_object(const struct jobs_view *v, uid_t viewer, int with_env, int list)
{
	struct wire_ctx c;
	cJSON *o = cJSON_CreateObject();

	if (o == NULL)
		return NULL;
	c.j = v->j;
	c.r = v->live ? v : NULL;
	/* A table job's argv and env are in the store only: the front read
	 * them into the view (jobs_view_args). */
	c.args = v->args != NULL ? v->args : v->j;
	c.ended = JOB_STATE_ENDED(v->j->state);
	c.visible = wire_may_see(viewer, v->j);
	c.with_env = with_env;
	c.list = list;
	JOB_FIELDS(JOB_FIELD)
	return o;
}

cJSON *
wire_job(const struct jobs_view *v, uid_t viewer, int with_env)
{
	return job_object(v, viewer, with_env, 0);
}

cJSON *
wire_job_list(const struct jobs_view *v, uid_t viewer)
{
	return job_object(v, viewer, 0, 1);
}

cJSON *
wire_job_ended(const struct job *j, uid_t viewer, int with_env)
{
	struct jobs_view v;

	memset(&v, 0, sizeof v);
	v.j = j;
	return wire_job(&v, viewer, with_env);
}

cJSON *
wire_job_ended_list(const struct job *j, uid_t viewer)
{
	struct jobs_view v;

	memset(&v, 0, sizeof v);
	v.j = j;
	return wire_job_list(&v, viewer);
}

cJSON *
wire_sample(const struct sys_sample *s)
{
	cJSON *o;

	if ((o = cJSON_CreateObject()) == NULL)
		return NULL;
	proto_add_int(o, "sampled_at_ms", s->ts_ms);
	proto_add_int(o, "total_bytes", (int64_t)s->total_bytes);
	proto_add_int(o, "available_bytes", (int64_t)s->available_bytes);
	cJSON_AddNumberToObject(o, "free_pct", s->free_pct);
	proto_add_int(o, "swap_total_bytes", (int64_t)s->swap_total_bytes);
	proto_add_int(o, "swap_used_bytes", (int64_t)s->swap_used_bytes);
	cJSON_AddStringToObject(o, "pressure", pressure_name(s->pressure));
	if (s->psi_some_avg10 >= 0)
		cJSON_AddNumberToObject(o, "psi_some_avg10", s->psi_some_avg10);
	else
		cJSON_AddNullToObject(o, "psi_some_avg10");
	proto_add_int(o, "compressed_bytes", (int64_t)s->compressed_bytes);
	proto_add_int(o, "wired_bytes", (int64_t)s->wired_bytes);
	return o;
}
