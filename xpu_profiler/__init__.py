"""xpu_profiler: where each vLLM engine step's time goes, by fused op and phase."""

from .core.version import __version__

__all__ = ["__version__", "load", "profile"]


def load(paths, **kwargs):
    """Analyse traces you have, for a notebook: ``xpu_profiler.load("traces/")`` → an
    ``Analysis`` with ``.summary`` (the typed Summary), each section as a pandas DataFrame
    (``.fused_ops``, ``.steps``, ``.kernels``, ``.ranks``, ``.collectives``, ``.requests``,
    ...), ``.report(path)`` and ``.trace(path)`` (``xpu_profiler.notebook``)."""
    from .notebook import load as _load

    return _load(paths, **kwargs)


def profile(llm, metrics=None, detail_level="standard", **kwargs):
    """Profile a ``vllm.LLM`` inside a ``with`` block:

    >>> with xpu_profiler.profile(llm, detail_level="standard") as prof:
    ...     llm.generate(prompts, params)
    >>> prof.summary(); prof.export("report.html")
    """
    from .live.profiler import profile as _profile

    return _profile(llm, metrics=metrics, detail_level=detail_level, **kwargs)
