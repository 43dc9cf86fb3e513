/*
 * CPU cost of the platform sampling path: one system sample, one process
 * read, one process-table scan, and a daemon tick for ten jobs of two
 * processes each (proctree_sample, its periodic rescans included).
 *
 *   bench_platform [--ticks N] [--interval-ms MS]
 *
 * Times are CPU time of this process (user + system: reading /proc is
 * kernel work charged to the reader), from CLOCK_PROCESS_CPUTIME_ID.
 * Everything runs in a tight loop with warm caches, so the PSI file (read
 * once per 2 s) and a process's status (re-read when its statm moves, or
 * after 2 s) are read less often than in the daemon, whose samples are
 * 0.1-0.5 s apart: bench/daemon.sh and bench/jobs.py measure that.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "benchclock.h"
#include "platform.h"
#include "proctree.h"

#define NJOBS 10

/* How many processes a scan walks, to read its cost by; -1 without a
 * /proc directory (macOS). */
static int
count_processes(void)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int n = 0;

	if (d == NULL)
		return -1;
	while ((de = readdir(d)) != NULL)
		n += de->d_name[0] >= '1' && de->d_name[0] <= '9';
	closedir(d);
	return n;
}

/* Creates and reaps a process, so the next scan must list /proc again. */
static void
churn(void)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	if (pid > 0)
		waitpid(pid, NULL, 0);
}

/* A job leader in its own group with one child, both idle. */
static pid_t
start_job(void)
{
	pid_t pid = fork();

	if (pid < 0) {
		perror("fork");
		exit(1);
	}
	if (pid == 0) {
		setpgid(0, 0);
		if (fork() == 0) {
			for (;;)
				pause();
		}
		for (;;)
			pause();
	}
	setpgid(pid, pid);
	return pid;
}

/* Daemon ticks: a system sample and a sample of every tree, each; the
 * churn (when asked for) happens outside the measured part. */
static double
run_ticks(struct proctree **trees, long ticks, long first, long interval_ms,
          int with_churn, double *procs_per_tree)
{
	struct sys_sample s;
	char cause[256];
	double spent = 0, t0;
	size_t total = 0;
	long i;
	int j;

	for (i = first; i < first + ticks; i++) {
		if (with_churn)
			churn();
		t0 = cpu_us();
		platform_sys_sample(&s, cause, sizeof(cause));
		for (j = 0; j < NJOBS; j++) {
			size_t n = 0;

			proctree_sample(trees[j], i * interval_ms, NULL, NULL,
			                &n);
			total += n;
		}
		spent += cpu_us() - t0;
	}
	*procs_per_tree = (double)total / (double)ticks / NJOBS;
	return spent / (double)ticks;
}

int
main(int argc, char **argv)
{
	struct proctree *trees[NJOBS];
	pid_t jobs[NJOBS], scratch[4096], self = getpid();
	char cause[256];
	struct sys_sample s;
	struct proc_info pi;
	long ticks = 2000, interval_ms = 500, i, iters;
	double t0, sys_us, info_us, sample_us, scan_us, full_scan_us = 0;
	double tick_us, churn_tick_us, per_tree, churn_per_tree;
	int j;

	for (j = 1; j < argc; j++) {
		if (strcmp(argv[j], "--ticks") == 0 && j + 1 < argc)
			ticks = atol(argv[++j]);
		else if (strcmp(argv[j], "--interval-ms") == 0 && j + 1 < argc)
			interval_ms = atol(argv[++j]);
		else {
			fprintf(stderr, "usage: bench_platform [--ticks N] "
			                "[--interval-ms MS]\n");
			return 2;
		}
	}
	if (ticks <= 0 || interval_ms <= 0) {
		fprintf(stderr, "bench_platform: ticks and interval must be "
		                "positive\n");
		return 2;
	}
	if (platform_init(NULL, cause, sizeof(cause)) != 0) {
		fprintf(stderr, "bench_platform: %s\n", cause);
		return 1;
	}

	iters = 20000;
	platform_sys_sample(&s, cause, sizeof(cause));
	t0 = cpu_us();
	for (i = 0; i < iters; i++)
		if (platform_sys_sample(&s, cause, sizeof(cause)) != 0) {
			fprintf(stderr, "bench_platform: %s\n", cause);
			return 1;
		}
	sys_us = (cpu_us() - t0) / (double)iters;

	t0 = cpu_us();
	for (i = 0; i < iters; i++)
		platform_proc_info(self, &pi);
	info_us = (cpu_us() - t0) / (double)iters;

	/* This process's statm does not move in this loop: every call but
	 * one every 2 s answers from the last status reading. */
	t0 = cpu_us();
	for (i = 0; i < iters; i++)
		platform_proc_sample(self, &pi);
	sample_us = (cpu_us() - t0) / (double)iters;

	iters = 500;
	t0 = cpu_us();
	for (i = 0; i < iters; i++)
		platform_list_tree(&self, 1, 0, scratch, 4096);
	scan_us = (cpu_us() - t0) / (double)iters;
	for (i = 0; i < iters; i++) {
		churn();
		t0 = cpu_us();
		platform_list_tree(&self, 1, 0, scratch, 4096);
		full_scan_us += cpu_us() - t0;
	}
	full_scan_us /= (double)iters;

	for (j = 0; j < NJOBS; j++) {
		uint64_t st;

		jobs[j] = start_job();
		if (platform_proc_start_time(jobs[j], &st) != 0 ||
		    (trees[j] = proctree_new(jobs[j], jobs[j], st)) == NULL) {
			fprintf(stderr, "bench_platform: cannot follow job\n");
			return 1;
		}
	}
	/* Let every leader fork its child, then take the first scans out
	 * of the measurement: they happen once per job, not per tick. */
	usleep(200000);
	for (j = 0; j < NJOBS; j++)
		proctree_refresh(trees[j]);
	tick_us = run_ticks(trees, ticks, 1, interval_ms, 0, &per_tree);
	churn_tick_us =
	    run_ticks(trees, ticks, ticks + 1, interval_ms, 1, &churn_per_tree);

	for (j = 0; j < NJOBS; j++) {
		kill(-jobs[j], SIGKILL);
		waitpid(jobs[j], NULL, 0);
		proctree_free(trees[j]);
	}
	platform_shutdown();

	printf("processes on the system:        %5d\n", count_processes());
	printf("platform_sys_sample:            %8.2f us CPU\n", sys_us);
	printf("platform_proc_info (one pid):   %8.2f us CPU\n", info_us);
	printf("platform_proc_sample, same pid: %8.2f us CPU (memory "
	       "unchanged)\n",
	       sample_us);
	printf("platform_list_tree, no new pid: %8.2f us CPU\n", scan_us);
	printf("platform_list_tree, new pid:    %8.2f us CPU\n", full_scan_us);
	printf("tick = sys sample + %d trees of 2 processes, %ld ms interval, "
	       "rescan every %d ms:\n",
	       NJOBS, interval_ms, PROCTREE_SCAN_INTERVAL_MS);
	printf("  quiet system:                 %8.2f us CPU per tick "
	       "(%.2f processes per tree)\n",
	       tick_us, per_tree);
	printf("  a process created every tick: %8.2f us CPU per tick "
	       "(%.2f processes per tree)\n",
	       churn_tick_us, churn_per_tree);
	return 0;
}
