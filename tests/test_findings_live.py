"""Findings of real vLLM runs on the CPU, each made to trigger a rule, and the same
workload without the cause (silent); the diff of two runs that differ in one setting;
MFU against the device's peak; the demo's report opening with its findings.

The engine runs are few and shared (module fixtures, started on first use):

- ``small``: 8 prompts of 512 tokens, max_num_seqs 8, max_num_batched_tokens 64 — the
  healthy reference for the scheduler rules;
- ``big``: the same with max_num_batched_tokens 1024 (the diff pair of ``small``);
- ``compiled``: ``small`` without --enforce-eager (vLLM's torch.compile'd model), on prompts of
  32 tokens;
- ``kv``: a KV cache of 8 blocks of 32 tokens for 12 requests of 96 tokens (preemptions);
- ``moe``: tiny-moe with experts 8x wider and top-4 routing (the expert GEMMs outweigh the
  rest), 32 requests for max_num_seqs 16, and a findings config switching one rule off;
- ``vocab``: tiny-llama cut to one layer with a 32k vocabulary (a small model with a large
  vocabulary: the lm_head outweighs the layers);
- ``windows``: one engine, four profiled windows (tests/findings_workload.py);
- ``demo``: exactly what ``./dev demo`` runs.

Every run but ``demo`` (and the windows) runs vLLM's engine in the command's own process
(``VLLM_ENABLE_V1_MULTIPROCESSING=0``): what these tests look at (steps, batches, op times,
findings) is the same in either layout, and an engine in one process starts in seconds
rather than the half minute of spawning EngineCore and a worker, each importing vLLM.
The process layouts themselves are tested by the demo run here and by the live-run tests.

What a rule decides from times (a share of op time, a ratio of step times, a drop in
throughput) depends on the machine and on what else it runs. For those the tests check
the evidence against the run's own tables and that the verdict follows it at the rule's
thresholds (``follows``), never that this CPU was fast or slow enough to cross one.
What the workload fixes (token counts, batch sizes, configuration, op counts) is asserted
outright.
"""

from __future__ import annotations

import json
import math
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest
import real_data
from cli_run import run as cli
from conftest import HAVE_VLLM, TESTS, vllm_env

from xpu_profiler import analysis, findings
from xpu_profiler.aggregate.model_cost import model_config, model_shape, step_costs
from xpu_profiler.aggregate.steps.find import token_steps
from xpu_profiler.core.profile import P_PREFILL, Profile
from xpu_profiler.exporters.validate import validate_file
from xpu_profiler.findings import load_config
from xpu_profiler.findings.config import MIN_AT_STAKE, FindingsConfig
from xpu_profiler.findings.inputs import all_wall
from xpu_profiler.summary import load_summary

pytestmark = [pytest.mark.vllm, pytest.mark.skipif(not HAVE_VLLM, reason="vLLM is not installed")]


def workload(input_len: int = 512) -> list[str]:
    return [
        *("--model", "tiny-llama", "--device", "cpu", "--num-prompts", "8"),
        *("--input-len", str(input_len), "--output-len", "32", "--engine-arg", "max_num_seqs=8"),
    ]


WORKLOAD = workload()
RUNS = {
    "small": WORKLOAD + ["--max-num-batched-tokens", "64"],
    "big": WORKLOAD + ["--max-num-batched-tokens", "1024"],
    # (short prompts: the decode steps are compared, and the compile is most of this run)
    "compiled": workload(32) + ["--max-num-batched-tokens", "64", "--no-enforce-eager"],
    "kv": [
        "--model",
        "tiny-llama",
        "--device",
        "cpu",
        "--num-prompts",
        "12",
        "--input-len",
        "48",
        "--output-len",
        "48",
        "--max-model-len",
        "128",
        "--engine-arg",
        "num_gpu_blocks_override=8",
        "--engine-arg",
        "block_size=32",
    ],
    "moe": [
        "--load-format",
        "dummy",
        "--device",
        "cpu",
        "--num-prompts",
        "32",
        "--input-len",
        "32",
        "--output-len",
        "16",
        "--engine-arg",
        "max_num_seqs=16",
    ],
    "vocab": [
        "--load-format",
        "dummy",
        "--device",
        "cpu",
        "--num-prompts",
        "8",
        "--input-len",
        "32",
        "--output-len",
        "16",
    ],
    "demo": ["--model", "tiny-llama", "--device", "cpu"],
}
MOE_CONFIG = "[graphs_off_decode]\nenabled = false\n"


class Runs:
    """Live CLI runs made on first use, each into its own directory."""

    def __init__(self, factory):
        self.factory = factory
        self.dirs: dict[str, Path] = {}
        self.done: dict[str, tuple[subprocess.CompletedProcess, int, int]] = {}  # result, start, end (ns)
        self.cache = factory.mktemp("model_cache")

    def __getitem__(self, name: str) -> Path:
        if name not in self.dirs:
            out = self.factory.mktemp(name)
            args = list(RUNS[name])
            if name == "moe":
                (out / "findings.toml").write_text(MOE_CONFIG)
                args += ["--findings-config", out / "findings.toml"]
            if name == "vocab":  # one layer, 32768 tokens: the output head weighs
                args += ["--model", self._variant("tiny-llama", vocab_size=32768, num_hidden_layers=1)]
            if name == "moe":  # experts 8x wider, top-4: the expert GEMMs outweigh the rest on any CPU
                args += ["--model", self._variant("tiny-moe", moe_intermediate_size=1024, num_experts_per_tok=4)]
            # vLLM's cache of its own for these runs: the compiled run compiles cold every time
            # (and vLLM inspects a model architecture once per cache, not once per run)
            env = vllm_env(self.cache, VLLM_CACHE_ROOT=str(self.cache / "vllm"))
            if name != "demo":
                env["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
            started = time.time_ns()
            r = cli(*args, "--output", out / "report.html", env=env, timeout=900)
            self.done[name] = (r, started, time.time_ns())
            (out / "run.log").write_text(r.stdout + r.stderr)
            assert r.returncode == 0, r.stderr[-3000:]
            self.dirs[name] = out
        return self.dirs[name]

    def _variant(self, builtin: str, **config) -> Path:
        """A copy of a built-in model's directory with ``config`` changed."""
        import os
        import shutil

        os.environ["XPU_PROFILER_CACHE"] = str(self.cache)
        try:
            from xpu_profiler.live.models.builtin import ensure_builtin

            src = ensure_builtin(builtin)
        finally:
            os.environ.pop("XPU_PROFILER_CACHE", None)
        dst = self.factory.mktemp(f"{builtin}_variant") / "model"
        shutil.copytree(src, dst)
        cfg = json.loads((dst / "config.json").read_text())
        cfg.update(config)
        (dst / "config.json").write_text(json.dumps(cfg))
        return dst

    def summary(self, name: str):
        return load_summary(self[name] / "report.summary.json")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return Runs(tmp_path_factory)


@pytest.fixture(scope="module")
def windows(tmp_path_factory):
    out = tmp_path_factory.mktemp("windows")
    # compile caches of its own: the cold window compiles vLLM's logprob kernel however often this ran
    env = vllm_env(
        TORCHINDUCTOR_CACHE_DIR=str(out / "inductor_cache"),
        VLLM_CACHE_ROOT=str(out / "vllm_cache"),
        VLLM_ENABLE_V1_MULTIPROCESSING="0",  # the engine in this one process (see above)
        OMP_NUM_THREADS="1",  # as the live command sets it for an engine in its own process
    )
    r = subprocess.run(
        [sys.executable, str(TESTS / "findings_workload.py"), str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    return out


def rules(s) -> dict:
    return {f.rule: f for f in s.findings}


def at_any(s, rule: str, reference=None, **thresholds):
    """The rule's finding at any stake with these thresholds (its evidence whatever this
    machine measured), or None."""
    cfg = FindingsConfig(thresholds={rule: thresholds}, min_at_stake=-math.inf)  # (a negative stake too)
    return {f.rule: f for f in findings.evaluate(s, cfg, reference)}.get(rule)


def follows(s, rule: str, fired: bool) -> None:
    """The run's own findings hold ``rule`` exactly when its evidence says it fires (at the
    default thresholds and the minimum stake)."""
    assert (rule in rules(s)) == fired, (rule, fired, [f.rule for f in s.findings])


def phase(s, name):
    return next(p for p in s.phases if p.phase == name)


# -- each rule, both directions ----------------------------------------------------------


def test_graphs_off_when_eager_and_silent_when_compiled(runs):
    s = runs.summary("small")
    f = rules(s)["graphs_off_decode"]
    assert s.run.engine["enforce_eager"] is True and f.evidence["enforce_eager"] is True
    dec = [i for i, p in enumerate(s.steps.phase) if p == "decode"]
    assert f.evidence["decode_idle_ns"] == sum(s.steps.idle_ns[i] for i in dec)
    assert f.at_stake_share == pytest.approx(f.evidence["decode_idle_ns"] / sum(s.steps.wall_ns))
    assert f.steps == [s.steps.step_id[i] for i in dec]
    c = runs.summary("compiled")
    assert c.run.engine["enforce_eager"] is False and "graphs_off_decode" not in rules(c)
    # the compiled model runs far fewer host ops per decode step
    assert phase(c, "decode").kernels.per_step < 0.5 * phase(s, "decode").kernels.per_step


def test_small_batch_while_requests_wait_kv_pressure_and_preemptions(runs):
    s = runs.summary("kv")
    f = rules(s)["small_batch_waiting"]
    assert f.evidence["max_num_seqs"] == s.run.engine["max_num_seqs"] == 256
    assert f.evidence["batch_p50"] < 0.25 * 256 and f.evidence["waiting_p50"] > 0
    assert f.evidence["cause"] == "kv_cache" and "KV" in f.fix
    k = rules(s)["kv_cache_pressure"]
    # the share of the window the cache ran full, as the step table tells it
    kv = [(w, u) for r, w, u in zip(s.steps.rank, s.steps.wall_ns, s.steps.kv_usage) if r == 0 and u is not None]
    assert k.evidence["full_share"] == pytest.approx(sum(w for w, u in kv if u >= 0.95) / sum(w for w, _ in kv))
    assert k.evidence["kv_usage_max"] >= 0.95
    # requests went back to the queue, and their prompts were computed again
    assert k.evidence["preemptions"] >= 1
    assert k.evidence["recomputed_tokens"] == s.throughput.prefill_tokens - s.throughput.prompt_tokens > 0
    assert s.throughput.prompt_tokens == 12 * 48
    healthy = runs.summary("small")
    assert not {"small_batch_waiting", "kv_cache_pressure", "batch_capped"} & set(rules(healthy))
    assert max(v for v in healthy.steps.kv_usage if v is not None) < 0.95


def test_client_limited_and_a_full_batch(runs):
    f = rules(runs.summary("demo"))["client_limited"]
    assert f.evidence["max_num_seqs"] == 256 and f.evidence["batch_p50"] == 8  # 8 prompts
    assert "concurrent requests" in f.fix
    assert "client_limited" not in rules(runs.summary("small"))  # 8 requests for max_num_seqs 8


def test_batch_capped_at_max_num_seqs(runs):
    s = runs.summary("moe")
    f = rules(s)["batch_capped"]
    assert f.evidence["max_num_seqs"] == 16 and f.evidence["batch_p50"] == 16 and f.evidence["waiting_p50"] >= 1
    assert "max_num_seqs" in f.fix
    assert "batch_capped" not in rules(runs.summary("small"))


def _budget_rows(s, budget: int) -> list[int]:
    """The mixed steps whose tokens fill the budget."""
    return [
        i
        for i, p in enumerate(s.steps.phase)
        if p == "mixed" and s.steps.prefill_tokens[i] + s.steps.decode_tokens[i] >= 0.98 * budget
    ]


def _budget_ratio(s, budget: int) -> float:
    """Median wall of the mixed steps that fill the budget over the median decode step."""
    w = s.steps.wall_ns
    decode = [w[i] for i, p in enumerate(s.steps.phase) if p == "decode"]
    return statistics.median(w[i] for i in _budget_rows(s, budget)) / statistics.median(decode)


def _budget_firing_ratio(s, budget: int) -> float:
    """The rule's ratio threshold below which it fires on this run: it needs at least a fifth
    of the mixed steps (and one) among those filling the budget over ratio x the median decode
    step, so the threshold is the k-th slowest such step over that median."""
    w = s.steps.wall_ns
    dec_p50 = statistics.median(w[i] for i, p in enumerate(s.steps.phase) if p == "decode")
    k = math.ceil(max(1, 0.2 * sum(p == "mixed" for p in s.steps.phase)))
    walls = sorted((w[i] for i in _budget_rows(s, budget)), reverse=True)
    return walls[k - 1] / dec_p50 if len(walls) >= k else 0.0


def test_chunked_prefill_budget(runs, tmp_path):
    s = runs.summary("big")
    # at a ratio of 0 every mixed step that fills the budget counts (tokens alone decide
    # which): the evidence is those steps' median wall over the median decode step
    f = at_any(s, "chunked_prefill_budget", ratio=0)
    assert f.phase == "mixed" and f.evidence["max_num_batched_tokens"] == 1024
    assert sorted(f.steps) == sorted(s.steps.step_id[i] for i in _budget_rows(s, 1024))
    assert f.evidence["ratio"] == pytest.approx(_budget_ratio(s, 1024))
    assert f.evidence["suggested_budget"] <= 1024
    # at the default ratio (3): the steps over 3x the decode median, if enough of them
    w = s.steps.wall_ns
    dec_p50 = statistics.median(w[i] for i, p in enumerate(s.steps.phase) if p == "decode")
    slow = [i for i in _budget_rows(s, 1024) if w[i] > 3 * dec_p50]
    mixed = sum(p == "mixed" for p in s.steps.phase)
    stake = sum(w[i] - 3 * dec_p50 for i in slow) / all_wall(s)
    follows(s, "chunked_prefill_budget", len(slow) >= max(1, 0.2 * mixed) and stake >= MIN_AT_STAKE)
    # the 64-token budget is hit in its mixed steps too; a ratio threshold between the two
    # runs' firing ratios tells them apart, whichever is the larger on this machine
    small = runs.summary("small")
    big_top, small_top = _budget_firing_ratio(s, 1024), _budget_firing_ratio(small, 64)
    if big_top != small_top:
        cfg = tmp_path / "findings.toml"
        cfg.write_text(f"min_at_stake = 0\n[chunked_prefill_budget]\nratio = {(small_top * big_top) ** 0.5}\n")
        fired = {
            name: "chunked_prefill_budget" in {x.rule for x in findings.evaluate(x, load_config(cfg))}
            for name, x in (("small", small), ("big", s))
        }
        assert fired == {"small": small_top > big_top, "big": big_top > small_top}
    # the smaller budget bounds the mixed step, the point of the finding's fix: its tokens
    small_mixed, big_mixed = phase(small, "mixed"), phase(s, "mixed")
    assert small_mixed.tokens <= 64 * small_mixed.steps  # no mixed step over its budget
    assert big_mixed.tokens > 64 * big_mixed.steps  # the 1024-token budget's mixed steps are larger


def test_moe_share_and_the_findings_config_of_the_live_command(runs):
    s = runs.summary("moe")
    f = at_any(s, "moe_share", share=0)
    moe = next(x for x in s.fused_ops if x.fused_op == "moe")
    # the phase where MoE weighs the most, its share of that phase's op time
    shares = {
        p.phase: moe.time_ns_by_phase.get(p.phase, 0) / p.time_ns
        for p in s.phases
        if p.phase in ("decode", "prefill", "mixed") and p.time_ns
    }
    assert f.phase == max(shares, key=shares.get) and f.evidence["share"] == pytest.approx(shares[f.phase])
    assert f.evidence["moe_ns"] == moe.time_ns_by_phase[f.phase] > 0
    assert f.evidence["phase_op_time_ns"] == phase(s, f.phase).time_ns
    follows(s, "moe_share", f.evidence["share"] > 0.3 and f.at_stake_share >= MIN_AT_STAKE)
    assert "moe_share" not in rules(runs.summary("small"))  # a dense model: no MoE time at all
    assert at_any(runs.summary("small"), "moe_share", share=0) is None
    # --findings-config switched graphs_off_decode off in this eager run, and only that
    assert s.run.engine["enforce_eager"] is True and "graphs_off_decode" not in rules(s)
    assert "graphs_off_decode" in {f.rule for f in findings.evaluate(s)}  # the default thresholds


def test_sampler_and_head_share(runs):
    for name in ("vocab", "small"):  # a 32k vocabulary on one layer; tiny-llama as it is
        s = runs.summary(name)
        f = at_any(s, "sampler_head_share", share=0)
        dec = phase(s, "decode")
        assert f.evidence["output_head_ns"] == dec.output_head_ns > 0
        assert f.evidence["decode_op_time_ns"] == dec.time_ns
        share = (f.evidence["sampling_ns"] + f.evidence["output_head_ns"]) / dec.time_ns
        assert f.evidence["share"] == pytest.approx(share)
        follows(s, "sampler_head_share", share > 0.10 and f.at_stake_share >= MIN_AT_STAKE)


def test_small_kernel_storm(runs, tmp_path):
    s = runs.summary("small")
    k = phase(s, "decode").kernels
    # how long the host ops run, and what the tiny ones cost next to the whole window, depend on
    # the CPU (on a slow one most of them may take over 5 us): the rule at the threshold under
    # which three quarters of this run's decode host ops ran (its own p75), at any stake
    f = at_any(s, "small_kernel_storm", kernel_us=k.dur_pct_ns[75] / 1000 + 0.001)
    assert f is not None and f.evidence["unit"] == "host_op" and f.evidence["small_share"] > 0.5
    assert f.evidence["per_step"] == k.per_step and f.evidence["dur_p50_ns"] == k.dur_pct_ns[50]
    assert f.at_stake_share == pytest.approx(f.evidence["small_time_ns"] / all_wall(s))
    # at the default 5 us: at any stake exactly when most of them ran under it, and in the
    # run's own findings exactly when its stake reaches the default minimum
    cfg = tmp_path / "findings.toml"
    cfg.write_text("min_at_stake = 0\n")
    any_stake = load_config(cfg)
    at5 = {x.rule: x for x in findings.evaluate(s, any_stake)}.get("small_kernel_storm")
    assert (at5 is not None) == (k.dur_pct_ns[50] < 5000), k.dur_pct_ns[50]
    assert ("small_kernel_storm" in rules(s)) == (at5 is not None and at5.at_stake_share >= MIN_AT_STAKE)
    # silent on a real graph-replayed decode step (SGLang, batch 32: 45% of its kernels
    # under 5 us); torch.compile on the CPU still runs most of its host ops under 5 us
    d = analysis.analyze([real_data.need("tracelens/sglang-qwen3-8b-decode.json.gz")])[1]
    assert phase(d, "decode").kernels.count > 500
    assert "small_kernel_storm" not in {x.rule for x in findings.evaluate(d, any_stake)}


def _over_phase_median(s, ratio: float, min_steps: int) -> list[int]:
    """Steps whose wall is over ``ratio`` x their phase's median (phases with ``min_steps``
    steps at least); in the others, steps whose time per token is over ``ratio`` x the median
    of the steps with no more tokens (at least ``min_steps`` of them recording tokens)."""
    w, ph = s.steps.wall_ns, s.steps.phase
    tokens = [a + b for a, b in zip(s.steps.prefill_tokens, s.steps.decode_tokens)]
    out = []
    for p in set(ph):
        rows = [i for i, q in enumerate(ph) if q == p]
        if len(rows) >= min_steps:
            med = statistics.median(w[i] for i in rows)
            out += [i for i in rows if w[i] > ratio * med]
            continue
        for i in (i for i in rows if tokens[i] > 0):
            like = [j for j in range(len(w)) if 0 < tokens[j] <= tokens[i]]
            if len(like) >= min_steps:
                usual = statistics.median(w[j] / tokens[j] for j in like)
                out += [i] if w[i] / tokens[i] > ratio * usual else []
    return sorted(s.steps.step_id[i] for i in out)


def test_warmup_inside_the_window(windows):
    from xpu_profiler.findings.rules import RULES

    th = next(r for r in RULES if r.id == "warmup_in_window").thresholds
    for name in ("cold", "warm"):  # the cold window compiles vLLM's logprob kernel in one of its steps
        s = load_summary(windows / f"{name}.summary.json")
        slow = _over_phase_median(s, th["ratio"], th["min_steps"])
        f = at_any(s, "warmup_in_window")
        assert (f is not None) == bool(slow)
        if f is not None:
            assert sorted(f.steps) == slow
            assert f.evidence["slowest_wall_ns"] == max(s.steps.wall_ns[s.steps.step_id.index(i)] for i in slow)
            follows(s, "warmup_in_window", f.at_stake_share >= MIN_AT_STAKE)
        else:
            follows(s, "warmup_in_window", False)


def test_profiler_overhead_against_a_basic_window(windows):
    warm = load_summary(windows / "warm.summary.json")
    comp = load_summary(windows / "comprehensive.summary.json")
    short = load_summary(windows / "short.summary.json")
    from xpu_profiler.findings.rules import RULES

    th = next(r for r in RULES if r.id == "profiler_overhead").thresholds
    for s in (comp, short):  # comprehensive over every step; standard over 4 steps
        drop = 1 - s.throughput.window_output_tok_s / warm.throughput.window_output_tok_s
        f = at_any(s, "profiler_overhead", reference=warm, drop=-1.0)
        assert f.evidence["drop"] == pytest.approx(drop)
        assert f.evidence["basic_tok_s"] == warm.throughput.window_output_tok_s and "basic" in f.fix
        # the default verdict: the drop over its threshold, else the hooks' share over theirs
        hook_share = f.evidence.get("hook_share")
        by_drop, by_hooks = drop > th["drop"], hook_share is not None and hook_share > th["hook_share"]
        stake = drop if by_drop else hook_share
        g = rules(findings.attach(s, reference=warm)).get("profiler_overhead")
        assert (g is not None) == ((by_drop or by_hooks) and stake >= MIN_AT_STAKE), (drop, hook_share)
        if g is not None:
            assert g.at_stake_share == pytest.approx(min(stake, 1.0))
    assert "profiler_overhead" not in rules(findings.attach(warm, reference=warm))  # basic itself
    # the same through the command line: analyze --baseline (at any drop, to read its evidence)
    cfg = windows / "any_drop.toml"
    cfg.write_text("min_at_stake = 0\n[profiler_overhead]\ndrop = -1\n")
    r = cli(
        "analyze",
        windows / "comprehensive.npz",
        "--baseline",
        windows / "warm.summary.json",
        "--findings-config",
        cfg,
        "--format",
        "json",
        "-o",
        windows / "out-overhead",
        "-q",
    )
    assert r.returncode == 0, r.stderr
    s = load_summary(windows / "out-overhead" / "summary.json")
    assert rules(s)["profiler_overhead"].evidence["basic_tok_s"] == warm.throughput.window_output_tok_s


# -- MFU and bandwidth --------------------------------------------------------------------


def test_traced_flops_agree_with_the_analytic_estimate(windows):
    comp = load_summary(windows / "comprehensive.summary.json")
    warm = load_summary(windows / "warm.summary.json")
    rows = {(r.phase, r.component): r for r in comp.roofline}
    # the comprehensive window recorded the GEMMs' shapes: FLOPs from them ...
    assert rows[("prefill", "gemm")].source == "trace"
    # ... equal the estimate from the model config and the window's own token counts
    prof = Profile.load(windows / "comprehensive.npz")
    steps = token_steps(prof)
    shape = model_shape(model_config(prof.run), prof.run["engine"].get("dtype"))
    f, _ = step_costs(
        shape,
        prof.steps["prefill_tokens"][steps],
        prof.steps["decode_tokens"][steps],
        prof.steps["prefill_reqs"][steps],
        None,
    )["gemm"]
    analytic = float(f[prof.steps["phase"][steps] == P_PREFILL].sum())
    assert rows[("prefill", "gemm")].flops == pytest.approx(analytic, rel=0.01)
    # every prompt token prefilled once (in prefill or mixed steps, as the requests arrived)
    assert comp.totals.prefill_tokens == warm.totals.prefill_tokens == 8 * 64
    # the basic window recorded no op time: no component rows, the whole phase from the estimate
    est = {(r.phase, r.component): r for r in warm.roofline}
    assert ("prefill", "gemm") not in est and est[("prefill", "step")].source == "analytic"
    # ... more than the GEMMs of the same (the warm window's) prefill steps: attention and lm_head too
    # (the windows split the prompts differently between prefill and mixed steps)
    wprof = Profile.load(windows / "warm.npz")
    ws = token_steps(wprof)
    wf, _ = step_costs(
        shape,
        wprof.steps["prefill_tokens"][ws],
        wprof.steps["decode_tokens"][ws],
        wprof.steps["prefill_reqs"][ws],
        None,
    )["gemm"]
    warm_gemm = float(wf[wprof.steps["phase"][ws] == P_PREFILL].sum())
    assert est[("prefill", "step")].flops > warm_gemm > 0
    # the CPU has no sourced peak: no share is made up
    assert all(r.flops_share is None and r.bw_share is None and "unknown peak" in r.note for r in comp.roofline)
    assert rows[("decode", "step")].judged_by == "bandwidth" and rows[("prefill", "step")].judged_by == "flops"


def test_peaks_from_a_device_spec_file(windows, tmp_path):
    spec = tmp_path / "spec.toml"
    spec.write_text('[cpu]\npeak_flops = {bf16 = 2.0e12}\nmem_bw_bytes_s = 5.0e10\nsource = "measured"\n')
    r = cli(
        "analyze", windows / "comprehensive.npz", "--device-spec", spec, "-o", tmp_path / "out", "--format", "json,html"
    )
    assert r.returncode == 0, r.stderr
    assert "of peak FLOP/s" in r.stdout
    s = load_summary(tmp_path / "out" / "summary.json")
    pre = next(x for x in s.roofline if x.phase == "prefill" and x.component == "step")
    assert pre.peak_flop_s == 2.0e12 and pre.flops_share == pytest.approx(pre.flop_s / 2.0e12)
    dec = next(x for x in s.roofline if x.phase == "decode" and x.component == "step")
    assert dec.bw_share == pytest.approx(dec.bytes_s / 5.0e10)
    html = (tmp_path / "out" / "report.html").read_text()
    assert 'data-key="mfu_prefill"' in html and 'data-key="bw_decode"' in html


# -- the Perfetto trace ----------------------------------------------------------------------


def test_findings_are_marked_on_the_trace_at_their_steps(runs):
    import gzip

    out = runs["big"]
    trace = out / "report.trace.json.gz"
    assert validate_file(trace) == []
    events = json.loads(gzip.decompress(trace.read_bytes()))["traceEvents"]
    s = runs.summary("big")
    f = rules(s)["chunked_prefill_budget"]
    marks = [e for e in events if e.get("ph") == "i" and e["args"].get("rule") == f.rule]
    start = {sid: t for sid, t in zip(s.steps.step_id, s.steps.start_ns)}
    assert sorted(round(e["ts"] * 1000) for e in marks) == sorted(start[i] for i in f.steps)
    tracks = {(e["pid"], e["tid"]) for e in marks}
    names = [e for e in events if e.get("ph") == "M" and e["name"] == "thread_name" and (e["pid"], e["tid"]) in tracks]
    assert [n["args"]["name"] for n in names] == ["findings"]


# -- diff --------------------------------------------------------------------------------


def test_diff_of_two_budgets_names_the_change(runs, tmp_path):
    r = cli("diff", runs["small"], runs["big"], "-o", tmp_path / "d")
    assert r.returncode == 0, r.stderr
    d = json.loads((tmp_path / "d" / "diff.json").read_text())
    assert [s["key"] for s in d["settings"]] == ["engine.max_num_batched_tokens"]
    assert (d["settings"][0]["base"], d["settings"][0]["new"]) == (64, 1024)
    # the headline names the phase whose step time moves the most over BASE's tokens (step time
    # per token, then at BASE's tokens): the budget shapes both mixed steps (prefill chunks) and
    # decode (how many requests decode together once their prompts are in); which of the two
    # weighs more is the run's own
    small, big = runs.summary("small"), runs.summary("big")
    moved = {
        ph: (phase(big, ph).step_per_token_ns - phase(small, ph).step_per_token_ns) * phase(small, ph).tokens
        for ph in ("mixed", "decode")
    }
    top = max(moved, key=lambda ph: abs(moved[ph]))
    assert d["headline_phase"] == top and d["headline"].startswith(f"{top}:")
    assert {s["phase"]: s["impact_ns"] for s in d["steps"]}[top] == pytest.approx(moved[top])
    # the op time the change moves, per phase, at BASE's tokens
    impact = {
        m["phase"]: m["impact_ns"]
        for m in d["metrics"]
        if m["name"] == "per_token_ns" and m.get("impact_ns") is not None
    }
    assert {"mixed", "decode"} <= set(impact)
    for ph in impact:
        assert impact[ph] == pytest.approx(
            (phase(big, ph).per_token_ns - phase(small, ph).per_token_ns) * phase(small, ph).tokens
        )
    mixed = {m["name"]: m for m in d["metrics"] if m["phase"] == "mixed"}
    assert mixed["step_p50_ns"]["change"] == pytest.approx(
        phase(big, "mixed").step_p50_ns / phase(small, "mixed").step_p50_ns - 1
    )
    # per-token deltas of the fused ops add up to the phase's change
    rows = [x for x in d["fused_ops"] if x["phase"] == "mixed"]
    assert sum(x["share_of_change"] for x in rows) == pytest.approx(1.0)
    assert sum(x["delta_per_token_ns"] for x in rows) == pytest.approx(
        phase(big, "mixed").per_token_ns - phase(small, "mixed").per_token_ns
    )
    # each finding of either run, with its status and stakes as the two runs have them
    was, now = rules(small), rules(big)
    for fd in d["findings"]:
        status = (
            "kept" if fd["rule"] in was and fd["rule"] in now else "appeared" if fd["rule"] in now else "disappeared"
        )
        assert fd["status"] == status, fd
        if fd["rule"] in now:
            assert fd["new_at_stake_share"] == pytest.approx(now[fd["rule"]].at_stake_share)
        if fd["rule"] in was:
            assert fd["base_at_stake_share"] == pytest.approx(was[fd["rule"]].at_stake_share)
    assert {fd["rule"] for fd in d["findings"]} == set(was) | set(now)
    assert "Settings that differ" in r.stdout and "max_num_batched_tokens" in r.stdout
    assert (tmp_path / "d" / "diff.html").is_file()


def test_diff_of_a_run_with_itself_is_no_change(runs, tmp_path):
    d_ = runs["small"]
    # the summary.json against its run directory (read through that same summary.json)
    r = cli("diff", d_ / "report.summary.json", d_, "-o", tmp_path / "same.json", "--fail-on", "0")
    assert r.returncode == 0, r.stderr
    d = json.loads((tmp_path / "same.json").read_text())
    assert d["unchanged"] is True and d["headline"] == "no change" and d["settings"] == []
    assert d["kernels_added"] == [] and d["kernels_removed"] == []
    assert all(f["status"] == "kept" for f in d["findings"])
    assert d["gate"]["regression"] == 0 and d["gate"]["failed"] is False


def test_fail_on_exit_codes(runs, tmp_path):
    def gate(out: Path, *args) -> tuple[int, dict]:
        r = cli("diff", *args, "-o", out, "-q")
        return r.returncode, json.loads((out / "diff.json").read_text())["gate"]

    # decode per token, the default gate: exit 1 exactly when it regressed by more than 5%
    for name, (a, b) in {"a": ("big", "small"), "b": ("small", "big")}.items():  # (base, new)
        rc, g = gate(tmp_path / name, runs[a], runs[b], "--fail-on", "5")
        assert g["metric"] == "per_token_ns" and g["phase"] == "decode" and g["threshold"] == pytest.approx(0.05)
        base, new = phase(runs.summary(a), "decode"), phase(runs.summary(b), "decode")
        assert g["regression"] == pytest.approx(new.per_token_ns / base.per_token_ns - 1)
        assert (rc, g["failed"]) == ((1, True) if g["regression"] > 0.05 else (0, False)), g
    # another phase and metric: the mixed steps' median
    rc, g = gate(
        tmp_path / "c",
        runs["small"],
        runs["big"],
        "--fail-on",
        "50",
        "--fail-on-phase",
        "mixed",
        "--fail-on-metric",
        "step_p50_ns",
    )
    change = phase(runs.summary("big"), "mixed").step_p50_ns / phase(runs.summary("small"), "mixed").step_p50_ns - 1
    assert g["regression"] == pytest.approx(change) and rc == (1 if change > 0.5 else 0)
    r = cli(
        "diff", runs["small"], runs["big"], "-o", tmp_path / "e", "--fail-on", "5", "--fail-on-metric", "no_such_metric"
    )
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "no_such_metric" in r.stderr


# -- the demo's report opens with its findings ------------------------------------------------


def _timeline(report: dict) -> dict[float, dict]:
    """The step timeline figure's data per step (keyed by its x): phase, tokens, requests, idle."""
    fig = report["figures"]["steps"]["data"]
    steps: dict[float, dict] = {}
    for t in fig:
        if t.get("mode") == "markers":
            for x in t["x"]:
                steps.setdefault(x, {})["phase"] = t["name"]
    series = {"decode tokens": "decode", "waiting requests": "waiting", "host overhead (wall − busy)": "idle_ms"}
    for t in fig:
        if t["name"] in series:
            for x, y in zip(t["x"], t["y"]):
                steps.setdefault(x, {})[series[t["name"]]] = y
    return steps


def _engine(report: dict) -> dict[str, str]:
    return dict(report["header"]["engine"])


def _phase_row(report: dict, name: str) -> dict:
    return next(r for r in report["phases"]["rows"] if r["phase"] == name)


#: per rule: each number of its evidence, read again from the report's own tables and charts
DEMO_CHECKS = {
    "client_limited": {
        "max_num_seqs": lambda rp: int(_engine(rp)["max_num_seqs"]),
        "batch_p50": lambda rp: statistics.median(
            s["decode"]
            for s in _timeline(rp).values()
            if s["phase"] in ("decode", "mixed") and s.get("decode") and s.get("waiting", 0) == 0
        ),
        "steps": lambda rp: sum(
            1
            for s in _timeline(rp).values()
            if s["phase"] in ("decode", "mixed") and s.get("decode") and s.get("waiting", 0) == 0
        ),
    },
    "graphs_off_decode": {
        "enforce_eager": lambda rp: _engine(rp)["enforce_eager"] == "True",
        "decode_steps": lambda rp: _phase_row(rp, "decode")["steps"],
        "decode_idle_ns": lambda rp: 1e6 * sum(s["idle_ms"] for s in _timeline(rp).values() if s["phase"] == "decode"),
        "units_per_step": lambda rp: _phase_row(rp, "decode")["units_per_step"],
    },
    "small_kernel_storm": {
        "per_step": lambda rp: _phase_row(rp, "decode")["units_per_step"],
        "dur_p50_ns": lambda rp: _phase_row(rp, "decode")["unit_p50_ns"],
    },
    "sampler_head_share": {
        "decode_op_time_ns": lambda rp: _phase_row(rp, "decode")["time_ns"],
    },
}


def test_the_demo_report_opens_with_its_findings(runs):
    from report_helpers import Browser, chromium_missing

    out = runs["demo"]
    s = runs.summary("demo")
    assert s.findings and s.findings[0].at_stake_share >= s.findings[-1].at_stake_share
    # the terminal output leads with them too
    log = (out / "run.log").read_text()
    assert log.index("Findings (") < log.index("Time by fused op")
    why = chromium_missing()
    if why:
        pytest.skip(why)
    b = Browser()
    try:
        page = b.page()
        page.goto((out / "report.html").resolve().as_uri(), wait_until="load")
        # after the run's header: the verdict per phase (what bounds each phase), then the
        # findings, in rank order
        ids = page.eval_on_selector_all("main > section", "els => els.map(e => e.id)")
        assert ids[:3] == ["run", "verdicts", "findings"], ids
        shown = page.eval_on_selector_all("#findings .finding", "els => els.map(e => e.dataset.rule)")
        assert shown == [f.rule for f in s.findings]
        assert page.eval_on_selector_all("nav a", "els => els.map(e => e.textContent)")[:2] == [
            "Steps & verdicts",
            "Findings",
        ]
        report = page.evaluate("window.XPU_REPORT")
        page.close()
    finally:
        b.close()
    # what the workload decides: 8 requests for 256 sequences, nothing waits; eager
    assert {"client_limited", "graphs_off_decode"} <= {f.rule for f in s.findings}
    checked = set()
    for f in s.findings:  # (a rule whose stake depends on this CPU may join them: checked where it can be)
        for key, read in DEMO_CHECKS.get(f.rule, {}).items():
            value = read(report)
            assert f.evidence[key] == pytest.approx(value, rel=1e-6, abs=1e-3), (f.rule, key, value)
            checked.add((f.rule, key))
    assert len(checked) >= 7


def test_the_demo_end_to_end(runs):
    """``./dev demo``'s command, as it runs it: the workload of the command's defaults, one
    engine in its own processes (EngineCore, a worker), torch.profiler's ops aligned on our
    steps, vLLM's output in vllm.log and our stages on the terminal."""
    from xpu_profiler.cli.main import main

    out = runs["demo"]
    r, started, ended = runs.done["demo"]
    s = json.loads((out / "report.summary.json").read_text())
    defaults = {p.name: p.default for p in main.params}
    prompts, input_len, output_len = (defaults[k] for k in ("num_prompts", "input_len", "output_len"))
    assert s["run"]["workload"] == {
        "input_len": input_len,
        "num_prompts": prompts,
        "output_len": output_len,
        "prompts_file": None,
    }
    assert s["run"]["engine"]["multiprocessing"] is True and s["run"]["incomplete"] is False
    assert s["run"]["detail_level"] == defaults["detail_level"] == "standard"
    trace = out / "report.trace.json.gz"
    assert validate_file(trace) == []
    # the torch trace's clock was aligned on our step ranges (marks and trace arrive together)
    assert not [w for w in s["warnings"] if "align" in w], s["warnings"]
    assert s["run"]["clock_shift_ns"] is not None
    tp = s["throughput"]
    assert tp["prefill_tokens"] == prompts * input_len
    assert tp["decode_tokens"] == prompts * (output_len - 1)
    assert tp["window_output_tokens"] == prompts * output_len
    # rates are the token counts over the measured time
    assert tp["window_output_tok_s"] == pytest.approx(prompts * output_len / tp["window_ns"] * 1e9, rel=1e-9)
    assert tp["span_tok_s"] == pytest.approx(
        (tp["prefill_tokens"] + tp["decode_tokens"]) / tp["duration_ns"] * 1e9, rel=1e-9
    )
    # a phase's rate: its tokens over its steps' time (one rank: each row is an engine step)
    st = s["steps"]
    dec = [i for i, ph in enumerate(st["phase"]) if ph == "decode"]
    dec_tokens, dec_ns = sum(st["decode_tokens"][i] for i in dec), sum(st["step_ns"][i] for i in dec)
    assert tp["decode_tok_s"] == pytest.approx(dec_tokens / dec_ns * 1e9, rel=1e-9)
    assert s["totals"]["steps"] >= output_len
    # the measured time covers the steps, inside the command's own lifetime
    assert tp["duration_ns"] <= tp["window_ns"] <= ended - started
    # standard level: torch.profiler ops. The trace's events outside every step are dropped;
    # with the clock aligned on the steps, those are the few that ran between steps
    assert s["totals"]["events"] > 1000 and s["totals"]["op_time_ns"] > 0
    dropped = s["run"].get("events_outside_steps_dropped", 0)
    assert dropped < 0.01 * (s["totals"]["events"] + dropped)
    assert {row["phase"] for row in s["phases"] if row.get("steps")} >= {"prefill", "decode"}
    assert "report.trace.json.gz" in r.stdout
    # the terminal shows our stages; vLLM's own output (its engine processes' too) is in vllm.log
    log = out / "vllm.log"
    assert f"vLLM's own output goes to {log}" in r.stderr and f"wrote vllm log {log}" in r.stdout
    for stage in ("[1/4] starting vLLM", "[2/4] warm-up", "[3/4] profiling", "[4/4] export"):
        assert stage in r.stderr, r.stderr
    vllm_lines = re.compile(r"\b(DEBUG|INFO|WARNING|ERROR) \d\d-\d\d \d\d:")
    assert not [ln for ln in (r.stderr + r.stdout).splitlines() if vllm_lines.search(ln)]
    text = log.read_text()
    assert "(EngineCore pid=" in text and "(Worker pid=" in text and len(vllm_lines.findall(text)) > 10
