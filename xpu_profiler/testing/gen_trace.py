#!/usr/bin/env python3
"""Generate a deterministic synthetic Kineto (torch.profiler) Chrome trace.

The trace has the shape of vLLM inference of a Qwen2.5-7B-like model (28
layers, bf16) on one H100: one worker thread that runs engine steps, each
wrapped in vLLM's ``execute_context_{n}({tok})_generation_{m}({tok})``
``user_annotation`` (about 6 % prefill steps, some mixed, the rest decode
with a batch of 1-128), with the host ops, CUDA runtime/driver calls, device
kernels on stream 7, memcpy/memset, ``ac2g`` flows, ``[memory]`` instants and
metadata that torch.profiler writes.

The text follows Kineto's writer (``libkineto/src/output_json.cpp``): one
multi-line block per event, ``ts`` as ``<us>.<ns:03>`` relative to
``baseTimeNanoseconds``, CPU events first, then runtime and device events,
then ``M`` metadata, then ``Record Window End`` (whose pid/tid are "").

Usage::

    python -m xpu_profiler.testing.gen_trace --events 1000000 -o trace_1m.json [--gzip] [--seed 0]

``--gzip`` also writes ``FILE.gz``; an output name ending in ``.gz`` is written
compressed only. Next to the trace, ``FILE.expected.json`` holds the ground
truth counted while generating (not by re-reading the file): number of events,
engine steps (total and by phase), kernel count and total kernel duration in
ns, and more. Output is streamed; memory stays flat whatever the size.
"""

from __future__ import annotations

import argparse
import sys

# The generator's parts, by concern (its entry points and tables stay importable from here):
# trace_tables (model, device and kernel tables), trace_events (the event writer), trace_layers
# (a decoder layer), trace_steps (an engine step), trace_file (header, metadata, the files).
from .trace_events import EventWriter
from .trace_file import GENERATOR_VERSION, HEADER, SOURCES, generate, metadata_blocks, source_hash
from .trace_layers import LayerWriter
from .trace_steps import Gen
from .trace_tables import (
    BASE_TIME_NS,
    BF16,
    CBID_CU_LAUNCH,
    CBID_LAUNCH,
    CBID_MEMCPY,
    CBID_MEMSET,
    CBID_SYNC,
    DEVICE,
    EMPTY,
    FLOP_PER_NS,
    HBM_BYTES_PER_NS,
    HEAD_DIM,
    HEADS,
    HIDDEN,
    INTER,
    KERNEL_RES,
    KERNELS,
    KV_BYTES_PER_TOKEN_LAYER,
    KV_HEADS,
    LAYERS,
    NUM_SMS,
    PCIE_BYTES_PER_NS,
    PID,
    QKV_N,
    STREAM,
    T0_NS,
    TID,
    VOCAB,
)

__all__ = [
    "BASE_TIME_NS",
    "BF16",
    "CBID_CU_LAUNCH",
    "CBID_LAUNCH",
    "CBID_MEMCPY",
    "CBID_MEMSET",
    "CBID_SYNC",
    "DEVICE",
    "EMPTY",
    "EventWriter",
    "FLOP_PER_NS",
    "GENERATOR_VERSION",
    "Gen",
    "HBM_BYTES_PER_NS",
    "HEADER",
    "HEADS",
    "HEAD_DIM",
    "HIDDEN",
    "INTER",
    "KERNELS",
    "KERNEL_RES",
    "KV_BYTES_PER_TOKEN_LAYER",
    "KV_HEADS",
    "LAYERS",
    "LayerWriter",
    "NUM_SMS",
    "PCIE_BYTES_PER_NS",
    "PID",
    "QKV_N",
    "SOURCES",
    "STREAM",
    "T0_NS",
    "TID",
    "VOCAB",
    "generate",
    "main",
    "metadata_blocks",
    "source_hash",
]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=100_000, help="approximate number of events (default 100000)")
    ap.add_argument("-o", "--output", required=True, help="output file (.json, or .json.gz to compress only)")
    ap.add_argument("--gzip", action="store_true", help="also write FILE.gz")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--host-gap-ns",
        type=int,
        default=600,
        help="host time between one kernel launch and the next (default 600): a slow host, e.g. "
        "20000, leaves the device idle between short decode kernels",
    )
    a = ap.parse_args(argv)
    exp = generate(a.events, a.output, seed=a.seed, gzip_copy=a.gzip, host_gap_ns=a.host_gap_ns)
    print(
        f"{a.output}: {exp['events']:,} events, {exp['steps']} steps {exp['steps_by_phase']}, "
        f"{exp['json_bytes']:,} bytes ({exp['json_bytes'] / exp['events']:.0f} B/event), "
        f"kernel time {exp['kernel_dur_ns'] / 1e9:.3f} s, generated in {exp['_wall_s']:.1f} s",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
