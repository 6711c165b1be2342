"""rocprofv3's CSV output (``rocprofv3 --kernel-trace --hip-trace ... --output-format csv``; its
default before ROCm 7.0): the rocprofv3 CSV files of one directory are one input, every process
of the run in it (``<pid>_kernel_trace.csv``, ``<pid>_hip_api_trace.csv``... of each), as the
Nsight Systems export of several processes is (``vendor_rows``: a rank per process that ran
device work, the others' host rows left out and counted). Naming one of the files names its
directory; ``csv_tables`` says what each file holds and how its columns read.

What is read, as from rocprofv3's JSON (``rocprof``): kernel dispatches (named ``Kernel_Name``,
on the GPU of ``Agent_Id``, the stream ``Stream_Id`` else the HSA queue), memory copies (named
as Kineto names them; the CSV has no byte count), HIP calls (runtime), RCCL calls (the kernels
launched inside one get its collective), ROCTx ranges (annotations named by their message;
marks and control calls counted). A call and the device work it enqueued share
``Correlation_Id``. HSA calls, memory allocations, scratch memory, counters and the statistics
files are the run's but not read. Agents are told apart through ``agent_info.csv`` (GPUs by
their place among the GPUs); without it, the agents that ran kernels are the GPUs, in id order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...core.errors import TraceError
from ...core.profile import K_ANNOTATION, K_KERNEL, K_MEMCPY, K_RUNTIME, Profile
from ...knowledge.copy_kinds import ROCPROF_COPY
from ..base import ReadOptions
from ..content import read_bytes, read_head
from ..vendor_rows import Block, assemble, names_by_rank, ranks_of, usable
from . import common, csv_tables
from .csv_tables import Rows

NAME = "rocprofv3-csv"
_ODD = "a missing or non-integer {}"
#: what rocprofv3 appends to a file's prefix (``<prefix>_<table>.csv``)
_SUFFIX = re.compile(
    r"^(.*?)_(?:(?:kernel|hip_api|hsa_api|marker_api|rccl_api|memory_copy|memory_allocation|scratch_memory|"
    r"rocdecode_api|rocjpeg_api|kfd_event|kfd_page_migrate|kfd_page_fault|kfd_queue)_(?:trace|stats)"
    r"|agent_info|counter_collection|domain_stats)\.csv$"
)
#: ROCTx calls that are no range of the user's (6.x writes them with the call's name)
_ROCTX_CALLS = frozenset(
    (
        "roctxMarkA",
        "roctxRangePushA",
        "roctxRangePop",
        "roctxRangeStartA",
        "roctxRangeStop",
        "roctxGetThreadId",
        "roctxProfilerPause",
        "roctxProfilerResume",
        "roctxNameOsThread",
        "roctxNameHsaAgent",
        "roctxNameHipDevice",
        "roctxNameHipStream",
    )
)
_RANGE_DOMAINS = ("MARKER_CORE_API", "MARKER_CORE_RANGE_API")


def sniff(path: Path, head: bytes) -> bool:
    return csv_tables.table_of_head(head) is not None


def unit(path: Path) -> Path:
    """The input a file stands for: the directory that holds it (its rocprofv3 CSV files are one run's)."""
    return path if path.is_dir() else path.parent


@dataclass
class _File:
    path: Path
    table: str
    pid: int  # the process the name says (``<pid>_...``), else -1


def _files(directory: Path) -> list[_File]:
    out = []
    for f in sorted(directory.iterdir()):
        if f.name.startswith(".") or not f.is_file():
            continue
        table = csv_tables.table_of_head(read_head(f))
        if table:
            name = re.sub(r"\.(gz|xz|bz2|zst)$", "", f.name)
            m = _SUFFIX.match(name)
            stem = (m.group(1) if m else name).rsplit("/", 1)[-1]
            out.append(_File(f, table, int(stem) if stem.isdigit() and len(stem) < 10 else -1))
    return out


def read(path: Path, options: ReadOptions) -> Profile:
    directory = unit(path)
    files = _files(directory)
    traces = [f for f in files if f.table in csv_tables.TRACE_TABLES]
    if not traces:
        what = ", ".join(sorted({f.table for f in files})) or "no rocprofv3 CSV file"
        raise TraceError(
            directory, f"nothing to analyse: rocprofv3 CSV files without a kernel, copy or API trace ({what})"
        )
    notes: list[str] = []
    infos = [(f, _parse(f)) for f in files if f.table == "agent_info"]
    notes += [f"{f.path.name}: skipped {n:,} row(s) with {why}" for f, rows in infos for why, n in rows.skipped.items()]
    agents = _Agents([rows for _, rows in infos])
    parsed = [(f, _parse(f)) for f in traces]
    agents.learn([rows for f, rows in parsed if f.table == "kernel_trace"])
    blocks: list[Block] = []
    for i, (f, rows) in enumerate(parsed):
        pid = f.pid if f.pid >= 0 else 1_000_000_000 + i
        if f.table == "kernel_trace":
            blocks.append(_kernels(rows, pid, agents))
        elif f.table == "memory_copy_trace":
            blocks.append(_copies(rows, pid, agents))
        else:
            blocks += _calls(rows, pid, f.path.name, notes)
    if options.progress:
        options.progress(directory.stat().st_size)
    lost = [f"{n:,} {b.table} row(s) with {why}" for b in blocks for why, n in b.skipped.items()]
    if not any(len(b) for b in blocks):
        if lost:
            raise TraceError(
                directory, f"not a valid rocprofv3 CSV output: no usable record; skipped {'; '.join(lost)}"
            )
        raise TraceError(directory, "nothing to analyse: no kernel dispatch, copy, HIP call or marker range in it")
    found = ranks_of(blocks)
    forced = {p: int(options.rank) for p in found} if options.rank is not None and len(found) == 1 else None
    done = assemble(directory, blocks, None, notes, ranks=forced)
    prof = done.profile
    rccl = common.link_collectives(prof)
    for line in notes:
        prof.warn(line)
    used = sorted({int(d) for d in np.unique(prof.events["device"]).tolist() if d >= 0})
    info: dict[str, Any] = {
        "path": str(directory),
        "format": NAME,
        "files": [f.path.name for f in files][:64],
        "events": len(prof.events),
        "ranks": {str(r): p for p, r in sorted(done.ranks.items(), key=lambda x: x[1])},
    }
    info["device_properties"] = common.device_properties(agents.gpus, set(used))
    info["devices"] = [p["name"] for p in info["device_properties"]]
    if rccl:
        info["rccl_collective_kernels"] = rccl
    if len(set(done.ranks.values())) == 1:
        info["rank"] = next(iter(done.ranks.values()))
    prof.run["sources"] = [info]
    prof.run["process_names"] = names_by_rank(done.ranks, {})
    return prof


def _parse(f: _File) -> Rows:
    return csv_tables.parse(read_bytes(f.path).decode("utf-8", "replace"), f.table)


class _Agents:
    """Agent ids (``Agent_Id``, ``"Agent 4"``, ``"GPU 0"``) → GPU index (-1: a CPU), through
    ``agent_info``'s rows: a GPU's index is its place among the GPUs by node id."""

    def __init__(self, infos: list[Rows]):
        self.by_logical: dict[int, int] = {}
        self.by_node: dict[int, int] = {}
        self.gpus: list[dict] = []
        self.known = False  # agent_info read: an agent it lacks is no GPU
        self.guessed: dict[int, int] = {}
        for rows in infos[:1]:  # (every process of one machine writes the same agents)
            node, logical = rows.ints("Node_Id", -1), rows.ints("Logical_Node_Id", -1)
            kind = rows.text("Agent_Type")
            order = sorted(range(len(rows)), key=lambda i: int(node[i]))
            gpus = [i for i in order if kind[i] == "GPU"]
            for i in order:
                idx = gpus.index(i) if i in gpus else -1
                self.by_node[int(node[i])] = idx
                self.by_logical[int(logical[i])] = idx
            for idx, i in enumerate(gpus):
                self.gpus.append(_gpu(rows, i, idx))
            self.known = bool(len(rows))

    def learn(self, kernels: list[Rows]) -> None:
        """Without agent_info: the agents that ran kernels are the GPUs, in id order."""
        if self.known:
            return
        seen: set[int] = set()
        for rows in kernels:
            seen.update(n for lab, n in rows.agents("Agent_Id")[0] if lab != "GPU" and n >= 0)
        self.guessed = {n: i for i, n in enumerate(sorted(seen))}

    def device(self, label: str, n: int) -> int:
        if n < 0:
            return n  # ODD (unreadable) or -1 (none): as they are
        if label in ("GPU", "CPU"):
            return n if label == "GPU" else -1
        if self.known:
            return self.by_logical.get(n, self.by_node.get(n, -1))
        return self.guessed.get(n, -1)

    def devices(self, values: list[tuple[str, int]], index: np.ndarray) -> np.ndarray:
        lut = np.array([self.device(lab, n) for lab, n in values], np.int64)
        return lut[index] if len(lut) else np.zeros(0, np.int64)


def _gpu(rows: Rows, i: int, index: int) -> dict:
    def col(name: str) -> Any:
        v = rows.text(name)[i].strip()
        return int(v) if v.isdigit() else v

    return {
        "type": common.GPU_AGENT,
        "index": index,
        "name": col("Name"),
        "product_name": col("Product_Name") or col("Model_Name"),
        "cu_count": col("Cu_Count"),
        "local_mem_size": col("Local_Mem_Size"),
    }


def _pids(rows: Rows, pid: int) -> np.ndarray:
    return rows.ints("Process_Id") if rows.has("Process_Id") else np.full(len(rows), pid, np.int64)


def _kernels(rows: Rows, pid: int, agents: _Agents) -> Block:
    """Kernel dispatches on their GPU and stream (else queue)."""
    skipped = dict(rows.skipped)
    dev = agents.devices(*rows.agents("Agent_Id"))
    track = rows.ints("Stream_Id") if rows.has("Stream_Id") else rows.ints("Queue_Id")
    names, name = csv_tables.ids(rows.text("Kernel_Name"))
    cols = [rows.ints("Start_Timestamp"), rows.ints("End_Timestamp"), dev, track, rows.ints("Correlation_Id", -1)]
    cols += [_pids(rows, pid), name]
    labels = ("Start_Timestamp", "End_Timestamp", "Agent_Id", "Stream_Id", "Correlation_Id", "Process_Id", "name")
    start, end, dev, track, corr, pids, name = usable(cols, labels, _ODD, skipped)
    return Block(
        "kernel_trace", K_KERNEL, names, name, start, end, pids, track, dev, corr, cat="kernel", skipped=skipped
    )


def _copies(rows: Rows, pid: int, agents: _Agents) -> Block:
    """Memory copies, on the GPU they go to (else the one they come from)."""
    skipped = dict(rows.skipped)
    ops, op = csv_tables.ids(rows.text("Direction"))
    src = agents.devices(*rows.agents("Source_Agent_Id"))
    dst = agents.devices(*rows.agents("Destination_Agent_Id"))
    cols = [rows.ints("Start_Timestamp"), rows.ints("End_Timestamp"), src, dst, rows.ints("Stream_Id")]
    cols += [rows.ints("Correlation_Id", -1), _pids(rows, pid), op]
    labels = ("Start_Timestamp", "End_Timestamp", "Source_Agent_Id", "Destination_Agent_Id", "Stream_Id")
    start, end, src, dst, track, corr, pids, op = usable(
        cols, labels + ("Correlation_Id", "Process_Id", "op"), _ODD, skipped
    )
    direction = np.array([ROCPROF_COPY.get(o, 0) for o in ops], np.int8)[op] if len(op) else np.zeros(0, np.int8)
    dev = np.where(dst >= 0, dst, src)
    names = [common.copy_name(o) for o in ops]
    return Block(
        "memory_copy_trace",
        K_MEMCPY,
        names,
        op,
        start,
        end,
        pids,
        track,
        dev,
        corr,
        None,
        "gpu_memcpy",
        direction,
        skipped,
    )


def _calls(rows: Rows, pid: int, file: str, notes: list[str]) -> list[Block]:
    """An API trace's HIP and RCCL calls (runtime) and ROCTx ranges (annotations named by their
    message); HSA calls, marks and control calls counted."""
    skipped = dict(rows.skipped)
    names, name = csv_tables.ids(rows.text("Function"))
    domains, domain = csv_tables.ids(rows.text("Domain"))
    cols = [rows.ints("Start_Timestamp"), rows.ints("End_Timestamp"), rows.ints("Thread_Id")]
    cols += [rows.ints("Correlation_Id", -1), _pids(rows, pid), name, domain]
    labels = ("Start_Timestamp", "End_Timestamp", "Thread_Id", "Correlation_Id", "Process_Id", "name", "domain")
    start, end, tid, corr, pids, name, domain = usable(cols, labels, _ODD, skipped)
    of = np.array([_domain(d) for d in domains], object)[domain] if len(domain) else np.zeros(0, object)
    out = []
    for what, kind, cat, table in (
        ("hip", K_RUNTIME, "cuda_runtime", "hip_api_trace"),
        ("rccl", K_RUNTIME, "rccl_api", "rccl_api_trace"),
        ("range", K_ANNOTATION, "user_annotation", "marker_api_trace"),
    ):
        m = of == what
        if what == "range":
            m &= np.isin(name, [i for i, n in enumerate(names) if n not in _ROCTX_CALLS]) & (end > start)
        if m.any():  # (a range links to no device work: no correlation id, as from the JSON)
            link = corr[m] if kind == K_RUNTIME else None
            out.append(Block(table, kind, names, name[m], start[m], end[m], pids[m], tid[m], None, link, cat=cat))
    marks = int(((of == "range") | (of == "marker")).sum()) - int(sum(len(b) for b in out if b.kind == K_ANNOTATION))
    if marks:
        notes.append(f"{file}: not used by the analysis: {marks:,} ROCTx mark(s) or control call(s) with no span")
    other = int((of == "").sum())
    if other:
        notes.append(f"{file}: not used by the analysis: {other:,} call(s) of {', '.join(_unused(domains))}")
    if out:
        out[0].skipped = skipped
    elif skipped:
        out.append(
            Block("api_trace", K_RUNTIME, names, name[:0], start[:0], end[:0], pids[:0], tid[:0], skipped=skipped)
        )
    return out


def _domain(domain: str) -> str:
    if domain in common.HIP_DOMAINS:
        return "hip"
    if domain in common.RCCL_DOMAINS:
        return "rccl"
    if domain in _RANGE_DOMAINS:
        return "range"
    if domain in common.MARKER_DOMAINS:
        return "marker"
    return ""


def _unused(domains: list[str]) -> list[str]:
    return sorted(d[:40] for d in domains if not _domain(d))[:4]
