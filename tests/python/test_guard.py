"""guard(): admission, breach inside the block, the kill after the grace,
the console script's exit codes, and following a process that is not a
group leader without touching its group."""

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import stageload

from conftest import bin_path, sltest, venv_bin

GiB_KB = 1 << 20


def set_free(d, pct):
    """Write the fixture and wait until the daemon has sampled it."""
    total = 16 * GiB_KB
    sltest.write_meminfo(d.proc_root, total_kb=total, avail_kb=int(total * pct / 100))
    with stageload.Client(d.socket) as c:
        sltest.poll(lambda: (c.info()["sample"] or {}).get("free_pct", -1) == pytest.approx(
            pct, abs=0.01), what="the daemon to see free %d%%" % pct)


def set_swap_used(d, mib):
    sltest.write_meminfo(d.proc_root, swap_free_kb=4 * GiB_KB - mib * 1024)


def script(tmp_path, body, name="guarded.py"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(body))
    return str(p)


def wait_line(path, text, timeout=15):
    def has():
        try:
            with open(path) as f:
                return text in f.read()
        except OSError:
            return False
    sltest.poll(has, timeout=timeout, what="%r in %s" % (text, path))


def read(path):
    with open(path) as f:
        return f.read()


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is not alive
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_queue_line_rounds_honestly():
    """39.7 % against 40 % is "39.7% < 40%", never "40% < 40%", as
    stageloadctl says it; an unknown waiting_for is "other"."""
    from stageload.guard import queue_line
    assert queue_line(1, 1, 39.7, 40, "free") == "queued: position 1 of 1, free 39.7% < 40%"
    assert queue_line(2, 3, 34.2, 40, "free") == "queued: position 2 of 3, free 34% < 40%"
    assert queue_line(1, 1, 39.9999, 40, "free").endswith("free 39.999% < 40%")
    assert queue_line(1, 1, 50, 40, "expect") == (
        "queued: position 1 of 1, free 50%, less than 40% once memory promised to "
        "running jobs counts")
    assert queue_line(1, 1, 50, 40, "held").endswith("free 50%, held: stageloadctl release ID")
    assert queue_line(1, 1, 50, 40, "held", job_id=12).endswith("free 50%, held: stageloadctl release 12")
    assert queue_line(1, 1, 50, 40, "after 7").endswith("waiting for job 7 to end")
    assert queue_line(1, 1, 50, 40, "later").endswith("waiting (other: later)")


def test_waits_for_free_and_enters_within_an_interval(env, tmp_path):
    set_free(env, 20)
    out = str(tmp_path / "out")
    s = script(tmp_path, """
        import sys, time, stageload
        with stageload.guard(wait_free=40):
            open(sys.argv[1], "w").write("entered %d\\n" % (time.time() * 1000))
    """)
    p = subprocess.Popen([sys.executable, s, out], stderr=subprocess.PIPE, text=True)
    try:
        with stageload.Client() as c:
            job = sltest.poll(lambda: next((j for j in c.jobs() if j["state"] == "queued"),
                                           None), what="the guarded job queued")
            assert job["waiting_for"] == "free" and job["attached"]
            time.sleep(0.5)  # it must still wait: free is 20 % < 40 %
            assert c.show(job["id"])["state"] == "queued" and not os.path.exists(out)
            rise_ms = time.time() * 1000
            sltest.write_meminfo(env.proc_root, total_kb=16 * GiB_KB, avail_kb=8 * GiB_KB)
            assert p.wait(15) == 0
            # the queue line of stageloadctl run (not a terminal: one line a change)
            assert "queued: position 1 of 1, free 20% < 40%\n" in p.stderr.read()
            entered = int(read(out).split()[1])
            admitted = c.show(job["id"])["admitted_at_ms"]
            # In the daemon's own time: admitted at the first sample that
            # saw the rise (interval 100 ms), whatever the load here ...
            adm = next(e for e in c.events(job_id=job["id"], limit=100)["events"]
                       if e["kind"] == "admitted")["detail"]
            first = next(b["ts_ms"] for b in c.history(since_ms=int(rise_ms) - 200,
                                                       step_ms=1)["buckets"]
                         if b["free_pct"]["max"] >= 40)
            assert adm["sampled_at_ms"] == first, (adm, first)
            # ... and in the wall clock, loosely (a slow build, a busy
            # machine): entered soon after.
            assert admitted - rise_ms <= 100 + 1500, (admitted - rise_ms)
            assert entered - rise_ms <= 100 + 1500, (entered - rise_ms)
            assert c.show(job["id"])["state"] == "exited"
    finally:
        p.kill()
        p.wait()


def test_breach_raises_inside_the_block(env, tmp_path):
    out = str(tmp_path / "out")
    s = script(tmp_path, """
        import sys, time, stageload
        out = open(sys.argv[1], "w", buffering=1)
        try:
            with stageload.guard(swap_budget="100M", quiet=True) as g:
                stageload.stage("decode")
                out.write("in %d\\n" % g.job_id)
                while True:
                    time.sleep(0.05)
        except stageload.SwapBudgetExceeded as e:
            out.write("breach: " + e.paragraph + "\\n")
        finally:
            out.write("finally ran\\n")
        sys.exit(7)
    """)
    p = subprocess.Popen([sys.executable, s, out])
    try:
        wait_line(out, "in ")
        jid = int(read(out).split()[1])
        set_swap_used(env, 500)
        assert p.wait(10) == 7  # it left before the grace (1 s) by itself
        text = read(out)
        assert "breach: killed during decode at " in text
        assert "over its 100M budget" in text and "finally ran" in text
        with stageload.Client() as c:
            job = c.wait(jid, timeout=10)
        assert job["state"] == "killed" and job["end_reason"] == "swap_budget"
    finally:
        p.kill()
        p.wait()


def test_a_block_that_ignores_the_breach_is_killed_after_the_grace(env, tmp_path):
    out = str(tmp_path / "out")
    s = script(tmp_path, """
        import sys, time, stageload
        out = open(sys.argv[1], "w", buffering=1)
        with stageload.guard(swap_budget="100M", quiet=True) as g:
            out.write("in %d\\n" % g.job_id)
            while True:
                try:
                    time.sleep(0.05)
                except stageload.SwapBudgetExceeded:
                    out.write("ignored\\n")
    """)
    p = subprocess.Popen([sys.executable, s, out])
    try:
        wait_line(out, "in ")
        jid = int(read(out).split()[1])
        set_swap_used(env, 500)
        wait_line(out, "ignored")
        assert p.wait(10) == -signal.SIGKILL
        # In the daemon's own time: killed a grace (1 s) after the breach.
        with stageload.Client() as c:
            c.wait(jid, timeout=10)
            ts = {e["kind"]: e["ts_ms"] for e in c.events(job_id=jid, limit=100)["events"]}
        assert 1000 <= ts["killed"] - ts["breach"] <= 3000, ts
    finally:
        p.kill()
        p.wait()


def test_console_script_exit_codes(env, tmp_path):
    sl = venv_bin("stageload")
    assert subprocess.run([sl, "guard", "-q", "--", "true"]).returncode == 0
    assert subprocess.run([sl, "guard", "-q", "--", "sh", "-c", "exit 3"]).returncode == 3
    assert subprocess.run([sl, "guard", "-q", "--", "no-such-command-sl"]).returncode == 127
    r = subprocess.run([sl, "guard", "-q", "--", "sh", "-c", "echo $STAGELOAD_JOB_ID"],
                       capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip().isdigit()
    # the same codes as stageloadctl guard
    ctl = bin_path("stageloadctl")
    assert subprocess.run([ctl, "guard", "-q", "--", "sh", "-c", "exit 3"]).returncode == 3
    # a breach: 124 from both
    for n, prog in enumerate((sl, ctl)):
        mark = str(tmp_path / ("started%d" % n))
        p = subprocess.Popen([prog, "guard", "--swap-budget", "100M", "--", "sh", "-c",
                              "touch %s; sleep 30" % mark], stderr=subprocess.PIPE, text=True)
        try:
            sltest.poll(lambda: os.path.exists(mark), what="the command to start")
            set_swap_used(env, 500)
            assert p.wait(10) == 124
            assert "killed: the system's swap grew by 500M while it ran, past its budget of 100M" in p.stderr.read()
        finally:
            p.kill()
            p.wait()
        set_swap_used(env, 0)
        with stageload.Client() as c:
            sltest.poll(lambda: c.info()["sample"]["swap_used_bytes"] == 0,
                        what="the daemon to see swap back to 0")
    # no daemon: 69, as stageloadctl
    r = subprocess.run([sl, "--socket", str(tmp_path / "none.sock"), "guard", "--", "true"],
                       capture_output=True, text=True)
    assert r.returncode == 69 and "daemon not running at" in r.stderr


def test_not_a_group_leader_followed_with_children_group_spared(env, tmp_path):
    """The guarded python is started by a shell that leads the group and
    also started a sibling; the breach ends python and its child, never
    the shell or the sibling."""
    out = str(tmp_path / "out")
    s = script(tmp_path, """
        import os, subprocess, sys, time, stageload
        out = open(sys.argv[1], "w", buffering=1)
        assert os.getpgrp() != os.getpid()
        with stageload.guard(swap_budget="100M", quiet=True):
            child = subprocess.Popen(["sleep", "60"])
            out.write("pids %d %d\\n" % (os.getpid(), child.pid))
            while True:
                try:
                    time.sleep(0.05)
                except stageload.SwapBudgetExceeded:
                    pass  # ignore it: the SIGKILL comes at the grace
    """)
    shell = subprocess.Popen(["sh", "-c", 'sleep 60 & echo "sibling $!" > %s.sib; "%s" "%s" "%s"; '
                              'wait' % (out, sys.executable, s, out)],
                             start_new_session=True)
    try:
        wait_line(out, "pids")
        py_pid, child_pid = map(int, read(out).split()[1:3])
        wait_line(out + ".sib", "sibling")
        sib = int(read(out + ".sib").split()[1])
        assert os.getpgid(sib) == shell.pid == os.getpgid(py_pid)
        set_swap_used(env, 500)
        sltest.poll(lambda: not alive(py_pid) and not alive(child_pid), timeout=10,
                    what="the guarded process and its child to end")
        time.sleep(1.5)  # past the grace: a group SIGKILL would have come by now
        assert alive(sib), "the sibling in the shell's group was signalled"
        assert shell.poll() is None, "the shell was signalled"
    finally:
        try:
            os.killpg(shell.pid, signal.SIGKILL)
        except OSError:
            pass
        shell.wait()


def test_edges(env, tmp_path, monkeypatch):
    with pytest.raises(ValueError):
        with stageload.guard(retry_on_breach=1):
            pass
    errs = []

    def in_thread():
        try:
            with stageload.guard():
                pass
        except RuntimeError as e:
            errs.append(e)
    t = threading.Thread(target=in_thread)
    t.start()
    t.join()
    assert errs and "main thread" in str(errs[0])
    # no daemon: DaemonNotRunning, or with required=False one warning and an unguarded run
    monkeypatch.setenv("STAGELOAD_SOCKET", str(tmp_path / "none.sock"))
    with pytest.raises(stageload.DaemonNotRunning):
        with stageload.guard():
            pass
    ran = []
    with pytest.warns(UserWarning, match="unguarded"):
        with stageload.guard(required=False):
            ran.append(1)
    assert ran == [1]
    # a guarded block: the handler is restored and STAGELOAD_JOB_ID unset after it
    monkeypatch.setenv("STAGELOAD_SOCKET", env.socket)
    before = signal.getsignal(signal.SIGTERM)
    with stageload.guard(quiet=True) as g:
        assert os.environ["STAGELOAD_JOB_ID"] == str(g.job_id)
        assert signal.getsignal(signal.SIGTERM) != before
    assert signal.getsignal(signal.SIGTERM) == before
    assert "STAGELOAD_JOB_ID" not in os.environ
    with stageload.Client() as c:
        assert c.show(g.job_id)["state"] == "exited"


def test_inside_a_job_registers_nothing_and_reports_stages(env, tmp_path):
    s = script(tmp_path, """
        import stageload
        with stageload.guard(swap_budget="100M") as g:
            assert g.inside_job and g.client is None
            g.stage("load")
            stageload.stage("run")
    """)
    with stageload.Client() as c:
        jid = c.submit([sys.executable, s], cwd=str(tmp_path))["id"]
        job = c.wait(jid, timeout=30)
        assert job["state"] == "exited" and job["exit_code"] == 0, c.logs(jid)["data"]
        assert [x["name"] for x in c.show(jid)["stages"]] == ["load", "run"]
        assert len(c.jobs(all=True)) == 1  # guard registered nothing


def test_decorator_retries_after_a_breach(env, tmp_path):
    out = str(tmp_path / "out")
    s = script(tmp_path, """
        import sys, time, stageload
        out = open(sys.argv[1], "w", buffering=1)
        n = []

        @stageload.guard(swap_budget="100M", retry_on_breach=1, quiet=True)
        def work():
            n.append(1)
            out.write("attempt %d\\n" % len(n))
            if len(n) == 1:
                while True:
                    time.sleep(0.05)
            return "done"

        out.write(work() + "\\n")
    """)
    p = subprocess.Popen([sys.executable, s, out])
    try:
        wait_line(out, "attempt 1")
        set_swap_used(env, 500)
        wait_line(out, "attempt 2")
        assert p.wait(10) == 0
        assert read(out).endswith("done\n")
        with stageload.Client() as c:
            job = c.jobs(all=True)[0]
        assert job["attempt"] == 2 and job["state"] == "exited"
    finally:
        p.kill()
        p.wait()


def test_daemon_restart_during_the_block(env, tmp_path):
    """The guard's connection is gone after a restart: leaving the block
    reconnects, resumes the job and reports its end (exited, not lost); a
    breach after the restart is still SwapBudgetExceeded."""
    out = str(tmp_path / "out")
    go = tmp_path / "go"
    s = script(tmp_path, """
        import os, sys, time, stageload
        out = open(sys.argv[1], "w", buffering=1)
        with stageload.guard(quiet=True) as g:
            out.write("in %d\\n" % g.job_id)
            while not os.path.exists(sys.argv[2]):
                time.sleep(0.05)
        out.write("left\\n")
        try:
            with stageload.guard(swap_budget="100M", quiet=True) as g:
                out.write("second %d\\n" % g.job_id)
                while True:
                    time.sleep(0.05)
        except stageload.SwapBudgetExceeded as e:
            out.write("breach: %s\\n" % e.paragraph)
    """)
    p = subprocess.Popen([sys.executable, s, out, str(go)])
    try:
        wait_line(out, "in ")
        jid = int(read(out).split()[1])
        env.stop()
        env.start()
        go.write_text("")
        wait_line(out, "second ")
        with stageload.Client() as c:
            job = c.show(jid)
        assert job["state"] == "exited" and job["exit_code"] == 0, job
        jid2 = int(read(out).split("second ")[1].split()[0])
        env.stop()
        env.start()
        with stageload.Client() as c:
            sltest.poll(lambda: c.show(jid2)["state"] == "running", what="re-adopted")
        set_swap_used(env, 500)
        assert p.wait(10) == 0
        assert "breach: killed: the system's swap grew 500M while it ran, over its 100M budget" in read(out)
    finally:
        p.kill()
        p.wait()


def test_console_guard_on_a_terminal(env):
    """As stageloadctl guard on a terminal: the queue line is redrawn in
    place, the command owns the terminal (reads it, gets Ctrl-C)."""
    from ptyjob import PtyJob
    set_free(env, 25)
    t = PtyJob([venv_bin("stageload"), "guard", "--wait-free", "40", "--", "sh", "-c",
                'trap "echo got-int; exit 5" INT; echo ready; read line; echo "read-$line"; '
                'while :; do sleep 0.05; done'])
    try:
        t.read_until(b"\r\x1b[Kqueued: position 1 of 1, free 25% < 40%")
        sltest.write_meminfo(env.proc_root)
        t.read_until(b"ready")
        t.type(b"hi\n")
        t.read_until(b"read-hi")
        t.type(b"\x03")
        t.read_until(b"got-int")
        assert t.report() == "exit 5"
        t.wait()
    finally:
        t.kill()


def test_console_guard_ctrl_z_stops_both(env):
    from ptyjob import PtyJob
    t = PtyJob([venv_bin("stageload"), "guard", "--", "sh", "-c",
                'trap "echo got-int; exit 5" INT; echo ready; read line; echo "read-$line"; '
                'while :; do sleep 0.05; done'])
    try:
        t.read_until(b"ready")
        t.type(b"\x1a")  # Ctrl-Z at the terminal
        assert t.report() == "stopped"
        t.fg()
        t.type(b"hi\n")  # the command has the terminal again
        t.read_until(b"read-hi")
        t.type(b"\x03")
        t.read_until(b"got-int")
        assert t.report() == "exit 5"
        t.wait()
    finally:
        t.kill()
