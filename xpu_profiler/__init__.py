"""xpu_profiler: where each vLLM engine step's time goes, by fused op and phase."""

__version__ = "0.1.0"
