/*
 * Starting detached jobs and following them across daemon restarts.
 *
 * spawn_detached() forks a short-lived intermediate that forks the per-job
 * monitor and exits at once, so the monitor is re-parented away from the
 * daemon (it never has to be reaped by it) and keeps running when the daemon
 * stops or crashes. The monitor calls setsid() (its own session), closes
 * every descriptor it inherited, creates the job's log, then forks the job:
 * a new process group, stdin from /dev/null, stdout and stderr to the log,
 * exactly the groups the submitter's connection had (j->groups), its gid
 * and uid (never more privilege than the submitter), chdir to the job's
 * cwd as that user, the environment exactly j->env plus STAGELOAD_JOB_ID,
 * and execvp. The monitor waits for the job, writes its status to
 * <state_dir>/jobs/<id>.status (temp file then rename), reports it to the
 * daemon if the daemon is still listening, and exits.
 *
 * The daemon learns what happens through a pipe: spawn_detached() returns
 * its read end (non-blocking, close-on-exec) and the monitor's pid at once;
 * the job's pid, process group and start time follow as SPAWN_EV_STARTED
 * (or SPAWN_EV_FAILED when it could not be started, with the reason), and
 * its end as SPAWN_EV_ENDED. Watch the fd with a uv_poll_t (UV_READABLE)
 * and call spawn_read_event() until it returns 0. uv_spawn() cannot be used
 * here: it makes the job the daemon's child (so the job dies with, or must
 * be reaped by, the daemon) and has no notion of a monitor.
 *
 * After a daemon restart the pipe is gone: spawn_check() classifies a job
 * record as running, ended (with the status the monitor recorded) or lost,
 * and the daemon calls it at every sample for re-adopted jobs to learn when
 * they end.
 */
#ifndef SL_SPAWN_H
#define SL_SPAWN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "job.h"

/* How a job ended, as the monitor recorded it. */
struct spawn_status {
	int failed;      /* 1: the job could not be started (cause says why) */
	int exit_code;   /* valid when !failed and term_signal == 0 */
	int term_signal; /* signal that ended the job, 0 if none */
	int64_t ended_ms;
	char cause[256]; /* when failed: readable reason, with errno text */
};

/* A monitor just started; fd is the read end of its report pipe. */
struct spawn_child {
	pid_t monitor_pid;
	int fd; /* non-blocking, close-on-exec; the caller closes it */
};

enum spawn_event_kind {
	SPAWN_EV_STARTED = 1, /* the job exec'd: pid, pgid, start_time */
	SPAWN_EV_FAILED,      /* it could not be started: status.cause */
	SPAWN_EV_ENDED,       /* it ended: status */
	/* its log stopped growing: log_from, status.cause names the bound
	 * ("min_free_disk", "max_log_bytes_per_uid") */
	SPAWN_EV_LOG,
};

struct spawn_event {
	enum spawn_event_kind kind;
	pid_t monitor_pid;
	pid_t pid;                  /* STARTED, ENDED */
	pid_t pgid;                 /* STARTED */
	uint64_t start_time;        /* STARTED: platform_proc_start_time(pid) */
	int64_t started_ms;         /* STARTED */
	struct spawn_status status; /* FAILED, ENDED */
	int64_t log_from;           /* LOG: the output byte it stopped at */
};

/*
 * Start job j (uses id, argv, env, cwd, uid, gid, groups, umask, attempt)
 * as described above.
 * When the daemon is not root, j->uid must be the daemon's uid (-EPERM
 * otherwise). Returns 0 once the monitor exists, or a negative errno with a
 * cause; a job whose chdir or exec fails is reported later as
 * SPAWN_EV_FAILED, not here.
 */
int spawn_detached(const char *state_dir, const struct job *j,
                   struct spawn_child *child, char *cause, size_t causelen);

/*
 * A job's on-end command (docs/jobs.md, "When a job ends"): started as
 * spawn_detached() starts j (the same monitor, credentials, groups, umask,
 * cwd and j->env with STAGELOAD_JOB_ID), running /bin/sh -c command with
 * extra (NAME=value strings, NULL-terminated, replacing the job's own of
 * those names) added to the environment. Its output is appended to the
 * job's log; its status and start records are files of their own
 * (<id>.onend.status, .onend.started), never the job's. Past timeout_ms
 * (0: none) its monitor sends its group SIGTERM, and SIGKILL 2 s later,
 * with a line in the log saying so. Reports come through child->fd as for
 * a job.
 */
int spawn_hook(const char *state_dir, const struct job *j, const char *command,
               char *const *extra, int64_t timeout_ms,
               struct spawn_child *child, char *cause, size_t causelen);

/*
 * Read one report from a monitor's pipe. Returns 1 with ev filled, 0 when
 * nothing is pending, -EPIPE when the monitor closed the pipe (it exited, or
 * died: then spawn_check() tells what became of the job), or another
 * negative errno.
 */
int spawn_read_event(int fd, struct spawn_event *ev);

/* Like spawn_read_event() but waits up to timeout_ms (-1: forever) for a
 * report; 0 on timeout. For tests and tools, not the event loop. */
int spawn_wait_event(int fd, struct spawn_event *ev, int timeout_ms);

enum spawn_fate {
	SPAWN_RUNNING = 0, /* pid alive with the recorded start time */
	SPAWN_ENDED = 1,   /* the monitor recorded its status: st */
	SPAWN_LOST = 2,    /* no such process and no status: cause says why */
};

/*
 * What became of job j (uses id, pid, start_time, monitor_pid) since it was
 * last seen: returns an enum spawn_fate, or a negative errno. A pid whose
 * start time differs is a recycled pid: never taken for the job. Cheap (a
 * stat and a start-time lookup): call it at every sample for jobs that have
 * no monitor pipe, e.g. after a daemon restart.
 */
int spawn_check(const char *state_dir, const struct job *j,
                struct spawn_status *st, char *cause, size_t causelen);

/*
 * For a job the daemon saw admitted but not started (it stopped before the
 * monitor's STARTED report arrived): fill j's pid, pgid, start_time,
 * started_ms and, when unknown, monitor_pid from what its monitor recorded
 * just before letting it run (<state_dir>/jobs/<id>.started; uses id and
 * attempt). 0, or -ENOENT when there is no record of this attempt.
 */
int spawn_started(const char *state_dir, struct job *j);

/*
 * Send sig to process group pgid (when > 1) and to each of pids[0..npids)
 * (entries <= 1 are skipped). Processes already gone are not an error.
 * Returns how many kill() calls reached a process, or a negative errno when
 * one failed for another reason (e.g. -EPERM).
 */
int spawn_signal_tree(pid_t pgid, const pid_t *pids, size_t npids, int sig);

/*
 * A descriptor every child closes first thing after fork(), before the
 * monitor's work that runs with everything inherited (one at a time: a
 * second call replaces the first; -1 forgets it).
 */
void spawn_close_in_children(int fd);

/*
 * What every job's log is kept within besides max_log_bytes (docs/jobs.md,
 * "Cancel, wait, logs"), and where logs go. Set by the daemon at start and on
 * reload; monitors started after take it. Zero: no floor, no total, logs in
 * <state_dir>/jobs.
 */
struct spawn_log_bounds {
	char log_dir[1024]; /* "": <state_dir>/jobs */
	/* free space the log's file system keeps (min_free_disk); auto:
	 * min(1 GiB, 5 % of that file system) */
	uint64_t min_free_bytes;
	int min_free_auto;
	uint64_t per_uid_bytes; /* max_log_bytes_per_uid: all of a uid's logs */
};
void spawn_set_log_bounds(const struct spawn_log_bounds *b);
/* The daemon's socket (absolute), named by every job's STAGELOAD_SOCKET.
 * Set at start. */
void spawn_set_socket(const char *path);

/* <log_dir>/<id>.log (<state_dir>/jobs/ by default) and
 * <state_dir>/jobs/<id>.status; -ENAMETOOLONG if they do not fit. */
/* Remove a job's files (log, status, start record): its record is gone. */
void spawn_forget(const char *state_dir, int64_t id);
int spawn_log_path(const char *state_dir, int64_t id, char *buf, size_t len);
int spawn_status_path(const char *state_dir, int64_t id, char *buf, size_t len);

#endif
