"""The HTML report opened in real headless Chromium (Debian's package, never a
downloaded browser): it draws every figure in its data, logs no error, touches
no network, and runs nothing that came from a trace. Screenshots are written to
artifacts/report/ for people to look at."""

from __future__ import annotations

from pathlib import Path

import pytest
import real_data
from report_helpers import (
    ARTIFACTS,
    HOSTILE_NAMES,
    KERNELS,
    REPO,
    Browser,
    PageResult,
    chromium_missing,
    hostile_summary,
    live_cpu_profile,
    sample_summary,
    summarize,
    write_kineto_trace,
    write_xpurt_logs,
)

from xpu_profiler import analysis
from xpu_profiler.exporters import html
from xpu_profiler.exporters.html.page import plotly_version
from xpu_profiler.summary import Summary

pytestmark = pytest.mark.browser

SHOTS = ARTIFACTS / "report"


@pytest.fixture(scope="module")
def browser():
    why = chromium_missing()
    if why:
        pytest.skip(why)
    b = Browser()
    yield b
    b.close()


def assert_clean(res: PageResult, figures: int) -> None:
    assert res.console_errors == [] and res.page_errors == []
    assert res.requests == [], "the report tried to load something"
    assert res.dialogs == [] and res.pwned is None
    assert res.figures_in_data == figures
    assert res.plots_drawn == figures


def summarize_files(*paths: Path) -> tuple[object, Summary]:
    return analysis.analyze(list(paths))


def render(browser: Browser, tmp_path: Path, name: str, summary: Summary, profile=None) -> PageResult:
    out = html.write(profile, summary, tmp_path / f"{name}.html")
    res = browser.open(out, SHOTS / f"{name}.png")
    assert (SHOTS / f"{name}.png").stat().st_size > 10_000
    return res


def test_sample_report(browser, tmp_path):
    # GIVEN a summary with every section: two ranks, phases, steps, memory, throughput
    summary = sample_summary()
    # WHEN it is rendered and opened
    res = render(browser, tmp_path, "sample", summary)
    # THEN all nine figures (the device time and the rank x step heat map with them) are drawn, cleanly
    assert_clean(res, len(html.build_report(summary)["figures"]))
    assert res.figures_in_data == 9
    assert "Time by fused op" in res.text and "Top kernels" in res.text and "Device time" in res.text


def test_live_cpu_run_report(browser, tmp_path):
    # GIVEN a live CPU run: host ops, host memory per process, token rates, interrupted
    summary = summarize(live_cpu_profile())
    res = render(browser, tmp_path, "live-cpu", summary)
    # THEN the rates chart joins the others and the page says what it could not cover
    figures = html.build_report(summary)["figures"]
    assert "rates" in figures and "memory" in figures
    assert_clean(res, len(figures))
    assert "Peak host RSS" in res.text and "incomplete" in res.text


def _real_traces():
    # one run of each collection of the shared data (every figure's drawing is the same code)
    firsts = {}
    for p in real_data.runs():
        firsts.setdefault(p if p.parent.name == "real-traces" else p.parent, p)
    return [pytest.param(p, id=p.name) for p in firsts.values()]


@pytest.mark.parametrize("trace", _real_traces())
def test_real_trace_report(browser, tmp_path, trace):
    profile, summary = summarize_files(trace)
    res = render(browser, tmp_path, "real-" + trace.name.split(".")[0], summary, profile)
    assert_clean(res, len(html.build_report(summary)["figures"]))
    assert res.figures_in_data >= 1


@pytest.mark.vllm
def test_vllm_cpu_run_report(browser, tmp_path, vllm_profiler_trace):
    # GIVEN the trace vLLM's own profiler wrote for a real CPU run
    profile, summary = summarize_files(vllm_profiler_trace.trace_dir)
    # WHEN it is rendered
    res = render(browser, tmp_path, "vllm-cpu", summary, profile)
    # THEN the step timeline and the phase split are there, and all figures are drawn
    report = html.build_report(summary)
    assert_clean(res, len(report["figures"]))
    assert "steps" in report["figures"] and report["phases"]["known"]
    assert "Prefill vs decode" in res.text


TRACELENS = REPO / "tests" / "data" / "tracelens"


def test_device_time_and_attribution_sections(browser, tmp_path):
    # GIVEN vLLM gpt-oss decode under a FULL graph replay, with its capture trace
    profile, summary = summarize_files(TRACELENS / "vllm_decode_full")
    report = html.build_report(summary)
    assert "device_phases" in report["figures"] and report["device"]["rows"][0]["bound"] == "device"
    # WHEN it is rendered
    res = render(browser, tmp_path, "gptoss-device", summary, profile)
    # THEN the verdict, its evidence, the attribution sources and the replays are on the page
    assert_clean(res, len(report["figures"]))
    assert "Device time" in res.text and "device-bound" in res.text
    assert summary.phases[0].bound_evidence in res.text
    assert "inferred from kernel names only" in res.text and "capture trace" in res.text
    assert "421 of 421 replayed kernels matched" in res.text
    assert "Idle per stream" in res.text


def test_host_bound_steps_per_step_line(browser, tmp_path):
    # GIVEN steps whose device drains between them: host-bound, one line point per step
    from test_device_steps import analysed

    profile, summary, _ = analysed(tmp_path, "starved", 8, 2000, 30)
    report = html.build_report(summary)
    assert set(report["figures"]) >= {"device_phases", "device_steps"}
    lines = {t["name"]: t for t in report["figures"]["device_steps"]["data"]}
    assert lines["host wait"]["y"] == [v / 1e6 for v in summary.device_steps.host_wait_ns]
    res = render(browser, tmp_path, "host-bound", summary, profile)
    assert_clean(res, len(report["figures"]))
    assert "host-bound" in res.text and "launches arrived after the device had drained" in res.text


def test_kernel_names_from_a_trace_cannot_run_code(browser, tmp_path):
    # GIVEN a torch-profiler trace whose kernel names are HTML and script
    trace = write_kineto_trace(tmp_path / "hostile.pt.trace.json", HOSTILE_NAMES)
    profile, summary = summarize_files(trace)
    assert {k.name for k in summary.top_kernels} == set(HOSTILE_NAMES)
    # WHEN the report is opened
    res = render(browser, tmp_path, "hostile-trace", summary, profile)
    # THEN nothing ran, no dialog opened, and every name is shown as plain text
    assert_clean(res, len(html.build_report(summary)["figures"]))
    for name in HOSTILE_NAMES:
        assert name in res.text


def test_kernel_logs_without_timeline(browser, tmp_path):
    # GIVEN per-rank [XPURT_PROF] logs: kernel totals only, no timestamps
    hostile = "</script><img/src=x/onerror=window.__pwned=6>"  # log names are single tokens
    logs = write_xpurt_logs(tmp_path / "logs", ["_ZN10xblas_xpu313fc_cdnn_inferIfEEvPKT_", hostile])
    profile, summary = summarize_files(logs)
    report = html.build_report(summary)
    # THEN there is no step timeline or memory chart to invent, the ranks are compared,
    # and the report says why the timeline is missing
    assert report["steps"] is None and report["memory"] is None and report["ranks"]
    res = render(browser, tmp_path, "xpurt-logs", summary, profile)
    assert_clean(res, len(report["figures"]))
    assert "no timeline" in res.text and hostile in res.text
    assert {k.name for k in summary.top_kernels} == {"void xblas_xpu3::fc_cdnn_infer<float>", hostile}


def test_untrusted_text_everywhere_stays_text(browser, tmp_path):
    # model name, engine keys, fused-op names and warnings too
    summary = hostile_summary()
    res = render(browser, tmp_path, "hostile-summary", summary)
    assert_clean(res, len(html.build_report(summary)["figures"]))
    for name in HOSTILE_NAMES:
        assert name in res.text


def test_kernel_table_sorts_and_filters(browser, tmp_path):
    out = html.write(None, sample_summary(), tmp_path / "t.html")
    page = browser.page()
    try:
        page.goto(out.resolve().as_uri())
        rows = page.evaluate("XPU_REPORT.kernels.rows")

        def visible(key: str) -> list:
            idx = page.eval_on_selector_all(
                "#kernel-table tbody tr:not([hidden])", "trs => trs.map(tr => +tr.dataset.i)"
            )
            return [rows[i][key] for i in idx]

        # initially by time, largest first
        assert visible("time_ns") == sorted((r["time_ns"] for r in rows), reverse=True)
        # a click sorts by count (largest first), a second click reverses
        page.click("#kernel-table th[data-key=count]")
        assert visible("count") == sorted((r["count"] for r in rows), reverse=True)
        page.click("#kernel-table th[data-key=count]")
        assert visible("count") == sorted(r["count"] for r in rows)
        page.click("#kernel-table th[data-key=name]")
        assert visible("name") == sorted((r["name"] for r in rows), key=str.lower)
        # the name filter matches the full name, case-insensitively
        page.fill("#kernel-filter", "GEMM")
        assert visible("name") == ["ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_tn"]
        page.fill("#kernel-filter", "")
        page.select_option("#kernel-fused", "attention")
        assert sorted(visible("name")) == sorted(r["name"] for r in rows if r["fused_op"] == "attention")
        assert page.inner_text("#kernel-count") == f"2 of {len(KERNELS)} shown"
        # the full name is on hover
        title = page.get_attribute("#kernel-table td.kname[title^='void flash']", "title")
        assert title == next(r["name"] for r in rows if r["name"].startswith("void flash"))
    finally:
        page.close()


def test_cdn_mode_is_seen_by_the_network_check(browser, tmp_path):
    # The request listener used above works: a CDN-linked report is caught asking the network.
    out = html.write(None, sample_summary(), tmp_path / "cdn.html", plotly="cdn")
    res = browser.open(out)
    assert res.requests == [f"https://cdn.plot.ly/plotly-{plotly_version()}.min.js"]
    assert res.plots_drawn == 0
    assert "Charts need plotly.js" in res.text


def _multirank_checks(browser, out, ranks: int) -> PageResult:
    res = browser.open(out, SHOTS / f"{out.stem}.png")
    assert res.console_errors == [] and res.page_errors == [] and res.requests == []
    assert res.plots_drawn == res.figures_in_data
    for title in (
        "Ranks by step",
        "Time by fused op and rank",
        "Communication",
        "Collectives",
        "Stragglers and overlap by rank",
    ):
        assert title in res.text
    page = browser.page()
    try:
        page.goto(out.resolve().as_uri())
        page.wait_for_selector("body[data-figures-drawn]")
        heat = page.evaluate(
            "(() => { const d = document.getElementById('fig-rank_steps').data[0];"
            " return {type: d.type, rows: d.z.length, y: d.y}; })()"
        )
        assert heat == {"type": "heatmap", "rows": ranks, "y": [f"rank {r}" for r in range(ranks)]}
        assert page.locator("#fig-rank_steps .heatmaplayer").count() == 1
        assert page.locator("#rank-fused-table tbody tr").count() == ranks
        assert page.locator("#rank-comm-table tbody tr.total").count() == ranks
    finally:
        page.close()
    return res


def test_multirank_report(browser, tmp_path):
    # GIVEN four ranks of a TP run, rank 2 slow, clocks seconds apart (xpu_profiler/testing/gen_ranks.py)
    from xpu_profiler.testing import gen_ranks

    gen_ranks.generate(str(tmp_path / "in"), ranks=4, events=8_000, layers=4, seed=4, slow_rank=2, slow_pct=30)
    profile, summary = summarize_files(tmp_path / "in")
    # WHEN its report is opened THEN the heat map, the rank x fused-op table and the
    # communication tables are there, and the straggler is named
    out = html.write(profile, summary, tmp_path / "multirank.html")
    res = _multirank_checks(browser, out, 4)
    assert "rank 2 (9" in res.text  # "Last most: rank 2 (9x.x%)"


@pytest.mark.vllm
def test_vllm_tp2_cpu_report(browser, tmp_path, vllm_tp2_trace):
    # GIVEN vLLM's own traces of a TP=2 run on the CPU
    profile, summary = summarize_files(vllm_tp2_trace.trace_dir)
    out = html.write(profile, summary, tmp_path / "vllm-tp2-cpu.html")
    # THEN the CPU all-reduce is in the communication tables, ranks side by side
    res = _multirank_checks(browser, out, 2)
    assert "all_reduce" in res.text and "host ops" in res.text
