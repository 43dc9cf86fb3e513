"""The dashboard page in a real headless Chromium (Debian's chromium and
chromium-driver, driven by python3-selenium): with a daemon on a fixture
proc root that has history and jobs (one killed), the page's SVG has the
memory series, a lane per job, the kill marker and the stages the jobs
reported (their names escaped, whole); the kill table names the stage the
killed job was in; each window link (15 min, 1 h, 24 h, 7 d) plots its
span; the queue table says why a job waits in the words `stageloadctl run`
prints for it, a size for a job that waits for one (wait_free_bytes);
the running table shows swap growth against the budget; the page's sizes
and states are `stageloadctl status`'s, character for character;
a screenshot is kept
under the build dir (artifacts/web-page.png); the page updates itself when
the fixture changes; it fits a narrow window and turns dark in dark mode.

A skip without the browser or selenium, a failure under CI=true.
"""

import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from sltest import Client, kill_leftovers, poll, require_tools, skip  # noqa: E402
from webtest import (EVIL_STAGE, LONG_STAGE, Web, artifacts, browser, live_text,  # noqa: E402
                     cleanup_jobs, daemon, env_list, import_selenium, make_jobs,
                     set_memory)

# The page draws the plot at 360, 640 and 960 px and shows the one that
# fits; the browser's 1100 px window shows the widest.
PLOT = "#plot-960 svg"

WINDOWS = [("15 min", 15 * 60000), ("1 h", 3600000), ("24 h", 86400000),
           ("7 d", 7 * 86400000)]


def text(e):
    return e.get_attribute("textContent")


def check_stages(drv, ids):
    from selenium.webdriver.common.by import By
    got = {}
    for e in drv.find_elements(By.CSS_SELECTOR, PLOT + " g.slp-stage"):
        got.setdefault(int(e.get_attribute("data-job")), []).append(
            text(e.find_element(By.TAG_NAME, "title")))
    assert got == {ids["killed"]: ["load", EVIL_STAGE],
                   ids["runner"]: ["encode", LONG_STAGE]}, got
    row = drv.find_element(By.CSS_SELECTOR, '#kills tr.kill[data-job="%d"]' % ids["killed"])
    cells = row.find_elements(By.TAG_NAME, "td")
    assert text(cells[-1]) == EVIL_STAGE, [text(c) for c in cells]
    print("page: 4 stage marks, names whole and escaped; the kill's stage in its table")


# The boxes of the texts of the plot shown (the one of the three with a
# width), and the pairs of them that overlap (by more than half a pixel:
# antialiasing); each text's size in CSS px: its font size times the
# plot's scale.
LABELS_JS = """
const svg = [...document.querySelectorAll('#plot svg')]
  .find(s => s.getBoundingClientRect().width > 0);
const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
const texts = [...svg.querySelectorAll('text')].filter(t => t.textContent.trim());
const boxes = texts.map(t => t.getBoundingClientRect());
const over = [];
for (let i = 0; i < boxes.length; i++)
  for (let j = i + 1; j < boxes.length; j++) {
    const a = boxes[i], b = boxes[j];
    if (a.left < b.right - 0.5 && b.left < a.right - 0.5 &&
        a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5)
      over.push([texts[i].textContent, texts[j].textContent]);
  }
const small = texts.map(t => [t.textContent,
    parseFloat(getComputedStyle(t).fontSize) * scale])
  .filter(x => x[1] < 10);
const html = [...document.body.querySelectorAll('*')]
  .filter(e => !e.closest('svg') && e.getClientRects().length &&
          [...e.childNodes].some(n => n.nodeType == 3 && n.textContent.trim()))
  .map(e => [e.tagName + ' ' + e.textContent.slice(0, 20),
             parseFloat(getComputedStyle(e).fontSize)])
  .filter(x => x[1] < 10);
return {id: svg.parentNode.id, n: texts.length, over: over, small: small,
        html: html, marks: svg.querySelectorAll('g.slp-mark').length,
        labels: svg.querySelectorAll('g.slp-mark text').length,
        listed: document.querySelectorAll('#marks li').length};
"""


def check_labels(drv, width):
    """No two texts of the plot overlap (measured in the DOM), every mark is
    in the list under the plot, and every text is at least 10 CSS px."""
    r = drv.execute_script(LABELS_JS)
    assert not r["over"], "overlapping labels at %d px: %r" % (width, r["over"])
    assert r["marks"] == r["listed"] and r["marks"] > 0, r
    assert not r["small"] and not r["html"], "text under 10 px at %d px: %r" % (width, r)
    print("page: %d px shows %s: %d texts, none overlapping, none under 10 px; "
          "%d of %d marks labelled, all %d listed"
          % (width, r["id"], r["n"], r["labels"], r["marks"], r["listed"]))


def check_end_marks(drv, ids):
    """A cancelled job's end and a swap kill have their own marks and
    legend entries."""
    from selenium.webdriver.common.by import By
    css = drv.find_elements
    kill = css(By.CSS_SELECTOR, PLOT + ' .end-marker[data-job="%d"]' % ids["killed"])
    cancel = css(By.CSS_SELECTOR, PLOT + ' .end-marker[data-job="%d"]' % ids["queued"])
    assert kill and {e.get_attribute("data-mark") for e in kill} == {"kill"}, kill
    assert cancel and {e.get_attribute("data-mark") for e in cancel} == {"cancel"}, cancel
    shape = lambda e: re.sub(r"[-0-9.]+", "N", e.get_attribute("d"))  # noqa: E731
    assert shape(kill[0]) != shape(cancel[0]), (shape(kill[0]), shape(cancel[0]))
    keys = [e.get_attribute("data-key") for e in css(By.CSS_SELECTOR, PLOT + " .slp-key")]
    assert "kill" in keys and "cancel" in keys, keys
    print("page: kill and cancel marks differ (%s / %s); legend %s"
          % (shape(kill[0])[:12], shape(cancel[0])[:12], keys))


def check_ended(drv, ids):
    """The recently ended table beside the queue: the killed job, how it
    ended, its peak and swap growth, how long it ran; its id links to its
    page, as the rows of the other tables and the plot's marks do."""
    from selenium.webdriver.common.by import By
    row = drv.find_element(By.CSS_SELECTOR, '#ended tr[data-job="%d"]' % ids["killed"])
    cells = [text(c) for c in row.find_elements(By.TAG_NAME, "td")]
    assert cells[3] == "killed (swap_budget)" and cells[4] not in ("0", "") and \
        cells[5] == "1.5G" and cells[6] != "-", cells
    for sel in ('#ended tr[data-job="%d"] a' % ids["killed"],
                '#running tr[data-job="%d"] a' % ids["runner"],
                '#kills tr[data-job="%d"] a' % ids["killed"],
                PLOT + ' a[href="/job/%d"] g.slp-mark' % ids["killed"],
                PLOT + ' a[href="/job/%d"] g.lane' % ids["runner"]):
        assert drv.find_elements(By.CSS_SELECTOR, sel), sel
    href = row.find_element(By.TAG_NAME, "a").get_attribute("href")
    assert href.endswith("/job/%d" % ids["killed"]), href
    print("page: recently ended %s; rows and marks link to /job/ID" % cells)


def check_job_page(drv, host, ids):
    """/job/ID for a running and an ended job: its fields, its footprint
    plot with its stages and budget line."""
    from selenium.webdriver.common.by import By
    for key in ("runner", "killed"):
        jid = ids[key]
        drv.get("http://%s/job/%d" % (host, jid))
        assert text(drv.find_element(By.TAG_NAME, "h1")) == "job %d" % jid
        fields = {text(r.find_element(By.TAG_NAME, "th")): text(r.find_element(By.TAG_NAME, "td"))
                  for r in drv.find_elements(By.CSS_SELECTOR, "#fields tr")}
        assert fields["state"] == ("running" if key == "runner" else "killed (swap_budget)"), fields
        fp = drv.find_element(By.CSS_SELECTOR, PLOT + ' path[data-series="footprint_bytes"]')
        assert re.search(r"[ML][-0-9.]+ [-0-9.]+", fp.get_attribute("d")), fp.get_attribute("d")
        budget = drv.find_element(By.CSS_SELECTOR, PLOT + " g.slp-budget")
        want = (8 << 30) if key == "runner" else (1 << 30)
        assert float(budget.get_attribute("data-bytes")) == want
        stages = [text(e.find_element(By.TAG_NAME, "title"))
                  for e in drv.find_elements(By.CSS_SELECTOR, PLOT + " g.slp-stage")]
        assert len(stages) == 2, stages
        drv.save_screenshot(os.path.join(artifacts(), "web-job-%s.png" % key))
        print("page: /job/%d (%s): %s; footprint drawn, %d stages, budget line"
              % (jid, key, fields["state"], len(stages)))


def check_unprivileged(d, drv, ids):
    """Run as nobody (as docs/dashboards.md advises), the page still draws
    the stage marks of root's jobs: stage names are public (PROTOCOL.md,
    events)."""
    if os.geteuid() != 0:
        print("page: unprivileged run skipped (needs root to change user)")
        return
    # nobody must reach the socket inside the daemon's private dir
    os.chmod(d.dir, 0o711)
    with Web(d.socket, user=65534) as w:
        drv.get("http://%s/?window=15m" % w.host())
        check_stages(drv, ids)
        drv.save_screenshot(os.path.join(artifacts(), "web-page-nobody.png"))
    print("page: run as nobody, root's jobs' stage marks drawn")


def x_extent(d):
    xs = [float(x) for x in re.findall(r"[ML]\s*([-0-9.]+)[ ,]", d)]
    return max(xs) - min(xs) if xs else 0.0


# The swap series' value near x (within 2 px) at its highest, read back
# from the drawing of the plot shown: the chart's frame and its bytes axis's
# top label.
SPIKE_JS = """
const svg = document.querySelector(arguments[0]);
const f = svg.querySelector('rect.slp-frame');
const y0 = +f.getAttribute('y'), y1 = y0 + +f.getAttribute('height');
const x0 = +f.getAttribute('x'), x1 = x0 + +f.getAttribute('width');
const units = {K: 2 ** 10, M: 2 ** 20, G: 2 ** 30, T: 2 ** 40};
const top = Math.max(...[...svg.querySelectorAll('g.slp-values text')]
  .map(t => t.textContent).filter(t => units[t.slice(-1)])
  .map(t => parseFloat(t) * units[t.slice(-1)]));
const t0 = +svg.dataset.t0, t1 = +svg.dataset.t1;
const x = x0 + (arguments[1] - t0) * (x1 - x0) / (t1 - t0);
const d = svg.querySelector('path[data-series="swap_used_bytes"]').getAttribute('d');
const pts = [...d.matchAll(/[ML]([-0-9.]+) ([-0-9.]+)/g)].map(m => [+m[1], +m[2]]);
const near = pts.filter(p => Math.abs(p[0] - x) <= 2).map(p => (y1 - p[1]) / (y1 - y0) * top);
return near.length ? Math.max(...near) : -1;
"""


def check_spike(d, drv, host):
    """8 h of 1 min rollups (the tier the 24 h window's 2 min buckets read)
    with one 1 s spike of 6G swap in one of its 120 samples: the 24 h plot
    draws it at its height, not at its bucket's average (about 25M)."""
    import sqlite3
    now = int(time.time() * 1000)
    first = (now - 8 * 3600000) // 60000 * 60000
    last = now - 600000
    spike_t = first + (last - first) // 2 // 60000 * 60000
    spike = 6 << 30
    rows = [(t, 120, 8000, 8000, 8000 * 120, 0, spike if t == spike_t else 0,
             spike if t == spike_t else 0, 8 << 30, 8 << 30, 120 * (8 << 30), 1)
            for t in range(first, last, 60000)]
    con = sqlite3.connect(d.db, timeout=30)
    con.executemany("INSERT OR REPLACE INTO rollup_1m VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", rows)
    con.commit()
    con.close()
    drv.get("http://%s/?window=24h" % host)
    got = drv.execute_script(SPIKE_JS, PLOT, spike_t)
    assert abs(got - spike) <= 0.05 * spike, (got, spike)
    drv.save_screenshot(os.path.join(artifacts(), "web-page-spike.png"))
    print("page: a 1 s spike in 8 h drawn at %.0fM of 6144M on the 24 h plot"
          % (got / (1 << 20)))


def check_default_window(drv, host):
    """The page's default window starts at the first sample: a daemon up
    for seconds fills the plot's width, not its right 1 %."""
    from selenium.webdriver.common.by import By
    drv.get("http://%s/" % host)
    frame = drv.find_element(By.CSS_SELECTOR, PLOT + " rect.slp-frame")
    width = float(frame.get_attribute("width"))
    free = drv.find_element(By.CSS_SELECTOR, PLOT + ' path[data-series="free_pct"]')
    got = x_extent(free.get_attribute("d"))
    assert got >= 0.8 * width, (got, width)
    print("page: the default window starts at the first sample (free %% spans %.0f of %.0f px)"
          % (got, width))


def check_windows(drv, host):
    """Each link of the window bar plots its span: the SVG's time axis
    (data-t0/t1) and the free % series narrowing as the span grows."""
    from selenium.webdriver.common.by import By
    widths = []
    drv.get("http://%s/" % host)
    for label, span in WINDOWS:
        link = [a for a in drv.find_elements(By.CSS_SELECTOR, "nav#window a")
                if a.text == label]
        assert len(link) == 1, (label, [a.text for a in
                                        drv.find_elements(By.CSS_SELECTOR, "nav#window a")])
        link[0].click()
        poll(lambda: [a.text for a in drv.find_elements(
            By.CSS_SELECTOR, "nav#window a[aria-current]")] == [label],
            what="the %s window to load" % label)
        drv.execute_script("window.stop()")  # no reload while it is read
        svg = drv.find_element(By.CSS_SELECTOR, PLOT)
        t0, t1 = int(svg.get_attribute("data-t0")), int(svg.get_attribute("data-t1"))
        assert t1 - t0 == span, (label, t1 - t0, span)
        free = drv.find_element(By.CSS_SELECTOR, PLOT + ' path[data-series="free_pct"]')
        widths.append(x_extent(free.get_attribute("d")))
    # About a minute of history: a wider window draws it narrower.
    assert widths[0] > widths[1] >= widths[2] >= widths[3] and widths[0] > 0, widths
    print("page: window links plot 15 min, 1 h, 24 h, 7 d (series widths %s)" %
          ["%.0f" % w for w in widths])


class Waiting:
    """A `stageloadctl run` that queues, and the words of its latest queue
    line after "queued: position N of M, " (its stderr, not a terminal)."""

    def __init__(self, d, args):
        bin_ = os.path.join(os.environ.get("SL_BIN", "build/bin"), "stageloadctl")
        c = Client(d.socket)
        before = {j["id"] for j in c.call("status", {"all": True})["jobs"]}
        self.proc = subprocess.Popen([bin_, "--socket", d.socket, "run"] + args +
                                     ["--", "sleep", "60"], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)
        self.buf = b""
        self.words = None
        self.next_words()
        self.id = poll(lambda: [j["id"] for j in c.call("status", {"all": True})["jobs"]
                                if j["id"] not in before], what="the run's job")[0]
        c.close()

    def next_words(self, timeout=15):
        """The words of the next queue line (deadline-bounded)."""
        end = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = end - time.monotonic()
            r, _, _ = select.select([self.proc.stderr], [], [], max(left, 0))
            assert r, "no queue line from run within %ss" % timeout
            chunk = os.read(self.proc.stderr.fileno(), 4096)
            assert chunk, "run ended: %r" % self.buf
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        m = re.match(r"queued: position \d+ of \d+, (.*)$", line.decode())
        assert m, line
        self.words = m.group(1)
        return self.words

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)
        self.proc.stderr.close()


def check_queue_words(d, drv, host, ids):
    """The queue table's words for a job are those `stageloadctl run`
    prints for it (the same waiting_for, the same numbers): free, head
    and exclusive; free 94.7% against the 95% a job waits for reads
    "94.7% < 95%", never "95% < 95%"."""
    from selenium.webdriver.common.by import By
    runs = []

    def compare():
        c = Client(d.socket)
        waits = {j["id"]: j["waiting_for"] for j in c.call("status")["jobs"]
                 if j["state"] == "queued"}
        c.close()
        drv.get("http://%s/" % host)
        for r in runs:
            if r.proc.poll() is not None:
                continue
            row = drv.find_element(By.CSS_SELECTOR, '#queue tr[data-job="%d"]' % r.id)
            cell = text(row.find_elements(By.TAG_NAME, "td")[4])
            assert cell == r.words, (r.id, waits.get(r.id), cell, r.words)
            seen[waits[r.id]] = cell
    seen = {}
    try:
        c = Client(d.socket)
        c.call("cancel", {"id": ids["queued"]})  # the runs go to the head
        c.close()
        set_memory(d, 94.7, 3)
        runs.append(Waiting(d, ["--wait-free", "95", "--name", "w95"]))
        runs.append(Waiting(d, ["--exclusive", "--wait-free", "10", "--name", "alone"]))
        compare()  # w95 waits for free memory, alone for the job ahead
        runs[0].stop()  # alone is at the head: it waits to run alone
        runs[1].next_words()
        compare()
        assert set(seen) == {"free", "head", "exclusive"}, seen
        assert seen["free"] == "free 94.7% < 95%", seen
        print("page: queue words as `run` prints them (%s)" %
              "; ".join("%s: %s" % kv for kv in sorted(seen.items())))
    finally:
        for r in runs:
            if r.proc.returncode is None:
                r.stop()
        set_memory(d, 80, 3)


def check_queue_bytes(d, drv, host):
    """A job that waits for a size (wait_free_bytes 15G, 12.8G of 16G
    available) is said as a size in the queue table, never as the 0 % it
    does not wait for."""
    from selenium.webdriver.common.by import By
    c = Client(d.socket)
    jid = c.call("submit", {"argv": ["sleep", "60"], "cwd": d.dir, "env": env_list(),
                            "name": "w15g", "wait_free_bytes": 15 << 30})["id"]
    try:
        poll(lambda: c.call("show", {"id": jid}).get("waiting_for") == "free",
             what="w15g to wait for free memory")
        drv.get("http://%s/" % host)
        row = drv.find_element(By.CSS_SELECTOR, '#queue tr[data-job="%d"]' % jid)
        cell = text(row.find_elements(By.TAG_NAME, "td")[4])
        assert cell == "free 13G < 15G", cell
        print("page: a job waiting for 15G reads %r" % cell)
    finally:
        c.call("cancel", {"id": jid})
        c.close()


def check_queue_held(d, drv, host):
    """A held job's reason names the release that lets it go, with its id,
    as the CLI says it."""
    from selenium.webdriver.common.by import By
    c = Client(d.socket)
    jid = c.call("submit", {"argv": ["sleep", "60"], "cwd": d.dir, "env": env_list(),
                            "name": "kept", "held": True})["id"]
    try:
        poll(lambda: c.call("show", {"id": jid}).get("waiting_for") == "held",
             what="kept to be held")
        drv.get("http://%s/" % host)
        row = drv.find_element(By.CSS_SELECTOR, '#queue tr[data-job="%d"]' % jid)
        cell = text(row.find_elements(By.TAG_NAME, "td")[4])
        assert cell.endswith("held: stageloadctl release %d" % jid), cell
        print("page: a held job reads %r" % cell)
    finally:
        c.call("cancel", {"id": jid})
        c.close()


def check_running(d, drv, ids):
    from selenium.webdriver.common.by import By
    c = Client(d.socket)
    j = c.call("show", {"id": ids["runner"]})
    c.close()
    row = drv.find_element(By.CSS_SELECTOR, '#running tr[data-job="%d"]' % ids["runner"])
    m = row.find_element(By.TAG_NAME, "meter")
    assert float(m.get_attribute("max")) == j["swap_budget_bytes"] == 8 << 30, m
    assert float(m.get_attribute("value")) == j["swap_growth_bytes"] == 512 << 20, m
    cells = [text(c) for c in row.find_elements(By.TAG_NAME, "td")]
    assert text(m) == "6%", cells  # 512M of 8G
    print("page: running job's swap growth against its budget (%s)" % " ".join(cells[4:8]))


def check_time_limit(d, drv, host):
    """A job killed by its time limit has its own end mark and legend entry
    (not a swap kill's, and not in the kills table); /job/ID lists its one
    attempt, which ended time_limit. A job a breach requeued lists two
    attempts, the first requeued for swap_budget."""
    from selenium.webdriver.common.by import By
    css = drv.find_elements
    c = Client(d.socket)
    slow = c.call("submit", {"argv": ["sleep", "60"], "cwd": d.dir, "env": env_list(),
                             "name": "slow", "time_limit_ms": 500})["id"]
    retried = c.call("submit", {"argv": ["sleep", "60"], "cwd": d.dir, "env": env_list(),
                                "name": "again", "swap_budget_bytes": 1 << 30,
                                "retry_on_breach": 1})["id"]
    try:
        poll(lambda: c.call("show", {"id": slow})["state"] == "killed", timeout=15,
             what="slow to reach its time limit")
        assert c.call("show", {"id": slow})["end_reason"] == "time_limit"
        poll(lambda: c.call("show", {"id": retried})["state"] == "running",
             what="again to run")
        set_memory(d, 80, 4.5)  # 1.5G of growth: past again's 1G
        poll(lambda: c.call("show", {"id": retried})["attempt"] == 2 and
             c.call("show", {"id": retried})["state"] == "running", timeout=15,
             what="again's second attempt")
        c.call("cancel", {"id": retried})
        poll(lambda: c.call("show", {"id": retried})["state"] == "killed",
             what="again to end")
        drv.get("http://%s/?window=15m" % host)
        marks = {e.get_attribute("data-mark")
                 for e in css(By.CSS_SELECTOR, PLOT + ' .end-marker[data-job="%d"]' % slow)}
        assert marks == {"timelimit"}, marks
        keys = [e.get_attribute("data-key") for e in css(By.CSS_SELECTOR, PLOT + " .slp-key")]
        assert "timelimit" in keys, keys
        assert not css(By.CSS_SELECTOR, '#kills tr[data-job="%d"]' % slow)
        rows = {}
        for jid in (slow, retried):
            drv.get("http://%s/job/%d" % (host, jid))
            rows[jid] = [[text(c) for c in r.find_elements(By.TAG_NAME, "td")]
                         for r in css(By.CSS_SELECTOR, "#attempts tbody tr")]
        (one,) = rows[slow]
        assert one[0] == "1" and one[-1] == "time_limit" and one[6] != "-", one
        first, second = rows[retried]
        assert first[-1] == "requeued: swap_budget" and second[-1] == "cancel", rows
        assert first[6] != "-" and second[6] != "-", rows
        drv.save_screenshot(os.path.join(artifacts(), "web-job-attempts.png"))
        print("page: a time limit's own mark and legend entry; attempts %s / %s"
              % (one, [first[-1], second[-1]]))
    finally:
        for jid in (slow, retried):
            try:
                c.call("cancel", {"id": jid})
            except Exception:
                pass
        c.close()
        set_memory(d, 80, 3)


def status_words(d):
    """`stageloadctl status --all`'s FOOTPRINT, SWAP/BUDGET and STATE of
    each job, by id."""
    bin_ = os.path.join(os.environ.get("SL_BIN", "build/bin"), "stageloadctl")
    out = subprocess.run([bin_, "--socket", d.socket, "status", "--all", "-o",
                          "id,footprint,swap,state"], capture_output=True, text=True,
                         timeout=20, check=True).stdout
    rows = {}
    for line in out.splitlines()[1:]:
        f = line.split()
        if len(f) >= 4 and f[0].isdigit():
            rows[int(f[0])] = (f[1], f[2], " ".join(f[3:]))
    return rows


def check_units(d, drv, host, ids):
    """The page's sizes and states are the CLI's, character for character
    ("8.0G", "512M", "0B", "killed (swap_budget)"): the running table's
    footprint, swap growth/budget and state, and the recently ended
    table's peak, growth and end with the job page's budget, against
    `stageloadctl status`'s FOOTPRINT, SWAP/BUDGET and STATE."""
    from selenium.webdriver.common.by import By

    def cells(sel):
        row = drv.find_element(By.CSS_SELECTOR, sel)
        return [text(c) for c in row.find_elements(By.TAG_NAME, "td")]

    def page():
        drv.get("http://%s/?window=15m" % host)
        run = cells('#running tr[data-job="%d"]' % ids["runner"])
        end = cells('#ended tr[data-job="%d"]' % ids["killed"])
        drv.get("http://%s/job/%d" % (host, ids["killed"]))
        budget = text(drv.find_element(
            By.CSS_SELECTOR, '#fields tr[data-field="swap budget"] td'))
        return {ids["runner"]: (run[4], "%s/%s" % (run[5], run[6]), run[3]),
                ids["killed"]: (end[4], "%s/%s" % (end[5], budget), end[3])}

    got = {}

    def same():
        want = status_words(d)
        got.update(page())
        return all(want.get(k) == v for k, v in got.items()) and want
    want = poll(same, timeout=15, step=0.5, what="the page's sizes to be the CLI's")
    assert got[ids["runner"]][1].endswith("/8.0G"), got
    print("page: sizes and states as `stageloadctl status` prints them: %s (status %s)"
          % (got, {k: want[k] for k in got}))


def main():
    require_tools("chromium", "chromedriver")
    if not import_selenium():
        skip("python3-selenium is not installed (apt-get install python3-selenium, "
             "or scripts/deps.sh --test)", root_only=True)
    from selenium.webdriver.common.by import By
    d = daemon()
    profile = tempfile.mkdtemp(prefix="sl-chromium-")
    drv = None
    try:
        d.start()
        ids = make_jobs(d)
        # History: the page's 15 min window has 2 s buckets; wait for a
        # few of them (the daemon's own clock, not a sleep).
        c = Client(d.socket)
        poll(lambda: len(c.call("history", {"since_ms": int(time.time() * 1000) - 60000,
                                            "step_ms": 2000})["buckets"]) >= 5,
             timeout=30, step=0.5, what="5 buckets of history")
        c.close()
        with Web(d.socket) as w:
            drv = browser(profile)
            drv.set_page_load_timeout(30)
            drv.get("http://%s/?window=15m" % w.host())
            css = drv.find_elements
            free = css(By.CSS_SELECTOR, PLOT + ' path[data-series="free_pct"]')
            assert len(free) == 1, "no free % series in the SVG"
            pts = free[0].get_attribute("d").count("L")
            assert pts >= 4, "the free %% series has %d segments" % pts
            assert css(By.CSS_SELECTOR, PLOT + ' path[data-series="swap_used_bytes"]')
            assert css(By.CSS_SELECTOR, PLOT + ' [data-series="pressure"] rect')
            lanes = {int(e.get_attribute("data-job"))
                     for e in css(By.CSS_SELECTOR, PLOT + " g.lane")}
            assert lanes == set(ids.values()), (lanes, ids)
            kill = css(By.CSS_SELECTOR, PLOT + ' .kill-marker[data-job="%d"]' % ids["killed"])
            assert kill, "no kill marker for the killed job"
            assert css(By.CSS_SELECTOR, '#kills tr.kill[data-job="%d"]' % ids["killed"])
            assert css(By.CSS_SELECTOR, '#queue tr[data-job="%d"]' % ids["queued"])
            check_stages(drv, ids)
            check_running(d, drv, ids)
            check_ended(drv, ids)
            check_units(d, drv, w.host(), ids)
            drv.get("http://%s/?window=15m" % w.host())
            shot = os.path.join(artifacts(), "web-page.png")
            drv.save_screenshot(shot)
            print("page: series, %d lanes, kill marker; screenshot %s" % (len(lanes), shot))

            check_queue_words(d, drv, w.host(), ids)
            check_queue_bytes(d, drv, w.host())
            check_queue_held(d, drv, w.host())
            drv.get("http://%s/?window=15m" % w.host())
            check_end_marks(drv, ids)
            check_labels(drv, 1100)
            drv.save_screenshot(os.path.join(artifacts(), "web-page-marks.png"))
            check_job_page(drv, w.host(), ids)
            check_default_window(drv, w.host())
            check_windows(drv, w.host())
            check_spike(d, drv, w.host())
            check_time_limit(d, drv, w.host())
            drv.live("http://%s/?window=15m" % w.host())

            before = live_text(drv, "free-pct")
            assert before == "80.0%", before
            set_memory(d, 40, 3)
            poll(lambda: live_text(drv, "free-pct") == "40.0%",
                 timeout=30, step=0.5, what="the page to show free 40%")
            print("page: updated itself after the fixture changed (%s -> 40.0%%)" % before)

            check_unprivileged(d, drv, ids)

            drv.set_window_size(400, 900)
            drv.get("http://%s/" % w.host())
            over = drv.execute_script(
                "return document.documentElement.scrollWidth - window.innerWidth")
            assert over <= 0, "the page is %d px wider than a 400 px window" % over
            drv.get("http://%s/?window=15m" % w.host())
            check_labels(drv, 400)
            drv.save_screenshot(os.path.join(artifacts(), "web-page-400.png"))
            drv.get("http://%s/" % w.host())
            drv.execute_cdp_cmd("Emulation.setEmulatedMedia", {
                "features": [{"name": "prefers-color-scheme", "value": "dark"}]})
            bg = drv.execute_script(
                "return getComputedStyle(document.body).backgroundColor")
            assert bg == "rgb(22, 22, 22)", bg
            drv.save_screenshot(os.path.join(artifacts(), "web-page-narrow-dark.png"))
            print("page: fits 400 px; dark background in dark mode")
        print("OK")
    except BaseException:
        sys.stderr.write("--- daemon log ---\n" + d.log_text()[-4000:])
        raise
    finally:
        if drv is not None:
            drv.quit()
        shutil.rmtree(profile, ignore_errors=True)
        cleanup_jobs(d)
        d.cleanup()
        kill_leftovers(d)


if __name__ == "__main__":
    main()
