"""Shared by the report tests and bench/bench_report.py: small Profiles with known numbers,
built with the real data model and summarized by the real analysis, and a headless
Chromium that opens a report and says what it saw."""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from xpu_profiler import analysis
from xpu_profiler.core.profile import (
    COUNTER_SCHEMA,
    EVENT_SCHEMA,
    K_CPU_OP,
    K_KERNEL,
    K_MEMCPY,
    K_RUNTIME,
    P_DECODE,
    P_PREFILL,
    REQUEST_SCHEMA,
    STEP_SCHEMA,
    Profile,
    Table,
)
from xpu_profiler.knowledge.devices import SPECS
from xpu_profiler.summary import Summary

REPO = Path(__file__).resolve().parents[1]
ARTIFACTS = REPO / "artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

# Kernel names that try to break out of the page in every way a name can.
HOSTILE_NAMES = [
    "<script>window.__pwned = 1; alert(1)</script>",
    "</script><script>window.__pwned = 2</script>",
    '" onerror="window.__pwned=3" x="',
    '<img src=x onerror="window.__pwned=4">',
    "' onmouseover='window.__pwned=5",
]


# -- synthetic profiles, built with the real data model --------------------------

BASE_NS = 1_796_213_332_119_054_613  # 2026-12-02 12:08:52 UTC
PREFILL_STEPS, DECODE_STEPS = 3, 9
PREFILL_TOKENS, DECODE_TOKENS = 128, 8  # per step
PREFILL_WALL = [4_000_000, 4_200_000, 3_800_000]
DECODE_WALL = [1_000_000 + 10_000 * i for i in range(DECODE_STEPS)]
STEP_GAP = 50_000
RANK_SCALE = {0: 1.0, 1: 0.9}  # rank 1's kernels run 10% shorter
REQUESTS, OUTPUT_LEN = 8, 1 + DECODE_STEPS

#: (name, kind, ns in a prefill step, ns in a decode step, fused op the taxonomy gives it)
KERNELS = [
    (
        "void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64, 64, 4, false, false, cutlass::half_t>, "
        "false, false>(Flash_fwd_params)",
        K_KERNEL,
        600_000,
        50_000,
        "attention",
    ),
    ("ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_tn", K_KERNEL, 1_500_000, 200_000, "gemm"),
    ("rms_norm_kernel", K_KERNEL, 300_000, 60_000, "norm"),
    ("paged_attention_v2_kernel", K_KERNEL, 0, 100_000, "attention"),
    ("Memcpy HtoD (Pageable -> Device)", K_MEMCPY, 100_000, 20_000, "memcpy"),
    ("mystery_kernel_v3", K_KERNEL, 50_000, 10_000, "other"),
]
LAUNCH_AT, KERNELS_AT = 10_000, 100_000  # offsets into the step
LAUNCH_DUR = 5_000  # each launch call's own time


def kernel_ns(name: str, phase: str, rank: int) -> int:
    """The duration one kernel of KERNELS gets in one step of that phase on that rank."""
    k = next(k for k in KERNELS if k[0] == name)
    return int((k[2] if phase == "prefill" else k[3]) * RANK_SCALE[rank])


def step_plan() -> list[tuple[str, int, int]]:
    """(phase, start ns, wall ns) of every step, as each rank runs them."""
    out, t = [], 0
    for phase, wall in [("prefill", w) for w in PREFILL_WALL] + [("decode", w) for w in DECODE_WALL]:
        out.append((phase, t, wall))
        t += wall + STEP_GAP
    return out


def sample_profile(kernel_names: dict[str, str] | None = None, ranks: tuple[int, ...] = (0, 1)) -> Profile:
    """A tensor-parallel run as a live session records it: engine steps per rank (3 prefill,
    9 decode) with tokens, requests and KV usage; each step launches KERNELS through runtime
    calls (correlation ids); device memory and KV-cache counters; 8 requests; an H100 spec.
    ``kernel_names`` renames kernels (to test what a trace's names can do)."""
    rename = kernel_names or {}
    prof = Profile(base_ns=BASE_NS)
    st = prof.strings
    plan = step_plan()
    ev: dict[str, list] = {k: [] for k in ("name", "kind", "start", "dur", "rank", "device", "track", "corr")}
    steps: dict[str, list] = {
        k: []
        for k in (
            "rank",
            "step_id",
            "name",
            "start",
            "dur",
            "phase",
            "prefill_tokens",
            "decode_tokens",
            "prefill_reqs",
            "decode_reqs",
            "running",
            "waiting",
            "kv_usage",
        )
    }
    corr = 1
    for rank in ranks:
        for i, (phase, t0, wall) in enumerate(plan):
            pre = phase == "prefill"
            pt, dt = (PREFILL_TOKENS, 0) if pre else (0, DECODE_TOKENS)
            for col, v in (
                ("rank", rank),
                ("step_id", i),
                ("start", t0),
                ("dur", wall),
                ("phase", P_PREFILL if pre else P_DECODE),
                ("prefill_tokens", pt),
                ("decode_tokens", dt),
                ("prefill_reqs", 1 if pre else 0),
                ("decode_reqs", 0 if pre else REQUESTS),
                ("running", REQUESTS),
                ("waiting", max(0, 5 - i)),
                ("kv_usage", 0.05 * (i + 1)),
                ("name", st.intern(f"execute_context_{int(pre)}({pt})_generation_{0 if pre else REQUESTS}({dt})")),
            ):
                steps[col].append(v)
            k_start = t0 + KERNELS_AT
            for j, (name, kind, _, _, _) in enumerate(KERNELS):
                d = kernel_ns(name, phase, rank)
                if not d:
                    continue
                for col, v in (
                    ("name", st.intern("cudaLaunchKernel")),
                    ("kind", K_RUNTIME),
                    ("start", t0 + LAUNCH_AT * (j + 1)),
                    ("dur", LAUNCH_DUR),
                    ("rank", rank),
                    ("device", -1),
                    ("track", 1),
                    ("corr", corr),
                ):
                    ev[col].append(v)
                for col, v in (
                    ("name", st.intern(rename.get(name, name))),
                    ("kind", kind),
                    ("start", k_start),
                    ("dur", d),
                    ("rank", rank),
                    ("device", 0),
                    ("track", 7),
                    ("corr", corr),
                ):
                    ev[col].append(v)
                k_start += d
                corr += 1
    prof.events = Table(EVENT_SCHEMA, ev)
    prof.steps = Table(STEP_SCHEMA, steps)
    end = plan[-1][1] + plan[-1][2]
    counters = {"rank": [], "name": [], "t": [], "value": []}
    for name, points in (
        (
            "device_allocated_bytes",
            [(0, 1 * 2**30), (5_000_000, 3 * 2**30), (10_000_000, 3.5 * 2**30), (end, 3.25 * 2**30)],
        ),
        ("device_reserved_bytes", [(0, 2 * 2**30), (5_000_000, 4 * 2**30), (end, 4 * 2**30)]),
        ("kv_cache_usage", [(0, 0.0), (10_000_000, 0.3), (end, 0.6)]),
    ):
        for t, v in points:
            for col, x in (("rank", 0), ("name", st.intern(name)), ("t", t), ("value", v)):
                counters[col].append(x)
    prof.counters = Table(COUNTER_SCHEMA, counters)
    prefill_end = [t0 + w for phase, t0, w in plan if phase == "prefill"]
    prof.requests = Table(
        REQUEST_SCHEMA,
        {
            "rank": [0] * REQUESTS,
            "req": [st.intern(f"req-{i}") for i in range(REQUESTS)],
            "arrival": [i * 10_000 for i in range(REQUESTS)],
            "first_token": [prefill_end[i % PREFILL_STEPS] for i in range(REQUESTS)],
            "finish": [end] * REQUESTS,
            "prompt_len": [PREFILL_TOKENS] * REQUESTS,
            "output_len": [OUTPUT_LEN] * REQUESTS,
        },
    )
    prof.run.update(
        {
            "model": "tiny-llama",
            "device": "cuda",
            "device_name": "NVIDIA H100",
            "device_spec": SPECS["cuda:H100"].to_json(),
            "versions": {"vllm": "0.32.0", "torch": "2.13.0"},
            "engine": {
                "dtype": "bfloat16",
                "tensor_parallel_size": len(ranks),
                "max_num_seqs": REQUESTS,
                "enforce_eager": True,
            },
            "workload": {"num_prompts": REQUESTS, "input_len": PREFILL_TOKENS, "output_len": OUTPUT_LEN},
            "detail_level": "standard",
            "metrics": ["execution_time", "memory_usage", "throughput"],
            "start_time_ns": BASE_NS,
            "host": "node-1",
            "incomplete": False,
            "step_source": "xpu_profiler_hooks",
            "sources": [{"path": "records/worker-0.records.jsonl", "format": "live"}],
        }
    )
    prof.warn("rank 1: 3 odd events skipped")
    return prof


def live_cpu_profile() -> Profile:
    """A live CPU run: top-level host ops instead of kernels (vLLM's CPU build), host RSS per
    process, KV usage and token-rate counters, the nominal CPU spec, interrupted."""
    prof = sample_profile(ranks=(0,))
    ev = prof.events
    dev = ev["kind"] != K_RUNTIME
    ev["kind"] = np.where(dev, K_CPU_OP, ev["kind"]).astype(np.int8)
    ev["device"] = np.full(len(ev), -1)
    ev["name"] = np.where(dev, prof.strings.intern("aten::linear"), ev["name"]).astype(np.int32)
    st = prof.strings
    c = {"rank": [], "name": [], "t": [], "value": []}
    for name, points in (
        ("host_rss_bytes.worker", [(0, 2**30), (10, 2**31)]),
        ("host_rss_bytes.engine_core", [(0, 2**29), (10, 2**30)]),
        ("kv_cache_usage", [(0, 0.0), (10, 0.002)]),
        ("decode_tokens_per_s", [(5, 500.0), (10, 600.0)]),
    ):
        for t, v in points:
            for col, x in (("rank", 0), ("name", st.intern(name)), ("t", t), ("value", v)):
                c[col].append(x)
    prof.counters = Table(COUNTER_SCHEMA, c)
    prof.run.update(
        device="cpu",
        device_name="AMD EPYC",
        device_spec=SPECS["cpu"].to_json(),
        engine={"dtype": "bfloat16"},
        incomplete=True,
        incomplete_reason="interrupted (Ctrl-C)",
    )
    return prof


def summarize(profile: Profile) -> Summary:
    return analysis.summarize(profile)


def sample_summary() -> Summary:
    return summarize(sample_profile())


def hostile_summary() -> Summary:
    """sample_profile() with kernel, model, engine and warning text that tries to inject code."""
    prof = sample_profile(kernel_names={k[0]: name for k, name in zip(KERNELS, HOSTILE_NAMES)})
    prof.run["model"] = HOSTILE_NAMES[3]
    prof.run["engine"][HOSTILE_NAMES[2]] = HOSTILE_NAMES[0]
    prof.warn(HOSTILE_NAMES[0])
    return summarize(prof)


def write_kineto_trace(path: Path, kernel_names: list[str]) -> Path:
    """A small torch.profiler (Kineto) trace: one prefill and three decode engine steps
    with vLLM's step annotations; each step launches every kernel in ``kernel_names``."""
    ev: list[dict[str, Any]] = []
    t, corr = 1000.0, 1
    steps = [("execute_context_2(64)_generation_0(0)", 64)] + [("execute_context_0(0)_generation_2(2)", 2)] * 3
    for label, _ in steps:
        t0 = t
        for i, name in enumerate(kernel_names):
            ev.append(
                {
                    "ph": "X",
                    "cat": "cpu_op",
                    "name": f"aten::op{i}",
                    "pid": 1,
                    "tid": 1,
                    "ts": t,
                    "dur": 20,
                    "args": {"External id": corr},
                }
            )
            ev.append(
                {
                    "ph": "X",
                    "cat": "cuda_runtime",
                    "name": "cudaLaunchKernel",
                    "pid": 1,
                    "tid": 1,
                    "ts": t + 2,
                    "dur": 5,
                    "args": {"correlation": corr, "External id": corr},
                }
            )
            ev.append(
                {
                    "ph": "X",
                    "cat": "kernel",
                    "name": name,
                    "pid": 0,
                    "tid": 7,
                    "ts": t + 10,
                    "dur": 30 + 10 * i,
                    "args": {"device": 0, "stream": 7, "correlation": corr, "External id": corr},
                }
            )
            t += 50 + 10 * i
            corr += 1
        ev.append(
            {
                "ph": "X",
                "cat": "user_annotation",
                "name": label,
                "pid": 1,
                "tid": 1,
                "ts": t0 - 1,
                "dur": t - t0 + 2,
                "args": {},
            }
        )
        t += 100
    doc = {
        "schemaVersion": 1,
        "deviceProperties": [{"id": 0, "name": "Test GPU"}],
        "traceEvents": ev,
        "baseTimeNanoseconds": 1_700_000_000_000_000_000,
    }
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
    requests: list[str] = field(default_factory=list)  # every URL other than the report itself
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
            self._profile,
            executable_path=CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium"),
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1400, "height": 900},
        )

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
