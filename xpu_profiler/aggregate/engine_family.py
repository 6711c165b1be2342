"""Which engine produced a trace (vLLM, SGLang, other), from evidence in the trace itself.

The findings name only the knobs of that engine. Evidence, strongest first: our own
hooks (they run inside vLLM); SGLang's ``step[…]`` annotations (SGLang also writes
vLLM-style ``execute_…`` ranges with a TraceLens patch, so these decide first); python
frames in an engine's source tree (``with_stack``, counted by the reader); the engine's
per-step frames; vLLM's model-runner scopes; the engines' own op namespaces among host ops (``vllm::``, ``_C::`` /
``sgl_kernel::``, ``sglang::``); vLLM's step annotations. Nothing of these: "other".
"""

from __future__ import annotations

import re

import numpy as np

from ..core.profile import K_ANNOTATION, K_CPU_OP, K_RUNTIME, Profile
from ..knowledge.nvtx_ranges import FORWARD_SCOPE, runner_scope
from ..knowledge.step_grammar import parse_step_name

ENGINES = ("vllm", "sglang", "other")
_OPS = re.compile(r"^(vllm::|_C::|_vllm_fa\d?_C::|_moe_C::|sgl_kernel::|sglang::)")
_OP_ENGINE = {"sgl_kernel::": "sglang", "sglang::": "sglang"}


def detect(profile: Profile) -> tuple[str, str]:
    """(engine, the evidence in a few words); recorded in ``profile.derived`` too."""
    d = profile.derived
    if d.engine in ENGINES:
        return d.engine, d.engine_evidence
    engine, why = _detect(profile)
    d.engine, d.engine_evidence = engine, why
    return engine, why


def _detect(profile: Profile) -> tuple[str, str]:
    if profile.run.get("step_source") == "xpu_profiler_hooks":
        return "vllm", "the live run's vLLM hooks"
    ev = profile.events
    names = profile.strings
    ann = np.unique(ev["name"][(ev["kind"] == K_ANNOTATION) & (ev["device"] < 0)]).tolist()
    families = set()
    frames = {"vllm": 0, "sglang": 0}
    scopes = set()
    for nid in ann:
        s = names[nid]
        p = parse_step_name(s)
        if p is not None:
            families.add(p.family)
        elif (part := runner_scope(s)) is not None:
            scopes.add(part)
        elif s.endswith(": execute_model"):
            frames["vllm"] += 1
        elif s.endswith(": forward_batch_generation"):
            frames["sglang"] += 1
    if "sglang" in families:
        return "sglang", "SGLang step[…] annotations"
    py = profile.run.get("python_frames")
    if isinstance(py, dict) and py:
        best = max(py, key=lambda k: py[k])
        if best in ("vllm", "sglang") and py[best] > 0:
            return best, f"{py[best]:,} python frames in {best}'s source tree"
    if frames["vllm"] or frames["sglang"]:
        best = "vllm" if frames["vllm"] >= frames["sglang"] else "sglang"
        return best, f"{best}'s per-step python frames"
    if FORWARD_SCOPE in scopes and len(scopes) > 1:
        return "vllm", "vLLM's model-runner scopes (gpu_model_runner: …)"
    ops = {"vllm": 0, "sglang": 0}
    for nid in np.unique(ev["name"][ev["kind"] == K_CPU_OP]).tolist():
        m = _OPS.match(names[nid])
        if m:
            ops[_OP_ENGINE.get(m.group(1), "vllm")] += 1
    if ops["sglang"] > ops["vllm"]:
        return "sglang", f"{ops['sglang']} sgl_kernel/sglang ops"
    if "vllm" in families:
        return "vllm", "vLLM execute_… step annotations"
    if ops["vllm"]:
        return "vllm", f"{ops['vllm']} vLLM custom ops (vllm::, _C::)"
    if "atom" in families:
        return "other", "ATOM step annotations"
    if "trtllm" in families:
        return "other", "TensorRT-LLM _forward_step ranges"
    return "other", "no engine's annotations, frames or ops"


#: runtime API prefixes → the device vendor (ROCm traces reuse Kineto's cuda_runtime category)
_VENDOR_API = (("hip", "amd"), ("cuda", "nvidia"), ("cu", "nvidia"), ("xpu", "kunlun"))


def vendor(profile: Profile) -> str | None:
    """The device vendor (nvidia, amd, kunlun, cpu, ...) from the runtime calls' names, else
    the recorded device kind; None when nothing says."""
    ev = profile.events
    counts: dict[str, int] = {}
    for nid in np.unique(ev["name"][ev["kind"] == K_RUNTIME]).tolist():
        s = profile.strings[nid].lower()
        for prefix, v in _VENDOR_API:
            if s.startswith(prefix):
                counts[v] = counts.get(v, 0) + 1
                break
    if counts:
        return max(counts, key=lambda k: counts[k])
    dev = profile.run.get("device")
    if isinstance(dev, str) and dev:
        return "kunlun" if dev.startswith("kunlun") else "nvidia" if dev == "cuda" else dev
    return None
