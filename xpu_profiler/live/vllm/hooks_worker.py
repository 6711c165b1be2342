"""Worker hooks (each worker process): one record per executed step.

``execute_model()`` is wrapped to time the forward pass of the step the scheduler
tagged; when it returns None, the step's ``sample_tokens()`` call follows and is timed
into the same record. After the step the worker samples its memory and, while a
torch.profiler window is armed, closes the step's ``xpu_step#N`` range.

On its first recorded step a worker *adopts* its identity: its rank inside its engine,
its engine's data-parallel index and its global rank across engines (every row and
sample it records carries them), and, in file mode (``XPU_PROFILER_LEVEL=standard``),
the torch.profiler window to arm (``REC.env_torch``).
"""

from __future__ import annotations

from ...core.records import STEP_TAG
from . import compat, patching
from .recorder import REC, now
from .torch_window import TorchWindow
from .windows import WINDOWS


def adopt(worker) -> None:
    """Take this worker's ranks (and, in file mode, arm its torch.profiler window)."""
    REC.worker_ready = True
    REC.rank = compat.worker_rank(worker)
    dp, world, tp_size = compat.worker_place(worker)
    REC.dp_rank, REC.global_rank = dp, dp * world + REC.rank
    REC.place = {"dp": dp, "pp": REC.rank // tp_size, "tp": REC.rank % tp_size, "rank": REC.global_rank}
    if REC.env_torch is not None and REC.torch is None:
        REC.torch = TorchWindow(worker, *REC.env_torch)


def wrap_execute(orig):
    @patching.wrapper_of(orig)
    def wrapper(self, scheduler_output, *args, **kwargs):
        if not REC.active:
            return orig(self, scheduler_output, *args, **kwargs)
        if not REC.worker_ready:
            adopt(self)
        tokens = compat.so_total_tokens(scheduler_output)
        if tokens <= 0:
            # an empty step: the engine is cleaning up finished requests (often going idle)
            out = orig(self, scheduler_output, *args, **kwargs)
            t = now()
            try:
                WINDOWS.worker_idle(t)
            except Exception as e:  # never into vLLM; counted, reaches the profile's warnings
                REC.failed("profile window", e)
            REC.maybe_flush(t, idle=True)
            return out
        te = now()
        sid = getattr(scheduler_output, STEP_TAG, None)
        if sid is None:
            if REC.active:  # a recording engine tags every step: vLLM did not carry the tag here
                REC.failed("SchedulerOutput." + STEP_TAG, LookupError("the step id did not reach this worker"))
            sid = REC.local_step
        REC.local_step = sid + 1
        handle = None
        try:
            WINDOWS.worker_step(self, scheduler_output)  # a profile window starts or ends here
        except Exception as e:  # never into vLLM; counted, reaches the profile's warnings
            REC.failed("profile window", e)
        tw = REC.torch
        if tw is not None:
            try:
                handle = tw.open_step(sid)
            except Exception as e:  # never into vLLM; counted, reaches the profile's warnings
                REC.failed("torch.profiler window", e)
        t0 = now()
        if handle is not None and tw is not None:
            tw.marks.append((sid, t0))
        REC.hook_ns += t0 - te
        out = None
        try:
            out = orig(self, scheduler_output, *args, **kwargs)
        finally:
            t1 = now()
            rec = [sid, REC.rank, t0, t1, -1, -1, tokens, REC.dp_rank, REC.global_rank]
            REC.worker.append(rec)
            REC.last_worker = rec
            REC.open_range = handle
            if out is not None:  # no separate sample_tokens call follows
                end_step(t1)
            REC.hook_ns += now() - t1
        return out

    return wrapper


def wrap_sample(orig):
    @patching.wrapper_of(orig)
    def wrapper(self, *args, **kwargs):
        rec = REC.last_worker
        if not REC.active or rec is None or rec[4] >= 0:
            return orig(self, *args, **kwargs)
        t0 = now()
        try:
            return orig(self, *args, **kwargs)
        finally:
            t1 = now()
            rec[4], rec[5] = t0, t1
            end_step(t1)
            REC.hook_ns += now() - t1

    return wrapper


def end_step(t: int) -> None:
    """After a step's last call: close its range, sample memory, flush in file mode."""
    handle, REC.open_range = REC.open_range, None
    tw = REC.torch
    if tw is not None:
        try:
            tw.close_step(handle)
            WINDOWS.worker_step_end()
        except Exception as e:  # never into vLLM; counted, reaches the profile's warnings
            REC.failed("torch.profiler window", e)
    if REC.memory:
        try:
            REC.mem.device(REC.counters, t, REC.global_rank)
        except Exception as e:  # never into vLLM; counted, reaches the profile's warnings
            REC.failed("device memory sample", e)
        REC.mem.host(REC.counters, t, REC.global_rank, "worker")
    REC.maybe_flush(t)


def wrap_profile(orig):
    """vLLM's own profiler (``start_profile``) is about to start: ours gives way first."""

    @patching.wrapper_of(orig)
    def wrapper(self, is_start=True, *args, **kwargs):
        if is_start:
            try:
                WINDOWS.yield_to_vllm()
            except Exception as e:  # never into vLLM; counted, reaches the profile's warnings
                REC.failed("torch.profiler window", e)
        return orig(self, is_start, *args, **kwargs)

    return wrapper


def install(cls) -> dict[str, bool]:
    """Wrap ``execute_model`` / ``sample_tokens`` (and ``profile``) wherever ``cls`` and its
    bases define them; returns {symbol: a wrapper of ours is now what ``cls`` calls}."""
    patching.wrap_methods(cls, {compat.EXECUTE: wrap_execute, compat.SAMPLE: wrap_sample, compat.PROFILE: wrap_profile})
    return compat.hook_status(cls, compat.WORKER_HOOKS)
