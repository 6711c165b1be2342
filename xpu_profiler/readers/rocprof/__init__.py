"""rocprofv3's JSON output (``rocprofv3 --output-format json``: ``<host>/<pid>_results.json``).

One file per profiled process: ``{"rocprofiler-sdk-tool": [{metadata, agents, strings,
kernel_symbols, buffer_records, ...}]}`` (ROCm/rocprofiler-sdk ``source/lib/output/
generateJSON.cpp``). What is read (every key but the top one may be missing; older releases
lack ``stream_id``, hip ``args``, ``gpu_index``):

- ``buffer_records.kernel_dispatch`` → kernels, named by ``kernel_symbols[kernel_id]``'s
  ``formatted_kernel_name`` (the demangled name without ``.kd``: what rocpd and the SDK's own
  tests show; ``truncated_kernel_name`` collides), on the GPU of ``dispatch_info.agent_id``, the
  stream ``stream_id`` (else the HSA queue);
- ``memory_copy`` → copies, named as Kineto names them (``Memcpy HtoD (Host -> Device)``), with
  their bytes;
- ``hip_api`` → runtime calls on their thread; a call and the device work it enqueued share
  ``correlation_id.internal``;
- ``rccl_api`` → runtime calls; the kernels launched from inside a collective call get that
  collective (``ncclAllReduce`` → ``allreduce``) in the comms table;
- ``marker_api`` → ROCTx ranges as annotations, named by their message
  (``strings.marker_api``: correlation id → message); marks (no span) are counted.

Kinds and operations are decoded by name through the file's ``strings.buffer_records`` (the
numbers change between releases). Times are ns on CLOCK_BOOTTIME: the files of one machine
line up. The process's rank is the GPU all its work ran on (rank *i* on GPU *i*), else its
file name's, else ``--rank``.

The rocpd SQLite database, rocprofv3's default output, is ``rocprof.rocpd``.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from ...core.errors import TraceError
from ...core.profile import K_ANNOTATION, K_KERNEL, K_MEMCPY, K_RUNTIME, Profile
from ...knowledge.copy_kinds import ROCPROF_COPY
from ..base import ReadOptions, is_json_document, resolve_rank
from ..content import read_bytes
from ..vendor_rows import I64_MAX, ODD, Block, assemble, names_by_rank, on_gpu, threads_by_rank, usable
from . import common, twins
from .records import Copy, Kernel, Tool, decode

NAME = "rocprofv3"
TOP_KEY = b'"rocprofiler-sdk-tool"'


def sniff(path: Path, head: bytes) -> bool:
    return is_json_document(head) and TOP_KEY in head[:4096]


def settle(
    found: list[tuple[Path, ModuleType]], skipped: list[tuple[Path, str]] | None
) -> list[tuple[Path, ModuleType]]:
    """The inputs found, each rocprofv3 process read once whatever formats it was written in (``twins``)."""
    return twins.one_format_per_process(found, skipped)


def read(path: Path, options: ReadOptions) -> Profile:
    data = read_bytes(path, options.progress)
    tools, odd = decode(path, data)
    del data
    if not tools:
        raise TraceError(path, "not a valid rocprofv3 output: its 'rocprofiler-sdk-tool' list is empty")
    notes = [f"{path.name}: skipped {what}" for what in odd]
    blocks: list[Block] = []
    used: set[int] = set()
    pids = []
    for tool in tools:
        pid = tool.metadata.pid
        pids.append(pid)
        blocks += _blocks(tool, pid, used, notes, path)
    lost = odd + [f"{n:,} {b.table} row(s) with {why}" for b in blocks for why, n in b.skipped.items()]
    if not any(len(b) for b in blocks) and lost:
        raise TraceError(path, f"not a valid rocprofv3 output: no usable record; skipped {'; '.join(lost)}")
    if not any(len(b) for b in blocks):
        raise TraceError(path, "nothing to analyse: no kernel dispatch, copy, HIP call or marker range in it")
    declared = next(iter(used)) if len(used) == 1 and len(tools) == 1 else None
    rank = int(resolve_rank(path, options, declared) or 0)
    # several processes in one file: each its own rank, as their files side by side would be
    done = assemble(path, blocks, None, notes, ranks={p: rank for p in pids} if len(set(pids)) == 1 else None)
    prof = done.profile
    rank = min(done.ranks.values(), default=rank)
    rccl = common.link_collectives(prof)
    for line in notes:
        prof.warn(line)
    agents = [_agent(a, i) for t in tools for i, a in enumerate(t.agents)]
    gpu = common.gpu_indices(agents)
    for a in agents:
        a["index"] = gpu.get(a["key"], -1)
    info: dict[str, Any] = {"path": str(path), "format": NAME, "rank": rank, "events": len(prof.events)}
    info["device_properties"] = common.device_properties(agents, used)
    info["devices"] = [p["name"] for p in info["device_properties"]]
    if rccl:
        info["rccl_collective_kernels"] = rccl
    host = tools[0].metadata.node.get("hostname") if isinstance(tools[0].metadata.node, dict) else None
    if isinstance(host, str) and host:
        info["host"] = host[:256]
    prof.run["sources"] = [info]
    prof.run["process_names"] = names_by_rank(done.ranks, {t.metadata.pid: _command(t) for t in tools})
    prof.run["thread_names"] = threads_by_rank(done.ranks, {})
    return prof


def _command(tool: Tool) -> str:
    cmd = tool.metadata.command
    return " ".join(str(x) for x in cmd[:4])[:200] if isinstance(cmd, list) and cmd else f"pid {tool.metadata.pid}"


def _agent(a: Any, i: int) -> dict:
    d = dict(a) if isinstance(a, dict) else {}
    h = d.get("id")
    d["key"] = h.get("handle", i) if isinstance(h, dict) else i
    return d


class _Names:
    """Every (domain, operation) of the file as one list of names: ``ids(kind, op)``."""

    def __init__(self, tool: Tool):
        self.domains = [r.kind for r in tool.strings.buffer_records]
        self.ops = [r.operations for r in tool.strings.buffer_records]
        self.names: list[str] = []
        self.offset: list[int] = []
        for ops in self.ops:
            self.offset.append(len(self.names))
            self.names.extend(ops)

    def domain(self, kind: int) -> str:
        return self.domains[kind] if 0 <= kind < len(self.domains) else f"kind {kind}"

    def ids(self, kind: np.ndarray, op: np.ndarray) -> tuple[list[str], np.ndarray]:
        """(names, ids) of the records' operations; a made-up name for one the table lacks."""
        names = list(self.names)
        if not len(kind):
            return names, np.zeros(0, np.int64)
        pairs, inv = np.unique(np.stack([kind, op], 1), axis=0, return_inverse=True)
        lut = np.empty(len(pairs), np.int64)
        for i, (k, o) in enumerate(pairs.tolist()):
            if 0 <= k < len(self.ops) and 0 <= o < len(self.ops[k]):
                lut[i] = self.offset[k] + o
            else:
                lut[i] = len(names)
                names.append(f"{self.domain(k)} operation {o}")
        return names, lut[inv.reshape(-1)]


def _ints(records: list, field: str | Callable[[Any], int]) -> np.ndarray:
    """A field of the records (a dotted path, or a function of the record) as int64; a value
    beyond int64 (rocprofiler writes uint64) is ``ODD``: ``usable`` skips its record."""
    get = attrgetter(field) if isinstance(field, str) else field
    try:
        return np.fromiter(map(get, records), np.int64, len(records))
    except OverflowError:
        return np.array([v if ODD < v <= I64_MAX else ODD for v in map(get, records)], np.int64)


def _usable(cols: dict[str, np.ndarray], skipped: dict[str, int]) -> list[np.ndarray]:
    return usable(list(cols.values()), list(cols), "a value beyond int64 in {}", skipped)


def _blocks(tool: Tool, pid: int, used: set[int], notes: list[str], path: Path) -> list[Block]:
    """The process's records as blocks: kernels and copies (the GPUs they ran on go to
    ``used``), then HIP calls, RCCL calls (their launches' kernels get the collective) and
    ROCTx ranges."""
    names = _Names(tool)
    agents = [_agent(a, i) for i, a in enumerate(tool.agents)]
    gpu = common.gpu_indices(agents)
    br = tool.buffer_records
    out: list[Block] = []
    if br.kernel_dispatch:
        out.append(_kernels(tool, br.kernel_dispatch, pid, gpu, used, notes, path))
    if br.memory_copy:
        out.append(_copies(br.memory_copy, names, pid, gpu, used))
    hip = [r for r in br.hip_api if names.domain(r.kind) in common.HIP_DOMAINS]
    unnamed = sum(not 0 <= r.kind < len(names.domains) for r in br.hip_api)
    if unnamed:  # (the file's table of record kinds lacks them: which API they called is unknown)
        notes.append(
            f"{path.name}: skipped {unnamed:,} hip_api record(s) of a kind its strings.buffer_records table does not name"
        )
    if hip:
        out.append(_api(hip, names, pid, "hip_api", K_RUNTIME, "cuda_runtime")[0])
    if br.rccl_api:
        out.append(_api(br.rccl_api, names, pid, "rccl_api", K_RUNTIME, "rccl_api")[0])
    if br.marker_api:
        out += _markers(tool, br.marker_api, names, pid, notes, path)
    return out


def _kernels(tool: Tool, kd: list, pid: int, gpu: dict, used: set[int], notes: list[str], path: Path) -> Block:
    """Kernel dispatches, named by their kernel symbol, on their GPU and stream (by their id,
    ``kernel 12``, where ``kernel_symbols`` lacks it: said in ``notes``)."""
    symbols = {s.kernel_id: s.display() for s in tool.kernel_symbols}
    skipped: dict[str, int] = {}
    cols = {
        "start_timestamp": _ints(kd, "start_timestamp"),
        "end_timestamp": _ints(kd, "end_timestamp"),
        "kernel_id": _ints(kd, "dispatch_info.kernel_id"),
        "agent_id": _ints(kd, "dispatch_info.agent_id.handle"),
        "stream_id": _ints(kd, Kernel.stream),
        "correlation_id": _ints(kd, "correlation_id.internal"),
    }
    start, end, kid, agent, stream, corr = _usable(cols, skipped)
    uniq = np.unique(kid).tolist()
    table = [symbols.get(k) or f"kernel {k}" for k in uniq]
    unnamed = [k for k in uniq if not symbols.get(k)]
    if unnamed:
        rows = int(np.isin(kid, unnamed).sum())
        notes.append(
            f"{path.name}: {rows:,} kernel dispatch(es) of {len(unnamed):,} kernel(s) kernel_symbols does not name: "
            f"named by their id (kernel {unnamed[0]})"
        )
    dev = np.array([gpu.get(a, -1) for a in agent.tolist()], np.int64)
    used.update(np.unique(dev[on_gpu(dev)]).tolist())
    return Block(
        "kernel_dispatch",
        K_KERNEL,
        table,
        np.searchsorted(np.array(uniq, np.int64), kid),
        start,
        end,
        np.full(len(start), pid, np.int64),
        stream,
        device=dev,
        corr=corr,
        cat="kernel",
        skipped=skipped,
    )


def _copies(mc: list, names: _Names, pid: int, gpu: dict, used: set[int]) -> Block:
    """Memory copies, named as Kineto names them, with their bytes, on the GPU they go to
    (else the one they come from)."""
    skipped: dict[str, int] = {}
    cols = {f: _ints(mc, f) for f in ("start_timestamp", "end_timestamp", "kind", "operation", "bytes")}
    cols |= {"src_agent_id": _ints(mc, "src_agent_id.handle"), "dst_agent_id": _ints(mc, "dst_agent_id.handle")}
    cols |= {"stream_id": _ints(mc, Copy.stream), "correlation_id": _ints(mc, "correlation_id.internal")}
    start, end, k, o, nbytes, src_agent, dst_agent, stream, corr = _usable(cols, skipped)
    ops, ids = names.ids(k, o)
    copy_names = [common.copy_name(x) for x in ops]
    src = np.array([gpu.get(a, -1) for a in src_agent.tolist()], np.int64)
    dst = np.array([gpu.get(a, -1) for a in dst_agent.tolist()], np.int64)
    dev = np.where(dst >= 0, dst, src)
    used.update(np.unique(dev[on_gpu(dev)]).tolist())
    return Block(
        "memory_copy",
        K_MEMCPY,
        copy_names,
        ids,
        start,
        end,
        np.full(len(start), pid, np.int64),
        stream,
        device=dev,
        corr=corr,
        flops=nbytes,
        cat="gpu_memcpy",
        copy=np.array([ROCPROF_COPY.get(x, 0) for x in ops], np.int8)[ids] if len(ids) else np.zeros(0, np.int8),
        skipped=skipped,
    )


def _api(recs: list, names: _Names, pid: int, table: str, kind: int, cat: str) -> tuple[Block, list[str]]:
    """API calls on their threads, named by their operation; and the table of those names."""
    skipped: dict[str, int] = {}
    cols = {f: _ints(recs, f) for f in ("start_timestamp", "end_timestamp", "kind", "operation", "thread_id")}
    cols["correlation_id"] = _ints(recs, "correlation_id.internal")
    start, end, k, o, tid, corr = _usable(cols, skipped)
    ops, ids = names.ids(k, o)
    b = Block(
        table, kind, ops, ids, start, end, np.full(len(start), pid, np.int64), tid, corr=corr, cat=cat, skipped=skipped
    )
    return b, ops


def _markers(tool: Tool, recs: list, names: _Names, pid: int, notes: list[str], path: Path) -> list[Block]:
    """ROCTx ranges as annotations named by their message; marks with no span are counted."""
    block, ops = _api(recs, names, pid, "marker_api", K_ANNOTATION, "user_annotation")
    is_range = np.array([x in common.MARKER_RANGES for x in ops], bool)[block.name] & (block.end > block.start)
    marks = int((~is_range).sum())
    if marks:
        notes.append(f"{path.name}: not used by the analysis: {marks:,} ROCTx mark(s) or control call(s) with no span")
    messages = {m.key: m.value for m in tool.strings.marker_api}
    corr = block.corr[is_range] if block.corr is not None else np.zeros(0, np.int64)
    op_of = np.asarray(ops, object)[block.name[is_range]] if is_range.any() else np.zeros(0, object)
    text = [messages.get(c) or str(o) for c, o in zip(corr.tolist(), op_of.tolist())]
    table = list(dict.fromkeys(text))
    index = {t: i for i, t in enumerate(table)}
    return [
        Block(
            "marker_api",
            K_ANNOTATION,
            table,
            np.array([index[t] for t in text], np.int64),
            block.start[is_range],
            block.end[is_range],
            block.pid[is_range],
            block.track[is_range],
            cat="user_annotation",
            skipped=block.skipped,
        )
    ]
