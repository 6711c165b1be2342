"""The readers' registry: which reader takes a file, and a directory's files as inputs."""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType

from ..core import compression
from ..core.errors import TraceError
from ..core.records import RECORD_SUFFIX
from ..core.regular import not_regular, require_regular
from . import own_outputs, sqlite_db
from .base import DroppedInput, rank_from_name
from .content import NOT_UTF8, compression_of, read_bytes, read_head, text_encoding

#: the readers, in the order a file is offered to them (more specific formats first:
#: XProfiler before Kineto, both Chrome JSON). Adding a reader is a module and a row here.
READERS = (
    "vllm_records",
    "bundle",
    "nsys",
    "rocprof.rocpd",
    "kunlun.xprofiler",
    "rocprof",
    "rocprof.csv_output",
    "kineto",
    "kunlun.xpurt_log",
)


def registry() -> list[ModuleType]:
    """The ordered reader modules, imported on first use (``import xpu_profiler`` stays cheap)."""
    return [importlib.import_module(f"{__package__}.{name}") for name in READERS]


def reader_named(name: str) -> ModuleType | None:
    return next((m for m in registry() if m.NAME == name), None)


def find_reader(path: Path) -> ModuleType | None:
    head = read_head(path)
    for mod in registry():
        try:
            if mod.sniff(path, head):
                return mod
        except Exception:
            continue
    return None


def _claims(directory: Path) -> tuple[list[tuple[Path, ModuleType]], set[Path]]:
    """The directory-level readers that claim ``directory``, and the files they read."""
    units, claimed = [], set()
    for mod in registry():
        claim = getattr(mod, "claim", None)
        files = claim(directory) if claim is not None else None
        if files:
            units.append((directory, mod))
            claimed.update(files)
    return units, claimed


def expand(
    paths: Iterable[str | Path],
    dropped: list[DroppedInput] | None = None,
    in_dirs: set[Path] | None = None,
    skipped: list[tuple[Path, str]] | None = None,
) -> list[tuple[Path, ModuleType]]:
    """Resolve files and directories into (file, reader) pairs.

    A directory contributes itself as one input when a directory-level reader claims
    it (a server's record directory), and every other file below it that some reader
    sniffs (a vLLM profiler directory, a directory of per-rank logs); files nobody
    claims are skipped there. A file named on the command line must be readable.

    ``dropped``: when a list, the files of a directory that look like its traces (a rank
    in the name, or the same kind of name as a trace found beside them) but are no
    readable trace (empty, garbage, a corrupt compressed stream, an archive) go there with the reason (``DroppedInput``)
    instead of vanishing. ``in_dirs``: when a set, the files found in directories are added to it.
    A trace we wrote there ourselves (``own_outputs``) is left out when the directory
    holds other traces; ``skipped``: when a list, those go there with the reason.
    """
    out: list[tuple[Path, ModuleType]] = []
    for raw in paths:
        p = Path(raw)
        if not p.exists():
            raise TraceError(p, "no such file or directory")
        if p.is_dir():
            found, unread = _scan_directory(p)
            ours = own_outputs.our_files([f for f, _ in found] + unread)
            unread = [f for f in unread if f not in ours]  # our summary, report, table: no traces
            if ours and any(f not in ours for f, _ in found):
                if skipped is not None:
                    skipped.extend((f, own_outputs.REASON) for f, _ in found if f in ours)
                found = [x for x in found if x[0] not in ours]
            unread = _not_said_by_units(unread, found)
            if dropped is not None and found:
                kinds = _kinds(found)
                dropped.extend(DroppedInput(str(f), why_unreadable(f)) for f in unread if _looks_like_sibling(f, kinds))
            if in_dirs is not None:
                in_dirs.update(f for f, _ in found)
            # Our bundle beside traces (in any folder below) is an output of ours, never read with
            # them (its events would count again, or hide the traces): the traces are read
            bundles = [x for x in found if x[1].NAME == "bundle"]
            if bundles and len(bundles) < len(found):
                if skipped is not None:
                    skipped.extend((f, own_outputs.BUNDLE_REASON) for f, _ in bundles)
                found = [x for x in found if x[1].NAME != "bundle"]
            if not found:
                first = f" (first: {unread[0].name}: {why_unreadable(unread[0])})" if unread else ""
                raise TraceError(p, f"directory holds no trace or log file of a supported format{first}")
            out.extend(found)
        else:
            st = require_regular(p, "pass the trace file itself")
            if st.st_size == 0:
                raise TraceError(p, "empty file")
            mod = find_reader(p)
            packed = compression_of(p)
            if mod is None and not read_head(p).strip() and not packed:
                raise TraceError(p, "empty file (only whitespace)")
            if mod is None:
                if packed and not read_bytes(p).strip():  # raises for a broken compressed stream
                    raise TraceError(p, f"empty file (nothing inside the {packed})")
                archive = compression.archive_of(read_head(p, 512))
                if archive:
                    raise TraceError(p, f"{archive}: extract it and pass the directory it holds")
                encoding = text_encoding(read_head(p, 4))
                if encoding:
                    raise TraceError(p, NOT_UTF8.format(encoding))
                if sqlite_db.is_sqlite(read_head(p, 16)):
                    raise TraceError(p, sqlite_db.why_unreadable(p))
                raise TraceError(p, f"not a supported trace or log format ({EXPECTED})")
            out.append((p, mod))
    return _settled(_one_per_unit(out, in_dirs), skipped)


def _settled(
    found: list[tuple[Path, ModuleType]], skipped: list[tuple[Path, str]] | None
) -> list[tuple[Path, ModuleType]]:
    """The inputs after each reader's ``settle`` hook, which sees them all (rocprofv3's: one
    process written in several formats is read once); what a hook leaves out goes to ``skipped``."""
    for mod in registry():
        settle = getattr(mod, "settle", None)
        if settle is not None:
            found = settle(found, skipped)
    return found


def _not_said_by_units(unread: list[Path], found: list[tuple[Path, ModuleType]]) -> list[Path]:
    """``unread`` without the files a found input's reader reads with its unit and says what
    became of (a broken file of a rocprofv3 CSV run is said once, by its reader)."""
    units = {(m.unit(f), m) for f, m in found if getattr(m, "says_of", None)}
    if not units:
        return unread
    return [f for f in unread if not any(m.unit(f) == u and m.says_of(f) for u, m in units)]


def with_units(paths: Iterable[str | Path | None]) -> list[str | Path | None]:
    """``paths`` and the input each file stands for where its reader reads it with others (the
    directory of rocprofv3's CSV files): every file an analysis reads, for the outputs' check."""
    out = list(paths)
    for p in list(out):
        if p is None or not Path(p).is_file():
            continue
        mod = find_reader(Path(p))
        unit = getattr(mod, "unit", None)
        if unit is not None:
            out.append(unit(Path(p)))
    return out


def _one_per_unit(found: list[tuple[Path, ModuleType]], in_dirs: set[Path] | None) -> list[tuple[Path, ModuleType]]:
    """A reader that reads several files as one input (its ``unit``: rocprofv3's CSV files of one
    directory) gets that input once, whichever of its files were found or named."""
    out, seen = [], set()
    for path, mod in found:
        unit = getattr(mod, "unit", None)
        if unit is not None:
            whole = unit(path)
            key = (whole.resolve(), mod.NAME)  # (one directory reached by two paths is one input)
            if key in seen:
                continue
            seen.add(key)
            if in_dirs is not None and path in in_dirs:
                in_dirs.add(whole)
            path = whole
        out.append((path, mod))
    return out


def _scan_directory(p: Path) -> tuple[list[tuple[Path, ModuleType]], list[Path]]:
    """(the directory's inputs with their readers: its claim, the files some reader sniffs;
    the other files below it). Hidden files are left alone."""
    found, claimed = _claims(p)
    unread = []
    for f in sorted(x for x in p.rglob("*") if not x.is_dir()):
        if f.name.startswith(".") or f in claimed:
            continue
        if not f.is_file():  # a broken link, a FIFO, a device: never opened (a FIFO would wait)
            unread.append(f)
            continue
        mod = find_reader(f)
        if mod is not None:
            found.append((f, mod))
        else:
            unread.append(f)
    return found, unread


#: what the one line for an unreadable file says was expected
EXPECTED = (
    "expected a Kineto/Chrome trace JSON, an Nsight Systems export (.sqlite) or report (.nsys-rep), "
    "a rocprofv3 JSON, CSV or rocpd database, an XProfiler trace, an [XPURT_PROF] log or an xpu_profiler bundle"
)


def _kind_of_name(path: Path) -> str:
    """`rank_3.pt.trace.json.gz` → `.pt.trace.json.gz`: what kind of file its name says."""
    name = path.name.lower()
    return name[name.find(".") :] if "." in name else ""


#: endings of the names traces and logs have (a file with a rank in its name but another
#: ending, vLLM's `rank0.profiler_out.txt` table, is no trace of that rank)
TRACE_ENDINGS = (".json", ".gz", ".xz", ".bz2", ".zst", ".log", ".npz", ".jsonl", ".tar", ".tgz", ".zip")


def _kinds(found: list[tuple[Path, ModuleType]]) -> set[str]:
    """The kinds of name (``_kind_of_name``) of the traces found, but those a unit's reader reads
    and speaks for (another ``.csv`` beside rocprofv3's CSV files is no file of its run)."""
    return {_kind_of_name(f) for f, m in found if not getattr(m, "says_of", None) and f.is_file()}


def _looks_like_sibling(path: Path, kinds: set[str]) -> bool:
    kind = _kind_of_name(path)
    if (kind != "" and kind in kinds) or path.name.endswith(RECORD_SUFFIX):  # (one that is no regular file)
        return True
    return rank_from_name(path) is not None and path.name.lower().endswith(TRACE_ENDINGS)


def why_unreadable(path: Path) -> str:
    """Why no reader took a file: one short reason."""
    if path.is_symlink() and not path.exists():
        return f"a broken link (to {os.readlink(path)}, which does not exist)"
    try:
        why = not_regular(path)
        if why:
            return why
        if path.stat().st_size == 0:
            return "empty file"
        packed = compression_of(path)
        if packed and not read_bytes(path).strip():
            return f"empty file (nothing inside the {packed})"
    except TraceError as e:
        return e.problem
    except OSError as e:
        return f"unreadable ({e.strerror})"
    if sqlite_db.is_sqlite(read_head(path, 16)):
        return sqlite_db.why_unreadable(path)
    archive = compression.archive_of(read_head(path, 512))
    if archive:
        return f"{archive}: extract it and pass the directory it holds"
    return "not a supported trace or log format"
