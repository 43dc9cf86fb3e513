"""Authorisation end to end, with real users.

The daemon runs as root, like a system daemon: its socket (mode 0666) sits
in a directory every user can enter. Two users made for this run, A and B
(each with a primary group of its own; B also in an extra group), talk to
it from processes that really run as them, so every answer is decided on
the credentials the kernel reports for the socket. PROTOCOL.md "Who may
call what" is the rule checked here, with the exact error codes.

Usage: auth.py            run the test (root only)
       auth.py --reap     remove the users of runs that are no longer alive
"""

import grp
import json
import os
import pwd
import re
import shutil
import signal
import stat
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from sltest import (Client, Daemon, RELAY, RelayClient, RpcError, poll, skip,  # noqa: E402
                    users_bin as copy_for_users, write_meminfo)

E_PERM = -32002
E_LIMIT = -32004
E_STATE = -32005

# Users and groups of one run are named after the pid that made them, so a
# run killed half-way is recognised (and removed) by the next one, and two
# runs at once never touch each other's users.
PREFIX = "slau"
NAME_RE = re.compile(r"^%s(\d+)([abx])$" % PREFIX)
PATH_ENV = "PATH=/usr/local/bin:/usr/bin:/bin"
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable



def log(msg):
    print(msg, flush=True)


# ---- users ----

class User:
    def __init__(self, name):
        pw = pwd.getpwnam(name)
        self.name = name
        self.uid = pw.pw_uid
        self.gid = pw.pw_gid
        self.home = pw.pw_dir
        self.groups = os.getgrouplist(name, pw.pw_gid)

    def drop(self):
        """preexec_fn: become this user, with its groups."""
        groups, gid, uid = self.groups, self.gid, self.uid

        def f():
            os.setgroups(groups)
            os.setgid(gid)
            os.setuid(uid)
        return f

    def popen(self, argv, **kw):
        return subprocess.Popen(argv, preexec_fn=self.drop(), cwd="/", **kw)


def run_tool(argv):
    """useradd and friends; they retry while another run holds the lock."""
    for _ in range(50):
        out = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        if out.returncode == 0:
            return
        if "lock" not in out.stderr:
            break
        time.sleep(0.1)
    raise AssertionError("%s failed (%d): %s" % (" ".join(argv), out.returncode,
                                                  out.stderr.strip()))


def kill_uid(uid):
    """SIGKILL every process of uid: only ever one of this test's users
    (their jobs outlive the daemon by design)."""
    for _ in range(50):
        found = False
        for p in os.listdir("/proc"):
            if not p.isdigit():
                continue
            try:
                if os.stat("/proc/" + p).st_uid != uid:
                    continue
                os.kill(int(p), signal.SIGKILL)
                found = True
            except OSError:
                pass
        if not found:
            return
        time.sleep(0.05)


def remove_users(names):
    for n in names:
        try:
            pw = pwd.getpwnam(n)
        except KeyError:
            continue
        kill_uid(pw.pw_uid)
        try:
            run_tool(["userdel", "-r", n])
        except AssertionError as e:
            # userdel -r complains about a missing home or mail spool but
            # still removes the user; anything else is reported.
            if n in [p.pw_name for p in pwd.getpwall()]:
                raise
            log("note: %s" % e)
    for n in names:
        try:
            grp.getgrnam(n)
        except KeyError:
            continue
        run_tool(["groupdel", n])


def pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def reap_stale(keep_pid=None):
    """Users and groups left by runs that were killed."""
    stale = set()
    for n in [p.pw_name for p in pwd.getpwall()] + [g.gr_name for g in grp.getgrall()]:
        m = NAME_RE.match(n)
        if m and int(m.group(1)) != keep_pid and not pid_alive(int(m.group(1))):
            stale.add(n)
    if stale:
        log("removing users/groups of a killed run: " + " ".join(sorted(stale)))
        # Users first (their primary groups go with them), then groups.
        remove_users(sorted(stale, key=lambda n: n.endswith("x")))


def make_users():
    tag = "%s%d" % (PREFIX, os.getpid())
    a, b, x = tag + "a", tag + "b", tag + "x"
    names = [a, b, x]
    run_tool(["groupadd", x])
    run_tool(["useradd", "--create-home", "--user-group", "--shell", "/bin/sh", a])
    run_tool(["useradd", "--create-home", "--user-group", "--shell", "/bin/sh",
              "--groups", x, b])
    ua, ub = User(a), User(b)
    gx = grp.getgrnam(x).gr_gid
    # The setup the test relies on: own primary groups, B also in X.
    assert ua.gid != ub.gid and ua.gid != 0 and ub.gid != 0, (ua.gid, ub.gid)
    assert sorted(ua.groups) == [ua.gid], ua.groups
    assert sorted(ub.groups) == sorted([ub.gid, gx]), (ub.groups, gx)
    return ua, ub, gx, names


# ---- talking to the daemon as a user ----

class UserClient(RelayClient):
    """A connection made by a process running as user u (through RELAY)."""

    def __init__(self, path, u, hello=True, version=1):
        RelayClient.__init__(self, u.popen([PYTHON, "-c", RELAY, path],
                                           stdin=subprocess.PIPE,
                                           stdout=subprocess.PIPE))
        self.hello = None
        if hello:
            self.hello = self.call("hello", {"version": version, "client": "auth"})


def start(c, method, params=None):
    """Send a request without waiting (deferred methods); returns its id."""
    rid = c.next_id
    c.next_id += 1
    msg = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        msg["params"] = params
    c.send_raw(json.dumps(msg).encode() + b"\n")
    return rid


def expect_err(c, method, params, code, *words):
    """The call fails with exactly this code; the message holds words."""
    try:
        r = c.call(method, params)
    except RpcError as e:
        assert e.code == code, "%s %s: want %d, got %d %s" % (
            method, params, code, e.code, e.message)
        for w in words:
            assert w in e.message, "%s %s: %r lacks %r" % (method, params, e.message, w)
        return e.message
    raise AssertionError("%s %s was allowed: %s" % (method, params, r))


def read_log(c, jid):
    """The whole log of a detached job, through the daemon."""
    r = c.call("logs", {"id": jid})
    assert r["id"] == jid and r["eof"] is True, r
    parts = [n["params"] for n in c.notes
             if n.get("method") == "log" and n["params"]["id"] == jid]
    c.notes = [n for n in c.notes
               if not (n.get("method") == "log" and n["params"]["id"] == jid)]
    return "".join(p["data"] for p in sorted(parts, key=lambda p: p["offset"]))


def show(c, jid, env=False):
    return c.call("show", {"id": jid, "env": env})


def wait_state(c, jid, *states, timeout=15.0):
    return poll(lambda: (lambda j: j if j["state"] in states else None)(show(c, jid)),
                timeout=timeout, what="job %d to be %s" % (jid, "/".join(states)))


def hidden(j):
    """Members only the owner and root may see."""
    return [k for k in ("argv", "cwd", "env", "end_detail") if k in j]


def pgid_of(pid):
    with open("/proc/%d/stat" % pid) as f:
        return int(f.read().rsplit(")", 1)[1].split()[2])


# Where the test users run stageloadctl from (users_bin()).
USERS_BIN = None


def users_bin(bin_dir, u):
    """sltest.users_bin's copy of stageloadctl, which the test users run.
    Says so when the build itself is out of the users' reach, and fails
    with the reason when even the copy cannot run as u."""
    top = copy_for_users(bin_dir)

    def runs(path, env):
        r = subprocess.run(["setpriv", "--reuid=%d" % u.uid, "--regid=%d" % u.gid,
                            "--init-groups", "--", path, "--version"],
                           capture_output=True, text=True, timeout=30, cwd="/",
                           env=dict(env, PATH="/usr/bin:/bin"))
        return r.returncode == 0, (r.stdout + r.stderr).strip()

    ok, why = runs(os.path.join(top, "stageloadctl"), {"LD_LIBRARY_PATH": top})
    if not ok:
        raise AssertionError("test user %s cannot run stageloadctl even from the copy in "
                             "%s: %s" % (u.name, top, why))
    ok, why = runs(os.path.join(bin_dir, "stageloadctl"), {})
    if not ok:
        log("note: the build (%s) is out of the test users' reach (%s); they run a copy "
            "in %s" % (os.path.abspath(bin_dir), why, top))
    return top


def ctl(d, u, *args, binary=False):
    """stageloadctl as user u (u None: root), through setpriv; the users
    run the copy in USERS_BIN. binary: stdout and stderr as bytes."""
    env = {"PATH": "/usr/bin:/bin", "LANG": "C"}
    prog = os.path.join(d.bin, "stageloadctl")
    if u is not None:
        prog = os.path.join(USERS_BIN, "stageloadctl")
        env["LD_LIBRARY_PATH"] = USERS_BIN
    argv = [prog, "--socket", d.socket] + list(args)
    if u is not None:
        argv = ["setpriv", "--reuid=%d" % u.uid, "--regid=%d" % u.gid,
                "--init-groups", "--"] + argv
    out = subprocess.run(argv, capture_output=True, text=not binary, timeout=30, cwd="/",
                         env=env)
    return out.returncode, out.stdout, out.stderr


# ---- the checks ----

def check_setup(d, A, B):
    st = os.stat(d.socket)
    assert stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o666, oct(st.st_mode)
    a, b = UserClient(d.socket, A), UserClient(d.socket, B)
    # hello reports the uid the daemon read from the socket.
    assert a.hello["uid"] == A.uid and b.hello["uid"] == B.uid, (a.hello, b.hello)
    a.close()
    b.close()
    log("ok   socket 0666 in a shared directory; hello sees the peer uids")


def check_detached(d, A, B, R):
    """B sees A's jobs in the queue and may wait for them, nothing more."""
    a, b = UserClient(d.socket, A), UserClient(d.socket, B)
    env = [PATH_ENV, "SECRET_A=hunter2"]
    ja = a.call("submit", {"argv": ["sh", "-c", "echo secret-A-output; exec sleep 60"],
                           "cwd": A.home, "env": env, "name": "a-run"})["id"]
    # Free memory is 50% in the fixture: this one stays queued.
    jq = a.call("submit", {"argv": ["sh", "-c", "echo never"], "cwd": A.home,
                           "env": env, "wait_free_pct": 95, "name": "a-queued"})["id"]
    wait_state(R, ja, "running")
    poll(lambda: "secret-A-output" in read_log(R, ja), what="A's job to write its log")

    # The queue: id, user, state and memory, no command or environment.
    jobs = {j["id"]: j for j in b.call("status")["jobs"]}
    assert ja in jobs and jq in jobs, jobs.keys()
    for jid, state in ((ja, "running"), (jq, "queued")):
        j = jobs[jid]
        assert j["user"] == A.name and j["uid"] == A.uid and j["state"] == state, j
        assert isinstance(j["footprint_bytes"], int), j
        assert hidden(j) == [], j
    assert jobs[ja]["pid"] > 1 and jobs[jq]["position"] == 1, jobs
    # Protocol version 2 lists `command`, for the owner and root only.
    for c, want in ((UserClient(d.socket, B, version=2), None),
                    (UserClient(d.socket, A, version=2), "sh -c 'echo never'")):
        j = [j for j in c.call("status")["jobs"] if j["id"] == jq][0]
        assert j["command"] == want and "argv" not in j and "env" not in j, j
        c.close()
    for jid in (ja, jq):
        for e in (False, True):
            j = show(b, jid, env=e)
            assert j["id"] == jid and j["user"] == A.name and hidden(j) == [], j
    # The owner and root see all of it.
    for c in (a, R):
        j = show(c, ja, env=True)
        assert j["argv"][0] == "sh" and j["cwd"] == A.home, j
        assert "SECRET_A=hunter2" in j["env"], j
    assert "secret-A-output" in read_log(a, ja)

    # B may not cancel, read logs, follow logs or resume A's jobs.
    for jid in (ja, jq):
        expect_err(b, "cancel", {"id": jid}, E_PERM, "not yours")
        expect_err(b, "logs", {"id": jid}, E_PERM, "not yours")
        expect_err(b, "logs", {"id": jid, "follow": True, "offset": 0}, E_PERM)
        expect_err(b, "resume", {"id": jid}, E_PERM, "not yours")
    assert not [n for n in b.notes if n.get("method") == "log"], b.notes
    assert show(R, ja)["state"] == "running" and show(R, jq)["state"] == "queued"

    # The same through stageloadctl, run as B.
    rc, out, err = ctl(d, B, "cancel", str(ja))
    assert rc == 77 and str(ja) in err, (rc, out, err)
    rc, out, err = ctl(d, B, "logs", str(ja))
    assert rc == 77 and "secret" not in out + err, (rc, out, err)
    rc, out, err = ctl(d, B, "show", "--env", str(ja))
    assert rc == 0 and A.name in out, (rc, out, err)
    for secret in ("hunter2", "secret-A", "sleep 60", A.home):
        assert secret not in out + err, (secret, out)
    rc, out, err = ctl(d, B, "--json", "show", "--env", str(ja))
    j = json.loads(out)
    assert rc == 0 and j["id"] == ja and hidden(j) == [], (rc, out, err)
    rc, out, err = ctl(d, B, "status")
    assert rc == 0 and A.name in out and str(ja) in out and "hunter2" not in out, (rc, out)
    assert show(R, ja)["state"] == "running"
    # Root's stageloadctl sees and reads it.
    rc, out, err = ctl(d, None, "logs", str(ja))
    assert rc == 0 and "secret-A-output" in out, (rc, out, err)
    rc, out, err = ctl(d, None, "--json", "show", "--env", str(ja))
    assert rc == 0 and "SECRET_A=hunter2" in json.loads(out)["env"], (rc, out, err)

    # B may wait for A's jobs; the answer hides the same members.
    wq = start(b, "wait", {"id": jq})
    wa = start(b, "wait", {"id": ja})
    j = R.call("cancel", {"id": jq})
    assert j["state"] == "cancelled", j
    j = b.response(wq)["result"]
    assert j["id"] == jq and j["state"] == "cancelled" and hidden(j) == [], j
    R.call("cancel", {"id": ja})
    j = b.response(wa, timeout=15)["result"]
    assert j["id"] == ja and j["state"] == "killed" and j["end_reason"] == "cancel", j
    assert hidden(j) == [], j
    j = R.call("wait", {"id": ja})
    assert "by root" in j["end_detail"] and j["argv"][0] == "sh", j
    j = show(a, jq)
    assert j["end_detail"] is not None and "root" in j["end_detail"], j

    # Ended (read back from the database): still hidden from B, still not
    # B's to cancel or resume, while the owner gets "wrong state".
    jobs = {j["id"]: j for j in b.call("status", {"all": True})["jobs"]}
    assert hidden(jobs[ja]) == [] and hidden(jobs[jq]) == [], jobs
    assert jobs[ja]["user"] == A.name and jobs[ja]["state"] == "killed", jobs[ja]
    j = show(b, ja, env=True)
    assert hidden(j) == [] and j["state"] == "killed", j
    expect_err(b, "cancel", {"id": ja}, E_PERM, "not yours")
    expect_err(b, "resume", {"id": ja}, E_PERM, "not yours")
    expect_err(b, "logs", {"id": ja}, E_PERM, "not yours")
    expect_err(a, "cancel", {"id": ja}, E_STATE, "ended")
    j = b.call("wait", {"id": ja})
    assert j["state"] == "killed" and hidden(j) == [], j
    a.close()
    b.close()
    log("ok   B sees A's jobs in the queue and waits for them; no command, env, "
        "detail or log; no cancel/resume; root manages both")
    return ja


def check_root_manages_b(d, B, R):
    b = UserClient(d.socket, B)
    jb = b.call("submit", {"argv": ["sh", "-c", "echo b-says-hi; exec sleep 60"],
                           "cwd": B.home, "env": [PATH_ENV, "SECRET_B=xyzzy"]})["id"]
    wait_state(R, jb, "running")
    j = show(R, jb, env=True)
    assert j["user"] == B.name and "SECRET_B=xyzzy" in j["env"] and j["cwd"] == B.home, j
    poll(lambda: "b-says-hi" in read_log(R, jb), what="B's job to write its log")
    # B's stageloadctl manages B's own job.
    rc, out, err = ctl(d, B, "logs", str(jb))
    assert rc == 0 and "b-says-hi" in out, (rc, out, err)
    j = R.call("cancel", {"id": jb})
    assert j["id"] == jb, j
    j = b.call("wait", {"id": jb})
    assert j["state"] == "killed" and j["end_reason"] == "cancel", j
    assert "by root" in j["end_detail"], j
    b.close()
    log("ok   root shows (argv, env), reads logs of and cancels B's job")


def check_runs_as_b(d, B, gx, R):
    """A detached job of B runs as B: uid, gid and exactly B's groups, no
    capabilities, nothing of the daemon's open, its directory entered as
    B."""
    b = UserClient(d.socket, B)
    script = ("id -u; id -g; id -G; id -u > ids.txt; "
              "grep -E '^Cap(Inh|Prm|Eff|Amb):' /proc/self/status; "
              "ls -l /proc/$$/fd")
    jb = b.call("submit", {"argv": ["sh", "-c", script], "cwd": B.home,
                           "env": [PATH_ENV]})["id"]
    j = b.call("wait", {"id": jb})
    assert j["state"] == "exited" and j["exit_code"] == 0, j
    logpath = os.path.join(d.dir, "jobs", "%d.log" % jb)
    lines = read_log(b, jb).splitlines()
    uid, gid, groups = int(lines[0]), int(lines[1]), [int(g) for g in lines[2].split()]
    assert uid == B.uid and gid == B.gid, (lines, B.uid, B.gid)
    assert groups[0] == B.gid and sorted(groups) == sorted([B.gid, gx]), (groups, B.gid, gx)
    caps = dict(x.split(":") for x in lines if x.startswith("Cap"))
    assert len(caps) == 4 and all(int(v, 16) == 0 for v in caps.values()), caps
    # The shell's own descriptors (ls is its child, with no pipe between).
    fds = dict(x.split(" -> ")[0].split()[-1:] + x.split(" -> ")[1:]
               for x in lines if " -> " in x)
    # stdout and stderr: one pipe, which its monitor copies into the log
    # (bounded by max_log_bytes, docs/jobs.md).
    assert set(fds) == {"0", "1", "2"} and fds["0"] == "/dev/null", fds
    assert fds["1"] == fds["2"] and fds["1"].startswith("pipe:"), fds
    st = os.stat(os.path.join(B.home, "ids.txt"))
    assert st.st_uid == B.uid and st.st_gid == B.gid, st
    # Its log: B's, readable by nobody else.
    st = os.lstat(logpath)
    assert stat.S_ISREG(st.st_mode) and st.st_nlink == 1, st
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (B.uid, B.gid, 0o600), st
    log("ok   B's job ran as uid %d gid %d groups %s, no capabilities, fds 0-2 only; "
        "its log is %d:%d 0600" % (uid, gid, groups, B.uid, B.gid))
    # The job enters its directory as B: root's private one is refused.
    private = os.path.join(d.dir, "jobs")
    assert stat.S_IMODE(os.stat(private).st_mode) & 0o007 == 0
    jp = b.call("submit", {"argv": ["true"], "cwd": private, "env": [PATH_ENV]})["id"]
    j = b.call("wait", {"id": jp})
    assert j["state"] == "failed" and j["end_reason"] == "spawn", j
    assert "Permission denied" in j["end_detail"], j
    b.close()
    log("ok   B's job in a directory B may not enter fails: %s" % j["end_detail"])
    return jp


def check_log_links(d, B, R, last_id):
    """A link planted where the next job's log will go is not followed: a
    first attempt removes whatever is there and starts a file of its own."""
    b = UserClient(d.socket, B)
    target = os.path.join(d.dir, "precious")
    with open(target, "w") as f:
        f.write("precious\n")
    os.chmod(target, 0o644)
    before = os.stat(target)
    for kind, plant in (("symlink", os.symlink), ("hard link", os.link)):
        jid = last_id + 1
        path = os.path.join(d.dir, "jobs", "%d.log" % jid)
        plant(target, path)
        got = b.call("submit", {"argv": ["sh", "-c", "echo overwritten"], "cwd": B.home,
                                "env": [PATH_ENV]})["id"]
        assert got == jid, "job ids are not sequential (%d after %d)" % (got, last_id)
        j = b.call("wait", {"id": jid})
        assert j["state"] == "exited" and j["exit_code"] == 0, j
        with open(target) as f:
            assert f.read() == "precious\n", kind
        st = os.stat(target)
        assert (st.st_uid, st.st_gid, st.st_mode, st.st_nlink) == (
            before.st_uid, before.st_gid, before.st_mode, 1), st
        st = os.lstat(path)
        assert stat.S_ISREG(st.st_mode) and st.st_nlink == 1, st
        assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (B.uid, 0o600), st
        with open(path) as f:
            assert f.read() == "overwritten\n", kind
        os.unlink(path)
        log("ok   a %s at the log path is replaced by the job's own log, "
            "its target untouched" % kind)
        last_id = jid
    b.close()
    return last_id


def check_attached(d, A, B, R):
    """job_pid, job_exit, resume and metering across users."""
    procs = []
    a, b = UserClient(d.socket, A), UserClient(d.socket, B)
    try:
        ja = a.call("submit", {"argv": ["sleep", "60"], "cwd": "/", "attached": True})["id"]
        a.notification("admitted")
        pa = A.popen(["sleep", "60"], start_new_session=True)
        procs.append(pa)
        pr = subprocess.Popen(["sleep", "60"], start_new_session=True)
        procs.append(pr)
        pb = B.popen(["sleep", "60"], start_new_session=True)
        procs.append(pb)
        # A root process group with a process of B in it: a root service
        # whose worker runs as B. B owns the worker, not the group.
        master = subprocess.Popen(
            ["bash", "-c", "setpriv --reuid=%d --regid=%d --clear-groups sleep 60 & "
             "echo $!; wait" % (B.uid, B.gid)], start_new_session=True,
            stdout=subprocess.PIPE, text=True)
        procs.append(master)
        worker = int(master.stdout.readline())
        poll(lambda: os.stat("/proc/%d" % worker).st_uid == B.uid, what="the worker to drop")
        assert pgid_of(worker) == master.pid, (pgid_of(worker), master.pid)

        # B on A's attached job: not B's to report, end or resume.
        expect_err(b, "job_pid", {"id": ja, "pid": pb.pid}, E_PERM, "not yours")
        a.call("job_pid", {"id": ja, "pid": pa.pid})
        assert show(R, ja)["state"] == "running"
        expect_err(b, "job_pid", {"id": ja, "pid": pb.pid}, E_PERM, "not yours")
        expect_err(b, "job_exit", {"id": ja, "exit_code": 0}, E_PERM)
        expect_err(b, "job_exit", {"id": ja, "signal": 9}, E_PERM)
        expect_err(b, "resume", {"id": ja}, E_PERM, "not yours")
        expect_err(b, "cancel", {"id": ja}, E_PERM, "not yours")
        j = show(R, ja)
        assert j["state"] == "running" and j["pid"] == pa.pid, j
        # Root may not end it for A either (job_exit belongs to the
        # connection that attached it), but may cancel it.
        expect_err(R, "job_exit", {"id": ja, "exit_code": 0}, E_PERM)

        # B's own attached job: only a pid B owns, leading its own group.
        jb = b.call("submit", {"argv": ["sleep", "60"], "cwd": "/", "attached": True})["id"]
        b.notification("admitted")
        expect_err(b, "job_pid", {"id": jb, "pid": pa.pid}, E_PERM, "another user")
        expect_err(b, "job_pid", {"id": jb, "pid": pr.pid}, E_PERM, "another user")
        expect_err(b, "job_pid", {"id": jb, "pid": master.pid}, E_PERM, "another user")
        expect_err(b, "job_pid", {"id": jb, "pid": worker}, E_PERM, "process group")
        assert show(R, jb)["state"] == "admitted"
        # A may not report B's job either, even with its own pid.
        expect_err(a, "job_pid", {"id": jb, "pid": pa.pid}, E_PERM, "not yours")
        # A process of B's in a group B leads is fine, leader or not.
        bgroup = B.popen(["sh", "-c", "sleep 60 & echo $!; wait"], start_new_session=True,
                         stdout=subprocess.PIPE, text=True)
        procs.append(bgroup)
        inner = int(bgroup.stdout.readline())
        assert pgid_of(inner) == bgroup.pid != inner
        b.call("job_pid", {"id": jb, "pid": inner})
        j = show(R, jb)
        assert j["state"] == "running" and j["pid"] == inner, j
        expect_err(a, "job_exit", {"id": jb, "exit_code": 3}, E_PERM)
        j = b.call("job_exit", {"id": jb, "exit_code": 3})
        assert j["state"] == "exited" and j["exit_code"] == 3, j

        # Metering: only the owner of the process (or root).
        for pid in (pa.pid, pr.pid, master.pid):
            expect_err(b, "subscribe", {"pid": pid}, E_PERM, "another user")
        r = b.call("subscribe", {"pid": pb.pid, "samples": True})
        assert r["interval_ms"] > 0, r
        n = b.notification("sample")["params"]
        assert n["pid"] == pb.pid and n["nprocs"] == 1, n
        b.call("unsubscribe")
        rc, out, err = ctl(d, B, "meter", "--count", "1", "--pid", str(pa.pid))
        assert rc == 77 and out == "", (rc, out, err)
        rc, out, err = ctl(d, B, "meter", "--count", "1", "--pid", str(pb.pid))
        assert rc == 0 and json.loads(out)["pid"] == pb.pid, (rc, out, err)
        R.call("subscribe", {"pid": pa.pid})
        n = R.notification("sample")["params"]
        assert n["pid"] == pa.pid, n
        R.call("unsubscribe")
        R.notes.clear()

        # Root may resume A's attached job (and so see all of it), then
        # cancels it: A's process is ended.
        j = R.call("resume", {"id": ja})
        assert j["id"] == ja and j["state"] == "running" and j["argv"] == ["sleep", "60"], j
        j = R.call("cancel", {"id": ja})
        poll(lambda: pa.poll() is not None, what="A's command to be signalled")
        assert pa.returncode == -signal.SIGTERM, pa.returncode
        # The root service and its worker were never touched.
        assert master.poll() is None and pid_alive(worker)
        log("ok   attached: B cannot job_pid/job_exit/resume/cancel A's job, cannot "
            "report A's, root's or a root group's process, cannot meter others")
    finally:
        for p in procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except OSError:
                    p.kill()
                p.wait()
        a.close()
        b.close()


def check_events(d, A, B, R, ja):
    b = UserClient(d.socket, B)
    evs = b.call("events", {"limit": 10000})["events"]
    theirs = [e for e in evs if e["job_id"] == ja]
    assert {e["kind"] for e in theirs} >= {"submitted", "started", "killed"}, theirs
    # of another user's job only a stage's and a breach's numbers are
    # public (PROTOCOL.md, events); every other kind's detail is null
    public = {"stage": {"name"},
              "stage_end": {"name", "started_at_ms", "ended_at_ms", "footprint_peak_bytes",
                            "swap_growth_bytes"},
              "breach": {"attempt", "requeued", "swap_growth_bytes", "swap_budget_bytes",
                         "swap_used_bytes", "free_pct", "footprint_bytes", "pressure",
                         "sampled_at_ms"}}
    assert all(e["user"] == A.name and
               (e["detail"] is None if e["kind"] not in public
                else set(e["detail"]) <= public[e["kind"]]) for e in theirs), theirs
    mine = [e for e in evs if e["user"] == B.name and e["kind"] == "submitted"]
    assert mine and all(isinstance(e["detail"], dict) for e in mine), mine
    rootview = [e for e in R.call("events", {"limit": 10000})["events"] if e["job_id"] == ja]
    assert [e["id"] for e in rootview] == [e["id"] for e in theirs], (rootview, theirs)
    assert any(isinstance(e["detail"], dict) for e in rootview), rootview

    # Live: a follower and a subscriber as B, a follower as root.
    last = evs[-1]["id"]
    b.call("events", {"after_id": last, "follow": True})
    bs = UserClient(d.socket, B)
    bs.call("subscribe", {"samples": False, "events": True})
    R.call("events", {"after_id": last, "follow": True})
    a = UserClient(d.socket, A)
    jid = a.call("submit", {"argv": ["true"], "cwd": "/", "env": [PATH_ENV],
                            "name": "a-live"})["id"]

    for c, who in ((b, "B follower"), (bs, "B subscriber"), (R, "root")):
        while True:
            e = c.notification("event")["params"]
            if e["job_id"] == jid and e["kind"] == "submitted":
                break
        assert e["user"] == A.name, (who, e)
        if c is R:
            assert e["detail"]["name"] == "a-live", (who, e)
        else:
            assert e["detail"] is None, (who, e)
    a.call("wait", {"id": jid})
    a.close()
    bs.close()
    b.close()
    log("ok   events: B sees A's events without their detail (list, follow, subscribe)")


def check_foreign_log(d, B, R):
    """Another user's job output reaches root's terminal escaped: root's
    `stageloadctl logs` shows an OSC 52 clipboard write, a C1 CSI and
    U+202E from B's job as text, newlines and tabs kept; B gets its own
    job's bytes as they are, and so does root with --raw (docs/cli.md)."""
    evil = "x\x1b]52;c;cm0gLXJmIH4=\x07\u009b31m\u202eline\n\tnext\n"
    b = UserClient(d.socket, B)
    jb = b.call("submit", {"argv": ["sh", "-c", 'printf "%s" "$1"', "sh", evil],
                           "cwd": "/", "env": [PATH_ENV]})["id"]
    j = b.call("wait", {"id": jb})
    assert j["state"] == "exited" and j["exit_code"] == 0, j
    b.close()
    rc, out, err = ctl(d, None, "logs", str(jb), binary=True)
    assert rc == 0, (rc, out, err)
    for raw in (b"\x1b", b"\x07", b"\xc2\x9b", b"\xe2\x80\xae"):
        assert raw not in out, (raw, out)
    assert out == (b"x\\e]52;c;cm0gLXJmIH4=\\x07\\u{009B}31m\\u{202E}line\n\tnext\n"), out
    rc, out, err = ctl(d, B, "logs", str(jb), binary=True)
    assert rc == 0 and out == evil.encode(), (rc, out, err)
    rc, out, err = ctl(d, None, "logs", "--raw", str(jb), binary=True)
    assert rc == 0 and out == evil.encode(), (rc, out, err)
    log("ok   root's logs of B's job shows its escape sequences escaped; B's own, "
        "and root's --raw, are the bytes")


def check_limits(A, B):
    """Per-uid caps on queued jobs and connections; root is exempt."""
    d = Daemon(interval="0.1s",
               config="max_queued_per_uid = 2\nmax_clients_per_uid = 3\n")
    os.chmod(d.dir, 0o755)
    conns = []
    try:
        d.start()
        write_meminfo(d.proc_root, total_kb=16 << 20, avail_kb=8 << 20)
        R = Client(d.socket)
        b = UserClient(d.socket, B)
        a = UserClient(d.socket, A)
        conns += [R, b, a]
        job = {"argv": ["true"], "cwd": "/", "env": [PATH_ENV], "wait_free_pct": 95}
        ids = [b.call("submit", job)["id"] for _ in range(2)]
        msg = expect_err(b, "submit", job, E_LIMIT, "limit", "2", "per user")
        expect_err(b, "submit", {"argv": ["x"], "cwd": "/", "attached": True}, E_LIMIT)
        # Per uid: A is not held by B's jobs; root is not held at all.
        a.call("submit", job)
        rid = [R.call("submit", job)["id"] for _ in range(5)]
        # A slot freed is a slot usable.
        b.call("cancel", {"id": ids[0]})
        b.call("submit", job)
        expect_err(b, "submit", job, E_LIMIT)
        log("ok   queued-jobs cap: B's third job gets -32004 (%s); root submits 5" % msg)

        # Connections: b is B's first; two more fit, the fourth is refused.
        more = [UserClient(d.socket, B) for _ in range(2)]
        conns += more
        # It is refused when it connects, before it says anything.
        extra = UserClient(d.socket, B, hello=False)
        conns.append(extra)
        m = extra.read_msg(timeout=10)
        assert m is not None and m["id"] is None and m["error"]["code"] == E_LIMIT, m
        msg = m["error"]["message"]
        for w in ("too many connections", "uid %d" % B.uid, "limit 3"):
            assert w in msg, (msg, w)
        assert extra.read_msg(timeout=10) is None, "the refused connection stays open"
        conns += [UserClient(d.socket, A) for _ in range(2)]
        conns += [Client(d.socket) for _ in range(5)]
        more[0].close()

        def fits():
            c = UserClient(d.socket, B, hello=False)
            try:
                c.call("hello", {"version": 1})
                conns.append(c)
                return True
            except OSError:  # refused at connect: closed
                c.close()
                return False
        poll(fits, what="a freed connection slot")
        log("ok   connection cap: B's fourth connection gets -32004 (%s); A and root connect"
            % msg)
        for jid in rid:
            R.call("cancel", {"id": jid})
    finally:
        for c in conns:
            try:
                c.close()
            except OSError:
                pass
        d.cleanup()


def main():
    global USERS_BIN
    if len(sys.argv) > 1 and sys.argv[1] == "--reap":
        if os.geteuid() == 0:
            reap_stale(keep_pid=int(sys.argv[2]) if len(sys.argv) > 2 else None)
        return
    if os.geteuid() != 0:
        skip("authorisation needs root: it creates two users with useradd and "
             "runs the daemon as root", root_only=True)
    for tool in ("useradd", "userdel", "groupadd", "groupdel", "setpriv"):
        if subprocess.run(["sh", "-c", "command -v " + tool], capture_output=True).returncode:
            skip("%s is not installed" % tool, root_only=True)
    # A kill from ctest's timeout still removes the users.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    reap_stale()
    names = []
    d = None
    try:
        A, B, gx, names = make_users()
        log("users %s (uid %d) and %s (uid %d, groups %s)" % (A.name, A.uid, B.name, B.uid,
                                                            B.groups))
        USERS_BIN = users_bin(os.environ.get("SL_BIN", "build/bin"), A)
        d = Daemon(interval="0.1s", config="grace = 1s\n")
        os.chmod(d.dir, 0o755)  # the socket's directory: every user may enter
        d.start()
        write_meminfo(d.proc_root, total_kb=16 << 20, avail_kb=8 << 20)
        R = Client(d.socket)
        check_setup(d, A, B)
        ja = check_detached(d, A, B, R)
        check_root_manages_b(d, B, R)
        last = check_runs_as_b(d, B, gx, R)
        check_log_links(d, B, R, last)
        check_attached(d, A, B, R)
        check_events(d, A, B, R, ja)
        check_foreign_log(d, B, R)
        R.close()
        rc = d.stop()
        assert rc == 0 and "Sanitizer" not in d.log_text(), (rc, d.log_text()[-4000:])
        check_limits(A, B)
        log("PASS")
    except BaseException:
        if d is not None:
            sys.stderr.write("--- daemon log ---\n" + d.log_text()[-6000:] + "\n")
        raise
    finally:
        if d is not None:
            d.cleanup()
        if USERS_BIN is not None:
            shutil.rmtree(USERS_BIN, ignore_errors=True)
        remove_users(names)


if __name__ == "__main__":
    main()
