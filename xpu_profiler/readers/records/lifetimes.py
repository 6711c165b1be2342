"""Server lifetimes in a record directory.

A server restarted with the same ``XPU_PROFILER_DIR`` appends the records of its new
processes beside the old ones; step ids start again at 0 in every lifetime, so the
lifetimes must be told apart before any step is joined. Every batch names its
lifetime (``run``: set by the server's first process, inherited by the processes it
starts, see ``vllm/records.ENV_RUN``). Records written without one are grouped by
process tree instead: an EngineCore by its pid, a worker by its parent's. Two engines
of one lifetime that both run dp rank N (two ``LLM``s one after the other in one
script) are two lifetimes as well.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ...core.records import S_IDX, W_IDX


@dataclass
class Lifetime:
    key: str
    batches: list[dict] = field(default_factory=list)
    first_ns: int = 0  # wall-clock ns of its first record
    last_ns: int = 0  # ... and of its last one
    steps: int = 0  # engine steps recorded (all dp ranks)
    pids: list[int] = field(default_factory=list)

    def describe(self) -> str:
        import time

        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.first_ns / 1e9)) if self.first_ns else "?"
        return f"started {when}, {self.steps} steps, pids {', '.join(map(str, self.pids))}"


def _engine_key(b: dict, engines: set[int]) -> int | None:
    """The EngineCore a batch belongs to: its own pid (engine, or worker in the engine's
    process), else its parent (a worker process the engine started)."""
    if b["pid"] in engines:
        return b["pid"]
    if b.get("ppid") in engines:
        return b["ppid"]
    return None


def _engine_spans(group: list[dict], engines: set[int]) -> dict[int, tuple[int, int]]:
    spans: dict[int, tuple[int, int]] = {}
    for b in group:
        if b["pid"] in engines:
            ts = _times(b)
            if ts:
                lo, hi = spans.get(b["pid"], (min(ts), max(ts)))
                spans[b["pid"]] = (min(lo, *ts), max(hi, *ts))
    return spans


def _overlapping(b: dict, spans: dict[int, tuple[int, int]]) -> int | None:
    """The engine whose records span this batch's times (records without a parent pid)."""
    ts = _times(b)
    if not ts:
        return next(iter(spans)) if len(spans) == 1 else None
    lo, hi = min(ts), max(ts)
    best = max(spans.items(), key=lambda kv: min(hi, kv[1][1]) - max(lo, kv[1][0]), default=None)
    return best[0] if best is not None and min(hi, best[1][1]) >= max(lo, best[1][0]) else None


def _times(b: dict) -> list[int]:
    out = [int(r[S_IDX["t_sched"]]) for r in b.get("sched", ())]
    out += [int(r[S_IDX["t_end"]]) for r in b.get("sched", ())]
    out += [int(w[W_IDX["t_exec"]]) for w in b.get("worker", ())]
    out += [int(c[2]) for c in b.get("counters", ())]
    return out


def split(batches: Sequence[dict]) -> tuple[list[Lifetime], list[dict]]:
    """(lifetimes, oldest first; the batches that belong to none: reading problems)."""
    common = [b for b in batches if not b.get("pid")]
    groups: dict[str, list[dict]] = {}
    for b in batches:
        if b.get("pid"):
            groups.setdefault(b.get("run") or "", []).append(b)
    out: list[Lifetime] = []
    for run, group in groups.items():
        engines = {b["pid"] for b in group if b.get("sched")}
        by_dp: dict[int, set] = {}
        for b in group:
            for r in b.get("sched", ()):
                by_dp.setdefault(int(r[S_IDX["dp_rank"]]), set()).add(b["pid"])
        if run and all(len(p) <= 1 for p in by_dp.values()):
            out.append(_lifetime(run, group))
            continue
        # by process tree: one lifetime per EngineCore, its workers with it
        spans = _engine_spans(group, engines)
        parts: dict[str, list[dict]] = {}
        for b in group:
            eng = _engine_key(b, engines)
            if eng is None:
                eng = _overlapping(b, spans)
            parts.setdefault(f"{run or 'pid'}:{eng if eng is not None else b['pid']}", []).append(b)
        out += [_lifetime(k, g) for k, g in parts.items()]
    out = [lt for lt in out if lt.steps or any(b.get("counters") or b.get("requests") for b in lt.batches)]
    out.sort(key=lambda lt: (lt.first_ns, lt.key))
    return out, common


def _lifetime(key: str, batches: list[dict]) -> Lifetime:
    times = [t for b in batches for t in _times(b) if t > 0]
    starts = [int(b["started_ns"]) for b in batches if b.get("started_ns")]
    steps = {(int(r[S_IDX["dp_rank"]]), int(r[S_IDX["step"]])) for b in batches for r in b.get("sched", ())}
    return Lifetime(
        key=key,
        batches=batches,
        first_ns=min(starts + times, default=0),
        last_ns=max(times, default=0),
        steps=len(steps),
        pids=sorted({int(b["pid"]) for b in batches}),
    )
