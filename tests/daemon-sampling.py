"""stageloadd end to end: sampling, info, history, subscribe and meter,
signals, and the socket's life cycle, against the real daemon on a private
socket, database and fixture proc root.
"""

import os
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
from sltest import Client, Daemon, RpcError, poll, write_meminfo, write_psi  # noqa: E402

KB = 1024


def sample(c):
    s = c.call("info")["sample"]
    assert s is not None, "info has no sample"
    return s


def check_info(d):
    c = Client(d.socket)
    info = c.call("info")
    for k in ("daemon_version", "version", "os", "interval_ms", "started_at_ms",
              "socket", "db_path", "db_bytes", "storage_error", "sample", "jobs"):
        assert k in info, "info lacks %s: %r" % (k, info)
    assert info["interval_ms"] == 100, info
    assert info["socket"] == d.socket and info["db_path"] == d.db, info
    assert info["storage_error"] is None, info
    s = poll(lambda: c.call("info")["sample"], what="a first sample")
    # The fixture of sltest: 16 GiB total, 8 GiB available, 4 GiB swap, none used.
    assert s["total_bytes"] == 16 << 30, s
    assert s["available_bytes"] == 8 << 30, s
    assert abs(s["free_pct"] - 50.0) < 0.01, s
    assert s["swap_total_bytes"] == 4 << 30 and s["swap_used_bytes"] == 0, s
    assert s["pressure"] == "normal" and s["psi_some_avg10"] == 0.0, s
    assert abs(s["sampled_at_ms"] - time.time() * 1000) < 10000, s

    # Change the fixture: the daemon sees it within a few samples.
    write_meminfo(d.proc_root, total_kb=16 << 20, avail_kb=4 << 20,
                  swap_total_kb=4 << 20, swap_free_kb=3 << 20)
    write_psi(d.proc_root, 55.0)
    s = poll(lambda: (lambda s: s if s["swap_used_bytes"] == 1 << 30 else None)(sample(c)),
             timeout=5, what="info to show the new fixture")
    assert abs(s["free_pct"] - 25.0) < 0.01, s
    assert s["available_bytes"] == 4 << 30, s
    assert s["pressure"] == "critical" and abs(s["psi_some_avg10"] - 55.0) < 0.01, s
    write_psi(d.proc_root, 20.0)
    poll(lambda: sample(c)["pressure"] == "warn", timeout=5, what="pressure warn")
    c.close()


def check_history(d, t0_ms):
    c = Client(d.socket)
    # Both the first fixture (swap 0) and the second (1 GiB used) are in
    # history; polled, since the second may not have been sampled yet.
    def both():
        h = c.call("history", {"since_ms": t0_ms - 1000, "step_ms": 1000})
        b = h["buckets"]
        lo = min((x["swap_used_bytes"]["min"] for x in b), default=None)
        hi = max((x["swap_used_bytes"]["max"] for x in b), default=None)
        return h if lo == 0 and hi == 1 << 30 else None
    h = poll(both, timeout=10, what="history with both fixtures")
    assert h["tier"] == "raw", h["tier"]
    assert h["step_ms"] == 1000 and h["since_ms"] == t0_ms - 1000, h
    for b in h["buckets"]:
        assert b["n"] >= 1, b
        assert b["free_pct"]["min"] <= b["free_pct"]["avg"] <= b["free_pct"]["max"], b
        assert b["pressure_max"] in ("normal", "warn", "critical", "unknown"), b
        assert isinstance(b["gap"], bool), b
    ts = [b["ts_ms"] for b in h["buckets"]]
    assert ts == sorted(ts), ts

    # Default step: the span / 60, at least the interval.
    h = c.call("history", {"since_ms": t0_ms - 60000, "until_ms": t0_ms})
    assert h["step_ms"] == 1000, h["step_ms"]

    for bad in ({}, {"since_ms": "yesterday"}, {"since_ms": -1}, {"since_ms": 1.5},
                {"since_ms": 10, "until_ms": 5}, {"since_ms": 0, "step_ms": 0},
                {"since_ms": 0, "bogus": 1}):
        try:
            c.call("history", bad)
            raise AssertionError("history %r was accepted" % bad)
        except RpcError as e:
            assert e.code == -32602, (bad, e)
    try:
        c.call("history", {"since_ms": 0, "until_ms": 10 ** 9, "step_ms": 1})
        raise AssertionError("a billion buckets were accepted")
    except RpcError as e:
        assert e.code == -32004, e
    c.close()


def check_history_current():
    """Samples are committed in batches (every minute at 0.5 s), but a history
    query commits what is pending first: what info shows is in history at
    once, not a batch later."""
    d = Daemon(interval="0.5")
    with d:
        c = Client(d.socket)
        poll(lambda: c.call("info")["sample"], what="a first sample")
        write_meminfo(d.proc_root, swap_total_kb=4 << 20, swap_free_kb=1 << 20)
        poll(lambda: sample(c)["swap_used_bytes"] == 3 << 30, timeout=5,
             what="info to show 3 GiB of swap used")
        now_ms = int(time.time() * 1000)
        h = c.call("history", {"since_ms": now_ms - 60000, "step_ms": 500})
        top = max(b["swap_used_bytes"]["max"] for b in h["buckets"])
        assert top == 3 << 30, h
        c.close()


def check_batches_committed(d):
    """Without any history query, samples still reach the file in batches
    (every 120 samples, 12 s at 0.1 s): a reader of the database sees new
    samples within a batch's time and a little. Only a batch commits
    samples, so any new one proves it."""
    import sqlite3
    t_ms = int(time.time() * 1000)
    db = sqlite3.connect("file:%s?mode=ro" % d.db, uri=True, timeout=5)

    def committed():
        n = db.execute("SELECT count(*) FROM samples WHERE ts_ms > ?",
                       (t_ms,)).fetchone()[0]
        return n > 0
    try:
        poll(committed, timeout=20, step=0.2,
             what="a batch of samples in the file")
    finally:
        db.close()


def check_big_history(d):
    """An answer as large as the limits allow reaches the caller: 90000
    buckets (the limit is 100000) make a reply line of about 20 MiB, more
    than both the request line limit (4 MiB) and the unread output limit
    (16 MiB), which bound what a client sends and leaves unread, not what
    it asked for."""
    import sqlite3
    n = 90000
    t0 = int(time.time() * 1000) - 10 ** 8  # a day ago: no other samples
    db = sqlite3.connect(d.db, isolation_level=None, timeout=5)
    db.execute("BEGIN")
    db.executemany("INSERT INTO samples (ts_ms, free_bp, available_bytes,"
                   " swap_used_bytes, pressure, compressed_bytes, wired_bytes)"
                   " VALUES (?, 7953, 13743895347, 1073741824, 1, 0, 0)",
                   ((t0 + i,) for i in range(n)))
    db.execute("COMMIT")
    db.close()
    ctl = os.path.join(os.environ.get("SL_BIN", "build/bin"), "stageloadctl")
    out = subprocess.run([ctl, "--socket", d.socket, "history", "--since", str(t0),
                          "--until", str(t0 + n), "--step", "1ms", "--format", "csv"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    rows = [line for line in out.stdout.splitlines() if line[:1].isdigit()]
    assert len(rows) == n, len(rows)


def check_subscribe(d):
    c = Client(d.socket)
    r = c.call("subscribe", {"samples": True})
    assert r == {"interval_ms": 100}, r
    a = c.notification("sample", timeout=5)["params"]
    b = c.notification("sample", timeout=5)["params"]
    assert b["sampled_at_ms"] > a["sampled_at_ms"], (a, b)
    assert "free_pct" in a and "pid" not in a, a
    assert c.call("unsubscribe") == {}
    # After unsubscribe no more samples arrive: what was in flight is drained
    # by a round trip, then a quiet period of several intervals.
    c.call("info")
    c.notes.clear()
    time.sleep(0.5)  # a negative check: nothing must arrive in 5 intervals
    c.call("info")
    assert not [n for n in c.notes if n.get("method") == "sample"], c.notes

    # Metering a process tree: the daemon measures it in the same tick.
    child = subprocess.Popen(["sleep", "60"])
    try:
        c.call("subscribe", {"pid": child.pid})
        n = c.notification("sample", timeout=5)["params"]
        assert n["pid"] == child.pid, n
        assert n["nprocs"] >= 1 and n["footprint_bytes"] >= 0, n
        assert isinstance(n["swap_bytes"], int), n
        child.kill()
        child.wait()
        gone = c.notification("process_gone", timeout=5)["params"]
        assert gone == {"pid": child.pid}, gone
        # Plain samples go on without the pid members.
        c.notes.clear()
        n = c.notification("sample", timeout=5)["params"]
        assert "pid" not in n, n
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()

    # A pid that does not exist.
    dead = subprocess.Popen(["true"])
    dead.wait()
    try:
        c.call("subscribe", {"pid": dead.pid})
        raise AssertionError("metering a dead pid was accepted")
    except RpcError as e:
        assert e.code == -32007, e
    for bad in ({"pid": "1"}, {"pid": 0}, {"samples": 1}, {"nope": True}):
        try:
            c.call("subscribe", bad)
            raise AssertionError("subscribe %r was accepted" % bad)
        except RpcError as e:
            assert e.code == -32602, (bad, e)
    c.close()


def check_event_subscription(d):
    """subscribe with events: job events arrive as `event` notifications."""
    c = Client(d.socket)
    c.call("subscribe", {"samples": False, "events": True})
    job = c.call("submit", {"argv": ["true"], "cwd": "/", "env": ["PATH=/usr/bin:/bin"],
                            "name": "evt"})
    kinds = []
    while "exited" not in kinds and "failed" not in kinds:
        e = c.notification("event", timeout=10)["params"]
        if e["job_id"] == job["id"]:
            kinds.append(e["kind"])
    assert kinds[0] == "submitted" and kinds[-1] == "exited", kinds
    assert not [n for n in c.notes if n.get("method") == "sample"], c.notes
    c.close()


def check_meter_permission(d):
    """Another user may not meter our process (needs root to become one)."""
    if os.geteuid() != 0:
        print("note: not root, skipping the other-user meter check")
        return
    os.chmod(d.dir, 0o755)
    child = subprocess.Popen(["sleep", "60"])
    # Self-contained: the other user may not be able to read this tree.
    prog = (
        "import json, socket\n"
        "s = socket.socket(socket.AF_UNIX); s.settimeout(10); s.connect(%r)\n"
        "f = s.makefile('rwb')\n"
        "def call(i, m, p):\n"
        "    f.write(json.dumps({'jsonrpc': '2.0', 'id': i, 'method': m, 'params': p}).encode() + b'\\n')\n"
        "    f.flush(); return json.loads(f.readline())\n"
        "assert call(1, 'hello', {'version': 1})['result']['uid'] == 65534\n"
        "r = call(2, 'subscribe', {'pid': %d})\n"
        "print(r['error']['code'] if 'error' in r else 'accepted')\n"
    ) % (d.socket, child.pid)
    python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
    try:
        out = subprocess.run([python, "-c", prog], cwd="/", capture_output=True, text=True,
                             timeout=30, preexec_fn=lambda: (os.setgid(65534), os.setuid(65534)))
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "-32002", out.stdout + out.stderr
    finally:
        child.kill()
        child.wait()
        os.chmod(d.dir, 0o700)


def check_second_daemon(d):
    """A second daemon on the same socket refuses to start and leaves the
    first one's socket in place."""
    args = list(d.args)
    args[args.index("--db") + 1] = os.path.join(d.dir, "other.db")
    out = subprocess.run(args, capture_output=True, text=True, timeout=30)
    assert out.returncode == 1, (out.returncode, out.stderr)
    assert "already running" in out.stderr, out.stderr
    assert os.path.exists(d.socket)
    c = Client(d.socket)
    assert c.call("info")["sample"] is not None
    c.close()


def check_sighup(d):
    with open(os.path.join(d.dir, "stageload.conf"), "a") as f:
        f.write("hello_timeout = 7s\n")
    d.proc.send_signal(signal.SIGHUP)
    poll(lambda: "re-read" in d.log_text(), timeout=5, what="SIGHUP to be logged")
    assert d.alive()
    c = Client(d.socket)
    assert c.call("info")["sample"] is not None
    c.close()


def check_stop(d):
    rc = d.stop(signal.SIGTERM)
    assert rc == 0, "exit status %r\n%s" % (rc, d.log_text())
    assert not os.path.exists(d.socket), "socket left behind"
    assert d.integrity() == "ok", d.integrity()


def check_restart_after_crash(d, t0_ms):
    """SIGKILL leaves a stale socket; the next start removes it, and history
    shows the restart as a gap."""
    d.start()
    d.proc.send_signal(signal.SIGKILL)
    d.proc.wait()
    assert os.path.exists(d.socket), "socket should be left by SIGKILL"
    d.start()
    assert "removed stale socket" in d.log_text()
    c = Client(d.socket)
    restarted_ms = int(time.time() * 1000)
    poll(lambda: c.call("info")["sample"], what="a sample after restart")

    def gap():
        h = c.call("history", {"since_ms": t0_ms - 1000, "step_ms": 1000})
        return [b for b in h["buckets"] if b["gap"] and b["ts_ms"] > t0_ms]
    g = poll(gap, timeout=10, what="history to show the restart as a gap")
    assert g[-1]["ts_ms"] <= restarted_ms + 1000, (g, restarted_ms)
    c.close()
    rc = d.stop()
    assert rc == 0, rc
    assert d.integrity() == "ok"


def check_term_while_starting():
    """SIGTERM the moment the socket appears, while the daemon still opens
    its database: it stops cleanly (exit 0) and removes the socket."""
    for _ in range(5):
        d = Daemon(interval="0.1")
        try:
            d.proc = subprocess.Popen(d.args,
                                      stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL)
            # A busy poll: the window is the few milliseconds the start
            # takes after the socket is bound.
            deadline = time.monotonic() + 10
            while (not os.path.exists(d.socket) and d.proc.poll() is None
                   and time.monotonic() < deadline):
                pass
            d.proc.send_signal(signal.SIGTERM)
            rc = d.proc.wait(10)
            assert rc == 0, rc
            assert not os.path.exists(d.socket), "socket left behind"
        finally:
            if d.proc.poll() is None:
                d.proc.kill()
                d.proc.wait()
            d.cleanup()


def main():
    t0_ms = int(time.time() * 1000)
    d = Daemon(interval="0.1", config="# test config\nverbose = 1\n")
    with d:
        check_info(d)
        check_batches_committed(d)
        check_history(d, t0_ms)
        check_big_history(d)
        check_subscribe(d)
        check_event_subscription(d)
        check_meter_permission(d)
        check_second_daemon(d)
        check_sighup(d)
        check_stop(d)
        check_restart_after_crash(d, t0_ms)
    check_history_current()
    check_term_while_starting()
    print("ok")


if __name__ == "__main__":
    main()
