"""The HTML report's section data (numbers, ordering, shares), its escaping and its
self-containedness. Every summary here comes from the real analysis, run over small
Profiles built with the real data model (report_helpers) or over real traces; the
expected numbers are worked out from how those Profiles were built. Layout is checked
in a real browser in test_report_browser.py."""

from __future__ import annotations

import json
import math
import re
import statistics

import numpy as np
import pytest
import real_data
from report_helpers import (
    DECODE_STEPS,
    DECODE_TOKENS,
    DECODE_WALL,
    HOSTILE_NAMES,
    KERNELS,
    KERNELS_AT,
    LAUNCH_AT,
    LAUNCH_DUR,
    PREFILL_STEPS,
    PREFILL_TOKENS,
    PREFILL_WALL,
    RANK_SCALE,
    REPO,
    hostile_summary,
    kernel_ns,
    live_cpu_profile,
    sample_profile,
    sample_summary,
    step_plan,
    summarize,
)

from xpu_profiler import analysis
from xpu_profiler.core.profile import (
    EVENT_SCHEMA,
    K_CPU_OP,
    K_KERNEL,
    K_RUNTIME,
    P_UNKNOWN,
    STEP_SCHEMA,
    Profile,
    Table,
)
from xpu_profiler.exporters import by_suffix, html
from xpu_profiler.exporters.html import breakdown, counters, figures, header, headline, page, style, tables, timeline
from xpu_profiler.knowledge import kernel_names
from xpu_profiler.summary import Summary

PREFILL_TOK, DECODE_TOK = PREFILL_STEPS * PREFILL_TOKENS, DECODE_STEPS * DECODE_TOKENS  # one rank's


def blob(text: str) -> dict:
    """The report data as the page's script reads it (mirrors JSON.parse in report.js)."""
    m = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', text, re.S)
    assert m, "no report-data blob"
    return json.loads(m.group(1))


def expected_ns(ranks=(0, 1)) -> dict[str, dict[str, int]]:
    """Op time of sample_profile() by fused op and phase, summed the way it was built."""
    out: dict[str, dict[str, int]] = {}
    for name, _, _, _, fused in KERNELS:
        for phase, _, _ in step_plan():
            for r in ranks:
                cell = out.setdefault(fused, {"prefill": 0, "decode": 0})
                cell[phase] += kernel_ns(name, phase, r)
    return out


def expected_total(fused: str, ranks=(0, 1)) -> int:
    return sum(expected_ns(ranks)[fused].values())


def profile_of(events: dict, steps: dict | None = None) -> Profile:
    prof = Profile()
    ids = {n: prof.strings.intern(n) for n in dict.fromkeys(events.pop("names"))}
    events["name"] = [ids[n] for n in events.pop("name")]
    prof.events = Table(EVENT_SCHEMA, events)
    if steps:
        prof.steps = Table(STEP_SCHEMA, steps)
    return prof


# -- sections ---------------------------------------------------------------------


def test_fused_ops_section_is_sorted_and_shares_add_up():
    # GIVEN a summary whose fused ops arrive out of order
    s = sample_summary()
    s.fused_ops.reverse()
    colors = style.fused_colors(f.fused_op for f in s.fused_ops)

    # WHEN the section is built
    sec, figs = breakdown.build_fused_ops(s, colors)

    # THEN rows run by time, shares sum to 100 %, and "other" keeps its place and grey
    exp = expected_ns()
    order = sorted(exp, key=lambda f: -expected_total(f))
    assert order == ["gemm", "attention", "norm", "memcpy", "other"]
    assert [r["fused_op"] for r in sec["rows"]] == order
    assert [r["time_ns"] for r in sec["rows"]] == [expected_total(f) for f in order]
    assert sum(r["share"] for r in sec["rows"]) == pytest.approx(1.0)
    total = sum(expected_total(f) for f in exp)
    assert sec["total_ns"] == total == s.totals.op_time_ns
    assert sec["other_share"] == pytest.approx(expected_total("other") / total)
    assert sec["phases"] == ["prefill", "decode"]  # every kernel ran inside a step
    assert sec["per_token_phases"] == ["prefill", "decode"]  # no mixed steps: no mixed column
    assert sec["rows"][-1]["color"] == style.OTHER_COLOR
    # per token: each rank's time over its own tokens, the mean over ranks (rank 0 is the slower)
    assert sec["rows"][0]["per_token_ns"]["decode"] == pytest.approx(exp["gemm"]["decode"] / 2 / DECODE_TOK)
    gemm = next(f for f in s.fused_ops if f.fused_op == "gemm")
    assert gemm.per_token_max_ns_by_phase["decode"] == pytest.approx(expected_ns((0,))["gemm"]["decode"] / DECODE_TOK)
    # the figure stacks one trace per phase, in ms, ops in the table's order
    fig = figs["fused_ops"]
    assert [t["name"] for t in fig["data"]] == ["prefill", "decode"]
    assert fig["data"][0]["y"] == order
    assert fig["data"][0]["x"] == pytest.approx([exp[f]["prefill"] / 1e6 for f in order])
    assert fig["data"][0]["marker"]["color"] == style.PHASE_COLORS["prefill"]
    assert sec["figures"] == ["fused_ops"]


def test_fused_ops_without_phases_colour_bars_by_op():
    # GIVEN the same kernels with no engine steps at all (a trace without step annotations)
    prof = sample_profile()
    prof.steps = Table(STEP_SCHEMA)
    s = summarize(prof)
    sec, figs = breakdown.build_fused_ops(s, style.fused_colors(f.fused_op for f in s.fused_ops))
    (trace,) = figs["fused_ops"]["data"]
    assert sec["phases"] == []  # no per-phase columns that would repeat the time
    assert trace["x"] == pytest.approx(
        [expected_total(f) / 1e6 for f in ("gemm", "attention", "norm", "memcpy", "other")]
    )
    assert trace["marker"]["color"] == [r["color"] for r in sec["rows"]]


def test_fused_op_colours_are_the_same_in_every_report():
    a = style.fused_colors(["gemm", "attention", "other", "my_op"])
    b = style.fused_colors(["my_op", "attention", "gemm"])
    assert a["gemm"] == b["gemm"] and a["attention"] == b["attention"]
    assert a["other"] == style.OTHER_COLOR
    assert a["my_op"] == b["my_op"] == style.FUSED_PALETTE[0]
    assert len(set(style.FUSED_OP_COLORS.values())) == len(style.FUSED_OP_COLORS)


def test_phases_section_order_and_mix():
    s = sample_summary()
    s.phases.reverse()
    sec, figs = breakdown.build_phases(s, style.fused_colors(f.fused_op for f in s.fused_ops))
    exp = expected_ns()
    # prefill before decode whatever the input order
    assert [r["phase"] for r in sec["rows"]] == ["prefill", "decode"]
    prefill_ns = sum(v["prefill"] for v in exp.values())
    assert sec["rows"][0]["per_token_ns"] == pytest.approx(prefill_ns / 2 / PREFILL_TOK)  # mean over 2 ranks
    # engine steps, once each: both ranks ran every one
    assert sec["rows"][0]["steps"] == PREFILL_STEPS and sec["rows"][1]["steps"] == DECODE_STEPS
    assert sec["known"] is True
    # each phase's op time splits over fused ops; shares add up to 1
    for phase, parts in sec["mix"].items():
        assert sum(p["share"] for p in parts) == pytest.approx(1.0), phase
    assert {p["fused_op"]: p["time_ns"] for p in sec["mix"]["decode"]} == {f: v["decode"] for f, v in exp.items()}
    assert sorted(figs) == sorted(sec["figures"]) == ["per_token", "phase_mix"]
    per_token = {t["name"]: t["y"] for t in figs["per_token"]["data"]}
    assert per_token["prefill"][0] == pytest.approx(exp["gemm"]["prefill"] / 2 / PREFILL_TOK / 1e3)  # µs per token


def test_phases_section_needs_steps_or_a_known_phase():
    # op time outside every step of a trace without steps is no phase to compare
    prof = sample_profile()
    prof.steps = Table(STEP_SCHEMA)
    s = summarize(prof)
    assert [p.phase for p in s.phases] == ["unknown"] and s.phases[0].steps == 0
    assert breakdown.build_phases(s, {}) == (None, {})
    # steps without token counts (ProfilerStep#N ranges): one "unknown" phase, said so
    prof = sample_profile()
    prof.steps["phase"] = np.full(len(prof.steps), P_UNKNOWN)
    prof.steps["prefill_tokens"] = prof.steps["decode_tokens"] = np.zeros(len(prof.steps))
    sec, _ = breakdown.build_phases(summarize(prof), {})
    assert sec["known"] is False and [r["phase"] for r in sec["rows"]] == ["unknown"]
    assert sec["rows"][0]["steps"] == PREFILL_STEPS + DECODE_STEPS  # engine steps, once each


def test_headline_cards():
    s = sample_summary()
    head = headline.build_headline(s)
    cards = {c["key"]: c for c in head["cards"]}
    plan = step_plan()
    end = plan[-1][1] + plan[-1][2]
    assert cards["output_tok_s"]["value"] == pytest.approx(80 / end * 1e9)  # 8 requests × 10 tokens
    assert cards["output_tok_s"]["sub"] == "8 requests"
    first = [plan[i % PREFILL_STEPS][1] + PREFILL_WALL[i % PREFILL_STEPS] - i * 10_000 for i in range(8)]
    assert cards["ttft"]["value"] == pytest.approx(statistics.median(first)) and cards["ttft"]["unit"] == "ns"
    assert cards["step_decode"]["value"] == statistics.median(DECODE_WALL)
    assert cards["step_prefill"]["value"] == statistics.median(PREFILL_WALL)
    # busy: mean over ranks of (the steps' own device work / their device time: the steps
    # run back to back on the device, so from the first kernel's start to the last one's end)
    busy = []
    for r in RANK_SCALE:
        work = sum(kernel_ns(k[0], ph, r) for k in KERNELS for ph, _, _ in plan)
        last = plan[-1][1] + KERNELS_AT + sum(kernel_ns(k[0], "decode", r) for k in KERNELS)
        busy.append(work / (last - (plan[0][1] + KERNELS_AT)))
    assert cards["busy"]["value"] == pytest.approx(100 * sum(busy) / 2)
    assert cards["peak_device_allocated_bytes"]["value"] == 3.5 * 2**30
    assert cards["peak_device_allocated_bytes"]["sub"] == "4.4% of 80 GiB"  # the H100's memory
    assert cards["peak_kv"]["value"] == pytest.approx(60.0)
    assert cards["other_share"]["value"] == pytest.approx(100 * s.totals.other_share)
    # no FLOPs known (no model config, no traced FLOPs): no MFU or bandwidth card
    assert not [k for k in cards if k.startswith(("mfu", "bw_"))] and s.roofline == []
    assert [r["label"] for r in head["latency"]] == [
        "Time to first token",
        "Time per output token",
        "End-to-end latency",
    ]


def test_headline_leaves_out_what_is_unknown():
    # GIVEN a host-only trace without token counts, requests or device spec
    prof = profile_of(
        {
            "names": ["aten::mm", "cudaDeviceSynchronize"],
            "name": ["aten::mm", "cudaDeviceSynchronize"],
            "kind": [K_CPU_OP, K_RUNTIME],
            "start": [0, 190],
            "dur": [50, 10],
            "track": [1, 1],
        }
    )
    s = summarize(prof)
    cards = {c["key"]: c for c in headline.build_headline(s)["cards"]}
    # THEN no "0 tok/s" and no MFU; busy comes from host-op time
    assert set(cards) == {"busy", "other_share"}
    assert cards["busy"]["value"] == pytest.approx(25.0)  # 50 of 200 ns
    assert headline.build_headline(summarize(Profile())) is None
    # events but no op time at all (runtime calls only): no busy or "other" card
    prof = profile_of({"names": ["cudaMalloc"], "name": ["cudaMalloc"], "kind": [K_RUNTIME], "start": [0], "dur": [10]})
    assert headline.build_headline(summarize(prof)) is None


def test_live_cpu_run_shapes():
    s = summarize(live_cpu_profile())
    h = header.build_header(s)
    facts = dict(h["facts"])
    assert facts["Device"] == "AMD EPYC (cpu)"  # no sourced peak for CPUs: none shown
    assert facts["Started"] == "2026-12-02 12:08:52 UTC"
    assert any("interrupted" in n for n in h["notes"]) and any("no sourced peak" in n for n in h["notes"])
    cards = {c["key"]: c for c in headline.build_headline(s)["cards"]}
    # no device memory: the largest host process's peak, named
    assert cards["peak_host_rss"]["value"] == 2**31 and cards["peak_host_rss"]["sub"] == "worker process"
    assert cards["busy"]["label"] == "Host op busy"
    # memory: bytes and KV usage, never the token rates
    mem, figs = counters.build_memory(s)
    assert {p["name"] for p in mem["peaks"]} == {
        "host_rss_bytes.worker",
        "host_rss_bytes.engine_core",
        "kv_cache_usage",
    }
    lines = {t["name"]: t for t in figs["memory"]["data"]}
    assert set(lines) == {"host RSS (worker)", "host RSS (engine_core)", "KV-cache usage"}
    assert lines["host RSS (worker)"]["y"] == [1.0, 2.0]
    assert lines["host RSS (worker)"]["line"]["color"] != lines["host RSS (engine_core)"]["line"]["color"]
    # the token rates get their own chart, on the same time axis
    rates, figs = counters.build_rates(s)
    (line,) = figs["rates"]["data"]
    assert line["name"] == "decode tok/s" and line["x"] == [5e-9, 1e-8] and line["y"] == [500.0, 600.0]
    assert [n["id"] for n in html.build_report(s)["nav"]][:6] == [
        "verdicts",
        "headline",
        "fused_ops",
        "phases",
        "steps",
        "rates",
    ]


def test_steps_section_shows_first_rank_by_phase():
    sec, figs = timeline.build_steps(sample_summary())
    n = PREFILL_STEPS + DECODE_STEPS
    assert sec["steps"] == n and sec["total_steps"] == 2 * n and sec["ranks"] == [0, 1]
    assert sec["x"] == "time" and sec["binned"] == 1
    # each step's kernels run back to back on the device: no idle row to draw
    assert sec["caption"] == (
        "Step wall time coloured by phase; prefill and decode tokens per step; running and waiting requests."
    )
    data = figs["steps"]["data"]
    walls = {t["name"]: t for t in data if t.get("mode") == "markers"}
    assert walls["prefill"]["y"] == [w / 1e6 for w in PREFILL_WALL]
    assert walls["decode"]["y"][0] == pytest.approx(DECODE_WALL[0] / 1e6)
    assert walls["prefill"]["x"][0] == 0.0
    names = [t["name"] for t in data]
    assert "prefill tokens" in names and not [n for n in names if "idle" in n or "overhead" in n]
    # each subplot row has its own y axis
    assert {t["yaxis"] for t in data} == {"y", "y2", "y3"}


def test_steps_section_idle_row_on_each_clock():
    # GIVEN the sample run with a 10 µs gap before every kernel but a step's first
    prof = sample_profile()
    ev = prof.events
    starts = [t0 for _, t0, _ in step_plan()]
    shift, seen = np.zeros(len(ev), np.int64), {}
    for i in np.flatnonzero(ev["device"] >= 0).tolist():  # the k-th kernel of a step moves by k × 10 µs
        key = (int(ev["rank"][i]), int(np.searchsorted(starts, ev["start"][i], side="right")))
        shift[i] = 10_000 * seen.get(key, 0)
        seen[key] = seen.get(key, 0) + 1
    ev["start"] = ev["start"] + shift
    s = summarize(prof)
    sec, figs = timeline.build_steps(s)
    idle = next(t for t in figs["steps"]["data"] if t["name"].startswith("device idle"))
    kernels = {ph: sum(1 for k in KERNELS if kernel_ns(k[0], ph, 0)) for ph in ("prefill", "decode")}
    # THEN the row is the device idle inside each step's device span: the gaps, in ms
    assert idle["y"][0] == pytest.approx((kernels["prefill"] - 1) * 10_000 / 1e6)
    assert idle["y"][-1] == pytest.approx((kernels["decode"] - 1) * 10_000 / 1e6)
    assert sec["caption"].endswith("device idle: time inside the step's device span with no device work.")
    # inside a step the work was queued long before: its short gaps are kernel wait
    d = s.device_steps
    assert d.kernel_wait_ns[:2] == [(kernels["prefill"] - 1) * 10_000] * 2 and d.host_wait_ns[0] == 0
    # between steps the device drained: the next step's first launch (10 µs into it, its
    # call returning 5 µs later) came after the previous step's last kernel ended, and its
    # first kernel started 85 µs after that
    plan = step_plan()
    prev_end = KERNELS_AT + sum(kernel_ns(k[0], "prefill", 0) for k in KERNELS) + d.kernel_wait_ns[0]
    assert d.device_end_ns[0] == prev_end
    assert d.starved_ns[1] == plan[1][1] + KERNELS_AT - prev_end
    assert d.host_wait_ns[1] == plan[1][1] + LAUNCH_AT + LAUNCH_DUR - prev_end
    assert d.other_ns[1] == KERNELS_AT - LAUNCH_AT - LAUNCH_DUR
    period = d.starved_ns[1] + d.device_end_ns[1] - d.device_start_ns[1]
    assert d.bound[:2] == ["device", "host" if d.host_wait_ns[1] >= 0.2 * period else "device"] == ["device", "host"]
    # GIVEN a CPU run (host ops, no device work): the host window's wall − busy instead
    sec, figs = timeline.build_steps(summarize(live_cpu_profile()))
    overhead = next(t for t in figs["steps"]["data"] if t["name"].startswith("host overhead"))
    busy0 = sum(kernel_ns(k[0], "prefill", 0) for k in KERNELS)
    assert overhead["y"][0] == pytest.approx((PREFILL_WALL[0] - busy0) / 1e6)


def test_steps_unknown_counts_are_not_plotted():
    prof = sample_profile()
    prof.steps["running"] = prof.steps["waiting"] = np.full(len(prof.steps), -1)
    _, figs = timeline.build_steps(summarize(prof))
    assert not [t for t in figs["steps"]["data"] if "requests" in t["name"]]


def test_long_step_series_are_averaged_not_dropped():
    n = 10 * figures.MAX_POINTS + 7
    prof = Profile()
    prof.steps = Table(
        STEP_SCHEMA,
        {
            "rank": np.zeros(n),
            "step_id": np.arange(n),
            "start": np.arange(n) * 2_000_000,
            "dur": 1_000_000 + np.arange(n) % 10,
            "phase": np.full(n, 2),
            "decode_tokens": np.ones(n),
        },
    )
    sec, figs = timeline.build_steps(summarize(prof))
    (trace,) = [t for t in figs["steps"]["data"] if t.get("mode") == "markers"]
    assert sec["binned"] == 11
    assert len(trace["x"]) <= figures.MAX_POINTS
    assert sum(trace["y"]) / len(trace["y"]) == pytest.approx(1.0000045, rel=1e-6)


def test_memory_section_units_and_peaks():
    sec, figs = counters.build_memory(sample_summary())
    assert {p["name"]: p["value"] for p in sec["peaks"]} == {
        "device_allocated_bytes": 3.5 * 2**30,
        "device_reserved_bytes": 4 * 2**30,
        "kv_cache_usage": 0.6,
    }
    data = {t["name"]: t for t in figs["memory"]["data"]}
    end = step_plan()[-1][1] + step_plan()[-1][2]
    assert data["device allocated"]["y"] == [1.0, 3.0, 3.5, 3.25]  # GiB
    assert data["device allocated"]["x"] == [0.0, 0.005, 0.01, end / 1e9]  # s
    assert data["KV-cache usage"]["y"] == pytest.approx([0.0, 30.0, 60.0])  # %
    assert data["KV-cache usage"]["yaxis"] == "y2"
    prof = sample_profile()
    prof.counters = Table(prof.counters.schema)
    assert counters.build_memory(summarize(prof)) == (None, {})


def test_kernels_section_sorted_shortened_and_capped():
    sec = tables.build_kernels(sample_summary(), {})
    assert [r["time_ns"] for r in sec["rows"]] == sorted((r["time_ns"] for r in sec["rows"]), reverse=True)
    flash = next(r for r in sec["rows"] if r["name"].startswith("void flash"))
    assert flash["short"] == "flash_fwd_kernel<Flash_fwd_kernel_traits<…>, false, false>"
    assert flash["time_ns"] == expected_total("attention") - 2 * DECODE_STEPS * 100_000 * 0.95
    assert sec["fused_ops"] == ["attention", "gemm", "memcpy", "norm", "other"]
    n = tables.MAX_KERNEL_ROWS + 5
    names = [f"k{i}" for i in range(n)]
    prof = profile_of(
        {
            "names": names,
            "name": names,
            "kind": [K_KERNEL] * n,
            "start": np.arange(n) * 1000,
            "dur": np.arange(n) + 1,
            "device": [0] * n,
            "track": [7] * n,
        }
    )
    sec = tables.build_kernels(analysis.summarize(prof, top=n), {})
    assert (sec["shown"], sec["total"]) == (tables.MAX_KERNEL_ROWS, n)
    assert sec["rows"][0]["name"] == f"k{n - 1}"


@pytest.mark.parametrize(
    "name, short",
    [
        (
            "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
            "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)",
            "at::native::vectorized_elementwise_kernel<…>",
        ),
        (
            "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>(Params)",
            "cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>",
        ),  # fits: kept whole
        ("void f<a<b>, c<d<e>>>(int)", "f<a<b>, c<d<e>>>"),
        ("Memcpy HtoD (Pageable -> Device)", "Memcpy HtoD (Pageable -> Device)"),
        ("aten::mm", "aten::mm"),
        ("</script><b>x</b>", "</script><b>x</b>"),
    ],
)
def test_short_name(name, short):
    assert kernel_names.short_name(name) == short


def test_short_name_cuts_the_middle_of_what_still_does_not_fit():
    s = kernel_names.short_name("k" * 50 + "_" + "z" * 100)
    assert len(s) == kernel_names.SHORT_NAME_LEN and s.startswith("kkk") and s.endswith("zzz") and "…" in s


def test_ranks_section_only_for_several_ranks():
    sec, figs = tables.build_ranks(sample_summary())
    assert [r["rank"] for r in sec["rows"]] == [0, 1]
    # rank 1's kernels are 10% shorter: 1.0 and 0.9 of the mean 0.95
    assert [r["vs_mean"] for r in sec["rows"]] == pytest.approx([0.05 / 0.95, -0.05 / 0.95], rel=1e-3)
    assert sec["spread"] == pytest.approx(0.1 / 0.95, rel=1e-3)
    op0 = sum(expected_total(f, ranks=(0,)) for f in expected_ns())
    assert figs["ranks"]["data"][0]["y"][0] == pytest.approx(op0 / 1e6)
    assert tables.build_ranks(summarize(sample_profile(ranks=(0,)))) == (None, {})


def test_header():
    h = header.build_header(sample_summary())
    facts = dict(h["facts"])
    assert facts["Model"] == "tiny-llama"
    assert facts["Device"] == "NVIDIA H100 (cuda) · 989 TFLOP/s bf16 peak · 3.35 TB/s · 80 GiB"
    assert facts["vLLM"] == "0.32.0" and facts["PyTorch"] == "2.13.0"
    assert facts["Started"] == "2026-12-02 12:08:52 UTC" and facts["Host"] == "node-1"
    assert ["enforce_eager", "True"] in h["engine"]
    assert h["sources"] == [{"path": "records/worker-0.records.jsonl", "format": "live"}]
    # no model: the first source names the report
    prof = Profile()
    prof.run["sources"] = [{"path": "/x/a.json", "format": "kineto"}, {"path": "/x/b.json", "format": "kineto"}]
    assert header.build_header(summarize(prof))["title"] == "a.json and 1 more"


# -- the whole report ------------------------------------------------------------------


def test_report_sections_and_figures_agree():
    r = html.build_report(sample_summary())
    assert [n["id"] for n in r["nav"]] == [
        "verdicts",
        "findings",
        "headline",
        "fused_ops",
        "phases",
        "device",
        "steps",
        "memory",
        "kernels",
        "ranks",
        "rank_steps",
    ]
    listed = [
        f
        for key in ("fused_ops", "phases", "device", "steps", "memory", "ranks", "rank_steps")
        for f in r[key]["figures"]
    ]
    assert sorted(listed) == sorted(r["figures"])
    assert r["warnings"] == ["rank 1: 3 odd events skipped"]
    json.dumps(r, allow_nan=False)  # strictly JSON: no NaN, no numpy


def test_empty_summary_gives_only_a_header():
    r = html.build_report(summarize(Profile()))
    assert r["nav"] == [] and r["figures"] == {}
    assert all(r[k] is None for k in ("headline", "fused_ops", "phases", "steps", "memory", "kernels", "ranks"))


SECTIONS = [f for f in Summary.__struct_fields__ if f not in ("schema", "schema_version")]


@pytest.mark.parametrize("field", SECTIONS)
def test_any_section_of_the_summary_may_be_empty(field):
    # GIVEN a full summary with one section at its empty default
    s = sample_summary()
    setattr(s, field, getattr(Summary(), field))
    # THEN the report still builds, is strict JSON and is exactly what the page gets
    r = html.build_report(s)
    json.dumps(r, allow_nan=False)
    assert blob(html.render(r)) == r


def test_nan_and_numpy_values_become_json():
    s = sample_summary()
    s.phases[1].step_p99_ns = float("nan")
    s.fused_ops[0].time_ns = np.int64(s.fused_ops[0].time_ns)
    r = html.build_report(s)
    json.dumps(r, allow_nan=False)
    assert next(p for p in r["phases"]["rows"] if p["phase"] == "decode")["step_p99_ns"] is None


def test_plotly_option_is_checked():
    with pytest.raises(ValueError):
        html.build_report(Summary(), plotly="web")


# -- the file --------------------------------------------------------------------------


def test_write_is_self_contained(tmp_path):
    s = sample_summary()
    path = html.write(None, s, tmp_path / "r.html")
    text = path.read_text(encoding="utf-8")
    # the page's data is exactly the report
    assert blob(text) == html.build_report(s)
    # plotly.js is inlined once, nothing is loaded from elsewhere
    head = page.plotly_js()[:300]
    assert text.count(head) == 1
    assert not re.search(r"""<(script|link|img|iframe)[^>]+(src|href)\s*=\s*["']?(https?:)?//""", text, re.I)
    assert "default-src 'none'" in text


def test_plotly_version_is_plotlys_own():
    """Read from the bundled plotly.min.js without importing plotly: the version plotly says."""
    from plotly.offline import get_plotlyjs_version

    assert page.plotly_version() == get_plotlyjs_version()
    assert page.plotly_js().count("plotly.js v" + get_plotlyjs_version()) >= 1


def test_cdn_mode_links_plotly_once(tmp_path):
    path = html.write(None, sample_summary(), tmp_path / "r.html", plotly="cdn")
    text = path.read_text(encoding="utf-8")
    srcs = re.findall(r'<script[^>]+src="([^"]+)"', text)
    assert srcs == [f"https://cdn.plot.ly/plotly-{page.plotly_version()}.min.js"]
    assert page.plotly_js()[:300] not in text
    assert path.stat().st_size < 200_000


def test_untrusted_names_are_escaped(tmp_path):
    text = html.write(None, hostile_summary(), tmp_path / "r.html").read_text(encoding="utf-8")
    data = blob(text)
    # every hostile string survives as data...
    assert {r["name"] for r in data["kernels"]["rows"]} == set(HOSTILE_NAMES) | {"mystery_kernel_v3"}
    assert data["header"]["title"] == HOSTILE_NAMES[3]
    assert HOSTILE_NAMES[0] in data["warnings"]
    # ...but never as markup: the only <script> tags are ours
    assert len(re.findall(r"<script\b", text)) == 3
    for name in HOSTILE_NAMES:
        assert name not in text
    assert not re.search(r"<img\b", text)


def test_registry_picks_the_html_exporter():
    assert by_suffix("out/report.html") is html
    assert by_suffix("REPORT.HTM") is html


# -- real traces, through the real reader and aggregator ---------------------------------


def _real_traces():
    return [pytest.param(p, id=p.name) for p in real_data.runs()]


@pytest.mark.parametrize("trace", _real_traces())
def test_real_trace_sections(trace):
    _, summary = analysis.analyze([trace])
    r = html.build_report(summary)
    json.dumps(r, allow_nan=False)
    fo = r["fused_ops"]
    assert fo and round(sum(row["share"] for row in fo["rows"]) * 100, 1) == pytest.approx(100.0, abs=0.1)
    assert [row["time_ns"] for row in fo["rows"]] == sorted((row["time_ns"] for row in fo["rows"]), reverse=True)
    assert math.isclose(fo["total_ns"], summary.totals.op_time_ns)
    assert r["kernels"]["rows"]
    listed = [
        f
        for key in ("fused_ops", "phases", "layers", "device", "steps", "memory", "ranks", "rank_steps")
        if r[key]
        for f in r[key]["figures"]
    ]
    assert sorted(listed) == sorted(r["figures"])


def test_real_vllm_step_annotations_split_the_phases():
    # the prefill-decode trace of the TraceLens suite: one eager prefill step of 15,360 tokens
    trace = real_data.need("tracelens/sglang-qwen3-8b-prefilldecode.json.gz")
    _, summary = analysis.analyze([trace])
    sec, figs = breakdown.build_phases(summary, {})
    (row,) = sec["rows"]
    assert (row["phase"], row["steps"], row["tokens"]) == ("prefill", 1, 15_360)
    assert row["per_token_ns"] == pytest.approx(summary.phases[0].time_ns / 15_360)
    assert sec["known"] and "per_token" in figs


def test_every_template_file_ships_as_package_data():
    import fnmatch
    from pathlib import Path

    from xpu_profiler.core import toml

    globs = toml.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    pkg = Path(html.__file__).parent
    shipped = globs["xpu_profiler.exporters.html"]
    files = [p.relative_to(pkg).as_posix() for p in (pkg / "templates").iterdir()]
    assert files and all(any(fnmatch.fnmatch(f, g) for g in shipped) for f in files), files
    assert "templates/report.html" in files and not (pkg / "templates" / "__init__.py").exists()


def test_compiled_templates_are_kept_and_a_broken_cache_is_no_error(tmp_path, monkeypatch):
    """The compiled template is kept in the cache directory and used by the next render;
    a cache that cannot be written (its directory is a file) or read (garbage) renders
    the same page."""
    s = sample_summary()
    want = html.write(None, s, tmp_path / "want.html").read_text(encoding="utf-8")
    cases = {"kept": tmp_path / "cache", "unwritable": tmp_path / "a-file"}
    cases["kept"].mkdir()
    cases["unwritable"].write_text("not a directory")
    for what, where in cases.items():
        page.environment.cache_clear()
        monkeypatch.setattr(page, "_bytecode_cache", lambda d=where: page.template_cache(str(d)))
        got = html.write(None, s, tmp_path / f"{what}.html").read_text(encoding="utf-8")
        assert got == want, what
    kept = sorted(cases["kept"].iterdir())
    assert kept and all(f.name.endswith(".cache") and f.stat().st_size > 500 for f in kept)  # one per template
    for f in kept:
        f.write_bytes(b"garbage")  # damaged cache files
    page.environment.cache_clear()
    monkeypatch.setattr(page, "_bytecode_cache", lambda: page.template_cache(str(cases["kept"])))
    assert html.write(None, s, tmp_path / "damaged.html").read_text(encoding="utf-8") == want
    page.environment.cache_clear()
