"""The live path: profiling a vLLM engine while it runs.

``vllm/`` runs inside vLLM's processes (the plugin, its hooks and their recorder);
the modules here run in the caller: they switch the hooks on and off over vLLM's RPC,
assemble the records into a Profile and drive the live command.
"""
