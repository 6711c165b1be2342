"""The Summary's multi-rank sections (``schema`` holds the rest): engine steps across
ranks and how they were aligned, the ranks side by side, collectives, and the parallel
groups and pipeline stages."""

from __future__ import annotations

from .struct import _Struct

# -- engine steps and the ranks side by side ----------------------------------------------


class EngineSteps(_Struct):
    """One entry per engine step, columnar; its per-rank rows are in ``Steps``."""

    engine: list[int] = []  # the engine (data-parallel replica) that ran it
    step_id: list[int] = []  # the step's id in that engine, aligned across its ranks
    phase: list[str] = []
    prefill_tokens: list[int] = []
    decode_tokens: list[int] = []
    ranks: list[int] = []  # how many ranks' rows it has
    wall_ns: list[int] = []  # the longest wall time (host range) of its rows
    wall_min_ns: list[int] = []  # the shortest
    #: the longest span of its rows: first to last of the work a row launched (device work
    #: runs behind the host), its wall without any
    span_ns: list[int] = []
    #: the rank with the most time not waiting at collectives (span − wait): the one the
    #: others waited for, which sets the step's time
    slowest_rank: list[int] = []
    #: on the aligned clock (``RankAlignment.clock``): latest minus earliest rank start; None
    #: where the ranks' clocks could not be aligned
    start_skew_ns: list[int | None] = []


class RankAlignment(_Struct):
    """How the ranks were put side by side: steps by id or content, clocks by what."""

    #: "single_rank"; "step_id": the ids as recorded count the same engine step on every rank
    #: (step hooks, ProfilerStep#N); "content": each rank's sequence of steps matched on what
    #: the scheduler put in them (vLLM annotations number steps per rank from the start of
    #: its trace, and start_profile reaches ranks at different steps)
    steps: str = "single_rank"
    step_shift_by_rank: dict[str, int] = {}  # added to a rank's own step number
    step_match_share: float | None = None  # of overlapping rows whose content agreed
    #: "single_rank"; "shared": the ranks' clocks agree (matched collectives end together
    #: within ``clock_tolerance_ns``) and times are used as recorded; "collective_ends": each
    #: rank's clock is shifted by the median offset of its collectives' ends; "unknown"
    clock: str = "single_rank"
    clock_offset_ns_by_rank: dict[str, int] = {}
    clock_tolerance_ns: int = 0
    #: how collectives were matched across ranks: "seq" (the process group's sequence
    #: number), "step" (the k-th of its kind and group within one engine step), "order"
    #: (the k-th of its kind and group), "none"
    collectives: str = "none"


class Rank(_Struct):
    rank: int
    op_time_ns: int = 0
    device_kernel_ns: int = 0
    device_busy_ns: int = 0
    wall_ns: int = 0
    steps: int = 0
    busy_share: float | None = None  # busy over wall: inside the steps, else the rank's span
    #: the rank's place in vLLM's parallel layout (dp, pp, tp, dcp, ep), where known
    groups: dict[str, int] = {}
    time_ns_by_fused: dict[str, int] = {}  # op time by fused op
    step_wall_ns: int = 0  # sum of its step rows' wall time
    step_span_ns: int = 0  # sum of its step rows' span (EngineSteps.span_ns)
    slowest_steps: int = 0  # engine steps with >1 rank in which it was the slowest


# -- communication and parallel groups ---------------------------------------------------


class Collective(_Struct):
    """One kind of collective in one process group and phase, matched across its ranks.

    Per matched collective: latency = its shortest duration over the ranks (the transfer,
    without waiting), a rank's wait = the latest start − its own start, skew = latest −
    earliest start (end); all on the aligned clock (``RankAlignment.clock``)."""

    kind: str  # all_reduce, all_gather, reduce_scatter, all_to_all, ...
    name: str = ""  # the most common event name of these collectives
    group: str = ""  # process group, else the stream (or thread) it ran on
    phase: str = "unknown"
    count: int = 0  # collectives matched across >= 2 ranks
    ranks: int = 0  # ranks that took part (the most seen)
    latency_ns: int = 0  # sum over the collectives
    mean_latency_ns: float = 0.0
    wait_ns_by_rank: dict[str, int] = {}
    arrived_last_by_rank: dict[str, int] = {}
    start_skew_mean_ns: float = 0.0
    start_skew_max_ns: int = 0
    end_skew_mean_ns: float = 0.0
    end_skew_max_ns: int = 0
    bytes: int | None = None  # payload, where the trace says the sizes
    algo_bytes_s: float | None = None  # bytes / latency
    bus_bytes_s: float | None = None  # × 2(n−1)/n (all-reduce), (n−1)/n (gather, scatter, all-to-all)


class RankComm(_Struct):
    """One rank's communication in one phase ("all": every phase): wait, straggling, and
    how much of it compute hides."""

    rank: int
    phase: str = "all"
    collectives: int = 0  # matched collectives it took part in
    comm_ns: int = 0  # union of its communication intervals
    overlapped_ns: int = 0  # the part of it during which compute ran
    exposed_ns: int = 0  # comm − overlapped
    step_ns: int = 0  # its steps' wall time in that phase
    exposed_share: float | None = None  # exposed over step time
    wait_ns: int = 0
    mean_wait_ns: float | None = None
    arrived_last_share: float | None = None  # of its collectives, how often it came last (the straggler)
    arrived_first_share: float | None = None


class Comm(_Struct):
    collectives: list[Collective] = []
    ranks: list[RankComm] = []
    events: int = 0  # communication events seen
    matched_events: int = 0  # of them, matched with another rank's
    basis: str = ""  # "device": kernels; "host": host ops (CPU runs)


class ParallelGroup(_Struct):
    """One group of vLLM's parallel layout (ranks that differ only in that dimension)."""

    dim: str  # tp, pp, dp, ep, dcp
    key: str  # the coordinates its ranks share, e.g. "dp0_pp1"
    ranks: list[int] = []
    collectives: int = 0  # matched collectives among exactly these ranks' group
    exposed_ns: int = 0  # its ranks' exposed communication in those collectives
    exposed_share: float | None = None  # over its ranks' step time
    wait_ns: int = 0
    straggler: int | None = None  # the rank that came last most often
    straggler_share: float | None = None


class PipelineStage(_Struct):
    """One pipeline-parallel stage: how long it sat idle in the engine steps."""

    stage: int
    ranks: list[int] = []
    busy_ns: int = 0  # mean over its ranks of busy time inside the steps
    wall_ns: int = 0  # sum of the engine steps' wall time (the slowest rank's)
    bubble_ns: int = 0  # wall − busy
    bubble_share: float | None = None


class Parallel(_Struct):
    """vLLM's parallel layout, from the trace file names (``dp{d}_pp{p}_tp{t}_dcp{c}_ep{e}``)
    and process names (``Worker_DP0_PP1_TP0``): sizes, groups and pipeline stages."""

    sizes: dict[str, int] = {}
    groups: list[ParallelGroup] = []
    stages: list[PipelineStage] = []
    source: str = ""  # where the layout was read: file names, process names, run
