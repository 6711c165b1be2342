"""The rule for a device-bound phase: where its own time goes, and what makes that part cheaper."""

from __future__ import annotations

from ..summary import Summary
from .base import Context, Hit, Thresholds
from .inputs import all_wall, engine_of, pct
from .knobs import knob

#: (phase, the fused op that holds most of its op time) → the remedy (``knobs``)
TOPICS = {
    ("decode", "gemm"): "decode_weights",
    ("mixed", "gemm"): "decode_weights",
    ("prefill", "gemm"): "prefill_compute",
    ("decode", "attention"): "attention_backend",
    ("prefill", "attention"): "attention_backend",
    ("mixed", "attention"): "attention_backend",
}
# MoE- and collective-dominated phases have rules of their own (moe_share, exposed_comm)


def device_bound(s: Summary, th: Thresholds, ctx: Context) -> Hit | None:
    """A device-bound phase whose largest fused op holds at least ``share`` of its op time:
    that op is where its steps go; the fix is the one for that op in that phase."""
    wall = all_wall(s)
    best = None
    for p in s.phases:
        if p.bound != "device" or not p.top_fused or not p.time_ns:
            continue
        top = p.top_fused[0]
        share = top.time_ns / p.time_ns
        topic = TOPICS.get((p.phase, top.fused_op))
        if topic is None or share < th["share"]:
            continue
        hit = Hit(
            at_stake=top.time_ns / wall if wall else 0.0,
            phase=p.phase,
            title=(
                f"{p.phase.capitalize()} is device-bound and its device time is {top.fused_op}: {pct(share)} of its "
                "op time"
            ),
            evidence={"fused_op": top.fused_op, "share": share, "time_ns": top.time_ns, "steps": p.steps},
            fix=knob(topic, engine_of(s)),
        )
        if best is None or hit.at_stake > best.at_stake:
            best = hit
    return best
