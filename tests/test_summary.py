"""The typed Summary contract: summary.json is its encoding, and both schema versions read back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import real_data

from xpu_profiler.summary import SCHEMA_VERSION, Summary, encode, load_summary

DATA = Path(__file__).resolve().parent / "data"
# summary.json as xpu_profiler 0.1 wrote it (schema version 1) for the trace vLLM's own
# profiler wrote on a CPU run of the built-in tiny-llama (input paths made relative).
V1 = DATA / "summary_v1_vllm_cpu.json"


def test_version_1_summaries_read_back_typed():
    raw = json.loads(V1.read_text())
    s = load_summary(V1)
    assert isinstance(s, Summary) and s.schema_version == SCHEMA_VERSION
    assert s.totals.op_time_ns == raw["totals"]["op_time_ns"] and s.totals.steps == 11
    assert [f.fused_op for f in s.fused_ops] == [f["fused_op"] for f in raw["fused_ops"]]
    gemm = next(f for f in s.fused_ops if f.fused_op == "gemm")
    raw_gemm = next(f for f in raw["fused_ops"] if f["fused_op"] == "gemm")
    assert gemm.time_ns_by_phase == raw_gemm["by_phase"]
    assert gemm.per_token_ns_by_phase == raw_gemm["per_token_ns"]
    assert s.steps.phase == raw["steps"]["phase"] and s.steps.busy_ns == raw["steps"]["busy_ns"]
    assert s.throughput.decode_tok_s == raw["throughput"]["decode_tok_s"]
    # run metadata: typed where known, the rest kept as it was
    assert s.run.step_source == "vllm_annotation"
    (src,) = s.run.sources
    assert (src.format, src.rank, src.events, src.details) == ("kineto", 0, 8837, {"world_size": 1})
    assert s.run.extra == {"dropped_events": raw["run"]["dropped_events"]}


def test_encoding_is_sorted_json_without_nan():
    s = Summary(warnings=["ü"])
    s.totals.other_share = float("nan")
    text = encode(s).decode("utf-8")
    doc = json.loads(text)
    assert doc["totals"]["other_share"] is None
    assert list(doc) == sorted(doc) and list(doc["totals"]) == sorted(doc["totals"])
    assert doc["schema_version"] == 2 and doc["warnings"] == ["ü"]


@pytest.mark.parametrize(
    "doc, problem",
    [
        ({"schema": "something else"}, "not an xpu_profiler summary"),
        ({"schema": "xpu_profiler.summary", "schema_version": 7}, "version 7 is not supported"),
        ({"schema": "xpu_profiler.summary", "schema_version": 2, "totals": {"steps": "many"}}, "not a valid summary"),
    ],
)
def test_what_is_not_a_summary_is_refused(tmp_path, doc, problem):
    p = tmp_path / "s.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=problem):
        load_summary(p)


@pytest.mark.parametrize(
    "name",
    ["two-ranks", "cuda-ns-resolution-rank0.pt.trace.json.gz", "tracelens/sglang-qwen3-8b-prefilldecode.json.gz"],
)
def test_summary_json_reads_back_equal(tmp_path, name):
    from xpu_profiler.analysis import analyze, export

    profile, summary = analyze([real_data.need(name)])
    path = export(profile, summary, tmp_path, ["json"])["json"]
    again = load_summary(path)
    assert again == summary  # nothing lost on the way, and no NaN anywhere (NaN != NaN)
    doc = json.loads(path.read_text())
    assert doc["totals"]["op_time_ns"] == summary.totals.op_time_ns > 0
    assert doc["fused_ops"][0]["time_ns_by_phase"] == summary.fused_ops[0].time_ns_by_phase


def test_run_metadata_of_an_odd_type_is_kept_not_fatal():
    from xpu_profiler.analysis import summarize
    from xpu_profiler.core.profile import Profile

    prof = Profile()
    prof.run.update(
        model="m",
        start_time_ns="yesterday",
        metrics=["throughput"],
        device_spec={"name": 3},
        sources=[{"path": "a.json", "format": "kineto", "rank": "zero", "events": 5}],
    )
    s = summarize(prof)
    assert (s.run.model, s.run.metrics, s.run.start_time_ns) == ("m", ["throughput"], None)
    assert s.run.extra["start_time_ns"] == "yesterday" and s.device is None
    (src,) = s.run.sources
    assert (src.path, src.events, src.rank, src.details) == ("a.json", 5, None, {"rank": "zero"})
    assert load_summary_roundtrip(s) == s


def load_summary_roundtrip(s):
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "summary.json"
        p.write_bytes(encode(s))
        return load_summary(p)
