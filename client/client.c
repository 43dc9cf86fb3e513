/*
 * libstageload: a blocking JSON-RPC client over the daemon's Unix socket,
 * with buffered notifications. stageload.h documents the API and
 * proto/PROTOCOL.md the wire.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "client-internal.h"
#include "proto.h"
#include "stageload.h"
#include "version.h"

extern char **environ;

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
};

static int64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int set_error(sl_client *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
set_error(sl_client *c, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->errmsg, sizeof c->errmsg, fmt, ap);
	va_end(ap);
	c->errcode = code;
	return code;
}

int
sl_error_is_connection(int code)
{
	/* errnos are the connection's, but for the caller's own mistakes
	 * and running out of memory. */
	switch (-code) {
	case EINVAL:
	case ENOMEM:
	case ERANGE:
	case E2BIG:
		return 0;
	}
	return code < 0 && code > -1000;
}

const char *
sl_strerror(int code)
{
	switch (code) {
	case 0:
		return "success";
	case SL_E_PARSE:
		return "parse error";
	case SL_E_INVALID_REQUEST:
		return "invalid request";
	case SL_E_METHOD:
		return "method not found";
	case SL_E_PARAMS:
		return "invalid params";
	case SL_E_INTERNAL:
		return "internal error in the daemon";
	case SL_E_HELLO:
		return "hello required";
	case SL_E_VERSION:
		return "protocol version not supported";
	case SL_E_PERM:
		return "permission denied";
	case SL_E_NOJOB:
		return "no such job";
	case SL_E_LIMIT:
		return "limit reached";
	case SL_E_STATE:
		return "job is in the wrong state";
	case SL_E_STORAGE:
		return "storage error in the daemon";
	case SL_E_NOPROC:
		return "no such process";
	}
	if (code < 0 && code > -1000)
		return strerror(-code);
	return "unknown error";
}

sl_client *
sl_client_new(void)
{
	sl_client *c = calloc(1, sizeof *c);

	if (c == NULL)
		return NULL;
	c->fd = -1;
	c->timeout_ms = CLIENT_DEFAULT_TIMEOUT_MS;
	return c;
}

static void
pending_clear(sl_client *c)
{
	struct pending *p, *next;

	for (p = c->head; p != NULL; p = next) {
		next = p->next;
		cJSON_Delete(p->root);
		free(p);
	}
	c->head = c->tail = NULL;
	c->npending = 0;
}

/* Close the socket but keep buffered notifications: a caller whose
 * connection dropped may still want what arrived before. */
static void
drop_connection(sl_client *c)
{
	if (c->fd != -1) {
		close(c->fd);
		c->fd = -1;
		proto_reader_free(&c->reader);
	}
	cJSON_Delete(c->reply_root);
	c->reply_root = NULL;
	c->want_id = 0;
}

void
sl_close(sl_client *c)
{
	if (c == NULL)
		return;
	drop_connection(c);
	pending_clear(c);
}

void
sl_client_free(sl_client *c)
{
	if (c == NULL)
		return;
	sl_close(c);
	free(c);
}

int
sl_is_connected(const sl_client *c)
{
	return c->fd != -1;
}

const char *
sl_path(const sl_client *c)
{
	return c->path;
}

int
sl_errcode(const sl_client *c)
{
	return c->errcode;
}

const char *
sl_errmsg(const sl_client *c)
{
	return c->errmsg[0] != '\0' ? c->errmsg : sl_strerror(c->errcode);
}

int
sl_set_timeout(sl_client *c, int timeout_ms)
{
	int old = c->timeout_ms;

	c->timeout_ms = timeout_ms < 0 ? -1 : timeout_ms;
	return old;
}

const struct sl_hello *
sl_hello_info(const sl_client *c)
{
	return &c->hello;
}

int
sl_fd(const sl_client *c)
{
	return c->fd;
}

size_t
sl_pending(const sl_client *c)
{
	return c->npending;
}

void
sl_free(void *p)
{
	free(p);
}

static int
copy_path(char *buf, size_t len, const char *a, const char *b)
{
	int n = snprintf(buf, len, "%s%s", a, b != NULL ? b : "");

	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	return 0;
}

int
client_socket_path_resolve(const char *explicit_path, const char *env_socket,
                           const char *system_path, const char *xdg_runtime,
                           unsigned long uid, char *buf, size_t len)
{
	struct stat st;
	int n;

	if (explicit_path != NULL && explicit_path[0] != '\0')
		return copy_path(buf, len, explicit_path, NULL);
	if (env_socket != NULL && env_socket[0] != '\0')
		return copy_path(buf, len, env_socket, NULL);
	if (system_path != NULL && system_path[0] != '\0' &&
	    stat(system_path, &st) == 0)
		return copy_path(buf, len, system_path, NULL);
	/* Only an absolute one, as the XDG base directory specification
	 * says and the daemon does: a relative one is ignored. */
	if (xdg_runtime != NULL && xdg_runtime[0] == '/')
		return copy_path(buf, len, xdg_runtime, "/stageload.sock");
	n = snprintf(buf, len, "/tmp/stageload-%lu/stageload.sock", uid);
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	return 0;
}

int
sl_socket_path(const char *explicit_path, char *buf, size_t len)
{
	return client_socket_path_resolve(
	    explicit_path, getenv("STAGELOAD_SOCKET"), CLIENT_SYSTEM_SOCKET,
	    getenv("XDG_RUNTIME_DIR"), (unsigned long)getuid(), buf, len);
}

/* ---- JSON helpers: numbers are read from valuedouble (PROTOCOL.md) ---- */

static const cJSON *
member(const cJSON *obj, const char *name)
{
	if (obj == NULL || !cJSON_IsObject(obj))
		return NULL;
	return cJSON_GetObjectItemCaseSensitive(obj, name);
}

/* A member that must be an array: NULL when it is anything else, so a
 * malformed answer is never walked as one (cJSON iterates objects too). */
static const cJSON *
array_member(const cJSON *obj, const char *name)
{
	const cJSON *v = member(obj, name);

	return cJSON_IsArray(v) ? v : NULL;
}

static int64_t
get_i64(const cJSON *obj, const char *name, int64_t dflt)
{
	const cJSON *v = member(obj, name);

	if (v == NULL || !cJSON_IsNumber(v))
		return dflt;
	return (int64_t)v->valuedouble;
}

static uint64_t
get_u64(const cJSON *obj, const char *name)
{
	const cJSON *v = member(obj, name);

	if (v == NULL || !cJSON_IsNumber(v) || v->valuedouble < 0)
		return 0;
	return (uint64_t)v->valuedouble;
}

static double
get_dbl(const cJSON *obj, const char *name, double dflt)
{
	const cJSON *v = member(obj, name);

	if (v == NULL || !cJSON_IsNumber(v))
		return dflt;
	return v->valuedouble;
}

static int
get_bool(const cJSON *obj, const char *name)
{
	return cJSON_IsTrue(member(obj, name));
}

static int
has_number(const cJSON *obj, const char *name)
{
	return cJSON_IsNumber(member(obj, name));
}

static void
get_str(const cJSON *obj, const char *name, char *buf, size_t len)
{
	const cJSON *v = member(obj, name);

	buf[0] = '\0';
	if (v != NULL && cJSON_IsString(v) && v->valuestring != NULL)
		snprintf(buf, len, "%s", v->valuestring);
}

static char *
dup_str(const cJSON *obj, const char *name)
{
	const cJSON *v = member(obj, name);

	if (v == NULL || !cJSON_IsString(v) || v->valuestring == NULL)
		return NULL;
	return strdup(v->valuestring);
}

static char **
dup_strv(const cJSON *obj, const char *name)
{
	const cJSON *v = member(obj, name), *item;
	char **out;
	size_t n = 0;

	if (v == NULL || !cJSON_IsArray(v))
		return NULL;
	out = calloc((size_t)cJSON_GetArraySize(v) + 1, sizeof *out);
	if (out == NULL)
		return NULL;
	cJSON_ArrayForEach(item, v)
	{
		if (cJSON_IsString(item) && item->valuestring != NULL)
			out[n++] = strdup(item->valuestring);
	}
	return out;
}

static void
strv_free(char **v)
{
	size_t i;

	if (v == NULL)
		return;
	for (i = 0; v[i] != NULL; i++)
		free(v[i]);
	free(v);
}

static void
parse_sample(const cJSON *o, struct sl_sample *s)
{
	memset(s, 0, sizeof *s);
	s->sampled_at_ms = get_i64(o, "sampled_at_ms", 0);
	s->total_bytes = get_u64(o, "total_bytes");
	s->available_bytes = get_u64(o, "available_bytes");
	s->free_pct = get_dbl(o, "free_pct", 0);
	s->swap_total_bytes = get_u64(o, "swap_total_bytes");
	s->swap_used_bytes = get_u64(o, "swap_used_bytes");
	get_str(o, "pressure", s->pressure, sizeof s->pressure);
	if (s->pressure[0] == '\0')
		snprintf(s->pressure, sizeof s->pressure, "unknown");
	s->has_psi = has_number(o, "psi_some_avg10");
	s->psi_some_avg10 = get_dbl(o, "psi_some_avg10", 0);
	s->compressed_bytes = get_u64(o, "compressed_bytes");
	s->wired_bytes = get_u64(o, "wired_bytes");
	s->has_pid = has_number(o, "pid");
	if (s->has_pid) {
		s->pid = get_i64(o, "pid", 0);
		s->footprint_bytes = get_u64(o, "footprint_bytes");
		s->has_swap_bytes = has_number(o, "swap_bytes");
		s->swap_bytes = get_u64(o, "swap_bytes");
		s->nprocs = (int)get_i64(o, "nprocs", 0);
	}
}

static void
parse_event(const cJSON *o, struct sl_event *e)
{
	const cJSON *d;

	memset(e, 0, sizeof *e);
	e->id = get_i64(o, "id", 0);
	e->ts_ms = get_i64(o, "ts_ms", 0);
	e->job_id = get_i64(o, "job_id", 0);
	get_str(o, "user", e->user, sizeof e->user);
	get_str(o, "kind", e->kind, sizeof e->kind);
	/* The daemon sends an object (breach: the triggering sample); keep
	 * it as compact JSON text so callers need no cJSON. */
	d = member(o, "detail");
	if (d != NULL && (cJSON_IsObject(d) || cJSON_IsArray(d)))
		e->detail = proto_print(d, 0);
	else
		e->detail = dup_str(o, "detail");
}

static void
parse_job(const cJSON *o, struct sl_job *j)
{
	memset(j, 0, sizeof *j);
	j->id = get_i64(o, "id", 0);
	get_str(o, "user", j->user, sizeof j->user);
	j->uid = get_i64(o, "uid", -1);
	get_str(o, "name", j->name, sizeof j->name);
	get_str(o, "state", j->state, sizeof j->state);
	j->attached = get_bool(o, "attached");
	j->priority = (int)get_i64(o, "priority", 0);
	j->wait_free_pct = get_dbl(o, "wait_free_pct", 0);
	j->swap_budget_bytes = get_u64(o, "swap_budget_bytes");
	j->expect_bytes = get_u64(o, "expect_bytes");
	j->exclusive = get_bool(o, "exclusive");
	j->retry_on_breach = (int)get_i64(o, "retry_on_breach", 0);
	j->attempt = (int)get_i64(o, "attempt", 1);
	j->position = (int)get_i64(o, "position", 0);
	j->submitted_at_ms = get_i64(o, "submitted_at_ms", 0);
	j->admitted_at_ms = get_i64(o, "admitted_at_ms", 0);
	j->started_at_ms = get_i64(o, "started_at_ms", 0);
	j->ended_at_ms = get_i64(o, "ended_at_ms", 0);
	j->pid = get_i64(o, "pid", 0);
	j->footprint_bytes = get_u64(o, "footprint_bytes");
	j->footprint_peak_bytes = get_u64(o, "footprint_peak_bytes");
	j->swap_growth_bytes = get_u64(o, "swap_growth_bytes");
	j->swap_growth_peak_bytes = get_u64(o, "swap_growth_peak_bytes");
	j->job_swap_bytes = get_u64(o, "job_swap_bytes");
	j->has_exit_code = has_number(o, "exit_code");
	j->exit_code = (int)get_i64(o, "exit_code", 0);
	j->signal = (int)get_i64(o, "signal", 0);
	get_str(o, "end_reason", j->end_reason, sizeof j->end_reason);
	j->end_detail = dup_str(o, "end_detail");
	j->argv = dup_strv(o, "argv");
	j->cwd = dup_str(o, "cwd");
	j->command = dup_str(o, "command");
	j->env = dup_strv(o, "env");
}

void
sl_job_clear(struct sl_job *j)
{
	if (j == NULL)
		return;
	free(j->end_detail);
	strv_free(j->argv);
	free(j->cwd);
	strv_free(j->env);
	free(j->command);
	memset(j, 0, sizeof *j);
}

int
sl_job_ended(const struct sl_job *j)
{
	static const char *const ended[] = {"exited",    "killed", "failed",
	                                    "cancelled", "lost",   NULL};
	size_t i;

	for (i = 0; ended[i] != NULL; i++)
		if (strcmp(j->state, ended[i]) == 0)
			return 1;
	return 0;
}

/* ---- reading ---- */

static void
pending_push(sl_client *c, cJSON *root, const char *method, const cJSON *params)
{
	struct pending *p = calloc(1, sizeof *p);

	if (p == NULL) {
		/* Losing one notification beats failing the call that is
		 * waiting for its answer. */
		cJSON_Delete(root);
		return;
	}
	p->root = root;
	p->method = method;
	p->params = params;
	if (c->tail != NULL)
		c->tail->next = p;
	else
		c->head = p;
	c->tail = p;
	c->npending++;
}

/* A log chunk of the job sl_logs() is streaming: hand it over at once
 * rather than buffer a whole followed log. */
static int
deliver_log(sl_client *c, const cJSON *params)
{
	const cJSON *data = member(params, "data");
	int64_t offset = get_i64(params, "offset", 0);
	size_t len;
	int rc;

	if (get_i64(params, "id", -1) != c->log_id || !cJSON_IsString(data))
		return 0;
	/* Refused once: the rest is dropped, the callback not called. */
	if (c->log_stop != 0)
		return 1;
	len = strlen(data->valuestring);
	c->in_cb = 1;
	rc = c->log_cb(c->log_arg, offset, data->valuestring, len);
	c->in_cb = 0;
	c->log_offset = offset + (int64_t)len;
	c->log_progress = 1;
	if (rc != 0)
		c->log_stop = rc;
	return 1;
}

static int
on_line(void *arg, char *line, size_t len)
{
	sl_client *c = arg;
	struct proto_msg m;
	const char *cause = NULL;
	int64_t id;

	memset(&m, 0, sizeof m);
	if (len == 0)
		return 0;
	if (proto_parse(line, len, &m, &cause) != 0) {
		/* Not ours to fix: a garbled line from the daemon is
		 * skipped, and the call waiting for it times out. */
		proto_msg_free(&m);
		return 0;
	}
	if (m.kind == PROTO_RESPONSE) {
		/* An error with id null answers the call in flight too: the
		 * daemon sends one when it refuses the connection before
		 * reading a request (a connection limit), then closes it. */
		if (c->want_id != 0 && c->reply_root == NULL &&
		    ((proto_id_int(m.id, &id) == 0 && id == c->want_id) ||
		     (cJSON_IsNull(m.id) && m.error != NULL))) {
			c->reply_root = m.root;
			m.root = NULL;
		}
	} else if (m.kind == PROTO_NOTIFICATION && m.method != NULL) {
		if (c->log_cb != NULL && strcmp(m.method, "log") == 0 &&
		    deliver_log(c, m.params)) {
			/* consumed */
		} else {
			pending_push(c, m.root, m.method, m.params);
			m.root = NULL;
		}
	}
	proto_msg_free(&m);
	return 0;
}

/* Read once (non-blocking when dontwait) and feed the framer. Returns the
 * bytes read, 0 when nothing was available, or a negative code with the
 * connection dropped. */
static int
read_some(sl_client *c, int dontwait)
{
	char buf[65536];
	ssize_t n;
	int rc;

	if (c->fd == -1)
		return set_error(c, -ENOTCONN, "not connected to the daemon");
	do
		n = recv(c->fd, buf, sizeof buf, dontwait ? MSG_DONTWAIT : 0);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		rc = -errno;
		drop_connection(c);
		return set_error(c, rc,
		                 "lost the connection to the daemon at %s: %s",
		                 c->path, strerror(-rc));
	}
	if (n == 0) {
		drop_connection(c);
		return set_error(c, -ECONNRESET,
		                 "the daemon at %s closed the connection",
		                 c->path);
	}
	rc = proto_reader_feed(&c->reader, buf, (size_t)n, on_line, c);
	if (rc == PROTO_FRAME_TOO_LONG || rc == PROTO_FRAME_UTF8) {
		drop_connection(c);
		return set_error(
		    c, -EPROTO, "the daemon at %s sent a malformed line (%s)",
		    c->path,
		    rc == PROTO_FRAME_UTF8 ? "invalid UTF-8" : "too long");
	}
	return (int)n;
}

/* Wait until fd is readable or the deadline (-1: none) passes. Returns 1,
 * 0 on timeout, or negative. */
static int
wait_readable(sl_client *c, int64_t deadline, int intr)
{
	struct pollfd pfd;
	int timeout, rc;

	for (;;) {
		timeout = -1;
		if (deadline >= 0) {
			int64_t left = deadline - mono_ms();
			if (left < 0)
				left = 0;
			timeout = (int)(left > 1000000 ? 1000000 : left);
		}
		pfd.fd = c->fd;
		pfd.events = POLLIN;
		pfd.revents = 0;
		rc = poll(&pfd, 1, timeout);
		if (rc > 0)
			return 1;
		if (rc == 0) {
			if (deadline >= 0 && mono_ms() >= deadline)
				return 0;
			continue;
		}
		if (errno == EINTR) {
			/* Waiting for notifications, a signal is for the
			 * caller (Ctrl-C in a CLI): let it look at its flags.
			 * A call in flight carries on. */
			if (intr)
				return set_error(c, -EINTR, "interrupted");
			continue;
		}
		return set_error(c, -errno, "poll: %s", strerror(errno));
	}
}

int
sl_process_input(sl_client *c)
{
	int rc;

	if (c->in_cb)
		return set_error(c, -EBUSY, "called from a log callback");
	for (;;) {
		rc = read_some(c, 1);
		if (rc < 0)
			return rc;
		if (rc == 0)
			break;
	}
	return (int)c->npending;
}

/* ---- writing and calling ---- */

/*
 * Write a request by the call's deadline (-1: none). A daemon that stops
 * reading (stopped, or hung on a disk) must cost a timeout, not a send()
 * blocked for ever: the socket's buffer holds about 200 KB, a request up
 * to 4 MiB. What arrives meanwhile is read, so neither side waits on the
 * other. When the daemon has closed the connection, what it sent before
 * may say why (a connection limit, with id null): read that, and return 0
 * with it taken as the answer, for the caller to report.
 */
static int
write_all(sl_client *c, const char *buf, size_t len, int64_t deadline,
          const char *method)
{
	int flags = MSG_DONTWAIT;
	struct pollfd pfd;
	int64_t left;
	ssize_t n;
	int rc;

#ifdef MSG_NOSIGNAL
	flags |= MSG_NOSIGNAL;
#endif
	while (len > 0) {
		n = send(c->fd, buf, len, flags);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			left = deadline < 0 ? -1 : deadline - mono_ms();
			if (deadline >= 0 && left <= 0) {
				/* Half a request cannot be taken back. */
				drop_connection(c);
				return set_error(
				    c, -ETIMEDOUT,
				    "the daemon at %s did not take '%s' within "
				    "the timeout",
				    c->path, method);
			}
			pfd.fd = c->fd;
			pfd.events = POLLOUT | POLLIN;
			pfd.revents = 0;
			rc = poll(&pfd, 1,
			          left < 0
			              ? -1
			              : (int)(left > 1000000 ? 1000000 : left));
			if (rc > 0 && (pfd.revents & POLLIN) &&
			    (rc = read_some(c, 1)) < 0)
				return c->reply_root != NULL ? 0 : rc;
			continue;
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			while (c->fd != -1 && c->reply_root == NULL &&
			       read_some(c, 1) > 0)
				;
			if (c->reply_root != NULL)
				return 0;
			drop_connection(c);
			return set_error(
			    c, rc,
			    "lost the connection to the daemon at %s: %s",
			    c->path, strerror(-rc));
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * Send method(params) and wait for its answer. params is consumed. On
 * success *root is the whole response (free with cJSON_Delete) and
 * *result points into it.
 */
static int
call(sl_client *c, const char *method, cJSON *params, int timeout_ms,
     cJSON **root, const cJSON **result)
{
	const cJSON *err, *res;
	int64_t deadline;
	char *line;
	size_t len;
	int rc;

	*root = NULL;
	if (c->in_cb) {
		cJSON_Delete(params);
		return set_error(c, -EBUSY,
		                 "called from a log callback: the client is "
		                 "busy with the logs call");
	}
	if (c->fd == -1) {
		cJSON_Delete(params);
		return set_error(c, -ENOTCONN, "not connected to the daemon");
	}
	c->want_id = ++c->next_id;
	line = proto_encode_request(c->want_id, method, params, &len);
	if (line == NULL)
		return set_error(c, -ENOMEM, "out of memory");
	deadline = timeout_ms < 0 ? -1 : mono_ms() + timeout_ms;
	rc = write_all(c, line, len, deadline, method);
	free(line);
	if (rc < 0)
		return rc;

	while (c->reply_root == NULL) {
		if (c->log_stop != 0) {
			rc = c->log_stop;
			drop_connection(c);
			return rc;
		}
		rc = wait_readable(c, deadline, 0);
		if (rc == 0) {
			c->want_id = 0;
			return set_error(
			    c, -ETIMEDOUT,
			    "the daemon at %s did not answer '%s' within "
			    "%d ms",
			    c->path, method, timeout_ms);
		}
		if (rc < 0) {
			c->want_id = 0;
			return rc;
		}
		c->log_progress = 0;
		rc = read_some(c, 0);
		if (rc < 0)
			return rc;
		/* A long log comes in chunks, at the pace this client reads
		 * them: the timeout is for silence, not for the whole of it. */
		if (c->log_progress && timeout_ms >= 0)
			deadline = mono_ms() + timeout_ms;
	}
	*root = c->reply_root;
	c->reply_root = NULL;
	c->want_id = 0;

	err = member(*root, "error");
	if (err != NULL) {
		const cJSON *msg = member(err, "message");
		int code = (int)get_i64(err, "code", SL_E_INTERNAL);

		if (code > -1000)
			code = SL_E_INTERNAL; /* keep the ranges apart */
		set_error(c, code, "%s",
		          cJSON_IsString(msg) ? msg->valuestring
		                              : sl_strerror(code));
		cJSON_Delete(*root);
		*root = NULL;
		return code;
	}
	res = member(*root, "result");
	if (res == NULL) {
		cJSON_Delete(*root);
		*root = NULL;
		return set_error(c, -EPROTO,
		                 "the daemon answered '%s' without a result",
		                 method);
	}
	if (result != NULL)
		*result = res;
	c->errcode = 0;
	c->errmsg[0] = '\0';
	return 0;
}

int
sl_call(sl_client *c, const char *method, const char *params_json,
        char **result_json)
{
	const cJSON *result;
	cJSON *params = NULL, *root;
	int rc;

	if (result_json != NULL)
		*result_json = NULL;
	if (method == NULL || method[0] == '\0')
		return set_error(c, -EINVAL, "no method to call");
	if (params_json != NULL && params_json[0] != '\0') {
		params = cJSON_Parse(params_json);
		if (params == NULL || !cJSON_IsObject(params)) {
			cJSON_Delete(params);
			return set_error(
			    c, -EINVAL, "params for '%s' must be a JSON object",
			    method);
		}
	}
	rc = call(c, method, params, c->timeout_ms, &root, &result);
	if (rc < 0)
		return rc;
	if (result_json != NULL) {
		*result_json = proto_print(result, 0);
		if (*result_json == NULL) {
			cJSON_Delete(root);
			return set_error(c, -ENOMEM, "out of memory");
		}
	}
	cJSON_Delete(root);
	return 0;
}

/* ---- connecting ---- */

static int
hello(sl_client *c)
{
	const cJSON *result;
	cJSON *params, *root;
	int rc;

	params = cJSON_CreateObject();
	if (params == NULL)
		return set_error(c, -ENOMEM, "out of memory");
	proto_add_int(params, "version", SL_PROTOCOL_VERSION);
	cJSON_AddStringToObject(params, "client",
	                        "libstageload/" STAGELOAD_VERSION);
	rc = call(c, "hello", params, c->timeout_ms < 0 ? 10000 : c->timeout_ms,
	          &root, &result);
	if (rc == SL_E_VERSION && SL_PROTOCOL_VERSION > 1) {
		/* A daemon older than version 2 speaks 1: everything but
		 * the pages of status. The connection stays open. */
		if ((params = cJSON_CreateObject()) == NULL)
			return set_error(c, -ENOMEM, "out of memory");
		proto_add_int(params, "version", 1);
		cJSON_AddStringToObject(params, "client",
		                        "libstageload/" STAGELOAD_VERSION);
		rc = call(c, "hello", params,
		          c->timeout_ms < 0 ? 10000 : c->timeout_ms, &root,
		          &result);
	}
	if (rc == SL_E_VERSION) {
		char msg[sizeof c->errmsg];
		snprintf(msg, sizeof msg, "%s", c->errmsg);
		return set_error(
		    c, rc,
		    "the daemon at %s speaks neither protocol version %d "
		    "nor 1 (%s); upgrade stageloadctl or the daemon",
		    c->path, SL_PROTOCOL_VERSION, msg);
	}
	if (rc < 0)
		return rc;
	memset(&c->hello, 0, sizeof c->hello);
	c->hello.version = (int)get_i64(result, "version", 0);
	get_str(result, "daemon_version", c->hello.daemon_version,
	        sizeof c->hello.daemon_version);
	get_str(result, "os", c->hello.os, sizeof c->hello.os);
	c->hello.interval_ms = get_i64(result, "interval_ms", 0);
	c->hello.uid = get_i64(result, "uid", -1);
	cJSON_Delete(root);
	return 0;
}

int
sl_connect(sl_client *c, const char *path)
{
	struct sockaddr_un sun;
	int fd, rc;

	sl_close(c);
	if (path != NULL && path[0] != '\0')
		rc = copy_path(c->path, sizeof c->path, path, NULL);
	else
		rc = sl_socket_path(NULL, c->path, sizeof c->path);
	if (rc < 0)
		return set_error(c, rc, "socket path too long");

	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	if (strlen(c->path) >= sizeof sun.sun_path)
		return set_error(c, -ENAMETOOLONG,
		                 "socket path %s is longer than %zu bytes",
		                 c->path, sizeof sun.sun_path - 1);
	memcpy(sun.sun_path, c->path, strlen(c->path) + 1);

	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (fd == -1)
		return set_error(c, -errno, "socket: %s", strerror(errno));
	/* Commands a CLI starts must not inherit the daemon connection. */
	fcntl(fd, F_SETFD, FD_CLOEXEC);
#ifdef SO_NOSIGPIPE
	{
		int one = 1;
		setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, sizeof one);
	}
#endif
	while ((rc = connect(fd, (struct sockaddr *)&sun, sizeof sun)) == -1 &&
	       errno == EINTR)
		;
	if (rc == -1) {
		rc = -errno;
		close(fd);
		if (rc == -ENOENT || rc == -ECONNREFUSED)
			return set_error(
			    c, rc,
			    "daemon not running at %s (start it with: "
			    "stageloadd)",
			    c->path);
		if (rc == -EACCES || rc == -EPERM)
			return set_error(c, rc,
			                 "permission denied connecting to %s",
			                 c->path);
		return set_error(c, rc, "cannot connect to %s: %s", c->path,
		                 strerror(-rc));
	}
	c->fd = fd;
	proto_reader_init(&c->reader, CLIENT_MAX_LINE);
	rc = hello(c);
	if (rc < 0) {
		drop_connection(c);
		return rc;
	}
	return 0;
}

/* ---- notifications ---- */

void
sl_notification_clear(struct sl_notification *n)
{
	if (n == NULL)
		return;
	free(n->params_json);
	free(n->event.detail);
	free(n->log.data);
	memset(n, 0, sizeof *n);
}

static int
kind_of(const char *method)
{
	static const struct {
		const char *name;
		enum sl_notification_kind kind;
	} kinds[] = {
	    {"sample", SL_N_SAMPLE},     {"process_gone", SL_N_PROCESS_GONE},
	    {"event", SL_N_EVENT},       {"queue", SL_N_QUEUE},
	    {"admitted", SL_N_ADMITTED}, {"breach", SL_N_BREACH},
	    {"log", SL_N_LOG},           {"ended", SL_N_ENDED},
	};
	size_t i;

	for (i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
		if (strcmp(method, kinds[i].name) == 0)
			return kinds[i].kind;
	return SL_N_OTHER;
}

static void
fill_notification(const struct pending *p, struct sl_notification *n)
{
	const cJSON *o = p->params;

	memset(n, 0, sizeof *n);
	snprintf(n->method, sizeof n->method, "%s", p->method);
	n->kind = kind_of(p->method);
	n->params_json = o != NULL ? proto_print(o, 0) : strdup("{}");
	switch (n->kind) {
	case SL_N_SAMPLE:
		parse_sample(o, &n->sample);
		break;
	case SL_N_PROCESS_GONE:
		n->pid = get_i64(o, "pid", 0);
		break;
	case SL_N_EVENT:
		parse_event(o, &n->event);
		break;
	case SL_N_QUEUE:
		n->queue.id = get_i64(o, "id", 0);
		n->queue.position = (int)get_i64(o, "position", 0);
		n->queue.of = (int)get_i64(o, "of", 0);
		n->queue.free_pct = get_dbl(o, "free_pct", 0);
		n->queue.wait_free_pct = get_dbl(o, "wait_free_pct", 0);
		get_str(o, "waiting_for", n->queue.waiting_for,
		        sizeof n->queue.waiting_for);
		break;
	case SL_N_ADMITTED:
		n->admitted.id = get_i64(o, "id", 0);
		n->admitted.attempt = (int)get_i64(o, "attempt", 1);
		break;
	case SL_N_BREACH:
		n->breach.id = get_i64(o, "id", 0);
		n->breach.swap_growth_bytes = get_u64(o, "swap_growth_bytes");
		n->breach.swap_budget_bytes = get_u64(o, "swap_budget_bytes");
		n->breach.requeued = get_bool(o, "requeued");
		break;
	case SL_N_LOG:
		n->log.id = get_i64(o, "id", 0);
		n->log.offset = get_i64(o, "offset", 0);
		n->log.data = dup_str(o, "data");
		n->log.len = n->log.data != NULL ? strlen(n->log.data) : 0;
		break;
	case SL_N_ENDED:
		n->ended.id = get_i64(o, "id", 0);
		get_str(o, "state", n->ended.state, sizeof n->ended.state);
		get_str(o, "end_reason", n->ended.end_reason,
		        sizeof n->ended.end_reason);
		break;
	case SL_N_OTHER:
		break;
	}
}

int
sl_next_notification(sl_client *c, int timeout_ms, struct sl_notification *n)
{
	struct pending *p;
	int64_t deadline = timeout_ms < 0 ? -1 : mono_ms() + timeout_ms;
	int rc;

	memset(n, 0, sizeof *n);
	if (c->head == NULL && c->fd != -1) {
		rc = sl_process_input(c);
		if (rc < 0 && c->head == NULL)
			return rc;
	}
	while (c->head == NULL) {
		/* Keep the message of the failure that dropped the
		 * connection: it says more than "not connected". (Not a
		 * daemon's refusal of an earlier call, or sl_close.) */
		if (c->fd == -1 && c->errcode < 0 &&
		    sl_error_is_connection(c->errcode))
			return c->errcode;
		if (c->fd == -1)
			return set_error(c, -ENOTCONN,
			                 "not connected to the daemon");
		if (timeout_ms == 0)
			return 0;
		rc = wait_readable(c, deadline, 1);
		if (rc <= 0)
			return rc;
		rc = read_some(c, 0);
		if (rc < 0 && c->head == NULL)
			return rc;
	}
	p = c->head;
	c->head = p->next;
	if (c->head == NULL)
		c->tail = NULL;
	c->npending--;
	fill_notification(p, n);
	cJSON_Delete(p->root);
	free(p);
	return 1;
}

int
sl_next_sample(sl_client *c, int timeout_ms, struct sl_sample *s)
{
	struct sl_notification n;
	int64_t deadline = timeout_ms < 0 ? -1 : mono_ms() + timeout_ms;
	int rc, left;

	for (;;) {
		left = -1;
		if (deadline >= 0) {
			int64_t l = deadline - mono_ms();
			left = l < 0 ? 0 : (int)l;
		}
		rc = sl_next_notification(c, left, &n);
		if (rc <= 0)
			return rc;
		if (n.kind == SL_N_SAMPLE) {
			*s = n.sample;
			sl_notification_clear(&n);
			return 1;
		}
		if (n.kind == SL_N_PROCESS_GONE) {
			memset(s, 0, sizeof *s);
			s->pid = n.pid;
			sl_notification_clear(&n);
			return SL_GONE;
		}
		sl_notification_clear(&n);
	}
}

/* ---- typed calls ---- */

/* params for methods whose only member is the job id */
static cJSON *
id_params(int64_t id)
{
	cJSON *p = cJSON_CreateObject();

	if (p != NULL)
		proto_add_int(p, "id", id);
	return p;
}

static int
need(sl_client *c, const void *p)
{
	return p == NULL ? set_error(c, -ENOMEM, "out of memory") : 0;
}

int
sl_info(sl_client *c, struct sl_info *info)
{
	const cJSON *r, *jobs, *sample;
	cJSON *root;
	int rc;

	rc = call(c, "info", NULL, c->timeout_ms, &root, &r);
	if (rc < 0)
		return rc;
	memset(info, 0, sizeof *info);
	get_str(r, "daemon_version", info->daemon_version,
	        sizeof info->daemon_version);
	info->version = (int)get_i64(r, "version", 0);
	get_str(r, "os", info->os, sizeof info->os);
	info->interval_ms = get_i64(r, "interval_ms", 0);
	info->started_at_ms = get_i64(r, "started_at_ms", 0);
	get_str(r, "socket", info->socket, sizeof info->socket);
	get_str(r, "db_path", info->db_path, sizeof info->db_path);
	info->db_bytes = get_u64(r, "db_bytes");
	get_str(r, "storage_error", info->storage_error,
	        sizeof info->storage_error);
	sample = member(r, "sample");
	if (sample != NULL && cJSON_IsObject(sample)) {
		info->has_sample = 1;
		parse_sample(sample, &info->sample);
	}
	jobs = member(r, "jobs");
	info->jobs_queued = (int)get_i64(jobs, "queued", 0);
	info->jobs_running = (int)get_i64(jobs, "running", 0);
	cJSON_Delete(root);
	return 0;
}

static void
parse_stat(const cJSON *o, const char *name, struct sl_stat *s)
{
	const cJSON *v = member(o, name);

	s->min = get_dbl(v, "min", 0);
	s->avg = get_dbl(v, "avg", 0);
	s->max = get_dbl(v, "max", 0);
}

/* A job bucket's stage: kept beside the buckets (struct sl_bucket keeps
 * its size); a NULL array while no bucket has one. Out of memory loses the
 * label only. */
static void
history_stage(struct sl_history *h, size_t i, size_t n, const cJSON *stage)
{
	if (!cJSON_IsString(stage))
		return;
	if (h->stages == NULL &&
	    (h->stages = calloc(n + 1, sizeof *h->stages)) == NULL)
		return;
	h->stages[i] = strdup(stage->valuestring);
}

int
sl_history(sl_client *c, int64_t since_ms, int64_t until_ms, int64_t step_ms,
           int64_t job_id, struct sl_history **out)
{
	const cJSON *r, *buckets, *b;
	struct sl_history *h;
	cJSON *params, *root;
	size_t i = 0;
	int rc;

	*out = NULL;
	params = cJSON_CreateObject();
	if ((rc = need(c, params)) < 0)
		return rc;
	proto_add_int(params, "since_ms", since_ms);
	if (until_ms > 0)
		proto_add_int(params, "until_ms", until_ms);
	if (step_ms > 0)
		proto_add_int(params, "step_ms", step_ms);
	if (job_id > 0)
		proto_add_int(params, "job_id", job_id);
	rc = call(c, "history", params, c->timeout_ms, &root, &r);
	if (rc < 0)
		return rc;
	h = calloc(1, sizeof *h);
	buckets = array_member(r, "buckets");
	if (h != NULL) {
		h->buckets = calloc((size_t)(buckets != NULL
		                                 ? cJSON_GetArraySize(buckets)
		                                 : 0) +
		                        1,
		                    sizeof *h->buckets);
		if (h->buckets == NULL) {
			free(h);
			h = NULL;
		}
	}
	if (h == NULL) {
		cJSON_Delete(root);
		return set_error(c, -ENOMEM, "out of memory");
	}
	get_str(r, "tier", h->tier, sizeof h->tier);
	h->job_id = get_i64(r, "job_id", 0);
	h->step_ms = get_i64(r, "step_ms", 0);
	h->since_ms = get_i64(r, "since_ms", since_ms);
	h->until_ms = get_i64(r, "until_ms", until_ms);
	cJSON_ArrayForEach(b, buckets)
	{
		struct sl_bucket *k = &h->buckets[i++];
		k->ts_ms = get_i64(b, "ts_ms", 0);
		k->n = get_i64(b, "n", 0);
		parse_stat(b, "free_pct", &k->free_pct);
		parse_stat(b, "swap_used_bytes", &k->swap_used_bytes);
		parse_stat(b, "available_bytes", &k->available_bytes);
		get_str(b, "pressure_max", k->pressure_max,
		        sizeof k->pressure_max);
		k->gap = get_bool(b, "gap");
		parse_stat(b, "footprint_bytes", &k->footprint_bytes);
		parse_stat(b, "swap_bytes", &k->swap_bytes);
		history_stage(h, i - 1, (size_t)cJSON_GetArraySize(buckets),
		              member(b, "stage"));
	}
	h->nbuckets = i;
	cJSON_Delete(root);
	*out = h;
	return 0;
}

void
sl_history_free(struct sl_history *h)
{
	size_t i;

	if (h == NULL)
		return;
	for (i = 0; h->stages != NULL && i < h->nbuckets; i++)
		free(h->stages[i]);
	free(h->stages);
	free(h->buckets);
	free(h);
}

int
sl_subscribe(sl_client *c, int samples, int events, int64_t pid,
             int64_t *interval_ms)
{
	const cJSON *r;
	cJSON *params, *root;
	int rc;

	params = cJSON_CreateObject();
	if ((rc = need(c, params)) < 0)
		return rc;
	cJSON_AddBoolToObject(params, "samples", samples != 0);
	cJSON_AddBoolToObject(params, "events", events != 0);
	if (pid > 0)
		proto_add_int(params, "pid", pid);
	rc = call(c, "subscribe", params, c->timeout_ms, &root, &r);
	if (rc < 0)
		return rc;
	if (interval_ms != NULL)
		*interval_ms = get_i64(r, "interval_ms", c->hello.interval_ms);
	cJSON_Delete(root);
	return 0;
}

int
sl_unsubscribe(sl_client *c)
{
	return sl_call(c, "unsubscribe", NULL, NULL);
}

void
sl_job_spec_init(struct sl_job_spec *spec)
{
	memset(spec, 0, sizeof *spec);
	spec->wait_free_pct = -1;
	spec->swap_budget_bytes = -1;
	spec->umask = -1;
}

/*
 * This process's umask. Linux shows it in /proc/self/status (4.7 and
 * later); elsewhere it can only be read by setting it, which a thread
 * creating a file at that instant could see, so that is the fallback.
 */
static int
current_umask(void)
{
	char line[256];
	unsigned int m;
	mode_t old;
	FILE *f;

	if ((f = fopen("/proc/self/status", "r")) != NULL) {
		while (fgets(line, sizeof line, f) != NULL)
			if (sscanf(line, "Umask: %o", &m) == 1) {
				fclose(f);
				return (int)(m & 0777);
			}
		fclose(f);
	}
	old = umask(077);
	umask(old);
	return (int)(old & 0777);
}

static cJSON *
strv_json(const char *const *v)
{
	cJSON *a = cJSON_CreateArray();
	size_t i;

	if (a == NULL)
		return NULL;
	for (i = 0; v[i] != NULL; i++) {
		cJSON *s = cJSON_CreateString(v[i]);
		if (s == NULL) {
			cJSON_Delete(a);
			return NULL;
		}
		cJSON_AddItemToArray(a, s);
	}
	return a;
}

static int
utf8_ok(const char *s)
{
	return s == NULL || proto_utf8_valid(s, strlen(s));
}

static int
submit_text_check(sl_client *c, const struct sl_job_spec *spec, const char *cwd)
{
	const char *const *env =
	    spec->env != NULL ? spec->env : (const char *const *)environ;
	size_t i, n;

	for (i = 0; spec->argv[i] != NULL; i++)
		if (!utf8_ok(spec->argv[i]))
			return set_error(
			    c, -EINVAL,
			    "argument %zu is not valid UTF-8, which "
			    "the protocol cannot carry",
			    i);
	if (!utf8_ok(cwd))
		return set_error(c, -EINVAL,
		                 "the working directory is not valid UTF-8, "
		                 "which the protocol cannot carry");
	if (!utf8_ok(spec->name))
		return set_error(c, -EINVAL, "the name is not valid UTF-8");
	for (i = 0; env != NULL && env[i] != NULL; i++)
		if (!utf8_ok(env[i])) {
			n = strcspn(env[i], "=");
			return set_error(
			    c, -EINVAL,
			    "environment variable %.*s is not valid "
			    "UTF-8, which the protocol cannot carry: "
			    "unset it for the job",
			    (int)(n < 64 ? n : 64), env[i]);
		}
	return 0;
}

int
sl_submit(sl_client *c, const struct sl_job_spec *spec,
          struct sl_submitted *out)
{
	const cJSON *r;
	cJSON *params, *argv, *env = NULL, *root;
	char cwd[4096];
	int rc;

	if (spec->argv == NULL || spec->argv[0] == NULL)
		return set_error(c, -EINVAL, "no command to submit");
	/* Not a connection error whatever errno says (ENOENT: the
	 * directory was removed). */
	if (spec->cwd == NULL && getcwd(cwd, sizeof cwd) == NULL)
		return set_error(c, -EINVAL,
		                 "cannot tell the current directory: %s",
		                 strerror(errno));
	/* The protocol carries text: bytes that are not UTF-8 would arrive
	 * replaced, and a detached job would run another command. (An
	 * attached job's argv is only its record: run executes its own.) */
	if (!spec->attached &&
	    (rc = submit_text_check(c, spec,
	                            spec->cwd != NULL ? spec->cwd : cwd)) < 0)
		return rc;
	params = cJSON_CreateObject();
	argv = strv_json(spec->argv);
	if (!spec->attached)
		env =
		    strv_json(spec->env != NULL ? spec->env
		                                : (const char *const *)environ);
	if (params == NULL || argv == NULL ||
	    (!spec->attached && env == NULL)) {
		cJSON_Delete(params);
		cJSON_Delete(argv);
		cJSON_Delete(env);
		return set_error(c, -ENOMEM, "out of memory");
	}
	cJSON_AddItemToObject(params, "argv", argv);
	cJSON_AddStringToObject(params, "cwd",
	                        spec->cwd != NULL ? spec->cwd : cwd);
	if (env != NULL)
		cJSON_AddItemToObject(params, "env", env);
	if (spec->attached)
		cJSON_AddBoolToObject(params, "attached", 1);
	if (spec->name != NULL)
		cJSON_AddStringToObject(params, "name", spec->name);
	if (spec->priority != 0)
		proto_add_int(params, "priority", spec->priority);
	if (spec->wait_free_pct >= 0)
		cJSON_AddNumberToObject(params, "wait_free_pct",
		                        spec->wait_free_pct);
	if (spec->swap_budget_bytes >= 0)
		proto_add_int(params, "swap_budget_bytes",
		              spec->swap_budget_bytes);
	if (spec->expect_bytes > 0)
		proto_add_int(params, "expect_bytes",
		              (int64_t)spec->expect_bytes);
	if (spec->exclusive)
		cJSON_AddBoolToObject(params, "exclusive", 1);
	if (spec->retry_on_breach > 0)
		proto_add_int(params, "retry_on_breach", spec->retry_on_breach);
	/* The job makes its files as its submitter would. */
	if (!spec->attached)
		proto_add_int(params, "umask",
		              spec->umask >= 0 ? spec->umask & 0777
		                               : current_umask());

	rc = call(c, "submit", params, c->timeout_ms, &root, &r);
	if (rc < 0)
		return rc;
	if (out != NULL) {
		out->id = get_i64(r, "id", 0);
		out->position = (int)get_i64(r, "position", 0);
		out->queued = (int)get_i64(r, "queued", 0);
	}
	cJSON_Delete(root);
	return 0;
}

/* Call a method whose result is a Job. */
static int
job_call(sl_client *c, const char *method, cJSON *params, int timeout_ms,
         struct sl_job *out)
{
	const cJSON *r;
	cJSON *root;
	int rc;

	if (params == NULL)
		return set_error(c, -ENOMEM, "out of memory");
	rc = call(c, method, params, timeout_ms, &root, &r);
	if (rc < 0)
		return rc;
	if (out != NULL)
		parse_job(r, out);
	cJSON_Delete(root);
	return 0;
}

/* Protocol version 2: every page of the list, up to `want` ended jobs. */
static int
status_pages(sl_client *c, int all, int want, struct sl_job **jobs,
             size_t *njobs)
{
	const cJSON *r, *list, *j, *next;
	cJSON *params, *root;
	struct sl_job *v = NULL, *nv;
	size_t n = 0, cap = 0, ended = 0;
	char cursor[128] = "";
	int rc;

	for (;;) {
		params = cJSON_CreateObject();
		if ((rc = need(c, params)) < 0)
			goto fail;
		if (all)
			cJSON_AddBoolToObject(params, "all", 1);
		proto_add_int(params, "limit", 1000);
		if (cursor[0] != '\0')
			cJSON_AddStringToObject(params, "cursor", cursor);
		if ((rc = call(c, "status", params, c->timeout_ms, &root, &r)) <
		    0)
			goto fail;
		list = array_member(r, "jobs");
		if (n + (size_t)cJSON_GetArraySize(list) + 1 > cap) {
			cap = n + (size_t)cJSON_GetArraySize(list) + 1;
			if ((nv = realloc(v, cap * sizeof *v)) == NULL) {
				cJSON_Delete(root);
				rc = set_error(c, -ENOMEM, "out of memory");
				goto fail;
			}
			v = nv;
		}
		cJSON_ArrayForEach(j, list)
		{
			if (all && ended >= (size_t)want)
				break;
			memset(&v[n], 0, sizeof v[n]);
			parse_job(j, &v[n]);
			if (sl_job_ended(&v[n]))
				ended++;
			n++;
		}
		next = cJSON_GetObjectItemCaseSensitive(r, "next_cursor");
		if (!cJSON_IsString(next) || (all && ended >= (size_t)want) ||
		    strlen(next->valuestring) >= sizeof cursor) {
			cJSON_Delete(root);
			break;
		}
		snprintf(cursor, sizeof cursor, "%s", next->valuestring);
		cJSON_Delete(root);
	}
	if (v == NULL && (v = calloc(1, sizeof *v)) == NULL)
		return set_error(c, -ENOMEM, "out of memory");
	*jobs = v;
	*njobs = n;
	return 0;
fail:
	sl_jobs_free(v, n);
	return rc;
}

int
sl_status(sl_client *c, int all, int limit, struct sl_job **jobs, size_t *njobs)
{
	const cJSON *r, *list, *j;
	cJSON *params, *root;
	size_t i = 0;
	int rc;

	*jobs = NULL;
	*njobs = 0;
	if (c->hello.version >= 2)
		return status_pages(c, all, limit > 0 ? limit : 50, jobs,
		                    njobs);
	params = cJSON_CreateObject();
	if ((rc = need(c, params)) < 0)
		return rc;
	if (all)
		cJSON_AddBoolToObject(params, "all", 1);
	if (limit > 0)
		proto_add_int(params, "limit", limit);
	rc = call(c, "status", params, c->timeout_ms, &root, &r);
	if (rc < 0)
		return rc;
	list = array_member(r, "jobs");
	*jobs =
	    calloc((size_t)(list != NULL ? cJSON_GetArraySize(list) : 0) + 1,
	           sizeof **jobs);
	if (*jobs == NULL) {
		cJSON_Delete(root);
		return set_error(c, -ENOMEM, "out of memory");
	}
	cJSON_ArrayForEach(j, list)
	{
		parse_job(j, &(*jobs)[i++]);
	}
	*njobs = i;
	cJSON_Delete(root);
	return 0;
}

void
sl_jobs_free(struct sl_job *jobs, size_t njobs)
{
	size_t i;

	if (jobs == NULL)
		return;
	for (i = 0; i < njobs; i++)
		sl_job_clear(&jobs[i]);
	free(jobs);
}

int
sl_show(sl_client *c, int64_t id, int env, struct sl_job *out)
{
	cJSON *params = id_params(id);

	if (params != NULL && env)
		cJSON_AddBoolToObject(params, "env", 1);
	return job_call(c, "show", params, c->timeout_ms, out);
}

int
sl_cancel(sl_client *c, int64_t id, struct sl_job *out)
{
	return job_call(c, "cancel", id_params(id), c->timeout_ms, out);
}

int
sl_wait(sl_client *c, int64_t id, struct sl_job *out)
{
	return job_call(c, "wait", id_params(id), -1, out);
}

int
sl_resume(sl_client *c, int64_t id, struct sl_job *out)
{
	return job_call(c, "resume", id_params(id), c->timeout_ms, out);
}

int
sl_job_pid(sl_client *c, int64_t id, int64_t pid)
{
	cJSON *params = id_params(id);

	if (params != NULL)
		proto_add_int(params, "pid", pid);
	return job_call(c, "job_pid", params, c->timeout_ms, NULL);
}

int
sl_stage(sl_client *c, int64_t id, const char *name)
{
	cJSON *params = id_params(id);

	if (name == NULL) {
		cJSON_Delete(params);
		return -EINVAL;
	}
	if (params != NULL)
		cJSON_AddStringToObject(params, "name", name);
	return job_call(c, "stage", params, c->timeout_ms, NULL);
}

int
sl_job_exit(sl_client *c, int64_t id, int exit_code, int signal,
            struct sl_job *out)
{
	cJSON *params = id_params(id);

	if (params != NULL) {
		if (signal > 0)
			proto_add_int(params, "signal", signal);
		else
			proto_add_int(params, "exit_code", exit_code);
	}
	return job_call(c, "job_exit", params, c->timeout_ms, out);
}

int
sl_logs(sl_client *c, int64_t id, int64_t offset, int follow, sl_log_cb cb,
        void *arg, int64_t *end_offset)
{
	const cJSON *r;
	cJSON *params, *root;
	int rc;

	params = id_params(id);
	if ((rc = need(c, params)) < 0)
		return rc;
	if (offset > 0)
		proto_add_int(params, "offset", offset);
	if (follow)
		cJSON_AddBoolToObject(params, "follow", 1);
	c->log_cb = cb;
	c->log_arg = arg;
	c->log_id = id;
	c->log_offset = offset;
	c->log_stop = 0;
	rc = call(c, "logs", params, follow ? -1 : c->timeout_ms, &root, &r);
	c->log_cb = NULL;
	if (rc == 0 && c->log_stop != 0) {
		/* The callback refused a chunk that came in one read with
		 * the answer: its value all the same, as documented. */
		rc = c->log_stop;
		cJSON_Delete(root);
		drop_connection(c);
	}
	c->log_stop = 0;
	if (rc != 0)
		return rc;
	if (end_offset != NULL)
		*end_offset = get_i64(r, "offset", c->log_offset);
	cJSON_Delete(root);
	return 0;
}

int
sl_events(sl_client *c, int64_t after_id, int limit, int follow,
          struct sl_event **events, size_t *nevents)
{
	const cJSON *r, *list, *e;
	cJSON *params, *root;
	size_t i = 0;
	int rc;

	*events = NULL;
	*nevents = 0;
	params = cJSON_CreateObject();
	if ((rc = need(c, params)) < 0)
		return rc;
	if (after_id > 0)
		proto_add_int(params, "after_id", after_id);
	if (limit > 0)
		proto_add_int(params, "limit", limit);
	if (follow)
		cJSON_AddBoolToObject(params, "follow", 1);
	rc = call(c, "events", params, c->timeout_ms, &root, &r);
	if (rc < 0)
		return rc;
	list = array_member(r, "events");
	*events =
	    calloc((size_t)(list != NULL ? cJSON_GetArraySize(list) : 0) + 1,
	           sizeof **events);
	if (*events == NULL) {
		cJSON_Delete(root);
		return set_error(c, -ENOMEM, "out of memory");
	}
	cJSON_ArrayForEach(e, list)
	{
		parse_event(e, &(*events)[i++]);
	}
	*nevents = i;
	cJSON_Delete(root);
	return 0;
}

void
sl_events_free(struct sl_event *events, size_t nevents)
{
	size_t i;

	if (events == NULL)
		return;
	for (i = 0; i < nevents; i++)
		free(events[i].detail);
	free(events);
}
