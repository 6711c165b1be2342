"""Knowledge said once: the pairs of tables that must agree, checked."""

from __future__ import annotations

import re

from xpu_profiler.knowledge.collective_kinds import COLLECTIVE_WORDS, KIND_NAMES, KINDS, kind_of
from xpu_profiler.knowledge.families import words
from xpu_profiler.knowledge.fused_ops import FUSED_OPS
from xpu_profiler.knowledge.runtime_api import CAPTURE_BEGIN, CAPTURE_END, GRAPH_LAUNCH, KUNLUN_API, LAUNCH_API
from xpu_profiler.knowledge.taxonomy import OUR_MODULE_PREFIX, Taxonomy
from xpu_profiler.knowledge.vllm_names import LAYER_CLASSES, LAYER_SUFFIXES, layer_label
from xpu_profiler.readers.kunlun import xprofiler_fields


def test_collective_words_are_the_communication_words() -> None:
    """The taxonomy's generic communication row is built from the collective kinds' words: a
    name with a kind word is communication, and its kind is that word's."""
    (row,) = [r for r in words.ROWS if r.fused_op == "communication"]
    assert row.regex.startswith(COLLECTIVE_WORDS)
    tax = Taxonomy()
    examples = {
        "reduce_scatter": "c10d::reduce_scatter_tensor_coalesced_",
        "all_gather": "nccl:all_gather_into_tensor",
        "all_to_all": "_dcp_a2a_pack_send_kernel",
        "all_reduce": "vllm::all_reduce",
        "broadcast": "c10d::broadcast_",
        "send_recv": "kl3_group_send_recv",
    }
    for kind in (k.kind for k in KINDS if k.words):
        name = examples[kind]
        assert re.search(COLLECTIVE_WORDS, name, re.I), name
        assert FUSED_OPS[tax.classify(name)] == "communication", name
        assert KIND_NAMES[kind_of(name)] == kind, name


def test_kunlun_runtime_api_names_once() -> None:
    """The XProfiler reader takes the Kunlun runtime's API names from runtime_api, and every
    Kunlun spelling runtime_api knows for a launch, a capture or a graph launch is one."""
    assert xprofiler_fields._XPU_API_NAME is KUNLUN_API
    for name in (
        "xpu_launch_async",
        "xpu_memcpy_async",
        "xpu_stream_begin_capture",
        "xpu_stream_end_capture",
        "xpu_graph_launch",
    ):
        assert KUNLUN_API.fullmatch(name), name
        assert (
            LAUNCH_API.search(name)
            or CAPTURE_BEGIN.search(name)
            or CAPTURE_END.search(name)
            or GRAPH_LAUNCH.search(name)
        )


def test_every_vllm_layer_class_classifies_to_a_fused_op() -> None:
    """The layer classes the live collector opens a range for (vllm_names) and the taxonomy's
    module patterns agree: each one's range gets a fused op."""
    tax = Taxonomy()
    for cls in sorted(LAYER_CLASSES) + [f"MyModel{s}" for s in LAYER_SUFFIXES]:
        label = layer_label(cls)
        assert label is not None, cls
        assert tax.classify_module(f"{OUR_MODULE_PREFIX}{label}") >= 0, cls
        assert tax.classify_module(f"nn.Module: {label}_0") >= 0, cls
