"""The one columnar data model every source loads into and every output reads.

A `Profile` holds one `Table` per kind of record (events, steps, counters,
requests, collectives' metadata, Python frames), each a set of equal-length numpy
arrays, plus a `StringTable` for names and a plain-dict `run` for metadata. Times are integer nanoseconds
relative to `base_ns` (absolute Unix-epoch ns of time 0, or 0 when unknown).
Never a Python object per event: traces hold millions of them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .derived import Derived
from .fmt import is_decimal
from .run_info import RunInfo, as_dict
from .table import StringTable as StringTable  # the containers, importable from here as they always were
from .table import Table as Table

# Event kinds. The order is part of the saved format: append only.
KINDS = ("unknown", "kernel", "cpu_op", "memcpy", "memset", "communication", "runtime", "annotation")
K_UNKNOWN, K_KERNEL, K_CPU_OP, K_MEMCPY, K_MEMSET, K_COMM, K_RUNTIME, K_ANNOTATION = range(len(KINDS))
#: kinds that occupy a device stream (the "device busy" set)
DEVICE_KINDS = (K_KERNEL, K_MEMCPY, K_MEMSET, K_COMM)

# Scheduler phases of an engine step. "unknown" covers steps with no token
# information (ProfilerStep#N) and events outside every step.
PHASES = ("unknown", "prefill", "decode", "mixed")
P_UNKNOWN, P_PREFILL, P_DECODE, P_MIXED = range(len(PHASES))

# What found each step (steps table ``evidence``): the live run's own hooks, an engine
# annotation, torch's ``ProfilerStep#N``, a python-stack frame of the engine's per-step call,
# inferred, a burst of device work between idle gaps, and the model runner's scopes (vLLM's
# NVTX or custom scopes: tried after the annotations, before the frames). The order is part of
# the saved format: append only.
STEP_EVIDENCE = ("hooks", "annotation", "profiler_step", "frame", "device_segment", "runner_scope")
E_HOOKS, E_ANNOTATION, E_PROFILER_STEP, E_FRAME, E_SEGMENT, E_SCOPE = range(len(STEP_EVIDENCE))
# Where each step's phase came from (``phase_from``): what the step's record says (hooks,
# annotation fields), inferred from its input copies or its graph launches, or nothing.
PHASE_FROM = ("recorded", "copies", "graph_launches", "none")
F_RECORDED, F_COPIES, F_GRAPHS, F_NONE = range(len(PHASE_FROM))

NO_TIME = np.int64(-1)  # start of an event whose source has no timeline (XPURT_PROF logs)

EVENT_SCHEMA: dict[str, np.dtype] = {
    "name": np.dtype(np.int32),  # string id
    "kind": np.dtype(np.int8),  # index into KINDS
    "start": np.dtype(np.int64),  # ns relative to base; -1 when the source has no timeline
    "dur": np.dtype(np.int64),  # ns
    "rank": np.dtype(np.int32),
    "device": np.dtype(np.int32),  # device index for device-side events, -1 on the host
    "track": np.dtype(np.int64),  # host thread id, or device stream id
    "corr": np.dtype(np.int64),  # correlation id linking a runtime launch to its device work, -1
    "ext": np.dtype(np.int64),  # External id linking a cpu_op to the launches it made, -1
    "cat": np.dtype(np.int32),  # string id of the source category (kept for unknown kinds)
    "step": np.dtype(np.int32),  # derived: row in `steps`, -1
    "phase": np.dtype(np.int8),  # derived: index into PHASES
    "fused": np.dtype(np.int16),  # derived: index into taxonomy.FUSED_OPS, -1 before attribution
    "depth": np.dtype(np.int8),  # derived: 0 for a top-level host op, 1 nested; -1 n/a
    "group": np.dtype(np.int32),  # string id of an optional grouping level (XPURT scopes), -1
    "launch": np.dtype(np.int32),  # runtime launches: string id of the kernel it names (ROCm), -1
    "comm": np.dtype(np.int32),  # row in `comms`: the collective's metadata the source wrote, -1
    "source": np.dtype(np.int8),  # derived: how the fused op was decided (attribution_source codes)
    # host ops: FLOPs the trace records (with_flops) or shapes give; copies and fills
    # (memcpy, memset): the bytes they moved; -1 unknown
    "flops": np.dtype(np.int64),
    # copies and the runtime calls that make them: the direction the call's arguments or the
    # profiler's record give (index into knowledge.copy_kinds.COPY_DIRECTIONS; 0 not known)
    "copy": np.dtype(np.int8),
}

STEP_SCHEMA: dict[str, np.dtype] = {
    "rank": np.dtype(np.int32),
    "step_id": np.dtype(np.int64),  # engine step number as the source counts it
    "name": np.dtype(np.int32),  # string id of the source label (annotation name)
    "start": np.dtype(np.int64),
    "dur": np.dtype(np.int64),
    "phase": np.dtype(np.int8),
    "prefill_tokens": np.dtype(np.int64),
    "decode_tokens": np.dtype(np.int64),
    "prefill_reqs": np.dtype(np.int32),
    "decode_reqs": np.dtype(np.int32),
    "running": np.dtype(np.int32),  # -1 unknown
    "waiting": np.dtype(np.int32),  # -1 unknown
    "kv_usage": np.dtype(np.float32),  # 0..1, NaN unknown
    "busy": np.dtype(np.int64),  # derived: device-busy (or host-op) ns inside the step
    "evidence": np.dtype(np.int8),  # index into STEP_EVIDENCE: what found the step
    "phase_from": np.dtype(np.int8),  # index into PHASE_FROM: where its phase came from
}

COUNTER_SCHEMA: dict[str, np.dtype] = {
    "rank": np.dtype(np.int32),
    "name": np.dtype(np.int32),  # string id, e.g. "device_allocated_bytes"
    "t": np.dtype(np.int64),
    "value": np.dtype(np.float64),
}

REQUEST_SCHEMA: dict[str, np.dtype] = {
    "rank": np.dtype(np.int32),
    "req": np.dtype(np.int32),  # string id of the request id
    "arrival": np.dtype(np.int64),
    "first_token": np.dtype(np.int64),  # -1 never
    "finish": np.dtype(np.int64),  # -1 never
    "prompt_len": np.dtype(np.int64),
    "output_len": np.dtype(np.int64),
}

#: what a trace says about a collective (Kineto's ``record_param_comms`` arguments, also on
#: NCCL kernels): one row per event that carries them, referenced by the event's ``comm``
COMM_SCHEMA: dict[str, np.dtype] = {
    "rank": np.dtype(np.int32),
    "coll": np.dtype(np.int32),  # string id of the collective's name ("allreduce"), -1
    "pg": np.dtype(np.int32),  # string id of the process group's name, -1
    "pg_ranks": np.dtype(np.int32),  # string id of the group's global ranks as written ("[0, 1]"), -1
    "seq": np.dtype(np.int64),  # the group's collective sequence number, -1
    "in_nelems": np.dtype(np.int64),  # -1 unknown
    "out_nelems": np.dtype(np.int64),  # -1 unknown
    "group_size": np.dtype(np.int32),  # -1 unknown
    "dtype": np.dtype(np.int32),  # string id of the element type ("BFloat16"), -1
}

#: a trace's Python stack frames (Kineto's ``python_function`` events other than module
#: ranges): kept for the timeline only, never part of the analysis
FRAME_SCHEMA: dict[str, np.dtype] = {
    "rank": np.dtype(np.int32),
    "track": np.dtype(np.int64),  # the host thread they ran on
    "name": np.dtype(np.int32),  # string id ("gpu_worker.py(350): execute_model")
    "start": np.dtype(np.int64),
    "dur": np.dtype(np.int64),
}

SCHEMAS = {
    "events": EVENT_SCHEMA,
    "steps": STEP_SCHEMA,
    "counters": COUNTER_SCHEMA,
    "requests": REQUEST_SCHEMA,
    "comms": COMM_SCHEMA,
    "frames": FRAME_SCHEMA,
}
#: string-id columns of every table (re-mapped when profiles merge)
STRING_COLUMNS = ("name", "cat", "group", "launch", "req", "coll", "pg", "pg_ranks", "dtype")


@dataclass
class Profile:
    """Everything known about one profiled run (or one set of trace files)."""

    strings: StringTable = field(default_factory=StringTable)
    events: Table = field(default_factory=lambda: Table(EVENT_SCHEMA))
    steps: Table = field(default_factory=lambda: Table(STEP_SCHEMA))
    counters: Table = field(default_factory=lambda: Table(COUNTER_SCHEMA))
    requests: Table = field(default_factory=lambda: Table(REQUEST_SCHEMA))
    comms: Table = field(default_factory=lambda: Table(COMM_SCHEMA))
    frames: Table = field(default_factory=lambda: Table(FRAME_SCHEMA))
    base_ns: int = 0
    #: derived, per row of ``steps``: the engine step it is one rank's part of (filled by
    #: ``aggregate.ranks.align.align_steps``; not saved, the analysis recomputes it)
    step_engine: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    #: derived, per event row: for a replayed kernel matched to its captured launch, the
    #: decoder layer (or compiled piece) that launch was captured in, numbered within its
    #: graph, -1 (filled by the attribution when capture traces are given; not saved)
    capture_layer: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    #: run metadata: what the inputs said about the run (model, device, versions, engine
    #: config, detail level, metrics, sources, warnings...). JSON-ready values only; nothing the
    #: analysis derives goes here (that is ``derived``)
    run: RunInfo = field(default_factory=lambda: RunInfo())
    #: what the analysis derived beside the derived columns (how the steps were found, the
    #: engine, the structure counts, graph replays, the selection); not saved, recomputed
    derived: Derived = field(default_factory=Derived)

    # -- small conveniences -------------------------------------------------
    def name_of(self, i: int) -> str:
        return self.strings[i] if i >= 0 else ""

    def warn(self, message: str) -> None:
        """Record a non-fatal oddity; it is printed by the CLI and kept in summary.json."""
        self.run.setdefault("warnings", []).append(message)

    @property
    def has_timeline(self) -> bool:
        """Whether any record has a time: [XPURT_PROF] logs alone have none."""
        ev = self.events
        if not len(ev):
            return True
        return bool((ev["start"] >= 0).any() or len(self.steps) or len(self.counters))

    @property
    def ranks(self) -> list[int]:
        rs = set(np.unique(self.events["rank"]).tolist()) | set(np.unique(self.steps["rank"]).tolist())
        return sorted(rs)

    def relabel_ranks(self, mapping: dict[int, int]) -> None:
        """Give ranks new numbers in every table (and the sources' metadata)."""
        for tname in SCHEMAS:
            t = self.table(tname)
            if len(t):
                col = t["rank"].copy()
                for old, new in mapping.items():
                    col[t["rank"] == old] = new
                t["rank"] = col
        for src in self.run.get("sources", []):
            if src.get("rank") in mapping:
                src["rank"] = mapping[src["rank"]]
        for key in ("thread_names", "process_names"):
            d = self.run.get(key)
            if isinstance(d, dict):
                self.run[key] = {
                    str(mapping.get(int(k), int(k))) if is_decimal(k.lstrip("-")) else k: v for k, v in d.items()
                }

    def table(self, name: str) -> Table:
        t: Table = getattr(self, name)
        return t

    # -- merging ------------------------------------------------------------
    @staticmethod
    def merge(profiles: list[Profile]) -> Profile:
        """Join profiles of one run (ranks, or scheduler + worker records) onto one time base.

        Each profile's times are shifted so that they share the earliest base; string ids are
        re-mapped into one table. Profiles without a base (0) are taken as already aligned.
        """
        if len(profiles) == 1:
            return profiles[0]
        bases = [p.base_ns for p in profiles if p.base_ns]
        base = min(bases) if bases else 0
        out = Profile(base_ns=base)
        run = as_dict(out.run)  # merged key by key, every key alike
        parts: dict[str, list[Table]] = {k: [] for k in SCHEMAS}
        n_comms = 0  # rows of `comms` so far: events' `comm` references move by it
        for p in profiles:
            remap = out.strings.intern_many(p.strings.strings) if len(p.strings) else np.zeros(0, np.int32)
            shift = (p.base_ns - base) if (p.base_ns and base) else 0
            for tname in SCHEMAS:
                t = p.table(tname)
                if not len(t):
                    continue
                cols = dict(t.cols)
                if tname == "events" and n_comms:
                    cols["comm"] = np.where(cols["comm"] >= 0, cols["comm"] + n_comms, -1)
                for c in STRING_COLUMNS:
                    if c in cols:
                        v = cols[c]
                        ids: np.ndarray | int = remap[np.maximum(v, 0)] if len(remap) else -1
                        cols[c] = np.where(v >= 0, ids, -1)
                for c in ("start", "t", "arrival", "first_token", "finish"):
                    if c in cols and shift:
                        v = cols[c]
                        cols[c] = np.where(v >= 0, v + shift, v)
                parts[tname].append(Table(t.schema, cols))
            n_comms += len(p.comms)
            for k, value in as_dict(p.run).items():
                if k == "sources":
                    run.setdefault("sources", []).extend(value)
                elif k == "warnings":
                    run.setdefault("warnings", []).extend(value)
                elif isinstance(value, dict) and isinstance(run.get(k), dict):
                    run[k] = {**value, **run[k]}
                else:
                    run.setdefault(k, value)
        for tname, ts in parts.items():
            setattr(out, tname, Table.concat(SCHEMAS[tname], ts))
        return out

    # -- (de)serialisation: an .npz bundle for re-analysis -------------------
    def save(self, path: str | Path) -> Path:
        """Write the whole profile as one .npz file (columns + strings + run as JSON)."""
        path = Path(path)
        meta = {
            "format": "xpu_profiler.profile",
            "version": 1,
            "base_ns": int(self.base_ns),
            "run": self.run,
            "strings": self.strings.strings,
        }
        # "meta" first: readers sniff its member name in the zip's first header.
        arrays: dict[str, np.ndarray] = {
            "meta": np.frombuffer(json.dumps(meta, ensure_ascii=False).encode("utf-8"), dtype=np.uint8)
        }
        for tname in SCHEMAS:
            for c, v in self.table(tname).cols.items():
                arrays[f"{tname}.{c}"] = v
        from .atomic_write import replacing

        with replacing(path, "wb") as f:
            # mypy lets ``**arrays`` fill numpy 2's ``allow_pickle`` keyword: no name here is that
            # one, and numpy 1.26 (supported) has no such keyword to pass explicitly
            np.savez_compressed(f, **arrays)  # type: ignore[arg-type]
        return path

    @staticmethod
    def load(path: str | Path) -> Profile:
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(bytes(z["meta"]).decode("utf-8"))
            if meta.get("format") != "xpu_profiler.profile":
                raise ValueError("not an xpu_profiler profile bundle")
            p = Profile(strings=StringTable(meta["strings"]), base_ns=int(meta["base_ns"]), run=meta["run"])
            for tname, schema in SCHEMAS.items():
                cols = {c: z[f"{tname}.{c}"] for c in schema if f"{tname}.{c}" in z.files}
                n = len(next(iter(cols.values()))) if cols else 0
                setattr(p, tname, Table(schema, cols, n=n))
        return p
