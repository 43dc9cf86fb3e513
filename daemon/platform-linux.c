/*
 * platform.h on Linux. System memory comes from <proc-root>/meminfo and
 * <proc-root>/pressure/memory; everything about processes always comes
 * from the real /proc, so a fixture proc root can drive admission and
 * breaches while jobs stay real processes. docs/metrics.md maps every
 * field to its kernel source.
 *
 * The sample path is kept cheap: both system files stay open and are
 * re-read with pread() from offset 0, which makes the kernel regenerate
 * them (seq_file), into static buffers; nothing is allocated per sample.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "platform.h"
#include "procfs.h"
#include "socket-trust.h"

#define PSI_WARN_DEFAULT 10.0
#define PSI_CRITICAL_DEFAULT 40.0

/*
 * The kernel recomputes the PSI averages once per 2 s period (PSI_FREQ in
 * kernel/sched/psi.c), so reading /proc/pressure/memory more often returns
 * the same avg10, at about 10 us a read. On the real /proc it is read once
 * per period and the value carried by the samples in between. A fixture
 * file changes whenever a test writes it: there it is read every sample.
 */
#define PSI_PERIOD_MS 2000

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

static struct {
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
} P = {
    .proc_fd = -1, .loadavg_fd = -1, .meminfo = {.fd = -1}, .psi = {.fd = -1}};

static void
sysfile_close(struct sysfile *f)
{
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
}

static int
sysfile_open(struct sysfile *f)
{
	struct stat sb;

	if ((f->fd = open(f->path, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	if (fstat(f->fd, &sb) < 0) {
		int rc = -errno;
		sysfile_close(f);
		return rc;
	}
	f->dev = sb.st_dev;
	f->ino = sb.st_ino;
	return 0;
}

/* Reads the whole file into buf (NUL-terminated); returns its length, or
 * -EFBIG when it does not fit. */
static ssize_t
sysfile_read(struct sysfile *f, char *buf, size_t len)
{
	int rc;

	if (P.fixture_root) {
		struct stat sb;

		if (stat(f->path, &sb) < 0) {
			rc = -errno;
			sysfile_close(f);
			return rc;
		}
		if (f->fd >= 0 && (sb.st_dev != f->dev || sb.st_ino != f->ino))
			sysfile_close(f);
	}
	if (f->fd < 0 && (rc = sysfile_open(f)) != 0)
		return rc;
	return procfs_pread(f->fd, buf, len);
}

static int
set_path(char *dst, size_t len, const char *root, const char *rel)
{
	int n = snprintf(dst, len, "%s/%s", root, rel);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int
platform_init(const struct platform_config *cfg, char *cause, size_t causelen)
{
	const char *root = "/proc";
	struct stat sb;
	int rc;

	if (P.initialised)
		platform_shutdown();
	P.psi_warn = PSI_WARN_DEFAULT;
	P.psi_critical = PSI_CRITICAL_DEFAULT;
	P.fixture_root = 0;
	P.awake = -1;
	if (cfg != NULL) {
		if (cfg->proc_root != NULL && cfg->proc_root[0] != '\0') {
			root = cfg->proc_root;
			P.fixture_root = strcmp(root, "/proc") != 0;
		}
		/* 0 is a threshold (every pressure counts); only a
		 * negative one asks for the default. */
		if (cfg->psi_warn >= 0)
			P.psi_warn = cfg->psi_warn;
		if (cfg->psi_critical >= 0)
			P.psi_critical = cfg->psi_critical;
	}
	if (P.psi_warn > P.psi_critical) {
		snprintf(cause, causelen,
		         "PSI warn threshold %g is above the critical one %g",
		         P.psi_warn, P.psi_critical);
		return -EINVAL;
	}
	if (set_path(P.meminfo.path, sizeof(P.meminfo.path), root, "meminfo") !=
	        0 ||
	    set_path(P.psi.path, sizeof(P.psi.path), root, "pressure/memory") !=
	        0 ||
	    set_path(P.once_path, sizeof(P.once_path), root, "meminfo.once") !=
	        0 ||
	    set_path(P.awake_path, sizeof(P.awake_path), root, "keep-awake") !=
	        0 ||
	    set_path(P.groups_max_path, sizeof(P.groups_max_path), root,
	             "peer-groups-max") != 0) {
		snprintf(cause, causelen, "proc root too long: %s", root);
		return -ENAMETOOLONG;
	}
	if (stat(root, &sb) < 0 || !S_ISDIR(sb.st_mode)) {
		rc = stat(root, &sb) < 0 ? -errno : -ENOTDIR;
		snprintf(cause, causelen, "proc root %s: %s", root,
		         strerror(-rc));
		return rc;
	}
	/* meminfo may be missing at start under a fixture root (a test may
	 * write it later); then the first sample reports it. */
	if ((rc = sysfile_open(&P.meminfo)) != 0 && !P.fixture_root) {
		snprintf(cause, causelen, "%s: %s", P.meminfo.path,
		         strerror(-rc));
		return rc;
	}
	(void)sysfile_open(&P.psi); /* optional: CONFIG_PSI */
	P.psi_due_ms = 0;
	if ((P.proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) <
	    0) {
		rc = -errno;
		snprintf(cause, causelen, "/proc: %s", strerror(errno));
		platform_shutdown();
		return rc;
	}
	P.loadavg_fd = openat(P.proc_fd, "loadavg", O_RDONLY | O_CLOEXEC);
	P.scan_last_pid = -1;
	if ((P.proc_dir = opendir("/proc")) == NULL) {
		rc = -errno;
		snprintf(cause, causelen, "/proc: %s", strerror(errno));
		platform_shutdown();
		return rc;
	}
	P.initialised = 1;
	return 0;
}

static void
status_drop(size_t i)
{
	close(P.status[i].fd);
	if (P.status[i].statm_fd >= 0)
		close(P.status[i].statm_fd);
	P.status[i] = P.status[--P.nstatus];
}

void
platform_shutdown(void)
{
	sysfile_close(&P.meminfo);
	sysfile_close(&P.psi);
	if (P.proc_fd >= 0)
		close(P.proc_fd);
	P.proc_fd = -1;
	if (P.loadavg_fd >= 0)
		close(P.loadavg_fd);
	P.loadavg_fd = -1;
	if (P.proc_dir != NULL)
		closedir(P.proc_dir);
	P.proc_dir = NULL;
	free(P.scan);
	free(P.scan_next);
	P.scan = P.scan_next = NULL;
	P.nscan = P.scan_cap = 0;
	while (P.nstatus > 0)
		status_drop(P.nstatus - 1);
	procfs_buf_free(&P.status_buf);
	P.initialised = 0;
}

static enum pressure_level
psi_level(double avg10)
{
	if (avg10 < P.psi_warn)
		return PRESSURE_NORMAL;
	if (avg10 < P.psi_critical)
		return PRESSURE_WARN;
	return PRESSURE_CRITICAL;
}

static int64_t
now_ms(void)
{
	struct timespec ts;

	/* The coarse clock is a vDSO read; tick resolution is plenty for
	 * cache ages. */
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* PSI some avg10 into P.psi_avg10, -1 when there is none. */
static void
psi_read(void)
{
	char buf[512];
	double avg10;
	ssize_t n;

	P.psi_avg10 = -1;
	if (P.psi.fd < 0 && !P.fixture_root)
		return;
	n = sysfile_read(&P.psi, buf, sizeof(buf));
	if (n == -EOPNOTSUPP && !P.fixture_root)
		sysfile_close(&P.psi); /* psi=0: it will not change */
	if (n >= 0 && procfs_parse_psi_some_avg10(buf, (size_t)n, &avg10) == 0)
		P.psi_avg10 = avg10;
}

/*
 * Under a fixture root, a meminfo.once that exists is read in place of
 * meminfo, once: it is removed after reading (a test's one odd reading).
 * 0 when there was none, 1 when buf holds it, or a negative errno.
 */
static ssize_t
meminfo_once(char *buf, size_t len)
{
	ssize_t n;
	int fd;

	if (!P.fixture_root)
		return 0;
	if ((fd = open(P.once_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0)
		return errno == ENOENT ? 0 : -errno;
	n = procfs_pread(fd, buf, len);
	close(fd);
	(void)unlink(P.once_path);
	return n < 0 ? n : n + 1; /* + 1: an empty file is still one */
}

/* meminfo (or, with once, a fixture's meminfo.once) parsed into mi. */
static int
meminfo_read(int once, struct procfs_meminfo *mi, char *cause, size_t causelen)
{
	/* meminfo is about 1.5 KiB; one that does not fit is an error
	 * (-EFBIG), never parsed cut. */
	static char buf[8192];
	const char *path = P.meminfo.path;
	ssize_t n = 0;
	int rc;

	if (!P.initialised) {
		snprintf(cause, causelen, "platform not initialised");
		return -EINVAL;
	}
	if (once && (n = meminfo_once(buf, sizeof(buf))) != 0) {
		path = P.once_path;
		if (n > 0)
			n--;
	} else
		n = sysfile_read(&P.meminfo, buf, sizeof(buf));
	if (n < 0) {
		snprintf(cause, causelen, "%s: %s", path, strerror((int)-n));
		return (int)n;
	}
	if ((rc = procfs_parse_meminfo(buf, (size_t)n, mi)) != 0) {
		snprintf(cause, causelen, "%s: %s", path,
		         rc == -ERANGE ? "value out of range"
		                       : "malformed or truncated");
		return rc;
	}
	return 0;
}

static uint64_t
meminfo_swap_used(const struct procfs_meminfo *mi)
{
	return mi->swap_free_bytes < mi->swap_total_bytes
	           ? mi->swap_total_bytes - mi->swap_free_bytes
	           : 0;
}

int
platform_swap_used(uint64_t *used_bytes, char *cause, size_t causelen)
{
	struct procfs_meminfo mi;
	int rc;

	if ((rc = meminfo_read(0, &mi, cause, causelen)) != 0)
		return rc;
	*used_bytes = meminfo_swap_used(&mi);
	return 0;
}

int
platform_sys_sample(struct sys_sample *s, char *cause, size_t causelen)
{
	struct procfs_meminfo mi;
	int64_t now;
	int rc;

	if ((rc = meminfo_read(1, &mi, cause, causelen)) != 0)
		return rc;
	s->total_bytes = mi.mem_total_bytes;
	/* MemAvailable is an estimate and may, briefly, exceed MemTotal. */
	s->available_bytes = mi.mem_available_bytes < mi.mem_total_bytes
	                         ? mi.mem_available_bytes
	                         : mi.mem_total_bytes;
	s->free_pct =
	    100.0 * (double)s->available_bytes / (double)s->total_bytes;
	s->swap_total_bytes = mi.swap_total_bytes;
	s->swap_used_bytes = meminfo_swap_used(&mi);
	s->compressed_bytes = 0;
	s->wired_bytes = 0;

	/* No PSI (kernel without CONFIG_PSI, or booted psi=0: the file then
	 * fails to read with EOPNOTSUPP) is not an error: pressure is
	 * unknown rather than guessed from MemAvailable. */
	now = now_ms();
	if (P.fixture_root || now >= P.psi_due_ms) {
		psi_read();
		P.psi_due_ms = now + PSI_PERIOD_MS;
	}
	s->pressure =
	    P.psi_avg10 >= 0 ? psi_level(P.psi_avg10) : PRESSURE_UNKNOWN;
	s->psi_some_avg10 = P.psi_avg10;
	return 0;
}

static int
open_pid_file(pid_t pid, const char *name)
{
	char rel[64];
	int fd;

	if (P.proc_fd < 0)
		return -EINVAL;
	snprintf(rel, sizeof(rel), "%d/%s", (int)pid, name);
	if ((fd = openat(P.proc_fd, rel, O_RDONLY | O_CLOEXEC)) < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	return fd;
}

/* Reads /proc/<pid>/<name> through the kept /proc descriptor. */
static ssize_t
read_pid_file(pid_t pid, const char *name, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	if ((fd = open_pid_file(pid, name)) < 0)
		return fd;
	n = procfs_pread(fd, buf, len);
	close(fd);
	return n;
}

static int
read_stat(pid_t pid, struct procfs_stat *st)
{
	char buf[1024];
	ssize_t n;

	if (pid <= 0)
		return -EINVAL;
	if ((n = read_pid_file(pid, "stat", buf, sizeof(buf))) < 0)
		return (int)n;
	if (n == 0)
		return -ESRCH;
	return procfs_parse_stat(buf, (size_t)n, st);
}

static struct status_fd *
status_find(pid_t pid, int64_t now)
{
	size_t i;

	/* Close what nobody asked for lately (a job ended, a tree was
	 * freed); checked about once a second. */
	if (now - P.status_swept_ms >= 1000) {
		for (i = 0; i < P.nstatus;) {
			if (now - P.status[i].used_ms >= STATUS_IDLE_MS)
				status_drop(i);
			else
				i++;
		}
		P.status_swept_ms = now;
	}
	for (i = 0; i < P.nstatus; i++)
		if (P.status[i].pid == pid)
			return &P.status[i];
	return NULL;
}

/*
 * First sight of a process: open its status (which pins the process),
 * then read its stat for the start time. If the status read that follows
 * succeeds, the process was alive after the stat read, so both describe
 * the same process and not a successor with the same number.
 */
static int
status_open(pid_t pid, int64_t now, struct status_fd *spare,
            struct status_fd **out)
{
	struct procfs_stat st;
	int fd, rc;

	if ((fd = open_pid_file(pid, "status")) < 0)
		return fd;
	if ((rc = read_stat(pid, &st)) != 0) {
		close(fd);
		return rc;
	}
	if (P.nstatus == STATUS_FDS) {
		/* Following more processes than descriptors kept: this one
		 * is read the slow way, opened and closed each time. */
		*spare = (struct status_fd){.pid = pid,
		                            .fd = fd,
		                            .start_time = st.start_time,
		                            .used_ms = now,
		                            .statm_fd = -1};
		*out = spare;
		return 0;
	}
	P.status[P.nstatus] = (struct status_fd){.pid = pid,
	                                         .fd = fd,
	                                         .start_time = st.start_time,
	                                         .used_ms = now,
	                                         .statm_fd = -1};
	*out = &P.status[P.nstatus++];
	return 0;
}

/* statm into sf->statm, opened on first use; "" when it cannot be read. */
static void
statm_read(struct status_fd *sf, char *buf, size_t len)
{
	ssize_t n = -1;

	if (sf->statm_fd < 0)
		sf->statm_fd = open_pid_file(sf->pid, "statm");
	if (sf->statm_fd >= 0)
		n = procfs_pread(sf->statm_fd, buf, len);
	if (n <= 0) /* unreadable or too long: no fingerprint */
		buf[0] = '\0';
}

/*
 * platform_proc_info, and with may_reuse platform_proc_sample. statm is
 * read before status, so a change between the two reads shows as a statm
 * that differs at the next sample, never as a stale reading kept.
 */
static int
proc_read(pid_t pid, struct proc_info *pi, int may_reuse)
{
	char statm[sizeof(P.status[0].statm)];
	struct procfs_status ss;
	struct status_fd *sf, spare = {.fd = -1, .statm_fd = -1};
	struct procfs_stat st;
	int64_t now = now_ms();
	ssize_t n;
	int rc;

	if (pid <= 0)
		return -EINVAL;
	statm[0] = '\0';
	sf = status_find(pid, now);
	if (sf != NULL && may_reuse) {
		statm_read(sf, statm, sizeof(statm));
		if (statm[0] != '\0' && sf->read_ms != 0 &&
		    now - sf->read_ms < STATUS_REUSE_MS &&
		    strcmp(statm, sf->statm) == 0) {
			sf->used_ms = now;
			*pi = sf->last;
			return 0;
		}
	}
	if (sf != NULL) {
		n = procfs_pread_buf(sf->fd, &P.status_buf);
		if (n <= 0) {
			/* That process is gone; the number may already
			 * name another one, so look again. */
			status_drop((size_t)(sf - P.status));
			sf = NULL;
		}
	}
	if (sf == NULL) {
		if ((rc = status_open(pid, now, &spare, &sf)) != 0)
			return rc;
		if (may_reuse && sf != &spare)
			statm_read(sf, statm, sizeof(statm));
		n = procfs_pread_buf(sf->fd, &P.status_buf);
		if (spare.fd >= 0)
			close(spare.fd);
	}
	sf->used_ms = now;
	if (n <= 0 ||
	    procfs_parse_status(P.status_buf.data, (size_t)n, &ss) != 0 ||
	    ss.state == 'Z' || ss.state == 'X') {
		/* Gone, or exited but not yet reaped: nothing left to
		 * measure or follow. Its start time still reads, for
		 * re-adoption. A status that does not parse is treated
		 * the same: the descriptor is not trusted again. */
		rc = n < 0 && n != -ESRCH ? (int)n : -ESRCH;
		if (sf != &spare)
			status_drop((size_t)(sf - P.status));
		return rc;
	}
	pi->pid = pid;
	pi->ppid = ss.ppid;
	pi->uid = ss.uid;
	pi->start_time = sf->start_time;
	pi->footprint_bytes = ss.rss_anon_bytes + ss.rss_shmem_bytes;
	pi->swap_bytes = ss.swap_bytes;
	if (ss.present & PROCFS_STATUS_NSPGID) {
		pi->pgid = ss.nspgid;
	} else {
		/* Before Linux 4.1 status has no NSpgid. */
		if ((rc = read_stat(pid, &st)) != 0)
			return rc;
		pi->pgid = st.pgrp;
	}
	if (may_reuse && sf != &spare) {
		sf->last = *pi;
		sf->read_ms = now;
		memcpy(sf->statm, statm, sizeof(sf->statm));
	}
	return 0;
}

int
platform_proc_info(pid_t pid, struct proc_info *pi)
{
	return proc_read(pid, pi, 0);
}

int
platform_proc_sample(pid_t pid, struct proc_info *pi)
{
	return proc_read(pid, pi, 1);
}

int
platform_proc_start_time(pid_t pid, uint64_t *start_time)
{
	struct procfs_stat st;
	int rc;

	if ((rc = read_stat(pid, &st)) != 0)
		return rc;
	*start_time = st.start_time;
	return 0;
}

static int
pid_in(pid_t pid, const pid_t *set, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (set[i] == pid)
			return 1;
	return 0;
}

/* The previous scan's entry for pid, by binary search. */
static const struct scan_entry *
scan_find(pid_t pid)
{
	size_t lo = 0, hi = P.nscan;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (P.scan[mid].pid == pid)
			return &P.scan[mid];
		if (P.scan[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static int
scan_grow(void)
{
	size_t cap = P.scan_cap ? P.scan_cap * 2 : 512;
	struct scan_entry *a, *b;

	if ((a = realloc(P.scan, cap * sizeof(*a))) == NULL)
		return -ENOMEM;
	P.scan = a;
	if ((b = realloc(P.scan_next, cap * sizeof(*b))) == NULL)
		return -ENOMEM;
	P.scan_next = b;
	P.scan_cap = cap;
	return 0;
}

/* The pid most recently created, or -1 when it cannot be read. */
static pid_t
last_pid(void)
{
	char buf[128];
	ssize_t n;
	pid_t pid;

	if (P.loadavg_fd < 0 ||
	    (n = procfs_pread(P.loadavg_fd, buf, sizeof(buf))) <= 0 ||
	    procfs_parse_loadavg_last_pid(buf, (size_t)n, &pid) != 0)
		return -1;
	return pid;
}

static int
tree_match(const struct scan_entry *e, const pid_t *parents, size_t nparents,
           pid_t pgid)
{
	return (pgid > 0 && e->pgrp == pgid) ||
	       pid_in(e->ppid, parents, nparents);
}

/*
 * The kernel here may lack /proc/PID/task/TID/children (it needs
 * CONFIG_PROC_CHILDREN), so the process table is scanned. Reading every
 * stat would cost about 5 us per process per scan; the table of the
 * previous scan (see struct scan_entry) limits reads to new processes.
 * /proc lists pids in increasing order, which keeps the table sorted.
 *
 * Listing /proc itself costs about 0.3 us per process, paid by every
 * followed job every scan interval. When no pid was created since the
 * last listing (the last field of /proc/loadavg is unchanged) and that
 * listing is recent, the table is answered from as it is: no new process
 * can be in the tree. It may then name a process that has exited since;
 * callers check each pid anyway (platform_proc_info).
 */
int
platform_list_tree(const pid_t *parents, size_t nparents, pid_t pgid,
                   pid_t *out, size_t max)
{
	char buf[1024];
	struct dirent *de;
	size_t found = 0, n = 0, i;
	int64_t now = now_ms();
	pid_t last = 0, cursor;
	int sorted = 1, rc;

	if (P.proc_dir == NULL)
		return -EINVAL;
	cursor = last_pid();
	if (cursor > 0 && cursor == P.scan_last_pid &&
	    now - P.scan_listed_ms < SCAN_STALE_MS) {
		for (i = 0; i < P.nscan; i++) {
			if (!tree_match(&P.scan[i], parents, nparents, pgid))
				continue;
			if (found < max)
				out[found] = P.scan[i].pid;
			found++;
		}
		return found > INT_MAX ? INT_MAX : (int)found;
	}
	rewinddir(P.proc_dir);
	while ((de = readdir(P.proc_dir)) != NULL) {
		const struct scan_entry *old;
		struct scan_entry e;
		const char *c = de->d_name;
		long pid = 0;

		if (*c < '1' || *c > '9')
			continue;
		for (; *c >= '0' && *c <= '9' && pid <= INT_MAX; c++)
			pid = pid * 10 + (*c - '0');
		if (*c != '\0' || pid > INT_MAX)
			continue;
		old = scan_find((pid_t)pid);
		if (old != NULL && old->ino == de->d_ino &&
		    now - old->read_ms < SCAN_STALE_MS + (pid & 1023) * 10) {
			e = *old;
		} else {
			struct procfs_stat st;
			ssize_t len;

			len =
			    read_pid_file((pid_t)pid, "stat", buf, sizeof(buf));
			if (len <= 0 ||
			    procfs_parse_stat(buf, (size_t)len, &st) != 0)
				continue; /* exited meanwhile */
			e = (struct scan_entry){(pid_t)pid, st.ppid, st.pgrp,
			                        de->d_ino, now};
		}
		if (n == P.scan_cap && (rc = scan_grow()) != 0)
			return rc;
		sorted &= e.pid > last;
		last = e.pid;
		P.scan_next[n++] = e;
		if (!tree_match(&e, parents, nparents, pgid))
			continue;
		if (found < max)
			out[found] = e.pid;
		found++;
	}
	/* The new table becomes the reference; an unsorted listing (not
	 * seen on Linux) only costs the cache, never correctness. */
	{
		struct scan_entry *t = P.scan;
		P.scan = P.scan_next;
		P.scan_next = t;
		P.nscan = sorted ? n : 0;
	}
	/* Read before the listing: a process created during it moves the
	 * cursor, and the next call lists again. */
	P.scan_last_pid = P.nscan > 0 ? cursor : -1;
	P.scan_listed_ms = now;
	return found > INT_MAX ? INT_MAX : (int)found;
}

int
platform_peer_cred(int fd, uid_t *uid, gid_t *gid, pid_t *pid)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return -errno;
	if (len != sizeof(cred))
		return -EINVAL;
	*uid = cred.uid;
	*gid = cred.gid;
	*pid = cred.pid;
	return 0;
}

/* The kernel's NGROUPS_MAX: no process has more groups. */
#define PEER_GROUPS_MAX 65536

int
platform_peer_groups(int fd, gid_t **groups, int *ngroups)
{
	socklen_t len = 64 * sizeof(gid_t);
	gid_t *g = NULL;
	int err;

	/* Too small a buffer is ERANGE with the size it needs in len; the
	 * list is the peer's at connect, so a second try fits. */
	for (int tries = 0; tries < 4; tries++) {
		gid_t *ng = realloc(g, len);
		socklen_t got = len;

		if (ng == NULL) {
			free(g);
			return -ENOMEM;
		}
		g = ng;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, g, &got) == 0) {
			if (got % sizeof(gid_t) != 0 || got > len) {
				free(g);
				return -EINVAL;
			}
			*groups = g;
			*ngroups = (int)(got / sizeof(gid_t));
			return 0;
		}
		err = errno;
		if (err != ERANGE || got <= len ||
		    got > PEER_GROUPS_MAX * sizeof(gid_t)) {
			free(g);
			return err == ERANGE ? -EINVAL : -err;
		}
		len = got;
	}
	free(g);
	return -EAGAIN;
}

int
platform_user_groups(const char *user, gid_t gid, gid_t **groups, int *ngroups)
{
	int n = 32;
	gid_t *g = NULL;

	if (user == NULL || groups == NULL || ngroups == NULL)
		return -EINVAL;
	/* getgrouplist reports the size it needs when the buffer is too
	 * small; the loop bound guards against a changing group database. */
	for (int tries = 0; tries < 8; tries++) {
		gid_t *ng = realloc(g, (size_t)n * sizeof(*g));
		int want = n;

		if (ng == NULL) {
			free(g);
			return -ENOMEM;
		}
		g = ng;
		if (getgrouplist(user, gid, g, &want) >= 0) {
			*groups = g;
			*ngroups = want;
			return 0;
		}
		n = want > n ? want : n * 2;
		if (n > 65536)
			break;
	}
	free(g);
	return -E2BIG;
}

static int
put_path(char *buf, size_t len, const char *fmt, const char *a, const char *b)
{
	int n = snprintf(buf, len, fmt, a, b);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* An environment directory that is set and absolute, as the XDG base
 * directory specification requires; else NULL. */
static const char *
xdg_dir(const char *name)
{
	const char *v = getenv(name);

	return v != NULL && v[0] == '/' ? v : NULL;
}

/* The socket path (PROTOCOL.md): the caller creates the directory. The
 * per-user one is the clients' (socket-trust.c). */
int
platform_default_socket(int system, char *buf, size_t len)
{
	if (system)
		return put_path(buf, len, "%s%s", SOCKET_SYSTEM_PATH, "");
	return socket_user_path(getenv("XDG_RUNTIME_DIR"), socket_home(),
	                        getuid(), buf, len, NULL);
}

/* The database path; the caller creates the directory. */
int
platform_default_db(int system, char *buf, size_t len)
{
	const char *dir, *home;
	struct passwd *pw;

	if (system)
		return put_path(buf, len, "%s%s",
		                "/var/lib/stageload/stageload.db", "");
	if ((dir = xdg_dir("XDG_STATE_HOME")) != NULL)
		return put_path(buf, len, "%s/%s", dir,
		                "stageload/stageload.db");
	home = getenv("HOME");
	if (home == NULL || home[0] != '/') {
		if ((pw = getpwuid(getuid())) == NULL || pw->pw_dir == NULL)
			return -ENOENT;
		home = pw->pw_dir;
	}
	return put_path(buf, len, "%s/%s", home,
	                ".local/state/stageload/stageload.db");
}

/*
 * Linux has nothing here to hold: a desktop's idle sleep is its session's
 * (systemd-inhibit), and servers do not sleep. Under a fixture root the
 * state is written to <root>/keep-awake ("held" or "released"), which is
 * how tests see when the daemon takes and drops it.
 */
int
platform_keep_awake(int hold, char *cause, size_t causelen)
{
	const char *text = hold == PLATFORM_AWAKE_QUEUE ? "held-queue\n"
	                   : hold                       ? "held\n"
	                                                : "released\n";
	char tmp[PATH_MAX + 8];
	int fd, rc = 0;

	if (!P.initialised || !P.fixture_root || P.awake == hold)
		return 0;
	if (snprintf(tmp, sizeof tmp, "%s.tmp", P.awake_path) >=
	    (int)sizeof tmp) {
		snprintf(cause, causelen, "fixture path too long");
		return -ENAMETOOLONG;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
	          0644);
	if (fd < 0)
		rc = -errno;
	else {
		if (write(fd, text, strlen(text)) != (ssize_t)strlen(text))
			rc = -EIO;
		if (close(fd) != 0 && rc == 0)
			rc = -errno;
		if (rc == 0 && rename(tmp, P.awake_path) != 0)
			rc = -errno;
	}
	if (rc != 0) {
		snprintf(cause, causelen, "%s: %s", P.awake_path,
		         strerror(-rc));
		(void)unlink(tmp);
	} else
		P.awake = hold;
	return rc;
}

int
platform_peer_groups_max(void)
{
	char buf[16];
	ssize_t n;
	int fd, max = 0;

	/* SO_PEERGROUPS passes every group: no cap, but for tests. */
	if (!P.initialised || !P.fixture_root)
		return 0;
	if ((fd = open(P.groups_max_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) <
	    0)
		return 0;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n > 0) {
		buf[n] = '\0';
		max = atoi(buf);
	}
	return max > 0 ? max : 0;
}

/* getlogin() on Linux reads utmp, not the session: nothing to set. */
int
platform_session_login(const char *user)
{
	(void)user;
	return 0;
}

void
platform_spawn_hint(int err, const char *path, const char *home, char *buf,
                    size_t len)
{
	(void)err;
	(void)path;
	(void)home;
	if (len > 0)
		buf[0] = '\0';
}

/* Linux has no per-folder privacy control that a root daemon's job
 * would meet and the user's own shell would not. */
void
platform_log_hint(const char *text, size_t len, const char *home, char *buf,
                  size_t buflen)
{
	(void)text;
	(void)len;
	(void)home;
	if (buflen > 0)
		buf[0] = '\0';
}

void
platform_trim_memory(void)
{
#ifdef __GLIBC__
	malloc_trim(0);
#endif
}
