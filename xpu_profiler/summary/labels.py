"""The words every output shows for the summary's enums: one table per enum, read by the
terminal and the HTML report alike, so that both say the same thing.

Keys are the values ``summary.json`` carries; a key missing from its table is shown as it
is (``TABLE.get(key, key)``). The words are written to follow "found N by ...", "from ...",
"steps aligned ...", "clock ..." and "matched ...", the phrases both outputs put them in.
"""

from __future__ import annotations

#: ``step_search.found_by``: what found the engine steps
STEP_EVIDENCE: dict[str, str] = {
    "hooks": "the live run's hooks",
    "annotation": "step annotations",
    "profiler_step": "ProfilerStep#N markers",
    "frame": "python frames of the engine's per-step call",
    "device_segment": "bursts of device work (inferred: no step marker in the trace)",
    "runner_scope": "the model runner's scopes (preprocess, forward, ...)",
}

#: ``phases[].bound``: each phase's verdict
BOUND: dict[str, str] = {"host": "host-bound", "device": "device-bound", "communication": "communication-bound"}

#: attribution sources (``attribution.share_by_source``, ``fused_ops[].time_ns_by_source``):
#: what decided an event's fused op
ATTRIBUTION_SOURCES: dict[str, str] = {
    "op_chain": "launching op",
    "module": "layer module",
    "capture": "capture trace",
    "structure": "kernel sequence",
    "name": "kernel name only",
    "none": "unattributed",
}

#: ``layers.phases[].evidence``: what the decoder layers were found from
LAYER_EVIDENCE: dict[str, str] = {
    "module": "decoder-layer module frames",
    "capture": "the capture trace's layer frames",
    "pieces": "the graph pieces of the compiled model",
    "config": "the model config's layer count",
    "period": "the kernel stream's repeating period (inferred)",
}

#: ``layers.phases[].unit``: what the layers are counted per
LAYER_UNITS: dict[str, str] = {"step": "step", "forward": "forward pass", "rank": "trace"}

#: ``alignment.steps``: how the ranks' engine steps were matched
STEP_ALIGNMENT: dict[str, str] = {
    "step_id": "by step id",
    "content": "by content (each rank's steps matched on what they ran)",
    "single_rank": "one rank",
}

#: ``alignment.clock``: how the ranks' clocks were aligned
CLOCK_ALIGNMENT: dict[str, str] = {
    "shared": "shared (as recorded)",
    "collective_ends": "aligned on collective ends",
    "unknown": "not aligned (no collective matched)",
    "single_rank": "one rank",
}

#: ``alignment.collectives``: how each collective was matched across ranks
COLLECTIVE_MATCH: dict[str, str] = {
    "seq": "by the process group's sequence number",
    "step": "the k-th of a kind in each engine step",
    "order": "the k-th of a kind in the trace",
    "mixed": "by sequence number where the trace has one, else by order",
    "none": "none matched",
}
