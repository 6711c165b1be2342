"""The live command end to end on the CPU, and its one-line errors."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time

import pytest
from conftest import HAVE_VLLM, ROOT, vllm_env

NUM_PROMPTS, INPUT_LEN, OUTPUT_LEN = 4, 24, 6


def _cli(args, env, **kw):
    return subprocess.run(
        [sys.executable, "-m", "xpu_profiler", *args], env=env, cwd=ROOT, capture_output=True, text=True, **kw
    )


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--model", "tiny-llama", "--device", "kunlun_p800"], "kunlun_p800"),
        (["--model", "tiny-llama", "--device", "cuda"], "cuda"),
        (["--model", "tiny-nope", "--device", "cpu"], "tiny-nope"),
        (["--model", "/no/such/model/dir", "--device", "cpu"], "/no/such/model/dir"),
        (["--model", "tiny-llama", "--device", "cpu", "--metrics", "latency"], "latency"),
        (["--model", "tiny-llama", "--device", "cpu", "--engine-arg", "novalue"], "KEY=VALUE"),
    ],
)
def test_bad_input_is_one_line_exit_2(tmp_path, args, needle):
    r = _cli([*args, "--output", str(tmp_path / "r.html")], vllm_env(tmp_path / "cache"), timeout=120)
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, r.stderr
    assert "Traceback" not in r.stderr and needle in lines[0]
    assert not list(tmp_path.glob("r.*"))


@pytest.mark.vllm
@pytest.mark.skipif(not HAVE_VLLM, reason="vLLM is not installed")
def test_cli_demo_on_cpu(tmp_path):
    from xpu_profiler.exporters.validate import validate_file

    out = tmp_path / "report.html"
    started = time.time_ns()
    r = _cli(
        [
            "--model",
            "tiny-llama",
            "--device",
            "cpu",
            "--output",
            str(out),
            "--num-prompts",
            str(NUM_PROMPTS),
            "--input-len",
            str(INPUT_LEN),
            "--output-len",
            str(OUTPUT_LEN),
            "--max-num-batched-tokens",
            "32",
            "--detail-level",
            "standard",
        ],
        vllm_env(tmp_path / "cache"),
        timeout=600,
    )
    ended = time.time_ns()
    assert r.returncode == 0, r.stderr[-3000:]
    trace = tmp_path / "report.trace.json.gz"
    summary_path = tmp_path / "report.summary.json"
    assert trace.is_file() and summary_path.is_file()
    assert validate_file(trace) == []
    s = json.loads(summary_path.read_text())
    assert s["run"]["incomplete"] is False
    # the torch trace's clock was aligned on our step ranges (marks and trace arrive together)
    assert not [w for w in s["warnings"] if "align" in w], s["warnings"]
    assert s["run"]["clock_shift_ns"] is not None
    tp = s["throughput"]
    assert tp["prefill_tokens"] == NUM_PROMPTS * INPUT_LEN
    assert tp["decode_tokens"] == NUM_PROMPTS * (OUTPUT_LEN - 1)
    assert tp["window_output_tokens"] == NUM_PROMPTS * OUTPUT_LEN
    # rates are the token counts over the measured time
    assert tp["window_output_tok_s"] == pytest.approx(NUM_PROMPTS * OUTPUT_LEN / tp["window_ns"] * 1e9, rel=1e-9)
    assert tp["decode_tok_s"] == pytest.approx(tp["decode_tokens"] / tp["duration_ns"] * 1e9, rel=1e-9)
    steps = s["totals"]["steps"]
    assert steps >= OUTPUT_LEN
    # the measured time covers the steps, inside the command's own lifetime
    assert tp["duration_ns"] <= tp["window_ns"] <= ended - started
    # standard level: torch.profiler ops. The trace's events outside every step are dropped;
    # with the clock aligned on the steps, those are the few that ran between steps
    assert s["totals"]["events"] > 1000
    assert s["totals"]["op_time_ns"] > 0
    dropped = s["run"].get("events_outside_steps_dropped", 0)
    assert dropped < 0.01 * (s["totals"]["events"] + dropped)
    assert {r["phase"] for r in s["phases"] if r.get("steps")} >= {"prefill", "decode"}
    assert "report.trace.json.gz" in r.stdout
    # the terminal shows our stages; vLLM's own output (its engine processes' too) is in vllm.log
    log = tmp_path / "vllm.log"
    assert f"vLLM's own output goes to {log}" in r.stderr and f"wrote vllm log {log}" in r.stdout
    for stage in ("[1/4] starting vLLM", "[2/4] warm-up", "[3/4] profiling", "[4/4] export"):
        assert stage in r.stderr, r.stderr
    vllm_lines = re.compile(r"\b(DEBUG|INFO|WARNING|ERROR) \d\d-\d\d \d\d:")
    assert not [ln for ln in (r.stderr + r.stdout).splitlines() if vllm_lines.search(ln)]
    text = log.read_text()
    assert "(EngineCore pid=" in text and len(vllm_lines.findall(text)) > 10
