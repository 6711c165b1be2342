"""Synthetic traces with known ground truth, for the tests and the benchmarks (and for trying
the tool without a trace of one's own): ``gen_trace`` writes a single-rank vLLM-style Kineto
trace, ``gen_ranks`` a multi-rank one with collectives; both print what they put in.

    python -m xpu_profiler.testing.gen_trace --help

Each generator's entry point (``generate``, ``source_hash``, ``main``, its tables) is in its
module; its parts are beside it: ``trace_tables``, ``trace_events``, ``trace_layers``,
``trace_steps``, ``trace_file`` (gen_trace) and ``ranks_tables``, ``ranks_rank``, ``ranks_run``,
``ranks_file`` (gen_ranks).
"""
