/*
 * The floor under the daemon's CPU per sample: a libuv timer at the
 * sampling interval that does nothing (--idle), or that calls
 * platform_sys_sample and nothing else (the default). bench/daemon.sh runs
 * both beside the daemon over the same window, so the daemon's own work
 * can be told from what any process waking up at that rate pays on the
 * machine at that time.
 *
 *   bench_wake [--interval-ms MS] [--seconds S] [--idle]
 *
 * Prints one line: wake-ups and CPU per wake-up (user + system of this
 * process, from CLOCK_PROCESS_CPUTIME_ID, counted from the first wake-up).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "benchclock.h"
#include "platform.h"

static struct {
	uv_timer_t timer;
	int idle;
	long wakeups, max;
	double cpu0_us;
} W;

static void
tick(uv_timer_t *t)
{
	struct sys_sample s;
	char cause[256];

	/* The first wake-up starts the window: start-up is not counted. */
	if (W.wakeups++ == 0)
		W.cpu0_us = cpu_us();
	if (!W.idle && platform_sys_sample(&s, cause, sizeof(cause)) != 0) {
		fprintf(stderr, "bench_wake: %s\n", cause);
		exit(1);
	}
	if (W.wakeups > W.max)
		uv_timer_stop(t);
}

int
main(int argc, char **argv)
{
	long interval_ms = 500;
	double seconds = 60;
	char cause[256];
	int i;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--interval-ms") == 0 && i + 1 < argc)
			interval_ms = atol(argv[++i]);
		else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (strcmp(argv[i], "--idle") == 0)
			W.idle = 1;
		else {
			fprintf(stderr, "usage: bench_wake [--interval-ms MS] "
			                "[--seconds S] [--idle]\n");
			return 2;
		}
	}
	if (interval_ms <= 0 || seconds <= 0) {
		fprintf(stderr,
		        "bench_wake: interval and seconds must be > 0\n");
		return 2;
	}
	if (platform_init(NULL, cause, sizeof(cause)) != 0) {
		fprintf(stderr, "bench_wake: %s\n", cause);
		return 1;
	}
	W.max = (long)(seconds * 1000 / (double)interval_ms);
	uv_timer_init(uv_default_loop(), &W.timer);
	uv_timer_start(&W.timer, tick, 0, (uint64_t)interval_ms);
	uv_run(uv_default_loop(), UV_RUN_DEFAULT);
	printf("%s: %ld wake-ups every %ld ms, %.1f us CPU per wake-up\n",
	       W.idle ? "idle timer" : "timer + platform_sys_sample",
	       W.wakeups - 1, interval_ms,
	       (cpu_us() - W.cpu0_us) / (double)(W.wakeups - 1));
	platform_shutdown();
	return 0;
}
