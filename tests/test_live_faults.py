"""Live runs that survive their failures, and live TP=2, on the CPU with a real engine.

Every test runs the live command as a user does (``python -m xpu_profiler --model
tiny-llama --device cpu ...`` in its own process group, as a terminal's shell starts a
job), breaks it the way it breaks in practice, and checks the process table: no process
of the run (the command's children, vLLM's EngineCore and workers, orphans included:
anything in the command's process group) is left once it has ended. Each starts an
engine, so they are lean: few prompts, basic level where the fault does not need
torch.profiler.

Nothing here waits for a time and hopes: a fault lands at a point the test observes.
"Mid-run" is once the run's record directory (in the run's own TMPDIR) holds three
engine steps (``StepTally``, what the command's own progress line counts); then the
engine's processes are stopped (SIGSTOP), the fault is delivered (SIGKILL to one of
them, or the terminal's SIGINT to the whole process group) and they are let go again
(SIGCONT), so the run cannot finish in between however slow this machine is. "During
the export" is an audit hook that holds the command once the summary is whole in its
temporary file (``tests/hold.py``). Each wait has a generous deadline; none asserts how
fast anything went.

The run stays in the test's session on purpose. Linux's scheduler autogroups (one per
session) would otherwise put the engine (a worker and a busy-polling EngineCore: both
cores of a small machine) in a group of its own, and the test's mostly sleeping process
in another, which then waits for a CPU for seconds at a time (measured on two cores: a
50 ms sleep took up to 4 s to return).
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil
import pytest
from conftest import HAVE_VLLM, ROOT, vllm_env
from hold import driver, run_module, wait_for_hold

from xpu_profiler.core.records import StepTally

pytestmark = [pytest.mark.vllm, pytest.mark.skipif(not HAVE_VLLM, reason="vLLM is not installed")]

#: the profiled window of a run that is broken on purpose: long enough to be caught in it
#: (tiny-llama's 2048-token context ends each request at 2032 tokens: about 10 s of decode
#: on two cores; a signal 2 s into the window lands mid-run)
#: a run that lasts: four requests one after another (max_num_seqs=1), each to the context's
#: end, so that a fault that lands seconds after the first steps were recorded is still mid-run
LONG_PROMPTS = 4
LONG = [
    "--engine-arg",
    "max_num_seqs=1",
    "--num-prompts",
    str(LONG_PROMPTS),
    "--input-len",
    "16",
    "--output-len",
    "4000",
    "--warmup-steps",
    "0",
    "--detail-level",
    "basic",
]
#: the deadline for the command to end once the fault landed (it ends the engine, assembles
#: and writes): a hang fails, slowness on a loaded machine does not
END_DEADLINE_S = 600
#: engine steps in the record directory that make a run "mid-run"
MID_RUN_STEPS = 3


class LiveRun:
    """The live command in its own process group, its output in files, its process tree
    sampled; TMPDIR of its own (where it makes its record directory). ``driver``: Python
    the command's process runs first (``hold``); ``in_process``: vLLM's engine in the
    command's own process."""

    def __init__(
        self,
        tmp: Path,
        args: list[str],
        env: dict | None = None,
        prefix: list[str] = (),
        driver: str | None = None,
        in_process: bool = False,
    ):
        self.tmp = tmp
        self.out = tmp / "r.html"
        self.stdout, self.stderr = tmp / "stdout.txt", tmp / "stderr.txt"
        self.tmpdir = tmp / "tmpdir"
        self.tmpdir.mkdir(exist_ok=True)
        # vLLM makes its ZMQ sockets in TMPDIR, and a socket's path may not exceed 107 bytes: the
        # run's TMPDIR is a short link to the test's own (pytest's, under a worker, is too long)
        self.alias = Path(tempfile.mkdtemp(prefix="xpf-")) / "t"
        self.alias.symlink_to(self.tmpdir, target_is_directory=True)
        env = dict(env) if env else vllm_env(tmp / "cache", TMPDIR=str(self.alias))
        if in_process:  # the engine in the command's own process: no engine processes to start
            env["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
        self.tmpdir = Path(env.get("TMPDIR", self.tmpdir))
        cmd = [
            *prefix,
            sys.executable,
            *(run_module(driver) if driver else ["-m", "xpu_profiler"]),
            "--model",
            "tiny-llama",
            "--device",
            "cpu",
            "--output",
            str(self.out),
            *args,
        ]
        with open(self.stdout, "w") as o, open(self.stderr, "w") as e:
            self.proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=o, stderr=e, preexec_fn=os.setpgrp)
        # its own process group (pgid = its pid: killpg below), in the test's session: a new
        # session is a scheduler autogroup of its own, and under it the engine's busy processes
        # starve this test for seconds at a time (its waits then land after the run ended).
        # (preexec_fn, not process_group=0: that is Python 3.11's)
        self.seen: dict[int, tuple[float, str]] = {}
        self._stop = threading.Event()
        self._sampler = threading.Thread(target=self._sample, daemon=True)
        self._sampler.start()

    def _sample(self) -> None:
        while not self._stop.is_set():
            try:
                for c in psutil.Process(self.proc.pid).children(recursive=True):
                    self.seen.setdefault(c.pid, (c.create_time(), c.name()))
            except psutil.Error:
                pass
            self._stop.wait(0.2)

    def err(self) -> str:
        return self.stderr.read_text(errors="replace")

    def wait_for(self, what, timeout: float = 400) -> None:
        """Until ``what`` (a text on stderr, or a Path) appears; fails if the run ends first."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            if what.exists() if isinstance(what, Path) else what in self.err():
                return
            if self.proc.poll() is not None:
                pytest.fail(f"the run ended (exit {self.proc.returncode}) before {what}:\n{self.err()[-3000:]}")
            time.sleep(0.02)
        pytest.fail(f"no {what} after {timeout} s:\n{self.err()[-3000:]}")

    def wait_mid_run(self, steps: int = MID_RUN_STEPS, timeout: float = 400) -> int:
        """Until the run's record directory holds ``steps`` engine steps (the profiled
        window's: the hooks record nothing before it); fails if the run ends first."""
        deadline = time.monotonic() + timeout
        tally = None
        while time.monotonic() < deadline:
            if tally is None:
                dirs = sorted(self.tmpdir.glob("xpu_profiler.records.*"))
                tally = StepTally(dirs[0]) if dirs else None
            if tally is not None and tally() >= steps:
                return tally.steps
            if self.proc.poll() is not None:
                pytest.fail(f"the run ended (exit {self.proc.returncode}) before {steps} steps:\n{self.err()[-3000:]}")
            time.sleep(0.1)
        pytest.fail(f"fewer than {steps} steps recorded after {timeout} s:\n{self.err()[-3000:]}")

    def engine_processes(self) -> tuple[psutil.Process, list[psutil.Process]]:
        """(EngineCore, its workers): the command's child that is not multiprocessing's
        resource tracker, and that child's children."""
        kids = [c for c in psutil.Process(self.proc.pid).children() if "resource_tracker" not in " ".join(c.cmdline())]
        assert len(kids) == 1, [(c.pid, c.name()) for c in kids]
        # vLLM titles its processes (VLLM::Worker...); helper pools (compile workers) are not
        # them: among those titled so, the ones running the model (most CPU time first)
        below = kids[0].children(recursive=True)
        titled = (
            [c for c in below if c.name().startswith("VLLM::Worker")]
            or [c for c in below if "worker" in c.name().lower()]
            or kids[0].children()
        )
        return kids[0], sorted(titled, key=lambda c: -sum(c.cpu_times()[:2]))

    def frozen(self):
        """A context in which every process below the command is stopped: one SIGSTOP to
        the command's group (no walk of the process tree, which can take seconds while the
        engine runs), then SIGCONT to the command alone, which goes on and sees first what
        the test does (a Ctrl-C, a kill); the engine makes no progress until the context
        ends (SIGCONT to the group)."""
        import contextlib

        @contextlib.contextmanager
        def block():
            os.killpg(self.proc.pid, signal.SIGSTOP)
            os.kill(self.proc.pid, signal.SIGCONT)
            try:
                yield
            finally:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGCONT)

        return block()

    def interrupt(self) -> None:
        """Ctrl-C: SIGINT to the whole foreground process group, as a terminal sends it."""
        os.killpg(self.proc.pid, signal.SIGINT)

    def kill(self, p: psutil.Process) -> None:
        p.send_signal(signal.SIGKILL)

    def finish(self, timeout: float = END_DEADLINE_S) -> int:
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.cleanup()
            pytest.fail(f"the run did not end within {timeout} s (hung):\n{self.err()[-3000:]}")
        self._stop.set()
        self._sampler.join(2)
        return rc

    def left_behind(self, grace_s: float = 30.0) -> list[str]:
        """Processes of the run still alive ``grace_s`` after it ended: every process seen
        under it, and anything else in its process group (an orphan re-parented before it was seen)."""
        deadline = time.time() + grace_s
        while True:
            alive = []
            for pid, (t0, name) in self.seen.items():
                try:
                    p = psutil.Process(pid)
                    if p.create_time() == t0 and p.status() != psutil.STATUS_ZOMBIE:
                        alive.append(f"{name} ({pid})")
                except psutil.Error:
                    pass
            for p in psutil.process_iter(["pid", "name"]):
                try:
                    if os.getpgid(p.pid) == self.proc.pid and p.status() != psutil.STATUS_ZOMBIE:
                        alive.append(f"{p.info['name']} ({p.pid}, same process group)")
                except (OSError, psutil.Error):
                    pass
            if not alive or time.time() > deadline:
                return sorted(set(alive))
            time.sleep(0.2)

    def cleanup(self) -> None:
        """Test hygiene only (the assertions come first): end what the run left."""
        shutil.rmtree(self.alias.parent, ignore_errors=True)  # the link, not what it points to
        for pid, (t0, _) in self.seen.items():
            try:
                p = psutil.Process(pid)
                if p.create_time() == t0:
                    p.kill()
            except psutil.Error:
                pass
        if self.proc.poll() is None:
            self.proc.kill()

    def summary(self) -> dict:
        return json.loads((self.tmp / "r.summary.json").read_text())

    def ours(self, prefix: str) -> list[str]:
        return [ln for ln in self.err().splitlines() if ln.startswith(prefix)]


@pytest.fixture
def live(tmp_path):
    runs = []

    def start(*args, **kw) -> LiveRun:
        r = LiveRun(tmp_path, list(args), **kw)
        runs.append(r)
        return r

    yield start
    for r in runs:
        r.cleanup()


def outputs_are_whole(tmp: Path) -> list[str]:
    """Each output that exists is complete and valid; returns the names of those present."""
    from xpu_profiler.exporters.validate import validate_file

    present = sorted(p.name for p in tmp.glob("r.*"))
    if (tmp / "r.trace.json.gz").exists():
        assert validate_file(tmp / "r.trace.json.gz") == []
    if (tmp / "r.summary.json").exists():
        json.loads((tmp / "r.summary.json").read_text())
    if (tmp / "r.html").exists():
        assert (tmp / "r.html").read_text(errors="replace").rstrip().endswith("</html>")
    if (tmp / "r.fused_ops.csv").exists():
        assert (tmp / "r.fused_ops.csv").read_text().startswith("fused_op")
    return present


# -- an engine process killed mid-run -------------------------------------------------------


def cut_short(s: dict) -> None:
    """A LONG run's summary, cut short: whole prompts only (one request at a time, each
    prefilled in one step), and fewer tokens than the whole workload (each request ends at the
    context's end)."""
    prefill = s["totals"]["prefill_tokens"]
    assert prefill % 16 == 0 and 16 <= prefill <= LONG_PROMPTS * 16, prefill
    assert s["totals"]["decode_tokens"] < LONG_PROMPTS * (s["run"]["engine"]["max_model_len"] - 16 - 1)


@pytest.mark.parametrize("victim", ["worker", "engine_core"])
def test_an_engine_process_killed_mid_run(live, tmp_path, victim):
    run = live(*LONG)
    run.wait_for("] profiling")
    seen = run.wait_mid_run()
    with run.frozen():  # no step runs between here and the kill
        core, workers = run.engine_processes()
        target = workers[0] if victim == "worker" else core
        name, pid = target.name(), target.pid
        run.kill(target)
    rc = run.finish()
    err = run.err()
    assert rc == 1, f"killed {name} (pid {pid}) after {seen} steps, of {sorted(run.seen.values())}\n{err[-3000:]}"
    # a worker is not our child: it "died"; the EngineCore is, and its exit status says
    # SIGKILL unless the watch on the engine's processes saw it gone first
    hows = ("was killed by SIGKILL", "died") if victim == "engine_core" else ("died",)
    (line,) = run.ours("xpu_profiler: the engine process")
    said = next(
        (
            f"the engine process {name} (pid {pid}) {h}"
            for h in hows
            if line == f"xpu_profiler: the engine process {name} (pid {pid}) {h}; saving what was collected"
        ),
        None,
    )
    assert said is not None, line
    s = run.summary()  # what was collected up to then, marked incomplete with the reason
    assert s["run"]["incomplete"] is True and s["run"]["incomplete_reason"] == said
    # the steps that were in the record files when the engine froze, at least
    assert s["totals"]["steps"] >= seen >= MID_RUN_STEPS
    cut_short(s)
    outputs_are_whole(tmp_path)
    assert run.left_behind() == []


def test_an_engine_process_killed_in_the_warm_up(live, tmp_path):
    run = live("--num-prompts", "2", "--input-len", "16", "--output-len", "4", "--warmup-steps", "2000")
    run.wait_for("] warm-up")
    with run.frozen():  # (2000 warm-up steps: the engine is mid-way, held there)
        _, workers = run.engine_processes()
        name, pid = workers[0].name(), workers[0].pid
        run.kill(workers[0])
    rc = run.finish()
    err = run.err()
    assert rc == 1, err[-3000:]
    # nothing was profiled: one line naming the process, no traceback, no outputs
    errors = run.ours("xpu_profiler: error:")
    assert errors == [
        f"xpu_profiler: error: the engine process {name} (pid {pid}) died during the warm-up; nothing was profiled"
    ], err[-3000:]
    assert "Traceback" not in "\n".join(run.ours("xpu_profiler"))
    assert not list(tmp_path.glob("r.*"))
    assert run.left_behind() == []


# -- Ctrl-C -----------------------------------------------------------------------------------


@pytest.mark.parametrize("phase", ["warm-up", "profiling", "export"])
def test_ctrl_c(live, tmp_path, phase):
    seen = 0
    if phase == "warm-up":
        run = live(
            "--num-prompts",
            "2",
            "--input-len",
            "16",
            "--output-len",
            "4",
            "--warmup-steps",
            "2000",
            "--detail-level",
            "basic",
            in_process=True,  # (the engine processes' end on Ctrl-C: the profiling case below)
        )
        run.wait_for("] warm-up")
        with run.frozen():  # (2000 warm-up steps: the engine is mid-way)
            run.interrupt()
    elif phase == "profiling":
        run = live(*LONG)
        run.wait_for("] profiling")
        seen = run.wait_mid_run()
        with run.frozen():
            run.interrupt()
    else:  # comprehensive: the largest export; on the CPU graph-capture tracing stays off
        # (the engine has ended before the export starts, whatever its layout: it runs in the
        # command's own process here, and starts in a third of the time)
        marker = tmp_path / "held"
        run = live(
            "--num-prompts",
            "2",
            "--input-len",
            "16",
            "--output-len",
            "24",
            "--warmup-steps",
            "0",
            "--detail-level",
            "comprehensive",
            driver=driver(marker, "r.summary.json"),
            in_process=True,
        )
        # held once the summary is whole in its temporary file: the trace is written, the rest not
        temp = wait_for_hold(marker, run.proc, timeout=400)
        assert temp.exists() and (tmp_path / "r.trace.json.gz").exists() and not (tmp_path / "r.summary.json").exists()
        run.interrupt()
    rc = run.finish()
    err = run.err()
    assert rc == 130, err[-3000:]
    assert "Traceback" not in "\n".join(run.ours("xpu_profiler"))
    present = outputs_are_whole(tmp_path)  # complete and valid, or absent: never half-written
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".") and p.name.endswith(".tmp")]
    if phase == "warm-up":
        assert present == []  # nothing was profiled yet
    elif phase == "profiling":
        s = run.summary()
        assert s["run"]["incomplete"] is True and s["run"]["incomplete_reason"] == "interrupted (Ctrl-C)"
        assert s["totals"]["steps"] >= seen >= MID_RUN_STEPS
        cut_short(s)
        assert "r.trace.json.gz" in present and "r.html" in present
    else:
        assert present == ["r.trace.json.gz"]  # the outputs after the interrupted one were not written
        assert not list(tmp_path.glob("*capture_traces*"))  # CPU: no graphs, nothing asked of vLLM
    assert run.left_behind() == []


# -- the engine cannot start -------------------------------------------------------------------


@pytest.mark.parametrize(
    "engine_arg, needle",
    [
        ("max_model_len=-5", "max_model_len: Input should be greater than or equal to -1 (got -5)"),  # vLLM's config
        ("no_such_kwarg=1", "unexpected keyword argument 'no_such_kwarg'"),  # EngineArgs
        ("block_size=7", "No common block size for 7"),  # in the engine's own processes, after they started
    ],
)
def test_the_engine_cannot_start(live, tmp_path, engine_arg, needle):
    late = engine_arg == "block_size=7"  # raised in the engine's own processes: -v shows them
    run = live(*(["-v"] if late else []), "--engine-arg", engine_arg, "--num-prompts", "1")
    rc = run.finish()
    err = run.err()
    assert rc == 2, err[-3000:]
    errors = run.ours("xpu_profiler: error:")
    assert len(errors) == 1 and needle in errors[0], errors
    assert errors[0].startswith("xpu_profiler: error: vLLM could not start the engine: ")
    lines = err.splitlines()
    if late:
        # the cause, raised in the EngineCore process, reaches the user above our one-line
        # error, without vLLM's traceback
        said = lines.index(f"xpu_profiler: {tmp_path / 'vllm.log'} says:")
        assert [ln for ln in lines[said:-1] if needle in ln] and lines[-1] == errors[0], lines[said:]
        assert "Traceback" not in "\n".join(lines[said:])
        # -v: vLLM's own output shown as it comes (its engine processes' too), and kept in the log
        assert "(EngineCore pid=" in "\n".join(lines[:said])
        assert "(EngineCore pid=" in (tmp_path / "vllm.log").read_text()
    else:
        assert "Traceback" not in err
    assert not list(tmp_path.glob("r.*"))
    assert run.left_behind() == []


# -- a full disk under the record files ----------------------------------------------------------


def _private_tmpfs_prefix(mnt: Path) -> list[str] | None:
    """A command prefix that runs the rest in a private mount namespace with a 64 KiB tmpfs
    on ``mnt`` that has one page left; None when this machine does not allow it."""
    if not shutil.which("unshare"):
        return None
    user = [] if os.geteuid() == 0 else ["--user", "--map-root-user"]
    # one page left: Python's tempfile probes a directory by writing to it (a full one is
    # passed over for /tmp); the first record file takes that page, every other write fails
    script = f'mount -t tmpfs -o size=64k tmpfs "{mnt}" && head -c 61440 /dev/zero > "{mnt}/filler"; exec "$@"'
    prefix = ["unshare", "--mount", "--propagation", "private", *user, "sh", "-c", script, "sh"]
    probe = subprocess.run(
        [*prefix, "sh", "-c", f'test "$(df -k "{mnt}" | tail -1 | tr -s " " | cut -d" " -f4)" = 4'],
        capture_output=True,
        timeout=30,
    )
    return prefix if probe.returncode == 0 else None


def test_a_full_disk_while_the_plugin_flushes_records(live, tmp_path, request):
    # vLLM's ZMQ socket paths live in TMPDIR and may not exceed 107 bytes: the mount point is
    # short (pytest's tmp_path under a worker is too long)
    mnt = Path(tempfile.mkdtemp(prefix="xpd-"))
    request.addfinalizer(lambda: shutil.rmtree(mnt, ignore_errors=True))
    prefix = _private_tmpfs_prefix(mnt)
    if prefix is None:
        pytest.skip("cannot mount a private tmpfs here (unshare/mount not permitted)")
    # the record directory is made in TMPDIR: record file writes fail with ENOSPC
    run = live(
        "--num-prompts",
        "2",
        "--input-len",
        "16",
        "--output-len",
        "30",
        "--warmup-steps",
        "0",
        "--detail-level",
        "basic",
        prefix=prefix,
        env=vllm_env(tmp_path / "cache", TMPDIR=str(mnt)),
    )
    rc = run.finish(timeout=600)  # it must not hang
    err = run.err()
    assert rc == 0, err[-3000:]
    warned = [ln for ln in err.splitlines() if "record files could not be written" in ln]
    assert len(warned) == 1 and "No space left on device" in warned[0], warned
    assert not [ln for ln in err.splitlines() if "cannot write records" in ln]
    s = run.summary()  # every record came over RPC instead: the counts are exact
    assert s["run"]["incomplete"] is False
    assert s["totals"]["prefill_tokens"] == 2 * 16 and s["totals"]["decode_tokens"] == 2 * 29
    assert run.left_behind() == []


# -- tensor parallel: TP=2 on this 2-core machine --------------------------------------------------

TP_PROMPTS, TP_INPUT, TP_OUTPUT, TP_LAYERS = 4, 24, 6, 4


def test_tensor_parallel_2_delivers_every_ranks_rows(live, tmp_path):
    env = vllm_env(tmp_path / "cache")
    env.pop("VLLM_CPU_OMP_THREADS_BIND", None)  # the live command sets the binding vLLM needs
    run = live(
        "--tensor-parallel-size",
        "2",
        "--num-prompts",
        str(TP_PROMPTS),
        "--input-len",
        str(TP_INPUT),
        "--output-len",
        str(TP_OUTPUT),
        "--warmup-steps",
        "1",
        "--detail-level",
        "standard",
        env=env,
    )
    rc = run.finish()
    assert rc == 0, run.err()[-3000:]
    s = run.summary()
    assert s["run"]["incomplete"] is False and s["run"]["engine"]["tensor_parallel_size"] == 2
    assert s["run"]["extra"]["parallel_ranks"] == {"0": {"dp": 0, "pp": 0, "tp": 0}, "1": {"dp": 0, "pp": 0, "tp": 1}}
    st = s["steps"]
    rows: dict[int, dict[int, tuple]] = {}
    for rank, sid, pt, dt, pr, dr in zip(
        st["rank"], st["step_id"], st["prefill_tokens"], st["decode_tokens"], st["prefill_reqs"], st["decode_reqs"]
    ):
        assert rank not in rows.setdefault(sid, {})
        rows[sid][rank] = (pt, dt, pr, dr)
    # one engine step, both ranks' rows, the same batch on both
    assert rows and all(set(r) == {0, 1} and r[0] == r[1] for r in rows.values()), rows
    # engine steps counted once: the tokens of the workload exactly
    assert sum(r[0][0] for r in rows.values()) == TP_PROMPTS * TP_INPUT
    assert sum(r[0][1] for r in rows.values()) == TP_PROMPTS * (TP_OUTPUT - 1)
    # each worker's own torch trace: one xpu_step#N range per engine step, and the CPU
    # all-reduce: two per layer (attention and MLP outputs) and one for the vocab-parallel embedding
    trace = json.loads(gzip.decompress((tmp_path / "r.trace.json.gz").read_bytes()))["traceEvents"]
    ranks = {
        e["pid"]: int(re.search(r"\d+", e["args"]["name"]).group())
        for e in trace
        if e.get("ph") == "M" and e.get("name") == "process_name" and e["args"]["name"].startswith("rank ")
    }
    assert sorted(ranks.values()) == [0, 1]
    step_ranges = {
        r: sorted(
            int(e["name"].split("#")[1])
            for e in trace
            if e.get("pid") == pid and str(e.get("name", "")).startswith("xpu_step#")
        )
        for pid, r in ranks.items()
    }
    assert step_ranges == {0: sorted(rows), 1: sorted(rows)}
    # (vLLM's shared-memory all-reduce where the CPU's kernels have one, else torch.distributed's over gloo)
    allreduce = {
        r: sum(1 for e in trace if e.get("pid") == pid and e.get("name") in ("_C::shm_allreduce", "c10d::allreduce_"))
        for pid, r in ranks.items()
    }
    assert allreduce == {0: len(rows) * (2 * TP_LAYERS + 1), 1: len(rows) * (2 * TP_LAYERS + 1)}
    assert run.left_behind() == []
