/*
 * The monitor process of a detached job, and the job's own child until its
 * exec: what runs after spawn.c's fork(). The monitor drops privileges for
 * the job, copies its output to the log within the log's bounds (cutting,
 * or dropping past min_free_disk and max_log_bytes_per_uid while still
 * draining the pipe), waits for it, writes the status file that outlives
 * the daemon and reports on the pipe while the daemon listens. Portable
 * POSIX (macOS too).
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

void
spawn_send(int fd, struct spawn_msg *m)
{
	m->magic = SPAWN_MAGIC;
	/* EPIPE when the daemon is gone: the status file is what counts. */
	(void)spawn_write_all(fd, m, sizeof(*m));
}

static const char *
spawn_stage_text(int stage)
{
	switch (stage) {
	case STAGE_STDIO:
		return "cannot set up stdin/stdout/stderr";
	case STAGE_SETGROUPS:
		return "cannot set supplementary groups";
	case STAGE_SETGID:
		return "cannot switch group";
	case STAGE_SETUID:
		return "cannot switch user";
	case STAGE_VERIFY:
		return "privileges could be regained after the switch";
	case STAGE_CHDIR:
		return "cannot change to working directory";
	case STAGE_EXEC:
		return "cannot run";
	}
	return "cannot start";
}

/*
 * Write the status file: a temp file then rename(), so a reader sees the
 * old state or the whole new one. Text, one "key value" per line, so an
 * operator can read it too.
 */
static int
spawn_write_status(const struct spawn_plan *p, pid_t pid, uint64_t start_time,
                   int64_t started_ms, const struct spawn_status *st)
{
	char buf[1024];
	int fd, n;

	n = snprintf(buf, sizeof(buf),
	             SPAWN_STATUS_HEADER
	             "pid %d\nstart_time %llu\nstarted_ms %lld\n"
	             "failed %d\nexit_code %d\nsignal %d\n"
	             "ended_ms %lld\ncause %s\n",
	             (int)pid, (unsigned long long)start_time,
	             (long long)started_ms, st->failed, st->exit_code,
	             st->term_signal, (long long)st->ended_ms, st->cause);
	if (n < 0 || (size_t)n >= sizeof(buf))
		n = (int)strlen(buf);
	fd = open(p->status_tmp,
	          O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd == -1)
		return -errno;
	if (spawn_write_all(fd, buf, (size_t)n) < 0 || fsync(fd) == -1) {
		n = -errno;
		close(fd);
		unlink(p->status_tmp);
		return n;
	}
	close(fd);
	if (rename(p->status_tmp, p->status_path) == -1) {
		n = -errno;
		unlink(p->status_tmp);
		return n;
	}
	return 0;
}

/*
 * Record the job's pid and start time before it may run (it waits on the
 * go pipe). The daemon commits them only when the monitor's STARTED report
 * arrives; if the daemon dies before that, the next one finds the job here
 * instead of calling it lost while it runs. No fsync: this guards against
 * the daemon dying, and the job does not outlive the machine.
 */
static void
spawn_write_started(const struct spawn_plan *p, pid_t pid, uint64_t start_time)
{
	char buf[256];
	int fd, n;

	n = snprintf(buf, sizeof(buf),
	             SPAWN_STARTED_HEADER "attempt %d\npid %d\nstart_time "
	                                  "%llu\nstarted_ms %lld\nmonitor_pid "
	                                  "%d\n",
	             p->attempt, (int)pid, (unsigned long long)start_time,
	             (long long)clock_wall_ms(), (int)getpid());
	if (n < 0 || (size_t)n >= sizeof(buf))
		return;
	fd = open(p->started_tmp,
	          O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd == -1)
		return;
	if (spawn_write_all(fd, buf, (size_t)n) < 0) {
		close(fd);
		unlink(p->started_tmp);
		return;
	}
	close(fd);
	if (rename(p->started_tmp, p->started_path) == -1)
		unlink(p->started_tmp);
}

/*
 * The job's log: never through a link, a regular file with one name,
 * owned by the job's user and readable by nobody else. A first attempt
 * starts a new file: one left under the same id (a database started
 * afresh beside an old state directory) may be another user's. Later
 * attempts append, so one log holds them all.
 */
static int
spawn_open_log(const struct spawn_plan *p, char *cause, size_t causelen)
{
	struct stat sb;
	int fd, err, fresh = p->attempt <= 1;

	if (fresh && unlink(p->log_path) == -1 && errno != ENOENT) {
		err = errno;
		snprintf(cause, causelen, "cannot remove old log %.160s: %s",
		         p->log_path, strerror(err));
		return -err;
	}
	/* Read and write: the monitor reads its tail back when it cuts it. */
	fd = open(p->log_path,
	          O_RDWR | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC |
	              O_NONBLOCK | (fresh ? O_EXCL : 0),
	          0600);
	if (fd == -1) {
		err = errno;
		snprintf(cause, causelen, "cannot open log %.160s: %s",
		         p->log_path, strerror(err));
		return -err;
	}
	if (fstat(fd, &sb) == -1 || !S_ISREG(sb.st_mode) || sb.st_nlink != 1) {
		snprintf(cause, causelen,
		         "log %.160s is not a plain file with one link",
		         p->log_path);
		close(fd);
		return -EPERM;
	}
	if ((p->drop && fchown(fd, p->uid, p->gid) == -1) ||
	    fchmod(fd, 0600) == -1 || spawn_set_nonblock(fd, 0) < 0) {
		err = errno;
		snprintf(cause, causelen, "cannot prepare log %.160s: %s",
		         p->log_path, strerror(err));
		close(fd);
		return -err;
	}
	return fd;
}

/* The job itself, between fork() and exec(). Never returns. */
static void __attribute__((noreturn))
spawn_job_child(const struct spawn_plan *p, int logfd, int gofd, int errfd)
{
	struct spawn_failure f = {0, 0};
	int keep[3];
	char c;

	(void)setpgid(0, 0);
	keep[0] = logfd;
	keep[1] = gofd;
	keep[2] = errfd;
	spawn_close_fds(keep, 3);
	/* Wait until the monitor has noted our start time. */
	while (read(gofd, &c, 1) == -1 && errno == EINTR)
		;
	close(gofd);

	f.stage = STAGE_STDIO;
	if (dup2(logfd, STDOUT_FILENO) == -1 ||
	    dup2(logfd, STDERR_FILENO) == -1)
		goto fail;
	close(logfd);

	if (p->drop) {
		f.stage = STAGE_SETGROUPS;
		if (setgroups(p->ngroups, p->groups) == -1)
			goto fail;
		f.stage = STAGE_SETGID;
		if (setgid(p->gid) == -1)
			goto fail;
		f.stage = STAGE_SETUID;
		if (setuid(p->uid) == -1)
			goto fail;
		f.stage = STAGE_VERIFY;
		errno = EPERM;
		if (getuid() != p->uid || geteuid() != p->uid ||
		    getgid() != p->gid || getegid() != p->gid)
			goto fail;
		if (p->uid != 0 && (setuid(0) != -1 || seteuid(0) != -1 ||
		                    (p->gid != 0 && setgid(0) != -1))) {
			errno = EPERM;
			goto fail;
		}
	}

	/* As the user, so the directory's permissions apply to them. */
	f.stage = STAGE_CHDIR;
	if (chdir(p->cwd) == -1)
		goto fail;

	spawn_reset_signals();
	/* The files it makes are as private as its submitter's, not as the
	 * daemon's umask (022 under launchd or systemd) would have them. */
	umask(p->umask);
	environ = p->envp; /* execvp searches the job's own PATH */
	f.stage = STAGE_EXEC;
	execvp(p->argv[0], p->argv);
fail:
	f.err = errno;
	(void)spawn_write_all(errfd, &f, sizeof(f));
	_exit(127);
}

static void
spawn_fail_report(const struct spawn_plan *p, struct spawn_msg *m,
                  const char *cause)
{
	struct spawn_status st;

	memset(&st, 0, sizeof(st));
	st.failed = 1;
	st.exit_code = 127;
	st.ended_ms = clock_wall_ms();
	snprintf(st.cause, sizeof(st.cause), "%s", cause);
	(void)spawn_write_status(p, m->pid, m->start_time, 0, &st);
	m->kind = SPAWN_EV_FAILED;
	m->failed = 1;
	m->exit_code = 127;
	m->ended_ms = st.ended_ms;
	snprintf(m->cause, sizeof(m->cause), "%s", cause);
	spawn_send(p->report_fd, m);
}

/* Block until pid ends and fill st, leaving pid a zombie where the system
 * allows it, so that its start time stays visible until the status file is
 * written (spawn_check relies on one or the other being there). */
static void
spawn_wait_job(pid_t pid, struct spawn_status *st)
{
	siginfo_t si;
	int status, rc;

	memset(&si, 0, sizeof(si));
	do
		rc = waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT);
	while (rc == -1 && errno == EINTR);
	if (rc == 0 && si.si_pid == pid && si.si_code == CLD_EXITED) {
		st->exit_code = si.si_status;
	} else if (rc == 0 && si.si_pid == pid &&
	           (si.si_code == CLD_KILLED || si.si_code == CLD_DUMPED)) {
		st->term_signal = si.si_status;
	} else {
		/* waitid() told us nothing usable: reap to learn the status. */
		do
			rc = waitpid(pid, &status, 0);
		while (rc == -1 && errno == EINTR);
		if (rc == pid && WIFEXITED(status))
			st->exit_code = WEXITSTATUS(status);
		else if (rc == pid && WIFSIGNALED(status))
			st->term_signal = WTERMSIG(status);
		else
			snprintf(st->cause, sizeof(st->cause),
			         "monitor could not collect the exit status");
	}
	st->ended_ms = clock_wall_ms();
}

static void
spawn_reap(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) == -1 && errno == EINTR)
		;
}

/*
 * The job's output reaches its log through the monitor, which keeps the
 * log under max_log_bytes: when a write would pass it, the log is
 * replaced (a new file, renamed over it) by one line saying how much was
 * cut and the last half of what it held, from a line start when there is
 * one near, so it always ends with the job's latest output.
 */
struct spawn_log {
	int fd;
	uint64_t size;    /* bytes in the file */
	uint64_t dropped; /* bytes of output cut so far */
	uint64_t note;    /* length of the cut line at its start, 0: none */
	int broken;       /* cutting failed: output is dropped, counted */
	/* Besides its own bound, a log stops growing while its file system
	 * is down to min_free_disk or its uid's logs hold
	 * max_log_bytes_per_uid (spawn_log_may_grow); its output is then
	 * read and dropped, so the job never blocks on a full pipe. */
	int report_fd;       /* the daemon hears when it stops */
	uint64_t out;        /* bytes of output read so far */
	uint64_t allow;      /* may still write this much before a look */
	int64_t looked_ms;   /* the last look at the disk and the total */
	int stop;            /* enum spawn_log_stop */
	uint64_t stop_from;  /* the output byte its dropping began at */
	uint64_t stop_bytes; /* bytes dropped since */
	uint64_t stop_room;  /* the room found then (for the line) */
};

/* Why a log does not grow now. */
enum spawn_log_stop {
	SPAWN_LOG_GROWS,
	SPAWN_LOG_FLOOR, /* its file system is down to min_free_disk */
	SPAWN_LOG_UID,   /* its uid's logs hold max_log_bytes_per_uid */
};

/* Room kept for the closing lines: a log stops this far before a bound,
 * so what says output was dropped always fits. */
#define SPAWN_LOG_RESERVE 4096
/* A stopped log looks again this often; it grows again once there is
 * SPAWN_LOG_RESUME of room (not at the first free byte: it would stop
 * again at once, a line each time). */
#define SPAWN_LOG_LOOK_MS 1000
#define SPAWN_LOG_RESUME ((uint64_t)1 << 20)
/* At most this much is written between two looks, and at most a 64th of
 * the room found: monitors that look at the same moment see the same
 * room, and one that is not scheduled for a while spends its allowance
 * after the others have taken theirs, so what they pass a bound by
 * together is a few 64ths of the room (with half, four `yes` jobs filled
 * a 512 MiB disk together; with a 16th, on two busy cores, they passed
 * the floor of a 64 MiB one by 1.9 MiB). A look costs a statvfs, and a
 * directory read with max_log_bytes_per_uid. */
#define SPAWN_LOG_ALLOW_MAX ((uint64_t)4 << 20)
#define SPAWN_LOG_ALLOW_SHARE 64
/* An allowance is good for this long: a monitor that was not scheduled
 * for a while would otherwise spend all of one from a look at a room the
 * others have taken since (four `yes` jobs on two cores passed the floor
 * by 2.3 MiB so). */
#define SPAWN_LOG_ALLOW_MS 50

static int
spawn_log_cut(const struct spawn_plan *p, struct spawn_log *w)
{
	char line[200], buf[65536];
	uint64_t keep = p->max_log_bytes / 2, from, off;
	ssize_t n;
	int fd;

	from = w->size > keep ? w->size - keep : 0;
	/* Start at a line if one starts in the next 4 KiB. */
	n = pread(w->fd, buf, 4096, (off_t)from);
	if (n > 0) {
		char *nl = memchr(buf, '\n', (size_t)n);
		if (nl != NULL)
			from += (uint64_t)(nl - buf) + 1;
	}
	w->dropped += from > w->note ? from - w->note : 0;
	(void)unlink(p->log_tmp);
	fd = open(p->log_tmp,
	          O_RDWR | O_CREAT | O_EXCL | O_APPEND | O_NOFOLLOW | O_CLOEXEC,
	          0600);
	if (fd == -1)
		return -1;
	if (p->drop && fchown(fd, p->uid, p->gid) == -1)
		goto fail;
	n = snprintf(line, sizeof(line),
	             "stageload: log cut: it passed max_log_bytes (%llu); "
	             "the first %llu bytes of output were dropped\n",
	             (unsigned long long)p->max_log_bytes,
	             (unsigned long long)w->dropped);
	if (spawn_write_all(fd, line, (size_t)n) < 0)
		goto fail;
	w->note = (uint64_t)n;
	for (off = from; off < w->size; off += (uint64_t)n) {
		n = pread(w->fd, buf, sizeof(buf), (off_t)off);
		if (n <= 0 || spawn_write_all(fd, buf, (size_t)n) < 0)
			goto fail;
	}
	if (rename(p->log_tmp, p->log_path) == -1)
		goto fail;
	close(w->fd);
	w->fd = fd;
	w->size = w->note + (w->size - from);
	return 0;
fail:
	close(fd);
	(void)unlink(p->log_tmp);
	return -1;
}

/* Bytes in the logs of p's uid: the monitor runs as root and each log is
 * its job's uid's (spawn_open_log), so the files say whose they are,
 * whichever daemon started them. A cut's temporary file counts too. */
static uint64_t
spawn_log_uid_bytes(const struct spawn_plan *p)
{
	struct dirent *e;
	struct stat sb;
	uint64_t total = 0;
	size_t len;
	DIR *dir;

	if ((dir = opendir(p->log_dir)) == NULL)
		return 0;
	while ((e = readdir(dir)) != NULL) {
		len = strlen(e->d_name);
		if (!(len > 4 && strcmp(e->d_name + len - 4, ".log") == 0) &&
		    !(len > 8 && strcmp(e->d_name + len - 8, ".log.tmp") == 0))
			continue;
		if (fstatat(dirfd(dir), e->d_name, &sb, AT_SYMLINK_NOFOLLOW) ==
		        0 &&
		    S_ISREG(sb.st_mode) && sb.st_uid == p->uid)
			total += (uint64_t)sb.st_size;
	}
	closedir(dir);
	return total;
}

/* How much the log may still grow before a bound, and which bound. */
static uint64_t
spawn_log_room(const struct spawn_plan *p, const struct spawn_log *w, int *why)
{
	const struct spawn_log_bounds *b = &p->bounds;
	uint64_t room = UINT64_MAX, avail, floor, total, left;
	struct statvfs sv;

	*why = SPAWN_LOG_GROWS;
	if ((b->min_free_auto || b->min_free_bytes > 0) &&
	    fstatvfs(w->fd, &sv) == 0) {
		/* f_bavail: what an ordinary user may still take, as the
		 * daemon's floor for submits reads it (tick.c). */
		avail = (uint64_t)sv.f_bavail * (uint64_t)sv.f_frsize;
		floor = b->min_free_bytes;
		if (b->min_free_auto) {
			floor =
			    (uint64_t)sv.f_blocks * (uint64_t)sv.f_frsize / 20;
			if (floor > (uint64_t)1 << 30)
				floor = (uint64_t)1 << 30;
		}
		room = avail > floor ? avail - floor : 0;
		*why = SPAWN_LOG_FLOOR;
	}
	if (b->per_uid_bytes > 0) {
		total = spawn_log_uid_bytes(p);
		left = total < b->per_uid_bytes ? b->per_uid_bytes - total : 0;
		if (left < room) {
			room = left;
			*why = SPAWN_LOG_UID;
		}
	}
	return room;
}

/* The line that says what was dropped, written into the reserve. */
static void
spawn_log_say_dropped(const struct spawn_plan *p, struct spawn_log *w,
                      int at_end)
{
	char line[320], to[48], why[160];
	int n;

	if (w->stop == SPAWN_LOG_UID)
		snprintf(why, sizeof(why),
		         "the logs of uid %u hold max_log_bytes_per_uid "
		         "(%llu bytes)",
		         (unsigned)p->uid,
		         (unsigned long long)p->bounds.per_uid_bytes);
	else
		snprintf(why, sizeof(why),
		         "the log's file system was down to min_free_disk "
		         "(%llu bytes left above it)",
		         (unsigned long long)w->stop_room);
	if (at_end)
		snprintf(to, sizeof(to), "to its end");
	else
		snprintf(to, sizeof(to), "to byte %llu",
		         (unsigned long long)(w->stop_from + w->stop_bytes));
	n = snprintf(line, sizeof(line),
	             "stageload: output dropped from byte %llu %s (%llu "
	             "bytes): %s\n",
	             (unsigned long long)w->stop_from, to,
	             (unsigned long long)w->stop_bytes, why);
	if (n > 0 && spawn_write_all(w->fd, line, (size_t)n) >= 0)
		w->size += (uint64_t)n;
}

/* The daemon records that the log stopped growing (an event): `show`
 * and `events` say so while the job runs. */
static void
spawn_log_report(const struct spawn_log *w, const char *why)
{
	struct spawn_msg m;

	if (w->report_fd < 0)
		return;
	memset(&m, 0, sizeof(m));
	m.kind = SPAWN_EV_LOG;
	m.monitor_pid = (int32_t)getpid();
	m.log_from = (int64_t)w->stop_from;
	snprintf(m.cause, sizeof(m.cause), "%s", why);
	spawn_send(w->report_fd, &m);
}

/*
 * Whether n more bytes of output may go to the log. The disk and the
 * uid's total are looked at when the allowance from the last look is
 * spent; while output is dropped, once a second, and the log grows again
 * when there is room (after a line saying what was dropped).
 */
static int
spawn_log_may_grow(const struct spawn_plan *p, struct spawn_log *w, size_t n)
{
	uint64_t room;
	int64_t now;
	int why;

	now = clock_wall_ms();
	if (w->stop == SPAWN_LOG_GROWS && n <= w->allow &&
	    now - w->looked_ms < SPAWN_LOG_ALLOW_MS) {
		w->allow -= n;
		return 1;
	}
	if (w->stop != SPAWN_LOG_GROWS &&
	    now - w->looked_ms < SPAWN_LOG_LOOK_MS)
		return 0;
	w->looked_ms = now;
	room = spawn_log_room(p, w, &why);
	if (w->stop != SPAWN_LOG_GROWS) {
		if (room < SPAWN_LOG_RESUME + SPAWN_LOG_RESERVE)
			return 0;
		spawn_log_say_dropped(p, w, 0);
		w->stop = SPAWN_LOG_GROWS;
		room -= SPAWN_LOG_RESERVE; /* the line took some */
	} else if (room < (uint64_t)n + SPAWN_LOG_RESERVE) {
		w->stop = why;
		w->stop_from = w->out;
		w->stop_bytes = 0;
		w->stop_room = room;
		spawn_log_report(w, why == SPAWN_LOG_UID
		                        ? "max_log_bytes_per_uid"
		                        : "min_free_disk");
		return 0;
	}
	w->allow = (room - SPAWN_LOG_RESERVE) / SPAWN_LOG_ALLOW_SHARE;
	if (w->allow > SPAWN_LOG_ALLOW_MAX)
		w->allow = SPAWN_LOG_ALLOW_MAX;
	w->allow = w->allow > n ? w->allow - n : 0;
	return 1;
}

static void
spawn_log_put(const struct spawn_plan *p, struct spawn_log *w, const char *buf,
              size_t n)
{
	if (!spawn_log_may_grow(p, w, n)) {
		w->stop_bytes += n;
		w->out += n;
		return;
	}
	w->out += n;
	/* No room to cut: the bound holds, and the output goes. */
	if (p->max_log_bytes > 0 && w->size + n > p->max_log_bytes &&
	    !w->broken && spawn_log_cut(p, w) < 0)
		w->broken = 1;
	if (w->broken) {
		w->dropped += n;
		return;
	}
	if (spawn_write_all(w->fd, buf, n) >= 0)
		w->size += n;
}

static void
spawn_sigchld(int sig)
{
	(void)sig; /* only to interrupt poll() */
}

/* A hook past its timeout: TERM to its group and a line in the log, then
 * KILL once it has had 2 s. */
static void
spawn_timeout(const struct spawn_plan *p, struct spawn_log *w, pid_t pid,
              int64_t *termed)
{
	char line[160];
	int n;

	if (*termed == 0) {
		n = snprintf(line, sizeof(line),
		             "stageload: on-end command still running after "
		             "%lld ms (on_end_timeout): terminated\n",
		             (long long)p->timeout_ms);
		spawn_log_put(p, w, line, (size_t)n);
		(void)kill(-pid, SIGTERM);
		*termed = clock_wall_ms();
	} else if (clock_wall_ms() - *termed >= 2000)
		(void)kill(-pid, SIGKILL);
}

/* Copy the job's output to its log until the job has exited, then what
 * it left in the pipe; descendants that write later find the pipe closed.
 * Returns the log's descriptor (it changes when the log is cut). */
static int
spawn_copy_output(const struct spawn_plan *p, int outfd, int logfd, pid_t pid)
{
	struct spawn_log w;
	struct sigaction sa;
	struct pollfd pfd;
	struct stat sb;
	char buf[65536];
	size_t chunk = sizeof(buf);
	siginfo_t si;
	int exited = 0, eof = 0, after = 0;
	int64_t deadline =
	    p->timeout_ms > 0 ? clock_wall_ms() + p->timeout_ms : 0;
	int64_t termed = 0;
	ssize_t n;

	memset(&w, 0, sizeof(w));
	w.fd = logfd;
	w.report_fd = p->report_fd;
	if (fstat(logfd, &sb) == 0)
		w.size = (uint64_t)sb.st_size;
	/* A chunk is at most a quarter of the bound, so a cut keeps room. */
	if (p->max_log_bytes > 0 && chunk > p->max_log_bytes / 4)
		chunk = (size_t)(p->max_log_bytes / 4);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = spawn_sigchld;
	sigemptyset(&sa.sa_mask);
	(void)sigaction(SIGCHLD, &sa, NULL);
	while (!eof) {
		pfd.fd = outfd;
		pfd.events = POLLIN;
		pfd.revents = 0;
		if (!exited && poll(&pfd, 1, 1000) == 0)
			pfd.revents = 0;
		if (exited || (pfd.revents & (POLLIN | POLLHUP | POLLERR))) {
			n = read(outfd, buf, chunk);
			if (n > 0)
				spawn_log_put(p, &w, buf, (size_t)n);
			else if (n == 0 || (errno != EINTR && errno != EAGAIN))
				eof = 1;
			else if (exited)
				break; /* drained */
			/* What descendants keep writing after the job has
			 * exited is not waited for: 256 chunks at most. */
			if (exited && ++after > 256)
				break;
		}
		if (!exited && deadline > 0 && clock_wall_ms() >= deadline)
			spawn_timeout(p, &w, pid, &termed);
		if (!exited) {
			memset(&si, 0, sizeof(si));
			if (waitid(P_PID, (id_t)pid, &si,
			           WEXITED | WNOWAIT | WNOHANG) == 0 &&
			    si.si_pid == pid) {
				exited = 1;
				(void)spawn_set_nonblock(outfd, 1);
			}
		}
	}
	close(outfd);
	if (w.stop != SPAWN_LOG_GROWS)
		spawn_log_say_dropped(p, &w, 1);
	return w.fd;
}

/* The per-job monitor. Never returns. */
void __attribute__((noreturn)) spawn_monitor(struct spawn_plan *p)
{
	struct spawn_failure f;
	struct spawn_status st;
	struct spawn_msg m;
	struct sigaction sa;
	char cause[256], hint[160];
	int logfd, nullfd, gofds[2], errfds[2], outfds[2], keep[4];
	ssize_t n;
	pid_t pid;

	memset(&m, 0, sizeof(m));
	m.kind = SPAWN_MSG_MONITOR;
	m.monitor_pid = (int32_t)getpid();
	if (setsid() == -1)
		m.err = errno;
	/* Still root: the session's login name is the user's, not the
	 * daemon's (getlogin() in the job; a no-op where it reads utmp). */
	else if (p->login != NULL)
		(void)platform_session_login(p->login);
	spawn_send(p->report_fd, &m);
	if (m.err != 0)
		_exit(1);
	m.err = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	sigemptyset(&sa.sa_mask);
	(void)sigaction(SIGPIPE, &sa, NULL);
	(void)sigaction(SIGHUP, &sa, NULL);

	nullfd = open("/dev/null", O_RDWR);
	if (nullfd != -1) {
		(void)dup2(nullfd, STDIN_FILENO);
		(void)dup2(nullfd, STDOUT_FILENO);
		(void)dup2(nullfd, STDERR_FILENO);
		if (nullfd > 2)
			close(nullfd);
	}
	if ((logfd = spawn_open_log(p, cause, sizeof(cause))) < 0) {
		spawn_close_fds(&p->report_fd, 1);
		spawn_fail_report(p, &m, cause);
		_exit(1);
	}
	if (spawn_pipe(gofds) < 0 || spawn_pipe(errfds) < 0 ||
	    spawn_pipe(outfds) < 0) {
		snprintf(cause, sizeof(cause), "cannot create pipe: %s",
		         strerror(errno));
		spawn_close_fds(&p->report_fd, 1);
		spawn_fail_report(p, &m, cause);
		_exit(1);
	}

	pid = fork();
	if (pid == -1) {
		snprintf(cause, sizeof(cause), "cannot fork the job: %s",
		         strerror(errno));
		spawn_close_fds(&p->report_fd, 1);
		spawn_fail_report(p, &m, cause);
		_exit(1);
	}
	if (pid == 0) {
		close(gofds[1]);
		close(errfds[0]);
		close(logfd);
		spawn_job_child(p, outfds[1], gofds[0], errfds[1]);
	}
	close(gofds[0]);
	close(errfds[1]);
	close(outfds[1]);
	(void)setpgid(pid, pid); /* also in the child: whoever runs first */

	/* While the platform layer's descriptors (e.g. /proc) are still open;
	 * the job waits on the go pipe, so it cannot have exited yet. */
	m.pid = (int32_t)pid;
	m.pgid = (int32_t)pid;
	if (platform_proc_start_time(pid, &m.start_time) < 0)
		m.start_time = 0;
	spawn_write_started(p, pid, m.start_time);
	close(gofds[1]);

	/* Hold nothing of the daemon's: not its terminal, socket or db. */
	keep[0] = p->report_fd;
	keep[1] = errfds[0];
	keep[2] = logfd;
	keep[3] = outfds[0];
	spawn_close_fds(keep, 4);

	/* EOF: exec succeeded (the pipe is close-on-exec); data: it failed. */
	do
		n = read(errfds[0], &f, sizeof(f));
	while (n == -1 && errno == EINTR);
	close(errfds[0]);
	if (n == (ssize_t)sizeof(f)) {
		spawn_reap(pid);
		platform_spawn_hint(f.err,
		                    f.stage == STAGE_CHDIR  ? p->cwd
		                    : f.stage == STAGE_EXEC ? p->argv[0]
		                                            : NULL,
		                    spawn_env_home(p->envp), hint,
		                    sizeof(hint));
		if (hint[0] != '\0')
			/* The path cut short so the hint fits in the cause. */
			snprintf(cause, sizeof(cause), "%s %.64s: %s; %s",
			         spawn_stage_text(f.stage),
			         f.stage == STAGE_CHDIR ? p->cwd : p->argv[0],
			         strerror(f.err), hint);
		else if (f.stage == STAGE_CHDIR)
			snprintf(cause, sizeof(cause), "%s %s: %s",
			         spawn_stage_text(f.stage), p->cwd,
			         strerror(f.err));
		else if (f.stage == STAGE_EXEC)
			snprintf(cause, sizeof(cause), "%s '%s': %s",
			         spawn_stage_text(f.stage), p->argv[0],
			         strerror(f.err));
		else
			snprintf(cause, sizeof(cause), "%s (uid %u gid %u): %s",
			         spawn_stage_text(f.stage), (unsigned)p->uid,
			         (unsigned)p->gid, strerror(f.err));
		/* In the log too, where the user looks first. */
		(void)spawn_write_all(logfd, "stageload: ", 11);
		(void)spawn_write_all(logfd, cause, strlen(cause));
		(void)spawn_write_all(logfd, "\n", 1);
		spawn_fail_report(p, &m, cause);
		_exit(1);
	}

	m.kind = SPAWN_EV_STARTED;
	m.started_ms = clock_wall_ms();
	spawn_send(p->report_fd, &m);

	close(spawn_copy_output(p, outfds[0], logfd, pid));
	memset(&st, 0, sizeof(st));
	spawn_wait_job(pid, &st);
	/* The file first: it must survive the daemon; the pipe is a courtesy.
	 */
	(void)spawn_write_status(p, pid, m.start_time, m.started_ms, &st);
	spawn_reap(pid);
	m.kind = SPAWN_EV_ENDED;
	m.exit_code = st.exit_code;
	m.term_signal = st.term_signal;
	m.ended_ms = st.ended_ms;
	snprintf(m.cause, sizeof(m.cause), "%s", st.cause);
	spawn_send(p->report_fd, &m);
	_exit(0);
}
