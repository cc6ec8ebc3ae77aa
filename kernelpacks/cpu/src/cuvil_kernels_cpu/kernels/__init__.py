"""The CPU kernel library: Numba-compiled kernels on numpy arrays (importing it imports numba)."""
