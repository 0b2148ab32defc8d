"""The host dialect: the wrapper program that allocates buffers and launches kernels.

It is Inductor's ``call(args)`` wrapper as IR (output_code.py's analogue). Values
are ``!buffer.buffer`` (a strided tensor on a device) and ``index`` sizes; a
size symbol (``s0``) is bound by the ``host.func`` argument carrying
``coil.symbol``, or read from an input's size, or from an extern's result (an
unbacked size) -- the Python target writes those reads:

    host.func @call(%arg0: !buffer.buffer<[s0, 64], f32>) -> !buffer.buffer<[s0, 64], f32> {
      %buf0 = host.empty_strided : !buffer.buffer<[s0, 64], f32>
      host.launch @coil_softmax_0 grid [s0, 1, 1] (%arg0, %buf0 : ..., ...)
          scalars [s0] {num_warps = 4 : i64, num_stages = 1 : i64}
      %mm = host.extern "aten.mm.default" (%buf0, %w) : (...) -> (...) { aten.mm ... }
      host.free %buf0 : !buffer.buffer<[s0, 64], f32>
      host.return %mm : !buffer.buffer<[s0, 32], f32>
    }

``host.launch`` names a ``tt.func`` of the same module; its buffer operands are
the kernel's pointer arguments in order, then one scalar argument per
``scalars`` expression; the grid is three size expressions (programs along x,
y, z). ``num_warps``/``num_stages`` are Triton's launch options.

``host.autotune "coil_softmax_0" { host.launch ... host.launch ... }`` holds the
candidate launches of one nest (same arguments, different kernels, tiles and
launch options): exactly one of them runs, the runtime's choice (the fastest,
measured once per process and key: the name and the launches' size symbols).

``host.variants "coil_softmax_0" size <s1> bounds <[1024]>
{ host.launch ... host.launch ... }`` holds kernels of one nest planned for
ranges of a symbolic size: the first whose bound the size is within runs, the
last past every bound (one comparison in the wrapper; ``strategy/variants.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import sympy
from xdsl.dialects.builtin import (
    DictionaryAttr,
    FlatSymbolRefAttrConstr,
    StringAttr,
    SymbolRefAttr,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Dialect, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import HasParent, IsTerminator, NoTerminator
from xdsl.utils.exceptions import VerifyException

from coil.dialects.buffer import BufferType, ExternBase, LastUseBase, YieldBase, check_buffer
from coil.dialects.func_like import FuncLikeOp
from coil.dialects.symbolic import ExprAttr, ShapeAttr, format_expr_list, parse_expr_list


@irdl_op_definition
class FuncOp(FuncLikeOp):
    """``host.func``: the wrapper, over the graph's inputs; returns its outputs."""

    name = "host.func"


@irdl_op_definition
class ReturnOp(IRDLOperation):
    """``host.return``: the graph's outputs."""

    name = "host.return"
    values = var_operand_def()
    traits = traits_def(IsTerminator(), HasParent(FuncOp))
    assembly_format = "attr-dict ($values^ `:` type($values))?"

    def __init__(self, *values: SSAValue | Operation):
        super().__init__(operands=[values])


class _NewBufferOp(IRDLOperation):
    """An op that makes a buffer of its result type: ``%b = host.<op> : type``."""

    result = result_def()
    assembly_format = "attr-dict `:` type($result)"

    def __init__(self, result_type: BufferType):
        super().__init__(result_types=[result_type])

    def verify_(self) -> None:
        check_buffer(self, "the result", self.result.type)


@irdl_op_definition
class EmptyStridedOp(_NewBufferOp):
    """``host.empty_strided``: fresh storage with the result type's sizes, strides and
    device (``torch.empty_strided``)."""

    name = "host.empty_strided"


@irdl_op_definition
class ReinterpretOp(IRDLOperation):
    """``host.reinterpret``: the source's storage with the result's sizes, strides and
    offset (``torch.as_strided``; no copy)."""

    name = "host.reinterpret"
    source = operand_def()
    result = result_def()
    assembly_format = "$source attr-dict `:` type($source) `->` type($result)"

    def __init__(self, source: SSAValue, result_type: BufferType):
        super().__init__(operands=[source], result_types=[result_type])

    def verify_(self) -> None:
        check_buffer(self, "the source", self.source.type)
        check_buffer(self, "the result", self.result.type)
        a, b = self.source.type, self.result.type
        if a.element_type != b.element_type or a.device_attr != b.device_attr:
            raise VerifyException(
                f"host.reinterpret: the storage keeps its element type and device ({a} -> {b})"
            )


@irdl_op_definition
class FreeOp(LastUseBase):
    """``host.free``: the last use of an allocation (the wrapper drops it)."""

    name = "host.free"


@irdl_op_definition
class YieldOp(YieldBase):
    """Terminates a ``host.extern`` region."""

    name = "host.yield"


@irdl_op_definition
class ExternOp(ExternBase):
    """``host.extern "aten.mm.default" (...)``: call the ATen op(s) of the region."""

    name = "host.extern"
    YIELD: ClassVar[type[IRDLOperation]] = YieldOp


@irdl_op_definition
class SeedOp(IRDLOperation):
    """``host.seed``: a fresh i64 seed from torch's generator, drawn when the wrapper runs
    (kernels then draw counter-based random numbers from it)."""

    name = "host.seed"
    result = result_def(i64)
    assembly_format = "attr-dict `:` type($result)"

    def __init__(self):
        super().__init__(result_types=[i64])


@irdl_op_definition
class SemaphoresOp(_NewBufferOp):
    """``host.semaphores : !buffer.buffer<[n], i32, cuda:0>``: ``n`` int32 counters
    that are zero before each launch that takes them, kept by the module rather
    than allocated per call: made (zeroed) on the module's first call on each
    stream of the device -- so calls on two streams never share them -- and
    reused by later calls. A kernel that takes them must leave them zero when it
    ends: the split-reduction finish (``lowering/loop_to_tt/split_finish.py``)
    counts arriving programs in them and its last program resets its counter.
    Inductor's ``WorkspaceZeroMode.ZERO_PER_GRAPH`` zeroes its semaphores once per
    call instead (a fill launch each call)."""

    name = "host.semaphores"

    def verify_(self) -> None:
        super().verify_()
        t = self.result.type
        if not (
            t.rank == 1
            and t.element_type == i32
            and t.shape_attr.data[0].is_Integer
            and t.is_contiguous()
            and t.offset_attr.data == 0
        ):
            raise VerifyException(
                f"host.semaphores: expected a static 1-D contiguous i32 buffer, got {t}"
            )


@irdl_op_definition
class LaunchOp(IRDLOperation):
    """``host.launch @kernel grid [x, y, z] (args) scalars [exprs] {config}``: args are
    buffers (kernel pointer arguments) or i64 values (a seed); then one i64 kernel
    argument per ``scalars`` expression."""

    name = "host.launch"
    kernel = prop_def(FlatSymbolRefAttrConstr)
    grid = prop_def(ShapeAttr)
    scalars = prop_def(ShapeAttr)
    config = opt_prop_def(DictionaryAttr)
    args = var_operand_def()

    def __init__(
        self,
        kernel: str,
        grid: Sequence,
        args: Sequence[SSAValue],
        scalars: Sequence = (),
        config: dict[str, Attribute] | None = None,
    ):
        super().__init__(
            operands=[list(args)],
            properties={
                "kernel": SymbolRefAttr(kernel),
                "grid": ShapeAttr(list(grid)),
                "scalars": ShapeAttr(list(scalars)),
                "config": DictionaryAttr(config) if config else None,
            },
        )

    @property
    def kernel_name(self) -> str:
        return self.kernel.root_reference.data

    def verify_(self) -> None:
        if len(self.grid.data) != 3:
            raise VerifyException(
                f"host.launch: the grid has three extents (x, y, z), got {len(self.grid.data)}"
            )
        for k, a in enumerate(self.args):
            if a.type != i64:
                check_buffer(self, f"argument #{k}", a.type)

    def print(self, printer: Printer) -> None:
        printer.print_string(f" @{self.kernel_name} grid {format_expr_list(self.grid.data)} (")
        printer.print_list(self.args, printer.print_operand)
        if self.args:
            printer.print_string(" : ")
            printer.print_list([a.type for a in self.args], printer.print_attribute)
        printer.print_string(")")
        if self.scalars.data:
            printer.print_string(f" scalars {format_expr_list(self.scalars.data)}")
        if self.config is not None:
            printer.print_string(" ")
            printer.print_attribute(self.config)

    @classmethod
    def parse(cls, parser: Parser) -> LaunchOp:
        kernel = parser.parse_symbol_name()
        if parser.parse_optional_keyword("grid") is None:
            parser.raise_error("host.launch: expected 'grid [x, y, z]' after the kernel name")
        grid = parse_expr_list(parser)
        parser.parse_punctuation("(")
        names, types = [], []
        if not parser.parse_optional_punctuation(")"):
            names = parser.parse_comma_separated_list(
                parser.Delimiter.NONE, parser.parse_unresolved_operand
            )
            parser.parse_punctuation(":")
            start = parser.pos
            types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
            if len(types) != len(names):
                parser.raise_error(
                    f"host.launch: {len(names)} argument(s) but {len(types)} type(s)",
                    start,
                    parser.pos,
                )
            parser.parse_punctuation(")")
        scalars = parse_expr_list(parser) if parser.parse_optional_keyword("scalars") else []
        config = parser.parse_optional_attribute()
        if config is not None and not isinstance(config, DictionaryAttr):
            parser.raise_error("host.launch: the launch config is a dictionary {num_warps = ...}")
        args = parser.resolve_operands(names, types, parser.pos)
        return cls(kernel.data, grid, args, scalars, config.data if config else None)


@irdl_op_definition
class AutotuneOp(IRDLOperation):
    """``host.autotune "name" { host.launch ... }``: run exactly one of the candidate
    launches, the runtime's choice (the fastest, measured once per process and key)."""

    name = "host.autotune"
    key = prop_def(StringAttr)
    body = region_def()
    traits = traits_def(NoTerminator())
    assembly_format = "$key attr-dict-with-keyword $body"

    def __init__(self, key: str, launches: Sequence[LaunchOp]):
        super().__init__(
            properties={"key": StringAttr(key)}, regions=[Region(Block(list(launches)))]
        )

    @property
    def launches(self) -> list[LaunchOp]:
        return [op for op in self.body.block.ops if isinstance(op, LaunchOp)]

    def verify_(self) -> None:
        blocks = list(self.body.blocks)
        if len(blocks) != 1 or blocks[0].args:
            raise VerifyException(
                "host.autotune: the region is one block without arguments, "
                "holding the candidate host.launch ops"
            )
        ops = list(blocks[0].ops)
        if not ops:
            raise VerifyException("host.autotune: the region holds at least one host.launch")
        for op in ops:
            if not isinstance(op, LaunchOp):
                raise VerifyException(
                    f"host.autotune: the region holds only host.launch candidates, found {op.name}"
                )
        first = ops[0]
        names = set()
        for op in ops:
            if op.kernel_name in names:
                raise VerifyException(
                    f"host.autotune: kernel @{op.kernel_name} is a candidate twice"
                )
            names.add(op.kernel_name)
            # The runtime may run any one: each must compute the same outputs.
            if list(op.args) != list(first.args):
                raise VerifyException(
                    f"host.autotune: every candidate launches the same arguments "
                    f"(@{op.kernel_name} differs from @{first.kernel_name})"
                )


@irdl_op_definition
class VariantsOp(IRDLOperation):
    """``host.variants "coil_softmax_0" size <s1> bounds <[1024]> { host.launch
    ... host.launch ... }``: launch ``k`` runs where ``size`` is at most
    ``bounds[k]`` (the first that holds), the last one otherwise. Kernels planned
    for one range of a symbolic size each (``strategy/variants.py``: a reduction
    row kept whole in registers up to a bound, looped past it), chosen at run
    time by one comparison of the actual size."""

    name = "host.variants"
    key = prop_def(StringAttr)
    size = prop_def(ExprAttr)
    bounds = prop_def(ShapeAttr)
    body = region_def()
    traits = traits_def(NoTerminator())
    assembly_format = "$key `size` $size `bounds` $bounds attr-dict-with-keyword $body"

    def __init__(
        self, key: str, size: sympy.Expr, bounds: Sequence[int], launches: Sequence[LaunchOp]
    ):
        super().__init__(
            properties={
                "key": StringAttr(key),
                "size": ExprAttr(size),
                "bounds": ShapeAttr(list(bounds)),
            },
            regions=[Region(Block(list(launches)))],
        )

    @property
    def launches(self) -> list[LaunchOp]:
        return [op for op in self.body.block.ops if isinstance(op, LaunchOp)]

    @property
    def bound_values(self) -> list[int]:
        return [int(b) for b in self.bounds.data]

    def verify_(self) -> None:
        blocks = list(self.body.blocks)
        if len(blocks) != 1 or blocks[0].args:
            raise VerifyException(
                "host.variants: the region is one block without arguments, "
                "holding the variants' host.launch ops"
            )
        ops = list(blocks[0].ops)
        for op in ops:
            if not isinstance(op, LaunchOp):
                raise VerifyException(
                    f"host.variants: the region holds only host.launch ops, found {op.name}"
                )
        bounds = list(self.bounds.data)
        if any(not getattr(b, "is_Integer", False) for b in bounds):
            raise VerifyException("host.variants: the bounds are integers")
        values = [int(b) for b in bounds]
        if len(ops) != len(values) + 1:
            raise VerifyException(
                f"host.variants: {len(values)} bounds need {len(values) + 1} launches "
                f"(one a bound, then the rest), found {len(ops)}"
            )
        if any(b <= 0 for b in values) or values != sorted(set(values)):
            raise VerifyException(
                f"host.variants: bounds rise strictly from 1 or more, got {values}"
            )
        first = ops[0]
        for op in ops[1:]:
            # Any one may run: each must compute the same outputs.
            if list(op.args) != list(first.args):
                raise VerifyException(
                    f"host.variants: every variant launches the same arguments "
                    f"(@{op.kernel_name} differs from @{first.kernel_name})"
                )


Host = Dialect(
    "host",
    [
        FuncOp,
        ReturnOp,
        EmptyStridedOp,
        ReinterpretOp,
        FreeOp,
        ExternOp,
        YieldOp,
        SeedOp,
        SemaphoresOp,
        LaunchOp,
        AutotuneOp,
        VariantsOp,
    ],
    [],
)
