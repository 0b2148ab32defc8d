# A deliberately broken pass for bisect.mlir: every arith.addf becomes a subf.
from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter


@dataclass(frozen=True)
class BreakAddfPass(ModulePass):
    name = "test-break-addf"

    def apply(self, ctx, module):
        for op in list(module.walk()):
            if isinstance(op, arith.AddfOp):
                Rewriter.replace_op(op, arith.SubfOp(op.lhs, op.rhs))
