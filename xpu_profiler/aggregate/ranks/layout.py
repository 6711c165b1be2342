"""vLLM's parallel layout: which data/pipeline/tensor/context/expert-parallel rank each
rank is, read from the names vLLM gives things.

- trace files: vLLM's profiler names each worker's trace after
  ``get_worker_rank_suffix``: ``[prefix_]dp{d}_pp{p}_tp{t}_dcp{c}_ep{e}_rank{r}.….pt.trace.json.gz``;
- process titles: ``VLLM::Worker_DP0_PP1_TP0_EP3`` (only the dimensions larger than 1),
  and the ``VllmWorker TP0`` thread names of older releases;
- a live run's own record, ``run["parallel_ranks"]`` = {rank: {"dp": d, "tp": t, ...}}.

Only the digits after a dimension's name are taken from a name; a file name must name
two dimensions, a process or thread name must also say "worker".
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePath

from ...core.fmt import is_decimal
from ...core.run_info import RunInfo

DIMS = ("dp", "pp", "pcp", "tp", "dcp", "ep")
_DIM = re.compile(r"(?<![a-z])(dp|pp|pcp|tp|dcp|ep)[_-]?(\d{1,6})(?![a-z0-9])", re.IGNORECASE)
_WORKER = re.compile(r"worker", re.IGNORECASE)


@dataclass
class Layout:
    """rank → {dim: index} for the ranks whose place is known, and where it was read."""

    coords: dict[int, dict[str, int]] = field(default_factory=dict)
    source: str = ""

    def of(self, rank: int) -> dict[str, int]:
        return self.coords.get(rank, {})

    def engine(self, rank: int) -> int:
        """The engine (data-parallel replica) a rank belongs to: its dp index, else 0."""
        return self.coords.get(rank, {}).get("dp", 0)

    def sizes(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for c in self.coords.values():
            for d, i in c.items():
                out[d] = max(out.get(d, 1), i + 1)
        return {d: out[d] for d in DIMS if d in out}


def parse_name(name: str, need: int = 2) -> dict[str, int]:
    """{dim: index} that ``name`` states, when it states at least ``need`` dimensions."""
    found: dict[str, int] = {}
    for m in _DIM.finditer(name):
        found.setdefault(m.group(1).lower(), int(m.group(2)))
    return found if len(found) >= need else {}


def layout(run: RunInfo, ranks: list[int]) -> Layout:
    """The parallel coordinates of ``ranks`` from a profile's run metadata."""
    out = Layout()
    given = run.get("parallel_ranks")
    if isinstance(given, dict):
        for k, v in given.items():
            if is_decimal(str(k).lstrip("-")) and isinstance(v, dict):
                c = {d: int(i) for d, i in v.items() if d in DIMS and isinstance(i, int) and i >= 0}
                if c:
                    out.coords[int(k)] = c
        if out.coords:
            out.source = "run"
            return out
    for src in run.get("sources", []):
        rank, path = src.get("rank"), src.get("path")
        if isinstance(rank, int) and isinstance(path, str) and rank not in out.coords:
            c = parse_name(PurePath(path).name) or parse_name(PurePath(path).parent.name)
            if c:
                out.coords[rank] = c
    if out.coords:
        out.source = "file names"
        return out
    for key in ("process_names", "thread_names"):
        names = run.get(key)
        if not isinstance(names, dict):
            continue
        for rank_key, by_id in names.items():
            if not is_decimal(str(rank_key)) or not isinstance(by_id, dict) or int(rank_key) in out.coords:
                continue
            for n in by_id.values():
                if isinstance(n, str) and _WORKER.search(n):
                    c = parse_name(n, need=1)
                    if c:
                        out.coords[int(rank_key)] = c
                        break
        if out.coords:
            out.source = key.replace("_", " ")
            return out
    return out


def groups(lay: Layout, ranks: list[int]) -> list[tuple[str, str, list[int]]]:
    """(dim, key, ranks) of every group with more than one rank, in vLLM's sense.

    TP: same dp and pp; PP: same dp and tp; DP: same pp and tp; EP: same pp (the expert
    group spans data and tensor parallelism); DCP: consecutive TP ranks, dcp-size at a time.
    """
    if not lay.coords:
        return []
    sizes = lay.sizes()
    full = {r: {d: lay.of(r).get(d, 0) for d in DIMS} for r in ranks}
    dcp = sizes.get("dcp", 1)
    keys = {
        "tp": ("dp", "pp"),
        "pp": ("dp", "tp"),
        "dp": ("pp", "tp"),
        "ep": ("pp",),
        "dcp": ("dp", "pp", "tp//dcp"),
    }
    out = []
    for dim, shared in keys.items():
        if sizes.get(dim, 1) < 2:
            continue
        by: dict[tuple, list[int]] = {}
        for r in ranks:
            c = full[r]
            key = tuple(c["tp"] // dcp if s == "tp//dcp" else c[s] for s in shared)
            by.setdefault(key, []).append(r)
        for key, rs in sorted(by.items()):
            if len(rs) > 1:
                label = "_".join(f"{s.split('//')[0]}{v}" for s, v in zip(shared, key))
                out.append((dim, label, sorted(rs)))
    return out
