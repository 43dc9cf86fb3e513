/* proto_text_escape: the one escaper of text from users (proto/text.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "text.h"

/* s escaped whole with flags; a static buffer, for comparing. */
static const char *
esc(const char *s, size_t len, unsigned flags)
{
	static char buf[4096];
	size_t n, done;

	done = proto_text_escape(s, len, flags, 0, buf, sizeof buf, &n);
	assert_int_equal(done, len);
	assert_int_equal(n, strlen(buf));
	return buf;
}
#define ESC(lit) esc(lit, sizeof lit - 1, 0)

/* No byte of the output is a control, C1, bidi or line separator: what a
 * terminal could act on. */
static void
assert_inert(const char *out)
{
	const unsigned char *p = (const unsigned char *)out;

	for (; *p != '\0'; p++) {
		assert_false(*p < 0x20 || *p == 0x7f);
		assert_false(p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f);
		assert_false(p[0] == 0xe2 && p[1] == 0x80 &&
		             ((p[2] >= 0xaa && p[2] <= 0xae) || p[2] == 0x8e ||
		              p[2] == 0x8f || p[2] == 0xa8 || p[2] == 0xa9));
		assert_false(p[0] == 0xe2 && p[1] == 0x81 && p[2] >= 0xa6 &&
		             p[2] <= 0xa9);
		assert_false(p[0] == 0xd8 && p[1] == 0x9c);
	}
}

static void
test_esc(void **state)
{
	(void)state;
	assert_string_equal(ESC("a\x1b[2Jb"), "a\\e[2Jb");
	assert_string_equal(ESC("\x1b]0;title\x07"), "\\e]0;title\\x07");
	assert_inert(ESC("\x1b[31mred\x1b[0m"));
}

static void
test_osc52(void **state)
{
	/* OSC 52: set the clipboard to base64 "rm -rf ~", BEL-terminated
	 * and ST-terminated */
	(void)state;
	assert_string_equal(ESC("x\x1b]52;c;cm0gLXJmIH4=\x07y"),
	                    "x\\e]52;c;cm0gLXJmIH4=\\x07y");
	assert_string_equal(ESC("\x1b]52;c;cm0gLXJmIH4=\x1b\\"),
	                    "\\e]52;c;cm0gLXJmIH4=\\e\\\\");
	/* the C1 forms: OSC U+009D, ST U+009C */
	assert_string_equal(ESC("\xc2\x9d"
	                        "52;c;eA==\xc2\x9c"),
	                    "\\u{009D}52;c;eA==\\u{009C}");
}

static void
test_c1(void **state)
{
	(void)state;
	/* CSI as a UTF-8 encoded C1 control */
	assert_string_equal(ESC("x\xc2\x9b"
	                        "31m"),
	                    "x\\u{009B}31m");
	assert_string_equal(ESC("\xc2\x80\xc2\x9f"), "\\u{0080}\\u{009F}");
	/* U+00A0 and U+00E9 are text */
	assert_string_equal(ESC("\xc2\xa0\xc3\xa9"), "\xc2\xa0\xc3\xa9");
	/* a raw C1 byte is not UTF-8: shown as a byte */
	assert_string_equal(ESC("\x9b"
	                        "31m"),
	                    "\\x9b31m");
}

static void
test_bidi(void **state)
{
	(void)state;
	/* U+202E RIGHT-TO-LEFT OVERRIDE: "evil\u202Etxt.exe" */
	assert_string_equal(ESC("evil\xe2\x80\xae"
	                        "exe.txt"),
	                    "evil\\u{202E}exe.txt");
	/* U+2066 LEFT-TO-RIGHT ISOLATE .. U+2069 POP DIRECTIONAL ISOLATE */
	assert_string_equal(ESC("\xe2\x81\xa6x\xe2\x81\xa9"),
	                    "\\u{2066}x\\u{2069}");
	assert_string_equal(ESC("\xe2\x80\xaa\xe2\x80\xab\xe2\x80\xac\xe2\x80"
	                        "\xad\xe2\x81\xa7\xe2\x81\xa8"),
	                    "\\u{202A}\\u{202B}\\u{202C}\\u{202D}\\u{2067}"
	                    "\\u{2068}");
	/* LRM, RLM, ARABIC LETTER MARK, line and paragraph separators */
	assert_string_equal(ESC("\xe2\x80\x8e\xe2\x80\x8f\xd8\x9c\xe2\x80\xa8"
	                        "\xe2\x80\xa9"),
	                    "\\u{200E}\\u{200F}\\u{061C}\\u{2028}\\u{2029}");
	/* neighbours are text: U+2030 PER MILLE, U+2065 (unassigned but
	 * not a control), U+200D ZWJ of emoji sequences */
	assert_string_equal(ESC("\xe2\x80\xb0\xe2\x81\xa5\xe2\x80\x8d"),
	                    "\xe2\x80\xb0\xe2\x81\xa5\xe2\x80\x8d");
}

static void
test_invalid_utf8(void **state)
{
	(void)state;
	/* stray continuation, overlong, surrogate, above U+10FFFF, cut */
	assert_string_equal(ESC("a\x80z"), "a\\x80z");
	assert_string_equal(ESC("\xc0\xaf"), "\\xc0\\xaf");
	assert_string_equal(ESC("\xe0\x80\xaf"), "\\xe0\\x80\\xaf");
	assert_string_equal(ESC("\xed\xa0\x80"), "\\xed\\xa0\\x80");
	assert_string_equal(ESC("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");
	assert_string_equal(ESC("\xff\xfe"), "\\xff\\xfe");
	assert_string_equal(ESC("ok\xe2\x80"), "ok\\xe2\\x80");
	/* an overlong ESC (C0 9B would be CSI to a lax decoder) */
	assert_string_equal(ESC("\xc0\x9b"), "\\xc0\\x9b");
	/* NUL inside the given length */
	assert_string_equal(esc("a\0b", 3, 0), "a\\x00b");
}

static void
test_text_untouched(void **state)
{
	static const char cjk[] = "\xe6\xbc\xa2\xe5\xad\x97 \xe3\x81\x8b\xe3"
	                          "\x81\xaa \xed\x95\x9c\xea\xb8\x80";
	static const char more[] = "caf\xc3\xa9 \xe2\x96\x81 \xf0\x9f\x98\x80 "
	                           "\xd7\xa9\xd7\x9c\xd7\x95\xd7\x9d";

	(void)state;
	assert_string_equal(ESC(cjk), cjk);
	assert_string_equal(ESC(more), more); /* accents, blocks, emoji,
	                                         Hebrew (RTL by itself) */
	assert_string_equal(ESC("plain ASCII: a-z 0-9 ~!@#$%^&*()"),
	                    "plain ASCII: a-z 0-9 ~!@#$%^&*()");
}

static void
test_named_escapes(void **state)
{
	static const char ml[] = "l1\n\tl2\r\x1b[K\n";

	(void)state;
	assert_string_equal(ESC("a\nb\tc\rd\\e"), "a\\nb\\tc\\rd\\\\e");
	assert_string_equal(ESC("\x01\x7f"), "\\x01\\x7f");
	/* a literal "\e" reads back apart from an ESC */
	assert_string_equal(ESC("\\e"), "\\\\e");
	/* multi-line: newlines and tabs stay, CR and the rest do not */
	assert_string_equal(esc(ml, sizeof ml - 1, PROTO_TEXT_MULTILINE),
	                    "l1\n\tl2\\r\\e[K\n");
}

static void
test_json(void **state)
{
	static const char j[] = "{\"name\":\"a\\u001b]52;c;eA==\\u0007\xc2\x9b"
	                        "\xe2\x80\xae\x7f\\\\\",\"n\":1}\n";

	(void)state;
	assert_string_equal(esc(j, sizeof j - 1, PROTO_TEXT_JSON),
	                    "{\"name\":\"a\\u001b]52;c;eA==\\u0007\\u009b"
	                    "\\u202e\\u007f\\\\\",\"n\":1}\n");
	/* raw controls (cJSON never writes them) and bad bytes stay JSON */
	assert_string_equal(esc("\"\x1b\xff\"", 4, PROTO_TEXT_JSON),
	                    "\"\\u001b\\ufffd\"");
}

static void
test_max_chars_and_room(void **state)
{
	char buf[64];
	size_t n, done;

	(void)state;
	/* cut by characters, never inside one or inside an escape */
	done = proto_text_escape("\xc3\xa9\xc3\xa9\xc3\xa9", 6, 0, 2, buf,
	                         sizeof buf, &n);
	assert_int_equal(done, 4);
	assert_string_equal(buf, "\xc3\xa9\xc3\xa9");
	done = proto_text_escape("abc\x1b", 4, 0, 4, buf, sizeof buf, &n);
	assert_int_equal(done, 3);
	assert_string_equal(buf, "abc");
	done = proto_text_escape("ab\xe2\x80\xae", 5, 0, 0, buf, 10, &n);
	assert_int_equal(done, 2);
	assert_string_equal(buf, "ab");
	/* no room at all: nothing consumed, nothing written */
	assert_int_equal(proto_text_escape("abc", 3, 0, 0, buf, 0, &n), 0);
	assert_int_equal(n, 0);
	buf[0] = 'x';
	assert_int_equal(proto_text_escape("abc", 3, 0, 0, buf, 1, &n), 0);
	assert_string_equal(buf, "");
}

static void
test_partial(void **state)
{
	char buf[64];
	size_t n, done;

	(void)state;
	/* a chunk that ends inside U+202E keeps its tail for the next */
	done = proto_text_escape("ab\xe2\x80", 4, PROTO_TEXT_PARTIAL, 0, buf,
	                         sizeof buf, &n);
	assert_int_equal(done, 2);
	assert_string_equal(buf, "ab");
	done = proto_text_escape("\xe2\x80\xae", 3, PROTO_TEXT_PARTIAL, 0, buf,
	                         sizeof buf, &n);
	assert_int_equal(done, 3);
	assert_string_equal(buf, "\\u{202E}");
	/* an ill-formed tail is not waited for */
	done = proto_text_escape("a\xe2\x41", 3, PROTO_TEXT_PARTIAL, 0, buf,
	                         sizeof buf, &n);
	assert_int_equal(done, 3);
	assert_string_equal(buf, "a\\xe2A");
}

static void
test_dup_worst_case(void **state)
{
	static unsigned char all[256];
	char *out;
	size_t i, n;

	(void)state;
	for (i = 0; i < sizeof all; i++)
		all[i] = (unsigned char)i;
	/* every byte value: nothing raw a terminal acts on, whole */
	out = proto_text_escape_dup((const char *)all, sizeof all, 0, &n);
	assert_non_null(out);
	assert_int_equal(n, strlen(out));
	assert_inert(out);
	free(out);
	/* the growth bound holds: all C1 (2 bytes -> 8), all DEL in JSON */
	out = proto_text_escape_dup("\xc2\x9b\xc2\x9b", 4, 0, &n);
	assert_string_equal(out, "\\u{009B}\\u{009B}");
	free(out);
	out = proto_text_escape_dup("\x7f\x7f", 2, PROTO_TEXT_JSON, &n);
	assert_string_equal(out, "\\u007f\\u007f");
	assert_true(n <= 2 * PROTO_TEXT_GROWTH);
	free(out);
}

/* The one test of a shell word, shared by the daemon's job command and
 * stageloadctl show: what pastes back unquoted, and what must be quoted. */
static void
test_shell_plain(void **state)
{
	static const char *const plain[] = {"python3", "a_b@c%d+e=f:g,h./i-j",
	                                    "/usr/bin/env", "8G"};
	static const char *const quoted[] = {"",         "a b", "$HOME", "a'b",
	                                     "a\"b",     "*",   "~",     "a;b",
	                                     "\xc3\xa9", "a\nb"};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof plain / sizeof plain[0]; i++)
		assert_true(proto_shell_plain(plain[i]));
	for (i = 0; i < sizeof quoted / sizeof quoted[0]; i++)
		assert_false(proto_shell_plain(quoted[i]));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_esc),
	    cmocka_unit_test(test_osc52),
	    cmocka_unit_test(test_c1),
	    cmocka_unit_test(test_bidi),
	    cmocka_unit_test(test_invalid_utf8),
	    cmocka_unit_test(test_text_untouched),
	    cmocka_unit_test(test_named_escapes),
	    cmocka_unit_test(test_json),
	    cmocka_unit_test(test_max_chars_and_room),
	    cmocka_unit_test(test_partial),
	    cmocka_unit_test(test_dup_worst_case),
	    cmocka_unit_test(test_shell_plain),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
