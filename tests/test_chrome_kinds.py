"""Every Chrome event kind: Begin/End pairs (in a bare array too), async slices, 64-bit thread
ids, instants and flows counted, a trace with nothing to analyse said so."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from cli_run import run as run_cli
from real_data import REAL

from xpu_profiler.analysis import analyze
from xpu_profiler.core.profile import K_KERNEL
from xpu_profiler.readers import ReadOptions, kineto, load
from xpu_profiler.readers.begin_end import Mark, pair
from xpu_profiler.readers.kineto import decode

ROOT = Path(__file__).resolve().parents[1]
AIU = REAL / "other-formats" / "aiu-allreduce-tp4-begin-end.json"


def test_the_aiu_trace_gives_its_28_slices() -> None:
    """IBM AIU, TP4: a bare array of 28 Begin/End pairs, no category, thread ids hashed to 64
    bits (two above 2^63), tracks not properly nested (each B is written right before its E)."""
    if not AIU.exists():
        pytest.skip(f"{AIU} is not there")
    raw = json.loads(AIU.read_text())
    # the expected slices: each B and the E that follows it in the file (same pid, tid, name)
    want: dict[tuple, float] = defaultdict(float)
    for b, e in zip(raw[::2], raw[1::2]):
        assert (b["ph"], e["ph"], b["name"], b["tid"]) == ("B", "E", e["name"], e["tid"])
        want[(b["pid"], b["tid"])] += (e["ts"] - b["ts"]) * 1000
    p = load([AIU])
    ev = p.events
    assert len(ev) == 28 and (ev["kind"] == K_KERNEL).all()
    tids = {t: t if t < 2**63 else t - 2**64 for _, t in want}
    got: dict[tuple, float] = defaultdict(float)
    for d, t, dur in zip(ev["device"].tolist(), ev["track"].tolist(), ev["dur"].tolist()):
        got[(d, t)] += dur
    assert got == pytest.approx({(pid, tids[tid]): ns for (pid, tid), ns in want.items()}, abs=2)
    assert len(got) == 16 and sum(t >= 2**63 for t in tids) == 2
    assert any("no event names a category" in w for w in p.run["warnings"])
    _, s = analyze([AIU], engine="serial")
    assert s.totals.op_time_ns == pytest.approx(sum(want.values()), abs=30)
    # the AIU runtime's names: RDMA transfers and an all-reduce's adds are communication, the
    # model's own "add_N Cmpt Prep/Exec" compute slices element-wise: nothing is left as "other"
    comm = sum(
        (e["ts"] - b["ts"]) * 1000
        for b, e in zip(raw[::2], raw[1::2])
        if b["name"].startswith(("SenRdma", "AllReduce_"))
    )
    adds = sum((e["ts"] - b["ts"]) * 1000 for b, e in zip(raw[::2], raw[1::2]) if b["name"].startswith("add_"))
    by_op = {f.fused_op: f.time_ns for f in s.fused_ops}
    assert by_op["communication"] == pytest.approx(comm, abs=30)
    assert by_op["elementwise"] == pytest.approx(adds, abs=30)
    assert by_op.get("other", 0) == 0


def test_an_end_closes_the_latest_open_begin_of_its_name() -> None:
    """Partially overlapping slices of one track pair by name, not by nesting."""
    marks = [
        Mark("t", "a", 0.0, True, "a"),
        Mark("t", "b", 1.0, True, "b"),
        Mark("t", "a", 2.0, False),  # a stack matcher would close "b" here
        Mark("t", "b", 3.0, False),
        Mark("t", "", 4.0, True, "c"),
        Mark("t", "", 6.0, False),  # no name: the latest open Begin
        Mark("t", "x", 7.0, False),  # nothing open of that name
        Mark("u", "d", 8.0, True, "d"),  # never closed
    ]
    slices, unmatched = pair(marks)
    assert sorted((s.payload, s.start, s.dur) for s in slices) == [("a", 0.0, 2.0), ("b", 1.0, 2.0), ("c", 4.0, 2.0)]
    assert unmatched == 2


def test_begin_end_pairs_across_chunks_and_async_slices(tmp_path: Path, monkeypatch) -> None:
    """A Kineto trace whose B/E pairs land in different chunks, with async b/e slices, 64-bit
    tids, instants and flows: every slice is there, the unused kinds are counted."""
    events = [{"ph": "M", "name": "thread_name", "pid": 1, "tid": 2**64 - 5, "args": {"name": "queue"}}]
    for i in range(400):
        events.append({"ph": "B", "cat": "kernel", "name": f"k{i % 3}", "pid": 1, "tid": 2**64 - 5, "ts": 10.0 * i})
        events.append({"ph": "s", "cat": "ac2g", "name": "ac2g", "id": i, "pid": 1, "tid": 1, "ts": 10.0 * i})
        events.append({"ph": "E", "cat": "kernel", "name": f"k{i % 3}", "pid": 1, "tid": 2**64 - 5, "ts": 10.0 * i + 4})
    events.append({"ph": "b", "cat": "cpu_op", "name": "req", "id": 7, "pid": 1, "tid": 3, "ts": 1.0})
    events.append({"ph": "e", "cat": "cpu_op", "name": "req", "id": 7, "pid": 1, "tid": 3, "ts": 3001.0})
    events.append({"ph": "i", "cat": "x", "name": "Iteration Start", "pid": 1, "tid": 1, "ts": 0.0, "s": "g"})
    path = tmp_path / "t.pt.trace.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    monkeypatch.setattr(decode, "CHUNK_BYTES", 4 << 10)
    p = kineto.read(path, ReadOptions())
    ev = p.events
    k = ev["kind"] == K_KERNEL
    assert int(k.sum()) == 400 and set(ev["dur"][k].tolist()) == {4000} and set(ev["track"][k].tolist()) == {-5}
    assert np.array_equal(np.sort(ev["start"][k]), np.arange(400) * 10_000)
    (req,) = np.flatnonzero(ev["dur"] == 3_000_000)
    assert p.strings[int(ev["name"][req])] == "req"
    # flows repeat what args.correlation says: counted in the run record; other unused kinds warned
    assert p.run["sources"][0]["unused_events"] == {"flow": 400, "instant": 1}
    (line,) = [w for w in p.run["warnings"] if "not used by the analysis" in w]
    assert line.endswith("not used by the analysis: 1 instant event (first: 'Iteration Start', #1203)")


def test_begin_end_in_a_bare_array_with_categories(tmp_path: Path) -> None:
    events = [
        {"ph": "B", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0},
        {"ph": "B", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 2},
        {"ph": "E", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 3},
        {"ph": "E", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10},
        {"ph": "B", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 20},
    ]
    path = tmp_path / "bare.json"
    path.write_text(json.dumps(events))
    _, s = analyze([path], engine="serial")
    assert {f.fused_op: f.time_ns for f in s.fused_ops} == {"gemm": 10_000}  # top-level host ops
    assert any("skipped 1 begin/end event(s) without a partner" in w for w in s.warnings)


def test_events_but_nothing_to_analyse_is_one_line_exit_2(tmp_path: Path) -> None:
    flows = [
        {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": 1, "pid": 1, "tid": 1, "ts": 1},
        {"ph": "C", "name": "power", "pid": 1, "tid": 1, "ts": 2, "args": {"w": 3}},
    ]
    unknown = [{"ph": "X", "cat": "mystery", "name": "k", "pid": 1, "tid": 1, "ts": 1, "dur": 2}]
    lines = {}
    for name, events in (("flows.json", flows), ("unknown.json", unknown)):
        path = tmp_path / name
        path.write_text(json.dumps({"traceEvents": events}))
        res = run_cli("analyze", str(path), "-o", str(tmp_path / "out"), cwd=tmp_path)
        assert res.returncode == 2, (res.stdout, res.stderr)
        (lines[name],) = res.stderr.strip().splitlines()
        assert name in lines[name] and "nothing to analyse" in lines[name] and "Traceback" not in res.stderr
    assert "1 flow event (first: 'ac2g', #0), 1 counter event (first: 'power', #1)" in lines["flows.json"]
    assert "none a device kernel, copy or host op (categories 'mystery')" in lines["unknown.json"]
