"""What the daemon tells a job's user, checked through the fixture proc
root with real jobs: the marker lines the daemon writes into a job's log
(docs/jobs.md, "Cancel, wait, logs"), swap growth worded as the system's,
the jobs a waiting job waits behind (waiting_on), the last ends under
top's table, and stage reports that reach the job's own daemon.

Run one scenario with: job-messages.py NAME...
"""

import fcntl
import os
import re
import struct
import subprocess
import sys
import termios
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "lib"))
from sltest import Client, Daemon, client_as, kill_leftovers, poll, scenarios  # noqa: E402
from ptyjob import PtyJob  # noqa: E402

js = scenarios()
submit, show, wait_state, samples, read, events_of = (
    js.submit, js.show, js.wait_state, js.samples, js.read, js.events_of)

CTL = os.path.abspath(os.path.join(os.environ.get("SL_BIN", "build/bin"),
                                   "stageloadctl"))
PYTHON_DIR = os.path.join(os.path.dirname(HERE), "python")


def ctl(d, *args, env=None):
    return subprocess.run([CTL, "--socket", d.socket] + list(args),
                          capture_output=True, text=True, timeout=30, env=env)


def log_of(d, jid):
    r = ctl(d, "logs", str(jid))
    assert r.returncode == 0, (r.returncode, r.stderr)
    return r.stdout


def sc_killed_marker(d, m, c):
    """A job killed for its budget: its log ends with a marker line that
    says when, by how much the system's swap grew and over which budget."""
    m.set(free_pct=80, swap_used_gib=1)
    jid = submit(c, d, "echo working; exec sleep 60",
                 swap_budget_bytes=1 << 30)
    wait_state(c, jid, "running")
    poll(lambda: "working" in log_of(d, jid), what="the job's first line")
    m.set(swap_used_gib=2.5)
    wait_state(c, jid, "killed")
    text = poll(lambda: log_of(d, jid) if "stageload:" in log_of(d, jid)
                else None, what="the marker line")
    lines = text.splitlines()
    assert lines[0] == "working", lines
    last = lines[-1]
    assert last.startswith("stageload: killed at "), last
    assert ("the system's swap grew 1.5G while it ran, over its 1.0G "
            "budget") in last, last
    # Swap growth is the system's everywhere: the record, show's words.
    det = show(c, jid)["end_detail"]
    assert ("the system's swap grew 1.5G while it ran (since admission, "
            "from 1.0G to 2.5G), over its 1.0G budget") in det, det
    assert "; its own swap 0B;" in det, det  # Linux measures VmSwap
    out = ctl(d, "show", str(jid)).stdout
    assert ("killed because the system's swap grew past its budget while "
            "it ran") in out, out
    assert "the system's swap grew 0B while it ran (peak 1.5G)" in out, out
    print("ok - killed: %r" % last)


def sc_retry_marker(d, m, c):
    """A retried job's log: attempt 1's output, the requeue marker, then
    attempt 2's output, then the final kill's marker."""
    m.set(free_pct=80, swap_used_gib=0)
    starts = d.dir + "/retry.start"
    jid = submit(c, d, "echo attempt-start; echo go >> %s; exec sleep 60"
                 % starts, swap_budget_bytes=1 << 30, retry_on_breach=1)
    wait_state(c, jid, "running")
    poll(lambda: read(starts).count("go") == 1, what="first start")
    m.set(swap_used_gib=2)
    poll(lambda: read(starts).count("go") == 2, what="second start")
    wait_state(c, jid, "running")
    m.set(swap_used_gib=3.5)
    wait_state(c, jid, "killed")
    text = poll(lambda: log_of(d, jid) if log_of(d, jid).count(
        "stageload:") == 2 else None, what="two marker lines")
    lines = text.splitlines()
    assert lines[0] == "attempt-start", lines
    assert lines[1].startswith("stageload: stopped at "), lines
    # The job's own swap is said where the system measures it (Linux).
    assert re.search(r"over its 1\.0G budget(; its own swap 0B)?; requeued for "
                     r"attempt 2$", lines[1]), lines
    assert lines[2] == "attempt-start", lines
    assert lines[3].startswith("stageload: killed at "), lines
    assert "swap grew 1.5G while it ran, over its 1.0G budget" in lines[3], lines
    assert len(lines) == 4, lines
    print("ok - retried: %r between the attempts" % lines[1])


def sc_cancel_marker(d, m, c):
    """A running job cancelled: its log says so; a job that exits on its
    own gets no marker."""
    m.set(free_pct=80)
    jid = submit(c, d, "echo up; exec sleep 60")
    wait_state(c, jid, "running")
    poll(lambda: "up" in log_of(d, jid), what="the job's line")
    c.call("cancel", {"id": jid})
    wait_state(c, jid, "killed")
    text = poll(lambda: log_of(d, jid) if "stageload:" in log_of(d, jid)
                else None, what="the marker line")
    last = text.splitlines()[-1]
    assert last.startswith("stageload: killed at ") and \
        last.endswith(": it was cancelled (cancel)"), last
    ok = submit(c, d, "echo fine")
    wait_state(c, ok, "exited")
    assert log_of(d, ok) == "fine\n", log_of(d, ok)
    print("ok - cancelled: %r; an exit on its own: none" % last)


def env_file(path):
    """The STAGELOAD_ variables a job wrote to path (env's lines)."""
    out = {}
    for line in read(path).splitlines():
        k, _, v = line.partition("=")
        if k.startswith("STAGELOAD_"):
            out[k] = v
    return out


def stage_names(c, jid):
    return [s["name"] for s in (show(c, jid).get("stages") or [])]


def sc_stage_own_daemon(d, m, c):
    """A job of this daemon whose submitter's environment named another
    daemon's socket (that one owns the socket its clients would pick):
    the job's environment names this daemon and a token, its stage
    reports (stageloadctl stage, Python's stage()) reach this daemon, and
    a report with its token that reaches the other daemon, which has a
    job of the same id, is refused there and recorded on nothing."""
    m.set(free_pct=80)
    other = Daemon(interval="0.1")
    try:
        other.start()
        oc = Client(other.socket)
        # The other daemon's job 1, the same id as ours.
        oid = oc.call("submit", {"argv": ["sleep", "60"], "cwd": other.dir,
                                 "env": js.env_list()})["id"]
        envf = d.dir + "/job.env"
        script = ("env > %s; %s stage encode && "
                  "python3 -c 'import stageload; stageload.stage(\"decode\")' "
                  "&& echo staged; exec sleep 60" % (envf, CTL))
        p = {"argv": ["bash", "-c", script], "cwd": d.dir,
             "env": js.env_list(STAGELOAD_SOCKET=other.socket,
                                STAGELOAD_JOB_TOKEN="sent-by-the-submitter",
                                PYTHONPATH=PYTHON_DIR)}
        jid = c.call("submit", p)["id"]
        assert jid == oid, (jid, oid)
        poll(lambda: "staged" in log_of(d, jid) or
             "stageload" in log_of(d, jid), what="the job's stage reports")
        assert "staged" in log_of(d, jid), log_of(d, jid)
        env = env_file(envf)
        assert env["STAGELOAD_SOCKET"] == d.socket, env
        assert env["STAGELOAD_JOB_ID"] == str(jid), env
        token = env["STAGELOAD_JOB_TOKEN"]
        assert len(token) == 32 and token != "sent-by-the-submitter", env
        assert stage_names(c, jid) == ["encode", "decode"], stage_names(c, jid)
        assert stage_names(oc, oid) == [], stage_names(oc, oid)
        # Never in a Job, not even the owner's with env.
        assert token not in str(c.call("show", {"id": jid, "env": True}))
        assert token not in str(c.call("status", {"all": True}))
        # The report reaches the other daemon (its socket named): refused.
        wrong = dict(os.environ, STAGELOAD_JOB_ID=str(jid),
                     STAGELOAD_JOB_TOKEN=token)
        r = subprocess.run([CTL, "--socket", other.socket, "stage", "lost"],
                           capture_output=True, text=True, timeout=30,
                           env=wrong)
        assert r.returncode == 77, (r.returncode, r.stderr)
        assert "STAGELOAD_JOB_TOKEN does not match" in r.stderr, r.stderr
        r = subprocess.run(
            ["python3", "-c", "import stageload, sys; "
             "sys.exit(0 if stageload.stage('lost', socket=%r) else 3)"
             % other.socket],
            capture_output=True, text=True, timeout=30,
            env=dict(wrong, PYTHONPATH=PYTHON_DIR))
        assert r.returncode == 3 and "does not match" in r.stderr, (r.returncode, r.stderr)
        assert stage_names(oc, oid) == [], stage_names(oc, oid)
        # Its own daemon takes the same token; a wrong one it refuses.
        r = subprocess.run([CTL, "--socket", d.socket, "stage", "tail"],
                           capture_output=True, text=True, timeout=30,
                           env=wrong)
        assert r.returncode == 0, (r.returncode, r.stderr)
        r = subprocess.run([CTL, "--socket", d.socket, "stage", "bad"],
                           capture_output=True, text=True, timeout=30,
                           env=dict(wrong, STAGELOAD_JOB_TOKEN="0" * 32))
        assert r.returncode == 77, (r.returncode, r.stderr)
        assert stage_names(c, jid) == ["encode", "decode", "tail"], stage_names(c, jid)
        oc.call("cancel", {"id": oid})
        c.call("cancel", {"id": jid})
        oc.close()
        print("ok - a job's stage reports reach its own daemon; with its "
              "token at the other daemon: exit 77, nothing recorded")
    finally:
        other.stop()
        kill_leftovers(other)
        other.cleanup()


def sc_stage_attached(d, m, c):
    """run: the command's environment names the daemon run talked to and
    the job's token, whatever STAGELOAD_SOCKET the caller had."""
    m.set(free_pct=80)
    envf = d.dir + "/run.env"
    r = subprocess.run(
        [CTL, "--socket", d.socket, "run", "-q", "--", "bash", "-c",
         "env > %s; %s stage decode" % (envf, CTL)],
        capture_output=True, text=True, timeout=60,
        env=dict(os.environ, STAGELOAD_SOCKET=d.dir + "/nothing.sock"))
    assert r.returncode == 0, (r.returncode, r.stderr)
    env = env_file(envf)
    assert env["STAGELOAD_SOCKET"] == d.socket, env
    jid = int(env["STAGELOAD_JOB_ID"])
    assert len(env["STAGELOAD_JOB_TOKEN"]) == 32, env
    assert stage_names(c, jid) == ["decode"], stage_names(c, jid)
    # Python's console guard and a guard() block: the same three.
    penv = dict(os.environ, STAGELOAD_SOCKET=d.dir + "/nothing.sock",
                PYTHONPATH=PYTHON_DIR)
    r = subprocess.run(
        ["python3", "-m", "stageload", "--socket", d.socket, "guard", "-q", "--",
         "bash", "-c", "env > %s.py; %s stage encode" % (envf, CTL)],
        capture_output=True, text=True, timeout=60, env=penv)
    assert r.returncode == 0, (r.returncode, r.stderr)
    env = env_file(envf + ".py")
    assert env["STAGELOAD_SOCKET"] == d.socket, env
    assert stage_names(c, int(env["STAGELOAD_JOB_ID"])) == ["encode"]
    r = subprocess.run(
        ["python3", "-c", "import os, stageload\n"
         "with stageload.guard(socket=%r, quiet=True) as g:\n"
         "    assert os.environ['STAGELOAD_SOCKET'] == %r\n"
         "    assert len(os.environ['STAGELOAD_JOB_TOKEN']) == 32\n"
         "    assert stageload.stage('block')\n"
         "    print(os.environ['STAGELOAD_JOB_ID'])\n"
         "assert 'STAGELOAD_JOB_TOKEN' not in os.environ\n"
         % (d.socket, d.socket)],
        capture_output=True, text=True, timeout=60, env=penv)
    assert r.returncode == 0, (r.returncode, r.stderr)
    assert stage_names(c, int(r.stdout.strip())) == ["block"], r.stdout
    print("ok - run, stageload guard and guard(): the command has "
          "STAGELOAD_SOCKET and a token; its stages are recorded")


def top_frame(d, want, cols=120, rows=30):
    """Run top on a pseudo-terminal until a frame shows all of want; that
    frame with the escape sequences taken out."""
    t = PtyJob([CTL, "--socket", d.socket, "top"], env={"NO_COLOR": "1"})
    fcntl.ioctl(t.fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    try:
        deadline = time.monotonic() + 15
        while True:
            t.drain(0.3)
            ends = [x.start() for x in re.finditer(rb"\033\[J", t.buf)]
            frames = []
            for e in ends:
                s = t.buf.rfind(b"\033[H", 0, e)
                if s >= 0:
                    frames.append(t.buf[s:e])
            text = [re.sub(r"\033\[[0-9;?]*[A-Za-z]", "",
                           f.decode(errors="replace")).replace("\r\n", "\n")
                    for f in frames]
            hit = [f for f in text if all(w in f for w in want)]
            if hit:
                frame = hit[-1]
                break
            if time.monotonic() > deadline:
                raise AssertionError("top never showed %r; last frame:\n%s"
                                     % (want, text[-1] if text else t.buf[-2000:]))
    finally:
        # quit and reap it however the loop ended; its exit is checked
        # only when the loop's own failure is not on its way out
        t.type(b"q")
        status = t.report()
        t.drain()
        t.wait()
    assert status == "exit 0", status
    return frame


def sc_top_ends(d, m, c):
    """top shows the last few ends under the table, newest first, the
    killed ones marked, and still a running job in the table; on a short
    terminal the job row stays and the ends give way."""
    m.set(free_pct=80, swap_used_gib=0)
    done = submit(c, d, "exit 3", name="finished")
    wait_state(c, done, "exited")
    hog = submit(c, d, "exec sleep 60", name="hog", swap_budget_bytes=1 << 30)
    wait_state(c, hog, "running")
    m.set(swap_used_gib=2)
    wait_state(c, hog, "killed")
    m.set(swap_used_gib=2)
    live = submit(c, d, "exec sleep 60", name="still-running")
    wait_state(c, live, "running")
    frame = top_frame(d, ["last ends", "still-running", "hog"])
    lines = frame.splitlines()
    at = [i for i, x in enumerate(lines) if x.startswith("last ends")][0]
    table = [x for x in lines[:at] if "still-running" in x]
    assert table, frame
    ends = lines[at + 2:at + 4]
    assert re.match(r"^! +%d +\S+ +hog +\d\d:\d\d:\d\d +killed \(swap_budget\)"
                    % hog, ends[0]), frame
    assert re.match(r"^  +%d +\S+ +finished +\d\d:\d\d:\d\d +exited 3" % done,
                    ends[1]), frame
    short = top_frame(d, ["still-running"], cols=80, rows=10)
    assert "last ends" not in short, short
    c.call("cancel", {"id": live})
    print("ok - top: %r under the table" % ends[0].strip())


def waiting(c, jid, kind):
    j = show(c, jid)
    return j if j.get("waiting_for") == kind else None


def sc_reason_settle(d, m, c):
    """settle: the reason names the job still growing and the most it
    may take (its settle time), in show, the Job and wait's line."""
    m.set(free_pct=80)
    first = submit(c, d, "exec sleep 60", name="qwen")
    wait_state(c, first, "running")
    second = submit(c, d, "exec sleep 60", name="flux")
    j = poll(lambda: waiting(c, second, "settle"), what="job 2 to wait for settle")
    a = show(c, first)
    assert j["waiting_on"] == [{"id": first, "user": a["user"], "name": "qwen"}], j
    assert j["waiting_until_ms"] == a["admitted_at_ms"] + 30000, (j, a)
    out = ctl(d, "show", str(second)).stdout
    want = ("(settle): job %d (%s, qwen) still growing, at most "
            % (first, a["user"]))
    assert want in out and " s more." in out, out
    # Not queued: neither member.
    assert "waiting_on" not in a and "waiting_until_ms" not in a, a
    r = ctl(d, "status")
    assert re.search(r"queued #1 .* settle$", r.stdout, re.M), r.stdout
    for jid in (first, second):
        c.call("cancel", {"id": jid})
    print("ok - settle: %r" % out.splitlines()[-1])


def sc_reason_head(d, m, c):
    """head: behind another user's unprivileged head, the reason names it
    and when its sole claim (hol_bound) runs out."""
    if os.geteuid() != 0:
        print("note: not root: the other user's head is not tried")
        return
    m.set(free_pct=80)
    os.chmod(d.dir, 0o755)  # the other user reaches the socket
    o = client_as(65534, d.socket)
    os.chmod(d.dir, 0o700)
    head = o.call("submit", {"argv": ["true"], "cwd": "/", "env": [],
                             "name": "big", "wait_free_pct": 95})["id"]
    mine = submit(c, d, "exec sleep 60", name="small")
    t0 = int(time.time() * 1000)
    j = poll(lambda: waiting(c, mine, "head"), what="job to wait behind the head")
    user = show(c, head)["user"]
    assert j["waiting_on"] == [{"id": head, "user": user, "name": "big"}], j
    # hol_bound is 600 s by default: the claim began when the head did.
    assert t0 - 5000 <= j["waiting_until_ms"] - 600000 <= t0 + 1000, (j, t0)
    out = ctl(d, "show", str(mine)).stdout
    assert re.search(r"holds the head of the queue: job %d \(%s, big\) until "
                     r"\d\d:\d\d, then others may pass\." % (head, user), out), out
    # The head itself waits for free memory: nobody to name.
    h = show(c, head)
    assert h["waiting_for"] == "free" and h["waiting_on"] == [], h
    assert h["waiting_until_ms"] is None, h
    c.call("cancel", {"id": mine})
    o.call("cancel", {"id": head})
    o.close()
    print("ok - head: %r" % [x for x in out.splitlines() if "head" in x][0])


def sc_reason_group(d, m, c):
    """group: the sentence names the group's setting with its real name,
    the jobs running in it, and show names the job's group."""
    m.set(free_pct=80)
    first = submit(c, d, "exec sleep 60", name="enc", group="gpu")
    wait_state(c, first, "running")
    second = submit(c, d, "exec sleep 60", name="dec", group="gpu")
    j = poll(lambda: waiting(c, second, "group"), what="job to wait for its group")
    assert [w["id"] for w in j["waiting_on"]] == [first], j
    assert j["waiting_until_ms"] is None, j
    out = ctl(d, "show", str(second)).stdout
    assert "Group: gpu." in out, out
    assert "group.gpu.max_running allows" in out and "NAME" not in out, out
    assert ": job %d (" % first in out and ", enc) running." in out, out
    for jid in (first, second):
        c.call("cancel", {"id": jid})
    print("ok - group: named, with the job running in it")


def sc_time_limit_marker(d, m, c):
    """A time limit's end gets its marker too, through the same function
    (its words are proto/names.h's for time_limit)."""
    m.set(free_pct=80)
    jid = submit(c, d, "echo up; exec sleep 60", time_limit_ms=1000)
    j = wait_state(c, jid, "killed", timeout=15)
    assert j["end_reason"] == "time_limit", j
    text = poll(lambda: log_of(d, jid) if "stageload:" in log_of(d, jid)
                else None, what="the marker line")
    last = text.splitlines()[-1]
    assert last.startswith("stageload: killed at ") and \
        last.endswith("(time_limit)"), last
    print("ok - time limit: %r" % last)


SCENARIOS = [
    ("time_limit_marker", sc_time_limit_marker, {}),
    ("reason_settle", sc_reason_settle, {"settle": "30s"}),
    ("reason_head", sc_reason_head, {}),
    ("reason_group", sc_reason_group,
     {"extra_conf": "group.gpu.max_running = 1\n"}),
    ("top_ends", sc_top_ends, {}),
    ("stage_own_daemon", sc_stage_own_daemon, {}),
    ("stage_attached", sc_stage_attached, {}),
    ("killed_marker", sc_killed_marker, {}),
    ("retry_marker", sc_retry_marker, {}),
    ("cancel_marker", sc_cancel_marker, {}),
]


def main():
    js.run_scenarios(SCENARIOS)


if __name__ == "__main__":
    main()
