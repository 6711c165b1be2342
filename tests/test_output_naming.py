"""`analyze -o`: a directory for every output, or one output's file whose suffix names its
format with the others beside it; a file name of a format `--format` leaves out is an error
(one line, exit 2, nothing written), never a guess. The rule is one sentence in `--help`."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner
from conftest import ROOT

from xpu_profiler.cli.common import OUTPUT_RULE
from xpu_profiler.cli.main import main
from xpu_profiler.core.profile import Profile

TRACE = ROOT / "tests" / "data" / "tracelens" / "vllm_decode_full" / "graph_execution.json.gz"


def _analyze(*args) -> CliRunner.Result:
    return CliRunner().invoke(main, ["analyze", str(TRACE), "-q", *[str(a) for a in args]])


def _files(d) -> set[str]:
    return {p.name for p in d.iterdir()}


def test_a_name_that_contradicts_the_format_is_an_error(tmp_path):
    res = _analyze("-o", tmp_path / "out.json", "--format", "json")
    assert res.exit_code == 2
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("xpu_profiler: error: --output")
    assert "out.summary.json" in lines[0]  # what to name it instead
    assert _files(tmp_path) == set()


@pytest.mark.parametrize(
    "name, formats",
    [
        ("report.html", "json"),
        ("trace.json.gz", "json,csv"),
        ("fused_ops.csv", "perfetto"),
        ("p.npz", "json"),
        ("s.summary.json", "bundle"),
    ],
)
def test_every_format_name_is_refused_when_left_out(tmp_path, name, formats):
    res = _analyze("-o", tmp_path / name, "--format", formats)
    assert res.exit_code == 2, res.output
    assert "leaves" in res.output and _files(tmp_path) == set()


def test_a_named_file_puts_the_others_beside_it(tmp_path):
    res = _analyze("-o", tmp_path / "run.summary.json", "--format", "json,csv")
    assert res.exit_code == 0, res.output
    assert _files(tmp_path) == {"run.summary.json", "run.fused_ops.csv"}
    assert json.loads((tmp_path / "run.summary.json").read_text())["schema"] == "xpu_profiler.summary"

    res = _analyze("-o", tmp_path / "r" / "report.html")
    assert res.exit_code == 0, res.output
    assert _files(tmp_path / "r") == {
        "report.html",
        "report.trace.json.gz",
        "report.summary.json",
        "report.fused_ops.csv",
    }


def test_a_stemless_name_gives_the_others_their_plain_names(tmp_path):
    res = _analyze("-o", tmp_path / "summary.json", "--format", "json,perfetto")
    assert res.exit_code == 0, res.output
    assert _files(tmp_path) == {"summary.json", "trace.json.gz"}


def test_the_bundle_is_named_by_npz(tmp_path):
    res = _analyze("-o", tmp_path / "p.npz", "--format", "bundle")
    assert res.exit_code == 0, res.output
    assert _files(tmp_path) == {"p.npz"}
    assert len(Profile.load(tmp_path / "p.npz").events) > 0


def test_a_directory_holds_every_output(tmp_path):
    res = _analyze("-o", tmp_path / "out.d", "--format", "json,csv")
    assert res.exit_code == 0, res.output
    assert _files(tmp_path / "out.d") == {"summary.json", "fused_ops.csv"}


@pytest.mark.parametrize("command", ["analyze", "record"])
def test_the_rule_is_one_sentence_in_help(command):
    res = CliRunner().invoke(main, [command, "--help"], terminal_width=200)
    text = " ".join(res.output.split())
    assert " ".join(OUTPUT_RULE.split()) in text
    assert len(re.findall(r"[.;:] [A-Z]", OUTPUT_RULE)) == 0  # one sentence
