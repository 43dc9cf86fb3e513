"""Leaks: stageloadd under valgrind through a session that touches every
path that allocates per client or per job, then SIGTERM. It starts on a
database that a killed daemon left with jobs running, ended and queued, so
re-adoption is covered too. valgrind must find
no error and no definite or indirect leak (it exits 99 otherwise).

The session: hello/info/status/history, sample subscribers (one through
`stageloadctl meter`), detached jobs (exit code, logs, logs -f, wait),
cancels of a queued and of a running job, a breach kill, attached jobs
(normal end; client gone while queued; client gone while running), clients
that disconnect mid-line, mid-request, with deferred waits and log follows
outstanding, bad requests, a spawn failure, events -f.

Run by tests/leaks.sh; VALGRIND overrides the valgrind command.
"""

import glob
import os
import shlex
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "lib"))
from sltest import Client, Daemon, RpcError, kill_leftovers, poll, write_meminfo  # noqa: E402

GIB_KB = 1 << 20
TOTAL_KB = 16 * GIB_KB
SWAP_TOTAL_KB = 64 * GIB_KB


class Mem:
    def __init__(self, d):
        self.d = d

    def set(self, free_pct=80, swap_used_gib=0):
        write_meminfo(self.d.proc_root, total_kb=TOTAL_KB,
                      avail_kb=int(TOTAL_KB * free_pct / 100),
                      swap_total_kb=SWAP_TOTAL_KB,
                      swap_free_kb=SWAP_TOTAL_KB - swap_used_gib * GIB_KB)


def env():
    return ["PATH=" + os.environ.get("PATH", "/usr/bin:/bin")]


def state(c, jid, *states, timeout=30):
    return poll(lambda: (lambda j: j if j["state"] in states else None)(
        c.call("show", {"id": jid}, timeout=20)), timeout=timeout, step=0.1,
        what="job %d to be %s" % (jid, "/".join(states)))


def session(d, m):
    ctl = os.path.join(d.bin, "stageloadctl")
    c = Client(d.socket, timeout=30)
    poll(lambda: c.call("info")["sample"], timeout=30, step=0.1, what="a first sample")
    c.call("status", {"all": True})
    now = int(time.time() * 1000)
    c.call("history", {"since_ms": now - 60000, "until_ms": now, "step_ms": 1000})

    # Sample subscribers: one reads a few, one goes away unread.
    s1 = Client(d.socket, timeout=30)
    s1.call("subscribe", {"samples": True, "events": True})
    for _ in range(3):
        s1.notification("sample", timeout=30)
    s2 = Client(d.socket, timeout=30)
    s2.call("subscribe", {"samples": True})
    s2.close()
    subprocess.run([ctl, "--socket", d.socket, "meter", "--count", "3"], check=True,
                   stdout=subprocess.DEVNULL, timeout=60)

    # Detached: an exit code, its log, a wait.
    j1 = c.call("submit", {"argv": ["sh", "-c", "echo out; echo err >&2; exit 3"],
                           "cwd": d.dir, "env": env(), "name": "leak-exit"})["id"]
    w = Client(d.socket, timeout=30)
    r = w.call("wait", {"id": j1}, timeout=60)
    assert r["state"] == "exited" and r["exit_code"] == 3, r
    c.call("logs", {"id": j1})
    c.call("logs", {"id": j1, "follow": True}, timeout=30)
    w.close()
    subprocess.run([ctl, "--socket", d.socket, "logs", str(j1)], check=True,
                   stdout=subprocess.DEVNULL, timeout=60)

    # A spawn failure.
    jf = c.call("submit", {"argv": ["/nonexistent/leak"], "cwd": d.dir, "env": env()})["id"]
    state(c, jf, "failed")

    # A running job followed and waited for by clients that then vanish.
    j2 = c.call("submit", {"argv": ["sh", "-c", "while :; do echo tick; sleep 0.2; done"],
                           "cwd": d.dir, "env": env()})["id"]
    state(c, j2, "running")
    f = Client(d.socket, timeout=30)
    f.send_raw(b'{"jsonrpc":"2.0","id":1,"method":"logs","params":{"id":%d,"follow":true}}\n'
               % j2)
    f.send_raw(b'{"jsonrpc":"2.0","id":2,"method":"wait","params":{"id":%d}}\n' % j2)
    f.send_raw(b'{"jsonrpc":"2.0","id":3,"method":"events","params":{"follow":true}}\n')
    f.read_msg(timeout=30)
    f.close()
    # Cancel a running job.
    c.call("cancel", {"id": j2})
    state(c, j2, "killed")

    # Cancel a queued job.
    jq = c.call("submit", {"argv": ["true"], "cwd": d.dir, "env": env(),
                           "wait_free_pct": 99})["id"]
    c.call("cancel", {"id": jq})
    state(c, jq, "cancelled")

    # A breach kill.
    jb = c.call("submit", {"argv": ["sleep", "60"], "cwd": d.dir, "env": env(),
                           "swap_budget_bytes": 1 << 30})["id"]
    state(c, jb, "running")
    m.set(swap_used_gib=2)
    j = state(c, jb, "killed")
    assert j["end_reason"] == "swap_budget", j
    m.set(swap_used_gib=2)

    # Attached: a normal end.
    a = Client(d.socket, timeout=30)
    ja = a.call("submit", {"argv": ["sleep", "0.2"], "cwd": d.dir, "attached": True})["id"]
    a.notification("admitted", timeout=30)
    p = subprocess.Popen(["sleep", "0.2"], start_new_session=True)
    a.call("job_pid", {"id": ja, "pid": p.pid})
    p.wait()
    a.call("job_exit", {"id": ja, "exit_code": 0})
    a.close()
    # Attached, client gone while queued.
    b = Client(d.socket, timeout=30)
    jq2 = b.call("submit", {"argv": ["true"], "cwd": d.dir, "attached": True,
                            "wait_free_pct": 99})["id"]
    b.notification("queue", timeout=30)
    b.close()
    state(c, jq2, "cancelled")
    # Attached, client gone while running: enforced, then lost.
    e = Client(d.socket, timeout=30)
    je = e.call("submit", {"argv": ["sleep"], "cwd": d.dir, "attached": True})["id"]
    e.notification("admitted", timeout=30)
    p = subprocess.Popen(["sleep", "1"], start_new_session=True)
    e.call("job_pid", {"id": je, "pid": p.pid})
    e.close()
    p.wait()
    state(c, je, "lost")

    # The CLI's own attached run.
    subprocess.run([ctl, "--socket", d.socket, "run", "--", "true"], check=True,
                   timeout=60)

    # Bad input and clients that leave mid-way.
    for raw in (b'{"jsonrpc":"2.0","id":1,"method":"nope"}\n',
                b'{"jsonrpc":"2.0","id":1,"method":"submit","params":{"argv":[1]}}\n',
                b'not json\n',
                b'{"jsonrpc":"2.0","id":1,"method":"sta',
                b'\xff\xfe\n'):
        x = Client(d.socket, timeout=30)
        x.send_raw(raw)
        if raw.endswith(b"\n"):
            x.read_msg(timeout=30)
        x.close()
    y = Client(d.socket, hello=False, timeout=30)
    y.send_raw(b'{"jsonrpc":"2.0","id":1,"method":"hello","params":{"version":1}}\n'
               b'{"jsonrpc":"2.0","id":2,"method":"status","params":{"all":true}}\n')
    y.sock.shutdown(1)
    y.close()
    try:
        c.call("show", {"id": 999999})
    except RpcError as err:
        assert err.code == -32003, err

    # A job left running at SIGTERM belongs to its monitor; it is not a leak.
    jr = c.call("submit", {"argv": ["sleep", "30"], "cwd": d.dir, "env": env()})["id"]
    state(c, jr, "running")
    s1.close()
    c.close()
    return jr


def before(d):
    """A plain daemon leaves jobs for the one under valgrind to load: one
    running (re-adopted), one that ends while no daemon runs (its status
    read back), one queued. Then it is killed."""
    d.start()
    c = Client(d.socket)
    run = c.call("submit", {"argv": ["sleep", "60"], "cwd": d.dir, "env": env(),
                            "swap_budget_bytes": 1 << 30})["id"]
    # It ends once the daemon is gone: when the test makes "go".
    end = c.call("submit", {"argv": ["sh", "-c", "until [ -e go ]; do sleep 0.02; done; exit 4"],
                            "cwd": d.dir, "env": env()})["id"]
    state(c, run, "running")
    pid = state(c, end, "running")["pid"]
    queued = c.call("submit", {"argv": ["true"], "cwd": d.dir, "env": env(),
                               "wait_free_pct": 99})["id"]
    c.close()
    d.proc.kill()
    d.proc.wait()
    open(os.path.join(d.dir, "go"), "w").close()
    poll(lambda: not os.path.exists("/proc/%d" % pid), what="the job to end")
    return run, end, queued


def after(d, c, m, run, end, queued):
    j = state(c, end, "exited")
    assert j["exit_code"] == 4, j
    m.set(swap_used_gib=4)
    j = state(c, run, "killed")
    assert j["end_reason"] == "swap_budget", j
    c.call("cancel", {"id": queued})
    state(c, queued, "cancelled")


def valgrind_args(d):
    vg = shlex.split(os.environ.get("VALGRIND", "valgrind"))
    return vg + ["--leak-check=full", "--show-leak-kinds=definite,indirect",
                 "--errors-for-leak-kinds=definite,indirect", "--error-exitcode=99",
                 "--child-silent-after-fork=yes", "--track-fds=no",
                 "--log-file=" + os.path.join(d.dir, "valgrind.%p.log")] + d.args


def leak_report(d, rc, lsan):
    """The checker's verdict on the stopped daemon: (ok, summary, text)."""
    if lsan:
        # LeakSanitizer prints into the daemon's log and exits 99.
        text = d.log_text()
        return rc == 0 and "Sanitizer" not in text, "LeakSanitizer", text
    logs = [p for p in glob.glob(os.path.join(d.dir, "valgrind.*.log"))
            if p.endswith(".%d.log" % d.proc.pid)]
    text = open(logs[0]).read() if logs else ""
    summary = [ln.split("==", 2)[-1].strip() for ln in text.splitlines()
               if "definitely lost:" in ln or "indirectly lost:" in ln or
               "ERROR SUMMARY" in ln]
    return (rc == 0 and "ERROR SUMMARY: 0 errors" in text,
            "valgrind; " + "; ".join(summary), text)


def main():
    # A sanitizer build cannot run under valgrind; LeakSanitizer, built in,
    # reports at exit instead.
    lsan = os.environ.get("SL_SANITIZE") == "ON"
    d = Daemon(interval="0.2s", config="grace = 500ms\nsettle = 0\n")
    m = Mem(d)
    m.set()
    if lsan:
        os.environ["ASAN_OPTIONS"] = "detect_leaks=1:exitcode=99"
    ok = False
    try:
        left = before(d)
        if not lsan:
            d.args = valgrind_args(d)
        logf = open(d.log, "ab")
        d.proc = subprocess.Popen(d.args, stdout=logf, stderr=logf, stdin=subprocess.DEVNULL)
        logf.close()
        poll(d._ready, timeout=60, step=0.1, what="stageloadd to answer")
        t0 = time.monotonic()
        c = Client(d.socket, timeout=30)
        after(d, c, m, *left)
        c.close()
        m.set()
        jr = session(d, m)
        rc = d.stop(signal.SIGTERM, timeout=120)
        ok, summary, text = leak_report(d, rc, lsan)
        print("session %.1fs under %s" % (time.monotonic() - t0, summary))
        if not ok:
            sys.stderr.write(text[-20000:])
            raise AssertionError("leak check: exit %s (99: errors or leaks)" % rc)
        # The daemon left the running job to its monitor.
        assert jr > 0
    except BaseException:
        ok = False
        sys.stderr.write("--- daemon log (tail) ---\n%s\n" % d.log_text()[-6000:])
        raise
    finally:
        if d.alive():
            d.proc.kill()
            d.proc.wait()
        kill_leftovers(d)
        d.cleanup()
    print("ok   no leaks" if ok else "FAIL")


if __name__ == "__main__":
    main()
