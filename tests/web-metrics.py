"""/metrics against the real Prometheus tools: `promtool check metrics`
passes on it, and a Prometheus started here on loopback (a temp data dir)
scrapes it; the test reads series back through Prometheus's query API and
finds the fixture's free ratio, the running job's swap growth, the kill
counted by state and reason, and the breach; a held job, one waiting on
`after N` and one on its group are counted under their own waiting_for
label, not "other". The example Grafana dashboard
(docs/grafana/) is valid JSON whose queries name only metrics /metrics has
and parse in Prometheus.

Needs Debian's prometheus package (promtool, prometheus): a skip without
it, a failure under CI=true.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from sltest import Client, kill_leftovers, poll, require_tools  # noqa: E402
from sltest import Daemon  # noqa: E402
from webtest import Web, cleanup_jobs, env_list, free_port, make_jobs  # noqa: E402


def promtool_check(body):
    r = subprocess.run(["promtool", "check", "metrics"], input=body,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, "promtool check metrics:\n%s%s" % (r.stdout, r.stderr)
    print("promtool check metrics: OK")


class Prometheus:
    def __init__(self, target):
        self.dir = tempfile.mkdtemp(prefix="sl-prom-")
        self.port = free_port()
        conf = os.path.join(self.dir, "prometheus.yml")
        with open(conf, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                    "scrape_configs:\n  - job_name: stageload\n"
                    "    static_configs:\n      - targets: ['%s']\n" % target)
        # free_port's port is free when it answers; another test may bind
        # it before Prometheus does: then another port.
        for attempt in range(3):
            self.log = open(os.path.join(self.dir, "prometheus.log"), "w")
            self.proc = subprocess.Popen(
                ["prometheus", "--config.file=" + conf,
                 "--storage.tsdb.path=" + os.path.join(self.dir, "data"),
                 "--web.listen-address=127.0.0.1:%d" % self.port],
                stdout=self.log, stderr=subprocess.STDOUT, cwd=self.dir)
            try:
                poll(self.ready, timeout=60, step=0.2, what="prometheus to be ready")
                return
            except AssertionError:
                if attempt == 2 or "address already in use" not in self.log_text():
                    raise
                self.proc.kill()
                self.proc.wait()
                self.log.close()
                self.port = free_port()

    def ready(self):
        if self.proc.poll() is not None:
            raise AssertionError("prometheus exited:\n" + self.log_text())
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/-/ready" % self.port,
                                        timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    def query(self, q):
        url = "http://127.0.0.1:%d/api/v1/query?%s" % (
            self.port, urllib.parse.urlencode({"query": q}))
        with urllib.request.urlopen(url, timeout=10) as r:
            out = json.load(r)
        assert out["status"] == "success", out
        return out["data"]["result"]

    def log_text(self):
        try:
            with open(os.path.join(self.dir, "prometheus.log")) as f:
                return f.read()[-4000:]
        except OSError:
            return ""

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def value_of(prom, q, want=None):
    """The one series' value of q, once Prometheus has it (and, with want,
    once it equals want)."""
    def get():
        r = prom.query(q)
        if len(r) != 1:
            return None
        v = float(r[0]["value"][1])
        return (v,) if want is None or abs(v - want) < 1e-9 * max(1, abs(want)) else None
    return poll(get, timeout=30, step=0.5, what="%s in prometheus (want %r)" % (q, want))[0]


def grafana_queries():
    path = os.path.join(os.environ.get("SL_SRC", os.path.join(os.path.dirname(
        os.path.abspath(__file__)), "..")), "docs", "grafana", "stageload-dashboard.json")
    with open(path) as f:
        dash = json.load(f)  # valid JSON
    exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
    names = set()
    for e in exprs + [v.get("definition", "") for v in dash["templating"]["list"]]:
        names |= set(re.findall(r"\bstageload_[a-z0-9_]+", e))
    return exprs, names


def check_grafana(prom, body):
    """The example dashboard asks only for metrics /metrics has, and every
    query is one Prometheus accepts."""
    have = set(re.findall(r"^# TYPE (\S+) ", body, re.M))
    exprs, names = grafana_queries()
    assert names, "no stageload metric in the dashboard"
    missing = names - have
    assert not missing, "the Grafana dashboard asks for metrics that do not exist: %s" % missing
    for e in exprs:
        prom.query(e.replace("$instance", ".*"))
    print("grafana: %d queries over %d metrics, all exist and parse" % (len(exprs), len(names)))


def waiting_counts(body):
    return {m.group(1): int(m.group(2)) for m in re.finditer(
        r'^stageload_jobs_waiting\{waiting_for="([^"]*)"\} (\d+)$', body, re.M)}


def check_waiting_labels(d, w, runner):
    """A held job, one after the runner and one whose group is full: each
    under its own label (the daemon's info counts them so)."""
    c = Client(d.socket)
    common = {"argv": ["sleep", "60"], "cwd": d.dir, "env": env_list()}
    c.call("submit", dict(common, name="held", held=True))
    c.call("submit", dict(common, name="later", after=[runner]))
    # priority 1 puts it ahead of the waiter at the head, so it runs
    gpu = c.call("submit", dict(common, name="gpu1", group="gpu", priority=1))["id"]
    poll(lambda: c.call("show", {"id": gpu})["state"] == "running", what="gpu1 to run")
    c.call("submit", dict(common, name="gpu2", group="gpu"))
    want = {"held": 1, "after": 1, "group": 1}
    poll(lambda: all(c.call("info")["waiting_for"].get(k) == v for k, v in want.items()),
         what="info to count held, after and group")
    c.close()
    st, _, body = w.get("/metrics")
    assert st == 200, st
    got = waiting_counts(body)
    for k, v in want.items():
        assert got.get(k) == v, "stageload_jobs_waiting{waiting_for=%r}: %s\n%s" % (
            k, got.get(k), body)
    assert "other" not in got, got
    print("/metrics: held, after and group counted by their own label: %s" % got)


def main():
    require_tools("promtool", "prometheus")
    d = Daemon(interval="0.1s",
               config="grace = 1000ms\nsettle = 0\ngroup.gpu.max_running = 1\n")
    prom = None
    try:
        d.start()
        ids = make_jobs(d)
        c = Client(d.socket)
        growth = c.call("show", {"id": ids["runner"]})["swap_growth_bytes"]
        free = c.call("info")["sample"]["free_pct"] / 100.0
        c.close()
        assert growth == 512 << 20, growth
        with Web(d.socket) as w:
            st, h, body = w.get("/metrics")
            assert st == 200 and h["Content-Type"].startswith("text/plain; version=0.0.4"), h
            promtool_check(body)
            prom = Prometheus(w.host())
            assert value_of(prom, 'up{job="stageload"}', 1) == 1
            v = value_of(prom, "stageload_memory_free_ratio", free)
            print("prometheus: stageload_memory_free_ratio = %g" % v)
            v = value_of(prom, 'stageload_job_swap_growth_bytes{id="%d"}' % ids["runner"],
                         growth)
            print("prometheus: the running job's swap growth = %d" % v)
            value_of(prom, 'stageload_jobs_ended_total{state="killed",reason="swap_budget"}', 1)
            value_of(prom, "stageload_breaches_total", 1)
            value_of(prom, 'stageload_jobs{state="running"}', 1)
            value_of(prom, 'stageload_jobs_waiting{waiting_for="free"}', 1)
            value_of(prom, "stageload_swap_used_bytes", 3 << 30)
            value_of(prom, "stageload_up", 1)
            check_grafana(prom, body)
            check_waiting_labels(d, w, ids["runner"])
        print("OK")
    except BaseException:
        sys.stderr.write("--- daemon log ---\n" + d.log_text()[-4000:])
        if prom is not None:
            sys.stderr.write("--- prometheus log ---\n" + prom.log_text())
        raise
    finally:
        if prom is not None:
            prom.stop()
        cleanup_jobs(d)
        d.cleanup()
        kill_leftovers(d)


if __name__ == "__main__":
    main()
