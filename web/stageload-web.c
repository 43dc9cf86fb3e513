/*
 * stageload-web: the dashboard, /metrics and the JSON API over HTTP on
 * loopback (docs/dashboards.md). This file: options, the listening
 * address (loopback only unless --allow-remote), and the HTTP front: the
 * Host check against DNS rebinding (421), methods (GET and HEAD), paths
 * (404) and the headers every answer carries.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "version.h"
#include "web.h"

#define WEB_MAX_HOSTS 12
/* Seconds a connection may sit with nothing read or written. On loopback
 * every local user is the same address, so the per-address limit cannot
 * keep one user from holding the others' connections open: a short idle
 * time frees them. A browser's keep-alive just connects again. */
#define WEB_IDLE_TIMEOUT_S 3

struct web {
	struct web_daemon wd;
	char hosts[WEB_MAX_HOSTS][300]; /* Host values taken */
	int nhosts;
};

static void
usage(FILE *f)
{
	fprintf(f,
	        "usage: stageload-web [--listen ADDR:PORT] [--allow-remote] "
	        "[--host NAME[:PORT]]... [--socket PATH]\n"
	        "                     [--db PATH]\n"
	        "\n"
	        "Serves the stageload dashboard (/), Prometheus metrics "
	        "(/metrics) and\n"
	        "JSON (/api/status, /api/history, /api/events), read-only.\n"
	        "\n"
	        "  --listen ADDR:PORT  where to listen (default "
	        "127.0.0.1:%d; [::1]:PORT for IPv6;\n"
	        "                      port 0 picks a free one)\n"
	        "  --allow-remote      allow an address that is not loopback "
	        "(no TLS: see\n"
	        "                      docs/dashboards.md)\n"
	        "  --host NAME         also take requests whose Host is NAME "
	        "(a reverse\n"
	        "                      proxy's name); others get 421\n"
	        "  --socket PATH       the daemon's socket\n"
	        "  --db PATH           with the daemon down, draw its history "
	        "from PATH, a\n"
	        "                      sanitised copy of its database "
	        "(docs/storage.md,\n"
	        "                      \"Privacy\"), never the database "
	        "itself\n",
	        WEB_DEFAULT_PORT);
}

/* ADDR:PORT or [ADDR6]:PORT into ss; *loopback says if it is. */
static int
parse_listen(const char *s, struct sockaddr_storage *ss, socklen_t *sslen,
             int *loopback, char *host, size_t hostlen, char *cause,
             size_t causelen)
{
	char addr[128];
	const char *colon;
	char *end;
	long port;

	memset(ss, 0, sizeof *ss);
	if (s[0] == '[') {
		const char *rb = strchr(s, ']');
		if (rb == NULL || rb[1] != ':' ||
		    (size_t)(rb - s) >= sizeof addr)
			goto bad;
		memcpy(addr, s + 1, (size_t)(rb - s - 1));
		addr[rb - s - 1] = '\0';
		colon = rb + 1;
	} else {
		colon = strrchr(s, ':');
		if (colon == NULL || (size_t)(colon - s) >= sizeof addr)
			goto bad;
		memcpy(addr, s, (size_t)(colon - s));
		addr[colon - s] = '\0';
	}
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (colon[1] == '\0' || *end != '\0' || errno != 0 || port < 0 ||
	    port > 65535)
		goto bad;
	if (strcmp(addr, "localhost") == 0)
		snprintf(addr, sizeof addr, "127.0.0.1");
	if (s[0] != '[') {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;
		if (inet_pton(AF_INET, addr, &sin->sin_addr) != 1)
			goto bad;
		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)port);
		*sslen = sizeof *sin;
		*loopback = (ntohl(sin->sin_addr.s_addr) >> 24) == 127;
		snprintf(host, hostlen, "%s", addr);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
		if (inet_pton(AF_INET6, addr, &sin6->sin6_addr) != 1)
			goto bad;
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)port);
		*sslen = sizeof *sin6;
		*loopback = IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr) ||
		            (IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr) &&
		             sin6->sin6_addr.s6_addr[12] == 127);
		snprintf(host, hostlen, "[%s]", addr);
	}
	return 0;
bad:
	snprintf(cause, causelen,
	         "bad --listen '%s': give ADDR:PORT with a numeric address "
	         "(127.0.0.1:%d, [::1]:%d)",
	         s, WEB_DEFAULT_PORT, WEB_DEFAULT_PORT);
	return -EINVAL;
}

static void
add_host(struct web *w, const char *fmt, const char *a, unsigned port)
{
	if (w->nhosts < WEB_MAX_HOSTS)
		snprintf(w->hosts[w->nhosts++], sizeof w->hosts[0], fmt, a,
		         port);
}

static int
host_ok(const struct web *w, const char *host)
{
	int i;

	if (host == NULL)
		return 0;
	for (i = 0; i < w->nhosts; i++)
		if (strcasecmp(host, w->hosts[i]) == 0)
			return 1;
	return 0;
}

static enum MHD_Result
host_count_cb(void *cls, enum MHD_ValueKind kind, const char *key,
              const char *value)
{
	(void)kind;
	(void)value;
	if (strcasecmp(key, MHD_HTTP_HEADER_HOST) == 0)
		(*(int *)cls)++;
	return MHD_YES;
}

/* How many Host headers the request has: a second one, which a proxy in
 * front may read instead of the first, is refused rather than guessed. */
static int
host_count(struct MHD_Connection *conn)
{
	int n = 0;

	MHD_get_connection_values(conn, MHD_HEADER_KIND, host_count_cb, &n);
	return n;
}

static const char *
conn_arg(void *ctx, const char *name)
{
	return MHD_lookup_connection_value((struct MHD_Connection *)ctx,
	                                   MHD_GET_ARGUMENT_KIND, name);
}

struct unknown_arg {
	const char *const *known;
	char *buf;
	size_t len;
	int found;
};

static enum MHD_Result
unknown_cb(void *cls, enum MHD_ValueKind kind, const char *key,
           const char *value)
{
	struct unknown_arg *u = cls;
	const char *const *k;

	(void)kind;
	(void)value;
	for (k = u->known; *k != NULL; k++)
		if (strcmp(key, *k) == 0)
			return MHD_YES;
	snprintf(u->buf, u->len, "%s", key);
	u->found = 1;
	return MHD_NO;
}

static int
conn_unknown(void *ctx, const char *const *known, char *buf, size_t len)
{
	struct unknown_arg u = {known, buf, len, 0};

	MHD_get_connection_values((struct MHD_Connection *)ctx,
	                          MHD_GET_ARGUMENT_KIND, unknown_cb, &u);
	return u.found;
}

static enum MHD_Result
answer(struct MHD_Connection *conn, int status, const char *type,
       struct svgp_buf *b)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	if (b->oom) {
		svgp_buf_free(b);
		status = 500;
		type = "text/plain; charset=utf-8";
	}
	if (b->p != NULL) {
		r = MHD_create_response_from_buffer(b->n, b->p,
		                                    MHD_RESPMEM_MUST_FREE);
		if (r == NULL)
			free(b->p);
	} else
		r = MHD_create_response_from_buffer(0, (void *)"",
		                                    MHD_RESPMEM_PERSISTENT);
	b->p = NULL;
	if (r == NULL)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", type);
	MHD_add_response_header(r, "Cache-Control", "no-store");
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(r, "X-Frame-Options", "DENY");
	MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
	MHD_add_response_header(
	    r, "Content-Security-Policy",
	    "default-src 'none'; style-src 'unsafe-inline'; "
	    "frame-ancestors 'none'; base-uri 'none'; "
	    "form-action 'none'");
	if (status == 405)
		MHD_add_response_header(r, "Allow", "GET, HEAD");
	ret = MHD_queue_response(conn, (unsigned)status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result
text_answer(struct MHD_Connection *conn, int status, const char *text)
{
	struct svgp_buf b = {0};

	svgp_puts(&b, text);
	return answer(conn, status, "text/plain; charset=utf-8", &b);
}

static enum MHD_Result
web_handle(void *cls, struct MHD_Connection *conn, const char *url,
           const char *method, const char *version, const char *upload,
           size_t *upload_size, void **req_cls)
{
	struct web *w = cls;
	struct web_request rq;
	struct svgp_buf b = {0};
	const char *type = "text/plain; charset=utf-8";
	int status;

	(void)version;
	(void)upload;
	(void)req_cls;
	/* Before anything else: a page elsewhere that got this address for
	 * its own name (DNS rebinding) sends its own name as Host. */
	if (host_count(conn) > 1)
		return text_answer(conn, 400,
		                   "400 bad request: more than one Host "
		                   "header\n");
	if (!host_ok(w, MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
	                                            MHD_HTTP_HEADER_HOST)))
		return text_answer(conn, 421,
		                   "421 misdirected request: this server "
		                   "answers only to its own names (see "
		                   "stageload-web --host)\n");
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		return text_answer(conn, 405, "405 method not allowed\n");
	if (*upload_size != 0) {
		*upload_size = 0;
		return MHD_YES;
	}
	rq.path = url;
	rq.arg = conn_arg;
	rq.unknown = conn_unknown;
	rq.ctx = conn;
	if (strcmp(url, "/") == 0)
		status = web_page(&w->wd, &rq, &b, &type);
	else if (strncmp(url, "/job/", 5) == 0)
		status = web_job_page(&w->wd, &rq, &b, &type);
	else if (strcmp(url, "/metrics") == 0)
		status = web_metrics(&w->wd, &rq, &b, &type);
	else if (strcmp(url, "/api/status") == 0 ||
	         strcmp(url, "/api/history") == 0 ||
	         strcmp(url, "/api/events") == 0)
		status = web_api(&w->wd, &rq, &b, &type);
	else {
		svgp_buf_free(&b);
		return text_answer(conn, 404, "404 not found\n");
	}
	return answer(conn, status, type, &b);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"listen", required_argument, NULL, 'l'},
	    {"allow-remote", no_argument, NULL, 'r'},
	    {"host", required_argument, NULL, 'H'},
	    {"socket", required_argument, NULL, 's'},
	    {"db", required_argument, NULL, 'd'},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {NULL, 0, NULL, 0},
	};
	static struct web w;
	char listen_default[32], cause[1200], host[160];
	const char *listen = listen_default, *extra[WEB_MAX_HOSTS];
	struct sockaddr_storage ss;
	socklen_t sslen = 0;
	struct MHD_Daemon *d;
	const union MHD_DaemonInfo *di;
	unsigned port;
	const char *db = NULL;
	int ch, remote = 0, loopback = 0, nextra = 0, i, sig;
	sigset_t set;

	snprintf(listen_default, sizeof listen_default, "127.0.0.1:%d",
	         WEB_DEFAULT_PORT);
	while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'l':
			listen = optarg;
			break;
		case 'r':
			remote = 1;
			break;
		case 'H':
			if (nextra == WEB_MAX_HOSTS - 5 ||
			    strlen(optarg) > 255) {
				fprintf(stderr,
				        "stageload-web: too many or too "
				        "long --host\n");
				return 2;
			}
			extra[nextra++] = optarg;
			break;
		case 's':
			w.wd.socket = optarg;
			break;
		case 'd':
			db = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("stageload-web %s\n", STAGELOAD_VERSION);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	if (parse_listen(listen, &ss, &sslen, &loopback, host, sizeof host,
	                 cause, sizeof cause) != 0) {
		fprintf(stderr, "stageload-web: %s\n", cause);
		return 2;
	}
	if (!loopback && !remote) {
		fprintf(stderr,
		        "stageload-web: refusing to listen on %s, which is not "
		        "a loopback address: the dashboard has no TLS and no "
		        "login. Give --allow-remote to do it anyway, or reach "
		        "it through an SSH tunnel (docs/dashboards.md)\n",
		        listen);
		return 2;
	}
	/* A copy this program cannot open read-only, or one that still
	 * holds what only owners and root may see, is refused now rather
	 * than on the day the daemon is down. */
	if (db != NULL && web_offline_check(db, cause, sizeof cause) != 0) {
		fprintf(stderr, "stageload-web: --db %s\n", cause);
		return 2;
	}
	web_daemon_init(&w.wd, w.wd.socket);
	w.wd.db = db;

	/* Signals are taken by sigwait below; the HTTP thread inherits the
	 * mask and never sees them. */
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);

	d = MHD_start_daemon(
	    MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG |
	        (ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
	    0, NULL, NULL, web_handle, &w, MHD_OPTION_SOCK_ADDR, &ss,
	    MHD_OPTION_CONNECTION_LIMIT, (unsigned)64,
	    MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)32,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)WEB_IDLE_TIMEOUT_S,
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)32768, MHD_OPTION_END);
	if (d == NULL) {
		fprintf(stderr, "stageload-web: cannot listen on %s: %s\n",
		        listen, strerror(errno ? errno : EADDRINUSE));
		return 1;
	}
	di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	port = di != NULL ? di->port : 0;
	add_host(&w, "127.0.0.1:%s%u", "", port);
	add_host(&w, "[::1]:%s%u", "", port);
	add_host(&w, "localhost:%s%u", "", port);
	if (strcmp(host, "127.0.0.1") != 0 && strcmp(host, "[::1]") != 0 &&
	    strcmp(host, "0.0.0.0") != 0 && strcmp(host, "[::]") != 0)
		add_host(&w, "%s:%u", host, port);
	for (i = 0; i < nextra; i++) {
		add_host(&w, "%s", extra[i], 0);
		if (strchr(extra[i], ':') == NULL || extra[i][0] == '[')
			add_host(&w, "%s:%u", extra[i], port);
	}
	printf("stageload-web: listening on http://%s:%u/\n", host, port);
	fflush(stdout);

	while (sigwait(&set, &sig) == 0 && sig == SIGHUP)
		;
	MHD_stop_daemon(d);
	web_daemon_close(&w.wd);
	return 0;
}
