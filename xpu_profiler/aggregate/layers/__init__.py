"""Decoder layers per step: found from evidence in layers (``find``: module frames, captured launches, graph pieces, the config, the kernel period), their kinds, and the Summary's layer section."""
