/*
 * stageloadctl doctor: checks that start nothing. The daemon answers, its
 * samples are current, its storage works, its socket has the owner and
 * mode it should, and its numbers agree with what this machine's kernel
 * says when the client reads it itself (doctor.h). The same checks as the
 * first part of scripts/verify-macos.sh (--quick), with the same
 * tolerances; docs/cli.md, "doctor".
 */
#include <sys/stat.h>

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "clock.h"
#include "cli.h"
#include "doctor.h"
#include "proto.h"
#include "version.h"

static int cmd_doctor(struct cli *, struct cli_args *);

/* One [PASS], [FAIL], [WARN] or [SKIP] line per check: the daemon answers
 * and its version against ours, its latest sample is current, storage
 * works, the database, the config file, swap to budget, the clock, the
 * socket's owner and mode, and total, free % (3 points), swap used (64M +
 * 5 %) and pressure against what the kernel says (macOS: sysctl; Linux:
 * /proc/meminfo). Exit 1 when one failed, the daemon being down too. */
const struct cli_entry cmd_doctor_entry = {
    .name = "doctor",
    .summary =
        "check the daemon and its numbers against the kernel; starts nothing",
    .json = "{\"ok\": bool, \"checks\": [{\"status\", \"text\"}, ...]}",
    .exec = cmd_doctor,
};

#define FREE_TOL_PCT 3.0
#define SWAP_TOL_BYTES (64ULL << 20) /* plus 5 % of what the kernel says */
#define STALE_MIN_MS 2000            /* or three intervals, if longer */

struct doctor {
	int failed, n;
	cJSON *checks; /* --json: the checks, printed at the end */
};

static void report(struct doctor *d, const char *status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
report(struct doctor *d, const char *status, const char *fmt, ...)
{
	char text[1024], safe[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	d->n++;
	if (strcmp(status, "FAIL") == 0)
		d->failed++;
	if (d->checks != NULL) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "status", status);
		cJSON_AddStringToObject(o, "text", text);
		cJSON_AddItemToArray(d->checks, o);
		return;
	}
	/* The daemon's words (paths, errors) may come from elsewhere: shown
	 * the way text from users is. */
	printf("[%s] %2d  %s\n", status, d->n,
	       cli_safe(text, 0, safe, sizeof safe));
}

static double
diff(double a, double b)
{
	return a > b ? a - b : b - a;
}

static void
check_socket(struct doctor *d, const char *path)
{
	struct stat sb;
	unsigned mode;

	if (lstat(path, &sb) != 0 || !S_ISSOCK(sb.st_mode)) {
		report(d, "FAIL", "socket %s: not found", path);
		return;
	}
	mode = (unsigned)(sb.st_mode & 07777);
	if (sb.st_uid == 0 && mode == 0666)
		report(d, "PASS",
		       "socket %s: root's, mode 0666 (a system daemon)", path);
	else if (sb.st_uid == getuid() && (mode & 0077) == 0)
		report(d, "PASS",
		       "socket %s: yours, mode %04o (a per-user daemon)", path,
		       mode);
	else
		report(d, "WARN",
		       "socket %s: uid %u, mode %04o: neither a system "
		       "daemon's (root, 0666) nor yours (0600)",
		       path, (unsigned)sb.st_uid, mode);
}

/* A system daemon runs as root: its program and every library it loads
 * must be root's (doctor.h); macOS only. */
static void
check_program(struct doctor *d, const char *socket_path)
{
	char program[1024], why[1200];
	int rc;

	rc = doctor_program_check(socket_path, program, sizeof program, why,
	                          sizeof why);
	if (rc == -ENOTSUP)
		return;
	if (rc == 0)
		report(d, "PASS",
		       "%s and the libraries it loads are root's, as are the "
		       "directories above them",
		       program);
	else if (rc == 1)
		report(d, "FAIL", "root runs %s: %s", program, why);
	else
		report(d, "WARN", "root's program%s%s not checked: %s",
		       program[0] != '\0' ? " " : "", program, why);
}

static void
check_kernel(struct doctor *d, const struct sl_info *in)
{
	const struct sl_sample *s = &in->sample;
	struct doctor_kernel k;
	char cause[256], a[32], b[32];
	double tol;

	if (doctor_kernel_read(&k, cause, sizeof cause) != 0) {
		report(d, "SKIP", "the kernel's own numbers: %s", cause);
		return;
	}
	if (strcmp(k.os, in->os) != 0) {
		report(d, "SKIP", "the daemon runs on %s, this client on %s",
		       in->os, k.os);
		return;
	}
	/* A daemon reading fixture files (--proc-root, for tests) fails
	 * these, as it should: it is not reading this kernel. */
	if (s->total_bytes == k.total_bytes)
		report(d, "PASS", "total memory %s = %s",
		       cli_size(s->total_bytes, a, sizeof a), k.total_source);
	else
		report(d, "FAIL", "total memory %" PRIu64 " bytes, %s %" PRIu64,
		       s->total_bytes, k.total_source, k.total_bytes);
	if (k.free_pct >= 0 && diff(s->free_pct, k.free_pct) <= FREE_TOL_PCT)
		report(d, "PASS", "free %.1f%% against %s %.1f%%", s->free_pct,
		       k.free_source, k.free_pct);
	else if (k.free_pct >= 0)
		report(d, "FAIL",
		       "free %.1f%% against %s %.1f%%: more than %.0f "
		       "points apart",
		       s->free_pct, k.free_source, k.free_pct, FREE_TOL_PCT);
	if (k.has_swap) {
		tol = (double)SWAP_TOL_BYTES + 0.05 * (double)k.swap_used_bytes;
		cli_size(s->swap_used_bytes, a, sizeof a);
		cli_size(k.swap_used_bytes, b, sizeof b);
		if (diff((double)s->swap_used_bytes,
		         (double)k.swap_used_bytes) <= tol)
			report(d, "PASS", "swap used %s against %s %s", a,
			       k.swap_source, b);
		else
			report(d, "FAIL",
			       "swap used %s against %s %s: further "
			       "apart than 64M + 5%%",
			       a, k.swap_source, b);
	}
	if (k.pressure[0] != '\0') {
		if (strcmp(s->pressure, k.pressure) == 0)
			report(d, "PASS", "pressure %s = %s", s->pressure,
			       k.pressure_source);
		else
			report(d, "WARN",
			       "pressure %s, %s says %s (it may have "
			       "changed between the reads)",
			       s->pressure, k.pressure_source, k.pressure);
	}
}

/*
 * What info says beyond struct sl_info: the config file in use and the
 * default swap budget (a daemon before them has neither: config_path
 * stays "?").
 */
static void
info_extra(struct cli *cli, char *config, size_t len, int64_t *budget)
{
	const cJSON *path, *def, *b;
	char *text = NULL;
	cJSON *r;

	snprintf(config, len, "?");
	*budget = 0;
	if (sl_call(cli->client, "info", NULL, &text) < 0)
		return;
	r = cJSON_Parse(text);
	sl_free(text);
	path = cJSON_GetObjectItemCaseSensitive(r, "config_path");
	def = cJSON_GetObjectItemCaseSensitive(r, "defaults");
	b = cJSON_GetObjectItemCaseSensitive(def, "swap_budget_bytes");
	if (cJSON_IsString(path))
		snprintf(config, len, "%s", path->valuestring);
	else if (cJSON_IsNull(path))
		config[0] = '\0';
	if (cJSON_IsNumber(b))
		*budget = (int64_t)b->valuedouble;
	cJSON_Delete(r);
}

/*
 * Swap to grow into: on Linux a machine without swap never grows it, so a
 * swap budget can never stop a job (docs/jobs.md). macOS adds swap files
 * as it needs them: no swap yet is normal there.
 */
static void
check_swap(struct doctor *d, const struct sl_info *in, int64_t budget)
{
	char a[32];

	if (strcmp(in->os, "linux") != 0)
		report(d, "PASS", "swap: %s adds swap files as it needs them",
		       in->os);
	else if (in->sample.swap_total_bytes == 0)
		report(
		    d, "FAIL",
		    "no swap configured: swap never grows, so no swap budget "
		    "can stop a job (add a swap file or partition)%s",
		    budget > 0 ? ", and the default swap_budget is set" : "");
	else
		report(d, "PASS", "swap configured: %s",
		       cli_size(in->sample.swap_total_bytes, a, sizeof a));
}

void
cli_warn_no_swap(struct cli *cli, int64_t budget_bytes)
{
	struct sl_info in;
	char a[32];

	char config[8];

	if (budget_bytes == 0 || sl_info(cli->client, &in) < 0 ||
	    !in.has_sample || strcmp(in.os, "linux") != 0 ||
	    in.sample.swap_total_bytes != 0)
		return;
	/* None given: the daemon's default budget (swap_budget), if any. */
	if (budget_bytes < 0)
		info_extra(cli, config, sizeof config, &budget_bytes);
	if (budget_bytes <= 0)
		return;
	cli_error("warning: this machine has no swap, so the swap budget "
	          "(%s) can never stop the job (stageloadctl doctor)",
	          cli_size((uint64_t)budget_bytes, a, sizeof a));
}

/* The clock: what the daemon stamped is not ahead of this clock (it went
 * back since, and history and events would be out of order). */
static void
check_clock(struct doctor *d, const struct sl_info *in)
{
	int64_t now = clock_wall_ms(), ahead = 0;
	char t[32];

	if (in->has_sample && in->sample.sampled_at_ms - now > ahead)
		ahead = in->sample.sampled_at_ms - now;
	if (in->started_at_ms - now > ahead)
		ahead = in->started_at_ms - now;
	if (ahead > STALE_MIN_MS)
		report(d, "FAIL",
		       "clock: the daemon's times are %s ahead of this clock "
		       "(it was set back?)",
		       cli_duration(ahead, t, sizeof t));
	else
		report(d, "PASS",
		       "clock: the daemon's times agree with this "
		       "clock");
}

static int
doctor_end(struct doctor *d)
{
	char *text;

	if (d->checks != NULL) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddBoolToObject(o, "ok", d->failed == 0);
		cJSON_AddItemToObject(o, "checks", d->checks);
		text = proto_print(o, 0);
		if (text != NULL)
			cli_print_json(stdout, text);
		free(text);
		cJSON_Delete(o);
	} else if (d->failed > 0) {
		printf("%d check(s) failed\n", d->failed);
	}
	return d->failed > 0 ? EXIT_ERR : EXIT_OK;
}

static int
cmd_doctor(struct cli *cli, struct cli_args *args)
{
	struct doctor d = {0, 0, NULL};
	struct sl_info in;
	int64_t age, stale, budget;
	char t[32], iv[32], config[1024];

	(void)args;
	if (cli->json && (d.checks = cJSON_CreateArray()) == NULL) {
		cli_error("out of memory");
		return EXIT_ERR;
	}
	if ((cli->client = sl_client_new()) == NULL) {
		cJSON_Delete(d.checks);
		cli_error("out of memory");
		return EXIT_ERR;
	}
	/* A daemon that is down is a failed check like the others, with
	 * what can be looked at without it. */
	if (sl_connect(cli->client, cli->socket) < 0 ||
	    sl_info(cli->client, &in) < 0) {
		char db[1024];
		report(&d, "FAIL", "%s", sl_errmsg(cli->client));
		check_socket(&d, sl_path(cli->client));
		if (cli_offline_db_path(sl_path(cli->client),
		                        cli_socket_given(cli), db,
		                        sizeof db) == 0 &&
		    access(db, F_OK) == 0)
			report(&d, "SKIP",
			       "database %s is there: stageloadctl history "
			       "reads it without the daemon",
			       db);
		report(&d, "SKIP", "the rest needs the daemon");
		return doctor_end(&d);
	}
	report(&d, "PASS", "stageloadd %s (%s) answers on %s, protocol %d",
	       in.daemon_version, in.os, sl_path(cli->client), in.version);
	if (strcmp(in.daemon_version, STAGELOAD_VERSION) == 0)
		report(&d, "PASS", "stageloadctl %s: the same version",
		       STAGELOAD_VERSION);
	else
		report(&d, "WARN",
		       "stageloadctl %s, stageloadd %s: another version (they "
		       "agree on protocol %d)",
		       STAGELOAD_VERSION, in.daemon_version, in.version);

	stale = in.interval_ms * 3 > STALE_MIN_MS ? in.interval_ms * 3
	                                          : STALE_MIN_MS;
	age = in.has_sample ? clock_wall_ms() - in.sample.sampled_at_ms : -1;
	if (!in.has_sample)
		report(&d, "FAIL", "no sample yet");
	else if (age > stale)
		report(&d, "FAIL", "the latest sample is %s old (interval %s)",
		       cli_duration(age, t, sizeof t),
		       cli_duration(in.interval_ms, iv, sizeof iv));
	else
		report(&d, "PASS", "the latest sample is current (interval %s)",
		       cli_duration(in.interval_ms, t, sizeof t));

	if (in.storage_error[0] != '\0')
		report(&d, "FAIL", "storage: %s", in.storage_error);
	else
		report(&d, "PASS", "storage works (%s, %s)", in.db_path,
		       cli_size(in.db_bytes, t, sizeof t));

	info_extra(cli, config, sizeof config, &budget);
	if (config[0] == '\0')
		report(&d, "PASS",
		       "config: no file, built-in defaults and "
		       "options");
	else if (strcmp(config, "?") != 0)
		report(&d, "PASS", "config: %s", config);
	if (in.has_sample)
		check_swap(&d, &in, budget);
	check_clock(&d, &in);

	check_socket(&d, sl_path(cli->client));
	check_program(&d, sl_path(cli->client));
	if (in.has_sample)
		check_kernel(&d, &in);
	return doctor_end(&d);
}
