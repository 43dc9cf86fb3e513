/*
 * stageloadctl run (alias guard): an attached job. Register with the
 * daemon, wait for admission while showing the queue position, run the
 * command here in its own process group, tell the daemon its pid and its
 * end, and exit with its status. The daemon enforces the swap budget
 * meanwhile; if the daemon goes away the command keeps running and we
 * reconnect and resume. docs/cli.md has the exit codes.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "clock.h"
#include "cli.h"

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000
/* How long to keep trying to report the command's end to a daemon that
 * has gone away before giving up and exiting with its status anyway. */
#define REPORT_GIVE_UP_MS 60000

static int cmd_run(struct cli *, struct cli_args *);

static const struct cli_option run_options[] = {
    {"quiet", 'q', CLI_FLAG, NULL, 0, 0, "no queue status on stderr"},
    {NULL, 0, 0, NULL, 0, 0, NULL},
};

const struct cli_entry cmd_run_entry = {
    .name = "run",
    .alias = "guard",
    .summary = "wait for admission, run CMD here, exit with its status",
    .operands = "-- CMD [ARGS...]",
    .min_operands = 1,
    .max_operands = -1,
    .flags = CLI_COMMAND_LINE,
    .options = run_options,
    .more_options = cli_job_options,
    .no_json = "the command's output is its own",
    .exec = cmd_run,
};

static int sigpipe_fds[2] = {-1, -1};

static void
on_signal(int sig)
{
	int saved = errno;
	unsigned char c = (unsigned char)sig;

	/* Only note it: the loop below does the work. */
	(void)!write(sigpipe_fds[1], &c, 1);
	errno = saved;
}

struct run {
	struct cli *cli;
	sl_client *c;
	char path[1024];
	int64_t id;
	char token[80]; /* the job's STAGELOAD_JOB_TOKEN ("": none) */
	char *const *argv;
	int quiet;
	int tty;       /* stderr is a terminal: update the line in place */
	int line_open; /* a queue line is shown and not ended */
	char last_line[640];
	struct cli_progress progress; /* not a terminal: which lines to print */
	int64_t queued_since_ms;

	int admitted; /* an admitted notification is waiting */
	int attempt;
	pid_t pid;   /* the command, also its process group */
	int gate_fd; /* write end: the child execs once it reads "g" */
	int pid_reported;
	int fg_tty; /* we gave the terminal to the command's group */
	int wstatus;
	int done; /* the command has ended */

	int breach; /* a breach notification came for this attempt */
	int requeued;
	uint64_t growth_bytes, budget_bytes;
	char ended_state[32]; /* the daemon ended the job behind our back */
	char ended_reason[32];

	/* A --wait-free SIZE: its line compares the available memory, from
	 * the notification's free % of total_bytes (0: unknown). */
	uint64_t wait_free_bytes, total_bytes;
	int64_t begin_ms; /* its --begin, for the queue line; 0: none */

	int64_t backoff_ms;
	int64_t reconnect_at_ms;
	int abandoned; /* the daemon no longer knows the job: just finish */
};

static void
line_end(struct run *r)
{
	if (r->line_open && r->tty)
		fputs("\r\033[K", stderr);
	r->line_open = 0;
	r->last_line[0] = '\0';
	/* After a message of ours (admitted, requeued, reconnected) the next
	 * queue line is news again. */
	memset(&r->progress, 0, sizeof r->progress);
}

/* The queue line text, of a job waiting for key (its waiting_for). */
static void
line_show(struct run *r, const char *text, const char *key)
{
	if (r->quiet || strcmp(text, r->last_line) == 0)
		return;
	if (!r->tty &&
	    !cli_progress_due(&r->progress, key, text, clock_mono_ms()))
		return;
	snprintf(r->last_line, sizeof r->last_line, "%s", text);
	if (r->tty) {
		fprintf(stderr, "\r\033[K%s", text);
		r->line_open = 1;
	} else {
		fprintf(stderr, "%s\n", text);
	}
	fflush(stderr);
}

/* A message of our own on stderr, on a fresh line. */
static void say(struct run *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
say(struct run *r, const char *fmt, ...)
{
	va_list ap;

	line_end(r);
	va_start(ap, fmt);
	cli_verror(fmt, ap);
	va_end(ap);
	fflush(stderr);
}

static sigset_t ignored_at_start;

static int
setup_signals(void)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGCHLD};
	struct sigaction sa;
	size_t i;

	if (pipe(sigpipe_fds) == -1)
		return -errno;
	for (i = 0; i < 2; i++) {
		fcntl(sigpipe_fds[i], F_SETFD, FD_CLOEXEC);
		fcntl(sigpipe_fds[i], F_SETFL,
		      fcntl(sigpipe_fds[i], F_GETFL) | O_NONBLOCK);
	}
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigemptyset(&ignored_at_start);
	for (i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
		struct sigaction old;

		/* A signal ignored when we started (nohup, a shell's
		 * background job) stays ignored, here and in the command,
		 * as a shell would leave it. */
		if (sigs[i] != SIGCHLD && sigaction(sigs[i], NULL, &old) == 0 &&
		    old.sa_handler == SIG_IGN) {
			sigaddset(&ignored_at_start, sigs[i]);
			continue;
		}
		if (sigaction(sigs[i], &sa, NULL) == -1)
			return -errno;
	}
	return 0;
}

/* The next signal noted by the handler, or 0. */
static int
next_signal(void)
{
	unsigned char c;

	if (read(sigpipe_fds[0], &c, 1) == 1)
		return c;
	return 0;
}

/*
 * Wait until the daemon's socket or the signal pipe is readable, or
 * timeout_ms passes.
 */
static void
wait_input(struct run *r, int timeout_ms)
{
	struct pollfd pfd[2];
	int n = 0;

	pfd[n].fd = sigpipe_fds[0];
	pfd[n++].events = POLLIN;
	if (sl_fd(r->c) != -1) {
		pfd[n].fd = sl_fd(r->c);
		pfd[n++].events = POLLIN;
	}
	if (sl_pending(r->c) > 0)
		timeout_ms = 0;
	(void)poll(pfd, (nfds_t)n, timeout_ms);
}

/*
 * The command, owning the terminal, was stopped (Ctrl-Z): stop as well, so
 * the shell sees its job stopped and takes the terminal back; once
 * continued (fg), give the terminal to the command again and continue it.
 */
static void
suspend_with(struct run *r)
{
	tcsetpgrp(STDIN_FILENO, getpgrp());
	cli_stop_self();
	tcsetpgrp(STDIN_FILENO, r->pid);
	kill(-r->pid, SIGCONT);
}

static void
reap(struct run *r)
{
	int st;
	pid_t p;

	if (r->pid <= 0 || r->done)
		return;
	while ((p = waitpid(r->pid, &st,
	                    WNOHANG | (r->fg_tty ? WUNTRACED : 0))) == -1 &&
	       errno == EINTR)
		;
	if (p == r->pid && WIFSTOPPED(st)) {
		suspend_with(r);
		return;
	}
	if (p == r->pid) {
		r->wstatus = st;
		r->done = 1;
	}
}

/* Milliseconds to sleep before the next reconnect attempt (at most 1 s,
 * so signals and the child are looked at regularly anyway). */
static int
until_reconnect(const struct run *r)
{
	int64_t left = r->reconnect_at_ms - clock_mono_ms();

	if (left < 0)
		return 0;
	return left > 1000 ? 1000 : (int)left;
}

/* Handle the notifications that have arrived. */
/* The queue line of a queue notification, in the words of show and
 * status (a size for a --wait-free SIZE). */
static void
queue_line(const struct run *r, const struct sl_notification *n, char *buf,
           size_t len, char *key, size_t keylen)
{
	struct cli_wait w = {n->queue.waiting_for,
	                     n->queue.free_pct,
	                     n->queue.wait_free_pct,
	                     -1,
	                     r->wait_free_bytes,
	                     0,
	                     n->queue.id,
	                     r->begin_ms,
	                     NULL,
	                     0,
	                     NULL};
	cJSON *p = cJSON_Parse(n->params_json);
	const cJSON *until =
	    cJSON_GetObjectItemCaseSensitive(p, "waiting_until_ms");
	char *on = cJSON_PrintUnformatted(
	    cJSON_GetObjectItemCaseSensitive(p, "waiting_on"));

	if (r->total_bytes > 0)
		w.available_bytes =
		    (int64_t)(n->queue.free_pct / 100 * (double)r->total_bytes);
	/* What it waits behind, as the daemon says (PROTOCOL.md, queue). */
	w.on_json = on;
	if (cJSON_IsNumber(until))
		w.until_ms = (int64_t)until->valuedouble;
	cli_queue_line_wait(n->queue.position, n->queue.of, &w, buf, len);
	/* A line is news when the kind of wait or the job it waits behind
	 * changes (numbers alone do not count). */
	{
		const cJSON *first = cJSON_GetArrayItem(
		    cJSON_GetObjectItemCaseSensitive(p, "waiting_on"), 0);
		const cJSON *fid =
		    cJSON_GetObjectItemCaseSensitive(first, "id");
		snprintf(key, keylen, "%s %lld", n->queue.waiting_for,
		         cJSON_IsNumber(fid) ? (long long)fid->valuedouble
		                             : 0LL);
	}
	cJSON_free(on);
	cJSON_Delete(p);
}

static void
drain(struct run *r)
{
	struct sl_notification n;
	char line[640], a[16], b[16], key[64];

	if (sl_fd(r->c) != -1)
		(void)sl_process_input(r->c);
	while (sl_next_notification(r->c, 0, &n) == 1) {
		switch (n.kind) {
		case SL_N_QUEUE:
			if (n.queue.id != r->id)
				break;
			queue_line(r, &n, line, sizeof line, key, sizeof key);
			line_show(r, line, key);
			break;
		case SL_N_ADMITTED:
			if (n.admitted.id != r->id)
				break;
			r->admitted = 1;
			r->attempt = n.admitted.attempt;
			break;
		case SL_N_BREACH:
			if (n.breach.id != r->id)
				break;
			r->breach = 1;
			r->requeued = n.breach.requeued;
			r->growth_bytes = n.breach.swap_growth_bytes;
			r->budget_bytes = n.breach.swap_budget_bytes;
			say(r,
			    "job %" PRId64
			    ": the system's swap grew by %s while "
			    "it ran, past its budget of %s; the daemon is "
			    "stopping it%s",
			    r->id, cli_size(r->growth_bytes, a, sizeof a),
			    cli_size(r->budget_bytes, b, sizeof b),
			    r->requeued ? " and will run it again" : "");
			break;
		case SL_N_EVENT:
			/* Ends we are not told about otherwise: a cancel
			 * while queued, or a kill while running. */
			if (n.event.job_id != r->id)
				break;
			if (strcmp(n.event.kind, "cancelled") == 0 ||
			    strcmp(n.event.kind, "lost") == 0 ||
			    strcmp(n.event.kind, "failed") == 0 ||
			    strcmp(n.event.kind, "killed") == 0)
				snprintf(r->ended_state, sizeof r->ended_state,
				         "%s", n.event.kind);
			break;
		default:
			break;
		}
		sl_notification_clear(&n);
	}
}

/*
 * Try to reconnect when the time has come. Returns 1 when connected (and
 * the job resumed), 0 when not yet, or an exit code when the job cannot be
 * resumed.
 */
static int
reconnect(struct run *r)
{
	struct sl_job j;
	int rc;

	if (sl_is_connected(r->c))
		return 1;
	if (r->abandoned || clock_mono_ms() < r->reconnect_at_ms)
		return 0;
	if (sl_connect(r->c, r->path) < 0 ||
	    sl_subscribe(r->c, 0, 1, 0, NULL) < 0) {
		sl_close(r->c);
		r->backoff_ms = r->backoff_ms < BACKOFF_MIN_MS
		                    ? BACKOFF_MIN_MS
		                    : r->backoff_ms * 2;
		if (r->backoff_ms > BACKOFF_MAX_MS)
			r->backoff_ms = BACKOFF_MAX_MS;
		r->reconnect_at_ms = clock_mono_ms() + r->backoff_ms;
		return 0;
	}
	rc = sl_resume(r->c, r->id, &j);
	if (rc < 0) {
		if (sl_error_is_connection(rc))
			return 0;
		say(r, "job %" PRId64 ": cannot resume: %s", r->id,
		    sl_errmsg(r->c));
		return EXIT_JOB_NOTRUN;
	}
	r->backoff_ms = 0;
	say(r, "reconnected to the daemon; job %" PRId64 " is %s", r->id,
	    j.state);
	if (strcmp(j.state, "admitted") == 0 && r->pid <= 0)
		r->admitted = 1;
	if (strcmp(j.state, "queued") == 0 && r->pid > 0 && !r->requeued &&
	    r->done) {
		/* requeued while we were away */
		r->breach = r->requeued = 1;
	}
	if (sl_job_ended(&j))
		snprintf(r->ended_state, sizeof r->ended_state, "%s", j.state);
	sl_job_clear(&j);
	return 1;
}

static void
connection_lost(struct run *r)
{
	if (!sl_is_connected(r->c) && r->reconnect_at_ms == 0) {
		say(r, "lost the daemon (%s); %s", sl_errmsg(r->c),
		    r->pid > 0 && !r->done ? "the command keeps running, "
		                             "reconnecting"
		                           : "reconnecting");
		r->backoff_ms = BACKOFF_MIN_MS;
		r->reconnect_at_ms = clock_mono_ms() + r->backoff_ms;
	}
}

/* Wait for admission. Returns 0 when admitted, or an exit code. */
static int
wait_admission(struct run *r)
{
	char d[32];
	int sig, rc;

	while (!r->admitted) {
		drain(r);
		if (r->admitted)
			break;
		if (r->ended_state[0] != '\0') {
			say(r, "job %" PRId64 " was %s before it started",
			    r->id, r->ended_state);
			return EXIT_JOB_NOTRUN;
		}
		while ((sig = next_signal()) != 0) {
			if (sig == SIGCHLD)
				continue;
			line_end(r);
			if (sl_is_connected(r->c) &&
			    sl_cancel(r->c, r->id, NULL) == 0)
				say(r, "job %" PRId64 " cancelled", r->id);
			return 128 + sig;
		}
		if (!sl_is_connected(r->c)) {
			connection_lost(r);
			rc = reconnect(r);
			if (rc > 1)
				return rc;
			if (rc == 0) {
				wait_input(r, until_reconnect(r));
				continue;
			}
			r->reconnect_at_ms = 0;
			continue;
		}
		wait_input(r, -1);
	}
	if (r->line_open || r->last_line[0] != '\0') {
		line_end(r);
		if (!r->quiet)
			say(r, "job %" PRId64 " admitted after %s", r->id,
			    cli_duration(clock_wall_ms() - r->queued_since_ms,
			                 d, sizeof d));
	}
	r->admitted = 0;
	return 0;
}

/*
 * Fork the command in its own process group. The child waits at a gate
 * (a pipe) until the daemon has accepted its pid, so the daemon watches it
 * from its first instruction and never sees an exited pid.
 */
static int
start_command(struct run *r)
{
	int fg, gate[2];
	pid_t pid;

	if (pipe(gate) == -1) {
		say(r, "cannot create a pipe: %s", strerror(errno));
		return -1;
	}
	fcntl(gate[0], F_SETFD, FD_CLOEXEC);
	fcntl(gate[1], F_SETFD, FD_CLOEXEC);
	fg = isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();
	pid = fork();
	if (pid == -1) {
		say(r, "cannot fork: %s", strerror(errno));
		close(gate[0]);
		close(gate[1]);
		return -1;
	}
	if (pid == 0) {
		static const int sigs[] = {SIGINT,  SIGTERM, SIGHUP,
		                           SIGCHLD, SIGTTOU, SIGPIPE};
		size_t i;
		char go = 0, idvar[32];
		ssize_t n;
		int e;

		setpgid(0, 0);
		for (i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
			signal(sigs[i], sigismember(&ignored_at_start, sigs[i])
			                    ? SIG_IGN
			                    : SIG_DFL);
		close(gate[1]);
		while ((n = read(gate[0], &go, 1)) == -1 && errno == EINTR)
			;
		if (n != 1 || go != 'g')
			_exit(EXIT_JOB_NOTRUN);
		close(gate[0]);
		/* As a detached job has it (PROTOCOL.md, submit): `stageloadctl
		 * stage` and the Python package find the job, its daemon and
		 * its token. */
		snprintf(idvar, sizeof idvar, "%" PRId64, r->id);
		setenv("STAGELOAD_JOB_ID", idvar, 1);
		if (r->path[0] == '/')
			setenv("STAGELOAD_SOCKET", r->path, 1);
		else {
			char abs[2048], cwd[1024];
			if (getcwd(cwd, sizeof cwd) != NULL) {
				snprintf(abs, sizeof abs, "%s/%s", cwd,
				         r->path);
				setenv("STAGELOAD_SOCKET", abs, 1);
			}
		}
		if (r->token[0] != '\0')
			setenv("STAGELOAD_JOB_TOKEN", r->token, 1);
		else
			unsetenv("STAGELOAD_JOB_TOKEN");
		execvp(r->argv[0], r->argv);
		e = errno;
		fprintf(stderr, "stageloadctl: cannot run %s: %s\n", r->argv[0],
		        strerror(e));
		_exit(e == ENOENT ? EXIT_JOB_NOTFOUND : EXIT_JOB_CANNOTRUN);
	}
	close(gate[0]);
	/* Both sides set the group, so it is set before job_pid whichever
	 * runs first. */
	setpgid(pid, pid);
	r->pid = pid;
	r->gate_fd = gate[1];
	r->done = 0;
	r->pid_reported = 0;
	if (fg) {
		/* Let the command own the terminal (Ctrl-C, reading stdin),
		 * as a shell does for a foreground job. */
		signal(SIGTTOU, SIG_IGN);
		r->fg_tty = tcsetpgrp(STDIN_FILENO, pid) == 0;
	}
	return 0;
}

/* Let the command run (go) or make it exit unrun. */
static void
open_gate(struct run *r, int go)
{
	if (r->gate_fd < 0)
		return;
	if (go)
		(void)!write(r->gate_fd, "g", 1);
	close(r->gate_fd);
	r->gate_fd = -1;
}

static void
take_back_tty(struct run *r)
{
	if (r->fg_tty) {
		tcsetpgrp(STDIN_FILENO, getpgrp());
		r->fg_tty = 0;
	}
}

/* Supervise until the command has ended. */
static void
supervise(struct run *r)
{
	int sig, rc;

	while (!r->done) {
		/* Not once abandoned: the daemon that forgot the job would
		 * refuse the pid, and the command already runs. */
		if (sl_is_connected(r->c) && !r->pid_reported &&
		    !r->abandoned) {
			rc = sl_job_pid(r->c, r->id, r->pid);
			if (rc == 0) {
				r->pid_reported = 1;
				open_gate(r, 1);
			} else if (!sl_error_is_connection(rc)) {
				say(r,
				    "job %" PRId64 ": the daemon refused pid "
				    "%ld (%s); not running the command",
				    r->id, (long)r->pid, sl_errmsg(r->c));
				r->pid_reported = -1;
				open_gate(r, 0);
			}
		}
		if (!sl_is_connected(r->c)) {
			/* Without a daemon nobody would enforce the budget
			 * before we reconnect, but holding the command back
			 * forever is worse: run it, report the pid later. */
			open_gate(r, 1);
		}
		drain(r);
		while ((sig = next_signal()) != 0) {
			if (sig == SIGCHLD)
				reap(r);
			else
				kill(-r->pid, sig);
		}
		reap(r);
		if (r->done)
			break;
		if (!sl_is_connected(r->c)) {
			connection_lost(r);
			rc = reconnect(r);
			if (rc == 1)
				r->reconnect_at_ms = 0;
			if (rc > 1) {
				/* Nobody to report to: let the command finish
				 * and exit with its status. */
				r->abandoned = 1;
				r->pid_reported = 0;
				r->reconnect_at_ms = INT64_MAX;
			}
			if (rc != 1) {
				wait_input(r, until_reconnect(r));
				continue;
			}
			continue;
		}
		wait_input(r, -1);
	}
	take_back_tty(r);
}

/* The command's own status, as a shell reports it. */
static int
local_status(int wstatus)
{
	if (WIFEXITED(wstatus))
		return WEXITSTATUS(wstatus);
	if (WIFSIGNALED(wstatus))
		return 128 + WTERMSIG(wstatus);
	return EXIT_ERR;
}

/*
 * Tell the daemon how the command ended. Returns the exit code, or -1
 * when the job was requeued and must run again.
 */
static int
report_end(struct run *r)
{
	int code = -1, sig = 0, status = local_status(r->wstatus);
	int64_t give_up = clock_mono_ms() + REPORT_GIVE_UP_MS;
	struct sl_job j;
	char a[16], b[16];
	int rc = -ENOTCONN;

	if (WIFSIGNALED(r->wstatus))
		sig = WTERMSIG(r->wstatus);
	else
		code = WEXITSTATUS(r->wstatus);

	memset(&j, 0, sizeof j);
	while (clock_mono_ms() < give_up && !r->abandoned) {
		if (!sl_is_connected(r->c)) {
			connection_lost(r);
			if (reconnect(r) != 1) {
				wait_input(r, until_reconnect(r));
				while (next_signal() != 0)
					;
				continue;
			}
			r->reconnect_at_ms = 0;
		}
		if (r->pid_reported <= 0)
			break; /* the daemon never knew this pid */
		rc = sl_job_exit(r->c, r->id, code, sig, &j);
		if (rc == 0 || !sl_error_is_connection(rc))
			break;
	}
	/* Responses come in order, so a breach sent before the answer has
	 * arrived by now. */
	drain(r);
	/* Requeued: by our report, or by the daemon before it (it does not
	 * wait for a report once the process is gone; PROTOCOL.md,
	 * job_exit), when the answer is the job as it is now. */
	if (r->requeued ||
	    (rc == 0 && (strcmp(j.state, "queued") == 0 ||
	                 strcmp(j.state, "admitted") == 0)) ||
	    (rc == SL_E_STATE && sl_show(r->c, r->id, 0, &j) == 0 &&
	     strcmp(j.state, "queued") == 0)) {
		sl_job_clear(&j);
		return -1;
	}
	if (rc == 0 && strcmp(j.state, "killed") == 0 &&
	    strcmp(j.end_reason, "swap_budget") == 0)
		r->breach = 1;
	if (rc == 0 && strcmp(j.state, "killed") == 0 &&
	    strcmp(j.end_reason, "time_limit") == 0) {
		/* As timeout(1) exits; the daemon's words say which limit
		 * ("it ran 1.0s, its time limit (--time 1.0s)"). */
		say(r, "job %" PRId64 " %s", r->id,
		    j.end_detail != NULL
		        ? j.end_detail
		        : "killed: it ran past its time limit");
		sl_job_clear(&j);
		return EXIT_JOB_BUDGET;
	}
	if (rc < 0 && rc != SL_E_STATE && r->pid_reported > 0)
		say(r,
		    "job %" PRId64 ": could not report the end to the "
		    "daemon: %s",
		    r->id, sl_errmsg(r->c));
	sl_job_clear(&j);
	if (r->breach) {
		say(r,
		    "job %" PRId64 " killed: the system's swap grew by %s "
		    "while it ran, past its budget of %s",
		    r->id, cli_size(r->growth_bytes, a, sizeof a),
		    cli_size(r->budget_bytes, b, sizeof b));
		return EXIT_JOB_BUDGET;
	}
	if (r->pid_reported < 0)
		return EXIT_JOB_NOTRUN;
	return status;
}

static int
cmd_run(struct cli *cli, struct cli_args *args)
{
	sl_job_spec *spec;
	struct sl_submitted sub;
	struct sl_info info;
	struct run r;
	int rc;

	memset(&r, 0, sizeof r);
	if ((spec = cli_job_spec(cli, args, CLI_USE_RUN, &rc)) == NULL)
		return rc;
	r.quiet = cli_has(args, "quiet");
	if (sl_job_spec_set_bool(spec, "attached", 1) != 0) {
		sl_job_spec_free(spec);
		cli_error("out of memory");
		return EXIT_ERR;
	}
	r.cli = cli;
	r.gate_fd = -1;
	r.argv = args->argv;
	r.tty = isatty(STDERR_FILENO);
	if (setup_signals() < 0) {
		sl_job_spec_free(spec);
		cli_error("cannot set up signals: %s", strerror(errno));
		return EXIT_ERR;
	}
	/* A mistyped command fails now, as submit's does, not after its
	 * whole turn in the queue with a job left behind. */
	if ((rc = cli_connect(cli)) != 0 ||
	    (rc = cli_submit_command(spec)) >= 0 ||
	    (rc = cli_check_wait_free(cli, cli_spec_wait_free_bytes(spec))) >=
	        0) {
		sl_job_spec_free(spec);
		return rc;
	}
	r.c = cli->client;
	snprintf(r.path, sizeof r.path, "%s", sl_path(r.c));
	if (!r.quiet)
		cli_warn_no_swap(cli, cli_spec_budget(spec));
	/* Events tell us when someone cancels the job while it waits. */
	if (sl_subscribe(r.c, 0, 1, 0, NULL) < 0) {
		sl_job_spec_free(spec);
		return cli_fail(cli);
	}
	r.wait_free_bytes = cli_spec_wait_free_bytes(spec);
	if (sl_job_spec_get_int(spec, "begin_ms", &r.begin_ms) != 0)
		r.begin_ms = 0;
	rc = sl_submit(r.c, spec, &sub);
	sl_job_spec_free(spec);
	if (rc < 0) {
		/* Refused (a limit, a bad value): the command never ran, and
		 * 1 could be mistaken for its own status. */
		rc = cli_fail(cli);
		return rc == EXIT_ERR ? EXIT_JOB_NOTRUN : rc;
	}
	r.id = sub.id;
	snprintf(r.token, sizeof r.token, "%s",
	         sl_job_token(r.c, r.id) != NULL ? sl_job_token(r.c, r.id)
	                                         : "");
	r.queued_since_ms = clock_wall_ms();
	if (r.wait_free_bytes > 0 && sl_info(r.c, &info) == 0 &&
	    info.has_sample)
		r.total_bytes = info.sample.total_bytes;

	for (;;) {
		rc = wait_admission(&r);
		if (rc != 0)
			return rc;
		r.breach = r.requeued = 0;
		if (start_command(&r) < 0) {
			if (sl_is_connected(r.c))
				sl_cancel(r.c, r.id, NULL);
			return EXIT_JOB_CANNOTRUN;
		}
		supervise(&r);
		rc = report_end(&r);
		if (rc >= 0)
			return rc;
		say(&r, "job %" PRId64 " requeued; waiting to run it again",
		    r.id);
		r.pid = 0;
		r.queued_since_ms = clock_wall_ms();
	}
}
