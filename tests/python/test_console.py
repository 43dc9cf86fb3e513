"""The `stageload` console script's own behaviour: a command that cannot
start is refused before anything is queued, sizes without a unit are
questioned, --wait-free takes a size, and the option help, --version and
the hint about `--`."""

import os
import stat
import subprocess

import stageload

from conftest import sltest, venv_bin


def job_count(d):
    with stageload.Client(d.socket) as c:
        return len(c.jobs(all=True))


def run(*args, **kw):
    return subprocess.run([venv_bin("stageload")] + list(args), capture_output=True,
                          text=True, timeout=30, **kw)


def test_guard_resolves_the_command_before_queueing(env, tmp_path):
    """127 for a name not found, 126 for a file that may not be executed:
    at once, and no job recorded (item 2)."""
    before = job_count(env)
    r = run("guard", "--wait-free", "100", "--", "no-such-command-sl")
    assert r.returncode == 127, r
    assert "cannot run no-such-command-sl: command not found (no job was queued)" in r.stderr
    noexec = tmp_path / "noexec.sh"
    noexec.write_text("#!/bin/sh\nexit 0\n")
    os.chmod(noexec, stat.S_IRUSR | stat.S_IWUSR)
    r = run("guard", "--wait-free", "100", "--", str(noexec))
    assert r.returncode == 126, r
    assert "permission denied" in r.stderr
    # along PATH: a directory of the PATH with a non-executable file of
    # that name only is "permission denied" too
    env2 = dict(os.environ, PATH=str(tmp_path))
    r = run("guard", "--", "noexec.sh", env=env2)
    assert r.returncode == 126, r
    assert job_count(env) == before
    # a command found along PATH still runs
    assert run("guard", "-q", "--", "true").returncode == 0
    assert job_count(env) == before + 1


def test_bare_size_below_1m_is_questioned(env):
    """--swap-budget 8 is refused with "did you mean 8G?", exit 2, nothing
    queued; 0 and a size with a unit are taken (item 3)."""
    before = job_count(env)
    r = run("guard", "--swap-budget", "8", "--", "true")
    assert r.returncode == 2, r
    assert "8 is 8 bytes: did you mean 8G? (write 8B for bytes)" in r.stderr
    r = run("guard", "--expect", "4096", "--", "true")
    assert r.returncode == 2 and "did you mean 4096M?" in r.stderr, r
    assert job_count(env) == before
    assert run("guard", "-q", "--swap-budget", "0", "--", "true").returncode == 0
    assert run("guard", "-q", "--swap-budget", "8B", "--", "true").returncode == 0
    # the Python API's integers are bytes, as on the wire
    with stageload.Client(env.socket) as c:
        jid = c.submit(["true"], held=True, swap_budget=8)["id"]
        assert c.show(jid)["swap_budget_bytes"] == 8
        c.cancel(jid)


def set_free(d, pct):
    total = 16 << 20
    sltest.write_meminfo(d.proc_root, total_kb=total, avail_kb=int(total * pct / 100))
    with stageload.Client(d.socket) as c:
        sltest.poll(lambda: (c.info()["sample"] or {}).get("free_pct", -1) == pct,
                    what="the daemon to see free %d%%" % pct)


def test_wait_free_takes_a_size(env, tmp_path):
    """--wait-free 8G waits until 8G is available, as stageloadctl's does,
    and its queue line says so in sizes (item 3); a bad value is exit 2."""
    set_free(env, 25)  # 4G of 16G
    err = tmp_path / "err"
    with open(err, "w") as f:
        p = subprocess.Popen([venv_bin("stageload"), "guard", "--wait-free", "8G", "--",
                              "true"], stderr=f)
    try:
        sltest.poll(lambda: "queued: position 1 of 1, free 4.0G < 8.0G" in err.read_text(),
                    what="the queue line")
        with stageload.Client(env.socket) as c:
            j = [x for x in c.jobs() if x["state"] == "queued"][0]
            assert j["wait_free_bytes"] == 8 << 30
        set_free(env, 75)
        assert p.wait(timeout=15) == 0
    finally:
        p.kill()
        p.wait()
        set_free(env, 50)
    r = run("guard", "--wait-free", "8X", "--", "true")
    assert r.returncode == 2 and "neither a percentage" in r.stderr, r
    r = run("guard", "--wait-free", "140", "--", "true")
    assert r.returncode == 2 and "a percentage is 0 to 100" in r.stderr, r


def test_console_help_version_and_the_dash_dash_hint(env):
    """--version, option help with examples, and a hint about `--` when the
    command's words come without it (item 12)."""
    r = run("--version")
    assert r.returncode == 0 and r.stdout.strip() == "stageload " + stageload.__version__, r
    r = run("guard", "--help")
    assert r.returncode == 0, r
    for opt in ("--wait-free PCT|SIZE", "--swap-budget SIZE", "--expect SIZE",
                "--retry-on-breach N", "--quiet"):
        line = next(x for x in r.stdout.splitlines() if opt in x)
        assert len(line.split(opt, 1)[1].strip()) > 5, "no help for %s: %r" % (opt, line)
    assert "examples:\n  stageload guard --wait-free 40" in r.stdout
    before = job_count(env)
    r = run("guard", "--wait-free", "5", "true")
    assert r.returncode == 2, r
    assert "the command goes after --: stageload guard [options] -- true" in r.stderr
    r = run("guard", "--bogus", "--", "true")
    assert r.returncode == 2 and "--bogus" in r.stderr and "goes after" not in r.stderr, r
    assert job_count(env) == before


def test_queue_line_not_a_terminal(monkeypatch, capsys):
    """Not on a terminal: a line when the kind of wait changes, else at
    most one a minute; free % creeping by a point prints nothing (item 6)."""
    import importlib
    guard = importlib.import_module("stageload.guard")
    now = [1000.0]
    monkeypatch.setattr(guard.time, "monotonic", lambda: now[0])
    q = guard.QueueLine()
    q.tty = False
    q.show("queued: position 1 of 1, free 25% < 40%", "free")
    for pct in range(26, 32):
        now[0] += 1
        q.show("queued: position 1 of 1, free %d%% < 40%%" % pct, "free")
    q.show("queued: position 1 of 1, free 31%, held (release ID lets it start)", "held")
    now[0] += 1
    q.show("queued: position 1 of 1, free 31% < 40%", "free")
    now[0] += 59.5
    q.show("queued: position 1 of 1, free 32% < 40%", "free")
    now[0] += 0.5
    q.show("queued: position 1 of 1, free 33% < 40%", "free")
    assert capsys.readouterr().err.splitlines() == [
        "queued: position 1 of 1, free 25% < 40%",
        "queued: position 1 of 1, free 31%, held (release ID lets it start)",
        "queued: position 1 of 1, free 31% < 40%",
        "queued: position 1 of 1, free 33% < 40%",
    ]


def test_console_errors_in_its_own_words(env):
    """A --wait-free size above total memory is a usage error said with
    the option and sizes (exit 2, nothing queued); the daemon's refusals
    are said with option names too (item 11)."""
    before = job_count(env)
    r = run("guard", "--wait-free", "40G", "--", "true")
    assert r.returncode == 2, r
    assert ("guard: --wait-free 40G is above the machine's total memory (16G): it could "
            "never be free") in r.stderr, r
    assert job_count(env) == before
    from stageload.cli import daemon_words
    assert daemon_words("wait_free_bytes 42949672960 is above the machine's total memory "
                        "(25276502016 bytes, 24G): it could never be free") == (
        "--wait-free 40G is above the machine's total memory (24G): it could never be free")
    assert daemon_words("expect_bytes 1024 is above x; my_expect_bytes 3") == (
        "--expect 1.0K is above x; my_expect_bytes 3")


def test_guard_time_options(env):
    """--time, --time-per-attempt and --begin, from stageloadctl's rows
    (proto/job-fields.h, JOB_CLI): a bare --time is questioned, an
    unsigned --begin too, nothing queued; at the limit the job is killed
    (time_limit) and guard exits 124, as timeout(1), saying which limit
    (queue parity II, item 2)."""
    before = job_count(env)
    r = run("guard", "--time", "90", "--", "true")
    assert r.returncode == 2 and "did you mean 90m?" in r.stderr, r
    r = run("guard", "--begin", "3s", "--", "true")
    assert r.returncode == 2 and "did you mean +3s?" in r.stderr, r
    assert job_count(env) == before
    r = run("guard", "--help")
    for opt in ("--time DUR", "--time-per-attempt DUR", "--begin TIME"):
        assert opt in r.stdout, r.stdout
    r = run("guard", "-q", "--time", "1s", "--", "sleep", "10")
    assert r.returncode == 124, r
    assert "its time limit (--time 1.0s)" in r.stderr, r.stderr
    with stageload.Client(env.socket) as c:
        j = max(c.jobs(all=True), key=lambda x: x["id"])
    assert j["state"] == "killed" and j["end_reason"] == "time_limit", j
    assert j["time_limit_ms"] == 1000, j
    r = run("guard", "-q", "--begin", "+1s", "--time-per-attempt", "1h", "--", "true")
    assert r.returncode == 0, r
    with stageload.Client(env.socket) as c:
        j = max(c.jobs(all=True), key=lambda x: x["id"])
    assert j["admitted_at_ms"] >= j["begin_ms"] > j["submitted_at_ms"], j
    assert j["time_limit_per_attempt_ms"] == 3600000, j
