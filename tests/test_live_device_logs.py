"""Per-rank device logs in live runs: each worker's own fds go to xpu_logs/rank_N.log."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import HAVE_VLLM, ROOT, TESTS, vllm_env

from xpu_profiler.core.profile import EVENT_SCHEMA, K_KERNEL, Profile, Table
from xpu_profiler.readers.records.device_logs import attach_device_logs

LINES = [
    "[XPURT_PROF] xblas_xpu3::fc_cdnn_infer 1450 1000 ns",
    "[XPURT_PROF] kl3_all_reduce 2900 2000 ns",
    "INFO some vLLM line",
]


def write_logs(run_dir: Path) -> None:
    (run_dir / "xpu_logs").mkdir(parents=True)
    (run_dir / "xpu_logs" / "rank_0.log").write_text("\n".join(LINES) + "\n")


def host_only_profile() -> Profile:
    p = Profile()
    p.events = Table(EVENT_SCHEMA, {"name": [p.strings.intern("aten::mm")], "kind": [2], "start": [0], "dur": [10]})
    return p


def test_logs_fill_in_when_the_profiler_has_no_device_kernels(tmp_path: Path) -> None:
    write_logs(tmp_path)
    said = []
    merged = attach_device_logs(host_only_profile(), tmp_path, said.append)
    info = merged.run["device_logs"]
    assert info["used"] is True and info["kernel_lines"] == 2
    kern = merged.events["kind"] == K_KERNEL
    # P800 (gen 3): 1450 cycles / 1.45 = 1000 ns, 2900 / 1.45 = 2000 ns
    assert sorted(merged.events["dur"][kern].tolist()) == [1000, 2000]
    assert (merged.events["start"][kern] == -1).all()  # no invented times
    assert any("2 [XPURT_PROF] kernel lines" in s for s in said)


def test_logs_are_a_cross_check_when_kernels_are_traced(tmp_path: Path) -> None:
    write_logs(tmp_path)
    prof = host_only_profile()
    prof.events["kind"] = np.array([K_KERNEL], np.int8)
    out = attach_device_logs(prof, tmp_path, lambda s: None)
    assert out is prof and len(out.events) == 1  # not counted twice
    assert out.run["device_logs"]["used"] is False
    assert out.run["device_logs"]["kernel_ns_by_rank"] == {"0": 3000}


def test_logs_without_kernel_lines_are_said_not_dropped(tmp_path: Path) -> None:
    """A CPU run's captured logs hold no [XPURT_PROF] line: the run says so (files, 0 lines,
    unused, the reader's warning), where a log alone given to ``analyze`` is refused."""
    (tmp_path / "xpu_logs").mkdir()
    log = tmp_path / "xpu_logs" / "rank_0.log"
    log.write_text("INFO some vLLM line\n")
    out = attach_device_logs(host_only_profile(), tmp_path, lambda s: None)
    assert out.run["device_logs"]["files"] == [str(log)]
    assert out.run["device_logs"]["kernel_lines"] == 0 and out.run["device_logs"]["used"] is False
    assert any("no [XPURT_PROF] lines for rank 0" in w for w in out.run["warnings"])


@pytest.mark.vllm
@pytest.mark.skipif(not HAVE_VLLM, reason="vLLM is not installed")
def test_live_run_sends_worker_output_to_rank_file_and_restores_the_environment(tmp_path: Path) -> None:
    """The live command run inside a long-lived Python process (tests/live_env_driver.py):
    the worker's output goes to its rank file, and every environment variable the run set
    for the engine's processes is back as it was when the command returns."""
    out = tmp_path / "report.html"
    result = tmp_path / "env.json"
    r = subprocess.run(
        [
            sys.executable,
            str(TESTS / "live_env_driver.py"),
            str(result),
            "--model",
            "tiny-llama",
            "--device",
            "cpu",
            "--device-logs",
            "--detail-level",
            "basic",
            "--num-prompts",
            "2",
            "--input-len",
            "16",
            "--output-len",
            "4",
            "--output",
            str(out),
        ],
        env=vllm_env(tmp_path / "cache"),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    env = json.loads(result.read_text())
    assert env["code"] == 0
    assert {"VLLM_CPU_KVCACHE_SPACE", "XPU_PROFILER_DIR", "XPU_PROFILER_DEVICE_LOGS"} <= set(env["touched"])
    assert env["left_changed"] == {}
    log = tmp_path / "xpu_logs" / "rank_0.log"
    text = log.read_text()
    # the worker's own output after its device init: model loading happens there
    assert "Starting to load model" in text
    assert all(ln.startswith("(Worker") or not ln.strip() for ln in text.splitlines()[:3])
    # ... and no longer on the command's own streams
    assert "Starting to load model" not in r.stdout + r.stderr
    assert "wrote perfetto" in r.stdout
    s = json.loads((tmp_path / "report.summary.json").read_text())
    assert s["run"]["device_logs"]["files"] == [str(log)]
    assert s["run"]["device_logs"]["kernel_lines"] == 0 and s["run"]["device_logs"]["used"] is False
