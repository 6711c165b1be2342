"""Kunlun inputs with numbers no run has: a rank in a log's name beyond any job's, an
XProfiler event on a device index no XPU has; and ``[XPURT_PROF]`` lines with more numbers
than either layout."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from cli_run import one_line_error, run

from xpu_profiler import analysis
from xpu_profiler.core.profile import K_KERNEL
from xpu_profiler.summary import load_summary

MANGLED = "_ZN10xblas_xpu313fc_cdnn_inferIfEEvPKT_"
#: Kunlun3 lines, "name cycles ns ns": cycles / 1.45 = ns (the P800's clock), as the runtime prints them
GOOD = [f"[XPURT_PROF] {MANGLED} {ns * 145 // 100} {ns} ns" for ns in (100_000, 20_000, 40_000)]
RANK_LIMIT = 2**20  # no real job has that many ranks (`--rank` refuses it too)


@pytest.mark.parametrize("rank", [2_000_000_000, 2**31, 2**32])
def test_a_log_whose_name_gives_a_rank_no_job_has_is_one_line(rank, tmp_path):
    log = tmp_path / f"rank_{rank}.log"
    log.write_text("\n".join(GOOD) + "\n")
    err = one_line_error(run("analyze", log, "-o", tmp_path / "o"))
    assert err.startswith(f"xpu_profiler: error: {log}: its name says rank {rank}")
    assert "Error" not in err  # (no Python exception's text)


def test_such_a_log_beside_a_rank_log_is_dropped_and_the_others_read(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "rank_0.log").write_text("\n".join(GOOD) + "\n")
    (logs / f"rank_{2**31}.log").write_text("\n".join(GOOD[:1]) + "\n")
    res = run("analyze", logs, "-o", tmp_path / "o", "--format", "json")
    assert res.returncode == 0, res.stderr
    s = load_summary(tmp_path / "o" / "summary.json")
    want_ns = sum(int(line.split()[-2]) for line in GOOD)  # "name cycles ns ns": the log's own ns
    assert s.totals.device_kernel_ns == want_ns and [r.rank for r in s.ranks] == [0]
    (dropped,) = s.dropped_inputs
    assert dropped.path == str(logs / f"rank_{2**31}.log") and dropped.rank is None
    assert dropped.reason.startswith(f"its name says rank {2**31}") and f"{RANK_LIMIT:,}" in dropped.reason


def test_lines_with_more_numbers_than_a_layout_are_counted_not_named_kernels(tmp_path):
    """``name a b c ns`` is in neither layout (``name a b ns``, ``name: N ns``): counted as
    such, never a kernel named ``name a b``."""
    odd = [f"[XPURT_PROF] {MANGLED} 145000 100000 7 ns", f"[XPURT_PROF] {MANGLED} 1 2 3 4 ns"]
    log = tmp_path / "rank_0.log"
    log.write_text("\n".join([GOOD[0], odd[0], GOOD[1], odd[1], f"[XPURT_PROF] {MANGLED}: 5000 ns"]) + "\n")
    profile, s = analysis.analyze([log])
    names = profile.strings.lookup(profile.events["name"][profile.events["kind"] == K_KERNEL])
    assert len(names) == 3 and not [n for n in names if re.search(r"\s\d+$", n)]
    # the two known lines in "name cycles ns ns", the one in "name: N ns"
    assert s.totals.device_kernel_ns == int(GOOD[0].split()[-2]) + int(GOOD[1].split()[-2]) + 5000
    assert f"rank_0.log: {len(odd)} [XPURT_PROF] line(s) in no known layout were skipped" in s.warnings


def test_an_xprofiler_event_on_a_device_index_no_xpu_has_is_skipped_and_counted(tmp_path):
    events = [{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "XPU 0"}}]
    events += [
        {"ph": "X", "cat": "KERNEL", "name": MANGLED, "pid": 1, "tid": 2, "ts": 1000.0 + 200 * i, "dur": 100.0}
        | {"args": {"device": 0, "stream": 3, "token": i}}
        for i in range(20)
    ]
    odd = dict(events[1], ts=9000.0, args={"device": 2**32, "stream": 3, "token": 99})  # a 64-bit handle
    trace = tmp_path / "xprofiler.trace.json"
    trace.write_text(json.dumps({"traceEvents": [*events, odd]}))
    kept = [e for e in events if e["ph"] == "X"]
    profile, s = analysis.analyze([trace])
    assert s.totals.device_kernel_ns == round(sum(e["dur"] for e in kept) * 1000)
    assert set(np.unique(profile.events["device"]).tolist()) == {0}
    (said,) = [w for w in s.warnings if "device index" in w]
    assert said.startswith("xprofiler.trace.json: skipped 1 event with a device index no machine has")
    assert f"#{len(events)}" in said  # the first one's index in the file
