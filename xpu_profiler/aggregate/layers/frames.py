"""Decoder layers and compiled graph pieces as the host's module frames show them.

A ``with_stack`` trace holds one ``nn.Module: <Class>_<k>`` frame per module call, our
live collector an ``xpu_module:<Class>_<k>`` range per decoder layer. The decoder-layer
class is found by its name (``knowledge.layer_names.DECODER_LAYER``), else by structure:
the outermost class whose every frame holds exactly one attention (or mixer) module
frame. Device work belongs to the frame its launch lies in (same host thread), exactly as
the fused-op attribution finds its module.

Also used on capture traces: there each captured launch lies in the frame of the layer
that captured it (``capture_layer_hints``), which a replayed kernel inherits.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ...core.intervals import containing, top_level
from ...core.launches import launch_rows, thread_ids
from ...core.profile import K_ANNOTATION, Profile
from ...knowledge import layer_names as ln
from ...knowledge.taxonomy import module_class


class Frames(NamedTuple):
    """Module frames of one role, outermost only, in start order."""

    rows: np.ndarray  # event rows
    cls: list[str]  # class of each frame
    how: str  # decoder layers: "name" or "structure"; pieces: "nested" or "top"; "forward"; "" none


NO_FRAMES = Frames(np.zeros(0, np.int64), [], "")


def module_rows(profile: Profile) -> tuple[np.ndarray, list[str]]:
    """Rows of every module range (host side, timed) and their classes."""
    ev, strings = profile.events, profile.strings
    ann = np.flatnonzero((ev["kind"] == K_ANNOTATION) & (ev["device"] < 0) & (ev["start"] >= 0))
    if not len(ann):
        return ann, []
    uniq, inv = np.unique(ev["name"][ann], return_inverse=True)
    cls_of = [module_class(strings[int(u)]) for u in uniq.tolist()]
    keep = np.array([c is not None for c in cls_of], bool)[inv.reshape(-1)]
    rows = ann[keep]
    inv = inv.reshape(-1)[keep]
    return rows, [cls_of[i] or "" for i in inv.tolist()]


def _outermost(profile: Profile, rows: np.ndarray) -> np.ndarray:
    ev = profile.events
    if not len(rows):
        return np.zeros(0, bool)
    return top_level(thread_ids(profile)[rows], ev["start"][rows], ev["start"][rows] + ev["dur"][rows])


def _ordered(profile: Profile, rows: np.ndarray, cls: list[str], how: str) -> Frames:
    order = np.argsort(profile.events["start"][rows], kind="stable")
    return Frames(rows[order], [cls[i] for i in order.tolist()], how)


def decoder_frames(profile: Profile) -> Frames:
    """The decoder-layer frames of a profile (outermost ones: an MTP layer holding a
    decoder layer counts once)."""
    rows, cls = module_rows(profile)
    if not len(rows):
        return NO_FRAMES
    named = np.array([ln.is_decoder_layer(c) for c in cls], bool)
    how = "name"
    if not named.any():
        named, how = _by_structure(profile, rows, cls), "structure"
        if not named.any():
            return NO_FRAMES
    sel = rows[named]
    sel_cls = [c for c, k in zip(cls, named.tolist()) if k]
    outer = _outermost(profile, sel)
    return _ordered(profile, sel[outer], [c for c, k in zip(sel_cls, outer.tolist()) if k], how)


def _by_structure(profile: Profile, rows: np.ndarray, cls: list[str]) -> np.ndarray:
    """Frames of the outermost class whose every frame (two or more) holds exactly one
    outermost attention or mixer frame: the decoder layer of a model whose class name
    says nothing."""
    ev = profile.events
    tid = thread_ids(profile)
    is_mix = np.array([bool(ln.ATTENTION_MODULE.match(c) or ln.MIXER_MODULE.search(c)) for c in cls], bool)
    mix = rows[is_mix]
    if not len(mix):
        return np.zeros(len(rows), bool)
    mix = mix[_outermost(profile, mix)]
    m_start = ev["start"][mix]
    end = ev["start"] + ev["dur"]
    out = np.zeros(len(rows), bool)
    best: tuple[float, str] | None = None
    for c in sorted(set(cls)):
        at = np.flatnonzero(np.array([x == c for x in cls], bool) & ~is_mix)
        if len(at) < 2:
            continue
        fr = rows[at]
        # outermost mixer frames inside each frame of this class (same thread)
        n_in = np.zeros(len(fr), np.int64)
        hit = containing(tid[fr], ev["start"][fr], end[fr], tid[mix], m_start, end[mix])
        if not _outermost(profile, fr).all():
            continue
        np.add.at(n_in, hit[hit >= 0], 1)
        if (n_in == 1).all():
            span = float(ev["dur"][fr].sum())  # the outermost such class holds the most time
            if best is None or span > best[0]:
                best = (span, c)
    if best is not None:
        out[np.array([x == best[1] for x in cls], bool)] = True
    return out


def piece_frames(profile: Profile) -> Frames:
    """The ``GraphModule`` frames of a piecewise-compiled vLLM model. The split model is
    one ``GraphModule`` whose attention submodules run eagerly, each a ``GraphModule`` frame
    inside it (one per layer: ``how`` "nested"); the compiled pieces between them have no
    frame. Without nesting, the top-level frames are the pieces (``how`` "top": layers =
    pieces - 1)."""
    rows, cls = module_rows(profile)
    hit = np.array([bool(ln.GRAPH_PIECE.match(c)) for c in cls], bool)
    if not hit.any():
        return NO_FRAMES
    sel = rows[hit]
    outer = _outermost(profile, sel)
    inner = sel[~outer]
    if len(inner):
        inner = inner[_outermost(profile, inner)]  # one level down only
        return _ordered(profile, inner, ["GraphModule"] * len(inner), "nested")
    return _ordered(profile, sel, ["GraphModule"] * len(sel), "top")


def launch_point(profile: Profile, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(host thread id, start, end) where each row was launched: device work by its runtime
    call, everything else by itself."""
    ev = profile.events
    lr = launch_rows(profile)[rows]
    src = np.where(lr >= 0, lr, rows)
    return thread_ids(profile)[src], ev["start"][src], ev["start"][src] + ev["dur"][src]


def frame_of(profile: Profile, frames: Frames, rows: np.ndarray) -> np.ndarray:
    """Per row, the index (into ``frames``) of the frame its launch lies in, -1."""
    if not len(frames.rows) or not len(rows):
        return np.full(len(rows), -1, np.int64)
    ev = profile.events
    f = frames.rows
    q_tid, q_s, q_e = launch_point(profile, rows)
    return containing(thread_ids(profile)[f], ev["start"][f], ev["start"][f] + ev["dur"][f], q_tid, q_s, q_e)


def capture_layer_hints(capture: Profile, launch_rows_: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, str]:
    """Per captured launch (rows of the capture profile, graph by graph: ``offsets``), the
    decoder layer it was captured in, numbered from 0 within its graph; else the graph
    piece (``piece_frames``), numbered alike; -1 outside both. Returns (numbers, how:
    "module:<Class>", "pieces:nested", "pieces:top" or "")."""
    out = np.full(len(launch_rows_), -1, np.int64)
    frames = decoder_frames(capture)
    how = f"module:{_main_class(frames.cls)}" if len(frames.rows) else ""
    if not len(frames.rows):
        frames = piece_frames(capture)
        how = f"pieces:{frames.how}" if len(frames.rows) else ""
    if not how:
        return out, ""
    ev = capture.events
    f = frames.rows
    tid = thread_ids(capture)
    hit = containing(
        tid[f],
        ev["start"][f],
        ev["start"][f] + ev["dur"][f],
        tid[launch_rows_],
        ev["start"][launch_rows_],
        ev["start"][launch_rows_] + ev["dur"][launch_rows_],
    )
    for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist()):  # graphs are few
        h = hit[a:b]
        used = np.unique(h[h >= 0])  # frames of this graph, in start order (frames are ordered)
        out[a:b] = np.where(h >= 0, np.searchsorted(used, h), -1)
    return out, how


def _main_class(cls: list[str]) -> str:
    if not cls:
        return ""
    vals, counts = np.unique(np.array(cls), return_counts=True)
    return str(vals[int(np.argmax(counts))])
