"""Fixtures of the Python package's tests: a real stageloadd on a private
socket with a fixture proc root (tests/lib/sltest.py), and the package as
installed in the venv (not the source tree)."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import sltest  # noqa: E402


@pytest.fixture
def daemon(request):
    """A started daemon: interval 0.1 s, grace 1 s, settle 0, no default
    budget. Parametrise with @pytest.mark.daemon_config("...") for more."""
    m = request.node.get_closest_marker("daemon_config")
    extra = m.args[0] if m else ""
    d = sltest.Daemon(interval="0.1", config="grace = 1s\nsettle = 0\n" + extra)
    d.start()
    yield d
    failed = getattr(request.node, "rep_call", None)
    if failed is not None and failed.failed:
        sys.stderr.write("--- daemon log ---\n" + d.log_text()[-8000:])
    sltest.kill_leftovers(d)
    d.cleanup()


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)


def pytest_configure(config):
    config.addinivalue_line("markers", "daemon_config(text): extra daemon config lines")


@pytest.fixture
def env(daemon, monkeypatch):
    """The environment a user's process would have: the daemon's socket in
    $STAGELOAD_SOCKET, not inside a job."""
    monkeypatch.setenv("STAGELOAD_SOCKET", daemon.socket)
    monkeypatch.delenv("STAGELOAD_JOB_ID", raising=False)
    return daemon


def bin_path(name):
    return os.path.join(os.environ.get("SL_BIN", "build/bin"), name)


def venv_bin(name):
    """A script the venv installed (the console script)."""
    return os.path.join(os.path.dirname(sys.executable), name)
