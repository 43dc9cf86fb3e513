/*
 * Load generator: many concurrent clients on one event loop, each sending
 * hello and then a fixed number of requests one after another, measuring
 * every round trip. Optionally keeps a crowd of idle connections open first
 * and measures how long a new connection then takes to be served, before
 * and after the busy clients ran.
 *
 * usage: sl-load SOCKET [-c CLIENTS] [-n REQUESTS] [-i IDLE] [-m METHOD]
 *                [-d SECONDS]
 * With -d every client goes on past its REQUESTS until SECONDS have passed
 * since the busy run started, so the load lasts at least that long.
 * Prints one JSON object with throughput and latency percentiles; exits 1
 * when any request failed, 2 on bad usage.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "proto.h"

/* A connect refused because the listen backlog is full is retried: that is
 * the kernel pacing a burst, not the daemon failing. */
#define LOAD_CONNECT_TRIES 50
#define LOAD_CONNECT_RETRY_MS 20

struct lclient {
	uv_pipe_t pipe;
	uv_connect_t conn;
	uv_timer_t retry;
	struct proto_reader reader;
	int nreq; /* requests to send after hello */
	int sent; /* requests sent after hello */
	int hello_done;
	int idle; /* idle clients stop after hello and stay open */
	int tries;
	int done;
	uint64_t t_sent_ns;
};

static const char *sock_path;
static const char *method = "info";
static int connected_idle, done_clients, errors, connect_retries;
static char first_error[256];
static uint64_t *lat_ns;
static size_t nlat, lat_cap;
static uint64_t busy_until_ns; /* -d: keep going until then */
static uv_loop_t *loop;

static void start_connect(struct lclient *c);

static void
fail(struct lclient *c, const char *what)
{
	errors++;
	if (first_error[0] == '\0')
		snprintf(first_error, sizeof first_error, "%s", what);
	(void)c;
}

static void
on_alloc(uv_handle_t *h, size_t sz, uv_buf_t *b)
{
	(void)h;
	b->base = malloc(sz);
	b->len = b->base ? sz : 0;
}

static void
on_write(uv_write_t *w, int status)
{
	if (status < 0)
		fail(w->handle->data, uv_strerror(status));
	free(w->data);
	free(w);
}

static void
send_line(struct lclient *c, const char *m, const char *params)
{
	char *line;
	uv_write_t *w;
	uv_buf_t b;
	int n;

	n = snprintf(
	    NULL, 0, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"%s\"%s%s}\n",
	    c->sent, m, params ? ",\"params\":" : "", params ? params : "");
	line = malloc((size_t)n + 1);
	w = malloc(sizeof *w);
	if (line == NULL || w == NULL)
		abort();
	snprintf(line, (size_t)n + 1,
	         "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"%s\"%s%s}\n",
	         c->sent, m, params ? ",\"params\":" : "",
	         params ? params : "");
	w->data = line;
	b = uv_buf_init(line, (unsigned)n);
	c->t_sent_ns = uv_hrtime();
	if (uv_write(w, (uv_stream_t *)&c->pipe, &b, 1, on_write) < 0) {
		fail(c, "write failed");
		free(line);
		free(w);
	}
}

/* A client is done once: it finished its requests, or failed. */
static void
on_pipe_closed(uv_handle_t *h)
{
	struct lclient *c = h->data;

	proto_reader_free(&c->reader);
}

static void
finish(struct lclient *c)
{
	if (!c->done) {
		c->done = 1;
		done_clients++;
	}
	if (!uv_is_closing((uv_handle_t *)&c->pipe))
		uv_close((uv_handle_t *)&c->pipe, on_pipe_closed);
}

static int
on_line(void *arg, char *line, size_t len)
{
	struct lclient *c = arg;
	struct proto_msg m;
	const char *cause;
	int rc;

	rc = proto_parse(line, len, &m, &cause);
	if (rc == 0 && m.kind != PROTO_RESPONSE) {
		/* notifications are not answers; nothing to time */
		proto_msg_free(&m);
		return 0;
	}
	if (rc != 0 || m.error != NULL) {
		fail(c, rc != 0 ? cause : line);
		proto_msg_free(&m);
		finish(c);
		return 1;
	}
	proto_msg_free(&m);
	if (!c->hello_done) {
		c->hello_done = 1;
		if (c->idle) {
			connected_idle++;
			return 0;
		}
	} else {
		uint64_t now = uv_hrtime();

		if (nlat == lat_cap) {
			uint64_t *nl =
			    realloc(lat_ns, 2 * lat_cap * sizeof *nl);

			if (nl == NULL)
				abort();
			lat_ns = nl;
			lat_cap *= 2;
		}
		lat_ns[nlat++] = now - c->t_sent_ns;
		if (c->sent >= c->nreq && !c->idle && now < busy_until_ns)
			c->nreq++;
	}
	if (c->sent >= c->nreq) {
		finish(c);
		return 1;
	}
	c->sent++;
	send_line(c, method, NULL);
	return 0;
}

static void
on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
	struct lclient *c = s->data;

	if (n < 0) {
		if (!c->done)
			fail(c, n == UV_EOF ? "closed by the daemon"
			                    : uv_strerror((int)n));
		finish(c);
	} else if (n > 0) {
		int rc = proto_reader_feed(&c->reader, b->base, (size_t)n,
		                           on_line, c);
		if (rc < 0) {
			fail(c, "framing error");
			finish(c);
		}
	}
	free(b->base);
}

static void
on_retry(uv_timer_t *t)
{
	start_connect(t->data);
}

static void
on_pipe_closed_for_retry(uv_handle_t *h)
{
	struct lclient *c = h->data;

	uv_timer_start(&c->retry, on_retry, LOAD_CONNECT_RETRY_MS, 0);
}

static void
on_connect(uv_connect_t *req, int status)
{
	struct lclient *c = req->data;

	if (status == UV_EAGAIN && ++c->tries < LOAD_CONNECT_TRIES) {
		connect_retries++;
		uv_close((uv_handle_t *)&c->pipe, on_pipe_closed_for_retry);
		return;
	}
	if (status < 0) {
		fail(c, uv_strerror(status));
		finish(c);
		return;
	}
	uv_read_start((uv_stream_t *)&c->pipe, on_alloc, on_read);
	send_line(c, "hello", "{\"version\":1,\"client\":\"sl-load\"}");
}

static void
start_connect(struct lclient *c)
{
	uv_pipe_init(loop, &c->pipe, 0);
	c->pipe.data = c;
	c->conn.data = c;
	uv_pipe_connect(&c->conn, &c->pipe, sock_path, on_connect);
}

static void
start_client(struct lclient *c, int idle, int nreq)
{
	memset(c, 0, sizeof *c);
	c->idle = idle;
	c->nreq = nreq;
	proto_reader_init(&c->reader, PROTO_MAX_LINE_DEFAULT);
	uv_timer_init(loop, &c->retry);
	c->retry.data = c;
	start_connect(c);
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static double
pct(double p)
{
	size_t i;

	if (nlat == 0)
		return 0;
	i = (size_t)(p / 100.0 * (double)(nlat - 1) + 0.5);
	return (double)lat_ns[i] / 1e6;
}

/* Time one new client (hello plus one request) while the crowd is open. */
static double
newcomer_ms(struct lclient *nc)
{
	uint64_t t0 = uv_hrtime();
	int before = done_clients;
	size_t keep = nlat;

	start_client(nc, 0, 1);
	while (done_clients == before)
		if (uv_run(loop, UV_RUN_ONCE) == 0)
			break;
	nlat = keep;
	return (double)(uv_hrtime() - t0) / 1e6;
}

static void
usage(void)
{
	fprintf(stderr, "usage: sl-load SOCKET [-c CLIENTS] [-n REQUESTS] "
	                "[-i IDLE] [-m METHOD] [-d SECONDS]\n");
}

int
main(int argc, char **argv)
{
	struct lclient *busy, *idle;
	uint64_t t0, t1;
	double new_before = 0, new_after = 0;
	int nclients = 200, nreq = 20, nidle = 0, opt, i;
	double min_secs = 0;
	size_t want;

	while ((opt = getopt(argc, argv, "c:n:i:m:d:")) != -1) {
		switch (opt) {
		case 'c':
			nclients = atoi(optarg);
			break;
		case 'n':
			nreq = atoi(optarg);
			break;
		case 'i':
			nidle = atoi(optarg);
			break;
		case 'm':
			method = optarg;
			break;
		case 'd':
			min_secs = atof(optarg);
			break;
		default:
			usage();
			return 2;
		}
	}
	if (optind != argc - 1 || nclients < 1 || nreq < 1 || nidle < 0 ||
	    !(min_secs >= 0)) {
		usage();
		return 2;
	}
	sock_path = argv[optind];
	loop = uv_default_loop();
	want = lat_cap = (size_t)nclients * (size_t)nreq;
	lat_ns = calloc(lat_cap, sizeof *lat_ns);
	busy = calloc((size_t)nclients, sizeof *busy);
	/* the crowd, then two newcomers (before and after the busy run) */
	idle = calloc((size_t)nidle + 2, sizeof *idle);
	if (lat_ns == NULL || busy == NULL || idle == NULL)
		return 1;

	for (i = 0; i < nidle; i++)
		start_client(&idle[i], 1, 0);
	while (connected_idle < nidle && errors == 0)
		if (uv_run(loop, UV_RUN_ONCE) == 0)
			break;
	if (nidle > 0)
		new_before = newcomer_ms(&idle[nidle]);

	t0 = uv_hrtime();
	busy_until_ns = t0 + (uint64_t)(min_secs * 1e9);
	done_clients = 0;
	for (i = 0; i < nclients; i++)
		start_client(&busy[i], 0, nreq);
	while (done_clients < nclients)
		if (uv_run(loop, UV_RUN_ONCE) == 0)
			break;
	t1 = uv_hrtime();

	/* The crowd must still be open and the daemon still serving it. */
	if (nidle > 0) {
		int open = 0;

		new_after = newcomer_ms(&idle[nidle + 1]);
		for (i = 0; i < nidle; i++)
			open += !idle[i].done;
		if (open != nidle)
			fail(NULL, "idle connections were closed");
	}

	/* Close everything so a leak checker sees a clean exit. */
	for (i = 0; i < nidle; i++)
		finish(&idle[i]);
	for (i = 0; i < nclients; i++)
		finish(&busy[i]);
	for (i = 0; i < nidle + 2; i++)
		if (idle[i].retry.loop != NULL)
			uv_close((uv_handle_t *)&idle[i].retry, NULL);
	for (i = 0; i < nclients; i++)
		uv_close((uv_handle_t *)&busy[i].retry, NULL);
	uv_run(loop, UV_RUN_DEFAULT);

	qsort(lat_ns, nlat, sizeof *lat_ns, cmp_u64);
	printf("{\"clients\":%d,\"requests_each\":%d,\"idle\":%d,"
	       "\"completed\":%zu,\"errors\":%d,\"connect_retries\":%d,"
	       "\"seconds\":%.3f,\"requests_per_s\":%.0f,\"p50_ms\":%.3f,"
	       "\"p99_ms\":%.3f,\"max_ms\":%.3f,\"new_client_ms\":%.3f,"
	       "\"new_client_after_ms\":%.3f}\n",
	       nclients, nreq, nidle, nlat, errors, connect_retries,
	       (double)(t1 - t0) / 1e9,
	       (double)nlat / ((double)(t1 - t0) / 1e9), pct(50), pct(99),
	       pct(100), new_before, new_after);
	if (first_error[0] != '\0')
		fprintf(stderr, "sl-load: first error: %s\n", first_error);
	uv_loop_close(loop);
	free(busy);
	free(idle);
	free(lat_ns);
	return errors != 0 || nlat < want;
}
