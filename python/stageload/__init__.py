"""stageload from inside a Python process: a client of stageloadd's
protocol, guard() for the current process, MemoryMeter traces and stage
reports; staging of big models (release, StagedModels and attach, on_call,
stand_in: torch is imported only when release() runs). Standard library only.
docs/python.md is the manual."""

from __future__ import annotations

from typing import Any

from .client import (Client, ConnectionLost, DaemonNotRunning, LimitReached, NoSuchJob,
                     NoSuchProcess, PermissionDenied, StageloadError, UntrustedSocket,
                     WrongState, check_peer, check_socket, parse_job_id, socket_path)
from .guard import JobNotRun, JobTerminated, SwapBudgetExceeded, guard, stage
from .units import format_size, parse_size

__version__ = "0.1.0"

__all__ = ["Attachment", "Client", "ConnectionLost", "DaemonNotRunning", "JobNotRun",
           "JobTerminated", "LimitReached", "MemoryMeter", "NoSuchJob", "NoSuchProcess",
           "NotLoaded", "PermissionDenied", "ReleaseWarning", "Released", "StageloadError",
           "StagedModels", "SwapBudgetExceeded", "UnknownName", "UntrustedSocket",
           "WrongState", "check_peer", "check_socket", "format_size", "guard", "on_call",
           "parse_job_id", "parse_size", "release", "socket_path", "stage", "stand_in",
           "trace"]

_STAGING = ("StagedModels", "StandIn", "CallHook", "Attachment", "NotLoaded", "Released",
            "ReleaseWarning", "UnknownName", "on_call", "release", "stand_in")


def __getattr__(name: str) -> Any:
    # MemoryMeter (ctypes) and trace are loaded when first used, so that
    # `import stageload` stays cheap.
    if name == "MemoryMeter":
        from .meter import MemoryMeter
        return MemoryMeter
    if name in _STAGING:
        from . import staging
        return getattr(staging, name)
    if name == "trace":
        import importlib
        return importlib.import_module(".trace", __name__)
    raise AttributeError("module 'stageload' has no attribute %r" % name)
