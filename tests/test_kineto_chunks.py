"""Chunked (and parallel) decoding of large traces gives exactly what one whole decode gives."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import real_data
from conftest import same_columns

from xpu_profiler.readers import ReadOptions, kineto, read_bytes
from xpu_profiler.readers.kineto import columns, decode, schema

ROOT = Path(__file__).resolve().parents[1]
REAL = real_data.path("cuda-ns-resolution-rank0.pt.trace.json.gz")


def whole(path: Path, monkeypatch):
    monkeypatch.setattr(decode, "CHUNK_BYTES", 1 << 40)
    return kineto.read(path, ReadOptions())


def same(a, b) -> None:
    same_columns(a, b)
    assert a.run["thread_names"] == b.run["thread_names"]


@pytest.mark.parametrize("workers", ["1", "2"])
def test_chunks_equal_whole(workers: str, monkeypatch) -> None:
    expect = whole(REAL, monkeypatch)
    monkeypatch.setattr(decode, "CHUNK_BYTES", 256 << 10)
    monkeypatch.setattr(decode, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setenv("XPU_PROFILER_WORKERS", workers)
    spans = decode.chunks(memoryview(decode.top_level(REAL, read_bytes(REAL))[1]), 256 << 10)
    assert len(spans) > 20
    same(kineto.read(REAL, ReadOptions()), expect)


def test_cut_inside_nested_args_falls_back(tmp_path: Path, monkeypatch) -> None:
    """`}, {` inside an event's args is no event boundary: the chunk fails, the whole decode runs."""
    events = []
    for i in range(400):
        events.append(
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": f"op{i % 7}",
                "pid": 1,
                "tid": 2,
                "ts": i * 10.0,
                "dur": 5.0,
                "args": {"External id": i, "Input Dims": [{"a": 1}, {"b": 2}, {"c": [{"d": 4}, {}]}]},
            }
        )
    events.append(
        {
            "ph": "i",
            "s": "t",
            "name": "[memory]",
            "pid": 1,
            "tid": 2,
            "ts": 7.0,
            "args": {"Total Allocated": 5, "Total Reserved": 9, "Device Type": 1},
        }
    )
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}, indent=1))
    expect = whole(path, monkeypatch)
    monkeypatch.setattr(decode, "CHUNK_BYTES", 97)
    calls = []
    real_whole = kineto.decode_whole
    monkeypatch.setattr(kineto, "decode_whole", lambda *a: calls.append(1) or real_whole(*a))
    got = kineto.read(path, ReadOptions())
    assert calls == [1]  # the chunked pass failed and the whole decode took over
    same(got, expect)
    assert len(got.events) == 400 and len(got.counters) == 2


def test_tagged_schema_equals_plain_schema() -> None:
    """The fast phase-tagged decode and the plain one give the same columns."""
    raw = decode.top_level_exact(REAL, read_bytes(REAL))[1]
    fast = columns.columns(REAL, schema.TAGGED_DECODER.decode(raw))
    plain = columns.columns(REAL, schema.EVENTS_DECODER.decode(raw))
    assert type(schema.TAGGED_DECODER.decode(raw)[0]) is not schema.Event
    for field in fast.__struct_fields__:
        a, b = getattr(fast, field), getattr(plain, field)
        if isinstance(a, np.ndarray):
            assert np.array_equal(a, b), field
        else:
            assert a == b, field


def test_unusual_phase_falls_back_to_plain_schema(tmp_path: Path) -> None:
    events = [
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1.0, "dur": 2.0},
        {"ph": "Q", "name": "from some other writer", "pid": 0, "tid": 7, "ts": 1.0},
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 5.0, "dur": 2.0},
    ]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    prof = kineto.read(path, ReadOptions())
    assert prof.events["dur"].tolist() == [2000, 2000]


@pytest.mark.parametrize("trace", real_data.kineto_files(), ids=lambda p: p.name)
def test_byte_search_finds_the_exact_events_array(trace: Path) -> None:
    """The quick byte search lands on the same array a full parse finds (INFO arrays after it)."""
    data = read_bytes(trace)
    located = decode.locate_events(data)
    assert located is not None
    assert bytes(located[1]) == bytes(decode.top_level_exact(trace, data)[1])


@pytest.mark.parametrize("workers", ["1", "2"])
def test_only_the_chunk_with_an_odd_event_is_decoded_tolerantly(workers: str, tmp_path: Path, monkeypatch) -> None:
    """One kernel of a real trace with a negative duration: the chunks around it keep the typed
    decode, only its chunk is decoded again, and the result is the trace without that event."""
    from xpu_profiler.readers.kineto import tolerant

    doc = json.loads(read_bytes(REAL))
    kernels = [i for i, e in enumerate(doc["traceEvents"]) if e.get("cat") == "kernel"]
    bad = kernels[len(kernels) // 2]
    good_path, odd_path = tmp_path / "good.json", tmp_path / "odd.json"
    name = doc["traceEvents"][bad]["name"]
    without = {**doc, "traceEvents": doc["traceEvents"][:bad] + doc["traceEvents"][bad + 1 :]}
    good_path.write_text(json.dumps(without))
    doc["traceEvents"][bad]["dur"] = -4.0
    odd_path.write_text(json.dumps(doc))

    monkeypatch.setattr(decode, "CHUNK_BYTES", 256 << 10)
    monkeypatch.setattr(decode, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setenv("XPU_PROFILER_WORKERS", workers)
    calls = []
    real = tolerant.tolerant_cols
    monkeypatch.setattr(decode, "tolerant_cols", lambda *a: calls.append(len(a[1])) or real(*a))
    expect = kineto.read(good_path, ReadOptions())
    assert calls == []  # a good trace never leaves the typed path
    got = kineto.read(odd_path, ReadOptions())
    n_chunks = len(decode.chunks(memoryview(decode.top_level(odd_path, read_bytes(odd_path))[1]), 256 << 10))
    assert n_chunks > 20
    if workers == "1":  # forked workers' calls are not seen here
        assert len(calls) == 1 and calls[0] <= (256 << 10) + (64 << 10)
    same(got, expect)
    assert got.run["warnings"] == [f"odd.json: skipped 1 event with a negative duration (first: #{bad} {name[:60]!r})"]


def test_flops_from_recorded_shapes_per_event() -> None:
    """Each GEMM's FLOPs come from its own Input Dims: repeated shapes (worked out once),
    the same shapes written with other spacing, other shapes, malformed ones, and a
    with_flops value that wins over the shapes."""

    def op(name, dims, **args):
        return {
            "ph": "X",
            "cat": "cpu_op",
            "name": name,
            "pid": 1,
            "tid": 1,
            "ts": 1.0,
            "dur": 1.0,
            "args": {"Input Dims": dims, **args},
        }

    evs = [
        op("aten::mm", [[4, 8], [8, 16]]),
        op("aten::mm", [[4, 8], [8, 16]]),
        op("aten::mm", [[2, 8], [8, 16]]),
        op("aten::addmm", [[16], [4, 8], [8, 16]]),
        op("aten::mm", [[4, 8], [9, 16]]),
        op("aten::mm", "not shapes"),
        op("aten::relu", [[4, 8], [8, 16]]),
        op("aten::mm", [[4, 8], [8, 16]], flops=7),
    ]
    raw = json.dumps(evs).encode()
    spaced = raw.replace(b"[[4, 8], [8, 16]]", b"[[4,8],\n [8,16]]", 1)
    expected = [2 * 4 * 8 * 16, 2 * 4 * 8 * 16, 2 * 2 * 8 * 16, 2 * 4 * 8 * 16, -1, -1, -1, 7]
    for data in (raw, spaced):
        cols = decode.decode_cols(data)
        assert cols.flops.tolist() == expected


def test_a_thread_named_by_a_text_is_one_thread_in_every_chunk(tmp_path: Path, monkeypatch) -> None:
    """Writers that name their threads (``"tid": "MainThread"``) give a text where an integer
    goes: the thread is one thread however the file is cut for reading. The same trace with
    the texts replaced by numbers is the reference: one chunk or many, the same analysis."""
    from xpu_profiler.analysis import analyze
    from xpu_profiler.testing import gen_trace

    src = tmp_path / "gen.json"
    gen_trace.generate(3000, str(src), seed=3)
    doc = json.loads(src.read_text())
    host = {e["tid"] for e in doc["traceEvents"] if e.get("cat") == "cpu_op"}
    assert len(host) == 1
    (main,) = host
    named, numbered = tmp_path / "named.json", tmp_path / "numbered.json"
    evs = doc["traceEvents"]
    every = max(1, len(evs) // 7)  # another named thread's short ops, spread over the file
    aux = [  # (no args: a plain host op)
        {k: v for k, v in evs[i].items() if k != "args"}
        | {"name": "aux::poll", "cat": "cpu_op", "dur": 0.5, "tid": "AuxThread"}
        for i in range(0, len(evs), every)
    ]
    body = sorted(evs + aux, key=lambda e: e.get("ts", 0))
    named.write_text(
        json.dumps({**doc, "traceEvents": [dict(e, tid="MainThread") if e.get("tid") == main else e for e in body]})
    )
    numbered.write_text(
        json.dumps({**doc, "traceEvents": [dict(e, tid=999) if e.get("tid") == "AuxThread" else e for e in body]})
    )
    monkeypatch.setattr(decode, "PARALLEL_MIN_BYTES", 0)
    ref = analyze([numbered])[1]
    for chunk in (1 << 40, 64 << 10):
        monkeypatch.setattr(decode, "CHUNK_BYTES", chunk)
        got = analyze([named])[1]
        assert [(f.fused_op, f.count, f.time_ns) for f in got.fused_ops] == [
            (f.fused_op, f.count, f.time_ns) for f in ref.fused_ops
        ], chunk
        assert got.attribution.share_by_source == ref.attribution.share_by_source, chunk
