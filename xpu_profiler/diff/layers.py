"""BASE vs NEW per kind of decoder layer, phase by phase: what one layer of each kind costs.

Layers compare across models and vendors where kernel names never do: a kind (sliding- or
full-attention, MoE or dense, draft) is the same job on any device. Cost is per layer and
token of the phase when both runs count tokens (runs of different batch sizes and lengths
compare), else per layer and step. Kinds are matched by label; a kind left on each side
with the same MLP and role is matched to its counterpart (an attention window one run
names and the other cannot tell); an "all layers" row always compares the mean layer.
"""

from __future__ import annotations

from ..summary import Summary
from ..summary.diff import LayerDelta
from ..summary.schema_layers import LayerKind, LayerPhase

NOISE = 1e-9
ALL = "all layers"


def _cost(k: LayerKind, per: str, steps: int) -> float | None:
    if per == "token":
        return k.per_layer_token_ns
    return k.per_layer_step_ns if steps else None


def _all(ph: LayerPhase) -> LayerKind:
    n = sum(k.layers for k in ph.kinds)
    fused: dict[str, int] = {}
    for k in ph.kinds:
        for op, v in k.fused_ns.items():
            fused[op] = fused.get(op, 0) + v
    return LayerKind(
        kind=ALL,
        attention="",
        mlp="",
        layers=n,
        time_ns=ph.layers_ns,
        per_layer_step_ns=ph.layers_ns / n / ph.steps if n and ph.steps else 0.0,
        per_layer_token_ns=ph.layers_ns / n / ph.tokens if n and ph.tokens else None,
        fused_ns=fused,
    )


def _top_change(b: LayerKind, n: LayerKind, bd: float, nd: float) -> str:
    """The fused op whose cost per layer moved most ("moe +12.0 ns"): ``bd``/``nd`` divide
    each side's kind time into per-layer costs in the unit compared."""
    ops = set(b.fused_ns) | set(n.fused_ns)
    if not ops or not bd or not nd:
        return ""
    moves = {op: n.fused_ns.get(op, 0) / nd - b.fused_ns.get(op, 0) / bd for op in ops}
    op = max(moves, key=lambda o: abs(moves[o]))
    return f"{op} {moves[op]:+,.1f} ns"


def _pairs(bk: list[LayerKind], nk: list[LayerKind]) -> list[tuple[LayerKind | None, LayerKind | None]]:
    nmap = {k.kind: k for k in nk}
    pairs: list[tuple[LayerKind | None, LayerKind | None]] = []
    rest_b = []
    for k in bk:
        if k.kind in nmap:
            pairs.append((k, nmap.pop(k.kind)))
        else:
            rest_b.append(k)
    rest_n = list(nmap.values())
    for k in list(rest_b):
        same = [x for x in rest_b if (x.mlp, x.role) == (k.mlp, k.role)]
        other = [x for x in rest_n if (x.mlp, x.role) == (k.mlp, k.role)]
        if len(same) == len(other) == 1:
            pairs.append((k, other[0]))
            rest_b.remove(k)
            rest_n.remove(other[0])
    pairs += [(k, None) for k in rest_b] + [(None, k) for k in rest_n]
    return pairs


def layer_deltas(base: Summary, new: Summary) -> tuple[list[LayerDelta], list[str]]:
    """Per phase both runs have layers in: one row per kind, and the mean layer; notes."""
    if base.layers is None or new.layers is None:
        return [], []
    bp = {p.phase: p for p in base.layers.phases}
    np_ = {p.phase: p for p in new.layers.phases}
    rows: list[LayerDelta] = []
    notes: list[str] = []
    for ph in [p for p in bp if p in np_]:
        b, n = bp[ph], np_[ph]
        per = "token" if b.tokens and n.tokens else "step"
        bd = (b.tokens if per == "token" else b.steps) or 1
        nd = (n.tokens if per == "token" else n.steps) or 1
        for side, p in (("BASE", b), ("NEW", n)):
            if p.inferred:
                notes.append(
                    f"{side}'s {ph} layers are inferred from the kernel period (confidence {p.confidence:.2f})"
                )
        if b.layers != n.layers:
            notes.append(f"{ph}: BASE has {b.layers} layers per step, NEW {n.layers}: compared per layer")
        for bk, nk in [(_all(b), _all(n)), *_pairs(b.kinds, n.kinds)]:
            bc = _cost(bk, per, b.steps) if bk else None
            nc = _cost(nk, per, n.steps) if nk else None
            change = nc / bc - 1.0 if bc and nc is not None else None
            status = (
                "added"
                if bk is None
                else "removed"
                if nk is None
                else "unchanged"
                if change is not None and abs(change) <= NOISE
                else "changed"
            )
            top = ""
            if status == "changed" and bk is not None and nk is not None and bk.layers and nk.layers:
                top = _top_change(bk, nk, bd * bk.layers, nd * nk.layers)
            if bk is not None and nk is not None and bk.kind != nk.kind:
                kind = f"{bk.kind} → {nk.kind}"
            else:
                kind = bk.kind if bk is not None else nk.kind if nk is not None else ""
            rows.append(
                LayerDelta(
                    phase=ph,
                    kind=kind,
                    base_layers=bk.layers if bk else None,
                    new_layers=nk.layers if nk else None,
                    per=per,
                    base_per_layer_ns=bc,
                    new_per_layer_ns=nc,
                    change=change,
                    status=status,
                    top_change=top,
                )
            )
    return rows, notes
