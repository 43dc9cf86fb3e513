"""stageloadctl plot writes well-formed SVG (Python's XML parser reads it)
with the expected series: system history with a lane per job and the kill
marked and the stages jobs reported, one job over its life with its stages,
and a JSONL trace with its stages marked. Names from users are escaped (a
job is named <script>"\\n, a stage <b>"dec\\ode) and kept whole (a stage
of 120 two-byte characters is not cut inside one).
"""

import json
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from sltest import Client, kill_leftovers, poll  # noqa: E402
from webtest import (EVIL_NAME, EVIL_STAGE, LONG_STAGE, cleanup_jobs, daemon,  # noqa: E402
                     make_jobs)

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
    marks = [(e.get("data-mark"), e.get("data-job"), "".join(e.itertext()))
             for e in root.iter(SVG + "g") if e.get("data-mark")]
    kills = {e.get("data-job") for e in root.iter()
             if "kill-marker" in (e.get("class") or "").split()}
    return root, series, lanes, marks, kills


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
        out = os.path.join(d.dir, "sys.svg")
        ctl(d, "plot", "--since", "2m", "-o", out)
        root, series, lanes, marks, kills = parse(out)
        assert {"free_pct", "swap_used_bytes", "pressure"} <= set(series), series.keys()
        assert series["free_pct"].get("d").count("L") >= 2, series["free_pct"].get("d")
        assert lanes == set(ids.values()), (lanes, ids)
        assert str(ids["killed"]) in kills, kills
        assert ("kill", str(ids["killed"]), "kill %d" % ids["killed"] * 2) in marks, marks  # label, title
        text = "".join(root.itertext())
        assert EVIL_NAME.strip() in text, "the job's name, unescaped by the parser"
        raw = open(out).read()
        assert "<script" not in raw and "&lt;script&gt;&quot;" in raw
        stages = [(m[1], m[2]) for m in marks if m[0] == "stage"]
        want = [(str(ids["killed"]), n * 2) for n in ("load", EVIL_STAGE)] + \
               [(str(ids["runner"]), n * 2) for n in ("encode", LONG_STAGE)]
        assert sorted(stages) == sorted(want), stages  # label and title, whole
        assert "<b>" not in raw and "&lt;b&gt;&quot;dec\\ode" in raw
        print("plot: system history, %d lanes, the kill and 4 stages marked" % len(lanes))

        out = os.path.join(d.dir, "job.svg")
        ctl(d, "plot", "--job", str(ids["killed"]), "-o", out)
        root, series, lanes, marks, kills = parse(out)
        assert {"footprint_bytes", "swap_bytes"} <= set(series), series.keys()
        assert lanes == {ids["killed"]} and str(ids["killed"]) in kills, (lanes, kills)
        stages = [(m[1], m[2]) for m in marks if m[0] == "stage"]
        assert stages == [(str(ids["killed"]), n * 2) for n in ("load", EVIL_STAGE)], stages
        out = os.path.join(d.dir, "runner.svg")
        ctl(d, "plot", "--job", str(ids["runner"]), "-o", out)
        root, series, lanes, marks, kills = parse(out)
        stages = [(m[1], m[2]) for m in marks if m[0] == "stage"]
        assert stages == [(str(ids["runner"]), n * 2) for n in ("encode", LONG_STAGE)], stages
        print("plot: a job's footprint and swap, its kill and stages marked")

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
        assert stages == ["denoisedenoise", "decodedecode"], stages  # label and title
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
        assert stages == ["encodeencode", "decodedecode"], stages
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
        assert len(stages) == 1 and 200 < len(stages[0]) and \
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
