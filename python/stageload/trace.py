"""Reading a MemoryMeter trace back.

load(path) gives the header and the samples; summary(path) what each
stage cost: its peak footprint, its swap growth and how long it lasted (the
table of docs/python.md, "Traces").
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional


@dataclass
class Trace:
    header: Dict[str, Any]
    samples: List[Dict[str, Any]] = field(default_factory=list)


def load(path: str) -> Trace:
    """The trace at path. A header-less file (stageloadctl meter's) is read
    too, with an empty header; a last line cut short is skipped."""
    header: Dict[str, Any] = {}
    samples: List[Dict[str, Any]] = []
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f):
            line = line.strip()
            if not line:
                continue
            try:
                obj = json.loads(line)
            except ValueError:
                continue  # a trace cut while it was written
            if i == 0 and obj.get("trace") == "stageload":
                header = obj
            else:
                samples.append(obj)
    return Trace(header, samples)


@dataclass
class StageSummary:
    """One stretch of consecutive samples with the same stage."""
    stage: Optional[str]
    start_ms: int
    duration_ms: int
    footprint_peak_bytes: int
    swap_growth_bytes: int  # highest swap used in it minus swap used as it began
    samples: int


def summary(path_or_trace: Any) -> List[StageSummary]:
    """Per stage, in order: a stage that comes back later is a new row. A
    stage lasts from its first sample to the first sample of the next one
    (its own last sample for the last stage); its swap growth counts from
    the last sample before it (its first when the trace starts with it)."""
    t = path_or_trace if isinstance(path_or_trace, Trace) else load(path_or_trace)
    rows: List[StageSummary] = []
    prev_used: Optional[int] = None
    cur: Optional[StageSummary] = None
    base = 0
    peak_used = 0
    for s in t.samples:
        ts = int(s.get("ts_ms") or 0)
        # the highest sample since the line before (a load's peak), when
        # the trace has it
        fp = max(int(s.get("footprint_bytes") or 0), int(s.get("footprint_peak_bytes") or 0))
        used = int(s.get("swap_used_bytes") or 0)
        st = s.get("stage")
        if cur is None or st != cur.stage:
            if cur is not None:
                cur.duration_ms = ts - cur.start_ms
                cur.swap_growth_bytes = max(0, peak_used - base)
            base = prev_used if prev_used is not None else used
            peak_used = used
            cur = StageSummary(st, ts, 0, fp, 0, 0)
            rows.append(cur)
        cur.samples += 1
        cur.footprint_peak_bytes = max(cur.footprint_peak_bytes, fp)
        peak_used = max(peak_used, used)
        cur.duration_ms = ts - cur.start_ms
        prev_used = used
    if cur is not None:
        cur.swap_growth_bytes = max(0, peak_used - base)
    return rows
