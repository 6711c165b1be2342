"""The ``StepSearch`` section: which evidence found the steps, and, when none did, the one
line that says so and names what was looked for (never an empty table that reads as an
all-clear)."""

from __future__ import annotations

from ...core.launches import device_mask
from ...core.profile import E_SEGMENT, Profile
from ...summary import StepSearch
from ..engine_family import vendor
from .device import DeviceTimeline
from .find import LOOKED_FOR


def no_steps_message(profile: Profile) -> str:
    """One line for a trace where no step was found."""
    ev = profile.events
    dev = int(device_mask(ev["kind"]).sum())
    what = "; ".join(LOOKED_FOR)
    empty = profile.derived.empty_steps
    if empty:
        found = f"{empty} step marker(s) were found, but they launched no device work and ran no host op"
    elif dev:
        found = "none was present, and the device work was too little or too even to split into steps"
    else:
        found = "none was present, and the trace has no device work to split"
    return (
        f"No engine step found: looked for {what}; {found}. So there are no step times, phases, "
        "verdicts or step-based findings; the totals hold for the whole trace."
    )


def step_search_section(profile: Profile, tl: DeviceTimeline | None) -> StepSearch:
    run, d = profile.run, profile.derived
    search = d.step_search
    steps = profile.steps
    out = StepSearch(
        source=d.step_source,
        found_by=dict(search.get("found_by") or ({"hooks": len(steps)} if len(steps) else {})),
        inferred=bool(len(steps)) and bool((steps["evidence"] == E_SEGMENT).all()),
        looked_for=list(search.get("looked_for") or []),
        frames=list(search.get("frames") or []),
        empty_steps=d.empty_steps,
        inexact_steps=d.inexact_steps,
        extended_by_sampling=int(search.get("extended_by_sampling") or 0),
        phase_inferred=dict(d.phase_inferred),
        engine=d.engine,
        engine_evidence=d.engine_evidence if d.engine is not None else None,
        vendor=vendor(profile),
        step_clock=("critical_path" if tl is not None and bool(tl.has.any()) else "host") if len(steps) else None,
    )
    if not len(steps) and profile.has_timeline and (len(profile.events) or run.get("sources")):
        out.message = no_steps_message(profile)
    return out
