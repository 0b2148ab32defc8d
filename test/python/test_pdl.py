"""Programmatic dependent launch (``convert-loop-to-tt{pdl=true}``,
``lowering/loop_to_tt/pdl.py``) on a decode-like block: a gated MLP of one
token (gate and up products, SiLU * mul, down product) whose weights are
static inputs.

* On the CPU (Triton's interpreter) the option changes nothing: the emitted
  module is the one emitted without it, and it computes eager's values.
* The rewrite itself (static weight loads before the grid-dependency wait, a
  looped row's first iteration peeled), applied to the same kernels planned for
  an H200 with 4 SMs (streamed looped tiles at sizes the interpreter runs),
  still computes eager's values: the interpreter runs the wait as a no-op, as
  a GPU does for a kernel launched without the attribute.
* The backend option and ``COIL_PDL`` reach the pass.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch
import torch.nn.functional as F
from xdsl.ir import BlockArgument

from coil.backend import run_pipeline
from coil.dialects import host, tt
from coil.frontend.capture import capture_graphs
from coil.frontend.fx_importer import import_graph
from coil.lowering.loop_to_tt.pdl import prefetch_under_wait
from coil.pipeline import PIPELINES, with_pass_option
from coil.runtime.codecache import load_module
from coil.strategy.target import TARGETS, set_module_target
from coil.targets.python import emit_python
from coil.testing import assert_close_to_eager

# Matrix-vector products lowered as loop reductions on the CPU too (the CUDA
# default), so the kernels are those a GPU decode step runs.
MATVEC = (
    PIPELINES["default"]
    .replace("convert-aten-to-loop,", "convert-aten-to-loop{matvec=on},")
    .replace("aten-fuse-matvec,", "aten-fuse-matvec{all-devices=true},")
)
PDL = with_pass_option(MATVEC, "convert-loop-to-tt", "pdl=true")
SMALL_H200 = dataclasses.replace(TARGETS["h200"], name="h200-4sm", num_sms=4)


def block(x, wg, wu, wd):
    return F.linear(F.silu(F.linear(x, wg)) * F.linear(x, wu), wd)


def _inputs(k=1024, n=301, dtype=torch.bfloat16):
    x = torch.randn(1, k).to(dtype)
    wg, wu = ((torch.randn(n, k) / k**0.5).to(dtype) for _ in range(2))
    wd = (torch.randn(k, n) / n**0.5).to(dtype)
    return [x, wg, wu, wd]


def _module(args, target=None, fn=block, static=(1, 2, 3)):
    (graph,) = capture_graphs(fn, args)
    # The weights are the graph's static inputs, as AOTAutograd marks parameters.
    module = import_graph(graph.gm, graph.example_inputs, static_inputs=static)
    if target is not None:
        set_module_target(module, target)
    return module


# k=512, n=300: planned for the 4-SM H200, the gate/up kernel is looped
# [XBLOCK 4, RBLOCK 128] and the down product persistent, as at the default
# 1024x301 (which took 35 s of the suite here: its 2.2x more programs a call
# under the interpreter, at ~8 ms each).
NO_OP_SIZES = (512, 300)


@pytest.mark.parametrize("target", [None, SMALL_H200], ids=["cpu-interpreter", "h200-4sm"])
def test_pdl_is_a_no_op_on_the_cpu(target):
    args = _inputs(*NO_OP_SIZES)
    sources = []
    for pipeline in (MATVEC, PDL):
        module = _module(args, target)
        run_pipeline(module, pipeline)
        sources.append(emit_python(module))
    off, on = sources
    assert on == off
    assert "gdc_" not in on and "pdl=True" not in on
    mod = load_module(on, interpret=True)
    for _ in range(2):
        args = _inputs(*NO_OP_SIZES)
        out = mod.call([a.clone() for a in args])
        assert_close_to_eager(out[0], block(*args))


@pytest.fixture
def interpreter_gdc(monkeypatch):
    """Triton's interpreter runs the grid-dependency ops as no-ops (as a GPU does
    for a kernel launched without programmatic dependent launch)."""
    import triton.language as tl

    # The interpreter runs tl.* builtins itself, not tl.extra's (which emit PTX):
    # the option never emits these for it; here they are replaced by no-ops.
    for name in ("gdc_wait", "gdc_launch_dependents"):
        monkeypatch.setattr(tl.extra.cuda, name, lambda: None)


def _weights_first(module, static=(1, 2, 3)) -> int:
    """Rewrite every kernel with the weights' pointer arguments static; the
    number of kernels that got a static load before their wait."""
    fn = next(op for op in module.ops if isinstance(op, host.FuncOp))
    kernels = {k.sym_name.data: k for k in module.ops if isinstance(k, tt.FuncOp)}
    weights = {a for a in fn.body.block.args if a.index in static}
    static: dict[str, frozenset[int]] = {}
    for launch in fn.walk():
        if isinstance(launch, host.LaunchOp):
            here = frozenset(
                k
                for k, a in enumerate(launch.args)
                if isinstance(a, BlockArgument) and a in weights
            )
            name = launch.kernel_name
            static[name] = static[name] & here if name in static else here
    prefetched = 0
    for name, positions in static.items():
        kernel = kernels[name]
        prefetch_under_wait(kernel, positions)
        ops = list(kernel.body.block.ops)
        wait = next(k for k, op in enumerate(ops) if isinstance(op, tt.GridDependencyWaitOp))
        assert isinstance(ops[wait + 1], tt.GridDependencyLaunchDependentsOp)
        assert not any(isinstance(op, tt.StoreOp) for o in ops[:wait] for op in o.walk())
        prefetched += any(isinstance(op, tt.LoadOp) for op in ops[:wait])
    return prefetched


# Rows looped in one step of 128 (the gate/up's whole row, the down
# product's 37 masked): the peeled first iteration replaces the loop. (It was
# k=1024, n=301 in one step of 1024: the same two kernels, but 1325 programs a
# call under the interpreter at ~8 ms each, 43 s of the suite; 165 here.)
ONE_STEP = with_pass_option(
    with_pass_option(MATVEC, "convert-loop-to-tt", "persistent-threshold=-1"),
    "convert-loop-to-tt",
    "rblock=128",
)


@pytest.mark.parametrize(
    "k,n,dtype,pipeline",
    [
        (512, 301, torch.bfloat16, MATVEC),
        (512, 300, torch.float32, MATVEC),
        (4100, 37, torch.bfloat16, MATVEC),
        (128, 37, torch.bfloat16, ONE_STEP),
    ],
    ids=["looped-bf16", "f32", "masked-steps", "one-step"],
)
def test_prefetched_kernels_match_eager(interpreter_gdc, k, n, dtype, pipeline):
    args = _inputs(k, n, dtype)
    module = _module(args, SMALL_H200)
    run_pipeline(module, pipeline)
    assert _weights_first(module) >= 2  # the gate/up product and the down product
    src = emit_python(module)
    assert "tl.extra.cuda.gdc_wait()" in src
    assert ("for roffset" in src) == (pipeline is MATVEC)
    mod = load_module(src, interpret=True)
    for _ in range(2):
        args = _inputs(k, n, dtype)
        out = mod.call([a.clone() for a in args])
        assert_close_to_eager(out[0], block(*args))


def test_prefetched_kernels_compile_for_sm90_in_order(tmp_path):
    """Triton compiles the rewritten kernels for Hopper (no GPU needed: the PTX
    and ptxas ship with Triton) with launch_pdl, and keeps the order: weight
    loads (evict_first) before griddepcontrol.wait, nothing stored before it,
    launch_dependents after it."""
    import importlib.util
    import re

    import triton
    from triton.backends.compiler import GPUTarget

    from coil.runtime.launch import FP_FUSION
    from coil.targets.cpp_launch import kernel_signature
    from coil.targets.triton import emit_kernels

    args = _inputs(4100, 37)
    module = _module(args, SMALL_H200)
    run_pipeline(module, MATVEC)
    assert _weights_first(module) == 2
    # The kernels alone (the wrapper of CPU tensors would interpret them).
    path = tmp_path / "kernels.py"
    path.write_text("import triton\nimport triton.language as tl\n" + emit_kernels(module))
    spec = importlib.util.spec_from_file_location("pdl_kernels", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    for kernel in [k for k in module.ops if isinstance(k, tt.FuncOp)]:
        source = triton.compiler.ASTSource(
            getattr(mod, kernel.sym_name.data), signature=kernel_signature(kernel), constexprs={}
        )
        compiled = triton.compile(
            source, target=GPUTarget("cuda", 90, 32), options={**FP_FUSION, "launch_pdl": True}
        )
        assert compiled.metadata.launch_pdl
        ptx = compiled.asm["ptx"]
        before, wait, after = ptx.partition("griddepcontrol.wait")
        assert wait, kernel.sym_name.data
        assert re.search(r"ld\.global\.L1::evict_first", before), kernel.sym_name.data
        assert not re.search(r"\b(st\.global|atom\.|red\.)", before)
        assert "griddepcontrol.launch_dependents" in after


def _norm_matvec(x, g, w):
    # RMSNorm as the matrix-vector product's prologue (loop-matvec-prologue)
    h = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * g
    return F.linear(h, w)


def _layer_norm(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b)


def _softmax_bias(x, b):
    return torch.softmax(x + b, dim=-1)


def _scaled_sum(x, w):
    return (x * w).sum()  # split in two stages, run as one launch (split-finish)


def _embedding(ix, table):
    return F.embedding(ix, table) * 2


@pytest.mark.parametrize(
    "fn,make,static",
    [
        (
            _norm_matvec,
            lambda: [torch.randn(1, 2048), torch.randn(2048), torch.randn(300, 2048) / 45],
            (1, 2),
        ),
        (_layer_norm, lambda: [torch.randn(8, 5000), torch.randn(5000), torch.randn(5000)], (1, 2)),
        (_softmax_bias, lambda: [torch.randn(4, 9000), torch.randn(9000)], (1,)),
        (_scaled_sum, lambda: [torch.randn(70000), torch.randn(70000)], (1,)),
        (_embedding, lambda: [torch.randint(0, 50, (7,)), torch.randn(50, 33)], (1,)),
    ],
    ids=["norm-matvec", "layer-norm-looped", "softmax-looped", "split-sum", "embedding"],
)
def test_prefetch_keeps_other_kernels_exact(interpreter_gdc, fn, make, static):
    """Looped norms and softmaxes (several phases, the first peeled), a split
    reduction finished by its last program (atomics after the wait), a gather
    from a static table (its load needs a loaded index: after the wait)."""
    args = make()
    module = _module(args, SMALL_H200, fn, static)
    run_pipeline(module, MATVEC)
    _weights_first(module, static)
    mod = load_module(emit_python(module), interpret=True)
    for _ in range(2):
        args = make()
        out = mod.call([a.clone() for a in args])
        assert_close_to_eager(out[0], fn(*args))


def test_targets_know_their_compute_capability():
    from types import SimpleNamespace

    from coil.strategy.target import ATTR, Target, from_properties

    assert TARGETS["h200"].pdl and TARGETS["h100"].pdl
    assert not TARGETS["a100"].pdl and not TARGETS["cpu-interpreter"].pdl
    assert from_properties(SimpleNamespace(major=9, minor=0)).capability == 90
    assert not from_properties(SimpleNamespace(major=8, minor=6)).pdl
    # A module attribute written before the field existed reads as unknown (0).
    module = _module(_inputs(64, 8), SMALL_H200)
    old = dict(module.attributes[ATTR].data)
    del old["capability"]
    assert Target.from_attr(type(module.attributes[ATTR])(old)).capability == 0


def test_backend_option_and_env_reach_the_pass(monkeypatch):
    from coil import backend

    seen = []

    def fake_compile_graph(graph, inputs, *, pipeline, **kw):
        seen.append(pipeline)
        return graph

    monkeypatch.setattr(backend, "compile_graph", fake_compile_graph)
    x = torch.randn(1, 8)
    for options, env in (({"pdl": True}, None), ({}, "1"), ({}, None), ({"pdl": False}, "1")):
        if env is None:
            monkeypatch.delenv("COIL_PDL", raising=False)
        else:
            monkeypatch.setenv("COIL_PDL", env)
        torch._dynamo.reset()
        torch.compile(lambda t: t * 2, backend="coil", options={**options, "cache": False})(x)
    assert ["pdl=true" in p for p in seen] == [True, True, False, False]
    gm = torch.fx.symbolic_trace(torch.nn.ReLU())
    with pytest.raises(ValueError, match="option pdl must be True or False, not 'yes'"):
        backend.coil(gm, [x], options={"pdl": "yes"})
