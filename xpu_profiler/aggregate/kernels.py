"""The units of work of each phase: how many, how long, how they were launched; op time
per rank and fused op; the op time of the model's output head.

- ``kernel_stats``: per phase, the kernels (top-level host ops on the host basis) with
  their duration percentiles, the runtime calls that launched them (matched by
  correlation id) and how many of those were graph replays — "one launch per kernel"
  is eager execution, many kernels per launch a graph;
- ``module_time``: per phase, the op time launched inside given layer modules — the
  output head (vLLM's ``LogitsProcessor``: the lm_head GEMM and the logits'
  post-processing) and the ``Sampler`` — found through the layer-module ranges of
  ``with_stack`` traces or of live runs.
"""

from __future__ import annotations

import numpy as np

from ..core.intervals import containing, top_level
from ..core.launches import launch_rows, thread_ids
from ..core.profile import DEVICE_KINDS, K_ANNOTATION, K_KERNEL, K_RUNTIME, PHASES, Profile
from ..knowledge.taxonomy import module_class
from ..summary import KernelStats
from .attribution import launch_points

PERCENTILES = np.arange(101)
#: layer modules whose work is the model's output head, and the sampler
HEAD_MODULES = ("LogitsProcessor", "ParallelLMHead")
SAMPLER_MODULES = ("Sampler", "TopKTopPSampler", "RejectionSampler")
#: the share of a phase's op time module ranges must cover for its head time to mean anything
MIN_MODULE_COVER = 0.5


def _units(profile: Profile, basis: np.ndarray) -> tuple[np.ndarray, str]:
    """Rows of the units of work, and their name: device kernels, else the basis."""
    kind = profile.events["kind"]
    kernels = np.flatnonzero(kind == K_KERNEL)
    if len(kernels):
        return kernels, "kernel"
    if np.isin(kind, DEVICE_KINDS).any():  # device work without any kernel (memcpy only)
        return np.flatnonzero(basis), "kernel"
    return np.flatnonzero(basis), "host_op"


def _launches(profile: Profile, units: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per unit: the event row of the runtime call with its correlation id (-1 none), and
    whether that call is a graph launch."""
    ev = profile.events
    corr, rank = ev["corr"], ev["rank"].astype(np.int64)
    rt = np.flatnonzero((ev["kind"] == K_RUNTIME) & (corr >= 0))
    launch = np.full(len(units), -1, np.int64)
    if not len(rt) or not len(units):
        return launch, np.zeros(len(units), bool)
    big = int(max(corr[rt].max(), corr[units].max(), 0)) + 1
    rkey = rank[rt] * big + corr[rt]
    order = np.argsort(rkey, kind="stable")
    rkey_s = rkey[order]
    ukey = rank[units] * big + corr[units]
    pos = np.minimum(np.searchsorted(rkey_s, ukey), len(rkey_s) - 1)
    ok = (corr[units] >= 0) & (rkey_s[pos] == ukey)
    launch[ok] = rt[order[pos[ok]]]
    from ..knowledge.runtime_api import GRAPH_LAUNCH

    names = profile.strings.strings
    graph_name = {int(n): bool(GRAPH_LAUNCH.search(names[int(n)])) for n in np.unique(ev["name"][rt]).tolist()}
    is_graph = np.zeros(len(units), bool)
    is_graph[ok] = [graph_name[int(n)] for n in ev["name"][launch[ok]].tolist()]
    return launch, is_graph


def kernel_stats(profile: Profile, basis: np.ndarray) -> dict[str, KernelStats]:
    """Per phase name: its units of work (only phases that have some)."""
    ev = profile.events
    units, unit = _units(profile, basis)
    units = units[ev["start"][units] >= 0]
    launch, is_graph = _launches(profile, units)
    phase = ev["phase"][units]
    dur = ev["dur"][units]
    out = {}
    for p, name in enumerate(PHASES):
        m = phase == p
        if not m.any():
            continue
        # the steps whose units were recorded (torch.profiler may cover only some of them)
        step_rows = ev["step"][units[m]]
        n_steps = int(len(np.unique(step_rows[step_rows >= 0])))
        la, g = launch[m], is_graph[m]
        launched = la >= 0
        n_launch = len(np.unique(la[launched]))
        out[name] = KernelStats(
            unit=unit,
            count=int(m.sum()),
            time_ns=int(dur[m].sum()),
            steps=n_steps,
            per_step=(float(m.sum()) / n_steps) if n_steps else None,
            launches=n_launch,
            graph_launches=len(np.unique(la[launched & g])),
            graph_kernels=int((launched & g).sum()),
            per_launch=(float(launched.sum()) / n_launch) if n_launch else None,
            dur_pct_ns=np.percentile(dur[m], PERCENTILES).tolist(),
        )
    return out


def module_time(profile: Profile, basis: np.ndarray, classes: tuple[str, ...]) -> dict[str, int | None] | None:
    """Per phase name: op time launched inside a range of one of the layer-module
    ``classes``. A phase whose work was mostly launched outside every layer-module range
    gets None (graph replays, or a trace without module ranges: nothing can be told apart
    there); None when the profile has no range of these modules at all."""
    ev = profile.events
    ann = np.flatnonzero((ev["kind"] == K_ANNOTATION) & (ev["start"] >= 0))
    if not len(ann):
        return None
    names = profile.strings.strings
    cls = {int(n): module_class(names[int(n)]) for n in np.unique(ev["name"][ann]).tolist()}
    mods = ann[np.array([cls[int(n)] is not None for n in ev["name"][ann].tolist()], bool)]
    if not len(mods):
        return None
    head = np.array([cls[int(n)] in classes for n in ev["name"][mods].tolist()], bool)
    if not head.any():  # the trace records other modules but never these: unknown, not zero
        return None
    q = np.flatnonzero(basis & (ev["start"] >= 0))
    q_start, q_end, g_q = launch_points(profile, launch_rows(profile), q)
    g_mod = thread_ids(profile)[mods]
    m_start, m_end = ev["start"][mods], ev["start"][mods] + ev["dur"][mods]
    outer = top_level(g_mod, m_start, m_end)
    in_any = containing(g_mod[outer], m_start[outer], m_end[outer], g_q, q_start, q_end) >= 0
    h = mods[head]
    g_h, h_start, h_end = g_mod[head], ev["start"][h], ev["start"][h] + ev["dur"][h]
    h_outer = top_level(g_h, h_start, h_end)  # a Sampler holds its TopKTopPSampler: the outer one counts
    in_head = containing(g_h[h_outer], h_start[h_outer], h_end[h_outer], g_q, q_start, q_end) >= 0
    phase, d = ev["phase"][q], ev["dur"][q]
    out: dict[str, int | None] = {}
    for p in np.unique(phase).tolist():
        m = phase == p
        covered = d[m & in_any].sum() / max(int(d[m].sum()), 1)
        out[PHASES[p]] = int(d[m & in_head].sum()) if covered >= MIN_MODULE_COVER else None
    return out
