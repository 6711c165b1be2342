"""Host RSS of the front-end, sampled by a thread while a run goes (the engine processes sample
themselves in their step hooks); ``readers.records.counters`` turns the samples into counters."""

from __future__ import annotations

import threading
import time

from .vllm.memory_sampling import MemorySampler


class HostSampler:
    """Samples the RSS of this process (the front-end) every period. The engine processes
    sample themselves in their step hooks (walking the process tree from here costs the
    front-end noticeable time on small machines)."""

    def __init__(self, period_s: float = 0.25):
        self.period_s = period_s
        self.samples: list[tuple] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> HostSampler:
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
