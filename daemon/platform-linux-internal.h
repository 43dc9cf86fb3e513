/*
 * What platform-linux.c (system memory, pressure, users, paths) and
 * platform-linux-proc.c (processes: their memory, start times, trees)
 * share: the state kept between samples, opened once at platform_init.
 */
#ifndef SL_PLATFORM_LINUX_INTERNAL_H
#define SL_PLATFORM_LINUX_INTERNAL_H

#include <dirent.h>
#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

#include "platform.h"
#include "procfs.h"

/*
 * One system file kept open. Under a fixture root the file may be replaced
 * (a test writes a new one and renames it over the old) or appear later,
 * so there the path is checked with stat() each time and reopened when
 * it names another file; /proc files never change identity.
 */
struct sysfile {
	char path[PATH_MAX];
	int fd;
	dev_t dev;
	ino_t ino;
};

/*
 * A process as the last table scan saw it. The inode number of its /proc
 * entry changes when the pid is reused (a new process gets a new inode),
 * so an entry whose inode is unchanged need not be read again; it is
 * re-read anyway after SCAN_STALE_MS (spread over pids so the re-reads do
 * not all fall in one scan), which bounds how long a changed parent or
 * group (setpgid by a stranger, a subreaper) can go unseen.
 */
struct scan_entry {
	pid_t pid, ppid, pgrp;
	ino_t ino;
	int64_t read_ms;
};
#define SCAN_STALE_MS 10000

/*
 * An open /proc/PID/status of a followed process, re-read with pread()
 * each sample. The descriptor is tied to that very process, not to its
 * number: once it exits, reads fail with ESRCH even if the pid is reused,
 * so the start time read when it was opened stays valid for as long as
 * reads succeed. Descriptors unused for STATUS_IDLE_MS are closed.
 *
 * The kernel takes about 10 us to generate a status file, statm 1.5 us
 * (bench/bench_platform.c). statm's seven counters (size, resident,
 * file+shmem, text, data) move with every page the process maps, faults
 * in, swaps out or in, or unmaps, and drop to zero when it exits, so for
 * platform_proc_sample an unchanged statm means the last status reading
 * still holds; it is trusted for at most STATUS_REUSE_MS, which bounds
 * what statm cannot see (a new group or uid, swap freed by madvise).
 */
struct status_fd {
	pid_t pid;
	int fd;
	uint64_t start_time;
	int64_t used_ms;
	int statm_fd;    /* -1 until platform_proc_sample opens it */
	int64_t read_ms; /* when last was read from status; 0: never */
	struct proc_info last;
	char statm[80]; /* statm as read just before last, NUL-terminated */
};
#define STATUS_FDS 256
#define STATUS_IDLE_MS 5000
#define STATUS_REUSE_MS 2000

struct platform_linux {
	int initialised;
	int fixture_root; /* proc_root is not the real /proc */
	double psi_warn;
	double psi_critical;
	struct sysfile meminfo;
	struct sysfile psi;
	/* Under a fixture root: <root>/meminfo.once, read by the next system
	 * sample instead of meminfo and then removed (one reading that the
	 * confirming platform_swap_used does not see), and <root>/keep-awake,
	 * where platform_keep_awake writes its state. docs/daemon.md. */
	char once_path[PATH_MAX];
	char awake_path[PATH_MAX];
	int awake; /* as last written there; -1: not yet */
	/* and <root>/peer-groups-max: platform_peer_groups_max's answer */
	char groups_max_path[PATH_MAX];
	double psi_avg10;   /* as last read; -1: none */
	int64_t psi_due_ms; /* when the real file is read next */
	int proc_fd;        /* the real /proc, for per-process openat() */
	DIR *proc_dir; /* the real /proc, rescanned by platform_list_tree */
	/* What platform_list_tree learnt of each pid at its last scan
	 * (sorted by pid), and the table being built by the current one. */
	struct scan_entry *scan, *scan_next;
	size_t nscan, scan_cap;
	int loadavg_fd;      /* /proc/loadavg, for the last pid created */
	pid_t scan_last_pid; /* as read just before the last listing */
	int64_t scan_listed_ms;
	/* Open /proc/PID/status files of the processes being followed. */
	struct status_fd status[STATUS_FDS];
	size_t nstatus;
	int64_t status_swept_ms;
	/* Where status files are read: most are about 1.5 KiB, but the
	 * Groups line of a user in many groups can make one far longer. */
	struct procfs_buf status_buf;
};
extern struct platform_linux PL;

/* CLOCK_MONOTONIC_COARSE in ms: a vDSO read, for cache ages. */
int64_t linux_coarse_ms(void);
/* Close the i-th open status file; the last takes its place. */
void linux_status_drop(size_t i);

#endif
