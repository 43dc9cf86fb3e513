/*
 * The settings of stageloadd, one table: each setting's key, kind, member,
 * range, default, whether SIGHUP applies it, info's key and a line of
 * help; their parsers and printer; info's defaults and limits from it.
 * config.c reads the command line and the file into it.
 */
#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config-internal.h"
#include "proto.h"
#include "units.h"

#define DAY_MS (24LL * 3600 * 1000)

int
config_fail(char *cause, size_t causelen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cause, causelen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* Copy a path, refusing ones that would be silently cut. */
int
config_set_path(char *dst, size_t dstlen, const char *key, const char *v,
                char *cause, size_t causelen)
{
	if (*v == '\0')
		return config_fail(cause, causelen, "%s: empty path", key);
	if (strlen(v) >= dstlen)
		return config_fail(cause, causelen, "%s: path too long", key);
	memcpy(dst, v, strlen(v) + 1);
	return 0;
}

static int
set_duration(int64_t *dst, const char *key, const char *v, int64_t min,
             int64_t max, char *cause, size_t causelen)
{
	int64_t ms;

	if (units_parse_duration_ms(v, &ms) != 0)
		return config_fail(
		    cause, causelen,
		    "%s: '%s' is not a duration (e.g. 0.5, 500ms, 30s, 2d)",
		    key, v);
	if (ms < min || ms > max)
		return config_fail(
		    cause, causelen,
		    "%s: '%s' is out of range (%lld ms to %lld ms)", key, v,
		    (long long)min, (long long)max);
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
		return config_fail(
		    cause, causelen,
		    "%s: '%s' is not an integer from %lld to %lld", key, v, min,
		    max);
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
		return config_fail(cause, causelen,
		                   "%s: unknown key (a group's key is "
		                   "group.NAME.max_running)",
		                   key);
	len -= slen;
	if (len > CONFIG_GROUP_NAME_MAX)
		return config_fail(
		    cause, causelen,
		    "%s: a group's name is at most %d characters", key,
		    CONFIG_GROUP_NAME_MAX);
	memcpy(buf, name, len);
	buf[len] = '\0';
	if (!config_group_name_ok(buf))
		return config_fail(
		    cause, causelen,
		    "%s: a group's name is letters, digits, _ and -", key);
	if (set_int(&n, key, v, 0, 1000000, cause, causelen) != 0)
		return -EINVAL;
	for (i = 0; i < cfg->ngroups; i++)
		if (strcmp(cfg->groups[i].name, buf) == 0)
			break;
	if (i == cfg->ngroups) {
		if (cfg->ngroups == CONFIG_MAX_GROUPS)
			return config_fail(cause, causelen,
			                   "%s: at most %d groups have a limit",
			                   key, CONFIG_MAX_GROUPS);
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
		return config_fail(cause, causelen,
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
		return config_fail(cause, causelen,
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
			return config_fail(
			    cause, causelen,
			    "%s: '%s' is not a group name or number", key, v);
		cfg->admin_gid = (gid_t)n;
		cfg->admin_group_set = 1;
		return 0;
	}
	if (getgrnam_r(v, &gr, buf, sizeof buf, &res) != 0 || res == NULL)
		return config_fail(cause, causelen,
		                   "%s: no group '%s' in the group database",
		                   key, v);
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
		return config_fail(cause, causelen, "retention: too long");
	memcpy(buf, v, strlen(v) + 1);
	for (item = strtok_r(buf, ",", &save); item != NULL;
	     item = strtok_r(NULL, ",", &save)) {
		if ((eq = strchr(item, '=')) == NULL)
			return config_fail(cause, causelen,
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
			return config_fail(cause, causelen,
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

const struct setting config_settings[] = {
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

const size_t config_nsettings =
    sizeof config_settings / sizeof config_settings[0];

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

void *
config_member(struct config *cfg, size_t off)
{
	return (char *)cfg + off;
}

const void *
config_cmember(const struct config *cfg, size_t off)
{
	return (const char *)cfg + off;
}

int
config_setting_set(struct config *cfg, const struct setting *s, const char *key,
                   const char *v, char *cause, size_t causelen)
{
	uint64_t n = 0;
	size_t z = 0;
	int rc;

	if (s->set != NULL)
		return s->set(cfg, s, key, v, cause, causelen);
	switch (s->kind) {
	case SET_PATH:
		return config_set_path(config_member(cfg, s->off), s->len, key,
		                       v, cause, causelen);
	case SET_DURATION:
		return set_duration(config_member(cfg, s->off), key, v,
		                    (int64_t)s->min, (int64_t)s->max, cause,
		                    causelen);
	case SET_INT:
		return set_int(config_member(cfg, s->off), key, v, (int)s->min,
		               (int)s->max, cause, causelen);
	case SET_DOUBLE:
		return set_double(config_member(cfg, s->off), key, v, s->min,
		                  s->max, cause, causelen);
	case SET_SIZE:
		if ((rc = set_size(&z, key, v, (uint64_t)s->min,
		                   s->max >= 18446744073709551615.0
		                       ? UINT64_MAX
		                       : (uint64_t)s->max,
		                   cause, causelen)) != 0)
			return rc;
		n = z;
		if (s->len == sizeof(uint64_t))
			memcpy(config_member(cfg, s->off), &n, sizeof n);
		else
			memcpy(config_member(cfg, s->off), &z, sizeof z);
		return 0;
	case SET_SPECIAL:
		break;
	}
	return config_fail(cause, causelen, "%s: no parser", key);
}

/* The value as the config file would give it, into buf. */
static void
setting_print(const struct config *cfg, const struct setting *s, char *buf,
              size_t len)
{
	const void *p = config_cmember(cfg, s->off);
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
		return config_fail(cause, causelen,
		                   "%s: '%s' is not a plain path (sqlite would "
		                   "read it as a URI or a special name); write "
		                   "./%s for a file named so",
		                   key, v, v);
	return config_set_path(config_member(cfg, s->off), s->len, key, v,
	                       cause, causelen);
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
		return config_fail(cause, causelen,
		                   "%s: '%s' is below 10ms (0: never fast)",
		                   key, v);
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
int
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
	for (i = 0; i < config_nsettings; i++)
		if (strcmp(k, config_settings[i].name) == 0)
			return config_setting_set(cfg, &config_settings[i], key,
			                          v, cause, causelen);
	return config_fail(cause, causelen, "unknown option '%s'", key);
}

void
config_print(const struct config *cfg, FILE *f)
{
	char buf[1200];
	size_t i;
	int g;

	for (i = 0; i < config_nsettings; i++) {
		setting_print(cfg, &config_settings[i], buf, sizeof buf);
		/* An empty path is no value: a file could not say it. */
		fprintf(
		    f, "# %s%s\n%s%s = %s\n", config_settings[i].help,
		    config_settings[i].reload ? ""
		                              : " (a change needs a restart)",
		    config_settings[i].kind == SET_PATH && buf[0] == '\0' ? "#"
		                                                          : "",
		    config_settings[i].name, buf);
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

	for (i = 0; i < config_nsettings; i++) {
		s = &config_settings[i];
		if (s->info == NULL)
			continue;
		o = strncmp(s->info, "limits.", 7) == 0 ? limits : defaults;
		p = config_cmember(cfg, s->off);
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
