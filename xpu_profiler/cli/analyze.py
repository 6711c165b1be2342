"""`xpu_profiler analyze PATH...`: the analysis of traces and logs a user already has."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..core.errors import XpuProfilerError
from .common import (
    OUTPUT_RULE,
    PROGRESS_MIN_BYTES,
    NonEmptyPath,
    Text,
    _csv,
    _fail,
    _interrupted,
    _os_error,
    _size,
    _wrote,
    offline_process,
)


@click.command()
@click.argument("paths", nargs=-1, required=True, type=NonEmptyPath(path_type=Path))
@click.option(
    "--output",
    "-o",
    type=NonEmptyPath(path_type=Path),
    default=Path("xpu_profiler_out"),
    show_default=True,
    help=OUTPUT_RULE,
)
@click.option(
    "--format",
    "formats",
    default=None,
    help="Comma list of perfetto, json, csv, html, bundle (default: all but bundle).",
)
@click.option("--taxonomy", type=NonEmptyPath(path_type=Path), help="TOML file with extra fused-op patterns.")
@click.option("--top", type=click.IntRange(min=1), default=15, show_default=True, help="Rows of the top-kernels table.")
@click.option(
    "--rank", type=click.IntRange(min=0), default=None, help="Rank of a single-rank input that does not say it."
)
@click.option(
    "--xpu-gen",
    type=click.Choice(["1", "2", "3"]),
    default=None,
    help="Kunlun generation of [XPURT_PROF] logs (P800 = 3); detected when possible.",
)
@click.option(
    "--capture",
    "captures",
    multiple=True,
    type=NonEmptyPath(path_type=Path),
    help="Graph-capture trace(s) of the run, a file or a directory (repeatable): replayed kernels are "
    "attributed through the captured launches. A vLLM profiler directory's capture_traces/ is "
    "picked up without it.",
)
@click.option(
    "--engine",
    default=None,
    metavar="ENGINE",
    help="How files are read: auto (a local process pool for several files), serial, process, "
    "ray (RAY_ADDRESS, else a local Ray), or ray://HOST:PORT.  [default: auto]",
)
@click.option(
    "--jobs", "-j", type=click.IntRange(min=1), default=None, help="Files read at a time (default: the CPU count)."
)
@click.option(
    "--lifetime",
    type=click.IntRange(min=1),
    default=None,
    help="A server's record directory holding several server lifetimes (restarts): read lifetime N "
    "(1 = the oldest; default: the latest).",
)
@click.option(
    "--findings-config", type=NonEmptyPath(path_type=Path), help="TOML file overriding the findings' thresholds."
)
@click.option(
    "--baseline",
    type=NonEmptyPath(path_type=Path),
    help="A basic-level run of the same workload (summary.json, trace or directory): the "
    "profiler-overhead finding compares throughput against it.",
)
@click.option(
    "--device-spec",
    type=NonEmptyPath(path_type=Path),
    help="TOML/JSON file with device peaks (FLOP/s, memory bandwidth) for MFU and bandwidth.",
)
@click.option(
    "--steps",
    "step_range",
    type=Text(),
    default=None,
    metavar="A:B",
    help="Keep only engine steps A to B-1 (A: or :B leave one end open) of a large trace.",
)
@click.option(
    "--max-events",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Keep only the first N events in time of a large trace.",
)
@click.option(
    "--model",
    "model",
    type=Text(),
    default=None,
    metavar="NAME|PATH",
    help="The model the trace ran: a built-in or known name (qwen3-30b-a3b, glm-5, llama-3.1-70b, ...), a "
    "directory or config.json, or a Hugging Face id in the local cache (nothing is downloaded): its layer "
    "count and types for the per-layer view, its shape for MFU and bandwidth.",
)
@click.option(
    "--no-python-frames",
    is_flag=True,
    help="Leave the traces' Python stack frames out of the Perfetto trace and the bundle (smaller files); "
    "the analysis still reads them.",
)
@click.option("--quiet", "-q", is_flag=True, help="No terminal summary.")
def analyze(
    paths,
    output,
    formats,
    taxonomy,
    top,
    rank,
    xpu_gen,
    captures,
    engine,
    jobs,
    lifetime,
    findings_config,
    baseline,
    device_spec,
    step_range,
    max_events,
    model,
    no_python_frames,
    quiet,
) -> None:
    """Analyse existing traces and logs (Kineto/PyTorch profiler traces, vLLM profiler
    directories, Nsight Systems exports and reports, rocprofv3 outputs, [XPURT_PROF] logs,
    XProfiler traces, saved profiles)."""
    offline_process()
    from .. import analysis

    try:
        if formats is not None and not _csv(formats):
            raise XpuProfilerError(
                f"--format {formats!r} names no format (a comma list of perfetto, json, csv, html, bundle)"
            )
        fmts = _csv(formats) or [f for f in analysis.DEFAULT_FORMATS]
        inputs = [*paths, *captures, baseline, taxonomy, findings_config, device_spec]
        out = analysis.check_outputs(output, fmts, inputs)  # bad formats, unwritable outputs, inputs: before the work
        opts = _options(fmts, taxonomy, top, rank, xpu_gen, captures, engine, jobs, lifetime, findings_config)
        opts = _more_options(opts, baseline, device_spec, step_range, max_events, model, no_python_frames)
        done = _analyze(paths, opts)
        summary = done.summary
        written = analysis.export(done.profile, summary, output, fmts, inputs, ahead=done.ahead, paths=out)
    except XpuProfilerError as e:
        _fail(e)
    except OSError as e:
        _fail(_os_error(e))
    except MemoryError:
        _fail(XpuProfilerError("out of memory while reading the input"))
    except KeyboardInterrupt:
        _interrupted()
    _report(summary, top, quiet)
    _wrote(written)
    sys.stdout.flush()


def _options(fmts, taxonomy, top, rank, xpu_gen, captures, engine, jobs, lifetime, findings_config):
    """The command line's reading and analysis settings as one ``AnalyzeOptions``."""
    from .. import analysis, findings
    from ..knowledge.taxonomy import Taxonomy
    from ..readers import ReadOptions
    from ..readers.base import MAX_RANK, is_rank

    if rank is not None and not is_rank(rank):
        raise XpuProfilerError(f"--rank {rank}: no rank of a real job (ranks are below {MAX_RANK:,})")
    read = ReadOptions(
        rank=rank,
        xpu_gen=int(xpu_gen) if xpu_gen else None,
        extra={"lifetime": lifetime} if lifetime is not None else {},
    )
    return analysis.AnalyzeOptions(
        taxonomy=Taxonomy.from_file(taxonomy) if taxonomy else None,
        read=read,
        top=max(top, 50),
        engine=engine,
        jobs=jobs,
        capture=tuple(captures),
        findings_config=findings.load_config(findings_config) if findings_config else None,
        formats=tuple(fmts),
    )


def _more_options(opts, baseline, device_spec, step_range, max_events, model, no_python_frames):
    """The settings that read a file of their own: the baseline run, the device specs, the
    model's config; and the part of the trace kept."""
    import dataclasses

    from ..aggregate.select import Selection, parse_steps
    from ..diff import load_input
    from ..knowledge import devices
    from .model_config import local_model_config

    sel = Selection(parse_steps(step_range) if step_range else None, max_events)
    return dataclasses.replace(
        opts,
        reference=load_input(baseline) if baseline else None,
        specs=devices.load_spec_overrides(device_spec) if device_spec else None,
        selection=sel or None,
        model_config=local_model_config(model) if model else None,
        python_frames=not no_python_frames,
    )


def _analyze(paths, opts):
    """``analysis.run``, with a progress bar on a terminal for large inputs."""
    from .. import analysis
    from ..core import heap
    from ..terminal.screen import can_redraw

    total = sum(_size(p) for p in paths)
    heap.bound_for_large_input(sum(_size(p, content=True) for p in paths))  # this process is ours
    if total >= PROGRESS_MIN_BYTES and can_redraw(sys.stderr):
        from ..terminal.progress import byte_bar

        with byte_bar(sys.stderr, total, "reading") as advance:
            assert opts.read is not None
            opts.read.progress = advance
            return analysis.run(paths, opts)
    return analysis.run(paths, opts)


def _report(summary, top: int, quiet: bool) -> None:
    """The terminal's summary and the warnings (quiet: only the inputs left out)."""
    from ..core import fmt
    from ..terminal import summary as terminal
    from ..terminal.screen import screen_for

    if not quiet:
        click.echo(terminal.render(summary, top=top, screen=screen_for(sys.stdout)))
        for w in summary.warnings:
            click.echo(f"warning: {fmt.plain(w)}", err=True)
        click.echo("")
    else:  # quiet, but an input left out is never left unsaid
        for w in summary.warnings:
            if any(w.startswith(f"{d.path}: dropped") for d in summary.dropped_inputs):
                click.echo(f"warning: {fmt.plain(w)}", err=True)
