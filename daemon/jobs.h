/*
 * The job table: queue, admission, enforcement, spawning and re-adoption.
 * The pure decisions live in admit.c and enforce.c; this module applies
 * them and commits every transition to the store before it tells anyone,
 * through one note callback. It knows no client protocol: the layers
 * above turn its notes into wire messages (notify.c) and its views into
 * answers (control-jobs.c). docs/architecture.md shows where it stands.
 */
#ifndef SL_JOBS_H
#define SL_JOBS_H

#include <stdint.h>
#include <sys/types.h>

#include "admit.h"
#include "daemon.h"
#include "job.h"
#include "spawn.h"
#include "store.h"

/* An attached job whose client has not come back after a daemon restart is
 * given up (queued: cancelled, admitted: lost) after this long. */
#define JOBS_RESUME_GRACE_MS 30000
/* A job whose end root reports (exit_reporter "root": a Slurm task) and
 * whose processes are gone ends lost (no_report) when no report came
 * within this long. */
#define JOBS_REPORT_GRACE_MS 10000

/* What the table tells the layers above, each once it is on disk. */
enum jobs_note_kind {
	JOBS_NOTE_ADMITTED, /* an attached job may start: its client runs it */
	JOBS_NOTE_QUEUE,    /* an attached job's place in the queue changed */
	JOBS_NOTE_BREACH,   /* an attached job passed its swap budget */
	JOBS_NOTE_ENDED,    /* a job's end is recorded */
	JOBS_NOTE_EVENT,    /* an event is recorded */
};

struct jobs_view;

struct jobs_note {
	enum jobs_note_kind kind;
	uint64_t client_id;              /* ADMITTED, QUEUE, BREACH, ENDED */
	const struct job *job;           /* all but EVENT */
	const struct store_event *event; /* EVENT */
	long position, of;               /* QUEUE */
	double free_pct;                 /* QUEUE */
	enum admit_wait wait;            /* QUEUE */
	int64_t wait_after;              /* QUEUE: ADMIT_WAIT_AFTER's job */
	const struct jobs_view *view;    /* QUEUE: waiting_on, until when */
	uint64_t growth_bytes;           /* BREACH */
	int requeued;                    /* BREACH */
	const char *detail;              /* BREACH: the paragraph, or NULL */
};

typedef void (*jobs_note_cb)(struct daemon *d, const struct jobs_note *n);

/* Where the table meets the OS to act: tests record these instead. */
struct jobs_ops {
	int (*spawn)(const char *state_dir, const struct job *j,
	             struct spawn_child *child, char *cause, size_t causelen);
	int (*signal_tree)(pid_t pgid, const pid_t *pids, size_t n, int sig);
};

/* Load unended jobs from the store and re-adopt or mark them. ops NULL:
 * spawn.c's. Notes go to note (NULL: nowhere). */
int jobs_init(struct daemon *d, jobs_note_cb note, const struct jobs_ops *ops,
              char *cause, size_t causelen);
void jobs_shutdown(struct daemon *d); /* leaves running jobs alone */
/* Each tick: samples job trees, enforces budgets, then admits. Never
 * waits on storage or clients. */
void jobs_on_sample(struct daemon *d, const struct sys_sample *s);
/* The same; full 0 for a fast sample in between the normal ones: the
 * jobs' samples are stored only from full ones. */
void jobs_on_sample_at(struct daemon *d, const struct sys_sample *s, int full);
/* Why the daemon should sample at its fast interval now, a static
 * string, or NULL for the normal interval (docs/jobs.md, "Sampling
 * rate"). Called by the tick after each sample. */
const char *jobs_fast_reason(struct daemon *d, const struct sys_sample *s);

/* A read-only look at one job, valid until the table next changes. */
/* The most jobs a queued job is said to wait behind (waiting_on). */
#define JOBS_WAIT_ON_MAX 8

/* One job a queued job waits behind: its id, user and name (pointers
 * into the table, valid while it is unchanged). */
struct jobs_wait_on {
	int64_t id;
	const char *user;
	const char *name;
};

struct jobs_view {
	const struct job *j;
	int in_table;         /* a record here (else loaded from the store) */
	int live;             /* in the table and not ended */
	int end_pending;      /* ended here, not yet on disk */
	int terminating;      /* being terminated (SIGTERM sent), for good */
	long position;        /* 1-based while queued */
	enum admit_wait wait; /* while queued */
	int64_t wait_after;   /* ADMIT_WAIT_AFTER: the job it waits for */
	/* While queued: the jobs it waits behind, and until when (ms since
	 * the epoch, 0: not known): PROTOCOL.md, Job, waiting_on. */
	struct jobs_wait_on wait_on[JOBS_WAIT_ON_MAX];
	int nwait_on;
	int64_t wait_until_ms;
	uint64_t growth_bytes;
	uint64_t client_id; /* attached: the connection that owns it */
	struct job *stored; /* owned: freed by jobs_view_free */
	/* owned: a table job's argv and env, read from the store by
	 * jobs_view_args (the table keeps neither) */
	struct job *args;
};

/* PROTO_E_NOJOB with cause when there is no such job. */
int jobs_get(struct daemon *d, int64_t id, struct jobs_view *v, char *cause,
             size_t causelen);
/* The same, but a job loaded from the store has no env, and its argv
 * only as its command line: for list answers (wire_job_list); a queued
 * job's position is as jobs_positions last set it. */
void jobs_positions(struct daemon *d);
int jobs_get_lean(struct daemon *d, int64_t id, struct jobs_view *v,
                  char *cause, size_t causelen);
void jobs_view_free(struct jobs_view *v);
/* Reads a table job's argv and env from the store into v->args, for an
 * answer that shows them (show, status in protocol version 1); nothing to
 * do for a job loaded from the store. PROTO_E_STORAGE with cause. */
int jobs_view_args(struct daemon *d, struct jobs_view *v, char *cause,
                   size_t causelen);
/* The jobs status lists from the table, in its order: those holding
 * memory, the queue in order, then (with ended) those ended but not on
 * disk. *out is malloc'd; -ENOMEM. */
int jobs_list(struct daemon *d, int ended, struct jobs_view **out, size_t *n);
/* Live jobs by state; of one uid, or of all with uid (uid_t)-1. */
/*
 * What the keep-awake rule needs (awake.h): jobs admitted or running,
 * queued jobs whose wait awake_wait_counts, and the latest admission time
 * (0: none since the start, and no job re-adopted was admitted).
 */
void jobs_awake_counts(struct daemon *d, int *holding, int *ready,
                       int64_t *last_admit_ms);
void jobs_count(struct daemon *d, uid_t uid, int counts[JOB_LOST + 1]);
/* Since-start counters for info: jobs ended, by state and end reason
 * (index 0: no reason; jobs_reason_name), and breaches (requeued ones
 * too). In memory: they start at 0 with the daemon. */
#define JOBS_NREASONS NAMES_END_COUNT
struct jobs_counters {
	uint64_t ended[JOB_LOST + 1][JOBS_NREASONS];
	uint64_t breaches;
};
void jobs_counters(struct daemon *d, struct jobs_counters *c);
int jobs_reason_index(const char *reason);
const char *jobs_reason_name(int i);
/* Is the job in the table and not ended? */
int jobs_is_live(struct daemon *d, int64_t id);

/* May uid (primary group gid, groups: the submitting connection's) set a
 * priority above 0, and is its head never passed over? Root, the daemon's
 * own user, and members of the configured admin_group. docs/jobs.md,
 * "Queue order". */
int jobs_privileged(struct daemon *d, uid_t uid, gid_t gid, const gid_t *groups,
                    int ngroups);

/*
 * Transitions the front asks for; it has checked who may ask. Each returns
 * 0 or a PROTO_E_* code with cause.
 */
/* j is consumed; client_id for an attached job. */
/* 1 when token is job j's (compared in constant time), or j has none
 * (a job from before tokens); 0 otherwise, a NULL token included. */
int jobs_token_matches(const struct job *j, const char *token);
int jobs_submit(struct daemon *d, struct job *j, uint64_t client_id,
                int64_t *id, long *position, size_t *queued, char *cause,
                size_t causelen);
/* An array (docs/jobs.md, "Arrays"): n elements like t (consumed),
 * indices[k] the k-th's index, limit its %N (0: none), all stored in one
 * transaction or none; *array_id is the first element's job id. The
 * front has checked the count against the uid's queued limit. */
int jobs_submit_array(struct daemon *d, struct job *t, const int64_t *indices,
                      size_t n, int limit, int64_t *array_id, long *position,
                      size_t *queued, char *cause, size_t causelen);
/* hold (held 1) or release (0) a queued job: it keeps its place; a held
 * one is never admitted. PROTO_E_STATE when it is not queued. */
int jobs_hold(struct daemon *d, int64_t id, int held, char *cause,
              size_t causelen);
/* A whole array's cancel or hold is under way (control-ids.c walks it a
 * slice of the loop at a time): until the thaw, none of its elements is
 * admitted, so none starts between slices only to be ended by the next.
 * Freezes nest; -ENOMEM when it cannot be noted. */
int jobs_array_freeze(struct daemon *d, int64_t array_id);
void jobs_array_thaw(struct daemon *d, int64_t array_id);
/* update: a queued job's fields that seen marks (those proto/job-fields.h
 * marks for update) take their values from vals; the front has checked
 * them as submit would and applied the rules across fields. PROTO_E_STATE
 * when it is not queued. */
int jobs_update(struct daemon *d, int64_t id, const struct job *vals,
                const struct job_seen *seen, char *cause, size_t causelen);
/* The jobs j would start after, checked at submit: each must exist, be
 * the submitter's own (root: anyone's), and, unless any end of theirs
 * will do, not have ended otherwise than with exit 0. Without any, that
 * flag is cleared: it means nothing. PROTO_E_NOJOB, PROTO_E_PERM or
 * PROTO_E_STATE with cause. */
int jobs_after_check(struct daemon *d, struct job *j, char *cause,
                     size_t causelen);
/* who: the canceller's name, for the record. */
int jobs_cancel(struct daemon *d, int64_t id, const char *who, char *cause,
                size_t causelen);
/* job_pid: the attached client started its command. */
int jobs_attach(struct daemon *d, int64_t id, uint64_t client_id, pid_t pid,
                pid_t pgid, uint64_t start_time);
/* job_exit of an attempt the daemon already ended (a kill's end or a
 * breach's requeue, noticed when its process was gone): 1 once, after which
 * the report is answered with the job as it is now; else 0. */
int jobs_exit_owed(struct daemon *d, int64_t id);
/* job_exit: exactly one of code >= 0, sig > 0. */
int jobs_exit(struct daemon *d, int64_t id, int code, int sig, char *cause,
              size_t causelen);
/* stage: a running job entered the stage name (docs/jobs.md, "Stages");
 * -32005 when it is not running, -32004 past JOBS_MAX_STAGES, -32006 while
 * storage fails. */
#define JOBS_MAX_STAGES 100
int jobs_stage(struct daemon *d, int64_t id, const char *name, char *cause,
               size_t causelen);
/* The job's stages, oldest first: those recorded (store-read.c reads
 * them, as stageloadctl does with the daemon down), then the open one from
 * memory. *out is freed with store_stages_free; a negative value when the
 * store or memory failed. */
int jobs_stages(struct daemon *d, int64_t id, struct store_stage **out,
                size_t *n);
/* What the last learn_runs runs of (uid, name) reached (docs/jobs.md,
 * "Learned peaks"); clear it with store_learned_clear. < 0 when the
 * store fails. */
int jobs_learned(struct daemon *d, uid_t uid, const char *name,
                 struct store_learned *out);
/* resume: the attached client is back after a restart. */
void jobs_resume(struct daemon *d, int64_t id, uint64_t client_id);
/* A connection closed: its attached jobs are given up or left running. */
void jobs_client_gone(struct daemon *d, uint64_t client_id);

#endif
