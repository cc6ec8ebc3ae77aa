"""Kernel library of the ``cuda`` pack: generic map/zip/reduce kernels plus dedicated ones.

Every public function takes numpy or numba device arrays and returns a numba device array; kernels
are built on first use and cached by (op, variant) in :mod:`cuvil_kernels_cuda.kernels.common`.
"""
