"""The layer section of the Summary: each phase's layers and kinds, summed over its steps.

A phase counts the steps whose layers agree with its most common layer count (a step cut
by the profiling window, or one whose evidence failed, is left out and noted); each layer
sums its time over those steps and takes its kind from the first of them. Kinds are
compared per layer and step, and per layer and token of the phase.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from ...core.profile import PHASES, Profile
from ...knowledge.fused_ops import FUSED_OPS
from ...summary.schema_layers import LayerKind, LayerPhase, LayerRow, Layers, LayerSpans
from .find import UnitLayers, find_layers
from .kinds import layer_kinds

#: layer spans kept for the trace's layer track
MAX_SPANS = 8192


def layers_section(profile: Profile, basis: np.ndarray) -> Layers | None:
    """The Summary's layers, None when no step has any (and nothing says why)."""
    units, refused, cfg = find_layers(profile, basis)
    if not units and not refused:
        return None
    phases = []
    spans = LayerSpans()
    for ph in sorted({u.phase for u in units}):
        group = [u for u in units if u.phase == ph]
        phases.append(_phase(PHASES[ph], group, cfg, spans, profile))
    src = "run metadata" if isinstance(profile.run.get("model_config"), dict) else "config.json of the model"
    return Layers(
        phases=phases,
        config_layers=cfg.layers if cfg is not None else None,
        config_source=src if cfg is not None else "",
        refused=dict(refused.most_common()),
        spans=spans,
    )


def _fused(a: np.ndarray) -> dict[str, int]:
    return {FUSED_OPS[i]: int(v) for i, v in enumerate(a.tolist()) if v}


def _phase(phase: str, group: list[UnitLayers], cfg, spans: LayerSpans, profile: Profile) -> LayerPhase:
    shape = Counter((u.count, len(u.ns)) for u in group)
    (count, n), _ = shape.most_common(1)[0]
    kept = [u for u in group if (u.count, len(u.ns)) == (count, n)]
    first = kept[0]
    kinds = layer_kinds(first.evid, cfg, count)
    ns = np.sum([u.ns for u in kept], axis=0)
    fz = np.sum([u.fused for u in kept], axis=0)
    tokens = sum(u.tokens for u in kept)
    ev_counts = Counter(u.evidence for u in kept)
    evidence = ev_counts.most_common(1)[0][0]
    ev_units = [u for u in kept if u.evidence == evidence]
    _spans(spans, kept, kinds, profile)
    return LayerPhase(
        phase=phase,
        evidence=evidence,
        inferred=evidence == "period",
        confidence=float(min(u.confidence for u in ev_units)),
        detail=ev_units[0].detail,
        unit=first.unit,
        layers=count,
        draft_layers=n - count,
        steps=len(kept),
        steps_seen=len(group),
        tokens=tokens,
        op_time_ns=sum(u.op_ns for u in kept),
        layers_ns=int(ns.sum()),
        head_ns=int(sum(int(u.head.sum()) for u in kept)),
        tail_ns=int(sum(int(u.tail.sum()) for u in kept)),
        other_ns=sum(u.other for u in kept),
        head_fused_ns=_fused(np.sum([u.head for u in kept], axis=0)),
        tail_fused_ns=_fused(np.sum([u.tail for u in kept], axis=0)),
        kind_sources=sorted({k[s] for k in kinds for s in ("attention_source", "mlp_source") if k[s]}),
        rows=_rows(kept, kinds, ns, fz),
        kinds=_kinds(kinds, ns, fz, len(kept), tokens),
        notes=_notes(group, shape, kept, ev_counts, evidence, cfg, count),
    )


def _rows(kept: list[UnitLayers], kinds: list[dict], ns: np.ndarray, fz: np.ndarray) -> list[LayerRow]:
    """One row per layer, summed over the steps kept."""
    first, steps, total = kept[0], len(kept), int(ns.sum())
    kernels = np.sum([u.kernels for u in kept], axis=0)
    return [
        LayerRow(
            index=i,
            kind=kinds[i]["kind"],
            attention=kinds[i]["attention"],
            mlp=kinds[i]["mlp"],
            role=kinds[i]["role"],
            module=first.evid[i].module,
            attention_kernel=first.evid[i].attention_kernel,
            time_ns=int(ns[i]),
            per_step_ns=float(ns[i]) / steps,
            kernels_per_step=float(kernels[i]) / steps,
            share=float(ns[i]) / total if total else 0.0,
            fused_ns=_fused(fz[i]),
        )
        for i in range(len(ns))
    ]


def _kinds(kinds: list[dict], ns: np.ndarray, fz: np.ndarray, steps: int, tokens: int) -> list[LayerKind]:
    """One row per kind of layer, the costliest first."""
    total = int(ns.sum())
    by_kind: dict[str, list[int]] = {}
    for i, k in enumerate(kinds):
        by_kind.setdefault(k["kind"], []).append(i)
    rows = []
    for kind, idx in by_kind.items():
        t = int(ns[idx].sum())
        k0 = kinds[idx[0]]
        rows.append(
            LayerKind(
                kind=kind,
                attention=k0["attention"],
                mlp=k0["mlp"],
                role=k0["role"],
                layers=len(idx),
                time_ns=t,
                per_layer_step_ns=t / len(idx) / steps,
                per_layer_token_ns=(t / len(idx) / tokens) if tokens else None,
                share=t / total if total else 0.0,
                fused_ns=_fused(fz[idx].sum(axis=0)),
            )
        )
    rows.sort(key=lambda k: -k.time_ns)
    return rows


def _notes(group, shape: Counter, kept, ev_counts: Counter, evidence: str, cfg, count: int) -> list[str]:
    """What the phase's layer rows leave out or disagree with."""
    notes = []
    if len(kept) < len(group):
        other = ", ".join(f"{c} layers x{k}" for (c, _), k in shape.most_common()[1:])
        notes.append(f"{len(group) - len(kept)} step(s) with another layer count left out ({other})")
    if len(ev_counts) > 1:
        notes.append("evidence by step: " + ", ".join(f"{e} {k}" for e, k in ev_counts.most_common()))
    if cfg is not None and count != cfg.layers and evidence != "period":
        notes.append(f"the model config says {cfg.layers} layers, the trace shows {count} per step")
    return notes


def _spans(spans: LayerSpans, kept: list[UnitLayers], kinds: list[dict], profile: Profile) -> None:
    step_id = profile.steps["step_id"] if len(profile.steps) else np.zeros(0, np.int64)
    for u in kept:
        if len(spans.start_ns) + len(u.ns) > MAX_SPANS:
            spans.cut += len(u.ns)
            continue
        sid = int(step_id[u.step]) if u.step >= 0 else -1
        for i in range(len(u.ns)):
            spans.rank.append(u.rank)
            spans.step_id.append(sid)
            spans.index.append(i)
            spans.kind.append(kinds[i]["kind"])
            spans.start_ns.append(int(u.start[i]))
            spans.end_ns.append(int(u.end[i]))
