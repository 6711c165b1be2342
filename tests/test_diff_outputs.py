"""Where `xpu_profiler diff -o` writes: a named .json or .html file keeps its whole stem for the
other output beside it (as `analyze -o run.v2.html` does), and no output replaces a file the
inputs are read from, a file an input reads with others included."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli_run import one_line_error, run

from xpu_profiler.testing import gen_rocprof, gen_rocprof_csv
from xpu_profiler.testing.vendor_workload import Workload

V1 = Path(__file__).resolve().parent / "data" / "summary_v1_vllm_cpu.json"


@pytest.fixture
def sides(tmp_path) -> tuple[Path, Path]:
    """Two summary.json files (read as they are: no analysis)."""
    a, b = tmp_path / "a.summary.json", tmp_path / "b.summary.json"
    shutil.copyfile(V1, a)
    shutil.copyfile(V1, b)
    return a, b


def _beside(named: Path, ending: str) -> Path:
    """The other output's path: the named file's name with only its last ending replaced."""
    return named.with_name(named.name[: -len(named.suffix)] + ending)


@pytest.mark.parametrize("name", ["run1.v2.json", "r.2024.01.html"])
def test_a_dotted_name_keeps_its_whole_stem(sides, tmp_path, name):
    out = tmp_path / "out"
    out.mkdir()
    unrelated = {out / "run1.json": b'{"precious": true}', out / "r.2024.json": b"[]", out / "r.html": b"<p>mine</p>"}
    for path, data in unrelated.items():
        path.write_bytes(data)
    named = out / name
    res = run("diff", *sides, "-o", named, "-q")
    assert res.returncode == 0, res.stderr
    json_out = named if named.suffix == ".json" else _beside(named, ".json")
    html_out = named if named.suffix == ".html" else _beside(named, ".html")
    assert json.loads(json_out.read_text())["schema"] == "xpu_profiler.diff"
    assert html_out.read_text().startswith("<!DOCTYPE html")
    assert res.stdout.split() == ["wrote", "json", str(json_out), "wrote", "html", str(html_out)]
    for path, data in unrelated.items():
        assert path.read_bytes() == data, path
    assert sorted(p.name for p in out.iterdir()) == sorted([*(p.name for p in unrelated), json_out.name, html_out.name])


def test_an_output_never_replaces_a_file_an_input_reads_with_others(sides, tmp_path):
    """rocprofv3 CSV files are read as their directory (one process's JSON among them first):
    naming one CSV file as BASE makes the JSON beside it an input too."""
    run_dir = tmp_path / "rocprof"
    gen_rocprof_csv.write_csv(tmp_path / "csv", Workload())
    shutil.copytree(tmp_path / "csv" / gen_rocprof_csv.HOST, run_dir)
    gen_rocprof.write_json(tmp_path / "json", Workload())
    results = sorted((tmp_path / "json").glob("*_results.json"))[0]
    target = run_dir / results.name
    shutil.copyfile(results, target)
    before = target.read_bytes()
    res = run("diff", next(run_dir.glob("*_kernel_trace.csv")), sides[1], "-o", target, "-q")
    err = one_line_error(res)
    assert f"{target}: the output would overwrite the input" in err, err
    assert target.read_bytes() == before
    assert not _beside(target, ".html").exists()
