"""`xpu_profiler validate TRACE` and `xpu_profiler view TRACE`."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..core.errors import XpuProfilerError
from .common import NonEmptyPath, _fail, _os_error


@click.command()
@click.argument("trace", type=NonEmptyPath(path_type=Path))
def validate(trace: Path) -> None:
    """Check a Chrome/Perfetto trace JSON against Perfetto's import rules: what Perfetto rejects
    or drops fails it (exit 1); what it imports through (precision, order, names) is a warning."""
    from ..exporters.validate import validate_file
    from ..exporters.validate_report import by_kind, split_problems

    try:
        problems = validate_file(trace)
    except XpuProfilerError as e:
        _fail(e)
    except OSError as e:
        _fail(_os_error(e))
    from ..core.fmt import plain

    errors, warnings = split_problems(problems)
    for prefix, found in (("", errors), ("warning: ", warnings)):
        for first, n in by_kind(found):
            click.echo(f"{prefix}{plain(first)}" + (f" (and {n - 1:,} more like it)" if n > 1 else ""))
    if errors:
        sys.exit(1)
    click.echo(f"{plain(str(trace))}: ok" + (f" ({len(warnings):,} warnings)" if warnings else ""))


@click.command("view")
@click.argument("trace", type=NonEmptyPath(path_type=Path))
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=9001,
    show_default=True,
    help="Loopback port (ui.perfetto.dev fetches from 9001 only; 0 = any free port).",
)
@click.option("--no-browser", is_flag=True, help="Only print the link (and an ssh -L hint for remote machines).")
@click.option("--keep", is_flag=True, help="Keep serving after the UI has fetched the trace (until Ctrl-C).")
def view_command(trace: Path, port: int, no_browser: bool, keep: bool) -> None:
    """Open TRACE in ui.perfetto.dev: serve this one file on 127.0.0.1 until the UI has fetched it."""
    from .view import serve_trace

    try:
        code = serve_trace(trace, port=port, browser=not no_browser, keep=keep)
    except XpuProfilerError as e:
        _fail(e)
    except OSError as e:
        _fail(_os_error(e))
    except KeyboardInterrupt:
        sys.exit(130)
    sys.exit(code)
