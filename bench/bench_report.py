#!/usr/bin/env python3
"""Benchmark the HTML report on a large synthetic trace.

Generates (or reuses from bench/.cache) a ~1M-event Kineto trace with
xpu_profiler/testing/gen_trace.py, analyses it, writes the self-contained HTML report, and
opens it in headless Chromium (Debian's ``chromium``, driven by playwright).
Prints the report's size (target < 8 MB) and its render time in the browser,
from navigation start until every figure is drawn (target < 3 s; the median of
``--repeat`` fresh page loads).

Usage::

    python bench/bench_report.py [--events 1000000] [--keep] [--repeat 3] [--trace FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CACHE = HERE / ".cache"
TARGET_MB = 8.0
TARGET_RENDER_S = 3.0

sys.path[:0] = [str(ROOT), str(HERE), str(ROOT / "tests")]


def ensure_trace(events: int, keep: bool, tmpdir: Path) -> Path:
    """A generated trace of ``events`` events (seed 0), reused from bench/.cache when current."""
    from xpu_profiler.testing import gen_trace

    name = f"trace_{events}_s0.json"
    for cand in (CACHE / (name + ".gz"), CACHE / name):
        exp = Path(str(CACHE / name) + ".expected.json")
        if cand.exists() and exp.exists():
            try:
                if json.loads(exp.read_text())["generator"]["source_sha256"] == gen_trace.source_hash():
                    print(f"using cached trace {cand.relative_to(ROOT)}", file=sys.stderr)
                    return cand
            except (ValueError, KeyError):
                pass
    target = (CACHE if keep else tmpdir) / (name + ".gz")
    target.parent.mkdir(parents=True, exist_ok=True)
    print(f"generating {target} ({events:,} events) ...", file=sys.stderr)
    gen_trace.generate(events, str(target), seed=0)
    return target


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--trace", type=Path, help="use this trace instead of a generated one")
    ap.add_argument("--keep", action="store_true", help="keep a generated trace in bench/.cache")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("-o", "--output", type=Path, help="also keep the report here")
    args = ap.parse_args(argv)

    from report_helpers import Browser, chromium_missing

    from xpu_profiler.analysis import summarize
    from xpu_profiler.exporters import html as html_report
    from xpu_profiler.readers import load

    with tempfile.TemporaryDirectory(prefix="bench-report-") as tmp:
        trace = args.trace or ensure_trace(args.events, args.keep, Path(tmp))
        t0 = time.perf_counter()
        profile = load([trace])
        summary = summarize(profile)
        t1 = time.perf_counter()
        report = html_report.build_report(summary)
        html = html_report.render(report)
        t2 = time.perf_counter()
        out = args.output or Path(tmp) / "report.html"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(html, encoding="utf-8")
        size = out.stat().st_size
        data = len(json.dumps(report, sort_keys=True, separators=(",", ":")))

        print(f"trace            {trace.name}: {len(profile.events):,} events, {len(profile.steps):,} steps")
        print(f"analyse          {t1 - t0:6.2f} s (load + summarize)")
        print(f"build + render   {t2 - t1:6.2f} s")
        print(
            f"HTML size        {size / 1e6:6.2f} MB (report data {data / 1e6:.2f} MB, "
            f"{len(report['figures'])} figures)  target < {TARGET_MB:.0f} MB: "
            f"{'PASS' if size < TARGET_MB * 1e6 else 'MISS'}"
        )

        why = chromium_missing()
        if why:
            print(f"render           skipped: {why}")
            return 0 if size < TARGET_MB * 1e6 else 1
        browser = Browser()
        try:
            times, walls, ready = [], [], []
            for _ in range(args.repeat):
                page = browser.page()
                w0 = time.perf_counter()
                page.goto(out.resolve().as_uri(), wait_until="load", timeout=120_000)
                page.wait_for_selector("body[data-figures-drawn]", timeout=120_000)
                walls.append(time.perf_counter() - w0)
                times.append(page.evaluate("window.XPU_DRAWN_MS") / 1000)
                ready.append(page.evaluate("window.XPU_SCRIPT_MS") / 1000)
                drawn = page.locator(".js-plotly-plot .main-svg:first-of-type").count()
                page.close()
        finally:
            browser.close()
        med = statistics.median(times)
        print(
            f"Chromium render  {med:6.2f} s median of {args.repeat} "
            f"(navigation start → {drawn} figures drawn; {', '.join(f'{t:.2f}' for t in times)}; "
            f"wall incl. load {statistics.median(walls):.2f} s)  target < {TARGET_RENDER_S:.0f} s: "
            f"{'PASS' if med < TARGET_RENDER_S else 'MISS'}"
        )
        print(
            f"  of which       {statistics.median(ready):6.2f} s until the page and plotly.js are parsed and run, "
            f"{statistics.median(t - r for t, r in zip(times, ready)):.2f} s drawing the figures"
        )
        return 0 if size < TARGET_MB * 1e6 and med < TARGET_RENDER_S else 1


if __name__ == "__main__":
    sys.exit(main())
