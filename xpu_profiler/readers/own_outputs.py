"""Our own outputs found among the inputs: `analyze DIR -o DIR` (or `analyze .` with the
default output directory inside it) leaves an earlier analysis's outputs beside the traces
they were made from. Its Perfetto trace, read again, would be one more rank holding every
event twice; and its outputs are no inputs that a new analysis must not replace.

Our Perfetto trace is told by its content wherever it is (its ``metadata.producer``: the
Kineto reader refuses it); the other outputs by their names and their summary: ``trace.json.gz``, ``fused_ops.csv``,
``report.html`` beside our ``summary.json`` (``X.trace.json.gz``, ``X.fused_ops.csv``,
``X.html`` beside ``X.summary.json`` for ``--output X.html``). A bundle (``profile.npz``)
is an input: it holds the whole profile.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

#: the names our exporters give a trace, after the stem of its summary
TRACE_NAMES = ("trace.json.gz", "trace.json")
SUMMARY_NAME = "summary.json"
REASON = "an earlier xpu_profiler output: its summary.json is beside it"
#: a bundle (``--format bundle``) found beside other traces
BUNDLE_REASON = "a bundle xpu_profiler wrote: the traces beside it are read; pass the bundle alone to read it"
#: what reading our own Perfetto trace says, whatever its name or place (its events are the
#: analysed ones again: read as a rank, every number would count them twice)
OWN_TRACE = (
    "a Perfetto trace xpu_profiler wrote (an output, never an input): analyse the traces it was made "
    "from, or its bundle (--format bundle)"
)


class _SummaryMark(msgspec.Struct):
    """What every summary.json we write holds (the rest is not decoded)."""

    schema_version: int
    fused_ops: list[msgspec.Raw]


_DECODER = msgspec.json.Decoder(_SummaryMark)


def is_our_summary(path: Path) -> bool:
    try:
        _DECODER.decode(path.read_bytes())
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return False
    return True


def _summaries(files: list[Path]):
    """(summary, stem) of each file named like one of our summaries."""
    for f in files:
        if f.name == SUMMARY_NAME:
            yield f, ""
        elif f.name.endswith("." + SUMMARY_NAME):
            yield f, f.name[: -len(SUMMARY_NAME)]


def our_files(files: list[Path]) -> set[Path]:
    """Every output of ours among ``files``: our summaries and what we wrote beside them."""
    names = set(files)
    out: set[Path] = set()
    for f, stem in _summaries(files):
        if not is_our_summary(f):
            continue
        html = f.with_name(stem[:-1] + ".html" if stem else "report.html")
        out |= {f, html, f.with_name(stem + "fused_ops.csv"), *(f.with_name(stem + t) for t in TRACE_NAMES)} & names
    return out
