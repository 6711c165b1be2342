"""One process's rocprofv3 output in several formats, read once.

``rocprofv3 --output-format csv json rocpd`` writes each process's records once per format into
one directory: ``<pid>_results.json``, ``<pid>_results.db`` and ``<pid>_kernel_trace.csv``...
Read together they would count every kernel two or three times; the process is read from its
JSON (the richest: copy bytes), else its database, else its CSV files, and the others are said.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import ModuleType

from . import csv_files

_RESULTS = re.compile(r"^(\d+)_results\.(json|db)(?:\.(?:gz|xz|bz2|zst))?$")
_PREFERRED = {"rocprofv3": 0, "rocpd": 1, "rocprofv3-csv": 2}


def _processes(path: Path, name: str) -> set[int]:
    """The pids an input's names say (a CSV unit: its files' prefixes)."""
    if name == "rocprofv3-csv":
        files = [f for f in path.iterdir() if csv_files.named_as_run(f.name)] if path.is_dir() else []
        pids = {csv_files.File(f, "", f.name.split("_", 1)[0] if "_" in f.name else "").pid for f in files}
        return set() if None in pids else {p for p in pids if p is not None}
    m = _RESULTS.match(path.name)
    return {int(m.group(1))} if m else set()


def one_format_per_process(
    found: list[tuple[Path, ModuleType]], skipped: list[tuple[Path, str]] | None
) -> list[tuple[Path, ModuleType]]:
    """``found`` without the inputs whose every process another rocprofv3 output of the same
    directory holds in a format preferred before theirs; those go to ``skipped`` with the reason."""
    mine = [(p, m.NAME, _processes(p, m.NAME)) for p, m in found if m.NAME in _PREFERRED]
    out = []
    for path, mod in found:
        rank = _PREFERRED.get(mod.NAME)
        if rank is not None:
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
