"""The per-uid connection cap (PROTOCOL.md, "Limits") holds from accept on:
connections of one uid count whether or not they said hello, so one user's
silent connections can neither pass the cap nor fill the global one and
lock everyone else out until the hello timeout. Root is exempt. Needs root,
to connect as another uid.
"""

import json
import os
import select
import socket
import sys
import time
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
from sltest import Client, Daemon, poll, skip  # noqa: E402

NOBODY = 65534
MAX_CLIENTS = 8
PER_UID = 3


def connect_as(uid, path, n):
    """n connections made by a process running as uid; returned as sockets
    of ours (passed back over a socketpair), so the daemon sees uid as
    their peer while this process holds them."""
    parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    pid = os.fork()
    if pid == 0:
        rc = 1
        try:
            parent.close()
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            socks = []
            for _ in range(n):
                socks.append(socket.socket(socket.AF_UNIX, socket.SOCK_STREAM))
                socks[-1].connect(path)
            socket.send_fds(child, [b"x"], [s.fileno() for s in socks])
            rc = 0
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(rc)
    child.close()
    _, fds, _, _ = socket.recv_fds(parent, 16, n)
    parent.close()
    _, status = os.waitpid(pid, 0)
    assert status == 0 and len(fds) == n, (status, fds)
    return [socket.socket(fileno=fd) for fd in fds]


def split_refused(socks, expect_kept, timeout=5.0):
    """Wait until all but expect_kept sockets were refused (one line, then
    EOF), or the timeout; then make sure the rest stay quiet a moment.
    Returns (kept sockets, lines of the refused ones)."""
    pending = {s.fileno(): [s, b""] for s in socks}
    refused = []
    deadline = time.monotonic() + timeout
    quiet_until = None
    while True:
        now = time.monotonic()
        if len(pending) <= expect_kept and quiet_until is None:
            quiet_until = now + 0.3
        end = quiet_until if quiet_until is not None else deadline
        if now >= end or not pending:
            break
        r, _, _ = select.select(list(pending), [], [], end - now)
        for fd in r:
            s, buf = pending[fd]
            chunk = s.recv(65536)
            if chunk:
                pending[fd][1] = buf + chunk
                continue
            refused.append(buf)
            s.close()
            del pending[fd]
    for s, buf in pending.values():
        assert buf == b"", "a kept connection got %r" % buf
    return [s for s, _ in pending.values()], refused


def hello(s):
    s.settimeout(10)
    s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"hello","params":{"version":1}}\n')
    buf = b""
    while b"\n" not in buf:
        chunk = s.recv(65536)
        assert chunk, "closed instead of answering hello"
        buf += chunk
    return json.loads(buf.split(b"\n")[0])


def check_refused_line(line):
    m = json.loads(line.split(b"\n")[0])
    assert m["id"] is None and m["error"]["code"] == -32004, m
    msg = m["error"]["message"]
    assert "too many connections for uid %d (limit %d)" % (NOBODY, PER_UID) in msg, m
    return msg


def main():
    if os.geteuid() != 0:
        skip("the per-uid cap needs root: it connects as uid %d" % NOBODY, root_only=True)
    conf = ("max_clients = %d\nmax_clients_per_uid = %d\nhello_timeout = 60s\n"
            % (MAX_CLIENTS, PER_UID))
    with Daemon(interval="0.1", config=conf) as d:
        os.chmod(d.dir, 0o755)  # uid NOBODY must reach the socket

        # More silent connections than the global cap: only PER_UID stay,
        # the others get -32004 and are closed at once, not after the 60 s
        # hello timeout.
        t0 = time.monotonic()
        socks = connect_as(NOBODY, d.socket, MAX_CLIENTS + 2)
        kept, refused = split_refused(socks, PER_UID)
        assert len(kept) == PER_UID and len(refused) == MAX_CLIENTS + 2 - PER_UID, (
            len(kept), [r[:120] for r in refused])
        for line in refused:
            msg = check_refused_line(line)
        assert time.monotonic() - t0 < 10
        print("ok   %d silent connections of uid %d: %d kept, the rest refused (%s)"
              % (len(socks), NOBODY, len(kept), msg))

        # Root is served, and is exempt from the cap.
        roots = [Client(d.socket) for _ in range(PER_UID + 1)]
        for c in roots:
            assert c.call("info")["version"] == 1
        print("ok   root connects %d times while uid %d holds its cap" % (len(roots), NOBODY))

        # The kept ones are ordinary clients; greeted and silent ones count
        # alike, so one more is refused.
        r = hello(kept[0])
        assert r["result"]["uid"] == NOBODY, r
        more, refused = split_refused(connect_as(NOBODY, d.socket, 1), 0)
        assert more == [] and len(refused) == 1, (more, refused)
        check_refused_line(refused[0])

        # A slot freed is a slot usable.
        kept.pop().close()

        def fits():
            k, _ = split_refused(connect_as(NOBODY, d.socket, 1), 1)
            kept.extend(k)
            return len(k) == 1
        poll(fits, what="a freed connection slot")
        r = hello(kept[-1])
        assert r["result"]["uid"] == NOBODY, r
        print("ok   greeted and silent connections count alike; a freed slot is reused")

        for s in kept:
            s.close()
        for c in roots:
            c.close()
        assert d.stop() == 0
    print("PASS")


if __name__ == "__main__":
    main()
