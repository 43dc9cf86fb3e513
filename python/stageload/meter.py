"""MemoryMeter: a JSONL trace of this process tree's memory and the system's.

    with stageload.MemoryMeter("trace.jsonl", interval=0.5) as m:
        m.mark("encode"); encode()
        m.mark("decode"); decode()

The first line says where the numbers come from: {"trace": "stageload",
"source": "daemon" | "local", ...}. Every other line is one sample:
ts_ms, footprint_bytes (this process and its descendants), swap_used_bytes,
free_pct, pressure, stage (the last mark, or null), and swap_bytes of the
tree (null off Linux). The numbers come from the daemon (`subscribe` with
this pid) when one answers and the interval is not shorter than its own;
otherwise this process samples them itself, with the daemon's definitions
(docs/metrics.md): Linux /proc, macOS sysctl and proc_pid_rusage.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import platform
import threading
import time
import weakref
from typing import IO, Any, Dict, List, Optional, Tuple

from .client import Client, DaemonNotRunning, StageloadError

_meters: "weakref.WeakSet[MemoryMeter]" = weakref.WeakSet()

# Loads in progress (StagedModels): while above 0 the local sampler samples
# at FAST_INTERVAL, so a line's footprint_peak_bytes catches a load's peak
# whatever the interval.
_loads = 0
_loads_lock = threading.Lock()
FAST_INTERVAL = 0.05


def _mark_all(name: Optional[str]) -> None:
    for m in list(_meters):
        m._stage = name


def loading(begins: bool) -> None:
    """A load begins (True) or ends (False): see _loads."""
    global _loads
    with _loads_lock:
        _loads = max(0, _loads + (1 if begins else -1))


def note_footprint(fp: int) -> None:
    """A footprint of this process sampled elsewhere (a load's watch): it
    counts toward the next line's footprint_peak_bytes of every running
    meter of this process."""
    pid = os.getpid()
    for m in list(_meters):
        if m.pid == pid:
            m._note_peak(fp)


def _now_ms() -> int:
    return int(time.time() * 1000)


# ---- the local sampler: the daemon's definitions, read here ----

PSI_WARN = 10.0      # the daemon's defaults (docs/metrics.md): some avg10
PSI_CRITICAL = 40.0  # below 10 normal, below 40 warn, else critical


def _pressure_from_psi(avg10: float) -> str:
    if avg10 < PSI_WARN:
        return "normal"
    if avg10 < PSI_CRITICAL:
        return "warn"
    return "critical"


class LinuxSampler:
    """free % = MemAvailable / MemTotal; swap used = SwapTotal - SwapFree;
    pressure from /proc/pressure/memory; a tree's footprint the sum of
    RssAnon + RssShmem, its swap the sum of VmSwap."""

    def __init__(self, proc: str = "/proc") -> None:
        self.proc = proc

    def system(self) -> Dict[str, Any]:
        info: Dict[str, int] = {}
        with open(os.path.join(self.proc, "meminfo")) as f:
            for line in f:
                k, _, rest = line.partition(":")
                parts = rest.split()
                if parts:
                    info[k] = int(parts[0]) * 1024
        total = info.get("MemTotal", 0)
        avail = info.get("MemAvailable", info.get("MemFree", 0))
        pressure = "unknown"
        try:
            with open(os.path.join(self.proc, "pressure", "memory")) as f:
                for line in f:
                    if line.startswith("some "):
                        for tok in line.split():
                            if tok.startswith("avg10="):
                                pressure = _pressure_from_psi(float(tok[6:]))
        except OSError:
            pass
        return {"free_pct": 100.0 * avail / total if total else 0.0,
                "swap_used_bytes": max(0, info.get("SwapTotal", 0) - info.get("SwapFree", 0)),
                "pressure": pressure, "total_bytes": total, "available_bytes": avail}

    def footprint(self, pid: int) -> Optional[int]:
        """RssAnon + RssShmem of pid alone (no walk of the tree)."""
        try:
            with open(os.path.join(self.proc, str(pid), "status")) as f:
                fp = None
                for line in f:
                    if line.startswith("RssAnon:") or line.startswith("RssShmem:"):
                        fp = (fp or 0) + int(line.split()[1]) * 1024
                return fp
        except (OSError, ValueError, IndexError):
            return None

    def _children(self) -> Dict[int, List[int]]:
        kids: Dict[int, List[int]] = {}
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                with open("/proc/%s/stat" % d, "rb") as f:
                    s = f.read()
            except OSError:
                continue
            # the name may hold spaces and parentheses: ppid follows the last ')'
            rest = s[s.rfind(b")") + 2:].split()
            if len(rest) > 1:
                kids.setdefault(int(rest[1]), []).append(int(d))
        return kids

    def tree(self, pid: int) -> Tuple[int, Optional[int], int]:
        """(footprint_bytes, swap_bytes, nprocs) of pid and its descendants."""
        kids = self._children()
        todo, seen = [pid], set()
        fp = swap = n = 0
        while todo:
            p = todo.pop()
            if p in seen:
                continue
            seen.add(p)
            todo.extend(kids.get(p, ()))
            try:
                with open("/proc/%d/status" % p) as f:
                    vals = {}
                    for line in f:
                        k, _, rest = line.partition(":")
                        if k in ("RssAnon", "RssShmem", "VmSwap"):
                            vals[k] = int(rest.split()[0]) * 1024
            except (OSError, ValueError, IndexError):
                continue
            n += 1
            fp += vals.get("RssAnon", 0) + vals.get("RssShmem", 0)
            swap += vals.get("VmSwap", 0)
        return fp, swap, n


class DarwinSampler:
    """free % = kern.memorystatus_level; swap used = vm.swapusage xsu_used;
    pressure = kern.memorystatus_vm_pressure_level (1/2/4); a tree's
    footprint the sum of proc_pid_rusage's ri_phys_footprint. Not run on
    the project's test machines (Linux): see docs/python.md."""

    class _XswUsage(ctypes.Structure):
        _fields_ = [("xsu_total", ctypes.c_uint64), ("xsu_avail", ctypes.c_uint64),
                    ("xsu_used", ctypes.c_uint64), ("xsu_pagesize", ctypes.c_uint32),
                    ("xsu_encrypted", ctypes.c_int32)]

    # struct rusage_info_v2 (sys/resource.h): a 16-byte uuid, then 64-bit
    # fields: ri_user_time, ri_system_time, ri_pkg_idle_wkups,
    # ri_interrupt_wkups, ri_pageins, ri_wired_size, ri_resident_size,
    # ri_phys_footprint (f7), ...
    class _RusageV2(ctypes.Structure):
        _fields_ = [("ri_uuid", ctypes.c_uint8 * 16)] + \
            [("f%d" % i, ctypes.c_uint64) for i in range(24)]

    RUSAGE_INFO_V2 = 2
    PHYS_FOOTPRINT_FIELD = "f7"

    def __init__(self) -> None:
        self.libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        self.libproc = ctypes.CDLL(ctypes.util.find_library("proc") or
                                   "/usr/lib/libproc.dylib", use_errno=True)

    def _sysctl(self, name: str, ctype: Any) -> Any:
        v = ctype()
        size = ctypes.c_size_t(ctypes.sizeof(v))
        if self.libc.sysctlbyname(name.encode(), ctypes.byref(v), ctypes.byref(size),
                                  None, ctypes.c_size_t(0)) != 0:
            raise OSError(ctypes.get_errno(), "sysctl " + name)
        return v

    def system(self) -> Dict[str, Any]:
        level = self._sysctl("kern.memorystatus_level", ctypes.c_int).value
        swap = self._sysctl("vm.swapusage", self._XswUsage).xsu_used
        p = self._sysctl("kern.memorystatus_vm_pressure_level", ctypes.c_int).value
        total = int(self._sysctl("hw.memsize", ctypes.c_uint64).value)
        return {"free_pct": float(level), "swap_used_bytes": int(swap),
                "pressure": {1: "normal", 2: "warn", 4: "critical"}.get(p, "unknown"),
                "total_bytes": total, "available_bytes": total * level // 100}

    def footprint(self, pid: int) -> Optional[int]:
        """ri_phys_footprint of pid alone."""
        ru = self._RusageV2()
        if self.libproc.proc_pid_rusage(pid, self.RUSAGE_INFO_V2, ctypes.byref(ru)) != 0:
            return None
        return int(getattr(ru, self.PHYS_FOOTPRINT_FIELD))

    def _pids(self) -> List[int]:
        n = self.libproc.proc_listallpids(None, 0)
        buf = (ctypes.c_int * (n + 64))()
        n = self.libproc.proc_listallpids(buf, ctypes.sizeof(buf))
        return [buf[i] for i in range(max(0, n))]

    def _ppid(self, pid: int) -> int:
        # struct proc_bsdshortinfo: pid, ppid, ... (PROC_PIDT_SHORTBSDINFO 13)
        info = (ctypes.c_uint32 * 16)()
        if self.libproc.proc_pidinfo(pid, 13, ctypes.c_uint64(0), info,
                                     ctypes.sizeof(info)) <= 0:
            return -1
        return int(info[1])

    def tree(self, pid: int) -> Tuple[int, Optional[int], int]:
        kids: Dict[int, List[int]] = {}
        for p in self._pids():
            kids.setdefault(self._ppid(p), []).append(p)
        todo, seen = [pid], set()
        fp = n = 0
        while todo:
            p = todo.pop()
            if p in seen:
                continue
            seen.add(p)
            todo.extend(kids.get(p, ()))
            ru = self._RusageV2()
            if self.libproc.proc_pid_rusage(p, self.RUSAGE_INFO_V2, ctypes.byref(ru)) != 0:
                continue
            n += 1
            fp += getattr(ru, self.PHYS_FOOTPRINT_FIELD)
        return fp, None, n


def local_sampler() -> Any:
    if platform.system() == "Darwin":
        return DarwinSampler()
    return LinuxSampler()


_own_sampler: Any = None


def own_sampler() -> Any:
    """One local sampler for this process's own use (StagedModels)."""
    global _own_sampler
    if _own_sampler is None:
        _own_sampler = local_sampler()
    return _own_sampler


def process_footprint(pid: Optional[int] = None) -> Optional[int]:
    """The footprint of one process (default this one), as the daemon
    counts it; None when it cannot be read."""
    try:
        return own_sampler().footprint(os.getpid() if pid is None else pid)
    except OSError:
        return None


def system_memory() -> Dict[str, Any]:
    """The system now: total_bytes, available_bytes, swap_used_bytes,
    pressure (and free_pct), with the daemon's definitions."""
    return own_sampler().system()


class MemoryMeter:
    """Writes a trace to path (see the module's doc). pid: the tree to
    meter (default this process). source: "auto" (the daemon when it
    answers and the interval allows), "daemon" or "local"."""

    def __init__(self, path: str, interval: float = 0.5, pid: Optional[int] = None,
                 socket: Optional[str] = None, source: str = "auto") -> None:
        if interval <= 0:
            raise ValueError("interval must be above 0")
        if source not in ("auto", "daemon", "local"):
            raise ValueError("source is auto, daemon or local")
        self.path = path
        self.interval = interval
        self.pid = os.getpid() if pid is None else pid
        self.socket = socket
        self.want = source
        self.source: Optional[str] = None
        self.lines = 0
        self._stage: Optional[str] = None
        self._out: Optional[IO[str]] = None
        self._thread: Optional[threading.Thread] = None
        self._stop = threading.Event()
        self._client: Optional[Client] = None
        self._lock = threading.Lock()
        self._peak: Optional[int] = None  # the highest footprint since the last line
        self.error: Optional[BaseException] = None

    def mark(self, stage: Optional[str]) -> None:
        """The samples from now on belong to stage (None: no stage). Inside
        a job ($STAGELOAD_JOB_ID) the daemon is told too."""
        self._stage = stage
        if stage is not None and os.environ.get("STAGELOAD_JOB_ID"):
            from .guard import stage as _report
            _report(stage, self.socket)

    def _open_daemon(self) -> Optional[Client]:
        try:
            c = Client(self.socket, timeout=10.0)
        except (DaemonNotRunning, OSError):
            if self.want == "daemon":
                raise
            return None
        if self.want == "auto" and self.interval * 1000 < c.interval_ms:
            c.close()
            return None
        try:
            c.subscribe(pid=self.pid)
        except StageloadError:
            c.close()
            if self.want == "daemon":
                raise
            return None
        return c

    def start(self) -> "MemoryMeter":
        if self._thread is not None:
            raise RuntimeError("the meter is already running")
        self._client = None if self.want == "local" else self._open_daemon()
        self.source = "daemon" if self._client is not None else "local"
        self._out = open(self.path, "w", encoding="utf-8")
        header: Dict[str, Any] = {"trace": "stageload", "version": 1, "source": self.source,
                                  "pid": self.pid, "interval_ms": int(self.interval * 1000),
                                  "started_at_ms": _now_ms(), "os": platform.system().lower()}
        if self._client is not None:
            header["daemon_interval_ms"] = self._client.interval_ms
        self._write(header)
        self._stop.clear()
        _meters.add(self)
        target = self._run_daemon if self._client is not None else self._run_local
        self._thread = threading.Thread(target=target, name="stageload-meter", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        _meters.discard(self)
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._out is not None:
            self._out.close()
            self._out = None

    def __enter__(self) -> "MemoryMeter":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def _write(self, obj: Dict[str, Any]) -> None:
        with self._lock:
            if self._out is None:
                return
            self._out.write(json.dumps(obj, separators=(",", ":")) + "\n")
            self._out.flush()

    def _note_peak(self, fp: Optional[int]) -> None:
        if fp is None:
            return
        with self._lock:
            if self._peak is None or fp > self._peak:
                self._peak = fp

    def _line(self, ts_ms: int, fp: Optional[int], swap: Optional[int], used: Any,
              free: Any, pressure: Any) -> None:
        with self._lock:
            peak, self._peak = self._peak, None
        if fp is not None and (peak is None or fp > peak):
            peak = fp
        self._write({"ts_ms": ts_ms, "footprint_bytes": fp, "footprint_peak_bytes": peak,
                     "swap_used_bytes": used, "free_pct": free, "pressure": pressure,
                     "stage": self._stage, "swap_bytes": swap})
        self.lines += 1

    def _run_local(self) -> None:
        try:
            sampler = local_sampler()
            step = self.interval
            nxt = time.monotonic()
            while not self._stop.is_set():
                now = time.monotonic()
                if now >= nxt:
                    s = sampler.system()
                    fp, swap, _ = sampler.tree(self.pid)
                    self._line(_now_ms(), fp, swap, s["swap_used_bytes"], s["free_pct"],
                               s["pressure"])
                    nxt += step
                elif _loads:
                    # between lines while a model loads: only the peak
                    self._note_peak(sampler.tree(self.pid)[0])
                wait = nxt - time.monotonic()
                if _loads:
                    wait = min(wait, FAST_INTERVAL)
                self._stop.wait(max(0.0, wait))
        except BaseException as e:  # the trace ends; stop() still works
            self.error = e

    def _run_daemon(self) -> None:
        c = self._client
        assert c is not None
        interval_ms = int(self.interval * 1000)
        half = c.interval_ms // 2
        last = -1
        try:
            while not self._stop.is_set():
                n = c.next_notification(0.1)
                if n is None:
                    continue
                if n.get("method") == "process_gone":
                    break
                if n.get("method") != "sample":
                    continue
                p = n.get("params") or {}
                ts = int(p.get("sampled_at_ms", 0))
                # coarser than the daemon: every Nth (stageloadctl meter's rule)
                if last >= 0 and interval_ms > c.interval_ms and ts - last < interval_ms - half:
                    continue
                last = ts
                self._line(ts, p.get("footprint_bytes"), p.get("swap_bytes"),
                           p.get("swap_used_bytes"), p.get("free_pct"), p.get("pressure"))
        except BaseException as e:
            self.error = e
