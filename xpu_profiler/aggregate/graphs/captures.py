"""Capture traces: the graphs an engine captured, launch by launch, with their op chains.

While an engine captures its CUDA/HIP/XPU graphs with the profiler on, each kernel
launch is recorded as a runtime call (not run: it becomes a graph node) inside the op
chain and layer modules that launched it. vLLM (``capture_torch_profiler``) wraps each
captured batch descriptor in ``capture_{num_tokens}_{MODE}`` and writes one trace per
capture under ``<torch_profiler_dir>/capture_traces/`` (worker ``graph_capture_rank_0``,
local rank 0 only); SGLang writes similar traces, with a ``capture-details.json`` that
maps each file to its batch size and mode. ROCm runtime calls carry the kernel name
(``args.kernel``, the ``launch`` event column); CUDA's carry none.

``read_captures`` turns a capture profile into ``Captures``: per graph the ordered
launches, a kernel key per launch, and the fused op its outermost custom op or its
innermost module gives (with the source), plus its top-level op's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from ...core.intervals import containing, top_level
from ...core.ordering import lexsort
from ...core.profile import DEVICE_KINDS, K_ANNOTATION, K_CPU_OP, K_RUNTIME, Profile
from ...core.sources import DTYPE as SOURCE_DTYPE
from ...core.sources import AttributionSource
from ...knowledge.kernel_names import kernel_key
from ...knowledge.runtime_api import CAPTURE_BEGIN, CAPTURE_END, LAUNCH_API
from ...knowledge.step_grammar import parse_step_name
from ...knowledge.taxonomy import Taxonomy
from ...knowledge.taxonomy import default as default_taxonomy


class Captures(NamedTuple):
    """One row per captured graph; its launches are ``rows[offsets[g]:offsets[g + 1]]``
    (event rows of the capture profile, in launch order) with per-launch columns."""

    size: np.ndarray  # per graph: tokens of its capture range (batch size)
    mode: list  # per graph: FULL, PIECEWISE, DECODE...
    piece: np.ndarray  # per graph: index within its capture range (piecewise graphs)
    rows: np.ndarray
    offsets: np.ndarray
    key: np.ndarray  # per launch: index into keys, -1 kernel name unknown
    keys: list  # distinct kernel keys (see kernel_key)
    chain_fused: np.ndarray  # per launch: fused op of its outermost custom op, else its module, -1
    chain_source: np.ndarray  # AttributionSource.OP_CHAIN / MODULE / NONE
    root_fused: np.ndarray  # per launch: fused op of its top-level op, -1

    def __len__(self) -> int:
        return len(self.size)


def _gid(*cols: np.ndarray) -> np.ndarray:
    if not len(cols[0]):
        return np.zeros(0, np.int64)
    return np.unique(np.stack(cols), axis=1, return_inverse=True)[1].reshape(-1).astype(np.int64)


def name_mask(profile: Profile, rows: np.ndarray, rx: re.Pattern) -> np.ndarray:
    ids = profile.events["name"][rows]
    uniq, inv = np.unique(ids, return_inverse=True)
    hit = np.array([bool(rx.search(profile.strings[int(i)])) for i in uniq], bool)
    return hit[inv.reshape(-1)] if len(uniq) else np.zeros(0, bool)


def read_captures(profile: Profile, taxonomy: Taxonomy | None = None, size: int = -1, mode: str = "") -> Captures:
    """The captured graphs of a capture trace and the fused op each launch's chain gives.

    A graph is one stream capture (begin/end runtime calls) inside a ``capture_N_MODE``
    range; a range without them is one graph of the launches whose work did not run. A
    trace without capture ranges (``size``/``mode`` then come from elsewhere, such as
    SGLang's capture-details.json) has one graph per stream capture."""
    taxonomy = taxonomy or default_taxonomy()
    ev, strings = profile.events, profile.strings
    kind, rank = ev["kind"], ev["rank"].astype(np.int64)
    start, end = ev["start"], ev["start"] + ev["dur"]
    ann = np.flatnonzero((kind == K_ANNOTATION) & (ev["device"] < 0) & (start >= 0))
    parsed = {int(i): parse_step_name(strings[int(i)]) for i in np.unique(ev["name"][ann])}
    named = [(r, parsed[int(ev["name"][r])]) for r in ann.tolist()]
    caps = [(r, p) for r, p in named if p is not None and p.family == "capture"]
    rt = np.flatnonzero((kind == K_RUNTIME) & (start >= 0))
    begin, finish = rt[name_mask(profile, rt, CAPTURE_BEGIN)], rt[name_mask(profile, rt, CAPTURE_END)]
    launches = rt[name_mask(profile, rt, LAUNCH_API)]
    # segments: (rank, start, end, size, mode, piece, marked by begin/end)
    segs: list[tuple] = []
    ranges = [(int(rank[r]), int(start[r]), int(end[r]), p.total_tokens, p.capture_mode) for r, p in caps]
    if not ranges and len(begin):
        ranges = [(int(r), int(start.min()), int(end.max()), size, mode.upper()) for r in np.unique(rank[begin])]
    for rk, s0, s1, n_tok, md in ranges:  # capture ranges are few (one per batch size and mode)
        inside = lambda rows: rows[(rank[rows] == rk) & (start[rows] >= s0) & (end[rows] <= s1)]  # noqa: E731
        b, f = inside(begin), inside(finish)
        if len(b) and len(b) == len(f):  # one stream capture per graph (many when piecewise)
            segs += [
                (rk, x, y, n_tok, md, k, True)
                for k, (x, y) in enumerate(zip(np.sort(start[b]).tolist(), np.sort(end[f]).tolist()))
            ]
        else:
            segs.append((rk, s0, s1, n_tok, md, 0, False))
    cols: Sequence[Sequence[Any]] = list(zip(*segs)) if segs else [[]] * 7
    s_rank, s_start, s_end, s_size, s_piece = (np.array(cols[i], np.int64) for i in (0, 1, 2, 3, 5))
    marked = np.array(cols[6], bool)
    seg = (
        containing(s_rank, s_start, s_end, rank[launches], start[launches], end[launches])
        if segs and len(launches)
        else np.full(len(launches), -1, np.int64)
    )
    ok = seg >= 0
    if len(segs) and not marked.all():  # unmarked ranges: only launches whose work did not run
        ran = np.isin(ev["corr"][launches], ev["corr"][np.isin(kind, DEVICE_KINDS)])
        ok &= marked[np.maximum(seg, 0)] | ~ran
    rows, seg = launches[ok], seg[ok]
    order = lexsort((start[rows], seg))
    rows, seg = rows[order], seg[order]
    offsets = np.concatenate(([0], np.cumsum(np.bincount(seg, minlength=len(segs))))).astype(np.int64)
    # kernel keys: the name a launch carries (ROCm); copies and fills by their API; else unknown
    names = np.where(ev["launch"][rows] >= 0, ev["launch"][rows], ev["name"][rows])
    uniq, inv = np.unique(names, return_inverse=True)
    carried = set(ev["launch"][rows].tolist())
    ukeys = [
        k if k in ("memcpy", "memset") or u in carried else None
        for u in uniq.tolist()
        for k in (kernel_key(strings[u]),)
    ]
    keys = sorted({k for k in ukeys if k is not None})
    kid = {k: i for i, k in enumerate(keys)}
    key = (
        np.array([kid[k] if k is not None else -1 for k in ukeys], np.int32)[inv.reshape(-1)]
        if len(uniq)
        else np.zeros(0, np.int32)
    )
    chain_fused, chain_source, root_fused = _launch_chain(profile, rows, taxonomy)
    return Captures(
        size=s_size,
        mode=list(cols[4]),
        piece=s_piece,
        rows=rows,
        offsets=offsets,
        key=key,
        keys=keys,
        chain_fused=chain_fused,
        chain_source=chain_source,
        root_fused=root_fused,
    )


def _launch_chain(profile: Profile, rows: np.ndarray, taxonomy: Taxonomy):
    """Per launch: outermost custom op, else innermost classified module; and its root op."""
    ev, strings = profile.events, profile.strings
    kind, start, end = ev["kind"], ev["start"], ev["start"] + ev["dur"]
    n = len(rows)
    fused = np.full(n, -1, np.int16)
    source = np.full(n, AttributionSource.NONE, SOURCE_DTYPE)
    root = np.full(n, -1, np.int16)
    if not n:
        return fused, source, root
    host = np.flatnonzero(((kind == K_CPU_OP) | (kind == K_ANNOTATION)) & (ev["device"] < 0) & (start >= 0))
    names = {int(i): strings[int(i)] for i in np.unique(ev["name"][host])}
    custom_f = {i: taxonomy.classify(s) for i, s in names.items() if taxonomy.is_custom_op(s)}
    module_f = {i: taxonomy.classify_module(s) for i, s in names.items()}
    op_f = {i: taxonomy.classify(s) for i, s in names.items()}
    gid = _gid(
        np.concatenate([ev["rank"][host], ev["rank"][rows]]).astype(np.int64),
        np.concatenate([ev["track"][host], ev["track"][rows]]),
    )
    hg, qg = gid[: len(host)], gid[len(host) :]
    hn = ev["name"][host]

    def holder(mask: np.ndarray, innermost: bool = False) -> np.ndarray:
        """Event row of the range (of `mask`) around each launch: the outermost one, or
        the innermost (nested ranges first, then the outer ones), -1."""
        c = host[mask]
        out = np.full(n, -1, np.int64)
        if not len(c):
            return out
        outer = top_level(hg[mask], start[c], end[c])
        for part in (c[~outer], c[outer]) if innermost else (c[outer],):
            hit = containing(hg[np.searchsorted(host, part)], start[part], end[part], qg, start[rows], end[rows])
            miss = (out < 0) & (hit >= 0)
            out[miss] = part[hit[miss]]
        return out

    def lut(d: dict) -> np.ndarray:  # string id → fused op (-1), with a slot for "none"
        a = np.full(len(strings) + 1, -1, np.int16)
        if d:
            a[np.fromiter(d, np.int64, len(d))] = np.fromiter(d.values(), np.int16, len(d))
        return a

    custom_lut, module_lut, op_lut = lut(custom_f), lut(module_f), lut(op_f)
    is_op = kind[host] == K_CPU_OP
    c_of = holder(np.isin(hn, list(custom_f)) & is_op)
    m_of = holder(module_lut[hn] >= 0, innermost=True)
    r_of = holder(is_op)
    name_of = lambda r: np.where(r >= 0, ev["name"][np.maximum(r, 0)], -1)  # noqa: E731
    cf, mf = custom_lut[name_of(c_of)], module_lut[name_of(m_of)]
    fused[:] = np.where(cf >= 0, cf, mf)
    source[cf >= 0] = AttributionSource.OP_CHAIN
    source[(cf < 0) & (mf >= 0)] = AttributionSource.MODULE
    root[:] = op_lut[name_of(r_of)]
    return fused, source, root
