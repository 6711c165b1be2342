"""Reading rank files in parallel: serial, a local process pool and Ray tasks (on the one
local Ray instance of the session) give the same summary.json bytes; Ray tasks go to
the node that holds each file; a missing Ray, an unknown engine and a broken file in a
pool are one line and exit 2."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from xpu_profiler import analysis
from xpu_profiler.core.errors import TraceError, XpuProfilerError
from xpu_profiler.readers import executors, expand
from xpu_profiler.summary import encode
from xpu_profiler.testing import gen_ranks


@pytest.fixture(scope="module")
def rank_files(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("ranks")
    gen_ranks.generate(str(out), ranks=4, events=6_000, layers=4, seed=7, slow_rank=3, slow_pct=30, gz=True)
    return out


def summary_bytes(paths, engine: str, jobs: int | None = 2) -> bytes:
    _, s = analysis.analyze(paths, engine=engine, jobs=jobs)
    return encode(s)


def test_pool_and_serial_give_the_same_summary(rank_files):
    serial = summary_bytes([rank_files], "serial")
    assert summary_bytes([rank_files], "process") == serial
    assert summary_bytes([rank_files], "auto") == serial
    assert b'"collective_ends"' in serial  # a real multi-rank summary, not an empty one


#: a pool whose worker dies mid-read, in a process of its own: no other thread there (in this one
#: an earlier module's may live on, Ray's for one), so the pool forks and its workers see the
#: replaced reader
DIE = """
import os, sys
from xpu_profiler.core.errors import TraceError
from xpu_profiler.readers import ReadOptions, executors, expand

def die(path, reader, options, nested=True):
    os._exit(9)  # as the kernel's OOM killer would end it

assert executors.fork_is_safe()
executors.read_one = die
tasks = [executors.FileTask(str(p), mod.NAME) for p, mod in expand([sys.argv[1]])]
try:
    executors.process_pool(tasks, ReadOptions(), 2, None)
except TraceError as e:
    print(e)
"""


def test_a_worker_that_dies_is_one_error_naming_its_file(rank_files):
    r = subprocess.run([sys.executable, "-c", DIE, str(rank_files)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    (line,) = r.stdout.splitlines()
    assert "the worker process reading it died" in line
    assert any(str(p) in line for p, _ in expand([rank_files])), line


def test_ray_gives_the_same_summary(rank_files, ray_local):
    assert summary_bytes([rank_files], "ray") == summary_bytes([rank_files], "serial")


def test_ray_places_each_file_on_the_node_that_holds_it(rank_files, ray_local):
    tasks = executors.ray_tasks([str(rank_files)])
    here = ray_local.get_runtime_context().get_node_id()
    assert [t.path for t in tasks] == [str(p) for p, _ in expand([rank_files])]
    assert {t.node for t in tasks} == {here} and {t.reader for t in tasks} == {"kineto"}
    assert all(t.size == Path(t.path).stat().st_size for t in tasks)


def test_ray_says_which_path_no_node_has(tmp_path, ray_local):
    with pytest.raises(TraceError, match="no such file or directory on any node"):
        executors.ray_tasks([str(tmp_path / "nowhere")])


def test_unknown_engine_is_refused():
    with pytest.raises(XpuProfilerError, match="unknown engine 'spark'"):
        executors.parse_executor("spark")
    assert executors.parse_executor("ray://head:10001") == ("ray", "ray://head:10001")


def _cli(*args: str, pre: str = "pass") -> subprocess.CompletedProcess:
    code = (
        f"import sys; {pre}; from xpu_profiler.cli.main import main; sys.argv = ['xpu_profiler'] + sys.argv[1:]; main()"
    )
    return subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_engine_ray_without_ray_is_one_line(rank_files, tmp_path):
    r = _cli("analyze", str(rank_files), "-o", str(tmp_path), "--engine", "ray", "-q", pre="sys.modules['ray'] = None")
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "xpu_profiler: error: --engine ray needs Ray, which is not installed (pip install 'xpu_profiler[ray]')"
    ]


def test_a_broken_file_read_in_the_pool_is_named(rank_files, tmp_path):
    """A rank file that ends in the middle: the others are analysed, the file is named with
    why and which rank is missing (even with -q), and summary.json lists it."""
    d = tmp_path / "in"
    d.mkdir()
    for p in sorted(rank_files.glob("rank-[01].*")):
        (d / p.name).write_bytes(p.read_bytes())
    bad = d / "rank-2.pt.trace.json.gz"
    whole = gzip.decompress((rank_files / "rank-2.pt.trace.json.gz").read_bytes())
    bad.write_bytes(gzip.compress(whole[: len(whole) // 2]))  # the JSON ends in the middle
    r = _cli("analyze", str(d), "-o", str(tmp_path / "out"), "--engine", "process", "-j", "2", "-q")
    assert r.returncode == 0, r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert line == (
        f"warning: {bad}: dropped (truncated JSON (file ends in the middle of the trace)); "
        "rank 2 is missing from the analysis"
    )
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["dropped_inputs"] == [
        {"path": str(bad), "reason": "truncated JSON (file ends in the middle of the trace)", "rank": 2}
    ]
    assert sorted(r["rank"] for r in summary["ranks"]) == [0, 1]
