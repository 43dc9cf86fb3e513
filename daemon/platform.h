/*
 * The operating-system boundary. One file per OS implements it
 * (platform-linux.c, platform-darwin.c), chosen by CMake; no other daemon
 * file may test for an OS. Functions return 0 or a negative errno; where a
 * cause is taken, a readable reason is written to it on failure.
 */
#ifndef SL_PLATFORM_H
#define SL_PLATFORM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "names.h"

/* The values and names are proto/names.h's. */
enum pressure_level {
	PRESSURE_UNKNOWN = NAMES_PRESSURE_UNKNOWN,
	PRESSURE_NORMAL = NAMES_PRESSURE_NORMAL,
	PRESSURE_WARN = NAMES_PRESSURE_WARN,
	PRESSURE_CRITICAL = NAMES_PRESSURE_CRITICAL,
};

/* "normal", "warn", "critical" or "unknown": the protocol's names. */
static inline const char *
pressure_name(enum pressure_level p)
{
	return names_pressure_name((int)p);
}

/* One system-wide sample; docs/metrics.md says where each field comes from. */
struct sys_sample {
	int64_t ts_ms; /* wall clock, ms since the epoch */
	uint64_t total_bytes;
	uint64_t available_bytes;
	double free_pct; /* 0-100 */
	uint64_t swap_total_bytes;
	uint64_t swap_used_bytes;
	enum pressure_level pressure;
	double psi_some_avg10;     /* Linux PSI; -1 when not available */
	uint64_t compressed_bytes; /* macOS compressor; 0 elsewhere */
	uint64_t wired_bytes;      /* macOS; 0 elsewhere */
};

/* One process, as needed to follow and measure a job's tree. */
/* 1 where a process's own swap is measured (proc_info's swap_bytes:
 * Linux VmSwap), so a job's swap can be told from the system's. */
#ifdef __linux__
#define PLATFORM_JOB_SWAP 1
#else
#define PLATFORM_JOB_SWAP 0
#endif

struct proc_info {
	pid_t pid;
	pid_t ppid;
	pid_t pgid;
	uid_t uid;           /* real uid */
	uint64_t start_time; /* opaque, stable for the life of the pid */
	/* Linux RssAnon + RssShmem; macOS phys_footprint */
	uint64_t footprint_bytes;
	uint64_t swap_bytes; /* Linux VmSwap; 0 on macOS */
};

struct platform_config {
	/* Linux: where meminfo and pressure/memory are read; NULL for /proc.
	 * Must be NULL elsewhere. */
	const char *proc_root;
	/* PSI some avg10 thresholds, 0-100; a negative one takes its
	 * default (10 and 40). Linux only; ignored elsewhere. */
	double psi_warn;
	double psi_critical;
};

int platform_init(const struct platform_config *cfg, char *cause,
                  size_t causelen);
void platform_shutdown(void);

/* Fill s from the system (ts_ms is set by the caller). */
int platform_sys_sample(struct sys_sample *s, char *cause, size_t causelen);

/*
 * Swap used now, read again on its own, by the same rule as
 * platform_sys_sample's swap_used_bytes. Enforcement confirms a breach
 * with it in the same tick before any signal (docs/jobs.md), since one
 * reading can be wrong (docs/macos.md: vm.swapusage is computed from
 * unlocked reads). On Linux under a fixture proc root it reads meminfo,
 * never meminfo.once (docs/daemon.md).
 */
int platform_swap_used(uint64_t *used_bytes, char *cause, size_t causelen);

/*
 * Keep the machine from idle sleep: hold PLATFORM_AWAKE_JOBS while a job
 * holds memory, on battery too; PLATFORM_AWAKE_QUEUE while queued jobs
 * wait, on AC power only; 0 to let it sleep again (macOS:
 * /usr/bin/caffeinate -i or -s -w <daemon pid>; Linux: nothing, except
 * that under a fixture proc root the state is written to <root>/keep-awake
 * for tests: "held", "held-queue" or "released"). Idempotent; called from
 * the loop, never blocks.
 */
#define PLATFORM_AWAKE_JOBS 1
#define PLATFORM_AWAKE_QUEUE 2
int platform_keep_awake(int hold, char *cause, size_t causelen);

/*
 * In a new session's leader, still as root, before it becomes the user:
 * make user the session's login name, what getlogin() answers in the job
 * (macOS setlogin(2); nothing on Linux, where getlogin reads utmp). Called
 * between fork and exec: only system calls.
 */
int platform_session_login(const char *user);

/*
 * A spawn step (chdir, exec) failed with err on path: a readable hint
 * about why, in buf ("" when there is nothing to add). On macOS an EPERM
 * on a privacy-protected folder (TCC) names the cause and the ways out.
 * home is the job's $HOME (NULL: unknown), where those folders may be.
 */
void platform_spawn_hint(int err, const char *path, const char *home, char *buf,
                         size_t len);

/*
 * A detached job exited non-zero: a readable hint from the end of its log
 * (text[0..len), not NUL-terminated) about why, in buf ("" when none). On
 * macOS a line saying "Operation not permitted" about a path in a
 * privacy-protected folder (TCC) names the path, the cause and the ways
 * out: the usual failure of a job reading a model in ~/Documents. home as
 * for platform_spawn_hint.
 */
void platform_log_hint(const char *text, size_t len, const char *home,
                       char *buf, size_t buflen);

/* Information about one live process; -ESRCH when it does not exist. Never
 * reads proc_root: jobs are always real processes. A zombie (exited, not
 * yet reaped) is -ESRCH here, though its start time still reads. */
int platform_proc_info(pid_t pid, struct proc_info *pi);

/*
 * platform_proc_info for sampling a followed process every interval. It
 * may answer from an earlier reading of at most 2 s ago when a cheaper
 * test shows the process's memory unchanged since: the pid and start time
 * are always checked, footprint and swap follow memory, while ppid, pgid
 * and uid may be that old. Permission checks and kills use
 * platform_proc_info.
 */
int platform_proc_sample(pid_t pid, struct proc_info *pi);

/* Only the start time (cheaper), to tell a live pid from a recycled one. */
int platform_proc_start_time(pid_t pid, uint64_t *start_time);

/*
 * Every live process whose parent is in parents[0..nparents) or whose
 * process group is pgid (pgid <= 0: ignored). Writes at most max pids to
 * out and returns how many it found (possibly > max), or a negative errno.
 */
int platform_list_tree(const pid_t *parents, size_t nparents, pid_t pgid,
                       pid_t *out, size_t max);

/*
 * The connected peer of a Unix socket: uid and gid as the kernel recorded
 * them at connect time. pid is 0 when unknown, and only ever logged: on
 * macOS it names the last process that used the socket, not the one that
 * connected (docs/macos.md), so nothing is decided on it.
 */
int platform_peer_cred(int fd, uid_t *uid, gid_t *gid, pid_t *pid);

/*
 * The group list of the connected peer of a Unix socket, as the kernel
 * recorded it when the peer connected: what getgroups() answered in the
 * peer, and what setgroups() takes to give a process the same groups
 * (Linux SO_PEERGROUPS: the supplementary groups, at most 65536; macOS
 * LOCAL_PEERCRED: cr_groups, the egid first, at most 16). A malloc'd
 * array (free it even when *ngroups is 0). -ENOPROTOOPT when the system
 * cannot tell (Linux before 4.13).
 */
int platform_peer_groups(int fd, gid_t **groups, int *ngroups);

/*
 * The most groups platform_peer_groups can report, when the system cuts
 * the list there (macOS: 16, the size of xucred's cr_groups; a peer with
 * that many may have more it cannot pass on), or 0 when it reports every
 * group (Linux). Under a Linux fixture proc root, the number in
 * <root>/peer-groups-max when that file exists, read at each call, for
 * tests.
 */
int platform_peer_groups_max(void);

/* Supplementary groups of user name (with primary gid): malloc'd array. */
int platform_user_groups(const char *user, gid_t gid, gid_t **groups,
                         int *ngroups);

/* Give memory the allocator holds free back to the system (glibc keeps
 * the heap's freed top and arenas; macOS's zones keep theirs), so that a
 * flood of clients does not leave the daemon at its peak. It walks the
 * heap: call it rarely, never on the enforcement path. */
void platform_trim_memory(void);

/* Default paths for this OS: system (root) or per-user. */
int platform_default_socket(int system, char *buf, size_t len);
int platform_default_db(int system, char *buf, size_t len);

#endif
