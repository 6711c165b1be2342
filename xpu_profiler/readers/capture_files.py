"""Graph-capture files: telling them apart from the run's traces.

While an engine captures its graphs with the profiler on, it writes one trace per capture
(vLLM: under ``<torch_profiler_dir>/capture_traces/``, worker ``graph_capture_rank_0``;
SGLang: beside a ``capture-details.json`` that maps each file to its batch size and mode).
Those files are not ranks of the run: ``split_capture_files`` sets them apart by where they
are, ``is_capture_profile`` by what a loaded one holds, and ``load.load_run`` reads the
run and its captures as two Profiles (the analysis of captures is ``aggregate.graphs.captures``).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..core.profile import K_ANNOTATION, Profile
from ..knowledge.step_grammar import parse_step_name

#: directory and worker names under which engines write their capture traces
CAPTURE_DIR = "capture_traces"  # vLLM: <torch_profiler_dir>/capture_traces/
CAPTURE_WORKER = "graph_capture_rank_"  # vLLM: worker name of those files
#: which capture file holds which batch size and mode: [{"file", "batch_size", "mode"}]
#: (SGLang's capture-details.json; TraceLens's execution_details.json beside vLLM's)
DETAILS_FILES = ("capture-details.json", "execution_details.json")


def details_files(folder: Path) -> list[Path]:
    return [g for name in DETAILS_FILES for g in folder.glob(f"*{name}")]


def is_capture_file(path: Path) -> bool:
    """Whether a file is a graph-capture trace (or SGLang's capture details) by where
    engines put them: vLLM's capture_traces/ directory and worker name, or a file that a
    capture-details.json beside it lists."""
    path = Path(path)
    if path.parent.name == CAPTURE_DIR or path.name.startswith(CAPTURE_WORKER) or path.name.endswith(DETAILS_FILES):
        return True
    return any(path.name in capture_details(d) for d in details_files(path.parent))


def is_capture_profile(profile: Profile) -> bool:
    """Whether a loaded trace is a capture trace: capture ranges and no engine steps."""
    ev = profile.events
    ann = np.unique(ev["name"][(ev["kind"] == K_ANNOTATION) & (ev["device"] < 0)])
    fams = {p.family for i in ann.tolist() if (p := parse_step_name(profile.strings[i])) is not None}
    return "capture" in fams and not fams & {"vllm", "sglang", "atom"}


def split_capture_files(paths: list[Path]) -> tuple[list[Path], list[Path]]:
    """(replay traces, capture traces) of expanded input files: a vLLM profiler directory
    holds both, and capture traces must not be read as ranks of the run. (Files that say
    nothing by their place are told apart once loaded: ``is_capture_profile``.)"""
    caps = [Path(p) for p in paths if is_capture_file(Path(p))]
    return [Path(p) for p in paths if not is_capture_file(Path(p))], caps


def capture_details(path: Path) -> dict[str, tuple[int, str]]:
    """SGLang's capture-details.json: file name → (batch size, mode); {} when unreadable."""
    try:
        rows = json.loads(Path(path).read_text(encoding="utf-8"))
        return {
            str(r["file"]): (int(r["batch_size"]), str(r.get("mode", "")).upper())
            for r in rows
            if isinstance(r, dict) and "file" in r and "batch_size" in r
        }
    except (OSError, ValueError, TypeError, KeyError):
        return {}
