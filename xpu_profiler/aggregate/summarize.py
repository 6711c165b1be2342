"""Profile → Summary: every section the exporters read, from an attributed Profile."""

from __future__ import annotations

import numpy as np

from ..profile import DEVICE_KINDS, K_CPU_OP, K_KERNEL, Profile
from ..summary import Summary, Totals, device_spec, run_from_metadata
from ..taxonomy import OTHER, Taxonomy
from .attribution import attribute, basis_mask
from .breakdown import Breakdown
from .kernels import HEAD_MODULES, SAMPLER_MODULES, kernel_stats, module_time, rank_fused
from .memory import memory
from .roofline import roofline, run_spec
from .steps import token_steps
from .tables import ranks_table, steps_table
from .throughput import throughput


def summarize(profile: Profile, top: int = 50, taxonomy: Taxonomy | None = None) -> Summary:
    """The typed Summary every exporter reads (attributing the profile first if needed)."""
    if not profile.run.get("attributed"):
        attribute(profile, taxonomy)
    ev, steps = profile.events, profile.steps
    kind, dur = ev["kind"], ev["dur"]
    basis = basis_mask(profile)
    b_idx = np.flatnonzero(basis)
    br = Breakdown(profile, b_idx)
    op_time = br.op_time
    ranks, dev_busy = ranks_table(profile, basis)
    timed = ev["start"] >= 0
    ts = token_steps(steps)
    phases = br.phases(profile)
    for ph, stats in kernel_stats(profile, basis).items():
        _phase(phases, ph).kernels = stats
    for ph, ns in (module_time(profile, basis, HEAD_MODULES) or {}).items():
        _phase(phases, ph).output_head_ns = ns
    for ph, ns in (module_time(profile, basis, SAMPLER_MODULES) or {}).items():
        _phase(phases, ph).sampler_ns = ns
    for row, by_fused in zip(ranks, rank_fused(profile, basis, [r.rank for r in ranks]).values()):
        row.time_ns_by_fused = by_fused
    spec = device_spec(run_spec(profile))
    wall = {p: int(steps["dur"][steps["phase"] == p].sum()) for p in np.unique(steps["phase"]).tolist()}
    return Summary(
        run=run_from_metadata(profile.run),
        has_timeline=profile.has_timeline,
        basis="device" if np.isin(kind, DEVICE_KINDS).any() else "host",
        totals=Totals(
            op_time_ns=op_time,
            device_kernel_ns=int(dur[kind == K_KERNEL].sum()),
            device_busy_ns=int(dev_busy.sum()),
            host_op_ns=int(dur[(kind == K_CPU_OP) & (ev["depth"] == 0)].sum()),
            wall_ns=int((ev["start"] + dur)[timed].max() - ev["start"][timed].min()) if timed.any() else 0,
            events=int(len(ev)),
            steps=int(len(steps)),
            ranks=len(profile.ranks),
            other_share=(int(br.time[OTHER].sum()) / op_time) if op_time else 0.0,
            unstepped_share=(int(br.b_dur[ev["step"][b_idx] < 0].sum()) / op_time) if op_time else 0.0,
            prefill_tokens=int(steps["prefill_tokens"][ts].sum()),
            decode_tokens=int(steps["decode_tokens"][ts].sum()),
            kernel_names=br.kernel_names(profile),
        ),
        fused_ops=br.fused_ops(),
        phases=phases,
        top_kernels=br.top_kernels(profile, top),
        steps=steps_table(steps),
        ranks=ranks,
        memory=memory(profile),
        throughput=throughput(profile),
        device=spec,
        roofline=roofline(profile, br.time, wall, spec),
        warnings=warnings(profile),
    )


def _phase(phases: list, name: str):
    """The Phase row of ``name`` (added when the breakdown had none)."""
    for p in phases:
        if p.phase == name:
            return p
    from ..summary import Phase

    phases.append(Phase(phase=name))
    return phases[-1]


def warnings(profile: Profile) -> list[str]:
    """What the readers and the session warned about, and what the timeline lacks."""
    out = list(profile.run.get("warnings", []))
    untimed = int(np.count_nonzero(profile.events["start"] < 0))
    if not profile.has_timeline:
        out.append("the input has no timestamps: totals per kernel only, no timeline")
    elif untimed:
        out.append(f"{untimed} events come from a source without timestamps: counted in the "
                   "totals, absent from the timeline and from every step")
    return out
