"""The Python API: profile what a ``vllm.LLM`` you already have does.

    with xpu_profiler.profile(llm, detail_level="standard") as prof:
        llm.generate(prompts, params)
    prof.summary(); prof.export("report.html"); prof.profile

``start`` switches the step hooks (and, at ``standard``/``comprehensive`` level,
torch.profiler in the workers) on through vLLM's own RPC, so it works with the
default multi-process layout as well as with a one-process engine, and checks that
every process got all its hooks (else ``HookError``, and the hooks are off again).
``stop`` collects every process's records and assembles the Profile.
"""

from __future__ import annotations

import importlib
import platform
import shutil
import socket
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..core.errors import XpuProfilerError
from ..core.profile import Profile
from ..core.records import Batch, read_record_files
from ..core.run_info import RunInfo
from ..readers.records import assemble
from . import control, options
from .memory import HostSampler
from .vllm import compat, compat_llm

if TYPE_CHECKING:
    from ..findings import FindingsConfig
    from ..knowledge.devices import DeviceSpec
    from ..summary import Summary


class Profiler:
    def __init__(
        self,
        llm,
        metrics: str | Iterable[str] | None = None,
        detail_level: str = "standard",
        warmup_steps: int = 0,
        profile_steps: int | None = None,
        trace_dir: str | Path | None = None,
        keep_traces: bool = False,
        run_info: RunInfo | None = None,
        findings_config: FindingsConfig | None = None,
        specs: Mapping[str, DeviceSpec] | None = None,
    ):
        self.llm = llm
        self.metrics = options.parse_metrics(metrics)
        self.detail_level = options.check_level(detail_level)
        self.warmup_steps = max(0, int(warmup_steps or 0))
        self.profile_steps = profile_steps
        self._own_dir = trace_dir is None
        self.trace_dir = Path(trace_dir) if trace_dir else Path(tempfile.mkdtemp(prefix="xpu_profiler."))
        self.keep_traces = keep_traces
        self.run_info: RunInfo = RunInfo(**run_info) if run_info else {}  # a copy
        self.findings_config, self.specs = findings_config, specs  # what the summary judges with
        self.profile: Profile | None = None
        self._summary: Summary | None = None
        self.incomplete: str | None = None
        self.records: list[Batch] = []
        self.t_start: int | None = None
        self.t_end: int | None = None
        self._sampler: HostSampler | None = None
        self._started = False
        #: where the engine processes also flush records (file mode); read at stop
        self.record_dir: Path | None = None

    @property
    def torch_enabled(self) -> bool:
        return self.detail_level != "basic" and "execution_time" in self.metrics

    # -- control --------------------------------------------------------------------
    def start(self) -> Profiler:
        error, _ = compat.release_check()  # a release the hooks cannot hold: one line, before anything
        if error:
            raise XpuProfilerError(error)
        cfg: dict[str, Any] = {"metrics": list(self.metrics)}
        wcfg = dict(cfg)
        if self.torch_enabled:
            wcfg["torch"] = {
                "dir": str(self.trace_dir / "torch"),
                "first": self.warmup_steps,
                "count": int(self.profile_steps or 0),
                "level": self.detail_level,
            }
        self.t_start = time.time_ns()
        self.engine_info = control.call_engine(self.llm, "start", cfg)
        self.worker_info = control.call_workers(self.llm, "start", wcfg)
        try:
            control.check_started([self.engine_info, *self.worker_info])
        except control.HookError:
            self._switch_off()
            raise
        if "memory_usage" in self.metrics:
            self._sampler = HostSampler().start()
        self._started = True
        return self

    def _switch_off(self) -> None:
        """After a failed start: hooks off everywhere, nothing kept."""
        for call in (control.call_workers, control.call_engine):
            try:
                call(self.llm, "stop", {"files_off": self.record_dir is not None})
            except Exception:  # already failing with the reason that matters; the engine may be gone
                continue
        if self._own_dir:
            shutil.rmtree(self.trace_dir, ignore_errors=True)

    def stop(self, incomplete: str | None = None, ask_engine: bool = True, t_end: int | None = None) -> Profile:
        """Collect and assemble. ``ask_engine=False`` (the engine's processes are ended or
        dying: a Ctrl-C reached them too, one of them died) reads only what they flushed
        to the record files; the caller ends the engine first, so that every process has
        written its last batch. A dead engine is never asked. ``t_end``: where the
        profiled window ended, when that was before this call."""
        if not self._started:
            raise XpuProfilerError("the profiler was not started")
        self._started = False
        self.t_end = t_end or time.time_ns()
        if incomplete:
            self.incomplete = incomplete
        if ask_engine and compat_llm.engine_dead(self.llm):
            ask_engine = False
            if not self.incomplete:
                self.incomplete = "an engine process died"
        errors = self._collect() if ask_engine else []
        if self.record_dir is not None:
            self.records += read_record_files(self.record_dir)
        samples = self._sampler.stop() if self._sampler else []
        self.profile = assemble.build_profile(
            self.records,
            t_start=self.t_start,
            t_end=self.t_end,
            metrics=self.metrics,
            extra_counters=samples,
            run={"detail_level": self.detail_level, **self.run_info},
        )
        for e in errors:
            self.profile.warn(f"could not collect from the {e}")
            if not self.incomplete:
                self.incomplete = "records could not be collected from every engine process"
        self._finish_run_info()
        return self.profile

    def restart_stop(self) -> None:
        """A ``stop()`` cut short (a Ctrl-C inside it): the next one starts over, from the
        records collected so far."""
        self._started = True

    def _collect(self) -> list[str]:
        """Stop recording everywhere and take the records; what failed, one line per side."""
        errors = []
        arg = {"files_off": True} if self.record_dir is not None else None
        for what, call in (
            ("workers", lambda: control.call_workers(self.llm, "stop", arg)),
            ("engine", lambda: [control.call_engine(self.llm, "stop", arg)]),
        ):
            try:
                self.records += [r for r in call() if isinstance(r, dict)]
            except XpuProfilerError:
                if not self.incomplete:
                    raise
                errors.append(f"{what}: the xpu_profiler plugin did not answer")
            except Exception as e:  # a dead engine: keep what the others gave
                errors.append(f"{what}: {type(e).__name__}: {e}")
        return errors

    def _finish_run_info(self) -> None:
        p = self.profile
        assert p is not None and self.t_start is not None  # stop() made it, after start()
        p.run.setdefault("start_time_ns", self.t_start)
        p.run.setdefault("host", socket.gethostname())
        p.run.setdefault("versions", versions())
        p.run.setdefault("engine", compat_llm.engine_config(self.llm))
        if "model_config" not in p.run and (cfg := compat_llm.model_config(self.llm)):
            p.run["model_config"] = cfg  # the layers' count and types (summary: layers)
        if "device" not in p.run:  # the Python API: the device this process runs on
            _set_device(p.run)
        p.run["incomplete"] = bool(self.incomplete)
        if self.incomplete:
            p.run["incomplete_reason"] = self.incomplete
        if not self.keep_traces and self._own_dir:
            shutil.rmtree(self.trace_dir, ignore_errors=True)

    def __enter__(self) -> Profiler:
        return self.start()

    def __exit__(self, exc_type, exc, tb) -> Literal[False]:
        if self._started:
            reason = None
            if exc_type is KeyboardInterrupt:
                reason = "interrupted (Ctrl-C)"
            elif exc_type is not None:
                reason = f"{exc_type.__name__}: {exc}"
            try:
                self.stop(incomplete=reason)
            except Exception:
                if exc_type is None:
                    raise
        return False

    # -- results ----------------------------------------------------------------------
    def summary(self) -> Summary:
        if self.profile is None:
            raise XpuProfilerError("no profile yet: use the profiler as a context manager first")
        if self._summary is None:
            from .. import analysis

            self._summary = analysis.summarize(self.profile, findings_config=self.findings_config, specs=self.specs)
        return self._summary

    def export(self, path: str | Path, formats: Sequence[str] | None = None) -> dict[str, Path]:
        """Write the trace/summary/report; ``path`` is a directory or a named output file."""
        from .. import analysis

        fmts = list(formats) if formats else list(analysis.DEFAULT_FORMATS)
        summary = self.summary()  # raises without a profile
        assert self.profile is not None
        return analysis.export(self.profile, summary, path, fmts)


def versions() -> dict:
    """Software versions, for the run metadata."""
    out = {"python": platform.python_version()}
    v = compat.vllm_version()
    if v != "not installed":
        out["vllm"] = v
    for mod in ("torch", "vllm_kunlun"):
        try:
            out[mod] = str(getattr(importlib.import_module(mod), "__version__", "?"))
        except ImportError:
            pass
    from ..core.version import __version__

    out["xpu_profiler"] = __version__
    return out


def _set_device(run: RunInfo) -> None:
    """The run's device, its name and the key of its spec (for MFU and bandwidth)."""
    from ..knowledge import devices

    try:
        info = devices.detect("auto")
    except Exception as e:  # a broken driver must not lose the profile
        run.setdefault("device_detect_error", f"{type(e).__name__}: {e}")
        return
    run.update({"device": info.kind, "device_name": info.name, "device_info": info.to_json()})


def profile(llm, metrics: str | Iterable[str] | None = None, detail_level: str = "standard", **kwargs) -> Profiler:
    """Profile what ``llm`` (a ``vllm.LLM``) does inside the ``with`` block."""
    return Profiler(llm, metrics=metrics, detail_level=detail_level, **kwargs)
