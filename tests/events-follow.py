"""The protocol side of events (PROTOCOL.md, events, unsubscribe and the
notifications table):
- a follow whose backlog is larger than `limit` gets every later event as
  a notification, in order, none skipped, then new ones live;
- a connection that both subscribed with `events` and follows gets each
  event once;
- `unsubscribe` ends a follow;
- `job_id` keeps one job's events, oldest or newest first, and a follow
  with it gets that job's later events alone, while the connection's
  subscription still gets every event once;
- an attached job's connection hears `ended` when another connection
  cancels the job while it is queued.
Runs as any user.
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
from sltest import Client, Daemon, RpcError, poll, write_meminfo  # noqa: E402

ENV = ["PATH=/usr/bin:/bin"]


def queued_job(c, **kw):
    args = {"argv": ["true"], "cwd": "/", "env": ENV, "wait_free_pct": 90}
    args.update(kw)
    return c.call("submit", args)["id"]


def event_notes(c, want, timeout=10.0):
    """The next `want` event notifications' ids, in the order they came."""
    ids = []
    deadline = time.monotonic() + timeout
    while len(ids) < want:
        n = c.notification("event", timeout=max(0.01, deadline - time.monotonic()))
        ids.append(n["params"]["id"])
    return ids


def no_more_events(c, seconds=0.5):
    try:
        n = c.notification("event", timeout=seconds)
    except (AssertionError, TimeoutError):
        return True
    raise AssertionError("an unexpected event: %r" % n)


def main():
    with Daemon(interval="0.1") as d:
        write_meminfo(d.proc_root, avail_kb=(16 << 20) // 10)  # 10 % free
        c = Client(d.socket)
        poll(lambda: c.call("info")["sample"]["free_pct"] < 20,
             what="a sample at 10 % free")
        # A backlog: each job makes two events (submitted, cancelled).
        for _ in range(150):
            c.call("cancel", {"id": queued_job(c)})
        ids = [e["id"] for e in c.call("events", {"limit": 10000})["events"]]
        assert len(ids) >= 300, len(ids)

        # Follow from the start with a page of 100: the rest comes as
        # notifications, in order, then a new event live.
        f = Client(d.socket)
        f.call("subscribe", {"samples": False, "events": True})
        page = [e["id"] for e in f.call("events", {"limit": 100, "follow": True})["events"]]
        assert page == ids[:100], (page[:3], ids[:3])
        rest = event_notes(f, len(ids) - 100)
        assert rest == ids[100:], "backlog out of order or with gaps"
        live = queued_job(c)
        got = event_notes(f, 1)
        ev = c.call("events", {"after_id": ids[-1]})["events"]
        assert got == [ev[0]["id"]] and ev[0]["job_id"] == live, (got, ev)
        # Subscribed with events and following: once each.
        no_more_events(f)
        print("ok   follow with a backlog of %d past a page of 100: all in order, "
              "then live, each once" % (len(ids) - 100))

        # unsubscribe ends the follow (and the subscription).
        f.call("unsubscribe")
        c.call("cancel", {"id": live})
        no_more_events(f)
        print("ok   unsubscribe ends an events follow")

        # job_id: one job's events, either way; a follow of it hears that
        # job alone.
        first = next(e["job_id"] for e in c.call("events", {"limit": 10})["events"]
                     if e["job_id"] is not None)
        mine = [e for e in c.call("events", {"limit": 10000})["events"]
                if e["job_id"] == first]
        assert len(mine) == 2, mine
        got = c.call("events", {"job_id": first, "limit": 10000})["events"]
        assert got == mine, (got, mine)
        got = c.call("events", {"job_id": first, "before_id": 1 << 53, "limit": 1})["events"]
        assert got == mine[-1:], got
        assert c.call("events", {"job_id": first, "after_id": mine[-1]["id"]})["events"] == []
        try:
            c.call("events", {"job_id": 0})
            raise AssertionError("job_id 0 was taken")
        except RpcError as e:
            assert e.code == -32602, e
        one = queued_job(c)
        g = Client(d.socket)
        page = g.call("events", {"job_id": one, "limit": 1, "follow": True})["events"]
        assert [e["kind"] for e in page] == ["submitted"], page
        # Once one of its events has come the follow is live (it caught up
        # from the store, filtered there, or heard it live).
        c.call("hold", {"id": one})
        n = g.notification("event")
        assert n["params"]["job_id"] == one and n["params"]["kind"] == "held", n
        other = queued_job(c)
        c.call("cancel", {"id": one})
        n = g.notification("event")
        assert n["params"]["job_id"] == one and n["params"]["kind"] == "cancelled", n
        no_more_events(g)
        # Following one job and subscribed: the others' come once, by the
        # subscription; the job's own once too.
        g.call("subscribe", {"samples": False, "events": True})
        c.call("cancel", {"id": other})
        two = queued_job(c)
        got = [(e["job_id"], e["kind"]) for e in
               (g.notification("event")["params"] for _ in range(2))]
        assert got == [(other, "cancelled"), (two, "submitted")], got
        no_more_events(g)
        g.close()
        c.call("cancel", {"id": two})
        print("ok   job_id keeps one job's events; a follow of it hears that job alone")

        # An attached job's connection hears that another one cancelled it.
        a = Client(d.socket)
        jid = queued_job(a, attached=True, env=None)
        c.call("cancel", {"id": jid})
        n = a.notification("ended")
        assert n["params"]["id"] == jid and n["params"]["state"] == "cancelled", n
        assert n["params"]["end_reason"] == "cancel", n
        print("ok   an attached job's connection hears it was cancelled")
        for x in (a, c, f):
            x.close()
        assert d.stop() == 0
    print("PASS")


if __name__ == "__main__":
    main()
