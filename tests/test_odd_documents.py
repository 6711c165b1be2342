"""Documents JSON allows and writers leave, and `validate` on what is no JSON text: a repeated
``traceEvents`` key (JSON readers take the last, Perfetto shows every one: said by both
commands, never silently half a trace), a gzip inside a gzip, Latin-1 text, another
profiler's JSON."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from cli_run import invoke, one_line_error, run

DATA = Path(__file__).resolve().parent / "data" / "real-traces"
RANK0 = DATA / "two-ranks" / "rank-0.json.gz"


def _summary(path: Path, out: Path) -> dict:
    res = invoke("analyze", path, "-o", out, "--format", "json", "-q")
    assert res.exit_code == 0, res.output
    return json.loads((out / "summary.json").read_text())


def test_a_repeated_events_key_is_said_by_analyze_and_validate(tmp_path):
    doc = json.loads(gzip.decompress(RANK0.read_bytes()))
    events = doc.pop("traceEvents")
    meta = [e for e in events if e.get("ph") == "M"]
    timed = [e for e in events if e.get("ph") != "M"]
    first, last = meta + timed[: len(timed) // 2], meta + timed[len(timed) // 2 :]
    rest = json.dumps(doc)[1:-1]
    twice = tmp_path / "twice.json"
    twice.write_text(f'{{"traceEvents": {json.dumps(first)}, "traceEvents": {json.dumps(last)}, {rest}}}')
    alone = tmp_path / "last.json"
    alone.write_text(json.dumps({"traceEvents": last, **doc}))

    got, want = _summary(twice, tmp_path / "o1"), _summary(alone, tmp_path / "o2")
    assert got["totals"] == want["totals"]  # the last array's events, as JSON readers take it
    said = [w for w in got["warnings"] if "'traceEvents' key is written 2 times" in w]
    assert len(said) == 1 and said[0].startswith("twice.json: ") and "Perfetto shows every one's" in said[0]
    assert not [w for w in want["warnings"] if "written 2 times" in w]

    res = run("validate", twice)
    assert res.returncode == 1 and "'traceEvents' is written 2 times" in res.stdout


def test_validate_refuses_what_is_no_json_text_in_one_line(tmp_path):
    text = gzip.decompress(RANK0.read_bytes())
    nested = tmp_path / "t.json.gz.gz"
    nested.write_bytes(gzip.compress(gzip.compress(text)))
    latin = tmp_path / "latin.json.gz"
    latin.write_bytes(gzip.compress(text.replace(b'"ph"', '"ph\xe9"'.encode("latin-1"), 1)))
    for path, problem in (
        (nested, "gzip-compressed inside the gzip"),
        (latin, "not UTF-8 text (byte "),
    ):
        err = one_line_error(run("validate", path))
        assert str(path) in err and problem in err, err


def test_validate_says_another_profilers_json_has_no_events_array(tmp_path):
    other = tmp_path / "results.json"
    other.write_text(json.dumps({"rocprofiler-sdk-tool": [{"metadata": {"pid": 1}}]}))
    res = run("validate", other)
    assert res.returncode == 1 and "no traceEvents array: not a Chrome trace" in res.stdout


def test_a_key_named_like_the_events_array_elsewhere_is_no_repeat(tmp_path):
    """An event's args or another top-level object holding a ``traceEvents`` key: one array."""
    doc = {
        "traceEvents": [{"name": "a", "ph": "X", "ts": 1, "dur": 2, "pid": 1, "tid": 1, "args": {"traceEvents": [1]}}],
        "otherData": {"traceEvents": []},
    }
    (tmp_path / "t.json").write_text(json.dumps(doc))
    assert "written 2 times" not in run("validate", tmp_path / "t.json").stdout


def test_events_after_a_large_object_are_read(tmp_path):
    """A Chrome trace whose first top-level key is a large object (``stackFrames`` of a few
    hundred KiB) and whose ``traceEvents`` come after it: the same trace as with the events
    first (before: refused as no supported format, its first 64 KiB holding no trace key)."""
    doc = json.loads(gzip.decompress(RANK0.read_bytes()))
    frames = {str(i): {"name": f"frame_{i}", "category": "python"} for i in range(5000)}
    late = tmp_path / "frames_first.json"
    late.write_text(json.dumps({"stackFrames": frames, **doc}))
    assert late.read_bytes().index(b'"traceEvents"') > 64 * 1024
    first = tmp_path / "events_first.json"
    first.write_text(json.dumps({**doc, "stackFrames": frames}))
    got, want = _summary(late, tmp_path / "o1"), _summary(first, tmp_path / "o2")
    assert got["totals"] == want["totals"] and got["totals"]["events"] > 0
