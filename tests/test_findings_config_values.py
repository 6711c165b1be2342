"""A findings config's thresholds are finite numbers of 0 or more: TOML reads ``nan`` and
``inf``, and a rule judged against them printed "100.0% of decode kernels run under nan us"
(or a KV pressure finding on a trace with no KV data). Such a file is one line, exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_run import run

TRACE = Path(__file__).resolve().parent / "data" / "real-traces" / "cuda-triton-example.json.gz"


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-1", "-0.5"])
def test_a_threshold_that_is_no_finite_number_of_0_or_more_is_one_line(tmp_path: Path, value: str) -> None:
    cfg = tmp_path / "findings.toml"
    cfg.write_text(f"[small_kernel_storm]\nkernel_us = {value}\n")
    res = run("analyze", TRACE, "--findings-config", cfg, "-o", tmp_path / "o", "--format", "json")
    assert res.returncode == 2, res.stdout
    said = repr(int(value)) if value.lstrip("-").isdigit() else repr(float(value))  # as TOML reads it
    lines = res.stderr.strip().splitlines()
    assert lines == [
        f"xpu_profiler: error: {cfg}: small_kernel_storm.kernel_us must be a finite number of 0 or more, not {said}"
    ]
    assert not (tmp_path / "o" / "summary.json").exists()


def test_zero_and_plain_numbers_pass(tmp_path: Path) -> None:
    cfg = tmp_path / "findings.toml"
    cfg.write_text("min_at_stake = 0\n[small_kernel_storm]\nkernel_us = 3\n")
    res = run("analyze", TRACE, "--findings-config", cfg, "-o", tmp_path / "o", "--format", "json", "-q")
    assert res.returncode == 0, res.stderr
