/*
 * platform.h on macOS: only the system calls. Every raw value goes through
 * platform-darwin-convert.c, which is unit-tested on any OS; docs/macos.md
 * names the public source of each value.
 */
#include <sys/types.h>
#include <sys/proc_info.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/sysctl.h>
#include <sys/ucred.h>
#include <sys/un.h>

#include <errno.h>
#include <libproc.h>
#include <limits.h>
#include <mach/mach.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "platform-darwin-convert.h"
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
} darwin = {
    .mibs =
        {
            [MIB_MEMSIZE] = {.name = "hw.memsize"},
            [MIB_LEVEL] = {.name = "kern.memorystatus_level"},
            [MIB_PRESSURE] = {.name = "kern.memorystatus_vm_pressure_level"},
            [MIB_SWAPUSAGE] = {.name = "vm.swapusage"},
        },
};

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
		if (sysctlnametomib(m->name, m->mib, &m->len) == -1) {
			snprintf(cause, causelen, "sysctl %s: %s", m->name,
			         strerror(errno));
			return -errno;
		}
	}
	darwin.host = mach_host_self();
	/* host_statistics64 counts kernel pages (16 KiB on Apple Silicon,
	 * 4 KiB on Intel); ask rather than assume. */
	if (host_page_size(darwin.host, &page_size) != KERN_SUCCESS ||
	    page_size == 0)
		page_size = vm_kernel_page_size;
	darwin.page_size = page_size;
	darwin.ready = 1;
	return 0;
}

void
platform_shutdown(void)
{
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

int
platform_sys_sample(struct sys_sample *s, char *cause, size_t causelen)
{
	struct darwin_vm_raw raw = {0};
	vm_statistics64_data_t vm;
	mach_msg_type_number_t count = HOST_VM_INFO64_COUNT;
	struct xsw_usage xsu;
	uint64_t memsize;
	kern_return_t kr;
	int level, pressure, rc;

	if (!darwin.ready) {
		snprintf(cause, causelen, "platform not initialised");
		return -EINVAL;
	}
	if ((rc = sysctl_read(MIB_MEMSIZE, &memsize, sizeof memsize, cause,
	                      causelen)) < 0 ||
	    (rc = sysctl_read(MIB_LEVEL, &level, sizeof level, cause,
	                      causelen)) < 0 ||
	    (rc = sysctl_read(MIB_PRESSURE, &pressure, sizeof pressure, cause,
	                      causelen)) < 0 ||
	    (rc = sysctl_read(MIB_SWAPUSAGE, &xsu, sizeof xsu, cause,
	                      causelen)) < 0)
		return rc;
	kr = host_statistics64(darwin.host, HOST_VM_INFO64, (host_info64_t)&vm,
	                       &count);
	if (kr != KERN_SUCCESS) {
		snprintf(cause, causelen, "host_statistics64: %s",
		         mach_error_string(kr));
		return -EIO;
	}

	raw.memsize = memsize;
	raw.memorystatus_level = level;
	raw.vm_pressure_level = pressure;
	raw.swap_total = xsu.xsu_total;
	raw.swap_used = xsu.xsu_used;
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
	socklen_t len = sizeof *pid;

	if (getpeereid(fd, uid, gid) == -1)
		return -errno;
	/* LOCAL_PEERPID names the process that connected; only logs and
	 * ownership hints use it, so its absence is not an error. */
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
	                             getenv("XDG_RUNTIME_DIR"), buf, len);
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
