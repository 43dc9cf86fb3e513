/*
 * The wire objects (wire.h): Job, Event and Sample as PROTOCOL.md defines
 * them, and who may see what of a job.
 */
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>

#include <uv.h>

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

static void
add_opt_int(cJSON *o, const char *name, int64_t v, int present)
{
	if (present)
		proto_add_int(o, name, v);
	else
		cJSON_AddNullToObject(o, name);
}

const char *
wire_waiting_for(enum admit_wait w, int64_t after, char *buf, size_t len)
{
	if (w != ADMIT_WAIT_AFTER || after <= 0)
		return admit_wait_name(w);
	snprintf(buf, len, "after %" PRId64, after);
	return buf;
}

static cJSON *
job_object(const struct jobs_view *v, uid_t viewer, int with_env, int list)
{
	const struct job *j = v->j;
	const struct jobs_view *r = v->live ? v : NULL;
	cJSON *o = cJSON_CreateObject(), *k, *after;
	int ended = JOB_STATE_ENDED(j->state);
	char why[48];
	int i;
	int visible = wire_may_see(viewer, j);

	if (o == NULL)
		return NULL;
	proto_add_int(o, "id", j->id);
	cJSON_AddStringToObject(o, "user", j->user ? j->user : "");
	proto_add_int(o, "uid", j->uid);
	cJSON_AddStringToObject(o, "name", j->name ? j->name : "");
	cJSON_AddStringToObject(o, "state", job_state_name(j->state));
	cJSON_AddBoolToObject(o, "attached", j->attached);
	proto_add_int(o, "priority", j->priority);
	cJSON_AddNumberToObject(o, "wait_free_pct", j->wait_free_pct);
	proto_add_int(o, "wait_free_bytes", (int64_t)j->wait_free_bytes);
	proto_add_int(o, "swap_budget_bytes", (int64_t)j->swap_budget_bytes);
	proto_add_int(o, "expect_bytes", (int64_t)j->expect_bytes);
	if (j->expect_source != JOB_EXPECT_NONE)
		cJSON_AddStringToObject(
		    o, "expect_source",
		    job_expect_source_name(j->expect_source));
	else
		cJSON_AddNullToObject(o, "expect_source");
	proto_add_int(o, "expect_runs", j->expect_runs);
	cJSON_AddBoolToObject(o, "name_given", j->name_given);
	cJSON_AddBoolToObject(o, "exclusive", j->exclusive);
	proto_add_int(o, "retry_on_breach", j->retry_on_breach);
	proto_add_int(o, "attempt", j->attempt);
	/* The queue's own controls (docs/jobs.md, "Dependencies and
	 * holds"): public, as the order is. */
	if ((after = cJSON_AddArrayToObject(o, "after")) != NULL)
		for (i = 0; i < j->nafter; i++)
			cJSON_AddItemToArray(after,
			                     proto_int_create(j->after[i]));
	cJSON_AddBoolToObject(o, "after_any", j->after_any);
	cJSON_AddBoolToObject(o, "held", j->held);
	if (j->group != NULL)
		cJSON_AddStringToObject(o, "group", j->group);
	else
		cJSON_AddNullToObject(o, "group");
	add_opt_int(o, "position", r ? r->position : 0,
	            r != NULL && j->state == JOB_QUEUED && r->position > 0);
	if (r != NULL && j->state == JOB_QUEUED)
		cJSON_AddStringToObject(
		    o, "waiting_for",
		    wire_waiting_for(r->wait, r->wait_after, why, sizeof why));
	proto_add_int(o, "submitted_at_ms", j->submitted_ms);
	add_opt_int(o, "admitted_at_ms", j->admitted_ms, j->admitted_ms > 0);
	add_opt_int(o, "started_at_ms", j->started_ms, j->started_ms > 0);
	add_opt_int(o, "ended_at_ms", j->ended_ms, ended && j->ended_ms > 0);
	add_opt_int(o, "pid", j->pid, j->pid > 0);
	proto_add_int(o, "footprint_bytes", (int64_t)j->footprint_bytes);
	proto_add_int(o, "footprint_peak_bytes",
	              (int64_t)j->footprint_peak_bytes);
	proto_add_int(o, "swap_growth_bytes",
	              r != NULL && !ended ? (int64_t)r->growth_bytes : 0);
	proto_add_int(o, "swap_growth_peak_bytes",
	              (int64_t)j->swap_growth_peak_bytes);
	proto_add_int(o, "job_swap_bytes", (int64_t)j->job_swap_bytes);
	/* A killed job may have ended with a code of its own (a TERM
	 * handler's exit), which is worth showing too. */
	add_opt_int(o, "exit_code", j->exit_code,
	            ended && j->term_signal == 0 && j->started_ms > 0 &&
	                (j->state == JOB_EXITED || j->state == JOB_KILLED));
	add_opt_int(o, "signal", j->term_signal, ended && j->term_signal > 0);
	if (ended && j->end_reason != NULL)
		cJSON_AddStringToObject(o, "end_reason", j->end_reason);
	else
		cJSON_AddNullToObject(o, "end_reason");
	/* The numbers of a breach kill are public: no command, path or
	 * text of the job's own is among them. */
	if (j->state == JOB_KILLED && j->kill != NULL &&
	    (k = cJSON_Parse(j->kill)) != NULL)
		cJSON_AddItemToObject(o, "kill", k);
	else
		cJSON_AddNullToObject(o, "kill");
	if (list) {
		char cmd[JOB_COMMAND_MAX + 1];

		if (visible && j->command == NULL)
			job_command(j->argv, cmd, sizeof cmd);
		if (visible)
			cJSON_AddStringToObject(o, "command",
			                        j->command != NULL ? j->command
			                                           : cmd);
		else
			cJSON_AddNullToObject(o, "command");
	}
	if (visible) {
		/* A table job's argv and env are in the store only: the front
		 * read them into the view (jobs_view_args). */
		const struct job *a = v->args != NULL ? v->args : j;

		if (!list)
			cJSON_AddItemToObject(o, "argv",
			                      a->argv != NULL
			                          ? strv_json(a->argv)
			                          : cJSON_CreateNull());
		cJSON_AddStringToObject(o, "cwd", j->cwd ? j->cwd : "");
		/* A command, as private as argv. */
		if (j->on_end != NULL)
			cJSON_AddStringToObject(o, "on_end", j->on_end);
		else
			cJSON_AddNullToObject(o, "on_end");
		if (ended && j->end_detail != NULL)
			cJSON_AddStringToObject(o, "end_detail", j->end_detail);
		else
			cJSON_AddNullToObject(o, "end_detail");
		if (with_env && !list)
			cJSON_AddItemToObject(o, "env",
			                      a->env != NULL
			                          ? strv_json(a->env)
			                          : cJSON_CreateNull());
	}
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
