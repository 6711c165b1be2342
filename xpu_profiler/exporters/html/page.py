"""The page: the one cached jinja2 environment, plotly.js, and ``render(report)``.

Templates and assets are package data in ``templates/``. ``report.css``,
``report.js`` and plotly.js (from the plotly package) are inlined verbatim through
``include_file`` and ``plotly_js``, so jinja never parses them. Data enters a page
only as the ``report|tojson`` blob, which escapes ``<``, ``>``, ``&`` and ``'``:
nothing in it can end the script; every other name is escaped by autoescaping.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Mapping
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from markupsafe import Markup

if TYPE_CHECKING:
    import jinja2

from ...core import fmt

PLOTLY_CDN = "https://cdn.plot.ly/plotly-{version}.min.js"
_TEMPLATES = resources.files(__package__).joinpath("templates")


@lru_cache(maxsize=1)
def plotly_version() -> str:
    """The bundled plotly.js's version, from its file's first lines (``* plotly.js v4.1.1``),
    without importing plotly (``plotly.offline`` took 40-50 ms of every report to say it)."""
    with open(_plotly_js_path(), encoding="utf-8") as f:
        m = re.search(r"plotly\.js v(\d[\w.+-]*)", f.read(512))
    if m:
        return m.group(1)
    from plotly.offline import get_plotlyjs_version

    return str(get_plotlyjs_version())


def _plotly_js_path() -> Path:
    """plotly.min.js in the installed plotly package, found without importing it."""
    spec = importlib.util.find_spec("plotly")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("No module named 'plotly'", name="plotly")
    return Path(list(spec.submodule_search_locations)[0]) / "package_data" / "plotly.min.js"


@lru_cache(maxsize=1)
def plotly_js() -> str:
    """plotly.min.js as shipped in the plotly package, safe to put inside <script>."""
    js = _plotly_js_path().read_text(encoding="utf-8")
    return js.replace("</script", "<\\/script")


def card_value(card: Mapping[str, Any]) -> str:
    """A headline card's value in its unit (ns, bytes, %, or a rate such as tok/s)."""
    unit, v = card.get("unit"), card.get("value")
    if unit == "ns":
        return fmt.ns(v, fmt.REPORT)
    if unit == "bytes":
        return fmt.size(v, fmt.REPORT)
    if unit == "%":
        return fmt.pct(v, fmt.REPORT, scale=1.0)
    return f"{fmt.count(v, fmt.REPORT)} {unit}"


def _load(name: str) -> str | None:
    f = _TEMPLATES.joinpath(name)
    return f.read_text(encoding="utf-8") if f.is_file() else None


def _shown(value: Any) -> Any:
    """Every text the templates show: control characters and bidirectional overrides from
    a trace's names escaped (``\\x00``, ``\\u202e``), as on the terminal; markup (the
    JSON blob, plotly.js) as it is."""
    return fmt.plain(value) if isinstance(value, str) and not isinstance(value, Markup) else value


@lru_cache(maxsize=1)
def _cache_class() -> type:
    import jinja2

    class TemplateCache(jinja2.FileSystemBytecodeCache):
        """The compiled templates kept between runs (compiling them is a few tenths of a
        second), in jinja2's private per-user temporary directory. A cache that cannot be
        read or written (a full disk) is no error: the template is compiled again."""

        def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
            try:
                super().load_bytecode(bucket)
            except (OSError, EOFError, ValueError):
                bucket.reset()

        def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
            try:
                super().dump_bytecode(bucket)
            except OSError:
                pass

    return TemplateCache


def template_cache(directory: str | None = None) -> jinja2.BytecodeCache:
    """The compiled-template cache, in ``directory`` (default: jinja2's own)."""
    return _cache_class()(directory)


def _bytecode_cache() -> jinja2.BytecodeCache | None:
    try:
        return template_cache()
    except (OSError, RuntimeError):  # no private temporary directory to be had
        return None


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    import jinja2  # here: an analysis that writes no report does without it (30 ms)

    env = jinja2.Environment(
        loader=jinja2.FunctionLoader(_load),
        autoescape=True,
        bytecode_cache=_bytecode_cache(),
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
        finalize=_shown,
    )
    # compact, deterministic, strictly valid JSON in the page
    env.policies["json.dumps_kwargs"] = {"sort_keys": True, "separators": (",", ":"), "allow_nan": False}
    env.globals["include_file"] = lambda name: Markup(_load(name) or "")
    env.globals["plotly_js"] = lambda: Markup(plotly_js())
    env.globals["plotly_cdn"] = lambda: PLOTLY_CDN.format(version=plotly_version())
    env.filters.update(
        ns=lambda v: fmt.ns(v, fmt.REPORT),
        bytes=lambda v: fmt.size(v, fmt.REPORT),
        num=lambda v: fmt.count(v, fmt.REPORT),
        pct=lambda v: fmt.pct(v, fmt.REPORT),
        card=card_value,
    )
    return env


def render(report: Mapping[str, Any], template: str = "report.html") -> str:
    """The HTML page for ``report`` (the dict of ``report.build_report``)."""
    return environment().get_template(template).render(report=report)
