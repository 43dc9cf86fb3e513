/*
 * The admission decision, as pure functions: the queue's order, and given
 * the queue in that order, the jobs holding memory (admitted or running),
 * the latest system sample and the configuration, which job may start now
 * and what every queued job is waiting for. No I/O and no clock: the
 * caller passes now_ms, and keeps the head's claim (struct admit_claim)
 * from one decision to the next. The rules themselves are documented once,
 * in docs/jobs.md ("Queue order" and "Admission").
 */
#ifndef SL_ADMIT_H
#define SL_ADMIT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "names.h"

/* What a queued job waits for: proto/names.h's list, which has the
 * wire's names and the words the clients show. */
enum admit_wait {
	/* nothing: it is admitted now */
	ADMIT_WAIT_NONE = NAMES_WAIT_NONE,
	/* free % below its wait_free */
	ADMIT_WAIT_FREE = NAMES_WAIT_FREE,
	/* the previously admitted job is still growing */
	ADMIT_WAIT_SETTLE = NAMES_WAIT_SETTLE,
	/* free enough, but not once reservations count */
	ADMIT_WAIT_EXPECT = NAMES_WAIT_EXPECT,
	/* it or a running job needs the machine alone */
	ADMIT_WAIT_EXCLUSIVE = NAMES_WAIT_EXCLUSIVE,
	/* the daemon's maximum of running jobs */
	ADMIT_WAIT_MAX_RUNNING = NAMES_WAIT_MAX_RUNNING,
	/* a job ahead has the head's claim */
	ADMIT_WAIT_HEAD = NAMES_WAIT_HEAD,
	/* the database fails: nothing is admitted */
	ADMIT_WAIT_STORAGE = NAMES_WAIT_STORAGE,
	/* attached, its client not back since a restart: it cannot be the
	 * head yet */
	ADMIT_WAIT_CLIENT = NAMES_WAIT_CLIENT,
	/* held (hold): until released */
	ADMIT_WAIT_HELD = NAMES_WAIT_HELD,
	/* a job it starts after has not ended; the wire says "after ID" */
	ADMIT_WAIT_AFTER = NAMES_WAIT_AFTER,
	/* its group has its most jobs running */
	ADMIT_WAIT_GROUP = NAMES_WAIT_GROUP,
	/* its --begin time has not come */
	ADMIT_WAIT_BEGIN = NAMES_WAIT_BEGIN,
};
#define ADMIT_WAIT_LAST (NAMES_WAIT_COUNT - 1)

const char *admit_wait_name(enum admit_wait w);

/* A queued job. */
struct admit_queued {
	int64_t job_id;
	uid_t uid;
	int priority;
	int64_t seq; /* submission order, kept across retries (queue_seq) */
	double wait_free_pct;
	int exclusive;
	int privileged; /* root's or the admin group's: never passed over */
	/* ADMIT_WAIT_NONE when it may be the head; else why it cannot be
	 * yet: it keeps its place and is passed over. */
	enum admit_wait blocked;
	size_t ref; /* the caller's, untouched */
	/* Set by admit_order: */
	size_t holding;     /* jobs of its uid holding memory */
	int64_t user_first; /* seq of its uid's oldest queued job at its
	                       priority */
};

/* The most recent footprints a caller keeps per job (admit_running). */
#define ADMIT_RECENT_MAX 128

/* A job holding memory: admitted (not yet running) or running. */
struct admit_running {
	int64_t job_id;
	uid_t uid;
	int64_t admitted_ms;
	uint64_t footprint_bytes; /* latest; 0 before its first sample */
	uint64_t expect_bytes;    /* 0: none */
	int exclusive;
	/* Root's or the admin group's: its reservation is whole and lasts,
	 * its exclusivity is never passed. */
	int privileged;
	/* Footprints of the job's tree at the most recent samples since it
	 * started, oldest first; used for settle. recent_ms: when each was
	 * sampled (NULL: settle counts samples, not time). */
	const uint64_t *recent_footprints;
	const int64_t *recent_ms;
	size_t nrecent;
};

struct admit_config {
	int64_t settle_ms;        /* settle time; 0: no settle wait */
	double settle_growth_pct; /* growth below this over the window */
	int settle_samples;       /* window length in samples */
	/* With the samples' times: the window in time (settle_samples
	 * normal intervals), whatever the rate; 0: count samples. */
	int64_t settle_window_ms;
	int max_running;      /* 0: no limit */
	int64_t hol_bound_ms; /* an unprivileged head's sole claim */
	/* An unprivileged reservation's cap, % of total (max_wait_free). */
	double max_wait_free_pct;
};

/* The head's claim: since when its user has held the head without the
 * queue moving. The caller keeps it between decisions (zeroed at start). */
struct admit_claim {
	int have;         /* 0: no claim yet (the next head starts one) */
	uid_t uid;        /* the user holding the head */
	int64_t since_ms; /* when that user's claim began */
	/* When a job last started past an unprivileged exclusive job: once
	 * per hol_bound. */
	int64_t exclusive_pass_ms;
};

struct admit_input {
	const struct admit_queued *queued; /* in queue order (admit_order) */
	size_t nqueued;
	const struct admit_running *running;
	size_t nrunning;
	int have_sample; /* without one nothing is admitted */
	int storage_ok;  /* without it nothing is admitted */
	double free_pct; /* the sample's free % */
	uint64_t total_bytes;
	int64_t now_ms;
	struct admit_claim claim; /* from the previous decision's result */
	struct admit_config cfg;
};

struct admit_result {
	long admit;           /* index into queued, or -1 */
	long head;            /* index of the head (first not blocked), or -1 */
	int passed;           /* admit is a job passing the head (hol_bound) */
	int passed_exclusive; /* admit starts beside an exclusive job */
	double free_pct;      /* the sample's */
	/* free % less the reservations of running jobs, as a share of total:
	 * on Linux, where free % is available / total, this is exactly
	 * (available - reserved) / total x 100. */
	double effective_free_pct;
	uint64_t reserved_bytes;  /* sum of max(0, expect - footprint) */
	struct admit_claim claim; /* keep for the next decision */
};

/*
 * Put the queue in order: priority (higher first), then the user with the
 * fewest jobs holding memory, then that user's oldest queued job (at that
 * priority), then submission (seq). Fills holding and user_first.
 */
void admit_order(struct admit_queued *q, size_t n,
                 const struct admit_running *running, size_t nrunning);

/*
 * Decide. waits[i] (nqueued entries, caller-allocated, may be NULL) gets
 * what queued[i] waits for; the admitted one gets ADMIT_WAIT_NONE. At most
 * one job is admitted per decision: settle applies to it at once.
 */
void admit_decide(const struct admit_input *in, enum admit_wait *waits,
                  struct admit_result *res);

/* Has a job that was admitted at admitted_ms settled by now_ms? */
int admit_settled(const struct admit_running *r, int64_t now_ms,
                  const struct admit_config *cfg);

#endif
