"""Nsight Systems: the real export (its totals are the tables' own sums), synthetic exports of a
vLLM and a TensorRT-LLM run in each schema version (steps, phases, layers from NVTX), graphs,
the ``.nsys-rep`` path with and without ``nsys`` on PATH, and files that are no export."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import sqlite3
import stat
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest
import real_data
from cli_run import invoke, one_line_error, run

from xpu_profiler import analysis
from xpu_profiler.core.profile import PHASES, STEP_EVIDENCE
from xpu_profiler.summary import load_summary
from xpu_profiler.testing import gen_nsys, gen_vendor_kineto
from xpu_profiler.testing.vendor_workload import Workload

SAMPLE = "other-formats/nsys-nvfuser-cross-entropy-h200.sqlite"
REPORT = "other-formats/nsys-nvfuser-cross-entropy-h200.nsys-rep"


def _sql(db: Path, q: str):
    with sqlite3.connect(f"file:{db}?mode=ro&immutable=1", uri=True) as c:
        return c.execute(q).fetchall()


def test_the_real_export_read_whole(tmp_path):
    """Totals equal the export's own sums; the GPU, the rank and the NVTX ranges as it says."""
    db = real_data.need(SAMPLE)
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    dev = (
        "(SELECT start, end FROM CUPTI_ACTIVITY_KIND_KERNEL UNION ALL SELECT start, end FROM "
        "CUPTI_ACTIVITY_KIND_MEMCPY UNION ALL SELECT start, end FROM CUPTI_ACTIVITY_KIND_MEMSET)"
    )
    ((op_ns, n_dev),) = _sql(db, f"SELECT sum(end - start), count(*) FROM {dev}")
    ((kernel_ns,),) = _sql(db, "SELECT sum(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL")
    # the processes that ran device work: their runtime calls and NVTX ranges are theirs
    pids = {g >> 24 & 0xFFFFFF for (g,) in _sql(db, "SELECT DISTINCT globalPid FROM CUPTI_ACTIVITY_KIND_KERNEL")}
    rt = [g >> 24 & 0xFFFFFF for (g,) in _sql(db, "SELECT globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME")]
    nvtx = _sql(db, "SELECT text, globalTid FROM NVTX_EVENTS WHERE eventType IN (59, 60) AND end IS NOT NULL")
    ((n_sync,),) = _sql(db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION")
    ((gpu,),) = _sql(db, "SELECT name FROM TARGET_INFO_GPU")
    events = n_dev + n_sync + sum(p in pids for p in rt) + sum((g >> 24 & 0xFFFFFF) in pids for _, g in nvtx)

    res = invoke("analyze", db, "-o", tmp_path / "o")
    assert res.exit_code == 0, res.output
    s = load_summary(tmp_path / "o" / "summary.json")
    assert s.totals.op_time_ns == op_ns and s.totals.device_kernel_ns == kernel_ns
    assert s.totals.events == events
    assert [r.rank for r in s.ranks] == [0] and s.totals.ranks == 1
    src = s.run.sources[0]
    assert src.format == "nsys" and src.rank == 0 and src.details["devices"] == [gpu]
    assert src.details["schema_version"] == "3.17.1" and src.details["cuda_graph_trace"] == "none"
    assert s.device is not None and s.device.name == "NVIDIA H200"
    # every NVTX range of the worker is a slice of the Perfetto trace, under its own name
    with gzip.open(tmp_path / "o" / "trace.json.gz", "rt") as f:
        trace = json.load(f)
    names = [e.get("name") for e in trace["traceEvents"] if e.get("ph") == "X"]
    top = max({t for t, _ in nvtx}, key=lambda t: sum(x == t for x, _ in nvtx))
    assert names.count(top) == sum(x == top for x, _ in nvtx) > 100
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before


def test_the_export_is_never_written(tmp_path):
    """Opened read-only: no journal, -wal or -shm file beside it, its bytes and time unchanged."""
    src = real_data.need(SAMPLE)
    db = tmp_path / "in" / "report.sqlite"
    db.parent.mkdir()
    db.write_bytes(src.read_bytes())
    db.chmod(stat.S_IRUSR)
    mtime = db.stat().st_mtime_ns
    assert invoke("analyze", db, "-o", tmp_path / "o", "--format", "json").exit_code == 0
    assert sorted(p.name for p in db.parent.iterdir()) == ["report.sqlite"] and db.stat().st_mtime_ns == mtime


def test_an_export_with_a_write_ahead_log_beside_it_is_read_as_sqlite_reads_it(tmp_path):
    """A database a writer still holds open (its committed rows in the ``-wal`` file): its
    kernels are those a SQLite reader sees, not the stale main file's; the three files are
    left as they were."""
    db = tmp_path / "report.sqlite"
    db.write_bytes(real_data.need(SAMPLE).read_bytes())
    with closing(sqlite3.connect(db)) as writer:
        writer.execute("PRAGMA journal_mode=WAL")
        writer.execute("PRAGMA wal_autocheckpoint=0")
        writer.execute("DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE rowid % 2 = 0")
        writer.commit()
        ((kernels, kernel_ns),) = writer.execute("SELECT count(*), sum(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL")
        ((stale,),) = _sql(db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")  # (the main file alone)
        assert stale > kernels and Path(f"{db}-wal").stat().st_size > 0
        files = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in tmp_path.iterdir()}
        _, s = analysis.analyze([db])
        link = tmp_path / "elsewhere" / "link.sqlite"  # (the log lies beside the database, not the link)
        link.parent.mkdir()
        link.symlink_to(db)
        _, through_link = analysis.analyze([link])
        link.unlink()
        link.parent.rmdir()
        assert {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in tmp_path.iterdir()} == files
    assert s.totals.device_kernel_ns == through_link.totals.device_kernel_ns == kernel_ns


def test_names_the_string_table_lacks_are_said(tmp_path):
    """Kernels whose name ids the export's StringIds lacks keep their rows, named by their id,
    and a warning counts them (their fused op cannot come from a name)."""
    db = tmp_path / "report.sqlite"
    db.write_bytes(real_data.need(SAMPLE).read_bytes())
    with closing(sqlite3.connect(db)) as c:
        ((rows, ids, first),) = c.execute(
            "SELECT count(*), count(DISTINCT demangledName), min(demangledName) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE demangledName IN "
            "(SELECT demangledName FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start LIMIT 3)"
        )
        c.execute(
            "DELETE FROM StringIds WHERE id IN (SELECT demangledName FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start LIMIT 3)"
        )
        c.commit()
    _, s = analysis.analyze([db])
    said = [w for w in s.warnings if "CUPTI_ACTIVITY_KIND_KERNEL row(s) name" in w]
    assert said == [
        f"report.sqlite: {rows:,} CUPTI_ACTIVITY_KIND_KERNEL row(s) name {ids:,} string id(s) the file's string table "
        f"lacks: named by their id (#{first})"
    ]


def _steps(profile, epoch: int):
    st = profile.steps
    order = np.lexsort((st["start"], st["rank"]))
    return [(int(st["rank"][i]), int(st["start"][i]) + profile.base_ns - epoch, PHASES[st["phase"][i]]) for i in order]


@pytest.mark.parametrize("schema", gen_nsys.SCHEMAS)
@pytest.mark.parametrize("marks", ["vllm_step", "vllm_scopes", "trtllm"])
def test_steps_phases_and_layers_from_nvtx(tmp_path, schema, marks):
    """Each engine's NVTX ranges give the steps (where they start, on which rank), the phases and,
    with layer-wise ranges, the decoder layers, in every export schema."""
    db = tmp_path / "run.sqlite"
    truth = gen_nsys.write(db, Workload(marks=marks, layerwise=True), schema)
    profile, s = analysis.analyze([db])
    # the per-step range (vLLM, TensorRT-LLM) records the phase; the runner scopes leave it to
    # the input copies: tokens = requests is decode, one request of many tokens prefill, the
    # mixed step (T > R > 1) stays unknown
    inferred = {"prefill": "prefill", "decode": "decode", "mixed": "unknown"}
    want = [
        (t["rank"], t["start"], t["phase"] if marks != "vllm_scopes" else inferred[t["phase"]])
        for t in sorted(truth["steps"], key=lambda t: (t["rank"], t["start"]))
    ]
    assert _steps(profile, truth["epoch_ns"]) == want
    evidence = {"vllm_step": "annotation", "vllm_scopes": "runner_scope", "trtllm": "annotation"}[marks]
    assert {STEP_EVIDENCE[e] for e in profile.steps["evidence"].tolist()} == {evidence}
    assert sorted(profile.ranks) == list(range(truth["ranks"]))
    assert s.totals.device_kernel_ns == truth["kernel_ns"]
    assert s.run.sources[0].details["schema_version"] == schema
    layers = {p.phase: p for p in s.layers.phases} if s.layers is not None else {}
    assert {p: (x.layers, x.evidence) for p, x in layers.items()} == {
        p: (truth["layers"], "module") for p in {w[2] for w in want}
    }
    engine = {"vllm_step": "vLLM execute_… step annotations", "trtllm": "TensorRT-LLM _forward_step ranges"}
    engine["vllm_scopes"] = "vLLM's model-runner scopes (gpu_model_runner: …)"
    assert s.step_search.engine_evidence == engine[marks]  # TensorRT-LLM's: in its own domain, registered strings


@pytest.mark.parametrize("graphs", ["node", "graph"])
def test_kernels_inside_cuda_graphs(tmp_path, graphs):
    """``--cuda-graph-trace=node``: every node is a kernel of its step; ``graph``: one slice per run,
    and a warning says the kernels were not traced."""
    db = tmp_path / "run.sqlite"
    truth = gen_nsys.write(db, Workload(graphs=graphs), "3.17.1")
    profile, s = analysis.analyze([db])
    src = s.run.sources[0].details
    assert src["cuda_graph_trace"] == graphs
    assert s.totals.device_kernel_ns == truth["kernel_ns"]
    ev = profile.events
    kernels = ev["kind"] == 1
    assert int(kernels.sum()) == truth["kernels"]
    assert (ev["step"][kernels] >= 0).all()  # every replayed kernel belongs to the step that launched it
    warned = [w for w in s.warnings if "--cuda-graph-trace=node" in w]
    runs = sum(1 for t in truth["steps"] if t["phase"] == "decode")
    assert (len(warned), warned[0].split(": ")[1].split()[0] if warned else None) == (
        (1, f"{runs:,}") if graphs == "graph" else (0, None)
    )


def _fake_nsys(bin_dir: Path, body: str) -> None:
    bin_dir.mkdir()
    nsys = bin_dir / "nsys"
    nsys.write_text(f"#!{os.sys.executable}\nimport os, shutil, sys\nargs = sys.argv[1:]\n{body}\n")
    nsys.chmod(0o755)


def test_a_report_is_exported_with_the_nsys_on_path(tmp_path):
    db = tmp_path / "exported.sqlite"
    truth = gen_nsys.write(db, Workload(), "3.17.1")
    rep_dir = tmp_path / "reports"
    rep_dir.mkdir()
    rep = rep_dir / "run.nsys-rep"
    rep.write_bytes(real_data.need(REPORT).read_bytes())
    log = tmp_path / "nsys.args"
    _fake_nsys(
        tmp_path / "bin",
        f"open({str(log)!r}, 'w').write(' '.join(args))\nshutil.copy({str(db)!r}, args[args.index('--output') + 1])",
    )
    path = {"PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    res = run("analyze", rep, "-o", tmp_path / "o", "--format", "json", extra_env=path)
    assert res.returncode == 0, res.stderr
    s = load_summary(tmp_path / "o" / "summary.json")
    assert s.totals.device_kernel_ns == truth["kernel_ns"] and s.run.sources[0].path == str(rep)
    assert s.run.sources[0].details["exported_from"] == "nsys-rep"
    args = log.read_text().split()
    assert args[:3] == ["export", "--type", "sqlite"] and args[-1] == str(rep)
    assert not args[args.index("--output") + 1].startswith(str(rep_dir))  # exported elsewhere, never beside it
    assert [p.name for p in rep_dir.iterdir()] == ["run.nsys-rep"]


def test_a_report_without_nsys_or_with_an_older_one(tmp_path):
    rep = tmp_path / "run.nsys-rep"
    rep.write_bytes(real_data.need(REPORT).read_bytes())
    empty = tmp_path / "nothing"
    empty.mkdir()
    err = one_line_error(run("analyze", rep, "-o", tmp_path / "o", extra_env={"PATH": str(empty)}))
    assert f"nsys export --type sqlite --output run.sqlite {rep}" in err
    _fake_nsys(tmp_path / "bin", "print('Report was created in a newer version'); sys.exit(1)")
    err = one_line_error(run("analyze", rep, "-o", tmp_path / "o", extra_env={"PATH": str(tmp_path / "bin")}))
    assert "nsys export failed: Report was created in a newer version" in err
    assert not (tmp_path / "o").exists()


def test_databases_that_are_no_export(tmp_path):
    other = tmp_path / "app.sqlite"
    with sqlite3.connect(other) as c:
        c.execute("CREATE TABLE users (id, name)")
    assert "neither an Nsight Systems export" in one_line_error(invoke("analyze", other, "-o", tmp_path / "o"))
    broken = tmp_path / "broken.sqlite"
    broken.write_bytes(b"SQLite format 3\x00" + bytes(range(256)) * 40)
    assert "corrupt or unreadable SQLite database" in one_line_error(invoke("analyze", broken, "-o", tmp_path / "o"))
    bare = tmp_path / "bare.sqlite"  # an export that traced no CUDA and no NVTX
    with sqlite3.connect(bare) as c:
        c.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)")
        c.execute("CREATE TABLE META_DATA_EXPORT (name, value)")
    err = one_line_error(invoke("analyze", bare, "-o", tmp_path / "o"))
    assert "nothing to analyse" in err and "nsys profile --trace cuda,nvtx" in err


def test_a_diff_of_an_nsys_run_against_its_torch_profiler_twin(tmp_path):
    """The same run traced by Nsight Systems and by torch.profiler compares phase by phase,
    with no change anywhere."""
    gen_vendor_kineto.write(tmp_path / "torch", Workload())
    gen_nsys.write(tmp_path / "run.sqlite", Workload(), "3.7.2")
    res = run("diff", tmp_path / "torch", tmp_path / "run.sqlite", "-o", tmp_path / "diff")
    assert res.returncode == 0, res.stderr
    assert "phases compared: prefill, decode, mixed" in res.stdout and "Change: no change" in res.stdout
    assert "cannot compare" not in res.stdout


def test_layerwise_ranges_are_module_frames(tmp_path):
    """vLLM's layer-wise NVTX ranges name each module by its path: the kernels launched inside
    them are attributed through their module (a linear is GEMM, the attention op attention),
    to the same fused ops their names give."""
    with_ranges, without = tmp_path / "lw.sqlite", tmp_path / "plain.sqlite"
    gen_nsys.write(with_ranges, Workload(layerwise=True), "3.17.1")
    gen_nsys.write(without, Workload(), "3.17.1")
    _, a = analysis.analyze([with_ranges])
    _, b = analysis.analyze([without])
    assert {f.fused_op: f.time_ns for f in a.fused_ops} == {f.fused_op: f.time_ns for f in b.fused_ops}
    by_module = {f.fused_op: f.time_ns_by_source.get("module", 0) / f.time_ns for f in a.fused_ops}
    assert by_module["gemm"] == by_module["attention"] == by_module["norm"] == 1.0
    assert b.attribution.share_by_source.get("module", 0.0) == 0.0


KERNEL, RUNTIME, MEMCPY, MEMSET = (f"CUPTI_ACTIVITY_KIND_{t}" for t in ("KERNEL", "RUNTIME", "MEMCPY", "MEMSET"))


@pytest.fixture(scope="module")
def clean():
    """The real export's summary, untouched."""
    return analysis.analyze([real_data.need(SAMPLE)])[1]


def _copy(tmp_path: Path, *loosen: str) -> Path:
    """A copy of the real export; the tables ``loosen`` lose their NOT NULL constraints."""
    db = tmp_path / "odd.sqlite"
    db.write_bytes(real_data.need(SAMPLE).read_bytes())
    with closing(sqlite3.connect(db)) as c:
        for t in loosen:
            c.executescript(f"CREATE TABLE x AS SELECT * FROM {t}; DROP TABLE {t}; ALTER TABLE x RENAME TO {t};")
    return db


def _spoil(db: Path, *updates: str) -> None:
    with closing(sqlite3.connect(db)) as c, c:
        for u in updates:
            c.execute(u)


def _skips(s) -> set[str]:
    return {w for w in s.warnings if " skipped " in w}


def test_rows_with_a_null_are_skipped_and_counted(tmp_path, clean):
    """A NULL where a row needs a value (a kernel's times, device or stream, a runtime call's
    name, a copy's or fill's bytes) skips that row, counted per table and column; the rest is
    read, its totals the clean export's less the rows skipped."""
    db = _copy(tmp_path, KERNEL, RUNTIME, MEMCPY, MEMSET)
    spoiled = {"start": 1, "end": 2, "deviceId": 3, "streamId": 4}  # column → the kernel row it is NULL in
    ((kernel_ns,),) = _sql(db, f"SELECT sum(end - start) FROM {KERNEL} WHERE rowid IN (1, 2, 3, 4)")
    copy_ns = sum(
        _sql(db, f"SELECT end - start FROM {t} WHERE rowid = {r}")[0][0] for t, r in ((MEMCPY, 1), (MEMSET, 2))
    )
    kernel_pids = {g >> 24 & 0xFFFFFF for (g,) in _sql(db, f"SELECT globalPid FROM {KERNEL}")}
    calls = [g >> 24 & 0xFFFFFF for (g,) in _sql(db, f"SELECT globalTid FROM {RUNTIME} WHERE rowid IN (5, 6, 7)")]
    _spoil(
        db,
        *(f'UPDATE {KERNEL} SET "{col}" = NULL WHERE rowid = {r}' for col, r in spoiled.items()),
        f"UPDATE {RUNTIME} SET nameId = NULL WHERE rowid IN (5, 6, 7)",
        f"UPDATE {MEMCPY} SET bytes = NULL WHERE rowid = 1",
        f"UPDATE {MEMSET} SET bytes = NULL WHERE rowid = 2",
    )
    _, s = analysis.analyze([db])
    assert _skips(s) == {f"odd.sqlite: skipped 1 {KERNEL} row(s) with a NULL or non-integer {c}" for c in spoiled} | {
        f"odd.sqlite: skipped 3 {RUNTIME} row(s) with a NULL or non-integer nameId",
        f"odd.sqlite: skipped 1 {MEMCPY} row(s) with a NULL or non-integer bytes",
        f"odd.sqlite: skipped 1 {MEMSET} row(s) with a NULL or non-integer bytes",
    }
    assert s.totals.device_kernel_ns == clean.totals.device_kernel_ns - kernel_ns
    assert s.totals.op_time_ns == clean.totals.op_time_ns - kernel_ns - copy_ns
    assert s.totals.events == clean.totals.events - 4 - 2 - sum(p in kernel_pids for p in calls)


def test_kernel_times_no_run_has_are_skipped_with_their_reason(tmp_path, clean):
    """An end at int64's maximum is beyond any clock (not "an end before the start"); a kernel
    of 11.6 days or more is beyond any real run: each skipped, counted by its reason."""
    db = _copy(tmp_path)
    ((kernel_ns,),) = _sql(db, f"SELECT sum(end - start) FROM {KERNEL} WHERE rowid IN (1, 2, 3)")
    _spoil(
        db,
        f"UPDATE {KERNEL} SET end = {2**63 - 1} WHERE rowid = 1",
        f"UPDATE {KERNEL} SET end = start + {10**15} WHERE rowid IN (2, 3)",
    )
    _, s = analysis.analyze([db])
    assert _skips(s) == {
        f"odd.sqlite: skipped 1 {KERNEL} row(s) with a time beyond any clock (negative, or past 2^62 ns)",
        f"odd.sqlite: skipped 2 {KERNEL} row(s) with a duration of 11.6 days or more (beyond any real run)",
    }
    assert s.totals.device_kernel_ns == clean.totals.device_kernel_ns - kernel_ns
    assert s.totals.events == clean.totals.events - 3


def test_an_odd_row_of_a_table_of_names_is_ignored(tmp_path, clean):
    """Thread names whose name id is a text name nothing: the export is read all the same."""
    db = _copy(tmp_path)
    _spoil(db, "UPDATE ThreadNames SET nameId = 'abc'")
    res = invoke("analyze", db, "-o", tmp_path / "o", "--format", "json")
    assert res.exit_code == 0, res.output
    s = load_summary(tmp_path / "o" / "summary.json")
    assert (s.totals.events, s.totals.op_time_ns) == (clean.totals.events, clean.totals.op_time_ns)
    assert s.warnings == [w.replace(Path(SAMPLE).name, db.name) for w in clean.warnings]
