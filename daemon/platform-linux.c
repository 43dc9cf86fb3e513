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
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "platform.h"
#include "procfs.h"

#define PSI_WARN_DEFAULT 10.0
#define PSI_CRITICAL_DEFAULT 40.0

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

static struct {
	int initialised;
	int fixture_root; /* proc_root is not the real /proc */
	double psi_warn;
	double psi_critical;
	struct sysfile meminfo;
	struct sysfile psi;
	int proc_fd;   /* the real /proc, for per-process openat() */
	DIR *proc_dir; /* the real /proc, rescanned by platform_list_tree */
	/* Scratch table for platform_list_tree, kept across calls. */
	struct tree_entry {
		pid_t pid, ppid, pgrp;
	} * table;
	size_t table_cap;
} P = {.proc_fd = -1, .meminfo = {.fd = -1}, .psi = {.fd = -1}};

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

/* Reads the whole file into buf (NUL-terminated); returns its length. */
static ssize_t
sysfile_read(struct sysfile *f, char *buf, size_t len)
{
	size_t off = 0;
	ssize_t n;
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
	while (off < len - 1) {
		n = pread(f->fd, buf + off, len - 1 - off, (off_t)off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		off += (size_t)n;
	}
	buf[off] = '\0';
	return (ssize_t)off;
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
	if (cfg != NULL) {
		if (cfg->proc_root != NULL && cfg->proc_root[0] != '\0') {
			root = cfg->proc_root;
			P.fixture_root = strcmp(root, "/proc") != 0;
		}
		if (cfg->psi_warn > 0)
			P.psi_warn = cfg->psi_warn;
		if (cfg->psi_critical > 0)
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
	        0) {
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
	if ((P.proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) <
	    0) {
		rc = -errno;
		snprintf(cause, causelen, "/proc: %s", strerror(errno));
		platform_shutdown();
		return rc;
	}
	if ((P.proc_dir = opendir("/proc")) == NULL) {
		rc = -errno;
		snprintf(cause, causelen, "/proc: %s", strerror(errno));
		platform_shutdown();
		return rc;
	}
	P.initialised = 1;
	return 0;
}

void
platform_shutdown(void)
{
	sysfile_close(&P.meminfo);
	sysfile_close(&P.psi);
	if (P.proc_fd >= 0)
		close(P.proc_fd);
	P.proc_fd = -1;
	if (P.proc_dir != NULL)
		closedir(P.proc_dir);
	P.proc_dir = NULL;
	free(P.table);
	P.table = NULL;
	P.table_cap = 0;
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

int
platform_sys_sample(struct sys_sample *s, char *cause, size_t causelen)
{
	/* meminfo is about 1.5 KiB; the fields read are in its first lines,
	 * so even a larger file cut at the buffer size parses. */
	static char buf[8192];
	struct procfs_meminfo mi;
	double avg10;
	ssize_t n;
	int rc;

	if (!P.initialised) {
		snprintf(cause, causelen, "platform not initialised");
		return -EINVAL;
	}
	if ((n = sysfile_read(&P.meminfo, buf, sizeof(buf))) < 0) {
		snprintf(cause, causelen, "%s: %s", P.meminfo.path,
		         strerror((int)-n));
		return (int)n;
	}
	if ((rc = procfs_parse_meminfo(buf, (size_t)n, &mi)) != 0) {
		snprintf(cause, causelen, "%s: %s", P.meminfo.path,
		         rc == -ERANGE ? "value out of range"
		                       : "malformed or truncated");
		return rc;
	}
	s->total_bytes = mi.mem_total_bytes;
	/* MemAvailable is an estimate and may, briefly, exceed MemTotal. */
	s->available_bytes = mi.mem_available_bytes < mi.mem_total_bytes
	                         ? mi.mem_available_bytes
	                         : mi.mem_total_bytes;
	s->free_pct =
	    100.0 * (double)s->available_bytes / (double)s->total_bytes;
	s->swap_total_bytes = mi.swap_total_bytes;
	s->swap_used_bytes = mi.swap_free_bytes < mi.swap_total_bytes
	                         ? mi.swap_total_bytes - mi.swap_free_bytes
	                         : 0;
	s->compressed_bytes = 0;
	s->wired_bytes = 0;

	/* No PSI (kernel without CONFIG_PSI, or booted psi=0: the file then
	 * fails to read with EOPNOTSUPP) is not an error: pressure is
	 * unknown rather than guessed from MemAvailable. */
	s->pressure = PRESSURE_UNKNOWN;
	s->psi_some_avg10 = -1;
	if (P.psi.fd >= 0 || P.fixture_root) {
		n = sysfile_read(&P.psi, buf, sizeof(buf));
		if (n == -EOPNOTSUPP && !P.fixture_root)
			sysfile_close(&P.psi); /* psi=0: it will not change */
		if (n >= 0 &&
		    procfs_parse_psi_some_avg10(buf, (size_t)n, &avg10) == 0) {
			s->psi_some_avg10 = avg10;
			s->pressure = psi_level(avg10);
		}
	}
	return 0;
}

/* Reads /proc/<pid>/<name> through the kept /proc descriptor. */
static ssize_t
read_pid_file(pid_t pid, const char *name, char *buf, size_t len)
{
	char rel[64];
	size_t off = 0;
	ssize_t n;
	int fd, saved;

	if (P.proc_fd < 0)
		return -EINVAL;
	snprintf(rel, sizeof(rel), "%d/%s", (int)pid, name);
	if ((fd = openat(P.proc_fd, rel, O_RDONLY | O_CLOEXEC)) < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	while (off < len - 1) {
		n = read(fd, buf + off, len - 1 - off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			saved = errno;
			close(fd);
			/* A process that exits between open and read. */
			return saved == ESRCH || saved == ENOENT ? -ESRCH
			                                         : -saved;
		}
		if (n == 0)
			break;
		off += (size_t)n;
	}
	close(fd);
	buf[off] = '\0';
	return (ssize_t)off;
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

int
platform_proc_info(pid_t pid, struct proc_info *pi)
{
	/* status is about 1.5 KiB; the fields read come before Groups'
	 * long tail of lines, and a cut line is rejected, not misread. */
	char buf[4096];
	struct procfs_stat st;
	struct procfs_status ss;
	ssize_t n;
	int rc;

	if ((rc = read_stat(pid, &st)) != 0)
		return rc;
	/* Exited but not yet reaped: no memory, and nothing left to
	 * measure or follow. Its start time still reads, for re-adoption. */
	if (st.state == 'Z' || st.state == 'X')
		return -ESRCH;
	if ((n = read_pid_file(pid, "status", buf, sizeof(buf))) < 0)
		return (int)n;
	if ((rc = procfs_parse_status(buf, (size_t)n, &ss)) != 0)
		return n == 0 ? -ESRCH : rc;
	pi->pid = pid;
	pi->ppid = st.ppid;
	pi->pgid = st.pgrp;
	pi->uid = ss.uid;
	pi->start_time = st.start_time;
	pi->footprint_bytes = ss.rss_anon_bytes + ss.rss_shmem_bytes;
	pi->swap_bytes = ss.swap_bytes;
	return 0;
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

/*
 * This kernel may lack /proc/PID/task/TID/children (it needs
 * CONFIG_PROC_CHILDREN), so the process table is scanned: one stat read
 * per pid through the kept /proc descriptor, nothing allocated unless the
 * table grew.
 */
int
platform_list_tree(const pid_t *parents, size_t nparents, pid_t pgid,
                   pid_t *out, size_t max)
{
	char buf[1024];
	struct dirent *de;
	size_t found = 0;

	if (P.proc_dir == NULL)
		return -EINVAL;
	rewinddir(P.proc_dir);
	while ((de = readdir(P.proc_dir)) != NULL) {
		struct procfs_stat st;
		const char *c = de->d_name;
		long pid = 0;
		ssize_t n;

		if (*c < '1' || *c > '9')
			continue;
		for (; *c >= '0' && *c <= '9' && pid <= INT_MAX; c++)
			pid = pid * 10 + (*c - '0');
		if (*c != '\0' || pid > INT_MAX)
			continue;
		n = read_pid_file((pid_t)pid, "stat", buf, sizeof(buf));
		if (n <= 0 || procfs_parse_stat(buf, (size_t)n, &st) != 0)
			continue; /* exited meanwhile */
		if (!((pgid > 0 && st.pgrp == pgid) ||
		      pid_in(st.ppid, parents, nparents)))
			continue;
		if (found < max)
			out[found] = (pid_t)pid;
		found++;
	}
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

/* The socket path (PROTOCOL.md): the caller creates the directory. */
int
platform_default_socket(int system, char *buf, size_t len)
{
	const char *dir;
	char uid[32];

	if (system)
		return put_path(buf, len, "%s%s", "/var/run/stageload.sock",
		                "");
	if ((dir = xdg_dir("XDG_RUNTIME_DIR")) != NULL)
		return put_path(buf, len, "%s/%s", dir, "stageload.sock");
	snprintf(uid, sizeof(uid), "%u", (unsigned)getuid());
	return put_path(buf, len, "/tmp/stageload-%s/%s", uid,
	                "stageload.sock");
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
