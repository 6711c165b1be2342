"""Numbers, times, byte sizes and shares as text: the one set of formatters.

The terminal and the HTML report format alike and differ only in style, passed as
a ``Style``: ``TERMINAL`` (plain ASCII ``us``, two decimals, ``-`` for unknown) or
``REPORT`` (``µs``, three significant digits, ``–`` for unknown).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any


def is_decimal(s: str) -> bool:
    """Whether ``s`` is a non-negative integer in ASCII digits: ``str.isdigit`` also takes
    ``²`` and other characters that ``int`` refuses (a trace's numeric string, an environment
    variable)."""
    return s.isascii() and s.isdigit()


@dataclass(frozen=True)
class Style:
    micro: str  # the µs unit's spelling
    missing: str  # what an unknown value shows
    significant: int = 0  # significant digits below 100; 0: two decimals everywhere


TERMINAL = Style(micro="us", missing="-")
REPORT = Style(micro="µs", missing="–", significant=3)


def number(x: Any) -> float | None:
    """A finite float, or None for missing/NaN/inf values (and for booleans)."""
    if x is None or isinstance(x, bool):
        return None
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _scaled(x: float, unit: str, style: Style) -> str:
    if not style.significant:
        return f"{x:.2f} {unit}"
    return f"{x:.{style.significant}g} {unit}" if abs(x) < 100 else f"{x:,.0f} {unit}"


def ns(value: Any, style: Style = TERMINAL) -> str:
    """Nanoseconds in the largest unit that fits: 1234567 → "1.23 ms"."""
    v = number(value)
    if v is None:
        return style.missing
    for unit, div in (("s", 1e9), ("ms", 1e6), (style.micro, 1e3)):
        if abs(v) >= div:
            return _scaled(v / div, unit, style)
    return f"{v:.0f} ns"


def size(value: Any, style: Style = REPORT) -> str:
    """Bytes in binary units: 3758096384 → "3.5 GiB"."""
    v = number(value)
    if v is None:
        return style.missing
    for unit, div in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(v) >= div:
            x = v / div
            return f"{x:.3g} {unit}" if abs(x) < 1000 else f"{x:,.0f} {unit}"
    return f"{v:.0f} B"


def count(value: Any, style: Style = REPORT, digits: int = 3) -> str:
    """Thousands grouped, small values with ``digits`` significant digits."""
    v = number(value)
    if v is None:
        return style.missing
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.{digits}g}"


def pct(share: Any, style: Style = REPORT, scale: float = 100.0) -> str:
    """A share (0..1, or a percentage with ``scale=1``) as "12.3%"."""
    v = number(share)
    return style.missing if v is None else f"{v * scale:.1f}%"


# C0 and C1 control characters, DEL, the Unicode line/paragraph separators, and the
# bidirectional marks, embeddings, overrides and isolates (text shown in another order
# than it is stored: "Trojan Source")
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]")


def clip(text: str, width: int) -> str:
    """At most ``width`` characters: the start of a longer text, and "…"."""
    return text if len(text) <= width else text[: width - 1] + "…"


def safe_text(text: str) -> str:
    """``text`` as valid UTF-8 can hold it: a lone surrogate (a file name's byte that is no
    UTF-8, as Python decodes it; a ``\\udcff`` escape in a trace) written as its escape."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def plain(text: str) -> str:
    """Text from a trace (or a path) made safe for a terminal: control characters (escape
    sequences, carriage returns, newlines, NUL, BEL) and bidirectional overrides shown as
    ``\\x1b``/``\\u202e``-style escapes instead of acting. The one function for it: every
    table and message that shows a name or a path goes through it."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def place(groups: dict[str, int], sizes: dict[str, int], sep: str = " ") -> str:
    """A rank's place in the parallel layout, the dimensions larger than one: "dp0 tp1"."""
    return sep.join(f"{d}{i}" for d, i in groups.items() if sizes.get(d, 1) > 1)
