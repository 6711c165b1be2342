"""Memory time series: device allocator counters and host RSS (sampled in every engine
process by the step hooks, and in the front-end by a sampler thread), KV-cache usage."""

from __future__ import annotations

import threading
import time

import numpy as np

from ..profile import COUNTER_SCHEMA, StringTable, Table
from .vllm.memory_sampling import MemorySampler


def counters_table(samples: list, strings: StringTable, base_ns: int) -> Table:
    """(rank, name, t ns, value) samples → the counters table."""
    if not samples:
        return Table(COUNTER_SCHEMA)
    samples = sorted(samples, key=lambda s: (s[0], s[1], s[2]))
    return Table(COUNTER_SCHEMA, {
        "rank": np.array([s[0] for s in samples], np.int32),
        "name": strings.intern_many(s[1] for s in samples),
        "t": np.array([int(s[2]) - base_ns for s in samples], np.int64),
        "value": np.array([float(s[3]) if s[3] is not None else np.nan for s in samples], np.float64),
    })


class HostSampler:
    """Samples the RSS of this process (the front-end) every period. The engine processes
    sample themselves in their step hooks (walking the process tree from here costs the
    front-end noticeable time on small machines)."""

    def __init__(self, period_s: float = 0.25):
        self.period_s = period_s
        self.samples: list[tuple] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> "HostSampler":
        self._thread = threading.Thread(target=self._run, name="xpu_profiler-rss", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        sampler = MemorySampler()  # the same RSS reading the engine processes take of themselves
        while not self._stop.is_set():
            sampler.host(self.samples, time.time_ns(), 0, "frontend")
            self._stop.wait(self.period_s)

    def stop(self) -> list[tuple]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        return self.samples
