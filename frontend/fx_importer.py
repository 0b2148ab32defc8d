"""Import an aten-level FX GraphModule into the aten dialect.

The input is what AOTAutograd hands a backend (and what ``make_fx`` /
``torch.export`` produce): a GraphModule whose nodes carry ``meta["val"]``
FakeTensors. The output is a ``builtin.module`` holding one ``func.func``:

* placeholders become function arguments: tensors typed ``!aten.tensor`` with
  their real strides (``{coil.static}`` where the caller says the input is a
  parameter or buffer, passed unchanged call after call; ``{coil.donated}``
  where it is a backward's saved activation that only this graph reads, whose
  storage the graph may reuse), SymInts ``index``
  arguments carrying the symbol they bind (``{coil.symbol = #coil.expr<s0>}``),
  None ``none``, torch opaque objects (a DTensor's DeviceMesh)
  ``!aten.opaque<"class">``, passed along untouched;
* ``get_attr`` constants become ``aten.tensor_constant`` when small, else extra
  trailing arguments named by ``{coil.constant = "<attr>"}``;
* each ``call_function`` on an OpOverload becomes its generated op, or
  ``aten.operator`` when the generated set lacks it (a collective also records
  its group's ranks, resolved in this process); SymInt arithmetic
  (``sym_size``, ``operator.mul`` on sizes ...) folds into sympy expressions;
* the output structure becomes ``func.return`` (the shape, when not a flat
  tuple, is kept in ``coil.output_tree``).

FX node names become SSA name hints and the node's stack trace its location.
A node with no representation raises :class:`GraphImportError` naming the target
and the user line.
"""

from __future__ import annotations

import contextlib
import operator
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import sympy
import torch
import torch.fx
from torch._subclasses.fake_tensor import FakeTensor, unset_fake_temporarily
from torch.multiprocessing.reductions import StorageWeakRef
from xdsl.builder import Builder
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    FileLineColLoc,
    IntAttr,
    StringAttr,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint

from coil.dialects import dtypes
from coil.dialects.aten import (
    ConstantOp,
    OpaqueType,
    OperandRefAttr,
    OperatorOp,
    TensorConstantOp,
    TensorType,
    op_class_for,
)
from coil.dialects.aten_schema import (
    Kind,
    UnsupportedSchema,
    argument_kinds,
    normalize,
    op_schema,
    to_attr,
)
from coil.dialects.c10d import CollectiveOp
from coil.dialects.signature import (  # noqa: F401  (ALIGNMENT, decode: importers' API)
    ALIGNMENT,
    aligned_by_offset,
    decode_output_tree,
    encode_output_tree,
)
from coil.dialects.symbolic import (
    SIZE_HINTS_ATTR,
    ExprAttr,
    SymInt,
    canonicalize_symbols,
    exact_floordivs,
    size_hints_attr,
    to_symint,
)

INLINE_CONSTANT_MAX_NUMEL = 64
"""get_attr tensors up to this many elements are inlined as dense literals."""

_ALIASES = {
    # ATen aliases that reach coil's graphs under another name: Dynamo's
    # scalar-tensorify pass (dynamic=True) writes true_divide, which has no
    # lowering of its own; it is div, whose lowering exists.
    torch.ops.aten.true_divide.Tensor: torch.ops.aten.div.Tensor,
    torch.ops.aten.true_divide.Scalar: torch.ops.aten.div.Scalar,
}
"""OpOverload -> the overload it is an alias of (same schema, same semantics)."""

_SCALAR_AS_TENSOR = {
    torch.ops.aten.mul.Scalar: torch.ops.aten.mul.Tensor,
    torch.ops.aten.div.Scalar: torch.ops.aten.div.Tensor,
    torch.ops.aten.add.Scalar: torch.ops.aten.add.Tensor,
    torch.ops.aten.sub.Scalar: torch.ops.aten.sub.Tensor,
    torch.ops.aten.rsub.Scalar: torch.ops.aten.rsub.Tensor,
}
"""Arithmetic whose Scalar operand may be a float computed from sizes (the
``2 / (n - 1)`` of ``var``'s backward under ``dynamic=True``), and the Tensor
overload that takes it as the 0-d tensor :class:`SymbolicFloat` imports as
(same argument names)."""

_WITH_EFFECTS = getattr(getattr(torch.ops, "higher_order", None), "with_effects", None)
"""AOTAutograd's effect-token wrapper (see ``_Importer._import_with_effects``)."""


class GraphImportError(RuntimeError):
    """A graph node coil cannot represent; the message names the node and user line.
    (torch.compile prints the class name before the message: it says what failed.)"""


# --------------------------------------------------------------------------
# Values from FakeTensors
# --------------------------------------------------------------------------


Rename = dict[sympy.Symbol, sympy.Expr] | None
"""torch ShapeEnv symbol -> IR expression, for graphs traced on a FakeEnv."""


def sym_expr(value: Any, rename: Rename = None) -> sympy.Expr | int:
    """The canonical sympy form of a SymInt (or the int itself)."""
    if isinstance(value, torch.SymInt | torch.SymBool | torch.SymFloat):
        expr = sympy.sympify(value.node.expr)
        if rename:
            expr = expr.xreplace(rename)
        # coil's symbolic values are integers (sizes, indices); a float-valued
        # size expression (n / (n - 1) in a decomposition) has no IR form.
        if isinstance(value, torch.SymFloat) or (
            isinstance(value, torch.SymInt) and expr.is_integer is not True
        ):
            raise TypeError(f"symbolic float {expr} is not supported (only integer sizes)")
        # An exact floor division ((s0*s0) // s0, from a reshape's backward)
        # as its quotient: the IR's types compare sizes structurally.
        return to_symint(exact_floordivs(canonicalize_symbols(expr)))
    return value


def size_hints(values: Sequence[Any], rename: Rename = None) -> dict[sympy.Symbol, int]:
    """The example value of each size symbol in ``values`` (placeholders' FakeTensors
    and SymInts), as the ShapeEnv that traced them holds it (``var_to_val``: the
    sizes of the inputs Dynamo or export traced with); symbols without one
    (unbacked) are left out. ``strategy/hints.py`` says who reads them. None
    for a graph traced on coil's own FakeEnv (``rename``): its hints are
    made-up primes, not sizes anyone ran with."""
    out: dict[sympy.Symbol, int] = {}
    if rename:
        return out
    for val in values:
        if isinstance(val, torch.Tensor):
            dims = [*val.shape, *val.stride(), val.storage_offset()]
        elif isinstance(val, torch.SymInt):
            dims = [val]
        else:
            continue
        for d in dims:
            if not isinstance(d, torch.SymInt):
                continue
            env = d.node.shape_env
            # torch 2.11 renamed the table (var_to_val is its deprecated alias).
            table = getattr(env, "backed_var_to_val", None) or getattr(env, "var_to_val", {})
            for s in sympy.sympify(d.node.expr).free_symbols:
                known = table.get(s)
                if known is None:
                    continue
                out.setdefault(canonicalize_symbols(s), int(known))
    return out


@dataclass(frozen=True)
class SymbolicFloat:
    """A float computed from sizes, ``num / den`` of two integer size
    expressions: the ``1 / (n * h * w)`` of a batch-norm backward's
    decomposition under ``dynamic=True``. coil's symbolic scalars are integers,
    so it has no scalar IR form; used as a tensor argument it imports as the 0-d
    f64 tensor ``scalar_tensor(num) / scalar_tensor(den)``, which promotes with
    the other operands exactly as the Python float does (a 0-d tensor takes the
    dtype of the dimensioned ones of its category)."""

    num: sympy.Expr
    den: sympy.Expr


def sym_float(value: torch.SymFloat, rename: Rename = None) -> SymbolicFloat:
    """``value`` as a quotient of integer size expressions; TypeError when it is
    something else (a square root, a float power, a float coefficient)."""
    fns = torch.utils._sympy.functions
    expr = sympy.sympify(value.node.expr)
    expr = expr.replace(fns.IntTrueDiv, lambda a, b: a / b)
    expr = expr.replace(fns.FloatTrueDiv, lambda a, b: a / b)
    expr = expr.replace(fns.ToFloat, lambda a: a)
    expr = expr.xreplace({f: sympy.Rational(float(f)) for f in expr.atoms(sympy.Float)})
    if rename:
        expr = expr.xreplace(rename)
    num, den = sympy.fraction(sympy.together(canonicalize_symbols(expr)))
    if num.is_integer is not True or den.is_integer is not True:
        raise TypeError(
            f"symbolic float {value.node.expr} is not supported (only quotients of integer sizes)"
        )
    return SymbolicFloat(sympy.expand(num), sympy.expand(den))


def tensor_type(val: torch.Tensor, rename: Rename = None) -> TensorType:
    """The aten type of a (Fake)Tensor: sizes, dtype, strides, device."""
    if val.layout != torch.strided:
        raise TypeError(f"{val.layout} tensors are not supported (only strided ones)")
    return TensorType(
        [sym_expr(d, rename) for d in val.shape],
        dtypes.to_mlir(val.dtype),
        [_stride(s, rename) for s in val.stride()],
        val.device,
    )


def _stride(value: Any, rename: Rename) -> SymInt:
    """A stride as sympy: torch computes a contiguous stride over symbolic sizes
    as ``stride * max(1, size)`` (a size-0 dimension counts as 1); where the
    size is 0 the tensor has no element, so no address depends on the stride,
    and ``max(1, size)`` is ``size`` wherever one is read. Without the max, a
    symbolic convolution output's strides are the contiguous (or channels-last)
    strides coil computes, and its layout is recognized as such."""
    expr = sym_expr(value, rename)
    if isinstance(expr, int):
        return expr
    fns = torch.utils._sympy.functions

    def one_or_size(e: sympy.Expr) -> bool:
        return (
            isinstance(e, fns.Max | sympy.Max) and len(e.args) == 2 and sympy.Integer(1) in e.args
        )

    # Expanded, as coil's own contiguous_strides writes them (layouts compare
    # structurally).
    expr = expr.replace(one_or_size, lambda e: next(a for a in e.args if a != 1))
    return to_symint(sympy.expand(expr))


def value_type(val: Any, rename: Rename = None) -> Attribute:
    """The IR type of a node value (tensor, SymInt, Python scalar, None)."""
    if isinstance(val, torch.Tensor):
        return tensor_type(val, rename)
    if isinstance(val, torch.SymInt):
        expr = sym_expr(val, rename)
        return builtin.i64 if isinstance(expr, int) else builtin.IndexType()
    if isinstance(val, bool | torch.SymBool):
        return builtin.i1
    if isinstance(val, int):
        return builtin.i64
    if isinstance(val, float | torch.SymFloat):
        return builtin.f64
    if val is None:
        return builtin.NoneType()
    if (name := opaque_class_name(val)) is not None:
        return OpaqueType(name)
    raise TypeError(f"no IR type for a value of type {type(val).__name__}")


def opaque_class_name(val: Any) -> str | None:
    """The class name of a torch opaque object (a DeviceMesh among the inputs of
    a graph over DTensors: FakeScriptObject at trace time), else None."""
    from torch._library.fake_class_registry import FakeScriptObject

    if isinstance(val, FakeScriptObject):
        return val.script_class_name
    try:  # torch >= 2.10
        from torch._library.opaque_object import get_opaque_type_name, is_opaque_value
    except ImportError:
        return None
    return get_opaque_type_name(type(val)) if is_opaque_value(val) else None


def location_of(node: torch.fx.Node) -> FileLineColLoc | None:
    """The innermost user frame of the node's stack trace."""
    trace = node.meta.get("stack_trace")
    if not trace:
        return None
    frames = re.findall(r'File "([^"]+)", line (\d+)', trace)
    if not frames:
        return None
    filename, line = frames[-1]
    return FileLineColLoc(StringAttr(filename), IntAttr(int(line)), IntAttr(0))


def describe(node: torch.fx.Node) -> str:
    """``node 'name' (target) at file:line`` for error messages; a node without a
    stack trace (a get_attr of a subgraph) takes the line of its first user that has one."""
    loc = location_of(node) or next(
        (loc for user in node.users if (loc := location_of(user)) is not None), None
    )
    where = f" at {loc.filename.data}:{loc.line.data}" if loc else ""
    return f"node '{node.name}' ({node.op} {_target_name(node.target)}){where}"


def _target_name(target: Any) -> str:
    if isinstance(target, str):
        return target
    if isinstance(target, torch._ops.OpOverload):
        return str(target)
    try:
        return torch.fx.node._get_qualified_name(target)  # "torch.sin", "operator.mul"
    except Exception:  # any callable still gets a name
        return getattr(target, "__name__", None) or str(target)


@contextlib.contextmanager
def _located(node: torch.fx.Node) -> Iterator[None]:
    """Turn any failure to import ``node`` into one GraphImportError naming it."""
    try:
        yield
    except (GraphImportError, UnsupportedSchema, TypeError, ValueError, KeyError) as e:
        raise GraphImportError(f"{describe(node)}: {e}") from e


def _hint(name: str) -> str | None:
    name = re.sub(r"[^A-Za-z0-9_$.-]", "_", name)
    return name if name and not name[0].isdigit() else None


# --------------------------------------------------------------------------
# The importer
# --------------------------------------------------------------------------


class _Importer:
    def __init__(
        self,
        gm: torch.fx.GraphModule,
        func_name: str,
        rename: Rename = None,
        static_inputs: Sequence[int] = (),
        donated_inputs: Sequence[int] = (),
    ):
        self.gm = gm
        self.rename = rename
        self.static_inputs = frozenset(static_inputs)
        self.donated_inputs = frozenset(donated_inputs)
        self.func_name = func_name
        self.values: dict[torch.fx.Node, Any] = {}  # SSA value, tuple of them, or a symint
        self.known_symbols: set[sympy.Symbol] = set()
        self.block: Block | None = None
        self.builder: Builder | None = None

    # ---- entry -------------------------------------------------------------

    def run(self) -> builtin.ModuleOp:
        graph = self.gm.graph
        placeholders = [n for n in graph.nodes if n.op == "placeholder"]
        arg_types, arg_attrs = [], []
        donated = _donated(placeholders, self.donated_inputs)
        for position, node in enumerate(placeholders):
            with _located(node):
                val = node.meta["val"]
                arg_types.append(value_type(val, self.rename))
                attrs: dict[str, Attribute] = {}
                if isinstance(val, torch.SymInt) and not isinstance(sym_expr(val), int):
                    attrs["coil.symbol"] = ExprAttr(sym_expr(val, self.rename))
                if position in self.static_inputs and isinstance(val, torch.Tensor):
                    # A parameter or buffer (AOTAutograd's static inputs): the same
                    # tensor call after call, so what is computed from such inputs
                    # alone can be computed once per version of them
                    # (buffer-hoist-constants).
                    attrs["coil.static"] = builtin.UnitAttr()
                    if aligned_by_offset(val):
                        # Aligned when traced: its launches skip the per-call
                        # alignment check, as Inductor's do
                        # (compile_fx.get_input_idxs_to_check).
                        attrs["coil.aligned"] = builtin.UnitAttr()
                if position in donated:
                    attrs["coil.donated"] = builtin.UnitAttr()
                arg_attrs.append(attrs)
                self._learn_symbols(val)
        self.block = Block(arg_types=arg_types)
        for node, arg in zip(placeholders, self.block.args):
            arg.name_hint = _hint(node.name)
            val = node.meta["val"]
            if isinstance(val, torch.SymInt):
                self.values[node] = sym_expr(val, self.rename)  # uses fold into expressions
            else:
                self.values[node] = arg
        self.builder = Builder(InsertPoint.at_end(self.block))
        outputs: list[SSAValue] = []
        tree_attrs: dict[str, Attribute] = {}
        for node in graph.nodes:
            if node.op == "placeholder":
                continue
            with _located(node):
                if node.op == "get_attr":
                    self._import_get_attr(node, arg_types, arg_attrs)
                elif node.op == "call_function":
                    self._import_call(node)
                elif node.op == "output":
                    outputs, tree_attrs = self._import_output(node)
                else:
                    raise GraphImportError(f"cannot import {node.op} nodes")
        self.builder.insert(func.ReturnOp(*outputs))
        fn = func.FuncOp(
            self.func_name,
            (list(self.block.arg_types), [v.type for v in outputs]),
            Region(self.block),
            arg_attrs=ArrayAttr([DictionaryAttr(a) for a in arg_attrs]) if any(arg_attrs) else None,
        )
        fn.attributes.update(tree_attrs)
        hints = size_hints([n.meta["val"] for n in placeholders], self.rename)
        if hints:
            fn.attributes[SIZE_HINTS_ATTR] = size_hints_attr(hints)
        return builtin.ModuleOp([fn])

    def _learn_symbols(self, val: Any) -> None:
        if isinstance(val, torch.Tensor):
            for d in (*val.shape, *val.stride()):
                e = sym_expr(d, self.rename)
                if not isinstance(e, int):
                    self.known_symbols |= e.free_symbols
        elif isinstance(val, torch.SymInt):
            e = sym_expr(val, self.rename)
            if not isinstance(e, int):
                self.known_symbols |= e.free_symbols

    # ---- nodes -----------------------------------------------------------------

    def _insert(self, op: Operation, node: torch.fx.Node) -> Operation:
        if (loc := location_of(node)) is not None:
            op.location = loc
        self.builder.insert(op)
        return op

    def _import_get_attr(self, node, arg_types, arg_attrs) -> None:
        value = _fetch_attr(self.gm, node.target)
        if isinstance(value, torch.fx.GraphModule):
            raise GraphImportError(
                "subgraphs (the bodies of higher-order ops such as torch.cond or "
                "torch.while_loop) are not supported yet"
            )
        if not isinstance(value, torch.Tensor):
            raise GraphImportError(f"get_attr of a {type(value).__name__} is not supported")
        # A real constant: read it outside the fake mode a backend may run under.
        with unset_fake_temporarily():
            inline = value.numel() <= INLINE_CONSTANT_MAX_NUMEL and _dense_ok(value)
            dense = _dense_attr(value) if inline else None
        if dense is not None:
            ttype = TensorType(list(value.shape), value.dtype, None, value.device)
            op = self._insert(TensorConstantOp(dense, ttype), node)
            op.result.name_hint = _hint(node.name)
            self.values[node] = op.result
            return
        # Large constant: a trailing function argument the caller supplies.
        arg = self.block.insert_arg(tensor_type(value, self.rename), len(self.block.args))
        arg.name_hint = _hint(node.name)
        arg_types.append(arg.type)
        attrs: dict[str, Attribute] = {"coil.constant": StringAttr(str(node.target))}
        if aligned_by_offset(value):  # the same tensor on every call
            attrs["coil.aligned"] = builtin.UnitAttr()
        arg_attrs.append(attrs)
        self.values[node] = arg

    def _import_call(self, node: torch.fx.Node) -> None:
        target = _ALIASES.get(node.target, node.target)
        val = node.meta.get("val")
        if target is operator.getitem and isinstance(node.args[0], torch.fx.Node):
            source = self.values[node.args[0]]
            if isinstance(source, tuple):
                self.values[node] = source[node.args[1]]
                return
        if isinstance(target, type) and issubclass(target, tuple):
            # A structseq / namedtuple built from results (torch.return_types.*).
            items = node.args[0] if len(node.args) == 1 else node.args
            self.values[node] = tuple(self.values[a] for a in items)
            return
        scalar = isinstance(val, torch.SymInt | torch.SymFloat | torch.SymBool | int | float)
        if scalar and (not isinstance(target, torch._ops.OpOverload) or _is_size_query(target)):
            self.values[node] = self._fold_symbolic(val)
            return
        if target is _WITH_EFFECTS:
            self._import_with_effects(node)
            return
        if not isinstance(target, torch._ops.OpOverload):
            raise GraphImportError(
                f"cannot import a call of {_target_name(target)}: only OpOverloads "
                "(torch.ops.<ns>.<op>.<overload>), getitem and with_effects are supported"
            )
        bound = self._bind(target, node.args, node.kwargs)
        if target in _SCALAR_AS_TENSOR:
            target = self._symbolic_scalar_operand(target, bound, node)
        results = self._build_call(target, bound, node, self._result_types(node, val))
        if isinstance(val, tuple | list):
            self.values[node] = tuple(results)  # getitem i -> result i
        elif len(results) == 1:
            self.values[node] = results[0]
        else:
            self.values[node] = tuple(results)

    def _build_call(
        self,
        target: torch._ops.OpOverload,
        bound: dict[str, Any],
        node: torch.fx.Node,
        result_types: list[Attribute],
    ) -> list[SSAValue]:
        """The op calling ``target`` with ``bound`` arguments, inserted; its results."""
        cls = op_class_for(target)
        op = None
        if cls is not None:
            try:
                op = self._build_generated(cls, target, bound, node, result_types)
            except (TypeError, ValueError):
                op = None  # a value the typed form cannot hold: keep the generic form
        if op is None:
            op = self._build_operator(target, bound, node, result_types)
        if isinstance(op, CollectiveOp):
            op.set_group_ranks(group_ranks(op.arg("group_name")))
        self._insert(op, node)
        results = list(op.results)
        for r in results:
            r.name_hint = _hint(node.name)
        return results

    def _import_with_effects(self, node: torch.fx.Node) -> None:
        """``with_effects(token, op, *args)``: AOTAutograd threads an effect token
        through an op with side effects (``aten._linalg_check_errors`` raising on a
        singular matrix, ``aten._print``) to keep it ordered and alive. The op is
        imported as a call (an extern: it runs in program order and, having no
        results to be dead, is never dropped); the token carries no data, so the
        token it returns is the one it was given."""
        token, target, *args = node.args
        if not isinstance(target, torch._ops.OpOverload):
            raise GraphImportError(f"with_effects of {_target_name(target)}: not an OpOverload")
        val = node.meta.get("val")
        vals = list(val[1:]) if isinstance(val, tuple | list) else []
        if not target._schema.returns:
            result_types: list[Attribute] = []
        else:
            result_types = [value_type(v, self.rename) for v in vals]
        results = self._build_call(
            target, self._bind(target, tuple(args), node.kwargs), node, result_types
        )
        self.values[node] = (self.values[token], *results)

    def _fold_symbolic(self, val: Any) -> Any:
        """A size computation: keep its value (an int or an expression over known
        symbols; a :class:`SymbolicFloat` for a float one)."""
        if isinstance(val, torch.SymFloat):
            expr: Any = sym_float(val, self.rename)
            symbols = expr.num.free_symbols | expr.den.free_symbols
        else:
            expr = sym_expr(val, self.rename)
            symbols = getattr(expr, "free_symbols", set())
        unknown = symbols - self.known_symbols
        if unknown:
            names = ", ".join(sorted(s.name for s in unknown))
            raise GraphImportError(
                f"data-dependent size symbol(s) {names} (from .item()/nonzero-like ops) "
                "are not supported yet"
            )
        return expr

    def _result_types(self, node: torch.fx.Node, val: Any) -> list[Attribute]:
        if not node.target._schema.returns:
            return []  # e.g. aten._linalg_check_errors
        if isinstance(val, tuple | list):
            return [value_type(v, self.rename) for v in val]
        if "val" not in node.meta:
            raise GraphImportError("node has no meta['val'] (run FakeTensorProp first)")
        return [value_type(val, self.rename)]

    # ---- arguments -------------------------------------------------------------

    def _bind(
        self, target: torch._ops.OpOverload, args: Sequence[Any], kwargs: dict[str, Any]
    ) -> dict[str, Any]:
        """Schema argument name -> FX argument (positional and keyword)."""
        schema = target._schema
        bound: dict[str, Any] = {}
        positional = [a for a in schema.arguments if not a.kwarg_only]
        if len(args) > len(positional):
            raise GraphImportError(f"too many positional arguments for {schema.name}")
        for arg, value in zip(positional, args):
            bound[arg.name] = value
        for name, value in kwargs.items():
            bound[name] = value
        return bound

    def _tensor_value(self, value: Any, node: torch.fx.Node) -> SSAValue:
        if isinstance(value, SSAValue):  # built by the importer itself
            return value
        if isinstance(value, torch.fx.Node):
            v = self.values[value]
            if isinstance(v, SSAValue):
                return v
            value = v  # a folded SymInt used as a tensor argument
        if isinstance(value, SymbolicFloat):
            return self._symbolic_float_tensor(value, node)
        if isinstance(value, bool | int | float | sympy.Expr):
            op = self._insert(ConstantOp.from_python(value), node)
            return op.result
        raise GraphImportError(f"unsupported tensor argument {value!r}")

    def _symbolic_scalar_operand(
        self, target: torch._ops.OpOverload, bound: dict[str, Any], node: torch.fx.Node
    ) -> torch._ops.OpOverload:
        """``target`` (a Scalar overload of :data:`_SCALAR_AS_TENSOR`), or its Tensor
        overload where its ``other`` is a float computed from sizes: ``other``
        becomes the 0-d f64 tensor, which promotes as the Python float does
        against a dimensioned floating ``self``; against an integer, bool or
        0-d one (where the float gives the default dtype or ``self``'s, and an
        f64 0-d tensor f64) it is cast to the node's result dtype first."""
        other = bound.get("other")
        if not isinstance(other, torch.fx.Node):
            return target
        value = self.values[other]
        if not isinstance(value, SymbolicFloat):
            return target
        tensor = self._symbolic_float_tensor(value, node)
        result = node.meta.get("val")
        if isinstance(result, torch.Tensor) and result.dtype != torch.float64:
            this = bound.get("self")
            this_val = this.meta.get("val") if isinstance(this, torch.fx.Node) else None
            dimensioned = isinstance(this_val, torch.Tensor) and this_val.dim() > 0
            if not (dimensioned and this_val.is_floating_point()):
                ty = TensorType([], dtypes.to_mlir(result.dtype), [], tensor.type.device)
                cast = torch.ops.aten._to_copy.default
                (tensor,) = self._build_call(
                    cast, {"self": tensor, "dtype": result.dtype}, node, [ty]
                )
        bound["other"] = tensor
        return _SCALAR_AS_TENSOR[target]

    def _symbolic_float_tensor(self, value: SymbolicFloat, node: torch.fx.Node) -> SSAValue:
        """``value`` as a 0-d f64 tensor on ``node``'s device (see SymbolicFloat)."""
        vals = node.meta.get("val")
        leaves = vals if isinstance(vals, tuple | list) else [vals]
        device = next((v.device for v in leaves if isinstance(v, torch.Tensor)), "cpu")
        ty = TensorType([], dtypes.to_mlir(torch.float64), [], device)
        scalar_tensor = torch.ops.aten.scalar_tensor.default
        kwargs: dict[str, Any] = {"dtype": torch.float64}
        if torch.device(device).type != "cpu":
            kwargs["device"] = device
        (num,) = self._build_call(scalar_tensor, {"s": value.num, **kwargs}, node, [ty])
        if value.den == 1:
            return num
        (den,) = self._build_call(scalar_tensor, {"s": value.den, **kwargs}, node, [ty])
        div = torch.ops.aten.div.Tensor
        (quotient,) = self._build_call(div, {"self": num, "other": den}, node, [ty])
        return quotient

    def _python_value(self, value: Any) -> Any:
        """Replace FX nodes (folded SymInts) inside a non-tensor argument."""
        if isinstance(value, torch.fx.Node):
            v = self.values[value]
            if isinstance(v, SSAValue):
                raise GraphImportError(
                    f"a runtime value ('{value.name}') used where the schema needs a constant"
                )
            if isinstance(v, SymbolicFloat):
                raise GraphImportError(
                    f"a float computed from sizes ('{value.name}': ({v.num}) / ({v.den})) "
                    "used where the schema needs a constant"
                )
            return v
        if isinstance(value, list | tuple):
            return type(value)(self._python_value(v) for v in value)
        if isinstance(value, torch.SymInt | torch.SymFloat | torch.SymBool):
            return sym_expr(value, self.rename)
        return value

    def _build_generated(self, cls, target, bound, node, result_types) -> Operation:
        schema = op_schema(target)
        tensors: dict[str, Any] = {}
        values: dict[str, Any] = {}
        for spec in schema.args:
            if spec.name not in bound:
                continue
            value = bound[spec.name]
            if spec.kind is Kind.TENSOR:
                tensors[spec.name] = None if value is None else self._tensor_value(value, node)
            elif spec.kind.is_tensor:
                tensors[spec.name] = (
                    None
                    if value is None
                    else [None if v is None else self._tensor_value(v, node) for v in value]
                )
            else:
                values[spec.name] = self._python_value(value)
        return cls.build_from(tensors, values, result_types)

    def _build_operator(self, target, bound, node, result_types) -> OperatorOp:
        inputs: list[SSAValue] = []
        kinds = argument_kinds(target)

        def convert(value: Any, kind: Kind | None) -> Attribute:
            if isinstance(value, torch.fx.Node) and isinstance(self.values[value], SSAValue):
                inputs.append(self.values[value])
                return OperandRefAttr(len(inputs) - 1)
            if isinstance(value, list | tuple):
                elem = {
                    Kind.INT_LIST: Kind.INT,
                    Kind.FLOAT_LIST: Kind.FLOAT,
                    Kind.BOOL_LIST: Kind.BOOL,
                }.get(kind)
                # Lists stay ArrayAttr (as the generic syntax parses them back).
                return ArrayAttr([convert(v, elem) for v in value])
            value = self._python_value(value)
            if value is None:
                return builtin.NoneAttr()
            if kind is None or kind.is_tensor:
                kind = _infer_kind(value)
            return to_attr(normalize(value, kind), kind)

        args, kwargs = [], {}
        for arg in target._schema.arguments:
            if arg.name not in bound:
                continue
            kind = kinds.get(arg.name)
            attr = convert(bound[arg.name], kind)
            if arg.kwarg_only:
                kwargs[arg.name] = attr
            else:
                args.append(attr)
        qualified = target._schema.name
        if target._schema.overload_name:
            qualified += "." + target._schema.overload_name
        return OperatorOp(qualified, ArrayAttr(args), DictionaryAttr(kwargs), inputs, result_types)

    # ---- output -------------------------------------------------------------

    def _import_output(self, node: torch.fx.Node):
        """func.return of the output's leaves; the structure, when it is not a flat
        tuple, goes to ``coil.output_tree`` (see :func:`encode_output_tree`)."""
        structure = torch.fx.node.map_arg(node.args[0], lambda arg: self.values[arg])
        outputs: list[SSAValue] = []

        def leaf(value: Any) -> int:
            if not isinstance(value, SSAValue):
                value = self._insert(ConstantOp.from_python(self._python_value(value)), node).result
            outputs.append(value)
            return len(outputs) - 1

        tree = encode_output_tree(structure, leaf)
        flat = encode_output_tree(tuple(range(len(outputs))), lambda i: i)
        attrs = {} if tree == flat else {"coil.output_tree": StringAttr(tree)}
        return outputs, attrs


def group_ranks(group_name: str) -> list[int] | None:
    """The global ranks of the process group named ``group_name`` in this process,
    in group-rank order; None without a process group or for a name it does not know."""
    import torch.distributed as dist

    if not dist.is_available() or not dist.is_initialized():
        return None
    from torch.distributed.distributed_c10d import _resolve_process_group

    try:
        return dist.get_process_group_ranks(_resolve_process_group(group_name))
    except (ValueError, RuntimeError, LookupError):
        return None


def _is_size_query(target: torch._ops.OpOverload) -> bool:
    return target.namespace == "aten" and target._schema.name in (
        "aten::sym_size",
        "aten::sym_stride",
        "aten::sym_numel",
        "aten::sym_storage_offset",
    )


def _infer_kind(value: Any) -> Kind:
    if isinstance(value, bool):
        return Kind.BOOL
    if isinstance(value, int | sympy.Expr):
        return Kind.INT
    if isinstance(value, float):
        return Kind.FLOAT
    if isinstance(value, str):
        return Kind.STR
    if isinstance(value, torch.dtype):
        return Kind.DTYPE
    if isinstance(value, torch.device):
        return Kind.DEVICE
    if isinstance(value, torch.layout):
        return Kind.LAYOUT
    if isinstance(value, torch.memory_format):
        return Kind.MEMORY_FORMAT
    raise TypeError(f"unsupported argument value {value!r}")


def _fetch_attr(gm: torch.fx.GraphModule, target: str) -> Any:
    obj: Any = gm
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


def _dense_ok(value: torch.Tensor) -> bool:
    if value.dtype.is_floating_point and not bool(torch.isfinite(value).all()):
        # xDSL prints inf/nan in dense literals as hex and reads the hex back
        # as an integer value: keep such constants as arguments.
        return False
    return value.dtype in (
        torch.float32,
        torch.float64,
        torch.float16,
        torch.int64,
        torch.int32,
        torch.int16,
        torch.int8,
        torch.bool,
    )


def _dense_attr(value: torch.Tensor) -> DenseIntOrFPElementsAttr:
    element = dtypes.to_mlir(value.dtype)
    data = value.detach().cpu().reshape(-1)
    items = [bool(x) for x in data.tolist()] if value.dtype == torch.bool else data.tolist()
    if value.dtype == torch.bool:
        items = [int(x) for x in items]
    return DenseIntOrFPElementsAttr.from_list(builtin.TensorType(element, list(value.shape)), items)


# --------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------


def is_effect_token(node: torch.fx.Node) -> bool:
    """Whether ``node`` (a placeholder) is an effect token: the first argument of a
    ``with_effects`` call."""
    return _WITH_EFFECTS is not None and any(
        user.target is _WITH_EFFECTS and user.args and user.args[0] is node for user in node.users
    )


def ensure_meta(gm: torch.fx.GraphModule, example_inputs: Sequence[Any] | None) -> None:
    """Give every node ``meta['val']``, propagating FakeTensors when missing."""
    nodes = [
        n
        for n in gm.graph.nodes
        if n.op == "placeholder"
        or (isinstance(n.target, torch._ops.OpOverload) and n.target._schema.returns)
    ]
    if all("val" in n.meta for n in nodes):
        return
    if example_inputs is None:
        raise GraphImportError("graph nodes lack meta['val'] and no example inputs were given")
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.passes.fake_tensor_prop import FakeTensorProp

    mode = FakeTensorMode(allow_non_fake_inputs=True)
    fake = [mode.from_tensor(x) if isinstance(x, torch.Tensor) else x for x in example_inputs]
    FakeTensorProp(gm, mode).propagate_dont_convert_inputs(*fake)
    for node, value in zip([n for n in gm.graph.nodes if n.op == "placeholder"], fake):
        node.meta.setdefault("val", value)


def _donated(placeholders: list[torch.fx.Node], positions: frozenset[int]) -> set[int]:
    """The ``positions`` (AOTAutograd's donated backward inputs) whose tensor
    shares its storage with no other input of the graph: two saved views of
    one intermediate are both donated, and writing over one would change what
    the other reads."""
    if not positions:
        return set()

    def storage(node: torch.fx.Node) -> Any:
        val = node.meta.get("val")
        if type(val) not in (torch.Tensor, torch.nn.Parameter, FakeTensor):
            return None  # a SymInt, None, a tensor subclass: never donated
        if val.layout != torch.strided:
            return None
        return StorageWeakRef(val.untyped_storage())

    keys = [storage(n) for n in placeholders]
    tensors = [key for key in keys if key is not None]
    out = set()
    for k in positions:
        key = keys[k] if 0 <= k < len(keys) else None
        if key is not None and tensors.count(key) == 1:
            out.add(k)
    return out


def import_graph(
    gm: torch.fx.GraphModule,
    example_inputs: Sequence[Any] | None = None,
    *,
    func_name: str = "forward",
    rename_symbols: Rename = None,
    static_inputs: Sequence[int] = (),
    donated_inputs: Sequence[int] = (),
) -> builtin.ModuleOp:
    """Import an aten-level GraphModule (nodes with ``meta['val']``) into the aten dialect.

    ``rename_symbols`` maps the graph's ShapeEnv symbols to IR expressions (for
    graphs traced on a :class:`coil.frontend.fake.FakeEnv`). ``static_inputs``
    are the positions of inputs passed unchanged call after call (parameters and
    buffers): they get ``coil.static``, and those aligned when traced
    ``coil.aligned``, as large constants do. ``donated_inputs`` are the
    positions of a backward's inputs AOTAutograd donates (``bw_donated_idxs``):
    those sharing storage with no other input get ``coil.donated``, and
    memory-plan may write a result over one after its last use."""
    ensure_meta(gm, example_inputs)
    module = _Importer(gm, func_name, rename_symbols, static_inputs, donated_inputs).run()
    module.verify()
    return module


def constant_inputs(module: builtin.ModuleOp, gm: torch.fx.GraphModule) -> list[torch.Tensor]:
    """The tensors for the trailing ``coil.constant`` arguments of ``module``'s function."""
    fn = next(op for op in module.ops if isinstance(op, func.FuncOp))
    if fn.arg_attrs is None:
        return []
    out = []
    for attrs in fn.arg_attrs.data:
        name = attrs.data.get("coil.constant")
        if name is not None:
            out.append(_fetch_attr(gm, name.data))
    return out
