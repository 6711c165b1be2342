"""Bad input ends with one line naming the file and the problem, exit code 2, no traceback."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from cli_run import run as run_cli

GOOD_EVENT = {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10.0, "dur": 2.0}


def trace(*events: dict) -> bytes:
    return json.dumps({"schemaVersion": 1, "traceEvents": list(events)}).encode()


def gz(data: bytes) -> bytes:
    return gzip.compress(data, mtime=0)


CASES = {
    "empty.json": (b"", "empty file"),
    "truncated.json": (trace(GOOD_EVENT, GOOD_EVENT)[:-20], "truncated JSON"),
    "corrupt.json.gz": (gz(trace(GOOD_EVENT))[:30] + b"\x00garbage" * 8, "gzip"),
    "cut.json.gz": (gz(trace(GOOD_EVENT) * 1)[:-12], "gzip"),
    "notatrace.json": (json.dumps({"hello": "world", "ph": 1}).encode(), "not"),
    "list_of_numbers.json": (b'[{"ph": 1}]', "not a valid trace"),
    "missing_ts.json": (
        trace({"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "dur": 3}),
        "no 'ts' field",
    ),
    "missing_dur.json": (
        trace({"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 3}),
        "no 'dur' field",
    ),
    "missing_ph.json": (trace({"cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 3, "dur": 1}), "no 'ph' field"),
    "wrong_type.json": (trace({**GOOD_EVENT, "dur": "long"}), "1 event with a non-numeric 'dur' (first: #0 'k')"),
    "wrong_type_pid.json": (trace({**GOOD_EVENT, "pid": [1]}), "pid"),
    "absurd_ts.json": (trace({**GOOD_EVENT, "ts": 1e300}), "time out of range"),
    "deep.json": (b'{"traceEvents": [' + b"[" * 100000 + b"]" * 100000 + b"]}", "nested too deeply"),
    "wrong_type_name.json": (trace({**GOOD_EVENT, "name": 12}), "name"),
    "nan.json": (
        trace({**GOOD_EVENT, "dur": 1})[:-2]
        + b', {"ph": "X", "name": "n", "pid": 0, "tid": 7, "ts": 1, "dur": NaN}]}'[:-1],
        "truncated JSON",
    ),
    "garbage_json.json": (trace(GOOD_EVENT)[:-3] + b"@@@}]}", "malformed JSON"),
    "negative.json": (trace({**GOOD_EVENT, "dur": -5.0}), "negative duration"),
    "binary.bin": (bytes(range(256)) * 4, "not a supported"),
    "text.log": (b"just some log line\nanother one\n", "not a supported"),
}


ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input_one_line_exit_2(name: str, tmp_path: Path) -> None:
    data, problem = CASES[name]
    path = tmp_path / name
    path.write_bytes(data)
    res = run_cli("analyze", str(path), "-o", str(tmp_path / "out"), cwd=tmp_path)
    assert res.returncode == 2, (res.stdout, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert "Traceback" not in res.stderr
    assert str(path) in lines[0]
    assert problem.lower() in lines[0].lower(), lines[0]
    assert not (tmp_path / "out").exists()


def test_missing_path(tmp_path: Path) -> None:
    res = run_cli("analyze", str(tmp_path / "nope.json"), cwd=tmp_path)
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == [
        f"xpu_profiler: error: {tmp_path / 'nope.json'}: no such file or directory"
    ]


def test_directory_without_traces(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "notes.txt").write_text("nothing to see\n")
    res = run_cli("analyze", str(tmp_path / "d"), cwd=tmp_path)
    assert res.returncode == 2
    assert "holds no trace or log file" in res.stderr


def test_odd_events_are_skipped_and_counted(tmp_path: Path) -> None:
    """A [memory] instant without a usable ts is odd, not fatal: skipped and reported."""
    path = tmp_path / "odd.json"
    path.write_bytes(
        trace(
            GOOD_EVENT, {"ph": "i", "name": "[memory]", "pid": 0, "tid": 1, "s": "t", "args": {"Total Allocated": 10}}
        )
    )
    res = run_cli("analyze", str(path), "-o", str(tmp_path / "out"), "--format", "json", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert (
        "warning: odd.json: skipped 1 event with odd [memory] args (no usable time) (first: #1 '[memory]')"
        in res.stderr.splitlines()
    )
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["totals"]["device_kernel_ns"] == 2000


def test_nan_and_negative_events_are_skipped_by_kind(tmp_path: Path) -> None:
    """NaN (which Python and Perfetto read) and negative durations: skipped, one warning per kind."""
    path = tmp_path / "nan.json"
    odd = b', {"ph": "X", "name": "n", "pid": 0, "tid": 7, "ts": 1, "dur": NaN}'
    neg = json.dumps({**GOOD_EVENT, "name": "odd_kernel", "dur": -3}).encode()
    path.write_bytes(trace(GOOD_EVENT)[:-2] + odd + b", " + neg + b", " + neg + b"]}")
    res = run_cli("analyze", str(path), "-o", str(tmp_path / "out"), "--format", "json", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    warnings = [x for x in res.stderr.splitlines() if x.startswith("warning:")]
    assert warnings == [
        "warning: nan.json: skipped 1 event with a non-finite time (NaN or Infinity) (first: #1 'n')",
        "warning: nan.json: skipped 2 events with a negative duration (first: #2 'odd_kernel')",
    ]
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["totals"]["device_kernel_ns"] == 2000


def test_lenient_where_perfetto_is(tmp_path: Path) -> None:
    """Numeric strings for times, doubles for pid/tid, string ids: Perfetto reads them, so do we."""
    path = tmp_path / "loose.json"
    path.write_bytes(
        trace(
            {**GOOD_EVENT, "ts": "10", "dur": "2.5", "tid": 7.0, "args": {"correlation": "12"}},
            {**GOOD_EVENT, "ts": 20, "pid": 2**64 + 5, "args": {"correlation": "n/a"}},
        )
    )
    res = run_cli("analyze", str(path), "-o", str(tmp_path / "out"), "--format", "json", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["totals"]["device_kernel_ns"] == 4500


def test_output_path_is_an_existing_file(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_bytes(trace(GOOD_EVENT))
    (tmp_path / "afile").write_text("x")
    res = run_cli("analyze", str(path), "-o", str(tmp_path / "afile"), cwd=tmp_path)
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == [
        f"xpu_profiler: error: {tmp_path / 'afile'}: exists and is not a directory"
    ]


def test_validate_corrupt_gzip(tmp_path: Path) -> None:
    data = bytearray(gz(trace(GOOD_EVENT)))
    data[12] ^= 0xFF
    path = tmp_path / "t.json.gz"
    path.write_bytes(bytes(data))
    res = run_cli("validate", str(path), cwd=tmp_path)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert str(path) in res.stderr


def test_unknown_format_option(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_bytes(trace(GOOD_EVENT))
    res = run_cli("analyze", str(path), "--format", "perfetto,pdf", cwd=tmp_path)
    assert res.returncode == 2
    assert "unknown output format(s) pdf" in res.stderr


def test_bad_taxonomy_file(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_bytes(trace(GOOD_EVENT))
    tax = tmp_path / "tax.toml"
    tax.write_text('[[pattern]]\nregex = "k"\nfused_op = "warp_drive"\n')
    res = run_cli("analyze", str(path), "--taxonomy", str(tax), cwd=tmp_path)
    assert res.returncode == 2
    assert str(tax) in res.stderr and "unknown fused op 'warp_drive'" in res.stderr


def test_a_rank_named_text_file_beside_the_traces_is_no_dropped_rank(tmp_path):
    """vLLM's profiler writes `rank0.profiler_out.txt` (its op table) beside each trace:
    not a trace of rank 0, so nothing is said to be missing."""
    from xpu_profiler import analysis

    real = Path(__file__).parent / "data" / "tracelens" / "vllm_decode_full" / "graph_execution.json.gz"
    (tmp_path / "rank0.pt.trace.json.gz").write_bytes(real.read_bytes())
    (tmp_path / "rank0.profiler_out.txt").write_text("Name  Self CPU %  Self CPU\n----\n")
    (tmp_path / "rank1.pt.trace.json.gz").write_bytes(b"")  # a broken trace of rank 1 is said
    _, s = analysis.analyze([tmp_path])
    assert [d.path for d in s.dropped_inputs] == [str(tmp_path / "rank1.pt.trace.json.gz")]
    assert [w for w in s.warnings if "dropped" in w] == [
        f"{tmp_path / 'rank1.pt.trace.json.gz'}: dropped (empty file); rank 1 is missing from the analysis"
    ]
