"""The per-rank device logs a live run captured (``vllm/log_capture``), read back and
merged into the run's Profile."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from ...core.errors import TraceError
from ...core.profile import K_KERNEL, Profile
from ...core.records import LOG_DIR
from ..base import ReadOptions
from ..loader import load


def read_captured(run_dir: str | os.PathLike, xpu_gen: int | None = None) -> Profile:
    """All rank logs of a run as one Profile (kernel totals, no timeline)."""
    return load([Path(run_dir) / LOG_DIR], ReadOptions(xpu_gen=xpu_gen), empty_ok=True)  # (CPU runs: none)


def attach_device_logs(profile_obj: Profile, run_dir: Path, say: Callable[[str], None]) -> Profile:
    """Add the per-rank [XPURT_PROF] kernel totals the workers printed.

    When torch.profiler already delivered device kernels (the Kunlun profiler backend),
    the logs would count every kernel twice: they are kept as a cross-check only.
    """
    log_dir = Path(run_dir) / LOG_DIR
    try:
        logs = read_captured(run_dir)
    except TraceError as e:
        say(f"no per-rank device log could be read ({e.problem})")
        return profile_obj
    kernels = logs.events["kind"] == K_KERNEL
    totals = {str(r): int(logs.events["dur"][kernels & (logs.events["rank"] == r)].sum()) for r in logs.ranks}
    info = {
        "dir": str(log_dir),
        "files": sorted(str(p) for p in log_dir.glob("rank_*.log")),
        "kernel_lines": int(kernels.sum()),
        "kernel_ns_by_rank": totals,
    }
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
