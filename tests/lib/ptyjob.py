"""A command on a terminal as an interactive shell would run it, for CLI
tests: a pseudo-terminal whose session leader plays the shell's part. The
command runs in its own process group, in the foreground; the leader
reports when it stops or exits and, on fg(), gives it the terminal back and
continues it. (A command that is itself the session leader would be in an
orphaned group, where the kernel discards Ctrl-Z.)
"""

import os
import pty
import select
import signal
import time


NO_PTY = ("no pseudo-terminal can be opened (%s): the terminal tests need /dev/pts; "
          "in a chroot, mount it: mount -t devpts devpts ROOT/dev/pts")


def pty_fork():
    """pty.fork(), or a clear failure where the system has no ptys."""
    try:
        return pty.fork()
    except OSError as e:
        raise SystemExit("FAIL: " + NO_PTY % e)


class PtyJob:
    def __init__(self, argv, env=None):
        rep_r, rep_w = os.pipe()
        fg_r, fg_w = os.pipe()
        leader, fd = pty_fork()
        if leader == 0:
            _shell(argv, env, rep_w, fg_r)
        os.close(rep_w)
        os.close(fg_r)
        self.leader, self.fd = leader, fd
        self.rep, self.fg_w = rep_r, fg_w
        self.buf = b""

    def read_until(self, marker, timeout=15):
        """Read the terminal until marker shows; the output so far."""
        deadline = time.monotonic() + timeout
        while marker not in self.buf:
            if time.monotonic() > deadline:
                self.kill()
                raise SystemExit("no %r in %r" % (marker, self.buf[-400:]))
            r, _, _ = select.select([self.fd], [], [], 0.1)
            if r:
                try:
                    self.buf += os.read(self.fd, 65536)
                except OSError:
                    self.kill()
                    raise SystemExit("terminal closed before %r: %r"
                                     % (marker, self.buf[-400:]))
        return self.buf

    def drain(self, timeout=2):
        """What the terminal still holds, until it is quiet or closed."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            r, _, _ = select.select([self.fd], [], [], 0.2)
            if not r:
                break
            try:
                self.buf += os.read(self.fd, 65536)
            except OSError:
                break
        return self.buf

    def type(self, data):
        os.write(self.fd, data)

    def report(self, timeout=10):
        """The leader's next report: "stopped" or "exit N" (N as
        os.waitstatus_to_exitcode gives it)."""
        r, _, _ = select.select([self.rep], [], [], timeout)
        if not r:
            self.kill()
            raise SystemExit("no report from the terminal in %d s" % timeout)
        out = b""
        while not out.endswith(b"\n"):
            c = os.read(self.rep, 1)
            if not c:
                break
            out += c
        return out.decode().strip()

    def fg(self):
        os.write(self.fg_w, b"f")

    def wait(self):
        """Wait for the leader, once the command has exited."""
        os.waitpid(self.leader, 0)

    def kill(self):
        """Everything in the terminal's session goes, stopped or not."""
        for p in os.listdir("/proc"):
            try:
                if not p.isdigit():
                    continue
                with open("/proc/%s/stat" % p) as f:
                    sid = int(f.read().rsplit(")", 1)[1].split()[3])
                if sid == self.leader:
                    os.kill(int(p), signal.SIGKILL)
            except (OSError, ValueError, IndexError):
                pass


def _shell(argv, env, rep_w, fg_r):
    """The session leader: start argv in the foreground, report."""
    go_r, go_w = os.pipe()
    child = os.fork()
    if child == 0:
        os.setpgid(0, 0)
        os.read(go_r, 1)
        if env:
            os.environ.update(env)
        os.execv(argv[0], argv)
    os.setpgid(child, child)
    signal.signal(signal.SIGTTOU, signal.SIG_IGN)
    os.tcsetpgrp(0, child)
    os.write(go_w, b"g")
    while True:
        _, st = os.waitpid(child, os.WUNTRACED)
        if os.WIFSTOPPED(st):
            os.write(rep_w, b"stopped\n")
            os.read(fg_r, 1)
            os.tcsetpgrp(0, child)
            os.killpg(child, signal.SIGCONT)
            continue
        os.write(rep_w, b"exit %d\n" % os.waitstatus_to_exitcode(st))
        os._exit(0)
