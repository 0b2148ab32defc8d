"""Precompiled headers for coil's C++ builds (GCC), cached across processes.

Parsing torch's headers is nearly all of a C++ wrapper's build: the 60 lines of
a small wrapper take g++ 11 s of CPU here, 10 of them in the front end reading
the ~250,000 preprocessed lines of ``runtime/cpp/coil_runtime.h``
(``ATen/core/Tensor.h`` and ``ATen/core/dispatch/Dispatcher.h``). A
precompiled header (``.gch``) is that parse done once and saved: GCC loads it
instead of the header when it is valid for the compile (same compiler binary,
same flags and macros) and ignores it otherwise. Inductor does the same for
its cpp_wrapper and kernel prefix headers (``_precompile_header`` in
torch/_inductor/codecache.py).

:func:`include_dir` returns a directory to put first on the include path,
holding ``NAME.gch`` and a one-line stub ``NAME`` that includes the real header
(so a ``.gch`` GCC rejects costs only the plain parse). It is built once per
key under ``<config.cpp_cache_dir()>/pch/<key>/`` and kept there from run to
run, like the CPU kernel libraries: the key is sha256 of the compiler's path
and ``--version``, the flags, the header's path and text, and what the caller
adds (coil passes torch's version and include directories). Headers are
outside coil's control (a reinstalled torch of the same version), so a build
also records every file the header pulled in (``-MD``) with its size and
modification time; a PCH whose files changed since is stale and rebuilt. A
build runs under an advisory lock (``fcntl.flock``, one builder per key), in a
temporary directory renamed into place, so a reader sees a complete PCH or
none; each use touches the directory, and a new build removes all but the
``KEPT`` most recently used (an edited header or a new torch is a new key; the
wrapper's PCH is 242 MiB). A compile the PCH breaks (a truncated ``.gch`` is a hard error in GCC,
not a silent miss) is the caller's to retry without it: :func:`discard` removes
the PCH and :func:`say_once` says so.

Only GCC: clang's PCH is a different mechanism (``-include-pch``) and is not
looked up next to a header; with clang :func:`include_dir` returns None and the
build parses the header as before. ``COIL_CPP_PCH=0`` turns PCHs off.

Module state (caches, not options): the per-process memo of validated PCH
directories, of the keys whose build failed (not retried in the process), of
the builds running in the background thread, and the messages already said.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import fcntl
import functools
import hashlib
import os
import shlex
import shutil
import subprocess
import tempfile
import threading
import time
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path

from coil import config

DEPS_FILE = "deps.txt"

_lock = threading.RLock()
_valid: dict[str, Path] = {}
_failed: set[str] = set()
_pending: dict[str, concurrent.futures.Future] = {}
_executor: concurrent.futures.ThreadPoolExecutor | None = None
_said: set[str] = set()


def say_once(message: str) -> None:
    """Warn with ``message`` once per process."""
    if message not in _said:
        _said.add(message)
        warnings.warn(message, stacklevel=3)


@functools.cache
def compiler_version(compiler: str) -> str:
    """The first line of ``compiler --version`` ('' when it cannot be run)."""
    try:
        out = subprocess.run([compiler, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.splitlines()[0] if out.returncode == 0 and out.stdout else ""


@functools.cache
def is_gcc(compiler: str) -> bool:
    """Whether ``compiler`` is GCC (``g++``, or a ``c++`` that is g++): it defines
    ``__GNUC__`` and not ``__clang__`` (clang defines both)."""
    try:
        out = subprocess.run(
            [compiler, "-dM", "-E", "-x", "c++", os.devnull],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return out.returncode == 0 and "__GNUC__" in out.stdout and "__clang__" not in out.stdout


def pch_key(compiler: str, header: Path, flags: Sequence[str], extra: str = "") -> str:
    """sha256 of what a PCH depends on, apart from the files it includes."""
    digest = hashlib.sha256()
    for part in (
        compiler,
        compiler_version(compiler),
        shlex.join(flags),
        str(header.resolve()),
        header.read_text(),
        extra,
    ):
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()


def pch_root() -> Path:
    return config.cpp_cache_dir() / "pch"


def _fingerprint(paths: Sequence[str]) -> list[str]:
    lines = []
    for p in paths:
        st = os.stat(p)
        lines.append(f"{st.st_mtime_ns} {st.st_size} {p}")
    return lines


def _read_depfile(path: Path) -> list[str]:
    """The prerequisites of a make rule written by ``-MD -MF`` (paths without spaces)."""
    text = path.read_text().replace("\\\n", " ")
    _, _, prerequisites = text.partition(":")
    return [p for p in prerequisites.split() if p != "\\"]


def is_current(directory: Path) -> bool:
    """Whether the PCH in ``directory`` is complete and no file it includes changed."""
    deps = directory / DEPS_FILE
    try:
        recorded = deps.read_text().splitlines()
        paths = [line.split(" ", 2)[2] for line in recorded]
        return bool(recorded) and _fingerprint(paths) == recorded
    except (OSError, IndexError):
        return False


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def discard(directory: Path) -> None:
    """Remove a PCH directory (renamed away first, so no reader sees half of it)."""
    trash = directory.with_name(f".trash-{directory.name}-{os.getpid()}-{threading.get_ident()}")
    try:
        os.replace(directory, trash)
    except OSError:
        return
    shutil.rmtree(trash, ignore_errors=True)
    with _lock:
        for key, path in list(_valid.items()):
            if path == directory:
                del _valid[key]


ABANDONED_S = 3600


def _remove_abandoned(root: Path) -> None:
    """Temporary build directories older than an hour: a builder that was killed
    (a 242 MiB .gch each for the wrapper's header)."""
    now = time.time()
    for entry in root.glob(".*"):
        try:
            if entry.is_dir() and now - entry.stat().st_mtime > ABANDONED_S:
                shutil.rmtree(entry, ignore_errors=True)
        except OSError:
            pass


def _build(compiler: str, header: Path, flags: Sequence[str], final: Path) -> None:
    name = header.name
    _remove_abandoned(final.parent)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name[:16]}.", dir=final.parent))
    try:
        # The stub is what GCC reads when it rejects the .gch: the real header.
        (tmp / name).write_text(f'#include "{header.resolve()}"\n')
        cmd = [
            compiler,
            "-x",
            "c++-header",
            *flags,
            str(tmp / name),
            "-o",
            str(tmp / f"{name}.gch"),
            "-MD",
            "-MF",
            str(tmp / "deps.d"),
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            lines = (proc.stderr or proc.stdout).strip().splitlines()
            first = next((line for line in lines if "error" in line), lines[0] if lines else "")
            raise OSError(f"{Path(compiler).name} exit {proc.returncode}: {first.strip()}")
        deps = [p for p in _read_depfile(tmp / "deps.d") if Path(p) != tmp / name]
        (tmp / DEPS_FILE).write_text("\n".join(_fingerprint(deps)) + "\n")
        (tmp / "deps.d").unlink()
        if final.exists():  # stale: replace it
            discard(final)
        os.replace(tmp, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    _prune(final.parent, keep=final)


KEPT = 6


def _prune(root: Path, keep: Path) -> None:
    """Keep the ``KEPT`` most recently used PCHs (each use touches its directory):
    an edited header or an upgraded torch is a new key, and the old PCH (up to
    242 MiB) would stay forever. One used in the last hour stays regardless:
    another process may be compiling with it."""
    now = time.time()
    entries = []
    for entry in root.iterdir():
        try:
            # PCH directories only (not the CPU kernels' headers/).
            if (entry / DEPS_FILE).is_file() and not entry.name.startswith(".") and entry != keep:
                entries.append((entry.stat().st_mtime, entry))
        except OSError:
            pass
    entries.sort(reverse=True)
    for mtime, entry in entries[KEPT - 1 :]:
        if now - mtime > ABANDONED_S:
            discard(entry)
            with contextlib.suppress(OSError):
                (root / f"{entry.name}.lock").unlink()


def _background() -> concurrent.futures.ThreadPoolExecutor:
    global _executor
    with _lock:
        if _executor is None:
            _executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="coil-pch")
        return _executor


def include_dir(
    compiler: str, header: Path, flags: Sequence[str], *, extra: str = "", wait: bool = True
) -> Path | None:
    """The directory holding ``header``'s PCH for a compile with ``flags`` (every
    flag that reaches the compiler but the source, output and link flags),
    built now if absent or stale; None where PCHs are off, the compiler is not
    GCC, or the PCH cannot be built (said once; the build goes on without).
    ``wait=False``: where the PCH is not built yet, start building it in a
    background thread and return None (this compile parses the header; the
    next one in this process waits for that build, sooner done than a plain
    compile)."""
    if not config.cpp_pch() or not is_gcc(compiler):
        return None
    key = pch_key(compiler, header, flags, extra)
    with _lock:
        if key in _failed:
            return None
        if key in _valid and _valid[key].is_dir():
            return _valid[key]
        pending = _pending.get(key)
    if pending is not None:
        return pending.result()
    final = pch_root() / key[:32]
    if not wait and not is_current(final):
        with _lock:
            if key not in _pending:
                _pending[key] = _background().submit(_ensure, compiler, header, flags, key, final)
        return None
    return _ensure(compiler, header, flags, key, final)


def _ensure(
    compiler: str, header: Path, flags: Sequence[str], key: str, final: Path
) -> Path | None:
    if not is_current(final):
        try:
            final.parent.mkdir(parents=True, exist_ok=True)
            with _locked(final.parent / f"{key[:32]}.lock"):
                if not is_current(final):  # another process may have built it meanwhile
                    _build(compiler, header, flags, final)
        except OSError as e:
            with _lock:
                _failed.add(key)  # not tried again in this process
            say_once(f"coil: could not precompile {header.name} ({e}); C++ builds parse it in full")
            return None
    with contextlib.suppress(OSError):
        os.utime(final)  # used now (for _prune)
    with _lock:
        _valid[key] = final
    return final
