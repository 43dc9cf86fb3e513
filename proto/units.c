/*
 * Sizes, durations and points in time as people type them. docs/units.md
 * lists the accepted forms.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "units.h"

#define UNITS_MAX ((uint64_t)1 << 53) /* the largest exact JSON integer */
#define FRAC_DIGITS_MAX 18            /* 10^18 still fits twice in 64 bits */

/* A decimal number: integer part and up to FRAC_DIGITS_MAX digits of
 * fraction (frac / 10^ndigits). */
struct decimal {
	uint64_t whole;
	uint64_t frac;
	uint64_t scale; /* 10^ndigits */
};

static int
is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int
is_lower(char c)
{
	return c >= 'a' && c <= 'z';
}

static char
to_lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/*
 * Read "123", "1.5" or ".5" at *sp and advance past it. Digits past
 * FRAC_DIGITS_MAX are read but ignored. -ERANGE when the whole part is
 * above UNITS_MAX, -EINVAL when there is no digit.
 */
static int
decimal_read(const char **sp, struct decimal *d)
{
	const char *s = *sp;
	int digits = 0, nfrac = 0;

	d->whole = 0;
	d->frac = 0;
	d->scale = 1;
	for (; is_digit(*s); s++, digits++) {
		d->whole = d->whole * 10 + (uint64_t)(*s - '0');
		if (d->whole > UNITS_MAX)
			return -ERANGE;
	}
	if (*s == '.') {
		for (s++; is_digit(*s); s++, digits++) {
			if (nfrac == FRAC_DIGITS_MAX)
				continue;
			d->frac = d->frac * 10 + (uint64_t)(*s - '0');
			d->scale *= 10;
			nfrac++;
		}
	}
	if (digits == 0)
		return -EINVAL;
	*sp = s;
	return 0;
}

/*
 * d x mult rounded to the nearest integer (halves up), exactly: the
 * fraction is multiplied bit by bit as a quotient and a remainder below
 * the scale, so nothing overflows and no floating point rounding creeps in.
 */
static int
decimal_scale(const struct decimal *d, uint64_t mult, uint64_t *out)
{
	uint64_t q = 0, r = 0, whole;
	int bit;

	if (d->whole != 0 && mult > UNITS_MAX / d->whole)
		return -ERANGE;
	whole = d->whole * mult;
	for (bit = 63; bit >= 0; bit--) {
		q *= 2;
		r *= 2;
		if (mult & ((uint64_t)1 << bit))
			r += d->frac;
		while (r >= d->scale) {
			q++;
			r -= d->scale;
		}
		if (q > UNITS_MAX)
			return -ERANGE;
	}
	if (r * 2 >= d->scale && d->frac != 0)
		q++;
	if (whole > UNITS_MAX - q)
		return -ERANGE;
	*out = whole + q;
	return 0;
}

int
units_parse_size(const char *s, uint64_t *bytes)
{
	static const char units[] = "kmgtpe";
	struct decimal d;
	const char *u;
	uint64_t mult = 1;
	int rc;

	if (s == NULL)
		return -EINVAL;
	if ((rc = decimal_read(&s, &d)) != 0)
		return rc;
	if (*s != '\0' && *s != 'b' && *s != 'B') {
		if ((u = strchr(units, to_lower(*s))) == NULL)
			return -EINVAL;
		mult = (uint64_t)1 << (10 * (u - units + 1));
		s++;
		if (*s == 'i' || *s == 'I')
			s++;
	}
	if (*s == 'b' || *s == 'B')
		s++;
	if (*s != '\0')
		return -EINVAL;
	/* A fraction of a byte means the unit was forgotten. */
	if (mult == 1 && d.frac != 0)
		return -EINVAL;
	return decimal_scale(&d, mult, bytes);
}

/* Milliseconds in the duration unit at *sp ("ms", "s", "m", "h", "d",
 * "w"), advancing past it, or 0 when there is none. */
static uint64_t
duration_unit(const char **sp)
{
	const char *s = *sp;
	uint64_t ms;
	size_t n = 1;

	if (s[0] == 'm' && s[1] == 's') {
		ms = 1;
		n = 2;
	} else if (s[0] == 's') {
		ms = 1000;
	} else if (s[0] == 'm') {
		ms = 60 * 1000;
	} else if (s[0] == 'h') {
		ms = 3600 * 1000;
	} else if (s[0] == 'd') {
		ms = 86400 * 1000;
	} else if (s[0] == 'w') {
		ms = 7 * 86400 * 1000;
	} else if (s[0] == 'y') {
		ms = 365ull * 86400 * 1000; /* for retention: "2y" */
	} else {
		return 0;
	}
	/* "1min" or "2days" are not ours; say so rather than guess. */
	if (is_lower(s[n]))
		return 0;
	*sp = s + n;
	return ms;
}

int
units_parse_duration_ms(const char *s, int64_t *ms)
{
	struct decimal d;
	uint64_t total = 0, part, unit;
	int first = 1, rc;

	if (s == NULL || *s == '\0')
		return -EINVAL;
	do {
		if ((rc = decimal_read(&s, &d)) != 0)
			return rc;
		if (first && *s == '\0')
			unit = 1000; /* a plain number is seconds */
		else if ((unit = duration_unit(&s)) == 0)
			return -EINVAL;
		if ((rc = decimal_scale(&d, unit, &part)) != 0)
			return rc;
		if (part > UNITS_MAX - total)
			return -ERANGE;
		total += part;
		first = 0;
	} while (*s != '\0');
	*ms = (int64_t)total;
	return 0;
}

/* Read exactly n digits at *sp into *v. */
static int
digits_read(const char **sp, int n, int *v)
{
	const char *s = *sp;
	int i;

	*v = 0;
	for (i = 0; i < n; i++, s++) {
		if (!is_digit(*s))
			return -EINVAL;
		*v = *v * 10 + (*s - '0');
	}
	*sp = s;
	return 0;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (the usual
 * era-based algorithm; y >= 1970 here, so no negative division). */
static int64_t
days_from_civil(int y, int m, int d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = y / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static int
days_in_month(int y, int m)
{
	static const int days[] = {31, 28, 31, 30, 31, 30,
	                           31, 31, 30, 31, 30, 31};

	if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
		return 29;
	return days[m - 1];
}

/*
 * "YYYY-MM-DD", optionally followed by 'T' or ' ' and "HH:MM", ":SS",
 * ".fff" (milliseconds, 1-3 digits), then optionally "Z" or "+HH:MM" /
 * "-HHMM". Without a zone the time is local, resolved with mktime().
 */
static int
parse_iso8601(const char *s, int64_t *ms)
{
	int y, mo, d, h = 0, mi = 0, sec = 0, frac = 0, n, zone = 0;
	int oh = 0, om = 0, sign = 0;
	struct tm tm;
	time_t t;
	int64_t secs;

	if (digits_read(&s, 4, &y) || *s++ != '-' || digits_read(&s, 2, &mo) ||
	    *s++ != '-' || digits_read(&s, 2, &d))
		return -EINVAL;
	if (*s == 'T' || *s == 't' || *s == ' ') {
		s++;
		if (digits_read(&s, 2, &h) || *s++ != ':' ||
		    digits_read(&s, 2, &mi))
			return -EINVAL;
		if (*s == ':') {
			s++;
			if (digits_read(&s, 2, &sec))
				return -EINVAL;
			if (*s == '.') {
				for (s++, n = 0; is_digit(*s); s++, n++)
					if (n < 3)
						frac = frac * 10 + (*s - '0');
				if (n == 0)
					return -EINVAL;
				for (; n < 3; n++)
					frac *= 10;
			}
		}
		if (*s == 'Z' || *s == 'z') {
			zone = 1;
			s++;
		} else if (*s == '+' || *s == '-') {
			zone = 1;
			sign = *s++ == '-' ? -1 : 1;
			if (digits_read(&s, 2, &oh))
				return -EINVAL;
			if (*s == ':')
				s++;
			if (digits_read(&s, 2, &om) || oh > 23 || om > 59)
				return -EINVAL;
		}
	}
	if (*s != '\0')
		return -EINVAL;
	if (y < 1970 || mo < 1 || mo > 12 || d < 1 ||
	    d > days_in_month(y, mo) || h > 23 || mi > 59 || sec > 59)
		return -EINVAL;
	if (zone) {
		secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 +
		       sec - sign * (oh * 3600 + om * 60);
	} else {
		memset(&tm, 0, sizeof tm);
		tm.tm_year = y - 1900;
		tm.tm_mon = mo - 1;
		tm.tm_mday = d;
		tm.tm_hour = h;
		tm.tm_min = mi;
		tm.tm_sec = sec;
		tm.tm_isdst = -1; /* let the zone rules decide */
		if ((t = mktime(&tm)) == (time_t)-1)
			return -ERANGE;
		secs = (int64_t)t;
	}
	if (secs < 0)
		return -ERANGE;
	if ((uint64_t)secs > UNITS_MAX / 1000)
		return -ERANGE;
	*ms = secs * 1000 + frac;
	return 0;
}

/* A duration before now. It must name its unit: a bare number is an epoch. */
static int
time_ago(const char *s, int64_t now_ms, int64_t *ms)
{
	int64_t ago;
	int rc;

	if ((rc = units_parse_duration_ms(s, &ago)) != 0)
		return rc;
	if (strpbrk(s, "smhdw") == NULL)
		return -EINVAL;
	if (ago > now_ms)
		return -ERANGE;
	*ms = now_ms - ago;
	return 0;
}

int
units_parse_time_ms(const char *s, int64_t now_ms, int64_t *ms)
{
	const char *p;
	uint64_t v = 0;

	if (s == NULL || *s == '\0')
		return -EINVAL;
	if (strcmp(s, "now") == 0) {
		*ms = now_ms;
		return 0;
	}
	if (s[0] == '-') /* "-1h" reads as "1h" ago */
		return time_ago(s + 1, now_ms, ms);
	for (p = s; is_digit(*p); p++) {
		v = v * 10 + (uint64_t)(*p - '0');
		if (v > UNITS_MAX)
			return -ERANGE;
	}
	if (*p == '\0') {
		/* Epoch seconds stay below 10^12 until the year 33658. */
		if (v < 1000000000000ull) {
			if (v > UNITS_MAX / 1000)
				return -ERANGE;
			v *= 1000;
		}
		*ms = (int64_t)v;
		return 0;
	}
	if (p - s == 4 && *p == '-')
		return parse_iso8601(s, ms);
	return time_ago(s, now_ms, ms);
}

/* "HH:MM" or "HH:MM:SS", local: its next occurrence after now_ms. */
static int
clock_next(const char *s, int64_t now_ms, int64_t *ms)
{
	int h, mi, sec = 0;
	time_t now = (time_t)(now_ms / 1000), t;
	struct tm tm;

	if (digits_read(&s, 2, &h) || *s++ != ':' || digits_read(&s, 2, &mi))
		return -EINVAL;
	if (*s == ':') {
		s++;
		if (digits_read(&s, 2, &sec))
			return -EINVAL;
	}
	if (*s != '\0' || h > 23 || mi > 59 || sec > 59)
		return -EINVAL;
	if (localtime_r(&now, &tm) == NULL)
		return -ERANGE;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	tm.tm_isdst = -1;
	if ((t = mktime(&tm)) == (time_t)-1)
		return -ERANGE;
	if ((int64_t)t * 1000 <= now_ms) {
		/* Tomorrow at that time, by the calendar: a day around a
		 * daylight-saving change is not 24 h. */
		if (localtime_r(&now, &tm) == NULL)
			return -ERANGE;
		tm.tm_mday++;
		tm.tm_hour = h;
		tm.tm_min = mi;
		tm.tm_sec = sec;
		tm.tm_isdst = -1;
		if ((t = mktime(&tm)) == (time_t)-1)
			return -ERANGE;
	}
	*ms = (int64_t)t * 1000;
	return 0;
}

int
units_parse_begin_ms(const char *s, int64_t now_ms, int64_t *ms)
{
	int64_t d;
	int rc;

	if (s == NULL || *s == '\0')
		return -EINVAL;
	if (s[0] == '+') {
		/* A unit required: "+90" could be seconds or minutes. */
		if ((rc = units_parse_duration_ms(s + 1, &d)) != 0)
			return rc;
		if (strpbrk(s + 1, "smhdwy") == NULL)
			return -EINVAL;
		if (d > (int64_t)UNITS_MAX - now_ms)
			return -ERANGE;
		*ms = now_ms + d;
		return 0;
	}
	if (strlen(s) >= 5 && s[2] == ':')
		return clock_next(s, now_ms, ms);
	if (strlen(s) >= 10 && s[4] == '-')
		return parse_iso8601(s, ms);
	return -EINVAL;
}

char *
units_format_size(uint64_t bytes, char *buf, size_t len)
{
	static const char units[] = "KMGTPE";
	double v;
	int u = 0;

	if (bytes < 1000) {
		snprintf(buf, len, "%" PRIu64 "B", bytes);
		return buf;
	}
	/* The unit that keeps the rounded number below 1000. */
	v = (double)bytes / 1024;
	while (v >= 999.5 && u < 5) {
		v /= 1024;
		u++;
	}
	if (v < 9.95)
		snprintf(buf, len, "%.1f%c", v, units[u]);
	else
		snprintf(buf, len, "%.0f%c", v, units[u]);
	return buf;
}

char *
units_format_duration(int64_t ms, char *buf, size_t len)
{
	const char *sign = ms < 0 ? "-" : "";
	/* Negate in unsigned arithmetic so INT64_MIN works too. */
	uint64_t u = ms < 0 ? -(uint64_t)ms : (uint64_t)ms;

	/* Lower units are truncated, as a clock would show them. */
	if (u < 1000)
		snprintf(buf, len, "%s%" PRIu64 "ms", sign, u);
	else if (u < 10000)
		snprintf(buf, len, "%s%" PRIu64 ".%" PRIu64 "s", sign, u / 1000,
		         u / 100 % 10);
	else if (u < 60000)
		snprintf(buf, len, "%s%" PRIu64 "s", sign, u / 1000);
	else if (u < 3600000)
		snprintf(buf, len, "%s%" PRIu64 "m%02" PRIu64 "s", sign,
		         u / 60000, u / 1000 % 60);
	else if (u < 86400000)
		snprintf(buf, len, "%s%" PRIu64 "h%02" PRIu64 "m", sign,
		         u / 3600000, u / 60000 % 60);
	else
		snprintf(buf, len, "%s%" PRIu64 "d%02" PRIu64 "h", sign,
		         u / 86400000, u / 3600000 % 24);
	return buf;
}
