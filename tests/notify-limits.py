"""What one user's observers may make the daemon hold (docs/security.md):
wait and logs answers owed to one uid across all its connections
(max_deferred_per_uid) and process trees it meters (max_meters_per_uid).
Past either the request gets -32004 naming the limit while other users,
root included, are still served. Clients metering the same tree share one
meter: it counts once and each still gets its metered samples. Needs root,
to connect as another uid.
"""

import json
import os
import select
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
from sltest import Client, Daemon, connect_as, poll, skip, write_meminfo  # noqa: E402


NOBODY = 65534
DEFERRED = 5
METERS = 2


class Raw:
    """A connection of uid NOBODY, spoken to line by line."""

    def __init__(self, sock):
        self.s = sock
        self.s.settimeout(10)
        self.buf = b""
        self.next_id = 100
        self.notes = []

    def send(self, method, params):
        self.next_id += 1
        self.s.sendall(json.dumps({"jsonrpc": "2.0", "id": self.next_id,
                                   "method": method, "params": params}).encode() + b"\n")
        return self.next_id

    def line(self, timeout=10.0):
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            assert left > 0, "no line in time"
            r, _, _ = select.select([self.s], [], [], left)
            if r:
                chunk = self.s.recv(65536)
                assert chunk, "connection closed"
                self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def answer(self, rid):
        """The answer to request rid; notifications meanwhile are kept."""
        while True:
            m = self.line()
            if m.get("id") == rid:
                return m
            self.notes.append(m)

    def quiet(self, seconds=0.3):
        r, _, _ = select.select([self.s], [], [], seconds)
        return not r

    def note(self, method, cond=lambda m: True, timeout=10.0):
        deadline = time.monotonic() + timeout
        while True:
            for i, m in enumerate(self.notes):
                if m.get("method") == method and cond(m):
                    return self.notes.pop(i)
            self.notes.append(self.line(max(0.01, deadline - time.monotonic())))


def nobody_sleeper():
    return subprocess.Popen(["sleep", "120"], preexec_fn=lambda: (
        os.setgroups([]), os.setgid(NOBODY), os.setuid(NOBODY)))


def main():
    if os.geteuid() != 0:
        skip("the per-uid limits need root: they connect as uid %d" % NOBODY,
             root_only=True)
    conf = "max_deferred_per_uid = %d\nmax_meters_per_uid = %d\n" % (DEFERRED, METERS)
    kids = []
    with Daemon(interval="0.1", config=conf) as d:
        os.chmod(d.dir, 0o755)  # uid NOBODY must reach the socket
        try:
            run(d, kids)
        finally:
            for k in kids:
                k.kill()
                k.wait()
        assert d.stop() == 0
    print("PASS")


def run(d, kids):
    root = Client(d.socket)
    # A job that never starts: 10 % free, it waits for 50 %.
    write_meminfo(d.proc_root, avail_kb=(16 << 20) // 10)
    poll(lambda: root.call("info")["sample"]["free_pct"] < 20,
         what="a sample at 10 % free")
    job = root.call("submit", {"argv": ["true"], "cwd": "/", "env": [],
                               "wait_free_pct": 50})["id"]

    conns = [Raw(s) for s in connect_as(NOBODY, d.socket, 3)]
    for c in conns:
        assert c.answer(c.send("hello", {"version": 1}))["result"]["uid"] == NOBODY

    # Waits spread over two connections: the uid's total is what counts.
    for i in range(DEFERRED):
        c = conns[i % 2]
        c.send("wait", {"id": job})
    for c in conns[:2]:
        assert c.quiet(), "a wait was answered while the job is queued: %r" % c.line()
    m = conns[2].answer(conns[2].send("wait", {"id": job}))
    assert m["error"]["code"] == -32004, m
    assert "pending for one user across connections" in m["error"]["message"], m
    print("ok   wait %d of uid %d refused across connections: %s"
          % (DEFERRED + 1, NOBODY, m["error"]["message"]))
    # Other users are still served.
    assert root.call("info")["version"] == 1
    root.call("cancel", {"id": job})
    for i in range(DEFERRED):
        got = conns[i % 2].line()
        assert got.get("result", {}).get("state") == "cancelled", got
    # Answered waits no longer count: one more is taken (and answered at
    # once: the job has ended).
    m = conns[2].answer(conns[2].send("wait", {"id": job}))
    assert m["result"]["state"] == "cancelled", m
    print("ok   answered waits free their place")

    # Meters: two trees, then a third is refused; the same tree again, on
    # another connection, shares the first meter and is taken.
    for _ in range(3):
        kids.append(nobody_sleeper())
    for i in range(METERS):
        m = conns[i].answer(conns[i].send("subscribe", {"pid": kids[i].pid}))
        assert "result" in m, m
    m = conns[2].answer(conns[2].send("subscribe", {"pid": kids[2].pid}))
    assert m["error"]["code"] == -32004, m
    assert "metered process trees per user" in m["error"]["message"], m
    m = conns[2].answer(conns[2].send("subscribe", {"pid": kids[0].pid}))
    assert "result" in m, m
    for c in (conns[0], conns[2]):
        s = c.note("sample", lambda n: n["params"].get("pid") == kids[0].pid)
        assert s["params"]["nprocs"] == 1, s
    print("ok   meter %d of uid %d refused; a shared tree counts once and "
          "each subscriber gets its samples" % (METERS + 1, NOBODY))

    # A tree that goes frees its meter for all who shared it.
    kids[0].kill()
    kids[0].wait()
    for c in (conns[0], conns[2]):
        c.note("process_gone", lambda n: n["params"]["pid"] == kids[0].pid)
    m = conns[2].answer(conns[2].send("subscribe", {"pid": kids[2].pid}))
    assert "result" in m, m
    print("ok   a gone tree's meter is freed")
    for c in conns:
        c.s.close()
    root.close()


if __name__ == "__main__":
    main()
