"""Memory samples an engine process takes of itself: host RSS (every process, at most
every ``RSS_PERIOD_NS``) and the device allocator's counters (workers, no device sync)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import psutil

#: host RSS is sampled at most this often per process and role (ns)
RSS_PERIOD_NS = 20_000_000


class MemorySampler:
    def __init__(self) -> None:
        self._proc: psutil.Process | None = None
        self._last_rss: dict[str, int] = {}
        self._device_ok: bool | None = None  # None: not known yet

    def after_fork(self) -> None:
        self._proc = None  # psutil.Process caches the pid

    def host(self, out: list, t: int, rank: int, role: str) -> None:
        """Append ``host_rss_bytes.<role>`` unless one was taken less than a period ago."""
        if t - self._last_rss.get(role, 0) < RSS_PERIOD_NS:
            return
        self._last_rss[role] = t
        rss = self._rss()
        if rss >= 0:
            out.append((rank, f"host_rss_bytes.{role}", t, float(rss)))

    def _rss(self) -> int:
        try:
            import psutil
        except ImportError:
            return -1
        try:
            if self._proc is None:
                self._proc = psutil.Process()
            return int(self._proc.memory_info().rss)
        except (psutil.Error, OSError):
            return -1

    def device(self, out: list, t: int, rank: int) -> None:
        """Append the allocator counters once the device runtime is up (never before)."""
        if self._device_ok is False:
            return
        import torch

        if self._device_ok is None:
            if not torch.cuda.is_available():
                self._device_ok = False
                return
            if not torch.cuda.is_initialized():
                return  # not yet: ask again next step
            self._device_ok = True
        # allocator counters: host-side bookkeeping, no device sync
        out.append((rank, "device_allocated_bytes", t, float(torch.cuda.memory_allocated())))
        out.append((rank, "device_reserved_bytes", t, float(torch.cuda.memory_reserved())))
        out.append((rank, "device_peak_allocated_bytes", t, float(torch.cuda.max_memory_allocated())))
