/*
 * stageloadctl doctor: checks that start nothing. The daemon answers, its
 * samples are current, its storage works, its socket has the owner and
 * mode it should, and its numbers agree with what this machine's kernel
 * says when the client reads it itself (doctor.h). The same checks as the
 * first part of scripts/verify-macos.sh (--quick), with the same
 * tolerances; docs/cli.md, "doctor".
 */
#include <sys/stat.h>

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "doctor.h"

static int cmd_doctor(struct cli *, struct cli_args *);

/* One [PASS], [FAIL], [WARN] or [SKIP] line per check: the daemon answers,
 * its latest sample is current, storage works, the socket's owner and
 * mode, and total, free % (3 points), swap used (64M + 5 %) and pressure
 * against what the kernel says (macOS: sysctl; Linux: /proc/meminfo).
 * Exit 1 when one failed. */
const struct cli_entry cmd_doctor_entry = {
    .name = "doctor",
    .summary =
        "check the daemon and its numbers against the kernel; starts nothing",
    .no_json = "it prints a checklist",
    .exec = cmd_doctor,
};

#define FREE_TOL_PCT 3.0
#define SWAP_TOL_BYTES (64ULL << 20) /* plus 5 % of what the kernel says */
#define STALE_MIN_MS 2000            /* or three intervals, if longer */

struct doctor {
	int failed, n;
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

static int
cmd_doctor(struct cli *cli, struct cli_args *args)
{
	struct doctor d = {0, 0};
	struct sl_info in;
	int64_t age, stale;
	char t[32], iv[32];
	int rc;

	(void)args;
	if ((rc = cli_connect(cli)) != 0)
		return rc;
	if (sl_info(cli->client, &in) < 0)
		return cli_fail(cli);
	report(&d, "PASS", "stageloadd %s (%s) answers on %s, protocol %d",
	       in.daemon_version, in.os, sl_path(cli->client), in.version);

	stale = in.interval_ms * 3 > STALE_MIN_MS ? in.interval_ms * 3
	                                          : STALE_MIN_MS;
	age = in.has_sample ? cli_now_ms() - in.sample.sampled_at_ms : -1;
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
		report(&d, "PASS", "storage works (%s)", in.db_path);

	check_socket(&d, sl_path(cli->client));
	if (in.has_sample)
		check_kernel(&d, &in);

	if (d.failed > 0) {
		printf("%d check(s) failed\n", d.failed);
		return EXIT_ERR;
	}
	return EXIT_OK;
}
