"""``warmup_in_window`` holds a step to steps like it: the median step of its phase, or, in a
phase with too few steps for a median, the time per token of the steps with no more tokens
(a decode token is never held to a prefill token's cost); with nothing like it, it is silent."""

from __future__ import annotations

import json
import re
from pathlib import Path
from statistics import median

import pytest

from xpu_profiler.analysis import analyze
from xpu_profiler.findings.rules import RULES

TH = next(r for r in RULES if r.id == "warmup_in_window").thresholds
VLLM = re.compile(r"execute_context_(\d+)\((\d+)\)_generation_(\d+)\((\d+)\)")


def X(name, cat, ts, dur, pid=1, tid=1, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def trace(path: Path, steps: list[tuple[str, int]]) -> Path:
    """One annotation per (name, µs) step around one kernel that fills it but for 10 µs at
    each end, so that each step's time is its annotation's."""
    ev, t = [], 0
    for corr, (name, us) in enumerate(steps, 1):
        ev.append(X(name, "user_annotation", t, us))
        ev.append(X("cudaLaunchKernel", "cuda_runtime", t + 2, 1, correlation=corr))
        ev.append(X("gemm_kernel", "kernel", t + 10, us - 20, pid=0, tid=7, correlation=corr))
        t += us + 50
    path.write_text(json.dumps({"traceEvents": ev}))
    return path


def phase_and_tokens(name: str) -> tuple[str, int]:
    m = VLLM.match(name)
    if m is None:  # execute_new_{n}_cached_{m}: requests only, no tokens
        new, cached = (int(x) for x in re.findall(r"\d+", name))
        return ("mixed" if new and cached else "prefill" if new else "decode"), 0
    pr, pt, dr, dt = (int(x) for x in m.groups())
    return ("mixed" if pr and dr else "prefill" if pr else "decode"), pt + dt


def slow_steps(steps: list[tuple[str, int]]) -> list[tuple[int, float]]:
    """(step, what it should have taken) of the steps over ``ratio`` x those like them."""
    info = [(*phase_and_tokens(n), us * 1000) for n, us in steps]
    out = []
    for i, (ph, tok, wall) in enumerate(info):
        mine = [w for p, _, w in info if p == ph]
        if len(mine) >= TH["min_steps"]:
            usual = median(mine)
        else:
            like = [w / t for _, t, w in info if 0 < t <= tok] if tok else []
            if len(like) < TH["min_steps"]:
                continue  # nothing says what such a step usually takes
            usual = median(like) * tok
        if wall > TH["ratio"] * usual:
            out.append((i, usual))
    return out


def rules(s) -> dict:
    return {f.rule: f for f in s.findings}


def test_a_few_decode_steps_after_long_prefills_are_no_warmup(tmp_path):
    """Six 2000-token prefills (4 µs a token), three batch-1 decode steps (488 µs a token), and
    one mixed step that took a one-off second: only the mixed step is far off."""
    steps = [("execute_context_1(2000)_generation_0(0)", 8_000)] * 6
    steps += [("execute_context_0(0)_generation_1(1)", 488)] * 3
    steps += [("execute_context_1(2000)_generation_1(1)", 1_000_000)]
    want = slow_steps(steps)
    assert [i for i, _ in want] == [9]  # the rule above: the decode steps are like one another
    _, s = analyze([trace(tmp_path / "t.json", steps)])
    assert s.steps.step_ns == [us * 1000 for _, us in steps]
    f = rules(s)["warmup_in_window"]
    assert f.steps == [s.steps.step_id[i] for i, _ in want]
    assert f.phase == "mixed" and f.evidence["slowest_wall_ns"] == steps[9][1] * 1000
    assert f.evidence["expected_wall_ns"] == pytest.approx(want[0][1], rel=1e-9)


def test_steps_without_token_counts_are_held_to_their_own_phase_only(tmp_path):
    """vLLM's ``execute_new_{n}_cached_{m}`` gives no tokens: a lone prefill cannot be told
    from the decode steps' time, and nothing in the decode phase is far from its median."""
    steps = [("execute_new_1_cached_0", 8_010)] + [("execute_new_0_cached_1", 488)] * 10
    assert slow_steps(steps) == []
    _, s = analyze([trace(tmp_path / "t.json", steps)])
    assert s.steps.phase == [phase_and_tokens(n)[0] for n, _ in steps]
    assert "warmup_in_window" not in rules(s)
