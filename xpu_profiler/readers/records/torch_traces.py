"""Kernels and ops from the torch.profiler traces the workers wrote (see ``vllm/torch_window``).

Each worker runs torch.profiler over a window of steps, with a ``xpu_step#N`` range
around every step and ``xpu_module:<Class>`` ranges around vLLM's layer modules
(module forward hooks), so that the ops of native, decomposed implementations are
attributed to their fused op. The trace is read with the Kineto reader; its clock is
mapped onto the step hooks' clock once, from the ``xpu_step#N`` ranges and the
wall-clock times the worker noted when it opened them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ...core.errors import TraceError
from ...core.profile import K_ANNOTATION, SCHEMAS, Profile
from ...core.records import STEP_RANGE
from ...core.regular import require_regular
from ..base import ReadOptions


def align(prof: Profile, marks: list) -> int | None:
    """Shift ``prof.base_ns`` so that its ``xpu_step#N`` ranges start at the wall-clock times
    in ``marks`` [(step, t_ns)]; returns the applied shift (ns), None when nothing matched."""
    if not marks or not len(prof.events):
        return None
    want = {int(s): int(t) for s, t in marks}
    ev = prof.events
    ann = np.flatnonzero(ev["kind"] == K_ANNOTATION)
    diffs = []
    for i in ann.tolist():
        m = STEP_RANGE.match(prof.strings[int(ev["name"][i])])
        if m and int(m.group(1)) in want:
            diffs.append(want[int(m.group(1))] - (prof.base_ns + int(ev["start"][i])))
    if not diffs:
        return None
    shift = int(np.median(diffs))
    prof.base_ns += shift
    prof.run["clock_shift_ns"] = shift
    return shift


def relabel(prof: Profile, rank: int) -> None:
    """Every row of ``prof`` belongs to ``rank`` (every table: collectives' metadata and Python
    frames too)."""
    for table in (prof.table(name) for name in SCHEMAS):
        if len(table):
            table["rank"][:] = rank


def load_traces(files: list[tuple], default_rank: int = 0, problems: list[str] | None = None) -> Profile | None:
    """[(trace path, marks, global rank or None)] → one Profile (ranks side by side), clocks
    aligned; marks None: a trace without our step ranges (vLLM's own profiler), on the wall
    clock Kineto wrote. The global rank the worker gave wins over the trace's own (its rank
    inside its engine's process group, repeated by every data-parallel engine). A trace
    that cannot be read (cut short by a process killed while writing it) is left out,
    said in ``problems`` when given (else its error is raised), as is one that is missing or
    no regular file."""
    from .. import kineto

    profiles = []
    for path, marks, *given in files:
        p = Path(path)
        try:
            if not p.exists():
                raise TraceError(p, "named by the run's records, not found")
            require_regular(p, "a torch.profiler trace is a file")  # (a FIFO would hang the read)
            prof = kineto.read(p, ReadOptions(rank=default_rank))  # the file's own rank, if it says one
        except TraceError as e:
            if problems is None:
                raise
            problems.append(f"{e}; its events are missing")
            continue
        rank = given[0] if given else None
        if rank is not None:
            relabel(prof, int(rank))
        if marks is not None and align(prof, marks) is None:
            prof.warn(f"{p.name}: no step ranges to align its clock; assumed to be wall-clock")
        profiles.append(prof)
    if not profiles:
        return None
    return Profile.merge(profiles)
