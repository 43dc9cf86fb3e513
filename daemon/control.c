/*
 * The dispatch table (control.h). Every method of PROTOCOL.md has one row:
 * its handler, who may call it and the parameters it takes, all checked
 * here before the handler runs. This file also answers the methods that
 * are not about jobs: hello, info, history, subscribe, unsubscribe.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "answers.h"
#include "control.h"
#include "daemon.h"
#include "jobs.h"
#include "log.h"
#include "notify.h"
#include "proto.h"
#include "sampler.h"
#include "server.h"
#include "awake.h"
#include "version.h"
#include "wire.h"

#define MAX_HISTORY_BUCKETS 100000

static int ctl_hello(struct daemon *, const struct peer *, const cJSON *,
                     const cJSON *, cJSON **, char *, size_t);
static int ctl_info(struct daemon *, const struct peer *, const cJSON *,
                    const cJSON *, cJSON **, char *, size_t);
static int ctl_history(struct daemon *, const struct peer *, const cJSON *,
                       const cJSON *, cJSON **, char *, size_t);
static int ctl_subscribe(struct daemon *, const struct peer *, const cJSON *,
                         const cJSON *, cJSON **, char *, size_t);
static int ctl_unsubscribe(struct daemon *, const struct peer *, const cJSON *,
                           const cJSON *, cJSON **, char *, size_t);

#define PARAMS_END                                                             \
	{                                                                      \
		NULL, PROTO_T_INT, 0                                           \
	}

/* Each list in the order the handler reads it, so a request with several
 * faults is told of the same one first. */
static const struct control_param hello_params[] = {
    {"version", PROTO_T_INT, 1}, {"client", PROTO_T_STRING, 0}, PARAMS_END};
static const struct control_param no_params[] = {PARAMS_END};
static const struct control_param history_params[] = {
    {"job_id", PROTO_T_INT, 0},
    {"since_ms", PROTO_T_INT, 0}, /* required without job_id */
    {"until_ms", PROTO_T_INT, 0},
    {"step_ms", PROTO_T_INT, 0},
    PARAMS_END};
static const struct control_param subscribe_params[] = {
    {"samples", PROTO_T_BOOL, 0},
    {"events", PROTO_T_BOOL, 0},
    {"pid", PROTO_T_INT, 0},
    PARAMS_END};
/* submit's and update's come from proto/job-fields.h, in its order (the
 * types are checked in it; submit's handler reads argv, cwd, env, which
 * it requires unless attached, and name first, then the table's numbers
 * and flags in its order: control_fields_read). */
#define PARAM_P_NO(w)
#define PARAM_P_INT(w) {w, PROTO_T_INT, 0},
#define PARAM_P_NUM(w) {w, PROTO_T_NUMBER, 0},
#define PARAM_P_BOOL(w) {w, PROTO_T_BOOL, 0},
#define PARAM_P_STRING(w) {w, PROTO_T_STRING, 0},
#define PARAM_P_STRING_REQ(w) {w, PROTO_T_STRING, 1},
#define PARAM_P_STRV(w) {w, PROTO_T_STRV, 0},
#define PARAM_P_STRV_REQ(w) {w, PROTO_T_STRV, 1},
#define PARAM_P_INTV(w) {w, PROTO_T_IDV, 0},
#define PARAM_UPDATE_0(row)
#define PARAM_UPDATE_1(row) row
#define SUBMIT_PARAM(m, w, store, col, job, vis, submit, ...) PARAM_##submit(w)
#define UPDATE_PARAM(m, w, store, col, job, vis, submit, update, ...)          \
	PARAM_UPDATE_##update(PARAM_##submit(w))
static const struct control_param submit_params[] = {JOB_FIELDS(SUBMIT_PARAM)
                                                         PARAMS_END};
static const struct control_param update_params[] = {
    {"id", PROTO_T_ID, 1}, JOB_FIELDS(UPDATE_PARAM) PARAMS_END};
static const struct control_param id_params[] = {{"id", PROTO_T_ID, 1},
                                                 PARAMS_END};
static const struct control_param job_pid_params[] = {{"id", PROTO_T_ID, 1},
                                                      {"pid", PROTO_T_INT, 1},
                                                      {"tree", PROTO_T_BOOL, 0},
                                                      PARAMS_END};
static const struct control_param stage_params[] = {
    {"id", PROTO_T_ID, 1},
    {"name", PROTO_T_STRING, 1},
    {"token", PROTO_T_STRING, 0}, /* $STAGELOAD_JOB_TOKEN inside the job */
    PARAMS_END};
static const struct control_param job_exit_params[] = {
    {"id", PROTO_T_ID, 1},
    {"exit_code", PROTO_T_INT, 0}, /* exactly one of these two */
    {"signal", PROTO_T_INT, 0},
    PARAMS_END};
static const struct control_param status_params[] = {
    {"all", PROTO_T_BOOL, 0},
    {"ended", PROTO_T_BOOL, 0}, /* the ended part alone */
    {"limit", PROTO_T_INT, 0},
    {"cursor", PROTO_T_STRING, 0}, /* protocol version 2 */
    {"user", PROTO_T_STRING, 0},   /* the filter: jobs-filter.h */
    {"mine", PROTO_T_BOOL, 0},
    {"state", PROTO_T_STRV, 0},
    {"name", PROTO_T_STRING, 0},
    PARAMS_END};
static const struct control_param cancel_matching_params[] = {
    {"user", PROTO_T_STRING, 0}, /* the filter */
    {"mine", PROTO_T_BOOL, 0},
    {"state", PROTO_T_STRV, 0},
    {"name", PROTO_T_STRING, 0},
    {"all_users", PROTO_T_BOOL, 0}, /* root only */
    PARAMS_END};
static const struct control_param show_params[] = {
    {"id", PROTO_T_ID, 1}, {"env", PROTO_T_BOOL, 0}, PARAMS_END};
static const struct control_param logs_params[] = {{"id", PROTO_T_ID, 1},
                                                   {"offset", PROTO_T_INT, 0},
                                                   {"follow", PROTO_T_BOOL, 0},
                                                   PARAMS_END};
static const struct control_param events_params[] = {
    {"after_id", PROTO_T_INT, 0},
    {"before_id", PROTO_T_INT, 0}, /* newest first */
    {"cursor", PROTO_T_STRING, 0}, /* protocol version 2 */
    {"job_id", PROTO_T_INT, 0},    /* one job's alone */
    {"limit", PROTO_T_INT, 0},
    {"follow", PROTO_T_BOOL, 0},
    {"user", PROTO_T_STRING, 0}, /* the filter */
    {"mine", PROTO_T_BOOL, 0},
    {"state", PROTO_T_STRV, 0},
    {"name", PROTO_T_STRING, 0},
    PARAMS_END};
static const struct control_param report_params[] = {
    {"since_ms", PROTO_T_INT, 0},
    {"until_ms", PROTO_T_INT, 0},
    {"by", PROTO_T_STRING, 0},   /* user, name, user,name */
    {"user", PROTO_T_STRING, 0}, /* status's filter but its state */
    {"mine", PROTO_T_BOOL, 0},
    {"name", PROTO_T_STRING, 0}, /* a glob */
    PARAMS_END};

static const struct control_method methods[] = {
    {"hello", ctl_hello, AUTH_ANYONE, hello_params},
    {"info", ctl_info, AUTH_ANYONE, no_params},
    {"history", ctl_history, AUTH_ANYONE, history_params},
    {"subscribe", ctl_subscribe, AUTH_OWNER, subscribe_params},
    {"unsubscribe", ctl_unsubscribe, AUTH_ANYONE, no_params},
    {"submit", control_submit, AUTH_ANYONE, submit_params},
    {"job_pid", control_job_pid, AUTH_OWNER, job_pid_params},
    {"job_exit", control_job_exit, AUTH_OWNER, job_exit_params},
    {"resume", control_resume, AUTH_OWNER, id_params},
    {"status", control_status, AUTH_ANYONE, status_params},
    {"show", control_show, AUTH_ANYONE, show_params},
    {"cancel", control_cancel, AUTH_OWNER, id_params},
    {"cancel_matching", control_cancel_matching, AUTH_OWNER,
     cancel_matching_params},
    {"wait", control_wait, AUTH_ANYONE, id_params},
    {"logs", control_logs, AUTH_OWNER, logs_params},
    {"events", control_events, AUTH_ANYONE, events_params},
    {"stage", control_stage, AUTH_OWNER, stage_params},
    {"hold", control_hold, AUTH_OWNER, id_params},
    {"release", control_release, AUTH_OWNER, id_params},
    {"resubmit", control_resubmit, AUTH_OWNER, id_params},
    {"update", control_update, AUTH_OWNER, update_params},
    {"report", control_report, AUTH_ANYONE, report_params},
};
#define NMETHODS (sizeof methods / sizeof methods[0])

#define READ_P_NO(m, w, lo, hi)
#define READ_P_STRING(m, w, lo, hi)
#define READ_P_STRING_REQ(m, w, lo, hi)
#define READ_P_STRV(m, w, lo, hi)
#define READ_P_STRV_REQ(m, w, lo, hi)
#define READ_P_INTV(m, w, lo, hi)
#define READ_P_INT(m, w, lo, hi)                                               \
	{                                                                      \
		int64_t v = (int64_t)j->m;                                     \
		if ((rc = proto_param_int(params, w, 0, lo, hi, &v, cause,     \
		                          causelen)) < 0)                      \
			return rc;                                             \
		j->m = (__typeof__(j->m))v;                                    \
		seen->m = rc == 0;                                             \
	}
#define READ_P_NUM(m, w, lo, hi)                                               \
	{                                                                      \
		if ((rc = proto_param_double(params, w, 0, lo, hi, &j->m,      \
		                             cause, causelen)) < 0)            \
			return rc;                                             \
		seen->m = rc == 0;                                             \
	}
#define READ_P_BOOL(m, w, lo, hi)                                              \
	{                                                                      \
		int v = j->m != 0;                                             \
		if ((rc = proto_param_bool(params, w, 0, &v, cause,            \
		                           causelen)) < 0)                     \
			return rc;                                             \
		j->m = v;                                                      \
		seen->m = rc == 0;                                             \
	}
#define READ_FIELD(m, w, store, col, job, vis, submit, upd, lo, hi, ...)       \
	if (!update || upd) {                                                  \
		READ_##submit(m, w, lo, hi)                                    \
	}

int
control_fields_read(const cJSON *params, int update, struct job *j,
                    struct job_seen *seen, char *cause, size_t causelen)
{
	int rc;

	memset(seen, 0, sizeof *seen);
	JOB_FIELDS(READ_FIELD)
	return 0;
}

/* Unknown or repeated names, then each listed one's type and presence. */
static int
params_check(const struct control_param *spec, const cJSON *params, char *cause,
             size_t causelen)
{
	const char *known[64];
	size_t i;
	int rc;

	for (i = 0; spec[i].name != NULL; i++) {
		if (i == sizeof known / sizeof known[0] - 1) {
			/* A table row longer than this is a bug here. */
			snprintf(cause, causelen, "too many parameters listed");
			return PROTO_E_INTERNAL;
		}
		known[i] = spec[i].name;
	}
	known[i] = NULL;
	if ((rc = proto_params_check(params, known, cause, causelen)) != 0)
		return rc;
	for (i = 0; spec[i].name != NULL; i++)
		if ((rc = proto_param_type(params, spec[i].name, spec[i].type,
		                           spec[i].required, cause,
		                           causelen)) != 0)
			return rc;
	return 0;
}

int
control_dispatch_in(const struct control_method *table, size_t n,
                    struct daemon *d, const struct peer *p, const char *method,
                    const cJSON *req_id, const cJSON *params, cJSON **result,
                    char *cause, size_t causelen)
{
	const struct control_method *m = NULL;
	size_t i;
	int rc;

	*result = NULL;
	for (i = 0; i < n; i++) {
		if (strcmp(table[i].name, method) == 0) {
			m = &table[i];
			break;
		}
	}
	if (m == NULL) {
		/* The name came from the client: keep it short in the reply
		 * (it is valid UTF-8, checked by the framing). */
		snprintf(cause, causelen, "unknown method '%.64s'", method);
		return PROTO_E_METHOD;
	}
	/* Who first: a caller the row does not admit learns nothing of
	 * what the method takes. */
	if (m->auth == AUTH_ROOT && p->uid != 0) {
		snprintf(cause, causelen, "%s is for root only", m->name);
		return PROTO_E_PERM;
	}
	if (params != NULL && !cJSON_IsObject(params)) {
		snprintf(cause, causelen, "params must be an object");
		return PROTO_E_PARAMS;
	}
	if ((rc = params_check(m->params, params, cause, causelen)) != 0)
		return rc;
	return m->handler(d, p, req_id, params, result, cause, causelen);
}

int
control_dispatch(struct daemon *d, const struct peer *p, const char *method,
                 const cJSON *req_id, const cJSON *params, cJSON **result,
                 char *cause, size_t causelen)
{
	return control_dispatch_in(methods, NMETHODS, d, p, method, req_id,
	                           params, result, cause, causelen);
}

/* The job, read by get, when the peer may see it. */
static int
job_owner(struct daemon *d, const struct peer *p, int64_t id,
          struct jobs_view *v,
          int (*get)(struct daemon *, int64_t, struct jobs_view *, char *,
                     size_t),
          char *cause, size_t causelen)
{
	int rc;

	if ((rc = get(d, id, v, cause, causelen)) != 0)
		return rc;
	if (!wire_may_see(p->uid, v->j)) {
		jobs_view_free(v);
		snprintf(cause, causelen, "job %" PRId64 " is not yours", id);
		return PROTO_E_PERM;
	}
	return 0;
}

int
control_job_owner(struct daemon *d, const struct peer *p, int64_t id,
                  struct jobs_view *v, char *cause, size_t causelen)
{
	return job_owner(d, p, id, v, jobs_get, cause, causelen);
}

int
control_element_owner(struct daemon *d, const struct peer *p, int64_t id,
                      struct jobs_view *v, char *cause, size_t causelen)
{
	return job_owner(d, p, id, v, jobs_get_lean, cause, causelen);
}

static cJSON *
method_names(void)
{
	cJSON *a = cJSON_CreateArray();
	size_t i;

	for (i = 0; a != NULL && i < NMETHODS; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(methods[i].name));
	return a;
}

/* -32001 carries the versions we speak as data, which the generic error
 * path cannot, so this reply is sent from here. */
static int
hello_refuse(struct daemon *d, const struct peer *p, const cJSON *req_id,
             int64_t version)
{
	cJSON *data, *versions;
	char text[128], *line;
	size_t len;
	int rc;

	snprintf(text, sizeof text,
	         "protocol version %lld is not supported "
	         "(this daemon speaks %d to %d)",
	         (long long)version, PROTO_VERSION_MIN, PROTO_VERSION);
	if ((data = cJSON_CreateObject()) == NULL ||
	    (versions = cJSON_AddArrayToObject(data, "versions")) == NULL) {
		cJSON_Delete(data);
		return -ENOMEM;
	}
	for (int v = PROTO_VERSION_MIN; v <= PROTO_VERSION; v++)
		cJSON_AddItemToArray(versions, proto_int_create(v));
	/* The encoder echoes the id exactly and owns data from here on. */
	line =
	    proto_encode_error_data(req_id, PROTO_E_VERSION, text, data, &len);
	if (line == NULL)
		return -ENOMEM;
	rc = server_send_line(d, p->client_id, line, len);
	free(line);
	return rc;
}

static int
ctl_hello(struct daemon *d, const struct peer *p, const cJSON *req_id,
          const cJSON *params, cJSON **result, char *cause, size_t causelen)
{
	const char *client = NULL;
	int64_t version;
	cJSON *r;
	int rc;

	/* Any integer is a version: one we do not speak, however odd, gets
	 * the list of those we do (PROTOCOL.md, "hello"). */
	if ((rc = proto_param_int(params, "version", 1, INT64_MIN, INT64_MAX,
	                          &version, cause, causelen)) != 0)
		return rc;
	if ((rc = proto_param_string(params, "client", 0, 256, &client, cause,
	                             causelen)) < 0)
		return rc;
	if (version < PROTO_VERSION_MIN || version > PROTO_VERSION) {
		hello_refuse(d, p, req_id, version);
		return CONTROL_DEFERRED;
	}
	/* The handlers read it from their peer: status and events answer
	 * each version as PROTOCOL.md describes it. */
	if (server_set_version(d, p->client_id, (int)version) != 0 &&
	    d->server != NULL) {
		snprintf(cause, causelen, "client has gone");
		return PROTO_E_INTERNAL;
	}
	if (client != NULL)
		log_debug("client %llu is %s", (unsigned long long)p->client_id,
		          client);
	if ((r = cJSON_CreateObject()) == NULL)
		goto oom;
	proto_add_int(r, "version", version);
	cJSON_AddStringToObject(r, "daemon_version", STAGELOAD_VERSION);
	cJSON_AddStringToObject(r, "os", STAGELOAD_OS);
	proto_add_int(r, "interval_ms", d->cfg.interval_ms);
	proto_add_int(r, "uid", (int64_t)p->uid);
	cJSON_AddItemToObject(r, "methods", method_names());
	*result = r;
	return 0;
oom:
	snprintf(cause, causelen, "out of memory");
	return PROTO_E_INTERNAL;
}

/* info's waiting_for: the queued jobs by what they wait for, so a
 * dashboard need not read the whole queue to count them. */
static int
info_waiting(struct daemon *d, cJSON *r)
{
	int counts[ADMIT_WAIT_LAST + 1] = {0};
	struct jobs_view *v;
	size_t n, i;
	cJSON *o;

	if (jobs_list(d, 0, &v, &n) != 0)
		return -1;
	for (i = 0; i < n; i++)
		if (v[i].j->state == JOB_QUEUED && v[i].wait <= ADMIT_WAIT_LAST)
			counts[v[i].wait]++;
	free(v);
	if ((o = cJSON_AddObjectToObject(r, "waiting_for")) == NULL)
		return -1;
	for (i = 0; i <= ADMIT_WAIT_LAST; i++)
		if (counts[i] > 0)
			proto_add_int(o, admit_wait_name((enum admit_wait)i),
			              counts[i]);
	return 0;
}

/*
 * info's config: the file read (null when none) and the settings in effect
 * that a user meets: job defaults and limits (docs/daemon.md names each
 * key; PROTOCOL.md, info).
 */
static int
info_config(struct daemon *d, cJSON *r)
{
	const struct config *c = &d->cfg;
	cJSON *o, *l;

	if (c->config_path[0] != '\0')
		cJSON_AddStringToObject(r, "config_path", c->config_path);
	else
		cJSON_AddNullToObject(r, "config_path");
	if ((o = cJSON_AddObjectToObject(r, "defaults")) == NULL ||
	    (l = cJSON_AddObjectToObject(r, "limits")) == NULL)
		return -1;
	/* The settings' table says which, under what key. */
	if (config_info(c, o, l) != 0)
		return -1;
	return 0;
}

/* info's counters: since the daemon started (PROTOCOL.md, info). */
static int
info_counters(struct daemon *d, cJSON *r)
{
	struct jobs_counters c;
	cJSON *o, *a, *e;
	int st, i;

	jobs_counters(d, &c);
	if ((o = cJSON_AddObjectToObject(r, "counters")) == NULL ||
	    (a = cJSON_AddArrayToObject(o, "jobs_ended")) == NULL)
		return -1;
	for (st = JOB_EXITED; st <= JOB_LOST; st++)
		for (i = 0; i < JOBS_NREASONS; i++) {
			if (c.ended[st][i] == 0)
				continue;
			if ((e = cJSON_CreateObject()) == NULL)
				return -1;
			cJSON_AddItemToArray(a, e);
			cJSON_AddStringToObject(
			    e, "state", job_state_name((enum job_state)st));
			if (i == 0)
				cJSON_AddNullToObject(e, "reason");
			else
				cJSON_AddStringToObject(e, "reason",
				                        jobs_reason_name(i));
			proto_add_int(e, "count", (int64_t)c.ended[st][i]);
		}
	proto_add_int(o, "breaches", (int64_t)c.breaches);
	return 0;
}

/* Whether the machine is kept awake and why (docs/jobs.md, "Keeping the
 * machine awake"). */
static int
info_keep_awake(struct daemon *d, cJSON *r)
{
	const struct daemon_awake a = d->awake;
	const char *hold;
	cJSON *o;

	if ((o = cJSON_AddObjectToObject(r, "keep_awake")) == NULL)
		return -ENOMEM;
	hold = awake_hold_name((enum awake_hold)a.hold);
	if (hold != NULL)
		cJSON_AddStringToObject(o, "hold", hold);
	else
		cJSON_AddNullToObject(o, "hold");
	if (a.why != NULL)
		cJSON_AddStringToObject(o, "why", a.why);
	else
		cJSON_AddNullToObject(o, "why");
	if (a.until_ms > 0)
		proto_add_int(o, "until_ms", a.until_ms);
	else
		cJSON_AddNullToObject(o, "until_ms");
	return 0;
}

static int
ctl_info(struct daemon *d, const struct peer *p, const cJSON *req_id,
         const cJSON *params, cJSON **result, char *cause, size_t causelen)
{
	int counts[JOB_LOST + 1];
	const char *health;
	cJSON *r, *o;

	if ((r = cJSON_CreateObject()) == NULL) {
		snprintf(cause, causelen, "out of memory");
		return PROTO_E_INTERNAL;
	}
	cJSON_AddStringToObject(r, "daemon_version", STAGELOAD_VERSION);
	/* The version this connection speaks. */
	proto_add_int(r, "version", p->version);
	cJSON_AddStringToObject(r, "os", STAGELOAD_OS);
	proto_add_int(r, "interval_ms", d->cfg.interval_ms);
	/* The rate in force and why (docs/jobs.md, "Sampling rate"). */
	o = cJSON_AddObjectToObject(r, "sampling");
	proto_add_int(o, "interval_ms", sampler_interval_ms(d));
	cJSON_AddBoolToObject(o, "fast", d->fast_reason != NULL);
	if (d->fast_reason != NULL)
		cJSON_AddStringToObject(o, "reason", d->fast_reason);
	else
		cJSON_AddNullToObject(o, "reason");
	proto_add_int(r, "started_at_ms", d->started_ms);
	cJSON_AddStringToObject(r, "socket", d->cfg.socket_path);
	cJSON_AddStringToObject(r, "db_path", d->cfg.db_path);
	proto_add_int(r, "db_bytes",
	              d->store != NULL ? store_size_bytes(d->store) : 0);
	health = d->store != NULL ? store_health(d->store) : NULL;
	if (health != NULL)
		cJSON_AddStringToObject(r, "storage_error", health);
	else
		cJSON_AddNullToObject(r, "storage_error");
	if (d->have_last)
		cJSON_AddItemToObject(r, "sample", wire_sample(&d->last));
	else
		cJSON_AddNullToObject(r, "sample");
	jobs_count(d, (uid_t)-1, counts);
	o = cJSON_AddObjectToObject(r, "jobs");
	proto_add_int(o, "queued", counts[JOB_QUEUED]);
	proto_add_int(o, "admitted", counts[JOB_ADMITTED]);
	proto_add_int(o, "running", counts[JOB_RUNNING]);
	if (info_waiting(d, r) != 0 || info_counters(d, r) != 0 ||
	    info_config(d, r) != 0 || info_keep_awake(d, r) != 0) {
		cJSON_Delete(r);
		snprintf(cause, causelen, "out of memory");
		return PROTO_E_INTERNAL;
	}
	*result = r;
	return 0;
}

/*
 * Samples are committed in batches, so history commits them before it
 * answers, and an answer is never behind. When that fails (a full disk), a
 * range that reaches the samples still waiting would come back short, as if
 * nothing had been measured: it is refused with the cause instead, and a
 * range that ends before them is answered from the database.
 */
int
control_history_flush(struct daemon *d, int64_t job_id, int64_t until,
                      char *cause, size_t causelen)
{
	char why[256];
	int64_t from;

	if (d->store == NULL || store_flush(d->store, why, sizeof why) == 0)
		return 0;
	from = store_unwritten_since(d->store, job_id);
	if (from == INT64_MAX || until < from)
		return 0;
	snprintf(cause, causelen,
	         "storage error: the samples from %" PRId64 " on are not in "
	         "the database yet (%s); ask again once storage works, or "
	         "with until_ms before them",
	         from, why);
	return PROTO_E_STORAGE;
}

/* A system history answer, written a part at a time: HISTORY_PART
 * buckets' worth of the range per fill (about 1 ms). */
#define HISTORY_PART 200
struct history_answer {
	struct store_history_cursor cur;
	char *head; /* the result up to its buckets array's '[' */
	size_t n;   /* buckets written */
};

static void
history_free(void *state)
{
	struct history_answer *h = state;

	free(h->head);
	free(h);
}

static int
history_fill(struct daemon *d, void *state, struct answers_buf *out,
             char *cause, size_t causelen)
{
	struct history_answer *h = state;
	struct history_bucket *b;
	char why[256];
	size_t n, i;
	int rc = 0;

	if (h->head != NULL) {
		rc = answers_append(out, h->head, strlen(h->head));
		free(h->head);
		h->head = NULL;
		if (rc != 0) {
			snprintf(cause, causelen, "out of memory");
			return PROTO_E_INTERNAL;
		}
	}
	if (store_history_next(d->store, &h->cur, HISTORY_PART, &b, &n, why,
	                       sizeof why) != 0) {
		snprintf(cause, causelen, "storage error: history: %s", why);
		return PROTO_E_STORAGE;
	}
	for (i = 0; i < n && rc == 0; i++) {
		if (h->n++ > 0)
			rc = answers_append(out, ",", 1);
		if (rc == 0)
			rc = answers_append_json(out,
			                         store_read_bucket_json(&b[i]));
	}
	free(b);
	if (rc == 0 && h->cur.done)
		rc = answers_append(out, "]}", 2);
	if (rc != 0) {
		snprintf(cause, causelen, "out of memory");
		return PROTO_E_INTERNAL;
	}
	return !h->cur.done;
}

static const struct answers_ops history_ops = {history_fill, history_free};

static int
ctl_history(struct daemon *d, const struct peer *p, const cJSON *req_id,
            const cJSON *params, cJSON **result, char *cause, size_t causelen)
{
	struct history_answer *h;
	int64_t since, until, step, job_id, span, nb;
	char why[256];
	cJSON *r;
	int rc;

	rc = proto_param_int(params, "job_id", 0, 1, INT64_MAX, &job_id, cause,
	                     causelen);
	if (rc == 0)
		return control_job_history(d, p, req_id, params, result, cause,
		                           causelen);
	if (rc < 0)
		return rc;

	/* Rows are taken up to, not including, until: by default the
	 * current millisecond is in, so a sample info has just shown is. */
	until = clock_wall_ms() + 1;
	if ((rc = proto_param_int(params, "since_ms", 1, 0, INT64_MAX, &since,
	                          cause, causelen)) != 0)
		return rc;
	if ((rc = proto_param_int(params, "until_ms", 0, 0, INT64_MAX, &until,
	                          cause, causelen)) < 0)
		return rc;
	if (until < since) {
		snprintf(cause, causelen, "until_ms is before since_ms");
		return PROTO_E_PARAMS;
	}
	span = until - since;
	step = span / 60;
	if (step < d->cfg.interval_ms)
		step = d->cfg.interval_ms;
	if ((rc = proto_param_int(params, "step_ms", 0, 1, INT64_MAX, &step,
	                          cause, causelen)) < 0)
		return rc;
	/*
	 * The limit counts the buckets of the range, empty or not: they start
	 * at multiples of step_ms, from since_ms rounded down to the one that
	 * holds until_ms. Counting the range, not the answer, bounds the work
	 * before any is done, and the answer to a range can only be smaller.
	 */
	nb = until / step - since / step + 1;
	if (nb > MAX_HISTORY_BUCKETS) {
		snprintf(cause, causelen,
		         "history limit: %" PRId64
		         " buckets in the range asked "
		         "(empty ones count), at most %d per answer; use a "
		         "larger step_ms",
		         nb, MAX_HISTORY_BUCKETS);
		return PROTO_E_LIMIT;
	}
	if ((rc = control_history_flush(d, 0, until, cause, causelen)) != 0)
		return rc;
	if ((h = calloc(1, sizeof *h)) == NULL) {
		snprintf(cause, causelen, "out of memory");
		return PROTO_E_INTERNAL;
	}
	if (d->store == NULL ||
	    store_history_begin(d->store, since, until, step, &h->cur, why,
	                        sizeof why) != 0) {
		free(h);
		snprintf(cause, causelen, "history: %s",
		         d->store == NULL ? "no database" : why);
		return PROTO_E_STORAGE;
	}
	/* The result's members before its buckets; the rest is written a
	 * slice at a time (answers.h). */
	r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "tier", h->cur.tier);
	proto_add_int(r, "step_ms", step);
	proto_add_int(r, "since_ms", since);
	proto_add_int(r, "until_ms", until);
	cJSON_AddArrayToObject(r, "buckets");
	if ((h->head = cJSON_PrintUnformatted(r)) == NULL ||
	    strcmp(h->head + strlen(h->head) - 3, "[]}") != 0) {
		cJSON_Delete(r);
		history_free(h);
		snprintf(cause, causelen, "out of memory");
		return PROTO_E_INTERNAL;
	}
	cJSON_Delete(r);
	h->head[strlen(h->head) - 2] = '\0'; /* up to the array's '[' */
	if ((rc = answers_start(d, p, req_id, &history_ops, h, cause,
	                        causelen)) != 0)
		return rc;
	return CONTROL_DEFERRED;
}

static int
ctl_subscribe(struct daemon *d, const struct peer *p, const cJSON *req_id,
              const cJSON *params, cJSON **result, char *cause, size_t causelen)
{
	struct proc_info pi;
	int samples = 1, events = 0, rc;
	int64_t pid = 0;

	if ((rc = proto_param_bool(params, "samples", 0, &samples, cause,
	                           causelen)) < 0)
		return rc;
	if ((rc = proto_param_bool(params, "events", 0, &events, cause,
	                           causelen)) < 0)
		return rc;
	if ((rc = proto_param_int(params, "pid", 0, 1, INT32_MAX, &pid, cause,
	                          causelen)) < 0)
		return rc;
	memset(&pi, 0, sizeof pi);
	if (pid > 0) {
		if (platform_proc_info((pid_t)pid, &pi) != 0) {
			snprintf(cause, causelen, "no process %lld",
			         (long long)pid);
			return PROTO_E_NOPROC;
		}
		/* Metering shows a process's memory over time: only its
		 * owner or root may watch it. */
		if (p->uid != 0 && pi.uid != p->uid) {
			snprintf(cause, causelen,
			         "process %lld belongs to "
			         "another user",
			         (long long)pid);
			return PROTO_E_PERM;
		}
	}
	if ((rc = notify_subscribe(d, p->client_id, p->uid, samples, events,
	                           (pid_t)pid, pi.start_time, cause,
	                           causelen)) != 0)
		return rc; /* a PROTO_E_* code with its cause */
	*result = cJSON_CreateObject();
	proto_add_int(*result, "interval_ms", d->cfg.interval_ms);
	return 0;
}

static int
ctl_unsubscribe(struct daemon *d, const struct peer *p, const cJSON *req_id,
                const cJSON *params, cJSON **result, char *cause,
                size_t causelen)
{
	notify_unsubscribe(d, p->client_id);
	*result = cJSON_CreateObject();
	return 0;
}
