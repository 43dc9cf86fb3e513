/* The Linux backend: system samples through a fixture proc root (files
 * rewritten in place, replaced by rename, removed), the real /proc, and
 * the process, credential and path functions. */
#define _GNU_SOURCE /* setgroups */
#include <errno.h>
#include <grp.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "clock.h"
#include "platform.h"
#include "procfs.h"
#include "testclock.h"

static char root[256];
static char cause[256];

static void
put_file(const char *rel, const char *text, int by_rename)
{
	char path[512], tmp[600];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	snprintf(tmp, sizeof(tmp), "%s.new", path);
	f = fopen(by_rename ? tmp : path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
	if (by_rename)
		assert_int_equal(rename(tmp, path), 0);
}

static void
remove_root(void)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/meminfo", root);
	unlink(path);
	snprintf(path, sizeof(path), "%s/pressure/memory", root);
	unlink(path);
	snprintf(path, sizeof(path), "%s/pressure", root);
	rmdir(path);
	rmdir(root);
}

static int
setup_root(void **state)
{
	char path[512];

	snprintf(root, sizeof(root), "/tmp/sl-platform-XXXXXX");
	if (mkdtemp(root) == NULL)
		return -1;
	snprintf(path, sizeof(path), "%s/pressure", root);
	if (mkdir(path, 0700) != 0)
		return -1;
	return 0;
}

static int
teardown_root(void **state)
{
	platform_shutdown();
	remove_root();
	return 0;
}

/* Children a test forks, killed and reaped by kill_children whether the
 * test passed or failed (a failed assertion leaves the test at once). */
static pid_t children[8];
static int nchildren;

static pid_t
fork_child(void)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid > 0 &&
	    nchildren < (int)(sizeof(children) / sizeof(children[0])))
		children[nchildren++] = pid;
	return pid;
}

static int
kill_children(void **state)
{
	(void)state;
	while (nchildren > 0) {
		pid_t pid = children[--nchildren];

		/* Only a child not yet reaped: a reaped pid may be reused. */
		if (waitpid(pid, NULL, WNOHANG) == 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
		}
	}
	platform_shutdown();
	return 0;
}

static const char meminfo_a[] = "MemTotal:       16384000 kB\n"
                                "MemFree:         1000000 kB\n"
                                "MemAvailable:    4096000 kB\n"
                                "SwapTotal:       2097152 kB\n"
                                "SwapFree:        1572864 kB\n";
static const char meminfo_b[] = "MemTotal:       16384000 kB\n"
                                "MemAvailable:    8192000 kB\n"
                                "SwapTotal:       2097152 kB\n"
                                "SwapFree:         524288 kB\n";

static void
sample_ok(struct sys_sample *s)
{
	memset(s, 0xa5, sizeof(*s));
	cause[0] = '\0';
	assert_int_equal(platform_sys_sample(s, cause, sizeof(cause)), 0);
}

static void
test_fixture_root(void **state)
{
	/* Negative thresholds: the defaults, 10 and 40. */
	struct platform_config cfg = {
	    .proc_root = root, .psi_warn = -1, .psi_critical = -1};
	struct sys_sample s;

	put_file("meminfo", meminfo_a, 0);
	put_file("pressure/memory",
	         "some avg10=12.34 avg60=0 avg300=0 total=1\n"
	         "full avg10=0 avg60=0 avg300=0 total=0\n",
	         0);
	assert_int_equal(platform_init(&cfg, cause, sizeof(cause)), 0);
	sample_ok(&s);
	assert_true(s.total_bytes == 16384000ULL * 1024);
	assert_true(s.available_bytes == 4096000ULL * 1024);
	assert_true(s.free_pct == 25.0);
	assert_true(s.swap_total_bytes == 2097152ULL * 1024);
	assert_true(s.swap_used_bytes == 524288ULL * 1024);
	assert_int_equal(s.pressure, PRESSURE_WARN);
	assert_true(s.psi_some_avg10 > 12.33 && s.psi_some_avg10 < 12.35);
	assert_true(s.compressed_bytes == 0 && s.wired_bytes == 0);

	/* Rewritten in place: the kept descriptor sees the new text. */
	put_file("meminfo", meminfo_b, 0);
	put_file("pressure/memory", "some avg10=45.00 avg60=0\n", 0);
	sample_ok(&s);
	assert_true(s.free_pct == 50.0);
	assert_true(s.swap_used_bytes == 1572864ULL * 1024);
	assert_int_equal(s.pressure, PRESSURE_CRITICAL);

	/* Replaced by rename: reopened. */
	put_file("meminfo", meminfo_a, 1);
	put_file("pressure/memory", "some avg10=1.00 avg60=0\n", 1);
	sample_ok(&s);
	assert_true(s.free_pct == 25.0);
	assert_int_equal(s.pressure, PRESSURE_NORMAL);

	/* No PSI: unknown, not an error. */
	{
		char path[512];
		snprintf(path, sizeof(path), "%s/pressure/memory", root);
		assert_int_equal(unlink(path), 0);
	}
	sample_ok(&s);
	assert_int_equal(s.pressure, PRESSURE_UNKNOWN);
	assert_true(s.psi_some_avg10 == -1);
	assert_true(s.free_pct == 25.0);

	/* ... and back again. */
	put_file("pressure/memory", "some avg10=9.99 avg60=0\n", 0);
	sample_ok(&s);
	assert_int_equal(s.pressure, PRESSURE_NORMAL);

	/* Malformed PSI: unknown too; the memory figures still count. */
	put_file("pressure/memory", "some avg10=", 0);
	sample_ok(&s);
	assert_int_equal(s.pressure, PRESSURE_UNKNOWN);

	/* Truncated meminfo is an error with a cause. */
	put_file("meminfo", "MemTotal: 16384000 kB\nMemAvailable: 40", 0);
	assert_int_equal(platform_sys_sample(&s, cause, sizeof(cause)),
	                 -EINVAL);
	assert_non_null(strstr(cause, "meminfo"));

	/* A value beyond 2^53 bytes is an error, not a wrapped number. */
	put_file("meminfo",
	         "MemTotal: 18014398509481983 kB\nMemAvailable: 150 kB\n"
	         "SwapTotal: 0 kB\nSwapFree: 0 kB\n",
	         0);
	assert_int_equal(platform_sys_sample(&s, cause, sizeof(cause)),
	                 -ERANGE);
	assert_non_null(strstr(cause, "out of range"));

	/* Cut after MemAvailable: an error, not "no swap" (the kernel
	 * always prints both swap lines). */
	put_file("meminfo", "MemTotal: 100 kB\nMemAvailable: 50 kB\n", 0);
	assert_int_equal(platform_sys_sample(&s, cause, sizeof(cause)),
	                 -EINVAL);
	assert_non_null(strstr(cause, "meminfo"));

	/* MemAvailable above MemTotal is capped at 100 %. */
	put_file("meminfo",
	         "MemTotal: 100 kB\nMemAvailable: 150 kB\nSwapTotal: 0 kB\n"
	         "SwapFree: 0 kB\n",
	         0);
	sample_ok(&s);
	assert_true(s.free_pct == 100.0);
	assert_true(s.swap_total_bytes == 0 && s.swap_used_bytes == 0);
}

static void
test_thresholds(void **state)
{
	struct platform_config cfg = {
	    .proc_root = root, .psi_warn = 20, .psi_critical = 30};
	struct sys_sample s;

	put_file("meminfo", meminfo_a, 0);
	put_file("pressure/memory", "some avg10=12.34 avg60=0\n", 0);
	assert_int_equal(platform_init(&cfg, cause, sizeof(cause)), 0);
	sample_ok(&s);
	assert_int_equal(s.pressure, PRESSURE_NORMAL);
	put_file("pressure/memory", "some avg10=20.00 avg60=0\n", 0);
	sample_ok(&s);
	assert_int_equal(s.pressure, PRESSURE_WARN);
	put_file("pressure/memory", "some avg10=30.00 avg60=0\n", 0);
	sample_ok(&s);
	assert_int_equal(s.pressure, PRESSURE_CRITICAL);

	/* 0 is a threshold like any other, not "the default": any
	 * pressure at all is at least warn. */
	cfg.psi_warn = 0;
	cfg.psi_critical = 5;
	put_file("pressure/memory", "some avg10=0.00 avg60=0\n", 0);
	assert_int_equal(platform_init(&cfg, cause, sizeof(cause)), 0);
	sample_ok(&s);
	assert_int_equal(s.pressure, PRESSURE_WARN);
	put_file("pressure/memory", "some avg10=5.00 avg60=0\n", 0);
	sample_ok(&s);
	assert_int_equal(s.pressure, PRESSURE_CRITICAL);
	cfg.psi_warn = 0;
	cfg.psi_critical = 0;
	put_file("pressure/memory", "some avg10=0.00 avg60=0\n", 0);
	assert_int_equal(platform_init(&cfg, cause, sizeof(cause)), 0);
	sample_ok(&s);
	assert_int_equal(s.pressure, PRESSURE_CRITICAL);

	/* Negative: the default of that threshold alone. */
	cfg.psi_warn = -1;
	cfg.psi_critical = 50;
	put_file("pressure/memory", "some avg10=45.00 avg60=0\n", 0);
	assert_int_equal(platform_init(&cfg, cause, sizeof(cause)), 0);
	sample_ok(&s);
	assert_int_equal(s.pressure, PRESSURE_WARN);

	cfg.psi_warn = 50;
	cfg.psi_critical = 30;
	assert_int_equal(platform_init(&cfg, cause, sizeof(cause)), -EINVAL);
	assert_true(cause[0] != '\0');
	cfg.psi_warn = 6;
	cfg.psi_critical = -1;
	assert_int_equal(platform_init(&cfg, cause, sizeof(cause)), 0);
	cfg.psi_warn = 0;
	cfg.proc_root = "/nonexistent/stageload";
	assert_int_equal(platform_init(&cfg, cause, sizeof(cause)), -ENOENT);
	assert_non_null(strstr(cause, "/nonexistent/stageload"));
}

/* The kept /proc/meminfo descriptor, re-read from offset 0, follows the
 * kernel: every sample parses and agrees with a fresh read. */
static void
test_real_proc(void **state)
{
	struct procfs_meminfo mi;
	struct sys_sample s;
	int i;

	if (access("/proc/meminfo", R_OK) != 0)
		skip();
	assert_int_equal(platform_init(NULL, cause, sizeof(cause)), 0);
	for (i = 0; i < 200; i++) {
		sample_ok(&s);
		assert_true(s.free_pct > 0 && s.free_pct <= 100);
	}
	assert_int_equal(procfs_read_meminfo("/proc", &mi), 0);
	assert_true(s.total_bytes == mi.mem_total_bytes);
	assert_true(s.swap_total_bytes == mi.swap_total_bytes);
	if (access("/proc/pressure/memory", R_OK) == 0) {
		double v;
		if (procfs_read_psi_some_avg10("/proc", &v) == 0)
			assert_true(s.psi_some_avg10 >= 0 &&
			            s.pressure != PRESSURE_UNKNOWN);
	}
	platform_shutdown();
}

static void
test_proc_info(void **state)
{
	struct proc_info pi;
	uint64_t st;
	char *block;
	const size_t big = 32 << 20;
	pid_t child;

	assert_int_equal(platform_init(NULL, cause, sizeof(cause)), 0);
	assert_int_equal(platform_proc_info(getpid(), &pi), 0);
	assert_int_equal(pi.pid, getpid());
	assert_int_equal(pi.ppid, getppid());
	assert_int_equal(pi.pgid, getpgrp());
	assert_int_equal(pi.uid, getuid());
	assert_int_equal(platform_proc_start_time(getpid(), &st), 0);
	assert_true(st == pi.start_time && st > 0);

	/* Touched anonymous memory shows in the footprint. */
	block = malloc(big);
	assert_non_null(block);
	{
		uint64_t before = pi.footprint_bytes;
		memset(block, 1, big);
		assert_int_equal(platform_proc_info(getpid(), &pi), 0);
		assert_true(pi.footprint_bytes >= before + big / 2);
	}
	free(block);

	/* A reaped child is gone. */
	child = fork();
	assert_true(child >= 0);
	if (child == 0)
		_exit(0);
	assert_int_equal(waitpid(child, NULL, 0), child);
	assert_int_equal(platform_proc_info(child, &pi), -ESRCH);
	assert_int_equal(platform_proc_start_time(child, &st), -ESRCH);
	assert_int_equal(platform_proc_info(0, &pi), -EINVAL);
	platform_shutdown();
}

/* Sends a command byte to the helper child and waits for its answer. */
static void
helper_do(int to, int from, char cmd)
{
	char c;

	assert_int_equal(write(to, &cmd, 1), 1);
	assert_int_equal(read(from, &c, 1), 1);
	assert_int_equal(c, cmd);
}

/*
 * platform_proc_sample answers from the last status reading while statm
 * is unchanged: memory changes show at once, a new group at the latest
 * after the reuse bound (2 s), and an exit at once.
 */
static void
test_proc_sample(void **state)
{
	struct proc_info a, b;
	int down[2], up[2];
	uint64_t before;
	int64_t t0;
	pid_t child, idle;

	(void)state;
	assert_int_equal(platform_init(NULL, cause, sizeof(cause)), 0);
	assert_int_equal(pipe(down), 0);
	assert_int_equal(pipe(up), 0);
	/* A helper that allocates or exits when told. */
	if ((child = fork_child()) == 0) {
		char *block, c;

		while (read(down[0], &c, 1) == 1) {
			if (c == 'a' && (block = malloc(16 << 20)) != NULL)
				memset(block, 1, 16 << 20);
			else if (c == 'x')
				_exit(0);
			if (write(up[1], &c, 1) != 1)
				_exit(1);
		}
		_exit(0);
	}
	close(down[0]);
	close(up[1]);
	/* A process that does nothing: its statm never moves. */
	if ((idle = fork_child()) == 0) {
		for (;;)
			pause();
	}

	helper_do(down[1], up[0], 's'); /* started */
	assert_int_equal(platform_proc_info(child, &a), 0);
	assert_int_equal(platform_proc_sample(child, &b), 0);
	assert_int_equal(b.pid, child);
	assert_int_equal(b.ppid, getpid());
	assert_int_equal(b.pgid, getpgrp());
	assert_true(b.start_time == a.start_time);
	before = b.footprint_bytes;

	/* Memory: statm changes, so the next sample reads status again. */
	helper_do(down[1], up[0], 'a');
	assert_int_equal(platform_proc_sample(child, &b), 0);
	assert_true(b.footprint_bytes >= before + (8 << 20));

	/* A new group leaves statm alone: platform_proc_info sees it at
	 * once, the sample within the reuse bound. */
	assert_int_equal(platform_proc_sample(idle, &b), 0);
	assert_int_equal(b.pgid, getpgrp());
	t0 = clock_mono_ms();
	assert_int_equal(setpgid(idle, idle), 0);
	assert_int_equal(platform_proc_info(idle, &a), 0);
	assert_int_equal(a.pgid, idle);
	assert_int_equal(platform_proc_sample(idle, &b), 0);
	if (clock_mono_ms() - t0 < 1000) /* the earlier reading is reused */
		assert_int_equal(b.pgid, getpgrp());
	while (b.pgid != idle && clock_mono_ms() - t0 < 5000) {
		usleep(20000);
		assert_int_equal(platform_proc_sample(idle, &b), 0);
	}
	assert_int_equal(b.pgid, idle);

	/* Exited but not reaped (a zombie): gone at once, reaped too. */
	{
		siginfo_t si;

		assert_int_equal(write(down[1], "x", 1), 1);
		assert_int_equal(
		    waitid(P_PID, (id_t)child, &si, WEXITED | WNOWAIT), 0);
	}
	assert_int_equal(platform_proc_sample(child, &b), -ESRCH);
	assert_int_equal(waitpid(child, NULL, 0), child);
	assert_int_equal(platform_proc_sample(child, &b), -ESRCH);
	close(down[1]);
	close(up[0]);
}

/*
 * A process of a user in many supplementary groups: status lists them all
 * on its Groups line, before the memory lines, so it is measured only if
 * the whole file is read (20000 groups make it about 160 KiB). Setting
 * the groups needs root.
 */
static void
test_proc_many_groups(void **state)
{
	enum { NGROUPS = 20000 };
	static gid_t groups[NGROUPS];
	const size_t big = 8 << 20;
	struct proc_info pi;
	int up[2], i;
	pid_t child;
	char c = 0;

	(void)state;
	if (geteuid() != 0) {
		const char *ci = getenv("CI");

		if (ci != NULL && strcmp(ci, "true") == 0)
			fail_msg("needs root, and CI=true forbids skipping");
		skip();
	}
	for (i = 0; i < NGROUPS; i++)
		groups[i] = (gid_t)(1000000 + i);
	assert_int_equal(pipe(up), 0);
	if ((child = fork_child()) == 0) {
		char *block = malloc(big);

		close(up[0]);
		c = block != NULL && setgroups(NGROUPS, groups) == 0 ? 'r'
		                                                     : 'e';
		/* Volatile: a store to memory never read again may be
		 * optimised away, and the pages must be really touched. */
		if (c == 'r')
			for (size_t off = 0; off < big; off += 4096)
				((volatile char *)block)[off] = 1;
		if (write(up[1], &c, 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(up[1]);
	assert_int_equal(read(up[0], &c, 1), 1);
	close(up[0]);
	if (c != 'r')
		skip(); /* no CAP_SETGID here, root or not */

	assert_int_equal(platform_init(NULL, cause, sizeof(cause)), 0);
	assert_int_equal(platform_proc_info(child, &pi), 0);
	assert_int_equal(pi.ppid, getpid());
	assert_true(pi.footprint_bytes >= big);
	assert_int_equal(platform_proc_sample(child, &pi), 0);
	assert_true(pi.footprint_bytes >= big);
	/* Read again through the kept descriptor, into the grown buffer. */
	assert_int_equal(platform_proc_info(child, &pi), 0);
	assert_true(pi.footprint_bytes >= big);
}

static void
test_list_tree(void **state)
{
	pid_t kids[2], out[64], self = getpid();
	int n, i, j, found;

	assert_int_equal(platform_init(NULL, cause, sizeof(cause)), 0);
	for (i = 0; i < 2; i++) {
		if ((kids[i] = fork_child()) == 0) {
			if (i == 1)
				setpgid(0, 0); /* leaves our group */
			pause();
			_exit(0);
		}
		if (i == 1) /* also here, so the scan cannot race it */
			setpgid(kids[1], kids[1]);
	}
	n = platform_list_tree(&self, 1, 0, out, 64);
	assert_true(n >= 2);
	for (i = 0; i < 2; i++) {
		for (found = 0, j = 0; j < n && j < 64; j++)
			found |= out[j] == kids[i];
		assert_true(found);
	}
	/* By group only: ourselves, not the child that left the group. */
	n = platform_list_tree(NULL, 0, getpgrp(), out, 64);
	assert_true(n >= 1);
	for (found = 0, j = 0; j < n && j < 64; j++) {
		found |= (out[j] == self) * 1;
		found |= (out[j] == kids[1]) * 2;
	}
	assert_int_equal(found, 1);
	/* A short buffer still counts everything. */
	assert_true(platform_list_tree(&self, 1, 0, out, 1) >= 2);

	/* Asked again at once, the answer is the same (from the table of
	 * the last listing when no pid was created meanwhile)... */
	n = platform_list_tree(&self, 1, 0, out, 64);
	assert_int_equal(platform_list_tree(&self, 1, 0, out, 64), n);
	/* ... and a process created since is seen at the next call. */
	{
		pid_t late = fork_child(), more[64];
		int m;

		if (late == 0) {
			pause();
			_exit(0);
		}
		m = platform_list_tree(&self, 1, 0, more, 64);
		for (found = 0, j = 0; j < m && j < 64; j++)
			found |= more[j] == late;
		kill(late, SIGKILL);
		waitpid(late, NULL, 0);
		assert_true(found);
	}
	for (i = 0; i < 2; i++) {
		kill(kids[i], SIGKILL);
		waitpid(kids[i], NULL, 0);
	}
	platform_shutdown();
}

static void
test_peer_cred(void **state)
{
	int sv[2];
	uid_t uid;
	gid_t gid;
	pid_t pid;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(platform_peer_cred(sv[0], &uid, &gid, &pid), 0);
	assert_int_equal(uid, getuid());
	assert_int_equal(gid, getgid());
	assert_int_equal(pid, getpid());
	close(sv[0]);
	close(sv[1]);
	assert_true(platform_peer_cred(-1, &uid, &gid, &pid) < 0);
}

/* The peer's groups are what getgroups() says in the peer. */
static void
test_peer_groups(void **state)
{
	gid_t *g = NULL, mine[1024];
	int sv[2], n = -1, nmine;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(platform_peer_groups(sv[0], &g, &n), 0);
	nmine = getgroups(1024, mine);
	assert_true(nmine >= 0);
	assert_int_equal(n, nmine);
	if (n > 0)
		assert_memory_equal(g, mine, sizeof(gid_t) * (size_t)n);
	free(g);
	close(sv[0]);
	close(sv[1]);
	assert_true(platform_peer_groups(-1, &g, &n) < 0);
}

/*
 * A peer in 3000 groups (more than the first buffer holds) that drops
 * them all once connected: the server reads the 3000 it had at connect.
 * One in no group at all reads as none. Setting groups needs root.
 */
static void
test_peer_groups_at_connect(void **state)
{
	enum { NGROUPS = 3000 };
	static gid_t groups[NGROUPS];
	struct sockaddr_un sun;
	socklen_t alen;
	gid_t *g = NULL;
	int ls, fd, up[2], n = -1, i, round;
	pid_t child;
	char c = 0;

	(void)state;
	if (geteuid() != 0) {
		const char *ci = getenv("CI");

		if (ci != NULL && strcmp(ci, "true") == 0)
			fail_msg("needs root, and CI=true forbids skipping");
		skip();
	}
	for (i = 0; i < NGROUPS; i++)
		groups[i] = (gid_t)(2000000 + i);
	for (round = 0; round < 2; round++) {
		int want = round == 0 ? NGROUPS : 0;

		/* An abstract address: nothing to remove afterwards. */
		memset(&sun, 0, sizeof sun);
		sun.sun_family = AF_UNIX;
		snprintf(sun.sun_path + 1, sizeof sun.sun_path - 1,
		         "sl-peer-groups-%d-%d", (int)getpid(), round);
		alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
		                   strlen(sun.sun_path + 1));
		assert_true((ls = socket(AF_UNIX, SOCK_STREAM, 0)) >= 0);
		assert_int_equal(bind(ls, (struct sockaddr *)&sun, alen), 0);
		assert_int_equal(listen(ls, 1), 0);
		assert_int_equal(pipe(up), 0);
		if ((child = fork_child()) == 0) {
			int cfd = socket(AF_UNIX, SOCK_STREAM, 0);
			gid_t none = 7;

			close(up[0]);
			c = setgroups((size_t)want, groups) == 0 &&
			            connect(cfd, (struct sockaddr *)&sun,
			                    alen) == 0 &&
			            setgroups(1, &none) == 0
			        ? 'r'
			        : 'e';
			if (write(up[1], &c, 1) != 1)
				_exit(1);
			for (;;)
				pause();
		}
		close(up[1]);
		assert_int_equal(read(up[0], &c, 1), 1);
		close(up[0]);
		if (c != 'r')
			skip(); /* no CAP_SETGID here, root or not */
		assert_true((fd = accept(ls, NULL, NULL)) >= 0);
		assert_int_equal(platform_peer_groups(fd, &g, &n), 0);
		assert_int_equal(n, want);
		if (n > 0)
			assert_memory_equal(g, groups,
			                    sizeof(gid_t) * (size_t)n);
		free(g);
		g = NULL;
		close(fd);
		close(ls);
		kill(child, SIGKILL);
	}
}

static void
test_user_groups(void **state)
{
	gid_t *groups = NULL;
	int n = 0, i, found = 0;

	assert_int_equal(platform_user_groups("root", 0, &groups, &n), 0);
	assert_true(n >= 1);
	for (i = 0; i < n; i++)
		found |= groups[i] == 0;
	assert_true(found);
	free(groups);
}

static void
test_default_paths(void **state)
{
	char buf[512], want[512];
	char *old_rt = getenv("XDG_RUNTIME_DIR"), *old_st;
	char *save_rt = old_rt ? strdup(old_rt) : NULL, *save_st;

	old_st = getenv("XDG_STATE_HOME");
	save_st = old_st ? strdup(old_st) : NULL;

	assert_int_equal(platform_default_socket(1, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/var/run/stageload.sock");
	assert_int_equal(platform_default_db(1, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/var/lib/stageload/stageload.db");

	setenv("XDG_RUNTIME_DIR", "/run/user/1234", 1);
	assert_int_equal(platform_default_socket(0, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/run/user/1234/stageload.sock");
	/* no (absolute) XDG_RUNTIME_DIR: under a home of the user's own */
	{
		char home[] = "/tmp/sl-home-XXXXXX";

		assert_non_null(mkdtemp(home));
		setenv("HOME", home, 1);
		setenv("XDG_RUNTIME_DIR", "relative/ignored", 1);
		assert_int_equal(platform_default_socket(0, buf, sizeof(buf)),
		                 0);
		snprintf(want, sizeof(want), "%s/.stageload/stageload.sock",
		         home);
		assert_string_equal(buf, want);
		rmdir(home);
	}
	/* else the private directory under /tmp */
	setenv("HOME", "/nonexistent", 1);
	assert_int_equal(platform_default_socket(0, buf, sizeof(buf)), 0);
	snprintf(want, sizeof(want), "/tmp/stageload-%u/stageload.sock",
	         (unsigned)getuid());
	assert_string_equal(buf, want);
	unsetenv("XDG_RUNTIME_DIR");
	assert_int_equal(platform_default_socket(0, buf, sizeof(buf)), 0);
	assert_string_equal(buf, want);

	setenv("XDG_STATE_HOME", "/home/u/state", 1);
	assert_int_equal(platform_default_db(0, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/home/u/state/stageload/stageload.db");
	unsetenv("XDG_STATE_HOME");
	setenv("HOME", "/home/u", 1);
	assert_int_equal(platform_default_db(0, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/home/u/.local/state/stageload/stageload.db");
	assert_int_equal(platform_default_db(0, buf, 10), -ENAMETOOLONG);

	if (save_rt)
		setenv("XDG_RUNTIME_DIR", save_rt, 1);
	if (save_st)
		setenv("XDG_STATE_HOME", save_st, 1);
	free(save_rt);
	free(save_st);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_fixture_root, setup_root,
	                                    teardown_root),
	    cmocka_unit_test_setup_teardown(test_thresholds, setup_root,
	                                    teardown_root),
	    cmocka_unit_test(test_real_proc),
	    cmocka_unit_test(test_proc_info),
	    cmocka_unit_test_teardown(test_proc_sample, kill_children),
	    cmocka_unit_test_teardown(test_proc_many_groups, kill_children),
	    cmocka_unit_test_teardown(test_list_tree, kill_children),
	    cmocka_unit_test(test_peer_cred),
	    cmocka_unit_test(test_peer_groups),
	    cmocka_unit_test_teardown(test_peer_groups_at_connect,
	                              kill_children),
	    cmocka_unit_test(test_user_groups),
	    cmocka_unit_test(test_default_paths),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
