"""``diff`` of exposed host time by cause when a run has more causes than its summary keeps
(``HostTime.causes``: the largest per phase): a cause one run lists while the other run's list
is cut may only be below that cut, so it is counted in a note, never shown as added or removed
with its whole time as the change."""

from __future__ import annotations

import json
from pathlib import Path

from xpu_profiler.analysis import analyze
from xpu_profiler.diff import compare


def _trace(path: Path, host_us: list[float], steps: int = 4) -> Path:
    """Decode steps where the host runs ops one after another, each spending ``host_us[i]``
    before launching its one short kernel: op i's exposed host time per step is about that."""
    ev: list[dict] = []
    t, corr = 1_000_000.0, 1
    for _ in range(steps):
        start = ct = t + 2
        for i, h in enumerate(host_us):
            ev.append({"ph": "X", "cat": "cpu_op", "name": f"aten::op{i}", "pid": 100, "tid": 100, "ts": ct,
                       "dur": h + 6, "args": {"External id": corr}})  # fmt: skip
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": 100,
                       "ts": ct + h, "dur": 5, "args": {"correlation": corr, "External id": corr}})  # fmt: skip
            ev.append({"ph": "X", "cat": "kernel", "name": f"gemm_kernel_{i}", "pid": 0, "tid": 7, "ts": ct + h + 6,
                       "dur": 3, "args": {"correlation": corr, "device": 0, "stream": 7}})  # fmt: skip
            ct += h + 7
            corr += 1
        dur = ct - start + 10
        ev.append({"ph": "X", "cat": "user_annotation", "name": "execute_context_0(0)_generation_8(8)", "pid": 100,
                   "tid": 100, "ts": start, "dur": dur})  # fmt: skip
        t += dur + 50
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": ev}))
    return path


def test_a_cause_below_the_other_runs_cut_is_no_addition(tmp_path: Path) -> None:
    base_us = [100, 90, 80, 70, 60, 50, 40, 30, 20, 10]
    new_us = base_us[:-1] + [65]  # op9 grows from the smallest to the fifth largest
    base = analyze([_trace(tmp_path / "base.json", base_us)])[1]
    new = analyze([_trace(tmp_path / "new.json", new_us)])[1]
    (hb,) = [p.host for p in base.phases]
    (hn,) = [p.host for p in new.phases]
    listed_b, listed_n = {c.name for c in hb.causes}, {c.name for c in hn.causes}
    # both lists are cut (ten ops, fewer rows); op9 is listed in NEW only, an op it pushed
    # below the cut in BASE only
    assert len(listed_b) < len(base_us) and len(listed_n) < len(new_us)
    assert "aten::op9" in listed_n - listed_b and listed_b - listed_n
    report = compare(base, new)
    rows = {r.name: r for r in report.host if r.cause != "all"}
    assert not [r for r in rows.values() if r.status in ("added", "removed")]
    assert not (listed_b ^ listed_n) & set(rows)
    one_sided = len(listed_b ^ listed_n)
    assert any(n.startswith(f"{one_sided} host time cause(s) appear in one run's list only") for n in report.notes)
    # the phase's whole exposed host time still moves by op9's growth: 55 µs a step
    (total,) = [r for r in report.host if r.cause == "all"]
    assert abs(total.delta_ns - 55_000) < 1_000
    assert "largest" not in report.headline or "aten::op9" not in report.headline
