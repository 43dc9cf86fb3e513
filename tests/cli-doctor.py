"""stageloadctl doctor (docs/cli.md): against a daemon that reads this
machine's kernel every check passes (exit 0; on a Linux machine without
swap, all but the swap check, which fails); against one that reads
fixture files (16 GiB, which no real MemTotal is exactly) the comparison
with the kernel fails (exit 1) naming both numbers; a fixture machine
without swap fails the swap check, and a submit with a swap budget there
warns; without a daemon it is a failed check too (exit 1, the list
printed); --json has the same checks. Nothing is started by it: the
daemon's job counts stay 0.
"""

import json

import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from sltest import Client, Daemon, poll, write_meminfo  # noqa: E402

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


def has_swap():
    with open("/proc/meminfo") as f:
        for ln in f:
            if ln.startswith("SwapTotal:"):
                return int(ln.split()[1]) > 0
    return False


def main():
    # The real kernel: the later --proc-root wins over the fixture's.
    with Daemon(extra=("--proc-root", "/proc")) as d:
        sampled(d)
        out = doctor(d.socket)
        if has_swap():
            assert out.returncode == 0, (out.returncode, out.stdout, out.stderr)
            assert not lines(out, "FAIL"), out.stdout
        else:
            assert out.returncode == 1, (out.returncode, out.stdout, out.stderr)
            fails = lines(out, "FAIL")
            assert len(fails) == 1 and "no swap configured" in fails[0], out.stdout
        for want in ("answers on " + d.socket, "sample is current",
                     "storage works", "socket " + d.socket, "the same version",
                     "config: no file", "clock: the daemon's times agree",
                     "/proc/meminfo MemTotal", "MemAvailable / MemTotal",
                     "SwapTotal - SwapFree"):
            assert want in out.stdout, (want, out.stdout)
        assert len(lines(out, "PASS")) >= 9, out.stdout
        c = Client(d.socket)
        jobs = c.call("info")["jobs"]
        c.close()
        assert jobs == {"queued": 0, "admitted": 0, "running": 0}, jobs

        out = doctor(d.socket, "--json")
        j = json.loads(out.stdout)
        assert j["ok"] == has_swap() and out.returncode == (0 if has_swap() else 1), out
        assert all(c["status"] in ("PASS", "WARN", "SKIP", "FAIL") for c in j["checks"]), j
        text = doctor(d.socket).stdout
        assert len(j["checks"]) == sum(ln.startswith("[") for ln in text.splitlines()), j

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

    # A machine without swap: the check fails, and a budget warns at submit.
    d = Daemon()
    write_meminfo(d.proc_root, swap_total_kb=0, swap_free_kb=0)
    with d:
        sampled(d)
        out = doctor(d.socket)
        assert out.returncode == 1, out
        assert any("no swap configured" in f for f in lines(out, "FAIL")), out.stdout
        sub = subprocess.run([BIN, "--socket", d.socket, "submit", "--swap-budget", "1G",
                              "--", "true"], capture_output=True, text=True, timeout=30)
        assert sub.returncode == 0 and "no swap, so the swap budget (1.0G) can never" \
            in sub.stderr, sub
        sub = subprocess.run([BIN, "--socket", d.socket, "submit", "--", "true"],
                             capture_output=True, text=True, timeout=30)
        assert sub.returncode == 0 and sub.stderr == "", sub
    # The daemon's default budget warns as well.
    d = Daemon(config="swap_budget = 2G\n")
    write_meminfo(d.proc_root, swap_total_kb=0, swap_free_kb=0)
    with d:
        sampled(d)
        sub = subprocess.run([BIN, "--socket", d.socket, "submit", "--", "true"],
                             capture_output=True, text=True, timeout=30)
        assert sub.returncode == 0 and "swap budget (2.0G) can never" in sub.stderr, sub
        sub = subprocess.run([BIN, "--socket", d.socket, "submit", "--swap-budget", "0",
                              "--", "true"], capture_output=True, text=True, timeout=30)
        assert sub.returncode == 0 and sub.stderr == "", sub
    print("ok   no swap: doctor fails its check; a submit with a budget (its own or "
          "the daemon's default) warns")

    # The daemon down: a failed check with the list, exit 1.
    out = doctor(sock)
    assert out.returncode == 1, out
    fails = lines(out, "FAIL")
    assert fails and "daemon not running at " + sock in fails[0], out.stdout
    assert "check(s) failed" in out.stdout, out.stdout
    j = json.loads(doctor(sock, "--json").stdout)
    assert j["ok"] is False and j["checks"][0]["status"] == "FAIL", j
    print("ok: doctor")


if __name__ == "__main__":
    main()
