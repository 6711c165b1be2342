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

from pathlib import Path
from typing import Any

import numpy as np

from ...core.errors import TraceError
from ...core.profile import K_ANNOTATION, K_KERNEL, K_MEMCPY, K_RUNTIME, Profile
from ...knowledge.copy_kinds import ROCPROF_COPY
from ..base import ReadOptions
from ..vendor_rows import ODD, Block, assemble, ranks_of, usable
from . import common, csv_files, csv_tables
from .csv_agents import Agents
from .csv_tables import Rows

NAME = "rocprofv3-csv"
_ODD = "a missing or non-integer {}"
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
_MADE_UP = -1000  # the made-up process of GPU d's kernels whose process no file says: _MADE_UP - d


def sniff(path: Path, head: bytes) -> bool:
    return csv_tables.table_of_head(head) is not None


def unit(path: Path) -> Path:
    """The input a file stands for: the directory that holds it (its rocprofv3 CSV files are one run's)."""
    return path if path.is_dir() else path.parent


def says_of(path: Path) -> bool:
    """Whether reading ``unit(path)`` says what became of ``path`` (a file named as rocprofv3
    names its CSV files: read, or a note why not)."""
    return csv_files.named_as_run(path.name)


def read(path: Path, options: ReadOptions) -> Profile:
    directory = unit(path)
    notes: list[str] = []
    files = csv_files.found(directory, notes)
    traces = [f for f in files if f.table in csv_tables.TRACE_TABLES]
    if not traces:
        what = ", ".join(sorted({f.table for f in files})) or "no rocprofv3 CSV file"
        said = f"; {'; '.join(notes[:3])}" if notes else ""
        raise TraceError(
            directory, f"nothing to analyse: rocprofv3 CSV files without a kernel, copy or API trace ({what}){said}"
        )
    infos = [rows for f in files if f.table == "agent_info" for rows in [csv_files.parse(f, notes)] if rows]
    agents = Agents(infos)
    parsed = [(f, rows) for f in traces for rows in [csv_files.parse(f, notes)] if rows is not None]
    agents.learn([rows for f, rows in parsed if f.table == "kernel_trace"], notes)
    blocks = _blocks(parsed, agents, notes)
    if options.progress:
        options.progress(directory.stat().st_size)
    lost = [f"{n:,} {b.table} row(s) with {why}" for b in blocks for why, n in b.skipped.items()]
    if not any(len(b) for b in blocks):
        if lost or not parsed:
            said = "; ".join(lost) or "; ".join(notes[:3])
            raise TraceError(directory, f"not a valid rocprofv3 CSV output: no usable record; skipped {said}")
        raise TraceError(directory, "nothing to analyse: no kernel dispatch, copy, HIP call or marker range in it")
    found = ranks_of(blocks)
    on_device = any(len(b) and b.device is not None and (b.device >= 0).any() for b in blocks)
    forced = {p: int(options.rank) for p in found} if options.rank is not None and not on_device else None
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
        "ranks": {str(r): p for p, r in sorted(done.ranks.items(), key=lambda x: x[1]) if p >= 0},
    }
    info["device_properties"] = common.device_properties(agents.gpus, set(used))
    info["devices"] = [p["name"] for p in info["device_properties"]]
    if rccl:
        info["rccl_collective_kernels"] = rccl
    if len(set(done.ranks.values())) == 1:
        info["rank"] = next(iter(done.ranks.values()))
    prof.run["sources"] = [info]
    prof.run["process_names"] = {}
    return prof


def _blocks(parsed: list[tuple[csv_files.File, Rows]], agents: Agents, notes: list[str]) -> list[Block]:
    """The files' rows as blocks, each row of the process its own ``Process_Id``, its file's
    name (``<pid>_...``) or its group's calls say (see ``_Pids``)."""
    pids = _Pids(parsed)
    blocks: list[Block] = []
    for f, rows in sorted(parsed, key=lambda x: x[0].table != "kernel_trace"):  # (kernels first: their GPUs)
        if f.table == "kernel_trace":
            blocks.append(_kernels(rows, pids, f, agents))
        elif f.table == "memory_copy_trace":
            blocks.append(_copies(rows, pids, f, agents))
        else:
            blocks += _calls(rows, pids.of(rows, f.prefix), f.path.name, notes)
    if pids.made_up:
        notes.append(
            f"{pids.made_up:,} kernel(s) launched from threads no call names (their process is unknown): "
            "one process per GPU taken for them"
        )
    return blocks


class _Pids:
    """The process of each row: its ``Process_Id``; else its file's (``<pid>_...``, else the one
    process its prefix's calls name); else its launching thread's (``Thread_Id`` of a call's
    thread). A kernel whose thread no call names: one made-up process per GPU (a negative pid;
    ``made_up`` counts them). A copy: the process whose kernels ran on its GPU, ``ODD`` (left out,
    counted) where several did; else one made-up process per prefix."""

    def __init__(self, parsed: list[tuple[csv_files.File, Rows]]):
        self.of_prefix: dict[str, int] = {}
        self.of_thread: dict[int, int] = {}
        self.of_device: dict[int, set[int]] = {}
        self.made_up = 0
        calls: dict[str, set[int]] = {}
        for f, rows in parsed:
            if f.pid is not None:
                self.of_prefix[f.prefix] = f.pid
            if rows.has("Process_Id") and rows.has("Thread_Id"):
                pid, tid = rows.ints("Process_Id"), rows.ints("Thread_Id")
                calls.setdefault(f.prefix, set()).update(np.unique(pid).tolist())
                pairs = np.unique(np.stack([tid, pid], 1), axis=0) if len(pid) else np.zeros((0, 2), np.int64)
                self.of_thread.update({int(t): int(p) for t, p in pairs.tolist()})
        for i, prefix in enumerate(sorted({f.prefix for f, _ in parsed})):
            one = calls.get(prefix, set())
            self.of_prefix.setdefault(prefix, next(iter(one)) if len(one) == 1 else -1 - i)

    def of(self, rows: Rows, prefix: str, device: np.ndarray | None = None, copies: bool = False) -> np.ndarray:
        if rows.has("Process_Id"):
            return rows.ints("Process_Id")
        default = self.of_prefix[prefix]
        out = np.full(len(rows), default, np.int64)
        if default >= 0:
            return out
        if rows.has("Thread_Id"):
            tids, inv = np.unique(rows.ints("Thread_Id"), return_inverse=True)
            out = np.array([self.of_thread.get(t, default) for t in tids.tolist()], np.int64)[inv.reshape(-1)]
        if device is None:
            return out
        unknown = out < 0
        if not copies:
            made_up = unknown & (device >= 0)
            self.made_up += int(made_up.sum()) if self.of_thread else 0
            return np.where(made_up, _MADE_UP - device, out)
        devs, inv = np.unique(device, return_inverse=True)
        lut = [
            (next(iter(p)) if len(p) == 1 else ODD) if (p := self.of_device.get(d)) else default for d in devs.tolist()
        ]
        return np.where(unknown, np.array(lut, np.int64)[inv.reshape(-1)], out) if len(devs) else out

    def ran(self, device: np.ndarray, pid: np.ndarray) -> None:
        for d in np.unique(device).tolist():
            if d >= 0:
                self.of_device.setdefault(d, set()).update(np.unique(pid[device == d]).tolist())


def _kernels(rows: Rows, of: _Pids, f: csv_files.File, agents: Agents) -> Block:
    """Kernel dispatches on their GPU and stream (else queue)."""
    skipped = dict(rows.skipped)
    dev = agents.devices(*rows.agents("Agent_Id"))
    track = rows.ints("Stream_Id") if rows.has("Stream_Id") else rows.ints("Queue_Id")
    names, name = csv_tables.ids(rows.text("Kernel_Name"))
    cols = [rows.ints("Start_Timestamp"), rows.ints("End_Timestamp"), dev, track, rows.ints("Correlation_Id", -1)]
    cols += [of.of(rows, f.prefix, dev), name]
    labels = ("Start_Timestamp", "End_Timestamp", "Agent_Id", "Stream_Id", "Correlation_Id", "Process_Id", "name")
    start, end, dev, track, corr, pids, name = usable(cols, labels, _ODD, skipped)
    of.ran(dev, pids)
    return Block(f.path.name, K_KERNEL, names, name, start, end, pids, track, dev, corr, cat="kernel", skipped=skipped)


def _copies(rows: Rows, of: _Pids, f: csv_files.File, agents: Agents) -> Block:
    """Memory copies, on the GPU they go to (else the one they come from)."""
    skipped = dict(rows.skipped)
    ops, op = csv_tables.ids(rows.text("Direction"))
    src = agents.devices(*rows.agents("Source_Agent_Id"))
    dst = agents.devices(*rows.agents("Destination_Agent_Id"))
    cols = [rows.ints("Start_Timestamp"), rows.ints("End_Timestamp"), src, dst, rows.ints("Stream_Id")]
    cols += [rows.ints("Correlation_Id", -1), of.of(rows, f.prefix, np.where(dst >= 0, dst, src), copies=True), op]
    labels = ("Start_Timestamp", "End_Timestamp", "Source_Agent_Id", "Destination_Agent_Id", "Stream_Id")
    start, end, src, dst, track, corr, pids, op = usable(
        cols, labels + ("Correlation_Id", "Process_Id", "op"), _ODD, skipped
    )
    direction = np.array([ROCPROF_COPY.get(o, 0) for o in ops], np.int8)[op] if len(op) else np.zeros(0, np.int8)
    dev = np.where(dst >= 0, dst, src)
    names = [common.copy_name(o) for o in ops]
    return Block(
        f.path.name,
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


def _calls(rows: Rows, pid: np.ndarray, file: str, notes: list[str]) -> list[Block]:
    """An API trace's HIP and RCCL calls (runtime) and ROCTx ranges (annotations named by their
    message); HSA calls, marks and control calls counted."""
    skipped = dict(rows.skipped)
    names, name = csv_tables.ids(rows.text("Function"))
    domains, domain = csv_tables.ids(rows.text("Domain"))
    cols = [rows.ints("Start_Timestamp"), rows.ints("End_Timestamp"), rows.ints("Thread_Id")]
    cols += [rows.ints("Correlation_Id", -1), pid, name, domain]
    labels = ("Start_Timestamp", "End_Timestamp", "Thread_Id", "Correlation_Id", "Process_Id", "name", "domain")
    start, end, tid, corr, pids, name, domain = usable(cols, labels, _ODD, skipped)
    of = np.array([_domain(d) for d in domains], object)[domain] if len(domain) else np.zeros(0, object)
    out = []
    for what, kind, cat in (
        ("hip", K_RUNTIME, "cuda_runtime"),
        ("rccl", K_RUNTIME, "rccl_api"),
        ("range", K_ANNOTATION, "user_annotation"),
    ):
        m = of == what
        if what == "range":
            m &= np.isin(name, [i for i, n in enumerate(names) if n not in _ROCTX_CALLS]) & (end > start)
        if m.any():  # (a range links to no device work: no correlation id, as from the JSON)
            link = corr[m] if kind == K_RUNTIME else None
            out.append(Block(file, kind, names, name[m], start[m], end[m], pids[m], tid[m], None, link, cat=cat))
    marks = int(((of == "range") | (of == "marker")).sum()) - int(sum(len(b) for b in out if b.kind == K_ANNOTATION))
    if marks:
        notes.append(f"{file}: not used by the analysis: {marks:,} ROCTx mark(s) or control call(s) with no span")
    other = int((of == "").sum())
    if other:
        notes.append(f"{file}: not used by the analysis: {other:,} call(s) of {', '.join(_unused(domains))}")
    if out:
        out[0].skipped = skipped
    elif skipped:
        out.append(Block(file, K_RUNTIME, names, name[:0], start[:0], end[:0], pids[:0], tid[:0], skipped=skipped))
    return out


def _domain(domain: str) -> str:
    """``common.domain_of``, with the marker domains that hold ranges told apart ("range")."""
    kind = common.domain_of(domain)
    return "range" if kind == "marker" and domain in _RANGE_DOMAINS else kind


def _unused(domains: list[str]) -> list[str]:
    return sorted(d[:40] or "(no domain)" for d in domains if not _domain(d))[:4]
