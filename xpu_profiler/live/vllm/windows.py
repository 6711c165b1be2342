"""Profile windows a running server is asked for (``xpu_profiler record``), in file mode.

The EngineCore decides which steps a window holds; the workers only follow:

- *EngineCore* (``engine_step``, from the schedule hook): every ``POLL_PERIOD_NS``
  while it steps it looks for window requests in ``$XPU_PROFILER_DIR/control/``
  (``control_files``). It takes one request at a time and tags the window's steps on
  their SchedulerOutput (``WINDOW_TAG``: window id, index, count, deadline, level),
  the same object that carries the step id to every worker. ``--steps N``: exactly the
  next N steps that schedule tokens (empty clean-up steps carry no tag and do not
  count); ``--seconds S``: the steps scheduled in the S seconds from the first one.
  The step the request arrived in is tagged too, as the *arming* step (index -1):
  it is not part of the window.
- *Worker* (``worker_step``, before each step): the arming step sets the window up,
  and torch.profiler starts right after that step ends (any other window gives way).
  Each window step then runs inside an ``xpu_step#N`` range; after the window's last
  step (the N-th; with seconds, the first that ends past the deadline) no range opens
  any more, and the profiler itself stops before the next step from outside the
  window runs (or at the engine's empty clean-up step when it goes idle). Starting
  and stopping torch.profiler is slow (up to a second): that cost lands in the steps
  just before and after the window, never in it. A worker executes its steps one
  after another, so the trace holds exactly the window's steps. torch.profiler must be
  stopped on the thread that runs the steps: an idle engine ends a seconds window at
  its next step.

Both sides answer in the control directory after each flush of their records
(``after_flush``): the caller reads the window from the record files once every
process has flushed its part.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass

from ...core.records import WINDOW_TAG
from . import compat, control_files
from .recorder import REC, proc_name
from .torch_window import TorchWindow

POLL_PERIOD_NS = 200_000_000


@dataclass
class EngineWindow:
    id: str
    steps: int  # steps to tag (0: by time)
    seconds: float  # by time: seconds from the first tagged step
    level: str
    armed: int = -1  # the step that armed the workers (not in the window)
    first_step: int = -1
    last_step: int = -1  # last tagged step
    tagged: int = 0
    deadline: int = 0  # wall-clock ns (seconds windows), from the first tagged step
    state: str = "running"
    flushed_step: int = -1


class Windows:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.answer_lock = threading.Lock()
        self.last_poll = 0
        self.taken: set[str] = set()  # engine: window ids it took (never twice)
        self.started: set[str] = set()  # worker: window ids it started (never twice)
        self.active: EngineWindow | None = None
        self.answering: list[EngineWindow] = []  # ended, not yet flushed through their last step
        self.world_size = 1
        self.retired: list[TorchWindow] = []  # worker: stopped windows whose trace is not handed over
        self.arming: TorchWindow | None = None  # worker: the window whose profiler starts after this step
        self.traced: list[tuple] = []  # worker: (window id, file, steps) to answer after the flush

    # -- EngineCore ---------------------------------------------------------------------
    def engine_step(self, sched, so, sid: int, t0: int) -> None:
        """Called for every step that schedules tokens, before the workers see it."""
        if REC.file_dir is None:
            return
        if t0 - self.last_poll >= POLL_PERIOD_NS:
            self.last_poll = t0
            self._poll(sched, t0)
        w = self.active
        if w is None:
            return
        if w.armed < 0:  # the step the request arrived in arms the workers' profilers at its end
            w.armed = sid
            setattr(so, WINDOW_TAG, (w.id, -1, w.steps, 0, w.level))
            return
        if w.first_step < 0:
            w.first_step = sid
            if w.seconds:
                w.deadline = t0 + int(w.seconds * 1e9)
        elif w.deadline and t0 >= w.deadline:
            self._end(w, "done")
            return
        setattr(so, WINDOW_TAG, (w.id, w.tagged, w.steps, w.deadline, w.level))
        w.tagged += 1
        w.last_step = sid
        if w.steps and w.tagged >= w.steps:
            self._end(w, "done")

    def _poll(self, sched, t: int) -> None:
        reqs = control_files.requests(REC.file_dir)
        ids = {r["id"] for r in reqs}
        w = self.active
        if w is not None and (w.id not in ids or any(r["id"] == w.id and r.get("cancel") for r in reqs)):
            self._end(w, "cancelled")  # the caller gave up on it
        if self.active is not None:
            return
        for r in reqs:
            if r["id"] in self.taken or r.get("cancel") or int(r.get("expires_ns", 0)) < t:
                continue
            self.taken.add(r["id"])
            self.world_size = compat.sched_world_size(sched)
            self.active = EngineWindow(
                r["id"],
                max(0, int(r.get("steps") or 0)),
                float(r.get("seconds") or 0),
                str(r.get("level") or "standard"),
            )
            self._answer(self.active)
            return

    def _end(self, w: EngineWindow, state: str) -> None:
        w.state = state
        with self.lock:
            self.active = None
            self.answering.append(w)
        self._answer(w)

    def _answer(self, w: EngineWindow) -> None:
        # the scheduler thread and the flush thread both answer: one at a time, so that
        # the file ends with the newer state
        with self.answer_lock:
            control_files.write_json(
                control_files.answer_path(REC.file_dir, w.id, proc_name(), os.getpid()),
                {
                    "role": "engine",
                    "id": w.id,
                    "pid": os.getpid(),
                    "run": REC.run_id,
                    "state": w.state,
                    "first_step": w.first_step,
                    "last_step": w.last_step,
                    "tagged": w.tagged,
                    "flushed_step": w.flushed_step,
                    "world_size": self.world_size,
                    "dp_rank": REC.dp_rank,
                },
            )

    # -- worker ---------------------------------------------------------------------------
    def worker_step(self, worker, so) -> None:
        """Before a step that schedules tokens: end this worker's window, or set one up."""
        tag = getattr(so, WINDOW_TAG, None)
        tw = REC.torch
        current = getattr(tw, "window_id", None)
        if (
            tw is not None
            and current is not None
            and not tw.finished
            and (tag is None or tag[0] != current or tw.closing)
        ):
            tw.stop()  # a step from outside the window: the window has ended
        if tag is None or tag[0] in self.started or REC.file_dir is None:
            return
        self.started.add(tag[0])
        if tw is not None:  # another window (file mode's, a profiler's) gives way
            tw.stop()
            self.retired.append(tw)
        wid, index, count, deadline, level = tag
        # an arming step (index -1) is not profiled: the profiler starts at its end
        REC.torch = TorchWindow(
            worker,
            os.path.join(REC.file_dir, "torch"),
            1 if index < 0 else 0,
            int(count),
            str(level),
            window_id=wid,
            deadline=int(deadline),
            defer_stop=True,
        )
        self.arming = REC.torch if index < 0 else None

    def worker_step_end(self) -> None:
        """After a step's last call: the window it armed starts profiling now, so that the
        window's first step does not hold what starting the profiler costs."""
        tw, self.arming = self.arming, None
        if tw is not None and tw is REC.torch and tw.prof is None and not tw.finished:
            try:
                tw.start()
            except RuntimeError as e:  # the window cannot run: say so to the caller at once
                tw.finished = True
                self.traced.append((tw.window_id, None, f"{e}"))

    def yield_to_vllm(self) -> None:
        """vLLM's own profiler is being started in this worker: a running window of ours
        stops first (two torch.profilers at once crash the process)."""
        tw = REC.torch
        if tw is not None and tw.prof is not None:
            tw.stop()
            REC.failed(
                "torch.profiler window",
                RuntimeError("vLLM's profiler was started (start_profile): the window stopped early"),
            )

    def worker_idle(self, t: int) -> None:
        """An empty clean-up step (the engine going idle): a seconds window past its
        deadline, or one whose last step has run, ends here."""
        tw = REC.torch
        if (
            tw is not None
            and getattr(tw, "window_id", None)
            and not tw.finished
            and (tw.closing or (tw.deadline and t >= tw.deadline))
        ):
            tw.stop()

    def hand_over(self, batch: dict, final: bool = False) -> None:
        """Write the traces of stopped windows and put them (and their marks) into ``batch``;
        ``final`` (the process is ending): a window whose last step has run stops now."""
        files, marks, owner = [], [], {}
        for tw in [*self.retired, *([REC.torch] if REC.torch is not None else [])]:
            if final and tw.closing and not tw.finished and threading.current_thread() is threading.main_thread():
                tw.stop()  # (torch.profiler stops only on the thread that runs the steps)
            tw.export(REC.global_rank)
            if tw.files:
                files += tw.files
                marks += tw.marks
                if tw.window_id is not None:
                    owner.update({f: tw.window_id for f in tw.files})
                    self.traced += [(tw.window_id, f, sorted({int(s) for s, _ in tw.marks})) for f in tw.files]
                tw.files, tw.marks = [], []
        self.retired = [tw for tw in self.retired if tw.prof is not None or tw.stopped]
        if files:  # the marks travel with the trace they align (not with a periodic flush)
            batch["torch_files"], batch["torch_marks"] = files, marks
            batch["torch_rank"] = REC.global_rank
        if owner:
            batch["torch_windows"] = owner

    # -- both ---------------------------------------------------------------------------
    def after_flush(self, directory: str, batch: dict) -> None:
        """Once ``batch`` is in the record files: answer for what it holds."""
        traced, self.traced = self.traced, []
        for wid, path, steps in traced:
            answer = {
                "role": "worker",
                "id": wid,
                "pid": os.getpid(),
                "run": REC.run_id,
                "rank": REC.global_rank,
                "dp_rank": REC.dp_rank,
            }
            if path is None:  # (steps: why the window could not run)
                answer.update(state="failed", reason=steps)
            elif path in (batch.get("torch_windows") or {}):
                answer.update(state="traced", file=path, steps=steps)
            else:
                continue
            control_files.write_json(control_files.answer_path(directory, wid, proc_name(), os.getpid()), answer)
        if not batch.get("sched"):
            return
        last = max(int(r[0]) for r in batch["sched"])
        with self.lock:
            live = [w for w in (self.active, *self.answering) if w is not None]
        for w in live:
            w.flushed_step = max(w.flushed_step, last)
            self._answer(w)
            if w.state != "running" and w.flushed_step >= w.last_step:
                with self.lock:
                    if w in self.answering:
                        self.answering.remove(w)

    def after_fork(self) -> None:
        self.lock = threading.Lock()
        self.answer_lock = threading.Lock()


WINDOWS = Windows()
REC.listeners.append(WINDOWS)

if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=WINDOWS.after_fork)
