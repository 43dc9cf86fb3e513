"""stageload-web's HTTP front and what it lets out (docs/dashboards.md):

- no answer holds a job's argv, environment or cwd (the web program runs
  as root here, so the daemon shows it all of them: only its allow-lists
  keep them in);
- the JSON API's answers are the protocol's for the same parameters:
  /api/history the same buckets as `history` for a range and step (system
  and a job), /api/events and /api/status the same objects minus the
  private members (argv, env, cwd, command, end_detail, an event's
  detail); bad parameters are 400 with a body that names them;
- a job named <script>"\\n and a stage named <b>"dec\\ode are escaped in
  every answer: the page in every window, the JSON API, /metrics;
- a Host that is not its own gets 421, other paths 404, other methods 405;
- a second Host header and an unknown `window` get 400; connections that
  sit idle (all 32 an address may have, on loopback every local user's)
  are closed within seconds, and the next request is answered;
- a --listen that is not loopback is refused without --allow-remote;
- it follows a daemon restart (reconnects, says so on the page and in
  /metrics);
- the daemon's side: a killed job's kill numbers are public (another uid
  sees them; not end_detail), and info counts ended jobs and breaches.
"""

import json
import os
import pwd
import re
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from sltest import Client, client_as, kill_leftovers, poll  # noqa: E402
from webtest import (EVIL_NAME, EVIL_STAGE, MARKER, Web, cleanup_jobs, daemon, env_list,  # noqa: E402,E501
                     make_jobs)

PRIVATE = {"argv", "env", "cwd", "command", "end_detail", "on_end"}

ALL_PATHS = ["/", "/?window=15m", "/?window=1h", "/?window=24h", "/?window=7d", "/metrics", "/api/status",
             "/api/status?all=1", "/api/events?limit=10000",
             "/api/history?since=15m&step_ms=1000"]


def check_daemon_fields(d, ids):
    c = Client(d.socket)
    info = c.call("info")
    ended = {(e["state"], e["reason"]): e["count"] for e in info["counters"]["jobs_ended"]}
    assert ended.get(("killed", "swap_budget")) == 1, info["counters"]
    assert info["counters"]["breaches"] == 1, info["counters"]
    assert info["waiting_for"] == {"free": 1}, info
    c.close()
    if os.geteuid() != 0:
        print("daemon fields: another uid's view not checked (not root)")
        return
    os.chmod(d.dir, 0o755)  # the socket's directory: every user may enter
    other = client_as(65534, d.socket)
    j = other.call("show", {"id": ids["killed"]})
    other.close()
    k = j["kill"]
    assert "end_detail" not in j and "argv" not in j, j
    assert k["swap_budget_bytes"] == 1 << 30, k
    assert k["swap_growth_bytes"] == 1536 << 20, k
    assert abs(k["free_pct"] - 80) < 0.01 and k["pressure"] == "normal", k
    assert k["at_ms"] <= j["ended_at_ms"] and k["footprint_bytes"] > 0, (k, j)
    print("daemon fields: kill numbers public, counters in info")


def check_private(d, w, ids):
    """No answer holds the marker (argv, env) or the jobs' cwd, nor the
    killed job's end_detail (its sentence: "swap grew ..."); a job's own
    page neither."""
    paths = ALL_PATHS + ["/api/history?job_id=%d" % i for i in ids.values()] + \
        ["/job/%d" % i for i in ids.values()]
    for p in paths:
        st, _, body = w.get(p)
        assert st == 200, (p, st, body[:300])
        assert MARKER not in body, ("the marker leaked", p)
        assert d.dir not in body, ("a cwd or the socket's path leaked", p)
        assert "swap grew" not in body, ("end_detail leaked", p)
    for p in ("/job/999999", "/job/0", "/job/abc", "/job/", "/job/1x"):
        st, _, body = w.get(p)
        assert st == 404, (p, st, body[:300])
    print("private: %d answers (job pages too), none holds argv, env, cwd or "
          "end_detail; 404 for no such job" % len(paths))


PAGES = ["/", "/?window=15m", "/?window=1h", "/?window=24h", "/?window=7d"]
HTML_NAME = "&lt;script&gt;&quot;"
HTML_STAGE = "&lt;b&gt;&quot;dec\\ode"


def check_escaping(d, w, ids):
    """The job name <script>"\\n and the stage name <b>"dec\\ode in every
    answer that shows them: escaped, and there."""
    # The running job enters the stage too, so that /metrics shows it.
    c = Client(d.socket)
    c.call("stage", {"id": ids["runner"], "name": EVIL_STAGE})
    c.close()
    for p in PAGES:
        st, _, page = w.get(p)
        assert st == 200, (p, st)
        assert "<script" not in page and "<b>" not in page, ("raw markup", p)
        assert HTML_NAME in page, ("the escaped job name is not on the page", p)
        # the stage: marked on the killed and the running job, and the
        # kill table's stage
        assert page.count(HTML_STAGE) >= 5, (p, page.count(HTML_STAGE))
        # the runner's lane in the SVG, and its row of the running table
        assert page.count('data-job="%d"' % ids["runner"]) >= 2, p
    st, _, metrics = w.get("/metrics")
    assert 'name="<script>\\"\\n"' in metrics, "the name is not escaped in /metrics"
    line = [ln for ln in metrics.splitlines()
            if ln.startswith("stageload_job_stage_started_seconds{id=\"%d\"" % ids["runner"])]
    assert len(line) == 1 and 'stage="<b>\\"dec\\\\ode"}' in line[0], line
    assert 'name="<script>\\"\\n"' in line[0], line
    json_paths = ["/api/status", "/api/status?all=1", "/api/events?limit=10000",
                  "/api/history?job_id=%d" % ids["killed"]]
    for p in json_paths:
        st, _, body = w.get(p)
        assert st == 200, (p, st)
        assert "<" not in body and ">" not in body, p
        o = json.loads(body)
        if p.startswith("/api/status"):
            names = [j["name"] for j in o["jobs"]]
            assert EVIL_NAME in names, (p, names)
        elif p.startswith("/api/events"):
            stages = [e["stage"] for e in o["events"] if e["kind"] == "stage"]
            assert stages.count(EVIL_STAGE) == 2, (p, stages)
        else:
            stages = {b["stage"] for b in o["buckets"]}
            assert EVIL_STAGE in stages, (p, stages)
    print("escaping: the job and stage names in %d pages (every window), %d JSON "
          "answers and /metrics" % (len(PAGES), len(json_paths)))


def get_json(w, path):
    st, h, body = w.get(path)
    assert st == 200, (path, st, body[:300])
    assert h["Content-Type"].startswith("application/json"), (path, h)
    return json.loads(body)


def check_api(d, w, ids):
    c = Client(d.socket)
    poll(lambda: len(c.call("history", {"since_ms": int(time.time() * 1000) - 60000,
                                        "step_ms": 1000})["buckets"]) >= 4,
         timeout=30, step=0.2, what="4 buckets of history")
    now = int(time.time() * 1000)
    # A range that has ended: its buckets no longer change.
    for q in ({"since_ms": now - 60000, "until_ms": now - 2000, "step_ms": 1000},
              {"since_ms": now - 60000, "until_ms": now - 2000, "step_ms": 7000},
              {"since_ms": now - 3600000, "until_ms": now - 2000, "step_ms": 600000},
              {"job_id": ids["killed"], "step_ms": 500},
              {"job_id": ids["runner"], "since_ms": now - 30000, "until_ms": now - 1000,
               "step_ms": 2000}):
        # the last bucket of a coarse tier is a rollup row still growing
        # between the two reads: they agree once no sample lands between
        def same(q=q):
            web = get_json(w, "/api/history?" + "&".join("%s=%d" % kv for kv in q.items()))
            proto = c.call("history", q)
            return (web, proto) if web == proto else None
        web, proto = poll(same, timeout=10, step=0.05, what="/api/history %r to equal history" % q)
        assert web["buckets"], q
    print("api: /api/history = the protocol's history for 5 ranges and steps")

    # Events: the protocol's, with detail replaced by a stage event's name.
    web = get_json(w, "/api/events?after_id=0&limit=10000")["events"]
    proto = c.call("events", {"after_id": 0, "limit": 10000})["events"]
    want = []
    for e in proto:
        o = {k: v for k, v in e.items() if k != "detail"}
        if e["kind"] == "stage":
            o["stage"] = e["detail"]["name"]
        want.append(o)
    assert web == want, (web, want)
    stages = [e["stage"] for e in web if e["kind"] == "stage"]
    assert EVIL_STAGE in stages, stages
    ev2 = get_json(w, "/api/events?after_id=%d&limit=2" % proto[1]["id"])
    assert ev2["events"] == want[2:4] and ev2["last_id"] == want[3]["id"], ev2
    assert not any("detail" in e for e in web)
    print("api: /api/events = the protocol's events (%d), without detail" % len(web))

    # Status: the protocol's jobs minus the private members. A running
    # job's numbers move between two calls: compare until they agree.
    def same(all_):
        web = get_json(w, "/api/status" + ("?all=1" if all_ else ""))
        proto = c.call("status", {"all": all_, "limit": 200})["jobs"]
        for j in web["jobs"]:
            assert not (PRIVATE & set(j)), j
        strip = [{k: v for k, v in j.items() if k not in PRIVATE} for j in proto]
        info = c.call("info")
        return (web["jobs"] == strip and
                web["info"]["daemon_version"] == info["daemon_version"] and
                web["info"]["counters"] == info["counters"] and
                web["info"]["waiting_for"] == info["waiting_for"])
    for all_ in (False, True):
        poll(lambda: same(all_), timeout=10, step=0.05,
             what="/api/status%s to equal status" % ("?all=1" if all_ else ""))
    print("api: /api/status = the protocol's status minus %s" % ", ".join(sorted(PRIVATE)))

    # The job filter goes through to the daemon: user, state and name,
    # as status and events take them (mine, this program's own, is not).
    def same_ids(q, params):
        web = get_json(w, "/api/status?" + q)["jobs"]
        proto = c.call("status", dict(params, limit=200))["jobs"]
        return [j["id"] for j in web] == [j["id"] for j in proto]
    user = pwd.getpwuid(os.getuid()).pw_name
    for q, params in (("state=killed", {"state": ["killed"]}),
                      ("name=h*&all=1", {"name": "h*", "all": True}),
                      ("user=%s&state=running,exited" % user,
                       {"user": user, "state": ["running", "exited"]})):
        poll(lambda: same_ids(q, params), timeout=10, step=0.05,
             what="/api/status?%s to equal status" % q)
    assert get_json(w, "/api/status?state=killed")["jobs"], "no killed job"
    assert [j["name"] for j in get_json(w, "/api/status?name=h*&all=1")["jobs"]] == ["hog"]
    web = get_json(w, "/api/events?after_id=0&limit=10000&state=killed,exited")
    proto = c.call("events", {"after_id": 0, "limit": 10000,
                              "state": ["killed", "exited"]})["events"]
    assert [e["id"] for e in web["events"]] == [e["id"] for e in proto], (web, proto)
    assert proto and {e["kind"] for e in proto} <= {"killed", "exited"}, proto
    c.close()
    print("api: /api/status and /api/events pass user, state and name to the daemon")

    bad = [("/api/history?step_ms=-5", "step_ms"), ("/api/history?since_ms=abc", "since_ms"),
           ("/api/history?since=5x", "since"), ("/api/history?until_ms=1.5", "until_ms"),
           ("/api/history?job_id=0", "job_id"), ("/api/history?since=5m&since_ms=1", "since"),
           ("/api/history?step_ms=0", "step_ms"),
           ("/api/history?since_ms=0&step_ms=1", "bucket"),
           ("/api/history?job_id=999999", "999999"),
           ("/api/history?stepms=1000", "stepms"),
           ("/api/events?limit=0", "limit"), ("/api/events?limit=10001", "limit"),
           ("/api/events?after_id=x", "after_id"), ("/api/events?afterid=1", "afterid"),
           ("/api/status?all=2", "all"), ("/api/status?al=1", "al"),
           ("/api/status?mine=1", "mine"), ("/api/status?state=sleeping", "sleeping"),
           ("/api/events?user=nosuchuser-sl", "no such user"),
           ("/api/status?%ff%c3=1", "'??'")]
    for path, word in bad:
        st, h, body = w.get(path)
        assert st in (400, 404), (path, st, body[:200])
        assert h["Content-Type"].startswith("application/json"), (path, h)
        msg = json.loads(body)["error"]["message"]
        assert word in msg, (path, msg)
    print("api: %d bad requests: 400 (404 for a job that is not there), "
          "each naming what is wrong" % len(bad))


def check_queue_rows(d, w, ids):
    """The page lists the first 100 queued jobs and says how many more
    there are; its ended jobs (the kill) come from the ended part of
    status, not from paging through the queue to it."""
    c = Client(d.socket)
    more = [c.call("submit", {"argv": ["true"], "cwd": d.dir, "env": env_list(),
                              "name": "filler", "wait_free_pct": 95})["id"]
            for _ in range(130)]
    try:
        queued = c.call("info")["jobs"]["queued"]
        assert queued == 131, queued  # with the waiter
        st, _, page = w.get("/")
        assert st == 200, st
        m = re.search(r"and (\d+) more \(/api/status lists them all\)", page)
        assert m and int(m.group(1)) == queued - 100, (m and m.group(0), queued)
        assert '<tr data-job="%d"' % more[98] in page, "the 100th queued job is not listed"
        assert '<tr data-job="%d"' % more[99] not in page, "the 101st queued job is listed"
        assert re.search(r'class="kill"[^>]*data-job="%d"' % ids["killed"], page), \
            "the kill (an ended job) is not on the page"
        st, _, body = w.get("/api/status")
        assert len([j for j in json.loads(body)["jobs"] if j["state"] == "queued"]) == 131
    finally:
        for jid in more:
            c.call("cancel", {"id": jid})
        c.close()
    print("page: the first 100 of %d queued jobs and \"and %d more\"; the kill from the "
          "ended part" % (queued, queued - 100))


def raw_request(port, data):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(data)
    out = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        out += chunk
    s.close()
    return out


def check_front(w):
    for host in ("evil.example", "evil.example:%d" % w.port, "127.0.0.1:1",
                 "127.0.0.1", "127.0.0.2:%d" % w.port):
        for p in ("/", "/metrics", "/api/status", "/nope"):
            st, _, body = w.get(p, host=host)
            assert st == 421, (host, p, st)
            assert MARKER not in body
    r = raw_request(w.port, b"GET /metrics HTTP/1.0\r\n\r\n")
    assert r.startswith(b"HTTP/1.0 421") or r.startswith(b"HTTP/1.1 421"), r[:80]
    for host in ("127.0.0.1:%d" % w.port, "localhost:%d" % w.port,
                 "LOCALHOST:%d" % w.port, "[::1]:%d" % w.port):
        st, _, _ = w.get("/metrics", host=host)
        assert st == 200, (host, st)
    for p in ("/nope", "/metrics/", "/api/", "/api/statuses", "/index.html",
              "/../etc/passwd", "//", "/favicon.ico"):
        st, _, _ = w.get(p)
        assert st == 404, (p, st)
    st, h, _ = w.get("/", method="POST")
    assert st == 405 and h.get("Allow") == "GET, HEAD", (st, h)
    st, h, _ = w.get("/")
    assert "default-src 'none'" in h["Content-Security-Policy"], h
    assert h["X-Content-Type-Options"] == "nosniff", h
    st, _, _ = w.get("/api/history?since_ms=abc")
    assert st == 400, st
    print("front: 421 for other Hosts, 404 for other paths, 405 for POST")


def check_listen(d):
    web = os.path.join(os.environ.get("SL_BIN", "build/bin"), "stageload-web")
    for addr in ("0.0.0.0:0", "192.0.2.1:0", "[::]:0", "10.1.2.3:9473"):
        r = subprocess.run([web, "--socket", d.socket, "--listen", addr],
                           capture_output=True, text=True, timeout=10)
        assert r.returncode == 2 and "not a loopback address" in r.stderr, (addr, r)
    r = subprocess.run([web, "--listen", "example.com:80"], capture_output=True,
                       text=True, timeout=10)
    assert r.returncode == 2 and "numeric address" in r.stderr, r
    # Told explicitly, it listens (on every address; reached on loopback).
    p = subprocess.Popen([web, "--socket", d.socket, "--listen", "0.0.0.0:0",
                          "--allow-remote", "--host", "dash.example"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline()
        port = int(line.rsplit(":", 1)[1].strip("/\n"))
        w = Web(d.socket)
        w.port = port
        assert w.get("/metrics", host="dash.example")[0] == 200
        assert w.get("/metrics", host="dash.example:%d" % port)[0] == 200
        assert w.get("/metrics", host="other.example")[0] == 421
    finally:
        p.terminate()
        p.wait(10)
        p.stdout.close()
        p.stderr.close()
    print("listen: non-loopback refused unless --allow-remote; --host taken")


def metric(body, name):
    for line in body.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def widest_plot(page):
    """The page's plot at 960 px: it is drawn at three widths (and its
    marks listed under it), each drawing every mark."""
    start = page.index('id="plot-960"')
    return page[start:page.index("</svg>", start)]


def check_restart(d, w):
    st, _, page = w.get("/")
    restarts = widest_plot(page).count('data-mark="restart"')
    st, _, m = w.get("/metrics")
    assert metric(m, "stageload_up") == 1 and metric(m, "stageload_daemon_restarts_total") == 0
    d.stop()
    st, _, m = w.get("/metrics")
    assert st == 200 and metric(m, "stageload_up") == 0, m
    st, _, page = w.get("/")
    assert st == 200 and "daemon not reachable" in page, page[:500]
    st, _, body = w.get("/api/status")
    assert st == 503, st
    d.start()
    st, _, m = w.get("/metrics")
    assert metric(m, "stageload_up") == 1, m
    assert metric(m, "stageload_daemon_restarts_total") == 1, m
    assert metric(m, "stageload_web_reconnects_total") >= 1, m
    st, _, page = w.get("/")
    assert "the daemon restarted" in page, page[:800]
    # The events it had read are read again, and the new daemon_start.
    assert widest_plot(page).count('data-mark="restart"') == restarts + 1, restarts
    assert page.count(HTML_STAGE) >= 5, page.count(HTML_STAGE)
    print("restart: stageload_up 0 while it is down; reconnected and counted")


def check_bounds(w):
    h = "127.0.0.1:%d" % w.port
    for extra in ("evil.example", h):
        r = raw_request(w.port, ("GET /metrics HTTP/1.1\r\nHost: %s\r\nHost: %s\r\n"
                                 "Connection: close\r\n\r\n" % (h, extra)).encode())
        assert r.startswith(b"HTTP/1.1 400"), (extra, r[:200])
        assert b"more than one Host" in r, r[:400]
    for bad in ("bogus", "", "1H"):
        st, _, body = w.get("/?window=" + bad)
        assert st == 400, (bad, st)
        assert "window is one of 15m 1h 24h 7d" in body, body[:200]
    # Idle connections, as many as an address may have: each is closed by
    # the server, and a request after them is answered.
    idle = [socket.create_connection(("127.0.0.1", w.port), timeout=10) for _ in range(32)]
    t0 = time.monotonic()
    try:
        for s in idle:
            s.settimeout(max(0.1, t0 + 8 - time.monotonic()))
            try:
                assert s.recv(1) == b"", "an idle connection was sent something"
            except socket.timeout:
                raise AssertionError("an idle connection still open after 8 s")
            except ConnectionResetError:
                pass
        closed_s = time.monotonic() - t0
    finally:
        for s in idle:
            s.close()
    st, _, _ = w.get("/metrics")
    assert st == 200, st
    print("bounds: 400 for a second Host and an unknown window; 32 idle connections "
          "closed after %.1f s, then answered" % closed_s)


def check_job_stages(d, w):
    """/job/ID marks every stage of a job with the most a job may report
    (100 stages, 200 events): its events come a page at a time, and a page
    may also end early when its slice of the daemon's loop is over."""
    c = Client(d.socket)
    jid = c.call("submit", {"argv": ["sleep", "60"], "cwd": d.dir, "env": env_list(),
                            "name": "stages", "priority": 10})["id"]  # ahead of the waiter
    poll(lambda: c.call("show", {"id": jid})["state"] == "running", what="the job to run")
    for i in range(100):
        c.call("stage", {"id": jid, "name": "s%d" % i})
    st, _, body = w.get("/job/%d" % jid)
    assert st == 200, st
    marks = re.findall(r'<li data-mark="stage" data-job="%d"><time>[^<]*</time> stage'
                       r' · <a href="/job/%d">job %d</a> · (s[0-9]+)</li>' % (jid, jid, jid), body)
    assert marks == ["s%d" % i for i in range(100)], (marks[:5] + ["..."] + marks[-5:],
                                                      body[body.find('id="marks"'):][:1500])
    c.call("cancel", {"id": jid})
    c.close()
    print("job page: all 100 stages of a job marked (200 events, 3 pages)")


def main():
    d = daemon()
    try:
        d.start()
        ids = make_jobs(d)
        check_daemon_fields(d, ids)
        with Web(d.socket) as w:
            check_private(d, w, ids)
            check_api(d, w, ids)
            check_escaping(d, w, ids)
            check_front(w)
            check_bounds(w)
            check_queue_rows(d, w, ids)
            check_job_stages(d, w)
            check_listen(d)
            check_restart(d, w)
        print("OK")
    except BaseException:
        sys.stderr.write("--- daemon log ---\n" + d.log_text()[-6000:])
        raise
    finally:
        cleanup_jobs(d)
        d.cleanup()
        kill_leftovers(d)


if __name__ == "__main__":
    main()
