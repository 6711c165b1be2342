"""Kineto event args → columns: collective metadata, ids, FLOPs from recorded shapes, tolerant
numbers (``columns`` calls these per chunk)."""

from __future__ import annotations

import hashlib
from itertools import repeat
from operator import attrgetter, ne
from pathlib import Path

import msgspec
import numpy as np

from ...core.errors import TraceError
from ...core.profile import StringTable
from ...knowledge.copy_kinds import direction_of_kind
from ...knowledge.op_flops import SHAPE_FLOPS, flops_from_shapes
from .schema import Event, SliceArgs


def comm_columns(argss: list[SliceArgs]) -> dict:
    """The collective metadata (``Collective name``, ``Seq``, sizes, group) of the events
    that carry it; the raw values are decoded here, for those events only, whatever their
    JSON type (a value of an unexpected type is taken as absent)."""
    n = len(argss)
    # the two fields both absent: the defaults themselves (``is`` before ``==``, at C level)
    rows = np.flatnonzero(
        np.fromiter(map(ne, map(_NAME_AND_SEQ, argss), repeat(_NO_NAME_AND_SEQ)), dtype=bool, count=n)
    )
    table = StringTable()
    picked = [argss[i] for i in rows.tolist()]
    out: dict = {"rows": rows}
    names = ("coll", "pg", "pg_ranks", "dtype")
    texts = [[v[:_MAX_TEXT] if type(v) is str else _text(v) for v in _values(picked, _COMM_FIELDS[k])] for k in names]
    # interned row by row: the same first-seen order however the events are chunked
    flat = [t for row in zip(*texts) for t in row]
    ids = np.full(len(flat), -1, np.int64)
    present = np.fromiter((t is not None for t in flat), dtype=bool, count=len(flat))
    ids[present] = table.intern_many([t for t in flat if t is not None])
    by_row = ids.reshape(-1, len(names))
    out.update({k: by_row[:, j].copy() for j, k in enumerate(names)})
    for k in ("seq", "in_nelems", "out_nelems", "group_size"):
        vals = _values(picked, _COMM_FIELDS[k])
        try:  # the usual case: plain numbers
            a = np.array(vals, dtype=np.int64)
            if a.ndim != 1:  # lists among the values
                raise ValueError
            out[k] = np.where(a < 0, -1, a)
        except (TypeError, ValueError, OverflowError):
            out[k] = np.array(list(map(_count, vals)), dtype=np.int64)
    out["strings"] = table.strings
    return out


_NAME_AND_SEQ = attrgetter("collective_name", "seq")
_NO_NAME_AND_SEQ = _NAME_AND_SEQ(SliceArgs())
_COMM_FIELDS = {
    "coll": "collective_name",
    "pg": "pg_name",
    "pg_ranks": "pg_ranks",
    "dtype": "dtype",
    "seq": "seq",
    "in_nelems": "in_nelems",
    "out_nelems": "out_nelems",
    "group_size": "group_size",
}
_MAX_TEXT = 512  # a group's rank list can be long; nothing needs more


def _values(argss: list[SliceArgs], field: str) -> list:
    """The raw JSON values of one field of many events, decoded at once (None: absent)."""
    raws = list(map(attrgetter(field), argss))
    if not all(map(len, raws)):
        raws = [r if len(r) else b"null" for r in raws]
    try:
        return msgspec.json.decode(b"[" + b",".join(raws) + b"]")
    except msgspec.DecodeError:  # cannot happen for values the decoder accepted; be safe
        return [_raw(r) for r in raws]


def _raw(raw: bytes):
    try:
        return msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return None


def _text(v) -> str | None:
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, (str, int)):
        return str(v)[:_MAX_TEXT]
    if isinstance(v, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in v):
        return ("[" + ", ".join(map(str, v)) + "]")[:_MAX_TEXT]
    return None


def _count(v) -> int:
    """A non-negative integer as written (number or numeric string: what ``int`` reads, as the
    columns' fast path reads it; ``²`` is a digit to ``str.isdigit`` only), else -1."""
    if isinstance(v, bool):
        return -1
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if isinstance(v, str):
        try:
            v = int(v)
        except ValueError:
            return -1
    return v if isinstance(v, int) and 0 <= v < 2**62 else -1


def _floats(path: Path, xs: list[Event], field: str, x_idx: np.ndarray, names: list[str]) -> np.ndarray:
    """ts/dur in µs; numbers or numeric strings, as Perfetto reads them."""
    try:
        return np.fromiter(map(attrgetter(field), xs), dtype=np.float64, count=len(xs))
    except (ValueError, TypeError):
        for i, v in enumerate(map(attrgetter(field), xs)):
            try:
                float(v if v is not None else "nan")
            except (ValueError, TypeError):
                raise TraceError(
                    path,
                    f"complete event #{int(x_idx[i])} ({names[i][:60]!r}): {field} {str(v)[:40]!r} is not a number",
                ) from None
        raise


def _ids(argss: list[SliceArgs], field: str) -> np.ndarray:
    """Correlation / External ids; an id that is no integer is taken as absent (-1)."""
    try:
        return np.fromiter(map(attrgetter(field), argss), dtype=np.int64, count=len(argss))
    except (ValueError, TypeError, OverflowError):
        out = np.full(len(argss), -1, np.int64)
        for i, v in enumerate(map(attrgetter(field), argss)):
            try:
                out[i] = int(v)
            except (ValueError, TypeError, OverflowError):
                pass
        return out


def _flops(argss: list[SliceArgs], names: list[str], name_ids: np.ndarray) -> np.ndarray:
    """FLOPs per event (``flops_column``) of decoded args."""
    try:
        raw = np.fromiter(map(attrgetter("flops"), argss), dtype=np.float64, count=len(argss))
    except (ValueError, TypeError):  # a non-numeric string somewhere: those rows stay unknown
        raw = np.array([_num(v) for v in map(attrgetter("flops"), argss)], np.float64)
    return flops_column(
        raw, names, name_ids, lambda rows: list(map(bytes, map(attrgetter("input_dims"), map(argss.__getitem__, rows))))
    )


def flops_column(raw: np.ndarray, names: list[str], name_ids: np.ndarray, dims_of) -> np.ndarray:
    """FLOPs per event: what with_flops wrote (``raw``, NaN: none), else what the recorded shapes
    of a known GEMM op give (``op_flops``; ``dims_of(rows)``: those rows' raw ``Input Dims``),
    else -1."""
    out = np.full(len(raw), -1, np.int64)
    ok = np.isfinite(raw) & (raw >= 0) & (raw < 2.0**62)
    out[ok] = raw[ok].astype(np.int64)
    gemm_ids = [i for i, n in enumerate(names) if n in SHAPE_FLOPS]
    if not gemm_ids:
        return out
    unknown = ~ok
    for g in gemm_ids:
        rows = np.flatnonzero((name_ids == g) & unknown)
        # a model's GEMMs repeat a few shapes: each distinct raw shape of an op is worked out once
        dims = dims_of(rows.tolist())
        known = {d: _shape_flops(names[g], d) for d in dict.fromkeys(dims)}
        out[rows] = np.fromiter(map(known.__getitem__, dims), dtype=np.int64, count=len(dims))
    return out


def _bytes(argss: list[SliceArgs]) -> np.ndarray:
    """Bytes a copy or fill moved (its ``bytes`` arg), -1 when absent or odd."""
    return bytes_column(np.array([_num(v) for v in map(attrgetter("bytes"), argss)], np.float64))


def bytes_column(raw: np.ndarray) -> np.ndarray:
    """Bytes moved (``raw``: NaN where absent), -1 when absent or odd."""
    ok = np.isfinite(raw) & (raw >= 0) & (raw < 2.0**62)
    return np.where(ok, raw, -1).astype(np.int64)


def _shape_flops(op: str, dims: bytes) -> int:
    """FLOPs of one GEMM from its raw ``Input Dims``; -1 when they give none."""
    if not dims:
        return -1
    try:
        n = flops_from_shapes(op, msgspec.json.decode(dims))
    except msgspec.DecodeError:
        return -1
    return n if n is not None and 0 <= n < 2**62 else -1  # shapes with absurd dims give no FLOPs


def _num(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def _copy_directions(argss: list[SliceArgs], rows: np.ndarray) -> np.ndarray:
    """Per row, the copy direction a runtime call's ``kind`` argument gives (``copy_kinds``),
    0 without one (only ROCm's copy calls carry it: a few rows)."""
    return copy_column(len(argss), rows, [argss[i].kind for i in rows.tolist()])


def copy_column(n: int, rows: np.ndarray, kinds: list) -> np.ndarray:
    """The copy directions of ``n`` rows: ``kinds``, the ``kind`` arguments of ``rows`` (-1: none)."""
    copy = np.zeros(n, np.int8)
    for i, k in zip(rows.tolist(), kinds):
        if k != -1:
            copy[i] = direction_of_kind(k)
    return copy


def _ints(xs: list[Event], field: str) -> np.ndarray:
    """pid/tid columns: ints, with Kineto's odd strings ("" or "0x7f…") mapped to ids. An
    unsigned 64-bit id (a hash, as IBM AIU traces write: above 2^63) keeps its 64 bits as the
    signed int64 of the same bit pattern: distinct ids stay distinct, in every chunk alike."""
    try:
        return np.fromiter(map(attrgetter(field), xs), dtype=np.int64, count=len(xs))
    except (TypeError, ValueError, OverflowError):
        return odd_ints(list(map(attrgetter(field), xs)))


def odd_ints(values: list) -> np.ndarray:
    """``_ints`` of values that are not all integers. A text that is no number (a thread
    named ``"MainThread"``) gets a negative id of its own (``text_id``): the same in every
    chunk of the file and every column, so that a thread is one thread however the file was
    cut for reading (ids numbered in each chunk's order split one thread and merged others)."""
    out = np.empty(len(values), dtype=np.int64)
    seen: dict[str, int] = {}
    for i, v in enumerate(values):
        if isinstance(v, (int, float)) and -(2**63) <= v < 2**63 and v == int(v):
            out[i] = int(v)
        elif isinstance(v, int) and 2**63 <= v < 2**64:
            out[i] = v - 2**64
        else:
            try:
                out[i] = int(v, 0)
            except (TypeError, ValueError, OverflowError):
                text = str(v)
                found = seen.get(text)
                out[i] = found if found is not None else seen.setdefault(text, text_id(text))
    return out


#: the range of the ids of texts: below -1 (-1 is none), within int32 (a device column's type)
TEXT_IDS = 1 << 30


def text_id(text: str) -> int:
    """A text's id where an integer goes: a function of the text alone (a stable hash), in
    ``[-1 - TEXT_IDS, -2]``; two texts of one file share one with a chance of about n²/2^31."""
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return -2 - int.from_bytes(digest, "little") % TEXT_IDS
