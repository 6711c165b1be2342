"""Bad outputs: every output-side OS error is one line naming the path and the OS's reason,
exit 2, no traceback, and the outputs already written stay; no output replaces an input;
every output is written whole (a temporary file renamed into place), so a failure or an
interrupt leaves the older file at its path and no temporary file behind; names and paths
with control characters never reach the terminal raw.

Inputs are real: a trace made by ``bench/gen_trace.generate``, analysed by the real CLI
(in this process through click's runner where that is enough; in a child process where
the contract is the process's: signals, resource limits, tracebacks).
"""

from __future__ import annotations

import errno
import gzip
import hashlib
import json
import os
import re
import resource
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from cli_run import invoke as cli
from hold import driver, run_module, wait_for_hold

from xpu_profiler.core import atomic_write
from xpu_profiler.testing.gen_trace import generate

ROOT = Path(__file__).resolve().parents[1]

IS_ROOT = os.geteuid() == 0
LONG = "n" * 300  # longer than any file system's name limit (255)


# ---------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------


def child(
    *args, cwd: Path, driver: str | None = None, preexec=None, env: dict | None = None, timeout: float = 60
) -> subprocess.CompletedProcess:
    """The CLI in a child process (``driver``: Python run first, in that process)."""
    code = (driver or "") + "\nfrom xpu_profiler.cli.main import main\nmain(sys.argv[1:], prog_name='xpu_profiler')\n"
    e = dict(os.environ, PYTHONPATH=str(ROOT), **(env or {}))
    return subprocess.run(
        [sys.executable, "-c", "import sys\n" + code, *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=preexec,
        env=e,
    )


def one_error_line(stderr: str, *needles: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("xpu_profiler: error: "), lines[0]
    assert "Traceback" not in stderr
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


def sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def litter(folder: Path) -> list[str]:
    """Temporary files of ours left in ``folder``."""
    return sorted(n for n in os.listdir(folder) if n.startswith(".") and n.endswith(atomic_write.TEMP_SUFFIX))


def wrote(stdout: str) -> dict[str, str]:
    out = {}
    for ln in stdout.splitlines():
        if ln.startswith("wrote "):
            kind, path = ln[len("wrote ") :].split(None, 1)
            out[kind] = path
    return out


# ---------------------------------------------------------------------------------------
# fixtures: a real trace, and real outputs of it
# ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("bad_outputs")
    generate(3000, str(d / "run.json"))
    return d


@pytest.fixture(scope="module")
def trace(work) -> Path:
    return work / "run.json"


@pytest.fixture(scope="module")
def summary_file(work, trace) -> Path:
    """The summary.json of the trace, written by the real CLI."""
    res = cli("analyze", trace, "-o", work / "first", "--format", "json", "-q")
    assert res.exit_code == 0, res.stderr
    return work / "first" / "summary.json"


# ---------------------------------------------------------------------------------------
# 1. OS errors on the output side: one line with the path and the OS's reason, exit 2
# ---------------------------------------------------------------------------------------


def _parent_is_file(tmp: Path) -> tuple[str, str]:
    (tmp / "afile").write_text("x")
    return str(tmp / "afile" / "out"), "Not a directory"


def _named_parent_is_file(tmp: Path) -> tuple[str, str]:
    (tmp / "afile").write_text("x")
    return str(tmp / "afile" / "report.html"), "Not a directory"


def _report_is_directory(tmp: Path) -> tuple[str, str]:
    (tmp / "out" / "report.html").mkdir(parents=True)
    return str(tmp / "out"), "Is a directory"


def _trace_is_directory(tmp: Path) -> tuple[str, str]:
    (tmp / "out" / "trace.json.gz").mkdir(parents=True)
    return str(tmp / "out"), "Is a directory"


def _summary_is_fifo(tmp: Path) -> tuple[str, str]:
    (tmp / "out").mkdir()
    os.mkfifo(tmp / "out" / "summary.json")
    return str(tmp / "out"), "not a regular file"


def _summary_links_to_device(tmp: Path) -> tuple[str, str]:
    (tmp / "out").mkdir()
    os.symlink("/dev/full", tmp / "out" / "summary.json")
    return str(tmp / "out"), "not a regular file"


def _under_proc(tmp: Path) -> tuple[str, str]:
    return "/proc/xpu_profiler_out", "No such file or directory"


def _named_under_proc(tmp: Path) -> tuple[str, str]:
    return "/proc/report.html", "No such file or directory"


def _under_sys(tmp: Path) -> tuple[str, str]:  # root cannot create files in sysfs either
    return "/sys/xpu_profiler_out", "Operation not permitted"


def _dir_name_too_long(tmp: Path) -> tuple[str, str]:
    return str(tmp / LONG), "File name too long"


def _file_name_too_long(tmp: Path) -> tuple[str, str]:
    return str(tmp / f"{LONG}.html"), "File name too long"


def _read_only_dir(tmp: Path) -> tuple[str, str]:
    (tmp / "ro").mkdir()
    os.chmod(tmp / "ro", 0o555)
    return str(tmp / "ro" / "out"), "Permission denied"


OS_ERRORS = {
    "parent_is_file": _parent_is_file,
    "named_parent_is_file": _named_parent_is_file,
    "report_html_is_directory": _report_is_directory,
    "trace_is_directory": _trace_is_directory,
    "summary_is_fifo": _summary_is_fifo,
    "summary_links_to_dev_full": _summary_links_to_device,
    "under_proc": _under_proc,
    "named_under_proc": _named_under_proc,
    "under_sys": _under_sys,
    "dir_name_too_long": _dir_name_too_long,
    "file_name_too_long": _file_name_too_long,
    "read_only_dir": _read_only_dir,
}


def _os_case(name: str, tmp: Path) -> tuple[str, str]:
    if name == "read_only_dir" and IS_ROOT:
        pytest.skip("root writes into a read-only directory; /sys stands in for it")
    if name == "under_sys" and not IS_ROOT:
        pytest.skip("as a user, /sys is the read-only-directory case")
    return OS_ERRORS[name](tmp)


def _no_output_written(tmp: Path) -> None:
    out = tmp / "out"
    if out.is_dir():  # only what the case put there
        names = {n for n in os.listdir(out)} - {"report.html", "trace.json.gz", "summary.json"}
        assert not names, names


@pytest.mark.parametrize("case", sorted(OS_ERRORS))
def test_analyze_output_os_error(case: str, trace: Path, tmp_path: Path) -> None:
    output, reason = _os_case(case, tmp_path)
    res = cli("analyze", trace, "-o", output, "-q")
    assert res.exit_code == 2, (res.stdout, res.stderr)
    line = one_error_line(res.stderr, reason)
    assert os.path.dirname(output.rstrip("/"))[:40] in line  # the path is named
    assert not wrote(res.stdout)
    _no_output_written(tmp_path)


@pytest.mark.parametrize(
    "case",
    ["parent_is_file", "report_html_is_directory", "under_proc", "file_name_too_long", "summary_links_to_dev_full"],
)
def test_diff_output_os_error(case: str, summary_file: Path, tmp_path: Path) -> None:
    output, reason = _os_case(case, tmp_path)
    if case == "report_html_is_directory":  # diff writes diff.html
        (tmp_path / "out" / "diff.html").mkdir()
    if case == "summary_links_to_dev_full":
        os.symlink("/dev/full", tmp_path / "out" / "diff.json")
    res = cli("diff", summary_file, summary_file, "-o", output, "-q")
    assert res.exit_code == 2, (res.stdout, res.stderr)
    one_error_line(res.stderr, reason)
    assert not wrote(res.stdout)
    assert os.path.realpath("/dev/full") == "/dev/full" and Path("/dev/full").is_char_device()


@pytest.mark.parametrize("case", ["parent_is_file", "report_html_is_directory", "dir_name_too_long"])
def test_record_output_refused_before_contacting_the_server(case: str, tmp_path: Path) -> None:
    output, reason = _os_case(case, tmp_path)
    with socket.socket() as server:  # a listening port: a connection to it would wait in its queue
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        server.setblocking(False)
        url = f"http://127.0.0.1:{server.getsockname()[1]}"
        res = cli("record", "--url", url, "--steps", "1", "-o", output)
        assert res.exit_code == 2, (res.stdout, res.stderr)
        one_error_line(res.stderr, reason)
        with pytest.raises(BlockingIOError):
            server.accept()  # nobody connected


@pytest.mark.parametrize("case", ["named_parent_is_file", "file_name_too_long", "named_under_proc"])
def test_live_output_refused_before_the_engine_starts(case: str, tmp_path: Path, monkeypatch) -> None:
    output, reason = _os_case(case, tmp_path)
    monkeypatch.setenv("XPU_PROFILER_CACHE", str(tmp_path / "cache"))
    res = cli("--model", "tiny-llama", "--device", "cpu", "--output", output, "--quiet")
    assert res.exit_code == 2, (res.stdout, res.stderr)
    one_error_line(res.stderr, reason)
    assert res.stdout == ""


# ---------------------------------------------------------------------------------------
# 2. a full disk after the first outputs: those stay, the older report survives
# ---------------------------------------------------------------------------------------


def _small_file_limit():
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails (EFBIG) instead of killing us
    resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))


def test_file_too_large_late_keeps_earlier_outputs_and_old_report(trace: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "report.html").write_text("<p>the report of an older run</p>")
    old = sha(out / "report.html")
    res = child("analyze", trace, "-o", out, "-q", cwd=tmp_path, preexec=_small_file_limit)
    assert res.returncode == 2, (res.stdout, res.stderr)
    one_error_line(res.stderr, str(out / "report.html"), "File too large")
    assert sha(out / "report.html") == old
    assert set(wrote(res.stdout)) == {"perfetto", "json", "csv"}
    json.loads((out / "summary.json").read_text())  # whole
    assert gzip.decompress((out / "trace.json.gz").read_bytes()).startswith(b'{"traceEvents":[')
    assert litter(out) == []


@pytest.fixture
def small_tmpfs(tmp_path: Path):
    mnt = tmp_path / "small"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)], capture_output=True)
    if r.returncode != 0:
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def test_no_space_left_late_keeps_earlier_outputs_and_old_report(trace: Path, small_tmpfs: Path) -> None:
    (small_tmpfs / "report.html").write_text("<p>older</p>")
    old = sha(small_tmpfs / "report.html")
    res = cli("analyze", trace, "-o", small_tmpfs, "-q")
    assert res.exit_code == 2, (res.stdout, res.stderr)
    one_error_line(res.stderr, str(small_tmpfs / "report.html"), "No space left on device")
    assert sha(small_tmpfs / "report.html") == old
    assert set(wrote(res.stdout)) == {"perfetto", "json", "csv"}
    assert litter(small_tmpfs) == []


# ---------------------------------------------------------------------------------------
# 3. never overwrite an input
# ---------------------------------------------------------------------------------------


def test_output_naming_the_input_trace_is_refused(trace: Path, tmp_path: Path) -> None:
    inp = tmp_path / "mine.trace.json"
    inp.write_bytes(trace.read_bytes())
    before = sha(inp)
    res = cli("analyze", inp, "-o", inp)  # .trace.json: the perfetto output
    assert res.exit_code == 2
    one_error_line(res.stderr, str(inp), "overwrite the input")
    assert sha(inp) == before
    assert sorted(os.listdir(tmp_path)) == ["mine.trace.json"]


def test_output_dir_holding_the_input_is_refused(trace: Path, tmp_path: Path) -> None:
    res = cli("analyze", trace, "-o", tmp_path, "--format", "perfetto", "-q")
    assert res.exit_code == 0
    inp = tmp_path / "trace.json.gz"  # an earlier run's trace, analysed again into the same directory
    before = sha(inp)
    res = cli("analyze", inp, "-o", tmp_path, "-q")
    assert res.exit_code == 2
    one_error_line(res.stderr, str(inp), "overwrite the input")
    assert sha(inp) == before
    assert sorted(os.listdir(tmp_path)) == ["trace.json.gz"]


def test_a_directory_analysed_into_itself_again(trace: Path, tmp_path: Path) -> None:
    """`analyze DIR -o DIR` twice: the earlier outputs are no inputs (not read back as one
    more rank, free to be replaced), and what is left out is said."""
    d = tmp_path / "run"
    d.mkdir()
    (d / "rank0.json").write_bytes(trace.read_bytes())
    first = cli("analyze", d, "-o", d, "-q")
    assert first.exit_code == 0, first.stderr
    s1 = json.loads((d / "summary.json").read_text())
    again = cli("analyze", d, "-o", d, "-q")
    assert again.exit_code == 0, again.stderr
    s2 = json.loads((d / "summary.json").read_text())
    assert s1["totals"]["ranks"] == s2["totals"]["ranks"] == 1
    assert s2["totals"]["events"] == s1["totals"]["events"]
    assert s2["warnings"] == [
        f"{d / 'trace.json.gz'}: skipped (an earlier xpu_profiler output: its summary.json is beside it)"
    ]
    assert (d / "rank0.json").read_bytes() == trace.read_bytes()


def test_analyze_dot_twice_with_the_default_output_inside(trace: Path, tmp_path: Path) -> None:
    (tmp_path / "rank0.json").write_bytes(trace.read_bytes())
    before = sha(tmp_path / "rank0.json")
    for _ in range(2):
        res = child("analyze", ".", "-q", "--format", "perfetto,json", cwd=tmp_path)
        assert res.returncode == 0, res.stderr
    s = json.loads((tmp_path / "xpu_profiler_out" / "summary.json").read_text())
    assert s["totals"]["ranks"] == 1 and sha(tmp_path / "rank0.json") == before


def test_an_earlier_trace_named_as_the_input_stays_protected(trace: Path, tmp_path: Path) -> None:
    """Named on the command line, our own trace is an input like any other."""
    assert cli("analyze", trace, "-o", tmp_path, "-q").exit_code == 0
    before = sha(tmp_path / "trace.json.gz")
    res = cli("analyze", tmp_path / "trace.json.gz", "-o", tmp_path, "-q")
    assert res.exit_code == 2
    one_error_line(res.stderr, str(tmp_path / "trace.json.gz"), "overwrite the input")
    assert sha(tmp_path / "trace.json.gz") == before


@pytest.mark.parametrize("link", ["symlink", "hardlink"])
def test_output_linked_to_the_input_is_refused(link: str, trace: Path, tmp_path: Path) -> None:
    inp = tmp_path / "input.json"
    inp.write_bytes(trace.read_bytes())
    (tmp_path / "out").mkdir()
    (os.symlink if link == "symlink" else os.link)(inp, tmp_path / "out" / "trace.json.gz")
    before = sha(inp)
    res = cli("analyze", inp, "-o", tmp_path / "out")
    assert res.exit_code == 2
    one_error_line(res.stderr, "trace.json.gz", "overwrite the input", str(inp))
    assert sha(inp) == before
    assert os.listdir(tmp_path / "out") == ["trace.json.gz"]


def test_output_on_the_baseline_is_refused(trace: Path, summary_file: Path, tmp_path: Path) -> None:
    base = tmp_path / "summary.json"
    base.write_bytes(summary_file.read_bytes())
    before = sha(base)
    res = cli("analyze", trace, "--baseline", base, "-o", tmp_path)
    assert res.exit_code == 2
    one_error_line(res.stderr, str(base), "overwrite the input")
    assert sha(base) == before


@pytest.mark.parametrize("which", ["base", "new"])
def test_diff_output_on_an_input_is_refused(which: str, summary_file: Path, tmp_path: Path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_bytes(summary_file.read_bytes())
    b.write_bytes(summary_file.read_bytes())
    target = a if which == "base" else b
    before = sha(target)
    res = cli("diff", a, b, "-o", target.with_suffix(".html"))  # diff.json goes to <stem>.json
    assert res.exit_code == 2
    one_error_line(res.stderr, str(target), "overwrite the input")
    assert sha(target) == before
    assert sorted(os.listdir(tmp_path)) == ["a.json", "b.json"]


def test_live_output_on_an_input_is_refused(tmp_path: Path, monkeypatch) -> None:
    spec = tmp_path / "spec.json"
    spec.write_text('{"cpu": {"peak_flops": {"fp32": 1e12}, "mem_bw_bytes_s": 1e11}}')
    before = sha(spec)
    monkeypatch.setenv("XPU_PROFILER_CACHE", str(tmp_path / "cache"))
    res = cli("--model", "tiny-llama", "--device", "cpu", "--device-spec", spec, "--output", spec)
    assert res.exit_code == 2, (res.stdout, res.stderr)
    one_error_line(res.stderr, str(spec))  # (a .json is no output's name, and the file exists)
    assert sha(spec) == before


# ---------------------------------------------------------------------------------------
# 4. atomic outputs: a write that fails or is interrupted leaves the older file and no litter
# ---------------------------------------------------------------------------------------

FORMAT_FILES = {
    "perfetto": "trace.json.gz",
    "json": "summary.json",
    "csv": "fused_ops.csv",
    "html": "report.html",
    "bundle": "profile.npz",
}


class _Failing:
    """A temporary file whose first write puts half the bytes down, then fails with ``exc``."""

    def __init__(self, f, exc: BaseException):
        self._f, self._exc = f, exc

    def write(self, data):
        self._f.write(data[: max(1, len(data) // 2)])
        self._f.flush()
        raise self._exc

    def __getattr__(self, name):
        return getattr(self._f, name)

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self._f.close()


def _fail_writes_to(monkeypatch, name: str, exc: BaseException) -> None:
    real = os.fdopen

    def fdopen(fd, *a, **kw):
        f = real(fd, *a, **kw)
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            return f
        return _Failing(f, exc) if atomic_write.is_temp_for(os.path.basename(target), name) else f

    monkeypatch.setattr(os, "fdopen", fdopen)


@pytest.mark.parametrize("fmt", sorted(FORMAT_FILES))
def test_disk_full_mid_write_keeps_the_older_file(fmt: str, trace: Path, tmp_path: Path, monkeypatch) -> None:
    name = FORMAT_FILES[fmt]
    (tmp_path / name).write_bytes(b"older contents")
    _fail_writes_to(monkeypatch, name, OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)))
    res = cli("analyze", trace, "-o", tmp_path, "--format", fmt, "-q")
    assert res.exit_code == 2, (res.stdout, res.stderr)
    one_error_line(res.stderr, str(tmp_path / name), "No space left on device")
    assert (tmp_path / name).read_bytes() == b"older contents"
    assert litter(tmp_path) == []


@pytest.mark.parametrize("fmt", ["perfetto", "html", "bundle"])
def test_ctrl_c_mid_write_keeps_the_older_file(fmt: str, trace: Path, tmp_path: Path, monkeypatch) -> None:
    name = FORMAT_FILES[fmt]
    (tmp_path / name).write_bytes(b"older contents")
    _fail_writes_to(monkeypatch, name, KeyboardInterrupt())
    res = cli("analyze", trace, "-o", tmp_path, "--format", fmt, "-q")
    assert res.exit_code == 130, (res.stdout, res.stderr)
    assert res.stderr.strip() == "xpu_profiler: interrupted"
    assert (tmp_path / name).read_bytes() == b"older contents"
    assert litter(tmp_path) == []


def test_diff_html_failing_keeps_diff_json_and_the_older_page(summary_file: Path, tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "diff.html").write_text("older page")
    _fail_writes_to(monkeypatch, "diff.html", OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)))
    res = cli("diff", summary_file, summary_file, "-o", tmp_path, "-q")
    assert res.exit_code == 2, (res.stdout, res.stderr)
    one_error_line(res.stderr, str(tmp_path / "diff.html"), "No space left on device")
    assert wrote(res.stdout) == {"json": str(tmp_path / "diff.json")}
    assert json.loads((tmp_path / "diff.json").read_text())["schema"]
    assert (tmp_path / "diff.html").read_text() == "older page"
    assert litter(tmp_path) == []


_SIGNAL_BEFORE_RENAME = """
import os, signal, time
_real = os.replace
def _replace(src, dst, *a, **kw):
    if os.path.basename(str(dst)) == {name!r}:
        os.kill(os.getpid(), signal.{sig})
        time.sleep(10)  # (not reached: the handler raises as soon as kill() returns)
    return _real(src, dst, *a, **kw)
os.replace = _replace
"""


@pytest.mark.parametrize("sig,code", [("SIGINT", 130), ("SIGTERM", 143)])
def test_signal_once_written_but_before_rename(sig: str, code: int, trace: Path, tmp_path: Path) -> None:
    """A real signal arrives when the whole trace is in the temporary file: the older trace
    stays, the temporary file goes."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "trace.json.gz").write_bytes(b"older trace")
    res = child(
        "analyze",
        trace,
        "-o",
        out,
        "-q",
        cwd=tmp_path,
        driver=_SIGNAL_BEFORE_RENAME.format(name="trace.json.gz", sig=sig),
    )
    assert res.returncode == code, (res.stdout, res.stderr)
    assert "Traceback" not in res.stderr
    assert (out / "trace.json.gz").read_bytes() == b"older trace"
    assert litter(out) == []
    assert not (out / "report.html").exists()  # (written after the trace: never reached)


def _held_analyze(trace: Path, out: Path, marker: Path, name: str) -> tuple[subprocess.Popen, Path]:
    """The real CLI writing the report into ``out``, held once the new ``name`` is whole in
    its temporary file (``hold``); the temporary file."""
    proc = subprocess.Popen(
        [sys.executable, *run_module(driver(marker, name)), "analyze", str(trace), "-o", str(out), "-q"],
        cwd=out.parent,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    try:
        return proc, wait_for_hold(marker, proc)
    except BaseException:
        proc.kill()
        proc.communicate()
        raise


def test_sigint_while_the_report_is_written(trace: Path, tmp_path: Path) -> None:
    """The real CLI, held when the new report is in its temporary file and the final path
    still holds the older one; then a real SIGINT from outside."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "report.html").write_text("older report")
    proc, temp = _held_analyze(trace, out, tmp_path / "held", "report.html")
    assert temp.parent == out and temp.exists() and atomic_write.is_temp_for(temp.name, "report.html")
    assert (out / "report.html").read_text() == "older report"  # mid-write: the old one
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert stderr.strip() == "xpu_profiler: interrupted"
    assert (out / "report.html").read_text() == "older report"
    assert litter(out) == []
    assert (out / "trace.json.gz").is_file()  # (written before the report, whole)


def test_a_write_killed_outright_leaves_a_temporary_file_the_next_run_removes(trace: Path, tmp_path: Path) -> None:
    """kill -9 while the report is in its temporary file: nothing can remove it then; the
    next run writing that report does, and only that: not a look-alike of someone else's,
    not another host's, not one of a process that still runs."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "report.html").write_text("older report")
    proc, temp = _held_analyze(trace, out, tmp_path / "held", "report.html")
    proc.kill()
    proc.communicate(timeout=60)
    assert temp.exists() and (out / "report.html").read_text() == "older report"
    # .report.html.xpr-<host>-<pid>-<letters>.tmp (the module's text)
    m = re.fullmatch(r"\.report\.html\.xpr-([0-9a-f]{8})-([0-9]+)-([a-z0-9_]{8})\.tmp", temp.name)
    host, pid, letters = m.groups() if m else ("0badc0de", "1", "abcdefgh")
    others = [
        ".report.html.abcd1234.tmp",  # an older writer's name, or a user's
        f".report.html.xpr-{'0' * 8 if host != '0' * 8 else '1' * 8}-{pid}-{letters}.tmp",  # another host's
        f".report.html.xpr-{host}-{os.getpid()}-{letters}.tmp",  # a process that runs (this one)
        f".trace.json.gz.xpr-{host}-{pid}-{letters}.tmp",  # another output's (its own write cleans it)
    ]
    for name in others:
        (out / name).write_text("not ours to remove")
    res = cli("analyze", trace, "-o", out, "--format", "html", "-q")
    assert res.exit_code == 0, res.stderr
    assert not temp.exists()
    assert sorted(n for n in litter(out)) == sorted(others)
    assert (out / "report.html").read_text().rstrip().endswith("</html>")


def test_success_replaces_the_older_file_keeping_its_mode(trace: Path, tmp_path: Path) -> None:
    (tmp_path / "summary.json").write_text("{}")
    os.chmod(tmp_path / "summary.json", 0o640)
    res = cli("analyze", trace, "-o", tmp_path, "--format", "json,csv", "-q")
    assert res.exit_code == 0, res.stderr
    assert json.loads((tmp_path / "summary.json").read_text())["totals"]["steps"] == 2
    assert (tmp_path / "summary.json").stat().st_mode & 0o777 == 0o640
    umask = os.umask(0)
    os.umask(umask)
    assert (tmp_path / "fused_ops.csv").stat().st_mode & 0o777 == 0o666 & ~umask
    assert litter(tmp_path) == []


# ---------------------------------------------------------------------------------------
# 5. terminal safety: control characters in names and paths are shown escaped
# ---------------------------------------------------------------------------------------

#: kernel of the generated trace → the control character its renamed copy carries
CONTROL_CHARS = {
    "NUL": "\x00",
    "BEL": "\x07",
    "CR": "\r",
    "LF": "\n",
    "ESC": "\x1b",
    "DEL": "\x7f",
    "C1_NEL": "\x85",
    "C1_CSI": "\x9b",
    "RLO": "\u202e",
    "LRI": "\u2066",
    "LINE_SEP": "\u2028",
}
SCRIPT = "<script>alert(1)</script>"


def _escaped(ch: str) -> str:
    return ch.encode("unicode_escape").decode("ascii")


@pytest.fixture(scope="module")
def evil_run(work, trace) -> tuple[str, Path, dict[str, str]]:
    """The generated trace with its kernels renamed to names holding each control
    character (and an HTML payload); the real CLI's terminal output and report."""
    doc = json.loads(trace.read_text())
    kernels = sorted({e["name"] for e in doc["traceEvents"] if e.get("cat") == "kernel"})
    assert len(kernels) >= len(CONTROL_CHARS)
    names = {}
    for (label, ch), old in zip(sorted(CONTROL_CHARS.items()), kernels):
        names[label] = f"k_{label}{ch}{SCRIPT}"
        for e in doc["traceEvents"]:
            if e.get("cat") == "kernel" and e.get("name") == old:
                e["name"] = names[label]
    evil = work / "evil.json"
    evil.write_text(json.dumps(doc))
    res = cli("analyze", evil, "-o", work / "evil_out", "--top", "40", "--format", "html")
    assert res.exit_code == 0, res.stderr
    return res.stdout, work / "evil_out" / "report.html", names


@pytest.mark.parametrize("label", sorted(CONTROL_CHARS))
def test_kernel_name_control_char_escaped_in_terminal_table(label: str, evil_run) -> None:
    stdout, _, names = evil_run
    ch = CONTROL_CHARS[label]
    assert ch == "\n" or ch not in stdout
    rows = [ln for ln in stdout.splitlines() if ln.startswith(f"k_{label}")]
    assert len(rows) == 1, rows  # one row: the name broke no line
    row = rows[0]
    assert row.startswith(f"k_{label}{_escaped(ch)}<script>")
    header = next(ln for ln in stdout.splitlines() if ln.startswith("name") and "fused op" in ln)
    # the columns line up: the fused-op column starts where its header does
    assert row[header.index("fused op") - 2 : header.index("fused op")] == "  "


def test_no_raw_control_character_anywhere_in_the_terminal(evil_run) -> None:
    stdout = evil_run[0]
    raw = {c for c in stdout if (ord(c) < 32 and c != "\n") or 0x7F <= ord(c) <= 0x9F or c in "\u202e\u2066\u2028"}
    assert raw == set()


def test_html_report_keeps_names_escaped(evil_run) -> None:
    _, report, names = evil_run
    html = report.read_text(encoding="utf-8")
    assert SCRIPT not in html
    for label, ch in CONTROL_CHARS.items():
        assert f"k_{label}" in html
        if ch != "\n":
            assert ch not in html, label
    assert "\\u003cscript\\u003ealert(1)\\u003c/script\\u003e" in html  # in the data blob
    for label, ch in CONTROL_CHARS.items():  # in the server-rendered kernel table, shown escaped
        assert f'title="k_{label}{_escaped(ch)}&lt;script&gt;alert(1)&lt;/script&gt;"' in html, label


def test_error_line_escapes_a_path_with_control_characters(trace: Path, tmp_path: Path) -> None:
    bad = tmp_path / "x\x1b[31m\nred"
    bad.write_text("a file, not a directory")
    res = cli("analyze", trace, "-o", bad / "out", "-q")
    assert res.exit_code == 2
    line = one_error_line(res.stderr, "x\\x1b[31m\\nred", "Not a directory")
    assert "\x1b" not in line


def test_wrote_lines_escape_the_output_path(trace: Path, tmp_path: Path) -> None:
    out = tmp_path / "o\u202eut\rdir"
    res = cli("analyze", trace, "-o", out, "--format", "json,csv", "-q")
    assert res.exit_code == 0, res.stderr
    assert wrote(res.stdout) == {
        "json": f"{tmp_path}/o\\u202eut\\rdir/summary.json",
        "csv": f"{tmp_path}/o\\u202eut\\rdir/fused_ops.csv",
    }
    assert (out / "summary.json").is_file()


def test_diff_table_escapes_kernel_names(evil_run, work, summary_file) -> None:
    res = cli("analyze", work / "evil.json", "-o", work / "evil_json", "--format", "json", "-q")
    assert res.exit_code == 0
    res = cli("diff", summary_file, work / "evil_json" / "summary.json", "-o", work / "evil_diff")
    assert res.exit_code == 0, res.stderr
    assert "k_ESC\\x1b<script>" in res.stdout
    assert not any(c in res.stdout for c in CONTROL_CHARS.values() if c != "\n")
    html = (work / "evil_diff" / "diff.html").read_text()
    assert SCRIPT not in html


def test_live_console_messages_are_escaped(capsys) -> None:
    from xpu_profiler.live.console import Console

    con = Console(quiet=False)
    con.say("model evil\x1b]0;title\x07\u202e")
    con.warn("a\rb")
    err = capsys.readouterr().err
    assert err.splitlines() == ["xpu_profiler: model evil\\x1b]0;title\\x07\\u202e", "warning: a\\rb"]


def test_view_echoes_the_trace_path_escaped(trace: Path, tmp_path: Path) -> None:
    res = cli("analyze", trace, "-o", tmp_path, "--format", "perfetto", "-q")
    assert res.exit_code == 0
    odd = tmp_path / "run\x1b]0;pwned\x07.json.gz"
    os.rename(tmp_path / "trace.json.gz", odd)
    proc = subprocess.Popen(
        [sys.executable, "-m", "xpu_profiler", "view", str(odd), "--no-browser", "--port", "0"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    try:
        first = proc.stdout.readline()
    finally:
        proc.send_signal(signal.SIGINT)
        rest, err = proc.communicate(timeout=30)
    assert first.startswith(f"xpu_profiler: serving {tmp_path}/run\\x1b]0;pwned\\x07.json.gz ("), first
    assert "\x1b" not in first + rest and "\x07" not in first + rest
    assert "Traceback" not in err


def test_a_device_spec_holds_for_its_command_only(trace: Path, tmp_path: Path) -> None:
    """In one process (the Python API, a notebook), --device-spec of one command does not
    change the peaks the next one uses."""
    from xpu_profiler.knowledge import devices

    before = devices.SPECS["cpu"]
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"cpu": {"peak_flops": {"fp32": 1e12}, "mem_bw_bytes_s": 1e11}}))
    res = cli("analyze", trace, "--device-spec", spec, "-o", tmp_path / "a", "--format", "json", "-q")
    assert res.exit_code == 0, res.stderr
    res = cli("--model", "tiny-llama", "--device", "cpu", "--device-spec", spec, "--output", spec)
    assert res.exit_code == 2  # refused (the output is the spec), after the spec was read
    assert devices.SPECS["cpu"] is before and devices.SPECS["cpu"].peak_flops == {}
