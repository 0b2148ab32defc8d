"""The graph cache: a compiled graph's wrapper module, found again by what went in.

Modelled on Inductor's ``FxGraphCache`` (torch/_inductor/codecache.py). The
backend imports a graph into the aten dialect, and :func:`graph_key` hashes

* ``ir`` -- the imported IR as text, with symbolic sizes and with locations
  (the generated code names the user lines it came from). Small ``get_attr``
  constants are inlined as dense literals by the importer, so their *values*
  are in this text; large ones are trailing function arguments whose values
  the caller passes on every call, so only their metadata is keyed;
* ``inputs`` -- the function's argument types and attributes: sizes (symbolic
  or static), strides, dtypes, devices, which arguments are size symbols and
  which are lifted constants (their types only);
* ``pipeline`` -- the pass-pipeline string, pass options included;
* ``options`` -- the backend options that can change the generated code
  (everything but ``dump_dir``, ``cache`` and ``progress``);
* ``versions`` -- coil's version and a hash of its own sources (a changed
  compiler must not reuse old output: Inductor's ``torch_key`` does the same),
  torch, triton, xdsl, sympy and Python.

Compilation reads nothing else: no size hints, no environment. The device's
properties (SM count, bandwidth, ... :mod:`coil.strategy.target`) are read
once, at import, into the module's ``coil.target`` attribute: they are part of
``ir``, so a graph compiled for one GPU is never reused on another kind.

An entry, ``<cache dir>/graphs/<key[:2]>/<key>.json``, holds the emitted
``-t python`` source (self-contained: a hit needs no other file) and whether
its kernels run under Triton's interpreter. A hit loads that source through
the code cache (:func:`coil.runtime.codecache.load_module`) and skips every
pass and the emitter; only the import, which the key needs, runs.

Integrity. The entry is one header line ``coil-graph-cache 1 <sha256 of the
payload>`` and a JSON payload. It is written atomically (a temporary file in
the same directory, fsync, rename: on a local disk and on NFS a reader sees a
complete old file, a complete new one or none), so processes on one machine or
several sharing the directory may compile the same graph at once: each writes
the same bytes. A reader checks the header, the checksum, the JSON, the key it
names and its fields; an entry failing any of that (truncated, corrupt,
another format) is a miss with that reason and is rewritten after the compile.

Every lookup is logged once on the ``coil`` logger (INFO): ``hit``, ``miss``
with why, or ``bypass`` with why (``options={"cache": False}``,
``COIL_DISABLE_CACHE=1``, a dump directory or an observer that wants every
stage). A directory that cannot be written costs one warning
(:func:`coil.runtime.codecache.warn_unwritable`); the compile goes on.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from coil import config
from coil.runtime.codecache import warn_unwritable, write_atomic

log = logging.getLogger("coil")

FORMAT = 1
_MAGIC = "coil-graph-cache"

UNKEYED_OPTIONS = frozenset({"dump_dir", "cache", "progress"})
"""Backend options that cannot change the generated code, left out of the key."""


@dataclass(frozen=True)
class GraphKey:
    """The key of one compiled graph: ``digest`` (hex sha256) over ``components``
    (name -> sha256 of that component's text), which entries keep for debugging."""

    digest: str
    components: dict[str, str]


@dataclass(frozen=True)
class CachedGraph:
    """What a hit returns: the ``-t python`` source and how to load it."""

    source: str
    interpret: bool


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


COMPILER_PACKAGES = (
    "dialects",
    "frontend",
    "strategy",
    "transforms",
    "lowering",
    "targets",
    "runtime",
)
"""The folders of coil whose sources can change what it generates (with the top level)."""


@functools.cache
def coil_source_hash() -> str:
    """sha256 over coil's own Python sources (the compiler, not its tests)."""
    return source_hash(Path(__file__).resolve().parent.parent)


def source_hash(root: Path) -> str:
    """sha256 over the ``.py`` files at ``root``'s top level and in its compiler folders."""
    files = sorted(root.glob("*.py"))
    for package in COMPILER_PACKAGES:
        files += sorted((root / package).rglob("*.py"))
    digest = hashlib.sha256()
    for path in files:
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


@functools.cache
def versions() -> str:
    """The versions a cache entry is valid for, as one line of text."""
    from importlib.metadata import PackageNotFoundError, version

    import sympy
    import torch
    import triton

    import coil

    try:
        xdsl_version = version("xdsl")
    except PackageNotFoundError:  # a source checkout on the path
        xdsl_version = "unknown"
    return json.dumps(
        {
            "coil": coil.__version__,
            "coil_sources": coil_source_hash(),
            "torch": torch.__version__,
            "triton": triton.__version__,
            "xdsl": xdsl_version,
            "sympy": sympy.__version__,
            "python": sys.version,
        },
        sort_keys=True,
    )


def input_metadata(module: ModuleOp) -> str:
    """The function's argument types and attributes, one argument per line."""
    from coil.ir import print_module

    lines = []
    for fn in module.ops:
        if not isinstance(fn, func.FuncOp):
            continue
        attrs = fn.arg_attrs.data if fn.arg_attrs is not None else [None] * len(fn.args)
        for t, a in zip(fn.function_type.inputs.data, attrs, strict=True):
            lines.append(f"{t}" + (f" {a}" if a is not None and a.data else ""))
    if not lines:  # not a function module: the text is all there is
        return print_module(module)
    return "\n".join(lines)


def graph_key(
    module: ModuleOp, pipeline: str, options: Mapping[str, Any] | None = None
) -> GraphKey:
    """The key of compiling the imported ``module`` with ``pipeline`` and ``options``."""
    from coil.ir import print_module

    keyed = {k: repr(v) for k, v in sorted((options or {}).items()) if k not in UNKEYED_OPTIONS}
    components = {
        "ir": _sha(print_module(module, debuginfo=True)),
        "inputs": _sha(input_metadata(module)),
        "pipeline": _sha(pipeline),
        "options": _sha(json.dumps(keyed, sort_keys=True)),
        "versions": _sha(versions()),
    }
    digest = _sha(json.dumps({"format": FORMAT, **components}, sort_keys=True))
    return GraphKey(digest, components)


def entry_path(key: GraphKey | str) -> Path:
    digest = key.digest if isinstance(key, GraphKey) else key
    return config.cache_dir() / "graphs" / digest[:2] / f"{digest}.json"


def entry_bytes(key: GraphKey, graph: CachedGraph) -> bytes:
    """A whole entry: the header line with the payload's checksum, then the payload."""
    payload = json.dumps(
        {
            "key": key.digest,
            "components": key.components,
            "interpret": graph.interpret,
            "source": graph.source,
        },
        sort_keys=True,
    ).encode()
    return f"{_MAGIC} {FORMAT} {hashlib.sha256(payload).hexdigest()}\n".encode() + payload


def read_entry(key: GraphKey) -> tuple[CachedGraph | None, str]:
    """The entry for ``key`` and why it is a hit, or ``None`` and why it is a miss."""
    path = entry_path(key)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None, "no entry"
    except OSError as error:
        return None, f"entry unreadable ({type(error).__name__}: {error})"
    header, newline, payload = data.partition(b"\n")
    parts = header.decode(errors="replace").split(" ")
    if not newline or len(parts) != 3 or parts[0] != _MAGIC:
        return None, "corrupt entry (no header; truncated or not an entry)"
    if parts[1] != str(FORMAT):
        return None, f"entry of another format ({parts[1]})"
    if hashlib.sha256(payload).hexdigest() != parts[2]:
        return None, "corrupt entry (checksum mismatch; truncated or damaged)"
    try:
        fields = json.loads(payload)
        source, interpret, digest = fields["source"], fields["interpret"], fields["key"]
    except (ValueError, KeyError, TypeError) as error:
        return None, f"corrupt entry ({type(error).__name__})"
    if digest != key.digest or not isinstance(source, str) or not isinstance(interpret, bool):
        return None, "corrupt entry (fields do not match the key)"
    return CachedGraph(source, interpret), "an intact entry with this key"


def write_entry(key: GraphKey, graph: CachedGraph) -> bool:
    """Store ``graph`` under ``key``; ``False`` (after one warning per directory)
    when the cache directory cannot be written."""
    path = entry_path(key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, entry_bytes(key, graph))
    except OSError as error:
        warn_unwritable(config.cache_dir(), error)
        return False
    return True


def bypass_reason(
    enabled: bool | None, *, dump_dir: object = None, observed: bool = False
) -> str | None:
    """Why this compile does not use the cache, or ``None`` when it does.

    ``enabled`` is the backend option ``cache`` (``None``: not given)."""
    if enabled is False:
        return "disabled by the option cache=False"
    if enabled is None and config.cache_disabled():
        return "disabled by COIL_DISABLE_CACHE"
    if dump_dir:
        return "a dump directory is set (every stage must run to be written)"
    if observed:
        return "an observer wants every stage"
    return None


def report(label: str, outcome: str, reason: str, key: GraphKey | None = None) -> None:
    """Log a lookup's outcome once: ``hit``, ``miss`` or ``bypass``, with why."""
    at = f" (key {key.digest[:16]})" if key is not None else ""
    log.info("coil: graph cache %s for %s: %s%s", outcome, label, reason, at)
