"""The reference executor: run a module on real tensors, at any level.

Each aten op calls its ``torch.ops`` overload with the arguments the IR holds,
so an aten-dialect module computes exactly what its FX graph computes. It is
the oracle every later stage is checked against, and deliberately simple: no
caching, no fusion, one Python call per op. Loop and buffer ops are handed to
``runtime/loop_executor.py``, so :func:`run_module` runs modules of any level
(or a mix of levels).

Size symbols are bound from the inputs: a dimension that is a bare symbol takes
the input's size, an ``index`` argument with ``coil.symbol`` takes its value;
every other symbolic dimension is then checked against the input it describes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sympy
import torch
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    ModuleOp,
    NoneAttr,
    SymbolRefAttr,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.traits import IsTerminator

from coil.dialects import dtypes
from coil.dialects.aten import (
    AtenOp,
    ConstantOp,
    OperandRefAttr,
    OperatorOp,
    TensorConstantOp,
    TensorType,
)
from coil.dialects.aten_schema import Kind, argument_kinds, parse_enum
from coil.dialects.signature import decode_output_tree
from coil.dialects.symbolic import ExprAttr, ShapeAttr
from coil.runtime import loop_executor
from coil.runtime.execution import ExecutionError


def find_function(module: ModuleOp, name: str | None = None) -> func.FuncOp:
    """The function named ``name``; without one, the module's entry function (a
    constants function, which another names in ``coil.constants``, is not one)."""
    funcs = [op for op in module.ops if isinstance(op, func.FuncOp)]
    if name is not None:
        funcs = [f for f in funcs if f.sym_name.data == name]
    else:
        named = {
            ref.root_reference.data
            for f in funcs
            if isinstance(ref := f.attributes.get("coil.constants"), SymbolRefAttr)
        }
        funcs = [f for f in funcs if f.sym_name.data not in named]
    if len(funcs) != 1:
        raise ExecutionError(
            f"expected one func.func{f' named {name}' if name else ''}, found {len(funcs)}"
        )
    return funcs[0]


class _Env:
    def __init__(self) -> None:
        self.values: dict[SSAValue, Any] = {}
        self.symbols: dict[sympy.Symbol, int] = {}
        # Storage offset of the root each buffer value lives in (loop executor).
        self.bases: dict[SSAValue, int] = {}

    def execute_block(self, block: Block, values: dict[SSAValue, Any]) -> list[Any]:
        """Run ``block`` (an extern's region) in a scope of this environment."""
        return execute_block(block, values, self)

    def evaluate(self, expr: Any) -> int:
        if isinstance(expr, int):
            return expr
        value = sympy.sympify(expr.xreplace(self.symbols))
        if not value.is_number:
            missing = ", ".join(sorted(s.name for s in value.free_symbols))
            raise ExecutionError(f"size symbol(s) {missing} are not bound by the inputs")
        return int(value)

    def bind_inputs(self, fn: func.FuncOp, inputs: Sequence[Any]) -> None:
        args = fn.body.block.args
        if len(inputs) != len(args):
            raise ExecutionError(f"@{fn.sym_name.data} takes {len(args)} inputs, got {len(inputs)}")
        arg_attrs = fn.arg_attrs.data if fn.arg_attrs is not None else [None] * len(args)
        for arg, value, attrs in zip(args, inputs, arg_attrs):
            self.values[arg] = value
            sym = attrs.data.get("coil.symbol") if attrs is not None else None
            if isinstance(sym, ExprAttr) and sym.data.is_Symbol:
                self.symbols[sym.data] = int(value)
            if _is_tensor_type(arg.type) and isinstance(value, torch.Tensor):
                self.bases[arg] = value.storage_offset()
                for dim, size in zip(arg.type.shape_attr.data, value.shape):
                    if dim.is_Symbol:
                        self.symbols.setdefault(dim, int(size))
        for i, (arg, value) in enumerate(zip(args, inputs)):
            if _is_tensor_type(arg.type):
                self._check_input(i, arg.type, value)

    def _check_input(self, i: int, ty: Any, value: Any) -> None:
        if not isinstance(value, torch.Tensor):
            raise ExecutionError(f"input {i} must be a tensor of type {ty}, got {type(value)}")
        want = [self.evaluate(d) for d in ty.shape]
        if list(value.shape) != want or value.dtype != ty.dtype:
            raise ExecutionError(
                f"input {i}: expected {ty.dtype} of shape {want}, got {value.dtype} "
                f"of shape {list(value.shape)}"
            )


def _with_folded(
    module: ModuleOp, fn: func.FuncOp, constants_name: str, inputs: Sequence[Any]
) -> list[Any]:
    """``fn``'s arguments for the caller's ``inputs``: the ``coil.folded`` ones
    are the results of the constants function run on the inputs it names
    (``coil.input``), as the wrapper's cache gives them."""
    constants = find_function(module, constants_name)
    attrs = [a.data for a in fn.arg_attrs.data] if fn.arg_attrs is not None else []
    folded = {k: a["coil.folded"].value.data for k, a in enumerate(attrs) if "coil.folded" in a}
    given = iter(inputs)
    full: list[Any] = [None if k in folded else next(given, None) for k in range(len(fn.args))]
    c_attrs = [a.data for a in constants.arg_attrs.data] if constants.arg_attrs is not None else []
    results = run_module(
        module,
        [full[a["coil.input"].value.data] for a in c_attrs],
        func_name=constants_name,
    )
    for k, r in folded.items():
        full[k] = results[r]
    return full


def _is_tensor_type(t: Attribute) -> bool:
    """aten tensors and buffers (graph inputs at the buffer level)."""
    from coil.dialects.buffer import BufferType

    return isinstance(t, TensorType | BufferType)


def _evaluated(value: Any, kind: Kind, env: _Env) -> Any:
    """An argument value as torch takes it: size symbols evaluated, lists as lists."""
    if kind in (Kind.INT, Kind.SCALAR) and isinstance(value, sympy.Expr):
        return env.evaluate(value)
    if kind is Kind.INT_LIST and value is not None:
        return [env.evaluate(v) for v in value]
    return list(value) if isinstance(value, tuple) else value


def _generic_value(attr: Attribute, env: _Env) -> Any:
    if isinstance(attr, NoneAttr):
        return None
    if isinstance(attr, ExprAttr):
        return env.evaluate(attr.data)
    if isinstance(attr, ShapeAttr):
        return [env.evaluate(v) for v in attr.data]
    if isinstance(attr, ArrayAttr):
        return [_generic_value(a, env) for a in attr.data]
    if isinstance(attr, builtin.FloatAttr):
        return attr.value.data
    if isinstance(attr, builtin.IntegerAttr):
        return bool(attr.value.data) if attr.type == builtin.i1 else attr.value.data
    if isinstance(attr, builtin.StringAttr):
        return attr.data
    if dtypes.is_element_type(attr):
        return dtypes.to_torch(attr)
    raise ExecutionError(f"cannot evaluate argument {attr}")


def _run_aten(op: AtenOp, env: _Env) -> Any:
    schema = op.schema()
    groups = op.operand_groups()
    args, kwargs = [], {}
    for spec in schema.args:
        if spec.is_operand:
            values = [None if v is None else env.values[v] for v in groups[spec.name]]
            value = values if spec.kind is not Kind.TENSOR else (values[0] if values else None)
        else:
            value = _evaluated(op.arg(spec.name), spec.kind, env)
        if spec.kwarg_only:
            kwargs[spec.name] = value
        else:
            args.append(value)
    return op.overload()(*args, **kwargs)


def _run_operator(op: OperatorOp, env: _Env) -> Any:
    overload = op.resolve()
    if overload is None:
        raise ExecutionError(f"operator {op.overload_name.data} is not registered in this process")
    schema_kinds = argument_kinds(overload)

    def convert(attr: Attribute, kind: Kind | None) -> Any:
        if isinstance(attr, OperandRefAttr):
            return env.values[op.inputs[attr.data]]
        if isinstance(attr, ArrayAttr):
            elem = {Kind.INT_LIST: Kind.INT, Kind.FLOAT_LIST: Kind.FLOAT}.get(kind)
            return [convert(a, elem) for a in attr.data]
        value = _generic_value(attr, env)
        if isinstance(value, str) and kind in (Kind.LAYOUT, Kind.MEMORY_FORMAT, Kind.DEVICE):
            return parse_enum(value, kind)
        return value

    names = [a.name for a in overload._schema.arguments if not a.kwarg_only]
    args = [convert(a, schema_kinds.get(n)) for a, n in zip(op.args.data, names)]
    kwargs = {k: convert(v, schema_kinds.get(k)) for k, v in op.kwargs.data.items()}
    return overload(*args, **kwargs)


def _dense_to_tensor(attr: DenseIntOrFPElementsAttr, ty: TensorType) -> torch.Tensor:
    values = attr.get_values()
    return torch.tensor(list(values), dtype=ty.dtype, device=ty.device).reshape(
        [int(d) for d in ty.shape]
    )


def _execute(op: Operation, env: _Env) -> None:
    if isinstance(op, ConstantOp):
        value = op.python_value
        env.values[op.result] = env.evaluate(value) if isinstance(value, sympy.Expr) else value
        return
    if isinstance(op, TensorConstantOp):
        env.values[op.result] = _dense_to_tensor(op.value, op.result.type)
        return
    if isinstance(op, AtenOp):
        out = _run_aten(op, env)
    elif isinstance(op, OperatorOp):
        out = _run_operator(op, env)
    else:
        if loop_executor.execute(op, env):
            return
        raise ExecutionError(f"the executor cannot run {op.name}")
    if not op.results:
        return  # e.g. aten._linalg_check_errors: run for its checks only
    if len(op.results) == 1:
        # An IR value never holds a list: a one-tensor list result is the tensor.
        if isinstance(out, tuple | list) and len(out) == 1:
            out = out[0]
        env.values[op.results[0]] = out
        return
    flat = list(out) if isinstance(out, tuple | list) else [out]
    if len(flat) != len(op.results):
        raise ExecutionError(f"{op.name} returned {len(flat)} values for {len(op.results)} results")
    for r, v in zip(op.results, flat):
        env.values[r] = v


def execute_block(block: Block, values: dict[SSAValue, Any], outer: _Env) -> list[Any]:
    """Run the ops of ``block`` (e.g. a ``buffer.extern`` region) with its arguments
    bound in ``values``; returns what its terminator yields."""
    env = _Env()
    env.symbols = outer.symbols
    env.values = {**outer.values, **values}
    for op in block.ops:
        if op.has_trait(IsTerminator):
            return [env.values[v] for v in op.operands]
        _execute_located(op, env)
    raise ExecutionError("block has no terminator")


def _execute_located(op: Operation, env: _Env) -> None:
    try:
        _execute(op, env)
    except ExecutionError:
        raise
    except Exception as e:  # name the op that failed
        raise ExecutionError(f"{op.name} failed: {type(e).__name__}: {e}") from e


def run_module(module: ModuleOp, inputs: Sequence[Any], *, func_name: str | None = None) -> Any:
    """Run the function of ``module`` on ``inputs``, at any level (aten, loop,
    buffer, or a mix); returns its outputs (a tuple, or the original structure
    when the function records ``coil.output_tree``)."""
    fn = find_function(module, func_name)
    ref = fn.attributes.get("coil.constants")
    if isinstance(ref, SymbolRefAttr):
        inputs = _with_folded(module, fn, ref.root_reference.data, inputs)
    env = _Env()
    env.bind_inputs(fn, inputs)
    for op in fn.body.block.ops:
        if isinstance(op, func.ReturnOp):
            outs = [env.values[v] for v in op.arguments]
            tree = fn.attributes.get("coil.output_tree")
            if tree is not None:
                return decode_output_tree(tree.data, outs)
            return tuple(outs)
        _execute_located(op, env)
    raise ExecutionError("function has no func.return")
