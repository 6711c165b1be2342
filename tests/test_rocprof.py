"""rocprofv3: the real JSON output (its totals are the records' own sums), synthetic JSON of
ROCm 7 and 6.2 and the rocpd database of the same run (steps from ROCTx ranges, RCCL calls as
collectives, GPU agents as ranks), and files that only look like it."""

from __future__ import annotations

import gzip
import json
import sqlite3
from collections import Counter

import numpy as np
import pytest
import real_data
from cli_run import invoke, one_line_error

from xpu_profiler import analysis
from xpu_profiler.core.profile import K_KERNEL, PHASES
from xpu_profiler.knowledge.fused_ops import FUSED_OPS
from xpu_profiler.readers import load
from xpu_profiler.summary import load_summary
from xpu_profiler.testing import gen_rocprof
from xpu_profiler.testing.vendor_workload import Workload

SAMPLE = "other-formats/rocprofv3-mi355x-8gpu-training.json.gz"


def test_the_real_output_read_whole(tmp_path):
    path = real_data.need(SAMPLE)
    (tool,) = json.loads(gzip.decompress(path.read_bytes()))["rocprofiler-sdk-tool"]
    kd = tool["buffer_records"]["kernel_dispatch"]
    symbols = {k["kernel_id"]: k["formatted_kernel_name"] for k in tool["kernel_symbols"]}
    gpu_of = {a["id"]["handle"]: a for a in tool["agents"] if a["type"] == 2}
    agents = {k["dispatch_info"]["agent_id"]["handle"] for k in kd}
    by_symbol = Counter(symbols[k["dispatch_info"]["kernel_id"]] for k in kd)

    res = invoke("analyze", path, "-o", tmp_path / "o", "--format", "json")
    assert res.exit_code == 0, res.output
    s = load_summary(tmp_path / "o" / "summary.json")
    assert s.totals.op_time_ns == sum(k["end_timestamp"] - k["start_timestamp"] for k in kd)
    assert s.totals.events == len(kd)
    (agent,) = agents  # every dispatch ran on one GPU: that GPU's index is the rank
    src = s.run.sources[0]
    assert src.format == "rocprofv3" and src.rank == gpu_of[agent]["gpu_index"] == 0
    assert src.details["devices"] == [gpu_of[agent]["product_name"]] and s.device is not None
    assert s.device.name == "AMD Instinct MI350X"
    rows = {r.fused_op: r.count for r in s.fused_ops}
    # ROCm's blit kernels are its copies and fills
    assert rows["memcpy"] == by_symbol["__amd_rocclr_copyBuffer"]
    assert rows["memset"] == by_symbol["__amd_rocclr_fillBufferAligned"]
    assert rows["communication"] == sum(n for k, n in by_symbol.items() if k.startswith("ncclDevKernel"))


@pytest.fixture(scope="module")
def run_json(tmp_path_factory):
    d = tmp_path_factory.mktemp("rocprof")
    truth = gen_rocprof.write_json(d / "json7", Workload())
    gen_rocprof.write_json(d / "json62", Workload(), release="6.2")
    gen_rocprof.write_rocpd(d / "run.db", Workload())
    # both processes in one file's list (rocprofv3 writes one per process; a merge of them)
    tools = [
        json.loads((d / "json7" / f"{pid}_results.json").read_text())["rocprofiler-sdk-tool"] for pid in (1000, 1001)
    ]
    (d / "merged").mkdir()
    (d / "merged" / "results.json").write_text(json.dumps({"rocprofiler-sdk-tool": tools[0] + tools[1]}))
    return d, truth


def test_both_releases_read_alike(run_json):
    """ROCm 6.2 numbers the record kinds otherwise, names its ranges roctxRangePushA and writes
    no stream or GPU index: the same run reads the same."""
    d, truth = run_json
    a, b = load([d / "json7"]), load([d / "json62"])
    assert len(a.events) == len(b.events) > 0
    for col in ("kind", "start", "dur", "rank", "device", "corr", "flops"):
        assert np.array_equal(a.events[col], b.events[col]), col
    assert a.strings.lookup(a.events["name"]) == b.strings.lookup(b.events["name"])


@pytest.mark.parametrize("source", ["json7", "json62", "run.db", "merged"])
def test_steps_collectives_and_ranks(run_json, source):
    """(``merged``: one file listing both processes: each its rank, as their two files.)"""
    d, truth = run_json
    profile, s = analysis.analyze([d / source])
    st = profile.steps
    order = np.lexsort((st["start"], st["rank"]))
    got = [(int(st["rank"][i]), int(st["start"][i]) + profile.base_ns, PHASES[st["phase"][i]]) for i in order]
    want = [(t["rank"], t["start"], t["phase"]) for t in sorted(truth["steps"], key=lambda t: (t["rank"], t["start"]))]
    assert got == want  # the ROCTx step ranges, on CLOCK_BOOTTIME as rocprofv3 recorded them
    assert s.totals.device_kernel_ns == truth["kernel_ns"] and sorted(profile.ranks) == [0, 1]
    # each all-reduce kernel was launched from inside an ncclAllReduce call: it is that collective
    ev = profile.events
    coll = ev["comm"] >= 0
    assert int(coll.sum()) == truth["rccl_kernels"] and (ev["kind"][coll] == K_KERNEL).all()
    assert set(profile.strings.lookup(profile.comms["coll"])) == {"allreduce"}
    assert set(ev["fused"][coll].tolist()) == {FUSED_OPS.index("communication")}


def test_marks_are_counted(run_json):
    d, _ = run_json
    profile = load([d / "json7"])
    assert [w for w in profile.run["warnings"] if "ROCTx mark" in w] == [
        f"{f}_results.json: not used by the analysis: 1 ROCTx mark(s) or control call(s) with no span"
        for f in (1000, 1001)
    ]


def test_what_only_looks_like_it(tmp_path):
    legacy = tmp_path / "trace.rpd"  # rocmProfileData: rocpd_ tables of another program
    with sqlite3.connect(legacy) as c:
        c.execute("CREATE TABLE rocpd_metadata (id, tag, value)")
        c.execute("CREATE TABLE rocpd_op (id, gpuId, queueId, start, end)")
        c.execute("CREATE VIEW kernels AS SELECT * FROM rocpd_op")
        c.execute("CREATE VIEW regions AS SELECT * FROM rocpd_op")
    assert "neither an Nsight Systems export" in one_line_error(invoke("analyze", legacy, "-o", tmp_path / "o"))
    bad = tmp_path / "x_results.json"
    bad.write_text(
        json.dumps({"rocprofiler-sdk-tool": [{"buffer_records": {"kernel_dispatch": [{"start_timestamp": "soon"}]}}]})
    )
    err = one_line_error(invoke("analyze", bad, "-o", tmp_path / "o"))
    assert "not a valid rocprofv3 output" in err and "start_timestamp" in err
    empty = tmp_path / "y_results.json"
    empty.write_text(json.dumps({"rocprofiler-sdk-tool": [{"metadata": {"pid": 3}}]}))
    assert "nothing to analyse" in one_line_error(invoke("analyze", empty, "-o", tmp_path / "o"))


@pytest.fixture(scope="module")
def real_cut():
    """The real output cut to its first 300 dispatches (the tests below spoil some of them)."""
    path = real_data.need(SAMPLE)
    doc = json.loads(gzip.decompress(path.read_bytes()))
    kd = doc["rocprofiler-sdk-tool"][0]["buffer_records"]["kernel_dispatch"]
    del kd[300:]
    return doc


ODD_AT = (10, 150, 290)  # the dispatches a test spoils


def _spoil(rec: dict, how: str) -> dict | None:
    rec = json.loads(json.dumps(rec))
    if how == "text time":
        rec["start_timestamp"] = "abc"
    elif how == "null record":
        return None
    elif how == "number for an object":
        rec["stream_id"] = 5
    elif how == "uint64 end":
        rec["end_timestamp"] = 2**64 - 1  # a legal uint64, beyond int64
    elif how == "huge start":
        rec["start_timestamp"] = 10**25
    elif how == "int64 max end":
        rec["end_timestamp"] = 2**63 - 1
    elif how == "11.6 days":
        rec["end_timestamp"] = rec["start_timestamp"] + 10**15
    return rec


@pytest.mark.parametrize(
    "how, why",
    [
        ("text time", "record(s) of an odd shape (first: Expected `int`, got `str` - at `$.start_timestamp`)"),
        ("null record", "record(s) of an odd shape (first: Expected `object`, got `null`)"),
        ("number for an object", "record(s) of an odd shape (first: Expected `object | null`, got `int`"),
        ("uint64 end", "row(s) with a value beyond int64 in end_timestamp"),
        ("huge start", "row(s) with a value beyond int64 in start_timestamp"),
        ("int64 max end", "row(s) with a time beyond any clock (negative, or past 2^62 ns)"),
        ("11.6 days", "row(s) with a duration of 11.6 days or more (beyond any real run)"),
    ],
    ids=lambda x: x if " " in x and "(" not in x else "",
)
def test_odd_dispatches_are_skipped_and_counted(tmp_path, real_cut, how, why):
    """A dispatch of an odd shape or with a time no run has is skipped, counted in one warning
    with its true reason; the others are read, their totals their own sums."""
    doc = json.loads(json.dumps(real_cut))
    kd = doc["rocprofiler-sdk-tool"][0]["buffer_records"]["kernel_dispatch"]
    kept = [r for i, r in enumerate(kd) if i not in ODD_AT]
    for i in ODD_AT:
        kd[i] = _spoil(kd[i], how)
    path = tmp_path / "odd_results.json"
    path.write_text(json.dumps(doc))
    _, s = analysis.analyze([path])
    lines = [w for w in s.warnings if "kernel_dispatch" in w]
    assert len(lines) == 1 and lines[0].startswith(f"odd_results.json: skipped {len(ODD_AT)} kernel_dispatch {why}")
    assert s.totals.events == len(kept)
    kernel_ns = sum(r["end_timestamp"] - r["start_timestamp"] for r in kept)
    assert s.totals.op_time_ns == s.totals.device_kernel_ns == kernel_ns
    every = [r for r in kd if isinstance(r, dict)]  # nothing usable left: one line naming the file
    doc["rocprofiler-sdk-tool"][0]["buffer_records"]["kernel_dispatch"] = [_spoil(r, how) for r in every[:2]]
    path.write_text(json.dumps(doc))
    err = one_line_error(invoke("analyze", path, "-o", tmp_path / "o"))
    assert f"{path.name}: " in err and f"skipped 2 kernel_dispatch {why}" in err


def test_odd_kernel_symbols_are_skipped_and_their_kernels_named_by_id(tmp_path, real_cut):
    """A kernel symbol of an odd shape (a null name, a number for the object) is skipped and
    counted in one warning; every dispatch is read, those of its kernel named by its id."""
    doc = json.loads(json.dumps(real_cut))
    tool = doc["rocprofiler-sdk-tool"][0]
    kd = tool["buffer_records"]["kernel_dispatch"]
    used = list(dict.fromkeys(r["dispatch_info"]["kernel_id"] for r in kd))[:2]  # two kernels dispatched
    at = [i for i, sym in enumerate(tool["kernel_symbols"]) if sym["kernel_id"] in used]
    spoiled = [tool["kernel_symbols"][i]["kernel_id"] for i in at]
    tool["kernel_symbols"][at[0]]["kernel_name"] = None
    tool["kernel_symbols"][at[1]] = 17
    path = tmp_path / "odd_results.json"
    path.write_text(json.dumps(doc))
    prof, s = analysis.analyze([path])
    lines = [w for w in s.warnings if "kernel_symbols" in w]
    assert len(lines) == 2 and lines[0].startswith("odd_results.json: skipped 2 kernel_symbols record(s) of an odd")
    assert "their kernels named by id" in lines[0]
    assert s.totals.events == len(kd)
    kernels = prof.events["name"][prof.events["kind"] == K_KERNEL]
    names = Counter(prof.strings.strings[i] for i in kernels.tolist())
    rows = [sum(r["dispatch_info"]["kernel_id"] == k for r in kd) for k in spoiled]
    assert [names[f"kernel {k}"] for k in spoiled] == rows and min(rows) > 0
    assert lines[1].startswith(
        f"odd_results.json: {sum(rows):,} kernel dispatch(es) of 2 kernel(s) kernel_symbols does not"
    )


def test_records_of_kinds_the_file_does_not_name_are_counted(run_json, tmp_path):
    """A file whose table of record kinds is gone: its HIP calls cannot be told from other
    APIs' calls; they are skipped, and counted in a warning."""
    d, _ = run_json
    doc = json.loads((d / "json7" / "1000_results.json").read_text())
    (tool,) = doc["rocprofiler-sdk-tool"]
    hip = len(tool["buffer_records"]["hip_api"])
    del tool["strings"]["buffer_records"]
    (tmp_path / "1000_results.json").write_text(json.dumps(doc))
    _, s = analysis.analyze([tmp_path / "1000_results.json"])
    said = [w for w in s.warnings if "hip_api record(s) of a kind" in w]
    assert said == [
        f"1000_results.json: skipped {hip:,} hip_api record(s) of a kind its strings.buffer_records table does not name"
    ]
