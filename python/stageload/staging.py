"""Staging big models inside one process: load each model when its stage
first uses it and give its memory back when the stage that needs it is
over.

    models = stageload.StagedModels(
        {"text_encoder": load_text_encoder, "transformer": load_transformer},
        {"encode": ["text_encoder"], "denoise": ["transformer"], "decode": []})
    models.enter("encode")           # loads nothing yet
    models["text_encoder"](ids)      # loads the text encoder
    models.enter("denoise")          # releases it; the transformer loads when used

release(module) moves a module's parameters and buffers to the meta
device and returns the memory to the system; attach() begins the stages
where a pipeline's own methods get there and ends them when its call
returns or raises; on_call() hooks one method of one object; stand_in()
answers a model's config and placement without loading it. torch is
imported by release() only: importing this module (and stageload) never
imports torch. docs/python.md, "Staging models", is the manual.
"""

from __future__ import annotations

import copyreg
import ctypes
import functools
import gc
import json
import os
import sys
import threading
import time
import warnings
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple, Union

_UNSET = object()


class UnknownName(KeyError):
    """A stage or a model name that the StagedModels was not given."""

    def __str__(self) -> str:  # KeyError would print the message quoted
        return str(self.args[0]) if self.args else ""


class NotLoaded(LookupError):
    """models[name] for a model the current stage does not list, or after
    close()."""


class Released(RuntimeError):
    """A released module called again: its weights are gone (meta)."""


class ReleaseWarning(UserWarning):
    """A release gave back less than half of what the model held: something
    else (a tensor, an autograd graph) still holds its memory."""


# ---- release ----

_libc: Any = None


def _trim_heap() -> Optional[str]:
    """Give the C heap's free pages back to the system where the allocator
    keeps them; answers the call made (None when there is none)."""
    global _libc
    if _libc is None:
        try:
            _libc = ctypes.CDLL(None)
        except OSError:
            _libc = False
    if not _libc:
        return None
    fn = getattr(_libc, "malloc_trim", None)  # glibc
    if fn is not None:
        fn.argtypes = [ctypes.c_size_t]
        fn.restype = ctypes.c_int
        fn(0)
        return "malloc_trim"
    # macOS libmalloc: every zone (NULL), as much as it can (goal 0). Not
    # run by the project's tests, which run on Linux.
    fn = getattr(_libc, "malloc_zone_pressure_relief", None)
    if fn is not None:
        fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        fn.restype = ctypes.c_size_t
        fn(None, 0)
        return "malloc_zone_pressure_relief"
    return None


def _empty_accelerator_caches(torch: Any) -> List[str]:
    """Empty the caching allocators of the accelerators in use."""
    done = []
    # torch 2.x has torch.mps (empty_cache, synchronize); torch 1.13 has
    # only torch.backends.mps and no way to empty the MPS cache. Neither
    # MPS path runs on the project's test machines (Linux).
    mps = getattr(torch, "mps", None)
    backend = getattr(torch.backends, "mps", None)
    if mps is not None and hasattr(mps, "empty_cache") and backend is not None \
            and backend.is_available():
        if hasattr(mps, "synchronize"):
            mps.synchronize()
        mps.empty_cache()
        done.append("mps")
    cuda = torch.cuda
    # is_initialized: a process that never used CUDA does not start it here
    if cuda.is_available() and cuda.is_initialized():
        cuda.synchronize()
        cuda.empty_cache()
        done.append("cuda")
    return done


def _storage(t: Any) -> Tuple[Tuple[str, int], int]:
    """(key, bytes) of the storage under tensor t."""
    if hasattr(t, "untyped_storage"):  # torch >= 2.0 (not run here: Debian has 1.13)
        s = t.untyped_storage()
    else:  # torch 1.13: a TypedStorage, which has nbytes() and data_ptr()
        s = t.storage()
    return (str(t.device), int(s.data_ptr())), int(s.nbytes())


_RELEASED_ATTR = "_stageload_released"


def _refuse_released(module: Any, args: Any) -> None:
    # a forward pre-hook: without it the call fails deep in torch with
    # "Expected all tensors to be on the same device ... meta and cpu"
    raise Released(module.__dict__.get(_RELEASED_ATTR) or "this module was released")


def release(module: Any, *, note: Optional[str] = None) -> int:
    """Move every parameter and buffer of module (a torch.nn.Module) and its
    submodules to the meta device, so their memory goes back even while
    other code still holds the module (pipe.transformer); then collect
    garbage, give the C heap's free pages back (malloc_trim on glibc,
    malloc_zone_pressure_relief on macOS) and empty the accelerator's
    cache (MPS on torch 2.x, CUDA). Returns the bytes of the storages the
    module gave up (each counted once; gradients too). A tensor of the
    module that other code holds directly keeps its memory until that
    reference goes. The module keeps its structure and shapes; to use it
    again, load it again: calling it raises Released, whose message is note
    (or says that release() took its weights)."""
    import torch  # here, not at import: stageload never imports torch by itself

    if not hasattr(module, "modules"):
        raise TypeError("release() takes a torch.nn.Module, not %s" % type(module).__name__)
    seen: Dict[Tuple[str, int], int] = {}
    memo: Dict[int, Any] = {}  # tied weights stay tied, as meta tensors

    def account(t: Any) -> None:
        try:
            key, n = _storage(t)
        except (RuntimeError, NotImplementedError):  # sparse and other storage-less kinds
            n = t.numel() * t.element_size()
            key = (str(t.device), id(t))
        if n:
            seen[key] = n

    def to_meta_param(p: Any) -> Any:
        new = memo.get(id(p))
        if new is None:
            account(p)
            if p.grad is not None and not p.grad.is_meta:
                account(p.grad)
            new = torch.nn.Parameter(p.detach().to("meta"), requires_grad=p.requires_grad)
            memo[id(p)] = new
        return new

    def to_meta_buffer(b: Any) -> Any:
        new = memo.get(id(b))
        if new is None:
            account(b)
            new = b.detach().to("meta")
            memo[id(b)] = new
        return new

    # Each submodule's own tables, not module.to("meta"): a model class may
    # override to() (checks for quantized weights, device bookkeeping), and
    # this must work for every module.
    for sub in module.modules():
        params = sub._parameters
        for name, p in list(params.items()):
            if p is not None and not p.is_meta:
                params[name] = to_meta_param(p)
        buffers = sub._buffers
        for name, b in list(buffers.items()):
            if b is not None and not b.is_meta:
                buffers[name] = to_meta_buffer(b)
    memo.clear()
    if note is not None or _RELEASED_ATTR not in module.__dict__:
        object.__setattr__(module, _RELEASED_ATTR, note or (
            "%s was released by stageload.release(): its weights are gone (meta "
            "tensors); load the model again to use it" % type(module).__name__))
        if not getattr(module, "_stageload_refuses", False) and \
                hasattr(module, "register_forward_pre_hook"):
            module.register_forward_pre_hook(_refuse_released)
            object.__setattr__(module, "_stageload_refuses", True)
    gc.collect()
    _trim_heap()
    _empty_accelerator_caches(torch)
    return sum(seen.values())


# ---- StagedModels ----

MiB = 1 << 20
_WARN_BYTES = 64 * MiB  # below this a release is too small to judge
_PROBE_PRESSURE_OK = ("normal", "unknown")


def _footprint() -> Optional[int]:
    from .meter import process_footprint
    return process_footprint()


def _model_bytes(m: Any) -> int:
    """The bytes of a torch module's parameters and buffers (each storage
    once); 0 for anything else."""
    if not (hasattr(m, "parameters") and hasattr(m, "buffers") and hasattr(m, "_parameters")):
        return 0
    seen: Dict[Tuple[str, int], int] = {}
    for t in list(m.parameters()) + list(m.buffers()):
        if getattr(t, "is_meta", False):
            continue
        try:
            key, n = _storage(t)
        except (RuntimeError, NotImplementedError, AttributeError):
            continue
        seen[key] = n
    return sum(seen.values())


_PRESSURE_ORDER = {"unknown": 0, "normal": 0, "warn": 1, "critical": 2}


class _Watch:
    """Samples this process's footprint in a thread every interval seconds
    and keeps the highest; with meters=True each sample also goes to the
    running MemoryMeters (a load's peak shows in their lines) and they
    sample faster meanwhile; with probe (the system's memory), the worst
    pressure it saw, every PRESSURE_EVERY samples."""

    PRESSURE_EVERY = 10

    def __init__(self, interval: float, meters: bool = False,
                 probe: Optional[Callable[[], Mapping[str, Any]]] = None) -> None:
        self.interval = interval
        self.meters = meters
        self.probe = probe
        self.peak = _footprint() or 0
        self.pressure = "normal"
        self._ticks = 0
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def _sample_pressure(self) -> None:
        if self.probe is None:
            return
        try:
            p = str(self.probe().get("pressure", "unknown"))
        except Exception:  # a probe that fails says nothing of pressure
            return
        if _PRESSURE_ORDER.get(p, 0) > _PRESSURE_ORDER.get(self.pressure, 0):
            self.pressure = p

    def sample(self) -> None:
        fp = _footprint()
        if fp is not None:
            if fp > self.peak:
                self.peak = fp
            if self.meters:
                from .meter import note_footprint
                note_footprint(fp)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()
            self._ticks += 1
            if self._ticks % self.PRESSURE_EVERY == 0:
                self._sample_pressure()

    def start(self) -> "_Watch":
        if self.meters:
            from .meter import loading
            loading(True)
        self._thread = threading.Thread(target=self._run, name="stageload-watch", daemon=True)
        self._thread.start()
        return self

    def take(self) -> Tuple[int, str]:
        """The peak and the worst pressure so far; the next count from now."""
        self.sample()
        peak, self.peak = self.peak, _footprint() or 0
        pressure, self.pressure = self.pressure, "normal"
        return peak, pressure

    def stop(self) -> int:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
            if self.meters:
                from .meter import loading
                loading(False)
        self.sample()
        return self.peak


def _parse_placement(args: Tuple[Any, ...], kwargs: Mapping[str, Any]) -> Dict[str, Any]:
    """device and dtype from the arguments of a torch .to() call."""
    torch = sys.modules.get("torch")  # a dtype or a tensor exists only once torch is imported
    out: Dict[str, Any] = {}
    for a in args:
        if torch is not None and isinstance(a, torch.dtype):
            out["dtype"] = a
        elif torch is not None and isinstance(a, torch.Tensor):
            out["device"], out["dtype"] = a.device, a.dtype
        elif a is not None:
            out["device"] = torch.device(a) if torch is not None else a
    for k in ("device", "dtype"):
        if kwargs.get(k) is not None:
            v = kwargs[k]
            out[k] = torch.device(v) if k == "device" and torch is not None else v
    return out


class StagedModels:
    """Models loaded per stage. loaders maps a model name to a callable that
    returns the loaded model; stages maps a stage name to the model names
    it needs. enter(stage) releases the loaded models the stage does not
    list (unless keep="auto" keeps them), loads nothing (a listed model
    loads when first used; preload=True loads them now), and reports the
    stage to the daemon (inside a guard or a job) and to every running
    MemoryMeter. docs/python.md has the rules."""

    def __init__(self, loaders: Mapping[str, Callable[[], Any]],
                 stages: Mapping[str, Iterable[str]], *, report: bool = True,
                 socket: Optional[str] = None, keep: str = "never",
                 margin: Union[int, str, None] = None,
                 memory: Optional[Callable[[], Mapping[str, Any]]] = None) -> None:
        self.loaders: Dict[str, Callable[[], Any]] = dict(loaders)
        for name, fn in self.loaders.items():
            if not callable(fn):
                raise TypeError("the loader of %r is not callable" % name)
        self.stages: Dict[str, Tuple[str, ...]] = {}
        for stage, names in stages.items():
            if isinstance(names, str):
                raise TypeError("stage %r: list its model names (a str is not a list)" % stage)
            names = tuple(names)
            for n in names:
                if n not in self.loaders:
                    raise UnknownName("stage %r needs model %r, which has no loader (models: %s)"
                                      % (stage, n, ", ".join(sorted(self.loaders)) or "none"))
            self.stages[stage] = names
        if keep not in ("never", "auto"):
            raise ValueError("keep is 'never' or 'auto', not %r" % (keep,))
        from .units import parse_size
        self.keep = keep
        self.margin: Optional[int] = None if margin is None else parse_size(margin)
        self.report = report
        self.socket = socket
        self.stage: Optional[str] = None
        self.history: List[Dict[str, Any]] = []
        self.load_counts: Dict[str, int] = {n: 0 for n in self.loaders}
        self._memory = memory
        self._live: Dict[str, Any] = {}
        self._sizes: Dict[str, int] = {}
        self._placement: Dict[str, Dict[str, Any]] = {}
        self._closed = False
        # keep="auto": the memory as the current stage began, a watch of
        # this process's footprint, each stage's own peak (without the
        # models kept loaded that it does not list), the job's numbers
        self._stage_start: Optional[Mapping[str, Any]] = None
        self._stage_pressure = "normal"  # the worst the watch saw in the stage that ended
        self._watch: Optional[_Watch] = None
        self._own_peaks: Dict[str, int] = {}
        self._job: Any = None
        self._lock = threading.RLock()

    @property
    def loaded(self) -> Tuple[str, ...]:
        """The names of the models loaded now, in the order they were loaded."""
        return tuple(self._live)

    def _known(self, name: str) -> None:
        if name not in self.loaders:
            raise UnknownName("no model %r (models: %s)"
                              % (name, ", ".join(sorted(self.loaders)) or "none"))

    def _check_stage(self, stage: str) -> None:
        if stage not in self.stages:
            raise UnknownName("no stage %r (stages: %s)"
                              % (stage, ", ".join(self.stages) or "none"))

    def _place(self, name: str, placement: Mapping[str, Any]) -> None:
        """Where the model goes when it loads (a stand-in's .to())."""
        self._placement.setdefault(name, {}).update(placement)

    # ---- stages ----

    def enter(self, stage: str, preload: bool = False) -> None:
        """Begin stage: release the loaded models it does not list (keep="auto":
        unless the residency rule keeps them); with preload, load those it
        lists now, else each when first used."""
        self._check_stage(stage)
        with self._lock:
            self._closed = False
            t0 = time.monotonic()
            entry: Dict[str, Any] = {"event": "enter", "stage": stage, "released": [],
                                     "released_bytes": 0, "kept": [], "loaded": []}
            if stage != self.stage:
                prev = self.stage
                self._end_stage()
                self.stage = stage
                if self.report:
                    from .guard import stage as report_stage
                    report_stage(stage, self.socket)
                self._settle(stage, entry, prev, end_of_call=False)
                self._begin_stage()
            if preload:
                for name in self.stages[stage]:
                    if name not in self._live:
                        self.load(name)
                        entry["loaded"].append(name)
            entry["seconds"] = time.monotonic() - t0
            self.history.append(entry)

    def end_call(self, first_stage: str) -> None:
        """The pipeline's call is over (attach calls this when it returns or
        raises): keep="never" releases every model; keep="auto" keeps those
        first_stage lists and, by the residency rule, the others."""
        self._check_stage(first_stage)
        with self._lock:
            entry: Dict[str, Any] = {"event": "end_call", "stage": self.stage,
                                     "next": first_stage, "released": [],
                                     "released_bytes": 0, "kept": []}
            prev = self.stage
            self._end_stage()
            self._settle(first_stage, entry, prev, end_of_call=True)
            self.stage = None
            if self._watch is not None:
                self._watch.stop()
                self._watch = None
            self.history.append(entry)

    def _begin_stage(self) -> None:
        if self.keep != "auto":
            return
        self._stage_start = self._probe()
        self._stage_pressure = "normal"
        if self._watch is None:
            self._watch = _Watch(0.05, probe=self._probe).start()
        else:
            self._watch.take()

    def _end_stage(self) -> None:
        """Learn the ending stage's own peak (keep="auto")."""
        if self.keep != "auto" or self.stage is None or self._watch is None:
            return
        peak, self._stage_pressure = self._watch.take()
        unlisted = sum(self._sizes.get(n, 0) for n in self._live
                       if n not in self.stages[self.stage])
        own = max(0, peak - unlisted)
        self._own_peaks[self.stage] = max(self._own_peaks.get(self.stage, 0), own)

    def _probe(self) -> Mapping[str, Any]:
        if self._memory is not None:
            return self._memory()
        from .meter import system_memory
        return system_memory()

    def _settle(self, nxt: str, entry: Dict[str, Any], prev: Optional[str],
                end_of_call: bool) -> None:
        """Release or keep the loaded models as stage nxt comes."""
        listed = self.stages[nxt]
        if end_of_call and self.keep == "never":
            candidates = list(self._live)
        else:
            candidates = [n for n in self._live if n not in listed]
        if not candidates:
            return
        keep = self._residency(nxt, candidates, prev) if self.keep == "auto" else set()
        for name in candidates:
            if name in keep:
                entry["kept"].append(name)
                continue
            where = ("when the pipeline's call ended (stage %r)" % prev if end_of_call else
                     "when stage %r began" % nxt)
            entry["released_bytes"] += self._release(name, where, nxt)
            entry["released"].append(name)

    def _job_numbers(self) -> Optional[Mapping[str, Any]]:
        """The job this process runs in, as the daemon shows it (learned
        per-stage peaks, wait_free): asked once per job."""
        job = os.environ.get("STAGELOAD_JOB_ID")
        if not job:
            return None
        if self._job is not None and self._job[0] == job:
            return self._job[1]
        info = None
        try:
            from .client import Client
            with Client(self.socket, timeout=5.0) as c:
                info = c.show(int(job))
        except Exception:  # no daemon, no such job: the other sources serve
            info = None
        self._job = (job, info)
        return info

    def _next_peak(self, nxt: str, fp: int) -> Tuple[int, str]:
        """The next stage's footprint peak without models it does not list,
        and where the number came from."""
        job = self._job_numbers()
        learned = (job or {}).get("learned") or {}
        for st in learned.get("stages") or []:
            if st.get("name") == nxt and st.get("footprint_peak_bytes"):
                return int(st["footprint_peak_bytes"]), "daemon"
        if nxt in self._own_peaks:
            return self._own_peaks[nxt], "history"
        base = fp - sum(self._sizes.get(n, 0) for n in self._live)
        return base + sum(self._sizes.get(n, 0) for n in self.stages[nxt]), "sizes"

    def _floor(self, total: int) -> Tuple[int, str]:
        if self.margin is not None:
            return self.margin, "margin"
        job = self._job_numbers()
        if job and job.get("wait_free_pct") is not None:
            return max(int(total * float(job["wait_free_pct"]) / 100),
                       int(job.get("wait_free_bytes") or 0)), "wait_free"
        return total // 10, "10%"

    def _residency(self, nxt: str, candidates: List[str], prev: Optional[str]) -> set:
        """keep="auto": which candidates stay loaded. One at a time in the
        order they were loaded, each kept only if, with it and those kept
        before it, available - need >= floor, where need = max(0, the next
        stage's peak + the kept models' sizes - the footprint now), and
        during the stage that ends swap did not grow and pressure stayed
        normal. Each decision goes into history with its numbers."""
        mem = self._probe()
        fp = _footprint() or 0
        total = int(mem.get("total_bytes") or 0)
        avail = int(mem.get("available_bytes") or 0)
        floor, floor_src = self._floor(total)
        peak, peak_src = self._next_peak(nxt, fp)
        start = self._stage_start or {}
        swap_grew = (start.get("swap_used_bytes") is not None and
                     int(mem.get("swap_used_bytes") or 0) > int(start["swap_used_bytes"]))
        # the worst of the stage's start, its watch (every 0.5 s) and now
        pressure = max([str(mem.get("pressure", "unknown")), str(start.get("pressure", "unknown")),
                        self._stage_pressure], key=lambda p: _PRESSURE_ORDER.get(p, 0))
        calm = pressure in _PROBE_PRESSURE_OK
        kept: set = set()
        kept_bytes = 0
        for name in candidates:
            size = self._sizes.get(name, 0)
            need = max(0, peak + kept_bytes + size - fp)
            ok = (not swap_grew) and calm and avail - need >= floor
            why = ("swap grew during %s" % prev if swap_grew else
                   "pressure %s" % pressure if not calm else
                   "available - need >= floor" if ok else "available - need < floor")
            self.history.append({
                "event": "keep" if ok else "release_decision", "name": name, "stage": prev,
                "next": nxt, "bytes": size, "footprint": fp, "available": avail,
                "total": total, "need": need, "next_peak": peak, "next_peak_source": peak_src,
                "floor": floor, "floor_source": floor_src, "swap_grew": swap_grew,
                "pressure": pressure, "reason": why})
            if ok:
                kept.add(name)
                kept_bytes += size
        return kept

    # ---- models ----

    def load(self, name: str) -> Any:
        """The model, loaded now if it is not (whatever the stage): then
        garbage is collected and the heap trimmed, so the stage holds the
        model and not its loader's garbage."""
        self._known(name)
        with self._lock:
            if self._closed:
                raise NotLoaded(self._closed_message(name))
            m = self._live.get(name)
            if m is not None:
                return m
            t0 = time.monotonic()
            before = _footprint()
            watch = _Watch(0.01, meters=True).start()
            try:
                m = self.loaders[name]()
                if m is None:
                    raise ValueError("the loader of %r returned None" % name)
                place = self._placement.get(name)
                if place and hasattr(m, "to") and callable(m.to):
                    moved = m.to(**place)
                    if moved is not None:
                        m = moved
                # a loader's garbage (from_pretrained leaves reference
                # cycles) would otherwise stay until a full collection
                gc.collect()
                _trim_heap()
            finally:
                peak = watch.stop()
            self._live[name] = m
            self.load_counts[name] += 1
            size = _model_bytes(m)
            self._sizes[name] = size
            after = _footprint()
            if self._watch is not None:
                self._watch.peak = max(self._watch.peak, peak)
            self.history.append({"event": "load", "name": name, "stage": self.stage,
                                 "seconds": time.monotonic() - t0, "bytes": size,
                                 "peak": peak, "footprint_before": before,
                                 "footprint_after": after})
            return m

    def _release(self, name: str, where: str, next_stage: Optional[str] = None) -> int:
        m = self._live.pop(name, None)
        if m is None:
            return 0
        note = ("model %r was released by stageload's release() (StagedModels, %s): its "
                "weights are gone. Get it back with models.load(%r), models[%r] in a stage "
                "that lists it, or through its stand-in; do not keep the module itself"
                % (name, where, name, name))
        before = _footprint()
        if hasattr(m, "modules") and hasattr(m, "_parameters"):
            n = release(m, note=note)
        else:
            del m
            gc.collect()
            n = 0
        after = _footprint()
        returned = (before - after) if before is not None and after is not None else None
        entry: Dict[str, Any] = {"event": "release", "name": name, "stage": self.stage,
                                 "next": next_stage, "bytes": n, "footprint_before": before,
                                 "footprint_after": after, "returned_bytes": returned}
        if returned is not None and n >= _WARN_BYTES and returned < n // 2:
            msg = ("releasing %r freed %d MiB of weights but the process gave back only %d "
                   "MiB: a tensor or an autograd graph still holds them (an output kept "
                   "while autograd was on holds the weights it was computed from: run the "
                   "pipeline under torch.inference_mode() or torch.no_grad())"
                   % (name, n // MiB, max(0, returned) // MiB))
            entry["warning"] = msg
            warnings.warn(msg, ReleaseWarning, stacklevel=4)
        self.history.append(entry)
        return n

    def release(self, name: str) -> int:
        """Release one model now (stageload.release for a torch module);
        the bytes of the storages it gave up. 0 when it is not loaded."""
        self._known(name)
        with self._lock:
            return self._release(name, "by models.release(%r) in stage %r" % (name, self.stage))

    def _closed_message(self, name: str) -> str:
        return ("model %r: these models were closed (models.close() released them all); "
                "models.enter(stage) opens them again" % name)

    def __getitem__(self, name: str) -> Any:
        """The model, loaded now if the current stage lists it."""
        self._known(name)
        if self._closed:
            raise NotLoaded(self._closed_message(name))
        if self.stage is not None and name in self.stages[self.stage]:
            return self.load(name)
        users = [s for s, names in self.stages.items() if name in names]
        raise NotLoaded("model %r is not available: %s; stages that load it: %s "
                        "(models.load(%r) loads it anyway)"
                        % (name, "no stage entered yet" if self.stage is None else
                           "stage %r does not list it" % self.stage,
                           ", ".join(users) or "none", name))

    def close(self) -> None:
        """Release every loaded model; models[name] then says closed until
        the next enter()."""
        with self._lock:
            self._end_stage()
            for name in list(self._live):
                self._release(name, "by models.close() in stage %r" % self.stage)
            self.stage = None
            self._closed = True
            if self._watch is not None:
                self._watch.stop()
                self._watch = None

    def attach(self, pipe: Any, methods: Mapping[str, str]) -> "Attachment":
        """Begin stage methods[m] whenever pipe.m is called, and end the call
        (end_call with the first stage of methods) when pipe(...) returns or
        raises. Returns an Attachment whose remove() undoes it."""
        return Attachment(self, pipe, methods)

    def __enter__(self) -> "StagedModels":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return "<StagedModels stage=%r loaded=%s keep=%s>" % (self.stage, list(self._live),
                                                              self.keep)


# ---- on_call ----

_HOOKS_ATTR = "__stageload_hooks__"


class CallHook:
    """What on_call answers: remove() takes this hook off (idempotent); when
    it was the last one on the method, the original is put back."""

    def __init__(self, obj: Any, method: str, dispatcher: Any, before: Any,
                 after: Any) -> None:
        self.obj = obj
        self.method = method
        self.before = before
        self.after = after
        self._dispatcher = dispatcher

    def remove(self) -> None:
        d = self._dispatcher
        if d is None:
            return
        self._dispatcher = None
        hooks = getattr(d, _HOOKS_ATTR)
        if self in hooks:
            hooks.remove(self)
        if hooks:
            return
        # The last hook: restore what the instance had, unless someone has
        # replaced the method since (then the empty dispatcher stays, and
        # only passes calls through).
        if self.obj.__dict__.get(self.method) is not d:
            return
        had, old = d.__stageload_restore__
        if had:
            setattr(self.obj, self.method, old)
        else:
            delattr(self.obj, self.method)


def on_call(obj: Any, method: str, before: Optional[Callable[..., Any]] = None,
            after: Optional[Callable[[Any], Any]] = None) -> CallHook:
    """Wrap obj.method on this instance only (not its class): before(*args,
    **kwargs) runs with the call's arguments before it, after(result) with
    its result after it (not when it raises; what after returns is
    ignored). Several hooks on one method compose: befores run in the
    order they were added, afters in the reverse order. Returns a CallHook
    whose remove() undoes this one."""
    if before is None and after is None:
        raise ValueError("on_call needs before, after or both")
    current = getattr(obj, method)  # AttributeError for a name obj lacks
    if not callable(current):
        raise TypeError("%s.%s is not callable" % (type(obj).__name__, method))
    d = getattr(obj, "__dict__", None)
    if d is None:
        raise TypeError("on_call needs an instance with a __dict__ (%s has none)"
                        % type(obj).__name__)
    dispatcher = d.get(method)
    if dispatcher is None or not hasattr(dispatcher, _HOOKS_ATTR):
        original = current
        hooks: List[CallHook] = []

        def dispatcher(*args: Any, **kwargs: Any) -> Any:
            chain = list(hooks)
            for h in chain:
                if h.before is not None:
                    h.before(*args, **kwargs)
            result = original(*args, **kwargs)
            for h in reversed(chain):
                if h.after is not None:
                    h.after(result)
            return result

        try:
            functools.update_wrapper(dispatcher, original)
        except (AttributeError, TypeError):
            pass
        setattr(dispatcher, _HOOKS_ATTR, hooks)
        dispatcher.__stageload_restore__ = (method in d, d.get(method))  # type: ignore
        setattr(obj, method, dispatcher)
    h = CallHook(obj, method, dispatcher, before, after)
    getattr(dispatcher, _HOOKS_ATTR).append(h)
    return h


# ---- stand-ins ----

class Config(dict):
    """A model's config as read from its config.json: items and attributes
    (cfg["in_channels"], cfg.in_channels), read-only."""

    def __getattr__(self, key: str) -> Any:
        try:
            return self[key]
        except KeyError:
            raise AttributeError("the config has no %r" % key) from None

    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError("a stand-in's config is read-only")


def _read_config(config: Any) -> Config:
    if isinstance(config, Mapping):
        return Config(config)
    if isinstance(config, (str, os.PathLike)):
        path = os.fspath(config)
        if os.path.isdir(path):
            path = os.path.join(path, "config.json")
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        if not isinstance(data, dict):
            raise ValueError("%s: not a JSON object" % path)
        return Config(data)
    raise TypeError("config is a dict or the path of a config.json, not %s"
                    % type(config).__name__)


# Names frameworks probe on components with hasattr()/getattr(..., None)
# (diffusers' pipe.to() asks every component for the bitsandbytes flags;
# accelerate's hooks live in _hf_hook): a stand-in whose model is not loaded
# answers AttributeError for them instead of loading the model.
PROBES = ("is_loaded_in_4bit", "is_loaded_in_8bit", "quantization_method", "hf_device_map",
          "_hf_hook")


class StandIn:
    """Takes a model's place in a pipeline until the model is used: config,
    dtype, device, .to() and probes (PROBES; with cls, any name cls does
    not define) are answered without loading; anything else loads the
    model through its StagedModels (models.load) and goes to it. See
    stand_in()."""

    def __init__(self, models: StagedModels, name: str, config: Any,
                 dtype: Any = _UNSET, device: Any = _UNSET, cls: Optional[type] = None) -> None:
        models._known(name)
        object.__setattr__(self, "_stand_in_models", models)
        object.__setattr__(self, "_stand_in_name", name)
        object.__setattr__(self, "_stand_in_config", _read_config(config))
        object.__setattr__(self, "_stand_in_cls", cls)
        place: Dict[str, Any] = {}
        if dtype is not _UNSET:
            place["dtype"] = dtype
        if device is not _UNSET:
            place["device"] = device
        if place:
            models._place(name, place)

    def _stand_in_model(self) -> Any:
        return self._stand_in_models.load(self._stand_in_name)

    def _stand_in_live(self) -> Any:
        return self._stand_in_models._live.get(self._stand_in_name)

    def _stand_in_placed(self, key: str) -> Any:
        return self._stand_in_models._placement.get(self._stand_in_name, {}).get(key, _UNSET)

    @property
    def config(self) -> Config:
        return self._stand_in_config

    @property
    def dtype(self) -> Any:
        v = self._stand_in_placed("dtype")
        return self._stand_in_model().dtype if v is _UNSET else v

    @property
    def device(self) -> Any:
        v = self._stand_in_placed("device")
        return self._stand_in_model().device if v is _UNSET else v

    def to(self, *args: Any, **kwargs: Any) -> "StandIn":
        """Record the device and dtype (applied when the model loads; now,
        too, if it is loaded); returns the stand-in, as Module.to returns
        the module."""
        self._stand_in_models._place(self._stand_in_name, _parse_placement(args, kwargs))
        live = self._stand_in_live()
        if live is not None:
            live.to(*args, **kwargs)
        return self

    def __getattr__(self, attr: str) -> Any:
        # Only for names not found on the stand-in itself. Special names
        # (copy and pickle ask for __deepcopy__, __getstate__) never load;
        # nor, while the model is not loaded, do private names, the probes
        # and (with cls) names the class does not define: frameworks probe
        # components with hasattr(), which must not load a model (or load
        # a released one again).
        if attr.startswith("__") or attr.startswith("_stand_in"):
            raise AttributeError(attr)
        live = self._stand_in_live()
        if live is None:
            cls = self._stand_in_cls
            if attr.startswith("_") or attr in PROBES or (cls is not None and
                                                          not hasattr(cls, attr)):
                raise AttributeError("%s (stand-in for %r, not loaded)"
                                     % (attr, self._stand_in_name))
            live = self._stand_in_model()
        return getattr(live, attr)

    def __setattr__(self, attr: str, value: Any) -> None:
        setattr(self._stand_in_model(), attr, value)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._stand_in_model()(*args, **kwargs)

    def __repr__(self) -> str:
        return "<stand-in for %r (%s)>" % (self._stand_in_name, "loaded"
                                           if self._stand_in_live() is not None
                                           else "not loaded")


def stand_in(models: StagedModels, name: str, config: Any, dtype: Any = _UNSET,
             device: Any = _UNSET, cls: Optional[type] = None) -> StandIn:
    """An object to put where a pipeline keeps model name: .config (and
    attribute reads on it) comes from config (a dict, or the path of the
    checkpoint's config.json or of its directory); dtype and device, given
    here or by .to() on the stand-in, are answered without loading and
    applied to the model when it loads; probes (PROBES, private names,
    and with cls any name the class does not define) raise AttributeError
    while it is not loaded; any other use (a call, another attribute)
    loads the model through models and forwards to it."""
    return StandIn(models, name, config, dtype, device, cls)


# ---- attach ----

_ATTACHMENT_ATTR = "__stageload_attachment__"


def _attached_call(self: Any, *args: Any, **kwargs: Any) -> Any:
    att = type(self).__dict__[_ATTACHMENT_ATTR]
    att._depth += 1
    try:
        return att._base.__call__(self, *args, **kwargs)
    finally:
        att._depth -= 1
        if att._depth == 0 and att._models is not None:
            att._models.end_call(att.first_stage)


def _attached_reduce_ex(self: Any, protocol: int) -> Any:
    # Pickled (and copied) as the pipeline's own class, without the hooks:
    # pickle names a class by __module__ and __qualname__, which find the
    # original class, not this one.
    att = type(self).__dict__[_ATTACHMENT_ATTR]
    with att._detached():
        rv = list(att._base.__reduce_ex__(self, protocol))
        if len(rv) > 2 and rv[2] is self.__dict__:
            rv[2] = dict(rv[2])
    if rv[0] is copyreg.__newobj__ and len(rv[1]) == 1:
        # pickle checks that __newobj__'s class is the object's class (this
        # subclass); copyreg's older constructor makes the same object
        # without that check and needs nothing of stageload to unpickle
        rv[1] = (rv[1][0], object, None)
        rv[0] = copyreg._reconstructor
    return tuple(rv)


class Attachment:
    """What StagedModels.attach answers. The pipeline gets its own subclass
    (same __name__, __qualname__ and __module__, so isinstance, names and
    pickling are unchanged) whose __call__ ends the call in the
    StagedModels when it returns or raises; each method hook begins its
    stage. remove() undoes both (idempotent)."""

    def __init__(self, models: StagedModels, pipe: Any, methods: Mapping[str, str]) -> None:
        if not methods:
            raise ValueError("attach needs at least one method -> stage")
        for method, stage in methods.items():
            models._check_stage(stage)
            if not callable(getattr(pipe, method)):  # AttributeError for a missing one
                raise TypeError("%s.%s is not callable" % (type(pipe).__name__, method))
        base = type(pipe)
        if _ATTACHMENT_ATTR in base.__dict__:
            raise ValueError("this pipeline is attached already: remove() that first")
        if not any("__call__" in c.__dict__ for c in base.__mro__ if c is not object):
            raise TypeError("%s objects are not callable" % base.__name__)
        self._models: Optional[StagedModels] = models
        self.pipe = pipe
        self.methods = dict(methods)
        self.first_stage = next(iter(self.methods.values()))
        self._base = base
        self._depth = 0
        self._hooks: List[CallHook] = []
        for method, stage in self.methods.items():
            self._hooks.append(on_call(pipe, method,
                                       before=lambda *a, _s=stage, **k: models.enter(_s)))
        self._cls = type(base.__name__, (base,), {
            "__module__": base.__module__, "__qualname__": base.__qualname__,
            "__doc__": base.__doc__, "__call__": _attached_call,
            "__reduce_ex__": _attached_reduce_ex, _ATTACHMENT_ATTR: self})
        object.__setattr__(pipe, "__class__", self._cls)

    def _detached(self) -> Any:
        att = self

        class _Ctx:
            def __enter__(self) -> None:
                att._saved = [(h.method, att.pipe.__dict__.get(h.method)) for h in att._hooks]
                for method, d in att._saved:
                    had, old = getattr(d, "__stageload_restore__", (True, d))
                    if had:
                        att.pipe.__dict__[method] = old
                    else:
                        att.pipe.__dict__.pop(method, None)
                object.__setattr__(att.pipe, "__class__", att._base)

            def __exit__(self, *exc: Any) -> None:
                object.__setattr__(att.pipe, "__class__", att._cls)
                for method, d in att._saved:
                    att.pipe.__dict__[method] = d

        return _Ctx()

    def remove(self) -> None:
        if self._models is None:
            return
        self._models = None
        for h in self._hooks:
            h.remove()
        self._hooks = []
        if type(self.pipe) is self._cls:
            object.__setattr__(self.pipe, "__class__", self._base)
