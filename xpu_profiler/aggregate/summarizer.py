"""Profile → Summary: every section the exporters read, from an attributed Profile."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Generic, TypeVar

import numpy as np

from ..core import heap
from ..core.launches import device_mask, launch_rows
from ..core.profile import K_CPU_OP, K_KERNEL, Profile
from ..knowledge.devices import DeviceSpec
from ..knowledge.fused_ops import OTHER
from ..knowledge.taxonomy import Taxonomy
from ..summary import Summary, Totals, device_spec, run_from_metadata
from .attribution import attribute, basis_mask
from .breakdown import Breakdown
from .kernels import HEAD_MODULES, SAMPLER_MODULES, kernel_stats, module_time
from .layers.section import layers_section
from .memory import memory
from .ranks.align import align_steps, alignment_section, engine_steps_table, engine_view, side_by_side
from .ranks.collectives import CLOCK_TOLERANCE_NS, match, one_host, step_waits
from .ranks.comm import comm_section
from .ranks.layout import layout
from .ranks.overlap import compute_events, overlap, step_spans
from .ranks.parallel import parallel_section
from .requests import requests
from .roofline import roofline, roofline_missing, run_spec
from .sources import attribution_section, graphs_section
from .steps.device import device_timeline
from .steps.find import token_steps
from .steps.host import host_pieces
from .steps.host_time import host_path, host_times
from .steps.idle import per_stream_rows
from .steps.search import step_search_section
from .steps.verdicts import add_phase_bounds, device_steps_section
from .tables import ranks_table, steps_table
from .throughput import throughput


def summarize(
    profile: Profile, top: int = 50, taxonomy: Taxonomy | None = None, specs: Mapping[str, DeviceSpec] | None = None
) -> Summary:
    """The typed Summary every exporter reads (attributing the profile first if needed);
    ``specs``: the device spec table to judge against (``knowledge.devices.specs()`` by default)."""
    if not profile.derived.attributed:
        attribute(profile, taxonomy)
    basis = basis_mask(profile)
    launch = launch_rows(profile)
    if not heap.can_spare(len(profile.events) * BESIDE_BYTES_PER_EVENT):
        return _summary(
            profile,
            top,
            basis,
            _Later(device_timeline, profile, launch),
            _Later(kernel_stats, profile, basis),
            _Later(memory, profile),
            specs,
        )
    with ThreadPoolExecutor(1, thread_name_prefix="xpu_profiler-summary") as beside:
        # sections that only read the attributed profile, computed beside the others (numpy
        # releases the GIL for much of their work)
        timeline = beside.submit(device_timeline, profile, launch)
        by_phase = beside.submit(kernel_stats, profile, basis)
        mem = beside.submit(memory, profile)
        return _summary(profile, top, basis, timeline, by_phase, mem, specs)


T = TypeVar("T")

#: what computing those sections beside the others adds to the peak, per event (the device
#: timeline's transient arrays, measured: 85 bytes per kept event of a 5M-event trace)
BESIDE_BYTES_PER_EVENT = 90


class _Later(Generic[T]):
    """A section computed where its result is first asked for, in this thread."""

    def __init__(self, fn: Callable[..., T], *args: Any) -> None:
        self._fn: Callable[..., T] | None = fn
        self._args: tuple[Any, ...] = args
        self._value: T

    def result(self) -> T:
        if self._fn is not None:
            self._value = self._fn(*self._args)
            self._fn, self._args = None, ()
        return self._value


def _summary(
    profile: Profile,
    top: int,
    basis: np.ndarray,
    timeline: Future | _Later,
    by_phase: Future | _Later,
    mem: Future | _Later,
    specs: Mapping[str, DeviceSpec] | None,
) -> Summary:
    steps = profile.steps
    # engine steps once, ranks as rows under them
    lay = layout(profile.run, profile.ranks)
    align = align_steps(profile, lay)
    b_idx = np.flatnonzero(basis)
    span = step_spans(profile, b_idx)
    # collectives across ranks, and how much of each rank's communication compute hides
    coll = match(profile, same_host=one_host(profile.run))
    wait = step_waits(profile, coll)
    view = engine_view(profile, span, span - wait)  # the slowest rank: the most time not waiting
    br = Breakdown(profile, b_idx)
    tl = timeline.result()
    if tl is not None:  # each step's own device work up to where the next step's begins (``device_timeline``)
        steps["busy"] = np.where(tl.has, tl.busy, steps["busy"])
    pieces = host_pieces(profile, tl)
    phases = _phases(profile, br, tl, basis, by_phase.result(), pieces)
    ranks, dev_busy = ranks_table(profile, basis, tl)
    side_by_side(ranks, profile, b_idx, lay, view, span)
    compute = compute_events(profile, basis, coll.idx, host=coll.basis == "host", work=coll.work)
    ov = overlap(profile, coll.idx, coll.work_end, compute, profile.ranks)
    clock_known = coll.clock in ("shared", "collective_ends")
    spec = device_spec(run_spec(profile, specs))
    step_t = tl.step_time if tl is not None else steps["dur"]  # MFU and bandwidth on the step time
    wall = {p: int(step_t[steps["phase"] == p].sum()) for p in np.unique(steps["phase"]).tolist()}
    roof = roofline(profile, br.time, wall, spec)
    return Summary(
        run=run_from_metadata(profile.run, profile.derived.step_source),
        has_timeline=profile.has_timeline,
        basis="device" if device_mask(profile.events["kind"]).any() else "host",
        totals=_totals(profile, br, b_idx, dev_busy, len(view.rows), align, coll.offsets if clock_known else None),
        fused_ops=br.fused_ops(),
        phases=phases,
        top_kernels=br.top_kernels(profile, top),
        steps=steps_table(profile, span, wait, tl),
        engine_steps=engine_steps_table(profile, align, view, coll.offsets if clock_known else None),
        alignment=alignment_section(align, coll.clock, coll.offsets, CLOCK_TOLERANCE_NS, coll.match),
        attribution=attribution_section(profile, b_idx),
        graphs=graphs_section(profile),
        device_steps=device_steps_section(profile, tl),
        step_search=step_search_section(profile, tl),
        idle=per_stream_rows(profile, tl.stream_gaps, tl.device_rows) if tl is not None else [],
        ranks=ranks,
        comm=comm_section(profile, coll, ov),
        parallel=parallel_section(profile, lay, coll, compute, view),
        memory=mem.result(),
        throughput=throughput(
            profile, (tl.eff_start, tl.end, tl.eff_start > tl.start) if tl is not None else None, phases
        ),
        requests=requests(profile),
        device=spec,
        roofline=roof,
        roofline_missing=roofline_missing(profile, roof),
        warnings=warnings(profile) + align.warnings + coll.warnings,
        dropped_inputs=dropped_inputs(profile),
        layers=layers_section(profile, basis),
        host_path=host_path(profile, pieces),
    )


def _phases(profile: Profile, br: Breakdown, tl, basis: np.ndarray, by_phase: dict, pieces) -> list:
    """Each phase: its op time, steps on the critical path, verdict, kernels, and the time
    of its output head and sampler modules."""
    step_time = tl.step_time if tl is not None else None
    phases = br.phases(profile, step_time, "critical_path" if tl is not None else "host")
    add_phase_bounds(phases, profile, tl)
    for ph, host in host_times(profile, pieces).items():
        _phase(phases, ph).host = host
    for ph, stats in by_phase.items():
        _phase(phases, ph).kernels = stats
    for ph, ns in (module_time(profile, basis, HEAD_MODULES) or {}).items():
        _phase(phases, ph).output_head_ns = ns
    for ph, ns in (module_time(profile, basis, SAMPLER_MODULES) or {}).items():
        _phase(phases, ph).sampler_ns = ns
    return phases


def _totals(
    profile: Profile,
    br: Breakdown,
    b_idx: np.ndarray,
    dev_busy: np.ndarray,
    steps: int,
    align,
    offsets: dict[int, int] | None,
) -> Totals:
    ev = profile.events
    kind, dur = ev["kind"], ev["dur"]
    op_time = br.op_time
    ts = token_steps(profile)
    return Totals(
        op_time_ns=op_time,
        device_kernel_ns=int(dur[kind == K_KERNEL].sum()),
        device_busy_ns=int(dev_busy.sum()),
        host_op_ns=int(dur[(kind == K_CPU_OP) & (ev["depth"] == 0)].sum()),
        wall_ns=_wall(profile, offsets),
        events=int(len(ev)),
        steps=steps,
        step_rows=int(len(profile.steps)),
        engines=int(len(np.unique(align.engines))) if len(align.engines) else 0,
        ranks=len(profile.ranks),
        other_share=(int(br.time[OTHER].sum()) / op_time) if op_time else 0.0,
        unstepped_share=(int(br.b_dur[ev["step"][b_idx] < 0].sum()) / op_time) if op_time else 0.0,
        prefill_tokens=int(profile.steps["prefill_tokens"][ts].sum()),
        decode_tokens=int(profile.steps["decode_tokens"][ts].sum()),
        kernel_names=br.kernel_names(profile),
    )


def _wall(profile: Profile, offsets: dict[int, int] | None) -> int:
    """First timed start to last timed end, on the ranks' aligned clock where their offsets
    are known (ranks on clocks seconds apart would otherwise span those seconds)."""
    ev = profile.events
    timed = ev["start"] >= 0
    if not timed.any():
        return 0
    start, end = ev["start"][timed], ev["start"][timed] + ev["dur"][timed]
    if offsets and any(offsets.values()):
        rank = ev["rank"][timed]
        off = np.zeros(len(start), np.int64)
        for r, v in offsets.items():
            if v:
                off[rank == r] = v
        start, end = start - off, end - off
    return int(end.max() - start.min())


def _phase(phases: list, name: str):
    """The Phase row of ``name`` (added when the breakdown had none)."""
    for p in phases:
        if p.phase == name:
            return p
    from ..summary import Phase

    phases.append(Phase(phase=name))
    return phases[-1]


def dropped_inputs(profile: Profile) -> list:
    """The input files the readers left out (``readers.load``), for the summary."""
    from ..summary.schema import DroppedInput

    out = []
    for d in profile.run.get("dropped_inputs", []):
        rank = d.get("rank")
        out.append(
            DroppedInput(
                path=str(d.get("path", "")),
                reason=str(d.get("reason", "")),
                rank=rank if isinstance(rank, int) else None,
            )
        )
    return out


def warnings(profile: Profile) -> list[str]:
    """What the readers, the session and the analysis warned about, and what the timeline lacks."""
    out = list(profile.run.get("warnings", [])) + profile.derived.warnings
    untimed = int(np.count_nonzero(profile.events["start"] < 0))
    if not profile.has_timeline:
        out.append("the input has no timestamps: totals per kernel only, no timeline")
    elif untimed:
        out.append(
            f"{untimed} events come from a source without timestamps: counted in the "
            "totals, absent from the timeline and from every step"
        )
    return out
