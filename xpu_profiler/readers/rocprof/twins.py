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

_PREFERRED = {"rocprofv3": 0, "rocpd": 1, "rocprofv3-csv": 2}


def _processes(path: Path, name: str) -> set[str]:
    """The processes a JSON or rocpd output's name says (``<prefix>_results.json``: ``<prefix>``)."""
    m = csv_files.RESULTS.match(path.name)
    return {m.group(1)} if m else set()


def one_format_per_process(
    found: list[tuple[Path, ModuleType]], skipped: list[tuple[Path, str]] | None
) -> list[tuple[Path, ModuleType]]:
    """``found`` without the inputs whose every process another rocprofv3 output of the same
    directory holds in a format preferred before theirs; those go to ``skipped`` with the reason."""
    mine = [(p, m.NAME, _processes(p, m.NAME)) for p, m in found if m.NAME in _PREFERRED]
    inputs = {p for p, _ in found}
    out = []
    for path, mod in found:
        rank = _PREFERRED.get(mod.NAME)
        covering = csv_files.covered_elsewhere(path) if mod.NAME == "rocprofv3-csv" and path.is_dir() else []
        if covering and {path / n for n in covering} <= inputs:
            if skipped is not None:
                names = ", ".join(covering)[:200]
                skipped.append(
                    (
                        path,
                        f"the same process(es) as {names} (rocprofv3 output in another format): read once, from those",
                    )
                )
            continue
        if rank is not None and mod.NAME != "rocprofv3-csv":
            pids, where = _processes(path, mod.NAME), _dir(path, mod.NAME)
            better = [(p, theirs) for p, name, theirs in mine if _PREFERRED[name] < rank and _dir(p, name) == where]
            covered = set().union(*(theirs for _, theirs in better))
            if pids and pids <= covered:
                if skipped is not None:
                    names = ", ".join(p.name for p, theirs in better if theirs & pids)
                    why = f"the same process(es) as {names[:200]} (rocprofv3 output in another format): read once, from those"
                    skipped.append((path, why))
                continue
        out.append((path, mod))
    return out


def _dir(path: Path, name: str) -> Path:
    return path if name == "rocprofv3-csv" else path.parent
