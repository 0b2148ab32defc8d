"""The code cache: generated Python modules written to disk once and imported.

Modelled on Inductor's ``PyCodeCache``. :func:`load_module` hashes the source
(:func:`source_key`: the source plus the coil, torch, triton and Python
versions), writes it to ``<cache_dir>/<key[:2]>/<key>.py`` and imports it as
``coil_generated_<key>``. Kernels must live in a real file: ``@triton.jit``
reads its function's source with ``inspect.getsourcelines`` (and the
interpreter re-parses it), which goes through ``linecache`` to that file.

Integrity. An entry is the source followed by one trailer line
``# coil-checksum: <sha256 of the source>``. Entries are written atomically
(:func:`write_atomic`: a temporary file in the same directory, fsync,
``os.replace``), so a reader sees a complete old file or a complete new one;
two processes compiling the same source at once both write, and both import a
complete file. On load, an entry whose bytes are not exactly source + trailer
(truncated, corrupt, an interrupted writer's leftovers) is rewritten, never
imported. The module is executed from the very text that was checked (compiled
with the entry's path as filename), not re-read from disk, so no ``.pyc`` and
no concurrent writer can slip a different text in between.

Interpreter mode (``interpret=True``, used for CPU tensors). Triton chooses
between a compiled kernel and an interpreted one when ``@triton.jit``
*decorates* the function, not when it is launched: ``triton.jit``'s inner
``decorator`` returns ``InterpretedFunction(fn, ...)`` if the interpreter is on
and ``JITFunction(fn, ...)`` otherwise. Triton 3.0-3.3 test
``os.getenv("TRITON_INTERPRET", "0") == "1"`` there; 3.4+ test
``knobs.runtime.interpret`` (an ``env_bool`` re-read from ``TRITON_INTERPRET``
on every access unless set in Python) -- ``triton/runtime/jit.py::jit`` in 3.9.
So coil's decoration and launches run inside :func:`interpreter_scope`, where
Triton reads ``TRITON_INTERPRET`` as on: exactly that module's kernels become
``InterpretedFunction`` objects. ``triton`` and ``triton.language`` are
imported *before* the scope: importing them under it would make triton's own
library interpreted for the whole process.

That alone is not enough to *launch* them. Triton's library functions
(``tl.sum``, ``tl.max``, ``tl.cdiv``, ``tl.rand``, ``tl.randn``, ... in
``language/standard.py`` and ``language/random.py``) are ``@jit`` functions
decorated when triton was imported, i.e. ``JITFunction`` objects, whose
``__call__`` raises "Cannot call @triton.jit'd outside of the scope of a
kernel"; and the interpreter only patches ``tl`` builtins, not ``@jit``
functions (an interpreted kernel calling ``tl.sum`` fails exactly so in 3.9).
A few library helpers (``constexpr_function``) also read the knob at launch.
So each kernel of an interpreted module is wrapped (:class:`InterpretedKernel`)
and every launch runs inside the scope, where ``JITFunction.__call__`` runs
the function through a cached ``InterpretedFunction(jit_fn.fn)``, which is
what those library functions would have been had triton been imported under
the variable. The scope also turns on the interpreter's device assertions,
lets a scalar argument be an index and reduces custom combiners as a tree.

The scope belongs to the thread that enters it. Its hooks (the
``knobs.runtime.interpret`` descriptor, ``JITFunction.__call__``, the
interpreter builder's options, ``_patch_lang_tensor``,
``ReduceOps.generic_reduce``) are installed while any thread is inside a
scope (reference-counted, removed when the last one leaves) and each checks
:func:`in_interpreter_scope` first: another thread, or a user's own Triton
code outside coil's launches, decorates, calls and interprets kernels exactly
as without coil, and ``os.environ`` is not touched. (Triton 3.2-3.3, which
read the variable rather than the knob, get ``TRITON_INTERPRET=1`` in the
environment for the scope's duration, process-wide.) When the last scope ends
the attributes of ``triton.language``'s modules and classes are restored from
a snapshot, because the interpreter's device calls patch them and never undo
it (``InterpretedFunction.__call__`` discards its patch scope, in 3.6 and 3.9
alike), which broke a later GPU compile in the same process. Only names that
exist since triton 3.0 are needed: ``JITFunction`` (with ``.fn``),
``triton.runtime.interpreter.InterpretedFunction(fn)``, ``kernel[grid](...)``.

An unwritable cache directory (read-only, on a full disk, a path through a
file) does not fail a compile: an entry that is already there and intact is
still imported from it; one that must be written goes to a private temporary
directory of this process instead, and :func:`warn_unwritable` says so once
per directory (the graph cache shares that one warning).

Module state (kept here rather than in ``config``, being caches, not
options): the in-process memo ``(key, interpret)`` -> module, which like
Inductor's ``PyCodeCache.modules`` only saves re-executing a loaded module
(an interpreted load is named ``coil_generated_<key>_interpret`` so both
flavours of one source coexist in ``sys.modules``); and the interpreter
scope's depth counter and its ``InterpretedFunction`` wrappers of library
functions; the directories already warned about as unwritable and the
temporary directory that stands in for them.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import hashlib
import importlib.util
import linecache
import logging
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from coil import config

log = logging.getLogger(__name__)

_TRAILER = "# coil-checksum: "
_modules: dict[tuple[str, bool], ModuleType] = {}
_lock = threading.RLock()
_unwritable: set[str] = set()
_fallback_root: Path | None = None


def cache_dir() -> Path:
    """The cache root: ``COIL_CACHE_DIR``, else ``$XDG_CACHE_HOME/coil`` or
    ``~/.cache/coil``; created on demand."""
    path = config.cache_dir()
    path.mkdir(parents=True, exist_ok=True)
    return path


@functools.cache
def _salt() -> str:
    import torch
    import triton

    import coil

    return "\0".join((coil.__version__, torch.__version__, triton.__version__, sys.version))


def source_key(source: str) -> str:
    """sha256 (hex) of ``source`` and the coil/torch/triton/Python versions."""
    digest = hashlib.sha256(_salt().encode())
    digest.update(b"\0")
    digest.update(source.encode())
    return digest.hexdigest()


def entry_text(source: str) -> str:
    """What a cache entry for ``source`` holds: the source, then the checksum line."""
    checksum = hashlib.sha256(source.encode()).hexdigest()
    newline = "" if source.endswith("\n") or not source else "\n"
    return f"{source}{newline}{_TRAILER}{checksum}\n"


def write_atomic(path: Path | str, text: str | bytes) -> None:
    """Write ``text`` (utf-8, or bytes) to ``path`` so readers see the whole file or none."""
    path = Path(path)
    tmp = tempfile.NamedTemporaryFile(
        dir=path.parent, prefix=f".{path.name}.", suffix=".tmp", delete=False
    )
    try:
        with tmp:
            tmp.write(text if isinstance(text, bytes) else text.encode())
            tmp.flush()
            os.fsync(tmp.fileno())
        os.replace(tmp.name, path)
    except BaseException:
        Path(tmp.name).unlink(missing_ok=True)
        raise


def entry_path(key: str) -> Path:
    """Where the entry for ``key`` lives (no directory is created here)."""
    return config.cache_dir() / key[:2] / f"{key}.py"


def warn_unwritable(root: Path, error: OSError) -> None:
    """Warn once per process and directory that the cache at ``root`` cannot be written."""
    with _lock:
        if str(root) in _unwritable:
            return
        _unwritable.add(str(root))
    logging.getLogger("coil").warning(
        "coil: the cache directory %s is not writable (%s: %s); compiling anyway: "
        "compiled graphs are not cached and generated modules go to a temporary directory",
        root,
        type(error).__name__,
        error,
    )


def _temporary_root() -> Path:
    global _fallback_root
    with _lock:
        if _fallback_root is None:
            _fallback_root = Path(tempfile.mkdtemp(prefix="coil-cache-"))
            atexit.register(shutil.rmtree, _fallback_root, True)
        return _fallback_root


def _ensure_entry(path: Path, text: str) -> Path:
    """Make ``path`` hold exactly ``text``; returns where the entry is (``path``,
    or the same name in the temporary directory when ``path`` cannot be written)."""
    data = text.encode()
    try:
        current = path.read_bytes()
    except OSError:  # missing, or its directory is unreadable or not a directory
        current = None
    if current == data:
        return path
    if current is not None:
        log.debug("rewriting bad cache entry %s (%d bytes)", path, len(current))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text)
        return path
    except OSError as error:
        warn_unwritable(path.parent.parent, error)
    fallback = _temporary_root() / path.parent.name / path.name
    fallback.parent.mkdir(parents=True, exist_ok=True)
    if not fallback.is_file() or fallback.read_bytes() != data:
        write_atomic(fallback, text)
    return fallback


@contextlib.contextmanager
def _environ(name: str, value: str) -> Iterator[None]:
    previous = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = previous


_scope_lock = threading.Lock()
_scope_depth = 0
_scope_undo: list[Callable[[], None]] = []
_interpreted_library: dict[int, tuple[Any, Any]] = {}
_thread = threading.local()


def in_interpreter_scope() -> bool:
    """Whether this thread is inside :func:`interpreter_scope` (loading or
    launching coil's interpreted kernels). The hooks the scope installs act
    only then: any other thread, and this one outside the scope, see Triton
    unchanged."""
    return getattr(_thread, "depth", 0) > 0


def _interpret_library_calls() -> Callable[[], None]:
    """Install ``JITFunction.__call__`` so that, inside the scope, a ``@jit``
    library function called from an interpreted kernel (``tl.sum``) runs
    through a cached ``InterpretedFunction``; outside it (another thread, a
    user's call) it does what it did before (raise). Returns the undo."""
    from triton.runtime.jit import JITFunction

    had_call = "__call__" in JITFunction.__dict__
    saved_call = next(vars(k)["__call__"] for k in JITFunction.__mro__ if "__call__" in vars(k))

    def call(jit_fn: Any, *args: Any, **kwargs: Any) -> Any:
        if not in_interpreter_scope():
            return saved_call(jit_fn, *args, **kwargs)
        return _call_library_interpreted(jit_fn, *args, **kwargs)

    call._coil_interpreted = True  # type: ignore[attr-defined]
    JITFunction.__call__ = call

    def undo() -> None:
        if had_call:
            JITFunction.__call__ = saved_call
        else:
            del JITFunction.__call__

    return undo


def _call_library_interpreted(jit_fn: Any, *args: Any, **kwargs: Any) -> Any:
    from triton.runtime.interpreter import InterpretedFunction

    entry = _interpreted_library.get(id(jit_fn))
    if entry is None:
        # Keep jit_fn alive with its wrapper so the id stays unique.
        entry = _interpreted_library[id(jit_fn)] = (jit_fn, InterpretedFunction(jit_fn.fn))
    return entry[1](*args, **kwargs)


class _ScopedKnob:
    """``triton.knobs.runtime.interpret`` that reads True in a thread inside the
    scope and what it read before everywhere else (the environment variable,
    or a value set in Python)."""

    def __init__(self, original: Any) -> None:
        self.original = original

    def __set_name__(self, owner: type, name: str) -> None:  # pragma: no cover
        pass

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        if obj is not None and in_interpreter_scope():
            return True
        return self.original.__get__(obj, owner)

    def __set__(self, obj: Any, value: Any) -> None:
        self.original.__set__(obj, value)

    def __delete__(self, obj: Any) -> None:
        self.original.__delete__(obj)


def _interpret_knob() -> Callable[[], None] | None:
    """Make Triton read ``TRITON_INTERPRET`` as on in this thread's scope only
    (Triton 3.4+: ``triton.jit`` and ``constexpr_function`` read
    ``knobs.runtime.interpret``); returns the undo, or None where Triton has no
    such knob (3.2-3.3 read the variable itself, which is then set for the
    scope, process-wide)."""
    try:
        from triton import knobs
    except ImportError:
        return None
    cls = type(getattr(knobs, "runtime", None))
    original = vars(cls).get("interpret")
    if original is None or not hasattr(original, "__get__"):
        return None
    cls.interpret = _ScopedKnob(original)

    def undo() -> None:
        cls.interpret = original

    return undo


def _snapshot_language() -> list[tuple[Any, dict[str, Any]]]:
    # The interpreter patches triton.language's modules and classes while a
    # kernel runs; a device call (InterpretedFunction.__call__, i.e. every
    # library function) patches them without undoing it, which would break
    # later GPU compilation in this process. Snapshot them to restore exactly.
    objects: list[Any] = []
    for name, module in list(sys.modules.items()):
        if module is None or not name.startswith("triton.language"):
            continue
        objects.append(module)
        objects.extend(
            value
            for value in vars(module).values()
            if isinstance(value, type) and value.__module__.startswith("triton.language")
        )
    return [(obj, dict(vars(obj))) for obj in {id(o): o for o in objects}.values()]


def _restore_language(snapshot: list[tuple[Any, dict[str, Any]]]) -> None:
    for obj, saved in snapshot:
        current = vars(obj)
        # Names the interpreter adds to a module's globals (its rewriter injects
        # its own globals there for the rewritten functions it caches) stay.
        if isinstance(obj, type):
            for name in [n for n in current if n not in saved]:
                delattr(obj, name)
        for name, value in saved.items():
            if current.get(name, _MISSING) is not value:
                setattr(obj, name, value)


_MISSING = object()


def _interpreter_debug() -> Callable[[], None]:
    """Turn on device assertions in Triton's interpreter; returns the undo.

    ``tl.device_assert`` is a no-op unless the kernel is compiled in debug mode,
    and the interpreter's builder has ``debug=False`` for every kernel (it
    ignores ``@triton.jit(debug=True)``). Coil's kernels assert only what must
    hold (indirect indices in range, as they are compiled with ``debug=True`` on
    the GPU), so interpreted kernels check them too. Triton's integer-overflow
    sanitizer, which debug mode would also turn on, stays off (as Inductor
    compiles: coil's index arithmetic is sized not to overflow)."""
    import dataclasses

    try:
        from triton.runtime import interpreter
    except ImportError:
        return lambda: None
    builder = getattr(interpreter, "interpreter_builder", None)
    options = getattr(builder, "options", None)
    if not dataclasses.is_dataclass(options) or not hasattr(options, "debug"):
        return lambda: None
    changes = {"debug": True}
    if hasattr(options, "sanitize_overflow"):
        changes["sanitize_overflow"] = False
    builder.options = _ScopedOptions(options, dataclasses.replace(options, **changes))

    def undo() -> None:
        builder.options = options

    return undo


class _ScopedOptions:
    """The interpreter builder's options: coil's (debug on) in a thread inside
    the scope, the builder's own everywhere else."""

    def __init__(self, original: Any, scoped: Any) -> None:
        object.__setattr__(self, "_original", original)
        object.__setattr__(self, "_scoped", scoped)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._scoped if in_interpreter_scope() else self._original, name)


def _scalar_index_compat() -> Callable[[], None]:
    """Let ``range()`` and other ``__index__`` users take a scalar argument in
    Triton's interpreter; returns the undo.

    The interpreter holds an ``int`` kernel argument as a one-element array
    (``_implicit_cvt``: ``np.array([arg])``), and ``__index__`` on a tensor is
    ``int(self.handle.data)`` up to Triton 3.6; numpy 2.4 refuses ``int()`` of
    an array with ``ndim > 0``, so a loop bounded by a size argument
    (``range(0, (s0 + 4095) // 4096, 2048)`` in a dynamic reduction) fails
    there. Triton 3.9 squeezes the array first; this wraps the function that
    installs ``__index__`` so every version does the same (no change in
    behaviour where it already squeezes)."""
    try:
        from triton.runtime import interpreter
    except ImportError:
        return lambda: None
    original = getattr(interpreter, "_patch_lang_tensor", None)
    if original is None:
        return lambda: None

    def index(self: Any) -> int:
        data = self.handle.data
        return int(data.reshape(()) if data.size == 1 else data)

    def patch_lang_tensor(tensor: Any, *rest: Any) -> Any:
        result = original(tensor, *rest)
        if not in_interpreter_scope():
            return result
        scope = rest[0] if rest else None
        if hasattr(scope, "set_attr"):
            scope.set_attr(tensor, "__index__", index)
        else:
            # Versions without a patch scope never undo their patches;
            # _restore_language puts tl.tensor back when the scope ends.
            tensor.__index__ = index
        return result

    interpreter._patch_lang_tensor = patch_lang_tensor

    def undo() -> None:
        interpreter._patch_lang_tensor = original

    return undo


def _tree_generic_reduce() -> Callable[[], None]:
    """Make Triton's interpreter run a custom ``tl.reduce`` combiner as a pairwise
    tree over whole slices instead of once per element; returns the undo.

    The interpreter's ``generic_reduce`` (every combiner but its builtin
    max/min/sum/argmax ones) folds each output's elements one by one, calling
    the combiner on scalars, and each call of a ``@jit`` function from the
    interpreter re-patches ``triton.language`` (~0.1 ms): a 1 x 8192 online
    softmax block took 8191 calls, and such kernels were most of the CPU test
    suite's time. Coil's combiners are elementwise and associative up to
    rounding, so pairs of neighbours -- (0, 1), (2, 3), ...; an odd last one
    carried -- are combined for every output at once, log2(n) calls in all,
    each pair in index order (the argmax combiners' ties still see the
    earlier index first). The association is a tree, as on the GPU, rather
    than the interpreter's left fold."""
    try:
        import numpy as np
        from triton.runtime import interpreter
    except ImportError:
        return lambda: None
    ops = getattr(interpreter, "ReduceOps", None)
    original = getattr(ops, "generic_reduce", None)
    if original is None or not hasattr(ops, "unravel") or not hasattr(ops, "to_tensor"):
        return lambda: None
    import triton.language as tl

    def generic_reduce(self: Any, given: Any) -> Any:
        if not in_interpreter_scope():
            return original(self, given)
        original_axis = self.axis
        inputs, axis = self.unravel(given, self.axis)
        datas = [arg.handle.data for arg in inputs]
        if not datas or datas[0].ndim == 0 or datas[0].shape[axis] == 0:
            return original(self, given)
        dtypes = [arg.dtype for arg in inputs]
        vals = [np.moveaxis(d, axis, -1) for d in datas]

        def as_array(r: Any) -> Any:  # a combiner's result: a tensor or a Python scalar
            return np.asarray(r.handle.data if isinstance(r, tl.core.tensor) else r)

        while vals[0].shape[-1] > 1:
            n = vals[0].shape[-1]
            pairs = 2 * (n // 2)
            lefts, rights = (
                [
                    self.to_tensor(np.ascontiguousarray(v[..., k:pairs:2]), t)
                    for v, t in zip(vals, dtypes)
                ]
                for k in (0, 1)
            )
            ret = self.combine_fn.fn(*lefts, *rights)
            ret = ret if isinstance(ret, tuple) else (ret,)
            shape = vals[0].shape[:-1] + (n // 2,)
            vals = [  # the odd last element, if any, carried to the next round
                np.concatenate(
                    [np.broadcast_to(as_array(r), shape).astype(v.dtype), v[..., pairs:]], -1
                )
                for r, v in zip(ret, vals)
            ]
        out = []
        for v, t in zip(vals, dtypes):
            data = v[..., 0]
            if self.keep_dims:
                if original_axis is not None:
                    data = np.expand_dims(data, axis)
                else:
                    data = data.reshape((1,) * datas[0].ndim)
            elif original_axis is None:
                data = data.item()
            out.append(self.to_tensor(data, t))
        return out

    ops.generic_reduce = generic_reduce

    def undo() -> None:
        ops.generic_reduce = original

    return undo


@contextlib.contextmanager
def interpreter_scope() -> Iterator[None]:
    """Run Triton's interpreter, in this thread, as if triton had been imported
    under ``TRITON_INTERPRET=1``: ``triton.jit`` decorates interpreted
    functions and ``@jit`` library functions called from an interpreted
    kernel are interpreted too. Reentrant; the hooks are installed while any
    thread is inside a scope (reference-counted) and act only in the threads
    inside one, so other Triton code of the process is unaffected."""
    global _scope_depth
    import triton  # noqa: F401  (imported outside the scope: its library stays compiled)

    with _scope_lock:
        if _scope_depth == 0:
            undo_knob = _interpret_knob()
            env: contextlib.AbstractContextManager[None] = contextlib.nullcontext()
            if undo_knob is None:  # Triton 3.2-3.3 read the variable itself
                env = _environ("TRITON_INTERPRET", "1")
            env.__enter__()
            undo_call = _interpret_library_calls()
            snapshot = _snapshot_language()
            restore_options = _interpreter_debug()
            restore_index = _scalar_index_compat()
            restore_reduce = _tree_generic_reduce()

            def undo() -> None:
                restore_reduce()
                restore_index()
                undo_call()
                _restore_language(snapshot)
                restore_options()
                if undo_knob is not None:
                    undo_knob()
                env.__exit__(None, None, None)

            _scope_undo.append(undo)
        _scope_depth += 1
    _thread.depth = getattr(_thread, "depth", 0) + 1
    try:
        yield
    finally:
        _thread.depth -= 1
        with _scope_lock:
            _scope_depth -= 1
            if _scope_depth == 0:
                _scope_undo.pop()()


class InterpretedKernel:
    """A kernel of a module loaded with ``interpret=True``: ``kernel[grid](...)``
    and device calls run inside :func:`interpreter_scope`."""

    def __init__(self, fn: Any) -> None:
        self.fn = fn

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        launch = self.fn[grid]

        def run(*args: Any, **kwargs: Any) -> Any:
            import numpy

            # The interpreter computes whole blocks with numpy, masked-off lanes
            # included (they load 0 and may divide by it): IEEE results a GPU
            # computes silently, which numpy would report as RuntimeWarnings.
            # Only these floating-point flags are ignored; exceptions propagate
            # and masked lanes are never stored.
            with numpy.errstate(divide="ignore", invalid="ignore", over="ignore"):
                with interpreter_scope():
                    try:
                        return launch(*args, **kwargs)
                    except Exception as e:
                        # A failed bounds check reads as eager's error (on a GPU
                        # it is a device-side assert, as with Inductor).
                        cause = e.__cause__
                        if isinstance(cause, AssertionError) and str(cause).startswith(
                            "index out of bounds"
                        ):
                            raise IndexError(f"coil: {cause}") from e
                        raise

        return run

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.fn, name)


def _execute(path: Path, text: str, name: str, interpret: bool) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    code = compile(text, str(path), "exec")
    # triton.jit reads sources through linecache; drop any stale lines of a
    # previous version of this path.
    linecache.checkcache(str(path))
    scope: contextlib.AbstractContextManager[None] = contextlib.nullcontext()
    if interpret:
        # Imported outside the variable so triton's own @jit library stays compiled.
        import triton
        import triton.language  # noqa: F401

        scope = interpreter_scope()
    sys.modules[name] = module
    try:
        with scope:
            exec(code, module.__dict__)
    except BaseException as error:
        sys.modules.pop(name, None)
        error.add_note(f"while loading the generated module {path}")
        raise
    if interpret:
        from triton.runtime.interpreter import InterpretedFunction

        for attr, value in list(vars(module).items()):
            if isinstance(value, InterpretedFunction):
                setattr(module, attr, InterpretedKernel(value))
    return module


def load_module(source: str, *, interpret: bool = False) -> ModuleType:
    """Import ``source`` through the on-disk cache (memoized per process).

    ``interpret=True`` makes the module's ``@triton.jit`` kernels run under
    Triton's interpreter (CPU tensors); its module name gets an ``_interpret``
    suffix so both flavours of one source can be loaded side by side.
    """
    key = source_key(source)
    with _lock:
        module = _modules.get((key, interpret))
        if module is not None:
            return module
        text = entry_text(source)
        path = _ensure_entry(entry_path(key), text)
        name = f"coil_generated_{key}" + ("_interpret" if interpret else "")
        module = _execute(path, text, name, interpret)
        module.key = key  # type: ignore[attr-defined]
        _modules[(key, interpret)] = module
        return module
