"""`xpu_profiler diff BASE NEW`: what changed between two runs."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..core.errors import XpuProfilerError
from .common import NonEmptyPath, Percent, Text, _fail, _interrupted, _os_error, _wrote, offline_process


@click.command("diff")
@click.argument("base", type=NonEmptyPath(path_type=Path))
@click.argument("new", type=NonEmptyPath(path_type=Path))
@click.option(
    "--output",
    "-o",
    type=NonEmptyPath(path_type=Path),
    default=Path("xpu_profiler_diff"),
    show_default=True,
    help="Directory for diff.json and diff.html (or a .html/.json file name).",
)
@click.option(
    "--fail-on",
    "fail_on",
    type=Percent(),
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
    type=Text(),
    default="per_token_ns",
    show_default=True,
    help="Metric --fail-on looks at: per_token_ns, step_p50_ns, step_p99_ns (per phase), or "
    "output_tok_s, decode_tok_s, ttft_p50_ns, tpot_p50_ns, ...",
)
@click.option(
    "--findings-config", type=NonEmptyPath(path_type=Path), help="TOML file overriding the findings' thresholds."
)
@click.option("--quiet", "-q", is_flag=True, help="No terminal table.")
def diff_command(base, new, output, fail_on, fail_on_phase, fail_on_metric, findings_config, quiet) -> None:
    """Compare two runs (each a trace, directory, bundle or summary.json): step time per
    phase, throughput, latency, fused-op and kernel costs per token, findings."""
    offline_process()
    from .. import findings
    from ..core.atomic_write import OutputError, check_outputs, write_bytes
    from ..diff import compare, gate, load_input
    from ..diff.comparison import PHASE_METRICS
    from ..exporters.html.diff_page import write_diff
    from ..findings.checks_run import LEVELS_WITH_TORCH
    from ..readers.formats import with_units
    from ..summary.diff import encode_diff
    from ..terminal.diff import render
    from ..terminal.screen import screen_for

    written: dict[str, Path] = {}
    try:
        paths = _diff_paths(output)
        check_outputs(paths, with_units([base, new, findings_config]))  # (an input's files read with it too)
        fcfg = findings.load_config(findings_config) if findings_config else None
        b, n = load_input(base), load_input(new)
        findings.attach(b, fcfg)
        ref = b if b.run.detail_level == "basic" and n.run.detail_level in LEVELS_WITH_TORCH else None
        findings.attach(n, fcfg, reference=ref)
        report = compare(b, n, str(base), str(new))
        if fail_on is not None:
            report.gate = gate(report, fail_on, fail_on_phase, fail_on_metric)
            if report.gate.regression is None and report.gate.reason is None:
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
        click.echo(render(report, screen=screen_for(sys.stdout)))
        click.echo("")
    _wrote(written)
    sys.stdout.flush()
    sys.exit(1 if report.gate is not None and report.gate.failed else 0)


def _diff_paths(output: Path) -> dict[str, Path]:
    """diff.json and diff.html in a directory, or a named .json/.html file and the other one
    beside it under the same whole stem (``run.v2.json`` and ``run.v2.html``, as ``analyze``
    names its outputs)."""
    from ..core.atomic_write import OutputError, reason
    from ..core.fmt import plain

    if str(output) == "-":
        raise XpuProfilerError(
            "--output -: the outputs are files, none goes to standard output: name a directory or a file"
        )
    try:
        is_dir = output.is_dir()
    except OSError as e:  # a name too long, no access
        raise OutputError(output, reason(e)) from None
    suffix = output.suffix.lower()
    if suffix in (".html", ".htm", ".json") and not is_dir:
        stem = output.name[: -len(suffix)]  # (only the last ending: run.v2.json → run.v2)
        named = "json" if suffix == ".json" else "html"
        return {
            "json": output if named == "json" else output.with_name(stem + ".json"),
            "html": output if named == "html" else output.with_name(stem + ".html"),
        }
    if output.exists() and not is_dir:
        raise XpuProfilerError(f"{plain(str(output))}: exists and is not a directory")
    return {"json": output / "diff.json", "html": output / "diff.html"}
