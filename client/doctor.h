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

#endif
