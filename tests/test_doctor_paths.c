/*
 * doctor's rules about what root runs (client/doctor-paths.c), on real
 * paths of this machine as tests/test_launchd.sh checks launchd/common.sh's
 * shell version: root's files pass; one under /tmp, through a link into
 * /tmp, or another uid's does not; and the lines otool -L prints, read
 * into the libraries to check.
 */
#include <sys/stat.h>

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

#include "doctor.h"

static void
test_otool_lines(void **state)
{
	char lib[1024];

	(void)state;
	assert_int_equal(
	    doctor_otool_lib("\t/usr/lib/libSystem.B.dylib (compatibility "
	                     "version 1.0.0, current version 1345.0.0)\n",
	                     "/usr/local/bin", lib, sizeof lib),
	    1);
	assert_string_equal(lib, "/usr/lib/libSystem.B.dylib");
	assert_int_equal(
	    doctor_otool_lib("\t/System/Library/Frameworks/Metal.framework/"
	                     "Versions/A/Metal (compatibility version 1.0.0, "
	                     "current version 368.0.0)\n",
	                     "/usr/local/bin", lib, sizeof lib),
	    1);
	/* A keg's library, and one with a space in its path. */
	assert_int_equal(
	    doctor_otool_lib("\t/opt/homebrew/opt/libuv/lib/libuv.1.dylib "
	                     "(compatibility version 2.0.0, current version "
	                     "2.0.0)\n",
	                     "/usr/local/bin", lib, sizeof lib),
	    0);
	assert_string_equal(lib, "/opt/homebrew/opt/libuv/lib/libuv.1.dylib");
	assert_int_equal(doctor_otool_lib("\t/Volumes/My Tools/lib/libx.dylib "
	                                  "(current version 1.0.0)\n",
	                                  "/x", lib, sizeof lib),
	                 0);
	assert_string_equal(lib, "/Volumes/My Tools/lib/libx.dylib");
	/* Beside the program. */
	assert_int_equal(
	    doctor_otool_lib("\t@loader_path/../lib/libstageload.0.dylib "
	                     "(compatibility version 0.0.0, current version "
	                     "0.1.0)\n",
	                     "/usr/local/bin", lib, sizeof lib),
	    0);
	assert_string_equal(lib, "/usr/local/bin/../lib/libstageload.0.dylib");
	assert_int_equal(
	    doctor_otool_lib("\t@executable_path/libz.dylib (compatibility "
	                     "version 1.0.0, current version 1.0.0)\n",
	                     "/opt/x/bin", lib, sizeof lib),
	    0);
	assert_string_equal(lib, "/opt/x/bin/libz.dylib");
	/* @rpath is not on the line: it cannot be told here. */
	assert_int_equal(doctor_otool_lib("\t@rpath/libuv.1.dylib "
	                                  "(compatibility version 2.0.0, "
	                                  "current version 2.0.0)\n",
	                                  "/usr/local/bin", lib, sizeof lib),
	                 -1);
	assert_string_equal(lib, "@rpath/libuv.1.dylib");
	/* An empty line is nothing to check. */
	assert_int_equal(doctor_otool_lib("\n", "/x", lib, sizeof lib), 1);
}

/* path is unsafe, and why names want. */
static void
expect_unsafe(const char *path, const char *want)
{
	char why[1024] = "";

	if (doctor_path_unsafe(path, why, sizeof why) != 1)
		fail_msg("%s passed", path);
	if (strstr(why, want) == NULL)
		fail_msg("%s: '%s', expected '%s'", path, why, want);
}

static void
expect_safe(const char *path)
{
	char why[1024] = "";

	if (doctor_path_unsafe(path, why, sizeof why) != 0)
		fail_msg("%s: %s", path, why);
}

static void
test_path_rule(void **state)
{
	char tmp[] = "/tmp/sl-doctor-paths.XXXXXX",
	     safe[] = "/run/sl-doctor.XXXXXX";
	char path[256], target[256];
	int fd;

	(void)state;
	/* Root's, on any system this runs on. */
	expect_safe("/usr/bin/env");
	expect_unsafe("relative/x", "not an absolute path");
	expect_unsafe("/nonexistent-sl-dir/x", "/nonexistent-sl-dir");

	assert_non_null(mkdtemp(tmp));
	snprintf(path, sizeof path, "%s/lib.dylib", tmp);
	assert_true((fd = open(path, O_CREAT | O_WRONLY, 0644)) >= 0);
	close(fd);
	/* /tmp is writable by others (sticky or not, as in the script). */
	expect_unsafe(path, "writable by group or others");

	if (geteuid() != 0 || mkdtemp(safe) == NULL) {
		printf("note: the root-owned chain needs root and a writable "
		       "/run; not checked\n");
		unlink(path);
		rmdir(tmp);
		return;
	}
	/* A root-owned 0755 chain: safe; a link from it into /tmp, a
	 * file of another uid and a directory made group-writable: not. */
	assert_int_equal(chmod(safe, 0755), 0);
	snprintf(target, sizeof target, "%s/lib.dylib", safe);
	assert_true((fd = open(target, O_CREAT | O_WRONLY, 0644)) >= 0);
	close(fd);
	expect_safe(target);
	snprintf(target, sizeof target, "%s/link.dylib", safe);
	assert_int_equal(symlink(path, target), 0);
	expect_unsafe(target, "writable by group or others");
	unlink(target);
	snprintf(target, sizeof target, "%s/theirs.dylib", safe);
	assert_true((fd = open(target, O_CREAT | O_WRONLY, 0644)) >= 0);
	close(fd);
	assert_int_equal(chown(target, 1, 1), 0);
	expect_unsafe(target, "owned by uid 1");
	unlink(target);
	snprintf(target, sizeof target, "%s/lib.dylib", safe);
	assert_int_equal(chmod(safe, 0775), 0);
	expect_unsafe(target, "writable by group or others");
	unlink(target);
	rmdir(safe);
	unlink(path);
	rmdir(tmp);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_otool_lines),
	    cmocka_unit_test(test_path_rule),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
