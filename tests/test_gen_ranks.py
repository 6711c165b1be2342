"""xpu_profiler/testing/gen_ranks.py: the synthetic multi-rank traces are sane when read back, and
`xpu_profiler analyze` reads them (a directory of ranks) with the generator's numbers."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import ROOT

from xpu_profiler.testing import check_ranks, gen_ranks

RANKS, SLOW, PCT = 3, 1, 40


@pytest.fixture(scope="module")
def ranks_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("ranks")
    exp = gen_ranks.generate(
        str(out),
        ranks=RANKS,
        events=12_000,
        layers=8,
        seed=3,
        slow_rank=SLOW,
        slow_pct=PCT,
        clock_offset_s=4.0,
        gz=True,
    )
    return out, exp


def test_files_are_sane(ranks_dir):
    out, exp = ranks_dir
    assert check_ranks.check(str(out)) == []
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [f"rank-{r}.pt.trace.json.gz" for r in range(RANKS)] + ["expected.json"]
    )
    assert all(r["events"] >= 12_000 for r in exp["ranks"])


def test_clock_offsets_and_the_slow_rank(ranks_dir):
    _, exp = ranks_dir
    offs = [r["clock_offset_ns"] for r in exp["ranks"]]
    assert offs[0] == 0 and all(0 < abs(o) <= 4e9 for o in offs[1:]) and len(set(offs)) == RANKS
    by = exp["ranks"]
    fast = [r for r in by if r["rank"] != SLOW]
    # the slow rank's compute takes ~PCT % longer; it is last at (almost) every collective,
    # so the others wait for it inside their NCCL kernels and it hardly waits at all
    ratio = by[SLOW]["compute_kernel_dur_ns"] / fast[0]["compute_kernel_dur_ns"]
    assert 1 + PCT / 100 * 0.8 < ratio < 1 + PCT / 100 * 1.2
    assert all(r["nccl_wait_ns"] > 20 * by[SLOW]["nccl_wait_ns"] for r in fast)
    last = [c["last_rank"] for c in exp["collective_detail"]]
    assert last.count(SLOW) > 0.9 * len(last)
    assert len(last) == exp["collectives"]


def test_analyze_reads_the_directory(ranks_dir, tmp_path):
    out, exp = ranks_dir
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "xpu_profiler",
            "analyze",
            str(out),
            "--output",
            str(tmp_path),
            "--format",
            "json",
            "-q",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    s = json.loads((tmp_path / "summary.json").read_text())
    assert s["totals"]["ranks"] == RANKS
    got = {row["rank"]: row for row in s["ranks"]}
    for rx in exp["ranks"]:
        assert got[rx["rank"]]["steps"] == exp["steps"]
        assert got[rx["rank"]]["device_kernel_ns"] == rx["kernel_dur_ns"]
    comm = next(row for row in s["fused_ops"] if row["fused_op"] == "communication")
    assert comm["count"] == exp["collectives"] * RANKS
    assert comm["time_ns"] == sum(rx["nccl_kernel_dur_ns"] for rx in exp["ranks"])
