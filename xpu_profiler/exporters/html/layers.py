"""Time by layer: per phase, each layer's time per step as a bar stacked by fused op, and the
kinds of layers side by side (per layer and step), with how the layers were found."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...summary import LayerPhase, Summary
from ...summary.labels import LAYER_EVIDENCE, LAYER_UNITS
from .figures import axis, layout
from .style import OTHER_COLOR

SLOWEST = 5


def _top(fused: Mapping[str, int], colors: Mapping[str, str], n: int = 3) -> list[dict[str, Any]]:
    total = sum(fused.values())
    top = sorted(fused.items(), key=lambda kv: -kv[1])[:n] if total else []
    return [{"op": k, "share": v / total, "color": colors.get(k, OTHER_COLOR)} for k, v in top]


def _stacked(x: list, per_op: dict[str, list[float]], colors: Mapping[str, str], hover: str, custom=None) -> list:
    data = []
    for op, ys in per_op.items():
        if not any(ys):
            continue
        trace: dict[str, Any] = {
            "type": "bar",
            "name": op,
            "x": x,
            "y": ys,
            "marker": {"color": colors.get(op, OTHER_COLOR)},
            "hovertemplate": hover,
        }
        if custom is not None:
            trace["customdata"] = custom
        data.append(trace)
    return data


def build_layers(summary: Summary, colors: Mapping[str, str]) -> tuple[dict | None, dict]:
    """Per phase: the layers found, their time per step by fused op, the kinds of layers side
    by side, what runs outside them and the slowest ones."""
    lay = summary.layers
    if lay is None or not lay.phases:  # (why no step has layers: summary.json and the terminal)
        return None, {}
    figs: dict[str, Any] = {}
    phases: list[dict[str, Any]] = []
    for ph in lay.phases:
        ops = sorted(
            {op for r in ph.rows for op in r.fused_ns}, key=lambda o: -sum(r.fused_ns.get(o, 0) for r in ph.rows)
        )
        fid, kid = f"layers_{ph.phase}", f"layer_kinds_{ph.phase}"
        figs[fid] = _per_layer_figure(ph, ops, colors)
        figs[kid] = _per_kind_figure(ph, ops, colors)
        phases.append({**_phase_section(ph, colors), "figures": [fid, kid]})
    section = {
        "phases": phases,
        "figures": [f for p in phases for f in p["figures"]],
        "refused": [{"reason": k, "steps": v} for k, v in lay.refused.items()],
        "config_layers": lay.config_layers,
    }
    return section, figs


def _per_layer_figure(ph: LayerPhase, ops: list[str], colors: Mapping[str, str]) -> dict[str, Any]:
    """Each layer's time per step (µs), a bar stacked by fused op."""
    steps = max(ph.steps, 1)
    per_layer = {op: [r.fused_ns.get(op, 0) / steps / 1e3 for r in ph.rows] for op in ops}
    return {
        "data": _stacked(
            [r.index for r in ph.rows],
            per_layer,
            colors,
            "layer %{x} · %{customdata} · %{fullData.name}: %{y:.2f} µs<extra></extra>",
            [r.kind for r in ph.rows],
        ),
        "layout": layout(
            barmode="stack",
            height=340,
            bargap=0.15,
            xaxis=axis("layer", dtick=max(1, len(ph.rows) // 24)),
            yaxis=axis("µs per step"),
        ),
    }


def _per_kind_figure(ph: LayerPhase, ops: list[str], colors: Mapping[str, str]) -> dict[str, Any]:
    """One layer of each kind: its time per step (µs), a bar stacked by fused op."""
    steps = max(ph.steps, 1)
    kinds = [k.kind for k in ph.kinds]
    per_kind = {op: [k.fused_ns.get(op, 0) / max(k.layers, 1) / steps / 1e3 for k in ph.kinds] for op in ops}
    return {
        "data": _stacked(kinds, per_kind, colors, "%{x} · %{fullData.name}: %{y:.2f} µs per layer<extra></extra>"),
        "layout": layout(
            barmode="stack",
            height=320,
            bargap=0.35,
            xaxis={"automargin": True},
            yaxis=axis("µs per layer and step"),
        ),
    }


def _phase_section(ph: LayerPhase, colors: Mapping[str, str]) -> dict[str, Any]:
    """A phase's layers as the template shows them: how they were found, their kinds, what
    runs outside them (per step), the mean and the slowest layers."""
    steps = max(ph.steps, 1)
    mean = ph.layers_ns / max(len(ph.rows), 1) / steps
    slow = sorted(ph.rows, key=lambda r: -r.per_step_ns)[:SLOWEST]
    return {
        "phase": ph.phase,
        "evidence": LAYER_EVIDENCE.get(ph.evidence, ph.evidence),
        "inferred": ph.inferred,
        "confidence": ph.confidence,
        "detail": ph.detail,
        "unit": LAYER_UNITS.get(ph.unit, ph.unit),
        "layers": ph.layers,
        "draft_layers": ph.draft_layers,
        "steps": ph.steps,
        "layers_share": ph.layers_ns / ph.op_time_ns if ph.op_time_ns else None,
        "head_ns": ph.head_ns / steps,
        "tail_ns": ph.tail_ns / steps,
        "other_ns": ph.other_ns / steps,
        "head_top": _top(ph.head_fused_ns, colors, 2),
        "tail_top": _top(ph.tail_fused_ns, colors, 2),
        "kinds": [
            {
                "kind": k.kind,
                "layers": k.layers,
                "per_layer_step_ns": k.per_layer_step_ns,
                "per_layer_token_ns": k.per_layer_token_ns,
                "share": k.share,
                "top": _top(k.fused_ns, colors),
            }
            for k in ph.kinds
        ],
        "mean_ns": mean,
        "slowest": [{"index": r.index, "kind": r.kind, "per_step_ns": r.per_step_ns} for r in slow],
        "notes": list(ph.notes),
    }
