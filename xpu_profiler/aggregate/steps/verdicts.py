"""A verdict per step and per phase: host-bound, communication-bound or device-bound, with
the gaps that prove it.

On the step's device period ``P`` (``device_steps``: starved time before its first work
plus its effective device range; a phase sums its steps):

1. no device work: no verdict (CPU runs: ops run on the host);
2. **host-bound** when the device waited on the host (``waiting_on_host``: host wait plus
   the launch latency of work that started as soon as it was launched) for at least
   ``HOST_BOUND_SHARE`` of ``P``: the launches arrived after the device had drained;
3. **communication-bound** when exposed collectives (collective work no other device work
   overlapped) are at least ``COMM_BOUND_SHARE`` of ``P``. On one rank of a multi-rank
   run, exposed collective time includes the wait for peers the trace cannot see;
4. else **device-bound**: the host kept ahead, the device ran its own work; every other
   cause of at least ``NOTE_SHARE`` is named (launch latency, dependency waits, exposed
   collectives from ``NOTE_COMM_SHARE``).

Why not "busy below half the step": a stream blocked on earlier work (a dependency, not
the host) and a host range that ends long before an asynchronous device does both make
that rule misfire; the cause of each gap, by the launch time of the work that ends it,
decides instead.
"""

from __future__ import annotations

import numpy as np

from ...core.fmt import TERMINAL, clip, ns, plain
from ...core.launches import launch_rows
from ...core.profile import PHASES, Profile
from ...summary import DeviceSteps, DeviceTime, VerdictGap
from .device import DeviceTimeline
from .idle import KERNEL_WAIT_NS
from .twins import TWIN_TOLERANCE_NS

#: host-bound: the device waited on the host for at least this share of its period
HOST_BOUND_SHARE = 0.2
#: communication-bound: exposed collectives for at least this share
COMM_BOUND_SHARE = 0.3
#: other causes named beside a device-bound verdict from this share (collectives: the second)
NOTE_SHARE = 0.05
NOTE_COMM_SHARE = 0.10
#: gaps shown as the evidence of a phase's verdict
TOP_GAPS = 3


def judge(period: float, waiting_on_host: float, exposed_comm: float) -> str | None:
    if period <= 0:
        return None
    if waiting_on_host >= HOST_BOUND_SHARE * period:
        return "host"
    if exposed_comm >= COMM_BOUND_SHARE * period:
        return "communication"
    return "device"


def step_bounds(tl: DeviceTimeline) -> list[str | None]:
    return [
        judge(p, w, c) if h else None
        for p, w, c, h in zip(
            tl.period.tolist(), tl.waiting_on_host.tolist(), tl.exposed_comm.tolist(), tl.has.tolist()
        )
    ]


SUMS = ("busy", "idle", "starved", "host_wait", "kernel_wait", "other", "waiting_on_host", "comm", "exposed_comm")


def phase_bound(profile: Profile, tl: DeviceTimeline, p: int) -> dict | None:
    """The device time of one phase's steps summed, its verdict and the evidence; None
    when its steps ran no device work."""
    phase = profile.steps["phase"]
    m = (phase == p) & tl.has
    if not m.any():
        return None
    period = int(tl.period[m].sum())
    if period <= 0:
        return None
    sums = {k: int(getattr(tl, k)[m].sum()) for k in SUMS}
    bound = judge(period, sums["waiting_on_host"], sums["exposed_comm"])
    q = tl.delay[phase[tl.delay_step] == p]
    delay = float(np.median(q)) if len(q) else None  # O(n) selection, no sort
    steps = profile.steps
    fl = tl.first_launch[m]
    prep = (fl - steps["start"][m])[fl >= 0]
    host_prep = float(np.median(prep)) if len(prep) else None
    gaps = top_gaps(profile, tl, m, bound == "host")
    single = len(profile.ranks) == 1 and sums["comm"] > 0
    return {
        "bound": bound,
        "period": period,
        "queue_delay": delay,
        "host_prep": host_prep,
        "gaps": gaps,
        **sums,
        "evidence": evidence(PHASES[p], int(m.sum()), bound, period, sums, delay, host_prep, gaps, single),
    }


def top_gaps(profile: Profile, tl: DeviceTimeline, steps_mask: np.ndarray, host_first: bool) -> list[VerdictGap]:
    """The largest device gaps inside the masked steps: by host wait when the verdict is
    host-bound, else by length."""
    g = tl.device_gaps
    sel = np.flatnonzero((tl.gap_step >= 0) & steps_mask[np.maximum(tl.gap_step, 0)])
    if not len(sel):
        return []
    key = g.host_wait[sel] if host_first else g.end[sel] - g.start[sel]
    sel = sel[np.argsort(-key, kind="stable")[:TOP_GAPS]]
    ev, steps = profile.events, profile.steps
    launch = launch_rows(profile)
    out = []
    for k in sel.tolist():
        row = int(g.row[k])
        s = int(tl.gap_step[k])
        la = int(launch[row])
        out.append(
            VerdictGap(
                rank=int(steps["rank"][s]),
                step_id=int(steps["step_id"][s]),
                start_ns=int(g.start[k]),
                dur_ns=int(g.end[k] - g.start[k]),
                host_wait_ns=int(g.host_wait[k]),
                launch_ns=int(g.kernel_wait[k]),
                dependency_ns=int(g.other[k]),
                next_work=profile.strings[int(ev["name"][row])],
                launched_by=profile.strings[int(ev["name"][la])] if la >= 0 else "",
            )
        )
    return out


def evidence(
    label: str,
    n_steps: int,
    bound: str | None,
    period: int,
    s: dict,
    delay: float | None,
    host_prep: float | None,
    gaps: list[VerdictGap],
    single_rank_comm: bool,
) -> str:
    """The verdict in one sentence: the shares of the device period and where they went."""

    def pct(x: float) -> str:
        return f"{100 * x / period:.1f}%" if period else "0%"

    head = (
        f"{label} is {bound}-bound: over its {n_steps} step(s)' device time ({ns(period, TERMINAL)}), "
        f"device busy {pct(s['busy'])}, waiting on the host {pct(s['waiting_on_host'])} "
        f"(host wait {pct(s['host_wait'])}), launch latency {pct(s['kernel_wait'])}, "
        f"dependency waits {pct(s['other'])}, exposed collectives {pct(s['exposed_comm'])}"
    )
    if bound == "host":
        why = "launches arrived after the device had drained"
        if gaps:
            why += "; largest waits: " + ", ".join(
                f"{ns(x.host_wait_ns, TERMINAL)} before {clip(plain(x.next_work), 40)}" for x in gaps
            )
    elif bound == "communication":
        why = "collectives nothing overlaps are on the critical path"
    else:
        notes = [
            f"{name} {pct(s[k])}"
            for name, k, floor in (
                ("launch latency", "kernel_wait", NOTE_SHARE),
                ("dependency waits", "other", NOTE_SHARE),
                ("exposed collectives", "exposed_comm", NOTE_COMM_SHARE),
            )
            if period and s[k] >= floor * period
        ]
        lead = f"its work queued a median {ns(delay, TERMINAL)} before it ran" if delay is not None else ""
        why = (
            "idle with its work already queued (dependencies, not the host)"
            if s["other"] > s["busy"]
            else "the host kept ahead of the device"
        )
        why = ", ".join(x for x in (lead, why) if x) + (f" (also: {', '.join(notes)})" if notes else "")
    if host_prep is not None:
        why += f"; the host ran a median {ns(host_prep, TERMINAL)} from a step's start to its first launch"
    if single_rank_comm and s["exposed_comm"]:
        why += "; one rank only: its collective time includes waiting for peers this trace cannot see"
    return f"{head}: {why}"


# -- the Summary's sections ------------------------------------------------------------------


def device_steps_section(profile: Profile, tl: DeviceTimeline | None) -> DeviceSteps:
    """The ``DeviceSteps`` section (empty without device work)."""
    if tl is None or not len(profile.steps):
        return DeviceSteps()
    steps = profile.steps
    twin = tl.twin_diff >= 0
    diff = tl.twin_diff[twin]
    return DeviceSteps(
        rank=steps["rank"].tolist(),
        step_id=steps["step_id"].tolist(),
        phase=[PHASES[p] for p in steps["phase"].tolist()],
        device_start_ns=tl.start.tolist(),
        effective_start_ns=tl.eff_start.tolist(),
        device_end_ns=tl.end.tolist(),
        device_busy_ns=tl.busy.tolist(),
        device_idle_ns=tl.idle.tolist(),
        starved_ns=tl.starved.tolist(),
        host_wait_ns=tl.host_wait.tolist(),
        kernel_wait_ns=tl.kernel_wait.tolist(),
        other_ns=tl.other.tolist(),
        waiting_on_host_ns=tl.waiting_on_host.tolist(),
        queue_delay_ns=tl.queue_delay.tolist(),
        comm_ns=tl.comm.tolist(),
        exposed_comm_ns=tl.exposed_comm.tolist(),
        bound=step_bounds(tl),
        twin_diff_ns=[int(d) if d >= 0 else None for d in tl.twin_diff.tolist()],
        host_bound_share=HOST_BOUND_SHARE,
        comm_bound_share=COMM_BOUND_SHARE,
        kernel_wait_max_ns=KERNEL_WAIT_NS,
        twins={
            "steps": int(twin.sum()),
            "agree": int((diff <= TWIN_TOLERANCE_NS).sum()),
            "max_diff_ns": int(diff.max()) if len(diff) else 0,
            "tolerance_ns": TWIN_TOLERANCE_NS,
        },
    )


def add_phase_bounds(phases: list, profile: Profile, tl: DeviceTimeline | None) -> None:
    """Fill each Phase's verdict, evidence, gaps and device time (in place)."""
    if tl is None:
        return
    for ph in phases:
        b = phase_bound(profile, tl, PHASES.index(ph.phase))
        if b is None:
            continue
        ph.bound, ph.bound_evidence, ph.bound_gaps = b["bound"], b["evidence"], b["gaps"]
        ph.device = DeviceTime(
            period_ns=b["period"],
            busy_ns=b["busy"],
            idle_ns=b["idle"],
            starved_ns=b["starved"],
            host_wait_ns=b["host_wait"],
            kernel_wait_ns=b["kernel_wait"],
            other_ns=b["other"],
            waiting_on_host_ns=b["waiting_on_host"],
            queue_delay_ns=b["queue_delay"],
            comm_ns=b["comm"],
            exposed_comm_ns=b["exposed_comm"],
            host_prep_ns=b["host_prep"],
        )
