"""Runtime API calls by what they do, across vendors: one table of names.

The analysis recognises runtime calls (``cuda_runtime`` / ``cuda_driver`` / HIP / Kunlun
XPU runtime events) by what they do, never by one vendor's spelling:

- stream capture begins and ends (``cudaStreamBeginCapture``, ``hipStreamEndCapture``,
  ``xpu_stream_begin_capture``): a graph is being captured;
- calls that enqueue device work (``cudaLaunchKernel``, ``cuLaunchKernelEx``,
  ``hipModuleLaunchKernel``, ``xpu_launch*``, async copies and fills): inside a stream
  capture each becomes a graph node;
- graph launches (``cudaGraphLaunch``, ``hipGraphLaunch``, ``xpu_graph_launch``): a replay.

Kunlun's XPU runtime (XPURT) spells its API in snake case (``xpu_launch_async``,
``xpu_memcpy``, ``xpu_wait``): ``KUNLUN_API`` says which names are runtime calls (the XProfiler
reader has no category for them), ``KUNLUN_MARKERS`` which names only a Kunlun trace holds.

Sources: the CUDA Runtime / Driver API references (docs.nvidia.com/cuda/cuda-runtime-api,
cuda-driver-api), HIP's API reference (rocm.docs.amd.com/projects/HIP), and the Kunlun
runtime names of XProfiler traces and of Paddle's XPU tracer
(``paddle/fluid/platform/profiler/xpu_tracer.cc``: XPTI records API, KERNEL, MEMCPY, WAIT).
"""

from __future__ import annotations

import re

CAPTURE_BEGIN = re.compile(r"StreamBeginCapture|^xpu_?stream_?begin_?capture", re.I)
CAPTURE_END = re.compile(r"StreamEndCapture|^xpu_?stream_?end_?capture", re.I)
#: runtime calls that enqueue device work (a graph node, when inside a stream capture)
LAUNCH_API = re.compile(
    r"^(?!.*graph).*(launch(cooperative|host)?kernel|launchkernelex|^xpu_launch|"
    r"memcpy\w*async|memset\w*async|memcpywithstream)",
    re.I,
)
#: the runtime call that replays a graph. Kunlun's XPU runtime spells its API in snake
#: case (``xpu_launch_async``, ``xpu_memcpy``); its graph launch is taken as
#: ``xpu_graph_launch`` / ``xpuGraphLaunch`` (not verified in public sources). Kunlun's
#: CUPTI-compatible layer may also report ``cudaGraphLaunch``, which is covered.
GRAPH_LAUNCH = re.compile(r"^(cuda|hip|cu)GraphLaunch(_v\d+)?$|^xpu_?graph_?launch", re.I)
#: a Kunlun XPU runtime API call (``xpu_launch_async``, ``xpuMemcpy``)
KUNLUN_API = re.compile(r"xpu[A-Za-z]*_[A-Za-z0-9_]+|xpu[A-Z][A-Za-z0-9]+")
#: names and categories only Kunlun traces hold, as JSON strings (sniffing a file's head)
KUNLUN_MARKERS = re.compile(
    rb'"(?:xpu_launch[a-z_]*|xpu_wait|xpu_memcpy[a-z_]*|xpu_malloc|xpu_free|xpurt[a-z_]*|'
    rb'XPTI[A-Za-z_]*|xpti[a-z_]*|XPURT[A-Z_]*|SSE|SDNN|sdnn[a-z_]*|XPU ?\d+)"'
)
#: a runtime call's vendor prefix (``cudaLaunchKernel``, ``cuLaunchKernel``, ``hipLaunchKernel``,
#: ``hipModuleLaunchKernel``, ``xpu_launch_async``, ``xpuMemcpy``) and a driver API version suffix
#: (``_v2``, ``_ptsz``): what one call is called on each vendor's runtime
_VENDOR_PREFIX = re.compile(r"^(cuda|cu|hip|hsa_|xpu_?)(?=[A-Z_a-z])|(_v\d+|_ptsz|_ptds)$")


def neutral_call(name: str) -> str:
    """A runtime call's name without its vendor prefix and case, so that one call compares
    across vendors: ``cudaLaunchKernel`` and ``hipLaunchKernel`` → ``launchkernel``,
    ``cudaGraphLaunch`` and ``hipGraphLaunch`` → ``graphlaunch``."""
    return _VENDOR_PREFIX.sub("", name).replace("_", "").replace("Module", "").lower()
