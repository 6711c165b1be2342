"""`xpu_profiler record --url URL`: a window of a running vLLM server."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..core.errors import XpuProfilerError
from .common import OUTPUT_RULE, NonEmptyPath, Text, _csv, _fail, _interrupted, _os_error


@click.command()
@click.option("--url", required=True, help="The running vLLM server, e.g. http://127.0.0.1:8000.")
@click.option("--steps", type=int, default=None, help="Trace exactly the next N engine steps.")
@click.option("--seconds", type=float, default=None, help="Trace the steps of the next S seconds.")
@click.option(
    "--dir",
    "record_dir",
    type=NonEmptyPath(file_okay=False),
    default=None,
    help="The server's XPU_PROFILER_DIR (default: read from the server process's environment).",
)
@click.option(
    "--output",
    "-o",
    type=NonEmptyPath(path_type=Path),
    default=Path("xpu_profiler_out"),
    show_default=True,
    help=OUTPUT_RULE,
)
@click.option("--format", "formats", type=Text(), default=None, help="Comma list of perfetto, json, csv, html.")
@click.option(
    "--detail_level",
    "--detail-level",
    "detail_level",
    type=click.Choice(["standard", "comprehensive"]),
    default="standard",
    show_default=True,
    help="comprehensive: + shapes, memory events, FLOPs.",
)
@click.option(
    "--timeout",
    type=float,
    default=300.0,
    show_default=True,
    help="Seconds to wait for the window before cancelling it.",
)
@click.option(
    "--via",
    type=click.Choice(["auto", "plugin", "vllm"]),
    default="auto",
    show_default=True,
    help="plugin: the xpu_profiler plugin's windows (XPU_PROFILER_DIR); vllm: the server's own "
    "/start_profile (--profiler-config); auto: the plugin when the server records with it.",
)
@click.option(
    "--trace-dir",
    type=NonEmptyPath(file_okay=False),
    default=None,
    help="--via vllm: the server's torch_profiler_dir (default: read from its command line).",
)
@click.option("--quiet", "-q", is_flag=True, help="No terminal summary.")
def record(url, steps, seconds, record_dir, output, formats, detail_level, timeout, via, trace_dir, quiet) -> None:
    """Trace a window of steps of a running `vllm serve` (started with XPU_PROFILER_DIR set,
    or with vLLM's --profiler-config) with torch.profiler, without restarting it, and
    write the report."""
    from ..live.record import RecordOptions, record_from_cli

    try:
        code = record_from_cli(
            RecordOptions(
                url,
                steps=steps,
                seconds=seconds,
                record_dir=record_dir,
                output=output,
                detail_level=detail_level,
                timeout=timeout,
                formats=_csv(formats),
                quiet=quiet,
                via=via,
                trace_dir=trace_dir,
            )
        )
    except XpuProfilerError as e:
        _fail(e)
    except OSError as e:
        _fail(_os_error(e))
    except KeyboardInterrupt:
        _interrupted("interrupted; the window was cancelled")
    sys.exit(code)
