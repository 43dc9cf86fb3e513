/* A program built only from what `cmake --install` put in place (header,
 * library, pkg-config file): it asks the daemon for the latest sample,
 * then queues a held job and reads it back, through the opaque spec and
 * job of the public header alone. */
#include <stddef.h>
#include <stdio.h>

#include <stageload.h>

/* A name the library uses inside, defined here for the program's own
 * purpose: the library must go on using its own (it exports sl_* only). */
int proto_utf8_valid(const char *s, size_t len);

int
proto_utf8_valid(const char *s, size_t len)
{
	(void)s;
	(void)len;
	return 0;
}

/* Queue a held job, read it back by its members' names, cancel it. */
static int
held_job(sl_client *c)
{
	const char *argv[] = {"/bin/true", NULL};
	sl_job_spec *s = sl_job_spec_new();
	sl_job *j = sl_job_new();
	struct sl_submitted sub;
	int64_t held = 0;
	int rc = -1;

	if (s != NULL && j != NULL &&
	    sl_job_spec_set_strv(s, "argv", argv) == 0 &&
	    sl_job_spec_set_str(s, "cwd", "/") == 0 &&
	    sl_job_spec_set_bool(s, "held", 1) == 0 &&
	    sl_submit(c, s, &sub) == 0 && sl_show(c, sub.id, 0, j) == 0 &&
	    sl_job_get_int(j, "held", &held) == 0) {
		printf(" job=%s held=%lld", sl_job_get_str(j, "state"),
		       (long long)held);
		rc = sl_cancel(c, sub.id, NULL);
	}
	sl_job_spec_free(s);
	sl_job_free(j);
	return rc;
}

int
main(int argc, char **argv)
{
	struct sl_info info;
	sl_client *c;

	if (argc != 2 || (c = sl_client_new()) == NULL)
		return 2;
	if (sl_connect(c, argv[1]) < 0 || sl_info(c, &info) < 0) {
		fprintf(stderr, "consumer: %s\n", sl_errmsg(c));
		sl_client_free(c);
		return 1;
	}
	printf("version=%s free_pct=%.1f has_sample=%d", info.daemon_version,
	       info.sample.free_pct, info.has_sample);
	if (held_job(c) < 0) {
		fprintf(stderr, "\nconsumer: %s\n", sl_errmsg(c));
		sl_client_free(c);
		return 1;
	}
	printf("\n");
	sl_client_free(c);
	return 0;
}
