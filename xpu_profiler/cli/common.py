"""What every command shares: one-line errors (exit 2), Ctrl-C (exit 130), the paths written."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from ..core.errors import XpuProfilerError

PROGRESS_MIN_BYTES = 32 << 20  # show a progress bar for inputs larger than this
#: the ``-o`` rule of the commands that write every format (``analysis.output_paths``), one sentence
OUTPUT_RULE = (
    "A directory that receives every output (created if need be), or one output's file named by its "
    "ending (.html, .summary.json, .trace.json.gz or .json.gz, .csv, .npz), the others written beside it "
    "as STEM.trace.json.gz, STEM.summary.json, ...; any other file name (.json, .txt, .gz...) or a "
    "format --format leaves out is an error."
)


def offline_process() -> None:
    """For the commands that only analyse (no engine runs in this process or under it):
    numpy's OpenBLAS starts a thread per core that spins while it waits for work, and the
    analysis makes no BLAS call, so on a small machine those threads only take CPU from the
    reader's workers (measured: about a tenth of a second of wall time on a 1M-event trace,
    two cores). One BLAS thread (none started) unless the user chose; it must be set before
    numpy is imported, which the commands' own imports do."""
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def _fail(e: BaseException) -> None:
    """One line on stderr, exit 2 (after the paths of the outputs already written, which stay)."""
    from ..core.fmt import plain

    _wrote(getattr(e, "written", None) or {})
    click.echo(f"xpu_profiler: error: {plain(str(e))}", err=True)
    sys.exit(getattr(e, "exit_code", 2))


def _os_error(e: OSError) -> XpuProfilerError:
    """An OS error no reader or writer named: one line with the path and the OS's reason."""
    from ..core.atomic_write import reason

    where = e.filename if e.filename is not None else "xpu_profiler"
    return XpuProfilerError(f"{where}: {reason(e)}")


def _interrupted(what: str = "interrupted") -> None:
    click.echo(f"xpu_profiler: {what}", err=True)
    sys.exit(130)


def _wrote(written: dict) -> None:
    from ..core.fmt import plain

    for kind, path in written.items():
        click.echo(f"wrote {kind:8s} {plain(str(path))}")


def _csv(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


def _size(p: Path, content: bool = False) -> int:
    """Bytes of a file, or of the files in a directory: on disk, or their (decompressed)
    content (what memory is bounded by)."""
    from ..readers.content import content_size

    size = content_size if content else (lambda f: f.stat().st_size)
    try:
        if p.is_dir():
            return sum(size(f) for f in p.rglob("*") if f.is_file())
        return size(p)
    except OSError:
        return 0
