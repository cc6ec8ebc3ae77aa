"""Per-family lowerings (op node -> launches), collected by ``cuvil_kernels_hip.lowering``."""
