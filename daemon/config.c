/*
 * Options of stageloadd: built-in defaults, then the config file (--config),
 * then the command line, each overriding the one before. docs/daemon.md
 * lists every option and config key.
 */
#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon.h"
#include "proto.h"
#include "trust.h"
#include "units.h"
#include "version.h"

#define DAY_MS (24LL * 3600 * 1000)

#ifndef SL_DEFAULT_CONFIG
#define SL_DEFAULT_CONFIG "/etc/stageload.conf"
#endif

static const char usage_text[] =
    "usage: stageloadd [-fhvV] [--print-config] [--config FILE] [--socket "
    "PATH]\n"
    "                  [--db PATH]\n"
    "                  [--state-dir DIR] [--interval SECONDS]\n"
    "                  [--retention SPEC] [--proc-root DIR] [--grace TIME]\n"
    "                  [--settle TIME] [--log-file PATH] [--pid-file PATH]\n"
    "\n"
    "Samples system memory into sqlite, queues memory-hungry jobs and stops\n"
    "them when swap grows past their budget. Runs in the foreground.\n"
    "\n"
    "  --config FILE      read 'key = value' lines from FILE first; the\n"
    "                     command line overrides it (see docs/daemon.md;\n"
    "                     default: $STAGELOAD_CONFIG, else, as root,\n"
    "                     " SL_DEFAULT_CONFIG " if it exists)\n"
    "  --socket PATH      control socket (default %s)\n"
    "  --db PATH          sqlite database (default %s); it and its\n"
    "                     directories must be the daemon's own: not in a\n"
    "                     directory others can write, such as /tmp\n"
    "  --state-dir DIR    job logs and monitor status (default: the\n"
    "                     database's directory)\n"
    "  --interval SECONDS sample interval, e.g. 0.5 or 100ms (default 0.5)\n"
    "  --retention SPEC   how long each tier is kept, e.g.\n"
    "                     raw=2d,10s=14d,1m=90d,10m=2y,jobs=90d\n"
    "  --proc-root DIR    read meminfo and pressure/memory from DIR instead\n"
    "                     of /proc (Linux; for tests)\n"
    "  --grace TIME       SIGTERM to SIGKILL delay for jobs (default 10s)\n"
    "  --settle TIME      longest wait for the last admitted job to settle\n"
    "                     (default 30s)\n"
    "  -f, --foreground   timestamp log lines (a terminal, launchd's log "
    "file)\n"
    "  -v, --verbose      log debug messages\n"
    "  --log-file PATH    log to PATH (appended) instead of stderr; SIGUSR1\n"
    "                     opens it again, after a rotation\n"
    "  --pid-file PATH    write the daemon's pid to PATH while it runs\n"
    "                     (newsyslog signals it through this)\n"
    "  --print-config     print every setting as the config file and the\n"
    "                     command line leave it, with a line of help, and\n"
    "                     exit\n"
    "  -V, --version      print the version and exit\n"
    "  -h, --help         print this help and exit\n"
    "\n"
    "Examples:\n"
    "  stageloadd                          default socket and database\n"
    "  stageloadd -f --interval 0.1        sample ten times a second\n"
    "  stageloadd --socket \"$d/sl.sock\" --db \"$d/sl.db\"  "
    "with d=$(mktemp -d)\n"
    "  stageloadd --config /etc/stageload.conf\n"
    "  stageloadd --retention raw=1d,10m=5y\n"
    "\n"
    "SIGTERM or SIGINT stops the daemon and leaves running jobs alone;\n"
    "SIGHUP re-reads the config file; SIGUSR1 reopens the log file.\n";

static int fail(char *cause, size_t causelen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
fail(char *cause, size_t causelen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cause, causelen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* Copy a path, refusing ones that would be silently cut. */
static int
set_path(char *dst, size_t dstlen, const char *key, const char *v, char *cause,
         size_t causelen)
{
	if (*v == '\0')
		return fail(cause, causelen, "%s: empty path", key);
	if (strlen(v) >= dstlen)
		return fail(cause, causelen, "%s: path too long", key);
	memcpy(dst, v, strlen(v) + 1);
	return 0;
}

static int
set_duration(int64_t *dst, const char *key, const char *v, int64_t min,
             int64_t max, char *cause, size_t causelen)
{
	int64_t ms;

	if (units_parse_duration_ms(v, &ms) != 0)
		return fail(
		    cause, causelen,
		    "%s: '%s' is not a duration (e.g. 0.5, 500ms, 30s, 2d)",
		    key, v);
	if (ms < min || ms > max)
		return fail(cause, causelen,
		            "%s: '%s' is out of range (%lld ms to %lld ms)",
		            key, v, (long long)min, (long long)max);
	*dst = ms;
	return 0;
}

static int
set_long(long long *dst, const char *key, const char *v, long long min,
         long long max, char *cause, size_t causelen)
{
	char *end;
	long long n;

	errno = 0;
	n = strtoll(v, &end, 10);
	if (errno != 0 || end == v || *end != '\0' || n < min || n > max)
		return fail(cause, causelen,
		            "%s: '%s' is not an integer from %lld to %lld", key,
		            v, min, max);
	*dst = n;
	return 0;
}

static int
set_int(int *dst, const char *key, const char *v, int min, int max, char *cause,
        size_t causelen)
{
	long long n = 0;
	int rc;

	if ((rc = set_long(&n, key, v, min, max, cause, causelen)) != 0)
		return rc;
	*dst = (int)n;
	return 0;
}

int
config_group_name_ok(const char *name)
{
	size_t i;

	for (i = 0; name[i] != '\0'; i++)
		if (!isalnum((unsigned char)name[i]) && name[i] != '_' &&
		    name[i] != '-')
			return 0;
	return i > 0 && i <= CONFIG_GROUP_NAME_MAX;
}

int
config_group_max_running(const struct config *cfg, const char *name)
{
	int i;

	if (name == NULL)
		return 0;
	for (i = 0; i < cfg->ngroups; i++)
		if (strcmp(cfg->groups[i].name, name) == 0)
			return cfg->groups[i].max_running;
	return 0;
}

/* group.NAME.max_running = N */
static int
set_group_limit(struct config *cfg, const char *key, const char *v, char *cause,
                size_t causelen)
{
	static const char suffix[] = ".max_running";
	const char *name = key + strlen("group.");
	size_t len = strlen(name), slen = sizeof suffix - 1;
	char buf[CONFIG_GROUP_NAME_MAX + 1];
	int i, n;

	if (len <= slen || strcmp(name + len - slen, suffix) != 0)
		return fail(cause, causelen,
		            "%s: unknown key (a group's key is "
		            "group.NAME.max_running)",
		            key);
	len -= slen;
	if (len > CONFIG_GROUP_NAME_MAX)
		return fail(cause, causelen,
		            "%s: a group's name is at most %d characters", key,
		            CONFIG_GROUP_NAME_MAX);
	memcpy(buf, name, len);
	buf[len] = '\0';
	if (!config_group_name_ok(buf))
		return fail(cause, causelen,
		            "%s: a group's name is letters, digits, _ and -",
		            key);
	if (set_int(&n, key, v, 0, 1000000, cause, causelen) != 0)
		return -EINVAL;
	for (i = 0; i < cfg->ngroups; i++)
		if (strcmp(cfg->groups[i].name, buf) == 0)
			break;
	if (i == cfg->ngroups) {
		if (cfg->ngroups == CONFIG_MAX_GROUPS)
			return fail(cause, causelen,
			            "%s: at most %d groups have a limit", key,
			            CONFIG_MAX_GROUPS);
		cfg->ngroups++;
		memcpy(cfg->groups[i].name, buf, len + 1);
	}
	cfg->groups[i].max_running = n;
	return 0;
}

static int
set_double(double *dst, const char *key, const char *v, double min, double max,
           char *cause, size_t causelen)
{
	char *end;
	double x;

	errno = 0;
	x = strtod(v, &end);
	if (errno != 0 || end == v || *end != '\0' || !(x >= min) || x > max)
		return fail(cause, causelen,
		            "%s: '%s' is not a number from "
		            "%g to %g",
		            key, v, min, max);
	*dst = x;
	return 0;
}

static int
set_size(size_t *dst, const char *key, const char *v, uint64_t min,
         uint64_t max, char *cause, size_t causelen)
{
	uint64_t n;

	if (units_parse_size(v, &n) != 0 || n < min || n > max)
		return fail(cause, causelen,
		            "%s: '%s' is not a size from "
		            "%llu to %llu bytes (e.g. 4M)",
		            key, v, (unsigned long long)min,
		            (unsigned long long)max);
	*dst = (size_t)n;
	return 0;
}

/* A group name or number; empty: none. */
static int
set_group(struct config *cfg, const char *key, const char *v, char *cause,
          size_t causelen)
{
	struct group gr, *res = NULL;
	char buf[8192], *end;
	unsigned long long n;

	if (*v == '\0') {
		cfg->admin_group_set = 0;
		return 0;
	}
	if (isdigit((unsigned char)*v)) {
		errno = 0;
		n = strtoull(v, &end, 10);
		if (errno != 0 || *end != '\0' || n >= (gid_t)-1 ||
		    (unsigned long long)(gid_t)n != n)
			return fail(cause, causelen,
			            "%s: '%s' is not a group name or number",
			            key, v);
		cfg->admin_gid = (gid_t)n;
		cfg->admin_group_set = 1;
		return 0;
	}
	if (getgrnam_r(v, &gr, buf, sizeof buf, &res) != 0 || res == NULL)
		return fail(cause, causelen,
		            "%s: no group '%s' in the group database", key, v);
	cfg->admin_gid = gr.gr_gid;
	cfg->admin_group_set = 1;
	return 0;
}

/* "raw=2d,10s=14d,1m=90d,10m=2y,jobs=90d"; tiers not named keep their
 * current value. */
static int
set_retention(struct store_retention *r, const char *v, char *cause,
              size_t causelen)
{
	char buf[256], *item, *save = NULL, *eq;
	int64_t *dst;
	int rc;

	if (strlen(v) >= sizeof buf)
		return fail(cause, causelen, "retention: too long");
	memcpy(buf, v, strlen(v) + 1);
	for (item = strtok_r(buf, ",", &save); item != NULL;
	     item = strtok_r(NULL, ",", &save)) {
		if ((eq = strchr(item, '=')) == NULL)
			return fail(cause, causelen,
			            "retention: '%s' is not "
			            "TIER=DURATION (e.g. raw=2d)",
			            item);
		*eq = '\0';
		if (strcmp(item, "raw") == 0)
			dst = &r->raw_ms;
		else if (strcmp(item, "10s") == 0)
			dst = &r->t10s_ms;
		else if (strcmp(item, "1m") == 0)
			dst = &r->t1m_ms;
		else if (strcmp(item, "10m") == 0)
			dst = &r->t10m_ms;
		else if (strcmp(item, "jobs") == 0)
			dst = &r->jobs_ms;
		else
			return fail(cause, causelen,
			            "retention: unknown tier "
			            "'%s' (raw, 10s, 1m, 10m, jobs)",
			            item);
		rc = set_duration(dst, "retention", eq + 1, 60 * 1000,
		                  100 * 365 * DAY_MS, cause, causelen);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/*
 * The settings, one row each: name (the config key; the long option is
 * the same with '-'), kind, member, range, default, whether SIGHUP applies
 * it, where info reports it, and one line of help. The parser, the
 * defaults, SIGHUP's reload, info's "defaults" and "limits", --print-config
 * and the list in stageload.conf(5) and docs/daemon.md (compared by
 * tests/config-table.sh) all come from here.
 */
enum setting_kind {
	SET_PATH,     /* a char array */
	SET_DURATION, /* int64_t ms; min, max in ms */
	SET_INT,      /* int */
	SET_DOUBLE,   /* double */
	SET_SIZE,     /* size_t or uint64_t (len says which), bytes */
	SET_SPECIAL,  /* its own set and print */
};

struct setting {
	const char *name;
	enum setting_kind kind;
	size_t off, len;   /* the member */
	size_t off2, len2; /* a second member it sets (len2 0: none) */
	double min, max;
	const char *def;  /* parsed as the file's value would be; NULL: code */
	int reload;       /* SIGHUP applies it; else a change needs a restart */
	const char *info; /* "defaults.KEY" or "limits.KEY" in info, or NULL */
	int (*set)(struct config *, const struct setting *, const char *key,
	           const char *v, char *cause, size_t causelen);
	void (*print)(const struct config *, char *buf, size_t len);
	const char *help;
};

#define M(m) offsetof(struct config, m), sizeof(((struct config *)0)->m)
#define NO2 0, 0
#define GIB_D 1073741824.0
#define TIB_D (1024.0 * GIB_D)

static int special_db(struct config *, const struct setting *, const char *,
                      const char *, char *, size_t);
static int special_retention(struct config *, const struct setting *,
                             const char *, const char *, char *, size_t);
static int special_admin_group(struct config *, const struct setting *,
                               const char *, const char *, char *, size_t);
static int special_min_free_disk(struct config *, const struct setting *,
                                 const char *, const char *, char *, size_t);
static int special_fast_interval(struct config *, const struct setting *,
                                 const char *, const char *, char *, size_t);
static void print_retention(const struct config *, char *, size_t);
static void print_admin_group(const struct config *, char *, size_t);
static void print_min_free_disk(const struct config *, char *, size_t);

static const struct setting settings[] = {
    /* paths: fixed for the daemon's life */
    {"socket", SET_PATH, M(socket_path), NO2, 0, 0, NULL, 0, NULL, NULL, NULL,
     "the control socket"},
    {"db", SET_PATH, M(db_path), NO2, 0, 0, NULL, 0, NULL, special_db, NULL,
     "the sqlite database, in a directory only the daemon can write"},
    {"state_dir", SET_PATH, M(state_dir), NO2, 0, 0, NULL, 0, NULL, NULL, NULL,
     "job logs and monitor status (default: the database's directory)"},
    {"log_dir", SET_PATH, M(log_dir), NO2, 0, 0, NULL, 0, NULL, NULL, NULL,
     "job logs, e.g. on another file system (default: state_dir/jobs)"},
    {"log_file", SET_PATH, M(log_file), NO2, 0, 0, NULL, 0, NULL, NULL, NULL,
     "log here (appended) instead of stderr; SIGUSR1 reopens it"},
    {"pid_file", SET_PATH, M(pid_file), NO2, 0, 0, NULL, 0, NULL, NULL, NULL,
     "the daemon's pid, while it runs"},
    {"proc_root", SET_PATH, M(proc_root), NO2, 0, 0, NULL, 0, NULL, NULL, NULL,
     "read meminfo and pressure from here, not /proc (tests)"},
    /* sampling */
    {"interval", SET_DURATION, M(interval_ms), NO2, 10, 3600e3, "500ms", 0,
     NULL, NULL, NULL, "the sample interval"},
    {"fast_interval", SET_DURATION, M(fast_interval_ms), NO2, 0, 3600e3,
     "100ms", 1, NULL, special_fast_interval, NULL,
     "the interval while a job nears its budget or starts (0: never)"},
    {"fast_swap", SET_DOUBLE, M(fast_swap_pct), NO2, 0, 100, "25", 1, NULL,
     NULL, NULL, "% of a budget past which a job's growth samples fast"},
    {"psi_warn", SET_DOUBLE, M(psi_warn), NO2, 0, 100, "10", 0, NULL, NULL,
     NULL, "PSI some avg10 at which pressure is warn (Linux)"},
    {"psi_critical", SET_DOUBLE, M(psi_critical), NO2, 0, 100, "40", 0, NULL,
     NULL, NULL, "PSI some avg10 at which pressure is critical (Linux)"},
    {"retention", SET_SPECIAL, M(retention), NO2, 0, 0,
     "raw=2d,10s=14d,1m=90d,10m=2y,jobs=90d", 1, NULL, special_retention,
     print_retention, "how long each tier of history and ended jobs are kept"},
    /* job defaults and admission */
    {"wait_free", SET_DOUBLE, M(default_wait_free_pct), NO2, 0, 100, "0", 1,
     "defaults.wait_free_pct", NULL, NULL,
     "free % a job waits for when it does not say"},
    {"swap_budget", SET_SIZE, M(default_swap_budget_bytes), NO2, 0,
     18446744073709551615.0, "0", 1, "defaults.swap_budget_bytes", NULL, NULL,
     "swap growth a job may cause when it does not say (0: none)"},
    {"max_running", SET_INT, M(max_running), NO2, 0, 1000000, "0", 1,
     "defaults.max_running", NULL, NULL,
     "jobs holding memory at once (0: no limit)"},
    {"grace", SET_DURATION, M(grace_ms), NO2, 0, 3600e3, "10s", 1,
     "defaults.grace_ms", NULL, NULL, "SIGTERM to SIGKILL"},
    {"settle", SET_DURATION, M(settle_ms), NO2, 0, 86400e3, "30s", 1,
     "defaults.settle_ms", NULL, NULL,
     "longest wait for the last admitted job to settle (0: none)"},
    {"settle_growth", SET_DOUBLE, M(settle_growth_pct), NO2, 0, 100, "1", 1,
     "defaults.settle_growth_pct", NULL, NULL,
     "growth % below which a job has settled"},
    {"settle_samples", SET_INT, M(settle_samples), NO2, 1,
     CONFIG_SETTLE_SAMPLES_MAX, "3", 1, "defaults.settle_samples", NULL, NULL,
     "normal intervals the settle growth is judged over"},
    {"admin_group", SET_SPECIAL, M(admin_gid), M(admin_group_set), 0, 0, "", 1,
     NULL, special_admin_group, print_admin_group,
     "a group whose members are trusted as root in the queue (empty: none)"},
    {"max_wait_free", SET_DOUBLE, M(max_wait_free_pct), NO2, 0, 100, "95", 1,
     "defaults.max_wait_free_pct", NULL, NULL,
     "highest wait_free others may ask; cap of their reservations, % of total"},
    {"hol_bound", SET_DURATION, M(hol_bound_ms), NO2, 0, 365 * 86400e3, "600s",
     1, "defaults.hol_bound_ms", NULL, NULL,
     "how long an unprivileged head (or exclusive job) holds others back"},
    {"learn", SET_INT, M(learn), NO2, 0, 1, "1", 1, NULL, NULL, NULL,
     "named jobs reserve their learned peak (1) or not (0)"},
    {"learn_runs", SET_INT, M(learn_runs), NO2, 1, CONFIG_LEARN_RUNS_MAX, "5",
     1, NULL, NULL, NULL, "the last runs of a name that are learned from"},
    {"on_end_timeout", SET_DURATION, M(on_end_timeout_ms), NO2, 1000, 86400e3,
     "60s", 1, NULL, NULL, NULL, "how long an on-end command may run"},
    {"max_on_end_per_uid", SET_INT, M(max_on_end_per_uid), NO2, 1, 1000, "4", 1,
     NULL, NULL, NULL, "on-end commands of one user at once"},
    {"keep_awake", SET_INT, M(keep_awake), NO2, 0, 1, "1", 1, NULL, NULL, NULL,
     "hold off idle sleep while a job holds memory (macOS)"},
    {"keep_awake_queue", SET_DURATION, M(keep_awake_queue_ms), NO2, 0,
     365 * 86400e3, "12h", 1, NULL, NULL, NULL,
     "and while queued jobs could start, for this long since an admission"},
    /* limits */
    {"max_line", SET_SIZE, M(max_line_bytes), NO2, 1024, GIB_D, "4M", 1,
     "limits.max_line_bytes", NULL, NULL, "longest request line"},
    {"max_clients", SET_INT, M(max_clients), NO2, 1, 1000000, "4096", 1,
     "limits.max_clients", NULL, NULL, "connections in all"},
    {"max_clients_per_uid", SET_INT, M(max_clients_per_uid), NO2, 1, 1000000,
     "256", 1, "limits.max_clients_per_uid", NULL, NULL,
     "connections of one user"},
    {"max_unread", SET_SIZE, M(max_unread_bytes), NO2, 65536, GIB_D, "16M", 1,
     "limits.max_unread_bytes", NULL, NULL, "output queued for one connection"},
    {"max_unread_per_uid", SET_SIZE, M(max_unread_bytes_per_uid), NO2, 65536,
     TIB_D, "16M", 1, "limits.max_unread_bytes_per_uid", NULL, NULL,
     "output queued for one user's connections"},
    {"max_input_per_uid", SET_SIZE, M(max_input_bytes_per_uid), NO2, 65536,
     TIB_D, "8M", 1, "limits.max_input_bytes_per_uid", NULL, NULL,
     "unfinished requests of one user's connections"},
    {"hello_timeout", SET_DURATION, M(hello_timeout_ms), NO2, 10, 3600e3, "10s",
     1, "limits.hello_timeout_ms", NULL, NULL,
     "time a connection has to say hello"},
    {"max_queued_per_uid", SET_INT, M(max_queued_per_uid), NO2, 1, 1000000,
     "1000", 1, "limits.max_queued_per_uid", NULL, NULL,
     "queued or running jobs of one user"},
    {"max_deferred_per_uid", SET_INT, M(max_deferred_per_uid), NO2, 1, 1000000,
     "4096", 1, "limits.max_deferred_per_uid", NULL, NULL,
     "wait and logs answers owed to one user"},
    {"max_meters_per_uid", SET_INT, M(max_meters_per_uid), NO2, 1, 100000, "16",
     1, "limits.max_meters_per_uid", NULL, NULL,
     "process trees one user meters"},
    {"max_argv", SET_SIZE, M(max_argv_bytes), NO2, 1024, GIB_D, "256K", 1,
     "limits.max_argv_bytes", NULL, NULL, "a job's argv"},
    {"max_env", SET_SIZE, M(max_env_bytes), NO2, 1024, GIB_D, "1M", 1,
     "limits.max_env_bytes", NULL, NULL, "a job's environment"},
    {"max_stored_bytes_per_uid", SET_SIZE, M(max_stored_bytes_per_uid), NO2,
     65536, 1024.0 * TIB_D, "256M", 1, "limits.max_stored_bytes_per_uid", NULL,
     NULL, "what one user's jobs hold in the database"},
    {"max_ended_jobs_per_uid", SET_INT, M(max_ended_jobs_per_uid), NO2, 0,
     100000000, "10000", 1, "limits.max_ended_jobs_per_uid", NULL, NULL,
     "ended jobs of one user kept"},
    {"max_log_bytes", SET_SIZE, M(max_log_bytes), NO2, 65536, 1024.0 * TIB_D,
     "1G", 1, "limits.max_log_bytes", NULL, NULL,
     "a detached job's log (its tail is kept)"},
    {"max_log_bytes_per_uid", SET_SIZE, M(max_log_bytes_per_uid), NO2, 65536,
     1024.0 * TIB_D, "4G", 1, "limits.max_log_bytes_per_uid", NULL, NULL,
     "one user's job logs together (then their output is dropped)"},
    {"min_free_disk", SET_SPECIAL, M(min_free_disk_bytes),
     M(min_free_disk_auto), 0, 1024.0 * TIB_D, "auto", 1,
     "limits.min_free_disk", special_min_free_disk, print_min_free_disk,
     "free space below which only root's submits are taken (auto, or a size)"},
    {"verbose", SET_INT, M(verbose), NO2, 0, 9, NULL, 1, NULL, NULL, NULL,
     "log debug messages (1)"},
};

#define NSETTINGS (sizeof settings / sizeof settings[0])

/* Sizes and durations exactly, in the largest unit that divides them. */
static void
print_exact(uint64_t n, int duration, char *buf, size_t len)
{
	static const struct {
		uint64_t mul;
		const char *unit;
	} sizes[] = {{1ull << 40, "T"},
	             {1ull << 30, "G"},
	             {1ull << 20, "M"},
	             {1ull << 10, "K"}},
	  times[] = {{604800000, "w"},
	             {86400000, "d"},
	             {3600000, "h"},
	             {60000, "m"},
	             {1000, "s"}};
	size_t i, k = duration ? sizeof times / sizeof times[0]
	                       : sizeof sizes / sizeof sizes[0];

	for (i = 0; i < k && n != 0; i++) {
		uint64_t mul = duration ? times[i].mul : sizes[i].mul;
		if (n % mul == 0) {
			snprintf(buf, len, "%llu%s",
			         (unsigned long long)(n / mul),
			         duration ? times[i].unit : sizes[i].unit);
			return;
		}
	}
	snprintf(buf, len, "%llu%s", (unsigned long long)n,
	         duration ? "ms" : "");
}

static void *
member(struct config *cfg, size_t off)
{
	return (char *)cfg + off;
}

static const void *
cmember(const struct config *cfg, size_t off)
{
	return (const char *)cfg + off;
}

static int
setting_set(struct config *cfg, const struct setting *s, const char *key,
            const char *v, char *cause, size_t causelen)
{
	uint64_t n = 0;
	size_t z = 0;
	int rc;

	if (s->set != NULL)
		return s->set(cfg, s, key, v, cause, causelen);
	switch (s->kind) {
	case SET_PATH:
		return set_path(member(cfg, s->off), s->len, key, v, cause,
		                causelen);
	case SET_DURATION:
		return set_duration(member(cfg, s->off), key, v,
		                    (int64_t)s->min, (int64_t)s->max, cause,
		                    causelen);
	case SET_INT:
		return set_int(member(cfg, s->off), key, v, (int)s->min,
		               (int)s->max, cause, causelen);
	case SET_DOUBLE:
		return set_double(member(cfg, s->off), key, v, s->min, s->max,
		                  cause, causelen);
	case SET_SIZE:
		if ((rc = set_size(&z, key, v, (uint64_t)s->min,
		                   s->max >= 18446744073709551615.0
		                       ? UINT64_MAX
		                       : (uint64_t)s->max,
		                   cause, causelen)) != 0)
			return rc;
		n = z;
		if (s->len == sizeof(uint64_t))
			memcpy(member(cfg, s->off), &n, sizeof n);
		else
			memcpy(member(cfg, s->off), &z, sizeof z);
		return 0;
	case SET_SPECIAL:
		break;
	}
	return fail(cause, causelen, "%s: no parser", key);
}

/* The value as the config file would give it, into buf. */
static void
setting_print(const struct config *cfg, const struct setting *s, char *buf,
              size_t len)
{
	const void *p = cmember(cfg, s->off);
	uint64_t n;

	if (s->print != NULL) {
		s->print(cfg, buf, len);
		return;
	}
	switch (s->kind) {
	case SET_PATH:
		snprintf(buf, len, "%s", (const char *)p);
		break;
	case SET_SPECIAL: /* those have their own printer */
		buf[0] = '\0';
		break;
	case SET_DURATION:
		print_exact((uint64_t) * (const int64_t *)p, 1, buf, len);
		break;
	case SET_INT:
		snprintf(buf, len, "%d", *(const int *)p);
		break;
	case SET_DOUBLE:
		snprintf(buf, len, "%g", *(const double *)p);
		break;
	case SET_SIZE:
		if (s->len == sizeof(uint64_t))
			memcpy(&n, p, sizeof n);
		else
			n = *(const size_t *)p;
		print_exact(n, 0, buf, len);
		break;
	}
}

static int
special_db(struct config *cfg, const struct setting *s, const char *key,
           const char *v, char *cause, size_t causelen)
{
	/* sqlite would take these as a URI (naming any file, which the
	 * daemon's checks of the path would not see) or as an in-memory
	 * database. */
	if (strncmp(v, "file:", 5) == 0 || v[0] == ':')
		return fail(cause, causelen,
		            "%s: '%s' is not a plain path (sqlite would "
		            "read it as a URI or a special name); write "
		            "./%s for a file named so",
		            key, v, v);
	return set_path(member(cfg, s->off), s->len, key, v, cause, causelen);
}

static int
special_retention(struct config *cfg, const struct setting *s, const char *key,
                  const char *v, char *cause, size_t causelen)
{
	(void)s;
	(void)key;
	return set_retention(&cfg->retention, v, cause, causelen);
}

static int
special_admin_group(struct config *cfg, const struct setting *s,
                    const char *key, const char *v, char *cause,
                    size_t causelen)
{
	(void)s;
	return set_group(cfg, key, v, cause, causelen);
}

static int
special_min_free_disk(struct config *cfg, const struct setting *s,
                      const char *key, const char *v, char *cause,
                      size_t causelen)
{
	size_t b = 0;
	int rc;

	if (strcmp(v, "auto") == 0) {
		cfg->min_free_disk_auto = 1;
		cfg->min_free_disk_bytes = 0;
		return 0;
	}
	if ((rc = set_size(&b, key, v, 0, (uint64_t)s->max, cause, causelen)) !=
	    0)
		return rc;
	cfg->min_free_disk_auto = 0;
	cfg->min_free_disk_bytes = b;
	return 0;
}

static int
special_fast_interval(struct config *cfg, const struct setting *s,
                      const char *key, const char *v, char *cause,
                      size_t causelen)
{
	int64_t ms = 0;
	int rc;

	if ((rc = set_duration(&ms, key, v, (int64_t)s->min, (int64_t)s->max,
	                       cause, causelen)) != 0)
		return rc;
	/* As fast as the interval may be, or 0: never fast. */
	if (ms > 0 && ms < 10)
		return fail(cause, causelen,
		            "%s: '%s' is below 10ms (0: never fast)", key, v);
	cfg->fast_interval_ms = ms;
	return 0;
}

static void
print_retention(const struct config *cfg, char *buf, size_t len)
{
	const struct store_retention *r = &cfg->retention;

	char t[5][32];

	print_exact((uint64_t)r->raw_ms, 1, t[0], sizeof t[0]);
	print_exact((uint64_t)r->t10s_ms, 1, t[1], sizeof t[1]);
	print_exact((uint64_t)r->t1m_ms, 1, t[2], sizeof t[2]);
	print_exact((uint64_t)r->t10m_ms, 1, t[3], sizeof t[3]);
	print_exact((uint64_t)r->jobs_ms, 1, t[4], sizeof t[4]);
	snprintf(buf, len, "raw=%s,10s=%s,1m=%s,10m=%s,jobs=%s", t[0], t[1],
	         t[2], t[3], t[4]);
}

static void
print_admin_group(const struct config *cfg, char *buf, size_t len)
{
	if (cfg->admin_group_set)
		snprintf(buf, len, "%u", (unsigned)cfg->admin_gid);
	else
		snprintf(buf, len, "%s", "");
}

static void
print_min_free_disk(const struct config *cfg, char *buf, size_t len)
{
	if (cfg->min_free_disk_auto)
		snprintf(buf, len, "auto");
	else
		print_exact(cfg->min_free_disk_bytes, 0, buf, len);
}

/*
 * One setting, from the command line or the config file. Config keys are
 * the long option names with '_' or '-'; a few limits exist only as keys.
 */
static int
config_set(struct config *cfg, const char *key, const char *v, char *cause,
           size_t causelen)
{
	char k[64];
	size_t i;

	for (i = 0; key[i] != '\0' && i < sizeof k - 1; i++)
		k[i] = key[i] == '-' ? '_' : key[i];
	k[i] = '\0';

	if (strncmp(key, "group.", 6) == 0)
		return set_group_limit(cfg, key, v, cause, causelen);
	for (i = 0; i < NSETTINGS; i++)
		if (strcmp(k, settings[i].name) == 0)
			return setting_set(cfg, &settings[i], key, v, cause,
			                   causelen);
	return fail(cause, causelen, "unknown option '%s'", key);
}

void
config_print(const struct config *cfg, FILE *f)
{
	char buf[1200];
	size_t i;
	int g;

	for (i = 0; i < NSETTINGS; i++) {
		setting_print(cfg, &settings[i], buf, sizeof buf);
		/* An empty path is no value: a file could not say it. */
		fprintf(f, "# %s%s\n%s%s = %s\n", settings[i].help,
		        settings[i].reload ? "" : " (a change needs a restart)",
		        settings[i].kind == SET_PATH && buf[0] == '\0' ? "#"
		                                                       : "",
		        settings[i].name, buf);
	}
	for (g = 0; g < cfg->ngroups; g++)
		fprintf(f, "group.%s.max_running = %d\n", cfg->groups[g].name,
		        cfg->groups[g].max_running);
}

int
config_info(const struct config *cfg, cJSON *defaults, cJSON *limits)
{
	const struct setting *s;
	const void *p;
	uint64_t n;
	cJSON *o;
	size_t i;

	for (i = 0; i < NSETTINGS; i++) {
		s = &settings[i];
		if (s->info == NULL)
			continue;
		o = strncmp(s->info, "limits.", 7) == 0 ? limits : defaults;
		p = cmember(cfg, s->off);
		const char *key = strchr(s->info, '.') + 1;
		if (s->print == print_min_free_disk &&
		    cfg->min_free_disk_auto) {
			if (cJSON_AddStringToObject(o, key, "auto") == NULL)
				return -1;
			continue;
		}
		switch (s->kind) {
		case SET_DOUBLE:
			if (cJSON_AddNumberToObject(o, key,
			                            *(const double *)p) == NULL)
				return -1;
			continue;
		case SET_INT:
			n = (uint64_t)(int64_t) * (const int *)p;
			break;
		case SET_DURATION:
			n = (uint64_t) * (const int64_t *)p;
			break;
		case SET_SIZE:
		case SET_SPECIAL:
			if (s->len == sizeof(uint64_t))
				memcpy(&n, p, sizeof n);
			else
				n = *(const size_t *)p;
			break;
		default:
			continue;
		}
		if (proto_add_int(o, key, (int64_t)n) == NULL)
			return -1;
	}
	return 0;
}

static char *
trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

/* "key = value" per line; '#' starts a comment; blank lines are fine. */
static int
config_load_file(struct config *cfg, const char *path, char *cause,
                 size_t causelen)
{
	char line[2048], sub[256], *k, *v, *eq, *hash;
	struct stat st;
	FILE *f;
	int lineno = 0, rc = 0;
	char why[512];

	/* Root's daemon acts on what the file says (paths, limits): only a
	 * file nobody else could have written or replaced, as for the
	 * database (docs/security.md, "Files the daemon trusts"). Another
	 * user's daemon can be told nothing by its own config that it could
	 * not do itself. */
	if (geteuid() == 0 &&
	    trust_path_check(path, 0, TRUST_FILE, why, sizeof why) != 0)
		return fail(cause, causelen, "refusing config file %s: %s",
		            path, why);
	if ((f = fopen(path, "r")) == NULL)
		return fail(cause, causelen, "%s: %s", path, strerror(errno));
	/* A directory opens, then fails to read: that is no empty file. */
	if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
		fclose(f);
		return fail(cause, causelen, "%s: not a regular file", path);
	}
	while (fgets(line, sizeof line, f) != NULL) {
		lineno++;
		if (strchr(line, '\n') == NULL && !feof(f)) {
			rc = fail(cause, causelen, "%s:%d: line too long", path,
			          lineno);
			break;
		}
		if ((hash = strchr(line, '#')) != NULL)
			*hash = '\0';
		k = trim(line);
		if (*k == '\0')
			continue;
		if ((eq = strchr(k, '=')) == NULL) {
			rc = fail(cause, causelen,
			          "%s:%d: expected "
			          "'key = value'",
			          path, lineno);
			break;
		}
		*eq = '\0';
		k = trim(k);
		v = trim(eq + 1);
		if ((rc = config_set(cfg, k, v, sub, sizeof sub)) != 0) {
			fail(cause, causelen, "%s:%d: %s", path, lineno, sub);
			break;
		}
	}
	/* A read error is not the end of the file: settings after it would
	 * silently fall back to their defaults. */
	if (rc == 0 && ferror(f))
		rc = fail(cause, causelen, "%s: %s", path, strerror(errno));
	fclose(f);
	return rc;
}

/* The state directory follows the database unless it was given. */
static void
config_derive(struct config *cfg)
{
	char *slash;

	if (cfg->state_dir[0] != '\0')
		return;
	memcpy(cfg->state_dir, cfg->db_path, sizeof cfg->state_dir);
	if ((slash = strrchr(cfg->state_dir, '/')) == NULL)
		snprintf(cfg->state_dir, sizeof cfg->state_dir, ".");
	else if (slash == cfg->state_dir)
		slash[1] = '\0';
	else
		*slash = '\0';
}

void
config_defaults(struct config *cfg, int system)
{
	char cause[256];
	size_t i;

	memset(cfg, 0, sizeof *cfg);
	cfg->system = system;
	/* Left empty when they cannot be made (no home directory, a path
	 * too long): config_parse then asks for the option, rather than
	 * putting the database wherever the daemon was started. */
	if (platform_default_socket(system, cfg->socket_path,
	                            sizeof cfg->socket_path) != 0)
		cfg->socket_path[0] = '\0';
	if (platform_default_db(system, cfg->db_path, sizeof cfg->db_path) != 0)
		cfg->db_path[0] = '\0';
	for (i = 0; i < NSETTINGS; i++) {
		/* The table's defaults are valid values: a failure here is a
		 * bug in the table, caught by every test. */
		if (settings[i].def != NULL &&
		    setting_set(cfg, &settings[i], settings[i].name,
		                settings[i].def, cause, sizeof cause) != 0)
			abort();
	}
}

struct option_def {
	const char *name; /* long name without "--" */
	char shortname;
	int has_arg;
};

static const struct option_def options[] = {
    {"config", 0, 1},       {"socket", 0, 1},       {"db", 0, 1},
    {"state-dir", 0, 1},    {"interval", 0, 1},     {"retention", 0, 1},
    {"proc-root", 0, 1},    {"grace", 0, 1},        {"settle", 0, 1},
    {"foreground", 'f', 0}, {"verbose", 'v', 0},    {"version", 'V', 0},
    {"help", 'h', 0},       {"print-config", 0, 0}, {"log-file", 0, 1},
    {"pid-file", 0, 1},
};

/*
 * One pass over argv. With apply == 0 only --config, --help and --version
 * are acted on (so the file can be read before the command line overrides
 * it); with apply == 1 every other option is.
 */
static int
config_argv(struct config *cfg, int argc, char **argv, int apply, int *action,
            char *cause, size_t causelen)
{
	const struct option_def *o;
	const char *arg, *val;
	char name[64];
	size_t i, n;
	int ai, rc;

	for (ai = 1; ai < argc; ai++) {
		arg = argv[ai];
		val = NULL;
		o = NULL;
		if (strncmp(arg, "--", 2) == 0 && arg[2] != '\0') {
			const char *eq = strchr(arg + 2, '=');
			n = eq != NULL ? (size_t)(eq - arg - 2)
			               : strlen(arg + 2);
			if (n >= sizeof name)
				n = sizeof name - 1;
			memcpy(name, arg + 2, n);
			name[n] = '\0';
			for (i = 0; i < sizeof options / sizeof options[0]; i++)
				if (strcmp(options[i].name, name) == 0)
					o = &options[i];
			if (o == NULL)
				return fail(cause, causelen,
				            "unknown option '%s'", arg);
			if (eq != NULL) {
				if (!o->has_arg)
					return fail(cause, causelen,
					            "option "
					            "'--%s' takes no value",
					            o->name);
				val = eq + 1;
			}
		} else if (arg[0] == '-' && arg[1] != '\0' && arg[1] != '-') {
			/* Bundled short flags: -fv. */
			for (i = 1; arg[i] != '\0'; i++) {
				switch (arg[i]) {
				case 'f':
					if (apply)
						cfg->foreground = 1;
					break;
				case 'v':
					if (apply)
						cfg->verbose++;
					break;
				case 'h':
					*action = 'h';
					break;
				case 'V':
					*action = 'V';
					break;
				default:
					return fail(cause, causelen,
					            "unknown option '-%c'",
					            arg[i]);
				}
			}
			continue;
		} else {
			return fail(cause, causelen, "unexpected argument '%s'",
			            arg);
		}

		if (o->has_arg && val == NULL) {
			if (ai + 1 >= argc)
				return fail(cause, causelen,
				            "option '--%s' needs a value",
				            o->name);
			val = argv[++ai];
		}
		if (strcmp(o->name, "help") == 0)
			*action = 'h';
		else if (strcmp(o->name, "print-config") == 0)
			*action = 'p';
		else if (strcmp(o->name, "version") == 0)
			*action = 'V';
		else if (strcmp(o->name, "config") == 0) {
			if (!apply &&
			    (rc = set_path(cfg->config_path,
			                   sizeof cfg->config_path, "--config",
			                   val, cause, causelen)) != 0)
				return rc;
		} else if (!apply)
			continue;
		else if (strcmp(o->name, "foreground") == 0)
			cfg->foreground = 1;
		else if (strcmp(o->name, "verbose") == 0)
			cfg->verbose++;
		else if ((rc = config_set(cfg, o->name, val, cause,
		                          causelen)) != 0)
			return rc;
	}
	return 0;
}

/*
 * Without --config: $STAGELOAD_CONFIG when it is set ("" for none: tests,
 * and anyone who wants no file), else, for a system (root) daemon,
 * SL_DEFAULT_CONFIG (/etc/stageload.conf) when it exists. A per-user
 * daemon reads no file unless told: the system's file names the system
 * daemon's socket and database. The file is checked as --config's is.
 */
static int
config_default_path(struct config *cfg, char *cause, size_t causelen)
{
	const char *env = getenv("STAGELOAD_CONFIG");
	const char *path = env != NULL ? env : SL_DEFAULT_CONFIG;
	struct stat st;

	if (path[0] == '\0' || (env == NULL && !cfg->system))
		return 0;
	if (env == NULL && lstat(path, &st) != 0 && errno == ENOENT)
		return 0;
	return set_path(cfg->config_path, sizeof cfg->config_path,
	                "STAGELOAD_CONFIG", path, cause, causelen);
}

int
config_parse(struct config *cfg, int argc, char **argv, char *cause,
             size_t causelen)
{
	int action = 0, rc;

	if ((rc = config_argv(cfg, argc, argv, 0, &action, cause, causelen)) !=
	    0)
		return rc;
	if (action == 'h') {
		printf(usage_text,
		       cfg->socket_path[0] ? cfg->socket_path : "none",
		       cfg->db_path[0] ? cfg->db_path : "none");
		return 1;
	}
	if (action == 'V') {
		printf("stageloadd %s (%s, protocol %d)\n", STAGELOAD_VERSION,
		       STAGELOAD_OS, PROTO_VERSION);
		return 1;
	}
	if (cfg->config_path[0] == '\0' &&
	    (rc = config_default_path(cfg, cause, causelen)) != 0)
		return rc;
	if (cfg->config_path[0] != '\0' &&
	    (rc = config_load_file(cfg, cfg->config_path, cause, causelen)) !=
	        0)
		return rc;
	if ((rc = config_argv(cfg, argc, argv, 1, &action, cause, causelen)) !=
	    0)
		return rc;
	if (cfg->psi_warn > cfg->psi_critical)
		return fail(cause, causelen,
		            "psi_warn (%g) is above "
		            "psi_critical (%g)",
		            cfg->psi_warn, cfg->psi_critical);
	if (cfg->default_wait_free_pct > cfg->max_wait_free_pct)
		return fail(cause, causelen,
		            "wait_free (%g) is above max_wait_free (%g)",
		            cfg->default_wait_free_pct, cfg->max_wait_free_pct);
	if (cfg->db_path[0] == '\0')
		return fail(cause, causelen,
		            "no default database path (no home directory, or "
		            "a path too long): give --db, or set "
		            "XDG_STATE_HOME or HOME");
	if (cfg->socket_path[0] == '\0')
		return fail(cause, causelen,
		            "no default socket path (a path too long): give "
		            "--socket");
	config_derive(cfg);
	if (action == 'p') {
		config_print(cfg, stdout);
		return 1;
	}
	return 0;
}

int
config_reload(struct config *cfg, int argc, char **argv, int *restart_needed,
              char *cause, size_t causelen)
{
	struct config *n;
	size_t i;
	int rc;

	if ((n = malloc(sizeof *n)) == NULL)
		return fail(cause, causelen, "out of memory");
	config_defaults(n, cfg->system);
	if ((rc = config_parse(n, argc, argv, cause, causelen)) != 0) {
		free(n);
		return rc < 0 ? rc : -EINVAL;
	}
	/* Everything read per event or per request takes effect now; the
	 * rest needs a restart. */
	*restart_needed = 0;
	for (i = 0; i < NSETTINGS; i++) {
		const struct setting *st = &settings[i];

		if (!st->reload) {
			if (memcmp(cmember(cfg, st->off), cmember(n, st->off),
			           st->len) != 0)
				*restart_needed = 1;
			continue;
		}
		memcpy(member(cfg, st->off), cmember(n, st->off), st->len);
		if (st->len2 > 0)
			memcpy(member(cfg, st->off2), cmember(n, st->off2),
			       st->len2);
	}
	memcpy(cfg->groups, n->groups, sizeof cfg->groups);
	cfg->ngroups = n->ngroups;
	free(n);
	return 0;
}
