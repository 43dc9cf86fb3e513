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
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon.h"
#include "log.h"
#include "proto.h"
#include "server.h"
#include "trust.h"

#define SERVER_BACKLOG 1024
#define SERVER_LINGER_MS 5000 /* most time a closing client gets to read */
/* How often a half-closed client owed deferred answers is checked: are
 * they all sent, has the peer gone entirely? */
#define SERVER_EOF_CHECK_MS 1000
/* Connections accepted in one turn of the loop at most. libuv accepts
 * for as long as the backlog has any, so a connect/close loop would keep
 * the loop in one accept burst forever: no timer (the sampler: enforcement)
 * and no close callback (memory) would run. Past this many the rest wait
 * for the next turn. */
#define SERVER_ACCEPTS_PER_TURN 64
/* Refused connections are counted and logged once a minute per uid, not
 * once each: a refusal must cost a constant, and a log line is not one. */
#define SERVER_REFUSAL_LOG_MS 60000
#define SERVER_REFUSAL_UIDS 32 /* uids counted apart; the rest together */
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
/* Longest line before hello (a hello is a few hundred bytes): until then a
 * connection may make the daemon buffer only this much, not max_line, so
 * connections that never say hello cost little memory. */
#define SERVER_HELLO_LINE 4096

/* What one uid's connections make the daemon hold, so that it is bounded
 * per uid, not only per connection: partial lines (input the daemon must
 * keep until its newline comes, max_input_bytes_per_uid) and output queued
 * for connections that read slowly or not at all (max_unread_per_uid). */
struct uid_input {
	uid_t uid;
	size_t clients;   /* clients counted here */
	size_t bytes;     /* the sum of their readers' buffers (cap) */
	size_t unwritten; /* the memory their queued output takes */
	uint64_t turn_ms; /* the loop time turn_lines are counted in */
	int turn_lines;   /* requests handled in that turn */
};

struct client {
	uv_pipe_t pipe; /* first member: the handle's data is the client */
	uv_timer_t timer;
	struct server *srv; /* NULL once closing: the server may go first */
	struct daemon *d;
	const struct server_hooks *hooks; /* outlives the server */
	uint64_t id;
	struct peer peer;
	struct proto_reader reader;
	/* Its uid's input entry (NULL once closing), and the part of it
	 * that is this reader's buffer. */
	struct uid_input *input;
	size_t input_counted;
	size_t unwritten;  /* bytes handed to uv_write, not yet written */
	size_t queued_mem; /* the memory those take, requests included */
	size_t oversized;  /* of those, an answer larger than the limit */
	int handles;       /* handles still open; freed when it reaches 0 */
	/* While an answer is written in parts (server_stream_open), what
	 * else is sent to the client waits here, whole lines, so that no
	 * line lands inside the answer's. */
	char *held;
	size_t held_len, held_cap;
	unsigned streaming : 1;
	unsigned hello : 1;
	unsigned closing : 1;     /* uv_close called */
	unsigned draining : 1;    /* no more input; close once output is out */
	unsigned half_closed : 1; /* EOF read; open for deferred answers */
	/* Not read: its uid's requests this turn are spent (resumed next
	 * turn). */
	unsigned wait_turn : 1;
};

/* Refused connections of one uid not yet logged (uid -1: every uid past
 * SERVER_REFUSAL_UIDS; the global cap is counted under its own flag). */
struct refusals {
	uid_t uid;
	int global; /* refused by the global cap, not the uid's */
	unsigned long n;
};

struct server {
	struct daemon *d;
	const struct server_hooks *hooks;
	uv_pipe_t listener;
	/* The next turn: the accept of a connection left waiting (see
	 * SERVER_ACCEPTS_PER_TURN), the requests of clients that had spent
	 * theirs; the once-a-minute refusal report; giving freed memory back.
	 */
	uv_idle_t resume;
	uv_timer_t report, trim;
	int handles; /* freed when the last of the four has closed */
	int listening;
	int accept_waiting; /* libuv holds a connection for us */
	size_t resume_from; /* where the next resume starts: each in turn */
	size_t freed;       /* bytes freed since the last trim */
	uint64_t turn_ms; /* the loop time of the turn accepts are counted in */
	int turn_accepts;
	struct refusals refused[SERVER_REFUSAL_UIDS + 1];
	size_t nrefused;
	/* Sorted by id: ids only grow, so adding is an append. */
	struct client **clients;
	size_t nclients, cap;
	uint64_t next_id;
	/* One entry per uid with a client; a client points at its own. */
	struct uid_input **inputs;
	size_t ninputs, inputs_cap;
};

struct wreq {
	uv_write_t req;
	struct client *c;
	size_t len;
	int oversized; /* counted in c->oversized */
	char *buf;     /* owned; may point into data[] */
	char data[];
};

/* One read buffer serves every client: lines are copied by the reader
 * before the next read can happen. */
static char read_buf[64 * 1024];

static void server_freed(struct server *srv, size_t n);
static void client_wait_turn(struct client *c);

static void client_close(struct client *c);
static void client_drain(struct client *c);

static struct client *
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
static struct uid_input *
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
static void
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
static void
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

static void
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
static void
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

static void
client_write_cb(uv_write_t *req, int status)
{
	struct wreq *w = (struct wreq *)req;
	struct client *c = w->c;

	c->unwritten -= w->len;
	c->queued_mem -= w->len + sizeof *w;
	if (c->input != NULL)
		c->input->unwritten -= w->len + sizeof *w;
	if (w->oversized)
		c->oversized = 0;
	server_freed(c->d->server, w->len + sizeof *w);
	if (w->buf != w->data)
		free(w->buf);
	free(w);
	if (c->closing)
		return;
	if (status < 0) {
		log_debug("client %llu: write: %s", (unsigned long long)c->id,
		          uv_strerror(status));
		client_close(c);
	} else if (c->draining && c->unwritten == 0)
		client_close(c);
	else if (c->unwritten == 0 && c->hooks->writable != NULL)
		c->hooks->writable(c->d, c->id); /* a log it reads goes on */
}

/*
 * Queue bytes for a client. The common case is written at once without
 * allocating; only what the socket cannot take now is queued, and a client
 * whose queue would pass the limit is closed: one that never reads must
 * not make the daemon grow. One message larger than the limit by itself
 * (an answer of 100000 history buckets is about 25 MiB) is what the client
 * asked for: it is queued outside the limit, one at a time. With owned,
 * buf is a malloc'd buffer that this function frees.
 */
static int client_write_now(struct client *c, char *buf, size_t len, int owned);

/* A client that does not read what it is sent goes, and buf with it. */
static int
client_not_reading(struct client *c, const char *what, size_t n, char *buf,
                   int owned)
{
	log_info("client %llu (uid %u) does not read its replies (%zu bytes "
	         "%s); closing it",
	         (unsigned long long)c->id, (unsigned)c->peer.uid, n, what);
	if (owned)
		free(buf);
	client_close(c);
	return -ENOBUFS;
}

/* Hold a whole line while the client's answer is written in parts; the
 * held lines count against the same bound as queued ones. */
static int
client_hold(struct client *c, char *buf, size_t len, int owned)
{
	size_t max = c->d->cfg.max_unread_bytes, cap;
	char *h;

	if (c->held_len + len > max)
		return client_not_reading(c, "held", c->held_len + len, buf,
		                          owned);
	if (c->held_len + len > c->held_cap) {
		cap = c->held_cap * 2 > c->held_len + len ? c->held_cap * 2
		                                          : c->held_len + len;
		if ((h = realloc(c->held, cap)) == NULL) {
			if (owned)
				free(buf);
			client_close(c);
			return -ENOMEM;
		}
		c->held = h;
		c->held_cap = cap;
	}
	memcpy(c->held + c->held_len, buf, len);
	c->held_len += len;
	if (owned)
		free(buf);
	return 0;
}

static int
client_write(struct client *c, char *buf, size_t len, int owned)
{
	if (c->streaming && !c->closing)
		return client_hold(c, buf, len, owned);
	return client_write_now(c, buf, len, owned);
}

static int
client_write_now(struct client *c, char *buf, size_t len, int owned)
{
	struct wreq *w;
	uv_buf_t b;
	size_t off = 0, rest, max = c->d->cfg.max_unread_bytes;
	int n, oversized;

	if (c->closing) {
		if (owned)
			free(buf);
		return -ENOENT;
	}
	if (c->unwritten == 0) {
		b = uv_buf_init(buf, (unsigned)len);
		n = uv_try_write((uv_stream_t *)&c->pipe, &b, 1);
		if (n >= 0)
			off = (size_t)n;
		else if (n != UV_EAGAIN) {
			if (owned)
				free(buf);
			client_close(c);
			return -EPIPE;
		}
	}
	if (off == len) {
		if (owned)
			free(buf);
		return 0;
	}
	rest = len - off;
	oversized = rest > max && c->oversized == 0;
	if (!oversized && c->unwritten - c->oversized + rest > max)
		return client_not_reading(c, "queued", c->unwritten + rest, buf,
		                          owned);
	/* Across the uid's connections, answers too large by themselves
	 * included: many slow readers of one user cannot add up. What
	 * counts is the memory: a queued reply costs its request too, which
	 * for the short error of a refused request is most of it. */
	if (c->peer.uid != 0 && c->input != NULL &&
	    c->input->unwritten + rest + sizeof *w >
	        c->d->cfg.max_unread_bytes_per_uid) {
		log_info("client %llu (uid %u): its uid's connections do not "
		         "read their replies (%zu bytes queued, limit %zu); "
		         "closing it",
		         (unsigned long long)c->id, (unsigned)c->peer.uid,
		         c->input->unwritten + rest,
		         c->d->cfg.max_unread_bytes_per_uid);
		if (owned)
			free(buf);
		client_close(c);
		return -ENOBUFS;
	}
	if (owned && off == 0) {
		if ((w = malloc(sizeof *w)) == NULL) {
			free(buf);
			client_close(c);
			return -ENOMEM;
		}
		w->buf = buf;
	} else {
		if ((w = malloc(sizeof *w + rest)) == NULL) {
			if (owned)
				free(buf);
			client_close(c);
			return -ENOMEM;
		}
		memcpy(w->data, buf + off, rest);
		w->buf = w->data;
		if (owned)
			free(buf);
	}
	w->c = c;
	w->len = rest;
	w->oversized = oversized;
	b = uv_buf_init(w->buf, (unsigned)rest);
	if ((n = uv_write(&w->req, (uv_stream_t *)&c->pipe, &b, 1,
	                  client_write_cb)) != 0) {
		if (w->buf != w->data)
			free(w->buf);
		free(w);
		client_close(c);
		return -EPIPE;
	}
	c->unwritten += rest;
	c->queued_mem += rest + sizeof *w;
	if (c->input != NULL)
		c->input->unwritten += rest + sizeof *w;
	if (oversized)
		c->oversized = rest;
	return 0;
}

static int
client_send_error(struct client *c, const cJSON *id, int code,
                  const char *message)
{
	char *line;
	size_t len;

	if ((line = proto_encode_error(id, code, message, &len)) == NULL)
		return -ENOMEM;
	return client_write(c, line, len, 1);
}

int
server_reply(struct daemon *d, uint64_t client_id, const cJSON *id,
             cJSON *result)
{
	struct client *c = client_find(d->server, client_id);
	char *line;
	size_t len;

	if (c == NULL) {
		cJSON_Delete(result);
		return -ENOENT;
	}
	if (result == NULL)
		result = cJSON_CreateObject();
	if ((line = proto_encode_result(id, result, &len)) == NULL)
		return -ENOMEM;
	return client_write(c, line, len, 1);
}

int
server_reply_error(struct daemon *d, uint64_t client_id, const cJSON *id,
                   int code, const char *message)
{
	struct client *c = client_find(d->server, client_id);

	if (c == NULL)
		return -ENOENT;
	return client_send_error(c, id, code, message);
}

int
server_notify(struct daemon *d, uint64_t client_id, const char *method,
              cJSON *params)
{
	struct client *c = client_find(d->server, client_id);
	char *line;
	size_t len;

	if (c == NULL) {
		cJSON_Delete(params);
		return -ENOENT;
	}
	if ((line = proto_encode_notification(method, params, &len)) == NULL)
		return -ENOMEM;
	return client_write(c, line, len, 1);
}

int
server_send_line(struct daemon *d, uint64_t client_id, const char *line,
                 size_t len)
{
	struct client *c = client_find(d->server, client_id);

	if (c == NULL)
		return -ENOENT;
	return client_write(c, (char *)line, len, 0);
}

int
server_stream_open(struct daemon *d, uint64_t client_id, const cJSON *id)
{
	struct client *c = client_find(d->server, client_id);
	char *head;
	size_t len;
	int rc;

	if (c == NULL || c->closing)
		return -ENOENT;
	if (c->streaming)
		return -EBUSY;
	if ((head = proto_encode_result_head(id, &len)) == NULL)
		return -ENOMEM;
	if ((rc = client_write_now(c, head, len, 1)) == 0)
		c->streaming = 1;
	return rc;
}

int
server_stream_write(struct daemon *d, uint64_t client_id, const char *part,
                    size_t len)
{
	struct client *c = client_find(d->server, client_id);

	if (c == NULL || !c->streaming)
		return -ENOENT;
	return client_write_now(c, (char *)part, len, 0);
}

int
server_stream_close(struct daemon *d, uint64_t client_id)
{
	struct client *c = client_find(d->server, client_id);
	char *held;
	size_t len;
	int rc;

	if (c == NULL || !c->streaming)
		return -ENOENT;
	c->streaming = 0;
	if ((rc = client_write_now(c, "}\n", 2, 0)) != 0)
		return rc;
	/* What waited goes out now, in its order. */
	held = c->held;
	len = c->held_len;
	c->held = NULL;
	c->held_len = c->held_cap = 0;
	if (len == 0) {
		free(held);
		return 0;
	}
	return client_write_now(c, held, len, 1);
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

size_t
server_client_unwritten(struct daemon *d, uint64_t client_id)
{
	struct client *c = client_find(d->server, client_id);

	return c != NULL ? c->unwritten : 0;
}

/*
 * A connection whose peer has closed its end and left nothing unread is
 * over: it would close as soon as its EOF is read. Several of them can
 * wait for that in one turn, so a uid at its cap checks its own before it
 * is refused; otherwise a connect/close loop would be refused for the
 * connections it has already closed.
 */
static int
client_finished(struct client *c, const struct pollfd *pfd)
{
	int unread = 0;

	if (!(pfd->revents & (POLLHUP | POLLERR)))
		return 0;
	if (ioctl(pfd->fd, FIONREAD, &unread) != 0)
		return 0;
	return unread == 0 && c->unwritten == 0;
}

/* Close those of uid's clients that have finished (client_finished);
 * returns how many are left. */
static int
server_uid_reap(struct server *srv, uid_t uid)
{
	struct pollfd pfd[64];
	struct client *batch[64];
	size_t i = 0, k, n;
	uv_os_fd_t fd;
	int left = 0;

	while (i < srv->nclients) {
		for (n = 0; i < srv->nclients && n < 64; i++) {
			struct client *c = srv->clients[i];

			if (c->peer.uid != uid || c->draining)
				continue;
			if (uv_fileno((uv_handle_t *)&c->pipe, &fd) != 0) {
				left++;
				continue;
			}
			pfd[n].fd = fd;
			pfd[n].events = POLLIN;
			pfd[n].revents = 0;
			batch[n++] = c;
		}
		if (n == 0)
			continue;
		if (poll(pfd, n, 0) < 0) {
			left += (int)n;
			continue;
		}
		for (k = 0; k < n; k++) {
			if (!client_finished(batch[k], &pfd[k])) {
				left++;
				continue;
			}
			/* Unlinking moves the clients after it down. */
			client_close(batch[k]);
			i--;
		}
	}
	return left;
}

/* Open connections of one uid, greeted or not, so that one uid's silent
 * connections cannot fill the global cap and lock everyone out. Those
 * being closed (draining their last output) do not count. A scan is cheap
 * next to the accept it guards. */
static int
server_uid_count(struct server *srv, uid_t uid)
{
	size_t i;
	int n = 0;

	for (i = 0; i < srv->nclients; i++)
		if (srv->clients[i]->peer.uid == uid &&
		    !srv->clients[i]->draining)
			n++;
	return n;
}

static void
refusal_log(const struct refusals *r, unsigned long n, int limit, int first)
{
	const char *s = n == 1 ? "" : "s";

	if (first && r->global)
		log_info("connection refused: too many connections (limit %d); "
		         "further refusals are logged once a minute",
		         limit);
	else if (first)
		log_info("connection refused for uid %u: too many connections "
		         "for the uid (limit %d); further refusals are logged "
		         "once a minute",
		         (unsigned)r->uid, limit);
	else if (r->global)
		log_info(
		    "%lu connection%s refused in the last minute: too many "
		    "connections (limit %d)",
		    n, s, limit);
	else if (r->uid == (uid_t)-1)
		log_info("%lu connection%s refused for other uids in the last "
		         "minute",
		         n, s);
	else
		log_info("%lu connection%s refused for uid %u in the last "
		         "minute: too many connections for the uid (limit %d)",
		         n, s, (unsigned)r->uid, limit);
}

static int
refusal_limit(const struct server *srv, int global)
{
	const struct daemon *d = srv->d;
	int limit = d->cfg.max_clients;

	if (!global)
		return d->cfg.max_clients_per_uid;
	if (d->fd_max_clients > 0 && d->fd_max_clients < limit)
		limit = d->fd_max_clients;
	return limit;
}

static void
server_report_cb(uv_timer_t *t)
{
	struct server *srv = t->data;
	size_t i;

	for (i = 0; i < srv->nrefused; i++)
		if (srv->refused[i].n > 0)
			refusal_log(&srv->refused[i], srv->refused[i].n,
			            refusal_limit(srv, srv->refused[i].global),
			            0);
	/* Nothing refused for a minute: the next refusal is logged at once
	 * again. */
	if (srv->nrefused == 0)
		uv_timer_stop(t);
	srv->nrefused = 0;
}

/*
 * Count a refused connection. The first one while no report is due is
 * logged at once; the others are added up and logged by the report.
 */
static void
server_count_refusal(struct server *srv, uid_t uid, int global)
{
	struct refusals *r = NULL;
	size_t i;

	if (!uv_is_active((uv_handle_t *)&srv->report)) {
		struct refusals first = {uid, global, 1};

		refusal_log(&first, 1, refusal_limit(srv, global), 1);
		uv_timer_start(&srv->report, server_report_cb,
		               SERVER_REFUSAL_LOG_MS, SERVER_REFUSAL_LOG_MS);
		return;
	}
	for (i = 0; i < srv->nrefused && r == NULL; i++)
		if (srv->refused[i].uid == uid &&
		    srv->refused[i].global == global)
			r = &srv->refused[i];
	if (r == NULL && srv->nrefused < SERVER_REFUSAL_UIDS) {
		r = &srv->refused[srv->nrefused++];
		r->uid = uid;
		r->global = global;
		r->n = 0;
	}
	if (r == NULL) {
		/* The last slot is everyone else's. */
		r = &srv->refused[SERVER_REFUSAL_UIDS];
		if (srv->nrefused == SERVER_REFUSAL_UIDS) {
			srv->nrefused++;
			r->uid = (uid_t)-1;
			r->global = 0;
			r->n = 0;
		}
	}
	r->n++;
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
 * count, one more request is counted first. */
static int
client_uid_spent(struct client *c, int count)
{
	struct uid_input *u = c->input;
	uint64_t now = uv_now(c->d->loop);

	if (u == NULL)
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
static void
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

static void
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

static void
reject_closed_cb(uv_handle_t *h)
{
	free(h);
}

/* A connection refused before it became a client: say why in one error
 * with id null, then close it. It was never given an id, so nobody hears
 * that it has gone. */
static void
client_refuse(struct client *c, const char *why)
{
	char *line;
	size_t len;
	uv_buf_t b;

	line = proto_encode_error(NULL, PROTO_E_LIMIT, why, &len);
	if (line != NULL) {
		b = uv_buf_init(line, (unsigned)len);
		uv_try_write((uv_stream_t *)&c->pipe, &b, 1);
		free(line);
	}
	c->closing = 1;
	uv_close((uv_handle_t *)&c->pipe, client_closed_cb);
	uv_close((uv_handle_t *)&c->timer, client_closed_cb);
}

/* Over the global cap: accept, say why, close. */
static void
server_reject(struct server *srv)
{
	uv_pipe_t *p;
	char *line;
	size_t len;
	uv_buf_t b;

	if ((p = malloc(sizeof *p)) == NULL)
		return;
	uv_pipe_init(srv->d->loop, p, 0);
	if (uv_accept((uv_stream_t *)&srv->listener, (uv_stream_t *)p) == 0) {
		line = proto_encode_error(NULL, PROTO_E_LIMIT,
		                          "too many connections", &len);
		if (line != NULL) {
			b = uv_buf_init(line, (unsigned)len);
			uv_try_write((uv_stream_t *)p, &b, 1);
			free(line);
		}
		server_count_refusal(srv, (uid_t)-1, 1);
	}
	uv_close((uv_handle_t *)p, reject_closed_cb);
}

/*
 * The peer's groups, read with its credentials: what its detached jobs
 * may have. A kernel that cannot tell (Linux before 4.13) leaves it its
 * primary group alone, which never gives a job a group its submitter did
 * not have.
 */
static int
peer_groups(uv_os_fd_t fd, struct peer *p)
{
	static int warned;
	int rc = platform_peer_groups(fd, &p->groups, &p->ngroups);

	if (rc != -ENOPROTOOPT)
		return rc;
	if (!warned) {
		warned = 1;
		log_warnx("this system does not report a peer's groups "
		          "(Linux before 4.13): detached jobs get "
		          "their submitter's primary group only");
	}
	if ((p->groups = malloc(sizeof *p->groups)) == NULL)
		return -ENOMEM;
	p->groups[0] = p->gid;
	p->ngroups = 1;
	return 0;
}

/* Close a client that never joined the table (no id, no input share). */
static void
client_discard(struct client *c)
{
	c->closing = 1;
	uv_close((uv_handle_t *)&c->pipe, client_closed_cb);
	uv_close((uv_handle_t *)&c->timer, client_closed_cb);
}

/*
 * Over its uid's cap? Connections of the uid that have finished are
 * closed first (server_uid_reap): a connect/close loop must not be refused
 * for the connections it has already closed. Root is never capped.
 */
static int
server_uid_full(struct server *srv, uid_t uid)
{
	int limit = srv->d->cfg.max_clients_per_uid;

	if (uid == 0 || server_uid_count(srv, uid) < limit)
		return 0;
	return server_uid_reap(srv, uid) >= limit;
}

/* Take the connection libuv holds for us: refuse it, or make it a
 * client. */
static void
server_accept(struct server *srv)
{
	struct daemon *d = srv->d;
	struct client *c, **nc;
	uv_os_fd_t fd;
	int rc;

	if ((int)srv->nclients >= refusal_limit(srv, 1)) {
		server_reject(srv);
		return;
	}
	if (srv->nclients == srv->cap) {
		size_t cap = srv->cap ? srv->cap * 2 : 64;
		if ((nc = realloc(srv->clients, cap * sizeof *nc)) == NULL) {
			server_reject(srv);
			return;
		}
		srv->clients = nc;
		srv->cap = cap;
	}
	if ((c = calloc(1, sizeof *c)) == NULL) {
		server_reject(srv);
		return;
	}
	c->srv = srv;
	c->d = srv->d;
	c->hooks = srv->hooks;
	uv_pipe_init(d->loop, &c->pipe, 0);
	uv_timer_init(d->loop, &c->timer);
	c->pipe.data = c;
	c->timer.data = c;
	c->handles = 2;
	proto_reader_init(&c->reader, d->cfg.max_line_bytes < SERVER_HELLO_LINE
	                                  ? d->cfg.max_line_bytes
	                                  : SERVER_HELLO_LINE);

	if ((rc = uv_accept((uv_stream_t *)&srv->listener,
	                    (uv_stream_t *)&c->pipe)) != 0 ||
	    (rc = uv_fileno((uv_handle_t *)&c->pipe, &fd)) != 0 ||
	    (rc = platform_peer_cred(fd, &c->peer.uid, &c->peer.gid,
	                             &c->peer.pid)) != 0) {
		log_warnx("accept: cannot read peer credentials: %s",
		          rc < 0 ? strerror(-rc) : "unknown error");
		client_discard(c);
		return;
	}
	/* The uid is known now, before the client says anything: the cap
	 * holds for silent connections too. A refusal costs a constant: one
	 * error line, a close, a count (server_count_refusal). */
	if (server_uid_full(srv, c->peer.uid)) {
		char why[128];

		snprintf(why, sizeof why,
		         "too many connections for uid %u (limit %d)",
		         (unsigned)c->peer.uid, d->cfg.max_clients_per_uid);
		server_count_refusal(srv, c->peer.uid, 0);
		client_refuse(c, why);
		return;
	}
	if ((rc = peer_groups(fd, &c->peer)) != 0) {
		log_warnx("accept: cannot read the peer's groups: %s",
		          strerror(-rc));
		client_discard(c);
		return;
	}
	if ((c->input = uid_input_get(srv, c->peer.uid)) == NULL) {
		log_warnx("accept: out of memory");
		client_discard(c);
		return;
	}
	c->input->clients++;
	c->id = ++srv->next_id;
	c->peer.client_id = c->id;
	srv->clients[srv->nclients++] = c;
	log_debug("client %llu connected: uid %u pid %d",
	          (unsigned long long)c->id, (unsigned)c->peer.uid,
	          (int)c->peer.pid);
	uv_timer_start(&c->timer, client_timer_cb,
	               (uint64_t)d->cfg.hello_timeout_ms, 0);
	if ((rc = uv_read_start((uv_stream_t *)&c->pipe, client_alloc_cb,
	                        client_read_cb)) != 0)
		client_close(c);
}

/*
 * The next turn, after its timers: take the connection left waiting, which
 * starts libuv's accepting again, and give clients that had spent their
 * turn the next. An idle handle, not a 0 ms timer: libuv may run a timer
 * started from its own callback again in the same pass, and a client that
 * pauses again must wait for the next turn.
 */
static void
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
static void
server_freed(struct server *srv, size_t n)
{
	if (srv == NULL)
		return;
	srv->freed += n;
	if (srv->freed >= SERVER_TRIM_BYTES &&
	    !uv_is_active((uv_handle_t *)&srv->trim))
		uv_timer_start(&srv->trim, server_trim_cb, SERVER_TRIM_MS, 0);
}

static void
server_connection_cb(uv_stream_t *ls, int status)
{
	struct server *srv = ls->data;
	uint64_t now = uv_now(srv->d->loop);

	if (status < 0) {
		log_warnx("accept: %s", uv_strerror(status));
		return;
	}
	/* The loop's time moves once a turn: a new time is a new turn. */
	if (now != srv->turn_ms) {
		srv->turn_ms = now;
		srv->turn_accepts = 0;
	}
	if (++srv->turn_accepts > SERVER_ACCEPTS_PER_TURN) {
		/* Not accepted: libuv stops watching the listener and keeps
		 * the connection until uv_accept, which server_resume_cb
		 * makes next turn, after its timers. */
		srv->accept_waiting = 1;
		uv_idle_start(&srv->resume, server_resume_cb);
		return;
	}
	server_accept(srv);
}

/*
 * Make room for our socket: refuse when a daemon answers on it, remove it
 * when nobody does (a crash left it behind), and never remove anything
 * that is not a socket.
 */
static int
server_probe(const char *path, char *cause, size_t causelen)
{
	struct sockaddr_un sun;
	struct stat st;
	int fd, rc, err;

	if (lstat(path, &st) != 0) {
		if (errno == ENOENT)
			return 0;
		snprintf(cause, causelen, "%s: %s", path, strerror(errno));
		return -errno;
	}
	if (!S_ISSOCK(st.st_mode)) {
		snprintf(cause, causelen,
		         "%s exists and is not a socket; "
		         "refusing to replace it",
		         path);
		return -EEXIST;
	}
	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, path, strlen(path) + 1);
	if ((fd = socket(AF_UNIX, SOCK_STREAM, 0)) < 0) {
		snprintf(cause, causelen, "socket: %s", strerror(errno));
		return -errno;
	}
	rc = connect(fd, (struct sockaddr *)&sun, sizeof sun);
	err = errno;
	close(fd);
	if (rc == 0) {
		snprintf(cause, causelen,
		         "another stageloadd is already "
		         "running on %s",
		         path);
		return -EADDRINUSE;
	}
	if (err != ECONNREFUSED) {
		snprintf(cause, causelen, "%s: %s", path, strerror(err));
		return -err;
	}
	if (unlink(path) != 0 && errno != ENOENT) {
		snprintf(cause, causelen, "cannot remove stale socket %s: %s",
		         path, strerror(errno));
		return -errno;
	}
	log_info("removed stale socket %s", path);
	return 0;
}

/*
 * The lock beside the socket says which daemon owns it. A socket alone
 * cannot: between another daemon's bind() and listen() it refuses
 * connections like a stale one, and the probe would remove it. The lock
 * file is never removed (removing it would let two daemons lock two
 * files); the kernel drops the lock when its holder exits, however it
 * exits. It is readable by its owner only: flock() needs no more than a
 * descriptor open for reading, and another user holding the lock of the
 * system socket would keep the daemon from starting.
 */
static int
server_lock(const char *path, int *fdp, char *cause, size_t causelen)
{
	char lock[1100];
	struct stat st;
	int fd, err;

	snprintf(lock, sizeof lock, "%s.lock", path);
	fd = open(lock, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	/* server_mkdir checked it; nobody else can have changed it since,
	 * but what is opened is what counts. */
	if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	                st.st_uid != geteuid())) {
		close(fd);
		snprintf(cause, causelen,
		         "refusing the socket's lock file %s: not a regular "
		         "file of uid %u",
		         lock, (unsigned)geteuid());
		return -EPERM;
	}
	if (fd >= 0 && fchmod(fd, 0600) != 0) {
		err = errno;
		close(fd);
		snprintf(cause, causelen, "cannot make %s private: %s", lock,
		         strerror(err));
		return -err;
	}
	if (fd < 0) {
		err = errno;
		snprintf(cause, causelen, "cannot open the lock file %s: %s",
		         lock, strerror(err));
		return -err;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		err = errno;
		close(fd);
		if (err == EWOULDBLOCK) {
			snprintf(cause, causelen,
			         "another stageloadd is already running on %s "
			         "(it holds %s)",
			         path, lock);
			return -EADDRINUSE;
		}
		snprintf(cause, causelen, "cannot lock %s: %s", lock,
		         strerror(err));
		return -err;
	}
	*fdp = fd;
	return 0;
}

/*
 * The listening socket, made here and handed to libuv with uv_pipe_open:
 * a socket bound by uv_pipe_bind is unlinked by name when libuv closes it,
 * whoever's it is by then, while server_release removes only our own.
 */
static int
server_listen_fd(struct daemon *d, const char *path, mode_t mode, int *fdp)
{
	struct sockaddr_un sun;
	struct stat st;
	mode_t old;
	int fd, rc;

	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, path, strlen(path) + 1);
	if ((fd = socket(AF_UNIX, SOCK_STREAM, 0)) < 0)
		return -errno;
	if (fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	/* A per-user socket is private from the moment it exists (umask),
	 * not only after chmod. */
	old = umask(d->cfg.system ? 0111 : 0177);
	rc = bind(fd, (struct sockaddr *)&sun, sizeof sun);
	umask(old);
	if (rc != 0 || chmod(path, mode) != 0 || stat(path, &st) != 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	d->sock_dev = st.st_dev;
	d->sock_ino = st.st_ino;
	*fdp = fd;
	return 0;
}

/*
 * The socket's directory and the lock file in it must be the daemon's, in
 * the sense of trust.c: another user who could write the directory could
 * take the socket's name for a socket of theirs, and one who owned the
 * lock could hold it and keep the daemon from starting. So must every
 * directory above it (a sticky one such as /tmp may be above it, not be
 * it). A link root or this user made is followed and its target checked
 * (/var/run is often a link to /run, macOS's /tmp to /private/tmp);
 * another user's is refused, since they could repoint it later. A missing
 * directory is created, 0755 for root (everyone connects to its socket),
 * 0700 otherwise, and checked again.
 */
static int
server_mkdir(const char *path, int system, char *cause, size_t causelen)
{
	char dir[1024], lock[1100], why[768], *slash;
	const char *what = "the socket directory", *bad = dir;
	int rc;

	snprintf(dir, sizeof dir, "%s", path);
	if ((slash = strrchr(dir, '/')) == NULL)
		snprintf(dir, sizeof dir, ".");
	else if (slash == dir)
		slash[1] = '\0';
	else
		*slash = '\0';
	snprintf(lock, sizeof lock, "%s.lock", path);
	if ((rc = trust_path_check(dir, geteuid(), TRUST_DIR, why,
	                           sizeof why)) != 0)
		goto refuse;
	if (mkdir(dir, system ? 0755 : 0700) != 0 && errno != EEXIST) {
		rc = -errno;
		snprintf(cause, causelen, "socket directory %s: %s", dir,
		         strerror(-rc));
		return rc;
	}
	if ((rc = trust_path_check(dir, geteuid(), TRUST_DIR, why,
	                           sizeof why)) != 0)
		goto refuse;
	what = "the socket's lock file";
	bad = lock;
	if ((rc = trust_path_check(lock, geteuid(), TRUST_FILE, why,
	                           sizeof why)) != 0)
		goto refuse;
	return 0;
refuse:
	snprintf(cause, causelen, "refusing %s %s: %s", what, bad, why);
	return rc;
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
server_start(struct daemon *d, const struct server_hooks *hooks, char *cause,
             size_t causelen)
{
	struct sockaddr_un sun;
	struct server *srv;
	const char *path = d->cfg.socket_path;
	mode_t mode;
	int fd, rc;

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
		goto fail;
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

void
server_release(struct daemon *d)
{
	struct stat st;

	if (d->sock_lock_fd < 0)
		return;
	/* Only if it is still ours: a socket someone put in its place
	 * (by hand, or a daemon of a version without the lock) stays. */
	if (d->sock_ino != 0 && stat(d->cfg.socket_path, &st) == 0 &&
	    st.st_dev == d->sock_dev && st.st_ino == d->sock_ino)
		unlink(d->cfg.socket_path);
	d->sock_dev = 0;
	d->sock_ino = 0;
	close(d->sock_lock_fd);
	d->sock_lock_fd = -1;
}
