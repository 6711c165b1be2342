"""Our own saved Profile (`profile.npz`), for re-analysis without the original traces.

A bundle is data, never code: ``allow_pickle`` stays off, and every array is checked
on load before it becomes a column: one dimension, a numeric dtype that fits the
column's, equal lengths per table, string ids inside the string table, kinds and
phases inside their tables, row references inside the table they point to. A bundle
that fails one of those is broken (one error line). Rows whose times are out of range
(negative durations, times beyond int64 ns, NaN counter values) are skipped and
counted like any odd event.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import cast

import numpy as np

from ..core.errors import TraceError
from ..core.profile import KINDS, PHASES, SCHEMAS, STRING_COLUMNS, Profile, StringTable, Table
from ..core.run_info import RunInfo
from ..core.sources import AttributionSource

NAME = "bundle"

MAX_NS = 1 << 62  # no time of a real trace comes near it (int64 sums stay safe)
MAX_DUR_NS = 10**15  # ~11.6 days, as the trace readers
#: columns that refer to a row of another table (-1: none)
ROW_REFS = {("events", "comm"): "comms", ("events", "step"): "steps"}
#: small-code columns and how many codes they have
CODES = {("events", "kind"): len(KINDS), ("events", "phase"): len(PHASES), ("steps", "phase"): len(PHASES)}


class _Broken(Exception):
    pass


def sniff(path: Path, head: bytes) -> bool:
    return head.startswith(b"PK\x03\x04") and b"meta.npy" in head[:128]


def read(path: Path, options) -> Profile:
    try:
        prof, dropped = _load(path)
    except _Broken as e:
        raise TraceError(path, f"broken xpu_profiler bundle ({e})") from None
    except (zipfile.BadZipFile, KeyError, ValueError, OSError, EOFError, UnicodeDecodeError) as e:
        raise TraceError(path, f"broken xpu_profiler bundle ({str(e)[:160]})") from None
    for table, (n, first) in dropped.items():
        prof.warn(
            f"{path.name}: skipped {n} {table} row{'s' if n > 1 else ''} with a negative or out-of-range "
            f"time or value (first: row {first})"
        )
    prof.run.setdefault("sources", []).append({"path": str(path), "format": NAME})
    return prof


def capture_warning(profile: Profile) -> str | None:
    """What to say of a bundle analysed again without the graph-capture trace its analysis had:
    a bundle holds the profile, not the capture, and the attribution it saved with the events
    counts the replayed kernels matched through one (called before they are attributed again)."""
    matched = int(np.count_nonzero(profile.events["source"] == AttributionSource.CAPTURE))
    if not matched:
        return None
    return (
        f"the bundle was analysed with a graph-capture trace, which it does not hold: the {matched:,} replayed "
        "kernels matched through it are attributed by name now; give the capture trace again (--capture) "
        "for the same attribution"
    )


def _load(path: Path) -> tuple[Profile, dict]:
    with np.load(path, allow_pickle=False) as z:
        if "meta" not in z.files:
            raise _Broken("no meta member")
        raw = z["meta"]
        if raw.dtype != np.uint8 or raw.ndim != 1:
            raise _Broken("meta is not JSON bytes")
        meta = json.loads(bytes(raw).decode("utf-8"))
        if not isinstance(meta, dict) or meta.get("format") != "xpu_profiler.profile":
            raise _Broken("not an xpu_profiler profile bundle")
        strings, base_ns, run = meta.get("strings"), meta.get("base_ns", 0), meta.get("run", {})
        if not isinstance(strings, list) or not all(isinstance(s, str) for s in strings):
            raise _Broken("its string table is not a list of strings")
        if isinstance(base_ns, bool) or not isinstance(base_ns, int) or not 0 <= base_ns < MAX_NS:
            raise _Broken("base_ns is not a time in ns")
        if not isinstance(run, dict):
            raise _Broken("run is not an object")
        # what Profile.save wrote: a RunInfo, its values as JSON gives them back
        prof = Profile(strings=StringTable(strings), base_ns=base_ns, run=cast(RunInfo, run))
        for tname, schema in SCHEMAS.items():
            cols = {c: _column(z, f"{tname}.{c}", dtype) for c, dtype in schema.items() if f"{tname}.{c}" in z.files}
            lengths = {len(v) for v in cols.values()}
            if len(lengths) > 1:
                raise _Broken(f"the columns of {tname} have different lengths ({sorted(lengths)})")
            setattr(prof, tname, Table(schema, cols, n=lengths.pop() if lengths else 0))
    _check_ids(prof)
    return prof, _drop_odd_rows(prof)


def _column(z, key: str, dtype: np.dtype) -> np.ndarray:
    a = z[key]
    if a.ndim != 1:
        raise _Broken(f"{key} is not one-dimensional")
    if dtype.kind in "iu":
        if a.dtype.kind not in "iu":
            raise _Broken(f"{key} holds {a.dtype}, expected integers")
        info = np.iinfo(dtype)
        if len(a) and (int(a.min()) < info.min or int(a.max()) > info.max):
            raise _Broken(f"{key} holds values beyond {dtype}")
    elif dtype.kind == "f" and a.dtype.kind not in "fiu":
        raise _Broken(f"{key} holds {a.dtype}, expected numbers")
    return a.astype(dtype, copy=False)


def _check_ids(prof: Profile) -> None:
    n_strings = len(prof.strings)
    for tname in SCHEMAS:
        t = prof.table(tname)
        if not len(t):
            continue
        for c in STRING_COLUMNS:
            if c in t.cols and ((t[c] < -1).any() or (t[c] >= n_strings).any()):
                raise _Broken(f"{tname}.{c} holds string ids outside its string table ({n_strings} strings)")
        for (tn, c), n in CODES.items():
            if tn == tname and ((t[c] < 0).any() or (t[c] >= n).any()):
                raise _Broken(f"{tname}.{c} holds codes outside 0..{n - 1}")
    for (tn, c), target in ROW_REFS.items():
        col, n = prof.table(tn)[c], len(prof.table(target))
        if len(col) and ((col < -1).any() or (col >= n).any()):
            raise _Broken(f"{tn}.{c} refers to rows outside {target} ({n} rows)")


def _drop_odd_rows(prof: Profile) -> dict:
    """Rows with times no real trace has: skipped and counted (events: a start of -1 means
    no timeline; requests: -1 means never)."""
    ev, st, co, rq, fr = prof.events, prof.steps, prof.counters, prof.requests, prof.frames
    odd = {
        "events": ~(((ev["start"] >= -1) & (ev["start"] < MAX_NS)) & (ev["dur"] >= 0) & (ev["dur"] <= MAX_DUR_NS)),
        "frames": ~(((fr["start"] >= 0) & (fr["start"] < MAX_NS)) & (fr["dur"] >= 0) & (fr["dur"] <= MAX_DUR_NS)),
        "counters": ~((co["t"] >= 0) & (co["t"] < MAX_NS) & np.isfinite(co["value"])),
        "requests": ~np.logical_and.reduce(
            [(rq[c] >= -1) & (rq[c] < MAX_NS) for c in ("arrival", "first_token", "finish", "prompt_len", "output_len")]
        ),
    }
    if ((st["start"] < -1) | (st["start"] >= MAX_NS) | (st["dur"] < 0) | (st["dur"] > MAX_DUR_NS)).any():
        raise _Broken("steps hold negative or out-of-range times")
    dropped = {}
    for tname, bad in odd.items():
        if bad.any():
            dropped[tname] = (int(bad.sum()), int(np.argmax(bad)))
            setattr(prof, tname, prof.table(tname).take(np.flatnonzero(~bad)))
    return dropped
