"""The report templates, and the one jinja2 environment that renders them.

Templates and assets are package resources of ``xpu_profiler.templates``.
``report.css``, ``report.js`` and plotly.js (from the plotly package) are
inlined verbatim through ``include_file`` and ``plotly_js``, so jinja never
parses them. Data enters a page only as the ``report|tojson`` blob, which
escapes ``<``, ``>``, ``&`` and ``'``: nothing in it can end the script.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

PLOTLY_CDN = "https://cdn.plot.ly/plotly-{version}.min.js"


@lru_cache(maxsize=1)
def plotly_version() -> str:
    from plotly.offline import get_plotlyjs_version

    return str(get_plotlyjs_version())


@lru_cache(maxsize=1)
def plotly_js() -> str:
    """plotly.min.js as shipped in the plotly package, safe to put inside <script>."""
    import plotly

    js = (Path(plotly.__file__).parent / "package_data" / "plotly.min.js").read_text(encoding="utf-8")
    return js.replace("</script", "<\\/script")


# -- number formatting (jinja filters) ------------------------------------------

def _num(x: Any) -> float | None:
    """A finite float, or None for missing/NaN/inf values."""
    if x is None or isinstance(x, bool):
        return None
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def fmt_ns(ns: Any) -> str:
    """1234567 → "1.23 ms"; missing → "–"."""
    v = _num(ns)
    if v is None:
        return "–"
    for unit, div in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if abs(v) >= div:
            x = v / div
            return f"{x:.3g} {unit}" if abs(x) < 100 else f"{x:,.0f} {unit}"
    return f"{v:.0f} ns"


def fmt_bytes(b: Any) -> str:
    v = _num(b)
    if v is None:
        return "–"
    for unit, div in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(v) >= div:
            return f"{v / div:.3g} {unit}" if abs(v / div) < 1000 else f"{v / div:,.0f} {unit}"
    return f"{v:.0f} B"


def fmt_num(x: Any, digits: int = 3) -> str:
    v = _num(x)
    if v is None:
        return "–"
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.{digits}g}"


def fmt_pct(x: Any, scale: float = 100.0) -> str:
    v = _num(x)
    return "–" if v is None else f"{v * scale:.1f}%"


def fmt_card(card: Mapping[str, Any]) -> str:
    """A headline card's value in its unit (ns, bytes, %, or a rate such as tok/s)."""
    unit, v = card.get("unit"), card.get("value")
    if unit == "ns":
        return fmt_ns(v)
    if unit == "bytes":
        return fmt_bytes(v)
    if unit == "%":
        return fmt_pct(v, 1.0)
    return f"{fmt_num(v)} {unit}"


# -- the environment -------------------------------------------------------------

def _load(name: str) -> str | None:
    f = resources.files(__name__).joinpath(name)
    return f.read_text(encoding="utf-8") if f.is_file() else None


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FunctionLoader(_load), autoescape=True,
                             trim_blocks=True, lstrip_blocks=True, undefined=jinja2.StrictUndefined)
    # compact, deterministic, strictly valid JSON in the page
    env.policies["json.dumps_kwargs"] = {"sort_keys": True, "separators": (",", ":"), "allow_nan": False}
    env.globals["include_file"] = lambda name: Markup(_load(name) or "")
    env.globals["plotly_js"] = lambda: Markup(plotly_js())
    env.globals["plotly_cdn"] = lambda: PLOTLY_CDN.format(version=plotly_version())
    env.filters.update(ns=fmt_ns, bytes=fmt_bytes, num=fmt_num, pct=fmt_pct, card=fmt_card)
    return env


def render(report: Mapping[str, Any], template: str = "report.html") -> str:
    """The HTML page for ``report`` (the dict of ``exporters.html_report.build_report``)."""
    return environment().get_template(template).render(report=report)
