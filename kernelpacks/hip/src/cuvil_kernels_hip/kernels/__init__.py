"""Kernel-source generators, one file per family; each returns a ``KernelSource``."""
