"""Reading inputs: every file with its reader (through an executor: serial, processes, Ray),
merged into one Profile with ranks side by side; inputs that could not be read are named."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from ..core.errors import TraceError
from ..core.profile import Profile
from . import executors
from .base import DroppedInput, ReadOptions
from .capture_files import DETAILS_FILES, capture_details, details_files, is_capture_profile, split_capture_files
from .formats import expand


def load(
    paths: Iterable[str | Path],
    options: ReadOptions | None = None,
    engine: str | None = "serial",
    jobs: int | None = None,
    captures: list[Path] | None = None,
) -> Profile:
    """Read every input and merge them into one Profile (ranks side by side).

    ``engine`` says how the files are read (``executors.EXECUTORS``: serial, process, ray,
    ``ray://HOST:PORT``; ``auto``: a process pool for several files where that is safe);
    ``jobs`` how many at a time. Every executor gives the same Profile.

    ``captures``: when a list, graph-capture traces among the inputs are no ranks of the
    run: their paths are appended to it instead (``capture.split_capture_files``: by
    their place; among several inputs, also a trace whose content says so).
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
        tasks = runs_only(
            [executors.FileTask(str(path), mod.NAME, _file_size(path), optional=path in in_dirs) for path, mod in found]
        )
        jobs = jobs or executors.default_jobs(len(tasks))
        if name == "auto":
            name = "process" if len(tasks) > 1 and jobs > 1 and executors.fork_is_safe() else "serial"
        profiles = executors.EXECUTORS[name](tasks, options, jobs, address)
    seen: dict[str, set[int]] = {}  # ranks already taken, per format
    kept_profiles: list[Profile] = []
    aside: list[tuple[Path, Profile]] = []
    for t, prof in zip(tasks, profiles):
        if isinstance(prof, DroppedInput):
            drops.append(prof)
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
        raise TraceError(drops[0].path, drops[0].reason)
    merged = Profile.merge(kept_profiles)
    _note_dropped(merged, drops)
    for path, why in skipped_files:
        merged.warn(f"{path}: skipped ({why})")
    return merged


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


def load_run(
    paths, capture_paths=(), options=None, engine: str | None = "serial", jobs: int | None = None
) -> tuple[Profile, Profile | None]:
    """(the run, its graph-capture traces as one Profile or None) from the input paths and
    the ``--capture`` paths (files or directories). Capture traces among the inputs (a
    vLLM profiler directory's ``capture_traces/``) are read as captures, not as ranks."""
    caps: list[Path] = []
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
