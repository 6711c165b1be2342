"""Command line: `xpu_profiler [live options]` profiles a vLLM run; `xpu_profiler analyze` reads files."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..core.errors import XpuProfilerError
from ..core.version import __version__
from ..knowledge.devices import DEVICES

PROGRESS_MIN_BYTES = 32 << 20  # show a progress bar for inputs larger than this


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


# --------------------------------------------------------------------------------------
# live profiling (the default command)
# --------------------------------------------------------------------------------------


@click.group(invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="xpu_profiler")
@click.option(
    "--model",
    help="Hugging Face id or a known name (glm-5, qwen3-30b-a3b, ...), a local path, or a "
    "built-in small model (tiny-llama, tiny-moe, tiny-glm).",
)
@click.option("--device", type=click.Choice(DEVICES), default="auto", show_default=True, help="Accelerator to run on.")
@click.option(
    "--metrics",
    default="execution_time,memory_usage,throughput",
    show_default=True,
    help="Comma list of execution_time, memory_usage, throughput.",
)
@click.option(
    "--output",
    "-o",
    default="profile_report.html",
    show_default=True,
    help="Report path; the trace (.json.gz) and summary.json are written beside it.",
)
@click.option(
    "--detail_level",
    "--detail-level",
    "detail_level",
    type=click.Choice(["basic", "standard", "comprehensive"]),
    default="standard",
    show_default=True,
    help="basic: step hooks, memory, throughput; standard: + torch.profiler kernels over a "
    "window of steps; comprehensive: + shapes, memory events, FLOPs.",
)
@click.option("--num-prompts", type=int, default=8, show_default=True)
@click.option("--input-len", type=int, default=64, show_default=True)
@click.option("--output-len", type=int, default=32, show_default=True)
@click.option("--warmup-steps", type=int, default=2, show_default=True)
@click.option("--profile-steps", type=int, default=None, help="Steps under torch.profiler (default: all).")
@click.option("--prompts", type=click.Path(dir_okay=False), help='JSONL file of prompts ({"prompt": ...}).')
@click.option("--tensor-parallel-size", "-tp", type=int, default=1, show_default=True)
@click.option("--max-num-batched-tokens", type=int, default=None)
@click.option("--max-model-len", type=int, default=None)
@click.option("--dtype", default="auto", show_default=True)
@click.option("--load-format", default=None, help="vLLM load format (built-in models use 'dummy').")
@click.option("--enforce-eager/--no-enforce-eager", default=None)
@click.option("--engine-arg", multiple=True, metavar="KEY=VALUE", help="Extra vLLM engine argument (repeatable).")
@click.option("--device-spec", type=click.Path(dir_okay=False), help="TOML/JSON file overriding device specs.")
@click.option(
    "--findings-config",
    type=click.Path(dir_okay=False),
    help="TOML file overriding the findings' thresholds (see the README's findings section).",
)
@click.option(
    "--device-logs/--no-device-logs",
    default=None,
    help="Send each worker's stdout/stderr to <output dir>/xpu_logs/rank_N.log and read the "
    "[XPURT_PROF] kernel lines in them (default: on with kunlun_p800).",
)
@click.option(
    "--verbose",
    "-v",
    is_flag=True,
    help="Show vLLM's own output here as well (it always goes to <output dir>/vllm.log).",
)
@click.option("--quiet", "-q", is_flag=True, help="No stages, no terminal summary: only the paths written.")
@click.pass_context
def main(ctx: click.Context, **options) -> None:
    """Profile LLM inference with vLLM and report where each step's time goes.

    Without a sub-command it runs a real vLLM workload under profiling, e.g.

      xpu_profiler --model tiny-llama --device cpu --output report.html

    `xpu_profiler analyze PATH...` analyses traces and logs you already have.
    """
    if ctx.invoked_subcommand is not None:
        return
    if not options.get("model"):
        click.echo(ctx.get_help())
        ctx.exit(0)
    try:
        from .. import findings
        from ..knowledge import devices
        from ..live.run import run_from_cli

        cfg = findings.load_config(options["findings_config"]) if options.get("findings_config") else findings.current()
        with findings.using(cfg), devices.spec_overrides(options.get("device_spec")):
            code = run_from_cli(**{k: v for k, v in options.items() if k != "findings_config"})
    except XpuProfilerError as e:
        _fail(e)
    except OSError as e:
        _fail(_os_error(e))
    except KeyboardInterrupt:
        _interrupted()
    sys.exit(code or 0)


# --------------------------------------------------------------------------------------
# analyze
# --------------------------------------------------------------------------------------


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--output",
    "-o",
    type=click.Path(path_type=Path),
    default=Path("xpu_profiler_out"),
    show_default=True,
    help="Output directory, or a file (report.html, trace.json.gz, ...) with the other outputs written beside it.",
)
@click.option(
    "--format",
    "formats",
    default=None,
    help="Comma list of perfetto, json, csv, html, bundle (default: all but bundle).",
)
@click.option("--taxonomy", type=click.Path(path_type=Path), help="TOML file with extra fused-op patterns.")
@click.option("--top", type=int, default=15, show_default=True, help="Rows of the top-kernels table.")
@click.option("--rank", type=int, default=None, help="Rank of a single-rank input that does not say it.")
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
    type=click.Path(path_type=Path),
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
    type=int,
    default=None,
    help="A server's record directory holding several server lifetimes (restarts): read lifetime N "
    "(1 = the oldest; default: the latest).",
)
@click.option(
    "--findings-config", type=click.Path(path_type=Path), help="TOML file overriding the findings' thresholds."
)
@click.option(
    "--baseline",
    type=click.Path(path_type=Path),
    help="A basic-level run of the same workload (summary.json, trace or directory): the "
    "profiler-overhead finding compares throughput against it.",
)
@click.option(
    "--device-spec",
    type=click.Path(path_type=Path),
    help="TOML/JSON file with device peaks (FLOP/s, memory bandwidth) for MFU and bandwidth.",
)
@click.option(
    "--steps",
    "step_range",
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
    quiet,
) -> None:
    """Analyse existing traces and logs (Kineto/PyTorch profiler traces, vLLM profiler
    directories, [XPURT_PROF] logs, XProfiler traces, saved profiles)."""
    from .. import analysis
    from ..core import fmt
    from ..knowledge.taxonomy import Taxonomy
    from ..readers import ReadOptions
    from ..terminal import summary as terminal

    try:
        from .. import findings
        from ..core import heap
        from ..diff import load_input
        from ..knowledge import devices

        fcfg = findings.load_config(findings_config) if findings_config else None
        ref = load_input(baseline) if baseline else None
        if device_spec:  # for this command only
            click.get_current_context().with_resource(devices.spec_overrides(device_spec))
        tax = Taxonomy.from_file(taxonomy) if taxonomy else None
        fmts = _csv(formats) or [f for f in analysis.DEFAULT_FORMATS]
        inputs = [*paths, *captures, baseline, taxonomy, findings_config, device_spec]
        analysis.check_outputs(output, fmts, inputs)  # bad formats, unwritable outputs, inputs: before the work
        total = sum(_size(p) for p in paths)
        heap.bound_for_large_input(sum(_size(p, content=True) for p in paths))  # this process is ours
        opts = ReadOptions(
            rank=rank,
            xpu_gen=int(xpu_gen) if xpu_gen else None,
            extra={"lifetime": lifetime} if lifetime is not None else {},
        )
        from ..aggregate.select import Selection, parse_steps

        sel = Selection(parse_steps(step_range) if step_range else None, max_events)
        how = {
            "taxonomy": tax,
            "options": opts,
            "top": max(top, 50),
            "engine": engine,
            "jobs": jobs,
            "capture": captures,
            "findings_config": fcfg,
            "reference": ref,
            "selection": sel or None,
            "formats": fmts,
        }
        if total >= PROGRESS_MIN_BYTES and sys.stderr.isatty():
            with click.progressbar(length=total, label="reading", file=sys.stderr) as bar:
                opts.progress = bar.update
                profile, summary = analysis.analyze(paths, **how)
        else:
            profile, summary = analysis.analyze(paths, **how)
        written = analysis.export(profile, summary, output, fmts, inputs)
    except XpuProfilerError as e:
        _fail(e)
    except OSError as e:
        _fail(_os_error(e))
    except MemoryError:
        _fail(XpuProfilerError("out of memory while reading the input"))
    except KeyboardInterrupt:
        _interrupted()
    if not quiet:
        click.echo(terminal.render(summary, top=top))
        for w in summary.warnings:
            click.echo(f"warning: {fmt.plain(w)}", err=True)
        click.echo("")
    else:  # quiet, but an input left out is never left unsaid
        for w in summary.warnings:
            if any(w.startswith(f"{d.path}: dropped") for d in summary.dropped_inputs):
                click.echo(f"warning: {fmt.plain(w)}", err=True)
    _wrote(written)
    sys.stdout.flush()


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


@main.command("diff")
@click.argument("base", type=click.Path(path_type=Path))
@click.argument("new", type=click.Path(path_type=Path))
@click.option(
    "--output",
    "-o",
    type=click.Path(path_type=Path),
    default=Path("xpu_profiler_diff"),
    show_default=True,
    help="Directory for diff.json and diff.html (or a .html/.json file name).",
)
@click.option(
    "--fail-on",
    "fail_on",
    type=float,
    default=None,
    metavar="PCT",
    help="Exit 1 when the decode (or --fail-on-phase) cost per token regressed by more than PCT %.",
)
@click.option(
    "--fail-on-phase",
    default="decode",
    show_default=True,
    type=click.Choice(["prefill", "decode", "mixed", "unknown"]),
    help="Phase --fail-on looks at.",
)
@click.option(
    "--fail-on-metric",
    default="per_token_ns",
    show_default=True,
    help="Metric --fail-on looks at: per_token_ns, step_p50_ns, step_p99_ns (per phase), or "
    "output_tok_s, decode_tok_s, ttft_p50_ns, tpot_p50_ns, ...",
)
@click.option(
    "--findings-config", type=click.Path(path_type=Path), help="TOML file overriding the findings' thresholds."
)
@click.option("--quiet", "-q", is_flag=True, help="No terminal table.")
def diff_command(base, new, output, fail_on, fail_on_phase, fail_on_metric, findings_config, quiet) -> None:
    """Compare two runs (each a trace, directory, bundle or summary.json): step time per
    phase, throughput, latency, fused-op and kernel costs per token, findings."""
    from .. import findings
    from ..core.atomic_write import OutputError, check_outputs, write_bytes
    from ..diff import compare, gate, load_input
    from ..diff.compare import PHASE_METRICS
    from ..exporters.html.diff_page import write_diff
    from ..findings.checks_run import LEVELS_WITH_TORCH
    from ..summary.diff import encode_diff
    from ..terminal.diff import render

    written: dict[str, Path] = {}
    try:
        paths = _diff_paths(output)
        check_outputs(paths, [base, new, findings_config])
        fcfg = findings.load_config(findings_config) if findings_config else None
        b, n = load_input(base), load_input(new)
        findings.attach(b, fcfg)
        ref = b if b.run.detail_level == "basic" and n.run.detail_level in LEVELS_WITH_TORCH else None
        findings.attach(n, fcfg, reference=ref)
        report = compare(b, n, str(base), str(new))
        if fail_on is not None:
            report.gate = gate(report, fail_on, fail_on_phase, fail_on_metric)
            if report.gate.regression is None:
                what = (
                    f"{fail_on_metric} of the {fail_on_phase} phase"
                    if fail_on_metric in PHASE_METRICS
                    else fail_on_metric
                )
                raise XpuProfilerError(f"--fail-on: {what} is not known in both runs")
        written["json"] = write_bytes(paths["json"], encode_diff(report))
        try:
            written["html"] = write_diff(report, paths["html"])
        except OutputError as e:
            e.written = dict(written)
            raise
    except XpuProfilerError as e:
        _fail(e)
    except OSError as e:
        _fail(_os_error(e))
    except KeyboardInterrupt:
        _interrupted()
    if not quiet:
        click.echo(render(report))
        click.echo("")
    _wrote(written)
    sys.stdout.flush()
    sys.exit(1 if report.gate is not None and report.gate.failed else 0)


def _diff_paths(output: Path) -> dict[str, Path]:
    """diff.json and diff.html in a directory, or beside a named .json/.html file."""
    from ..core.atomic_write import OutputError, reason
    from ..core.fmt import plain

    try:
        is_dir = output.is_dir()
    except OSError as e:  # a name too long, no access
        raise OutputError(output, reason(e)) from None
    if output.suffix.lower() in (".html", ".htm", ".json") and not is_dir:
        stem = output.with_suffix("")
        return {"json": stem.with_suffix(".json"), "html": stem.with_suffix(".html")}
    if output.exists() and not is_dir:
        raise XpuProfilerError(f"{plain(str(output))}: exists and is not a directory")
    return {"json": output / "diff.json", "html": output / "diff.html"}


@main.command()
@click.option("--url", required=True, help="The running vLLM server, e.g. http://127.0.0.1:8000.")
@click.option("--steps", type=int, default=None, help="Trace exactly the next N engine steps.")
@click.option("--seconds", type=float, default=None, help="Trace the steps of the next S seconds.")
@click.option(
    "--dir",
    "record_dir",
    type=click.Path(file_okay=False),
    default=None,
    help="The server's XPU_PROFILER_DIR (default: read from the server process's environment).",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(path_type=Path),
    default=Path("xpu_profiler_out"),
    show_default=True,
    help="Output directory, or a file (report.html, ...) with the others beside it.",
)
@click.option("--format", "formats", default=None, help="Comma list of perfetto, json, csv, html.")
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
    type=click.Path(file_okay=False),
    default=None,
    help="--via vllm: the server's torch_profiler_dir (default: read from its command line).",
)
@click.option("--quiet", "-q", is_flag=True, help="No terminal summary.")
def record(url, steps, seconds, record_dir, output, formats, detail_level, timeout, via, trace_dir, quiet) -> None:
    """Trace a window of steps of a running `vllm serve` (started with XPU_PROFILER_DIR set,
    or with vLLM's --profiler-config) with torch.profiler, without restarting it, and
    write the report."""
    from ..live.record import record_from_cli

    try:
        code = record_from_cli(
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
    except XpuProfilerError as e:
        _fail(e)
    except OSError as e:
        _fail(_os_error(e))
    except KeyboardInterrupt:
        _interrupted("interrupted; the window was cancelled")
    sys.exit(code)


@main.command()
@click.argument("trace", type=click.Path(path_type=Path))
def validate(trace: Path) -> None:
    """Check a Chrome/Perfetto trace JSON against Perfetto's import rules."""
    from ..exporters.validate import validate_file

    try:
        problems = validate_file(trace)
    except XpuProfilerError as e:
        _fail(e)
    except OSError as e:
        _fail(_os_error(e))
    from ..core.fmt import plain

    if problems:
        for p in problems[:50]:
            click.echo(plain(p))
        if len(problems) > 50:
            click.echo(f"... and {len(problems) - 50} more")
        sys.exit(1)
    click.echo(f"{plain(str(trace))}: ok")


@main.command("view")
@click.argument("trace", type=click.Path(path_type=Path))
@click.option(
    "--port",
    type=int,
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


if __name__ == "__main__":  # pragma: no cover
    main()
