#!/usr/bin/env python3
"""Attacks by one unprivileged user on the daemon, and what they cost the
others (docs/security.md, docs/benchmarks.md "Attacks").

One stageloadd (run as root) on a fixture proc root. For each attack an
unprivileged uid (nobody) runs at normal priority and does its worst within
the per-uid limits, while root:
  - calls `info` again and again: the slowest answer is what a user waits;
  - runs a probe job with a 1 GiB swap budget, and the fixture's swap jumps
    past it: the time until the job sees SIGTERM is enforcement under
    attack (target: within one interval).
The daemon's peak RSS (VmHWM) is read from /proc at the end.

Attacks:
  meters  250 connections subscribe {pid} to trees of the attacker's
          processes (TREES trees of PROCS processes each): one scan per tree
          per tick however many watch it, at most max_meters_per_uid trees.
  waits   256 connections send `wait` for a queued job until refused: at
          most max_deferred_per_uid across them, each counted, not walked.
  logs    256 connections `logs follow` the attacker's own running job,
          which writes a line every 10 ms, until refused.
  stored  one connection submits and cancels jobs with a 200 KiB argv and
          a 900 KiB env in a loop for the whole run: what the database
          grows by is bounded by max_stored_bytes_per_uid (--stored-bound,
          64M here so that the run passes it several times; the
          attacker's oldest ended jobs are deleted to make room).
  bigstatus  1,000 queued jobs of the attacker's with a 200 KiB argv each,
          then 10 connections that ask for `status` and never read: 5 in
          protocol version 1 (an answer past 4 MiB is refused), 5 in version
          2 (20 pages each of at most 1000 entries, argv left out).
  churn1, churn4  1 or 4 processes doing connect(); close() in a loop as
          fast as they can, past max_clients_per_uid.
  unread  250 connections pipelining `info` without ever reading the
          answers, for the whole run.
  logfill  4 detached `yes` jobs of the attacker's, their logs on the
          database's file system (a 512 MiB tmpfs here): the logs stop at
          min_free_disk (auto: 5 %, 25.6 MiB) and their output is dropped;
          after the run root submits a job, and a line says how it went,
          the space left and storage_error.
  holdspam  4 processes, one connection each, pipelining `hold` and
          `release` of the attacker's own queued job (batches of 64, the
          answers read) for the whole run; the row also gives the event
          rows the attacker's uid left in the database.
Each row also gives the daemon's RSS once the attacker has gone (the
lowest within 5 s): what the flood left behind.

usage: bench/attack.py [-b BUILD] [--interval S] [--procs N] [--trees N]
                       [--stored-bound SIZE] [ATTACK ...]
Prints a Markdown table, one row per attack (with the database's growth
over the attack, file and WAL); exits 1 if a breach took
longer than one interval plus 100 ms, or root's info longer than 50 ms.
Needs root (it runs the attacker as another uid).
"""

import argparse
import atexit
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from jobs import BreachProbe, fixture_daemon, running, set_memory, status_kb  # noqa: E402
from sltest import Client, poll  # noqa: E402

NOBODY = 65534


def as_nobody():
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


def spawn_trees(ntrees, nprocs):
    """ntrees process trees of the attacker's, nprocs sleeping processes
    each; returns the pids of their roots and a function that ends them."""
    roots = []
    for _ in range(ntrees):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            as_nobody()
            os.setpgid(0, 0)
            for _ in range(nprocs - 1):
                if os.fork() == 0:
                    signal.pause()
                    os._exit(0)
            os.write(w, b"x")
            signal.pause()
            os._exit(0)
        os.close(w)
        os.read(r, 1)
        os.close(r)
        roots.append(pid)

    def end():
        for pid in roots:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.waitpid(pid, 0)
    return roots, end


def attacker(sock_path, nconn, plan, ready_w, stop_r, read=True):
    """In a child running as nobody: open nconn connections, say hello
    (unless plan(i) begins with its own), send plan(i) on connection i (a
    list of (method, params)), read what comes back without caring (or,
    with read False, never read), until stop_r is readable."""
    as_nobody()
    conns = []
    for _ in range(nconn):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(sock_path)
        s.setblocking(False)
        conns.append(s)
    n = 0
    for i, s in enumerate(conns):
        msgs = plan(i)
        if not msgs or msgs[0][0] != "hello":
            msgs = [("hello", {"version": 1})] + msgs
        data = b"".join(json.dumps({"jsonrpc": "2.0", "id": k, "method": m,
                                    "params": p}).encode() + b"\n"
                        for k, (m, p) in enumerate(msgs))
        s.setblocking(True)
        s.sendall(data)
        s.setblocking(False)
        n += len(msgs) - 1
    os.write(ready_w, b"%d\n" % n)
    while True:
        r, _, _ = select.select((conns if read else []) + [stop_r], [], [],
                                1.0)
        if stop_r in r:
            break
        for s in r:
            try:
                s.recv(1 << 20)
            except OSError:
                pass
    os._exit(0)


def fan_out(nproc, ready_w, body):
    """In the attacker: nproc processes each running body() (which returns
    how many requests it made); says it is ready, then writes their sum
    and exits once they have all ended."""
    counts = []
    for _ in range(nproc):
        r, w = os.pipe()
        if os.fork() == 0:
            os.write(w, b"%d\n" % body())
            os._exit(0)
        os.close(w)
        counts.append(r)
    os.write(ready_w, b"0\n")
    total = 0
    for r in counts:
        total += int(os.read(r, 64).split()[0] or b"0")
        os.wait()
    os.write(ready_w, b"%d\n" % total)
    os._exit(0)


def churner(nproc):
    """A child body: nproc processes of nobody's connect and close in a
    loop until stop_r is readable; then writes how many connections."""
    def run(sock_path, ready_w, stop_r):
        def loop():
            n = 0
            while not select.select([stop_r], [], [], 0)[0]:
                for _ in range(100):
                    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    try:
                        s.connect(sock_path)
                        n += 1
                    except OSError:
                        pass  # a full backlog
                    s.close()
            return n
        as_nobody()
        fan_out(nproc, ready_w, loop)
    return run


def logfiller(njobs):
    """A child body: nobody's njobs `yes` jobs, detached, print as fast as
    they can for the whole run (and after: the daemon's end stops them).
    Their logs are on the database's file system, a small tmpfs
    (small_fs)."""
    def run(sock_path, ready_w, stop_r):
        as_nobody()
        top = os.path.dirname(sock_path)
        c = Client(sock_path)
        for _ in range(njobs):
            # The test directory in argv: kill_leftovers finds them.
            c.call("submit", {"argv": ["yes", top], "cwd": top,
                              "env": ["PATH=/usr/bin:/bin"]})
        os.write(ready_w, b"%d\n" % njobs)
        select.select([stop_r], [], [])
        os.write(ready_w, b"%d\n" % njobs)
        os._exit(0)
    return run


def small_fs(d, size):
    """The daemon's database, and so its job logs, on a tmpfs of size
    (before it starts); unmounted at exit, whatever happens."""
    mnt = os.path.join(d.dir, "fs")
    os.mkdir(mnt)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%s,mode=0700" % size,
                    "tmpfs", mnt], check=True)

    def undo():
        subprocess.run(["umount", "-l", mnt])
        shutil.rmtree(d.dir, ignore_errors=True)
    atexit.register(undo)
    d.db = os.path.join(mnt, "sl.db")
    d.args[d.args.index("--db") + 1] = d.db
    return mnt


def root_during_fill(d, c, mnt):
    """After the fill: root's submit and its job, the free space left."""
    t = time.monotonic()
    jid = c.call("submit", {"argv": ["true"], "cwd": "/", "env": []})["id"]
    poll(lambda: c.call("show", {"id": jid})["state"] == "exited", timeout=30,
         what="root's job during the fill")
    ms = (time.monotonic() - t) * 1000
    sv = os.statvfs(mnt)
    drops = [e for e in c.call("events", {"limit": 10000})["events"]
             if e["kind"] == "output_dropped"]
    return ("logfill: root's submit during the fill ran its job in %.0f ms; "
            "%.1f MiB of %.0f MiB free; storage_error %s; %d output_dropped "
            "events" % (ms, sv.f_bavail * sv.f_frsize / 2.0**20,
                        sv.f_blocks * sv.f_frsize / 2.0**20,
                        c.call("info")["storage_error"], len(drops)))


def unreader(nconn, batch=64):
    """A child body: nconn connections of nobody's each send `info` again
    and again and never read, until stop_r is readable."""
    def run(sock_path, ready_w, stop_r):
        as_nobody()
        req = b"".join(b'{"jsonrpc":"2.0","id":%d,"method":"info"}\n' % k
                       for k in range(batch))
        conns = []
        for _ in range(nconn):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(sock_path)
            s.sendall(b'{"jsonrpc":"2.0","id":0,"method":"hello",'
                      b'"params":{"version":1}}\n')
            s.setblocking(False)
            conns.append(s)
        os.write(ready_w, b"0\n")
        n = 0
        while conns and not select.select([stop_r], [], [], 0)[0]:
            _, w, _ = select.select([], conns, [], 0.1)
            for s in w:
                try:
                    s.send(req)
                    n += batch
                except BlockingIOError:
                    pass
                except OSError:  # closed by the daemon's bounds
                    conns.remove(s)
        select.select([stop_r], [], [])
        os.write(ready_w, b"%d\n" % n)
        os._exit(0)
    return run


def holdspammer(nproc, batch=64):
    """A child body: nobody's queued job (95 % free asked, 80 % there; at
    priority -1, behind the probes), then nproc processes hold and release
    it over a connection each, batch requests at a time, until stop_r is
    readable; then writes how many requests."""
    def run(sock_path, ready_w, stop_r):
        as_nobody()
        c = Client(sock_path)
        jid = c.call("submit", {"argv": ["/bin/true"], "cwd": "/", "env": [],
                                "wait_free_pct": 95, "priority": -1})["id"]
        c.close()
        reqs = b"".join(b'{"jsonrpc":"2.0","id":%d,"method":"%s","params":{"id":%d}}\n'
                        % (k, b"hold" if k % 2 == 0 else b"release", jid)
                        for k in range(batch))
        def loop():
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(sock_path)
            s.sendall(b'{"jsonrpc":"2.0","id":0,"method":"hello",'
                      b'"params":{"version":1}}\n')
            buf = b""
            while b"\n" not in buf:
                buf += s.recv(65536)
            n = 0
            while not select.select([stop_r], [], [], 0)[0]:
                s.sendall(reqs)
                got = 0
                while got < batch:
                    chunk = s.recv(1 << 20)
                    if not chunk:
                        break
                    got += chunk.count(b"\n")
                if got < batch:
                    break
                n += batch
            return n
        fan_out(nproc, ready_w, loop)
    return run


def event_rows(d, uid):
    """The rows of uid's jobs' events in the database."""
    import sqlite3
    db = sqlite3.connect("file:%s?mode=ro" % d.db, uri=True, timeout=30)
    try:
        return db.execute("SELECT count(*) FROM events WHERE uid = ?", (uid,)).fetchone()[0]
    finally:
        db.close()


def rss_after(d, seconds=5.0):
    """The daemon's lowest RSS within seconds after an attack."""
    low = status_kb(d.proc.pid, "VmRSS")
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(0.1)
        low = min(low, status_kb(d.proc.pid, "VmRSS"))
    return low


def storer(sock_path, ready_w, stop_r):
    """In a child running as nobody: submit a job that stays queued (95 %
    free asked, 80 % there) with a big argv and env, cancel it, again,
    until stop_r is readable; then write how many requests it made."""
    as_nobody()
    c = Client(sock_path)
    big = {"argv": ["/bin/true", "a" * (200 << 10)], "cwd": "/",
           "env": ["BIG=" + "e" * (900 << 10)], "wait_free_pct": 95}
    os.write(ready_w, b"0\n")
    n = 0
    while not select.select([stop_r], [], [], 0)[0]:
        jid = c.call("submit", big)["id"]
        c.call("cancel", {"id": jid})
        n += 2
    os.write(ready_w, b"%d\n" % n)
    os._exit(0)


def db_bytes(d):
    n = 0
    for suffix in ("", "-wal"):
        try:
            n += os.path.getsize(d.db + suffix)
        except OSError:
            pass
    return n


def run_attack(d, c, name, nconn, plan, interval, read=True, body=None):
    ready_r, ready_w = os.pipe()
    stop_r, stop_w = os.pipe()
    db_before = db_bytes(d)
    # Root's connection is made before the attack: a connect flood keeps
    # the listen backlog full, and a new connection waits its turn there
    # (libstageload's connect blocks; this client's would time out).
    rc = Client(d.socket)
    pid = os.fork()
    if pid == 0:
        os.close(ready_r)
        os.close(stop_w)
        try:
            if body is not None:
                body(d.socket, ready_w, stop_r)
            elif plan is None:
                storer(d.socket, ready_w, stop_r)
            else:
                attacker(d.socket, nconn, plan, ready_w, stop_r, read)
        finally:
            os._exit(1)
    os.close(ready_w)
    os.close(stop_r)
    sent = int(os.read(ready_r, 64).split()[0] or b"0")

    # Root's info, over and over, while the attack is on.
    infos_ms = []
    done = threading.Event()

    def infos():
        # A call that times out (10 s) counts as its time; the next one
        # goes on a new connection.
        c2 = rc
        while not done.is_set():
            t = time.monotonic()
            try:
                c2.call("info")
            except OSError:
                c2.close()
                c2 = Client(d.socket, timeout=60)
            infos_ms.append((time.monotonic() - t) * 1000)
            time.sleep(0.01)
        c2.close()
    th = threading.Thread(target=infos)
    th.start()
    lats = []
    try:
        for i in range(5):
            p = BreachProbe(d, c, "%s%d" % (name, i))
            p.start()
            time.sleep(interval * (i / 5.0))
            lats.append(p.breach())
            p.finish()
    finally:
        done.set()
        th.join()
        os.write(stop_w, b"x")
        os.close(stop_w)
        os.waitpid(pid, 0)
        rest = os.read(ready_r, 64).split()
        os.close(ready_r)
        if rest:
            sent = int(rest[-1])
    return {"attack": name, "requests": sent,
            "event_rows": event_rows(d, NOBODY),
            "db_growth_kib": (db_bytes(d) - db_before) // 1024,
            "rss_peak_kib": status_kb(d.proc.pid, "VmHWM"),
            "rss_after_kib": rss_after(d),
            "info_max_ms": round(max(infos_ms), 2),
            "info_p99_ms": round(sorted(infos_ms)[len(infos_ms) * 99 // 100], 2),
            "breach_max_ms": round(max(lats), 1)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-b", "--build", default=os.path.join(HERE, "..", "build-bench"))
    ap.add_argument("--interval", default="0.5")
    ap.add_argument("--procs", type=int, default=1000)
    ap.add_argument("--trees", type=int, default=20)
    ap.add_argument("--stored-bound", default="64M")
    ap.add_argument("attacks", nargs="*",
                    default=["meters", "waits", "logs", "stored", "bigstatus",
                             "churn1", "churn4", "unread", "logfill",
                             "holdspam"])
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench/attack.py needs root: the attacker runs as uid %d" % NOBODY)
    build = os.path.abspath(a.build)
    interval = float(a.interval)
    rows = []
    notes = []
    for name in a.attacks:
        bound = "1G" if name == "bigstatus" else a.stored_bound
        d = fixture_daemon(build, a.interval, "max_clients_per_uid = 300\n"
                           "max_stored_bytes_per_uid = %s\n" % bound)
        mnt = small_fs(d, "512m") if name == "logfill" else None
        with running(d):
            os.chmod(d.dir, 0o755)  # nobody must reach the socket
            set_memory(d, free_pct=80.0)
            c = Client(d.socket)
            end = None
            body = None
            if name == "meters":
                roots, end = spawn_trees(a.trees, a.procs // a.trees)
                plan = lambda i: [("subscribe", {"pid": roots[i % len(roots)]})]  # noqa: E731
                nconn = 250
            elif name == "waits":
                # A root job that stays queued (it waits for 95 % free),
                # behind the probes (priority -1).
                jid = c.call("submit", {"argv": ["true"], "cwd": "/", "env": [],
                                        "wait_free_pct": 95, "priority": -1})["id"]
                plan = lambda i: [("wait", {"id": jid})] * 1024  # noqa: E731
                nconn = 256
            elif name == "logs":
                # The attacker's own chatty job, submitted as nobody.
                jid = submit_as_nobody(d, "while :; do echo attack; sleep 0.01; done")
                poll(lambda: c.call("show", {"id": jid})["state"] == "running",
                     what="the attacker's job to run")
                plan = lambda i: [("logs", {"id": jid, "follow": True})] * 1024  # noqa: E731
                nconn = 256
            elif name == "stored":
                plan, nconn = None, 1
            elif name in ("churn1", "churn4"):
                body, plan, nconn = churner(int(name[-1])), None, 0
            elif name == "unread":
                body, plan, nconn = unreader(250), None, 250
            elif name == "logfill":
                body, plan, nconn = logfiller(4), None, 0
            elif name == "holdspam":
                body, plan, nconn = holdspammer(4), None, 4
            elif name == "bigstatus":
                # 1,000 queued jobs of 200 KiB argv (behind the probes:
                # priority -1), then 10 connections that ask for status and
                # never read: 5 in version 1 (refused past 4 MiB), 5 in
                # version 2 (pages of at most 1000 entries without argv).
                fill_queue_as_nobody(d, 1000, 200 << 10)
                plan = lambda i: ([("status", {"all": True})] if i < 5 else  # noqa: E731
                                  [("hello", {"version": 2})] +
                                  [("status", {"all": True, "limit": 1000})] * 20)
                nconn = 10
            else:
                sys.exit("unknown attack %s" % name)
            try:
                rows.append(run_attack(d, c, name, nconn, plan, interval,
                                       read=name != "bigstatus", body=body))
                if mnt is not None:
                    notes.append(root_during_fill(d, c, mnt))
            finally:
                if end is not None:
                    end()
            c.close()
    print("| attack | requests sent | attacker's event rows | database growth | "
          "daemon peak RSS | RSS after | root info p99 / slowest | "
          "breach to SIGTERM, max of 5 |")
    print("|---|---|---|---|---|---|---|---|")
    bad = False
    for r in rows:
        print("| %s | %d | %d | %.1f MiB | %.1f MiB | %.1f MiB | %.2f / %.2f ms | %.1f ms |" % (
            r["attack"], r["requests"], r["event_rows"], r["db_growth_kib"] / 1024.0,
            r["rss_peak_kib"] / 1024.0, r["rss_after_kib"] / 1024.0, r["info_p99_ms"],
            r["info_max_ms"], r["breach_max_ms"]))
        bad |= r["breach_max_ms"] > interval * 1000 + 100 or r["info_max_ms"] > 50
    for n in notes:
        print("\n" + n)
    sys.exit(1 if bad else 0)


def fill_queue_as_nobody(d, n, argv_bytes):
    """n jobs of the attacker's that stay queued (95 % free asked, 80 %
    there), each with an argv of argv_bytes."""
    pid = os.fork()
    if pid == 0:
        rc = 1
        try:
            as_nobody()
            c = Client(d.socket)
            for _ in range(n):
                c.call("submit", {"argv": ["/bin/true", "a" * argv_bytes],
                                  "cwd": "/", "env": [], "wait_free_pct": 95,
                                  "priority": -1}, timeout=60)
            rc = 0
        finally:
            os._exit(rc)
    _, status = os.waitpid(pid, 0)
    assert status == 0, "filling the queue failed"


def submit_as_nobody(d, script):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            as_nobody()
            c = Client(d.socket)
            jid = c.call("submit", {"argv": ["sh", "-c", script], "cwd": "/",
                                    "env": ["PATH=/usr/bin:/bin"]})["id"]
            os.write(w, b"%d" % jid)
        finally:
            os._exit(0)
    os.close(w)
    jid = int(os.read(r, 64))
    os.close(r)
    os.waitpid(pid, 0)
    return jid


if __name__ == "__main__":
    main()
