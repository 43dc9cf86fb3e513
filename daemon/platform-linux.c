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

#include "platform-linux-internal.h"
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

struct platform_linux PL = {
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

	if (PL.fixture_root) {
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

	if (PL.initialised)
		platform_shutdown();
	PL.psi_warn = PSI_WARN_DEFAULT;
	PL.psi_critical = PSI_CRITICAL_DEFAULT;
	PL.fixture_root = 0;
	PL.awake = -1;
	if (cfg != NULL) {
		if (cfg->proc_root != NULL && cfg->proc_root[0] != '\0') {
			root = cfg->proc_root;
			PL.fixture_root = strcmp(root, "/proc") != 0;
		}
		/* 0 is a threshold (every pressure counts); only a
		 * negative one asks for the default. */
		if (cfg->psi_warn >= 0)
			PL.psi_warn = cfg->psi_warn;
		if (cfg->psi_critical >= 0)
			PL.psi_critical = cfg->psi_critical;
	}
	if (PL.psi_warn > PL.psi_critical) {
		snprintf(cause, causelen,
		         "PSI warn threshold %g is above the critical one %g",
		         PL.psi_warn, PL.psi_critical);
		return -EINVAL;
	}
	if (set_path(PL.meminfo.path, sizeof(PL.meminfo.path), root,
	             "meminfo") != 0 ||
	    set_path(PL.psi.path, sizeof(PL.psi.path), root,
	             "pressure/memory") != 0 ||
	    set_path(PL.once_path, sizeof(PL.once_path), root,
	             "meminfo.once") != 0 ||
	    set_path(PL.awake_path, sizeof(PL.awake_path), root,
	             "keep-awake") != 0 ||
	    set_path(PL.groups_max_path, sizeof(PL.groups_max_path), root,
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
	if ((rc = sysfile_open(&PL.meminfo)) != 0 && !PL.fixture_root) {
		snprintf(cause, causelen, "%s: %s", PL.meminfo.path,
		         strerror(-rc));
		return rc;
	}
	(void)sysfile_open(&PL.psi); /* optional: CONFIG_PSI */
	PL.psi_due_ms = 0;
	if ((PL.proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) <
	    0) {
		rc = -errno;
		snprintf(cause, causelen, "/proc: %s", strerror(errno));
		platform_shutdown();
		return rc;
	}
	PL.loadavg_fd = openat(PL.proc_fd, "loadavg", O_RDONLY | O_CLOEXEC);
	PL.scan_last_pid = -1;
	if ((PL.proc_dir = opendir("/proc")) == NULL) {
		rc = -errno;
		snprintf(cause, causelen, "/proc: %s", strerror(errno));
		platform_shutdown();
		return rc;
	}
	PL.initialised = 1;
	return 0;
}

void
platform_shutdown(void)
{
	sysfile_close(&PL.meminfo);
	sysfile_close(&PL.psi);
	if (PL.proc_fd >= 0)
		close(PL.proc_fd);
	PL.proc_fd = -1;
	if (PL.loadavg_fd >= 0)
		close(PL.loadavg_fd);
	PL.loadavg_fd = -1;
	if (PL.proc_dir != NULL)
		closedir(PL.proc_dir);
	PL.proc_dir = NULL;
	free(PL.scan);
	free(PL.scan_next);
	PL.scan = PL.scan_next = NULL;
	PL.nscan = PL.scan_cap = 0;
	while (PL.nstatus > 0)
		linux_status_drop(PL.nstatus - 1);
	procfs_buf_free(&PL.status_buf);
	PL.initialised = 0;
}

static enum pressure_level
psi_level(double avg10)
{
	if (avg10 < PL.psi_warn)
		return PRESSURE_NORMAL;
	if (avg10 < PL.psi_critical)
		return PRESSURE_WARN;
	return PRESSURE_CRITICAL;
}

int64_t
linux_coarse_ms(void)
{
	struct timespec ts;

	/* The coarse clock is a vDSO read; tick resolution is plenty for
	 * cache ages. */
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* PSI some avg10 into PL.psi_avg10, -1 when there is none. */
static void
psi_read(void)
{
	char buf[512];
	double avg10;
	ssize_t n;

	PL.psi_avg10 = -1;
	if (PL.psi.fd < 0 && !PL.fixture_root)
		return;
	n = sysfile_read(&PL.psi, buf, sizeof(buf));
	if (n == -EOPNOTSUPP && !PL.fixture_root)
		sysfile_close(&PL.psi); /* psi=0: it will not change */
	if (n >= 0 && procfs_parse_psi_some_avg10(buf, (size_t)n, &avg10) == 0)
		PL.psi_avg10 = avg10;
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

	if (!PL.fixture_root)
		return 0;
	if ((fd = open(PL.once_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0)
		return errno == ENOENT ? 0 : -errno;
	n = procfs_pread(fd, buf, len);
	close(fd);
	(void)unlink(PL.once_path);
	return n < 0 ? n : n + 1; /* + 1: an empty file is still one */
}

/* meminfo (or, with once, a fixture's meminfo.once) parsed into mi. */
static int
meminfo_read(int once, struct procfs_meminfo *mi, char *cause, size_t causelen)
{
	/* meminfo is about 1.5 KiB; one that does not fit is an error
	 * (-EFBIG), never parsed cut. */
	static char buf[8192];
	const char *path = PL.meminfo.path;
	ssize_t n = 0;
	int rc;

	if (!PL.initialised) {
		snprintf(cause, causelen, "platform not initialised");
		return -EINVAL;
	}
	if (once && (n = meminfo_once(buf, sizeof(buf))) != 0) {
		path = PL.once_path;
		if (n > 0)
			n--;
	} else
		n = sysfile_read(&PL.meminfo, buf, sizeof(buf));
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
	now = linux_coarse_ms();
	if (PL.fixture_root || now >= PL.psi_due_ms) {
		psi_read();
		PL.psi_due_ms = now + PSI_PERIOD_MS;
	}
	s->pressure =
	    PL.psi_avg10 >= 0 ? psi_level(PL.psi_avg10) : PRESSURE_UNKNOWN;
	s->psi_some_avg10 = PL.psi_avg10;
	return 0;
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

	if (!PL.initialised || !PL.fixture_root || PL.awake == hold)
		return 0;
	if (snprintf(tmp, sizeof tmp, "%s.tmp", PL.awake_path) >=
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
		if (rc == 0 && rename(tmp, PL.awake_path) != 0)
			rc = -errno;
	}
	if (rc != 0) {
		snprintf(cause, causelen, "%s: %s", PL.awake_path,
		         strerror(-rc));
		(void)unlink(tmp);
	} else
		PL.awake = hold;
	return rc;
}

int
platform_peer_groups_max(void)
{
	char buf[16];
	ssize_t n;
	int fd, max = 0;

	/* SO_PEERGROUPS passes every group: no cap, but for tests. */
	if (!PL.initialised || !PL.fixture_root)
		return 0;
	if ((fd = open(PL.groups_max_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) <
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
