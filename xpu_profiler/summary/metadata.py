"""Profile metadata → the typed Run and DeviceSpec of a Summary."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from .schema import DeviceSpec, Run, Source

# Profile.run keys that are no run metadata: they have their own sections, or are internal
NOT_RUN_METADATA = {
    "warnings",
    "thread_names",
    "process_names",
    "attributed",
    "device_spec",
    "throughput",
    "sources",
    "graphs",
    "model_config",  # the model's config.json: its layers are in the layers section
    "step_search",
    "phase_inferred",
    "engine_family",
    "engine_evidence",
}
_RUN_FIELDS = set(Run.__struct_fields__) - {"sources", "extra"}
_SOURCE_FIELDS = set(Source.__struct_fields__) - {"details"}


def run_from_metadata(run: Mapping[str, Any]) -> Run:
    """A free-form run dict (``Profile.run``) → the typed Run: known keys typed, the rest
    kept as it is in ``extra`` (as is a known key whose value has another type than
    expected, say from an old bundle)."""
    extra = {k: v for k, v in run.items() if k not in _RUN_FIELDS and k not in NOT_RUN_METADATA}
    known: dict[str, Any] = {}
    for k, v in run.items():
        if k in _RUN_FIELDS and v is not None:
            (known if _fits(Run, k, v) else extra)[k] = v
    sources = []
    for src in run.get("sources") or []:
        if isinstance(src, dict):
            typed = {k: v for k, v in src.items() if k in _SOURCE_FIELDS and v is not None and _fits(Source, k, v)}
            sources.append({**typed, "details": {k: v for k, v in src.items() if k not in typed}})
    return msgspec.convert({**known, "sources": sources, "extra": extra}, Run)


def device_spec(spec: Any) -> DeviceSpec | None:
    """A device spec dict (``devices.DeviceSpec.to_json()``) → DeviceSpec; None if it is none."""
    try:
        return msgspec.convert(spec, DeviceSpec) if isinstance(spec, dict) else None
    except msgspec.ValidationError:
        return None


def _fits(struct: type, key: str, value: Any) -> bool:
    try:
        msgspec.convert({key: value}, struct)
        return True
    except msgspec.ValidationError:
        return False
