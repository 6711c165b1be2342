"""What every case module shares: the seeds (real traces), ``Case``, JSON with raw values."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import real_data

ROCM = real_data.path("rocm-mi250-minitoy.json.gz")
SGLANG = real_data.path("tracelens/sglang-qwen3-8b-decode.json.gz")
TWO_RANKS = real_data.path("two-ranks")
CUDA = TWO_RANKS / "rank-0.json.gz"
SEEDS = (ROCM, SGLANG, TWO_RANKS / "rank-0.json.gz", TWO_RANKS / "rank-1.json.gz")


@dataclass(frozen=True)
class Case:
    name: str
    expect: str  # error / ok_warn / ok
    make: Callable[[Path], Path]  # writes the input below a directory, returns its path
    text: str = ""  # error: part of the line; ok_warn: part of one warning line

    def build(self, where: Path) -> Path:
        where.mkdir(parents=True, exist_ok=True)
        return self.make(where)


@cache
def _doc(path: Path) -> str:
    return gzip.decompress(path.read_bytes()).decode("utf-8")


def doc(path: Path = ROCM) -> dict:
    return json.loads(_doc(path))


MISSING = object()


class Raw(str):
    """A JSON value written as is (NaN, Infinity, a thousand-digit number)."""


def dumps(value) -> str:
    """JSON with Raw values spliced in verbatim."""
    marks: dict[str, str] = {}

    def walk(v):
        if isinstance(v, Raw):
            key = f"@@RAW{len(marks)}@@"
            marks[key] = str(v)
            return key
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x) for x in v]
        return v

    text = json.dumps(walk(value))
    for key, raw in marks.items():
        text = text.replace(f'"{key}"', raw)
    return text


def write(where: Path, name: str, data: bytes | str) -> Path:
    path = where / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def kernel_index(d: dict, cat: str = "kernel") -> int:
    """A device kernel in the middle of the trace: the event every mutation breaks."""
    idx = [i for i, e in enumerate(d["traceEvents"]) if e.get("cat") == cat]
    return idx[len(idx) // 2]


def mutated(field: str, value, seed: Path = ROCM, cat: str = "kernel", sub: str | None = None) -> Callable:
    def make(where: Path) -> Path:
        d = doc(seed)
        e = d["traceEvents"][kernel_index(d, cat)]
        target = e.setdefault("args", {}) if sub == "args" else e
        if value is MISSING:
            target.pop(field, None)
        else:
            target[field] = value
        return write(where, "mutated.json", dumps(d))

    return make


BIG = Raw("1" + "0" * 1000)  # a thousand digits
VALUES = {
    "missing": MISSING,
    "null": None,
    "true": True,
    "list": [1],
    "object": {"a": 1},
    "text": "abc",
    "numeric_text": "12.5",
    "nan": Raw("NaN"),
    "inf": Raw("Infinity"),
    "minus_inf": Raw("-Infinity"),
    "negative": -5,
    "huge_float": 1e300,
    "int64_overflow": 10**25,
    "thousand_digits": BIG,
    "minus_int64_overflow": -(10**25),
}
