"""What finding the layers of a profile's units shares (``Context``): per kernel name its key,
whether it is windowed, linear or no layer's anchor; the decoder and piece frames each event
lies in; and each found layer's evidence (``layer_evidence``: its module, its main attention
kernel, its attention kind and time by fused op)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...core.profile import Profile
from ...knowledge import layer_names as ln
from ...knowledge.fused_ops import FUSED_OPS
from ...knowledge.kernel_names import kernel_key, short_name
from .frames import Frames, decoder_frames, frame_of, piece_frames
from .kinds import ConfigLayers, LayerEvidence

_F = {name: i for i, name in enumerate(FUSED_OPS)}
_INDUCTOR_SUFFIX = re.compile(r"_\d+$")


@dataclass
class Context:
    profile: Profile
    token: np.ndarray  # per name id: kernel key id
    sliding: np.ndarray  # per name id
    linear: np.ndarray
    not_anchor: np.ndarray
    key_names: list[str]
    frames: Frames
    frame: np.ndarray | None  # per event row: decoder frame index, -1 (basis rows); None: no frames
    pieces: Frames
    piece: np.ndarray | None
    cfg: ConfigLayers | None
    capture_how: str
    shorts: dict[int, str] = field(default_factory=dict)

    def short(self, token: int) -> str:
        """The display name of a kernel key (attention kernels of the layers)."""
        if token not in self.shorts:
            self.shorts[token] = short_name(self.key_names[token], 48)
        return self.shorts[token]


def context(profile: Profile, rows: np.ndarray, cfg: ConfigLayers | None) -> Context:
    ev, strings = profile.events, profile.strings
    n_names = len(strings) + 1
    token = np.full(n_names, -1, np.int64)
    sliding, linear, not_anchor = (np.zeros(n_names, bool) for _ in range(3))
    keys: dict[str, int] = {}
    uniq, first = np.unique(ev["name"][rows], return_index=True)
    for nid, f in zip(uniq.tolist(), first.tolist()):
        s = strings[nid] if nid >= 0 else ""
        k = _INDUCTOR_SUFFIX.sub("", kernel_key(s, int(ev["kind"][rows[f]])))
        token[nid] = keys.setdefault(k, len(keys))
        sliding[nid] = bool(ln.SLIDING_KERNEL.search(s))
        linear[nid] = bool(ln.LINEAR_KERNEL.search(s))
        not_anchor[nid] = bool(ln.NOT_ANCHOR.search(s))
    frames, pieces = decoder_frames(profile), piece_frames(profile)
    frame = piece = None
    if len(frames.rows):
        frame = np.full(len(ev), -1, np.int32)
        frame[rows] = frame_of(profile, frames, rows)
    if len(pieces.rows):
        piece = np.full(len(ev), -1, np.int32)
        piece[rows] = frame_of(profile, pieces, rows)
    graphs: dict[str, Any] = profile.derived.graphs or {}
    how = str(graphs.get("capture_layers", "")) if len(profile.capture_layer) == len(ev) else ""
    return Context(profile, token, sliding, linear, not_anchor, list(keys), frames, frame, pieces, piece, cfg, how)


def layer_evidence(
    ctx: Context, rows: np.ndarray, lay: np.ndarray, n: int, fz: np.ndarray, module_of: list, later: np.ndarray
) -> list[LayerEvidence]:
    ev = ctx.profile.events
    names = ev["name"][rows]
    attn = (ev["fused"][rows] == _F["attention"]) & (lay >= 0)
    sliding = np.zeros(n, bool)
    linear = np.zeros(n, bool)
    sliding[np.unique(lay[attn & ctx.sliding[names]])] = True
    linear[np.unique(lay[attn & ctx.linear[names]])] = True
    # the attention kernel each layer spent most time in
    top = [""] * n
    a_rows = np.flatnonzero(attn & ~ctx.not_anchor[names])
    if len(a_rows):
        tok = ctx.token[names[a_rows]]
        key = lay[a_rows] * (len(ctx.key_names) + 1) + tok
        u, inv = np.unique(key, return_inverse=True)
        t = np.bincount(inv.reshape(-1), weights=ev["dur"][rows][a_rows])
        best: dict[int, tuple[float, int]] = {}
        for kk, tt in zip(u.tolist(), t.tolist()):
            li, ti = divmod(kk, len(ctx.key_names) + 1)
            if li not in best or tt > best[li][0]:
                best[li] = (tt, ti)
        for li, (_, ti) in best.items():
            top[li] = ctx.short(ti)
    return [
        LayerEvidence(
            module=module_of[i] if i < len(module_of) else "",
            attention_kernel=top[i],
            sliding=bool(sliding[i]),
            linear=bool(linear[i]),
            attention_ns=int(fz[i, _F["attention"]]),
            moe_ns=int(fz[i, _F["moe"]]),
            gemm_ns=int(fz[i, _F["gemm"]]),
            later_forward=bool(later[i]) if i < len(later) else False,
        )
        for i in range(n)
    ]
