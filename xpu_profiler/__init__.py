"""xpu_profiler: where each vLLM engine step's time goes, by fused op and phase."""

from .core.version import __version__

__all__ = ["__version__", "profile"]


def profile(llm, metrics=None, detail_level="standard", **kwargs):
    """Profile a ``vllm.LLM`` inside a ``with`` block:

    >>> with xpu_profiler.profile(llm, detail_level="standard") as prof:
    ...     llm.generate(prompts, params)
    >>> prof.summary(); prof.export("report.html")
    """
    from .live.profiler import profile as _profile

    return _profile(llm, metrics=metrics, detail_level=detail_level, **kwargs)
