"""Oracles for tests and users: run IR on real tensors, compare with eager.

* :func:`run_module` -- the reference executor for every level (``runtime/``).
* :func:`reference_backend` -- a torch.compile backend that imports every graph,
  prints it, parses the text back, and runs the parsed module through the
  reference executor: ``torch.compile(m, backend=coil.testing.reference_backend)``
  checks the importer, the syntax and the executor at once against eager.
* :func:`assert_close_to_eager` -- Inductor-like tolerances per dtype;
  :func:`difference` says what differs, forgiving a float result that is
  closer to a float64 reference than eager's.
* :func:`check_pipeline_per_pass` -- differential testing: run the IR before and
  after each pass of a pipeline on the same inputs; name the first pass that
  changes the result.
* :func:`cuda_plan` -- the memory plan (``coil.peak_bytes``) of an inference
  model compiled for a CUDA device, on a machine without one.
* :func:`kernel_launches`, :func:`dumped_kernels` -- a generated wrapper's
  launches and a dump's kernels, Triton's and C++ alike, for tests of fusion
  that hold whichever kind runs the CPU kernels.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.fx

from coil.frontend.capture import aot_backend
from coil.frontend.fx_importer import constant_inputs, import_graph
from coil.ir import parse_module, print_module
from coil.runtime.aten_executor import ExecutionError, run_module

__all__ = [
    "ExecutionError",
    "assert_close_to_eager",
    "check_pipeline_per_pass",
    "cuda_plan",
    "difference",
    "dumped_kernels",
    "kernel_launches",
    "reference_backend",
    "run_module",
    "tolerances",
]


def _compile_reference(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable:
    module = import_graph(gm, example_inputs)
    text = print_module(module)
    reparsed = parse_module(text)
    if print_module(reparsed) != text:
        raise AssertionError("aten IR does not round-trip:\n" + text)
    constants = constant_inputs(reparsed, gm)

    def run(*args: Any) -> Any:
        return run_module(reparsed, [*args, *constants])

    return run


reference_backend = aot_backend(_compile_reference)
"""torch.compile backend: import, print, parse, execute at the aten level."""


def tolerances(dtype: torch.dtype) -> dict[str, float]:
    """rtol/atol like Inductor's check_model (looser for reduced precision)."""
    if dtype in (torch.float16, torch.bfloat16):
        return {"rtol": 1e-2, "atol": 1e-2}
    if dtype in (torch.float32, torch.complex64):
        return {"rtol": 1.3e-5, "atol": 1e-5}
    return {"rtol": 1e-7, "atol": 1e-7}


def assert_close_to_eager(actual: Any, expected: Any) -> None:
    """Compare pytrees of outputs elementwise with dtype-dependent tolerances."""
    import torch.utils._pytree as pytree

    a_leaves, a_spec = pytree.tree_flatten(actual)
    e_leaves, e_spec = pytree.tree_flatten(expected)
    assert a_spec == e_spec, f"output structure differs: {a_spec} vs {e_spec}"
    for a, e in zip(a_leaves, e_leaves):
        if isinstance(e, torch.Tensor):
            torch.testing.assert_close(a, e, **tolerances(e.dtype), equal_nan=True)
        else:
            assert a == e, f"{a} != {e}"


def significant_strides(t: torch.Tensor) -> list[int]:
    """A tensor's strides along its dimensions of more than one element (the
    ones a layout can differ in)."""
    return [s for n, s in zip(t.shape, t.stride()) if n > 1]


def assert_module_matches_graph(module: Any, gm: torch.fx.GraphModule, inputs: list, nargs: int):
    """Run a compiled (buffer-level) ``module`` and the graph ``gm`` it came from
    on clones of ``inputs`` (``gm`` takes the first ``nargs``; the rest are
    lifted constants) and compare what users see: the outputs' values and
    strides, and the inputs either one mutates. Returns the module's outputs."""
    from torch.utils._pytree import tree_leaves

    def clone(values: list) -> list:
        return [v.clone() if isinstance(v, torch.Tensor) else v for v in values]

    ours_in, eager_in = clone(inputs), clone(inputs)
    ours = run_module(module, ours_in)
    eager = gm(*eager_in[:nargs])
    assert_close_to_eager(ours, eager)
    for o, e in zip(tree_leaves(ours), tree_leaves(eager)):
        if isinstance(e, torch.Tensor):
            assert significant_strides(o) == significant_strides(e), (o, e)
    for o, e in zip(ours_in, eager_in):
        if isinstance(e, torch.Tensor):
            assert_close_to_eager(o, e)
    return ours


def difference(actual: Any, expected: Any, reference: Any = None) -> str | None:
    """None when ``actual`` matches ``expected`` (eager's outputs), else a sentence
    saying what differs: the structure, a shape, dtype or device, an integer or
    bool element, or a floating value beyond :func:`tolerances`.

    ``reference``: the same computation in float64 (or None). A floating output
    that differs from eager's but is, elementwise, no farther from the
    reference than eager's plus the tolerance is not a difference: coil may
    round differently from eager (a fused kernel rounds once) and be closer to
    the exact answer."""
    import torch.utils._pytree as pytree

    a_leaves, a_spec = pytree.tree_flatten(actual)
    e_leaves, e_spec = pytree.tree_flatten(expected)
    if a_spec != e_spec:
        return f"output structure differs: {a_spec} vs {e_spec}"
    r_leaves = pytree.tree_leaves(reference) if reference is not None else None
    if r_leaves is not None and len(r_leaves) != len(e_leaves):
        r_leaves = None
    for k, (a, e) in enumerate(zip(a_leaves, e_leaves)):
        if not isinstance(e, torch.Tensor):
            if isinstance(a, torch.Tensor) or a != e:
                if not (isinstance(e, float) and isinstance(a, float) and a != a and e != e):
                    return f"output {k}: {a!r} != {e!r}"
            continue
        if not isinstance(a, torch.Tensor):
            return f"output {k}: a {type(a).__name__}, not a tensor"
        if a.shape != e.shape:
            return f"output {k}: shape {tuple(a.shape)} != {tuple(e.shape)}"
        if a.dtype != e.dtype:
            return f"output {k}: dtype {a.dtype} != {e.dtype}"
        if a.device != e.device:
            return f"output {k}: device {a.device} != {e.device}"
        if not (e.is_floating_point() or e.is_complex()):
            if not torch.equal(a, e):
                bad = int((a != e).sum())
                return f"output {k}: {bad} of {e.numel()} elements differ"
            continue
        tol = tolerances(e.dtype)
        rtol, atol = tol["rtol"], tol["atol"]
        if torch.allclose(a, e, rtol=rtol, atol=atol, equal_nan=True):
            continue
        r = r_leaves[k] if r_leaves is not None else None
        if isinstance(r, torch.Tensor) and r.shape == e.shape and e.is_floating_point():
            # coil may round differently from eager (fused ops round once):
            # what counts is the distance from the exact answer.
            a64, e64, r64 = a.double(), e.double(), r.double()
            allowed = (e64 - r64).abs() + atol + rtol * r64.abs()
            close = ((a64 - r64).abs() <= allowed) | (a64.isnan() & r64.isnan())
            close |= a64 == r64
            if bool(close.all()):
                continue
            # Elementwise, a sum whose terms cancel is judged against a tiny
            # result while its rounding grows with the terms (sum02 of 32768
            # randn missed by 1e-4 in 3 % of draws): as Inductor's ``same``,
            # the root-mean-square error against float64, within twice eager's
            # (three times in reduced precision) plus a tenth of atol -- and no
            # element off by more than ten times eager's worst (an RMS over a
            # large tensor would hide one wrong element).
            finite = r64.isfinite() & a64.isfinite() & e64.isfinite()
            same = (a64 == r64) | (a64.isnan() & r64.isnan())
            if bool(finite.any()) and bool(same[~finite].all()):
                err_a, err_e = (a64 - r64)[finite].abs(), (e64 - r64)[finite].abs()
                rms_a = float(err_a.pow(2).mean().sqrt())
                rms_e = float(err_e.pow(2).mean().sqrt())
                factor = 3.0 if e.dtype in (torch.float16, torch.bfloat16) else 2.0
                worst_ok = float(err_a.max()) <= 10 * float(err_e.max()) + atol
                if rms_a <= factor * rms_e + atol / 10 and worst_ok:
                    continue
        diff = (a.to(torch.complex128 if e.is_complex() else torch.float64) - e).abs()
        diff = diff[~diff.isnan()]
        worst = float(diff.max()) if diff.numel() else float("nan")
        return f"output {k}: values differ (max abs diff {worst:.3g}, dtype {e.dtype})"
    return None


def print_imported(
    module_fn: Callable,
    inputs: Sequence[Any],
    *,
    dynamic: bool = False,
    debuginfo: bool = False,
    pipeline: str | None = None,
) -> None:
    """Import through AOTAutograd and print the aten IR (for FileCheck tests),
    after running ``pipeline`` on it when one is given."""
    from coil.compile_driver import run_pipeline
    from coil.frontend.loader import import_module

    torch.manual_seed(0)
    module = import_module(module_fn, inputs, dynamic=dynamic)
    if pipeline is not None:
        run_pipeline(module, pipeline)
    print(print_module(module, debuginfo=debuginfo), end="")


def sample_as_function(op: Callable, sample: Any) -> tuple[Callable, list[torch.Tensor]]:
    """An OpInfo ``SampleInput`` as ``(fn, tensors)``: ``fn(*tensors)`` calls ``op``
    on the sample with its tensor leaves replaced by ``fn``'s arguments, so the
    call can be traced with the tensors as graph inputs."""
    import torch.utils._pytree as pytree

    leaves, spec = pytree.tree_flatten((sample.input, sample.args, sample.kwargs))
    slots = [i for i, x in enumerate(leaves) if isinstance(x, torch.Tensor)]

    def fn(*tensors: torch.Tensor) -> Any:
        filled = list(leaves)
        for i, t in zip(slots, tensors, strict=True):
            filled[i] = t
        inp, args, kwargs = pytree.tree_unflatten(filled, spec)
        return op(inp, *args, **kwargs)

    return fn, [leaves[i].detach() for i in slots]


_REDRAWING_PASSES = ("aten-decompose", "convert-aten-to-loop")


def check_pipeline_per_pass(
    module: Any,
    pipeline: str,
    inputs: Sequence[Any],
    *,
    random: bool = False,
) -> Any:
    """Differential testing of a pipeline, one pass at a time.

    Runs ``module`` (not modified) through the reference executor, then applies
    the passes of ``pipeline`` one by one to a copy; after each pass the IR must
    verify, print and parse back to the same text, and compute what it computed
    before the pass on the same inputs (fresh clones, same RNG state). Raises an
    AssertionError naming the first pass whose output differs. Returns the final
    module.

    ``random=True``: the module draws random numbers; the passes that change how
    they are drawn (``aten-decompose`` rewrites dropout, ``convert-aten-to-loop``
    moves the draws into loop bodies) are not compared -- every other pass is.
    """
    from xdsl.passes import PassPipeline

    from coil.ir import coil_context
    from coil.pipeline import available_passes

    def run(m: Any) -> Any:
        torch.manual_seed(1234)
        return run_module(m, [a.clone() if isinstance(a, torch.Tensor) else a for a in inputs])

    current = module.clone()
    expected = run(current)
    # The text of the IR last checked (round trip and result). A pass that leaves
    # the IR's text unchanged left the same IR (the text round-trips, so it is
    # the whole module): its round trip and result are those already checked,
    # and are not redone. Most passes change nothing on a given graph (116 of 156
    # executor runs in six of test_middle_end's cases were of unchanged IR), and
    # the re-parse and run were 36 s of 61 (cProfile, gpt2_block-static and
    # conv_bn_relu_train-dynamic). test_middle_end + test_bufferize +
    # test_scatters: 84 CPU-s before, 60 after (-n 0, 2 loaded cores).
    checked = None
    for p in PassPipeline.parse_spec(available_passes(), pipeline).passes:
        name = str(p.pipeline_pass_spec())
        try:
            p.apply(coil_context(), current)
            current.verify()
        except Exception as e:
            raise AssertionError(f"pass {name} failed: {type(e).__name__}: {e}") from e
        text = print_module(current)
        if text == checked:
            continue
        checked = text
        if print_module(parse_module(text)) != text:
            raise AssertionError(f"the IR after {name} does not round-trip:\n{text}")
        try:
            actual = run(current)
        except ExecutionError as e:
            raise AssertionError(f"the IR after {name} does not run: {e}\n{text}") from e
        if not (random and p.name in _REDRAWING_PASSES):
            try:
                assert_close_to_eager(actual, expected)
            except AssertionError as e:
                raise AssertionError(f"the output changed in pass {name}: {e}\n{text}") from e
        expected = actual
    return current


def _retyped(t: Any, device: str) -> Any:
    from coil.dialects.aten import TensorType

    if isinstance(t, TensorType) and t.device_attr.data == "cpu":
        return TensorType(t.shape, t.element_type, t.strides, device)
    return t


def on_device(module: Any, device: str = "cuda:0") -> Any:
    """``module`` (aten level) with every CPU tensor type, and every factory op's
    ``device``, moved to ``device``: what the importer gives for a trace on that
    device, but for ops torch decomposes per device (attention picks its CPU
    kernel). Lets a machine without a GPU plan for one."""
    from xdsl.dialects import func
    from xdsl.dialects.builtin import FunctionType, StringAttr

    for op in module.walk():
        values = [*op.results, *(a for r in op.regions for b in r.blocks for a in b.args)]
        for v in values:
            new = _retyped(v.type, device)
            if new is not v.type:
                v._type = new  # the same value, retyped in place (no uses change)
        where = op.properties.get("device")
        if isinstance(where, StringAttr) and where.data == "cpu":
            op.properties["device"] = StringAttr(device)
        if isinstance(op, func.FuncOp):
            op.function_type = FunctionType.from_lists(
                [_retyped(t, device) for t in op.function_type.inputs.data],
                [_retyped(t, device) for t in op.function_type.outputs.data],
            )
    return module


def cuda_plan(
    model: torch.nn.Module,
    inputs: Sequence[Any],
    *,
    constants: bool = True,
    pipeline: str | None = None,
) -> Any:
    """The buffer-level module (after ``memory-plan``: ``coil.peak_bytes`` on each
    function) of ``model(*inputs)`` compiled as the backend compiles an
    inference graph for a CUDA device, on a machine without one: traced by
    ``torch.export`` on the CPU tensors given, parameters and buffers marked
    static (as AOTAutograd's static inputs), moved to ``cuda:0`` by
    :func:`on_device`, then the backend's inference pipeline up to the buffer
    level (``constants=False``: without ``buffer-hoist-constants``, as for
    ``wrapper='cpp'``)."""
    from torch.export.graph_signature import InputKind

    from coil.backend import _graph_pipeline
    from coil.compile_driver import run_pipeline
    from coil.frontend.decompositions import decomposition_table
    from coil.pipeline import PIPELINES

    with torch.no_grad():
        program = torch.export.export(model, tuple(inputs), strict=False)
    # AOTAutograd (the backend) runs every CompositeImplicitAutograd op's own
    # decomposition while tracing; export keeps those ops unless the table
    # names them (F.interpolate's upsample_bilinear2d.vec stayed an ATen call
    # here and was four gathers and three lerps in the backend's graph).
    from torch._decomp import decomposition_table as torch_table

    table = dict(decomposition_table())
    for node in program.graph.nodes:
        op = node.target
        if (
            isinstance(op, torch._ops.OpOverload)
            and op not in table
            and op in torch_table
            and torch._C._dispatch_has_kernel_for_dispatch_key(
                op.name(), "CompositeImplicitAutograd"
            )
        ):
            table[op] = torch_table[op]
    program = program.run_decompositions(table)
    specs = program.graph_signature.input_specs
    static = [k for k, spec in enumerate(specs) if spec.kind != InputKind.USER_INPUT]
    module = on_device(import_graph(program.graph_module, static_inputs=static))
    run_pipeline(module, _graph_pipeline(pipeline or PIPELINES["buffer"], True, False, constants))
    return module


_TRITON_LAUNCH = re.compile(r"_launch\.run\(")
_CPP_CALL = re.compile(r"^\s*(?:if\s+)?coil_cpp_\w+\(", re.M)
_TRITON_DEF = re.compile(r"^@triton\.jit\b.*\n(?:#.*\n)*def (\w+)\(([^)]*)\)", re.M)
_CPP_DEF = re.compile(r'^extern "C" int (\w+)\(([^)]*)\)', re.M)


def kernel_launches(wrapper: str) -> int:
    """The kernel launches in the source of a ``-t python`` wrapper: Triton
    launches (``coil_k_launch.run(...)``) and C++ kernel calls
    (``coil_cpp_k(...)``), each counted once per place it is made."""
    return len(_TRITON_LAUNCH.findall(wrapper)) + len(_CPP_CALL.findall(wrapper))


def dumped_kernels(graph_dir: str | os.PathLike) -> dict[str, int]:
    """The kernels of one dumped graph (a ``graph_NNN`` folder of ``dump_dir``):
    each Triton kernel of ``kernels.py`` and C++ kernel of ``kernels.cpp`` by
    name, with the number of buffers (pointer arguments) it takes."""
    from pathlib import Path

    found: dict[str, int] = {}
    root = Path(graph_dir)
    triton = root / "kernels.py"
    if triton.exists():
        for name, params in _TRITON_DEF.findall(triton.read_text()):
            found[name] = sum("ptr" in p.split(":")[0] for p in params.split(","))
    cpp = root / "kernels.cpp"
    if cpp.exists():
        for name, params in _CPP_DEF.findall(cpp.read_text()):
            found[name] = sum("*" in p for p in params.split(","))
    return found
