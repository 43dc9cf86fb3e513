/*
 * struct sl_job's members, private to libstageload and to stageloadctl,
 * which is built with it: programs use stageload.h's accessors
 * (sl_job_get_*), which read any member of the Job by its name. The
 * members here are the decoded copies stageloadctl reads; obj is the Job
 * itself, which the accessors read.
 */
#ifndef SL_JOB_PRIVATE_H
#define SL_JOB_PRIVATE_H

#include <stdint.h>

#include "stageload.h"

struct cJSON;

/*
 * Times are 0 and has_* flags 0 where the protocol says null. Strings
 * that a caller may not see are NULL. Release with sl_job_clear().
 */
struct sl_job {
	int64_t id;
	char user[64];
	int64_t uid;
	char name[256];
	char state[16]; /* queued admitted running exited killed failed
	                   cancelled lost */
	int attached;
	int priority;
	double wait_free_pct;
	uint64_t swap_budget_bytes;
	uint64_t expect_bytes;
	int exclusive;
	int retry_on_breach;
	int attempt;
	int position; /* 0 unless queued */
	int64_t submitted_at_ms, admitted_at_ms, started_at_ms, ended_at_ms;
	int64_t pid; /* 0 when none */
	uint64_t footprint_bytes, footprint_peak_bytes;
	uint64_t swap_growth_bytes, swap_growth_peak_bytes;
	uint64_t job_swap_bytes;
	int has_exit_code;
	int exit_code;
	int signal;          /* 0 when none */
	char end_reason[32]; /* "" when none */
	char *end_detail;    /* malloc'd or NULL */
	char **argv;         /* malloc'd NULL-terminated, or NULL */
	char *cwd;
	char **env;
	/* From sl_status with protocol version 2: the argv as one shell
	 * command line, at most 256 bytes (cut with U+2026), instead of argv
	 * (NULL then); NULL when not the caller's to see. sl_show gives
	 * argv. */
	char *command;
	/* A queued job's waiting_for (PROTOCOL.md, Job): "free", "settle",
	 * ...; a value the caller does not know reads as "other". "" when
	 * not queued. */
	char waiting_for[32];
	char group[33];           /* "" when none */
	uint64_t wait_free_bytes; /* 0 when none */
	/* Where expect_bytes came from: "given", "learned" (from
	 * expect_runs past runs of the name) or "" (none). */
	char expect_source[16];
	int expect_runs;
	int name_given;    /* the name was given, not the command's */
	struct cJSON *obj; /* the Job as it came, for the accessors */
};

#endif
