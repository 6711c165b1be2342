"""Engine steps: found from evidence in layers (``find``: annotations, runner scopes, frames, device bursts), their phases, each step on the device's clock, why the device idled, and the verdicts."""
