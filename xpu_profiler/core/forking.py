"""How many forked worker processes a large piece of work gets (decoding a trace,
writing one): none below a size where starting them costs more than they save, none in
a process with threads (a live engine: forking it is unsafe) or another start method;
``XPU_PROFILER_WORKERS`` sets the number (1: none), else one per CPU, at most 8."""

from __future__ import annotations

import fcntl
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


#: the capacity asked for the pool's pipes. A result of megabytes (a chunk's columns, a piece
#: of a written trace) crosses Linux's default 64 KiB pipe a page at a time, its reader woken
#: for each: reading a 1M-event trace on two cores made ~60,000 context switches and took
#: twice as long (1.5 s against 0.75 s, measured). 1 MiB: Linux's default ``pipe-max-size``,
#: what an unprivileged process may ask.
PIPE_BYTES = 1 << 20


def fork_pool(workers: int) -> multiprocessing.pool.Pool:
    """A pool of ``workers`` forked processes, each started by ``worker_init``, its task and
    result pipes widened to ``PIPE_BYTES`` where the system lets it."""
    pool = multiprocessing.get_context("fork").Pool(workers, initializer=worker_init)
    setpipe = getattr(fcntl, "F_SETPIPE_SZ", None)  # (Linux)
    for queue in ("_outqueue", "_inqueue"):
        writer = getattr(getattr(pool, queue, None), "_writer", None)
        if setpipe is None or writer is None:
            continue
        try:
            fcntl.fcntl(writer.fileno(), setpipe, PIPE_BYTES)
        except OSError:
            pass  # (a lower limit: the default pipe, slower)
    return pool


def worker_init() -> None:
    """Every forked worker's start (a pool's initializer). SIGTERM ends it at once: the
    parent's handler (a SIGTERM that unwinds, so a temporary output is removed) would, in
    a worker blocked on the pool's queue, unwind into the queue's locks and hang the
    pool's shutdown. In a bounded analysis the worker gets glibc's own heap reuse back
    (``heap.relax_in_worker``)."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    heap.relax_in_worker()
