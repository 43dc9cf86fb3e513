/*
 * platform.h on macOS: only the system calls. Every raw value goes through
 * platform-darwin-convert.c, which is unit-tested on any OS; docs/macos.md
 * names the public source of each value.
 */
#include <sys/types.h>
#include <sys/proc_info.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysctl.h>
#include <sys/ucred.h>
#include <sys/un.h>

#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libproc.h>
#include <limits.h>
#include <malloc/malloc.h>
#include <mach/mach.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "platform-darwin-convert.h"
#include "socket-trust.h"
#include "platform.h"

/* Big enough for any sane process tree; past it the caller is told how
 * many there were and may ask again with room for them. */
#define LIST_MAX_PIDS (1 << 20)
#define GROUPS_MAX (1 << 16)

struct sysctl_mib {
	const char *name;
	int mib[CTL_MAXNAME];
	size_t len;
};

enum {
	MIB_MEMSIZE,
	MIB_MEMSIZE_USABLE,
	MIB_LEVEL,
	MIB_PRESSURE,
	MIB_SWAPUSAGE,
	MIB_COUNT,
};

static struct {
	int ready;
	mach_port_t host;
	uint64_t page_size;
	struct sysctl_mib mibs[MIB_COUNT];
	char boot_alias[256]; /* find_boot_alias */
} darwin = {
    .mibs =
        {
            [MIB_MEMSIZE] = {.name = "hw.memsize"},
            [MIB_MEMSIZE_USABLE] = {.name = "hw.memsize_usable"},
            [MIB_LEVEL] = {.name = "kern.memorystatus_level"},
            [MIB_PRESSURE] = {.name = "kern.memorystatus_vm_pressure_level"},
            [MIB_SWAPUSAGE] = {.name = "vm.swapusage"},
        },
};

static void find_boot_alias(void);

int
platform_init(const struct platform_config *cfg, char *cause, size_t causelen)
{
	vm_size_t page_size = 0;
	struct sysctl_mib *m;
	int i;

	if (cfg != NULL && cfg->proc_root != NULL &&
	    cfg->proc_root[0] != '\0') {
		snprintf(cause, causelen,
		         "--proc-root is only supported on Linux (got %s)",
		         cfg->proc_root);
		return -EINVAL;
	}
	/* Names are resolved once so each sample costs one sysctl(2) per
	 * value instead of a name lookup as well. */
	for (i = 0; i < MIB_COUNT; i++) {
		m = &darwin.mibs[i];
		m->len = CTL_MAXNAME;
		if (sysctlnametomib(m->name, m->mib, &m->len) == 0)
			continue;
		if (i == MIB_MEMSIZE_USABLE && errno == ENOENT) {
			/* A kernel without it: totals fall back to
			 * hw.memsize (darwin_sys_convert). */
			m->len = 0;
			continue;
		}
		snprintf(cause, causelen, "sysctl %s: %s", m->name,
		         strerror(errno));
		return -errno;
	}
	darwin.host = mach_host_self();
	/* host_statistics64 counts kernel pages (16 KiB on Apple Silicon,
	 * 4 KiB on Intel); ask rather than assume. */
	if (host_page_size(darwin.host, &page_size) != KERN_SUCCESS ||
	    page_size == 0)
		page_size = vm_kernel_page_size;
	darwin.page_size = page_size;
	find_boot_alias();
	darwin.ready = 1;
	return 0;
}

static void awake_stop(int wait);

void
platform_shutdown(void)
{
	awake_stop(1);
	if (darwin.ready)
		mach_port_deallocate(mach_task_self(), darwin.host);
	darwin.ready = 0;
}

static int
sysctl_read(int which, void *buf, size_t size, char *cause, size_t causelen)
{
	struct sysctl_mib *m = &darwin.mibs[which];
	size_t len = size;

	if (sysctl(m->mib, (u_int)m->len, buf, &len, NULL, 0) == -1) {
		snprintf(cause, causelen, "sysctl %s: %s", m->name,
		         strerror(errno));
		return -errno;
	}
	if (len != size) {
		snprintf(cause, causelen, "sysctl %s: %zu bytes, expected %zu",
		         m->name, len, size);
		return -EIO;
	}
	return 0;
}

/*
 * vm.swapusage, read until one reading can be trusted: xnu computes it
 * from unlocked reads, so a swap file added or removed meanwhile tears it
 * (darwin_swap_pick says how this is told). Two reads when nothing moves.
 */
static int
swap_read(struct darwin_swap_raw *out, char *cause, size_t causelen)
{
	struct darwin_swap_raw r[DARWIN_SWAP_READS];
	struct xsw_usage xsu;
	size_t n;
	int rc, i;

	for (n = 0; n < DARWIN_SWAP_READS; n++) {
		if ((rc = sysctl_read(MIB_SWAPUSAGE, &xsu, sizeof xsu, cause,
		                      causelen)) < 0)
			return rc;
		r[n].total = xsu.xsu_total;
		r[n].used = xsu.xsu_used;
		if (n > 0 &&
		    (i = darwin_swap_pick(r, n + 1, cause, causelen)) >= 0) {
			*out = r[i];
			return 0;
		}
	}
	return darwin_swap_pick(r, n, cause, causelen);
}

int
platform_swap_used(uint64_t *used_bytes, char *cause, size_t causelen)
{
	struct darwin_swap_raw r;
	int rc;

	if (!darwin.ready) {
		snprintf(cause, causelen, "platform not initialised");
		return -EINVAL;
	}
	if ((rc = swap_read(&r, cause, causelen)) < 0)
		return rc;
	*used_bytes = r.used;
	return 0;
}

int
platform_sys_sample(struct sys_sample *s, char *cause, size_t causelen)
{
	struct darwin_vm_raw raw = {0};
	vm_statistics64_data_t vm;
	mach_msg_type_number_t count = HOST_VM_INFO64_COUNT;
	struct darwin_swap_raw swap;
	uint64_t memsize, usable = 0;
	kern_return_t kr;
	int level, pressure, rc;

	if (!darwin.ready) {
		snprintf(cause, causelen, "platform not initialised");
		return -EINVAL;
	}
	if ((rc = sysctl_read(MIB_MEMSIZE, &memsize, sizeof memsize, cause,
	                      causelen)) < 0 ||
	    (darwin.mibs[MIB_MEMSIZE_USABLE].len > 0 &&
	     (rc = sysctl_read(MIB_MEMSIZE_USABLE, &usable, sizeof usable,
	                       cause, causelen)) < 0) ||
	    (rc = sysctl_read(MIB_LEVEL, &level, sizeof level, cause,
	                      causelen)) < 0 ||
	    (rc = sysctl_read(MIB_PRESSURE, &pressure, sizeof pressure, cause,
	                      causelen)) < 0 ||
	    (rc = swap_read(&swap, cause, causelen)) < 0)
		return rc;
	kr = host_statistics64(darwin.host, HOST_VM_INFO64, (host_info64_t)&vm,
	                       &count);
	if (kr != KERN_SUCCESS) {
		snprintf(cause, causelen, "host_statistics64: %s",
		         mach_error_string(kr));
		return -EIO;
	}

	raw.memsize = memsize;
	raw.memsize_usable = usable;
	raw.memorystatus_level = level;
	raw.vm_pressure_level = pressure;
	raw.swap_total = swap.total;
	raw.swap_used = swap.used;
	raw.page_size = darwin.page_size;
	raw.free_count = vm.free_count;
	raw.wire_count = vm.wire_count;
	raw.compressor_page_count = vm.compressor_page_count;
	return darwin_sys_convert(&raw, s, cause, causelen);
}

/*
 * PROC_PIDTBSDINFO into raw; the footprint call is the caller's. A non-zero
 * arg makes the kernel look among zombies too (xnu proc_pidinfo:
 * "if (arg) findzomb = 1"): a zombie's start time still reads, as on
 * Linux, while for everything else it is gone.
 */
static void
read_bsdinfo(pid_t pid, struct darwin_proc_raw *raw, int zombies)
{
	struct proc_bsdinfo bi;

	raw->info_size = sizeof bi;
	errno = 0;
	raw->info_ret = proc_pidinfo(pid, PROC_PIDTBSDINFO, zombies ? 1 : 0,
	                             &bi, sizeof bi);
	raw->info_errno = errno;
	if (raw->info_ret < (int)sizeof bi)
		return;
	raw->pbi_pid = bi.pbi_pid;
	raw->pbi_ppid = bi.pbi_ppid;
	raw->pbi_pgid = bi.pbi_pgid;
	raw->pbi_ruid = bi.pbi_ruid;
	raw->pbi_start_tvsec = bi.pbi_start_tvsec;
	raw->pbi_start_tvusec = bi.pbi_start_tvusec;
}

int
platform_proc_info(pid_t pid, struct proc_info *pi)
{
	struct darwin_proc_raw raw = {0};
	struct rusage_info_v4 ru;

	if (pid <= 0)
		return -EINVAL; /* 0 would be kernel_task */
	read_bsdinfo(pid, &raw, 0);
	if (raw.info_ret >= (int)raw.info_size) {
		errno = 0;
		raw.rusage_ret =
		    proc_pid_rusage(pid, RUSAGE_INFO_V4, (rusage_info_t *)&ru);
		raw.rusage_errno = errno;
		if (raw.rusage_ret == 0)
			raw.ri_phys_footprint = ru.ri_phys_footprint;
	}
	return darwin_proc_convert(&raw, pi);
}

/* Both calls are cheap system calls here: nothing to save by reusing. */
int
platform_proc_sample(pid_t pid, struct proc_info *pi)
{
	return platform_proc_info(pid, pi);
}

int
platform_proc_start_time(pid_t pid, uint64_t *start_time)
{
	struct darwin_proc_raw raw = {0};
	struct proc_info pi;
	int rc;

	if (pid <= 0)
		return -EINVAL;
	read_bsdinfo(pid, &raw, 1);
	if ((rc = darwin_proc_convert(&raw, &pi)) < 0)
		return rc;
	*start_time = pi.start_time;
	return 0;
}

/*
 * One proc_listchildpids/proc_listpgrppids call, retried with a larger
 * buffer while the answer fills it (the kernel silently truncates).
 */
static int
list_pids(int pgrp, pid_t id, pid_t *out, size_t max, size_t *found)
{
	size_t cap = 256;
	pid_t *buf = NULL, *nbuf;
	int ret, n;

	for (;;) {
		nbuf = realloc(buf, cap * sizeof *buf);
		if (nbuf == NULL) {
			free(buf);
			return -ENOMEM;
		}
		buf = nbuf;
		errno = 0;
		if (pgrp)
			ret = proc_listpgrppids(id, buf,
			                        (int)(cap * sizeof *buf));
		else
			ret = proc_listchildpids(id, buf,
			                         (int)(cap * sizeof *buf));
		n = darwin_list_result(ret, errno);
		if (n < 0 || (size_t)n < cap || cap >= LIST_MAX_PIDS)
			break;
		cap *= 2;
	}
	if (n > 0)
		darwin_list_merge(buf, (size_t)n < cap ? (size_t)n : cap, out,
		                  max, found);
	free(buf);
	return n < 0 ? n : 0;
}

int
platform_list_tree(const pid_t *parents, size_t nparents, pid_t pgid,
                   pid_t *out, size_t max)
{
	size_t i, found = 0;
	int rc;

	for (i = 0; i < nparents; i++)
		if (parents[i] > 0 &&
		    (rc = list_pids(0, parents[i], out, max, &found)) < 0)
			return rc;
	if (pgid > 0 && (rc = list_pids(1, pgid, out, max, &found)) < 0)
		return rc;
	return found > INT32_MAX ? INT32_MAX : (int)found;
}

int
platform_peer_cred(int fd, uid_t *uid, gid_t *gid, pid_t *pid)
{
	struct xucred xuc;
	socklen_t len = sizeof xuc;

	/* LOCAL_PEERCRED: the credentials the kernel copied when the peer
	 * connected (unp_peercred in uipc_usrreq.c), the same source
	 * getpeereid() uses. Every decision is taken on these. */
	memset(&xuc, 0, sizeof xuc);
	if (getsockopt(fd, SOL_LOCAL, LOCAL_PEERCRED, &xuc, &len) == -1)
		return -errno;
	if (len != sizeof xuc || xuc.cr_version != XUCRED_VERSION ||
	    xuc.cr_ngroups < 1)
		return -EPROTO;
	*uid = xuc.cr_uid;
	*gid = xuc.cr_groups[0];
	/* LOCAL_PEERPID is not the process that connected: xnu answers the
	 * socket's last_pid, the last process that sent or received on it
	 * (LOCAL_PEERTOKEN looks up the same pid). A peer that passed its
	 * descriptor on is named by whoever used it last, so the pid is
	 * only logged, never trusted. */
	len = sizeof *pid;
	if (getsockopt(fd, SOL_LOCAL, LOCAL_PEERPID, pid, &len) == -1 ||
	    len != sizeof *pid)
		*pid = 0;
	return 0;
}

int
platform_peer_groups(int fd, gid_t **groups, int *ngroups)
{
	struct xucred xuc;
	socklen_t len = sizeof xuc;

	memset(&xuc, 0, sizeof xuc);
	if (getsockopt(fd, SOL_LOCAL, LOCAL_PEERCRED, &xuc, &len) == -1)
		return -errno;
	if (len != sizeof xuc)
		return -EINVAL;
	/* At most NGROUPS (16), the egid first: what the peer had when it
	 * connected. */
	return darwin_peer_groups(
	    xuc.cr_version, XUCRED_VERSION, xuc.cr_ngroups, xuc.cr_groups,
	    (int)(sizeof xuc.cr_groups / sizeof xuc.cr_groups[0]), groups,
	    ngroups);
}

int
platform_peer_groups_max(void)
{
	struct xucred xuc;

	return (int)(sizeof xuc.cr_groups / sizeof xuc.cr_groups[0]);
}

int
platform_user_groups(const char *user, gid_t gid, gid_t **groups, int *ngroups)
{
	int cap = 32, n, *buf;
	int rc;

	for (;;) {
		buf = malloc(sizeof *buf * (size_t)cap);
		if (buf == NULL)
			return -ENOMEM;
		n = cap;
		/* macOS declares getgrouplist with int, not gid_t, and answers
		 * -1 when the array is too small. */
		if (getgrouplist(user, (int)gid, buf, &n) != -1)
			break;
		free(buf);
		if (cap >= GROUPS_MAX)
			return -E2BIG;
		cap *= 2;
	}
	rc = darwin_groups_convert(buf, n, groups);
	free(buf);
	if (rc == 0)
		*ngroups = n;
	return rc;
}

int
platform_default_socket(int system, char *buf, size_t len)
{
	return darwin_default_socket(system, getuid(),
	                             getenv("XDG_RUNTIME_DIR"), socket_home(),
	                             buf, len);
}

int
platform_default_db(int system, char *buf, size_t len)
{
	const char *home = getenv("HOME");
	struct passwd *pw;

	if (!system && (home == NULL || home[0] != '/')) {
		pw = getpwuid(getuid());
		home = pw != NULL ? pw->pw_dir : NULL;
	}
	return darwin_default_db(system, home, buf, len);
}

/*
 * Keep-awake: the system's caffeinate holds a power assertion that
 * prevents idle system sleep (-i) for as long as it runs, and ends by
 * itself when the daemon does (-w pid), so a crash releases it too. zig's
 * macOS headers carry no IOKit (IOPMAssertionCreateWithName), and
 * caffeinate is what the IOKit call would be wrapped in anyway.
 */
#define CAFFEINATE "/usr/bin/caffeinate"
#define AWAKE_REAP_MAX 8

static struct {
	pid_t pid;                  /* the running caffeinate, or 0 */
	int hold;                   /* what it holds: PLATFORM_AWAKE_* */
	pid_t reap[AWAKE_REAP_MAX]; /* stopped, not yet reaped */
	int nreap;
} awake;

static void
awake_reap(void)
{
	int i = 0, status;
	pid_t r;

	while (i < awake.nreap) {
		r = waitpid(awake.reap[i], &status, WNOHANG);
		if (r == awake.reap[i] || (r == -1 && errno != EINTR))
			awake.reap[i] = awake.reap[--awake.nreap];
		else
			i++;
	}
}

static void
awake_stop(int wait)
{
	int tries;

	if (awake.pid > 0) {
		(void)kill(awake.pid, SIGTERM);
		if (awake.nreap < AWAKE_REAP_MAX)
			awake.reap[awake.nreap++] = awake.pid;
		awake.pid = 0;
	}
	awake_reap();
	/* At shutdown: a moment for them to go, then leave them to launchd
	 * (caffeinate -w ends with the daemon anyway). */
	for (tries = 0; wait && awake.nreap > 0 && tries < 100; tries++) {
		usleep(1000);
		awake_reap();
	}
}

/*
 * -i (PreventUserIdleSystemSleep) for a job holding memory, on battery
 * too; -s (PreventSystemSleep) for a waiting queue, which macOS honours
 * only on AC power (caffeinate(8)): a queue never drains a battery.
 */
static int
awake_start(int hold, char *cause, size_t causelen)
{
	char pidarg[24];
	int fds[2], err = 0, nullfd, fd;
	ssize_t n;
	pid_t pid;

	snprintf(pidarg, sizeof pidarg, "%d", (int)getpid());
	if (pipe(fds) == -1) {
		snprintf(cause, causelen, "pipe: %s", strerror(errno));
		return -errno;
	}
	(void)fcntl(fds[0], F_SETFD, FD_CLOEXEC);
	(void)fcntl(fds[1], F_SETFD, FD_CLOEXEC);
	if ((nullfd = open("/dev/null", O_RDWR | O_CLOEXEC)) == -1) {
		err = errno;
		close(fds[0]);
		close(fds[1]);
		snprintf(cause, causelen, "/dev/null: %s", strerror(err));
		return -err;
	}
	if ((pid = fork()) == -1) {
		err = errno;
		close(fds[0]);
		close(fds[1]);
		close(nullfd);
		snprintf(cause, causelen, "fork: %s", strerror(err));
		return -err;
	}
	if (pid == 0) {
		char *argv[] = {CAFFEINATE,
		                hold == PLATFORM_AWAKE_QUEUE ? "-s" : "-i",
		                "-w", pidarg, NULL};
		char *envp[] = {NULL};

		(void)dup2(nullfd, STDIN_FILENO);
		(void)dup2(nullfd, STDOUT_FILENO);
		(void)dup2(nullfd, STDERR_FILENO);
		/* Nothing of the daemon's: its socket, database and log. */
		for (fd = 3; fd < 4096; fd++)
			if (fd != fds[1])
				(void)close(fd);
		(void)setsid(); /* no signal for the daemon's group */
		execve(CAFFEINATE, argv, envp);
		err = errno;
		(void)write(fds[1], &err, sizeof err);
		_exit(127);
	}
	close(fds[1]);
	close(nullfd);
	/* EOF: exec succeeded (the pipe is close-on-exec); data: it failed. */
	do
		n = read(fds[0], &err, sizeof err);
	while (n == -1 && errno == EINTR);
	close(fds[0]);
	if (n == (ssize_t)sizeof err) {
		while (waitpid(pid, NULL, 0) == -1 && errno == EINTR)
			;
		snprintf(cause, causelen, "%s: %s", CAFFEINATE, strerror(err));
		return -err;
	}
	awake.pid = pid;
	awake.hold = hold;
	return 0;
}

int
platform_keep_awake(int hold, char *cause, size_t causelen)
{
	int status;

	awake_reap();
	/* One that ended on its own (killed by hand) is started again. */
	if (awake.pid > 0 && waitpid(awake.pid, &status, WNOHANG) == awake.pid)
		awake.pid = 0;
	if (hold && awake.pid > 0 && awake.hold == hold)
		return 0;
	if (!hold) {
		awake_stop(0);
		return 0;
	}
	/* Another kind of hold is another caffeinate: the old one goes
	 * once the new one runs, so the machine is never left unheld. */
	if (awake.pid > 0) {
		pid_t old = awake.pid;
		int rc;

		awake.pid = 0;
		if ((rc = awake_start(hold, cause, causelen)) != 0) {
			awake.pid = old; /* still holds what it held */
			return rc;
		}
		(void)kill(old, SIGTERM);
		if (awake.nreap < AWAKE_REAP_MAX)
			awake.reap[awake.nreap++] = old;
		return 0;
	}
	return awake_start(hold, cause, causelen);
}

/*
 * setsid() gives the new session the login name of the process that made
 * it (the daemon's: root), and getlogin() answers the session's, so a job
 * would say root. setlogin(2) takes root, so this runs before the switch
 * to the user.
 */
int
platform_session_login(const char *user)
{
	if (user == NULL || user[0] == '\0')
		return 0;
	return setlogin(user) == -1 ? -errno : 0;
}

void
platform_spawn_hint(int err, const char *path, const char *home, char *buf,
                    size_t len)
{
	darwin_spawn_hint(
	    err, path, home,
	    darwin.boot_alias[0] != '\0' ? darwin.boot_alias : NULL, buf, len);
}

void
platform_log_hint(const char *text, size_t len, const char *home, char *buf,
                  size_t buflen)
{
	darwin_log_hint(text, len, home,
	                darwin.boot_alias[0] != '\0' ? darwin.boot_alias : NULL,
	                buf, buflen);
}

/*
 * The name of /Volumes' link to / ("Macintosh HD"): the boot volume's
 * alias there, which TCC does not guard as a removable volume. Read once
 * at start; a volume renamed later only makes the hint less apt.
 */
static void
find_boot_alias(void)
{
	char path[PATH_MAX], target[8];
	struct dirent *e;
	struct stat st;
	ssize_t n;
	DIR *dir;

	darwin.boot_alias[0] = '\0';
	if ((dir = opendir("/Volumes")) == NULL)
		return;
	while ((e = readdir(dir)) != NULL) {
		if (e->d_name[0] == '.' ||
		    snprintf(path, sizeof path, "/Volumes/%s", e->d_name) >=
		        (int)sizeof path ||
		    lstat(path, &st) != 0 || !S_ISLNK(st.st_mode))
			continue;
		n = readlink(path, target, sizeof target);
		if (n == 1 && target[0] == '/') {
			snprintf(darwin.boot_alias, sizeof darwin.boot_alias,
			         "%s", e->d_name);
			break;
		}
	}
	closedir(dir);
}

void
platform_trim_memory(void)
{
	/* Every zone, as much as it can give back. */
	malloc_zone_pressure_relief(NULL, 0);
}
