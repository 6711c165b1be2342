#!/usr/bin/env python3
"""Benchmark `xpu_profiler analyze` on a large synthetic Kineto trace.

Generates (or reuses) a deterministic trace with xpu_profiler/testing/gen_trace.py, then
measures, each in a separate fresh process:

  (a) baseline: a plain typed msgspec decode of the same file (the fastest
      full parse known in Python; for .json.gz: streaming zlib + the decode);
  (b) ``python -m xpu_profiler analyze FILE --output DIR --format json`` on the
      .json: whole-process wall seconds and peak RSS;
  (c) the same on the .json.gz.

and prints a table with the ratio analyze/baseline (target <= 1.5) and peak
RSS relative to the uncompressed JSON size (target <= 2.5x), PASS/MISS per
target, and whether the analysis reports the expected total kernel time.

Usage::

    python bench/bench_analyze.py [--events 1000000] [--keep] [--repeat 3] [--profile]
                                  [--compare DIR]

Timings are medians over --repeat runs; the ratio is the median of per-run
ratios, each analyze run paired with the baseline run just before it.

``--compare DIR`` also runs analyze from another source tree (say the branch point,
``git archive BASE | tar -x -C DIR``) in every round, right after this tree's run, so
both see the same background load on a shared machine, and prints its ratio and the
change of this tree's ratio against it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from xpu_profiler.testing import gen_trace

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CACHE = HERE / ".cache"

TARGET_RATIO = 1.5  # analyze wall / baseline decode wall
TARGET_RSS_X = 2.5  # analyze peak RSS / uncompressed JSON size


# The baseline: typed msgspec decode into gc=False structs (core fields and a
# subset of args), whole process, normal interpreter exit.
BASELINE = r"""
import sys, time, zlib
import msgspec
from typing import Optional, Union

class Args(msgspec.Struct, gc=False):
    external_id: Optional[int] = msgspec.field(default=None, name="External id")
    correlation: Optional[int] = None
    stream: Optional[int] = None
    device: Optional[int] = None
    grid: Optional[tuple] = None
    block: Optional[tuple] = None
    total_allocated: Optional[int] = msgspec.field(default=None, name="Total Allocated")
    nbytes: Optional[int] = msgspec.field(default=None, name="Bytes")
    name: Optional[str] = None

class Event(msgspec.Struct, gc=False):
    ph: str
    name: str = ""
    cat: str = ""
    pid: Union[int, str] = 0
    tid: Union[int, str] = 0
    ts: float = 0.0
    dur: float = 0.0
    id: Optional[int] = None
    args: Optional[Args] = None

class Trace(msgspec.Struct):
    traceEvents: list[Event]
    distributedInfo: Optional[dict] = None

path = sys.argv[1]
t0 = time.perf_counter()
if path.endswith(".gz"):
    d = zlib.decompressobj(31)
    parts = []
    with open(path, "rb") as f:
        while True:
            chunk = f.read(1 << 20)
            if not chunk:
                break
            parts.append(d.decompress(chunk))
    parts.append(d.flush())
    data = b"".join(parts)
    del parts
else:
    with open(path, "rb") as f:
        data = f.read()
t1 = time.perf_counter()
trace = msgspec.json.Decoder(Trace).decode(data)
t2 = time.perf_counter()
kernel_ns = sum(round(e.dur * 1000) for e in trace.traceEvents if e.cat == "kernel")
print(f"events={len(trace.traceEvents)} kernel_ns={kernel_ns} read_s={t1 - t0:.3f} parse_s={t2 - t1:.3f}")
"""


def _pss_kib(pid: int) -> int:
    """Proportional set size of one process (shared pages split among their users), KiB."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _descendants(proc) -> list:
    """The process's descendants, read from /proc/PID/task/TID/children (a few files):
    psutil's ``children(recursive=True)`` reads every process's stat, which at one call
    every 20 ms takes a good share of a core away from what is measured."""
    import psutil

    out, todo = [], [proc.pid]
    try:
        while todo:
            pid = todo.pop()
            for tid in os.listdir(f"/proc/{pid}/task"):
                try:
                    with open(f"/proc/{pid}/task/{tid}/children") as f:
                        kids = [int(k) for k in f.read().split()]
                except FileNotFoundError:  # the thread ended
                    continue
                todo += kids
                out += kids
    except FileNotFoundError:
        if not os.path.exists(f"/proc/{proc.pid}/task/{proc.pid}/children"):  # no such file here
            return proc.children(recursive=True)
    except OSError:
        pass
    kids = []
    for pid in out:
        try:
            kids.append(psutil.Process(pid))
        except psutil.Error:
            pass
    return kids


def run_measured(cmd: list, timeout: float, cwd: Path = ROOT, env: dict | None = None, tree: bool = True) -> dict:
    """Run cmd in a fresh process: wall seconds, peak memory (MiB), output.

    rss_mib is the process's own peak RSS (ru_maxrss from wait4; for a process
    that forks workers it is the largest single process, not their sum). When
    the process has descendants, their memory is sampled as well: tree_rss_mib
    is the peak of the summed RSS (every 20 ms; counts pages shared after fork
    once per process) and tree_pss_mib the peak of the summed PSS (every
    250 ms; shared pages split fairly). peak_mib is the figure the targets use:
    rss_mib, or the larger of rss_mib and tree_pss_mib when workers were seen.

    ``tree=False``: no sampling of the process tree (peak_mib is rss_mib alone). Sampling
    reads every process's memory maps while it runs, which on a small machine takes CPU
    from the measured process's workers (about 0.15 s of wall time on a two-second run,
    two cores): runs timed against a floor that forks nothing are measured without it.
    """
    import psutil

    out = tempfile.TemporaryFile()
    err = tempfile.TemporaryFile()
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, cwd=str(cwd), stdout=out, stderr=err, env=None if not env else {**os.environ, **env})
    deadline = t0 + timeout
    proc = psutil.Process(p.pid)
    tree_rss = tree_pss = 0
    max_workers = 0
    next_rss = next_pss = t0
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        now = time.perf_counter()
        if now > deadline:
            p.kill()
            pid, status, ru = os.wait4(p.pid, 0)
            break
        if tree and now >= next_rss:
            next_rss = now + 0.02
            try:
                kids = _descendants(proc)
            except psutil.Error:
                kids = []
            if kids:
                max_workers = max(max_workers, len(kids))
                total = 0
                for q in [proc] + kids:
                    try:
                        total += q.memory_info().rss
                    except psutil.Error:
                        pass
                tree_rss = max(tree_rss, total)
                if now >= next_pss:
                    next_pss = now + 0.25
                    tree_pss = max(tree_pss, sum(_pss_kib(q.pid) for q in [proc] + kids) * 1024)
        time.sleep(0.005)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    out.seek(0)
    err.seek(0)
    rss = ru.ru_maxrss / 1024.0  # KiB on Linux
    return {
        "wall_s": wall,
        # user + system CPU of the process and the workers it waited for: less sensitive
        # than wall time to other work on a shared machine
        "cpu_s": ru.ru_utime + ru.ru_stime,
        "rss_mib": rss,
        "workers": max_workers,
        "tree_rss_mib": tree_rss / 1048576.0,
        "tree_pss_mib": tree_pss / 1048576.0,
        "peak_mib": max(rss, tree_pss / 1048576.0) if max_workers else rss,
        "rc": p.returncode,
        "timed_out": wall > timeout,
        "stdout": out.read().decode(errors="replace"),
        "stderr": err.read().decode(errors="replace"),
    }


def precompile() -> None:
    """Byte-compile the package once, as an install does: with PYTHONDONTWRITEBYTECODE set
    every measured process would compile its modules again (a few tenths of a second)."""
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(ROOT / "xpu_profiler")], capture_output=True, check=False
    )


def analyze_available() -> bool:
    r = subprocess.run(
        [sys.executable, "-m", "xpu_profiler", "analyze", "--help"], cwd=str(ROOT), capture_output=True, text=True
    )
    return r.returncode == 0


def ensure_trace(events: int, seed: int, keep: bool, tmpdir: Path) -> Path:
    """Path of the .json (with .json.gz and .expected.json beside it)."""
    name = f"trace_{events}_s{seed}.json"
    cached = CACHE / name
    exp_path = Path(str(cached) + ".expected.json")
    if cached.exists() and Path(str(cached) + ".gz").exists() and exp_path.exists():
        try:
            exp = json.loads(exp_path.read_text())
            if exp["generator"]["source_sha256"] == gen_trace.source_hash():
                print(f"using cached trace {cached.relative_to(ROOT)}", file=sys.stderr)
                return cached
        except (ValueError, KeyError):
            pass
    target = cached if keep else tmpdir / name
    target.parent.mkdir(parents=True, exist_ok=True)
    print(f"generating {target} ({events:,} events) ...", file=sys.stderr)
    gen_trace.generate(events, str(target), seed=seed, gzip_copy=True)
    return target


def _walk(obj, prefix=""):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _walk(v, f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj[:64]):
            yield from _walk(v, f"{prefix}[{i}]")
    else:
        yield prefix, obj


# Places the summary may report total kernel time, most specific first:
# (dotted path, unit scale to ns)
KERNEL_TOTAL_PATHS = [
    ("totals.device_kernel_ns", 1),
    ("totals.kernel_ns", 1),
    ("totals.kernel_time_ns", 1),
    ("total_kernel_ns", 1),
    ("kernel_ns", 1),
    ("totals.kernel_s", 1e9),
    ("total_kernel_s", 1e9),
    ("totals.kernel_ms", 1e6),
    ("totals.kernel_us", 1e3),
]


def _load_summary(outdir: Path):
    files = sorted(outdir.rglob("*.json"), key=lambda p: (p.name != "summary.json", len(str(p))))
    for f in files:
        try:
            return f, json.loads(f.read_text())
        except ValueError:
            continue
    return None, None


def check_kernel_total(summary: dict, src: str, expected_ns: int) -> tuple:
    """(status, detail): PASS when the summary's total kernel time equals the ground truth."""
    flat = dict(_walk(summary))
    for path, scale in KERNEL_TOTAL_PATHS:
        for key, val in flat.items():
            if (key == path or key.endswith("." + path)) and isinstance(val, (int, float)):
                got = val * scale
                ok = (
                    abs(got - expected_ns) <= max(1, 1e-9 * expected_ns)
                    if scale == 1
                    else abs(got - expected_ns) <= scale / 2
                )
                return ("PASS" if ok else "MISS"), f"{src}:{key} = {val} (expected {expected_ns} ns)"
    # unknown schema: any kernel-ish number that equals the truth in ns/us/ms/s
    cands = [
        (k, v)
        for k, v in flat.items()
        if isinstance(v, (int, float)) and not isinstance(v, bool) and "kernel" in k.lower()
    ]
    for k, v in cands:
        for scale in (1, 1e3, 1e6, 1e9):
            if abs(v * scale - expected_ns) <= max(1, scale / 2):
                return "PASS", f"{src}:{k} = {v} (x{scale:g} = {expected_ns} ns)"
    return "MISS", (
        f"no total kernel time equal to {expected_ns} ns in {src}; kernel-ish keys: "
        + ", ".join(f"{k}={v}" for k, v in cands[:8])
    )


def extra_checks(summary: dict, exp: dict) -> list:
    """Further ground-truth comparisons against summary.json (schema_version 2); n/a when absent."""
    out = []

    def cmp(what, got, want):
        if got is None:
            out.append((what, "n/a", "not in the summary"))
        else:
            out.append((what, "PASS" if got == want else "MISS", f"got {got}, expected {want}"))

    totals = summary.get("totals") if isinstance(summary.get("totals"), dict) else {}
    cmp("steps", totals.get("steps"), exp["steps"])
    phases = (summary.get("steps") or {}).get("phase") if isinstance(summary.get("steps"), dict) else None
    if isinstance(phases, list):
        got = {k: phases.count(k) for k in exp["steps_by_phase"]}
        cmp("steps by phase", got, exp["steps_by_phase"])
    else:
        cmp("steps by phase", None, exp["steps_by_phase"])
    cmp("device busy ns", totals.get("device_busy_ns"), exp["device_busy_ns"])
    fused = summary.get("fused_ops")
    if isinstance(fused, list) and all(isinstance(f, dict) and "time_ns_by_phase" in f for f in fused):
        got = {}
        for f in fused:
            if f.get("fused_op") in ("memcpy", "memset"):
                continue
            for k, v in f["time_ns_by_phase"].items():
                got[k] = got.get(k, 0) + v
        want = exp["kernel_dur_ns_by_phase"]
        cmp("kernel ns by phase", {k: got.get(k, 0) for k in want}, want)
    else:
        cmp("kernel ns by phase", None, exp["kernel_dur_ns_by_phase"])
    return out


def median(vals):
    return statistics.median(vals) if vals else float("nan")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--keep", action="store_true", help="generate into bench/.cache and keep it (a cached trace is always reused)"
    )
    ap.add_argument("--repeat", type=int, default=3, help="runs per measurement; the median is reported")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per run")
    ap.add_argument("--baseline-only", action="store_true", help="measure the baseline decode only")
    ap.add_argument("--no-gz", action="store_true", help="skip the .json.gz measurements")
    ap.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    ap.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    ap.add_argument(
        "--env", action="append", default=[], metavar="KEY=VALUE", help="environment for the analyze runs (repeatable)"
    )
    ap.add_argument(
        "--compare",
        metavar="DIR",
        type=Path,
        help="also run analyze from this source tree, interleaved, and compare the ratios",
    )
    ap.add_argument(
        "--profile",
        type=int,
        nargs="?",
        const=25,
        metavar="N",
        help="also run analyze once on the .json under cProfile and print the top N functions",
    )
    a = ap.parse_args(argv)

    py = sys.executable
    env = dict(kv.split("=", 1) for kv in a.env)
    tmp = Path(tempfile.mkdtemp(prefix="xpu_bench_"))
    try:
        trace = ensure_trace(a.events, a.seed, a.keep, tmp)
        gz = Path(str(trace) + ".gz")
        exp = json.loads(Path(str(trace) + ".expected.json").read_text())
        size = trace.stat().st_size
        have_analyze = not a.baseline_only and analyze_available()
        if have_analyze:
            precompile()
        if not a.baseline_only and not have_analyze:
            print("`python -m xpu_profiler analyze` is not available: measuring the baseline only", file=sys.stderr)
        inputs = [trace] + ([] if a.no_gz else [gz])
        res = {str(p): {"baseline": [], "analyze": [], "compare": []} for p in inputs}
        outdirs = {}
        load_before = os.getloadavg()
        for i in range(a.repeat):
            for p in inputs:
                r = run_measured([py, "-c", BASELINE, str(p)], a.timeout)
                if r["rc"] != 0:
                    print(r["stderr"], file=sys.stderr)
                    raise SystemExit(f"baseline decode failed on {p}")
                res[str(p)]["baseline"].append(r)
                if have_analyze:

                    def ours() -> None:
                        od = tmp / f"out_{p.name}_{i}"
                        r = run_measured(
                            [py, "-m", "xpu_profiler", "analyze", str(p), "--output", str(od), "--format", "json"],
                            a.timeout,
                            env=env,
                        )
                        res[str(p)]["analyze"].append(r)
                        if r["rc"] == 0:
                            outdirs[str(p)] = od
                        if r["rc"] != 0:
                            print(f"analyze failed on {p} (rc {r['rc']}):\n{r['stderr'][-3000:]}", file=sys.stderr)

                    def theirs() -> None:
                        tree = str(a.compare.resolve())
                        r = run_measured(
                            [
                                py,
                                "-m",
                                "xpu_profiler",
                                "analyze",
                                str(p),
                                "--output",
                                str(tmp / f"cmp_{p.name}_{i}"),
                                "--format",
                                "json",
                            ],
                            a.timeout,
                            cwd=Path(tree),
                            env={**env, "PYTHONPATH": tree},
                        )
                        res[str(p)]["compare"].append(r)
                        if r["rc"] != 0:
                            print(f"compared analyze failed on {p}:\n{r['stderr'][-3000:]}", file=sys.stderr)

                    # the two trees take turns going first, so neither always follows the baseline
                    for run in ((ours, theirs) if i % 2 == 0 else (theirs, ours)) if a.compare else (ours,):
                        run()
                print(
                    f"  run {i + 1}/{a.repeat} {p.name}: baseline {res[str(p)]['baseline'][-1]['wall_s']:.2f} s"
                    + (f", analyze {res[str(p)]['analyze'][-1]['wall_s']:.2f} s" if have_analyze else "")
                    + (f", compared tree {res[str(p)]['compare'][-1]['wall_s']:.2f} s" if a.compare else "")
                    + f", load {os.getloadavg()[0]:.2f}",
                    file=sys.stderr,
                )

        # sanity: the baseline decode sees the same events and kernel time as the ground truth
        b0 = res[str(trace)]["baseline"][0]["stdout"]
        want = f"events={exp['events']} kernel_ns={exp['kernel_dur_ns']}"
        if not b0.startswith(want):
            print(f"WARNING: baseline decode disagrees with ground truth: {b0.strip()} vs {want}", file=sys.stderr)

        rows = []
        all_pass = True
        for p in inputs:
            rb = res[str(p)]["baseline"]
            ra = res[str(p)]["analyze"]
            base = median([r["wall_s"] for r in rb])
            row = {
                "input": p.name,
                "file_bytes": p.stat().st_size,
                "json_bytes": size,
                "events": exp["events"],
                "steps": exp["steps"],
                "baseline_s": base,
                "baseline_rss_mib": median([r["rss_mib"] for r in rb]),
                "baseline_runs_s": [round(r["wall_s"], 3) for r in rb],
            }
            if ra:
                ok_runs = [r for r in ra if r["rc"] == 0]
                if ok_runs:
                    an = median([r["wall_s"] for r in ok_runs])
                    rss = median([r["peak_mib"] for r in ok_runs])
                    workers = max(r["workers"] for r in ok_runs)
                    if workers:
                        row.update(
                            {
                                "workers": workers,
                                "main_rss_mib": median([r["rss_mib"] for r in ok_runs]),
                                "tree_rss_mib": median([r["tree_rss_mib"] for r in ok_runs]),
                                "tree_pss_mib": median([r["tree_pss_mib"] for r in ok_runs]),
                            }
                        )
                    # each analyze run is paired with the baseline run just before it (same
                    # background load); the median of the paired ratios is the robust figure
                    pairs = [r["wall_s"] / b["wall_s"] for r, b in zip(ra, rb) if r["rc"] == 0]
                    ratio = median(pairs)
                    rss_x = rss * 1048576 / size
                    src, summary = _load_summary(outdirs[str(p)])
                    if summary is None:
                        kstat, kdetail, extra = "MISS", f"no readable JSON output in {outdirs[str(p)]}", []
                    else:
                        kstat, kdetail = check_kernel_total(summary, src.name, exp["kernel_dur_ns"])
                        extra = extra_checks(summary, exp)
                    row.update(
                        {
                            "analyze_s": an,
                            "analyze_runs_s": [round(r["wall_s"], 3) for r in ok_runs],
                            "ratio": ratio,
                            "ratio_runs": [round(x, 2) for x in pairs],
                            "ratio_ok": ratio <= TARGET_RATIO,
                            "rss_mib": rss,
                            "rss_x": rss_x,
                            "rss_ok": rss_x <= TARGET_RSS_X,
                            "kernel_total": kstat,
                            "kernel_total_detail": kdetail,
                            "checks": [{"check": c, "status": st, "detail": d} for c, st, d in extra],
                        }
                    )
                    all_pass &= row["ratio_ok"] and row["rss_ok"] and kstat == "PASS"
                    rc = [(r, b) for r, b in zip(res[str(p)]["compare"], rb) if r["rc"] == 0]
                    if rc:
                        cmp_ratio = median([r["wall_s"] / b["wall_s"] for r, b in rc])
                        ours = [r for r in ra if r["rc"] == 0]
                        # per round, this tree against the other right beside it (same load)
                        row["change_paired"] = median([x["wall_s"] / y["wall_s"] for x, (y, _) in zip(ours, rc)]) - 1
                        row["change_cpu"] = median([x["cpu_s"] / y["cpu_s"] for x, (y, _) in zip(ours, rc)]) - 1
                        row["cpu_s"] = median([x["cpu_s"] for x in ours])
                        row["compare_cpu_s"] = median([y["cpu_s"] for y, _ in rc])
                        row.update(
                            {
                                "compare_s": median([r["wall_s"] for r, _ in rc]),
                                "compare_ratio": cmp_ratio,
                                "compare_rss_mib": median([r["peak_mib"] for r, _ in rc]),
                                "compare_runs_s": [round(r["wall_s"], 3) for r, _ in rc],
                                "change": ratio / cmp_ratio - 1,
                            }
                        )
                else:
                    row.update({"analyze_error": ra[-1]["stderr"][-2000:]})
                    all_pass = False
            rows.append(row)

        if env:
            print(f"\nanalyze environment: {' '.join(a.env)}")
        print_table(rows, exp, a.repeat)
        for r in rows:
            if "compare_ratio" in r:
                print(
                    f"  {r['input']}: compared tree {a.compare}: analyze {r['compare_s']:.2f} s (runs "
                    f"{r['compare_runs_s']}), ratio {r['compare_ratio']:.2f}, RSS {r['compare_rss_mib']:.0f} MiB; "
                    f"this tree's ratio {r['ratio']:.2f} (runs {r['analyze_runs_s']}): {100 * r['change']:+.1f}%; "
                    f"per round, this tree's wall over the other's: median {100 * r['change_paired']:+.1f}%, "
                    f"CPU time {r['cpu_s']:.2f} s vs {r['compare_cpu_s']:.2f} s: median {100 * r['change_cpu']:+.1f}%"
                )
        print(
            f"load average (1 min) {load_before[0]:.2f} before, {os.getloadavg()[0]:.2f} after, on "
            f"{os.cpu_count()} CPUs: a load above the CPU count means the timings are inflated"
        )
        if a.profile and have_analyze:
            profile_analyze(trace, tmp, a.profile, a.timeout, env)
        if a.json:
            Path(a.json).write_text(
                json.dumps(
                    {"expected": exp, "rows": rows, "env": env, "loadavg": [load_before[0], os.getloadavg()[0]]},
                    indent=2,
                )
                + "\n"
            )
        if a.strict and not all_pass:
            return 1
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


PROFILE_REPORT = r"""
import pstats, sys
st = pstats.Stats(sys.argv[1])
n = int(sys.argv[2])
total = max(v[3] for v in st.stats.values())
rows = sorted(st.stats.items(), key=lambda kv: kv[1][2], reverse=True)[:n]
print(f"top {n} by own time (cProfile; total {total:.2f} s, profiling overhead included)")
print(f"{'own s':>7} {'cum s':>7} {'calls':>9}  function")
for (fn, line, name), (cc, nc, tt, ct, _) in rows:
    where = fn if fn.startswith("~") else f"{fn.split('site-packages/')[-1].split('xpu_profiler/')[-1]}:{line}"
    print(f"{tt:7.3f} {ct:7.3f} {nc:9d}  {name}  ({where})")
"""


def profile_analyze(trace: Path, tmp: Path, n: int, timeout: float, env: dict | None = None) -> None:
    """One analyze run under cProfile; prints the functions with the most own time."""
    prof = tmp / "analyze.prof"
    r = run_measured(
        [
            sys.executable,
            "-m",
            "cProfile",
            "-o",
            str(prof),
            "-m",
            "xpu_profiler",
            "analyze",
            str(trace),
            "--output",
            str(tmp / "out_profile"),
            "--format",
            "json",
            "-q",
        ],
        timeout,
        env=env,
    )
    if r["rc"] != 0 or not prof.exists():
        print(f"profiling run failed (rc {r['rc']}):\n{r['stderr'][-2000:]}")
        return
    print()
    rep = subprocess.run([sys.executable, "-c", PROFILE_REPORT, str(prof), str(n)], capture_output=True, text=True)
    print(rep.stdout or rep.stderr)


def print_table(rows: list, exp: dict, repeat: int) -> None:
    print()
    print(
        f"events {exp['events']:,}  steps {exp['steps']} {exp['steps_by_phase']}  "
        f"kernels {exp['kernels']:,}  kernel time {exp['kernel_dur_ns'] / 1e9:.6f} s   "
        f"(median of {repeat} fresh-process runs)"
    )
    hdr = (
        f"{'input':<26} {'size MB':>8} {'base s':>7} {'analyze s':>9} {'ratio':>6} "
        f"{'<=' + str(TARGET_RATIO):>6} {'base RSS':>8} {'RSS MiB':>8} {'RSS/size':>8} "
        f"{'<=' + str(TARGET_RSS_X) + 'x':>7} {'kernel total':>12}"
    )
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        line = f"{r['input']:<26} {r['file_bytes'] / 1e6:>8.1f} {r['baseline_s']:>7.2f} "
        if "analyze_s" in r:
            line += (
                f"{r['analyze_s']:>9.2f} {r['ratio']:>6.2f} {'PASS' if r['ratio_ok'] else 'MISS':>6} "
                f"{r['baseline_rss_mib']:>8.0f} {r['rss_mib']:>8.0f} {r['rss_x']:>7.2f}x "
                f"{'PASS' if r['rss_ok'] else 'MISS':>7} {r['kernel_total']:>12}"
            )
        else:
            line += f"{'FAILED' if 'analyze_error' in r else 'n/a':>9} {'':>6} {'':>6} {r['baseline_rss_mib']:>8.0f}"
        print(line)
    for r in rows:
        if r.get("workers"):
            print(
                f"  {r['input']}: analyze ran {r['workers']} worker process(es): main-process peak RSS "
                f"{r['main_rss_mib']:.0f} MiB, process-tree peak PSS {r['tree_pss_mib']:.0f} MiB "
                f"(summed RSS {r['tree_rss_mib']:.0f} MiB); RSS MiB above = the larger of the first two"
            )
        if "kernel_total_detail" in r:
            print(f"  {r['input']}: kernel total {r['kernel_total']}: {r['kernel_total_detail']}")
            for c in r.get("checks", []):
                print(f"  {r['input']}: {c['check']} {c['status']}: {c['detail']}")
        if "analyze_error" in r:
            print(f"  {r['input']}: analyze failed:\n{r['analyze_error']}")
    print(
        "base = plain typed msgspec decode (whole process); ratio = median of per-run analyze/base; "
        "RSS/size = analyze peak RSS over the uncompressed JSON size, for both inputs."
    )


if __name__ == "__main__":
    sys.exit(main())
