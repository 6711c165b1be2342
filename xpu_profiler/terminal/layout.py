"""The one place terminal text is laid out, with rich: tables that fit the width, headings and
verdicts styled on a terminal, plain text everywhere else.

Sections build lists of blocks: ``str`` lines, styled lines (``line``, ``heading``) and tables
(``table``); ``to_text`` lays them out for a ``Screen``:

- on a terminal (``screen.screen_for``): its width, colours (none with ``NO_COLOR`` or
  ``TERM=dumb``), a line under each table's header;
  a long line wraps with its continuation indented; a table wider than the terminal narrows
  its text columns (names, sources; their cells end in "…"), keeps numbers whole and each row
  on one line, and when that is not enough folds into parts (the first column, then the next
  columns that fit), one under the other;
- anywhere else (a pipe, a file): no ANSI codes, no box-drawing
  characters, each line whole at its full width, the columns lined up with spaces and the
  header underlined with ``-``: what grep, a diff of two outputs and a log file want.

Every line and cell is literal text (``rich.text.Text``, never markup), so a name from a trace
(escaped through ``fmt.plain`` beforehand) shows ``[bold]`` as it is.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence
from typing import TextIO, TypeAlias

from rich import box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, JustifyMethod, RenderResult
from rich.measure import Measurement
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from .screen import FALLBACK_WIDTH, PLAIN, Screen

Cell: TypeAlias = str | Text

#: a table on a terminal: a solid line under the header, nothing between the columns but spaces
TERMINAL_BOX = box.SIMPLE_HEAD
#: the styles (shown on a terminal only)
HEADING = "bold"
BAD = "bold red"
WARN = "bold yellow"
GOOD = "green"
NAME = "cyan"
DIM = "dim"
VERDICT_STYLES = {"host": WARN, "communication": "bold magenta", "device": GOOD}
TEXT_MIN = 10  # a text column narrowed to fit keeps at least this many columns (or its own width)
GAP = 2  # columns between two table columns (a padding and the divider)
HANG = 2  # a wrapped line's continuation: this much deeper than its first line


def rich_console(file: TextIO, screen: Screen, width: int | None = None, live: bool = False) -> Console:
    """A rich console on ``file`` that does what ``screen`` says and nothing on its own: no
    markup, emoji or highlighting of strings, no colour off a terminal, whatever the
    environment (``FORCE_COLOR``, ``COLUMNS``) says. ``live``: it redraws lines in place
    (a terminal, coloured or not)."""
    return Console(
        file=file,
        width=width or screen.width or FALLBACK_WIDTH,
        height=25,
        force_terminal=screen.styled or live,
        force_interactive=screen.styled or live,
        color_system="auto" if screen.styled else None,
        no_color=not screen.styled,
        markup=False,
        emoji=False,
        highlight=False,
        legacy_windows=False,
        force_jupyter=False,
        soft_wrap=False,
    )


class Hanging:
    """A line that, too long for the screen, wraps with its continuation lines indented
    ``indent + hang`` columns (the first one ``indent``)."""

    def __init__(self, text: Text, indent: int = 0, hang: int = HANG) -> None:
        self.text, self.indent, self.hang = text, indent, hang

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        lines = [self.text]
        if self.text.cell_len + self.indent > width:  # the first line as wide as it can be, the rest hung
            first = self.text.wrap(console, max(width - self.indent, 1), overflow="fold")[0]
            rest = self.text[len(first.plain) :]
            rest = rest[len(rest.plain) - len(rest.plain.lstrip(" ")) :]
            lines = [first, *rest.wrap(console, max(width - self.indent - self.hang, 1), overflow="fold")]
        for i, ln in enumerate(lines):
            yield Segment(" " * (self.indent + (self.hang if i else 0)))
            yield from ln.render(console)
            yield Segment.line()

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        m = Measurement.get(console, options, self.text)
        return Measurement(m.minimum + self.indent + self.hang, m.maximum + self.indent)


def line(*parts: str | tuple[str, str]) -> Text:
    """One line from literal parts, each plain (``str``) or styled (``(text, style)``)."""
    return Text.assemble(*parts)


def hanging(text: Text | str, hang: int, indent: int = 0) -> Hanging:
    """A line ``indent`` columns in whose continuation lines, when it wraps, start ``hang``
    columns further."""
    return Hanging(Text(text) if isinstance(text, str) else text, indent, hang)


def heading(text: str) -> Text:
    return Text(text, style=HEADING)


def titled(text: str) -> list[Block]:
    """A blank line, then a section's heading."""
    return ["", heading(text)]


def cell(text: str, style: str = "") -> Text:
    """A table cell styled on a terminal."""
    return Text(text, style=style, no_wrap=True, overflow="ellipsis")


class Grid:
    """A table's headers and cells, laid out for a screen when it is shown (``tables``)."""

    def __init__(self, headers: Sequence[str], rows: Sequence[Sequence[Text]], align: str) -> None:
        self.headers, self.cells, self.align = list(headers), [list(r) for r in rows], align
        n = len(headers)
        self.natural = [max([cell_len(h)] + [r[i].cell_len for r in rows]) for i, h in enumerate(headers)]
        word = [max(map(cell_len, h.split()), default=1) for h in headers]
        widest = [max([r[i].cell_len for r in rows], default=0) for i in range(n)]
        # numbers stay whole (their header may fold); text columns give up width down to TEXT_MIN
        self.least = [
            max(widest[i], word[i]) if a == "r" else min(self.natural[i], max(TEXT_MIN, word[i]))
            for i, a in enumerate(align)
        ]

    def _least(self, cols: Sequence[int]) -> int:
        return sum(self.least[i] for i in cols) + GAP * (len(cols) - 1)

    def tables(self, screen: Screen) -> list[Table]:
        """The table laid out for ``screen``. Wider than the screen: the widest text columns
        narrowed first (their cells end in "…"), numbers whole; still too wide: folded into
        tables of the first column and the next columns that fit, one under the other; a
        single column too wide even so is cut at the screen's edge."""
        n, width = len(self.natural), screen.width
        groups = [list(range(n))]
        if width is not None and n > 1 and self._least(range(n)) > width:
            groups, cur = [], [0]
            for i in range(1, n):
                if len(cur) > 1 and self._least([*cur, i]) > width:
                    groups.append(cur)
                    cur = [0]
                cur.append(i)
            groups.append(cur)
        return [self._table(g, self._widths(g, width), screen) for g in groups]

    def _widths(self, cols: list[int], width: int | None) -> list[int]:
        widths = [self.natural[i] for i in cols]
        room = (width or 0) - GAP * (len(cols) - 1)
        if width is None or sum(widths) <= room:
            return widths
        least = [self.least[i] for i in cols]
        widths = [lo if self.align[i] == "r" else w for i, w, lo in zip(cols, widths, least)]
        while sum(widths) > room:  # the widest text columns down to the next widest, or their least
            over = [j for j in range(len(cols)) if widths[j] > least[j]]
            if not over:
                break
            top = max(widths[j] for j in over)
            widest = [j for j in over if widths[j] == top]
            floor = max([least[j] for j in widest] + [widths[j] for j in over if widths[j] < top])
            cut = min(top - floor, -(-(sum(widths) - room) // len(widest)))
            for j in widest:
                widths[j] -= max(cut, 1)
        return widths

    def _table(self, cols: list[int], widths: list[int], screen: Screen) -> Table:
        """On a terminal a line under the header; elsewhere a row of dashes per column under it."""
        total = sum(widths) + GAP * (len(cols) - 1)
        t = Table(
            box=TERMINAL_BOX if screen.styled else None,
            show_edge=False,
            pad_edge=False,
            padding=(0, 1 if screen.styled else GAP, 0, 0),  # (the box's divider is the other column)
            header_style=HEADING,
            highlight=False,
            width=total if screen.width is not None and total > screen.width else None,  # laid out whole, then cut
        )
        for i, w in zip(cols, widths):
            justify: JustifyMethod = "left" if self.align[i] == "l" else "right"
            t.add_column(Text(self.headers[i], overflow="fold"), justify=justify, overflow="ellipsis", width=w)
        if not screen.styled:
            t.add_row(*(Text("-" * w) for w in widths))
        for r in self.cells:
            t.add_row(*(r[i] for i in cols))
        return t


def table(headers: Sequence[str], rows: Iterable[Sequence[Cell]], align: str) -> list[Block]:
    """A table (as a one-block list, to add to a section's lines): ``align`` has an ``l`` (text:
    shortened with "…" when the screen is too narrow) or ``r`` (a number: kept whole) per column.
    A cell may be a ``cell`` to style it."""
    cells = [[c if isinstance(c, Text) else cell(c) for c in r] for r in rows]
    return [Grid(headers, cells, align)]


Block: TypeAlias = str | Text | Grid | Hanging


def _indented(b: str | Text) -> Hanging:
    t = Text(b) if isinstance(b, str) else b
    n = len(t.plain) - len(t.plain.lstrip(" "))
    return Hanging(t[n:], n)


def to_text(blocks: Iterable[Block], screen: Screen = PLAIN) -> str:
    """The blocks as text for ``screen`` (ANSI styles only when ``screen.styled``)."""
    items: list[Table | Hanging | str] = []
    for b in blocks:
        if isinstance(b, Grid):
            parts = b.tables(screen)
            items += [parts[0]] + [x for p in parts[1:] for x in ("", p)]
        else:
            items.append(_indented(b) if isinstance(b, (str, Text)) else b)
    buf = io.StringIO()
    width = screen.width
    if width is None:  # each line at its full width: the widest block's
        probe = rich_console(io.StringIO(), screen, width=1 << 16)
        width = max((Measurement.get(probe, probe.options, it).maximum for it in items), default=1)
    con = rich_console(buf, screen, width=max(width, 1))
    for it in items:
        con.print(Text(it) if isinstance(it, str) else it)
    text = buf.getvalue()
    if not screen.styled:
        text = "\n".join(ln.rstrip() for ln in text.splitlines())
    return text.rstrip("\n")
