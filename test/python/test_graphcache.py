"""runtime/graphcache.py through ``compile_graph`` and the backend: a hit in a new
process, a miss for each key component, damaged entries, concurrent processes,
the switches that bypass it, an unwritable cache directory. CPU only; graphs are
traced with ``make_fx`` (no dynamo) to keep each compile well under a second."""

from __future__ import annotations

import logging
import subprocess
import textwrap
import time
from pathlib import Path

import pytest
import served_tools
import torch
from cache_child import PRELUDE
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.proxy_tensor import make_fx

from coil.backend import compile_graph
from coil.pipeline import PIPELINES
from coil.runtime import codecache, graphcache


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("COIL_CACHE_DIR", str(tmp_path / "cache"))
    for name in ("COIL_DISABLE_CACHE", "COIL_LOG", "COIL_PROGRESS", "COIL_DUMP_DIR"):
        monkeypatch.delenv(name, raising=False)
    caplog.set_level(logging.INFO, logger="coil")
    # Each test starts as a new process would: no module loaded, nothing warned.
    monkeypatch.setattr(codecache, "_modules", {})
    monkeypatch.setattr(codecache, "_unwritable", set())
    yield
    graphcache.versions.cache_clear()


def _f(x, y):
    return torch.softmax(x @ y, -1) * 2 + 1


def _inputs(dtype=torch.float32):
    return torch.randn(8, 16, dtype=dtype), torch.randn(16, 32, dtype=dtype)


def _outcomes(caplog) -> list[str]:
    """``hit``/``miss``/``bypass`` of each graph-cache record, in order; clears them."""
    out = []
    for record in caplog.records:
        message = record.getMessage()
        if "graph cache" in message:
            out.append(message.split("graph cache ", 1)[1].split(" ", 1)[0])
    caplog.clear()
    return out


def _reasons(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if "graph cache" in r.getMessage()]


def _compile(fn, inputs, *, trace_inputs=None, mode="fake", **kwargs):
    """Trace ``fn``, compile it, check it against eager on ``inputs``; the runner."""
    gm = make_fx(fn, tracing_mode=mode)(*(trace_inputs or inputs))
    run = compile_graph(gm, list(trace_inputs or inputs), **kwargs)
    if trace_inputs is None:
        torch.testing.assert_close(run(*inputs), fn(*inputs))
    return run


def _entries(tmp_path) -> list[Path]:
    return sorted((tmp_path / "cache" / "graphs").glob("*/*.json"))


# --------------------------------------------------------------------------
# Hits
# --------------------------------------------------------------------------


def test_second_compile_hits_and_skips_the_pipeline(caplog, monkeypatch, tmp_path):
    first = _compile(_f, _inputs())
    assert _outcomes(caplog) == ["miss"]
    [entry] = _entries(tmp_path)
    assert entry.read_bytes().startswith(b"coil-graph-cache 1 ")

    def no_passes(*args, **kwargs):
        raise AssertionError("a hit must not run the pipeline")

    monkeypatch.setattr("coil.compile_driver.run_pipeline", no_passes)
    monkeypatch.setattr("coil.compile_driver.emit_python", no_passes)
    second = _compile(_f, _inputs())
    assert _outcomes(caplog) == ["hit"]
    assert second.coil_source == first.coil_source


_PROCESS = (
    PRELUDE
    + """
from torch.fx.experimental.proxy_tensor import make_fx
from coil.backend import compile_graph

gm = make_fx(f, tracing_mode="fake")(x, y)
if len(sys.argv) > 1:  # a barrier: every process compiles at once
    Path(sys.argv[1]).touch()
    while not Path(sys.argv[2]).exists():
        time.sleep(0.002)
run = compile_graph(gm, [x, y])
torch.testing.assert_close(run(x, y), f(x, y))
print(next(m for m in messages if "graph cache" in m))
"""
)


def _script(tmp_path: Path) -> Path:
    # One file for every process: the IR keeps the source lines, so the key does.
    path = tmp_path / "compile_one.py"
    path.write_text(textwrap.dedent(_PROCESS))
    return path


def _run_processes(tmp_path: Path, n: int) -> list[str]:
    """``n`` processes compile the same graph at the same moment; their cache lines."""
    script, go = _script(tmp_path), tmp_path / "go"
    ready = [tmp_path / f"ready{i}" for i in range(n)]
    procs = [
        subprocess.Popen(
            served_tools.python(script, r, go),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=served_tools.env(),
        )
        for r in ready
    ]
    try:
        deadline = time.time() + 300
        while not all(r.exists() for r in ready):
            assert time.time() < deadline, "processes did not start"
            assert all(p.poll() is None for p in procs), [p.communicate() for p in procs]
            time.sleep(0.01)
        go.touch()
        results = [p.communicate(timeout=300) for p in procs]
    finally:
        for p in procs:
            p.kill()
    for proc, (_, err) in zip(procs, results):
        assert proc.returncode == 0, err
    return [out.strip() for out, _ in results]


# Eight processes each import torch: ~30 s on two cores, so that one is `slow`.
@pytest.mark.parametrize("n", [2, pytest.param(8, marks=pytest.mark.slow)])
def test_concurrent_processes_compile_the_same_graph(tmp_path, n):
    lines = _run_processes(tmp_path, n)
    assert all("graph cache miss" in line or "graph cache hit" in line for line in lines)
    # The first to look found no entry (the processes start together, and each
    # looks before it compiles).
    assert any("graph cache miss" in line and "no entry" in line for line in lines), lines
    [entry] = _entries(tmp_path)
    key = entry.stem
    # Whoever wrote last, the entry is whole, and a later process hits it.
    assert graphcache.read_entry(graphcache.GraphKey(key, {}))[0] is not None
    assert not [p for p in entry.parent.iterdir() if p.name.endswith(".tmp")]
    # A restart: a new process hits the entry (the test of a hit after a restart,
    # here so that the processes of both are started once).
    [again] = _run_processes(tmp_path, 1)
    assert "graph cache hit" in again


# --------------------------------------------------------------------------
# A miss for each key component
# --------------------------------------------------------------------------


def _miss_then_hit(caplog, compile_variant) -> None:
    compile_variant()
    assert _outcomes(caplog) == ["miss"]
    compile_variant()
    assert _outcomes(caplog) == ["hit"]


def test_miss_on_another_graph(caplog):
    _compile(_f, _inputs())
    _outcomes(caplog)
    _miss_then_hit(caplog, lambda: _compile(lambda x, y: torch.softmax(x @ y, -1) * 3, _inputs()))


def test_miss_on_another_dtype(caplog):
    _compile(_f, _inputs())
    _outcomes(caplog)
    _miss_then_hit(caplog, lambda: _compile(_f, _inputs(torch.float64)))


def test_miss_on_other_strides(caplog):
    _compile(_f, _inputs())
    _outcomes(caplog)
    x, y = torch.randn(8, 16), torch.randn(32, 16).t()
    assert y.stride() == (1, 16)
    _miss_then_hit(caplog, lambda: _compile(_f, (x, y)))


def test_miss_on_another_static_size_and_on_symbolic_sizes(caplog):
    _compile(_f, _inputs())
    _outcomes(caplog)
    _miss_then_hit(caplog, lambda: _compile(_f, (torch.randn(4, 16), torch.randn(16, 32))))
    _miss_then_hit(caplog, lambda: _compile(_f, _inputs(), mode="symbolic"))


def test_miss_on_another_device(caplog):
    _compile(_f, _inputs())
    _outcomes(caplog)
    with FakeTensorMode():  # CUDA tensors compile without a GPU; they are not run here
        cuda = (torch.empty(8, 16, device="cuda"), torch.empty(16, 32, device="cuda"))

    def compile_cuda():
        run = _compile(_f, None, trace_inputs=cuda, mode="real")
        assert 'empty_strided_on("cuda:0")' in run.coil_source

    _miss_then_hit(caplog, compile_cuda)


def test_miss_on_another_pipeline(caplog):
    _compile(_f, _inputs())
    _outcomes(caplog)
    pipeline = PIPELINES["default"].replace("convert-loop-to-tt", "convert-loop-to-tt{xblock=8}")
    assert pipeline != PIPELINES["default"]
    _miss_then_hit(caplog, lambda: _compile(_f, _inputs(), pipeline=pipeline))


def test_miss_on_other_options_but_not_on_unkeyed_ones(caplog, tmp_path):
    _compile(_f, _inputs(), options={"fallback": "extern"})
    _outcomes(caplog)
    _miss_then_hit(caplog, lambda: _compile(_f, _inputs(), options={"fallback": "error"}))
    # Options that cannot change the code leave the key alone.
    _compile(_f, _inputs(), options={"fallback": "extern", "progress": False, "cache": True})
    assert _outcomes(caplog) == ["hit"]


@pytest.mark.parametrize("changed", ["coil_sources", "torch", "triton"])
def test_miss_on_other_versions(caplog, monkeypatch, changed):
    _compile(_f, _inputs())
    _outcomes(caplog)
    graphcache.versions.cache_clear()
    if changed == "coil_sources":
        monkeypatch.setattr(graphcache, "coil_source_hash", lambda: "an edited compiler")
    else:
        monkeypatch.setattr(f"{changed}.__version__", "0.0.0-other")
    _miss_then_hit(caplog, lambda: _compile(_f, _inputs()))


def test_source_hash_covers_the_compiler_not_the_tests(tmp_path):
    import shutil

    root = Path(graphcache.__file__).resolve().parent.parent
    copy = tmp_path / "coil"
    for package in ("", *graphcache.COMPILER_PACKAGES):
        for path in (root / package).glob("*.py" if not package else "**/*.py"):
            target = copy / path.relative_to(root)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
    before = graphcache.source_hash(copy)
    assert before == graphcache.coil_source_hash()
    (copy / "test").mkdir()
    (copy / "test" / "test_x.py").write_text("x = 1\n")
    assert graphcache.source_hash(copy) == before
    pass_file = copy / "lowering" / "convert_loop_to_tt.py"
    pass_file.write_text(pass_file.read_text() + "\n# an edit\n")
    assert graphcache.source_hash(copy) != before


# --------------------------------------------------------------------------
# Constants: keyed by metadata when passed at run time, by value when inlined
# --------------------------------------------------------------------------


def _with_constant(c: torch.Tensor):
    def fn(x):
        return x * c + 1

    return fn


def _imported(fn, inputs) -> str:
    from coil.frontend.fx_importer import import_graph
    from coil.ir import print_module

    return print_module(import_graph(make_fx(fn)(*inputs), list(inputs)))


def test_large_constant_is_keyed_by_metadata_and_its_new_value_is_used(caplog):
    x = torch.randn(32, 16)
    one, two = torch.randn(32, 16), torch.randn(32, 16)  # over the importer's inline limit
    assert "coil.constant" in _imported(_with_constant(one), (x,))  # a run-time argument
    _compile(_with_constant(one), (x,), mode="real")
    assert _outcomes(caplog) == ["miss"]
    # The same graph with another value hits, and computes with the new value.
    run = _compile(_with_constant(two), (x,), mode="real")
    assert _outcomes(caplog) == ["hit"]
    torch.testing.assert_close(run(x), x * two + 1)
    _miss_then_hit(
        caplog, lambda: _compile(_with_constant(two.double()), (x.double(),), mode="real")
    )


def test_small_constant_is_inlined_so_its_value_is_keyed(caplog):
    x = torch.randn(4, 4)
    assert "aten.tensor_constant dense<2.0" in _imported(
        _with_constant(torch.full((4, 4), 2.0)), (x,)
    )
    _compile(_with_constant(torch.full((4, 4), 2.0)), (x,), mode="real")
    assert _outcomes(caplog) == ["miss"]
    _miss_then_hit(
        caplog, lambda: _compile(_with_constant(torch.full((4, 4), 3.0)), (x,), mode="real")
    )


# --------------------------------------------------------------------------
# Damaged entries
# --------------------------------------------------------------------------


def _flip_middle_byte(data: bytes) -> bytes:
    n = len(data) // 2
    return data[:n] + bytes([data[n] ^ 1]) + data[n + 1 :]


def _damage_key_field(data: bytes) -> bytes:
    # A well-formed entry with a valid checksum, naming another key.
    import hashlib
    import json

    payload = json.loads(data.split(b"\n", 1)[1])
    payload["key"] = "0" * 64
    body = json.dumps(payload).encode()
    return f"coil-graph-cache 1 {hashlib.sha256(body).hexdigest()}\n".encode() + body


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda d: d[: len(d) // 2], id="truncated"),
        pytest.param(lambda d: d[:-1], id="last-byte-missing"),
        pytest.param(lambda d: d.split(b"\n", 1)[0] + b"\n", id="header-only"),
        pytest.param(_flip_middle_byte, id="one-bit-flipped"),
        pytest.param(lambda d: b"", id="empty"),
        pytest.param(lambda d: b"\x00garbage\xff" * 10, id="garbage"),
        pytest.param(
            lambda d: d.replace(b"coil-graph-cache 1", b"coil-graph-cache 9"), id="format"
        ),
        pytest.param(_damage_key_field, id="wrong-key"),
    ],
)
def test_damaged_entry_is_rebuilt(caplog, tmp_path, damage):
    _compile(_f, _inputs())
    [entry] = _entries(tmp_path)
    good = entry.read_bytes()
    entry.write_bytes(damage(good))
    _outcomes(caplog)
    _compile(_f, _inputs())
    [message] = _reasons(caplog)
    assert "graph cache miss" in message
    assert "corrupt" in message or "format" in message, message
    assert entry.read_bytes() == good
    caplog.clear()
    _compile(_f, _inputs())
    assert _outcomes(caplog) == ["hit"]


def test_entry_whose_module_fails_to_load_is_rebuilt(caplog, tmp_path, monkeypatch):
    _compile(_f, _inputs())
    [entry] = _entries(tmp_path)
    key = graphcache.GraphKey(entry.stem, {})
    cached, _ = graphcache.read_entry(key)
    graphcache.write_entry(key, graphcache.CachedGraph("raise ImportError('stale')\n", False))
    _outcomes(caplog)
    _compile(_f, _inputs())
    [message] = _reasons(caplog)
    assert "miss" in message and "failed to load" in message
    assert graphcache.read_entry(key)[0] == cached


# --------------------------------------------------------------------------
# Bypass
# --------------------------------------------------------------------------


def test_option_cache_false_bypasses(caplog, tmp_path):
    _compile(_f, _inputs(), cache=False)
    [message] = _reasons(caplog)
    assert "bypass" in message and "cache=False" in message
    assert _entries(tmp_path) == []


def test_env_disables_the_cache_even_with_an_entry(caplog, tmp_path, monkeypatch):
    _compile(_f, _inputs())
    assert _outcomes(caplog) == ["miss"]
    monkeypatch.setenv("COIL_DISABLE_CACHE", "1")
    _compile(_f, _inputs())
    [message] = _reasons(caplog)
    assert "bypass" in message and "COIL_DISABLE_CACHE" in message
    caplog.clear()
    monkeypatch.setenv("COIL_DISABLE_CACHE", "0")
    _compile(_f, _inputs())
    assert _outcomes(caplog) == ["hit"]


def test_backend_option_cache_false_bypasses(caplog, tmp_path):
    x, y = _inputs()
    out = torch.compile(_f, backend="coil", options={"cache": False})(x, y)
    torch.testing.assert_close(out, _f(x, y))
    assert _outcomes(caplog) == ["bypass"]
    assert _entries(tmp_path) == []


def test_dump_and_observer_bypass(caplog, tmp_path):
    _compile(_f, _inputs(), dump_dir=tmp_path / "dump")
    _compile(_f, _inputs(), observe=lambda name, module: None)
    reasons = _reasons(caplog)
    assert len(reasons) == 2 and all("bypass" in r for r in reasons)
    assert "dump" in reasons[0] and "observer" in reasons[1]


# --------------------------------------------------------------------------
# An unwritable cache directory
# --------------------------------------------------------------------------


def _warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def test_cache_dir_that_cannot_exist_compiles_with_one_warning(caplog, tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("COIL_CACHE_DIR", str(blocker / "cache"))
    _compile(_f, _inputs())
    _compile(lambda x, y: torch.softmax(x @ y, -1) - 1, _inputs())
    [warning] = _warnings(caplog)
    assert "not writable" in warning and str(blocker) in warning
    assert blocker.read_text() == "not a directory"


def test_read_only_cache_dir_serves_hits_and_is_left_intact(caplog, tmp_path, monkeypatch):
    _compile(_f, _inputs())
    root = tmp_path / "cache"
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}

    write = codecache.write_atomic

    def read_only(path, text):  # what EROFS/EACCES under root does, even to the root user
        if root in Path(path).parents:
            raise PermissionError(13, "Permission denied", str(path))
        write(path, text)

    monkeypatch.setattr(codecache, "write_atomic", read_only)
    monkeypatch.setattr(graphcache, "write_atomic", read_only)
    monkeypatch.setattr(codecache, "_modules", {})  # a new process
    caplog.clear()
    _compile(_f, _inputs())  # a hit: nothing to write
    assert _warnings(caplog) == []
    _compile(lambda x, y: torch.softmax(x @ y, -1) - 1, _inputs())  # misses it cannot store
    _compile(lambda x, y: torch.softmax(x @ y, -1) - 2, _inputs())
    assert len(_warnings(caplog)) == 1
    assert _outcomes(caplog) == ["hit", "miss", "miss"]
    after = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    assert after == before
