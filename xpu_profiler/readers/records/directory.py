"""A server's record directory (``XPU_PROFILER_DIR``) as one input: the readers'
directory-level claim (``readers/vllm_records``) and the Profile of one server lifetime.

What a directory holds: ``<process>-<pid>.records.jsonl`` of every EngineCore and worker
process of every server lifetime that wrote there, the workers' torch.profiler traces
(``torch/``, each named in the records with the marks that align its clock), and any
trace vLLM's own profiler wrote below it (``--profiler-config`` /
``VLLM_TORCH_PROFILER_DIR`` pointed inside): those carry no marks of ours and are placed
by the wall clock Kineto wrote, in the lifetime whose steps they overlap. The API
server's own trace (its host work, no engine step) is left out.

Several lifetimes (restarts) are never mixed into one step sequence: the report is of
one of them, the latest unless ``lifetime`` (1 = the oldest) says otherwise, and a
warning lists the others. The records → Profile step is ``assemble.build_profile``,
the same the live command and the Python API use.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ...core.errors import TraceError
from ...core.profile import Profile
from ...core.records import RECORD_SUFFIX, read_record_files, record_files
from ...core.run_info import RunInfo
from ...knowledge.vllm_names import FRONTEND_TRACE_MARK
from . import assemble, lifetimes


def is_record_dir(directory: Path) -> bool:
    """Whether a regular record file is in it (a FIFO named like one makes no record directory)."""
    return directory.is_dir() and any(f.is_file() for f in record_files(directory))


def torch_profiler_traces(directory: Path) -> list[Path]:
    """Every file below ``directory`` that torch.profiler wrote (Kineto's own top-level keys)."""
    from ..base import KINETO_TOP_KEYS, looks_like_kineto
    from ..content import read_head

    out = []
    for f in sorted(p for p in directory.rglob("*") if p.is_file() and not p.name.startswith(".")):
        if f.name.endswith(RECORD_SUFFIX):
            continue
        head = read_head(f)
        if looks_like_kineto(head) and any(k in head for k in KINETO_TOP_KEYS):
            out.append(f)
    return out


def claimed_files(directory: Path) -> list[Path] | None:
    """The files this directory's records are read with (None: not a record directory)."""
    if not is_record_dir(directory):
        return None
    return record_files(directory) + torch_profiler_traces(directory)


def read(directory: str | Path, lifetime: int | None = None) -> Profile:
    """The Profile of one server lifetime of a record directory (see module doc)."""
    d = Path(directory)
    batches = read_record_files(d)
    lts, common = lifetimes.split(batches)
    if not lts:
        raise TraceError(d, "its record files hold no engine step, counter or request")
    if lifetime is not None and not 1 <= lifetime <= len(lts):
        raise TraceError(d, f"holds {len(lts)} server lifetime(s); --lifetime {lifetime} is not one of them")
    chosen = lts[-1] if lifetime is None else lts[lifetime - 1]
    ours = {str(Path(f).resolve()) for b in batches for f in b.get("torch_files") or ()}
    others = [f for f in torch_profiler_traces(d) if str(f.resolve()) not in ours]
    frontend = [f for f in others if FRONTEND_TRACE_MARK in f.name]  # the API server's host work
    placed = _place_traces([f for f in others if f not in frontend], lts)
    meta: dict[str, Any] = next((b["meta"] for b in chosen.batches if isinstance(b.get("meta"), dict)), {})
    engine = meta.get("engine") or {}
    run: RunInfo = {
        "lifetime": {"key": chosen.key, "index": lts.index(chosen) + 1, "of": len(lts), "pids": chosen.pids},
        "engine": engine,
        "start_time_ns": chosen.first_ns,
    }
    if engine.get("model"):
        run["model"] = engine["model"]
    if isinstance(meta.get("model_config"), dict) and meta["model_config"]:
        run["model_config"] = meta["model_config"]
    prof = assemble.build_profile(chosen.batches + common, run=run, wallclock_traces=placed.get(chosen.key, []))
    prof.run["sources"] = [{"path": str(d), "format": "xpu_profiler records"}]
    if frontend:
        prof.run["frontend_traces_left_out"] = [str(f) for f in frontend]
    if len(lts) > 1:
        rest = "; ".join(f"{i}: {lt.describe()}" for i, lt in enumerate(lts, 1) if lt is not chosen)
        prof.warn(
            f"{d} holds the records of {len(lts)} server lifetimes; this report is lifetime "
            f"{lts.index(chosen) + 1} ({chosen.describe()}); the others ({rest}) are read with "
            f"--lifetime N"
        )
    if placed.get(""):
        prof.warn(
            f"{len(placed[''])} torch trace(s) in {d} overlap no lifetime's steps and are left out: "
            + ", ".join(p.name for p in placed[""][:5])
        )
    return prof


# at most 19 / 16 digits: a longer number is no clock reading (and would overflow int64 ns)
_BASE = re.compile(rb'"baseTimeNanoseconds"\s*:\s*(\d{1,19})\b')
_TS = re.compile(rb'"ts"\s*:\s*"?(\d{1,16}(?:\.\d*)?)(?![\d.])')


def trace_start_ns(path: Path) -> int | None:
    """Wall-clock ns near the start of a torch trace, from its first bytes (else the whole file)."""
    from .. import kineto
    from ..base import ReadOptions
    from ..content import read_head

    head = read_head(path)
    base, ts = _BASE.search(head), _TS.search(head)
    if base and ts:
        return int(base.group(1)) + int(float(ts.group(1)) * 1000)
    try:
        prof = kineto.read(path, ReadOptions())
    except TraceError:
        return None
    ev = prof.events
    return prof.base_ns + int(ev["start"].min()) if len(ev) and prof.base_ns else None


def _place_traces(paths: list[Path], lts: list[lifetimes.Lifetime]) -> dict[str, list[Path]]:
    """{lifetime key: the traces that start inside its records' span} ("" for none)."""
    out: dict[str, list[Path]] = {}
    for p in paths:
        t = trace_start_ns(p)
        key = next((lt.key for lt in reversed(lts) if t is not None and lt.first_ns <= t <= lt.last_ns), "")
        out.setdefault(key, []).append(p)
    return out
