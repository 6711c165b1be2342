"""vLLM general plugin: step hooks in every vLLM process.

vLLM calls ``register()`` (entry point ``vllm.general_plugins``) in the front-end,
in each EngineCore process and in each worker. Without ``XPU_PROFILER_DIR`` in the
environment it only attaches one control method, ``xpu_profiler_control``, to
``EngineCore`` and to ``WorkerWrapperBase`` (nothing is wrapped, nothing is
recorded), so that a profiler attached later to an existing engine
(``xpu_profiler.profile(llm)``) can switch the hooks on through vLLM's own RPC:
``engine_core.call_utility("xpu_profiler_control", cmd, arg)`` and
``llm.collective_rpc("xpu_profiler_control", args=(cmd, arg))``.

With ``XPU_PROFILER_DIR`` set (``vllm serve``, scripts) the hooks are installed at
import time and record from the first step; every process appends its records to
``$XPU_PROFILER_DIR/<process>-<pid>.records.jsonl`` (flushed every second and at
exit). ``XPU_PROFILER_LEVEL=standard`` additionally runs torch.profiler in the
workers over the steps given by ``XPU_PROFILER_STEPS=first:count`` (default 4:16).

Records are fixed-shape tuples of numbers appended to lists; they are formatted
only when collected. A hook never raises into vLLM.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import threading
import time

ENV_DIR = "XPU_PROFILER_DIR"
ENV_LEVEL = "XPU_PROFILER_LEVEL"
ENV_STEPS = "XPU_PROFILER_STEPS"
#: run directory: each worker's own stdout/stderr go to <dir>/xpu_logs/rank_N.log
#: (Kunlun's [XPURT_PROF] kernel lines are printed there by the runtime)
ENV_DEVICE_LOGS = "XPU_PROFILER_DEVICE_LOGS"

#: host RSS is sampled at most this often per process (ns)
RSS_PERIOD_NS = 20_000_000
FLUSH_PERIOD_NS = 1_000_000_000

# Scheduler step record: one per engine step (scheduler output), made in the EngineCore.
SCHED_FIELDS = ("step", "t_sched", "t_sched_end", "t_end", "prefill_tokens", "decode_tokens",
                "prefill_reqs", "decode_reqs", "running", "waiting", "kv_usage", "dp_rank", "first_tokens")
# Worker record: one per execute_model call, made in each worker.
WORKER_FIELDS = ("step", "rank", "t_exec", "t_exec_end", "t_sample", "t_sample_end", "tokens")
# Request record: (request id, arrival ns, first token ns, finish ns, prompt len, output len)
REQUEST_FIELDS = ("req", "arrival", "first_token", "finish", "prompt_len", "output_len")
# Counter sample: (rank, name, t ns, value)
COUNTER_FIELDS = ("rank", "name", "t", "value")

# Module classes of vLLM layers that get a profiler range (module forward hooks).
MODULE_CLASSES = (
    "RMSNorm", "GemmaRMSNorm", "LayerNorm", "SiluAndMul", "GeluAndMul", "MulAndSilu", "FatreluAndMul",
    "RotaryEmbedding", "Llama3RotaryEmbedding", "LinearScalingRotaryEmbedding", "YaRNScalingRotaryEmbedding",
    "DynamicNTKScalingRotaryEmbedding", "MRotaryEmbedding", "DeepseekScalingRotaryEmbedding",
    "FusedMoE", "SharedFusedMoE", "MoERunner", "Attention", "MLAAttention", "MultiHeadAttention",
    "QKVParallelLinear", "MergedColumnParallelLinear", "RowParallelLinear", "ColumnParallelLinear",
    "ReplicatedLinear", "VocabParallelEmbedding", "ParallelLMHead", "LogitsProcessor", "Sampler",
)


# Range labels for classes whose role has another name in the fused-op taxonomy.
MODULE_ALIASES = {"MoERunner": "FusedMoE"}


class _State:
    def __init__(self) -> None:
        self.reset()
        self.installed_sched: set = set()
        self.installed_worker: set = set()
        self.file_dir: str | None = None
        self.last_flush = 0
        self.lock = threading.Lock()

    def reset(self) -> None:
        self.active = False
        self.sched: list[tuple] = []
        self.worker: list[list] = []
        self.counters: list[tuple] = []
        self.requests: dict[str, list] = {}
        self.done_requests: list[tuple] = []
        self.pending: dict[int, tuple] = {}
        self.next_step = 0
        self.local_step = 0
        self.last_worker = None
        self.last_rss: dict = {}
        self.rank = 0
        self.torch = None  # _TorchWindow while torch.profiler is armed/running
        self.self_ns = 0   # time spent inside the hooks themselves (their overhead)
        self.cuda_ok = None
        self.metrics = ("execution_time", "memory_usage", "throughput")


S = _State()


def _now() -> int:
    return time.time_ns()


def _proc_name() -> str:
    try:
        import multiprocessing

        name = multiprocessing.current_process().name
    except Exception:
        name = "proc"
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name) or "proc"


# ---------------------------------------------------------------------------------------
# memory sampling (host RSS of this process, device allocator counters in workers)
# ---------------------------------------------------------------------------------------

_PROC = None


def _rss() -> int:
    global _PROC
    try:
        if _PROC is None:
            import psutil

            _PROC = psutil.Process()
        return int(_PROC.memory_info().rss)
    except Exception:
        return -1


def _sample_host(t: int, rank: int, role: str) -> None:
    if "memory_usage" not in S.metrics or t - S.last_rss.get(role, 0) < RSS_PERIOD_NS:
        return
    S.last_rss[role] = t
    v = _rss()
    if v >= 0:
        S.counters.append((rank, f"host_rss_bytes.{role}", t, float(v)))


def _sample_device(t: int, rank: int) -> None:
    if "memory_usage" not in S.metrics:
        return
    if S.cuda_ok is False:
        return
    try:
        import torch

        if S.cuda_ok is None:
            if not torch.cuda.is_available():
                S.cuda_ok = False
                return
            if not torch.cuda.is_initialized():
                return  # not yet: ask again next step
            S.cuda_ok = True
        # allocator counters: host-side bookkeeping, no device sync
        S.counters.append((rank, "device_allocated_bytes", t, float(torch.cuda.memory_allocated())))
        S.counters.append((rank, "device_reserved_bytes", t, float(torch.cuda.memory_reserved())))
        S.counters.append((rank, "device_peak_allocated_bytes", t, float(torch.cuda.max_memory_allocated())))
    except Exception:
        pass


# ---------------------------------------------------------------------------------------
# scheduler hooks (EngineCore process)
# ---------------------------------------------------------------------------------------

def _split_tokens(sched, so) -> tuple[int, int, int, int, int]:
    """Prefill / decode tokens and requests of one scheduler output.

    A request's tokens up to its prompt length are prefill, the rest decode. The
    scheduler has already advanced ``num_computed_tokens`` by the scheduled count.
    """
    prefill = decode = p_reqs = d_reqs = done = 0
    reqs = sched.requests
    for req_id, n in so.num_scheduled_tokens.items():
        req = reqs.get(req_id)
        if req is None:
            decode += n
            d_reqs += 1
            continue
        before = req.num_computed_tokens - n
        p = req.num_prompt_tokens - before
        p = 0 if p < 0 else (n if p > n else p)
        prefill += p
        decode += n - p
        if p:
            p_reqs += 1
            if before + p >= req.num_prompt_tokens:
                done += 1  # prefill completes: this step samples the first token
        else:
            d_reqs += 1
        if "throughput" in S.metrics and req_id not in S.requests:
            arr = getattr(req, "arrival_time", None)
            arr_ns = int(arr * 1e9) if arr else -1
            S.requests[req_id] = [req_id, arr_ns, -1, -1, int(req.num_prompt_tokens), 0]
    return prefill, decode, p_reqs, d_reqs, done


def _counts(sched) -> tuple[int, int]:
    try:
        return len(sched.running), len(sched.waiting)
    except Exception:
        return -1, -1


def _kv_usage(sched) -> float:
    try:
        return float(sched.kv_cache_manager.usage)
    except Exception:
        return float("nan")


def _wrap_schedule(orig):
    def schedule(self, *args, **kwargs):
        if not S.active:
            return orig(self, *args, **kwargs)
        t0 = _now()
        so = orig(self, *args, **kwargs)
        t1 = _now()
        try:
            if so.total_num_scheduled_tokens > 0:
                sid = S.next_step
                S.next_step += 1
                pt, dt, pr, dr, done = _split_tokens(self, so)
                run, wait = _counts(self)
                try:
                    so.xpu_step = sid
                except Exception:
                    pass
                S.pending[id(so)] = (sid, t0, t1, pt, dt, pr, dr, run, wait, done, _kv_usage(self))
        except Exception:
            pass
        S.self_ns += _now() - t1
        return so

    schedule._xpu_profiler = True
    return schedule


def _wrap_update(orig):
    def update_from_output(self, scheduler_output, *args, **kwargs):
        out = orig(self, scheduler_output, *args, **kwargs)
        if not S.active:
            return out
        t = _now()
        try:
            p = S.pending.pop(id(scheduler_output), None)
            if p is not None:
                sid, t0, t1, pt, dt, pr, dr, run, wait, done, kv = p
                # KV usage as the step ran it (after the scheduler allocated its slots)
                S.sched.append((sid, t0, t1, t, pt, dt, pr, dr, run, wait, kv,
                                int(getattr(self, "_xpu_dp_rank", 0)), done))
                if "memory_usage" in S.metrics:
                    S.counters.append((0, "kv_cache_usage", t1, kv))
                    S.counters.append((0, "kv_cache_usage", t, _kv_usage(self)))
            if "throughput" in S.metrics and out:
                _track_requests(out, t)
            _sample_host(t, 0, "engine_core")
            _maybe_flush(t, idle=S.file_dir is not None and not self.has_requests())
        except Exception:
            pass
        S.self_ns += _now() - t
        return out

    update_from_output._xpu_profiler = True
    return update_from_output


def _track_requests(outputs, t: int) -> None:
    reqs = S.requests
    for eco in outputs.values():
        for o in getattr(eco, "outputs", ()) or ():
            r = reqs.get(o.request_id)
            if r is None:
                continue
            n = len(o.new_token_ids or ())
            if n and r[2] < 0:
                r[2] = t
            r[5] += n
            if o.finish_reason is not None:
                r[3] = t
                S.done_requests.append(tuple(reqs.pop(o.request_id)))


def install_scheduler_hooks(cls=None) -> bool:
    """Wrap ``schedule`` and ``update_from_output`` of the scheduler class (idempotent)."""
    try:
        if cls is None:
            from vllm.v1.core.sched.scheduler import Scheduler as cls  # noqa: N813
        for klass in [c for c in cls.__mro__ if "schedule" in c.__dict__ or "update_from_output" in c.__dict__]:
            if klass in S.installed_sched:
                continue
            if "schedule" in klass.__dict__ and not getattr(klass.__dict__["schedule"], "_xpu_profiler", False):
                klass.schedule = _wrap_schedule(klass.__dict__["schedule"])
            if "update_from_output" in klass.__dict__ and \
                    not getattr(klass.__dict__["update_from_output"], "_xpu_profiler", False):
                klass.update_from_output = _wrap_update(klass.__dict__["update_from_output"])
            S.installed_sched.add(klass)
        return True
    except Exception:
        return False


# ---------------------------------------------------------------------------------------
# worker hooks
# ---------------------------------------------------------------------------------------

class _TorchWindow:
    """torch.profiler inside a worker over a window of steps, with module ranges."""

    def __init__(self, worker, out_dir: str, first: int, count: int, level: str):
        self.worker = worker
        self.out_dir = out_dir
        self.first = first          # executed steps to skip after arming
        self.count = count          # steps to profile (0 = until stopped)
        self.level = level
        self.seen = 0
        self.done = 0
        self.prof = None
        self.hooks: list = []
        self.files: list[str] = []
        self.marks: list[tuple] = []   # (step, t_ns of our range start) for clock alignment
        self.finished = False
        self.stopped: list = []        # stopped profilers whose trace is not written yet

    def before_step(self) -> None:
        if self.finished:
            return
        if self.prof is None and self.seen >= self.first:
            self._start()
        self.seen += 1

    def after_step(self) -> None:
        if self.prof is not None:
            self.done += 1
            if self.count and self.done >= self.count:
                self._stop()

    def _start(self) -> None:
        import torch
        from torch.profiler import ProfilerActivity, profile

        acts = [ProfilerActivity.CPU]
        try:
            if torch.cuda.is_available():
                acts.append(ProfilerActivity.CUDA)
        except Exception:
            pass
        comp = self.level == "comprehensive"
        self.prof = profile(activities=acts, record_shapes=comp, profile_memory=comp,
                            with_flops=comp, with_stack=False)
        self.prof.__enter__()
        self._add_module_hooks()

    def _stop(self) -> None:
        if self.prof is None:
            return
        prof, self.prof = self.prof, None
        self._remove_module_hooks()
        try:
            prof.__exit__(None, None, None)
            self.stopped.append(prof)
        except Exception as e:  # keep the engine running whatever the profiler does
            sys.stderr.write(f"xpu_profiler: torch profiler stop failed: {e}\n")
        self.finished = True

    def export(self) -> None:
        """Write the traces of stopped profilers (outside any engine step)."""
        while self.stopped:
            prof = self.stopped.pop(0)
            try:
                os.makedirs(self.out_dir, exist_ok=True)
                path = os.path.join(self.out_dir, f"rank{S.rank}.{os.getpid()}.{_now()}.pt.trace.json")
                prof.export_chrome_trace(path)
                self.files.append(path)
            except Exception as e:
                sys.stderr.write(f"xpu_profiler: torch profiler export failed: {e}\n")

    def _model(self):
        w = self.worker
        for path in (("model_runner", "model"), ("model_runner", "get_model")):
            obj = w
            try:
                for a in path:
                    obj = getattr(obj, a)
                if callable(obj) and not hasattr(obj, "named_modules"):
                    obj = obj()
                if hasattr(obj, "named_modules"):
                    return obj
            except Exception:
                continue
        return None

    def _add_module_hooks(self) -> None:
        model = self._model()
        if model is None:
            return
        import torch

        enter = torch.ops.profiler._record_function_enter_new
        exit_ = torch.ops.profiler._record_function_exit
        wanted = set(MODULE_CLASSES)

        for _, mod in model.named_modules():
            cname = type(mod).__name__
            if cname not in wanted and not any(cname.endswith(w) for w in ("RotaryEmbedding", "RMSNorm")):
                continue
            label = "xpu_module:" + MODULE_ALIASES.get(cname, cname)
            stack: list = []

            def pre(m, args, _label=label, _stack=stack):
                _stack.append(enter(_label, None))

            def post(m, args, out, _stack=stack):
                if _stack:
                    exit_(_stack.pop())

            self.hooks.append(mod.register_forward_pre_hook(pre))
            self.hooks.append(mod.register_forward_hook(post))

    def _remove_module_hooks(self) -> None:
        for h in self.hooks:
            try:
                h.remove()
            except Exception:
                pass
        self.hooks = []


def _step_range_name(so, sid: int) -> str:
    return f"xpu_step#{sid}"


def _wrap_execute(orig):
    def execute_model(self, scheduler_output, *args, **kwargs):
        if not S.active:
            return orig(self, scheduler_output, *args, **kwargs)
        tw = S.torch
        tokens = getattr(scheduler_output, "total_num_scheduled_tokens", 0)
        if tokens <= 0:
            # an empty step: the engine is cleaning up finished requests (often going idle)
            out = orig(self, scheduler_output, *args, **kwargs)
            if S.file_dir is not None:
                _maybe_flush(_now(), idle=True)
            return out
        te = _now()
        sid = getattr(scheduler_output, "xpu_step", None)
        if sid is None:
            sid = S.local_step
        S.local_step = sid + 1
        handle = None
        if tw is not None:
            try:
                tw.before_step()
                if tw.prof is not None:
                    import torch

                    handle = torch.ops.profiler._record_function_enter_new(_step_range_name(scheduler_output, sid), None)
            except Exception:
                handle = None
        t0 = _now()
        if handle is not None:
            tw.marks.append((sid, t0))
        S.self_ns += t0 - te
        out = None
        try:
            out = orig(self, scheduler_output, *args, **kwargs)
        finally:
            t1 = _now()
            rec = [sid, S.rank, t0, t1, -1, -1, tokens]
            S.worker.append(rec)
            S.last_worker = rec
            if handle is not None:
                S.open_handle = handle
            else:
                S.open_handle = None
            if out is not None:  # no separate sample_tokens call follows
                _end_worker_step(t1)
            S.self_ns += _now() - t1
        return out

    execute_model._xpu_profiler = True
    return execute_model


def _end_worker_step(t: int) -> None:
    h = getattr(S, "open_handle", None)
    S.open_handle = None
    tw = S.torch
    if h is not None:
        try:
            import torch

            torch.ops.profiler._record_function_exit(h)
        except Exception:
            pass
    if tw is not None:
        try:
            tw.after_step()
        except Exception:
            pass
    _sample_device(t, S.rank)
    _sample_host(t, S.rank, "worker")
    _maybe_flush(t)


def _wrap_sample(orig):
    def sample_tokens(self, *args, **kwargs):
        if not S.active or S.last_worker is None or S.last_worker[4] >= 0:
            return orig(self, *args, **kwargs)
        rec = S.last_worker
        t0 = _now()
        try:
            return orig(self, *args, **kwargs)
        finally:
            t1 = _now()
            rec[4], rec[5] = t0, t1
            _end_worker_step(t1)
            S.self_ns += _now() - t1

    sample_tokens._xpu_profiler = True
    return sample_tokens


def install_worker_hooks(cls=None) -> bool:
    """Wrap ``execute_model`` / ``sample_tokens`` of the worker class and its bases (idempotent)."""
    try:
        if cls is None:
            from vllm.v1.worker.gpu_worker import Worker as cls  # noqa: N813
        for klass in cls.__mro__:
            if klass in S.installed_worker or klass is object:
                continue
            d = klass.__dict__
            if "execute_model" in d and not getattr(d["execute_model"], "_xpu_profiler", False):
                klass.execute_model = _wrap_execute(d["execute_model"])
            if "sample_tokens" in d and not getattr(d["sample_tokens"], "_xpu_profiler", False):
                klass.sample_tokens = _wrap_sample(d["sample_tokens"])
            S.installed_worker.add(klass)
        return True
    except Exception:
        return False


# ---------------------------------------------------------------------------------------
# collection / control
# ---------------------------------------------------------------------------------------

def _take(final: bool = False) -> dict:
    """Everything recorded so far in this process, as plain lists (and clear it)."""
    with S.lock:
        out = {
            "pid": os.getpid(),
            "process": _proc_name(),
            "sched": S.sched,
            "worker": S.worker,
            "counters": S.counters,
            "requests": S.done_requests + ([tuple(r) for r in S.requests.values()] if final else []),
            "hook_ns": S.self_ns,
            "role": "worker" if S.worker else ("engine" if S.sched else ""),
        }
        S.self_ns = 0
        if S.torch is not None:
            S.torch.export()
            if S.torch.files:  # the marks travel with the trace they align (not with a periodic flush)
                out["torch_files"] = list(S.torch.files)
                out["torch_marks"] = list(S.torch.marks)
                S.torch.files = []
                S.torch.marks = []
        S.sched, S.worker, S.counters, S.done_requests = [], [], [], []
        if final:
            S.requests = {}
        return out


def _maybe_flush(t: int, idle: bool = False) -> None:
    """File mode: flush now when the engine went idle, else leave it to the flusher thread."""
    if S.file_dir is None:
        return
    if getattr(S, "flusher_pid", None) != os.getpid():
        S.flusher_pid = os.getpid()  # (re)start after a fork: threads do not survive it
        threading.Thread(target=_flusher, name="xpu_profiler-flush", daemon=True).start()
    if idle or t - S.last_flush >= FLUSH_PERIOD_NS:
        S.last_flush = t
        flush_to_file()


def _flusher() -> None:
    """Writes the records every second, so that a process killed at shutdown loses at most that."""
    me = os.getpid()
    while S.flusher_pid == me:
        time.sleep(FLUSH_PERIOD_NS / 1e9)
        if S.worker or S.sched or S.counters or S.done_requests:
            S.last_flush = _now()
            flush_to_file()


_FLUSH_LOCK = threading.Lock()


def _after_fork() -> None:
    global _FLUSH_LOCK
    _FLUSH_LOCK = threading.Lock()
    S.lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def flush_to_file(final: bool = False) -> None:
    if S.file_dir is None:
        return
    with _FLUSH_LOCK:
        _flush(final)


def _flush(final: bool) -> None:
    try:
        data = _take(final=final)
        if not (data["sched"] or data["worker"] or data["counters"] or data["requests"]
                or data.get("torch_files")):
            return
        os.makedirs(S.file_dir, exist_ok=True)
        path = os.path.join(S.file_dir, f"{data['process']}-{data['pid']}.records.jsonl")
        with open(path, "a") as f:
            f.write(json.dumps(data, allow_nan=True) + "\n")
    except Exception:
        pass


def _config(arg) -> dict:
    return dict(arg or {})


def engine_control(self, cmd: str, arg=None):
    """Control entry on EngineCore (called through ``call_utility``)."""
    cfg = _config(arg)
    if cmd == "start":
        S.metrics = tuple(cfg.get("metrics") or S.metrics)
        sched = getattr(self, "scheduler", None)
        ok = install_scheduler_hooks(type(sched) if sched is not None else None)
        try:
            dp = int(self.vllm_config.parallel_config.data_parallel_rank)
            if sched is not None:
                sched._xpu_dp_rank = dp
        except Exception:
            pass
        S.pending.clear()
        S.active = True
        return {"ok": ok, "pid": os.getpid(), "process": _proc_name(), "next_step": S.next_step}
    if cmd == "collect":
        return _take(final=bool(cfg.get("final")))
    if cmd == "stop":
        S.active = False
        if cfg.get("files_off"):
            S.file_dir = None  # the caller collects everything now; write no more files
        return _take(final=True)
    if cmd == "ping":
        return {"pid": os.getpid(), "process": _proc_name(), "active": S.active}
    raise ValueError(f"unknown xpu_profiler command {cmd!r}")


def worker_control(self, cmd: str, arg=None):
    """Control entry on WorkerWrapperBase (called through ``collective_rpc``)."""
    cfg = _config(arg)
    worker = getattr(self, "worker", self)
    if cmd == "start":
        S.metrics = tuple(cfg.get("metrics") or S.metrics)
        ok = install_worker_hooks(type(worker))
        try:
            S.rank = int(getattr(worker, "rank", 0) or 0)
        except Exception:
            S.rank = 0
        tcfg = cfg.get("torch")
        if tcfg:
            S.torch = _TorchWindow(worker, tcfg["dir"], int(tcfg.get("first", 0)), int(tcfg.get("count", 0)),
                                   tcfg.get("level", "standard"))
        S.active = True
        _sample_device(_now(), S.rank)
        return {"ok": ok, "pid": os.getpid(), "process": _proc_name(), "rank": S.rank}
    if cmd == "collect":
        return _take(final=bool(cfg.get("final")))
    if cmd == "stop":
        S.active = False
        if cfg.get("files_off"):
            S.file_dir = None
        if S.torch is not None:
            S.torch._stop()
        data = _take(final=True)
        S.torch = None
        return data
    if cmd == "ping":
        return {"pid": os.getpid(), "process": _proc_name(), "active": S.active, "rank": S.rank}
    raise ValueError(f"unknown xpu_profiler command {cmd!r}")


def _attach_control_methods() -> None:
    mods = sys.modules
    core = mods.get("vllm.v1.engine.core")
    if core is not None and hasattr(core, "EngineCore") and not hasattr(core.EngineCore, "xpu_profiler_control"):
        core.EngineCore.xpu_profiler_control = engine_control
    wb = mods.get("vllm.v1.worker.worker_base")
    if wb is not None and hasattr(wb, "WorkerWrapperBase") and \
            not hasattr(wb.WorkerWrapperBase, "xpu_profiler_control"):
        wb.WorkerWrapperBase.xpu_profiler_control = worker_control


# ---------------------------------------------------------------------------------------
# env-driven mode (vllm serve): hooks from import time on
# ---------------------------------------------------------------------------------------

CONTROL_TARGETS = {
    "vllm.v1.engine.core": lambda m: _attach_control_methods(),
    "vllm.v1.worker.worker_base": lambda m: _attach_control_methods(),
}
HOOK_TARGETS = {
    "vllm.v1.core.sched.scheduler": lambda m: install_scheduler_hooks(m.Scheduler),
    "vllm.v1.worker.gpu_worker": lambda m: install_worker_hooks(m.Worker),
    **CONTROL_TARGETS,
}


class _PostImportHook:
    """Patch a class the moment its module is imported (or now, if it already is).

    Needed because vLLM loads plugins once per process: a forked child (EngineCore,
    workers) inherits "already loaded" and never calls ``register()`` itself."""

    def __init__(self, targets: dict):
        self.TARGETS = {name: list(fns) for name, fns in targets.items()}  # module → patches

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in self.TARGETS:
            return None
        import importlib.util

        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        orig_exec = loader.exec_module
        fns = self.TARGETS[fullname]

        def exec_module(module):
            orig_exec(module)
            for fn in fns:
                try:
                    fn(module)
                except Exception:
                    pass

        loader.exec_module = exec_module
        return spec


def _env_start() -> None:
    d = os.environ.get(ENV_DIR)
    S.file_dir = os.path.abspath(d)
    level = os.environ.get(ENV_LEVEL, "basic")
    _install_import_hook(HOOK_TARGETS)
    S.active = True
    if level in ("standard", "comprehensive"):
        first, _, count = os.environ.get(ENV_STEPS, "4:16").partition(":")
        S.env_torch = (os.path.join(S.file_dir, "torch"), int(first or 0), int(count or 16), level)
    atexit.register(flush_to_file, True)
    try:  # multiprocessing children skip atexit when forked; Finalize runs there too
        from multiprocessing import util

        util.Finalize(None, flush_to_file, args=(True,), exitpriority=100)
    except Exception:
        pass


def _install_import_hook(targets: dict) -> None:
    for name, fn in targets.items():
        if name in sys.modules:
            try:
                fn(sys.modules[name])
            except Exception:
                pass
    hook = next((h for h in sys.meta_path if isinstance(h, _PostImportHook)), None)
    if hook is None:
        hook = _PostImportHook({})
        sys.meta_path.insert(0, hook)
    for name, fn in targets.items():  # one hook, several patches per module
        fns = hook.TARGETS.setdefault(name, [])
        if fn not in fns:
            fns.append(fn)


def _env_torch_for(worker) -> None:
    cfg = getattr(S, "env_torch", None)
    if cfg is not None and S.torch is None:
        S.torch = _TorchWindow(worker, *cfg)


_REGISTERED = False
_CAPTURE = None  # the worker's device-log capture handle, if any


def _wrap_init_device(orig):
    """Redirect the worker's fds into its rank's log before the device (runtime) starts."""
    def init_device(self, *args, **kwargs):
        global _CAPTURE
        run_dir = os.environ.get(ENV_DEVICE_LOGS)
        if run_dir and _CAPTURE is None:
            try:
                from .collectors.xpurt_capture import start_capture

                _CAPTURE = start_capture(run_dir, rank=int(getattr(self, "rank", 0) or 0),
                                         local_rank=int(getattr(self, "local_rank", 0) or 0))
                atexit.register(stop_device_log_capture)
            except Exception:
                _CAPTURE = None
        return orig(self, *args, **kwargs)

    init_device._xpu_profiler = True
    return init_device


def install_device_log_capture(cls) -> bool:
    """Wrap ``init_device`` of the worker class and its bases (idempotent)."""
    try:
        for klass in cls.__mro__:
            d = klass.__dict__
            if "init_device" in d and not getattr(d["init_device"], "_xpu_profiler", False):
                klass.init_device = _wrap_init_device(d["init_device"])
        return True
    except Exception:
        return False


def stop_device_log_capture():
    """Give this process its fds back (in-process engines share the CLI's terminal)."""
    global _CAPTURE
    handle, _CAPTURE = _CAPTURE, None
    if handle is not None:
        from .collectors.xpurt_capture import stop_capture

        return stop_capture(handle)
    return None


DEVICE_LOG_TARGETS = {
    "vllm.v1.worker.gpu_worker": lambda m: install_device_log_capture(m.Worker),
    "vllm.v1.worker.cpu_worker": lambda m: install_device_log_capture(m.CPUWorker),
}


def register() -> None:
    """Entry point called by vLLM in every process; cheap and idempotent."""
    global _REGISTERED
    try:
        if os.environ.get(ENV_DEVICE_LOGS):
            _install_import_hook(DEVICE_LOG_TARGETS)
        if os.environ.get(ENV_DIR) and not _REGISTERED:
            _install_env_worker_init()
            _env_start()
        else:
            _install_import_hook(CONTROL_TARGETS)
        _REGISTERED = True
    except Exception:
        pass


def _install_env_worker_init() -> None:
    """In env mode a worker learns its rank (and arms torch.profiler) on its first step."""
    orig = _wrap_execute

    def first_step_hook(orig_exec):
        wrapped = orig(orig_exec)

        def execute_model(self, scheduler_output, *args, **kwargs):
            if not getattr(S, "env_worker_ready", False):
                S.env_worker_ready = True
                try:
                    S.rank = int(getattr(self, "rank", 0) or 0)
                except Exception:
                    pass
                _env_torch_for(self)
            return wrapped(self, scheduler_output, *args, **kwargs)

        execute_model._xpu_profiler = True
        return execute_model

    globals()["_wrap_execute_env"] = first_step_hook
    # install_worker_hooks uses _wrap_execute; in env mode swap in the variant that
    # initialises the worker state on its first call.
    globals()["_wrap_execute"] = first_step_hook
