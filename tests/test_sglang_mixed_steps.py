"""SGLang's ``step[MIXED bs=N]`` (PR #23419's form, without the ``c=``/``g=`` split of PR
#24911) is a mixed step: its forward mode says so, whatever its counts leave unknown."""

from __future__ import annotations

import json
import re
from pathlib import Path
from statistics import median

from xpu_profiler.analysis import analyze

#: each forward mode's phase, as the engine's ForwardMode says (the reference table of step forms)
MODE_PHASE = {"EXTEND": "prefill", "DECODE": "decode", "MIXED": "mixed"}
STEPS = ["step[EXTEND bs=1 toks=500]", "step[EXTEND bs=2 toks=900]"] + ["step[DECODE bs=8]"] * 5
STEPS += ["step[MIXED bs=9]", "step[MIXED bs=12]", "step[MIXED bs=9]"]


def X(name, cat, ts, dur, pid=1, tid=1, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def sglang_trace(path: Path) -> list[tuple[str, int]]:
    """Each step an annotation (µs) around 4 eager kernels that end inside it; the steps of
    each mode take their own time. Returns (name, annotation duration in ns) per step."""
    ev, corr, t, out = [], 1, 0, []
    for name in STEPS:
        mode = re.match(r"step\[(\w+)", name).group(1)
        k_dur = {"EXTEND": 400, "DECODE": 50, "MIXED": 150}[mode] + len(out)
        dur = 20 + 4 * (k_dur + 10) + 20
        ev.append(X(name, "user_annotation", t, dur))
        for k in range(4):
            ev.append(X("cudaLaunchKernel", "cuda_runtime", t + 5 + k, 1, correlation=corr))
            ev.append(X("gemm_kernel", "kernel", t + 20 + k * (k_dur + 10), k_dur, pid=0, tid=7, correlation=corr))
            corr += 1
        out.append((name, dur * 1000))
        t += dur + 100
    path.write_text(json.dumps({"traceEvents": ev}))
    return out


def test_mixed_steps_without_their_split_are_mixed(tmp_path):
    steps = sglang_trace(tmp_path / "sglang.json")
    _, s = analyze([tmp_path / "sglang.json"])
    want = [MODE_PHASE[re.match(r"step\[(\w+)", n).group(1)] for n, _ in steps]
    assert s.steps.phase == want
    phases = {p.phase: p for p in s.phases}
    for ph in set(want):
        mine = [d for (_, d), w in zip(steps, want) if w == ph]
        assert phases[ph].steps == len(mine)
        assert phases[ph].step_p50_ns == median(mine)  # each step's time is its annotation's here
    # prefill tokens are the EXTEND steps' own, nothing of the mixed steps counted as prefill
    toks = sum(int(m.group(1)) for n, _ in steps if (m := re.search(r"toks=(\d+)", n)) and n.startswith("step[EXTEND"))
    assert phases["prefill"].tokens == toks and s.throughput.prefill_tokens == toks
    # the mixed steps' split of requests is not written: none of them is counted as prefill requests
    mixed = [i for i, w in enumerate(want) if w == "mixed"]
    assert [s.steps.prefill_reqs[i] for i in mixed] == [0] * len(mixed)
