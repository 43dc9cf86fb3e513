"""The `stageload` console script's own behaviour: a command that cannot
start is refused before anything is queued, sizes without a unit are
questioned, --wait-free takes a size, and the option help, --version and
the hint about `--`."""

import os
import stat
import subprocess

import stageload

from conftest import venv_bin


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
