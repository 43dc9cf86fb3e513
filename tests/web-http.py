"""stageload-web's HTTP front and what it lets out (docs/dashboards.md):

- no answer holds a job's argv, environment or cwd (the web program runs
  as root here, so the daemon shows it all of them: only its allow-lists
  keep them in);
- a job named <script>"\\n is escaped in HTML, SVG, JSON and Prometheus;
- a Host that is not its own gets 421, other paths 404, other methods 405;
- a --listen that is not loopback is refused without --allow-remote;
- it follows a daemon restart (reconnects, says so on the page and in
  /metrics);
- the daemon's side: a killed job's kill numbers are public (another uid
  sees them; not end_detail), and info counts ended jobs and breaches.
"""

import json
import os
import socket
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from sltest import Client, client_as, kill_leftovers, poll  # noqa: E402
from webtest import EVIL_NAME, MARKER, Web, cleanup_jobs, daemon, make_jobs  # noqa: E402

ALL_PATHS = ["/", "/?window=15m", "/?window=7d", "/metrics", "/api/status",
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
    """No answer holds the marker (argv, env) or the jobs' cwd."""
    paths = ALL_PATHS + ["/api/history?job_id=%d" % i for i in ids.values()]
    for p in paths:
        st, _, body = w.get(p)
        assert st == 200, (p, st, body[:300])
        assert MARKER not in body, ("the marker leaked", p)
        assert d.dir not in body, ("a cwd or the socket's path leaked", p)
    print("private: %d answers, none holds argv, env or cwd" % len(paths))


def check_escaping(w, ids):
    st, _, page = w.get("/")
    assert st == 200
    assert "<script" not in page, "a raw <script in the page"
    assert "&lt;script&gt;&quot;" in page, "the escaped name is not on the page"
    # its lane in the SVG, and its row of the running table
    assert page.count('data-job="%d"' % ids["runner"]) >= 2
    st, _, metrics = w.get("/metrics")
    assert 'name="<script>\\"\\n"' in metrics, "the name is not escaped in /metrics"
    for p in ("/api/status", "/api/status?all=1"):
        st, _, body = w.get(p)
        assert "<" not in body and ">" not in body, p
        names = [j["name"] for j in json.loads(body)["jobs"]]
        assert EVIL_NAME in names, (p, names)
    print("escaping: HTML, SVG, JSON and Prometheus")


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


def check_restart(d, w):
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
    print("restart: stageload_up 0 while it is down; reconnected and counted")


def main():
    d = daemon()
    try:
        d.start()
        ids = make_jobs(d)
        check_daemon_fields(d, ids)
        with Web(d.socket) as w:
            check_private(d, w, ids)
            check_escaping(w, ids)
            check_front(w)
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
