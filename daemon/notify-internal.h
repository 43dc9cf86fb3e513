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
#include "proctree.h"

enum watch_kind {
	WATCH_SUB,    /* subscribe: samples, events, a metered tree */
	WATCH_EVENTS, /* events with follow */
	WATCH_WAIT,   /* wait: the job's end */
	WATCH_LOG,    /* logs: the job's output */
};

/* One thing one client waits for. */
struct watch {
	uint64_t client_id; /* 0: dropped while the list was walked */
	uid_t uid;
	enum watch_kind kind;
	cJSON *req_id; /* WAIT, LOG: the request to answer */
	int64_t job_id;
	/* SUB */
	int samples, events;
	pid_t pid; /* metered tree, 0 when none */
	struct proctree *tree;
	/* LOG */
	uint64_t offset;
	int follow;
};

/* Send what is new in w's log. Returns 1 when it is answered (drop it),
 * 0 to keep it. */
int notify_log_pump(struct daemon *d, struct watch *w);

#endif
