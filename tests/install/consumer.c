/* A program built only from what `cmake --install` put in place (header,
 * library, pkg-config file): it asks the daemon for the latest sample. */
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
	printf("version=%s free_pct=%.1f has_sample=%d\n", info.daemon_version,
	       info.sample.free_pct, info.has_sample);
	sl_client_free(c);
	return 0;
}
