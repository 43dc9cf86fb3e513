/*
 * Human units shared by the daemon's options and the CLI. Sizes use powers
 * of 1024 (8G = 8589934592 bytes); see docs/units.md for the accepted forms.
 */
#ifndef SL_UNITS_H
#define SL_UNITS_H

#include <stddef.h>
#include <stdint.h>

/* "8G", "512M", "1.5G", "100K", "4096", "8GiB", "8gb" (K M G T P E): bytes.
 * Returns 0 or -EINVAL (bad syntax) / -ERANGE (above 2^53). */
int units_parse_size(const char *s, uint64_t *bytes);
/* "500ms", "30s", "1m", "1h", "2d", "1w", "0.5" (plain number = seconds),
 * "1h30m": milliseconds. Returns 0, -EINVAL or -ERANGE. */
int units_parse_duration_ms(const char *s, int64_t *ms);
/* A point in time for --since/--until: a duration means that long before
 * now_ms ("1h", "-1h"), "now", an epoch in ms or s (digits only, >= 1e12
 * is ms), or ISO 8601 "2026-11-30", "2026-11-30T05:00[:SS[.mmm]]" /
 * "2026-11-30 05:00", local time unless it ends in "Z" or "+01:00". */
int units_parse_time_ms(const char *s, int64_t now_ms, int64_t *ms);
/* When a job may begin (--begin): "+DURATION" from now_ms ("+3s",
 * "+1h30m"; a unit required), "HH:MM" or "HH:MM:SS" local, its next
 * occurrence after now_ms (today, else tomorrow), or an ISO date or
 * date-time as units_parse_time_ms takes it. A duration without its '+'
 * ("3s") and a bare number are -EINVAL: which way it counts is not
 * clear. Returns 0, -EINVAL or -ERANGE. */
int units_parse_begin_ms(const char *s, int64_t now_ms, int64_t *ms);
/* "8.0G", "512M", "0B": at most 3 significant digits, into buf. */
char *units_format_size(uint64_t bytes, char *buf, size_t len);
/* "1h02m", "45s", "850ms". */
char *units_format_duration(int64_t ms, char *buf, size_t len);

#endif
