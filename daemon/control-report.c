/*
 * The report method (PROTOCOL.md, "report"): accounting of ended jobs
 * from the store's per-day rollup, summed per user, per name or per both.
 * The rows are read a part at a time and the answer written a slice at a
 * time (answers.h), so no report holds the loop however many days and
 * names it sums.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "answers.h"
#include "clock.h"
#include "control.h"
#include "daemon.h"
#include "proto.h"
#include "store.h"
#include "store-filter.h"
#include "store-report.h"

/* job_days rows read per fill (about 0.5 ms), and answer rows written
 * (docs/benchmarks.md, "Accounting"). */
#define REPORT_READ_PART 250
#define REPORT_WRITE_PART 50

struct report_answer {
	struct store_report *rep;
	const struct store_report_row *rows;
	size_t nrows, written;
	int reading;
};

static void
report_free(void *state)
{
	struct report_answer *a = state;

	store_report_free(a->rep);
	free(a);
}

/* The result's members before its rows, up to the rows array's '['. */
static int
report_head(struct report_answer *a, struct answers_buf *out)
{
	cJSON *r = store_report_json(a->rep, 0);
	char *text;
	size_t len;
	int rc;

	if (r == NULL)
		return -1;
	/* The rows member is "[]}" at the end. */
	text = cJSON_PrintUnformatted(r);
	cJSON_Delete(r);
	if (text == NULL || (len = strlen(text)) < 3 ||
	    strcmp(text + len - 3, "[]}") != 0) {
		free(text);
		return -1;
	}
	rc = answers_append(out, text, len - 2);
	free(text);
	return rc;
}

static int
report_fill(struct daemon *d, void *state, struct answers_buf *out, char *cause,
            size_t causelen)
{
	struct report_answer *a = state;
	char why[256];
	size_t end;
	int rc = 0;

	(void)d;
	if (a->reading) {
		rc = store_report_next(a->rep, REPORT_READ_PART, why,
		                       sizeof why);
		if (rc == -E2BIG) {
			snprintf(cause, causelen, "report: %s", why);
			return PROTO_E_LIMIT;
		}
		if (rc < 0) {
			snprintf(cause, causelen, "storage error: report: %s",
			         why);
			return PROTO_E_STORAGE;
		}
		if (rc > 0)
			return 1;
		a->reading = 0;
		if (report_head(a, out) != 0)
			goto nomem;
		a->nrows = store_report_rows(a->rep, &a->rows);
	}
	end = a->written + REPORT_WRITE_PART;
	if (end > a->nrows)
		end = a->nrows;
	for (; a->written < end && rc == 0; a->written++) {
		if (a->written > 0)
			rc = answers_append(out, ",", 1);
		if (rc == 0)
			rc = answers_append_json(
			    out, store_report_row_json(&a->rows[a->written]));
	}
	if (rc == 0 && a->written == a->nrows)
		rc = answers_append(out, "]}", 2);
	if (rc != 0)
		goto nomem;
	return a->written < a->nrows;
nomem:
	snprintf(cause, causelen, "out of memory");
	return PROTO_E_INTERNAL;
}

static const struct answers_ops report_ops = {report_fill, report_free};

int
control_report(struct daemon *d, const struct peer *p, const cJSON *req_id,
               const cJSON *params, cJSON **result, char *cause,
               size_t causelen)
{
	struct store_report_query q = {.since_ms = 0};
	struct report_answer *a;
	const char *by = "user,name";
	char why[256];
	int rc;

	(void)result;
	q.until_ms = clock_wall_ms();
	if ((rc = proto_param_int(params, "since_ms", 0, 0, INT64_MAX,
	                          &q.since_ms, cause, causelen)) < 0 ||
	    (rc = proto_param_int(params, "until_ms", 0, 0, INT64_MAX,
	                          &q.until_ms, cause, causelen)) < 0 ||
	    (rc = proto_param_string(params, "by", 0, 16, &by, cause,
	                             causelen)) < 0 ||
	    /* the filter of status (user, mine, name; its state is not a
	     * param of report: the dispatch table refuses it) */
	    (rc = store_filter_read(params, p->uid, &q.filter, cause,
	                            causelen)) != 0)
		return rc;
	if (q.until_ms < q.since_ms) {
		snprintf(cause, causelen, "until_ms is before since_ms");
		return PROTO_E_PARAMS;
	}
	if ((rc = store_report_by_parse(by)) < 0) {
		snprintf(cause, causelen,
		         "by: \"%s\" is not user, name or user,name", by);
		return PROTO_E_PARAMS;
	}
	q.by = (enum store_report_by)rc;
	if (d->store == NULL) {
		snprintf(cause, causelen, "report: no database");
		return PROTO_E_STORAGE;
	}
	if ((a = calloc(1, sizeof *a)) == NULL) {
		snprintf(cause, causelen, "out of memory");
		return PROTO_E_INTERNAL;
	}
	a->reading = 1;
	if (store_report_begin(store_reader(d->store), &q, &a->rep, why,
	                       sizeof why) != 0) {
		free(a);
		snprintf(cause, causelen, "storage error: report: %s", why);
		return PROTO_E_STORAGE;
	}
	if ((rc = answers_start(d, p, req_id, &report_ops, a, cause,
	                        causelen)) != 0)
		return rc;
	return CONTROL_DEFERRED;
}
