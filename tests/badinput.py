"""Hostile input: every file in tests/badinput/cases is sent to a real daemon.

MANIFEST says what each must get: its documented JSON-RPC error code (and the
connection stays usable), no answer at all (notifications), or a closed
connection (framing violations). After every case the daemon still answers a
fresh client, the queued job has not changed, and the database passes
PRAGMA integrity_check. A few cases that are behaviours rather than bytes (a
10 MB line, a half-closed socket, a client that never reads its replies, an
idle client) are made here.
"""

import json
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
from sltest import Client, Daemon, RpcError, poll  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.join(HERE, "badinput", "cases")


def read_until_eof(sock, timeout=10.0):
    """Read until the peer closes; return the lines received."""
    sock.settimeout(timeout)
    data = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        data += chunk
    return [l for l in data.split(b"\n") if l]


def check_case(d, name, payload, expect, flags):
    c = Client(d.socket, hello=("nohello" not in flags))
    try:
        c.send_raw(payload)
    except (BrokenPipeError, ConnectionResetError):
        if expect != "close":
            raise AssertionError("%s: daemon closed the connection" % name)
    if expect == "close":
        lines = read_until_eof(c.sock)
        for l in lines:
            m = json.loads(l)
            assert "error" in m and m.get("id") is None, "%s: unexpected %r" % (name, m)
    elif expect == "none":
        got = c.call("info")
        assert "sample" in got, name
        assert not [n for n in c.notes if "id" in n], name
    else:
        code = int(expect)
        m = c.read_msg(timeout=10)
        assert m is not None, "%s: connection closed, wanted error %d" % (name, code)
        assert "error" in m, "%s: wanted error %d, got %r" % (name, code, m)
        assert m["error"]["code"] == code, "%s: wanted %d, got %r" % (name, code, m["error"])
        assert isinstance(m["error"].get("message"), str) and m["error"]["message"], name
        # the connection is still usable
        if "nohello" in flags:
            c.call("hello", {"version": 1})
        assert "sample" in c.call("info"), name
    c.close()


def after_each(d, name, job_id):
    assert d.alive(), "%s: daemon died" % name
    c = Client(d.socket)
    assert "sample" in c.call("info"), name
    job = c.call("show", {"id": job_id})
    assert job["state"] == "queued" and job["position"] == 1, "%s: job changed: %r" % (name, job)
    c.close()
    assert d.integrity() == "ok", "%s: integrity_check failed" % name


def case_long_line(d):
    """10 MB without a newline: closed, while another client is served."""
    other = Client(d.socket)
    c = Client(d.socket)
    chunk = b"x" * 65536
    closed = False
    try:
        for _ in range(160):
            c.send_raw(chunk)
            if _ == 80:
                assert "sample" in other.call("info")
    except (BrokenPipeError, ConnectionResetError):
        closed = True
    if not closed:
        read_until_eof(c.sock)
    assert "sample" in other.call("info")
    c.close()
    other.close()


def case_half_close(d):
    c = Client(d.socket)
    c.send_raw(b'{"jsonrpc":"2.0","id":7,"method":"info"}\n')
    c.sock.shutdown(socket.SHUT_WR)
    lines = read_until_eof(c.sock)
    assert len(lines) == 1 and json.loads(lines[0])["id"] == 7, lines
    c.close()


def case_never_reads(d):
    """A client that sends but never reads is cut off; nobody else suffers."""
    c = Client(d.socket)
    c.sock.setblocking(False)
    line = b'{"jsonrpc":"2.0","id":1,"method":"status","params":{"all":true}}\n' * 64
    other = Client(d.socket)
    deadline = time.monotonic() + 60
    closed = False
    while time.monotonic() < deadline and not closed:
        try:
            c.sock.send(line)
        except BlockingIOError:
            # the daemon stopped reading us: it must still serve others
            assert "sample" in other.call("info")
            time.sleep(0.01)
        except (BrokenPipeError, ConnectionResetError):
            closed = True
    c.close()
    assert "sample" in other.call("info")
    other.close()


def case_idle_then_others(d):
    idle = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    idle.connect(d.socket)
    c = Client(d.socket)
    assert "sample" in c.call("info")
    c.close()
    idle.close()


def main():
    n = 0
    with Daemon() as d:
        c = Client(d.socket)
        # 50 % free in the fixture: a job waiting for 99 % stays queued.
        job = c.call("submit", {"argv": ["true"], "cwd": "/", "env": ["A=1"],
                                "wait_free_pct": 99, "name": "bystander"})
        job_id = job["id"]
        c.close()
        with open(os.path.join(HERE, "badinput", "MANIFEST")) as f:
            rows = [l.rstrip("\n").split("\t") for l in f if not l.startswith("#")]
        failed = []
        for fn, expect, flags in rows:
            with open(os.path.join(CASES, fn), "rb") as f:
                payload = f.read()
            try:
                check_case(d, fn, payload, expect, flags)
            except AssertionError as e:
                failed.append(str(e))
            after_each(d, fn, job_id)
            n += 1
        if failed:
            print("\n".join(failed))
            print("%d passed, %d failed" % (n - len(failed), len(failed)))
            sys.exit(1)
        for fn in (case_long_line, case_half_close, case_never_reads,
                   case_idle_then_others):
            fn(d)
            after_each(d, fn.__name__, job_id)
            n += 1
        assert d.stop() == 0
        assert d.integrity() == "ok"
    print("%d passed, 0 failed" % n)


if __name__ == "__main__":
    main()
