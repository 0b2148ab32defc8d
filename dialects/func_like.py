"""A function op with ``func.func``'s fields and syntax, for ``tt.func`` and ``host.func``.

Both are MLIR functions in all but name (Triton's ``tt.func`` is ``func.func``
with ``tt.return``/``tt.call``; coil's ``host.func`` is the wrapper program), so
they share xDSL's func printing and parsing: ``tt.func public @k(%a: !tt.ptr<f32>) { ... }``.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FunctionType,
    StringAttr,
    SymbolNameConstraint,
)
from xdsl.dialects.utils import parse_func_op_like, print_func_op_like
from xdsl.ir import Attribute, Block, Region
from xdsl.irdl import IRDLOperation, opt_prop_def, prop_def, region_def, traits_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import IsolatedFromAbove, SymbolOpInterface
from xdsl.utils.exceptions import VerifyException

_RESERVED = ("sym_name", "function_type", "sym_visibility", "arg_attrs", "res_attrs")


class FuncLikeOp(IRDLOperation):
    """Base of function ops:
    ``<name> [visibility] @sym(args) -> results attributes {...} {body}``."""

    body = region_def()
    sym_name = prop_def(SymbolNameConstraint())
    function_type = prop_def(FunctionType)
    sym_visibility = opt_prop_def(StringAttr)
    arg_attrs = opt_prop_def(ArrayAttr[DictionaryAttr])
    res_attrs = opt_prop_def(ArrayAttr[DictionaryAttr])

    traits = traits_def(IsolatedFromAbove(), SymbolOpInterface())

    def __init__(
        self,
        name: str,
        inputs: Sequence[Attribute],
        outputs: Sequence[Attribute] = (),
        region: Region | None = None,
        visibility: str | None = None,
        arg_attrs: ArrayAttr[DictionaryAttr] | None = None,
        res_attrs: ArrayAttr[DictionaryAttr] | None = None,
    ):
        function_type = FunctionType.from_lists(inputs, outputs)
        if region is None:
            region = Region(Block(arg_types=function_type.inputs))
        super().__init__(
            properties={
                "sym_name": StringAttr(name),
                "function_type": function_type,
                "sym_visibility": StringAttr(visibility) if visibility else None,
                "arg_attrs": arg_attrs,
                "res_attrs": res_attrs,
            },
            regions=[region],
        )

    @property
    def args(self):
        return self.body.block.args

    def verify_(self) -> None:
        if not self.body.blocks:
            raise VerifyException(f"{self.name} @{self.sym_name.data}: needs a body")
        if self.function_type.inputs.data != tuple(self.body.block.arg_types):
            raise VerifyException(
                f"{self.name} @{self.sym_name.data}: entry block arguments must have the "
                "function's input types"
            )

    @classmethod
    def parse(cls, parser: Parser):
        visibility = parser.parse_optional_visibility_keyword()
        name, inputs, outputs, region, extra, arg_attrs, res_attrs = parse_func_op_like(
            parser, reserved_attr_names=_RESERVED[:3]
        )
        op = cls(
            name,
            inputs,
            outputs,
            region,
            visibility.data if visibility else None,
            arg_attrs,
            res_attrs,
        )
        if extra is not None:
            op.attributes |= extra.data
        return op

    def print(self, printer: Printer) -> None:
        if self.sym_visibility:
            printer.print_string(" " + self.sym_visibility.data)
        print_func_op_like(
            printer,
            self.sym_name,
            self.function_type,
            self.body,
            self.attributes,
            arg_attrs=self.arg_attrs,
            res_attrs=self.res_attrs,
            reserved_attr_names=_RESERVED[:4],
        )
