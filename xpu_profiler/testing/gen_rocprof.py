#!/usr/bin/env python3
"""Write rocprofv3's outputs of a synthetic vLLM run on ROCm (``vendor_workload``): its JSON
(``--output-format json``: one file per process) or its rocpd SQLite database.

The JSON follows ROCm/rocprofiler-sdk's writer (``generateJSON.cpp``): ``rocprofiler-sdk-tool``
holding ``metadata``, ``agents``, ``strings.buffer_records`` (the kind table a record's ``kind``
and ``operation`` index), ``strings.marker_api`` (ROCTx messages by correlation id),
``kernel_symbols`` and ``buffer_records`` (``kernel_dispatch``, ``memory_copy``, ``hip_api``,
``rccl_api``, ``marker_api``). ``release="6.2"`` writes ROCm 6.2's shape: another kind
numbering, ``MARKER_CORE_API``/``roctxRangePushA``, no ``stream_id`` and no ``gpu_index``.
The rocpd database has uuid-suffixed tables behind the documented views the reader uses
(``kernels``, ``regions``, ``memory_copies``, ``processes``, ``rocpd_info_agent``,
``rocpd_metadata``), with the views' column names (``data_views.sql``).

ROCm runs the same work under other names: HIP calls (``hipLaunchKernel``), RCCL's generic
kernel launched from inside an RCCL call (``ncclAllReduce`` around ``ncclDevKernel_Generic_1``).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from .vendor_workload import Rec, Workload, build

#: the buffer-tracing kinds in rocprofiler-sdk's order (fwd.h): ROCm 7.x, and 6.2's
KINDS_7 = [
    "NONE",
    "HSA_CORE_API",
    "HSA_AMD_EXT_API",
    "HSA_IMAGE_EXT_API",
    "HSA_FINALIZE_EXT_API",
    "HIP_RUNTIME_API",
    "HIP_COMPILER_API",
    "MARKER_CORE_API",
    "MARKER_CONTROL_API",
    "MARKER_NAME_API",
    "MEMORY_COPY",
    "KERNEL_DISPATCH",
    "SCRATCH_MEMORY",
    "CORRELATION_ID_RETIREMENT",
    "RCCL_API",
    "OMPT",
    "MEMORY_ALLOCATION",
    "RUNTIME_INITIALIZATION",
    "ROCDECODE_API",
    "ROCJPEG_API",
    "HIP_STREAM",
    "HIP_RUNTIME_API_EXT",
    "HIP_COMPILER_API_EXT",
    "ROCDECODE_API_EXT",
    "KFD_EVENT_PAGE_MIGRATE",
    "KFD_EVENT_PAGE_FAULT",
    "KFD_EVENT_QUEUE",
    "KFD_EVENT_UNMAP_FROM_GPU",
    "KFD_EVENT_DROPPED_EVENTS",
    "KFD_PAGE_MIGRATE",
    "KFD_PAGE_FAULT",
    "KFD_QUEUE",
    "MARKER_CORE_RANGE_API",
]
KINDS_62 = [
    "NONE",
    "HSA_CORE_API",
    "HSA_AMD_EXT_API",
    "HSA_IMAGE_EXT_API",
    "HSA_FINALIZE_EXT_API",
    "HIP_RUNTIME_API",
    "HIP_COMPILER_API",
    "MARKER_CORE_API",
    "MARKER_CONTROL_API",
    "MARKER_NAME_API",
    "MEMORY_COPY",
    "KERNEL_DISPATCH",
    "PAGE_MIGRATION",
    "SCRATCH_MEMORY",
    "CORRELATION_ID_RETIREMENT",
    "RCCL_API",
]
HIP_OPS = ["hipApiName", "hipGraphLaunch", "hipLaunchKernel", "hipMemcpyAsync", "hipStreamSynchronize"]
COPY_OPS = [
    "MEMORY_COPY_NONE",
    "MEMORY_COPY_HOST_TO_HOST",
    "MEMORY_COPY_HOST_TO_DEVICE",
    "MEMORY_COPY_DEVICE_TO_HOST",
    "MEMORY_COPY_DEVICE_TO_DEVICE",
]
RCCL_OPS = ["ncclAllGather", "ncclAllReduce", "ncclBroadcast", "ncclCommInitRank"]
RCCL_KERNEL = "ncclDevKernel_Generic_1(ncclDevKernelArgsStorage<4096ul>)"
GPU_NAME = "AMD Instinct MI300X"
CPU_HANDLE, GPU_HANDLE0 = 5000, 5001
UUID = "0198a1b2_c3d4_7e5f_8a9b_0c1d2e3f4a5b"


def _hip(name: str) -> str:
    return name.replace("cuda", "hip")


def rocm_records(w: Workload) -> tuple[list[Rec], list[Rec], dict]:
    """The run's records with ROCm's names, the RCCL calls around the all-reduce launches, and the truth."""
    run = build(w)
    by_corr = {(r.pid, r.corr): r for r in run.records if r.kind != "runtime" and r.corr >= 0}
    rccl = []
    for r in run.records:
        if r.kind == "runtime":
            dev = by_corr.get((r.pid, r.corr))
            if dev is not None and dev.name.startswith("ncclDevKernel"):
                dev.name = RCCL_KERNEL
                rccl.append(Rec("rccl", "ncclAllReduce", r.start - 500, r.end + 500, r.pid, r.tid, corr=-1))
            r.name = _hip(r.name)
    return run.records, rccl, {**run.truth, "rccl_calls": len(rccl), "rccl_kernels": len(rccl)}


class _Layout:
    """What a rocprofv3 release calls things: its kind table, the operations of each kind, the
    marker and HIP kinds; ``base`` is a buffer record's common part."""

    def __init__(self, release: str):
        self.release = release
        self.kinds = KINDS_7 if release != "6.2" else KINDS_62
        self.marker_kind = "MARKER_CORE_RANGE_API" if release != "6.2" else "MARKER_CORE_API"
        self.marker_ops = (
            ["roctxMarkA", "roctxThreadRangeA", "roctxProcessRangeA"]
            if release != "6.2"
            else ["roctxMarkA", "roctxRangePushA", "roctxRangePop", "roctxRangeStartA", "roctxRangeStop"]
        )
        self.hip_kind = "HIP_RUNTIME_API_EXT" if release != "6.2" else "HIP_RUNTIME_API"
        self.ops = {
            self.hip_kind: HIP_OPS,
            "MEMORY_COPY": COPY_OPS,
            "KERNEL_DISPATCH": ["NONE", "ENQUEUE", "COMPLETE"],
            "RCCL_API": RCCL_OPS,
            self.marker_kind: self.marker_ops,
        }
        self.k = {name: i for i, name in enumerate(self.kinds)}

    def base(self, kind: str, op: int, r: Rec, c: int) -> dict:
        d = {
            "size": 96,
            "kind": self.k[kind],
            "operation": op,
            "thread_id": r.tid,
            "correlation_id": {"internal": c, "external": 0},
            "start_timestamp": r.start,
            "end_timestamp": r.end,
        }
        if self.release != "6.2":
            d["stream_id"] = {"handle": r.stream if r.stream >= 0 else 0}
        return d


def write_json(out_dir: str | Path, w: Workload | None = None, release: str = "7.0") -> dict:
    """One ``<pid>_results.json`` per rank in ``out_dir``; returns the truth."""
    w = w or Workload()
    records, rccl, truth = rocm_records(w)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    lay = _Layout(release)
    symbols = sorted({r.name for r in records if r.kind == "kernel"})
    for rank in range(w.ranks):
        pid = 1000 + rank
        buf, messages = _buffer_records(lay, rank, [r for r in records if r.pid == pid], rccl, symbols)
        doc = _results(w, lay, pid, _agents(w, release), messages, symbols, buf)
        (out / f"{pid}_results.json").write_text(json.dumps(doc))
    return truth


def _buffer_records(lay: _Layout, rank: int, mine: list[Rec], rccl: list[Rec], symbols: list[str]) -> tuple[dict, list]:
    """One rank's ``buffer_records`` by kind, and the ROCTx messages by correlation id."""
    pid = 1000 + rank
    messages, corr = [], 100_000
    buf: dict[str, list] = {
        "kernel_dispatch": [],
        "memory_copy": [],
        "hip_api": [],
        "rccl_api": [],
        "marker_api": [],
    }
    base = lay.base
    for r in mine:
        if r.kind == "kernel":
            d = base("KERNEL_DISPATCH", 2, r, r.corr)
            d["dispatch_info"] = {
                "agent_id": {"handle": GPU_HANDLE0 + rank},
                "queue_id": {"handle": 16},
                "kernel_id": symbols.index(r.name) + 1,
                "dispatch_id": r.corr,
            }
            buf["kernel_dispatch"].append(d)
        elif r.kind == "memcpy":
            d = base(
                "MEMORY_COPY",
                COPY_OPS.index("MEMORY_COPY_HOST_TO_DEVICE" if r.name == "HtoD" else "MEMORY_COPY_DEVICE_TO_HOST"),
                r,
                r.corr,
            )
            gpu, cpu = {"handle": GPU_HANDLE0 + rank}, {"handle": CPU_HANDLE}
            d.update(
                src_agent_id=cpu if r.name == "HtoD" else gpu,
                dst_agent_id=gpu if r.name == "HtoD" else cpu,
                bytes=r.nbytes,
            )
            buf["memory_copy"].append(d)
        elif r.kind == "runtime":
            buf["hip_api"].append(base(lay.hip_kind, HIP_OPS.index(r.name), r, r.corr))
        elif r.kind == "range":
            corr += 1
            op = lay.marker_ops.index("roctxThreadRangeA" if lay.release != "6.2" else "roctxRangePushA")
            buf["marker_api"].append(base(lay.marker_kind, op, r, corr))
            messages.append({"key": corr, "value": r.name})
    for r in rccl:
        if r.pid == pid:
            corr += 1
            buf["rccl_api"].append(base("RCCL_API", RCCL_OPS.index(r.name), r, corr))
    if buf["marker_api"]:  # one mark, which has no span (the reader counts it)
        first = buf["marker_api"][0]
        buf["marker_api"].append({**first, "operation": 0, "end_timestamp": first["start_timestamp"]})
    return buf, messages


def _agents(w: Workload, release: str) -> list[dict]:
    """The CPU, then one agent per GPU."""
    agents = [
        {
            "size": 312,
            "id": {"handle": CPU_HANDLE},
            "type": 1,
            "node_id": 0,
            "name": "AMD EPYC",
            "product_name": "AMD EPYC",
        }
    ]
    for g in range(w.ranks):
        a = {
            "size": 312,
            "id": {"handle": GPU_HANDLE0 + g},
            "type": 2,
            "node_id": g + 2,
            "name": "gfx942",
            "product_name": GPU_NAME,
            "cu_count": 304,
        }
        if release != "6.2":
            a.update(logical_node_type_id=g, gpu_index=g)
        agents.append(a)
    return agents


def _results(
    w: Workload, lay: _Layout, pid: int, agents: list[dict], messages: list, symbols: list[str], buf: dict
) -> dict:
    """One process's ``<pid>_results.json``."""
    return {
        "rocprofiler-sdk-tool": [
            {
                "metadata": {
                    "pid": pid,
                    "init_time": w.t0 - 10**9,
                    "fini_time": w.t0 + 10**10,
                    "node": {"hostname": "mi300x-node"},
                    "command": ["python3", "-m", "vllm.entrypoints.openai.api_server"],
                },
                "agents": agents,
                "strings": {
                    "buffer_records": [{"kind": n, "operations": lay.ops.get(n, [])} for n in lay.kinds],
                    "marker_api": messages,
                },
                "kernel_symbols": [{"kernel_id": 0, "formatted_kernel_name": "0"}]
                + [
                    {
                        "kernel_id": i + 1,
                        "kernel_name": f"k{i}.kd",
                        "formatted_kernel_name": n,
                        "demangled_kernel_name": n + " [clone .kd]",
                    }
                    for i, n in enumerate(symbols)
                ],
                "buffer_records": buf,
            }
        ]
    }


def write_rocpd(path: str | Path, w: Workload | None = None) -> dict:
    """One rocpd database of every rank's records (rocpd writes one per process; a database of
    several is what ``rocpd merge`` makes)."""
    w = w or Workload()
    records, rccl, truth = rocm_records(w)
    path = Path(path)
    path.unlink(missing_ok=True)
    db = sqlite3.connect(path)
    t = {n: f"rocpd_{n}_{UUID}" for n in ("metadata", "kernel", "region", "copy", "process", "agent")}
    db.executescript(f"""
        CREATE TABLE {t["metadata"]} (id INTEGER PRIMARY KEY, tag TEXT, value TEXT);
        CREATE TABLE {t["kernel"]} (id INTEGER PRIMARY KEY, pid, tid, agent_type_index, stream_id, queue_id, start, end, stack_id, name TEXT);
        CREATE TABLE {t["region"]} (id INTEGER PRIMARY KEY, category TEXT, name TEXT, pid, tid, start, end, stack_id, extdata TEXT);
        CREATE TABLE {t["copy"]} (id INTEGER PRIMARY KEY, name TEXT, pid, tid, start, end, size, src_type TEXT, src_index, dst_type TEXT, dst_index, stream_id, stack_id);
        CREATE TABLE {t["process"]} (pid, command TEXT);
        CREATE TABLE {t["agent"]} (type TEXT, type_index, name TEXT, product_name TEXT);
        CREATE VIEW rocpd_metadata AS SELECT * FROM {t["metadata"]};
        CREATE VIEW rocpd_info_agent AS SELECT * FROM {t["agent"]};
        CREATE VIEW kernels AS SELECT id, tid, 'KERNEL_DISPATCH' AS category, name, pid, agent_type_index,
            'GPU' AS agent_type, stream_id, queue_id, start, end, (end - start) AS duration, stack_id FROM {t["kernel"]};
        CREATE VIEW regions AS SELECT id, category, name, pid, tid, start, end, (end - start) AS duration, stack_id,
            extdata FROM {t["region"]};
        CREATE VIEW memory_copies AS SELECT id, 'MEMORY_COPY' AS category, pid, tid, start, end, (end - start) AS duration,
            name, stream_id, size, dst_type AS dst_agent_type, dst_index AS dst_agent_type_index, src_type AS src_agent_type,
            src_index AS src_agent_type_index, stack_id FROM {t["copy"]};
        CREATE VIEW processes AS SELECT pid, command FROM {t["process"]};
    """)
    db.executemany(
        f"INSERT INTO {t['metadata']} (tag, value) VALUES (?, ?)", [("schema_version", "3"), ("uuid", "_" + UUID)]
    )
    stack = 10**6
    for r in records + rccl:
        rank = r.pid - 1000
        if r.kind == "kernel":
            db.execute(
                f"INSERT INTO {t['kernel']} (pid, tid, agent_type_index, stream_id, queue_id, start, end, stack_id, name) "
                "VALUES (?, ?, ?, ?, 16, ?, ?, ?, ?)",
                (r.pid, r.tid, r.device, r.stream, r.start, r.end, r.corr, r.name),
            )
        elif r.kind == "memcpy":
            h2d = r.name == "HtoD"
            db.execute(
                f"INSERT INTO {t['copy']} (name, pid, tid, start, end, size, src_type, src_index, dst_type, dst_index, "
                "stream_id, stack_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    "MEMORY_COPY_HOST_TO_DEVICE" if h2d else "MEMORY_COPY_DEVICE_TO_HOST",
                    r.pid,
                    r.tid,
                    r.start,
                    r.end,
                    r.nbytes,
                    "CPU" if h2d else "GPU",
                    0 if h2d else rank,
                    "GPU" if h2d else "CPU",
                    rank if h2d else 0,
                    r.stream,
                    r.corr,
                ),
            )
        elif r.kind in ("runtime", "rccl", "range") and rank >= 0:
            stack += 1
            cat = {"runtime": "HIP_RUNTIME_API_EXT", "rccl": "RCCL_API", "range": "MARKER_CORE_RANGE_API"}[r.kind]
            name = "roctxThreadRangeA" if r.kind == "range" else r.name
            ext = json.dumps({"message": r.name}) if r.kind == "range" else "{}"
            db.execute(
                f"INSERT INTO {t['region']} (category, name, pid, tid, start, end, stack_id, extdata) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (cat, name, r.pid, r.tid, r.start, r.end, r.corr if r.kind == "runtime" else stack, ext),
            )
    db.executemany(
        f"INSERT INTO {t['process']} VALUES (?, ?)",
        [(1000 + i, "python3 -m vllm.entrypoints.openai.api_server") for i in range(w.ranks)],
    )
    db.executemany(f"INSERT INTO {t['agent']} VALUES ('GPU', ?, 'gfx942', ?)", [(i, GPU_NAME) for i in range(w.ranks)])
    db.commit()
    db.close()
    path.with_suffix(".truth.json").write_text(json.dumps(truth))
    return truth
