"""Reading many files: the one plug point for how they are read (``--engine``).

Reading a file depends on no other file and gives a compact Profile (numpy columns and
a string table), so the files can be read anywhere and the Profiles merged after:

- ``serial``: one after the other, in this process;
- ``process``: a local process pool (fork where that is safe), one file per task;
- ``ray``: one Ray task per file, placed on the node that holds the file when it is
  node-local (a file found on one node only, or with different content per node); the
  files are found by asking every node (``probe``), so paths may be local to the nodes.
  ``--engine ray`` connects to ``RAY_ADDRESS`` when set, else starts Ray on this
  machine; ``ray://HOST:PORT`` connects there. Ray is optional
  (``pip install 'xpu_profiler[ray]'``).

Every executor returns the Profiles in the order of the files, so that all of them give
the same merged Profile; a file that could not be read comes back as a ``DroppedInput``
(one of a directory) or raises its ``TraceError``. ``EXECUTORS`` is the registry.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, replace
from pathlib import Path

from ..core.errors import TraceError, XpuProfilerError
from ..core.profile import Profile
from .base import DroppedInput

MAX_JOBS = 16


@dataclass(frozen=True)
class FileTask:
    path: str
    reader: str  # the reader's NAME
    size: int = 0
    node: str | None = None  # Ray node that holds the file; None: any
    optional: bool = False  # one file of a directory: a broken one is dropped, not fatal


def read_one(path: str, reader: str, options, nested: bool = True) -> Profile | DroppedInput:
    """Read one file with the named reader: its Profile, or a DroppedInput saying why not.

    Errors come back as values: they cross process boundaries as a picklable DroppedInput.
    With ``nested=False`` (inside a pool worker) the reader decodes in this process only.
    """
    from .formats import reader_named

    if not nested:
        os.environ["XPU_PROFILER_WORKERS"] = "1"
    mod = reader_named(reader)
    if mod is None:
        return DroppedInput(path, f"no reader named {reader!r}")
    try:
        return mod.read(Path(path), options)
    except TraceError as e:
        return DroppedInput(e.path, e.problem)
    except RecursionError:
        return DroppedInput(path, "nested too deeply to be a trace")
    except MemoryError:
        return DroppedInput(path, "out of memory while reading it")
    except Exception as e:  # never a traceback for a file we could not make sense of
        return DroppedInput(path, f"unreadable ({type(e).__name__}: {e})")


def _unwrap(result: Profile | DroppedInput, task: FileTask | None = None) -> Profile | DroppedInput:
    """The Profile read; a file that could not be read is dropped (under the task's path) when
    the task is optional, else its TraceError."""
    if not isinstance(result, DroppedInput):
        return result
    if task is not None and task.optional:
        return DroppedInput(task.path, result.reason)
    raise TraceError(result.path, result.reason)


def serial(tasks: Sequence[FileTask], options, jobs: int, address: str | None) -> list[Profile | DroppedInput]:
    return [_unwrap(read_one(t.path, t.reader, options), t) for t in tasks]


def fork_is_safe() -> bool:
    import multiprocessing

    return "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1


def process_pool(tasks: Sequence[FileTask], options, jobs: int, address: str | None) -> list[Profile | DroppedInput]:
    """A local process pool; progress is reported per file read."""
    import multiprocessing

    if len(tasks) < 2 or jobs < 2:
        return serial(tasks, options, jobs, address)
    progress = options.progress
    opts = replace(options, progress=None)
    ctx = multiprocessing.get_context("fork" if fork_is_safe() else "spawn")
    out: list = [None] * len(tasks)
    with ProcessPoolExecutor(max_workers=min(jobs, len(tasks)), mp_context=ctx) as pool:
        futures: dict = {}
        try:
            for i, t in enumerate(tasks):
                try:
                    futures[pool.submit(read_one, t.path, t.reader, opts, False)] = i
                except BrokenProcessPool:  # a worker died before every file was handed out
                    raise _died(tasks[_first_broken(futures)]) from None
            for f in as_completed(futures):
                i = futures[f]
                try:
                    out[i] = f.result()
                except BrokenProcessPool:
                    raise _died(tasks[i]) from None
                if progress:
                    progress(tasks[i].size)
        except BaseException:  # Ctrl-C or a worker that died: do not wait for the other files
            pool.shutdown(wait=False, cancel_futures=True)
            raise
    return [_unwrap(r, t) for r, t in zip(out, tasks)]


def _died(task: FileTask) -> TraceError:
    return TraceError(task.path, "the worker process reading it died (out of memory? try --jobs 1)")


def _first_broken(futures: dict) -> int:
    """The file whose worker died, as far as the futures say: the first handed out that ended
    with the pool broken (else the first handed out)."""
    for f, i in futures.items():
        if f.done() and not f.cancelled() and isinstance(f.exception(), BrokenProcessPool):
            return i
    return min(futures.values(), default=0)


# -- Ray -----------------------------------------------------------------------------


def _ray():
    try:
        import ray
    except ImportError:
        raise XpuProfilerError(
            "--engine ray needs Ray, which is not installed (pip install 'xpu_profiler[ray]')"
        ) from None
    return ray


def probe(paths: list[str]) -> list[tuple[int, str | None, str, int, int]]:
    """What this node holds of ``paths``: (argument, file, reader, size, mtime_ns) per file
    readers.expand finds, or (argument, None, problem, 0, 0) where it finds nothing."""
    from .formats import expand

    out: list[tuple[int, str | None, str, int, int]] = []
    for i, p in enumerate(paths):
        try:
            for f, mod in expand([p]):
                st = f.stat()
                out.append((i, str(f), mod.NAME, int(st.st_size), int(st.st_mtime_ns)))
        except TraceError as e:
            out.append((i, None, e.problem if Path(p).exists() else "", 0, 0))
    return out


def ray_tasks(paths: list[str]) -> list[FileTask]:
    """The files of ``paths`` on the nodes of the Ray cluster, in argument then path order;
    a file held by one node only (or different on each) is pinned to its node."""
    ray = _ray()
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    nodes = sorted(n["NodeID"] for n in ray.nodes() if n.get("Alive"))
    remote = ray.remote(num_cpus=0)(probe)
    try:
        seen = ray.get(
            [
                remote.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n, soft=False)).remote(paths)
                for n in nodes
            ]
        )
    except ray.exceptions.RayError as e:
        raise XpuProfilerError(f"asking the Ray nodes for the files failed ({type(e).__name__})") from None
    found: dict[tuple[int, str], dict[str, tuple]] = {}
    problems: dict[int, str] = {}
    for node, rows in zip(nodes, seen):
        for i, f, reader, size, mtime in rows:
            if f is None:
                if reader:
                    problems.setdefault(i, reader)
                continue
            found.setdefault((i, f), {})[node] = (reader, size, mtime)
    tasks = []
    for i, p in enumerate(paths):
        files = sorted(f for (j, f) in found if j == i)
        if not files:
            raise TraceError(p, problems.get(i) or "no such file or directory on any node of the Ray cluster")
        for f in files:
            copies = found[(i, f)]
            same = len({v for v in copies.values()}) == 1
            if same and len(copies) > 1:  # a shared file system: any node reads it
                ((reader, size, _),) = set(copies.values())
                tasks.append(FileTask(f, reader, size, None))
            else:
                for node, (reader, size, _) in sorted(copies.items()):
                    tasks.append(FileTask(f, reader, size, node))
    return tasks


def ray_cluster(tasks: Sequence[FileTask], options, jobs: int, address: str | None) -> list[Profile | DroppedInput]:
    """One Ray task per file (on its node when it is node-local); the driver merges."""
    ray = _ray()
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    progress = options.progress
    opts = replace(options, progress=None)
    remote = ray.remote(num_cpus=1, max_retries=0)(read_one)
    refs = []
    for t in tasks:
        strategy = NodeAffinitySchedulingStrategy(t.node, soft=False) if t.node else "DEFAULT"
        refs.append(remote.options(scheduling_strategy=strategy).remote(t.path, t.reader, opts, False))
    pending, out = list(refs), {}
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        for ref in done:
            i = refs.index(ref)
            try:
                out[i] = ray.get(ref)
            except ray.exceptions.RayError as e:  # the task's worker died (Ray's memory monitor, a lost node)
                reason = str(e).strip().splitlines()[0][:200] if str(e).strip() else ""
                raise TraceError(
                    tasks[i].path,
                    f"the Ray task reading it failed ({type(e).__name__}" + (f": {reason}" if reason else "") + ")",
                ) from None
            if progress:
                progress(tasks[i].size)
    return [_unwrap(out[i]) for i in range(len(tasks))]


class RaySession:
    """Ray for one read: the running instance if there is one, else ``ray.init`` (at
    ``address``, else ``RAY_ADDRESS``, else a new local instance) and shut down after."""

    def __init__(self, address: str | None, jobs: int):
        self.address, self.jobs, self.started = address, jobs, False

    def __enter__(self):
        ray = _ray()
        if not ray.is_initialized():
            kw: dict = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
            address = self.address or os.environ.get("RAY_ADDRESS")
            if address:
                kw["address"] = address
            else:
                kw["num_cpus"] = self.jobs
            try:
                ray.init(**kw)
            except Exception as e:  # a cluster that cannot be reached is one line
                raise XpuProfilerError(f"cannot start or reach Ray ({type(e).__name__}: {e})") from None
            self.started = True
        return ray

    def __exit__(self, *exc):
        if self.started:
            _ray().shutdown()


Executor = Callable[[Sequence[FileTask], object, int, "str | None"], "list[Profile | DroppedInput]"]
EXECUTORS: dict[str, Executor] = {"serial": serial, "process": process_pool, "ray": ray_cluster}


def parse_executor(spec: str | None) -> tuple[str, str | None]:
    """``serial``, ``process``, ``ray``, ``ray://HOST:PORT`` (or ``auto``/None) → (name, address)."""
    if spec is None or spec == "auto":
        return "auto", None
    if spec.startswith("ray://"):
        return "ray", spec
    if spec in EXECUTORS:
        return spec, None
    raise XpuProfilerError(f"unknown engine {spec!r} (known: auto, {', '.join(EXECUTORS)}, ray://HOST:PORT)")


def default_jobs(n_files: int) -> int:
    return max(1, min(os.cpu_count() or 1, n_files, MAX_JOBS))
