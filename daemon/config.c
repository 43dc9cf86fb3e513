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

#include "config-internal.h"
#include "daemon.h"
#include "proto.h"
#include "trust.h"
#include "units.h"
#include "version.h"

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
		return config_fail(cause, causelen,
		                   "refusing config file %s: %s", path, why);
	if ((f = fopen(path, "r")) == NULL)
		return config_fail(cause, causelen, "%s: %s", path,
		                   strerror(errno));
	/* A directory opens, then fails to read: that is no empty file. */
	if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
		fclose(f);
		return config_fail(cause, causelen, "%s: not a regular file",
		                   path);
	}
	while (fgets(line, sizeof line, f) != NULL) {
		lineno++;
		if (strchr(line, '\n') == NULL && !feof(f)) {
			rc = config_fail(cause, causelen,
			                 "%s:%d: line too long", path, lineno);
			break;
		}
		if ((hash = strchr(line, '#')) != NULL)
			*hash = '\0';
		k = trim(line);
		if (*k == '\0')
			continue;
		if ((eq = strchr(k, '=')) == NULL) {
			rc = config_fail(cause, causelen,
			                 "%s:%d: expected "
			                 "'key = value'",
			                 path, lineno);
			break;
		}
		*eq = '\0';
		k = trim(k);
		v = trim(eq + 1);
		if ((rc = config_set(cfg, k, v, sub, sizeof sub)) != 0) {
			config_fail(cause, causelen, "%s:%d: %s", path, lineno,
			            sub);
			break;
		}
	}
	/* A read error is not the end of the file: settings after it would
	 * silently fall back to their defaults. */
	if (rc == 0 && ferror(f))
		rc = config_fail(cause, causelen, "%s: %s", path,
		                 strerror(errno));
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
	for (i = 0; i < config_nsettings; i++) {
		/* The table's defaults are valid values: a failure here is a
		 * bug in the table, caught by every test. */
		if (config_settings[i].def != NULL &&
		    config_setting_set(
		        cfg, &config_settings[i], config_settings[i].name,
		        config_settings[i].def, cause, sizeof cause) != 0)
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
				return config_fail(cause, causelen,
				                   "unknown option '%s'", arg);
			if (eq != NULL) {
				if (!o->has_arg)
					return config_fail(
					    cause, causelen,
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
					return config_fail(
					    cause, causelen,
					    "unknown option '-%c'", arg[i]);
				}
			}
			continue;
		} else {
			return config_fail(cause, causelen,
			                   "unexpected argument '%s'", arg);
		}

		if (o->has_arg && val == NULL) {
			if (ai + 1 >= argc)
				return config_fail(
				    cause, causelen,
				    "option '--%s' needs a value", o->name);
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
			    (rc = config_set_path(
			         cfg->config_path, sizeof cfg->config_path,
			         "--config", val, cause, causelen)) != 0)
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
	return config_set_path(cfg->config_path, sizeof cfg->config_path,
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
		return config_fail(cause, causelen,
		                   "psi_warn (%g) is above "
		                   "psi_critical (%g)",
		                   cfg->psi_warn, cfg->psi_critical);
	if (cfg->default_wait_free_pct > cfg->max_wait_free_pct)
		return config_fail(cause, causelen,
		                   "wait_free (%g) is above max_wait_free (%g)",
		                   cfg->default_wait_free_pct,
		                   cfg->max_wait_free_pct);
	if (cfg->db_path[0] == '\0')
		return config_fail(
		    cause, causelen,
		    "no default database path (no home directory, or "
		    "a path too long): give --db, or set "
		    "XDG_STATE_HOME or HOME");
	if (cfg->socket_path[0] == '\0')
		return config_fail(
		    cause, causelen,
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
		return config_fail(cause, causelen, "out of memory");
	config_defaults(n, cfg->system);
	if ((rc = config_parse(n, argc, argv, cause, causelen)) != 0) {
		free(n);
		return rc < 0 ? rc : -EINVAL;
	}
	/* Everything read per event or per request takes effect now; the
	 * rest needs a restart. */
	*restart_needed = 0;
	for (i = 0; i < config_nsettings; i++) {
		const struct setting *st = &config_settings[i];

		if (!st->reload) {
			if (memcmp(config_cmember(cfg, st->off),
			           config_cmember(n, st->off), st->len) != 0)
				*restart_needed = 1;
			continue;
		}
		memcpy(config_member(cfg, st->off), config_cmember(n, st->off),
		       st->len);
		if (st->len2 > 0)
			memcpy(config_member(cfg, st->off2),
			       config_cmember(n, st->off2), st->len2);
	}
	memcpy(cfg->groups, n->groups, sizeof cfg->groups);
	cfg->ngroups = n->ngroups;
	free(n);
	return 0;
}
