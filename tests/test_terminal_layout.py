"""The terminal's text laid out with rich: on a terminal it fits the width (names shortened,
numbers whole, rows on one line), styled; anywhere else it is plain (no ANSI codes, no box
lines) with each line whole; names from traces are shown, never interpreted; the live
command's stage line and analyze's reading bar on a (fake) terminal."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from real_data import REAL
from rich.cells import cell_len

from xpu_profiler import analysis
from xpu_profiler.cli.main import main
from xpu_profiler.core import fmt
from xpu_profiler.live.console import Console
from xpu_profiler.terminal import diff as terminal_diff
from xpu_profiler.terminal import summary as terminal
from xpu_profiler.terminal.progress import byte_bar
from xpu_profiler.terminal.screen import PLAIN, Screen, screen_for

ROOT = Path(__file__).resolve().parents[1]
TP2 = ROOT / "tests" / "data" / "vllm_cpu_tp2_gloo"  # two ranks: the multi-rank tables too
GPTOSS = REAL / "tracelens" / "vllm-gptoss-mi300-decode-full"
SGR = re.compile(r"\x1b\[[0-9;]*m")  # the styles (colour, bold) a styled screen writes
BOX = re.compile("[\u2500-\u257f]")  # box-drawing characters
EVIL = "void k<[bold]x>[/bold]\x1b[31m\r(int)"


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def visible(text: str) -> list[str]:
    return SGR.sub("", text).splitlines()


def section(lines: list[str], title: str) -> list[str]:
    """The lines under a heading, to the next blank line."""
    start = lines.index(title) + 1
    end = next((i for i in range(start, len(lines)) if not lines[i].strip()), len(lines))
    return lines[start:end]


def words(text: str) -> list[str]:
    """The text's words in order, without the tables' header rules."""
    return [w for ln in visible(text) if not re.fullmatch(r"[-─ ]*", ln) for w in ln.split()]


@pytest.fixture(scope="module", params=["tp2", "gptoss"])
def real(request):
    path = TP2 if request.param == "tp2" else GPTOSS
    if not path.exists():
        pytest.skip(f"real trace not found: {path}")
    return analysis.analyze([path])[1]


def test_plain_text_has_no_codes_and_one_line_per_row(real):
    text = terminal.render(real, top=10)
    assert "\x1b" not in text and not BOX.search(text)
    lines = text.splitlines()
    for f in real.fused_ops:  # each fused op's row: one line with its name, time, share and count
        row = [ln for ln in lines if ln.startswith(fmt.plain(f.fused_op) + " ")]
        cells = [fmt.ns(f.time_ns, fmt.TERMINAL), fmt.pct(f.share, fmt.TERMINAL), f"{f.count:,}"]
        assert any(all(c in ln for c in cells) for ln in row), (f.fused_op, row)
    for k in real.top_kernels[:10]:  # and each kernel's, its name as the 70-column clip shows it
        name = fmt.clip(fmt.plain(k.name), terminal.NAME_WIDTH)
        row = [ln for ln in lines if ln.startswith(name)]
        assert any(fmt.ns(k.time_ns, fmt.TERMINAL) in ln and f"{k.count:,}" in ln for ln in row), name
    # each column's header underlined with dashes, two spaces between columns, the columns
    # lined up: the time column (right-aligned) ends where its header and its dashes end
    head = lines.index("Time by fused op")
    header, rule = lines[head + 1], lines[head + 2]
    assert re.fullmatch(r"-+(  -+)*", rule) and len(rule) >= len(header)
    end = header.index("time") + len("time")
    assert rule[end - 1] == "-" and rule[end : end + 2] == "  "
    for ln, f in zip(lines[head + 3 :], real.fused_ops):
        assert ln[:end].endswith(fmt.ns(f.time_ns, fmt.TERMINAL)), ln


@pytest.mark.parametrize("width", [60, 200])
def test_a_terminal_fits_its_width_and_keeps_the_numbers(real, width):
    text = terminal.render(real, top=10, screen=Screen(width, styled=True))
    assert SGR.search(text)  # styled
    lines = visible(text)
    assert max(cell_len(ln) for ln in lines) <= width
    plain = terminal.render(real, top=10)
    if width == 200:  # wide enough: the same words as the plain text, only wrapped and styled
        assert words(text) == words(plain)
    fused, top = (
        section(lines, "Time by fused op"),
        section(lines, "Top kernels" if real.basis == "device" else "Top ops"),
    )
    for f in real.fused_ops:  # each row on one line: the name (or its start, with "…"), time and share whole
        t, s = fmt.ns(f.time_ns, fmt.TERMINAL), fmt.pct(f.share, fmt.TERMINAL)
        rows = [ln for ln in fused if t in ln and s in ln]
        first = [ln.split()[0] for ln in rows]
        name = fmt.plain(f.fused_op)
        assert any(w == name or (w.endswith("…") and name.startswith(w[:-1])) for w in first), (name, rows)
    for k in real.top_kernels[:10]:
        t, c = fmt.ns(k.time_ns, fmt.TERMINAL), f"{k.count:,}"
        rows = [ln for ln in top if t in ln and re.search(rf"\s{re.escape(c)}\s", ln)]
        assert rows, k.name
        start = rows[0].split("  ")[0]
        assert start == fmt.clip(fmt.plain(k.name), terminal.NAME_WIDTH) or (
            start.endswith("…") and fmt.plain(k.name).startswith(start[:-1])
        ), (k.name, start)
    if width == 60 and len(real.ranks) > 1:  # a table too wide even so: folded, every column kept
        for r in real.ranks:
            assert any(ln.split()[:1] == [str(r.rank)] and fmt.ns(r.op_time_ns, fmt.TERMINAL) in ln for ln in lines)
        heads = [ln for ln in lines if ln.startswith("rank ")]
        for col in ("op time", "comm", "exposed", "wait", "last", "first"):
            assert any(col in h.split("  ") or f" {col}" in h for h in heads), col


def test_plain_at_a_width_fits_without_codes(real):
    text = terminal.render(real, top=10, screen=Screen(60, styled=False))  # NO_COLOR on a terminal
    assert "\x1b" not in text and not BOX.search(text)
    assert max(cell_len(ln) for ln in text.splitlines()) <= 60


def test_the_diff_fits_a_narrow_terminal(real):
    from xpu_profiler.diff import compare

    report = compare(real, real, "base", "new")
    text = terminal_diff.render(report, screen=Screen(60, styled=True))
    assert max(cell_len(ln) for ln in visible(text)) <= 60
    assert words(terminal_diff.render(report, screen=Screen(300, styled=True))) == words(terminal_diff.render(report))


def _evil_trace(tmp_path: Path) -> Path:
    ev = [
        {"ph": "X", "cat": "kernel", "name": EVIL, "pid": 0, "tid": 7, "ts": 0, "dur": 50},
        {"ph": "X", "cat": "kernel", "name": "gemm_kernel", "pid": 0, "tid": 7, "ts": 60, "dur": 20},
    ]
    src = tmp_path / "t.json"
    src.write_text(json.dumps({"schemaVersion": 1, "traceEvents": ev}))
    return src


@pytest.mark.parametrize("screen", [PLAIN, Screen(120, styled=True), Screen(40, styled=True)])
def test_names_from_a_trace_are_shown_not_interpreted(tmp_path, screen):
    s = analysis.analyze([_evil_trace(tmp_path)])[1]
    text = terminal.render(s, screen=screen)
    shown = fmt.plain(EVIL)  # "void k<[bold]x>[/bold]\\x1b[31m\\r(int)"
    assert "\\x1b[31m\\r" in shown
    codes = re.findall(r"\x1b\[[^m]*m", text)
    assert all(SGR.fullmatch(c) for c in codes) and "\r" not in text  # only our styles act
    rows = [ln for ln in visible(text) if "void k<" in ln]
    if screen.width is None or screen.width >= 100:  # whole: markup left as it is, not made bold
        assert any(shown in ln for ln in rows)
        assert shown in text  # (no style codes inside the name either)
    else:  # shortened: still the literal start of the name
        assert rows and all("void k<[bold]x>" in ln or ln.split("  ")[0].endswith("…") for ln in rows)
        assert "bold" not in SGR.sub("", "".join(codes))


def test_the_cli_writes_plain_text_when_not_a_terminal(tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "50")  # (a width applies to terminals only)
    res = CliRunner().invoke(main, ["analyze", str(TP2), "-o", str(tmp_path / "out"), "--format", "json"])
    assert res.exit_code == 0, res.output
    assert "\x1b" not in res.output and not BOX.search(res.output)
    assert "Time by fused op" in res.output and max(map(len, res.output.splitlines())) > 50


def test_screen_for_a_stream(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.setenv("COLUMNS", "73")
    assert screen_for(io.StringIO()) == PLAIN
    assert screen_for(FakeTerminal()) == Screen(73, styled=True)
    monkeypatch.setenv("NO_COLOR", "1")
    assert screen_for(FakeTerminal()) == Screen(73, styled=False)
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("TERM", "dumb")
    assert screen_for(FakeTerminal()) == Screen(73, styled=False)


STAGES = ("starting vLLM", "warm-up", "profiling", "export")


def _run_stage(con: Console, fake: io.StringIO) -> str:
    with con.stage("profiling 8 requests", status=lambda: "5 steps"):
        bar = con.progress()(total=8, desc="Processed prompts")
        bar.update(3)
        con.say("a name [bold]x[/bold]")
        drawn = fake.getvalue()
    return drawn


def test_the_stage_line_on_a_terminal(monkeypatch):
    fake = FakeTerminal()
    monkeypatch.setattr("sys.stderr", fake)
    monkeypatch.setenv("COLUMNS", "120")  # room for the whole bar
    monkeypatch.setenv("NO_COLOR", "1")  # the bar's done part only: its length is the count
    monkeypatch.setenv("TERM", "xterm")
    con = Console(stages=STAGES)
    drawn = _run_stage(con, fake)
    assert "\r\x1b[2K" in drawn  # redrawn in place
    frames = [f for f in re.split(r"\r\x1b\[2K|\n", drawn) if "3/8 requests" in f]
    assert frames, drawn
    # 3 of 8 requests on a 28-column bar: 10.5 columns done
    assert re.search(r"\[3/4\] profiling 8 requests +━{10}╸ +3/8 requests  5 steps +\d+\.\d s", frames[-1])
    assert "xpu_profiler: a name [bold]x[/bold]\n" in drawn  # printed above the line, literally
    end = fake.getvalue()[len(drawn) :]
    last = SGR.sub("", end.split("\x1b[2K")[-1])
    assert re.fullmatch(r"  \[3/4\] profiling 8 requests +3/8 requests +\d+\.\d s  done\n", last), last


def test_the_stage_line_is_coloured_unless_no_color(monkeypatch):
    fake = FakeTerminal()
    monkeypatch.setattr("sys.stderr", fake)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    _run_stage(Console(stages=STAGES), fake)
    assert SGR.search(fake.getvalue()) and "done" in fake.getvalue()


@pytest.mark.parametrize("term", ["off", "dumb"])
def test_no_stage_line_off_a_terminal(monkeypatch, term):
    fake = FakeTerminal() if term == "dumb" else io.StringIO()
    monkeypatch.setattr("sys.stderr", fake)
    monkeypatch.setenv("TERM", "dumb" if term == "dumb" else "xterm")
    _run_stage(Console(stages=STAGES), fake)
    lines = fake.getvalue().splitlines()
    assert lines[0] == "xpu_profiler: [3/4] profiling 8 requests ..."
    assert lines[1] == "xpu_profiler: a name [bold]x[/bold]"
    assert re.fullmatch(r"xpu_profiler: \[3/4\] profiling 8 requests +3/8 requests +\d+\.\d s  done", lines[2])
    assert len(lines) == 3 and "\x1b" not in fake.getvalue() and "━" not in fake.getvalue()


def test_quiet_shows_no_stage(monkeypatch):
    fake = FakeTerminal()
    monkeypatch.setattr("sys.stderr", fake)
    monkeypatch.setenv("TERM", "xterm")
    with Console(stages=STAGES, quiet=True).stage("export"):
        pass
    assert fake.getvalue() == ""


def test_the_reading_bar(monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setenv("NO_COLOR", "1")
    fake = FakeTerminal()
    with byte_bar(fake, 4000, "reading") as advance:
        advance(1000)
    assert "reading" in fake.getvalue() and "1.0/4.0 kB" in fake.getvalue()
