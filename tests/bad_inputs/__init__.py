"""A generated corpus of bad reader inputs, derived at test time from real traces.

Every case starts from a real file (a ROCm MI250 Kineto trace, an SGLang MI300X decode
trace, a two-rank CUDA job, from ``tests/data/real-traces``) and breaks one thing:
one event's field set to each bad kind of value, a non-object among the events, odd
``[memory]`` args or metadata, odd top-level fields, step names beyond int64, the file
truncated, garbage, empty or its gzip corrupt; the same for [XPURT_PROF] logs and
XProfiler traces made from that trace's kernels, for a bundle written by the real code,
and for a directory of rank files with one bad file; paths that are no regular file,
text in another encoding, traces without events, events of one thread that overlap
without nesting.

Each case has its expected class: ``error`` (one line naming the file, exit 2),
``ok_warn`` (exit 0 and a warning holding ``expect``, the kind and the count) or ``ok``
(exit 0, no warning about it). ``CASES`` is the list; ``Case.build(dir)`` writes the
input and returns its path.
"""

from __future__ import annotations

from .common import SEEDS, Case
from .input_cases import input_cases
from .kineto_cases import (
    all_bad,
    field_cases,
    file_cases,
    id_cases,
    memory_cases,
    other_seed_cases,
    several_kinds,
    structure_cases,
)
from .other_cases import bundle_cases, rank_dir_cases, xprofiler_cases, xpurt_cases

__all__ = ["CASES", "Case", "all_cases"]


def all_cases() -> list[Case]:
    cases = (
        field_cases()
        + id_cases()
        + memory_cases()
        + structure_cases()
        + other_seed_cases()
        + [several_kinds()]
        + all_bad()
        + file_cases()
        + xpurt_cases()
        + xprofiler_cases()
        + bundle_cases()
        + rank_dir_cases()
        + input_cases()
    )
    assert len({c.name for c in cases}) == len(cases), "case names are unique"
    return cases


CASES: list[Case] = all_cases() if all(p.exists() for p in SEEDS) else []
