/*
 * Text parsers for /proc files. Each parser walks the buffer with explicit
 * bounds (the text need not be NUL-terminated) and uses its own number
 * readers rather than strtoull/strtod, which need a terminator and depend
 * on the locale.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "procfs.h"

static int
is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static int
is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Reads an unsigned decimal at *p (< end); at least one digit. */
static int
parse_u64(const char **p, const char *end, uint64_t *v)
{
	const char *s = *p;
	uint64_t n = 0;

	if (s >= end || !is_digit(*s))
		return -EINVAL;
	for (; s < end && is_digit(*s); s++) {
		unsigned d = (unsigned)(*s - '0');
		if (n > (UINT64_MAX - d) / 10)
			return -ERANGE;
		n = n * 10 + d;
	}
	*p = s;
	*v = n;
	return 0;
}

/* A pid, ppid, pgrp or uid: non-negative and within int range. */
static int
parse_id(const char **p, const char *end, long long *v)
{
	uint64_t n;
	int rc;

	if ((rc = parse_u64(p, end, &n)) != 0)
		return rc;
	if (n > INT_MAX)
		return -ERANGE;
	*v = (long long)n;
	return 0;
}

static const char *
skip_blanks(const char *p, const char *end)
{
	while (p < end && is_blank(*p))
		p++;
	return p;
}

/* The end of the line starting at p: its '\n' or end. */
static const char *
line_end(const char *p, const char *end)
{
	const char *nl = memchr(p, '\n', (size_t)(end - p));

	return nl != NULL ? nl : end;
}

/* The start of the line after the one ending at eol, or end. */
static const char *
next_line(const char *eol, const char *end)
{
	return eol < end ? eol + 1 : end;
}

/* Whether [p, eol) starts with key (which includes its ':'). */
static int
has_key(const char *p, const char *eol, const char *key)
{
	size_t n = strlen(key);

	return (size_t)(eol - p) >= n && memcmp(p, key, n) == 0;
}

/* "   12345 kB" up to eol, converted to bytes. */
static int
parse_kb_value(const char *p, const char *eol, uint64_t *bytes)
{
	uint64_t kb;
	int rc;

	p = skip_blanks(p, eol);
	if ((rc = parse_u64(&p, eol, &kb)) != 0)
		return rc;
	p = skip_blanks(p, eol);
	if (eol - p < 2 || p[0] != 'k' || p[1] != 'B')
		return -EINVAL;
	p = skip_blanks(p + 2, eol);
	if (p != eol)
		return -EINVAL;
	if (kb > PROCFS_MAX_BYTES / 1024)
		return -ERANGE;
	*bytes = kb * 1024;
	return 0;
}

int
procfs_parse_meminfo(const char *buf, size_t len, struct procfs_meminfo *mi)
{
	static const struct {
		const char *key;
		size_t off;
	} fields[] = {
	    {"MemTotal:", offsetof(struct procfs_meminfo, mem_total_bytes)},
	    {"MemAvailable:",
	     offsetof(struct procfs_meminfo, mem_available_bytes)},
	    {"SwapTotal:", offsetof(struct procfs_meminfo, swap_total_bytes)},
	    {"SwapFree:", offsetof(struct procfs_meminfo, swap_free_bytes)},
	};
	const size_t nfields = sizeof(fields) / sizeof(fields[0]);
	const char *p = buf, *end = buf + len;
	unsigned seen = 0;
	size_t i;
	int rc;

	if (buf == NULL || mi == NULL)
		return -EINVAL;
	memset(mi, 0, sizeof(*mi));
	while (p < end && seen != (1u << nfields) - 1) {
		const char *eol = line_end(p, end);

		for (i = 0; i < nfields; i++) {
			uint64_t *dst;

			if ((seen & (1u << i)) ||
			    !has_key(p, eol, fields[i].key))
				continue;
			dst = (uint64_t *)((char *)mi + fields[i].off);
			rc =
			    parse_kb_value(p + strlen(fields[i].key), eol, dst);
			if (rc != 0)
				return rc;
			seen |= 1u << i;
			break;
		}
		p = next_line(eol, end);
	}
	/* All four are required. The kernel prints each one whatever its
	 * configuration (0 kB of swap without any), so a missing line is a
	 * file cut short: without SwapFree all swap would read as used,
	 * without both none. A zero total is nonsense and would divide by
	 * zero in free %. */
	if (seen != (1u << nfields) - 1 || mi->mem_total_bytes == 0)
		return -EINVAL;
	return 0;
}

int
procfs_parse_psi_some_avg10(const char *buf, size_t len, double *avg10)
{
	static const char key[] = "some ";
	static const char field[] = "avg10=";
	const char *p = buf, *end = buf + len;

	if (buf == NULL || avg10 == NULL)
		return -EINVAL;
	for (; p < end; p = next_line(line_end(p, end), end)) {
		const char *eol = line_end(p, end);
		uint64_t ip, fp = 0;
		double scale = 1.0, v;
		int rc;

		if (!has_key(p, eol, key))
			continue;
		p = skip_blanks(p + strlen(key), eol);
		if (!has_key(p, eol, field))
			return -EINVAL;
		p += strlen(field);
		if ((rc = parse_u64(&p, eol, &ip)) != 0)
			return rc;
		if (p < eol && *p == '.') {
			p++;
			if (p >= eol || !is_digit(*p))
				return -EINVAL;
			/* The kernel prints two decimals; more are accepted
			 * but only the first nine matter. */
			for (; p < eol && is_digit(*p); p++) {
				if (scale < 1e9) {
					fp = fp * 10 + (uint64_t)(*p - '0');
					scale *= 10;
				}
			}
		}
		/* Truncation check: the kernel always follows avg10 with
		 * " avg60=", a fixture may end the line instead. */
		if (p == end || !(is_blank(*p) || *p == '\n'))
			return -EINVAL;
		v = (double)ip + (double)fp / scale;
		if (v > 100.0)
			return -ERANGE;
		*avg10 = v;
		return 0;
	}
	return -EINVAL;
}

int
procfs_parse_status(const char *buf, size_t len, struct procfs_status *st)
{
	const char *p = buf, *end = buf + len;
	int have_ppid = 0, have_uid = 0;
	long long id;
	int rc;

	if (buf == NULL || st == NULL)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	for (; p < end; p = next_line(line_end(p, end), end)) {
		const char *eol = line_end(p, end);

		if (has_key(p, eol, "PPid:")) {
			p = skip_blanks(p + 5, eol);
			if ((rc = parse_id(&p, eol, &id)) != 0)
				return rc;
			if (skip_blanks(p, eol) != eol)
				return -EINVAL;
			st->ppid = (pid_t)id;
			have_ppid = 1;
		} else if (has_key(p, eol, "Uid:")) {
			/* Real, effective, saved, filesystem: the first. */
			p = skip_blanks(p + 4, eol);
			if ((rc = parse_id(&p, eol, &id)) != 0)
				return rc;
			if (p == eol || !is_blank(*p))
				return -EINVAL;
			st->uid = (uid_t)id;
			have_uid = 1;
		} else if (has_key(p, eol, "State:")) {
			p = skip_blanks(p + 6, eol);
			if (p == eol)
				return -EINVAL;
			st->state = *p;
			st->present |= PROCFS_STATUS_STATE;
		} else if (has_key(p, eol, "NSpgid:")) {
			/* One value per nested pid namespace, outermost
			 * (the one /proc belongs to) first. */
			p = skip_blanks(p + 7, eol);
			if ((rc = parse_id(&p, eol, &id)) != 0)
				return rc;
			if (p != eol && !is_blank(*p))
				return -EINVAL;
			st->nspgid = (pid_t)id;
			st->present |= PROCFS_STATUS_NSPGID;
		} else if (has_key(p, eol, "RssAnon:")) {
			rc = parse_kb_value(p + 8, eol, &st->rss_anon_bytes);
			if (rc != 0)
				return rc;
			st->present |= PROCFS_STATUS_RSS_ANON;
		} else if (has_key(p, eol, "RssShmem:")) {
			rc = parse_kb_value(p + 9, eol, &st->rss_shmem_bytes);
			if (rc != 0)
				return rc;
			st->present |= PROCFS_STATUS_RSS_SHMEM;
		} else if (has_key(p, eol, "VmSwap:")) {
			rc = parse_kb_value(p + 7, eol, &st->swap_bytes);
			if (rc != 0)
				return rc;
			st->present |= PROCFS_STATUS_VM_SWAP;
		}
		/* The daemon reads this file for every followed process on
		 * every sample: stop once everything wanted is in hand (the
		 * signal masks, capabilities and cpu lists after VmSwap are
		 * half of the file). */
		if (have_ppid && have_uid && st->present == PROCFS_STATUS_ALL)
			break;
	}
	return have_ppid && have_uid ? 0 : -EINVAL;
}

/* Skips one blank-separated field of /proc/PID/stat (p at its start). */
static int
skip_field(const char **p, const char *end)
{
	const char *s = *p;

	if (s >= end || *s == ' ' || *s == '\n')
		return -EINVAL;
	while (s < end && *s != ' ' && *s != '\n')
		s++;
	if (s == end || *s != ' ')
		return -EINVAL; /* truncated: more fields must follow */
	*p = s + 1;
	return 0;
}

/* One numeric field followed by a blank. */
static int
stat_id(const char **p, const char *end, pid_t *v)
{
	long long id;
	int rc;

	if ((rc = parse_id(p, end, &id)) != 0)
		return rc;
	if (*p == end || **p != ' ')
		return -EINVAL;
	(*p)++;
	*v = (pid_t)id;
	return 0;
}

int
procfs_parse_stat(const char *buf, size_t len, struct procfs_stat *st)
{
	const char *p = buf, *end = buf + len, *rparen = NULL, *s;
	uint64_t start;
	int field, rc;

	if (buf == NULL || st == NULL)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	if ((rc = stat_id(&p, end, &st->pid)) != 0)
		return rc;
	if (p == end || *p != '(')
		return -EINVAL;
	/* The name is whatever the process chose, ')' and '\n' included;
	 * everything after it is numbers, so the last ')' closes it. */
	for (s = p; s < end; s++)
		if (*s == ')')
			rparen = s;
	if (rparen == NULL || end - rparen < 4 || rparen[1] != ' ' ||
	    rparen[3] != ' ')
		return -EINVAL;
	st->state = rparen[2];
	p = rparen + 4;
	/* Fields 4, 5, 6: ppid, pgrp, session. */
	if ((rc = stat_id(&p, end, &st->ppid)) != 0 ||
	    (rc = stat_id(&p, end, &st->pgrp)) != 0 ||
	    (rc = stat_id(&p, end, &st->session)) != 0)
		return rc;
	for (field = 7; field < 22; field++)
		if ((rc = skip_field(&p, end)) != 0)
			return rc;
	if ((rc = parse_u64(&p, end, &start)) != 0)
		return rc;
	if (p == end || *p != ' ')
		return -EINVAL; /* the kernel prints 30 more fields */
	st->start_time = start;
	return 0;
}

int
procfs_parse_loadavg_last_pid(const char *buf, size_t len, pid_t *pid)
{
	const char *end = buf + len, *p;
	long long id;
	int rc;

	if (buf == NULL || pid == NULL)
		return -EINVAL;
	/* "0.00 0.01 0.05 1/123 4567\n": the field after the "a/b" one. */
	while (end > buf && (end[-1] == '\n' || is_blank(end[-1])))
		end--;
	p = end;
	while (p > buf && !is_blank(p[-1]))
		p--;
	if (p == buf || p == end || memchr(buf, '/', (size_t)(p - buf)) == NULL)
		return -EINVAL;
	if ((rc = parse_id(&p, end, &id)) != 0)
		return rc;
	if (p != end)
		return -EINVAL;
	*pid = (pid_t)id;
	return 0;
}

/* A failed read of a process's file: the process exited after the open. */
static ssize_t
read_error(void)
{
	return errno == ESRCH || errno == ENOENT ? -ESRCH : -errno;
}

ssize_t
procfs_pread(int fd, char *buf, size_t len)
{
	size_t off = 0;
	ssize_t n;
	char more;

	if (len == 0)
		return -EINVAL;
	while (off < len - 1) {
		n = pread(fd, buf + off, len - 1 - off, (off_t)off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return read_error();
		}
		if (n == 0)
			break;
		off += (size_t)n;
		/* A short read is the end: /proc files come from seq_file,
		 * which fills what it is asked for when it can, and a read
		 * at a later offset would make the kernel generate the whole
		 * file again only to say "end". */
		if ((size_t)n < len - 1 - (off - (size_t)n))
			break;
	}
	/* A full buffer may be the exact size of the file or its start:
	 * only one more byte tells, and only then is it asked for. */
	if (off == len - 1) {
		do
			n = pread(fd, &more, 1, (off_t)off);
		while (n < 0 && errno == EINTR);
		if (n > 0)
			return -EFBIG;
		if (n < 0)
			return read_error();
	}
	buf[off] = '\0';
	return (ssize_t)off;
}

ssize_t
procfs_read_file(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	if (len == 0)
		return -EINVAL;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	n = procfs_pread(fd, buf, len);
	close(fd);
	return n;
}

ssize_t
procfs_pread_buf(int fd, struct procfs_buf *b)
{
	size_t size;
	ssize_t n;
	char *p;

	if (b->data == NULL) {
		if ((b->data = malloc(PROCFS_BUF_INITIAL)) == NULL)
			return -ENOMEM;
		b->size = PROCFS_BUF_INITIAL;
	}
	while ((n = procfs_pread(fd, b->data, b->size)) == -EFBIG &&
	       b->size < PROCFS_BUF_MAX) {
		size =
		    b->size * 2 < PROCFS_BUF_MAX ? b->size * 2 : PROCFS_BUF_MAX;
		if ((p = realloc(b->data, size)) == NULL)
			return -ENOMEM;
		b->data = p;
		b->size = size;
	}
	return n;
}

void
procfs_buf_free(struct procfs_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->size = 0;
}

/* Reads <dir>/<rel> into buf, NUL-terminated; returns its length. */
static ssize_t
read_under(const char *dir, const char *rel, char *buf, size_t len)
{
	char path[PATH_MAX];
	int n;

	if (dir == NULL || rel == NULL)
		return -EINVAL;
	n = snprintf(path, sizeof(path), "%s/%s", dir, rel);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	return procfs_read_file(path, buf, len);
}

int
procfs_read_meminfo(const char *dir, struct procfs_meminfo *mi)
{
	char buf[8192];
	ssize_t n = read_under(dir, "meminfo", buf, sizeof(buf));

	if (n < 0)
		return (int)n;
	return procfs_parse_meminfo(buf, (size_t)n, mi);
}

int
procfs_read_psi_some_avg10(const char *dir, double *avg10)
{
	char buf[1024];
	ssize_t n = read_under(dir, "pressure/memory", buf, sizeof(buf));

	if (n < 0)
		return (int)n;
	return procfs_parse_psi_some_avg10(buf, (size_t)n, avg10);
}

int
procfs_read_status(const char *dir, pid_t pid, struct procfs_status *st)
{
	struct procfs_buf b = {NULL, 0};
	char path[PATH_MAX];
	ssize_t n;
	int fd, rc;

	if (dir == NULL || pid <= 0)
		return -EINVAL;
	n = snprintf(path, sizeof(path), "%s/%d/status", dir, (int)pid);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	n = procfs_pread_buf(fd, &b);
	close(fd);
	rc = n < 0 ? (int)n : procfs_parse_status(b.data, (size_t)n, st);
	procfs_buf_free(&b);
	return rc;
}

int
procfs_read_stat(const char *dir, pid_t pid, struct procfs_stat *st)
{
	char rel[32], buf[1024];
	ssize_t n;

	if (pid <= 0)
		return -EINVAL;
	snprintf(rel, sizeof(rel), "%d/stat", (int)pid);
	if ((n = read_under(dir, rel, buf, sizeof(buf))) < 0)
		return (int)(n == -ENOENT ? -ESRCH : n);
	return procfs_parse_stat(buf, (size_t)n, st);
}
