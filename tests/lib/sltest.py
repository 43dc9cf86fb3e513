"""Test helpers: start a private stageloadd and talk the wire protocol.

Everything here talks to the real daemon binary over its real socket; the only
thing faked is the system memory it reads, through a fixture proc root.
"""

import errno
import importlib.util
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback

SKIP = 77


def ci():
    return os.environ.get("CI") == "true"


def skip(why, root_only=False):
    """Skip the test, or fail under CI=true when the skip is root-only."""
    if root_only and ci():
        print("FAIL (CI=true forbids this skip): " + why, file=sys.stderr)
        sys.exit(1)
    print("SKIP: " + why, file=sys.stderr)
    sys.exit(SKIP)


# The package that holds each tool the root-only tests run, as Debian 12
# names it (swapon, mount and losetup are in `mount` there, not util-linux),
# for the hint of a missing tool. scripts/deps.sh --test installs them all.
TOOL_PACKAGES = {
    "mount": "mount", "umount": "mount", "losetup": "mount", "swapon": "mount",
    "swapoff": "mount", "mkswap": "util-linux", "setpriv": "util-linux",
    "mkfs.ext4": "e2fsprogs", "e2fsck": "e2fsprogs", "useradd": "passwd",
    "userdel": "passwd", "groupadd": "passwd", "groupdel": "passwd",
    "sqlite3": "sqlite3", "sync": "coreutils",
    "promtool": "prometheus", "prometheus": "prometheus",
    "chromium": "chromium", "chromedriver": "chromium-driver",
    "mandoc": "mandoc", "zsh": "zsh", "fish": "fish",
}


def missing_tools(*tools):
    """None when every tool is on PATH, else why not: the tools and the
    packages that hold them."""
    missing = [t for t in tools if shutil.which(t) is None]
    if not missing:
        return None
    pkgs = sorted({TOOL_PACKAGES.get(t, t) for t in missing})
    return ("%s not found on PATH: install %s (apt-get install %s, or "
            "scripts/deps.sh --test)" % (", ".join(missing), ", ".join(pkgs),
                                         " ".join(pkgs)))


def require_tools(*tools):
    """Skip, naming the packages to install, when a tool is missing; under
    CI=true that is a failure (the test would not have run)."""
    why = missing_tools(*tools)
    if why:
        skip(why, root_only=True)


def poll(cond, timeout=10.0, step=0.02, what="condition"):
    """Return cond()'s first truthy value, or raise after timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %.1fs waiting for %s" % (timeout, what))
        time.sleep(step)


def write_meminfo(root, total_kb=16 << 20, avail_kb=8 << 20, swap_total_kb=4 << 20,
                  swap_free_kb=4 << 20):
    """Write a fixture meminfo atomically (rename), as the kernel would show it."""
    text = ("MemTotal:       %d kB\nMemFree:        %d kB\nMemAvailable:   %d kB\n"
            "Buffers:             0 kB\nCached:              0 kB\n"
            "SwapTotal:      %d kB\nSwapFree:       %d kB\n") % (
                total_kb, avail_kb, avail_kb, swap_total_kb, swap_free_kb)
    tmp = os.path.join(root, ".meminfo.tmp")
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, os.path.join(root, "meminfo"))


def write_psi(root, some_avg10=0.0):
    os.makedirs(os.path.join(root, "pressure"), exist_ok=True)
    tmp = os.path.join(root, "pressure", ".memory.tmp")
    with open(tmp, "w") as f:
        f.write("some avg10=%.2f avg60=0.00 avg300=0.00 total=0\n"
                "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n" % some_avg10)
    os.rename(tmp, os.path.join(root, "pressure", "memory"))


def fill_fs(path):
    """Write to path until its file system is full, to the last byte."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    block = b"\0" * 65536
    try:
        while True:
            try:
                os.write(fd, block)
            except OSError as e:
                if e.errno != errno.ENOSPC:
                    raise
                if len(block) == 1:
                    return
                block = block[: len(block) // 2]
    finally:
        os.close(fd)


def users_bin(bin_dir):
    """A directory every user can enter (mode 0755, made here; the caller
    removes it) with a copy of stageloadctl and libstageload: run it as
    another user with LD_LIBRARY_PATH naming it.

    The build may sit under a home only its owner can enter (/root is 0700
    on Debian): another user could then not load libstageload.so.1 from it
    ("cannot open shared object file"). A build's RUNPATH is its own lib
    directory, which the loader searches after LD_LIBRARY_PATH and skips
    when it cannot enter it."""
    top = tempfile.mkdtemp(prefix="sl-users-bin.")
    os.chmod(top, 0o755)
    lib_dir = os.path.join(os.path.dirname(os.path.abspath(bin_dir)), "lib")
    shutil.copy(os.path.join(bin_dir, "stageloadctl"), top)
    for f in os.listdir(lib_dir) if os.path.isdir(lib_dir) else []:
        if f.startswith("libstageload.so"):
            shutil.copy(os.path.join(lib_dir, f), top)  # links followed
    for f in os.listdir(top):
        os.chmod(os.path.join(top, f), 0o755)
    return top


def kill_leftovers(d):
    """Jobs outlive a killed daemon by design: end every process whose
    command line or cwd points into this test's directory."""
    me = os.getpid()
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == me:
            continue
        try:
            cmd = open("/proc/%s/cmdline" % pid, "rb").read().decode(errors="replace")
            cwd = os.readlink("/proc/%s/cwd" % pid)
        except OSError:
            continue
        if d.dir in cmd or cwd.startswith(d.dir):
            try:
                os.kill(int(pid), signal.SIGKILL)
            except OSError:
                pass


class Daemon:
    """A stageloadd on a private socket, database and fixture proc root."""

    def __init__(self, extra=(), interval="0.1", config=None, env=None):
        self.bin = os.environ.get("SL_BIN", "build/bin")
        self.dir = tempfile.mkdtemp(prefix="sltest-")
        self.proc_root = os.path.join(self.dir, "proc")
        os.makedirs(self.proc_root)
        write_meminfo(self.proc_root)
        write_psi(self.proc_root)
        self.socket = os.path.join(self.dir, "sl.sock")
        self.db = os.path.join(self.dir, "sl.db")
        self.log = os.path.join(self.dir, "daemon.log")
        self.args = [os.path.join(self.bin, "stageloadd"), "--socket", self.socket,
                     "--db", self.db, "--proc-root", self.proc_root,
                     "--interval", interval]
        if config:
            path = os.path.join(self.dir, "stageload.conf")
            with open(path, "w") as f:
                f.write(config)
            self.args += ["--config", path]
        self.args += list(extra)
        # Variables set (or, with None, removed) in the daemon's environment.
        self.env = env
        self.proc = None

    def start(self):
        logf = open(self.log, "ab")
        env = None
        if self.env:
            env = dict(os.environ)
            for k, v in self.env.items():
                if v is None:
                    env.pop(k, None)
                else:
                    env[k] = v
        self.proc = subprocess.Popen(self.args, stdout=logf, stderr=logf,
                                     stdin=subprocess.DEVNULL, env=env)
        logf.close()
        poll(self._ready, timeout=10, what="daemon to answer on " + self.socket)
        return self

    def _ready(self):
        if self.proc.poll() is not None:
            raise AssertionError("daemon exited with %s:\n%s" % (self.proc.returncode,
                                                                 self.log_text()))
        try:
            c = Client(self.socket)
            c.close()
            return True
        except OSError:
            return False

    def log_text(self):
        try:
            with open(self.log, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, sig=signal.SIGTERM, timeout=15):
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("daemon ignored signal %d" % sig)

    def integrity(self):
        out = subprocess.run(["sqlite3", "-readonly", self.db, "PRAGMA integrity_check;"],
                             capture_output=True, text=True, timeout=30)
        return out.stdout.strip()

    def cleanup(self):
        try:
            if self.alive():
                self.proc.kill()
                self.proc.wait()
        finally:
            # The jobs' monitors outlive the daemon by design: one that
            # ends after the directory is gone would make it again to
            # write its job's status.
            kill_leftovers(self)
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        if exc[0] is not None:
            sys.stderr.write("--- daemon log ---\n" + self.log_text()[-8000:])
        self.cleanup()


class RpcError(Exception):
    def __init__(self, code, message):
        super().__init__("%d %s" % (code, message))
        self.code = code
        self.message = message


class Client:
    """A line-framed JSON-RPC connection; notifications are queued."""

    def __init__(self, path, hello=True, timeout=10.0, version=1):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.buf = b""
        self.next_id = 1
        self.notes = []
        if hello:
            self.call("hello", {"version": version, "client": "sltest"})

    def close(self):
        self.sock.close()

    def send_raw(self, data):
        self.sock.sendall(data)

    def read_msg(self, timeout=None):
        """Next message, or None on EOF."""
        if timeout is not None:
            self.sock.settimeout(timeout)
        while b"\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def response(self, want_id, timeout=10.0):
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("no response to id %r" % (want_id,))
            m = self.read_msg(timeout=left)
            if m is None:
                raise ConnectionError("connection closed by the daemon")
            if "id" not in m:
                self.notes.append(m)
                continue
            if m["id"] == want_id:
                return m

    def call(self, method, params=None, timeout=10.0):
        rid = self.next_id
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        self.send_raw(json.dumps(msg).encode() + b"\n")
        m = self.response(rid, timeout)
        if "error" in m:
            raise RpcError(m["error"]["code"], m["error"].get("message", ""))
        return m["result"]

    def notification(self, method=None, timeout=10.0):
        deadline = time.monotonic() + timeout
        while True:
            for i, n in enumerate(self.notes):
                if method is None or n.get("method") == method:
                    return self.notes.pop(i)
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("no %s notification" % (method or "any"))
            m = self.read_msg(timeout=left)
            if m is None:
                raise ConnectionError("connection closed by the daemon")
            if "id" not in m:
                self.notes.append(m)


# A connection made by a process of another user: a relay between its
# stdin/stdout and the daemon's socket runs as that user, so the
# connection's peer credentials are the user's own.
RELAY = r"""
import os, selectors, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
sel = selectors.DefaultSelector()
sel.register(0, selectors.EVENT_READ, "in")
sel.register(s, selectors.EVENT_READ, "sock")
while True:
    for key, _ in sel.select():
        if key.data == "in":
            data = os.read(0, 65536)
            if not data:
                sel.unregister(0)
                s.shutdown(socket.SHUT_WR)
            else:
                s.sendall(data)
        else:
            data = s.recv(65536)
            if not data:
                sys.exit(0)
            os.write(1, data)
"""


class RelayClient(Client):
    """A Client over a relay process (proc: RELAY running as the user,
    with stdin and stdout as pipes)."""

    def __init__(self, proc):
        self.proc = proc
        self.buf = b""
        self.next_id = 1
        self.notes = []

    def send_raw(self, data):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def read_msg(self, timeout=None):
        deadline = time.monotonic() + (timeout if timeout is not None else 10.0)
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            r, _, _ = select.select([fd], [], [], max(left, 0))
            if not r:
                raise TimeoutError("no message from the daemon")
            chunk = os.read(fd, 65536)
            if not chunk:
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()


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


def client_as(uid, path):
    """A greeted Client whose connection a process running as uid made."""
    c = Client.__new__(Client)
    c.sock = connect_as(uid, path, 1)[0]
    c.sock.settimeout(10)
    c.buf = b""
    c.next_id = 1
    c.notes = []
    r = c.call("hello", {"version": 1, "client": "sltest"})
    assert r["uid"] == uid, r
    return c


def scenarios():
    """tests/jobs-scenarios.py as a module: its fixture daemon, job
    helpers and run_scenarios, which the scenario files share (its name
    has a dash, so it is loaded by path, not imported)."""
    path = os.path.join(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))), "jobs-scenarios.py")
    spec = importlib.util.spec_from_file_location("jobs_scenarios", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
