#!/usr/bin/env python3
"""Write an Nsight Systems SQLite export of a synthetic vLLM or TensorRT-LLM run
(``vendor_workload``), in the table layout of a given export schema version.

The layouts follow real exports: schema 3.0.0 (nsys 2022.4: the metadata table is
``EXPORT_META_DATA``, no ``greenContextId``), 3.7.2 (2023.4: ``META_DATA_EXPORT``,
``greenContextId``), 3.17.1 (2025.1: NVTX ``binaryData``, the synchronization table's
``eventSyncId``, ``TARGET_INFO_CUDA_DEVICE``, ``CUPTI_ACTIVITY_KIND_GRAPH_TRACE`` for graphs traced
as a whole). Like ``nsys export`` by default, only tables that hold rows are created. Process
and thread ids are packed as nsys packs them (pid in bits 24-47, tid in 0-23, the VM id above);
runtime call names carry their API version suffix (``cudaLaunchKernel_v7000``); NVTX ranges are
plain ``text`` or registered strings (``textId``), in the default domain or a named one (an
``eventType`` 75 row per process).

Usage: ``python -m xpu_profiler.testing.gen_nsys OUT.sqlite [--schema 3.17.1] [--marks vllm_scopes]
[--layerwise] [--graphs node]``; ``OUT.truth.json`` beside it holds the ground truth.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from pathlib import Path

from .vendor_workload import LAUNCHER_PID, Rec, Workload, build

SCHEMAS = ("3.0.0", "3.7.2", "3.17.1")
PRODUCT = {"3.0.0": "2022.4.2.1", "3.7.2": "2023.4.4.54", "3.17.1": "2025.1.1.110"}
EPOCH_NS = 1_764_633_600_000_000_000  # the session's start on the epoch
API_SUFFIX = {"cudaLaunchKernel": "_v7000", "cudaMemcpyAsync": "_v3020", "cudaGraphLaunch": "_v10000"}
COPY_KIND = {"HtoD": 1, "DtoH": 2}
GPU = ("NVIDIA H100 80GB HBM3", 85_520_809_984, 132, 9, 0)  # name, memory, SMs, compute capability


def _columns(schema: str) -> dict[str, list[str]]:
    green = ["greenContextId"] if schema != "3.0.0" else []
    nvtx = ["start", "end", "eventType", "rangeId", "category", "color", "text", "globalTid", "endGlobalTid"]
    nvtx += ["textId", "domainId", "uint64Value", "int64Value", "doubleValue", "uint32Value", "int32Value"]
    nvtx += ["floatValue", "jsonTextId", "jsonText"] + (["binaryData"] if schema == "3.17.1" else [])
    return {
        "CUPTI_ACTIVITY_KIND_KERNEL": ["start", "end", "deviceId", "contextId", *green, "streamId", "correlationId"]
        + ["globalPid", "demangledName", "shortName", "mangledName", "launchType", "cacheConfig", "registersPerThread"]
        + ["gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ", "staticSharedMemory", "dynamicSharedMemory"]
        + ["localMemoryPerThread", "localMemoryTotal", "gridId", "sharedMemoryExecuted", "graphNodeId"]
        + ["sharedMemoryLimitConfig"],
        "CUPTI_ACTIVITY_KIND_MEMCPY": ["start", "end", "deviceId", "contextId", *green, "streamId", "correlationId"]
        + ["globalPid", "bytes", "copyKind", "deprecatedSrcId", "srcKind", "dstKind", "srcDeviceId", "srcContextId"]
        + ["dstDeviceId", "dstContextId", "migrationCause", "graphNodeId", "virtualAddress"],
        "CUPTI_ACTIVITY_KIND_RUNTIME": ["start", "end", "eventClass", "globalTid", "correlationId", "nameId"]
        + ["returnValue", "callchainId"],
        "CUPTI_ACTIVITY_KIND_GRAPH_TRACE": ["start", "end", "deviceId", "contextId", "greenContextId", "streamId"]
        + ["correlationId", "globalPid", "graphId", "graphExecId"],
        "NVTX_EVENTS": nvtx,
        "StringIds": ["id", "value"],
        "PROCESSES": ["globalPid", "pid", "name"],
        "ThreadNames": ["nameId", "priority", "globalTid"],
        "TARGET_INFO_GPU": [
            "vmId",
            "id",
            "name",
            "totalMemory",
            "smCount",
            "computeMajor",
            "computeMinor",
            "threadsPerWarp",
        ],
        "TARGET_INFO_SESSION_START_TIME": ["utcEpochNs", "utcTime", "localTime"],
        "TARGET_INFO_CUDA_DEVICE": ["gpuId", "cudaId", "pid"],
        "EXPORT_META_DATA" if schema == "3.0.0" else "META_DATA_EXPORT": ["name", "value"],
    }


def gtid(pid: int, tid: int) -> int:
    return (1 << 48) | (pid << 24) | tid


class _Writer:
    def __init__(self, schema: str):
        self.schema = schema
        self.cols = _columns(schema)
        self.rows: dict[str, list[dict]] = {t: [] for t in self.cols}
        self.ids: dict[str, int] = {}

    def sid(self, s: str) -> int:
        if s not in self.ids:
            self.ids[s] = len(self.ids)
            self.rows["StringIds"].append({"id": self.ids[s], "value": s})
        return self.ids[s]

    def add(self, table: str, **row) -> None:
        self.rows[table].append(row)

    def write(self, path: Path) -> None:
        path.unlink(missing_ok=True)
        conn = sqlite3.connect(path)
        for table, rows in self.rows.items():
            if not rows:
                continue
            cols = self.cols[table]
            conn.execute(f"CREATE TABLE {table} ({', '.join(cols)})")
            conn.executemany(
                f"INSERT INTO {table} VALUES ({', '.join('?' * len(cols))})", [[r.get(c) for c in cols] for r in rows]
            )
        conn.commit()
        conn.close()


def _record(w: _Writer, r: Rec, domains: dict) -> None:
    if r.kind == "kernel" and r.graph >= 0:
        _graph_trace(w, r)
    elif r.kind == "kernel":
        _kernel(w, r)
    elif r.kind == "memcpy":
        _memcpy(w, r)
    elif r.kind == "runtime":
        _runtime(w, r)
    elif r.kind == "range":
        _range(w, r, domains)


def _on_device(r: Rec) -> dict:
    """The columns every device activity row has: its span, device, stream and launch."""
    return {
        "start": r.start,
        "end": r.end,
        "deviceId": r.device,
        "contextId": 1,
        "greenContextId": 0,
        "streamId": r.stream,
        "correlationId": r.corr,
        "globalPid": gtid(r.pid, 0),
    }


def _graph_trace(w: _Writer, r: Rec) -> None:
    """A CUDA graph traced as a whole: one row for its launch."""
    w.add(
        "CUPTI_ACTIVITY_KIND_GRAPH_TRACE",
        **_on_device(r),
        graphId=r.graph,
        graphExecId=r.graph,
    )


def _kernel(w: _Writer, r: Rec) -> None:
    """A kernel, its names registered as strings."""
    name = w.sid(r.name)
    w.add(
        "CUPTI_ACTIVITY_KIND_KERNEL",
        **_on_device(r),
        demangledName=name,
        shortName=w.sid(r.name.split("(")[0].split("<")[0].split()[-1]),
        launchType=1,
        registersPerThread=32,
        gridX=1,
        gridY=1,
        gridZ=1,
        blockX=128,
        blockY=1,
        blockZ=1,
        staticSharedMemory=0,
        dynamicSharedMemory=0,
        localMemoryPerThread=0,
        localMemoryTotal=0,
        gridId=r.corr,
        graphNodeId=r.graph_node if r.graph_node >= 0 else None,
    )


def _memcpy(w: _Writer, r: Rec) -> None:
    """A host-device copy."""
    h2d = r.name == "HtoD"
    w.add(
        "CUPTI_ACTIVITY_KIND_MEMCPY",
        **_on_device(r),
        bytes=r.nbytes,
        copyKind=COPY_KIND[r.name],
        srcKind=1 if h2d else 2,
        dstKind=2 if h2d else 1,
    )


def _runtime(w: _Writer, r: Rec) -> None:
    """A runtime call, its name with the API version suffix."""
    w.add(
        "CUPTI_ACTIVITY_KIND_RUNTIME",
        start=r.start,
        end=r.end,
        eventClass=0,
        globalTid=gtid(r.pid, r.tid),
        correlationId=r.corr,
        nameId=w.sid(r.name + API_SUFFIX.get(r.name, "")),
        returnValue=0,
    )


def _range(w: _Writer, r: Rec, domains: dict) -> None:
    """An NVTX range; the first range of a named domain in a process registers it (``eventType`` 75)."""
    dom = 0
    if r.domain:
        key = (r.pid, r.domain)
        if key not in domains:
            domains[key] = len([k for k in domains if k[0] == r.pid]) + 1
            w.add(
                "NVTX_EVENTS",
                start=r.start - 1_000,
                eventType=75,
                text=r.domain,
                globalTid=gtid(r.pid, r.tid),
                domainId=domains[key],
            )
        dom = domains[key]
    text, text_id = (None, w.sid(r.name)) if r.registered else (r.name, None)
    w.add(
        "NVTX_EVENTS",
        start=r.start,
        end=r.end,
        eventType=59,
        text=text,
        textId=text_id,
        globalTid=gtid(r.pid, r.tid),
        domainId=dom,
    )


def write(path: str | Path, workload: Workload | None = None, schema: str = "3.17.1") -> dict:
    """Write the export; returns (and writes beside it as ``.truth.json``) the ground truth."""
    if schema not in SCHEMAS:
        raise ValueError(f"schema {schema!r}: one of {', '.join(SCHEMAS)}")
    workload = workload or Workload()
    if workload.graphs == "graph" and schema != "3.17.1":
        raise ValueError("graphs traced as a whole are written in schema 3.17.1 only")
    run = build(workload)
    w = _Writer(schema)
    domains: dict = {}
    for r in run.records:
        _record(w, r, domains)
    pids = sorted({r.pid for r in run.records})
    for pid in pids:
        name = "nsys-launcher" if pid == LAUNCHER_PID else "python3"
        w.add("PROCESSES", globalPid=gtid(pid, 0), pid=pid, name=name)
        w.add(
            "ThreadNames",
            nameId=w.sid(name if pid == LAUNCHER_PID else "VllmWorker"),
            priority=20,
            globalTid=gtid(pid, pid),
        )
    for rank in range(workload.ranks):
        name, mem, sms, major, minor = GPU
        w.add(
            "TARGET_INFO_GPU",
            vmId=1 << 48,
            id=rank,
            name=name,
            totalMemory=mem,
            smCount=sms,
            computeMajor=major,
            computeMinor=minor,
            threadsPerWarp=32,
        )
        if schema == "3.17.1":
            w.add("TARGET_INFO_CUDA_DEVICE", gpuId=rank, cudaId=rank, pid=1000 + rank)
    w.add(
        "TARGET_INFO_SESSION_START_TIME",
        utcEpochNs=EPOCH_NS,
        utcTime="2025-12-02T00:00:00",
        localTime="2025-12-02T00:00:00",
    )
    meta = "EXPORT_META_DATA" if schema == "3.0.0" else "META_DATA_EXPORT"
    for k, v in (
        ("EXPORT_PRODUCT_NAME", "NVIDIA Nsight Systems"),
        ("EXPORT_PRODUCT_VERSION", PRODUCT[schema]),
        ("EXPORT_SCHEMA_VERSION", schema),
    ):
        w.add(meta, name=k, value=v)
    path = Path(path)
    w.write(path)
    truth = {**run.truth, "schema": schema, "epoch_ns": EPOCH_NS}
    path.with_suffix(".truth.json").write_text(json.dumps(truth, indent=1))
    return truth


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--schema", default="3.17.1", choices=SCHEMAS)
    ap.add_argument("--marks", default="vllm_step", choices=("vllm_step", "vllm_scopes", "trtllm", "none"))
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--layerwise", action="store_true")
    ap.add_argument("--graphs", default="none", choices=("none", "node", "graph"))
    a = ap.parse_args(argv)
    wl = Workload(ranks=a.ranks, marks=a.marks, layerwise=a.layerwise, graphs=a.graphs)
    truth = write(a.out, wl, a.schema)
    print(f"wrote {a.out}: {truth['kernels']} kernels, {len(truth['steps'])} step rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
