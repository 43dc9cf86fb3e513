"""Learned peaks through the fixture proc root (docs/jobs.md, "Learned
peaks"): a job whose name was given reserves what its past runs of that
name reached, as --expect would. The daemon reads free % and swap from
files this test writes; the jobs are real processes whose footprint it
measures.

Run one scenario with: jobs-learn.py NAME...
"""

import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "lib"))
from sltest import poll, scenarios  # noqa: E402

sc = scenarios()

MIB = 1 << 20
GROW_MIB = 256
# free 50 % of the fixture's 16G and the head asks for 49.5 %: 80M of
# headroom. A job of the name reserves its learned ~270M until its
# footprint reaches it, which the head does not fit beside.
FREE = 50.0
WAIT_FREE = 49.5

# A job that holds little until told to go, then takes mib MiB (touched),
# says so, and exits when told to stop.
GROWER = r"""
import os, sys, time
d, tag, mib = sys.argv[1], sys.argv[2], int(sys.argv[3])
def wait(p):
    while not os.path.exists(p):
        time.sleep(0.02)
wait(os.path.join(d, tag + ".go"))
b = bytearray(mib << 20)
b[::4096] = b"x" * len(b[::4096])
open(os.path.join(d, tag + ".grown"), "w").close()
wait(os.path.join(d, tag + ".stop"))
"""


def grower(c, d, tag, mib=GROW_MIB, **opts):
    p = {"argv": [sys.executable, "-c", GROWER, d.dir, tag, str(mib)], "cwd": d.dir,
         "env": sc.env_list()}
    p.update(opts)
    return c.call("submit", p)["id"]


def touch(d, name):
    open(os.path.join(d.dir, name), "w").close()


def grown_ms(d, tag):
    p = os.path.join(d.dir, tag + ".grown")
    poll(lambda: os.path.exists(p), what=tag + " to grow")
    return os.stat(p).st_mtime * 1000


def prime(c, d, tag, **opts):
    """A run that grows and exits on its own: what the name learns."""
    touch(d, tag + ".go")
    jid = grower(c, d, tag, **opts)
    grown_ms(d, tag)
    # Stop once the daemon has sampled it grown.
    poll(lambda: sc.show(c, jid)["footprint_bytes"] >= GROW_MIB * MIB,
         what=tag + "'s footprint to be sampled grown")
    touch(d, tag + ".stop")
    j = sc.wait_state(c, jid, "exited", timeout=20)
    assert j["exit_code"] == 0, j
    assert j["footprint_peak_bytes"] >= GROW_MIB * MIB, j
    return j


def cli(d, *args):
    out = subprocess.run([os.path.join(d.bin, "stageloadctl"), "--socket", d.socket]
                         + list(args), capture_output=True, text=True, timeout=10)
    assert out.returncode == 0, out.stderr
    return out.stdout


def cli_show(d, jid):
    return cli(d, "show", str(jid))


def sc_reserve(d, m, c):
    """A second run is held back by the learned peak while the first run
    is below it, and admitted once it reaches it; --expect 0 opts out; a
    killed run's peak is kept, with its flag."""
    m.set(free_pct=FREE)
    p1 = prime(c, d, "p1", name="learner")
    peak = p1["footprint_peak_bytes"]
    a = grower(c, d, "a", name="learner")
    ja = sc.wait_state(c, a, "running")
    assert ja["expect_source"] == "learned" and ja["expect_runs"] == 1, ja
    assert ja["expect_bytes"] == peak, (ja["expect_bytes"], peak)
    assert ja["learned"]["runs"] == 1 and ja["learned"]["killed"] == 0, ja
    assert ja["learned"]["footprint_peak_bytes"] == peak, ja
    text = cli_show(d, a)
    assert "(learned from 1 run)" in text, text
    assert "Learned from the last 1 run of learner" in text, text
    # a holds ~10M of its ~270M: b waits for the reservation...
    b = grower(c, d, "b", name="learner", wait_free_pct=WAIT_FREE)
    poll(lambda: (sc.show(c, b).get("waiting_for") == "expect") or None,
         what="the second run to wait for the learned reservation")
    sc.samples(d, 5)
    jb = sc.show(c, b)
    assert jb["state"] == "queued" and jb["waiting_for"] == "expect", jb
    # ...until a has taken what it reserved: not before a was told to
    # grow.
    t_go = int(time.time() * 1000)
    touch(d, "a.go")
    grown_ms(d, "a")
    jb = sc.wait_state(c, b, "running", timeout=15)
    assert jb["admitted_at_ms"] >= t_go, (jb["admitted_at_ms"], t_go)
    assert jb["expect_source"] == "learned", jb
    poll(lambda: sc.show(c, b)["footprint_peak_bytes"] > 0,
         what="the second run to be sampled")
    # Both killed: b low (~10M), a at its peak. Their peaks are kept,
    # flagged as killed (lower bounds); the highest stays a's.
    for jid in (b, a):
        c.call("cancel", {"id": jid})
        sc.wait_state(c, jid, "killed")
    peak = max(peak, sc.show(c, a)["footprint_peak_bytes"])
    # --expect 0: nothing reserved, so a head behind it is not held.
    z = grower(c, d, "z", name="learner", expect_bytes=0)
    jz = sc.wait_state(c, z, "running")
    assert jz["expect_source"] == "given" and jz["expect_bytes"] == 0, jz
    assert jz["learned"]["runs"] == 3 and jz["learned"]["killed"] == 2, jz
    assert jz["learned"]["footprint_peak_bytes"] == peak, jz
    assert "2 killed: their peak is a lower bound" in cli_show(d, z)
    h = grower(c, d, "h", name="other", wait_free_pct=WAIT_FREE)
    sc.wait_state(c, h, "running")
    # The same without --expect 0 would have held h back: a learner
    # submitted now reserves the peak again.
    y = grower(c, d, "y", name="learner")
    jy = sc.wait_state(c, y, "running")
    assert jy["expect_source"] == "learned" and jy["expect_runs"] == 3, jy
    assert jy["expect_bytes"] == peak, jy
    h2 = grower(c, d, "h2", name="other2", wait_free_pct=WAIT_FREE)
    poll(lambda: (sc.show(c, h2).get("waiting_for") == "expect") or None,
         what="a head to wait for the learned reservation")
    assert "(learned, 3 runs)" in cli(d, "status"), cli(d, "status")
    # The command line sends --expect 0 (and leaves it out otherwise).
    x = int(cli(d, "submit", "--name", "learner", "--expect", "0", "--",
                "sleep", "60").split()[0])
    jx = sc.show(c, x)
    assert jx["expect_source"] == "given" and jx["expect_bytes"] == 0, jx
    w = int(cli(d, "submit", "--name", "learner", "--", "sleep", "60").split()[0])
    jw = sc.show(c, w)
    assert jw["expect_source"] == "learned" and jw["expect_bytes"] == peak, jw
    for jid in (z, h, y, h2, x, w):
        c.call("cancel", {"id": jid})
    for jid in (z, h, y):
        sc.wait_state(c, jid, "killed")


def sc_runs(d, m, c):
    """Only the last learn_runs runs count: a name that once peaked high
    and then ran small reserves the small peak once the high one is past
    the window (learn_runs = 2 here)."""
    m.set(free_pct=FREE)
    big = prime(c, d, "big", name="shrinks")["footprint_peak_bytes"]
    small = []
    for i in range(2):
        tag = "s%d" % i
        touch(d, tag + ".go")
        jid = grower(c, d, tag, mib=0, name="shrinks")
        # Sampled at least once (small), then it ends.
        poll(lambda: sc.show(c, jid)["footprint_peak_bytes"] > 0,
             what=tag + " to be sampled")
        touch(d, tag + ".stop")
        j = sc.wait_state(c, jid, "exited", timeout=20)
        small.append(j["footprint_peak_bytes"])
        if i == 0:
            # One small run after the big one: the big one still counts.
            assert j["expect_bytes"] == big and j["expect_runs"] == 1, j
    touch(d, "last.go")
    touch(d, "last.stop")
    jid = grower(c, d, "last", mib=0, name="shrinks")
    j = sc.wait_state(c, jid, "exited", timeout=20)
    assert j["expect_runs"] == 2 and j["expect_bytes"] == max(small), (j, small)
    assert j["expect_bytes"] < big // 2, (j, big)


def sc_stages(d, m, c):
    """The stages a run reported are learnt with their peaks and shown."""
    m.set(free_pct=FREE)
    jid = grower(c, d, "st", name="staged")
    sc.wait_state(c, jid, "running")
    c.call("stage", {"id": jid, "name": "load"})
    touch(d, "st.go")
    grown_ms(d, "st")
    poll(lambda: sc.show(c, jid)["footprint_bytes"] >= GROW_MIB * MIB,
         what="the run's footprint to be sampled grown")
    c.call("stage", {"id": jid, "name": "hold"})
    sc.samples(d, 2)
    touch(d, "st.stop")
    j = sc.wait_state(c, jid, "exited", timeout=20)
    st = {x["name"]: x for x in j["learned"]["stages"]}
    assert set(st) == {"load", "hold"}, j["learned"]
    assert st["load"]["footprint_peak_bytes"] >= GROW_MIB * MIB, st
    assert st["hold"]["footprint_peak_bytes"] >= GROW_MIB * MIB, st
    text = cli_show(d, jid)
    assert "Learned stages:" in text and "load" in text.split("Learned stages:")[1], text


def sc_resubmit_update(d, m, c):
    """A resubmitted job learns afresh unless its expect was given; an
    update's expect is given (0 opts out)."""
    m.set(free_pct=FREE)
    peak = prime(c, d, "p1", name="learner")["footprint_peak_bytes"]
    m.set(free_pct=10)  # nothing starts meanwhile
    q = grower(c, d, "q", name="learner", wait_free_pct=WAIT_FREE)
    jq = sc.show(c, q)
    assert jq["expect_source"] == "learned" and jq["expect_bytes"] == peak, jq
    jq = c.call("update", {"id": q, "expect_bytes": 0})
    jq = sc.show(c, q)
    assert jq["expect_source"] == "given" and jq["expect_bytes"] == 0, jq
    g = grower(c, d, "g", name="learner", expect_bytes=5 << 20)
    r = c.call("resubmit", {"id": p1_id(c)})["id"]
    jr = sc.show(c, r)
    assert jr["name_given"] is True and jr["expect_source"] == "learned", jr
    assert jr["expect_bytes"] == peak, jr
    r2 = c.call("resubmit", {"id": g})["id"]
    jr2 = sc.show(c, r2)
    assert jr2["expect_source"] == "given" and jr2["expect_bytes"] == 5 << 20, jr2
    for jid in (q, g, r, r2):
        c.call("cancel", {"id": jid})


def p1_id(c):
    return min(j["id"] for j in c.call("status", {"all": True})["jobs"])


def sc_off(d, m, c):
    """learn = 0: nothing is learnt or reserved, today's rule."""
    m.set(free_pct=FREE)
    prime(c, d, "p1", name="learner")
    a = grower(c, d, "a", name="learner")
    ja = sc.wait_state(c, a, "running")
    assert ja["expect_source"] is None and ja["expect_bytes"] == 0, ja
    assert ja["learned"]["runs"] == 0, ja
    b = grower(c, d, "b", name="learner", wait_free_pct=WAIT_FREE)
    sc.wait_state(c, b, "running")
    for jid in (a, b):
        c.call("cancel", {"id": jid})
        sc.wait_state(c, jid, "killed")


def sc_default_name(d, m, c):
    """A job named after its command never learns nor reserves, not even
    for a later job that gives that name explicitly."""
    m.set(free_pct=FREE)
    j = prime(c, d, "p1")
    base = os.path.basename(sys.executable)
    assert j["name"] == base and j["name_given"] is False, j
    assert j["learned"] is None, j
    a = grower(c, d, "a")
    ja = sc.wait_state(c, a, "running")
    assert ja["expect_source"] is None and ja["expect_bytes"] == 0, ja
    b = grower(c, d, "b", name=base, wait_free_pct=WAIT_FREE)
    jb = sc.wait_state(c, b, "running")
    assert jb["name_given"] is True and jb["expect_source"] is None, jb
    assert jb["learned"]["runs"] == 0, jb
    for jid in (a, b):
        c.call("cancel", {"id": jid})
        sc.wait_state(c, jid, "killed")


SCENARIOS = [
    ("reserve", sc_reserve, {}),
    ("runs", sc_runs, {"extra_conf": "learn_runs = 2\n"}),
    ("stages", sc_stages, {}),
    ("resubmit_update", sc_resubmit_update, {}),
    ("off", sc_off, {"extra_conf": "learn = 0\n"}),
    ("default_name", sc_default_name, {}),
]


def main():
    sc.run_scenarios(SCENARIOS)


if __name__ == "__main__":
    main()
