/*
 * Calls every function of daemon/platform.h once and prints what it got, so
 * the cross build proves the macOS backend links against libSystem and a
 * Mac user can run it as a first check (docs/macos.md).
 */
#include <sys/socket.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "platform.h"

static int failures;

static void
check(const char *what, int rc, const char *cause)
{
	if (rc < 0) {
		printf("%-22s error %s%s%s\n", what, strerror(-rc),
		       cause != NULL && cause[0] != '\0' ? ": " : "",
		       cause != NULL ? cause : "");
		failures++;
	}
}

int
main(void)
{
	struct platform_config cfg = {NULL, 10, 40};
	struct sys_sample s;
	struct proc_info pi;
	char cause[256] = "", path[1024];
	pid_t self = getpid(), tree[64];
	uint64_t start;
	uid_t uid;
	gid_t gid, *groups;
	pid_t peer;
	int sv[2], ngroups, rc;

	rc = platform_init(&cfg, cause, sizeof cause);
	check("platform_init", rc, cause);
	if (rc < 0)
		return 1;

	rc = platform_sys_sample(&s, cause, sizeof cause);
	check("platform_sys_sample", rc, cause);
	if (rc == 0)
		printf("total %llu available %llu free %.0f%% swap %llu/%llu "
		       "pressure %d compressed %llu wired %llu\n",
		       (unsigned long long)s.total_bytes,
		       (unsigned long long)s.available_bytes, s.free_pct,
		       (unsigned long long)s.swap_used_bytes,
		       (unsigned long long)s.swap_total_bytes, (int)s.pressure,
		       (unsigned long long)s.compressed_bytes,
		       (unsigned long long)s.wired_bytes);

	rc = platform_proc_info(self, &pi);
	check("platform_proc_info", rc, NULL);
	if (rc == 0)
		printf("pid %d ppid %d pgid %d uid %u footprint %llu\n",
		       (int)pi.pid, (int)pi.ppid, (int)pi.pgid,
		       (unsigned)pi.uid,
		       (unsigned long long)pi.footprint_bytes);

	rc = platform_proc_sample(self, &pi);
	check("platform_proc_sample", rc, NULL);
	if (rc == 0)
		printf("sampled: pid %d footprint %llu\n", (int)pi.pid,
		       (unsigned long long)pi.footprint_bytes);

	rc = platform_proc_start_time(self, &start);
	check("platform_proc_start_time", rc, NULL);
	if (rc == 0 && start != pi.start_time) {
		printf("platform_proc_start_time %llu differs from "
		       "platform_proc_sample's %llu\n",
		       (unsigned long long)start,
		       (unsigned long long)pi.start_time);
		failures++;
	}

	rc = platform_list_tree(&self, 1, getpgrp(), tree, 64);
	check("platform_list_tree", rc, NULL);
	if (rc >= 0)
		printf("tree of %d: %d processes\n", (int)self, rc);

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0) {
		rc = platform_peer_cred(sv[0], &uid, &gid, &peer);
		check("platform_peer_cred", rc, NULL);
		if (rc == 0)
			printf("peer uid %u gid %u pid %d\n", (unsigned)uid,
			       (unsigned)gid, (int)peer);
		rc = platform_peer_groups(sv[0], &groups, &ngroups);
		check("platform_peer_groups", rc, NULL);
		if (rc == 0) {
			printf("peer groups");
			for (int i = 0; i < ngroups; i++)
				printf(" %u", (unsigned)groups[i]);
			printf("\n");
			free(groups);
		}
		close(sv[0]);
		close(sv[1]);
	}

	rc = platform_user_groups(getenv("USER") ? getenv("USER") : "root",
	                          getgid(), &groups, &ngroups);
	check("platform_user_groups", rc, NULL);
	if (rc == 0) {
		printf("%d groups\n", ngroups);
		free(groups);
	}

	rc = platform_default_socket(getuid() == 0, path, sizeof path);
	check("platform_default_socket", rc, NULL);
	if (rc == 0)
		printf("socket %s\n", path);
	rc = platform_default_db(getuid() == 0, path, sizeof path);
	check("platform_default_db", rc, NULL);
	if (rc == 0)
		printf("db %s\n", path);

	platform_shutdown();
	return failures == 0 ? 0 : 1;
}
