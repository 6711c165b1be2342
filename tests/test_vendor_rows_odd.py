"""Rows of vendor profilers' tables (Nsight Systems, rocprofv3 JSON, CSV and rocpd) that are
odd or no GPU's: a text where an integer goes, an NVTX range still open when profiling stopped,
a device index no GPU has, a copy from host to host; and each GPU of a file listing several
processes said once."""

from __future__ import annotations

import csv
import json
import sqlite3
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest

from xpu_profiler import analysis
from xpu_profiler.core.profile import K_ANNOTATION, K_KERNEL, K_MEMCPY
from xpu_profiler.testing import gen_nsys, gen_rocprof, gen_rocprof_csv
from xpu_profiler.testing.vendor_workload import Workload

KERNEL, NVTX = "CUPTI_ACTIVITY_KIND_KERNEL", "NVTX_EVENTS"
NVTX_RANGES = "(59, 60, 70, 71)"  # NVTX_EVENTS.eventType of push/pop and start/end ranges (nsys's enum)
HANDLE = 2**32  # a device index no GPU has (a 64-bit handle where an index goes): int32 would wrap it to 0


def _sql(db: Path, q: str) -> list:
    with closing(sqlite3.connect(f"file:{db}?mode=ro&immutable=1", uri=True)) as c:
        return c.execute(q).fetchall()


def _spoil(db: Path, *updates: str) -> None:
    with closing(sqlite3.connect(db)) as c, c:
        for u in updates:
            c.execute(u)


def _export(tmp_path: Path) -> Path:
    db = tmp_path / "run.sqlite"
    gen_nsys.write(db, Workload())  # (its tables are created without column types, as any writer may)
    return db


def test_a_text_where_an_integer_goes_is_skipped_whatever_rows_are_beside_it(tmp_path):
    """A kernel's start stored as text of digits is no integer: its row is skipped and counted
    when every other row read with it is clean as when one of them holds a NULL."""
    for neighbour in ("clean", "null"):
        (tmp_path / neighbour).mkdir()
        db = _export(tmp_path / neighbour)
        _spoil(db, f"UPDATE {KERNEL} SET start = CAST(start AS TEXT) WHERE rowid = 1")
        if neighbour == "null":
            _spoil(db, f"UPDATE {KERNEL} SET start = NULL WHERE rowid = 2")
        ((odd, kernel_ns),) = _sql(
            db,
            f"SELECT sum(typeof(start) != 'integer'), sum(CASE WHEN typeof(start) = 'integer' THEN end - start END) "
            f"FROM {KERNEL}",
        )
        _, s = analysis.analyze([db])
        assert s.totals.device_kernel_ns == kernel_ns, neighbour
        assert [w for w in s.warnings if KERNEL in w] == [
            f"run.sqlite: skipped {odd} {KERNEL} row(s) with a NULL or non-integer start"
        ], neighbour


def test_an_nvtx_range_open_when_profiling_stopped_is_counted(tmp_path):
    """A range with no end (open when the profiler stopped) is skipped and said, with the
    ranges of the processes that ran kernels read."""
    db = _export(tmp_path)
    _spoil(
        db,
        f"UPDATE {NVTX} SET end = NULL WHERE rowid IN (SELECT rowid FROM {NVTX} WHERE eventType IN {NVTX_RANGES} "
        "ORDER BY start DESC LIMIT 3)",
    )
    ((open_ranges,),) = _sql(db, f"SELECT count(*) FROM {NVTX} WHERE eventType IN {NVTX_RANGES} AND end IS NULL")
    workers = {g >> 24 & 0xFFFFFF for (g,) in _sql(db, f"SELECT globalPid FROM {KERNEL}")}
    closed = _sql(db, f"SELECT globalTid FROM {NVTX} WHERE eventType IN {NVTX_RANGES} AND end IS NOT NULL")
    profile, s = analysis.analyze([db])
    assert open_ranges == 3
    assert f"run.sqlite: skipped 3 {NVTX} row(s) with no end (a range still open when profiling stopped)" in s.warnings
    annotations = int(np.count_nonzero(profile.events["kind"] == K_ANNOTATION))
    assert annotations == sum((g >> 24 & 0xFFFFFF) in workers for (g,) in closed)


def test_an_nsys_kernel_on_a_device_index_no_gpu_has_is_skipped_never_wrapped(tmp_path):
    db = _export(tmp_path)
    _spoil(db, f"UPDATE {KERNEL} SET deviceId = {HANDLE} WHERE rowid = 3")
    ((kernel_ns,),) = _sql(db, f"SELECT sum(end - start) FROM {KERNEL} WHERE deviceId < {HANDLE}")
    profile, s = analysis.analyze([db])
    assert s.totals.device_kernel_ns == kernel_ns
    assert [w for w in s.warnings if KERNEL in w] == [
        f"run.sqlite: skipped 1 {KERNEL} row(s) with a device index no machine has (below -1, or 1,048,576 or more)"
    ]
    ev = profile.events
    kernels = ev["kind"] == K_KERNEL
    assert set(zip(ev["rank"][kernels].tolist(), ev["device"][kernels].tolist())) == {(0, 0), (1, 1)}


def test_a_rocprofv3_agent_with_a_gpu_index_no_gpu_has_skips_its_dispatches(tmp_path):
    """The dispatches on an agent whose ``gpu_index`` no GPU has are skipped and counted (not
    wrapped onto GPU 0); the others are read."""
    gen_rocprof.write_json(tmp_path / "gen", Workload())
    doc = json.loads((tmp_path / "gen" / "1000_results.json").read_text())
    (tool,) = doc["rocprofiler-sdk-tool"]
    odd = next(a for a in tool["agents"] if a.get("gpu_index") == 1)
    odd["gpu_index"] = HANDLE
    kd = tool["buffer_records"]["kernel_dispatch"]
    kd[3]["dispatch_info"]["agent_id"]["handle"] = odd["id"]["handle"]
    path = tmp_path / "1000_results.json"
    path.write_text(json.dumps(doc))
    on_odd = [r["dispatch_info"]["agent_id"]["handle"] == odd["id"]["handle"] for r in kd]
    profile, s = analysis.analyze([path])
    assert s.totals.device_kernel_ns == sum(
        r["end_timestamp"] - r["start_timestamp"] for r, o in zip(kd, on_odd) if not o
    )
    assert [w for w in s.warnings if "kernel_dispatch" in w] == [
        f"1000_results.json: skipped {sum(on_odd)} kernel_dispatch row(s) with a device index no machine has "
        "(below -1, or 1,048,576 or more)"
    ]
    assert s.run.sources[0].rank == 0 and set(profile.events["device"][profile.events["kind"] == K_KERNEL]) == {0}


def _first_start(records: list) -> int:
    return min(r["start_timestamp"] for r in records)


def _json_with_copies_from_host_to_host(d: Path) -> Path:
    """One file listing both processes, each of which copied from host to host before its work:
    process 1001 (on GPU 1) first."""
    gen_rocprof.write_json(d / "gen", Workload())
    tools = [
        json.loads((d / "gen" / f"{pid}_results.json").read_text())["rocprofiler-sdk-tool"][0] for pid in (1000, 1001)
    ]
    t0 = min(_first_start(r) for t in tools for r in t["buffer_records"].values() if r)
    for t in tools:
        kinds = [k["kind"] for k in t["strings"]["buffer_records"]]
        ops = t["strings"]["buffer_records"][kinds.index("MEMORY_COPY")]["operations"]
        cpu = next(a["id"] for a in t["agents"] if a["type"] == 1)
        at = t0 - (2000 if t["metadata"]["pid"] == 1001 else 1000)
        t["buffer_records"]["memory_copy"].append(
            {
                "kind": kinds.index("MEMORY_COPY"),
                "operation": ops.index("MEMORY_COPY_HOST_TO_HOST"),
                "correlation_id": {"internal": 10**6, "external": 0},
                "start_timestamp": at,
                "end_timestamp": at + 500,
                "src_agent_id": cpu,
                "dst_agent_id": cpu,
                "bytes": 4096,
            }
        )
    path = d / "results.json"
    path.write_text(json.dumps({"rocprofiler-sdk-tool": tools}))
    return path


def _rocpd_with_copies_from_host_to_host(d: Path) -> Path:
    path = d / "run.db"
    gen_rocprof.write_rocpd(path, Workload())
    ((table,),) = _sql(path, "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'rocpd_copy_%'")
    ((t0,),) = _sql(path, "SELECT min(start) FROM (SELECT start FROM kernels UNION ALL SELECT start FROM regions)")
    _spoil(
        path,
        *(
            f"INSERT INTO {table} (name, pid, tid, start, end, size, src_type, src_index, dst_type, dst_index, "
            f"stream_id, stack_id) VALUES ('MEMORY_COPY_HOST_TO_HOST', {pid}, {pid}, {at}, {at + 500}, 4096, 'CPU', 0, "
            "'CPU', 0, 0, 999999)"
            for pid, at in ((1001, t0 - 2000), (1000, t0 - 1000))
        ),
    )
    return path


def _csv_with_copies_from_host_to_host(d: Path) -> Path:
    gen_rocprof_csv.write_csv(d, Workload())
    host = d / gen_rocprof_csv.HOST
    t0 = min(
        int(row["Start_Timestamp"])
        for f in host.glob("*_trace.csv")
        for row in csv.DictReader(f.read_text().splitlines())
    )
    for pid, at in ((1001, t0 - 2000), (1000, t0 - 1000)):
        with open(host / f"{pid}_memory_copy_trace.csv", "a") as f:
            f.write(f'"MEMORY_COPY","MEMORY_COPY_HOST_TO_HOST",0,"Agent 0","Agent 0",999999,{at},{at + 500}\n')
    return host


@pytest.mark.parametrize(
    "make",
    [_json_with_copies_from_host_to_host, _rocpd_with_copies_from_host_to_host, _csv_with_copies_from_host_to_host],
)
def test_a_copy_from_host_to_host_is_no_gpu_work_and_moves_no_rank(make, tmp_path):
    """Each process ran its kernels on a GPU of its own: rank *i* is the process on GPU *i*,
    whatever its copies between CPU agents (first of all its records); those copies are no
    device stream (said in a warning), not a "device -1" stream of the idle table."""
    profile, s = analysis.analyze([make(tmp_path)])
    ev = profile.events
    kernels = ev["kind"] == K_KERNEL
    assert set(zip(ev["rank"][kernels].tolist(), ev["device"][kernels].tolist())) == {(0, 0), (1, 1)}
    assert not ((ev["kind"] == K_MEMCPY) & (ev["device"] < 0)).any()
    assert s.idle and all(row.device >= 0 for row in s.idle)
    said = [w for w in s.warnings if " on no GPU " in w]
    assert sum(int(w.split("not used by the analysis: ")[1].split()[0]) for w in said) == 2
    assert all("first: Memcpy HtoH (Host -> Host)" in w for w in said)


def test_a_rocprofv3_file_of_several_processes_lists_each_gpu_once(tmp_path):
    path = _json_with_copies_from_host_to_host(tmp_path)
    tools = json.loads(path.read_text())["rocprofiler-sdk-tool"]
    gpus = {  # the GPU agents the dispatches ran on, by their index
        a["gpu_index"]: a["product_name"]
        for t in tools
        for a in t["agents"]
        if a["id"]["handle"]
        in {r["dispatch_info"]["agent_id"]["handle"] for r in t["buffer_records"]["kernel_dispatch"]}
    }
    _, s = analysis.analyze([path])
    details = s.run.sources[0].details
    assert details["devices"] == [gpus[i] for i in sorted(gpus)] and len(gpus) == 2
    assert [(p["id"], p["name"]) for p in details["device_properties"]] == sorted(gpus.items())
