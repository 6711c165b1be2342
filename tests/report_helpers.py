"""Shared by the report tests and bench/bench_report.py: a hand-built summary with
known numbers, and a headless Chromium that opens a report and says what it saw."""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
ARTIFACTS = REPO / "artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]

# Kernel names that try to break out of the page in every way a name can.
HOSTILE_NAMES = [
    "<script>window.__pwned = 1; alert(1)</script>",
    "</script><script>window.__pwned = 2</script>",
    '" onerror="window.__pwned=3" x="',
    "<img src=x onerror=\"window.__pwned=4\">",
    "' onmouseover='window.__pwned=5",
]


def sample_summary() -> dict[str, Any]:
    """A two-rank run with prefill and decode steps, memory series and throughput."""
    n = 12
    phases = ["prefill"] * 3 + ["decode"] * 9
    wall = [4_000_000, 4_200_000, 3_800_000] + [1_000_000 + 10_000 * i for i in range(9)]
    busy = [3_000_000, 3_100_000, 2_900_000] + [700_000] * 9
    steps: dict[str, list] = {k: [] for k in ("rank", "step_id", "phase", "start_ns", "wall_ns", "busy_ns", "idle_ns",
                                              "prefill_tokens", "decode_tokens", "running", "waiting", "kv_usage")}
    for rank in (0, 1):
        t = 0
        for i in range(n):
            steps["rank"].append(rank)
            steps["step_id"].append(i)
            steps["phase"].append(phases[i])
            steps["start_ns"].append(t)
            steps["wall_ns"].append(wall[i])
            steps["busy_ns"].append(busy[i])
            steps["idle_ns"].append(wall[i] - busy[i])
            steps["prefill_tokens"].append(128 if phases[i] == "prefill" else 0)
            steps["decode_tokens"].append(8 if phases[i] == "decode" else 0)
            steps["running"].append(8)
            steps["waiting"].append(max(0, 5 - i))
            steps["kv_usage"].append(0.05 * (i + 1))
            t += wall[i] + 50_000
    total = 10_000_000
    return {
        "schema": "xpu_profiler.summary", "schema_version": 1,
        "run": {"model": "tiny-llama", "device": "kunlun_p800",
                "versions": {"vllm": "0.32.0", "torch": "2.13.0"},
                "engine": {"tensor_parallel_size": 2, "max_num_seqs": 8, "enforce_eager": True},
                "workload": {"prompts": 8, "input_len": 128, "output_len": 9},
                "detail_level": "kernels", "metrics": ["time", "memory"], "started_at": "2026-01-01T00:00:00Z",
                "host": "node-1", "sources": [{"path": "trace/rank-0.json.gz", "format": "kineto"}],
                "has_timeline": True, "incomplete": False},
        "basis": "device",
        "totals": {"op_time_ns": total, "device_kernel_ns": total, "device_busy_ns": 17_400_000,
                   "host_op_ns": 0, "wall_ns": 21_090_000, "events": 5000, "steps": 24, "ranks": 2,
                   "other_share": 0.05},
        "fused_ops": [
            {"fused_op": "attention", "time_ns": 4_000_000, "count": 240, "share": 0.4,
             "by_phase": {"prefill": 2_500_000, "decode": 1_500_000, "mixed": 0, "unknown": 0},
             "per_token_ns": {"prefill": 2_500_000 / 384, "decode": 1_500_000 / 72}},
            {"fused_op": "gemm", "time_ns": 3_500_000, "count": 480, "share": 0.35,
             "by_phase": {"prefill": 2_000_000, "decode": 1_500_000, "mixed": 0, "unknown": 0},
             "per_token_ns": {"prefill": 2_000_000 / 384, "decode": 1_500_000 / 72}},
            {"fused_op": "rms_norm", "time_ns": 2_000_000, "count": 240, "share": 0.2,
             "by_phase": {"prefill": 1_000_000, "decode": 1_000_000, "mixed": 0, "unknown": 0},
             "per_token_ns": {"prefill": 1_000_000 / 384, "decode": 1_000_000 / 72}},
            {"fused_op": "other", "time_ns": 500_000, "count": 60, "share": 0.05,
             "by_phase": {"prefill": 200_000, "decode": 100_000, "mixed": 0, "unknown": 200_000},
             "per_token_ns": {"prefill": None, "decode": None}},
        ],
        "phases": [
            {"phase": "decode", "steps": 18, "time_ns": 4_100_000, "wall_ns": 18_720_000, "tokens": 72,
             "per_token_ns": 4_100_000 / 72, "step_p50_ns": 1_040_000, "step_p99_ns": 1_080_000},
            {"phase": "prefill", "steps": 6, "time_ns": 5_700_000, "wall_ns": 24_000_000, "tokens": 384,
             "per_token_ns": 5_700_000 / 384, "step_p50_ns": 4_000_000, "step_p99_ns": 4_196_000},
        ],
        "top_kernels": [
            {"name": "void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64, 64, 4, false, false, cutlass::half_t>, "
                     "false, false>(Flash_fwd_params)", "fused_op": "attention", "kind": "kernel",
             "count": 120, "time_ns": 2_500_000, "mean_ns": 2_500_000 / 120, "share": 0.25},
            {"name": "ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_tn", "fused_op": "gemm",
             "kind": "kernel", "count": 480, "time_ns": 3_500_000, "mean_ns": 3_500_000 / 480, "share": 0.35},
            {"name": "rms_norm_kernel", "fused_op": "rms_norm", "kind": "kernel", "count": 240,
             "time_ns": 2_000_000, "mean_ns": 2_000_000 / 240, "share": 0.2},
            {"name": "paged_attention_v2_kernel", "fused_op": "attention", "kind": "kernel", "count": 120,
             "time_ns": 1_500_000, "mean_ns": 12_500, "share": 0.15},
            {"name": "Memcpy HtoD (Pageable -> Device)", "fused_op": "other", "kind": "memcpy", "count": 60,
             "time_ns": 500_000, "mean_ns": 500_000 / 60, "share": 0.05},
        ],
        "steps": steps,
        "ranks": [{"rank": 0, "op_time_ns": 5_200_000, "device_kernel_ns": 5_200_000, "wall_ns": 21_040_000,
                   "steps": 12, "busy_share": 0.83},
                  {"rank": 1, "op_time_ns": 4_800_000, "device_kernel_ns": 4_800_000, "wall_ns": 21_090_000,
                   "steps": 12, "busy_share": 0.81}],
        "memory": {"series": [
            {"rank": 0, "name": "device_allocated_bytes", "t_ns": [0, 5_000_000, 10_000_000, 20_000_000],
             "value": [1 * 2**30, 3 * 2**30, 3.5 * 2**30, 3.25 * 2**30]},
            {"rank": 0, "name": "device_reserved_bytes", "t_ns": [0, 5_000_000, 20_000_000],
             "value": [2 * 2**30, 4 * 2**30, 4 * 2**30]},
            {"rank": 0, "name": "kv_cache_usage", "t_ns": [0, 10_000_000, 20_000_000], "value": [0.0, 0.3, 0.6]},
        ], "peak": {"device_allocated_bytes": 3.5 * 2**30, "device_reserved_bytes": 4 * 2**30,
                    "kv_cache_usage": 0.6}},
        "throughput": {"prefill_tokens": 384, "decode_tokens": 72, "duration_ns": 21_090_000,
                       "prefill_tok_s": 384 / 0.02109, "decode_tok_s": 72 / 0.02109, "output_tok_s": 80 / 0.02109,
                       "requests": 8, "ttft_ns": {"p50": 4_000_000, "p99": 12_000_000, "mean": 6_000_000},
                       "tpot_ns": {"p50": 1_050_000, "p99": 1_100_000, "mean": 1_060_000},
                       "e2e_ns": {"p50": 13_000_000, "p99": 21_000_000, "mean": 15_000_000}},
        "device": {"name": "Kunlun P800", "peak_flops": 345e12, "mem_bw_bytes_s": 2.9e12,
                   "mem_bytes": 96 * 2**30, "mfu": 0.012},
        "warnings": ["rank 1: 3 kernels outside every step"],
    }


def hostile_summary() -> dict[str, Any]:
    """sample_summary() with kernel, fused-op, model and warning text that tries to inject code."""
    s = sample_summary()
    for k, name in zip(s["top_kernels"], HOSTILE_NAMES):
        k["name"] = name
    s["fused_ops"][2]["fused_op"] = HOSTILE_NAMES[1]
    s["top_kernels"][2]["fused_op"] = HOSTILE_NAMES[1]
    s["run"]["model"] = HOSTILE_NAMES[3]
    s["run"]["engine"][HOSTILE_NAMES[2]] = HOSTILE_NAMES[0]
    s["warnings"].append(HOSTILE_NAMES[0])
    return s


def write_kineto_trace(path: Path, kernel_names: list[str]) -> Path:
    """A small torch.profiler (Kineto) trace: one prefill and three decode engine steps
    with vLLM's step annotations; each step launches every kernel in ``kernel_names``."""
    ev: list[dict[str, Any]] = []
    t, corr = 1000.0, 1
    steps = [("execute_context_2(64)_generation_0(0)", 64)] + [("execute_context_0(0)_generation_2(2)", 2)] * 3
    for label, _ in steps:
        t0 = t
        for i, name in enumerate(kernel_names):
            ev.append({"ph": "X", "cat": "cpu_op", "name": f"aten::op{i}", "pid": 1, "tid": 1, "ts": t, "dur": 20,
                       "args": {"External id": corr}})
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                       "ts": t + 2, "dur": 5, "args": {"correlation": corr, "External id": corr}})
            ev.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": t + 10,
                       "dur": 30 + 10 * i, "args": {"device": 0, "stream": 7, "correlation": corr,
                                                     "External id": corr}})
            t += 50 + 10 * i
            corr += 1
        ev.append({"ph": "X", "cat": "user_annotation", "name": label, "pid": 1, "tid": 1, "ts": t0 - 1,
                   "dur": t - t0 + 2, "args": {}})
        t += 100
    doc = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "Test GPU"}],
           "traceEvents": ev, "baseTimeNanoseconds": 1_700_000_000_000_000_000}
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def write_xpurt_logs(directory: Path, kernel_names: list[str], ranks: int = 2, lines: int = 200) -> Path:
    """Kunlun ``[XPURT_PROF]`` kernel logs, one per rank (Kunlun3 layout: name, cycles, ns)."""
    directory.mkdir(parents=True, exist_ok=True)
    for rank in range(ranks):
        out = ["INFO vLLM engine starting"]
        for i in range(lines):
            ns = 1000 + 37 * i + 500 * rank
            out.append(f"[XPURT_PROF] {kernel_names[i % len(kernel_names)]} {int(ns * 1.45)} {ns} ns")
        (directory / f"rank_{rank}.log").write_text("\n".join(out) + "\n", encoding="utf-8")
    return directory


# -- the browser ---------------------------------------------------------------

def chromium_missing() -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    if not Path(CHROMIUM).exists() and not shutil.which("chromium"):
        return "Debian's chromium is not installed (apt-get install chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install playwright)"
    return None


@dataclass
class PageResult:
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)   # every URL other than the report itself
    dialogs: list[str] = field(default_factory=list)
    figures_in_data: int = 0
    plots_drawn: int = 0
    pwned: Any = None
    render_s: float = 0.0
    text: str = ""


class Browser:
    """One headless Chromium (Debian's, never a downloaded one) for many pages."""

    def __init__(self) -> None:
        from playwright.sync_api import sync_playwright

        self._profile = tempfile.mkdtemp(prefix="chromium-profile-")
        self._pw = sync_playwright().start()
        self._ctx = self._pw.chromium.launch_persistent_context(
            self._profile, executable_path=CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium"),
            headless=True, args=CHROMIUM_ARGS, viewport={"width": 1400, "height": 900})

    def open(self, html: Path, screenshot: Path | None = None, timeout_s: float = 60) -> PageResult:
        res = PageResult()
        page = self._ctx.new_page()
        url = html.resolve().as_uri()
        page.on("console", lambda m: res.console_errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: res.page_errors.append(str(e)))
        page.on("request", lambda r: res.requests.append(r.url) if r.url != url else None)

        def dialog(d: Any) -> None:
            res.dialogs.append(d.message)
            d.dismiss()

        page.on("dialog", dialog)
        # Anything that tries the network is recorded above and then refused here.
        page.route("**/*", lambda route: route.continue_() if route.request.url == url else route.abort())
        t0 = time.perf_counter()
        page.goto(url, wait_until="load", timeout=timeout_s * 1000)
        res.figures_in_data = page.evaluate("Object.keys((window.XPU_REPORT || {}).figures || {}).length")
        if res.figures_in_data:
            page.wait_for_selector("body[data-figures-drawn]", timeout=timeout_s * 1000)
        res.render_s = time.perf_counter() - t0
        res.plots_drawn = page.locator(".js-plotly-plot .main-svg:first-of-type").count()
        res.pwned = page.evaluate("window.__pwned === undefined ? null : window.__pwned")
        res.text = page.inner_text("body")
        if screenshot is not None:
            screenshot.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(screenshot), full_page=True)
        page.close()
        return res

    def page(self):
        return self._ctx.new_page()

    def close(self) -> None:
        self._ctx.close()
        self._pw.stop()
        shutil.rmtree(self._profile, ignore_errors=True)
