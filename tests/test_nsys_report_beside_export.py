"""What ``nsys profile --export=sqlite`` leaves (``report1.nsys-rep`` beside ``report1.sqlite``):
one report, read once from its export, with or without ``nsys`` on PATH; the report said to
be set aside, never dropped as lost."""

from __future__ import annotations

import os
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
import real_data
from cli_run import run

from xpu_profiler.summary import load_summary
from xpu_profiler.testing import gen_nsys
from xpu_profiler.testing.vendor_workload import Workload

REPORT = "other-formats/nsys-nvfuser-cross-entropy-h200.nsys-rep"


@pytest.fixture
def written(tmp_path) -> Path:
    """A directory as ``nsys profile --export=sqlite -o out/report1`` leaves it."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "report1.nsys-rep").write_bytes(real_data.need(REPORT).read_bytes())
    gen_nsys.write(out / "report1.sqlite", Workload())
    (out / "report1.truth.json").unlink()  # (the generator's own file: nsys writes none)
    return out


def _nsys(bin_dir: Path, log: Path) -> None:
    """An ``nsys`` that says it was run."""
    bin_dir.mkdir()
    (bin_dir / "nsys").write_text(f'#!/bin/sh\necho "$@" >> {log}\nexit 1\n')
    (bin_dir / "nsys").chmod(0o755)


@pytest.mark.parametrize("nsys", ["none on PATH", "on PATH"])
@pytest.mark.parametrize("given", ["the directory", "both files"])
def test_a_report_beside_its_export_is_read_once_from_the_export(written, nsys, given, tmp_path):
    db, rep = written / "report1.sqlite", written / "report1.nsys-rep"
    with closing(sqlite3.connect(f"file:{db}?mode=ro&immutable=1", uri=True)) as c:
        ((kernel_ns,),) = c.execute("SELECT sum(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchall()
    log = tmp_path / "nsys.log"
    if nsys == "on PATH":
        _nsys(tmp_path / "bin", log)
        path = f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}"
    else:
        (tmp_path / "empty").mkdir()
        path = str(tmp_path / "empty")
    inputs = [written] if given == "the directory" else [rep, db]
    res = run("analyze", *inputs, "-o", tmp_path / "o", "--format", "json", extra_env={"PATH": path})
    assert res.returncode == 0, res.stderr
    s = load_summary(tmp_path / "o" / "summary.json")
    assert s.totals.device_kernel_ns == kernel_ns
    assert [src.path for src in s.run.sources] == [str(db)]
    assert s.dropped_inputs == [] and not [w for w in s.warnings if "missing from the analysis" in w]
    assert [w for w in s.warnings if w.startswith(str(rep))] == [
        f"{rep}: skipped (the report report1.sqlite beside it was exported from: read once, from that export)"
    ]
    assert not log.exists()  # the report was never exported again
