/* proctree on real processes: a job that forks a grandchild into its own
 * session, a process that joins the job's group from outside, a deep
 * chain, a root whose parent dies, and a pid with the wrong start time. */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "clock.h"
#include "platform.h"
#include "proctree.h"
#include "testclock.h"

#define MIB (1024ULL * 1024)
#define TOUCH_BYTES (64 * MIB)

/* Every process a test starts, killed in teardown even when it fails. */
static pid_t started[32];
static size_t nstarted;

static void
track(pid_t pid)
{
	if (pid > 0 && nstarted < sizeof(started) / sizeof(started[0]))
		started[nstarted++] = pid;
}

static int
setup(void **state)
{
	char cause[128];

	nstarted = 0;
	return platform_init(NULL, cause, sizeof(cause)) == 0 ? 0 : -1;
}

static int
teardown(void **state)
{
	size_t i;

	for (i = 0; i < nstarted; i++)
		kill(started[i], SIGKILL);
	for (i = 0; i < nstarted; i++)
		waitpid(started[i], NULL, WNOHANG);
	/* Our own children: reap them for good. */
	while (waitpid(-1, NULL, 0) > 0)
		;
	platform_shutdown();
	return 0;
}

/* Reads one pid from fd within 10 s. */
static pid_t
read_pid(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	pid_t pid = -1;

	assert_int_equal(poll(&p, 1, 10000), 1);
	assert_int_equal(read(fd, &pid, sizeof(pid)), (ssize_t)sizeof(pid));
	track(pid);
	return pid;
}

static void
write_pid(int fd, pid_t pid)
{
	if (write(fd, &pid, sizeof(pid)) != (ssize_t)sizeof(pid))
		_exit(1);
}

/* Samples until the tree has want processes, for up to 10 s. */
static void
wait_nprocs(struct proctree *t, size_t want)
{
	int64_t deadline = clock_mono_ms() + 10000;
	size_t n = (size_t)-1;

	while (clock_mono_ms() < deadline) {
		proctree_sample(t, 0, NULL, NULL, &n);
		if (n == want)
			return;
		usleep(10000);
	}
	assert_int_equal(n, want);
}

static int
contains(const pid_t *set, int n, pid_t pid)
{
	int i;

	for (i = 0; i < n; i++)
		if (set[i] == pid)
			return 1;
	return 0;
}

/* The job's own group leader, as a job runner would start it. */
static pid_t
start_leader(void (*body)(void *), void *arg)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		setpgid(0, 0);
		body(arg);
		_exit(0);
	}
	setpgid(pid, pid); /* both sides, so nothing races it */
	track(pid);
	return pid;
}

struct pipes {
	int go[2];
	int ready[2];
};

static void
leader_with_setsid_grandchild(void *arg)
{
	struct pipes *p = arg;
	char c;
	pid_t g;

	if (read(p->go[0], &c, 1) != 1)
		_exit(1);
	g = fork();
	if (g == 0) {
		volatile char *mem;
		size_t i;

		setsid();
		if ((mem = malloc(TOUCH_BYTES)) == NULL)
			_exit(1);
		/* Through a volatile pointer: an optimiser may drop a memset
		 * of memory that is never read, and nothing would be touched.
		 */
		for (i = 0; i < TOUCH_BYTES; i += 4096)
			mem[i] = 0x5a;
		write_pid(p->ready[1], getpid());
		for (;;)
			pause();
	}
	for (;;)
		pause();
}

static void
test_setsid_grandchild(void **state)
{
	struct pipes p;
	struct proctree *t;
	uint64_t st, fp0, fp, sw;
	size_t n;
	pid_t leader, g, pids[8], pg;
	int np;

	assert_int_equal(pipe(p.go), 0);
	assert_int_equal(pipe(p.ready), 0);
	leader = start_leader(leader_with_setsid_grandchild, &p);
	assert_int_equal(platform_proc_start_time(leader, &st), 0);
	assert_non_null(t = proctree_new(leader, leader, st));
	assert_int_equal(proctree_root(t), leader);

	assert_int_equal(proctree_sample(t, 0, &fp0, &sw, &n), 0);
	assert_int_equal(n, 1);
	assert_true(fp0 < TOUCH_BYTES / 2);

	assert_int_equal(write(p.go[1], "x", 1), 1);
	g = read_pid(p.ready[0]);

	/* Within the scan interval the new process is not looked for... */
	assert_int_equal(proctree_sample(t, 500, &fp, &sw, &n), 0);
	assert_int_equal(n, 1);
	/* ... once it has passed, it is found, outside the group. */
	assert_int_equal(proctree_sample(t, 1000, &fp, &sw, &n), 0);
	assert_int_equal(n, 2);
	assert_true(fp >= fp0 + TOUCH_BYTES * 9 / 10);

	np = proctree_pids(t, pids, 8, &pg);
	assert_int_equal(np, 2);
	assert_true(contains(pids, np, leader) && contains(pids, np, g));
	assert_int_equal(pg, leader);

	/* The leader dies: the grandchild, now an orphan in its own
	 * session, is still the job's. */
	kill(leader, SIGKILL);
	assert_int_equal(waitpid(leader, NULL, 0), leader);
	assert_int_equal(proctree_sample(t, 1001, &fp, &sw, &n), 0);
	assert_int_equal(n, 1);
	assert_true(fp >= TOUCH_BYTES * 9 / 10);
	np = proctree_pids(t, pids, 8, &pg);
	assert_int_equal(np, 1);
	assert_int_equal(pids[0], g);
	assert_int_equal(pg, 0); /* nobody is left in the group */

	kill(g, SIGKILL);
	wait_nprocs(t, 0); /* gone once reaped or a zombie */
	assert_int_equal(proctree_sample(t, 5000, &fp, &sw, &n), 0);
	assert_true(fp == 0 && sw == 0 && n == 0);
	assert_int_equal(proctree_pids(t, pids, 8, &pg), 0);
	proctree_free(t);
}

static void
pause_forever(void *arg)
{
	for (;;)
		pause();
}

/* A known pid whose start time does not match is someone else. */
static void
test_recycled_pid(void **state)
{
	struct proctree *t;
	uint64_t st, fp = 1;
	size_t n = 1;
	pid_t pids[4], pg = 1, x;

	x = start_leader(pause_forever, NULL);
	assert_int_equal(platform_proc_start_time(x, &st), 0);
	assert_non_null(t = proctree_new(x, x, st + 1));
	assert_int_equal(proctree_sample(t, 0, &fp, NULL, &n), 0);
	assert_int_equal(n, 0);
	assert_true(fp == 0);
	assert_int_equal(proctree_pids(t, pids, 4, &pg), 0);
	assert_int_equal(pg, 0); /* the group is not ours either */
	proctree_free(t);

	/* The same process with its true start time is counted. */
	assert_non_null(t = proctree_new(x, x, st));
	assert_int_equal(proctree_sample(t, 0, &fp, NULL, &n), 0);
	assert_int_equal(n, 1);
	assert_true(fp > 0);
	proctree_free(t);
}

/* A process that joins the job's group from outside belongs to it. */
static void
test_group_joiner(void **state)
{
	struct proctree *t;
	uint64_t st;
	size_t n;
	pid_t leader, joiner, pids[4], pg;

	leader = start_leader(pause_forever, NULL);
	joiner = fork();
	assert_true(joiner >= 0);
	if (joiner == 0) {
		setpgid(0, leader);
		pause_forever(NULL);
	}
	setpgid(joiner, leader);
	track(joiner);
	assert_int_equal(platform_proc_start_time(leader, &st), 0);
	assert_non_null(t = proctree_new(leader, leader, st));
	assert_int_equal(proctree_sample(t, 0, NULL, NULL, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(proctree_pids(t, pids, 4, &pg), 2);
	assert_true(contains(pids, 2, joiner));
	assert_int_equal(pg, leader);
	proctree_free(t);
}

static void
chain(void *arg)
{
	int *fds = arg;
	int depth;

	/* Each level forks the next and moves to a group of its own, so
	 * only parentage ties the chain together. */
	for (depth = 0; depth < 4; depth++) {
		pid_t pid = fork();

		if (pid < 0)
			_exit(1);
		if (pid > 0)
			pause_forever(NULL);
		setpgid(0, 0);
	}
	write_pid(fds[1], getpid());
	pause_forever(NULL);
}

/* A tree several generations deep is found in one scan, and signalling
 * what proctree_pids returns ends it all. */
static void
test_deep_chain_and_kill(void **state)
{
	struct proctree *t;
	uint64_t st;
	size_t n;
	pid_t leader, last, pids[16], pg;
	int fds[2], np, i;

	assert_int_equal(pipe(fds), 0);
	leader = start_leader(chain, fds);
	last = read_pid(fds[0]);
	assert_int_equal(platform_proc_start_time(leader, &st), 0);
	assert_non_null(t = proctree_new(leader, leader, st));
	assert_int_equal(proctree_sample(t, 0, NULL, NULL, &n), 0);
	assert_int_equal(n, 5);
	np = proctree_pids(t, pids, 16, &pg);
	assert_int_equal(np, 5);
	assert_true(contains(pids, np, last));
	assert_int_equal(pg, leader);

	kill(-pg, SIGKILL);
	for (i = 0; i < np; i++)
		kill(pids[i], SIGKILL);
	assert_int_equal(waitpid(leader, NULL, 0), leader);
	wait_nprocs(t, 0);
	proctree_free(t);
}

static void
test_bad_args(void **state)
{
	assert_null(proctree_new(0, 0, 0));
	assert_null(proctree_new(-5, 0, 0));
	assert_int_equal(proctree_sample(NULL, 0, NULL, NULL, NULL), -EINVAL);
	proctree_free(NULL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_setsid_grandchild, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_recycled_pid, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_group_joiner, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_deep_chain_and_kill, setup,
	                                    teardown),
	    cmocka_unit_test(test_bad_args),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
