"""Graph replays (CUDA / HIP / XPU graphs): their kernels matched to the launches their capture traces recorded, and their share of the attribution."""
