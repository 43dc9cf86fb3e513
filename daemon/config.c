/*
 * Options of stageloadd: built-in defaults, then the config file (--config),
 * then the command line, each overriding the one before. docs/daemon.md
 * lists every option and config key.
 */
#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <stdarg.h>
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
    "usage: stageloadd [-fhvV] [--config FILE] [--socket PATH] [--db PATH]\n"
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
    "  --log-file PATH    log to PATH (appended) instead of stderr; SIGUSR1\n"
    "                     opens it again, after a rotation\n"
    "  --pid-file PATH    write the daemon's pid to PATH while it runs\n"
    "                     (newsyslog signals it through this)\n"
    "  -f, --foreground   timestamp log lines (a terminal, launchd's log "
    "file)\n"
    "  -v, --verbose      log debug messages\n"
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
 * One setting, from the command line or the config file. Config keys are
 * the long option names with '_' or '-'; a few limits exist only as keys.
 */
static int
config_set(struct config *cfg, const char *key, const char *v, char *cause,
           size_t causelen)
{
	char k[64];
	size_t i;
	long long n = 0;
	int rc;

	for (i = 0; key[i] != '\0' && i < sizeof k - 1; i++)
		k[i] = key[i] == '-' ? '_' : key[i];
	k[i] = '\0';

	if (strncmp(key, "group.", 6) == 0)
		return set_group_limit(cfg, key, v, cause, causelen);

	if (strcmp(k, "socket") == 0)
		return set_path(cfg->socket_path, sizeof cfg->socket_path, key,
		                v, cause, causelen);
	if (strcmp(k, "db") == 0) {
		/* sqlite would take these as a URI (naming any file, which
		 * the daemon's checks of the path would not see) or as an
		 * in-memory database. */
		if (strncmp(v, "file:", 5) == 0 || v[0] == ':')
			return fail(
			    cause, causelen,
			    "%s: '%s' is not a plain path (sqlite would "
			    "read it as a URI or a special name); write "
			    "./%s for a file named so",
			    key, v, v);
		return set_path(cfg->db_path, sizeof cfg->db_path, key, v,
		                cause, causelen);
	}
	if (strcmp(k, "state_dir") == 0)
		return set_path(cfg->state_dir, sizeof cfg->state_dir, key, v,
		                cause, causelen);
	if (strcmp(k, "log_file") == 0)
		return set_path(cfg->log_file, sizeof cfg->log_file, key, v,
		                cause, causelen);
	if (strcmp(k, "pid_file") == 0)
		return set_path(cfg->pid_file, sizeof cfg->pid_file, key, v,
		                cause, causelen);
	if (strcmp(k, "proc_root") == 0)
		return set_path(cfg->proc_root, sizeof cfg->proc_root, key, v,
		                cause, causelen);
	if (strcmp(k, "interval") == 0)
		return set_duration(&cfg->interval_ms, key, v, 10, 3600 * 1000,
		                    cause, causelen);
	if (strcmp(k, "retention") == 0)
		return set_retention(&cfg->retention, v, cause, causelen);
	if (strcmp(k, "grace") == 0)
		return set_duration(&cfg->grace_ms, key, v, 0, 3600 * 1000,
		                    cause, causelen);
	if (strcmp(k, "settle") == 0)
		return set_duration(&cfg->settle_ms, key, v, 0, DAY_MS, cause,
		                    causelen);
	if (strcmp(k, "hello_timeout") == 0)
		return set_duration(&cfg->hello_timeout_ms, key, v, 10,
		                    3600 * 1000, cause, causelen);
	if (strcmp(k, "psi_warn") == 0)
		return set_double(&cfg->psi_warn, key, v, 0, 100, cause,
		                  causelen);
	if (strcmp(k, "psi_critical") == 0)
		return set_double(&cfg->psi_critical, key, v, 0, 100, cause,
		                  causelen);
	if (strcmp(k, "wait_free") == 0)
		return set_double(&cfg->default_wait_free_pct, key, v, 0, 100,
		                  cause, causelen);
	if (strcmp(k, "settle_growth") == 0)
		return set_double(&cfg->settle_growth_pct, key, v, 0, 100,
		                  cause, causelen);
	if (strcmp(k, "settle_samples") == 0)
		return set_int(&cfg->settle_samples, key, v, 1,
		               CONFIG_SETTLE_SAMPLES_MAX, cause, causelen);
	if (strcmp(k, "on_end_timeout") == 0)
		return set_duration(&cfg->on_end_timeout_ms, key, v, 1000,
		                    DAY_MS, cause, causelen);
	if (strcmp(k, "max_on_end_per_uid") == 0)
		return set_int(&cfg->max_on_end_per_uid, key, v, 1, 1000, cause,
		               causelen);
	if (strcmp(k, "max_running") == 0)
		return set_int(&cfg->max_running, key, v, 0, 1000000, cause,
		               causelen);
	if (strcmp(k, "admin_group") == 0)
		return set_group(cfg, key, v, cause, causelen);
	if (strcmp(k, "max_wait_free") == 0)
		return set_double(&cfg->max_wait_free_pct, key, v, 0, 100,
		                  cause, causelen);
	if (strcmp(k, "hol_bound") == 0)
		return set_duration(&cfg->hol_bound_ms, key, v, 0, 365 * DAY_MS,
		                    cause, causelen);
	if (strcmp(k, "max_clients") == 0)
		return set_int(&cfg->max_clients, key, v, 1, 1000000, cause,
		               causelen);
	if (strcmp(k, "max_clients_per_uid") == 0)
		return set_int(&cfg->max_clients_per_uid, key, v, 1, 1000000,
		               cause, causelen);
	if (strcmp(k, "max_deferred_per_uid") == 0)
		return set_int(&cfg->max_deferred_per_uid, key, v, 1, 1000000,
		               cause, causelen);
	if (strcmp(k, "max_meters_per_uid") == 0)
		return set_int(&cfg->max_meters_per_uid, key, v, 1, 100000,
		               cause, causelen);
	if (strcmp(k, "max_unread_per_uid") == 0)
		return set_size(&cfg->max_unread_bytes_per_uid, key, v,
		                64 * 1024, UINT64_C(1) << 40, cause, causelen);
	if (strcmp(k, "max_input_per_uid") == 0)
		return set_size(&cfg->max_input_bytes_per_uid, key, v,
		                64 * 1024, UINT64_C(1) << 40, cause, causelen);
	if (strcmp(k, "max_queued_per_uid") == 0)
		return set_int(&cfg->max_queued_per_uid, key, v, 1, 1000000,
		               cause, causelen);
	if (strcmp(k, "max_ended_jobs_per_uid") == 0)
		return set_int(&cfg->max_ended_jobs_per_uid, key, v, 0,
		               100000000, cause, causelen);
	if (strcmp(k, "max_stored_bytes_per_uid") == 0) {
		size_t b = 0;
		if ((rc = set_size(&b, key, v, 64 * 1024, (uint64_t)1 << 50,
		                   cause, causelen)) != 0)
			return rc;
		cfg->max_stored_bytes_per_uid = b;
		return 0;
	}
	if (strcmp(k, "min_free_disk") == 0) {
		size_t b = 0;
		if (strcmp(v, "auto") == 0) {
			cfg->min_free_disk_auto = 1;
			cfg->min_free_disk_bytes = 0;
			return 0;
		}
		if ((rc = set_size(&b, key, v, 0, (uint64_t)1 << 50, cause,
		                   causelen)) != 0)
			return rc;
		cfg->min_free_disk_auto = 0;
		cfg->min_free_disk_bytes = b;
		return 0;
	}
	if (strcmp(k, "max_log_bytes") == 0) {
		size_t b = 0;
		if ((rc = set_size(&b, key, v, 64 * 1024, (uint64_t)1 << 50,
		                   cause, causelen)) != 0)
			return rc;
		cfg->max_log_bytes = b;
		return 0;
	}
	if (strcmp(k, "swap_budget") == 0) {
		size_t b = 0;
		if ((rc = set_size(&b, key, v, 0, UINT64_MAX, cause,
		                   causelen)) != 0)
			return rc;
		cfg->default_swap_budget_bytes = b;
		return 0;
	}
	if (strcmp(k, "max_line") == 0)
		return set_size(&cfg->max_line_bytes, key, v, 1024, 1u << 30,
		                cause, causelen);
	if (strcmp(k, "max_argv") == 0)
		return set_size(&cfg->max_argv_bytes, key, v, 1024, 1u << 30,
		                cause, causelen);
	if (strcmp(k, "max_env") == 0)
		return set_size(&cfg->max_env_bytes, key, v, 1024, 1u << 30,
		                cause, causelen);
	if (strcmp(k, "max_unread") == 0)
		return set_size(&cfg->max_unread_bytes, key, v, 64 * 1024,
		                1u << 30, cause, causelen);
	if (strcmp(k, "learn") == 0) {
		if ((rc = set_long(&n, key, v, 0, 1, cause, causelen)) != 0)
			return rc;
		cfg->learn = (int)n;
		return 0;
	}
	if (strcmp(k, "learn_runs") == 0)
		return set_int(&cfg->learn_runs, key, v, 1,
		               CONFIG_LEARN_RUNS_MAX, cause, causelen);
	if (strcmp(k, "fast_interval") == 0) {
		if ((rc = set_duration(&cfg->fast_interval_ms, key, v, 0,
		                       3600 * 1000, cause, causelen)) != 0)
			return rc;
		/* As fast as the interval may be, or 0: never fast. */
		if (cfg->fast_interval_ms > 0 && cfg->fast_interval_ms < 10)
			return fail(cause, causelen,
			            "%s: '%s' is below 10ms (0: never fast)",
			            key, v);
		return 0;
	}
	if (strcmp(k, "fast_swap") == 0)
		return set_double(&cfg->fast_swap_pct, key, v, 0, 100, cause,
		                  causelen);
	if (strcmp(k, "keep_awake_queue") == 0)
		return set_duration(&cfg->keep_awake_queue_ms, key, v, 0,
		                    365 * DAY_MS, cause, causelen);
	if (strcmp(k, "keep_awake") == 0) {
		if ((rc = set_long(&n, key, v, 0, 1, cause, causelen)) != 0)
			return rc;
		cfg->keep_awake = (int)n;
		return 0;
	}
	if (strcmp(k, "verbose") == 0) {
		if ((rc = set_long(&n, key, v, 0, 9, cause, causelen)) != 0)
			return rc;
		cfg->verbose = (int)n;
		return 0;
	}
	return fail(cause, causelen, "unknown option '%s'", key);
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
	cfg->interval_ms = 500;
	store_retention_defaults(&cfg->retention);
	cfg->psi_warn = 10;
	cfg->psi_critical = 40;

	cfg->max_line_bytes = 4u << 20;
	cfg->max_clients = 4096;
	cfg->max_clients_per_uid = 256;
	cfg->max_input_bytes_per_uid = 8u << 20;
	cfg->max_queued_per_uid = 1000;
	cfg->max_deferred_per_uid = 4096;
	cfg->max_meters_per_uid = 16;
	cfg->max_argv_bytes = 256u << 10;
	cfg->max_env_bytes = 1u << 20;
	cfg->max_stored_bytes_per_uid = (uint64_t)256 << 20;
	cfg->max_ended_jobs_per_uid = 10000;
	cfg->max_log_bytes = (uint64_t)1 << 30;
	cfg->min_free_disk_auto = 1;
	cfg->hello_timeout_ms = 10000;
	cfg->max_unread_bytes = 16u << 20;
	cfg->max_unread_bytes_per_uid = 16u << 20;

	cfg->default_wait_free_pct = 0;
	cfg->default_swap_budget_bytes = 0;
	cfg->grace_ms = 10000;
	cfg->settle_ms = 30000;
	cfg->settle_growth_pct = 1;
	cfg->settle_samples = 3;
	cfg->max_running = 0;
	cfg->on_end_timeout_ms = 60000;
	cfg->max_on_end_per_uid = 4;

	cfg->admin_group_set = 0;
	cfg->max_wait_free_pct = 95;
	cfg->hol_bound_ms = 600000;
	cfg->keep_awake = 1;
	cfg->keep_awake_queue_ms = 12 * 3600 * 1000;
	cfg->learn = 1;
	cfg->learn_runs = 5;
	cfg->fast_interval_ms = 100;
	cfg->fast_swap_pct = 25;
}

struct option_def {
	const char *name; /* long name without "--" */
	char shortname;
	int has_arg;
};

static const struct option_def options[] = {
    {"config", 0, 1},       {"socket", 0, 1},    {"db", 0, 1},
    {"state-dir", 0, 1},    {"interval", 0, 1},  {"retention", 0, 1},
    {"proc-root", 0, 1},    {"grace", 0, 1},     {"settle", 0, 1},
    {"foreground", 'f', 0}, {"verbose", 'v', 0}, {"version", 'V', 0},
    {"help", 'h', 0},       {"log-file", 0, 1},  {"pid-file", 0, 1},
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
	return 0;
}

int
config_reload(struct config *cfg, int argc, char **argv, int *restart_needed,
              char *cause, size_t causelen)
{
	struct config *n;
	int rc;

	if ((n = malloc(sizeof *n)) == NULL)
		return fail(cause, causelen, "out of memory");
	config_defaults(n, cfg->system);
	if ((rc = config_parse(n, argc, argv, cause, causelen)) != 0) {
		free(n);
		return rc < 0 ? rc : -EINVAL;
	}
	*restart_needed = strcmp(n->socket_path, cfg->socket_path) != 0 ||
	                  strcmp(n->db_path, cfg->db_path) != 0 ||
	                  strcmp(n->state_dir, cfg->state_dir) != 0 ||
	                  strcmp(n->proc_root, cfg->proc_root) != 0 ||
	                  strcmp(n->log_file, cfg->log_file) != 0 ||
	                  strcmp(n->pid_file, cfg->pid_file) != 0 ||
	                  n->interval_ms != cfg->interval_ms ||
	                  n->psi_warn != cfg->psi_warn ||
	                  n->psi_critical != cfg->psi_critical;

	/* Everything read per event or per request takes effect now. */
	cfg->retention = n->retention;
	cfg->max_line_bytes = n->max_line_bytes;
	cfg->max_clients = n->max_clients;
	cfg->max_clients_per_uid = n->max_clients_per_uid;
	cfg->max_input_bytes_per_uid = n->max_input_bytes_per_uid;
	cfg->max_queued_per_uid = n->max_queued_per_uid;
	cfg->max_deferred_per_uid = n->max_deferred_per_uid;
	cfg->max_meters_per_uid = n->max_meters_per_uid;
	cfg->max_argv_bytes = n->max_argv_bytes;
	cfg->max_env_bytes = n->max_env_bytes;
	cfg->max_stored_bytes_per_uid = n->max_stored_bytes_per_uid;
	cfg->max_ended_jobs_per_uid = n->max_ended_jobs_per_uid;
	cfg->max_log_bytes = n->max_log_bytes;
	cfg->min_free_disk_bytes = n->min_free_disk_bytes;
	cfg->min_free_disk_auto = n->min_free_disk_auto;
	cfg->hello_timeout_ms = n->hello_timeout_ms;
	cfg->max_unread_bytes = n->max_unread_bytes;
	cfg->max_unread_bytes_per_uid = n->max_unread_bytes_per_uid;
	cfg->default_wait_free_pct = n->default_wait_free_pct;
	cfg->default_swap_budget_bytes = n->default_swap_budget_bytes;
	cfg->grace_ms = n->grace_ms;
	cfg->settle_ms = n->settle_ms;
	cfg->settle_growth_pct = n->settle_growth_pct;
	cfg->settle_samples = n->settle_samples;
	cfg->max_running = n->max_running;
	cfg->on_end_timeout_ms = n->on_end_timeout_ms;
	cfg->max_on_end_per_uid = n->max_on_end_per_uid;
	memcpy(cfg->groups, n->groups, sizeof cfg->groups);
	cfg->ngroups = n->ngroups;
	cfg->admin_group_set = n->admin_group_set;
	cfg->admin_gid = n->admin_gid;
	cfg->max_wait_free_pct = n->max_wait_free_pct;
	cfg->hol_bound_ms = n->hol_bound_ms;
	cfg->verbose = n->verbose;
	cfg->keep_awake = n->keep_awake;
	cfg->keep_awake_queue_ms = n->keep_awake_queue_ms;
	cfg->learn = n->learn;
	cfg->learn_runs = n->learn_runs;
	cfg->fast_interval_ms = n->fast_interval_ms;
	cfg->fast_swap_pct = n->fast_swap_pct;
	free(n);
	return 0;
}
