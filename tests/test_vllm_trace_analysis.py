"""`xpu_profiler analyze` on a trace written by vLLM's own torch profiler (real vLLM, CPU)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from xpu_profiler.analysis import analyze
from xpu_profiler.cli.main import main
from xpu_profiler.core.profile import K_CPU_OP, PHASES
from xpu_profiler.exporters.validate import validate_file

pytestmark = pytest.mark.vllm


@pytest.fixture(scope="module")
def analysed(vllm_profiler_trace):
    return analyze([vllm_profiler_trace.trace_dir])


def test_steps_match_the_engine(analysed, vllm_profiler_trace):
    profile, summary = analysed
    t = vllm_profiler_trace
    ran = [s for s in t.steps if s["total"]]
    assert summary.totals.steps == t.num_steps == len(ran)
    assert summary.steps.phase == [s["phase"] for s in ran]
    assert summary.steps.prefill_tokens == [s["prefill_tokens"] for s in ran]
    assert summary.steps.decode_tokens == [s["decode_tokens"] for s in ran]
    assert summary.totals.prefill_tokens == t.prefill_tokens
    assert summary.totals.decode_tokens == t.decode_tokens
    phases = {p.phase: p.steps for p in summary.phases}
    for name in ("prefill", "decode", "mixed"):
        assert phases[name] == t.phases[name] >= 1


def test_other_share_small_and_fused_ops_found(analysed):
    _, summary = analysed
    assert summary.basis == "host"  # vLLM's CPU build: no device kernels
    assert summary.totals.other_share < 0.10
    ops = {f.fused_op: f for f in summary.fused_ops}
    for needed in ("gemm", "attention", "kv_cache", "rope", "activation", "embedding"):
        assert ops[needed].time_ns > 0, needed
    # decode steps spend their time in the decode phase column, prefill ones in prefill
    assert ops["gemm"].time_ns_by_phase["decode"] > 0 and ops["gemm"].time_ns_by_phase["prefill"] > 0
    assert ops["attention"].per_token_ns_by_phase["prefill"] > 0


def test_every_op_in_the_window_has_a_step_and_phase(analysed):
    profile, _ = analysed
    ev, steps = profile.events, profile.steps
    first, last = int(steps["start"].min()), int((steps["start"] + steps["dur"]).max())
    ops = (ev["kind"] == K_CPU_OP) & (ev["start"] >= first) & (ev["start"] < last)
    # only the gaps between steps (sampling, bookkeeping outside execute_model) may lack one
    inside = np.zeros(len(ev), bool)
    for s, d in zip(steps["start"].tolist(), steps["dur"].tolist()):
        inside |= (ev["start"] >= s) & (ev["start"] < s + d)
    sel = ops & inside
    assert sel.sum() > 1000
    assert (ev["step"][sel] >= 0).all()
    assert (ev["phase"][sel] != PHASES.index("unknown")).all()
    # and the step each op got is the one whose range holds it
    st = ev["step"][sel]
    assert (ev["start"][sel] >= steps["start"][st]).all()
    assert (ev["start"][sel] < (steps["start"] + steps["dur"])[st]).all()


def test_cli_outputs_validate(vllm_profiler_trace, tmp_path):
    out = tmp_path / "out"
    res = CliRunner().invoke(
        main, ["analyze", str(vllm_profiler_trace.trace_dir), "-o", str(out), "--format", "perfetto,json,csv"]
    )
    assert res.exit_code == 0, res.output
    assert validate_file(out / "trace.json.gz") == []
    summary = json.loads((out / "summary.json").read_text())
    assert summary["schema_version"] == 2
    assert summary["totals"]["steps"] == vllm_profiler_trace.num_steps
    # the step track in the Perfetto trace is named by phase, with tokens in args
    import gzip

    doc = json.loads(gzip.decompress((out / "trace.json.gz").read_bytes()))
    step_slices = [e for e in doc["traceEvents"] if e["ph"] == "X" and e["tid"] == 1]
    assert len(step_slices) == vllm_profiler_trace.num_steps
    assert {e["name"].split()[0] for e in step_slices} == {"prefill", "decode", "mixed"}
    assert sum(e["args"]["prefill_tokens"] for e in step_slices) == vllm_profiler_trace.prefill_tokens
