/* The /proc parsers, on fixture directories and on buffers. Every buffer is
 * copied to an exact-size heap block without a terminator, so a parser that
 * reads one byte too far is caught by ASan builds. */
#define _GNU_SOURCE /* memmem */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "procfs.h"

static char fixtures[4096];

static const char *
fx(const char *sub)
{
	static char path[4096 + 64];

	snprintf(path, sizeof(path), "%s/proc/%s", fixtures, sub);
	return path;
}

/* The content of a fixture file, in an exact-size heap block. */
static char *
load(const char *rel, size_t *len)
{
	char path[4096 + 64], tmp[65536];
	ssize_t n;
	char *out;

	snprintf(path, sizeof(path), "%s/proc/%s", fixtures, rel);
	n = procfs_read_file(path, tmp, sizeof(tmp));
	assert_true(n >= 0);
	out = malloc((size_t)n + 1); /* +1 so a 0-length malloc is not NULL */
	assert_non_null(out);
	memcpy(out, tmp, (size_t)n);
	*len = (size_t)n;
	return out;
}

static char *
dup_exact(const char *s, size_t len)
{
	char *out = malloc(len + 1);

	assert_non_null(out);
	memcpy(out, s, len);
	return out;
}

static int
meminfo_str(const char *s, struct procfs_meminfo *mi)
{
	size_t len = strlen(s);
	char *b = dup_exact(s, len);
	int rc = procfs_parse_meminfo(b, len, mi);

	free(b);
	return rc;
}

static int
psi_str(const char *s, double *v)
{
	size_t len = strlen(s);
	char *b = dup_exact(s, len);
	int rc = procfs_parse_psi_some_avg10(b, len, v);

	free(b);
	return rc;
}

static int
stat_str(const char *s, struct procfs_stat *st)
{
	size_t len = strlen(s);
	char *b = dup_exact(s, len);
	int rc = procfs_parse_stat(b, len, st);

	free(b);
	return rc;
}

static int
status_str(const char *s, struct procfs_status *st)
{
	size_t len = strlen(s);
	char *b = dup_exact(s, len);
	int rc = procfs_parse_status(b, len, st);

	free(b);
	return rc;
}

static void
test_meminfo_full(void **state)
{
	struct procfs_meminfo mi;

	assert_int_equal(procfs_read_meminfo(fx("full"), &mi), 0);
	assert_true(mi.mem_total_bytes == 16384000ULL * 1024);
	assert_true(mi.mem_available_bytes == 4096000ULL * 1024);
	assert_true(mi.swap_total_bytes == 2097152ULL * 1024);
	assert_true(mi.swap_free_bytes == 1572864ULL * 1024);
}

static void
test_meminfo_bad_files(void **state)
{
	struct procfs_meminfo mi;

	assert_int_equal(procfs_read_meminfo(fx("truncated"), &mi), -EINVAL);
	assert_int_equal(procfs_read_meminfo(fx("malformed"), &mi), -EINVAL);
	assert_int_equal(procfs_read_meminfo(fx("does-not-exist"), &mi),
	                 -ENOENT);
	/* Its bytes fit in 64 bits, but not in what the protocol carries. */
	assert_int_equal(procfs_read_meminfo(fx("overflow"), &mi), -ERANGE);
}

/* A machine without swap: the kernel still prints both lines, as 0. */
static void
test_meminfo_noswap(void **state)
{
	struct procfs_meminfo mi;

	assert_int_equal(procfs_read_meminfo(fx("noswap"), &mi), 0);
	assert_true(mi.mem_total_bytes == 16384000ULL * 1024);
	assert_true(mi.swap_total_bytes == 0 && mi.swap_free_bytes == 0);
}

/* The kernel always prints SwapTotal and SwapFree, so a file without them
 * was cut short (here after MemAvailable) and must not read as no swap. */
static void
test_meminfo_missing_swap(void **state)
{
	struct procfs_meminfo mi;

	assert_int_equal(procfs_read_meminfo(fx("missing"), &mi), -EINVAL);
}

#define NOSWAP "SwapTotal: 0 kB\nSwapFree: 0 kB\n"

static void
test_meminfo_buffers(void **state)
{
	struct procfs_meminfo mi;

	/* No trailing newline is fine when the unit is there. */
	assert_int_equal(
	    meminfo_str("MemTotal: 100 kB\n" NOSWAP "MemAvailable: 50 kB", &mi),
	    0);
	assert_true(mi.mem_available_bytes == 50 * 1024);
	/* Blanks of any kind around the value. */
	assert_int_equal(meminfo_str("MemTotal:\t100\tkB \nMemAvailable:50 "
	                             "kB\nSwapTotal:\t10 kB\nSwapFree:4\tkB",
	                             &mi),
	                 0);
	assert_true(mi.mem_total_bytes == 100 * 1024);
	assert_true(mi.swap_total_bytes == 10 * 1024 &&
	            mi.swap_free_bytes == 4 * 1024);
	/* Order does not matter, unknown keys and prefixes are ignored. */
	assert_int_equal(meminfo_str("SwapFree: 0 kB\nMemAvailableX: 7 "
	                             "kB\nMemAvailable: 1 kB\nFoo: bar\n"
	                             "SwapTotal: 0 kB\nMemTotal: 2 kB\n",
	                             &mi),
	                 0);
	assert_true(mi.mem_available_bytes == 1024 &&
	            mi.mem_total_bytes == 2048);
	assert_int_equal(meminfo_str("", &mi), -EINVAL);
	assert_int_equal(meminfo_str("\n\n\n", &mi), -EINVAL);
	assert_int_equal(meminfo_str("MemTotal: 100 kB\n" NOSWAP, &mi),
	                 -EINVAL);
	assert_int_equal(
	    meminfo_str("MemTotal: 0 kB\nMemAvailable: 0 kB\n" NOSWAP, &mi),
	    -EINVAL);
	assert_int_equal(
	    meminfo_str("MemTotal: 100\nMemAvailable: 50 kB\n" NOSWAP, &mi),
	    -EINVAL);
	assert_int_equal(
	    meminfo_str(NOSWAP "MemTotal: 100 kB\nMemAvailable: 50 k", &mi),
	    -EINVAL);
	assert_int_equal(
	    meminfo_str(NOSWAP "MemTotal: 100 kB\nMemAvailable: -5 kB", &mi),
	    -EINVAL);
	assert_int_equal(meminfo_str("MemTotal: 100 kB junk\nMemAvailable: 5 "
	                             "kB\n" NOSWAP,
	                             &mi),
	                 -EINVAL);
	/* Without both swap lines the file was cut short: neither (it would
	 * read as no swap), nor one without the other (a missing SwapFree
	 * would read as all swap used). */
	assert_int_equal(
	    meminfo_str("MemTotal: 100 kB\nMemAvailable: 50 kB\n", &mi),
	    -EINVAL);
	assert_int_equal(meminfo_str("MemTotal: 100 kB\nMemAvailable: 50 "
	                             "kB\nSwapTotal: 10 kB\n",
	                             &mi),
	                 -EINVAL);
	assert_int_equal(meminfo_str("MemTotal: 100 kB\nMemAvailable: 50 "
	                             "kB\nSwapFree: 10 kB\n",
	                             &mi),
	                 -EINVAL);
	assert_int_equal(meminfo_str("MemTotal: 100 kB\nMemAvailable: 50 "
	                             "kB\nSwapTotal: 10 kB\nSwapFree: 10",
	                             &mi),
	                 -EINVAL);
	/* Overflow of the number and of the kB -> bytes conversion. */
	assert_int_equal(meminfo_str("MemTotal: 99999999999999999999 "
	                             "kB\nMemAvailable: 1 kB\n" NOSWAP,
	                             &mi),
	                 -ERANGE);
	assert_int_equal(meminfo_str("MemTotal: 18014398509481984 "
	                             "kB\nMemAvailable: 1 kB\n" NOSWAP,
	                             &mi),
	                 -ERANGE);
	/* Bytes are carried as JSON numbers, exact up to 2^53: 2^43 kB is
	 * the most, one more is out of range, and so is 2^54 - 1 kB, whose
	 * bytes would still fit in 64 bits. */
	assert_int_equal(meminfo_str("MemTotal: 8796093022208 kB\n"
	                             "MemAvailable: 1 kB\n" NOSWAP,
	                             &mi),
	                 0);
	assert_true(mi.mem_total_bytes == 1ULL << 53);
	assert_int_equal(meminfo_str("MemTotal: 8796093022209 kB\n"
	                             "MemAvailable: 1 kB\n" NOSWAP,
	                             &mi),
	                 -ERANGE);
	assert_int_equal(meminfo_str("MemTotal: 18014398509481983 kB\n"
	                             "MemAvailable: 1 kB\n" NOSWAP,
	                             &mi),
	                 -ERANGE);
	assert_int_equal(meminfo_str("MemTotal: 100 kB\n"
	                             "MemAvailable: 1 kB\nSwapTotal: "
	                             "18014398509481983 kB\nSwapFree: 0 kB\n",
	                             &mi),
	                 -ERANGE);
}

/* Every prefix of a real file either fails or gives the full answer. */
static void
test_meminfo_every_prefix(void **state)
{
	struct procfs_meminfo want, got;
	size_t len, i;
	char *full = load("full/meminfo", &len);

	assert_int_equal(procfs_parse_meminfo(full, len, &want), 0);
	for (i = 0; i <= len; i++) {
		char *b = dup_exact(full, i);
		int rc = procfs_parse_meminfo(b, i, &got);

		free(b);
		if (rc == 0) {
			/* Only a prefix that holds all four lines whole. */
			assert_memory_equal(&got, &want, sizeof(got));
		} else {
			assert_int_equal(rc, -EINVAL);
		}
	}
	free(full);
}

static void
test_psi_files(void **state)
{
	double v = -1;

	assert_int_equal(procfs_read_psi_some_avg10(fx("full"), &v), 0);
	assert_true(v > 12.339 && v < 12.341);
	assert_int_equal(procfs_read_psi_some_avg10(fx("truncated"), &v),
	                 -EINVAL);
	assert_int_equal(procfs_read_psi_some_avg10(fx("malformed"), &v),
	                 -EINVAL);
	assert_int_equal(procfs_read_psi_some_avg10(fx("noswap"), &v), -ENOENT);
}

static void
test_psi_buffers(void **state)
{
	double v = -1;

	assert_int_equal(psi_str("some avg10=0.00 avg60=0.00 avg300=0.00 "
	                         "total=0\n",
	                         &v),
	                 0);
	assert_true(v == 0.0);
	assert_int_equal(psi_str("some avg10=100.00 avg60=0\n", &v), 0);
	assert_true(v == 100.0);
	assert_int_equal(psi_str("full avg10=1.00 avg60=0\nsome avg10=7 "
	                         "avg60=0\n",
	                         &v),
	                 0);
	assert_true(v == 7.0);
	assert_int_equal(psi_str("some avg10=55.5\n", &v), 0);
	assert_true(v == 55.5);
	assert_int_equal(psi_str("some avg10=100.01 avg60=0\n", &v), -ERANGE);
	assert_int_equal(psi_str("full avg10=1.00 avg60=0\n", &v), -EINVAL);
	assert_int_equal(psi_str("some avg10=5", &v), -EINVAL);
	assert_int_equal(psi_str("some avg10=5.", &v), -EINVAL);
	assert_int_equal(psi_str("some avg10=5. avg60=1", &v), -EINVAL);
	assert_int_equal(psi_str("some avg10=.5 avg60=1", &v), -EINVAL);
	assert_int_equal(psi_str("some avg10=-1 avg60=1", &v), -EINVAL);
	assert_int_equal(psi_str("some avg60=1 avg10=1 ", &v), -EINVAL);
	assert_int_equal(psi_str("some avg10=1x avg60=1", &v), -EINVAL);
	assert_int_equal(psi_str("", &v), -EINVAL);
	assert_int_equal(psi_str("some ", &v), -EINVAL);
}

static void
test_status_files(void **state)
{
	struct procfs_status st;

	assert_int_equal(procfs_read_status(fx("full"), 4242, &st), 0);
	assert_int_equal(st.ppid, 4200);
	assert_int_equal(st.uid, 1000); /* the real one, not 1001 */
	assert_true(st.rss_anon_bytes == 524288ULL * 1024);
	assert_true(st.rss_shmem_bytes == 4096ULL * 1024);
	assert_true(st.swap_bytes == 65536ULL * 1024);
	assert_int_equal(st.present,
	                 PROCFS_STATUS_RSS_ANON | PROCFS_STATUS_RSS_SHMEM |
	                     PROCFS_STATUS_VM_SWAP | PROCFS_STATUS_STATE |
	                     PROCFS_STATUS_NSPGID);
	assert_int_equal(st.state, 'R');
	assert_int_equal(st.nspgid, 4242);

	/* A kernel thread has no memory lines: zero, and said so. */
	assert_int_equal(procfs_read_status(fx("full"), 2, &st), 0);
	assert_int_equal(st.ppid, 0);
	assert_int_equal(
	    st.present & ~(PROCFS_STATUS_STATE | PROCFS_STATUS_NSPGID), 0);
	assert_true(st.rss_anon_bytes == 0 && st.swap_bytes == 0);

	assert_int_equal(procfs_read_status(fx("tricky"), 4243, &st), 0);
	assert_int_equal(st.ppid, 4200);
	assert_int_equal(st.present &
	                     (PROCFS_STATUS_RSS_ANON | PROCFS_STATUS_RSS_SHMEM |
	                      PROCFS_STATUS_VM_SWAP),
	                 0);

	assert_int_equal(procfs_read_status(fx("truncated"), 4245, &st),
	                 -EINVAL);
	assert_int_equal(procfs_read_status(fx("missing"), 4244, &st), -EINVAL);
	assert_int_equal(procfs_read_status(fx("full"), 99999, &st), -ESRCH);
	assert_int_equal(procfs_read_status(fx("full"), 0, &st), -EINVAL);
}

/*
 * Groups: comes before the memory lines and holds every supplementary
 * group: 2000 of them make this status about 17 KiB. Read whole, it gives
 * the same memory figures as the small one; read cut, it would give none.
 */
static void
test_status_many_groups(void **state)
{
	struct procfs_status st;
	size_t len;
	char *full = load("full/4246/status", &len);

	assert_true(len > 16384);
	assert_int_equal(procfs_parse_status(full, len, &st), 0);
	assert_int_equal(st.present, PROCFS_STATUS_ALL);
	assert_true(st.rss_anon_bytes == 524288ULL * 1024);
	free(full);

	assert_int_equal(procfs_read_status(fx("full"), 4246, &st), 0);
	assert_int_equal(st.ppid, 4200);
	assert_int_equal(st.uid, 1000);
	assert_int_equal(st.present, PROCFS_STATUS_ALL);
	assert_true(st.rss_anon_bytes == 524288ULL * 1024);
	assert_true(st.rss_shmem_bytes == 4096ULL * 1024);
	assert_true(st.swap_bytes == 65536ULL * 1024);
	assert_int_equal(st.nspgid, 4246);
}

/* A temporary file of n bytes of text, open for reading. */
static int
temp_file(size_t n)
{
	char path[] = "/tmp/sl-procfs-XXXXXX";
	char chunk[4096];
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	unlink(path);
	memset(chunk, 'x', sizeof(chunk));
	while (n > 0) {
		size_t k = n < sizeof(chunk) ? n : sizeof(chunk);

		assert_int_equal(write(fd, chunk, k), (ssize_t)k);
		n -= k;
	}
	return fd;
}

/* A file that fills the buffer is reported as too large, never returned
 * cut; one that fits exactly (with its terminator) is whole. */
static void
test_read_truncation(void **state)
{
	struct procfs_buf b = {NULL, 0};
	char path[4096 + 64], buf[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/proc/full/4246/status", fixtures);
	assert_int_equal(procfs_read_file(path, buf, sizeof(buf)), -EFBIG);

	fd = temp_file(sizeof(buf) - 1);
	assert_int_equal(procfs_pread(fd, buf, sizeof(buf)),
	                 (ssize_t)sizeof(buf) - 1);
	assert_int_equal(buf[sizeof(buf) - 1], '\0');
	close(fd);
	fd = temp_file(sizeof(buf));
	assert_int_equal(procfs_pread(fd, buf, sizeof(buf)), -EFBIG);
	close(fd);

	/* The growing buffer takes the whole file, up to its bound. */
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	n = procfs_pread_buf(fd, &b);
	assert_true(n > 16384 && b.size > (size_t)n && b.data[n] == '\0');
	assert_non_null(memmem(b.data, (size_t)n, "VmSwap:", 7));
	close(fd);
	fd = temp_file(PROCFS_BUF_MAX - 1);
	assert_int_equal(procfs_pread_buf(fd, &b), PROCFS_BUF_MAX - 1);
	close(fd);
	fd = temp_file(PROCFS_BUF_MAX);
	assert_int_equal(procfs_pread_buf(fd, &b), -EFBIG);
	close(fd);
	procfs_buf_free(&b);
	assert_null(b.data);
}

static void
test_status_buffers(void **state)
{
	struct procfs_status st;

	assert_int_equal(status_str("PPid:\t1\nUid:\t5\t6\t7\t8\n", &st), 0);
	assert_int_equal(st.uid, 5);
	assert_int_equal(status_str("Uid:\t5\t6\t7\t8\n", &st), -EINVAL);
	assert_int_equal(
	    status_str("State:\tZ (zombie)\nPPid:\t1\nNSpgid:\t7\t1"
	               "\nUid:\t5\t5\n",
	               &st),
	    0);
	assert_int_equal(st.state, 'Z');
	assert_int_equal(st.nspgid, 7);
	assert_int_equal(status_str("State:\nPPid:\t1\nUid:\t5\t5\n", &st),
	                 -EINVAL);
	assert_int_equal(status_str("PPid:\t1\nUid:\t5", &st), -EINVAL);
	assert_int_equal(status_str("PPid:\t1x\nUid:\t5\t5\n", &st), -EINVAL);
	assert_int_equal(
	    status_str("PPid:\t1\nUid:\t5\t5\nRssAnon:\t12\n", &st), -EINVAL);
	assert_int_equal(status_str("PPid:\t9999999999\nUid:\t5\t5\n", &st),
	                 -ERANGE);
	assert_int_equal(status_str("PPid:\t1\nUid:\t5\t5\n"
	                            "VmSwap:\t18014398509481983 kB\n",
	                            &st),
	                 -ERANGE);
}

static void
test_stat_files(void **state)
{
	struct procfs_stat st;

	assert_int_equal(procfs_read_stat(fx("full"), 4242, &st), 0);
	assert_int_equal(st.pid, 4242);
	assert_int_equal(st.state, 'S');
	assert_int_equal(st.ppid, 4200);
	assert_int_equal(st.pgrp, 4242);
	assert_int_equal(st.session, 4100);
	assert_true(st.start_time == 987654);

	assert_int_equal(procfs_read_stat(fx("full"), 2, &st), 0);
	assert_int_equal(st.ppid, 0);
	assert_true(st.start_time == 16);

	/* "a) (b c)": blanks and parentheses in the name. */
	assert_int_equal(procfs_read_stat(fx("tricky"), 4243, &st), 0);
	assert_int_equal(st.pid, 4243);
	assert_int_equal(st.state, 'R');
	assert_int_equal(st.ppid, 4242);
	assert_int_equal(st.pgrp, 4242);
	assert_true(st.start_time == 987700);

	assert_int_equal(procfs_read_stat(fx("truncated"), 4245, &st), -EINVAL);
	assert_int_equal(procfs_read_stat(fx("missing"), 4244, &st), -EINVAL);
	assert_int_equal(procfs_read_stat(fx("full"), 99999, &st), -ESRCH);
}

static void
test_stat_buffers(void **state)
{
	static const char tail[] = " 0 0 0 0 0 0 0 0 0 0 0 20 0 1 0 777 9 9\n";
	char buf[256];
	struct procfs_stat st;

	snprintf(buf, sizeof(buf), "12 (x\ny) (z)) S 3 4 5%s", tail);
	assert_int_equal(stat_str(buf, &st), 0);
	assert_int_equal(st.ppid, 3);
	assert_int_equal(st.pgrp, 4);
	assert_true(st.start_time == 777);
	snprintf(buf, sizeof(buf), "12 ()) S 3 4 5%s", tail);
	assert_int_equal(stat_str(buf, &st), 0);
	snprintf(buf, sizeof(buf), "12 () S 3 4 5%s", tail);
	assert_int_equal(stat_str(buf, &st), 0);
	/* Negative nice/priority fields are skipped, not parsed. */
	assert_int_equal(stat_str("1 (a) S 0 1 1 0 -1 0 0 0 0 0 0 0 0 0 -2 -20 "
	                          "1 0 5 0\n",
	                          &st),
	                 0);
	assert_true(st.start_time == 5);
	assert_int_equal(stat_str("12 (x) S -3 4 5 0 0\n", &st), -EINVAL);
	assert_int_equal(stat_str("12 x) S 3 4 5\n", &st), -EINVAL);
	assert_int_equal(stat_str("12 (x S 3 4 5\n", &st), -EINVAL);
	assert_int_equal(stat_str("12 (x)", &st), -EINVAL);
	assert_int_equal(stat_str("12 (x) S", &st), -EINVAL);
	assert_int_equal(stat_str("12 (x) S 3  4 5\n", &st), -EINVAL);
	assert_int_equal(stat_str("", &st), -EINVAL);
	assert_int_equal(stat_str("(x) S 1 2 3\n", &st), -EINVAL);
}

static void
test_stat_every_prefix(void **state)
{
	struct procfs_stat want, got;
	size_t len, i;
	char *full = load("tricky/4243/stat", &len);

	assert_int_equal(procfs_parse_stat(full, len, &want), 0);
	for (i = 0; i <= len; i++) {
		char *b = dup_exact(full, i);
		int rc = procfs_parse_stat(b, i, &got);

		free(b);
		if (rc == 0)
			assert_memory_equal(&got, &want, sizeof(got));
		else
			assert_true(rc == -EINVAL || rc == -ERANGE);
	}
	free(full);
}

static void
test_loadavg(void **state)
{
	const char *ok = "0.52 0.58 0.59 2/467 12345\n";
	pid_t pid = 0;
	char *b;

	b = dup_exact(ok, strlen(ok));
	assert_int_equal(procfs_parse_loadavg_last_pid(b, strlen(ok), &pid), 0);
	assert_int_equal(pid, 12345);
	/* The last field must follow the "running/total" one. */
	assert_int_equal(procfs_parse_loadavg_last_pid(b, 20, &pid), -EINVAL);
	assert_int_equal(procfs_parse_loadavg_last_pid(b, 0, &pid), -EINVAL);
	free(b);
	b = dup_exact("1 2 3 4/5 x1\n", 13);
	assert_int_equal(procfs_parse_loadavg_last_pid(b, 13, &pid), -EINVAL);
	free(b);
}

/* Random text made of the characters the parsers care about: no crash,
 * no over-read (under ASan), only 0 or a documented error. */
static void
test_random_garbage(void **state)
{
	static const char alphabet[] = "0123456789 \t\n():.kB=-sSomeavgMT"
	                               "PpidUuRsAnVwSapTotlFr";
	unsigned seed = 12345;
	int i;

	for (i = 0; i < 20000; i++) {
		size_t len = (size_t)(rand_r(&seed) % 200), j;
		char *b = malloc(len + 1);
		struct procfs_meminfo mi;
		struct procfs_status ss;
		struct procfs_stat st;
		double v;
		int rc[4];

		assert_non_null(b);
		for (j = 0; j < len; j++)
			b[j] = alphabet[rand_r(&seed) % (sizeof(alphabet) - 1)];
		rc[0] = procfs_parse_meminfo(b, len, &mi);
		rc[1] = procfs_parse_psi_some_avg10(b, len, &v);
		rc[2] = procfs_parse_status(b, len, &ss);
		rc[3] = procfs_parse_stat(b, len, &st);
		(void)procfs_parse_loadavg_last_pid(b, len, &st.pid);
		for (j = 0; j < 4; j++)
			assert_true(rc[j] == 0 || rc[j] == -EINVAL ||
			            rc[j] == -ERANGE);
		free(b);
	}
}

/* The parsers agree with the running kernel about this process. */
static void
test_real_proc(void **state)
{
	struct procfs_stat st;
	struct procfs_status ss;
	struct procfs_meminfo mi;

	if (access("/proc/self/stat", R_OK) != 0)
		skip();
	assert_int_equal(procfs_read_stat("/proc", getpid(), &st), 0);
	assert_int_equal(st.pid, getpid());
	assert_int_equal(st.ppid, getppid());
	assert_int_equal(st.pgrp, getpgrp());
	assert_int_equal(procfs_read_status("/proc", getpid(), &ss), 0);
	assert_int_equal(ss.ppid, getppid());
	assert_int_equal(ss.uid, getuid());
	assert_true(ss.present & PROCFS_STATUS_RSS_ANON);
	assert_true(ss.rss_anon_bytes > 0);
	assert_int_equal(procfs_read_meminfo("/proc", &mi), 0);
	assert_true(mi.mem_available_bytes <= mi.mem_total_bytes);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_meminfo_full),
	    cmocka_unit_test(test_meminfo_bad_files),
	    cmocka_unit_test(test_meminfo_noswap),
	    cmocka_unit_test(test_meminfo_missing_swap),
	    cmocka_unit_test(test_meminfo_buffers),
	    cmocka_unit_test(test_meminfo_every_prefix),
	    cmocka_unit_test(test_psi_files),
	    cmocka_unit_test(test_psi_buffers),
	    cmocka_unit_test(test_status_files),
	    cmocka_unit_test(test_status_buffers),
	    cmocka_unit_test(test_status_many_groups),
	    cmocka_unit_test(test_read_truncation),
	    cmocka_unit_test(test_stat_files),
	    cmocka_unit_test(test_stat_buffers),
	    cmocka_unit_test(test_stat_every_prefix),
	    cmocka_unit_test(test_loadavg),
	    cmocka_unit_test(test_random_garbage),
	    cmocka_unit_test(test_real_proc),
	};
	const char *env = getenv("SL_FIXTURES");

	snprintf(fixtures, sizeof(fixtures), "%s",
	         env != NULL ? env : "tests/fixtures");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
