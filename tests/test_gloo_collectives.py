"""Collectives over gloo, from real traces (tests/data/vllm_cpu_tp2_gloo): the op on the
calling thread only enqueues the work that one of gloo's threads runs, so a collective
lasts until its gloo work ends, and the work's own ops are not compute that hides it.
Checked against the same quantities worked out from the raw JSON."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import TESTS
from cpu_comm import check_against_raw, check_no_overlap, raw

from xpu_profiler import analysis
from xpu_profiler.aggregate.attribution import basis_mask
from xpu_profiler.aggregate.ranks.backend_work import inside_work
from xpu_profiler.aggregate.ranks.collectives import match
from xpu_profiler.aggregate.ranks.overlap import compute_events

GLOO = TESTS / "data" / "vllm_cpu_tp2_gloo"
FILES = sorted(GLOO.glob("rank*.pt.trace.json.gz"))


@pytest.fixture(scope="module")
def gloo():
    return analysis.analyze([GLOO])


def test_the_traces_are_gloo_ones():
    ranks = [raw(p) for p in FILES]
    assert [r["rank"] for r in ranks] == [0, 1] and all(r["gloo"] for r in ranks)
    # the enqueueing op is a small part of the collective: the wait for the work is most of it
    for r in ranks:
        own = sum(c["dur"] for c in r["comm"])
        assert sum(c["end"] - c["ts"] for c in r["comm"]) > 2 * own


def test_collectives_last_until_their_gloo_work_ends(gloo):
    _, s = gloo
    check_against_raw(s, FILES)
    assert {c.name for c in s.comm.collectives} == {"c10d::allreduce_", "c10d::_allgather_base_"}


def test_gloo_threads_ops_are_the_collectives_not_compute(gloo):
    profile, s = gloo
    check_no_overlap(s)
    ev, names = profile.events, profile.strings
    c = match(profile, same_host=True)
    assert len(c.work) == len(c.idx)  # one gloo work annotation per collective op
    assert {names[i] for i in ev["name"][c.work]} == {"gloo:all_reduce", "gloo:all_gather"}
    work_threads = set(zip(ev["rank"][c.work].tolist(), ev["track"][c.work].tolist()))
    basis = basis_mask(profile)
    on_work_threads = np.flatnonzero(
        basis & np.array([(r, t) in work_threads for r, t in zip(ev["rank"].tolist(), ev["track"].tolist())])
    )
    assert len(on_work_threads) and inside_work(profile, on_work_threads, c.work).all()
    compute = compute_events(profile, basis, c.idx, host=True, work=c.work)
    assert not np.isin(on_work_threads, compute).any()
    # without the work annotations, those ops would be counted as compute under the collectives
    assert np.isin(on_work_threads, compute_events(profile, basis, c.idx, host=True)).all()


def test_exposed_communication_names_gloo_and_its_remedy(gloo):
    _, s = gloo
    f = next(x for x in s.findings if x.rule == "exposed_comm")
    ranks = [r for r in s.comm.ranks if r.phase == "all"]
    # nothing hides a gloo collective: its whole time is exposed
    assert f.evidence["exposed_ns"] == sum(r.comm_ns for r in ranks)
    assert f.evidence["share"] == pytest.approx(f.evidence["exposed_ns"] / sum(r.step_ns for r in ranks))
    assert f.evidence["share"] > 0.2
    assert f.evidence["backend"] == "gloo" and "shm_allreduce" in f.fix and "AVX-512" in f.fix
