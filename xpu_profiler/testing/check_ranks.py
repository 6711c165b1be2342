#!/usr/bin/env python3
"""Read back what xpu_profiler/testing/gen_ranks.py wrote and check it, with the stdlib only.

    python -m xpu_profiler.testing.check_ranks DIR      (or: gen_ranks.py ... --check)

Exit 1 and one line per problem when something is off; see ``check``.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import sys
from typing import Any

#: (process group, Seq) → rank → the collective's end on the true clock
Ends = dict[tuple[str, int], dict[int, int]]


def _load(path: str) -> dict:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(f"{c} in JSON")))


def check(out_dir: str) -> list[str]:
    """JSON sanity of the files in ``out_dir`` against expected.json, read back with the stdlib.

    Per file: an object with ``traceEvents``; every event has a phase; X events a name, pid,
    tid and numeric ``ts``/``dur`` >= 0 with at most 3 decimals; slices on a host thread
    nest (no partial overlap); activities on a stream never overlap; every kernel has a
    runtime launch with its correlation that starts before it; every flow start has its
    end; NCCL kernels carry the collective metadata; counts equal expected.json. Across
    ranks: a collective (``Seq`` of a process group) ends at the same true time on every
    rank of the group whose trace has begun by then.
    """
    problems: list[str] = []
    with open(os.path.join(out_dir, "expected.json")) as f:
        exp = json.load(f)
    ends: Ends = {}
    for rx in exp["ranks"]:
        _check_file(out_dir, rx, exp, ends, problems)
    _check_collectives(exp, ends, problems)
    return problems


#: the collective metadata an NCCL kernel's args carry
NCCL_ARGS = (
    "Collective name",
    "In msg nelems",
    "Out msg nelems",
    "Group size",
    "dtype",
    "Process Group Name",
    "Process Group Ranks",
    "Rank",
    "Seq",
)


def _check_file(out_dir: str, rx: dict, exp: dict, ends: Ends, problems: list[str]) -> None:
    """One rank's file against its entry in expected.json; its collectives' ends go into ``ends``."""
    path = os.path.join(out_dir, rx["file"])
    where = rx["file"]
    try:
        doc = _load(path)
        with (gzip.open if path.endswith(".gz") else open)(path, "rb") as f:
            if re.search(rb'"(?:ts|dur)":\s*-?\d+\.\d{4,}', f.read()):
                problems.append(f"{where}: a ts/dur has more than 3 decimals")
    except (OSError, ValueError) as err:
        problems.append(f"{where}: not readable JSON ({err})")
        return
    evs = doc.get("traceEvents") if isinstance(doc, dict) else None
    if not isinstance(evs, list) or not evs:
        problems.append(f"{where}: no traceEvents list")
        return
    dist = doc.get("distributedInfo") or {}
    if (dist.get("rank"), dist.get("world_size")) != (rx["rank"], exp["world_size"]):
        problems.append(f"{where}: distributedInfo {dist} does not say rank {rx['rank']} of {exp['world_size']}")
    base = doc.get("baseTimeNanoseconds")
    if base != rx["base_time_ns"]:
        problems.append(f"{where}: baseTimeNanoseconds {base} != {rx['base_time_ns']}")
    if len(evs) != rx["events"]:
        problems.append(f"{where}: {len(evs)} events, expected {rx['events']}")
    slices, launches, kernels, flows, kdur, nccl = _scan(where, evs, rx, base, ends, problems)
    for corr, t0, i in kernels:
        if corr not in launches or launches[corr] > t0:
            problems.append(f"{where}: device event #{i} has no launch (correlation {corr}) before it")
    if flows["s"] != flows["f"]:
        problems.append(f"{where}: {len(flows['s'] ^ flows['f'])} flow ids without their other end")
    _check_slices(where, rx, slices, problems)
    if kdur != rx["kernel_dur_ns"] or nccl != rx["nccl_kernels"]:
        problems.append(
            f"{where}: kernel ns {kdur} / NCCL kernels {nccl}, expected {rx['kernel_dur_ns']} / {rx['nccl_kernels']}"
        )


def _scan(
    where: str, evs: list, rx: dict, base: Any, ends: Ends, problems: list[str]
) -> tuple[dict[tuple, list], dict[Any, int], list, dict[str, set], int, int]:
    """One pass over a file's events: their slices by (pid, tid), the launches by correlation, the device
    events, the flow ids by phase, the kernel time and the number of NCCL kernels."""
    slices: dict[tuple, list] = {}
    launches: dict[Any, int] = {}  # correlation id, as the file has it → launch start
    kernels: list[tuple[Any, int, int]] = []
    flows: dict[str, set] = {"s": set(), "f": set()}
    kdur = nccl = 0
    for i, e in enumerate(evs):
        ph = e.get("ph") if isinstance(e, dict) else None
        if ph is None:
            problems.append(f"{where}: event #{i} has no ph")
            continue
        if ph in ("s", "f"):
            if not all(k in e for k in ("id", "cat", "name", "ts")):
                problems.append(f"{where}: flow #{i} lacks id/cat/name/ts")
            flows[ph].add(e.get("id"))
            continue
        if ph != "X":
            continue
        ts, dur = e.get("ts"), e.get("dur")
        if not isinstance(e.get("name"), str) or "pid" not in e or "tid" not in e:
            problems.append(f"{where}: X event #{i} lacks name/pid/tid")
        if not isinstance(ts, (int, float)) or not isinstance(dur, (int, float)) or ts < 0 or dur < 0:
            problems.append(f"{where}: X event #{i} has ts {ts!r} dur {dur!r}")
            continue
        if e.get("cat") == "Trace":
            continue
        t0, t1 = round(ts * 1000), round((ts + dur) * 1000)
        slices.setdefault((e["pid"], e["tid"]), []).append((t0, t1, e.get("cat"), i))
        args = e.get("args") or {}
        if e.get("cat") == "cuda_runtime" and e.get("name", "").startswith(("cudaLaunch", "cudaMemcpy")):
            launches[args.get("correlation")] = t0
        elif e.get("cat") in ("kernel", "gpu_memcpy"):
            kernels.append((args.get("correlation"), t0, i))
            if e.get("cat") == "kernel":
                kdur += t1 - t0
            if e["name"].startswith("ncclDevKernel_"):
                nccl += 1
                _nccl_kernel(where, i, args, t1, rx, base, ends, problems)
    return slices, launches, kernels, flows, kdur, nccl


def _nccl_kernel(where: str, i: int, args: dict, t1: int, rx: dict, base: Any, ends: Ends, problems: list[str]) -> None:
    """An NCCL kernel carries the collective metadata; its end on the true clock goes into ``ends``."""
    missing = [k for k in NCCL_ARGS if k not in args]
    if missing:
        problems.append(f"{where}: NCCL kernel #{i} lacks {missing}")
    elif isinstance(base, (int, float)):  # (a file without its base is reported above)
        ends.setdefault((str(args["Process Group Name"]), args["Seq"]), {})[rx["rank"]] = (
            base + t1 - rx["clock_offset_ns"]
        )


def _check_slices(where: str, rx: dict, slices: dict[tuple, list], problems: list[str]) -> None:
    """Slices on a thread nest; activities on one of the rank's streams never overlap."""
    for (pid, tid), xs in slices.items():
        xs.sort(key=lambda x: (x[0], -x[1]))
        stack: list[int] = []
        for t0, t1, _cat, i in xs:
            while stack and stack[-1] <= t0:
                stack.pop()
            if stack and t1 > stack[-1]:
                problems.append(f"{where}: event #{i} on pid {pid} tid {tid} partially overlaps its parent")
                break
            stack.append(t1)
        acts = [x for x in xs if x[2] != "gpu_user_annotation"]
        if pid == rx["rank"] and any(b[0] < a[1] for a, b in zip(acts, acts[1:])):
            problems.append(f"{where}: activities overlap on stream {tid}")


def _check_collectives(exp: dict, ends: Ends, problems: list[str]) -> None:
    """Across ranks: a collective ends at one true time on every rank of its group that traced it."""
    tp = exp.get("tensor_parallel_size", exp["world_size"])
    members: dict[str, list[dict]] = {}
    for rx in exp["ranks"]:
        members.setdefault(str(rx.get("group", 0)) if tp < exp["world_size"] else "0", []).append(rx)
    bad = [
        key
        for key, by_rank in ends.items()
        if len(set(by_rank.values())) != 1
        or len(by_rank) != sum(1 for rx in members.get(key[0], []) if rx.get("first_seq", 1) <= key[1])
    ]
    if bad:
        problems.append(f"collectives {bad[:5]} ({len(bad)} in all) do not end at one true time on every rank")
    if len(ends) != exp["collectives"] * len(members):
        problems.append(f"{len(ends)} collectives in the files, expected {exp['collectives'] * len(members)}")


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: check_ranks.py DIR", file=sys.stderr)
        return 2
    problems = check(argv[0])
    for p in problems[:50]:
        print(f"check: {p}", file=sys.stderr)
    print(f"check: {'ok' if not problems else f'{len(problems)} problem(s)'}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
