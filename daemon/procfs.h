/*
 * Parsers for the few Linux /proc files stageload reads. Pure text parsing:
 * no Linux headers, so this compiles and is unit-tested anywhere. Every
 * parser takes a buffer and its length (no NUL terminator needed) and never
 * reads past it; the procfs_read_* variants take the directory that plays
 * the role of /proc, so tests point them at fixture files.
 *
 * All functions return 0 or a negative errno: -EINVAL for malformed or
 * truncated text, -ERANGE for a value that does not fit, and for the
 * readers whatever open/read failed with (-ENOENT, -ESRCH, ...). A size
 * is out of range above PROCFS_MAX_BYTES.
 * docs/metrics.md says which kernel field each value comes from.
 */
#ifndef SL_PROCFS_H
#define SL_PROCFS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The largest size the protocol carries exactly: sizes travel as JSON
 * numbers, exact up to 2^53 (PROTOCOL.md). */
#define PROCFS_MAX_BYTES (UINT64_C(1) << 53)

/*
 * <dir>/meminfo. MemTotal, MemAvailable (Linux 3.14+), SwapTotal and
 * SwapFree are required: the kernel always prints them (swap as 0 kB on a
 * machine without), so a file without one was cut short and is -EINVAL.
 * Values must carry the "kB" unit, so a line cut short by a truncated file
 * is rejected rather than read as a smaller number.
 */
struct procfs_meminfo {
	uint64_t mem_total_bytes;
	uint64_t mem_available_bytes;
	uint64_t swap_total_bytes;
	uint64_t swap_free_bytes;
};

int procfs_parse_meminfo(const char *buf, size_t len,
                         struct procfs_meminfo *mi);
int procfs_read_meminfo(const char *dir, struct procfs_meminfo *mi);

/*
 * <dir>/pressure/memory: the avg10 value of the "some" line, a percentage
 * 0-100. The number must be followed by a blank or a newline (the kernel
 * always prints avg60 after it), so a truncated file is -EINVAL.
 */
int procfs_parse_psi_some_avg10(const char *buf, size_t len, double *avg10);
int procfs_read_psi_some_avg10(const char *dir, double *avg10);

/* Which optional fields procfs_parse_status found. */
#define PROCFS_STATUS_RSS_ANON 0x1
#define PROCFS_STATUS_RSS_SHMEM 0x2
#define PROCFS_STATUS_VM_SWAP 0x4
#define PROCFS_STATUS_STATE 0x8
#define PROCFS_STATUS_NSPGID 0x10
#define PROCFS_STATUS_ALL 0x1f

/*
 * <dir>/<pid>/status. PPid and Uid (the real uid, first of the four) are
 * required. RssAnon, RssShmem and VmSwap are absent for kernel threads and
 * zombies (no address space): they then read as 0 and their bit in
 * `present` is clear.
 */
struct procfs_status {
	pid_t ppid;
	uid_t uid;
	uint64_t rss_anon_bytes;
	uint64_t rss_shmem_bytes;
	uint64_t swap_bytes;
	char state;       /* State: R, S, D, Z, ...; 0 when absent */
	pid_t nspgid;     /* NSpgid, first value (Linux 4.1+): the process
	                     group as /proc's namespace sees it; 0 when absent */
	unsigned present; /* PROCFS_STATUS_* */
};

int procfs_parse_status(const char *buf, size_t len, struct procfs_status *st);
int procfs_read_status(const char *dir, pid_t pid, struct procfs_status *st);

/*
 * <dir>/<pid>/stat. The command name (field 2) may hold blanks and
 * parentheses, so fields are counted from the last ')' in the text.
 * start_time is field 22, in clock ticks since boot: with the pid it
 * names one process for the life of the system.
 */
struct procfs_stat {
	pid_t pid;
	char state; /* R, S, D, Z, ... */
	pid_t ppid;
	pid_t pgrp;
	pid_t session;
	uint64_t start_time;
};

int procfs_parse_stat(const char *buf, size_t len, struct procfs_stat *st);
int procfs_read_stat(const char *dir, pid_t pid, struct procfs_stat *st);

/*
 * <dir>/loadavg: the last field, the pid most recently allocated in the
 * reader's pid namespace. It moves whenever a process or thread is
 * created, so an unchanged value means no new process since it was read.
 */
int procfs_parse_loadavg_last_pid(const char *buf, size_t len, pid_t *pid);

/*
 * Read a whole file into buf, NUL-terminated, and return its length. A
 * file that does not fit in len - 1 bytes is -EFBIG: the parsers accept a
 * file that stops early (a kernel thread's status has no memory lines), so
 * a cut one must never reach them. procfs_pread re-reads an open file from
 * offset 0, which makes the kernel generate a /proc file afresh; a read
 * error that means the process has exited is -ESRCH. Shared by the readers
 * above and platform-linux.c.
 */
ssize_t procfs_read_file(const char *path, char *buf, size_t len);
ssize_t procfs_pread(int fd, char *buf, size_t len);

/*
 * A read buffer for files whose size depends on the process: status holds
 * one Groups entry per supplementary group (up to 65536 of them, some
 * 700 KiB), before the memory lines. It starts at PROCFS_BUF_INITIAL bytes
 * and doubles whenever a file fills it, up to PROCFS_BUF_MAX, and is kept,
 * so reading the same processes again allocates nothing. Start from
 * {NULL, 0}.
 */
struct procfs_buf {
	char *data;
	size_t size;
};
#define PROCFS_BUF_INITIAL 16384
#define PROCFS_BUF_MAX (1 << 20)

/* procfs_pread into b, grown as needed; -EFBIG beyond PROCFS_BUF_MAX. */
ssize_t procfs_pread_buf(int fd, struct procfs_buf *b);
void procfs_buf_free(struct procfs_buf *b);

#endif
