"""Every case of the generated bad-input corpus (``bad_inputs``) through the real CLI.

`xpu_profiler analyze CASE -o DIR` on each case, in this process with click's runner on
the real command (the same ``main`` and its one-line error guard; a subprocess per case
would cost the suite a minute of interpreter starts), and a sample in real subprocesses
for the exit code, stderr and peak memory as a user sees them. For every case: the
expected class and exit code, no traceback, an error is exactly one line naming the file
and the problem, a warning names the kind and the count, and every time in summary.json
is finite and non-negative.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import bad_inputs
import pytest
import real_data
from click.testing import CliRunner
from hold import run_module

from xpu_profiler.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
CASES = {c.name: c for c in bad_inputs.CASES}
if not CASES:  # (its seeds are copied into tests/data/real-traces: every checkout has them)
    pytestmark = pytest.mark.skip(reason=real_data.MISSING)
TIME_SUFFIXES = ("_ns", "_us", "_ms", "_s")
RSS_LIMIT_KB = 500_000  # a case takes under 100 MB (the largest seed is a few MB): more is a leak
#: the command's own peak memory, written as it exits: the kernel's high-water mark of this
#: process's memory (VmHWM), which starts afresh at exec. (wait4's ru_maxrss would not do: it
#: keeps the peak of the process that forked it, here a test worker that may hold gigabytes.)
PEAK_AT_EXIT = """
import atexit

def _xpu_peak(path={path!r}):
    with open("/proc/self/status") as f:
        kb = next(line.split()[1] for line in f if line.startswith("VmHWM:"))
    with open(path, "w") as f:
        f.write(kb)

atexit.register(_xpu_peak)
"""


def bad_times(node, where: str = "") -> list[str]:
    """Keys of summary.json that hold a time that is negative, NaN or infinite."""
    out = []
    if isinstance(node, dict):
        for k, v in node.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool) and k.endswith(TIME_SUFFIXES):
                if not math.isfinite(v) or v < 0:
                    out.append(f"{where}.{k}={v}")
            else:
                out += bad_times(v, f"{where}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += bad_times(v, f"{where}[{i}]")
    elif isinstance(node, float) and not math.isfinite(node):
        out.append(f"{where}={node}")
    return out


def check(case, path: Path, out: Path, code: int, stderr: str) -> None:
    lines = stderr.strip().splitlines()
    assert "Traceback" not in stderr, stderr
    if case.expect == "error":
        assert code == 2, (code, stderr)
        assert len(lines) == 1, stderr
        assert lines[0].startswith(f"xpu_profiler: error: {path}"), lines[0]
        assert case.text.lower() in lines[0].lower(), (case.text, lines[0])
        assert not (out / "summary.json").exists()
        return
    assert code == 0, (code, stderr)
    warnings = [x for x in lines if x.startswith("warning: ")]
    assert len(warnings) == len(lines), stderr  # nothing on stderr but warnings
    if case.expect == "ok_warn":
        assert any(case.text in w for w in warnings), (case.text, warnings)
    else:  # nothing about the input was skipped, dropped or ignored
        assert not [w for w in warnings if any(x in w for x in ("skipped", "dropped", "ignored"))], warnings
    summary = json.loads((out / "summary.json").read_text())
    assert bad_times(summary) == []
    if case.name.startswith("ranks_") and case.expect == "ok_warn":
        dropped = summary["dropped_inputs"]
        assert dropped and all(d["reason"] and Path(d["path"]).name.startswith("rank-") for d in dropped)
        assert {d["rank"] for d in dropped} <= {2, 3}
        assert sorted(r["rank"] for r in summary["ranks"]) == [0, 1]


@pytest.mark.parametrize("name", sorted(CASES))
def test_case_in_process(name: str, tmp_path: Path) -> None:
    case = CASES[name]
    path = case.build(tmp_path / "in")
    out = tmp_path / "out"
    res = CliRunner().invoke(main, ["analyze", str(path), "-o", str(out), "--format", "json", "--engine", "serial"])
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise AssertionError(f"{name}: uncaught {type(res.exception).__name__}: {res.exception}")
    check(case, path, out, res.exit_code, res.stderr)


SUBPROCESS_SAMPLE = (
    "truncated_0.5",
    "kineto_three_kinds",
    "ranks_one_gzip_truncated",
    "bundle_events_kind_99",
    "xprofiler_dur_nan",
    "xpurt_number_thousand_digits",
)


@pytest.mark.parametrize("name", SUBPROCESS_SAMPLE)
def test_case_in_subprocess(name: str, tmp_path: Path) -> None:
    """As a user runs it: all outputs, a real exit code and stderr, bounded memory."""
    case = CASES[name]
    path = case.build(tmp_path / "in")
    out = tmp_path / "out"
    peak = tmp_path / "peak_kb"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, *run_module(PEAK_AT_EXIT.format(path=str(peak))), "analyze", str(path), "-o", str(out)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    check(case, path, out, proc.returncode, proc.stderr.decode())
    if case.expect != "error":
        assert {"summary.json", "report.html", "trace.json.gz"} <= {p.name for p in out.iterdir()}
    assert 0 < int(peak.read_text()) < RSS_LIMIT_KB, peak.read_text()


def test_corpus_size_and_classes() -> None:
    """The corpus keeps its breadth: enough cases of each class and of each reader."""
    by_class = {k: sum(c.expect == k for c in CASES.values()) for k in ("error", "ok_warn", "ok")}
    assert len(CASES) >= 150 and min(by_class.values()) >= 30, by_class
    for prefix in ("kineto_", "truncated_", "xpurt_", "xprofiler_", "bundle_", "ranks_"):
        assert sum(n.startswith(prefix) for n in CASES) >= 5, prefix
