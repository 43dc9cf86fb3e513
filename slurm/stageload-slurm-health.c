/*
 * stageload-slurm-health: Slurm's HealthCheckProgram for a node that runs
 * stageloadd. slurmd runs it as root every HealthCheckInterval seconds with
 * no arguments and SLURMD_NODENAME in its environment; it drains the node
 * (reason "stageload: ...") when free memory stays under a floor or swap in
 * use passes the node's budget, resumes the nodes it drained once memory is
 * back, and leaves alone a node drained by anyone else, or any node when
 * the daemon does not answer (docs/slurm.md, "Node health").
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

#include "health.h"
#include "stageload.h"

static void
usage(FILE *f)
{
	fprintf(f,
	        "usage: stageload-slurm-health [--config FILE] [--node NAME]\n"
	        "  --config FILE  settings (default " HEALTH_CONF_DEFAULT ")\n"
	        "  --node NAME    the node (default $SLURMD_NODENAME)\n"
	        "Run by slurmd as HealthCheckProgram; see docs/slurm.md.\n");
}

/* Runs scontrol with argv, its stdout into out (NUL-terminated). Bounded by
 * an alarm set in the child: the default action of SIGALRM ends scontrol
 * if slurmctld hangs, so this program finishes well within slurmd's 60 s.
 * Returns scontrol's exit status, or -errno. */
static int
run_scontrol(const struct health_conf *c, char *const argv[], char *out,
             size_t len)
{
	int fds[2], st;
	size_t n = 0;
	pid_t pid;

	if (pipe(fds) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		int e = errno;

		close(fds[0]);
		close(fds[1]);
		return -e;
	}
	if (pid == 0) {
		unsigned secs = (unsigned)((c->timeout_ms + 999) / 1000);

		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		if (c->slurm_conf[0])
			setenv("SLURM_CONF", c->slurm_conf, 1);
		alarm(secs ? secs : 1);
		execv(c->scontrol, argv);
		fprintf(stderr, "stageload-slurm-health: %s: %s\n", c->scontrol,
		        strerror(errno));
		_exit(127);
	}
	close(fds[1]);
	for (;;) {
		ssize_t r = read(fds[0], out + n, len - 1 - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
		if (n == len - 1) {
			/* keep draining so scontrol never blocks on a full pipe
			 */
			char sink[4096];

			while (read(fds[0], sink, sizeof sink) > 0) {
			}
			break;
		}
	}
	out[n] = '\0';
	close(fds[0]);
	while (waitpid(pid, &st, 0) < 0) {
		if (errno != EINTR)
			return -errno;
	}
	if (WIFSIGNALED(st))
		return -ETIMEDOUT;
	return WEXITSTATUS(st);
}

/* What the daemon says: now, and the highest free % over the last hold. */
static void
ask_daemon(const struct health_conf *c, const char *path,
           struct health_memory *m)
{
	sl_client *cl = sl_client_new();
	struct sl_info info;
	struct sl_history *h = NULL;
	int64_t now, since;

	memset(m, 0, sizeof *m);
	if (!cl) {
		syslog(LOG_ERR, "out of memory");
		return;
	}
	sl_set_timeout(cl, (int)c->timeout_ms);
	if (sl_connect(cl, path) < 0 || sl_info(cl, &info) < 0) {
		syslog(LOG_WARNING, "daemon at %s: %s", path, sl_errmsg(cl));
		goto out;
	}
	if (!info.has_sample) {
		syslog(LOG_WARNING, "daemon at %s has no sample yet", path);
		goto out;
	}
	m->answered = 1;
	m->free_pct = info.sample.free_pct;
	m->swap_used = info.sample.swap_used_bytes;
	m->window_max_free_pct = m->free_pct;
	if (c->free_hold_ms <= 0)
		goto out;
	now = info.sample.sampled_at_ms;
	since = now - c->free_hold_ms;
	/* Only a daemon that sampled the whole window can say memory stayed
	 * low all of it; a younger one is asked again next time. */
	if (info.started_at_ms > since)
		goto out;
	if (sl_history(cl, since, now + 1, 0, 0, &h) < 0) {
		syslog(LOG_WARNING, "daemon at %s: history: %s", path,
		       sl_errmsg(cl));
		goto out;
	}
	m->window_covered = h->nbuckets > 0;
	for (size_t i = 0; i < h->nbuckets; i++) {
		if (h->buckets[i].gap)
			m->window_covered = 0;
		if (h->buckets[i].free_pct.max > m->window_max_free_pct)
			m->window_max_free_pct = h->buckets[i].free_pct.max;
	}
	sl_history_free(h);
out:
	sl_client_free(cl);
}

int
main(int argc, char **argv)
{
	struct health_conf conf;
	struct health_node node;
	struct health_memory mem;
	const char *conf_path = NULL, *name = getenv("SLURMD_NODENAME");
	char err[1024], path[1024], out[16384], why[512], nodearg[300];
	int rc;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--config") && i + 1 < argc) {
			conf_path = argv[++i];
		} else if (!strcmp(argv[i], "--node") && i + 1 < argc) {
			name = argv[++i];
		} else if (!strcmp(argv[i], "-h") ||
		           !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else {
			usage(stderr);
			return 2;
		}
	}
	/* slurmd keeps nothing of our output: the log is syslog's, and stderr
	 * too for a person running it by hand. */
	openlog("stageload-slurm-health", LOG_PID | LOG_PERROR, LOG_DAEMON);
	if (!name || !*name) {
		syslog(LOG_ERR,
		       "no node: SLURMD_NODENAME is not set and no --node");
		return 2;
	}
	health_conf_defaults(&conf);
	rc =
	    health_conf_load(&conf, conf_path ? conf_path : HEALTH_CONF_DEFAULT,
	                     err, sizeof err);
	/* Without a config file of its own the defaults apply; a named one
	 * must be there. */
	if (rc < 0 && !(rc == -ENOENT && !conf_path)) {
		syslog(LOG_ERR, "%s", err);
		return 2;
	}
	if (health_expand(conf.socket, name, path, sizeof path) < 0) {
		syslog(LOG_ERR, "socket '%s': bad %% sequence or too long",
		       conf.socket);
		return 2;
	}
	snprintf(nodearg, sizeof nodearg, "%s", name);
	{
		char *av[] = {conf.scontrol, "show", "node",
		              nodearg,       "-o",   NULL};

		rc = run_scontrol(&conf, av, out, sizeof out);
	}
	if (rc != 0 || health_node_parse(out, &node) < 0) {
		syslog(LOG_ERR, "%s show node %s: %s", conf.scontrol, name,
		       rc < 0 ? strerror(-rc)
		       : rc   ? "failed"
		              : "no State= in its answer");
		return 1;
	}
	ask_daemon(&conf, path, &mem);
	switch (health_decide(&conf, &node, &mem, why, sizeof why)) {
	case HEALTH_NONE:
		syslog(LOG_INFO, "node %s: %s", name, why);
		return 0;
	case HEALTH_DRAIN: {
		char n_arg[320], r_arg[600];
		char *av[] = {conf.scontrol, "update", n_arg,
		              "state=drain", r_arg,    NULL};

		snprintf(n_arg, sizeof n_arg, "nodename=%s", name);
		snprintf(r_arg, sizeof r_arg, "reason=%s", why);
		rc = run_scontrol(&conf, av, out, sizeof out);
		syslog(rc ? LOG_ERR : LOG_NOTICE, "node %s: drain (%s)%s", name,
		       why, rc ? ": scontrol failed" : "");
		return rc ? 1 : 0;
	}
	case HEALTH_RESUME: {
		char n_arg[320];
		char *av[] = {conf.scontrol, "update", n_arg, "state=resume",
		              NULL};

		snprintf(n_arg, sizeof n_arg, "nodename=%s", name);
		rc = run_scontrol(&conf, av, out, sizeof out);
		syslog(rc ? LOG_ERR : LOG_NOTICE, "node %s: %s%s", name, why,
		       rc ? ": scontrol failed" : "");
		return rc ? 1 : 0;
	}
	}
	return 0;
}
