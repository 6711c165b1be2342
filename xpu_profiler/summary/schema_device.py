"""The Summary's device-timeline sections: each step on the device's clock, idle gaps, graph
replays, and where each fused op's attribution came from."""

from __future__ import annotations

from .struct import _Struct

# -- device time and attribution --------------------------------------------------------


class DeviceSteps(_Struct):
    """Each step's device-side span (the work it launched), columnar like ``Steps`` and in
    the same row order; rows without device work have ``device_start_ns`` -1. Idle gaps
    are device-level (no stream busy) and belong to the step whose work ended them:
    host wait, kernel wait (at most ``kernel_wait_max_ns``), other; ``waiting_on_host``
    decides the verdict: host-bound when it is at least ``host_bound_share`` of the
    device period (starved + effective span), else communication-bound when exposed
    collectives are at least ``comm_bound_share`` of it, else device-bound."""

    rank: list[int] = []
    step_id: list[int] = []
    phase: list[str] = []
    device_start_ns: list[int] = []
    #: the effective device range's start: after a leading wait on earlier work (a
    #: dependency of at least 1 ms before 5% of the step's work had run), else device_start_ns
    effective_start_ns: list[int] = []
    device_end_ns: list[int] = []
    device_busy_ns: list[int] = []
    device_idle_ns: list[int] = []
    starved_ns: list[int] = []  # gap after the previous step's last device work
    host_wait_ns: list[int] = []
    kernel_wait_ns: list[int] = []
    other_ns: list[int] = []
    waiting_on_host_ns: list[int] = []
    queue_delay_ns: list[int] = []  # mean launch → start of the step's work, -1 unknown
    comm_ns: list[int] = []  # collective work (union)
    exposed_comm_ns: list[int] = []  # ... that no other device work of the rank overlapped
    #: "host", "device" or "communication"; None without device work
    bound: list[str | None] = []
    #: gpu_user_annotation twin vs the span found through correlation ids: max end
    #: difference, None without a twin
    twin_diff_ns: list[int | None] = []
    host_bound_share: float = 0.0
    comm_bound_share: float = 0.0  # communication-bound: exposed collectives >= this share
    kernel_wait_max_ns: int = 0
    #: {"steps": with a twin, "agree": within tolerance, "max_diff_ns", "tolerance_ns"}
    twins: dict[str, int] = {}


class Idle(_Struct):
    """Idle time between consecutive work of one device stream, by cause (HTA's view: a
    stream idle while another runs counts), per phase of the work after each gap."""

    rank: int
    stream: int
    device: int = -1
    phase: str = "unknown"
    busy_ns: int = 0  # the stream's work in that phase (sum of durations)
    gaps: int = 0
    host_wait_ns: int = 0
    kernel_wait_ns: int = 0
    other_ns: int = 0


class Graphs(_Struct):
    """Graph replays (CUDA/HIP/XPU graphs) and how their kernels were attributed."""

    replays: int = 0
    launches: int = 0  # replays whose graph launch is in the trace
    replayed_events: int = 0
    replayed_ns: int = 0  # device time under replays (sum of durations)
    device_ns: int = 0
    share: float = 0.0  # replayed_ns / device_ns
    capture_files: list[str] = []
    captured_graphs: int = 0
    matched_events: int = 0  # replayed events matched to a captured launch
    attributed_events: int = 0  # ... whose fused op the capture decided
    matched_share: float | None = None  # None without capture traces
    by_name: int = 0  # replays matched by kernel names / by position
    by_position: int = 0
    unmatched: int = 0


class Attribution(_Struct):
    """How op time was attributed (keys: ``attribution_source.KEYS``)."""

    time_ns_by_source: dict[str, int] = {}
    share_by_source: dict[str, float] = {}
    name_share: float = 0.0  # inferred from the kernel name alone
    unattributed_share: float = 0.0  # no source at all ("other")
    # what the structure rules found: moe_blocks, moe_events, staging_copies, attention_pre
    structure: dict[str, int] = {}


class Roofline(_Struct):
    """Achieved FLOP/s and bytes/s of one phase's component against the device's peaks."""

    phase: str
    component: str  # gemm, attention, moe, or "step" (the whole phase, over wall time)
    source: str  # trace (with_flops), shapes (recorded input shapes), analytic
    time_ns: int = 0  # op time of the component (wall time for "step")
    flops: float | None = None
    bytes: float | None = None
    flop_s: float | None = None
    bytes_s: float | None = None
    peak_flop_s: float | None = None
    peak_bytes_s: float | None = None
    flops_share: float | None = None  # of peak FLOP/s (MFU)
    bw_share: float | None = None  # of peak memory bandwidth
    judged_by: str = "flops"  # which peak bounds it: "flops" (prefill GEMMs) or "bandwidth" (decode)
    note: str = ""  # what is unknown (peak, dtype, model config)
    #: a figure above its peak, which no device achieves: the share is left None and this
    #: says which figure it was and why it cannot be right ("" when none is)
    over_peak: str = ""


# -- findings and the reserved diff --------------------------------------------------------
