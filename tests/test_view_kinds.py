"""`xpu_profiler view FILE` serves what the Perfetto UI opens (a JSON trace, plain or gzip, a
Perfetto protobuf trace) and refuses, in one line naming what it is, every other file: our
bundle, summary.json, report, diff and CSV, another program's JSON, an xz file. Before, any
non-empty file was served, and the command waited for a UI that could show nothing."""

from __future__ import annotations

import gzip
import http.client
import json
import lzma
import re
import subprocess
import sys
import urllib.parse
from pathlib import Path

import pytest
from cli_run import ROOT, one_line_error, run

TRACE = Path(__file__).resolve().parent / "data" / "real-traces" / "cuda-triton-example.json.gz"
LINK = re.compile(r"^https://ui\.perfetto\.dev/#!/\?url=(http://127\.0\.0\.1:(\d+)/\S+)$")
NOT_VIEWED = "not a trace the Perfetto UI opens"


def _served(path: Path) -> None:
    """``view`` prints the link, the file's bytes come back from it, and it exits 0."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "xpu_profiler", "view", str(path), "--no-browser", "--port", "0"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            m = LINK.match(line.strip())
            if m:
                break
        else:
            raise AssertionError(f"no link: exit {proc.wait()}, {proc.stderr.read() if proc.stderr else ''}")
        url = urllib.parse.urlsplit(m.group(1))
        conn = http.client.HTTPConnection("127.0.0.1", int(m.group(2)), timeout=30)
        conn.request("GET", url.path, headers={"Origin": "https://ui.perfetto.dev"})
        r = conn.getresponse()
        assert r.status == 200 and r.read() == path.read_bytes()
        conn.close()
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _refused(path: Path) -> str:
    err = one_line_error(run("view", path, "--no-browser", "--port", "0", timeout=60))
    assert err.startswith(f"xpu_profiler: error: {path}: "), err
    return err


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("view_kinds")
    res = run("analyze", TRACE, "-o", out, "--format", "perfetto,json,csv,html,bundle", "-q")
    assert res.returncode == 0, res.stderr
    res = run("diff", out / "summary.json", out / "summary.json", "-o", out / "diff.json", "-q")
    assert res.returncode == 0, res.stderr
    return out


def test_our_trace_is_served_and_our_other_outputs_are_named(outputs):
    _served(outputs / "trace.json.gz")
    for name, what in (
        ("profile.npz", "an xpu_profiler bundle (--format bundle)"),
        ("summary.json", "an xpu_profiler summary.json"),
        ("diff.json", "an xpu_profiler diff.json"),
        ("report.html", "an HTML page (an xpu_profiler report)"),
        ("diff.html", "an HTML page (an xpu_profiler report)"),
        ("fused_ops.csv", "text that is no JSON"),
    ):
        err = _refused(outputs / name)
        assert f"{outputs / name}: {what}, {NOT_VIEWED}" in err, err


def test_json_traces_of_either_form_are_served_other_json_is_not(tmp_path):
    plain = tmp_path / "trace.json"
    plain.write_bytes(gzip.decompress(TRACE.read_bytes()))
    array = tmp_path / "array.json"
    array.write_text(json.dumps(json.loads(plain.read_text())["traceEvents"]))
    for path in (TRACE, plain, array):
        _served(path)
    other = tmp_path / "results.json"
    other.write_text(json.dumps({"rocprofiler-sdk-tool": [{"metadata": {"pid": 1}}]}))
    assert "no traceEvents array: not a Chrome trace" in _refused(other)
    xz = tmp_path / "trace.json.xz"
    xz.write_bytes(lzma.compress(plain.read_bytes()))
    assert "xz-compressed: Perfetto opens JSON traces plain or gzip-compressed" in _refused(xz)


def test_protobuf_traces_are_served_a_zip_is_not(tmp_path, outputs):
    """A Perfetto protobuf trace starts with its first packet's tag; our bundle is a zip."""
    packet = b"\x40\x01"  # TracePacket.timestamp = 1
    proto = tmp_path / "trace.pftrace"
    proto.write_bytes(b"\x0a" + bytes([len(packet)]) + packet)
    packed = tmp_path / "trace.pftrace.gz"
    packed.write_bytes(gzip.compress(proto.read_bytes()))
    for path in (proto, packed):
        _served(path)
    assert "an xpu_profiler bundle" in _refused(outputs / "profile.npz")
