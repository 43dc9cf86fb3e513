"""Large answers are written a slice at a time (docs/architecture.md,
"Large answers"; PROTOCOL.md, "Answers"):
- a history of 20,000 buckets (5 MiB, 100 parts) reaches a client that
  reads it slowly,
  whole and valid, while the sample notifications it subscribed to arrive
  as lines of their own, never inside the answer's line;
- while that answer waits for its reader, another client is answered;
- a connection has at most 4 large answers under way: the 5th and later
  of a client that does not read are refused with -32004;
- status and events in protocol version 1, also written in slices, are
  the same as the version 2 pages put together; events newest first
  (before_id, or a "b" cursor) are the same the other way round.
Runs as any user.
"""

import json
import os
import sqlite3
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
from sltest import Client, Daemon, RpcError, poll  # noqa: E402

SAMPLES = 20000
STEP = 500


def fill_samples(db):
    """SAMPLES raw samples, STEP ms apart, ending a minute ago: written
    beside the daemon (the database is in WAL mode)."""
    t0 = (int(time.time() * 1000) - 60000 - SAMPLES * STEP) // STEP * STEP
    con = sqlite3.connect(db, timeout=30)
    con.executemany("INSERT INTO samples VALUES (?,?,?,?,?,?,?,?,?,?)",
                    [(t0 + i * STEP, 5000 + i % 3000, 8 << 30, i << 10, 1,
                      None, 16 << 30, 64 << 30, 0, 0) for i in range(SAMPLES)])
    con.commit()
    con.close()
    return t0


class Lines:
    """A connection's lines, read 4 KiB at a time (a slow reader), each
    checked to be a whole message."""

    def __init__(self, c):
        self.sock, self.buf = c.sock, c.buf

    def next(self, deadline):
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            assert left > 0, "nothing more before the deadline"
            self.sock.settimeout(left)
            chunk = self.sock.recv(4096)
            assert chunk, "connection closed"
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)


def history_interleaving(d, t0):
    a = Client(d.socket)
    a.call("subscribe", {"samples": True})
    req = {"jsonrpc": "2.0", "id": 77, "method": "history",
           "params": {"since_ms": t0, "until_ms": t0 + SAMPLES * STEP - 1,
                      "step_ms": STEP}}
    a.send_raw(json.dumps(req).encode() + b"\n")
    # Nothing read yet: the daemon has written what the socket holds and
    # waits for this reader; others are answered meanwhile.
    b = Client(d.socket)
    for _ in range(5):
        assert "sample" in b.call("info")
    b.close()
    rd = Lines(a)
    deadline = time.monotonic() + 60
    while True:
        m = rd.next(deadline)
        if m.get("id") == 77:
            break
        assert m.get("method") == "sample", m
    buckets = m["result"]["buckets"]
    assert len(buckets) == SAMPLES, len(buckets)
    assert [x["ts_ms"] for x in buckets[:2]] == [t0, t0 + STEP]
    assert all(buckets[i]["ts_ms"] + STEP == buckets[i + 1]["ts_ms"]
               for i in range(len(buckets) - 1))
    # Samples went on meanwhile (every 100 ms): held while the answer was
    # written, they follow it as lines of their own.
    assert rd.next(time.monotonic() + 10).get("method") == "sample"
    a.close()


def per_connection_bound(d, t0):
    # Small answers do: the 8 requests are read at once, and the fills run
    # only after, when the loop is idle.
    c = Client(d.socket)
    req = {"since_ms": t0, "until_ms": t0 + 1000 * STEP - 1, "step_ms": STEP}
    for i in range(8):
        c.send_raw(json.dumps({"jsonrpc": "2.0", "id": 100 + i,
                               "method": "history", "params": req}).encode() + b"\n")
    refused = set()
    answered = set()
    buf = b""
    c.sock.settimeout(60)
    while len(refused) + len(answered) < 8:
        chunk = c.sock.recv(1 << 20)
        assert chunk, "connection closed"
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            m = json.loads(line)
            if "error" in m:
                assert m["error"]["code"] == -32004, m
                assert "large answers" in m["error"]["message"], m
                refused.add(m["id"])
            elif "id" in m:
                assert len(m["result"]["buckets"]) == 1000
                answered.add(m["id"])
    # The first ones are answered, in the order asked; the rest refused.
    assert len(answered) >= 4 and len(refused) >= 1, (answered, refused)
    assert min(refused) > max(answered) - 4, (answered, refused)
    c.close()


def v1_is_v2_pages(d):
    c = Client(d.socket)
    for i in range(30):
        c.call("submit", {"argv": ["true", str(i)], "cwd": "/", "env": [],
                          "wait_free_pct": 99})
    for i in range(20):
        jid = c.call("submit", {"argv": ["true"], "cwd": "/", "env": [],
                                "wait_free_pct": 99})["id"]
        c.call("cancel", {"id": jid})
    v1_jobs = c.call("status", {"all": True, "limit": 100000})["jobs"]
    v1_events = c.call("events", {"limit": 10000})["events"]
    c2 = Client(d.socket, version=2)
    pages, cur = [], None
    while True:
        p = {"all": True, "limit": 7}
        if cur:
            p["cursor"] = cur
        r = c2.call("status", p)
        pages += r["jobs"]
        cur = r["next_cursor"]
        if cur is None:
            break
    assert [j["id"] for j in v1_jobs] == [j["id"] for j in pages]
    assert v1_jobs[0]["argv"] == ["true", "0"] or "argv" in v1_jobs[0]
    evs, cur = [], None
    while True:
        p = {"limit": 9}
        if cur:
            p["cursor"] = cur
        r = c2.call("events", p)
        evs += r["events"]
        cur = r["next_cursor"]
        if cur is None:
            break
    assert [e["id"] for e in v1_events] == [e["id"] for e in evs]
    # Newest first (before_id; in version 2 the cursor goes on below the
    # oldest so far): the same events, the other way round.
    back, cur = [], "b%d" % (evs[-1]["id"] + 1)
    while cur is not None:
        r = c2.call("events", {"limit": 9, "cursor": cur})
        back += r["events"]
        cur = r["next_cursor"]
    assert [e["id"] for e in back] == [e["id"] for e in reversed(evs)]
    newest = c.call("events", {"before_id": 1 << 53, "limit": 5})["events"]
    assert [e["id"] for e in newest] == [e["id"] for e in reversed(evs)][:5]
    try:
        c2.call("events", {"before_id": 5, "follow": True})
        raise AssertionError("before_id with follow was taken")
    except RpcError as e:
        assert e.code == -32602, e
    c.close()
    c2.close()


def main():
    with Daemon(interval="0.1") as d:
        t0 = fill_samples(d.db)
        poll(lambda: Client(d.socket).call("history", {
            "since_ms": t0, "until_ms": t0 + 5000, "step_ms": STEP})["buckets"],
             what="the samples to be seen")
        history_interleaving(d, t0)
        print("ok: 20,000 buckets, whole, notifications apart, others answered")
        per_connection_bound(d, t0)
        print("ok: at most 4 large answers per connection")
        v1_is_v2_pages(d)
        print("ok: version 1 status and events are the version 2 pages")


if __name__ == "__main__":
    main()
