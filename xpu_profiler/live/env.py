"""Environment variables a live session sets for the engine processes it starts (they
inherit the caller's environment), put back as they were when the session ends: the
live path may run inside a user's long-lived process. ``cpu_thread_binding``: the
thread binding vLLM's CPU build needs for more than one worker on a small machine."""

from __future__ import annotations

import glob
import os

from ..core.env_scope import EnvScope as EnvScope  # (where the live command's callers find it)


def numa_nodes() -> int:
    """NUMA nodes with CPUs on this machine (1 when the system does not say)."""
    n = 0
    for path in glob.glob("/sys/devices/system/node/node[0-9]*/cpulist"):
        try:
            with open(path) as f:
                n += bool(f.read().strip())
        except OSError:
            continue
    return max(1, n)


def _cpu_list(cpus: list[int]) -> str:
    """[0, 1, 2, 5] -> '0-2,5' (the form VLLM_CPU_OMP_THREADS_BIND takes)."""
    runs: list[list[int]] = []
    for c in cpus:
        if runs and c == runs[-1][1] + 1:
            runs[-1][1] = c
        else:
            runs.append([c, c])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def cpu_thread_binding(workers: int, cpus=None, nodes: int | None = None) -> str | None:
    """``VLLM_CPU_OMP_THREADS_BIND`` for ``workers`` CPU workers on this machine: one core
    list per worker, ``|``-separated in local-rank order (data-parallel engines one after
    the other), the allowed cores split into contiguous runs ("0|1" for two workers on
    two cores; cores are shared round-robin when there are fewer than workers).

    None for one worker, or when there is a NUMA node per worker: vLLM's own binding
    ("auto", one node per worker) is the better one there, and it refuses fewer nodes.
    """
    if workers <= 1:
        return None
    if (numa_nodes() if nodes is None else nodes) >= workers:
        return None
    allowed = sorted(
        cpus
        if cpus is not None
        else (os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else range(os.cpu_count() or 1))
    )
    if len(allowed) < workers:
        return "|".join(str(allowed[i % len(allowed)]) for i in range(workers))
    per, extra = divmod(len(allowed), workers)
    lists, i = [], 0
    for w in range(workers):
        n = per + (w < extra)
        lists.append(_cpu_list(allowed[i : i + n]))
        i += n
    return "|".join(lists)
