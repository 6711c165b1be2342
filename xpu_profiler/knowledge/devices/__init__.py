"""Devices: one backend per ``--device`` kind (detection, specs, runtime needs), one registry.

``BACKENDS`` is the registry, in the order ``--device auto`` tries them. Adding a device is a
module with a ``BACKEND`` (``base.Backend``) and a row here; adding a part of a known kind is a
row in its vendor's spec table (``specs_nvidia``, ``specs_amd``, ``kunlun``).

Specs can be overridden for one command (``--device-spec FILE``): ``load_spec_overrides(path)``
gives the table with them, which the command hands down (``specs=``); nothing is set for the
process, so threads and API callers never see another call's.
"""

from __future__ import annotations

import importlib
import json
import math
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

from ...core.errors import DeviceError, XpuProfilerError
from ...core.regular import require_regular
from .base import Backend, DeviceInfo, DeviceSpec, GiB, Signature, SpecRow

__all__ = [
    "BACKENDS",
    "DEVICES",
    "Backend",
    "DeviceInfo",
    "DeviceSpec",
    "SPECS",
    "backend",
    "backends",
    "detect",
    "load_spec_overrides",
    "spec_for",
    "spec_for_name",
    "spec_key_for_name",
    "spec_key_for_properties",
    "specs",
]

#: the backends' modules, in the order ``auto`` tries them (the CPU, always present, last)
BACKENDS = ("kunlun", "cuda", "cpu")


def backends() -> list[Backend]:
    return [importlib.import_module(f"{__name__}.{m}").BACKEND for m in BACKENDS]


def backend(kind: str) -> Backend:
    for b in backends():
        if b.kind == kind:
            return b
    raise DeviceError(f"unknown device {kind!r} (choose from {', '.join(DEVICES)})")


DEVICES = ("auto", *sorted(b.kind for b in backends()))


def _rows() -> list[SpecRow]:
    return [row for b in backends() for row in b.specs]


#: the built-in spec table, by key (read-only; a command's overrides: ``load_spec_overrides``)
SPECS: Mapping[str, DeviceSpec] = MappingProxyType({row.key: row.spec for row in _rows()})
_MATCH = sorted(((w.upper(), row.key) for row in _rows() for w in row.match), key=lambda t: -len(t[0]))


def specs() -> Mapping[str, DeviceSpec]:
    """The built-in spec table (a command's ``--device-spec`` is handed down as a table of its
    own: ``load_spec_overrides``)."""
    return SPECS


def detect(requested: str = "auto") -> DeviceInfo:
    """The device to run on; raises DeviceError (one line) when ``requested`` is absent.
    ``auto`` takes the first backend present, in ``BACKENDS`` order."""
    requested = (requested or "auto").lower().replace("-", "_")
    if requested not in DEVICES:
        raise DeviceError(f"unknown device {requested!r} (choose from {', '.join(DEVICES)})")
    for b in backends():
        if requested not in ("auto", b.kind):
            continue
        ok, why = b.probe()
        if ok:
            return b.describe()
        if requested == b.kind:
            raise DeviceError(f"device {b.kind} is not available: {why}")
    raise DeviceError(f"no device found for {requested!r}")  # pragma: no cover (the CPU is always there)


def spec_key_for_name(name: str) -> str | None:
    """The spec key of a device named as a trace or torch names it ("NVIDIA H100 80GB HBM3")."""
    up = name.upper()
    return next((key for word, key in _MATCH if word in up), None)


#: names that say nothing of the part (ROCm builds may write these for Instinct GPUs)
GENERIC_NAMES = ("", "AMD RADEON GRAPHICS", "AMD RADEON GRAPHICS (GFX90A)")


def spec_key_for_properties(props: Mapping[str, object]) -> str | None:
    """The spec key of a device as a trace describes it (Kineto ``deviceProperties``: ``name``,
    ``totalGlobalMem``, ``computeMajor``, ``computeMinor``, ``numSms``, ``warpSize``): by its name,
    unless the properties contradict the part the name gives (``AMD Instinct MI250X/MI250`` with
    104 CUs is an MI250); by the properties alone when the name is empty or generic."""
    name = str(props.get("name") or "").strip()
    by_name = None if name.upper() in GENERIC_NAMES else spec_key_for_name(name)
    rows = {row.key: row for row in _rows()}
    by_sig = next((row.key for row in _rows() if row.signature and _fits(row.signature, props)), None)
    if by_name is None:
        return by_sig
    own = rows[by_name].signature if by_name in rows else None
    if own is not None and by_sig is not None and by_sig != by_name and _known(props) and not _fits(own, props):
        return by_sig
    return by_name


def _known(props: Mapping[str, object]) -> bool:
    return all(isinstance(props.get(k), int) for k in ("warpSize", "computeMajor", "computeMinor", "numSms"))


def _fits(sig: Signature, props: Mapping[str, object]) -> bool:
    if not _known(props):
        return False
    mem = props.get("totalGlobalMem")
    if not isinstance(mem, (int, float)) or mem <= 0:
        return False
    return (
        props["warpSize"] == sig.warp_size
        and (props["computeMajor"], props["computeMinor"]) == sig.compute
        and props["numSms"] == sig.units
        and abs(mem / GiB - sig.mem_gib) <= 0.08 * sig.mem_gib
    )


def spec_for(info: DeviceInfo, table: Mapping[str, DeviceSpec] | None = None) -> DeviceSpec | None:
    """The spec of a detected device, from ``table`` (the built-in one by default)."""
    return (table if table is not None else specs()).get(info.spec_key) if info.spec_key else None


def spec_for_name(name: str) -> DeviceSpec | None:
    """The spec of a device named as a trace names it, if known."""
    key = spec_key_for_name(name)
    return specs().get(key) if key else None


def load_spec_overrides(path: str | Path) -> dict[str, DeviceSpec]:
    """The spec table with the entries of a JSON or TOML file ``{key: {name, peak_flops,
    mem_bw_bytes_s, mem_bytes, source}}`` merged over it (fields missing in the file keep the
    table's values). Raises XpuProfilerError (one line) for a bad file."""
    p = Path(path)
    try:
        require_regular(p, "the device spec is a JSON or TOML file")
        raw = p.read_bytes()
    except OSError as e:
        raise XpuProfilerError(f"{p}: cannot read device spec file ({e.strerror or e})") from None
    try:
        if p.suffix.lower() == ".toml":
            from ...core.toml import loads

            data = loads(raw.decode("utf-8"))
        else:
            data = json.loads(raw.decode("utf-8"))
    except Exception as e:
        raise XpuProfilerError(f"{p}: not a valid device spec file ({type(e).__name__}: {e})") from None
    if not isinstance(data, dict):
        raise XpuProfilerError(f"{p}: a device spec file must map device keys to tables")
    table = dict(specs())
    for key, val in data.items():
        if not isinstance(val, dict):
            raise XpuProfilerError(f"{p}: entry {key!r} must be a table")
        base = table.get(key)
        fields = (
            base.to_json()
            if base
            else {"name": key, "peak_flops": {}, "mem_bw_bytes_s": None, "mem_bytes": None, "source": ""}
        )
        unknown = set(val) - set(fields)
        if unknown:
            raise XpuProfilerError(f"{p}: entry {key!r} has unknown field(s) {', '.join(sorted(unknown))}")
        if "peak_flops" in val:
            if not isinstance(val["peak_flops"], dict):
                raise XpuProfilerError(f"{p}: entry {key!r}: peak_flops must map dtypes to FLOP/s")
            peaks = {str(k): _positive(p, key, f"peak_flops.{k}", v) for k, v in val["peak_flops"].items()}
            fields["peak_flops"] = {**fields["peak_flops"], **peaks}
        for f in ("mem_bw_bytes_s", "mem_bytes"):
            if f in val:
                fields[f] = _positive(p, key, f, val[f])
        for f in ("name", "source"):
            if f in val:
                if not isinstance(val[f], str):
                    raise XpuProfilerError(f"{p}: entry {key!r}: {f} must be a string")
                fields[f] = val[f]
        # the figures are the file's: its source says so, unless the file names one
        fields["source"] = val.get("source") or f"override from {p.name}"
        table[key] = DeviceSpec(**fields)
    return table


def _positive(path: Path, key: str, field: str, value: object) -> float:
    """A spec figure: a positive finite number (a peak of 0 or below, or text, is a mistake)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise XpuProfilerError(f"{path}: entry {key!r}: {field} must be a number, not {value!r:.40}")
    try:
        number = float(value)  # an int past a float's range (1e400) overflows
    except OverflowError:
        number = math.inf
    if not math.isfinite(number) or number <= 0:
        said = f"{value!r:.40}" if isinstance(value, float) else f"an integer of {len(str(abs(value)))} digits"
        raise XpuProfilerError(f"{path}: entry {key!r}: {field} must be a positive number, not {said}")
    return number
