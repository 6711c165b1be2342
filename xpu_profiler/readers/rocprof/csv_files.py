"""The rocprofv3 CSV files of one directory: which are a run's (a ``.csv`` name, compressed or
not, whose header is a rocprofv3 table), the process each is of, and what is said of the others.

rocprofv3 names a file ``<prefix>_<table>.csv``, the prefix ``<pid>`` by default, whatever
``-o`` says otherwise (``results``), none at all in ``rocpd convert``'s output. The files of one
prefix are one process's (or, without a pid in the prefix, of the processes their rows name).
"""

from __future__ import annotations

import hashlib
import io
import re
from dataclasses import dataclass
from pathlib import Path

from ...core.errors import TraceError
from ..content import compression_of, read_bytes, read_head
from . import csv_tables
from .csv_tables import Rows

#: a file of the run: ``[<prefix>_]<table>.csv``, compressed or not
NAME = re.compile(
    r"^(?:(.*?)_)?((?:kernel|hip_api|hsa_api|marker_api|rccl_api|memory_copy|memory_allocation|scratch_memory|"
    r"rocdecode_api|rocjpeg_api|kfd_event|kfd_page_migrate|kfd_page_fault|kfd_queue)_(?:trace|stats)"
    r"|agent_info|counter_collection|domain_stats)\.csv(?:\.(?:gz|xz|bz2|zst))?$"
)
_COMPRESSED = re.compile(r"\.csv\.(gz|xz|bz2|zst)$")
#: the same process's JSON or rocpd output (``<prefix>_results.json``, ``.db``)
RESULTS = re.compile(r"^(.+)_results\.(?:json|db)(?:\.(?:gz|xz|bz2|zst))?$")


def named_as_run(name: str) -> bool:
    return NAME.match(name) is not None


@dataclass
class File:
    path: Path
    table: str
    prefix: str  # what the name puts before the table ("" when nothing)

    @property
    def pid(self) -> int | None:
        """The process the name says (``<pid>_...``), else None."""
        last = self.prefix.rsplit("_", 1)[-1]
        return int(last) if last.isdigit() and len(last) < 10 else None


def found(directory: Path, notes: list[str]) -> list[File]:
    """The directory's rocprofv3 CSV files, each table of each prefix once (the plain file over a
    compressed copy), a copy under another name once, none of a process whose JSON or rocpd
    output is beside them (``twins``), only the files named as rocprofv3 names them where there
    are such (``Copy of ...``, ``kernel_trace (1).csv`` are copies); what was left aside and why
    in ``notes``."""
    every = _every(directory, notes)
    named = [f for f in every if named_as_run(f.path.name)]
    if any(f.table in csv_tables.TRACE_TABLES for f in named):
        for f in every:
            if not named_as_run(f.path.name):
                notes.append(f"{f.path.name}: not read: not named as rocprofv3 names its files (a copy?)")
        every = named
    out = _once(every, notes)
    twins = _twins(directory)
    kept = [f for f in out if f.prefix not in twins or f.table == "agent_info"]
    if not any(f.table in csv_tables.TRACE_TABLES for f in kept):
        return out  # (every process has its JSON beside, yet the CSV files were asked for: read them)
    for f in out:
        if f.prefix in twins and f.table != "agent_info":
            notes.append(f"{f.path.name}: not read: the same process as {twins[f.prefix]} beside it (read from there)")
    return kept


def covered_elsewhere(directory: Path) -> list[str]:
    """The JSON or rocpd outputs beside the directory's CSV files that hold every process those
    files trace (the CSV files then are no input); [] when a process is only in CSV files."""
    twins = _twins(directory)
    if not twins:
        return []
    prefixes = {f.prefix for f in found(directory, []) if f.table in csv_tables.TRACE_TABLES}
    return sorted({twins[p] for p in prefixes}) if prefixes <= set(twins) else []


def _twins(directory: Path) -> dict[str, str]:
    """prefix → the name of the same process's JSON or rocpd output in the directory (a file of
    that name that holds one: rocprofv3's top key, SQLite's header)."""
    out: dict[str, str] = {}
    for f in sorted(directory.iterdir()):
        m = RESULTS.match(f.name)
        if m and f.is_file():
            head = read_head(f)
            if head.startswith(b"SQLite format 3\x00") or b'"rocprofiler-sdk-tool"' in head:
                out.setdefault(m.group(1), f.name)
    return out


def _once(files: list[File], notes: list[str]) -> list[File]:
    """One file per table of a prefix, and per content (a copy under another name)."""
    seen: dict[tuple[str, int], File] = {}
    out = []
    for f in sorted(files, key=lambda x: (len(x.path.name), x.path.name)):
        try:
            size = f.path.stat().st_size
        except OSError:
            size = -1
        twin = seen.get((f.table, size)) if size > 0 and f.table in csv_tables.TRACE_TABLES else None
        if twin is not None and _digest(twin.path) == _digest(f.path):
            notes.append(f"{f.path.name}: not read: the same rows as {twin.path.name}")
            continue
        seen[(f.table, size)] = f
        out.append(f)
    return sorted(out, key=lambda x: x.path.name)


def _digest(path: Path) -> bytes:
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return h.digest()


def _every(directory: Path, notes: list[str]) -> list[File]:
    out: dict[tuple[str, str], File] = {}
    for f in sorted(directory.iterdir()):
        if f.name.startswith(".") or not f.name.lower().endswith(
            (".csv", ".csv.gz", ".csv.xz", ".csv.bz2", ".csv.zst")
        ):
            continue
        named = NAME.match(f.name)
        table = csv_tables.table_of_head(read_head(f)) if f.is_file() else None
        if table is None:
            if named:
                notes.append(f"{f.name}: not read: {_why_not(f)}")
            continue
        prefix = named.group(1) or "" if named else _COMPRESSED.sub("", f.name).removesuffix(".csv")
        key = (prefix, named.group(2) if named else f.name)
        if key in out:
            kept = min(
                out[key], File(f, table, prefix), key=lambda x: (bool(_COMPRESSED.search(x.path.name)), x.path.name)
            )
            other = f if kept.path != f else out[key].path
            notes.append(f"{other.name}: not read: the same table as {kept.path.name}")
            out[key] = kept
            continue
        out[key] = File(f, table, prefix)
    return sorted(out.values(), key=lambda x: x.path.name)


def _why_not(f: Path) -> str:
    if not f.is_file():
        return "not a regular file"
    try:
        if f.stat().st_size == 0:
            return "empty file"
        # (a compressed file is read whole: a broken stream says so; a plain one only its head)
        head = read_bytes(f)[:200] if compression_of(f) else read_head(f, 200)
    except (TraceError, OSError) as e:
        return e.problem if isinstance(e, TraceError) else f"unreadable ({e.strerror})"
    if not head.strip():
        return "empty file"
    return "no rocprofv3 CSV header on its first line"


def parse(f: File, notes: list[str]) -> Rows | None:
    """A file's rows; None (said in ``notes``) when it cannot be read. A plain file is read as
    it is parsed (no copy of it in memory)."""
    try:
        if compression_of(f.path) is None:
            with open(f.path, encoding="utf-8", errors="replace", newline="") as text:
                if text.read(1) != "\ufeff":  # (a byte-order mark: skipped)
                    text.seek(0)
                return csv_tables.parse(text, f.table)
        return csv_tables.parse(io.StringIO(read_bytes(f.path).decode("utf-8", "replace")), f.table)
    except TraceError as e:
        notes.append(f"{f.path.name}: not read: {e.problem}")
    except csv_tables.BadHeader as e:
        notes.append(f"{f.path.name}: not read: {e}")
    except OSError as e:
        notes.append(f"{f.path.name}: not read: unreadable ({e.strerror})")
    return None
