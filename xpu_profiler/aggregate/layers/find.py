"""Decoder layers per step, found from evidence in layers (like steps), and what each ran.

Per step (per model forward frame, or per rank's whole trace, when there are no steps),
the first evidence that speaks decides:

1. ``module``: decoder-layer module frames (``frames.decoder_frames``): each piece
   of device work belongs to the frame its launch lies in;
2. ``capture``: a graph replay's kernels matched to their captured launches, which lie in
   the capture trace's decoder-layer frames (``profile.capture_layer``);
3. ``pieces``: a piecewise-compiled vLLM model runs each layer's attention eagerly in a
   ``GraphModule`` frame nested in the split model's (in the trace, or in the capture trace
   of a FULL graph; without nesting, top-level pieces = layers + 1): when the main
   stream's attention runs number as many, they are the layers (boundaries: ``stream``);
4. ``config``: the model config's ``num_hidden_layers``, matched by the attention runs;
5. ``period``: the attention runs alone, when their distances repeat (``stream``):
   the count is **inferred**, with a confidence; a step whose runs do not repeat, or whose
   runs contradict a piece count, gets no layers, and the reason is counted.

Work the layers do not hold is the step's head (before the first layer: embedding), tail
(after the last: final norm, lm_head, sampling) or other (between layers, other streams),
so that layers + head + tail + other = the step's op time.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...core.profile import DEVICE_KINDS, Profile
from ...knowledge import layer_names as ln
from ...knowledge.fused_ops import FUSED_OPS
from ..model_cost import model_config
from . import stream as ls
from . import units as layer_units
from .context import Context, context, layer_evidence
from .kinds import ConfigLayers, LayerEvidence, config_layers

NF = len(FUSED_OPS)
_F = {name: i for i, name in enumerate(FUSED_OPS)}
#: what may sit between two attention runs of one layer (a KV write, rope, a copy)
MERGEABLE = [_F[x] for x in ("kv_cache", "rope", "memcpy", "memset")]
#: what starts another forward between two attention runs
BREAKS = [_F[x] for x in ("sampling", "embedding")]
#: what lies between a forward's final norm and its sampling (the vocabulary projection,
#: the logits' processing): the tail
TAIL_LEAD = [_F[x] for x in ("gemm", "elementwise", "memcpy", "memset", "quantization")]
#: fused ops under which two differently named events are the same step of a layer
_NOT_SIMILAR = [_F[x] for x in ("other", "elementwise", "memcpy", "memset")]
_INDUCTOR_SUFFIX = re.compile(r"_\d+$")


@dataclass
class UnitLayers:
    """The layers of one step (or forward, or rank) and what runs outside them."""

    rank: int
    step: int  # row in profile.steps, -1
    phase: int
    unit: str  # step, forward, rank
    evidence: str
    detail: str
    confidence: float
    count: int  # decoder layers (main forward)
    ns: np.ndarray  # per layer
    fused: np.ndarray  # (layers, fused ops) ns
    kernels: np.ndarray
    start: np.ndarray
    end: np.ndarray
    evid: list[LayerEvidence]
    head: np.ndarray  # ns by fused op
    tail: np.ndarray
    other: int
    op_ns: int
    tokens: int


def find_layers(profile: Profile, basis: np.ndarray) -> tuple[list[UnitLayers], Counter, ConfigLayers | None]:
    """Layers of each unit (steps, forwards or ranks); the reasons units got none."""
    ev = profile.events
    rows = np.flatnonzero(basis & (ev["start"] >= 0) & (ev["dur"] >= 0))
    refused: Counter = Counter()
    cfg = config_layers(model_config(profile.run))
    if not len(rows):
        return [], refused, cfg
    ctx = context(profile, rows, cfg)
    unit, units = layer_units.units(profile, ctx.frames, ctx.pieces, rows)
    keep = unit >= 0
    rows, unit = rows[keep], unit[keep]
    order = np.lexsort((ev["start"][rows], unit))
    rows, unit = rows[order], unit[order]
    bounds = np.searchsorted(unit, np.arange(len(units) + 1))
    out = []
    for u in layer_units.sample(units):
        r = rows[bounds[u] : bounds[u + 1]]
        if not len(r):
            continue
        res = _unit(ctx, r, units[u])
        if isinstance(res, str):
            refused[res] += 1
        else:
            out.append(res)
    return out, refused, cfg


def _unit(ctx: Context, rows: np.ndarray, unit: tuple) -> UnitLayers | str:
    """The layers of one unit's rows (in start order), or why it has none."""
    ev = ctx.profile.events
    lay, how = _from_frames(ctx, rows)
    if lay is None:
        lay, how = _from_capture(ctx, rows)
    later = np.zeros(0, bool)
    if lay is None:
        res = _from_stream(ctx, rows)
        if isinstance(res, str):
            return res
        lay, how, later = res
    evidence, detail, conf, count, module_of = how
    n = int(lay.max()) + 1 if (lay >= 0).any() else 0
    if n == 0:
        return "no work inside the layers found"
    dur, fused = ev["dur"][rows], ev["fused"][rows].astype(np.int64)
    in_l = lay >= 0
    ns = np.bincount(lay[in_l], weights=dur[in_l], minlength=n).astype(np.int64)
    fz = np.bincount(lay[in_l] * NF + fused[in_l], weights=dur[in_l], minlength=n * NF).astype(np.int64)
    fz = fz.reshape(n, NF)
    kernels = np.bincount(lay[in_l], minlength=n)
    start = np.full(n, np.iinfo(np.int64).max)
    end = np.zeros(n, np.int64)
    np.minimum.at(start, lay[in_l], ev["start"][rows][in_l])
    np.maximum.at(end, lay[in_l], ev["start"][rows][in_l] + dur[in_l])
    # outside the layers: before the first, after the last, or in between
    t = ev["start"][rows]
    out = ~in_l
    head_m = out & (t < start.min())
    tail_m = out & ~head_m & (t >= end.max())
    head = np.bincount(fused[head_m], weights=dur[head_m], minlength=NF).astype(np.int64)
    tail = np.bincount(fused[tail_m], weights=dur[tail_m], minlength=NF).astype(np.int64)
    other = int(dur[out & ~head_m & ~tail_m].sum())
    evid = layer_evidence(ctx, rows, lay, n, fz, module_of, later)
    rank, step, phase, kind = unit
    tokens = 0
    if step >= 0:
        tokens = int(ctx.profile.steps["prefill_tokens"][step] + ctx.profile.steps["decode_tokens"][step])
    return UnitLayers(
        rank=rank,
        step=step,
        phase=phase,
        unit=kind,
        evidence=evidence,
        detail=detail,
        confidence=conf,
        count=count,
        ns=ns,
        fused=fz,
        kernels=kernels,
        start=start,
        end=end,
        evid=evid,
        head=head,
        tail=tail,
        other=other,
        op_ns=int(dur.sum()),
        tokens=tokens,
    )


def _from_frames(ctx: Context, rows: np.ndarray) -> tuple[np.ndarray | None, Any]:
    if ctx.frame is None:
        return None, None
    f = ctx.frame[rows].astype(np.int64)
    if not (f >= 0).any():
        return None, None
    used = np.unique(f[f >= 0])  # frames are in start order
    lay = np.where(f >= 0, np.searchsorted(used, f), -1)
    cls = [ctx.frames.cls[int(i)] for i in used.tolist()]
    names = Counter(cls).most_common()
    what = ", ".join(f"{c} x{k}" for c, k in names)
    detail = f"module frames: {what}" + (" (class found by structure)" if ctx.frames.how == "structure" else "")
    count = sum(1 for c in cls if not ln.is_draft_layer(c))
    return lay, ("module", detail, 1.0, count, cls)


def _from_capture(ctx: Context, rows: np.ndarray) -> tuple[np.ndarray | None, Any]:
    if not ctx.capture_how.startswith("module:"):
        return None, None
    h = ctx.profile.capture_layer[rows].astype(np.int64)
    if not (h >= 0).any():
        return None, None
    corr = ctx.profile.events["corr"][rows]
    has = h >= 0
    # a layer = (replay, layer in its graph); replays in time order (rows are)
    key = np.full(len(rows), -1, np.int64)
    pairs: dict[tuple[int, int], int] = {}
    for i in np.flatnonzero(has).tolist():
        key[i] = pairs.setdefault((int(corr[i]), int(h[i])), len(pairs))
    cls = ctx.capture_how.split(":", 1)[1]
    detail = f"capture trace: {len(pairs)} {cls} frames hold the replayed kernels' captured launches"
    return key, ("capture", detail, 1.0, len(pairs), [cls] * len(pairs))


def _from_stream(ctx: Context, rows: np.ndarray) -> tuple[np.ndarray, Any, np.ndarray] | str:
    ev = ctx.profile.events
    dev = np.isin(ev["kind"][rows], DEVICE_KINDS)
    cand = rows[dev] if dev.any() else rows
    track = ev["track"][cand]
    tracks, inv = np.unique(track, return_inverse=True)
    inv = inv.reshape(-1)
    # the main stream: the one that runs the attention (a communication or copy stream may
    # hold more time), then the most time
    is_anchor = (ev["fused"][cand] == _F["attention"]) & ~ctx.not_anchor[ev["name"][cand]]
    if not is_anchor.any():
        return "no attention kernel in the step"
    n_anchor = np.bincount(inv, weights=is_anchor, minlength=len(tracks))
    busy = np.bincount(inv, weights=ev["dur"][cand], minlength=len(tracks))
    main = tracks[int(np.lexsort((busy, n_anchor))[-1])]
    on = (ev["track"][rows] == main) & (dev if dev.any() else True)
    s_rows = rows[on]
    names = ev["name"][s_rows]
    fused = ev["fused"][s_rows]
    anchor = (fused == _F["attention"]) & ~ctx.not_anchor[names]
    tokens = ctx.token[names]
    a = ls.anchor_runs(anchor, np.isin(fused, MERGEABLE), np.isin(fused, BREAKS), tokens)
    main_n = int((a.forward == 0).sum())
    d = np.diff(a.pos[a.forward == 0])
    period = ls.periodicity(d)
    want, what = _piece_count(ctx, rows)
    cfg = ctx.cfg
    per = 1
    if want:
        if main_n % want:
            return "the attention runs do not match the graph pieces"
        per = main_n // want
        evidence, conf = "pieces", 1.0
        detail = f"{what}, {main_n} attention runs on the main stream"
    elif cfg is not None and main_n and main_n % cfg.layers == 0:
        per = main_n // cfg.layers
        evidence, conf = "config", 1.0
        detail = f"model config: {cfg.layers} layers, {main_n} attention runs on the main stream"
    else:
        if main_n < ls.MIN_INFERRED:
            return "too few attention runs to infer layers"
        if period.share < ls.REGULAR_SHARE:
            return "the attention runs do not repeat regularly"
        evidence, conf = "period", ls.confidence(period, len(d), main_n)
        q = period.q
        lengths = ", ".join(str(int(x)) for x in d[period.skip : period.skip + q])
        detail = (
            f"inferred from the kernel period: {main_n} attention runs, {period.share:.0%} of the distances "
            f"repeat every {q} layer(s) ({lengths} kernels)"
        )
        if period.skip:
            detail += f" after {period.skip} leading layer(s) of another length"
        if cfg is not None:
            conf = round(conf / 2, 3)
            detail += f"; the model config says {cfg.layers} layers (pipeline stages?)"
    if a.dropped:
        detail += f"; {a.dropped} attention run(s) at the edge taken for helpers, not layers"
    similar = np.where(np.isin(fused, _NOT_SIMILAR), -1, fused.astype(np.int64))
    lead = np.where(fused == _F["norm"], 2, np.isin(fused, TAIL_LEAD).astype(np.int64))
    seg = ls.segment(a, len(s_rows), tokens, similar, per, np.isin(fused, BREAKS), lead)
    count = seg.main
    lay = _spread(ctx, rows, on, seg.layer)
    n = int(lay.max()) + 1 if (lay >= 0).any() else 0
    later = np.zeros(n, bool)
    later[count:] = True
    return lay, (evidence, detail, conf, count, [""] * n), later


def _piece_count(ctx: Context, rows: np.ndarray) -> tuple[int, str]:
    """(layers the unit's graph pieces say, what they are): nested ``GraphModule`` frames
    (one per layer), else top-level ones (pieces - 1), from the trace's frames or the
    capture's; 0 without any."""
    p = ctx.piece[rows] if ctx.piece is not None else np.zeros(0, np.int32)
    if (p >= 0).any():
        n, how = int(len(np.unique(p[p >= 0]))), ctx.pieces.how
    elif ctx.capture_how.startswith("pieces:"):
        h = ctx.profile.capture_layer[rows].astype(np.int64)
        corr = ctx.profile.events["corr"][rows]
        has = h >= 0
        if not has.any():
            return 0, ""
        n, how = int(np.unique(np.stack([corr[has], h[has]]), axis=1).shape[1]), ctx.capture_how.split(":", 1)[1]
        how += " (capture trace)"
    else:
        return 0, ""
    if how.startswith("nested"):
        return n, f"{n} attention pieces of the piecewise-compiled model (GraphModule frames{how[6:]})"
    return (n - 1 if n >= 2 else 0), f"{n} compiled graph pieces (layers = pieces - 1{how[3:]})"


def _spread(ctx: Context, rows: np.ndarray, on: np.ndarray, stream_layer: np.ndarray) -> np.ndarray:
    """Layer of every row: the main stream's from the segmentation, the others' by time
    (the layer running on the main stream when they started; none before or after)."""
    ev = ctx.profile.events
    lay = np.full(len(rows), -1, np.int64)
    lay[on] = stream_layer
    if on.all() or not (stream_layer >= 0).any():
        return lay
    s = ev["start"][rows][on]
    e = ev["start"][rows][on] + ev["dur"][rows][on]
    has = stream_layer >= 0
    n = int(stream_layer.max()) + 1
    first = np.full(n, np.iinfo(np.int64).max)
    np.minimum.at(first, stream_layer[has], s[has])
    last_end = int(e[has].max())
    t = ev["start"][rows][~on]
    k = np.searchsorted(first, t, side="right") - 1
    k[(k < 0) | (t >= last_end)] = -1
    lay[~on] = k
    return lay
