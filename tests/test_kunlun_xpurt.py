"""[XPURT_PROF] kernel logs: both field layouts, generations, scopes, odd input, the CLI.

Every log here is generated with known per-line nanoseconds; the expected totals
per kernel, fused op and rank are summed in the test from those numbers, never
from the reader.
"""

from __future__ import annotations

import gzip
import json
import random
import shutil
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest

from xpu_profiler.core.errors import TraceError
from xpu_profiler.core.profile import K_KERNEL, NO_TIME
from xpu_profiler.knowledge import kernel_names
from xpu_profiler.readers import ReadOptions, expand, load
from xpu_profiler.readers.kunlun import xpurt_log

ROOT = Path(__file__).resolve().parents[1]

# expected names below are demangled; libstdc++ or c++filt does that
pytestmark = pytest.mark.skipif(
    kernel_names._DEMANGLE is None and shutil.which("c++filt") is None, reason="no C++ demangler on this machine"
)

# mangled symbol → (name after demangling, fused op it belongs to)
KERNELS = {
    "_ZN10xblas_xpu313fc_cdnn_inferI7float16S1_S1_S1_ffffLi1EEEvPKT_PKT0_PT2_i": (
        "void xblas_xpu3::fc_cdnn_infer<float16, float16, float16, float16, float, float, float, float, 1>",
        "gemm",
    ),
    "_Z14kl3_all_reduceI7float16EvPT_i": ("void kl3_all_reduce<float16>", "communication"),
    "_Z24kl3_all_reduce_butterflyI7float16EvPT_i": ("void kl3_all_reduce_butterfly<float16>", "communication"),
    "_ZN14xpukernel_xpu38constantIfEEvPclT_": ("void xpukernel_xpu3::constant<float>", "memset"),
    "_ZN14xpukernel_xpu322transpose_0213_clusterI7float16EEvPKT_PS2_": (
        "void xpukernel_xpu3::transpose_0213_cluster<float16>",
        "elementwise",
    ),
    # op-style names as vllm-kunlun's kernels are called (no mangling)
    "moe_fc": ("moe_fc", "moe"),
    "moe_pre_sorted": ("moe_pre_sorted", "moe"),
    "moe_softmax_topk_norm": ("moe_softmax_topk_norm", "moe"),
    "silu_and_mul": ("silu_and_mul", "activation"),
    "add_rmsnorm": ("add_rmsnorm", "norm"),
    "rotary_embedding": ("rotary_embedding", "rope"),
    "reshape_and_cache": ("reshape_and_cache", "kv_cache"),
}
FACTOR = {1: 0.9, 2: 1.3, 3: 1.45}
# ns steps that make cycles = ns * factor an exact integer
NS_STEP = {1: 10, 2: 10, 3: 20}

VLLM_NOISE = [
    "INFO 12-02 11:50:01 [gpu_model_runner.py:1932] Model loading took 14.2 GiB and 31.5 s",
    "(VllmWorker rank=0 pid=4242) INFO 12-02 11:50:02 [kv_cache_utils.py:716] GPU KV cache size: 812,544 tokens",
    "模型加载完成 ✓ — naïve café, ταχύτητα, 🚀",
    "WARNING 12-02 11:50:03 [profiling.py] throughput drops >15% while XPURT_PROF is on",
    "",
    "Processed prompts: 100%|██████████| 8/8 [00:03<00:00,  2.41it/s]",
]


class Log:
    """A generated rank log and what it must add up to."""

    def __init__(
        self, rank: int, gen: int = 3, n: int = 400, seed: int = 0, noise: bool = True, layout: str | None = None
    ):
        self.rank, self.gen = rank, gen
        rng = random.Random(seed * 1000 + rank)
        self.per_kernel: Counter = Counter()
        self.count: Counter = Counter()
        lines: list[str] = []
        names = list(KERNELS)
        layout = layout or ("k1" if gen == 1 else "k23")
        for i in range(n):
            k = rng.choice(names)
            ns = rng.randint(1, 4000) * NS_STEP[gen]
            cycles = round(ns * FACTOR[gen])
            assert abs(cycles / FACTOR[gen] - ns) < 1e-6
            if layout == "k23":  # name, time (cycles), x (ns)
                lines.append(f"[XPURT_PROF] {k} {cycles} {ns} ns")
            elif layout == "k1":  # name, x (ns), time (cycles)
                lines.append(f"[XPURT_PROF] {k}\t{ns}  {cycles} ns")
            else:  # "name: N ns", N already in ns
                lines.append(f"[XPURT_PROF] {k}: {ns} ns")
            self.per_kernel[KERNELS[k][0]] += ns
            self.count[KERNELS[k][0]] += 1
            if noise and i % 7 == 0:
                lines.append(VLLM_NOISE[i % len(VLLM_NOISE)])
        self.lines = lines

    @property
    def total(self) -> int:
        return sum(self.per_kernel.values())

    def per_fused(self) -> Counter:
        out: Counter = Counter()
        fused_of = {pretty: fused for pretty, fused in KERNELS.values()}
        for name, ns in self.per_kernel.items():
            out[fused_of[name]] += ns
        return out

    def text(self, truncated_tail: bool = False) -> str:
        body = "\n".join(self.lines) + "\n"
        if truncated_tail:  # a kernel line cut off mid-number: not counted
            body += "[XPURT_PROF] _Z14kl3_all_reduceI7float16EvPT_i 1740"
        return body


def _totals(prof, by: str = "name") -> dict:
    ev = prof.events
    out: dict = defaultdict(int)
    keys = ev[by].tolist()
    for key, d in zip(keys, ev["dur"].tolist()):
        out[prof.name_of(key) if by in ("name", "group") else key] += d
    return dict(out)


@pytest.fixture
def xpu_logs(tmp_path: Path) -> tuple[Path, dict[int, Log]]:
    """rank_0 (plain, truncated last line), rank_1 (gzip), rank_2 (only vLLM output), rank_3 (empty)."""
    d = tmp_path / "xpu_logs"
    d.mkdir()
    logs = {0: Log(0, n=500), 1: Log(1, n=300)}
    (d / "rank_0.log").write_text(logs[0].text(truncated_tail=True), encoding="utf-8")
    with gzip.open(d / "rank_1.log.gz", "wt", encoding="utf-8") as f:
        f.write(logs[1].text())
    (d / "rank_2.log").write_text("\n".join(VLLM_NOISE) + "\n", encoding="utf-8")
    (d / "rank_3.log").write_bytes(b"")
    # a file of another tool in the same directory is not taken for a log
    (d / "analysis_rank0.txt").write_text("Total time(ms) is 12.5\n")
    return d, logs


def test_directory_of_rank_logs_totals_per_kernel_fused_op_and_rank(xpu_logs):
    from xpu_profiler.knowledge.taxonomy import FUSED_OPS, Taxonomy

    d, logs = xpu_logs
    files = expand([d])
    assert sorted(f.name for f, _ in files) == ["rank_0.log", "rank_1.log.gz", "rank_2.log", "rank_3.log"]
    assert {m.NAME for _, m in files} == {"xpurt_log"}
    prof = load([d])

    ev = prof.events
    assert len(ev) == 500 + 300
    assert (ev["kind"] == K_KERNEL).all()
    assert (ev["start"] == NO_TIME).all()
    assert prof.has_timeline is False
    for r, log in logs.items():
        sub = ev["rank"] == r
        assert int(ev["dur"][sub].sum()) == log.total
        got = defaultdict(int)
        for name, dur in zip(ev["name"][sub].tolist(), ev["dur"][sub].tolist()):
            got[prof.name_of(name)] += dur
        assert dict(got) == dict(log.per_kernel)
        counts = Counter(prof.name_of(i) for i in ev["name"][sub].tolist())
        assert counts == log.count

    tax = Taxonomy()
    fused = defaultdict(int)
    for name, r, dur in zip(ev["name"].tolist(), ev["rank"].tolist(), ev["dur"].tolist()):
        fused[(r, FUSED_OPS[tax.classify(prof.name_of(name))])] += dur
    for r, log in logs.items():
        assert {k[1]: v for k, v in fused.items() if k[0] == r} == dict(log.per_fused())

    # per-rank bookkeeping, including the two ranks without kernels
    ranks = prof.run["xpurt_ranks"]
    assert set(ranks) == {"0", "1", "2", "3"}
    assert ranks["0"]["kernel_lines"] == 500
    assert ranks["0"]["other_lines"] == sum(1 for ln in logs[0].lines if "[XPURT_PROF]" not in ln)
    assert ranks["0"]["malformed_lines"] == 1
    assert ranks["2"]["kernel_lines"] == 0 and ranks["2"]["other_lines"] == len(VLLM_NOISE)
    assert ranks["3"]["lines"] == 0
    assert all(v["xpu_gen"] == 3 for v in ranks.values() if v["kernel_lines"])
    warnings = "\n".join(prof.run["warnings"])
    assert "rank_0.log: the last line is cut short" in warnings
    assert "no [XPURT_PROF] lines for rank 2" in warnings
    assert "no [XPURT_PROF] lines for rank 3" in warnings


@pytest.mark.parametrize("gen", [1, 2, 3])
def test_generation_is_detected_from_the_two_numbers(tmp_path, gen):
    log = Log(0, gen=gen, n=200, seed=gen)
    p = tmp_path / "rank_0.log"
    p.write_text(log.text())
    prof = xpurt_log.read(p, ReadOptions())
    src = prof.run["sources"][0]
    assert src["xpu_gen"] == gen
    assert src["xpu_gen_source"].startswith("detected")
    assert _totals(prof) == dict(log.per_kernel)
    assert "warnings" not in prof.run


def test_undetectable_generation_defaults_to_p800_and_says_so(tmp_path):
    # the second number is unrelated to the first: no clock ratio to read
    rng = random.Random(7)
    expected = defaultdict(int)
    lines = []
    for _ in range(100):
        cycles = rng.randint(1, 5000) * 29
        lines.append(f"[XPURT_PROF] moe_fc {cycles} {rng.randint(1, 9)} ns")
        expected["moe_fc"] += round(cycles / 1.45)
    p = tmp_path / "rank_5.log"
    p.write_text("\n".join(lines) + "\n")
    prof = xpurt_log.read(p, ReadOptions())
    assert prof.run["xpu_gen"] == 3 and prof.run["xpu_gen_source"] == "default"
    assert prof.run["device"] == "kunlun_p800"
    assert any("assuming P800" in w for w in prof.run["warnings"])
    assert _totals(prof) == dict(expected)
    assert set(prof.events["rank"].tolist()) == {5}


def test_xpu_gen_option_wins_and_a_mismatch_is_reported(tmp_path):
    log = Log(0, gen=3, n=50)
    p = tmp_path / "rank_0.log"
    p.write_text(log.text())
    prof = xpurt_log.read(p, ReadOptions(xpu_gen=2))
    assert prof.run["xpu_gen"] == 2
    assert any("look like Kunlun3 but Kunlun2 was given" in w for w in prof.run["warnings"])
    # time field (cycles) divided by 1.3 instead of 1.45
    expected = sum(round(ns * 1.45) / 1.3 for ns in log.per_kernel.values())
    assert abs(int(prof.events["dur"].sum()) - expected) <= len(log.lines)
    with pytest.raises(TraceError, match="rank_0.log: unknown Kunlun generation 5"):
        xpurt_log.read(p, ReadOptions(xpu_gen=5))


def test_single_number_ns_variant(tmp_path):
    log = Log(0, gen=3, n=120, layout="ns")
    p = tmp_path / "worker.log"
    p.write_text(log.text())
    prof = xpurt_log.read(p, ReadOptions(rank=6))
    assert _totals(prof) == dict(log.per_kernel)
    assert set(prof.events["rank"].tolist()) == {6}
    assert prof.run["sources"][0]["layout"] == "name time ns"


def test_rank_comes_from_the_name_else_the_option_else_zero(tmp_path):
    p = tmp_path / "out.log"
    p.write_text("[XPURT_PROF] moe_fc 2900 2000 ns\n")
    prof = xpurt_log.read(p, ReadOptions())
    assert prof.events["rank"].tolist() == [0]
    assert any("rank not in the file name" in w for w in prof.run["warnings"])
    assert xpurt_log.read(p, ReadOptions(rank=4)).events["rank"].tolist() == [4]
    q = tmp_path / "rank_12.log"
    q.write_text("[XPURT_PROF] moe_fc 2900 2000 ns\n")
    assert xpurt_log.read(q, ReadOptions()).events["rank"].tolist() == [12]
    # a directory of rank files keeps its ranks even when --rank is given
    assert xpurt_log.read(q, ReadOptions(rank=4)).events["rank"].tolist() == [12]


def test_gtest_scopes_become_the_group_level(tmp_path):
    text = (
        "\n".join(
            [
                "[XPURT_PROF] silu_and_mul 290 200 ns",  # before any scope: no group
                "gtest_fc_fusion<float16, float, float16, int16_t>(api::kXPU, 128, 4096)",
                "[XPURT_PROF] _ZN10xblas_xpu313fc_cdnn_inferI7float16S1_S1_S1_ffffLi1EEEvPKT_PKT0_PT2_i 1450 1000 ns",
                "    gtest_cast<float, float16>(api::kXPU, 128)",
                "[XPURT_PROF] _ZN14xpukernel_xpu38constantIfEEvPclT_ 145 100 ns",
                "gtest_add_rmsnorm<float16>(api::kXPU, 128)",
                "[XPURT_PROF] add_rmsnorm 580 400 ns",
                "[XPURT_PROF] add_rmsnorm 580 400 ns",
            ]
        )
        + "\n"
    )
    p = tmp_path / "rank_0.log"
    p.write_text(text)
    outer = xpurt_log.read(p, ReadOptions())
    assert _totals(outer, "group") == {"": 200, "gtest_fc_fusion": 1100, "gtest_add_rmsnorm": 800}
    assert outer.run["sources"][0]["scope_lines"] == 3
    inner = xpurt_log.read(p, ReadOptions(extra={"xpurt_scope_level": 1}))
    # level-1 scope only around the fill kernel; a level-0 line ends it
    assert _totals(inner, "group") == {"": 200 + 1000 + 800, "gtest_cast": 100}


def test_unicode_and_bytes_that_are_not_utf8_survive(tmp_path):
    log = Log(0, n=80)
    p = tmp_path / "rank_0.log"
    raw = log.text().encode("utf-8")
    p.write_bytes(b"\xff\xfe garbage \x80\x81\n" + raw + "末尾 ✓\n".encode())
    prof = xpurt_log.read(p, ReadOptions())
    assert _totals(prof) == dict(log.per_kernel)


def test_windows_line_ends_and_decimal_numbers(tmp_path):
    p = tmp_path / "rank_0.log"
    p.write_bytes(
        b"INFO start\r\n"
        b"[XPURT_PROF] moe_fc 1450.5 1000.3 ns\r\n"
        b"[XPURT_PROF] moe_fc 2900 2000 ns\r\n"
        b"gtest_fc_fusion<float16>(api::kXPU)\r\n"
        b"[XPURT_PROF] silu_and_mul 14.5 10 ns\r\n"
    )
    prof = xpurt_log.read(p, ReadOptions())
    assert prof.run["xpu_gen"] == 3
    assert _totals(prof) == {"moe_fc": round(1450.5 / 1.45) + 2000, "silu_and_mul": 10}
    assert _totals(prof, "group") == {"": round(1450.5 / 1.45) + 2000, "gtest_fc_fusion": 10}
    assert prof.run["sources"][0]["other_lines"] == 1


def test_names_stay_mangled_without_a_demangler(monkeypatch, tmp_path):
    monkeypatch.setattr(kernel_names, "_DEMANGLE", None)
    monkeypatch.setattr(kernel_names.shutil, "which", lambda name: None)
    p = tmp_path / "rank_0.log"
    p.write_text("[XPURT_PROF] _Z14kl3_all_reduceI7float16EvPT_i 2900 2000 ns\n")
    prof = xpurt_log.read(p, ReadOptions())
    assert prof.strings.lookup(prof.events["name"]) == ["_Z14kl3_all_reduceI7float16EvPT_i"]
    assert prof.run["sources"][0]["demangler"].startswith("unavailable")


def test_large_log_is_read_in_columns(tmp_path):
    n = 200_000
    rng = np.random.default_rng(3)
    ns = rng.integers(1, 5000, n) * 20
    cycles = ns * 29 // 20
    names = np.array(list(KERNELS))[rng.integers(0, len(KERNELS), n)]
    body = "\n".join(f"[XPURT_PROF] {k} {c} {t} ns" for k, c, t in zip(names, cycles, ns))
    p = tmp_path / "rank_0.log"
    p.write_text(body + "\n")
    prof = xpurt_log.read(p, ReadOptions())  # (its speed: bench/bench_xpurt.py)
    assert len(prof.events) == n
    assert int(prof.events["dur"].sum()) == int(ns.sum())
    # every line its kernel, demangled
    assert Counter(prof.strings.lookup(prof.events["name"])) == Counter(KERNELS[k][0] for k in names.tolist())


def test_bad_inputs_name_the_file(tmp_path):
    bad = tmp_path / "rank_0.log.gz"
    bad.write_bytes(gzip.compress(b"[XPURT_PROF] moe_fc 2900 2000 ns\n" * 100)[:60])
    with pytest.raises(TraceError) as e:
        load([bad])
    assert str(bad) in str(e.value) and "gzip" in str(e.value)
    with pytest.raises(TraceError, match="no such file"):
        load([tmp_path / "rank_9.log"])
    empty = tmp_path / "rank_1.log"
    empty.write_bytes(b"")
    with pytest.raises(TraceError, match=f"{empty}: empty file"):
        load([empty])


def test_sniff_finds_the_tag_far_into_a_console_log(tmp_path):
    p = tmp_path / "output_p800.log"
    p.write_text("INFO starting\n" * 20000 + "[XPURT_PROF] moe_fc 2900 2000 ns\n")
    files = expand([p])
    assert files[0][1].NAME == "xpurt_log"
    q = tmp_path / "plain.log"
    q.write_text("INFO starting\n" * 20000)
    with pytest.raises(TraceError, match="not a supported trace or log format"):
        expand([q])


def test_cli_analyze_xpu_logs_writes_outputs_and_states_the_missing_timeline(xpu_logs, tmp_path):
    d, logs = xpu_logs
    out = tmp_path / "out"
    res = subprocess.run(
        [sys.executable, "-m", "xpu_profiler", "analyze", str(d), "-o", str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["has_timeline"] is False
    assert any("no timeline" in w for w in summary["warnings"])
    assert "no timeline" in (res.stdout + res.stderr).lower()
    assert summary["totals"]["device_kernel_ns"] == logs[0].total + logs[1].total
    assert summary["totals"]["wall_ns"] == 0  # no invented span
    rows = (out / "fused_ops.csv").read_text().splitlines()
    expected = logs[0].per_fused() + logs[1].per_fused()
    got = {}
    header = rows[0].split(",")
    for row in rows[1:]:
        cells = dict(zip(header, row.split(",")))
        if cells["phase"] == "all":
            got[cells["fused_op"]] = int(cells["time_ns"])
    assert got == dict(expected)
    assert "no timeline" in (out / "report.html").read_text(encoding="utf-8")
