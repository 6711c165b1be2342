"""One set of formatters for the terminal and the report, each in its own style; names
from a trace never drive the terminal."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from xpu_profiler.cli.main import main
from xpu_profiler.core import fmt


@pytest.mark.parametrize(
    "ns, terminal, report",
    [
        (1_234_567, "1.23 ms", "1.23 ms"),
        (1_500, "1.50 us", "1.5 µs"),
        (999, "999 ns", "999 ns"),
        (123_456_789, "123.46 ms", "123 ms"),
        (1_234e9, "1234.00 s", "1,234 s"),
        (None, "-", "–"),
        (float("nan"), "-", "–"),
    ],
)
def test_times_in_both_styles(ns, terminal, report):
    assert fmt.ns(ns, fmt.TERMINAL) == terminal
    assert fmt.ns(ns, fmt.REPORT) == report


def test_sizes_counts_and_shares():
    assert fmt.size(3.5 * 2**30) == "3.5 GiB" and fmt.size(2048) == "2 KiB" and fmt.size(None) == "–"
    assert fmt.count(1234567) == "1,234,567" and fmt.count(0.5) == "0.5"
    assert fmt.pct(0.1234) == "12.3%" and fmt.pct(45.6, scale=1.0) == "45.6%"
    assert fmt.pct(None, fmt.TERMINAL) == "-"
    assert fmt.number(True) is None and fmt.number("7") == 7.0


def test_control_characters_are_shown_not_acted_on():
    assert fmt.plain("k\x1b[2J\r\n\u2028ok") == "k\\x1b[2J\\r\\n\\u2028ok"
    assert fmt.plain("naïve 内核") == "naïve 内核"
    assert fmt.clip("x" * 10, 5) == "xxxx…" and fmt.clip("abc", 5) == "abc"


def test_terminal_shows_control_characters_from_a_trace(tmp_path):
    evil = "gemm\x1b]0;pwned\x07\x1b[2J"
    ev = [{"ph": "X", "cat": "kernel", "name": evil, "pid": 0, "tid": 7, "ts": 0, "dur": 5}]
    src = tmp_path / "t.json"
    src.write_text(json.dumps({"schemaVersion": 1, "traceEvents": ev}))
    res = CliRunner().invoke(main, ["analyze", str(src), "-o", str(tmp_path / "out"), "--format", "json"])
    assert res.exit_code == 0, res.output
    assert "\x1b" not in res.output and "\x07" not in res.output
    assert "gemm\\x1b]0;pwned\\x07\\x1b[2J" in res.output
