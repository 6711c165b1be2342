"""Command line: `xpu_profiler [live options]` profiles a vLLM run; the sub-commands (`analyze`, `diff`,
`record`, `validate`, `view`) are one module each."""

from __future__ import annotations

import atexit
import os
import sys
import threading

import click

from ..core.errors import XpuProfilerError
from ..core.version import __version__
from ..knowledge.devices import DEVICES
from . import analyze, common, diff_cmd, record_cmd, tools
from .common import Main, NonEmptyPath, Text, _fail, _interrupted, _os_error


def _version(ctx: click.Context) -> None:
    """``xpu_profiler X.Y.Z`` and whether the native (compiled) trace reader is in use."""
    from ..readers.kineto import native

    if native.in_use():
        reader = "yes"
    elif native.built():
        reader = f"no ({native.PURE_ENV} is set: the pure-Python reader)"
    else:
        reader = "no (not built at install: the pure-Python reader)"
    click.echo(f"xpu_profiler {__version__}\nnative reader: {reader}")
    ctx.exit()


@click.group(cls=Main, invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=lambda ctx, _param, value: _version(ctx) if value else None,
    help="Show the version and which trace reader is in use, and exit.",
)
@click.option(
    "--model",
    type=Text(),
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
@click.option("--prompts", type=NonEmptyPath(dir_okay=False), help='JSONL file of prompts ({"prompt": ...}).')
@click.option("--tensor-parallel-size", "-tp", type=int, default=1, show_default=True)
@click.option("--max-num-batched-tokens", type=int, default=None)
@click.option("--max-model-len", type=int, default=None)
@click.option("--dtype", default="auto", show_default=True)
@click.option("--load-format", default=None, help="vLLM load format (built-in models use 'dummy').")
@click.option("--enforce-eager/--no-enforce-eager", default=None)
@click.option("--engine-arg", multiple=True, metavar="KEY=VALUE", help="Extra vLLM engine argument (repeatable).")
@click.option("--device-spec", type=NonEmptyPath(dir_okay=False), help="TOML/JSON file overriding device specs.")
@click.option(
    "--findings-config",
    type=NonEmptyPath(dir_okay=False),
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
        import dataclasses

        from .. import findings
        from ..knowledge import devices
        from ..live.run import RunOptions, run_from_cli

        opts = dataclasses.replace(
            RunOptions.from_cli(options),
            findings=findings.load_config(options["findings_config"]) if options.get("findings_config") else None,
            specs=devices.load_spec_overrides(options["device_spec"]) if options.get("device_spec") else None,
        )
        code = run_from_cli(opts)
    except XpuProfilerError as e:
        _fail(e)
    except OSError as e:
        _fail(_os_error(e))
    except KeyboardInterrupt:
        _interrupted()
    sys.exit(code or 0)


for _command in (analyze.analyze, diff_cmd.diff_command, record_cmd.record, tools.validate, tools.view_command):
    main.add_command(_command)


def run() -> None:
    """The console script (and ``python -m xpu_profiler``): the command, then a command that
    only analyses (``common.offline_process``: ``analyze``, ``diff``) ends as an exit ends it
    (the atexit hooks run: pools, temporary files' finalizers; the standard streams flushed)
    but without the interpreter's teardown, which frees an analysis' objects one by one for
    nothing: ~60 ms of a 1M-event trace's 2.4 s, measured. A command that runs or records an
    engine (whose objects may clean up as they are freed), a thread still running (its end
    would be waited for) or a traceback: Python exits as usual."""
    try:
        main()
    except SystemExit as e:
        status = e.code
        if not isinstance(status, int):
            if status is not None:
                print(status, file=sys.stderr)
            status = 0 if status is None else 1
        run_exitfuncs = getattr(atexit, "_run_exitfuncs", None)
        if run_exitfuncs is None or not common.OFFLINE or threading.active_count() > 1:
            raise
        run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):  # (a reader that left, a closed stream: as at exit)
                pass
        os._exit(status)


if __name__ == "__main__":  # pragma: no cover
    run()
