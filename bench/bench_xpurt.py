#!/usr/bin/env python3
"""Read time of a large Kunlun ``[XPURT_PROF]`` log (one line per kernel, as a worker
prints them): lines per second of ``xpurt_log.read``, median over --repeat reads.

Usage::

    python bench/bench_xpurt.py [--lines 200000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from xpu_profiler.readers import ReadOptions
from xpu_profiler.readers.kunlun import xpurt_log

KERNELS = ("fc_fusion", "moe_fc", "rms_layer_norm", "paged_attention", "silu_and_mul", "kl3_all_reduce")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    rng = np.random.default_rng(3)
    ns = rng.integers(1, 5000, a.lines) * 20
    names = np.array(KERNELS)[rng.integers(0, len(KERNELS), a.lines)]
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "rank_0.log"
        p.write_text("".join(f"[XPURT_PROF] {k} {t * 29 // 20} {t} ns\n" for k, t in zip(names, ns)))
        times = []
        for _ in range(a.repeat):
            t0 = time.perf_counter()
            prof = xpurt_log.read(p, ReadOptions())
            times.append(time.perf_counter() - t0)
        assert len(prof.events) == a.lines and int(prof.events["dur"].sum()) == int(ns.sum())
    s = statistics.median(times)
    print(f"{a.lines:,} lines: {s:.2f} s (median of {a.repeat}), {a.lines / s:,.0f} lines/s")


if __name__ == "__main__":
    main()
