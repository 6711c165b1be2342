"""Exporters: one module per output format, one registry.

Each exporter module (or package: ``html``) exposes ``NAME``, ``SUFFIXES`` (file suffixes it claims,
longest first) and ``write(profile, summary, path) -> Path``. ``summary`` is the
typed ``xpu_profiler.summary.Summary`` of the profile; exporters read it and never
run or import the analysis. An exporter with work that needs only the profile's events as
read (no attribution, no summary) may expose ``ahead(profile)`` and
``AHEAD_BYTES_PER_EVENT`` (its transient memory), and take the result back in
``write(..., ahead=)``: ``start_ahead`` runs it while the profile is attributed.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

#: the exporters, by format name, in the order they write (the module's ``NAME`` is its key).
#: Adding an exporter is a module (or package) and a row here.
EXPORTERS = {"perfetto": "chrome_trace", "json": "summary_json", "csv": "csv_table", "html": "html"}


def registry() -> dict[str, ModuleType]:
    """The exporter modules by format name, imported on first use."""
    return {name: importlib.import_module(f"{__name__}.{mod}") for name, mod in EXPORTERS.items()}


def by_suffix(path: str | Path) -> ModuleType | None:
    """The exporter whose suffix the file name ends with (`.json.gz` → perfetto)."""
    name = str(path).lower()
    best = None
    for mod in registry().values():
        for suf in mod.SUFFIXES:
            if name.endswith(suf) and (best is None or len(suf) > best[0]):
                best = (len(suf), mod)
    return best[1] if best else None


class Ahead:
    """The exporters' work done ahead, in a thread: ``join`` it, then ``get(fmt)`` the result to
    hand to that exporter's ``write`` (None: nothing done, or it failed)."""

    def __init__(self, work: dict[str, Callable[[Any], Any]], profile: Any):
        self._done: dict[str, Any] = {}

        def run() -> None:
            for fmt, fn in work.items():
                try:
                    self._done[fmt] = fn(profile)
                except Exception:  # noqa: BLE001 - redone, and reported, by the exporter itself
                    pass

        self._thread = threading.Thread(target=run, name="xpu_profiler-export-ahead", daemon=True)
        self._thread.start()

    def join(self) -> None:
        self._thread.join()

    def get(self, fmt: str) -> Any:
        return None if self._thread.is_alive() else self._done.get(fmt)


def start_ahead(profile, formats: Iterable[str], can_spare: Callable[[int], bool]) -> Ahead | None:
    """The ``ahead`` work of the exporters of ``formats``, started in a thread (to be
    joined before they write), when ``can_spare`` the memory it takes beside the attribution's.
    A failure there is left to the exporter, which does the work again and reports it."""
    known = registry()
    mods = {f: known[f] for f in formats if f in known and hasattr(known[f], "ahead")}
    extra = sum(m.AHEAD_BYTES_PER_EVENT for m in mods.values()) * len(profile.events)
    if not mods or not can_spare(extra):
        return None
    return Ahead({f: m.ahead for f, m in mods.items()}, profile)
