"""Inputs as users produce them, each run through the command: every compression and archive,
the JSON dialects real writers leave (an array a crashed process never closed, a byte-order
mark), the tool's own outputs among the inputs, settings and names that are no data, mixed and
duplicate inputs, a front-end process's trace, the ``-o`` rule, and ``validate`` on a raw trace.
Each answer is a number that matches the well-formed input's, or one line (exit 2)."""

from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
import os
import shutil
import tarfile
import zipfile
from pathlib import Path

import pytest
from cli_run import invoke, one_line_error, run

import xpu_profiler
from xpu_profiler.core.errors import XpuProfilerError

DATA = Path(__file__).resolve().parent / "data" / "real-traces"
RANK0, RANK1 = DATA / "two-ranks" / "rank-0.json.gz", DATA / "two-ranks" / "rank-1.json.gz"
MI300 = DATA / "gpu-inference" / "sglang-qwen3-30b-a3b-mi300-decode.trace.json.gz"
B200 = DATA / "gpu-inference" / "vllm-gptoss-tp8-b200-rank0-eager.json.gz"


def text(path: Path) -> bytes:
    return gzip.decompress(path.read_bytes())


def summary_of(*args) -> dict:
    """``analyze ARGS`` writing its summary.json to a fresh directory: the summary."""
    out = Path(args[-1])
    res = invoke("analyze", *args[:-1], "-o", out, "--format", "json", "-q")
    assert res.exit_code == 0, res.output
    return json.loads((out / "summary.json").read_text())


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict:
    """The well-formed inputs' summaries: rank 0 alone, and both ranks."""
    d = tmp_path_factory.mktemp("ref")
    both = d / "both"
    both.mkdir()
    shutil.copy(RANK0, both / "rank0.json.gz")
    shutil.copy(RANK1, both / "rank1.json.gz")
    return {"one": summary_of(RANK0, d / "one"), "two": summary_of(both, d / "two")}


def same_numbers(a: dict, b: dict) -> None:
    for k in ("ranks", "steps", "op_time_ns", "events"):
        assert a["totals"].get(k) == b["totals"].get(k), k


@pytest.mark.parametrize("kind", ["xz", "bz2", "zst"])
def test_every_compression_reads_as_its_gzip_twin(kind, reference, tmp_path):
    raw = text(RANK0)
    packed = {"xz": lzma.compress, "bz2": bz2.compress}.get(kind)
    if packed is None:
        import zstandard

        packed = zstandard.ZstdCompressor().compress
    f = tmp_path / f"rank0.json.{kind}"
    f.write_bytes(packed(raw))
    same_numbers(summary_of(f, tmp_path / "o"), reference["one"])


def test_a_directory_of_mixed_compressions_is_every_rank(reference, tmp_path):
    """The issue's case: rank0.json.gz beside rank1.json.xz was one rank, half the events."""
    d = tmp_path / "run"
    d.mkdir()
    shutil.copy(RANK0, d / "rank0.json.gz")
    (d / "rank1.json.xz").write_bytes(lzma.compress(text(RANK1)))
    same_numbers(summary_of(d, tmp_path / "o"), reference["two"])


def test_zstandard_without_its_package_is_one_line(tmp_path, monkeypatch):
    import zstandard

    f = tmp_path / "rank0.json.zst"
    f.write_bytes(zstandard.ZstdCompressor().compress(text(RANK0)))
    monkeypatch.setitem(__import__("sys").modules, "zstandard", None)  # as where it is not installed
    res = invoke("analyze", f, "-o", tmp_path / "o")
    assert res.exit_code == 2 and "install the 'zstandard' package" in res.stderr


@pytest.mark.parametrize("kind", ["tar.gz", "zip"])
def test_an_archive_is_refused_in_one_line_and_never_dropped_silently(kind, tmp_path):
    arc = tmp_path / f"profile.{kind}"
    if kind == "zip":
        with zipfile.ZipFile(arc, "w") as z:
            z.write(RANK0, "rank0.json.gz")
    else:
        with tarfile.open(arc, "w:gz") as t:
            t.add(RANK0, "profile/rank0.json.gz")
    err = one_line_error(run("analyze", arc, "-o", tmp_path / "o"))
    assert f"a {kind.split('.')[0]} archive: extract it" in err
    # inside a directory beside a trace: read the trace, and say what was left
    d = tmp_path / "run"
    d.mkdir()
    shutil.copy(RANK1, d / "rank1.json.gz")
    shutil.copy(arc, d / f"rank0.{kind}")
    res = invoke("analyze", d, "-o", tmp_path / "o2", "--format", "json")
    assert res.exit_code == 0 and f"rank0.{kind}: dropped (a {kind.split('.')[0]} archive" in res.output


def test_an_array_a_crashed_writer_left_open_is_read_with_a_warning(reference, tmp_path):
    doc = json.loads(text(RANK0))
    body = "[\n" + ",\n".join(json.dumps(e) for e in doc["traceEvents"])
    for name, tail in (("open", ",\n"), ("bare", "\n"), ("partial", ',\n{"ph": "X", "name": "half", "ts": 1')):
        f = tmp_path / f"{name}.json"
        f.write_text(body + tail)
        res = invoke("analyze", f, "-o", tmp_path / name, "--format", "json")
        assert res.exit_code == 0, res.output
        assert "has no closing ']'" in res.output and ("partial event" in res.output) == (name == "partial")
        s = json.loads((tmp_path / name / "summary.json").read_text())
        assert s["totals"]["op_time_ns"] == reference["one"]["totals"]["op_time_ns"]


def test_a_utf8_byte_order_mark_is_ignored(reference, tmp_path):
    f = tmp_path / "bom.json"
    f.write_bytes(b"\xef\xbb\xbf" + text(RANK0))
    same_numbers(summary_of(f, tmp_path / "o"), reference["one"])
    g = tmp_path / "bom.json.gz"
    g.write_bytes(gzip.compress(b"\xef\xbb\xbf" + text(RANK0)))
    same_numbers(summary_of(g, tmp_path / "o2"), reference["one"])


def test_our_own_perfetto_trace_is_never_an_input(reference, tmp_path):
    """Written into the input directory under any name, it is skipped (not a third rank); named
    alone it is one line."""
    d = tmp_path / "run"
    d.mkdir()
    shutil.copy(RANK0, d / "rank0.json.gz")
    shutil.copy(RANK1, d / "rank1.json.gz")
    assert invoke("analyze", d, "-o", tmp_path / "first", "--format", "perfetto", "-q").exit_code == 0
    shutil.copy(tmp_path / "first" / "trace.json.gz", d / "rank2.pt.trace.json.gz")
    res = invoke("analyze", d, "-o", tmp_path / "again", "--format", "json")
    assert res.exit_code == 0 and "rank2.pt.trace.json.gz: skipped (a Perfetto trace xpu_profiler wrote" in res.output
    same_numbers(json.loads((tmp_path / "again" / "summary.json").read_text()), reference["two"])
    err = one_line_error(run("analyze", d / "rank2.pt.trace.json.gz", "-o", tmp_path / "o"))
    assert "an output, never an input" in err


@pytest.mark.parametrize(
    "spec, problem",
    [
        ({"cuda:B200": {"peak_flops": {"bf16": "fast"}}}, "peak_flops.bf16 must be a number"),
        ({"cuda:B200": {"mem_bw_bytes_s": -8e12}}, "mem_bw_bytes_s must be a positive number"),
        ({"cuda:B200": {"mem_bytes": 0}}, "mem_bytes must be a positive number"),
        ({"cuda:B200": {"name": 5}}, "name must be a string"),
    ],
)
def test_device_spec_values_are_checked(spec, problem, tmp_path):
    f = tmp_path / "spec.json"
    f.write_text(json.dumps(spec))
    assert problem in one_line_error(run("analyze", B200, "--device-spec", f, "-o", tmp_path / "o"))


def test_a_device_spec_override_says_it_is_one(tmp_path):
    f = tmp_path / "myspec.json"
    f.write_text(json.dumps({"cuda:B200": {"mem_bw_bytes_s": 7.0e12}}))
    s = summary_of(B200, "--device-spec", f, tmp_path / "o")
    assert s["device"]["mem_bw_bytes_s"] == 7.0e12 and s["device"]["source"] == "override from myspec.json"


def test_a_file_name_that_is_no_utf8_is_data(tmp_path):
    name = os.fsdecode(b"rank0-\xff\xfe.json.gz")
    d = tmp_path / "run"
    d.mkdir()
    shutil.copy(RANK0, d / name)
    res = invoke("analyze", d, "-o", tmp_path / "o", "--format", "json,html,perfetto,csv")
    assert res.exit_code == 0, res.output
    s = json.loads((tmp_path / "o" / "summary.json").read_bytes().decode("utf-8"))  # valid UTF-8
    assert any("rank0-\\udcff\\udcfe.json.gz" in src["path"] for src in s["run"]["sources"])
    (tmp_path / "o" / "report.html").read_bytes().decode("utf-8")


def test_the_python_api_raises_the_packages_error_with_the_cli_line(tmp_path):
    for content in (b'{"traceEvents": [garbage', b'{"hello": 1}'):
        f = tmp_path / "garbage.json"
        f.write_bytes(content)
        err = one_line_error(run("analyze", f, "-o", tmp_path / "o"))
        with pytest.raises(XpuProfilerError) as e:
            xpu_profiler.load(f)
        assert err == f"xpu_profiler: error: {e.value}"


def test_absurd_token_counts_are_a_warning(tmp_path):
    ev = [
        {"ph": "X", "cat": "user_annotation", "name": f"execute_context_1({'9' * 25})_generation_0(0)", "pid": 1,
         "tid": 1, "ts": 0, "dur": 100},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 10, "dur": 5,
         "args": {"correlation": 1}},
        {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 20, "dur": 50,
         "args": {"correlation": 1, "device": 0, "stream": 7}},
    ]  # fmt: skip
    f = tmp_path / "t.json"
    f.write_text(json.dumps({"schemaVersion": 1, "traceEvents": ev}))
    res = invoke("analyze", f, "-o", tmp_path / "o", "--format", "json")
    assert res.exit_code == 0 and "1 step annotation(s) carry request or token counts no step can have" in res.output
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    # one prefill step (one context request), its token count unknown
    assert s["totals"]["steps"] == 1 and s["totals"]["prefill_tokens"] == 0 and s["steps"]["phase"] == ["prefill"]


@pytest.mark.parametrize("count", ["²", "1²", " ٣ ", "12"])
def test_a_collectives_count_in_unicode_digits_is_read_or_unknown(count, tmp_path):
    """``str.isdigit`` takes ``²``, ``int`` does not: a count written with it is unknown (-1),
    never a traceback; a string ``int`` reads (any script's decimal digits) is its number."""
    ev = [
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 10, "dur": 5,
         "args": {"correlation": 1}},
        {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "pid": 0, "tid": 7,
         "ts": 20, "dur": 50, "args": {"correlation": 1, "device": 0, "stream": 7}},
        {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 1, "ts": 9, "dur": 8,
         "args": {"Collective name": "allreduce", "In msg nelems": count, "Out msg nelems": count,
                  "Group size": 2, "Seq": count, "dtype": "Float", "Process Group Name": "0"}},
    ]  # fmt: skip
    f = tmp_path / "t.json"
    f.write_text(json.dumps({"schemaVersion": 1, "traceEvents": ev}, ensure_ascii=False), encoding="utf-8")
    res = invoke("analyze", f, "-o", tmp_path / "o", "--format", "json")
    assert res.exit_code == 0, res.output
    assert "Traceback" not in res.output
    prof = xpu_profiler.load(f).profile
    want = {"²": -1, "1²": -1, " ٣ ": 3, "12": 12}[count]
    assert prof.comms["in_nelems"].tolist() == [want] and prof.comms["seq"].tolist() == [want]


def test_traces_of_two_devices_are_two_runs_not_two_ranks(tmp_path):
    d = tmp_path / "mixed"
    d.mkdir()
    shutil.copy(B200, d / "rank0-b200.json.gz")
    shutil.copy(MI300, d / "rank0-mi300.json.gz")
    err = one_line_error(run("analyze", d, "-o", tmp_path / "o"))
    assert "a trace of another run" in err and "AMD Instinct MI300X" in err and "NVIDIA B200" in err


def test_two_copies_of_one_file_are_refused(tmp_path):
    d = tmp_path / "dup"
    d.mkdir()
    shutil.copy(RANK0, d / "rank0.json.gz")
    shutil.copy(RANK0, d / "rank0 (copy).json.gz")
    err = one_line_error(run("analyze", d, "-o", tmp_path / "o"))
    assert "identical content" in err


def test_one_file_reached_twice_is_read_once(reference, tmp_path):
    """Named twice, or found again through a link: one rank, and a note."""
    d = tmp_path / "run"
    d.mkdir()
    shutil.copy(RANK0, d / "rank0.json.gz")
    os.symlink(d / "rank0.json.gz", d / "latest.json.gz")
    res = invoke("analyze", d, d / "rank0.json.gz", "-o", tmp_path / "o", "--format", "json")
    assert res.exit_code == 0 and "read once" in res.output
    same_numbers(json.loads((tmp_path / "o" / "summary.json").read_text()), reference["one"])


def test_vllms_front_end_trace_is_named_for_what_it_is(reference, tmp_path):
    """A trace of the API server process: Python frames of vLLM's engine client, nothing else."""
    frames = [
        "vllm/v1/engine/async_llm.py(420): generate",
        "vllm/v1/engine/output_processor.py(390): process_outputs",
        "vllm/v1/engine/detokenizer.py(120): update",
    ]
    ev = [
        {"ph": "X", "cat": "python_function", "name": frames[i % 3], "pid": 7, "tid": 7, "ts": 10.0 * i, "dur": 8.0}
        for i in range(300)
    ]
    d = tmp_path / "profile"
    d.mkdir()
    fe = d / "AsyncLLM.pt.trace.json.gz"
    fe.write_bytes(gzip.compress(json.dumps({"schemaVersion": 1, "traceEvents": ev}).encode()))
    err = one_line_error(run("analyze", fe, "-o", tmp_path / "o"))
    assert "vLLM's front-end process" in err and "300 Python frames" in err
    shutil.copy(RANK0, d / "rank0.json.gz")
    res = invoke("analyze", d, "-o", tmp_path / "o2", "--format", "json")
    assert res.exit_code == 0 and "AsyncLLM.pt.trace.json.gz: skipped (the trace of vLLM's front-end" in res.output
    same_numbers(json.loads((tmp_path / "o2" / "summary.json").read_text()), reference["one"])


@pytest.mark.parametrize("output", ["out.txt", "out.gz", "out.json"])
def test_an_output_name_of_no_output_is_refused_and_creates_nothing(output, tmp_path):
    err = one_line_error(run("analyze", RANK0, "-o", output, cwd=tmp_path))
    assert "a file's name, but of no output" in err and os.listdir(tmp_path) == []


@pytest.mark.parametrize("option", [("--top", "-1"), ("--top", "0"), ("--rank", "-1")])
def test_out_of_range_numbers_are_refused(option, tmp_path):
    res = run("analyze", RANK0, *option, "-o", tmp_path / "o")
    assert res.returncode == 2 and "Invalid value for" in res.stderr and "Traceback" not in res.stderr


def test_validate_warns_on_what_perfetto_imports_through_and_fails_what_it_rejects(tmp_path):
    res = run("validate", MI300)  # raw Kineto: absolute µs times, 64-bit ids, unsorted frames
    assert res.returncode == 0, res.stdout
    assert (
        "warning:" in res.stdout and "not relative to a base" in res.stdout and res.stdout.strip().endswith("warnings)")
    )
    bad = tmp_path / "bad.json"
    bad.write_bytes(io.BytesIO(b'{"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "dur": 1}]}').read())
    res = run("validate", bad)
    assert res.returncode == 1 and "ts missing or not a number" in res.stdout


def test_a_trace_whose_events_all_last_0_ns_says_so(reference, tmp_path):
    """A writer that records no durations: the counts are read (every event of the well-formed
    trace), and one warning says there is no time, rather than a report of 0 ns passing for a run."""
    doc = json.loads(text(RANK0))
    for e in doc["traceEvents"]:
        if "dur" in e:
            e["dur"] = 0
    (tmp_path / "rank0.json").write_text(json.dumps(doc))
    got = summary_of(tmp_path / "rank0.json", tmp_path / "o")
    assert got["totals"]["events"] == reference["one"]["totals"]["events"]
    assert got["totals"]["op_time_ns"] == 0
    said = [w for w in got["warnings"] if "lasts 0 ns" in w]
    assert len(said) == 1 and f"{got['totals']['events']:,} events" in said[0], got["warnings"]
    assert not [w for w in reference["one"]["warnings"] if "lasts 0 ns" in w]
