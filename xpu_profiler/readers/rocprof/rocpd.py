"""rocprofv3's rocpd SQLite database (its default output since ROCm 7.0: ``<host>/<pid>_results.db``),
read through its documented views, never the uuid-suffixed tables behind them.

Views (ROCm/rocprofiler-sdk ``source/share/rocprofiler-sdk-rocpd/data_views.sql``; "Using rocpd
output format" in the ROCm docs):

- ``kernels``: one row per dispatch: ``name`` (the demangled name), ``start``/``end`` (ns),
  ``agent_type_index`` (the GPU's index among the GPUs), ``stream_id``/``queue_id``, ``pid``,
  ``tid``, ``stack_id`` (the correlation id it shares with the HIP call that launched it);
- ``memory_copies``: ``name`` (``MEMORY_COPY_HOST_TO_DEVICE``...), ``size``, source and destination
  agents;
- ``regions``: host spans: ``category`` is the record domain (``HIP_RUNTIME_API_EXT``,
  ``RCCL_API``, ``MARKER_CORE_RANGE_API``...), ``name`` the call, ``extdata`` a ROCTx range's
  ``{"message": ...}``;
- ``processes``, and ``rocpd_info_agent`` for the GPUs' names.

A database is rocpd when it has ``rocpd_metadata`` and the ``kernels`` and ``regions`` views (the
older, unrelated rocmProfileData format also has ``rocpd_metadata``, but ``rocpd_op`` instead).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np

from ...core.errors import TraceError
from ...core.profile import K_ANNOTATION, K_KERNEL, K_MEMCPY, K_RUNTIME, Profile
from ...knowledge.copy_kinds import ROCPROF_COPY
from ..base import ReadOptions
from ..sqlite_db import is_sqlite, opened, schema, tables_of, with_text
from ..vendor_rows import Block, assemble, names_by_rank, ranks_of, usable
from . import common

NAME = "rocpd"
VIEWS = ("kernels", "regions", "memory_copies")
_COLS = ("start", "end", "agent_type_index", "stream_id", "stack_id", "pid")  # kernels and copies: their integers
_ODD = "a NULL or non-integer {}"  # why a row is skipped: "a NULL or non-integer end"


def is_rocpd(sch: dict[str, set[str]]) -> bool:
    return "rocpd_metadata" in sch and "kernels" in sch and "regions" in sch and "rocpd_op" not in sch


def sniff(path: Path, head: bytes) -> bool:
    if not is_sqlite(head):
        return False
    sch = tables_of(path)
    return sch is not None and is_rocpd(sch)


def _c(sch: dict[str, set[str]], view: str, col: str, default: str = "-1") -> str:
    return f"coalesce({col}, {default})" if col in sch.get(view, ()) else default


def read(path: Path, options: ReadOptions) -> Profile:
    with opened(path) as conn:
        sch = schema(conn)
        missing = [v for v in VIEWS if v not in sch]
        if missing or not is_rocpd(sch):
            raise TraceError(path, f"a rocpd database without its view(s) {', '.join(missing) or 'rocpd_metadata'}")
        gpu_names = _gpu_names(conn, sch)
        blocks = [_kernels(conn, sch), _copies(conn, sch)] + _regions(conn, sch)
        procs = _processes(conn, sch)
        version = _metadata(conn).get("schema_version", "")
    if options.progress:
        options.progress(path.stat().st_size)
    if not any(len(b) for b in blocks):
        raise TraceError(path, "nothing to analyse: no kernel, copy or region in the rocpd database")
    notes: list[str] = []
    found = ranks_of(blocks)
    forced = {p: int(options.rank) for p in found} if options.rank is not None and len(found) == 1 else None
    done = assemble(path, blocks, None, notes, ranks=forced)
    prof = done.profile
    rccl = common.link_collectives(prof)
    for line in notes:
        prof.warn(line)
    used = sorted({int(d) for d in np.unique(prof.events["device"]).tolist() if d >= 0})
    props = [{"id": i, "name": gpu_names.get(i, "")} for i in used]
    info: dict[str, Any] = {
        "path": str(path),
        "format": NAME,
        "events": len(prof.events),
        "ranks": {str(r): p for p, r in sorted(done.ranks.items(), key=lambda x: x[1])},
        "devices": [p["name"] for p in props],
        "device_properties": props,
    }
    if version:
        info["schema_version"] = version[:40]
    if rccl:
        info["rccl_collective_kernels"] = rccl
    if len(set(done.ranks.values())) == 1:
        info["rank"] = next(iter(done.ranks.values()))
    prof.run["sources"] = [info]
    prof.run["process_names"] = names_by_rank(done.ranks, procs)
    return prof


def _kernels(conn: sqlite3.Connection, sch: dict[str, set[str]]) -> Block:
    v = "kernels"
    stream = (
        f"coalesce(stream_id, {_c(sch, v, 'queue_id', '0')})" if "stream_id" in sch[v] else _c(sch, v, "queue_id", "0")
    )
    gpu = _c(sch, v, "agent_type_index")
    (start, end, dev, track, corr, pid), ((ids, names),) = with_text(
        conn,
        f"SELECT start, end, {gpu}, {stream}, {_c(sch, v, 'stack_id')}, {_c(sch, v, 'pid', '0')}, name FROM {v}",
        6,
        1,
    )
    skipped: dict[str, int] = {}
    cols = usable([start, end, dev, track, corr, pid, ids], _COLS + ("name",), _ODD, skipped)
    start, end, dev, track, corr, pid, ids = cols
    return Block(v, K_KERNEL, names, ids, start, end, pid, track, dev, corr, cat="kernel", skipped=skipped)


def _copies(conn: sqlite3.Connection, sch: dict[str, set[str]]) -> Block:
    v = "memory_copies"
    dst = _c(sch, v, "dst_agent_type_index") if "dst_agent_type" in sch[v] else "-1"
    src = _c(sch, v, "src_agent_type_index") if "src_agent_type" in sch[v] else "-1"
    dev = (
        f"CASE WHEN dst_agent_type = 'GPU' THEN {dst} WHEN src_agent_type = 'GPU' THEN {src} ELSE -1 END"
        if dst != "-1"
        else "-1"
    )
    (start, end, device, track, corr, pid, size), ((ids, ops),) = with_text(
        conn,
        f"SELECT start, end, {dev}, {_c(sch, v, 'stream_id', '0')}, {_c(sch, v, 'stack_id')}, "
        f"{_c(sch, v, 'pid', '0')}, {_c(sch, v, 'size')}, name FROM {v}",
        7,
        1,
    )
    skipped: dict[str, int] = {}
    cols = usable([start, end, device, track, corr, pid, size, ids], _COLS + ("size", "name"), _ODD, skipped)
    start, end, device, track, corr, pid, size, ids = cols
    direction = np.array([ROCPROF_COPY.get(o, 0) for o in ops], np.int8)[ids] if len(ids) else np.zeros(0, np.int8)
    return Block(
        v,
        K_MEMCPY,
        [common.copy_name(o) for o in ops],
        ids,
        start,
        end,
        pid,
        track,
        device,
        corr,
        size,
        "gpu_memcpy",
        direction,
        skipped,
    )


def _regions(conn: sqlite3.Connection, sch: dict[str, set[str]]) -> list[Block]:
    """HIP and RCCL calls (runtime), ROCTx ranges (annotations, named by their message)."""
    v = "regions"
    extdata = "extdata" if "extdata" in sch[v] else "''"
    (start, end, pid, tid, corr), ((cat_ids, cats), (name_ids, names), (ext_ids, exts)) = with_text(
        conn,
        f"SELECT start, end, {_c(sch, v, 'pid', '0')}, {_c(sch, v, 'tid', '0')}, {_c(sch, v, 'stack_id')}, "
        f"category, name, {extdata} FROM {v}",
        5,
        3,
    )
    skipped: dict[str, int] = {}
    cols = [start, end, pid, tid, corr, cat_ids, name_ids, ext_ids]
    names_of = ("start", "end", "pid", "tid", "stack_id", "category", "name", "extdata")
    start, end, pid, tid, corr, cat_ids, name_ids, ext_ids = usable(cols, names_of, _ODD, skipped)
    cat_of = np.array([common.domain_of(c) for c in cats], object)[cat_ids] if len(cat_ids) else np.zeros(0, object)
    out = []
    for domain, kind, label in (("hip", K_RUNTIME, "cuda_runtime"), ("rccl", K_RUNTIME, "rccl_api")):
        m = cat_of == domain
        out.append(Block(v, kind, names, name_ids[m], start[m], end[m], pid[m], tid[m], None, corr[m], cat=label))
    m = (cat_of == "marker") & np.isin(name_ids, [i for i, n in enumerate(names) if n in common.MARKER_RANGES])
    messages = [_message(e) for e in exts]
    text = [messages[e] or names[n] for e, n in zip(ext_ids[m].tolist(), name_ids[m].tolist())]
    table = list(dict.fromkeys(text))
    index = {t: i for i, t in enumerate(table)}
    out.append(
        Block(
            v,
            K_ANNOTATION,
            table,
            np.array([index[t] for t in text], np.int64),
            start[m],
            end[m],
            pid[m],
            tid[m],
            cat="user_annotation",
            skipped=skipped,
        )
    )
    return out


def _message(extdata: str) -> str:
    if not extdata or "message" not in extdata:
        return ""
    try:
        doc = json.loads(extdata)
    except ValueError:
        return ""
    msg = doc.get("message") if isinstance(doc, dict) else None
    return str(msg) if msg else ""


def _gpu_names(conn: sqlite3.Connection, sch: dict[str, set[str]]) -> dict[int, str]:
    cols = sch.get("rocpd_info_agent", set())
    if not {"type", "type_index"} <= cols:
        return {}
    name = "coalesce(product_name, name, '')" if "product_name" in cols else "coalesce(name, '')"
    rows = conn.execute(f"SELECT type_index, {name} FROM rocpd_info_agent WHERE type = 'GPU'")
    return {i: str(n) for i, n in rows if isinstance(i, int)}


def _processes(conn: sqlite3.Connection, sch: dict[str, set[str]]) -> dict[int, str]:
    if not {"pid", "command"} <= sch.get("processes", set()):
        return {}
    rows = conn.execute("SELECT pid, command FROM processes")
    return {p: str(c)[:200] for p, c in rows if isinstance(p, int) and c}


def _metadata(conn: sqlite3.Connection) -> dict[str, str]:
    try:
        return {str(t): str(v) for t, v in conn.execute("SELECT tag, value FROM rocpd_metadata")}
    except sqlite3.Error:
        return {}
