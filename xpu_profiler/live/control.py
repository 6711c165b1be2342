"""Talking to the engine's processes from the caller: the plugin's control method on
EngineCore (``call_utility``; called directly in the one-process layout) and on every
worker (``collective_rpc``), and the start-up check of what they answer."""

from __future__ import annotations

from ..core.errors import XpuProfilerError
from .vllm import commands, compat, compat_llm

NOT_LOADED = (
    "the xpu_profiler vLLM plugin is not loaded in the {where} (install xpu_profiler in the same "
    "environment; if VLLM_PLUGINS is set it must include xpu_profiler)"
)


class HookError(XpuProfilerError):
    """A step hook did not install in one of the engine's processes (vLLM changed under us)."""


def _client(llm):
    try:
        return compat_llm.engine_client(llm)
    except AttributeError:
        raise XpuProfilerError("profile() needs a vllm.LLM (V1 engine)") from None


def call_engine(llm, cmd: str, arg: dict | None = None):
    client = _client(llm)
    core = compat_llm.inproc_engine_core(client)
    if core is not None:
        return commands.engine_control(core, cmd, arg)
    try:
        return compat_llm.call_utility(client, cmd, arg)
    except Exception as e:  # vLLM wraps the remote error in its own exception types
        if compat.CONTROL_METHOD in str(e) or isinstance(e, AttributeError):
            raise XpuProfilerError(NOT_LOADED.format(where="engine process")) from None
        raise


def call_workers(llm, cmd: str, arg: dict | None = None) -> list:
    commands.attach()  # workers in this process (one-process layout)
    try:
        return compat_llm.collective_rpc(llm, (cmd, arg))
    except Exception as e:  # vLLM wraps the remote error in its own exception types
        if compat.CONTROL_METHOD in str(e):
            raise XpuProfilerError(NOT_LOADED.format(where="worker processes")) from None
        raise


def check_started(answers: list[dict]) -> None:
    """Every process must have all its hooks: else one line naming each process's missing
    symbols, where, and the vLLM version (exit 2) — never an empty profile. (A vLLM release
    that moves both the scheduler's and the worker's methods shows both at once.)"""
    where = []
    version = "?"
    symbols = 0
    for a in answers:
        missing = a.get("missing") if isinstance(a, dict) else None
        if missing:
            version = a.get("vllm", version)
            symbols += len(missing)
            more = f" (and {', '.join(missing[1:])})" if len(missing) > 1 else ""
            where.append(f"{missing[0]}{more} did not install in {a.get('process', '?')} (pid {a.get('pid', '?')})")
    if where:
        them = "it" if symbols == 1 else "them"
        raise HookError(
            f"vLLM {version}: the step hook on {'; the step hook on '.join(where)}: this vLLM no longer "
            f"has {them} where xpu_profiler expects {them} (xpu_profiler/live/vllm/compat.py)"
        )
