/*
 * What is sent to clients: replies, notifications and answers written in
 * parts, each line whole; what the socket cannot take now is queued,
 * bounded per client and per uid.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "server-internal.h"

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

int
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

size_t
server_client_unwritten(struct daemon *d, uint64_t client_id)
{
	struct client *c = client_find(d->server, client_id);

	return c != NULL ? c->unwritten : 0;
}
