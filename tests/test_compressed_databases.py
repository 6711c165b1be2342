"""Nsight Systems exports and rocpd databases compressed for transfer (gzip, xz, bzip2,
Zstandard): read as the uncompressed file, from a temporary decompressed copy that is removed
afterwards, on SIGTERM too; the input is left as it was."""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import sqlite3
import subprocess
import sys
import tempfile
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest
from cli_run import ROOT, run
from hold import run_module

from xpu_profiler import analysis
from xpu_profiler.core.profile import K_KERNEL
from xpu_profiler.summary import load_summary
from xpu_profiler.testing import gen_nsys, gen_rocprof
from xpu_profiler.testing.vendor_workload import Workload


def _zstd(data: bytes) -> bytes:
    zstandard = pytest.importorskip("zstandard")
    return zstandard.ZstdCompressor().compress(data)


COMPRESS = {"gz": gzip.compress, "xz": lzma.compress, "bz2": bz2.compress, "zst": _zstd}


def _kernels(db: Path, table: str) -> tuple[int, int]:
    """The database's own count and sum of kernel durations."""
    with closing(sqlite3.connect(f"file:{db}?mode=ro&immutable=1", uri=True)) as c:
        n, ns = c.execute(f"SELECT count(*), sum(end - start) FROM {table}").fetchone()
    return int(n), int(ns)


@pytest.fixture(scope="module")
def plain(tmp_path_factory) -> dict[str, tuple[Path, str]]:
    """An Nsight Systems export and a rocpd database of one run, uncompressed, with the table
    (or view) of their kernels."""
    d = tmp_path_factory.mktemp("plain")
    gen_nsys.write(d / "run.sqlite", Workload())
    gen_rocprof.write_rocpd(d / "1000_results.db", Workload())
    return {"nsys": (d / "run.sqlite", "CUPTI_ACTIVITY_KIND_KERNEL"), "rocpd": (d / "1000_results.db", "kernels")}


@pytest.mark.parametrize("ext", list(COMPRESS))
@pytest.mark.parametrize("fmt", ["nsys", "rocpd"])
def test_a_compressed_database_reads_as_the_uncompressed_one(fmt, ext, plain, tmp_path, monkeypatch):
    db, table = plain[fmt]
    packed = tmp_path / f"{db.name}.{ext}"
    packed.write_bytes(COMPRESS[ext](db.read_bytes()))
    before = packed.read_bytes()
    scratch = tmp_path / "scratch"  # where the temporary copies go
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    n, kernel_ns = _kernels(db, table)
    profile, s = analysis.analyze([packed])
    assert s.totals.device_kernel_ns == kernel_ns
    assert int(np.count_nonzero(profile.events["kind"] == K_KERNEL)) == n
    assert s.run.sources[0].format == fmt and s.run.sources[0].path == str(packed)
    assert list(scratch.iterdir()) == [] and packed.read_bytes() == before


def test_the_command_reads_a_compressed_export_alone_and_in_a_directory(plain, tmp_path):
    db, table = plain["nsys"]
    inputs = tmp_path / "in"
    inputs.mkdir()
    packed = inputs / "report1.sqlite.gz"
    packed.write_bytes(gzip.compress(db.read_bytes()))
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    _, kernel_ns = _kernels(db, table)
    for i, given in enumerate((packed, inputs)):
        res = run("analyze", given, "-o", tmp_path / f"o{i}", "--format", "json", extra_env={"TMPDIR": str(scratch)})
        assert res.returncode == 0, res.stderr
        s = load_summary(tmp_path / f"o{i}" / "summary.json")
        assert s.totals.device_kernel_ns == kernel_ns and s.dropped_inputs == []
    assert list(scratch.iterdir()) == [] and sorted(p.name for p in inputs.iterdir()) == ["report1.sqlite.gz"]


#: a SIGTERM from the process itself the moment SQLite opens the decompressed copy
_TERM_WHEN_OPENED = """
import os, signal, sqlite3
_connect = sqlite3.connect
def _opened(database, *a, **kw):
    if "xpu_profiler_db_" in str(database):
        os.kill(os.getpid(), signal.SIGTERM)
    return _connect(database, *a, **kw)
sqlite3.connect = _opened
"""


def test_sigterm_while_a_compressed_database_is_read_leaves_no_copy(plain, tmp_path):
    db, _ = plain["rocpd"]
    packed = tmp_path / "1000_results.db.xz"
    packed.write_bytes(lzma.compress(db.read_bytes()))
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    res = subprocess.run(
        [sys.executable, *run_module(_TERM_WHEN_OPENED), "analyze", str(packed), "-o", str(tmp_path / "o")],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT), TMPDIR=str(scratch)),
        timeout=300,
    )
    assert res.returncode == 143, res.stderr
    assert "Traceback" not in res.stderr
    assert list(scratch.iterdir()) == [] and not (tmp_path / "o").exists()
