"""One place for coil's options, each read from a ``COIL_*`` environment variable.

Options are functions rather than module constants so a test (or a user) can
change the environment after ``import coil`` and be heard.

* ``COIL_CACHE_DIR`` -- where compiled modules are written
  (:mod:`coil.runtime.codecache`). Default: ``$XDG_CACHE_HOME/coil``, else
  ``~/.cache/coil``.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """The code cache's root directory (not created here)."""
    if explicit := os.environ.get("COIL_CACHE_DIR"):
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join("~", ".cache")
    return Path(base).expanduser() / "coil"
