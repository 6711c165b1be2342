"""Where terminal text goes, decided once per stream (no rich here: this is cheap to import).

A ``Screen`` is a width (None: no limit) and whether to style (colours, box lines):

- a terminal (``screen_for``): its width (``COLUMNS``, else the real one), styled unless
  ``NO_COLOR`` is set or ``TERM`` is dumb;
- anything else (a pipe, a file, a test's runner): no width limit, plain.

A line redrawn in place (a progress line) needs a terminal that can do it (``can_redraw``).
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass

from ..core.fmt import is_decimal

FALLBACK_WIDTH = 80


@dataclass(frozen=True)
class Screen:
    """``width`` in columns (None: no limit, each line whole) and ``styled`` (colours, box lines)."""

    width: int | None = None
    styled: bool = False


PLAIN = Screen()


def _isatty(stream: object) -> bool:
    try:
        return bool(getattr(stream, "isatty", lambda: False)())
    except (ValueError, OSError):  # a closed stream
        return False


def _dumb() -> bool:
    return os.environ.get("TERM", "").lower() in ("dumb", "unknown")


def _no_color() -> bool:
    return bool(os.environ.get("NO_COLOR"))


def terminal_width(stream: object) -> int:
    """``COLUMNS`` when set, else the width of the terminal ``stream`` writes to."""
    cols = os.environ.get("COLUMNS", "")
    if is_decimal(cols) and int(cols) > 0:
        return int(cols)
    try:
        return os.get_terminal_size(stream.fileno()).columns or FALLBACK_WIDTH  # type: ignore[attr-defined]
    except (AttributeError, ValueError, OSError, io.UnsupportedOperation):
        return FALLBACK_WIDTH


def screen_for(stream: object) -> Screen:
    """The screen of text written to ``stream``."""
    if not _isatty(stream):
        return PLAIN
    return Screen(terminal_width(stream), not _no_color() and not _dumb())


def can_redraw(stream: object) -> bool:
    """A terminal that can redraw a line in place (not ``TERM=dumb``)."""
    return _isatty(stream) and not _dumb()


def live_screen(stream: object) -> Screen:
    """The screen of a line redrawn on the terminal ``stream``: its width, colours unless ``NO_COLOR``."""
    return Screen(terminal_width(stream), not _no_color())
