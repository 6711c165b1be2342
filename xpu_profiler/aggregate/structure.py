"""Structure before names: fused ops from the place of a kernel in its stream's sequence.

``apply_structure`` runs after the launching op chain, the layer modules and the capture
traces have spoken, and changes only the device events whose fused op so far comes from their
own name (or from nothing): an MoE block's kernels are MoE whatever their names, an
all-reduce's staging copies are communication, an undecided Inductor kernel before attention
is the layer's RoPE (rules and evidence: ``knowledge/structure.py``). Columnar: one sort of
the device events by stream and start, then array sweeps; Python runs per distinct name only.
"""

from __future__ import annotations

import numpy as np

from ..core.launches import device_mask
from ..core.ordering import lexsort
from ..core.profile import K_MEMCPY, K_MEMSET, Profile
from ..core.sources import AttributionSource as Src
from ..knowledge import structure as rules
from ..knowledge.families import ROLES, TokenRule
from ..knowledge.fused_ops import FUSED_OPS, OTHER
from ..knowledge.taxonomy import Taxonomy

_OPEN, _EXPERT = ROLES.index("open"), ROLES.index("expert")


def _ids(names: tuple[str, ...]) -> list[int]:
    return [FUSED_OPS.index(n) for n in names]


def apply_structure(profile: Profile, taxonomy: Taxonomy, fused: np.ndarray, source: np.ndarray) -> dict[str, int]:
    """Overwrite ``fused``/``source`` of the device events the structure decides; returns counts."""
    ev, strings = profile.events, profile.strings
    dev = np.flatnonzero(device_mask(ev["kind"]) & (ev["start"] >= 0))
    stats = {"moe_blocks": 0, "moe_events": 0, "staging_copies": 0, "attention_pre": 0}
    if not len(dev):
        return stats
    o = dev[lexsort((ev["start"][dev], ev["track"][dev], ev["device"][dev], ev["rank"][dev]))]
    n = len(o)
    uniq, inv = np.unique(ev["name"][o], return_inverse=True)
    inv = inv.reshape(-1)
    names = [strings[int(u)] for u in uniq.tolist()]
    own = np.array([taxonomy.classify(s) for s in names], np.int16)[inv]
    own[own < 0] = OTHER
    kind = ev["kind"][o]
    own[kind == K_MEMCPY] = FUSED_OPS.index("memcpy")
    own[kind == K_MEMSET] = FUSED_OPS.index("memset")
    role = np.array([taxonomy.role(s) for s in names], np.int8)[inv]
    free = np.isin(source[o], (Src.NAME, Src.NONE))
    stream = ev["rank"][o].astype(np.int64), ev["device"][o].astype(np.int64), ev["track"][o]
    first = np.ones(n, bool)  # a stream's first kernel
    first[1:] = (
        (stream[0][1:] != stream[0][:-1]) | (stream[1][1:] != stream[1][:-1]) | (stream[2][1:] != stream[2][:-1])
    )
    stream_start = np.maximum.accumulate(np.where(first, np.arange(n), 0))

    def put(pos: np.ndarray, op: str) -> int:
        pos = pos[free[pos] & (own[pos] != FUSED_OPS.index(op))]
        fused[o[pos]] = FUSED_OPS.index(op)
        source[o[pos]] = Src.STRUCTURE
        return len(pos)

    blocks, members = _moe_blocks(own, role, first, stream_start)
    stats["moe_blocks"] = blocks
    stats["moe_events"] = put(members, "moe")
    stats["staging_copies"] = put(_staging_copies(own, first, [names[i] for i in inv.tolist()], kind), "communication")
    inductor = np.array([isinstance(taxonomy.explain(s), TokenRule) for s in names], bool)[inv]
    stats["attention_pre"] = put(_attention_pre(own, inductor, stream_start), "rope")
    return stats


def _moe_blocks(
    own: np.ndarray, role: np.ndarray, first: np.ndarray, stream_start: np.ndarray
) -> tuple[int, np.ndarray]:
    """(number of blocks, positions of their members) in the stream-ordered sequence."""
    n = len(own)
    idx = np.arange(n)
    moe = own == FUSED_OPS.index("moe")
    openers = np.flatnonzero((role == _OPEN) & moe)
    if not len(openers):
        return 0, np.zeros(0, np.int64)
    # the first position after each opener that ends its block: a stop kernel, the next stream
    stops = np.flatnonzero(np.isin(own, _ids(rules.MOE_STOP)) | first)
    nxt = np.searchsorted(stops, openers, side="right")
    limit = np.where(nxt < len(stops), stops[np.minimum(nxt, len(stops) - 1)], n)
    limit = np.minimum(limit, openers + rules.MOE_MAX_KERNELS + 1)
    expertish = ((role == _EXPERT) & moe) | (own == FUSED_OPS.index("gemm"))
    # ... and the next opener after an expert GEMM: the next layer's block (consecutive routing
    # kernels before the first expert GEMM open one block)
    first_expert = np.minimum.accumulate(np.where(expertish, idx, n)[::-1])[::-1]
    after = np.searchsorted(openers, first_expert[openers], side="right")
    limit = np.minimum(limit, np.where(after < len(openers), openers[np.minimum(after, len(openers) - 1)], n))
    last_moe = np.maximum.accumulate(np.where(moe, idx, -1))
    end = last_moe[limit - 1]  # >= the opener, itself MoE
    cum = np.concatenate(([0], np.cumsum(expertish)))
    ok = cum[end + 1] - cum[openers] > 0
    start, end = openers[ok], end[ok]
    if not len(start):
        return 0, np.zeros(0, np.int64)
    # the prologue: kernels right before the opener that only prepare the MoE input
    barrier = ~np.isin(own, _ids(rules.MOE_PROLOGUE)) | first
    last_barrier = np.maximum.accumulate(np.where(barrier, idx, -1))
    before = np.maximum(start - 1, 0)
    pro = np.where(start > 0, np.maximum(last_barrier[before] + 1, start - rules.MOE_PROLOGUE_KERNELS), start)
    pro = np.maximum(pro, stream_start[start])
    pro = np.where(first[start], start, pro)
    diff = np.zeros(n + 1, np.int64)
    np.add.at(diff, pro, 1)
    np.add.at(diff, end + 1, -1)
    inside = np.cumsum(diff[:-1]) > 0
    keep = ~np.isin(own, _ids(rules.MOE_KEEP))
    # overlapping blocks (an opener inside a block) count once
    n_blocks = int(np.count_nonzero(np.diff(np.concatenate(([False], inside)).astype(np.int8)) == 1))
    return n_blocks, np.flatnonzero(inside & keep)


def _staging_copies(own: np.ndarray, first: np.ndarray, names: list[str], kind: np.ndarray) -> np.ndarray:
    """Device-to-device copies right before or after a collective kernel on the same stream."""
    comm = own == FUSED_OPS.index("communication")
    copies = np.flatnonzero(kind == K_MEMCPY)
    if not len(copies) or not comm.any():
        return np.zeros(0, np.int64)
    d2d = np.array([bool(rules.DEVICE_COPY.search(names[i])) for i in copies.tolist()], bool)
    copies = copies[d2d]
    n = len(own)
    prev_comm = (copies > 0) & ~first[copies] & comm[np.maximum(copies - 1, 0)]
    nxt = np.minimum(copies + 1, n - 1)
    next_comm = (copies + 1 < n) & ~first[nxt] & comm[nxt]
    return copies[prev_comm | next_comm]


def _attention_pre(own: np.ndarray, inductor: np.ndarray, stream_start: np.ndarray) -> np.ndarray:
    """Undecided Inductor kernels between a GEMM and the next attention kernel, in windows
    without a RoPE kernel by name."""
    att = FUSED_OPS.index("attention")
    cands = np.flatnonzero(inductor & (own == FUSED_OPS.index("elementwise")))
    if not len(cands):
        return cands
    n = len(own)
    idx = np.arange(n)
    gemm = np.isin(own, _ids(("gemm", "moe")))
    last_gemm = np.maximum.accumulate(np.where(gemm, idx, -1))
    is_att = own == att
    next_att = np.minimum.accumulate(np.where(is_att, idx, n)[::-1])[::-1]
    rope = np.concatenate(([0], np.cumsum(own == FUSED_OPS.index("rope"))))
    g, a = last_gemm[cands], next_att[cands]
    ok = (g >= stream_start[cands]) & (a < n) & (a - g <= rules.ATTENTION_PRE_KERNELS + 1)
    ok &= stream_start[np.minimum(a, n - 1)] == stream_start[cands]
    a1 = np.minimum(a, n - 1)
    ok &= rope[a1] - rope[np.maximum(g, 0)] == 0  # no RoPE kernel by name in the window
    ok &= (last_gemm[np.maximum(a1 - 1, 0)] == g) & (next_att[np.minimum(g + 1, n - 1)] == a)  # one layer's window
    return cands[ok]
