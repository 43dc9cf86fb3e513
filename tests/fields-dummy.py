"""Adding a job field costs what proto/job-fields.h promises.

In a scratch copy of the tree (uncommitted changes included), a field
`dummy_count` (an integer 0..100, stored, public, a submit and an update
parameter) is added the way a new field is: its row in the table, its
member in struct job, its migration, its words in PROTOCOL.md, Python's
list regenerated, and the literal lists of tests/test_fields.c. Then the
copy is built and shows that the one row reached every consumer:
test_fields and job_fields pass, protocol conformance passes with the new
member, and a real daemon takes `dummy_count` at submit and update,
range-checks it, shows it to a stranger, keeps it across a restart,
carries it to a resubmitted job and refuses it out of range; a program of libstageload's public API sets it
at submit and reads it back, the library untouched; and its row in the
table's JOB_CLI gives stageloadctl `submit --dummy-count` and
`update --dummy-count`, which reach the daemon, stageloadctl untouched.

Printed: the files that had to be touched (at most MAX_FILES), and the
product files naming `after_any` (at most MAX_AFTER_ANY).
"""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from sltest import Client, Daemon, RpcError  # noqa: E402

SRC = os.environ.get("SL_SRC") or os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))
MAX_FILES = 6
MAX_AFTER_ANY = 6
PRODUCT_DIRS = ("daemon", "client", "web", "proto", "python", "scripts")


def run(cmd, cwd, **kw):
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise SystemExit("FAIL: %s (in %s):\n%s%s" % (" ".join(cmd), cwd,
                                                     r.stdout[-4000:],
                                                     r.stderr[-4000:]))
    return r.stdout


def edit(path, old, new, count=1):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if text.count(old) < 1:
        raise SystemExit("FAIL: %s: no %r to change" % (path, old))
    text = text.replace(old, new, count)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def copy_tree(dst):
    files = run(["git", "ls-files", "-z", "--cached", "--others",
                 "--exclude-standard"], SRC).split("\0")
    for rel in files:
        if not rel or not os.path.lexists(os.path.join(SRC, rel)):
            continue
        os.makedirs(os.path.dirname(os.path.join(dst, rel)) or dst,
                    exist_ok=True)
        shutil.copy2(os.path.join(SRC, rel), os.path.join(dst, rel),
                     follow_symlinks=False)
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")
    run(["git", "init", "-q"], dst)
    run(["git", "add", "-A"], dst)
    run(["git", "commit", "-q", "-m", "base"], dst, env=env)


def add_field(t):
    """The edits a new field takes, each a file."""
    p = lambda rel: os.path.join(t, rel)  # noqa: E731
    # 1. its row
    edit(p("proto/job-fields.h"), "X(held, ",
         'X(dummy_count, "dummy_count", S_INT, "dummy_count", J_INT, PUBLIC,'
         ' P_INT, 1, 0, 100, U_COUNT, W_YES) \\\nX(held, ')
    # and its option, in the same file
    edit(p("proto/job-fields.h"), "#define JOB_CLI(X) \\\n",
         '#define JOB_CLI(X) \\\nX(dummy_count, "dummy-count", 0, "N",'
         ' CLI_INT, 0, 100, none, SUBMIT, 1, "a count, 0..100") \\\n')
    # 2. its member
    edit(p("daemon/job.h"), "\tint held; ", "\tint dummy_count;\n\tint held; ")
    # 3. its column
    edit(p("daemon/store.c"), "};\n#define STORE_SCHEMA_VERSION",
         '    "ALTER TABLE jobs ADD COLUMN dummy_count INTEGER NOT NULL'
         ' DEFAULT 0;",\n};\n#define STORE_SCHEMA_VERSION')
    # 4. its words in the protocol: the Job, submit, update
    edit(p("proto/PROTOCOL.md"), '"held": false,', '"held": false, "dummy_count": 0,')
    edit(p("proto/PROTOCOL.md"), "`held` (bool, default false: queued held",
         "`dummy_count` (integer 0-100, default 0), `held` (bool, default"
         " false: queued held")
    edit(p("proto/PROTOCOL.md"), "`begin_ms`\n(ranges as in `submit`",
         "`begin_ms`, `dummy_count`\n(ranges as in `submit`")
    # 5. the literal lists of what may come out
    for lst in ("public_members", "web_members"):
        edit(p("tests/test_fields.c"),
             "static const char *const %s[] = {\n" % lst,
             "static const char *const %s[] = {\n    \"dummy_count\",\n" % lst)
    edit(p("tests/test_fields.c"), "static const char *const store_columns[] = {\n",
         "static const char *const store_columns[] = {\n    \"dummy_count\",\n")
    # 6. Python's list, written from the table
    run([sys.executable, "scripts/gen-job-fields.py"], t)


def daemon_checks(bin_dir, src):
    os.environ["SL_BIN"] = bin_dir
    d = Daemon()
    try:
        d.start()
        c = Client(d.socket)
        common = {"argv": ["/bin/sleep", "30"], "cwd": "/", "env": ["A=1"],
                  "held": True}
        r = c.call("submit", dict(common, dummy_count=7))
        jid = r["id"]
        assert c.call("show", {"id": jid})["dummy_count"] == 7
        try:
            c.call("submit", dict(common, dummy_count=101))
            raise SystemExit("FAIL: dummy_count 101 was taken")
        except RpcError as e:
            assert e.code == -32602 and "dummy_count" in e.message, e
        assert c.call("update", {"id": jid, "dummy_count": 9})["dummy_count"] == 9
        d.stop()
        d.start()
        c = Client(d.socket)
        got = c.call("show", {"id": jid})
        assert got["dummy_count"] == 9, got
        # public: anyone's list shows it
        jobs = c.call("status", {"all": True})["jobs"]
        assert [j["dummy_count"] for j in jobs if j["id"] == jid] == [9]
        # resubmit carries it, as submit's other options
        again = c.call("resubmit", {"id": jid})["id"]
        assert c.call("show", {"id": again})["dummy_count"] == 9
        c.call("cancel", {"id": again})
        c.call("cancel", {"id": jid})
        # stageloadctl's option, from the table's row alone
        ctl = [os.path.join(bin_dir, "stageloadctl"), "--socket", d.socket]
        out = run(ctl + ["submit", "--hold", "--dummy-count", "5", "--",
                         "/bin/sleep", "30"], src)
        cid = int(out.strip())
        assert c.call("show", {"id": cid})["dummy_count"] == 5
        run(ctl + ["update", str(cid), "--dummy-count", "6"], src)
        assert c.call("show", {"id": cid})["dummy_count"] == 6
        r = subprocess.run(ctl + ["submit", "--dummy-count", "101", "--",
                                  "/bin/true"], capture_output=True,
                           text=True)
        assert r.returncode == 2 and "--dummy-count" in r.stderr, r
        help_text = run(ctl + ["submit", "--help"], src)
        assert "--dummy-count N" in help_text, help_text
        c.call("cancel", {"id": cid})
    finally:
        d.cleanup()


# A program of libstageload's public API alone: it sets the new field at
# submit and reads it back, though the library was not touched for it.
LIB_PROGRAM = r"""
#include <errno.h>
#include <stdio.h>
#include <stageload.h>

int
main(int argc, char **argv)
{
	const char *cmd[] = {"/bin/true", NULL};
	sl_client *c = sl_client_new();
	sl_job_spec *s = sl_job_spec_new();
	sl_job *j = sl_job_new();
	struct sl_submitted sub;
	int64_t v = -1;

	if (argc != 2 || c == NULL || s == NULL || j == NULL ||
	    sl_connect(c, argv[1]) < 0 ||
	    sl_job_spec_set_strv(s, "argv", cmd) != 0 ||
	    sl_job_spec_set_bool(s, "held", 1) != 0 ||
	    sl_job_spec_set_int(s, "dummy_count", 42) != 0 ||
	    sl_job_spec_set_int(s, "dummy_count", 101) != -ERANGE ||
	    sl_submit(c, s, &sub) < 0 || sl_show(c, sub.id, 0, j) < 0 ||
	    sl_job_get_int(j, "dummy_count", &v) != 0) {
		fprintf(stderr, "lib: %s\n", c != NULL ? sl_errmsg(c) : "");
		return 1;
	}
	printf("dummy_count=%lld\n", (long long)v);
	sl_cancel(c, sub.id, NULL);
	sl_job_free(j);
	sl_job_spec_free(s);
	sl_client_free(c);
	return 0;
}
"""


def lib_checks(t, b, scratch):
    src = os.path.join(scratch, "lib-dummy.c")
    exe = os.path.join(scratch, "lib-dummy")
    with open(src, "w") as f:
        f.write(LIB_PROGRAM)
    run(["cc", "-Wall", "-Wextra", "-Werror", "-o", exe, src,
         "-I", os.path.join(t, "client"), "-L", os.path.join(b, "lib"),
         "-lstageload"], scratch)
    os.environ["SL_BIN"] = os.path.join(b, "bin")
    d = Daemon()
    try:
        d.start()
        out = run([exe, d.socket], scratch,
                  env=dict(os.environ, LD_LIBRARY_PATH=os.path.join(b, "lib")))
    finally:
        d.cleanup()
    if out.strip() != "dummy_count=42":
        raise SystemExit("FAIL: libstageload read %r" % out)


def main():
    if shutil.which("git") is None or shutil.which("cmake") is None:
        print("SKIP: needs git and cmake")
        return 77
    scratch = tempfile.mkdtemp(prefix="sl-fields-")
    try:
        t = os.path.join(scratch, "src")
        os.makedirs(t)
        copy_tree(t)
        add_field(t)
        touched = run(["git", "status", "--porcelain"], t).split("\n")
        touched = sorted(line[3:] for line in touched if line.strip())
        print("files touched to add a job field (%d):" % len(touched))
        for f in touched:
            print("  " + f)
        b = os.path.join(scratch, "build")
        run(["cmake", "-S", t, "-B", b, "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
             "-DSTAGELOAD_TESTS=ON", "-DSTAGELOAD_WEB=OFF"], scratch)
        run(["cmake", "--build", b, "-j2", "--target", "stageloadd",
             "test_fields", "stageload", "stageloadctl"], scratch)
        env = dict(os.environ, SL_SRC=t, SL_BIN=os.path.join(b, "bin"))
        print(run([os.path.join(b, "bin", "test_fields")], scratch, env=env)
              .strip().splitlines()[-1])
        print(run([sys.executable, os.path.join(t, "tests", "job-fields.py")],
                  scratch, env=env).strip().splitlines()[-1])
        print(run([sys.executable, os.path.join(t, "tests",
                                                "protocol-conformance.py")],
                  scratch, env=env).strip().splitlines()[-1:])
        daemon_checks(os.path.join(b, "bin"), t)
        print("the daemon stores, shows, updates and range-checks "
              "dummy_count; stageloadctl submit and update take "
              "--dummy-count")
        lib_checks(t, b, scratch)
        print("libstageload, unchanged, sets and reads dummy_count by name")
        named = []
        for d in PRODUCT_DIRS:
            for root, _, files in os.walk(os.path.join(SRC, d)):
                for name in files:
                    if not name.endswith((".c", ".h", ".py", ".in")):
                        continue
                    path = os.path.join(root, name)
                    with open(path, "rb") as f:
                        if b"after_any" in f.read():
                            named.append(os.path.relpath(path, SRC))
        named.sort()
        print("product files naming after_any (%d): %s" % (len(named),
                                                           " ".join(named)))
        fails = []
        if len(touched) > MAX_FILES:
            fails.append("%d files touched, more than %d" % (len(touched),
                                                              MAX_FILES))
        if len(named) > MAX_AFTER_ANY:
            fails.append("after_any in %d product files, more than %d"
                         % (len(named), MAX_AFTER_ANY))
        for f in fails:
            print("FAIL: " + f)
        return 1 if fails else 0
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
