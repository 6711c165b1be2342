"""Events of one thread that overlap without nesting (a stretched event that ends after
its parent, an op that runs into the next one): counted in one warning with an example,
and attributed so that no time moves between fused ops.

The expected numbers come from the traces' own events: each op's fused op is named by
the test (the custom op or op it is), and a CPU-only trace's op time is its top-level
ops' durations; the same trace without the stretch is the reference for the real one.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from xpu_profiler.analysis import analyze
from xpu_profiler.core.nesting import CLIPPED, CUT, JITTER_NS, KEPT, nested_ends

TESTS = Path(__file__).resolve().parent
CPU_TP2 = TESTS / "data" / "vllm_cpu_tp2_gloo" / "rank0.pt.trace.json.gz"

#: top-level ops of the synthetic decode step and the fused op each one is
OPS = [
    ("vllm::unified_attention", "attention"),
    ("_C::silu_and_mul", "activation"),
    ("aten::mm", "gemm"),
    ("_C::rms_norm", "norm"),
]


def X(name, cat, ts, dur, tid=1, **args):
    e = {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur}
    if args:
        e["args"] = args
    return e


def write(path: Path, events: list[dict]) -> Path:
    path.write_text(json.dumps({"traceEvents": events}))
    return path


def decode_op_time(summary) -> dict[str, int]:
    return {f.fused_op: f.time_ns_by_phase["decode"] for f in summary.fused_ops if f.time_ns_by_phase.get("decode")}


def crossing_warnings(summary) -> list[str]:
    return [w for w in summary.warnings if "overlap another on their thread without nesting" in w]


def test_a_child_that_ends_after_its_parent_moves_no_time(tmp_path: Path) -> None:
    # a decode step of four ops, 100 us each, 110 us apart; each holds a child
    # (aten::empty) from 60 us into it that ends 30 us after it: 20 us into the next op
    ev = [X("execute_context_0(0)_generation_4(4)", "user_annotation", 0, 1000)]
    for k, (name, _) in enumerate(OPS):
        t0 = 100 + 110 * k
        ev += [X(name, "cpu_op", t0, 100), X("aten::empty", "cpu_op", t0 + 60, 70)]
    _, s = analyze([write(tmp_path / "t.json", ev)])
    # each op is top-level with its own 100 us (the op after a stretched child is no child of it)
    assert decode_op_time(s) == {fused: 100_000 for _, fused in OPS}
    assert s.totals.op_time_ns == 4 * 100_000
    (w,) = crossing_warnings(s)
    assert w.startswith("4 host event(s) overlap another on their thread without nesting")
    assert "'aten::empty' starts inside" in w and "overlaps its end by 30.000 us" in w
    assert "4 were taken as ending with their parent and 0 as ending where the next one starts" in w


def test_an_op_that_runs_into_the_next_one_keeps_its_own_time(tmp_path: Path) -> None:
    # four top-level ops, each 100 us, each starting 90 us after the previous one: every op
    # but the last overlaps the next by 10 us (no child involved)
    ev = [X("execute_context_0(0)_generation_4(4)", "user_annotation", 0, 1000)]
    for k, (name, _) in enumerate(OPS):
        ev.append(X(name, "cpu_op", 100 + 90 * k, 100))
    _, s = analyze([write(tmp_path / "t.json", ev)])
    assert decode_op_time(s) == {fused: 100_000 for _, fused in OPS}
    (w,) = crossing_warnings(s)
    assert w.startswith("3 host event(s) overlap") and "3 as ending where the next one starts" in w


def test_launches_in_the_overlap_go_to_the_op_that_made_them(tmp_path: Path) -> None:
    # GPU: op A (aten::mm) holds a child that runs 30 us past A's end, into op B
    # (aten::silu); B launches a kernel from inside that overlap. The kernel's name says
    # nothing: its fused op is the op that launched it.
    ev = [
        X("execute_context_0(0)_generation_4(4)", "user_annotation", 0, 1000),
        X("aten::mm", "cpu_op", 100, 100),
        X("aten::empty", "cpu_op", 160, 70),  # ends at 230, 30 past its parent
        X("aten::silu", "cpu_op", 200, 100),
        X("cudaLaunchKernel", "cuda_runtime", 210, 10, correlation=1),
        X("kernel_0", "kernel", 400, 50, tid=7, correlation=1, device=0),
        X("cudaLaunchKernel", "cuda_runtime", 120, 10, correlation=2),
        X("kernel_1", "kernel", 300, 50, tid=7, correlation=2, device=0),
    ]
    for e in ev:
        if e["cat"] == "kernel":
            e["pid"] = 0
    _, s = analyze([write(tmp_path / "t.json", ev)])
    assert decode_op_time(s) == {"activation": 50_000, "gemm": 50_000}
    assert len(crossing_warnings(s)) == 1


def test_jitter_under_a_microsecond_is_repaired_without_a_warning(tmp_path: Path) -> None:
    # Kineto's own CUDA traces hold thousands of such overlaps (an op's end written a few
    # hundred ns after the next op's start): the next op is still its own top-level op
    ev = [X("execute_context_0(0)_generation_4(4)", "user_annotation", 0, 1000)]
    for k, (name, _) in enumerate(OPS):
        ev.append(X(name, "cpu_op", 100 + 100 * k, 100.25))
    _, s = analyze([write(tmp_path / "t.json", ev)])
    assert decode_op_time(s) == {fused: 100_250 for _, fused in OPS}
    assert crossing_warnings(s) == []


def test_nested_ends_decides_each_crossing_by_where_most_of_it_lies() -> None:
    # group 0: parent [0,100) with a child [90,105) (mostly inside: clipped to 100)
    # group 1: [0,100) and [98,200) (mostly after: the first ends at 98)
    # group 2: nested already
    gid = np.array([0, 0, 1, 1, 2, 2])
    start = np.array([0, 90, 0, 98, 0, 10])
    end = np.array([100, 105, 100, 200, 50, 20])
    n = nested_ends(gid, start, end)
    assert n.end.tolist() == [100, 100, 98, 200, 50, 20]
    assert n.how.tolist() == [KEPT, CLIPPED, CUT, KEPT, KEPT, KEPT]
    assert n.example == (1, 0, 5)  # the larger cut: the child's 5 ns (the other one's 2)
    # a crossing with an ancestor, not the innermost open interval: P [0,100) holds A [10,20);
    # B [80,200) starts inside P after A closed and lies mostly after it
    m = nested_ends(np.zeros(3, np.int64), np.array([0, 10, 80]), np.array([100, 20, 200]))
    assert m.end.tolist() == [80, 20, 200] and m.how.tolist() == [CUT, KEPT, KEPT]
    assert nested_ends(np.zeros(2, np.int64), np.array([0, 5]), np.array([10, 8])).example is None
    assert JITTER_NS == 1000


def _last_children(events: list[dict]) -> list[tuple[int, float]]:
    """Per thread, each top-level cpu_op's last direct child cpu_op and the top-level op's
    end, found from the raw events (a stack of the open ones, in start order)."""
    out = []
    by_thread: dict = {}
    for i, e in enumerate(events):
        if e.get("ph") == "X" and e.get("cat") == "cpu_op":
            by_thread.setdefault((e["pid"], e["tid"]), []).append(i)
    for rows in by_thread.values():
        rows.sort(key=lambda i: (events[i]["ts"], -events[i]["dur"]))
        stack: list[int] = []
        last: dict[int, int] = {}  # top-level op -> its last direct child
        for i in rows:
            e = events[i]
            while stack and events[stack[-1]]["ts"] + events[stack[-1]]["dur"] <= e["ts"]:
                stack.pop()
            if len(stack) == 1:
                last[stack[0]] = i
            stack.append(i)
        out += [(c, events[p]["ts"] + events[p]["dur"]) for p, c in last.items()]
    return out


@pytest.mark.skipif(not CPU_TP2.exists(), reason="tests/data is not in this checkout")
def test_a_real_cpu_trace_with_stretched_children_keeps_every_fused_ops_time(tmp_path: Path) -> None:
    """vLLM's CPU TP=2 trace (rank 0): the last child of every top-level op stretched past
    its parent's end by 40% of the part it had inside (the op after the parent then starts
    inside it): every fused op's time per phase is what it is in the trace as written."""
    doc = json.loads(gzip.decompress(CPU_TP2.read_bytes()))
    events = doc["traceEvents"]
    reference = write(tmp_path / "as_written.json", events)
    warned = 0
    children = _last_children(events)
    for i, parent_end in children:
        e = events[i]
        inside = parent_end - e["ts"]
        if inside * 0.4 >= 2 * JITTER_NS / 1e3:  # (smaller ones would be the profilers' own jitter)
            e["dur"] = inside * 1.4
            warned += 1
    assert len(children) > 1000 and warned > 100
    _, ref = analyze([reference])
    _, s = analyze([write(tmp_path / "stretched.json", events)])
    assert [(f.fused_op, f.time_ns_by_phase) for f in s.fused_ops] == [
        (f.fused_op, f.time_ns_by_phase) for f in ref.fused_ops
    ]
    assert s.totals.op_time_ns == ref.totals.op_time_ns
    assert crossing_warnings(ref) == []
    (w,) = crossing_warnings(s)
    assert w.startswith(f"{warned:,} host event(s) overlap")
    assert f"{warned:,} were taken as ending with their parent and 0 as ending where the next one starts" in w


def _nests(gid, start, end) -> bool:
    """Brute force: no two intervals of a group overlap without one holding the other."""
    n = len(start)
    for i in range(n):
        for j in range(n):
            if i != j and gid[i] == gid[j] and start[i] < start[j] < end[i] < end[j]:
                return False
    return True


def test_is_nested_and_nested_ends_against_brute_force() -> None:
    from xpu_profiler.core.intervals import is_nested

    rng = np.random.default_rng(7)
    for _ in range(2000):
        n = int(rng.integers(1, 10))
        gid = rng.integers(0, 2, n)
        start = rng.integers(0, 40, n)
        end = start + rng.integers(0, 20, n)
        assert is_nested(gid, start, end) == _nests(gid, start, end), (gid, start, end)
        r = nested_ends(gid, start, end)
        # what comes out nests, never ends later than it did nor before it starts, and only
        # the intervals it says were changed are
        assert _nests(gid, start, r.end) and (r.end <= end).all() and (r.end >= start).all()
        assert ((r.how != KEPT) == (r.end != end)).all()
        assert (r.example is None) == bool((r.how == KEPT).all())
