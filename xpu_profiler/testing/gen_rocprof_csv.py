"""Write rocprofv3's CSV output (``--output-format csv``) of a synthetic vLLM run on ROCm
(``vendor_workload``, with ROCm's names as ``gen_rocprof`` gives them), as three releases wrote it
(ROCm/rocprofiler-sdk ``generateCSV.cpp``, ``csv.hpp``; 6.2 in ``rocprofiler-sdk-tool/``):

- ``"6.2"``: ``<pid>_<table>.csv`` in the output directory itself; the kernel trace without
  ``Thread_Id``/``Dispatch_Id``; agents as bare logical node ids; ``HIP_RUNTIME_API`` and
  ``MARKER_CORE_API`` (a range one row named by its message); no RCCL trace;
- ``"6.4"``: ``<hostname>/<pid>_<table>.csv``, ``Thread_Id`` and ``Dispatch_Id``, an RCCL trace;
- ``"7.0"``: agents as ``"Agent 4"``, ``Stream_Id`` in kernels and copies, ``HIP_RUNTIME_API_EXT``,
  ``MARKER_CORE_RANGE_API``.

Every string quoted, nothing escaped, numbers bare, as rocprofv3's encoder writes them; one
``agent_info.csv`` per process (the CPU at node 0, GPU *g* at node *g* + 2).
"""

from __future__ import annotations

from pathlib import Path

from .gen_rocprof import GPU_NAME, rocm_records
from .vendor_workload import Rec, Workload

RELEASES = ("6.2", "6.4", "7.0")
HOST = "mi300x-node"
_AGENT_INFO = ["Node_Id", "Logical_Node_Id", "Agent_Type", "Cu_Count", "Local_Mem_Size", "Gpu_Id", "Name"]
_AGENT_INFO += ["Vendor_Name", "Product_Name", "Model_Name"]
_API = ["Domain", "Function", "Process_Id", "Thread_Id", "Correlation_Id", "Start_Timestamp", "End_Timestamp"]


def _headers(release: str) -> dict[str, list[str]]:
    kernel = ["Kind", "Agent_Id", "Queue_Id"]
    kernel += ["Stream_Id"] if release == "7.0" else []
    kernel += ["Thread_Id", "Dispatch_Id"] if release != "6.2" else []
    kernel += ["Kernel_Id", "Kernel_Name", "Correlation_Id", "Start_Timestamp", "End_Timestamp"]
    kernel += (
        ["LDS_Block_Size", "Scratch_Size", "VGPR_Count", "Accum_VGPR_Count", "SGPR_Count"]
        if release == "7.0"
        else ["Private_Segment_Size", "Group_Segment_Size"]
    )
    kernel += [f"{w}_Size_{a}" for w in ("Workgroup", "Grid") for a in "XYZ"]
    copy = ["Kind", "Direction"] + (["Stream_Id"] if release == "7.0" else [])
    copy += ["Source_Agent_Id", "Destination_Agent_Id", "Correlation_Id", "Start_Timestamp", "End_Timestamp"]
    return {"kernel_trace": kernel, "memory_copy_trace": copy, "agent_info": _AGENT_INFO}


def line(values: list) -> str:
    """One row as rocprofv3 writes it: strings quoted (nothing escaped), numbers bare."""
    return ",".join(f'"{v}"' if isinstance(v, str) else str(v) for v in values) + "\n"


def _agent(release: str, node: int) -> int | str:
    return f"Agent {node}" if release == "7.0" else node


def write_csv(out_dir: str | Path, w: Workload | None = None, release: str = "7.0") -> dict:
    """Every rank's CSV files under ``out_dir`` (``<pid>_*.csv``, in ``<hostname>/`` from 6.3);
    returns the truth (``files``: the directory they are in)."""
    w = w or Workload()
    records, rccl, truth = rocm_records(w)
    where = Path(out_dir) / (HOST if release != "6.2" else "")
    where.mkdir(parents=True, exist_ok=True)
    heads = _headers(release)
    symbols = sorted({r.name for r in records if r.kind == "kernel"})
    for rank in range(w.ranks):
        pid = 1000 + rank
        tables = _tables(
            release, rank, [r for r in records if r.pid == pid], [r for r in rccl if r.pid == pid], symbols
        )
        tables["agent_info"] = [[0, 0, "CPU", 0, 0, 0, "AMD EPYC", "AuthenticAMD", "AMD EPYC", ""]] + [
            [g + 2, g + 2, "GPU", 304, 206141652992, 1000 + g, "gfx942", "AMD", GPU_NAME, "aqua_vanjaram"]
            for g in range(w.ranks)
        ]
        for table, rows in tables.items():
            if rows:  # (rocprofv3 writes a table only when it has a row)
                head = heads.get(table, _API)
                (where / f"{pid}_{table}.csv").write_text(line(head) + "".join(line(r) for r in rows))
    return {**truth, "files": str(where)}


def _tables(release: str, rank: int, mine: list[Rec], rccl: list[Rec], symbols: list[str]) -> dict[str, list[list]]:
    hip = "HIP_RUNTIME_API_EXT" if release == "7.0" else "HIP_RUNTIME_API"
    marker = "MARKER_CORE_RANGE_API" if release == "7.0" else "MARKER_CORE_API"
    gpu, cpu = _agent(release, rank + 2), _agent(release, 0)
    out: dict[str, list[list]] = {t: [] for t in ("kernel_trace", "memory_copy_trace", "hip_api_trace")}
    out |= {"marker_api_trace": [], "rccl_api_trace": []}
    corr = 100_000
    for r in mine:
        if r.kind == "kernel":
            row = ["KERNEL_DISPATCH", gpu, 16] + ([r.stream] if release == "7.0" else [])
            row += [r.pid, r.corr] if release != "6.2" else []
            row += [symbols.index(r.name) + 1, r.name, r.corr, r.start, r.end]
            row += [0, 0, 32, 0, 96] if release == "7.0" else [0, 0]
            out["kernel_trace"].append(row + [256, 1, 1, 65536, 1, 1])
        elif r.kind == "memcpy":
            h2d = r.name == "HtoD"
            row = ["MEMORY_COPY", "MEMORY_COPY_HOST_TO_DEVICE" if h2d else "MEMORY_COPY_DEVICE_TO_HOST"]
            row += [r.stream] if release == "7.0" else []
            out["memory_copy_trace"].append(row + [cpu if h2d else gpu, gpu if h2d else cpu, r.corr, r.start, r.end])
        elif r.kind == "runtime":
            out["hip_api_trace"].append([hip, r.name, r.pid, r.tid, r.corr, r.start, r.end])
        elif r.kind == "range":
            corr += 1
            out["marker_api_trace"].append([marker, r.name, r.pid, r.tid, corr, r.start, r.end])
    if out["marker_api_trace"]:  # one mark, which has no span (the reader counts it)
        first = out["marker_api_trace"][0]
        out["marker_api_trace"].append([marker, "warm-up done", first[2], first[3], first[4], first[5], first[5]])
    if release != "6.2":
        for r in rccl:
            corr += 1
            out["rccl_api_trace"].append(["RCCL_API", r.name, r.pid, r.tid, corr, r.start, r.end])
    return out
