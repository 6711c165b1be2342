"""A findings config's thresholds are finite numbers: TOML reads ``nan`` and ``inf``, and a rule
judged against them printed "100.0% of decode kernels run under nan us" (or a KV pressure
finding on a trace with no KV data). Such a file is one line, exit 2. A negative threshold
stays (``[profiler_overhead] drop = -1``: any drop)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_run import run

TRACE = Path(__file__).resolve().parent / "data" / "real-traces" / "cuda-triton-example.json.gz"


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_a_threshold_that_is_no_finite_number_is_one_line(tmp_path: Path, value: str) -> None:
    cfg = tmp_path / "findings.toml"
    cfg.write_text(f"[small_kernel_storm]\nkernel_us = {value}\n")
    res = run("analyze", TRACE, "--findings-config", cfg, "-o", tmp_path / "o", "--format", "json")
    assert res.returncode == 2, res.stdout
    lines = res.stderr.strip().splitlines()
    assert lines == [
        f"xpu_profiler: error: {cfg}: small_kernel_storm.kernel_us must be a finite number, not {float(value)!r}"
    ]
    assert not (tmp_path / "o" / "summary.json").exists()


def test_zero_plain_and_negative_numbers_pass(tmp_path: Path) -> None:
    cfg = tmp_path / "findings.toml"
    cfg.write_text("min_at_stake = 0\n[small_kernel_storm]\nkernel_us = 3\n[profiler_overhead]\ndrop = -1\n")
    res = run("analyze", TRACE, "--findings-config", cfg, "-o", tmp_path / "o", "--format", "json", "-q")
    assert res.returncode == 0, res.stderr
