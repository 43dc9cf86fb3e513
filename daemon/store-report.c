/*
 * Accounting read back (store-report.h): the daemon's and stageloadctl's
 * one implementation of the sums over job_days.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "proto.h"
#include "store-report.h"
#include "text.h"

int
store_report_hist_bucket(int64_t run_ms)
{
	int k;

	if (run_ms < 1000)
		return 0;
	k = 1 + (int)floor(8.0 * log2((double)run_ms / 1000.0));
	if (k < 1)
		k = 1;
	return k >= STORE_REPORT_HIST ? STORE_REPORT_HIST - 1 : k;
}

int64_t
store_report_hist_median(const uint32_t *hist, int64_t n)
{
	int64_t rank = (n + 1) / 2, seen = 0;
	int k;

	if (n <= 0)
		return -1;
	for (k = 0; k < STORE_REPORT_HIST; k++) {
		seen += hist[k];
		if (seen >= rank)
			break;
	}
	if (k >= STORE_REPORT_HIST)
		k = STORE_REPORT_HIST - 1;
	if (k == 0)
		return 500;
	return (int64_t)llround(1000.0 * exp2(((double)k - 0.5) / 8.0));
}

int
store_report_hist_parse(const char *text, uint32_t *hist)
{
	const char *p = text;

	while (p != NULL && *p != '\0') {
		char *end;
		long k = strtol(p, &end, 10);
		unsigned long c;

		if (end == p || *end != ':')
			return -EINVAL;
		p = end + 1;
		c = strtoul(p, &end, 10);
		if (end == p || k < 0 || k >= STORE_REPORT_HIST)
			return -EINVAL;
		hist[k] += (uint32_t)c;
		p = *end == ',' ? end + 1 : end;
		if (*end != ',' && *end != '\0')
			return -EINVAL;
	}
	return 0;
}

char *
store_report_hist_text(const uint32_t *hist)
{
	/* "199:4294967295," at most 15 bytes a bucket */
	char *t = malloc(STORE_REPORT_HIST * 16 + 1);
	size_t len = 0;
	int k;

	if (t == NULL)
		return NULL;
	t[0] = '\0';
	for (k = 0; k < STORE_REPORT_HIST; k++)
		if (hist[k] > 0)
			len += (size_t)snprintf(t + len, 17, "%s%d:%u",
			                        len > 0 ? "," : "", k, hist[k]);
	return t;
}

const char *
store_report_by_name(enum store_report_by by)
{
	switch (by) {
	case STORE_REPORT_BY_USER:
		return "user";
	case STORE_REPORT_BY_NAME:
		return "name";
	default:
		return "user,name";
	}
}

int
store_report_by_parse(const char *text)
{
	if (text == NULL)
		return -1;
	if (strcmp(text, "user") == 0)
		return STORE_REPORT_BY_USER;
	if (strcmp(text, "name") == 0)
		return STORE_REPORT_BY_NAME;
	if (strcmp(text, "user,name") == 0 || strcmp(text, "name,user") == 0)
		return STORE_REPORT_BY_BOTH;
	return -1;
}

/* One character of a glob at p against c: 1 on a match; *len is how many
 * bytes of the glob it took ("?", "[a-z]", "[!0-9]", a literal, "\\*"). */
static int
glob_one(const char *p, unsigned char c, size_t *len)
{
	const char *q = p + 1;
	int neg, hit = 0;

	if (*p == '?') {
		*len = 1;
		return 1;
	}
	if (*p == '\\' && p[1] != '\0') {
		*len = 2;
		return (unsigned char)p[1] == c;
	}
	if (*p != '[') {
		*len = 1;
		return (unsigned char)*p == c;
	}
	neg = *q == '!' || *q == '^';
	q += neg;
	do {
		if (*q == '\0') { /* no closing ']': a literal '[' */
			*len = 1;
			return c == '[';
		}
		if (q[1] == '-' && q[2] != ']' && q[2] != '\0') {
			hit |= c >= (unsigned char)q[0] &&
			       c <= (unsigned char)q[2];
			q += 3;
		} else {
			hit |= c == (unsigned char)*q;
			q++;
		}
	} while (*q != ']');
	*len = (size_t)(q + 1 - p);
	return hit != neg;
}

/*
 * A shell glob (*, ?, [...], \\) against the whole of s, as fnmatch(3)
 * with no flags, but in at most strlen(pat) x strlen(s) steps: each '*'
 * only moves the match of the one before it on (fnmatch backtracks
 * through every '*', which a pattern such as "*a*a*a*a*b" makes
 * exponential, and this runs on the daemon's loop).
 */
int
store_report_glob(const char *pat, const char *s)
{
	const char *star = NULL, *resume = NULL;
	size_t len;

	while (*s != '\0') {
		if (*pat == '*') {
			star = ++pat;
			resume = s;
		} else if (*pat != '\0' &&
		           glob_one(pat, (unsigned char)*s, &len)) {
			pat += len;
			s++;
		} else if (star != NULL) {
			pat = star;
			s = ++resume;
		} else {
			return 0;
		}
	}
	while (*pat == '*')
		pat++;
	return *pat == '\0';
}

struct store_report {
	sqlite3_stmt *st;
	struct store_report_query q;
	int64_t day_lo, day_hi;
	/* where the next read begins: after (day, uid, name) */
	int64_t next_day, next_uid;
	char *next_name;
	int started, done;
	int64_t oldest_ms;
	/* the rows, and an open-addressed index of them by key */
	struct store_report_row *rows;
	size_t nrows, cap;
	size_t *slots; /* index + 1, 0: free */
	size_t nslots;
	int sorted;
	int too_many; /* a row past STORE_REPORT_MAX_ROWS was wanted */
};

static uint64_t
key_hash(int64_t uid, const char *name)
{
	uint64_t h = 1469598103934665603ULL ^ (uint64_t)uid;

	h *= 1099511628211ULL;
	for (; name != NULL && *name != '\0'; name++) {
		h ^= (unsigned char)*name;
		h *= 1099511628211ULL;
	}
	return h;
}

static int
row_is(const struct store_report_row *r, int64_t uid, const char *name)
{
	if (r->uid != uid)
		return 0;
	if (r->name == NULL || name == NULL)
		return r->name == name;
	return strcmp(r->name, name) == 0;
}

static int
rows_grow(struct store_report *rep)
{
	size_t i, ncap = rep->cap ? rep->cap * 2 : 64;
	struct store_report_row *nr;
	size_t *ns;

	if ((nr = realloc(rep->rows, ncap * sizeof *nr)) == NULL)
		return -ENOMEM;
	rep->rows = nr;
	rep->cap = ncap;
	if ((ns = calloc(ncap * 2, sizeof *ns)) == NULL)
		return -ENOMEM;
	free(rep->slots);
	rep->slots = ns;
	rep->nslots = ncap * 2;
	for (i = 0; i < rep->nrows; i++) {
		size_t s = key_hash(nr[i].uid, nr[i].name) % rep->nslots;

		while (ns[s] != 0)
			s = (s + 1) % rep->nslots;
		ns[s] = i + 1;
	}
	return 0;
}

/* The row of (uid, name), made when absent; NULL out of memory or past
 * STORE_REPORT_MAX_ROWS (rep->too_many). */
static struct store_report_row *
row_get(struct store_report *rep, int64_t uid, const char *user,
        const char *name)
{
	struct store_report_row *r;
	size_t s;

	if (rep->nrows + 1 > rep->cap && rows_grow(rep) != 0)
		return NULL;
	s = key_hash(uid, name) % rep->nslots;
	while (rep->slots[s] != 0) {
		r = &rep->rows[rep->slots[s] - 1];
		if (row_is(r, uid, name))
			return r;
		s = (s + 1) % rep->nslots;
	}
	if (rep->nrows >= STORE_REPORT_MAX_ROWS) {
		rep->too_many = 1;
		return NULL;
	}
	r = &rep->rows[rep->nrows];
	memset(r, 0, sizeof *r);
	r->uid = uid;
	r->user = user != NULL ? strdup(user) : NULL;
	r->name = name != NULL ? strdup(name) : NULL;
	r->killed_by = cJSON_CreateObject();
	if ((user != NULL && r->user == NULL) ||
	    (name != NULL && r->name == NULL) || r->killed_by == NULL) {
		free(r->user);
		free(r->name);
		cJSON_Delete(r->killed_by);
		return NULL;
	}
	rep->slots[s] = ++rep->nrows;
	return r;
}

static int64_t
max64(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

/* Add killed_by's text (a JSON object) to the row's. */
static int
killed_add(struct store_report_row *r, const char *text)
{
	cJSON *o, *it;

	if (text == NULL || (o = cJSON_Parse(text)) == NULL)
		return 0;
	cJSON_ArrayForEach(it, o)
	{
		cJSON *have;

		if (!cJSON_IsNumber(it) || it->string == NULL)
			continue;
		have =
		    cJSON_GetObjectItemCaseSensitive(r->killed_by, it->string);
		if (have != NULL)
			cJSON_SetNumberValue(have, have->valuedouble +
			                               it->valuedouble);
		else if (cJSON_AddNumberToObject(r->killed_by, it->string,
		                                 it->valuedouble) == NULL) {
			cJSON_Delete(o);
			return -ENOMEM;
		}
	}
	cJSON_Delete(o);
	return 0;
}

#define REPORT_COLUMNS                                                         \
	"day, uid, name, user, runs, exited_0, exited_nonzero, failed,"        \
	" killed, cancelled, lost, killed_by, ran, run_ms, run_hist,"          \
	" waited_ms, footprint_peak_bytes, swap_growth_peak_bytes"

int
store_report_begin(struct store_read *r, const struct store_report_query *q,
                   struct store_report **out, char *cause, size_t causelen)
{
	struct store_report *rep;
	sqlite3 *db = store_read_db(r);
	sqlite3_stmt *st;
	int rc;

	*out = NULL;
	if (q->until_ms < q->since_ms)
		return proto_cause(cause, causelen, -EINVAL,
		                   "until is before since");
	if ((rep = calloc(1, sizeof *rep)) == NULL)
		return proto_cause(cause, causelen, -ENOMEM, "out of memory");
	rep->q = *q;
	rep->day_lo = q->since_ms / STORE_REPORT_DAY_MS;
	rep->day_hi = q->until_ms / STORE_REPORT_DAY_MS;
	rep->oldest_ms = -1;
	rc = sqlite3_prepare_v2(db, "SELECT min(day) FROM job_days", -1, &st,
	                        NULL);
	if (rc != SQLITE_OK) {
		store_report_free(rep);
		return proto_cause(cause, causelen, -ENOENT,
		                   "this database keeps no accounting (it is "
		                   "from before job_days): %s",
		                   sqlite3_errmsg(db));
	}
	if (sqlite3_step(st) == SQLITE_ROW &&
	    sqlite3_column_type(st, 0) != SQLITE_NULL)
		rep->oldest_ms =
		    sqlite3_column_int64(st, 0) * STORE_REPORT_DAY_MS;
	sqlite3_finalize(st);
	/* Keyset paging over the primary key: each part is a fresh read,
	 * an index seek to the row after the last one read. */
	rc = sqlite3_prepare_v2(
	    db,
	    "SELECT " REPORT_COLUMNS " FROM job_days"
	    " WHERE day <= ?2 AND (day, uid, name) > (?3, ?4, ?5)"
	    " ORDER BY day, uid, name LIMIT ?6",
	    -1, &rep->st, NULL);
	if (rc != SQLITE_OK) {
		rc = proto_cause(cause, causelen, -EIO, "reading job_days: %s",
		                 sqlite3_errmsg(db));
		store_report_free(rep);
		return rc;
	}
	*out = rep;
	return 0;
}

static int
report_add_row(struct store_report *rep, sqlite3_stmt *st)
{
	const char *name = (const char *)sqlite3_column_text(st, 2);
	const char *user = (const char *)sqlite3_column_text(st, 3);
	int64_t uid = sqlite3_column_int64(st, 1);
	struct store_report_row *r;

	/* The filters are applied here, not in the query: a part then
	 * reads max_rows rows whatever they keep. */
	if (!store_filter_match(&rep->q.filter, (uid_t)uid, name, -1))
		return 0;
	r = row_get(
	    rep, rep->q.by & STORE_REPORT_BY_USER ? uid : -1,
	    rep->q.by & STORE_REPORT_BY_USER ? (user ? user : "") : NULL,
	    rep->q.by & STORE_REPORT_BY_NAME ? (name ? name : "") : NULL);
	if (r == NULL)
		return rep->too_many ? -E2BIG : -ENOMEM;
	if (r->user != NULL && user != NULL && strcmp(r->user, user) != 0) {
		/* The newest day's login name of the uid. */
		char *u = strdup(user);

		if (u == NULL)
			return -ENOMEM;
		free(r->user);
		r->user = u;
	}
	r->runs += sqlite3_column_int64(st, 4);
	r->exited_0 += sqlite3_column_int64(st, 5);
	r->exited_nonzero += sqlite3_column_int64(st, 6);
	r->failed += sqlite3_column_int64(st, 7);
	r->killed += sqlite3_column_int64(st, 8);
	r->cancelled += sqlite3_column_int64(st, 9);
	r->lost += sqlite3_column_int64(st, 10);
	if (killed_add(r, (const char *)sqlite3_column_text(st, 11)) != 0)
		return -ENOMEM;
	r->ran += sqlite3_column_int64(st, 12);
	r->run_time_ms += sqlite3_column_int64(st, 13);
	(void)store_report_hist_parse((const char *)sqlite3_column_text(st, 14),
	                              r->hist);
	r->time_waited_ms += sqlite3_column_int64(st, 15);
	r->footprint_peak_bytes =
	    max64(r->footprint_peak_bytes, sqlite3_column_int64(st, 16));
	r->swap_growth_peak_bytes =
	    max64(r->swap_growth_peak_bytes, sqlite3_column_int64(st, 17));
	return 0;
}

int
store_report_next(struct store_report *rep, int64_t max_rows, char *cause,
                  size_t causelen)
{
	sqlite3_stmt *st = rep->st;
	int64_t n = 0;
	int rc, err = 0;

	if (rep->done)
		return 0;
	/* The first part begins before the first day (an index seek, as
	 * each next part's from the last row read). */
	if (!rep->started) {
		rep->next_day = rep->day_lo - 1;
		rep->next_uid = INT64_MAX;
	}
	sqlite3_bind_int64(st, 2, rep->day_hi);
	sqlite3_bind_int64(st, 3, rep->next_day);
	sqlite3_bind_int64(st, 4, rep->next_uid);
	sqlite3_bind_text(st, 5, rep->next_name ? rep->next_name : "", -1,
	                  SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 6, max_rows > 0 ? max_rows : -1);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(st, 2);

		n++;
		rep->started = 1;
		rep->next_day = sqlite3_column_int64(st, 0);
		rep->next_uid = sqlite3_column_int64(st, 1);
		free(rep->next_name);
		if ((rep->next_name = strdup(name ? name : "")) == NULL)
			err = -ENOMEM;
		else
			err = report_add_row(rep, st);
		if (err != 0)
			break;
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (err == -E2BIG)
		return proto_cause(cause, causelen, err,
		                   "more than %d rows: narrow the report (a "
		                   "later since, an earlier until, a user or "
		                   "name filter, or by user or by name alone)",
		                   STORE_REPORT_MAX_ROWS);
	if (err != 0)
		return proto_cause(cause, causelen, err, "out of memory");
	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		return proto_cause(cause, causelen,
		                   rc == SQLITE_BUSY ? -EAGAIN : -EIO,
		                   "reading job_days: %s", sqlite3_errstr(rc));
	if (max_rows > 0 && n >= max_rows)
		return 1;
	rep->done = 1;
	return 0;
}

static int
str_cmp(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return (a != NULL) - (b != NULL);
	return strcmp(a, b);
}

static int
row_cmp(const void *pa, const void *pb)
{
	const struct store_report_row *a = pa, *b = pb;
	int c = str_cmp(a->user, b->user);

	if (c == 0)
		c = (a->uid > b->uid) - (a->uid < b->uid);
	return c != 0 ? c : str_cmp(a->name, b->name);
}

size_t
store_report_rows(struct store_report *rep,
                  const struct store_report_row **rows)
{
	if (!rep->sorted && rep->nrows > 1) {
		/* The index is of no use once the rows are read. */
		qsort(rep->rows, rep->nrows, sizeof rep->rows[0], row_cmp);
		free(rep->slots);
		rep->slots = NULL;
		rep->nslots = 0;
	}
	rep->sorted = 1;
	*rows = rep->rows;
	return rep->nrows;
}

int64_t
store_report_oldest_ms(const struct store_report *rep)
{
	return rep->oldest_ms;
}

cJSON *
store_report_row_json(const struct store_report_row *r)
{
	cJSON *o = cJSON_CreateObject();
	int64_t median = store_report_hist_median(r->hist, r->ran);

	if (o == NULL)
		return NULL;
	if (r->user != NULL) {
		cJSON_AddStringToObject(o, "user", r->user);
		proto_add_int(o, "uid", r->uid);
	}
	if (r->name != NULL)
		cJSON_AddStringToObject(o, "name", r->name);
	proto_add_int(o, "runs", r->runs);
	proto_add_int(o, "exited_0", r->exited_0);
	proto_add_int(o, "exited_nonzero", r->exited_nonzero);
	proto_add_int(o, "failed", r->failed);
	proto_add_int(o, "killed", r->killed);
	cJSON_AddItemToObject(o, "killed_by", cJSON_Duplicate(r->killed_by, 1));
	proto_add_int(o, "cancelled", r->cancelled);
	proto_add_int(o, "lost", r->lost);
	proto_add_int(o, "ran", r->ran);
	proto_add_int(o, "run_time_ms", r->run_time_ms);
	if (median >= 0)
		proto_add_int(o, "run_time_median_ms", median);
	else
		cJSON_AddNullToObject(o, "run_time_median_ms");
	proto_add_int(o, "time_waited_ms", r->time_waited_ms);
	proto_add_int(o, "footprint_peak_bytes", r->footprint_peak_bytes);
	proto_add_int(o, "swap_growth_peak_bytes", r->swap_growth_peak_bytes);
	return o;
}

cJSON *
store_report_json(const struct store_report *rep, int rows)
{
	cJSON *o = cJSON_CreateObject(), *a;
	size_t i;

	if (o == NULL)
		return NULL;
	cJSON_AddStringToObject(o, "by", store_report_by_name(rep->q.by));
	proto_add_int(o, "since_ms", rep->q.since_ms);
	proto_add_int(o, "until_ms", rep->q.until_ms);
	if (rep->oldest_ms >= 0)
		proto_add_int(o, "oldest_ms", rep->oldest_ms);
	else
		cJSON_AddNullToObject(o, "oldest_ms");
	a = cJSON_AddArrayToObject(o, "rows");
	for (i = 0; rows && a != NULL && i < rep->nrows; i++)
		cJSON_AddItemToArray(a, store_report_row_json(&rep->rows[i]));
	return o;
}

void
store_report_free(struct store_report *rep)
{
	size_t i;

	if (rep == NULL)
		return;
	sqlite3_finalize(rep->st);
	for (i = 0; i < rep->nrows; i++) {
		free(rep->rows[i].user);
		free(rep->rows[i].name);
		cJSON_Delete(rep->rows[i].killed_by);
	}
	free(rep->rows);
	free(rep->slots);
	free(rep->next_name);
	free(rep);
}
