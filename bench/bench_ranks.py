#!/usr/bin/env python3
"""Benchmark reading many rank files: serial vs a local process pool vs Ray tasks.

Generates (or reuses, in bench/.cache/) ``--ranks`` rank files of ``--events`` events
each with xpu_profiler/testing/gen_ranks.py (gzipped, as vLLM writes them), then, each in a fresh
process and interleaved over ``--repeat`` rounds, runs the analysis of the directory
with

  (a) the serial reader (the baseline),
  (b) the local process pool with ``--workers`` workers,
  (c) Ray with ``--workers`` CPUs: a local instance started in that process; the time
      to start it is reported apart from the reading (the Ray overhead, honestly:
      start-up, task scheduling and moving the columns through its object store),

and prints the read time and the whole analysis (read + summary) of each, the CPU time
of the process and its pool workers, the ratios
against serial (target: read >= 1.7x with 2 workers), whether all three write the same
summary.json bytes, and the load average of the machine before and after (a busy
machine makes the ratios worse than they are).

Usage::

    python bench/bench_ranks.py [--ranks 16] [--events 100000] [--workers 2] [--repeat 3] [--no-ray]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from xpu_profiler.testing import gen_ranks

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CACHE = HERE / ".cache"
TARGET = 1.7


# One measured run: time the read and the summary of DIR with ENGINE, write summary.json.
RUN = r"""
import hashlib, json, sys, time
engine, jobs, path, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
t0 = time.perf_counter()
from xpu_profiler import aggregate
from xpu_profiler.readers import load
from xpu_profiler.summary import encode
start_s = 0.0
if engine == "ray":
    import ray
    t = time.perf_counter()
    ray.init(num_cpus=jobs, include_dashboard=False, log_to_driver=False, configure_logging=False)
    start_s = time.perf_counter() - t
t1 = time.perf_counter()
profile = load([path], engine=engine, jobs=jobs)
t2 = time.perf_counter()
aggregate.attribute(profile)
data = encode(aggregate.summarize(profile))
t3 = time.perf_counter()
open(out, "wb").write(data)
print(json.dumps({"import_s": t1 - t0 - start_s, "ray_start_s": start_s, "read_s": t2 - t1, "summary_s": t3 - t2,
                  "events": int(len(profile.events)), "sha256": hashlib.sha256(data).hexdigest()}))
"""


def ensure_ranks(ranks: int, events: int, seed: int) -> Path:
    d = CACHE / f"ranks_{ranks}x{events}_s{seed}"
    exp = d / "expected.json"
    if exp.exists():
        try:
            if json.loads(exp.read_text())["generator"]["source_sha256"] == gen_ranks.source_hash():
                return d
        except (ValueError, KeyError):
            pass
    d.mkdir(parents=True, exist_ok=True)
    for f in d.iterdir():
        f.unlink()
    print(f"generating {ranks} rank files of ~{events:,} events in {d} ...", file=sys.stderr)
    gen_ranks.generate(
        str(d),
        ranks=ranks,
        events=events,
        seed=seed,
        slow_rank=ranks - 1,
        slow_pct=30,
        gz=True,
        collective_detail=False,
    )
    return d


def run(engine: str, jobs: int, path: Path, out: Path) -> dict:
    """One fresh process; cpu_s: its CPU time and its pool workers' (Ray's workers are not its children)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run(
        [sys.executable, "-c", RUN, engine, str(jobs), str(path), str(out)],
        cwd=str(ROOT),
        capture_output=True,
        text=True,
        timeout=3600,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        raise SystemExit(f"{engine}: failed (exit {r.returncode}):\n{r.stderr[-3000:]}")
    res = json.loads(r.stdout.strip().splitlines()[-1])
    res["cpu_s"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", type=int, default=16)
    ap.add_argument("--events", type=int, default=100_000, help="events per rank file (default 100000)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-ray", action="store_true", help="leave Ray out")
    a = ap.parse_args(argv)
    engines = ["serial", "process"] + ([] if a.no_ray else ["ray"])
    if "ray" in engines:
        try:
            import ray  # noqa: F401
        except ImportError:
            print("Ray is not installed: leaving it out (pip install 'xpu_profiler[ray]')", file=sys.stderr)
            engines.remove("ray")
    d = ensure_ranks(a.ranks, a.events, a.seed)
    size = sum(f.stat().st_size for f in d.glob("*.json.gz"))
    load_before = os.getloadavg()
    results: dict[str, list[dict]] = {e: [] for e in engines}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(a.repeat):
            for e in engines:
                res = run(e, 1 if e == "serial" else a.workers, d, Path(tmp) / f"{e}.json")
                results[e].append(res)
                print(
                    f"round {i + 1}: {e:7s} read {res['read_s']:6.2f} s, summary {res['summary_s']:5.2f} s"
                    + (f", Ray start {res['ray_start_s']:.2f} s" if e == "ray" else ""),
                    file=sys.stderr,
                )
    load_after = os.getloadavg()
    med = {
        e: {k: statistics.median(r[k] for r in rs) for k in ("read_s", "summary_s", "ray_start_s", "import_s", "cpu_s")}
        for e, rs in results.items()
    }
    hashes = {e: {r["sha256"] for r in rs} for e, rs in results.items()}
    same = len(set().union(*hashes.values())) == 1
    events = results["serial"][0]["events"]
    print(
        f"\n{a.ranks} rank files, {events:,} events in all, {size / 2**20:.1f} MiB gzipped; "
        f"{a.workers} workers; median of {a.repeat}; {os.cpu_count()} CPUs"
    )
    print(
        f"load average before {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, "
        f"after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}"
    )
    base = med["serial"]
    print(
        f"\n{'engine':8s} {'read s':>8s} {'x serial':>9s} {'best s':>7s} {'read+summary s':>15s} {'x serial':>9s} "
        f"{'start s':>8s} {'CPU s':>6s}"
    )
    for e in engines:
        m = med[e]
        whole, base_whole = m["read_s"] + m["summary_s"], base["read_s"] + base["summary_s"]
        best = min(r["read_s"] for r in results[e])
        print(
            f"{e:8s} {m['read_s']:8.2f} {base['read_s'] / m['read_s']:8.2f}x {best:7.2f} {whole:15.2f} "
            f"{base_whole / whole:8.2f}x {m['ray_start_s']:8.2f} "
            + (f"{m['cpu_s']:6.2f}" if e != "ray" else f"{'-':>6s}")
        )
    print("(best s: the fastest round; CPU s: the process and its pool workers, all of the run)")
    for e in engines[1:]:
        ratio = base["read_s"] / med[e]["read_s"]
        print(
            f"{e}: read {ratio:.2f}x serial with {a.workers} workers: "
            f"{'PASS' if ratio >= TARGET else 'MISS'} (target >= {TARGET}x)"
        )
    if "ray" in med:
        over = med["ray"]["read_s"] - med["process"]["read_s"]
        print(
            f"Ray overhead: start {med['ray']['ray_start_s']:.2f} s once, then {over:+.2f} s per read against the "
            "process pool"
        )
    differs = json.dumps({e: sorted(h) for e, h in hashes.items()})
    print(f"summary.json: {'identical bytes from every engine' if same else 'DIFFERS: ' + differs}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
