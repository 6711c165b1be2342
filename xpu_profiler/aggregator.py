"""Transitional alias of ``xpu_profiler.aggregate`` for the live path's imports.

New code imports ``xpu_profiler.analysis`` (the facade) or ``xpu_profiler.aggregate``.
"""

from .aggregate import attribute, summarize  # noqa: F401
