"""``xpu_profiler record --url URL --steps N | --seconds S``: a torch.profiler window on a
running server, without restarting it (through the plugin; through vLLM's own
profiler: ``record_vllm``).

The server runs with ``XPU_PROFILER_DIR`` (the plugin records its steps there in file
mode). This command finds that directory (``locate``), drops a window request into its
``control/`` directory and waits while the EngineCore tags the window's steps and the
workers trace exactly those (``vllm/windows``, ``vllm/control_files``). Once every
process has answered, it reads what the record files gained since the request (the
window's steps, requests and counters; the traces the workers wrote), assembles them
with ``assemble.build_profile`` like every live path, and writes the report.
"""

from __future__ import annotations

import json
import time
import urllib.error
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import XpuProfilerError
from ..core.profile import K_ANNOTATION, Profile
from ..core.records import STEP_RANGE, read_record_files, record_sizes
from ..core.run_info import RunInfo
from ..readers.records import assemble
from . import locate
from .console import Console
from .http import fetch
from .vllm import control_files

POLL_S = 0.25
#: the longest the window may wait or last (a year): beyond it, a number is no setting of a run
MAX_SECONDS = 365 * 24 * 3600.0


def _get_json(url: str) -> Any:
    try:
        return json.loads(fetch(url)[1] or b"{}")
    except (OSError, ValueError, urllib.error.URLError):
        return None


def check_server(base: str) -> str | None:
    """Raise when nothing answers at ``base``; the served model's name, when it says one."""
    try:
        status, _ = fetch(base + "/health")
    except urllib.error.HTTPError as e:
        raise XpuProfilerError(f"the server at {base} is not healthy (/health answered {e.code})") from None
    except (OSError, urllib.error.URLError) as e:
        raise XpuProfilerError(f"no vLLM server answers at {base} ({getattr(e, 'reason', e)})") from None
    if status != 200:
        raise XpuProfilerError(f"the server at {base} is not healthy (/health answered {status})")
    models = _get_json(base + "/v1/models")
    data = models.get("data") if isinstance(models, dict) else None  # (an odd answer names no model)
    first = data[0] if isinstance(data, list) and data else None
    return str(first.get("id")) if isinstance(first, dict) and first.get("id") is not None else None


class Window:
    """One window request and what the server's processes answered."""

    def __init__(self, srv: locate.Server, steps: int | None, seconds: float | None, level: str, timeout: float):
        self.srv, self.steps, self.seconds, self.level = srv, steps, seconds, level
        self.id = uuid.uuid4().hex[:12]
        assert srv.record_dir is not None  # asked of a server that records with the plugin only
        self.dir: Path = srv.record_dir
        self.since = record_sizes(self.dir)
        self.created = time.time_ns()
        self.expires = self.created + int(timeout * 1e9)
        self.engines: list[dict] = []
        self.workers: list[dict] = []

    def request(self, cancel: bool = False) -> None:
        control_files.write_json(
            control_files.request_path(self.dir, self.id),
            {
                "id": self.id,
                "steps": self.steps,
                "seconds": self.seconds,
                "level": self.level,
                "created_ns": self.created,
                "expires_ns": self.expires,
                "cancel": cancel,
            },
        )

    def read_answers(self) -> None:
        answers = control_files.answers(self.dir, self.id)
        engines = [a for a in answers if a.get("role") == "engine"]
        mine = [a for a in engines if self.srv.pid and str(a.get("run", "")).startswith(f"{self.srv.pid}-")]
        self.engines = mine or engines  # a server of another user or container: its runs say no pid of ours
        runs = {a.get("run") for a in self.engines}
        self.workers = [a for a in answers if a.get("role") == "worker" and a.get("run") in runs]

    @property
    def failure(self) -> str | None:
        """Why a worker could not trace the window, when one says so."""
        return next((str(w.get("reason")) for w in self.workers if w.get("state") == "failed"), None)

    @property
    def traced(self) -> dict[int, list[int]]:
        """Data-parallel index → the step ids its workers traced (each DP engine counts
        its own steps)."""
        out: dict[int, set[int]] = {}
        for w in self.workers:
            out.setdefault(int(w.get("dp_rank") or 0), set()).update(int(s) for s in w.get("steps") or ())
        return {dp: sorted(s) for dp, s in sorted(out.items()) if s}

    @property
    def traced_steps(self) -> list[int]:
        return sorted({s for steps in self.traced.values() for s in steps})

    def complete(self) -> bool:
        if not self.engines:
            return False
        if len(self.workers) < sum(int(e.get("world_size") or 1) for e in self.engines):
            return False
        traced = self.traced
        if not traced:
            return False
        if self.steps and not all(e.get("state") == "done" for e in self.engines):
            return False
        return all(
            int(e.get("flushed_step", -1)) >= traced.get(int(e.get("dp_rank") or 0), [-1])[-1] for e in self.engines
        )

    def status(self) -> str:
        if not self.engines:
            return "waiting for the server's next step"
        tagged = sum(int(e.get("tagged") or 0) for e in self.engines)
        if self.steps:
            return f"{tagged}/{self.steps} steps" + (", writing the trace" if tagged >= self.steps else "")
        return f"{tagged} steps"


VIAS = ("auto", "plugin", "vllm")


@dataclass(frozen=True)
class RecordOptions:
    """The record command's options, as the command line gives them (see ``cli/record_cmd.py``).

    ``via``: "plugin" (the plugin's control files in the server's XPU_PROFILER_DIR),
    "vllm" (the server's own /start_profile, see ``record_vllm``), "auto": the plugin
    when the server records with it, else vLLM's profiler when the server has one."""

    url: str
    steps: int | None = None
    seconds: float | None = None
    record_dir: str | None = None
    output: str | Path = "xpu_profiler_out"
    detail_level: str = "standard"
    timeout: float = 300.0
    formats: Sequence[str] | None = None
    quiet: bool = False
    via: str = "auto"
    trace_dir: str | None = None


def record_from_cli(opts: RecordOptions) -> int:
    """The record command; returns the exit code (0: the report is written). Through the
    plugin or vLLM's own profiler, as ``opts.via`` says (``RecordOptions``)."""
    from .. import analysis

    _check_options(opts)
    fmts = list(opts.formats or analysis.DEFAULT_FORMATS)
    # bad formats or outputs before any waiting
    analysis.check_outputs(opts.output, fmts, [opts.record_dir, opts.trace_dir])
    srv = locate.find_server(opts.url, opts.record_dir)
    model = check_server(srv.url)
    con = Console(quiet=opts.quiet)
    profiler_dir = Path(opts.trace_dir) if opts.trace_dir else srv.profiler_dir
    if opts.via == "vllm" or (opts.via == "auto" and srv.record_dir is None and profiler_dir is not None):
        return _record_via_vllm(opts, srv, model, profiler_dir, fmts, con)
    if srv.record_dir is None:
        raise locate.no_way_to_record(srv)
    return _record_via_plugin(opts, srv, model, fmts, con)


def _check_options(opts: RecordOptions) -> None:
    steps, seconds = opts.steps, opts.seconds
    if (steps is None) == (seconds is None):
        raise XpuProfilerError("give the window as --steps N or --seconds S (one of them)")
    if steps is not None and steps < 1:
        raise XpuProfilerError("--steps must be at least 1")
    if seconds is not None and not 0 < seconds <= MAX_SECONDS:
        raise XpuProfilerError(f"--seconds must be more than 0 and at most {MAX_SECONDS:g} (a year)")
    if not 0 < opts.timeout <= MAX_SECONDS:  # (NaN too: no comparison holds for it)
        raise XpuProfilerError(f"--timeout must be more than 0 and at most {MAX_SECONDS:g} (a year)")
    if opts.via not in VIAS:
        raise XpuProfilerError(f"--via {opts.via!r}: choose from {', '.join(VIAS)}")


def _record_via_vllm(
    opts: RecordOptions, srv: locate.Server, model: str | None, profiler_dir: Path | None, fmts: list[str], con: Console
) -> int:
    """A window of vLLM's own profiler (``record_vllm``), analysed as the traces it wrote."""
    from .. import analysis

    steps = opts.steps
    if profiler_dir is None:
        raise XpuProfilerError(
            f"cannot tell where the server at {srv.url} writes its profiler's traces: "
            f"pass --trace-dir (its --profiler-config torch_profiler_dir)"
        )
    from .record_vllm import server_profiler_window

    con.say(f"server {srv.url}" + (f" (pid {srv.pid})" if srv.pid else "") + f", vLLM's traces in {profiler_dir}")
    files = server_profiler_window(srv, profiler_dir, steps, opts.seconds, opts.timeout, con)
    with con.stage("export"):
        prof, summary = analysis.analyze(files)
        prof.run["server"] = srv.url
        if model is not None:  # the server named it
            prof.run["model"] = model
        if steps and summary.totals.steps != steps:
            summary.warnings.append(
                f"vLLM's profiler traced {summary.totals.steps} steps that schedule tokens "
                f"of the {steps} iterations asked for (it counts empty ones too)"
            )
        written = analysis.export(prof, summary, opts.output, fmts, [profiler_dir, *files])
    con.results(summary, written)
    return 0


def _record_via_plugin(
    opts: RecordOptions, srv: locate.Server, model: str | None, fmts: list[str], con: Console
) -> int:
    """A window of the plugin: requested in the server's control directory, waited for, then read
    from the record files and the traces the workers wrote."""
    from .. import analysis

    win = Window(srv, opts.steps, opts.seconds, opts.detail_level, opts.timeout)
    what = f"the next {opts.steps} steps" if opts.steps else f"{opts.seconds:g} s of steps"
    con.say(f"server {srv.url}" + (f" (pid {srv.pid})" if srv.pid else "") + f", records in {srv.record_dir}")
    win.request()
    _wait(win, con, what, opts.timeout)
    with con.stage("export"):
        prof = window_profile(win, model)
        summary = analysis.summarize(prof)
        written = analysis.export(prof, summary, opts.output, fmts, [win.dir])
    control_files.remove_window(win.dir, win.id)
    con.results(summary, written)
    return 0


def _wait(win: Window, con: Console, what: str, timeout: float) -> None:
    """Waits until every process has answered the window; cancels it on any failure, Ctrl-C or
    the timeout."""
    srv = win.srv
    try:
        with con.stage(f"tracing {what}", status=win.status):
            while True:
                win.read_answers()
                if win.failure:
                    raise XpuProfilerError(f"the server could not trace the window: {win.failure}")
                if win.complete():
                    break
                if time.time_ns() > win.expires:
                    raise TimeoutError
                time.sleep(POLL_S)
    except BaseException as e:
        win.request(cancel=True)  # the engine stops tagging steps; the workers end the window
        if not isinstance(e, TimeoutError):
            raise
        if not win.engines:
            raise XpuProfilerError(
                f"no engine took the window request within {timeout:g} s: the server ran no step (send it requests), "
                f"or it does not record in {srv.record_dir}"
            ) from None
        raise XpuProfilerError(
            f"the window did not complete within {timeout:g} s ({win.status()}); it was "
            f"cancelled (are requests still flowing?)"
        ) from None


def window_profile(win: Window, model: str | None) -> Profile:
    """The Profile of a completed window: its steps from the records appended since the
    request, and the traces its workers wrote."""
    batches = read_record_files(win.dir, since=win.since, growing=True)
    engines = {int(e["pid"]) for e in win.engines}
    pids = engines | {int(w["pid"]) for w in win.workers}
    files = {w["file"] for w in win.workers}
    mine = [
        dict(b, torch_files=[f for f in b.get("torch_files") or () if f in files])
        for b in batches
        if b.get("pid") in pids or b.get("ppid") in engines or not b.get("pid")
    ]
    per_dp = win.traced
    steps = win.traced_steps
    window: dict[str, Any] = {
        "id": win.id,
        "steps_asked": win.steps,
        "seconds_asked": win.seconds,
        "first_step": steps[0],
        "last_step": steps[-1],
        "steps": sum(map(len, per_dp.values())),
        "traces": sorted(files),
    }
    if len(per_dp) > 1:  # data-parallel engines: each traced its own steps
        window["engines"] = {
            str(dp): {"first_step": s[0], "last_step": s[-1], "steps": len(s)} for dp, s in per_dp.items()
        }
    run: RunInfo = {
        "server": win.srv.url,
        "detail_level": win.level,
        "start_time_ns": win.created,
        "window": window,
    }
    if model is not None:  # the server named it
        run["model"] = model
    prof = assemble.build_profile(mine, steps=[(dp, s) for dp, ss in per_dp.items() for s in ss], run=run)
    prof.run["sources"] = [{"path": str(win.dir), "format": "xpu_profiler records"}]
    for dp, ss in per_dp.items():
        engine = f" of engine dp{dp}" if len(per_dp) > 1 else ""
        if win.steps and ss != list(range(ss[0], ss[0] + win.steps)):
            prof.warn(
                f"the window{engine} holds steps {ss[0]}..{ss[-1]} ({len(ss)} of them), not the "
                f"{win.steps} consecutive steps asked for"
            )
    traced = traced_step_ids(prof)
    if traced != steps:
        prof.warn(f"the torch trace holds {len(traced)} of the window's {len(steps)} steps")
    return prof


def traced_step_ids(prof: Profile) -> list[int]:
    """The step ids of the ``xpu_step#N`` ranges in a profile's trace events."""
    ev = prof.events
    names = prof.strings.lookup(ev["name"][ev["kind"] == K_ANNOTATION]) if len(ev) else []
    return sorted({int(m.group(1)) for n in set(names) if (m := STEP_RANGE.match(n))})
