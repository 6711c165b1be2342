"""Attribution: which step, phase and fused op each event belongs to (stateless, columnar).

``attribute(profile, taxonomy, capture)`` fills the derived event columns of a Profile:

- ``depth``: 0 for a top-level host op, 1 for a nested one;
- ``step`` and ``phase``: the step whose range holds the event's *launch* (the runtime
  call with its correlation id, for device work), else the event's own start;
- ``fused``: the outermost vLLM custom op on the launching op chain, else the innermost
  layer module range, else the event's own name, else its top-level op's name, else
  "other"; device work whose own name is unambiguous (memcpy, memset, communication)
  keeps it (a copy launched by a collective op is that collective's staging copy).
  Graph-replayed device work has no launching op of its own: it is attributed through
  the capture trace when one is given (``replays``). What is still decided by its own
  name alone then goes through the structure rules (``structure``: MoE blocks, staging
  copies, attention pre-processing) before the name;
- ``source``: how the fused op was decided (``attribution_source`` codes);

and each step's ``busy`` time (``device_steps.step_busy``).
"""

from __future__ import annotations

import numpy as np

from ..core.derived import Derived
from ..core.intervals import containing, covered_in_windows, top_level
from ..core.launches import device_mask, launch_rows, thread_ids
from ..core.nesting import crossing_warning, host_nesting
from ..core.profile import E_HOOKS, K_ANNOTATION, K_CPU_OP, K_RUNTIME, P_UNKNOWN, Profile
from ..core.sources import DTYPE as SOURCE_DTYPE
from ..core.sources import AttributionSource as Src
from ..knowledge.fused_ops import FUSED_OPS, OTHER
from ..knowledge.nvtx_ranges import LAYERWISE_PREFIX
from ..knowledge.taxonomy import MODULE_RANGE_PREFIXES, Taxonomy
from ..knowledge.taxonomy import default as default_taxonomy
from .engine_family import detect as detect_engine
from .graphs.replays import attribute_replays, find_replays
from .steps.device import step_busy
from .steps.find import find_steps
from .steps.phases import infer_phases
from .structure import apply_structure

#: fused ops that device work keeps from its own name whatever launched it
OWN_NAME_WINS = ("memcpy", "memset", "communication")


def attribute(profile: Profile, taxonomy: Taxonomy | None = None, capture: Profile | None = None) -> Derived:
    """Fill events' depth, step, phase, fused and source columns (and steps' busy);
    ``capture``: the graph-capture traces of the run, loaded as one Profile. Returns what it
    derived beside the columns (``profile.derived``)."""
    taxonomy = taxonomy or default_taxonomy()
    ev = profile.events
    _steps(profile)
    timed = ev["start"] >= 0
    host_op = np.flatnonzero((ev["kind"] == K_CPU_OP) & timed)
    _warn_crossings(profile)
    ev["depth"] = _depth(profile, host_op)
    rows = launch_rows(profile)
    replays = find_replays(profile, rows)
    replayed = np.zeros(len(ev), bool)
    replayed[replays.rows] = True
    fused, source = _fused_ops(profile, taxonomy, host_op, rows, replayed)
    ev["step"], ev["phase"] = _steps_and_phases(profile, rows)
    detect_engine(profile)
    if len(profile.steps):
        infer_phases(profile)  # steps found without fields: phase from their evidence
    attribute_replays(profile, replays, capture, taxonomy, fused, source)
    profile.derived.structure = apply_structure(profile, taxonomy, fused, source)
    ev["fused"], ev["source"] = fused, source
    if len(profile.steps):
        profile.steps["busy"] = step_busy(profile, basis_mask(profile))
    profile.derived.attributed = True
    return profile.derived


def _steps(profile: Profile) -> None:
    """The steps: those the input recorded (the live hooks) and those a selection kept stay;
    others are found from evidence. Steps an earlier analysis found and saved with the events
    (a bundle) are found again, so that the summary knows what found them."""
    d, st = profile.derived, profile.steps
    again = not d.attributed and not d.step_search and len(st) and not (st["evidence"] == E_HOOKS).all()
    if not len(st) or again:
        profile.steps = find_steps(profile)
    elif d.step_source is None:
        d.step_source = profile.run.get("step_source")


def _depth(profile: Profile, host_op: np.ndarray) -> np.ndarray:
    ev = profile.events
    depth = np.full(len(ev), -1, np.int8)
    if len(host_op):
        end = host_nesting(profile).end  # (ranges that overlap without nesting: see core.nesting)
        depth[host_op] = np.where(top_level(thread_ids(profile)[host_op], ev["start"][host_op], end[host_op]), 0, 1)
    return depth


def _warn_crossings(profile: Profile) -> None:
    """Host ranges that overlap without nesting, counted once per profile."""
    text = crossing_warning(profile, host_nesting(profile))
    if text:
        profile.derived.warn(text)


def launch_points(profile: Profile, rows: np.ndarray, at: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where the events ``at`` (row indices) were launched from: (host start, host end, host
    thread as a ``thread_ids`` id), one value per row asked about (not per event: on a large
    trace three full-length columns are what the attribution's peak is made of).

    Device work with a correlation id takes its runtime call's; everything else its own.
    """
    src = launch_sources(rows, at)
    return profile.events["start"][src], host_nesting(profile).end[src], thread_ids(profile)[src]


def launch_sources(rows: np.ndarray, at: np.ndarray) -> np.ndarray:
    """For the events ``at``, the row their launch point is read from: the runtime call
    that launched them (``rows``: ``launch_rows``), else their own."""
    src = rows[at]
    return np.where(src >= 0, src, at)


def _fused_ops(
    profile: Profile, taxonomy: Taxonomy, host_op: np.ndarray, rows: np.ndarray, replayed: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Fused op and its source per event: launching custom op → layer module → own name →
    root op → other. Graph-replayed work looks at its own name only: the op chain around
    its graph launch says nothing about any one of its kernels."""
    ev = profile.events
    kind = ev["kind"]
    launched = rows >= 0
    names = _NameTables(profile, taxonomy)
    # the events whose launch point is looked up in the op chain
    q = np.flatnonzero(((kind == K_CPU_OP) | launched | (kind == K_RUNTIME)) & (ev["start"] >= 0) & ~replayed)
    del launched
    custom_of, module_of, root_of = _holders(profile, q, host_op, rows, names)

    fused = np.full(len(ev), -1, np.int16)
    source = np.full(len(ev), Src.NONE, SOURCE_DTYPE)
    own = names.fused[ev["name"]]

    def put(rows: np.ndarray, values: np.ndarray, src: Src) -> None:
        fused[rows] = values
        source[rows] = src

    # root-op fallback first, then stronger evidence overwrites it
    r_ok = root_of >= 0
    put(q[r_ok], names.fused[ev["name"][root_of[r_ok]]], Src.OP_CHAIN)
    put(np.flatnonzero(own >= 0), own[own >= 0], Src.NAME)
    m_ok = module_of >= 0
    put(q[m_ok], names.module[ev["name"][module_of[m_ok]]], Src.MODULE)
    c_ok = custom_of >= 0
    c_fused = names.fused[ev["name"][custom_of[c_ok]]]
    good = c_fused >= 0
    put(q[c_ok][good], c_fused[good], Src.OP_CHAIN)
    strong = np.flatnonzero(np.isin(own, [FUSED_OPS.index(x) for x in OWN_NAME_WINS]) & device_mask(kind))
    put(strong, own[strong], Src.NAME)
    # ... except a copy launched by a collective op: its staging copy (vllm::all_reduce > copy_)
    comm = FUSED_OPS.index("communication")
    rows_c = q[c_ok][good & (c_fused == comm)]
    staged = rows_c[(own[rows_c] == FUSED_OPS.index("memcpy")) & device_mask(kind[rows_c])]
    put(staged, np.full(len(staged), comm, np.int16), Src.OP_CHAIN)
    unknown = fused < 0
    fused[unknown] = OTHER
    source[unknown] = Src.NONE
    return fused, source


class _NameTables:
    """Per string id: its fused op by name, whether it is a custom op, and a module range's
    fused op (computed once per distinct name the events use)."""

    def __init__(self, profile: Profile, taxonomy: Taxonomy):
        names = profile.strings.strings
        self.custom = np.zeros(len(names) + 1, bool)
        self.module = np.full(len(names) + 1, -1, np.int16)
        self.fused = np.full(len(names) + 1, -1, np.int16)
        for nid in np.unique(profile.events["name"]).tolist():
            s = names[nid]
            self.fused[nid] = taxonomy.classify(s)
            if taxonomy.is_custom_op(s):
                self.custom[nid] = True
            elif s.startswith((*MODULE_RANGE_PREFIXES, LAYERWISE_PREFIX)):
                self.module[nid] = taxonomy.classify_module(s)


def _holders(profile: Profile, q: np.ndarray, host_op: np.ndarray, rows: np.ndarray, names: _NameTables) -> tuple:
    """For each queried event's launch point, the event holding it (-1 none): the outermost
    custom op, the innermost layer module (nested modules first), the top-level op."""
    ev = profile.events
    start, end = ev["start"], host_nesting(profile).end
    thread = thread_ids(profile)
    q_start, q_end, q_thread = launch_points(profile, rows, q)

    def holder(cands: np.ndarray) -> np.ndarray:
        res = np.full(len(q), -1, np.int64)
        if len(cands) == 0 or len(q) == 0:
            return res
        hit = containing(thread[cands], start[cands], end[cands], q_thread, q_start, q_end)
        ok = hit >= 0
        res[ok] = cands[hit[ok]]
        return res

    def outermost(cands: np.ndarray) -> np.ndarray:
        return top_level(thread[cands], start[cands], end[cands])

    custom = host_op[names.custom[ev["name"][host_op]]] if len(host_op) else host_op
    custom_of = holder(custom[outermost(custom)] if len(custom) else custom)
    mods = np.flatnonzero((ev["kind"] == K_ANNOTATION) & (start >= 0) & (names.module[ev["name"]] >= 0))
    module_of = np.full(len(q), -1, np.int64)
    if len(mods):
        outer = outermost(mods)
        if (~outer).any():
            module_of = holder(mods[~outer])
        miss = module_of < 0
        if miss.any():
            module_of[miss] = holder(mods[outer])[miss]
    root_of = holder(host_op[ev["depth"][host_op] == 0]) if len(host_op) else np.full(len(q), -1, np.int64)
    return custom_of, module_of, root_of


def _steps_and_phases(profile: Profile, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Step row and phase of each event: the step of its rank whose range holds its launch."""
    ev, steps = profile.events, profile.steps
    n = len(ev)
    step = np.full(n, -1, np.int32)
    if len(steps) and n:
        s_rank = steps["rank"].astype(np.int64)
        s_start, s_end = steps["start"], steps["start"] + steps["dur"]
        qi = np.flatnonzero(ev["start"] >= 0)
        q_rank, q_t = ev["rank"][qi].astype(np.int64), ev["start"][launch_sources(rows, qi)]
        hit = containing(s_rank, s_start, s_end, q_rank, q_t, q_t)
        outer = top_level(s_rank, s_start, s_end)
        if not outer.all():  # nested steps: what the inner one misses may sit in the outer one
            miss = hit < 0
            oi = np.flatnonzero(outer)
            h2 = containing(s_rank[oi], s_start[oi], s_end[oi], q_rank[miss], q_t[miss], q_t[miss])
            hit[np.flatnonzero(miss)[h2 >= 0]] = oi[h2[h2 >= 0]]
        ok = hit >= 0
        step[qi[ok]] = hit[ok]
    phase = np.full(n, P_UNKNOWN, np.int8)
    has_step = step >= 0
    if len(steps):
        phase[has_step] = steps["phase"][step[has_step]]
    return step, phase


def basis_mask(profile: Profile) -> np.ndarray:
    """The events whose time is "op time": device work when the trace has any, else
    top-level host ops (CPU-only runs)."""
    ev = profile.events
    dev = device_mask(ev["kind"])
    if dev.any():
        return dev
    return (ev["kind"] == K_CPU_OP) & (ev["depth"] <= 0)


def events_busy(
    profile: Profile, mask: np.ndarray, w_rank: np.ndarray, w_start: np.ndarray, w_end: np.ndarray
) -> np.ndarray:
    """Length of the union of the ``mask`` events' intervals inside each window (same rank)."""
    ev = profile.events
    sel = mask & (ev["start"] >= 0)
    s = ev["start"][sel]
    return covered_in_windows(
        ev["rank"][sel].astype(np.int64), s, s + ev["dur"][sel], w_rank.astype(np.int64), w_start, w_end
    )
