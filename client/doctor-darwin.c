/*
 * doctor.h on macOS: the same sysctls the daemon samples
 * (docs/macos.md), read once by the client.
 */
#include <sys/types.h>
#include <sys/sysctl.h>

#include <errno.h>
#include <pwd.h>
#include <stdlib.h>
#include <unistd.h>
#include <stdio.h>
#include <string.h>

#include "doctor.h"

static int
read_one(const char *name, void *buf, size_t size, char *cause, size_t causelen)
{
	size_t len = size;

	if (sysctlbyname(name, buf, &len, NULL, 0) == -1 || len != size) {
		snprintf(cause, causelen, "sysctl %s: %s", name,
		         len != size ? "unexpected size" : strerror(errno));
		return -EIO;
	}
	return 0;
}

int
doctor_kernel_read(struct doctor_kernel *k, char *cause, size_t causelen)
{
	struct xsw_usage xsu;
	uint64_t memsize, usable = 0;
	int level, pressure, rc;

	memset(k, 0, sizeof *k);
	k->os = "darwin";
	k->free_pct = -1;
	if ((rc = read_one("hw.memsize", &memsize, sizeof memsize, cause,
	                   causelen)) < 0 ||
	    (rc = read_one("kern.memorystatus_level", &level, sizeof level,
	                   cause, causelen)) < 0 ||
	    (rc = read_one("kern.memorystatus_vm_pressure_level", &pressure,
	                   sizeof pressure, cause, causelen)) < 0 ||
	    (rc = read_one("vm.swapusage", &xsu, sizeof xsu, cause, causelen)) <
	        0)
		return rc;
	/* The daemon's total: the base of memorystatus_level, hw.memsize
	 * on a kernel without it (docs/macos.md). */
	if (read_one("hw.memsize_usable", &usable, sizeof usable, cause,
	             causelen) == 0 &&
	    usable > 0) {
		k->total_bytes = usable;
		k->total_source = "sysctl hw.memsize_usable";
	} else {
		k->total_bytes = memsize;
		k->total_source = "sysctl hw.memsize";
	}
	k->free_pct = level;
	k->free_source = "sysctl kern.memorystatus_level";
	k->has_swap = 1;
	k->swap_used_bytes = xsu.xsu_used;
	k->swap_total_bytes = xsu.xsu_total;
	k->swap_source = "sysctl vm.swapusage";
	snprintf(k->pressure, sizeof k->pressure, "%s",
	         pressure == 1   ? "normal"
	         : pressure == 2 ? "warn"
	         : pressure == 4 ? "critical"
	                         : "unknown");
	k->pressure_source = "sysctl kern.memorystatus_vm_pressure_level";
	return 0;
}

int
doctor_default_db(int system, char *buf, size_t len)
{
	const char *home = getenv("HOME");
	struct passwd *pw;
	int n;

	if (system)
		n = snprintf(buf, len, "%s", "/var/db/stageload/stageload.db");
	else {
		if (home == NULL || home[0] != '/') {
			if ((pw = getpwuid(getuid())) == NULL ||
			    pw->pw_dir == NULL)
				return -ENOENT;
			home = pw->pw_dir;
		}
		n = snprintf(buf, len,
		             "%s/Library/Application Support/stageload/"
		             "stageload.db",
		             home);
	}
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}
