"""Staging big models inside one process: load each model when its stage
begins and give its memory back when the stage that needs it is over.

    models = stageload.StagedModels(
        {"text_encoder": load_text_encoder, "transformer": load_transformer},
        {"encode": ["text_encoder"], "denoise": ["transformer"], "decode": []})
    models.enter("encode")           # loads the text encoder
    models["text_encoder"](ids)
    models.enter("denoise")          # releases it, then loads the transformer

release(module) moves a module's parameters and buffers to the meta
device and returns the memory to the system; on_call() hooks one method of
one object (a pipeline's encode_prompt, say) so that a stage begins where
the pipeline's own code gets there; stand_in() answers a model's config
without loading it. torch is imported by release() only: importing this
module (and stageload) never imports torch. docs/python.md, "Staging
models", is the manual.
"""

from __future__ import annotations

import ctypes
import functools
import gc
import json
import os
import time
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple

_UNSET = object()


class UnknownName(KeyError):
    """A stage or a model name that the StagedModels was not given."""

    def __str__(self) -> str:  # KeyError would print the message quoted
        return str(self.args[0]) if self.args else ""


class NotLoaded(LookupError):
    """models[name] for a model that is not loaded now."""


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


def release(module: Any) -> int:
    """Move every parameter and buffer of module (a torch.nn.Module) and its
    submodules to the meta device, so their memory goes back even while
    other code still holds the module (pipe.transformer); then collect
    garbage, give the C heap's free pages back (malloc_trim on glibc,
    malloc_zone_pressure_relief on macOS) and empty the accelerator's
    cache (MPS on torch 2.x, CUDA). Returns the bytes of the storages the
    module gave up (each counted once; gradients too). A tensor of the
    module that other code holds directly keeps its memory until that
    reference goes. The module keeps its structure and shapes; to use it
    again, load it again."""
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
    gc.collect()
    _trim_heap()
    _empty_accelerator_caches(torch)
    return sum(seen.values())


# ---- StagedModels ----

class StagedModels:
    """Models loaded per stage. loaders maps a model name to a callable that
    returns the loaded model; stages maps a stage name to the model names
    it needs. enter(stage) releases the loaded models the stage does not
    list, then loads those it lists that are not loaded (a model that the
    next stage also lists stays), and reports the stage to the daemon
    (inside a guard or a job) and to every running MemoryMeter."""

    def __init__(self, loaders: Mapping[str, Callable[[], Any]],
                 stages: Mapping[str, Iterable[str]], *, report: bool = True,
                 socket: Optional[str] = None) -> None:
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
        self.report = report
        self.socket = socket
        self.stage: Optional[str] = None
        self.history: List[Dict[str, Any]] = []  # one entry per enter()
        self.load_counts: Dict[str, int] = {n: 0 for n in self.loaders}
        self._live: Dict[str, Any] = {}

    @property
    def loaded(self) -> Tuple[str, ...]:
        """The names of the models loaded now, in the order they were loaded."""
        return tuple(self._live)

    def _known(self, name: str) -> None:
        if name not in self.loaders:
            raise UnknownName("no model %r (models: %s)"
                              % (name, ", ".join(sorted(self.loaders)) or "none"))

    def enter(self, stage: str) -> None:
        """Begin stage: release what it does not list, load what it lists."""
        if stage not in self.stages:
            raise UnknownName("no stage %r (stages: %s)"
                              % (stage, ", ".join(self.stages) or "none"))
        needs = self.stages[stage]
        t0 = time.monotonic()
        entry: Dict[str, Any] = {"stage": stage, "released": [], "released_bytes": 0,
                                 "loaded": []}
        if stage != self.stage:
            self.stage = stage
            if self.report:
                from .guard import stage as report_stage
                report_stage(stage, self.socket)
            for name in [n for n in self._live if n not in needs]:
                entry["released_bytes"] += self.release(name)
                entry["released"].append(name)
        for name in needs:
            if name not in self._live:
                self.load(name)
                entry["loaded"].append(name)
        entry["seconds"] = time.monotonic() - t0
        self.history.append(entry)

    def load(self, name: str) -> Any:
        """The model, loaded now if it is not (whatever the stage)."""
        self._known(name)
        m = self._live.get(name)
        if m is None:
            m = self.loaders[name]()
            if m is None:
                raise ValueError("the loader of %r returned None" % name)
            self._live[name] = m
            self.load_counts[name] += 1
        return m

    def release(self, name: str) -> int:
        """Release one model now (stageload.release for a torch module);
        the bytes it gave up. 0 when it is not loaded."""
        self._known(name)
        m = self._live.pop(name, None)
        if m is None:
            return 0
        if hasattr(m, "modules") and hasattr(m, "_parameters"):
            return release(m)
        del m
        gc.collect()
        return 0

    def __getitem__(self, name: str) -> Any:
        self._known(name)
        m = self._live.get(name)
        if m is None:
            users = [s for s, names in self.stages.items() if name in names]
            raise NotLoaded("model %r is not loaded: %s; stages that load it: %s "
                            "(models.load(%r) loads it anyway)"
                            % (name, "no stage entered yet" if self.stage is None else
                               "stage %r does not list it" % self.stage,
                               ", ".join(users) or "none", name))
        return m

    def close(self) -> None:
        """Release every loaded model."""
        for name in list(self._live):
            self.release(name)
        self.stage = None

    def __enter__(self) -> "StagedModels":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return "<StagedModels stage=%r loaded=%s>" % (self.stage, list(self._live))


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


class StandIn:
    """Takes a model's place in a pipeline until the model is used: config,
    dtype and device are answered without loading; anything else loads the
    model through its StagedModels (models.load) and goes to it. See
    stand_in()."""

    def __init__(self, models: StagedModels, name: str, config: Any,
                 dtype: Any = _UNSET, device: Any = _UNSET) -> None:
        models._known(name)
        object.__setattr__(self, "_stand_in_models", models)
        object.__setattr__(self, "_stand_in_name", name)
        object.__setattr__(self, "_stand_in_config", _read_config(config))
        object.__setattr__(self, "_stand_in_dtype", dtype)
        object.__setattr__(self, "_stand_in_device", device)

    def _stand_in_model(self) -> Any:
        return self._stand_in_models.load(self._stand_in_name)

    def _stand_in_live(self) -> Any:
        return self._stand_in_models._live.get(self._stand_in_name)

    @property
    def config(self) -> Config:
        return self._stand_in_config

    @property
    def dtype(self) -> Any:
        if self._stand_in_dtype is _UNSET:
            return self._stand_in_model().dtype
        return self._stand_in_dtype

    @property
    def device(self) -> Any:
        if self._stand_in_device is _UNSET:
            return self._stand_in_model().device
        return self._stand_in_device

    def __getattr__(self, attr: str) -> Any:
        # Only for names not found on the stand-in itself. Special names
        # (copy and pickle ask for __deepcopy__, __getstate__) never load;
        # nor do private names while the model is not loaded: frameworks
        # probe components with hasattr(c, "_something") at the end of a
        # call, which must not load a released model again.
        if attr.startswith("__") or attr.startswith("_stand_in"):
            raise AttributeError(attr)
        if attr.startswith("_"):
            live = self._stand_in_live()
            if live is None:
                raise AttributeError("%s (stand-in for %r, not loaded)"
                                     % (attr, self._stand_in_name))
            return getattr(live, attr)
        return getattr(self._stand_in_model(), attr)

    def __setattr__(self, attr: str, value: Any) -> None:
        setattr(self._stand_in_model(), attr, value)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._stand_in_model()(*args, **kwargs)

    def __repr__(self) -> str:
        return "<stand-in for %r (%s)>" % (self._stand_in_name, "loaded"
                                           if self._stand_in_live() is not None
                                           else "not loaded")


def stand_in(models: StagedModels, name: str, config: Any, dtype: Any = _UNSET,
             device: Any = _UNSET) -> StandIn:
    """An object to put where a pipeline keeps model name: .config (and
    attribute reads on it) comes from config (a dict, or the path of the
    checkpoint's config.json or of its directory), dtype and device are
    those given here (what the loader will produce), all without loading;
    any other use (a call, another attribute) loads the model through
    models and forwards to it."""
    return StandIn(models, name, config, dtype, device)
