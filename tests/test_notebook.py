"""The notebook API on real traces: ``xpu_profiler.load(path)`` → the typed Summary and each
section as a DataFrame; the expected numbers come from the traces' raw events."""

from __future__ import annotations

import gzip
import json
import re
import sys
from collections import Counter
from pathlib import Path

import pytest
from real_data import REAL

import xpu_profiler
from xpu_profiler import notebook
from xpu_profiler.exporters.validate import validate_file
from xpu_profiler.summary import Requests, Summary

pd = pytest.importorskip("pandas", reason="the notebook API's tables need pandas (the [notebook] extra)")

DECODE = REAL / "tracelens" / "sglang-qwen3-8b-decode.json.gz"  # SGLang, one decode step, MI300X
TWO_RANKS = REAL / "two-ranks"  # two ranks of one NCCL job, ProfilerStep#N steps
DEVICE_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


def _need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"real trace not found beside the checkout: {path}")
    return path


def _events(path: Path) -> list[dict]:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)["traceEvents"]


@pytest.fixture(scope="module")
def decode():
    return xpu_profiler.load(_need(DECODE))


@pytest.fixture(scope="module")
def two_ranks():
    return xpu_profiler.load(_need(TWO_RANKS))


def test_sections_are_dataframes_with_the_summary_beside_them(decode):
    assert isinstance(decode.summary, Summary)
    for name in notebook.SECTIONS:
        assert isinstance(getattr(decode, name), pd.DataFrame), name
    assert "fused_ops" in repr(decode)


def test_kernels_count_and_time_as_the_raw_events_say(decode):
    """The kernels section holds the device work by name (kernels, copies and memsets)."""
    raw = [e for e in _events(DECODE) if e.get("ph") == "X" and e.get("cat") in DEVICE_CATS]  # kernels, copies
    count = Counter(e["name"] for e in raw)
    time_ns = Counter()
    for e in raw:
        time_ns[e["name"]] += round(e["dur"] * 1000)
    k = decode.kernels
    assert len(k) == min(50, len(count))  # the top kernels: 50 of them at most
    for row in k.itertuples():
        assert row.count == count[row.name]
        assert abs(row.time_ns - time_ns[row.name]) <= row.count  # µs with 3 decimals → ns
    # ordered by time: the first row is the kernel name with the most time in the raw events
    assert k.iloc[0]["name"] == max(time_ns, key=time_ns.get)


def test_fused_ops_share_out_the_device_time(decode):
    """Op time is device work on a GPU trace: every kernel, copy and memset in the trace."""
    raw = [e for e in _events(DECODE) if e.get("ph") == "X" and e.get("cat") in DEVICE_CATS]
    device_ns = sum(round(e["dur"] * 1000) for e in raw)
    fo = decode.fused_ops
    assert abs(int(fo["time_ns"].sum()) - device_ns) <= len(raw)
    assert fo["share"].sum() == pytest.approx(1.0, abs=1e-6)
    assert fo["time_ns"].is_monotonic_decreasing
    # the per-phase dicts are columns: this trace is one decode step
    assert (fo["time_ns_by_phase.decode"] == fo["time_ns"]).all()


def test_steps_and_ranks_of_a_two_rank_job(two_ranks):
    expected_steps = {}
    for f in sorted(TWO_RANKS.glob("rank-*.json.gz")):
        with gzip.open(f, "rt") as fh:
            doc = json.load(fh)
        ids = sorted(
            int(m.group(1))
            for e in doc["traceEvents"]
            if (m := re.fullmatch(r"ProfilerStep#(\d+)", str(e.get("name"))))
        )
        expected_steps[doc["distributedInfo"]["rank"]] = ids
    steps = two_ranks.steps
    got = {r: sorted(g["step_id"].tolist()) for r, g in steps.groupby("rank")}
    assert got == expected_steps
    ranks = two_ranks.ranks
    assert sorted(ranks["rank"]) == sorted(expected_steps)
    assert dict(zip(ranks["rank"], ranks["steps"])) == {r: len(v) for r, v in expected_steps.items()}


def test_collectives_of_a_two_rank_job(two_ranks):
    """Each collective row is matched across both ranks: its count is at most the NCCL kernels
    either rank ran, and the rows together hold no more than that."""
    nccl = {}
    for f in sorted(TWO_RANKS.glob("rank-*.json.gz")):
        nccl[f.name] = sum(
            1 for e in _events(f) if e.get("cat") == "kernel" and str(e.get("name", "")).startswith("nccl")
        )
    c = two_ranks.collectives
    assert len(c) and (c["ranks"] == 2).all()
    assert 0 < c["count"].sum() <= min(nccl.values())
    assert set(c["kind"]) <= {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "send_recv"}


def test_requests_are_rows_of_the_requests_table():
    """A trace carries no requests (a live run or a server's records do): empty, with the
    columns; the table's own values come through as they are."""
    empty = notebook.columns_frame(Requests())
    assert len(empty) == 0
    table = Requests(
        req=["a", "b"],
        rank=[0, 0],
        arrival_ns=[0, 5],
        prompt_len=[10, 20],
        output_len=[3, 4],
        ttft_ns=[7, None],
        tpot_ns=[2.5, None],
        e2e_ns=[12, None],
    )
    df = notebook.columns_frame(table)
    assert list(df["req"]) == ["a", "b"] and list(df["prompt_len"]) == [10, 20]
    assert df["ttft_ns"].iloc[0] == 7 and pd.isna(df["ttft_ns"].iloc[1])


def test_report_and_trace_are_written(decode, tmp_path):
    html = decode.report(tmp_path / "r.html")
    assert html.read_text(encoding="utf-8").lstrip().lower().startswith("<!doctype html")
    trace = decode.trace(tmp_path / "t.json.gz")
    assert validate_file(trace) == []
    kernels = sum(1 for e in _events(DECODE) if e.get("ph") == "X" and e.get("cat") == "kernel")
    exported = [e for e in _events(trace) if e.get("ph") == "X" and e.get("args", {}).get("kind") == "kernel"]
    assert len(exported) == kernels


def test_a_summary_json_reads_back_without_its_trace(decode, tmp_path):
    path = decode.save_summary(tmp_path / "summary.json")
    again = xpu_profiler.load(path)
    assert again.profile is None
    pd.testing.assert_frame_equal(again.fused_ops, decode.fused_ops)
    pd.testing.assert_frame_equal(again.steps, decode.steps)
    with pytest.raises(Exception, match="holds no events"):
        again.trace(tmp_path / "t.json.gz")
    html = again.report(tmp_path / "r.html").read_text(encoding="utf-8")  # the report needs only the Summary
    assert all(op in html for op in decode.fused_ops["fused_op"])


def test_without_pandas_the_error_names_it(decode, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas → ImportError
    assert decode.summary.totals.steps == 1  # the typed Summary needs no pandas
    with pytest.raises(ModuleNotFoundError, match=r"pandas.*xpu_profiler\[notebook\]"):
        _ = decode.fused_ops
