/*
 * libstageload, transport: the connection to the daemon's Unix socket,
 * framing, sending a request and waiting for its answer (client_call),
 * buffering the notifications that arrive meanwhile, and the errors.
 * proto/PROTOCOL.md is the wire; client-decode.c reads what arrives.
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

#include "clock.h"
#include "client-internal.h"
#include "proto.h"
#include "stageload.h"
#include "version.h"

int
client_error(sl_client *c, int code, const char *fmt, ...)
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
void
client_drop(sl_client *c)
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
	client_drop(c);
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
                           const char *home, unsigned long uid, char *buf,
                           size_t len, enum socket_kind *kind)
{
	struct stat st;

	*kind = SOCKET_NAMED;
	if (explicit_path != NULL && explicit_path[0] != '\0')
		return copy_path(buf, len, explicit_path, NULL);
	if (env_socket != NULL && env_socket[0] != '\0')
		return copy_path(buf, len, env_socket, NULL);
	if (system_path != NULL && system_path[0] != '\0' &&
	    stat(system_path, &st) == 0) {
		*kind = SOCKET_SYSTEM;
		return copy_path(buf, len, system_path, NULL);
	}
	/* The daemon's own default (socket-trust.c), or the two would not
	 * meet. */
	return socket_user_path(xdg_runtime, home, (uid_t)uid, buf, len, kind);
}

static int
socket_path_kind(const char *explicit_path, char *buf, size_t len,
                 enum socket_kind *kind)
{
	return client_socket_path_resolve(
	    explicit_path, getenv("STAGELOAD_SOCKET"), CLIENT_SYSTEM_SOCKET,
	    getenv("XDG_RUNTIME_DIR"), socket_home(), (unsigned long)getuid(),
	    buf, len, kind);
}

/* How to start a daemon on path: a plain stageloadd where it would listen
 * there on its own (root's is the system socket, anyone else's the
 * per-user one), else with --socket. */
static const char *
start_hint(const char *path, char *buf, size_t len)
{
	char own[1024];

	if (strcmp(path, CLIENT_SYSTEM_SOCKET) == 0)
		snprintf(buf, len, "stageloadd%s",
		         geteuid() == 0 ? "" : ", as root");
	else if (geteuid() != 0 &&
	         socket_user_path(getenv("XDG_RUNTIME_DIR"), socket_home(),
	                          getuid(), own, sizeof own, NULL) == 0 &&
	         strcmp(path, own) == 0)
		snprintf(buf, len, "stageloadd");
	else
		snprintf(buf, len, "stageloadd --socket %s", path);
	return buf;
}

int
sl_socket_path(const char *explicit_path, char *buf, size_t len)
{
	enum socket_kind kind;

	return socket_path_kind(explicit_path, buf, len, &kind);
}

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
	const cJSON *data = client_member(params, "data");
	int64_t offset = client_i64(params, "offset", 0);
	size_t len;
	int rc;

	if (client_i64(params, "id", -1) != c->log_id || !cJSON_IsString(data))
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
		return client_error(c, -ENOTCONN,
		                    "not connected to the daemon");
	do
		n = recv(c->fd, buf, sizeof buf, dontwait ? MSG_DONTWAIT : 0);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		rc = -errno;
		client_drop(c);
		return client_error(
		    c, rc, "lost the connection to the daemon at %s: %s",
		    c->path, strerror(-rc));
	}
	if (n == 0) {
		client_drop(c);
		return client_error(c, -ECONNRESET,
		                    "the daemon at %s closed the connection",
		                    c->path);
	}
	rc = proto_reader_feed(&c->reader, buf, (size_t)n, on_line, c);
	if (rc == PROTO_FRAME_TOO_LONG || rc == PROTO_FRAME_UTF8) {
		client_drop(c);
		return client_error(
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
			int64_t left = deadline - clock_mono_ms();
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
			if (deadline >= 0 && clock_mono_ms() >= deadline)
				return 0;
			continue;
		}
		if (errno == EINTR) {
			/* Waiting for notifications, a signal is for the
			 * caller (Ctrl-C in a CLI): let it look at its flags.
			 * A call in flight carries on. */
			if (intr)
				return client_error(c, -EINTR, "interrupted");
			continue;
		}
		return client_error(c, -errno, "poll: %s", strerror(errno));
	}
}

int
sl_process_input(sl_client *c)
{
	int rc;

	if (c->in_cb)
		return client_error(c, -EBUSY, "called from a log callback");
	for (;;) {
		rc = read_some(c, 1);
		if (rc < 0)
			return rc;
		if (rc == 0)
			break;
	}
	return (int)c->npending;
}

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
			left = deadline < 0 ? -1 : deadline - clock_mono_ms();
			if (deadline >= 0 && left <= 0) {
				/* Half a request cannot be taken back. */
				client_drop(c);
				return client_error(
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
			client_drop(c);
			return client_error(
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
int
client_call(sl_client *c, const char *method, cJSON *params, int timeout_ms,
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
		return client_error(c, -EBUSY,
		                    "called from a log callback: the client is "
		                    "busy with the logs call");
	}
	if (c->fd == -1) {
		cJSON_Delete(params);
		return client_error(c, -ENOTCONN,
		                    "not connected to the daemon");
	}
	c->want_id = ++c->next_id;
	line = proto_encode_request(c->want_id, method, params, &len);
	if (line == NULL)
		return client_error(c, -ENOMEM, "out of memory");
	deadline = timeout_ms < 0 ? -1 : clock_mono_ms() + timeout_ms;
	rc = write_all(c, line, len, deadline, method);
	free(line);
	if (rc < 0)
		return rc;

	while (c->reply_root == NULL) {
		if (c->log_stop != 0) {
			rc = c->log_stop;
			client_drop(c);
			return rc;
		}
		rc = wait_readable(c, deadline, 0);
		if (rc == 0) {
			c->want_id = 0;
			return client_error(
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
			deadline = clock_mono_ms() + timeout_ms;
	}
	*root = c->reply_root;
	c->reply_root = NULL;
	c->want_id = 0;

	err = client_member(*root, "error");
	if (err != NULL) {
		const cJSON *msg = client_member(err, "message");
		int code = (int)client_i64(err, "code", SL_E_INTERNAL);

		if (code > -1000)
			code = SL_E_INTERNAL; /* keep the ranges apart */
		client_error(c, code, "%s",
		             cJSON_IsString(msg) ? msg->valuestring
		                                 : sl_strerror(code));
		cJSON_Delete(*root);
		*root = NULL;
		return code;
	}
	res = client_member(*root, "result");
	if (res == NULL) {
		cJSON_Delete(*root);
		*root = NULL;
		return client_error(c, -EPROTO,
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
client_params(sl_client *c, const char *method, const char *params_json,
              cJSON **params)
{
	*params = NULL;
	if (params_json == NULL || params_json[0] == '\0')
		return 0;
	*params = cJSON_Parse(params_json);
	if (*params == NULL || !cJSON_IsObject(*params)) {
		cJSON_Delete(*params);
		*params = NULL;
		return client_error(c, -EINVAL,
		                    "params for '%s' must be a JSON object",
		                    method);
	}
	return 0;
}

int
sl_call(sl_client *c, const char *method, const char *params_json,
        char **result_json)
{
	const cJSON *result;
	cJSON *params, *root;
	int rc;

	if (result_json != NULL)
		*result_json = NULL;
	if (method == NULL || method[0] == '\0')
		return client_error(c, -EINVAL, "no method to call");
	if ((rc = client_params(c, method, params_json, &params)) < 0)
		return rc;
	rc = client_call(c, method, params, c->timeout_ms, &root, &result);
	if (rc < 0)
		return rc;
	if (result_json != NULL) {
		*result_json = proto_print(result, 0);
		if (*result_json == NULL) {
			cJSON_Delete(root);
			return client_error(c, -ENOMEM, "out of memory");
		}
	}
	cJSON_Delete(root);
	return 0;
}

static int
hello(sl_client *c)
{
	const cJSON *result;
	cJSON *params, *root;
	int rc;

	params = cJSON_CreateObject();
	if (params == NULL)
		return client_error(c, -ENOMEM, "out of memory");
	proto_add_int(params, "version", SL_PROTOCOL_VERSION);
	cJSON_AddStringToObject(params, "client",
	                        "libstageload/" STAGELOAD_VERSION);
	rc = client_call(c, "hello", params,
	                 c->timeout_ms < 0 ? 10000 : c->timeout_ms, &root,
	                 &result);
	if (rc == SL_E_VERSION && SL_PROTOCOL_VERSION > 1) {
		/* A daemon older than version 2 speaks 1: everything but
		 * the pages of status. The connection stays open. */
		if ((params = cJSON_CreateObject()) == NULL)
			return client_error(c, -ENOMEM, "out of memory");
		proto_add_int(params, "version", 1);
		cJSON_AddStringToObject(params, "client",
		                        "libstageload/" STAGELOAD_VERSION);
		rc = client_call(c, "hello", params,
		                 c->timeout_ms < 0 ? 10000 : c->timeout_ms,
		                 &root, &result);
	}
	if (rc == SL_E_VERSION) {
		char msg[sizeof c->errmsg];
		snprintf(msg, sizeof msg, "%s", c->errmsg);
		return client_error(
		    c, rc,
		    "the daemon at %s speaks neither protocol version %d "
		    "nor 1 (%s); upgrade stageloadctl or the daemon",
		    c->path, SL_PROTOCOL_VERSION, msg);
	}
	if (rc < 0)
		return rc;
	client_decode_hello(result, &c->hello);
	cJSON_Delete(root);
	return 0;
}

int
sl_connect(sl_client *c, const char *path)
{
	enum socket_kind kind = SOCKET_NAMED;
	struct sockaddr_un sun;
	char hint[sizeof c->path + 32];
	char why[sizeof c->errmsg];
	int fd, rc;

	sl_close(c);
	if (path != NULL && path[0] != '\0')
		rc = copy_path(c->path, sizeof c->path, path, NULL);
	else
		rc = socket_path_kind(NULL, c->path, sizeof c->path, &kind);
	if (rc < 0)
		return client_error(c, rc, "socket path too long");
	/* Before anything is sent: whoever listens gets the requests (a
	 * job's command, environment, directory) and is believed about the
	 * uid it reports (docs/security.md, "The socket a client trusts"). */
	if ((rc = socket_check(c->path, kind, geteuid(), why, sizeof why)) != 0)
		return client_error(c, rc, "%s", why);

	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	if (strlen(c->path) >= sizeof sun.sun_path)
		return client_error(c, -ENAMETOOLONG,
		                    "socket path %s is longer than %zu bytes",
		                    c->path, sizeof sun.sun_path - 1);
	memcpy(sun.sun_path, c->path, strlen(c->path) + 1);

	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (fd == -1)
		return client_error(c, -errno, "socket: %s", strerror(errno));
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
			return client_error(
			    c, rc,
			    "daemon not running at %s (start it with: %s)",
			    c->path, start_hint(c->path, hint, sizeof hint));
		if (rc == -EACCES || rc == -EPERM)
			return client_error(
			    c, rc, "permission denied connecting to %s",
			    c->path);
		return client_error(c, rc, "cannot connect to %s: %s", c->path,
		                    strerror(-rc));
	}
	if ((rc = socket_peer_check(fd, c->path, kind, geteuid(), why,
	                            sizeof why)) != 0) {
		close(fd);
		return client_error(c, rc, "%s", why);
	}
	c->fd = fd;
	proto_reader_init(&c->reader, CLIENT_MAX_LINE);
	rc = hello(c);
	if (rc < 0) {
		client_drop(c);
		return rc;
	}
	return 0;
}

int
sl_next_notification(sl_client *c, int timeout_ms, struct sl_notification *n)
{
	struct pending *p;
	int64_t deadline = timeout_ms < 0 ? -1 : clock_mono_ms() + timeout_ms;
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
			return client_error(c, -ENOTCONN,
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
	client_decode_notification(p->method, p->params, n);
	cJSON_Delete(p->root);
	free(p);
	return 1;
}
