"""The one path every entry point takes: inputs → Profile → Summary → outputs.

A thin facade over stateless functions (readers.load, aggregate.attribute and
aggregate.summarize, exporters); the CLI, the Python API and live sessions all
call these and need nothing else.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from . import aggregate, exporters, findings
from .aggregate import select
from .aggregate.select import Selection
from .core import atomic_write, heap
from .core.errors import XpuProfilerError
from .core.fmt import plain
from .core.profile import DEVICE_KINDS, FRAME_SCHEMA, K_CPU_OP, Profile, Table
from .findings import FindingsConfig
from .knowledge.devices import DeviceSpec
from .knowledge.taxonomy import Taxonomy
from .readers import ReadOptions, bundle, own_outputs
from .readers import formats as formats_
from .readers.loader import as_paths, load_run
from .summary import Summary, load_summary, schema  # noqa: F401  (part of the facade)

DEFAULT_FORMATS = ("perfetto", "json", "csv", "html")
#: file names written into an output directory, per format
FILE_NAMES = {
    "perfetto": "trace.json.gz",
    "json": "summary.json",
    "csv": "fused_ops.csv",
    "html": "report.html",
    "bundle": "profile.npz",
}


@dataclass(frozen=True)
class AnalyzeOptions:
    """Every setting of an analysis, in one value from the command line (or the Python API)
    down: how the inputs are read, what the analysis is told, what the findings judge."""

    taxonomy: Taxonomy | None = None  # extra fused-op patterns (``--taxonomy``)
    read: ReadOptions | None = None  # what the readers are told (``--rank``, ``--xpu-gen``, progress)
    top: int = 50  # rows of the top-kernels section
    engine: str | None = "auto"  # how files are read (``readers.executors``: auto, serial, process, ray)
    jobs: int | None = None
    capture: tuple[str | Path, ...] = ()  # graph-capture traces of the run (files or directories)
    findings_config: FindingsConfig | None = None
    reference: Summary | None = None  # a basic-level run of the same workload
    selection: Selection | None = None  # only some steps or the first events
    formats: tuple[str, ...] = ()  # the outputs ``export`` will write (their early work runs beside)
    model_config: dict | None = None  # the model's config.json (``--model``)
    python_frames: bool = True  # keep the traces' Python stack frames
    specs: Mapping[str, DeviceSpec] | None = None  # the device spec table (``--device-spec``); None: built-in


@dataclass
class Analyzed:
    """An analysis, with the exporters' work done ahead for ``export`` (``ahead``)."""

    profile: Profile
    summary: Summary
    ahead: exporters.Ahead | None = None


def analyze(
    paths: Iterable[str | Path], options: AnalyzeOptions | None = None, **settings: Any
) -> tuple[Profile, Summary]:
    """Read and analyse existing traces/logs; returns the attributed Profile and its Summary
    (with its findings). ``options`` (or the same settings as keywords: ``top=20``...):
    ``AnalyzeOptions``.

    ``engine``/``jobs``: how the files are read (a local process pool for several files by
    default, ``serial``, ``ray`` or ``ray://HOST:PORT``). ``capture``: graph-capture traces
    (files or directories) of the run; those inside an input directory (vLLM's
    ``capture_traces/``) are picked up without it. ``selection``: keep only some steps or the
    first events (``select``). ``formats``: the outputs ``export`` will write; what of them
    needs neither attribution nor summary is made while the profile is attributed
    (``exporters.start_ahead``), where memory allows. ``model_config``: the model's
    config.json (``analyze --model``): its layer count and types for the layer view.
    ``python_frames=False`` leaves the traces' Python stack frames out of the returned
    profile once it is analysed, and so out of the Perfetto trace and the bundle (smaller
    files); the analysis, its host time by cause included, is the same."""
    o = options if options is not None else AnalyzeOptions(**_settings(settings))
    done = run(paths, o)
    return done.profile, done.summary


def run(paths: Iterable[str | Path], o: AnalyzeOptions) -> Analyzed:
    """``analyze``, keeping what the exporters of ``o.formats`` made ahead for ``export``."""
    profile, capture_profile = load_run(paths, o.capture, o.read, engine=o.engine, jobs=o.jobs)
    _check_analysable(profile)
    if capture_profile is None and (why := bundle.capture_warning(profile)):
        profile.warn(why)
    if o.model_config is not None:
        profile.run["model_config"] = o.model_config
    kept = select.apply(profile, o.selection) if o.selection else None
    heap.trim()
    # what the outputs write: without the frames when they are left out (the analysis has them)
    outputs = profile if o.python_frames else dataclasses.replace(profile, frames=Table(FRAME_SCHEMA))
    early = exporters.start_ahead(outputs, o.formats, heap.can_spare)
    aggregate.attribute(profile, o.taxonomy, capture=capture_profile)  # on an error or Ctrl-C the
    if early is not None:  # daemon thread is not waited for
        early.join()
    heap.trim()
    summary = aggregate.summarize(profile, top=o.top, specs=o.specs)
    profile.frames = outputs.frames
    if kept is not None:
        summary.selection = schema.Selection(**kept)
    return Analyzed(profile, findings.attach(summary, o.findings_config, o.reference), early)


def _settings(settings: dict[str, Any]) -> dict[str, Any]:
    """Keyword settings as ``AnalyzeOptions`` fields (``options=`` a ``ReadOptions``, as the
    keyword was called before)."""
    out = dict(settings)
    if "options" in out:
        out["read"] = out.pop("options")
    if "capture" in out:  # (one path as a string is one path)
        out["capture"] = tuple(as_paths(out["capture"] or (), "capture", empty=True))
    if "formats" in out:
        out["formats"] = tuple(out["formats"] or ())
    return out


def _check_analysable(profile: Profile) -> None:
    """One line (exit 2) for inputs whose events hold nothing the analysis reads: no device
    work, no host op, no step, request or counter (a trace of unknown categories only)."""
    ev = profile.events
    if not len(ev) or len(profile.steps) or len(profile.requests) or len(profile.counters):
        return
    if np.isin(ev["kind"], (*DEVICE_KINDS, K_CPU_OP)).any():
        return
    cats = [profile.strings[int(c)] for c in np.unique(ev["cat"][ev["cat"] >= 0]).tolist()][:5]
    where = ", ".join(str(s.get("path", "")) for s in profile.run.get("sources", []) if isinstance(s, dict)) or "input"
    raise XpuProfilerError(
        f"{where}: nothing to analyse: {len(ev):,} event{'s' if len(ev) != 1 else ''}, none a device kernel, copy or host op"
        + (f" (categories {', '.join(repr(c) for c in cats)})" if cats else "")
    )


def summarize(
    profile: Profile,
    *,
    top: int = 50,
    taxonomy: Taxonomy | None = None,
    findings_config: FindingsConfig | None = None,
    reference: Summary | None = None,
    specs: Mapping[str, DeviceSpec] | None = None,
) -> Summary:
    """The Summary of a profile, with its findings (``aggregate.summarize`` attributes a profile
    that was not yet; a taxonomy given here attributes it again with that taxonomy)."""
    if taxonomy is not None:
        aggregate.attribute(profile, taxonomy)
    return findings.attach(aggregate.summarize(profile, top=top, specs=specs), findings_config, reference)


#: the suffix that names the bundle (the exporters name theirs)
BUNDLE_SUFFIXES = (".npz",)
#: the endings of the outputs' file names, as ``--help`` says them
OUTPUT_ENDINGS = (".summary.json", ".html", ".trace.json.gz", ".csv", ".npz")
#: endings of files that are no output of ours: ``-o out.txt`` is no directory to create
FILE_ENDINGS = frozenset(
    ".json .txt .gz .log .out .md .png .svg .pdf .zip .tar .tgz .xz .bz2 .zst .jsonl .yaml .yml .toml .xml .pb "
    ".sqlite .db .nsys-rep".split()
)


def _named_format(output: Path) -> tuple[str, tuple[str, ...]] | None:
    """The format a file name's suffix names, with that format's suffixes; None for none."""
    if output.name.lower().endswith(BUNDLE_SUFFIXES):
        return "bundle", BUNDLE_SUFFIXES
    mod = exporters.by_suffix(output) if output.suffix else None
    return (mod.NAME, tuple(mod.SUFFIXES)) if mod is not None else None


def output_paths(output: str | Path, formats: Sequence[str]) -> dict[str, Path]:
    """Where each format goes (the rule ``--help`` says, ``cli.common.OUTPUT_RULE``): `--output DIR` holds them all; `--output
    X.html` (or any file a format claims by suffix) names that one and puts the others beside
    it. A file name of a format that ``formats`` leaves out is refused, not guessed around."""
    if str(output) == "-":  # (no output goes to standard output: a directory named "-" is a trap)
        raise XpuProfilerError(
            "--output -: the outputs are files, none goes to standard output: name a directory or a file"
        )
    output = Path(output)
    known = exporters.registry()
    unknown = [f for f in formats if f not in known and f != "bundle"]
    if unknown:
        raise XpuProfilerError(f"unknown output format(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})")
    try:
        is_dir = output.is_dir()
    except OSError as e:  # a name too long, no access
        raise atomic_write.OutputError(output, atomic_write.reason(e)) from None
    named = _named_format(output)
    if named is not None and not is_dir:
        fmt, suffixes = named
        folder = output.parent
        stem = output.name
        for suf in sorted(suffixes, key=len, reverse=True):  # the longest: x.trace.json.gz → x
            if stem.lower().endswith(suf):
                stem = stem[: -len(suf)].rstrip(".")  # report.summary.json → report
                break

        def beside(f: str) -> Path:
            return folder / (f"{stem}.{FILE_NAMES[f]}" if stem else FILE_NAMES[f])

        if fmt not in formats:
            what = "a Perfetto trace's" if fmt == "perfetto" else f"the {fmt} output's"
            raise XpuProfilerError(
                f"--output {plain(str(output))} is {what} name, but --format {','.join(formats)} leaves "
                f"{fmt} out: name the file for one of those formats (e.g. {plain(beside(formats[0]).name)}), "
                "give a directory, or add it to --format"
            )
        return {f: output if f == fmt else beside(f) for f in formats}
    if output.exists() and not is_dir:
        raise XpuProfilerError(f"{plain(str(output))}: exists and is not a directory")
    if not is_dir and output.suffix.lower() in FILE_ENDINGS:
        example = output.with_name(f"{output.name.split('.')[0]}.{FILE_NAMES[formats[0]]}") if formats else output
        raise XpuProfilerError(
            f"--output {plain(str(output))}: a file's name, but of no output (the outputs' names end in "
            f"{', '.join(OUTPUT_ENDINGS)}): name one of them (e.g. {plain(example.name)}), or a directory for all"
        )
    return {f: output / FILE_NAMES[f] for f in formats}


def check_outputs(
    output: str | Path, formats: Sequence[str], inputs: Iterable[str | Path | None] = ()
) -> dict[str, Path]:
    """``output_paths``, refused before any work when one cannot be written (its parent is
    a file, it is a directory, its name is too long) or would replace one of ``inputs``
    (an earlier analysis's outputs in an input directory are no inputs)."""
    paths = output_paths(output, formats)
    atomic_write.check_outputs(paths, formats_.with_units(inputs), own_outputs.our_files)
    return paths


def export(
    profile: Profile,
    summary: Summary,
    output: str | Path,
    formats: Sequence[str] = DEFAULT_FORMATS,
    inputs: Iterable[str | Path | None] = (),
    ahead: exporters.Ahead | None = None,
    paths: dict[str, Path] | None = None,
) -> dict[str, Path]:
    """Write every requested format, each whole (a temporary file renamed into place);
    returns {format: path}. An output that cannot be written raises ``OutputError``
    (its ``written``: the outputs already in place, which stay); none replaces an input.
    ``paths``: what ``check_outputs`` gave before the work (else it is checked here);
    ``ahead``: the exporters' work done ahead (``Analyzed.ahead``)."""
    known = exporters.registry()
    written: dict[str, Path] = {}
    for fmt, path in (paths if paths is not None else check_outputs(output, formats, inputs)).items():
        try:
            made = ahead.get(fmt) if ahead is not None else None
            if fmt == "bundle":
                written[fmt] = profile.save(path)
            elif made is not None:
                written[fmt] = known[fmt].write(profile, summary, path, ahead=made)
            else:
                written[fmt] = known[fmt].write(profile, summary, path)
        except atomic_write.OutputError as e:
            e.written = dict(written)
            raise
    return written
