"""The live command's terminal: our stages with a progress bar, then the results and the
paths written; vLLM's own output goes to ``<output dir>/vllm.log``.

On a terminal the running stage is one line redrawn in place (``terminal.progress``: its
number and label, a bar of the requests done, the steps so far, the time), and stays as one
line with its duration when it ends; anywhere else (a pipe, a log, ``-v``, ``TERM=dumb``)
each stage is one line when it starts and one when it ends. ``-q``: only the paths written.

vLLM writes from every process it runs: the front-end's logging and tqdm bars in this
process, the EngineCore's and the workers' in children that inherit this process's
file descriptors 1 and 2. ``Console.capture()`` therefore points fds 1 and 2 at the log
file (``verbose``: at a pipe that a thread copies to the log and the terminal), before
the engine starts, and writes everything of ours to copies of the terminal's own fds.
A worker whose device log is captured (``vllm/log_capture``) moves its own fds to its
rank's log on top of that, as before; its fds go back to the inherited ones when it stops.
When capture ends, fds 1 and 2 are the terminal's again. Only the CLI uses this: the
Python API leaves the process's output alone.

On a failure ``why()`` picks the lines of the log that say why (error and exception
lines, the last traceback's message), for the command to print.
"""

from __future__ import annotations

import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from ..core import fmt
from ..terminal.screen import can_redraw
from .vllm.log_capture import put_back_fds

if TYPE_CHECKING:
    from ..terminal.progress import StageLine

LOG_NAME = "vllm.log"
LABEL_WIDTH = 22  # stage labels padded to it, so that their times line up

#: a vLLM log line: "(EngineCore pid=7) ERROR 12-02 20:27:37 [core.py:1510] message"
_LOG_LINE = re.compile(
    r"^(?P<proc>\([\w:-]+ pid=\d+\) )?(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) "
    r"\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \[[^\]]*\] (?P<msg>.*)$"
)
#: what says why, outside vLLM's own error logging: an exception's message, a crash
_EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b(: .*)?$")
_CRASH = re.compile(r"Segmentation fault|core dumped|Killed|out of memory|Aborted", re.IGNORECASE)
#: error lines that say nothing of the cause
_NOISE = re.compile(r"^Traceback \(most recent call last\)|See root cause above|^Dumping ")


def why(log_path: str | os.PathLike, n: int = 8) -> list[str]:
    """The last ``n`` lines of the log that say why vLLM failed: its ERROR messages and
    exception lines, without the tracebacks' frames, each once (escaped for a terminal)."""
    try:
        with open(log_path, "rb") as f:
            f.seek(max(0, os.path.getsize(log_path) - (1 << 20)))
            lines = f.read().decode("utf-8", errors="replace").splitlines()
    except OSError:
        return []
    picked: dict[str, str] = {}  # message -> the line shown for it (the last one wins)
    for ln in lines:
        m = _LOG_LINE.match(ln.rstrip())
        msg = (m.group("msg") if m else ln).rstrip()
        if not msg or msg[0].isspace() or _NOISE.search(msg):
            continue  # a traceback's frames and code lines
        if m and m.group("level") in ("ERROR", "CRITICAL") or _EXCEPTION.match(msg) or _CRASH.search(msg):
            picked.pop(msg, None)
            picked[msg] = f"{m.group('proc') or '' if m else ''}{msg}"
    return [fmt.clip(fmt.plain(x), 300) for x in list(picked.values())[-n:]]


class _Bar:
    """What ``LLM.generate(use_tqdm=...)`` drives: the few parts of tqdm's interface it uses."""

    def __init__(self, console: Console, total: int, label: str):
        self.console, self.total, self.label = console, int(total or 0), label
        self.n = 0
        self.postfix = ""
        self.t0 = time.monotonic()

    @property
    def format_dict(self) -> dict:
        return {"elapsed": max(time.monotonic() - self.t0, 1e-9), "n": self.n, "total": self.total}

    def update(self, n: int = 1) -> None:
        self.n += int(n)
        self.console.redraw()

    def refresh(self) -> None:
        self.console.redraw()

    def close(self) -> None:
        self.console.redraw()

    def render(self) -> str:
        return f"{self.n}/{self.total} requests"


class Console:
    """``stages``: the labels of the stages, in order (numbered on screen); ``log_path``:
    where ``capture()`` sends vLLM's output."""

    def __init__(
        self,
        log_path: str | os.PathLike | None = None,
        *,
        verbose: bool = False,
        quiet: bool = False,
        stages: tuple[str, ...] = (),
    ):
        self.log_path = Path(log_path) if log_path is not None else None  # None: nothing to capture
        self.verbose, self.quiet = verbose, quiet
        self.stages = list(stages)
        self.tty = can_redraw(sys.stderr)
        self._out = sys.stdout
        self._err = sys.stderr
        self._saved: dict[int, int] = {}
        self._tee: threading.Thread | None = None
        self._lock = threading.Lock()
        self._stage: tuple[str, float] | None = None  # (label, start) while one runs
        self._status: Callable[[], str] | None = None  # extra text of the running stage
        self._bar: _Bar | None = None
        self._live: StageLine | None = None  # the running stage's line, on a terminal

    # -- capture ----------------------------------------------------------------------
    @contextmanager
    def capture(self) -> Iterator[Console]:
        """Capture for the block; when it fails, what the log says about why is shown."""
        from ..core.atomic_write import OutputError

        self.start()
        try:
            yield self
        except Exception as e:
            self._end_stage(False)
            if not isinstance(e, OutputError):  # (an output that cannot be written is not vLLM's doing)
                self.explain()
            raise
        finally:
            self.stop()

    def explain(self) -> None:
        """The lines of the log that say why vLLM failed, on the terminal."""
        lines = why(self.log_path) if self.log_path is not None else []
        if lines:
            self._line(f"xpu_profiler: {fmt.plain(str(self.log_path))} says:")
            for ln in lines:
                self._line(f"  {ln}")

    def start(self) -> None:
        """From now on fds 1 and 2 (this process's, and those its children inherit) go to the log."""
        from ..core.atomic_write import OutputError, reason

        if self.log_path is None:  # (quiet API use: nothing to capture into)
            return
        try:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            log_fd = os.open(self.log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
        except OSError as e:
            raise OutputError(self.log_path, reason(e)) from None
        _flush_std()
        try:
            for fd in (1, 2):
                self._saved[fd] = os.dup(fd)
            self._out = os.fdopen(os.dup(self._saved[1]), "w", buffering=1, encoding="utf-8", errors="replace")
            self._err = os.fdopen(os.dup(self._saved[2]), "w", buffering=1, encoding="utf-8", errors="replace")
            self.tty = can_redraw(self._err) and not self.verbose  # vLLM's lines would cut through a redrawn line
            target = log_fd
            if self.verbose:
                r, w = os.pipe()
                self._tee = threading.Thread(
                    target=_tee, args=(r, log_fd, self._saved[2]), daemon=True, name="xpu_profiler-vllm-log"
                )
                self._tee.start()
                target = w
            for fd in (1, 2):
                os.dup2(target, fd)
            if target != log_fd:
                os.close(target)
        except BaseException:
            self.stop()
            raise
        finally:
            if not self.verbose:
                os.close(log_fd)

    def stop(self) -> None:
        """The terminal's fds back on 1 and 2 (idempotent)."""
        self._end_stage(None)
        if not self._saved:
            return
        _flush_std()
        put_back_fds(self._saved)
        if self._tee is not None:
            self._tee.join(timeout=1.0)  # children still holding the pipe keep the copy running
        for s in (self._out, self._err):
            if s not in (sys.stdout, sys.stderr):
                s.flush()

    # -- what we show --------------------------------------------------------------------
    def say(self, msg: str) -> None:
        """One line of ours on the terminal (stderr)."""
        if not self.quiet:
            self._line(f"xpu_profiler: {fmt.plain(msg)}")

    def warn(self, msg: str) -> None:
        self._line(f"warning: {fmt.plain(msg)}")

    def echo(self, text: str = "") -> None:
        """Results: to the terminal's stdout (a running stage's line is taken off meanwhile)."""
        with self._lock:
            live = self._live
            if live is not None:
                live.stop()
            self._out.write(text + "\n")
            self._out.flush()
            if live is not None:
                live.start()

    def results(self, summary, written: dict) -> None:
        """The terminal summary, its warnings and the paths written (``-q``: the paths only)."""
        from ..terminal import summary as terminal
        from ..terminal.screen import screen_for

        if not self.quiet:
            self.echo(terminal.render(summary, top=10, screen=screen_for(self._out)))
            for w in summary.warnings:
                self.warn(fmt.plain(w))
            self.echo()
        for kind, path in written.items():
            self.echo(f"wrote {kind:8s} {fmt.plain(str(path))}")

    def _line(self, text: str) -> None:
        with self._lock:
            if self._live is not None:  # above the running stage's line
                self._live.print(text)
                return
            self._err.write(text + "\n")
            self._err.flush()

    @contextmanager
    def stage(self, label: str, status: Callable[[], str] | None = None) -> Iterator[None]:
        """One stage: shown while it runs (a timer on a terminal), then with its duration."""
        self._begin_stage(label, status)
        ok = False
        try:
            yield
            ok = True
        finally:
            self._end_stage(ok)

    def progress(self) -> Callable:
        """A ``use_tqdm`` callable for ``LLM.generate``: its request bar is the running stage's."""

        def factory(*args, **kwargs):
            if args:  # vLLM wraps an iterable (rendering prompts): nothing to show
                return args[0]
            self._bar = _Bar(self, kwargs.get("total", 0), kwargs.get("desc", ""))
            self.redraw()
            return self._bar

        return factory

    # -- drawing ----------------------------------------------------------------------------
    def _number(self, label: str) -> str:
        for i, name in enumerate(self.stages, 1):
            if label.startswith(name):
                return f"[{i}/{len(self.stages)}] "
        return ""

    def _head(self) -> str:
        label = self._stage[0] if self._stage else ""
        return f"  {self._number(label)}{label:<{LABEL_WIDTH}}"

    def _tail(self, running: bool = True) -> str:
        """After the stage's label (and its bar): the requests done, a live count, the time."""
        if self._stage is None:
            return ""
        parts = [self._bar.render()] if self._bar is not None else []
        if self._status is not None and running:  # (a live count, not a result)
            try:
                extra = self._status()
            except Exception:  # a status that cannot be read this time: show none
                extra = ""
            if extra:
                parts.append(extra)
        parts.append(f"{time.monotonic() - self._stage[1]:6.1f} s")
        return "  ".join(parts)

    def _begin_stage(self, label: str, status) -> None:
        self._end_stage(None)
        with self._lock:
            self._stage, self._status, self._bar = (label, time.monotonic()), status, None
            if self.quiet:
                return
            if self.tty:
                from ..terminal.progress import StageLine

                self._live = StageLine(self._err, self._head, self._tail)
                self._live.start()
            else:  # a log or a pipe: one line now, one at the end
                self._err.write(f"xpu_profiler: {self._number(label)}{label} ...\n")
                self._err.flush()

    def _end_stage(self, ok: bool | None) -> None:
        with self._lock:
            if self._stage is None:
                return
            text = f"{self._head()}  {self._tail(running=False)}"
            live, self._live = self._live, None
            if live is not None:
                live.stop()  # (erases its line)
            self._stage = None
            if not self.quiet and ok is not None:
                verdict = "done" if ok else "failed"
                if live is not None:
                    live.finish(text, verdict, ok)
                else:
                    self._err.write(f"xpu_profiler: {text.strip()}  {verdict}\n")
                    self._err.flush()
            self._status, self._bar = None, None

    def redraw(self) -> None:
        """Shows the request bar's count now (the line is redrawn a few times a second anyway)."""
        with self._lock:
            if self._live is not None:
                if self._bar is not None:
                    self._live.set(self._bar.n, self._bar.total or None)
                self._live.refresh()


def _flush_std() -> None:
    for s in (sys.stdout, sys.stderr):
        try:
            s.flush()
        except (OSError, ValueError):
            pass


def _tee(r: int, log_fd: int, term_fd: int) -> None:
    """Copy what vLLM writes into the pipe to the log and to the terminal, until every
    writer has closed it."""
    term = os.dup(term_fd)
    try:
        while True:
            chunk = os.read(r, 65536)
            if not chunk:
                break
            os.write(log_fd, chunk)
            try:
                os.write(term, chunk)
            except OSError:
                pass
    finally:
        for fd in (r, log_fd, term):
            os.close(fd)
