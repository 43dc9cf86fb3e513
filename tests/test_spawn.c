/*
 * Detached jobs with real processes: the monitor, the job's identity,
 * directory, environment and log, exit and signal status, the status file
 * that outlives the daemon, and re-adoption. When root, the identity tests
 * also run as a user created for the test (falling back to nobody).
 */
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "clock.h"
#include "platform.h"
#include "spawn.h"
#include "testclock.h"

#define EVENT_TIMEOUT_MS 10000

static char state_dir[256];
/* Every job group started, so teardown can kill what a failed test left. */
static struct {
	pid_t pgid;
	uint64_t start_time;
} started_jobs[64];
static size_t nstarted;
static char work_dir[256];
static int64_t next_id = 1;

/* A user made for the test when root; else the current user. */
static struct {
	int created;
	char name[64];
	char group[64];
	char supp[64];
	uid_t uid;
	gid_t gid;
	gid_t supp_gid;
} other;

static int
run_quiet(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	strncat(cmd, " >/dev/null 2>&1", sizeof(cmd) - strlen(cmd) - 1);
	return system(cmd);
}

static void
remove_other_user(void)
{
	if (!other.created)
		return;
	/* -f: a finished job of the user may linger as a zombie where
	 * nothing reaps orphans, and plain userdel refuses then. */
	run_quiet("userdel -f %s", other.name);
	run_quiet("groupdel %s", other.supp);
	run_quiet("groupdel %s", other.group);
	other.created = 0;
}

/* Users left by a run that was killed before its teardown (a ctest
 * timeout): slsp<pid> whose test process is gone. */
static void
remove_stale_users(void)
{
	char names[16][64];
	struct passwd *pw;
	size_t n = 0, i;
	int pid;
	char end;

	setpwent();
	while ((pw = getpwent()) != NULL && n < 16)
		if (sscanf(pw->pw_name, "slsp%d%c", &pid, &end) == 1 &&
		    pid > 0 && kill(pid, 0) == -1 && errno == ESRCH)
			snprintf(names[n++], sizeof(names[0]), "%d", pid);
	endpwent();
	for (i = 0; i < n; i++) {
		run_quiet("userdel -f slsp%s", names[i]);
		run_quiet("groupdel slsps%s", names[i]);
		run_quiet("groupdel slspg%s", names[i]);
	}
}

/* Create a user with its own primary group and one supplementary group, so
 * the test can tell all three apart; nobody when useradd is missing. */
static int
make_other_user(void)
{
	struct passwd *pw;
	struct group *gr;
	int pid = (int)getpid();

	remove_stale_users();
	snprintf(other.name, sizeof(other.name), "slsp%d", pid);
	snprintf(other.group, sizeof(other.group), "slspg%d", pid);
	snprintf(other.supp, sizeof(other.supp), "slsps%d", pid);
	if (run_quiet("groupadd %s", other.group) == 0 &&
	    run_quiet("groupadd %s", other.supp) == 0 &&
	    run_quiet("useradd -M -N -g %s -G %s -s /bin/sh %s", other.group,
	              other.supp, other.name) == 0) {
		other.created = 1;
		atexit(remove_other_user);
		pw = getpwnam(other.name);
		gr = getgrnam(other.supp);
		if (pw == NULL || gr == NULL)
			return -1;
		other.uid = pw->pw_uid;
		other.gid = pw->pw_gid;
		other.supp_gid = gr->gr_gid;
		return 0;
	}
	run_quiet("groupdel %s", other.supp);
	run_quiet("groupdel %s", other.group);
	pw = getpwnam("nobody");
	if (pw == NULL)
		return -1;
	snprintf(other.name, sizeof(other.name), "nobody");
	other.uid = pw->pw_uid;
	other.gid = pw->pw_gid;
	other.supp_gid = (gid_t)-1;
	return 0;
}

static int
rm_rf(const char *dir)
{
	if (dir[0] == '\0')
		return 0;
	return run_quiet("rm -rf '%s'", dir);
}

static int
setup_all(void **state)
{
	struct platform_config pc;
	char cause[256];

	memset(&pc, 0, sizeof(pc));
	pc.psi_warn = 10;
	pc.psi_critical = 40;
	if (platform_init(&pc, cause, sizeof(cause)) < 0) {
		print_error("platform_init: %s\n", cause);
		return -1;
	}
	if (mkdtemp(strcpy(state_dir, "/tmp/sl-spawn-state-XXXXXX")) == NULL ||
	    mkdtemp(strcpy(work_dir, "/tmp/sl-spawn-work-XXXXXX")) == NULL)
		return -1;
	/* Another user must be able to enter the job's directory. */
	if (chmod(work_dir, 0755) == -1)
		return -1;
	if (geteuid() == 0 && make_other_user() < 0)
		return -1;
	return 0;
}

static int
teardown_all(void **state)
{
	size_t i;

	uint64_t t;

	/* Only groups whose leader is still the job: never a recycled pid. */
	for (i = 0; i < nstarted; i++)
		if (platform_proc_start_time(started_jobs[i].pgid, &t) == 0 &&
		    t == started_jobs[i].start_time)
			(void)spawn_signal_tree(started_jobs[i].pgid, NULL, 0,
			                        SIGKILL);
	remove_other_user();
	rm_rf(state_dir);
	rm_rf(work_dir);
	platform_shutdown();
	return 0;
}

/* A job for the current user, with a small fixed environment. */
static void
job_init(struct job *j, char **argv, char **env)
{
	static char user[64];
	struct passwd *pw;

	memset(j, 0, sizeof(*j));
	j->id = next_id++;
	j->uid = geteuid();
	j->gid = getegid();
	pw = getpwuid(j->uid);
	snprintf(user, sizeof(user), "%s", pw ? pw->pw_name : "root");
	j->user = user;
	j->argv = argv;
	j->env = env;
	j->cwd = work_dir;
}

static char *plain_env[] = {"PATH=/usr/bin:/bin", "LANG=C", NULL};

/* Start j; returns the report fd and fills the STARTED event. */
static int
start(struct job *j, struct spawn_event *started)
{
	struct spawn_child c;
	char cause[256] = "";
	int rc;

	rc = spawn_detached(state_dir, j, &c, cause, sizeof(cause));
	if (rc != 0)
		print_error("spawn_detached: %s\n", cause);
	assert_int_equal(rc, 0);
	assert_true(c.monitor_pid > 0);
	assert_true(c.fd > 2);
	j->monitor_pid = c.monitor_pid;
	if (started != NULL) {
		assert_int_equal(
		    spawn_wait_event(c.fd, started, EVENT_TIMEOUT_MS), 1);
		if (started->kind != SPAWN_EV_STARTED)
			print_error("not started: %s\n", started->status.cause);
		assert_int_equal(started->kind, SPAWN_EV_STARTED);
		assert_int_equal(started->monitor_pid, c.monitor_pid);
		assert_true(started->pid > 1);
		assert_int_equal(started->pgid, started->pid);
		assert_true(started->start_time != 0);
		assert_true(started->started_ms > 0);
		j->pid = started->pid;
		j->pgid = started->pgid;
		j->start_time = started->start_time;
		if (nstarted < sizeof(started_jobs) / sizeof(*started_jobs)) {
			started_jobs[nstarted].pgid = started->pgid;
			started_jobs[nstarted++].start_time =
			    started->start_time;
		}
	}
	return c.fd;
}

/* The next event, then EOF once the monitor has exited. */
static void
expect_end(int fd, enum spawn_event_kind kind, struct spawn_event *ev)
{
	struct spawn_event extra;

	assert_int_equal(spawn_wait_event(fd, ev, EVENT_TIMEOUT_MS), 1);
	if (ev->kind != kind)
		print_error("event %d: %s\n", ev->kind, ev->status.cause);
	assert_int_equal(ev->kind, kind);
	assert_int_equal(spawn_wait_event(fd, &extra, EVENT_TIMEOUT_MS),
	                 -EPIPE);
	close(fd);
}

static char *
read_log(const struct job *j)
{
	static char buf[65536];
	char path[512];
	ssize_t n;
	int fd;

	assert_int_equal(spawn_log_path(state_dir, j->id, path, sizeof(path)),
	                 0);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	assert_true(n >= 0);
	buf[n] = '\0';
	return buf;
}

static void
nap(void)
{
	struct timespec pause = {0, 5 * 1000000};

	nanosleep(&pause, NULL);
}

/* Poll spawn_check() until it answers want, within a deadline. */
static int
check_until(const struct job *j, int want, struct spawn_status *st)
{
	int64_t deadline = clock_mono_ms() + EVENT_TIMEOUT_MS;
	struct timespec pause = {0, 10 * 1000000};
	char cause[256];
	int rc;

	for (;;) {
		rc = spawn_check(state_dir, j, st, cause, sizeof(cause));
		if (rc == want || clock_mono_ms() > deadline)
			return rc;
		nanosleep(&pause, NULL);
	}
}

static void
test_exit_code(void **state)
{
	char *argv[] = {"sh", "-c", "exit 7", NULL};
	struct spawn_event ev;
	struct spawn_status st;
	struct job j;
	int fd;

	job_init(&j, argv, plain_env);
	fd = start(&j, &ev);
	expect_end(fd, SPAWN_EV_ENDED, &ev);
	assert_int_equal(ev.pid, j.pid);
	assert_int_equal(ev.status.failed, 0);
	assert_int_equal(ev.status.exit_code, 7);
	assert_int_equal(ev.status.term_signal, 0);
	assert_true(ev.status.ended_ms >= ev.started_ms);
	/* The same status is on disk for a daemon that was not listening. */
	assert_int_equal(check_until(&j, SPAWN_ENDED, &st), SPAWN_ENDED);
	assert_int_equal(st.exit_code, 7);
	assert_int_equal(st.term_signal, 0);
	assert_int_equal(st.ended_ms, ev.status.ended_ms);
}

static void
test_signal_recorded(void **state)
{
	char *argv[] = {"sh", "-c", "kill -TERM $$", NULL};
	struct spawn_event ev;
	struct spawn_status st;
	struct job j;
	int fd;

	job_init(&j, argv, plain_env);
	fd = start(&j, &ev);
	expect_end(fd, SPAWN_EV_ENDED, &ev);
	assert_int_equal(ev.status.term_signal, SIGTERM);
	assert_int_equal(check_until(&j, SPAWN_ENDED, &st), SPAWN_ENDED);
	assert_int_equal(st.term_signal, SIGTERM);
}

/* spawn_signal_tree reaches the group and a process that left it. */
static void
test_signal_tree(void **state)
{
	/* The grandchild moves to its own group, then reports its pid. */
	char *argv[] = {
	    "sh", "-c",
	    "python3 -c 'import os, time; os.setpgid(0, 0); "
	    "open(\"stray.pid\", \"w\").write(\"%d\\n\" % os.getpid()); "
	    "time.sleep(60)' & wait",
	    NULL};
	struct spawn_event ev;
	char path[512], buf[64];
	pid_t stray = 0;
	int64_t deadline;
	struct job j;
	FILE *f;
	int fd, n;

	job_init(&j, argv, plain_env);
	snprintf(path, sizeof(path), "%s/stray.pid", work_dir);
	unlink(path);
	fd = start(&j, &ev);
	deadline = clock_mono_ms() + EVENT_TIMEOUT_MS;
	while (stray <= 0 && clock_mono_ms() < deadline) {
		if ((f = fopen(path, "r")) != NULL) {
			if (fgets(buf, sizeof(buf), f) != NULL &&
			    strchr(buf, '\n') != NULL)
				stray = (pid_t)atoi(buf);
			fclose(f);
		}
		nap();
	}
	assert_true(stray > 1);
	assert_true(getpgid(stray) != j.pgid);
	n = spawn_signal_tree(j.pgid, &stray, 1, SIGKILL);
	assert_int_equal(n, 2);
	expect_end(fd, SPAWN_EV_ENDED, &ev);
	assert_int_equal(ev.status.term_signal, SIGKILL);
	deadline = clock_mono_ms() + EVENT_TIMEOUT_MS;
	while (kill(stray, 0) == 0 && clock_mono_ms() < deadline)
		nap();
	assert_int_equal(kill(stray, 0), -1);
	/* Nothing left: gone processes are not an error. */
	assert_int_equal(spawn_signal_tree(j.pgid, &stray, 1, SIGKILL), 0);
	unlink(path);
}

static void
test_cwd(void **state)
{
	char *argv[] = {"pwd", "-P", NULL};
	struct spawn_event ev;
	char want[PATH_MAX + 2], real[PATH_MAX];
	struct job j;
	int fd;

	job_init(&j, argv, plain_env);
	fd = start(&j, &ev);
	expect_end(fd, SPAWN_EV_ENDED, &ev);
	assert_int_equal(ev.status.exit_code, 0);
	assert_non_null(realpath(work_dir, real));
	snprintf(want, sizeof(want), "%s\n", real);
	assert_string_equal(read_log(&j), want);
}

/* The environment is exactly the submitted one plus STAGELOAD_JOB_ID; a
 * submitted STAGELOAD_JOB_ID is replaced, not duplicated. */
static void
test_env_exact(void **state)
{
	char *env[] = {"PATH=/usr/bin:/bin", "FOO=bar baz",
	               "EMPTY=", "STAGELOAD_JOB_ID=forged", NULL};
	char *argv[] = {"env", NULL};
	struct spawn_event ev;
	char want[512];
	struct job j;
	int fd;

	job_init(&j, argv, env);
	fd = start(&j, &ev);
	expect_end(fd, SPAWN_EV_ENDED, &ev);
	assert_int_equal(ev.status.exit_code, 0);
	snprintf(
	    want, sizeof(want),
	    "PATH=/usr/bin:/bin\nFOO=bar baz\nEMPTY=\nSTAGELOAD_JOB_ID=%lld\n",
	    (long long)j.id);
	assert_string_equal(read_log(&j), want);
}

/* PATH is searched in the job's environment, not the daemon's. */
static void
test_path_from_job_env(void **state)
{
	char *env[] = {"PATH=/nonexistent-sl-dir", NULL};
	char *argv[] = {"true", NULL};
	struct spawn_event ev;
	struct job j;
	int fd;

	job_init(&j, argv, env);
	fd = start(&j, NULL);
	expect_end(fd, SPAWN_EV_FAILED, &ev);
	assert_non_null(strstr(ev.status.cause, "'true'"));
}

/* Past max_log_bytes the log keeps its tail: it ends with the job's last
 * output, starts with a line saying how much was cut, and stays under the
 * bound. */
static void
test_log_cut(void **state)
{
	char *argv[] = {"seq", "1", "200000", NULL};
	static char buf[200000];
	struct spawn_event ev;
	unsigned long long dropped = 0;
	char path[512], *end;
	struct job j;
	ssize_t n;
	int fd;

	(void)state;
	job_init(&j, argv, plain_env);
	j.max_log_bytes = 64 * 1024;
	fd = start(&j, &ev);
	expect_end(fd, SPAWN_EV_ENDED, &ev);
	assert_int_equal(ev.status.exit_code, 0);
	assert_int_equal(spawn_log_path(state_dir, j.id, path, sizeof(path)),
	                 0);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	assert_true(n > 16 * 1024 && n <= 64 * 1024);
	buf[n] = '\0';
	assert_int_equal(strncmp(buf,
	                         "stageload: log cut: it passed "
	                         "max_log_bytes (65536); the first ",
	                         62),
	                 0);
	end = strstr(buf, "the first ");
	assert_non_null(end);
	dropped = strtoull(end + 10, NULL, 10);
	/* seq 1 200000 writes 1288895 bytes: all of it is either dropped
	 * or kept after the cut line. */
	assert_int_equal(
	    dropped + (unsigned long long)(n - (strchr(buf, '\n') - buf + 1)),
	    1288895);
	/* The kept part starts at a line and ends with the last one. */
	assert_true(strchr(buf, '\n')[1] != '\n');
	assert_non_null(strstr(buf, "\n199999\n200000\n"));
	assert_int_equal(strcmp(buf + n - 7, "200000\n"), 0);
	strcat(path, ".tmp");
	assert_int_equal(access(path, F_OK), -1);
}

static void
test_log_stdout_stderr(void **state)
{
	char *argv[] = {"sh", "-c", "echo to-stdout; echo to-stderr >&2", NULL};
	struct spawn_event ev;
	struct stat sb;
	char path[512];
	struct job j;
	int fd;

	job_init(&j, argv, plain_env);
	fd = start(&j, &ev);
	expect_end(fd, SPAWN_EV_ENDED, &ev);
	assert_string_equal(read_log(&j), "to-stdout\nto-stderr\n");
	assert_int_equal(spawn_log_path(state_dir, j.id, path, sizeof(path)),
	                 0);
	assert_int_equal(lstat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 07777, 0600);
	assert_int_equal(sb.st_uid, j.uid);
}

/* stdin is /dev/null: a job that reads it sees end of file at once. */
static void
test_stdin_null(void **state)
{
	char *argv[] = {"sh", "-c", "cat; echo eof", NULL};
	struct spawn_event ev;
	struct job j;
	int fd;

	job_init(&j, argv, plain_env);
	fd = start(&j, &ev);
	expect_end(fd, SPAWN_EV_ENDED, &ev);
	assert_string_equal(read_log(&j), "eof\n");
}

static void
test_exec_failure(void **state)
{
	char *missing[] = {"sl-no-such-command-here", "x", NULL};
	char *abspath[] = {"/nonexistent/sl-cmd", NULL};
	struct spawn_event ev;
	struct spawn_status st;
	struct job j;
	int fd;

	job_init(&j, missing, plain_env);
	fd = start(&j, NULL);
	expect_end(fd, SPAWN_EV_FAILED, &ev);
	assert_int_equal(ev.status.failed, 1);
	print_message("cause: %s\n", ev.status.cause);
	assert_non_null(strstr(ev.status.cause, "sl-no-such-command-here"));
	assert_non_null(strstr(ev.status.cause, strerror(ENOENT)));
	/* The user sees why in the job's log. */
	assert_non_null(strstr(read_log(&j), ev.status.cause));
	/* The failure is on disk too. */
	j.pid = ev.pid;
	assert_int_equal(check_until(&j, SPAWN_ENDED, &st), SPAWN_ENDED);
	assert_int_equal(st.failed, 1);
	assert_string_equal(st.cause, ev.status.cause);

	job_init(&j, abspath, plain_env);
	fd = start(&j, NULL);
	expect_end(fd, SPAWN_EV_FAILED, &ev);
	assert_non_null(strstr(ev.status.cause, "/nonexistent/sl-cmd"));
}

static void
test_chdir_failure(void **state)
{
	char *argv[] = {"true", NULL};
	struct spawn_event ev;
	struct job j;
	int fd;

	job_init(&j, argv, plain_env);
	j.cwd = "/nonexistent-sl-dir/sub";
	fd = start(&j, NULL);
	expect_end(fd, SPAWN_EV_FAILED, &ev);
	print_message("cause: %s\n", ev.status.cause);
	assert_non_null(strstr(ev.status.cause, "working directory"));
	assert_non_null(strstr(ev.status.cause, "/nonexistent-sl-dir/sub"));
	assert_non_null(strstr(ev.status.cause, strerror(ENOENT)));
}

/* The log is never opened through a link: a planted symlink makes the
 * start fail and its target stays untouched. */
/*
 * A link in the log's place. A retry appends to the log, and refuses it;
 * a first attempt starts a new file, so it removes the link (never
 * following it) and writes a plain file of its own.
 */
static void
test_log_symlink_refused(void **state)
{
	char *argv[] = {"sh", "-c", "echo written", NULL};
	char path[512], target[512];
	struct spawn_event ev;
	struct stat sb;
	struct job j;
	int fd;

	job_init(&j, argv, plain_env);
	j.attempt = 2;
	snprintf(target, sizeof(target), "%s/target", work_dir);
	assert_int_equal(spawn_log_path(state_dir, j.id, path, sizeof(path)),
	                 0);
	assert_int_equal(symlink(target, path), 0);
	fd = start(&j, NULL);
	expect_end(fd, SPAWN_EV_FAILED, &ev);
	print_message("cause: %s\n", ev.status.cause);
	assert_non_null(strstr(ev.status.cause, "log"));
	assert_int_equal(lstat(target, &sb), -1);
	assert_int_equal(errno, ENOENT);
	unlink(path);

	job_init(&j, argv, plain_env);
	j.attempt = 1;
	assert_int_equal(spawn_log_path(state_dir, j.id, path, sizeof(path)),
	                 0);
	assert_int_equal(symlink(target, path), 0);
	fd = start(&j, &ev);
	expect_end(fd, SPAWN_EV_ENDED, &ev);
	assert_int_equal(lstat(path, &sb), 0);
	assert_true(S_ISREG(sb.st_mode));
	assert_int_equal(lstat(target, &sb), -1);
	assert_string_equal(read_log(&j), "written\n");
	unlink(path);
}

/* A log left under the same id (a new database beside an old state
 * directory) is not continued: the first attempt has a log of its own. */
static void
test_stale_log_replaced(void **state)
{
	char *argv[] = {"sh", "-c", "echo mine", NULL};
	char path[512];
	struct spawn_event ev;
	struct job j;
	int fd;

	job_init(&j, argv, plain_env);
	j.attempt = 1;
	assert_int_equal(spawn_log_path(state_dir, j.id, path, sizeof(path)),
	                 0);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "someone else's\n", 15), 15);
	close(fd);
	fd = start(&j, &ev);
	expect_end(fd, SPAWN_EV_ENDED, &ev);
	assert_string_equal(read_log(&j), "mine\n");
	/* and a job's record gone, its files go */
	spawn_forget(state_dir, j.id);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(spawn_status_path(state_dir, j.id, path, sizeof(path)),
	                 0);
	assert_int_equal(access(path, F_OK), -1);
}

static void
test_bad_request(void **state)
{
	char *empty[] = {NULL};
	struct spawn_child c;
	char cause[256] = "";
	struct job j;

	job_init(&j, empty, plain_env);
	assert_int_equal(
	    spawn_detached(state_dir, &j, &c, cause, sizeof(cause)), -EINVAL);
	assert_true(cause[0] != '\0');
}

/*
 * The "daemon" goes away: the test closes its end of the pipe right after
 * the start, and the monitor still records the status. The monitor is in
 * its own session, not our child, and the job leads its own group.
 */
static void
test_status_survives_daemon(void **state)
{
	char *argv[] = {"sh", "-c", "sleep 0.3; echo done; exit 3", NULL};
	struct spawn_event ev;
	struct spawn_status st;
	struct job j;
	int fd, status;

	job_init(&j, argv, plain_env);
	fd = start(&j, &ev);
	close(fd);
	assert_int_equal(getsid(j.monitor_pid), j.monitor_pid);
	assert_int_equal(getpgid(j.pid), j.pid);
	assert_int_equal(waitpid(j.monitor_pid, &status, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
	assert_int_equal(spawn_check(state_dir, &j, &st, NULL, 0),
	                 SPAWN_RUNNING);
	assert_int_equal(check_until(&j, SPAWN_ENDED, &st), SPAWN_ENDED);
	assert_int_equal(st.exit_code, 3);
	assert_int_equal(st.failed, 0);
	assert_string_equal(read_log(&j), "done\n");
}

/* Neither the monitor nor the job keeps a descriptor the daemon had open
 * without close-on-exec (a listening socket, the database): the pipe's
 * reader sees end of file once the test closes its own write end. */
static void
test_no_inherited_fds(void **state)
{
	char *argv[] = {"sleep", "60", NULL};
	struct spawn_event ev;
	struct pollfd pfd;
	struct job j;
	int p[2], fd;
	char c;

	assert_int_equal(pipe(p), 0); /* deliberately not close-on-exec */
	job_init(&j, argv, plain_env);
	fd = start(&j, &ev);
	close(p[1]);
	pfd.fd = p[0];
	pfd.events = POLLIN;
	assert_int_equal(poll(&pfd, 1, EVENT_TIMEOUT_MS), 1);
	assert_int_equal(read(p[0], &c, 1), 0);
	close(p[0]);
	assert_int_equal(spawn_signal_tree(j.pgid, NULL, 0, SIGKILL), 1);
	expect_end(fd, SPAWN_EV_ENDED, &ev);
	assert_int_equal(ev.status.term_signal, SIGKILL);
}

/* A restarted daemon finds the job running, then learns its end by
 * polling spawn_check(). */
static void
test_readopt_running_then_ended(void **state)
{
	char *argv[] = {"sleep", "60", NULL};
	struct spawn_event ev;
	struct spawn_status st;
	char cause[256];
	struct job j;
	int fd;

	job_init(&j, argv, plain_env);
	fd = start(&j, &ev);
	close(fd);
	assert_int_equal(spawn_check(state_dir, &j, &st, cause, sizeof(cause)),
	                 SPAWN_RUNNING);
	assert_int_equal(spawn_signal_tree(j.pgid, NULL, 0, SIGTERM), 1);
	assert_int_equal(check_until(&j, SPAWN_ENDED, &st), SPAWN_ENDED);
	assert_int_equal(st.term_signal, SIGTERM);
	assert_int_equal(st.failed, 0);
}

static pid_t
dead_pid(void)
{
	pid_t pid;
	int status;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return pid;
}

static void
test_readopt_lost(void **state)
{
	char *argv[] = {"true", NULL};
	struct spawn_status st;
	char cause[256] = "";
	struct job j;

	job_init(&j, argv, plain_env); /* never started: no status file */
	assert_int_equal(platform_proc_start_time(getpid(), &j.start_time), 0);
	j.pid = dead_pid();
	assert_int_equal(spawn_check(state_dir, &j, &st, cause, sizeof(cause)),
	                 SPAWN_LOST);
	print_message("cause: %s\n", cause);
	assert_true(cause[0] != '\0');
}

/* A live pid with another start time is a recycled pid, not the job. */
static void
test_recycled_pid_not_mistaken(void **state)
{
	char *argv[] = {"true", NULL};
	struct spawn_status st;
	char cause[256];
	uint64_t mine;
	struct job j;

	job_init(&j, argv, plain_env);
	assert_int_equal(platform_proc_start_time(getpid(), &mine), 0);
	j.pid = getpid();
	j.start_time = mine;
	assert_int_equal(spawn_check(state_dir, &j, &st, cause, sizeof(cause)),
	                 SPAWN_RUNNING);
	j.start_time = mine + 1;
	assert_int_equal(spawn_check(state_dir, &j, &st, cause, sizeof(cause)),
	                 SPAWN_LOST);
	j.start_time = mine - 1;
	assert_int_equal(spawn_check(state_dir, &j, &st, cause, sizeof(cause)),
	                 SPAWN_LOST);
}

/* A status file left by another process (an earlier attempt with the same
 * id) is not taken for this one's. */
static void
test_stale_status_ignored(void **state)
{
	char *argv[] = {"true", NULL};
	struct spawn_event ev;
	struct spawn_status st;
	char cause[256];
	struct job j;
	int fd;

	job_init(&j, argv, plain_env);
	fd = start(&j, &ev);
	expect_end(fd, SPAWN_EV_ENDED, &ev);
	assert_int_equal(check_until(&j, SPAWN_ENDED, &st), SPAWN_ENDED);
	/* The next attempt: another pid, and its monitor gone too. */
	j.pid = dead_pid();
	j.monitor_pid = dead_pid();
	assert_int_equal(spawn_check(state_dir, &j, &st, cause, sizeof(cause)),
	                 SPAWN_LOST);
}

/*
 * The job gone and no status yet, but its monitor alive (the window in
 * which it writes the file): still running. A "monitor" that started after
 * the job is a recycled pid: lost.
 */
static void
test_monitor_pending(void **state)
{
	struct timespec pause = {0, 50 * 1000000};
	char *argv[] = {"true", NULL};
	struct spawn_status st;
	char cause[256];
	uint64_t mine, later;
	struct job j;
	pid_t kid;
	int status;

	job_init(&j, argv, plain_env);
	assert_int_equal(platform_proc_start_time(getpid(), &mine), 0);
	j.pid = dead_pid();
	j.start_time = mine;
	j.monitor_pid = getpid();
	assert_int_equal(spawn_check(state_dir, &j, &st, cause, sizeof(cause)),
	                 SPAWN_RUNNING);

	nanosleep(&pause, NULL); /* start times have a coarse clock */
	kid = fork();
	assert_true(kid >= 0);
	if (kid == 0) {
		pause.tv_sec = 60;
		nanosleep(&pause, NULL);
		_exit(0);
	}
	assert_int_equal(platform_proc_start_time(kid, &later), 0);
	assert_true(later > mine);
	j.monitor_pid = kid;
	assert_int_equal(spawn_check(state_dir, &j, &st, cause, sizeof(cause)),
	                 SPAWN_LOST);
	kill(kid, SIGKILL);
	waitpid(kid, &status, 0);
}

/* Root-only tests skip when not root, and fail instead under CI=true. */
static int
need_root(void)
{
	const char *ci = getenv("CI");

	if (geteuid() == 0)
		return 1;
	if (ci != NULL && strcmp(ci, "true") == 0)
		fail_msg("needs root, and CI=true forbids skipping");
	print_message("skipped: needs root to start jobs as another user\n");
	return 0;
}

/* A job of the other user, submitted by a process with all its groups. */
static struct job *
other_job(struct job *j, char **argv)
{
	static char *env[] = {"PATH=/usr/bin:/bin", NULL};
	static gid_t groups[2];

	job_init(j, argv, env);
	j->uid = other.uid;
	j->gid = other.gid;
	j->user = other.name;
	groups[0] = other.gid;
	groups[1] = other.supp_gid;
	j->groups = groups;
	j->ngroups = other.created ? 2 : 1;
	return j;
}

static void
group_name(gid_t gid, char *buf, size_t len)
{
	struct group *gr = getgrgid(gid);

	if (gr != NULL)
		snprintf(buf, len, "%u(%s)", (unsigned)gid, gr->gr_name);
	else
		snprintf(buf, len, "%u", (unsigned)gid);
}

/* uid, gid and exactly the user's groups, read from inside the job. */
static void
test_as_other_user(void **state)
{
	char *argv[] = {"id", NULL};
	char want[512], g1[128], g2[128];
	struct spawn_event ev;
	struct stat sb;
	char path[512];
	struct job j;
	int fd;

	if (!need_root()) {
		skip();
		return;
	}
	other_job(&j, argv);
	fd = start(&j, &ev);
	expect_end(fd, SPAWN_EV_ENDED, &ev);
	assert_int_equal(ev.status.exit_code, 0);
	group_name(other.gid, g1, sizeof(g1));
	if (other.created) {
		group_name(other.supp_gid, g2, sizeof(g2));
		snprintf(want, sizeof(want), "uid=%u(%s) gid=%s groups=%s,%s\n",
		         (unsigned)other.uid, other.name, g1, g1, g2);
	} else {
		snprintf(want, sizeof(want), "uid=%u(%s) gid=%s groups=%s\n",
		         (unsigned)other.uid, other.name, g1, g1);
	}
	assert_string_equal(read_log(&j), want);
	assert_int_equal(spawn_log_path(state_dir, j.id, path, sizeof(path)),
	                 0);
	assert_int_equal(lstat(path, &sb), 0);
	assert_int_equal(sb.st_uid, other.uid);
	assert_int_equal(sb.st_gid, other.gid);
	assert_int_equal(sb.st_mode & 07777, 0600);
}

static int
gid_cmp(const void *a, const void *b)
{
	gid_t x = *(const gid_t *)a, y = *(const gid_t *)b;

	return x < y ? -1 : x > y;
}

/* The groups of a job's process, from the "Groups:" line of its
 * /proc/self/status in the log, sorted; -1 when there is none. */
static int
log_groups(const char *log, gid_t *out, int max)
{
	const char *p = strstr(log, "Groups:");
	char *end;
	int n = 0;

	if (p == NULL)
		return -1;
	p += strlen("Groups:");
	for (;;) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '\n' || *p == '\0' || n == max)
			break;
		out[n++] = (gid_t)strtoul(p, &end, 10);
		if (end == p)
			return -1;
		p = end;
	}
	qsort(out, (size_t)n, sizeof *out, gid_cmp);
	return n;
}

/* A job has exactly the groups it was given, whatever the group database
 * says the user is in: none, a list without the user's supplementary
 * group, one without its primary group, one with a group the user is not
 * in. */
static void
test_exact_groups(void **state)
{
	char *argv[] = {"grep", "^Groups:", "/proc/self/status", NULL};
	gid_t lists[4][2], got[8];
	int sizes[4] = {0, 1, 1, 2};
	struct spawn_event ev;
	struct job j;
	int i, k, n, fd;

	if (!need_root()) {
		skip();
		return;
	}
	lists[1][0] = other.gid;
	lists[2][0] = other.created ? other.supp_gid : 54321;
	lists[3][0] = 54321;
	lists[3][1] = other.gid;
	for (i = 0; i < 4; i++) {
		other_job(&j, argv);
		j.groups = lists[i];
		j.ngroups = sizes[i];
		fd = start(&j, &ev);
		expect_end(fd, SPAWN_EV_ENDED, &ev);
		assert_int_equal(ev.status.exit_code, 0);
		n = log_groups(read_log(&j), got, 8);
		print_message("list %d: %s", i, read_log(&j));
		assert_int_equal(n, sizes[i]);
		qsort(lists[i], (size_t)sizes[i], sizeof(gid_t), gid_cmp);
		for (k = 0; k < n; k++)
			assert_int_equal(got[k], lists[i][k]);
	}
}

/* The directory is entered as the user: one only root may enter fails. */
static void
test_other_user_cwd_checked_as_user(void **state)
{
	char *argv[] = {"true", NULL};
	char dir[512];
	struct spawn_event ev;
	struct job j;
	int fd;

	if (!need_root()) {
		skip();
		return;
	}
	snprintf(dir, sizeof(dir), "%s/private", work_dir);
	assert_int_equal(mkdir(dir, 0700), 0);
	other_job(&j, argv);
	j.cwd = dir;
	fd = start(&j, NULL);
	expect_end(fd, SPAWN_EV_FAILED, &ev);
	print_message("cause: %s\n", ev.status.cause);
	assert_non_null(strstr(ev.status.cause, strerror(EACCES)));
	rmdir(dir);
}

/* A daemon that is not root starts jobs only as itself. Run in a child
 * that becomes the other user; its exit code says which check failed. */
static void
test_nonroot_daemon(void **state)
{
	char *argv[] = {"id", "-u", NULL};
	char sdir[512], lpath[1024], cause[256], want[64], buf[64];
	struct spawn_child c;
	struct spawn_event ev;
	struct job j;
	int status, n, lfd;
	pid_t kid;

	if (!need_root()) {
		skip();
		return;
	}
	snprintf(sdir, sizeof(sdir), "%s/userstate", work_dir);
	assert_int_equal(mkdir(sdir, 0700), 0);
	assert_int_equal(chown(sdir, other.uid, other.gid), 0);
	other_job(&j, argv);
	kid = fork();
	assert_true(kid >= 0);
	if (kid == 0) {
		if (setgroups(1, &other.gid) == -1 || setgid(other.gid) == -1 ||
		    setuid(other.uid) == -1)
			_exit(10);
		j.uid = 0;
		if (spawn_detached(sdir, &j, &c, cause, sizeof(cause)) !=
		    -EPERM)
			_exit(11);
		j.uid = other.uid;
		if (spawn_detached(sdir, &j, &c, cause, sizeof(cause)) != 0)
			_exit(12);
		if (spawn_wait_event(c.fd, &ev, EVENT_TIMEOUT_MS) != 1 ||
		    ev.kind != SPAWN_EV_STARTED)
			_exit(13);
		if (spawn_wait_event(c.fd, &ev, EVENT_TIMEOUT_MS) != 1 ||
		    ev.kind != SPAWN_EV_ENDED || ev.status.exit_code != 0)
			_exit(14);
		_exit(0);
	}
	assert_int_equal(waitpid(kid, &status, 0), kid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	snprintf(want, sizeof(want), "%u\n", (unsigned)other.uid);
	assert_int_equal(spawn_log_path(sdir, j.id, lpath, sizeof(lpath)), 0);
	lfd = open(lpath, O_RDONLY);
	assert_true(lfd >= 0);
	n = (int)read(lfd, buf, sizeof(buf) - 1);
	close(lfd);
	assert_true(n > 0);
	buf[n] = '\0';
	assert_string_equal(buf, want);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_exit_code),
	    cmocka_unit_test(test_signal_recorded),
	    cmocka_unit_test(test_signal_tree),
	    cmocka_unit_test(test_cwd),
	    cmocka_unit_test(test_env_exact),
	    cmocka_unit_test(test_path_from_job_env),
	    cmocka_unit_test(test_log_stdout_stderr),
	    cmocka_unit_test(test_stdin_null),
	    cmocka_unit_test(test_exec_failure),
	    cmocka_unit_test(test_chdir_failure),
	    cmocka_unit_test(test_log_symlink_refused),
	    cmocka_unit_test(test_stale_log_replaced),
	    cmocka_unit_test(test_bad_request),
	    cmocka_unit_test(test_status_survives_daemon),
	    cmocka_unit_test(test_no_inherited_fds),
	    cmocka_unit_test(test_readopt_running_then_ended),
	    cmocka_unit_test(test_readopt_lost),
	    cmocka_unit_test(test_recycled_pid_not_mistaken),
	    cmocka_unit_test(test_stale_status_ignored),
	    cmocka_unit_test(test_monitor_pending),
	    cmocka_unit_test(test_as_other_user),
	    cmocka_unit_test(test_other_user_cwd_checked_as_user),
	    cmocka_unit_test(test_nonroot_daemon),
	    cmocka_unit_test(test_exact_groups),
	    cmocka_unit_test(test_log_cut),
	};

	return cmocka_run_group_tests(tests, setup_all, teardown_all);
}
