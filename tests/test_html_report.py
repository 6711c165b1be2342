"""The HTML report's section data (numbers, ordering, shares), its escaping and its
self-containedness. Layout is checked in a real browser in test_report_browser.py."""

from __future__ import annotations

import json
import math
import re

import pytest

from report_helpers import HOSTILE_NAMES, REPO, hostile_summary, sample_summary
from xpu_profiler import templates
from xpu_profiler.exporters import by_suffix
from xpu_profiler.exporters import html_report as hr

REAL_TRACES = REPO.parent / "shared" / "data" / "real-traces"


def blob(html: str) -> dict:
    """The report data as the page's script reads it (mirrors JSON.parse in report.js)."""
    m = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', html, re.S)
    assert m, "no report-data blob"
    return json.loads(m.group(1))


# -- sections ---------------------------------------------------------------------

def test_fused_ops_section_is_sorted_and_shares_add_up():
    # GIVEN a summary whose fused ops arrive out of order
    s = sample_summary()
    s["fused_ops"].reverse()
    colors = hr.fused_colors(f["fused_op"] for f in sample_summary()["fused_ops"])

    # WHEN the section is built
    sec, figs = hr.build_fused_ops(s, colors)

    # THEN rows run by time, shares sum to 100 %, and "other" keeps its place and grey
    assert [r["fused_op"] for r in sec["rows"]] == ["attention", "gemm", "rms_norm", "other"]
    assert sum(r["share"] for r in sec["rows"]) == pytest.approx(1.0)
    assert sec["other_share"] == 0.05
    assert sec["total_ns"] == 10_000_000
    assert sec["phases"] == ["prefill", "decode", "unknown"]
    assert sec["per_token_phases"] == ["prefill", "decode"]  # no mixed steps: no mixed column
    assert sec["rows"][-1]["color"] == hr.OTHER_COLOR
    assert sec["rows"][0]["per_token_ns"]["decode"] == pytest.approx(1_500_000 / 72)
    # the figure stacks one trace per phase, in ms, ops in the table's order
    fig = figs["fused_ops"]
    assert [t["name"] for t in fig["data"]] == ["prefill", "decode", "unknown"]
    assert fig["data"][0]["y"] == ["attention", "gemm", "rms_norm", "other"]
    assert fig["data"][0]["x"] == [2.5, 2.0, 1.0, 0.2]
    assert fig["data"][0]["marker"]["color"] == hr.PHASE_COLORS["prefill"]
    assert sec["figures"] == ["fused_ops"]


def test_fused_ops_without_phases_colour_bars_by_op():
    s = sample_summary()
    for f in s["fused_ops"]:
        f["by_phase"] = {"unknown": f["time_ns"]}
    sec, figs = hr.build_fused_ops(s, hr.fused_colors(["attention", "gemm", "rms_norm", "other"]))
    (trace,) = figs["fused_ops"]["data"]
    assert sec["phases"] == []  # no per-phase columns that would repeat the time
    assert trace["x"] == [4.0, 3.5, 2.0, 0.5]
    assert trace["marker"]["color"] == [r["color"] for r in sec["rows"]]


def test_fused_op_colours_are_the_same_in_every_report():
    a = hr.fused_colors(["gemm", "attention", "other", "my_op"])
    b = hr.fused_colors(["my_op", "attention", "gemm"])
    assert a["gemm"] == b["gemm"] and a["attention"] == b["attention"]
    assert a["other"] == hr.OTHER_COLOR
    assert a["my_op"] == b["my_op"] == hr.FUSED_PALETTE[0]
    assert len(set(hr.FUSED_OP_COLORS.values())) == len(hr.FUSED_OP_COLORS)


def test_phases_section_order_and_mix():
    sec, figs = hr.build_phases(sample_summary(), hr.fused_colors(["attention", "gemm", "rms_norm", "other"]))
    # prefill before decode whatever the input order
    assert [r["phase"] for r in sec["rows"]] == ["prefill", "decode"]
    assert sec["rows"][0]["per_token_ns"] == pytest.approx(5_700_000 / 384)
    assert sec["known"] is True
    # each phase's op time splits over fused ops; shares add up to 1
    for phase, parts in sec["mix"].items():
        assert sum(p["share"] for p in parts) == pytest.approx(1.0), phase
    assert {p["fused_op"]: p["time_ns"] for p in sec["mix"]["decode"]} == {
        "attention": 1_500_000, "gemm": 1_500_000, "rms_norm": 1_000_000, "other": 100_000}
    assert sorted(figs) == sorted(sec["figures"]) == ["per_token", "phase_mix"]
    per_token = {t["name"]: t["y"] for t in figs["per_token"]["data"]}
    assert per_token["prefill"][0] == pytest.approx(2_500_000 / 384 / 1e3)  # µs per token


def test_phases_section_needs_steps_or_a_known_phase():
    # op time outside every step of a log without steps is no phase to compare
    s = {"phases": [{"phase": "unknown", "steps": 0, "time_ns": 5, "wall_ns": 0, "tokens": 0}]}
    assert hr.build_phases(s, {}) == (None, {})
    s["phases"][0]["steps"] = 3
    sec, _ = hr.build_phases(s, {})
    assert sec["known"] is False and [r["phase"] for r in sec["rows"]] == ["unknown"]


def test_headline_cards():
    head = hr.build_headline(sample_summary())
    cards = {c["key"]: c for c in head["cards"]}
    assert cards["output_tok_s"]["value"] == pytest.approx(80 / 0.02109)
    assert cards["ttft"]["value"] == 4_000_000 and cards["ttft"]["unit"] == "ns"
    assert cards["step_decode"]["value"] == 1_040_000
    assert cards["busy"]["value"] == pytest.approx(82.0)     # mean of the ranks' busy shares
    assert cards["peak_device_allocated_bytes"]["value"] == 3.5 * 2**30
    assert cards["peak_kv"]["value"] == pytest.approx(60.0)
    assert cards["mfu"]["value"] == pytest.approx(1.2)
    assert cards["other_share"]["value"] == pytest.approx(5.0)
    assert [r["label"] for r in head["latency"]] == ["Time to first token", "Time per output token",
                                                     "End-to-end latency"]


def test_headline_leaves_out_what_is_unknown():
    # GIVEN a trace without token counts, requests or device spec
    s = {"basis": "host", "throughput": {"prefill_tok_s": 0.0, "decode_tok_s": 0.0},
         "totals": {"op_time_ns": 50, "host_op_ns": 50, "wall_ns": 200, "other_share": 0.0}}
    cards = {c["key"]: c for c in hr.build_headline(s)["cards"]}
    # THEN no "0 tok/s" and no MFU; busy comes from host-op time
    assert set(cards) == {"busy", "other_share"}
    assert cards["busy"]["value"] == pytest.approx(25.0)
    assert hr.build_headline({}) is None
    # steps but no op events at all (a live run without the torch profiler): no busy or "other" card
    s["totals"]["op_time_ns"] = 0
    assert hr.build_headline(s) is None


def live_cpu_summary() -> dict:
    """The shape of a live CPU run: per-dtype peak FLOP/s, host RSS per process, token-rate series."""
    s = sample_summary()
    s["run"].update(device="cpu", device_name="AMD EPYC", engine={"dtype": "bfloat16"},
                    incomplete=True, incomplete_reason="interrupted")
    s["device"] = {"name": "cpu", "peak_flops": {"bf16": 2e12, "fp32": 1e12}, "mem_bw_bytes_s": 1e11,
                   "mem_bytes": None, "source": "nominal placeholder (server CPU)"}
    s["memory"] = {"series": [
        {"rank": 0, "name": "host_rss_bytes.worker", "t_ns": [0, 10], "value": [2**30, 2**31]},
        {"rank": 0, "name": "host_rss_bytes.engine_processes", "t_ns": [0, 10], "value": [2**31, 2**32]},
        {"rank": 0, "name": "kv_cache_usage", "t_ns": [0, 10], "value": [0.0, 0.002]},
        {"rank": 0, "name": "decode_tokens_per_s", "t_ns": [5, 10], "value": [500.0, 600.0]},
    ], "peak": {"host_rss_bytes.worker": 2**31, "host_rss_bytes.engine_processes": 2**32,
                "kv_cache_usage": 0.002, "decode_tokens_per_s": 600.0}}
    return s


def test_live_cpu_run_shapes():
    s = live_cpu_summary()
    h = hr.build_header(s)
    assert dict(h["facts"])["Device"] == "AMD EPYC (cpu) · 2 TFLOP/s bf16 peak · 0.10 TB/s"
    del s["run"]["started_at"]
    s["run"]["start_time_ns"] = 1_796_213_332_119_054_613
    assert dict(hr.build_header(s)["facts"])["Started"] == "2026-12-02 12:08:52 UTC"
    assert any("interrupted" in n for n in h["notes"]) and any("placeholder" in n for n in h["notes"])
    cards = {c["key"]: c for c in hr.build_headline(s)["cards"]}
    assert cards["peak_host_rss"]["value"] == 2**32
    # memory: bytes and KV usage, never the token rates
    mem, figs = hr.build_memory(s)
    assert [p["name"] for p in mem["peaks"]] == ["host_rss_bytes.worker", "host_rss_bytes.engine_processes",
                                                  "kv_cache_usage"]
    lines = {t["name"]: t for t in figs["memory"]["data"]}
    assert set(lines) == {"host RSS (worker)", "host RSS (engine_processes)", "KV-cache usage"}
    assert lines["host RSS (worker)"]["y"] == [1.0, 2.0]
    assert lines["host RSS (worker)"]["line"]["color"] != lines["host RSS (engine_processes)"]["line"]["color"]
    # the token rates get their own chart, on the same time axis
    rates, figs = hr.build_rates(s)
    (line,) = figs["rates"]["data"]
    assert line["name"] == "decode tok/s" and line["x"] == [5e-9, 1e-8] and line["y"] == [500.0, 600.0]
    assert [n["id"] for n in hr.build_report(s)["nav"]][:5] == ["headline", "fused_ops", "phases", "steps", "rates"]


def test_steps_section_shows_first_rank_by_phase():
    sec, figs = hr.build_steps(sample_summary())
    assert sec["steps"] == 12 and sec["total_steps"] == 24 and sec["ranks"] == [0, 1]
    assert sec["x"] == "time" and sec["binned"] == 1
    assert sec["caption"] == ("Step wall time coloured by phase; prefill and decode tokens per step; running and "
                              "waiting requests; host overhead: the step's wall time with no op running.")
    data = figs["steps"]["data"]
    walls = {t["name"]: t for t in data if t.get("mode") == "markers"}
    assert walls["prefill"]["y"] == [4.0, 4.2, 3.8]
    assert walls["decode"]["y"][0] == pytest.approx(1.0)
    assert walls["prefill"]["x"][0] == 0.0
    names = [t["name"] for t in data]
    assert "prefill tokens" in names and "host overhead (wall − busy)" in names
    overhead = next(t for t in data if t["name"].startswith("host overhead"))
    assert overhead["y"][0] == pytest.approx(1.0)  # (4.0 − 3.0) ms
    # each subplot row has its own y axis
    assert {t["yaxis"] for t in data} == {"y", "y2", "y3", "y4"}


def test_steps_unknown_counts_are_not_plotted():
    s = sample_summary()
    s["steps"]["running"] = [-1] * 24
    s["steps"]["waiting"] = [-1] * 24
    _, figs = hr.build_steps(s)
    assert not [t for t in figs["steps"]["data"] if "requests" in t["name"]]


def test_long_step_series_are_averaged_not_dropped():
    n = 10 * hr.MAX_POINTS + 7
    s = {"steps": {"rank": [0] * n, "phase": ["decode"] * n, "start_ns": list(range(0, n * 1000, 1000)),
                   "wall_ns": [1_000_000 + (i % 10) for i in range(n)]}}
    sec, figs = hr.build_steps(s)
    (trace,) = figs["steps"]["data"]
    assert sec["binned"] == 11
    assert len(trace["x"]) <= hr.MAX_POINTS
    assert sum(trace["y"]) / len(trace["y"]) == pytest.approx(1.0000045, rel=1e-6)


def test_memory_section_units_and_peaks():
    sec, figs = hr.build_memory(sample_summary())
    assert {p["name"]: p["value"] for p in sec["peaks"]} == {
        "device_allocated_bytes": 3.5 * 2**30, "device_reserved_bytes": 4 * 2**30, "kv_cache_usage": 0.6}
    data = {t["name"]: t for t in figs["memory"]["data"]}
    assert data["device allocated"]["y"] == [1.0, 3.0, 3.5, 3.25]             # GiB
    assert data["device allocated"]["x"] == [0.0, 0.005, 0.01, 0.02]           # s
    assert data["KV-cache usage"]["y"] == pytest.approx([0.0, 30.0, 60.0])     # %
    assert data["KV-cache usage"]["yaxis"] == "y2"
    assert hr.build_memory({}) == (None, {})


def test_kernels_section_sorted_shortened_and_capped():
    sec = hr.build_kernels(sample_summary(), {})
    assert [r["time_ns"] for r in sec["rows"]] == sorted((r["time_ns"] for r in sec["rows"]), reverse=True)
    flash = next(r for r in sec["rows"] if r["name"].startswith("void flash"))
    assert flash["short"] == "flash_fwd_kernel<Flash_fwd_kernel_traits<…>, false, false>"
    assert sec["fused_ops"] == ["attention", "gemm", "rms_norm", "other"]
    many = {"top_kernels": [{"name": f"k{i}", "time_ns": i, "count": 1} for i in range(hr.MAX_KERNEL_ROWS + 5)]}
    sec = hr.build_kernels(many, {})
    assert (sec["shown"], sec["total"]) == (hr.MAX_KERNEL_ROWS, hr.MAX_KERNEL_ROWS + 5)
    assert sec["rows"][0]["name"] == f"k{hr.MAX_KERNEL_ROWS + 4}"


@pytest.mark.parametrize("name, short", [
    ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
     "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)",
     "at::native::vectorized_elementwise_kernel<…>"),
    ("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>(Params)",
     "cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>"),  # fits: kept whole
    ("void f<a<b>, c<d<e>>>(int)", "f<a<b>, c<d<e>>>"),
    ("Memcpy HtoD (Pageable -> Device)", "Memcpy HtoD (Pageable -> Device)"),
    ("aten::mm", "aten::mm"),
    ("</script><b>x</b>", "</script><b>x</b>"),
])
def test_short_name(name, short):
    assert hr.short_name(name) == short


def test_short_name_cuts_the_middle_of_what_still_does_not_fit():
    s = hr.short_name("k" * 50 + "_" + "z" * 100)
    assert len(s) == hr.SHORT_NAME_LEN and s.startswith("kkk") and s.endswith("zzz") and "…" in s


def test_ranks_section_only_for_several_ranks():
    sec, figs = hr.build_ranks(sample_summary())
    assert [r["rank"] for r in sec["rows"]] == [0, 1]
    assert [r["vs_mean"] for r in sec["rows"]] == pytest.approx([0.04, -0.04])
    assert sec["spread"] == pytest.approx(0.08)
    assert figs["ranks"]["data"][0]["y"] == [5.2, 4.8]
    one = sample_summary()
    one["ranks"] = one["ranks"][:1]
    assert hr.build_ranks(one) == (None, {})


def test_header():
    h = hr.build_header(sample_summary())
    facts = dict(h["facts"])
    assert facts["Model"] == "tiny-llama"
    assert facts["Device"] == "Kunlun P800 (kunlun_p800) · 345 TFLOP/s peak · 2.90 TB/s · 96 GiB"
    assert facts["vLLM"] == "0.32.0" and facts["PyTorch"] == "2.13.0"
    assert ["enforce_eager", "True"] in h["engine"]
    assert h["sources"] == [{"path": "trace/rank-0.json.gz", "format": "kineto"}]
    # no model: the first source names the report
    assert hr.build_header({"run": {"sources": [{"path": "/x/a.json", "format": "kineto"},
                                                {"path": "/x/b.json", "format": "kineto"}]}})["title"] \
        == "a.json and 1 more"


# -- the whole report ------------------------------------------------------------------

def test_report_sections_and_figures_agree():
    r = hr.build_report(sample_summary())
    assert [n["id"] for n in r["nav"]] == ["headline", "fused_ops", "phases", "steps", "memory", "kernels", "ranks"]
    listed = [f for key in ("fused_ops", "phases", "steps", "memory", "ranks") for f in r[key]["figures"]]
    assert sorted(listed) == sorted(r["figures"])
    json.dumps(r, allow_nan=False)  # strictly JSON: no NaN, no numpy


def test_empty_summary_gives_only_a_header():
    r = hr.build_report({})
    assert r["nav"] == [] and r["figures"] == {}
    assert all(r[k] is None for k in ("headline", "fused_ops", "phases", "steps", "memory", "kernels", "ranks"))


@pytest.mark.parametrize("key", sorted(sample_summary()))
@pytest.mark.parametrize("value", ["missing", None, "empty"])
def test_any_part_of_the_summary_may_be_absent(key, value):
    s = sample_summary()
    if value == "missing":
        del s[key]
    elif value == "empty":
        s[key] = type(s[key])()
    else:
        s[key] = None
    r = hr.build_report(s)
    json.dumps(r, allow_nan=False)
    assert blob(hr.render(r)) == r


def test_nan_and_numpy_values_become_json():
    np = pytest.importorskip("numpy")
    s = sample_summary()
    s["phases"][0]["step_p99_ns"] = float("nan")
    s["fused_ops"][0]["time_ns"] = np.int64(4_000_000)
    r = hr.build_report(s)
    json.dumps(r, allow_nan=False)
    assert next(p for p in r["phases"]["rows"] if p["phase"] == "decode")["step_p99_ns"] is None


def test_plotly_option_is_checked():
    with pytest.raises(ValueError):
        hr.build_report({}, plotly="web")


# -- the file --------------------------------------------------------------------------

def test_write_is_self_contained(tmp_path):
    path = hr.write(None, sample_summary(), tmp_path / "r.html")
    html = path.read_text(encoding="utf-8")
    # the page's data is exactly the report
    assert blob(html) == hr.build_report(sample_summary())
    # plotly.js is inlined once, nothing is loaded from elsewhere
    head = templates.plotly_js()[:300]
    assert html.count(head) == 1
    assert not re.search(r"""<(script|link|img|iframe)[^>]+(src|href)\s*=\s*["']?(https?:)?//""", html, re.I)
    assert "default-src 'none'" in html


def test_cdn_mode_links_plotly_once(tmp_path):
    path = hr.write(None, sample_summary(), tmp_path / "r.html", plotly="cdn")
    html = path.read_text(encoding="utf-8")
    srcs = re.findall(r'<script[^>]+src="([^"]+)"', html)
    assert srcs == [f"https://cdn.plot.ly/plotly-{templates.plotly_version()}.min.js"]
    assert templates.plotly_js()[:300] not in html
    assert path.stat().st_size < 200_000


def test_untrusted_names_are_escaped(tmp_path):
    html = hr.write(None, hostile_summary(), tmp_path / "r.html").read_text(encoding="utf-8")
    data = blob(html)
    # every hostile string survives as data...
    assert data["kernels"]["rows"][0]["name"] in HOSTILE_NAMES
    assert data["header"]["title"] == HOSTILE_NAMES[3]
    # ...but never as markup: the only <script> tags are ours
    assert len(re.findall(r"<script\b", html)) == 3
    for name in HOSTILE_NAMES:
        assert name not in html
    assert not re.search(r"<img\b", html)


def test_registry_picks_the_html_exporter():
    assert by_suffix("out/report.html") is hr
    assert by_suffix("REPORT.HTM") is hr


# -- real traces, through the real reader and aggregator ---------------------------------

def _real_traces():
    if not REAL_TRACES.is_dir():
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"{REAL_TRACES} is not there"))]
    return [pytest.param(p, id=p.name) for p in sorted(REAL_TRACES.iterdir()) if not p.name.startswith("LICENSE")]


@pytest.mark.parametrize("trace", _real_traces())
def test_real_trace_sections(trace):
    from xpu_profiler.aggregator import summarize
    from xpu_profiler.readers import load

    summary = summarize(load([trace]))
    r = hr.build_report(summary)
    json.dumps(r, allow_nan=False)
    fo = r["fused_ops"]
    assert fo and round(sum(row["share"] for row in fo["rows"]) * 100, 1) == pytest.approx(100.0, abs=0.1)
    assert [row["time_ns"] for row in fo["rows"]] == sorted((row["time_ns"] for row in fo["rows"]), reverse=True)
    assert math.isclose(fo["total_ns"], summary["totals"]["op_time_ns"])
    assert r["kernels"]["rows"]
    listed = [f for key in ("fused_ops", "phases", "steps", "memory", "ranks") if r[key] for f in r[key]["figures"]]
    assert sorted(listed) == sorted(r["figures"])
