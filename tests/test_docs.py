"""The README and docs/ stay true to the tool: every `xpu_profiler` command they show parses
with the real command line, every option a page names exists in `--help` of the commands that
page documents (or is another tool's, listed below with whose), their links resolve, the
findings table is the rule table's, and the README stays a two-minute page."""

from __future__ import annotations

import re
import shlex

import click
import pytest
from conftest import ROOT

from xpu_profiler.cli.main import main
from xpu_profiler.findings import doc as findings_doc

README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = sorted([README, *DOCS.glob("*.md")])
#: pages colleagues write (linked before they land); every other link target must exist
PENDING = {"attribution.md", "steps-and-verdicts.md", "diff.md", "layers.md", "reliability.md"}
#: the commands each page documents ("" is the live command); a page not listed: any command
PAGE_COMMANDS = {
    "live.md": ["", "analyze"],
    "serving.md": ["record", "analyze"],
    "analyze.md": ["analyze", "view", "validate", "diff", ""],
    "multi-rank.md": ["analyze"],
    "kunlun.md": ["", "analyze"],
    "findings.md": ["analyze", "diff", ""],
    "notebook.md": ["analyze"],
}
#: options of other tools the pages name, and whose they are
FOREIGN = {
    "--profiler-config": "vllm serve",
    "--data-parallel-size": "vllm serve",
    "--async-scheduling": "vllm serve",
    "--enable-expert-parallel": "vllm serve",
    "--enable-eplb": "vllm serve",
    "--enable-torch-compile": "SGLang's launch_server",
    "--dist": "pytest-xdist",
    "--no-loadscope-reorder": "pytest-xdist",
    "--tune": "vLLM's benchmarks/kernels/benchmark_moe.py",
    "--headless": "chromium",
    "--no-sandbox": "chromium",
    "--disable-gpu": "chromium",
    "--hide-scrollbars": "chromium",
    "--window-size": "chromium",
    "--screenshot": "chromium",
    "--cuda-graph-trace": "nsys profile",
    "--trace-fork-before-exec": "nsys profile",
    "--export": "nsys profile",
    "--trace": "nsys profile",
    "--type": "nsys export",
    "--kernel-trace": "rocprofv3",
    "--hip-runtime-trace": "rocprofv3",
    "--marker-trace": "rocprofv3",
    "--rccl-trace": "rocprofv3",
    "--output-format": "rocprofv3",
    "--enable-layerwise-nvtx-tracing": "vllm serve",
    "--enable-layerwise-nvtx-marker": "SGLang's launch_server",
}


def _commands() -> dict[str, click.Command]:
    return {"": main, **main.commands}


def _options(cmd: click.Command) -> set[str]:
    params = [*cmd.params, cmd.get_help_option(click.Context(cmd))]
    return {o for p in params if p is not None for o in (*p.opts, *p.secondary_opts) if o.startswith("-")}


def _code_blocks(text: str) -> list[str]:
    """Shell code blocks (no language, or sh/bash/console)."""
    return [
        m.group(2)
        for m in re.finditer(r"^```(\w*)\n(.*?)^```", text, re.S | re.M)
        if m.group(1) in ("", "sh", "bash", "console")
    ]


def _command_lines() -> list[tuple[str, str]]:
    out = []
    for page in PAGES:
        for block in _code_blocks(page.read_text(encoding="utf-8")):
            for line in block.splitlines():
                line = line.strip().removeprefix("$ ")
                if line.startswith("xpu_profiler ") or line == "xpu_profiler":
                    out.append((page.name, line))
    return out


def test_the_readme_is_a_two_minute_page():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    # the demo and test commands stay exactly these (CI runs ./dev test)
    assert "`./dev demo`" in text and "`./dev test`" in text
    shot = re.search(r"!\[[^\]]+\]\((docs/[^)]+\.png)\)", text)
    assert shot, "the README shows the report"
    png = ROOT / shot.group(1)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size < 200_000


def test_the_pages_show_commands():
    """The parse test below has something to parse on every page that documents a command."""
    pages = {p for p, _ in _command_lines()}
    assert {"README.md", "live.md", "serving.md", "analyze.md", "kunlun.md"} <= pages


@pytest.mark.parametrize("page, line", _command_lines())
def test_every_command_shown_parses(page, line):
    args = shlex.split(line, comments=True)[1:]
    commands = _commands()
    name = args[0] if args and args[0] in commands and args[0] else ""
    cmd = commands[name]
    rest = args[1:] if name else args
    try:
        cmd.make_context(f"xpu_profiler {name}".strip(), rest)
    except click.exceptions.Exit:
        pass  # --help, --version
    except click.BadParameter as e:
        if "does not exist" not in str(e):  # a file of the example: not this test's business
            raise AssertionError(f"{page}: {line}\n{e.format_message()}") from None
    except click.UsageError as e:
        raise AssertionError(f"{page}: {line}\n{e.format_message()}") from None


def _mentioned(text: str) -> set[str]:
    return set(re.findall(r"(?<![\w/-])(--[a-z][a-z0-9_-]*[a-z0-9])", text))


def test_every_option_named_is_in_help():
    commands = _commands()
    every = set().union(*(_options(c) for c in commands.values()))
    wrong = []
    for page in PAGES:
        names = PAGE_COMMANDS.get(page.name)
        known = set().union(*(_options(commands[n]) for n in names)) if names else every
        for opt in sorted(_mentioned(page.read_text(encoding="utf-8"))):
            if opt not in known and opt not in FOREIGN:
                wrong.append(f"{page.name}: {opt}")
    assert not wrong, "options not in --help of the commands the page documents:\n" + "\n".join(wrong)


def test_the_foreign_list_holds_no_option_of_ours():
    every = set().union(*(_options(c) for c in _commands().values()))
    assert not set(FOREIGN) & every


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_links_resolve():
    bad = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+://", target) or target.startswith("mailto:"):
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists():
                if dest.name not in PENDING:
                    bad.append(f"{page.name}: {target}")
                continue
            if anchor and dest.suffix == ".md":
                heads = {_anchor(h) for h in re.findall(r"^#+ (.+)$", dest.read_text(encoding="utf-8"), re.M)}
                if anchor not in heads:
                    bad.append(f"{page.name}: {target} (no such heading)")
    assert not bad, "links that do not resolve:\n" + "\n".join(bad)


def test_every_page_is_in_the_index():
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    readme = README.read_text(encoding="utf-8")
    for page in DOCS.glob("*.md"):
        if page.name != "README.md":
            assert f"({page.name})" in index, page.name
            assert f"(docs/{page.name})" in readme, page.name


def test_the_findings_table_is_the_rule_table():
    text = (DOCS / "findings.md").read_text(encoding="utf-8")
    assert findings_doc.block() in text, "stale: run python -m xpu_profiler.findings.doc docs/findings.md"


def test_the_findings_table_can_go_stale(tmp_path, monkeypatch):
    page = tmp_path / "findings.md"
    page.write_text(f"intro\n{findings_doc.BEGIN}\n| old |\n{findings_doc.END}\nrest\n", encoding="utf-8")
    assert findings_doc.block() not in page.read_text(encoding="utf-8")
    assert findings_doc.rewrite(page) is True
    text = page.read_text(encoding="utf-8")
    assert findings_doc.block() in text and text.startswith("intro\n") and text.endswith("rest\n")
    assert findings_doc.rewrite(page) is False
