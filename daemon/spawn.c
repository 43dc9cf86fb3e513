/*
 * Detached jobs, the daemon's side: the plan built before fork(), the
 * fork itself, the report pipe and the status files read back, and
 * re-adoption. What runs in the monitor process after the fork is
 * spawn-monitor.c's. spawn.h describes the process layout; this file is
 * portable POSIX (it must build on macOS too).
 *
 * Everything a child needs (paths, environment, groups) is prepared before
 * fork(), so the children do little more than system calls between fork()
 * and exec() or _exit(): the daemon may have other threads.
 */
#include <sys/types.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon.h"
#include "platform.h"
#include "spawn-internal.h"

extern char **environ;

/* The job's $HOME, for a hint only (it is the submitter's word). */
const char *
spawn_env_home(char **envp)
{
	size_t i;

	for (i = 0; envp != NULL && envp[i] != NULL; i++)
		if (strncmp(envp[i], "HOME=", 5) == 0 && envp[i][5] == '/')
			return envp[i] + 5;
	return NULL;
}

/* <state_dir>/jobs/<id>.<ext> */
static int
spawn_job_path(const char *state_dir, int64_t id, const char *ext, char *buf,
               size_t len)
{
	int n;

	n = snprintf(buf, len, "%s/jobs/%lld.%s", state_dir, (long long)id,
	             ext);
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	return 0;
}

static struct spawn_log_bounds spawn_bounds;

void
spawn_set_log_bounds(const struct spawn_log_bounds *b)
{
	spawn_bounds = *b;
}

int
spawn_log_path(const char *state_dir, int64_t id, char *buf, size_t len)
{
	int n;

	if (spawn_bounds.log_dir[0] == '\0')
		return spawn_job_path(state_dir, id, "log", buf, len);
	n = snprintf(buf, len, "%s/%lld.log", spawn_bounds.log_dir,
	             (long long)id);
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	return 0;
}

int
spawn_status_path(const char *state_dir, int64_t id, char *buf, size_t len)
{
	return spawn_job_path(state_dir, id, "status", buf, len);
}

static int
spawn_started_path(const char *state_dir, int64_t id, char *buf, size_t len)
{
	return spawn_job_path(state_dir, id, "started", buf, len);
}

int
spawn_set_cloexec(int fd)
{
	int flags;

	flags = fcntl(fd, F_GETFD);
	if (flags == -1 || fcntl(fd, F_SETFD, flags | FD_CLOEXEC) == -1)
		return -errno;
	return 0;
}

int
spawn_set_nonblock(int fd, int on)
{
	int flags;

	flags = fcntl(fd, F_GETFL);
	if (flags == -1)
		return -errno;
	flags = on ? (flags | O_NONBLOCK) : (flags & ~O_NONBLOCK);
	if (fcntl(fd, F_SETFL, flags) == -1)
		return -errno;
	return 0;
}

/* pipe() then close-on-exec: macOS has no pipe2(). */
int
spawn_pipe(int fds[2])
{
	int rc;

	if (pipe(fds) == -1)
		return -errno;
	if ((rc = spawn_set_cloexec(fds[0])) < 0 ||
	    (rc = spawn_set_cloexec(fds[1])) < 0) {
		close(fds[0]);
		close(fds[1]);
		return rc;
	}
	return 0;
}

ssize_t
spawn_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = write(fd, p + done, len - done);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

static int spawn_private_fd = -1;

void
spawn_close_in_children(int fd)
{
	spawn_private_fd = fd;
}

/* The daemon's handlers and ignored signals must not leak into children:
 * a handler inherited by fork() could write into a reused descriptor, and
 * an ignored signal stays ignored across exec(). */
void
spawn_reset_signals(void)
{
	struct sigaction sa;
	sigset_t none;
	int sig;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	sigemptyset(&sa.sa_mask);
	for (sig = 1; sig < NSIG; sig++)
		(void)sigaction(sig, &sa, NULL);
	sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
}

static int
spawn_fd_kept(int fd, const int *keep, size_t nkeep)
{
	size_t i;

	for (i = 0; i < nkeep; i++)
		if (keep[i] == fd)
			return 1;
	return 0;
}

/* Close every descriptor above 2 except those in keep. /dev/fd lists the
 * open ones on Linux and macOS; when it cannot be read, walk up to a bound. */
void
spawn_close_fds(const int *keep, size_t nkeep)
{
	int fds[256];
	struct dirent *de;
	size_t n, i;
	long max;
	DIR *d;
	int fd;

	for (;;) {
		d = opendir("/dev/fd");
		if (d == NULL)
			break;
		n = 0;
		while ((de = readdir(d)) != NULL &&
		       n < sizeof(fds) / sizeof(*fds)) {
			if (de->d_name[0] < '0' || de->d_name[0] > '9')
				continue;
			fd = atoi(de->d_name);
			if (fd > 2 && fd != dirfd(d) &&
			    !spawn_fd_kept(fd, keep, nkeep))
				fds[n++] = fd;
		}
		closedir(d);
		for (i = 0; i < n; i++)
			close(fds[i]);
		if (n < sizeof(fds) / sizeof(*fds))
			return;
	}
	max = sysconf(_SC_OPEN_MAX);
	if (max < 0 || max > 65536)
		max = 65536;
	for (fd = 3; fd < max; fd++)
		if (!spawn_fd_kept(fd, keep, nkeep))
			close(fd);
}

/* Does env entry e set a variable that one of extra sets? */
static int
spawn_env_replaced(const char *e, char *const *extra)
{
	size_t i, n;

	for (i = 0; extra != NULL && extra[i] != NULL; i++) {
		n = strcspn(extra[i], "=");
		if (strncmp(e, extra[i], n) == 0 && e[n] == '=')
			return 1;
	}
	return 0;
}

/* The daemon's socket, which every job's environment names. */
static char spawn_socket[1024];

void
spawn_set_socket(const char *path)
{
	snprintf(spawn_socket, sizeof spawn_socket, "%s",
	         path != NULL ? path : "");
}

/* The job's environment: exactly env, with the daemon's own variables
 * (own[], NAME=value: STAGELOAD_JOB_ID, STAGELOAD_SOCKET,
 * STAGELOAD_JOB_TOKEN) in place of any the submitter sent, and a hook's
 * extra variables in place of the job's own. */
static char **
spawn_build_env(char *const *env, char *const *own, char *const *extra)
{
	size_t n = 0, x = 0, o = 0, i, k = 0;
	char **out;

	while (env != NULL && env[n] != NULL)
		n++;
	while (extra != NULL && extra[x] != NULL)
		x++;
	while (own[o] != NULL)
		o++;
	out = calloc(n + x + o + 1, sizeof(*out));
	if (out == NULL)
		return NULL;
	for (i = 0; i < n; i++)
		if (strncmp(env[i], "STAGELOAD_JOB_ID=", 17) != 0 &&
		    strncmp(env[i], "STAGELOAD_SOCKET=", 17) != 0 &&
		    strncmp(env[i], "STAGELOAD_JOB_TOKEN=", 20) != 0 &&
		    !spawn_env_replaced(env[i], extra))
			out[k++] = env[i];
	for (i = 0; i < o; i++)
		out[k++] = own[i];
	for (i = 0; i < x; i++)
		out[k++] = extra[i];
	out[k] = NULL;
	return out;
}

static int
spawn_mkdir(const char *path)
{
	if (mkdir(path, 0700) == -1 && errno != EEXIST)
		return -errno;
	return 0;
}

/* ext of a hook's status and start files: never the job's own. */
#define SPAWN_HOOK "onend"

static int spawn_start(const char *state_dir, const struct job *j,
                       char *const *argv, char *const *extra, int hook,
                       int64_t timeout_ms, struct spawn_child *child,
                       char *cause, size_t causelen);

int
spawn_detached(const char *state_dir, const struct job *j,
               struct spawn_child *child, char *cause, size_t causelen)
{
	return spawn_start(state_dir, j, j->argv, NULL, 0, 0, child, cause,
	                   causelen);
}

int
spawn_hook(const char *state_dir, const struct job *j, const char *command,
           char *const *extra, int64_t timeout_ms, struct spawn_child *child,
           char *cause, size_t causelen)
{
	char *argv[] = {"/bin/sh", "-c", (char *)command, NULL};

	return spawn_start(state_dir, j, argv, extra, 1, timeout_ms, child,
	                   cause, causelen);
}

static int
spawn_start(const char *state_dir, const struct job *j, char *const *argv,
            char *const *extra, int hook, int64_t timeout_ms,
            struct spawn_child *child, char *cause, size_t causelen)
{
	struct spawn_plan p;
	struct spawn_msg m;
	struct pollfd pfd;
	char idvar[48], dir[1024], sockvar[sizeof spawn_socket + 32];
	char tokvar[96];
	char *own[4];
	size_t nown = 0;
	int rc, status, fds[2];
	ssize_t n;
	long max;
	pid_t mid;

	child->monitor_pid = -1;
	child->fd = -1;
	if (argv == NULL || argv[0] == NULL || j->cwd == NULL || j->id <= 0) {
		snprintf(cause, causelen, "job has no command or directory");
		return -EINVAL;
	}
	memset(&p, 0, sizeof(p));
	p.id = j->id;
	p.argv = argv;
	p.timeout_ms = timeout_ms;
	p.cwd = j->cwd;
	p.drop = geteuid() == 0;
	if (p.drop) {
		p.uid = j->uid;
		p.gid = j->gid;
	} else {
		/* Without root the job can only be the daemon's own user. */
		if (j->uid != geteuid()) {
			snprintf(
			    cause, causelen,
			    "the daemon runs as uid %u and cannot start a job "
			    "as uid %u",
			    (unsigned)geteuid(), (unsigned)j->uid);
			return -EPERM;
		}
		p.uid = geteuid();
		p.gid = getegid();
	}

	if (snprintf(dir, sizeof(dir), "%s/jobs", state_dir) >=
	        (int)sizeof(dir) ||
	    spawn_log_path(state_dir, j->id, p.log_path, sizeof(p.log_path)) <
	        0 ||
	    spawn_job_path(state_dir, j->id,
	                   hook ? SPAWN_HOOK ".status" : "status",
	                   p.status_path, sizeof(p.status_path)) < 0) {
		snprintf(cause, causelen, "state directory path too long");
		return -ENAMETOOLONG;
	}
	snprintf(p.status_tmp, sizeof(p.status_tmp), "%s.tmp", p.status_path);
	snprintf(p.log_tmp, sizeof(p.log_tmp), "%s.tmp", p.log_path);
	p.max_log_bytes = j->max_log_bytes;
	p.bounds = spawn_bounds;
	snprintf(p.log_dir, sizeof(p.log_dir), "%s",
	         spawn_bounds.log_dir[0] != '\0' ? spawn_bounds.log_dir : dir);
	if (spawn_job_path(state_dir, j->id,
	                   hook ? SPAWN_HOOK ".started" : "started",
	                   p.started_path, sizeof(p.started_path)) < 0) {
		snprintf(cause, causelen, "state directory path too long");
		return -ENAMETOOLONG;
	}
	snprintf(p.started_tmp, sizeof(p.started_tmp), "%s.tmp",
	         p.started_path);
	/* A hook's output goes after the job's, never in a fresh log. */
	p.attempt = hook ? 2 : j->attempt;
	p.umask = (mode_t)(j->umask & 0777);
	if ((rc = spawn_mkdir(state_dir)) < 0 || (rc = spawn_mkdir(dir)) < 0) {
		snprintf(cause, causelen, "cannot create %s: %s", dir,
		         strerror(-rc));
		return rc;
	}
	/* A status left by an earlier attempt must not be taken for this one.
	 */
	if (unlink(p.status_path) == -1 && errno != ENOENT) {
		rc = -errno;
		snprintf(cause, causelen, "cannot remove old %s: %s",
		         p.status_path, strerror(-rc));
		return rc;
	}
	if (unlink(p.started_path) == -1 && errno != ENOENT) {
		rc = -errno;
		snprintf(cause, causelen, "cannot remove old %s: %s",
		         p.started_path, strerror(-rc));
		return rc;
	}

	if (p.drop) {
		/* Exactly the groups the submitter's connection had, never
		 * the group database's: a group it dropped stays dropped. */
		if (j->ngroups < 0 || (j->ngroups > 0 && j->groups == NULL)) {
			snprintf(cause, causelen, "job has no group list");
			return -EINVAL;
		}
		p.groups = j->groups;
		p.ngroups = j->ngroups;
		/* A uid with no name has its number here: no login name. */
		if (j->user != NULL && j->user[0] != '\0' &&
		    strspn(j->user, "0123456789") != strlen(j->user))
			p.login = j->user;
		/* A list from a system that takes more groups than this one
		 * loses the excess: that only ever takes privilege away. */
		max = sysconf(_SC_NGROUPS_MAX);
		if (max > 0 && p.ngroups > max)
			p.ngroups = (int)max;
	}
	snprintf(idvar, sizeof(idvar), "STAGELOAD_JOB_ID=%lld",
	         (long long)j->id);
	own[nown++] = idvar;
	/* Clients inside the job reach this daemon, not the one the
	 * submitter's environment named, and the token proves their stage
	 * reports come from the job (a hook's come after its end). */
	if (spawn_socket[0] != '\0') {
		snprintf(sockvar, sizeof sockvar, "STAGELOAD_SOCKET=%s",
		         spawn_socket);
		own[nown++] = sockvar;
	}
	if (!hook && j->job_token != NULL &&
	    snprintf(tokvar, sizeof tokvar, "STAGELOAD_JOB_TOKEN=%s",
	             j->job_token) < (int)sizeof tokvar)
		own[nown++] = tokvar;
	own[nown] = NULL;
	if ((p.envp = spawn_build_env(j->env, own, extra)) == NULL) {
		snprintf(cause, causelen, "out of memory");
		return -ENOMEM;
	}
	if ((rc = spawn_pipe(fds)) < 0) {
		snprintf(cause, causelen, "cannot create pipe: %s",
		         strerror(-rc));
		goto out;
	}
	/* Non-blocking before any child exists, so nothing can fail once
	 * a monitor runs. */
	if ((rc = spawn_set_nonblock(fds[0], 1)) < 0) {
		snprintf(cause, causelen, "cannot set up the report pipe: %s",
		         strerror(-rc));
		close(fds[0]);
		close(fds[1]);
		goto out;
	}
	p.report_fd = fds[1];

	/*
	 * Fork an intermediate that forks the monitor and exits, so the
	 * monitor is re-parented away from the daemon: it survives the
	 * daemon and the daemon never has to reap it.
	 */
	mid = fork();
	if (mid == -1) {
		rc = -errno;
		snprintf(cause, causelen, "cannot fork: %s", strerror(-rc));
		close(fds[0]);
		close(fds[1]);
		goto out;
	}
	if (mid == 0) {
		if (spawn_private_fd >= 0)
			close(spawn_private_fd);
		spawn_reset_signals();
		close(fds[0]);
		mid = fork();
		if (mid == 0)
			spawn_monitor(&p);
		if (mid == -1) {
			memset(&m, 0, sizeof(m));
			m.kind = SPAWN_MSG_MONITOR;
			m.err = errno;
			spawn_send(fds[1], &m);
		}
		_exit(0);
	}
	close(fds[1]);
	while (waitpid(mid, &status, 0) == -1 && errno == EINTR)
		;

	/* The monitor's first report, written right after it was forked. */
	pfd.fd = fds[0];
	pfd.events = POLLIN;
	do
		rc = poll(&pfd, 1, 5000);
	while (rc == -1 && errno == EINTR);
	n = rc > 0 ? read(fds[0], &m, sizeof(m)) : -1;
	if (n != (ssize_t)sizeof(m) || m.magic != SPAWN_MAGIC ||
	    m.kind != SPAWN_MSG_MONITOR || m.err != 0 || m.monitor_pid <= 0) {
		rc = n == (ssize_t)sizeof(m) && m.err != 0 ? -m.err : -EIO;
		snprintf(cause, causelen, "cannot start the job's monitor: %s",
		         strerror(-rc));
		close(fds[0]);
		goto out;
	}
	child->monitor_pid = m.monitor_pid;
	child->fd = fds[0];
	rc = 0;
out:
	free(p.envp);
	return rc;
}

static void
spawn_msg_to_event(const struct spawn_msg *m, struct spawn_event *ev)
{
	memset(ev, 0, sizeof(*ev));
	ev->kind = (enum spawn_event_kind)m->kind;
	ev->monitor_pid = m->monitor_pid;
	ev->pid = m->pid;
	ev->pgid = m->pgid;
	ev->start_time = m->start_time;
	ev->started_ms = m->started_ms;
	ev->status.failed = m->failed;
	ev->status.exit_code = m->exit_code;
	ev->status.term_signal = m->term_signal;
	ev->status.ended_ms = m->ended_ms;
	memcpy(ev->status.cause, m->cause, sizeof(ev->status.cause));
	ev->status.cause[sizeof(ev->status.cause) - 1] = '\0';
	ev->log_from = m->log_from;
}

int
spawn_read_event(int fd, struct spawn_event *ev)
{
	struct spawn_msg m;
	ssize_t n;

	do
		n = read(fd, &m, sizeof(m));
	while (n == -1 && errno == EINTR);
	if (n == 0)
		return -EPIPE;
	if (n == -1)
		return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
	if (n != (ssize_t)sizeof(m) || m.magic != SPAWN_MAGIC)
		return -EPROTO;
	if (m.kind != SPAWN_EV_STARTED && m.kind != SPAWN_EV_FAILED &&
	    m.kind != SPAWN_EV_ENDED && m.kind != SPAWN_EV_LOG)
		return -EPROTO;
	spawn_msg_to_event(&m, ev);
	return 1;
}

int
spawn_wait_event(int fd, struct spawn_event *ev, int timeout_ms)
{
	struct pollfd pfd;
	int rc;

	pfd.fd = fd;
	pfd.events = POLLIN;
	do
		rc = poll(&pfd, 1, timeout_ms);
	while (rc == -1 && errno == EINTR);
	if (rc < 0)
		return -errno;
	if (rc == 0)
		return 0;
	return spawn_read_event(fd, ev);
}

/* Parse a status file. -ENOENT when there is none. */
static int
spawn_read_status(const char *path, pid_t *pid, struct spawn_status *st)
{
	char buf[2048], *line, *next, *val;
	long long v;
	ssize_t n;
	int fd, seen = 0;

	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	if (strncmp(buf, SPAWN_STATUS_HEADER, strlen(SPAWN_STATUS_HEADER)) != 0)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	*pid = 0;
	for (line = buf + strlen(SPAWN_STATUS_HEADER); *line != '\0';
	     line = next) {
		next = strchr(line, '\n');
		if (next == NULL)
			return -EINVAL; /* every line ends with a newline */
		*next++ = '\0';
		val = strchr(line, ' ');
		if (val == NULL)
			continue;
		*val++ = '\0';
		if (strcmp(line, "cause") == 0) {
			snprintf(st->cause, sizeof(st->cause), "%s", val);
			seen |= 1;
			continue;
		}
		v = strtoll(val, NULL, 10);
		if (strcmp(line, "pid") == 0)
			*pid = (pid_t)v;
		else if (strcmp(line, "failed") == 0)
			st->failed = (int)v;
		else if (strcmp(line, "exit_code") == 0)
			st->exit_code = (int)v;
		else if (strcmp(line, "signal") == 0)
			st->term_signal = (int)v;
		else if (strcmp(line, "ended_ms") == 0)
			st->ended_ms = v;
	}
	return (seen & 1) ? 0 : -EINVAL;
}

/* 1 when the recorded status belongs to job j (same pid or never ran). */
static int
spawn_status_for(const char *path, const struct job *j, struct spawn_status *st)
{
	pid_t pid;

	if (spawn_read_status(path, &pid, st) < 0)
		return 0;
	return pid == j->pid || (st->failed && pid <= 0);
}

int
spawn_started(const char *state_dir, struct job *j)
{
	char path[1024], buf[256], *line, *next, *val;
	long long v, attempt = -1, p = -1, t = -1, ms = 0, mp = 0;
	ssize_t n;
	int fd, rc;

	if ((rc = spawn_started_path(state_dir, j->id, path, sizeof(path))) < 0)
		return rc;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	if (strncmp(buf, SPAWN_STARTED_HEADER, strlen(SPAWN_STARTED_HEADER)) !=
	    0)
		return -EINVAL;
	for (line = buf + strlen(SPAWN_STARTED_HEADER); *line != '\0';
	     line = next) {
		if ((next = strchr(line, '\n')) == NULL)
			return -EINVAL;
		*next++ = '\0';
		if ((val = strchr(line, ' ')) == NULL)
			continue;
		*val++ = '\0';
		v = strtoll(val, NULL, 10);
		if (strcmp(line, "attempt") == 0)
			attempt = v;
		else if (strcmp(line, "pid") == 0)
			p = v;
		else if (strcmp(line, "start_time") == 0)
			t = v;
		else if (strcmp(line, "started_ms") == 0)
			ms = v;
		else if (strcmp(line, "monitor_pid") == 0)
			mp = v;
	}
	/* A record of an earlier attempt is not this one's. */
	if (attempt != j->attempt)
		return -ENOENT;
	if (p <= 1 || t <= 0)
		return -EINVAL;
	j->pid = (pid_t)p;
	j->pgid = (pid_t)p;
	j->start_time = (uint64_t)t;
	j->started_ms = ms;
	if (j->monitor_pid <= 0)
		j->monitor_pid = (pid_t)mp;
	return 0;
}

/* pid runs (not a zombie) with its start time in *t. Where init does not
 * reap orphans (some containers), an ended job or monitor stays a zombie
 * whose start time still reads: that must not pass for running. */
static int
spawn_proc_runs(pid_t pid, uint64_t *t)
{
	struct proc_info pi;

	if (pid <= 1 || platform_proc_info(pid, &pi) != 0)
		return 0;
	*t = pi.start_time;
	return 1;
}

void
spawn_forget(const char *state_dir, int64_t id)
{
	char path[1024];

	if (spawn_log_path(state_dir, id, path, sizeof(path)) == 0) {
		(void)unlink(path);
		/* A cut the monitor did not finish (spawn_log_cut). */
		if (strlen(path) + 4 < sizeof(path)) {
			strcat(path, ".tmp");
			(void)unlink(path);
		}
	}
	if (spawn_status_path(state_dir, id, path, sizeof(path)) == 0)
		(void)unlink(path);
	if (spawn_started_path(state_dir, id, path, sizeof(path)) == 0)
		(void)unlink(path);
	if (spawn_job_path(state_dir, id, SPAWN_HOOK ".status", path,
	                   sizeof(path)) == 0)
		(void)unlink(path);
	if (spawn_job_path(state_dir, id, SPAWN_HOOK ".started", path,
	                   sizeof(path)) == 0)
		(void)unlink(path);
}

int
spawn_check(const char *state_dir, const struct job *j, struct spawn_status *st,
            char *cause, size_t causelen)
{
	char path[1024];
	uint64_t t, mt;
	int rc;

	memset(st, 0, sizeof(*st));
	if ((rc = spawn_status_path(state_dir, j->id, path, sizeof(path))) <
	    0) {
		snprintf(cause, causelen, "state directory path too long");
		return rc;
	}
	if (spawn_proc_runs(j->pid, &t) && t == j->start_time &&
	    j->start_time != 0)
		return SPAWN_RUNNING;
	if (spawn_status_for(path, j, st))
		return SPAWN_ENDED;
	/*
	 * The job may be gone (a zombie reads as gone) while its monitor is
	 * still writing the status. A monitor started before
	 * the job is the real one: a recycled pid started later.
	 */
	if (j->start_time != 0 && spawn_proc_runs(j->monitor_pid, &mt) &&
	    mt <= j->start_time)
		return SPAWN_RUNNING;
	/* The monitor may have finished between the two looks above. */
	if (spawn_status_for(path, j, st))
		return SPAWN_ENDED;
	memset(st, 0, sizeof(*st));
	snprintf(
	    cause, causelen,
	    "process %d (started %llu) is gone and its monitor left no status",
	    (int)j->pid, (unsigned long long)j->start_time);
	return SPAWN_LOST;
}

int
spawn_signal_tree(pid_t pgid, const pid_t *pids, size_t npids, int sig)
{
	int reached = 0, err = 0;
	size_t i;

	/* pgid 0 or 1 would mean our own group or every process. */
	if (pgid > 1) {
		if (kill(-pgid, sig) == 0)
			reached++;
		else if (errno != ESRCH)
			err = -errno;
	}
	for (i = 0; i < npids; i++) {
		if (pids[i] <= 1)
			continue;
		if (kill(pids[i], sig) == 0)
			reached++;
		else if (errno != ESRCH && err == 0)
			err = -errno;
	}
	return err < 0 ? err : reached;
}
