/*
 * Accepting connections: the caps (in all, per uid), refusals that cost a
 * constant and are logged once a minute, and a bound on accepts per turn
 * of the loop, so that a connect/close loop cannot hold it.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "log.h"
#include "platform.h"
#include "server-internal.h"

/* Connections accepted in one turn of the loop at most. libuv accepts
 * for as long as the backlog has any, so a connect/close loop would keep
 * the loop in one accept burst forever: no timer (the sampler: enforcement)
 * and no close callback (memory) would run. Past this many the rest wait
 * for the next turn. */
#define SERVER_ACCEPTS_PER_TURN 64
/* Longest line before hello (a hello is a few hundred bytes): until then a
 * connection may make the daemon buffer only this much, not max_line, so
 * connections that never say hello cost little memory. */
#define SERVER_HELLO_LINE 4096
/* Refused connections are counted and logged once a minute per uid, not
 * once each: a refusal must cost a constant, and a log line is not one. */
#define SERVER_REFUSAL_LOG_MS 60000

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
void
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

void
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
