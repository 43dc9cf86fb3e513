/*
 * The daemon's shared state and configuration. One struct daemon lives for
 * the life of the process; modules get it as their first argument.
 */
#ifndef SL_DAEMON_H
#define SL_DAEMON_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <uv.h>

#include "clock.h"
#include "platform.h"

struct store;
struct cJSON;

/* How long the store keeps what (config: retention). */
struct store_retention {
	int64_t raw_ms;  /* full-rate samples; default 2 days */
	int64_t t10s_ms; /* 10 s rollup; default 14 days */
	int64_t t1m_ms;  /* 1 min rollup; default 90 days */
	int64_t t10m_ms; /* 10 min rollup; default 2 years */
	/* ended jobs, their samples and events; default 90 days */
	int64_t jobs_ms;
};

#define CONFIG_GROUP_NAME_MAX 32
#define CONFIG_MAX_GROUPS 64

struct config {
	char socket_path[1024];
	char db_path[1024];
	char state_dir[1024]; /* job logs and monitor status files */
	/* --log-file: the log, reopened at SIGUSR1 ("": stderr) */
	char log_file[1024];
	/* --pid-file: the daemon's pid while it runs ("": none) */
	char pid_file[1024];
	/* job logs, when not in <state_dir>/jobs: another file system */
	char log_dir[1024];
	char proc_root[1024]; /* "" for the real /proc */
	int64_t interval_ms;  /* sample interval, default 500 */
	struct store_retention retention;
	double psi_warn, psi_critical;

	/* limits (root exempt from per-uid ones); PROTOCOL.md lists them */
	size_t max_line_bytes;    /* default 4 MiB */
	int max_clients;          /* default 4096 */
	int max_clients_per_uid;  /* default 256 */
	int max_queued_per_uid;   /* default 1000 */
	int max_deferred_per_uid; /* wait and logs answers owed, 4096 */
	int max_meters_per_uid;   /* process trees metered, 16 */
	size_t max_argv_bytes;    /* default 256 KiB */
	size_t max_env_bytes;     /* default 1 MiB */
	/* what one uid's jobs may hold in the database, ended ones
	 * included: bytes (store_job_bytes), default 256 MiB; ended jobs,
	 * default 10000. The oldest ended go first (docs/storage.md). */
	uint64_t max_stored_bytes_per_uid;
	int max_ended_jobs_per_uid;
	uint64_t max_log_bytes; /* a detached job's log, 1 GiB: tail kept */
	/* all of one uid's logs, 4 GiB: past it its logs stop growing */
	uint64_t max_log_bytes_per_uid;
	/* Free space on the database's file system below which only root's
	 * (and the daemon's user's) submits are taken; 0: no floor.
	 * min_free_disk_auto: min(1 GiB, 5 % of the file system). */
	uint64_t min_free_disk_bytes;
	int min_free_disk_auto;
	int64_t hello_timeout_ms; /* default 10000 */

	/* job defaults */
	double default_wait_free_pct;       /* 0 */
	uint64_t default_swap_budget_bytes; /* 0 = none */
	int64_t grace_ms;         /* SIGTERM -> SIGKILL, default 10000 */
	int64_t settle_ms;        /* default 30000 */
	double settle_growth_pct; /* default 1 */
	int settle_samples;       /* default 3 */
	int max_running;          /* 0 = no limit */
	/* a job's on-end command (docs/jobs.md, "When a job ends"): how long
	 * it may run, 60 s; how many of one uid's run at once, 4 */
	int64_t on_end_timeout_ms;
	int max_on_end_per_uid;
	/* group.NAME.max_running: jobs of one group holding memory at once
	 * (docs/jobs.md, "Groups"); a group not listed has no limit */
	struct config_group {
		char name[CONFIG_GROUP_NAME_MAX + 1];
		int max_running;
	} groups[CONFIG_MAX_GROUPS];
	int ngroups;

	/* queue fairness (docs/jobs.md, "Queue order") */
	int admin_group_set;      /* admin_group given */
	gid_t admin_gid;          /* its members may set priorities */
	double max_wait_free_pct; /* highest wait_free_pct, default 95 */
	int64_t hol_bound_ms;     /* an unprivileged head's claim, 600 s */

	/* learned peaks (docs/jobs.md, "Learned peaks"): on, and how many
	 * of the last runs of a name count (1..CONFIG_LEARN_RUNS_MAX) */
	int learn;      /* default 1 */
	int learn_runs; /* default 5 */
	/* adaptive sampling (docs/jobs.md, "Sampling rate"): the fast
	 * interval (0: never fast; above interval_ms: interval_ms) and the
	 * share of a budget past which a job's growth makes it fast */
	int64_t fast_interval_ms; /* default 100 */
	double fast_swap_pct;     /* default 25 */

	int verbose;
	int foreground;
	/* hold off idle sleep while a job holds memory (platform.h), 1 */
	int keep_awake;
	/* and while a queued job could start, for at most this long since
	 * the last admission (awake.h), 12 h; 0: never for the queue */
	int64_t keep_awake_queue_ms;

	int system;              /* root daemon: world-connectable socket */
	char config_path[1024];  /* --config FILE, "" when none */
	size_t max_unread_bytes; /* output queued for one client, 16 MiB */

	/* read buffers (partial lines) of one uid's connections, 64 MiB */
	size_t max_input_bytes_per_uid;
	size_t max_unread_bytes_per_uid; /* output queued for one uid, 16 MiB */
};

/* Jobs keep this many recent footprints per job to tell when it settled
 * (jobs-internal.h), so settle_samples can be no larger. */
#define CONFIG_SETTLE_SAMPLES_MAX 16
/* As many runs as the store keeps of a name (STORE_LEARN_RUNS_MAX). */
#define CONFIG_LEARN_RUNS_MAX 20

void config_defaults(struct config *cfg, int system);
/* Is name a job group's name: 1-32 of A-Z a-z 0-9 _ -? */
int config_group_name_ok(const char *name);
/* The running limit of group name (0: none). */
int config_group_max_running(const struct config *cfg, const char *name);
/* Parse argv (and --config FILE) into cfg. Returns 0 to run, 1 when it
 * printed --help, --version or --print-config, -EINVAL with cause on bad
 * input. */
int config_parse(struct config *cfg, int argc, char **argv, char *cause,
                 size_t causelen);
/* SIGHUP: parse argv and the config file again into a fresh config and copy
 * what can change at run time into cfg; *restart_needed is set when an
 * option that only takes effect at start-up changed. */
int config_reload(struct config *cfg, int argc, char **argv,
                  int *restart_needed, char *cause, size_t causelen);
/* Every setting as a config file line, each after its one line of help:
 * what --print-config prints. */
void config_print(const struct config *cfg, FILE *f);
/* info's "defaults" and "limits": the settings that have a key there. */
int config_info(const struct config *cfg, struct cJSON *defaults,
                struct cJSON *limits);

struct server;
struct sampler;
struct jobs;
struct notify;
struct tick;
struct answers;

/* The tick's last keep-awake decision (awake.c's struct awake_out), kept
 * here for info: the front reads it without calling up into the tick. */
struct daemon_awake {
	int hold;         /* enum awake_hold */
	int64_t until_ms; /* see struct awake_out */
	const char *why;  /* static */
};

struct daemon {
	uv_loop_t *loop;
	struct config cfg;
	struct store *store;
	struct server *server;
	struct sampler *sampler;
	struct tick *tick;
	struct daemon_awake awake;
	struct jobs *jobs;
	struct notify *notify;
	struct answers *answers; /* large answers being written (answers.c) */
	struct sys_sample last;  /* latest system sample */
	int have_last;
	/* Why the sampler is fast (jobs_fast_reason), NULL at the normal
	 * interval: info shows it. */
	const char *fast_reason;
	int64_t started_ms;
	int stopping;
	/* The client cap the descriptor limit allows: at most max_clients. */
	int fd_max_clients;
	/* The socket file and the lock beside it (server.c): held from
	 * server_start until server_release, after the database is closed,
	 * so a daemon started meanwhile waits for this one's last write. */
	int sock_lock_fd; /* -1: none */
	/* The database's file system, looked at each tick (tick.c): free
	 * bytes, the floor in force, and whether free is below it. */
	uint64_t disk_free_bytes, disk_floor_bytes;
	int disk_low;
	dev_t sock_dev;
	ino_t sock_ino;
};

#endif
