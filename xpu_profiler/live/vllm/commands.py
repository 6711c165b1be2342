"""The control method the plugin adds to EngineCore and to WorkerWrapperBase.

The caller reaches it through vLLM's own RPC (``call_utility`` / ``collective_rpc``,
see ``xpu_profiler.live.control``) with a command and a JSON-ready argument:

- ``start`` {metrics, torch?}: install the hooks on the classes actually in use and
  check on the live objects that they took; answers ``missing`` (the symbols whose
  hook is not in place, empty when all are) and the vLLM version. Recording starts
  only when nothing is missing.
- ``collect`` {final?}: the records so far (one batch, see ``records``);
- ``stop`` {files_off?}: stop recording and hand over the rest;
- ``ping``: who answers, and whether it records.
"""

from __future__ import annotations

import os

from . import compat, hooks_scheduler, hooks_worker
from .recorder import REC, now, proc_name
from .torch_window import TorchWindow


def engine_control(core, cmd: str, arg=None):
    """On EngineCore (``call_utility``)."""
    cfg = dict(arg or {})
    if cmd == "start":
        REC.configure(cfg.get("metrics"))
        sched = compat.engine_scheduler(core)
        if sched is None:
            missing = ["EngineCore.scheduler"]
        else:
            hooks_scheduler.install(type(sched))
            missing = compat.missing_hooks(sched, compat.SCHEDULER_HOOKS) + compat.tags_lost()
            hooks_scheduler.adopt(sched)
        REC.pending.clear()
        if not missing:
            REC.active = True
        return {**_whoami(), "missing": missing, "vllm": compat.vllm_version(), "next_step": REC.next_step}
    return _common(cmd, cfg)


def worker_control(wrapper, cmd: str, arg=None):
    """On WorkerWrapperBase (``collective_rpc``)."""
    cfg = dict(arg or {})
    worker = compat.wrapped_worker(wrapper)
    if cmd == "start":
        REC.configure(cfg.get("metrics"))
        hooks_worker.install(type(worker))
        missing = compat.missing_hooks(worker, compat.WORKER_HOOKS)
        hooks_worker.adopt(worker)
        tcfg = cfg.get("torch")
        if tcfg:
            REC.torch = TorchWindow(
                worker, tcfg["dir"], int(tcfg.get("first", 0)), int(tcfg.get("count", 0)), tcfg.get("level", "standard")
            )
        if not missing:
            REC.active = True
            if REC.memory:
                REC.mem.device(REC.counters, now(), REC.global_rank)
        return {**_whoami(), "missing": missing, "vllm": compat.vllm_version(), "rank": REC.global_rank}
    if cmd == "stop" and REC.torch is not None:
        REC.torch.stop()
        data = _common(cmd, cfg)
        REC.torch = None
        return data
    return _common(cmd, cfg)


def _whoami() -> dict:
    return {"pid": os.getpid(), "process": proc_name()}


def _common(cmd: str, cfg: dict):
    if cmd == "collect":
        return REC.take(final=bool(cfg.get("final")))
    if cmd == "stop":
        REC.active = False
        if cfg.get("files_off"):
            REC.file_dir = None  # the caller collects everything now; write no more files
        return REC.take(final=True)
    if cmd == "ping":
        return {**_whoami(), "active": REC.active, "rank": REC.global_rank}
    raise ValueError(f"unknown xpu_profiler command {cmd!r}")


def attach() -> None:
    """Add the control method to EngineCore and WorkerWrapperBase where they are imported."""
    compat.attach_control(engine_control, worker_control)
