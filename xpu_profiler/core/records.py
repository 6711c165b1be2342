"""What the hooks record: the field schemas shared by the recorder (the writer, in the
engine processes) and the live assembler (the reader, in the caller).

Every process hands over its records as one *batch* (a JSON-ready dict), over RPC or
as one line of ``<dir>/<process>-<pid>.records.jsonl``:

- ``pid``, ``process``: who recorded it; ``role``: "engine", "worker" or "";
  ``ppid``, ``started_ns``: its parent and when it started recording; ``run``: the
  server lifetime it belongs to (``ENV_RUN``, the same in every process of one server);
- ``meta``: once per process, what it knows of the engine (model, parallel sizes);
- ``sched``: scheduler step rows (``SCHED_FIELDS``), ``worker``: worker step rows
  (``WORKER_FIELDS``), ``requests``: request rows (``REQUEST_FIELDS``),
  ``counters``: samples (``COUNTER_FIELDS``); times are wall-clock ns;
- ``hook_ns``: time spent inside the hooks since the last batch (their overhead);
- ``torch_files`` / ``torch_marks``: torch.profiler traces written since the last batch
  and the (step, wall-clock ns) at which their ``xpu_step#N`` ranges opened;
  ``torch_rank``: the global rank their events belong to (a trace's own rank is the
  rank inside its engine's process group: data-parallel engines repeat it);
  ``torch_windows``: {trace path: window id} for the windows ``xpu_profiler record``
  asked for (see ``windows``);
- ``hooks``: {symbol: installed?} as this process found them (import-time patching);
- ``place``: where this process sits in the parallel layout, once it knows:
  {"dp", "world", "rank"} for an EngineCore (``rank``: the global rank of its first
  worker, which its counters and requests are filed under), {"dp", "tp", "pp", "rank"}
  for a worker (``rank``: its global rank across data-parallel engines);
- ``fatal``: the error that stopped this process from starting (written at once);
- ``errors``: {hook: [count, first message]} of failures inside the hooks since the
  last batch (a hook never raises into vLLM; its failures reach the profile's warnings);
- ``dropped``: {kind: rows} the process dropped, oldest first, while its record files
  could not be written (it holds at most ``MAX_HELD_ROWS`` of each kind meanwhile);
- ``warnings``: problems found while reading the batches back (a line cut by a crash).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .record_check import Shapes, Types, checked

#: one per engine step (scheduler output), made in the EngineCore
SCHED_FIELDS = (
    "step",
    "t_sched",
    "t_sched_end",
    "t_end",
    "prefill_tokens",
    "decode_tokens",
    "prefill_reqs",
    "decode_reqs",
    "running",
    "waiting",
    "kv_usage",
    "dp_rank",
    "first_tokens",
)
#: one per execute_model call, made in each worker. ``rank`` is the worker's rank inside its
#: engine (what vLLM calls its rank), ``dp_rank`` its engine's data-parallel index (the
#: scheduler rows of that engine carry the same), ``global_rank`` = dp_rank x world size + rank
WORKER_FIELDS = ("step", "rank", "t_exec", "t_exec_end", "t_sample", "t_sample_end", "tokens", "dp_rank", "global_rank")
#: one per request (arrival / first token / finish ns, -1 when not seen)
REQUEST_FIELDS = ("req", "arrival", "first_token", "finish", "prompt_len", "output_len")
#: one per counter sample
COUNTER_FIELDS = ("rank", "name", "t", "value")

#: each row kind: its fields, the fewest a row has (fields added later, at the end, are optional:
#: rows written before them are read) and those that hold a string (the others are numbers)
ROW_SHAPES: Shapes = {
    "sched": (SCHED_FIELDS, SCHED_FIELDS.index("dp_rank") + 1, ()),
    "worker": (WORKER_FIELDS, WORKER_FIELDS.index("tokens") + 1, ()),
    "counters": (COUNTER_FIELDS, len(COUNTER_FIELDS), ("name",)),
    "requests": (REQUEST_FIELDS, len(REQUEST_FIELDS), ("req",)),
}
#: the batch's other fields and the JSON types each may have (absent or null always)
FIELD_TYPES: Types = {
    "pid": (int,),
    "ppid": (int,),
    "process": (str,),
    "run": (str,),
    "started_ns": (int,),
    "hook_ns": (int, float),
    "role": (str,),
    "meta": (dict,),
    "hooks": (dict,),
    "place": (dict,),
    "fatal": (str,),
    "errors": (dict,),
    "dropped": (dict,),
    "warnings": (list,),
    "torch_files": (list,),
    "torch_marks": (list,),
    "torch_rank": (int,),
    "torch_windows": (dict,),
}

S_IDX = {f: i for i, f in enumerate(SCHED_FIELDS)}
W_IDX = {f: i for i, f in enumerate(WORKER_FIELDS)}
R_IDX = {f: i for i, f in enumerate(REQUEST_FIELDS)}
C_IDX = {f: i for i, f in enumerate(COUNTER_FIELDS)}

#: attribute the scheduler hook sets on a SchedulerOutput: the step id the workers record
STEP_TAG = "xpu_step"
#: ... and, for the steps of a requested profile window, (window id, index, count, deadline ns, level)
WINDOW_TAG = "xpu_window"
#: the torch.profiler range around each profiled step in a worker
STEP_RANGE_PREFIX = "xpu_step#"
STEP_RANGE = re.compile(r"^xpu_step#(\d+)$")
#: the torch.profiler range around each vLLM layer module (the taxonomy reads these)
MODULE_RANGE_PREFIX = "xpu_module:"

#: what a run can be asked to measure (``--metrics``)
METRICS = ("execution_time", "memory_usage", "throughput")
#: counter names of the memory metric (dropped when memory_usage is not asked for)
MEMORY_COUNTER_PREFIXES = ("host_rss", "device_", "kv_cache")

RECORD_SUFFIX = ".records.jsonl"
#: each worker's captured output (device logs) under the run directory: xpu_logs/rank_N.log
LOG_DIR = "xpu_logs"
#: the ``errors`` key under which a failed record-file write is counted
FLUSH_FAILED = "record file"
#: while its record files cannot be written (a full disk), a process holds at most this many
#: rows of each kind (scheduler steps, worker steps, counter samples, requests): the newest
MAX_HELD_ROWS = 100_000
#: the kinds of rows that cap applies to
HELD_KINDS = ("sched", "worker", "counters", "requests")

# How the caller tells vLLM's processes (which inherit its environment) what to record.
#: record directory: set, the hooks install at import and every process appends its batches there
ENV_DIR = "XPU_PROFILER_DIR"
#: file mode: "standard" / "comprehensive" also run torch.profiler in the workers ...
ENV_LEVEL = "XPU_PROFILER_LEVEL"
#: ... over the steps "first:count" (default 4:16)
ENV_STEPS = "XPU_PROFILER_STEPS"
#: run directory: each worker's own stdout/stderr go to <dir>/xpu_logs/rank_N.log
ENV_DEVICE_LOGS = "XPU_PROFILER_DEVICE_LOGS"
#: the server lifetime: set by the first process of a server that records (pid-start ns),
#: inherited by every process it starts
ENV_RUN = "XPU_PROFILER_RUN"


#: one batch, as described above: JSON-ready, its values as JSON gives them back
Batch = dict[str, Any]


def step_range_name(step: int) -> str:
    return f"{STEP_RANGE_PREFIX}{step}"


def has_records(batch: Batch) -> bool:
    return bool(
        batch["sched"]
        or batch["worker"]
        or batch["counters"]
        or batch["requests"]
        or batch.get("torch_files")
        or batch.get("errors")
        or batch.get("hooks")
        or batch.get("fatal")
        or batch.get("dropped")
    )


def worker_keys(row: Sequence[Any]) -> tuple[int, int, int]:
    """(dp rank, step, global rank) of a worker row; rows written before the DP fields
    existed are data-parallel rank 0 with global rank = rank."""
    n = len(row)
    dp = int(row[W_IDX["dp_rank"]]) if n > W_IDX["dp_rank"] else 0
    g = int(row[W_IDX["global_rank"]]) if n > W_IDX["global_rank"] else int(row[W_IDX["rank"]])
    return dp, int(row[W_IDX["step"]]), g


#: batch fields that are lists (appended when batches merge) and counts (added)
_LISTS = ("sched", "worker", "counters", "requests", "torch_files", "torch_marks")


def cap_rows(batch: Batch, limit: int = MAX_HELD_ROWS) -> Batch:
    """Keep the newest ``limit`` rows of each kind of ``batch``; the older ones go, counted
    in its ``dropped``. Returns the batch."""
    dropped = dict(batch.get("dropped") or {})
    for k in HELD_KINDS:
        rows = batch.get(k) or []
        if len(rows) > limit:
            dropped[k] = dropped.get(k, 0) + len(rows) - limit
            batch[k] = rows[len(rows) - limit :]
    if dropped:
        batch["dropped"] = dropped
    return batch


def merge_into(into: Batch, older: Batch) -> Batch:
    """Put an ``older`` batch of the same process in front of ``into`` (a batch whose file
    write failed is handed over with the next one)."""
    for k in _LISTS:
        if older.get(k):
            into[k] = list(older[k]) + list(into.get(k) or [])
    into["hook_ns"] = int(into.get("hook_ns", 0)) + int(older.get("hook_ns", 0))
    errors = dict(older.get("errors") or {})
    for where, (n, first) in (into.get("errors") or {}).items():
        errors[where] = [errors[where][0] + n, errors[where][1]] if where in errors else [n, first]
    if errors:
        into["errors"] = errors
    hooks = {**(older.get("hooks") or {}), **(into.get("hooks") or {})}
    if hooks:
        into["hooks"] = hooks
    dropped = dict(older.get("dropped") or {})
    for k, n in (into.get("dropped") or {}).items():
        dropped[k] = dropped.get(k, 0) + int(n)
    if dropped:
        into["dropped"] = dropped
    if not into.get("role"):
        into["role"] = older.get("role", "")
    windows = {**(older.get("torch_windows") or {}), **(into.get("torch_windows") or {})}
    if windows:
        into["torch_windows"] = windows
    for k in ("place", "torch_rank", "fatal", "meta"):
        if k not in into and k in older:
            into[k] = older[k]
    return into


def append_batch(directory: str, batch: Batch) -> None:
    """One batch as one line of this process's record file."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"{batch['process']}-{batch['pid']}{RECORD_SUFFIX}")
    line = memoryview((json.dumps(batch, allow_nan=True) + "\n").encode())
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        size = os.fstat(fd).st_size
        try:
            while line:
                line = line[os.write(fd, line) :]
        except OSError:  # a full disk: no half line is left behind (the caller keeps the batch)
            try:
                os.ftruncate(fd, size)
            except OSError:
                pass
            raise
    finally:
        os.close(fd)


def record_files(directory: str | Path) -> list[Path]:
    """The directory's record files (named so: whether each is a regular file, the reader checks)."""
    d = Path(directory)
    return sorted(d.glob("*" + RECORD_SUFFIX)) if d.is_dir() else []


def _not_regular(f: Path) -> str | None:
    """What a record file is when it is no regular file (a FIFO would wait for a writer
    forever, a link to /dev/zero never end), None for a regular file."""
    from .regular import not_regular

    try:
        return not_regular(f)
    except OSError as e:
        return f"cannot be read ({e.strerror})"


def record_sizes(directory: str | Path) -> dict[str, int]:
    """{file name: size} of the record files now: ``read_record_files(since=...)`` then
    reads only what was appended after."""
    out = {}
    for f in record_files(directory):
        if _not_regular(f) is None:
            out[f.name] = f.stat().st_size
    return out


def _read_text(f: Path, offset: int) -> str:
    with open(f, "rb") as fh:
        if offset > 0:
            fh.seek(offset - 1)
            if fh.read(1) != b"\n":  # the size was taken in the middle of a line: skip its rest
                fh.readline()
        return fh.read().decode("utf-8", errors="replace")


def read_record_files(directory: str | Path, since: dict[str, int] | None = None, growing: bool = False) -> list[Batch]:
    """Every batch flushed to ``<dir>/*.records.jsonl`` (env mode, serve, interrupted runs);
    with ``since`` ({file name: offset}, see ``record_sizes``) only the lines appended
    after those offsets. A line cut by a crash, or a file that cannot be read, is skipped
    and said in a ``warnings`` batch, as is a line that is no record or a row of odd shape
    (``record_check``); with ``growing`` (a running server's files) a last line without its
    newline is one still being written, left out silently."""
    out: list[Batch] = []
    problems = []
    for f in record_files(directory):
        try:
            if (why := _not_regular(f)) is not None:
                problems.append(f"{f.name}: {why}, skipped")
                continue
            text = _read_text(f, (since or {}).get(f.name, 0))
        except OSError as e:
            problems.append(f"{f.name}: cannot be read ({e.strerror})")
            continue
        if growing and not text.endswith("\n"):
            text = text[: text.rfind("\n") + 1]
        cut, odd = 0, []  # lines cut short; why each odd line is no record
        odd_rows: dict[str, int] = {}
        for line in text.splitlines():
            if line.strip():
                try:
                    batch, why = checked(json.loads(line), ROW_SHAPES, FIELD_TYPES, odd_rows)
                except ValueError:
                    cut += 1
                    continue
                except RecursionError:  # (nested deeper than any batch)
                    batch, why = None, "nested too deeply"
                if batch is None:
                    odd.append(why)
                else:
                    out.append(batch)
        if cut:
            problems.append(f"{f.name}: {cut} record line(s) cut short (a process killed while writing), skipped")
        if odd:
            problems.append(f"{f.name}: skipped {len(odd)} line(s) that are no record (first: {odd[0]})")
        if odd_rows:
            rows = ", ".join(f"{n:,} {kind}" for kind, n in odd_rows.items())
            problems.append(f"{f.name}: skipped row(s) of odd shape or value: {rows}")
    if problems:
        out.append(
            {"pid": 0, "process": "", "sched": [], "worker": [], "counters": [], "requests": [], "warnings": problems}
        )
    return out


class StepTally:
    """Engine steps recorded in a directory so far, read as the files grow (a progress
    display); ``reset()`` starts the count at the steps already there."""

    def __init__(self, directory: str | Path):
        self.directory = directory
        self.offsets: dict[str, int] = {}
        self.steps = 0

    def __call__(self) -> int:
        for f in record_files(self.directory):
            if _not_regular(f) is not None:
                continue
            try:
                with open(f, "rb") as fh:
                    fh.seek(self.offsets.get(f.name, 0))
                    data = fh.read()
            except OSError:
                continue
            whole = data[: data.rfind(b"\n") + 1]
            self.offsets[f.name] = self.offsets.get(f.name, 0) + len(whole)
            for line in whole.splitlines():
                try:
                    self.steps += len(json.loads(line).get("sched") or ())
                except (ValueError, AttributeError, TypeError):
                    continue
        return self.steps

    def reset(self) -> None:
        self()
        self.steps = 0
