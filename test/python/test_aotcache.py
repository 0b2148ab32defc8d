"""runtime/aotcache.py: coil's inference graphs in torch's AOTAutograd cache.

A hit (in this process after ``torch._dynamo.reset()``, or in a new process)
skips AOTAutograd and coil's compiler; a changed pipeline, option or coil
version misses; training graphs, tensor attributes and the switches bypass;
a damaged entry recompiles. CPU only (the kernels run under Triton's
interpreter), small functions so a compile takes about a second."""

from __future__ import annotations

import json
import logging
import pickle
import subprocess
import sys

import pytest
import torch
from cache_child import PRELUDE

from coil.pipeline import PIPELINES
from coil.runtime import aotcache, codecache, compiled, graphcache


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("COIL_CACHE_DIR", str(tmp_path / "cache"))
    for name in ("COIL_DISABLE_CACHE", "COIL_AOT_CACHE", "COIL_DUMP_DIR", "COIL_LOG"):
        monkeypatch.delenv(name, raising=False)
    caplog.set_level(logging.INFO, logger="coil")
    monkeypatch.setattr(codecache, "_modules", {})
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()
    if hasattr(graphcache.versions, "cache_clear"):  # not while a test's stand-in is set
        graphcache.versions.cache_clear()


def _f(x, y):
    return torch.softmax(x @ y, -1) * 2 + 1


def _run(fn=_f, options=None, grad=False):
    torch._dynamo.reset()
    x = torch.randn(8, 16, requires_grad=grad)
    y = torch.randn(16, 32)
    compiled = torch.compile(fn, backend="coil", options=options)
    with torch.set_grad_enabled(grad):
        torch.testing.assert_close(compiled(x, y), fn(x, y))


def _outcomes(caplog) -> list[str]:
    """``hit``/``miss``/``bypass`` of each AOTAutograd cache record; clears them."""
    out = [
        r.getMessage().split("AOTAutograd cache ", 1)[1].split(" ", 1)[0]
        for r in caplog.records
        if r.getMessage().startswith("coil: AOTAutograd cache")
    ]
    caplog.clear()
    return out


def _messages(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records]


def test_second_compile_hits_and_skips_aotautograd_and_coil(caplog, monkeypatch, tmp_path):
    _run()
    assert _outcomes(caplog) == ["miss"]
    assert list((tmp_path / "cache" / "aotautograd").iterdir())

    def no_compile(*args, **kwargs):
        raise AssertionError("a hit must not compile")

    monkeypatch.setattr("coil.backend.compile_graph", no_compile)
    monkeypatch.setattr("torch._functorch.aot_autograd.create_aot_state", no_compile)
    _run()
    assert _outcomes(caplog) == ["hit"]


_PROCESS = (
    PRELUDE
    + """
with torch.no_grad():
    torch.testing.assert_close(torch.compile(f, backend="coil")(x, y), f(x, y))
print("\\n".join(m for m in messages if "cache" in m))
print("inductor codegen imported:", "torch._inductor.codegen.wrapper" in sys.modules)
"""
)


def _compile_in_processes(tmp_path, n: int) -> list[str]:
    """``n`` processes compiling the same function at once; their cache lines."""
    script = tmp_path / "compile_one.py"
    script.write_text(_PROCESS)
    procs = [
        subprocess.Popen(
            [sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(n)
    ]
    results = [p.communicate(timeout=300) for p in procs]
    for proc, (_, err) in zip(procs, results):
        assert proc.returncode == 0, err  # each checked its result against eager
    return [out for out, _ in results]


def test_two_processes_at_once_then_a_hit_after_restart(tmp_path):
    # torch writes each entry atomically under a name hashed from its content:
    # both may store, neither reads a partial file, a later process hits. (One
    # test: each process imports torch and coil, ~6 s of CPU on CI's cores.)
    first = _compile_in_processes(tmp_path, 2)
    for out in first:
        assert "AOTAutograd cache miss" in out or "AOTAutograd cache hit" in out
    # The first to look found nothing, so coil's compiler ran there too.
    misses = [out for out in first if "AOTAutograd cache miss" in out]
    assert any("graph cache miss" in out for out in misses), first
    # Computing torch's key imports Inductor's code generators (most of a warm
    # start's backend time) ...
    assert all("inductor codegen imported: True" in out for out in misses)
    [later] = _compile_in_processes(tmp_path, 1)
    assert "AOTAutograd cache hit" in later
    assert "graph cache" not in later  # coil's compiler never ran
    # ... which a restart does not: it takes the remembered key.
    assert "inductor codegen imported: False" in later
    entries = list((tmp_path / "cache" / "aotautograd").rglob("*"))
    assert not [e for e in entries if e.name.startswith(".")]  # no temporary left


def test_cache_dir_that_cannot_exist_still_compiles(caplog, tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("COIL_CACHE_DIR", str(blocker / "cache"))
    _run()
    _run()  # correct both times (_run checks against eager), nothing stored
    assert _outcomes(caplog) == ["miss", "miss"]
    assert blocker.read_text() == "not a directory"


@pytest.mark.parametrize(
    "options",
    [
        {"fallback": "extern"},
        {"pipeline": PIPELINES["default"].replace("loop-fuse,", "")},
    ],
    ids=["option", "pipeline"],
)
def test_miss_on_other_options(caplog, options):
    _run()
    _outcomes(caplog)
    _run(options=options)
    assert _outcomes(caplog) == ["miss"]
    _run(options=options)
    assert _outcomes(caplog) == ["hit"]


def test_miss_on_reduce_overhead_mode(caplog):
    # mode="reduce-overhead" turns CUDA graphs on without an option: a hit of the
    # default compile would hand back a callable without them.
    _run()
    _outcomes(caplog)
    torch._dynamo.reset()
    x, y = torch.randn(8, 16), torch.randn(16, 32)
    with torch.no_grad():
        torch.compile(_f, backend="coil", mode="reduce-overhead")(x, y)
    assert _outcomes(caplog) == ["miss"]


def test_miss_on_another_coil_version(caplog, monkeypatch):
    _run()
    _outcomes(caplog)
    monkeypatch.setattr(graphcache, "versions", lambda: "another coil")
    _run()
    assert _outcomes(caplog) == ["miss"]


def test_miss_on_another_function(caplog):
    _run()
    _outcomes(caplog)
    _run(lambda x, y: torch.softmax(x @ y, -1) * 3)
    assert _outcomes(caplog) == ["miss"]


def test_training_graph_bypasses_with_its_reason(caplog):
    _run(grad=True)
    assert any("a training graph" in m for m in _messages(caplog))
    assert _outcomes(caplog) == ["bypass"]


@pytest.mark.parametrize("switch", ["option", "COIL_DISABLE_CACHE", "COIL_AOT_CACHE"])
def test_switches_bypass(caplog, monkeypatch, tmp_path, switch):
    options = None
    if switch == "option":
        options = {"cache": False}
    elif switch == "COIL_DISABLE_CACHE":
        monkeypatch.setenv("COIL_DISABLE_CACHE", "1")
    else:
        monkeypatch.setenv("COIL_AOT_CACHE", "0")
    _run(options=options)
    _run(options=options)
    assert _outcomes(caplog) == ["bypass", "bypass"]
    assert not (tmp_path / "cache" / "aotautograd").exists()


class _Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = torch.randn(32)  # a plain tensor attribute, not a parameter

    def forward(self, x, y):
        return (x @ y) * self.scale


def test_attribute_values_are_inputs_so_a_hit_uses_the_new_value(caplog):
    # Dynamo lifts module attributes to graph inputs: another module's values hit
    # the same entry and are read at run time (_run checks against eager).
    _run(_Scaled())
    _run(_Scaled())
    assert _outcomes(caplog) == ["miss", "hit"]


def test_graph_holding_a_tensor_attribute_bypasses():
    # torch keys a graph's tensor attributes by metadata only: an entry could
    # carry another value, so such graphs stay out.
    gm = torch.fx.symbolic_trace(_Scaled())
    assert any(n.op == "get_attr" for n in gm.graph.nodes)
    why = aotcache.bypass_reason(gm, training=False, enabled=None, dump_dir=None)
    assert why is not None and "tensor attribute (scale" in why
    plain = torch.fx.symbolic_trace(lambda x, y: _f(x, y))
    assert aotcache.bypass_reason(plain, training=False, enabled=None, dump_dir=None) is None


def _entries(tmp_path) -> list:
    """torch's entry files (not coil's remembered keys)."""
    root = tmp_path / "cache" / "aotautograd"
    return [e for e in root.glob("*/*") if e.parent.name != "prekeys"]


def _prekeys(tmp_path) -> list:
    return list((tmp_path / "cache" / "aotautograd" / "prekeys").iterdir())


def test_a_hit_takes_the_remembered_key(caplog, monkeypatch, tmp_path):
    _run()
    assert _outcomes(caplog) == ["miss"]
    [prekey] = _prekeys(tmp_path)
    [entry] = _entries(tmp_path)
    assert json.loads(prekey.read_text())["key"] == entry.parent.name  # torch's key

    def no_key(*args, **kwargs):
        raise AssertionError("a remembered key must not be computed again")

    from torch._functorch._aot_autograd import autograd_cache

    monkeypatch.setattr(autograd_cache, "autograd_cache_key", no_key)
    _run()
    assert _outcomes(caplog) == ["hit"]


def test_runtime_state_is_in_the_remembered_key(caplog, tmp_path):
    # Torch's key records deterministic algorithms; so must the prekey, or a
    # remembered key would hand back the other mode's entry.
    _run()
    torch.use_deterministic_algorithms(True)
    try:
        _run()
    finally:
        torch.use_deterministic_algorithms(False)
    assert _outcomes(caplog) == ["miss", "miss"]
    assert len(_prekeys(tmp_path)) == 2
    _run()
    assert _outcomes(caplog) == ["hit"]


def test_inductor_config_is_in_the_remembered_key(caplog, tmp_path):
    # Torch's key has Inductor's config, which holds settings AOTAutograd's
    # caching reads (unsafe_marked_cacheable_functions' keys): a change misses.
    _run()
    with torch._inductor.config.patch(max_autotune=True):
        _run()
    assert _outcomes(caplog) == ["miss", "miss"]


def test_a_remembered_key_still_checks_cacheability(caplog, tmp_path):
    # What torch's key function refuses (here: the FX graph cache turned off)
    # is a bypass with a remembered key too, not a hit.
    _run()
    with torch._inductor.config.patch(fx_graph_cache=False):
        _run()
    assert _outcomes(caplog) == ["miss", "bypass"]


def test_damaged_remembered_key_is_computed_again(caplog, tmp_path):
    _run()
    [prekey] = _prekeys(tmp_path)
    text = prekey.read_text()
    for damaged in ('{"key": "a/../../elsewhere", "pair": true}', "{", ""):
        prekey.write_text(damaged)
        _run()  # torch's key again: still a hit, and remembered anew
        assert prekey.read_text() == text
    assert _outcomes(caplog) == ["miss", "hit", "hit", "hit"]


def test_damaged_entry_recompiles(caplog, tmp_path):
    _run()
    _outcomes(caplog)
    [entry] = _entries(tmp_path)
    entry.write_bytes(entry.read_bytes()[:100])  # truncated
    _run()  # compiles again, and correctly (torch warns of the unreadable entry)
    assert _outcomes(caplog) == ["miss"]
    _run()
    assert _outcomes(caplog) == ["hit"]


def test_graph_with_an_effect_token_is_not_stored(caplog):
    # linalg.inv's error check is an effectful op: after a hit AOTAutograd would
    # call the module without its token's slot, so such a graph is not stored.
    def fn(x):
        return torch.linalg.inv(x) * 2

    x = torch.randn(4, 4) + 4 * torch.eye(4)
    for _ in range(2):
        torch._dynamo.reset()
        with torch.no_grad():
            torch.testing.assert_close(torch.compile(fn, backend="coil")(x), fn(x))
    assert _outcomes(caplog) == ["bypass", "bypass"]


def test_empty_and_non_plain_constants_in_an_entry():
    # Empty constants are stored as their metadata (on a GPU, GPT-2's had no
    # storage to pickle) and come back as tensors; other tensors must be plain.
    from torch._subclasses.fake_tensor import FakeTensorMode

    empty = torch.empty(0, 3, dtype=torch.bfloat16)[:, :2]
    code = aotcache.CoilOutputCode(recipe=compiled.Recipe("", True, [empty, torch.ones(2)], {}))
    code.prepare_for_serialization()
    kept = pickle.loads(pickle.dumps(code.recipe.constants))
    restored = [c.tensor() if isinstance(c, aotcache._Empty) else c for c in kept]
    assert restored[0].shape == (0, 2) and restored[0].stride() == empty.stride()
    assert restored[0].dtype == torch.bfloat16
    torch.testing.assert_close(restored[1], torch.ones(2))
    with FakeTensorMode():
        fake = torch.ones(2)
    code = aotcache.CoilOutputCode(recipe=compiled.Recipe("", True, [fake], {}))
    with pytest.raises(Exception, match="constant 0 is not a plain tensor"):
        code.prepare_for_serialization()


def test_no_prekey_for_user_defined_triton_kernels():
    # Their sources live in torch's side table, not in the graph's code: such a
    # graph takes torch's own key (which reads the table), never a remembered one.
    from torch._higher_order_ops.triton_kernel_wrap import triton_kernel_wrapper_mutation

    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    graph.call_function(
        triton_kernel_wrapper_mutation,
        kwargs={"kernel_idx": 0, "constant_args_idx": 0, "grid": [(1, 1, 1)], "kwargs": {}},
    )
    graph.output(x)
    gm = torch.fx.GraphModule(torch.nn.Module(), graph)
    with pytest.raises(ValueError, match="user-defined Triton kernels"):
        aotcache._no_user_kernels(gm)
    plain = torch.fx.symbolic_trace(lambda x: x + 1)
    aotcache._no_user_kernels(plain)  # no error


def test_no_prekey_for_triton_ops():
    # torch.library.triton_op custom ops: torch's key hashes their kernels'
    # sources, the graph's code names only the op.
    import triton
    import triton.language as tl
    from torch.library import triton_op, wrap_triton

    @triton.jit
    def add_one(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)

    @triton_op("coil_test_aotcache::add_one", mutates_args={})
    def op(x: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(x)
        wrap_triton(add_one)[(1,)](x, y, x.numel(), BLOCK=64)
        return y

    for call in (
        torch.ops.coil_test_aotcache.add_one,
        torch.ops.coil_test_aotcache.add_one.default,
    ):
        graph = torch.fx.Graph()
        graph.output(graph.call_function(call, (graph.placeholder("x"),)))
        gm = torch.fx.GraphModule(torch.nn.Module(), graph)
        with pytest.raises(ValueError, match="user-defined Triton kernels"):
            aotcache._no_user_kernels(gm)


def test_key_tells_aligned_parameters_from_misaligned_ones():
    """A module of a hit skips the launch check of parameters that were aligned
    when it compiled, and torch's key leaves storage offsets out: the tag adds
    each tensor input's (and the graph's parameters') 16-byte alignment."""
    from coil.runtime.aotcache import alignment_tag

    flat = torch.randn(4100)
    gm = torch.fx.symbolic_trace(torch.nn.Linear(4, 4))
    aligned = alignment_tag(gm, [flat[:4096].view(64, 64), 3])
    misaligned = alignment_tag(gm, [flat[1:4097].view(64, 64), 3])
    moved_16_bytes = alignment_tag(gm, [flat[4:4100].view(64, 64), 3])
    assert aligned == moved_16_bytes != misaligned
    assert aligned == "|align:111"  # the input, the weight, the bias
