"""The Summary's sections as msgspec structs: typed fields, units in their names."""

from __future__ import annotations

from typing import Any, Optional

import msgspec

SCHEMA = "xpu_profiler.summary"
SCHEMA_VERSION = 2


class _Struct(msgspec.Struct, kw_only=True):
    """Every section: keyword-only, unknown fields ignored when read back."""


# -- run ---------------------------------------------------------------------------

class Source(_Struct):
    """One input the profile was read from."""

    path: str = ""
    format: str = ""
    rank: Optional[int] = None
    events: Optional[int] = None
    #: what that reader records about the file (line counts, devices, world size...)
    details: dict[str, Any] = {}


class Run(_Struct, omit_defaults=True):
    """What was profiled. ``engine``, ``workload``, ``versions`` and ``extra`` are
    free-form JSON values; everything an exporter reads is a typed field. Fields that
    nothing recorded are left out of ``summary.json`` (``None`` when read back)."""

    model: Optional[str] = None
    device: Optional[str] = None          # kind: cpu, cuda, kunlun_p800, ...
    device_name: Optional[str] = None
    detail_level: Optional[str] = None
    metrics: list[str] = []
    start_time_ns: Optional[int] = None   # Unix epoch
    host: Optional[str] = None
    incomplete: Optional[bool] = None     # live runs: whether everything was collected
    incomplete_reason: Optional[str] = None
    step_source: Optional[str] = None     # vllm_annotation, profiler_step, xpu_profiler_hooks
    clock_shift_ns: Optional[int] = None  # torch trace clock aligned onto the step hooks' clock
    sources: list[Source] = []
    versions: dict[str, str] = {}
    engine: dict[str, Any] = {}
    workload: dict[str, Any] = {}
    #: kernel logs captured next to a live run (files, lines, used or cross-check only)
    device_logs: Optional[dict[str, Any]] = None
    #: everything else a reader or the live session recorded
    extra: dict[str, Any] = {}


# -- op time -------------------------------------------------------------------------

class Totals(_Struct):
    op_time_ns: int = 0            # the basis: device work, or top-level host ops without any
    device_kernel_ns: int = 0
    device_busy_ns: int = 0        # union over streams, summed over ranks
    host_op_ns: int = 0            # top-level host ops
    wall_ns: int = 0               # first to last timed event
    events: int = 0
    steps: int = 0                 # step rows (one per engine step per rank)
    ranks: int = 0
    other_share: float = 0.0       # of op time no fused op claimed
    unstepped_share: float = 0.0   # of op time outside every step
    prefill_tokens: int = 0        # one rank's (every TP rank runs the same batch)
    decode_tokens: int = 0
    kernel_names: int = 0          # distinct names on the basis (top_kernels lists the first ones)


class FusedOp(_Struct):
    """One fused op's op time, split by phase (keys: ``PHASES``)."""

    fused_op: str
    time_ns: int = 0
    count: int = 0
    share: float = 0.0                                 # of op time
    time_ns_by_phase: dict[str, int] = {}
    count_by_phase: dict[str, int] = {}
    #: op time per token of that phase (prefill, decode, mixed); None without tokens
    per_token_ns_by_phase: dict[str, Optional[float]] = {}
    #: reserved: op time by how it was attributed (launching op, module, capture, name)
    time_ns_by_source: dict[str, int] = {}


class FusedTime(_Struct):
    fused_op: str
    time_ns: int = 0


class Phase(_Struct):
    phase: str
    steps: int = 0
    time_ns: int = 0               # op time
    wall_ns: int = 0               # sum of its steps' wall time
    tokens: int = 0
    per_token_ns: Optional[float] = None
    step_p50_ns: Optional[float] = None
    step_p99_ns: Optional[float] = None
    top_fused: list[FusedTime] = []
    bound: Optional[str] = None    # reserved: "host" or "device", with the evidence in findings
    #: the phase's units of work (kernels, or top-level host ops on the host basis)
    kernels: Optional["KernelStats"] = None
    #: op time launched inside the model's output head (LogitsProcessor: lm_head GEMM and
    #: logits), None when the trace has no layer-module ranges to tell it apart
    output_head_ns: Optional[int] = None
    sampler_ns: Optional[int] = None      # op time launched inside the Sampler module (None: unknown)


class KernelStats(_Struct):
    """One phase's units of work and how they were launched."""

    unit: str = "kernel"           # "kernel" (device work) or "host_op" (top-level host ops)
    count: int = 0
    time_ns: int = 0
    steps: int = 0                 # steps of the phase whose units were recorded
    per_step: Optional[float] = None
    launches: int = 0              # runtime calls that launched device work (by correlation id)
    graph_launches: int = 0        # of which graph replays (cudaGraphLaunch, hipGraphLaunch, ...)
    graph_kernels: int = 0         # kernels those replays ran
    per_launch: Optional[float] = None   # kernels per launching call; 1.0: one launch per kernel
    #: duration percentiles 0, 1, ..., 100 (101 values, ns)
    dur_pct_ns: list[float] = []


class Steps(_Struct):
    """The steps table, columnar: one entry per step row (engine step × rank)."""

    rank: list[int] = []
    step_id: list[int] = []
    phase: list[str] = []
    start_ns: list[int] = []
    wall_ns: list[int] = []
    busy_ns: list[int] = []        # op time (union) inside the step's window
    idle_ns: list[int] = []        # wall − busy
    prefill_tokens: list[int] = []
    decode_tokens: list[int] = []
    prefill_reqs: list[int] = []
    decode_reqs: list[int] = []
    running: list[int] = []        # -1: not known
    waiting: list[int] = []        # -1: not known
    kv_usage: list[Optional[float]] = []  # 0..1


class Rank(_Struct):
    rank: int
    op_time_ns: int = 0
    device_kernel_ns: int = 0
    device_busy_ns: int = 0
    wall_ns: int = 0
    steps: int = 0
    busy_share: Optional[float] = None  # busy over wall: inside the steps, else the rank's span
    time_ns_by_fused: dict[str, int] = {}  # op time by fused op


class Kernel(_Struct):
    """One kernel (or host op, on the host basis) by name."""

    name: str
    fused_op: str = "other"
    kind: str = ""
    count: int = 0
    time_ns: int = 0
    mean_ns: float = 0.0
    share: float = 0.0             # of op time
    time_ns_by_phase: dict[str, int] = {}
    count_by_phase: dict[str, int] = {}


# -- throughput and memory ---------------------------------------------------------------

class Distribution(_Struct):
    p50: Optional[float] = None
    p99: Optional[float] = None
    mean: Optional[float] = None
    n: int = 0


class Throughput(_Struct):
    # from the steps (one rank's)
    prefill_tokens: Optional[int] = None
    decode_tokens: Optional[int] = None
    duration_ns: Optional[int] = None          # first step start to last step end
    prefill_tok_s: Optional[float] = None
    decode_tok_s: Optional[float] = None
    # from the requests table
    requests: Optional[int] = None
    ttft_ns: Optional[Distribution] = None
    tpot_ns: Optional[Distribution] = None
    e2e_ns: Optional[Distribution] = None
    output_tokens: Optional[int] = None
    output_tok_s: Optional[float] = None
    prompt_tokens: Optional[int] = None        # prompt lengths of the requests, summed
    # over the measured window of a live run
    window_ns: Optional[int] = None
    window_prefill_tokens: Optional[int] = None
    window_decode_tokens: Optional[int] = None
    window_output_tokens: Optional[int] = None
    window_total_tok_s: Optional[float] = None
    window_output_tok_s: Optional[float] = None


class Series(_Struct):
    """One counter series of one rank (downsampled; the peak is always kept)."""

    rank: int
    name: str                      # e.g. device_allocated_bytes, kv_cache_usage, decode_tokens_per_s
    t_ns: list[int] = []
    value: list[Optional[float]] = []


class Memory(_Struct):
    series: list[Series] = []
    peak: dict[str, float] = {}    # series name → largest value over ranks


class DeviceSpec(_Struct):
    name: str = ""
    peak_flops: dict[str, float] = {}   # dtype (bf16, fp16, fp8, fp32, int8) → FLOP/s
    mem_bw_bytes_s: Optional[float] = None
    mem_bytes: Optional[int] = None
    source: str = ""


class Roofline(_Struct):
    """Achieved FLOP/s and bytes/s of one phase's component against the device's peaks."""

    phase: str
    component: str                 # gemm, attention, moe, or "step" (the whole phase, over wall time)
    source: str                    # trace (with_flops), shapes (recorded input shapes), analytic
    time_ns: int = 0               # op time of the component (wall time for "step")
    flops: Optional[float] = None
    bytes: Optional[float] = None
    flop_s: Optional[float] = None
    bytes_s: Optional[float] = None
    peak_flop_s: Optional[float] = None
    peak_bytes_s: Optional[float] = None
    flops_share: Optional[float] = None   # of peak FLOP/s (MFU)
    bw_share: Optional[float] = None      # of peak memory bandwidth
    judged_by: str = "flops"       # which peak bounds it: "flops" (prefill GEMMs) or "bandwidth" (decode)
    note: str = ""                 # what is unknown (peak, dtype, model config)


# -- reserved sections ------------------------------------------------------------------

class DeviceSteps(_Struct):
    """Reserved: each step's device-side span (what it launched), columnar like ``Steps``."""

    rank: list[int] = []
    step_id: list[int] = []
    device_start_ns: list[int] = []
    device_end_ns: list[int] = []
    device_busy_ns: list[int] = []
    device_idle_ns: list[int] = []
    starved_ns: list[int] = []     # gap after the previous step's last device work
    bound: list[str] = []          # "host" or "device"


class Idle(_Struct):
    """Reserved: idle time between consecutive kernels of one stream, by cause."""

    rank: int
    stream: int
    phase: str = "unknown"
    host_wait_ns: int = 0
    kernel_wait_ns: int = 0
    other_ns: int = 0


class Collective(_Struct):
    """Reserved: one kind of collective matched across the ranks of a group."""

    name: str
    group: str = ""
    phase: str = "unknown"
    count: int = 0
    latency_ns: int = 0            # min duration across ranks, summed
    wait_ns_by_rank: dict[str, int] = {}
    skew_ns: int = 0
    bus_bytes_s: Optional[float] = None


class RankComm(_Struct):
    """Reserved: one rank's communication: wait, straggling, overlap with compute."""

    rank: int
    comm_ns: int = 0
    overlapped_ns: int = 0
    exposed_ns: int = 0
    wait_ns: int = 0
    arrived_last_share: Optional[float] = None
    arrived_first_share: Optional[float] = None


class Comm(_Struct):
    collectives: list[Collective] = []
    ranks: list[RankComm] = []


class Finding(_Struct):
    """Reserved: one finding of the rule table: what, how much time, what to change."""

    rule: str
    title: str
    phase: Optional[str] = None
    at_stake_share: float = 0.0    # of step time
    trigger: str = ""              # the trigger that fired, with its thresholds
    evidence: dict[str, Any] = {}
    fix: str = ""
    why: str = ""
    steps: list[int] = []
    ranks: list[int] = []


class DiffRow(_Struct):
    phase: str
    key: str                       # fused op or kernel name
    base_per_token_ns: Optional[float] = None
    new_per_token_ns: Optional[float] = None
    change_share: Optional[float] = None


class Diff(_Struct):
    """Reserved: how this run compares with a base run."""

    base: str = ""
    rows: list[DiffRow] = []


# -- the whole summary -----------------------------------------------------------------

class Summary(_Struct):
    schema: str = SCHEMA
    schema_version: int = SCHEMA_VERSION
    run: Run = msgspec.field(default_factory=Run)
    basis: str = "host"            # "device": op time is device work; "host": top-level host ops
    has_timeline: bool = True      # False for kernel logs without timestamps
    totals: Totals = msgspec.field(default_factory=Totals)
    fused_ops: list[FusedOp] = []  # by op time, largest first
    phases: list[Phase] = []       # prefill, decode, mixed, unknown (those present)
    steps: Steps = msgspec.field(default_factory=Steps)
    ranks: list[Rank] = []
    throughput: Throughput = msgspec.field(default_factory=Throughput)
    memory: Memory = msgspec.field(default_factory=Memory)
    top_kernels: list[Kernel] = []
    device: Optional[DeviceSpec] = None
    roofline: list[Roofline] = []
    warnings: list[str] = []
    # reserved
    device_steps: DeviceSteps = msgspec.field(default_factory=DeviceSteps)
    idle: list[Idle] = []
    comm: Comm = msgspec.field(default_factory=Comm)
    findings: list[Finding] = []
    diff: Optional[Diff] = None
