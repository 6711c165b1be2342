"""`xpu_profiler diff` on generated traces: the page in a real browser, names from traces
kept inert, one-line errors for bad inputs. (Live runs: tests/test_findings_live.py.)"""

from __future__ import annotations

import json

import pytest
from cli_run import run as cli
from report_helpers import HOSTILE_NAMES, Browser, chromium_missing, write_kineto_trace

from xpu_profiler.testing import gen_trace


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """The same synthetic workload with a fast and a slow host (the slow one launches late)."""
    d = tmp_path_factory.mktemp("diff_pair")
    gen_trace.generate(30_000, str(d / "fast.json.gz"), seed=7)
    gen_trace.generate(30_000, str(d / "slow.json.gz"), seed=7, host_gap_ns=25_000)
    gen_trace.generate(30_000, str(d / "other.json.gz"), seed=8)  # another batch mix
    return d / "fast.json.gz", d / "slow.json.gz", d / "other.json.gz"


def test_diff_of_traces_aligns_kernels(pair, tmp_path):
    r = cli("diff", *pair[:2], "-o", tmp_path / "d", "--fail-on", "1000")
    assert r.returncode == 0, r.stderr
    d = json.loads((tmp_path / "d" / "diff.json").read_text())
    # the same kernels in both: nothing added or removed, every one aligned by name
    assert d["kernels_added"] == [] and d["kernels_removed"] == [] and d["kernels"]
    assert d["kernels_unlisted"] == 0 and d["settings"] == []
    # kernel time per token does not depend on the host: the step time does
    dec = {m["name"]: m for m in d["metrics"] if m["phase"] == "decode"}
    assert dec["step_p50_ns"]["change"] > 0.1
    assert abs(dec["per_token_ns"]["change"]) < 0.02
    new = {f["rule"]: f for f in d["findings"]}
    assert new["graphs_off_decode"]["status"] == "kept"
    assert new["graphs_off_decode"]["new_at_stake_share"] > new["graphs_off_decode"]["base_at_stake_share"]


def test_the_diff_page_in_a_browser(pair, tmp_path):
    why = chromium_missing()
    if why:
        pytest.skip(why)
    # names from a trace that try to run code in the page
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    write_kineto_trace(a, ["aten::mm_kernel", HOSTILE_NAMES[0]])
    write_kineto_trace(b, ["aten::mm_kernel", HOSTILE_NAMES[1]])
    assert cli("diff", a, b, "-o", tmp_path / "h.html", "-q").returncode == 0
    assert cli("diff", pair[0], pair[2], "-o", tmp_path / "g.html", "-q").returncode == 0
    br = Browser()
    try:
        for name in ("h", "g"):
            res = br.open(tmp_path / f"{name}.html")
            assert res.console_errors == [] and res.page_errors == [] and res.requests == []
            assert res.dialogs == [] and res.pwned is None
            assert res.plots_drawn == res.figures_in_data >= (1 if name == "g" else 0)
            assert "Step time, throughput and latency" in res.text
        assert HOSTILE_NAMES[1] in res_text(br, tmp_path / "h.html")  # shown as text, not run
    finally:
        br.close()


def res_text(br: Browser, path) -> str:
    return br.open(path).text


@pytest.mark.parametrize(
    "case, needle",
    [
        ("missing", "no such file"),
        ("not_a_trace", "not a supported trace"),
        ("bad_summary", "not a valid summary"),
    ],
)
def test_bad_inputs_are_one_line(pair, tmp_path, case, needle):
    base = pair[0]
    new = tmp_path / {"missing": "nope.json", "not_a_trace": "x.txt", "bad_summary": "s.json"}[case]
    if case == "not_a_trace":
        new.write_text("hello\n")
    if case == "bad_summary":
        new.write_text(json.dumps({"schema": "xpu_profiler.summary", "schema_version": 2, "totals": {"steps": "x"}}))
    r = cli("diff", base, new, "-o", tmp_path / "out")
    assert r.returncode == 2, r.stdout
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in r.stderr
    assert not (tmp_path / "out").exists()
