"""rocprofv3's CSV files (``--output-format csv``, its default output before ROCm 7.0): which
table a file holds, by its header, and its columns.

rocprofv3 writes one file per table and process, ``<prefix>_<table>.csv`` with the prefix
``<pid>`` (ROCm 6.2, in the working directory) or ``<hostname>/<pid>`` (6.3 on), each only when
it has a row; ``agent_info.csv`` beside every run. Its encoder quotes every string (the header
too) and escapes nothing, numbers are bare. The columns by table, as they changed (ROCm/
rocprofiler-sdk ``source/lib/output/generateCSV.cpp`` and ``csv.hpp``; 6.2 in
``source/lib/rocprofiler-sdk-tool/``):

- ``kernel_trace``: ``Kind, Agent_Id, Queue_Id, [Stream_Id 7.0], [Thread_Id, Dispatch_Id 6.3],
  Kernel_Id, Kernel_Name, Correlation_Id, Start_Timestamp, End_Timestamp, ...`` (register and
  segment sizes, workgroup and grid sizes);
- ``hip_api_trace``, ``rccl_api_trace`` (6.3 on), ``marker_api_trace``, ``hsa_api_trace``:
  ``Domain, Function, Process_Id, Thread_Id, Correlation_Id, Start_Timestamp, End_Timestamp``;
- ``memory_copy_trace``: ``Kind, Direction, [Stream_Id 7.0], Source_Agent_Id,
  Destination_Agent_Id, Correlation_Id, Start_Timestamp, End_Timestamp`` (no byte count);
- ``agent_info``: ``Node_Id, Logical_Node_Id, Agent_Type ("CPU", "GPU"), ... Cu_Count, ...
  Local_Mem_Size, ... Name (gfx942), Vendor_Name, Product_Name, Model_Name``.

An agent id is the agent's logical node id, a bare number until 6.4, ``"Agent 4"`` from 7.0
(``--agent-index``: ``"GPU 0"`` when type-relative). Columns are found by their names, never by
place, so that files of every release (and ``rocpd convert``'s, with a ``Guid`` first) read alike.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from operator import itemgetter

import numpy as np

from ..vendor_rows import I64_MAX, ODD

#: table → the header columns that say a file holds it (checked in this order)
TABLES: tuple[tuple[str, frozenset[str]], ...] = (
    ("counter_collection", frozenset({"Counter_Name", "Counter_Value"})),
    ("kernel_trace", frozenset({"Kind", "Agent_Id", "Kernel_Name", "Start_Timestamp", "End_Timestamp"})),
    ("memory_copy_trace", frozenset({"Kind", "Direction", "Source_Agent_Id", "Destination_Agent_Id"})),
    ("api_trace", frozenset({"Domain", "Function", "Thread_Id", "Start_Timestamp", "End_Timestamp"})),
    ("agent_info", frozenset({"Node_Id", "Logical_Node_Id", "Agent_Type"})),
    ("memory_allocation_trace", frozenset({"Kind", "Operation", "Allocation_Size"})),
    ("scratch_memory_trace", frozenset({"Kind", "Operation", "Agent_Id", "Queue_Id"})),
    ("stats", frozenset({"Name", "Calls", "TotalDurationNs"})),
)
#: the tables the analysis reads (the others are recognised as the run's and left aside)
TRACE_TABLES = ("kernel_trace", "memory_copy_trace", "api_trace")
#: a header line: names of letters, digits and underscores, quoted (rocprofv3) or bare
_HEADER = re.compile(rb'^\s*"?[A-Za-z][A-Za-z0-9_]*"?(\s*,\s*"?[A-Za-z][A-Za-z0-9_]*"?)+\s*,?\s*$')
_AGENT = re.compile(r"^\s*(?:([A-Za-z]+)[ \-])?(\d+)\s*$")
MISMATCH = "a row whose fields do not match its header (a quote or line break inside a name?)"


def header_of(line: bytes) -> list[str] | None:
    """The column names of a CSV header line, or None when it is no header."""
    line = line.rstrip(b"\r\n\t ")
    if not _HEADER.match(line):
        return None
    return [c.strip().strip('"') for c in line.decode("ascii").rstrip(",").split(",")]


def table_of(header: Sequence[str]) -> str | None:
    cols = set(header)
    return next((name for name, need in TABLES if need <= cols), None)


def table_of_head(head: bytes) -> str | None:
    """The rocprofv3 table a file holds, from its first bytes; None for any other file."""
    first = head.split(b"\n", 1)[0]
    header = header_of(first) if len(first) < len(head) or len(head) < 4096 else None
    return table_of(header) if header else None


@dataclass
class Rows:
    """One file's rows by column name (strings as written); ``skipped``: reason → rows left out."""

    header: list[str]
    cols: dict[str, list[str]]
    skipped: dict[str, int] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(next(iter(self.cols.values()), []))

    def has(self, name: str) -> bool:
        return name in self.cols

    def text(self, name: str, default: str = "") -> list[str]:
        return self.cols.get(name) or [default] * len(self)

    def ints(self, name: str, default: int = 0) -> np.ndarray:
        """A column as int64: ``ODD`` where a value is missing, no integer or beyond int64."""
        if name not in self.cols:
            return np.full(len(self), default, np.int64)
        return ints(self.cols[name])

    def agents(self, name: str) -> tuple[list[tuple[str, int]], np.ndarray]:
        """An agent column as its distinct values, each a label ("", "AGENT", "GPU", "CPU") and
        a number (``ODD`` where unreadable, -1 where empty: a free has no agent), and each row's
        index into them."""
        values, index = ids(self.text(name))
        return [agent(v) for v in values], index


#: the columns the reader uses, by table (the others are not kept)
USED = {
    "kernel_trace": ("Agent_Id", "Queue_Id", "Stream_Id", "Kernel_Name", "Correlation_Id", "Process_Id", "Thread_Id"),
    "memory_copy_trace": ("Direction", "Stream_Id", "Source_Agent_Id", "Destination_Agent_Id", "Correlation_Id"),
    "api_trace": ("Domain", "Function", "Process_Id", "Thread_Id", "Correlation_Id"),
    "agent_info": (
        "Node_Id",
        "Logical_Node_Id",
        "Agent_Type",
        "Cu_Count",
        "Local_Mem_Size",
        "Name",
        "Product_Name",
        "Model_Name",
    ),
}
TIMES = ("Start_Timestamp", "End_Timestamp")


class BadHeader(ValueError):
    pass


def parse(text: Iterable[str], table: str = "") -> Rows:
    """A rocprofv3 CSV file's rows (of ``table``'s used columns and the times; every column
    without one). A row with more or fewer fields than its header (what an unescaped quote or
    line break in a kernel name or message leaves) is skipped and counted, with the lines a
    stray quote swallowed. ``BadHeader``: a used column named twice."""
    limit = csv.field_size_limit(1 << 30)  # (a kernel name of megabytes is one odd row, not a failure)
    try:
        reader = csv.reader(text, strict=False, skipinitialspace=True)
        header = [c.strip() for c in next(reader, [])]
        while header and not header[-1]:  # (a header ending in a comma)
            header.pop()
        width = len(header)
        wanted = set(USED.get(table, header)) | set(TIMES) if table else set(header)
        keep = [(i, name) for i, name in enumerate(header) if name in wanted]
        twice = sorted({name for _, name in keep if header.count(name) > 1})
        if twice or not keep:
            raise BadHeader(
                f"its header names {', '.join(twice)} twice" if twice else "its header has no column it needs"
            )
        get = itemgetter(*(i for i, _ in keep), keep[0][0])  # (a tuple, however few: the first again)
        good, bad, line = [], 0, reader.line_num
        for row in reader:
            if len(row) == width or (len(row) == width + 1 and not row[-1]):
                good.append(get(row))
            elif row:  # (a blank line is no row) each line a broken row took: the rows a stray quote swallowed
                bad += reader.line_num - line
            line = reader.line_num
    finally:
        csv.field_size_limit(limit)
    data = list(zip(*good)) if good else [() for _ in range(len(keep) + 1)]
    rows = Rows(header, {name: list(col) for (_, name), col in zip(keep, data)})
    if bad:
        rows.skipped[MISMATCH] = bad
    return rows


def agent(value: str) -> tuple[str, int]:
    m = _AGENT.match(value)
    if m is None:
        return "", (-1 if not value.strip() else int(ODD))
    n = int(m.group(2))
    return (m.group(1) or "").upper(), n if n <= I64_MAX else int(ODD)


def ids(values: list[str]) -> tuple[list[str], np.ndarray]:
    """The distinct values, in first-seen order, and each value's index into them."""
    table = list(dict.fromkeys(values))
    index = {v: i for i, v in enumerate(table)}
    return table, np.fromiter(map(index.__getitem__, values), np.int64, len(values))


def ints(values: list[str]) -> np.ndarray:
    try:
        return np.fromiter(map(int, values), np.int64, len(values))
    except (ValueError, OverflowError):
        return np.array([_int(v) for v in values], np.int64)


def _int(v: str) -> int:
    try:
        n = int(v)
    except ValueError:
        return int(ODD)
    return n if int(ODD) < n <= I64_MAX else int(ODD)
