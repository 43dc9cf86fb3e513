"""MemoryMeter: lines at the interval from the daemon and from the local
sampler, with the same fields; marks; trace.load and trace.summary."""

import json
import os
import subprocess
import time

import pytest

import stageload
from stageload import trace

from conftest import sltest, venv_bin

FIELDS = {"ts_ms", "footprint_bytes", "footprint_peak_bytes", "swap_used_bytes", "free_pct",
          "pressure", "stage", "swap_bytes"}


def lines(path):
    with open(path) as f:
        return [json.loads(x) for x in f if x.strip()]


def run_meter(path, source, seconds=5.0, interval=0.5):
    m = stageload.MemoryMeter(path, interval=interval, source=source)
    # Marked before the start: the local sampler's first line is taken as
    # the meter starts, before anything in the block could mark it.
    m.mark("first")
    with m:
        start = time.monotonic()
        time.sleep(seconds / 2)
        m.mark("second")
        time.sleep(seconds - (time.monotonic() - start))
    assert m.error is None, m.error
    return m


@pytest.mark.parametrize("source", ["daemon", "local"])
def test_lines_at_the_interval(env, tmp_path, source):
    path = str(tmp_path / "trace.jsonl")
    m = run_meter(path, "auto" if source == "daemon" else "local")
    assert m.source == source
    got = lines(path)
    header, samples = got[0], got[1:]
    assert header["trace"] == "stageload" and header["source"] == source
    assert header["pid"] == os.getpid() and header["interval_ms"] == 500
    # 5 s at 0.5 s: 10, one fewer if a late tick (a busy machine) pushed
    # one past the end
    assert 8 <= len(samples) <= 11, len(samples)
    for s in samples:
        assert set(s) == FIELDS
        assert s["footprint_bytes"] > 0 and s["swap_bytes"] is not None
        assert s["pressure"] in ("normal", "warn", "critical", "unknown")
    gaps = [b["ts_ms"] - a["ts_ms"] for a, b in zip(samples, samples[1:])]
    # never closer than the interval allows; a late tick makes one longer
    assert all(350 <= g <= 1500 for g in gaps), gaps
    stages = [s["stage"] for s in samples]
    n = stages.index("second")
    assert set(stages[:n]) == {"first"} and set(stages[n:]) == {"second"}, stages
    if source == "daemon":
        # the daemon's numbers: its fixture proc root says 50 % free
        assert all(s["free_pct"] == pytest.approx(50.0) for s in samples)
        assert header["daemon_interval_ms"] == 100


def test_auto_is_local_when_the_interval_is_finer_than_the_daemons(env, tmp_path):
    path = str(tmp_path / "t.jsonl")
    with stageload.MemoryMeter(path, interval=0.05) as m:
        time.sleep(0.3)
    assert m.source == "local" and lines(path)[0]["source"] == "local"


def test_local_without_a_daemon(tmp_path, monkeypatch):
    monkeypatch.setenv("STAGELOAD_SOCKET", str(tmp_path / "none.sock"))
    path = str(tmp_path / "t.jsonl")
    with stageload.MemoryMeter(path, interval=0.1) as m:
        sltest.poll(lambda: m.lines >= 3, what="three lines")
    assert lines(path)[0]["source"] == "local"
    with pytest.raises(stageload.DaemonNotRunning):
        stageload.MemoryMeter(path, source="daemon").start()


def test_summary_per_stage(tmp_path):
    path = str(tmp_path / "written.jsonl")
    G = 1 << 30
    rows = [  # ts, footprint, swap used, stage
        (1000, 1 * G, 0, None),
        (1500, 4 * G, 0, "encode"),
        (2000, 6 * G, 1 * G, "encode"),
        (2500, 5 * G, 1 * G, "denoise"),
        (3000, 9 * G, 4 * G, "denoise"),
        (3500, 8 * G, 2 * G, "denoise"),
        (4000, 3 * G, 2 * G, "decode"),
        (5000, 12 * G, 12 * G, "decode"),
    ]
    with open(path, "w") as f:
        f.write(json.dumps({"trace": "stageload", "version": 1, "source": "local"}) + "\n")
        for ts, fp, used, st in rows:
            f.write(json.dumps({"ts_ms": ts, "footprint_bytes": fp, "swap_used_bytes": used,
                                "free_pct": 50, "pressure": "normal", "stage": st,
                                "swap_bytes": 0}) + "\n")
        f.write('{"ts_ms": 6000, "footpr')  # cut while it was written
    t = trace.load(path)
    assert t.header["source"] == "local" and len(t.samples) == 8
    s = trace.summary(path)
    assert [r.stage for r in s] == [None, "encode", "denoise", "decode"]
    enc, den, dec = s[1], s[2], s[3]
    assert (enc.start_ms, enc.duration_ms, enc.footprint_peak_bytes) == (1500, 1000, 6 * G)
    assert enc.swap_growth_bytes == 1 * G          # from 0 before it to 1G
    assert (den.duration_ms, den.footprint_peak_bytes) == (1500, 9 * G)
    assert den.swap_growth_bytes == 3 * G          # from 1G before it to a 4G peak
    assert (dec.duration_ms, dec.footprint_peak_bytes, dec.swap_growth_bytes) == \
        (1000, 12 * G, 10 * G)                     # from 2G to 12G
    assert s[0].samples == 1 and dec.samples == 2


def test_console_meter(env, tmp_path):
    path = str(tmp_path / "cmd.jsonl")
    r = subprocess.run([venv_bin("stageload"), "meter", "--out", path, "--interval", "0.2",
                        "--", "sh", "-c", "sleep 2; exit 4"])
    assert r.returncode == 4
    got = lines(path)
    assert got[0]["source"] == "daemon" and got[0]["pid"] > 0
    # 2 s at 0.2 s: 10, less what the meter's connection took to start
    assert 4 <= len(got) - 1 <= 12 and set(got[1]) == FIELDS
