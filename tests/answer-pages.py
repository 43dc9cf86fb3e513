"""Bounded list answers (PROTOCOL.md, Versioning, status, events):
- `status` with `ended` lists the ended part alone, in both versions;
- protocol version 2 pages `status` with `limit` and `cursor`/`next_cursor`:
  the pages together are the version 1 list, in its order, none missed nor
  repeated; a list entry has `command` (shell-quoted argv, at most 256
  bytes, cut on a UTF-8 boundary with an ellipsis) and no argv or env;
- a page that ends with a job that then leaves the list goes on at that
  job's place, so the jobs that stayed put are neither missed nor repeated;
- version 1 `status` is answered as before up to 4 MiB, then -32004 naming
  the page size of version 2, while version 2 pages the same jobs;
- bad cursors and page sizes are -32602;
- version 2 `events` answers `next_cursor` (the last id while more follow,
  null at the end), and takes it as `cursor`;
- libstageload's sl_call_pages (tests/pages-client.c) follows the cursors
  of status and events to the end, page by page, and stops when its
  callback says so.
Runs as any user.
"""

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
from sltest import Client, Daemon, RpcError  # noqa: E402

ENV = ["PATH=/usr/bin:/bin"]
LIMIT = -32004
PARAMS = -32602


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def rpc_error(c, method, params):
    try:
        c.call(method, params)
    except RpcError as e:
        return e
    return None


def queued(c, argv, **kw):
    args = {"argv": argv, "cwd": "/", "env": ENV, "wait_free_pct": 90}
    args.update(kw)
    return c.call("submit", args)["id"]


def pages(c, params, limit):
    """Every page of a v2 status; the jobs and the number of pages."""
    jobs, cursor, n = [], None, 0
    while True:
        p = dict(params, limit=limit)
        if cursor is not None:
            p["cursor"] = cursor
        r = c.call("status", p)
        check(len(r["jobs"]) <= limit, "a page holds at most limit jobs")
        jobs += r["jobs"]
        n += 1
        cursor = r["next_cursor"]
        if cursor is None:
            return jobs, n
        check(isinstance(cursor, str) and r["jobs"], "next_cursor after a page: %r" % (r,))
        check(n < 1000, "pages never end")


def check_command(v1, v2):
    quote = [j for j in v1 if j["argv"][:2] == ["sh", "-c"]]
    check(quote, "the quoting job is listed")
    got = [j for j in v2 if j["id"] == quote[0]["id"]][0]["command"]
    want = "sh -c 'echo '\\''it'\\''s $HOME'"
    check(got == want, "command quoted as a shell would read it: %r, want %r" % (got, want))
    for j in v2:
        check("argv" not in j and "env" not in j and "cwd" in j and "command" in j,
              "a v2 list entry has command and cwd, no argv or env: %r" % (j,))
        check(len(j["command"].encode()) <= 256, "command at most 256 bytes")
    long_ = [j for j in v2 if j["name"] == "long"][0]["command"]
    check(long_.endswith("\u2026") and len(long_.encode()) <= 256 and
          len(long_.encode()) >= 250, "a long command is cut with an ellipsis: %r" % long_)
    # Cut on a character boundary: the text decodes, and what precedes the
    # ellipsis is a prefix of the full quoted command.
    full = "echo '" + "\u00e9" * 400
    check(full.startswith(long_[:-1]), "cut on a UTF-8 boundary: %r" % long_)


def lib_pages(d, method, params, items, stop=None):
    """sl_call_pages' pages, each a list of items."""
    cmd = [os.path.join(os.environ["SL_BIN"], "sl_pages"), d.socket, method,
           json.dumps(params), items] + ([str(stop)] if stop else [])
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, "%s: exit %d: %s" % (cmd, r.returncode, r.stderr))
    return [json.loads(line[len("page "):]) for line in r.stdout.splitlines()]


def check_lib_pages(d, v1, c1):
    ids = [j["id"] for j in v1]
    for limit in (3, 1000):
        got = lib_pages(d, "status", {"all": True, "limit": limit}, "jobs")
        check([j["id"] for p in got for j in p] == ids,
              "sl_call_pages, status in pages of %d: %s, want %s"
              % (limit, [[j["id"] for j in p] for p in got], ids))
        check(len(got) >= (len(ids) + limit - 1) // limit,
              "sl_call_pages: %d pages of %d for %d jobs" % (len(got), limit, len(ids)))
    got = lib_pages(d, "status", {"all": True, "limit": 3}, "jobs", stop=2)
    check(len(got) == 2 and [j["id"] for p in got for j in p] == ids[:len(got[0]) + len(got[1])],
          "sl_call_pages stops when its callback says: %s" % got)
    events = [e["id"] for e in c1.call("events", {"after_id": 0, "limit": 10000})["events"]]
    got = lib_pages(d, "events", {"after_id": 0, "limit": 2}, "events")
    # (events logged in between come after those)
    check([e["id"] for p in got for e in p][:len(events)] == events and len(got) > 2,
          "sl_call_pages, events in pages of 2: %s, want %s first" % (got, events))
    print("sl_call_pages: status and events page by page to the end, and stops when told")


def main():
    with Daemon() as d:
        c1 = Client(d.socket)               # version 1
        c2 = Client(d.socket, version=2)
        ids = []
        for i in range(24):
            ids.append(queued(c1, ["true", str(i)]))
        ids.append(queued(c1, ["sh", "-c", "echo 'it's $HOME"], name="quote"))
        ids.append(queued(c1, ["echo", "\u00e9" * 400], name="long"))
        # Ended jobs (in the database), newest first after the live ones.
        for jid in ids[:8]:
            c1.call("cancel", {"id": jid})

        v1 = c1.call("status", {"all": True, "limit": 1000})["jobs"]
        check("next_cursor" not in c1.call("status", {}), "v1 status has no next_cursor")
        for limit in (1, 3, 7, 18, 1000):
            v2, n = pages(c2, {"all": True}, limit)
            check([j["id"] for j in v2] == [j["id"] for j in v1],
                  "v2 pages of %d are the v1 list in its order:\n%s\n%s"
                  % (limit, [j["id"] for j in v2], [j["id"] for j in v1]))
            # As many pages as limit makes, or more: a page also ends
            # after its 2 ms of the daemon's time (a busy machine).
            check(n >= (len(v1) + limit - 1) // limit,
                  "%d pages of %d for %d jobs" % (n, limit, len(v1)))
        live, _ = pages(c2, {}, 5)
        check([j["id"] for j in live] == [j["id"] for j in v1 if j["ended_at_ms"] is None],
              "without all: the live jobs only")
        # ended: the ended part alone, newest first, in pages and whole.
        ended_v1 = [j["id"] for j in v1 if j["ended_at_ms"] is not None]
        check(len(ended_v1) == 8, "8 ended jobs: %s" % ended_v1)
        for limit in (3, 1000):
            ended, n = pages(c2, {"ended": True}, limit)
            check([j["id"] for j in ended] == ended_v1,
                  "ended, pages of %d: %s, want %s" % (limit, [j["id"] for j in ended], ended_v1))
        got = [j["id"] for j in c1.call("status", {"ended": True, "limit": 5})["jobs"]]
        check(got == ended_v1[:5], "v1 ended with limit 5: %s" % got)
        check_command(v1, v2)
        check_lib_pages(d, v1, c1)

        # The page's last job leaves the list between pages: the next page
        # goes on at its place; nothing that stayed is missed or repeated.
        first = c2.call("status", {"limit": 4})
        # (every page: one of 1000 may end on its time, under ASan)
        before = [j["id"] for j in pages(c2, {}, 1000)[0]]
        anchor = first["jobs"][-1]["id"]
        c1.call("cancel", {"id": anchor})
        rest, _ = pages_from(c2, first["next_cursor"], 4)
        stayed = [i for i in before if i != anchor]
        check([j["id"] for j in first["jobs"][:-1]] + rest == stayed,
              "after the anchor left: %s + %s, want %s"
              % ([j["id"] for j in first["jobs"]], rest, stayed))

        # Bad params.
        for p, what in (({"limit": 0}, "limit 0"), ({"limit": 1001}, "limit 1001"),
                        ({"cursor": "x"}, "a cursor not given"),
                        ({"cursor": "l1.2x"}, "a cursor with a tail")):
            e = rpc_error(c2, "status", p)
            check(e is not None and e.code == PARAMS, "v2 status %s: -32602, got %s" % (what, e))
        e = rpc_error(c1, "status", {"cursor": first["next_cursor"]})
        check(e is not None and e.code == PARAMS, "v1 status with a cursor: -32602, got %s" % e)

        # Version 1 up to 4 MiB: 24 jobs of 200 KB argv pass it.
        big = "x" * (200 << 10)
        for i in range(24):
            queued(c1, ["echo", big], name="big")
        e = rpc_error(c1, "status", {})
        check(e is not None and e.code == LIMIT and "4194304" in e.message and
              "version 2" in e.message and "limit" in e.message,
              "v1 status past 4 MiB: -32004 naming version 2 and limit, got %s" % e)
        c1.call("info")  # still served
        v2, _ = pages(c2, {"all": True}, 1000)
        check(sum(1 for j in v2 if j["name"] == "big") == 24, "v2 pages the big jobs")
        one = c2.call("show", {"id": [j for j in v2 if j["name"] == "big"][0]["id"]})
        check(one["argv"] == ["echo", big], "show still has the argv")
        check_events(c1, c2)
        c1.close()
        c2.close()
    print("answer-pages: ok")


def check_events(c1, c2):
    """v2 events: next_cursor is the last id while more follow, null at the
    end; the pages are the v1 list; cursor and after_id not both."""
    want = [e["id"] for e in c1.call("events", {"limit": 10000})["events"]]
    check(len(want) > 20 and "next_cursor" not in c1.call("events", {}),
          "v1 events: a list, no next_cursor")
    got, cursor, n = [], None, 0
    while True:
        r = c2.call("events", {"limit": 7} if cursor is None else
                    {"limit": 7, "cursor": cursor})
        got += [e["id"] for e in r["events"]]
        n += 1
        cursor = r["next_cursor"]
        if cursor is None:
            break
        check(cursor == str(r["events"][-1]["id"]), "next_cursor is the last id: %r" % r)
    check(got[:len(want)] == want and n >= len(want) // 7,
          "v2 event pages are the v1 list: %s vs %s" % (got, want))
    r = c2.call("events", {"after_id": want[-8], "limit": 7})
    check([e["id"] for e in r["events"]] == want[-7:] and
          (r["next_cursor"] is None) == (got[-1] == want[-1]),
          "after_id still works in v2: %r" % r)
    for p in ({"cursor": "x"}, {"cursor": "1", "after_id": 1}, {"cursor": "-1"}):
        e = rpc_error(c2, "events", p)
        check(e is not None and e.code == PARAMS, "v2 events %r: -32602, got %s" % (p, e))
    e = rpc_error(c1, "events", {"cursor": "1"})
    check(e is not None and e.code == PARAMS, "v1 events with a cursor: -32602, got %s" % e)


def pages_from(c, cursor, limit):
    ids = []
    while cursor is not None:
        r = c.call("status", {"limit": limit, "cursor": cursor})
        ids += [j["id"] for j in r["jobs"]]
        cursor = r["next_cursor"]
    return ids, None


if __name__ == "__main__":
    main()
