/*
 * platform.h's processes on Linux, always from the real /proc: a process's
 * memory and identity (status, statm and stat, read through descriptors
 * kept open while it is followed) and the process trees of jobs (a scan of
 * /proc that re-reads only the pids that changed).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "platform-linux-internal.h"

void
linux_status_drop(size_t i)
{
	close(PL.status[i].fd);
	if (PL.status[i].statm_fd >= 0)
		close(PL.status[i].statm_fd);
	PL.status[i] = PL.status[--PL.nstatus];
}

static int
open_pid_file(pid_t pid, const char *name)
{
	char rel[64];
	int fd;

	if (PL.proc_fd < 0)
		return -EINVAL;
	snprintf(rel, sizeof(rel), "%d/%s", (int)pid, name);
	if ((fd = openat(PL.proc_fd, rel, O_RDONLY | O_CLOEXEC)) < 0)
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
	if (now - PL.status_swept_ms >= 1000) {
		for (i = 0; i < PL.nstatus;) {
			if (now - PL.status[i].used_ms >= STATUS_IDLE_MS)
				linux_status_drop(i);
			else
				i++;
		}
		PL.status_swept_ms = now;
	}
	for (i = 0; i < PL.nstatus; i++)
		if (PL.status[i].pid == pid)
			return &PL.status[i];
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
	if (PL.nstatus == STATUS_FDS) {
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
	PL.status[PL.nstatus] = (struct status_fd){.pid = pid,
	                                           .fd = fd,
	                                           .start_time = st.start_time,
	                                           .used_ms = now,
	                                           .statm_fd = -1};
	*out = &PL.status[PL.nstatus++];
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
	char statm[sizeof(PL.status[0].statm)];
	struct procfs_status ss;
	struct status_fd *sf, spare = {.fd = -1, .statm_fd = -1};
	struct procfs_stat st;
	int64_t now = linux_coarse_ms();
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
		n = procfs_pread_buf(sf->fd, &PL.status_buf);
		if (n <= 0) {
			/* That process is gone; the number may already
			 * name another one, so look again. */
			linux_status_drop((size_t)(sf - PL.status));
			sf = NULL;
		}
	}
	if (sf == NULL) {
		if ((rc = status_open(pid, now, &spare, &sf)) != 0)
			return rc;
		if (may_reuse && sf != &spare)
			statm_read(sf, statm, sizeof(statm));
		n = procfs_pread_buf(sf->fd, &PL.status_buf);
		if (spare.fd >= 0)
			close(spare.fd);
	}
	sf->used_ms = now;
	if (n <= 0 ||
	    procfs_parse_status(PL.status_buf.data, (size_t)n, &ss) != 0 ||
	    ss.state == 'Z' || ss.state == 'X') {
		/* Gone, or exited but not yet reaped: nothing left to
		 * measure or follow. Its start time still reads, for
		 * re-adoption. A status that does not parse is treated
		 * the same: the descriptor is not trusted again. */
		rc = n < 0 && n != -ESRCH ? (int)n : -ESRCH;
		if (sf != &spare)
			linux_status_drop((size_t)(sf - PL.status));
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
	size_t lo = 0, hi = PL.nscan;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (PL.scan[mid].pid == pid)
			return &PL.scan[mid];
		if (PL.scan[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static int
scan_grow(void)
{
	size_t cap = PL.scan_cap ? PL.scan_cap * 2 : 512;
	struct scan_entry *a, *b;

	if ((a = realloc(PL.scan, cap * sizeof(*a))) == NULL)
		return -ENOMEM;
	PL.scan = a;
	if ((b = realloc(PL.scan_next, cap * sizeof(*b))) == NULL)
		return -ENOMEM;
	PL.scan_next = b;
	PL.scan_cap = cap;
	return 0;
}

/* The pid most recently created, or -1 when it cannot be read. */
static pid_t
last_pid(void)
{
	char buf[128];
	ssize_t n;
	pid_t pid;

	if (PL.loadavg_fd < 0 ||
	    (n = procfs_pread(PL.loadavg_fd, buf, sizeof(buf))) <= 0 ||
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
	int64_t now = linux_coarse_ms();
	pid_t last = 0, cursor;
	int sorted = 1, rc;

	if (PL.proc_dir == NULL)
		return -EINVAL;
	cursor = last_pid();
	if (cursor > 0 && cursor == PL.scan_last_pid &&
	    now - PL.scan_listed_ms < SCAN_STALE_MS) {
		for (i = 0; i < PL.nscan; i++) {
			if (!tree_match(&PL.scan[i], parents, nparents, pgid))
				continue;
			if (found < max)
				out[found] = PL.scan[i].pid;
			found++;
		}
		return found > INT_MAX ? INT_MAX : (int)found;
	}
	rewinddir(PL.proc_dir);
	while ((de = readdir(PL.proc_dir)) != NULL) {
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
		if (n == PL.scan_cap && (rc = scan_grow()) != 0)
			return rc;
		sorted &= e.pid > last;
		last = e.pid;
		PL.scan_next[n++] = e;
		if (!tree_match(&e, parents, nparents, pgid))
			continue;
		if (found < max)
			out[found] = e.pid;
		found++;
	}
	/* The new table becomes the reference; an unsorted listing (not
	 * seen on Linux) only costs the cache, never correctness. */
	{
		struct scan_entry *t = PL.scan;
		PL.scan = PL.scan_next;
		PL.scan_next = t;
		PL.nscan = sorted ? n : 0;
	}
	/* Read before the listing: a process created during it moves the
	 * cursor, and the next call lists again. */
	PL.scan_last_pid = PL.nscan > 0 ? cursor : -1;
	PL.scan_listed_ms = now;
	return found > INT_MAX ? INT_MAX : (int)found;
}
