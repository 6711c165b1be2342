"""vLLM general plugin (entry point ``vllm.general_plugins``): ``register()`` runs in the
front-end, in each EngineCore process and in each worker.

*Control mode* (default): it only attaches the control method to ``EngineCore`` and
``WorkerWrapperBase`` when their modules are imported; nothing is wrapped, nothing is
recorded until a profiler attached to the engine (``xpu_profiler.profile(llm)``)
sends ``start`` through vLLM's RPC (see ``commands``).

*File mode* (``XPU_PROFILER_DIR`` set: ``vllm serve``, scripts, the live command): the
hooks install at import time and record from the first step; every process appends
its batches to ``$XPU_PROFILER_DIR/<process>-<pid>.records.jsonl`` (every second, when
the engine goes idle, and at exit). ``XPU_PROFILER_LEVEL=standard`` also runs
torch.profiler in the workers over the steps ``XPU_PROFILER_STEPS=first:count``, and
``xpu_profiler record`` asks the running engine for more windows (see ``windows``).

With ``XPU_PROFILER_DEVICE_LOGS`` set, each worker's own output goes to its rank's log
(see ``hooks_init_device``). ``register()`` is cheap and idempotent.
"""

from __future__ import annotations

import atexit
import os
import sys
import time

from ...core.records import ENV_DEVICE_LOGS, ENV_DIR, ENV_LEVEL, ENV_RUN, ENV_STEPS
from . import commands, compat, hooks_init_device, hooks_scheduler, hooks_worker, patching
from .recorder import REC

DEFAULT_ENV_STEPS = (4, 16)


def register() -> None:
    """Entry point called by vLLM in every process. vLLM does not guard the call: a failure
    here is said in one line on stderr (and counted), never raised into vLLM."""
    try:
        _register()
    except Exception as e:
        REC.failed("register", e)
        sys.stderr.write(
            f"xpu_profiler: the vLLM plugin could not register in this process "
            f"({type(e).__name__}: {e}); nothing is profiled here\n"
        )


def _register() -> None:
    if os.environ.get(ENV_DEVICE_LOGS):
        patching.on_import(INIT_DEVICE_PATCHES)
    patching.on_import({mod: _attach_control for mod in compat.CONTROL_MODULES})
    if os.environ.get(ENV_DIR) and REC.file_dir is None:
        error, _ = compat.release_check()
        if error:  # a release the hooks cannot hold: said once per process, the server runs on
            sys.stderr.write(f"xpu_profiler: {error}; nothing is recorded\n")
            return
        start_file_mode(os.environ[ENV_DIR], os.environ.get(ENV_LEVEL, "basic"), os.environ.get(ENV_STEPS))


def start_file_mode(directory: str, level: str, steps: str | None) -> None:
    REC.file_dir = os.path.abspath(directory)
    # the server lifetime: the first process of a server names it, the processes it starts inherit it
    REC.run_id = os.environ.setdefault(ENV_RUN, f"{os.getpid()}-{time.time_ns()}")
    if level in ("standard", "comprehensive"):
        first, count = parse_steps(steps)
        REC.env_torch = (os.path.join(REC.file_dir, "torch"), first, count, level)
    REC.active = True
    patching.on_import({compat.SCHEDULER_CLASS[0]: _patch_scheduler, compat.WORKER_CLASS[0]: _patch_worker})
    atexit.register(REC.flush_at_exit)
    # multiprocessing children skip atexit when they end through os._exit; Finalize runs there too,
    # while the exception that ends the process (an engine that could not start) is still in flight
    from multiprocessing import util

    util.Finalize(None, REC.flush_at_exit, exitpriority=100)


def parse_steps(value: str | None) -> tuple[int, int]:
    """``first:count`` (either may be empty); a bad value is said once and the default used."""
    if not value:
        return DEFAULT_ENV_STEPS
    first, _, count = value.partition(":")
    try:
        return int(first or 0), int(count or DEFAULT_ENV_STEPS[1])
    except ValueError:
        sys.stderr.write(
            f"xpu_profiler: {ENV_STEPS}={value!r} is not first:count; using "
            f"{DEFAULT_ENV_STEPS[0]}:{DEFAULT_ENV_STEPS[1]}\n"
        )
        return DEFAULT_ENV_STEPS


def _attach_control(module) -> None:
    commands.attach()


def _patch_class(module, name: str, install, hooks) -> None:
    """Install one class's hooks at import; what took is reported with the next batch."""
    cls = compat.module_class(module, name)
    if cls is None:
        REC.hooks.update({symbol: False for symbol, _, _ in hooks})
        return
    REC.hooks.update(install(cls))


def _patch_scheduler(module) -> None:
    _patch_class(module, compat.SCHEDULER_CLASS[1], hooks_scheduler.install, compat.SCHEDULER_HOOKS)


def _patch_worker(module) -> None:
    _patch_class(module, compat.WORKER_CLASS[1], hooks_worker.install, compat.WORKER_HOOKS)


def _init_device_patch(cls_name: str):
    def patch(module) -> None:
        cls = compat.module_class(module, cls_name)
        if cls is None or not hooks_init_device.install(cls):
            REC.hooks[f"{cls_name}.{compat.INIT_DEVICE}"] = False

    return patch


INIT_DEVICE_PATCHES = {mod: _init_device_patch(cls) for mod, cls in compat.INIT_DEVICE_CLASSES}
