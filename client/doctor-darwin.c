/*
 * doctor.h on macOS: the same sysctls the daemon samples
 * (docs/macos.md), read once by the client; and what root runs, by
 * launchd/install.sh's rule.
 */
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysctl.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <errno.h>
#include <libproc.h>
#include <limits.h>
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

/* The pid of the process serving the Unix socket at path: LOCAL_PEERPID
 * of a connection of our own, which only this client has used. */
static pid_t
socket_server_pid(const char *path)
{
	struct sockaddr_un sun;
	socklen_t len = sizeof(pid_t);
	pid_t pid = 0;
	int fd;

	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof sun.sun_path ||
	    (fd = socket(AF_UNIX, SOCK_STREAM, 0)) < 0)
		return 0;
	memcpy(sun.sun_path, path, strlen(path) + 1);
	if (connect(fd, (struct sockaddr *)&sun, sizeof sun) != 0 ||
	    getsockopt(fd, SOL_LOCAL, LOCAL_PEERPID, &pid, &len) != 0)
		pid = 0;
	close(fd);
	return pid;
}

int
doctor_program_check(const char *socket_path, char *program, size_t programlen,
                     char *why, size_t whylen)
{
	char cmd[PATH_MAX * 4 + 64], line[PATH_MAX + 128], lib[PATH_MAX];
	char dir[PATH_MAX], lwhy[1024], *p;
	struct stat st;
	size_t i, n;
	pid_t pid;
	FILE *f;
	int first = 1, status, rc = 0;

	program[0] = why[0] = '\0';
	/* A per-user daemon runs as its user: nothing of root's to see. */
	if (stat(socket_path, &st) != 0 || st.st_uid != 0)
		return -ENOTSUP;
	if ((pid = socket_server_pid(socket_path)) <= 0 ||
	    proc_pidpath(pid, program, (uint32_t)programlen) <= 0) {
		program[0] = '\0';
		snprintf(why, whylen,
		         "cannot learn which program serves %s (its pid %d)",
		         socket_path, (int)pid);
		return -ESRCH;
	}
	if (doctor_path_unsafe(program, why, whylen))
		return 1;
	/* otool -L PROGRAM, the path single-quoted for the shell. */
	n = (size_t)snprintf(cmd, sizeof cmd, "otool -L '");
	for (i = 0; program[i] != '\0' && n + 8 < sizeof cmd; i++) {
		if (program[i] == '\'') {
			memcpy(cmd + n, "'\\''", 4);
			n += 4;
		} else
			cmd[n++] = program[i];
	}
	snprintf(cmd + n, sizeof cmd - n, "' 2>/dev/null");
	if ((f = popen(cmd, "r")) == NULL) {
		snprintf(why, whylen, "cannot run otool: %s", strerror(errno));
		return -EIO;
	}
	snprintf(dir, sizeof dir, "%s", program);
	if ((p = strrchr(dir, '/')) != NULL)
		*p = '\0';
	while (fgets(line, sizeof line, f) != NULL) {
		if (first) { /* the file's own name */
			first = 0;
			continue;
		}
		if (rc != 0)
			continue; /* read to the end for pclose */
		switch (doctor_otool_lib(line, dir, lib, sizeof lib)) {
		case 1:
			continue; /* the system's */
		case -1:
			snprintf(why, whylen,
			         "it loads %s, which cannot be told from here "
			         "(otool -l lists its LC_RPATH)",
			         lib);
			rc = 1;
			break;
		default:
			if (doctor_path_unsafe(lib, lwhy, sizeof lwhy)) {
				snprintf(why, whylen, "it loads a library: %s",
				         lwhy);
				rc = 1;
			}
		}
	}
	status = pclose(f);
	/* Without the Command Line Tools, /usr/bin/otool only offers to
	 * install them, and fails. */
	if (rc == 0 && (status == -1 || !WIFEXITED(status) ||
	                WEXITSTATUS(status) != 0 || first)) {
		snprintf(
		    why, whylen,
		    "otool -L does not run here, so the libraries it loads "
		    "were not checked: install the Command Line Tools "
		    "(xcode-select --install)");
		return -ENOENT;
	}
	return rc;
}
