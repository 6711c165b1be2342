"""Fault paths of the live run that need no engine: record files that cannot be written,
the error an engine process ends with, vLLM's start-up errors in one line, the process
watch, and graph-capture traces (asked for only where graphs are captured, kept beside
the run's outputs)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
import real_data

from xpu_profiler.core.profile import Profile
from xpu_profiler.core.records import FLUSH_FAILED, read_record_files
from xpu_profiler.live import engine, graph_capture
from xpu_profiler.live.processes import ProcessWatch, descendants
from xpu_profiler.live.vllm import compat_llm, recorder
from xpu_profiler.live.vllm.recorder import Recorder, proc_name
from xpu_profiler.readers.records.assemble import build_profile

CAPTURE_TRACE = real_data.path("tracelens/sglang-qwen3-8b-decode.capture-bs32.json.gz")


def _sched_row(step, t0):
    return (step, t0, t0 + 10, t0 + 100, 4, 0, 1, 0, 1, 0, 0.5, 0, 1)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_full_disk_keeps_the_records_for_rpc_and_says_it_once(tmp_path):
    rec = Recorder()
    rec.file_dir = str(tmp_path)
    # this process's record file is on a full disk: every write fails with ENOSPC
    os.symlink("/dev/full", tmp_path / f"{proc_name()}-{os.getpid()}.records.jsonl")
    rec.sched.append(_sched_row(0, 10**18))
    rec.flush_to_file()
    assert rec.held is not None and rec.retry_ns > 0  # held, and no other try before retry_ns
    rec.sched.append(_sched_row(1, 10**18 + 1000))
    rec.maybe_flush(10**18 + 5 * 10**9)
    rec.flush_to_file()
    batch = rec.take(final=True)  # what the engine hands over at stop, over RPC
    assert [r[0] for r in batch["sched"]] == [0, 1]
    n, first = batch["errors"][FLUSH_FAILED]
    assert n == 1 and first == f"{tmp_path}: No space left on device"
    assert "dropped" not in batch
    other = {**batch, "pid": 2, "process": "VllmWorker-0", "sched": []}
    p = build_profile([batch, other])
    assert p.steps["step_id"].tolist() == [0, 1]
    assert p.run["warnings"] == [
        f"the record files could not be written ({tmp_path}: No space left on device) by "
        f"{proc_name()}, VllmWorker-0; their records were held in memory and handed over later"
    ]


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_server_whose_record_disk_stays_full_holds_its_newest_rows_and_counts_the_rest(tmp_path, monkeypatch):
    """A server (file mode: nobody takes its batches over RPC) whose record directory is
    full: every second's batch is held, at most ``max_held`` rows of each kind, the oldest
    dropped and counted; once the disk has room again, the next try writes what is held."""
    clock = [10**18]
    monkeypatch.setattr(recorder, "now", lambda: clock[0])
    rec = Recorder()
    rec.max_held = 50
    rec.file_dir = str(tmp_path)
    record_file = tmp_path / f"{proc_name()}-{os.getpid()}.records.jsonl"
    os.symlink("/dev/full", record_file)
    step = 0
    for second in range(40):  # 40 s of a busy engine, 4 steps and 1 finished request a second
        for _ in range(4):
            rec.sched.append(_sched_row(step, clock[0]))
            step += 1
        rec.done_requests.append((f"r{second}", clock[0], clock[0] + 1, clock[0] + 2, 8, 4))
        clock[0] += 10**9
        rec.flush_to_file()  # what the flusher thread does every second
        held = rec.held or {}
        in_memory = len(rec.sched) + len(held.get("sched", ())), len(rec.done_requests) + len(held.get("requests", ()))
        assert max(in_memory) <= 50, (second, in_memory)
    # one try at the start, one 30 s later: both failed
    assert rec.errors == {} and held["errors"][FLUSH_FAILED][0] == 2
    assert [r[0] for r in held["sched"]] == list(range(step - 50, step))  # the newest 50 steps
    assert held["dropped"] == {"sched": step - 50}
    # room again: the next try after the pause writes every held row and the count of the rest
    os.unlink(record_file)
    clock[0] += recorder.RETRY_NS
    rec.sched.append(_sched_row(step, clock[0]))
    rec.flush_to_file()
    assert rec.held is None
    (written,) = read_record_files(tmp_path)
    assert [r[0] for r in written["sched"]] == list(range(step - 50, step + 1))
    assert written["dropped"] == {"sched": step - 50} and len(written["requests"]) == 40
    p = build_profile([written])
    assert len(p.steps) == 51
    assert f"records dropped while the record files could not be written: {step - 50:,} scheduler step rows" in (
        " ".join(p.run["warnings"])
    )


def test_a_process_that_ends_with_an_exception_leaves_it_in_the_record_dir(tmp_path):
    rec = Recorder()
    rec.file_dir = str(tmp_path)
    try:
        try:
            raise RuntimeError("Worker failed with error 'No common block size for 7'.\n  see above")
        finally:  # as multiprocessing runs the process's finalizers while the error propagates
            rec.flush_at_exit()
    except RuntimeError:
        pass
    fatal = [b["fatal"] for b in read_record_files(tmp_path) if b.get("fatal")]
    assert fatal == ["RuntimeError: Worker failed with error 'No common block size for 7'. see above"]
    # vLLM's own error in the caller says only "see above": the record dir says why
    err = engine.start_error(RuntimeError("Engine core initialization failed. See root cause above."), tmp_path)
    assert str(err) == (
        "vLLM could not start the engine: RuntimeError: Worker failed with error "
        "'No common block size for 7'. see above"
    )
    rec2 = Recorder()
    rec2.file_dir = str(tmp_path / "clean")
    rec2.flush_at_exit()  # a normal end writes nothing
    assert not (tmp_path / "clean").exists()


def test_configuration_errors_name_the_field_and_the_rule():
    pydantic = pytest.importorskip("pydantic")

    class Cfg(pydantic.BaseModel):
        max_model_len: int = pydantic.Field(ge=-1)

    with pytest.raises(pydantic.ValidationError) as e:
        Cfg(max_model_len=-5)
    assert str(engine.start_error(e.value)) == (
        "vLLM could not start the engine: ValidationError: max_model_len: "
        "Input should be greater than or equal to -1 (got -5)"
    )
    assert (
        str(engine.start_error(TypeError("got an unexpected keyword argument 'x'\nmore")))
        == "vLLM could not start the engine: TypeError: got an unexpected keyword argument 'x'"
    )


def test_process_watch_names_the_first_process_to_end_and_ends_the_rest():
    # a stand-in engine: one parent (the "EngineCore") with two children (its "workers")
    root = subprocess.Popen(["sh", "-c", "sleep 60 & sleep 61 & wait"])
    try:
        deadline = time.time() + 60  # both children forked and turned into `sleep` (exec), not still `sh`
        while [n for n, _ in descendants(root.pid).values()] != ["sleep", "sleep"] and time.time() < deadline:
            time.sleep(0.05)
        seen = []
        watch = ProcessWatch(root.pid, on_end=seen.append).start()
        assert len(watch.procs) == 2
        first = sorted(watch.procs)[0]
        os.kill(first, signal.SIGKILL)
        deadline = time.time() + 10
        while not watch.ended and time.time() < deadline:
            time.sleep(0.02)
        watch.stop()
        assert [e.pid for e in watch.ended] == [first] and seen == watch.ended
        # not our child: how it ended is not known, only that it did
        assert watch.describe_first() == f"the engine process sleep (pid {first}) died"
        assert watch.describe_first({first: -9}) == f"the engine process sleep (pid {first}) was killed by SIGKILL"
        root.kill()  # the "EngineCore" is gone: its other child is orphaned, out of its reach
        root.wait()
        killed = watch.end_leftovers(wait_s=0.5)
        assert len(killed) == 1 and not watch.left()
    finally:
        root.kill()
        root.wait()


def test_exit_codes_are_described():
    from xpu_profiler.live.processes import describe_exit

    assert describe_exit(-signal.SIGKILL) == "was killed by SIGKILL"
    assert describe_exit(1) == "exited with code 1"
    assert describe_exit(None) == "died"


# -- graph-capture traces -----------------------------------------------------------------


def _enable(kw, kind="cuda", level="comprehensive", tmp=Path("/tmp/x")):
    said = []
    return graph_capture.enable(kw, kind, level, tmp, said.append), said


def test_graph_capture_traces_are_asked_for_only_where_graphs_are_captured(tmp_path):
    for kind, level, kw in (
        ("cpu", "comprehensive", {}),  # vLLM's CPU worker never captures
        ("cpu", "comprehensive", {"enforce_eager": False}),
        ("cuda", "standard", {}),
        ("cuda", "comprehensive", {"enforce_eager": True}),
        ("cuda", "comprehensive", {"compilation_config": {"cudagraph_mode": "NONE"}}),
    ):
        before = dict(kw)
        assert _enable(kw, kind, level, tmp_path) == (None, []) and kw == before
    if not compat_llm.supports_capture_profiler():
        pytest.skip("this vLLM has no capture_torch_profiler")
    kw = {"enforce_eager": False}
    where, _ = _enable(kw, tmp=tmp_path)
    cfg = kw["profiler_config"]
    assert cfg == {
        "profiler": "torch",
        "torch_profiler_dir": str(tmp_path / "vllm_profiler"),
        "capture_torch_profiler": True,
    }
    assert where == tmp_path / "vllm_profiler" / "capture_traces"
    from vllm.config import ProfilerConfig

    assert ProfilerConfig(**cfg).capture_torch_profiler is True  # what vLLM itself accepts
    # the user's own torch profiler settings are kept, their directory too
    kw = {
        "profiler_config": {"profiler": "torch", "torch_profiler_dir": "/their/dir", "torch_profiler_with_stack": False}
    }
    where, _ = _enable(kw, tmp=tmp_path)
    assert where == Path("/their/dir/capture_traces") and kw["profiler_config"]["torch_profiler_with_stack"] is False
    kw = {"profiler_config": {"profiler": "cuda"}}
    where, said = _enable(kw, tmp=tmp_path)
    assert where is None and kw == {"profiler_config": {"profiler": "cuda"}} and "not torch.profiler" in said[0]


def test_capture_traces_are_kept_beside_the_outputs(tmp_path):
    from xpu_profiler.readers import load
    from xpu_profiler.readers.capture_files import is_capture_file, is_capture_profile

    real_data.need("tracelens/sglang-qwen3-8b-decode.capture-bs32.json.gz")
    src = tmp_path / "vllm_profiler" / "capture_traces"
    src.mkdir(parents=True)
    # a real graph-capture trace, named as vLLM's tensorboard_trace_handler names them
    name = "graph_capture_rank_0.1764700000000000000.pt.trace.json.gz"
    shutil.copy(CAPTURE_TRACE, src / name)
    said = []
    prof = Profile()
    kept = graph_capture.keep(prof, src, tmp_path / "out" / "report.html", said.append)
    dest = tmp_path / "out" / "report.capture_traces"
    assert kept == [dest / name] and (dest / name).read_bytes() == CAPTURE_TRACE.read_bytes()
    assert prof.run["capture_traces"] == {"dir": str(dest), "files": [str(dest / name)]}
    assert is_capture_file(kept[0]) and is_capture_profile(load(kept))
    assert not list((tmp_path / "out").glob(".*tmp"))  # no temporary directory left
    # an output directory: DIR/capture_traces/; a run again replaces the old ones
    (tmp_path / "d").mkdir()
    graph_capture.keep(Profile(), src, tmp_path / "d", said.append)
    assert [p.name for p in (tmp_path / "d" / "capture_traces").iterdir()] == [name]
    empty = Profile()
    assert graph_capture.keep(empty, tmp_path / "none", tmp_path / "d", said.append) == []
    assert (
        empty.run["capture_traces"] == {"dir": None, "files": []}
        and said[-1] == "the engine wrote no graph-capture trace"
    )


def test_a_torch_trace_cut_short_is_left_out_with_a_warning(tmp_path):
    """A worker killed while it wrote its torch trace: the run's records still assemble, the
    trace's events are missing and the warning names the file and its problem."""
    cut = tmp_path / "rank0.pt.trace.json.gz"
    cut.write_bytes(real_data.path("rocm-mi250-minitoy.json.gz").read_bytes()[:700])
    batch = {"pid": 1, "process": "EngineCore", "sched": [_sched_row(0, 10**18)], "worker": [], "counters": []}
    p = build_profile([{**batch, "requests": []}], wallclock_traces=[cut])
    assert p.steps["step_id"].tolist() == [0]
    (w,) = [w for w in p.run["warnings"] if str(cut) in w]
    assert "gzip" in w and w.endswith("its events are missing")


def test_a_record_directory_of_steps_only_is_analysed_not_refused(tmp_path):
    """A basic-level run writes step and request records and no trace event: those are what
    is analysed (the refusal of inputs with nothing in them leaves it alone)."""
    rec = Recorder()
    rec.file_dir = str(tmp_path)
    for step in range(3):
        rec.sched.append(_sched_row(step, 10**18 + step * 1000))
    rec.done_requests.append(("r0", 10**18, 10**18 + 1, 10**18 + 2, 8, 4))
    rec.flush_to_file()
    from xpu_profiler.readers import load

    p = load([tmp_path])
    assert len(p.events) == 0 and p.steps["step_id"].tolist() == [0, 1, 2] and len(p.requests) == 1
