"""Grouping, phase assignment, step statistics, idle/host overhead.

Two stateless stages, both columnar (numpy, no Python object per event):

- ``attribute(profile, taxonomy)`` fills the derived event columns: ``depth``
  (top-level host op or not), ``step`` and ``phase`` (from the step whose range
  holds the event's launch), and ``fused`` (launching custom op → layer module →
  own name → root op name → "other");
- ``summarize(profile)`` builds the plain, JSON-ready ``Summary`` dict that every
  exporter reads.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec
import numpy as np

from .profile import (
    DEVICE_KINDS,
    K_ANNOTATION,
    K_CPU_OP,
    K_KERNEL,
    K_RUNTIME,
    KINDS,
    P_DECODE,
    P_MIXED,
    P_PREFILL,
    P_UNKNOWN,
    PHASES,
    STEP_SCHEMA,
    Profile,
    Table,
)
from .summary import (
    DeviceSpec,
    Distribution,
    FusedOp,
    FusedTime,
    Kernel,
    Memory,
    Phase,
    Rank,
    Run,
    Series,
    Source,
    Steps,
    Summary,
    Throughput,
    Totals,
)
from .taxonomy import FUSED_OPS, OTHER, Taxonomy
MAX_SERIES_POINTS = 2000

# vLLM's step annotations (worker side), newest first.
_STEP_PATTERNS = [
    # execute_context_3(63)_generation_1(1)
    (re.compile(r"^execute_context_(\d+)\((\d+)\)_generation_(\d+)\((\d+)\)$"), "native"),
    # execute_120_context_2(sq..)_generation_3(..): total tokens first
    (re.compile(r"^execute_(\d+)_context_(\d+)\(.*\)_generation_(\d+)\(.*\)$"), "detailed"),
    # execute_new_2_cached_5 (older vLLM)
    (re.compile(r"^execute_new_(\d+)_cached_(\d+)$"), "old"),
]
_PROFILER_STEP = re.compile(r"^ProfilerStep#(\d+)$")


# --------------------------------------------------------------------------------------
# interval helpers
# --------------------------------------------------------------------------------------

def _group_keys(*cols: np.ndarray) -> np.ndarray:
    """A small group id per row of several integer columns (equal rows, equal ids).

    Each column is made dense on its own (1-D unique is a fast sort), then the dense
    codes are combined positionally: ids stay below the product of distinct counts.
    """
    if len(cols[0]) == 0:
        return np.zeros(0, np.int64)
    gid = np.zeros(len(cols[0]), np.int64)
    for c in cols:
        uniq, inv = np.unique(c, return_inverse=True)
        gid = gid * len(uniq) + inv.reshape(-1)
    return gid


def _span(*arrays: np.ndarray) -> int:
    hi = 1
    for a in arrays:
        if len(a):
            hi = max(hi, int(a.max()) + 1)
    return hi


def top_level(gid: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Mask of intervals not contained in an earlier one of the same group."""
    n = len(start)
    if n == 0:
        return np.zeros(0, bool)
    big = _span(start, end) + 1
    order = np.lexsort((-end, start, gid))  # parents (longer) before children at equal start
    s = gid[order] * big + start[order]
    e = gid[order] * big + end[order]
    prev_end = np.maximum.accumulate(np.concatenate(([np.iinfo(np.int64).min], e[:-1])))
    mask = np.empty(n, bool)
    mask[order] = s >= prev_end
    return mask


def containing(cand_gid: np.ndarray, cand_start: np.ndarray, cand_end: np.ndarray,
               q_gid: np.ndarray, q_start: np.ndarray, q_end: np.ndarray) -> np.ndarray:
    """For each query interval, the index of the candidate of its group that holds it, else -1.

    Candidates are taken as non-overlapping within a group (the latest one starting at or
    before the query wins); pass top-level or innermost sets accordingly.
    """
    out = np.full(len(q_start), -1, np.int64)
    if len(cand_start) == 0 or len(q_start) == 0:
        return out
    big = _span(cand_start, cand_end, q_start, q_end) + 1
    order = np.lexsort((cand_start, cand_gid))
    ckey = cand_gid[order] * big + cand_start[order]
    qkey = q_gid * big + q_start
    pos = np.searchsorted(ckey, qkey, side="right") - 1
    ok = pos >= 0
    idx = order[np.maximum(pos, 0)]
    ok &= cand_gid[idx] == q_gid
    ok &= cand_end[idx] >= q_end
    out[ok] = idx[ok]
    return out


def union_length(gid: np.ndarray, start: np.ndarray, end: np.ndarray, n_groups: int) -> np.ndarray:
    """Length of the union of intervals per group (device busy time without double counting)."""
    out = np.zeros(n_groups, np.int64)
    if len(start) == 0:
        return out
    big = _span(start, end) + 1
    order = np.lexsort((start, gid))
    g = gid[order]
    s = g * big + start[order]
    e = g * big + end[order]
    prev_end = np.maximum.accumulate(np.concatenate(([np.iinfo(np.int64).min], e[:-1])))
    contrib = np.maximum(0, e - np.maximum(s, prev_end))
    np.add.at(out, g, contrib)
    return out


# --------------------------------------------------------------------------------------
# steps
# --------------------------------------------------------------------------------------

def steps_from_annotations(profile: Profile) -> Table:
    """Engine steps from vLLM's step annotations in a torch trace (host side only).

    Falls back to ``ProfilerStep#N`` ranges (phase unknown) when vLLM's are absent.
    """
    ev = profile.events
    is_ann = (ev["kind"] == K_ANNOTATION) & (ev["device"] < 0)
    idx = np.flatnonzero(is_ann)
    if len(idx) == 0:
        return Table(STEP_SCHEMA)
    name_ids = ev["name"][idx]
    uniq = np.unique(name_ids)
    parsed: dict[int, tuple] = {}
    profiler_steps: dict[int, int] = {}
    for nid in uniq.tolist():
        s = profile.strings[nid]
        for rx, form in _STEP_PATTERNS:
            m = rx.match(s)
            if m:
                g = [int(x) for x in m.groups()]
                if form == "native":
                    parsed[nid] = (g[0], g[1], g[2], g[3])
                elif form == "detailed":  # total known; each decode request schedules one token
                    dec = min(g[2], g[0]) if g[1] else g[0]
                    parsed[nid] = (g[1], g[0] - dec, g[2], dec)
                else:
                    parsed[nid] = (g[0], 0, g[1], 0)
                break
        else:
            m = _PROFILER_STEP.match(s)
            if m:
                profiler_steps[nid] = int(m.group(1))
    use_vllm = bool(parsed)
    table = parsed if use_vllm else profiler_steps
    if not table:
        return Table(STEP_SCHEMA)
    sel = idx[np.isin(name_ids, np.fromiter(table.keys(), dtype=np.int64))]
    sel = sel[np.lexsort((ev["start"][sel], ev["rank"][sel]))]
    n = len(sel)
    nids = ev["name"][sel].tolist()
    cols: dict[str, Any] = {
        "rank": ev["rank"][sel], "name": ev["name"][sel], "start": ev["start"][sel], "dur": ev["dur"][sel],
    }
    if use_vllm:
        pr = np.array([table[i][0] for i in nids], np.int32)
        pt = np.array([table[i][1] for i in nids], np.int64)
        dr = np.array([table[i][2] for i in nids], np.int32)
        dt = np.array([table[i][3] for i in nids], np.int64)
        phase = np.full(n, P_UNKNOWN, np.int8)
        phase[(pr > 0) & (dr == 0)] = P_PREFILL
        phase[(pr == 0) & (dr > 0)] = P_DECODE
        phase[(pr > 0) & (dr > 0)] = P_MIXED
        empty = (pr == 0) & (dr == 0)
        if empty.any():
            profile.run["empty_steps"] = int(empty.sum())
        keep = ~empty
        cols.update(prefill_reqs=pr, prefill_tokens=pt, decode_reqs=dr, decode_tokens=dt, phase=phase)
        cols = {k: np.asarray(v)[keep] for k, v in cols.items()}
        ranks = cols["rank"]
        step_id = np.zeros(len(ranks), np.int64)
        for r in np.unique(ranks):
            m = ranks == r
            step_id[m] = np.arange(int(m.sum()))
        cols["step_id"] = step_id
    else:
        cols["step_id"] = np.array([table[i] for i in nids], np.int64)
        cols["phase"] = np.full(n, P_UNKNOWN, np.int8)
    profile.run["step_source"] = "vllm_annotation" if use_vllm else "profiler_step"
    return Table(STEP_SCHEMA, cols)


# --------------------------------------------------------------------------------------
# attribution
# --------------------------------------------------------------------------------------

def attribute(profile: Profile, taxonomy: Taxonomy | None = None) -> Profile:
    """Fill events' depth, step, phase and fused columns (and steps' busy); returns profile."""
    taxonomy = taxonomy or Taxonomy()
    ev = profile.events
    n = len(ev)
    if not len(profile.steps):
        profile.steps = steps_from_annotations(profile)
    kind, rank, track = ev["kind"], ev["rank"].astype(np.int64), ev["track"]
    start = ev["start"]
    end = start + ev["dur"]
    timed = start >= 0

    # ---- host op nesting --------------------------------------------------------------
    host_op = np.flatnonzero((kind == K_CPU_OP) & timed)
    op_gid = _group_keys(rank[host_op], track[host_op]) if len(host_op) else np.zeros(0, np.int64)
    depth = np.full(n, -1, np.int8)
    if len(host_op):
        tl = top_level(op_gid, start[host_op], end[host_op])
        depth[host_op] = np.where(tl, 0, 1)
    ev["depth"] = depth

    # ---- the point each event was launched from (host time and thread) -----------------
    launch_t = start.copy()
    launch_end = end.copy()
    launch_track = track.copy()
    is_dev = np.isin(kind, DEVICE_KINDS)
    dev_idx = np.flatnonzero(is_dev & (ev["corr"] >= 0) & timed)
    rt_idx = np.flatnonzero((kind == K_RUNTIME) & (ev["corr"] >= 0) & timed)
    launched = np.zeros(n, bool)
    if len(dev_idx) and len(rt_idx):
        big = int(max(ev["corr"][rt_idx].max(), ev["corr"][dev_idx].max())) + 1
        rkey = rank[rt_idx] * big + ev["corr"][rt_idx]
        order = np.argsort(rkey, kind="stable")
        rkey_s = rkey[order]
        dkey = rank[dev_idx] * big + ev["corr"][dev_idx]
        pos = np.searchsorted(rkey_s, dkey)
        ok = pos < len(rkey_s)
        ok[ok] &= rkey_s[pos[ok]] == dkey[ok]
        src = rt_idx[order[pos[ok]]]
        hit = dev_idx[ok]
        launch_t[hit] = start[src]
        launch_end[hit] = end[src]
        launch_track[hit] = track[src]
        launched[hit] = True

    # ---- launching op chain: outermost custom op, innermost layer module, root op ------
    names = profile.strings.strings
    used = np.unique(ev["name"])
    is_custom_name = np.zeros(len(names) + 1, bool)
    mod_fused_name = np.full(len(names) + 1, -1, np.int16)
    for nid in used.tolist():
        s = names[nid]
        if taxonomy.is_custom_op(s):
            is_custom_name[nid] = True
        elif s.startswith(("nn.Module: ", "xpu_module:")):
            mod_fused_name[nid] = taxonomy.classify_module(s)

    q = np.flatnonzero(((kind == K_CPU_OP) | launched | (kind == K_RUNTIME)) & timed)
    q_gid_pairs = (rank[q], launch_track[q])

    def chain(cands: np.ndarray) -> np.ndarray:
        """Index (into events) of the candidate holding each query, -1."""
        if len(cands) == 0 or len(q) == 0:
            return np.full(len(q), -1, np.int64)
        # one id space for candidates and queries
        allr = np.concatenate([rank[cands], q_gid_pairs[0]])
        allt = np.concatenate([track[cands], q_gid_pairs[1]])
        gid = _group_keys(allr, allt)
        cg, qg = gid[:len(cands)], gid[len(cands):]
        hit = containing(cg, start[cands], end[cands], qg, launch_t[q], launch_end[q])
        res = np.full(len(q), -1, np.int64)
        ok = hit >= 0
        res[ok] = cands[hit[ok]]
        return res

    custom = host_op[is_custom_name[ev["name"][host_op]]] if len(host_op) else host_op
    if len(custom):
        cg = _group_keys(rank[custom], track[custom])
        custom = custom[top_level(cg, start[custom], end[custom])]
    custom_of = chain(custom)

    mods = np.flatnonzero((kind == K_ANNOTATION) & timed & (mod_fused_name[ev["name"]] >= 0))
    module_of = np.full(len(q), -1, np.int64)
    if len(mods):
        mg = _group_keys(rank[mods], track[mods])
        outer = top_level(mg, start[mods], end[mods])
        # nested modules first (the inner layer decides), then the outermost ones
        module_of = chain(mods[~outer]) if (~outer).any() else module_of
        miss = module_of < 0
        if miss.any():
            module_of[miss] = chain(mods[outer])[miss]

    root_of = chain(host_op[depth[host_op] == 0]) if len(host_op) else np.full(len(q), -1, np.int64)

    # ---- fused op per event --------------------------------------------------------
    name_fused = np.full(len(names) + 1, -1, np.int16)
    for nid in used.tolist():
        name_fused[nid] = taxonomy.classify(names[nid])
    fused = np.full(n, -1, np.int16)
    own = name_fused[ev["name"]]
    # root-op fallback first, then stronger evidence overwrites it
    if len(q):
        r_ok = root_of >= 0
        fused[q[r_ok]] = name_fused[ev["name"][root_of[r_ok]]]
    has_own = own >= 0
    fused[has_own] = own[has_own]
    if len(q):
        m_ok = module_of >= 0
        fused[q[m_ok]] = mod_fused_name[ev["name"][module_of[m_ok]]]
        c_ok = custom_of >= 0
        c_fused = name_fused[ev["name"][custom_of[c_ok]]]
        good = c_fused >= 0
        fused[q[c_ok][good]] = c_fused[good]
    # device work whose own name is unambiguous (memcpy/memset/communication) keeps it
    strong = np.isin(own, [FUSED_OPS.index(x) for x in ("memcpy", "memset", "communication")])
    fused[strong & is_dev] = own[strong & is_dev]
    fused[fused < 0] = OTHER
    ev["fused"] = fused

    # ---- steps and phases ----------------------------------------------------------
    steps = profile.steps
    step = np.full(n, -1, np.int32)
    if len(steps) and n:
        s_rank = steps["rank"].astype(np.int64)
        s_start, s_end = steps["start"], steps["start"] + steps["dur"]
        qi = np.flatnonzero(timed)
        hit = containing(s_rank, s_start, s_end, rank[qi], launch_t[qi], launch_t[qi])
        outer = top_level(s_rank, s_start, s_end)
        if not outer.all():  # nested steps: what the inner one misses may sit in the outer one
            miss = hit < 0
            oi = np.flatnonzero(outer)
            h2 = containing(s_rank[oi], s_start[oi], s_end[oi], rank[qi[miss]], launch_t[qi[miss]],
                            launch_t[qi[miss]])
            hit[np.flatnonzero(miss)[h2 >= 0]] = oi[h2[h2 >= 0]]
        ok = hit >= 0
        step[qi[ok]] = hit[ok]
    ev["step"] = step
    phase = np.full(n, P_UNKNOWN, np.int8)
    has_step = step >= 0
    if len(steps):
        phase[has_step] = steps["phase"][step[has_step]]
    ev["phase"] = phase

    # ---- step busy time: union of op-time intervals inside the step's window ----------
    # (not only the step's own launches: a device running behind the host does the
    # previous step's work inside this step's window, and that is not idle time)
    if len(steps):
        steps["busy"] = window_busy(profile, basis_mask(profile), steps["rank"], steps["start"],
                                    steps["start"] + steps["dur"])
    profile.run["attributed"] = True
    return profile


def merged_intervals(rank: np.ndarray, start: np.ndarray, end: np.ndarray):
    """Per rank, the union of intervals as sorted disjoint (rank, start, end) runs."""
    if len(start) == 0:
        z = np.zeros(0, np.int64)
        return z, z, z
    order = np.lexsort((start, rank))
    r, s, e = rank[order].astype(np.int64), start[order], end[order]
    new_rank = np.concatenate(([True], r[1:] != r[:-1]))
    # running max of ends within a rank (ranks are separated by an offset larger than any time)
    big = _span(s, e) + 1
    prev_end = np.maximum.accumulate(np.concatenate(([np.iinfo(np.int64).min], (r * big + e)[:-1])))
    opens = new_rank | (r * big + s > prev_end)
    run_id = np.cumsum(opens) - 1
    n = int(run_id[-1]) + 1
    run_start = s[opens]
    run_end = np.full(n, np.iinfo(np.int64).min, np.int64)
    np.maximum.at(run_end, run_id, e)
    return r[opens], run_start, run_end


def window_busy(profile: Profile, mask: np.ndarray, w_rank: np.ndarray, w_start: np.ndarray,
                w_end: np.ndarray) -> np.ndarray:
    """Length of the union of `mask` events' intervals inside each window (same rank)."""
    ev = profile.events
    sel = mask & (ev["start"] >= 0)
    r, s, e = merged_intervals(ev["rank"][sel], ev["start"][sel], ev["start"][sel] + ev["dur"][sel])
    out = np.zeros(len(w_start), np.int64)
    if len(s) == 0 or len(w_start) == 0:
        return out
    big = _span(s, e, w_start, w_end) + 1
    key_s = r * big + s
    prefix = np.concatenate(([0], np.cumsum(e - s)))

    def covered(wr: np.ndarray, x: np.ndarray) -> np.ndarray:
        """Busy time of rank wr from the start of time up to x."""
        k = wr.astype(np.int64) * big + x
        i = np.searchsorted(key_s, k, side="right") - 1
        first = np.searchsorted(r, wr.astype(np.int64), side="left")  # first run of that rank
        i_ok = (i >= first) & (i >= 0)
        ic = np.maximum(i, 0)
        part = np.where(i_ok, np.clip(x - s[ic], 0, (e - s)[ic]), 0)
        return np.where(i_ok, prefix[ic] - prefix[first] + part, 0)

    return np.maximum(covered(w_rank, w_end) - covered(w_rank, w_start), 0)


def basis_mask(profile: Profile) -> np.ndarray:
    """The events whose time is "op time": device work when the trace has any, else
    top-level host ops (CPU-only runs)."""
    ev = profile.events
    dev = np.isin(ev["kind"], DEVICE_KINDS)
    if dev.any():
        return dev
    return (ev["kind"] == K_CPU_OP) & (ev["depth"] <= 0)


# --------------------------------------------------------------------------------------
# summary
# --------------------------------------------------------------------------------------

def _pct(values: np.ndarray, q: float) -> float | None:
    return float(np.percentile(values, q)) if len(values) else None


def _dist(values: np.ndarray) -> Distribution:
    values = np.asarray(values, dtype=np.float64)
    values = values[np.isfinite(values)]
    return Distribution(p50=_pct(values, 50), p99=_pct(values, 99),
                        mean=float(values.mean()) if len(values) else None, n=int(len(values)))


def _downsample(t: np.ndarray, v: np.ndarray, limit: int = MAX_SERIES_POINTS) -> tuple[list, list]:
    if len(t) <= limit:
        return t.tolist(), v.tolist()
    idx = np.unique(np.concatenate([np.linspace(0, len(t) - 1, limit - 1).astype(np.int64),
                                    [int(np.argmax(v))]]))
    return t[idx].tolist(), v[idx].tolist()


def summarize(profile: Profile, top: int = 50, taxonomy: Taxonomy | None = None) -> Summary:
    """The typed Summary every exporter reads (see ``xpu_profiler.summary``)."""
    if not profile.run.get("attributed"):
        attribute(profile, taxonomy)
    ev, steps, strings = profile.events, profile.steps, profile.strings
    kind, dur = ev["kind"], ev["dur"]
    basis = basis_mask(profile)
    is_device_basis = bool(np.isin(kind, DEVICE_KINDS).any())
    b_idx = np.flatnonzero(basis)
    b_dur = dur[b_idx]
    op_time = int(b_dur.sum())
    fused, phase = ev["fused"][b_idx].astype(np.int64), ev["phase"][b_idx].astype(np.int64)
    nf, nph = len(FUSED_OPS), len(PHASES)

    # ---- fused op × phase ------------------------------------------------------------
    cell_t = np.zeros((nf, nph), np.int64)
    cell_n = np.zeros((nf, nph), np.int64)
    np.add.at(cell_t, (fused, phase), b_dur)
    np.add.at(cell_n, (fused, phase), 1)
    ts = token_steps(steps)
    tok = {"prefill": int(steps["prefill_tokens"][ts].sum()), "decode": int(steps["decode_tokens"][ts].sum())}
    phase_tokens = {}
    for p, name in enumerate(PHASES):
        m = ts[steps["phase"][ts] == p]
        phase_tokens[name] = int((steps["prefill_tokens"][m] + steps["decode_tokens"][m]).sum())
    fused_rows = []
    for f in np.argsort(-cell_t.sum(axis=1), kind="stable").tolist():
        t = int(cell_t[f].sum())
        c = int(cell_n[f].sum())
        if c == 0:
            continue
        by_phase = {PHASES[p]: int(cell_t[f, p]) for p in range(nph)}
        per_tok = {}
        for pname in ("prefill", "decode", "mixed"):
            tk = phase_tokens.get(pname, 0)
            per_tok[pname] = (by_phase[pname] / tk) if tk else None
        fused_rows.append(FusedOp(fused_op=FUSED_OPS[f], time_ns=t, count=c,
                                  share=(t / op_time) if op_time else 0.0,
                                  time_ns_by_phase=by_phase, per_token_ns_by_phase=per_tok,
                                  count_by_phase={PHASES[p]: int(cell_n[f, p]) for p in range(nph)}))
    other_t = int(cell_t[OTHER].sum())

    # ---- phases --------------------------------------------------------------------
    phase_rows = []
    for p in (P_PREFILL, P_DECODE, P_MIXED, P_UNKNOWN):
        pname = PHASES[p]
        sm = steps["phase"] == p if len(steps) else np.zeros(0, bool)
        t = int(cell_t[:, p].sum())
        if not sm.any() and t == 0:
            continue
        wall = steps["dur"][sm] if len(steps) else np.zeros(0, np.int64)
        tokens = phase_tokens.get(pname, 0)
        top_f = np.argsort(-cell_t[:, p], kind="stable")[:5]
        phase_rows.append(Phase(
            phase=pname, steps=int(sm.sum()), time_ns=t, wall_ns=int(wall.sum()),
            tokens=tokens, per_token_ns=(t / tokens) if tokens else None,
            step_p50_ns=_pct(wall, 50), step_p99_ns=_pct(wall, 99),
            top_fused=[FusedTime(fused_op=FUSED_OPS[f], time_ns=int(cell_t[f, p]))
                       for f in top_f.tolist() if cell_t[f, p] > 0]))

    # ---- top kernels / ops -------------------------------------------------------------
    names_b = ev["name"][b_idx]
    top_rows = []
    if len(b_idx):
        uniq, inv = np.unique(names_b, return_inverse=True)
        tsum = np.bincount(inv, weights=b_dur.astype(np.float64)).astype(np.int64)
        cnt = np.bincount(inv)
        first = np.zeros(len(uniq), np.int64)
        first[inv[::-1]] = np.arange(len(inv))[::-1]
        for j in np.argsort(-tsum, kind="stable")[:top].tolist():
            i = int(b_idx[first[j]])
            top_rows.append(Kernel(
                name=strings[int(uniq[j])], fused_op=FUSED_OPS[int(ev["fused"][i])],
                kind=KINDS[int(kind[i])], count=int(cnt[j]), time_ns=int(tsum[j]),
                mean_ns=float(tsum[j] / cnt[j]), share=float(tsum[j] / op_time) if op_time else 0.0))

    # ---- steps table ---------------------------------------------------------------
    steps_out = Steps()
    if len(steps):
        wall = steps["dur"]
        busy = steps["busy"]
        kv = steps["kv_usage"].astype(np.float64)
        steps_out = Steps(
            rank=steps["rank"].tolist(), step_id=steps["step_id"].tolist(),
            phase=[PHASES[p] for p in steps["phase"].tolist()],
            start_ns=steps["start"].tolist(), wall_ns=wall.tolist(), busy_ns=busy.tolist(),
            idle_ns=np.maximum(wall - busy, 0).tolist(),
            prefill_tokens=steps["prefill_tokens"].tolist(), decode_tokens=steps["decode_tokens"].tolist(),
            prefill_reqs=steps["prefill_reqs"].tolist(), decode_reqs=steps["decode_reqs"].tolist(),
            running=steps["running"].tolist(), waiting=steps["waiting"].tolist(),
            kv_usage=[None if not np.isfinite(x) else float(x) for x in kv.tolist()])

    # ---- ranks ---------------------------------------------------------------------
    timed = ev["start"] >= 0
    rank_rows = []
    ranks = profile.ranks
    r_arr = np.array(ranks, np.int64)
    r_lo, r_hi = np.zeros(len(ranks), np.int64), np.zeros(len(ranks), np.int64)
    for k, r in enumerate(ranks):  # each rank's timed span
        m = (ev["rank"] == r) & timed
        if m.any():
            r_lo[k], r_hi[k] = ev["start"][m].min(), (ev["start"] + dur)[m].max()
    # device busy = union over streams (no double counting of concurrent kernels)
    dev_busy = window_busy(profile, np.isin(kind, DEVICE_KINDS), r_arr, r_lo, r_hi)
    basis_busy = window_busy(profile, basis, r_arr, r_lo, r_hi)
    for k, r in enumerate(ranks):
        rm = ev["rank"] == r
        sm = steps["rank"] == r if len(steps) else np.zeros(0, bool)
        w = int(r_hi[k] - r_lo[k])
        step_wall = int(steps["dur"][sm].sum()) if len(steps) else 0
        share = (int(steps["busy"][sm].sum()) / step_wall) if step_wall else \
            (int(basis_busy[k]) / w if w else None)
        rank_rows.append(Rank(
            rank=int(r), op_time_ns=int(dur[basis & rm].sum()),
            device_kernel_ns=int(dur[rm & (kind == K_KERNEL)].sum()),
            device_busy_ns=int(dev_busy[k]), wall_ns=w, steps=int(sm.sum()), busy_share=share))

    # ---- memory ----------------------------------------------------------------------
    series, peak = [], {}
    c = profile.counters
    if len(c):
        for r, nid in sorted(set(zip(c["rank"].tolist(), c["name"].tolist()))):
            m = (c["rank"] == r) & (c["name"] == nid)
            t, v = c["t"][m], c["value"][m]
            o = np.argsort(t, kind="stable")
            tt, vv = _downsample(t[o], v[o])
            name = strings[nid]
            series.append(Series(rank=int(r), name=name, t_ns=tt, value=vv))
            peak[name] = max(peak.get(name, float("-inf")), float(v.max()))

    warnings = list(profile.run.get("warnings", []))
    untimed = int(np.count_nonzero(ev["start"] < 0))
    if not profile.has_timeline:
        warnings.append("the input has no timestamps: totals per kernel only, no timeline")
    elif untimed:
        warnings.append(f"{untimed} events come from a source without timestamps: counted in the "
                        "totals, absent from the timeline and from every step")
    return Summary(
        run=run_section(profile.run),
        has_timeline=profile.has_timeline,
        basis="device" if is_device_basis else "host",
        totals=Totals(
            op_time_ns=op_time,
            device_kernel_ns=int(dur[kind == K_KERNEL].sum()),
            device_busy_ns=int(dev_busy.sum()),
            host_op_ns=int(dur[(kind == K_CPU_OP) & (ev["depth"] == 0)].sum()),
            wall_ns=_wall(ev["start"][timed], (ev["start"] + dur)[timed]),
            events=int(len(ev)),
            steps=int(len(steps)),
            ranks=len(profile.ranks),
            other_share=(other_t / op_time) if op_time else 0.0,
            unstepped_share=(int(b_dur[ev["step"][b_idx] < 0].sum()) / op_time) if op_time else 0.0,
            prefill_tokens=tok["prefill"],
            decode_tokens=tok["decode"],
        ),
        fused_ops=fused_rows,
        phases=phase_rows,
        top_kernels=top_rows,
        steps=steps_out,
        ranks=rank_rows,
        memory=Memory(series=series, peak=peak),
        throughput=throughput(profile),
        device=_device_spec(profile.run.get("device_spec")),
        warnings=warnings,
    )


# run keys that are not run metadata: they land in their own sections, or nowhere
_NOT_RUN = {"warnings", "thread_names", "process_names", "attributed", "device_spec", "throughput"}
_RUN_FIELDS = set(Run.__struct_fields__) - {"sources", "extra"}
_SOURCE_FIELDS = set(Source.__struct_fields__) - {"details"}


def run_section(run: dict[str, Any]) -> Run:
    """Profile.run → the typed Run: known keys typed, the rest kept in ``extra``."""
    known = {k: v for k, v in run.items() if k in _RUN_FIELDS and v is not None}
    sources = [{**{k: v for k, v in s.items() if k in _SOURCE_FIELDS},
                "details": {k: v for k, v in s.items() if k not in _SOURCE_FIELDS}}
               for s in run.get("sources") or [] if isinstance(s, dict)]
    extra = {k: v for k, v in run.items() if k not in _RUN_FIELDS and k not in _NOT_RUN and k != "sources"}
    return msgspec.convert({**known, "sources": sources, "extra": extra}, Run)


def _device_spec(spec: Any) -> DeviceSpec | None:
    return msgspec.convert(spec, DeviceSpec) if isinstance(spec, dict) else None


def _wall(start: np.ndarray, end: np.ndarray) -> int:
    return int(end.max() - start.min()) if len(start) else 0


def token_steps(steps: Table) -> np.ndarray:
    """Rows of `steps` that count tokens: one rank's. Every tensor-parallel rank runs the
    same batch, so summing over ranks would multiply the tokens by the TP size."""
    if not len(steps):
        return np.zeros(0, np.int64)
    return np.flatnonzero(steps["rank"] == steps["rank"].min())


def throughput(profile: Profile) -> Throughput:
    """Token rates from the steps; latency distributions from the requests table."""
    steps, req = profile.steps, profile.requests
    out = Throughput()
    if len(steps):
        ts = token_steps(steps)
        span = int((steps["start"][ts] + steps["dur"][ts]).max() - steps["start"][ts].min())
        pt, dt = int(steps["prefill_tokens"][ts].sum()), int(steps["decode_tokens"][ts].sum())
        out.prefill_tokens, out.decode_tokens, out.duration_ns = pt, dt, span
        out.prefill_tok_s = (pt / span * 1e9) if span else None
        out.decode_tok_s = (dt / span * 1e9) if span else None
    if len(req):
        ok = req["first_token"] >= 0
        out.requests = int(len(req))
        out.ttft_ns = _dist((req["first_token"] - req["arrival"])[ok])
        fin = ok & (req["finish"] >= 0) & (req["output_len"] > 1)
        out.tpot_ns = _dist((req["finish"] - req["first_token"])[fin] / (req["output_len"][fin] - 1))
        done = req["finish"] >= 0
        out.e2e_ns = _dist((req["finish"] - req["arrival"])[done])
        if done.any():
            span = int(req["finish"][done].max() - req["arrival"].min())
            out.output_tokens = int(req["output_len"].sum())
            out.output_tok_s = (int(req["output_len"].sum()) / span * 1e9) if span else None
    window = profile.run.get("throughput")  # a live run's figures over its measured window
    if isinstance(window, dict):
        for k, v in window.items():
            if k.startswith("window_") and k in Throughput.__struct_fields__:
                setattr(out, k, v)
    return out
