/*
 * A job as the daemon and the store see it. The state machine and the
 * admission and breach rules are specified in docs/jobs.md.
 */
#ifndef SL_JOB_H
#define SL_JOB_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "job-fields.h"
#include "names.h"

/* The names are proto/names.h's. */
enum job_state {
	JOB_QUEUED = NAMES_STATE_QUEUED,
	/* admitted; attached: waiting for the client's pid, detached: being
	 * spawned */
	JOB_ADMITTED = NAMES_STATE_ADMITTED,
	JOB_RUNNING = NAMES_STATE_RUNNING,
	/* ended on its own: exit_code or term_signal */
	JOB_EXITED = NAMES_STATE_EXITED,
	/* terminated by the daemon: end_reason says why */
	JOB_KILLED = NAMES_STATE_KILLED,
	/* could not be started: end_reason/detail say why */
	JOB_FAILED = NAMES_STATE_FAILED,
	/* cancelled before it started */
	JOB_CANCELLED = NAMES_STATE_CANCELLED,
	/* the daemon could not follow it to its end */
	JOB_LOST = NAMES_STATE_LOST,
};
#define JOB_STATE_ENDED(s) ((s) >= JOB_EXITED)

const char *job_state_name(enum job_state s);

enum job_expect_source {
	JOB_EXPECT_NONE = 0,
	JOB_EXPECT_GIVEN,
	JOB_EXPECT_LEARNED,
};
/* "given", "learned", or NULL for none (the wire's and the store's). */
const char *job_expect_source_name(enum job_expect_source e);
enum job_expect_source job_expect_source_parse(const char *name);
int job_state_parse(const char *name, enum job_state *s);

struct job {
	int64_t id;        /* assigned by the store, from 1 */
	int64_t queue_seq; /* order within a priority; kept across retries */
	uid_t uid;
	gid_t gid;
	/* The submitter's groups at submit (struct peer): a detached job
	 * gets exactly these (setgroups), never the group database's. */
	gid_t *groups;
	int ngroups;
	char *user;  /* login name of uid, or the number */
	char *name;  /* label; defaults to basename of argv[0] */
	char **argv; /* NULL-terminated */
	char *cwd;
	char **env; /* NULL-terminated; NULL for attached jobs */
	int attached;

	/* The name was given (--name, guard(name=...)), not the command's
	 * basename: only such a job learns its peaks and reserves them
	 * (docs/jobs.md, "Learned peaks"). */
	int name_given;

	int priority;               /* higher first */
	double wait_free_pct;       /* admit only when free % >= this */
	uint64_t wait_free_bytes;   /* ... and available >= this (0: none) */
	uint64_t swap_budget_bytes; /* 0: no budget */
	uint64_t expect_bytes;      /* 0: none */
	/* Where expect_bytes came from: given at submit (0 included, which
	 * opts out of a learned peak), learned from expect_runs past runs
	 * of the name, or neither. */
	enum job_expect_source expect_source;
	int expect_runs;
	int exclusive;
	int retry_on_breach; /* retries allowed */
	int umask;           /* a detached job's file mode mask */
	/* Dependencies (docs/jobs.md, "Dependencies"): the jobs it starts
	 * after, and whether any end will do (after_any) or only exit 0. */
	int64_t *after;
	int nafter;
	int after_any;
	int held;    /* hold: keeps its place, never admitted until release */
	char *group; /* its group (docs/jobs.md, "Groups"), or NULL */
	/* An element of an array (docs/jobs.md, "Arrays"): the array's id
	 * (its first element's job id; 0: not an element), its index and the
	 * array's %N (0: none). array is submit's SPEC, in memory only, while
	 * the request is handled. */
	char *array;
	int64_t array_id, array_index;
	int array_limit;
	/* run by /bin/sh -c when it ends (jobs-onend.c), or NULL */
	char *on_end;
	/* A task of a Slurm step (slurm/spank_stageload.c): its job, step and
	 * task ids, 0 0 0 for none (a Slurm job id is at least 1). */
	int64_t slurm_job_id, slurm_step_id, slurm_task_id;
	/* Who reports an attached job's end: NULL, its client on its
	 * connection; "root": root, on any connection, since the client is
	 * the process itself and its connection closes at exec. */
	char *exit_reporter;
	int attempt; /* 1-based */
	/* The attempts before this one, a JSON array of objects
	 * (PROTOCOL.md, Job: attempts; wire.c adds this one), NULL when
	 * none: written at each requeue. */
	char *attempts;
	/* Time limits (docs/jobs.md, "Time limits"): over the time it runs,
	 * summed over attempts, and of each attempt; 0: none. */
	int64_t time_limit_ms;
	int64_t time_limit_per_attempt_ms;
	/* Not admitted before this time (--begin), ms since the epoch; 0:
	 * at once. */
	int64_t begin_ms;
	/* Submitted by root, the daemon's user or a member of its admin
	 * group (jobs_privileged): its head is never passed over. In memory
	 * only: judged at submit, and again when the daemon loads it. */
	int privileged;
	/* A detached job's log is cut to its tail past this many bytes (0:
	 * never); config max_log_bytes, set when it is spawned. In memory
	 * only. */
	uint64_t max_log_bytes;

	enum job_state state;
	int64_t submitted_ms;
	int64_t admitted_ms;
	int64_t started_ms;
	int64_t ended_ms;

	pid_t pid; /* job's leader (detached: the command, not the monitor) */
	pid_t pgid;
	uint64_t start_time; /* platform_proc_start_time of pid */
	pid_t monitor_pid;   /* detached jobs */

	int exit_code; /* valid when state == JOB_EXITED and term_signal == 0 */
	int term_signal; /* signal that ended the process, 0 if none */
	char
	    *end_reason; /* swap_budget, cancel, client_gone, spawn, lost,... */
	char *end_detail; /* readable paragraph: why, with the sample */
	/* The numbers of the breach that killed it, a JSON object (wire.c
	 * shows it as the Job's public `kill`); NULL when none. */
	char *kill;

	uint64_t swap_base_bytes; /* lowest swap used since admission (or since
	                             the last breach kill restarted growth) */
	uint64_t footprint_bytes; /* latest */
	uint64_t footprint_peak_bytes;
	uint64_t swap_growth_peak_bytes;
	uint64_t job_swap_bytes; /* latest per-tree swap (Linux) */

	/* The argv shell-quoted (job_command), for list answers. In
	 * memory only. */
	char *command;
	/* What the row counts against its uid's stored bytes
	 * (store_job_bytes), kept when argv and env are dropped. In memory
	 * only. */
	int64_t bytes;
	/* The job's secret (STAGELOAD_JOB_TOKEN in its environment): a
	 * stage report that carries a token is recorded only when it is
	 * this one, so a report that reached another daemon is refused
	 * there. Random hex from the system's source; never in a Job. */
	char *job_token;
};

/* Which fields a request gave: one bit per row of proto/job-fields.h,
 * named as the member. */
#define JOB_SEEN_FIELD(m, ...) unsigned m : 1;
struct job_seen {
	JOB_FIELDS(JOB_SEEN_FIELD)
};

void job_free(struct job *j);

#define JOB_COMMAND_MAX 256
/* argv as one shell command line: words quoted with '' where needed (a '
 * as '\''), joined by spaces, at most JOB_COMMAND_MAX bytes: longer is
 * cut on a UTF-8 boundary and ends with U+2026. Writes it to out (at least
 * JOB_COMMAND_MAX + 1 bytes) and returns its length. */
size_t job_command(char *const *argv, char *out, size_t outlen);
/* A job in the table keeps its argv and env in the store only: they may
 * be a megabyte each (docs/security.md), and are read back to start the
 * job or to show it. Sets j->command first; -ENOMEM. */
int job_drop_args(struct job *j);

/* Its attempts as the Job shows them (PROTOCOL.md, Job: attempts): the
 * records of those before (j->attempts), then this one as it stands, its
 * end (ended_ms, end_reason) when ended. NULL when out of memory. */
struct cJSON;
/* An int member of o, or null when not present (a time not reached). */
void job_add_int_or_null(struct cJSON *o, const char *name, int64_t v,
                         int present);
struct cJSON *job_attempts_json(const struct job *j, int ended,
                                int64_t ended_ms);

#endif
