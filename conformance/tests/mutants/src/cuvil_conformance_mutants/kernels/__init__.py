"""Vendor-style kernels with planted-bug switches (``bug=None`` is the correct kernel)."""
