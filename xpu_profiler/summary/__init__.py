"""The typed contract between the analysis and every output: ``Summary``.

``aggregate.summarize(profile)`` builds one; the terminal, ``summary.json``, the
CSV table, the HTML report and the Perfetto trace read it and never recompute
the analysis. Field names carry their unit: ``*_ns`` (integer or mean
nanoseconds on the profile's clock), ``*_bytes``, ``*_share`` (a 0..1 fraction),
``*_tok_s`` (tokens per second); plain counts (``steps``, ``count``, ``tokens``)
have none. A ``None`` value means "not known", never zero.

``summary.json`` is ``encode(summary)``: msgspec's JSON with keys sorted, NaN and
infinities as null. ``load_summary`` reads it back (schema version 2, and the
untyped version 1 files of xpu_profiler 0.1).

The sections named "reserved" are empty until the analysis that fills them
exists (findings, diffs); they are typed now so that every exporter can rely
on their shape.

``schema`` holds the structs, ``metadata`` turns a profile's free-form run
metadata into the typed ``Run``, ``codec`` is ``summary.json``.
"""

from .codec import encode, load_summary, to_builtins
from .metadata import device_spec, run_from_metadata
from .schema import (
    SCHEMA,
    SCHEMA_VERSION,
    DeviceSpec,
    DeviceTime,
    Diff,
    DiffRow,
    Distribution,
    Finding,
    FusedOp,
    FusedTime,
    Kernel,
    KernelStats,
    Memory,
    Phase,
    Requests,
    Run,
    Series,
    Source,
    Steps,
    Summary,
    Throughput,
    Totals,
)
from .schema_device import Attribution, DeviceSteps, Graphs, Idle, Roofline
from .schema_host import HostCause, HostPath, HostTime
from .schema_layers import LayerKind, LayerPhase, LayerRow, Layers, LayerSpans
from .schema_ranks import (
    Collective,
    Comm,
    EngineSteps,
    Parallel,
    ParallelGroup,
    PipelineStage,
    Rank,
    RankAlignment,
    RankComm,
)
from .schema_steps import StepSearch, VerdictGap

__all__ = [
    "Attribution",
    "Collective",
    "Comm",
    "DeviceSpec",
    "DeviceSteps",
    "Parallel",
    "PipelineStage",
    "ParallelGroup",
    "RankAlignment",
    "EngineSteps",
    "DeviceTime",
    "HostCause",
    "HostPath",
    "HostTime",
    "Diff",
    "DiffRow",
    "Distribution",
    "Finding",
    "FusedOp",
    "FusedTime",
    "Graphs",
    "Idle",
    "Kernel",
    "KernelStats",
    "LayerKind",
    "LayerPhase",
    "LayerRow",
    "Layers",
    "LayerSpans",
    "Memory",
    "Phase",
    "Rank",
    "RankComm",
    "Requests",
    "Roofline",
    "Run",
    "SCHEMA",
    "SCHEMA_VERSION",
    "Series",
    "Source",
    "Steps",
    "StepSearch",
    "VerdictGap",
    "Summary",
    "Throughput",
    "Totals",
    "encode",
    "load_summary",
    "to_builtins",
    "device_spec",
    "run_from_metadata",
]
