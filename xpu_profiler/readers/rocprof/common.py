"""What rocprofv3's two outputs share: its record domains and operations by name, GPU agents as
device indices, copies named as the runtimes name them, and RCCL calls as collectives.

Sources: ROCm/rocprofiler-sdk ``source/include/rocprofiler-sdk/fwd.h`` (the buffer-tracing kinds;
their numbering changes between releases, so a record's kind is always read by its name through
the file's own ``strings.buffer_records``), ``source/lib/output/generateJSON.cpp`` and
``generateRocpd.cpp`` (what each output holds), ``source/lib/rocprofiler-sdk/marker/
range_marker.def.cpp`` (ROCTx ranges: ``roctxThreadRangeA`` spans a push to its pop,
``roctxProcessRangeA`` a start to its stop; ROCm 6.x named them ``roctxRangePushA`` and
``roctxRangeStartA``), the RCCL API (``ncclAllReduce``...).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from ...core.intervals import containing
from ...core.profile import COMM_SCHEMA, K_KERNEL, Profile, Table

#: record domains, by the kind names of ``strings.buffer_records`` (and rocpd's ``category``)
HIP_DOMAINS = ("HIP_RUNTIME_API", "HIP_RUNTIME_API_EXT", "HIP_COMPILER_API", "HIP_COMPILER_API_EXT")
MARKER_DOMAINS = ("MARKER_CORE_API", "MARKER_CORE_RANGE_API", "MARKER_CONTROL_API", "MARKER_NAME_API")
RCCL_DOMAINS = ("RCCL_API",)
#: ROCTx operations that are ranges (the others are marks, names or controls: no time span)
MARKER_RANGES = frozenset(("roctxThreadRangeA", "roctxProcessRangeA", "roctxRangePushA", "roctxRangeStartA"))

#: memory-copy operations → the name Kineto gives the same copy (``Memcpy HtoD (Host -> Device)``)
COPY_NAMES = {
    "MEMORY_COPY_HOST_TO_HOST": "Memcpy HtoH (Host -> Host)",
    "MEMORY_COPY_HOST_TO_DEVICE": "Memcpy HtoD (Host -> Device)",
    "MEMORY_COPY_DEVICE_TO_HOST": "Memcpy DtoH (Device -> Host)",
    "MEMORY_COPY_DEVICE_TO_DEVICE": "Memcpy DtoD (Device -> Device)",
}
GPU_AGENT = 2  # rocprofiler_agent_type_t: 1 CPU, 2 GPU


def domain_of(category: str) -> str:
    """A record domain (``category``) as the readers use it: "hip", "rccl", "marker" or ""."""
    if category in HIP_DOMAINS:
        return "hip"
    if category in RCCL_DOMAINS:
        return "rccl"
    if category in MARKER_DOMAINS:
        return "marker"
    return ""


def copy_name(operation: str) -> str:
    return COPY_NAMES.get(operation, f"Memcpy ({operation.removeprefix('MEMORY_COPY_').lower() or 'unknown'})")


#: the RCCL (and NCCL) calls that run a collective, and the collective's name as the comms table
#: keeps it (``knowledge.collective_kinds`` reads it); communicator setup, groups and queries run none
RCCL_COLLECTIVES = {
    "AllReduce": "allreduce",
    "AllGather": "allgather",
    "ReduceScatter": "reducescatter",
    "Broadcast": "broadcast",
    "Bcast": "broadcast",
    "Reduce": "reduce",
    "AllToAll": "all_to_all",
    "AllToAllv": "all_to_all",
    "Gather": "gather",
    "Scatter": "scatter",
    "Send": "send",
    "Recv": "recv",
}
_RCCL_CALL = re.compile(r"^[nr]ccl([A-Za-z]+)$")


def collective_of(call: str) -> str:
    """``ncclAllReduce`` → ``allreduce``; "" for a call that runs no collective."""
    m = _RCCL_CALL.match(call)
    return RCCL_COLLECTIVES.get(m.group(1), "") if m else ""


def gpu_indices(agents: Sequence[dict]) -> dict[int, int]:
    """Agent key → GPU index for the GPU agents: ``gpu_index``, else ``logical_node_type_id``,
    else the agent's place among the GPUs by ``node_id`` (ROCm 6.2 writes neither)."""
    gpus = [a for a in agents if a.get("type") == GPU_AGENT]
    out: dict[int, int] = {}
    for order, a in enumerate(sorted(gpus, key=lambda a: (a.get("node_id", 0), a["key"]))):
        idx = a.get("gpu_index")
        if not isinstance(idx, int) or idx < 0:
            idx = a.get("logical_node_type_id")
        out[a["key"]] = idx if isinstance(idx, int) and idx >= 0 else order
    return out


def device_properties(agents: Sequence[dict], used: set[int]) -> list[dict]:
    """The GPUs that ran work, as the device table reads them (``name`` first), each once (a
    file of several processes lists each one's agents: the same GPUs again)."""
    props = []
    listed: set[int] = set()
    for a in agents:
        if a.get("type") == GPU_AGENT and a.get("index") in used and a["index"] not in listed:
            listed.add(a["index"])
            name = str(a.get("product_name") or a.get("name") or "").strip()
            p: dict = {"id": a["index"], "name": name}
            for src, dst in (("name", "gfx"), ("cu_count", "numCUs"), ("local_mem_size", "totalGlobalMem")):
                v = a.get(src)
                if isinstance(v, (int, str)) and v not in ("", 0):
                    p[dst] = v
            props.append(p)
    return props


def collectives_by_launch(
    call_tid: np.ndarray,
    call_start: np.ndarray,
    call_end: np.ndarray,
    call_coll: np.ndarray,
    launch_tid: np.ndarray,
    launch_start: np.ndarray,
) -> np.ndarray:
    """Per runtime launch, the collective (index into the caller's names) of the RCCL call
    that holds it on its thread, -1: an RCCL call launches its kernels from inside itself."""
    if not len(call_tid) or not len(launch_tid):
        return np.full(len(launch_tid), -1, np.int64)
    hit = containing(call_tid, call_start, call_end, launch_tid, launch_start, launch_start)
    return np.where(hit >= 0, call_coll[np.maximum(hit, 0)], -1)


def link_collectives(prof: Profile) -> int:
    """The kernels launched from inside an RCCL collective call get that collective (comms
    table); how many did."""
    ev, strings = prof.events, prof.strings
    rccl_cat = strings.get("rccl_api")
    hip_cat = strings.get("cuda_runtime")
    if rccl_cat < 0 or hip_cat < 0:
        return 0
    calls = np.flatnonzero(ev["cat"] == rccl_cat)
    coll_names = [collective_of(strings[int(n)]) for n in ev["name"][calls].tolist()]
    colls = sorted({c for c in coll_names if c})
    if not colls:
        return 0
    call_coll = np.array([colls.index(c) if c else -1 for c in coll_names], np.int64)
    keep = call_coll >= 0
    calls, call_coll = calls[keep], call_coll[keep]
    hip = np.flatnonzero(ev["cat"] == hip_cat)
    key = ev["rank"].astype(np.int64) << 32
    coll = collectives_by_launch(
        key[calls] | ev["track"][calls],
        ev["start"][calls],
        ev["start"][calls] + ev["dur"][calls],
        call_coll,
        key[hip] | ev["track"][hip],
        ev["start"][hip],
    )
    launched = hip[coll >= 0]
    if not len(launched):
        return 0
    by = {(int(r), int(c)): int(k) for r, c, k in zip(ev["rank"][launched], ev["corr"][launched], coll[coll >= 0])}
    kern = np.flatnonzero(ev["kind"] == K_KERNEL)
    got = np.array([by.get((int(r), int(c)), -1) for r, c in zip(ev["rank"][kern], ev["corr"][kern])], np.int64)
    rows = kern[got >= 0]
    if not len(rows):
        return 0
    ids = strings.intern_many(colls)
    comm = ev["comm"].copy()
    comm[rows] = len(prof.comms) + np.arange(len(rows))
    ev["comm"] = comm
    new = Table(COMM_SCHEMA, {"rank": ev["rank"][rows], "coll": ids[got[got >= 0]]})
    prof.comms = Table.concat(COMM_SCHEMA, [prof.comms, new])
    return len(rows)
