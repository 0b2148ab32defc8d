"""One place for coil's options, each read from a ``COIL_*`` environment variable.

Options are functions rather than module constants so a test (or a user) can
change the environment after ``import coil`` and be heard.

* ``COIL_CACHE_DIR`` -- where compiled modules are written
  (:mod:`coil.runtime.codecache`). Default: ``$XDG_CACHE_HOME/coil``, else
  ``~/.cache/coil``.
* ``COIL_FALLBACK`` -- the backend's fallback policy when ``options`` names none
  (``eager``, ``extern`` or ``error``; see ``coil.backend.OPTIONS``). Default:
  ``eager``. The test suite sets ``extern`` so that a graph coil fails to
  compile fails its test instead of passing through eager PyTorch.
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


FALLBACKS = ("eager", "extern", "error")
"""The fallback policies, most lenient first (``coil.backend.OPTIONS`` says what
each allows)."""


def fallback() -> str:
    """The default fallback policy (``COIL_FALLBACK``, else ``eager``)."""
    value = os.environ.get("COIL_FALLBACK") or "eager"
    if value not in FALLBACKS:
        raise ValueError(
            f"coil: COIL_FALLBACK must be one of {', '.join(FALLBACKS)}, not {value!r}"
        )
    return value
