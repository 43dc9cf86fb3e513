/*
 * The admission decision, as a pure function: given the queue in order, the
 * jobs holding memory (admitted or running), the latest system sample and
 * the configuration, which job may start now, and what every queued job is
 * waiting for. No I/O and no clock: the caller passes now_ms. The rule
 * itself is documented once, in docs/jobs.md ("Admission").
 */
#ifndef SL_ADMIT_H
#define SL_ADMIT_H

#include <stddef.h>
#include <stdint.h>

/* What a queued job waits for; the names are the wire's waiting_for. */
enum admit_wait {
	ADMIT_WAIT_NONE = 0,  /* it is admitted now */
	ADMIT_WAIT_FREE,      /* free % below its wait_free */
	ADMIT_WAIT_SETTLE,    /* the previously admitted job is still growing */
	ADMIT_WAIT_EXPECT,    /* free enough, but not once reservations count */
	ADMIT_WAIT_EXCLUSIVE, /* it or a running job needs the machine alone */
	ADMIT_WAIT_MAX_RUNNING, /* the daemon's maximum of running jobs */
	ADMIT_WAIT_HEAD,        /* strict head of line: a job ahead waits */
	ADMIT_WAIT_STORAGE,     /* the database fails: nothing is admitted */
};

const char *admit_wait_name(enum admit_wait w);

/* A queued job, in queue order (priority desc, then submission). */
struct admit_queued {
	int64_t job_id;
	double wait_free_pct;
	int exclusive;
};

/* A job holding memory: admitted (not yet running) or running. */
struct admit_running {
	int64_t job_id;
	int64_t admitted_ms;
	uint64_t footprint_bytes; /* latest; 0 before its first sample */
	uint64_t expect_bytes;    /* 0: none */
	int exclusive;
	/* Footprints of the job's tree at the most recent samples since it
	 * started, oldest first; used for settle. */
	const uint64_t *recent_footprints;
	size_t nrecent;
};

struct admit_config {
	int64_t settle_ms;        /* settle time; 0: no settle wait */
	double settle_growth_pct; /* growth below this over the window */
	int settle_samples;       /* window length in samples */
	int max_running;          /* 0: no limit */
};

struct admit_input {
	const struct admit_queued *queued;
	size_t nqueued;
	const struct admit_running *running;
	size_t nrunning;
	int have_sample; /* without one nothing is admitted */
	int storage_ok;  /* without it nothing is admitted */
	double free_pct; /* the sample's free % */
	uint64_t total_bytes;
	int64_t now_ms;
	struct admit_config cfg;
};

struct admit_result {
	long admit;      /* index into queued, or -1 */
	double free_pct; /* the sample's */
	/* free % less the reservations of running jobs, as a share of total:
	 * on Linux, where free % is available / total, this is exactly
	 * (available - reserved) / total x 100. */
	double effective_free_pct;
	uint64_t reserved_bytes; /* sum of max(0, expect - footprint) */
};

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
