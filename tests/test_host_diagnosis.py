"""Why a step is slow, on the real vLLM Llama TP=4 H100 trace and its ROCm-style twin
(``rocm_twin``: ROCm's names, input copies labelled device-to-device with ``kind: 1`` on the
copy call, and a host stall in the model's forward in every decode step, as a new user saw on
MI300X). The phases come from what each copy is (its call's direction), the stall is named
as the forward frame's own time, and ``diff`` between the two runs answers: per phase, the
step change split into device work per token and host time per step, by cause."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
import rocm_twin
from raw_steps import copies_tokens, vllm_frame_steps
from real_data import REAL

from xpu_profiler.analysis import analyze
from xpu_profiler.diff import compare
from xpu_profiler.exporters.html.diff_page import write_diff
from xpu_profiler.terminal.diff import render

H100 = REAL / "gpu-inference" / "vllm-llama-tp4-h100-rank0.pt.trace.json.gz"
STALL_US = 25_000
pytestmark = pytest.mark.skipif(not H100.is_file(), reason=f"the shared real traces are not at {REAL}")


@pytest.fixture(scope="module")
def twins(tmp_path_factory) -> dict:
    d = tmp_path_factory.mktemp("twins")
    out = {"dir": d}
    out["stalled"] = d / "mi300x-stalled.pt.trace.json.gz"
    out["facts"] = rocm_twin.make(H100, out["stalled"], stall_us=STALL_US)
    out["labels_only"] = d / "mi300x-labels.pt.trace.json.gz"
    rocm_twin.make(H100, out["labels_only"], stall_us=STALL_US, kind=False)
    return out


@pytest.fixture(scope="module")
def summaries(twins) -> dict:
    return {k: analyze([p])[1] for k, p in (("h100", H100), ("stalled", twins["stalled"]))}


steps_of = vllm_frame_steps


def host_to_device_sizes(path: Path) -> list[list[int]]:
    """Per step, the bytes of its copies whose runtime call says host to device (``kind`` 1,
    hipMemcpyKind), in launch order: what a copy is, whatever its label."""
    doc = json.loads(gzip.decompress(path.read_bytes()))
    kinds = {
        e["args"]["correlation"]: str(e["args"].get("kind"))
        for e in doc["traceEvents"]
        if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})
    }
    out = []
    for st in steps_of(path):
        copies = [w for w in st.work if w.cat == "gpu_memcpy" and kinds.get(w.corr) == "1"]
        out.append([w.nbytes for w in sorted(copies, key=lambda w: (st.launches[w.corr].start, w.start))])
    return out


def test_rocm_phases_come_from_the_copy_calls_direction(twins, summaries):
    """(On the stalled twin: the stall moves times, not copies.)"""
    sizes = host_to_device_sizes(twins["stalled"])
    tokens = [copies_tokens(s) for s in sizes]
    phases = ["decode" if t == r else "prefill" if r == 1 and t > 1 else "unknown" for t, r in tokens]
    assert phases == ["prefill"] + ["decode"] * 9 and tokens[0] == (1049, 1)  # the rule finds them
    # every one of those copies is labelled device-to-device: the label alone says nothing
    doc = json.loads(gzip.decompress(twins["stalled"].read_bytes()))
    labels = {e["name"] for e in doc["traceEvents"] if e.get("cat") == "gpu_memcpy"}
    assert not any("HtoD" in x or "Host" in x for x in labels)
    s = summaries["stalled"]
    assert s.steps.phase == phases and s.steps.phase_from == ["copies"] * 10
    assert s.steps.prefill_tokens[0] == 1049 and s.steps.decode_tokens[1:] == [1] * 9
    assert s.step_search.vendor == "amd"


def test_the_stall_is_named_as_the_forward_frames_own_time(twins, summaries):
    """Each decode step stalls 25 ms in ``llama.py(343): forward`` with nothing below it, and
    the device idle throughout (checked on the raw events): the forward frame's exposed own
    time grows by exactly the stall, and it is the decode phase's first cause."""
    facts = twins["facts"]
    stalled = steps_of(twins["stalled"])
    # the device ran nothing during any stall: each stall is exposed host time, whole
    dev = [(w.start, w.end) for st in stalled for w in st.work]
    shift = 0.0
    for t in facts["stalls"]:  # on the source's clock; each earlier stall moved it later
        a, b = round((t + shift) * 1000), round((t + shift + STALL_US) * 1000)
        assert not any(s < b and e > a for s, e in dev)
        shift += STALL_US
    base, new = (next(p for p in summaries[k].phases if p.phase == "decode") for k in ("h100", "stalled"))
    assert new.bound == "host" and base.bound == "device"
    top = new.host.causes[0]
    assert (top.cause, top.name) == ("model_forward", rocm_twin.FORWARD_FRAME)
    before = next(c for c in base.host.causes if c.name == rocm_twin.FORWARD_FRAME)
    stalls_per_step = len(facts["stalls"]) / new.steps
    assert top.per_step_ns - before.per_step_ns == pytest.approx(STALL_US * 1000 * stalls_per_step, abs=2000)
    # the whole exposed host time is the device's host wait, step by step (the raw rule)
    decode_steps = stalled[1:]
    assert new.host.exposed_per_step_ns * new.steps == sum(st.host_wait for st in decode_steps)
    # the host-bound finding names the cause and its fix, not a list
    f = {x.rule: x for x in summaries["stalled"].findings}["host_bound"]
    assert "llama.py(343): forward" in f.title and f.evidence["host_causes"][0]["cause"] == "model_forward"
    assert "torch.compile" in f.fix or "compile" in f.fix


def test_diff_answers_why_the_twins_decode_is_slower(twins, summaries):
    r = compare(summaries["h100"], summaries["stalled"])
    assert r.comparable and r.phases_compared == ["prefill", "decode"] and not r.pooled
    split = {s.phase: s for s in r.steps}
    base_steps, new_steps = steps_of(H100), steps_of(twins["stalled"])
    dec = split["decode"]
    # the step p50s by the raw rule; the device's work per token did not move, the host's did
    assert dec.base_step_p50_ns == sorted(s.step_time for s in base_steps[1:])[4]
    assert dec.new_step_p50_ns == sorted(s.step_time for s in new_steps[1:])[4]
    assert dec.base_device_per_token_ns == dec.new_device_per_token_ns
    host_base = sum(s.host_wait for s in base_steps[1:]) / 9
    host_new = sum(s.host_wait for s in new_steps[1:]) / 9
    assert (dec.base_host_per_step_ns, dec.new_host_per_step_ns) == (host_base, host_new)
    # the headline: decode, its step p50 before and after, the host's part first and its cause
    assert r.headline.startswith("decode: step p50 ")
    host_part, device_part = r.headline.index("exposed host time"), r.headline.index("device work per token")
    assert host_part < device_part and "llama.py(343): forward" in r.headline
    # causes align across vendors: cudaGraphLaunch and hipGraphLaunch are one launch
    names = {x.name for x in r.host if x.phase == "decode"}
    assert not any(n in ("cudaGraphLaunch", "hipGraphLaunch") for n in names)
    assert all(x.status != "added" or "hip" not in x.name for x in r.host)


def test_diff_pools_the_steps_when_one_sides_phases_are_unknown(twins, summaries):
    """Copies only their labels describe (device-to-device): the twin's phases are unknown; the
    diff still answers, over all steps of each run, pooled."""
    _, labels_only = analyze([twins["labels_only"]])
    assert {p.phase for p in labels_only.phases} == {"unknown"}
    r = compare(summaries["h100"], labels_only)
    assert r.comparable and r.pooled and r.phases_compared == ["all"]
    assert not r.headline.startswith("cannot compare") and "phases differ" in r.notes[0]
    (all_,) = r.steps
    base_times = sorted(s.step_time for s in steps_of(H100))
    # the same events and times as the stalled twin's (the rule leaves the kind argument out only)
    new_times = sorted(s.step_time for s in steps_of(twins["stalled"]))
    # ten steps: the p50 is the mean of the middle two
    assert all_.base_step_p50_ns == (base_times[4] + base_times[5]) / 2
    assert all_.new_step_p50_ns == (new_times[4] + new_times[5]) / 2
    assert "llama.py(343): forward" in r.headline


def test_diff_terminal_and_html_put_base_before_new(twins, summaries, tmp_path):
    r = compare(summaries["h100"], summaries["stalled"], str(H100), str(twins["stalled"]))
    text = render(r)
    assert "Where the step time went (BASE → NEW)" in text and "llama.py(343): forward" in text
    html = write_diff(r, tmp_path / "diff.html").read_text()
    assert html.index(H100.name) < html.index(twins["stalled"].name)
    assert 'id="host-table"' in html and 'id="layer-table"' in html and "llama.py(343): forward" in html


#: frames only a compilation runs (Dynamo's tracing, Inductor's lowering): a trace without any
#: holds no (re)compilation, whatever else of torch.compile it shows
COMPILING = ("torch/_dynamo/convert_frame.py", "torch/_dynamo/symbolic_convert.py", "torch/_inductor/compile_fx.py")
#: a compiled model's steady state: Inductor's launcher and the generated code's call
COMPILED_RUNTIME = ("torch/_inductor/runtime/", "/inductor_cache/", "torch/fx/graph_module.py")


def test_a_compiled_models_steady_state_is_no_recompile(summaries):
    """The H100 trace is vLLM's compiled Llama: its steps run Inductor's generated code and
    launcher, and no frame of a compilation. None of its host time is a recompile (whose fix,
    warming up, changes nothing here); the generated code's time is the compiled graph's
    launching."""
    doc = json.loads(gzip.decompress(H100.read_bytes()))
    frames = {e["name"] for e in doc["traceEvents"] if e.get("cat") == "python_function"}
    assert not [f for f in frames if any(c in f for c in COMPILING)]
    assert [f for f in frames if any(c in f for c in COMPILED_RUNTIME)]
    s = summaries["h100"]
    causes = [c for p in s.phases if p.host for c in p.host.causes]
    assert "recompile" not in {c.cause for c in causes} | set(s.host_path.cause)
    runtime = [c for c in causes if any(r in c.name for r in COMPILED_RUNTIME)]
    assert runtime and {c.cause for c in runtime} == {"compiled_launch"}
    on_path = {s.host_path.cause[i] for i, n in enumerate(s.host_path.name) if any(r in n for r in COMPILED_RUNTIME)}
    assert on_path == {"compiled_launch"}


def test_an_identical_twin_is_no_change(summaries, tmp_path):
    """The twin with ROCm's names and nothing else changed: the diff finds no change. Its host
    time causes align call for call whatever each vendor calls them: the H100 trace launches
    through the runtime (cudaLaunchKernel) and the driver (cuLaunchKernel), one call that the
    twin names hipLaunchKernel for both, so each run lists it as one cause with both calls'
    time (two rows of one call would leave part of it below a run's cut)."""
    doc = json.loads(gzip.decompress(H100.read_bytes()))
    calls = {e["name"] for e in doc["traceEvents"] if e.get("cat") in ("cuda_runtime", "cuda_driver")}
    assert {"cudaLaunchKernel", "cuLaunchKernel"} <= calls
    twin = tmp_path / "mi300x-same.pt.trace.json.gz"
    rocm_twin.make(H100, twin, stall_us=0)
    report = compare(summaries["h100"], analyze([twin])[1])
    assert report.unchanged and report.headline == "no change"
    assert all(r.status == "unchanged" for r in report.host)
