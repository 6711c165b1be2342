"""Ground truth for steps on real traces, from the raw Chrome-trace JSON only (this module
imports nothing of xpu_profiler). Each test writes the rule that finds the steps of its
trace; these helpers give what every rule needs: a step's device work through the
correlation ids of the runtime calls inside its host range, its device range (with a
leading wait on earlier work trimmed), its busy time, the idle gaps by cause, and the
verdict the gaps give.

Times are integer ns as a reader converts them: ``round(ts * 1000)`` and
``round(dur * 1000)`` apart.
"""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from statistics import median

DEVICE_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
RUNTIME_CATS = ("cuda_runtime", "cuda_driver")
LATENCY_NS = 30_000  # a wait up to this after a launch (or a kernel) is launch latency
TRIM_NS = 1_000_000  # a leading dependency wait this long is the earlier work's, not the step's
HOST_BOUND = 0.2
COMM_BOUND = 0.3
COMM = re.compile(r"nccl|rccl|all_?reduce|allgather|all_gather|reduce_scatter|cross_device_reduce", re.I)
GRAPH_LAUNCH = re.compile(r"^(cuda|hip|cu)GraphLaunch")


@dataclass(frozen=True)
class Ev:
    name: str
    cat: str
    start: int
    dur: int
    pid: object
    tid: object
    corr: int | None
    nbytes: int | None

    @property
    def end(self) -> int:
        return self.start + self.dur


@cache
def events(path: Path) -> tuple[Ev, ...]:
    """The complete (X) events of a trace, times in ns from the trace's own origin."""
    raw = path.read_bytes()
    doc = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
    out = []
    for e in doc["traceEvents"] if isinstance(doc, dict) else doc:
        if e.get("ph") != "X":
            continue
        a = e.get("args") or {}
        c = a.get("correlation")
        out.append(
            Ev(
                str(e.get("name", "")),
                str(e.get("cat", "")),
                round(float(e["ts"]) * 1000),
                round(float(e.get("dur", 0)) * 1000),
                e.get("pid"),
                e.get("tid"),
                int(c) if isinstance(c, (int, float)) else None,
                int(a["bytes"]) if isinstance(a.get("bytes"), (int, float)) else None,
            )
        )
    return tuple(out)


def union(iv: list[tuple[int, int]]) -> list[list[int]]:
    out: list[list[int]] = []
    for s, e in sorted(iv):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def length(iv: list[list[int]]) -> int:
    return sum(e - s for s, e in iv)


@dataclass
class Step:
    """One step: its host range and what its device work shows."""

    start: int
    end: int
    launches: dict[int, Ev] = field(default_factory=dict)  # correlation id → runtime call
    work: list[Ev] = field(default_factory=list)  # its device events
    d_start: int = -1
    eff: int = -1
    d_end: int = -1
    busy: int = 0
    starved: int = 0
    host_wait: int = 0
    latency: int = 0
    dependency: int = 0
    waiting: int = 0
    comm: int = 0
    exposed: int = 0

    @property
    def has_work(self) -> bool:
        return bool(self.work)

    @property
    def device_range(self) -> int:
        return self.d_end - self.eff

    @property
    def period(self) -> int:
        return self.starved + self.device_range

    @property
    def step_time(self) -> int:
        """The longer of the host range and the effective device range (a host range whose
        front the trim cut counts from the effective start)."""
        host = self.end - max(self.start, self.eff) if self.eff > self.d_start else self.end - self.start
        return max(self.device_range, host)

    def graph_launches(self) -> int:
        return sum(1 for e in self.launches.values() if GRAPH_LAUNCH.match(e.name))

    def h2d_sizes(self) -> list[int]:
        """Bytes of its host-to-device copies, in launch order."""
        h2d = [w for w in self.work if w.cat == "gpu_memcpy" and ("HtoD" in w.name or "-> Device)" in w.name)]
        h2d = [w for w in h2d if "Device -> Device" not in w.name and w.nbytes is not None]
        return [w.nbytes for w in sorted(h2d, key=lambda w: (self.launches[w.corr].start, w.start))]


def device_events(path: Path) -> list[Ev]:
    return [e for e in events(path) if e.cat in DEVICE_CATS]


def build_steps(path: Path, ranges: list[tuple[int, int]]) -> list[Step]:
    """Steps for host ranges (in time order, one rank): the device work their runtime calls
    launched, its effective range, busy time, idle gaps by cause and exposed collectives."""
    ev = events(path)
    runtime = [e for e in ev if e.cat in RUNTIME_CATS and e.corr is not None]
    dev = device_events(path)
    by_corr: dict[int, list[Ev]] = {}
    for d in dev:
        if d.corr is not None:
            by_corr.setdefault(d.corr, []).append(d)
    every = union([(d.start, d.end) for d in dev])
    steps = []
    for a, b in ranges:
        st = Step(a, b)
        for r in runtime:
            if a <= r.start <= b and r.corr in by_corr:
                st.launches[r.corr] = r
                st.work += by_corr[r.corr]
        steps.append(st)
    prev_end = None
    for st in steps:
        if not st.work:
            continue
        st.d_start = min(w.start for w in st.work)
        st.d_end = max(w.end for w in st.work)
        own = union([(w.start, w.end) for w in st.work])
        st.busy = length(own)
        gaps = _gaps(every, st)
        st.eff = _effective(st, own, gaps)
        st.starved = max(st.eff - prev_end, 0) if prev_end is not None else 0
        for p, s, w in gaps:
            if st.eff > st.d_start and s <= st.eff:
                continue  # the trimmed wait
            launch = _issued(st.launches[w.corr])
            host = min(max(launch - p, 0), s - p)
            after = s - p - host  # the rest of the gap (none when the work began before its call returned)
            st.host_wait += host
            if after <= LATENCY_NS:
                st.latency += after
                st.waiting += host + (after if s - launch <= LATENCY_NS else 0)
            else:
                st.dependency += after
                st.waiting += host
        comm = union([(w.start, w.end) for w in st.work if COMM.search(w.name)])
        other = union(
            [(d.start, d.end) for d in dev if not COMM.search(d.name) and d.end > st.d_start and d.start < st.d_end]
        )
        st.comm = length(comm)
        st.exposed = st.comm - _overlap(comm, other)
        prev_end = st.d_end if prev_end is None else max(prev_end, st.d_end)
    return steps


def _issued(call: Ev) -> int:
    """When the host was done issuing a launch: its runtime call's end (the call itself
    is host time the device waits through)."""
    return call.end


def _overlap(a: list[list[int]], b: list[list[int]]) -> int:
    """Length of the intersection of two sorted disjoint interval lists."""
    i = j = total = 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        total += max(0, hi - lo)
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def _gaps(every: list[list[int]], st: Step) -> list[tuple[int, int, Ev]]:
    """The device's idle gaps (no device work at all) that this step's work ends:
    (gap start, gap end, the work that ends it)."""
    starts = {}
    for w in st.work:
        if w.start not in starts or _issued(st.launches[w.corr]) < _issued(st.launches[starts[w.start].corr]):
            starts[w.start] = w
    out = []
    for prev, nxt in zip(every, every[1:]):
        w = starts.get(nxt[0])
        if w is not None and nxt[0] > prev[1]:
            out.append((prev[1], nxt[0], w))
    return out


def _effective(st: Step, own: list[list[int]], gaps: list[tuple[int, int, Ev]]) -> int:
    """After the last dependency wait of over 1 ms the step's work ran into before 5% of
    its busy time had run; its first work's start otherwise."""
    eff = st.d_start
    for p, s, w in gaps:
        launch = _issued(st.launches[w.corr])
        ran = sum(max(0, min(e, p) - b) for b, e in own if b < p)
        if s - max(p, launch) >= TRIM_NS and ran < 0.05 * st.busy and s > eff:
            eff = s
    return eff


def verdict(steps: list[Step]) -> str:
    """host / communication / device, on the sums over the steps (a phase's verdict)."""
    period = sum(s.period for s in steps)
    if sum(s.waiting for s in steps) >= HOST_BOUND * period:
        return "host"
    if sum(s.exposed for s in steps) >= COMM_BOUND * period:
        return "communication"
    return "device"


def busy_share(steps: list[Step]) -> float:
    return sum(s.busy for s in steps) / sum(s.period for s in steps)


def step_p50(steps: list[Step]) -> float:
    return float(median(s.step_time for s in steps))


def copies_tokens(sizes: list[int]) -> tuple[int | None, int | None]:
    """vLLM's _prepare_inputs copies: input_ids (int32) then positions (int64) give tokens T;
    after them query_start_loc (R + 1 int32) then seq_lens (R int32) give requests R."""
    t = r = None
    for i in range(len(sizes) - 1):
        a, b = sizes[i], sizes[i + 1]
        if t is None and a % 4 == 0 and b == 2 * a:
            t, after = a // 4, i + 2
        elif t is not None and i >= after and a == b + 4 and b % 4 == 0 and 0 < b // 4 <= t:
            r = b // 4
            break
    return t, r


@cache
def vllm_frame_steps(path: Path) -> list[Step]:
    """The steps of a vLLM trace without step annotations: one per ``gpu_worker.py(N):
    execute_model`` frame that launched device work."""
    frames = sorted(
        (
            e
            for e in events(path)
            if e.cat == "python_function" and re.search(r"/gpu_worker\.py\(\d+\): execute_model$", e.name)
        ),
        key=lambda e: e.start,
    )
    return [s for s in build_steps(path, [(f.start, f.end) for f in frames]) if s.has_work]
