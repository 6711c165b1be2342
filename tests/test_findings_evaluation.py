"""The findings evaluation: the rule table, thresholds from TOML, ranking and the 0.5% floor,
odd summaries; on summaries the real aggregator made from generated and real traces."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from conftest import ROOT

from xpu_profiler import analysis, findings
from xpu_profiler.core.errors import XpuProfilerError
from xpu_profiler.findings import RULES, load_config
from xpu_profiler.summary import Summary, load_summary
from xpu_profiler.testing import gen_trace

V1 = ROOT / "tests" / "data" / "summary_v1_vllm_cpu.json"


@pytest.fixture(scope="module")
def host_bound_trace(tmp_path_factory):
    p = tmp_path_factory.mktemp("gen") / "slow_host.json.gz"
    gen_trace.generate(40_000, str(p), seed=4, host_gap_ns=25_000)
    return p


def test_the_rule_table_is_complete_and_documented():
    ids = [r.id for r in RULES]
    assert len(ids) == len(set(ids))
    section = (ROOT / "docs" / "findings.md").read_text(encoding="utf-8")  # the rules' page
    for r in RULES:
        assert r.fix and r.why and r.detects and callable(r.check)
        text = r.trigger_text(r.thresholds)
        assert "{" not in text, (r.id, text)
        assert f"`{r.id}`" in section, f"docs/findings.md does not list {r.id}"
        for name, value in r.thresholds.items():
            if name != "min_steps":
                assert name in section or f"{value:g}" in text


def test_findings_are_ranked_and_the_floor_drops_small_ones(host_bound_trace, tmp_path):
    s = analysis.analyze([host_bound_trace])[1]
    shares = [f.at_stake_share for f in s.findings]
    assert shares == sorted(shares, reverse=True) and all(x >= 0.005 for x in shares)
    assert {"graphs_off_decode", "small_kernel_storm"} <= {f.rule for f in s.findings}
    storm = next(f for f in s.findings if f.rule == "small_kernel_storm")
    cfg = tmp_path / "f.toml"
    cfg.write_text(f"min_at_stake = {storm.at_stake_share + 0.001}\n")
    kept = findings.evaluate(s, load_config(cfg))
    assert "small_kernel_storm" not in {f.rule for f in kept} and "graphs_off_decode" in {f.rule for f in kept}


def test_thresholds_from_a_toml_file(host_bound_trace, tmp_path):
    s = analysis.analyze([host_bound_trace])[1]
    g = next(f for f in s.findings if f.rule == "graphs_off_decode")
    assert g.trigger.startswith("decode kernels per launch <= 1.5")
    cfg = tmp_path / "f.toml"
    # one launch per kernel is still "graphs off" unless the limit drops below 1
    cfg.write_text("[graphs_off_decode]\nmax_kernels_per_launch = 0.5\n[small_kernel_storm]\nenabled = false\n")
    out = {f.rule: f for f in findings.evaluate(s, load_config(cfg))}
    assert "graphs_off_decode" not in out and "small_kernel_storm" not in out
    cfg.write_text("[small_kernel_storm]\nkernel_us = 1000\nshare = 0.9\n")
    f = {f.rule: f for f in findings.evaluate(s, load_config(cfg))}["small_kernel_storm"]
    assert f.evidence["small_share"] == 1.0 and "under 1000 us" in f.trigger
    # the same file through analyze
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "xpu_profiler",
            "analyze",
            str(host_bound_trace),
            "--findings-config",
            str(cfg),
            "-o",
            str(tmp_path / "out"),
            "--format",
            "json",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    doc = load_summary(tmp_path / "out" / "summary.json")
    assert next(f for f in doc.findings if f.rule == "small_kernel_storm").trigger == f.trigger
    assert r.stdout.index("Findings (") < r.stdout.index("Time by fused op")


@pytest.mark.parametrize(
    "text, problem",
    [
        ("[no_such_rule]\nx = 1\n", "unknown rule 'no_such_rule'"),
        ("[kv_cache_pressure]\nusage_pct = 1\n", "has no threshold 'usage_pct'"),
        ("[kv_cache_pressure]\nusage = 'high'\n", "must be a number"),
        ("[kv_cache_pressure]\nenabled = 1\n", "enabled must be true or false"),
        ("[kv_cache_pressure\n", "not valid TOML"),
        ("min_at_stake = true\n", "must be a number"),
    ],
)
def test_a_bad_findings_file_is_one_line(tmp_path, text, problem):
    cfg = tmp_path / "f.toml"
    cfg.write_text(text)
    with pytest.raises(XpuProfilerError, match=re.escape(problem)):
        load_config(cfg)
    r = subprocess.run(
        [sys.executable, "-m", "xpu_profiler", "analyze", str(V1), "--findings-config", str(cfg)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and problem in r.stderr


def test_odd_summaries_give_no_findings_and_no_error():
    assert findings.evaluate(Summary()) == []
    old = load_summary(V1)  # schema 1: no kernel statistics, no engine config
    out = findings.evaluate(old)
    assert all(f.rule in {r.id for r in RULES} for f in out)
    assert not [w for w in old.warnings if "finding rule" in w]


def test_a_device_spec_given_at_analysis_wins_over_the_saved_one(host_bound_trace, tmp_path):
    """A saved profile of a CPU run (its config recorded, the CPU's spec saved without
    peaks): --device-spec at analysis gives MFU; without it the peak stays unknown."""
    from xpu_profiler.knowledge.devices import SPECS
    from xpu_profiler.readers import load

    prof = load([host_bound_trace])
    prof.run.update(
        device="cpu",
        device_info={"kind": "cpu", "spec_key": "cpu"},
        device_spec=SPECS["cpu"].to_json(),
        engine={"dtype": "bfloat16"},
        model_config={
            "architectures": ["LlamaForCausalLM"],
            "hidden_size": 4096,
            "intermediate_size": 14336,
            "num_hidden_layers": 32,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "vocab_size": 128256,
        },
    )
    saved = prof.save(tmp_path / "run.npz")
    plain = analysis.summarize(load([saved]))
    assert plain.roofline and all(r.flops_share is None and "unknown peak" in r.note for r in plain.roofline)
    spec = tmp_path / "spec.toml"
    spec.write_text('[cpu]\npeak_flops = {bf16 = 2.0e15}\nmem_bw_bytes_s = 5.0e13\nsource = "measured"\n')
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "xpu_profiler",
            "analyze",
            str(saved),
            "--device-spec",
            str(spec),
            "-o",
            str(tmp_path / "out"),
            "--format",
            "json",
            "-q",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    s = load_summary(tmp_path / "out" / "summary.json")
    pre = next(x for x in s.roofline if x.phase == "prefill" and x.component == "step")
    assert pre.peak_flop_s == 2.0e15 and pre.flops_share == pytest.approx(pre.flop_s / 2.0e15)
    base = next(x for x in plain.roofline if x.phase == "prefill" and x.component == "step")
    assert pre.flops == pytest.approx(base.flops) and pre.flop_s == pytest.approx(base.flop_s)
