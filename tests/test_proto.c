/* Framing, UTF-8, JSON-RPC classification, encoders and parameter getters
 * against proto/PROTOCOL.md. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "names.h"
#include "proto.h"

#define MAX_LINES 64

/* Lines delivered by the reader, copied out. */
struct sink {
	char *lines[MAX_LINES];
	size_t lens[MAX_LINES];
	int n;
	int stop_at;     /* return 7 from the callback on this line (1-based) */
	int pause_every; /* return PROTO_READ_PAUSE after every this many */
};

static int
sink_cb(void *arg, char *line, size_t len)
{
	struct sink *s = arg;

	assert_true(s->n < MAX_LINES);
	/* The line is NUL-terminated in place. */
	assert_int_equal(line[len], '\0');
	s->lines[s->n] = malloc(len + 1);
	assert_non_null(s->lines[s->n]);
	memcpy(s->lines[s->n], line, len + 1);
	s->lens[s->n] = len;
	s->n++;
	if (s->stop_at == s->n)
		return 7;
	if (s->pause_every > 0 && s->n % s->pause_every == 0)
		return PROTO_READ_PAUSE;
	return 0;
}

static void
sink_free(struct sink *s)
{
	int i;

	for (i = 0; i < s->n; i++)
		free(s->lines[i]);
	memset(s, 0, sizeof *s);
}

static void
test_frame_split_everywhere(void **state)
{
	static const char in[] = "{\"a\":1}\n\nBB\r\n\r\n\xc3\xa9t\xc3\xa9\n"
	                         "\xf0\x9d\x84\x9e\ntail";
	static const char *const want[] = {
	    "{\"a\":1}", "BB", "\xc3\xa9t\xc3\xa9", "\xf0\x9d\x84\x9e"};
	size_t n = sizeof in - 1, i, j;
	struct proto_reader r;
	struct sink s;

	for (i = 0; i <= n; i++) {
		memset(&s, 0, sizeof s);
		proto_reader_init(&r, 64);
		assert_int_equal(proto_reader_feed(&r, in, i, sink_cb, &s), 0);
		assert_int_equal(
		    proto_reader_feed(&r, in + i, n - i, sink_cb, &s), 0);
		assert_int_equal(s.n, 4);
		for (j = 0; j < 4; j++) {
			assert_string_equal(s.lines[j], want[j]);
			assert_int_equal(s.lens[j], strlen(want[j]));
		}
		/* "tail" waits for its newline. */
		assert_int_equal(r.len, 4);
		assert_int_equal(proto_reader_feed(&r, "\n", 1, sink_cb, &s),
		                 0);
		assert_int_equal(s.n, 5);
		assert_string_equal(s.lines[4], "tail");
		proto_reader_free(&r);
		sink_free(&s);
	}

	/* One byte at a time. */
	memset(&s, 0, sizeof s);
	proto_reader_init(&r, 64);
	for (i = 0; i < n; i++)
		assert_int_equal(proto_reader_feed(&r, in + i, 1, sink_cb, &s),
		                 0);
	assert_int_equal(s.n, 4);
	for (j = 0; j < 4; j++)
		assert_string_equal(s.lines[j], want[j]);
	proto_reader_free(&r);
	sink_free(&s);
}

static void
test_frame_many_in_one_feed(void **state)
{
	struct proto_reader r;
	struct sink s = {0};
	char buf[40 * 16];
	size_t len = 0;
	int i;

	for (i = 0; i < 40; i++)
		len += (size_t)snprintf(buf + len, sizeof buf - len,
		                        "{\"i\":%d}\n", i);
	proto_reader_init(&r, 0);
	assert_int_equal(r.max_line, PROTO_MAX_LINE_DEFAULT);
	assert_int_equal(proto_reader_feed(&r, buf, len, sink_cb, &s), 0);
	assert_int_equal(s.n, 40);
	for (i = 0; i < 40; i++) {
		char want[16];

		snprintf(want, sizeof want, "{\"i\":%d}", i);
		assert_string_equal(s.lines[i], want);
	}
	assert_int_equal(r.len, 0);
	proto_reader_free(&r);
	sink_free(&s);
}

static void
test_frame_too_long(void **state)
{
	struct proto_reader r;
	struct sink s = {0}, t = {0};
	size_t i;

	/* Exactly max_line bytes is fine; the newline is not counted. */
	proto_reader_init(&r, 8);
	assert_int_equal(proto_reader_feed(&r, "12345678\n", 9, sink_cb, &s),
	                 0);
	assert_int_equal(s.n, 1);
	assert_true(r.cap <= 9);
	/* One more byte fails before any newline has arrived. */
	assert_int_equal(proto_reader_feed(&r, "123456789", 9, sink_cb, &s),
	                 PROTO_FRAME_TOO_LONG);
	/* and stays failed. */
	assert_int_equal(proto_reader_feed(&r, "\n{}\n", 4, sink_cb, &s),
	                 PROTO_FRAME_TOO_LONG);
	assert_int_equal(s.n, 1);
	proto_reader_free(&r);

	/* A byte at a time: the 9th byte is the violation. */
	proto_reader_init(&r, 8);
	for (i = 0; i < 8; i++) {
		assert_int_equal(proto_reader_feed(&r, "x", 1, sink_cb, &s), 0);
		assert_true(r.cap <= 9);
	}
	assert_int_equal(proto_reader_feed(&r, "x", 1, sink_cb, &s),
	                 PROTO_FRAME_TOO_LONG);
	assert_true(r.cap <= 9);
	proto_reader_free(&r);

	/* The limit excludes the terminator, "\r\n" as much as "\n"
	 * (PROTOCOL.md): max_line bytes and "\r\n" is a line, however the
	 * bytes arrive. */
	proto_reader_init(&r, 8);
	assert_int_equal(proto_reader_feed(&r, "12345678\r\n", 10, sink_cb, &t),
	                 0);
	assert_int_equal(t.n, 1);
	assert_string_equal(t.lines[0], "12345678");
	assert_int_equal(proto_reader_feed(&r, "12345678\r", 9, sink_cb, &t),
	                 0);
	assert_int_equal(proto_reader_feed(&r, "\n", 1, sink_cb, &t), 0);
	assert_int_equal(proto_reader_feed(&r, "12345678", 8, sink_cb, &t), 0);
	assert_int_equal(proto_reader_feed(&r, "\r", 1, sink_cb, &t), 0);
	assert_int_equal(proto_reader_feed(&r, "\n", 1, sink_cb, &t), 0);
	/* A line that ends in '\r' itself: only the last '\r' goes. */
	assert_int_equal(
	    proto_reader_feed(&r, "1234567\r\r\n", 10, sink_cb, &t), 0);
	assert_int_equal(t.n, 4);
	assert_string_equal(t.lines[1], "12345678");
	assert_string_equal(t.lines[2], "12345678");
	assert_string_equal(t.lines[3], "1234567\r");
	assert_true(r.cap <= 9);
	/* A '\r' not followed by the '\n' is a 9th byte of the line. */
	assert_int_equal(proto_reader_feed(&r, "12345678\r", 9, sink_cb, &t),
	                 0);
	assert_int_equal(proto_reader_feed(&r, "x\n", 2, sink_cb, &t),
	                 PROTO_FRAME_TOO_LONG);
	proto_reader_free(&r);
	proto_reader_init(&r, 8);
	assert_int_equal(
	    proto_reader_feed(&r, "12345678\r\r\n", 11, sink_cb, &t),
	    PROTO_FRAME_TOO_LONG);
	proto_reader_free(&r);
	proto_reader_init(&r, 8);
	assert_int_equal(
	    proto_reader_feed(&r, "123456789\r\n", 11, sink_cb, &t),
	    PROTO_FRAME_TOO_LONG);
	assert_int_equal(t.n, 4);
	proto_reader_free(&r);
	sink_free(&t);

	/* A good line before the long one in the same feed is delivered. */
	proto_reader_init(&r, 4);
	assert_int_equal(proto_reader_feed(&r, "ok\nlonger\n", 10, sink_cb, &s),
	                 PROTO_FRAME_TOO_LONG);
	assert_int_equal(s.n, 2);
	assert_string_equal(s.lines[1], "ok");
	proto_reader_free(&r);
	sink_free(&s);
}

static void
test_frame_buffer_bounded(void **state)
{
	struct proto_reader r;
	struct sink s = {0};
	size_t max = 300000, i;
	char *big = malloc(max + 1);

	assert_non_null(big);
	memset(big, 'a', max);
	big[max] = '\n';
	proto_reader_init(&r, max);
	/* Arrives in chunks of odd sizes; the buffer never passes max+1. */
	for (i = 0; i < max + 1; i += 7777) {
		size_t n = max + 1 - i < 7777 ? max + 1 - i : 7777;

		assert_int_equal(proto_reader_feed(&r, big + i, n, sink_cb, &s),
		                 0);
		assert_true(r.cap <= max + 1);
	}
	assert_int_equal(s.n, 1);
	assert_int_equal(s.lens[0], max);
	/* An idle connection does not keep the big buffer. */
	assert_int_equal(r.cap, 0);
	assert_int_equal(proto_reader_feed(&r, "{}\n", 3, sink_cb, &s), 0);
	assert_int_equal(s.n, 2);
	proto_reader_free(&r);
	sink_free(&s);
	free(big);
}

/*
 * max_buf caps the memory a reader holds (the daemon's per-uid input
 * budget): the buffer grows up to it and no further, a feed that needs
 * more fails and stays failed, and lines that fit are unaffected.
 */
static void
test_frame_max_buf(void **state)
{
	struct proto_reader r;
	struct sink s = {0};
	char chunk[10000];

	memset(chunk, 'a', sizeof chunk);
	proto_reader_init(&r, 1 << 20);
	assert_int_equal(r.max_buf, 0); /* no cap unless asked */
	r.max_buf = 25000;
	/* 20000 bytes of a line: the buffer doubles from 4096 to 16384,
	 * then takes 25000 (not 32768): never more than max_buf. */
	assert_int_equal(proto_reader_feed(&r, chunk, 10000, sink_cb, &s), 0);
	assert_int_equal(proto_reader_feed(&r, chunk, 10000, sink_cb, &s), 0);
	assert_int_equal(r.cap, 25000);
	/* The next 10000 would need 30001. */
	assert_int_equal(proto_reader_feed(&r, chunk, 10000, sink_cb, &s),
	                 PROTO_READ_LIMIT);
	assert_true(r.cap <= 25000);
	/* Sticky: a reader over its budget is for closing. */
	assert_int_equal(proto_reader_feed(&r, "\n{}\n", 4, sink_cb, &s),
	                 PROTO_READ_LIMIT);
	assert_int_equal(s.n, 0);
	proto_reader_free(&r);

	/* Lines within the budget pass, one after another. */
	proto_reader_init(&r, 1 << 20);
	r.max_buf = 10001;
	assert_int_equal(proto_reader_feed(&r, chunk, 10000, sink_cb, &s), 0);
	assert_int_equal(proto_reader_feed(&r, "\n", 1, sink_cb, &s), 0);
	assert_int_equal(proto_reader_feed(&r, chunk, 10000, sink_cb, &s), 0);
	assert_int_equal(proto_reader_feed(&r, "\n", 1, sink_cb, &s), 0);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.lens[1], 10000);
	/* Set below what the buffer already holds (others of the uid took
	 * the rest): it keeps what it has, but may not grow. */
	r.max_buf = 1;
	assert_int_equal(proto_reader_feed(&r, "{}\n", 3, sink_cb, &s), 0);
	assert_int_equal(s.n, 3);
	proto_reader_free(&r);
	proto_reader_init(&r, 1 << 20);
	r.max_buf = 1;
	assert_int_equal(proto_reader_feed(&r, "{}\n", 3, sink_cb, &s),
	                 PROTO_READ_LIMIT);
	proto_reader_free(&r);
	sink_free(&s);
}

static void
test_frame_crlf_and_empty(void **state)
{
	struct proto_reader r;
	struct sink s = {0};
	static const char in[] = "\n\r\n\n a\rb \r\n\r\r\n";

	proto_reader_init(&r, 64);
	assert_int_equal(proto_reader_feed(&r, in, sizeof in - 1, sink_cb, &s),
	                 0);
	/* Empty lines are skipped; only the last '\r' of a line goes. */
	assert_int_equal(s.n, 2);
	assert_string_equal(s.lines[0], " a\rb ");
	assert_string_equal(s.lines[1], "\r");
	proto_reader_free(&r);
	sink_free(&s);
}

static void
test_frame_bad_utf8(void **state)
{
	static const char *const bad[] = {
	    "\xff{}",               /* at the start */
	    "{\"a\":\"\xc0\xaf\"}", /* overlong '/' in the middle */
	    "{}\xed\xa0\x80",       /* a surrogate at the end */
	    "{}\xe2\x82",           /* truncated before the newline */
	};
	struct proto_reader r;
	struct sink s = {0};
	size_t i, j, n;
	char line[64];

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		n = (size_t)snprintf(line, sizeof line, "%s\n", bad[i]);
		/* Split at every position: the verdict does not depend on
		 * how the bytes arrive. */
		for (j = 0; j <= n; j++) {
			int rc;

			proto_reader_init(&r, 64);
			rc = proto_reader_feed(&r, line, j, sink_cb, &s);
			if (rc == 0)
				rc = proto_reader_feed(&r, line + j, n - j,
				                       sink_cb, &s);
			assert_int_equal(rc, PROTO_FRAME_UTF8);
			assert_int_equal(s.n, 0);
			/* Sticky. */
			assert_int_equal(
			    proto_reader_feed(&r, "{}\n", 3, sink_cb, &s),
			    PROTO_FRAME_UTF8);
			proto_reader_free(&r);
		}
	}
	/* A multi-byte character split across feeds is fine. */
	proto_reader_init(&r, 64);
	assert_int_equal(proto_reader_feed(&r, "\xe2", 1, sink_cb, &s), 0);
	assert_int_equal(proto_reader_feed(&r, "\x82", 1, sink_cb, &s), 0);
	assert_int_equal(proto_reader_feed(&r, "\xac\n", 2, sink_cb, &s), 0);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.lines[0], "\xe2\x82\xac");
	proto_reader_free(&r);
	sink_free(&s);
}

static void
test_frame_nul_and_stop(void **state)
{
	struct proto_reader r;
	struct sink s = {0};
	struct proto_msg m;
	const char *cause;

	/* A NUL is valid UTF-8: framing passes it with its length, and
	 * proto_parse makes it a parse error. */
	proto_reader_init(&r, 64);
	assert_int_equal(proto_reader_feed(&r, "{\"a\0\":1}\n", 9, sink_cb, &s),
	                 0);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.lens[0], 8);
	assert_int_equal(proto_parse(s.lines[0], s.lens[0], &m, &cause),
	                 PROTO_E_PARSE);
	assert_null(m.root);
	proto_msg_free(&m);

	/* The callback's non-zero value stops the feed and is returned. */
	s.stop_at = 2;
	assert_int_equal(proto_reader_feed(&r, "a\nb\nc\n", 6, sink_cb, &s), 7);
	assert_int_equal(s.n, 2);
	proto_reader_free(&r);
	sink_free(&s);
}

/* A paused feed keeps what followed its line and hands it out, in order
 * and framed as before, on the next feeds: first an empty one, then one
 * whose own bytes come after the kept ones. */
static void
test_reader_pause(void **state)
{
	struct proto_reader r;
	struct sink s;
	static const char *const want[] = {"a", "b", "c", "d", "e", "f"};
	int i;

	(void)state;
	memset(&s, 0, sizeof s);
	proto_reader_init(&r, 64);
	s.pause_every = 2;
	assert_int_equal(proto_reader_feed(&r, "a\nb\nc\nd\ne", 9, sink_cb, &s),
	                 PROTO_READ_PAUSE);
	assert_int_equal(s.n, 2);
	assert_int_equal(r.rest_len, 5); /* "c\nd\ne" */
	assert_true(proto_reader_mem(&r) >= 5);
	/* Resumed with nothing new: two more lines, then a pause again with
	 * the partial "e" framed and nothing left over. */
	assert_int_equal(proto_reader_feed(&r, NULL, 0, sink_cb, &s),
	                 PROTO_READ_PAUSE);
	assert_int_equal(s.n, 4);
	assert_int_equal(r.rest_len, 1);
	assert_int_equal(proto_reader_feed(&r, NULL, 0, sink_cb, &s), 0);
	assert_int_equal(s.n, 4);
	assert_int_equal(r.rest_len, 0);
	/* New bytes finish the partial line. */
	assert_int_equal(proto_reader_feed(&r, "\nf\n", 3, sink_cb, &s),
	                 PROTO_READ_PAUSE);
	assert_int_equal(proto_reader_feed(&r, NULL, 0, sink_cb, &s), 0);
	assert_int_equal(s.n, 6);
	for (i = 0; i < 6; i++)
		assert_string_equal(s.lines[i], want[i]);
	/* Kept bytes and new ones together, a pause inside the new ones. */
	s.pause_every = 3;
	assert_int_equal(proto_reader_feed(&r, "g\nh\n", 4, sink_cb, &s), 0);
	assert_int_equal(s.n, 8);
	proto_reader_free(&r);
	assert_int_equal(r.rest_len, 0);
	sink_free(&s);
}

/* A reference: decode one sequence by its bit pattern, then apply the
 * rules (shortest form, no surrogates, at most U+10FFFF). */
static int
ref_valid(const unsigned char *p, size_t len)
{
	size_t i = 0, n, k;
	uint32_t cp;

	while (i < len) {
		unsigned char c = p[i];

		if (c < 0x80) {
			i++;
			continue;
		} else if ((c & 0xE0) == 0xC0) {
			n = 2;
			cp = c & 0x1F;
		} else if ((c & 0xF0) == 0xE0) {
			n = 3;
			cp = c & 0x0F;
		} else if ((c & 0xF8) == 0xF0) {
			n = 4;
			cp = c & 0x07;
		} else {
			return 0;
		}
		if (i + n > len)
			return 0;
		for (k = 1; k < n; k++) {
			if ((p[i + k] & 0xC0) != 0x80)
				return 0;
			cp = cp << 6 | (p[i + k] & 0x3F);
		}
		if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) ||
		    (n == 4 && cp < 0x10000))
			return 0;
		if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
			return 0;
		i += n;
	}
	return 1;
}

static void
test_utf8_table(void **state)
{
	static const struct {
		const char *s;
		int valid;
	} cases[] = {
	    {"", 1},
	    {"plain ascii", 1},
	    {"\xc3\xa9", 1},
	    {"\xe2\x82\xac", 1},
	    {"\xf0\x9d\x84\x9e", 1},
	    {"\xf4\x8f\xbf\xbf", 1}, /* U+10FFFF */
	    {"\xed\x9f\xbf", 1},     /* U+D7FF */
	    {"\xee\x80\x80", 1},     /* U+E000 */
	    {"\xef\xbf\xbf", 1},     /* U+FFFF is a noncharacter, not bad */
	    {"\xc0\x80", 0},         /* overlong NUL */
	    {"\xc1\xbf", 0},
	    {"\xe0\x80\x80", 0},
	    {"\xe0\x9f\xbf", 0},
	    {"\xf0\x80\x80\x80", 0},
	    {"\xf0\x8f\xbf\xbf", 0},
	    {"\xed\xa0\x80", 0},             /* U+D800 */
	    {"\xed\xbf\xbf", 0},             /* U+DFFF */
	    {"\xed\xa0\xbd\xed\xb2\xa9", 0}, /* CESU-8 pair */
	    {"\xf4\x90\x80\x80", 0},         /* U+110000 */
	    {"\xf5\x80\x80\x80", 0},
	    {"\xf8\x88\x80\x80\x80", 0},
	    {"\xff", 0},
	    {"\xfe", 0},
	    {"\x80", 0},
	    {"a\xbf", 0},
	    {"\xc3", 0},
	    {"\xe2\x82", 0},
	    {"\xf0\x9d\x84", 0},
	    {"\xc3(", 0},
	    {"\xe2\x28\xa1", 0},
	};
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		if (proto_utf8_valid(cases[i].s, strlen(cases[i].s)) !=
		    cases[i].valid)
			fail_msg("case %zu", i);
	}
	/* Embedded NUL is valid UTF-8 (U+0000); parse rejects it. */
	assert_true(proto_utf8_valid("a\0b", 3));
}

static void
test_utf8_exhaustive(void **state)
{
	unsigned char b[4];
	uint32_t x;

	/* Every string of 1, 2 and 3 bytes. */
	for (x = 0; x < 0x100; x++) {
		b[0] = (unsigned char)x;
		assert_int_equal(proto_utf8_valid((char *)b, 1),
		                 ref_valid(b, 1));
	}
	for (x = 0; x < 0x10000; x++) {
		b[0] = (unsigned char)(x >> 8);
		b[1] = (unsigned char)x;
		assert_int_equal(proto_utf8_valid((char *)b, 2),
		                 ref_valid(b, 2));
	}
	for (x = 0; x < 0x1000000; x++) {
		b[0] = (unsigned char)(x >> 16);
		b[1] = (unsigned char)(x >> 8);
		b[2] = (unsigned char)x;
		if (proto_utf8_valid((char *)b, 3) != ref_valid(b, 3))
			fail_msg("3 bytes %06x", (unsigned)x);
	}
	/* 4 bytes: every lead byte from 0xF0 with every second byte, and
	 * fixed continuation bytes. */
	for (x = 0; x < 0x10000; x++) {
		b[0] = (unsigned char)(0xF0 + (x >> 12));
		b[1] = (unsigned char)(x >> 4);
		b[2] = (unsigned char)(0x80 | (x & 3) << 4);
		b[3] = (unsigned char)((x & 4) ? 0xBF : 0x7F);
		if (proto_utf8_valid((char *)b, 4) != ref_valid(b, 4))
			fail_msg("4 bytes %02x%02x%02x%02x", b[0], b[1], b[2],
			         b[3]);
	}
}

static void
test_utf8_sanitize(void **state)
{
	size_t n;
	char *s = proto_utf8_sanitize("a\xff"
	                              "b\xe2\x82\xac\xc3",
	                              7, &n);

	assert_non_null(s);
	assert_string_equal(s, "a\xef\xbf\xbd"
	                       "b\xe2\x82\xac\xef\xbf\xbd");
	assert_int_equal(n, strlen(s));
	assert_true(proto_utf8_valid(s, n));
	free(s);
}

/* Parse a line given as a C string; returns the code. */
static int
parse(const char *line, struct proto_msg *m, const char **cause)
{
	*cause = NULL;
	return proto_parse(line, strlen(line), m, cause);
}

static void
test_parse_valid(void **state)
{
	struct proto_msg m;
	const char *cause;
	int64_t id;

	assert_int_equal(parse(" {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
	                       "\"hello\",\"params\":{\"version\":1}} \r\n",
	                       &m, &cause),
	                 0);
	assert_int_equal(m.kind, PROTO_REQUEST);
	assert_string_equal(m.method, "hello");
	assert_true(cJSON_IsObject(m.params));
	/* The id is kept as the text it was sent as. */
	assert_true(cJSON_IsRaw(m.id));
	assert_string_equal(m.id->valuestring, "1");
	assert_int_equal(proto_id_int(m.id, &id), 0);
	assert_int_equal(id, 1);
	proto_msg_free(&m);
	assert_null(m.root);

	assert_int_equal(parse("{\"jsonrpc\":\"2.0\",\"id\":\"a\xc3\xa9\","
	                       "\"method\":\"info\"}",
	                       &m, &cause),
	                 0);
	assert_int_equal(m.kind, PROTO_REQUEST);
	assert_string_equal(m.id->valuestring, "\"a\xc3\xa9\"");
	assert_int_equal(proto_id_int(m.id, &id), -1);
	assert_null(m.params);
	proto_msg_free(&m);

	/* id null is a request (answered with id null). */
	assert_int_equal(parse("{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":"
	                       "\"info\"}",
	                       &m, &cause),
	                 0);
	assert_int_equal(m.kind, PROTO_REQUEST);
	assert_true(cJSON_IsNull(m.id));
	proto_msg_free(&m);

	/* Largest ids. */
	assert_int_equal(parse("{\"jsonrpc\":\"2.0\",\"id\":-9007199254740992,"
	                       "\"method\":\"info\"}",
	                       &m, &cause),
	                 0);
	proto_msg_free(&m);

	assert_int_equal(parse("{\"jsonrpc\":\"2.0\",\"method\":\"sample\","
	                       "\"params\":{\"free_pct\":40}}",
	                       &m, &cause),
	                 0);
	assert_int_equal(m.kind, PROTO_NOTIFICATION);
	assert_null(m.id);
	assert_string_equal(m.method, "sample");
	proto_msg_free(&m);

	assert_int_equal(parse("{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{},"
	                       "\"extra\":1}",
	                       &m, &cause),
	                 0);
	assert_int_equal(m.kind, PROTO_RESPONSE);
	assert_non_null(m.result);
	assert_null(m.error);
	proto_msg_free(&m);

	assert_int_equal(parse("{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{"
	                       "\"code\":-32700,\"message\":\"x\",\"data\":"
	                       "[1]}}",
	                       &m, &cause),
	                 0);
	assert_int_equal(m.kind, PROTO_RESPONSE);
	assert_non_null(m.error);
	proto_msg_free(&m);
}

struct bad_case {
	const char *line;
	int code;
	int has_id; /* m.id must be set so the error can carry it */
};

static void
test_parse_invalid(void **state)
{
	static const struct bad_case cases[] = {
	    /* Not JSON. */
	    {"", PROTO_E_PARSE, 0},
	    {"{", PROTO_E_PARSE, 0},
	    {"nope", PROTO_E_PARSE, 0},
	    {"{} {}", PROTO_E_PARSE, 0},
	    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"info\"} x",
	     PROTO_E_PARSE, 0},
	    {"{\"a\":\"\\ud800\"}", PROTO_E_PARSE, 0},
	    {"{\"a\":\"\xc3(\"}", PROTO_E_PARSE, 0},
	    /* Not an object. */
	    {"[]", PROTO_E_INVALID_REQUEST, 0},
	    {"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"info\"}]",
	     PROTO_E_INVALID_REQUEST, 0},
	    {"1", PROTO_E_INVALID_REQUEST, 0},
	    {"\"s\"", PROTO_E_INVALID_REQUEST, 0},
	    {"null", PROTO_E_INVALID_REQUEST, 0},
	    {"true", PROTO_E_INVALID_REQUEST, 0},
	    {"{}", PROTO_E_INVALID_REQUEST, 0},
	    /* jsonrpc. */
	    {"{\"id\":1,\"method\":\"info\"}", PROTO_E_INVALID_REQUEST, 1},
	    {"{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"info\"}",
	     PROTO_E_INVALID_REQUEST, 1},
	    {"{\"jsonrpc\":2.0,\"id\":1,\"method\":\"info\"}",
	     PROTO_E_INVALID_REQUEST, 1},
	    {"{\"jsonrpc\":\"2.0 \",\"id\":1,\"method\":\"info\"}",
	     PROTO_E_INVALID_REQUEST, 1},
	    {"{\"JSONRPC\":\"2.0\",\"id\":1,\"method\":\"info\"}",
	     PROTO_E_INVALID_REQUEST, 1},
	    /* id: a number, a string or null, as strict JSON spells it. */
	    {"{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"info\"}",
	     PROTO_E_INVALID_REQUEST, 0},
	    {"{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"info\"}",
	     PROTO_E_INVALID_REQUEST, 0},
	    {"{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"info\"}",
	     PROTO_E_INVALID_REQUEST, 0},
	    {"{\"jsonrpc\":\"2.0\",\"id\":+1,\"method\":\"info\"}",
	     PROTO_E_PARSE, 0},
	    {"{\"jsonrpc\":\"2.0\",\"id\":01,\"method\":\"info\"}",
	     PROTO_E_INVALID_REQUEST, 0},
	    {"{\"jsonrpc\":\"2.0\",\"id\":-01,\"method\":\"info\"}",
	     PROTO_E_INVALID_REQUEST, 0},
	    {"{\"jsonrpc\":\"2.0\",\"id\":.5,\"method\":\"info\"}",
	     PROTO_E_PARSE, 0},
	    {"{\"jsonrpc\":\"2.0\",\"id\":1.,\"method\":\"info\"}",
	     PROTO_E_INVALID_REQUEST, 0},
	    {"{\"jsonrpc\":\"2.0\",\"id\":1.e5,\"method\":\"info\"}",
	     PROTO_E_INVALID_REQUEST, 0},
	    {"{\"jsonrpc\":\"2.0\",\"id\":\"a\tb\",\"method\":\"info\"}",
	     PROTO_E_INVALID_REQUEST, 0},
	    {"{\"jsonrpc\":\"2.0\",\"id\":\"a\\u0000b\",\"method\":\"info\"}",
	     PROTO_E_INVALID_REQUEST, 0},
	    /* A malformed escape that swallows a \u0000 (the fuzzer's find):
	     * the echo would carry a byte that is not UTF-8. */
	    {"{\"jsonrpc\":\"2.0\",\"id\":\"2\\u00\\u0000a\",\"method\":"
	     "\"info\"}",
	     PROTO_E_INVALID_REQUEST, 0},
	    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"method\":\"info\"}",
	     PROTO_E_INVALID_REQUEST, 1},
	    /* method. */
	    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":1}",
	     PROTO_E_INVALID_REQUEST, 1},
	    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\"}",
	     PROTO_E_INVALID_REQUEST, 1},
	    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":null}",
	     PROTO_E_INVALID_REQUEST, 1},
	    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":[\"info\"]}",
	     PROTO_E_INVALID_REQUEST, 1},
	    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"in\\u0000fo\"}",
	     PROTO_E_INVALID_REQUEST, 1},
	    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"Method\":\"info\"}",
	     PROTO_E_INVALID_REQUEST, 1},
	    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\",\"method\":\"b\"}",
	     PROTO_E_INVALID_REQUEST, 1},
	    /* params. */
	    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"info\",\"params\":[]}",
	     PROTO_E_INVALID_REQUEST, 1},
	    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"info\",\"params\":1}",
	     PROTO_E_INVALID_REQUEST, 1},
	    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"info\",\"params\":"
	     "\"x\"}",
	     PROTO_E_INVALID_REQUEST, 1},
	    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"info\",\"params\":"
	     "null}",
	     PROTO_E_INVALID_REQUEST, 1},
	    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"info\",\"param\":{}}",
	     PROTO_E_INVALID_REQUEST, 1},
	    {"{\"jsonrpc\":\"2.0\",\"method\":\"info\",\"params\":true}",
	     PROTO_E_INVALID_REQUEST, 0},
	    /* A notification is as strict as a request: a member it may not
	     * hold makes it invalid (answered with id null), not ignored. */
	    {"{\"jsonrpc\":\"2.0\",\"method\":\"info\",\"extra\":1}",
	     PROTO_E_INVALID_REQUEST, 0},
	    {"{\"jsonrpc\":\"2.0\",\"method\":\"info\",\"Id\":1}",
	     PROTO_E_INVALID_REQUEST, 0},
	    /* Responses. */
	    {"{\"jsonrpc\":\"2.0\",\"result\":{}}", PROTO_E_INVALID_REQUEST, 0},
	    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{},\"error\":{\"code\":"
	     "1,\"message\":\"m\"}}",
	     PROTO_E_INVALID_REQUEST, 1},
	    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":\"bad\"}",
	     PROTO_E_INVALID_REQUEST, 1},
	    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"message\":\"m\"}}",
	     PROTO_E_INVALID_REQUEST, 1},
	    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":1.5,"
	     "\"message\":\"m\"}}",
	     PROTO_E_INVALID_REQUEST, 1},
	    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":1}}",
	     PROTO_E_INVALID_REQUEST, 1},
	    {"{\"jsonrpc\":\"2.0\",\"id\":1}", PROTO_E_INVALID_REQUEST, 1},
	};
	struct proto_msg m;
	const char *cause;
	size_t i;
	int rc;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		rc = parse(cases[i].line, &m, &cause);
		if (rc != cases[i].code)
			fail_msg("case %zu (%s): got %d", i, cases[i].line, rc);
		if ((m.id != NULL) != cases[i].has_id)
			fail_msg("case %zu (%s): id %s", i, cases[i].line,
			         m.id != NULL ? "set" : "unset");
		assert_non_null(cause);
		assert_true(proto_utf8_valid(cause, strlen(cause)));
		/* Nothing but the id survives a failure. */
		assert_null(m.method);
		assert_null(m.params);
		assert_null(m.result);
		assert_null(m.error);
		proto_msg_free(&m);
	}
}

static void
test_parse_nul(void **state)
{
	static const char line[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
	                           "\"info\"}";
	char buf[sizeof line];
	struct proto_msg m;
	const char *cause;
	size_t i;

	/* A NUL byte anywhere is a parse error, even after the object. */
	for (i = 0; i < sizeof line - 1; i++) {
		memcpy(buf, line, sizeof line);
		buf[i] = '\0';
		assert_int_equal(proto_parse(buf, sizeof line - 1, &m, &cause),
		                 PROTO_E_PARSE);
		proto_msg_free(&m);
	}
	assert_int_equal(proto_parse(line, sizeof line, &m, &cause),
	                 PROTO_E_PARSE);
	proto_msg_free(&m);
	assert_int_equal(proto_parse(line, sizeof line - 1, &m, &cause), 0);
	proto_msg_free(&m);
}

/* Encode, then parse the line back (without its newline). */
static void
reparse(char *line, size_t len, struct proto_msg *m)
{
	const char *cause;

	assert_non_null(line);
	assert_true(len > 0);
	assert_int_equal(strlen(line), len);
	assert_int_equal(line[len - 1], '\n');
	/* One line: the only newline is the last byte. */
	assert_ptr_equal(strchr(line, '\n'), line + len - 1);
	assert_int_equal(proto_parse(line, len - 1, m, &cause), 0);
	free(line);
}

static void
test_encode_roundtrip(void **state)
{
	struct proto_msg m;
	cJSON *p = cJSON_CreateObject(), *id;
	size_t len;
	char *line;

	cJSON_AddStringToObject(p, "s", "line\nbreak \"q\" \xc3\xa9");
	line = proto_encode_request(42, "submit", p, &len);
	assert_string_equal(line, "{\"jsonrpc\":\"2.0\",\"id\":42,\"method\":"
	                          "\"submit\",\"params\":{\"s\":\"line\\nbreak "
	                          "\\\"q\\\" \xc3\xa9\"}}\n");
	reparse(line, len, &m);
	assert_int_equal(m.kind, PROTO_REQUEST);
	assert_string_equal(m.method, "submit");
	assert_string_equal(
	    cJSON_GetObjectItemCaseSensitive(m.params, "s")->valuestring,
	    "line\nbreak \"q\" \xc3\xa9");
	proto_msg_free(&m);

	line = proto_encode_request(1, "info", NULL, &len);
	assert_string_equal(
	    line, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"info\"}\n");
	free(line);

	/* Results echo the id unchanged, whatever its type. */
	id = cJSON_CreateString("req-\xe2\x82\xac");
	line = proto_encode_result(id, NULL, &len);
	assert_string_equal(line, "{\"jsonrpc\":\"2.0\",\"id\":\"req-\xe2\x82"
	                          "\xac\",\"result\":{}}\n");
	reparse(line, len, &m);
	assert_int_equal(m.kind, PROTO_RESPONSE);
	proto_msg_free(&m);
	cJSON_Delete(id);

	line = proto_encode_error(NULL, PROTO_E_PARSE, "bad \xff line", &len);
	assert_string_equal(
	    line, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,"
	          "\"message\":\"bad \xef\xbf\xbd line\"}}\n");
	reparse(line, len, &m);
	assert_non_null(m.error);
	proto_msg_free(&m);

	p = cJSON_CreateObject();
	cJSON_AddItemToObject(p, "versions", cJSON_CreateArray());
	cJSON_AddItemToArray(cJSON_GetObjectItem(p, "versions"),
	                     proto_int_create(1));
	id = cJSON_CreateNumber(7);
	line = proto_encode_error_data(id, PROTO_E_VERSION, "no", p, &len);
	assert_string_equal(line, "{\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{"
	                          "\"code\":-32001,\"message\":\"no\",\"data\":"
	                          "{\"versions\":[1]}}}\n");
	free(line);
	cJSON_Delete(id);

	p = cJSON_CreateObject();
	proto_add_int(p, "pid", 4242);
	line = proto_encode_notification("process_gone", p, &len);
	assert_string_equal(line, "{\"jsonrpc\":\"2.0\",\"method\":"
	                          "\"process_gone\",\"params\":{\"pid\":4242}}"
	                          "\n");
	reparse(line, len, &m);
	assert_int_equal(m.kind, PROTO_NOTIFICATION);
	proto_msg_free(&m);
}

/* Replies echo the request's id byte for byte as it was sent: cJSON alone
 * prints an integer from 10^15 on with %g (9.00719925474099e+15), -1.0 as
 * -1, 1e2 as 100, and a string with its own choice of escapes. */
static void
test_encode_id_echo(void **state)
{
	static char longid[6000];
	static const char *ids[] = {
	    "0",
	    "-1",
	    "999999999999999",
	    "1000000000000000",
	    "9007199254740991",
	    "-9007199254740991",
	    "9007199254740992",
	    "-9007199254740992",
	    "\"9007199254740991\"",
	    "null",
	    "-1.0",
	    "1e2",
	    "0.5",
	    "1E+2",
	    "-0",
	    "-0.0e-0",
	    "1e400",
	    "9007199254740994",
	    "123456789012345678901234567890",
	    "\"a\\/b\\u00e9\\\"\\n\xc3\xa9\"",
	    "\"\"",
	    longid, /* a long string */
	};
	struct proto_msg m, back;
	const char *cause = NULL;
	char req[8192], want[8192], *line;
	cJSON *data;
	size_t i, len;
	int k;

	longid[0] = '"';
	for (i = 1; i < sizeof longid - 2; i++)
		longid[i] = (char)('a' + i % 26);
	longid[i] = '"';
	longid[i + 1] = '\0';
	for (i = 0; i < sizeof ids / sizeof ids[0]; i++) {
		snprintf(req, sizeof req,
		         "{\"jsonrpc\":\"2.0\",\"id\":%s,\"method\":\"x\"}",
		         ids[i]);
		assert_int_equal(proto_parse(req, strlen(req), &m, &cause), 0);
		assert_int_equal(m.kind, PROTO_REQUEST);
		snprintf(want, sizeof want, "{\"jsonrpc\":\"2.0\",\"id\":%s,",
		         ids[i]);
		for (k = 0; k < 3; k++) {
			if (k == 0) {
				line = proto_encode_result(m.id, NULL, &len);
			} else if (k == 1) {
				line = proto_encode_error(m.id, PROTO_E_METHOD,
				                          "no", &len);
			} else {
				data = cJSON_CreateObject();
				proto_add_int(data, "n", 1);
				line = proto_encode_error_data(
				    m.id, PROTO_E_VERSION, "no", data, &len);
			}
			assert_non_null(line);
			if (strncmp(line, want, strlen(want)) != 0)
				fail_msg("id %s came back in %s", ids[i], line);
			/* and it is still a valid response */
			assert_int_equal(
			    proto_parse(line, len - 1, &back, &cause), 0);
			assert_int_equal(back.kind, PROTO_RESPONSE);
			proto_msg_free(&back);
			free(line);
		}
		proto_msg_free(&m);
	}
}

/* An integer id, however it was spelt; anything else is not one. */
static void
test_id_int(void **state)
{
	static const struct {
		const char *id;
		int rc;
		int64_t v;
	} cases[] = {
	    {"7", 0, 7},
	    {"7.0", 0, 7},
	    {"7e0", 0, 7},
	    {"70E-1", 0, 7},
	    {"-1.0", 0, -1},
	    {"9007199254740992", 0, 9007199254740992LL},
	    {"-9007199254740992", 0, -9007199254740992LL},
	    {"0.5", -1, 0},
	    {"1e400", -1, 0},
	    {"18014398509481984", -1, 0},
	    {"\"7\"", -1, 0},
	    {"null", -1, 0},
	};
	struct proto_msg m;
	const char *cause;
	char req[128];
	int64_t v;
	size_t i;
	cJSON *n;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		snprintf(req, sizeof req,
		         "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{}}",
		         cases[i].id);
		assert_int_equal(proto_parse(req, strlen(req), &m, &cause), 0);
		v = 0;
		if (proto_id_int(m.id, &v) != cases[i].rc || v != cases[i].v)
			fail_msg("id %s: got %lld", cases[i].id, (long long)v);
		proto_msg_free(&m);
	}
	/* A number node built here counts too; NULL is no id. */
	n = cJSON_CreateNumber(12);
	assert_int_equal(proto_id_int(n, &v), 0);
	assert_int_equal(v, 12);
	cJSON_Delete(n);
	assert_int_equal(proto_id_int(NULL, &v), -1);
}

static void
test_encode_never_bad_utf8(void **state)
{
	cJSON *r = cJSON_CreateObject();
	size_t len;
	char *line;

	/* A string that skipped validation still gives a valid line. */
	cJSON_AddStringToObject(r, "s", "a\xff\xed\xa0\x80z");
	line = proto_encode_result(NULL, r, &len);
	assert_non_null(line);
	assert_true(proto_utf8_valid(line, len));
	assert_string_equal(
	    line, "{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":{\"s\":\"a"
	          "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdz\"}}\n");
	assert_int_equal(len, strlen(line));
	free(line);
}

static void
test_encode_big_ints(void **state)
{
	static const struct {
		int64_t v;
		const char *text;
	} cases[] = {
	    {0, "0"},
	    {-1, "-1"},
	    {2147483647, "2147483647"},
	    {2147483648LL, "2147483648"},
	    {8589934592LL, "8589934592"},
	    {1764480000000LL, "1764480000000"},
	    {999999999999999LL, "999999999999999"},
	    {1000000000000000LL, "1000000000000000"},
	    {9007199254740990LL, "9007199254740990"},
	    {9007199254740991LL, "9007199254740991"},
	    {9007199254740992LL, "9007199254740992"},
	    {-9007199254740992LL, "-9007199254740992"},
	};
	struct proto_msg m;
	const cJSON *v;
	char want[128];
	size_t i, len;
	char *line;
	int64_t got;
	char cause[128];

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		cJSON *r = cJSON_CreateObject();

		assert_non_null(proto_add_int(r, "n", cases[i].v));
		line = proto_encode_result(NULL, r, &len);
		snprintf(
		    want, sizeof want,
		    "{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":{\"n\":%s}}\n",
		    cases[i].text);
		assert_string_equal(line, want);
		reparse(line, len, &m);
		v = cJSON_GetObjectItemCaseSensitive(m.result, "n");
		assert_true(v->valuedouble == (double)cases[i].v);
		got = 0;
		assert_int_equal(proto_param_int(m.result, "n", 1,
		                                 -9007199254740992LL,
		                                 9007199254740992LL, &got,
		                                 cause, sizeof cause),
		                 0);
		assert_true(got == cases[i].v);
		proto_msg_free(&m);
	}
	/* Request ids go through the same path. */
	line = proto_encode_request(9007199254740992LL, "info", NULL, &len);
	assert_string_equal(line,
	                    "{\"jsonrpc\":\"2.0\",\"id\":9007199254740992,"
	                    "\"method\":\"info\"}\n");
	free(line);
}

/* Parse a params object from JSON text, through proto_parse so that the
 * "\u0000" handling applies. */
static struct proto_msg
params_of(const char *json)
{
	struct proto_msg m;
	const char *cause;
	char line[512];

	snprintf(
	    line, sizeof line,
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":%s}",
	    json);
	if (proto_parse(line, strlen(line), &m, &cause) != 0)
		fail_msg("params %s: %s", json, cause);
	return m;
}

static void
test_param_int(void **state)
{
	struct proto_msg m = params_of(
	    "{\"a\":1.5,\"b\":-1,\"c\":1e300,\"d\":9007199254740994,"
	    "\"e\":9007199254740992,\"f\":\"5\",\"g\":true,\"h\":null,"
	    "\"i\":-0,\"j\":100,\"k\":1e400,\"l\":8589934592,\"m\":2e0}");
	char cause[256];
	int64_t v;

	v = 99;
	assert_int_equal(proto_param_int(m.params, "a", 1, 0, INT64_MAX, &v,
	                                 cause, sizeof cause),
	                 PROTO_E_PARAMS);
	assert_non_null(strstr(cause, "'a'"));
	assert_int_equal(v, 99);
	assert_int_equal(proto_param_int(m.params, "b", 1, 0, INT64_MAX, &v,
	                                 cause, sizeof cause),
	                 PROTO_E_PARAMS);
	assert_non_null(strstr(cause, "'b'"));
	assert_int_equal(
	    proto_param_int(m.params, "b", 1, -5, 5, &v, cause, sizeof cause),
	    0);
	assert_int_equal(v, -1);
	assert_int_equal(proto_param_int(m.params, "c", 1, 0, INT64_MAX, &v,
	                                 cause, sizeof cause),
	                 PROTO_E_PARAMS);
	assert_int_equal(proto_param_int(m.params, "d", 1, 0, INT64_MAX, &v,
	                                 cause, sizeof cause),
	                 PROTO_E_PARAMS);
	assert_int_equal(proto_param_int(m.params, "e", 1, 0, INT64_MAX, &v,
	                                 cause, sizeof cause),
	                 0);
	assert_true(v == 9007199254740992LL);
	assert_int_equal(
	    proto_param_int(m.params, "f", 1, 0, 10, &v, cause, sizeof cause),
	    PROTO_E_PARAMS);
	assert_int_equal(
	    proto_param_int(m.params, "g", 1, 0, 10, &v, cause, sizeof cause),
	    PROTO_E_PARAMS);
	/* null and absent are the same: 1 when optional, error when
	 * required, and the output is untouched. */
	v = 77;
	assert_int_equal(
	    proto_param_int(m.params, "h", 0, 0, 10, &v, cause, sizeof cause),
	    1);
	assert_int_equal(proto_param_int(m.params, "nope", 0, 0, 10, &v, cause,
	                                 sizeof cause),
	                 1);
	assert_int_equal(v, 77);
	assert_int_equal(
	    proto_param_int(m.params, "h", 1, 0, 10, &v, cause, sizeof cause),
	    PROTO_E_PARAMS);
	assert_non_null(strstr(cause, "required"));
	assert_int_equal(
	    proto_param_int(NULL, "x", 0, 0, 10, &v, cause, sizeof cause), 1);
	assert_int_equal(
	    proto_param_int(NULL, "x", 1, 0, 10, &v, cause, sizeof cause),
	    PROTO_E_PARAMS);
	assert_int_equal(
	    proto_param_int(m.params, "i", 1, 0, 10, &v, cause, sizeof cause),
	    0);
	assert_int_equal(v, 0);
	assert_int_equal(
	    proto_param_int(m.params, "j", 1, 0, 99, &v, cause, sizeof cause),
	    PROTO_E_PARAMS);
	assert_non_null(strstr(cause, "between 0 and 99"));
	assert_int_equal(proto_param_int(m.params, "j", 1, 100, 100, &v, cause,
	                                 sizeof cause),
	                 0);
	assert_int_equal(proto_param_int(m.params, "k", 1, INT64_MIN, INT64_MAX,
	                                 &v, cause, sizeof cause),
	                 PROTO_E_PARAMS);
	/* Past INT_MAX, where cJSON's valueint would saturate. */
	assert_int_equal(proto_param_int(m.params, "l", 1, 0, INT64_MAX, &v,
	                                 cause, sizeof cause),
	                 0);
	assert_true(v == 8589934592LL);
	assert_int_equal(
	    proto_param_int(m.params, "m", 1, 0, 10, &v, cause, sizeof cause),
	    0);
	assert_int_equal(v, 2);
	/* Wrong kind of params. */
	{
		cJSON *arr = cJSON_CreateArray();

		assert_int_equal(
		    proto_param_int(arr, "a", 0, 0, 1, &v, cause, sizeof cause),
		    PROTO_E_PARAMS);
		cJSON_Delete(arr);
	}
	/* A NULL cause buffer is allowed. */
	assert_int_equal(proto_param_int(m.params, "a", 1, 0, 10, &v, NULL, 0),
	                 PROTO_E_PARAMS);
	proto_msg_free(&m);
}

static void
test_param_double_bool(void **state)
{
	struct proto_msg m = params_of(
	    "{\"p\":40.5,\"q\":101,\"r\":1e400,\"s\":\"1\",\"t\":true,"
	    "\"u\":false,\"v\":1}");
	char cause[256];
	double d = -1;
	int b = -1;

	assert_int_equal(proto_param_double(m.params, "p", 1, 0, 100, &d, cause,
	                                    sizeof cause),
	                 0);
	assert_true(d == 40.5);
	assert_int_equal(proto_param_double(m.params, "q", 1, 0, 100, &d, cause,
	                                    sizeof cause),
	                 PROTO_E_PARAMS);
	assert_int_equal(proto_param_double(m.params, "r", 1, 0, 1e308, &d,
	                                    cause, sizeof cause),
	                 PROTO_E_PARAMS);
	assert_int_equal(proto_param_double(m.params, "s", 1, 0, 100, &d, cause,
	                                    sizeof cause),
	                 PROTO_E_PARAMS);
	assert_int_equal(proto_param_double(m.params, "zz", 0, 0, 100, &d,
	                                    cause, sizeof cause),
	                 1);
	assert_int_equal(
	    proto_param_bool(m.params, "t", 1, &b, cause, sizeof cause), 0);
	assert_int_equal(b, 1);
	assert_int_equal(
	    proto_param_bool(m.params, "u", 1, &b, cause, sizeof cause), 0);
	assert_int_equal(b, 0);
	/* 1 is not a boolean. */
	assert_int_equal(
	    proto_param_bool(m.params, "v", 1, &b, cause, sizeof cause),
	    PROTO_E_PARAMS);
	assert_int_equal(
	    proto_param_bool(m.params, "zz", 0, &b, cause, sizeof cause), 1);
	proto_msg_free(&m);
}

static void
test_param_string(void **state)
{
	struct proto_msg m =
	    params_of("{\"a\":\"ok \xc3\xa9\",\"b\":\"x\\u0000y\",\"c\":1,"
	              "\"d\":\"0123456789\",\"e\":\"\",\"f\":\"\\\\u0000\","
	              "\"g\":\"\\ud834\\udd1e\"}");
	char cause[256];
	const char *s = NULL;
	cJSON *raw;

	assert_int_equal(
	    proto_param_string(m.params, "a", 1, 0, &s, cause, sizeof cause),
	    0);
	assert_string_equal(s, "ok \xc3\xa9");
	/* cJSON would cut "x\u0000y" to "x"; it is rejected instead. */
	assert_int_equal(
	    proto_param_string(m.params, "b", 1, 0, &s, cause, sizeof cause),
	    PROTO_E_PARAMS);
	assert_non_null(strstr(cause, "NUL"));
	assert_true(proto_utf8_valid(cause, strlen(cause)));
	assert_int_equal(
	    proto_param_string(m.params, "c", 1, 0, &s, cause, sizeof cause),
	    PROTO_E_PARAMS);
	assert_int_equal(
	    proto_param_string(m.params, "d", 1, 10, &s, cause, sizeof cause),
	    0);
	assert_int_equal(
	    proto_param_string(m.params, "d", 1, 9, &s, cause, sizeof cause),
	    PROTO_E_PARAMS);
	assert_int_equal(
	    proto_param_string(m.params, "e", 1, 0, &s, cause, sizeof cause),
	    0);
	assert_string_equal(s, "");
	/* An escaped backslash followed by "u0000" is just text. */
	assert_int_equal(
	    proto_param_string(m.params, "f", 1, 0, &s, cause, sizeof cause),
	    0);
	assert_string_equal(s, "\\u0000");
	assert_int_equal(
	    proto_param_string(m.params, "g", 1, 0, &s, cause, sizeof cause),
	    0);
	assert_string_equal(s, "\xf0\x9d\x84\x9e");
	proto_msg_free(&m);

	/* Trees built in memory are checked as well. */
	raw = cJSON_CreateObject();
	cJSON_AddStringToObject(raw, "bad", "a\xc3(b");
	cJSON_AddStringToObject(raw, "sur", "\xed\xa0\x80");
	assert_int_equal(
	    proto_param_string(raw, "bad", 1, 0, &s, cause, sizeof cause),
	    PROTO_E_PARAMS);
	assert_non_null(strstr(cause, "UTF-8"));
	assert_int_equal(
	    proto_param_string(raw, "sur", 1, 0, &s, cause, sizeof cause),
	    PROTO_E_PARAMS);
	cJSON_Delete(raw);
}

static void
test_param_strv(void **state)
{
	struct proto_msg m = params_of(
	    "{\"argv\":[\"python\",\"gen.py\",\"\xc3\xa9\"],\"e\":[],"
	    "\"n\":[\"a\",1],\"z\":[\"a\",\"b\\u0000\"],\"s\":\"a\"}");
	char cause[256];
	const char **v = NULL;

	assert_int_equal(proto_param_strv(m.params, "argv", 1, 0, 0, &v, cause,
	                                  sizeof cause),
	                 0);
	assert_string_equal(v[0], "python");
	assert_string_equal(v[2], "\xc3\xa9");
	assert_null(v[3]);
	free(v);
	assert_int_equal(proto_param_strv(m.params, "argv", 1, 3, 14, &v, cause,
	                                  sizeof cause),
	                 0);
	free(v);
	assert_int_equal(proto_param_strv(m.params, "argv", 1, 3, 13, &v, cause,
	                                  sizeof cause),
	                 PROTO_E_PARAMS);
	assert_int_equal(proto_param_strv(m.params, "argv", 1, 2, 0, &v, cause,
	                                  sizeof cause),
	                 PROTO_E_PARAMS);
	assert_non_null(strstr(cause, "items"));
	assert_int_equal(proto_param_strv(m.params, "argv", 1, 0, 10, &v, cause,
	                                  sizeof cause),
	                 PROTO_E_PARAMS);
	assert_int_equal(
	    proto_param_strv(m.params, "e", 1, 0, 0, &v, cause, sizeof cause),
	    0);
	assert_null(v[0]);
	free(v);
	assert_int_equal(
	    proto_param_strv(m.params, "n", 1, 0, 0, &v, cause, sizeof cause),
	    PROTO_E_PARAMS);
	assert_int_equal(
	    proto_param_strv(m.params, "z", 1, 0, 0, &v, cause, sizeof cause),
	    PROTO_E_PARAMS);
	assert_int_equal(
	    proto_param_strv(m.params, "s", 1, 0, 0, &v, cause, sizeof cause),
	    PROTO_E_PARAMS);
	assert_int_equal(proto_param_strv(m.params, "missing", 0, 0, 0, &v,
	                                  cause, sizeof cause),
	                 1);
	proto_msg_free(&m);
}

static void
test_params_check(void **state)
{
	static const char *const known[] = {"argv", "cwd", "env", NULL};
	struct proto_msg m;
	char cause[256];

	assert_int_equal(proto_params_check(NULL, known, cause, sizeof cause),
	                 0);
	m = params_of("{\"argv\":[],\"cwd\":\"/\"}");
	assert_int_equal(
	    proto_params_check(m.params, known, cause, sizeof cause), 0);
	proto_msg_free(&m);
	m = params_of("{}");
	assert_int_equal(
	    proto_params_check(m.params, known, cause, sizeof cause), 0);
	proto_msg_free(&m);

	m = params_of("{\"argv\":[],\"cwdd\":\"/\"}");
	assert_int_equal(
	    proto_params_check(m.params, known, cause, sizeof cause),
	    PROTO_E_PARAMS);
	assert_non_null(strstr(cause, "'cwdd'"));
	proto_msg_free(&m);

	/* Names are case-sensitive. */
	m = params_of("{\"Argv\":[]}");
	assert_int_equal(
	    proto_params_check(m.params, known, cause, sizeof cause),
	    PROTO_E_PARAMS);
	proto_msg_free(&m);

	m = params_of("{\"cwd\":\"/\",\"cwd\":\"/tmp\"}");
	assert_int_equal(
	    proto_params_check(m.params, known, cause, sizeof cause),
	    PROTO_E_PARAMS);
	assert_non_null(strstr(cause, "twice"));
	proto_msg_free(&m);

	/* A name holding NUL, or a very long one, still gives a UTF-8
	 * message of bounded size. */
	m = params_of("{\"cw\\u0000d\":1}");
	assert_int_equal(
	    proto_params_check(m.params, known, cause, sizeof cause),
	    PROTO_E_PARAMS);
	assert_true(proto_utf8_valid(cause, strlen(cause)));
	assert_non_null(strstr(cause, "cw?d"));
	proto_msg_free(&m);
	m = params_of("{\"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
	              "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
	              "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
	              "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
	              "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
	              "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\":1}");
	assert_int_equal(
	    proto_params_check(m.params, known, cause, sizeof cause),
	    PROTO_E_PARAMS);
	assert_true(proto_utf8_valid(cause, strlen(cause)));
	assert_true(strlen(cause) < 120);
	proto_msg_free(&m);
	/* Even into a tiny buffer. */
	m = params_of("{\"\xc3\xa9\xc3\xa9\xc3\xa9\":1}");
	assert_int_equal(proto_params_check(m.params, known, cause, 5),
	                 PROTO_E_PARAMS);
	assert_true(strlen(cause) < 5);
	proto_msg_free(&m);
}

/* A tree parsed from the wire prints its integers exactly, and the
 * caller's tree is left as it was. */
static void
test_print_exact(void **state)
{
	cJSON *t =
	    cJSON_Parse("{\"a\":9007199254740991,\"b\":[1000000000000001,"
	                "-9007199254740992],\"c\":1.5,\"e\":12}");
	char *out;

	(void)state;
	assert_non_null(t);
	out = proto_print(t, 0);
	assert_string_equal(out,
	                    "{\"a\":9007199254740991,\"b\":[1000000000000001,"
	                    "-9007199254740992],\"c\":1.5,\"e\":12}");
	free(out);
	assert_true(cJSON_IsNumber(cJSON_GetObjectItem(t, "a")));
	cJSON_Delete(t);
	/* Every integer is printed from its digits (small, negative, zero,
	 * the largest safe), -0 and other numbers as cJSON prints them: the
	 * same text as before the digits were ours. */
	t = cJSON_Parse("[0,-0,7,-7,10,999999999999999,-1000000000000000,"
	                "9007199254740992,1764480000000,0.25,-2.5,1e300]");
	assert_non_null(t);
	out = proto_print(t, 0);
	assert_string_equal(out, "[0,-0,7,-7,10,999999999999999,"
	                         "-1000000000000000,9007199254740992,"
	                         "1764480000000,0.25,-2.5,1e+300]");
	free(out);
	cJSON_Delete(t);
}

/* The lookups over proto/names.h: each list both ways, and what a word
 * not in a list reads as. */
static void
test_names(void **state)
{
	(void)state;
	assert_string_equal(names_wait_name(NAMES_WAIT_NONE), "none");
	assert_string_equal(names_wait_name(NAMES_WAIT_GROUP), "group");
	assert_string_equal(names_wait_name(NAMES_WAIT_COUNT), "unknown");
	assert_int_equal(names_wait_parse("held"), NAMES_WAIT_HELD);
	assert_int_equal(names_wait_parse("after 12"), NAMES_WAIT_AFTER);
	assert_int_equal(names_wait_parse("free 12"), -1);
	assert_int_equal(names_wait_parse("fre"), -1);
	assert_int_equal(names_wait_parse(NULL), -1);
	assert_string_equal(names_state_name(NAMES_STATE_LOST), "lost");
	assert_int_equal(names_state_parse("cancelled"), NAMES_STATE_CANCELLED);
	assert_int_equal(names_state_parse("paused"), -1);
	assert_int_equal(names_end_parse(NULL), NAMES_END_NONE);
	assert_int_equal(names_end_parse("dependency"), NAMES_END_DEPENDENCY);
	assert_int_equal(names_end_parse("daemon"), NAMES_END_OTHER);
	assert_string_equal(names_end_name(NAMES_END_SPAWN), "spawn");
	assert_string_equal(names_end_name(NAMES_END_OTHER), "other");
	assert_null(names_end_text("daemon"));
	assert_non_null(names_end_text("client_gone"));
	assert_string_equal(names_pressure_name(4), "critical");
	assert_string_equal(names_pressure_name(3), "unknown");
	assert_int_equal(names_pressure_level("warn"), 1);
	assert_int_equal(names_pressure_level("high"), -1);
	assert_int_equal(names_pressure_level(NULL), -1);
	assert_string_equal(names_pressure_level_name(2), "critical");
	assert_string_equal(names_pressure_level_name(-1), "unknown");
	assert_string_equal(names_event_name(NAMES_EVENT_ON_END), "on_end");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_frame_split_everywhere),
	    cmocka_unit_test(test_reader_pause),
	    cmocka_unit_test(test_frame_many_in_one_feed),
	    cmocka_unit_test(test_frame_too_long),
	    cmocka_unit_test(test_frame_buffer_bounded),
	    cmocka_unit_test(test_frame_max_buf),
	    cmocka_unit_test(test_frame_crlf_and_empty),
	    cmocka_unit_test(test_frame_bad_utf8),
	    cmocka_unit_test(test_frame_nul_and_stop),
	    cmocka_unit_test(test_utf8_table),
	    cmocka_unit_test(test_utf8_exhaustive),
	    cmocka_unit_test(test_utf8_sanitize),
	    cmocka_unit_test(test_parse_valid),
	    cmocka_unit_test(test_parse_invalid),
	    cmocka_unit_test(test_parse_nul),
	    cmocka_unit_test(test_encode_roundtrip),
	    cmocka_unit_test(test_encode_id_echo),
	    cmocka_unit_test(test_id_int),
	    cmocka_unit_test(test_encode_never_bad_utf8),
	    cmocka_unit_test(test_encode_big_ints),
	    cmocka_unit_test(test_param_int),
	    cmocka_unit_test(test_param_double_bool),
	    cmocka_unit_test(test_param_string),
	    cmocka_unit_test(test_param_strv),
	    cmocka_unit_test(test_params_check),
	    cmocka_unit_test(test_print_exact),
	    cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
