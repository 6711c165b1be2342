"""Profile metadata → the typed Run and DeviceSpec of a Summary."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from ..core.run_info import RunInfo
from .schema import DeviceSpec, Run, Source

#: Profile.run keys with a section of their own in the Summary, or read by the analysis only
OWN_SECTIONS = frozenset(
    {"warnings", "thread_names", "process_names", "device_spec", "throughput", "sources", "model_config"}
)
_RUN_FIELDS = set(Run.__struct_fields__) - {"sources", "extra"}
_SOURCE_FIELDS = set(Source.__struct_fields__) - {"details"}
#: the run keys carried as they are in ``Run.extra``: every key ``RunInfo`` declares that is
#: neither a typed ``Run`` field nor has a section of its own (an allow-list: a key an older
#: bundle left in its run is not carried)
EXTRA = frozenset(RunInfo.__annotations__) - _RUN_FIELDS - OWN_SECTIONS


def run_from_metadata(
    run: Mapping[str, Any], step_source: str | None = None, extra: frozenset[str] | None = EXTRA
) -> Run:
    """A run dict (``Profile.run``) → the typed Run: known keys typed, the ``extra`` keys kept as
    they are in ``extra`` (as is a known key whose value has another type than expected, say
    from an old bundle); ``extra=None`` keeps every other key (a version-1 summary's run).
    ``step_source``: how the analysis found the steps (``Profile.derived``)."""
    run = {**run, "step_source": step_source} if step_source is not None else run
    keep = (lambda k: k not in OWN_SECTIONS) if extra is None else extra.__contains__
    other = {k: v for k, v in run.items() if k not in _RUN_FIELDS and keep(k)}
    known: dict[str, Any] = {}
    for k, v in run.items():
        if k in _RUN_FIELDS and v is not None:
            (known if _fits(Run, k, v) else other)[k] = v
    sources = []
    for src in run.get("sources") or []:
        if isinstance(src, dict):
            typed = {k: v for k, v in src.items() if k in _SOURCE_FIELDS and v is not None and _fits(Source, k, v)}
            sources.append({**typed, "details": {k: v for k, v in src.items() if k not in typed}})
    return msgspec.convert({**known, "sources": sources, "extra": other}, Run)


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
