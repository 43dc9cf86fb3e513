"""Groups end to end, with a real user and group.

A detached job has exactly the groups of the process that submitted it,
never the group database's (docs/security.md, Groups). A user made for this
run is a member of an extra group X; processes that really run as that user
submit jobs that write `id -G` to a file:

- one that kept X: its job has X;
- one that dropped X (os.setgroups without it, then setgid/setuid, as
  `setpriv` does): its job does not;
- one with no supplementary group at all, and `stageloadctl` run under
  `setpriv --clear-groups`: their jobs have the primary group alone;
- a queued job of the one that dropped X, after a daemon restart: still
  without X (the groups are stored with the job);
- a held job of the one that kept X, released after the user was taken
  out of X: it starts without X, a `groups_dropped` event and `show`
  (its answer and stageloadctl's paragraph) name X.

The daemon runs as root. The user and group are removed even on failure
(the same names and reaper as tests/auth.py).

Usage: groups.py   run the test (root only)
"""

import grp
import shutil
import os
import signal
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
sys.path.insert(0, os.path.join(here, "lib"))
from sltest import Client, Daemon, skip, users_bin, write_meminfo  # noqa: E402
import auth  # noqa: E402
from auth import PATH_ENV, User, UserClient, log, remove_users, run_tool  # noqa: E402


class As(User):
    """User u, but with exactly these groups in the connecting process."""

    def __init__(self, u, groups):
        self.__dict__.update(u.__dict__)
        self.groups = list(groups)


def make_user():
    # auth.py's names (slau<pid>a, slau<pid>x), so its reaper removes them
    # when this run is killed.
    tag = "%s%d" % (auth.PREFIX, os.getpid())
    name, x = tag + "a", tag + "x"
    names = [name, x]
    run_tool(["groupadd", x])
    run_tool(["useradd", "--create-home", "--user-group", "--shell", "/bin/sh",
              "--groups", x, name])
    u = User(name)
    gx = grp.getgrnam(x).gr_gid
    assert u.gid != 0 and sorted(u.groups) == sorted([u.gid, gx]), (u.groups, gx)
    return u, gx, names


_jobs = [0]


def job_groups(d, R, u, who, params=None):
    """Submit `id -G > FILE` as who: the job's id and FILE."""
    _jobs[0] += 1
    out = os.path.join(u.home, "groups-%d.out" % _jobs[0])
    c = UserClient(d.socket, who)
    p = {"argv": ["sh", "-c", "id -G > %s" % out], "cwd": u.home, "env": [PATH_ENV]}
    p.update(params or {})
    jid = c.call("submit", p)["id"]
    c.close()
    return jid, out


def read_groups(R, jid, out):
    j = R.call("wait", {"id": jid}, timeout=20)
    assert j["state"] == "exited" and j["exit_code"] == 0, j
    with open(out) as f:
        return sorted(int(g) for g in f.read().split())


def check(d, R, u, gx):
    keeper = As(u, [u.gid, gx])
    dropper = As(u, [u.gid])
    cleared = As(u, [])

    got = read_groups(R, *job_groups(d, R, u, keeper))
    assert got == sorted([u.gid, gx]), (got, u.gid, gx)
    log("ok   a submitter that kept group %d: its job has %s" % (gx, got))

    got = read_groups(R, *job_groups(d, R, u, dropper))
    assert got == [u.gid], (got, u.gid, gx)
    log("ok   a submitter that dropped group %d: its job has %s" % (gx, got))

    got = read_groups(R, *job_groups(d, R, u, cleared))
    assert got == [u.gid], (got, u.gid)
    log("ok   a submitter in no supplementary group: its job has %s" % got)

    # stageloadctl itself, under setpriv --clear-groups.
    out = os.path.join(u.home, "groups-cli.out")
    # A copy every user can run: the build may be under /root (0700).
    ubin = users_bin(d.bin)
    try:
        r = subprocess.run(
            ["setpriv", "--reuid=%d" % u.uid, "--regid=%d" % u.gid, "--clear-groups", "--",
             os.path.join(ubin, "stageloadctl"), "--socket", d.socket, "submit", "--",
             "sh", "-c", "id -G > %s" % out],
            capture_output=True, text=True, timeout=30, cwd=u.home,
            env={"PATH": "/usr/bin:/bin", "LANG": "C", "LD_LIBRARY_PATH": ubin})
    finally:
        shutil.rmtree(ubin, ignore_errors=True)
    assert r.returncode == 0, (r.returncode, r.stderr)
    got = read_groups(R, int(r.stdout.strip()), out)
    assert got == [u.gid], (got, u.gid)
    log("ok   stageloadctl under setpriv --clear-groups: its job has %s" % got)

    # Queued when the daemon restarts: the groups come back from the store.
    jid, out = job_groups(d, R, u, dropper, {"wait_free_pct": 95})
    keep_id, keep_out = job_groups(d, R, u, keeper, {"wait_free_pct": 95})
    assert R.call("show", {"id": jid})["state"] == "queued"
    R.close()
    assert d.stop() == 0
    d.start()
    R = Client(d.socket)
    write_meminfo(d.proc_root, total_kb=16 << 20, avail_kb=16 << 20)
    got = read_groups(R, jid, out)
    assert got == [u.gid], (got, u.gid, gx)
    got_keep = read_groups(R, keep_id, keep_out)
    assert got_keep == sorted([u.gid, gx]), (got_keep, u.gid, gx)
    log("ok   after a restart, queued jobs start with their submitters' groups: "
        "%s and %s" % (got, got_keep))
    return R


def check_revoked(d, R, u, gx, xname):
    keeper = As(u, [u.gid, gx])
    jid, out = job_groups(d, R, u, keeper, {"held": True})
    kept_id, kept_out = job_groups(d, R, u, keeper, {"held": True})
    R.call("release", {"id": kept_id})
    assert read_groups(R, kept_id, kept_out) == sorted([u.gid, gx])
    assert R.call("show", {"id": kept_id})["groups_dropped"] is None
    # Taken out of X while its job is held; the job's groups are checked
    # again when it starts.
    run_tool(["gpasswd", "-d", u.name, xname])
    R.call("release", {"id": jid})
    got = read_groups(R, jid, out)
    assert got == [u.gid], (got, u.gid, gx)
    j = R.call("show", {"id": jid})
    assert j["groups_dropped"] == [gx], j
    ev = [e for e in R.call("events", {"job_id": jid, "limit": 100})["events"]
          if e["kind"] == "groups_dropped"]
    assert len(ev) == 1 and ev[0]["detail"] == {"groups": [gx]}, ev
    r = subprocess.run([os.path.join(d.bin, "stageloadctl"), "--socket", d.socket, "show",
                        str(jid)], capture_output=True, text=True, timeout=30)
    assert "Started without group %d of its submitter's" % gx in r.stdout, r.stdout
    log("ok   a held job released after its user left group %d starts with %s; "
        "show and the events say so" % (gx, got))


def main():
    if os.geteuid() != 0:
        skip("the groups test needs root: it creates a user and a group and "
             "runs the daemon as root", root_only=True)
    for tool in ("useradd", "userdel", "groupadd", "groupdel", "gpasswd", "setpriv"):
        if subprocess.run(["sh", "-c", "command -v " + tool],
                          capture_output=True).returncode:
            skip("%s is not installed" % tool, root_only=True)
    # A kill from ctest's timeout still removes the user and group.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    auth.reap_stale()
    names = []
    d = None
    R = None
    try:
        u, gx, names = make_user()
        log("user %s (uid %d, gid %d) in group %d" % (u.name, u.uid, u.gid, gx))
        d = Daemon(interval="0.1s", config="grace = 1s\n")
        os.chmod(d.dir, 0o755)  # the socket's directory: the user may enter
        d.start()
        write_meminfo(d.proc_root, total_kb=16 << 20, avail_kb=8 << 20)
        R = Client(d.socket)
        R = check(d, R, u, gx)
        check_revoked(d, R, u, gx, names[1])
        R.close()
        R = None
        rc = d.stop()
        assert rc == 0 and "Sanitizer" not in d.log_text(), (rc, d.log_text()[-4000:])
        log("PASS")
    except BaseException:
        if d is not None:
            sys.stderr.write("--- daemon log ---\n" + d.log_text()[-6000:] + "\n")
        raise
    finally:
        if R is not None:
            R.close()
        if d is not None:
            d.cleanup()
        remove_users(names)


if __name__ == "__main__":
    main()
