"""The engine's processes as the caller sees them.

Once the engine is up, every descendant of this process is one of its processes
(EngineCore, workers). A thread notes the first one to end, so a failed run can say
which process died and how (vLLM itself only says "EngineCore encountered an issue"),
and tell the caller at once (``on_end``: vLLM 0.32's ``LLM.generate`` waits forever
when the EngineCore itself is killed); ``end_leftovers`` makes sure none of them
outlives the run. Processes are known by
pid and start time, so a reused pid is never mistaken for one of ours.
"""

from __future__ import annotations

import os
import select
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import psutil

#: how often the watch looks when the platform has no process file descriptors (s)
POLL_S = 0.2
#: multiprocessing's own helpers: children of the caller that end with it, not engine processes
HELPERS = ("multiprocessing.resource_tracker", "multiprocessing.forkserver")


@dataclass(frozen=True)
class Ended:
    pid: int
    name: str
    exit_code: int | None  # None: not known (the process was not our child)


def describe_exit(code: int | None) -> str:
    if code is None:
        return "died"
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


class EngineProcessDied(RuntimeError):
    """An engine process ended while the engine was running."""


class ProcessWatch:
    def __init__(self, root: int | None = None, on_end: Callable[[Ended], None] | None = None) -> None:
        self.root = root or os.getpid()
        self.on_end = on_end  # called once, from the watch's thread, when the first process ends
        self.procs: dict[int, tuple[str, float]] = {}  # pid -> (name, start time)
        self.ended: list[Ended] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> ProcessWatch:
        self.procs = descendants(self.root)
        self._thread = threading.Thread(target=self._run, name="xpu_profiler-processes", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)

    @property
    def first(self) -> Ended | None:
        return self.ended[0] if self.ended else None

    def describe_first(self, exit_codes: dict[int, int] | None = None) -> str | None:
        """'the engine process VLLM::Worker_TP1 (pid 123) was killed by SIGKILL', or None."""
        e = self.first
        if e is None:
            return None
        code = e.exit_code if e.exit_code is not None else (exit_codes or {}).get(e.pid)
        return f"the engine process {e.name} (pid {e.pid}) {describe_exit(code)}"

    def _note(self, pid: int) -> None:
        name = self.procs[pid][0]
        self.ended.append(Ended(pid, name, _child_exit_code(pid)))
        if len(self.ended) == 1 and self.on_end is not None:
            try:
                self.on_end(self.ended[0])
            except Exception:  # the watch goes on; the caller finds the death in ``ended``
                pass

    def _run(self) -> None:
        alive = dict(self.procs)
        fds: dict[int, int] = {}
        poller = select.poll() if hasattr(os, "pidfd_open") else None
        if poller is not None:
            for pid in list(alive):
                try:
                    fd = os.pidfd_open(pid)
                except OSError:  # already gone
                    self._note(pid)
                    alive.pop(pid)
                    continue
                fds[fd] = pid
                poller.register(fd, select.POLLIN)
        try:
            while alive and not self._stop.is_set():
                if poller is not None:
                    gone = []
                    for fd, _ in poller.poll(int(POLL_S * 1000)):
                        poller.unregister(fd)
                        gone.append(fds[fd])
                else:
                    self._stop.wait(POLL_S)
                    gone = [pid for pid, (_, t) in alive.items() if not running(pid, t)]
                for pid in gone:
                    if not self._stop.is_set():
                        self._note(pid)
                    alive.pop(pid, None)
        finally:
            for fd in fds:
                os.close(fd)

    def left(self) -> list[int]:
        return [pid for pid, (_, t) in self.procs.items() if running(pid, t)]

    def end_leftovers(self, wait_s: float = 5.0) -> list[str]:
        """Wait up to ``wait_s`` for the watched processes to end, then kill what is left
        (an orphaned worker whose EngineCore was killed is out of vLLM's reach); returns
        'name (pid)' of each process that had to be killed."""
        deadline = time.monotonic() + wait_s
        while self.left() and time.monotonic() < deadline:
            time.sleep(0.1)
        killed = []
        for pid in self.left():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                continue
            killed.append(f"{self.procs[pid][0]} (pid {pid})")
        deadline = time.monotonic() + 1.0  # SIGKILL is not instant: gone before we return
        while killed and self.left() and time.monotonic() < deadline:
            time.sleep(0.02)
        return killed


def descendants(root: int) -> dict[int, tuple[str, float]]:
    """pid -> (name, start time) of every descendant of ``root`` but multiprocessing's helpers."""
    out: dict[int, tuple[str, float]] = {}
    try:
        children = psutil.Process(root).children(recursive=True)
    except psutil.Error:
        return out
    for c in children:
        try:
            cmd = " ".join(c.cmdline())
            if any(h in cmd for h in HELPERS):
                continue
            out[c.pid] = (c.name(), c.create_time())
        except psutil.Error:
            continue
    return out


def running(pid: int, started: float) -> bool:
    """The process with this pid and start time exists and has not ended (a zombie has)."""
    try:
        p = psutil.Process(pid)
        return p.create_time() == started and p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _child_exit_code(pid: int) -> int | None:
    """Exit code of our own child that just ended, read without reaping it (its owner,
    vLLM's process manager, still does); None for other processes."""
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except (OSError, AttributeError):
        return None
    if info is None:
        return None
    return -info.si_status if info.si_code in (os.CLD_KILLED, os.CLD_DUMPED) else info.si_status
