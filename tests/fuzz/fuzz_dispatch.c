/*
 * libFuzzer target for request validation and dispatch: every line of the
 * input is parsed as the server parses it and handed to control_dispatch()
 * against a real daemon state (a store on a fresh database, the job table,
 * the notify module's lists, the platform on a fixture proc root), with
 * no socket in between. Every answer must encode to a valid reply line; an
 * error must carry a PROTO_E_* code and a readable cause.
 *
 * Input layout: byte 0 holds flags, the rest is the stream of lines.
 *   bit 0  the first peer is uid 1000 (else root)
 *   bit 1  the daemon has a sample (else info says null, nothing admits)
 *   bit 2  lines alternate between the first peer and a second one with
 *          the other uid, so one user can act on the other's jobs
 * Seeds start with an ASCII digit '0'..'7' and a newline, which is why
 * only the low three bits count.
 *
 * Side effects: none outside a private temp dir. No job is ever admitted,
 * so nothing is spawned or signalled: admission runs only from the admit
 * timer and the tick, and neither runs here (the event loop never runs
 * while the admit timer is armed; the teardown stops it before the loop
 * runs once to finish closing handles). As further guards the fixture says
 * memory is 1% free and the default wait_free is 50%, after every input the
 * target checks that no job is admitted or running, and the job table's
 * spawn and signal hooks (struct jobs_ops) abort.
 *
 * Each input gets a fresh database and job table, so a crash reproduces
 * from its input alone. FUZZ_DISPATCH_TRACE=1 prints every request and
 * answer (to see what a seed reaches).
 */
/* nftw() is X/Open; the rest of the defaults stay. */
#define _XOPEN_SOURCE 700
#define _DEFAULT_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <uv.h>

#include "answers.h"
#include "control.h"
#include "daemon.h"
#include "jobs.h"
#include "log.h"
#include "platform.h"
#include "notify.h"
#include "proto.h"
#include "server.h"
#include "store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, \
			        __LINE__, #cond);                              \
			abort();                                               \
		}                                                              \
	} while (0)

#define FLAG_UID 0x1
#define FLAG_SAMPLE 0x2
#define FLAG_TWO_PEERS 0x4

/* Fixture memory: 16 GiB, 1% available, 4 GiB swap of which 1 GiB used. */
static const char fixture_meminfo[] = "MemTotal:       16777216 kB\n"
                                      "MemFree:          167772 kB\n"
                                      "MemAvailable:     167772 kB\n"
                                      "Buffers:               0 kB\n"
                                      "Cached:                0 kB\n"
                                      "SwapTotal:       4194304 kB\n"
                                      "SwapFree:        3145728 kB\n";
static const char fixture_psi[] =
    "some avg10=12.50 avg60=3.00 avg300=1.00 total=1000\n"
    "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";

static struct {
	int ready;
	char dir[256];
	char db[300];
	uv_loop_t loop;
	struct sys_sample sample;
	unsigned char *tmpl; /* the template database */
	size_t tmpl_len;
	int trace; /* FUZZ_DISPATCH_TRACE=1: print requests and answers */
} g;

struct run {
	struct daemon *d;
	struct peer peers[2];
	int two_peers;
	size_t lines;
};

static void
write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	CHECK(f != NULL);
	fputs(text, f);
	CHECK(fclose(f) == 0);
}

static void
remove_db(void)
{
	static const char *const suffix[] = {"", "-wal", "-shm", "-journal"};
	char p[400];
	size_t i;

	for (i = 0; i < sizeof suffix / sizeof suffix[0]; i++) {
		snprintf(p, sizeof p, "%s%s", g.db, suffix[i]);
		unlink(p);
	}
}

/* The guard of last resort: a spawn or a signal from dispatch means a job
 * was started or signalled, which must never happen here. */
static int
no_spawn(const char *state_dir, const struct job *j, struct spawn_child *c,
         char *cause, size_t causelen)
{
	fprintf(stderr, "fuzz_dispatch: spawn of job %lld from dispatch\n",
	        (long long)j->id);
	abort();
}

static int
no_signal(pid_t pgid, const pid_t *pids, size_t n, int sig)
{
	fprintf(stderr, "fuzz_dispatch: signal %d to group %d from dispatch\n",
	        sig, (int)pgid);
	abort();
}

static const struct jobs_ops no_ops = {no_spawn, no_signal};

static int
remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	remove(path);
	return 0;
}

static void
cleanup(void)
{
	remove_db();
	/* Only our own directory, named by mkdtemp. */
	if (strstr(g.dir, "/sl-fuzz-dispatch.") != NULL)
		nftw(g.dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* A database with the schema in place, copied for every input: creating
 * the schema each time would take most of an input's time. */
static void
make_template(void)
{
	struct store *st;
	char cause[256];
	FILE *f;
	long n;

	remove_db();
	if (store_open(&st, g.db, cause, sizeof cause) != 0) {
		fprintf(stderr, "fuzz_dispatch: store: %s\n", cause);
		abort();
	}
	store_close(st); /* the last connection folds the WAL in */
	CHECK((f = fopen(g.db, "rb")) != NULL);
	CHECK(fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0);
	rewind(f);
	CHECK((g.tmpl = malloc((size_t)n)) != NULL);
	CHECK(fread(g.tmpl, 1, (size_t)n, f) == (size_t)n);
	g.tmpl_len = (size_t)n;
	fclose(f);
}

static void
fresh_db(void)
{
	FILE *f;

	remove_db();
	CHECK((f = fopen(g.db, "wb")) != NULL);
	CHECK(fwrite(g.tmpl, 1, g.tmpl_len, f) == g.tmpl_len);
	CHECK(fclose(f) == 0);
	CHECK(chmod(g.db, 0600) == 0);
}

static void
setup(void)
{
	struct platform_config pc;
	char p[400], cause[256];
	const char *tmp = getenv("TMPDIR");
	struct stat st;

	if (tmp == NULL || tmp[0] == '\0')
		tmp = stat("/dev/shm", &st) == 0 ? "/dev/shm" : "/tmp";
	snprintf(g.dir, sizeof g.dir, "%s/sl-fuzz-dispatch.XXXXXX", tmp);
	CHECK(mkdtemp(g.dir) != NULL);
	atexit(cleanup);
	snprintf(p, sizeof p, "%s/proc", g.dir);
	CHECK(mkdir(p, 0700) == 0);
	snprintf(p, sizeof p, "%s/proc/pressure", g.dir);
	CHECK(mkdir(p, 0700) == 0);
	snprintf(p, sizeof p, "%s/proc/meminfo", g.dir);
	write_file(p, fixture_meminfo);
	snprintf(p, sizeof p, "%s/proc/pressure/memory", g.dir);
	write_file(p, fixture_psi);
	snprintf(p, sizeof p, "%s/state", g.dir);
	CHECK(mkdir(p, 0700) == 0);
	snprintf(g.db, sizeof g.db, "%s/sl.db", g.dir);

	/* Handlers log what they do; the fuzzer's output is the report. */
	log_init(0, 0);
	signal(SIGPIPE, SIG_IGN);
	snprintf(p, sizeof p, "%s/proc", g.dir);
	memset(&pc, 0, sizeof pc);
	pc.proc_root = p;
	pc.psi_warn = 10;
	pc.psi_critical = 40;
	if (platform_init(&pc, cause, sizeof cause) != 0) {
		fprintf(stderr, "fuzz_dispatch: platform: %s\n", cause);
		abort();
	}
	if (platform_sys_sample(&g.sample, cause, sizeof cause) != 0) {
		fprintf(stderr, "fuzz_dispatch: sample: %s\n", cause);
		abort();
	}
	CHECK(g.sample.free_pct < 2);
	CHECK(uv_loop_init(&g.loop) == 0);
	make_template();
	g.trace = getenv("FUZZ_DISPATCH_TRACE") != NULL;
	g.ready = 1;
}

/* Every answer we would send must be one line that parses back as a
 * response. Takes result. */
static void
check_reply(const cJSON *id, cJSON *result, int rc, const char *cause)
{
	struct proto_msg m;
	const char *why;
	char *line;
	size_t len = 0;

	if (rc == 0)
		line = proto_encode_result(id, result, &len);
	else
		line = proto_encode_error(id, rc, cause, &len);
	if (line == NULL)
		return; /* out of memory only */
	if (g.trace)
		fprintf(stderr, "<- %.*s", (int)len, line);
	CHECK(len > 0 && line[len - 1] == '\n');
	CHECK(memchr(line, '\n', len - 1) == NULL);
	CHECK(proto_utf8_valid(line, len));
	CHECK(proto_parse(line, len - 1, &m, &why) == 0);
	CHECK(m.kind == PROTO_RESPONSE);
	CHECK((rc == 0) == (m.result != NULL));
	proto_msg_free(&m);
	free(line);
}

static int
on_line(void *arg, char *line, size_t len)
{
	struct run *r = arg;
	const struct peer *p = &r->peers[r->two_peers ? r->lines % 2 : 0];
	struct proto_msg m;
	const char *why = NULL;
	char cause[512];
	cJSON *result = NULL;
	int rc;

	r->lines++;
	if (g.trace)
		fprintf(stderr, "-> uid %u: %.*s\n", (unsigned)p->uid, (int)len,
		        line);
	memset(&m, 0, sizeof m);
	if (proto_parse(line, len, &m, &why) != 0 || m.kind != PROTO_REQUEST) {
		proto_msg_free(&m);
		return 0;
	}
	cause[0] = '\0';
	rc = control_dispatch(r->d, p, m.method, m.id, m.params, &result, cause,
	                      sizeof cause);
	if (rc == CONTROL_DEFERRED) {
		/* The handler answers later (or has answered through the
		 * server, which drops it: no such client). */
		cJSON_Delete(result);
	} else if (rc == 0) {
		CHECK(result != NULL);
		check_reply(m.id, result, 0, NULL);
	} else {
		/* A stable error code with a readable cause, as the server
		 * sends it. */
		CHECK(rc >= -32768 && rc <= -32000);
		CHECK(cause[0] != '\0');
		CHECK(proto_utf8_valid(cause, strlen(cause)));
		cJSON_Delete(result);
		check_reply(m.id, NULL, rc, cause);
	}
	proto_msg_free(&m);
	return 0;
}

/* Nothing may have been admitted: the loop never ran. */
static void
check_nothing_started(struct daemon *d)
{
	int counts[JOB_LOST + 1];

	jobs_count(d, (uid_t)-1, counts);
	CHECK(counts[JOB_ADMITTED] == 0);
	CHECK(counts[JOB_RUNNING] == 0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct daemon d;
	struct proto_reader rd;
	struct run r;
	char cause[256];
	int flags, i;

	if (size < 1)
		return 0;
	if (!g.ready)
		setup();
	flags = data[0];
	data++;
	size--;

	memset(&d, 0, sizeof d);
	d.loop = &g.loop;
	config_defaults(&d.cfg, 0);
	snprintf(d.cfg.socket_path, sizeof d.cfg.socket_path, "%s/sl.sock",
	         g.dir);
	snprintf(d.cfg.db_path, sizeof d.cfg.db_path, "%s", g.db);
	snprintf(d.cfg.state_dir, sizeof d.cfg.state_dir, "%s/state", g.dir);
	snprintf(d.cfg.proc_root, sizeof d.cfg.proc_root, "%s/proc", g.dir);
	d.cfg.default_wait_free_pct = 50;
	d.cfg.grace_ms = 1000;
	d.started_ms = clock_wall_ms();
	fresh_db();
	if (store_open(&d.store, g.db, cause, sizeof cause) != 0) {
		fprintf(stderr, "fuzz_dispatch: store: %s\n", cause);
		abort();
	}
	CHECK(notify_start(&d, cause, sizeof cause) == 0);
	CHECK(jobs_init(&d, notify_job, &no_ops, cause, sizeof cause) == 0);
	if (flags & FLAG_SAMPLE) {
		d.last = g.sample;
		d.last.ts_ms = clock_wall_ms();
		d.have_last = 1;
	}

	memset(&r, 0, sizeof r);
	r.d = &d;
	r.two_peers = (flags & FLAG_TWO_PEERS) != 0;
	r.peers[0].client_id = 1;
	r.peers[0].uid = (flags & FLAG_UID) ? 1000 : 0;
	r.peers[0].gid = r.peers[0].uid;
	r.peers[0].pid = getpid();
	r.peers[1].client_id = 2;
	r.peers[1].uid = (flags & FLAG_UID) ? 0 : 1000;
	r.peers[1].gid = r.peers[1].uid;
	r.peers[1].pid = getpid();

	proto_reader_init(&rd, d.cfg.max_line_bytes);
	proto_reader_feed(&rd, (const char *)data, size, on_line, &r);
	proto_reader_free(&rd);
	/* Large answers are written a slice at a time by the loop: their
	 * fills run here instead (the clients do not exist, so each ends
	 * when it first writes). */
	for (i = 0; i < 1000 && (answers_owed(&d, r.peers[0].client_id) > 0 ||
	                         answers_owed(&d, r.peers[1].client_id) > 0);
	     i++)
		answers_run(&d);
	check_nothing_started(&d);

	/* The clients go, then the daemon stops, as at the end of a real
	 * session; both timers are stopped before the loop runs. */
	for (i = 0; i < 2; i++) {
		answers_client_gone(&d, r.peers[i].client_id);
		notify_client_gone(&d, r.peers[i].client_id);
		jobs_client_gone(&d, r.peers[i].client_id);
	}
	check_nothing_started(&d);
	notify_stop(&d);
	answers_stop(&d);
	jobs_shutdown(&d);
	for (i = 0; i < 4; i++)
		uv_run(&g.loop, UV_RUN_NOWAIT);
	CHECK(!uv_loop_alive(&g.loop));
	store_close(d.store);
	return 0;
}
