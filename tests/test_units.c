/* Sizes, durations and points in time, as docs/units.md lists them. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "units.h"

#define KIB 1024ull
#define MIB (1024 * KIB)
#define GIB (1024 * MIB)
#define TIB (1024 * GIB)
#define MAX53 9007199254740992ull

static void
test_size_ok(void **state)
{
	static const struct {
		const char *s;
		uint64_t bytes;
	} cases[] = {
	    {"0", 0},
	    {"4096", 4096},
	    {"100B", 100},
	    {"100b", 100},
	    {"1K", KIB},
	    {"1k", KIB},
	    {"1KB", KIB},
	    {"1kib", KIB},
	    {"1KiB", KIB},
	    {"1Ki", KIB},
	    {"512M", 512 * MIB},
	    {"8G", 8589934592ull},
	    {"8GiB", 8 * GIB},
	    {"8gb", 8 * GIB},
	    {"8g", 8 * GIB},
	    {"1T", TIB},
	    {"1P", 1024 * TIB},
	    {"8P", MAX53},
	    {"0E", 0},
	    {"1.5G", 1610612736ull},
	    {"0.5K", 512},
	    {".5K", 512},
	    {"5.K", 5 * KIB},
	    {"0.25M", 256 * KIB},
	    {"1.3K", 1331},            /* 1331.2, nearest byte */
	    {"1.7K", 1741},            /* 1740.8 */
	    {"0.0005K", 1},            /* 0.512 */
	    {"0.0004K", 0},            /* 0.4096 */
	    {"0.1T", 109951162778ull}, /* 109951162777.6 */
	    {"000012M", 12 * MIB},
	    {"1.0000000000000000000000001G", GIB}, /* extra digits ignored */
	    {"8192T", MAX53},
	    {"9007199254740992", MAX53},
	    {"8191.999999999999999999T", MAX53},
	};
	size_t i;
	uint64_t v;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		v = 12345;
		if (units_parse_size(cases[i].s, &v) != 0)
			fail_msg("%s: rejected", cases[i].s);
		if (v != cases[i].bytes)
			fail_msg("%s: got %llu, want %llu", cases[i].s,
			         (unsigned long long)v,
			         (unsigned long long)cases[i].bytes);
	}
}

static void
test_size_errors(void **state)
{
	static const struct {
		const char *s;
		int rc;
	} cases[] = {
	    {"", -EINVAL},
	    {"-1G", -EINVAL},
	    {"-0", -EINVAL},
	    {"+1G", -EINVAL},
	    {"G", -EINVAL},
	    {".G", -EINVAL},
	    {".", -EINVAL},
	    {"1X", -EINVAL},
	    {"9P", -ERANGE},
	    {"0.01E", -ERANGE},
	    {"1GG", -EINVAL},
	    {"1GBB", -EINVAL},
	    {"1iB", -EINVAL},
	    {"1 G", -EINVAL},
	    {" 1G", -EINVAL},
	    {"1G ", -EINVAL},
	    {"1.5", -EINVAL}, /* a fraction of a byte */
	    {"1.5B", -EINVAL},
	    {"1e3", -EINVAL},
	    {"0x10", -EINVAL},
	    {"1..5G", -EINVAL},
	    {"1.5.G", -EINVAL},
	    {"1,5G", -EINVAL},
	    {"nan", -EINVAL},
	    {"inf", -EINVAL},
	    {"9007199254740993", -ERANGE},
	    {"99999999999999999999999", -ERANGE},
	    {"8193T", -ERANGE},
	    {"8192.0000001T", -ERANGE},
	    {"18446744073709551616", -ERANGE},
	    {"16777216G", -ERANGE},
	};
	size_t i;
	uint64_t v;
	int rc;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		v = 777;
		rc = units_parse_size(cases[i].s, &v);
		if (rc != cases[i].rc)
			fail_msg("'%s': got %d, want %d", cases[i].s, rc,
			         cases[i].rc);
		assert_int_equal(v, 777);
	}
	assert_int_equal(units_parse_size(NULL, &v), -EINVAL);
}

static void
test_duration_ok(void **state)
{
	static const struct {
		const char *s;
		int64_t ms;
	} cases[] = {
	    {"0", 0},
	    {"0s", 0},
	    {"500ms", 500},
	    {"30s", 30000},
	    {"30", 30000},
	    {"0.5", 500},
	    {"1m", 60000},
	    {"90m", 5400000},
	    {"1h", 3600000},
	    {"1.5h", 5400000},
	    {"2d", 172800000},
	    {"1w", 604800000},
	    {"2y", 2 * 365 * 86400000LL},
	    {"1y6w", 365 * 86400000LL + 6 * 604800000LL},
	    {"0.5y", 365 * 43200000LL},
	    {"1h30m", 5400000},
	    {"1h30m15s500ms", 5415500},
	    {"1d2h", 93600000},
	    {"30m1h", 5400000}, /* any order */
	    {"1.5ms", 2},       /* halves round up */
	    {"0.4ms", 0},
	    {"0.001s", 1},
	    {"0.0015s", 2},
	    {"14892855w", 14892855LL * 604800000},
	    {"9007199254740992ms", 9007199254740992LL},
	};
	size_t i;
	int64_t v;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		v = -5;
		if (units_parse_duration_ms(cases[i].s, &v) != 0)
			fail_msg("%s: rejected", cases[i].s);
		if (v != cases[i].ms)
			fail_msg("%s: got %lld, want %lld", cases[i].s,
			         (long long)v, (long long)cases[i].ms);
	}
}

static void
test_duration_errors(void **state)
{
	static const struct {
		const char *s;
		int rc;
	} cases[] = {
	    {"", -EINVAL},
	    {"-1s", -EINVAL},
	    {"1x", -EINVAL},
	    {"1min", -EINVAL},
	    {"2days", -EINVAL},
	    {"1 h", -EINVAL},
	    {"1h ", -EINVAL},
	    {"h", -EINVAL},
	    {"1h30", -EINVAL}, /* only a lone number means seconds */
	    {"1.2.3s", -EINVAL},
	    {"1H", -EINVAL},
	    {"1M", -EINVAL},
	    {"s", -EINVAL},
	    {"1e3s", -EINVAL},
	    {"1hh", -EINVAL},
	    {"1Y", -EINVAL},
	    {"1e1y", -EINVAL},
	    {"0x2y", -EINVAL},
	    {" 1y", -EINVAL},
	    {"285617y", -ERANGE},
	    {"14892856w", -ERANGE},
	    {"9007199254740993ms", -ERANGE},
	    {"9007199254740992ms1ms", -ERANGE},
	    {"99999999999999999999s", -ERANGE},
	};
	size_t i;
	int64_t v;
	int rc;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		v = 777;
		rc = units_parse_duration_ms(cases[i].s, &v);
		if (rc != cases[i].rc)
			fail_msg("'%s': got %d, want %d", cases[i].s, rc,
			         cases[i].rc);
		assert_int_equal(v, 777);
	}
	assert_int_equal(units_parse_duration_ms(NULL, &v), -EINVAL);
}

#define NOW 1764480000000LL

static void
test_time_ok(void **state)
{
	static const struct {
		const char *tz;
		const char *s;
		int64_t ms;
	} cases[] = {
	    {"UTC0", "now", NOW},
	    {"UTC0", "1h", NOW - 3600000},
	    {"UTC0", "-1h", NOW - 3600000},
	    {"UTC0", "1h30m", NOW - 5400000},
	    {"UTC0", "90s", NOW - 90000},
	    {"UTC0", "0s", NOW},
	    {"UTC0", "1764480000", 1764480000000LL},
	    {"UTC0", "1764480000123", 1764480000123LL},
	    {"UTC0", "0", 0},
	    {"UTC0", "999999999999", 999999999999000LL},
	    {"UTC0", "2026-11-30T05:00:00Z", 1796014800000LL},
	    {"UTC0", "2026-11-30T05:00Z", 1796014800000LL},
	    {"UTC0", "2026-11-30t05:00z", 1796014800000LL},
	    {"UTC0", "2026-11-30 05:00:00.25Z", 1796014800250LL},
	    {"UTC0", "2026-11-30T05:00:00.123456Z", 1796014800123LL},
	    {"UTC0", "2026-11-30T06:00:00+01:00", 1796014800000LL},
	    {"UTC0", "2026-11-30T04:30:00-0030", 1796014800000LL},
	    {"UTC0", "2028-02-29", 1835395200000LL},
	    {"UTC0", "1970-01-01", 0},
	    {"UTC0", "2000-03-01T12:34:56Z", 951914096000LL},
	    {"UTC0", "2099-12-31T23:59:59Z", 4102444799000LL},
	    /* Local time follows TZ; EST5 has no DST rules to look up. */
	    {"UTC0", "2026-11-30T05:00", 1796014800000LL},
	    {"UTC0", "2026-11-30 05:00:00", 1796014800000LL},
	    {"EST5", "2026-11-30T00:00", 1796014800000LL},
	    {"EST5", "2026-11-30", 1796014800000LL},
	    {"JST-9", "2026-11-30T14:00:00", 1796014800000LL},
	    /* A zone given in the string wins over TZ. */
	    {"EST5", "2026-11-30T05:00Z", 1796014800000LL},
	};
	size_t i;
	int64_t v;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		setenv("TZ", cases[i].tz, 1);
		tzset();
		v = -5;
		if (units_parse_time_ms(cases[i].s, NOW, &v) != 0)
			fail_msg("%s: rejected", cases[i].s);
		if (v != cases[i].ms)
			fail_msg("%s (TZ=%s): got %lld, want %lld", cases[i].s,
			         cases[i].tz, (long long)v,
			         (long long)cases[i].ms);
	}
}

/* --begin: +DURATION from now, HH:MM its next occurrence, ISO. */
static void
test_begin(void **state)
{
	/* 2026-11-30T05:00:00Z, a Monday */
	const int64_t now = 1796014800000LL;
	static const struct {
		const char *tz, *s;
		int64_t ms; /* from now */
		int rc;
	} cases[] = {
	    {"UTC0", "+3s", 3000, 0},
	    {"UTC0", "+1h30m", 5400000, 0},
	    {"UTC0", "+0s", 0, 0},
	    /* later today, or tomorrow once past (also the very minute) */
	    {"UTC0", "06:15", 4500000, 0},
	    {"UTC0", "05:00:01", 1000, 0},
	    {"UTC0", "05:00", 86400000, 0},
	    {"UTC0", "04:59", 86400000 - 60000, 0},
	    {"UTC0", "00:00", 19 * 3600000, 0},
	    {"UTC0", "23:59:59", 19 * 3600000 - 1000, 0},
	    /* local: 05:00Z is 00:00 in EST5, 14:00 in JST-9 */
	    {"EST5", "01:00", 3600000, 0},
	    {"JST-9", "13:00", 23 * 3600000, 0},
	    {"UTC0", "2026-11-30T06:00Z", 3600000, 0},
	    {"UTC0", "2026-11-30T06:00", 3600000, 0},
	    {"EST5", "2026-11-30 01:00", 3600000, 0},
	    {"UTC0", "2026-12-01", 19 * 3600000, 0},
	    /* a past time is taken: no wait */
	    {"UTC0", "2026-11-29T05:00Z", -86400000, 0},
	    /* which way would an unsigned duration count? */
	    {"UTC0", "3s", 0, -EINVAL},
	    {"UTC0", "1h", 0, -EINVAL},
	    {"UTC0", "90", 0, -EINVAL},
	    {"UTC0", "+90", 0, -EINVAL},
	    {"UTC0", "+", 0, -EINVAL},
	    {"UTC0", "+-3s", 0, -EINVAL},
	    {"UTC0", "-3s", 0, -EINVAL},
	    {"UTC0", "1796014800000", 0, -EINVAL},
	    {"UTC0", "24:00", 0, -EINVAL},
	    {"UTC0", "12:60", 0, -EINVAL},
	    {"UTC0", "12:00:60", 0, -EINVAL},
	    {"UTC0", "1:00", 0, -EINVAL},
	    {"UTC0", "12:00pm", 0, -EINVAL},
	    {"UTC0", "2026-02-29T10:00", 0, -EINVAL},
	    {"UTC0", "tomorrow", 0, -EINVAL},
	    {"UTC0", "", 0, -EINVAL},
	    {"UTC0", "+104240000d", 0, -ERANGE}, /* past 2^53 ms with now */
	    {"UTC0", "+1000000000w", 0, -ERANGE},
	};
	size_t i;
	int64_t v;
	int rc;

	(void)state;
	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		setenv("TZ", cases[i].tz, 1);
		tzset();
		v = -5;
		rc = units_parse_begin_ms(cases[i].s, now, &v);
		if (rc != cases[i].rc)
			fail_msg("'%s': got %d, want %d", cases[i].s, rc,
			         cases[i].rc);
		if (rc == 0 && v != now + cases[i].ms)
			fail_msg("'%s' (TZ=%s): got %lld, want %lld",
			         cases[i].s, cases[i].tz, (long long)(v - now),
			         (long long)cases[i].ms);
	}
	assert_int_equal(units_parse_begin_ms(NULL, now, &v), -EINVAL);
}

static void
test_time_errors(void **state)
{
	static const struct {
		const char *s;
		int rc;
	} cases[] = {
	    {"", -EINVAL},
	    {"yesterday", -EINVAL},
	    {"NOW", -EINVAL},
	    {"1.5", -EINVAL}, /* no unit and not an epoch */
	    {"-5", -EINVAL},
	    {"--1h", -EINVAL},
	    {"2026-13-01", -EINVAL},
	    {"2026-00-01", -EINVAL},
	    {"2026-02-29", -EINVAL},
	    {"2026-04-31", -EINVAL},
	    {"2026-11-00", -EINVAL},
	    {"2026-11-30T24:00", -EINVAL},
	    {"2026-11-30T05", -EINVAL},
	    {"2026-11-30T05:60", -EINVAL},
	    {"2026-11-30T05:00:60", -EINVAL},
	    {"2026-11-30T05:00:00.", -EINVAL},
	    {"2026-11-30X05:00", -EINVAL},
	    {"2026-11-30T05:00+1", -EINVAL},
	    {"2026-11-30T05:00+24:00", -EINVAL},
	    {"2026-11-30T05:00Zjunk", -EINVAL},
	    {"2026-1-30", -EINVAL},
	    {"1969-12-31", -EINVAL},
	    {"20261130", 0}, /* digits only: an epoch in seconds */
	    {"1000d", -ERANGE},
	    {"9007199254740993", -ERANGE},
	    {"9007199254740992", 0}, /* >= 10^12: milliseconds */
	};
	size_t i;
	int64_t v;
	int rc;

	setenv("TZ", "UTC0", 1);
	tzset();
	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		rc = units_parse_time_ms(cases[i].s, 86400000LL * 365, &v);
		if (rc != cases[i].rc)
			fail_msg("'%s': got %d, want %d", cases[i].s, rc,
			         cases[i].rc);
	}
	assert_int_equal(units_parse_time_ms(NULL, NOW, &v), -EINVAL);
}

static void
test_format_size(void **state)
{
	static const struct {
		uint64_t bytes;
		const char *s;
	} cases[] = {
	    {0, "0B"},
	    {1, "1B"},
	    {999, "999B"},
	    {1000, "1.0K"},
	    {1024, "1.0K"},
	    {1536, "1.5K"},
	    {10 * KIB, "10K"},
	    {10188, "9.9K"},
	    {10189, "10K"}, /* 9.9502K would print as 10.0K */
	    {512 * MIB, "512M"},
	    {999 * MIB, "999M"},
	    {1023 * MIB, "1.0G"},
	    {8 * GIB, "8.0G"},
	    {1610612736ull, "1.5G"},
	    {12 * GIB + 300 * MIB, "12G"},
	    {MAX53, "8.0P"},
	    {UINT64_MAX, "16E"},
	};
	char buf[16];
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		units_format_size(cases[i].bytes, buf, sizeof buf);
		if (strcmp(buf, cases[i].s) != 0)
			fail_msg("%llu: got %s, want %s",
			         (unsigned long long)cases[i].bytes, buf,
			         cases[i].s);
	}
	/* At most 3 significant digits, and it reads back within 5 %. */
	for (i = 0; i < 4000; i++) {
		uint64_t b = (uint64_t)i * i * i * 2654435761u % (1ull << 52);
		uint64_t back;
		size_t digits = 0;
		char *p;

		units_format_size(b, buf, sizeof buf);
		for (p = buf; *p != '\0'; p++)
			digits += *p >= '0' && *p <= '9';
		assert_true(digits <= 3);
		assert_int_equal(units_parse_size(buf, &back), 0);
		if (b >= 1000 &&
		    (back > b + b / 20 + 1 || back + b / 20 + 1 < b))
			fail_msg("%llu -> %s -> %llu", (unsigned long long)b,
			         buf, (unsigned long long)back);
		if (b < 1000)
			assert_int_equal(back, b);
	}
	/* A short buffer truncates and stays terminated. */
	units_format_size(8 * GIB, buf, 3);
	assert_string_equal(buf, "8.");
}

static void
test_format_duration(void **state)
{
	static const struct {
		int64_t ms;
		const char *s;
	} cases[] = {
	    {0, "0ms"},           {850, "850ms"},       {999, "999ms"},
	    {1000, "1.0s"},       {1500, "1.5s"},       {9999, "9.9s"},
	    {45000, "45s"},       {59999, "59s"},       {60000, "1m00s"},
	    {303000, "5m03s"},    {3720000, "1h02m"},   {86399999, "23h59m"},
	    {86400000, "1d00h"},  {183600000, "2d03h"}, {-1500, "-1.5s"},
	    {-3720000, "-1h02m"},
	};
	char buf[32];
	size_t i;
	int64_t back;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		units_format_duration(cases[i].ms, buf, sizeof buf);
		if (strcmp(buf, cases[i].s) != 0)
			fail_msg("%lld: got %s, want %s",
			         (long long)cases[i].ms, buf, cases[i].s);
		/* Every positive form parses back, truncated. */
		if (cases[i].ms >= 0) {
			assert_int_equal(units_parse_duration_ms(buf, &back),
			                 0);
			assert_true(back <= cases[i].ms);
		}
	}
	units_format_duration(INT64_MIN, buf, sizeof buf);
	assert_true(buf[0] == '-');
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_size_ok),
	    cmocka_unit_test(test_size_errors),
	    cmocka_unit_test(test_duration_ok),
	    cmocka_unit_test(test_duration_errors),
	    cmocka_unit_test(test_time_ok),
	    cmocka_unit_test(test_time_errors),
	    cmocka_unit_test(test_begin),
	    cmocka_unit_test(test_format_size),
	    cmocka_unit_test(test_format_duration),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
