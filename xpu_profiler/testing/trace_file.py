"""gen_trace's file: the header Kineto writes, the metadata blocks, the trace written section by
section (CPU events, then runtime and device events, then metadata and ``Record Window End``), its
gzip copy, the ground truth beside it (``FILE.expected.json``), and the hash of the generator."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import tempfile
import time

from .trace_steps import Gen
from .trace_tables import BASE_TIME_NS, DEVICE, PID, STREAM, T0_NS, TID, _ts

GENERATOR_VERSION = 1
#: the generator's modules (this folder): ``source_hash`` changes when any of them does
SOURCES = ("gen_trace.py", "trace_tables.py", "trace_events.py", "trace_layers.py", "trace_steps.py", "trace_file.py")


HEADER = """
{{
  "schemaVersion": 1,
  "deviceProperties": [
    {{
      "id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85045870592,
      "computeMajor": 9, "computeMinor": 0,
      "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
      "regsPerBlock": 65536, "regsPerMultiprocessor": 65536, "warpSize": 32,
      "sharedMemPerBlock": 49152, "sharedMemPerMultiprocessor": 233472,
      "numSms": 132, "sharedMemPerBlockOptin": 232448
    }}
  ],
  "cupti_version": 24,
  "cuda_runtime_version": 12080,
  "cuda_driver_version": 12080,
  "distributedInfo": {{"backend": "nccl", "rank": 0, "world_size": 1, "pg_count": 1, "pg_config": [{{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl", "pg_size": 1, "ranks": [0]}}], "nccl_version": "2.26.2"}},
  "record_shapes": 1,
  "profile_memory": 1,
  "with_stack": 0,
  "vllm_version": "0.15.1",
  "displayTimeUnit": "ms",
  "baseTimeNanoseconds": {base},
  "traceEvents": [
"""


def metadata_blocks(t_first: int, t_last: int) -> list:
    ts = _ts(t_first)

    def m(name, pid, tid, key, val):
        return (
            f'  {{\n    "name": "{name}", "ph": "M", "ts": {ts}, "pid": {pid}, "tid": {tid},\n'
            f'    "args": {{\n      "{key}": {val}\n    }}\n  }}'
        )

    return [
        m("process_name", PID, 0, "name", '"python3"'),
        m("process_labels", PID, 0, "labels", '"CPU"'),
        m("process_sort_index", PID, 0, "sort_index", PID),
        m("process_name", DEVICE, 0, "name", '"python3"'),
        m("process_labels", DEVICE, 0, "labels", f'"GPU {DEVICE}"'),
        m("process_sort_index", DEVICE, 0, "sort_index", 16777216 + DEVICE),
        m("thread_name", DEVICE, STREAM, "name", f'"stream {STREAM} "'),
        m("thread_sort_index", DEVICE, STREAM, "sort_index", STREAM),
        m("thread_name", PID, TID, "name", f'"thread {TID} (VllmWorker TP0)"'),
        m("thread_sort_index", PID, TID, "sort_index", TID),
        (
            f'  {{\n    "ph": "X", "cat": "Trace", "ts": {ts}, "dur": {_ts(t_last - t_first)},\n'
            f'    "pid": "Spans", "tid": "PyTorch Profiler",\n    "name": "PyTorch Profiler (0)",\n'
            f'    "args": {{\n      "Op count": 0\n    }}\n  }}'
        ),
        (
            f'  {{\n    "name": "process_sort_index", "ph": "M", "ts": {ts},\n    "pid": "Spans", "tid": 0,\n'
            f'    "args": {{\n      "sort_index": 536870912\n    }}\n  }}'
        ),
        (
            f'  {{\n    "name": "Iteration Start: PyTorch Profiler", "ph": "i", "s": "g",\n'
            f'    "pid": "Traces", "tid": "Trace PyTorch Profiler", "ts": {ts}\n  }}'
        ),
    ]


def generate(events: int, out_path: str, seed: int = 0, gzip_copy: bool = False, host_gap_ns: int = 600) -> dict:
    t_wall = time.perf_counter()
    out_dir = os.path.dirname(os.path.abspath(out_path)) or "."
    compress_only = out_path.endswith(".gz")
    plain_path = out_path[:-3] + ".tmp-plain" if compress_only else out_path
    g = _write_trace(events, out_path, plain_path, out_dir, seed, host_gap_ns)
    size_plain = _compress(out_path, plain_path, compress_only, gzip_copy)
    expected = _expected(g, events, seed, size_plain)
    exp_path = (out_path[:-3] if compress_only else out_path) + ".expected.json"
    with open(exp_path, "w") as f:
        json.dump(expected, f, indent=2)
        f.write("\n")
    expected["_wall_s"] = time.perf_counter() - t_wall
    return expected


def _write_trace(events: int, out_path: str, plain_path: str, out_dir: str, seed: int, host_gap_ns: int) -> Gen:
    """Writes the trace at ``plain_path`` (the device events gathered in a temporary file, then appended)."""
    with (
        open(plain_path, "w", encoding="ascii", buffering=1 << 20) as cpu_out,
        tempfile.TemporaryFile("w+", encoding="ascii", dir=out_dir, buffering=1 << 20) as gpu_out,
    ):
        g = Gen(seed, cpu_out, gpu_out, host_gap_ns)
        cpu_out.write(HEADER.format(base=BASE_TIME_NS))
        while g.n_events + 13 + 1 < events:
            g.step()
        gpu_out.flush()
        gpu_out.seek(0)
        shutil.copyfileobj(gpu_out, cpu_out, 1 << 20)
        meta = metadata_blocks(T0_NS, g.t)
        for blk in meta:
            cpu_out.write(blk)
            cpu_out.write(",\n")
        g.n_events += len(meta)
        g.by_cat["Trace"] = g.by_cat.get("Trace", 0) + 1
        g.by_cat["(none)"] = g.by_cat.get("(none)", 0) + len(meta) - 1
        cpu_out.write(
            f'  {{\n    "name": "Record Window End", "ph": "i", "s": "g",\n'
            f'    "pid": "", "tid": "", "ts": {_ts(g.t + 1000)}\n  }}\n'
        )
        g.n_events += 1
        g.by_cat["(none)"] += 1
        cpu_out.write(f'  ],\n  "traceName": "{os.path.basename(out_path)}"\n}}')
    return g


def _compress(out_path: str, plain_path: str, compress_only: bool, gzip_copy: bool) -> int:
    """The gzip copy (or the only output, for a ``.gz`` name); returns the size of the plain JSON."""
    if compress_only or gzip_copy:
        gz_path = out_path if compress_only else out_path + ".gz"
        with (
            open(plain_path, "rb") as src,
            open(gz_path, "wb") as raw,
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=6, mtime=0) as dst,
        ):
            shutil.copyfileobj(src, dst, 1 << 20)
        if compress_only:
            size_plain = os.path.getsize(plain_path)
            os.unlink(plain_path)
        else:
            size_plain = os.path.getsize(out_path)
    else:
        size_plain = os.path.getsize(out_path)
    return size_plain


def _expected(g: Gen, events: int, seed: int, size_plain: int) -> dict:
    """The ground truth, as ``FILE.expected.json`` holds it."""
    return {
        "events": g.n_events,
        "steps": g.steps,
        "steps_by_phase": g.steps_by_phase,
        "kernel_dur_ns": g.kernel_dur,
        "kernels": g.kernels,
        "kernel_dur_ns_by_phase": g.kernel_dur_by_phase,
        "kernels_by_phase": g.kernels_by_phase,
        "nccl_kernels": g.nccl_kernels,
        "nccl_kernel_dur_ns": g.nccl_dur,
        "memcpy": g.memcpy,
        "memcpy_dur_ns": g.memcpy_dur,
        "memset": g.memset,
        "memset_dur_ns": g.memset_dur,
        "device_busy_ns": g.kernel_dur + g.memcpy_dur + g.memset_dur,
        "events_by_cat": dict(sorted(g.by_cat.items())),
        "json_bytes": size_plain,
        "base_time_ns": BASE_TIME_NS,
        "generator": {
            "version": GENERATOR_VERSION,
            "seed": seed,
            "events_requested": events,
            "source_sha256": source_hash(),
        },
        "notes": "kernel_* counts cover cat 'kernel' (NCCL kernels included; memcpy/memset not). "
        "*_by_phase assign a kernel to the step whose user_annotation range holds its launch; "
        "'unknown' = launched outside every step (sampling).",
    }


def source_hash() -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    h = hashlib.sha256()
    for name in SOURCES:
        with open(os.path.join(here, name), "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:16]
