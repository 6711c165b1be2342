#!/usr/bin/env python3
"""Speed and memory of `xpu_profiler analyze` at scale, against the decode floor.

Each case runs in a fresh process (wall seconds and peak memory as bench_analyze.py
measures them: the process's own peak RSS, or the process tree's PSS when it forks):

  floor      a typed msgspec decode of the 7 core event fields (ph, name, cat, pid,
             tid, ts, dur) into gc=False structs; for .json.gz a streaming zlib
             decompression first
  summary    ``analyze FILE --format json``
  default    ``analyze FILE`` (Perfetto trace, summary.json, CSV, HTML report)
  pure       the summary on the pure-Python reader (.json): its summary.json must equal the
             native reader's byte for byte
  stages     the default outputs' stages timed in one process (import, read, attribute,
             summarize, export): their shares, so that the next regression is visible

on the 1M-event trace (.json and .json.gz) and, for memory, the 5M-event .json
(floor and default outputs, one run each). Ratios are against the floor of the same
input measured in the same round; the ground-truth checks of bench_analyze.py run on
every summary.json written. Prints the 1-minute load average before and after.

    python bench/bench_scale.py [--repeat 3] [--no-5m] [--events 1000000] [--big 5000000]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from xpu_profiler.testing import gen_trace

HERE = Path(__file__).resolve().parent
import bench_analyze as ba  # noqa: E402

TARGETS = {"summary": 1.0, "default": 1.5, "summary.gz": 1.0, "default.gz": 1.5}
TARGET_RSS_5M = 0.5  # peak RSS / uncompressed size on the 5M-event trace

FLOOR = r"""
import sys, zlib
import msgspec
from typing import Union

class Event(msgspec.Struct, gc=False):
    ph: str
    name: str = ""
    cat: str = ""
    pid: Union[int, str] = 0
    tid: Union[int, str] = 0
    ts: float = 0.0
    dur: float = 0.0

class Trace(msgspec.Struct):
    traceEvents: list[Event]

path = sys.argv[1]
if path.endswith(".gz"):
    d = zlib.decompressobj(31)
    parts = []
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            parts.append(d.decompress(chunk))
    parts.append(d.flush())
    data = b"".join(parts)
    del parts
else:
    with open(path, "rb") as f:
        data = f.read()
trace = msgspec.json.Decoder(Trace).decode(data)
print(f"events={len(trace.traceEvents)}")
"""


#: the stages of ``analyze FILE`` (default outputs) timed in one process: each wrapped where
#: ``analysis.run`` and ``analysis.export`` call it
STAGES = r"""
import json, sys, time
t0 = time.perf_counter()
from pathlib import Path
from xpu_profiler import aggregate, analysis, findings
from xpu_profiler.analysis import AnalyzeOptions
spent = {"import": time.perf_counter() - t0}

def timed(label, fn):
    def wrapper(*a, **k):
        t = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            spent[label] = spent.get(label, 0.0) + time.perf_counter() - t
    return wrapper

analysis.load_run = timed("read", analysis.load_run)
aggregate.attribute = timed("attribute", aggregate.attribute)
aggregate.summarize = timed("summarize", aggregate.summarize)
findings.attach = timed("summarize", findings.attach)
done = analysis.run([sys.argv[1]], AnalyzeOptions(formats=analysis.DEFAULT_FORMATS))
t = time.perf_counter()
analysis.export(done.profile, done.summary, sys.argv[2], ahead=done.ahead)
spent["export"] = time.perf_counter() - t
print(json.dumps(spent))
"""
STAGE_ORDER = ("import", "read", "attribute", "summarize", "export")


def stages(trace: Path, tmp: Path, timeout: float) -> dict[str, float]:
    """Seconds per stage of the default outputs, in one fresh process."""
    import json

    out = tmp / "out_stages"
    shutil.rmtree(out, ignore_errors=True)
    r = ba.run_measured([sys.executable, "-c", STAGES, str(trace), str(out)], timeout)
    if r["rc"] != 0:
        raise SystemExit(f"stages on {trace.name} failed (rc {r['rc']}):\n{r['stderr'][-2000:]}")
    return json.loads(r["stdout"].strip().splitlines()[-1])


def ensure(events: int, gz: bool) -> Path:
    """The cached trace (bench/.cache/, git-ignored), made by gen_trace.py when missing or stale."""
    path = ba.CACHE / f"trace_{events}_s0.json"
    exp = Path(str(path) + ".expected.json")
    ok = path.exists() and exp.exists() and (not gz or Path(str(path) + ".gz").exists())
    if ok:
        import json

        ok = json.loads(exp.read_text())["generator"]["source_sha256"] == gen_trace.source_hash()
    if not ok:
        print(f"generating {path} ({events:,} events) ...", file=sys.stderr)
        path.parent.mkdir(parents=True, exist_ok=True)
        gen_trace.generate(events, str(path), seed=0, gzip_copy=gz)
    return path


def _cases(label: str) -> tuple[str, ...]:
    """The analyze cases of an input: the pure-Python reader's only on the .json."""
    return ("summary", "default") + (("pure",) if label == "json" else ())


def run_case(kind: str, trace: Path, tmp: Path, timeout: float, tree: bool = True) -> dict:
    """One fresh process: ``floor``, ``summary``, ``default``, or ``pure`` (the summary on the
    pure-Python reader, ``XPU_PROFILER_PURE_PYTHON=1``); ``tree``: its workers' memory sampled
    (``bench_analyze.run_measured``)."""
    env = None
    if kind == "floor":
        cmd = [sys.executable, "-c", FLOOR, str(trace)]
    else:
        out = tmp / f"out_{kind}"
        shutil.rmtree(out, ignore_errors=True)
        cmd = [sys.executable, "-m", "xpu_profiler", "analyze", str(trace), "--output", str(out), "-q"]
        if kind in ("summary", "pure"):
            cmd += ["--format", "json"]
        if kind == "pure":
            env = {**os.environ, "XPU_PROFILER_PURE_PYTHON": "1"}
    r = ba.run_measured(cmd, timeout, env=env, tree=tree)
    if r["rc"] != 0:
        raise SystemExit(f"{kind} on {trace.name} failed (rc {r['rc']}):\n{r['stderr'][-2000:]}")
    if kind != "floor":
        r["summary_path"] = tmp / f"out_{kind}" / "summary.json"
    return r


def checks(r: dict, exp: dict) -> list[str]:
    import json

    s = json.loads(Path(r["summary_path"]).read_text())
    status, detail = ba.check_kernel_total(s, "summary.json", exp["kernel_dur_ns"])
    lines = [f"kernel total {status}: {detail}"]
    lines += [f"{what} {st}: {d}" for what, st, d in ba.extra_checks(s, exp)]
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--big", type=int, default=5_000_000, help="events of the memory case")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-5m", dest="big_case", action="store_false", help="skip the large memory case")
    ap.add_argument("--timeout", type=float, default=900)
    args = ap.parse_args(argv)

    import json

    ba.precompile()
    load0 = os.getloadavg()[0]
    small = ensure(args.events, gz=True)
    exp = json.loads(Path(str(small) + ".expected.json").read_text())
    size = exp["json_bytes"]
    inputs = [("json", small), ("gz", Path(str(small) + ".gz"))]
    res: dict[tuple[str, str], list[dict]] = {}
    problems: list[str] = []
    shares: list[dict[str, float]] = []
    peak: dict[tuple[str, str], float] = {}  # (input, case): peak MiB, workers included
    with tempfile.TemporaryDirectory(prefix="bench_scale_") as td:
        tmp = Path(td)
        for _ in range(args.repeat):
            for label, trace in inputs:  # alternate: background load spreads over all cases
                floor = run_case("floor", trace, tmp, args.timeout)
                res.setdefault((label, "floor"), []).append(floor)
                for kind in _cases(label):
                    r = run_case(kind, trace, tmp, args.timeout, tree=False)
                    r["ratio"] = r["wall_s"] / floor["wall_s"]
                    res.setdefault((label, kind), []).append(r)
                    for line in checks(r, exp):
                        if " PASS" not in line:
                            problems.append(f"{trace.name} {kind}: {line}")
                if label == "json":  # the two readers: one summary, byte for byte
                    native = (tmp / "out_summary" / "summary.json").read_bytes()
                    if native != (tmp / "out_pure" / "summary.json").read_bytes():
                        problems.append(
                            f"{trace.name}: summary.json differs between the native and pure-Python readers"
                        )
                    shares.append(stages(trace, tmp, args.timeout))
            for label, trace in inputs:  # the peaks: one more run each, its workers sampled
                for kind in _cases(label):
                    peak[(label, kind)] = run_case(kind, trace, tmp, args.timeout)["peak_mib"]
        big_rows = []
        if args.big_case:
            big = ensure(args.big, gz=False)
            big_exp = json.loads(Path(str(big) + ".expected.json").read_text())
            f = run_case("floor", big, tmp, args.timeout)
            d = run_case("default", big, tmp, args.timeout)
            d["ratio"] = d["wall_s"] / f["wall_s"]
            for line in checks(d, big_exp):
                if " PASS" not in line:
                    problems.append(f"{big.name} default: {line}")
            big_rows = [(big, big_exp["json_bytes"], f, d)]
    load1 = os.getloadavg()[0]

    med = lambda rs, k: statistics.median(r[k] for r in rs)  # noqa: E731
    print(f"events {exp['events']:,} ({size / 1e6:.0f} MB JSON), median of {args.repeat} fresh-process runs")
    cpus = os.cpu_count() or 1
    print(
        f"{'input':6} {'case':8} {'wall s':>7} {'x floor':>8} {'target':>7} {'CPU s':>6} {'at best':>8} "
        f"{'peak MiB':>9} {'RSS/size':>9}"
    )
    for label, _ in inputs:
        floor_wall = med(res[(label, "floor")], "wall_s")
        for kind in ("floor", "summary", "default", "pure"):
            if (label, kind) not in res:
                continue
            rs = res[(label, kind)]
            ratio = med(rs, "ratio") if kind != "floor" else 1.0
            tkey = kind + (".gz" if label == "gz" else "")
            target = TARGETS.get(tkey)
            verdict = "" if target is None else ("PASS" if ratio <= target else "MISS")
            best = med(rs, "cpu_s") / cpus / floor_wall  # the ratio its CPU time allows on these CPUs
            mib = peak.get((label, kind), med(rs, "peak_mib"))
            print(
                f"{label:6} {kind:8} {med(rs, 'wall_s'):7.2f} {ratio:8.2f} "
                f"{'' if target is None else f'<={target}':>7} {med(rs, 'cpu_s'):6.2f} {best:8.2f} "
                f"{mib:9.0f} {mib * 1048576 / size:8.2f}x {verdict}"
            )
    if shares:
        stage_s = {k: statistics.median(s.get(k, 0.0) for s in shares) for k in STAGE_ORDER}
        total = sum(stage_s.values())
        print(
            "stages of the default outputs (.json, one process, median): "
            + ", ".join(f"{k} {v:.2f} s ({v / total:.0%})" for k, v in stage_s.items())
        )
        print(
            "native and pure-Python readers: summary.json byte-identical"
            if not any("differs" in p for p in problems)
            else ""
        )
    for big, big_size, f, d in big_rows:
        rss_x = d["peak_mib"] * 1048576 / big_size
        print(
            f"{big.name}: {big_size / 1e6:.0f} MB; floor {f['wall_s']:.2f} s {f['peak_mib']:.0f} MiB; "
            f"default outputs {d['wall_s']:.2f} s ({d['ratio']:.2f}x floor), peak {d['peak_mib']:.0f} MiB = "
            f"{rss_x:.2f}x the JSON size (target <= {TARGET_RSS_5M}: {'PASS' if rss_x <= TARGET_RSS_5M else 'MISS'})"
        )
        one = peak[("json", "default")]
        print(
            f"  peak RSS of the default outputs: {one:.0f} MiB at {exp['events']:,} events, "
            f"{d['peak_mib']:.0f} MiB at {big_exp['events']:,} events"
        )
    for p in problems:
        print("CHECK", p)
    if not problems:
        print(
            "ground truth: kernel total, steps, steps by phase, device busy, kernel ns by phase PASS on every summary.json"
        )
    print(f"load average (1 min) {load0:.2f} before, {load1:.2f} after, on {os.cpu_count()} CPUs")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
