"""The Perfetto exporter against the importer's rules, and the validator that checks them."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from xpu_profiler.analysis import analyze, export
from xpu_profiler.core.profile import EVENT_SCHEMA, K_CPU_OP, K_KERNEL, Profile, Table
from xpu_profiler.exporters.validate import validate_bytes


def X(name, cat, ts, dur, tid=1, pid=100, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def roundtrip(tmp_path: Path, events: list[dict]) -> tuple[dict, bytes]:
    src = tmp_path / "in.json"
    src.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}, ensure_ascii=False), encoding="utf-8")
    profile, summary = analyze([src])
    written = export(profile, summary, tmp_path / "out", ["perfetto"])
    data = gzip.decompress(written["perfetto"].read_bytes())
    return json.loads(data), data


def test_overlapping_kernels_go_to_lanes(tmp_path: Path) -> None:
    events = [
        X("k1", "kernel", 0, 10, tid=7, pid=0),
        X("k2", "kernel", 5, 10, tid=7, pid=0),
        X("k3", "kernel", 12, 2, tid=7, pid=0),
        X("k4", "kernel", 20, 5, tid=7, pid=0),
    ]
    doc, data = roundtrip(tmp_path, events)
    assert validate_bytes(data) == []
    slices = {e["name"]: e for e in doc["traceEvents"] if e["ph"] == "X"}
    assert slices["k1"]["tid"] == slices["k4"]["tid"]
    assert slices["k2"]["tid"] != slices["k1"]["tid"]  # partial overlap → another lane
    names = {
        (e["pid"], e["tid"]): e["args"]["name"]
        for e in doc["traceEvents"]
        if e["ph"] == "M" and e["name"] == "thread_name"
    }
    assert names[(slices["k1"]["pid"], slices["k1"]["tid"])] == "device 0 stream 7"
    assert names[(slices["k2"]["pid"], slices["k2"]["tid"])] == "device 0 stream 7 (lane 2)"


def test_exported_times_are_exact(tmp_path: Path) -> None:
    events = [X("op", "cpu_op", 1712345678.123, 0.457), X("op2", "cpu_op", 1712345679.001, 1.0)]
    doc, data = roundtrip(tmp_path, events)
    assert doc["traceEvents"][0]["ph"] == "M"
    assert data.startswith(b'{"traceEvents"')
    xs = sorted((e for e in doc["traceEvents"] if e["ph"] == "X"), key=lambda e: e["ts"])
    assert [(x["ts"], x["dur"]) for x in xs] == [(0.0, 0.457), (0.878, 1.0)]
    assert doc["metadata"]["base_time_ns"] == "1712345678123"  # µs → ns


def test_untrusted_names_survive(tmp_path: Path) -> None:
    evil = ["</script><script>alert(1)</script>", 'naïve ✓ 内核 "quoted" \\ back', "\u2028line"]
    doc, data = roundtrip(tmp_path, [X(n, "cpu_op", i * 10, 5) for i, n in enumerate(evil)])
    assert validate_bytes(data) == []
    assert "内核".encode() in data  # written as UTF-8, not \\u escapes
    assert sorted(e["name"] for e in doc["traceEvents"] if e["ph"] == "X") == sorted(evil)


def test_counters_and_steps_tracks(tmp_path: Path) -> None:
    events = [
        X("execute_context_2(40)_generation_0(0)", "user_annotation", 0, 50),
        X("execute_context_0(0)_generation_2(2)", "user_annotation", 60, 20),
        X("aten::mm", "cpu_op", 1, 30),
        {
            "ph": "i",
            "s": "t",
            "name": "[memory]",
            "pid": 100,
            "tid": 1,
            "ts": 2,
            "args": {
                "Total Allocated": 1024,
                "Total Reserved": 4096,
                "Device Type": 1,
                "Device Id": 0,
                "Bytes": 1024,
                "Addr": 1,
            },
        },
        {
            "ph": "i",
            "s": "t",
            "name": "[memory]",
            "pid": 100,
            "tid": 1,
            "ts": 3,
            "args": {
                "Total Allocated": 0,
                "Total Reserved": 4096,
                "Device Type": 1,
                "Device Id": 0,
                "Bytes": -1024,
                "Addr": 1,
            },
        },
    ]
    doc, data = roundtrip(tmp_path, events)
    assert validate_bytes(data) == []
    steps = [e for e in doc["traceEvents"] if e["ph"] == "X" and e["tid"] == 1]
    assert [e["name"] for e in steps] == ["prefill step 0 (40 tok)", "decode step 1 (2 tok)"]
    assert steps[0]["args"]["prefill_reqs"] == 2
    counters = [(e["name"], e["ts"], e["args"]["value"]) for e in doc["traceEvents"] if e["ph"] == "C"]
    assert ("device_allocated_bytes", 2.0, 1024.0) in counters
    assert ("device_allocated_bytes", 3.0, 0.0) in counters
    assert ("device_reserved_bytes", 2.0, 4096.0) in counters
    # the reserved total did not change at ts 3: a repeated sample draws nothing and is left out
    assert [c for c in counters if c[0] == "device_reserved_bytes"] == [("device_reserved_bytes", 2.0, 4096.0)]


@pytest.mark.parametrize(
    "doc,problem",
    [
        (b'\xef\xbb\xbf{"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 1}]}', "BOM"),
        (b'{"displayTimeUnit": "ns", "traceEvents": []}', "traceEvents first"),
        (b'{"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0}]}', "without a numeric dur"),
        (b'{"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": -1}]}', "negative dur"),
        (b'{"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0.12345, "dur": 1}]}', "3 decimals"),
        (b'{"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": NaN, "dur": 1}]}', "not valid JSON"),
        (b'{"traceEvents": [{"ph": "X", "name": "a", "pid": -4, "tid": 1, "ts": 0, "dur": 1}]}', "0..2^32-1"),
        (
            b'{"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 10},'
            b'{"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": 5, "dur": 10}]}',
            "partially overlaps",
        ),
        (
            b'{"traceEvents": [{"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": 5, "dur": 1},'
            b'{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 1}]}',
            "not sorted",
        ),
        (
            b'{"traceEvents": [{"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "x"}},'
            b'{"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "y"}}]}',
            "exactly one",
        ),
        (b'{"traceEvents": [{"ph": "C", "name": "c", "pid": 1, "ts": 0, "args": {}}]}', "counter without args"),
        (
            b'{"traceEvents": [{"ph": "C", "name": "c", "pid": 1, "ts": 0, "args": {"a": 1}},'
            b'{"ph": "C", "name": "c", "pid": 1, "ts": 1, "args": {"b": 1}}]}',
            "series set",
        ),
        (b'{"traceEvents": [{"ph": "b", "name": "c", "pid": 1, "ts": 0, "cat": "x"}]}', "without id"),
    ],
)
def test_validator_catches(doc: bytes, problem: str) -> None:
    problems = validate_bytes(doc)
    assert any(problem in p for p in problems), problems


def test_validator_accepts_nested_and_touching() -> None:
    doc = (
        b'{"traceEvents": [{"ph": "M", "name": "process_name", "pid": 1, "tid": 1, "args": {"name": "r"}},'
        b'{"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "t"}},'
        b'{"ph": "X", "name": "p", "pid": 1, "tid": 1, "ts": 0, "dur": 10},'
        b'{"ph": "X", "name": "c", "pid": 1, "tid": 1, "ts": 0, "dur": 10},'
        b'{"ph": "X", "name": "d", "pid": 1, "tid": 1, "ts": 10, "dur": 5}]}'
    )
    assert validate_bytes(doc) == []


def test_profile_bundle_roundtrip(tmp_path: Path) -> None:
    """profile.npz keeps every column and the run metadata; analysing it gives the same summary."""
    src = tmp_path / "in.json"
    src.write_text(
        json.dumps(
            {
                "schemaVersion": 1,
                "traceEvents": [
                    X("execute_context_1(8)_generation_0(0)", "user_annotation", 0, 100),
                    X("_C::onednn_mm", "cpu_op", 1, 50),
                    X("naïve op", "cpu_op", 60, 10),
                ],
            }
        ),
        encoding="utf-8",
    )
    profile, summary = analyze([src])
    written = export(profile, summary, tmp_path / "out", ["bundle", "json"])
    again, summary2 = analyze([written["bundle"]])
    for col in EVENT_SCHEMA:
        assert np.array_equal(again.events[col], profile.events[col]), col
    assert again.strings.strings == profile.strings.strings
    assert summary2.fused_ops == summary.fused_ops
    assert summary2.steps == summary.steps


def test_merge_aligns_time_bases() -> None:
    a, b = Profile(base_ns=1_000), Profile(base_ns=1_500)
    for p, name, rank in ((a, "x", 0), (b, "y", 1)):
        p.events = Table(
            EVENT_SCHEMA,
            {
                "name": [p.strings.intern(name)],
                "kind": [K_KERNEL if rank else K_CPU_OP],
                "start": [10],
                "dur": [5],
                "rank": [rank],
            },
        )
    m = Profile.merge([a, b])
    assert m.base_ns == 1_000
    assert m.events["start"].tolist() == [10, 510]
    assert m.strings.lookup(m.events["name"]) == ["x", "y"]


@pytest.mark.parametrize(
    "doc,problem",
    [
        (
            b'{"traceEvents": [{"ph": "X", "name": "\\ud83d\\ude00", "pid": 1, "tid": 1, "ts": 0, "dur": 1}]}',
            "surrogate",
        ),
        (
            b'{"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 1, '
            b'"args": {"big": 1152921504606846976}}]}',
            "beyond 2^53",
        ),
        (b'{"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 1}]}', "no thread_name"),
        (b'{"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 1}]}', "no process_name"),
        (b'{"traceEvents": [{"ph": "T", "name": "a", "pid": 1, "tid": 1, "ts": 0}]}', "phase 'T'"),
        (
            b'{"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1712345678901234.5, "dur": 1}]}',
            "not relative",
        ),
        (
            b'{"traceEvents": [{"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "ts": 5, "args": {"name": "x"}}]}',
            "metadata with a ts",
        ),
    ],
)
def test_validator_catches_more(doc: bytes, problem: str) -> None:
    problems = validate_bytes(doc)
    assert any(problem in p for p in problems), problems
