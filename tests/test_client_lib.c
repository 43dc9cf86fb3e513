/*
 * libstageload against a scripted fake daemon on a private socket: socket
 * path resolution, hello, typed calls, notifications buffered while a
 * call waits, lines split across writes, error answers, a daemon that is
 * not running and one that goes away.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "../client/client-internal.h"
#include "../client/stageload.h"

static char tmpdir[256];
static char sockpath[300];

/* The fake daemon has closed its connection. */
static volatile int fake_closed;
/* When set, the client's next send() waits for that, as when the daemon
 * refuses a connection before the client has written anything. */
static volatile int send_after_close;

/*
 * The library is linked into this program, so this definition takes the
 * place of libc's for it (as test_server.c does with getsockopt).
 */
ssize_t
send(int fd, const void *buf, size_t len, int flags)
{
	static ssize_t (*real)(int, const void *, size_t, int);

	if (send_after_close) {
		send_after_close = 0;
		while (!fake_closed)
			usleep(1000);
	}
	if (real == NULL)
		real = (ssize_t(*)(int, const void *, size_t, int))dlsym(
		    RTLD_NEXT, "send");
	return real(fd, buf, len, flags);
}

/* ---- the fake daemon: one connection, a script of steps ---- */

struct step {
	const char *expect; /* substring the next request must hold, or NULL
	                       to send without reading */
	const char *send;   /* lines to send ("%ID%" becomes the request's
	                       id); NULL to close the connection */
};

struct fake {
	int lfd;
	const struct step *steps;
	char failure[256];
	pthread_t thread;
};

static int
read_line(int fd, char *buf, size_t len)
{
	size_t n = 0;
	char ch;

	while (n + 1 < len) {
		ssize_t r = read(fd, &ch, 1);
		if (r <= 0)
			return -1;
		if (ch == '\n')
			break;
		buf[n++] = ch;
	}
	buf[n] = '\0';
	return (int)n;
}

/* The id of a request line, as text. */
static void
request_id(const char *line, char *id, size_t len)
{
	const char *p = strstr(line, "\"id\":");
	size_t n = 0;

	id[0] = '\0';
	if (p == NULL)
		return;
	p += 5;
	while (*p == ' ')
		p++;
	while (p[n] != ',' && p[n] != '}' && p[n] != '\0' && n + 1 < len)
		n++;
	memcpy(id, p, n);
	id[n] = '\0';
}

static void
send_text(int fd, const char *tmpl, const char *id)
{
	char out[8192];
	const char *p = tmpl;
	size_t n = 0;

	while (*p != '\0' && n + 32 < sizeof out) {
		if (strncmp(p, "%ID%", 4) == 0) {
			n +=
			    (size_t)snprintf(out + n, sizeof out - n, "%s", id);
			p += 4;
		} else if (strncmp(p, "%PAUSE%", 7) == 0) {
			/* a silence of 150 ms between what comes before
			 * and after */
			(void)!write(fd, out, n);
			n = 0;
			usleep(150000);
			p += 7;
		} else if (strncmp(p, "%SPLIT%", 7) == 0) {
			/* flush what we have: the client must join the
			 * halves of one line */
			(void)!write(fd, out, n);
			n = 0;
			usleep(20000);
			p += 7;
		} else {
			out[n++] = *p++;
		}
	}
	(void)!write(fd, out, n);
}

static void *
fake_main(void *arg)
{
	struct fake *f = arg;
	char line[8192], id[64] = "";
	const struct step *s;
	int fd = accept(f->lfd, NULL, NULL);

	if (fd < 0) {
		snprintf(f->failure, sizeof f->failure, "accept failed");
		return NULL;
	}
	for (s = f->steps; s->expect != NULL || s->send != NULL; s++) {
		if (s->expect != NULL && strcmp(s->expect, "<stall>") == 0) {
			/* a daemon that stops reading, then goes */
			sleep(2);
			break;
		}
		if (s->expect != NULL && strcmp(s->expect, "<eof>") == 0) {
			while (read_line(fd, line, sizeof line) >= 0)
				;
			break;
		}
		if (s->expect != NULL) {
			if (read_line(fd, line, sizeof line) < 0) {
				snprintf(f->failure, sizeof f->failure,
				         "client closed before sending '%s'",
				         s->expect);
				break;
			}
			if (strstr(line, s->expect) == NULL) {
				snprintf(f->failure, sizeof f->failure,
				         "expected '%s' in '%.160s'", s->expect,
				         line);
				break;
			}
			request_id(line, id, sizeof id);
		}
		if (s->send == NULL)
			break;
		send_text(fd, s->send, id);
	}
	close(fd);
	fake_closed = 1;
	return NULL;
}

static void
fake_start(struct fake *f, const struct step *steps)
{
	struct sockaddr_un sun;

	memset(f, 0, sizeof *f);
	f->steps = steps;
	fake_closed = 0;
	unlink(sockpath);
	f->lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(f->lfd >= 0);
	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	assert_true(strlen(sockpath) < sizeof sun.sun_path);
	memcpy(sun.sun_path, sockpath, strlen(sockpath) + 1);
	assert_int_equal(bind(f->lfd, (struct sockaddr *)&sun, sizeof sun), 0);
	assert_int_equal(listen(f->lfd, 4), 0);
	assert_int_equal(pthread_create(&f->thread, NULL, fake_main, f), 0);
}

static void
fake_finish(struct fake *f)
{
	pthread_join(f->thread, NULL);
	close(f->lfd);
	unlink(sockpath);
	if (f->failure[0] != '\0')
		fail_msg("fake daemon: %s", f->failure);
}

#define HELLO_STEP                                                             \
	{                                                                      \
		"\"method\":\"hello\"", "{\"jsonrpc\":\"2.0\",\"id\":%ID%,"    \
		                        "\"result\":{\"version\":1,"           \
		                        "\"daemon_version\":\"9.9\",\"os\":"   \
		                        "\"linux\",\"interval_ms\":500,"       \
		                        "\"uid\":1000,\"methods\":[]}}\n"      \
	}

/* ---- tests ---- */

static void
test_path_order(void **state)
{
	char buf[512], sys[300], want[600];
	enum socket_kind k;
	unsigned long me = (unsigned long)geteuid();
	FILE *f;

	(void)state;
	/* explicit wins over everything */
	assert_int_equal(client_socket_path_resolve("/x.sock", "/env.sock",
	                                            NULL, "/run/u", NULL, 1000,
	                                            buf, sizeof buf, &k),
	                 0);
	assert_string_equal(buf, "/x.sock");
	assert_int_equal(k, SOCKET_NAMED);
	/* then $STAGELOAD_SOCKET */
	assert_int_equal(client_socket_path_resolve("", "/env.sock", NULL,
	                                            "/run/u", NULL, 1000, buf,
	                                            sizeof buf, &k),
	                 0);
	assert_string_equal(buf, "/env.sock");
	assert_int_equal(k, SOCKET_NAMED);
	/* a system socket that does not exist is skipped */
	snprintf(sys, sizeof sys, "%s/system.sock", tmpdir);
	unlink(sys);
	assert_int_equal(client_socket_path_resolve(NULL, NULL, sys, "/run/u",
	                                            NULL, 1000, buf, sizeof buf,
	                                            &k),
	                 0);
	assert_string_equal(buf, "/run/u/stageload.sock");
	assert_int_equal(k, SOCKET_USER);
	/* and used when it exists */
	f = fopen(sys, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(client_socket_path_resolve(NULL, "", sys, "/run/u",
	                                            NULL, 1000, buf, sizeof buf,
	                                            &k),
	                 0);
	assert_string_equal(buf, sys);
	assert_int_equal(k, SOCKET_SYSTEM);
	unlink(sys);
	/* no XDG_RUNTIME_DIR: under the home, when it is the user's own */
	assert_int_equal(client_socket_path_resolve(NULL, NULL, sys, "", tmpdir,
	                                            me, buf, sizeof buf, &k),
	                 0);
	snprintf(want, sizeof want, "%s/.stageload/stageload.sock", tmpdir);
	assert_string_equal(buf, want);
	assert_int_equal(k, SOCKET_USER);
	/* a home of another user's, or none: the private directory under
	 * /tmp */
	assert_int_equal(client_socket_path_resolve(NULL, NULL, sys, "", tmpdir,
	                                            me + 1, buf, sizeof buf,
	                                            &k),
	                 0);
	snprintf(want, sizeof want, "/tmp/stageload-%lu/stageload.sock",
	         me + 1);
	assert_string_equal(buf, want);
	assert_int_equal(k, SOCKET_TMP);
	assert_int_equal(client_socket_path_resolve(NULL, NULL, sys, "", NULL,
	                                            1000, buf, sizeof buf, &k),
	                 0);
	assert_string_equal(buf, "/tmp/stageload-1000/stageload.sock");
	/* a relative XDG_RUNTIME_DIR is ignored, as the daemon ignores it */
	assert_int_equal(client_socket_path_resolve(NULL, NULL, sys, "run",
	                                            "/nonexistent", 1000, buf,
	                                            sizeof buf, &k),
	                 0);
	assert_string_equal(buf, "/tmp/stageload-1000/stageload.sock");
	assert_int_equal(k, SOCKET_TMP);
	assert_int_equal(client_socket_path_resolve("/x.sock", NULL, NULL, NULL,
	                                            NULL, 0, buf, 4, &k),
	                 -ENAMETOOLONG);
}

static void
test_path_env(void **state)
{
	char buf[512];

	setenv("STAGELOAD_SOCKET", "/from/env.sock", 1);
	assert_int_equal(sl_socket_path(NULL, buf, sizeof buf), 0);
	assert_string_equal(buf, "/from/env.sock");
	assert_int_equal(sl_socket_path("/explicit.sock", buf, sizeof buf), 0);
	assert_string_equal(buf, "/explicit.sock");
	unsetenv("STAGELOAD_SOCKET");
}

static void
test_not_running(void **state)
{
	sl_client *c = sl_client_new();
	int rc;

	assert_non_null(c);
	unlink(sockpath);
	rc = sl_connect(c, sockpath);
	assert_int_equal(rc, -ENOENT);
	assert_true(sl_error_is_connection(rc));
	assert_non_null(strstr(sl_errmsg(c), "daemon not running at"));
	assert_non_null(strstr(sl_errmsg(c), sockpath));
	assert_non_null(strstr(sl_errmsg(c), "stageloadd"));
	assert_int_equal(sl_is_connected(c), 0);
	assert_int_equal(sl_fd(c), -1);
	/* calls on a closed client fail cleanly */
	assert_int_equal(sl_call(c, "info", NULL, NULL), -ENOTCONN);
	sl_client_free(c);
}

/* A listener in a directory anyone may write could be anyone's: refused
 * before connecting, so it never gets a connection, let alone hello. */
static void
test_untrusted_socket(void **state)
{
	char dir[600], path[700];
	struct sockaddr_un sun;
	struct pollfd pfd;
	sl_client *c = sl_client_new();
	int fd, rc;

	(void)state;
	assert_non_null(c);
	snprintf(dir, sizeof dir, "%s/open", tmpdir);
	assert_int_equal(mkdir(dir, 0700), 0);
	assert_int_equal(chmod(dir, 01777), 0);
	snprintf(path, sizeof path, "%s/sl.sock", dir);
	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	assert_true(strlen(path) < sizeof sun.sun_path);
	memcpy(sun.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sun, sizeof sun), 0);
	assert_int_equal(listen(fd, 4), 0);

	rc = sl_connect(c, path);
	assert_int_equal(rc, -EPERM);
	assert_non_null(strstr(sl_errmsg(c), "refusing the socket"));
	assert_non_null(strstr(sl_errmsg(c), "writable by other users"));
	assert_int_equal(sl_is_connected(c), 0);
	pfd.fd = fd;
	pfd.events = POLLIN;
	assert_int_equal(poll(&pfd, 1, 0), 0); /* nobody connected */

	close(fd);
	unlink(path);
	rmdir(dir);
	sl_client_free(c);
}

static void
test_calls_and_notifications(void **state)
{
	static const struct step steps[] = {
	    HELLO_STEP,
	    /* a sample and a stale answer arrive before the real one, which
	     * is split in the middle */
	    {"\"method\":\"info\"",
	     "{\"jsonrpc\":\"2.0\",\"method\":\"sample\",\"params\":{"
	     "\"sampled_at_ms\":1764480000000,\"total_bytes\":"
	     "51539607552,\"available_bytes\":20615843020,\"free_pct\":40,"
	     "\"swap_total_bytes\":2147483648,\"swap_used_bytes\":"
	     "104857600,\"pressure\":\"warn\",\"psi_some_avg10\":null}}\n"
	     "{\"jsonrpc\":\"2.0\",\"id\":999,\"result\":{}}\n"
	     "{\"jsonrpc\":\"2.0\",\"id\":%ID%,\"result\":{\"daemon_version\""
	     ":\"9.9\",\"version\":1,\"interval_ms\":500,%SPLIT%"
	     "\"storage_error\":null,\"sample\":{\"free_pct\":41.5,"
	     "\"swap_used_bytes\":9007199254740992,\"pressure\":\"normal\""
	     "},\"jobs\":{\"queued\":2,\"running\":1},\"future\":[1]}}\r\n"},
	    {"\"method\":\"show\"",
	     "{\"jsonrpc\":\"2.0\",\"id\":%ID%,\"error\":{\"code\":-32003,"
	     "\"message\":\"no job 77\"}}\n"},
	    {"\"method\":\"submit\"",
	     "{\"jsonrpc\":\"2.0\",\"method\":\"queue\",\"params\":{\"id\":"
	     "5,\"position\":2,\"of\":3,\"free_pct\":34,\"wait_free_pct\":"
	     "40,\"waiting_for\":\"free\"}}\n"
	     "{\"jsonrpc\":\"2.0\",\"id\":%ID%,\"result\":{\"id\":5,"
	     "\"position\":2,\"queued\":3}}\n"
	     "{\"jsonrpc\":\"2.0\",\"method\":\"breach\",\"params\":{\"id\":"
	     "5,\"swap_growth_bytes\":9663676416,\"swap_budget_bytes\":"
	     "8589934592,\"requeued\":true}}\n"},
	    {"\"method\":\"wait\"",
	     "{\"jsonrpc\":\"2.0\",\"id\":%ID%,\"result\":{\"id\":5,"
	     "\"user\":\"ana\",\"state\":\"killed\",\"end_reason\":"
	     "\"swap_budget\",\"signal\":15,\"exit_code\":null,\"argv\":["
	     "\"python\",\"gen.py\"],\"end_detail\":\"over budget\","
	     "\"footprint_peak_bytes\":34896609280}}\n"},
	    {NULL, NULL},
	};
	struct fake f;
	struct sl_info in;
	struct sl_notification n;
	struct sl_job j;
	struct sl_submitted sub;
	sl_job_spec *spec = sl_job_spec_new();
	const char *argv[] = {"python", "gen.py", NULL};
	const char *env[] = {"A=1", NULL};
	sl_client *c = sl_client_new();

	fake_start(&f, steps);
	assert_int_equal(sl_connect(c, sockpath), 0);
	assert_string_equal(sl_path(c), sockpath);
	assert_string_equal(sl_hello_info(c)->daemon_version, "9.9");
	assert_int_equal(sl_hello_info(c)->interval_ms, 500);
	assert_int_equal(sl_hello_info(c)->uid, 1000);

	assert_int_equal(sl_info(c, &in), 0);
	assert_int_equal(in.has_sample, 1);
	assert_true(in.sample.free_pct > 41.4 && in.sample.free_pct < 41.6);
	assert_int_equal(in.sample.swap_used_bytes, 9007199254740992ULL);
	assert_string_equal(in.sample.pressure, "normal");
	assert_int_equal(in.jobs_queued, 2);
	assert_int_equal(in.jobs_running, 1);
	assert_string_equal(in.storage_error, "");

	/* the sample that came first waits in the buffer */
	assert_int_equal(sl_pending(c), 1);
	assert_int_equal(sl_next_notification(c, 0, &n), 1);
	assert_int_equal(n.kind, SL_N_SAMPLE);
	assert_string_equal(n.method, "sample");
	assert_int_equal(n.sample.total_bytes, 51539607552ULL);
	assert_int_equal(n.sample.has_psi, 0);
	assert_string_equal(n.sample.pressure, "warn");
	assert_non_null(n.params_json);
	sl_notification_clear(&n);
	assert_int_equal(sl_next_notification(c, 0, &n), 0);

	/* an error answer: its code and the daemon's words */
	assert_int_equal(sl_show(c, 77, 0, &j), SL_E_NOJOB);
	assert_int_equal(sl_errcode(c), SL_E_NOJOB);
	assert_string_equal(sl_errmsg(c), "no job 77");
	assert_false(sl_error_is_connection(SL_E_NOJOB));
	assert_true(sl_is_connected(c));

	assert_non_null(spec);
	assert_int_equal(sl_job_spec_set_strv(spec, "argv", argv), 0);
	assert_int_equal(sl_job_spec_set_strv(spec, "env", env), 0);
	assert_int_equal(sl_job_spec_set_str(spec, "cwd", "/"), 0);
	assert_int_equal(sl_submit(c, spec, &sub), 0);
	sl_job_spec_free(spec);
	assert_int_equal(sub.id, 5);
	assert_int_equal(sub.position, 2);
	assert_int_equal(sub.queued, 3);

	assert_int_equal(sl_wait(c, 5, &j), 0);
	assert_string_equal(j.state, "killed");
	assert_string_equal(j.end_reason, "swap_budget");
	assert_int_equal(j.signal, 15);
	assert_int_equal(j.has_exit_code, 0);
	assert_int_equal(sl_job_ended(&j), 1);
	assert_non_null(j.argv);
	assert_string_equal(j.argv[1], "gen.py");
	assert_null(j.argv[2]);
	assert_null(j.cwd);
	assert_string_equal(j.end_detail, "over budget");
	assert_int_equal(j.footprint_peak_bytes, 34896609280ULL);
	/* the same through the accessors, by the Job's names */
	{
		int64_t v;
		char *t;

		assert_string_equal(sl_job_get_str(&j, "state"), "killed");
		assert_int_equal(sl_job_get_int(&j, "signal", &v), 0);
		assert_int_equal(v, 15);
		assert_int_equal(sl_job_get_int(&j, "footprint_peak_bytes", &v),
		                 0);
		assert_int_equal(v, 34896609280LL);
		assert_string_equal(sl_job_get_strv(&j, "argv", 1), "gen.py");
		assert_null(sl_job_get_strv(&j, "argv", 2));
		/* null, or not sent: -ENOENT; not a Job member: -EINVAL */
		assert_int_equal(sl_job_get_int(&j, "exit_code", &v), -ENOENT);
		assert_int_equal(sl_job_get_int(&j, "held", &v), -ENOENT);
		assert_null(sl_job_get_str(&j, "cwd"));
		assert_int_equal(sl_job_get_int(&j, "umask", &v), -EINVAL);
		assert_int_equal(sl_job_get_int(&j, "no_such", &v), -EINVAL);
		assert_int_equal(sl_job_get_int(&j, "state", &v), -ENOENT);
		t = sl_job_get_json(&j, "argv");
		assert_string_equal(t, "[\"python\",\"gen.py\"]");
		free(t);
	}
	sl_job_clear(&j);

	/* queue (before submit's answer) and breach (after), in order */
	assert_int_equal(sl_next_notification(c, 1000, &n), 1);
	assert_int_equal(n.kind, SL_N_QUEUE);
	assert_int_equal(n.queue.position, 2);
	assert_int_equal(n.queue.of, 3);
	assert_string_equal(n.queue.waiting_for, "free");
	sl_notification_clear(&n);
	assert_int_equal(sl_next_notification(c, 1000, &n), 1);
	assert_int_equal(n.kind, SL_N_BREACH);
	assert_int_equal(n.breach.swap_budget_bytes, 8ULL << 30);
	assert_int_equal(n.breach.requeued, 1);
	sl_notification_clear(&n);

	/* the fake daemon closes: the next wait reports a dropped link */
	fake_finish(&f);
	assert_true(sl_next_notification(c, 2000, &n) < 0);
	assert_true(sl_error_is_connection(sl_errcode(c)));
	assert_int_equal(sl_is_connected(c), 0);
	sl_client_free(c);
}

static void
test_version_refused(void **state)
{
	static const struct step steps[] = {
	    {"\"version\":2",
	     "{\"jsonrpc\":\"2.0\",\"id\":%ID%,\"error\":{\"code\":-32001,"
	     "\"message\":\"version 2 not supported\",\"data\":{"
	     "\"versions\":[3]}}}\n"},
	    /* An older daemon is asked for version 1 before giving up. */
	    {"\"version\":1",
	     "{\"jsonrpc\":\"2.0\",\"id\":%ID%,\"error\":{\"code\":-32001,"
	     "\"message\":\"version 1 not supported\",\"data\":{"
	     "\"versions\":[3]}}}\n"},
	    {NULL, NULL},
	};
	struct fake f;
	sl_client *c = sl_client_new();

	fake_start(&f, steps);
	assert_int_equal(sl_connect(c, sockpath), SL_E_VERSION);
	assert_non_null(strstr(sl_errmsg(c), "protocol version 2 nor 1"));
	assert_int_equal(sl_is_connected(c), 0);
	fake_finish(&f);
	sl_client_free(c);
}

/*
 * A daemon over a connection limit answers with an error whose id is null,
 * then closes, before or after the client's hello has arrived. Either way
 * that error is what sl_connect reports, not a lost connection.
 */
static void
test_refused_with_null_id(void **state)
{
#define REFUSAL                                                                \
	"{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32004,"         \
	"\"message\":\"too many connections for uid 1000 (limit 3)\"}}\n"
	static const struct step after_hello[] = {
	    {"\"method\":\"hello\"", REFUSAL},
	    {NULL, NULL},
	};
	static const struct step before_hello[] = {
	    {NULL, REFUSAL},
	    {NULL, NULL},
	};
	const struct step *scripts[] = {after_hello, before_hello};
	struct fake f;
	sl_client *c;
	size_t i;

	for (i = 0; i < 2; i++) {
		c = sl_client_new();
		fake_start(&f, scripts[i]);
		send_after_close = scripts[i] == before_hello;
		assert_int_equal(sl_connect(c, sockpath), SL_E_LIMIT);
		assert_string_equal(sl_errmsg(c),
		                    "too many connections for uid 1000 "
		                    "(limit 3)");
		assert_int_equal(sl_is_connected(c), 0);
		assert_int_equal(send_after_close, 0);
		fake_finish(&f);
		sl_client_free(c);
	}
#undef REFUSAL
}

static int
collect_log(void *arg, int64_t offset, const char *data, size_t len)
{
	strncat(arg, data, len);
	return 0;
}

static void
test_logs_and_timeout(void **state)
{
	static const struct step steps[] = {
	    HELLO_STEP,
	    {"\"follow\":true",
	     "{\"jsonrpc\":\"2.0\",\"method\":\"log\",\"params\":{\"id\":3,"
	     "\"offset\":0,\"data\":\"hello \"}}\n"
	     "{\"jsonrpc\":\"2.0\",\"method\":\"log\",\"params\":{\"id\":4,"
	     "\"offset\":0,\"data\":\"other job\"}}\n"
	     "{\"jsonrpc\":\"2.0\",\"method\":\"log\",\"params\":{\"id\":3,"
	     "\"offset\":6,\"data\":\"world\\n\"}}\n"
	     "{\"jsonrpc\":\"2.0\",\"id\":%ID%,\"result\":{\"id\":3,"
	     "\"offset\":12,\"eof\":true}}\n"},
	    /* never answered: the call times out */
	    {"\"method\":\"status\"", ""},
	    {"<eof>", NULL},
	    {NULL, NULL},
	};
	struct fake f;
	char text[128] = "";
	int64_t end = 0;
	struct sl_job *jobs;
	size_t njobs;
	sl_client *c = sl_client_new();

	fake_start(&f, steps);
	assert_int_equal(sl_connect(c, sockpath), 0);
	assert_int_equal(sl_logs(c, 3, 0, 1, collect_log, text, &end), 0);
	assert_string_equal(text, "hello world\n");
	assert_int_equal(end, 12);
	/* another job's log is not ours: kept as a notification */
	assert_int_equal(sl_pending(c), 1);

	sl_set_timeout(c, 200);
	assert_int_equal(sl_status(c, 0, 0, &jobs, &njobs), -ETIMEDOUT);
	assert_non_null(strstr(sl_errmsg(c), "did not answer"));
	sl_close(c);
	fake_finish(&f);
	sl_client_free(c);
}

#define LOG_LINE(off, text)                                                    \
	"{\"jsonrpc\":\"2.0\",\"method\":\"log\",\"params\":{\"id\":3,"        \
	"\"offset\":" #off ",\"data\":\"" text "\"}}\n"

static int calls;

static int
refuse_log(void *arg, int64_t offset, const char *data, size_t len)
{
	(void)arg;
	(void)offset;
	(void)data;
	(void)len;
	calls++;
	return 7;
}

/* The client is busy inside the callback: another call is refused. */
static int
nested_call(void *arg, int64_t offset, const char *data, size_t len)
{
	sl_client *c = arg;
	struct sl_info info;

	(void)offset;
	(void)data;
	(void)len;
	calls++;
	assert_int_equal(sl_info(c, &info), -EBUSY);
	assert_int_equal(sl_process_input(c), -EBUSY);
	return 0;
}

static void
test_logs_callback(void **state)
{
	static const struct step steps[] = {
	    HELLO_STEP,
	    /* three chunks in one write; the callback refuses the first */
	    {"\"id\":3", LOG_LINE(0, "a") LOG_LINE(1, "b") LOG_LINE(2, "c")},
	    {"<eof>", NULL},
	    {NULL, NULL},
	};
	static const struct step nested[] = {
	    HELLO_STEP,
	    {"\"id\":3",
	     LOG_LINE(0, "a") LOG_LINE(
	         1, "b") "{\"jsonrpc\":\"2.0\",\"id\":%ID%,\"result\":{"
	                 "\"id\":3,\"offset\":2,\"eof\":true}}\n"},
	    {"<eof>", NULL},
	    {NULL, NULL},
	};
	/* chunks 150 ms apart, 600 ms in all, under a 400 ms timeout: the
	 * timeout is for silence */
	static const struct step slow[] = {
	    HELLO_STEP,
	    {"\"id\":3",
	     LOG_LINE(0, "a") "%PAUSE%" LOG_LINE(1, "b") "%PAUSE%" LOG_LINE(
	         2, "c") "%PAUSE%" LOG_LINE(3, "d") "%PAUSE%"
	                                            "{\"jsonrpc\":\"2.0\","
	                                            "\"id\":%ID%,\"result\":{"
	                                            "\"id\":3,\"offset\":4,"
	                                            "\"eof\":true}}\n"},
	    {"<eof>", NULL},
	    {NULL, NULL},
	};
	struct fake f;
	char text[64] = "";
	sl_client *c = sl_client_new();

	(void)state;
	fake_start(&f, steps);
	assert_int_equal(sl_connect(c, sockpath), 0);
	calls = 0;
	assert_int_equal(sl_logs(c, 3, 0, 0, refuse_log, NULL, NULL), 7);
	assert_int_equal(calls, 1);
	assert_int_equal(sl_is_connected(c), 0);
	fake_finish(&f);

	fake_start(&f, nested);
	assert_int_equal(sl_connect(c, sockpath), 0);
	calls = 0;
	assert_int_equal(sl_logs(c, 3, 0, 0, nested_call, c, NULL), 0);
	assert_int_equal(calls, 2);
	sl_close(c);
	fake_finish(&f);

	fake_start(&f, slow);
	assert_int_equal(sl_connect(c, sockpath), 0);
	sl_set_timeout(c, 400);
	assert_int_equal(sl_logs(c, 3, 0, 0, collect_log, text, NULL), 0);
	assert_string_equal(text, "abcd");
	sl_close(c);
	fake_finish(&f);
	sl_client_free(c);
}

/* A daemon that stops reading: a request bigger than the socket's buffer
 * costs the call's timeout, not a send() blocked for ever. */
static void
test_send_timeout(void **state)
{
	static const struct step steps[] = {
	    HELLO_STEP,
	    {"<stall>", NULL},
	    {NULL, NULL},
	};
	size_t n = 2u << 20;
	char *params = malloc(n + 16);
	struct timespec t0, t1;
	char *out = NULL;
	struct fake f;
	sl_client *c = sl_client_new();
	double ms;

	(void)state;
	assert_non_null(params);
	memcpy(params, "{\"x\":\"", 6);
	memset(params + 6, 'a', n);
	memcpy(params + 6 + n, "\"}", 3);
	fake_start(&f, steps);
	assert_int_equal(sl_connect(c, sockpath), 0);
	sl_set_timeout(c, 300);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(sl_call(c, "info", params, &out), -ETIMEDOUT);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
	     (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	assert_true(ms < 1500);
	assert_int_equal(sl_is_connected(c), 0);
	assert_non_null(strstr(sl_errmsg(c), "did not take"));
	fake_finish(&f);
	sl_client_free(c);
	free(params);
}

/* Mistakes of the caller are its own errors, never connection ones, and
 * nothing is sent for them. */
static void
test_caller_errors(void **state)
{
	static const struct step steps[] = {
	    HELLO_STEP,
	    {"\"method\":\"show\"",
	     "{\"jsonrpc\":\"2.0\",\"id\":%ID%,\"error\":{\"code\":-32003,"
	     "\"message\":\"no job 99\"}}\n"},
	    {"<eof>", NULL},
	    {NULL, NULL},
	};
	const char *bad_arg[] = {"echo", "caf\xe9", NULL};
	const char *ok_arg[] = {"true", NULL};
	const char *bad_env[] = {"GOOD=1", "BAD=\xff", NULL};
	sl_job_spec *spec = sl_job_spec_new();
	struct sl_notification n;
	struct sl_submitted sub;
	struct sl_job j;
	char *out = NULL, dir[400];
	struct fake f;
	sl_client *c = sl_client_new();

	(void)state;
	fake_start(&f, steps);
	assert_int_equal(sl_connect(c, sockpath), 0);

	/* bytes the protocol cannot carry: refused, not replaced */
	assert_non_null(spec);
	assert_int_equal(sl_job_spec_set_strv(spec, "argv", bad_arg), 0);
	assert_int_equal(sl_job_spec_set_str(spec, "cwd", "/"), 0);
	/* any valid strings */
	assert_int_equal(sl_job_spec_set_strv(spec, "env", ok_arg), 0);
	assert_int_equal(sl_submit(c, spec, &sub), -EINVAL);
	assert_non_null(strstr(sl_errmsg(c), "argument 1 is not valid UTF-8"));
	assert_int_equal(sl_job_spec_set_strv(spec, "argv", ok_arg), 0);
	assert_int_equal(sl_job_spec_set_strv(spec, "env", bad_env), 0);
	assert_int_equal(sl_submit(c, spec, &sub), -EINVAL);
	assert_non_null(strstr(sl_errmsg(c), "variable BAD is not"));
	/* a working directory that is gone */
	snprintf(dir, sizeof dir, "%s/gone", tmpdir);
	assert_int_equal(mkdir(dir, 0700), 0);
	assert_int_equal(chdir(dir), 0);
	assert_int_equal(rmdir(dir), 0);
	assert_int_equal(sl_job_spec_set_strv(spec, "env", NULL), 0);
	assert_int_equal(sl_job_spec_set_str(spec, "cwd", NULL), 0);
	assert_int_equal(sl_submit(c, spec, &sub), -EINVAL);
	sl_job_spec_free(spec);
	assert_int_equal(sl_error_is_connection(-EINVAL), 0);
	assert_int_equal(chdir("/"), 0);
	/* no method */
	assert_int_equal(sl_call(c, NULL, NULL, &out), -EINVAL);
	assert_null(out);
	/* still connected: the next call is the first the daemon sees */
	assert_int_equal(sl_show(c, 99, 0, &j), -32003);
	/* after sl_close, no stale daemon refusal: not connected */
	sl_close(c);
	assert_int_equal(sl_next_notification(c, 0, &n), -ENOTCONN);
	fake_finish(&f);
	sl_client_free(c);
}

/* Lists that come as objects are not walked as arrays (cJSON iterates an
 * object's members too): no entries, no write past the allocation. */
static void
test_error_kinds(void **state)
{
	(void)state;
	assert_int_equal(sl_error_is_connection(-ECONNREFUSED), 1);
	assert_int_equal(sl_error_is_connection(-ENOENT), 1);
	assert_int_equal(sl_error_is_connection(-EPIPE), 1);
	assert_int_equal(sl_error_is_connection(-ETIMEDOUT), 1);
	assert_int_equal(sl_error_is_connection(-EINVAL), 0);
	assert_int_equal(sl_error_is_connection(-ENOMEM), 0);
	assert_int_equal(sl_error_is_connection(SL_E_VERSION), 0);
	assert_int_equal(sl_error_is_connection(0), 0);
}

/* With protocol version 2, sl_status reads every page: the second is asked
 * with the first's next_cursor, and the jobs carry command, not argv. */
static void
test_status_pages(void **state)
{
	static const struct step steps[] = {
	    {"\"method\":\"hello\"",
	     "{\"jsonrpc\":\"2.0\",\"id\":%ID%,\"result\":{\"version\":2,"
	     "\"daemon_version\":\"9.9\",\"os\":\"linux\",\"interval_ms\":"
	     "500,\"uid\":1000,\"methods\":[]}}\n"},
	    {"\"limit\":1000}",
	     "{\"jsonrpc\":\"2.0\",\"id\":%ID%,\"result\":{\"jobs\":[{"
	     "\"id\":1,\"state\":\"running\",\"command\":\"sleep 9\"},{"
	     "\"id\":2,\"state\":\"queued\",\"command\":null}],"
	     "\"next_cursor\":\"l2.1\"}}\n"},
	    {"\"cursor\":\"l2.1\"",
	     "{\"jsonrpc\":\"2.0\",\"id\":%ID%,\"result\":{\"jobs\":[{"
	     "\"id\":3,\"state\":\"queued\",\"command\":\"x\"}],"
	     "\"next_cursor\":null}}\n"},
	    {"<eof>", NULL},
	    {NULL, NULL},
	};
	struct fake f;
	struct sl_job *jobs;
	size_t n;
	sl_client *c = sl_client_new();

	(void)state;
	fake_start(&f, steps);
	assert_int_equal(sl_connect(c, sockpath), 0);
	assert_int_equal(sl_hello_info(c)->version, 2);
	assert_int_equal(sl_status(c, 0, 0, &jobs, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(jobs[0].id, 1);
	assert_int_equal(jobs[2].id, 3);
	assert_string_equal(jobs[0].command, "sleep 9");
	assert_null(jobs[1].command);
	assert_null(jobs[0].argv);
	sl_jobs_free(jobs, n);
	sl_client_free(c);
	fake_finish(&f);
}

static void
test_malformed_lists(void **state)
{
	static const struct step steps[] = {
	    HELLO_STEP,
	    {"\"method\":\"status\"",
	     "{\"jsonrpc\":\"2.0\",\"id\":%ID%,\"result\":{\"jobs\":{"
	     "\"a\":{},\"b\":{},\"c\":{},\"d\":{}}}}\n"},
	    {"\"method\":\"events\"",
	     "{\"jsonrpc\":\"2.0\",\"id\":%ID%,\"result\":{\"events\":{"
	     "\"a\":{},\"b\":{},\"c\":{}}}}\n"},
	    {"\"method\":\"history\"",
	     "{\"jsonrpc\":\"2.0\",\"id\":%ID%,\"result\":{\"tier\":"
	     "\"raw\",\"buckets\":{\"a\":{},\"b\":{}}}}\n"},
	    {"<eof>", NULL},
	    {NULL, NULL},
	};
	struct fake f;
	struct sl_job *jobs;
	struct sl_event *events;
	struct sl_history *h;
	size_t n;
	sl_client *c = sl_client_new();

	(void)state;
	fake_start(&f, steps);
	assert_int_equal(sl_connect(c, sockpath), 0);
	assert_int_equal(sl_status(c, 0, 0, &jobs, &n), 0);
	assert_int_equal(n, 0);
	sl_jobs_free(jobs, n);
	assert_int_equal(sl_events(c, 0, 0, 0, &events, &n), 0);
	assert_int_equal(n, 0);
	sl_events_free(events, n);
	assert_int_equal(sl_history(c, 1, 2, 1000, 0, &h), 0);
	assert_int_equal(h->nbuckets, 0);
	sl_history_free(h);
	sl_close(c);
	fake_finish(&f);
	sl_client_free(c);
}

static int
setup(void **state)
{
	snprintf(tmpdir, sizeof tmpdir, "/tmp/sl-client-test-XXXXXX");
	if (mkdtemp(tmpdir) == NULL)
		return -1;
	snprintf(sockpath, sizeof sockpath, "%s/fake.sock", tmpdir);
	return 0;
}

static int
teardown(void **state)
{
	char p[400];

	unlink(sockpath);
	snprintf(p, sizeof p, "%s/system.sock", tmpdir);
	unlink(p);
	rmdir(tmpdir);
	return 0;
}

/* A spec takes each submit parameter by its protocol name, with its type
 * and range (PROTOCOL.md, submit), and nothing else: the names are
 * literal here, so a row of proto/job-fields.h that lost its submit cell
 * fails. */
static void
test_spec_setters(void **state)
{
	static const char *const ints[] = {"priority",
	                                   "wait_free_bytes",
	                                   "swap_budget_bytes",
	                                   "expect_bytes",
	                                   "retry_on_breach",
	                                   "umask",
	                                   NULL};
	static const char *const bools[] = {"attached", "exclusive", "held",
	                                    "after_any", NULL};
	static const char *const strs[] = {"name", "cwd", "group", "on_end",
	                                   NULL};
	const char *argv[] = {"a", "b", NULL};
	int64_t ids[] = {3, 4}, bad_ids[] = {0}, v;
	sl_job_spec *s = sl_job_spec_new();
	double d;
	size_t i;

	(void)state;
	assert_non_null(s);
	for (i = 0; ints[i] != NULL; i++) {
		assert_int_equal(sl_job_spec_set_int(s, ints[i], 1), 0);
		assert_int_equal(sl_job_spec_get_int(s, ints[i], &v), 0);
		assert_int_equal(v, 1);
		/* another type of the same name: refused */
		assert_int_equal(sl_job_spec_set_str(s, ints[i], "1"), -EINVAL);
	}
	for (i = 0; bools[i] != NULL; i++)
		assert_int_equal(sl_job_spec_set_bool(s, bools[i], 1), 0);
	for (i = 0; strs[i] != NULL; i++) {
		assert_int_equal(sl_job_spec_set_str(s, strs[i], "x"), 0);
		assert_string_equal(sl_job_spec_get_str(s, strs[i]), "x");
		assert_int_equal(sl_job_spec_set_str(s, strs[i], NULL), 0);
		assert_null(sl_job_spec_get_str(s, strs[i]));
	}
	assert_int_equal(sl_job_spec_set_num(s, "wait_free_pct", 12.5), 0);
	assert_int_equal(sl_job_spec_get_num(s, "wait_free_pct", &d), 0);
	assert_true(d == 12.5);
	assert_int_equal(sl_job_spec_set_strv(s, "argv", argv), 0);
	assert_string_equal(sl_job_spec_get_strv(s, "argv", 1), "b");
	assert_null(sl_job_spec_get_strv(s, "argv", 2));
	assert_int_equal(sl_job_spec_set_strv(s, "env", argv), 0);
	assert_int_equal(sl_job_spec_set_ids(s, "after", ids, 2), 0);
	/* ranges */
	assert_int_equal(sl_job_spec_set_int(s, "priority", 1001), -ERANGE);
	assert_int_equal(sl_job_spec_set_int(s, "priority", -1001), -ERANGE);
	assert_int_equal(sl_job_spec_set_int(s, "retry_on_breach", 101),
	                 -ERANGE);
	assert_int_equal(sl_job_spec_set_int(s, "umask", 01000), -ERANGE);
	assert_int_equal(sl_job_spec_set_int(s, "swap_budget_bytes", -1),
	                 -ERANGE);
	assert_int_equal(sl_job_spec_set_num(s, "wait_free_pct", 100.5),
	                 -ERANGE);
	assert_int_equal(sl_job_spec_set_ids(s, "after", bad_ids, 1), -ERANGE);
	/* a refused value leaves the old one */
	assert_int_equal(sl_job_spec_get_int(s, "priority", &v), 0);
	assert_int_equal(v, 1);
	/* names submit does not take */
	assert_int_equal(sl_job_spec_set_int(s, "attempt", 1), -EINVAL);
	assert_int_equal(sl_job_spec_set_int(s, "id", 1), -EINVAL);
	assert_int_equal(sl_job_spec_set_str(s, "end_detail", "x"), -EINVAL);
	assert_int_equal(sl_job_spec_set_int(s, "no_such", 1), -EINVAL);
	assert_int_equal(sl_job_spec_set_int(s, NULL, 1), -EINVAL);
	assert_int_equal(sl_job_spec_get_int(s, "expect_source", &v), -ENOENT);
	/* update takes only what it changes: refused before anything is
	 * sent (this client is not even connected) */
	{
		sl_client *c = sl_client_new();

		assert_int_equal(sl_update(c, 1, s, NULL), -EINVAL);
		assert_non_null(strstr(sl_errmsg(c), "update does not change"));
		sl_client_free(c);
	}
	sl_job_spec_free(s);
}

/* Every member struct sl_job keeps, decoded from a Job by the table of
 * copies (client-decode.c); absent ones get their defaults. */
static void
test_decode_job(void **state)
{
	static const char job[] =
	    "{\"id\":7,\"user\":\"ana\",\"uid\":501,\"name\":\"gen\","
	    "\"state\":\"exited\",\"attached\":true,\"priority\":-5,"
	    "\"wait_free_pct\":37.5,\"wait_free_bytes\":1048576,"
	    "\"swap_budget_bytes\":8589934592,\"expect_bytes\":1024,"
	    "\"expect_source\":\"learned\",\"expect_runs\":3,"
	    "\"name_given\":true,\"exclusive\":true,\"retry_on_breach\":2,"
	    "\"attempt\":2,\"group\":\"g1\",\"position\":4,"
	    "\"waiting_for\":\"free\",\"submitted_at_ms\":1000,"
	    "\"admitted_at_ms\":2000,\"started_at_ms\":3000,"
	    "\"ended_at_ms\":4000,\"pid\":4242,\"footprint_bytes\":11,"
	    "\"footprint_peak_bytes\":12,\"swap_growth_bytes\":13,"
	    "\"swap_growth_peak_bytes\":14,\"job_swap_bytes\":15,"
	    "\"exit_code\":3,\"signal\":9,\"end_reason\":\"exit\","
	    "\"command\":\"python gen.py\",\"argv\":[\"python\",\"gen.py\"],"
	    "\"cwd\":\"/tmp\",\"end_detail\":\"done\",\"env\":[\"A=1\"]}";
	cJSON *o = cJSON_Parse(job), *empty = cJSON_Parse("{}");
	struct sl_job j;
	int64_t v;

	(void)state;
	assert_non_null(o);
	client_decode_job(o, &j);
	assert_int_equal(j.id, 7);
	assert_string_equal(j.user, "ana");
	assert_int_equal(j.uid, 501);
	assert_string_equal(j.name, "gen");
	assert_string_equal(j.state, "exited");
	assert_int_equal(j.attached, 1);
	assert_int_equal(j.priority, -5);
	assert_true(j.wait_free_pct == 37.5);
	assert_int_equal(j.wait_free_bytes, 1048576);
	assert_int_equal(j.swap_budget_bytes, 8589934592ULL);
	assert_int_equal(j.expect_bytes, 1024);
	assert_string_equal(j.expect_source, "learned");
	assert_int_equal(j.expect_runs, 3);
	assert_int_equal(j.name_given, 1);
	assert_int_equal(j.exclusive, 1);
	assert_int_equal(j.retry_on_breach, 2);
	assert_int_equal(j.attempt, 2);
	assert_string_equal(j.group, "g1");
	assert_int_equal(j.position, 4);
	assert_string_equal(j.waiting_for, "free");
	assert_int_equal(j.submitted_at_ms, 1000);
	assert_int_equal(j.admitted_at_ms, 2000);
	assert_int_equal(j.started_at_ms, 3000);
	assert_int_equal(j.ended_at_ms, 4000);
	assert_int_equal(j.pid, 4242);
	assert_int_equal(j.footprint_bytes, 11);
	assert_int_equal(j.footprint_peak_bytes, 12);
	assert_int_equal(j.swap_growth_bytes, 13);
	assert_int_equal(j.swap_growth_peak_bytes, 14);
	assert_int_equal(j.job_swap_bytes, 15);
	assert_int_equal(j.has_exit_code, 1);
	assert_int_equal(j.exit_code, 3);
	assert_int_equal(j.signal, 9);
	assert_string_equal(j.end_reason, "exit");
	assert_string_equal(j.command, "python gen.py");
	assert_string_equal(j.argv[1], "gen.py");
	assert_null(j.argv[2]);
	assert_string_equal(j.cwd, "/tmp");
	assert_string_equal(j.end_detail, "done");
	assert_string_equal(j.env[0], "A=1");
	assert_int_equal(sl_job_get_int(&j, "pid", &v), 0);
	assert_int_equal(v, 4242);
	sl_job_clear(&j);

	client_decode_job(empty, &j);
	assert_int_equal(j.uid, -1);
	assert_int_equal(j.attempt, 1);
	assert_int_equal(j.has_exit_code, 0);
	assert_string_equal(j.state, "");
	assert_null(j.argv);
	assert_null(j.cwd);
	sl_job_clear(&j);
	cJSON_Delete(o);
	cJSON_Delete(empty);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_path_order),
	    cmocka_unit_test(test_path_env),
	    cmocka_unit_test(test_not_running),
	    cmocka_unit_test(test_untrusted_socket),
	    cmocka_unit_test(test_calls_and_notifications),
	    cmocka_unit_test(test_version_refused),
	    cmocka_unit_test(test_status_pages),
	    cmocka_unit_test(test_refused_with_null_id),
	    cmocka_unit_test(test_logs_and_timeout),
	    cmocka_unit_test(test_logs_callback),
	    cmocka_unit_test(test_caller_errors),
	    cmocka_unit_test(test_spec_setters),
	    cmocka_unit_test(test_send_timeout),
	    cmocka_unit_test(test_malformed_lists),
	    cmocka_unit_test(test_decode_job),
	    cmocka_unit_test(test_error_kinds),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
