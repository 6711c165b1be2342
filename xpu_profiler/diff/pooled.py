"""All of a run's steps as one phase, ``all``: what two runs whose phases differ (one side's
steps of an unknown phase, the other's prefill and decode) still share.

Every figure is the one the summary would give the phase of all the steps: op time and
tokens add up; op time per token is the token-weighted mean of the phases' (each a mean
over ranks of op time per token, so the weighting is exact); the step p50/p99 are over each
engine step's critical-path time (the slowest rank's row of ``Summary.steps``); the exposed
host time per step and each cause's are the step-weighted means of the phases'.
"""

from __future__ import annotations

import msgspec
import numpy as np

from ..summary import HostCause, HostTime, Phase, Summary

ALL = "all"


def pooled(s: Summary) -> Summary:
    """``s`` with its phases pooled into one phase ``all`` (phase-keyed figures alike)."""
    phases = [p for p in s.phases if p.steps or p.time_ns]
    fused = [
        msgspec.structs.replace(
            f,
            time_ns_by_phase=_sum(f.time_ns_by_phase),
            per_token_ns_by_phase=_per_token(f.per_token_ns_by_phase, s.phases),
            count_by_phase=_sum(f.count_by_phase),
        )
        for f in s.fused_ops
    ]
    kernels = [
        msgspec.structs.replace(k, time_ns_by_phase=_sum(k.time_ns_by_phase), count_by_phase=_sum(k.count_by_phase))
        for k in s.top_kernels
    ]
    return msgspec.structs.replace(s, phases=[_phase(s, phases)], fused_ops=fused, top_kernels=kernels, layers=None)


def _sum(by_phase: dict[str, int]) -> dict[str, int]:
    total = sum(by_phase.values())
    return {ALL: total} if total else {}


def _per_token(by_phase: dict[str, float | None], phases: list[Phase]) -> dict[str, float | None]:
    tokens = {p.phase: p.tokens for p in phases}
    all_tokens = sum(tokens.values())
    if not all_tokens:
        return {}
    return {ALL: sum((v or 0.0) * tokens.get(ph, 0) for ph, v in by_phase.items()) / all_tokens}


def _phase(s: Summary, phases: list[Phase]) -> Phase:
    steps = sum(p.steps for p in phases)
    tokens = sum(p.tokens for p in phases)
    time = _engine_step_times(s)
    per_token = [(p.per_token_ns, p.tokens) for p in phases if p.per_token_ns is not None]
    return Phase(
        phase=ALL,
        steps=steps,
        time_ns=sum(p.time_ns for p in phases),
        wall_ns=sum(p.wall_ns for p in phases),
        tokens=tokens,
        per_token_ns=sum(v * t for v, t in per_token) / tokens if tokens and per_token else None,
        step_p50_ns=float(np.percentile(time, 50)) if len(time) else None,
        step_p99_ns=float(np.percentile(time, 99)) if len(time) else None,
        step_per_token_ns=float(time.sum()) / tokens if tokens and len(time) else None,
        host=_host(phases),
    )


def _engine_step_times(s: Summary) -> np.ndarray:
    """Per engine step, its time on the critical path: the slowest rank's row."""
    st = s.steps
    if not st.step_ns:
        return np.zeros(0, np.float64)
    engine = np.asarray(st.engine_step if st.engine_step else range(len(st.step_ns)), np.int64)
    out = np.zeros(int(engine.max()) + 1, np.int64)
    np.maximum.at(out, engine, np.asarray(st.step_ns, np.int64))
    seen = np.zeros(len(out), bool)
    seen[engine] = True
    return out[seen].astype(np.float64)


def _host(phases: list[Phase]) -> HostTime | None:
    hosts = [(p.host, p.steps) for p in phases if p.host is not None and p.steps]
    steps = sum(n for _, n in hosts)
    if not steps:
        return None
    causes: dict[tuple[str, str], HostCause] = {}
    for h, n in hosts:
        for c in h.causes:
            k = (c.cause, c.name)
            prev = causes.get(k)
            causes[k] = msgspec.structs.replace(
                c,
                per_step_ns=(prev.per_step_ns if prev else 0.0) + c.per_step_ns * n / steps,
                steps=(prev.steps if prev else 0) + c.steps,
            )
    exposed = sum(h.exposed_per_step_ns * n for h, n in hosts) / steps
    ranked = sorted(causes.values(), key=lambda c: -c.per_step_ns)
    for c in ranked:
        c.share = c.per_step_ns / exposed if exposed else 0.0
    return HostTime(steps=steps, exposed_per_step_ns=exposed, causes=ranked)
