"""stageloadctl doctor (docs/cli.md): against a daemon that reads this
machine's kernel every check passes (exit 0); against one that reads
fixture files (16 GiB, which no real MemTotal is exactly) the comparison
with the kernel fails (exit 1) naming both numbers; without a daemon it
exits 69; --json is refused (exit 2). Nothing is started by it: the
daemon's job counts stay 0.
"""

import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from sltest import Client, Daemon, poll  # noqa: E402

BIN = os.path.join(os.environ.get("SL_BIN", "build/bin"), "stageloadctl")


def doctor(sock, *extra):
    return subprocess.run([BIN, "--socket", sock] + list(extra) + ["doctor"],
                          capture_output=True, text=True, timeout=30,
                          stdin=subprocess.DEVNULL)


def sampled(d):
    c = Client(d.socket)
    poll(lambda: c.call("info")["sample"] is not None, what="a first sample")
    c.close()


def lines(out, status):
    return [ln for ln in out.stdout.splitlines() if ln.startswith("[%s]" % status)]


def main():
    # The real kernel: the later --proc-root wins over the fixture's.
    with Daemon(extra=("--proc-root", "/proc")) as d:
        sampled(d)
        out = doctor(d.socket)
        assert out.returncode == 0, (out.returncode, out.stdout, out.stderr)
        assert not lines(out, "FAIL"), out.stdout
        for want in ("answers on " + d.socket, "sample is current",
                     "storage works", "socket " + d.socket,
                     "/proc/meminfo MemTotal", "MemAvailable / MemTotal",
                     "SwapTotal - SwapFree"):
            assert want in out.stdout, (want, out.stdout)
        assert len(lines(out, "PASS")) >= 7, out.stdout
        c = Client(d.socket)
        jobs = c.call("info")["jobs"]
        c.close()
        assert jobs == {"queued": 0, "admitted": 0, "running": 0}, jobs

        out = doctor(d.socket, "--json")
        assert out.returncode == 2 and "no --json" in out.stderr, out

    # A daemon reading fixture files is not reading this kernel.
    with Daemon() as d:
        sampled(d)
        out = doctor(d.socket)
        assert out.returncode == 1, (out.returncode, out.stdout)
        fails = lines(out, "FAIL")
        assert any("total memory 17179869184 bytes, /proc/meminfo MemTotal" in f
                   for f in fails), out.stdout
        assert "%d check(s) failed" % len(fails) in out.stdout, out.stdout
        sock = d.socket

    out = doctor(sock)
    assert out.returncode == 69 and "not running" in out.stderr, out
    print("ok: doctor")


if __name__ == "__main__":
    main()
