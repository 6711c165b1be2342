"""The live command's one-line errors. (The command end to end on the CPU, exactly as
`./dev demo` runs it, is tests/test_findings_live.py's ``demo`` run.)"""

from __future__ import annotations

import pytest
from cli_run import run
from conftest import vllm_env


def _cli(args, env, **kw):
    return run(*args, env=env, **kw)


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--model", "tiny-llama", "--device", "kunlun_p800"], "kunlun_p800"),
        (["--model", "tiny-llama", "--device", "cuda"], "cuda"),
        (["--model", "tiny-nope", "--device", "cpu"], "tiny-nope"),
        (["--model", "/no/such/model/dir", "--device", "cpu"], "/no/such/model/dir"),
        (["--model", "tiny-llama", "--device", "cpu", "--metrics", "latency"], "latency"),
        (["--model", "tiny-llama", "--device", "cpu", "--engine-arg", "novalue"], "KEY=VALUE"),
    ],
)
def test_bad_input_is_one_line_exit_2(tmp_path, args, needle):
    r = _cli([*args, "--output", str(tmp_path / "r.html")], vllm_env(tmp_path / "cache"), timeout=120)
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, r.stderr
    assert "Traceback" not in r.stderr and needle in lines[0]
    assert not list(tmp_path.glob("r.*"))
