/*
 * The job table (jobs.h) driven through its public API, the way tick.c and
 * the control layer drive it: admission order, the breach victim and the
 * restart of growth, retries, cancel, re-adoption after a restart, and a
 * spawn that fails.
 *
 * Everything above the OS boundary is real: a sqlite store in a temp dir
 * (reopened across a simulated restart, so what is asserted there is on
 * disk), a real uv loop (the admit timer, the kill grace timer, the
 * monitor pipe's poll), admit.c and enforce.c. Only the two places where
 * the table acts on the OS are replaced (struct jobs_ops): spawn records
 * the job and hands back one end of a socketpair the test holds (or
 * fails), signal_tree records (pgid, sig) and signals nothing. The note
 * callback records every struct jobs_note.
 *
 * System samples are made by hand (free %, swap used, ts) and set as the
 * daemon's latest before jobs_on_sample, as tick_run does. The platform
 * gets a fixture proc root, but only its system files (meminfo, PSI) come
 * from there: per-process reads always use the real /proc (platform.h), so
 * a job's "process" is a real child of the test (its own group, parked in
 * pause()), killed and reaped by the test to make the job's tree go.
 * Attached jobs are driven without spawning: submit, then jobs_attach
 * with such a child after the ADMITTED note, and jobs_exit as its client
 * would report.
 */
#define _XOPEN_SOURCE 700
#define _DEFAULT_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <uv.h>

#include "clock.h"
#include "daemon.h"
#include "job.h"
#include "jobs.h"
#include "platform.h"
#include "proto.h"
#include "store.h"
#include "testclock.h"

#define MIB (1024ULL * 1024)
#define GIB (1024 * MIB)
#define TOTAL_BYTES (16 * GIB)
#define POLL_MS 5000

/* What the note callback saw, copied: the note's job is only valid during
 * the call. */
struct rec_note {
	enum jobs_note_kind kind;
	int64_t job_id;
	uint64_t client_id;
	enum job_state state;
	int attempt;
	long position, of;
	enum admit_wait wait;
	uint64_t growth_bytes;
	int requeued;
	char reason[32]; /* ENDED: end_reason */
	char event[16];  /* EVENT: kind */
};

struct rec_signal {
	pid_t pgid;
	int sig;
};

struct rec_spawn {
	int64_t job_id;
	int attempt;
	char argv[64]; /* argv and env as the spawn hook got them */
	char env[64];
};

/* v's strings joined by spaces into out. */
static void
join_strv(char *const *v, char *out, size_t len)
{
	size_t n = 0;

	out[0] = '\0';
	for (; v != NULL && *v != NULL && n < len; v++)
		n += (size_t)snprintf(out + n, len - n, "%s%s", n ? " " : "",
		                      *v);
}

struct fx {
	char dir[256], db[320], state[320], proc[320];
	uv_loop_t loop;
	struct daemon d;

	struct rec_note notes[512];
	size_t nnotes;
	struct rec_signal sigs[256];
	size_t nsigs;
	struct rec_spawn spawns[64];
	size_t nspawns;
	int spawn_fail;    /* the fake spawn returns this (< 0) when set */
	int spawn_fds[64]; /* the test's ends of the monitor pipes */
	pid_t kids[32];    /* children standing in for job processes */
	size_t nkids;
};

static struct fx *F;

/* ---- the recorded hooks ---- */

static void
record_note(struct daemon *d, const struct jobs_note *n)
{
	struct rec_note *r;

	(void)d;
	if (F->nnotes == sizeof F->notes / sizeof F->notes[0])
		return;
	r = &F->notes[F->nnotes++];
	memset(r, 0, sizeof *r);
	r->kind = n->kind;
	r->client_id = n->client_id;
	r->position = n->position;
	r->of = n->of;
	r->wait = n->wait;
	r->growth_bytes = n->growth_bytes;
	r->requeued = n->requeued;
	if (n->job != NULL) {
		r->job_id = n->job->id;
		r->state = n->job->state;
		r->attempt = n->job->attempt;
		if (n->job->end_reason != NULL)
			snprintf(r->reason, sizeof r->reason, "%s",
			         n->job->end_reason);
	}
	if (n->event != NULL) {
		r->job_id = n->event->job_id;
		snprintf(r->event, sizeof r->event, "%s", n->event->kind);
	}
}

static int
fake_spawn(const char *state_dir, const struct job *j,
           struct spawn_child *child, char *cause, size_t causelen)
{
	int sv[2];

	(void)state_dir;
	if (F->nspawns < sizeof F->spawns / sizeof F->spawns[0]) {
		F->spawns[F->nspawns].job_id = j->id;
		F->spawns[F->nspawns].attempt = j->attempt;
		join_strv(j->argv, F->spawns[F->nspawns].argv,
		          sizeof F->spawns[F->nspawns].argv);
		join_strv(j->env, F->spawns[F->nspawns].env,
		          sizeof F->spawns[F->nspawns].env);
	}
	F->nspawns++;
	if (F->spawn_fail != 0) {
		snprintf(cause, causelen, "fake spawn: %s",
		         strerror(-F->spawn_fail));
		return F->spawn_fail;
	}
	if (F->nspawns > sizeof F->spawn_fds / sizeof F->spawn_fds[0] ||
	    socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
		snprintf(cause, causelen, "fake spawn: no socketpair");
		return -EMFILE;
	}
	fcntl(sv[0], F_SETFD, FD_CLOEXEC);
	fcntl(sv[1], F_SETFD, FD_CLOEXEC);
	fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK);
	F->spawn_fds[F->nspawns - 1] = sv[1];
	child->monitor_pid = 0;
	child->fd = sv[0];
	return 0;
}

static int
fake_signal_tree(pid_t pgid, const pid_t *pids, size_t n, int sig)
{
	(void)pids;
	(void)n;
	if (F->nsigs < sizeof F->sigs / sizeof F->sigs[0]) {
		F->sigs[F->nsigs].pgid = pgid;
		F->sigs[F->nsigs].sig = sig;
		F->nsigs++;
	}
	return 1;
}

static const struct jobs_ops fake_ops = {fake_spawn, fake_signal_tree};

/* ---- what was recorded ---- */

static size_t
count_notes(enum jobs_note_kind kind, int64_t id)
{
	size_t i, n = 0;

	for (i = 0; i < F->nnotes; i++)
		if (F->notes[i].kind == kind &&
		    (id == 0 || F->notes[i].job_id == id))
			n++;
	return n;
}

/* The last note of that kind for the job, or NULL. */
static const struct rec_note *
last_note(enum jobs_note_kind kind, int64_t id)
{
	size_t i;

	for (i = F->nnotes; i-- > 0;)
		if (F->notes[i].kind == kind && F->notes[i].job_id == id)
			return &F->notes[i];
	return NULL;
}

/* Where the last note of that kind for the job is among all notes, or
 * -1: to check the order in which a client hears them. */
static long
last_note_at(enum jobs_note_kind kind, int64_t id)
{
	const struct rec_note *n = last_note(kind, id);

	return n != NULL ? (long)(n - F->notes) : -1;
}

static size_t
count_events(const char *kind, int64_t id)
{
	size_t i, n = 0;

	for (i = 0; i < F->nnotes; i++)
		if (F->notes[i].kind == JOBS_NOTE_EVENT &&
		    F->notes[i].job_id == id &&
		    strcmp(F->notes[i].event, kind) == 0)
			n++;
	return n;
}

/* The job's events, in order, as "a,b,c". */
static void
events_of(int64_t id, char *buf, size_t len)
{
	size_t i, off = 0;

	buf[0] = '\0';
	for (i = 0; i < F->nnotes; i++) {
		if (F->notes[i].kind != JOBS_NOTE_EVENT ||
		    F->notes[i].job_id != id)
			continue;
		off += (size_t)snprintf(buf + off, len - off, "%s%s",
		                        off ? "," : "", F->notes[i].event);
		if (off >= len)
			break;
	}
}

static size_t
count_sigs(pid_t pgid, int sig)
{
	size_t i, n = 0;

	for (i = 0; i < F->nsigs; i++)
		if (F->sigs[i].pgid == pgid && F->sigs[i].sig == sig)
			n++;
	return n;
}

static void
forget_records(void)
{
	F->nnotes = 0;
	F->nsigs = 0;
}

/* ---- the loop and the clock ---- */

static void
turn(void)
{
	uv_run(&F->loop, UV_RUN_NOWAIT);
}

/* Runs the loop (and step) until cond holds, for at most POLL_MS. */
#define POLL_UNTIL(cond, step)                                                 \
	do {                                                                   \
		int64_t dl_ = clock_mono_ms() + POLL_MS;                       \
		for (;;) {                                                     \
			turn();                                                \
			if (cond)                                              \
				break;                                         \
			if (clock_mono_ms() > dl_)                             \
				fail_msg("timed out waiting for %s", #cond);   \
			step;                                                  \
			usleep(1000);                                          \
		}                                                              \
	} while (0)

#define RUN_UNTIL(cond) POLL_UNTIL(cond, (void)0)

static void write_file(const char *path, const char *text);

/* The fixture's meminfo with swap_used of 8 GiB in use, written whole
 * (a new file renamed over the old, as the platform expects): what
 * platform_swap_used reads when enforcement confirms a breach. */
static void
fixture_swap(uint64_t swap_used)
{
	char text[512], tmp[600], path[600];
	uint64_t total = swap_used > 8 * GIB ? swap_used : 8 * GIB;

	snprintf(text, sizeof text,
	         "MemTotal:       16777216 kB\n"
	         "MemFree:         8388608 kB\n"
	         "MemAvailable:    8388608 kB\n"
	         "SwapTotal:       %llu kB\n"
	         "SwapFree:        %llu kB\n",
	         (unsigned long long)(total / 1024),
	         (unsigned long long)((total - swap_used) / 1024));
	snprintf(tmp, sizeof tmp, "%s/meminfo.tmp", F->proc);
	snprintf(path, sizeof path, "%s/meminfo", F->proc);
	write_file(tmp, text);
	assert_int_equal(rename(tmp, path), 0);
}

/* A hand-made system sample at ts, made the daemon's latest as tick_run
 * does, then handed to the table; a second reading of swap (the fixture's
 * meminfo) shows confirm_used. */
static void
sample_seen(int64_t ts, double free_pct, uint64_t swap_used,
            uint64_t confirm_used)
{
	struct sys_sample s;

	memset(&s, 0, sizeof s);
	s.ts_ms = ts;
	s.total_bytes = TOTAL_BYTES;
	s.available_bytes = (uint64_t)((double)TOTAL_BYTES * free_pct / 100);
	s.free_pct = free_pct;
	s.swap_total_bytes = 8 * GIB;
	s.swap_used_bytes = swap_used;
	s.pressure = PRESSURE_NORMAL;
	s.psi_some_avg10 = -1;
	F->d.last = s;
	F->d.have_last = 1;
	fixture_swap(confirm_used);
	jobs_on_sample(&F->d, &s);
}

/* A sample that a second reading agrees with. */
static void
sample_at(int64_t ts, double free_pct, uint64_t swap_used)
{
	sample_seen(ts, free_pct, swap_used, swap_used);
}

static void
sample(double free_pct, uint64_t swap_used)
{
	sample_at(clock_wall_ms(), free_pct, swap_used);
}

/* ---- jobs ---- */

static char **
strv2(const char *a, const char *b)
{
	char **v = calloc(3, sizeof *v);

	assert_non_null(v);
	v[0] = strdup(a);
	v[1] = b != NULL ? strdup(b) : NULL;
	return v;
}

struct spec {
	const char *name;
	int attached;
	uint64_t client_id;
	int priority;
	double wait_free_pct;
	uint64_t swap_budget_bytes;
	int retry_on_breach;
};

static int64_t
submit_ex(const struct spec *sp, long *position, size_t *queued)
{
	struct job *j = calloc(1, sizeof *j);
	char cause[256];
	int64_t id = 0;
	long pos = 0;
	size_t q = 0;

	assert_non_null(j);
	j->uid = getuid();
	j->gid = getgid();
	j->user = strdup("tester");
	j->name = strdup(sp->name);
	j->argv = strv2("sleep", "1000");
	j->cwd = strdup("/");
	j->env = sp->attached ? NULL : strv2("PATH=/bin:/usr/bin", NULL);
	j->attached = sp->attached;
	j->priority = sp->priority;
	j->wait_free_pct = sp->wait_free_pct;
	j->swap_budget_bytes = sp->swap_budget_bytes;
	j->retry_on_breach = sp->retry_on_breach;
	j->umask = 077;
	if (jobs_submit(&F->d, j, sp->client_id, &id, &pos, &q, cause,
	                sizeof cause) != 0)
		fail_msg("jobs_submit: %s", cause);
	assert_true(id > 0);
	if (position != NULL)
		*position = pos;
	if (queued != NULL)
		*queued = q;
	return id;
}

static int64_t
submit(const char *name, int attached, uint64_t client_id, int priority,
       double wait_free_pct, uint64_t budget, int retry)
{
	struct spec sp = {name,          attached, client_id, priority,
	                  wait_free_pct, budget,   retry};

	return submit_ex(&sp, NULL, NULL);
}

/* The job as the table shows it (ended jobs: from the store). */
static void
view(int64_t id, struct jobs_view *v)
{
	char cause[256];

	if (jobs_get(&F->d, id, v, cause, sizeof cause) != 0)
		fail_msg("jobs_get %lld: %s", (long long)id, cause);
	assert_non_null(v->j);
}

static enum job_state
state_of(int64_t id)
{
	struct jobs_view v;
	enum job_state s;

	view(id, &v);
	s = v.j->state;
	jobs_view_free(&v);
	return s;
}

static long
position_of(int64_t id, enum admit_wait *wait)
{
	struct jobs_view v;
	long p;

	view(id, &v);
	assert_int_equal(v.j->state, JOB_QUEUED);
	p = v.position;
	if (wait != NULL)
		*wait = v.wait;
	jobs_view_free(&v);
	return p;
}

/* What the job waits for (ADMIT_WAIT_NONE once it is admitted). */
static enum admit_wait
wait_of(int64_t id)
{
	struct jobs_view v;
	enum admit_wait w;

	view(id, &v);
	w = v.j->state == JOB_QUEUED ? v.wait : ADMIT_WAIT_NONE;
	jobs_view_free(&v);
	return w;
}

/* The record on disk; free with job_free. */
static struct job *
stored(int64_t id)
{
	struct job *j = NULL;

	assert_int_equal(store_job_get(F->d.store, id, &j), 0);
	assert_non_null(j);
	return j;
}

static void
assert_stored_end(int64_t id, enum job_state s, const char *reason,
                  const char *detail_part)
{
	struct job *j = stored(id);

	assert_string_equal(job_state_name(j->state), job_state_name(s));
	if (reason == NULL)
		assert_null(j->end_reason);
	else {
		assert_non_null(j->end_reason);
		assert_string_equal(j->end_reason, reason);
	}
	if (detail_part != NULL) {
		assert_non_null(j->end_detail);
		if (strstr(j->end_detail, detail_part) == NULL)
			fail_msg("job %lld: end_detail \"%s\" lacks \"%s\"",
			         (long long)id, j->end_detail, detail_part);
	}
	if (JOB_STATE_ENDED(s))
		assert_true(j->ended_ms > 0);
	job_free(j);
}

/* ---- stand-ins for job processes ---- */

/* A real process in its own group (its pid), parked until killed; it
 * leaves by itself after a minute should the test die without its
 * teardown. */
static pid_t
start_kid(uint64_t *start_time)
{
	pid_t pid;

	assert_true(F->nkids < sizeof F->kids / sizeof F->kids[0]);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		setpgid(0, 0);
		alarm(60);
		for (;;)
			pause();
	}
	setpgid(pid, pid); /* whichever runs first */
	F->kids[F->nkids++] = pid;
	assert_int_equal(platform_proc_start_time(pid, start_time), 0);
	return pid;
}

/* The process goes, for good (a zombie would read as gone as well). */
static void
kill_kid(pid_t pid)
{
	size_t i;

	for (i = 0; i < F->nkids; i++) {
		if (F->kids[i] != pid)
			continue;
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		F->kids[i] = F->kids[--F->nkids];
		return;
	}
	fail_msg("no such kid %d", (int)pid);
}

/* The attached client started its command: job_pid. Returns its pid
 * (also its group). */
static pid_t
attach(int64_t id, uint64_t client_id)
{
	uint64_t start;
	pid_t pid = start_kid(&start);

	assert_int_equal(jobs_attach(&F->d, id, client_id, pid, pid, start), 0);
	assert_int_equal(state_of(id), JOB_RUNNING);
	return pid;
}

/* The client reports that its command was ended by sig. */
static void
client_exit_signal(int64_t id, int sig)
{
	char cause[256];

	if (jobs_exit(&F->d, id, -1, sig, cause, sizeof cause) != 0)
		fail_msg("jobs_exit: %s", cause);
}

/*
 * The client's report of an attempt the daemon already ended, or requeued,
 * once its process was gone: the job is not touched by it (control's
 * job_exit answers with the job as it is).
 */
static void
client_exit_late(int64_t id)
{
	if (jobs_is_live(&F->d, id))
		assert_int_equal(jobs_exit_owed(&F->d, id), 1);
}

/* ---- fixture ---- */

static void
write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static void
daemon_start(void)
{
	char cause[256];

	if (store_open(&F->d.store, F->db, cause, sizeof cause) != 0)
		fail_msg("store_open: %s", cause);
	if (jobs_init(&F->d, record_note, &fake_ops, cause, sizeof cause) != 0)
		fail_msg("jobs_init: %s", cause);
}

/* Run the loop until every handle the table closed is gone. */
static void
drain(void)
{
	int i;

	for (i = 0; i < 100 && uv_loop_alive(&F->loop); i++)
		uv_run(&F->loop, UV_RUN_NOWAIT);
}

/* As at SIGTERM: the table is shut down (running jobs left alone), the
 * database closed; a new daemon has no sample yet. */
static void
daemon_stop(void)
{
	if (F->d.jobs != NULL)
		jobs_shutdown(&F->d);
	drain();
	if (F->d.store != NULL) {
		char cause[256];
		store_flush(F->d.store, cause, sizeof cause);
		store_close(F->d.store);
		F->d.store = NULL;
	}
	memset(&F->d.last, 0, sizeof F->d.last);
	F->d.have_last = 0;
}

static int
setup(void **state)
{
	struct platform_config pc;
	const char *tmp = getenv("TMPDIR");
	char p[400], cause[256];
	size_t i;

	(void)state;
	F = calloc(1, sizeof *F);
	if (F == NULL)
		return -1;
	for (i = 0; i < sizeof F->spawn_fds / sizeof F->spawn_fds[0]; i++)
		F->spawn_fds[i] = -1;
	snprintf(F->dir, sizeof F->dir, "%s/sl-jobs-XXXXXX",
	         tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp");
	if (mkdtemp(F->dir) == NULL)
		return -1;
	snprintf(F->db, sizeof F->db, "%s/stageload.db", F->dir);
	snprintf(F->state, sizeof F->state, "%s/state", F->dir);
	snprintf(F->proc, sizeof F->proc, "%s/proc", F->dir);
	if (mkdir(F->state, 0700) != 0 || mkdir(F->proc, 0700) != 0)
		return -1;
	snprintf(p, sizeof p, "%s/pressure", F->proc);
	if (mkdir(p, 0700) != 0)
		return -1;
	/* 16 GiB, half available, 8 GiB swap of which 1 GiB used: the
	 * system side of the platform reads these, never the host's. */
	snprintf(p, sizeof p, "%s/meminfo", F->proc);
	write_file(p, "MemTotal:       16777216 kB\n"
	              "MemFree:         8388608 kB\n"
	              "MemAvailable:    8388608 kB\n"
	              "SwapTotal:       8388608 kB\n"
	              "SwapFree:        7340032 kB\n");
	snprintf(p, sizeof p, "%s/pressure/memory", F->proc);
	write_file(p, "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
	              "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");

	memset(&pc, 0, sizeof pc);
#ifdef __linux__
	pc.proc_root = F->proc;
#endif
	pc.psi_warn = -1;
	pc.psi_critical = -1;
	if (platform_init(&pc, cause, sizeof cause) != 0) {
		print_error("platform_init: %s\n", cause);
		return -1;
	}
	if (uv_loop_init(&F->loop) != 0)
		return -1;

	F->d.loop = &F->loop;
	config_defaults(&F->d.cfg, 0);
	snprintf(F->d.cfg.db_path, sizeof F->d.cfg.db_path, "%s", F->db);
	snprintf(F->d.cfg.state_dir, sizeof F->d.cfg.state_dir, "%s", F->state);
#ifdef __linux__
	snprintf(F->d.cfg.proc_root, sizeof F->d.cfg.proc_root, "%s", F->proc);
#endif
	F->d.cfg.grace_ms = 50;
	F->d.cfg.settle_ms = 0; /* no settle wait: admission is free % */
	F->d.cfg.max_running = 0;
	F->d.started_ms = clock_wall_ms();
	daemon_start();
	return 0;
}

static int
rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

static int
teardown(void **state)
{
	size_t i;
	int rc;

	(void)state;
	daemon_stop();
	for (i = 0; i < sizeof F->spawn_fds / sizeof F->spawn_fds[0]; i++)
		if (F->spawn_fds[i] >= 0)
			close(F->spawn_fds[i]);
	for (i = 0; i < F->nkids; i++) {
		kill(F->kids[i], SIGKILL);
		waitpid(F->kids[i], NULL, 0);
	}
	rc = uv_loop_close(&F->loop);
	platform_shutdown();
	nftw(F->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(F);
	F = NULL;
	return rc == 0 ? 0 : -1;
}

/* ---- 1. admission ---- */

/*
 * Queue order is priority desc, then submission; strict head of line;
 * nothing before the first sample or below the head's wait_free;
 * max_running holds; attached clients hear their place (QUEUE) and their
 * admission (ADMITTED) in that order.
 */
/* What a job waits for is known when submit returns, before the admit
 * timer's pass: a list another client reads in the same turn of the loop
 * says "free" or "head", not "none" (which means being admitted). */
static void
test_waits_known_at_submit(void **state)
{
	struct spec sa = {"a", 1, 11, 0, 50, 0, 0};
	struct spec sb = {"b", 1, 12, 0, 0, 0, 0};
	int64_t a, b;

	(void)state;
	sample(30, 0);
	turn();
	a = submit_ex(&sa, NULL, NULL);
	assert_int_equal(wait_of(a), ADMIT_WAIT_FREE);
	b = submit_ex(&sb, NULL, NULL);
	assert_int_equal(wait_of(b), ADMIT_WAIT_HEAD);
	/* the pass agrees */
	turn();
	assert_int_equal(wait_of(a), ADMIT_WAIT_FREE);
	assert_int_equal(wait_of(b), ADMIT_WAIT_HEAD);
}

static void
test_admission_order(void **state)
{
	struct spec sa = {"a", 1, 11, 0, 50, 0, 0};
	struct spec sb = {"b", 1, 12, 5, 50, 0, 0};
	struct spec sc = {"c", 1, 13, 0, 0, 0, 0}; /* would fit at any free */
	struct spec se = {"e", 1, 14, 5, 50, 0, 0};
	const struct rec_note *n;
	enum admit_wait w;
	int64_t a, b, c, e, order[3];
	long pos;
	size_t q, i, k;
	pid_t kid;
	struct job *j;

	(void)state;
	F->d.cfg.max_running = 2;
	a = submit_ex(&sa, &pos, &q);
	assert_int_equal(pos, 1);
	assert_int_equal(q, 1);
	b = submit_ex(&sb, &pos, &q);
	assert_int_equal(pos, 1); /* priority 5 goes ahead of a */
	assert_int_equal(q, 2);
	c = submit_ex(&sc, &pos, &q);
	assert_int_equal(pos, 3);
	assert_int_equal(q, 3);
	e = submit_ex(&se, &pos, &q);
	assert_int_equal(pos, 2); /* behind b (same priority, later) */
	assert_int_equal(q, 4);

	/* The admit timer runs; no sample yet: nothing admitted, every
	 * client told its place. */
	RUN_UNTIL(count_notes(JOBS_NOTE_QUEUE, 0) >= 4);
	assert_int_equal(count_notes(JOBS_NOTE_ADMITTED, 0), 0);
	{
		const int64_t want[4] = {b, e, a, c};
		const uint64_t client[4] = {12, 14, 11, 13};
		for (i = 0; i < 4; i++) {
			n = last_note(JOBS_NOTE_QUEUE, want[i]);
			assert_non_null(n);
			assert_int_equal(n->client_id, client[i]);
			assert_int_equal(n->position, (long)i + 1);
			assert_int_equal(n->of, 4);
			assert_int_equal(n->wait, i == 0 ? ADMIT_WAIT_FREE
			                                 : ADMIT_WAIT_HEAD);
		}
	}

	/* Free below the head's 50 %: nobody starts, not even c, which
	 * would fit (strict head of line). */
	sample(30, 0);
	turn();
	assert_int_equal(count_notes(JOBS_NOTE_ADMITTED, 0), 0);
	assert_int_equal(position_of(b, &w), 1);
	assert_int_equal(w, ADMIT_WAIT_FREE);
	assert_int_equal(position_of(c, &w), 4);
	assert_int_equal(w, ADMIT_WAIT_HEAD);
	assert_int_equal(state_of(c), JOB_QUEUED);

	/* Free rises: b, then e, then max_running (2) stops a. */
	sample(60, 0);
	turn();
	assert_int_equal(count_notes(JOBS_NOTE_ADMITTED, 0), 2);
	for (i = 0, k = 0; i < F->nnotes; i++)
		if (F->notes[i].kind == JOBS_NOTE_ADMITTED && k < 3)
			order[k++] = F->notes[i].job_id;
	assert_int_equal(order[0], b);
	assert_int_equal(order[1], e);
	assert_int_equal(last_note(JOBS_NOTE_ADMITTED, b)->client_id, 12);
	assert_int_equal(last_note(JOBS_NOTE_ADMITTED, e)->client_id, 14);
	assert_int_equal(state_of(b), JOB_ADMITTED);
	assert_int_equal(state_of(e), JOB_ADMITTED);
	assert_int_equal(count_events("admitted", b), 1);
	j = stored(b); /* the admission is on disk */
	assert_int_equal(j->state, JOB_ADMITTED);
	assert_true(j->admitted_ms > 0);
	job_free(j);
	assert_int_equal(position_of(a, &w), 1);
	assert_int_equal(w, ADMIT_WAIT_MAX_RUNNING);
	assert_int_equal(position_of(c, &w), 2);
	assert_int_equal(w, ADMIT_WAIT_HEAD);
	n = last_note(JOBS_NOTE_QUEUE, a);
	assert_int_equal(n->position, 1);
	assert_int_equal(n->of, 2);
	assert_int_equal(n->wait, ADMIT_WAIT_MAX_RUNNING);
	n = last_note(JOBS_NOTE_QUEUE, c);
	assert_int_equal(n->position, 2);
	assert_int_equal(n->of, 2);

	/* b runs and exits: its slot goes to a, the head, not to c. */
	kid = attach(b, 12);
	kill_kid(kid);
	{
		char cause[256];
		assert_int_equal(jobs_exit(&F->d, b, 3, 0, cause, sizeof cause),
		                 0);
	}
	j = stored(b);
	assert_int_equal(j->state, JOB_EXITED);
	assert_int_equal(j->exit_code, 3);
	job_free(j);
	RUN_UNTIL(count_notes(JOBS_NOTE_ADMITTED, 0) == 3);
	for (i = 0, k = 0; i < F->nnotes; i++)
		if (F->notes[i].kind == JOBS_NOTE_ADMITTED && k < 3)
			order[k++] = F->notes[i].job_id;
	assert_int_equal(order[2], a);
	assert_int_equal(last_note(JOBS_NOTE_ADMITTED, a)->client_id, 11);
	assert_int_equal(state_of(a), JOB_ADMITTED);
	assert_int_equal(position_of(c, &w), 1);
	assert_int_equal(w, ADMIT_WAIT_MAX_RUNNING);
	n = last_note(JOBS_NOTE_QUEUE, c);
	assert_int_equal(n->position, 1);
	assert_int_equal(n->of, 1);
	assert_int_equal(n->wait, ADMIT_WAIT_MAX_RUNNING);
}

/* ---- 2, 3. breaches ---- */

struct two_running {
	int64_t old, young; /* by admission; young has the lower id */
	pid_t old_pid, young_pid;
};

/*
 * Two attached jobs running: old admitted at swap 1024 MiB with a 1024 MiB
 * budget, young admitted later at 1536 MiB with a 400 MiB budget. young
 * is submitted first (lower id) but waits for free % until after old:
 * the victim rule must go by admission, not by id.
 */
static void
start_two(struct two_running *t)
{
	struct job *j;
	int64_t old_admitted;

	t->young = submit("young", 1, 22, 0, 70, 400 * MIB, 0);
	t->old = submit("old", 1, 21, 5, 0, 1024 * MIB, 0);
	assert_true(t->young < t->old);
	sample(50, 1024 * MIB);
	turn();
	assert_int_equal(state_of(t->old), JOB_ADMITTED);
	assert_int_equal(state_of(t->young), JOB_QUEUED);
	t->old_pid = attach(t->old, 21);
	j = stored(t->old);
	old_admitted = j->admitted_ms;
	job_free(j);
	/* Admitted in a later millisecond than old. */
	RUN_UNTIL(clock_wall_ms() > old_admitted);

	sample(80, 1536 * MIB); /* old grew 512 MiB: within its budget */
	turn();
	assert_int_equal(state_of(t->young), JOB_ADMITTED);
	t->young_pid = attach(t->young, 22);
	j = stored(t->young);
	assert_true(j->admitted_ms > old_admitted);
	assert_int_equal(j->swap_base_bytes, 1536 * MIB);
	job_free(j);
	j = stored(t->old);
	assert_int_equal(j->swap_base_bytes, 1024 * MIB);
	job_free(j);
	assert_int_equal(F->nsigs, 0);
	assert_int_equal(count_notes(JOBS_NOTE_BREACH, 0), 0);
}

/* Both breach; the youngest is the one terminated, and only it. */
static void
breach_both(const struct two_running *t, uint64_t swap)
{
	struct jobs_view v;
	const struct rec_note *n;

	sample(80, swap);
	view(t->old, &v);
	assert_int_equal(v.growth_bytes, swap - 1024 * MIB);
	assert_true(v.growth_bytes > v.j->swap_budget_bytes);
	jobs_view_free(&v);
	view(t->young, &v);
	assert_int_equal(v.growth_bytes, swap - 1536 * MIB);
	assert_true(v.growth_bytes > v.j->swap_budget_bytes);
	jobs_view_free(&v);

	assert_int_equal(count_sigs(t->young_pid, SIGTERM), 1);
	assert_int_equal(count_sigs(t->old_pid, SIGTERM), 0);
	assert_int_equal(count_notes(JOBS_NOTE_BREACH, 0), 1);
	n = last_note(JOBS_NOTE_BREACH, t->young);
	assert_non_null(n);
	assert_int_equal(n->client_id, 22);
	assert_int_equal(n->growth_bytes, swap - 1536 * MIB);
	assert_int_equal(n->requeued, 0);
	assert_int_equal(count_events("breach", t->young), 1);
	/* Still running until its process goes; why it will end is on disk
	 * already. */
	assert_int_equal(state_of(t->young), JOB_RUNNING);
	assert_stored_end(t->young, JOB_RUNNING, "swap_budget", NULL);
}

static void
test_breach_youngest_victim(void **state)
{
	struct two_running t;
	const struct rec_note *n;

	(void)state;
	start_two(&t);
	breach_both(&t, 2150 * MIB);

	/* One victim at a time: old still breaches, but nobody else is
	 * chosen while young dies. */
	sample(80, 2200 * MIB);
	assert_int_equal(count_sigs(t.old_pid, SIGTERM), 0);
	assert_int_equal(count_notes(JOBS_NOTE_BREACH, 0), 1);

	/* Its process goes: the daemon ends the job at once, without its
	 * client's report, which comes later and changes nothing. */
	kill_kid(t.young_pid);
	sample(80, 2200 * MIB);
	assert_int_equal(state_of(t.young), JOB_KILLED);
	client_exit_late(t.young);
	assert_stored_end(t.young, JOB_KILLED, "swap_budget",
	                  "since admission");
	assert_stored_end(t.young, JOB_KILLED, "swap_budget", "over its");
	{
		struct job *j = stored(t.young);
		/* how it ended nobody had said yet */
		assert_int_equal(j->term_signal, 0);
		job_free(j);
	}
	n = last_note(JOBS_NOTE_ENDED, t.young);
	assert_non_null(n);
	assert_int_equal(n->state, JOB_KILLED);
	assert_string_equal(n->reason, "swap_budget");
	assert_int_equal(count_events("killed", t.young), 1);
	assert_int_equal(state_of(t.old), JOB_RUNNING);
	assert_int_equal(count_sigs(t.old_pid, SIGTERM), 0);
}

/*
 * A breach that a second reading of swap in the same tick does not show
 * (a torn reading) kills nothing, and leaves no trace but the log; the
 * same growth read twice kills as before.
 */
static void
test_breach_unconfirmed(void **state)
{
	struct two_running t;
	struct job *j;

	(void)state;
	start_two(&t);
	/* Read as 2150 MiB (both over their budgets), then 1536 MiB. */
	sample_seen(clock_wall_ms(), 80, 2150 * MIB, 1536 * MIB);
	assert_int_equal(F->nsigs, 0);
	assert_int_equal(count_notes(JOBS_NOTE_BREACH, 0), 0);
	assert_int_equal(count_events("breach", t.young), 0);
	assert_int_equal(state_of(t.young), JOB_RUNNING);
	assert_int_equal(state_of(t.old), JOB_RUNNING);
	/* Judged on the lower reading: neither growth nor its peak holds
	 * the first one. */
	j = stored(t.young);
	assert_int_equal(j->swap_base_bytes, 1536 * MIB);
	assert_int_equal(j->swap_growth_peak_bytes, 0);
	job_free(j);
	/* The second reading must show the victim's own breach: at 1700 MiB
	 * young (the youngest) has grown 164 MiB of its 400. */
	sample_seen(clock_wall_ms(), 80, 2150 * MIB, 1700 * MIB);
	assert_int_equal(F->nsigs, 0);
	/* Read the same twice: the youngest goes. */
	breach_both(&t, 2150 * MIB);
}

/*
 * Once the victim is gone the survivor's growth counts from the swap used
 * at that moment: what grew before is the victim's.
 */
static void
test_growth_restarts_after_victim(void **state)
{
	struct two_running t;
	struct jobs_view v;
	const struct rec_note *n;
	struct job *j;
	const uint64_t gone = 2300 * MIB;

	(void)state;
	start_two(&t);
	breach_both(&t, 2150 * MIB);
	kill_kid(t.young_pid);
	sample(80, gone); /* sees young's tree gone: it ends */
	assert_int_equal(state_of(t.young), JOB_KILLED);
	client_exit_late(t.young);

	view(t.old, &v);
	assert_int_equal(v.growth_bytes, 0);
	assert_int_equal(v.j->swap_base_bytes, gone);
	jobs_view_free(&v);
	j = stored(t.old); /* the new base survives a restart */
	assert_int_equal(j->swap_base_bytes, gone);
	job_free(j);

	/* Counted from admission this would be 2276 MiB, over the budget;
	 * from the restart it is 1000 MiB. */
	sample(80, gone + 1000 * MIB);
	view(t.old, &v);
	assert_int_equal(v.growth_bytes, 1000 * MIB);
	jobs_view_free(&v);
	assert_int_equal(count_sigs(t.old_pid, SIGTERM), 0);
	assert_int_equal(count_notes(JOBS_NOTE_BREACH, t.old), 0);
	/* Exactly the budget is not a breach. */
	sample(80, gone + 1024 * MIB);
	assert_int_equal(count_sigs(t.old_pid, SIGTERM), 0);
	assert_int_equal(state_of(t.old), JOB_RUNNING);

	/* One byte more is. */
	sample(80, gone + 1024 * MIB + 1);
	assert_int_equal(count_sigs(t.old_pid, SIGTERM), 1);
	n = last_note(JOBS_NOTE_BREACH, t.old);
	assert_non_null(n);
	assert_int_equal(n->client_id, 21);
	assert_int_equal(n->growth_bytes, 1024 * MIB + 1);
	kill_kid(t.old_pid);
	client_exit_signal(t.old, SIGTERM);
	assert_stored_end(t.old, JOB_KILLED, "swap_budget",
	                  "since its growth restarted at");
}

/* ---- 4. retry ---- */

/*
 * retry_on_breach 1: the first breach sends the job back to the queue in
 * its old place (ahead of one submitted after it), the second is final.
 */
/*
 * A victim whose processes are gone but whose client has not sent job_exit
 * yet (slow, stopped) holds no memory: the survivors' growth restarts once,
 * when it goes, and counts from there. It used to be chosen as the victim
 * again on the next sample and, seen gone again, restart the survivors'
 * growth at every sample, so nobody could breach until the client spoke.
 */
static void
test_victim_gone_restarts_once(void **state)
{
	struct two_running t;
	struct jobs_view v;

	(void)state;
	start_two(&t);
	breach_both(&t, 2150 * MIB);
	kill_kid(t.young_pid);
	sample(80, 2200 * MIB); /* young's tree gone: old counts from here */
	sample(80, 2800 * MIB);
	sample(80, 3300 * MIB);
	view(t.old, &v);
	assert_int_equal(v.j->swap_base_bytes, 2200 * MIB);
	assert_int_equal(v.growth_bytes, 1100 * MIB);
	jobs_view_free(&v);
	assert_int_equal(count_sigs(t.old_pid, SIGTERM), 1);
	kill_kid(t.old_pid);
	client_exit_late(t.young);
	client_exit_signal(t.old, SIGTERM);
}

/*
 * A breach with a retry left whose process goes while its client says
 * nothing (stuck, crashed): the daemon requeues it at the next sample; the
 * client's report that comes later leaves it queued, and the next
 * attempt's job_pid is a new start.
 */
static void
test_retry_requeues_without_report(void **state)
{
	const struct rec_note *n;
	int64_t x;
	pid_t kid;

	(void)state;
	F->d.cfg.max_running = 1;
	x = submit("x", 1, 31, 0, 0, 512 * MIB, 1);
	sample(50, 1024 * MIB);
	turn();
	assert_int_equal(state_of(x), JOB_ADMITTED);
	kid = attach(x, 31);
	sample(50, 1600 * MIB);
	n = last_note(JOBS_NOTE_BREACH, x);
	assert_non_null(n);
	assert_int_equal(n->requeued, 1);
	kill_kid(kid);
	assert_int_equal(state_of(x), JOB_RUNNING);
	sample(50, 1600 * MIB);
	assert_int_equal(count_events("requeued", x), 1);
	assert_int_equal(count_notes(JOBS_NOTE_ENDED, x), 0);
	assert_int_not_equal(state_of(x), JOB_RUNNING);
	assert_false(JOB_STATE_ENDED(state_of(x)));
	client_exit_late(x);
	/* Once only: a second report of it is one for this attempt. */
	assert_int_equal(jobs_exit_owed(&F->d, x), 0);
	assert_false(JOB_STATE_ENDED(state_of(x)));
	turn();
	assert_int_equal(state_of(x), JOB_ADMITTED);
	kid = attach(x, 31);
	kill_kid(kid);
	client_exit_signal(x, SIGTERM);
	assert_int_equal(state_of(x), JOB_EXITED);
}

static void
test_retry_requeues(void **state)
{
	const struct rec_note *n;
	enum admit_wait w;
	struct job *j;
	int64_t x, y;
	pid_t kid;

	(void)state;
	F->d.cfg.max_running = 1;
	x = submit("x", 1, 31, 0, 0, 512 * MIB, 1);
	y = submit("y", 1, 32, 0, 0, 0, 0);
	sample(50, 1024 * MIB);
	turn();
	assert_int_equal(state_of(x), JOB_ADMITTED);
	assert_int_equal(position_of(y, &w), 1);
	assert_int_equal(w, ADMIT_WAIT_MAX_RUNNING);
	kid = attach(x, 31);

	sample(50, 1600 * MIB); /* 576 MiB > 512 MiB */
	assert_int_equal(count_sigs(kid, SIGTERM), 1);
	n = last_note(JOBS_NOTE_BREACH, x);
	assert_non_null(n);
	assert_int_equal(n->requeued, 1);
	assert_int_equal(n->growth_bytes, 576 * MIB);
	kill_kid(kid);
	client_exit_signal(x, SIGTERM);

	/* Back in the queue, on disk, announced; not ended. */
	assert_int_equal(count_events("requeued", x), 1);
	assert_int_equal(count_notes(JOBS_NOTE_ENDED, x), 0);
	j = stored(x);
	assert_int_equal(j->state, JOB_QUEUED);
	assert_int_equal(j->attempt, 2);
	assert_null(j->end_reason);
	assert_int_equal(j->pid, 0);
	job_free(j);

	/* Admitted again ahead of y, which came later; growth counts from
	 * the new admission. */
	RUN_UNTIL(count_notes(JOBS_NOTE_ADMITTED, x) == 2);
	n = last_note(JOBS_NOTE_ADMITTED, x);
	assert_int_equal(n->attempt, 2);
	assert_int_equal(n->client_id, 31);
	/* Its client heard its place in the queue again between the breach
	 * and the new admission, though it was admitted at once (that queue
	 * notification used to be skipped). */
	assert_true(last_note_at(JOBS_NOTE_QUEUE, x) >
	            last_note_at(JOBS_NOTE_BREACH, x));
	assert_true(last_note_at(JOBS_NOTE_QUEUE, x) <
	            last_note_at(JOBS_NOTE_ADMITTED, x));
	n = last_note(JOBS_NOTE_QUEUE, x);
	assert_int_equal(n->client_id, 31);
	assert_int_equal(n->position, 1);
	assert_int_equal(n->of, 2);
	assert_int_equal(n->attempt, 2);
	assert_int_equal(n->wait, ADMIT_WAIT_NONE);
	assert_int_equal(state_of(x), JOB_ADMITTED);
	assert_int_equal(state_of(y), JOB_QUEUED);
	assert_int_equal(count_notes(JOBS_NOTE_ADMITTED, y), 0);
	j = stored(x);
	assert_int_equal(j->state, JOB_ADMITTED);
	assert_int_equal(j->swap_base_bytes, 1600 * MIB);
	job_free(j);

	/* The last attempt's breach is final. */
	kid = attach(x, 31);
	sample(50, 1600 * MIB + 600 * MIB);
	assert_int_equal(count_sigs(kid, SIGTERM), 1);
	n = last_note(JOBS_NOTE_BREACH, x);
	assert_int_equal(n->requeued, 0);
	assert_int_equal(n->growth_bytes, 600 * MIB);
	kill_kid(kid);
	client_exit_signal(x, SIGTERM);
	assert_stored_end(x, JOB_KILLED, "swap_budget", "swap grew");
	j = stored(x);
	assert_int_equal(j->attempt, 2);
	job_free(j);
	assert_int_equal(count_events("requeued", x), 1);
	n = last_note(JOBS_NOTE_ENDED, x);
	assert_non_null(n);
	assert_int_equal(n->state, JOB_KILLED);
	RUN_UNTIL(count_notes(JOBS_NOTE_ADMITTED, y) == 1);
}

/* ---- 5. cancel ---- */

/* Not started (queued, or attached and admitted without a pid): it
 * simply ends cancelled, on disk, announced, with nothing signalled. */
static void
test_cancel_not_started(void **state)
{
	char cause[256];
	const struct rec_note *n;
	struct jobs_view v;
	int64_t adm, q;

	(void)state;
	adm = submit("adm", 1, 40, 5, 0, 0, 0);
	q = submit("q", 1, 41, 0, 90, 0, 0);
	sample(50, 0);
	turn();
	assert_int_equal(state_of(adm), JOB_ADMITTED);
	assert_int_equal(state_of(q), JOB_QUEUED);

	assert_int_equal(jobs_cancel(&F->d, q, "alice", cause, sizeof cause),
	                 0);
	assert_int_equal(jobs_is_live(&F->d, q), 0);
	view(q, &v);
	assert_int_equal(v.in_table, 0); /* read back from the store */
	assert_int_equal(v.j->state, JOB_CANCELLED);
	jobs_view_free(&v);
	assert_stored_end(q, JOB_CANCELLED, "cancel", "cancelled by alice");
	assert_stored_end(q, JOB_CANCELLED, "cancel", "before it started");
	n = last_note(JOBS_NOTE_ENDED, q);
	assert_non_null(n);
	assert_int_equal(n->state, JOB_CANCELLED);
	assert_string_equal(n->reason, "cancel");
	assert_int_equal(count_events("cancelled", q), 1);
	/* Once is enough. */
	assert_int_equal(jobs_cancel(&F->d, q, "alice", cause, sizeof cause),
	                 PROTO_E_STATE);

	assert_int_equal(jobs_cancel(&F->d, adm, "alice", cause, sizeof cause),
	                 0);
	assert_stored_end(adm, JOB_CANCELLED, "cancel", "before it started");
	assert_int_equal(last_note(JOBS_NOTE_ENDED, adm)->state, JOB_CANCELLED);
	assert_int_equal(F->nsigs, 0);
}

/* Running: SIGTERM now, SIGKILL after the grace, and the job ends
 * killed(cancel) when its process is seen gone. */
static void
test_cancel_running(void **state)
{
	char cause[256];
	const struct rec_note *n;
	int64_t r;
	pid_t kid;

	(void)state;
	r = submit("r", 1, 42, 0, 0, 0, 0);
	sample(50, 0);
	turn();
	kid = attach(r, 42);

	assert_int_equal(jobs_cancel(&F->d, r, "bob", cause, sizeof cause), 0);
	assert_int_equal(count_sigs(kid, SIGTERM), 1);
	assert_int_equal(count_sigs(kid, SIGKILL), 0);
	assert_int_equal(state_of(r), JOB_RUNNING);
	assert_stored_end(r, JOB_RUNNING, "cancel", NULL);
	/* Cancelling again does not signal again. */
	assert_int_equal(jobs_cancel(&F->d, r, "bob", cause, sizeof cause), 0);
	assert_int_equal(count_sigs(kid, SIGTERM), 1);
	/* The grace (50 ms) passes: SIGKILL. */
	RUN_UNTIL(count_sigs(kid, SIGKILL) == 1);
	assert_int_equal(state_of(r), JOB_RUNNING);

	/* Its client went; the daemon itself sees the process go. */
	jobs_client_gone(&F->d, 42);
	assert_int_equal(state_of(r), JOB_RUNNING);
	kill_kid(kid);
	sample(50, 0);
	assert_int_equal(state_of(r), JOB_KILLED);
	assert_stored_end(r, JOB_KILLED, "cancel", "cancelled by bob");
	assert_stored_end(r, JOB_KILLED, "cancel", "while running");
	n = last_note(JOBS_NOTE_ENDED, r);
	assert_non_null(n);
	assert_int_equal(n->state, JOB_KILLED);
	assert_string_equal(n->reason, "cancel");
	assert_int_equal(count_events("killed", r), 1);
}

/* ---- 6. restart ---- */

/*
 * Attached jobs across a restart: a running one whose process lives is
 * followed again and waits for its client; one whose process went while
 * no daemon ran is lost(client_gone); queued and admitted ones wait for
 * their clients for JOBS_RESUME_GRACE_MS of sample time, then are given
 * up, unless the client resumed.
 */
static void
test_restart_attached(void **state)
{
	struct jobs_view v;
	int64_t run, gone, adm_back, adm_lost, q_lost, t0;
	pid_t run_pid, gone_pid;
	const struct rec_note *n;

	(void)state;
	run = submit("run", 1, 51, 10, 0, 0, 0);
	gone = submit("gone", 1, 52, 10, 0, 0, 0);
	adm_back = submit("adm-back", 1, 53, 10, 0, 0, 0);
	adm_lost = submit("adm-lost", 1, 54, 10, 0, 0, 0);
	q_lost = submit("q-lost", 1, 55, 0, 90, 0, 0);
	sample(50, 1024 * MIB);
	turn();
	assert_int_equal(count_notes(JOBS_NOTE_ADMITTED, 0), 4);
	run_pid = attach(run, 51);
	gone_pid = attach(gone, 52);

	daemon_stop();
	kill_kid(gone_pid); /* while no daemon runs */
	forget_records();
	daemon_start();

	/* Decided at load, before any sample. */
	assert_int_equal(F->nspawns, 0);
	assert_int_equal(F->nsigs, 0);
	view(run, &v);
	assert_int_equal(v.j->state, JOB_RUNNING);
	assert_int_equal(v.live, 1);
	assert_int_equal(v.client_id, 0); /* awaits its client */
	assert_int_equal(v.j->pid, run_pid);
	jobs_view_free(&v);
	assert_stored_end(gone, JOB_LOST, "client_gone",
	                  "gone when the daemon restarted");
	n = last_note(JOBS_NOTE_ENDED, gone);
	assert_non_null(n);
	assert_int_equal(n->state, JOB_LOST);
	assert_int_equal(state_of(adm_back), JOB_ADMITTED);
	assert_int_equal(state_of(adm_lost), JOB_ADMITTED);
	assert_int_equal(state_of(q_lost), JOB_QUEUED);

	jobs_resume(&F->d, run, 61);
	jobs_resume(&F->d, adm_back, 63);
	view(run, &v);
	assert_int_equal(v.client_id, 61);
	jobs_view_free(&v);

	/* Within the grace, by the samples' clock: nothing given up. */
	t0 = clock_wall_ms();
	sample_at(t0 + JOBS_RESUME_GRACE_MS - 2000, 50, 1024 * MIB);
	turn();
	assert_int_equal(state_of(adm_lost), JOB_ADMITTED);
	assert_int_equal(state_of(q_lost), JOB_QUEUED);
	assert_int_equal(state_of(run), JOB_RUNNING);

	/* Past it: those whose client did not come back end. */
	sample_at(t0 + JOBS_RESUME_GRACE_MS + 1000, 50, 1024 * MIB);
	turn();
	assert_stored_end(adm_lost, JOB_LOST, "client_gone",
	                  "did not come back after a daemon restart");
	assert_stored_end(q_lost, JOB_CANCELLED, "client_gone",
	                  "did not come back after a daemon restart");
	assert_int_equal(last_note(JOBS_NOTE_ENDED, adm_lost)->state, JOB_LOST);
	assert_int_equal(last_note(JOBS_NOTE_ENDED, q_lost)->state,
	                 JOB_CANCELLED);
	assert_int_equal(state_of(run), JOB_RUNNING);
	view(adm_back, &v);
	assert_int_equal(v.j->state, JOB_ADMITTED);
	assert_int_equal(v.client_id, 63);
	jobs_view_free(&v);
	/* The resumed client starts its command as usual. */
	(void)attach(adm_back, 63);
}

/*
 * Detached and queued jobs across a restart: the queue keeps its order; a
 * job admitted but never heard of as started is lost, never spawned again;
 * a cancel under way carries on (SIGTERM again) and ends killed(cancel).
 */
static void
test_restart_queued_and_detached(void **state)
{
	char cause[256];
	int64_t det, kil, q1, q2;
	pid_t kid;
	enum admit_wait w;

	(void)state;
	F->d.cfg.grace_ms = 60000; /* the SIGKILL comes from the shutdown */
	det = submit("det", 0, 0, 10, 0, 0, 0);
	kil = submit("kil", 1, 71, 10, 0, 0, 0);
	q1 = submit("q1", 0, 0, 0, 90, 0, 0);
	q2 = submit("q2", 0, 0, 3, 90, 0, 0);
	sample(50, 0);
	turn();
	assert_int_equal(F->nspawns, 1);
	assert_int_equal(F->spawns[0].job_id, det);
	assert_int_equal(state_of(det), JOB_ADMITTED);
	kid = attach(kil, 71);
	assert_int_equal(jobs_cancel(&F->d, kil, "carol", cause, sizeof cause),
	                 0);
	assert_int_equal(count_sigs(kid, SIGTERM), 1);

	/* Shutdown leaves jobs alone, but not one half-killed. */
	daemon_stop();
	assert_int_equal(count_sigs(kid, SIGKILL), 1);
	forget_records();
	daemon_start();

	assert_int_equal(position_of(q2, &w), 1);
	assert_int_equal(position_of(q1, &w), 2);
	assert_stored_end(det, JOB_LOST, "lost",
	                  "restarted and could not find it");
	assert_int_equal(last_note(JOBS_NOTE_ENDED, det)->state, JOB_LOST);
	assert_int_equal(F->nspawns, 1); /* run at most once */
	/* The kid outlived the (recorded) SIGKILL: the cancel goes on. */
	assert_int_equal(state_of(kil), JOB_RUNNING);
	assert_int_equal(count_sigs(kid, SIGTERM), 1);
	assert_stored_end(kil, JOB_RUNNING, "cancel", NULL);

	kill_kid(kid);
	sample(95, 0);
	assert_stored_end(kil, JOB_KILLED, "cancel", "daemon restarted");
	/* The new daemon admits the queue in its order. */
	RUN_UNTIL(F->nspawns == 3);
	assert_int_equal(F->spawns[1].job_id, q2);
	assert_int_equal(F->spawns[2].job_id, q1);
	assert_int_equal(state_of(q2), JOB_ADMITTED);
	assert_int_equal(state_of(q1), JOB_ADMITTED);
}

/* ---- 7. spawning ---- */

/* The spawn hook fails: the job ends failed(spawn) with its cause, its
 * admission recorded before the attempt. */
static void
test_spawn_failure(void **state)
{
	char events[256];
	const struct rec_note *n;
	struct job *j;
	int64_t id;

	(void)state;
	F->spawn_fail = -ENOENT;
	id = submit("det", 0, 0, 0, 0, 0, 0);
	/* The admit timer's pass: even at wait_free 0 nothing starts
	 * before the first sample. */
	RUN_UNTIL(wait_of(id) != ADMIT_WAIT_NONE || F->nspawns > 0);
	assert_int_equal(F->nspawns, 0);
	assert_int_equal(state_of(id), JOB_QUEUED);
	assert_int_equal(wait_of(id), ADMIT_WAIT_FREE);
	sample(50, 0);
	turn();
	assert_int_equal(F->nspawns, 1);
	assert_int_equal(F->spawns[0].job_id, id);
	assert_int_equal(F->spawns[0].attempt, 1);
	assert_int_equal(state_of(id), JOB_FAILED);
	assert_int_equal(jobs_is_live(&F->d, id), 0);
	assert_stored_end(id, JOB_FAILED, "spawn", NULL);
	j = stored(id);
	assert_string_equal(j->end_detail, "fake spawn: No such file or "
	                                   "directory");
	assert_true(j->admitted_ms > 0);
	assert_int_equal(j->started_ms, 0);
	assert_int_equal(j->pid, 0);
	job_free(j);
	n = last_note(JOBS_NOTE_ENDED, id);
	assert_non_null(n);
	assert_int_equal(n->state, JOB_FAILED);
	assert_string_equal(n->reason, "spawn");
	events_of(id, events, sizeof events);
	assert_string_equal(events, "submitted,admitted,failed");
	/* Not tried again. */
	sample(50, 0);
	turn();
	assert_int_equal(F->nspawns, 1);
}

/* The monitor's pipe closes before it reported a start: nothing can say
 * the job runs, so it is lost, and not started again. */
static void
test_monitor_gone_before_start(void **state)
{
	int64_t id;

	(void)state;
	id = submit("det", 0, 0, 0, 0, 0, 0);
	sample(50, 0);
	turn();
	assert_int_equal(F->nspawns, 1);
	assert_int_equal(state_of(id), JOB_ADMITTED);
	close(F->spawn_fds[0]);
	F->spawn_fds[0] = -1;
	POLL_UNTIL(state_of(id) != JOB_ADMITTED, sample(50, 0));
	assert_stored_end(id, JOB_LOST, "lost", "its monitor left no status");
	assert_int_equal(F->nspawns, 1);
}

/* ---- 8. what the table keeps ---- */

/* argv and env stay in the store (they can be a megabyte each): the
 * table's record has the command line only; an answer that shows them
 * reads them back, and so does the start, also for a retry. */
static void
test_args_in_store_only(void **state)
{
	struct jobs_view v;
	char cause[256], got[64];
	int64_t id;

	(void)state;
	id = submit("det", 0, 0, 0, 0, 1 << 20, 1);
	view(id, &v);
	assert_null(v.j->argv);
	assert_null(v.j->env);
	assert_string_equal(v.j->command, "sleep 1000");
	assert_int_equal(jobs_view_args(&F->d, &v, cause, sizeof cause), 0);
	assert_non_null(v.args);
	join_strv(v.args->argv, got, sizeof got);
	assert_string_equal(got, "sleep 1000");
	join_strv(v.args->env, got, sizeof got);
	assert_string_equal(got, "PATH=/bin:/usr/bin");
	jobs_view_free(&v);

	sample(50, 0);
	turn();
	assert_int_equal(F->nspawns, 1);
	assert_string_equal(F->spawns[0].argv, "sleep 1000");
	assert_string_equal(F->spawns[0].env, "PATH=/bin:/usr/bin");
	view(id, &v);
	assert_null(v.j->argv);
	assert_null(v.j->env);
	jobs_view_free(&v);
}

int
main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
	    T(test_admission_order),
	    T(test_waits_known_at_submit),
	    T(test_breach_youngest_victim),
	    T(test_breach_unconfirmed),
	    T(test_growth_restarts_after_victim),
	    T(test_victim_gone_restarts_once),
	    T(test_retry_requeues),
	    T(test_retry_requeues_without_report),
	    T(test_cancel_not_started),
	    T(test_cancel_running),
	    T(test_restart_attached),
	    T(test_restart_queued_and_detached),
	    T(test_spawn_failure),
	    T(test_monitor_gone_before_start),
	    T(test_args_in_store_only),
	};
#undef T

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
