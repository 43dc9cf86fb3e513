/*
 * The dispatch table. Every method of PROTOCOL.md has one row: its
 * handler, who may call it, and (for the methods answered here) the
 * parameters it knows, so an unknown member is refused before the handler
 * runs. Ownership checks that depend on a job or a process are made in the
 * handler, always against the peer's credentials.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control.h"
#include "daemon.h"
#include "jobs.h"
#include "log.h"
#include "proto.h"
#include "sampler.h"
#include "server.h"
#include "version.h"

#define MAX_HISTORY_BUCKETS 100000

enum control_auth {
	AUTH_ANYONE,  /* anyone connected */
	AUTH_HANDLER, /* anyone; the handler checks ownership per object */
};

struct control_method {
	const char *name;
	control_handler handler;
	enum control_auth auth;
	const char *const *params; /* known params; NULL: handler checks */
};

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

static const char *const hello_params[] = {"version", "client", NULL};
static const char *const no_params[] = {NULL};
static const char *const history_params[] = {"since_ms", "until_ms", "step_ms",
                                             "job_id", NULL};
static const char *const subscribe_params[] = {"samples", "events", "pid",
                                               NULL};

static const struct control_method methods[] = {
    {"hello", ctl_hello, AUTH_ANYONE, hello_params},
    {"info", ctl_info, AUTH_ANYONE, no_params},
    {"history", ctl_history, AUTH_ANYONE, history_params},
    {"subscribe", ctl_subscribe, AUTH_HANDLER, subscribe_params},
    {"unsubscribe", ctl_unsubscribe, AUTH_ANYONE, no_params},
    {"submit", jobs_ctl_submit, AUTH_HANDLER, NULL},
    {"job_pid", jobs_ctl_attach, AUTH_HANDLER, NULL},
    {"job_exit", jobs_ctl_job_exit, AUTH_HANDLER, NULL},
    {"resume", jobs_ctl_resume, AUTH_HANDLER, NULL},
    {"status", jobs_ctl_status, AUTH_HANDLER, NULL},
    {"show", jobs_ctl_show, AUTH_HANDLER, NULL},
    {"cancel", jobs_ctl_cancel, AUTH_HANDLER, NULL},
    {"wait", jobs_ctl_wait, AUTH_ANYONE, NULL},
    {"logs", jobs_ctl_logs, AUTH_HANDLER, NULL},
    {"events", jobs_ctl_events, AUTH_HANDLER, NULL},
};
#define NMETHODS (sizeof methods / sizeof methods[0])

int
control_dispatch(struct daemon *d, const struct peer *p, const char *method,
                 const cJSON *req_id, const cJSON *params, cJSON **result,
                 char *cause, size_t causelen)
{
	const struct control_method *m = NULL;
	size_t i;
	int rc;

	*result = NULL;
	for (i = 0; i < NMETHODS; i++) {
		if (strcmp(methods[i].name, method) == 0) {
			m = &methods[i];
			break;
		}
	}
	if (m == NULL) {
		/* The name came from the client: keep it short in the reply
		 * (it is valid UTF-8, checked by the framing). */
		snprintf(cause, causelen, "unknown method '%.64s'", method);
		return PROTO_E_METHOD;
	}
	if (params != NULL && !cJSON_IsObject(params)) {
		snprintf(cause, causelen, "params must be an object");
		return PROTO_E_PARAMS;
	}
	if (m->params != NULL &&
	    (rc = proto_params_check(params, m->params, cause, causelen)) != 0)
		return rc;
	return m->handler(d, p, req_id, params, result, cause, causelen);
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
	         "(this daemon speaks %d)",
	         (long long)version, PROTO_VERSION);
	if ((data = cJSON_CreateObject()) == NULL ||
	    (versions = cJSON_AddArrayToObject(data, "versions")) == NULL) {
		cJSON_Delete(data);
		return -ENOMEM;
	}
	cJSON_AddItemToArray(versions, proto_int_create(PROTO_VERSION));
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
	if (version != PROTO_VERSION) {
		hello_refuse(d, p, req_id, version);
		return CONTROL_DEFERRED;
	}
	if (client != NULL)
		log_debug("client %llu is %s", (unsigned long long)p->client_id,
		          client);
	if ((r = cJSON_CreateObject()) == NULL)
		goto oom;
	proto_add_int(r, "version", PROTO_VERSION);
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

static int
ctl_info(struct daemon *d, const struct peer *p, const cJSON *req_id,
         const cJSON *params, cJSON **result, char *cause, size_t causelen)
{
	cJSON *r;

	if ((r = cJSON_CreateObject()) == NULL) {
		snprintf(cause, causelen, "out of memory");
		return PROTO_E_INTERNAL;
	}
	cJSON_AddStringToObject(r, "daemon_version", STAGELOAD_VERSION);
	proto_add_int(r, "version", PROTO_VERSION);
	cJSON_AddStringToObject(r, "os", STAGELOAD_OS);
	proto_add_int(r, "interval_ms", d->cfg.interval_ms);
	proto_add_int(r, "started_at_ms", d->started_ms);
	cJSON_AddStringToObject(r, "socket", d->cfg.socket_path);
	cJSON_AddStringToObject(r, "db_path", d->cfg.db_path);
	proto_add_int(r, "db_bytes",
	              d->store != NULL ? store_size_bytes(d->store) : 0);
	if (d->storage_error[0] != '\0')
		cJSON_AddStringToObject(r, "storage_error", d->storage_error);
	else
		cJSON_AddNullToObject(r, "storage_error");
	if (d->have_last)
		cJSON_AddItemToObject(r, "sample",
		                      sampler_sample_json(&d->last));
	else
		cJSON_AddNullToObject(r, "sample");
	jobs_info(d, r);
	*result = r;
	return 0;
}

static cJSON *
minavgmax(double min, double avg, double max, int integral)
{
	cJSON *o = cJSON_CreateObject();

	if (integral) {
		proto_add_int(o, "min", (int64_t)(min + 0.5));
		proto_add_int(o, "avg", (int64_t)(avg + 0.5));
		proto_add_int(o, "max", (int64_t)(max + 0.5));
	} else {
		cJSON_AddNumberToObject(o, "min", min);
		cJSON_AddNumberToObject(o, "avg", avg);
		cJSON_AddNumberToObject(o, "max", max);
	}
	return o;
}

static int
ctl_history(struct daemon *d, const struct peer *p, const cJSON *req_id,
            const cJSON *params, cJSON **result, char *cause, size_t causelen)
{
	struct history_bucket *b = NULL;
	const char *tier = NULL;
	int64_t since, until, step, job_id, span;
	size_t n = 0, i;
	cJSON *r, *arr, *o;
	char why[256];
	int rc;

	/* Samples are committed in batches: answer with all of them. */
	sampler_flush(d);
	rc = proto_param_int(params, "job_id", 0, 1, INT64_MAX, &job_id, cause,
	                     causelen);
	if (rc == 0)
		return jobs_ctl_job_history(d, p, req_id, params, result, cause,
		                            causelen);
	if (rc < 0)
		return rc;

	until = now_ms();
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
	if (span / step >= MAX_HISTORY_BUCKETS) {
		snprintf(cause, causelen,
		         "history limit: %lld buckets asked, "
		         "at most %d per answer; use a larger step_ms",
		         (long long)(span / step + 1), MAX_HISTORY_BUCKETS);
		return PROTO_E_LIMIT;
	}
	if (d->store == NULL ||
	    store_history(d->store, since, until, step, &tier, &b, &n, why,
	                  sizeof why) != 0) {
		snprintf(cause, causelen, "history: %s",
		         d->store == NULL ? "no database" : why);
		return PROTO_E_STORAGE;
	}

	r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "tier", tier != NULL ? tier : "raw");
	proto_add_int(r, "step_ms", step);
	proto_add_int(r, "since_ms", since);
	proto_add_int(r, "until_ms", until);
	arr = cJSON_AddArrayToObject(r, "buckets");
	for (i = 0; i < n; i++) {
		o = cJSON_CreateObject();
		proto_add_int(o, "ts_ms", b[i].ts_ms);
		proto_add_int(o, "n", b[i].n);
		cJSON_AddItemToObject(o, "free_pct",
		                      minavgmax(b[i].free_pct_min,
		                                b[i].free_pct_avg,
		                                b[i].free_pct_max, 0));
		cJSON_AddItemToObject(o, "swap_used_bytes",
		                      minavgmax(b[i].swap_used_min,
		                                b[i].swap_used_avg,
		                                b[i].swap_used_max, 1));
		cJSON_AddItemToObject(o, "available_bytes",
		                      minavgmax(b[i].available_min,
		                                b[i].available_avg,
		                                b[i].available_max, 1));
		cJSON_AddStringToObject(
		    o, "pressure_max",
		    sampler_pressure_name(
		        (enum pressure_level)b[i].pressure_max));
		cJSON_AddBoolToObject(o, "gap", b[i].gap_before != 0);
		cJSON_AddItemToArray(arr, o);
	}
	free(b);
	*result = r;
	return 0;
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
	if ((rc = sampler_subscribe(d, p->client_id, p->uid, samples, events,
	                            (pid_t)pid, pi.start_time, cause,
	                            causelen)) != 0)
		return PROTO_E_INTERNAL;
	*result = cJSON_CreateObject();
	proto_add_int(*result, "interval_ms", d->cfg.interval_ms);
	return 0;
}

static int
ctl_unsubscribe(struct daemon *d, const struct peer *p, const cJSON *req_id,
                const cJSON *params, cJSON **result, char *cause,
                size_t causelen)
{
	sampler_unsubscribe(d, p->client_id);
	*result = cJSON_CreateObject();
	return 0;
}
