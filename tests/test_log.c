/* The daemon's log lines: one line per message, whatever the message holds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "log.h"

/* Run fn with stderr sent to a temporary file; return what it wrote. */
static char *
capture(void (*fn)(void))
{
	FILE *f = tmpfile();
	int saved;
	long n;
	char *out;

	assert_non_null(f);
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	assert_true(saved >= 0);
	assert_true(dup2(fileno(f), STDERR_FILENO) >= 0);
	fn();
	fflush(stderr);
	assert_true(dup2(saved, STDERR_FILENO) >= 0);
	close(saved);
	n = ftell(f);
	assert_true(n >= 0);
	out = calloc(1, (size_t)n + 1);
	assert_non_null(out);
	rewind(f);
	assert_int_equal(fread(out, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	return out;
}

static void
log_forged(void)
{
	log_init(0, 0);
	log_info("jobs: job %d (%s): killed", 7,
	         "n\nstageloadd[fatal]: FORGED\r\x1b[2J\t\x7f");
}

static void
test_control_bytes_escaped(void **state)
{
	char *out = capture(log_forged);

	(void)state;
	assert_string_equal(out, "stageloadd[info]: jobs: job 7 (n\\nstageloadd"
	                         "[fatal]: FORGED\\r\\e[2J\\t\\x7f): killed\n");
	free(out);
}

static void
log_unicode(void)
{
	log_init(0, 0);
	/* OSC 52 with its C1 form, a C1 CSI, U+202E and U+2066, a byte that
	 * is not UTF-8; CJK text is text */
	log_info("client 3 is %s",
	         "\xc2\x9d"
	         "52;c;eA==\xc2\x9c\xc2\x9b"
	         "2J\xe2\x80\xae\xe2\x81\xa6\xff\xe6\xbc\xa2");
}

static void
test_c1_bidi_escaped(void **state)
{
	char *out = capture(log_unicode);

	(void)state;
	assert_string_equal(out, "stageloadd[info]: client 3 is \\u{009D}52;c;"
	                         "eA==\\u{009C}\\u{009B}2J\\u{202E}\\u{2066}"
	                         "\\xff\xe6\xbc\xa2\n");
	free(out);
}

static char long_name[5000];

static void
log_long(void)
{
	log_init(0, 0);
	log_warnx("name %s end", long_name);
}

static void
test_long_message_whole(void **state)
{
	char *out = capture(log_long);
	size_t len = strlen(out);

	(void)state;
	/* Longer than the stack buffer: written whole, on one line. */
	assert_int_equal(len, strlen("stageloadd[warn]: name ") + 4999 +
	                          strlen(" end\n"));
	assert_non_null(strstr(out, "x end\n"));
	assert_ptr_equal(strchr(out, '\n'), out + len - 1);
	free(out);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_control_bytes_escaped),
	    cmocka_unit_test(test_c1_bidi_escaped),
	    cmocka_unit_test(test_long_message_whole),
	};

	memset(long_name, 'x', sizeof long_name - 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
