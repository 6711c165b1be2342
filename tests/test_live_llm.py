"""Live profiling of real vLLM engines (CPU build, built-in models, no mocks).

One engine per layout per test session: the default multi-process ``LLM()`` with
tiny-llama, and the single-process layout with tiny-moe (fused-MoE path). Each runs
``tests/live_workload.py``: a ``basic`` window while vLLM's own profiler counts the
engine steps independently, then a ``standard`` window with torch.profiler.
"""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import HAVE_VLLM, TESTS, vllm_env
from live_checks import ops_inside_worker_steps

from xpu_profiler import aggregate, analysis
from xpu_profiler.core.profile import K_CPU_OP, K_KERNEL, P_DECODE, P_MIXED, P_PREFILL, P_UNKNOWN, Profile

pytestmark = [pytest.mark.vllm, pytest.mark.skipif(not HAVE_VLLM, reason="vLLM is not installed")]

ANN = re.compile(r"^execute_context_(\d+)\((\d+)\)_generation_(\d+)\((\d+)\)$")


def _run_workload(tmp_path_factory, name: str, model: str, **env) -> Path:
    out = tmp_path_factory.mktemp(name)
    log = out / "run.log"
    with open(log, "wb") as f:
        proc = subprocess.run(
            [sys.executable, str(TESTS / "live_workload.py"), str(out), model],
            env=vllm_env(tmp_path_factory.mktemp("cache"), **env),
            stdout=f,
            stderr=subprocess.STDOUT,
            timeout=600,
        )
    if proc.returncode != 0:
        pytest.fail(f"live workload failed (exit {proc.returncode}):\n{log.read_text(errors='replace')[-4000:]}")
    return out


@pytest.fixture(scope="session")
def run_mp(tmp_path_factory) -> Path:
    """Default layout: front-end, EngineCore and worker in three processes."""
    return _run_workload(tmp_path_factory, "live_mp", "tiny-llama")


@pytest.fixture(scope="session")
def run_inproc(tmp_path_factory) -> Path:
    """Single-process layout (EngineCore and worker inside the caller), MoE model."""
    return _run_workload(
        tmp_path_factory, "live_inproc", "tiny-moe", VLLM_ENABLE_V1_MULTIPROCESSING="0", OMP_NUM_THREADS="1"
    )


@pytest.fixture(params=["mp", "inproc"])
def run_dir(request) -> Path:
    return request.getfixturevalue("run_mp" if request.param == "mp" else "run_inproc")


def _vllm_steps(run: Path) -> list[tuple[int, int]]:
    """(prefill, decode) tokens of each non-empty engine step, from vLLM's own trace."""
    files = sorted((run / "vllm_trace").glob("*.pt.trace.json.gz"))
    assert len(files) == 1, files
    with gzip.open(files[0], "rt") as f:
        events = json.load(f)["traceEvents"]
    anns = sorted(
        (e for e in events if e.get("cat") == "user_annotation" and ANN.match(e.get("name", ""))), key=lambda e: e["ts"]
    )
    out = []
    for e in anns:
        m = ANN.match(e["name"])
        pt, dt = int(m.group(2)), int(m.group(4))
        if pt or dt:  # the engine's final clean-up step schedules nothing
            out.append((pt, dt))
    return out


def test_one_step_record_per_engine_step(run_dir):
    truth = json.loads((run_dir / "truth.json").read_text())
    prof = Profile.load(run_dir / "basic.npz")
    st = prof.steps
    ours = list(zip(st["prefill_tokens"].tolist(), st["decode_tokens"].tolist()))
    theirs = _vllm_steps(run_dir)
    assert len(ours) == len(theirs) > 5
    assert ours == theirs
    assert st["step_id"].tolist() == sorted(st["step_id"].tolist())
    assert len(set(st["step_id"].tolist())) == len(st)
    assert truth["multiprocessing"] == (run_dir.name.startswith("live_mp"))


@pytest.mark.parametrize("window", ["basic", "standard"])
def test_token_totals_match_the_workload(run_dir, window):
    truth = json.loads((run_dir / "truth.json").read_text())
    prof = Profile.load(run_dir / f"{window}.npz")
    st = prof.steps
    n = len(truth["prompt_lens"])
    assert truth[window]["output_tokens"] == [truth["output_len"]] * n  # ignore_eos
    assert int(st["prefill_tokens"].sum()) == sum(truth["prompt_lens"])
    assert int(st["decode_tokens"].sum()) == n * (truth["output_len"] - 1)


def test_prefill_decode_and_mixed_steps_appear(run_dir):
    st = Profile.load(run_dir / "basic.npz").steps
    phases = st["phase"].tolist()
    for p in (P_PREFILL, P_DECODE, P_MIXED):
        assert p in phases
    assert P_UNKNOWN not in phases
    pt, dt = st["prefill_tokens"], st["decode_tokens"]
    assert np.all((st["phase"] == P_MIXED) == ((pt > 0) & (dt > 0)))
    # the step budget is respected on every step
    assert int((pt + dt).max()) <= 64


def test_steps_have_times_and_scheduler_state(run_dir):
    truth = json.loads((run_dir / "truth.json").read_text())
    prof = Profile.load(run_dir / "basic.npz")
    st = prof.steps
    t0 = truth["basic"]["t0"] - prof.base_ns
    t1 = truth["basic"]["t1"] - prof.base_ns
    assert np.all(st["dur"] > 0)
    assert np.all(st["start"][1:] >= st["start"][:-1] + st["dur"][:-1])  # steps do not overlap
    assert st["start"].min() >= t0 and (st["start"] + st["dur"]).max() <= t1
    assert np.all(st["running"] >= st["prefill_reqs"] + st["decode_reqs"] - 1)
    assert int(st["running"].max()) <= 8
    kv = st["kv_usage"]
    assert np.all((kv > 0) & (kv <= 1))


def test_ops_inside_each_worker_step_get_that_step(run_dir):
    """Before trimming: every op inside a worker's own ``xpu_step#N`` range (the trace's
    clock) is attributed to engine step N (from the scheduler hooks, the wall clock):
    the clock alignment and the step join are right. Trimming then drops only the few
    ops that ran outside every step, and nothing else."""
    raw = Profile.load(run_dir / "standard_untrimmed.npz")
    aggregate.attribute(raw)
    ev = raw.events
    ops, inside = ops_inside_worker_steps(raw, min_ranges=8)
    assert inside.sum() > 0.9 * len(ops)
    assert set(np.unique(ev["phase"][ops]).tolist()) >= {P_PREFILL, P_DECODE, P_MIXED}
    # outside every step: few ops, and exactly the events the trimmed profile dropped
    unstepped = ev["step"][ops] < 0
    assert unstepped.sum() < 0.01 * len(ops)
    trimmed = Profile.load(run_dir / "standard.npz")
    dropped = int(trimmed.run.get("events_outside_steps_dropped", 0))
    assert len(raw.events) - len(trimmed.events) == dropped
    aggregate.attribute(trimmed)
    t_ops = np.isin(trimmed.events["kind"], [K_CPU_OP, K_KERNEL])
    assert int(t_ops.sum()) == len(ops) - int(unstepped.sum())


def test_module_ranges_attribute_native_ops(run_dir):
    prof = Profile.load(run_dir / "standard.npz")
    names = set(prof.strings.lookup(np.unique(prof.events["name"])))
    mods = {n.split(":", 1)[1] for n in names if n.startswith("xpu_module:")}
    for m in ("RMSNorm", "QKVParallelLinear", "RowParallelLinear", "Attention", "RotaryEmbedding"):
        assert m in mods, mods
    if "moe" in json.loads((run_dir / "truth.json").read_text())["model"]:
        assert "FusedMoE" in mods
    else:
        assert "SiluAndMul" in mods and "MergedColumnParallelLinear" in mods
    summary = json.loads((run_dir / "standard.summary.json").read_text())
    assert summary["totals"]["other_share"] < 0.1
    # each decoder layer in its own range: every step shows the model's configured layers
    model = json.loads((run_dir / "truth.json").read_text())["model"]
    want = {"tiny-llama": 4, "tiny-moe": 2}[model]
    assert prof.run["model_config"]["num_hidden_layers"] == want
    layers = summary["layers"]
    assert layers["config_layers"] == want and layers["phases"]
    for ph in layers["phases"]:
        assert (ph["evidence"], ph["layers"], ph["inferred"]) == ("module", want, False)
        assert ph["steps"] == ph["steps_seen"] and not layers["refused"]
        mlp = "moe" if "moe" in model else "dense"
        assert {k["kind"]: k["layers"] for k in ph["kinds"]} == {f"full/{mlp}": want}
        assert ph["layers_ns"] + ph["head_ns"] + ph["tail_ns"] + ph["other_ns"] == ph["op_time_ns"]


def test_memory_and_throughput_series(run_dir):
    prof = Profile.load(run_dir / "basic.npz")
    names = set(prof.strings.lookup(np.unique(prof.counters["name"])))
    for n in (
        "kv_cache_usage",
        "host_rss_bytes.worker",
        "host_rss_bytes.engine_core",
        "host_rss_bytes.frontend",
        "decode_tokens_per_s",
        "output_tokens_per_s",
    ):
        assert n in names, names
    c = prof.counters
    rss = c["value"][c["name"] == prof.strings.get("host_rss_bytes.worker")]
    assert rss.min() > 50e6  # a worker holding torch + vLLM
    req = prof.requests
    truth = json.loads((run_dir / "truth.json").read_text())
    assert len(req) == len(truth["prompt_lens"])
    assert sorted(req["prompt_len"].tolist()) == sorted(truth["prompt_lens"])
    assert req["output_len"].tolist() == [truth["output_len"]] * len(req)
    assert np.all(req["arrival"] <= req["first_token"])
    assert np.all(req["first_token"] < req["finish"])
    tp = analysis.summarize(prof).throughput
    assert tp.requests == len(req)
    assert tp.ttft_ns.n == len(req) and tp.tpot_ns.n == len(req)
