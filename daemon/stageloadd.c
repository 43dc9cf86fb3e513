/*
 * stageloadd: start-up, signals and shutdown. The modules do the work;
 * this file puts them together in order and wires the hooks by which a
 * lower layer reaches the ones above it (docs/architecture.md). Exit
 * codes: 0 after a clean stop (or --help/--version), 1 when the daemon
 * cannot start, 2 for a bad command line or config file.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "answers.h"
#include "control.h"
#include "daemon.h"
#include "jobs.h"
#include "log.h"
#include "notify.h"
#include "platform.h"
#include "sampler.h"
#include "server.h"
#include "socket-trust.h"
#include "spawn.h"
#include "tick.h"
#include "trust.h"
#include "version.h"

static struct daemon daemon_state;

static void pid_file_remove(void);

/* Does a daemon answer on the socket at path? */
static int
socket_answers(const char *path)
{
	struct sockaddr_un sa;
	int fd, ok;

	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof sa.sun_path)
		return 0;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if ((fd = socket(AF_UNIX, SOCK_STREAM, 0)) < 0)
		return 0;
	ok = connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
	close(fd);
	return ok;
}

/*
 * A second daemon (a per-user one while the system's runs, or one on a
 * socket of its own) is reached by nobody who does not ask for it: the
 * clients take $STAGELOAD_SOCKET, else the system socket whenever it
 * exists, else the per-user one (PROTOCOL.md, "Transport"). When that
 * choice lands on another daemon, say so, and how to reach this one.
 */
static void
say_who_reaches_us(const struct daemon *d)
{
	char def[sizeof d->cfg.socket_path];
	const char *env = getenv("STAGELOAD_SOCKET"), *why;
	struct stat st;

	if (env != NULL && env[0] != '\0') {
		snprintf(def, sizeof def, "%s", env);
		why = "from $STAGELOAD_SOCKET";
	} else if (platform_default_socket(1, def, sizeof def) == 0 &&
	           stat(def, &st) == 0) {
		why = "the system socket, chosen whenever it exists";
	} else if (platform_default_socket(0, def, sizeof def) == 0) {
		why = "the per-user socket";
	} else {
		return;
	}
	if (strcmp(def, d->cfg.socket_path) == 0 || !socket_answers(def))
		return;
	log_warnx("another daemon serves %s (%s): stageloadctl, stageload-web "
	          "and the Python package reach that one by default, not "
	          "this one; to reach this daemon use --socket %s, or export "
	          "STAGELOAD_SOCKET=%s",
	          def, why, d->cfg.socket_path, d->cfg.socket_path);
}

/* A connection closed: what it waited for goes, and its attached jobs are
 * given up or left running. */
static void
daemon_client_gone(struct daemon *d, uint64_t client_id)
{
	answers_client_gone(d, client_id);
	notify_client_gone(d, client_id);
	jobs_client_gone(d, client_id);
}

/* What a client is still owed: waits, logs followed, large answers. */
static size_t
daemon_deferred(struct daemon *d, uint64_t client_id)
{
	return notify_deferred(d, client_id) + answers_owed(d, client_id);
}

/* A client read all it was sent: the log it follows and the answer it is
 * written go on. */
static void
daemon_writable(struct daemon *d, uint64_t client_id)
{
	notify_writable(d, client_id);
	answers_writable(d, client_id);
}

static const struct server_hooks server_hooks = {
    .dispatch = control_dispatch,
    .deferred = daemon_deferred,
    .writable = daemon_writable,
    .gone = daemon_client_gone,
    .after_read = sampler_run_due,
};
static uv_signal_t sig_term, sig_int, sig_hup, sig_usr1;
static int saved_argc;
static char **saved_argv;

/* mkdir -p: the database and state directories of a fresh install. */
static int
mkdirs(const char *path, mode_t mode)
{
	char buf[1024], *p;
	struct stat st;

	if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
		return -ENAMETOOLONG;
	for (p = buf + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) != 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, mode) != 0 && errno != EEXIST)
		return -errno;
	/* EEXIST is also a file in the way: every job would then fail. */
	if (stat(buf, &st) != 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	return 0;
}

static int
parent_dir(const char *path, char *buf, size_t len)
{
	char *slash;

	if (snprintf(buf, len, "%s", path) >= (int)len)
		return -ENAMETOOLONG;
	if ((slash = strrchr(buf, '/')) == NULL)
		snprintf(buf, len, ".");
	else if (slash == buf)
		slash[1] = '\0';
	else
		*slash = '\0';
	return 0;
}

/* Refuse what trust_path_check refuses, for the start-up error (exit 1):
 * "refusing WHAT: why", the why naming the path at fault. */
static int
daemon_trust(const char *what, const char *path, enum trust_kind kind,
             char *cause, size_t causelen)
{
	char why[768];
	int rc;

	if ((rc = trust_path_check(path, geteuid(), kind, why, sizeof why)) !=
	    0)
		snprintf(cause, causelen, "refusing %s: %s", what, why);
	return rc;
}

/*
 * The database, the files sqlite opens beside it by itself (a -wal or a
 * hot -journal found there is replayed into the database at open), and
 * the state directory: each must be this daemon's, in directories only it
 * and root can write (trust.c). A user who could plant any of them could
 * queue a job as root. What exists is checked before anything is created
 * in it, and everything again once the directories exist, right before
 * the database is opened.
 */
static int
daemon_paths(struct daemon *d, char *cause, size_t causelen)
{
	static const char *const beside[] = {"-wal", "-shm", "-journal"};
	char dir[1024], path[1100], what[1200];
	mode_t mode = d->cfg.system ? 0755 : 0700;
	size_t i;
	int rc;

	snprintf(what, sizeof what, "the database %s", d->cfg.db_path);
	if ((rc = parent_dir(d->cfg.db_path, dir, sizeof dir)) != 0 ||
	    (rc = daemon_trust(what, dir, TRUST_DIR, cause, causelen)) != 0)
		return rc;
	snprintf(what, sizeof what, "the state directory %s", d->cfg.state_dir);
	if ((rc = daemon_trust(what, d->cfg.state_dir, TRUST_DIR, cause,
	                       causelen)) != 0)
		return rc;
	if ((rc = mkdirs(dir, mode)) != 0) {
		snprintf(cause, causelen,
		         "cannot create the database directory %s: %s", dir,
		         strerror(-rc));
		return rc;
	}
	if ((rc = mkdirs(d->cfg.state_dir, mode)) != 0) {
		snprintf(cause, causelen,
		         "cannot create the state directory %s: %s",
		         d->cfg.state_dir, strerror(-rc));
		return rc;
	}
	/* Made now, or there before: all of it, once more. */
	if ((rc = daemon_trust(what, d->cfg.state_dir, TRUST_DIR, cause,
	                       causelen)) != 0)
		return rc;
	snprintf(path, sizeof path, "%s/jobs", d->cfg.state_dir);
	snprintf(what, sizeof what, "the job directory %s", path);
	if ((rc = daemon_trust(what, path, TRUST_DIR, cause, causelen)) != 0)
		return rc;
	/* Logs elsewhere (log_dir): the same rules as the state directory,
	 * before and after it is made. A user who could write there could
	 * swap a log for a link to a file of root's. */
	if (d->cfg.log_dir[0] != '\0') {
		snprintf(what, sizeof what, "the log directory %s",
		         d->cfg.log_dir);
		if ((rc = daemon_trust(what, d->cfg.log_dir, TRUST_DIR, cause,
		                       causelen)) != 0)
			return rc;
		if ((rc = mkdirs(d->cfg.log_dir, 0700)) != 0) {
			snprintf(cause, causelen,
			         "cannot create the log directory %s: %s",
			         d->cfg.log_dir, strerror(-rc));
			return rc;
		}
		if ((rc = daemon_trust(what, d->cfg.log_dir, TRUST_DIR, cause,
		                       causelen)) != 0)
			return rc;
	}
	snprintf(what, sizeof what, "the database %s", d->cfg.db_path);
	if ((rc = daemon_trust(what, d->cfg.db_path, TRUST_FILE, cause,
	                       causelen)) != 0)
		return rc;
	for (i = 0; i < sizeof beside / sizeof beside[0]; i++) {
		snprintf(path, sizeof path, "%s%s", d->cfg.db_path, beside[i]);
		snprintf(what, sizeof what, "%s beside the database", path);
		if ((rc = daemon_trust(what, path, TRUST_FILE, cause,
		                       causelen)) != 0)
			return rc;
	}
	return 0;
}

/* What monitors started from now keep every job's log within, besides
 * max_log_bytes (spawn.h), and where the logs go. */
static void
daemon_log_bounds(const struct daemon *d)
{
	struct spawn_log_bounds b;

	memset(&b, 0, sizeof b);
	snprintf(b.log_dir, sizeof b.log_dir, "%s", d->cfg.log_dir);
	b.min_free_bytes = d->cfg.min_free_disk_bytes;
	b.min_free_auto = d->cfg.min_free_disk_auto;
	b.per_uid_bytes = d->cfg.max_log_bytes_per_uid;
	spawn_set_log_bounds(&b);
}

/* Every job's STAGELOAD_SOCKET: this daemon's socket, absolute (a job
 * runs in a directory of its own). */
static void
daemon_job_socket(const struct daemon *d)
{
	char cwd[1024], path[sizeof cwd + sizeof d->cfg.socket_path + 1];

	if (d->cfg.socket_path[0] == '/' || getcwd(cwd, sizeof cwd) == NULL)
		snprintf(path, sizeof path, "%s", d->cfg.socket_path);
	else
		snprintf(path, sizeof path, "%s/%s", cwd, d->cfg.socket_path);
	spawn_set_socket(path);
}

/*
 * The per-user default socket under /tmp (no $XDG_RUNTIME_DIR, no usable
 * home) is held to the clients' rule (socket-trust.c): its directory, when
 * there, must be this user's with mode 0700, or no client would talk to
 * this daemon. Another user who made it first is named in the refusal.
 */
static int
default_socket_check(const struct daemon *d, char *cause, size_t causelen)
{
	enum socket_kind kind;
	char def[1024];

	if (d->cfg.system ||
	    socket_user_path(getenv("XDG_RUNTIME_DIR"), socket_home(),
	                     geteuid(), def, sizeof def, &kind) != 0 ||
	    kind != SOCKET_TMP || strcmp(def, d->cfg.socket_path) != 0)
		return 0;
	return socket_check(def, kind, geteuid(), cause, causelen);
}

/*
 * Every client is a descriptor: make room for the connection cap when the
 * hard limit allows, instead of failing accept() far below it. The rest
 * (up to 1024) is for the database, job logs and monitors, and the
 * platform's kept /proc files of followed processes (two each, up to 512).
 * Where the hard limit is lower, the cap the server applies comes down to
 * what it leaves, so a client past it gets its -32004 rather than an
 * accept() that fails without a word.
 */
static void
raise_fd_limit(struct daemon *d)
{
	struct rlimit rl;
	rlim_t want = (rlim_t)d->cfg.max_clients + 1024, reserve;

	d->fd_max_clients = d->cfg.max_clients;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= want)
		return;
	rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want
	                  ? want
	                  : rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
		log_warn("setrlimit(RLIMIT_NOFILE)");
		if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
			return;
	}
	if (rl.rlim_cur >= want)
		return;
	reserve = rl.rlim_cur / 2 < 1024 ? rl.rlim_cur / 2 : 1024;
	d->fd_max_clients = (int)(rl.rlim_cur - reserve);
	log_warnx("the descriptor limit (%llu) leaves room for %d clients, "
	          "not max_clients = %d: raise the hard limit (ulimit -Hn)",
	          (unsigned long long)rl.rlim_cur, d->fd_max_clients,
	          d->cfg.max_clients);
}

static void
signal_close_cb(uv_handle_t *h)
{
	(void)h;
}

/* Stop in the order that loses nothing: no new requests, last samples
 * written, a stop marker so history shows the gap, then the database. */
static void
daemon_stop(struct daemon *d)
{
	char cause[256];

	if (d->stopping)
		return;
	d->stopping = 1;
	log_info("stopping; running jobs are left to their monitors");
	server_stop(d); /* no new requests; the socket stays till the end */
	sampler_stop(d);
	tick_stop(d); /* the last samples */
	notify_stop(d);
	answers_stop(d);
	jobs_shutdown(d);
	if (d->store != NULL) {
		if (store_mark(d->store, clock_wall_ms(), "stop", cause,
		               sizeof cause) != 0)
			log_warnx("cannot write the stop marker: %s", cause);
		store_close(d->store);
		d->store = NULL;
	}
	spawn_close_in_children(-1); /* the lock's descriptor goes */
	server_release(d);
	uv_close((uv_handle_t *)&sig_term, signal_close_cb);
	uv_close((uv_handle_t *)&sig_int, signal_close_cb);
	uv_close((uv_handle_t *)&sig_hup, signal_close_cb);
	uv_close((uv_handle_t *)&sig_usr1, signal_close_cb);
	/* Only the pid of a daemon that runs; it goes with the socket. */
	pid_file_remove();
}

/*
 * The log file (--log-file), checked as the daemon's other files are: a
 * root daemon appending to a file someone else could swap for a link
 * would write where they chose. Opened before anything is logged.
 */
static int
daemon_log_file(struct daemon *d, char *cause, size_t causelen)
{
	char what[1100];
	int rc;

	if (d->cfg.log_file[0] == '\0')
		return 0;
	snprintf(what, sizeof what, "the log file %s", d->cfg.log_file);
	if ((rc = daemon_trust(what, d->cfg.log_file, TRUST_FILE, cause,
	                       causelen)) != 0)
		return rc;
	return log_open_file(d->cfg.log_file, cause, causelen);
}

/* The pid file, when it still names this process. */
static void
pid_file_remove(void)
{
	const char *path = daemon_state.cfg.pid_file;
	char line[32];
	ssize_t n;
	int fd;

	if (path[0] == '\0' ||
	    (fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) == -1)
		return;
	n = read(fd, line, sizeof line - 1);
	close(fd);
	if (n > 0) {
		line[n] = '\0';
		if (strtol(line, NULL, 10) == (long)getpid())
			(void)unlink(path);
	}
}

/*
 * The pid file (--pid-file), written once the socket is this daemon's (a
 * second daemon stops before it gets here), for newsyslog to signal the
 * daemon after rotating its log (launchd/org.stageload.stageloadd.newsyslog).
 */
static int
daemon_pid_file(struct daemon *d, char *cause, size_t causelen)
{
	char what[1100], line[32];
	int fd, n, rc;

	if (d->cfg.pid_file[0] == '\0')
		return 0;
	snprintf(what, sizeof what, "the pid file %s", d->cfg.pid_file);
	if ((rc = daemon_trust(what, d->cfg.pid_file, TRUST_FILE, cause,
	                       causelen)) != 0)
		return rc;
	fd = open(d->cfg.pid_file,
	          O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd == -1) {
		rc = -errno;
		snprintf(cause, causelen, "cannot write the pid file %s: %s",
		         d->cfg.pid_file, strerror(-rc));
		return rc;
	}
	n = snprintf(line, sizeof line, "%ld\n", (long)getpid());
	rc = write(fd, line, (size_t)n) == n ? 0 : -EIO;
	if (close(fd) != 0 && rc == 0)
		rc = -errno;
	if (rc != 0)
		snprintf(cause, causelen, "cannot write the pid file %s: %s",
		         d->cfg.pid_file, strerror(-rc));
	/* A start that fails later (fatalx) takes it away too: newsyslog
	 * must not signal a pid that another process may get. */
	else
		atexit(pid_file_remove);
	return rc;
}

/* SIGUSR1: newsyslog (or logrotate) has moved the log file away; lines
 * go to a new one at the same path from here on. */
static void
signal_usr1_cb(uv_signal_t *h, int signum)
{
	struct daemon *d = h->data;
	char cause[2048];

	(void)signum;
	if (d->cfg.log_file[0] == '\0') {
		log_info("SIGUSR1: no log file to reopen");
		return;
	}
	if (daemon_log_file(d, cause, sizeof cause) != 0) {
		log_warnx("SIGUSR1: %s; logging on where it was", cause);
		return;
	}
	log_info("SIGUSR1: log file %s reopened", d->cfg.log_file);
}

static void
signal_cb(uv_signal_t *h, int signum)
{
	struct daemon *d = h->data;
	char cause[512];
	int restart = 0;

	if (signum != SIGHUP) {
		log_info("got signal %d", signum);
		daemon_stop(d);
		/* Handles another module left open must not keep us up. */
		uv_stop(d->loop);
		return;
	}
	if (d->cfg.config_path[0] == '\0') {
		log_info("SIGHUP: no config file to re-read");
		return;
	}
	if (config_reload(&d->cfg, saved_argc, saved_argv, &restart, cause,
	                  sizeof cause) != 0) {
		log_warnx("SIGHUP: config not reloaded: %s", cause);
		return;
	}
	log_setverbose(d->cfg.verbose);
	raise_fd_limit(d); /* max_clients may have grown */
	daemon_log_bounds(d);
	log_info("SIGHUP: re-read %s%s", d->cfg.config_path,
	         restart
	             ? "; socket, db, state-dir, proc-root, interval and psi "
	               "changes need a restart"
	             : "");
}

/*
 * `brew services start stageload` without sudo loads the formula's service
 * as the user's LaunchAgent, under the same label, with the service's
 * arguments: the system socket and database, which a user cannot serve.
 * Failing there, the agent would be started again every 10 s for ever;
 * the formula has keep_alive successful_exit: false, so exiting 0 with
 * the reason ends it. launchd names the job a process runs for in
 * XPC_SERVICE_NAME. (Not yet seen on a Mac: docs/macos.md.)
 */
#define BREW_LABEL "homebrew.mxcl.stageload"

static int
brew_user_agent(void)
{
	const char *job = getenv("XPC_SERVICE_NAME");

	if (job == NULL || strcmp(job, BREW_LABEL) != 0 || geteuid() == 0)
		return 0;
	log_warnx("started by launchd as %s for uid %lu: the system daemon "
	          "needs root (sudo brew services start stageload); a "
	          "user's own daemon runs as stageloadd without brew "
	          "services. Exiting 0, so launchd does not start it again",
	          BREW_LABEL, (unsigned long)geteuid());
	return 1;
}

int
main(int argc, char **argv)
{
	struct daemon *d = &daemon_state;
	struct platform_config pc;
	char cause[2048];
	int rc;

	saved_argc = argc;
	saved_argv = argv;
	/* A client that goes away mid-write must cost us an EPIPE, not our
	 * life. */
	signal(SIGPIPE, SIG_IGN);

	config_defaults(&d->cfg, geteuid() == 0);
	rc = config_parse(&d->cfg, argc, argv, cause, sizeof cause);
	if (rc == 1)
		return 0;
	if (rc != 0) {
		fprintf(stderr, "stageloadd: %s\n(try stageloadd --help)\n",
		        cause);
		return 2;
	}
	log_init(d->cfg.foreground, d->cfg.verbose);
	if (brew_user_agent())
		return 0;
	if (daemon_log_file(d, cause, sizeof cause) != 0) {
		fprintf(stderr, "stageloadd: %s\n", cause);
		return 1;
	}

	raise_fd_limit(d);
	d->loop = uv_default_loop();
	d->started_ms = clock_wall_ms();

	memset(&pc, 0, sizeof pc);
	pc.proc_root = d->cfg.proc_root[0] != '\0' ? d->cfg.proc_root : NULL;
	pc.psi_warn = d->cfg.psi_warn;
	pc.psi_critical = d->cfg.psi_critical;
	if (platform_init(&pc, cause, sizeof cause) != 0)
		fatalx("%s", cause);

	/* Before the socket exists: a signal during the rest of the start
	 * waits for the loop, which then stops cleanly and removes it. */
	uv_signal_init(d->loop, &sig_term);
	uv_signal_init(d->loop, &sig_int);
	uv_signal_init(d->loop, &sig_hup);
	uv_signal_init(d->loop, &sig_usr1);
	sig_term.data = sig_int.data = sig_hup.data = sig_usr1.data = d;
	uv_signal_start(&sig_term, signal_cb, SIGTERM);
	uv_signal_start(&sig_int, signal_cb, SIGINT);
	uv_signal_start(&sig_hup, signal_cb, SIGHUP);
	uv_signal_start(&sig_usr1, signal_usr1_cb, SIGUSR1);

	if (default_socket_check(d, cause, sizeof cause) != 0)
		fatalx("%s", cause);
	/* Claim the socket first: a second daemon must stop before it
	 * touches the first one's database. */
	if (server_claim(d, cause, sizeof cause) != 0)
		fatalx("%s", cause);
	/* A monitor outlives the daemon; holding the socket's lock for the
	 * moments before it closes what it inherited, it would keep a
	 * daemon restarted after a crash from starting. */
	spawn_close_in_children(d->sock_lock_fd);

	/* The daemon's files are trusted before the socket exists: nobody
	 * connects to a daemon that then refuses its database. The pid
	 * file once the lock is ours: no other daemon writes it now. */
	if ((rc = daemon_paths(d, cause, sizeof cause)) != 0 ||
	    (rc = daemon_pid_file(d, cause, sizeof cause)) != 0) {
		server_release(d);
		fatalx("%s", cause);
	}
	daemon_log_bounds(d);
	daemon_job_socket(d);
	if (server_start(d, &server_hooks, cause, sizeof cause) != 0)
		fatalx("%s", cause);
	if (store_open(&d->store, d->cfg.db_path, cause, sizeof cause) != 0) {
		server_stop(d);
		server_release(d);
		fatalx("cannot open the database %s: %s", d->cfg.db_path,
		       cause);
	}
	if (notify_start(d, cause, sizeof cause) != 0 ||
	    jobs_init(d, notify_job, NULL, cause, sizeof cause) != 0) {
		server_stop(d);
		store_close(d->store);
		server_release(d);
		fatalx("cannot load jobs: %s", cause);
	}
	if (tick_start(d, cause, sizeof cause) != 0 ||
	    sampler_start(d, tick_run, cause, sizeof cause) != 0) {
		server_stop(d);
		store_close(d->store);
		server_release(d);
		fatalx("%s", cause);
	}

	log_info("stageloadd %s started: socket %s, database %s, every %lld ms",
	         STAGELOAD_VERSION, d->cfg.socket_path, d->cfg.db_path,
	         (long long)d->cfg.interval_ms);
	say_who_reaches_us(d);

	uv_run(d->loop, UV_RUN_DEFAULT);
	if (!d->stopping)
		daemon_stop(d);
	/* Let close callbacks run (clients, timers) before the loop goes;
	 * each iteration runs the ones due. */
	for (rc = 0; rc < 4; rc++)
		uv_run(d->loop, UV_RUN_NOWAIT);
	if (uv_loop_close(d->loop) != 0)
		log_debug("loop closed with handles still open");
	platform_shutdown();
	log_info("stopped");
	return 0;
}
