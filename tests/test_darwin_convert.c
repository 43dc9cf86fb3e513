/*
 * The macOS conversion rules, run on any OS with the values a 48 GiB Apple
 * Silicon machine reports (16 KiB pages, swap files added as swap grows).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "platform-darwin-convert.h"

#define KiB 1024ULL
#define MiB (1024 * KiB)
#define GiB (1024 * MiB)
#define PAGE_16K (16 * KiB)

/* What a 48 GiB M-series Mac reports mid-afternoon. */
static struct darwin_vm_raw
mac48(void)
{
	struct darwin_vm_raw raw = {
	    .memsize = 48 * GiB,
	    /* max_mem: what the firmware and kernel leave of 48 GiB */
	    .memsize_usable = 48 * GiB - 918 * MiB,
	    .memorystatus_level = 42,
	    .vm_pressure_level = 1,
	    .swap_total = 2 * GiB,
	    .swap_used = 512 * MiB,
	    .page_size = PAGE_16K,
	    .free_count = 20311,
	    .wire_count = 211456,
	    .compressor_page_count = 301234,
	};
	return raw;
}

static void
test_mac48_sample(void **state)
{
	struct darwin_vm_raw raw = mac48();
	struct sys_sample s;
	char cause[256] = "";
	uint64_t expect_avail;

	assert_int_equal(darwin_sys_convert(&raw, &s, cause, sizeof cause), 0);
	/* Total is hw.memsize_usable, the base of memorystatus_level. */
	assert_int_equal(s.total_bytes, 51539607552ULL - 962592768ULL);
	assert_true(s.free_pct == 42.0);
	/* 42 % of it, rounded down: 21242346209.28 bytes; so available
	 * over total is the free % again. */
	expect_avail =
	    (uint64_t)((unsigned __int128)raw.memsize_usable * 42 / 100);
	assert_int_equal(expect_avail, 21242346209ULL);
	assert_int_equal(s.available_bytes, expect_avail);
	assert_int_equal(s.available_bytes * 100 / s.total_bytes, 41);
	assert_int_equal((s.available_bytes + 1) * 100 / s.total_bytes, 42);
	assert_int_equal(s.swap_total_bytes, 2 * GiB);
	assert_int_equal(s.swap_used_bytes, 512 * MiB);
	assert_int_equal(s.pressure, PRESSURE_NORMAL);
	assert_true(s.psi_some_avg10 < 0);
	/* Page counts scale by the page size read at run time. */
	assert_int_equal(s.wired_bytes, 211456ULL * 16384);
	assert_int_equal(s.compressed_bytes, 301234ULL * 16384);
	assert_int_equal(s.ts_ms, 0); /* left to the caller */
}

static void
test_page_size_is_not_assumed(void **state)
{
	/* The same RAM on an Intel Mac: 4 KiB pages, four times the count. */
	struct darwin_vm_raw raw = mac48();
	struct sys_sample s16, s4;
	char cause[256];

	assert_int_equal(darwin_sys_convert(&raw, &s16, cause, sizeof cause),
	                 0);
	raw.page_size = 4 * KiB;
	raw.free_count *= 4;
	raw.wire_count *= 4;
	raw.compressor_page_count *= 4;
	assert_int_equal(darwin_sys_convert(&raw, &s4, cause, sizeof cause), 0);
	assert_int_equal(s4.wired_bytes, s16.wired_bytes);
	assert_int_equal(s4.compressed_bytes, s16.compressed_bytes);
}

static void
test_page_counts_that_overflow_ram(void **state)
{
	/* Counts in one unit read with a page size in another would claim
	 * more memory than exists; refused rather than reported. */
	struct darwin_vm_raw raw = mac48();
	struct sys_sample s;
	char cause[256] = "";

	raw.compressor_page_count = 48 * GiB / (4 * KiB);
	assert_int_equal(darwin_sys_convert(&raw, &s, cause, sizeof cause),
	                 -ERANGE);
	assert_non_null(strstr(cause, "hw.memsize"));

	raw = mac48();
	raw.wire_count = UINT64_MAX / 2;
	assert_int_equal(darwin_sys_convert(&raw, &s, cause, sizeof cause),
	                 -ERANGE);
}

static void
test_bad_page_size(void **state)
{
	struct darwin_vm_raw raw = mac48();
	struct sys_sample s;
	char cause[256] = "";

	raw.page_size = 0;
	assert_int_equal(darwin_sys_convert(&raw, &s, cause, sizeof cause),
	                 -EINVAL);
	assert_non_null(strstr(cause, "page size"));
	raw.page_size = 12288;
	assert_int_equal(darwin_sys_convert(&raw, &s, cause, sizeof cause),
	                 -EINVAL);
}

static void
test_level_range(void **state)
{
	struct darwin_vm_raw raw = mac48();
	struct sys_sample s;
	char cause[256] = "";

	raw.memorystatus_level = 100;
	assert_int_equal(darwin_sys_convert(&raw, &s, cause, sizeof cause), 0);
	assert_int_equal(s.available_bytes, raw.memsize_usable);
	raw.memorystatus_level = 0;
	assert_int_equal(darwin_sys_convert(&raw, &s, cause, sizeof cause), 0);
	assert_int_equal(s.available_bytes, 0);
	assert_true(s.free_pct == 0.0);

	raw.memorystatus_level = 101;
	assert_int_equal(darwin_sys_convert(&raw, &s, cause, sizeof cause),
	                 -ERANGE);
	assert_non_null(strstr(cause, "kern.memorystatus_level 101"));
	raw.memorystatus_level = -1;
	assert_int_equal(darwin_sys_convert(&raw, &s, cause, sizeof cause),
	                 -ERANGE);

	raw = mac48();
	raw.memsize = 0;
	assert_int_equal(darwin_sys_convert(&raw, &s, cause, sizeof cause),
	                 -EINVAL);
	assert_non_null(strstr(cause, "hw.memsize"));
}

/* Without hw.memsize_usable (0) the total is hw.memsize; one above
 * hw.memsize is a unit mix-up, never a sample. */
static void
test_memsize_usable(void **state)
{
	struct darwin_vm_raw raw = mac48();
	struct sys_sample s;
	char cause[256] = "";

	raw.memsize_usable = 0;
	assert_int_equal(darwin_sys_convert(&raw, &s, cause, sizeof cause), 0);
	assert_int_equal(s.total_bytes, 48 * GiB);
	assert_int_equal(s.available_bytes,
	                 (uint64_t)((unsigned __int128)(48 * GiB) * 42 / 100));

	raw.memsize_usable = raw.memsize;
	assert_int_equal(darwin_sys_convert(&raw, &s, cause, sizeof cause), 0);
	assert_int_equal(s.total_bytes, 48 * GiB);

	raw.memsize_usable = raw.memsize + PAGE_16K;
	assert_int_equal(darwin_sys_convert(&raw, &s, cause, sizeof cause),
	                 -ERANGE);
	assert_non_null(strstr(cause, "hw.memsize_usable"));
}

static void
test_available_does_not_overflow(void **state)
{
	/* memsize * level would overflow 64 bits here; the split does not. */
	struct darwin_vm_raw raw = mac48();
	struct sys_sample s;
	char cause[256];

	raw.memsize = UINT64_MAX - 7;
	raw.memsize_usable = 0;
	raw.memorystatus_level = 99;
	assert_int_equal(darwin_sys_convert(&raw, &s, cause, sizeof cause), 0);
	assert_int_equal(s.available_bytes,
	                 (uint64_t)((unsigned __int128)raw.memsize * 99 / 100));
}

static void
test_swap_grows_as_files_are_added(void **state)
{
	/*
	 * The dynamic pager adds 1 GiB swap files as swap fills: xsu_total
	 * steps up while xsu_used climbs 8 GiB, as in a VAE decode that
	 * spills. Budgets are measured on used, so it must come through
	 * exactly at every step, whatever total does.
	 */
	static const struct {
		uint64_t total, used;
	} steps[] = {
	    {0, 0},
	    {1 * GiB, 700 * MiB},
	    {2 * GiB, 1 * GiB + 900 * MiB},
	    {3 * GiB, 3 * GiB},
	    {5 * GiB, 4 * GiB + 100 * MiB},
	    {7 * GiB, 6 * GiB + 512 * MiB},
	    {9 * GiB, 8 * GiB},
	};
	struct darwin_vm_raw raw = mac48();
	struct sys_sample s;
	char cause[256];
	uint64_t first_used = 0, prev_total = 0;
	size_t i;

	for (i = 0; i < sizeof steps / sizeof steps[0]; i++) {
		raw.swap_total = steps[i].total;
		raw.swap_used = steps[i].used;
		raw.memorystatus_level = 40 - (int)i * 5;
		raw.vm_pressure_level = i < 3 ? 1 : i < 6 ? 2 : 4;
		assert_int_equal(
		    darwin_sys_convert(&raw, &s, cause, sizeof cause), 0);
		assert_int_equal(s.swap_used_bytes, steps[i].used);
		assert_int_equal(s.swap_total_bytes, steps[i].total);
		assert_true(s.swap_total_bytes >= prev_total);
		assert_true(s.swap_used_bytes <= s.swap_total_bytes);
		prev_total = s.swap_total_bytes;
		if (i == 0)
			first_used = s.swap_used_bytes;
	}
	assert_int_equal(s.swap_used_bytes - first_used, 8 * GiB);
	assert_int_equal(s.pressure, PRESSURE_CRITICAL);
	assert_true(s.free_pct == 10.0);
}

/*
 * vm.swapusage as xnu computes it (sysctl_swapusage in kern_sysctl.c,
 * macx_swapinfo in dp_backing_file.c, vm_swap_get_free_space in
 * vm_compressor_backing_store.c): total read once (t1), then free as the
 * total read again (t2) minus the used segments (u), with no lock held
 * across them, and used = t1 - free in unsigned 64-bit arithmetic.
 */
static struct darwin_swap_raw
xnu_swapusage(uint64_t t1, uint64_t t2, uint64_t u)
{
	uint64_t avail = t2 - u;
	struct darwin_swap_raw r = {.total = t1, .used = t1 - avail};

	return r;
}

/* On macOS a swap file is 256 MiB to 1 GiB
 * (vm_compressor_backing_store_internal.h). */
#define SWAPFILE (1 * GiB)

static void
test_swap_torn_by_a_file_added(void **state)
{
	/* 512 MiB in use in 2 GiB of files; a third file is added between
	 * the two reads of the total. */
	struct darwin_swap_raw r = xnu_swapusage(2 * GiB, 3 * GiB, 512 * MiB);
	struct darwin_vm_raw raw = mac48();
	struct sys_sample s;
	char cause[256] = "";

	/* The value the kernel hands over: 2^64 - 512 MiB. */
	assert_int_equal(r.used, 0ULL - 512 * MiB);
	assert_int_equal(r.total, 2 * GiB);
	raw.swap_total = r.total;
	raw.swap_used = r.used;
	assert_int_equal(darwin_sys_convert(&raw, &s, cause, sizeof cause),
	                 -EAGAIN);
	assert_non_null(strstr(cause, "torn"));

	/* The example: 2^64 - 1 GiB. */
	raw.swap_total = 4 * GiB;
	raw.swap_used = 0ULL - 1 * GiB;
	assert_int_equal(darwin_sys_convert(&raw, &s, cause, sizeof cause),
	                 -EAGAIN);

	/* With more in use than the file's size the subtraction does not
	 * wrap: used is understated by the file (3 GiB - 1 GiB), and used
	 * <= total. Only the next reading's larger total gives it away. */
	{
		struct darwin_swap_raw seq[] = {
		    xnu_swapusage(4 * GiB, 4 * GiB + SWAPFILE, 3 * GiB),
		    xnu_swapusage(5 * GiB, 5 * GiB, 3 * GiB),
		    xnu_swapusage(5 * GiB, 5 * GiB, 3 * GiB),
		};
		assert_int_equal(seq[0].used, 2 * GiB);
		assert_true(seq[0].used <= seq[0].total);
		assert_int_equal(darwin_swap_pick(seq, 3, cause, sizeof cause),
		                 1);
		assert_int_equal(seq[1].used, 3 * GiB);
	}
	/* The wrapped one is passed over the same way. */
	{
		struct darwin_swap_raw seq[] = {
		    xnu_swapusage(2 * GiB, 3 * GiB, 512 * MiB),
		    xnu_swapusage(3 * GiB, 3 * GiB, 512 * MiB),
		    xnu_swapusage(3 * GiB, 3 * GiB, 520 * MiB),
		};
		assert_int_equal(darwin_swap_pick(seq, 3, cause, sizeof cause),
		                 1);
		assert_int_equal(seq[1].used, 512 * MiB);
	}
}

static void
test_swap_torn_by_a_file_removed(void **state)
{
	/* 3 GiB in use in 5 GiB of files; an emptied file (xnu moves a
	 * file's segments out before removing it, so used does not change)
	 * is removed between the two reads of the total. */
	struct darwin_swap_raw seq[] = {
	    xnu_swapusage(5 * GiB, 5 * GiB - SWAPFILE, 3 * GiB),
	    xnu_swapusage(4 * GiB, 4 * GiB, 3 * GiB),
	    xnu_swapusage(4 * GiB, 4 * GiB, 3 * GiB),
	};
	struct darwin_vm_raw raw = mac48();
	struct sys_sample s;
	char cause[256] = "";

	/* Overstated by the file, and still no more than total: alone it
	 * looks like 1 GiB of growth, enough to breach a 512 MiB budget. */
	assert_int_equal(seq[0].used, 4 * GiB);
	assert_int_equal(seq[0].total, 5 * GiB);
	raw.swap_total = seq[0].total;
	raw.swap_used = seq[0].used;
	assert_int_equal(darwin_sys_convert(&raw, &s, cause, sizeof cause), 0);
	/* Against the next reading its total had moved: not taken. */
	assert_int_equal(darwin_swap_pick(seq, 3, cause, sizeof cause), 1);
	assert_int_equal(seq[1].used, 3 * GiB);
	/* The smallest file, 256 MiB, the same way. */
	seq[0] = xnu_swapusage(5 * GiB, 5 * GiB - 256 * MiB, 3 * GiB);
	assert_int_equal(seq[0].used, 3 * GiB + 256 * MiB);
	assert_int_equal(darwin_swap_pick(seq, 3, cause, sizeof cause), 1);
}

static void
test_swap_pick_steady_and_restless(void **state)
{
	struct darwin_swap_raw seq[DARWIN_SWAP_READS];
	char cause[256] = "";
	size_t i;

	/* Nothing moving: the first reading. Used segments may change
	 * between readings; only the total must hold still. */
	seq[0] = xnu_swapusage(2 * GiB, 2 * GiB, 700 * MiB);
	seq[1] = xnu_swapusage(2 * GiB, 2 * GiB, 710 * MiB);
	assert_int_equal(darwin_swap_pick(seq, 2, cause, sizeof cause), 0);
	/* One reading alone proves nothing. */
	assert_int_equal(darwin_swap_pick(seq, 1, cause, sizeof cause),
	                 -EAGAIN);
	assert_int_equal(darwin_swap_pick(seq, 0, cause, sizeof cause),
	                 -EAGAIN);
	/* A file added under each reading: the caller gives up. */
	for (i = 0; i < DARWIN_SWAP_READS; i++)
		seq[i] = xnu_swapusage((2 + i) * GiB, (3 + i) * GiB, 100 * MiB);
	assert_int_equal(
	    darwin_swap_pick(seq, DARWIN_SWAP_READS, cause, sizeof cause),
	    -EAGAIN);
	assert_non_null(strstr(cause, "vm.swapusage"));
	/* Used above total with the totals equal (no file moved, so not a
	 * kernel reading, but never to be taken): skipped. */
	seq[0].total = 2 * GiB;
	seq[0].used = 3 * GiB;
	seq[1] = xnu_swapusage(2 * GiB, 2 * GiB, 1 * GiB);
	seq[2] = xnu_swapusage(2 * GiB, 2 * GiB, 1 * GiB);
	assert_int_equal(darwin_swap_pick(seq, 3, cause, sizeof cause), 1);
	/* No swap at all: 0 of 0 is a reading like any other. */
	seq[0] = xnu_swapusage(0, 0, 0);
	seq[1] = xnu_swapusage(0, 0, 0);
	assert_int_equal(darwin_swap_pick(seq, 2, cause, sizeof cause), 0);
}

static void
test_tcc_paths(void **state)
{
	static const char *const guarded[] = {
	    "/Users/alice/Documents",
	    "/Users/alice/Documents/proj",
	    "/Users/alice/Desktop/x.py",
	    "/Users/alice/Downloads",
	    "/Users/alice/Library/Mobile Documents/com~apple~CloudDocs/m",
	    "/Users/alice/Library/CloudStorage/Dropbox/models/m.bin",
	    "/Users/alice/Library/CloudStorage",
	    "/Volumes/USB/data",
	    "/Volumes/USB",
	    "/Volumes/Macintosh HD2/x", /* another volume, not the alias */
	    /* the boot volume's alias, then a home folder under it */
	    "/Volumes/Macintosh HD/Users/alice/Documents/m",
	    /* a home outside /Users (home below) */
	    "/opt/homes/bob/Documents/m.bin",
	    "/opt/homes/bob/Library/CloudStorage/OneDrive/x",
	};
	static const char *const open_paths[] = {
	    "/Users/alice",
	    "/Users/alice/src/proj",
	    "/Users/alice/DocumentsOld",
	    "/Users/alice/Library/Caches",
	    "/Users/alice/Library/CloudStorageX",
	    "/Users/Documents",
	    "/Volumes/",
	    "/Volumes//x",
	    "/Volumes/Macintosh HD",
	    "/Volumes/Macintosh HD/Users/alice/src",
	    "/Volumes/Macintosh HD/opt",
	    "/opt/homes/bob",
	    "/opt/homes/bob/src/Documents",
	    "/opt/homes/bobby/Documents",
	    "/tmp/Documents",
	    "relative/Documents",
	    "",
	};
	const char *home = "/opt/homes/bob/", *alias = "Macintosh HD";
	char hint[160];
	size_t i;

	for (i = 0; i < sizeof guarded / sizeof guarded[0]; i++)
		if (!darwin_tcc_protected(guarded[i], home, alias))
			fail_msg("%s should be protected", guarded[i]);
	for (i = 0; i < sizeof open_paths / sizeof open_paths[0]; i++)
		if (darwin_tcc_protected(open_paths[i], home, alias))
			fail_msg("%s should not be protected", open_paths[i]);
	assert_false(darwin_tcc_protected(NULL, home, alias));
	/* Without the alias known, it is a volume like any other; without
	 * home, only /Users' homes count. */
	assert_true(
	    darwin_tcc_protected("/Volumes/Macintosh HD/opt", home, NULL));
	assert_false(
	    darwin_tcc_protected("/opt/homes/bob/Documents", NULL, alias));
	assert_true(
	    darwin_tcc_protected("/Users/carol/Downloads/a", "/", NULL));
	assert_false(darwin_tcc_protected("/Documents/a", "/", NULL));

	darwin_spawn_hint(EPERM, "/Users/alice/Documents/proj", NULL, NULL,
	                  hint, sizeof hint);
	assert_non_null(strstr(hint, "Full Disk Access"));
	assert_non_null(strstr(hint, "stageloadctl run"));
	darwin_spawn_hint(EPERM, "/opt/homes/bob/Desktop", home, NULL, hint,
	                  sizeof hint);
	assert_non_null(strstr(hint, "Full Disk Access"));
	/* Other errors, and EPERM elsewhere, add nothing. */
	darwin_spawn_hint(EACCES, "/Users/alice/Documents/proj", NULL, NULL,
	                  hint, sizeof hint);
	assert_string_equal(hint, "");
	darwin_spawn_hint(EPERM, "/Users/alice/src", NULL, NULL, hint,
	                  sizeof hint);
	assert_string_equal(hint, "");
	darwin_spawn_hint(EPERM, NULL, NULL, NULL, hint, sizeof hint);
	assert_string_equal(hint, "");
}

/* The end of a log, as the job wrote it, and the hint show prints. */
static void
log_hint(const char *text, char *hint, size_t len)
{
	darwin_log_hint(text, strlen(text), "/Users/ana", "Macintosh HD", hint,
	                len);
}

static void
test_tcc_log_hint(void **state)
{
	char hint[512];
	/* Python opening a model in ~/Documents (the usual failure). */
	const char *py =
	    "loading pipeline\n"
	    "Traceback (most recent call last):\n"
	    "  File \"/Users/ana/src/gen.py\", line 12, in <module>\n"
	    "    open(p)\n"
	    "PermissionError: [Errno 1] Operation not permitted: "
	    "'/Users/ana/Documents/models/flux.safetensors'\n";

	log_hint(py, hint, sizeof hint);
	assert_non_null(
	    strstr(hint, "/Users/ana/Documents/models/flux.safetensors:"));
	assert_non_null(strstr(hint, "Full Disk Access"));
	assert_non_null(strstr(hint, "stageloadctl run"));

	/* cat and ls: unquoted, a name with spaces, a volume. */
	log_hint("cat: /Users/ana/Library/Mobile Documents/com~apple~"
	         "CloudDocs/a.txt: Operation not permitted\n",
	         hint, sizeof hint);
	assert_non_null(strstr(hint, "/Users/ana/Library/Mobile Documents/"
	                             "com~apple~CloudDocs/a.txt:"));
	log_hint("ls: /Volumes/T7/data: Operation not permitted", hint,
	         sizeof hint);
	assert_non_null(strstr(hint, "/Volumes/T7/data:"));
	/* Double quotes; CloudStorage; the line without a newline at the
	 * end of the text. */
	log_hint("x\nOSError: Operation not permitted: \"/Users/ana/Library/"
	         "CloudStorage/Dropbox/m.bin\"",
	         hint, sizeof hint);
	assert_non_null(
	    strstr(hint, "/Users/ana/Library/CloudStorage/Dropbox/m.bin:"));

	/* Nothing to say: EPERM outside the protected folders, a protected
	 * path on a line without EPERM, the boot volume's alias, another
	 * error, an empty log. */
	log_hint("rm: /usr/bin/true: Operation not permitted\n"
	         "cat: /Users/ana/Documents/a: No such file or directory\n"
	         "open /Volumes/Macintosh HD/tmp/x: Operation not permitted\n"
	         "kill: (123) - Operation not permitted\n",
	         hint, sizeof hint);
	assert_string_equal(hint, "");
	log_hint("", hint, sizeof hint);
	assert_string_equal(hint, "");
	/* A path glued to other text is not a path. */
	log_hint("x=/Users/ana/Documents: Operation not permitted", hint,
	         sizeof hint);
	assert_string_equal(hint, "");
	/* The text is not NUL-terminated: only len bytes are read. */
	darwin_log_hint("cat: /Users/ana/Documents/a: Operation not permitted",
	                10, "/Users/ana", NULL, hint, sizeof hint);
	assert_string_equal(hint, "");
	/* A small buffer is cut, never overrun. */
	darwin_log_hint(py, strlen(py), NULL, NULL, hint, 16);
	assert_int_equal(strlen(hint), 15);
}

static void
test_no_swap(void **state)
{
	struct darwin_vm_raw raw = mac48();
	struct sys_sample s;
	char cause[256];

	raw.swap_total = 0;
	raw.swap_used = 0;
	assert_int_equal(darwin_sys_convert(&raw, &s, cause, sizeof cause), 0);
	assert_int_equal(s.swap_total_bytes, 0);
	assert_int_equal(s.swap_used_bytes, 0);
}

static void
test_pressure_levels(void **state)
{
	struct darwin_vm_raw raw = mac48();
	struct sys_sample s;
	char cause[256];
	static const int unknown[] = {0, 3, 8, 16, -1, 1000};
	size_t i;

	assert_int_equal(darwin_pressure_level(1), PRESSURE_NORMAL);
	assert_int_equal(darwin_pressure_level(2), PRESSURE_WARN);
	assert_int_equal(darwin_pressure_level(4), PRESSURE_CRITICAL);
	for (i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
		assert_int_equal(darwin_pressure_level(unknown[i]),
		                 PRESSURE_UNKNOWN);
		/* An unknown level is reported as such, not an error. */
		raw.vm_pressure_level = unknown[i];
		assert_int_equal(
		    darwin_sys_convert(&raw, &s, cause, sizeof cause), 0);
		assert_int_equal(s.pressure, PRESSURE_UNKNOWN);
	}
}

#define BSDINFO_SIZE 136 /* sizeof(struct proc_bsdinfo) on macOS */

static struct darwin_proc_raw
python_proc(uint32_t pid, uint32_t ppid, uint64_t footprint)
{
	struct darwin_proc_raw raw = {
	    .info_ret = BSDINFO_SIZE,
	    .info_size = BSDINFO_SIZE,
	    .pbi_pid = pid,
	    .pbi_ppid = ppid,
	    .pbi_pgid = 7100,
	    .pbi_ruid = 501,
	    .pbi_start_tvsec = 1764480000,
	    .pbi_start_tvusec = 250000 + pid,
	    .rusage_ret = 0,
	    .ri_phys_footprint = footprint,
	};
	return raw;
}

static void
test_proc_convert(void **state)
{
	struct darwin_proc_raw raw = python_proc(7100, 1, 32 * GiB + MiB);
	struct proc_info pi;

	assert_int_equal(darwin_proc_convert(&raw, &pi), 0);
	assert_int_equal(pi.pid, 7100);
	assert_int_equal(pi.ppid, 1);
	assert_int_equal(pi.pgid, 7100);
	assert_int_equal(pi.uid, 501);
	assert_int_equal(pi.footprint_bytes, 32 * GiB + MiB);
	assert_int_equal(pi.swap_bytes, 0);
	assert_int_equal(pi.start_time, 1764480000ULL * 1000000 + 257100);
}

static void
test_start_time_tells_recycled_pids_apart(void **state)
{
	/* A pid reused within the same second still gets a new start time,
	 * and later processes compare greater. */
	assert_true(darwin_start_time(1764480000, 1) !=
	            darwin_start_time(1764480000, 2));
	assert_true(darwin_start_time(1764480000, 999999) <
	            darwin_start_time(1764480001, 0));
}

static void
test_proc_errors(void **state)
{
	struct darwin_proc_raw raw;
	struct proc_info pi;

	/* Gone before proc_pidinfo: 0 with ESRCH, or 0 with no errno. */
	raw = python_proc(7101, 7100, 0);
	raw.info_ret = 0;
	raw.info_errno = ESRCH;
	assert_int_equal(darwin_proc_convert(&raw, &pi), -ESRCH);
	raw.info_errno = 0;
	assert_int_equal(darwin_proc_convert(&raw, &pi), -ESRCH);
	raw.info_ret = -1;
	assert_int_equal(darwin_proc_convert(&raw, &pi), -ESRCH);

	/* Gone between proc_pidinfo and proc_pid_rusage. */
	raw = python_proc(7101, 7100, 0);
	raw.rusage_ret = -1;
	raw.rusage_errno = ESRCH;
	assert_int_equal(darwin_proc_convert(&raw, &pi), -ESRCH);

	/* Another user's process seen by a non-root daemon. */
	raw.rusage_errno = EPERM;
	assert_int_equal(darwin_proc_convert(&raw, &pi), -EPERM);
	raw = python_proc(7101, 7100, 0);
	raw.info_ret = 0;
	raw.info_errno = EPERM;
	assert_int_equal(darwin_proc_convert(&raw, &pi), -EPERM);

	/* A short answer is not a process. */
	raw = python_proc(7101, 7100, 0);
	raw.info_ret = BSDINFO_SIZE - 8;
	assert_int_equal(darwin_proc_convert(&raw, &pi), -EIO);
}

static void
test_process_exits_between_listing_and_sampling(void **state)
{
	/*
	 * A job's tree: children of 7100 are 7101 and 7102, its group adds
	 * 7103 and 7100 itself. 7102 exits after the listing; sampling it
	 * gives -ESRCH, which platform.h callers skip, so the tree's
	 * footprint is the three that remain.
	 */
	static const pid_t children[] = {7101, 7102, 0};
	static const pid_t group[] = {7100, 7101, 7103};
	struct darwin_proc_raw procs[] = {
	    python_proc(7100, 1, 2 * GiB),
	    python_proc(7101, 7100, 9 * GiB),
	    python_proc(7102, 7100, 4 * GiB),
	    python_proc(7103, 7100, 1 * GiB),
	};
	pid_t out[8];
	size_t found = 0, i, j;
	uint64_t footprint = 0;
	struct proc_info pi;
	int rc, skipped = 0;

	darwin_list_merge(children, 3, out, 8, &found);
	darwin_list_merge(group, 3, out, 8, &found);
	assert_int_equal(found, 4);

	procs[2].info_ret = 0;
	procs[2].info_errno = ESRCH;
	for (i = 0; i < found; i++) {
		for (j = 0; j < 4; j++)
			if ((pid_t)procs[j].pbi_pid == out[i])
				break;
		assert_true(j < 4);
		rc = darwin_proc_convert(&procs[j], &pi);
		if (rc == -ESRCH) {
			skipped++;
			continue;
		}
		assert_int_equal(rc, 0);
		footprint += pi.footprint_bytes;
	}
	assert_int_equal(skipped, 1);
	assert_int_equal(footprint, 12 * GiB);
}

static void
test_list_result(void **state)
{
	assert_int_equal(darwin_list_result(3, 0), 3);
	assert_int_equal(darwin_list_result(0, 0), 0);
	assert_int_equal(darwin_list_result(0, ESRCH), 0);
	/* libproc's failure: 0 with errno set */
	assert_int_equal(darwin_list_result(0, ENOMEM), -ENOMEM);
	assert_int_equal(darwin_list_result(0, EPERM), -EPERM);
	assert_int_equal(darwin_list_result(-1, ESRCH), 0);
	assert_int_equal(darwin_list_result(-1, EPERM), -EPERM);
	assert_int_equal(darwin_list_result(-1, 0), -EIO);
}

static void
test_list_merge_bounds(void **state)
{
	static const pid_t a[] = {10, 11, 12, 11, 0, 13};
	static const pid_t b[] = {13, 14, 10};
	pid_t out[3] = {-1, -1, -1};
	size_t found = 0;

	darwin_list_merge(a, 6, out, 2, &found);
	/* 10 and 11 stored; 12 and 13 counted so the caller can grow. */
	assert_int_equal(out[0], 10);
	assert_int_equal(out[1], 11);
	assert_int_equal(out[2], -1);
	assert_int_equal(found, 4);

	found = 0;
	darwin_list_merge(a, 6, out, 3, &found);
	darwin_list_merge(b, 3, out, 3, &found);
	assert_int_equal(out[0], 10);
	assert_int_equal(out[1], 11);
	assert_int_equal(out[2], 12);
	assert_true(found >= 5);
}

static void
test_groups_convert(void **state)
{
	static const int in[] = {20, 12, 61, 79, 80, 81, 98, 701, 33, 100};
	gid_t *out;
	int i;

	assert_int_equal(darwin_groups_convert(in, 10, &out), 0);
	for (i = 0; i < 10; i++)
		assert_int_equal(out[i], (gid_t)in[i]);
	free(out);
	assert_int_equal(darwin_groups_convert(in, 0, &out), 0);
	free(out);
	assert_int_equal(darwin_groups_convert(in, -1, &out), -EINVAL);
}

/* LOCAL_PEERCRED's xucred: the egid first, at most NGROUPS (16); another
 * version or a count the kernel never gives is refused. */
static void
test_peer_groups(void **state)
{
	static const gid_t cr[16] = {20, 12,  61,  79,  80,  81,  98,  701,
	                             33, 100, 204, 250, 395, 398, 399, 400};
	gid_t *out = NULL;
	int n = -1;

	assert_int_equal(darwin_peer_groups(0, 0, 16, cr, 16, &out, &n), 0);
	assert_int_equal(n, 16);
	assert_memory_equal(out, cr, sizeof cr);
	free(out);
	assert_int_equal(darwin_peer_groups(0, 0, 1, cr, 16, &out, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(out[0], 20);
	free(out);
	out = NULL;
	assert_int_equal(darwin_peer_groups(1, 0, 3, cr, 16, &out, &n),
	                 -EPROTO);
	assert_int_equal(darwin_peer_groups(0, 0, 0, cr, 16, &out, &n),
	                 -EINVAL);
	assert_int_equal(darwin_peer_groups(0, 0, -1, cr, 16, &out, &n),
	                 -EINVAL);
	assert_int_equal(darwin_peer_groups(0, 0, 17, cr, 16, &out, &n),
	                 -EINVAL);
	assert_null(out);
}

static void
test_default_socket(void **state)
{
	char buf[256], want[300];
	uid_t me = geteuid();

	assert_int_equal(
	    darwin_default_socket(1, 0, "/run/user/0", NULL, buf, sizeof buf),
	    0);
	assert_string_equal(buf, "/var/run/stageload.sock");

	/* The client library's order: $XDG_RUNTIME_DIR, else under a home
	 * of the user's own, else /tmp/-UID. */
	assert_int_equal(darwin_default_socket(0, 501, "/Users/ana/.run", NULL,
	                                       buf, sizeof buf),
	                 0);
	assert_string_equal(buf, "/Users/ana/.run/stageload.sock");
	assert_int_equal(
	    darwin_default_socket(0, me, NULL, "/tmp", buf, sizeof buf), 0);
	snprintf(want, sizeof want, "%s", "/tmp/.stageload/stageload.sock");
	if (me != 0) /* /tmp is root's: not this user's home */
		snprintf(want, sizeof want, "/tmp/stageload-%lu/stageload.sock",
		         (unsigned long)me);
	assert_string_equal(buf, want);
	assert_int_equal(
	    darwin_default_socket(0, 501, NULL, NULL, buf, sizeof buf), 0);
	assert_string_equal(buf, "/tmp/stageload-501/stageload.sock");
	assert_int_equal(
	    darwin_default_socket(0, 502, "", "/nonexistent", buf, sizeof buf),
	    0);
	assert_string_equal(buf, "/tmp/stageload-502/stageload.sock");
	/* relative: ignored, as the XDG specification says */
	assert_int_equal(
	    darwin_default_socket(0, 503, "run", NULL, buf, sizeof buf), 0);
	assert_string_equal(buf, "/tmp/stageload-503/stageload.sock");

	assert_int_equal(darwin_default_socket(1, 0, NULL, NULL, buf, 8),
	                 -ENAMETOOLONG);
	assert_int_equal(darwin_default_socket(0, 501, NULL, NULL, buf, 20),
	                 -ENAMETOOLONG);
}

static void
test_default_db(void **state)
{
	char buf[256];

	assert_int_equal(darwin_default_db(1, "/var/root", buf, sizeof buf), 0);
	assert_string_equal(buf, "/var/db/stageload/stageload.db");
	assert_int_equal(darwin_default_db(0, "/Users/ana", buf, sizeof buf),
	                 0);
	assert_string_equal(
	    buf,
	    "/Users/ana/Library/Application Support/stageload/stageload.db");
	assert_int_equal(darwin_default_db(0, "/Users/ana/", buf, sizeof buf),
	                 0);
	assert_string_equal(
	    buf,
	    "/Users/ana/Library/Application Support/stageload/stageload.db");
	assert_int_equal(darwin_default_db(0, NULL, buf, sizeof buf), -ENOENT);
	assert_int_equal(darwin_default_db(0, "ana", buf, sizeof buf), -ENOENT);
	assert_int_equal(darwin_default_db(0, "/Users/ana", buf, 20),
	                 -ENAMETOOLONG);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_mac48_sample),
	    cmocka_unit_test(test_page_size_is_not_assumed),
	    cmocka_unit_test(test_page_counts_that_overflow_ram),
	    cmocka_unit_test(test_bad_page_size),
	    cmocka_unit_test(test_level_range),
	    cmocka_unit_test(test_memsize_usable),
	    cmocka_unit_test(test_available_does_not_overflow),
	    cmocka_unit_test(test_swap_grows_as_files_are_added),
	    cmocka_unit_test(test_swap_torn_by_a_file_added),
	    cmocka_unit_test(test_swap_torn_by_a_file_removed),
	    cmocka_unit_test(test_swap_pick_steady_and_restless),
	    cmocka_unit_test(test_no_swap),
	    cmocka_unit_test(test_tcc_paths),
	    cmocka_unit_test(test_tcc_log_hint),
	    cmocka_unit_test(test_pressure_levels),
	    cmocka_unit_test(test_proc_convert),
	    cmocka_unit_test(test_start_time_tells_recycled_pids_apart),
	    cmocka_unit_test(test_proc_errors),
	    cmocka_unit_test(test_process_exits_between_listing_and_sampling),
	    cmocka_unit_test(test_list_result),
	    cmocka_unit_test(test_list_merge_bounds),
	    cmocka_unit_test(test_groups_convert),
	    cmocka_unit_test(test_peer_groups),
	    cmocka_unit_test(test_default_socket),
	    cmocka_unit_test(test_default_db),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
