/*
 * The job filter's pure part (store-filter.h): read from a request's
 * params, matched against a job's parts by the daemon's lists
 * (jobs-filter.c) and by report, in the daemon and in stageloadctl.
 */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "names.h"
#include "proto.h"
#include "store-filter.h"
#include "store-report.h"

/* A user's name, or failing that a number: the uid (a user with no
 * entry in the user database still owns jobs). */
static int
filter_user(const char *user, uid_t *uid)
{
	struct passwd pw, *res = NULL;
	char buf[2048], *end;
	unsigned long v;

	if (getpwnam_r(user, &pw, buf, sizeof buf, &res) == 0 && res != NULL) {
		*uid = pw.pw_uid;
		return 0;
	}
	if (user[0] < '0' || user[0] > '9')
		return -ENOENT;
	errno = 0;
	v = strtoul(user, &end, 10);
	if (errno != 0 || *end != '\0' || v > (uid_t)-2)
		return -ENOENT;
	*uid = (uid_t)v;
	return 0;
}

int
store_filter_read(const cJSON *params, uid_t caller, struct job_filter *f,
                  char *cause, size_t causelen)
{
	const char *user = NULL, *name = NULL, **states = NULL;
	int mine = 0, rc;
	size_t i;

	memset(f, 0, sizeof *f);
	if ((rc = proto_param_string(params, "user", 0, 256, &user, cause,
	                             causelen)) < 0 ||
	    (rc = proto_param_bool(params, "mine", 0, &mine, cause, causelen)) <
	        0 ||
	    (rc = proto_param_strv(params, "state", 0, NAMES_STATE_COUNT * 2,
	                           1024, &states, cause, causelen)) < 0 ||
	    (rc = proto_param_string(params, "name", 0, JOB_FILTER_NAME_MAX,
	                             &name, cause, causelen)) < 0)
		return rc;
	if (user != NULL && mine) {
		free(states);
		snprintf(
		    cause, causelen,
		    "invalid params: 'user' and 'mine' cannot go together");
		return PROTO_E_PARAMS;
	}
	if (mine) {
		f->has_uid = 1;
		f->uid = caller;
	} else if (user != NULL) {
		if (filter_user(user, &f->uid) != 0) {
			free(states);
			snprintf(cause, causelen,
			         "invalid params: 'user': no such user '%.64s'",
			         user);
			return PROTO_E_PARAMS;
		}
		f->has_uid = 1;
	}
	for (i = 0; states != NULL && states[i] != NULL; i++) {
		int s = names_state_parse(states[i]);

		if (s < 0) {
			snprintf(cause, causelen,
			         "invalid params: 'state': no state '%.32s' "
			         "(PROTOCOL.md, job states)",
			         states[i]);
			free(states);
			return PROTO_E_PARAMS;
		}
		f->states |= 1u << s;
	}
	free(states);
	if (name != NULL) {
		f->has_name = 1;
		snprintf(f->name, sizeof f->name, "%s", name);
	}
	return 0;
}

int
store_filter_match(const struct job_filter *f, uid_t uid, const char *name,
                   int state)
{
	if (f->has_uid && uid != f->uid)
		return 0;
	if (state >= 0 && f->states != 0 && !(f->states & (1u << state)))
		return 0;
	/* fnmatch(3)'s semantics in bounded time: this runs on the loop,
	 * once a job of a list (store_report_glob) */
	if (f->has_name &&
	    !store_report_glob(f->name, name != NULL ? name : ""))
		return 0;
	return 1;
}
