"""Nsight Systems: its SQLite export (``nsys export --type sqlite``), or a report
(``.nsys-rep``) exported with the ``nsys`` on PATH.

What is read (``tables``): kernels (``CUPTI_ACTIVITY_KIND_KERNEL``, named by their demangled
name), copies and fills (named as Kineto names them, with their bytes), synchronizations, CUDA
runtime and driver calls (a call and the device work it enqueued share ``correlationId``: the
flows, the launching thread), NVTX ranges of every domain (push/pop and start/end; ``text`` or
a registered string), the GPUs (``TARGET_INFO_GPU`` → the device spec), process and thread
names. Each process that ran device work is one rank (``vendor_rows``); the NVTX ranges become
annotations, so vLLM's step ranges, its runner scopes and layer-wise ranges, TensorRT-LLM's
per-iteration range and SGLang's layer markers are step and layer evidence like any other.

``nsys profile --export=sqlite`` leaves the report and its export side by side
(``report1.nsys-rep``, ``report1.sqlite``): read together they would be one run twice, so the
report is read once, from the export of its name beside it (``settle``), and a warning says so.

Kernels inside CUDA graphs: with ``--cuda-graph-trace=node`` each node is a kernel row (the
source record says ``cuda_graph_trace: node``); with the default ``graph`` a graph run is one
row (``CUPTI_ACTIVITY_KIND_GRAPH_TRACE``), kept as one device slice, and a warning says its
kernels were not traced.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

from ...core.errors import TraceError
from ...core.profile import Profile
from ..base import ReadOptions
from ..content import read_head
from ..sqlite_db import is_sqlite, opened, schema, tables_of
from ..vendor_rows import assemble, names_by_rank, ranks_of, threads_by_rank
from . import rep, tables

NAME = "nsys"


def is_export(sch: dict[str, set[str]]) -> bool:
    return any(t in sch for t in tables.EXPORT_TABLES) or (
        "StringIds" in sch and any(t in sch for t in tables.META_TABLES)
    )


def sniff(path: Path, head: bytes) -> bool:
    if rep.is_report(head):
        return True
    if not is_sqlite(head):
        return False
    sch = tables_of(path)
    return sch is not None and is_export(sch)


#: what a report beside its own export is, in the warning that it was set aside
_EXPORTED = "the report {} beside it was exported from: read once, from that export"


def settle(
    found: list[tuple[Path, ModuleType]], skipped: list[tuple[Path, str]] | None
) -> list[tuple[Path, ModuleType]]:
    """The inputs found without each report whose export (the same name, ``.sqlite``, compressed
    or not) is among them in its directory; those go to ``skipped``, saying so."""
    ours = [p for p, m in found if m.NAME == NAME]
    reports = {p for p in ours if rep.is_report(read_head(p, 64))}
    exports = {(p.resolve().parent, _stem(p)): p for p in ours if p not in reports}
    out = []
    for path, mod in found:
        export = exports.get((path.resolve().parent, _stem(path))) if path in reports else None
        if export is not None:
            if skipped is not None:
                skipped.append((path, _EXPORTED.format(export.name)))
            continue
        out.append((path, mod))
    return out


def _stem(path: Path) -> str:
    """``report1.nsys-rep``, ``report1.sqlite``, ``report1.sqlite.gz`` → ``report1``."""
    name = path.name
    for end in (".gz", ".xz", ".bz2", ".zst"):
        name = name.removesuffix(end)
    return name.rsplit(".", 1)[0] if "." in name else name


def read(path: Path, options: ReadOptions) -> Profile:
    if rep.is_report(read_head(path, 64)):
        with rep.exported(path) as db:
            prof = _read_export(db, options, shown=path)
        prof.run["sources"][0]["exported_from"] = "nsys-rep"
        return prof
    return _read_export(path, options, shown=path)


def _read_export(db: Path, options: ReadOptions, shown: Path) -> Profile:
    with opened(db) as conn:
        sch = schema(conn)
        if not is_export(sch):
            raise TraceError(shown, "not an Nsight Systems export (no CUPTI_ACTIVITY_KIND_* or NVTX_EVENTS table)")
        names = tables.Strings(conn, sch)
        props, gpu_of = tables.gpus(conn, sch)
        blocks = tables.device_blocks(conn, sch, names, gpu_of)
        rt = tables.runtime_block(conn, sch, names)
        blocks += [rt] if rt is not None else []
        nvtx, marks = tables.nvtx_blocks(conn, sch)
        blocks += nvtx
        meta = tables.metadata(conn, sch)
        epoch = tables.epoch_of_clock(conn, sch)
        nodes = tables.graph_nodes(conn, sch)
        procs = tables.process_names(conn, sch)
        threads = tables.thread_names(conn, sch, names)
    if options.progress:
        options.progress(db.stat().st_size)
    lost = [f"{n:,} {b.table} row(s) with {why}" for b in blocks for why, n in b.skipped.items()]
    if not any(len(b) for b in blocks) and lost:
        raise TraceError(shown, f"nothing to analyse: no usable row in the export; skipped {'; '.join(lost)}")
    if not any(len(b) for b in blocks):
        traced = ", ".join(t for t in tables.EXPORT_TABLES if t in sch) or "none of them"
        raise TraceError(
            shown,
            f"nothing to analyse: no kernel, copy, runtime call or NVTX range in the export (tables of those: {traced}); "
            "profile with nsys profile --trace cuda,nvtx",
        )
    notes: list[str] = []
    done = assemble(shown, blocks, epoch, notes, ranks=_forced(options, blocks))
    prof = done.profile
    graphs = sum(len(b) for b in blocks if b.table == tables.GRAPH_TRACE)
    if graphs:
        notes.append(
            f"{shown.name}: {graphs:,} CUDA graph run(s) traced as a whole (nsys --cuda-graph-trace=graph): their "
            "kernels are not in the report, each run is one device slice; profile with --cuda-graph-trace=node"
        )
    if marks:
        notes.append(f"{shown.name}: not used by the analysis: {marks:,} NVTX mark(s) (no span)")
    for line in notes:
        prof.warn(line)
    used = {int(d) for d in set(prof.events["device"].tolist()) if d >= 0}
    info: dict[str, Any] = {
        "path": str(shown),
        "format": NAME,
        "events": len(prof.events),
        "ranks": {str(r): p for p, r in sorted(done.ranks.items(), key=lambda x: x[1])},
        "cuda_graph_trace": "graph" if graphs else "node" if nodes else "none",
    }
    if len(set(done.ranks.values())) == 1:
        info["rank"] = next(iter(done.ranks.values()))
    for key, k in (("schema_version", "EXPORT_SCHEMA_VERSION"), ("nsys_version", "EXPORT_PRODUCT_VERSION")):
        if meta.get(k):
            info[key] = meta[k][:40]
    dev_props = [p for p in props if p.get("id") in used] or props
    if dev_props:
        info["device_properties"] = dev_props[:64]
        info["devices"] = [p.get("name") for p in dev_props[:64]]
    prof.run["sources"] = [info]
    prof.run["process_names"] = names_by_rank(done.ranks, procs)
    prof.run["thread_names"] = threads_by_rank(done.ranks, threads)
    return prof


def _forced(options: ReadOptions, blocks: list) -> dict[int, int] | None:
    """``--rank N`` for a report of one process: that process is rank N."""
    if options.rank is None:
        return None
    found = ranks_of(blocks)
    return {p: int(options.rank) for p in found} if len(found) == 1 else None
