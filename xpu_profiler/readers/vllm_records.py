"""A vLLM server's record directory (``XPU_PROFILER_DIR``: the plugin's
``*.records.jsonl`` of every engine and worker process, plus the torch traces beside
them) read as one input: a directory-level reader (see ``claim`` in ``readers``).
The reading itself is the live path's: ``live/record_dir`` (records → Profile through
``live/assemble``)."""

from __future__ import annotations

from pathlib import Path

from ..core.profile import Profile

NAME = "xpu_profiler records"


def sniff(path: Path, head: bytes) -> bool:
    return False  # one record file means nothing without the others: only the directory is read


def claim(directory: Path) -> list[Path] | None:
    from .records.directory import claimed_files

    return claimed_files(directory)


def read(path: Path, options) -> Profile:
    from .records.directory import read as read_dir

    return read_dir(path, lifetime=options.extra.get("lifetime"))
