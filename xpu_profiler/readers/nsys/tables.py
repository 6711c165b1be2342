"""The tables of an Nsight Systems export as blocks of rows (``vendor_rows.Block``).

Column names are read from the database, not assumed: exports from 2022.4 (schema 3.0) to
2025.x (3.17) differ in optional columns (``greenContextId``, ``graphNodeId``, NVTX
``textId``), and a missing table means the report traced nothing of that kind (exports are
lazy). An optional integer column is coalesced to its default in the SQL; a row with a NULL
or no integer where a value is needed (times, device, stream, bytes, ``nameId``...) is skipped
and counted by its table and column (``vendor_rows.usable``). ``globalTid``/``globalPid``
pack the process and thread ids: pid = bits 24-47, tid = bits 0-23 (the Nsight Systems User
Guide, "Serialized Process and Thread Identifiers").
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ...core.profile import K_ANNOTATION, K_KERNEL, K_MEMCPY, K_MEMSET, K_RUNTIME, K_UNKNOWN
from ...knowledge import cupti_enums as ce
from ...knowledge.copy_kinds import CUPTI_COPY_KIND
from ..sqlite_db import columns, strings, with_text
from ..vendor_rows import Block, usable

Schema = dict[str, set[str]]
KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
MEMCPY = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET = "CUPTI_ACTIVITY_KIND_MEMSET"
SYNC = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
GRAPH_TRACE = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"
NVTX = "NVTX_EVENTS"
#: tables whose presence makes a database an Nsight Systems export
EXPORT_TABLES = (KERNEL, RUNTIME, MEMCPY, MEMSET, NVTX)
META_TABLES = ("META_DATA_EXPORT", "EXPORT_META_DATA")  # 2023.4 on; 2022.4
#: why an NVTX range with a NULL end is skipped: it was open when profiling stopped
OPEN_RANGE = "no end (a range still open when profiling stopped)"
_API_VERSION = re.compile(r"_v\d+$")  # cudaLaunchKernel_v7000 → cudaLaunchKernel


def pid_of(g: np.ndarray) -> np.ndarray:
    return (g >> 24) & 0xFFFFFF


def tid_of(g: np.ndarray) -> np.ndarray:
    return g & 0xFFFFFF


def _c(sch: Schema, table: str, col: str, default: str = "-1") -> str:
    """A column, coalesced; ``default`` where this export's table lacks it."""
    return f"coalesce({col}, {default})" if col in sch.get(table, ()) else default


class Strings:
    """``StringIds``, read once; the names of runtime calls without their ``_vNNNN`` suffix."""

    def __init__(self, conn: sqlite3.Connection, sch: Schema):
        self.table = strings(conn, "SELECT id, value FROM StringIds") if "StringIds" in sch else {}

    def api(self) -> dict[int, str]:
        return {k: _API_VERSION.sub("", v) for k, v in self.table.items()}


def device_blocks(conn: sqlite3.Connection, sch: Schema, names: Strings, gpu_of: dict) -> list[Block]:
    """Kernels, copies, fills (device work) and synchronizations; ``gpu_of``: (pid, CUDA
    device id) → GPU id where the export maps them (``TARGET_INFO_CUDA_DEVICE``)."""
    out = []
    if KERNEL in sch:
        out.append(_kernels(conn, sch, names, gpu_of))
    if MEMCPY in sch:
        out.append(_copies(conn, sch, gpu_of))
    if MEMSET in sch:
        out.append(_fills(conn, sch, gpu_of))
    if SYNC in sch:
        out.append(_syncs(conn, sch))
    if GRAPH_TRACE in sch:  # --cuda-graph-trace=graph: one row per graph run, its kernels not traced
        out.append(_graph_runs(conn, sch, gpu_of))
    return out


def _device_cols(sch: Schema, table: str) -> dict[str, str]:
    """The columns every row of device work has: times, device, stream, correlation, process."""
    return {
        "start": "start",
        "end": "end",
        "deviceId": "deviceId",
        "streamId": "streamId",
        "correlationId": _c(sch, table, "correlationId"),
        "globalPid": _c(sch, table, "globalPid", "0"),
    }


def _device_block(
    table: str,
    kind: int,
    names: Sequence[str] | Mapping[int, str],
    ids: np.ndarray,
    common: Sequence[np.ndarray],
    gpu_of: dict | None,
    **more: Any,
) -> Block:
    """A Block of device work from its ``_device_cols`` (start, end, deviceId, streamId,
    correlationId, globalPid, as ``_rows`` gives them): the process from globalPid, the GPU
    from (process, device) where ``gpu_of`` maps them (None: the rows are on no GPU)."""
    start, end, dev, stream, corr, gpid = common
    pid = pid_of(gpid)
    gpu = _gpu(dev, pid, gpu_of) if gpu_of is not None else None
    return Block(table, kind, names, ids, start, end, pid, stream, gpu, corr, **more)


def _rows(conn: sqlite3.Connection, table: str, cols: dict[str, str], skipped: dict[str, int]) -> list[np.ndarray]:
    """A table's integer columns (name → SQL expression), without the rows where one is NULL or
    no integer: those are counted in ``skipped`` by the column (``vendor_rows.usable``)."""
    got = columns(conn, f"SELECT {', '.join(cols.values())} FROM {table}", len(cols))
    return usable(got, list(cols), "a NULL or non-integer {}", skipped)


def _kernels(conn: sqlite3.Connection, sch: Schema, names: Strings, gpu_of: dict) -> Block:
    """Kernels, by their demangled name (else their short one)."""
    have = [c for c in ("demangledName", "shortName") if c in sch[KERNEL]]  # the full name, else the short
    name_col = f"coalesce({', '.join(have)}, -1)" if have else "-1"
    skipped: dict[str, int] = {}
    cols = _device_cols(sch, KERNEL) | {have[0] if have else "name": name_col}
    *common, name = _rows(conn, KERNEL, cols, skipped)
    return _device_block(KERNEL, K_KERNEL, names.table, name, common, gpu_of, cat="kernel", skipped=skipped)


def _copies(conn: sqlite3.Connection, sch: Schema, gpu_of: dict) -> Block:
    """Memory copies, named by their kind and ends as Kineto names them, with their bytes."""
    skipped: dict[str, int] = {}
    cols = _device_cols(sch, MEMCPY) | {"bytes": "bytes", "copyKind": "copyKind"}
    cols |= {"srcKind": _c(sch, MEMCPY, "srcKind", "7"), "dstKind": _c(sch, MEMCPY, "dstKind", "7")}
    *common, nbytes, kind, src, dst = _rows(conn, MEMCPY, cols, skipped)
    table, ids = _names_of(zip(kind.tolist(), src.tolist(), dst.tolist()), lambda k: ce.memcpy_name(*k))
    direction = np.array([CUPTI_COPY_KIND.get(k, 0) for k in kind.tolist()], np.int8)
    return _device_block(
        MEMCPY, K_MEMCPY, table, ids, common, gpu_of, flops=nbytes, cat="gpu_memcpy", copy=direction, skipped=skipped
    )


def _fills(conn: sqlite3.Connection, sch: Schema, gpu_of: dict) -> Block:
    """Memsets, named by the kind of memory they fill, with their bytes."""
    skipped: dict[str, int] = {}
    cols = _device_cols(sch, MEMSET) | {"bytes": "bytes", "memKind": _c(sch, MEMSET, "memKind", "2")}
    *common, nbytes, mem = _rows(conn, MEMSET, cols, skipped)
    table, ids = _names_of(mem.tolist(), ce.memset_name)
    return _device_block(MEMSET, K_MEMSET, table, ids, common, gpu_of, flops=nbytes, cat="gpu_memset", skipped=skipped)


def _syncs(conn: sqlite3.Connection, sch: Schema) -> Block:
    """Synchronizations, named by their type, on their stream (-1: none)."""
    skipped: dict[str, int] = {}
    cols = _device_cols(sch, SYNC) | {"syncType": _c(sch, SYNC, "syncType", "0")}
    *common, kind = _rows(conn, SYNC, cols, skipped)
    common[3] = np.where(common[3] == ce.NONE_32, -1, common[3])  # the stream
    return _device_block(SYNC, K_UNKNOWN, ce.SYNC_TYPES, kind, common, None, cat="cuda_sync", skipped=skipped)


def _graph_runs(conn: sqlite3.Connection, sch: Schema, gpu_of: dict) -> Block:
    """CUDA graph runs (``--cuda-graph-trace=graph``) as kernels named by their graph."""
    skipped: dict[str, int] = {}
    cols = _device_cols(sch, GRAPH_TRACE) | {"graphId": _c(sch, GRAPH_TRACE, "graphId")}
    *common, graph = _rows(conn, GRAPH_TRACE, cols, skipped)
    table, ids = _names_of(graph.tolist(), lambda g: f"CUDA graph {g} (its kernels not traced)")
    return _device_block(GRAPH_TRACE, K_KERNEL, table, ids, common, gpu_of, cat="kernel", skipped=skipped)


def runtime_block(conn: sqlite3.Connection, sch: Schema, names: Strings) -> Block | None:
    """CUDA runtime and driver calls on their threads (``eventClass`` 0 and 1 share the table)."""
    if RUNTIME not in sch:
        return None
    skipped: dict[str, int] = {}
    cols = {"start": "start", "end": "end", "globalTid": _c(sch, RUNTIME, "globalTid", "0")}
    cols |= {"correlationId": _c(sch, RUNTIME, "correlationId"), "nameId": "nameId"}
    start, end, gtid, corr, name = _rows(conn, RUNTIME, cols, skipped)
    pid, tid = pid_of(gtid), tid_of(gtid)
    api = names.api()
    return Block(RUNTIME, K_RUNTIME, api, name, start, end, pid, tid, None, corr, cat="cuda_runtime", skipped=skipped)


def nvtx_blocks(conn: sqlite3.Connection, sch: Schema) -> tuple[list[Block], int]:
    """NVTX ranges (push/pop and start/end, any domain) as annotations on the thread that
    opened them, one block per domain (its category ``nvtx`` or ``nvtx:<domain>``); and the
    count of marks (no span), which the analysis does not use."""
    if NVTX not in sch:
        return [], 0
    cols = sch[NVTX]
    text = "coalesce(n.text, s.value)" if "textId" in cols and "StringIds" in sch else "n.text"
    join = "LEFT JOIN StringIds s ON s.id = n.textId" if "textId" in cols and "StringIds" in sch else ""
    domain = "coalesce(n.domainId, 0)" if "domainId" in cols else "0"
    domains = {
        (g >> 24 & 0xFFFFFF, d): str(t)
        for d, g, t in conn.execute(
            f"SELECT {domain}, coalesce(n.globalTid, 0), {text} FROM {NVTX} n {join} "
            f"WHERE n.eventType = {ce.NVTX_DOMAIN_CREATE}"
        )
        if t and isinstance(g, int) and isinstance(d, int)  # an odd row of this auxiliary kind: ignored
    }
    (marks,) = conn.execute(f"SELECT count(*) FROM {NVTX} WHERE eventType = {ce.NVTX_MARK}").fetchone()
    kinds = ", ".join(str(k) for k in ce.NVTX_RANGES)
    (start, end, gtid, dom_id), ((ids, table),) = with_text(
        conn,
        f"SELECT n.start, n.end, coalesce(n.globalTid, 0), {domain}, {text} FROM {NVTX} n {join} "
        f"WHERE n.eventType IN ({kinds}) AND n.end IS NOT NULL",
        4,
        1,
    )
    (open_ranges,) = conn.execute(
        f"SELECT count(*) FROM {NVTX} WHERE eventType IN ({kinds}) AND end IS NULL"
    ).fetchone()
    skipped: dict[str, int] = {OPEN_RANGE: int(open_ranges)} if open_ranges else {}
    names = ["start", "end", "globalTid", "domainId", "text"]
    start, end, gtid, dom_id, ids = usable([start, end, gtid, dom_id, ids], names, "a NULL or non-integer {}", skipped)
    if not len(start):  # an empty block still says what was skipped
        return [Block(NVTX, K_ANNOTATION, table, ids, start, end, gtid, gtid, skipped=skipped)], int(marks)
    pid, tid = pid_of(gtid), tid_of(gtid)
    dom = np.array([domains.get((p, d), "") if d else "" for p, d in zip(pid.tolist(), dom_id.tolist())], object)
    out = []
    for name in sorted(set(dom.tolist())):
        m = dom == name
        cat = f"nvtx:{name}" if name else "nvtx"
        out.append(Block(NVTX, K_ANNOTATION, table, ids[m], start[m], end[m], pid[m], tid[m], cat=cat))
    out[0].skipped = skipped
    return out, int(marks)


def _names_of(keys: Any, name) -> tuple[list[str], np.ndarray]:
    """(names, ids): one name per distinct key, in first-seen order."""
    index: dict = {}
    ids = np.fromiter((index.setdefault(k, len(index)) for k in keys), np.int64)
    table = [name(k) for k in index]
    return table, ids


def _gpu(dev: np.ndarray, pid: np.ndarray, gpu_of: dict) -> np.ndarray:
    if not gpu_of:
        return dev
    return np.array([gpu_of.get((p, d), d) for p, d in zip(pid.tolist(), dev.tolist())], np.int64)


def gpus(conn: sqlite3.Connection, sch: Schema) -> tuple[list[dict], dict[tuple[int, int], int]]:
    """The GPUs as the device table reads them (Kineto's ``deviceProperties`` keys), and
    (pid, CUDA device id) → GPU id."""
    props = []
    if "TARGET_INFO_GPU" in sch:
        have = sch["TARGET_INFO_GPU"]
        keys = [
            ("id", "id"),
            ("name", "name"),
            ("totalGlobalMem", "totalMemory"),
            ("computeMajor", "computeMajor"),
            ("computeMinor", "computeMinor"),
            ("numSms", "smCount"),
            ("warpSize", "threadsPerWarp"),
            ("memoryBandwidth", "memoryBandwidth"),
            ("chipName", "chipName"),
        ]
        keys = [(k, c) for k, c in keys if c in have]
        for row in conn.execute(f"SELECT {', '.join(c for _, c in keys)} FROM TARGET_INFO_GPU ORDER BY id"):
            props.append({k: v for (k, _), v in zip(keys, row) if v is not None})
    mapping: dict[tuple[int, int], int] = {}
    if {"gpuId", "cudaId", "pid"} <= sch.get("TARGET_INFO_CUDA_DEVICE", set()):
        for gpu, cuda, pid in conn.execute("SELECT gpuId, cudaId, pid FROM TARGET_INFO_CUDA_DEVICE"):
            if isinstance(gpu, int) and isinstance(cuda, int) and isinstance(pid, int):  # else ignored
                mapping[(pid, cuda)] = gpu
    return props, mapping


def process_names(conn: sqlite3.Connection, sch: Schema) -> dict[int, str]:
    if {"pid", "name"} <= sch.get("PROCESSES", set()):
        return {p: str(n) for p, n in conn.execute("SELECT pid, name FROM PROCESSES") if isinstance(p, int) and n}
    return {}


def thread_names(conn: sqlite3.Connection, sch: Schema, names: Strings) -> dict[tuple[int, int], str]:
    """(pid, tid) → the thread's name; a row that is not two integers is ignored, as a NULL in
    the other tables of names (they only name what the rows show)."""
    if {"nameId", "globalTid"} <= sch.get("ThreadNames", set()):
        rows = conn.execute("SELECT globalTid, nameId FROM ThreadNames")
        return {
            (g >> 24 & 0xFFFFFF, g & 0xFFFFFF): names.table.get(n, "")
            for g, n in rows
            if isinstance(g, int) and isinstance(n, int)
        }
    return {}


def metadata(conn: sqlite3.Connection, sch: Schema) -> dict[str, str]:
    """``EXPORT_SCHEMA_VERSION``, ``EXPORT_PRODUCT_VERSION``... (2022.4 names the table
    ``EXPORT_META_DATA``)."""
    for t in META_TABLES:
        if {"name", "value"} <= sch.get(t, set()):
            return {str(k): str(v) for k, v in conn.execute(f"SELECT name, value FROM {t}") if k is not None}
    return {}


def epoch_of_clock(conn: sqlite3.Connection, sch: Schema) -> int | None:
    """The epoch ns of the export's clock 0: the session's start (``utcEpochNs``)."""
    if "utcEpochNs" in sch.get("TARGET_INFO_SESSION_START_TIME", set()):
        row = conn.execute("SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME").fetchone()
        if row and isinstance(row[0], int) and 0 < row[0] < 1 << 62:
            return int(row[0])
    return None


def graph_nodes(conn: sqlite3.Connection, sch: Schema) -> int:
    """Kernels recorded as nodes of a CUDA graph (``--cuda-graph-trace=node``)."""
    if "graphNodeId" not in sch.get(KERNEL, set()):
        return 0
    (n,) = conn.execute(f"SELECT count(*) FROM {KERNEL} WHERE graphNodeId IS NOT NULL").fetchone()
    return int(n)
