/*
 * spank_stageload.so: each srun task becomes a stageload job on its node
 * (docs/slurm.md). It adds --stageload-wait-free, --stageload-swap-budget,
 * --stageload-name and --stageload-expect to srun, sbatch and salloc.
 *
 * On the node, task_init runs in the task's own process, as the user, just
 * before exec: it submits an attached job for its own pid with the task's
 * Slurm ids and exit_reporter "root", blocks until the daemon admits it
 * (at most max_wait), names its pid with tree (the step's tasks share one
 * process group: one task's breach must not signal its siblings) and
 * closes the connection. task_exit runs in slurmstepd as root and reports
 * the task's status with job_exit (proto/PROTOCOL.md, "Slurm tasks"). In
 * srun, slurm_spank_exit prints the tasks the daemon on srun's host killed.
 *
 * Plugin arguments (plugstack.conf): socket=PATH (%n: the node's name),
 * max_wait=DURATION, default_wait_free=PCT|SIZE, default_swap_budget=SIZE.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <slurm/spank.h>

#include "clock.h"
#include "health.h"
#include "stageload.h"
#include "units.h"

SPANK_PLUGIN(stageload, 1);

/* Steps that are not a user's tasks: the batch script's own (its
 * reservation would block its own sruns), the extern and interactive
 * steps. slurm/slurm.h's values, kept here to need spank.h alone. */
#define SL_BATCH_STEP 0xfffffffbu
#define SL_EXTERN_STEP 0xfffffffcu
#define SL_INTERACTIVE_STEP 0xfffffffau

#define SL_SYSTEM_SOCKET "/var/run/stageload.sock"

/* What a task asks for; pct < 0 and 0 bytes: not given. */
struct ask {
	double wait_free_pct;
	uint64_t wait_free_bytes;
	int have_budget;
	uint64_t swap_budget;
	int have_expect;
	uint64_t expect;
	char name[257];
	int any; /* an option or a default applies: the task is a job */
};

static struct {
	char socket[1024];
	int64_t max_wait_ms;
	struct ask defaults;
} conf;

static int opt_cb(int val, const char *optarg, int remote);

/* What the options given here said, as their callbacks saw them: srun's
 * slurm_spank_exit cannot ask spank_option_getopt. */
static struct ask given = {.wait_free_pct = -1};
/* srun's step, from slurm_spank_local_user_init, for slurm_spank_exit. */
static uint32_t local_job, local_step;
static int have_local_step;

enum { OPT_WAIT_FREE = 1, OPT_SWAP_BUDGET, OPT_NAME, OPT_EXPECT };

static struct spank_option options[] = {
    {"stageload-wait-free", "PCT|SIZE",
     "stageload: start the task once free memory is PCT % (50, 50%) or "
     "SIZE (8G) on its node",
     1, OPT_WAIT_FREE, opt_cb},
    {"stageload-swap-budget", "SIZE",
     "stageload: kill the task when swap grows past SIZE while it runs", 1,
     OPT_SWAP_BUDGET, opt_cb},
    {"stageload-name", "NAME",
     "stageload: the job's name (it learns its peaks by it)", 1, OPT_NAME,
     opt_cb},
    {"stageload-expect", "SIZE",
     "stageload: the memory the task is expected to reach", 1, OPT_EXPECT,
     opt_cb},
    SPANK_OPTIONS_TABLE_END};

/* "50", "50%" (percent, 0-100) or a size ("8G"). */
static int
parse_wait_free(const char *v, struct ask *a)
{
	char *end;
	double d;
	uint64_t b;

	errno = 0;
	d = strtod(v, &end);
	if (end != v && !errno && (*end == '\0' || !strcmp(end, "%"))) {
		if (!(d >= 0 && d <= 100))
			return -EINVAL;
		a->wait_free_pct = d;
		return 0;
	}
	if (units_parse_size(v, &b) < 0)
		return -EINVAL;
	a->wait_free_bytes = b;
	return 0;
}

static int
apply(struct ask *a, int val, const char *v)
{
	uint64_t b;

	switch (val) {
	case OPT_WAIT_FREE:
		if (parse_wait_free(v, a) < 0)
			return -EINVAL;
		break;
	case OPT_SWAP_BUDGET:
		if (units_parse_size(v, &b) < 0)
			return -EINVAL;
		a->have_budget = 1;
		a->swap_budget = b;
		break;
	case OPT_EXPECT:
		if (units_parse_size(v, &b) < 0)
			return -EINVAL;
		a->have_expect = 1;
		a->expect = b;
		break;
	case OPT_NAME:
		if (!*v || strlen(v) >= sizeof a->name)
			return -EINVAL;
		snprintf(a->name, sizeof a->name, "%s", v);
		break;
	default:
		return -EINVAL;
	}
	a->any = 1;
	return 0;
}

/* Checks the value where it is typed (srun, sbatch), so a bad one stops
 * the command there rather than failing every task. */
static int
opt_cb(int val, const char *optarg, int remote)
{
	struct ask scratch = {.wait_free_pct = -1};

	(void)remote;
	if (!optarg || apply(&scratch, val, optarg) < 0) {
		slurm_error("stageload: bad value '%s' for --%s",
		            optarg ? optarg : "", options[val - 1].name);
		return -1;
	}
	(void)apply(&given, val, optarg);
	return 0;
}

static int
parse_args(int ac, char **av)
{
	snprintf(conf.socket, sizeof conf.socket, "%s", SL_SYSTEM_SOCKET);
	conf.max_wait_ms = 10 * 60 * 1000;
	memset(&conf.defaults, 0, sizeof conf.defaults);
	conf.defaults.wait_free_pct = -1;
	for (int i = 0; i < ac; i++) {
		const char *a = av[i];
		int64_t ms;

		if (!strncmp(a, "socket=", 7) &&
		    strlen(a + 7) < sizeof conf.socket) {
			snprintf(conf.socket, sizeof conf.socket, "%s", a + 7);
		} else if (!strncmp(a, "max_wait=", 9) &&
		           units_parse_duration_ms(a + 9, &ms) == 0 && ms > 0) {
			conf.max_wait_ms = ms;
		} else if (!strncmp(a, "default_wait_free=", 18) &&
		           apply(&conf.defaults, OPT_WAIT_FREE, a + 18) == 0) {
		} else if (!strncmp(a, "default_swap_budget=", 20) &&
		           apply(&conf.defaults, OPT_SWAP_BUDGET, a + 20) ==
		               0) {
		} else {
			slurm_error(
			    "stageload: bad plugin argument '%s' in "
			    "plugstack.conf (socket=PATH, max_wait=DURATION, "
			    "default_wait_free=PCT|SIZE, "
			    "default_swap_budget=SIZE)",
			    a);
			return -1;
		}
	}
	return 0;
}

int
slurm_spank_init(spank_t sp, int ac, char **av)
{
	if (parse_args(ac, av) < 0)
		return -1;
	for (struct spank_option *o = options; o->name; o++) {
		if (spank_option_register(sp, o) != ESPANK_SUCCESS) {
			slurm_error("stageload: cannot register --%s", o->name);
			return -1;
		}
	}
	return 0;
}

/* The defaults, then what the user gave for this step. */
static void
task_ask(spank_t sp, struct ask *a)
{
	*a = conf.defaults;
	for (struct spank_option *o = options; o->name; o++) {
		char *v = NULL;

		if (spank_option_getopt(sp, o, &v) == ESPANK_SUCCESS && v)
			(void)apply(a, o->val, v);
	}
}

/* The socket of this node's daemon: %n is its name. */
static int
node_socket(spank_t sp, char *path, size_t len)
{
	char node[256] = "";

	if (spank_getenv(sp, "SLURMD_NODENAME", node, sizeof node) !=
	    ESPANK_SUCCESS) {
		const char *e = getenv("SLURMD_NODENAME");

		if (e && strlen(e) < sizeof node)
			snprintf(node, sizeof node, "%s", e);
		else if (gethostname(node, sizeof node) == 0)
			node[strcspn(node, ".")] = '\0';
	}
	return health_expand(conf.socket, node, path, len);
}

struct ids {
	uint32_t job, step, task;
};

static int
task_ids(spank_t sp, struct ids *id)
{
	if (spank_get_item(sp, S_JOB_ID, &id->job) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_STEPID, &id->step) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_TASK_GLOBAL_ID, &id->task) != ESPANK_SUCCESS)
		return -1;
	return 0;
}

static int
step_is_tasks(uint32_t step)
{
	return step != SL_BATCH_STEP && step != SL_EXTERN_STEP &&
	       step != SL_INTERACTIVE_STEP;
}

/* Waits for the job's admission, at most max_wait. 1: admitted, 0: it
 * waited too long, -1: the daemon went away or ended the job. */
static int
await_admission(sl_client *c, int64_t id, char *why, size_t len)
{
	int64_t deadline = clock_mono_ms() + conf.max_wait_ms;

	for (;;) {
		struct sl_notification n;
		int64_t left = deadline - clock_mono_ms();
		int rc;

		if (left <= 0)
			return 0;
		rc =
		    sl_next_notification(c, left > 1000 ? 1000 : (int)left, &n);
		if (rc == -EINTR || rc == 0)
			continue;
		if (rc < 0) {
			snprintf(why, len, "the daemon went away: %s",
			         sl_errmsg(c));
			return -1;
		}
		if (n.kind == SL_N_ADMITTED && n.admitted.id == id) {
			sl_notification_clear(&n);
			return 1;
		}
		if (n.kind == SL_N_ENDED && n.ended.id == id) {
			snprintf(why, len,
			         "the job ended %s before it was admitted",
			         n.ended.state);
			sl_notification_clear(&n);
			return -1;
		}
		sl_notification_clear(&n);
	}
}

/* STAGELOAD_JOB_ID, STAGELOAD_SOCKET and (when the daemon gave one)
 * STAGELOAD_JOB_TOKEN in the task's environment, over any the user's
 * own environment brought. */
static int
task_env(spank_t sp, const char *path, int64_t jid, const char *token)
{
	char idbuf[32];

	snprintf(idbuf, sizeof idbuf, "%" PRId64, jid);
	if (spank_setenv(sp, "STAGELOAD_JOB_ID", idbuf, 1) != ESPANK_SUCCESS ||
	    spank_setenv(sp, "STAGELOAD_SOCKET", path, 1) != ESPANK_SUCCESS)
		return -1;
	if (token != NULL)
		return spank_setenv(sp, "STAGELOAD_JOB_TOKEN", token, 1) ==
		               ESPANK_SUCCESS
		           ? 0
		           : -1;
	(void)spank_unsetenv(sp, "STAGELOAD_JOB_TOKEN");
	return 0;
}

int
slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	struct ask a;
	struct ids id;
	char path[1024], why[512] = "", params[128], dur[32];
	sl_client *c = NULL;
	sl_job_spec *spec = NULL;
	struct sl_submitted sub = {0};
	int argc = 0, rc = -1, got;
	char **argv = NULL, **args = NULL;

	(void)ac;
	(void)av;
	if (task_ids(sp, &id) < 0 || !step_is_tasks(id.step))
		return 0;
	task_ask(sp, &a);
	if (!a.any)
		return 0;
	if (node_socket(sp, path, sizeof path) < 0) {
		slurm_error("stageload: socket=%s: bad %% sequence or too long",
		            conf.socket);
		return -1;
	}
	if (spank_get_item(sp, S_JOB_ARGV, &argc, &argv) != ESPANK_SUCCESS ||
	    argc < 1) {
		slurm_error("stageload: task %u: no command line", id.task);
		return -1;
	}
	if (!(c = sl_client_new()) || !(spec = sl_job_spec_new()))
		goto nomem;
	/* Calls answer quickly; the admission is waited for separately. */
	sl_set_timeout(c, 10000);
	if (sl_connect(c, path) < 0) {
		slurm_error(
		    "stageload: task %u: the daemon at %s does not answer: "
		    "%s",
		    id.task, path, sl_errmsg(c));
		goto out;
	}
	/* Slurm's vector with its count, as the NULL-terminated one the
	 * library takes. */
	if (!(args = calloc((size_t)argc + 1, sizeof *args)))
		goto nomem;
	memcpy(args, argv, (size_t)argc * sizeof *args);
	if (sl_job_spec_set_bool(spec, "attached", 1) < 0 ||
	    sl_job_spec_set_strv(spec, "argv", (const char *const *)args) < 0 ||
	    sl_job_spec_set_int(spec, "slurm_job_id", id.job) < 0 ||
	    sl_job_spec_set_int(spec, "slurm_step_id", id.step) < 0 ||
	    sl_job_spec_set_int(spec, "slurm_task_id", id.task) < 0 ||
	    sl_job_spec_set_str(spec, "exit_reporter", "root") < 0 ||
	    (a.wait_free_pct >= 0 &&
	     sl_job_spec_set_num(spec, "wait_free_pct", a.wait_free_pct) < 0) ||
	    (a.wait_free_bytes &&
	     sl_job_spec_set_int(spec, "wait_free_bytes",
	                         (int64_t)a.wait_free_bytes) < 0) ||
	    (a.have_budget &&
	     sl_job_spec_set_int(spec, "swap_budget_bytes",
	                         (int64_t)a.swap_budget) < 0) ||
	    (a.have_expect && sl_job_spec_set_int(spec, "expect_bytes",
	                                          (int64_t)a.expect) < 0) ||
	    (a.name[0] && sl_job_spec_set_str(spec, "name", a.name) < 0))
		goto nomem;
	if (sl_submit(c, spec, &sub) < 0) {
		slurm_error("stageload: task %u: submit: %s", id.task,
		            sl_errmsg(c));
		goto out;
	}
	got = await_admission(c, sub.id, why, sizeof why);
	if (got == 0) {
		/* Nobody will start it: out of the queue, and the task fails
		 * with a line saying why. */
		(void)sl_cancel(c, sub.id, NULL);
		slurm_error(
		    "stageload: task %u: job %" PRId64
		    " waited %s for memory, past max_wait: not started",
		    id.task, sub.id,
		    units_format_duration(conf.max_wait_ms, dur, sizeof dur));
		goto out;
	}
	if (got < 0) {
		slurm_error("stageload: task %u: job %" PRId64 ": %s", id.task,
		            sub.id, why);
		goto out;
	}
	snprintf(params, sizeof params,
	         "{\"id\": %" PRId64 ", \"pid\": %ld, \"tree\": true}", sub.id,
	         (long)getpid());
	if (sl_call(c, "job_pid", params, NULL) < 0) {
		slurm_error("stageload: task %u: job %" PRId64 ": job_pid: %s",
		            id.task, sub.id, sl_errmsg(c));
		goto out;
	}
	/* The task's environment names its job and daemon, as a detached
	 * job's does, so stage reports from inside it reach this node's
	 * daemon and carry the job's token (PROTOCOL.md, submit). */
	if (task_env(sp, path, sub.id, sl_job_token(c, sub.id)) < 0) {
		slurm_error("stageload: task %u: job %" PRId64
		            ": cannot set its environment",
		            id.task, sub.id);
		goto out;
	}
	rc = 0;
	goto out;
nomem:
	slurm_error("stageload: task %u: out of memory", id.task);
out:
	free(args);
	sl_job_spec_free(spec);
	/* Closed before exec: the job runs on, its end reported by root. */
	sl_client_free(c);
	return rc;
}

/* The live job of this task, or 0: its Slurm ids, and its owner and pid
 * the task's, since the ids are only what a submitter said (a job of
 * another user's naming this task's ids is not this task's). */
static int64_t
find_job(sl_client *c, const struct ids *id, uid_t uid, pid_t pid)
{
	struct sl_job *jobs = NULL;
	size_t n = 0;
	int64_t found = 0;

	if (sl_status(c, 0, 0, &jobs, &n) < 0)
		return 0;
	for (size_t i = 0; i < n && !found; i++) {
		const sl_job *j = sl_job_at(jobs, i);
		int64_t jid, sid, tid, juid, jpid, jobid;

		if (sl_job_get_int(j, "slurm_job_id", &jid) == 0 &&
		    sl_job_get_int(j, "slurm_step_id", &sid) == 0 &&
		    sl_job_get_int(j, "slurm_task_id", &tid) == 0 &&
		    sl_job_get_int(j, "uid", &juid) == 0 &&
		    sl_job_get_int(j, "pid", &jpid) == 0 && jid == id->job &&
		    sid == id->step && tid == id->task &&
		    juid == (int64_t)uid && jpid == (int64_t)pid &&
		    sl_job_get_int(j, "id", &jobid) == 0)
			found = jobid;
	}
	sl_jobs_free(jobs, n);
	return found;
}

int
slurm_spank_task_exit(spank_t sp, int ac, char **av)
{
	struct ask a;
	struct ids id;
	char path[1024];
	sl_client *c;
	int status = 0, rc;
	int64_t jid;
	uid_t uid = 0;
	pid_t pid = 0;

	(void)ac;
	(void)av;
	if (!spank_remote(sp) || task_ids(sp, &id) < 0 ||
	    !step_is_tasks(id.step))
		return 0;
	task_ask(sp, &a);
	if (!a.any)
		return 0;
	if (spank_get_item(sp, S_TASK_EXIT_STATUS, &status) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_TASK_PID, &pid) != ESPANK_SUCCESS ||
	    node_socket(sp, path, sizeof path) < 0 || !(c = sl_client_new()))
		return 0;
	sl_set_timeout(c, 10000);
	if (sl_connect(c, path) < 0) {
		/* The daemon ends the job lost (no_report) on its own. */
		slurm_info("stageload: task %u: exit not reported: %s", id.task,
		           sl_errmsg(c));
		goto out;
	}
	if (!(jid = find_job(c, &id, uid, pid)))
		goto out; /* never submitted, or already ended (killed) */
	if (WIFSIGNALED(status))
		rc = sl_job_exit(c, jid, -1, WTERMSIG(status), NULL);
	else
		rc = sl_job_exit(c, jid, WEXITSTATUS(status), 0, NULL);
	if (rc < 0 && rc != SL_E_STATE)
		slurm_info("stageload: task %u: job %" PRId64 ": job_exit: %s",
		           id.task, jid, sl_errmsg(c));
out:
	sl_client_free(c);
	return 0;
}

int
slurm_spank_local_user_init(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	have_local_step =
	    spank_get_item(sp, S_JOB_ID, &local_job) == ESPANK_SUCCESS &&
	    spank_get_item(sp, S_JOB_STEPID, &local_step) == ESPANK_SUCCESS;
	return 0;
}

/* In srun: the tasks of this step the daemon of srun's host killed, each
 * on a line of srun's stderr. Tasks on other nodes show in Slurm's exit
 * code and in that node's `stageloadctl show`. */
int
slurm_spank_exit(spank_t sp, int ac, char **av)
{
	struct ask a = conf.defaults;
	uint32_t job = local_job, step = local_step;
	struct sl_job *jobs = NULL;
	size_t n = 0;
	char path[1024];
	sl_client *c;

	(void)ac;
	(void)av;
	if (spank_context() != S_CTX_LOCAL)
		return 0;
	if (given.any)
		a = given;
	if (!a.any || !have_local_step || !step_is_tasks(step) ||
	    node_socket(sp, path, sizeof path) < 0 || !(c = sl_client_new()))
		return 0;
	sl_set_timeout(c, 5000);
	if (sl_connect(c, path) == 0 && sl_status(c, 1, 1000, &jobs, &n) == 0) {
		for (size_t i = 0; i < n; i++) {
			const sl_job *j = sl_job_at(jobs, i);
			int64_t jid, sid, tid, grew = 0, budget = 0;
			const char *state = sl_job_get_str(j, "state");
			const char *reason = sl_job_get_str(j, "end_reason");
			char g[32], b[32];

			if (sl_job_get_int(j, "slurm_job_id", &jid) < 0 ||
			    sl_job_get_int(j, "slurm_step_id", &sid) < 0 ||
			    sl_job_get_int(j, "slurm_task_id", &tid) < 0 ||
			    jid != job || sid != step || !state || !reason ||
			    strcmp(state, "killed") ||
			    strcmp(reason, "swap_budget"))
				continue;
			(void)sl_job_get_int(j, "swap_growth_peak_bytes",
			                     &grew);
			(void)sl_job_get_int(j, "swap_budget_bytes", &budget);
			fprintf(
			    stderr,
			    "stageload: task %" PRId64
			    " killed: the system's swap grew %s while it "
			    "ran, over its %s budget\n",
			    tid, units_format_size((uint64_t)grew, g, sizeof g),
			    units_format_size((uint64_t)budget, b, sizeof b));
		}
		sl_jobs_free(jobs, n);
	}
	sl_client_free(c);
	return 0;
}
