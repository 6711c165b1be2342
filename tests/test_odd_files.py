"""Files that are no plain trace file, and inputs that are one trace twice: a FIFO or a device
where a file goes, compressed streams as their tools write them (padding, concatenated frames,
trailing bytes, a cut), a broken link or a FIFO among rank files, one trace in two compressions,
a log with nothing in it, out-of-range settings, summaries that are not whole. Each is read as
its plain twin, or one line and exit 2; never a hang, a traceback or a silent drop."""

from __future__ import annotations

import gzip
import http.server
import io
import json
import lzma
import os
import re
import resource
import shutil
import sqlite3
import threading
import time
from pathlib import Path

import pytest
from cli_run import invoke, one_line_error, run

import xpu_profiler
from xpu_profiler import analysis
from xpu_profiler.core import compression
from xpu_profiler.core.errors import XpuProfilerError

DATA = Path(__file__).resolve().parent / "data" / "real-traces"
RANK0, RANK1 = DATA / "two-ranks" / "rank-0.json.gz", DATA / "two-ranks" / "rank-1.json.gz"
#: a command that would wait on a FIFO forever fails the test instead
HANG_S = 120


def _events(summary_dir: Path) -> int:
    return json.loads((summary_dir / "summary.json").read_text())["totals"]["events"]


def _memory_capped() -> None:  # a read of /dev/zero ends in MemoryError, not in the machine's swap
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))


# ---- what is no regular file ------------------------------------------------------------------


@pytest.fixture
def fifo(tmp_path) -> Path:
    f = tmp_path / "settings.json"
    os.mkfifo(f)
    return f


@pytest.mark.parametrize("option", ["--taxonomy", "--baseline", "--device-spec", "--findings-config"])
@pytest.mark.parametrize("special", ["fifo", "/dev/zero"])
def test_a_settings_file_that_is_a_fifo_or_a_device_is_one_line(option, special, fifo, tmp_path):
    path = fifo if special == "fifo" else Path(special)
    res = run("analyze", RANK0, option, path, "-o", tmp_path / "o", timeout=HANG_S, preexec_fn=_memory_capped)
    err = one_line_error(res)
    assert f"{path}: not a regular file ({'a FIFO' if special == 'fifo' else 'a character device'})" in err


@pytest.mark.parametrize("special", ["fifo", "/dev/zero"])
def test_validate_refuses_a_fifo_or_a_device(special, fifo):
    path = fifo if special == "fifo" else Path(special)
    err = one_line_error(run("validate", path, timeout=HANG_S, preexec_fn=_memory_capped))
    assert f"{path}: not a regular file" in err


def test_diff_refuses_a_fifo(fifo):
    err = one_line_error(run("diff", fifo, RANK0, timeout=HANG_S))
    assert f"{fifo}: not a regular file (a FIFO)" in err


# ---- compressed streams as their tools write them ----------------------------------------------


def _content(data: bytes, kind: str, block: int) -> bytes:
    return b"".join(part for part, _ in compression.blocks(io.BytesIO(data), kind, block))


@pytest.mark.parametrize("block", [5, 1 << 20])  # padding and magic split across reads, and not
def test_padding_and_concatenated_streams_read_as_their_tools_read_them(block):
    zstandard = pytest.importorskip("zstandard")
    a, b = b'{"traceEvents": [' * 40, b"]}" * 30
    z = zstandard.ZstdCompressor()
    cases = {
        "gzip": [gzip.compress(a) + b"\0" * 1024, gzip.compress(a) + b"\0" * 7 + gzip.compress(b)],
        "xz": [lzma.compress(a) + b"\0" * 4, lzma.compress(a) + b"\0" * 8 + lzma.compress(b)],
        "zstd": [z.compress(a), z.compress(a) + z.compress(b)],
    }
    for kind, (one, two) in cases.items():
        assert _content(one, kind, block) == a, kind
        assert _content(two, kind, block) == a + b, kind


def test_a_cut_or_a_tail_of_garbage_is_one_line_with_the_true_reason(tmp_path):
    zstandard = pytest.importorskip("zstandard")
    raw = gzip.decompress(RANK0.read_bytes())
    z = zstandard.ZstdCompressor().compress(raw)
    cases = {
        "cut.json.zst": (z[: len(z) * 6 // 10], "truncated zstd file"),
        "junk.json.zst": (z + b"junk", "corrupt zstd data"),
        "junk.json.gz": (RANK0.read_bytes() + b"garbage!", "no gzip data"),
    }
    for name, (data, reason) in cases.items():
        f = tmp_path / name
        f.write_bytes(data)
        err = one_line_error(run("analyze", f, "-o", tmp_path / "o"))
        assert f"{name}: " in err and reason in err, err


def test_two_zstd_frames_and_gzip_padding_read_as_the_plain_trace(tmp_path):
    zstandard = pytest.importorskip("zstandard")
    raw = gzip.decompress(RANK0.read_bytes())
    plain = tmp_path / "rank0.json"
    plain.write_bytes(raw)
    z = zstandard.ZstdCompressor()
    cut = len(raw) // 2
    framed = tmp_path / "framed" / "rank0.json.zst"
    padded = tmp_path / "padded" / "rank0.json.gz"
    for f, data in ((framed, z.compress(raw[:cut]) + z.compress(raw[cut:])), (padded, gzip.compress(raw) + bytes(512))):
        f.parent.mkdir()
        f.write_bytes(data)
    for f in (plain, framed, padded):
        assert invoke("analyze", f, "-o", f.parent / "out", "--format", "json", "-q").exit_code == 0
    assert _events(framed.parent / "out") == _events(padded.parent / "out") == _events(tmp_path / "out") > 0


# ---- rank files: one trace twice, a link to nothing, a FIFO -----------------------------------


def test_one_trace_plain_and_compressed_is_no_two_ranks(tmp_path):
    d = tmp_path / "run"
    d.mkdir()
    shutil.copy(RANK0, d / "rank-0.json.gz")
    (d / "rank-0.json").write_bytes(gzip.decompress(RANK0.read_bytes()))
    err = one_line_error(run("analyze", d, "-o", tmp_path / "o"))
    assert "the same trace as" in err and "identical events" in err


def test_a_broken_link_and_a_fifo_among_rank_files_are_dropped_with_their_rank(tmp_path):
    d = tmp_path / "run"
    d.mkdir()
    shutil.copy(RANK0, d / "rank-0.json.gz")
    shutil.copy(RANK1, d / "rank-1.json.gz")
    os.symlink("missing.json.gz", d / "rank-2.json.gz")
    os.mkfifo(d / "rank-3.json.gz")
    res = run("analyze", d, "-o", tmp_path / "o", "--format", "json", timeout=HANG_S)
    assert res.returncode == 0, res.stderr
    said = res.stdout + res.stderr
    assert "rank-2.json.gz: dropped (a broken link (to missing.json.gz" in said
    assert "rank 2 is missing from the analysis" in said
    assert "rank-3.json.gz: dropped (not a regular file (a FIFO))" in said
    dropped = json.loads((tmp_path / "o" / "summary.json").read_text())["dropped_inputs"]
    assert sorted(Path(x["path"]).name for x in dropped) == ["rank-2.json.gz", "rank-3.json.gz"]


# ---- a log with nothing to analyse ------------------------------------------------------------


def test_a_log_with_no_kernel_line_is_one_line_not_an_empty_report(tmp_path):
    lines = "\n".join(f"[XPURT_PROF] _ZN3foo1kEv {1450 * i} {1000 * i} ns" for i in range(1, 50))
    utf16 = tmp_path / "a" / "rank_0.log"
    utf16.parent.mkdir()
    utf16.write_bytes(("INFO start\n" + lines).encode("utf-16"))
    err = one_line_error(run("analyze", utf16, "-o", tmp_path / "o"))
    assert "rank_0.log: UTF-16 text" in err
    silent = tmp_path / "rank_1.log"
    silent.write_text("INFO engine started\nINFO nothing profiled\n")
    err = one_line_error(run("analyze", silent, "-o", tmp_path / "o"))
    assert "rank_1.log: no event to analyse" in err and "no [XPURT_PROF] lines" in err
    assert not (tmp_path / "o").exists()


# ---- settings and summaries -------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, said",
    [
        (("--rank", "99999999999999999999999"), "--rank 99999999999999999999999: no rank of a real job"),
        (("--lifetime", "0"), "Invalid value for '--lifetime'"),
        (("--format", ","), "--format ',' names no format"),
    ],
)
def test_settings_out_of_range_are_refused_naming_the_setting(args, said, tmp_path):
    res = run("analyze", RANK0, *args, "-o", tmp_path / "o")
    assert res.returncode == 2 and said in res.stderr and "Traceback" not in res.stderr
    assert "rank-0.json.gz" not in res.stderr  # the setting is at fault, not the input


@pytest.mark.parametrize(
    "doc, said",
    [
        ({"schema": "xpu_profiler.summary", "schema_version": 2}, "not a valid summary (no run, totals"),
        ({"schema": "xpu_profiler.summary", "schema_version": "2"}, "schema_version '2' is not an integer"),
    ],
)
def test_diff_refuses_a_summary_that_is_not_whole(doc, said, tmp_path):
    f = tmp_path / "base.summary.json"
    f.write_text(json.dumps(doc))
    err = one_line_error(run("diff", f, RANK0, "-o", tmp_path / "d"))
    assert f"{f.name}: {said}" in err


# ---- validate: what Perfetto opens --------------------------------------------------------------


def test_validate_names_a_file_perfetto_cannot_open_and_reads_the_array_form(tmp_path):
    raw = gzip.decompress(RANK0.read_bytes())
    xz = tmp_path / "t.json.xz"
    xz.write_bytes(lzma.compress(raw))
    assert "t.json.xz: xz-compressed: Perfetto opens JSON traces plain or gzip" in one_line_error(run("validate", xz))
    db = tmp_path / "t.sqlite"
    sqlite3.connect(db).execute("create table t (x)").connection.commit()
    assert "t.sqlite: binary content" in one_line_error(run("validate", db))
    array = tmp_path / "array.json"
    array.write_text(json.dumps(json.loads(raw)["traceEvents"]))
    res = run("validate", array)
    assert res.returncode == 0 and "traceEvents is not an array" not in res.stdout
    assert 'must start with {"traceEvents"' in res.stdout  # a warning: Perfetto imports the array form


# ---- one input twice, our own outputs among the inputs, Begin/End out of time order -----------


def test_one_path_named_twice_is_one_rank(tmp_path):
    once = invoke("analyze", RANK0, "-o", tmp_path / "a", "--format", "json", "-q")
    twice = invoke("analyze", RANK0, RANK0, "-o", tmp_path / "b", "--format", "json", "-q")
    d = tmp_path / "d"
    d.mkdir()
    shutil.copy(RANK0, d / "rank-0.json.gz")
    dir_and_file = invoke("analyze", d, d / "rank-0.json.gz", "-o", tmp_path / "c", "--format", "json", "-q")
    assert once.exit_code == twice.exit_code == dir_and_file.exit_code == 0
    totals = [json.loads((tmp_path / o / "summary.json").read_text())["totals"] for o in "abc"]
    assert [t["ranks"] for t in totals] == [1, 1, 1]
    assert totals[0]["events"] == totals[1]["events"] == totals[2]["events"]


def test_a_bundle_below_a_directory_of_ranks_hides_none_of_them(tmp_path):
    d = tmp_path / "run"
    d.mkdir()
    shutil.copy(RANK0, d / "rank-0.json.gz")
    shutil.copy(RANK1, d / "rank-1.json.gz")
    assert invoke("analyze", d / "rank-0.json.gz", "-o", d / "older" / "r.npz", "--format", "bundle").exit_code == 0
    res = invoke("analyze", d, "-o", tmp_path / "o", "--format", "json")
    assert res.exit_code == 0 and "r.npz: skipped (a bundle xpu_profiler wrote" in res.output
    assert json.loads((tmp_path / "o" / "summary.json").read_text())["totals"]["ranks"] == 2
    alone = invoke("analyze", d / "older", "-o", tmp_path / "o2", "--format", "json")  # the bundle alone: read
    assert alone.exit_code == 0


def test_a_directory_of_our_outputs_only_is_one_line_not_an_empty_report(tmp_path):
    out = tmp_path / "out"
    assert invoke("analyze", RANK0, "-o", out, "-q").exit_code == 0
    err = one_line_error(run("analyze", out, "-o", tmp_path / "again"))
    assert "a Perfetto trace xpu_profiler wrote" in err and "nothing else to analyse" in err
    assert not (tmp_path / "again").exists()


@pytest.mark.parametrize("order", ["shuffled", "reversed"])
def test_begin_end_events_out_of_time_order_pair_as_in_time_order(order, tmp_path):
    """Two kernels of one name on one stream, each 10 us, written as B/E events in no time
    order (the format does not ask for it; Perfetto sorts them): paired in time order."""
    kernel = {"cat": "kernel", "name": "gemm_kernel", "pid": 0, "tid": 7, "args": {"stream": 7, "device": 0}}
    times = [(0, 10), (100, 110)]
    marks = [dict(kernel, ph=ph, ts=t) for b, e in times for ph, t in (("B", b), ("E", e))]
    host = [dict(ph="X", cat="cpu_op", name="aten::mm", ts=0, dur=120, pid=1, tid=1)]
    marks = [marks[1], marks[2], marks[0], marks[3]] if order == "shuffled" else marks[::-1]
    f = tmp_path / "t.json"
    f.write_text(json.dumps({"traceEvents": marks + host}))
    assert invoke("analyze", f, "-o", tmp_path / "o", "--format", "json", "-q").exit_code == 0
    totals = json.loads((tmp_path / "o" / "summary.json").read_text())["totals"]
    assert totals["device_kernel_ns"] == sum(e - b for b, e in times) * 1000


# ---- record --url: a server that answers oddly, settings no run has ---------------------------


class _OddServer(http.server.BaseHTTPRequestHandler):
    """/health answers 200; /v1/models answers as ``mode`` says (the class attribute)."""

    mode = "list"

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        if self.mode == "drip":  # a header line a second: no read ever waits 5 s
            self.wfile.write(b"HTTP/1.1 200 OK\r\n")
            for _ in range(30):
                try:
                    self.wfile.write(b"X-Slow: 1\r\n")
                    self.wfile.flush()
                except OSError:
                    return
                time.sleep(1)
            return
        if self.path == "/health":
            self.send_response(200)
            self.end_headers()
            return
        body = {"list": b"[1, 2]", "int": b'{"data": 5}', "dict": b'{"data": {"a": 1}}'}[self.mode]
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.mark.parametrize("mode", ["list", "int", "dict", "drip"])
def test_record_against_a_server_that_answers_oddly_is_one_line(mode, tmp_path):
    handler = type("Handler", (_OddServer,), {"mode": mode})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        err = one_line_error(run("record", "--url", url, "--steps", "3", "-o", tmp_path / "o", timeout=HANG_S))
    finally:
        server.shutdown()
    # past the health check (an odd model list names no model) to where it records; or no answer
    said = "no whole answer within 5 s" if mode == "drip" else "cannot tell where the server"
    assert said in err, err


@pytest.mark.parametrize(
    "args, said",
    [
        (("--steps", "3", "--timeout", "nan"), "--timeout must be more than 0"),
        (("--steps", "3", "--timeout", "1e300"), "--timeout must be more than 0"),
        (("--seconds", "inf", "--via", "vllm"), "--seconds must be more than 0"),
    ],
)
def test_record_settings_no_run_has_are_one_line(args, said, tmp_path):
    err = one_line_error(run("record", "--url", "http://127.0.0.1:1", *args, "-o", tmp_path / "o"))
    assert said in err


def test_view_refuses_a_port_out_of_range():
    res = run("view", RANK0, "--port", "70000", "--no-browser", timeout=HANG_S)
    assert res.returncode == 2 and "Invalid value for '--port'" in res.stderr and "Traceback" not in res.stderr


# ---- the Python API: arguments of the wrong kind, outputs over inputs ---------------------------


@pytest.mark.parametrize(
    "args, kwargs, said",
    [
        ((None,), {}, "paths=None: give a path or a list of paths"),
        ((5,), {}, "paths=5: give a path or a list of paths"),
        (([],), {}, "paths: no input given"),
        ((b"/x",), {}, "give a path or a list of paths"),
        (([RANK0, None],), {}, "None is no path"),
        (("",), {}, "'' is no path"),
        ((RANK0,), {"capture": None}, "capture=None"),
        ((RANK0,), {"steps": 3}, "steps=3: the engine steps kept are a string"),
        ((RANK0,), {"max_events": "5"}, "max_events='5'"),
        ((RANK0,), {"rank": -1}, "rank=-1: a rank is a whole number"),
    ],
)
def test_the_api_refuses_arguments_of_the_wrong_kind_with_the_packages_error(args, kwargs, said):
    with pytest.raises(XpuProfilerError, match=re.escape(said)):
        xpu_profiler.load(*args, **kwargs)


def test_one_path_as_a_string_is_one_path_never_its_characters(tmp_path):
    """A string ``capture`` was split into characters ("/" walked the whole file system)."""
    with pytest.raises(XpuProfilerError, match=f"{re.escape(str(tmp_path / 'none'))}: no such file"):
        xpu_profiler.load(RANK0, capture=str(tmp_path / "none"))
    profile, summary = analysis.analyze(str(RANK0))
    assert summary.totals.ranks == 1 and len(profile.events) > 0


def test_the_api_writes_no_output_over_its_input_nor_under_another_outputs_name(tmp_path):
    trace = tmp_path / "run.json"
    trace.write_bytes(gzip.decompress(RANK0.read_bytes()))
    before = trace.read_bytes()
    a = xpu_profiler.load(trace)
    for write in (a.save_summary, a.trace):
        with pytest.raises(XpuProfilerError, match="would overwrite the input"):
            write(trace)
    with pytest.raises(XpuProfilerError, match="the Perfetto trace goes to a name ending in .json or .json.gz"):
        a.trace(tmp_path / "t.html")
    assert trace.read_bytes() == before and not (tmp_path / "t.html").exists()
    assert a.report(tmp_path / "r.html").is_file()


# ---- names another writer spells otherwise, flags as flags read ---------------------------------


def test_categories_in_another_writers_capitals_are_the_same_kinds(tmp_path):
    ev = json.loads(gzip.decompress(RANK0.read_bytes()))
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps(ev))
    for e in ev["traceEvents"]:
        if isinstance(e, dict) and isinstance(e.get("cat"), str):
            e["cat"] = e["cat"].upper()
    shouted = tmp_path / "shouted.json"
    shouted.write_text(json.dumps(ev))
    a, b = (xpu_profiler.load(f).summary.totals for f in (plain, shouted))
    assert a.device_kernel_ns == b.device_kernel_ns > 0 and a.events == b.events


@pytest.mark.parametrize("value, pure", [("false", False), (" 0", False), ("00", False), ("no", False), ("1", True)])
def test_the_pure_python_switch_reads_as_a_flag(value, pure, monkeypatch):
    from xpu_profiler.core import compiled

    monkeypatch.setenv(compiled.PURE_ENV, value)
    assert compiled.enabled() is not pure


def test_output_dash_is_refused_not_a_directory_named_dash(tmp_path):
    err = one_line_error(run("analyze", RANK0, "-o", "-", cwd=tmp_path))
    assert "--output -" in err and os.listdir(tmp_path) == []
