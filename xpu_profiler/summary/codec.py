"""``summary.json``: the Summary's JSON encoding, and reading it back (schema 2 and 1)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from ..core.fmt import safe_text
from .metadata import run_from_metadata
from .schema import SCHEMA, SCHEMA_VERSION, Summary, Throughput


def _enc_hook(obj: Any) -> Any:
    """numpy values that reached a free-form dict (run metadata) become plain JSON."""
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    raise NotImplementedError(f"cannot encode {type(obj).__name__}")


_ENCODER = msgspec.json.Encoder(enc_hook=_enc_hook, order="sorted")


def encode(summary: Summary, indent: int = 1) -> bytes:
    """``summary.json``: sorted keys, NaN/inf as null, UTF-8 (a name that was no UTF-8, a file
    name's odd byte, written as its escape)."""
    try:
        data = _ENCODER.encode(summary)
    except UnicodeEncodeError:
        data = _ENCODER.encode(_safe(msgspec.to_builtins(summary, enc_hook=_enc_hook)))
    return msgspec.json.format(data, indent=indent) if indent else data


def _safe(x: Any) -> Any:
    """Plain data with every string made valid UTF-8 (``fmt.safe_text``)."""
    if isinstance(x, str):
        return safe_text(x)
    if isinstance(x, dict):
        return {safe_text(k) if isinstance(k, str) else k: _safe(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_safe(v) for v in x]
    return x


def to_builtins(summary: Summary) -> dict[str, Any]:
    """The summary as plain dicts and lists (what ``summary.json`` holds)."""
    data: dict[str, Any] = msgspec.json.decode(_ENCODER.encode(summary))
    return data


#: the sections every summary.json written (either version) has
REQUIRED = ("run", "totals", "fused_ops", "steps")


def load_summary(path: str | Path) -> Summary:
    """Read a ``summary.json`` back: schema version 2, or a version 1 file."""
    data = Path(path).read_bytes()
    try:
        doc = msgspec.json.decode(data)
    except msgspec.DecodeError as e:
        raise ValueError(f"{path}: not JSON ({e})") from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise ValueError(f"{path}: not an xpu_profiler summary")
    version = doc.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise ValueError(f"{path}: schema_version {version!r} is not an integer (a summary.json says 1 or 2)")
    if version not in (1, SCHEMA_VERSION):
        raise ValueError(
            f"{path}: summary schema version {version} is not supported "
            f"(this xpu_profiler reads 1 and {SCHEMA_VERSION})"
        )
    missing = [k for k in REQUIRED if k not in doc]
    if missing:  # every summary written has these: without them it would read as a run of nothing
        raise ValueError(f"{path}: not a valid summary (no {', '.join(missing)})")
    if version == 1:
        why = _odd_v1_sections(doc)
        if why:  # (what the conversion below would take for an object or a list)
            raise ValueError(f"{path}: not a valid summary ({why})")
        doc = _from_v1(doc)
    try:
        summary = msgspec.convert(doc, Summary)
    except msgspec.ValidationError as e:
        raise ValueError(f"{path}: not a valid summary ({e})") from None
    why = _odd_values(summary)
    if why:  # (a hand-edited file: its numbers would compare as a run's)
        raise ValueError(f"{path}: not a valid summary ({why})")
    return summary


def _odd_values(summary: Summary) -> str | None:
    """What no summary we write holds: a negative time or count in the totals, the phases,
    the fused ops or the kernels; columns of one table of different lengths (an empty one is
    a column that summary has not: older versions wrote fewer)."""
    rows: list[tuple[str, msgspec.Struct]] = [("totals", summary.totals)]
    rows += [(f"phases[{i}]", p) for i, p in enumerate(summary.phases)]
    rows += [(f"fused_ops[{i}]", f) for i, f in enumerate(summary.fused_ops)]
    rows += [(f"top_kernels[{i}]", k) for i, k in enumerate(summary.top_kernels)]
    while rows:
        where, row = rows.pop()
        for name in row.__struct_fields__:
            v = getattr(row, name)
            if isinstance(v, msgspec.Struct):  # (a phase's device and host times, its kernels)
                rows.append((f"{where}.{name}", v))
                continue
            counted = "_ns" in name or name in _COUNTS or name.startswith("count")
            for key, x in v.items() if isinstance(v, dict) else [("", v)]:  # (times and counts by phase)
                if counted and isinstance(x, (int, float)) and not isinstance(x, bool) and (x < 0 or x != x):
                    return f"{where}.{name}{f'[{key!r}]' if key else ''} is {x}"
    for where, table in (("steps", summary.steps), ("requests", summary.requests)):
        lengths = {n: len(v) for n in table.__struct_fields__ if isinstance(v := getattr(table, n), list) and v}
        if len(set(lengths.values())) > 1:
            common = max(set(lengths.values()), key=list(lengths.values()).count)
            odd = next(k for k, n in lengths.items() if n != common)
            return f"its {where} column {odd} has {lengths[odd]} rows, the others {common}"
    return None


#: the counts of the rows ``_odd_values`` looks at (beside every ``*_ns``)
_COUNTS = ("steps", "tokens", "count", "events", "step_rows", "engines", "ranks", "prefill_tokens", "decode_tokens")


#: JSON's names of the types a version-1 section is read as
_JSON_TYPES = {dict: "object", list: "array", str: "str", int: "int", float: "float", bool: "bool", type(None): "null"}


def _odd_v1_sections(doc: dict[str, Any]) -> str | None:
    """Where a version-1 file holds another type than the sections ``_from_v1`` reads (said as
    msgspec says it of a version-2 file); None when every one is what it reads (a section may
    be null, a fused op may not)."""
    run, fused = doc.get("run"), doc.get("fused_ops")
    wanted: list[tuple[str, Any, type, bool]] = [("run", run, dict, True), ("fused_ops", fused, list, True)]
    wanted += [("throughput", doc.get("throughput"), dict, True)]
    if isinstance(run, dict):
        wanted.append(("run.sources", run.get("sources"), list, True))
    for i, f in enumerate(fused if isinstance(fused, list) else []):
        wanted.append((f"fused_ops[{i}]", f, dict, False))
        if isinstance(f, dict):
            wanted += [(f"fused_ops[{i}].{k}", f.get(k), dict, True) for k in ("by_phase", "per_token_ns")]
    for where, value, kind, nullable in wanted:
        if not isinstance(value, kind) and not (nullable and value is None):
            got = _JSON_TYPES.get(type(value), type(value).__name__)
            return f"Expected `{_JSON_TYPES[kind]}`, got `{got}` - at `$.{where}`"
    return None


def _from_v1(doc: dict[str, Any]) -> dict[str, Any]:
    """Version 1 (untyped dicts) → the version 2 layout."""
    doc = dict(doc, schema_version=SCHEMA_VERSION)
    doc["run"] = msgspec.to_builtins(run_from_metadata(doc.get("run") or {}, extra=None))
    doc["fused_ops"] = [
        {
            **{k: v for k, v in f.items() if k not in ("by_phase", "per_token_ns")},
            "time_ns_by_phase": f.get("by_phase") or {},
            "per_token_ns_by_phase": f.get("per_token_ns") or {},
        }
        for f in doc.get("fused_ops") or []
    ]
    doc["steps"] = doc.get("steps") or {}
    doc["throughput"] = {k: v for k, v in (doc.get("throughput") or {}).items() if k in Throughput.__struct_fields__}
    return doc
