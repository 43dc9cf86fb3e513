/*
 * Inside libstageload: the client's state and the calls between its three
 * parts, which go one way: the API (client.c) uses the transport
 * (client-transport.c) and the decoding (client-decode.c); the transport
 * uses the decoding; the decoding uses neither. Not installed; tests reach
 * some of it directly.
 */
#ifndef SL_CLIENT_INTERNAL_H
#define SL_CLIENT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "proto.h"
#include "socket-trust.h"
#include "stageload.h"
#include "sl-job.h"

/* client-spec.c: a copy of the spec's params, NULL when out of memory. */
cJSON *client_spec_params(const sl_job_spec *spec);
/* The first of the spec's params that update does not take, or NULL. */
const char *client_spec_not_update(const sl_job_spec *spec);

#define CLIENT_SYSTEM_SOCKET SOCKET_SYSTEM_PATH

#define CLIENT_DEFAULT_TIMEOUT_MS 30000
/* Answers are as large as what was asked: 100000 history buckets (the
 * daemon's limit) make a line of about 25 MiB. The 4 MiB line limit is
 * the daemon's for requests; this one only stops a runaway peer. */
#define CLIENT_MAX_LINE (256u << 20)

/* A notification kept until the caller asks for it. */
struct pending {
	struct pending *next;
	cJSON *root; /* the whole message */
	const char *method;
	const cJSON *params;
};

struct sl_client {
	int fd;
	char path[1024];
	int timeout_ms;
	int errcode;
	char errmsg[1024];
	struct sl_hello hello;
	struct proto_reader reader;
	int64_t next_id;

	struct pending *head, *tail;
	size_t npending;

	/* the call in flight: its id and, once arrived, the response */
	int64_t want_id;
	cJSON *reply_root;

	/* sl_logs(): log notifications for this job go to the callback */
	sl_log_cb log_cb;
	void *log_arg;
	int64_t log_id;
	int64_t log_offset;
	int log_stop;
	int log_progress; /* a chunk arrived: the call's timeout restarts */
	int in_cb;        /* inside the log callback: the client is busy */

	/* The token of the attached job submitted last (sl_job_token) */
	int64_t token_id;
	char token[80];
};

/* ---- transport (client-transport.c) ---- */

/*
 * The resolution order of sl_socket_path() with every input explicit, so
 * it can be tested without touching the environment or /var/run. NULL or
 * "" means unset; system_path is used when it exists. *kind: the rule
 * socket_check applies to the path.
 */
int client_socket_path_resolve(const char *explicit_path,
                               const char *env_socket, const char *system_path,
                               const char *xdg_runtime, const char *home,
                               unsigned long uid, char *buf, size_t len,
                               enum socket_kind *kind);

/* Set the client's error (code and message); returns code. */
int client_error(sl_client *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* params_json (NULL or "": none, *params NULL) as a JSON object; a text
 * that is not one is -EINVAL, said on c. */
int client_params(sl_client *c, const char *method, const char *params_json,
                  cJSON **params);
/* Close the socket but keep buffered notifications: a caller whose
 * connection dropped may still want what arrived before. */
void client_drop(sl_client *c);
/*
 * Send method(params) and wait for its answer (timeout_ms -1: no limit).
 * params is consumed. On success *root is the whole response (free with
 * cJSON_Delete) and *result points into it.
 */
int client_call(sl_client *c, const char *method, cJSON *params, int timeout_ms,
                cJSON **root, const cJSON **result);

/*
 * A paged method (client.c): call it with params (consumed), then again
 * with each result's next_cursor as "cursor", until a result has none or
 * each, given every result, returns 1 (stop) or a negative errno (the
 * error is set from it). Returns 0 or a negative code. sl_call_pages is
 * the public form.
 */
int client_pages(sl_client *c, const char *method, cJSON *params,
                 int (*each)(const cJSON *result, void *arg), void *arg);

/* ---- decoding (client-decode.c) ---- */

/* A member of an object (NULL when obj is not one), and typed reads of
 * one with a default for a member missing or of another type. */
const cJSON *client_member(const cJSON *obj, const char *name);
/* A member that must be an array: NULL when it is anything else, so a
 * malformed answer is never walked as one (cJSON iterates objects too). */
const cJSON *client_array(const cJSON *obj, const char *name);
int64_t client_i64(const cJSON *obj, const char *name, int64_t dflt);
uint64_t client_u64(const cJSON *obj, const char *name);
double client_dbl(const cJSON *obj, const char *name, double dflt);
int client_bool(const cJSON *obj, const char *name);
int client_has_number(const cJSON *obj, const char *name);
void client_str(const cJSON *obj, const char *name, char *buf, size_t len);
char *client_dup_str(const cJSON *obj, const char *name);
char **client_dup_strv(const cJSON *obj, const char *name);

void client_decode_sample(const cJSON *o, struct sl_sample *s);
void client_decode_event(const cJSON *o, struct sl_event *e);
void client_decode_job(const cJSON *o, struct sl_job *j);
void client_decode_hello(const cJSON *r, struct sl_hello *h);
void client_decode_info(const cJSON *r, struct sl_info *info);
void client_decode_notification(const char *method, const cJSON *params,
                                struct sl_notification *n);
/* A history result into a new sl_history; -ENOMEM. */
/* report's result; -ENOMEM. */
int client_decode_report(const cJSON *r, struct sl_report **out);
int client_decode_history(const cJSON *r, int64_t since_ms, int64_t until_ms,
                          struct sl_history **out);

/* The lists results hold: status's jobs, events, history's buckets. */
enum client_list { CLIENT_JOBS, CLIENT_EVENTS, CLIENT_BUCKETS };
/*
 * The one decoder of lists: append the items of result's list of kind k
 * (its "jobs", "events" or "buckets"; none when missing) to *items, a
 * vector of *n of them, keeping one zeroed item past the end so that an
 * empty list is not NULL. stop (or NULL) is asked after each item whether
 * to stop there. Returns 1 when it stopped, 0 when every item was taken,
 * or -ENOMEM (*items and *n still describe what there is).
 */
int client_decode_list(const cJSON *result, enum client_list k,
                       int (*stop)(const void *elem, void *arg), void *arg,
                       void **items, size_t *n);
/* Free a vector of n items of kind k and what each holds. */
void client_list_free(enum client_list k, void *items, size_t n);

#endif
