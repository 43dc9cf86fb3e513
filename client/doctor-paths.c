/*
 * doctor.h's rules about what root runs, on every OS, so they are
 * unit-tested on Linux (tests/test_doctor_paths.c) though only macOS's
 * doctor uses them (doctor-darwin.c): launchd/common.sh's path_unsafe in
 * C, and the reading of one line of otool -L.
 */
#include <sys/stat.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "doctor.h"

/* One file or directory: root's, and not writable by group or others. */
static int
component_unsafe(const char *path, const struct stat *st, char *why,
                 size_t whylen)
{
	if (st->st_uid != 0) {
		snprintf(why, whylen, "%s is owned by uid %u, not root", path,
		         (unsigned)st->st_uid);
		return 1;
	}
	if (st->st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(why, whylen,
		         "%s is writable by group or others (mode %04o)", path,
		         (unsigned)(st->st_mode & 07777));
		return 1;
	}
	return 0;
}

/* dir/name into buf (dir "/" gives "/name"); -ENAMETOOLONG past len. */
static int
join(char *buf, size_t len, const char *dir, const char *name)
{
	size_t d = strcmp(dir, "/") == 0 ? 0 : strlen(dir), n = strlen(name);

	if (d + 1 + n + 1 > len)
		return -ENAMETOOLONG;
	memcpy(buf, dir, d);
	buf[d] = '/';
	memcpy(buf + d + 1, name, n + 1);
	return 0;
}

/* launchd/common.sh's path_unsafe in C (doctor.h). */
int
doctor_path_unsafe(const char *path, char *why, size_t whylen)
{
	char p[PATH_MAX], dir[PATH_MAX], real[PATH_MAX], link[PATH_MAX];
	char *slash;
	struct stat st;
	ssize_t n;
	int hops;

	/* What launchd or the kernel names is absolute; anything else
	 * depends on a directory nobody checked. */
	if (path[0] != '/') {
		snprintf(why, whylen, "%s: not an absolute path", path);
		return 1;
	}
	snprintf(p, sizeof p, "%s", path);
	for (hops = 0; hops < 40; hops++) {
		snprintf(dir, sizeof dir, "%s", p);
		slash = strrchr(dir, '/');
		if (slash == dir)
			slash[1] = '\0';
		else
			*slash = '\0';
		if (realpath(dir, real) == NULL) {
			snprintf(why, whylen, "%s: %s", dir, strerror(errno));
			return 1;
		}
		/* Every directory from the file's up to /. */
		snprintf(dir, sizeof dir, "%s", real);
		for (;;) {
			if (stat(dir, &st) != 0) {
				snprintf(why, whylen, "%s: %s", dir,
				         strerror(errno));
				return 1;
			}
			if (component_unsafe(dir, &st, why, whylen))
				return 1;
			if (strcmp(dir, "/") == 0)
				break;
			slash = strrchr(dir, '/');
			if (slash == dir)
				slash[1] = '\0';
			else
				*slash = '\0';
		}
		if (join(dir, sizeof dir, real, strrchr(p, '/') + 1) != 0) {
			snprintf(why, whylen, "%s: path too long", path);
			return 1;
		}
		if (lstat(dir, &st) != 0) {
			snprintf(why, whylen, "%s: %s", dir, strerror(errno));
			return 1;
		}
		if (!S_ISLNK(st.st_mode))
			return component_unsafe(dir, &st, why, whylen);
		if ((n = readlink(dir, link, sizeof link - 1)) < 0) {
			snprintf(why, whylen, "%s: %s", dir, strerror(errno));
			return 1;
		}
		link[n] = '\0';
		if (link[0] == '/')
			snprintf(p, sizeof p, "%s", link);
		else if (join(p, sizeof p, real, link) != 0) {
			snprintf(why, whylen, "%s: path too long", path);
			return 1;
		}
	}
	snprintf(why, whylen, "%s: too many symbolic links", path);
	return 1;
}

int
doctor_otool_lib(const char *line, const char *program_dir, char *lib,
                 size_t liblen)
{
	const char *p = line, *end;
	size_t n;

	while (*p == ' ' || *p == '\t')
		p++;
	/* "PATH (compatibility version A, current version B)" */
	if ((end = strstr(p, " (compatibility version")) == NULL &&
	    (end = strstr(p, " (current version")) == NULL)
		end = p + strcspn(p, "\n");
	n = (size_t)(end - p);
	if (n == 0 || (n >= 9 && strncmp(p, "/usr/lib/", 9) == 0) ||
	    (n >= 8 && strncmp(p, "/System/", 8) == 0)) {
		snprintf(lib, liblen, "%.*s", (int)n, p);
		return 1;
	}
	/* Both name the directory of the program itself (a library's own
	 * @loader_path would be the library's: not in a program's list). */
	if ((n > 13 && strncmp(p, "@loader_path/", 13) == 0) ||
	    (n > 17 && strncmp(p, "@executable_path/", 17) == 0)) {
		const char *rest = strchr(p, '/') + 1;

		snprintf(lib, liblen, "%s/%.*s", program_dir,
		         (int)(n - (size_t)(rest - p)), rest);
		return 0;
	}
	snprintf(lib, liblen, "%.*s", (int)n, p);
	return p[0] == '/' ? 0 : -1;
}
