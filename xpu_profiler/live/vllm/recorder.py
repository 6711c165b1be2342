"""The per-process recorder every hook writes into: fixed-shape tuple buffers, the hooks'
own overhead and failures, and the hand-over of what was recorded (``take``: over RPC;
``flush_to_file``: file mode, every second, when the engine goes idle and at exit).

A record file that cannot be written (a full disk, a vanished directory) costs nothing
but the file: the batch stays in memory (``held``), the failure is counted, and the write
is tried again every ``RETRY_NS`` with everything held since; a batch taken over RPC
carries it too. Meanwhile a process holds at most ``records.MAX_HELD_ROWS`` rows of each
kind, the newest: a server whose disk stays full drops its oldest rows and counts them
(``dropped``, in the next batch that is handed over, and in the report's warnings).

One ``Recorder`` per process (``REC``); its state is attributes, never rebound module
globals. After a fork the child gets fresh locks and starts its own flusher thread
(threads do not survive a fork). Nothing here imports vLLM or torch.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import TYPE_CHECKING

from ...core import records
from .memory_sampling import MemorySampler

if TYPE_CHECKING:  # (torch_window imports this module)
    from .torch_window import TorchWindow

FLUSH_PERIOD_NS = 1_000_000_000
#: after a failed record-file write, the next try (the batches are held meanwhile)
RETRY_NS = 30_000_000_000
#: the longest error text a process that ends with an exception leaves (vLLM's can embed configurations)
MAX_FATAL_CHARS = 600


def now() -> int:
    return time.time_ns()


def proc_name() -> str:
    import multiprocessing

    name = multiprocessing.current_process().name
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name) or "proc"


class Recorder:
    def __init__(self) -> None:
        self.lock = threading.Lock()  # take() against itself (RPC, flusher thread, atexit)
        self.flush_lock = threading.Lock()  # one writer of the record file at a time
        self.file_dir: str | None = None  # file mode: where batches are appended
        self.run_id: str | None = None  # file mode: the server lifetime (records.ENV_RUN)
        self.started_ns = now()
        self.meta: dict = {}  # what this process knows of the engine, sent once
        self.last_flush = 0
        self.flusher_pid: int | None = None
        self.active = False
        self.metrics = records.METRICS
        self.memory = self.throughput = True
        # buffers (swapped out by take())
        self.sched: list[tuple] = []
        self.worker: list[list] = []
        self.counters: list[tuple] = []
        self.open_requests: dict[str, list] = {}
        self.done_requests: list[tuple] = []
        self.hook_ns = 0  # time spent inside the hooks themselves
        self.errors: dict[str, list] = {}  # hook -> [count, first message]
        #: what rides along with each batch: ``hand_over(batch, final)`` when a batch is taken,
        #: ``after_flush(directory, batch)`` once it is on disk (the profile windows, ``windows``)
        self.listeners: list = []
        self.hooks: dict[str, bool] = {}  # symbol -> patched at import (file mode report)
        # step bookkeeping
        self.pending: dict[int, tuple] = {}  # id(SchedulerOutput) -> what schedule() saw
        self.next_step = 0
        self.local_step = 0
        self.dp_rank = 0  # data-parallel index of this process's engine
        self.rank = 0  # worker: its rank inside its engine
        self.global_rank = 0  # worker: its rank across DP engines; EngineCore: its first worker's
        self.place: dict | None = None  # the batch's "place" (see records), once known
        self.held: dict | None = None  # batch whose file write failed, handed over with the next take()
        self.retry_ns = 0  # after a failed write: no file write before this time
        self.max_held = records.MAX_HELD_ROWS  # rows of each kind held at most
        self.fatal: str | None = None  # the exception this process ended with (file mode, at exit)
        self.worker_ready = False  # rank (and env-mode torch window) taken from the worker
        self.last_worker: list | None = None
        self.open_range = None  # the open xpu_step#N range handle of this worker
        self.torch: TorchWindow | None = None  # while torch.profiler is armed or running
        self.env_torch: tuple | None = None  # file mode: (dir, first, count, level) to arm per worker
        self.mem = MemorySampler()

    def configure(self, metrics) -> None:
        self.metrics = tuple(metrics or self.metrics)
        self.memory = "memory_usage" in self.metrics
        self.throughput = "throughput" in self.metrics

    def failed(self, where: str, exc: BaseException) -> None:
        """Count a failure inside a hook (the first message is kept); the hook carries on."""
        e = self.errors.get(where)
        if e is None:
            self.errors[where] = [1, f"{type(exc).__name__}: {exc}"[:300]]
        else:
            e[0] += 1

    def take(self, final: bool = False) -> dict:
        """Everything recorded so far in this process as one batch (see ``records``), and clear it."""
        with self.lock:
            batch = {
                "pid": os.getpid(),
                "ppid": os.getppid(),
                "process": proc_name(),
                "run": self.run_id,
                "started_ns": self.started_ns,
                "sched": self.sched,
                "worker": self.worker,
                "counters": self.counters,
                "requests": self.done_requests + ([tuple(r) for r in self.open_requests.values()] if final else []),
                "hook_ns": self.hook_ns,
                "role": "worker" if self.worker else ("engine" if self.sched else ""),
            }
            if self.errors:
                batch["errors"], self.errors = self.errors, {}
            if self.hooks:
                batch["hooks"], self.hooks = self.hooks, {}
            if self.place is not None:
                batch["place"] = self.place
            if self.fatal is not None:
                batch["fatal"], self.fatal = self.fatal, None
            if self.meta:
                batch["meta"], self.meta = self.meta, {}
            self.hook_ns = 0
            for listener in self.listeners:
                listener.hand_over(batch, final)  # the traces of stopped torch.profiler windows
            self.sched, self.worker, self.counters, self.done_requests = [], [], [], []
            if final:
                self.open_requests = {}
            if self.held is not None:
                batch, self.held = records.merge_into(batch, self.held), None
            return batch

    # -- file mode ------------------------------------------------------------------------
    def maybe_flush(self, t: int, idle: bool = False) -> None:
        """Flush now when the engine went idle, else leave it to the flusher thread."""
        if self.file_dir is None:
            return
        try:
            if self.flusher_pid != os.getpid():
                self.flusher_pid = os.getpid()  # (re)start after a fork
                threading.Thread(target=self._flusher, name="xpu_profiler-flush", daemon=True).start()
            if idle or t - self.last_flush >= FLUSH_PERIOD_NS:
                self.last_flush = t
                self.flush_to_file()
        except Exception as e:  # called from the hooks: never into vLLM; counted into the warnings
            self.failed("record flush", e)

    def _flusher(self) -> None:
        """Writes the records every second: a process killed at shutdown loses at most that."""
        me = os.getpid()
        while self.flusher_pid == me:
            time.sleep(FLUSH_PERIOD_NS / 1e9)
            if self.worker or self.sched or self.counters or self.done_requests or self.errors:
                self.last_flush = now()
                self.flush_to_file()

    def flush_to_file(self, final: bool = False) -> None:
        with self.flush_lock:
            directory = self.file_dir
            if directory is None:
                return
            batch = self.take(final=final)
            if not records.has_records(batch):
                return
            if not final and now() < self.retry_ns:  # writes failed lately: hold it until the next try
                self._hold(batch)
                return
            try:
                records.append_batch(directory, batch)
            except OSError as e:  # a full or vanished directory: keep the records, try again later
                self.retry_ns = now() + RETRY_NS
                with self.lock:
                    self.errors.setdefault(records.FLUSH_FAILED, [0, f"{directory}: {e.strerror}"])[0] += 1
                self._hold(batch)
                return
            self.retry_ns = 0
            for listener in self.listeners:
                try:
                    listener.after_flush(directory, batch)  # answer the profile windows this batch completes
                except OSError as e:
                    self.failed("profile window answer", e)

    def _hold(self, batch: dict) -> None:
        """Keep a batch that was not written (``take`` merged what was held before into it),
        its newest rows of each kind up to ``max_held``."""
        with self.lock:
            if self.held is not None:  # (held since the take: kept in front)
                batch = records.merge_into(batch, self.held)
            self.held = records.cap_rows(batch, self.max_held)

    def flush_at_exit(self) -> None:
        """The last flush of a process. One that ends with an exception (an EngineCore that
        could not start, whose workers' start-up errors surface there) writes it too, so the
        caller can say why in one line."""
        exc = sys.exc_info()[1]
        if isinstance(exc, Exception) and self.file_dir is not None:
            msg = " ".join(str(exc).split())
            self.fatal = (f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__)[:MAX_FATAL_CHARS]
        self.flush_to_file(True)

    def after_fork(self) -> None:
        self.started_ns = now()
        self.lock = threading.Lock()
        self.flush_lock = threading.Lock()
        self.mem.after_fork()


REC = Recorder()

if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=REC.after_fork)
