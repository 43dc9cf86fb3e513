/*
 * doctor.h on Linux: /proc/meminfo as the daemon reads it
 * (docs/metrics.md). Pressure is not compared: its levels are the
 * daemon's PSI thresholds, which the client does not know.
 */
#include <errno.h>
#include <pwd.h>
#include <stdlib.h>
#include <unistd.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "doctor.h"

int
doctor_kernel_read(struct doctor_kernel *k, char *cause, size_t causelen)
{
	char line[256];
	uint64_t kb, total = 0, avail = 0, swap_total = 0, swap_free = 0;
	int seen = 0;
	FILE *f;

	memset(k, 0, sizeof *k);
	k->os = "linux";
	k->free_pct = -1;
	if ((f = fopen("/proc/meminfo", "r")) == NULL) {
		snprintf(cause, causelen, "/proc/meminfo: %s", strerror(errno));
		return -errno;
	}
	while (fgets(line, sizeof line, f) != NULL) {
		if (sscanf(line, "MemTotal: %" SCNu64, &kb) == 1) {
			total = kb * 1024;
			seen |= 1;
		} else if (sscanf(line, "MemAvailable: %" SCNu64, &kb) == 1) {
			avail = kb * 1024;
			seen |= 2;
		} else if (sscanf(line, "SwapTotal: %" SCNu64, &kb) == 1) {
			swap_total = kb * 1024;
			seen |= 4;
		} else if (sscanf(line, "SwapFree: %" SCNu64, &kb) == 1) {
			swap_free = kb * 1024;
			seen |= 8;
		}
	}
	fclose(f);
	if (seen != 15 || total == 0) {
		snprintf(
		    cause, causelen,
		    "/proc/meminfo lacks MemTotal, MemAvailable, SwapTotal "
		    "or SwapFree");
		return -EINVAL;
	}
	k->total_bytes = total;
	k->total_source = "/proc/meminfo MemTotal";
	k->free_pct =
	    100.0 * (double)(avail < total ? avail : total) / (double)total;
	k->free_source = "/proc/meminfo MemAvailable / MemTotal";
	k->has_swap = 1;
	k->swap_total_bytes = swap_total;
	k->swap_used_bytes =
	    swap_free < swap_total ? swap_total - swap_free : 0;
	k->swap_source = "/proc/meminfo SwapTotal - SwapFree";
	return 0;
}

static int
put(char *buf, size_t len, const char *a, const char *b)
{
	int n = snprintf(buf, len, "%s%s", a, b);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int
doctor_default_db(int system, char *buf, size_t len)
{
	const char *dir = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
	struct passwd *pw;

	if (system)
		return put(buf, len, "/var/lib/stageload/stageload.db", "");
	if (dir != NULL && dir[0] == '/')
		return put(buf, len, dir, "/stageload/stageload.db");
	if (home == NULL || home[0] != '/') {
		if ((pw = getpwuid(getuid())) == NULL || pw->pw_dir == NULL)
			return -ENOENT;
		home = pw->pw_dir;
	}
	return put(buf, len, home, "/.local/state/stageload/stageload.db");
}

/* A root daemon on Linux is installed by the system's package manager
 * into root's directories; its libraries are the distribution's. */
int
doctor_program_check(const char *socket_path, char *program, size_t programlen,
                     char *why, size_t whylen)
{
	(void)socket_path;
	if (programlen > 0)
		program[0] = '\0';
	if (whylen > 0)
		why[0] = '\0';
	return -ENOTSUP;
}
