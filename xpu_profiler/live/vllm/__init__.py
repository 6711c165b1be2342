"""Code that runs inside vLLM's processes (front-end, EngineCore, workers).

vLLM loads ``plugin.register`` in every process (entry point ``vllm.general_plugins``).
Every vLLM internal these modules touch is named in ``compat``; the records they
write are described in ``records``. Importing this package is cheap: no torch, no
numpy, no vLLM import until a hook runs.
"""
