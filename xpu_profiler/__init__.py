"""xpu_profiler: where each vLLM engine step's time goes, by fused op and phase."""

__version__ = "0.1.0"

# The data-model module is named ``profile`` too: load it first, so that the function
# below (the public API) stays the package attribute ``xpu_profiler.profile``.
from . import profile as _profile_module  # noqa: E402,F401


def profile(llm, metrics=None, detail_level="standard", **kwargs):
    """Profile a ``vllm.LLM`` inside a ``with`` block:

    >>> with xpu_profiler.profile(llm, detail_level="standard") as prof:
    ...     llm.generate(prompts, params)
    >>> prof.summary(); prof.export("report.html")
    """
    from .live.profiler import profile as _profile

    return _profile(llm, metrics=metrics, detail_level=detail_level, **kwargs)
