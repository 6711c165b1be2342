"""Keeping peak memory near what is kept, for an analysis of a large trace in a process of
its own (the ``analyze`` command): glibc is asked to map large arrays on their own (it
otherwise raises its mmap threshold to 32 MiB after the first large free, and freed heap
chunks stay resident), and freed heap is handed back between the stages.

Both cost CPU time (system time grows with every map and unmap, and with every page
touched again after it was handed back), so they are switched on only for large inputs,
and never in a process that merely imports the library (a vLLM engine using the Python
API). The thresholds are a measured compromise (``bench/bench_scale.py``): arrays from
1 MiB on are mapped on their own, and the heap's top is handed back only when 64 MiB of
it are free (glibc's fixed 128 KiB, once the mmap threshold is set, made the analysis of
a 5M-event trace spend a third of its time in page faults), besides the trims between
the stages. Threads (the analysis runs some sections side by side) share the main heap,
one arena: glibc's per-thread arenas kept what the threads had freed resident (40 MiB
on a 5M-event trace)."""

from __future__ import annotations

import ctypes

#: inputs from this size on (bytes on disk) are read with bounded memory
LARGE_INPUT_BYTES = 256 << 20
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _M_ARENA_MAX = -1, -3, -8
MMAP_THRESHOLD = 1 << 20
TRIM_THRESHOLD = 64 << 20
OVERLAP_MAX_BYTES = 192 << 20  # what overlapping two stages may add to the peak, bounded
WORKER_MMAP_THRESHOLD = 32 << 20  # glibc's own ceiling for its dynamic threshold
WORKER_TRIM_THRESHOLD = 256 << 20
_active = False


def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL("libc.so.6")
    except OSError:  # not glibc
        return None


def bound_for_large_input(total_bytes: int) -> bool:
    """Switch the bounded-memory mode on when the input is large; says whether it is on."""
    global _active
    if total_bytes >= LARGE_INPUT_BYTES and not _active:
        libc = _libc()
        if libc is not None:
            libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
            libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
            libc.mallopt(_M_ARENA_MAX, 1)  # threads share the one heap that is trimmed
            _active = True
    return _active


def can_spare(extra_bytes: int) -> bool:
    """Whether work that would add ``extra_bytes`` to the peak (two stages run at once, for
    speed) may: always, unless memory is bounded and that is more than OVERLAP_MAX_BYTES."""
    return not _active or extra_bytes <= OVERLAP_MAX_BYTES


def relax_in_worker() -> None:
    """In a forked worker of a bounded analysis (it decodes or formats a piece and hands
    it on, and its memory goes with it when it exits): glibc's own reuse of freed heap
    again, which spares the worker the page faults of mapping every array anew."""
    if _active:
        libc = _libc()
        if libc is not None:
            libc.mallopt(_M_MMAP_THRESHOLD, WORKER_MMAP_THRESHOLD)
            libc.mallopt(_M_TRIM_THRESHOLD, WORKER_TRIM_THRESHOLD)


def trim() -> None:
    """Between the stages of a bounded analysis: freed heap back to the system."""
    if _active:
        libc = _libc()
        if libc is not None:
            libc.malloc_trim(0)
