"""Holding a record file's batches to their shape (``records``) as they are read back: a line
that is no batch (``null``, a list, a value of another type where a field goes) is skipped,
a row of odd shape or value (too few fields, a text or null where a number goes, NaN, a
number beyond int64) is skipped from its batch, and each is counted, so that one odd line
never makes a server's whole record directory unreadable. The writers are ours (the hooks);
what they never write is what a damaged file, or another program's, holds."""

from __future__ import annotations

import math
from typing import Any

#: the batch's row kinds: kind → (its fields, the fewest a row has, the fields that hold a
#: string, the others being numbers); and its other fields: field → the JSON types it may
#: have (absent or null always). The tables are the record format's (``records``).
Shapes = dict[str, tuple[tuple[str, ...], int, tuple[str, ...]]]
Types = dict[str, tuple[type, ...]]

TIME_MAX = 1 << 62  # a time (ns since the epoch, or -1 unseen): beyond it no clock reads
COUNT_MAX = 1 << 31  # a count, a rank, a step: the tables hold them as int32
#: fields that are times (the others that are numbers are counts, ranks, steps)...
TIMES = {"t", "t_sched", "t_sched_end", "t_end", "t_exec", "t_exec_end", "t_sample", "t_sample_end"}
TIMES |= {"arrival", "first_token", "finish", "started_ns", "hook_ns"}
#: ... and measurements, which may be NaN (the hooks write NaN where vLLM does not tell)
MEASURES = {"kv_usage", "value"}


def _number(v: Any, field: str = "") -> bool:
    """Whether ``v`` is a number the field's column holds (see ``TIMES`` and ``MEASURES``)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    if field in MEASURES:
        return True
    if isinstance(v, float) and not math.isfinite(v):
        return False
    return -TIME_MAX <= v < TIME_MAX if field in TIMES else -COUNT_MAX <= v < COUNT_MAX


def _row_ok(row: Any, fields: tuple[str, ...], fewest: int, texts: tuple[str, ...] = (), most: int = 64) -> bool:
    if not isinstance(row, (list, tuple)) or not fewest <= len(row) <= most:
        return False
    return all(isinstance(v, str) if f in texts else _number(v, f) for f, v in zip(fields, row))


def _odd_field(batch: dict[str, Any], fields: Types) -> str | None:
    """Why a batch's fields are not a batch's: the first field of another type, shape or range."""
    for key, types in fields.items():
        v = batch.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, types)):
            return f"its {key!r} is {type(v).__name__}"
        if isinstance(v, (int, float)) and not _number(v, key):
            return f"its {key!r} is {v}"
    if any(not isinstance(f, str) or "\0" in f for f in batch.get("torch_files") or ()):
        return "a torch file that is no path"
    if any(not _row_ok(m, ("step", "t"), 2, most=2) for m in batch.get("torch_marks") or ()):
        return "a torch mark that is no (step, time)"
    errors = (batch.get("errors") or {}).values()
    if any(not _row_ok(e, ("count",), 2, most=2) or not isinstance(e[1], str) for e in errors):
        return "an odd entry in its 'errors'"
    for key in ("dropped", "place"):
        if any(not _number(n) for n in (batch.get(key) or {}).values()):
            return f"an odd entry in its {key!r}"
    place = batch.get("place") or {}
    if ("world" in place or "tp" in place) and "rank" not in place:
        return "its 'place' names no rank"
    if any(not isinstance(w, str) for w in batch.get("warnings") or ()):
        return "a warning that is no text"
    if not isinstance((batch.get("meta") or {}).get("engine") or {}, dict):
        return "an odd entry in its 'meta'"
    return None


def checked(
    batch: Any, rows: Shapes, fields: Types, odd_rows: dict[str, int]
) -> tuple[dict[str, Any] | None, str | None]:
    """(the batch with its rows of odd shape left out, counted in ``odd_rows`` per kind; None
    and why, for a line that is no batch)."""
    if not isinstance(batch, dict):
        return None, f"a {type(batch).__name__}, no record"
    for kind in rows:
        if not isinstance(batch.get(kind, []), list):
            return None, f"its {kind!r} is no list"
    why = _odd_field(batch, fields)
    if why is not None:
        return None, why
    for kind, (fields_of, fewest, texts) in rows.items():
        got = batch.get(kind) or []
        kept = [r for r in got if _row_ok(r, fields_of, fewest, texts)]
        if len(kept) != len(got):
            odd_rows[kind] = odd_rows.get(kind, 0) + len(got) - len(kept)
        batch[kind] = kept
    return batch, None
