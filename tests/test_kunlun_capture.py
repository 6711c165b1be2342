"""End-to-end capture: a child process (standing in for a vLLM worker) redirects its
own stdout/stderr with the plugin's code, writes [XPURT_PROF] lines from C and from
Python, and the lines land in the per-rank file and parse to the right totals."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from xpu_profiler.live.vllm import log_capture
from xpu_profiler.live.vllm.log_capture import CAPTURE_ENV, log_path
from xpu_profiler.readers.records.device_logs import read_captured

ROOT = Path(__file__).resolve().parents[1]
ENV_KEYS = [*CAPTURE_ENV, "XPU_CUPTI_ENABLE_DEVICE"]

WORKER = textwrap.dedent("""
    import ctypes, json, os, subprocess, sys
    from xpu_profiler.live.vllm.log_capture import start_capture, stop_capture

    keys = {keys!r}
    run_dir, rank, local_rank = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    print("worker starting", flush=True)
    handle = start_capture(run_dir, rank, local_rank)
    during = {{k: os.environ.get(k) for k in keys}}
    libc = ctypes.CDLL(None)
    # C-level write(2) straight to fd 1
    line = b"[XPURT_PROF] _Z14kl3_all_reduceI7float16EvPT_i 2900 2000 ns\\n"
    libc.write(1, line, len(line))
    # os.write and Python print (buffered by Python when fd 1 is a file)
    os.write(1, b"[XPURT_PROF] moe_fc 4350 3000 ns\\n")
    print("[XPURT_PROF] silu_and_mul 290 200 ns")
    print("INFO vLLM worker says hello \u4f60\u597d \u2713")
    # stderr goes to the same file
    sys.stderr.write("[XPURT_PROF] add_rmsnorm 580 400 ns\\n")
    os.write(2, b"[XPURT_PROF] add_rmsnorm 580 400 ns\\n")
    # a process started now inherits the redirected descriptors
    subprocess.run(["sh", "-c", "echo '[XPURT_PROF] moe_pre_sorted 145 100 ns'"], check=True)
    # C stdio printf: buffered inside libc, written out only by the flush in stop_capture
    libc.printf(b"[XPURT_PROF] %s %d %d ns\\n",
                b"_ZN10xblas_xpu313fc_cdnn_inferI7float16S1_S1_S1_ffffLi1EEEvPKT_PKT0_PT2_i",
                ctypes.c_int(14500), ctypes.c_int(10000))
    path = stop_capture(handle)
    stop_capture(handle)  # twice is harmless
    after = {{k: os.environ.get(k) for k in keys}}
    print("worker done", json.dumps({{"path": str(path), "during": during, "after": after}}), flush=True)
    os.write(1, b"raw write after stop\\n")
""")

EXPECTED = {
    "void kl3_all_reduce<float16>": 2000,
    "void xblas_xpu3::fc_cdnn_infer<float16, float16, float16, float16, float, float, float, float, 1>": 10000,
    "moe_fc": 3000,
    "silu_and_mul": 200,
    "add_rmsnorm": 800,
    "moe_pre_sorted": 100,
}


def _run_worker(tmp_path: Path, run_dir: Path, rank: int, local_rank: int) -> subprocess.CompletedProcess:
    script = tmp_path / "worker.py"
    script.write_text(WORKER.format(keys=ENV_KEYS))
    # without PYTHONUNBUFFERED, C stdio buffers output to a file, as in a normal worker
    env = {k: v for k, v in os.environ.items() if k not in ENV_KEYS and k != "PYTHONUNBUFFERED"}
    env["PYTHONPATH"] = str(ROOT)  # this checkout's package
    return subprocess.run(
        [sys.executable, str(script), str(run_dir), str(rank), str(local_rank)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_worker_output_lands_in_its_rank_file_and_parses(tmp_path):
    run_dir = tmp_path / "run"
    results = {r: _run_worker(tmp_path, run_dir, rank=r, local_rank=r % 2) for r in (2, 3)}
    for rank, res in results.items():
        assert res.returncode == 0, res.stderr
        # the console keeps what was printed before and after the capture, nothing between
        assert "worker starting" in res.stdout and "raw write after stop" in res.stdout
        assert "[XPURT_PROF]" not in res.stdout and "[XPURT_PROF]" not in res.stderr
        info = json.loads(res.stdout.split("worker done ", 1)[1].splitlines()[0])
        assert info["path"] == str(log_path(run_dir, rank))
        assert info["during"] == {
            "XPUAPI_DEBUG": "0x1",
            "XPURT_DISPATCH_MODE": "PROFILING",
            "XPU_ENABLE_PROFILER_TRACING": "1",
            "XPU_CUPTI_ENABLE_DEVICE": str(rank % 2),
        }
        assert info["after"] == {k: None for k in ENV_KEYS}
        text = log_path(run_dir, rank).read_text(encoding="utf-8")
        assert text.count("[XPURT_PROF]") == 7
        assert "worker done" not in text and "worker starting" not in text
        assert "你好 ✓" in text

    prof = read_captured(run_dir)
    assert sorted(set(prof.events["rank"].tolist())) == [2, 3]
    for rank in (2, 3):
        sub = prof.events["rank"] == rank
        got: dict[str, int] = {}
        for name, dur in zip(prof.events["name"][sub].tolist(), prof.events["dur"][sub].tolist()):
            got[prof.name_of(name)] = got.get(prof.name_of(name), 0) + dur
        assert got == EXPECTED
    assert prof.has_timeline is False


def test_a_failed_start_changes_nothing(tmp_path, monkeypatch):
    for k in ENV_KEYS:
        monkeypatch.delenv(k, raising=False)
    (tmp_path / "xpu_logs").write_text("a file where the log directory should be")
    before = os.fstat(1).st_ino, os.fstat(2).st_ino
    with pytest.raises(OSError):
        log_capture.start_capture(tmp_path, rank=0, local_rank=0)
    assert (os.fstat(1).st_ino, os.fstat(2).st_ino) == before
    assert all(k not in os.environ for k in ENV_KEYS)


def test_capture_env_is_per_local_rank():
    assert log_capture.capture_env(5) == {
        "XPUAPI_DEBUG": "0x1",
        "XPURT_DISPATCH_MODE": "PROFILING",
        "XPU_ENABLE_PROFILER_TRACING": "1",
        "XPU_CUPTI_ENABLE_DEVICE": "5",
    }
    assert log_path("/r", 7) == Path("/r/xpu_logs/rank_7.log")
