"""Where the tests find real traces from other projects.

The small ones are copied into ``tests/data/real-traces/`` (with their licences, see its
README), so every checkout runs the tests that need them; the larger ones are read from
``../shared/data/real-traces`` beside the checkout when it is there. Both keep the same
paths under ``real-traces/``. A test that needs a trace found in neither place skips
through ``need`` with one reason, so pytest's summary says it once, on one line, with the
number of tests that did not run.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LOCAL = ROOT / "tests" / "data" / "real-traces"
SHARED = ROOT.parent / "shared" / "data" / "real-traces"
MISSING = (
    f"needs a real trace that is neither in tests/data/real-traces nor in {SHARED} "
    "(the shared test data, not beside this checkout)"
)


def path(rel: str) -> Path:
    """The trace at ``rel`` (a path under real-traces/): the copy here, else the shared one
    (which may not exist either)."""
    local = LOCAL / rel
    return local if local.exists() else SHARED / rel


def have(rel: str) -> bool:
    return path(rel).exists()


def need(rel: str) -> Path:
    """``path(rel)``; the test skips (``MISSING``) when the trace is in neither place."""
    p = path(rel)
    if not p.exists():
        pytest.skip(MISSING)
    return p


def files(pattern: str = "*.json.gz", recursive: bool = False) -> list[Path]:
    """Every file matching ``pattern`` in either place, each once (the copy here first),
    in the order of their paths under real-traces/."""
    found: dict[str, Path] = {}
    for base in (LOCAL, SHARED):
        if base.is_dir():
            for p in base.rglob(pattern) if recursive else base.glob(pattern):
                found.setdefault(p.relative_to(base).as_posix(), p)
    return [found[k] for k in sorted(found)]


def entries() -> list[Path]:
    """The entries (files and directories) directly under real-traces/ in either place,
    each once, licences left out; a directory from the shared data when it is there (it
    holds more than the copy here)."""
    found: dict[str, Path] = {}
    for base in (SHARED, LOCAL):
        if base.is_dir():
            for p in base.iterdir():
                if not p.name.startswith(("LICENSE", "README")):
                    found.setdefault(p.name, p)
    return [found[k] for k in sorted(found)]


def runs() -> list[Path]:
    """Each run among the entries: a file, or a directory of one run's rank files (distinct
    ranks in their names); a directory that collects traces of several runs (several rank-0
    files, or no ranks at all) gives each of its traces and run directories, side files (a
    capture's execution details) left out."""
    from xpu_profiler.readers.base import rank_from_name

    out = []
    for e in entries():
        if e.is_file():
            out.append(e)
            continue
        members = sorted(p for p in e.iterdir() if not p.name.startswith(("LICENSE", "README", ".")))
        # (a capture's execution details are a side file; an .nsys-rep needs nsys to be read)
        traces = [p for p in members if p.is_file() and "details" not in p.name and p.suffix != ".nsys-rep"]
        ranks = [rank_from_name(p) for p in traces]
        if traces and None not in ranks and len(set(ranks)) == len(ranks):
            out.append(e)  # one run's ranks
        else:
            out += [p for p in members if p.is_dir()] + traces
    return out


class RealPath(os.PathLike):
    """``REAL / "gpu-inference" / "x.json.gz"``: a path under real-traces/ resolved each time it
    is used (``path``: the copy here when there is one, else the shared one). It is a path-like
    (``open``, ``Path(...)``, the readers take it) and answers what a ``Path`` answers. Asking
    whether it is there (``exists``, ``is_file``, ``name``...) never skips; reading a trace that
    is in neither place skips the test (``MISSING``), as ``need`` does."""

    #: what may be asked of a trace that is in neither place
    ASKED = frozenset({"exists", "is_file", "is_dir", "name", "stem", "suffix", "suffixes", "parent", "parts"})

    def __init__(self, rel: str = "") -> None:
        self.rel = rel

    def __truediv__(self, part: str) -> RealPath:
        return RealPath(f"{self.rel}/{part}" if self.rel else str(part))

    def resolved(self) -> Path:
        if self.rel:
            return path(self.rel)
        return SHARED if SHARED.is_dir() else LOCAL

    def needed(self) -> Path:
        p = self.resolved()
        if not p.exists():
            pytest.skip(MISSING)
        return p

    def __fspath__(self) -> str:
        return str(self.needed())

    def __getattr__(self, name: str):
        return getattr(self.resolved() if name in self.ASKED else self.needed(), name)

    def __str__(self) -> str:
        return str(self.resolved())

    def __repr__(self) -> str:
        return f"RealPath({self.rel!r})"

    def __eq__(self, other: object) -> bool:
        return Path(self) == Path(other) if isinstance(other, (str, os.PathLike)) else NotImplemented

    def __hash__(self) -> int:
        return hash(self.resolved())


#: the real traces, wherever each one is
REAL = RealPath()


def kineto_files(pattern: str = "*.json.gz") -> list[Path]:
    """``files(pattern, recursive=True)`` that are Chrome/Kineto JSON by their content (a
    rocprofv3 JSON is not), judged on their first bytes."""
    from xpu_profiler.readers import kineto
    from xpu_profiler.readers.content import read_head

    return [p for p in files(pattern, recursive=True) if kineto.sniff(p, read_head(p))]
