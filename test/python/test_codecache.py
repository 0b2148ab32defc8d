"""runtime/codecache.py and runtime/wrapper.py: the on-disk module cache
(hits, misses, corrupt entries, concurrent writers, interpreter mode) and the
helpers generated modules import. CPU only, fast."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import served_tools
import torch

from coil.runtime import codecache
from coil.runtime.wrapper import CoilInputError, cdiv, check_input


@pytest.fixture(autouse=True)
def _fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("COIL_CACHE_DIR", str(tmp_path / "cache"))
    # Each test starts without the in-process memo, as a new process would.
    monkeypatch.setattr(codecache, "_modules", {})


def _source(value: int) -> str:
    return f"VALUE = {value}\n\ndef call(args):\n    return tuple(a + VALUE for a in args)\n"


def _entry(source: str) -> Path:
    return codecache.entry_path(codecache.source_key(source))


def test_cache_dir_comes_from_the_environment(tmp_path, monkeypatch):
    assert codecache.cache_dir() == tmp_path / "cache"
    assert (tmp_path / "cache").is_dir()
    monkeypatch.delenv("COIL_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert codecache.cache_dir() == tmp_path / "xdg" / "coil"


def test_key_depends_on_source_only_given_versions():
    assert codecache.source_key("a = 1\n") == codecache.source_key("a = 1\n")
    assert codecache.source_key("a = 1\n") != codecache.source_key("a = 2\n")
    assert len(codecache.source_key("")) == 64


def test_hit_returns_the_same_module_without_rewriting():
    source = _source(1)
    module = codecache.load_module(source)
    path = _entry(source)
    assert path.read_text() == codecache.entry_text(source)
    assert path.read_text().splitlines()[-1].startswith("# coil-checksum: ")
    mtime = path.stat().st_mtime_ns
    assert codecache.load_module(source) is module
    # A new process (no memo) finds the entry good and leaves it alone.
    codecache._modules.clear()
    again = codecache.load_module(source)
    assert again.call([1]) == (2,)
    assert path.stat().st_mtime_ns == mtime
    assert module.__name__ == f"coil_generated_{module.key}"
    assert sys.modules[module.__name__] is again
    assert inspect.getsource(module.call).startswith("def call(args):")


def test_miss_writes_another_file():
    one, two = codecache.load_module(_source(1)), codecache.load_module(_source(2))
    assert one is not two
    assert _entry(_source(1)) != _entry(_source(2))
    assert _entry(_source(2)).is_file()
    assert (one.call([0]), two.call([0])) == ((1,), (2,))


@pytest.mark.parametrize(
    "damage",
    [
        lambda text: text[: len(text) // 2],  # truncated
        lambda text: "garbage(((\n",  # not Python
        lambda text: text.replace("VALUE = 3", "VALUE = 4"),  # wrong contents, same size
        lambda text: text.rsplit("# coil-checksum", 1)[0],  # no trailer
        lambda text: "",  # empty
    ],
)
def test_a_damaged_entry_is_rebuilt_not_imported(damage):
    source = _source(3)
    codecache.load_module(source)
    path = _entry(source)
    path.write_text(damage(path.read_text()))
    codecache._modules.clear()
    assert codecache.load_module(source).call([0]) == (3,)
    assert path.read_text() == codecache.entry_text(source)


def test_leftover_temp_files_do_not_matter():
    source = _source(5)
    path = _entry(source)
    path.parent.mkdir(parents=True)
    (path.parent / f".{path.name}.abc123.tmp").write_text("VALUE = ")  # a writer died
    assert codecache.load_module(source).call([0]) == (5,)
    assert path.read_text() == codecache.entry_text(source)


def test_write_atomic_replaces_whole_files(tmp_path):
    target = tmp_path / "f.py"
    codecache.write_atomic(target, "x = 1\n")
    codecache.write_atomic(target, "x = 22\n")
    assert target.read_text() == "x = 22\n"
    assert [p.name for p in tmp_path.iterdir()] == ["f.py"]


_RACE = """
import sys, time
from pathlib import Path
from coil.runtime import codecache
codecache.source_key("")  # import torch and triton before the race
ready, go = Path(sys.argv[1]), Path(sys.argv[2])
ready.touch()
while not go.exists():
    time.sleep(0.001)
for i in range(20):
    source = f"VALUE = {i}\\n" + "".join(f"PAD_{j} = {j}\\n" for j in range(2000))
    source += "def call(args):\\n    return VALUE\\n"
    module = codecache.load_module(source)
    print(module.call([]), module.key)
"""


def test_two_processes_loading_the_same_sources_both_succeed(tmp_path):
    import time

    go, script = tmp_path / "go", tmp_path / "race.py"
    script.write_text(_RACE)
    procs = [
        subprocess.Popen(
            served_tools.python(script, tmp_path / f"ready{i}", go),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=served_tools.env(),
        )
        for i in range(2)
    ]
    deadline = time.time() + 120
    while not all((tmp_path / f"ready{i}").exists() for i in range(2)):
        assert time.time() < deadline and all(p.poll() is None for p in procs)
        time.sleep(0.01)
    go.touch()
    results = [p.communicate(timeout=120) for p in procs]
    for proc, (_, err) in zip(procs, results, strict=True):
        assert proc.returncode == 0, err
    first, second = (out.split("\n")[:-1] for out, _ in results)
    assert first == second and len(first) == 20
    for i, line in enumerate(first):
        value, key = line.split()
        assert value == str(i)
        entry = codecache.entry_path(key)
        assert entry.read_text().splitlines()[-1].startswith("# coil-checksum: ")
    assert not list(codecache.cache_dir().rglob("*.tmp"))


_KERNEL_MODULE = textwrap.dedent(
    """
    import torch
    import triton
    import triton.language as tl

    from coil.runtime.wrapper import cdiv


    @triton.jit(do_not_specialize=["n"])
    def coil_add_one_0(in_ptr0, out_ptr0, out_ptr1, n, BLOCK: tl.constexpr):
        n = n.to(tl.int64)
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        x = tl.load(in_ptr0 + offsets, mask=mask, other=0.0)
        tl.store(out_ptr0 + offsets, x + 1.0, mask=mask)
        # Library @jit functions (tl.sum, tl.rand) must be interpreted too.
        tl.store(out_ptr1 + tl.program_id(0), tl.sum(x, 0) + 0.0 * tl.max(tl.rand(7, offsets), 0))


    def call(args):
        (x,) = args
        n = x.numel()
        out = torch.empty_like(x)
        grid = cdiv(n, 16)
        sums = torch.empty(grid, dtype=x.dtype, device=x.device)
        coil_add_one_0[(grid, 1, 1)](x, out, sums, n, BLOCK=16)
        return out, sums
    """
)


@pytest.mark.parametrize("previous", [None, "0"])
def test_interpret_runs_kernels_on_cpu_and_restores_the_environment(monkeypatch, previous):
    pytest.importorskip("triton")
    if previous is None:
        monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    else:
        monkeypatch.setenv("TRITON_INTERPRET", previous)
    import triton.language as tl

    watched = (tl, tl.core, tl.math, tl.standard, tl.core.tensor, tl.core.dtype)
    before = [dict(vars(o)) for o in watched]
    module = codecache.load_module(_KERNEL_MODULE, interpret=True)
    assert os.environ.get("TRITON_INTERPRET") == previous
    x = torch.randn(37)
    out, sums = module.call([x])
    assert os.environ.get("TRITON_INTERPRET") == previous
    torch.testing.assert_close(out, x + 1)
    torch.testing.assert_close(sums, torch.nn.functional.pad(x, (0, 11)).view(3, 16).sum(1))
    # Only this module's kernels are interpreted: triton's own library stays compiled.
    import triton.language as tl
    from triton.runtime.jit import JITFunction

    # ...and the interpreter's patches of triton.language are all undone (names
    # it adds to module globals may stay).
    for obj, saved in zip(watched, before, strict=True):
        now = vars(obj)
        assert {k: v for k, v in now.items() if k in saved or isinstance(obj, type)} == saved, obj
    assert isinstance(tl.standard.sum, JITFunction)
    assert not hasattr(JITFunction.__dict__.get("__call__"), "_coil_interpreted")
    assert module.__name__.endswith("_interpret")
    assert codecache.load_module(_KERNEL_MODULE, interpret=True) is module
    # The same source loaded for compilation is another module, with a JITFunction
    # (decorating needs no GPU; launching would).
    compiled = codecache.load_module(_KERNEL_MODULE)
    assert compiled is not module
    assert isinstance(compiled.coil_add_one_0, JITFunction)


def test_the_interpreter_scope_leaves_other_triton_code_alone(monkeypatch):
    """While a coil kernel is being interpreted, another thread's Triton code
    decorates compiled kernels, its ``JITFunction`` refuses a host call as
    usual, and the environment is untouched; the same thread, inside the
    scope, gets interpreted ones."""
    pytest.importorskip("triton")
    import threading

    import triton
    import triton.language as tl
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)

    def user_kernel(x_ptr):
        tl.store(x_ptr, tl.load(x_ptr) + 1)

    seen: dict[str, object] = {}
    inside, done = threading.Event(), threading.Event()

    def user_thread() -> None:
        inside.wait()
        try:
            seen["decorated"] = triton.jit(user_kernel)
            seen["env"] = os.environ.get("TRITON_INTERPRET")
            try:
                tl.standard.sum(torch.ones(4))
                seen["host_call"] = "ran"
            except RuntimeError as e:
                seen["host_call"] = str(e)
        finally:
            done.set()

    thread = threading.Thread(target=user_thread)
    thread.start()
    # The kernel's launch is inside the scope: hold it there while the other
    # thread runs (a launch is the same scope, entered by InterpretedKernel).
    module = codecache.load_module(_KERNEL_MODULE, interpret=True)
    with codecache.interpreter_scope():
        assert isinstance(triton.jit(user_kernel), InterpretedFunction)
        inside.set()
        assert done.wait(60)
        x = torch.randn(37)
        out, _ = module.call([x])
    thread.join()
    torch.testing.assert_close(out, x + 1)
    assert isinstance(seen["decorated"], JITFunction), seen
    assert seen["env"] is None
    assert "outside of the scope of a kernel" in str(seen["host_call"])
    # Outside the scope this thread is unaffected too.
    assert isinstance(triton.jit(user_kernel), JITFunction)
    assert not codecache.in_interpreter_scope()


def test_input_checks_name_the_input_and_the_difference():
    t = torch.empty(8, 32)
    check_input("arg0_1", t, (8, 32), (32, 1), torch.float32, "cpu")
    with pytest.raises(
        CoilInputError, match=r"input arg2_1: expected size \(8, 64\), got \(8, 32\)"
    ):
        check_input("arg2_1", t, (8, 64), (64, 1), torch.float32, "cpu")
    with pytest.raises(CoilInputError, match=r"input x: expected strides \(32, 1\), got \(1, 8\)"):
        check_input("x", t.t().contiguous().t(), (8, 32), (32, 1), torch.float32, "cpu")
    with pytest.raises(
        CoilInputError, match="input x: expected dtype torch.float16, got torch.float32"
    ):
        check_input("x", t, (8, 32), (32, 1), torch.float16, "cpu")
    with pytest.raises(CoilInputError, match="input x: expected device cuda:0, got cpu"):
        check_input("x", t, (8, 32), (32, 1), torch.float32, "cuda:0")
    with pytest.raises(CoilInputError, match="input x: expected a tensor, got int"):
        check_input("x", 3, (), (), torch.float32, "cpu")
    assert issubclass(CoilInputError, ValueError)


def test_input_checks_ignore_strides_of_size_one_dims_and_device_spelling():
    t = torch.empty(1, 5)
    check_input("x", t, [1, 5], [999, 1], torch.float32, "cpu")
    check_input("x", t, (1, 5), (5, 1), torch.float32, "cpu:0")
    check_input("x", torch.empty(()), (), (), torch.float32, "cpu")
    with pytest.raises(CoilInputError, match="expected strides"):
        check_input("x", torch.empty(2, 5), (2, 5), (999, 1), torch.float32, "cpu")
    from coil.runtime.wrapper import _device_key

    assert _device_key("cuda") == _device_key(torch.device("cuda:0")) != _device_key("cuda:1")


def test_cdiv():
    assert [cdiv(n, 4) for n in (0, 1, 3, 4, 5, 8, 9)] == [0, 1, 1, 1, 2, 2, 3]
    assert cdiv(10**20 + 1, 10**10) == 10**10 + 1


_LOOP_MODULE = textwrap.dedent(
    """
    import torch
    import triton
    import triton.language as tl


    @triton.jit(do_not_specialize=["n"])
    def coil_loop_sum_0(in_ptr0, out_ptr0, n):
        n = n.to(tl.int64)
        acc = tl.zeros([16], tl.float32)
        # A loop bounded by a size argument, as a dynamic looped reduction has.
        for offset in range(0, (n + 15) // 16 * 16, 16):
            idx = offset + tl.arange(0, 16)
            acc += tl.load(in_ptr0 + idx, mask=idx < n, other=0.0)
        tl.store(out_ptr0, tl.sum(acc, 0))


    def call(args):
        (x,) = args
        out = torch.empty((), dtype=x.dtype)
        coil_loop_sum_0[(1, 1, 1)](x, out, x.numel())
        return out
    """
)


def test_interpreted_loop_bounded_by_a_size_argument(monkeypatch):
    """Triton <= 3.6's interpreter holds an int argument as a one-element array
    and its ``__index__`` did ``int(data)``, which numpy >= 2.4 refuses for
    ``ndim > 0``; coil's interpreter scope makes ``__index__`` squeeze first
    (as Triton 3.9 does). The old behaviour is simulated strictly here
    (``operator.index`` refuses any array with ``ndim > 0``, whatever numpy)."""
    pytest.importorskip("triton")
    import operator

    from triton.runtime import interpreter

    original = interpreter._patch_lang_tensor

    def old_patch_lang_tensor(tensor, *rest):
        result = original(tensor, *rest)
        strict = lambda self: operator.index(self.handle.data)  # noqa: E731
        if rest and hasattr(rest[0], "set_attr"):
            rest[0].set_attr(tensor, "__index__", strict)
        else:
            tensor.__index__ = strict
        return result

    monkeypatch.setattr(interpreter, "_patch_lang_tensor", old_patch_lang_tensor)
    module = codecache.load_module(_LOOP_MODULE, interpret=True)
    x = torch.randn(37)
    torch.testing.assert_close(module.call([x]), x.sum())
    assert interpreter._patch_lang_tensor is old_patch_lang_tensor
