/*
 * plot-data: protocol objects to svg-plot's plots (plot-data.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "names.h"
#include "plot-data.h"

/* Arrays that grow as points come; one allocation each. */
struct pts {
	struct svgp_point *v;
	size_t n, cap;
};

static int
pts_add(struct pts *p, int64_t t, double v, int gap)
{
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 256;
		struct svgp_point *nv = realloc(p->v, cap * sizeof *nv);
		if (nv == NULL)
			return -ENOMEM;
		p->v = nv;
		p->cap = cap;
	}
	p->v[p->n].t_ms = t;
	p->v[p->n].v = v;
	p->v[p->n].gap = gap;
	p->n++;
	return 0;
}

static double
num(const cJSON *o, const char *name, double def)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	return cJSON_IsNumber(v) ? v->valuedouble : def;
}

static const char *
str(const cJSON *o, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* One end of a bucket's {"min","avg","max"} member (which: "min" or
 * "max"), or def. A plot draws the envelope's end a user must see, not the
 * average: a 1 s swap spike in a 48 s bucket would be drawn at a 96th of
 * its height, and on a coarser tier it vanishes. */
static double
edge_of(const cJSON *o, const char *name, const char *which, double def)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	return cJSON_IsObject(v) ? num(v, which, def) : def;
}

int64_t
plotd_first_ts(const cJSON *history)
{
	const cJSON *b = cJSON_GetArrayItem(
	    cJSON_GetObjectItemCaseSensitive(history, "buckets"), 0);

	return b != NULL ? (int64_t)num(b, "ts_ms", 0) : 0;
}

/* A label holds a whole stage name (the daemon takes at most 256 bytes)
 * or "kill " and a job id. */
#define MARK_LABEL_MAX 272

struct marks {
	struct svgp_mark *v;
	size_t n, cap;
	/* labels built here ("kill 12", "decode") */
	char (*labels)[MARK_LABEL_MAX];
};

/* A label cut to its buffer (a trace's stage may be longer than the
 * daemon allows) ends before a character it would split: the SVG must
 * stay valid UTF-8 for an XML parser. */
static void
cut_utf8(char *s, size_t len)
{
	size_t n = strlen(s), i, need;

	if (n + 1 < len || n == 0)
		return;
	/* The last lead byte and how many bytes its character needs. */
	i = n;
	while (i > 0 && ((unsigned char)s[i - 1] & 0xc0) == 0x80)
		i--;
	if (i == 0)
		return;
	i--;
	need = ((unsigned char)s[i] & 0xe0) == 0xc0   ? 2
	       : ((unsigned char)s[i] & 0xf0) == 0xe0 ? 3
	       : ((unsigned char)s[i] & 0xf8) == 0xf0 ? 4
	                                              : 1;
	if (n - i < need)
		s[i] = '\0';
}

static int
marks_add(struct marks *m, enum svgp_mark_kind k, int64_t t, int64_t job,
          const char *fmt, const char *arg)
{
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 32;
		struct svgp_mark *nv = realloc(m->v, cap * sizeof *nv);
		char(*nl)[MARK_LABEL_MAX];
		if (nv == NULL)
			return -ENOMEM;
		m->v = nv;
		if ((nl = realloc(m->labels, cap * sizeof *nl)) == NULL)
			return -ENOMEM;
		m->labels = nl;
		m->cap = cap;
	}
	snprintf(m->labels[m->n], sizeof m->labels[0], fmt, arg ? arg : "",
	         job);
	cut_utf8(m->labels[m->n], sizeof m->labels[0]);
	m->v[m->n].kind = k;
	m->v[m->n].end = SVGP_END_NONE;
	m->v[m->n].t_ms = t;
	m->v[m->n].job_id = job;
	m->v[m->n].label = NULL; /* set once the array stops moving */
	m->n++;
	return 0;
}

static void
marks_fix(struct marks *m)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		m->v[i].label = m->labels[i];
}

static void
marks_free(struct marks *m)
{
	free(m->v);
	free(m->labels);
}

/* Stages and daemon starts from events; only those of job when job > 0. */
static int
marks_from_events(struct marks *m, const cJSON *events, int64_t job)
{
	const cJSON *e;

	cJSON_ArrayForEach(e, events)
	{
		const char *kind = str(e, "kind");
		int64_t ej = (int64_t)num(e, "job_id", 0);
		int64_t t = (int64_t)num(e, "ts_ms", 0);

		if (kind == NULL || (job > 0 && ej != job))
			continue;
		if (strcmp(kind, "stage") == 0 && str(e, "stage") != NULL) {
			if (marks_add(m, SVGP_MARK_STAGE, t, ej, "%s",
			              str(e, "stage")) < 0)
				return -ENOMEM;
		} else if (job == 0 && strcmp(kind, "daemon_start") == 0) {
			if (marks_add(m, SVGP_MARK_RESTART, t, 0,
			              "%sdaemon start", "") < 0)
				return -ENOMEM;
		}
	}
	return 0;
}

/* How a job ended, for its mark: by end_reason first (a running job
 * cancelled ends killed with reason cancel, and must not read as a swap
 * kill), proto/names.h's words, then by state. */
static enum svgp_end
end_of(const cJSON *job)
{
	const char *st = str(job, "state");

	if (st == NULL)
		return SVGP_END_NONE;
	switch (names_end_parse(str(job, "end_reason"))) {
	case NAMES_END_SWAP_BUDGET:
		return SVGP_END_KILL;
	case NAMES_END_TIME_LIMIT:
		return SVGP_END_TIMELIMIT;
	case NAMES_END_CANCEL:
	case NAMES_END_CLIENT_GONE:
	case NAMES_END_DEPENDENCY:
		return SVGP_END_CANCEL;
	case NAMES_END_LOST:
		return SVGP_END_LOST;
	case NAMES_END_SPAWN:
		return SVGP_END_FAILED;
	default:
		break;
	}
	if (strcmp(st, "cancelled") == 0)
		return SVGP_END_CANCEL;
	if (strcmp(st, "lost") == 0)
		return SVGP_END_LOST;
	if (strcmp(st, "failed") == 0)
		return SVGP_END_FAILED;
	if (strcmp(st, "killed") == 0)
		return SVGP_END_KILL;
	return SVGP_END_NONE;
}

/* The vertical mark of a job's end when it did not end on its own: a
 * kill at the sample it was decided on, the others when they ended. */
static int
end_mark(struct marks *m, const cJSON *job)
{
	const cJSON *k = cJSON_GetObjectItemCaseSensitive(job, "kill");
	enum svgp_end e = end_of(job);
	int64_t id = (int64_t)num(job, "id", 0);
	int64_t t = (int64_t)num(job, "ended_at_ms", 0);
	char fmt[32];

	if (e == SVGP_END_NONE || t <= 0)
		return 0;
	/* a breach's or a time limit's kill: when it was decided */
	if ((e == SVGP_END_KILL || e == SVGP_END_TIMELIMIT) &&
	    cJSON_IsObject(k))
		t = (int64_t)num(k, "at_ms", (double)t);
	snprintf(fmt, sizeof fmt, "%%s%s %%" PRId64, svgp_end_name(e));
	if (marks_add(m, SVGP_MARK_END, t, id, fmt, "") < 0)
		return -ENOMEM;
	m->v[m->n - 1].end = e;
	return 0;
}

static void
lane_of(const cJSON *j, struct svgp_lane *l)
{
	const char *st = str(j, "state");

	memset(l, 0, sizeof *l);
	l->job_id = (int64_t)num(j, "id", 0);
	l->name = str(j, "name") ? str(j, "name") : "";
	l->user = str(j, "user") ? str(j, "user") : "";
	l->state = st ? st : "";
	l->submitted_ms = (int64_t)num(j, "submitted_at_ms", 0);
	l->started_ms = (int64_t)num(j, "started_at_ms", 0);
	l->ended_ms = (int64_t)num(j, "ended_at_ms", 0);
	l->end = end_of(j);
}

int
plotd_system(const struct plotd_opts *o, const cJSON *history,
             const cJSON *jobs, const cJSON *events, int64_t t0, int64_t t1,
             struct svgp_buf *out)
{
	struct pts freep = {0}, swap = {0};
	struct svgp_level *levels = NULL;
	struct svgp_lane *lanes = NULL;
	struct svgp_series series[2];
	struct marks m = {0};
	struct svgp_plot p;
	const cJSON *b, *j;
	size_t nlev = 0, nb, nlanes = 0;
	int rc = -ENOMEM;

	nb = (size_t)cJSON_GetArraySize(
	    cJSON_GetObjectItemCaseSensitive(history, "buckets"));
	if ((levels = calloc(nb ? nb : 1, sizeof *levels)) == NULL)
		goto out;
	cJSON_ArrayForEach(b,
	                   cJSON_GetObjectItemCaseSensitive(history, "buckets"))
	{
		int64_t t = (int64_t)num(b, "ts_ms", 0);
		int gap =
		    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(b, "gap"));
		/* The bucket's worst: least free, most swap. */
		if (pts_add(&freep, t, edge_of(b, "free_pct", "min", 0), gap) <
		        0 ||
		    pts_add(&swap, t, edge_of(b, "swap_used_bytes", "max", 0),
		            gap) < 0)
			goto out;
		levels[nlev].t_ms = t;
		levels[nlev].level =
		    names_pressure_level(str(b, "pressure_max"));
		nlev++;
	}
	if (o->max_lanes > 0 &&
	    (lanes = calloc(o->max_lanes, sizeof *lanes)) == NULL)
		goto out;
	cJSON_ArrayForEach(j, jobs)
	{
		int64_t sub = (int64_t)num(j, "submitted_at_ms", 0);
		int64_t end = (int64_t)num(j, "ended_at_ms", 0);
		if (sub > t1 || (end > 0 && end < t0))
			continue;
		if (nlanes < o->max_lanes)
			lane_of(j, &lanes[nlanes++]);
		if (end_mark(&m, j) < 0)
			goto out;
	}
	if (marks_from_events(&m, events, 0) < 0)
		goto out;
	marks_fix(&m);
	memset(series, 0, sizeof series);
	series[0].id = "free_pct";
	series[0].label = "free %";
	series[0].axis = SVGP_AXIS_PCT;
	series[0].style = 0;
	series[0].pts = freep.v;
	series[0].n = freep.n;
	series[1].id = "swap_used_bytes";
	series[1].label = "swap used";
	series[1].axis = SVGP_AXIS_BYTES;
	series[1].style = 1;
	series[1].pts = swap.v;
	series[1].n = swap.n;
	memset(&p, 0, sizeof p);
	p.title = o->title;
	p.width = o->width;
	p.utc = o->utc;
	p.t0_ms = t0;
	p.t1_ms = t1;
	p.series = series;
	p.nseries = 2;
	p.levels = levels;
	p.nlevels = nlev;
	p.lanes = lanes;
	p.nlanes = nlanes;
	p.marks = m.v;
	p.nmarks = m.n;
	p.bytes_max = o->bytes_max;
	p.list = o->marks_list;
	p.job_links = o->job_links;
	rc = svgp_render(&p, out);
out:
	free(freep.v);
	free(swap.v);
	free(levels);
	free(lanes);
	marks_free(&m);
	return rc;
}

int
plotd_job(const struct plotd_opts *o, const cJSON *job, const cJSON *history,
          const cJSON *events, struct svgp_buf *out)
{
	struct pts fp = {0}, sw = {0};
	struct svgp_series series[2];
	struct svgp_lane lane;
	struct marks m = {0};
	struct svgp_plot p;
	const cJSON *b;
	int64_t t0, t1, id = (int64_t)num(job, "id", 0);
	size_t i;
	int rc = -ENOMEM;

	cJSON_ArrayForEach(b,
	                   cJSON_GetObjectItemCaseSensitive(history, "buckets"))
	{
		int64_t t = (int64_t)num(b, "ts_ms", 0);
		if (pts_add(&fp, t, edge_of(b, "footprint_bytes", "max", 0),
		            0) < 0 ||
		    pts_add(&sw, t, edge_of(b, "swap_bytes", "max", 0), 0) < 0)
			goto out;
	}
	lane_of(job, &lane);
	if (end_mark(&m, job) < 0 || marks_from_events(&m, events, id) < 0)
		goto out;
	marks_fix(&m);
	t0 = lane.started_ms > 0 ? lane.started_ms : lane.submitted_ms;
	/* A job still running ends at its latest sample or stage, whichever
	 * came last: a stage reported since the last sample shows. */
	t1 = lane.ended_ms > 0 ? lane.ended_ms : t0;
	if (fp.n > 0 && fp.v[fp.n - 1].t_ms > t1)
		t1 = fp.v[fp.n - 1].t_ms;
	if (fp.n > 0 && fp.v[0].t_ms < t0)
		t0 = fp.v[0].t_ms;
	for (i = 0; i < m.n; i++) {
		if (m.v[i].t_ms > t1)
			t1 = m.v[i].t_ms;
		if (m.v[i].t_ms < t0)
			t0 = m.v[i].t_ms;
	}
	if (t1 <= t0)
		t1 = t0 + 1000;
	/* A little room on both sides, so the ends and the kill show. */
	t0 -= (t1 - t0) / 50;
	t1 += (t1 - t0) / 50;
	memset(series, 0, sizeof series);
	series[0].id = "footprint_bytes";
	series[0].label = "footprint";
	series[0].axis = SVGP_AXIS_BYTES;
	series[0].style = 0;
	series[0].pts = fp.v;
	series[0].n = fp.n;
	series[1].id = "swap_bytes";
	series[1].label = "job swap";
	series[1].axis = SVGP_AXIS_BYTES;
	series[1].style = 1;
	series[1].pts = sw.v;
	series[1].n = sw.n;
	memset(&p, 0, sizeof p);
	p.title = o->title;
	p.width = o->width;
	p.utc = o->utc;
	p.t0_ms = t0;
	p.t1_ms = t1;
	p.series = series;
	p.nseries = 2;
	p.lanes = &lane;
	p.nlanes = 1;
	p.marks = m.v;
	p.nmarks = m.n;
	/* The axis fits the job; its budget is a line (svg-plot.h). */
	p.budget_bytes = (double)num(job, "swap_budget_bytes", 0);
	p.list = o->marks_list;
	p.job_links = o->job_links;
	rc = svgp_render(&p, out);
out:
	free(fp.v);
	free(sw.v);
	marks_free(&m);
	return rc;
}

/* Marks of one job's stages and end, moved by -start (plotd_compare). */
static int
shifted_marks(struct marks *m, const cJSON *job, const cJSON *events,
              int64_t start)
{
	size_t from = m->n, i;
	int64_t id = (int64_t)num(job, "id", 0);

	if (end_mark(m, job) < 0 || marks_from_events(m, events, id) < 0)
		return -ENOMEM;
	for (i = from; i < m->n; i++) {
		m->v[i].t_ms -= start;
		/* "12: decode": whose stage it is, on a plot of two jobs */
		if (m->v[i].kind == SVGP_MARK_STAGE) {
			char tmp[MARK_LABEL_MAX];
			snprintf(tmp, sizeof tmp, "%" PRId64 ": %s", id,
			         m->labels[i]);
			memcpy(m->labels[i], tmp, sizeof tmp);
			cut_utf8(m->labels[i], sizeof m->labels[i]);
		}
	}
	return 0;
}

/* One run of a comparison moved by -start: its points, its lane; *t1
 * grows to its last sample or its end. */
static int
compare_run(const cJSON *history, int64_t start, struct pts *fp, struct pts *sw,
            struct svgp_lane *lane, int64_t *t1)
{
	const cJSON *b;

	cJSON_ArrayForEach(b,
	                   cJSON_GetObjectItemCaseSensitive(history, "buckets"))
	{
		int64_t t = (int64_t)num(b, "ts_ms", 0) - start;
		if (pts_add(fp, t, edge_of(b, "footprint_bytes", "max", 0), 0) <
		        0 ||
		    pts_add(sw, t, edge_of(b, "swap_bytes", "max", 0), 0) < 0)
			return -ENOMEM;
		if (t > *t1)
			*t1 = t;
	}
	/* Its lane on the same axis: queued before 0 is cut off. */
	lane->submitted_ms =
	    lane->submitted_ms > 0 ? lane->submitted_ms - start : 0;
	/* 1 ms, not 0, which a lane reads as "not started". */
	if (lane->started_ms > 0)
		lane->started_ms =
		    lane->started_ms - start > 0 ? lane->started_ms - start : 1;
	if (lane->ended_ms > 0) {
		lane->ended_ms -= start;
		if (lane->ended_ms > *t1)
			*t1 = lane->ended_ms;
	}
	return 0;
}

int
plotd_compare(const struct plotd_opts *o, const cJSON *const jobs[2],
              const cJSON *const histories[2], const cJSON *const events[2],
              struct svgp_buf *out)
{
	struct pts fp[2] = {{0}}, sw[2] = {{0}};
	struct svgp_series series[4];
	struct svgp_lane lanes[2];
	struct marks m = {0};
	struct svgp_plot p;
	char labels[4][48];
	int64_t t1 = 1000;
	double budget[2];
	size_t i;
	int k, rc = -ENOMEM;

	memset(series, 0, sizeof series);
	for (k = 0; k < 2; k++) {
		int64_t id = (int64_t)num(jobs[k], "id", 0), start;

		lane_of(jobs[k], &lanes[k]);
		start = lanes[k].started_ms > 0 ? lanes[k].started_ms
		                                : lanes[k].submitted_ms;
		if (compare_run(histories[k], start, &fp[k], &sw[k], &lanes[k],
		                &t1) < 0)
			goto out;
		if (shifted_marks(&m, jobs[k], events[k], start) < 0)
			goto out;
		/* A running job's last stage may be newer than its last
		 * stored sample. */
		for (i = 0; i < m.n; i++)
			if (m.v[i].t_ms > t1)
				t1 = m.v[i].t_ms;
		budget[k] = num(jobs[k], "swap_budget_bytes", 0);
		snprintf(labels[2 * k], sizeof labels[0],
		         "%" PRId64 " footprint", id);
		snprintf(labels[2 * k + 1], sizeof labels[0],
		         "%" PRId64 " swap", id);
		series[2 * k].id =
		    k == 0 ? "footprint_bytes" : "footprint_bytes_2";
		series[2 * k + 1].id = k == 0 ? "swap_bytes" : "swap_bytes_2";
	}
	marks_fix(&m);
	for (k = 0; k < 4; k++) {
		series[k].label = labels[k];
		series[k].axis = SVGP_AXIS_BYTES;
		/* the first job in blue and red, the second in purple and
		 * amber */
		series[k].style = k < 2 ? k : k + 1;
		series[k].pts = k % 2 == 0 ? fp[k / 2].v : sw[k / 2].v;
		series[k].n = k % 2 == 0 ? fp[k / 2].n : sw[k / 2].n;
	}
	memset(&p, 0, sizeof p);
	p.title = o->title;
	p.width = o->width;
	p.elapsed = 1;
	p.t0_ms = 0;
	p.t1_ms = t1 + t1 / 50;
	p.series = series;
	p.nseries = 4;
	p.lanes = lanes;
	p.nlanes = 2;
	p.marks = m.v;
	p.nmarks = m.n;
	/* One budget line when the runs share it. */
	p.budget_bytes = budget[0] == budget[1] ? budget[0] : 0;
	p.list = o->marks_list;
	p.job_links = o->job_links;
	rc = svgp_render(&p, out);
out:
	for (k = 0; k < 2; k++) {
		free(fp[k].v);
		free(sw[k].v);
	}
	marks_free(&m);
	return rc;
}

int
plotd_trace(const struct plotd_opts *o, const char *text, struct svgp_buf *out,
            char *cause, size_t causelen)
{
	static const struct {
		const char *id, *label;
		enum svgp_axis axis;
	} known[] = {
	    {"free_pct", "free %", SVGP_AXIS_PCT},
	    {"swap_used_bytes", "swap used", SVGP_AXIS_BYTES},
	    {"footprint_bytes", "footprint", SVGP_AXIS_BYTES},
	    {"swap_bytes", "job swap", SVGP_AXIS_BYTES},
	};
	enum { NK = sizeof known / sizeof known[0] };
	struct pts pts[NK];
	struct svgp_series series[NK];
	struct svgp_level *levels = NULL;
	size_t nlev = 0, caplev = 0, ns = 0, k;
	struct marks m = {0};
	struct svgp_plot p;
	int64_t t0 = INT64_MAX, t1 = INT64_MIN;
	const char *line = text, *nl;
	char *stage = NULL; /* the stage of the line before */
	long lineno = 0;
	int rc = -ENOMEM;

	memset(pts, 0, sizeof pts);
	for (; line != NULL && *line != '\0'; line = nl ? nl + 1 : NULL) {
		cJSON *obj;
		int64_t t;
		size_t len;
		char *copy;

		nl = strchr(line, '\n');
		len = nl ? (size_t)(nl - line) : strlen(line);
		lineno++;
		if (len == 0 || (len == 1 && line[0] == '\r'))
			continue;
		if ((copy = strndup(line, len)) == NULL)
			goto out;
		obj = cJSON_Parse(copy);
		free(copy);
		/* MemoryMeter's first line says what wrote the trace. */
		if (cJSON_IsObject(obj) &&
		    cJSON_GetObjectItemCaseSensitive(obj, "trace") != NULL &&
		    cJSON_GetObjectItemCaseSensitive(obj, "ts_ms") == NULL) {
			cJSON_Delete(obj);
			continue;
		}
		if (!cJSON_IsObject(obj) ||
		    !cJSON_IsNumber(
		        cJSON_GetObjectItemCaseSensitive(obj, "ts_ms"))) {
			cJSON_Delete(obj);
			snprintf(cause, causelen,
			         "line %ld is not a JSON object with ts_ms",
			         lineno);
			rc = -EINVAL;
			goto out;
		}
		t = (int64_t)num(obj, "ts_ms", 0);
		if (t < t0)
			t0 = t;
		if (t > t1)
			t1 = t;
		/* A stage is marked where it begins: a trace names the
		 * current stage on every line (null between stages). */
		if (cJSON_GetObjectItemCaseSensitive(obj, "stage") != NULL) {
			const char *now = str(obj, "stage");

			if (now != NULL &&
			    (stage == NULL || strcmp(now, stage) != 0) &&
			    marks_add(&m, SVGP_MARK_STAGE, t, 0, "%s", now) <
			        0) {
				cJSON_Delete(obj);
				goto out;
			}
			free(stage);
			stage = now != NULL ? strdup(now) : NULL;
		}
		for (k = 0; k < NK; k++) {
			const cJSON *v =
			    cJSON_GetObjectItemCaseSensitive(obj, known[k].id);
			if (cJSON_IsNumber(v) &&
			    pts_add(&pts[k], t, v->valuedouble, 0) < 0) {
				cJSON_Delete(obj);
				goto out;
			}
		}
		if (str(obj, "pressure") != NULL) {
			if (nlev == caplev) {
				size_t cap = caplev ? caplev * 2 : 256;
				struct svgp_level *nv =
				    realloc(levels, cap * sizeof *nv);
				if (nv == NULL) {
					cJSON_Delete(obj);
					goto out;
				}
				levels = nv;
				caplev = cap;
			}
			levels[nlev].t_ms = t;
			levels[nlev].level =
			    names_pressure_level(str(obj, "pressure"));
			nlev++;
		}
		cJSON_Delete(obj);
	}
	if (t0 > t1) {
		snprintf(cause, causelen, "the trace has no samples");
		rc = -EINVAL;
		goto out;
	}
	if (t1 == t0)
		t1 = t0 + 1000;
	marks_fix(&m);
	memset(series, 0, sizeof series);
	for (k = 0; k < NK; k++) {
		if (pts[k].n == 0)
			continue;
		series[ns].id = known[k].id;
		series[ns].label = known[k].label;
		series[ns].axis = known[k].axis;
		series[ns].style = (int)k;
		series[ns].pts = pts[k].v;
		series[ns].n = pts[k].n;
		ns++;
	}
	memset(&p, 0, sizeof p);
	p.title = o->title;
	p.width = o->width;
	p.utc = o->utc;
	p.t0_ms = t0;
	p.t1_ms = t1;
	p.series = series;
	p.nseries = ns;
	p.levels = levels;
	p.nlevels = nlev;
	p.marks = m.v;
	p.nmarks = m.n;
	p.bytes_max = o->bytes_max;
	rc = svgp_render(&p, out);
out:
	for (k = 0; k < NK; k++)
		free(pts[k].v);
	free(levels);
	free(stage);
	marks_free(&m);
	return rc;
}
