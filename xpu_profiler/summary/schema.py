"""The Summary's sections as msgspec structs: typed fields, units in their names (the
multi-rank ones in ``schema_ranks``)."""

from __future__ import annotations

from typing import Any

import msgspec

from .schema_device import Attribution, DeviceSteps, Graphs, Idle, Roofline
from .schema_host import HostPath, HostTime
from .schema_layers import Layers
from .schema_ranks import (
    Comm,
    EngineSteps,
    Parallel,
    Rank,
    RankAlignment,
)
from .schema_steps import StepSearch, VerdictGap
from .struct import _Struct  # the sections' base

SCHEMA = "xpu_profiler.summary"
SCHEMA_VERSION = 2


# -- run ---------------------------------------------------------------------------


class Source(_Struct):
    """One input the profile was read from."""

    path: str = ""
    format: str = ""
    rank: int | None = None
    events: int | None = None
    #: what that reader records about the file (line counts, devices, world size...)
    details: dict[str, Any] = {}


class DroppedInput(_Struct):
    """An input file of a directory that could not be read and was left out."""

    path: str = ""
    reason: str = ""
    rank: int | None = None  # the rank its name says, when it says one


class Run(_Struct, omit_defaults=True):
    """What was profiled. ``engine``, ``workload``, ``versions`` and ``extra`` are
    free-form JSON values; everything an exporter reads is a typed field. Fields that
    nothing recorded are left out of ``summary.json`` (``None`` when read back)."""

    model: str | None = None
    device: str | None = None  # kind: cpu, cuda, kunlun_p800, ...
    device_name: str | None = None
    detail_level: str | None = None
    metrics: list[str] = []
    start_time_ns: int | None = None  # Unix epoch
    host: str | None = None
    incomplete: bool | None = None  # live runs: whether everything was collected
    incomplete_reason: str | None = None
    #: vllm_annotation, sglang_annotation, profiler_step, python_frames, device_segments,
    #: xpu_profiler_hooks
    step_source: str | None = None
    clock_shift_ns: int | None = None  # torch trace clock aligned onto the step hooks' clock
    sources: list[Source] = []
    versions: dict[str, str] = {}
    engine: dict[str, Any] = {}
    workload: dict[str, Any] = {}
    #: kernel logs captured next to a live run (files, lines, used or cross-check only)
    device_logs: dict[str, Any] | None = None
    #: everything else a reader or the live session recorded
    extra: dict[str, Any] = {}


# -- op time -------------------------------------------------------------------------


class Totals(_Struct):
    op_time_ns: int = 0  # the basis: device work, or top-level host ops without any
    device_kernel_ns: int = 0
    device_busy_ns: int = 0  # union over streams, summed over ranks
    host_op_ns: int = 0  # top-level host ops
    wall_ns: int = 0  # first to last timed event (on the ranks' aligned clock where their offsets are known)
    events: int = 0
    steps: int = 0  # engine steps, each counted once however many ranks ran it
    step_rows: int = 0  # step rows: one per engine step per rank
    engines: int = 0  # engines (data-parallel replicas) the steps belong to
    ranks: int = 0
    other_share: float = 0.0  # of op time no fused op claimed
    unstepped_share: float = 0.0  # of op time outside every step
    prefill_tokens: int = 0  # over the engine steps (every TP/PP rank runs the same batch)
    decode_tokens: int = 0
    kernel_names: int = 0  # distinct names on the basis (top_kernels lists the first ones)


class FusedOp(_Struct):
    """One fused op's op time, split by phase (keys: ``PHASES``)."""

    fused_op: str
    time_ns: int = 0
    count: int = 0
    share: float = 0.0  # of op time
    time_ns_by_phase: dict[str, int] = {}
    count_by_phase: dict[str, int] = {}
    #: op time per token of that phase (prefill, decode, mixed): each rank's op time over the
    #: tokens of its own steps, the mean over ranks (max: the largest rank's); None without tokens
    per_token_ns_by_phase: dict[str, float | None] = {}
    per_token_max_ns_by_phase: dict[str, float | None] = {}
    #: op time by how it was attributed (keys: ``attribution_source.KEYS``: launching op,
    #: layer module, capture trace, kernel name, none)
    time_ns_by_source: dict[str, int] = {}


class FusedTime(_Struct):
    fused_op: str
    time_ns: int = 0


class DeviceTime(_Struct):
    """A phase's device time, summed over its steps (see ``DeviceSteps``)."""

    period_ns: int = 0  # starved + effective device range, summed
    busy_ns: int = 0
    idle_ns: int = 0  # inside the device spans
    starved_ns: int = 0
    host_wait_ns: int = 0
    kernel_wait_ns: int = 0
    other_ns: int = 0
    waiting_on_host_ns: int = 0
    queue_delay_ns: float | None = None  # median launch → start over its device work
    comm_ns: int = 0  # its collective work (union per step)
    exposed_comm_ns: int = 0  # ... that no other device work overlapped
    #: median over its steps of the host's time from the step's start to its first launch
    host_prep_ns: float | None = None


class Phase(_Struct):
    phase: str
    steps: int = 0  # engine steps
    time_ns: int = 0  # op time, all ranks
    wall_ns: int = 0  # sum of its engine steps' wall time (the slowest rank's)
    tokens: int = 0
    per_token_ns: float | None = None  # mean over ranks of a rank's op time per token
    per_token_max_ns: float | None = None  # the largest rank's
    #: over engine steps, each step's time on the critical path: the longer of its host range
    #: and its effective device range where it launched device work (``step_clock``), else its
    #: host range (the slowest rank's)
    step_p50_ns: float | None = None
    step_p99_ns: float | None = None
    step_clock: str | None = None  # "critical_path" or "host"
    host_p50_ns: float | None = None  # the steps' host ranges, for comparison
    #: step time per token of the phase (its steps' critical-path time summed / its tokens)
    step_per_token_ns: float | None = None
    top_fused: list[FusedTime] = []
    #: "host", "device" or "communication" (-bound); None without device work
    bound: str | None = None
    bound_evidence: str | None = None  # the numbers behind the verdict, in one sentence
    #: the largest idle gaps of its steps (host wait first): what the verdict rests on
    bound_gaps: list[VerdictGap] = []
    #: how the phase was inferred when its steps carry no phase of their own (None: recorded)
    inferred_from: str | None = None
    device: DeviceTime | None = None
    #: the phase's units of work (kernels, or top-level host ops on the host basis)
    kernels: KernelStats | None = None
    #: op time launched inside the model's output head (LogitsProcessor: lm_head GEMM and
    #: logits), None when the trace has no layer-module ranges to tell it apart
    output_head_ns: int | None = None
    sampler_ns: int | None = None  # op time launched inside the Sampler module (None: unknown)
    host: HostTime | None = None  # the exposed host time by cause (None without device work)


class KernelStats(_Struct):
    """One phase's units of work and how they were launched."""

    unit: str = "kernel"  # "kernel" (device work) or "host_op" (top-level host ops)
    count: int = 0
    time_ns: int = 0
    steps: int = 0  # steps of the phase whose units were recorded
    per_step: float | None = None
    launches: int = 0  # runtime calls that launched device work (by correlation id)
    graph_launches: int = 0  # of which graph replays (cudaGraphLaunch, hipGraphLaunch, ...)
    graph_kernels: int = 0  # kernels those replays ran
    per_launch: float | None = None  # kernels per launching call; 1.0: one launch per kernel
    #: duration percentiles 0, 1, ..., 100 (101 values, ns)
    dur_pct_ns: list[float] = []


class Steps(_Struct):
    """The steps table, columnar: one entry per step row (engine step × rank)."""

    rank: list[int] = []
    step_id: list[int] = []
    engine_step: list[int] = []  # index into ``EngineSteps``: the engine step this row ran
    phase: list[str] = []
    start_ns: list[int] = []
    wall_ns: list[int] = []  # the host range
    #: the step's time on the critical path (the longer of its host range and its effective
    #: device range; its host range without device work)
    step_ns: list[int] = []
    evidence: list[str] = []  # what found the step (``StepSearch.found_by`` keys)
    phase_from: list[str] = []  # recorded, copies, graph_launches, none
    #: with device work: the union of the step's own device work, and the device idle
    #: inside its device span (``DeviceSteps``); on the host basis (CPU runs): the union
    #: of top-level host ops inside the step's window, and wall − busy
    busy_ns: list[int] = []
    idle_ns: list[int] = []
    span_ns: list[int] = []  # first to last of the work the row launched; its wall without any
    wait_ns: list[int] = []  # its wait at collectives (others' late arrival)
    prefill_tokens: list[int] = []
    decode_tokens: list[int] = []
    prefill_reqs: list[int] = []
    decode_reqs: list[int] = []
    running: list[int] = []  # -1: not known
    waiting: list[int] = []  # -1: not known
    kv_usage: list[float | None] = []  # 0..1


class Kernel(_Struct):
    """One kernel (or host op, on the host basis) by name."""

    name: str
    fused_op: str = "other"
    kind: str = ""
    count: int = 0
    time_ns: int = 0
    mean_ns: float = 0.0
    share: float = 0.0  # of op time
    time_ns_by_phase: dict[str, int] = {}
    count_by_phase: dict[str, int] = {}


# -- throughput and memory ---------------------------------------------------------------


class Distribution(_Struct):
    p50: float | None = None
    p99: float | None = None
    mean: float | None = None
    n: int = 0


class Throughput(_Struct):
    # from the steps (one rank's)
    prefill_tokens: int | None = None
    decode_tokens: int | None = None
    duration_ns: int | None = None  # first step start to last step end
    #: a phase's tokens over its steps' time on the critical path (None: the phase, or its
    #: tokens, unknown)
    prefill_tok_s: float | None = None
    decode_tok_s: float | None = None
    #: all the steps' tokens over ``duration_ns`` (the window: the time between steps included)
    span_tok_s: float | None = None
    # from the requests table
    requests: int | None = None
    ttft_ns: Distribution | None = None
    tpot_ns: Distribution | None = None
    e2e_ns: Distribution | None = None
    output_tokens: int | None = None
    output_tok_s: float | None = None
    prompt_tokens: int | None = None  # prompt lengths of the requests, summed
    # over the measured window of a live run
    window_ns: int | None = None
    window_prefill_tokens: int | None = None
    window_decode_tokens: int | None = None
    window_output_tokens: int | None = None
    window_total_tok_s: float | None = None
    window_output_tok_s: float | None = None


class Requests(_Struct):
    """Every request the profile saw, columnar (one entry per request). Latencies are None
    where a request had not reached that point when the records end."""

    req: list[str] = []
    rank: list[int] = []
    arrival_ns: list[int | None] = []
    prompt_len: list[int] = []
    output_len: list[int] = []
    ttft_ns: list[int | None] = []  # arrival to first token
    tpot_ns: list[float | None] = []  # first token to finish, per further output token
    e2e_ns: list[int | None] = []  # arrival to finish


class Series(_Struct):
    """One counter series of one rank (downsampled; the peak is always kept)."""

    rank: int
    name: str  # e.g. device_allocated_bytes, kv_cache_usage, decode_tokens_per_s
    t_ns: list[int] = []
    value: list[float | None] = []


class Memory(_Struct):
    series: list[Series] = []
    peak: dict[str, float] = {}  # series name → largest value over ranks


class DeviceSpec(_Struct):
    name: str = ""
    peak_flops: dict[str, float] = {}  # dtype (bf16, fp16, fp8, fp32, int8) → FLOP/s
    mem_bw_bytes_s: float | None = None
    mem_bytes: int | None = None
    source: str = ""


class Finding(_Struct):
    """One finding of the rule table (``findings``): what, how much time, what to change."""

    rule: str
    title: str
    phase: str | None = None
    at_stake_share: float = 0.0  # of step time
    trigger: str = ""  # the trigger that fired, with its thresholds
    evidence: dict[str, Any] = {}
    fix: str = ""
    why: str = ""
    steps: list[int] = []
    ranks: list[int] = []


class DiffRow(_Struct):
    phase: str
    key: str  # fused op or kernel name
    base_per_token_ns: float | None = None
    new_per_token_ns: float | None = None
    change_share: float | None = None


class Diff(_Struct):
    """Reserved: how this run compares with a base run."""

    base: str = ""
    rows: list[DiffRow] = []


# -- the whole summary -----------------------------------------------------------------


class Selection(_Struct):
    """The part of the input kept by ``analyze --steps`` / ``--max-events``."""

    steps: str | None = None  # "A:B" as given
    max_events: int | None = None
    events_total: int = 0  # events read
    events_kept: int = 0
    skipped_share: float = 0.0  # (total - kept) / total


class Summary(_Struct):
    schema: str = SCHEMA
    schema_version: int = SCHEMA_VERSION
    run: Run = msgspec.field(default_factory=Run)
    basis: str = "host"  # "device": op time is device work; "host": top-level host ops
    has_timeline: bool = True  # False for kernel logs without timestamps
    totals: Totals = msgspec.field(default_factory=Totals)
    fused_ops: list[FusedOp] = []  # by op time, largest first
    phases: list[Phase] = []  # prefill, decode, mixed, unknown (those present)
    steps: Steps = msgspec.field(default_factory=Steps)
    engine_steps: EngineSteps = msgspec.field(default_factory=EngineSteps)
    alignment: RankAlignment = msgspec.field(default_factory=RankAlignment)
    ranks: list[Rank] = []
    throughput: Throughput = msgspec.field(default_factory=Throughput)
    requests: Requests = msgspec.field(default_factory=Requests)
    memory: Memory = msgspec.field(default_factory=Memory)
    top_kernels: list[Kernel] = []
    device: DeviceSpec | None = None
    roofline: list[Roofline] = []
    #: why there is no MFU or bandwidth row although steps counted tokens ("" when there are
    #: rows, or nothing to estimate): what to give for them
    roofline_missing: str = ""
    warnings: list[str] = []
    dropped_inputs: list[DroppedInput] = []  # files of a directory left out (unreadable), with why
    attribution: Attribution = msgspec.field(default_factory=Attribution)
    graphs: Graphs = msgspec.field(default_factory=Graphs)
    device_steps: DeviceSteps = msgspec.field(default_factory=DeviceSteps)
    step_search: StepSearch = msgspec.field(default_factory=StepSearch)
    idle: list[Idle] = []
    comm: Comm = msgspec.field(default_factory=Comm)
    parallel: Parallel = msgspec.field(default_factory=Parallel)
    findings: list[Finding] = []  # ranked, filled by the facade (``findings.attach``)
    selection: Selection | None = None  # only part of the input was kept
    diff: Diff | None = None  # reserved (``xpu_profiler diff`` writes its own diff.json)
    layers: Layers | None = None  # op time per decoder layer and kind of layer (None: no layers found)
    host_path: HostPath = msgspec.field(default_factory=HostPath)  # exposed host time, for the trace
