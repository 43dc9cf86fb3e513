/* The control socket's contract with the modules that keep per-client
 * state (server.h, the gone hook): which clients are announced gone. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <uv.h>

#include "clock.h"
#include "control.h"
#include "daemon.h"
#include "server.h"
#include "testclock.h"

/* When set, the daemon cannot read the credentials of the next peer. */
static int fail_peercred;
/* When not -1, the uid every peer has (the test runs as one user). */
static uid_t fake_uid = (uid_t)-1;

/*
 * The daemon code is linked into this program, so this definition takes
 * the place of libc's for it (as the dispatch fuzzer does with kill()).
 * Only SO_PEERCRED-style reads are failed, and only when asked.
 */
int
getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
	static int (*real)(int, int, int, void *, socklen_t *);

	if (fail_peercred && level == SOL_SOCKET) {
		fail_peercred = 0;
		errno = EIO;
		return -1;
	}
	if (real == NULL)
		real = (int (*)(int, int, int, void *, socklen_t *))dlsym(
		    RTLD_NEXT, "getsockopt");
	if (real(fd, level, name, val, len) != 0)
		return -1;
	if (fake_uid != (uid_t)-1 && level == SOL_SOCKET &&
	    name == SO_PEERCRED && *len == sizeof(struct ucred))
		((struct ucred *)val)->uid = fake_uid;
	return 0;
}

#define MAX_GONE 16
static uint64_t gone_ids[MAX_GONE];
static int ngone;

static void
record_gone(struct daemon *d, uint64_t client_id)
{
	(void)d;
	if (ngone < MAX_GONE)
		gone_ids[ngone] = client_id;
	ngone++;
}

static const struct server_hooks hooks = {.dispatch = control_dispatch,
                                          .gone = record_gone};

struct fixture {
	char dir[256];
	uv_loop_t loop;
	struct daemon d;
};

static int
setup(void **state)
{
	struct fixture *f = calloc(1, sizeof *f);
	const char *tmp = getenv("TMPDIR");
	char cause[256] = "";

	assert_non_null(f);
	snprintf(f->dir, sizeof f->dir, "%s/sl-server-XXXXXX",
	         tmp != NULL ? tmp : "/tmp");
	assert_non_null(mkdtemp(f->dir));
	assert_int_equal(uv_loop_init(&f->loop), 0);
	config_defaults(&f->d.cfg, 0);
	snprintf(f->d.cfg.socket_path, sizeof f->d.cfg.socket_path,
	         "%s/sl.sock", f->dir);
	f->d.loop = &f->loop;
	if (server_claim(&f->d, cause, sizeof cause) != 0 ||
	    server_start(&f->d, &hooks, cause, sizeof cause) != 0)
		fail_msg("server_start: %s", cause);
	ngone = 0;
	fail_peercred = 0;
	fake_uid = (uid_t)-1;
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;
	int i;

	f->d.stopping = 1;
	server_stop(&f->d);
	server_release(&f->d);
	for (i = 0; i < 10; i++)
		uv_run(&f->loop, UV_RUN_NOWAIT);
	assert_int_equal(uv_loop_close(&f->loop), 0);
	{
		char lock[1100];

		/* The lock file stays by design (docs/daemon.md). */
		snprintf(lock, sizeof lock, "%s.lock", f->d.cfg.socket_path);
		unlink(lock);
	}
	rmdir(f->dir);
	free(f);
	return 0;
}

/* Turn the loop until cond() holds; fail after 5 s. */
static void
run_until(struct fixture *f, int (*cond)(struct fixture *), const char *what)
{
	int64_t deadline = clock_mono_ms() + 5000;

	while (!cond(f)) {
		if (clock_mono_ms() > deadline)
			fail_msg("timed out waiting for %s", what);
		uv_run(&f->loop, UV_RUN_NOWAIT);
		usleep(1000);
	}
}

static int
connect_client(struct fixture *f)
{
	struct sockaddr_un sun;
	int fd;

	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	assert_true(strlen(f->d.cfg.socket_path) < sizeof sun.sun_path);
	memcpy(sun.sun_path, f->d.cfg.socket_path,
	       strlen(f->d.cfg.socket_path) + 1);
	assert_true((fd = socket(AF_UNIX, SOCK_STREAM, 0)) >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sun, sizeof sun), 0);
	return fd;
}

/* The daemon closed our end: a read returns EOF. */
static int
peer_closed(int fd)
{
	char c;
	ssize_t n = recv(fd, &c, 1, MSG_DONTWAIT);

	return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

static int connected_fd = -1;

static int
cond_closed(struct fixture *f)
{
	(void)f;
	return peer_closed(connected_fd);
}

static int
cond_one_client(struct fixture *f)
{
	return server_client_count(&f->d) == 1;
}

static int
cond_no_client(struct fixture *f)
{
	return server_client_count(&f->d) == 0 && ngone > 0;
}

/*
 * A connection whose peer cannot be identified is refused before it gets
 * an id. It was never a client, so nobody may hear that it has gone: to
 * the modules, client id 0 means "no client" (every detached job has it),
 * and announcing it would make them drop what belongs to nobody's client,
 * e.g. cancel every queued detached job as "client_gone".
 */
static void
test_unidentified_peer_is_not_announced(void **state)
{
	struct fixture *f = *state;
	int fd;

	fail_peercred = 1;
	connected_fd = connect_client(f);
	run_until(f, cond_closed, "the daemon to refuse the connection");
	/* Let the close callbacks of the refused connection run. */
	for (int i = 0; i < 10; i++)
		uv_run(&f->loop, UV_RUN_NOWAIT);
	close(connected_fd);
	assert_int_equal(fail_peercred, 0); /* the failure was reached */
	assert_int_equal(ngone, 0);

	/* A real client is announced once, with its own non-zero id. */
	fd = connect_client(f);
	run_until(f, cond_one_client, "the daemon to accept a client");
	close(fd);
	run_until(f, cond_no_client, "the client to be announced gone");
	assert_int_equal(ngone, 1);
	assert_true(gone_ids[0] != 0);
}

/* Send all of buf, turning the loop while the socket is full, then until
 * the server has read it all. */
static void
send_pumped(struct fixture *f, int fd, const char *buf, size_t len)
{
	int64_t deadline = clock_mono_ms() + 5000;
	ssize_t n;
	int queued;

	while (len > 0) {
		n = send(fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n > 0) {
			buf += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			fail_msg("send: %s", strerror(errno));
		if (clock_mono_ms() > deadline)
			fail_msg("timed out sending to the server");
		uv_run(&f->loop, UV_RUN_NOWAIT);
		usleep(1000);
	}
	/* What the peer has not read yet is still queued on our side. */
	do {
		if (clock_mono_ms() > deadline)
			fail_msg("timed out waiting for the server to read");
		uv_run(&f->loop, UV_RUN_NOWAIT);
		assert_int_equal(ioctl(fd, SIOCOUTQ, &queued), 0);
	} while (queued > 0);
	uv_run(&f->loop, UV_RUN_NOWAIT);
}

/* One line from the server into buf (newline dropped), or NULL at EOF. */
static char *
read_line(struct fixture *f, int fd, char *buf, size_t size)
{
	int64_t deadline = clock_mono_ms() + 5000;
	size_t len = 0;
	ssize_t n;

	for (;;) {
		assert_true(len < size - 1);
		n = recv(fd, buf + len, 1, MSG_DONTWAIT);
		if (n == 1 && buf[len] == '\n') {
			buf[len] = '\0';
			return buf;
		}
		if (n == 1) {
			len++;
			continue;
		}
		if (n == 0 ||
		    (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
			return NULL;
		if (clock_mono_ms() > deadline)
			fail_msg(
			    "timed out waiting for a line from the server");
		uv_run(&f->loop, UV_RUN_NOWAIT);
		usleep(1000);
	}
}

static size_t nclients_want;

static int
cond_nclients(struct fixture *f)
{
	return server_client_count(&f->d) == nclients_want;
}

/* A client of uid that has said hello. */
static int
greeted_client(struct fixture *f, uid_t uid)
{
	static const char hello[] = "{\"jsonrpc\":\"2.0\",\"id\":1,"
	                            "\"method\":\"hello\",\"params\":"
	                            "{\"version\":1}}\n";
	char line[4096];
	int fd;

	fake_uid = uid;
	nclients_want = server_client_count(&f->d) + 1;
	fd = connect_client(f);
	run_until(f, cond_nclients, "the server to accept a client");
	send_pumped(f, fd, hello, sizeof hello - 1);
	assert_non_null(read_line(f, fd, line, sizeof line));
	assert_non_null(strstr(line, "\"result\""));
	return fd;
}

/*
 * Partial lines are bounded per uid, not only per connection: the read
 * buffers of one uid's connections count together against
 * max_input_bytes_per_uid. The connection that would pass it gets -32004
 * with id null naming the limit and is closed; the uid's other connections
 * go on, root is exempt, and what a connection frees counts again.
 */
static void
test_input_bounded_per_uid(void **state)
{
	static const char hello_c[] = "{\"jsonrpc\":\"2.0\",\"id\":1,"
	                              "\"method\":\"hello\",\"params\":"
	                              "{\"version\":1}}\n";
	struct fixture *f = *state;
	char *part, line[4096];
	size_t part_len = 100000;
	int a, b, c, r, e;

	f->d.cfg.max_input_bytes_per_uid = 256 * 1024;
	assert_non_null(part = malloc(part_len));
	memset(part, 'x', part_len);
	a = greeted_client(f, 1000);
	b = greeted_client(f, 1000);
	/* Each buffer doubles to 128 KiB for its 100000 bytes: together the
	 * uid's whole budget. */
	send_pumped(f, a, part, part_len);
	send_pumped(f, b, part, part_len);
	assert_int_equal(server_client_count(&f->d), 2);

	/* A third connection of the uid cannot buffer even its hello. */
	fake_uid = 1000;
	nclients_want = 3;
	c = connect_client(f);
	run_until(f, cond_nclients, "the server to accept a client");
	send_pumped(f, c, hello_c, strlen(hello_c));
	assert_non_null(read_line(f, c, line, sizeof line));
	assert_non_null(strstr(line, "\"id\":null"));
	assert_non_null(strstr(line, "\"code\":-32004"));
	assert_non_null(strstr(line, "max_input_per_uid"));
	assert_null(read_line(f, c, line, sizeof line)); /* closed */
	close(c);

	/* Root is exempt: it buffers as much while uid 1000 is at its cap. */
	r = greeted_client(f, 0);
	send_pumped(f, r, part, part_len);
	send_pumped(f, r, "\n", 1);
	assert_non_null(read_line(f, r, line, sizeof line));
	assert_non_null(strstr(line, "-32700")); /* not JSON, answered */
	close(r);

	/* a and b were not touched: a ends its line, is answered, and its
	 * emptied buffer goes back to the uid's budget. */
	send_pumped(f, a, "\n", 1);
	assert_non_null(read_line(f, a, line, sizeof line));
	assert_non_null(strstr(line, "-32700"));
	e = greeted_client(f, 1000);
	send_pumped(f, e, part, part_len / 2);
	send_pumped(f, e, "\n", 1);
	assert_non_null(read_line(f, e, line, sizeof line));
	assert_non_null(strstr(line, "-32700"));
	/* So does a closed connection's. */
	close(b);
	close(e);
	nclients_want = 1;
	run_until(f, cond_nclients, "b and e to be closed");
	send_pumped(f, a, part, part_len);
	send_pumped(f, a, part, part_len);
	send_pumped(f, a, "\n", 1);
	assert_non_null(read_line(f, a, line, sizeof line));
	assert_non_null(strstr(line, "-32700"));
	close(a);
	free(part);
}

/* Start a per-user server on dir/sub/sl.sock; returns server_start's
 * result, with the server stopped again if it started. */
static int
start_in(const char *dir, const char *sub, char *cause, size_t causelen)
{
	struct daemon d;
	uv_loop_t loop;
	int rc, i;

	memset(&d, 0, sizeof d);
	assert_int_equal(uv_loop_init(&loop), 0);
	config_defaults(&d.cfg, 0);
	snprintf(d.cfg.socket_path, sizeof d.cfg.socket_path, "%s/%s/sl.sock",
	         dir, sub);
	d.loop = &loop;
	rc = server_claim(&d, cause, causelen);
	if (rc == 0)
		rc = server_start(&d, &hooks, cause, causelen);
	if (rc == 0) {
		d.stopping = 1;
		server_stop(&d);
		server_release(&d);
	}
	for (i = 0; i < 10; i++)
		uv_run(&loop, UV_RUN_NOWAIT);
	assert_int_equal(uv_loop_close(&loop), 0);
	return rc;
}

/*
 * A per-user socket directory that is a symbolic link is refused, even
 * when its target would pass: whoever made the link (another user's
 * /tmp/stageload-UID) can repoint it after the check and move the socket
 * into a directory of theirs.
 */
static void
test_symlinked_socket_dir_refused(void **state)
{
	const char *tmp = getenv("TMPDIR");
	char dir[256], real[300], link[300], sock[320], cause[512];

	(void)state;
	snprintf(dir, sizeof dir, "%s/sl-server-XXXXXX",
	         tmp != NULL ? tmp : "/tmp");
	assert_non_null(mkdtemp(dir));
	snprintf(real, sizeof real, "%s/real", dir);
	snprintf(link, sizeof link, "%s/link", dir);
	snprintf(sock, sizeof sock, "%s/sl.sock", real);
	assert_int_equal(mkdir(real, 0700), 0);
	assert_int_equal(symlink("real", link), 0);
	/* Run as root, the link would be root's: make it another user's. */
	if (geteuid() == 0)
		assert_int_equal(lchown(link, 65534, 65534), 0);

	cause[0] = '\0';
	assert_int_equal(start_in(dir, "link", cause, sizeof cause), -ELOOP);
	assert_non_null(strstr(cause, link));
	assert_non_null(strstr(cause, "symbolic link"));
	assert_int_equal(access(sock, F_OK), -1); /* nothing was created */

	/* The directory itself is fine. */
	assert_int_equal(start_in(dir, "real", cause, sizeof cause), 0);

	/* Only root can repoint a link root made (macOS's /tmp is one): it
	 * is followed, and its target checked like a directory. */
	if (geteuid() == 0) {
		assert_int_equal(lchown(link, 0, 0), 0);
		assert_int_equal(start_in(dir, "link", cause, sizeof cause), 0);
		assert_int_equal(chmod(real, 0777), 0);
		assert_int_equal(start_in(dir, "link", cause, sizeof cause),
		                 -EPERM);
		assert_non_null(strstr(cause, "writable by other users"));
	}

	unlink(link);
	snprintf(sock, sizeof sock, "%s/sl.sock.lock", real);
	unlink(sock);
	rmdir(real);
	rmdir(dir);
}

/*
 * The socket's directory follows the rule of every directory the daemon
 * keeps files in (proto/trust.c): a sticky one that others may write, as
 * /tmp itself, is refused, since they could make the lock file and the
 * socket's name theirs before the daemon does; the lock file must be the
 * daemon's own.
 */
static void
test_socket_dir_and_lock_trusted(void **state)
{
	const char *tmp = getenv("TMPDIR");
	char dir[256], sub[300], lock[320], cause[1024];
	int fd;

	(void)state;
	snprintf(dir, sizeof dir, "%s/sl-server-XXXXXX",
	         tmp != NULL ? tmp : "/tmp");
	assert_non_null(mkdtemp(dir));
	snprintf(sub, sizeof sub, "%s/shared", dir);
	snprintf(lock, sizeof lock, "%s/sl.sock.lock", sub);
	assert_int_equal(mkdir(sub, 0700), 0);
	assert_int_equal(chmod(sub, 01777), 0);
	cause[0] = '\0';
	assert_int_equal(start_in(dir, "shared", cause, sizeof cause), -EPERM);
	assert_non_null(strstr(cause, "refusing the socket directory"));
	assert_non_null(strstr(cause, sub));
	assert_non_null(strstr(cause, "sticky or not"));
	assert_int_equal(access(lock, F_OK), -1); /* nothing was created */

	/* Private again: it starts. */
	assert_int_equal(chmod(sub, 0700), 0);
	assert_int_equal(start_in(dir, "shared", cause, sizeof cause), 0);
	assert_int_equal(unlink(lock), 0);

	/* A lock file another user made (while the directory was open) is
	 * refused and left as it is: its owner could hold the lock. */
	if (geteuid() == 0) {
		fd = open(lock, O_WRONLY | O_CREAT | O_EXCL, 0644);
		assert_true(fd >= 0);
		close(fd);
		assert_int_equal(chown(lock, 65534, 65534), 0);
		assert_int_equal(start_in(dir, "shared", cause, sizeof cause),
		                 -EPERM);
		assert_non_null(
		    strstr(cause, "refusing the socket's lock file"));
		assert_non_null(strstr(cause, "owned by uid 65534"));
		{
			struct stat st;

			assert_int_equal(stat(lock, &st), 0);
			assert_int_equal(st.st_uid, 65534);
			assert_int_equal(st.st_mode & 07777, 0644);
		}
		assert_int_equal(unlink(lock), 0);
	}
	rmdir(sub);
	rmdir(dir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(
	        test_unidentified_peer_is_not_announced, setup, teardown),
	    cmocka_unit_test(test_symlinked_socket_dir_refused),
	    cmocka_unit_test(test_socket_dir_and_lock_trusted),
	    cmocka_unit_test_setup_teardown(test_input_bounded_per_uid, setup,
	                                    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
