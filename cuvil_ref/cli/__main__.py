"""``python -m cuvil_ref.cli`` runs the ``cuvil`` command line."""

from __future__ import annotations

from cuvil_ref.cli.main import main

if __name__ == "__main__":
    main()
