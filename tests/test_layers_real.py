"""Decoder layers on real inference traces: the count, the kinds and the time of each layer,
each checked against a rule applied here to the raw JSON (never against our own output).

- vLLM gpt-oss-120b on B200, eager with ``with_stack``: one ``nn.Module: TransformerBlock_k``
  frame per layer; a layer's attention kernel is ``…PagedKvSlidingOrChunkedCausal…`` (sliding
  window) or ``…PagedKvCausal…`` (full), and each frame holds a ``FusedMoE`` frame;
- SGLang Qwen3-8B on MI300X: the eager prefill's ``Qwen3DecoderLayer`` frames; the decode
  step replayed from a HIP graph, whose capture trace holds the frames (each captured launch,
  in order, is one replayed kernel); without the capture only the kernel stream is left;
- SGLang Qwen3-30B-A3B decode (graph replay, nothing but the kernel stream);
- vLLM gpt-oss-20b on MI300X, FULL and PIECEWISE graphs: the split model's attention
  submodules are ``GraphModule`` frames nested in the outer ``GraphModule`` (one per layer);
- vLLM Llama on H100 (TP4, no step annotation): one ``LlamaForCausalLM`` frame per forward,
  and inside it the nested ``GraphModule`` frames.
"""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from pathlib import Path

import pytest
from real_data import REAL

from xpu_profiler.analysis import analyze

HERE = Path(__file__).resolve().parent
B200 = REAL / "gpu-inference" / "vllm-gptoss-tp8-b200-rank0-eager.json.gz"
H100 = REAL / "gpu-inference" / "vllm-llama-tp4-h100-rank0.pt.trace.json.gz"
SG30B = REAL / "gpu-inference" / "sglang-qwen3-30b-a3b-mi300-decode.trace.json.gz"
SG_PREFILL = REAL / "tracelens" / "sglang-qwen3-8b-prefilldecode.json.gz"
SG_DECODE = REAL / "tracelens" / "sglang-qwen3-8b-decode.json.gz"
SG_CAPTURE = REAL / "tracelens" / "sglang-qwen3-8b-decode.capture-bs32.json.gz"
MI300_FULL = HERE / "data" / "tracelens" / "vllm_decode_full"
MI300_PIECEWISE = HERE / "data" / "tracelens" / "vllm_prefilldecode_piecewise"
DEVICE_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
RUNTIME_CATS = ("cuda_runtime", "cuda_driver")
#: the test's own attention rule for kernel streams: attention kernels, not KV writes or rope
ATTN = re.compile(r"attention|attn|fmha", re.IGNORECASE)
NOT_ATTN = re.compile(r"cache|rotary|kv_indices|metadata", re.IGNORECASE)

needs = pytest.mark.skipif(not B200.is_file(), reason="shared real traces not found (../shared/data/real-traces)")


class Raw:
    """The raw complete events of a trace, times in ns as the readers round them."""

    def __init__(self, path: Path) -> None:
        doc = json.loads(gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes())
        ev = doc["traceEvents"] if isinstance(doc, dict) else doc
        self.x = [e for e in ev if e.get("ph") == "X"]
        for e in self.x:
            e["s"] = round(float(e["ts"]) * 1000)
            e["e"] = e["s"] + round(float(e.get("dur", 0)) * 1000)
        self.runtime = {
            e["args"]["correlation"]: e for e in self.x if e.get("cat") in RUNTIME_CATS and "correlation" in e["args"]
        }
        self.device = [e for e in self.x if e.get("cat") in DEVICE_CATS]

    def frames(self, rx: str) -> list[dict]:
        r = re.compile(rx)
        return sorted((e for e in self.x if e.get("cat") == "python_function" and r.match(e["name"])), key=_start)

    def launched_in(self, frame: dict) -> list[dict]:
        """Device work whose runtime call starts inside ``frame`` (same process and thread)."""
        out = []
        for d in self.device:
            r = self.runtime.get(d["args"].get("correlation"))
            if r is not None and r["pid"] == frame["pid"] and r["tid"] == frame["tid"]:
                if frame["s"] <= r["s"] <= frame["e"]:
                    out.append(d)
        return out

    def step(self) -> dict:
        (st,) = [e for e in self.x if e.get("cat") == "user_annotation" and e["name"].startswith("execute_")]
        return st

    def main_stream(self, work: list[dict]) -> list[dict]:
        """The kernels of the stream that runs most of them, in start order."""
        ks = [d for d in work if d.get("cat") == "kernel"]
        tid = Counter(d["tid"] for d in ks).most_common(1)[0][0]
        return sorted((d for d in ks if d["tid"] == tid), key=_start)


def _start(e: dict) -> int:
    return e["s"]


def attention_runs(kernels: list[dict]) -> list[list[dict]]:
    """Runs of consecutive attention kernels (the test's rule)."""
    runs: list[list[dict]] = []
    prev = False
    for k in kernels:
        hit = bool(ATTN.search(k["name"])) and not NOT_ATTN.search(k["name"])
        if hit and prev:
            runs[-1].append(k)
        elif hit:
            runs.append([k])
        prev = hit
    return runs


def nested(frames: list[dict]) -> list[dict]:
    """Frames that lie inside another frame of the list."""
    return [f for f in frames if any(g is not f and g["s"] <= f["s"] and f["e"] <= g["e"] for g in frames)]


def dur(events: list[dict]) -> int:
    return sum(e["e"] - e["s"] for e in events)


def kinds(phase) -> dict[str, int]:
    return {k.kind: k.layers for k in phase.kinds}


def check_accounting(phase, raw_op_ns: int) -> None:
    """Layers plus head, tail and other are the step's op time, which is the raw one."""
    assert phase.layers_ns + phase.head_ns + phase.tail_ns + phase.other_ns == phase.op_time_ns
    assert abs(phase.op_time_ns - raw_op_ns) <= 0.01 * raw_op_ns


@needs
def test_b200_gptoss_36_layers_alternating_sliding_and_full() -> None:
    raw = Raw(B200)
    frames = raw.frames(r"^nn\.Module: TransformerBlock_\d+$")
    moe = raw.frames(r"^nn\.Module: FusedMoE_\d+$")
    work = [raw.launched_in(f) for f in frames]
    sliding = [any("SlidingOrChunked" in k["name"] for k in w if "fmha" in k["name"]) for w in work]
    assert len(frames) == 36 and sum(sliding) == 18
    assert all(any(f["s"] <= m["s"] <= f["e"] for m in moe) for f in frames)
    step = raw.step()
    step_work = [d for d in raw.device if step["s"] <= raw.runtime[d["args"]["correlation"]]["s"] <= step["e"]]

    _, s = analyze([B200])
    (ph,) = s.layers.phases
    assert (ph.phase, ph.evidence, ph.inferred, ph.layers, ph.steps) == ("prefill", "module", False, 36, 1)
    assert kinds(ph) == {"sliding/moe": 18, "full/moe": 18}
    assert [r.attention == "sliding" for r in ph.rows] == sliding
    for r, w in zip(ph.rows, work):
        assert r.time_ns == dur(w) and r.module == "TransformerBlock"
    check_accounting(ph, dur(step_work))
    assert ph.layers_ns == sum(dur(w) for w in work) and ph.layers_ns >= 0.96 * ph.op_time_ns


@needs
def test_sglang_qwen3_prefill_36_layers_from_frames() -> None:
    raw = Raw(SG_PREFILL)
    frames = raw.frames(r"^nn\.Module: Qwen3DecoderLayer_\d+$")
    mlp = raw.frames(r"^nn\.Module: Qwen2MLP_\d+$")
    work = [raw.launched_in(f) for f in frames]
    windowed = any(re.search("sliding|swa", k["name"], re.I) for w in work for k in w)
    assert len(frames) == 36 and not windowed
    assert all(any(f["s"] <= m["s"] <= f["e"] for m in mlp) for f in frames)  # a dense MLP in each
    step = raw.step()
    step_work = [
        d
        for d in raw.device
        if d["args"].get("correlation") in raw.runtime
        and step["s"] <= raw.runtime[d["args"]["correlation"]]["s"] <= step["e"]
    ]

    _, s = analyze([SG_PREFILL])
    (ph,) = s.layers.phases
    assert (ph.evidence, ph.layers, ph.inferred) == ("module", 36, False)
    assert kinds(ph) == {"attention/dense": 36}  # one kind: no window is known, so none is claimed
    assert [r.time_ns for r in ph.rows] == [dur(w) for w in work]
    check_accounting(ph, dur(step_work))


def _capture_layers(raw_cap: Raw, raw_run: Raw) -> list[int]:
    """Per layer, the time of the replayed kernels whose captured launch (in order: the
    launches between stream capture begin and end, one per replayed kernel) lies in that
    layer's frame."""
    begin = min(e["s"] for e in raw_cap.x if "StreamBeginCapture" in e["name"])
    end = max(e["e"] for e in raw_cap.x if "StreamEndCapture" in e["name"])
    launches = sorted(
        (
            e
            for e in raw_cap.x
            if e.get("cat") in RUNTIME_CATS
            and re.search(r"Launch|Memcpy|Memset", e["name"])
            and begin <= e["s"] <= end
            and "Capture" not in e["name"]
        ),
        key=_start,
    )
    frames = raw_cap.frames(r"^nn\.Module: Qwen3DecoderLayer_\d+$")
    (graph_launch,) = [r for r in raw_run.runtime.values() if "GraphLaunch" in r["name"]]
    replayed = sorted(
        (d for d in raw_run.device if d["args"].get("correlation") == graph_launch["args"]["correlation"]), key=_start
    )
    assert len(launches) == len(replayed)
    per = [0] * len(frames)
    for la, k in zip(launches, replayed):
        for i, f in enumerate(frames):
            if f["tid"] == la["tid"] and f["s"] <= la["s"] <= f["e"]:
                per[i] += k["e"] - k["s"]
    return per


@needs
def test_sglang_qwen3_decode_36_layers_from_its_capture_and_inferred_without() -> None:
    raw_cap, raw = Raw(SG_CAPTURE), Raw(SG_DECODE)
    assert len(raw_cap.frames(r"^nn\.Module: Qwen3DecoderLayer_\d+$")) == 36
    per_layer = _capture_layers(raw_cap, raw)
    step = raw.step()
    step_work = [
        d
        for d in raw.device
        if d["args"].get("correlation") in raw.runtime
        and step["s"] <= raw.runtime[d["args"]["correlation"]]["s"] <= step["e"]
    ]
    runs = attention_runs(raw.main_stream(step_work))
    assert len(runs) == 36

    _, s = analyze([SG_DECODE], capture=[SG_CAPTURE])
    (ph,) = s.layers.phases
    assert (ph.phase, ph.evidence, ph.inferred, ph.layers) == ("decode", "capture", False, 36)
    assert [r.time_ns for r in ph.rows] == per_layer
    check_accounting(ph, dur(step_work))
    # the kernel stream alone: the same 36 layers, inferred, and the same time per layer
    # (a kernel of another stream that no frame holds may be put in the layer it ran beside)
    _, s2 = analyze([SG_DECODE])
    (inf,) = s2.layers.phases
    assert (inf.evidence, inf.inferred, inf.layers) == ("period", True, 36)
    assert inf.confidence >= 0.9 and "inferred" in inf.detail
    moved = sum(abs(a.time_ns - b) for a, b in zip(inf.rows, per_layer))
    assert moved <= 0.001 * sum(per_layer)
    check_accounting(inf, dur(step_work))


@needs
def test_sglang_qwen3_30b_decode_48_layers_inferred_from_the_kernel_stream() -> None:
    raw = Raw(SG30B)
    step = raw.step()
    step_work = [
        d
        for d in raw.device
        if d["args"].get("correlation") in raw.runtime
        and step["s"] <= raw.runtime[d["args"]["correlation"]]["s"] <= step["e"]
    ]
    main = raw.main_stream(step_work)
    runs = attention_runs(main)
    at = [main.index(r[0]) for r in runs]
    gaps = Counter(b - a for a, b in zip(at, at[1:]))
    assert len(runs) == 48 and len(gaps) == 1  # one distance between all of them
    moe = [bool(re.search("moe|topk", " ".join(k["name"] for k in main[a:b]), re.I)) for a, b in zip(at, at[1:])]
    assert all(moe)

    _, s = analyze([SG30B])
    (ph,) = s.layers.phases
    assert (ph.evidence, ph.inferred, ph.layers) == ("period", True, 48)
    assert kinds(ph) == {"attention/moe": 48}
    assert ph.rows[0].kernels_per_step >= list(gaps)[0]  # a layer holds at least its main-stream period
    check_accounting(ph, dur(step_work))
    assert ph.layers_ns >= 0.95 * ph.op_time_ns


def _mi300(directory: Path) -> tuple[list[dict], list[list[dict]], list[dict]]:
    """(the step's device work, attention runs of its main stream, the nested GraphModule
    frames of the capture trace)."""
    raw = Raw(directory / "graph_execution.json.gz")
    (cap_file,) = (directory / "capture_traces").glob("*.pt.trace.json.gz")
    pieces = nested(Raw(cap_file).frames(r"^nn\.Module: GraphModule_\d+$"))
    step = raw.step()
    work = [
        d
        for d in raw.device
        if d["args"].get("correlation") in raw.runtime
        and step["s"] <= raw.runtime[d["args"]["correlation"]]["s"] <= step["e"]
    ]
    return work, attention_runs(raw.main_stream(work)), pieces


def test_vllm_gptoss_mi300_full_graph_24_layers_two_attention_kernels() -> None:
    work, runs, pieces = _mi300(MI300_FULL)
    kernel_of = ["3d" if any("attention_3d" in k["name"] for k in r) else "2d" for r in runs]
    assert len(pieces) == 24 and len(runs) == 24
    assert Counter(kernel_of) == {"2d": 12, "3d": 12}

    _, s = analyze([MI300_FULL])  # its capture_traces/ are found beside it
    (ph,) = s.layers.phases
    assert (ph.phase, ph.evidence, ph.inferred, ph.layers) == ("decode", "pieces", False, 24)
    # the two attention kernels tell the layers apart; which one is windowed nobody says
    assert kinds(ph) == {
        "attention[kernel_unified_attention_2d]/moe": 12,
        "attention[kernel_unified_attention_3d]/moe": 12,
    }
    assert ["3d" if "attention_3d" in r.attention_kernel else "2d" for r in ph.rows] == kernel_of
    check_accounting(ph, dur(work))
    assert ph.layers_ns >= 0.95 * ph.op_time_ns


def test_vllm_gptoss_mi300_piecewise_24_layers_from_graph_pieces() -> None:
    raw = Raw(MI300_PIECEWISE / "graph_execution.json.gz")
    step = raw.step()
    in_step = [f for f in raw.frames(r"^nn\.Module: GraphModule_\d+$") if step["s"] <= f["s"] <= step["e"]]
    assert len(in_step) == 25 and len(nested(in_step)) == 24
    work, runs, _ = _mi300(MI300_PIECEWISE)
    assert len(runs) == 24

    _, s = analyze([MI300_PIECEWISE])
    (ph,) = s.layers.phases
    assert (ph.phase, ph.evidence, ph.layers) == ("mixed", "pieces", 24)
    assert kinds(ph) == {"attention/moe": 24}
    check_accounting(ph, dur(work))


@needs
def test_vllm_llama_h100_80_layers_per_forward_without_steps() -> None:
    raw = Raw(H100)
    models = raw.frames(r"^nn\.Module: LlamaForCausalLM_\d+$")
    pieces = raw.frames(r"^nn\.Module: GraphModule_\d+$")
    per_forward = [len(nested([p for p in pieces if m["s"] <= p["s"] <= m["e"]])) for m in models]
    assert len(models) == 10 and set(per_forward) == {80}
    forward_work = [d for m in models for d in raw.launched_in(m)]

    _, s = analyze([H100])
    phases = s.layers.phases
    assert all((ph.evidence, ph.layers) == ("pieces", 80) for ph in phases)
    assert sum(ph.steps for ph in phases) == 10
    if phases[0].unit == "forward":  # no engine steps: one unit per model frame
        (ph,) = phases
        check_accounting(ph, dur(forward_work))
    else:  # engine steps (from execute_model frames): the same layers inside each
        for ph in phases:
            assert ph.layers_ns + ph.head_ns + ph.tail_ns + ph.other_ns == ph.op_time_ns
    layers = sum(ph.layers_ns for ph in phases)  # all inside the model frames, nearly all of their work
    assert 0.99 * dur(forward_work) <= layers <= dur(forward_work)


def test_analyze_model_gives_the_layer_types(tmp_path: Path) -> None:
    """``analyze --model`` with gpt-oss-20b's config (its layer_types alternate sliding and
    full attention from layer 0): the MI300 decode's two attention kernels are the two kinds."""
    from click.testing import CliRunner

    from xpu_profiler.cli.main import main

    types = ["sliding_attention", "full_attention"] * 12
    cfg = {"num_hidden_layers": 24, "layer_types": types, "sliding_window": 128, "num_local_experts": 32}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    out = tmp_path / "out"
    args = ["analyze", str(MI300_FULL), "-o", str(out), "--format", "json", "--model", str(tmp_path), "-q"]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    (ph,) = json.loads((out / "summary.json").read_text())["layers"]["phases"]
    assert (ph["evidence"], ph["layers"]) == ("pieces", 24)
    assert {k["kind"]: k["layers"] for k in ph["kinds"]} == {"sliding/moe": 12, "full/moe": 12}
    # the windowed layers are the ones that ran the 2d attention kernel
    assert {r["attention_kernel"] for r in ph["rows"] if r["attention"] == "sliding"} == {"kernel_unified_attention_2d"}
    res = CliRunner().invoke(main, ["analyze", str(MI300_FULL), "-o", str(out), "--model", "no-such-model-here"])
    assert res.exit_code == 2 and "nothing is downloaded" in res.output and "Traceback" not in res.output
