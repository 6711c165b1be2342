"""Where op time goes: fused op × phase, the phases, the top kernels (Summary sections)."""

from __future__ import annotations

import numpy as np

from ..core.profile import KINDS, P_DECODE, P_MIXED, P_PREFILL, P_UNKNOWN, PHASES, Profile
from ..core.sources import KEYS as SOURCE_KEYS
from ..knowledge.taxonomy import FUSED_OPS
from ..summary import FusedOp, FusedTime, Kernel, Phase
from .ranks.align import engine_view, per_token
from .steps.find import token_steps

TOKEN_PHASES = ("prefill", "decode", "mixed")  # phases with a per-token cost
TOKEN_PHASE_CODES = tuple(PHASES.index(p) for p in TOKEN_PHASES)


def _num(x: float) -> float | None:
    return float(x) if np.isfinite(x) else None


def _pct(values: np.ndarray, q: float) -> float | None:
    return float(np.percentile(values, q)) if len(values) else None


class Breakdown:
    """Op time of the basis events by (fused op, phase), and each phase's tokens."""

    def __init__(self, profile: Profile, b_idx: np.ndarray):
        ev, steps = profile.events, profile.steps
        self.b_idx = b_idx
        self.b_dur = ev["dur"][b_idx]
        self.op_time = int(self.b_dur.sum())
        fused, phase = ev["fused"][b_idx].astype(np.int64), ev["phase"][b_idx].astype(np.int64)
        self.time = np.zeros((len(FUSED_OPS), len(PHASES)), np.int64)
        self.count = np.zeros((len(FUSED_OPS), len(PHASES)), np.int64)
        np.add.at(self.time, (fused, phase), self.b_dur)
        np.add.at(self.count, (fused, phase), 1)
        flat = fused * len(SOURCE_KEYS) + ev["source"][b_idx].astype(np.int64)
        self.by_source = (
            np.bincount(flat, weights=self.b_dur, minlength=len(FUSED_OPS) * len(SOURCE_KEYS))
            .astype(np.int64)
            .reshape(len(FUSED_OPS), len(SOURCE_KEYS))
        )
        ts = token_steps(profile)
        self.tokens = {}
        for p, name in enumerate(PHASES):
            m = ts[steps["phase"][ts] == p]
            self.tokens[name] = int((steps["prefill_tokens"][m] + steps["decode_tokens"][m]).sum())
        # per token: each rank's time over its own steps' tokens, mean and max over ranks
        self.tok_mean, self.tok_max, self.phase_tok_mean, self.phase_tok_max = per_token(profile, b_idx)

    def fused_ops(self) -> list[FusedOp]:
        rows = []
        for f in np.argsort(-self.time.sum(axis=1), kind="stable").tolist():
            t, c = int(self.time[f].sum()), int(self.count[f].sum())
            if c == 0:
                continue
            by_phase = {PHASES[p]: int(self.time[f, p]) for p in range(len(PHASES))}
            per_tok = {PHASES[p]: _num(self.tok_mean[f, p]) for p in TOKEN_PHASE_CODES}
            per_tok_max = {PHASES[p]: _num(self.tok_max[f, p]) for p in TOKEN_PHASE_CODES}
            rows.append(
                FusedOp(
                    fused_op=FUSED_OPS[f],
                    time_ns=t,
                    count=c,
                    share=(t / self.op_time) if self.op_time else 0.0,
                    time_ns_by_phase=by_phase,
                    per_token_ns_by_phase=per_tok,
                    per_token_max_ns_by_phase=per_tok_max,
                    time_ns_by_source={k: int(v) for k, v in zip(SOURCE_KEYS, self.by_source[f]) if v},
                    count_by_phase={PHASES[p]: int(self.count[f, p]) for p in range(len(PHASES))},
                )
            )
        return rows

    def phases(self, profile: Profile, step_time: np.ndarray | None = None, clock: str = "host") -> list[Phase]:
        """Per phase: its engine steps (each once, its time the slowest rank's), op time of
        all ranks, per-token cost as the mean (and max) over ranks. ``step_time``: each step
        row's time on the critical path (``device_steps``), else its host range."""
        steps = profile.steps
        view = engine_view(profile, step_time)
        e_phase = steps["phase"][view.rows] if len(view.rows) else np.zeros(0, np.int8)
        inferred = profile.derived.phase_inferred
        rows = []
        for p in (P_PREFILL, P_DECODE, P_MIXED, P_UNKNOWN):
            name = PHASES[p]
            em = e_phase == p
            t = int(self.time[:, p].sum())
            if not em.any() and t == 0:
                continue
            wall = view.span[em]  # the step's time: the longest rank's
            host = view.wall[em]
            tokens = self.tokens[name]
            top = np.argsort(-self.time[:, p], kind="stable")[:5]
            rows.append(
                Phase(
                    phase=name,
                    steps=int(em.sum()),
                    time_ns=t,
                    wall_ns=int(wall.sum()),
                    tokens=tokens,
                    per_token_ns=_num(self.phase_tok_mean[p]) if tokens else None,
                    per_token_max_ns=_num(self.phase_tok_max[p]) if tokens else None,
                    step_p50_ns=_pct(wall, 50),
                    step_p99_ns=_pct(wall, 99),
                    step_clock=clock if em.any() else None,
                    host_p50_ns=_pct(host, 50),
                    step_per_token_ns=float(wall.sum()) / tokens if tokens and em.any() else None,
                    inferred_from=inferred.get(name) if isinstance(inferred, dict) else None,
                    top_fused=[
                        FusedTime(fused_op=FUSED_OPS[f], time_ns=int(self.time[f, p]))
                        for f in top.tolist()
                        if self.time[f, p] > 0
                    ],
                )
            )
        return rows

    def top_kernels(self, profile: Profile, top: int) -> list[Kernel]:
        """The ``top`` names with the most op time (kernels, or host ops on the host basis)."""
        ev, b_idx = profile.events, self.b_idx
        if not len(b_idx):
            return []
        uniq, inv = np.unique(ev["name"][b_idx], return_inverse=True)
        tsum = np.bincount(inv, weights=self.b_dur.astype(np.float64)).astype(np.int64)
        cnt = np.bincount(inv)
        first = np.zeros(len(uniq), np.int64)
        first[inv[::-1]] = np.arange(len(inv))[::-1]
        by_phase = np.zeros((len(uniq), len(PHASES)), np.int64)
        n_phase = np.zeros((len(uniq), len(PHASES)), np.int64)
        ph = ev["phase"][b_idx].astype(np.int64)
        np.add.at(by_phase, (inv, ph), self.b_dur)
        np.add.at(n_phase, (inv, ph), 1)
        rows = []
        for j in np.argsort(-tsum, kind="stable")[:top].tolist():
            i = int(b_idx[first[j]])
            rows.append(
                Kernel(
                    name=profile.strings[int(uniq[j])],
                    fused_op=FUSED_OPS[int(ev["fused"][i])],
                    kind=KINDS[int(ev["kind"][i])],
                    count=int(cnt[j]),
                    time_ns=int(tsum[j]),
                    mean_ns=float(tsum[j] / cnt[j]),
                    share=float(tsum[j] / self.op_time) if self.op_time else 0.0,
                    time_ns_by_phase={PHASES[p]: int(by_phase[j, p]) for p in range(len(PHASES)) if n_phase[j, p]},
                    count_by_phase={PHASES[p]: int(n_phase[j, p]) for p in range(len(PHASES)) if n_phase[j, p]},
                )
            )
        return rows

    def kernel_names(self, profile: Profile) -> int:
        """How many distinct names the basis events have."""
        return int(len(np.unique(profile.events["name"][self.b_idx]))) if len(self.b_idx) else 0
