"""How many forked worker processes a large piece of work gets (decoding a trace,
writing one): none below a size where starting them costs more than they save, none in
a process with threads (a live engine: forking it is unsafe) or another start method;
``XPU_PROFILER_WORKERS`` sets the number (1: none), else one per CPU, at most 8."""

from __future__ import annotations

import multiprocessing
import multiprocessing.pool
import os
import signal
import threading

from . import heap
from .fmt import is_decimal


def fork_workers(amount: int, minimum: int) -> int:
    """Workers for ``amount`` (bytes, rows: the caller's unit) of work; 1 means in-process."""
    want = os.environ.get("XPU_PROFILER_WORKERS")
    if amount < minimum or want == "1":
        return 1
    if multiprocessing.get_start_method(allow_none=True) not in (None, "fork") or threading.active_count() > 1:
        return 1
    n = int(want) if want and is_decimal(want) else (os.cpu_count() or 1)
    return max(1, min(n, 8))


def fork_pool(workers: int) -> multiprocessing.pool.Pool:
    """A pool of ``workers`` forked processes, each started by ``worker_init``."""
    return multiprocessing.get_context("fork").Pool(workers, initializer=worker_init)


def worker_init() -> None:
    """Every forked worker's start (a pool's initializer). SIGTERM ends it at once: the
    parent's handler (a SIGTERM that unwinds, so a temporary output is removed) would, in
    a worker blocked on the pool's queue, unwind into the queue's locks and hang the
    pool's shutdown. In a bounded analysis the worker gets glibc's own heap reuse back
    (``heap.relax_in_worker``)."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    heap.relax_in_worker()
