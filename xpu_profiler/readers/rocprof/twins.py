"""One process's rocprofv3 output in several formats, read once.

``rocprofv3 --output-format csv json rocpd`` writes each process's records once per format into
one directory: ``<pid>_results.json``, ``<pid>_results.db`` and ``<pid>_kernel_trace.csv``... (``<prefix>_``
under ``-o``). Read together they would count every kernel two or three times; the process is
read from its JSON (the richest: copy bytes), else its database, else its CSV files, and the
others are said (the CSV reader leaves out the files of a process whose JSON or database is
beside them; here, a directory of CSV files whose every process is so is no input).
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from . import csv_files

#: JSON before the database; CSV files come after both (``csv_files.covered_elsewhere``)
_PREFERRED = {"rocprofv3": 0, "rocpd": 1}
_READ_ONCE = "the same process(es) as {} (rocprofv3 output in another format): read once, from those"


def _processes(path: Path) -> set[str]:
    """The processes a JSON or rocpd output's name says (``<prefix>_results.json``: ``<prefix>``)."""
    m = csv_files.RESULTS.match(path.name)
    return {m.group(1)} if m else set()


def one_format_per_process(
    found: list[tuple[Path, ModuleType]], skipped: list[tuple[Path, str]] | None
) -> list[tuple[Path, ModuleType]]:
    """``found`` without the inputs whose every process another rocprofv3 output among them, in
    the same directory, holds in a format preferred before theirs; those go to ``skipped``."""
    inputs = {p for p, _ in found}
    single = [(p, _PREFERRED[m.NAME], _processes(p)) for p, m in found if m.NAME in _PREFERRED]
    out = []
    for path, mod in found:
        over = _covering(path, mod.NAME, single, inputs)
        if over:
            if skipped is not None:
                skipped.append((path, _READ_ONCE.format(", ".join(over)[:200])))
            continue
        out.append((path, mod))
    return out


def _covering(path: Path, name: str, single: list[tuple[Path, int, set[str]]], inputs: set[Path]) -> list[str]:
    """The names of the inputs preferred to ``path`` that hold every process it holds; [] when
    they do not all."""
    if name == "rocprofv3-csv":
        covering = csv_files.covered_elsewhere(path) if path.is_dir() else []
        return covering if covering and {path / n for n in covering} <= inputs else []
    if name not in _PREFERRED:
        return []
    pids = _processes(path)
    better = [(p, theirs) for p, rank, theirs in single if rank < _PREFERRED[name] and p.parent == path.parent]
    if pids and pids <= set().union(*(theirs for _, theirs in better)):
        return [p.name for p, theirs in better if theirs & pids]
    return []
