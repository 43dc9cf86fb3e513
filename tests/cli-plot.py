"""stageloadctl plot writes well-formed SVG (Python's XML parser reads it)
with the expected series: system history with a lane per job and the kill
marked and the stages jobs reported, one job over its life with its stages,
and a JSONL trace with its stages marked. Names from users are escaped (a
job is named <script>"\\n, a stage <b>"dec\\ode) and kept whole (a stage
of 120 two-byte characters is not cut inside one).
"""

import json
import os
import re
import sqlite3
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from sltest import Client, kill_leftovers, poll  # noqa: E402
from webtest import (EVIL_NAME, EVIL_STAGE, LONG_STAGE, cleanup_jobs, daemon,  # noqa: E402
                     env_list, make_jobs)

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

SVG = "{http://www.w3.org/2000/svg}"


def ctl(d, *args):
    bin_ = os.path.join(os.environ.get("SL_BIN", "build/bin"), "stageloadctl")
    r = subprocess.run([bin_, "--socket", d.socket] + list(args), capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, (args, r.returncode, r.stderr)
    return r


def parse(path):
    root = ET.parse(path).getroot()
    assert root.tag == SVG + "svg", root.tag
    series = {e.get("data-series"): e for e in root.iter() if e.get("data-series")}
    lanes = {int(e.get("data-job")) for e in root.iter(SVG + "g")
             if "lane" in (e.get("class") or "").split()}
    # (kind, job, the title: the whole label, shown on hover); a label
    # drawn is the title or its start (cut with an ellipsis), or none
    # where it would overlap another
    marks = []
    for e in root.iter(SVG + "g"):
        if not e.get("data-mark"):
            continue
        title = "".join(e.find(SVG + "title").itertext())
        label = e.find(SVG + "text")
        if label is not None:
            shown = "".join(label.itertext())
            assert shown == title or (shown.endswith("\u2026") and
                                      title.startswith(shown[:-1])), (shown, title)
        marks.append((e.get("data-mark"), e.get("data-job"), title))
    kills = {e.get("data-job") for e in root.iter()
             if "kill-marker" in (e.get("class") or "").split()}
    return root, series, lanes, marks, kills


def chart(root):
    """The chart's frame (x0, y0, x1, y1) and the top of its bytes axis (the
    right-hand labels), to read values back from the drawing."""
    f = next(e for e in root.iter(SVG + "rect") if e.get("class") == "slp-frame")
    x0, y0 = float(f.get("x")), float(f.get("y"))
    x1, y1 = x0 + float(f.get("width")), y0 + float(f.get("height"))
    vals = next(e for e in root.iter(SVG + "g") if e.get("class") == "slp-values")
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    top = max(float(t.text[:-1]) * units[t.text[-1]] for t in vals.iter(SVG + "text")
              if t.text[-1] in units)
    return x0, y0, x1, y1, top


def points(path):
    return [(float(x), float(y)) for x, y in
            re.findall(r"[ML]([-0-9.]+) ([-0-9.]+)", path.get("d"))]


def check_job_axis(root, budget):
    """A job plot: the bytes axis fits the job (its footprint is about
    100K), its 1G budget a line drawn at the top and said to be above;
    clock labels although the job lived a few seconds."""
    x0, y0, x1, y1, top = chart(root)
    b = [e for e in root.iter(SVG + "g") if e.get("class") == "slp-budget"]
    assert len(b) == 1 and float(b[0].get("data-bytes")) == budget, b
    assert top < budget / 8 and b[0].get("data-above") == "1", (top, budget)
    label = "".join(next(b[0].iter(SVG + "text")).itertext())
    assert label == "swap budget 1.0G, above", label  # the CLI's form
    ticks = [t.text for e in root.iter(SVG + "g") if e.get("class") == "slp-time"
             for t in e.iter(SVG + "text")]
    assert len(ticks) >= 2, ticks
    print("plot: a job's axis to %.0fK, its budget line (%s), clock labels %s"
          % (top / 1024, label, ticks[:3]))


def check_compare(d, ids):
    """plot --compare A B: both jobs' footprint and swap on one axis of time
    from each one's start (both begin at the left edge), each one's stages
    named with its id, durations on the time axis."""
    # a short run of its own (the killed job may end before its first
    # sample is stored) beside the running one
    c = Client(d.socket)
    a = c.call("submit", {"argv": ["sleep", "0.6"], "cwd": d.dir, "env": env_list(),
                          "name": "short", "priority": 100, "wait_free_pct": 10})["id"]
    c.call("wait", {"id": a}, timeout=20)
    c.call("stage", {"id": ids["runner"], "name": "late"})
    c.close()
    b = ids["runner"]
    out = os.path.join(d.dir, "compare.svg")
    ctl(d, "plot", "--compare", str(a), str(b), "-o", out)
    root, series, lanes, marks, kills = parse(out)
    assert {"footprint_bytes", "swap_bytes", "footprint_bytes_2", "swap_bytes_2"} <= \
        set(series), series.keys()
    assert root.get("data-t0") == "0", root.get("data-t0")
    x0, y0, x1, y1, top = chart(root)
    for name in ("footprint_bytes", "footprint_bytes_2"):
        first = points(series[name])[0][0]
        # the first sample within a sample interval (100 ms) of the start
        assert first - x0 <= 0.1 * (x1 - x0), (name, first, x0, x1)
    assert lanes == {a, b}, lanes
    stages = sorted(m[2] for m in marks if m[0] == "stage")
    assert stages == sorted(["%d: %s" % (b, n) for n in ("encode", LONG_STAGE, "late")]), \
        stages
    ticks = [t.text for e in root.iter(SVG + "g") if e.get("class") == "slp-time"
             for t in e.iter(SVG + "text")]
    assert ticks and all(re.fullmatch(r"0|[0-9hms.]+", t) for t in ticks), ticks
    for bad in (["--compare", str(a)], ["--compare", str(a), "x"],
                ["--job", str(a), "--compare", str(a), str(b)], [str(a), str(b), str(a)],
                ["--job", str(a), str(b)]):
        bin_ = os.path.join(os.environ.get("SL_BIN", "build/bin"), "stageloadctl")
        r = subprocess.run([bin_, "--socket", d.socket, "plot"] + bad + ["-o", out],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 2, (bad, r.returncode, r.stderr)
    # plot A B is --compare A B; plot A is --job A
    # (the running job's line grows between the two: same plot, not the
    # same bytes)
    ctl(d, "plot", str(a), str(b), "-o", out + ".2")
    root2, series2, lanes2, marks2, _ = parse(out + ".2")
    assert (set(series2), lanes2, marks2, root2.get("data-t0")) == \
        (set(series), lanes, marks, "0"), (series2.keys(), lanes2, marks2)
    print("plot: --compare %d %d from their start (ticks %s), stages named by job"
          % (a, b, ticks[:4]))


def check_end_kinds(d, ids):
    """A job that could not start (failed: spawn), one cancelled while
    queued and a swap kill: each its own mark and legend entry."""
    c = Client(d.socket)
    bad = c.call("submit", {"argv": ["/nonexistent/sl-no-such-command"], "cwd": d.dir,
                            "env": env_list(), "name": "nostart", "priority": 100,
                            "wait_free_pct": 10})["id"]
    j = c.call("wait", {"id": bad}, timeout=20)
    c.close()
    assert j["state"] == "failed", j
    out = os.path.join(d.dir, "ends.svg")
    ctl(d, "plot", "--since", "5m", "-o", out)
    root = ET.parse(out).getroot()
    ends = {(e.get("data-job"), e.get("data-mark")) for e in root.iter(SVG + "path")
            if "end-marker" in (e.get("class") or "").split()}
    want = {(str(bad), "failed"), (str(ids["queued"]), "cancel"), (str(ids["killed"]), "kill")}
    assert want <= ends, (want, ends)
    keys = [e.get("data-key") for e in root.iter(SVG + "g") if e.get("data-key")]
    assert {"kill", "cancel", "failed"} <= set(keys), keys
    print("plot: failed, cancel and kill each marked as such; legend %s" % keys)


def check_young_daemon(d):
    """`plot --since 8h` on a daemon up for seconds: the axis starts at the
    first sample, so the free % series fills the plot's width."""
    out = os.path.join(d.dir, "young.svg")
    ctl(d, "plot", "--since", "8h", "-o", out)
    root, series, lanes, marks, kills = parse(out)
    x0, y0, x1, y1, top = chart(root)
    xs = [x for x, _ in points(series["free_pct"])]
    t0, t1 = int(root.get("data-t0")), int(root.get("data-t1"))
    assert max(xs) - min(xs) >= 0.8 * (x1 - x0), (min(xs), max(xs), x0, x1)
    print("plot: --since 8h on a daemon up %.0f s spans %.0f of %.0f px"
          % ((t1 - t0) / 1000, max(xs) - min(xs), x1 - x0))


def check_fifteen_minutes(d):
    """`plot --since 8h` on a daemon up 15 minutes (its 10 s rollups, the
    tier an 8 h plot reads, from 15 minutes ago on): the axis starts at the
    first of them, not 8 h back, and the free % series fills the plot's
    width rather than its right 3 %."""
    now = int(time.time() * 1000)
    first = (now - 15 * 60000) // 10000 * 10000
    rows = [(t, 20, 6000, 6000, 6000 * 20, 1 << 30, 1 << 30, 20 << 30,
             8 << 30, 8 << 30, 20 * (8 << 30), 1)
            for t in range(first, now - 120000, 10000)]
    con = sqlite3.connect(d.db, timeout=30)
    con.executemany("INSERT OR IGNORE INTO rollup_10s VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", rows)
    con.commit()
    con.close()
    out = os.path.join(d.dir, "fifteen.svg")
    ctl(d, "plot", "--since", "8h", "-o", out)
    root, series, lanes, marks, kills = parse(out)
    x0, y0, x1, y1, top = chart(root)
    t0, t1 = int(root.get("data-t0")), int(root.get("data-t1"))
    # within a bucket of the first row (8 h back would be 7.75 h off)
    assert abs(t0 - first) <= 60000, (t0 - first, t1 - t0)
    xs = [x for x, _ in points(series["free_pct"])]
    assert max(xs) - min(xs) >= 0.9 * (x1 - x0), (min(xs), max(xs), x0, x1)
    print("plot: --since 8h on a daemon up 15 min: the axis spans %.1f min, "
          "free %% %.0f of %.0f px" % ((t1 - t0) / 60000, max(xs) - min(xs), x1 - x0))


def check_spike(d):
    """8 h of 10 s rollups (the tier an 8 h plot reads) with one 1 s spike:
    swap 6G and free 20 % in one sample of its 20. The plot draws the
    bucket's max swap and min free, so the spike is drawn at its height,
    not at the bucket's average (about 60M)."""
    now = int(time.time() * 1000)
    first = (now - 8 * 3600000 + 60000) // 10000 * 10000
    last = now - 600000
    spike_t = first + (last - first) // 2 // 10000 * 10000
    spike = 6 << 30  # tall enough to read back to 1 % on the fixture's 64G axis
    rows = []
    for t in range(first, last, 10000):
        hit = t == spike_t
        rows.append((t, 20, 2000 if hit else 8000, 8000, 8000 * 19 + (2000 if hit else 8000),
                     0, spike if hit else 0, spike if hit else 0,
                     8 << 30, 8 << 30, 20 * (8 << 30), 1))
    con = sqlite3.connect(d.db, timeout=30)
    con.executemany("INSERT OR REPLACE INTO rollup_10s VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", rows)
    con.commit()
    con.close()
    out = os.path.join(d.dir, "spike.svg")
    ctl(d, "plot", "--since", "8h", "-o", out)
    root, series, lanes, marks, kills = parse(out)
    x0, y0, x1, y1, top = chart(root)
    t0, t1 = int(root.get("data-t0")), int(root.get("data-t1"))
    sx = x0 + (spike_t - t0) * (x1 - x0) / (t1 - t0)
    near = lambda name: [p for p in points(series[name]) if abs(p[0] - sx) <= 2]  # noqa: E731
    swap = max((y1 - y) / (y1 - y0) * top for _, y in near("swap_used_bytes"))
    free = min((y1 - y) / (y1 - y0) * 100 for _, y in near("free_pct"))
    assert abs(swap - spike) <= 0.02 * spike, (swap, spike, top)
    assert abs(free - 20) <= 1, free
    print("plot: a 1 s spike in 8 h drawn at swap %.0fM (of 6144M), free %.1f%% (of 20%%)"
          % (swap / (1 << 20), free))


def main():
    d = daemon()
    try:
        d.start()
        ids = make_jobs(d)
        c = Client(d.socket)
        poll(lambda: len(c.call("history", {"since_ms": int(time.time() * 1000) - 60000,
                                            "step_ms": 1000})["buckets"]) >= 3,
             timeout=30, step=0.5, what="3 buckets of history")
        c.close()
        check_young_daemon(d)
        out = os.path.join(d.dir, "sys.svg")
        ctl(d, "plot", "--since", "2m", "-o", out)
        root, series, lanes, marks, kills = parse(out)
        assert {"free_pct", "swap_used_bytes", "pressure"} <= set(series), series.keys()
        assert series["free_pct"].get("d").count("L") >= 2, series["free_pct"].get("d")
        assert lanes == set(ids.values()), (lanes, ids)
        assert str(ids["killed"]) in kills, kills
        assert ("kill", str(ids["killed"]), "kill %d" % ids["killed"]) in marks, marks
        text = "".join(root.itertext())
        assert EVIL_NAME.strip() in text, "the job's name, unescaped by the parser"
        raw = open(out).read()
        assert "<script" not in raw and "&lt;script&gt;&quot;" in raw
        stages = [(m[1], m[2]) for m in marks if m[0] == "stage"]
        want = [(str(ids["killed"]), n) for n in ("load", EVIL_STAGE)] + \
               [(str(ids["runner"]), n) for n in ("encode", LONG_STAGE)]
        assert sorted(stages) == sorted(want), stages  # titles, whole
        assert "<b>" not in raw and "&lt;b&gt;&quot;dec\\ode" in raw
        print("plot: system history, %d lanes, the kill and 4 stages marked" % len(lanes))

        out = os.path.join(d.dir, "job.svg")
        ctl(d, "plot", "--job", str(ids["killed"]), "-o", out)
        root, series, lanes, marks, kills = parse(out)
        assert {"footprint_bytes", "swap_bytes"} <= set(series), series.keys()
        assert lanes == {ids["killed"]} and str(ids["killed"]) in kills, (lanes, kills)
        stages = [(m[1], m[2]) for m in marks if m[0] == "stage"]
        assert stages == [(str(ids["killed"]), n) for n in ("load", EVIL_STAGE)], stages
        check_job_axis(root, 1 << 30)
        out = os.path.join(d.dir, "runner.svg")
        ctl(d, "plot", "--job", str(ids["runner"]), "-o", out)
        root, series, lanes, marks, kills = parse(out)
        stages = [(m[1], m[2]) for m in marks if m[0] == "stage"]
        assert stages == [(str(ids["runner"]), n) for n in ("encode", LONG_STAGE)], stages
        print("plot: a job's footprint and swap, its kill and stages marked")

        check_compare(d, ids)
        c = Client(d.socket)
        c.call("cancel", {"id": ids["queued"]})
        c.close()
        check_end_kinds(d, ids)
        check_fifteen_minutes(d)
        check_spike(d)

        trace = os.path.join(d.dir, "trace.jsonl")
        t0 = 1764480000000
        with open(trace, "w") as f:
            for i in range(20):
                f.write(json.dumps({"ts_ms": t0 + i * 500, "free_pct": 60 - i,
                                    "swap_used_bytes": i << 28, "pressure": "normal",
                                    "footprint_bytes": (i + 1) << 30}) + "\n")
                if i in (5, 12):
                    f.write(json.dumps({"ts_ms": t0 + i * 500,
                                        "stage": "decode" if i == 12 else "denoise"}) + "\n")
        out = os.path.join(d.dir, "trace.svg")
        ctl(d, "plot", "--trace", trace, "-o", out)
        root, series, lanes, marks, kills = parse(out)
        assert {"free_pct", "swap_used_bytes", "footprint_bytes"} <= set(series), series.keys()
        assert series["footprint_bytes"].get("d").count("L") == 19
        stages = [m[2] for m in marks if m[0] == "stage"]
        assert stages == ["denoise", "decode"], stages
        print("plot: a trace with its stages marked")

        # The trace MemoryMeter writes (the Python package, from this
        # tree, sampling locally): a first line saying what wrote it, then
        # every line naming the stage it is in.
        sys.path.insert(0, os.path.join(SRC, "python"))
        import stageload  # noqa: E402
        trace = os.path.join(d.dir, "meter.jsonl")
        with stageload.MemoryMeter(trace, interval=0.1, source="local") as m:
            m.mark("encode")
            poll(lambda: len(open(trace).read().splitlines()) >= 4,
                 what="meter lines in encode")
            m.mark("decode")
            poll(lambda: len(open(trace).read().splitlines()) >= 8,
                 what="meter lines in decode")
        out = os.path.join(d.dir, "meter.svg")
        ctl(d, "plot", "--trace", trace, "-o", out)
        root, series, lanes, marks, kills = parse(out)
        assert {"free_pct", "footprint_bytes"} <= set(series), series.keys()
        stages = [m[2] for m in marks if m[0] == "stage"]
        assert stages == ["encode", "decode"], stages
        print("plot: a MemoryMeter trace, one mark where each stage begins")

        # A trace's stage may be longer than a label holds: the label is
        # cut before a character, never inside one (the XML parser reads it).
        trace = os.path.join(d.dir, "long.jsonl")
        with open(trace, "w") as f:
            for i in range(3):
                f.write(json.dumps({"ts_ms": t0 + i * 500, "free_pct": 50,
                                    "stage": "\u00e9" * 300}) + "\n")
        out = os.path.join(d.dir, "long.svg")
        ctl(d, "plot", "--trace", trace, "-o", out)
        root, series, lanes, marks, kills = parse(out)
        stages = [m[2] for m in marks if m[0] == "stage"]
        assert len(stages) == 1 and 100 < len(stages[0]) and \
            set(stages[0]) == {"\u00e9"}, stages
        print("plot: a trace's long stage cut between characters")

        bad = os.path.join(d.dir, "bad.jsonl")
        with open(bad, "w") as f:
            f.write('{"ts_ms": 1}\nnot json\n')
        bin_ = os.path.join(os.environ.get("SL_BIN", "build/bin"), "stageloadctl")
        r = subprocess.run([bin_, "plot", "--trace", bad, "-o", out], capture_output=True,
                           text=True, timeout=30)
        assert r.returncode == 1 and "line 2" in r.stderr, r
        r = subprocess.run([bin_, "plot", "--trace", trace], capture_output=True, text=True,
                           timeout=30)
        assert r.returncode == 0 and ET.fromstring(r.stdout).tag == SVG + "svg", r
        print("OK")
    except BaseException:
        sys.stderr.write("--- daemon log ---\n" + d.log_text()[-4000:])
        raise
    finally:
        cleanup_jobs(d)
        d.cleanup()
        kill_leftovers(d)


if __name__ == "__main__":
    main()
