/*
 * What notify.c and notify-logs.c share; not for other modules (their
 * contract is notify.h).
 */
#ifndef SL_NOTIFY_INTERNAL_H
#define SL_NOTIFY_INTERNAL_H

#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "daemon.h"
#include "jobs-filter.h"
#include "proctree.h"

enum watch_kind {
	WATCH_SUB,    /* subscribe: samples, events, a metered tree */
	WATCH_EVENTS, /* events with follow */
	WATCH_WAIT,   /* wait: the job's end */
	WATCH_LOG,    /* logs: the job's output */
};

/*
 * A metered process tree, one per (pid, start time) however many clients
 * watch it: each tick scans it once. Owned by the watches that point at
 * it (refs).
 */
struct meter {
	struct meter *next;
	pid_t pid;
	uint64_t start_time;
	uid_t owner; /* the uid whose meters it counts against */
	struct proctree *tree;
	int refs;
	uint64_t tick; /* the tick it was last scanned in */
	int scanned;   /* the figures below are this tick's */
	uint64_t footprint, swap;
	size_t nprocs;
};

/* One thing one client waits for. */
struct watch {
	uint64_t client_id; /* 0: dropped while the list was walked */
	uid_t uid;
	enum watch_kind kind;
	cJSON *req_id;  /* WAIT, LOG: the request to answer */
	int64_t job_id; /* WAIT, LOG; EVENTS: the one job followed, 0: all */
	/* SUB */
	int samples, events;
	struct meter *meter; /* metered tree, NULL when none */
	/* LOG */
	uint64_t offset;
	int follow;
	/* EVENTS: catching up from the store after cursor until live */
	int64_t cursor;
	int live;
	struct job_filter *filter; /* owned; NULL: every event */
	struct job_filter_cache cache;
};

/* Send what is new in w's log. Returns 1 when it is answered (drop it),
 * 0 to keep it. live: the job has not ended; size: the log's size when
 * known (this pass's stat of it), else -1: a follower already at the end
 * of a live job's log is passed over without opening it. */
int notify_log_pump(struct daemon *d, struct watch *w, int live, int64_t size);
/* The size of a job's log, -1 when it has none. */
int64_t notify_log_size(struct daemon *d, int64_t job_id);
/* A pass over the readers is done: the chunks it shared go. */
void notify_log_pass_end(void);
/* 0 when a logs request may start at offset: always while the job lives
 * (a follower may wait for the bytes), else within its log's size; -32602
 * naming that size otherwise. */
int notify_log_offset_check(struct daemon *d, int64_t job_id, uint64_t offset,
                            char *cause, size_t causelen);

#endif
