"""``--device-spec`` with a figure past a float's range (an integer of hundreds of digits): the
one line the loader gives any figure that is not a positive number, exit 2, no traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_run import one_line_error, run

from xpu_profiler.testing.trace_file import generate


@pytest.fixture(scope="module")
def trace(tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("spec_values") / "run.json"
    generate(3000, str(p))
    return p


@pytest.mark.parametrize(
    "entry, said",
    [
        (
            '{"mem_bw_bytes_s": 1' + "0" * 400 + "}",
            "mem_bw_bytes_s must be a positive number, not an integer of 401 digits",
        ),
        (
            '{"peak_flops": {"bf16": -1' + "0" * 400 + "}}",
            "peak_flops.bf16 must be a positive number, not an integer of 401 digits",
        ),
        ('{"mem_bytes": 1e400}', "mem_bytes must be a positive number, not inf"),
    ],
)
def test_a_figure_past_a_floats_range_is_one_line(entry, said, trace, tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text('{"h100_sxm": ' + entry + "}")
    json.loads(spec.read_text())  # (valid JSON: the figure itself is what is refused)
    r = run(
        "analyze", trace, "--device-spec", spec, "-o", tmp_path / "o", "--format", "json", cwd=tmp_path, timeout=120
    )
    assert one_line_error(r) == f"xpu_profiler: error: {spec}: entry 'h100_sxm': {said}", r.stderr
