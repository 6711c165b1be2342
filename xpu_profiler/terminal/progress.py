"""Progress on a terminal, with rich: one line redrawn in place (rich's refresh thread, a few
times a second) until it stops, and lines printed above it meanwhile. Only for a terminal:
elsewhere the callers print one line per event instead.

``StageLine`` is the live command's running stage: what ``head()`` says (the stage), a bar
while a count with a total is known (``set``), what ``tail()`` says (the count, a live status,
the time so far). ``byte_bar`` is ``analyze``'s bar of the bytes read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from rich.console import RenderableType
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    ProgressColumn,
    Task,
    TimeRemainingColumn,
)
from rich.table import Column
from rich.text import Text

from .layout import BAD, GOOD, rich_console
from .screen import Screen, live_screen

BAR_WIDTH = 28
REFRESH_PER_S = 4
BAR: dict[str, Any] = {
    "bar_width": BAR_WIDTH,
    "style": "bright_black",
    "complete_style": "cyan",
    "finished_style": "green",
}


class _Call(ProgressColumn):
    """A column of literal text from a callable (nothing when it fails: the next refresh tries again)."""

    def __init__(self, fn: Callable[[], str]) -> None:
        super().__init__(table_column=Column(no_wrap=True, overflow="ellipsis"))
        self.fn = fn

    def render(self, task: Task) -> Text:
        try:
            return Text(self.fn())
        except Exception:
            return Text("")


class _CountBar(ProgressColumn):
    """The bar, only while the task has a total."""

    def __init__(self) -> None:
        super().__init__()
        self.bar = BarColumn(**BAR)

    def render(self, task: Task) -> RenderableType:
        return Text("") if task.total is None else self.bar.render(task)


def _progress(file: TextIO, screen: Screen, *columns: ProgressColumn | str) -> Progress:
    return Progress(
        *columns,
        console=rich_console(file, screen, live=True),
        transient=True,  # the caller prints the line that stays
        auto_refresh=True,
        refresh_per_second=REFRESH_PER_S,
        redirect_stdout=False,  # what others print (vLLM's logging) goes where it went
        redirect_stderr=False,
    )


class StageLine:
    """The running stage's line on the terminal ``file``, from ``start`` to ``stop``."""

    def __init__(self, file: TextIO, head: Callable[[], str], tail: Callable[[], str]) -> None:
        self._p = _progress(file, live_screen(file), _Call(head), _CountBar(), _Call(tail))
        self._task = self._p.add_task("", total=None)

    def start(self) -> None:
        self._p.start()

    def stop(self) -> None:
        """Stops drawing and erases the line."""
        self._p.stop()

    def set(self, done: int, total: int | None) -> None:
        self._p.update(self._task, completed=done, total=total)

    def refresh(self) -> None:
        self._p.refresh()

    def print(self, text: str) -> None:
        """A line above the running one (literal text)."""
        self._p.console.print(Text(text))

    def finish(self, text: str, verdict: str, ok: bool) -> None:
        """After ``stop``: the line that stays, its verdict styled."""
        self._p.console.print(Text.assemble(text, "  ", (verdict, GOOD if ok else BAD)))


@contextmanager
def byte_bar(file: TextIO, total: int, label: str) -> Iterator[Callable[[int], None]]:
    """A bar of ``total`` bytes on the terminal ``file``; yields the function to add bytes done."""
    p = _progress(
        file,
        live_screen(file),
        _Call(lambda: label),
        BarColumn(**BAR),
        DownloadColumn(),
        TimeRemainingColumn(),
    )
    task = p.add_task("", total=total)
    with p:
        yield lambda n: p.advance(task, n)
