"""Values of options and arguments no run can mean, standard output that fails, and the Python
API given what is no path: one line (exit 2, or the package's error), never a traceback, a
directory named ``-``, the current directory taken for an empty name, or half the outputs."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_run import invoke, one_line_error, run

import xpu_profiler
from xpu_profiler.core.errors import XpuProfilerError
from xpu_profiler.testing import gen_trace


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    """A small trace and two copies of its summary.json."""
    d = tmp_path_factory.mktemp("opts")
    gen_trace.generate(3_000, str(d / "t.json"), seed=4)
    (d / "t.json.expected.json").unlink()
    res = invoke("analyze", d / "t.json", "-o", d / "s", "--format", "json", "-q")
    assert res.exit_code == 0, res.output
    for name in ("a.json", "b.json"):
        (d / name).write_bytes((d / "s" / "summary.json").read_bytes())
    return d


def _refused(res, option: str) -> None:
    assert res.exit_code == 2 and f"Invalid value for '{option}" in res.output, res.output


@pytest.mark.parametrize("value", ["inf", "nan", "-inf", "1e400", "-5"])
def test_fail_on_is_a_finite_percentage(runs, tmp_path, value):
    res = invoke("diff", runs / "a.json", runs / "b.json", "-o", tmp_path / "d", "--fail-on", value)
    _refused(res, "--fail-on")
    assert not (tmp_path / "d").exists()


@pytest.mark.parametrize(
    "args, option",
    [
        (["analyze", ""], "PATHS"),
        (["analyze", "{t}", "-o", ""], "--output"),
        (["analyze", "{t}", "--steps", ""], "--steps"),
        (["analyze", "{t}", "--model", ""], "--model"),
        (["analyze", "{t}", "--capture", ""], "--capture"),
        (["analyze", "{t}", "--baseline", ""], "--baseline"),
        (["diff", "{a}", "{b}", "-o", ""], "--output"),
        (["diff", "{a}", "{b}", "--findings-config", ""], "--findings-config"),
        (["record", "--url", "http://127.0.0.1:1", "--format", ""], "--format"),
    ],
)
def test_an_empty_value_is_refused_not_the_current_directory(runs, monkeypatch, args, option):
    monkeypatch.chdir(runs)  # (were '' the current directory, it would hold inputs)
    before = sorted(p.name for p in runs.iterdir())
    res = invoke(*[a.format(t=runs / "t.json", a=runs / "a.json", b=runs / "b.json") for a in args])
    _refused(res, option)
    assert sorted(p.name for p in runs.iterdir()) == before


def test_diff_writes_no_directory_named_dash(runs, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    err = one_line_error(invoke("diff", runs / "a.json", runs / "b.json", "-o", "-"))
    assert "--output -: the outputs are files" in err and not (tmp_path / "-").exists()


@pytest.mark.parametrize("url", ["http://[::1", "http://[zz]:80"])
def test_a_malformed_host_in_the_url_is_one_line(url):
    err = one_line_error(invoke("record", "--url", url, "--steps", "1"))
    assert f"--url {url!r}: expected http://HOST:PORT" in err


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("command", ["analyze", "diff", "validate", "--version"])
def test_a_standard_output_that_fails_is_one_line(runs, tmp_path, command):
    args = {
        "analyze": ["analyze", runs / "t.json", "-o", tmp_path / "o"],
        "diff": ["diff", runs / "a.json", runs / "b.json", "-o", tmp_path / "d"],
        "validate": ["validate", runs / "s" / "summary.json"],
        "--version": ["--version"],
    }[command]
    with open("/dev/full", "w") as full:
        r = subprocess.run([sys.executable, "-m", "xpu_profiler", *map(str, args)], stdout=full, stderr=subprocess.PIPE)
    err = r.stderr.decode()
    assert r.returncode == 2 and err.strip() == "xpu_profiler: error: standard output: No space left on device", err


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_an_error_with_standard_error_full_keeps_its_exit_status(tmp_path):
    """(``diff --fail-on`` exits 1 for a regression: a refused input must stay 2.)"""
    with open("/dev/full", "w") as full:
        r = subprocess.run([sys.executable, "-m", "xpu_profiler", "analyze", str(tmp_path / "none")], stderr=full)
    assert r.returncode == 2


def test_a_closed_standard_output_and_another_encoding_still_write_the_outputs(runs, tmp_path):
    closed = subprocess.run(
        [sys.executable, "-m", "xpu_profiler", "analyze", str(runs / "t.json"), "-o", str(tmp_path / "c")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec_fn=lambda: os.close(1),
    )
    assert closed.returncode == 0 and b"Traceback" not in closed.stderr, closed.stderr
    assert (tmp_path / "c" / "report.html").is_file()
    latin = run("analyze", runs / "t.json", "-o", tmp_path / "l", extra_env={"PYTHONIOENCODING": "latin-1"})
    assert latin.returncode == 0 and "Traceback" not in latin.stderr, latin.stderr
    assert "\\u2026" in latin.stdout  # the ellipsis of a cut name, escaped in Latin-1


def test_a_trace_name_in_capitals_is_gzip(runs, tmp_path):
    out = tmp_path / "R.TRACE.JSON.GZ"
    res = invoke("analyze", runs / "t.json", "-o", out, "--format", "perfetto", "-q")
    assert res.exit_code == 0, res.output
    assert json.loads(gzip.decompress(out.read_bytes()))["traceEvents"]


def test_validate_tells_a_surrogate_escape_from_an_escaped_backslash(tmp_path):
    base = [
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "p"}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "t"}},
    ]
    for name, surrogate in (("C:\\ud800\\x", False), ("\ud800", True), ("\\\\\udc00", True)):
        f = tmp_path / "t.json"
        f.write_text(
            json.dumps({"traceEvents": [*base, {"ph": "X", "name": name, "pid": 1, "tid": 1, "ts": 1, "dur": 1}]})
        )
        said = "a surrogate escape" in run("validate", f).stdout
        assert said == surrogate, name


def test_the_python_api_refuses_what_is_no_path_and_settings_a_summary_cannot_take(runs):
    a = xpu_profiler.load(runs / "t.json")
    for bad in (None, 5, b"r.html", ""):
        with pytest.raises(XpuProfilerError, match="path=.*give a file name"):
            a.report(bad)
    with pytest.raises(XpuProfilerError, match="findings_config=5"):
        xpu_profiler.load(runs / "t.json", findings_config=5)
    with pytest.raises(XpuProfilerError, match="steps=''"):
        xpu_profiler.load(runs / "t.json", steps="")
    for setting in ({"rank": 3}, {"findings_config": runs / "none.toml"}, {"steps": "1:2"}, {"capture": [runs]}):
        with pytest.raises(XpuProfilerError, match=f"a summary.json is read as it is; {next(iter(setting))}="):
            xpu_profiler.load(runs / "a.json", **setting)
    assert xpu_profiler.load(runs / "a.json").summary.totals.steps == a.summary.totals.steps


def test_an_analysis_shows_its_source_escaped(runs, tmp_path):
    odd = tmp_path / "\x1b]0;x\x07\x1b[31mred.json"
    odd.write_bytes((runs / "t.json").read_bytes())
    shown = repr(xpu_profiler.load(odd))
    assert "\x1b" not in shown and "\x07" not in shown and "\\x1b]0;x\\x07" in shown


@pytest.mark.parametrize(
    "edit, why",
    [
        ("negative", "phases[0].step_p50_ns is -5"),
        ("by phase", "fused_ops[0].time_ns_by_phase['decode'] is -5"),
        ("columns", "column busy_ns has 3 rows"),
    ],
)
def test_a_hand_edited_summary_with_values_no_run_has_is_refused(runs, tmp_path, edit, why):
    doc = json.loads((runs / "a.json").read_text())
    if edit == "negative":
        doc["phases"][0]["step_p50_ns"] = -5
    elif edit == "by phase":
        doc["fused_ops"][0]["time_ns_by_phase"]["decode"] = -5
    else:
        doc["steps"]["busy_ns"] = [1, 2, 3]
    (tmp_path / "e.json").write_text(json.dumps(doc))
    err = one_line_error(invoke("diff", runs / "a.json", tmp_path / "e.json", "-o", tmp_path / "d"))
    assert "e.json: not a valid summary (" in err and why in err


@pytest.mark.parametrize(
    "toml, why",
    [
        ('[[patern]]\nregex = "gemm"\nfused_op = "moe"\n', "unknown table 'patern'"),
        ('[[pattern]]\nregexp = "gemm"\nregex = "x"\nfused_op = "moe"\n', "[[pattern]] #1: unknown key 'regexp'"),
    ],
)
def test_a_misspelt_taxonomy_is_refused(runs, tmp_path, toml, why):
    (tmp_path / "tax.toml").write_text(toml)
    err = one_line_error(invoke("analyze", runs / "t.json", "--taxonomy", tmp_path / "tax.toml", "-o", tmp_path / "o"))
    assert why in err
