"""The aten dialect's hand-written part: the tensor type, the op base class with
the schema-driven syntax, and the few ops that are not ATen overloads.

Generated op classes (``aten_ops.py``) only declare fields and their schema;
this module gives all of them one readable syntax that mirrors the ATen call::

    %y = aten.add.Tensor(%a, %b, alpha = 2) : !aten.tensor<[4, s0], f32>
    %s = aten.sum.dim_IntList(%x, dim = [1], keepdim = true) : !aten.tensor<[4], f32>
    %c = aten.cat.default([%a, %b], dim = 1) : !aten.tensor<[4, 16], f32>
    %i = aten.index.Tensor(%x, [none, %idx]) : !aten.tensor<[4, 3], f32>

Tensor arguments are positional SSA values (``none`` for an absent optional
one, ``[...]`` for lists); every other argument is ``name = literal`` in schema
order, omitted when it equals the schema default; after ``:`` come the result
types. A custom format shared by ~1000 generated ops, rather than one
declarative ``assembly_format`` each, is what keeps the IR readable: ints and
int lists print as ``1`` and ``[1, s0]`` (a declarative format would print
``#coil.shape<[1, s0]>``), and the schema tells the parser each literal's kind.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from xdsl.dialects import builtin
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    StringAttr,
)
from xdsl.ir import Attribute, Data, Operation, ParametrizedAttribute, SSAValue, TypeAttribute
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.pattern_rewriter import RewritePattern
from xdsl.printer import Printer
from xdsl.traits import ConstantLike, HasCanonicalizationPatternsTrait, Pure
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.lexer import Position

from coil.dialects import dtypes
from coil.dialects.aten_infer import check_result_types
from coil.dialects.aten_schema import (
    Kind,
    OpSchema,
    check_attr,
    format_attr,
    from_attr,
    normalize,
    parse_attr,
    schema_info,
    to_attr,
)
from coil.dialects.layout import format_layout, parse_layout, verify_layout
from coil.dialects.symbolic import (
    ExprAttr,
    ShapeAttr,
    SymInt,
    contiguous_strides,
)

if TYPE_CHECKING:
    import torch

# --------------------------------------------------------------------------
# Types
# --------------------------------------------------------------------------


@irdl_attr_definition
class TensorType(ParametrizedAttribute, TypeAttribute):
    """A value-semantic tensor: sizes (ints or sympy expressions), element type,
    strides (printed only when not row-major) and device (printed unless cpu)::

        !aten.tensor<[s0, 128], f32>
        !aten.tensor<[4, 8], f16, strides [1, 4], device "cuda:0">
    """

    name = "aten.tensor"

    shape_attr: ShapeAttr
    element_type: Attribute
    strides_attr: ShapeAttr
    device_attr: StringAttr

    def __init__(
        self,
        shape: Sequence[SymInt],
        element_type: Attribute | torch.dtype,
        strides: Sequence[SymInt] | None = None,
        device: str | torch.device = "cpu",
    ):
        if dtypes.is_torch_dtype(element_type):
            element_type = dtypes.to_mlir(element_type)
        if strides is None:
            strides = contiguous_strides(shape)
        super().__init__(
            ShapeAttr(shape), element_type, ShapeAttr(strides), StringAttr(str(device))
        )

    @property
    def shape(self) -> tuple[SymInt, ...]:
        return self.shape_attr.symints

    @property
    def strides(self) -> tuple[SymInt, ...]:
        return self.strides_attr.symints

    @property
    def device(self) -> torch.device:
        """The torch device (imports torch; passes use ``device_attr``)."""
        import torch

        return torch.device(self.device_attr.data)

    @property
    def dtype(self) -> torch.dtype:
        """The torch dtype (imports torch; passes use ``element_type``)."""
        return dtypes.to_torch(self.element_type)

    @property
    def rank(self) -> int:
        return len(self.shape_attr.data)

    @property
    def is_static(self) -> bool:
        return all(isinstance(d, int) for d in self.shape)

    def is_contiguous(self) -> bool:
        return self.strides_attr.data == ShapeAttr(contiguous_strides(self.shape)).data

    def verify(self) -> None:
        verify_layout("tensor", self.shape_attr.data, self.element_type, self.strides_attr.data)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        layout = parse_layout(parser, ("strides", "device"))
        return (
            ShapeAttr(layout.shape),
            layout.element_type,
            ShapeAttr(layout.strides_or_contiguous()),
            StringAttr(layout.device),
        )

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(
            format_layout(
                self.shape_attr.data,
                self.element_type,
                self.strides_attr.data,
                device=self.device_attr.data,
            )
        )


@irdl_attr_definition
class OpaqueType(ParametrizedAttribute, TypeAttribute):
    """An object the graph passes along but never computes with (torch's opaque
    objects: a DTensor's ``DeviceMesh`` is one input of a graph over DTensors),
    named by its class::

        !aten.opaque<"torch.distributed.device_mesh.DeviceMesh">
    """

    name = "aten.opaque"

    class_name: StringAttr

    def __init__(self, class_name: str):
        super().__init__(StringAttr(class_name))

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            return (StringAttr(parser.parse_str_literal("the object's class name")),)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<")
        printer.print_string_literal(self.class_name.data)
        printer.print_string(">")


SCALAR_TYPES = (IntegerType, IndexType, builtin.Float64Type)


def is_scalar_type(t: Attribute) -> bool:
    """Builtin scalar types of wrapped numbers / SymInts passed as operands."""
    return isinstance(t, SCALAR_TYPES)


# --------------------------------------------------------------------------
# The generated ops' base class
# --------------------------------------------------------------------------


CANONICALIZATION_PATTERNS: dict[type[Operation], tuple[RewritePattern, ...]] = {}
"""Op class -> its canonicalization patterns. The dialect does not know its
passes: ``transforms/aten_canonicalize.py`` fills this when it is imported, and
coil's ``canonicalize`` pass (registered from there) imports it."""


class AtenCanonicalizationPatterns(HasCanonicalizationPatternsTrait):
    """Looks up an op's patterns in :data:`CANONICALIZATION_PATTERNS`."""

    def get_patterns(self, op: type[Operation]) -> tuple[RewritePattern, ...]:
        return CANONICALIZATION_PATTERNS.get(op, ())

    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        return ()


class AtenOp(IRDLOperation):
    """Base of every op generated from an ATen/prims schema.

    Subclasses set ``OVERLOAD`` ("aten.add.Tensor") and ``SCHEMA`` (the schema
    text they were generated from); the schema drives printing, parsing,
    verification and :meth:`arg`.
    """

    OVERLOAD: ClassVar[str]
    SCHEMA: ClassVar[str]
    INPLACE_VIEW: ClassVar[bool] = False

    traits = traits_def(AtenCanonicalizationPatterns())

    @classmethod
    def overload(cls) -> torch._ops.OpOverload:
        """The OpOverload this op models (imports torch)."""
        import torch

        ns, packet, name = cls.OVERLOAD.split(".")
        return getattr(getattr(getattr(torch.ops, ns), packet), name)

    @classmethod
    def schema(cls) -> OpSchema:
        return schema_info(cls.SCHEMA, cls.INPLACE_VIEW)

    # ---- access -----------------------------------------------------------

    def operand_groups(self) -> dict[str, list[SSAValue | None]]:
        """Tensor arguments by schema name, each a list: empty for an absent optional
        tensor, ``None`` for an absent element of a ``Tensor?[]`` list."""
        groups: dict[str, list[SSAValue | None]] = {}
        for spec in self.schema().operands:
            values = getattr(self, spec.accessor)
            if isinstance(values, SSAValue):
                values = [values]
            values = list(values) if values is not None else []
            if spec.kind is Kind.OPT_TENSOR_LIST:
                mask = self.properties.get(spec.accessor + "_mask")
                present = _mask_bits(mask) if mask is not None else [True] * len(values)
                it = iter(values)
                values = [next(it) if p else None for p in present]
            groups[spec.name] = values
        return groups

    def arg(self, name: str) -> Any:
        """The Python value of non-tensor argument ``name`` (default when elided)."""
        for spec in self.schema().props:
            if spec.name == name:
                attr = self.properties.get(spec.accessor)
                if attr is None:
                    return None if spec.default_attr is None else spec.default
                return from_attr(attr, spec.kind)
        raise KeyError(f"{self.name} has no non-tensor argument '{name}'")

    def arg_attr(self, name: str) -> Attribute:
        """The stored attribute of non-tensor argument ``name`` (its schema default's
        when elided; ``none`` when absent): :meth:`arg` without converting to a
        Python value, so enums and dtypes need no torch."""
        for spec in self.schema().props:
            if spec.name == name:
                attr = self.properties.get(spec.accessor, spec.default_attr)
                return builtin.NoneAttr() if attr is None else attr
        raise KeyError(f"{self.name} has no non-tensor argument '{name}'")

    # ---- building -----------------------------------------------------------

    @classmethod
    def build_from(
        cls,
        tensors: dict[str, SSAValue | None | Sequence[SSAValue | None]],
        values: dict[str, Any],
        result_types: Sequence[Attribute],
    ) -> AtenOp:
        """Build from schema-named tensors and (normalized) Python values."""
        attrs = {
            spec.name: to_attr(normalize(values[spec.name], spec.kind), spec.kind)
            for spec in cls.schema().props
            if spec.name in values
        }
        return cls.build_from_attrs(tensors, attrs, result_types)

    @classmethod
    def build_from_attrs(
        cls,
        tensors: dict[str, SSAValue | None | Sequence[SSAValue | None]],
        attrs: dict[str, Attribute],
        result_types: Sequence[Attribute],
    ) -> AtenOp:
        """Build from schema-named tensors and stored argument attributes; an
        argument equal to its schema default is dropped (the canonical form)."""
        schema = cls.schema()
        operands: list[SSAValue | Sequence[SSAValue] | None] = []
        props: dict[str, Attribute] = {}
        for spec in schema.operands:
            given = tensors.get(spec.name)
            if spec.kind is Kind.TENSOR and spec.optional:
                operands.append([] if given is None else [given])  # opt_operand_def
            elif spec.kind is Kind.TENSOR:
                operands.append(given)
            else:
                given = list(given or [])
                if spec.kind is Kind.OPT_TENSOR_LIST and any(v is None for v in given):
                    props[spec.accessor + "_mask"] = builtin.DenseArrayBase.from_list(
                        builtin.i1, [int(v is not None) for v in given]
                    )
                operands.append([v for v in given if v is not None])
        for spec in schema.props:
            attr = attrs.get(spec.name)
            if attr is None or attr == spec.default_attr:
                continue
            if isinstance(attr, builtin.NoneAttr) and spec.default_attr is None:
                if not spec.optional:
                    raise ValueError(f"{cls.OVERLOAD}: argument '{spec.name}' is required")
            props[spec.accessor] = attr
        results: list[Attribute | Sequence[Attribute]] = []
        types = list(result_types)
        for i, ret in enumerate(schema.returns):
            if ret.kind == "tensor_list":
                n_after = len(schema.returns) - i - 1
                results.append(types[: len(types) - n_after])
                types = types[len(types) - n_after :]
            else:
                results.append(types.pop(0))
        return cls.build(operands=operands, properties=props, result_types=results)

    # ---- verification --------------------------------------------------------

    def verify_(self) -> None:
        schema = self.schema()
        # Masks first: operand_groups() relies on them.
        for spec in schema.operands:
            mask = self.properties.get(spec.accessor + "_mask")
            if mask is not None and sum(_mask_bits(mask)) != len(getattr(self, spec.accessor)):
                raise VerifyException(f"{self.name}: '{spec.name}' mask does not match operands")
        for spec, values in zip(schema.operands, self.operand_groups().values()):
            for v in values:
                if v is None:
                    continue
                ok = isinstance(v.type, TensorType) or (
                    spec.kind is Kind.TENSOR and is_scalar_type(v.type)
                )
                if not ok:
                    raise VerifyException(
                        f"{self.name}: operand '{spec.name}' must be a tensor"
                        + (" or a scalar" if spec.kind is Kind.TENSOR else "")
                        + f", got {v.type}"
                    )
        for spec in schema.props:
            attr = self.properties.get(spec.accessor)
            if attr is None:
                if spec.default_attr is None and not spec.optional:
                    raise VerifyException(f"{self.name}: missing argument '{spec.name}'")
                continue
            if (why := check_attr(attr, spec.kind)) is not None:
                raise VerifyException(f"{self.name}: argument '{spec.name}': {why}")
        for ret, res in zip(schema.returns, self.results):
            # `none` types an undefined tensor (e.g. an unrequested backward gradient).
            tensor_like = isinstance(res.type, TensorType | builtin.NoneType)
            if ret.kind in ("tensor", "tensor_list") and not tensor_like:
                raise VerifyException(f"{self.name}: result must be a tensor, got {res.type}")
            sources = [v for v in self.operand_groups().get(ret.aliases_arg, []) if v is not None]
            if len(sources) == 1:
                (src,) = sources
                # An in-place view op (squeeze_, resize_) changes sizes, not the dtype.
                same = (
                    src.type.element_type == res.type.element_type
                    if schema.inplace_view
                    and isinstance(src.type, TensorType)
                    and isinstance(res.type, TensorType)
                    else src.type == res.type
                )
                if not same:
                    raise VerifyException(
                        f"{self.name}: result aliases '{ret.aliases_arg}' and must have its "
                        f"type {src.type}, got {res.type}"
                    )
        # Sizes and dtype as torch's rules give them for these operands.
        if (why := check_result_types(self)) is not None:
            raise VerifyException(why)

    # ---- syntax ---------------------------------------------------------------

    def print(self, printer: Printer) -> None:
        schema = self.schema()
        groups = self.operand_groups()
        items: list[Any] = []  # SSA values and literal strings, in schema order
        for spec in schema.args:
            if spec.is_operand:
                values = groups[spec.name]
                if spec.kind is Kind.TENSOR:
                    items.append(values[0] if values else "none")
                else:
                    items.append(["none" if v is None else v for v in values])
            elif (attr := self.properties.get(spec.accessor)) is not None:
                items.append(f"{spec.name} = {format_attr(attr, spec.kind)}")
        printer.print_string("(")
        _print_items(printer, items)
        printer.print_string(")")
        self.print_clauses(printer)
        _print_attributes(printer, self)
        _print_result_types(printer, self)

    def print_clauses(self, printer: Printer) -> None:
        """Syntax after the argument list for what is not a schema argument
        (a collective's ``ranks [0, 1]``); none by default."""

    @classmethod
    def parse_clauses(cls, parser: Parser) -> dict[str, Attribute]:
        """Parse what :meth:`print_clauses` prints: properties by name."""
        return {}

    @classmethod
    def parse(cls, parser: Parser) -> AtenOp:
        start = parser.pos
        schema = cls.schema()
        operand_specs = list(schema.operands)
        tensors: dict[str, Any] = {}
        props: dict[str, Attribute] = {}
        by_name = {s.name: s for s in schema.props}

        def parse_item() -> None:
            if (name := _parse_optional_arg_name(parser)) is not None:
                spec = by_name.get(name)
                if spec is None:
                    parser.raise_error(f"{cls.OVERLOAD} has no non-tensor argument '{name}'")
                if spec.accessor in props:
                    parser.raise_error(f"argument '{name}' given twice")
                at = parser.pos
                props[spec.accessor] = parse_attr(parser, spec.kind)
                if (why := check_attr(props[spec.accessor], spec.kind)) is not None:
                    parser.raise_error(f"argument '{name}': {why}", at)
                return
            if not operand_specs:
                parser.raise_error(f"too many tensor arguments for {cls.OVERLOAD}")
            spec = operand_specs.pop(0)
            if spec.kind is Kind.TENSOR:
                if parser.parse_optional_keyword("none"):
                    if not spec.optional:
                        parser.raise_error(f"tensor argument '{spec.name}' is required")
                    tensors[spec.name] = None
                else:
                    tensors[spec.name] = parser.parse_operand()
            else:
                tensors[spec.name] = parser.parse_comma_separated_list(
                    parser.Delimiter.SQUARE, lambda: _parse_optional_tensor(parser)
                )

        parser.parse_comma_separated_list(parser.Delimiter.PAREN, parse_item)
        if operand_specs:
            parser.raise_error(f"{cls.OVERLOAD} expects tensor argument '{operand_specs[0].name}'")
        clauses = cls.parse_clauses(parser)
        attributes = parser.parse_optional_attr_dict()
        types_at = parser.pos
        result_types = _parse_result_types(parser)
        fixed = [r for r in schema.returns if r.kind != "tensor_list"]
        has_list = len(fixed) != len(schema.returns)
        if len(result_types) < len(fixed) or (len(result_types) > len(fixed) and not has_list):
            parser.raise_error(
                f"{cls.OVERLOAD} has {len(schema.returns)} result(s), got "
                f"{len(result_types)} result type(s)",
                types_at,
            )
        # build_from_attrs drops literals equal to the schema default (canonical form).
        attrs = {spec.name: props[spec.accessor] for spec in schema.props if spec.accessor in props}
        try:
            op = cls.build_from_attrs(tensors, attrs, result_types)
        except (ValueError, TypeError, IndexError, RuntimeError) as e:  # e.g. a bad device
            parser.raise_error(f"{cls.OVERLOAD}: {e}", start)
        op.properties.update(clauses)
        op.attributes.update(attributes)
        return verified_at(parser, start, op)


@dataclass
class _Keyed:
    """A ``key = value`` item of an argument list."""

    key: str
    value: Any


def verified_at(parser: Parser, start: Position, op: Operation) -> Operation:
    """Verify ``op`` right after parsing it, so an error points at its text."""
    try:
        op.verify_()
    except VerifyException as e:
        parser.raise_error(str(e), start)
    return op


def _print_items(printer: Printer, items: Sequence[Any]) -> None:
    """Print a comma-separated mix of SSA values, strings and nested lists."""
    for i, item in enumerate(items):
        if i:
            printer.print_string(", ")
        if isinstance(item, _Keyed):
            printer.print_string(f"{item.key} = ")
            _print_items(printer, [item.value])
        elif isinstance(item, SSAValue):
            printer.print_ssa_value(item)
        elif isinstance(item, list):
            printer.print_string("[")
            _print_items(printer, item)
            printer.print_string("]")
        else:
            printer.print_string(item)


def _parse_optional_tensor(parser: Parser) -> SSAValue | None:
    """``none`` or an SSA value (an element of a ``Tensor?[]`` list)."""
    return None if parser.parse_optional_keyword("none") else parser.parse_operand()


def _mask_bits(mask: builtin.DenseArrayBase) -> list[bool]:
    # i1 arrays read back true as -1 (signless normalization): test for non-zero.
    return [v != 0 for v in mask.get_values()]


def _parse_optional_arg_name(parser: Parser) -> str | None:
    """``ident =`` (backtracks when the identifier is not followed by '=')."""
    state = parser.pos  # backtrack by position (the parser state object is mutable)
    name = parser.parse_optional_identifier()
    if name is None or name == "none":
        parser._resume_from(state)
        return None
    if parser.parse_optional_punctuation("=") is None:
        parser._resume_from(state)
        return None
    return name


def _print_attributes(printer: Printer, op: Operation) -> None:
    """Discardable attributes, as ``attr-dict`` prints them."""
    if op.attributes:
        printer.print_string(" ")
        printer.print_attr_dict(op.attributes)


def _print_result_types(printer: Printer, op: Operation) -> None:
    if not op.results:
        return
    printer.print_string(" : ")
    if len(op.results) == 1:
        printer.print_attribute(op.results[0].type)
    else:
        printer.print_string("(")
        printer.print_list(op.result_types, printer.print_attribute)
        printer.print_string(")")


def _parse_result_types(parser: Parser) -> list[Attribute]:
    if not parser.parse_optional_punctuation(":"):
        return []
    if parser._current_token.text == "(":
        return parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_type)
    return [parser.parse_type()]


# --------------------------------------------------------------------------
# Ops that are not ATen overloads
# --------------------------------------------------------------------------


@irdl_op_definition
class ConstantOp(IRDLOperation):
    """A scalar value: a wrapped Python number or a symbolic size (``aten.constant 2 : i64``)."""

    name = "aten.constant"

    value = prop_def(ExprAttr | FloatAttr | IntegerAttr)
    result = result_def(IntegerType | IndexType | builtin.Float64Type)

    traits = traits_def(Pure(), ConstantLike())

    def __init__(self, value: Attribute, result_type: Attribute):
        super().__init__(properties={"value": value}, result_types=[result_type])

    @staticmethod
    def from_python(value: bool | int | float | Any) -> ConstantOp:
        if isinstance(value, bool):
            return ConstantOp(IntegerAttr.from_bool(value), builtin.i1)
        if isinstance(value, float):
            return ConstantOp(FloatAttr(value, builtin.f64), builtin.f64)
        expr = ExprAttr(normalize(value, Kind.INT))
        return ConstantOp(expr, builtin.i64 if expr.data.is_Integer else IndexType())

    @property
    def python_value(self) -> Any:
        return from_attr(self.value, Kind.SCALAR)

    def verify_(self) -> None:
        v, t = self.value, self.result.type
        if isinstance(v, FloatAttr):
            ok = t == builtin.f64
        elif isinstance(v, IntegerAttr):
            ok = t == builtin.i1  # a bool
        else:  # an int (i64) or a size expression (index)
            ok = t == builtin.IndexType() or (t == builtin.i64 and v.data.is_Integer)
        if not ok:
            raise VerifyException(
                f"aten.constant: value {format_attr(v, None)} cannot have type {t}"
            )

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {format_attr(self.value, None)}")
        _print_attributes(printer, self)
        _print_result_types(printer, self)

    @classmethod
    def parse(cls, parser: Parser) -> ConstantOp:
        start = parser.pos
        value = parse_attr(parser, Kind.SCALAR)
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        op = cls(value, parser.parse_type())
        op.attributes.update(attributes)
        return verified_at(parser, start, op)


@irdl_op_definition
class TensorConstantOp(IRDLOperation):
    """A small constant tensor, inlined as a dense literal."""

    name = "aten.tensor_constant"

    value = prop_def(DenseIntOrFPElementsAttr)
    result = result_def(TensorType)

    traits = traits_def(Pure(), ConstantLike())

    def __init__(self, value: DenseIntOrFPElementsAttr, result_type: TensorType):
        super().__init__(properties={"value": value}, result_types=[result_type])

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_attribute(self.value)
        _print_attributes(printer, self)
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> TensorConstantOp:
        start = parser.pos
        value = parser.parse_attribute()
        if not isinstance(value, DenseIntOrFPElementsAttr):
            parser.raise_error("expected a dense<...> literal", start, parser.pos)
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation("->")
        op = cls(value, parser.parse_type())
        op.attributes.update(attributes)
        return verified_at(parser, start, op)

    def verify_(self) -> None:
        t = self.result.type
        assert isinstance(t, TensorType)
        if not t.is_static or list(self.value.get_shape()) != list(t.shape):
            raise VerifyException(
                f"aten.tensor_constant: value shape {list(self.value.get_shape())} does not "
                f"match result type {t}"
            )
        if self.value.get_element_type() != t.element_type:
            raise VerifyException("aten.tensor_constant: value element type differs from result")


@irdl_op_definition
class OperatorOp(IRDLOperation):
    """A call of any OpOverload the generated set lacks (rare aten ops, prims,
    custom ops, collectives), by name; later stages call it as an extern kernel::

        %u, %s, %vh = aten.operator "aten::linalg_svd"(%a, false, driver = "gesvd")
            : (!aten.tensor<...>, !aten.tensor<...>, !aten.tensor<...>)

    Non-tensor arguments are stored as attributes in ``args``/``kwargs``;
    ``#coil.operand<i>`` marks where operand ``i`` goes.
    """

    name = "aten.operator"

    overload_name = prop_def(StringAttr, prop_name="overload")
    args = prop_def(ArrayAttr)
    kwargs = prop_def(DictionaryAttr)
    inputs = var_operand_def()
    outputs = var_result_def()

    def __init__(
        self,
        overload: str,
        args: ArrayAttr,
        kwargs: DictionaryAttr,
        inputs: Sequence[SSAValue],
        result_types: Sequence[Attribute],
    ):
        super().__init__(
            properties={"overload": StringAttr(overload), "args": args, "kwargs": kwargs},
            operands=[inputs],
            result_types=[result_types],
        )

    def resolve(self) -> torch._ops.OpOverload | None:
        """The OpOverload named, if this process has it registered (imports torch)."""
        import torch

        qualified = self.overload_name.data
        ns, _, rest = qualified.partition("::")
        packet, _, overload = rest.partition(".")
        if ns == "coil":  # coil's own operators register when imported
            import coil.dialects.torch_library  # noqa: F401
        try:
            return getattr(getattr(getattr(torch.ops, ns), packet), overload or "default")
        except (AttributeError, RuntimeError):
            return None

    def verify_(self) -> None:
        seen = _count_operand_refs(self.args) + _count_operand_refs(self.kwargs)
        if sorted(seen) != list(range(len(self.inputs))):
            raise VerifyException(
                "aten.operator: every operand must be referenced exactly once by the arguments"
            )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_string_literal(self.overload_name.data)
        items = [self._item(a) for a in self.args.data]
        items += [_Keyed(k, self._item(v)) for k, v in self.kwargs.data.items()]
        printer.print_string("(")
        _print_items(printer, items)
        printer.print_string(")")
        _print_attributes(printer, self)
        _print_result_types(printer, self)

    def _item(self, attr: Attribute) -> Any:
        if isinstance(attr, OperandRefAttr):
            return self.inputs[attr.data]
        if isinstance(attr, ArrayAttr):
            return [self._item(a) for a in attr.data]
        return format_attr(attr, None)

    @classmethod
    def parse(cls, parser: Parser) -> OperatorOp:
        start = parser.pos
        overload = parser.parse_str_literal('operator name expected, e.g. "aten::linalg_svd"')
        inputs: list[SSAValue] = []

        def parse_value() -> Attribute:
            if (operand := parser.parse_optional_operand()) is not None:
                inputs.append(operand)
                return OperandRefAttr(len(inputs) - 1)
            if parser._current_token.text == "[":
                return ArrayAttr(
                    parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parse_value)
                )
            return parse_attr(parser, None)

        args: list[Attribute] = []
        kwargs: dict[str, Attribute] = {}

        def parse_item() -> None:
            if (name := _parse_optional_arg_name(parser)) is not None:
                kwargs[name] = parse_value()
            elif kwargs:
                parser.raise_error("positional argument after keyword argument")
            else:
                args.append(parse_value())

        parser.parse_comma_separated_list(parser.Delimiter.PAREN, parse_item)
        attributes = parser.parse_optional_attr_dict()
        op = cls(
            overload, ArrayAttr(args), DictionaryAttr(kwargs), inputs, _parse_result_types(parser)
        )
        op.attributes.update(attributes)
        return verified_at(parser, start, op)


def _count_operand_refs(attr: Attribute) -> list[int]:
    if isinstance(attr, OperandRefAttr):
        return [attr.data]
    if isinstance(attr, ArrayAttr):
        return [i for a in attr.data for i in _count_operand_refs(a)]
    if isinstance(attr, DictionaryAttr):
        return [i for a in attr.data.values() for i in _count_operand_refs(a)]
    return []


@irdl_attr_definition
class OperandRefAttr(Data[int]):
    """Position of an ``aten.operator`` operand inside its argument list."""

    name = "aten.operand"

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> int:
        with parser.in_angle_brackets():
            return parser.parse_integer(allow_negative=False)

    def print_parameter(self, printer: Printer) -> None:
        printer.print_string(f"<{self.data}>")
