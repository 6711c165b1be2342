"""The columns of a chunk of Kineto events (``Cols``) and the column building the two readers
share on arrays: the pure-Python one (``columns``: msgspec-decoded events) and the native one
(``native``: the compiled scanner's arrays). What an event is by its category, the limits of a
usable time, the memory series, the Python frames' columns, the phases not used.
"""

from __future__ import annotations

from pathlib import Path

import msgspec
import numpy as np

from ...core.errors import TraceError
from ...core.profile import K_ANNOTATION, K_CPU_OP, K_KERNEL, K_MEMCPY, K_MEMSET, K_RUNTIME, K_UNKNOWN
from ...knowledge.step_grammar import STEP_FRAME, frame_engine
from .schema import PH_LETTERS, UNUSED_PHASES

# category → event kind; anything else keeps its category name and kind "unknown".
CATEGORY_KINDS = {
    "kernel": K_KERNEL,
    "gpu_memcpy": K_MEMCPY,
    "gpu_memset": K_MEMSET,
    "Memcpy": K_MEMCPY,
    "Memset": K_MEMSET,
    "cpu_op": K_CPU_OP,
    "operator": K_CPU_OP,
    "Operator": K_CPU_OP,
    "cuda_runtime": K_RUNTIME,
    "cuda_driver": K_RUNTIME,
    "Runtime": K_RUNTIME,
    "runtime": K_RUNTIME,
    "driver": K_RUNTIME,
    "privateuse1_runtime": K_RUNTIME,
    "privateuse1_driver": K_RUNTIME,
    "mtia_runtime": K_RUNTIME,
    "xpu_runtime": K_RUNTIME,  # Kineto's "xpu" is Intel's XPUPTI, still a host runtime call
    "xpu_driver": K_RUNTIME,
    "user_annotation": K_ANNOTATION,
    "gpu_user_annotation": K_ANNOTATION,
    "python_function": K_ANNOTATION,
}
# X events of these categories carry nothing the analysis uses; they are counted, not kept.
SKIPPED_CATEGORIES = {"Trace", "overhead"}
# another writer's capitals ("Kernel", "CPU_OP") name the same categories
_FOLDED_KINDS = {k.lower(): v for k, v in CATEGORY_KINDS.items()}
_FOLDED_SKIPPED = {c.lower() for c in SKIPPED_CATEGORIES}
# Of python_function frames only module ranges (fused-op attribution) and the engine's
# per-step calls (step evidence, ``step_grammar.STEP_FRAME``) are events; the other frames are
# kept apart, for the timeline (``Profile.frames``), and counted per engine whose source tree
# they are in (``py_engines``: which engine ran).
MODULE_PREFIX = "nn.Module: "

MAX_US = 4e15  # ~127 years: anything larger cannot be a trace time (and overflows int64 ns)
MAX_DUR_US = 1e12  # ~11.6 days: a longer event is absurd, and a few of them would overflow int64 sums
MEMORY_SERIES = ("host_allocated_bytes", "device_allocated_bytes", "device_reserved_bytes")
#: the instants Kineto writes around its own window (pytorch/kineto libkineto/src/output_json.cpp)
PROFILER_INSTANTS = frozenset(("Iteration Start: PyTorch Profiler", "Record Window End"))
#: unused events that only repeat what the analysis reads elsewhere: flows link a launch to its
#: kernel (the analysis joins them by args.correlation) and ops to their backward (External id);
#: the profiler's own instants mark its window. Counted in the run record, never warned.
REDUNDANT_UNUSED = ("flow", "profiler instant")


class Cols(msgspec.Struct):
    """Columns of one chunk of events, in chunk-local string ids (picklable, compact)."""

    names: list
    name_ids: np.ndarray
    cats: list
    cat_ids: np.ndarray
    kind: np.ndarray
    ts_ns: np.ndarray
    dur_ns: np.ndarray
    pid: np.ndarray
    tid: np.ndarray
    ext: np.ndarray
    corr: np.ndarray
    flops: np.ndarray  # -1: none recorded
    copy: np.ndarray  # runtime copy calls: the direction their ``kind`` argument gives (copy_kinds), 0
    launch_names: list  # kernel names runtime launches carry (chunk-local table)
    launch_rows: np.ndarray  # rows (of this chunk's kept events) that carry one
    launch_ids: np.ndarray
    # collective metadata of the (few) events that carry it: their rows, chunk-local strings
    comm_rows: np.ndarray
    comm_strings: list
    comm_coll: np.ndarray  # ids into comm_strings, -1
    comm_pg: np.ndarray
    comm_pg_ranks: np.ndarray
    comm_dtype: np.ndarray
    comm_seq: np.ndarray  # -1 unknown
    comm_in_nelems: np.ndarray
    comm_out_nelems: np.ndarray
    comm_group_size: np.ndarray
    mem_t: np.ndarray  # ns, not yet shifted
    mem_series: np.ndarray  # index into MEMORY_SERIES
    mem_v: np.ndarray
    thread_names: dict[str, str]  # "pid:tid" → name
    process_names: dict[str, str]  # pid → name
    # the Python frames apart from the events: names (chunk-local table), times in ns, pid, tid
    frame_names: list
    frame_name_ids: np.ndarray
    frame_ts_ns: np.ndarray
    frame_dur_ns: np.ndarray
    frame_pid: np.ndarray
    frame_tid: np.ndarray
    n_events: int
    dropped: int
    odd: int
    skipped: dict = {}  # odd events skipped by kind: kind → [count, first index, first name] (``tolerant``)
    # Begin/End (B/E) and async (b/e) events, for pairing across chunks (``begin_end``):
    # (index in the chunk, phase code, pairing key, name, ts in µs, the Begin event or None)
    marks: list = []
    unused: dict = {}  # events of phases the analysis does not use: label → [count, first index, first name]
    py_engines: dict[str, int] = {}  # python frames per engine source tree (vllm, sglang, ...)


def ns(us: np.ndarray) -> np.ndarray:
    """Times in µs (float) → integer ns, rounded half to even."""
    return np.rint(us * 1000.0).astype(np.int64)


def core_columns(
    names: list, name_ids: np.ndarray, cats: list, cat_ids: np.ndarray, kind: np.ndarray, ts_us, dur_us, pid, tid
) -> dict:
    """The core ``Cols`` fields of the kept complete events (their times in µs made integer ns)."""
    return {
        "names": names,
        "name_ids": name_ids,
        "cats": cats,
        "cat_ids": cat_ids,
        "kind": kind,
        "ts_ns": ns(ts_us),
        "dur_ns": ns(dur_us),
        "pid": pid,
        "tid": tid,
    }


def kinds_of(cats: list[str], cat_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each event's kind by its category (``CATEGORY_KINDS``), and whether the model keeps it."""
    cat_kind = np.array([CATEGORY_KINDS.get(c, _FOLDED_KINDS.get(c.lower(), K_UNKNOWN)) for c in cats], dtype=np.int8)
    cat_skip = np.array([c.lower() in _FOLDED_SKIPPED for c in cats], dtype=bool)
    kind = cat_kind[cat_ids] if len(cat_ids) else np.zeros(0, np.int8)
    keep = ~cat_skip[cat_ids] if len(cat_ids) else np.zeros(0, bool)
    return kind, keep


def frame_kind(name: str) -> int:
    """A python_function frame: 2 a module range, 1 an engine's step call, 0 any other frame."""
    return 2 if name.startswith(MODULE_PREFIX) else int(STEP_FRAME.search(name) is not None)


def other_instants(unused: dict, rows: list[int], name_of) -> None:
    """The instants that are no ``[memory]`` ones, counted in ``unused`` (the profiler's own
    window marks apart); ``name_of(i)``: the i-th event's name."""
    for label, picked in (
        ("profiler instant", [i for i in rows if name_of(i) in PROFILER_INSTANTS]),
        ("instant", [i for i in rows if name_of(i) not in PROFILER_INSTANTS]),
    ):
        if picked:
            unused[label] = [len(picked), picked[0], text(name_of(picked[0]))]


def memory_columns(
    path: Path, mem_idx: list[int], m_ts: np.ndarray, alloc: np.ndarray, reserved: np.ndarray, device_type: np.ndarray
) -> dict:
    """The ``Cols.mem_*`` samples of the ``[memory]`` instants (their event indices, times in µs
    and args, NaN / -1 where absent), and ``odd`` / ``skipped``: those with no usable time."""
    host = device_type == 0
    if ((alloc < 0) | (alloc > 2.0**62) | (reserved < 0) | (reserved > 2.0**62)).any():  # NaN: absent
        raise TraceError(path, "a [memory] event has a negative or absurd size")  # → the tolerant decode
    ok = np.isfinite(m_ts) & (np.abs(m_ts) <= MAX_US)
    odd = int(np.count_nonzero(~ok))
    skipped = {"with odd [memory] args (no usable time)": [odd, mem_idx[int(np.argmin(ok))], "[memory]"]} if odd else {}
    t_ns = ns(np.where(ok, m_ts, 0))
    has_a, has_r = ok & np.isfinite(alloc), ok & np.isfinite(reserved) & ~host
    return {
        "mem_t": np.concatenate([t_ns[has_a], t_ns[has_r]]),
        "mem_series": np.concatenate([np.where(host[has_a], 0, 1), np.full(int(has_r.sum()), 2)]).astype(np.int8),
        "mem_v": np.concatenate([alloc[has_a], reserved[has_r]]),
        "odd": odd,
        "skipped": skipped,
    }


def frame_columns(ts_us: np.ndarray, dur_us: np.ndarray, pid: np.ndarray, tid: np.ndarray, interned) -> dict:
    """The Python frames' columns (``Cols.frame_*``) of their times (µs), pids and tids; a frame
    with no usable time is left out (they are no events of the analysis: counted with the
    dropped ones). ``interned(rows)``: the names of the frames kept (``rows``, None: all) as
    (distinct names, ids)."""
    ok = np.isfinite(ts_us) & np.isfinite(dur_us) & (np.abs(ts_us) <= MAX_US) & (dur_us >= 0) & (dur_us <= MAX_DUR_US)
    rows = None
    if not ok.all():
        rows = np.flatnonzero(ok)
        ts_us, dur_us, pid, tid = ts_us[rows], dur_us[rows], pid[rows], tid[rows]
    uniq, ids = interned(rows)
    return {
        "frame_names": uniq,
        "frame_name_ids": ids,
        "frame_ts_ns": ns(ts_us),
        "frame_dur_ns": ns(dur_us),
        "frame_pid": pid,
        "frame_tid": tid,
    }


def text(v) -> str:
    return v[:80] if isinstance(v, str) else ""


def unused_phases(ph: np.ndarray, name_of) -> dict:
    """Events of phases the analysis does not use, by what they are: [count, first index, first
    name]; ``name_of(i)``: the i-th event's name."""
    out: dict[str, list] = {}
    rows = np.flatnonzero((ph == 9) | (ph >= 10))
    if not len(rows):
        return out
    codes, first, counts = np.unique(ph[rows], return_index=True, return_counts=True)
    for c, f, k in zip(codes.tolist(), first.tolist(), counts.tolist()):
        letter = PH_LETTERS.get(c, "?")
        label = UNUSED_PHASES.get(letter, "unknown phase")
        i = int(rows[f])
        got = out.setdefault(label, [0, i, text(name_of(i))])
        got[0] += k
        if i < got[1]:
            got[1:] = [i, text(name_of(i))]
    return out


def engine_counts(names: list[str]) -> dict[str, int]:
    """How many python frames lie in each engine's source tree (distinct names looked up once)."""
    out: dict[str, int] = {}
    counts: dict[str, int] = {}
    for n in names:
        counts[n] = counts.get(n, 0) + 1
    for n, k in counts.items():
        e = frame_engine(n)
        if e:
            out[e] = out.get(e, 0) + k
    return out
