"""The notebook API: ``xpu_profiler.load(path)`` → an ``Analysis`` whose sections are
pandas DataFrames.

>>> a = xpu_profiler.load("traces/")           # a trace, a directory of ranks, a bundle...
>>> a.summary.phases[0].bound                  # the typed Summary (``xpu_profiler.summary``)
>>> a.fused_ops.head()                         # a DataFrame per section (pandas installed)
>>> a.report("report.html"); a.trace("trace.json.gz")

The same pipeline as ``xpu_profiler analyze`` (read, keep part, attribute, summarize,
findings), made of the layers below the facade; ``pandas`` is needed only for the tables
(``pip install 'xpu_profiler[notebook]'``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import msgspec

from . import aggregate, exporters, findings
from .aggregate import select
from .core import atomic_write
from .core.errors import XpuProfilerError
from .core.fmt import plain
from .core.profile import FRAME_SCHEMA, Profile, Table
from .readers import ReadOptions, bundle, own_outputs
from .readers.base import is_json_document, looks_like_kineto
from .readers.content import is_gzip, read_head
from .readers.formats import with_units
from .readers.loader import as_paths, load_run
from .summary import Summary, load_summary, schema
from .summary.schema_ranks import Collective, Rank

#: the DataFrame sections: name → what it holds (one row each)
SECTIONS = {
    "fused_ops": "a fused op (time, count, share; per phase and per attribution source as columns)",
    "phases": "a scheduler phase (steps, time, tokens, per-token cost, the verdict)",
    "steps": "one rank's part of an engine step (phase, tokens, wall, busy, idle, KV usage)",
    "kernels": "a kernel (or host op) of the top kernels (fused op, count, time, per phase)",
    "ranks": "a rank (op time, busy share, parallel groups, time by fused op)",
    "collectives": "a collective kind of one group and phase across ranks (latency, skew, bandwidth)",
    "requests": "a request (arrival, prompt and output length, TTFT, TPOT, end to end)",
    "findings": "a finding (rule, phase, time at stake, fix)",
}
PANDAS_MISSING = (
    "the notebook API's tables need pandas, which is not installed "
    "(pip install pandas, or pip install 'xpu_profiler[notebook]'); .summary works without it"
)


def _pandas() -> Any:
    try:
        import pandas
    except ImportError:
        raise ModuleNotFoundError(PANDAS_MISSING, name="pandas") from None
    return pandas


def _flat(row: dict[str, Any]) -> dict[str, Any]:
    """One level of nested dicts as ``field.key`` columns (HTA's and json_normalize's way), the
    keys sorted (the same columns from a Summary in memory and from its summary.json); lists
    and deeper values stay as they are."""
    out: dict[str, Any] = {}
    for k, v in row.items():
        if isinstance(v, dict):
            for kk, vv in sorted(v.items()):
                out[f"{k}.{kk}"] = vv
        else:
            out[k] = v
    return out


def rows_frame(items: Sequence[msgspec.Struct], kind: type[msgspec.Struct], drop: Iterable[str] = ()) -> Any:
    """A DataFrame of a list of Summary structs of type ``kind``, one row each (an empty
    list: no rows, the struct's fields as columns)."""
    pd = _pandas()
    skip = set(drop)
    rows = [_flat({k: v for k, v in msgspec.to_builtins(x).items() if k not in skip}) for x in items]
    if rows:
        return pd.DataFrame(rows)
    return pd.DataFrame(columns=[f.name for f in msgspec.structs.fields(kind) if f.name not in skip])


def columns_frame(table: msgspec.Struct) -> Any:
    """A DataFrame of a columnar Summary struct (every field a list of one length)."""
    pd = _pandas()
    cols = {k: v for k, v in msgspec.to_builtins(table).items() if isinstance(v, list)}
    n = max((len(v) for v in cols.values()), default=0)
    return pd.DataFrame({k: v for k, v in cols.items() if len(v) == n})


class Analysis:
    """A profile and its Summary, with each section as a DataFrame (``SECTIONS``)."""

    def __init__(
        self, summary: Summary, profile: Profile | None = None, source: str = "", inputs: Sequence[str | Path] = ()
    ) -> None:
        self.summary = summary
        self.profile = profile  # None when read from a summary.json
        self.source = source
        self.inputs = tuple(inputs)  # what it was read from: never overwritten by its outputs

    def __repr__(self) -> str:
        t = self.summary.totals
        return (
            f"<xpu_profiler Analysis of {plain(self.source) or 'a profile'}: {t.steps} engine steps, {t.ranks} rank(s), "
            f"{len(self.summary.findings)} finding(s); sections: {', '.join(SECTIONS)}>"
        )

    # -- the sections -------------------------------------------------------------------
    @property
    def fused_ops(self) -> Any:
        return rows_frame(self.summary.fused_ops, schema.FusedOp)

    @property
    def phases(self) -> Any:
        return rows_frame(self.summary.phases, schema.Phase, drop=("kernels", "top_fused", "device"))

    @property
    def steps(self) -> Any:
        return columns_frame(self.summary.steps)

    @property
    def kernels(self) -> Any:
        return rows_frame(self.summary.top_kernels, schema.Kernel)

    @property
    def ranks(self) -> Any:
        return rows_frame(self.summary.ranks, Rank)

    @property
    def collectives(self) -> Any:
        return rows_frame(self.summary.comm.collectives, Collective)

    @property
    def requests(self) -> Any:
        return columns_frame(self.summary.requests)

    @property
    def findings(self) -> Any:
        return rows_frame(self.summary.findings, schema.Finding, drop=("evidence",))

    # -- the outputs --------------------------------------------------------------------
    def _write(self, fmt: str, path: str | Path) -> Path:
        if not isinstance(path, (str, os.PathLike)) or isinstance(path, bytes) or str(path) == "":
            raise XpuProfilerError(f"path={path!r}: give a file name (str or pathlib.Path)")
        if self.profile is None and fmt == "perfetto":
            raise XpuProfilerError(f"{self.source}: a summary.json alone holds no events: load the trace for a {fmt}")
        what, endings = _OUTPUTS[fmt]
        if not Path(path).name.lower().endswith(endings):
            raise XpuProfilerError(f"{path}: {what} goes to a name ending in {' or '.join(endings)}")
        atomic_write.check_outputs([Path(path)], with_units(self.inputs), own_outputs.our_files)  # never over an input
        mod = exporters.registry()[fmt]
        return Path(mod.write(self.profile if self.profile is not None else Profile(), self.summary, Path(path)))

    def report(self, path: str | Path = "report.html") -> Path:
        """The self-contained HTML report."""
        return self._write("html", path)

    def trace(self, path: str | Path = "trace.json.gz") -> Path:
        """The Perfetto trace (``.json`` or ``.json.gz``)."""
        return self._write("perfetto", path)

    def save_summary(self, path: str | Path = "summary.json") -> Path:
        return self._write("json", path)


def _check_settings(rank: Any, steps: Any, max_events: Any) -> None:
    """The settings ``analyze`` checks on its command line, checked the same way."""
    from .readers.base import MAX_RANK, is_rank

    if rank is not None and not is_rank(rank):
        raise XpuProfilerError(f"rank={rank!r}: a rank is a whole number from 0 to {MAX_RANK - 1:,}")
    if steps is not None and (not isinstance(steps, str) or not steps.strip()):
        raise XpuProfilerError(
            f"steps={steps!r}: the engine steps kept are a string 'A:B' (A: or :B leave an end open)"
        )
    if max_events is not None and (not isinstance(max_events, int) or isinstance(max_events, bool) or max_events < 1):
        raise XpuProfilerError(f"max_events={max_events!r}: a whole number of at least 1")


#: what each writer of an ``Analysis`` writes, and the endings its name may have
_OUTPUTS = {
    "html": ("the HTML report", (".html", ".htm")),
    "perfetto": ("the Perfetto trace", (".json", ".json.gz")),
    "json": ("the summary", (".json",)),
}


def _is_summary(p: Path) -> bool:
    """A summary.json, whatever its name: a JSON document that is no trace (``diff`` reads
    its inputs the same way)."""
    if p.suffix != ".json" or not p.is_file() or is_gzip(p):
        return False
    head = read_head(p)
    return is_json_document(head) and not looks_like_kineto(head)


def load(
    paths: str | Path | Sequence[str | Path],
    *,
    capture: Iterable[str | Path] = (),
    rank: int | None = None,
    steps: str | None = None,
    max_events: int | None = None,
    python_frames: bool = True,
    findings_config: str | Path | None = None,
) -> Analysis:
    """Read and analyse a trace, a directory (ranks, a vLLM profiler directory, a server's
    record directory), a bundle, or several of them, as ``xpu_profiler analyze`` does; a
    ``summary.json`` is read back as it is (sections, no trace; the settings, which apply to a
    trace, raise there). ``steps="A:B"`` and
    ``max_events`` keep part of a large trace; ``python_frames=False`` leaves the Python
    stack frames out of the trace it writes (the analysis has them). A file that is no usable
    input raises ``XpuProfilerError`` (``TraceError``) with the line ``analyze`` prints."""
    items = as_paths(paths, "paths")
    capture = as_paths(capture, "capture", empty=True)
    _check_settings(rank, steps, max_events)
    if findings_config is not None and (
        not isinstance(findings_config, (str, os.PathLike))
        or isinstance(findings_config, bytes)
        or not str(findings_config)
    ):
        raise XpuProfilerError(f"findings_config={findings_config!r}: give the TOML file's path (str or pathlib.Path)")
    if len(items) == 1 and _is_summary(Path(items[0])):
        given: dict[str, Any] = {"capture": capture, "rank": rank, "steps": steps, "max_events": max_events}
        given |= {"python_frames": None if python_frames else False, "findings_config": findings_config}
        odd = [k for k, v in given.items() if v not in (None, [])]
        if odd:  # (a summary is read back as it was written: nothing to apply them to)
            raise XpuProfilerError(f"{items[0]}: a summary.json is read as it is; {odd[0]}= applies to a trace")
        try:
            return Analysis(load_summary(items[0]), None, str(items[0]), items)
        except ValueError as e:  # a JSON document that is no summary of ours: what analyze says of it
            if "not an xpu_profiler summary" not in str(e):
                raise XpuProfilerError(str(e)) from None
    profile, capture_profile = load_run(items, list(capture), ReadOptions(rank=rank), engine="auto")
    if capture_profile is None and (why := bundle.capture_warning(profile)):
        profile.warn(why)
    sel = select.Selection(select.parse_steps(steps) if steps else None, max_events)
    kept = select.apply(profile, sel) if sel else None
    aggregate.attribute(profile, None, capture=capture_profile)
    summary = aggregate.summarize(profile)
    if not python_frames:  # (analysed with them: out of the trace only)
        profile.frames = Table(FRAME_SCHEMA)
    if kept is not None:
        summary.selection = schema.Selection(**kept)
    cfg = findings.load_config(findings_config) if findings_config else None
    return Analysis(findings.attach(summary, cfg), profile, ", ".join(str(p) for p in items), [*items, *capture])
