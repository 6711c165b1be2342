"""``Profile.run``: what is known about a run, one typed key each.

Readers and the live path fill it with what the inputs said about the run; what the analysis
derives is ``Profile.derived``, never a key here. ``summary.metadata`` turns it into the Summary's
typed ``Run``: the keys that are ``Run`` fields are typed, the other keys declared here go to
``Run.extra`` unless they have a section of their own. A key not declared here is a type error
(and is not carried into the summary): add it here, with a word on what it holds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypedDict, cast


class CaptureTraces(TypedDict):
    dir: str | None  # the directory they were copied into; None: the engine wrote none
    files: list[str]


class RunInfo(TypedDict, total=False):
    # -- what ran ------------------------------------------------------------------------
    model: str
    model_path: str
    builtin_model: bool
    model_config: dict[str, Any]  # the model's config.json (live runs, analyze --model)
    server: str  # record --url: the server's address
    device: str  # a device backend's kind (cpu, cuda, kunlun_p800) or what a log says (kunlun2)
    device_name: str
    device_info: dict[str, Any]  # knowledge.devices.DeviceInfo.to_json()
    device_spec: dict[str, Any] | None  # the spec the run used (DeviceSpec.to_json())
    device_detect_error: str
    detail_level: str
    metrics: list[str]
    workload: dict[str, Any]
    engine: dict[str, Any]  # the engine's settings (vLLM config summary)
    versions: dict[str, str]
    host: str
    start_time_ns: int  # Unix epoch
    incomplete: bool
    incomplete_reason: str
    generated_tokens: int  # run: the tokens the profiled requests generated
    lifetime: dict[str, Any]  # a record directory: the server lifetime reported (key, index, of, pids)
    window: dict[str, Any]  # record --url: the window asked for and what it traced (steps, traces)
    # -- where it came from ----------------------------------------------------------------
    sources: list[dict[str, Any]]  # one per input file: path, format, what its reader noted
    warnings: list[str]
    dropped_inputs: list[dict[str, Any]]
    dropped_events: dict[str, int]  # trace path → events its reader kept out of the events (Python frames)
    events_outside_steps_dropped: int
    clock_shift_ns: int
    timeline_note: str
    python_frames: dict[str, int]  # engine source tree (vllm, sglang...) → Python frames of its code
    process_names: dict[str, dict[str, str]]  # rank → {pid → process name}
    thread_names: dict[str, dict[str, str]]  # rank → {"pid:tid" → thread name}
    torch_traces: list[str]
    frontend_traces_left_out: list[str]
    capture_traces: CaptureTraces  # live runs: the graph-capture traces kept beside the outputs
    capture_details: dict[str, Any]
    parallel_ranks: dict[Any, Any]  # live runs: rank → {"dp": d, "tp": t, "pp": p}
    hook_overhead: dict[str, Any]
    throughput: dict[str, Any]  # the records' own token rates
    device_logs: dict[str, Any]
    xpu_gen: int
    xpu_gen_source: str
    xpurt_ranks: dict[str, Any]
    xprofiler_settings: dict[str, Any]
    xprofiler_trace_fields: dict[str, Any]
    xprofiler_processes: dict[str, Any]
    step_source: str  # steps the input itself recorded: "xpu_profiler_hooks" (the live run's hooks)


def as_dict(run: RunInfo) -> dict[str, Any]:
    """The same dict, for code that treats every key alike (merging runs, the keys that go to
    ``Run.extra``): its keys are still ``RunInfo``'s."""
    return cast("dict[str, Any]", run)


#: engines whose traces' torch.distributed world is the model's own parallel group (its tensor-
#: and pipeline-parallel ranks); a training job's world is mostly data-parallel ranks
WORLD_IS_MODEL_PARALLEL = ("vllm", "sglang")


def tensor_parallel_size(engine: Any, world_sizes: Iterable[Any], ranks: int, family: str | None) -> tuple[int, str]:
    """The tensor-parallel size the model's weights are split by: the engine's setting, else,
    in a trace of an engine of ``WORLD_IS_MODEL_PARALLEL`` (``family``), the world size it
    declares (``distributedInfo.world_size``: one rank of a TP4 run is a quarter of the model),
    else the ranks traced; with what it was taken from when the engine did not say."""
    tp = engine.get("tensor_parallel_size") if isinstance(engine, Mapping) else None
    if isinstance(tp, (int, float)) and not isinstance(tp, bool) and tp >= 1:
        return int(tp), ""
    world = max((w for w in world_sizes if isinstance(w, int) and not isinstance(w, bool) and w > 0), default=0)
    if world > 1 and family in WORLD_IS_MODEL_PARALLEL:
        return world, f"tensor-parallel size taken as the traces' world size ({world})"
    return max(1, ranks), ""
