"""The one path every entry point takes: inputs → Profile → Summary → outputs.

A thin facade over stateless functions (readers.load, aggregator.summarize,
exporters); the CLI, the Python API and live sessions all call these.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Sequence

from . import aggregator, exporters
from .errors import XpuProfilerError
from .profile import Profile
from .readers import ReadOptions, load
from .taxonomy import Taxonomy

DEFAULT_FORMATS = ("perfetto", "json", "csv", "html")
#: file names written into an output directory, per format
FILE_NAMES = {"perfetto": "trace.json.gz", "json": "summary.json", "csv": "fused_ops.csv",
              "html": "report.html", "bundle": "profile.npz"}


def analyze(paths: Iterable[str | Path], *, taxonomy: Taxonomy | None = None,
            options: ReadOptions | None = None, top: int = 50) -> tuple[Profile, dict]:
    """Read and analyse existing traces/logs; returns the attributed Profile and its Summary."""
    profile = load(paths, options)
    aggregator.attribute(profile, taxonomy)
    return profile, aggregator.summarize(profile, top=top)


def summarize(profile: Profile, *, taxonomy: Taxonomy | None = None, top: int = 50) -> dict:
    """The Summary of a Profile you already have (a live run's); attributes it first if needed."""
    return aggregator.summarize(profile, top=top, taxonomy=taxonomy)


def output_paths(output: str | Path, formats: Sequence[str]) -> dict[str, Path]:
    """Where each format goes: `--output DIR` holds them all; `--output X.html` (or any
    file an exporter claims by suffix) names that one and puts the others beside it."""
    output = Path(output)
    known = exporters.registry()
    unknown = [f for f in formats if f not in known and f != "bundle"]
    if unknown:
        raise XpuProfilerError(f"unknown output format(s) {', '.join(unknown)} "
                               f"(known: {', '.join(sorted(known))})")
    named = exporters.by_suffix(output) if output.suffix else None
    if named is not None and not output.is_dir():
        folder = output.parent
        stem = output.name
        for suf in named.SUFFIXES:
            if stem.lower().endswith(suf):
                stem = stem[: -len(suf)]
                break
        out = {}
        for f in formats:
            out[f] = output if f == named.NAME else folder / f"{stem}.{FILE_NAMES[f]}"
        if named.NAME not in out:
            out[named.NAME] = output
        return out
    if output.exists() and not output.is_dir():
        raise XpuProfilerError(f"{output}: exists and is not a directory")
    return {f: output / FILE_NAMES[f] for f in formats}


def export(profile: Profile, summary: dict, output: str | Path,
           formats: Sequence[str] = DEFAULT_FORMATS) -> dict[str, Path]:
    """Write every requested format; returns {format: path}."""
    known = exporters.registry()
    written = {}
    for fmt, path in output_paths(output, formats).items():
        path.parent.mkdir(parents=True, exist_ok=True)
        if fmt == "bundle":
            written[fmt] = profile.save(path)
        else:
            written[fmt] = known[fmt].write(profile, summary, path)
    return written
