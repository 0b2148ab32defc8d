"""``fx-opt``, ``coil`` and ``python`` for the tests that run them as commands, served by
lit's fork server (test/lit_forkserver.py) instead of a fresh interpreter each.

A fresh ``fx-opt`` or ``coil`` imports torch, xDSL and coil's dialects before
it does anything: 4-6 s of CPU on the 2-core CI machine, for a command that
then runs in well under a second, and test_readme.py, test_cli_and_backend.py
and test_backend.py run some forty of them (``coil reduce`` runs its command
again for every candidate). :func:`env` starts one server per test process on
its first call; it imports all of that once, and the environment it returns
puts the server's shims first on ``PATH``. A shim forks the server into the
command, so each command still sees what a fresh process sees (only the
imports happened before the fork), and runs the real program whenever the
server cannot give exactly that (lit_forkserver.py says when: an environment
that differs in anything but ``COIL_*`` and bookkeeping variables).
``COIL_LIT_FORKSERVER=0`` runs every command the ordinary way, as for lit.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

TEST_DIR = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

_shims: Path | None = None


def _plain_env(warnings: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    # torch writes its default Inductor cache folder into os.environ the first
    # time it asks for it (cache_dir_utils.cache_dir): the folder a command
    # finds by itself when the variable is unset, but a difference from the
    # server's start that made it decline every command after the test
    # process's first compile.
    from torch._inductor.runtime.cache_dir_utils import default_cache_dir

    if env.get("TORCHINDUCTOR_CACHE_DIR") == os.path.abspath(default_cache_dir()):
        del env["TORCHINDUCTOR_CACHE_DIR"]
    env["PYTHONWARNINGS"] = warnings
    return env


def _start() -> Path | None:
    """Start the server with :func:`env`'s environment; its shims' folder, or
    None where it is turned off or did not come up."""
    if os.environ.get("COIL_LIT_FORKSERVER", "1") == "0":
        return None
    sys.path.insert(0, str(TEST_DIR))
    import lit_forkserver

    server_env = _plain_env("ignore")
    server_env["PATH"] = os.pathsep.join([str(BIN), server_env.get("PATH", "")])
    # The imports take a few seconds (more on a loaded machine).
    shims = Path(lit_forkserver.start(sys.executable, str(BIN), server_env, "coil-served-", 120))
    # `python SCRIPT` and `python -m MODULE` served too (test_readme.py runs the
    # README's `python -m coil.tools...` lines); any other `python` the server
    # declines, and the shim runs this interpreter.
    (shims / "python").symlink_to(lit_forkserver.SHIMS["python"])
    return shims if (shims.parent / "sock").exists() else None


def env(warnings: str = "ignore") -> dict[str, str]:
    """The environment to run ``fx-opt``/``coil`` by name in: the served shims
    (started on the first call) first on ``PATH``, then this interpreter's
    scripts. With ``warnings`` other than "ignore" the server (started with
    PYTHONWARNINGS=ignore) declines, and the commands start the ordinary way."""
    global _shims
    if _shims is None:
        _shims = _start() or BIN
    out = _plain_env(warnings)
    out["PATH"] = os.pathsep.join(dict.fromkeys([str(_shims), str(BIN), out.get("PATH", "")]))
    return out


def python(script: str | Path, *args: str | Path) -> list[str]:
    """The command line of ``python SCRIPT ARGS``, served where it can be: a
    process of its own (a crash or ``sys.exit`` there is the command's), forked
    after the imports instead of importing torch again (~5 s of CPU on the
    2-core CI machine). Run it with ``env=env()``; a test that checks what a
    fresh interpreter imports or warns must start ``sys.executable`` itself."""
    return [tool("python"), str(script), *map(str, args)]


def tool(name: str) -> str:
    """The path of command ``name`` (``fx-opt`` or ``coil``), served where it can be."""
    env()
    assert _shims is not None
    return str(_shims / name)
