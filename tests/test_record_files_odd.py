"""A server's record directory as damage or another program leaves it: a line that is no record
or a row of odd shape is skipped and counted (the other lines read), a FIFO or a device named
like a record file is no input (never opened: a FIFO would hang the read, /dev/zero fill
memory), a torch trace the records name that is missing or no regular file is a warning."""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path

import pytest
from cli_run import invoke

from xpu_profiler.testing import gen_trace

BASE = 10**18
RECORD = "EngineCore-1.records.jsonl"


def sched(i: int) -> list:
    return [i, BASE + i * 2000, BASE + i * 2000 + 100, BASE + i * 2000 + 1000, 0, 2, 0, 2, 2, 0, 0.5, 0, 1]


def batch(steps: range, **extra) -> dict:
    return {"pid": 1, "process": "EngineCore", "run": "r1", "sched": [sched(i) for i in steps], "worker": []} | {
        "counters": [],
        "requests": [],
        **extra,
    }


def analysed(path: Path, out: Path) -> dict:
    res = invoke("analyze", path, "-o", out, "--format", "json", "-q")
    assert res.exit_code == 0, res.output
    return json.loads((out / "summary.json").read_text())


ODD_LINES = {
    "null": None,
    "a list": [1, 2, 3],
    "a number": 42,
    "a text": "x",
    "a list for its run": batch(range(9, 10), run=[1]),
    "a list for its sched": batch(range(0), sched={"a": 1}),
    "odd hooks": batch(range(9, 10), errors={"hook": 3}),
    "odd meta": batch(range(9, 10), meta={"engine": [1]}),
    "a place without its rank": batch(range(9, 10), place={"tp": 1}),
    "a rank beyond int32": batch(range(9, 10), place={"dp": 0, "world": 1, "rank": 2**40}),
    "NaN hook time": batch(range(9, 10), hook_ns=math.nan),
    "an error of three fields": batch(range(9, 10), errors={"hook": [1, "m", "x"]}),
    "a number for its run": batch(range(9, 10), run=7),
    "a NUL in a torch file": batch(range(9, 10), torch_files=["a\u0000b"]),
    "a warning that is no text": batch(range(9, 10), warnings=[1]),
}
DEEP = "[" * 100_000 + "]" * 100_000  # (a line nested deeper than Python's parser goes)
ODD_ROWS = {
    "too few fields": [3, BASE],
    "a text for a time": [3, "soon", *sched(3)[2:]],
    "a null": [3, None, *sched(3)[2:]],
    "NaN": [3, math.nan, *sched(3)[2:]],
    "beyond int64": [3, 10**30, *sched(3)[2:]],
    "true for a count": [3, BASE, BASE + 1, BASE + 2, True, *sched(3)[5:]],
    "a token count beyond int32": [3, BASE, BASE + 1, BASE + 2, 2**62, *sched(3)[5:]],
    "a time beyond any clock": [3, -(2**62) - 1, *sched(3)[2:]],
}


def test_the_hooks_own_rows_with_an_unknown_kv_usage_are_read(tmp_path):
    """Where vLLM does not tell the KV cache usage the hooks write NaN (``append_batch``): the
    rows are the run's steps, never odd ones."""
    from xpu_profiler.core.records import append_batch

    d = tmp_path / "records"
    d.mkdir()
    rows = [sched(i)[:10] + [math.nan] + sched(i)[11:] for i in range(5)]
    append_batch(str(d), batch(range(0), sched=rows, counters=[[0, "kv_cache_usage", BASE, math.nan]]))
    s = analysed(d, tmp_path / "o")
    assert s["totals"]["steps"] == 5 and not [w for w in s["warnings"] if "odd" in w or "no record" in w]


def test_odd_lines_and_rows_are_skipped_and_counted(tmp_path):
    """Two good lines (steps 0-1 and 2), every kind of line that is no record, and a line whose
    rows include every kind of odd row beside a good one (step 4): the good steps are read
    (0, 1, 2, 4), the rest counted in two warnings."""
    d = tmp_path / "records"
    d.mkdir()
    lines = [batch(range(2)), *ODD_LINES.values(), batch(range(2, 3))]
    lines.append(batch(range(4, 5)) | {"sched": [*ODD_ROWS.values(), sched(4)]})
    (d / RECORD).write_text("".join(json.dumps(x) + "\n" for x in lines) + DEEP + "\n")
    s = analysed(d, tmp_path / "o")
    assert s["totals"]["steps"] == 4
    said = [w for w in s["warnings"] if w.startswith(RECORD)]
    assert f"skipped {len(ODD_LINES) + 1} line(s) that are no record (first: a NoneType, no record)" in said[0]
    assert said[1] == f"{RECORD}: skipped row(s) of odd shape or value: {len(ODD_ROWS)} sched"
    assert len(said) == 2, said


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero"])
def test_no_regular_file_named_like_a_record_file_is_opened(tmp_path, kind):
    """Beside a rank's trace: dropped (said, with its kind), the trace analysed; it makes no
    record directory of the directory."""
    d = tmp_path / "run"
    d.mkdir()
    gen_trace.generate(2_000, str(d / "rank0.json"), seed=2)
    (d / "rank0.json.expected.json").unlink()  # (the generator's truth, no trace)
    ref = analysed(d / "rank0.json", tmp_path / "ref")
    if kind == "fifo":
        os.mkfifo(d / RECORD)
    else:
        (d / RECORD).symlink_to(kind)
    s = analysed(d, tmp_path / "o")
    assert s["totals"]["events"] == ref["totals"]["events"] and s["totals"]["steps"] == ref["totals"]["steps"]
    (drop,) = s["dropped_inputs"]
    assert drop["path"].endswith(RECORD)
    assert drop["reason"] == (
        "not a regular file (a FIFO)" if kind == "fifo" else "not a regular file (a character device)"
    )


def test_a_fifo_among_record_files_is_said_and_skipped(tmp_path):
    d = tmp_path / "records"
    d.mkdir()
    (d / RECORD).write_text(json.dumps(batch(range(3))) + "\n")
    os.mkfifo(d / "EngineCore-2.records.jsonl")
    s = analysed(d, tmp_path / "o")
    assert s["totals"]["steps"] == 3
    assert "EngineCore-2.records.jsonl: not a regular file (a FIFO), skipped" in s["warnings"]


@pytest.mark.parametrize("kind", ["missing", "fifo", "directory"])
def test_a_torch_trace_the_records_name_that_is_no_file_is_a_warning(tmp_path, kind):
    """The run's steps are read from the records; the trace named is never opened when it is
    no regular file, and a missing one is said, not passed over."""
    d = tmp_path / "records"
    d.mkdir()
    named = tmp_path / "torch" / "rank0.pt.trace.json.gz"
    if kind == "fifo":
        named.parent.mkdir()
        os.mkfifo(named)
    elif kind == "directory":
        named.mkdir(parents=True)
    (d / RECORD).write_text(json.dumps(batch(range(4), torch_files=[str(named)], torch_marks=[[0, BASE]])) + "\n")
    s = analysed(d, tmp_path / "o")
    assert s["totals"]["steps"] == 4
    (said,) = [w for w in s["warnings"] if str(named) in w]
    why = {"missing": "named by the run's records, not found", "fifo": "not a regular file (a FIFO)"}
    assert why.get(kind, "not a regular file") in said and said.endswith("its events are missing")
    shutil.rmtree(tmp_path / "torch", ignore_errors=True)


def test_a_start_time_no_calendar_holds_still_gives_a_report(tmp_path):
    """A batch saying its process started 10^25 ns before 1970: the report leaves the date out."""
    d = tmp_path / "records"
    d.mkdir()
    (d / RECORD).write_text(json.dumps(batch(range(3), started_ns=-(10**18) * 4)) + "\n")
    res = invoke("analyze", d, "-o", tmp_path / "o", "-q")
    assert res.exit_code == 0, res.output
    assert (tmp_path / "o" / "report.html").is_file()
