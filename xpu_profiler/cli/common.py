"""What every command shares: one-line errors (exit 2), Ctrl-C (exit 130), the paths written."""

from __future__ import annotations

import errno
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


class NonEmptyPath(click.Path):
    """A path option or argument that is never empty: ``''`` would be the current directory,
    read as an input or written into as an output without a word."""

    def convert(self, value, param, ctx):
        if isinstance(value, str) and not value.strip():
            self.fail("is empty: name a file or a directory", param, ctx)
        return super().convert(value, param, ctx)


class Text(click.ParamType):
    """A text option that is never empty (an empty value was silently the default)."""

    name = "text"

    def convert(self, value, param, ctx):
        if isinstance(value, str) and not value.strip():
            self.fail("is empty", param, ctx)
        return value


class Percent(click.ParamType):
    """A finite percentage of 0 or more (``inf``, ``nan`` and negatives make no threshold)."""

    name = "pct"

    def convert(self, value, param, ctx):
        try:
            pct = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is no number", param, ctx)
        if pct != pct or pct in (float("inf"), float("-inf")) or pct < 0:
            self.fail(f"{value!r}: a finite percentage of 0 or more", param, ctx)
        return pct


class Main(click.Group):
    """The command group, its standard streams made safe first: a closed standard output is
    the null device (a command writes its paths there), text the terminal's encoding cannot
    show is escaped, and a standard output that fails (a full disk, an I/O error) is one line
    on standard error, exit 2, not a traceback (a reader that left, ``| head``: exit 1, as click)."""

    def main(self, *args, **kwargs):
        for name in ("stdout", "stderr"):
            stream = getattr(sys, name)
            if stream is None:  # (started with the descriptor closed)
                setattr(sys, name, open(os.devnull, "w"))
            elif hasattr(stream, "reconfigure"):
                stream.reconfigure(errors="backslashreplace")
        try:
            try:
                return super().main(*args, **kwargs)
            finally:
                sys.stdout.flush()  # (here, where a failure can still be said)
        except OSError as e:
            sys.stdout = open(os.devnull, "w")  # (nothing more goes there, at exit either)
            if e.errno == errno.EPIPE:  # the reader left (``| head``): nothing to say, as click says nothing
                sys.exit(1)
            try:
                click.echo(f"xpu_profiler: error: standard output: {e.strerror or e}", err=True)
            except OSError:  # (standard error fails too: the exit status says it alone)
                pass
            sys.exit(2)


def offline_process() -> None:
    """For the commands that only analyse (no engine runs in this process or under it):
    numpy's OpenBLAS starts a thread per core that spins while it waits for work, and the
    analysis makes no BLAS call, so on a small machine those threads only take CPU from the
    reader's workers (measured: about a tenth of a second of wall time on a 1M-event trace,
    two cores). One BLAS thread (none started) unless the user chose; it must be set before
    numpy is imported, which the commands' own imports do. Such a process may also end
    without the interpreter's teardown (``main.run``): no engine's objects wait for it."""
    global OFFLINE
    OFFLINE = True
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


#: whether this process runs a command that only analyses (``offline_process``)
OFFLINE = False


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
