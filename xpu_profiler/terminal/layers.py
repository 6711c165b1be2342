"""The layer view on the terminal: per phase, how the layers were found, the table of layer
kinds, what runs outside the layers, and the slowest layers."""

from __future__ import annotations

from ..core import fmt
from ..summary import Summary
from ..summary.labels import LAYER_EVIDENCE, LAYER_UNITS
from .layout import Block, table, titled

SLOWEST = 5
EVEN = 0.02  # layers this close to their mean are not listed one by one


def _ns(v: float | None) -> str:
    return fmt.ns(v, fmt.TERMINAL)


def _pct(v: float) -> str:
    return fmt.pct(v, fmt.TERMINAL)


def _top_ops(fused: dict[str, int], n: int = 3) -> str:
    total = sum(fused.values())
    top = sorted(fused.items(), key=lambda kv: -kv[1])[:n]
    return ", ".join(f"{k} {_pct(v / total)}" for k, v in top) if total else ""


def render_layers(summary: Summary) -> list[Block]:
    lay = summary.layers
    if lay is None:
        return []
    out: list[Block] = []
    for ph in lay.phases:
        unit = LAYER_UNITS.get(ph.unit, ph.unit)
        head = f"Layers [{ph.phase}]: {ph.layers} per {unit}"
        if ph.draft_layers:
            head += f" + {ph.draft_layers} draft"
        head += f", from {LAYER_EVIDENCE.get(ph.evidence, ph.evidence)}"
        if ph.inferred:
            head += f", confidence {ph.confidence:.2f}"
        head += f"; {ph.steps} {unit}(s)"
        out += titled(head) + [f"  {fmt.plain(ph.detail)}"]
        rows = [
            [
                fmt.plain(k.kind),
                str(k.layers),
                _ns(k.per_layer_step_ns),
                _ns(k.per_layer_token_ns) if k.per_layer_token_ns is not None else "-",
                _pct(k.share),
                _top_ops(k.fused_ns),
            ]
            for k in ph.kinds
        ]
        out += table(["kind", "layers", "per layer/step", "per layer/token", "share", "by fused op"], rows, "lrrrrl")
        op = ph.op_time_ns or 1
        out.append(f"  the layers hold {_pct(ph.layers_ns / op)} of the op time; outside them, per {unit}:")
        out.append(
            f"    head {_ns(ph.head_ns / ph.steps)} ({_top_ops(ph.head_fused_ns, 2) or '-'}), "
            f"tail {_ns(ph.tail_ns / ph.steps)} ({_top_ops(ph.tail_fused_ns, 2) or '-'}), "
            f"other {_ns(ph.other_ns / ph.steps)}"
        )
        slow = sorted(ph.rows, key=lambda r: -r.per_step_ns)[:SLOWEST]
        if len(ph.rows) > 1 and slow:
            mean = sum(r.per_step_ns for r in ph.rows) / len(ph.rows)
            if slow[0].per_step_ns <= (1 + EVEN) * mean:
                out.append(f"  every layer within {EVEN:.0%} of the mean ({_ns(mean)})")
            else:
                parts = [f"#{r.index} {_ns(r.per_step_ns)} ({fmt.plain(r.kind)})" for r in slow]
                out.append(f"  slowest layers (mean {_ns(mean)}): " + ", ".join(parts))
        for n in ph.notes:
            out.append(f"  note: {fmt.plain(n)}")
    if lay.refused:
        parts = [f"{fmt.plain(k)} ({v})" for k, v in lay.refused.items()]
        what = "Layers not found in some steps" if lay.phases else "Layers: none found"
        out += titled(f"{what}: " + "; ".join(parts))
    return out
