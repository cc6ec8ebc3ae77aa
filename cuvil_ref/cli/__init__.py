"""The ``cuvil`` command line: ``cuvil targets | compile | inspect | run | bench | sign | ...``.

``cuvil_ref.cli.main:cli`` is the click group and ``main()`` the console-script entry point. Each
command group lives in its own module; ``render`` turns reports into rich tables and
``graph_render`` writes graphs as Graphviz dot or Mermaid.
"""

from __future__ import annotations
