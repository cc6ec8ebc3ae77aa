"""Packs run from a copied source tree, with nothing pip-installed (the GPU machines).

Packs are found through their entry points, which exist only once a distribution is installed.
A checkout copied to a GPU machine and run with ``PYTHONPATH`` has none, so ``"cuda"`` or
``"hip"`` would be an unknown target there. :func:`use_source_pack` installs a process-wide host
holding every installed pack and, when none of them provides the target, the pack's plugin
module imported from the source tree.
"""

from __future__ import annotations

import importlib

from cuvil_ref.errors import TargetError
from cuvil_ref.plugin.host import PackRecord, PluginHost, reset_host

SOURCE_TREE_VERSION = "source tree"


def use_source_pack(target: str, module: str) -> PluginHost:
    """Make ``target`` resolvable in this process; ``module`` is its pack's plugin module
    (``cuvil_kernels_cuda.plugin``), used only when no installed pack provides ``target``."""
    host = PluginHost()
    host.load_entry_points()
    if target not in host.target_names():
        try:
            plugin = importlib.import_module(module)
        except ImportError as exc:
            raise TargetError(
                f"target '{target}': no installed pack provides it and its plugin module "
                f"'{module}' does not import ({exc}); put the pack's src/ on PYTHONPATH"
            ) from exc
        record = host.register(plugin, PackRecord(target, module, SOURCE_TREE_VERSION))
        if target not in host.target_names():
            raise TargetError(
                f"target '{target}': module '{module}' does not provide it "
                f"({record.error or 'its targets: ' + str([t.name for t in record.targets])})"
            )
    reset_host(host)
    return host
