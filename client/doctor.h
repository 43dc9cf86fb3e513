/*
 * What stageloadctl doctor reads from the kernel itself, to compare with
 * what the daemon says: one file per OS (doctor-darwin.c, doctor-linux.c),
 * chosen by CMake like the daemon's platform files. docs/cli.md, "doctor".
 */
#ifndef SL_DOCTOR_H
#define SL_DOCTOR_H

#include <stddef.h>
#include <stdint.h>

struct doctor_kernel {
	const char *os;       /* as the daemon's info names it */
	uint64_t total_bytes; /* 0: unknown */
	double free_pct;      /* < 0: unknown */
	int has_swap;
	uint64_t swap_used_bytes;
	uint64_t swap_total_bytes;
	char pressure[16]; /* normal, warn, critical; "": not compared */
	/* where each came from, for the report */
	const char *total_source, *free_source, *swap_source, *pressure_source;
};

/* Fill k from the running kernel; -errno with a cause on failure. */
int doctor_kernel_read(struct doctor_kernel *k, char *cause, size_t causelen);

/* The database a daemon uses when it is given no --db, as it chooses it
 * (daemon/platform-*.c, platform_default_db): the system daemon's when
 * system, else this user's per-user daemon's. -errno when there is none. */
int doctor_default_db(int system, char *buf, size_t len);

/*
 * What a system daemon runs as root: the program serving the socket at
 * socket_path (its pid from the connection, its path from the kernel) and
 * every library that program loads (otool -L) outside the system's
 * (/usr/lib, /System), each checked by launchd/install.sh's rule
 * (path_unsafe: root's, not writable by group or others, nor any directory
 * above it, links followed). program gets its path when known. 0: all
 * root's; 1: one is not, why says which and why; -ENOTSUP: nothing to
 * check here (Linux, or a per-user daemon, which runs as its user);
 * another -errno: not checked, why says why (no otool: the Command Line
 * Tools).
 */
int doctor_program_check(const char *socket_path, char *program,
                         size_t programlen, char *why, size_t whylen);

/*
 * launchd/common.sh's path_unsafe (doctor-paths.c): 0 when root alone
 * could replace path, that is the directory it is in and each one up to
 * /, and the file itself, are owned by root and not writable by group or
 * others, with a symbolic link followed (its own directory checked) and
 * its target checked the same way; else 1, with why naming the first
 * one at fault (or what could not be read).
 */
int doctor_path_unsafe(const char *path, char *why, size_t whylen);

/*
 * One library line of otool -L (after the file's own line) into lib:
 * 1 for the system's (/usr/lib, /System: the sealed volume or the dyld
 * cache) and for an empty line; 0 for a path, @loader_path/ and
 * @executable_path/ resolved against program_dir; -1 for one that cannot
 * be told from the line (@rpath), lib holding it as written.
 */
int doctor_otool_lib(const char *line, const char *program_dir, char *lib,
                     size_t liblen);

#endif
