"""The live command's engine, from its failure to start to its last process.

- ``start_error``: why ``vllm.LLM(...)`` failed, as one line: a configuration error
  with the field and the rule it broke, a start-up failure inside an engine process
  with the error that process wrote to the record directory as it ended
  (``Recorder.flush_at_exit``);
- ``failure_reason``: why a running engine failed: which process died and how
  (``ProcessWatch``), else vLLM's own exception;
- ``end``: vLLM's own shutdown of the engine's processes, then any process of the run
  that is still there is ended, so nothing outlives the command.
"""

from __future__ import annotations

from pathlib import Path

from ..core.errors import XpuProfilerError
from ..core.records import read_record_files
from .processes import Ended, EngineProcessDied, ProcessWatch
from .vllm import compat_llm

#: how long the engine's processes get to end after a failure or Ctrl-C (s). They got the
#: signal themselves, or a peer died: the EngineCore waits on a worker that is gone and
#: never ends on its own, so vLLM's default grace would only be waited out.
AFTER_FAILURE_S = 2.0
#: how long a process of the run may outlive vLLM's shutdown before it is killed (s)
LEFTOVER_WAIT_S = 3.0


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""


def _config_errors(exc: BaseException) -> str | None:
    """'max_model_len: Input should be greater than or equal to -1 (got -5)' for a
    validation error that lists its fields (pydantic's ``errors()``), else None."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return None
    try:
        items = errors()
    except Exception:  # not a validation error after all
        return None
    parts = []
    for it in items if isinstance(items, list) else ():
        if not isinstance(it, dict):
            continue
        loc = ".".join(str(x) for x in it.get("loc") or ()) or "value"
        got = f" (got {it['input']!r})" if "input" in it and not isinstance(it["input"], dict) else ""
        parts.append(f"{loc}: {it.get('msg', '?')}{got}")
    return "; ".join(parts) or None


def start_error(exc: BaseException, record_dir: Path | None = None) -> XpuProfilerError:
    """The one line a failed ``vllm.LLM(...)`` ends the command with (exit 2)."""
    fatal = [b["fatal"] for b in read_record_files(record_dir) if b.get("fatal")] if record_dir else []
    if fatal:
        why = fatal[0]
    else:
        why = _config_errors(exc)
        why = f"{type(exc).__name__}: {why or first_line(exc) or 'no message'}"
    return XpuProfilerError(f"vLLM could not start the engine: {why}")


def failure_reason(exc: BaseException, llm, watch: ProcessWatch | None) -> str:
    died = watch.describe_first(compat_llm.engine_exit_codes(llm)) if watch is not None else None
    if died:
        return died
    msg = first_line(exc)[:200]
    return f"the engine failed: {type(exc).__name__}{': ' + msg if msg else ''}"


def watch_processes(llm) -> ProcessWatch:
    """Watch the engine's processes; the first one to end makes ``generate()`` raise."""

    def died(e: Ended) -> None:
        compat_llm.wake_front_end(llm, EngineProcessDied(f"{e.name} (pid {e.pid}) ended"))

    return ProcessWatch(on_end=died).start()


def end(llm, watch: ProcessWatch | None, timeout: float | None = None) -> list[str]:
    """Shut the engine down (idempotent) and end what is left of its processes; returns
    'name (pid)' of each process that had to be killed after vLLM's shutdown."""
    if watch is not None:
        watch.stop()
    try:
        compat_llm.shutdown_engine(llm, timeout)
    except Exception:  # an engine that is already gone: its processes are checked below
        pass
    return watch.end_leftovers(LEFTOVER_WAIT_S) if watch is not None else []
