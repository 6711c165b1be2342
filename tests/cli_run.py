"""The command line as the tests run it: ``run`` in a child process (what a user's shell does),
``invoke`` in this process through click (fast; a Python exception that escapes the command is a
traceback, and fails the test)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner, Result

from xpu_profiler.cli.main import main

ROOT = Path(__file__).resolve().parents[1]


def run(
    *args, cwd: Path = ROOT, env: dict | None = None, extra_env: dict | None = None, timeout: float | None = None, **kw
) -> subprocess.CompletedProcess:
    """``python -m xpu_profiler ARGS`` in a child process: this checkout's package whatever the
    ``cwd``; ``env``: the whole environment (this process's by default), ``extra_env`` set over it."""
    environ = dict(os.environ if env is None else env)
    environ.update(extra_env or {})
    if Path(cwd).resolve() != ROOT:
        environ["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-m", "xpu_profiler", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=environ,
        timeout=timeout,
        **kw,
    )


def invoke(*args) -> Result:
    """The real CLI in this process; a Python exception that escaped it (a traceback) fails."""
    res = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=True)
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise AssertionError(f"traceback: {res.exception!r}\n{res.stdout}\n{res.stderr}") from res.exception
    return res


def one_line_error(res) -> str:
    """The one line a refused input gives (exit 2, nothing on stdout but that line's stream)."""
    err = res.stderr.strip()
    code = res.returncode if isinstance(res, subprocess.CompletedProcess) else res.exit_code
    assert code == 2, (code, res.stdout, err)
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err
