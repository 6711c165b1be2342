"""Readers: one module (or package: ``kineto``) per input format, chosen by sniffing the content.

Each reader module exposes:

- ``NAME``: short format name shown to users;
- ``sniff(path, head) -> bool``: True when ``head`` (the first bytes of the
  decompressed file) looks like this format; must be cheap and never raise;
- ``read(path, options) -> Profile``: load the file; raise ``TraceError`` for a
  file that is broken, and ``profile.warn()`` for events that are merely odd.

A reader of inputs that are a whole directory (a server's record directory) also has

- ``claim(directory) -> list[Path] | None``: the files below ``directory`` it reads
  together, or None; ``read(directory, options)`` then reads them as one input, and
  no reader sniffs those files one by one.

``registry()`` is the ordered registry: a directory is first offered to each reader
with a ``claim``; the first reader whose ``sniff`` says yes reads a file, so more
specific formats come first.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Iterable

from ..errors import TraceError
from ..profile import Profile
from . import own_outputs
from .content import ProgressFn, is_gzip, read_bytes, read_head


@dataclass
class ReadOptions:
    rank: int | None = None          # force the rank of a single-rank file
    xpu_gen: int | None = None       # Kunlun generation for XPURT_PROF logs (1, 2, 3)
    progress: ProgressFn | None = None
    extra: dict = field(default_factory=dict)


RANK_IN_NAME = r"rank[_\-.]?(\d+)"  # rank_3, rank-3, rank.3, rank3
_RANK_IN_NAME = re.compile(RANK_IN_NAME, re.IGNORECASE)


def rank_from_name(path: Path) -> int | None:
    """`rank_3.log`, `rank-3/…`, `…_rank3.pt.trace.json` → 3: the file's name says its rank."""
    m = _RANK_IN_NAME.search(path.name) or _RANK_IN_NAME.search(path.parent.name)
    return int(m.group(1)) if m else None


def resolve_rank(path: Path, options: ReadOptions, declared: int | None = None) -> int | None:
    """The rank of a one-rank file: what the file itself declares, else what its name says,
    else ``--rank`` (for a file that says neither); None when nothing does."""
    for rank in (declared, rank_from_name(path), options.rank):
        if rank is not None:
            return int(rank)
    return None


# -- what a Chrome trace JSON looks like from its first bytes (Kineto and XProfiler) --

CHROME_KEYS = re.compile(rb'"(traceEvents|ph)"\s*:')
#: top-level keys only torch.profiler (Kineto) writes
KINETO_TOP_KEYS = (b'"schemaVersion"', b'"deviceProperties"', b'"distributedInfo"')
#: anything near the top of a file that says Kineto wrote it
KINETO_MARKERS = KINETO_TOP_KEYS + (b'"cpu_op"', b'"baseTimeNanoseconds"', b'"python_function"', b'"cuda_runtime"')


def is_json_document(head: bytes) -> bool:
    return head.lstrip()[:1] in (b"{", b"[")


def is_chrome_json(head: bytes) -> bool:
    """A JSON document with Chrome-trace keys (``traceEvents``, or events with ``ph``)."""
    return is_json_document(head) and bool(CHROME_KEYS.search(head))


def looks_like_kineto(head: bytes) -> bool:
    """Chrome trace JSON, or a JSON object with Kineto's own top-level keys."""
    return is_chrome_json(head) or (is_json_document(head) and any(m in head for m in KINETO_TOP_KEYS))


def has_kineto_markers(head: bytes) -> bool:
    return any(m in head for m in KINETO_MARKERS)


def registry() -> list[ModuleType]:
    """The ordered readers. Imported lazily so that `import xpu_profiler` stays cheap."""
    from . import bundle, kineto, vllm_records, xprofiler, xpurt_log

    # XProfiler before Kineto: both are Chrome JSON
    return [vllm_records, bundle, xprofiler, kineto, xpurt_log]


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


def expand(paths: Iterable[str | Path], dropped: list[tuple[Path, str]] | None = None,
           in_dirs: set[Path] | None = None,
           skipped: list[tuple[Path, str]] | None = None) -> list[tuple[Path, ModuleType]]:
    """Resolve files and directories into (file, reader) pairs.

    A directory contributes itself as one input when a directory-level reader claims
    it (a server's record directory), and every other file below it that some reader
    sniffs (a vLLM profiler directory, a directory of per-rank logs); files nobody
    claims are skipped there. A file named on the command line must be readable.

    ``dropped``: when a list, the files of a directory that look like its traces (a rank
    in the name, or the same kind of name as a trace found beside them) but are no
    readable trace (empty, garbage, corrupt gzip) go there with the reason, instead of
    vanishing. ``in_dirs``: when a set, the files found in directories are added to it.
    A trace we wrote there ourselves (``own_outputs``) is left out when the directory
    holds other traces; ``skipped``: when a list, those go there with the reason.
    """
    out: list[tuple[Path, ModuleType]] = []
    for raw in paths:
        p = Path(raw)
        if not p.exists():
            raise TraceError(p, "no such file or directory")
        if p.is_dir():
            found, claimed = _claims(p)
            unread = []
            for f in sorted(x for x in p.rglob("*") if x.is_file()):
                if f.name.startswith(".") or f in claimed:
                    continue
                mod = find_reader(f)
                if mod is not None:
                    found.append((f, mod))
                else:
                    unread.append(f)
            ours = own_outputs.our_files([f for f, _ in found] + unread)
            unread = [f for f in unread if f not in ours]  # our summary, report, table: no traces
            if ours and any(f not in ours for f, _ in found):
                if skipped is not None:
                    skipped.extend((f, own_outputs.REASON) for f, _ in found if f in ours)
                found = [x for x in found if x[0] not in ours]
            if dropped is not None and found:
                dropped.extend((f, why_unreadable(f)) for f in unread if _looks_like_sibling(f, found))
            if in_dirs is not None:
                in_dirs.update(f for f, _ in found)
            # A directory holding our own bundle next to the trace we exported from it:
            # the bundle already holds everything, so read only it.
            bundles = [x for x in found if x[1].NAME == "bundle"]
            if bundles:
                found = bundles
            if not found:
                first = f" (first: {unread[0].name}: {why_unreadable(unread[0])})" if unread else ""
                raise TraceError(p, f"directory holds no trace or log file of a supported format{first}")
            out.extend(found)
        else:
            if p.stat().st_size == 0:
                raise TraceError(p, "empty file")
            mod = find_reader(p)
            if mod is None and not read_head(p).strip() and not is_gzip(p):
                raise TraceError(p, "empty file (only whitespace)")
            if mod is None:
                if is_gzip(p) and not read_bytes(p).strip():  # raises for a broken compressed stream
                    raise TraceError(p, "empty file (nothing inside the gzip)")
                raise TraceError(p, "not a supported trace or log format "
                                    "(expected a Kineto/Chrome trace JSON, an XProfiler trace, "
                                    "an [XPURT_PROF] log or an xpu_profiler bundle)")
            out.append((p, mod))
    return out


def _kind_of_name(path: Path) -> str:
    """`rank_3.pt.trace.json.gz` → `.pt.trace.json.gz`: what kind of file its name says."""
    name = path.name.lower()
    return name[name.find("."):] if "." in name else ""


#: endings of the names traces and logs have (a file with a rank in its name but another
#: ending, vLLM's `rank0.profiler_out.txt` table, is no trace of that rank)
TRACE_ENDINGS = (".json", ".json.gz", ".gz", ".log", ".npz", ".jsonl")


def _looks_like_sibling(path: Path, found: list[tuple[Path, ModuleType]]) -> bool:
    kinds = {_kind_of_name(f) for f, _ in found if f.is_file()}
    kind = _kind_of_name(path)
    if kind != "" and kind in kinds:
        return True
    return rank_from_name(path) is not None and path.name.lower().endswith(TRACE_ENDINGS)


def why_unreadable(path: Path) -> str:
    """Why no reader took a file: one short reason."""
    try:
        if path.stat().st_size == 0:
            return "empty file"
        if is_gzip(path) and not read_bytes(path).strip():
            return "empty file (nothing inside the gzip)"
    except TraceError as e:
        return e.problem
    except OSError as e:
        return f"unreadable ({e.strerror})"
    return "not a supported trace or log format"


def load(paths: Iterable[str | Path], options: ReadOptions | None = None, engine: str | None = "serial",
         jobs: int | None = None, captures: list[Path] | None = None) -> Profile:
    """Read every input and merge them into one Profile (ranks side by side).

    ``engine`` says how the files are read (``engines.ENGINES``: serial, process, ray,
    ``ray://HOST:PORT``; ``auto``: a process pool for several files where that is safe);
    ``jobs`` how many at a time. Every engine gives the same Profile.

    ``captures``: when a list, graph-capture traces among the inputs are no ranks of the
    run: their paths are appended to it instead (``capture.split_capture_files``: by
    their place; among several inputs, also a trace whose content says so).
    """
    from . import engines
    from ..capture import is_capture_profile, split_capture_files

    options = options or ReadOptions()
    name, address = engines.parse_engine(engine)

    def runs_only(tasks: list) -> list:
        if captures is None:
            return tasks
        run_files, by_place = split_capture_files([Path(t.path) for t in tasks])
        captures.extend(by_place)
        kept = set(run_files)
        if not kept:
            raise TraceError(by_place[0], "only graph-capture traces: pass the run's trace too")
        return [t for t in tasks if Path(t.path) in kept]

    if name == "ray":
        with engines.RaySession(address, jobs or engines.default_jobs(os.cpu_count() or 1)):
            tasks = runs_only(engines.ray_tasks([str(p) for p in paths]))
            profiles = engines.ray_engine(tasks, options, jobs or len(tasks), address)
    else:
        dropped_files: list[tuple[Path, str]] = []
        skipped_files: list[tuple[Path, str]] = []
        in_dirs: set[Path] = set()
        found = expand(paths, dropped_files, in_dirs, skipped_files)
        tasks = runs_only([engines.FileTask(str(path), mod.NAME, _file_size(path), optional=path in in_dirs)
                           for path, mod in found])
        jobs = jobs or engines.default_jobs(len(tasks))
        if name == "auto":
            name = "process" if len(tasks) > 1 and jobs > 1 and engines.fork_is_safe() else "serial"
        profiles = engines.ENGINES[name](tasks, options, jobs, address)
    seen: dict[str, set[int]] = {}  # ranks already taken, per format
    kept_profiles: list[Profile] = []
    aside: list[tuple[Path, Profile]] = []
    drops = [{"path": str(p), "reason": why} for p, why in (dropped_files if name != "ray" else [])]
    for t, prof in zip(tasks, profiles):
        if isinstance(prof, engines.DroppedInput):
            drops.append({"path": prof.path, "reason": prof.problem})
            continue
        prof.run.setdefault("sources", [])
        if not prof.run["sources"]:
            prof.run["sources"].append({"path": t.path, "format": t.reader})
        if captures is not None and len(tasks) > 1 and is_capture_profile(prof):
            aside.append((Path(t.path), prof))
            continue
        _separate_ranks(prof, Path(t.path), seen.setdefault(t.reader, set()))
        kept_profiles.append(prof)
    if aside and not kept_profiles:  # only capture traces by content: the first one is the run
        kept_profiles.append(aside.pop(0)[1])
    if captures is not None:
        captures.extend(p for p, _ in aside)
    if not kept_profiles and drops:  # nothing readable at all: that is the error
        raise TraceError(drops[0]["path"], drops[0]["reason"])
    merged = Profile.merge(kept_profiles)
    _note_dropped(merged, drops)
    for path, why in (skipped_files if name != "ray" else []):
        merged.warn(f"{path}: skipped ({why})")
    return merged


def _note_dropped(prof: Profile, drops: list[dict]) -> None:
    """Inputs of a directory that could not be read: one warning each (naming the file, why,
    and the rank that is missing), and a list in the run (``summary.json``'s ``dropped_inputs``)."""
    if not drops:
        return
    for d in drops:
        rank = rank_from_name(Path(d["path"]))
        d["rank"] = rank
        missing = f"rank {rank} is missing from the analysis" if rank is not None and rank not in prof.ranks \
            else "its events are missing from the analysis"
        prof.warn(f"{d['path']}: dropped ({d['reason']}); {missing}")
    prof.run.setdefault("dropped_inputs", []).extend(drops)


def _file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _separate_ranks(prof: Profile, path: Path, taken: set[int]) -> None:
    """Two files of one format that claim the same rank are two ranks, not one: merged,
    their steps would overlap and their correlation ids cross-link."""
    mine = set(prof.ranks)
    mapping = {}
    for r in sorted(mine & taken):
        new = max(taken | mine | set(mapping.values())) + 1
        mapping[r] = new
        prof.warn(f"{path.name}: rank {r} also comes from another file; shown as rank {new}")
    if mapping:
        prof.relabel_ranks(mapping)
    taken.update(prof.ranks)
