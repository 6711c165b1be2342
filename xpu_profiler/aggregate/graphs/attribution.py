"""Graph replays (CUDA / HIP / XPU graphs) and their attribution through capture traces.

Under a graph replay the device work of a whole forward pass comes from one runtime
call (``cudaGraphLaunch``, ``hipGraphLaunch``, the XPU runtime's graph launch): the
kernels share that call's correlation id and have no launching op of their own. A
capture trace, recorded while the engine captured its graphs (vLLM:
``capture_{num_tokens}_{MODE}`` ranges, one file per graph under
``<profiler dir>/capture_traces``; SGLang alike), holds every kernel launch of the
graph with its op chain and layer modules. Three stateless steps, columnar:

- ``find_replays(profile)``: the graph launches, and the device work each produced
  (``replay_share``: how much device time they hold);
- ``capture.read_captures(capture_profile, taxonomy)``: per captured graph the ordered
  launches with their kernel names and the fused op their op chain or module gives;
- ``match_replays(profile, replays, captures, taxonomy)``: each replayed kernel to its
  captured launch (graph chosen by content, then by the step's token count; order
  within the graph; kernel names compared by base identifier, so HIP/CUDA spellings of
  template arguments do not matter; no names at all → by position), giving per event
  row the fused op and the source ``AttributionSource.CAPTURE``.
"""

from __future__ import annotations

from difflib import SequenceMatcher
from typing import NamedTuple

import numpy as np

from ...core.intervals import containing
from ...core.ordering import lexsort
from ...core.profile import DEVICE_KINDS, K_ANNOTATION, K_RUNTIME, Profile
from ...core.sources import DTYPE as SOURCE_DTYPE
from ...core.sources import AttributionSource
from ...knowledge.kernel_names import kernel_key
from ...knowledge.runtime_api import GRAPH_LAUNCH
from ...knowledge.step_grammar import FAMILY_PRIORITY, parse_step_name
from ...knowledge.taxonomy import FUSED_OPS, Taxonomy
from ...knowledge.taxonomy import default as default_taxonomy
from .captures import Captures, name_mask


class Replays(NamedTuple):
    """One row per graph replay; its device work is ``rows[offsets[i]:offsets[i + 1]]``
    (event rows in start order)."""

    launch: np.ndarray  # event row of the graph launch, -1: launched before the window
    rank: np.ndarray
    corr: np.ndarray
    rows: np.ndarray
    offsets: np.ndarray

    def __len__(self) -> int:
        return len(self.rank)


class ReplayAttribution(NamedTuple):
    """Per event row of the replay profile (-1 / NONE where not replayed or not matched)."""

    fused: np.ndarray  # int16, fused op from the capture
    source: np.ndarray  # int8, AttributionSource.CAPTURE where the capture decided
    capture_row: np.ndarray  # int64, matched launch (row of the capture profile)
    replay: np.ndarray  # int32, replay index
    graph: np.ndarray  # per replay: matched captured graph, -1
    stats: dict[str, int | float]  # counts, and matched_share


def find_replays(profile: Profile) -> Replays:
    """Graph launches and their device work (same rank and correlation id). Device work
    whose launch precedes the window is found as several device events sharing one
    correlation id with no runtime call in the trace."""
    ev = profile.events
    kind, corr, rank = ev["kind"], ev["corr"], ev["rank"].astype(np.int64)
    rt = np.flatnonzero((kind == K_RUNTIME) & (corr >= 0))
    gl = rt[name_mask(profile, rt, GRAPH_LAUNCH)]
    dev = np.flatnonzero(np.isin(kind, DEVICE_KINDS) & (corr >= 0) & (ev["start"] >= 0))
    big = int(max(corr.max(initial=0), 0)) + 1
    dkey = rank[dev] * big + corr[dev]
    gkey = rank[gl] * big + corr[gl]
    in_gl = np.isin(dkey, gkey)
    # orphans: several device events on one correlation id whose runtime call is absent
    rkey = rank[rt] * big + corr[rt]
    u, cnt = np.unique(dkey[~np.isin(dkey, rkey)], return_counts=True)
    orphan_keys = u[cnt >= 2]
    keep = in_gl | np.isin(dkey, orphan_keys)
    rows, k = dev[keep], dkey[keep]
    uk, grp = np.unique(k, return_inverse=True)
    grp = grp.reshape(-1)
    first_t = np.full(len(uk), np.iinfo(np.int64).max)
    np.minimum.at(first_t, grp, ev["start"][rows])
    rank_of = np.empty(len(uk), np.int64)
    rank_of[lexsort((uk, first_t))] = np.arange(len(uk))  # replays in time order
    order = lexsort((ev["start"][rows], rank_of[grp]))
    rows, g = rows[order], rank_of[grp][order]
    keys = uk[np.argsort(rank_of)]
    gk_order = np.argsort(gkey, kind="stable")
    pos = np.searchsorted(gkey[gk_order], keys)
    ok = pos < len(gkey)
    ok[ok] &= gkey[gk_order][pos[ok]] == keys[ok]
    launch = np.full(len(keys), -1, np.int64)
    launch[ok] = gl[gk_order][pos[ok]]
    offsets = np.searchsorted(g, np.arange(len(keys) + 1)).astype(np.int64)
    return Replays(
        launch=launch,
        rank=(keys // big).astype(np.int32),
        corr=(keys % big).astype(np.int64),
        rows=rows,
        offsets=offsets,
    )


def replay_share(profile: Profile, replays: Replays) -> dict:
    """How much device time graph replays hold (sums of durations, all ranks)."""
    ev = profile.events
    dev = np.isin(ev["kind"], DEVICE_KINDS) & (ev["start"] >= 0)
    total = int(ev["dur"][dev].sum())
    under = int(ev["dur"][replays.rows].sum())
    return {
        "replays": len(replays),
        "replayed_events": int(len(replays.rows)),
        "device_ns": total,
        "replayed_ns": under,
        "share": under / total if total else 0.0,
    }


def _step_hints(profile: Profile, replays: Replays) -> tuple[np.ndarray, np.ndarray]:
    """Per replay: tokens of the engine step whose range holds its launch (-1), and the
    launch's ordinal among the step's graph launches (piecewise graphs)."""
    ev, n = profile.events, len(replays)
    tokens, ordinal = np.full(n, -1, np.int64), np.zeros(n, np.int64)
    ann = np.flatnonzero((ev["kind"] == K_ANNOTATION) & (ev["device"] < 0) & (ev["start"] >= 0))
    parsed = {int(i): parse_step_name(profile.strings[int(i)]) for i in np.unique(ev["name"][ann])}
    named = {i: p for i, p in parsed.items() if p is not None and p.family in FAMILY_PRIORITY}
    fam = {i: p.family for i, p in named.items()}
    if not fam or not n:
        return tokens, ordinal
    best = min(fam.values(), key=FAMILY_PRIORITY.__getitem__)
    steps = np.array([r for r in ann.tolist() if fam.get(int(ev["name"][r])) == best], np.int64)
    has = np.flatnonzero(replays.launch >= 0)
    la = replays.launch[has]
    s_rank = ev["rank"][steps].astype(np.int64)
    hit = containing(
        s_rank,
        ev["start"][steps],
        ev["start"][steps] + ev["dur"][steps],
        ev["rank"][la].astype(np.int64),
        ev["start"][la],
        ev["start"][la],
    )
    ok = hit >= 0
    tokens[has[ok]] = [named[int(ev["name"][steps[h]])].total_tokens for h in hit[ok].tolist()]
    for h in np.unique(hit[ok]).tolist():
        m = has[hit == h]
        ordinal[m[np.argsort(ev["start"][replays.launch[m]], kind="stable")]] = np.arange(len(m))
    return tokens, ordinal


def _pick(graphs: list[int], captures: Captures, tokens: int, ordinal: int) -> int:
    """Among equally good graphs: the smallest captured size that holds the step's tokens
    (engines pad a batch up to the next captured size), then the piece at the launch's ordinal."""
    size = captures.size[graphs]
    if tokens >= 0 and (size >= tokens).any():
        want = size[size >= tokens].min()
    else:
        want = size.max() if tokens >= 0 else size[0]
    same = [g for g in graphs if captures.size[g] == want]
    return min(same, key=lambda g: (abs(int(captures.piece[g]) - ordinal), int(captures.piece[g])))


def _best_alignment(rk: np.ndarray, seqs: list, exact: dict) -> tuple[list, list] | None:
    """The named captured sequence most of a replay's kernels align with (a window that cut
    the replay, kernels renamed): (its graphs, [(replay position, launch position)])."""
    n, best, choice = len(rk), 0, None
    for gs in exact.values():  # one alignment per distinct named sequence
        q = seqs[gs[0]]
        if len(q) < n // 4:
            continue
        blocks = SequenceMatcher(None, q.tolist(), rk.tolist(), autojunk=False).get_matching_blocks()
        m = sum(blk.size for blk in blocks)
        if m > best:
            best, choice = m, (gs, blocks)
    if choice is None or best < max(1, n // 2):
        return None
    return choice[0], [(blk.b + t, blk.a + t) for blk in choice[1] for t in range(blk.size)]


def _align(
    rk: np.ndarray, captures: Captures, seqs: list, exact: dict, launched: bool, tokens: int, ordinal: int, memo: dict
) -> tuple[int, list, str]:
    """(captured graph, [(replay position, launch position)], how) for one replay."""
    n = len(rk)
    hit = exact.get(rk.tobytes())
    if hit:  # the common case: the whole graph replayed, same kernels in the same order
        return _pick(hit, captures, tokens, ordinal), [(j, j) for j in range(n)], "by_name"
    if exact:
        k = rk.tobytes()
        if k not in memo:  # replays of one graph share their sequence: align it once
            memo[k] = _best_alignment(rk, seqs, exact)
        if memo[k] is not None:
            return _pick(memo[k][0], captures, tokens, ordinal), memo[k][1], "by_name"
    # kernel names unknown in the capture (CUDA runtime calls carry none): by position
    lens = np.diff(captures.offsets)
    unnamed = np.array([not (q >= 0).all() for q in seqs], bool)
    same = np.flatnonzero(unnamed & (lens == n)).tolist()
    longer = np.flatnonzero(unnamed & (lens > n)).tolist()
    if not (same or longer):
        return -1, [], "unmatched"
    g = _pick(same or longer, captures, tokens, ordinal)
    # a replay cut by the window's end is a prefix of its graph; one launched before it, a suffix
    shift = 0 if same or launched else int(lens[g]) - n
    return g, [(j, j + shift) for j in range(n)], "by_position"


def match_replays(
    profile: Profile, replays: Replays, captures: Captures, taxonomy: Taxonomy | None = None
) -> ReplayAttribution:
    """Each replayed device event matched to its captured launch and attributed through it,
    exactly as an eager kernel: its outermost custom op, else its module; when neither
    speaks and its own name says nothing either, its top-level op. Names that are
    unambiguous on their own (copies, fills, collectives) keep them."""
    taxonomy = taxonomy or default_taxonomy()
    ev, strings = profile.events, profile.strings
    n_ev, n_rep = len(ev), len(replays)
    fused = np.full(n_ev, -1, np.int16)
    source = np.full(n_ev, AttributionSource.NONE, SOURCE_DTYPE)
    cap_row = np.full(n_ev, -1, np.int64)
    replay = np.full(n_ev, -1, np.int32)
    graph_of = np.full(n_rep, -1, np.int64)
    stats: dict[str, int | float] = {
        "replays": n_rep,
        "replayed_events": int(len(replays.rows)),
        "matched_events": 0,
        "attributed_events": 0,
        "by_name": 0,
        "by_position": 0,
        "unmatched": 0,
    }
    rows = replays.rows
    replay[rows] = np.repeat(np.arange(n_rep, dtype=np.int32), np.diff(replays.offsets))
    if not len(captures):
        stats["unmatched"] = n_rep
    elif n_rep:
        index = {k: i for i, k in enumerate(captures.keys)}  # one key space for both profiles
        uniq, first, inv = np.unique(ev["name"][rows], return_index=True, return_inverse=True)
        inv = inv.reshape(-1)
        rkey = np.array(
            [
                index.setdefault(kernel_key(strings[int(u)], int(ev["kind"][rows[f]])), len(index))
                for u, f in zip(uniq.tolist(), first.tolist())
            ],
            np.int32,
        )[inv]
        own = np.array([taxonomy.classify(strings[int(u)]) for u in uniq.tolist()], np.int16)[inv]
        strong = np.isin(own, [FUSED_OPS.index(x) for x in ("memcpy", "memset", "communication")])
        seqs = [captures.key[a:b] for a, b in zip(captures.offsets[:-1], captures.offsets[1:])]
        exact: dict[bytes, list[int]] = {}
        for g, q in enumerate(seqs):
            if len(q) and (q >= 0).all():
                exact.setdefault(q.tobytes(), []).append(g)
        tokens, ordinal = _step_hints(profile, replays)
        memo: dict = {}
        for i in range(n_rep):  # replays are few (one per step, or per piece when piecewise)
            a, b = int(replays.offsets[i]), int(replays.offsets[i + 1])
            g, pairs, how = _align(
                rkey[a:b], captures, seqs, exact, bool(replays.launch[i] >= 0), int(tokens[i]), int(ordinal[i]), memo
            )
            stats[how] += 1
            if g < 0:
                continue
            graph_of[i] = g
            rp = a + np.array([p[0] for p in pairs], np.int64)
            cp = captures.offsets[g] + np.array([p[1] for p in pairs], np.int64)
            cap_row[rows[rp]] = captures.rows[cp]
            cs, rf = captures.chain_source[cp], captures.root_fused[cp]
            take = ((cs != AttributionSource.NONE) | ((own[rp] < 0) & (rf >= 0))) & ~strong[rp]
            er = rows[rp][take]
            fused[er] = np.where(cs[take] != AttributionSource.NONE, captures.chain_fused[cp][take], rf[take])
            source[er] = AttributionSource.CAPTURE
            stats["matched_events"] += len(rp)
            stats["attributed_events"] += int(take.sum())
    stats["matched_share"] = stats["matched_events"] / stats["replayed_events"] if stats["replayed_events"] else 0.0
    return ReplayAttribution(fused, source, cap_row, replay, graph_of, stats)
