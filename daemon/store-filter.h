/*
 * The job filter's pure part (PROTOCOL.md, "Job filters"): the params
 * user, mine, state and name read from a request into a struct job_filter,
 * and a job's parts (uid, name, state) matched against it. Nothing here
 * needs the daemon, so stageloadctl's report --db links it (library
 * slstoreread) and filters the rollup's rows as the daemon's report does;
 * the daemon's lists take it through jobs-filter.h.
 */
#ifndef SL_STORE_FILTER_H
#define SL_STORE_FILTER_H

#include <stddef.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

/* A name pattern's longest (a job name's is 256 bytes). */
#define JOB_FILTER_NAME_MAX 256

struct job_filter {
	int has_uid; /* user or mine */
	uid_t uid;
	unsigned states; /* 1u << enum job_state for each one given; 0: any */
	int has_name;
	char name[JOB_FILTER_NAME_MAX + 1]; /* a glob (store_report_glob) */
};

/* The filter params of a request from caller (mine: the caller's own
 * jobs); 0, or PROTO_E_PARAMS with cause (an unknown user or state, user
 * with mine). */
int store_filter_read(const cJSON *params, uid_t caller, struct job_filter *f,
                      char *cause, size_t causelen);
/* 1 when the job of these parts passes (state < 0: not compared; name
 * NULL: matched as ""). */
int store_filter_match(const struct job_filter *f, uid_t uid, const char *name,
                       int state);

#endif
