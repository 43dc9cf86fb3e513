"""stageload.Client: every method of PROTOCOL.md against the real daemon,
errors included."""

import inspect
import os
import re
import sys
import time
import warnings

import pytest

import stageload
from stageload import client as slc

from conftest import sltest


def test_socket_resolution(monkeypatch, tmp_path):
    monkeypatch.setenv("STAGELOAD_SOCKET", "/x/env.sock")
    assert slc.socket_path("/x/explicit.sock") == "/x/explicit.sock"
    assert slc.socket_path() == "/x/env.sock"
    monkeypatch.delenv("STAGELOAD_SOCKET")
    monkeypatch.setattr(slc, "SYSTEM_SOCKET", str(tmp_path / "none.sock"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/run/user/42")
    assert slc.socket_path() == "/run/user/42/stageload.sock"
    monkeypatch.setenv("XDG_RUNTIME_DIR", "relative/dir")  # ignored, as XDG says
    # then under a home of the user's own, else /tmp/stageload-UID
    monkeypatch.setenv("HOME", str(tmp_path))
    assert slc.socket_path() == str(tmp_path) + "/.stageload/stageload.sock"
    monkeypatch.setenv("HOME", "/nonexistent")
    assert slc.socket_path() == "/tmp/stageload-%d/stageload.sock" % os.getuid()
    (tmp_path / "sys.sock").write_text("")
    monkeypatch.setattr(slc, "SYSTEM_SOCKET", str(tmp_path / "sys.sock"))
    assert slc.socket_path() == str(tmp_path / "sys.sock")


def test_untrusted_socket(tmp_path):
    """A socket in a directory others can write is refused before anything
    is sent, naming the way out; a private /tmp-style directory must be
    0700."""
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    open_dir.chmod(0o1777)
    with pytest.raises(stageload.UntrustedSocket) as e:
        stageload.Client(str(open_dir / "sl.sock"))
    assert "writable by other users" in e.value.message and "socket=" in e.value.message
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o755)
    slc.check_socket(str(shared / "sl.sock"), "named")
    with pytest.raises(stageload.UntrustedSocket) as e:
        slc.check_socket(str(shared / "sl.sock"), "tmp")
    assert "mode 0700" in e.value.message and "XDG_RUNTIME_DIR" in e.value.message
    os.symlink(str(tmp_path / "x.sock"), str(tmp_path / "link.sock"))
    with pytest.raises(stageload.UntrustedSocket):
        slc.check_socket(str(tmp_path / "link.sock"), "named")


def test_daemon_not_running(tmp_path):
    path = str(tmp_path / "nobody.sock")
    with pytest.raises(stageload.DaemonNotRunning) as e:
        stageload.Client(path)
    assert e.value.path == path
    assert path in str(e.value) and "stageloadd" in str(e.value)


def test_sizes():
    assert stageload.parse_size("8G") == 8589934592
    assert stageload.parse_size("1.5G") == 1610612736
    assert stageload.parse_size(4096) == 4096
    for bad in ("-1G", "1.5", "1X", "9P", "1 G"):
        with pytest.raises(ValueError):
            stageload.parse_size(bad)


def test_hello_info_history(env):
    with stageload.Client() as c:
        assert c.version == 2 and c.uid == os.getuid()
        assert "stage" in c.hello_result["methods"]
        with pytest.raises(stageload.StageloadError) as e:
            c.hello()
        assert e.value.code == slc.E_HELLO
        info = sltest.poll(lambda: (lambda i: i if i["sample"] else None)(c.info()),
                           what="a first sample")
        assert info["sample"]["free_pct"] == pytest.approx(50.0)
        assert info["jobs"] == {"queued": 0, "admitted": 0, "running": 0}
        now = int(time.time() * 1000)
        h = c.history(since_ms=now - 60000)
        assert h["tier"] == "raw" and h["buckets"]
        assert "free_pct" in h["buckets"][-1]


def test_errors(env):
    with stageload.Client() as c:
        with pytest.raises(stageload.StageloadError) as e:
            c.call("nope")
        assert e.value.code == slc.E_METHOD and "nope" in e.value.message
        with pytest.raises(stageload.StageloadError) as e:
            c.call("info", bogus=1)
        assert e.value.code == slc.E_PARAMS and "bogus" in e.value.message
        with pytest.raises(stageload.StageloadError) as e:
            c.call("show", id="x")
        assert e.value.code == slc.E_PARAMS
        with pytest.raises(stageload.NoSuchJob):
            c.show(999999)
        with pytest.raises(stageload.NoSuchProcess):
            c.subscribe(pid=2 ** 22 + 12345)
        # the connection is still usable after every error
        assert c.info()["version"] == 2


def test_subscribe_samples_and_pid(env):
    with stageload.Client() as c:
        assert c.subscribe()["interval_ms"] == 100
        n = c.next_notification(5)
        assert n["method"] == "sample" and "swap_used_bytes" in n["params"]
        c.subscribe(pid=os.getpid())
        n = sltest.poll(lambda: (lambda m: m if m and "pid" in m["params"] else None)(
            c.next_notification(1)), what="a metered sample")
        assert n["params"]["pid"] == os.getpid()
        assert n["params"]["footprint_bytes"] > 0
        assert c.unsubscribe() == {}
        # drained: nothing more comes once unsubscribed
        while c.next_notification(0.3) is not None:
            pass
        assert c.next_notification(0.3) is None


def test_detached_job_methods(env, tmp_path):
    with stageload.Client() as c:
        sub = c.submit(["sh", "-c", "echo hello; echo $STAGELOAD_JOB_ID"], cwd=str(tmp_path),
                       name="py-client", swap_budget="1G")
        jid = sub["id"]
        assert sub["position"] >= 1
        job = c.wait(jid)
        assert job["state"] == "exited" and job["exit_code"] == 0
        assert job["swap_budget_bytes"] == 1 << 30
        shown = c.show(jid, env=True)
        assert shown["name"] == "py-client" and "env" in shown and shown["stages"] == []
        logs = c.logs(jid)
        assert logs["data"] == "hello\n%d\n" % jid and logs["eof"] is True
        chunks = []
        c.logs(jid, offset=6, follow=True, on_data=chunks.append)
        assert "".join(chunks) == "%d\n" % jid
        page = c.status(all=True, limit=1)
        assert len(page["jobs"]) == 1 and "command" in page["jobs"][0]
        assert any(j["id"] == jid for j in c.jobs(all=True))
        assert [j["id"] for j in c.jobs(ended=True)][:1] == [jid]  # the newest ended
        ev = c.events(after_id=0, limit=100)
        kinds = [e["kind"] for e in ev["events"] if e["job_id"] == jid]
        assert kinds[0] == "submitted" and "exited" in kinds
        mine = c.events(job_id=jid, limit=100)["events"]
        assert [e["kind"] for e in mine] == kinds
        assert c.events(job_id=jid, before_id=1 << 53, limit=1)["events"] == mine[-1:]
        rep = c.report(by="name", name="py-client")
        assert rep["by"] == "name" and rep["oldest_ms"] is not None
        assert [(r["name"], r["runs"], r["exited_0"]) for r in rep["rows"]] == \
            [("py-client", 1, 1)]
        assert c.report(user=str(os.getuid() + 1), name="py-client")["rows"] == []
        assert c.report(by="name", mine=True, name="py-*")["rows"] == rep["rows"]
        with pytest.raises(stageload.WrongState):
            c.cancel(jid)
        assert c.resume(jid)["state"] == "exited"  # an ended job: as it ended
        with pytest.raises(stageload.WrongState):
            c.stage(jid, "late")


def submit_params():
    """submit's params, as PROTOCOL.md lists them ("`name` (...")."""
    src = os.environ.get("SL_SRC") or os.path.join(os.path.dirname(__file__), "..", "..")
    with open(os.path.join(src, "proto", "PROTOCOL.md"), encoding="utf-8") as f:
        text = f.read()
    i = text.index("### submit\n\nparams:")
    para = text[i:text.index("\n\nresult:", i)]
    return re.findall(r"`([a-z_]+)`\s+\(", para)


def test_submit_takes_every_param():
    """Client.submit takes each of submit's params: a keyword of its own
    (the sizes by their short name, as "8G" or bytes), or by its protocol
    name through **options, which the generated field list
    (stageload.job_fields.SUBMIT_PARAMS) must then know."""
    from stageload.job_fields import SUBMIT_PARAMS
    short = {"swap_budget_bytes": "swap_budget", "expect_bytes": "expect"}
    names = submit_params()
    assert len(names) >= 18 and "on_end" in names and "after_any" in names, names
    have = inspect.signature(stageload.Client.submit).parameters
    assert any(p.kind == p.VAR_KEYWORD for p in have.values())
    missing = [n for n in names if short.get(n, n) not in have and n not in SUBMIT_PARAMS]
    assert not missing, "Client.submit lacks %s" % missing


def test_submit_options_hold_release_update(env, tmp_path):
    """after, after_any, held, group, wait_free_bytes and on_end reach the
    daemon; hold, release and update answer the Job after the call."""
    with stageload.Client() as c:
        first = c.submit(["sh", "-c", "exit 3"], cwd=str(tmp_path))["id"]
        jid = c.submit(["true"], cwd=str(tmp_path), after=[first], after_any=True,
                       held=True, group="py", wait_free_bytes="1M",
                       on_end="true")["id"]
        j = c.show(jid)
        assert j["after"] == [first] and j["after_any"] is True, j
        assert j["held"] is True and j["group"] == "py", j
        assert j["wait_free_bytes"] == 1 << 20 and j["on_end"] == "true", j
        assert c.update(jid, wait_free_bytes="2M")["wait_free_bytes"] == 2 << 20
        assert c.hold(jid)["held"] is True
        r = c.release(jid)
        assert r["held"] is False and r.get("waiting_for") != "held", r
        assert c.wait(jid)["state"] == "exited"  # after_any: exit 3 will do
        again = c.resubmit(first)
        assert again["resubmitted"] == first
        assert c.wait(again["id"])["exit_code"] == 3


def test_arrays(env, tmp_path):
    """submit(array=SPEC) queues one job per index; the methods take the
    array and its elements by name (A42, A42_3), which parse_job_id reads."""
    assert stageload.parse_job_id("A42_3") == (42, True, 3)
    assert stageload.parse_job_id("A42") == (42, True, None)
    assert stageload.parse_job_id(42) == (42, False, None)
    for bad in ("42_3", "A", "B1", "A0", 0, True):
        with pytest.raises(ValueError):
            stageload.parse_job_id(bad)
    with stageload.Client() as c:
        r = c.submit(["sh", "-c", "exit {}"], cwd=str(tmp_path), array="0-2",
                     held=True)
        a = "A%d" % r["array_id"]
        assert len(r["ids"]) == 3 and r["id"] == r["array_id"], r
        one = c.release(a + "_1")
        assert one["array_index"] == 1 and one["id"] == r["ids"][1], one
        assert c.wait(a + "_1")["exit_code"] == 1
        jobs = c.cancel(a)["jobs"]
        assert [j["state"] for j in jobs] == ["cancelled", "exited", "cancelled"]
        with pytest.raises(stageload.StageloadError):
            c.wait(a)


def test_filters_cancel_matching_wait_all(env, tmp_path):
    """The job filter on status, jobs and events; cancel_matching; and
    wait_all."""
    with stageload.Client() as c:
        a = c.submit(["sleep", "30"], cwd=str(tmp_path), name="f-a")["id"]
        # b ignores SIGTERM: still live, within its grace, when wait_all asks
        b = c.submit(["sh", "-c", "trap '' TERM; sleep 30"], cwd=str(tmp_path),
                     name="g-b")["id"]
        assert [j["id"] for j in c.jobs(name="f-*")] == [a]
        assert sorted(j["id"] for j in c.jobs(mine=True, state="queued,admitted,running")) == [a, b]
        assert c.status(state=["exited"])["jobs"] == []
        ev = c.events(name="g-*", state="queued")["events"]
        assert [(e["job_id"], e["kind"]) for e in ev] == [(b, "submitted")], ev
        with pytest.raises(stageload.StageloadError) as e:
            c.jobs(user="nosuchuser-sl")
        assert e.value.code == slc.E_PARAMS
        assert c.cancel_matching(name="f-*") == {"cancelled": 1, "ids": [a]}
        c.cancel_matching(state=["queued", "admitted", "running"])
        ended = c.wait_all()  # b at least, within its grace, is live
        assert b in [j["id"] for j in ended], ended
        assert {j["state"] for j in ended} == {"killed"}, ended
        assert c.jobs(mine=True) == []


def test_cancel_and_stage_running(env, tmp_path):
    with stageload.Client() as c:
        jid = c.submit(["sleep", "30"], cwd=str(tmp_path))["id"]
        sltest.poll(lambda: c.show(jid)["state"] == "running", what="running")
        with pytest.raises(stageload.WrongState):
            c.resume(jid)  # a detached job is never resumed
        assert c.stage(jid, "warm-up") == {}
        assert c.show(jid)["stages"][0]["name"] == "warm-up"
        with pytest.raises(stageload.StageloadError) as e:
            c.stage(jid, "")
        assert e.value.code == slc.E_PARAMS
        with pytest.raises(stageload.StageloadError) as e:
            c.stage(jid, "x" * 257)
        assert e.value.code == slc.E_PARAMS
        for i in range(99):  # 100 a job
            c.stage(jid, "s%d" % i)
        with pytest.raises(stageload.LimitReached) as e:
            c.stage(jid, "one too many")
        assert "at most 100" in e.value.message
        assert len(c.show(jid)["stages"]) == 100
        c.cancel(jid)
        job = c.wait(jid, timeout=10)
        assert job["state"] == "killed" and job["end_reason"] == "cancel"


def test_attached_job_methods(env):
    with stageload.Client() as c:
        jid = c.submit(["true"], attached=True)["id"]
        n = sltest.poll(lambda: (lambda m: m if m and m["method"] == "admitted" else None)(
            c.next_notification(1)), what="admitted")
        assert n["params"]["id"] == jid
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the job's process, until the test is done with it
            os.close(w)
            os.read(r, 1)
            os._exit(5)
        os.close(r)
        try:
            c.job_pid(jid, pid, tree=True)
            assert c.show(jid)["state"] == "running"
            assert c.resume(jid)["id"] == jid  # its own connection rebinds it
        finally:
            os.close(w)
            _, st = os.waitpid(pid, 0)
        job = c.job_exit(jid, exit_code=os.WEXITSTATUS(st))
        assert job["state"] == "exited" and job["exit_code"] == 5
        while True:  # the ended notification comes to the attached connection
            n = c.next_notification(5)
            if n["method"] == "ended":
                assert n["params"]["id"] == jid
                break


def test_job_pid_tree_is_owner_checked(env):
    """tree does not lift the owner check: a pid of another user (init) is
    refused for a non-root caller; root is checked for existence only."""
    with stageload.Client() as c:
        jid = c.submit(["true"], attached=True)["id"]
        sltest.poll(lambda: (lambda m: m if m and m["method"] == "admitted" else None)(
            c.next_notification(1)), what="admitted")
        with pytest.raises(stageload.NoSuchProcess):
            c.job_pid(jid, 2 ** 22 + 12345, tree=True)
        with pytest.raises(stageload.StageloadError) as e:
            c.job_pid(jid, os.getpid(), tree="yes")
        assert e.value.code == slc.E_PARAMS
        c.cancel(jid)


def test_socket_closed_in_forked_child_and_cloexec(env):
    with stageload.Client() as c:
        fd = c.fileno()
        assert os.get_inheritable(fd) is False  # close-on-exec
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.fstat(fd)
                os.write(w, b"open")
            except OSError:
                os.write(w, b"closed")
            os._exit(0)
        os.close(w)
        os.waitpid(pid, 0)
        assert os.read(r, 16) == b"closed"
        os.close(r)
        assert c.info()["version"] == 2  # the parent's connection is intact


def test_import_is_light():
    mods = set(sys.modules)
    import importlib
    importlib.reload(stageload)
    assert "ctypes" not in set(sys.modules) - mods
