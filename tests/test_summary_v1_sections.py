"""A version-1 ``summary.json`` whose sections are of another type than its writer gave them
(a hand edit, another tool's file): one line naming the file and where, exit 2, from ``diff``,
``analyze --baseline`` and ``xpu_profiler.load``, as a version-2 file gets (never a traceback)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from cli_run import invoke, one_line_error, run

import xpu_profiler
from xpu_profiler.core.errors import XpuProfilerError

DATA = Path(__file__).resolve().parent / "data"
V1 = DATA / "summary_v1_vllm_cpu.json"
TRACE = DATA / "real-traces" / "cuda-triton-example.json.gz"

#: JSON's name of each Python type a value is decoded as
JSON_TYPE = {str: "str", int: "int", list: "array", dict: "object", type(None): "null"}

#: (where, the value put there, the type the reader wants there)
CASES = [
    (("run",), "x", "object"),
    (("fused_ops", 0), 5, "object"),
    (("fused_ops", 1), None, "object"),
    (("throughput",), [1], "object"),
    (("run", "sources"), 5, "array"),
    (("fused_ops", 0, "by_phase"), [1, 2], "object"),
    (("fused_ops",), {"gemm": 1}, "array"),
]


def _where(path: tuple) -> str:
    """``$.fused_ops[0].by_phase`` for ("fused_ops", 0, "by_phase")."""
    return "$" + "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in path)


def _broken(tmp_path: Path, path: tuple, value) -> Path:
    doc = json.loads(V1.read_text())
    assert doc["schema_version"] == 1
    edited = copy.deepcopy(doc)
    at = edited
    for k in path[:-1]:
        at = at[k]
    at[path[-1]] = value
    out = tmp_path / "summary.json"
    out.write_text(json.dumps(edited))
    return out


def _expected(path: tuple, value, wanted: str) -> str:
    return f"not a valid summary (Expected `{wanted}`, got `{JSON_TYPE[type(value)]}` - at `{_where(path)}`)"


@pytest.mark.parametrize("path, value, wanted", CASES, ids=[_where(c[0]) for c in CASES])
def test_diff_names_the_section(tmp_path, path, value, wanted):
    bad = _broken(tmp_path, path, value)
    err = one_line_error(run("diff", bad, V1, "-o", tmp_path / "d", "-q"))
    assert err == f"xpu_profiler: error: {bad}: {_expected(path, value, wanted)}"
    assert not (tmp_path / "d").exists()


@pytest.mark.parametrize("path, value, wanted", CASES[:4], ids=[_where(c[0]) for c in CASES[:4]])
def test_the_baseline_and_the_notebook_say_the_same(tmp_path, path, value, wanted):
    bad = _broken(tmp_path, path, value)
    err = one_line_error(invoke("analyze", TRACE, "--baseline", bad, "-o", tmp_path / "out", "-q"))
    assert err.endswith(f"{bad}: {_expected(path, value, wanted)}"), err
    with pytest.raises(XpuProfilerError) as got:
        xpu_profiler.load(bad)
    assert str(got.value) == f"{bad}: {_expected(path, value, wanted)}"
