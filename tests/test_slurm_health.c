/* stageload-slurm-health's logic: its config file, scontrol's node line,
 * and when it drains, resumes or leaves a node (slurm/health.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "health.h"

static void
conf_reads_every_key(void **state)
{
	struct health_conf c;
	char err[256] = "";

	(void)state;
	health_conf_defaults(&c);
	assert_int_equal(
	    health_conf_parse(&c,
	                      "# node health\n"
	                      "socket = /run/sl-%n.sock\n"
	                      "free_floor = 15%   # percent\n"
	                      "free_hold = 2m\n"
	                      "swap_budget = 2G\n"
	                      "scontrol = /opt/slurm/bin/scontrol\n"
	                      "slurm_conf = /etc/slurm/x.conf\n"
	                      "timeout=5s\n",
	                      err, sizeof err),
	    0);
	assert_string_equal(c.socket, "/run/sl-%n.sock");
	assert_true(c.free_floor_pct == 15);
	assert_int_equal(c.free_hold_ms, 120000);
	assert_int_equal(c.swap_budget, 2ULL << 30);
	assert_string_equal(c.scontrol, "/opt/slurm/bin/scontrol");
	assert_string_equal(c.slurm_conf, "/etc/slurm/x.conf");
	assert_int_equal(c.timeout_ms, 5000);
}

static void
conf_says_what_is_wrong(void **state)
{
	struct health_conf c;
	char err[256];

	(void)state;
	health_conf_defaults(&c);
	assert_int_equal(
	    health_conf_parse(&c, "\nfree_floor = 120\n", err, sizeof err),
	    -EINVAL);
	assert_string_equal(err, "line 2: bad free_floor '120'");
	assert_int_equal(
	    health_conf_parse(&c, "colour = red\n", err, sizeof err), -EINVAL);
	assert_non_null(strstr(err, "unknown key 'colour'"));
	assert_int_equal(health_conf_parse(&c, "socket\n", err, sizeof err),
	                 -EINVAL);
	assert_string_equal(err, "line 1: not \"key = value\"");
	assert_int_equal(
	    health_conf_parse(&c, "swap_budget = lots\n", err, sizeof err),
	    -EINVAL);
	/* five waits of it must stay well within slurmd's 60 s */
	assert_int_equal(
	    health_conf_parse(&c, "timeout = 11s\n", err, sizeof err), -EINVAL);
}

/* packaging/slurm-health.conf.example, its settings uncommented, reads
 * back as the defaults it says it shows. */
static void
example_shows_the_defaults(void **state)
{
	const char *src = getenv("SL_SRC");
	char path[4096], text[8192], out[8192], err[256] = "";
	struct health_conf def, c;
	size_t n, o = 0;
	FILE *f;

	(void)state;
	if (!src)
		skip();
	snprintf(path, sizeof path, "%s/packaging/slurm-health.conf.example",
	         src);
	assert_non_null(f = fopen(path, "r"));
	n = fread(text, 1, sizeof text - 1, f);
	fclose(f);
	text[n] = '\0';
	/* "#key = value" lines lose their '#'; prose comments stay. */
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		if (line[0] == '#' && line[1] >= 'a' && line[1] <= 'z')
			line++;
		o += (size_t)snprintf(out + o, sizeof out - o, "%s\n", line);
	}
	health_conf_defaults(&def);
	health_conf_defaults(&c);
	assert_int_equal(health_conf_parse(&c, out, err, sizeof err), 0);
	assert_string_equal(c.socket, def.socket);
	assert_true(c.free_floor_pct == def.free_floor_pct);
	assert_int_equal(c.free_hold_ms, def.free_hold_ms);
	assert_int_equal(c.swap_budget, def.swap_budget);
	assert_string_equal(c.scontrol, def.scontrol);
	assert_string_equal(c.slurm_conf, def.slurm_conf);
	assert_int_equal(c.timeout_ms, def.timeout_ms);
}

static void
expand_puts_the_node_in(void **state)
{
	char out[64];

	(void)state;
	assert_int_equal(
	    health_expand("/tmp/x/%n/sl.sock", "n1", out, sizeof out), 0);
	assert_string_equal(out, "/tmp/x/n1/sl.sock");
	assert_int_equal(health_expand("/a%%b", "n1", out, sizeof out), 0);
	assert_string_equal(out, "/a%b");
	assert_int_equal(health_expand("/a%x", "n1", out, sizeof out), -EINVAL);
	assert_int_equal(health_expand("/%n", "n1", out, 3), -ENAMETOOLONG);
}

static void
node_line_is_read(void **state)
{
	struct health_node n;

	(void)state;
	assert_int_equal(
	    health_node_parse("NodeName=n1 Arch=x86_64 CoresPerSocket=1 "
	                      "State=IDLE+DRAIN ThreadsPerCore=1 "
	                      "Reason=stageload: free 8% under 10% for 2.0s "
	                      "[root@2026-12-02T08:00:00] Comment=(null)\n",
	                      &n),
	    0);
	assert_true(n.drained);
	assert_string_equal(n.reason, "stageload: free 8% under 10% for 2.0s");
	assert_int_equal(
	    health_node_parse("NodeName=n2 State=MIXED Reason=(null)\n", &n),
	    0);
	assert_false(n.drained);
	assert_string_equal(n.reason, "");
	/* "TRES=...State=" inside another field's value is not State= */
	assert_int_equal(
	    health_node_parse("NodeName=n2 Features=xState=DRAIN\n", &n),
	    -EINVAL);
}

static struct health_conf
conf(void)
{
	struct health_conf c;

	health_conf_defaults(&c);
	c.free_floor_pct = 20;
	c.free_hold_ms = 2000;
	c.swap_budget = 1 << 30;
	return c;
}

static const struct health_memory low = {1, 10, 0, 1, 12};
static const struct health_memory fine = {1, 60, 0, 1, 60};

static void
drains_when_free_stays_low(void **state)
{
	struct health_conf c = conf();
	struct health_node n = {0, ""};
	struct health_memory young = low, once_high = low;
	char why[256];

	(void)state;
	assert_int_equal(health_decide(&c, &n, &low, why, sizeof why),
	                 HEALTH_DRAIN);
	assert_string_equal(why, "stageload: free 12% under 20% for 2.0s");
	/* a window the daemon did not sample all of, or one sample above the
	 * floor in it, is not "stays under" */
	young.window_covered = 0;
	assert_int_equal(health_decide(&c, &n, &young, why, sizeof why),
	                 HEALTH_NONE);
	once_high.window_max_free_pct = 25;
	assert_int_equal(health_decide(&c, &n, &once_high, why, sizeof why),
	                 HEALTH_NONE);
	assert_int_equal(health_decide(&c, &n, &fine, why, sizeof why),
	                 HEALTH_NONE);
}

static void
drains_when_swap_passes_the_budget(void **state)
{
	struct health_conf c = conf();
	struct health_node n = {0, ""};
	struct health_memory m = fine;
	char why[256];

	(void)state;
	m.swap_used = (1 << 30) + 1;
	assert_int_equal(health_decide(&c, &n, &m, why, sizeof why),
	                 HEALTH_DRAIN);
	assert_string_equal(why,
	                    "stageload: swap 1.0G over the node budget 1.0G");
	c.swap_budget = 0; /* none */
	assert_int_equal(health_decide(&c, &n, &m, why, sizeof why),
	                 HEALTH_NONE);
}

static void
resumes_only_its_own_drains(void **state)
{
	struct health_conf c = conf();
	struct health_node ours = {1, "stageload: free 12% under 20% for 2.0s"};
	struct health_node admin = {1, "replacing a DIMM"};
	struct health_node unnamed = {1, ""};
	struct health_memory still_low_now = fine;
	char why[256];

	(void)state;
	assert_int_equal(health_decide(&c, &ours, &fine, why, sizeof why),
	                 HEALTH_RESUME);
	assert_int_equal(health_decide(&c, &ours, &low, why, sizeof why),
	                 HEALTH_NONE);
	/* back only when free is above the floor now, not once in the window */
	still_low_now.free_pct = 15;
	assert_int_equal(
	    health_decide(&c, &ours, &still_low_now, why, sizeof why),
	    HEALTH_NONE);
	assert_int_equal(health_decide(&c, &admin, &fine, why, sizeof why),
	                 HEALTH_NONE);
	assert_non_null(
	    strstr(why, "drained by someone else (replacing a DIMM)"));
	assert_int_equal(health_decide(&c, &admin, &low, why, sizeof why),
	                 HEALTH_NONE);
	assert_int_equal(health_decide(&c, &unnamed, &fine, why, sizeof why),
	                 HEALTH_NONE);
}

static void
leaves_the_node_when_the_daemon_is_silent(void **state)
{
	struct health_conf c = conf();
	struct health_node up = {0, ""};
	struct health_node ours = {1, "stageload: free 12% under 20% for 2.0s"};
	struct health_memory none = {0};
	char why[256];

	(void)state;
	assert_int_equal(health_decide(&c, &up, &none, why, sizeof why),
	                 HEALTH_NONE);
	assert_string_equal(why,
	                    "the daemon does not answer: node left as it is");
	assert_int_equal(health_decide(&c, &ours, &none, why, sizeof why),
	                 HEALTH_NONE);
	assert_string_equal(why,
	                    "the daemon does not answer: node left drained");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(conf_reads_every_key),
	    cmocka_unit_test(conf_says_what_is_wrong),
	    cmocka_unit_test(example_shows_the_defaults),
	    cmocka_unit_test(expand_puts_the_node_in),
	    cmocka_unit_test(node_line_is_read),
	    cmocka_unit_test(drains_when_free_stays_low),
	    cmocka_unit_test(drains_when_swap_passes_the_budget),
	    cmocka_unit_test(resumes_only_its_own_drains),
	    cmocka_unit_test(leaves_the_node_when_the_daemon_is_silent),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
