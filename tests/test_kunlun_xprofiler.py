"""XProfiler traces (`xprofiler.trace.json` + `xprofiler.settings.json`).

No public sample exists; the files here follow what is known: Chrome Trace Event
JSON (the docs open it in chrome://tracing / Perfetto) carrying the Kunlun
runtime's XPTI record types API, KERNEL, MEMCPY and WAIT with device id, stream id
and a correlation token.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from xpu_profiler.core.errors import TraceError
from xpu_profiler.core.profile import K_KERNEL, K_MEMCPY, K_RUNTIME, K_UNKNOWN
from xpu_profiler.readers import ReadOptions, expand, find_reader, load
from xpu_profiler.readers.kunlun import xprofiler

FC = "_ZN10xblas_xpu313fc_cdnn_inferI7float16S1_S1_S1_ffffLi1EEEvPKT_PKT0_PT2_i"
SETTINGS = {
    "profiler_api_trace": True,
    "sse_trace": True,
    "cluster_trace": False,
    "sdnn_trace": False,
    "resolution_ns": 500,
    "buffer_size_mb": 256,
    "xpu": [0],
}


def trace_doc(t0: float = 1000.0) -> dict:
    """Two launches with their kernels, copies, a wait, a B/E pair, counters and oddities."""
    ev = [
        {"ph": "M", "name": "process_name", "pid": 4242, "args": {"name": "python3 [4242]"}},
        {"ph": "M", "name": "process_name", "pid": 9000, "args": {"name": "XPU 1"}},
        {"ph": "M", "name": "thread_name", "pid": 9000, "tid": 3, "args": {"name": "stream 3"}},
        # API → KERNEL, linked by the XPTI token
        {
            "ph": "X",
            "cat": "API",
            "name": "xpu_launch_async",
            "pid": 4242,
            "tid": 4243,
            "ts": t0,
            "dur": 4.5,
            "args": {"token": 17},
        },
        {
            "ph": "X",
            "cat": "KERNEL",
            "name": FC,
            "pid": 9000,
            "tid": 3,
            "ts": t0 + 6.0,
            "dur": 120.25,
            "args": {"stream_id": 3, "token": 17},
        },
        {
            "ph": "X",
            "cat": "API",
            "name": "xpu_launch_async",
            "pid": 4242,
            "tid": 4243,
            "ts": t0 + 10.0,
            "dur": 3.0,
            "args": {"token": 18},
        },
        {
            "ph": "X",
            "cat": "KERNEL",
            "name": "_Z14kl3_all_reduceI7float16EvPT_i",
            "pid": 9000,
            "tid": 3,
            "ts": t0 + 130.0,
            "dur": 40.0,
            "args": {"device_id": 1, "stream_id": 3, "token": 18},
        },
        # a device copy (has a stream) and the host side of one (pid/tid only)
        {
            "ph": "X",
            "cat": "MEMCPY",
            "name": "memcpy_h2d",
            "pid": 9000,
            "tid": 1,
            "ts": t0 + 200.0,
            "dur": "8.5",
            "args": {"stream": "1", "bytes": 4096},
        },
        {"ph": "X", "cat": "MEMCPY", "name": "xpu_memcpy", "pid": 4242, "tid": 4243, "ts": t0 + 199.0, "dur": 10.0},
        # host waits for the device
        {"ph": "X", "cat": "WAIT", "name": "xpu_wait", "pid": 4242, "tid": 4243, "ts": t0 + 211.0, "dur": 30.0},
        # B/E pair without a category: an xpu_* API name
        {"ph": "B", "name": "xpu_malloc", "pid": 4242, "tid": 4243, "ts": t0 + 250.0},
        {"ph": "E", "pid": 4242, "tid": 4243, "ts": t0 + 252.0},
        # things we do not know: kept as unknown
        {
            "ph": "X",
            "cat": "SDNN",
            "name": "sdnn_cluster_busy",
            "pid": 9000,
            "tid": 7,
            "ts": t0 + 6.0,
            "dur": 100.0,
            "args": {"cluster": 2},
        },
        {"ph": "X", "cat": "SSE", "name": "sse_event", "pid": 9000, "tid": 8, "ts": t0 + 7.0, "dur": 1.0},
        # counters, instants, flows, junk
        {"ph": "C", "name": "hbm_bandwidth", "pid": 9000, "ts": t0 + 100.0, "args": {"read": 1.5e11, "write": 7e10}},
        {"ph": "i", "name": "marker", "pid": 4242, "tid": 4243, "ts": t0 + 1.0, "s": "t"},
        {"ph": "s", "id": 17, "name": "launch", "pid": 4242, "tid": 4243, "ts": t0 + 1.0},
        {"ph": "f", "id": 17, "name": "launch", "pid": 9000, "tid": 3, "ts": t0 + 6.0},
        {"ph": "X", "name": "no_time"},
        {"ph": "E", "pid": 1, "tid": 1, "ts": t0},
        "not an event",
        {"ph": "Q", "name": "unknown phase", "ts": t0},
    ]
    return {"traceEvents": ev, "displayTimeUnit": "ns", "xprofiler_version": "2.0.2.0"}


def write_run(d: Path, doc: dict | None = None, settings: bool = True, gz: bool = False) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    if settings:
        (d / "xprofiler.settings.json").write_text(json.dumps(SETTINGS))
    raw = json.dumps(doc or trace_doc()).encode()
    p = d / ("xprofiler.trace.json.gz" if gz else "xprofiler.trace.json")
    p.write_bytes(gzip.compress(raw) if gz else raw)
    return p


def _by_name(prof) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for i in range(len(prof.events)):
        out.setdefault(prof.name_of(int(prof.events["name"][i])), []).append(i)
    return out


def test_events_are_mapped_by_kind_device_stream_and_correlation(tmp_path):
    p = write_run(tmp_path / "run")
    assert find_reader(p).NAME == "xprofiler"
    prof = xprofiler.read(p, ReadOptions())
    ev, idx = prof.events, _by_name(prof)
    assert len(ev) == 10
    assert FC not in idx  # demangled, as the [XPURT_PROF] reader does
    k1 = idx["void xblas_xpu3::fc_cdnn_infer<float16, float16, float16, float16, float, float, float, float, 1>"][0]
    k2 = idx["void kl3_all_reduce<float16>"][0]
    assert ev["kind"][k1] == K_KERNEL and ev["kind"][k2] == K_KERNEL
    assert (ev["dur"][k1], ev["start"][k1]) == (120250, 1006000)
    assert ev["device"][k1] == 1  # from the process name "XPU 1"
    assert ev["device"][k2] == 1  # from args.device_id
    assert ev["track"][k1] == 3 and ev["track"][k2] == 3
    launches = idx["xpu_launch_async"]
    assert [int(ev["kind"][i]) for i in launches] == [K_RUNTIME, K_RUNTIME]
    assert sorted(int(ev["corr"][i]) for i in launches) == [17, 18]
    assert (ev["corr"][k1], ev["corr"][k2]) == (17, 18)
    assert ev["track"][launches[0]] == 4243 and ev["device"][launches[0]] == -1

    dev_copy, host_copy = idx["memcpy_h2d"][0], idx["xpu_memcpy"][0]
    assert ev["kind"][dev_copy] == K_MEMCPY and ev["dur"][dev_copy] == 8500 and ev["track"][dev_copy] == 1
    assert ev["kind"][host_copy] == K_RUNTIME
    assert ev["kind"][idx["xpu_wait"][0]] == K_RUNTIME and ev["dur"][idx["xpu_wait"][0]] == 30000
    malloc = idx["xpu_malloc"][0]
    assert ev["kind"][malloc] == K_RUNTIME and ev["dur"][malloc] == 2000 and ev["start"][malloc] == 1250000

    for name, cat in (("sdnn_cluster_busy", "SDNN"), ("sse_event", "SSE")):
        i = idx[name][0]
        assert ev["kind"][i] == K_UNKNOWN and prof.name_of(int(ev["cat"][i])) == cat
    assert any("2 of 10 XProfiler events have no known kind" in w for w in prof.run["warnings"])

    c = prof.counters
    got = {prof.name_of(int(n)): (int(t), v) for n, t, v in zip(c["name"], c["t"], c["value"])}
    assert got == {"hbm_bandwidth.read": (1100000, 1.5e11), "hbm_bandwidth.write": (1100000, 7e10)}

    src = prof.run["sources"][0]
    assert src["by_kind"] == {"kernel": 2, "runtime": 5, "memcpy": 1, "memset": 0, "communication": 0, "unknown": 2}
    assert (src["instant"], src["flow"], src["begin_end"]) == (1, 2, 1)
    assert src["skipped"] == 3 and src["unmatched_begin_end"] == 1
    assert prof.run["xprofiler_settings"] == SETTINGS
    assert prof.run["xprofiler_processes"]["9000"] == "XPU 1"
    assert prof.has_timeline is True
    assert prof.base_ns == 0


def test_kinds_add_up(tmp_path):
    prof = xprofiler.read(write_run(tmp_path), ReadOptions())
    kinds = prof.events["kind"]
    assert {
        "kernel": int((kinds == K_KERNEL).sum()),
        "runtime": int((kinds == K_RUNTIME).sum()),
        "memcpy": int((kinds == K_MEMCPY).sum()),
        "unknown": int((kinds == K_UNKNOWN).sum()),
    } == {"kernel": 2, "runtime": 5, "memcpy": 1, "unknown": 2}
    # device-busy time: the two kernels and the device copy, in ns
    busy = prof.events["dur"][np.isin(kinds, [K_KERNEL, K_MEMCPY])].sum()
    assert int(busy) == 120250 + 40000 + 8500


def test_epoch_timestamps_give_an_absolute_base(tmp_path):
    t0 = 1_764_672_000_000_000.0  # 2025-12-02 in microseconds
    prof = xprofiler.read(write_run(tmp_path / "run", trace_doc(t0)), ReadOptions(rank=3))
    assert prof.base_ns == int(t0 * 1000)
    assert int(prof.events["start"].min()) == 0
    assert set(prof.events["rank"].tolist()) == {3}
    # a rank_N directory names the rank
    prof = xprofiler.read(write_run(tmp_path / "rank_5", trace_doc(t0)), ReadOptions(rank=3))
    assert set(prof.events["rank"].tolist()) == {5}


def test_sniff_tells_xprofiler_from_kineto(tmp_path):
    run = tmp_path / "run"
    p = write_run(run, gz=True)
    assert find_reader(p).NAME == "xprofiler"
    assert find_reader(run / "xprofiler.settings.json").NAME == "xprofiler"

    # a Kineto trace is never claimed, even under XProfiler's file name next to a settings file
    kineto = {
        "schemaVersion": 1,
        "deviceProperties": [],
        "traceEvents": [
            {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1.0, "dur": 2.0},
            {"ph": "X", "cat": "kernel", "name": "xpu_launch_async", "pid": 0, "tid": 7, "ts": 2.0, "dur": 1.0},
        ],
    }
    k = run / "trace_rank0.json"
    k.write_text(json.dumps(kineto))
    assert find_reader(k).NAME == "kineto"
    k2 = tmp_path / "other" / "xprofiler.trace.json"
    k2.parent.mkdir()
    k2.write_text(json.dumps(kineto))
    assert find_reader(k2).NAME == "kineto"

    # a plain Chrome trace without Kunlun markers, name or settings: not XProfiler's
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps({"traceEvents": [{"ph": "X", "name": "f", "ts": 0, "dur": 1, "pid": 1, "tid": 1}]}))
    assert not xprofiler.sniff(plain, plain.read_bytes())
    # ... but one with Kunlun runtime names is, whatever its file name
    xp = tmp_path / "capture.json"
    xp.write_text(json.dumps({"traceEvents": [{"ph": "X", "name": "xpu_wait", "ts": 0, "dur": 1, "pid": 1, "tid": 1}]}))
    assert find_reader(xp).NAME == "xprofiler"


def test_directory_load_attaches_settings_and_keeps_events(tmp_path):
    run = tmp_path / "run"
    write_run(run)
    files = expand([run])
    assert sorted((f.name, m.NAME) for f, m in files) == [
        ("xprofiler.settings.json", "xprofiler"),
        ("xprofiler.trace.json", "xprofiler"),
    ]
    prof = load([run])
    assert len(prof.events) == 10
    assert prof.run["xprofiler_settings"] == SETTINGS


def test_settings_file_alone_is_one_line_saying_the_trace_is_missing(tmp_path):
    """Metadata and no event: no empty report, the line says what is missing."""
    s = tmp_path / "xprofiler.settings.json"
    s.write_text(json.dumps(SETTINGS))
    with pytest.raises(
        TraceError, match=r"no event to analyse \(xprofiler.settings.json: XProfiler settings without the trace"
    ):
        load([s])


def test_bare_event_array_is_accepted(tmp_path):
    p = tmp_path / "xprofiler.trace.json"
    p.write_text(json.dumps(trace_doc()["traceEvents"]))
    assert len(xprofiler.read(p, ReadOptions()).events) == 10


def test_broken_files_name_the_file(tmp_path):
    run = tmp_path / "run"
    p = write_run(run)
    p.write_bytes(p.read_bytes()[:300])
    with pytest.raises(TraceError) as e:
        load([p])
    assert str(p) in str(e.value) and "truncated JSON" in str(e.value)

    q = tmp_path / "xprofiler.trace.json"
    q.write_text('{"traceEvents": [{"ph": "X", "ts": 1, "dur": 2,}]}')
    with pytest.raises(TraceError, match=f"{q}: malformed JSON"):
        xprofiler.read(q, ReadOptions())

    r = tmp_path / "x" / "xprofiler.trace.json"
    r.parent.mkdir()
    r.write_text('{"ph": "X", "events": []}')
    with pytest.raises(TraceError, match=f"{r}: JSON is not an XProfiler trace"):
        xprofiler.read(r, ReadOptions())

    bad_settings = tmp_path / "y" / "xprofiler.settings.json"
    bad_settings.parent.mkdir()
    bad_settings.write_text("{not json")
    with pytest.raises(TraceError, match=f"{bad_settings}: XProfiler settings file is not valid JSON"):
        load([bad_settings])


def test_cli_analyze_xprofiler_run(tmp_path):
    run = tmp_path / "run"
    write_run(run)
    out = tmp_path / "out"
    res = subprocess.run(
        [sys.executable, "-m", "xpu_profiler", "analyze", str(run), "-o", str(out)],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["has_timeline"] is True
    assert summary["totals"]["device_kernel_ns"] == 120250 + 40000
    names = {k["name"] for k in summary["top_kernels"]}
    assert "void kl3_all_reduce<float16>" in names
    assert (
        subprocess.run(
            [sys.executable, "-m", "xpu_profiler", "validate", str(out / "trace.json.gz")],
            capture_output=True,
            text=True,
            timeout=120,
        ).returncode
        == 0
    )


def test_events_of_odd_shapes_never_fail_the_read(tmp_path):
    odd = [
        {"ph": "M", "name": "process_name", "pid": [1, 2], "args": ["not", "a", "dict"]},
        {
            "ph": "X",
            "cat": ["KERNEL"],
            "name": {"n": 1},
            "pid": {"a": 1},
            "tid": [3],
            "ts": "12.5",
            "dur": 1,
            "args": {"stream_id": {"x": 1}, "device_id": "0x2", "token": "abc"},
        },
        {"ph": "X", "name": "nan_time", "ts": "NaN", "dur": 1},
        {"ph": "X", "name": "inf_dur", "ts": 1, "dur": "inf"},
        {"ph": "X", "name": "bool_ts", "ts": True, "dur": 1},
        {"ph": "B", "name": "b", "pid": [1], "tid": None, "ts": 1},
        {"ph": "E", "pid": [1], "tid": None, "ts": 4},
        {"ph": "C", "name": 5, "ts": 2, "args": {"v": "7", "w": [1]}},
        {"ph": ["X"], "ts": 1},
        None,
        3,
        [],
    ]
    p = tmp_path / "xprofiler.trace.json"
    p.write_text(json.dumps({"traceEvents": odd}))
    prof = xprofiler.read(p, ReadOptions())
    ev = prof.events
    assert len(ev) == 2  # the one well-timed X event and the B/E pair
    i = int(np.flatnonzero(ev["start"] == 12500)[0])
    assert ev["dur"][i] == 1000 and ev["device"][i] == 2 and ev["corr"][i] == -1
    assert prof.run["sources"][0]["skipped"] == 7
    names = {prof.name_of(int(n)): float(v) for n, v in zip(prof.counters["name"], prof.counters["value"])}
    assert names == {"counter.v": 7.0}
