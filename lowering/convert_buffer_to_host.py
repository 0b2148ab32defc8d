"""convert-buffer-to-host: the buffer-level function becomes the host wrapper program.

Input: a module after ``convert-loop-to-tt``: ``tt.func`` kernels and one or
more ``func.func`` at the buffer level whose nests are already ``host.launch``
ops -- what is left is ``buffer.alloc`` / ``view`` / ``reuse`` / ``dealloc`` /
``extern``, ``loop.seed`` (a launch's random seed), ``host.launch`` and
``func.return``.

Output: each such ``func.func`` is a ``host.func`` with the same name,
arguments (and their ``coil.symbol`` / ``coil.constant`` attributes), result
types and attributes (``coil.output_tree``, ``coil.peak_bytes`` ...), its ops
in the same order:

* ``buffer.alloc``            -> ``host.empty_strided``
* ``buffer.view`` / ``reuse`` -> ``host.reinterpret`` (same storage, new layout;
  a view of a view is one view of the first's source, and a view nothing but
  such views read is dropped)
* ``buffer.dealloc``          -> ``host.free``
* ``buffer.extern``           -> ``host.extern`` (region moved, ``buffer.yield``
  -> ``host.yield``)
* ``loop.seed``               -> ``host.seed``
* ``func.return``             -> ``host.return``

``host.launch`` ops stay. Guarantees: no ``func.func``, buffer op or loop op
is left (checked); a loop op that reaches this pass (a nest
``convert-loop-to-tt`` did not lower) is an error naming it.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.utils.exceptions import DiagnosticException

from coil.dialects import buffer as B
from coil.dialects import host as H
from coil.dialects import loop as L
from coil.ir import source_line
from coil.transforms.input_level import require_below_aten


def _where(op: Operation) -> str:
    fn = op.parent_op()
    while fn is not None and not isinstance(fn, func.FuncOp):
        fn = fn.parent_op()
    where = f" in @{fn.sym_name.data}" if fn is not None else ""
    line = source_line(op.location)
    return f"{where} at {line}" if line is not None else where


class LowerFuncOp(RewritePattern):
    """``func.func`` -> ``host.func``: the same signature, attributes and body."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.FuncOp, rewriter: PatternRewriter) -> None:
        if op.is_declaration:
            return
        body = op.body
        op.detach_region(body)
        new = H.FuncOp(
            op.sym_name.data,
            op.function_type.inputs.data,
            op.function_type.outputs.data,
            body,
            op.sym_visibility.data if op.sym_visibility else None,
            op.arg_attrs,
            op.res_attrs,
        )
        new.attributes |= op.attributes
        rewriter.replace(op, [new], [])


class LowerReturnOp(RewritePattern):
    """``func.return`` -> ``host.return``."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.ReturnOp, rewriter: PatternRewriter) -> None:
        rewriter.replace(op, [H.ReturnOp(*op.arguments)], [])


class LowerAllocOp(RewritePattern):
    """``buffer.alloc`` -> ``host.empty_strided``."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: B.AllocOp, rewriter: PatternRewriter) -> None:
        new = H.EmptyStridedOp(op.result.type)
        new.result.name_hint = op.result.name_hint
        rewriter.replace(op, [new], [new.result])


def _reinterpret(op: B.ViewOp | B.ReuseOp, rewriter: PatternRewriter) -> None:
    # A view of a view is a view of the first one's source: layouts in types
    # are absolute (offsets count from the storage root), so nothing changes
    # but the number of views the wrapper makes per call (GPT-2 made a
    # [1, 128, 768] view of each LayerNorm output only to view it as [128, 768]).
    source = op.source
    while isinstance(source.owner, H.ReinterpretOp):
        source = source.owner.source
    new = H.ReinterpretOp(source, op.result.type)
    new.result.name_hint = op.result.name_hint
    rewriter.replace(op, [new], [new.result])


class LowerViewOp(RewritePattern):
    """``buffer.view`` -> ``host.reinterpret``."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: B.ViewOp, rewriter: PatternRewriter) -> None:
        _reinterpret(op, rewriter)


class LowerReuseOp(RewritePattern):
    """``buffer.reuse`` -> ``host.reinterpret`` (the memory plan already proved it safe)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: B.ReuseOp, rewriter: PatternRewriter) -> None:
        _reinterpret(op, rewriter)


class LowerDeallocOp(RewritePattern):
    """``buffer.dealloc`` -> ``host.free``."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: B.DeallocOp, rewriter: PatternRewriter) -> None:
        rewriter.replace(op, [H.FreeOp(op.buffer)], [])


class LowerExternOp(RewritePattern):
    """``buffer.extern`` -> ``host.extern``, moving the region (its aten ops unchanged)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: B.ExternOp, rewriter: PatternRewriter) -> None:
        body = op.body
        op.detach_region(body)
        new = H.ExternOp(list(op.args), [r.type for r in op.res], body)
        for old, res in zip(op.res, new.res):
            res.name_hint = old.name_hint
        new.attributes |= op.attributes
        new.location = op.location
        rewriter.replace(op, [new], list(new.res))


class LowerYieldOp(RewritePattern):
    """``buffer.yield`` (an extern region's terminator) -> ``host.yield``."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: B.YieldOp, rewriter: PatternRewriter) -> None:
        rewriter.replace(op, [H.YieldOp(*op.values)], [])


class LowerSeedOp(RewritePattern):
    """``loop.seed`` -> ``host.seed``."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: L.SeedOp, rewriter: PatternRewriter) -> None:
        new = H.SeedOp()
        new.result.name_hint = op.result.name_hint
        rewriter.replace(op, [new], [new.result])


def _check_no_loop_nests(module: ModuleOp) -> None:
    for fn in module.ops:
        if not isinstance(fn, func.FuncOp):
            continue
        for op in fn.walk():
            if op.name.startswith("loop.") and not isinstance(op, L.SeedOp):
                raise DiagnosticException(
                    f"convert-buffer-to-host: {op.name} remains{_where(op)}; "
                    "run convert-loop-to-tt first"
                )


def _check_lowered(module: ModuleOp) -> None:
    from coil.dialects import cpu

    # A C++ kernel (cpu.func) keeps the loop nest it runs: only the rest is checked.
    for op in (o for f in module.ops if not isinstance(f, cpu.FuncOp) for o in f.walk()):
        if isinstance(op, func.FuncOp | func.ReturnOp) and not (
            isinstance(op, func.FuncOp) and op.is_declaration
        ):
            raise AssertionError(f"convert-buffer-to-host left {op.name} behind")
        if op.name.startswith(("buffer.", "loop.")):
            raise AssertionError(f"convert-buffer-to-host left {op.name} behind{_where(op)}")


@dataclass(frozen=True)
class ConvertBufferToHostPass(ModulePass):
    """Buffer-level functions (nests already launched) -> ``host.func`` wrappers."""

    name = "convert-buffer-to-host"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        require_below_aten(op, "convert-buffer-to-host")
        _check_no_loop_nests(op)
        # Only the functions' bodies: the kernels (most of a large module's ops)
        # hold nothing to lower, and walking them took most of this pass.
        functions = [f for f in op.body.block.ops if isinstance(f, func.FuncOp)]
        walker = PatternRewriteWalker(
            GreedyRewritePatternApplier(
                [
                    LowerAllocOp(),
                    LowerViewOp(),
                    LowerReuseOp(),
                    LowerDeallocOp(),
                    LowerExternOp(),
                    LowerYieldOp(),
                    LowerSeedOp(),
                    LowerReturnOp(),
                ]
            ),
            apply_recursively=False,
            walk_regions_first=True,
        )
        for f in functions:
            walker.rewrite_region(f.body)
            # The views only other views read (all folded into those).
            for o in reversed(list(f.body.block.ops)):
                if isinstance(o, H.ReinterpretOp) and not o.result.uses:
                    o.detach()
                    o.erase()
        # Functions last: the body is moved, not rewalked.
        for f in functions:
            LowerFuncOp().match_and_rewrite(f, PatternRewriter(f))
        _check_lowered(op)
