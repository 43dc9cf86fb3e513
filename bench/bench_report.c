/*
 * Accounting benchmark (docs/benchmarks.md, "Accounting"): what counting
 * an ended job in its day's rollup costs, and what a report over 100,000
 * ended jobs costs the daemon's loop.
 *
 * N ended jobs (default 100,000) over 90 days of 20 users and 50 names
 * each go through the real store API (store_account: the rollup rows
 * job_days, written as store_job_update writes them when a job ends), one
 * transaction a job as the daemon commits them. Outcomes: 80 % exit 0, 8 %
 * another exit, 5 % killed (swap_budget, cancel), 4 % cancelled, 2 %
 * failed, 1 % lost; run times log-normal around 10 minutes. Then each form
 * of the report is read as the daemon answers it (control-report.c): parts
 * of 250 rollup rows, then the answer's rows encoded 50 at a time; the
 * slowest part is the longest the report holds the loop.
 *
 * usage: bench_report [--jobs N] [--runs N] [--dir DIR] [--reports-only]
 *
 * --dir keeps the database; --reports-only then times the reports again
 * on it without counting jobs.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "store.h"
#include "store-report.h"

#define DAYS 90
#define USERS 20
#define NAMES 50
#define READ_PART 250 /* control-report.c's */
#define WRITE_PART 50

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* This thread's CPU time: a part's work without the time another
 * process had the CPU (a loaded machine preempts for 10 ms and more). */
static double
cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t
rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static double
uniform(void)
{
	return ((double)(rng() >> 11) + 0.5) / 9007199254740992.0;
}

static void
make_job(struct job *j, int64_t today, char *user, char *name)
{
	int64_t day = today - (int64_t)(rng() % DAYS);
	unsigned uid = 1000 + (unsigned)(rng() % USERS);
	int out = (int)(rng() % 100);
	double z = sqrt(-2 * log(uniform())) * cos(2 * M_PI * uniform());
	int64_t run = (int64_t)(600000.0 * exp(z));

	memset(j, 0, sizeof *j);
	snprintf(user, 16, "user%u", uid);
	snprintf(name, 16, "gen-%02u", (unsigned)(rng() % NAMES));
	j->uid = uid;
	j->user = user;
	j->name = name;
	j->ended_ms = day * STORE_REPORT_DAY_MS + (int64_t)(rng() % 86400000);
	j->started_ms = j->ended_ms - run;
	j->submitted_ms = j->started_ms - (int64_t)(rng() % 600000);
	j->footprint_peak_bytes = rng() % (40ULL << 30);
	j->swap_growth_peak_bytes = rng() % (4ULL << 30);
	if (out < 80) {
		j->state = JOB_EXITED;
	} else if (out < 88) {
		j->state = JOB_EXITED;
		j->exit_code = 1;
	} else if (out < 93) {
		j->state = JOB_KILLED;
		j->end_reason = out < 92 ? "swap_budget" : "cancel";
	} else if (out < 97) {
		j->state = JOB_CANCELLED;
		j->started_ms = 0;
	} else if (out < 99) {
		j->state = JOB_FAILED;
		j->started_ms = 0;
	} else {
		j->state = JOB_LOST;
	}
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

struct timing {
	double total, worst, worst_cpu;
	double part[4096];
	size_t rows, parts;
	int64_t jobs;
};

static int
report_once(struct store *s, const struct store_report_query *q,
            struct timing *t)
{
	const struct store_report_row *rows;
	struct store_report *rep;
	char cause[256];
	double t0 = now_ms(), a, c;
	size_t n, i;
	int rc;

	memset(t, 0, sizeof *t);
	a = now_ms();
	c = cpu_ms();
	if (store_report_begin(store_reader(s), q, &rep, cause, sizeof cause) !=
	    0) {
		fprintf(stderr, "report: %s\n", cause);
		return -1;
	}
	do {
		rc = store_report_next(rep, READ_PART, cause, sizeof cause);
		t->worst = fmax(t->worst, now_ms() - a);
		t->worst_cpu = fmax(t->worst_cpu, cpu_ms() - c);
		if (t->parts < 4096)
			t->part[t->parts] = now_ms() - a;
		t->parts++;
		a = now_ms();
		c = cpu_ms();
	} while (rc == 1);
	if (rc != 0) {
		fprintf(stderr, "report: %s\n", cause);
		store_report_free(rep);
		return -1;
	}
	n = store_report_rows(rep, &rows);
	for (i = 0; i < n; i++) {
		cJSON *o = store_report_row_json(&rows[i]);
		char *text = cJSON_PrintUnformatted(o);

		t->jobs += rows[i].runs;
		free(text);
		cJSON_Delete(o);
		if ((i + 1) % WRITE_PART == 0 || i + 1 == n) {
			t->worst = fmax(t->worst, now_ms() - a);
			t->worst_cpu = fmax(t->worst_cpu, cpu_ms() - c);
			if (t->parts < 4096)
				t->part[t->parts] = now_ms() - a;
			t->parts++;
			a = now_ms();
			c = cpu_ms();
		}
	}
	t->rows = n;
	t->total = now_ms() - t0;
	store_report_free(rep);
	return 0;
}

int
main(int argc, char **argv)
{
	int njobs = 100000, runs = 5, i, k, reuse = 0;
	const char *dir = NULL;
	char tmpl[] = "/tmp/bench-report-XXXXXX", path[512], cause[256];
	char user[16], name[16];
	struct store *s;
	struct job j, *jp = &j;
	int64_t today = (int64_t)time(NULL) * 1000 / STORE_REPORT_DAY_MS;
	double t0, per_job, worst_job = 0;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--jobs") == 0 && i + 1 < argc)
			njobs = atoi(argv[++i]);
		else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
			runs = atoi(argv[++i]);
		else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
			dir = argv[++i];
		else if (strcmp(argv[i], "--reports-only") == 0)
			reuse = 1;
		else {
			fprintf(stderr, "usage: bench_report [--jobs N] "
			                "[--runs N] [--dir DIR] "
			                "[--reports-only]\n");
			return 2;
		}
	}
	if (dir == NULL && (dir = mkdtemp(tmpl)) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(path, sizeof path, "%s/stageload.db", dir);
	if (store_open(&s, path, cause, sizeof cause) != 0) {
		fprintf(stderr, "store_open: %s\n", cause);
		return 1;
	}
	t0 = now_ms();
	for (i = 0; !reuse && i < njobs; i++) {
		double a = now_ms();

		make_job(&j, today, user, name);
		if (store_account(s, &jp, 1, cause, sizeof cause) != 0) {
			fprintf(stderr, "store_account: %s\n", cause);
			return 1;
		}
		worst_job = fmax(worst_job, now_ms() - a);
	}
	per_job = (now_ms() - t0) / njobs;
	if (!reuse)
		printf("%d ended jobs counted, one transaction each: %.1f us a "
		       "job "
		       "(slowest %.2f ms); database %.1f MiB\n\n",
		       njobs, per_job * 1000, worst_job,
		       store_size_bytes(s) / 1048576.0);
	printf("| report | rows | jobs | parts | median ms | median part ms | "
	       "slowest part ms | slowest part, CPU ms |\n"
	       "|---|---|---|---|---|---|---|---|\n");
	{
		struct {
			const char *label;
			struct store_report_query q;
		} cases[] = {
		    {"by user,name, 90 days",
		     {(today - DAYS + 1) * STORE_REPORT_DAY_MS,
		      (today + 1) * STORE_REPORT_DAY_MS - 1,
		      STORE_REPORT_BY_BOTH, -1, NULL}},
		    {"by user, 90 days",
		     {(today - DAYS + 1) * STORE_REPORT_DAY_MS,
		      (today + 1) * STORE_REPORT_DAY_MS - 1,
		      STORE_REPORT_BY_USER, -1, NULL}},
		    {"by name, 90 days",
		     {(today - DAYS + 1) * STORE_REPORT_DAY_MS,
		      (today + 1) * STORE_REPORT_DAY_MS - 1,
		      STORE_REPORT_BY_NAME, -1, NULL}},
		    {"by user,name, 7 days",
		     {(today - 6) * STORE_REPORT_DAY_MS,
		      (today + 1) * STORE_REPORT_DAY_MS - 1,
		      STORE_REPORT_BY_BOTH, -1, NULL}},
		    {"one user, names gen-1*, 90 days",
		     {(today - DAYS + 1) * STORE_REPORT_DAY_MS,
		      (today + 1) * STORE_REPORT_DAY_MS - 1,
		      STORE_REPORT_BY_BOTH, 1003, "gen-1*"}},
		};

		for (k = 0; k < (int)(sizeof cases / sizeof cases[0]); k++) {
			double totals[64], worst = 0, worst_cpu = 0, tmp;
			static double parts[64 * 4096];
			static struct timing t;
			size_t np = 0, p;
			int r, a, b;

			for (r = 0; r < runs && r < 64; r++) {
				if (report_once(s, &cases[k].q, &t) != 0)
					return 1;
				totals[r] = t.total;
				worst = fmax(worst, t.worst);
				worst_cpu = fmax(worst_cpu, t.worst_cpu);
				for (p = 0; p < t.parts && p < 4096; p++)
					parts[np++] = t.part[p];
			}
			qsort(parts, np, sizeof parts[0], cmp_double);
			for (a = 0; a < r; a++)
				for (b = a + 1; b < r; b++)
					if (totals[b] < totals[a]) {
						tmp = totals[a];
						totals[a] = totals[b];
						totals[b] = tmp;
					}
			printf("| %s | %zu | %lld | %zu | %.1f | %.2f | %.2f | "
			       "%.2f |\n",
			       cases[k].label, t.rows, (long long)t.jobs,
			       t.parts, totals[r / 2], parts[np / 2], worst,
			       worst_cpu);
		}
	}
	store_close(s);
	return 0;
}
