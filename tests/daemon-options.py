"""stageloadd's command line and config file: --help, --version, errors with
exit status 2, the config file read first and overridden by the command
line, the socket path refusals (exit 1), and the lock that says which daemon
owns the socket.
"""

import fcntl
import os
import socket
import stat
import subprocess
import sys
import tempfile
import shutil

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
from sltest import Client, Daemon, poll  # noqa: E402

BIN = os.path.join(os.environ.get("SL_BIN", "build/bin"), "stageloadd")


def run(args, timeout=30):
    return subprocess.run([BIN] + args, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def main():
    out = run(["--help"])
    assert out.returncode == 0, out
    for word in ("--socket", "--db", "--interval", "--retention", "--proc-root",
                 "--config", "Examples"):
        assert word in out.stdout, word
    out = run(["-h"])
    assert out.returncode == 0 and "usage:" in out.stdout, out

    out = run(["--version"])
    assert out.returncode == 0 and out.stdout.startswith("stageloadd "), out

    tmp = tempfile.mkdtemp(prefix="sltest-opt-")
    try:
        for args, words in (
                (["--bogus"], "unknown option"),
                (["-x"], "unknown option"),
                (["stray"], "unexpected argument"),
                (["--interval"], "needs a value"),
                (["--interval", "0"], "out of range"),
                (["--interval", "fast"], "not a duration"),
                (["--retention", "raw=2d,5s=1d"], "unknown tier"),
                (["--retention", "raw"], "TIER=DURATION"),
                (["--retention", "raw=1e1y"], "not a duration"),
                (["--grace", "-1s"], "grace"),
                (["--verbose=3"], "takes no value"),
                (["--config", os.path.join(tmp, "missing.conf")], "missing.conf"),
                # sqlite would open what a URI names, past the checks on
                # the path (docs/security.md)
                (["--db", "file:" + os.path.join(tmp, "u.db")], "not a plain path"),
                (["--db", ":memory:"], "not a plain path"),
        ):
            # Private paths first: a daemon that wrongly starts must not
            # take the system socket.
            priv = ["--socket", os.path.join(tmp, "u.sock"), "--db",
                    os.path.join(tmp, "u.db"), "--proc-root", tmp]
            out = run(priv + args, timeout=10)
            assert out.returncode == 2, (args, out)
            assert words in out.stderr, (args, out.stderr)
            assert "--help" in out.stderr, out.stderr

        # A directory is not an empty config file.
        confdir = os.path.join(tmp, "conf.d")
        os.mkdir(confdir, 0o755)
        out = run(["--config", confdir, "--socket", os.path.join(tmp, "cd.sock"),
                   "--db", os.path.join(tmp, "cd.db"), "--proc-root", tmp], timeout=10)
        assert out.returncode == 2 and "not a regular file" in out.stderr, out.stderr

        # Root's daemon reads only a config file nobody else could have
        # written or replaced (docs/security.md, "Files the daemon trusts").
        if os.geteuid() == 0:
            conf = os.path.join(tmp, "open.conf")
            with open(conf, "w") as f:
                f.write("interval = 0.2\n")
            open_dir = os.path.join(tmp, "open")
            os.mkdir(open_dir)
            os.chmod(open_dir, 0o777)
            in_open = os.path.join(open_dir, "s.conf")
            with open(in_open, "w") as f:
                f.write("interval = 0.2\n")
            for path, mode, words in ((conf, 0o666, "writable by"),
                                      (conf, 0o620, "writable by"),
                                      (in_open, 0o644, "writable by other")):
                os.chmod(path, mode)
                out = run(["--config", path, "--socket", os.path.join(tmp, "r.sock"),
                           "--db", os.path.join(tmp, "r.db"), "--proc-root", tmp],
                          timeout=10)
                assert out.returncode == 2, (path, mode, out)
                assert "refusing config file " + path in out.stderr, out.stderr
                assert words in out.stderr, (words, out.stderr)
            os.chown(conf, 1, 1)
            os.chmod(conf, 0o644)
            out = run(["--config", conf, "--socket", os.path.join(tmp, "r.sock"),
                       "--db", os.path.join(tmp, "r.db"), "--proc-root", tmp], timeout=10)
            assert out.returncode == 2 and "refusing config file" in out.stderr, out.stderr
        else:
            print("note: not root; the config file's ownership rule is root's only")

        conf = os.path.join(tmp, "bad.conf")
        with open(conf, "w") as f:
            f.write("# comment\n\ninterval = 0.2\nno_such_key = 1\n")
        out = run(["--config", conf])
        assert out.returncode == 2 and "bad.conf:4:" in out.stderr, out.stderr
        with open(conf, "w") as f:
            f.write("interval 0.2\n")
        out = run(["--config", conf])
        assert out.returncode == 2 and "bad.conf:1:" in out.stderr, out.stderr

        # Thresholds are checked against each other with the configuration:
        # exit 2 naming both values (the default where one is not set).
        for text, words in (("psi_warn = 6\npsi_critical = 5\n",
                             ("psi_warn (6)", "psi_critical (5)")),
                            ("psi_warn = 50\n", ("psi_warn (50)", "psi_critical (40)")),
                            ("psi_critical = 5\n", ("psi_warn (10)", "psi_critical (5)"))):
            with open(conf, "w") as f:
                f.write(text)
            out = run(["--config", conf, "--socket", os.path.join(tmp, "t.sock"),
                       "--db", os.path.join(tmp, "t.db"), "--proc-root", tmp])
            assert out.returncode == 2, (text, out)
            for w in words:
                assert w in out.stderr, (text, w, out.stderr)

        # Something that is not a socket is never replaced.
        sock = os.path.join(tmp, "not-a-socket")
        with open(sock, "w") as f:
            f.write("precious\n")
        out = run(["--socket", sock, "--db", os.path.join(tmp, "x.db"),
                   "--proc-root", tmp])
        assert out.returncode == 1 and "not a socket" in out.stderr, out
        with open(sock) as f:
            assert f.read() == "precious\n"

        # No home directory for the default database: ask for --db (exit 2),
        # never put it in the directory the daemon was started from.
        if os.geteuid() == 0 and shutil.which("setpriv"):
            out = subprocess.run(
                ["setpriv", "--reuid=54321", "--regid=54321", "--clear-groups", BIN,
                 "--socket", os.path.join(tmp, "nh.sock"), "--proc-root", tmp],
                capture_output=True, text=True, timeout=10, env={}, cwd="/",
                stdin=subprocess.DEVNULL)
            assert out.returncode == 2, out
            assert "no default database path" in out.stderr, out.stderr
            assert not os.path.exists("/stageload.db")
        else:
            print("skip: the no-home-directory case needs root and setpriv")

        # A state directory that is a file: refused at start (exit 1), not
        # found out by every job failing.
        out = run(["--socket", os.path.join(tmp, "sd.sock"), "--db",
                   os.path.join(tmp, "sd.db"), "--proc-root", tmp, "--state-dir", sock])
        assert out.returncode == 1, out
        assert "refusing the state directory " + sock in out.stderr, out.stderr
        assert sock + " is not a directory" in out.stderr, out.stderr
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    # The lock beside the socket says who owns it. While another process
    # holds it, a daemon refuses to start and leaves the socket alone, even
    # one that refuses connections (another daemon between bind and listen
    # looks just like that).
    with Daemon() as d:
        d.stop()
        stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        stale.bind(d.socket)  # bound, not listening: refuses connections
        with open(d.socket + ".lock", "a") as lockf:
            fcntl.flock(lockf, fcntl.LOCK_EX | fcntl.LOCK_NB)
            out = subprocess.run(d.args, capture_output=True, text=True, timeout=10,
                                 stdin=subprocess.DEVNULL)
            assert out.returncode == 1, out
            assert "another stageloadd is already running" in out.stderr, out.stderr
            assert os.path.exists(d.socket), "the refused daemon removed the socket"
        # Once the lock is free the same socket is stale, and replaced.
        d.start()
        # Only its owner may open the lock: another user holding it would
        # keep the daemon from starting.
        assert stat.S_IMODE(os.stat(d.socket + ".lock").st_mode) == 0o600
        c = Client(d.socket)
        c.call("info")
        c.close()
        stale.close()

        # A socket someone put in place of ours stays when we stop (libuv
        # would unlink the path it bound, whoever's it is by then).
        os.unlink(d.socket)
        other = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        other.bind(d.socket)
        assert d.stop() == 0
        assert os.path.exists(d.socket), "stopping removed a socket not ours"
        other.close()
        assert "removed stale socket" in d.log_text(), d.log_text()

    # The config file is read first; the command line overrides it.
    with Daemon(interval="0.3", config="interval = 0.2\nretention = raw=1d\n") as d:
        c = Client(d.socket)
        assert c.call("info")["interval_ms"] == 300
        c.close()
        assert d.stop() == 0
    # A threshold of 0 is 0, not "the default": with no pressure at all the
    # level is already warn.
    with Daemon(config="psi_warn = 0\npsi_critical = 5\n") as d:
        c = Client(d.socket)
        s = poll(lambda: c.call("info")["sample"], what="a first sample")
        assert s["psi_some_avg10"] == 0.0 and s["pressure"] == "warn", s
        c.close()
        assert d.stop() == 0
    d = Daemon(config="interval = 250ms  # comment\n")
    d.args.remove("--interval")
    d.args.remove("0.1")
    with d:
        c = Client(d.socket)
        assert c.call("info")["interval_ms"] == 250
        c.close()
        assert d.stop() == 0
    print("ok")


if __name__ == "__main__":
    main()
