"""Cuvil kernel pack for target ``cuda``: Numba-CUDA kernels that also run in the CUDA simulator.

Importing this package never imports ``numba.cuda``: kernels are compiled on first use and the
device library is loaded lazily by :mod:`cuvil_kernels_cuda.device`. Use :func:`availability` to ask
whether a GPU (or the simulator, ``NUMBA_ENABLE_CUDASIM=1``) can run them.
"""

from __future__ import annotations

from cuvil_kernels_cuda.device import availability

__version__ = "0.1.0"
TARGET = "cuda"

__all__ = ["TARGET", "__version__", "availability"]
