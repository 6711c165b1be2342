"""The rocprofv3 CSV files of one directory: which are a run's (a ``.csv`` name, compressed or
not, whose header is a rocprofv3 table), the process each is of, and what is said of the others.

rocprofv3 names a file ``<prefix>_<table>.csv``, the prefix ``<pid>`` by default, whatever
``-o`` says otherwise (``results``), none at all in ``rocpd convert``'s output. The files of one
prefix are one process's (or, without a pid in the prefix, of the processes their rows name).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ...core.errors import TraceError
from ..content import read_bytes, read_head
from . import csv_tables
from .csv_tables import Rows

#: a file of the run: ``[<prefix>_]<table>.csv``, compressed or not
_NAME = re.compile(
    r"^(?:(.*?)_)?((?:kernel|hip_api|hsa_api|marker_api|rccl_api|memory_copy|memory_allocation|scratch_memory|"
    r"rocdecode_api|rocjpeg_api|kfd_event|kfd_page_migrate|kfd_page_fault|kfd_queue)_(?:trace|stats)"
    r"|agent_info|counter_collection|domain_stats)\.csv(?:\.(?:gz|xz|bz2|zst))?$"
)
_COMPRESSED = re.compile(r"\.csv\.(gz|xz|bz2|zst)$")


def named_as_run(name: str) -> bool:
    return _NAME.match(name) is not None


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
    compressed copy); files named as rocprofv3 names them that are no such file, said in ``notes``."""
    out: dict[tuple[str, str], File] = {}
    for f in sorted(directory.iterdir()):
        if f.name.startswith(".") or not f.name.lower().endswith(
            (".csv", ".csv.gz", ".csv.xz", ".csv.bz2", ".csv.zst")
        ):
            continue
        named = _NAME.match(f.name)
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
        head = read_bytes(f)[:200]
    except (TraceError, OSError) as e:
        return e.problem if isinstance(e, TraceError) else f"unreadable ({e.strerror})"
    if not head.strip():
        return "empty file"
    return "no rocprofv3 CSV header on its first line"


def parse(f: File, notes: list[str]) -> Rows | None:
    """A file's rows; None (said in ``notes``) when it cannot be read."""
    try:
        return csv_tables.parse(read_bytes(f.path).decode("utf-8", "replace"), f.table)
    except TraceError as e:
        notes.append(f"{f.path.name}: not read: {e.problem}")
    except csv_tables.BadHeader as e:
        notes.append(f"{f.path.name}: not read: {e}")
    return None
