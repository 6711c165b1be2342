"""Records → Profile: the live path's reader.

The batches every engine process handed over (over RPC or from the record files; see
``vllm/records``; a whole record directory: ``record_dir``) become one Profile, built with the same tables a file reader
builds: steps from the scheduler and worker rows, counters, requests, and the kernels
and ops of the workers' torch.profiler traces (read by the Kineto reader, clocks
aligned on the step ranges). What the hooks could not do reaches ``warn()``.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence
from pathlib import Path

import numpy as np

from ...core.intervals import within_union
from ...core.profile import Profile
from ...core.records import (
    C_IDX,
    FLUSH_FAILED,
    MAX_HELD_ROWS,
    MEMORY_COUNTER_PREFIXES,
    METRICS,
    R_IDX,
    S_IDX,
    worker_keys,
)
from ...core.run_info import RunInfo
from . import steps as steps_mod
from . import throughput, torch_traces
from .counters import counters_table


def build_profile(
    batches: Sequence[dict],
    *,
    t_start: int | None = None,
    t_end: int | None = None,
    metrics: Sequence[str] = METRICS,
    extra_counters: Sequence[tuple] = (),
    run: RunInfo | None = None,
    trim_to_steps: bool = True,
    steps: Collection[int] | Collection[tuple[int, int]] | None = None,
    wallclock_traces: Sequence[str | Path] = (),
) -> Profile:
    """Merge the per-process batches into one Profile.

    Records outside [t_start, t_end] (wall-clock ns: warm-up, engine start) are dropped;
    with ``steps``, every step but those (step ids, or (DP index, step id) pairs: each
    data-parallel engine counts its own steps) too, and the other records outside their
    time span. ``wallclock_traces``: torch traces without our step ranges (vLLM's
    own profiler files), placed by the wall clock Kineto wrote. With ``trim_to_steps``,
    trace events outside every engine step are dropped (counted in
    ``run["events_outside_steps_dropped"]``, see ``trim_to_steps``).
    """
    got = _Rows(batches, extra_counters)
    n_hooked = len(steps_mod.unique_sched(got.sched))
    if steps is not None:
        t_start, t_end = got.keep_steps(steps, t_start, t_end)
    got.keep_window(t_start, t_end)
    times = [r[S_IDX["t_sched"]] for r in got.sched] + [c[C_IDX["t"]] for c in got.counters]
    times += [r[R_IDX["arrival"]] for r in got.requests if r[R_IDX["arrival"]] > 0]
    base = int(t_start if t_start is not None else (min(times) if times else time.time_ns()))
    prof = Profile(base_ns=base)
    prof.steps = steps_mod.steps_table(got.sched, got.worker, prof.strings, base, got.engine_rank)
    counters = got.counters
    if "throughput" in metrics:
        counters += throughput.step_rate_samples(got.sched, got.engine_rank)
        prof.requests = throughput.requests_table(got.requests, prof.strings, base)
        if t_start is not None and t_end is not None:
            prof.run["throughput"] = throughput.overall(got.sched, got.requests, t_start, t_end)
    if "memory_usage" not in metrics:
        counters = [c for c in counters if not str(c[C_IDX["name"]]).startswith(MEMORY_COUNTER_PREFIXES)]
    prof.counters = counters_table(counters, prof.strings, base)
    prof.run.update(run or {})
    prof.run["step_source"] = "xpu_profiler_hooks"
    if got.layout:
        prof.run["parallel_ranks"] = got.layout
    if n_hooked:
        prof.run["hook_overhead"] = hook_overhead(got.hook_ns, n_hooked, max(1, len(got.engine_rank)))
    prof.run["metrics"] = list(metrics)
    torch_files = got.torch_files + [(str(f), None, None) for f in wallclock_traces]
    unreadable: list[str] = []
    if torch_files and "execution_time" in metrics:
        prof = _with_torch_traces(prof, torch_files, trim_to_steps, unreadable)
    for w in [*hook_warnings(batches), *unreadable]:
        prof.warn(w)
    return prof


class _Rows:
    """The rows of every batch together: scheduler and worker steps, counters, requests (with
    their engine's rank), torch trace files, and the time each process spent in its hooks."""

    def __init__(self, batches: Sequence[dict], extra_counters: Sequence[tuple]):
        self.sched: list = []
        self.worker: list = []
        self.counters: list = list(extra_counters)
        self.requests: list = []
        self.torch_files: list = []
        self.hook_ns: dict[tuple[str, object], int] = {}  # (role, pid) → time inside that process's hooks
        self.engine_rank, self.layout = places(batches)
        for b in batches:
            self.sched += b.get("sched", [])
            self.worker += b.get("worker", [])
            self.counters += [tuple(c) for c in b.get("counters", [])]
            rank = self.engine_rank.get(int((b.get("place") or {}).get("dp", 0)), 0)
            self.requests += [(*r[: len(R_IDX)], rank) for r in b.get("requests", [])]
            key = ("worker" if b.get("role") == "worker" else "engine", b.get("pid"))
            self.hook_ns[key] = self.hook_ns.get(key, 0) + int(b.get("hook_ns", 0) or 0)
            marks = b.get("torch_marks", [])
            self.torch_files += [(f, marks, b.get("torch_rank")) for f in b.get("torch_files", [])]

    def keep_steps(
        self, steps: Collection[int] | Collection[tuple[int, int]], t_start: int | None, t_end: int | None
    ) -> tuple[int | None, int | None]:
        """Keep the scheduler rows of ``steps`` only; returns the window narrowed to their span."""
        keep = {k if isinstance(k, tuple) else (None, k) for k in steps}
        dp, sid = S_IDX["dp_rank"], S_IDX["step"]
        self.sched = [r for r in self.sched if (r[dp] if len(r) > dp else 0, r[sid]) in keep or (None, r[sid]) in keep]
        if self.sched:
            lo, hi = min(r[S_IDX["t_sched"]] for r in self.sched), max(r[S_IDX["t_end"]] for r in self.sched)
            t_start, t_end = max(lo, t_start or lo), min(hi, t_end or hi)
        return t_start, t_end

    def keep_window(self, t_start: int | None, t_end: int | None) -> None:
        """Keep the rows inside [t_start, t_end] (either end open when None): the steps scheduled
        in it and their workers' rows, the counter samples, the requests that arrived or finished
        in it (or have no arrival)."""

        def inside(t):
            return (t_start is None or t >= t_start) and (t_end is None or t <= t_end)

        self.sched = [r for r in self.sched if inside(r[S_IDX["t_sched"]])]
        kept_steps = {(r[S_IDX["dp_rank"]], r[S_IDX["step"]]) for r in self.sched}
        self.worker = [w for w in self.worker if worker_keys(w)[:2] in kept_steps]
        ct = C_IDX["t"]
        self.counters = [c for c in self.counters if inside(c[ct])]
        arr, fin = R_IDX["arrival"], R_IDX["finish"]
        self.requests = [r for r in self.requests if r[arr] < 0 or inside(r[arr]) or (r[fin] >= 0 and inside(r[fin]))]


def _with_torch_traces(prof: Profile, torch_files: list, trim_to_steps: bool, unreadable: list[str]) -> Profile:
    """The hooks' Profile merged with the workers' torch traces (the hooks' run record wins);
    the traces that could not be read go to ``unreadable``."""
    tp = torch_traces.load_traces(torch_files, problems=unreadable)
    if tp is None:
        return prof
    tp.run.pop("step_source", None)
    merged = Profile.merge([prof, tp])
    merged.run.update(prof.run)  # the hooks' run metadata wins over the trace's
    merged.run["torch_traces"] = [str(f) for f, _, _ in torch_files]
    if trim_to_steps:
        trim_events_to_steps(merged)
    return merged


def hook_overhead(hook_ns: dict[tuple[str, object], int], steps: int, engines: int) -> dict:
    """The step hooks' own cost per step, as a step pays it: the engine processes' hooks
    (the scheduler: serial with the step) summed, the workers' (one process per rank,
    running side by side) counted once per engine. Periodic costs inside the hooks (record
    flushes to file, memory samples) and the first step's one-off set-up are in it."""
    engine = sum(v for (role, _), v in hook_ns.items() if role == "engine")
    workers = [v for (role, _), v in hook_ns.items() if role == "worker"]
    per_engine = max(1, len(workers) // engines)
    worker = sum(workers) / per_engine
    total = engine + worker
    return {
        "total_ns": int(total),
        "steps": steps,
        "per_step_ns": total / steps,
        "engine_ns": engine,
        "worker_ns": sum(workers),
        "worker_processes": len(workers),
        "all_processes_ns": engine + sum(workers),
    }


def places(batches: Sequence[dict]) -> tuple[dict[int, int], dict[str, dict]]:
    """From the processes' ``place``: DP rank → global rank of that engine's first worker,
    and global rank → {"dp", "pp", "tp"} of every worker (the run's parallel layout)."""
    engine_rank: dict[int, int] = {}
    layout: dict[int, dict] = {}
    for b in batches:
        p = b.get("place")
        if not isinstance(p, dict):
            continue
        if "world" in p:
            engine_rank[int(p.get("dp", 0))] = int(p.get("rank", 0))
        elif "tp" in p:
            layout[int(p["rank"])] = {k: int(p[k]) for k in ("dp", "pp", "tp") if k in p}
    for rank, c in layout.items():  # an engine whose EngineCore did not report: its lowest worker
        dp = c.get("dp", 0)
        engine_rank[dp] = min(engine_rank.get(dp, rank), rank)
    return engine_rank, {str(r): layout[r] for r in sorted(layout)}


#: how the warnings name each kind of row
DROPPED_NAMES = {
    "sched": "scheduler step rows",
    "worker": "worker step rows",
    "counters": "counter samples",
    "requests": "request rows",
}


def hook_warnings(batches: Sequence[dict]) -> list[str]:
    """What the hooks could not do, one line each: hooks that did not install at import,
    failures inside hooks (count and first message, summed over batches), reading problems."""
    out: list[str] = []
    failures: dict[tuple, list] = {}
    not_installed: dict[str, set] = {}
    for b in batches:
        proc = b.get("process") or "?"
        for where, (n, first) in (b.get("errors") or {}).items():
            f = failures.setdefault((proc, where), [0, first])
            f[0] += int(n)
        for symbol, ok in (b.get("hooks") or {}).items():
            if not ok:
                not_installed.setdefault(symbol, set()).add(proc)
        out += list(b.get("warnings") or ())
    for symbol, procs in sorted(not_installed.items()):
        out.append(f"the hook on {symbol} did not install in {', '.join(sorted(procs))}: its records are missing")
    unwritten = sorted(proc for proc, where in failures if where == FLUSH_FAILED)
    if unwritten:  # one line for every process: the same directory, the same reason
        first = failures[(unwritten[0], FLUSH_FAILED)][1]
        out.append(
            f"the record files could not be written ({first}) by {', '.join(unwritten)}; "
            f"their records were held in memory and handed over later"
        )
    dropped: dict[str, int] = {}
    for b in batches:
        for kind, n in (b.get("dropped") or {}).items():
            dropped[kind] = dropped.get(kind, 0) + int(n)
    if dropped:
        what = ", ".join(f"{dropped[k]:,} {DROPPED_NAMES.get(k, k)}" for k in sorted(dropped))
        out.append(
            f"records dropped while the record files could not be written: {what} (the oldest; "
            f"each process holds at most {MAX_HELD_ROWS:,} of each kind meanwhile): the totals are short by those"
        )
    for (proc, where), (n, first) in sorted(failures.items()):
        if where != FLUSH_FAILED:
            out.append(f"{where} failed {n} time(s) in {proc} (first: {first}); those records are missing")
    return out


def trim_events_to_steps(prof: Profile) -> int:
    """Drop the trace events of each rank that start outside all of its engine steps;
    returns how many (also ``run["events_outside_steps_dropped"]``).

    torch.profiler runs from the first profiled step until it is stopped; what the worker
    does between steps that schedule work (the engine's empty clean-up steps, idle time,
    answering the stop request) belongs to no step. Events without a time (start < 0)
    and events of ranks without steps are kept.
    """
    ev, st = prof.events, prof.steps
    if not len(ev) or not len(st):
        return 0
    s_rank = st["rank"].astype(np.int64)
    e_rank, t = ev["rank"].astype(np.int64), ev["start"]
    inside = within_union(s_rank, st["start"], st["start"] + st["dur"], e_rank, t)
    keep = inside | (t < 0) | ~np.isin(e_rank, s_rank)
    dropped = int((~keep).sum())
    if dropped:
        prof.events = ev.take(np.flatnonzero(keep))
        prof.run["events_outside_steps_dropped"] = dropped
    return dropped
