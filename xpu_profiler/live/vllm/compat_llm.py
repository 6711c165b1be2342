"""The caller's side of vLLM: the ``vllm.LLM`` the live command builds, drives and ends.

Every vLLM internal touched here is in the table of ``compat`` (``SYMBOLS``, the
"front-end" rows); this module holds the code that touches them from the caller's
process: RPC into the engine's processes, generate(), the engine's settings, its
shutdown and the death of one of its processes, and the engine argument that traces
graph capture. ``compat`` holds the code that runs inside the engine's processes
(hooks, EngineCore, workers). ``tests/test_live_compat.py`` checks that no other module
of the live path names any of them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import compat


def engine_client(llm):
    """The engine-core client of a ``vllm.LLM``; AttributeError when it is not one."""
    return llm.llm_engine.engine_core


def inproc_engine_core(client):
    """The EngineCore object of the one-process layout, else None (it runs elsewhere)."""
    core = getattr(client, "engine_core", None)
    return core if core is not None and not hasattr(client, "call_utility") else None


def call_utility(client, *args):
    return client.call_utility(compat.CONTROL_METHOD, *args)


def collective_rpc(llm, args: tuple) -> list:
    return list(llm.collective_rpc(compat.CONTROL_METHOD, args=args))


def shutdown_engine(llm, timeout: float | None = None) -> None:
    """End the engine's processes (vLLM's own shutdown: SIGTERM, then SIGKILL to each
    process tree after ``timeout`` s, vLLM's default when None); idempotent."""
    client = llm.llm_engine.engine_core
    client.shutdown(timeout=timeout)


def wake_front_end(llm, exc: Exception) -> bool:
    """Make a ``generate()`` waiting on the engine's outputs raise ``exc``; False when
    this engine has no such queue (one-process layout: nothing waits on another process)."""
    q = getattr(llm.llm_engine.engine_core, "outputs_queue", None)
    if q is None:
        return False
    q.put_nowait(exc)
    return True


def engine_dead(llm) -> bool:
    """True once vLLM knows an engine process died (RPC would only raise)."""
    try:
        return bool(llm.llm_engine.engine_core.resources.engine_dead)
    except AttributeError:
        return False


def engine_exit_codes(llm) -> dict[int, int]:
    """pid -> exit code of the EngineCore processes that have ended (vLLM reaped them)."""
    try:
        procs = llm.llm_engine.engine_core.resources.engine_manager.processes
    except AttributeError:
        return {}
    return {p.pid: p.exitcode for p in procs if p.pid is not None and p.exitcode is not None}


#: engine argument, its field and the subdirectory vLLM writes capture traces into
PROFILER_CONFIG_KWARG = "profiler_config"
CAPTURE_PROFILER_FIELD = "capture_torch_profiler"
CAPTURE_TRACE_SUBDIR = "capture_traces"


def supports_capture_profiler() -> bool:
    """Whether this vLLM can trace its graph capture (ProfilerConfig.capture_torch_profiler)."""
    try:
        from vllm.config import ProfilerConfig
    except ImportError:
        return False
    fields = getattr(ProfilerConfig, "__dataclass_fields__", None) or getattr(ProfilerConfig, "model_fields", {})
    return CAPTURE_PROFILER_FIELD in fields


def capture_profiler_config(trace_dir: str, given: dict | None) -> dict | None:
    """The ``profiler_config`` engine argument that makes vLLM trace its graph capture into
    ``<trace_dir>/capture_traces/`` (or the user's own torch_profiler_dir); None when the
    user's own profiler setting excludes it (another profiler)."""
    cfg = dict(given or {})
    if cfg.get("profiler") not in (None, "torch"):
        return None
    cfg["profiler"] = "torch"
    cfg.setdefault("torch_profiler_dir", trace_dir)
    cfg[CAPTURE_PROFILER_FIELD] = True
    return cfg


def llm_api():
    """(LLM, SamplingParams); ImportError without vLLM."""
    from vllm import LLM, SamplingParams

    return LLM, SamplingParams


def sampling_params(max_tokens: int, greedy: bool = True):
    params = llm_api()[1]
    return params(max_tokens=max_tokens, ignore_eos=True, **({"temperature": 0.0} if greedy else {}))


def generate(llm, prompts, params, progress: bool | Callable[..., Any] = False) -> list:
    return llm.generate(prompts, params, use_tqdm=progress)


def generated_tokens(outputs) -> int:
    return sum(len(o.outputs[0].token_ids) for o in outputs)


def vocab_size(llm, default: int = 32000) -> int:
    try:
        return int(getattr(llm.llm_engine.vllm_config.model_config.hf_config, "vocab_size", default))
    except (AttributeError, TypeError, ValueError):
        return default


def engine_config(llm) -> dict:
    """The engine settings a report shows (empty when they cannot be read)."""
    return compat.config_summary(getattr(getattr(llm, "llm_engine", None), "vllm_config", None))


def model_config(llm) -> dict:
    """The model's config.json as the engine loaded it (empty when it cannot be read)."""
    return compat.model_config(getattr(getattr(llm, "llm_engine", None), "vllm_config", None))
