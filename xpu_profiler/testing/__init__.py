"""Synthetic traces with known ground truth, for the tests and the benchmarks (and for trying
the tool without a trace of one's own): ``gen_trace`` writes a single-rank vLLM-style Kineto
trace, ``gen_ranks`` a multi-rank one with collectives; both print what they put in.

    python -m xpu_profiler.testing.gen_trace --help
"""
