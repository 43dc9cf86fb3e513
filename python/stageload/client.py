"""The protocol client: one connection to stageloadd (proto/PROTOCOL.md).

Every method of the protocol is a method here, named as on the wire, taking
its params as keyword arguments and answering the result as a plain dict
with the documented member names (sizes in bytes, times in ms since the
epoch). Notifications that arrive while a call waits for its answer are
kept, in order, for next_notification().

A Client is for one thread at a time. Calls block until the daemon answers
(`timeout` seconds, default 30); `wait`, and `logs` with `follow`, block
until the job has ended, whatever the timeout.
"""

from __future__ import annotations

import collections
import json
import os
import pwd
import select
import socket as _socket
import stat as _stat
import struct
import sys
import time
import weakref
from typing import (Any, Callable, Deque, Dict, Iterator, List, Optional, Sequence, Tuple,
                    Union)

from .job_fields import SUBMIT_PARAMS
from .units import parse_size

SYSTEM_SOCKET = "/var/run/stageload.sock"
PROTOCOL_VERSION = 2

# Error codes (PROTOCOL.md, Errors).
E_PARSE = -32700
E_INVALID_REQUEST = -32600
E_METHOD = -32601
E_PARAMS = -32602
E_INTERNAL = -32603
E_HELLO = -32000
E_VERSION = -32001
E_PERM = -32002
E_NOJOB = -32003
E_LIMIT = -32004
E_STATE = -32005
E_STORAGE = -32006
E_NOPROC = -32007


class StageloadError(Exception):
    """An error answer of the daemon: code (PROTOCOL.md, Errors) and its
    readable message."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__("%s (%d)" % (message, code) if code else message)
        self.code = code
        self.message = message
        self.data = data


class PermissionDenied(StageloadError):
    """-32002: the caller's uid may not do this."""


class NoSuchJob(StageloadError):
    """-32003."""


class LimitReached(StageloadError):
    """-32004: the message names the limit."""


class WrongState(StageloadError):
    """-32005: e.g. a stage for a job that has ended."""


class NoSuchProcess(StageloadError):
    """-32007."""


class DaemonNotRunning(StageloadError):
    """Nothing answers at the socket: path is where it was looked for."""

    def __init__(self, path: str, why: str = "") -> None:
        msg = "daemon not running at %s (start it with: %s)" % (path, start_hint(path))
        if why:
            msg += ": " + why
        super().__init__(0, msg)
        self.path = path


class UntrustedSocket(StageloadError):
    """The socket, or its directory, is not root's or the caller's, or
    others may write its directory: whoever listens there would get what is
    sent (a job's command, environment and directory). Nothing was sent.
    path is the socket; the message names the owner and the way out."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(0, message)
        self.path = path


class ConnectionLost(StageloadError):
    """The daemon closed the connection (it stopped, or refused us)."""

    def __init__(self, message: str = "the daemon closed the connection") -> None:
        super().__init__(0, message)


_BY_CODE = {E_PERM: PermissionDenied, E_NOJOB: NoSuchJob, E_LIMIT: LimitReached,
            E_STATE: WrongState, E_NOPROC: NoSuchProcess}


def error_for(code: int, message: str, data: Any = None) -> StageloadError:
    return _BY_CODE.get(code, StageloadError)(code, message, data)


# The longest path a socket address holds (sun_path less its NUL).
_SOCKET_PATH_MAX = 107 if sys.platform.startswith("linux") else 103


def _home() -> Optional[str]:
    home = os.environ.get("HOME", "")
    if home.startswith("/"):
        return home
    try:
        home = pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:
        return None
    return home if home.startswith("/") else None


def _user_socket(xdg: str, home: Optional[str], uid: int) -> Tuple[str, str]:
    """The per-user socket and its kind, as the daemon picks it
    (proto/socket-trust.c)."""
    if xdg.startswith("/"):
        return xdg + "/stageload.sock", "user"
    if home and home.startswith("/"):
        path = home + "/.stageload/stageload.sock"
        try:
            st = os.stat(home)
        except OSError:
            st = None
        if (st is not None and _stat.S_ISDIR(st.st_mode) and st.st_uid == uid
                and len(path.encode()) <= _SOCKET_PATH_MAX):
            return path, "user"
    return "/tmp/stageload-%d/stageload.sock" % uid, "tmp"


def _resolve_socket(explicit: Optional[str]) -> Tuple[str, str]:
    if explicit:
        return explicit, "named"
    env = os.environ.get("STAGELOAD_SOCKET")
    if env:
        return env, "named"
    if os.path.exists(SYSTEM_SOCKET):
        return SYSTEM_SOCKET, "system"
    return _user_socket(os.environ.get("XDG_RUNTIME_DIR", ""), _home(), os.getuid())


def start_hint(path: str) -> str:
    """How to start a daemon on path, as the C library says it: a plain
    stageloadd where it would listen there on its own (root's is the
    system socket, anyone else's the per-user one), else with --socket."""
    root = os.geteuid() == 0
    if path == SYSTEM_SOCKET:
        return "stageloadd" if root else "stageloadd, as root"
    if not root and path == _user_socket(os.environ.get("XDG_RUNTIME_DIR", ""), _home(),
                                         os.getuid())[0]:
        return "stageloadd"
    return "stageloadd --socket %s" % path


def socket_path(explicit: Optional[str] = None) -> str:
    """The socket a client uses, as the C library picks it: explicit, then
    $STAGELOAD_SOCKET, then the system socket if it exists, then the
    per-user one: $XDG_RUNTIME_DIR/stageload.sock when that is absolute,
    else ~/.stageload/stageload.sock when the home is the user's own
    directory, else /tmp/stageload-$UID/stageload.sock."""
    return _resolve_socket(explicit)[0]


def _owner(uid: int) -> str:
    try:
        return "uid %d (%s)" % (uid, pwd.getpwuid(uid).pw_name)
    except KeyError:
        return "uid %d" % uid


_WAY_OUT = {
    "system": "ask an administrator to remove it and restart stageloadd; meanwhile "
              "socket= or $STAGELOAD_SOCKET can name the socket of a daemon you trust",
    "tmp": "set XDG_RUNTIME_DIR to a directory only you can write (mode 0700) and start "
           "your stageloadd with it, or have root remove it; socket= or $STAGELOAD_SOCKET "
           "can name another socket",
}
_WAY_OUT_OTHER = ("use a socket root or you made, in a directory only root and you can "
                  "write (socket=, $STAGELOAD_SOCKET, or the per-user default of "
                  "PROTOCOL.md)")


def _others_write(st: os.stat_result) -> bool:
    if st.st_mode & _stat.S_IWOTH:
        return True
    if not st.st_mode & _stat.S_IWGRP:
        return False
    # macOS's /private/var/run is root:daemon 0775; daemon (gid 1) has
    # only root in it.
    return not (sys.platform == "darwin" and st.st_uid == 0 and st.st_gid == 1)


def _dir_problem(d: str, st: os.stat_result, uid: int, own: bool) -> Optional[str]:
    if not _stat.S_ISDIR(st.st_mode):
        return "%s is not a directory" % d
    if st.st_uid not in (0, uid):
        return ("directory %s is owned by %s, neither root nor uid %d: its owner could "
                "replace what is in it" % (d, _owner(st.st_uid), uid))
    if not _others_write(st) or (not own and st.st_mode & _stat.S_ISVTX):
        return None
    if own:
        return "directory %s is writable by other users (mode %04o)" % (
            d, st.st_mode & 0o7777)
    return ("directory %s is writable by other users (mode %04o) and not sticky"
            % (d, st.st_mode & 0o7777))


def _dir_trusted(path: str, uid: int) -> Optional[str]:
    """What is wrong with directory path, or None: the rule of
    proto/trust.c (trust_path_check) for a directory. Each directory on the
    way, links resolved one at a time, is root's or uid's and writable by
    nobody else (an ancestor may be sticky instead, as /tmp); each link is
    root's or uid's. What does not exist passes."""
    if not path.startswith("/"):
        path = os.path.join(os.getcwd(), path)
    todo = [c for c in path.split("/") if c and c != "."]
    cur = "/"
    links = 0
    why = _dir_problem("/", os.lstat("/"), uid, not todo)
    if why:
        return why
    while todo:
        comp = todo.pop(0)
        if comp == "..":
            cur = os.path.dirname(cur)
            continue
        nxt = os.path.join(cur, comp)
        try:
            st = os.lstat(nxt)
        except FileNotFoundError:
            return None
        if _stat.S_ISLNK(st.st_mode):
            if st.st_uid not in (0, uid):
                return ("symbolic link %s is owned by %s, neither root nor uid %d: its "
                        "owner could repoint it" % (nxt, _owner(st.st_uid), uid))
            links += 1
            if links > 40:
                return "too many symbolic links on the way to %s" % path
            target = os.readlink(nxt)
            if target.startswith("/"):
                cur = "/"
            todo = [c for c in target.split("/") if c and c != "."] + todo
            continue
        why = _dir_problem(nxt, st, uid, not todo)
        if why:
            return why
        cur = nxt
    return None


def check_peer(sock: _socket.socket, path: str, kind: str = "named",
               uid: Optional[int] = None) -> None:
    """Raise UntrustedSocket unless the daemon connected at sock runs as
    root or (but for the system socket) uid, as the kernel recorded it
    (SO_PEERCRED; where Python cannot read it, the path's checks stand
    alone)."""
    if not hasattr(_socket, "SO_PEERCRED"):
        return
    uid = os.geteuid() if uid is None else uid
    want = 0 if kind == "system" else uid
    fmt = "3i"
    _, peer, _ = struct.unpack(fmt, sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED,
                                                    struct.calcsize(fmt)))
    if peer not in (0, want):
        raise UntrustedSocket(path, (
            "refusing the daemon at %s: it runs as %s, %s, and would receive what you "
            "send (a job's command, environment and directory); %s"
            % (path, _owner(peer), "not as root" if kind == "system"
               else "neither as root nor as you", _WAY_OUT.get(kind, _WAY_OUT_OTHER))))


def check_socket(path: str, kind: str = "named", uid: Optional[int] = None) -> None:
    """Raise UntrustedSocket unless a client of uid (default: this
    process's) may send to the socket at path, which came from kind
    ("named": given; "system"; "user": $XDG_RUNTIME_DIR or the home;
    "tmp": /tmp/stageload-UID). The rule of libstageload
    (proto/socket-trust.c, docs/security.md)."""
    uid = os.geteuid() if uid is None else uid
    want = 0 if kind == "system" else uid
    way_out = _WAY_OUT.get(kind, _WAY_OUT_OTHER)
    leak = ("would receive what you send (a job's command, environment and "
            "directory)")
    d = os.path.dirname(path) or "."
    if kind == "tmp":
        try:
            st = os.lstat(d)
        except FileNotFoundError:
            return
        if not (_stat.S_ISDIR(st.st_mode) and st.st_uid == uid
                and st.st_mode & 0o7777 == 0o700):
            what = ("a symbolic link" if _stat.S_ISLNK(st.st_mode) else
                    "a directory" if _stat.S_ISDIR(st.st_mode) else "a file")
            raise UntrustedSocket(path, (
                "refusing the socket %s: %s is %s of %s, not a directory of uid %d with "
                "mode 0700, so another user may be listening there and %s; %s"
                % (path, d, what, _owner(st.st_uid), uid, leak, way_out)))
    why = _dir_trusted(d, want)
    if why:
        raise UntrustedSocket(path, (
            "refusing the socket %s: %s; another user could have put their own listener "
            "there, which %s; %s" % (path, why, leak, way_out)))
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if _stat.S_ISLNK(st.st_mode):
        raise UntrustedSocket(path, "refusing the socket %s: it is a symbolic link (of %s); "
                                    "name the socket itself" % (path, _owner(st.st_uid)))
    if st.st_uid not in (0, want):
        raise UntrustedSocket(path, (
            "refusing the socket %s: it is owned by %s, %s, so another user's program "
            "listens there and %s; %s"
            % (path, _owner(st.st_uid),
               "not by root" if kind == "system" else "neither by root nor by you",
               leak, way_out)))


# Every open client, so a forked child closes their sockets: the child must
# not talk on, or hold open, its parent's connection.
_open: "weakref.WeakSet[Client]" = weakref.WeakSet()


def _close_in_child() -> None:
    for c in list(_open):
        c._drop()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_close_in_child)


# A job id as the daemon reads it (PROTOCOL.md, "Job ids"): an int, or
# "42", "A42" (every element of array 42), "A42_3" (its element of index 3).
JobId = Union[int, str]


def parse_job_id(text: JobId) -> Tuple[int, bool, Optional[int]]:
    """(id, is_array, index) of a job id: 42 -> (42, False, None), "A42" ->
    (42, True, None), "A42_3" -> (42, True, 3). ValueError for another
    form. The daemon resolves them: this only reads them."""
    if isinstance(text, int) and not isinstance(text, bool):
        if text < 1:
            raise ValueError("a job id is from 1: %r" % text)
        return text, False, None
    if not isinstance(text, str):
        raise ValueError("not a job id: %r" % (text,))
    t = text
    is_array = t[:1] in ("A", "a")
    if is_array:
        t = t[1:]
    num, sep, index = t.partition("_")
    if (not num.isdigit() or not num.isascii() or int(num) < 1 or
            (sep and (not is_array or not index.isdigit() or not index.isascii()))):
        raise ValueError("not a job id: %r (give 42, A42 or A42_3)" % text)
    return int(num), is_array, int(index) if sep else None


def _filter(user: Optional[str], mine: Optional[bool],
            state: Union[str, Sequence[str], None],
            name: Optional[str]) -> Dict[str, Any]:
    """The job filter's params (PROTOCOL.md, "Job filters"): state as a
    list of words, or one string of them comma-separated."""
    if isinstance(state, str):
        state = [w for w in state.split(",") if w]
    return {"user": user, "mine": mine or None,
            "state": list(state) if state is not None else None, "name": name}


def _size(v: Union[int, str, None]) -> Optional[int]:
    return None if v is None else parse_size(v)


class Client:
    """One connection to the daemon. socket: see socket_path()."""

    def __init__(self, socket: Optional[str] = None, timeout: float = 30.0,
                 version: int = PROTOCOL_VERSION, client: str = "stageload-python") -> None:
        self.path, kind = _resolve_socket(socket)
        # Before anything is sent: whoever listens gets the requests and
        # is believed about the uid it reports (docs/security.md).
        check_socket(self.path, kind)
        self.timeout = timeout
        self._buf = b""
        self._next_id = 1
        self._notes: Deque[Dict[str, Any]] = collections.deque()
        # Python's sockets are close-on-exec (PEP 446): a command run
        # from here never inherits it.
        s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            s.connect(self.path)
        except (FileNotFoundError, ConnectionRefusedError, NotADirectoryError) as e:
            s.close()
            raise DaemonNotRunning(self.path, e.strerror or "") from None
        except OSError:
            s.close()
            raise
        try:
            check_peer(s, self.path, kind)
        except BaseException:
            s.close()
            raise
        self._sock: Optional[_socket.socket] = s
        _open.add(self)
        try:
            self.hello_result = self.call("hello", version=version, client=client)
        except BaseException:
            self.close()
            raise
        self.version: int = self.hello_result.get("version", version)
        self.uid: Optional[int] = self.hello_result.get("uid")
        self.interval_ms: int = self.hello_result.get("interval_ms", 500)

    # ---- plumbing ----

    def _drop(self) -> None:
        s, self._sock = self._sock, None
        if s is not None:
            try:
                s.close()
            except OSError:
                pass

    def close(self) -> None:
        self._drop()
        _open.discard(self)

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def fileno(self) -> int:
        if self._sock is None:
            raise ConnectionLost("the client is closed")
        return self._sock.fileno()

    def _send(self, obj: Dict[str, Any]) -> None:
        if self._sock is None:
            raise ConnectionLost("the client is closed")
        data = json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"
        try:
            self._sock.sendall(data)
        except OSError as e:
            self._drop()
            raise ConnectionLost("cannot send to the daemon: %s" % e) from None

    def _read_message(self, deadline: Optional[float]) -> Optional[Dict[str, Any]]:
        """The next message, or None when the deadline passed first."""
        while b"\n" not in self._buf:
            if self._sock is None:
                raise ConnectionLost("the client is closed")
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            r, _, _ = select.select([self._sock], [], [], wait)
            if not r:
                return None
            try:
                chunk = self._sock.recv(65536)
            except InterruptedError:
                continue
            except OSError as e:
                self._drop()
                raise ConnectionLost("connection to the daemon failed: %s" % e) from None
            if not chunk:
                self._drop()
                raise ConnectionLost()
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return json.loads(line.decode("utf-8", "replace"))

    def call(self, method: str, timeout: Optional[float] = -1.0, **params: Any) -> Any:
        """Send one request and answer its result; params that are None are
        left out. timeout: seconds (None: wait for ever; default the
        client's)."""
        rid = self._next_id
        self._next_id += 1
        req: Dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        p = {k: v for k, v in params.items() if v is not None}
        if p:
            req["params"] = p
        self._send(req)
        if timeout is not None and timeout < 0:
            timeout = self.timeout
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            msg = self._read_message(deadline)
            if msg is None:
                # The answer may still come: the connection is now out of
                # step, so it is closed.
                self.close()
                raise TimeoutError("no answer to %s within %.1fs" % (method, timeout or 0))
            if "id" not in msg:
                self._notes.append(msg)
                continue
            if msg.get("id") != rid:
                if msg.get("id") is None and "error" in msg:
                    e = msg["error"]
                    raise error_for(e.get("code", 0), e.get("message", ""), e.get("data"))
                continue
            if "error" in msg:
                e = msg["error"]
                raise error_for(e.get("code", 0), e.get("message", ""), e.get("data"))
            return msg.get("result")

    def next_notification(self, timeout: Optional[float] = None) -> Optional[Dict[str, Any]]:
        """The next notification ({"method", "params"}), waiting at most
        timeout seconds (None: for ever); None when none came."""
        if self._notes:
            return self._notes.popleft()
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            msg = self._read_message(deadline)
            if msg is None:
                return None
            if "id" not in msg:
                return msg

    def notifications(self, timeout: Optional[float] = None) -> Iterator[Dict[str, Any]]:
        """Notifications as they come, until none came for timeout seconds."""
        while True:
            n = self.next_notification(timeout)
            if n is None:
                return
            yield n

    # ---- the methods of PROTOCOL.md ----

    def hello(self, version: int = PROTOCOL_VERSION, client: Optional[str] = None) -> Dict[str, Any]:
        """A second hello is refused (-32000): the connection said it first."""
        return self.call("hello", version=version, client=client)

    def info(self) -> Dict[str, Any]:
        return self.call("info")

    def history(self, since_ms: Optional[int] = None, until_ms: Optional[int] = None,
                step_ms: Optional[int] = None, job_id: Optional[int] = None) -> Dict[str, Any]:
        return self.call("history", since_ms=since_ms, until_ms=until_ms, step_ms=step_ms,
                         job_id=job_id)

    def subscribe(self, samples: Optional[bool] = None, events: Optional[bool] = None,
                  pid: Optional[int] = None) -> Dict[str, Any]:
        """Then `sample` (and `event`, `process_gone`) notifications come:
        read them with next_notification()."""
        return self.call("subscribe", samples=samples, events=events, pid=pid)

    def unsubscribe(self) -> Dict[str, Any]:
        return self.call("unsubscribe")

    def submit(self, argv: Sequence[str], cwd: Optional[str] = None,
               env: Optional[Union[Sequence[str], Dict[str, str]]] = None,
               attached: bool = False, name: Optional[str] = None,
               priority: Optional[int] = None, wait_free_pct: Optional[float] = None,
               swap_budget: Union[int, str, None] = None,
               expect: Union[int, str, None] = None, exclusive: Optional[bool] = None,
               retry_on_breach: Optional[int] = None,
               umask: Optional[int] = None,
               wait_free: Union[int, str, None] = None,
               **options: Any) -> Dict[str, Any]:
        """Queue a job. cwd defaults to the current directory; a detached
        job's env to this process's environment and its umask to this
        process's. Sizes take bytes or "8G": swap_budget, expect, and
        wait_free (wait_free_bytes: start only when that much memory is
        available). options: every other submit parameter of the protocol
        by its name (job_fields.SUBMIT_PARAMS, from the daemon's table; a
        size takes "8G" too): after=[ids], held=True, group="g",
        on_end="cmd", array="1-100%4" (an array: one job per index, the
        result's "ids"; after takes "A42" and "A42_3" too), ..."""
        params: Dict[str, Any] = {}
        for k, v in options.items():
            param = SUBMIT_PARAMS.get(k)
            if param is None:
                raise TypeError("submit() got an unexpected keyword argument %r" % k)
            params[k] = _size(v) if param.unit == "size" else v
        if cwd is None:
            cwd = os.getcwd()
        if env is None and not attached:
            env = dict(os.environ)
        if isinstance(env, dict):
            env = ["%s=%s" % kv for kv in env.items()]
        if umask is None and not attached:
            umask = os.umask(0o077)
            os.umask(umask)
        given = dict(argv=list(argv), cwd=cwd,
                     env=list(env) if env is not None else None,
                     attached=attached or None, name=name, priority=priority,
                     wait_free_pct=wait_free_pct, swap_budget_bytes=_size(swap_budget),
                     expect_bytes=_size(expect), exclusive=exclusive,
                     retry_on_breach=retry_on_breach, umask=umask,
                     wait_free_bytes=_size(wait_free))
        for k in params:
            if given.get(k) is not None:
                raise TypeError("submit() got %s twice" % k)
            given[k] = params[k]
        return self.call("submit", **given)

    def job_pid(self, id: JobId, pid: int, tree: Optional[bool] = None) -> Dict[str, Any]:
        """tree: follow pid and its descendants only, never its process
        group (what guard() uses for the current process)."""
        return self.call("job_pid", id=id, pid=pid, tree=tree)

    def job_exit(self, id: JobId, exit_code: Optional[int] = None,
                 signal: Optional[int] = None) -> Dict[str, Any]:
        return self.call("job_exit", id=id, exit_code=exit_code, signal=signal)

    def resume(self, id: JobId) -> Dict[str, Any]:
        return self.call("resume", id=id)

    def status(self, all: Optional[bool] = None, limit: Optional[int] = None,
               cursor: Optional[str] = None, ended: Optional[bool] = None,
               user: Optional[str] = None, mine: Optional[bool] = None,
               state: Union[str, Sequence[str], None] = None,
               name: Optional[str] = None) -> Dict[str, Any]:
        """One page ({"jobs", "next_cursor"}); jobs() reads them all. ended:
        the ended jobs alone, newest first. user, mine, state and name are
        the daemon's job filter (PROTOCOL.md, "Job filters"): a page a
        filter ends early is not the last while next_cursor is given."""
        return self.call("status", all=all, limit=limit, cursor=cursor, ended=ended,
                         **_filter(user, mine, state, name))

    def jobs(self, all: bool = False, ended: bool = False, user: Optional[str] = None,
             mine: Optional[bool] = None, state: Union[str, Sequence[str], None] = None,
             name: Optional[str] = None) -> List[Dict[str, Any]]:
        """Every job of the list (ended: the ended ones alone), every page
        read (protocol version 2), of those the filter passes."""
        out: List[Dict[str, Any]] = []
        cursor = None
        while True:
            page = self.status(all=all or None, limit=1000 if self.version >= 2 else None,
                               cursor=cursor, ended=ended or None, user=user, mine=mine,
                               state=state, name=name)
            out.extend(page.get("jobs", []))
            cursor = page.get("next_cursor")
            if not cursor:
                return out

    def show(self, id: JobId, env: Optional[bool] = None) -> Dict[str, Any]:
        return self.call("show", id=id, env=env)

    def cancel(self, id: JobId) -> Dict[str, Any]:
        return self.call("cancel", id=id)

    def cancel_matching(self, user: Optional[str] = None, mine: Optional[bool] = None,
                        state: Union[str, Sequence[str], None] = None,
                        name: Optional[str] = None,
                        all_users: Optional[bool] = None) -> Dict[str, Any]:
        """Cancel in one call the caller's live jobs that pass the filter
        ({"cancelled": N, "ids": [...]}); root's own too, another user's
        when root names one, everyone's with all_users (root only:
        PermissionDenied otherwise). Waits as long as that takes."""
        return self.call("cancel_matching", timeout=None, all_users=all_users,
                         **_filter(user, mine, state, name))

    def hold(self, id: JobId) -> Dict[str, Any]:
        """Keep a queued job from starting until release(); the Job after
        the call."""
        return self.call("hold", id=id)

    def release(self, id: JobId) -> Dict[str, Any]:
        return self.call("release", id=id)

    def resubmit(self, id: JobId) -> Dict[str, Any]:
        """Queue a new job as an ended one was submitted ({"id",
        "position", "queued", "resubmitted"})."""
        return self.call("resubmit", id=id)

    def update(self, id: JobId, priority: Optional[int] = None,
               wait_free_pct: Optional[float] = None,
               wait_free_bytes: Union[int, str, None] = None,
               swap_budget: Union[int, str, None] = None,
               expect: Union[int, str, None] = None) -> Dict[str, Any]:
        """Change a queued job's options (at least one); the Job after the
        call."""
        return self.call("update", id=id, priority=priority, wait_free_pct=wait_free_pct,
                         wait_free_bytes=_size(wait_free_bytes),
                         swap_budget_bytes=_size(swap_budget), expect_bytes=_size(expect))

    def wait(self, id: JobId, timeout: Optional[float] = None) -> Dict[str, Any]:
        """Blocks until the job has ended (timeout None: for ever)."""
        return self.call("wait", id=id, timeout=timeout)

    def wait_all(self) -> List[Dict[str, Any]]:
        """Waits for every job of the caller's queued or running now (as
        `stageloadctl wait --all`); the ended Jobs, in the queue's order."""
        return [self.wait(j["id"]) for j in self.jobs(mine=True)]

    def logs(self, id: JobId, offset: Optional[int] = None, follow: Optional[bool] = None,
             on_data: Optional[Callable[[str], None]] = None) -> Dict[str, Any]:
        """The log from offset: each chunk goes to on_data (default: kept and
        answered as result["data"]). With follow it blocks until the job
        has ended."""
        rid = self._next_id
        chunks: List[str] = []
        self._next_id += 1
        req: Dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": "logs",
                               "params": {k: v for k, v in
                                          {"id": id, "offset": offset, "follow": follow}.items()
                                          if v is not None}}
        self._send(req)
        deadline = None if follow else time.monotonic() + self.timeout
        while True:
            msg = self._read_message(deadline)
            if msg is None:
                self.close()
                raise TimeoutError("no answer to logs within %.1fs" % self.timeout)
            if "id" not in msg:
                if msg.get("method") == "log" and msg.get("params", {}).get("id") == id:
                    data = msg["params"].get("data", "")
                    if on_data is not None:
                        on_data(data)
                    else:
                        chunks.append(data)
                    if deadline is not None:
                        deadline = time.monotonic() + self.timeout
                else:
                    self._notes.append(msg)
                continue
            if msg.get("id") != rid:
                continue
            if "error" in msg:
                e = msg["error"]
                raise error_for(e.get("code", 0), e.get("message", ""), e.get("data"))
            result = dict(msg.get("result") or {})
            if on_data is None:
                result["data"] = "".join(chunks)
            return result

    def events(self, after_id: Optional[int] = None, limit: Optional[int] = None,
               follow: Optional[bool] = None, cursor: Optional[str] = None,
               before_id: Optional[int] = None,
               job_id: Optional[int] = None, user: Optional[str] = None,
               mine: Optional[bool] = None, state: Union[str, Sequence[str], None] = None,
               name: Optional[str] = None) -> Dict[str, Any]:
        """One page, oldest first after after_id (newest first below
        before_id), of job job_id alone when given; with follow the rest
        come as `event` notifications. user, mine, state and name are the
        daemon's job filter (a state keeps the events by which jobs
        entered it): a page it ends early is not the last while
        next_cursor is given."""
        return self.call("events", after_id=after_id, limit=limit, follow=follow, cursor=cursor,
                         before_id=before_id, job_id=job_id,
                         **_filter(user, mine, state, name))

    def report(self, since_ms: Optional[int] = None, until_ms: Optional[int] = None,
               by: Optional[str] = None, user: Optional[str] = None,
               mine: Optional[bool] = None, name: Optional[str] = None) -> Dict[str, Any]:
        """Accounting of ended jobs ({"by", "since_ms", "until_ms",
        "oldest_ms", "rows"}): per "user", "name" or "user,name" (the
        default), over the UTC days that hold since_ms to until_ms, of
        the jobs status's filter passes (PROTOCOL.md, "Job filters"):
        user (a login name, or a uid as digits), mine, name a glob; no
        state, as a rollup counts ended jobs only (PROTOCOL.md, report)."""
        return self.call("report", since_ms=since_ms, until_ms=until_ms, by=by,
                         **_filter(user, mine, None, name))

    def stage(self, id: int, name: str, token: Optional[str] = None) -> Dict[str, Any]:
        """The running job id entered stage name (its owner or root);
        WrongState once it has ended. token: the job's
        $STAGELOAD_JOB_TOKEN, which a report from inside the job carries:
        a daemon whose job id has another token refuses it (Forbidden)."""
        if token:
            return self.call("stage", id=id, name=name, token=token)
        return self.call("stage", id=id, name=name)
