/*
 * The control socket. Each client is a uv_pipe_t plus a timer (the hello
 * deadline; after the peer half-closed, the check for deferred answers
 * still owed; then the linger deadline while its last replies drain). A
 * client object is freed only in the close callback of its last handle;
 * everything else refers to it by id, so late replies to a closed client
 * are dropped instead of touching freed memory.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon.h"
#include "log.h"
#include "proto.h"
#include "server-internal.h"

#define SERVER_BACKLOG 1024
#define SERVER_LINGER_MS 5000 /* most time a closing client gets to read */
/* How often a half-closed client owed deferred answers is checked: are
 * they all sent, has the peer gone entirely? */
#define SERVER_EOF_CHECK_MS 1000
/* Requests of one uid's connections handled in one turn of the loop at
 * most. A read can bring thousands of pipelined requests; answered in one
 * go they would hold the loop (the sampler, enforcement, every other user)
 * for as long. Counted per uid, so that a user's many connections get no
 * more than its one; the rest wait, in the kernel or in the connection's
 * reader, for the next turn. */
#define SERVER_LINES_PER_TURN 64
/* Memory freed since it was last given back to the system past which it is
 * given back (platform_trim_memory), at most once per SERVER_TRIM_MS. */
#define SERVER_TRIM_BYTES (4 << 20)
#define SERVER_TRIM_MS 1000

/* One read buffer serves every client: lines are copied by the reader
 * before the next read can happen. */
static char read_buf[64 * 1024];

static void client_wait_turn(struct client *c);

struct client *
client_find(struct server *srv, uint64_t id)
{
	size_t lo = 0, hi;

	if (srv == NULL)
		return NULL;
	hi = srv->nclients;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (srv->clients[mid]->id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < srv->nclients && srv->clients[lo]->id == id)
		return srv->clients[lo];
	return NULL;
}

static void
client_unlink(struct server *srv, struct client *c)
{
	size_t i;

	for (i = 0; i < srv->nclients; i++) {
		if (srv->clients[i] == c) {
			memmove(&srv->clients[i], &srv->clients[i + 1],
			        (srv->nclients - i - 1) *
			            sizeof srv->clients[0]);
			srv->nclients--;
			return;
		}
	}
}

/* The input entry of uid, made when it has none; NULL when out of
 * memory. */
struct uid_input *
uid_input_get(struct server *srv, uid_t uid)
{
	struct uid_input *u, **nv;
	size_t i, cap;

	for (i = 0; i < srv->ninputs; i++)
		if (srv->inputs[i]->uid == uid)
			return srv->inputs[i];
	if (srv->ninputs == srv->inputs_cap) {
		cap = srv->inputs_cap ? srv->inputs_cap * 2 : 16;
		if ((nv = realloc(srv->inputs, cap * sizeof *nv)) == NULL)
			return NULL;
		srv->inputs = nv;
		srv->inputs_cap = cap;
	}
	if ((u = calloc(1, sizeof *u)) == NULL)
		return NULL;
	u->uid = uid;
	srv->inputs[srv->ninputs++] = u;
	return u;
}

/* Count what the client's reader holds now in its uid's entry. */
static void
client_input_sync(struct client *c)
{
	if (c->input == NULL)
		return;
	c->input->bytes += proto_reader_mem(&c->reader);
	c->input->bytes -= c->input_counted;
	c->input_counted = proto_reader_mem(&c->reader);
}

/* The client stops counting (it is closing: its reader is freed once its
 * handles are); the entry goes with its uid's last client. */
static void
client_input_drop(struct server *srv, struct client *c)
{
	struct uid_input *u = c->input;
	size_t i;

	if (u == NULL)
		return;
	c->input = NULL;
	u->bytes -= c->input_counted;
	c->input_counted = 0;
	/* Its writes still queued free their memory as they finish, no
	 * longer the uid's to count. */
	u->unwritten -= c->queued_mem;
	if (--u->clients > 0)
		return;
	for (i = 0; i < srv->ninputs; i++) {
		if (srv->inputs[i] == u) {
			srv->inputs[i] = srv->inputs[--srv->ninputs];
			break;
		}
	}
	free(u);
}

/* Before a read is fed: the reader may hold what its uid's other
 * connections leave of the budget (root has none). */
static void
client_input_budget(struct client *c)
{
	size_t limit = c->d->cfg.max_input_bytes_per_uid, others;

	c->reader.max_buf = 0;
	if (c->input == NULL || c->peer.uid == 0 || limit == 0)
		return;
	others = c->input->bytes - c->input_counted;
	/* 1 when nothing is left: no buffer can grow to it. */
	c->reader.max_buf = others < limit ? limit - others : 1;
}

/* Answers the modules above still owe a client (deferred wait, logs). */
static size_t
client_deferred(struct client *c)
{
	return c->hooks->deferred != NULL ? c->hooks->deferred(c->d, c->id) : 0;
}

/*
 * Other modules hear that a client has gone only here, once its handles are
 * closed, never from inside client_close(): a module may be walking its own
 * list of clients when a write fails and closes one, and must not have that
 * list changed under it. While the daemon stops nothing is announced, nor
 * is a connection refused before it got an id: to the modules id 0 means
 * "no client" (every detached job has it).
 */
void
client_closed_cb(uv_handle_t *h)
{
	struct client *c = h->data;

	if (--c->handles > 0)
		return;
	if (!c->d->stopping && c->id != 0 && c->hooks->gone != NULL)
		c->hooks->gone(c->d, c->id);
	server_freed(c->d->server, proto_reader_mem(&c->reader));
	proto_reader_free(&c->reader);
	free(c->peer.groups);
	free(c->held);
	free(c);
}

/* Close now, dropping anything not yet written. */
void
client_close(struct client *c)
{
	if (c->closing)
		return;
	c->closing = 1;
	client_unlink(c->srv, c);
	client_input_drop(c->srv, c);
	c->srv = NULL;
	log_debug("client %llu (uid %u) closed", (unsigned long long)c->id,
	          (unsigned)c->peer.uid);
	uv_read_stop((uv_stream_t *)&c->pipe);
	uv_close((uv_handle_t *)&c->pipe, client_closed_cb);
	uv_close((uv_handle_t *)&c->timer, client_closed_cb);
}

void
client_timer_cb(uv_timer_t *t)
{
	struct client *c = t->data;

	if (!c->draining && !c->hello)
		log_debug("client %llu sent no hello in time",
		          (unsigned long long)c->id);
	client_close(c);
}

/* Stop reading and close once what is queued has been written, or after a
 * short linger for a client that does not read. */
void
client_drain(struct client *c)
{
	if (c->closing || c->draining)
		return;
	c->draining = 1;
	uv_read_stop((uv_stream_t *)&c->pipe);
	if (c->unwritten == 0) {
		client_close(c);
		return;
	}
	uv_timer_stop(&c->timer);
	uv_timer_start(&c->timer, client_timer_cb, SERVER_LINGER_MS, 0);
}

/* The peer has closed its end entirely (not only for writing), so nothing
 * sent to it will ever be read. */
static int
client_peer_gone(struct client *c)
{
	struct pollfd pfd;
	uv_os_fd_t fd;

	if (uv_fileno((uv_handle_t *)&c->pipe, &fd) != 0)
		return 1;
	pfd.fd = fd;
	pfd.events = POLLOUT;
	pfd.revents = 0;
	return poll(&pfd, 1, 0) == 1 && (pfd.revents & (POLLHUP | POLLERR));
}

static void
client_eof_timer_cb(uv_timer_t *t)
{
	struct client *c = t->data;

	if (client_deferred(c) == 0)
		client_drain(c);
	else if (client_peer_gone(c))
		client_close(c);
}

/*
 * EOF: the peer may have half-closed after its last request. It gets the
 * answers to what it asked, deferred ones (wait, logs) included, then the
 * connection is closed. Waiting for those holds it no longer than an open
 * connection would be held: once the peer has closed entirely, which a
 * read cannot tell from a half-close, the connection goes with its answers.
 */
static void
client_eof(struct client *c)
{
	if (c->closing || c->draining || c->half_closed)
		return;
	if (client_deferred(c) == 0) {
		client_drain(c);
		return;
	}
	c->half_closed = 1;
	uv_read_stop((uv_stream_t *)&c->pipe);
	uv_timer_stop(&c->timer);
	uv_timer_start(&c->timer, client_eof_timer_cb, SERVER_EOF_CHECK_MS,
	               SERVER_EOF_CHECK_MS);
}

void
server_close_client(struct daemon *d, uint64_t client_id)
{
	struct client *c = client_find(d->server, client_id);

	if (c != NULL)
		client_drain(c);
}

size_t
server_client_count(struct daemon *d)
{
	return d->server != NULL ? d->server->nclients : 0;
}

int
server_set_version(struct daemon *d, uint64_t client_id, int version)
{
	struct client *c = client_find(d->server, client_id);

	if (c == NULL)
		return -ENOENT;
	c->peer.version = version;
	return 0;
}

static void
client_request(struct client *c, struct proto_msg *m)
{
	struct daemon *d = c->d;
	const struct config *cfg = &d->cfg;
	char cause[512];
	cJSON *result = NULL;
	int is_hello, rc;

	is_hello = strcmp(m->method, "hello") == 0;
	if (!c->hello && !is_hello) {
		client_send_error(c, m->id, PROTO_E_HELLO, "call hello first");
		return;
	}
	if (c->hello && is_hello) {
		client_send_error(
		    c, m->id, PROTO_E_HELLO,
		    "hello was already called on this connection");
		return;
	}
	cause[0] = '\0';
	rc = c->hooks->dispatch(d, &c->peer, m->method, m->id, m->params,
	                        &result, cause, sizeof cause);
	if (rc == 0) {
		if (is_hello && !c->closing) {
			c->hello = 1;
			c->reader.max_line = cfg->max_line_bytes;
			uv_timer_stop(&c->timer);
		}
		server_reply(d, c->id, m->id, result);
	} else if (rc == SERVER_DEFERRED) {
		cJSON_Delete(result);
	} else {
		cJSON_Delete(result);
		if (rc > 0 || cause[0] == '\0')
			snprintf(cause, sizeof cause, "%s failed", m->method);
		client_send_error(c, m->id, rc < 0 ? rc : PROTO_E_INTERNAL,
		                  cause);
	}
}

/* Has c's uid had its share of this turn (SERVER_LINES_PER_TURN)? With
 * count, one more request is counted first. Root is exempt, as from the
 * other per-uid limits (docs/security.md): its many connections (a
 * script, the web program) would otherwise queue behind each other. */
static int
client_uid_spent(struct client *c, int count)
{
	struct uid_input *u = c->input;
	uint64_t now = uv_now(c->d->loop);

	if (u == NULL || c->peer.uid == 0)
		return 0;
	if (now != u->turn_ms) {
		u->turn_ms = now;
		u->turn_lines = 0;
	}
	if (count)
		u->turn_lines++;
	return u->turn_lines >= SERVER_LINES_PER_TURN;
}

static int
client_line_cb(void *arg, char *line, size_t len)
{
	struct client *c = arg;
	struct proto_msg m;
	const char *cause = NULL;
	int rc;

	if (c->closing || c->draining)
		return 1;
	memset(&m, 0, sizeof m);
	rc = proto_parse(line, len, &m, &cause);
	if (rc != 0)
		client_send_error(c, m.id, rc,
		                  cause != NULL ? cause : "bad request");
	else if (m.kind == PROTO_REQUEST)
		client_request(c, &m);
	/* Notifications and responses from clients are ignored. */
	proto_msg_free(&m);
	if (c->closing || c->draining)
		return 1;
	/* Counted: past its uid's share of the turn, stop here. */
	return client_uid_spent(c, 1) ? PROTO_READ_PAUSE : 0;
}

/* No buffer (UV_ENOBUFS) while the client's uid has spent its turn: what
 * it sent stays in the kernel until the next. */
void
client_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct client *c = h->data;

	(void)suggested;
	if (client_uid_spent(c, 0))
		*buf = uv_buf_init(NULL, 0);
	else
		*buf = uv_buf_init(read_buf, sizeof read_buf);
}

/* Stop reading c until its uid's next turn. What it sent past the pause
 * waits in its reader. */
static void
client_pause(struct client *c)
{
	uv_read_stop((uv_stream_t *)&c->pipe);
	client_wait_turn(c);
}

/* What a feed of c's reader returned: a pause, a framing error, or
 * nothing to do. */
static void
client_fed(struct client *c, int rc)
{
	char msg[256];

	if (rc == PROTO_READ_PAUSE && !c->closing && !c->draining) {
		client_pause(c);
	} else if (rc == PROTO_READ_LIMIT) {
		snprintf(msg, sizeof msg,
		         "limit reached: max_input_per_uid: the connections of "
		         "uid %u may hold %zu bytes of unfinished requests in "
		         "all; closing this one",
		         (unsigned)c->peer.uid,
		         c->d->cfg.max_input_bytes_per_uid);
		log_info("client %llu (uid %u): %s", (unsigned long long)c->id,
		         (unsigned)c->peer.uid, msg);
		client_send_error(c, NULL, PROTO_E_LIMIT, msg);
		client_drain(c);
	} else if (rc == PROTO_FRAME_TOO_LONG) {
		snprintf(msg, sizeof msg, "line longer than %zu bytes",
		         c->reader.max_line);
		log_info("client %llu (uid %u): %s; closing it",
		         (unsigned long long)c->id, (unsigned)c->peer.uid, msg);
		client_send_error(c, NULL, PROTO_E_INVALID_REQUEST, msg);
		client_drain(c);
	} else if (rc == PROTO_FRAME_UTF8) {
		log_info("client %llu (uid %u): invalid UTF-8; closing it",
		         (unsigned long long)c->id, (unsigned)c->peer.uid);
		client_send_error(c, NULL, PROTO_E_PARSE,
		                  "line is not valid UTF-8");
		client_drain(c);
	} else if (rc == -ENOMEM) {
		log_warnx("client %llu: out of memory; closing it",
		          (unsigned long long)c->id);
		client_close(c);
	}
	if (c->hooks->after_read != NULL)
		c->hooks->after_read(c->d);
}

void
client_read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct client *c = s->data;
	int rc;

	if (nread == 0 || c->closing)
		return;
	if (nread == UV_ENOBUFS) {
		client_pause(c);
		return;
	}
	if (nread < 0) {
		if (nread == UV_EOF)
			client_eof(c);
		else
			client_close(c);
		return;
	}
	client_input_budget(c);
	rc = proto_reader_feed(&c->reader, buf->base, (size_t)nread,
	                       client_line_cb, c);
	client_input_sync(c);
	client_fed(c, rc);
}

/* Its turn again: the requests it sent past its pause, then reading. */
static void
client_resume(struct client *c)
{
	int rc;

	c->wait_turn = 0;
	if (c->closing || c->draining)
		return;
	if (client_uid_spent(c, 0)) {
		client_wait_turn(c);
		return;
	}
	client_input_budget(c);
	rc = proto_reader_feed(&c->reader, NULL, 0, client_line_cb, c);
	client_input_sync(c);
	if (rc == 0 && !c->closing && !c->draining &&
	    uv_read_start((uv_stream_t *)&c->pipe, client_alloc_cb,
	                  client_read_cb) != 0) {
		client_close(c);
		return;
	}
	client_fed(c, rc);
}

/*
 * The next turn, after its timers: take the connection left waiting, which
 * starts libuv's accepting again, and give clients that had spent their
 * turn the next. An idle handle, not a 0 ms timer: libuv may run a timer
 * started from its own callback again in the same pass, and a client that
 * pauses again must wait for the next turn.
 */
void
server_resume_cb(uv_idle_t *h)
{
	struct server *srv = h->data;
	struct client *c;
	size_t k, n, start;

	uv_idle_stop(h);
	if (srv->accept_waiting) {
		srv->accept_waiting = 0;
		srv->turn_ms = uv_now(srv->d->loop);
		srv->turn_accepts = 1;
		server_accept(srv);
	}
	/* Each turn starts one further along, so that a uid's connections
	 * share its turns. A client closed meanwhile moves the later ones
	 * down; one skipped so waits for the next turn. */
	n = srv->nclients;
	start = n > 0 ? srv->resume_from++ % n : 0;
	for (k = 0; k < n && srv->nclients > 0; k++) {
		c = srv->clients[(start + k) % srv->nclients];
		if (c->wait_turn && !c->closing)
			client_resume(c);
	}
	for (k = 0; k < srv->nclients; k++)
		if (srv->clients[k]->wait_turn)
			uv_idle_start(h, server_resume_cb);
}

static void
client_wait_turn(struct client *c)
{
	c->wait_turn = 1;
	if (c->srv != NULL)
		uv_idle_start(&c->srv->resume, server_resume_cb);
}

static void
server_trim_cb(uv_timer_t *t)
{
	struct server *srv = t->data;

	srv->freed = 0;
	platform_trim_memory();
}

/* n bytes a client held are free: once a few MiB are, the allocator is
 * asked to give them back to the system, a second later (after a flood
 * the daemon should not keep its peak), never more often. */
void
server_freed(struct server *srv, size_t n)
{
	if (srv == NULL)
		return;
	srv->freed += n;
	if (srv->freed >= SERVER_TRIM_BYTES &&
	    !uv_is_active((uv_handle_t *)&srv->trim))
		uv_timer_start(&srv->trim, server_trim_cb, SERVER_TRIM_MS, 0);
}

/* The listener, the idle handle and the timers: srv goes with the last. */
static void
listener_closed_cb(uv_handle_t *h)
{
	struct server *srv = h->data;

	if (--srv->handles > 0)
		return;
	free(srv->clients);
	free(srv->inputs); /* empty: every client has been closed */
	free(srv);
}

static void
server_close_handles(struct server *srv)
{
	uv_close((uv_handle_t *)&srv->listener, listener_closed_cb);
	uv_close((uv_handle_t *)&srv->resume, listener_closed_cb);
	uv_close((uv_handle_t *)&srv->report, listener_closed_cb);
	uv_close((uv_handle_t *)&srv->trim, listener_closed_cb);
}

int
server_claim(struct daemon *d, char *cause, size_t causelen)
{
	struct sockaddr_un sun;
	const char *path = d->cfg.socket_path;
	int rc;

	d->sock_lock_fd = -1;
	if (strlen(path) >= sizeof sun.sun_path) {
		snprintf(cause, causelen,
		         "socket path %s is too long (at most "
		         "%zu bytes)",
		         path, sizeof sun.sun_path - 1);
		return -ENAMETOOLONG;
	}
	if ((rc = server_mkdir(path, d->cfg.system, cause, causelen)) != 0)
		return rc;
	if ((rc = server_lock(path, &d->sock_lock_fd, cause, causelen)) != 0) {
		d->sock_lock_fd = -1;
		return rc;
	}
	if ((rc = server_probe(path, cause, causelen)) != 0)
		server_release(d);
	return rc;
}

int
server_start(struct daemon *d, const struct server_hooks *hooks, char *cause,
             size_t causelen)
{
	struct server *srv;
	const char *path = d->cfg.socket_path;
	mode_t mode;
	int fd, rc;

	/*
	 * Every request is authorised by the peer's credentials, so the
	 * system socket is world-connectable.
	 */
	mode = d->cfg.system ? 0666 : 0600;
	if ((rc = server_listen_fd(d, path, mode, &fd)) != 0) {
		snprintf(cause, causelen, "cannot listen on %s: %s", path,
		         strerror(-rc));
		goto fail;
	}
	if ((srv = calloc(1, sizeof *srv)) == NULL) {
		close(fd);
		snprintf(cause, causelen, "out of memory");
		rc = -ENOMEM;
		goto fail;
	}
	srv->d = d;
	srv->hooks = hooks;
	uv_pipe_init(d->loop, &srv->listener, 0);
	uv_idle_init(d->loop, &srv->resume);
	uv_timer_init(d->loop, &srv->report);
	uv_timer_init(d->loop, &srv->trim);
	uv_unref((uv_handle_t *)&srv->trim);
	srv->listener.data = srv;
	srv->resume.data = srv;
	srv->report.data = srv;
	srv->trim.data = srv;
	srv->handles = 4;
	if ((rc = uv_pipe_open(&srv->listener, fd)) != 0)
		close(fd);
	else
		rc = uv_listen((uv_stream_t *)&srv->listener, SERVER_BACKLOG,
		               server_connection_cb);
	if (rc != 0) {
		snprintf(cause, causelen, "cannot listen on %s: %s", path,
		         uv_strerror(rc));
		server_close_handles(srv);
		goto fail;
	}
	srv->listening = 1;
	d->server = srv;
	log_info("listening on %s (mode %04o)", path, (unsigned)mode);
	return 0;
fail:
	server_release(d);
	return rc;
}

void
server_stop(struct daemon *d)
{
	struct server *srv = d->server;

	if (srv == NULL)
		return;
	while (srv->nclients > 0)
		client_close(srv->clients[srv->nclients - 1]);
	d->server = NULL;
	server_close_handles(srv);
}
