"""Handing chunks made in this process (a decompressed gzip stream) to forked workers
through shared memory instead of a pipe.

A pipe copies each chunk four times (pickled, written, read, unpickled) and makes the
worker fault in fresh pages for every copy. Here a few slots of one shared anonymous
mapping, made before the workers are forked, take each chunk bracketed (``[``…``]``) as
the decoders want it; a worker decodes it in place and sends back only the columns.
Slots are used in turn and refilled only once the chunk in them has come back decoded
(results arrive in order), so at most ``slots`` chunks are in flight. A chunk too large
for a slot goes through the pipe as before.
"""

from __future__ import annotations

import mmap
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator

from .cols import Cols
from .decode import decode_cols, framed

_RING: Ring | None = None  # the ring of the read in progress, inherited by forked workers


class Ring:
    def __init__(self, slots: int, slot_bytes: int) -> None:
        self.slots, self.slot_bytes = slots, slot_bytes
        self.buf = mmap.mmap(-1, slots * slot_bytes)  # MAP_SHARED: seen by children forked later
        self._free = threading.Semaphore(slots)
        self._in_slot: deque[bool] = deque()  # per task sent, oldest first: whether it holds a slot
        self._closed = False

    def tasks(self, parts: Iterable[memoryview | bytes]) -> Iterator[tuple[int, int] | bytearray]:
        """(slot, length) per part, the part bracketed in that slot; a part too large for
        one, bracketed, as it is. Runs in the pool's task thread; waits for a free slot."""
        k = 0
        for part in parts:
            n = len(part) + 2
            if n > self.slot_bytes:
                self._in_slot.append(False)
                yield framed(part)
                continue
            while not self._free.acquire(timeout=0.1):
                if self._closed:
                    return
            if self._closed:
                return
            at = (k % self.slots) * self.slot_bytes
            self.buf[at] = 0x5B
            self.buf[at + 1 : at + n - 1] = part
            self.buf[at + n - 1] = 0x5D
            self._in_slot.append(True)
            yield (k % self.slots, n)
            k += 1

    def returned(self) -> None:
        """The oldest task's result is in: its slot may be refilled."""
        if self._in_slot.popleft():
            self._free.release()

    def close(self) -> None:
        """No more tasks (a worker failed, the read was interrupted): the task thread stops."""
        self._closed = True
        self._free.release(self.slots)


def decode_task(task: tuple[int, int] | bytearray) -> Cols:
    """In a worker: the columns of one task's chunk."""
    if not isinstance(task, tuple):
        return decode_cols(task)
    slot, n = task
    assert _RING is not None  # a slot's task comes from decode_in_pool's ring (forked workers inherit it)
    at = slot * _RING.slot_bytes
    with memoryview(_RING.buf) as whole, whole[at : at + n] as data:
        return decode_cols(data)


def decode_in_pool(
    pool_factory: Callable, parts: Iterable[memoryview | bytes], slots: int, slot_bytes: int
) -> list[Cols]:
    """Every part's columns, in order, decoded by the workers of ``pool_factory()`` (called
    once the ring is made, so that its workers share it)."""
    global _RING
    ring = Ring(slots, slot_bytes)
    _RING = ring
    try:
        with pool_factory() as pool:
            out = []
            try:
                for cols in pool.imap(decode_task, ring.tasks(parts), chunksize=1):
                    out.append(cols)
                    ring.returned()
            finally:
                ring.close()
            return out
    finally:
        _RING = None
        ring.buf.close()
