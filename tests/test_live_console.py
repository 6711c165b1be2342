"""The live command's terminal: vLLM's output into vllm.log, the terminal's fds given back,
and a failing engine explained from the log. (A real engine that fails in its own processes,
run with -v, is tests/test_live_faults.py's ``block_size=7`` case.)"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from xpu_profiler.live.console import Console, why


def test_capture_sends_this_process_and_its_children_to_the_log_and_gives_the_fds_back(tmp_path, capfd):
    log = tmp_path / "vllm.log"
    before = [os.fstat(fd) for fd in (1, 2)]
    con = Console(log)
    with con.capture():
        os.write(1, b"from this process, fd 1\n")
        print("from Python's stderr", file=sys.__stderr__, flush=True)  # (pytest replaces sys.stderr)
        subprocess.run(
            [sys.executable, "-c", "import sys; print('child out'); print('child err', file=sys.stderr)"], check=True
        )
        con.say("our line")
        con.echo("our result")
    after = [os.fstat(fd) for fd in (1, 2)]
    assert [(s.st_dev, s.st_ino) for s in after] == [(s.st_dev, s.st_ino) for s in before]
    assert log.read_text().splitlines() == ["from this process, fd 1", "from Python's stderr", "child out", "child err"]
    out, err = capfd.readouterr()
    assert "our result" in out and "xpu_profiler: our line" in err
    assert "child" not in out + err and "from this process" not in out + err


def test_a_failure_inside_capture_shows_what_the_log_says(tmp_path, capfd):
    log = tmp_path / "vllm.log"
    con = Console(log)
    with pytest.raises(RuntimeError):
        with con.capture():
            with con.stage("starting vLLM"):
                sys.__stderr__.write(
                    "(EngineCore pid=7) INFO 12-02 20:27:37 [core.py:1] all fine\n"
                    "(EngineCore pid=7) ERROR 12-02 20:27:37 [core.py:1510] Traceback (most recent "
                    "call last):\n"
                    '(EngineCore pid=7) ERROR 12-02 20:27:37 [core.py:1510]   File "x.py", line 3\n'
                    "(EngineCore pid=7) ERROR 12-02 20:27:37 [core.py:1510] ValueError: no KV \x1b[31m\n"
                )
                sys.__stderr__.flush()
                raise RuntimeError("Engine core initialization failed. See root cause above.")
    err = capfd.readouterr().err
    assert f"{log} says:" in err and "(EngineCore pid=7) ValueError: no KV \\x1b[31m" in err
    assert "all fine" not in err and 'File "x.py"' not in err and "starting vLLM" in err and "failed" in err
    assert why(log) == ["(EngineCore pid=7) ValueError: no KV \\x1b[31m"]
