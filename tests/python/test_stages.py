"""Stages in the daemon: stageloadctl stage inside a detached job, show's
table, the kill paragraph, and a stage for a job that has ended."""

import os
import subprocess
import sys

import pytest

import stageload

from conftest import bin_path, sltest

GiB_KB = 1 << 20


def ctl(*args, **kw):
    return subprocess.run([bin_path("stageloadctl")] + list(args), capture_output=True,
                          text=True, **kw)


def test_detached_job_stages_in_show(env, tmp_path):
    sl = bin_path("stageloadctl")
    cmd = "%s stage encode; sleep 0.6; %s stage decode; sleep 0.3" % (sl, sl)
    r = ctl("submit", "--name", "staged", "--", "sh", "-c", cmd, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    jid = int(r.stdout.strip())
    assert ctl("wait", str(jid)).returncode == 0
    with stageload.Client() as c:
        st = c.show(jid)["stages"]
    assert [s["name"] for s in st] == ["encode", "decode"]
    enc, dec = st
    # the lower bounds are the sleeps; the upper ones leave room for a slow
    # build's stageloadctl and a busy machine
    assert 550 <= enc["ended_at_ms"] - enc["started_at_ms"] <= 3000
    assert 250 <= dec["ended_at_ms"] - dec["started_at_ms"] <= 3000
    assert enc["ended_at_ms"] <= dec["started_at_ms"]
    assert enc["footprint_peak_bytes"] > 0 and dec["swap_growth_bytes"] == 0
    out = ctl("show", str(jid)).stdout
    assert "Stages:" in out
    table = out.split("Stages:\n", 1)[1].splitlines()
    assert table[0].split() == ["STAGE", "START", "DURATION", "PEAK", "FOOTPRINT", "SWAP",
                                "GROWTH"]
    assert table[1].split()[0] == "encode" and table[2].split()[0] == "decode"
    # history --job marks each bucket with its stage
    with stageload.Client() as c:
        h = c.history(job_id=jid, step_ms=0)
    labels = [b["stage"] for b in h["buckets"]]
    assert "encode" in labels and "decode" in labels
    assert labels.index("decode") > max(i for i, x in enumerate(labels) if x == "encode")
    csv = ctl("history", "--job", str(jid), "--step", "0.1s", "--format",
              "csv").stdout.splitlines()
    assert csv[0].endswith(",stage")
    col = [line.rsplit(",", 1)[1] for line in csv[1:]]
    assert "encode" in col and "decode" in col
    table = ctl("history", "--job", str(jid), "--step", "0.1s").stdout.splitlines()
    assert table[0].split()[-1] == "STAGE" and table[-1].split()[-1] == "decode"
    r = ctl("history", "--job", str(jid), "--step", "0.1s", "--json")
    assert '"stage":"encode"' in r.stdout.replace(" ", "")
    # events carry them too
    r = ctl("events", "--json")
    assert '"kind":"stage"' in r.stdout.replace(" ", "") and "stage_end" in r.stdout


def test_kill_paragraph_names_the_stage(env, tmp_path):
    sl = bin_path("stageloadctl")
    mark = tmp_path / "in-decode"
    r = ctl("submit", "--swap-budget", "100M", "--", "sh", "-c",
            "%s stage encode; %s stage decode; touch %s; sleep 30" % (sl, sl, mark),
            cwd=str(tmp_path))
    jid = int(r.stdout.strip())
    sltest.poll(mark.exists, what="the job in decode")
    sltest.write_meminfo(env.proc_root, swap_free_kb=4 * GiB_KB - 500 * 1024)
    with stageload.Client() as c:
        job = c.wait(jid, timeout=15)
        assert job["state"] == "killed" and job["end_reason"] == "swap_budget"
        assert job["end_detail"].startswith("killed during decode at "), job["end_detail"]
        st = c.show(jid)["stages"]
        assert [s["name"] for s in st] == ["encode", "decode"]
        assert st[1]["swap_growth_bytes"] == 500 << 20 and st[1]["ended_at_ms"] is not None
    assert "killed during decode at" in ctl("show", str(jid)).stdout


def test_stage_of_an_ended_job(env, tmp_path):
    with stageload.Client() as c:
        jid = c.submit(["true"], cwd=str(tmp_path))["id"]
        c.wait(jid)
        try:
            c.stage(jid, "late")
            raise AssertionError("stage of an ended job was taken")
        except stageload.WrongState as e:
            assert e.code == -32005
    r = ctl("stage", "--job", str(jid), "late")
    assert r.returncode == 0 and "warning" in r.stderr and "has ended" in r.stderr
    r = subprocess.run([bin_path("stageloadctl"), "stage", "x"], capture_output=True, text=True,
                       env={k: v for k, v in os.environ.items() if k != "STAGELOAD_JOB_ID"})
    assert r.returncode == 2 and "STAGELOAD_JOB_ID" in r.stderr
    # queued: -32005 too
    sltest.write_meminfo(env.proc_root, total_kb=16 * GiB_KB, avail_kb=1 * GiB_KB)
    with stageload.Client() as c:
        sltest.poll(lambda: c.info()["sample"]["free_pct"] < 10, what="free to fall")
        q = c.submit(["true"], cwd=str(tmp_path), wait_free_pct=50)["id"]
        try:
            c.stage(q, "early")
            raise AssertionError("stage of a queued job was taken")
        except stageload.WrongState as e:
            assert "queued" in e.message
        c.cancel(q)


def test_run_sets_job_id_for_its_command(env):
    r = ctl("run", "-q", "--", "sh", "-c", 'echo "$STAGELOAD_JOB_ID"')
    assert r.returncode == 0 and r.stdout.strip().isdigit(), (r.stdout, r.stderr)


def test_stage_is_owner_or_root_only(env, tmp_path):
    """Another user's stage report is refused (-32002): needs root to make
    a connection as another uid."""
    if os.getuid() != 0:
        if sltest.ci():
            pytest.fail("needs root to connect as another user; CI=true forbids the skip")
        pytest.skip("needs root to connect as another user")
    with stageload.Client() as c:
        jid = c.submit(["sleep", "30"], cwd=str(tmp_path))["id"]
        sltest.poll(lambda: c.show(jid)["state"] == "running", what="running")
        os.chmod(env.dir, 0o711)  # nobody may reach the socket
        other = sltest.client_as(65534, env.socket)
        try:
            try:
                other.call("stage", {"id": jid, "name": "x"})
                raise AssertionError("nobody's stage report was taken")
            except sltest.RpcError as e:
                assert e.code == -32002
            # tree mode does not lift the owner check on the pid: nobody's
            # attached job may not follow a process of root's
            aid = other.call("submit", {"argv": ["x"], "cwd": "/", "attached": True})["id"]
            other.notification("admitted")
            try:
                other.call("job_pid", {"id": aid, "pid": os.getpid(), "tree": True})
                raise AssertionError("a pid of another user was taken with tree")
            except sltest.RpcError as e:
                assert e.code == -32002 and "another user" in e.message
        finally:
            other.close()
        assert c.show(jid)["stages"] == []
        c.cancel(jid)


def test_a_stage_open_across_a_daemon_restart_goes_on(env, tmp_path):
    sl = bin_path("stageloadctl")
    mark, go = tmp_path / "in-encode", tmp_path / "go"
    r = ctl("submit", "--", "sh", "-c",
            "%s stage load; %s stage encode; touch %s; while [ ! -e %s ]; do sleep 0.05; done"
            % (sl, sl, mark, go), cwd=str(tmp_path))
    jid = int(r.stdout.strip())
    sltest.poll(mark.exists, what="the job in encode")
    env.stop()
    env.start()
    with stageload.Client() as c:
        st = c.show(jid)["stages"]
        assert [s["name"] for s in st] == ["load", "encode"] and st[1]["ended_at_ms"] is None
        go.write_text("")
        job = c.wait(jid, timeout=15)
        assert job["state"] == "exited"
        st = c.show(jid)["stages"]
    assert [s["name"] for s in st] == ["load", "encode"]
    assert st[1]["ended_at_ms"] >= st[1]["started_at_ms"] > 0
