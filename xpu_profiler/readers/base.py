"""What every reader shares: the read options, a file's rank, an input left out, and what a
Chrome trace JSON looks like from its first bytes (Kineto and XProfiler)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import TraceError
from .content import ProgressFn

MAX_RANK = 1 << 20  # a rank at or beyond it is no rank of a real job (declared in a trace, or --rank)
#: a device index at or beyond it is no device of a real machine (and rank *i* is the process on GPU *i*)
MAX_DEVICE = MAX_RANK
#: why an event or row on a device index below -1 (the host) or from ``MAX_DEVICE`` on is skipped
NO_DEVICE = f"a device index no machine has (below -1, or {MAX_DEVICE:,} or more)"


def is_rank(value: object) -> bool:
    """A whole number a rank of a real job can be: 0 to ``MAX_RANK`` - 1 (a trace's declared
    rank, ``--rank``, the API's ``rank=``)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < MAX_RANK


@dataclass
class ReadOptions:
    rank: int | None = None  # force the rank of a single-rank file
    xpu_gen: int | None = None  # Kunlun generation for XPURT_PROF logs (1, 2, 3)
    progress: ProgressFn | None = None
    extra: dict = field(default_factory=dict)


RANK_IN_NAME = r"rank[_\-.]?(\d+)"  # rank_3, rank-3, rank.3, rank3
_RANK_IN_NAME = re.compile(RANK_IN_NAME, re.IGNORECASE)


def rank_from_name(path: Path) -> int | None:
    """`rank_3.log`, `rank-3/…`, `…_rank3.pt.trace.json` → 3: the file's name says its rank."""
    m = _RANK_IN_NAME.search(path.name) or _RANK_IN_NAME.search(path.parent.name)
    return int(m.group(1)) if m else None


@dataclass(frozen=True)
class DroppedInput:
    """An input file that could not be read, and why.

    It comes back in place of the file's Profile from wherever the file was read (it pickles
    across processes); one of a directory is left out of the analysis, and ``to_run`` is its
    entry in ``run["dropped_inputs"]``."""

    path: str
    reason: str

    def to_run(self) -> dict[str, Any]:
        """The JSON-ready entry of ``run["dropped_inputs"]``, with the rank its name says (or None:
        none, or one no real job has)."""
        rank = rank_from_name(Path(self.path))
        return {"path": self.path, "reason": self.reason, "rank": rank if is_rank(rank) else None}


def resolve_rank(path: Path, options: ReadOptions, declared: int | None = None) -> int | None:
    """The rank of a one-rank file: what the file itself declares, else what its name says,
    else ``--rank`` (for a file that says neither); None when nothing does. A name's rank no
    real job has (``MAX_RANK`` or more) is one line naming the file."""
    named = rank_from_name(path)
    if declared is None and named is not None and not is_rank(named):
        raise TraceError(path, f"its name says rank {named}, which no real job has ({MAX_RANK:,} or more): rename it")
    for rank in (declared, named, options.rank):
        if rank is not None:
            return int(rank)
    return None


CHROME_KEYS = re.compile(rb'"(traceEvents|ph)"\s*:')
#: top-level keys only torch.profiler (Kineto) writes
KINETO_TOP_KEYS = (b'"schemaVersion"', b'"deviceProperties"', b'"distributedInfo"')
#: anything near the top of a file that says Kineto wrote it
KINETO_MARKERS = KINETO_TOP_KEYS + (b'"cpu_op"', b'"baseTimeNanoseconds"', b'"python_function"', b'"cuda_runtime"')


def is_json_document(head: bytes) -> bool:
    return head.lstrip()[:1] in (b"{", b"[")


def is_chrome_json(head: bytes) -> bool:
    """A JSON document with Chrome-trace keys (``traceEvents``, or events with ``ph``)."""
    return is_json_document(head) and bool(CHROME_KEYS.search(head))


def looks_like_kineto(head: bytes) -> bool:
    """Chrome trace JSON, or a JSON object with Kineto's own top-level keys."""
    return is_chrome_json(head) or (is_json_document(head) and any(m in head for m in KINETO_TOP_KEYS))


def has_kineto_markers(head: bytes) -> bool:
    return any(m in head for m in KINETO_MARKERS)


#: what a trace of Python frames alone is (no op, kernel or step): a process that ran no model,
#: vLLM's front-end above all; in a directory it is skipped as no rank, alone it is one line
FRONT_END = "the trace of vLLM's front-end process (the API server's AsyncLLM)"
NO_MODEL = "the trace of a process that ran no model"
