"""Decoder layers from the kernel stream alone: one attention (or mixer) run per layer.

Every decoder layer runs its token mixer once, so on the stream that runs the forward
pass the runs of attention-family kernels mark the layers. On a step's main stream, in
start order:

1. anchors: starts of runs of attention-family events (``fused`` attention, not the
   once-per-forward metadata kernels ``layer_names.NOT_ANCHOR``); two runs with only KV
   writes, rope or copies between them are one (a layer that launches attention twice);
2. forwards: a sampling or embedding event between two anchors starts another forward
   (a draft / MTP model run after the target's): its layers are counted apart;
3. the period: distances between anchors, regular (one length, >= 80% of them) or
   periodic over q <= 4 layers (alternating layer types: gpt-oss sliding/full);
4. boundaries: ``o`` events before each anchor, ``o`` = how far back the stretch before
   the first anchor equals the stretch before the second (layer 0's pre-attention part);
   the last layer of a forward is as long as the last one of the same phase of the
   period, and ends sooner at the tail: before the final norm and the vocabulary projection
   that lead to the sampling (``_last_end``). What comes before layer 0 is the head (embedding...), after
   the last layer the tail (final norm, lm_head, sampling).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

#: regular enough to call a period: this share of distances follow it
REGULAR_SHARE = 0.8
MAX_Q = 4
#: leading distances that may differ from the period (dense layers before MoE ones)
MAX_PREFIX = 4
#: layers needed before a period alone is believed
MIN_INFERRED = 3
#: layers at which the count from the period alone gets full confidence
FULL_CONFIDENCE_LAYERS = 8


class Anchors(NamedTuple):
    pos: np.ndarray  # positions (into the stream) of anchor-run starts
    forward: np.ndarray  # per anchor: 0 for the main forward, 1.. for later ones
    dropped: int  # edge anchors dropped as no layer's mark


class Segmentation(NamedTuple):
    layer: np.ndarray  # per stream event: layer number (forward by forward), -1 outside
    main: int  # layers of the main forward
    draft: int  # layers of later forwards
    q: int  # layers per period
    period: int  # events per period (q layers)
    regular_share: float
    offset: int


def anchor_runs(anchor: np.ndarray, mergeable: np.ndarray, brk: np.ndarray, tokens: np.ndarray) -> Anchors:
    """Anchor runs of one stream (see the module's steps 1-2)."""
    n = len(anchor)
    if not n or not anchor.any():
        return Anchors(np.zeros(0, np.int64), np.zeros(0, np.int64), 0)
    prev = np.concatenate(([False], anchor[:-1]))
    nxt = np.concatenate((anchor[1:], [False]))
    starts = np.flatnonzero(anchor & ~prev)
    ends = np.flatnonzero(anchor & ~nxt)  # last event of each run
    hard = np.cumsum(~anchor & ~mergeable)  # events between runs that end a layer
    breaks = np.cumsum(brk)
    keep = [0]
    fwd = [0]
    for j in range(1, len(starts)):
        s, e_prev = int(starts[j]), int(ends[j - 1])
        if hard[s - 1] - hard[e_prev] == 0:
            continue  # only KV writes / rope / copies since the last run: the same layer's
        keep.append(j)
        fwd.append(fwd[-1] + int(breaks[s - 1] - breaks[e_prev] > 0))
    pos = starts[keep].astype(np.int64)
    forward = np.asarray(fwd, np.int64)
    pos, forward, dropped = _drop_edge_outliers(pos, forward, tokens)
    return Anchors(pos, forward, dropped)


def _drop_edge_outliers(pos: np.ndarray, forward: np.ndarray, tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """An anchor at either end of the main forward whose kernel no other anchor runs and
    whose distance to its neighbour no other distance has is no layer (a once-per-forward
    attention helper the name table did not know)."""
    dropped = 0
    for _ in range(2):
        main = np.flatnonzero(forward == 0)
        if len(main) < 4:
            break
        tok = tokens[pos[main]]
        d = np.diff(pos[main])
        for end, dist, rest in ((0, d[0], d[1:]), (len(main) - 1, d[-1], d[:-1])):
            if (tok == tok[end]).sum() == 1 and not (rest == dist).any():
                pos = np.delete(pos, main[end])
                forward = np.delete(forward, main[end])
                dropped += 1
                break
        else:
            break
    return pos, forward, dropped


class Period(NamedTuple):
    q: int  # layers per period
    share: float  # of the distances after the skipped ones that follow it
    skip: int  # leading distances left out


def periodicity(d: np.ndarray, max_q: int = MAX_Q) -> Period:
    """The fewest layers per period whose per-phase lengths at least ``REGULAR_SHARE`` of the
    distances follow (the best one when none does). The first few layers may differ (dense
    layers before MoE ones): up to ``MAX_PREFIX`` leading distances (a third of them at
    most) may be left out, the fewest that do."""
    if not len(d):
        return Period(1, 0.0, 0)
    best = Period(1, 0.0, 0)
    for skip in range(min(MAX_PREFIX, len(d) // 3) + 1):
        rest = d[skip:]
        for q in range(1, max_q + 1):
            if q > 1 and len(rest) < 2 * q:
                break
            want = np.empty(len(rest), rest.dtype)
            for r in range(q):
                vals, counts = np.unique(rest[r::q], return_counts=True)
                want[r::q] = vals[int(np.argmax(counts))]
            follow = float((rest == want).mean())
            if follow >= REGULAR_SHARE:
                return Period(q, follow, skip)
            if not skip and follow > best.share:
                best = Period(q, follow, 0)
    return best


def confidence(p: Period, distances: int, layers: int) -> float:
    """How much a count from the period alone is believed: the share of all distances that
    follow it, less for a few layers."""
    share = p.share * (distances - p.skip) / distances if distances else 0.0
    return round(share * min(1.0, layers / FULL_CONFIDENCE_LAYERS), 3)


def segment(
    anchors: Anchors,
    n: int,
    tokens: np.ndarray,
    similar: np.ndarray,
    per_layer: int = 1,
    brk: np.ndarray | None = None,
    lead: np.ndarray | None = None,
) -> Segmentation:
    """Layer number of every stream event from its anchors (``per_layer`` anchors make one
    layer when a known count says the model launches attention that often per layer).
    ``similar[i, j]``-like test: ``similar`` is per event a class id (fused op) under which
    two events of different names still count as the same step of a layer (-1: never).
    ``brk``: per event, whether it starts another forward or the sampling; ``lead``: 2 for a
    norm, 1 for a GEMM or elementwise event (what leads a forward's tail): a forward's last
    layer ends before its tail (``_last_end``)."""
    pos, fwd = anchors.pos, anchors.forward
    if per_layer > 1:
        keep = np.zeros(len(pos), bool)
        for f in np.unique(fwd).tolist():
            at = np.flatnonzero(fwd == f)
            keep[at[::per_layer]] = True
        pos, fwd = pos[keep], fwd[keep]
    layer = np.full(n, -1, np.int64)
    main = pos[fwd == 0]
    d = np.diff(main)
    q, share, _ = periodicity(d)
    if q > 1 and len(d) < 2 * q:
        q = 1
    o = 0
    if len(main) >= 2:
        lim = min(int(main[0]), int(d.min()) - 1)
        a0, a1 = int(main[0]), int(main[1])
        while o < lim:
            i, j = a0 - o - 1, a1 - o - 1
            if tokens[i] != tokens[j] and not (similar[i] >= 0 and similar[i] == similar[j]):
                break
            o += 1
    if len(d):
        vals, counts = np.unique(d, return_counts=True)
        mode = int(vals[int(np.argmax(counts))])
    else:
        mode = n - int(main[0]) + o if len(main) else 0
    number = 0
    count = int(len(main))
    forwards = np.unique(fwd).tolist()
    for fi, f in enumerate(forwards):
        b = pos[fwd == f] - o
        b = np.maximum(b, 0)
        nxt = int(pos[fwd == forwards[fi + 1]][0] - o) if fi + 1 < len(forwards) else n
        for k in range(len(b)):
            s = int(b[k])
            if k + 1 < len(b):
                e = int(b[k + 1])
            else:
                same = count - 1 - q if f == forwards[0] else -1
                length = int(d[same]) if 0 <= same < len(d) else mode
                e = min(s + length, nxt, n)
                e = _last_end(int(b[k]) + o, e, brk, lead)
            layer[s:e] = number
            number += 1
    period = int(d[:q].sum()) if len(d) >= q else mode
    return Segmentation(layer, count, number - count, q, period, share, o)


def _last_end(a: int, e: int, brk: np.ndarray | None, lead: np.ndarray | None) -> int:
    """Where a forward's last layer ends: at ``e`` (as long as its like in the period), or
    sooner at the forward's tail. The tail ends in the sampling (or another forward: ``brk``);
    when one comes inside the layer's stretch after its attention (``a``), the layer stops
    before the final norm that leads the tail's projections (``lead``: the norm, the GEMMs
    and elementwise work of the vocabulary projection and the logits between it and the
    sampling), else before the sampling: the tail's time is no layer's, and a layer kind's
    time stays comparable across layers."""
    if brk is None:
        return e
    hits = np.flatnonzero(brk[a + 1 : e])
    if not len(hits):
        return e
    b = a + 1 + int(hits[0])
    if lead is None:
        return b
    i = b - 1
    while i > a and lead[i] == 1:  # the vocabulary projection, the logits
        i -= 1
    return i if i > a and lead[i] == 2 else b  # the final norm starts the tail
