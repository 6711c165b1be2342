"""``small_kernel_storm`` counts the kernels strictly under its limit: kernels of exactly the
limit's duration (integer-µs traces tie there) are not under it."""

from __future__ import annotations

import json
import math
from pathlib import Path

from xpu_profiler import findings
from xpu_profiler.analysis import analyze
from xpu_profiler.findings.config import FindingsConfig
from xpu_profiler.findings.rules import RULES

TH = next(r for r in RULES if r.id == "small_kernel_storm").thresholds
#: each decode step's kernels: 4 of 2 µs, 3 of exactly the limit, 3 of 20 µs (µs, as a trace writes them)
STEP_KERNELS = [2] * 4 + [int(TH["kernel_us"])] * 3 + [20] * 3


def decode_trace(path: Path, steps: int = 24) -> list[int]:
    """Eager decode steps, one launch per kernel; returns every kernel's duration in µs."""
    ev, corr, t, durs = [], 1, 0, []
    for _ in range(steps):
        start = t
        for d in STEP_KERNELS:
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": t + 1,
                       "dur": 1, "args": {"correlation": corr}})  # fmt: skip
            ev.append({"ph": "X", "cat": "kernel", "name": f"kernel_{d}us", "pid": 0, "tid": 7, "ts": t + 3, "dur": d,
                       "args": {"correlation": corr}})  # fmt: skip
            durs.append(d)
            corr += 1
            t += d + 5
        ev.append({"ph": "X", "cat": "user_annotation", "name": "execute_context_0(0)_generation_8(8)", "pid": 1,
                   "tid": 1, "ts": start, "dur": t - start, "args": {}})  # fmt: skip
        t += 10
    path.write_text(json.dumps({"traceEvents": ev}))
    return durs


def test_kernels_at_the_limit_are_not_under_it(tmp_path):
    durs = decode_trace(tmp_path / "t.json")
    under = sum(d < TH["kernel_us"] for d in durs) / len(durs)  # strictly under the limit
    assert under <= TH["share"]
    _, s = analyze([tmp_path / "t.json"])
    assert next(p for p in s.phases if p.phase == "decode").kernels.count == len(durs)
    assert "small_kernel_storm" not in {f.rule for f in s.findings}
    # with a share threshold below it, the rule fires and says the share (percentiles: 1% apart)
    cfg = FindingsConfig(thresholds={"small_kernel_storm": {"share": under / 2}}, min_at_stake=-math.inf)
    f = {f.rule: f for f in findings.evaluate(s, cfg)}["small_kernel_storm"]
    assert abs(f.evidence["small_share"] - under) <= 0.01
