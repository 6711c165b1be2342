"""Per-rank capture of a worker's own output (Kunlun `[XPURT_PROF]` kernel logs), without
model-code edits.

The Kunlun runtime prints one ``[XPURT_PROF]`` line per kernel from C++ straight
to the process's stdout, so every worker's lines interleave on the console.
vLLM-Kunlun's profiling guide fixes that by patching ``os.dup2`` calls into the
model's ``__init__``. Here the same redirection runs from our vLLM plugin in
each worker process instead (``hooks_init_device``):

    from xpu_profiler.live.vllm.log_capture import start_capture, stop_capture

    handle = start_capture(run_dir, rank=rank, local_rank=local_rank)
    ...                       # the worker runs; its fd 1 and 2 go to the log file
    path = stop_capture(handle)   # fds and environment restored; returns the log path

``start_capture(run_dir, rank, local_rank, *, truncate=True) -> CaptureHandle``

- sets, in this process's environment, ``XPUAPI_DEBUG=0x1`` and
  ``XPURT_DISPATCH_MODE=PROFILING`` (kernel log lines) plus
  ``XPU_ENABLE_PROFILER_TRACING=1`` and ``XPU_CUPTI_ENABLE_DEVICE=<local_rank>``
  (the per-process setting the Kunlun torch.profiler backend needs, vLLM-Kunlun
  issue #167). The runtime reads them when it initialises, so call this before
  the worker's first XPU call (plugin load / worker init), not later;
- flushes Python's and C's stdio buffers, then ``os.dup2``-s a file opened on
  ``<run_dir>/xpu_logs/rank_<rank>.log`` (created, truncated unless
  ``truncate=False``, opened in append mode) over file descriptors 1 and 2. From
  then on everything this process writes there, from C or Python, including
  child processes started afterwards, lands in that file;
- returns a ``CaptureHandle`` (``path``, ``rank``, ``local_rank``, ``active``).

``stop_capture(handle) -> Path`` flushes again (so C-buffered kernel lines reach
the log, not the console), puts the original fds 1 and 2 back, restores the
environment variables it changed, and returns the log path. Calling it twice is
harmless. ``xpu_profiler.readers.records.device_logs.read_captured(run_dir)`` loads every
rank file of a run into one Profile (the ``xpurt_log`` reader).

Errors opening the log raise ``OSError`` before anything is redirected, so a
failed start leaves the process as it was.
"""

from __future__ import annotations

import ctypes
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ...core.env_scope import EnvScope
from ...core.records import LOG_DIR
from ...knowledge.devices import kunlun

#: variables set in the worker while capturing (XPU_CUPTI_ENABLE_DEVICE is added per rank)
CAPTURE_ENV = kunlun.RUNTIME_LOG_ENV


def log_path(run_dir: str | os.PathLike, rank: int) -> Path:
    """Where rank ``rank``'s kernel log goes: ``<run_dir>/xpu_logs/rank_<rank>.log``."""
    return Path(run_dir) / LOG_DIR / f"rank_{int(rank)}.log"


def capture_env(local_rank: int) -> dict[str, str]:
    """The environment a capturing worker gets."""
    return {**CAPTURE_ENV, "XPU_CUPTI_ENABLE_DEVICE": str(int(local_rank))}


@dataclass
class CaptureHandle:
    path: Path
    rank: int
    local_rank: int
    active: bool = True
    _saved_fds: dict[int, int] = field(default_factory=dict, repr=False)
    _env: EnvScope = field(default_factory=EnvScope, repr=False)


def _flush_all() -> None:
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass
    try:  # C stdio buffers (the runtime prints through them)
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):
        pass


def start_capture(run_dir: str | os.PathLike, rank: int, local_rank: int, *, truncate: bool = True) -> CaptureHandle:
    """Send this process's fds 1 and 2 to ``<run_dir>/xpu_logs/rank_<rank>.log``; see module doc."""
    path = log_path(run_dir, rank)
    path.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | (os.O_TRUNC if truncate else 0)
    fd = os.open(path, flags, 0o664)
    handle = CaptureHandle(path=path, rank=int(rank), local_rank=int(local_rank))
    try:
        for k, v in capture_env(local_rank).items():
            handle._env.set(k, v)
        _flush_all()
        for target in (1, 2):
            handle._saved_fds[target] = os.dup(target)
            os.dup2(fd, target)
    except BaseException:
        _restore(handle)
        raise
    finally:
        os.close(fd)
    return handle


def put_back_fds(saved: dict[int, int]) -> None:
    """{fd: its saved duplicate} → each fd as it was; the duplicates closed."""
    for target, dup in saved.items():
        try:
            os.dup2(dup, target)
        finally:
            os.close(dup)
    saved.clear()


def _restore(handle: CaptureHandle) -> None:
    put_back_fds(handle._saved_fds)
    handle._env.restore()


def stop_capture(handle: CaptureHandle) -> Path:
    """Flush, restore fds 1 and 2 and the environment; return the log path."""
    if handle.active:
        _flush_all()
        _restore(handle)
        handle.active = False
    return handle.path
