/*
 * What the daemon's side of a detached job (spawn.c: planning, forking,
 * reading reports and status files) and the monitor process's side
 * (spawn-monitor.c: the code that runs in the forked monitor and the job's
 * child) share: the report message, the plan built before fork(), and the
 * few system-call helpers both use.
 */
#ifndef SL_SPAWN_INTERNAL_H
#define SL_SPAWN_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "spawn.h"

#define SPAWN_MAGIC 0x534c4d4eU /* "SLMN" */
#define SPAWN_STATUS_HEADER "stageload-status 1\n"
#define SPAWN_STARTED_HEADER "stageload-started 1\n"

/* Internal report: the monitor says who it is before anything else. */
#define SPAWN_MSG_MONITOR 0x100

/*
 * One report on the pipe. It is smaller than PIPE_BUF (512 on every POSIX
 * system), so each write is atomic and a read returns whole messages.
 */
struct spawn_msg {
	uint32_t magic;
	uint32_t kind;
	int32_t monitor_pid;
	int32_t pid;
	int32_t pgid;
	int32_t failed;
	int32_t exit_code;
	int32_t term_signal;
	int32_t err; /* SPAWN_MSG_MONITOR: errno when the monitor failed */
	uint32_t pad;
	uint64_t start_time;
	int64_t started_ms;
	int64_t ended_ms;
	int64_t log_from; /* SPAWN_EV_LOG: from which output byte */
	char cause[256];
};

_Static_assert(sizeof(struct spawn_msg) <= 512, "report must be atomic");

/* What the job child reports through its close-on-exec pipe on failure. */
enum spawn_stage {
	STAGE_STDIO = 1,
	STAGE_SETGROUPS,
	STAGE_SETGID,
	STAGE_SETUID,
	STAGE_VERIFY,
	STAGE_CHDIR,
	STAGE_EXEC,
};

struct spawn_failure {
	int32_t stage;
	int32_t err;
};

/* Everything the monitor and the job need, built before fork(). */
struct spawn_plan {
	int64_t id;
	int attempt;
	mode_t umask; /* the submitter's */
	char *const *argv;
	char **envp;
	const char *cwd;
	uid_t uid;
	gid_t gid;
	gid_t *groups;
	int ngroups;
	int drop; /* the daemon is root: switch to uid/gid/groups */
	/* the session's login name (j->user) when dropping to a named user */
	const char *login;
	char log_path[1024];
	char log_tmp[1040];
	uint64_t max_log_bytes;         /* 0: unbounded */
	struct spawn_log_bounds bounds; /* as set when it was started */
	char log_dir[1024];             /* the log's directory */
	char status_path[1024];
	char status_tmp[1040];
	char started_path[1024];
	char started_tmp[1040];
	int report_fd;
	/* spawn_hook: the command is ended (TERM, then KILL 2 s later) this
	 * long after it started, with a line in the log; 0: never. */
	int64_t timeout_ms;
};

/* spawn.c */
const char *spawn_env_home(char **envp);
int spawn_set_nonblock(int fd, int on);
int spawn_pipe(int fds[2]);
ssize_t spawn_write_all(int fd, const void *buf, size_t len);
void spawn_reset_signals(void);
void spawn_close_fds(const int *keep, size_t nkeep);
int spawn_set_cloexec(int fd);

/* spawn-monitor.c */
void __attribute__((noreturn)) spawn_monitor(struct spawn_plan *p);
void spawn_send(int fd, struct spawn_msg *m);

#endif
