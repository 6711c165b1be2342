"""Reading inputs: every file with its reader (through an executor: serial, processes, Ray),
merged into one Profile with ranks side by side; inputs that could not be read are named."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..core.errors import TraceError, XpuProfilerError
from ..core.profile import Profile
from . import executors
from .base import FRONT_END, NO_MODEL, DroppedInput, ReadOptions, rank_from_name
from .capture_files import DETAILS_FILES, capture_details, details_files, is_capture_profile, split_capture_files
from .formats import expand
from .own_outputs import OWN_TRACE

#: what a file of a directory may be that is no rank of the run: skipped, not dropped
NO_RANK = (OWN_TRACE, FRONT_END, NO_MODEL)


def load(
    paths: Iterable[str | Path],
    options: ReadOptions | None = None,
    engine: str | None = "serial",
    jobs: int | None = None,
    captures: list[Path] | None = None,
    empty_ok: bool = False,
) -> Profile:
    """Read every input and merge them into one Profile (ranks side by side).

    ``engine`` says how the files are read (``executors.EXECUTORS``: serial, process, ray,
    ``ray://HOST:PORT``; ``auto``: a process pool for several files where that is safe);
    ``jobs`` how many at a time. Every executor gives the same Profile.

    ``captures``: when a list, graph-capture traces among the inputs are no ranks of the
    run: their paths are appended to it instead (``capture.split_capture_files``: by
    their place; among several inputs, also a trace whose content says so).

    Inputs read with nothing in them (no event, step, request or counter) are one line
    (TraceError), unless ``empty_ok`` (a live run's captured device logs, which may hold none).
    """
    options = options or ReadOptions()
    name, address = executors.parse_executor(engine)

    def runs_only(tasks: list) -> list:
        if captures is None:
            return tasks
        run_files, by_place = split_capture_files([Path(t.path) for t in tasks])
        captures.extend(by_place)
        kept = set(run_files)
        if not kept:
            raise TraceError(by_place[0], "only graph-capture traces: pass the run's trace too")
        return [t for t in tasks if Path(t.path) in kept]

    drops: list[DroppedInput] = []  # the files of directories that could not be read
    skipped_files: list[tuple[Path, str]] = []
    if name == "ray":
        with executors.RaySession(address, jobs or executors.default_jobs(os.cpu_count() or 1)):
            tasks = runs_only(executors.ray_tasks([str(p) for p in paths]))
            profiles = executors.ray_cluster(tasks, options, jobs or len(tasks), address)
    else:
        in_dirs: set[Path] = set()
        found = expand(paths, drops, in_dirs, skipped_files)
        once = _no_duplicates([p for p, _ in found], skipped_files)
        found = _each_once(found, once)
        tasks = runs_only(
            [executors.FileTask(str(path), mod.NAME, _file_size(path), optional=path in in_dirs) for path, mod in found]
        )
        jobs = jobs or executors.default_jobs(len(tasks))
        if name == "auto":
            name = "process" if len(tasks) > 1 and jobs > 1 and executors.fork_is_safe() else "serial"
        profiles = executors.EXECUTORS[name](tasks, options, jobs, address)
    return _merged(tasks, profiles, drops, skipped_files, captures, empty_ok)


def _merged(
    tasks: list, profiles: list, drops: list[DroppedInput], skipped_files: list, captures, empty_ok: bool
) -> Profile:
    """The profiles read, held to one run (one device, no file twice, ranks apart) and merged;
    what was dropped or skipped on the way said in warnings. Inputs read with nothing in them
    are one line, unless ``empty_ok``."""
    seen: dict[str, set[int]] = {}  # ranks already taken, per format
    devices: list[tuple[Path, tuple]] = []  # the first input's device, to hold the others to
    contents: dict[bytes, Path] = {}  # what each file read held: one trace in two files is no two ranks
    device_rows: list[tuple[Path, str, np.ndarray]] = []  # each file's reader, device records: one run, two formats
    kept_profiles: list[Profile] = []
    aside: list[tuple[Path, Profile]] = []
    for t, prof in zip(tasks, profiles):
        if isinstance(prof, DroppedInput):
            if prof.reason.startswith(NO_RANK):  # our own trace, a front-end's: no rank, nothing lost
                skipped_files.append((Path(prof.path), prof.reason))
            else:
                drops.append(prof)
            continue
        prof.run.setdefault("sources", [])
        if not prof.run["sources"]:
            prof.run["sources"].append({"path": t.path, "format": t.reader})
        if captures is not None and len(tasks) > 1 and is_capture_profile(prof):
            aside.append((Path(t.path), prof))
            continue
        _one_run(Path(t.path), prof, devices)
        _timed(Path(t.path), prof)
        if len(tasks) > 1:  # (one input cannot be read twice)
            _not_read_before(Path(t.path), prof, contents)
            _records_not_read_before(Path(t.path), t.reader, prof, device_rows)
        _separate_ranks(prof, Path(t.path), seen.setdefault(t.reader, set()))
        kept_profiles.append(prof)
    if aside and not kept_profiles:  # only capture traces by content: the first one is the run
        kept_profiles.append(aside.pop(0)[1])
    if captures is not None:
        captures.extend(p for p, _ in aside)
    if not kept_profiles and drops:  # nothing readable at all: that is the error
        raise TraceError(drops[0].path, drops[0].reason)
    if not kept_profiles and skipped_files:  # only our own outputs, a front-end's trace
        raise TraceError(skipped_files[0][0], f"{skipped_files[0][1]}; nothing else to analyse")
    merged = Profile.merge(kept_profiles)
    if (
        not empty_ok
        and kept_profiles
        and not any(map(len, (merged.events, merged.steps, merged.requests, merged.counters)))
    ):
        # read, yet nothing in it (no event, step, request or counter): no empty report
        said = merged.run.get("warnings") or []
        raise TraceError(tasks[0].path, f"no event to analyse{f' ({said[0]})' if said else ''}")
    _note_dropped(merged, drops)
    for path, why in skipped_files:
        merged.warn(f"{path}: skipped ({why})")
    return merged


def _timed(path: Path, prof: Profile) -> None:
    """A warning where every event read lasts 0 ns (a writer that records no durations): the
    analysis then has counts but no time, which must not pass for a run that took none."""
    dur = prof.events["dur"]
    if len(dur) and not dur.any():
        prof.warn(f"{path}: every one of its {len(dur):,} events lasts 0 ns: no time to analyse, counts only")


def _note_dropped(prof: Profile, drops: list[DroppedInput]) -> None:
    """Inputs of a directory that could not be read: one warning each (naming the file, why,
    and the rank that is missing), and a list in the run (``summary.json``'s ``dropped_inputs``)."""
    if not drops:
        return
    entries = [d.to_run() for d in drops]
    for d in entries:
        rank = d["rank"]
        missing = (
            f"rank {rank} is missing from the analysis"
            if rank is not None and rank not in prof.ranks
            else "its events are missing from the analysis"
        )
        prof.warn(f"{d['path']}: dropped ({d['reason']}); {missing}")
    prof.run.setdefault("dropped_inputs", []).extend(entries)


def _fingerprint(path: Path) -> tuple[int, bytes] | None:
    """The size and a hash of the first and last MiB: identical files (a copy) have the same."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            h = hashlib.blake2b(f.read(1 << 20), digest_size=16)
            if size > 2 << 20:
                f.seek(-(1 << 20), os.SEEK_END)
                h.update(f.read(1 << 20))
    except OSError:
        return None
    return size, h.digest()


def _each_once(found: list, once: set[Path]) -> list:
    """The (file, reader) pairs of the files in ``once``, each file's first only (a path named
    twice, or a directory and a file in it, is one input)."""
    out = []
    for x in found:
        if x[0] in once:
            once.discard(x[0])
            out.append(x)
    return out


def _no_duplicates(files: list[Path], skipped: list[tuple[Path, str]]) -> set[Path]:
    """The files to read, each once. One file reached twice (named twice, through a link) is
    read once and the other name noted in ``skipped``; two copies of one file would be two
    ranks of one run: one line instead. (Files whose names give different ranks stay ranks:
    two ranks' logs may well be alike.)"""
    seen: dict[tuple[int, bytes], Path] = {}
    keep: set[Path] = set()
    for f in files:
        key = _fingerprint(f) if f.is_file() else None
        other = seen.get(key) if key is not None else None
        if other is None or not key or not key[0]:
            keep.add(f)
            if key is not None:
                seen.setdefault(key, f)
            continue
        if other.resolve() == f.resolve():
            skipped.append((f, f"the same file as {other}: read once"))
            continue
        ranks = rank_from_name(other), rank_from_name(f)
        if None in ranks or ranks[0] == ranks[1]:
            raise TraceError(f, f"the same file as {other} (identical content): pass one of them")
        keep.add(f)
    return keep


def _not_read_before(path: Path, prof: Profile, contents: dict[bytes, Path]) -> None:
    """A trace whose events equal those of a file read before is that file again, whatever the
    bytes (one trace plain and gzip-compressed, or re-compressed: ``_no_duplicates`` compares
    bytes): as two ranks it would double every total. One line instead, as for two copies
    (files whose names give different ranks stay ranks: two ranks' logs may well be alike)."""
    ev = prof.events
    if not len(ev["start"]):
        return
    h = hashlib.blake2b(digest_size=16)  # (the ranks a trace declares tell ranks of a test run's twins apart)
    h.update(repr((int(prof.base_ns), sorted(prof.ranks))).encode())
    for col in ("start", "dur"):
        h.update(np.ascontiguousarray(ev[col]).tobytes())
    key = h.digest()
    other = contents.setdefault(key, path)
    if other == path:
        return
    ranks = rank_from_name(other), rank_from_name(path)
    if None in ranks or ranks[0] == ranks[1]:
        raise TraceError(path, f"the same trace as {other} (identical events): pass one of them")


#: the share of a file's device records (kernels, copies) found in the files read before it from
#: which it is the same run again: ranks of one run share none (another GPU, another nanosecond)
SHARED_RECORDS = 0.5


def _records_not_read_before(path: Path, reader: str, prof: Profile, seen: list[tuple[Path, str, np.ndarray]]) -> None:
    """A file whose device records (GPU, start and duration, to the nanosecond) were mostly read
    from files of another format already, or that holds most of the records of one such file,
    is the same run again (rocprofv3's JSON and a CSV or database converted from it holding
    several processes, in either order): as more ranks it would double every total. One line, naming the files that held them first. (Files of one format are
    held apart by ``_not_read_before``; a sample of the records is looked up first, so many
    large inputs cost a few searches each.)"""
    ev = prof.events
    on_device = np.flatnonzero(ev["device"] >= 0)
    if not len(on_device):
        return
    keys = _record_keys(prof, on_device)  # (sorted)
    sample = _sample(keys)
    found = np.zeros(len(sample), bool)
    holders, holds_one = [], False
    for other, fmt, before in seen:
        if fmt == reader:
            continue
        hit = _found(before, sample)
        inside = _found(keys, _sample(before)).mean() >= SHARED_RECORDS  # (a process's file read before)
        if hit.any() or inside:
            holders.append((other, before))
            found |= hit
            holds_one |= inside
    if holds_one or found.sum() >= SHARED_RECORDS * len(sample):
        shared = int(np.isin(keys, np.concatenate([b for _, b in holders])).sum())
        where = ", ".join(str(o) for o, _ in holders[:3]) + (" ..." if len(holders) > 3 else "")
        raise TraceError(
            path,
            f"{shared:,} of its {len(keys):,} device records are in {where} too, read already (the same run in "
            "another format?): keep one of them as an input",
        )
    seen.append((path, reader, keys))


def _sample(keys: np.ndarray) -> np.ndarray:
    """At most 256 of the sorted keys, spread over them."""
    return keys[np.linspace(0, len(keys) - 1, min(len(keys), 256)).astype(np.int64)]


def _found(keys: np.ndarray, sample: np.ndarray) -> np.ndarray:
    """Which of ``sample`` the sorted ``keys`` hold."""
    return keys[np.minimum(np.searchsorted(keys, sample), len(keys) - 1)] == sample


def _record_keys(prof: Profile, rows: np.ndarray) -> np.ndarray:
    """One 64-bit key per device record: its device, absolute start and duration mixed."""
    ev = prof.events
    with np.errstate(over="ignore"):
        k = (ev["start"][rows] + np.int64(prof.base_ns)).astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
        k ^= ev["dur"][rows].astype(np.uint64) * np.uint64(0xC2B2AE3D27D4EB4F)
        k ^= ev["device"][rows].astype(np.uint64) * np.uint64(0x165667B19E3779F9)
    return np.unique(k)


def _device_of(prof: Profile) -> tuple | None:
    """What a trace says its (first) device is: its name, else its properties; None unsaid."""
    for src in prof.run.get("sources") or []:
        for p in src.get("device_properties") or [] if isinstance(src, dict) else []:
            name = str(p.get("name") or "").strip()
            props = tuple(p.get(k) for k in ("warpSize", "computeMajor", "computeMinor"))
            if name or any(v is not None for v in props):
                return name, props
    return None


def _one_run(path: Path, prof: Profile, devices: list[tuple[Path, tuple]]) -> None:
    """Rank files of different devices are different runs (an H100 and an MI300X trace side by
    side): merged as ranks, every cross-rank figure would be false. One line instead."""
    dev = _device_of(prof)
    if dev is None:
        return
    if not devices:
        devices.append((path, dev))
        return
    first_path, first = devices[0]
    names_differ = bool(first[0] and dev[0] and first[0] != dev[0])
    props_differ = all(v is not None for v in first[1] + dev[1]) and first[1] != dev[1]
    if names_differ or props_differ:
        label = dev[0] or f"warp {dev[1][0]}, compute {dev[1][1]}.{dev[1][2]}"
        first_label = first[0] or f"warp {first[1][0]}, compute {first[1][1]}.{first[1][2]}"
        raise TraceError(
            path,
            f"a trace of another run: its device is {label}, {first_path.name}'s is {first_label}: analyse each "
            "run on its own (and compare them with `xpu_profiler diff`)",
        )


def _file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _separate_ranks(prof: Profile, path: Path, taken: set[int]) -> None:
    """Two files of one format that claim the same rank are two ranks, not one: merged,
    their steps would overlap and their correlation ids cross-link."""
    mine = set(prof.ranks)
    mapping: dict[int, int] = {}
    for r in sorted(mine & taken):
        new = max(taken | mine | set(mapping.values())) + 1
        mapping[r] = new
        prof.warn(f"{path.name}: rank {r} also comes from another file; shown as rank {new}")
    if mapping:
        prof.relabel_ranks(mapping)
    taken.update(prof.ranks)


def as_paths(value: Any, what: str, empty: bool = False) -> list[Path]:
    """A path, or an iterable of paths (str or os.PathLike), as a list of Paths: what every
    entry point takes. XpuProfilerError (one line) for anything else, or for none where
    ``empty`` is false (a string is one path, never its characters)."""
    items = [value] if isinstance(value, (str, os.PathLike)) else value
    if isinstance(items, (bytes, Mapping)) or not isinstance(items, Iterable):
        raise XpuProfilerError(f"{what}={value!r}: give a path or a list of paths (str or pathlib.Path)")
    items = list(items)
    odd = [v for v in items if not isinstance(v, (str, os.PathLike)) or isinstance(v, bytes) or str(v) == ""]
    if odd:
        raise XpuProfilerError(f"{what}: {odd[0]!r} is no path (give str or pathlib.Path)")
    if not items and not empty:
        raise XpuProfilerError(f"{what}: no input given")
    return [Path(v) for v in items]


def load_run(
    paths, capture_paths=(), options=None, engine: str | None = "serial", jobs: int | None = None
) -> tuple[Profile, Profile | None]:
    """(the run, its graph-capture traces as one Profile or None) from the input paths and
    the ``--capture`` paths (files or directories). Capture traces among the inputs (a
    vLLM profiler directory's ``capture_traces/``) are read as captures, not as ranks."""
    caps: list[Path] = []
    paths, capture_paths = as_paths(paths, "paths"), as_paths(capture_paths, "capture", empty=True)
    profile = load(paths, options, engine=engine, jobs=jobs, captures=caps)
    caps += [f for f, _ in expand(capture_paths)] if capture_paths else []
    caps = [c for c in caps if not c.name.endswith(DETAILS_FILES)]
    if not caps:
        return profile, None
    capture = load(caps)
    details = {k: v for d in {c.parent for c in caps} for g in details_files(d) for k, v in capture_details(g).items()}
    named = [details[c.name] for c in caps if c.name in details]
    if len(caps) == 1 and named:  # SGLang: the size and mode of a file without capture ranges
        capture.run["capture_details"] = {"size": named[0][0], "mode": named[0][1]}
    return profile, capture
