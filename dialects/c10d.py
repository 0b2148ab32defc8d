"""The c10d functional collectives at the aten level.

torch's ``_c10d_functional`` ops (and their ``_c10d_functional_autograd``
forms) are generated from their schemas like the aten ops (``aten_ops.py``),
as the dialects ``_c10d_functional`` and ``_c10d_functional_autograd``, on the
two bases here, which say what sets them apart from aten ops:

* they communicate: none is ``Pure`` (``cse`` never merges two, ``dce`` never
  drops one), and every rank runs the same collectives in the same order;
* a collective (an op with a ``group_name``) only *starts* the communication
  (NCCL or gloo works in the background) and returns a tensor that is ready
  at the ``_c10d_functional.wait_tensor.default`` of it. Until that wait the
  collective's tensor inputs are read in the background: they must be
  neither written nor reused, and its result must not be read (the memory
  plan holds them; ``transforms/memory_plan.py``).

The syntax is the schema's (``aten_base.py``); after the arguments a
collective prints the global ranks of its group when they are known (the
importer resolves the group name in the process that traces)::

    %g = _c10d_functional.all_gather_into_tensor.default(%x, group_size = 2,
             group_name = "0") ranks [0, 1] : !aten.tensor<[8, 3], f32>
    %y = _c10d_functional.wait_tensor.default(%g) : !aten.tensor<[8, 3], f32>
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import builtin
from xdsl.dialects.builtin import DenseArrayBase, StringAttr
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import opt_prop_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from coil.dialects.aten_base import AtenOp
from coil.dialects.buffer import ExternBase
from coil.dialects.symbolic import ExprAttr

NAMESPACES = ("_c10d_functional", "_c10d_functional_autograd")
"""The torch op namespaces generated on these bases."""

WAIT_TENSOR = "_c10d_functional.wait_tensor.default"


class C10dOp(AtenOp):
    """Base of the generated c10d ops: they communicate, so none is Pure."""


class CollectiveOp(C10dOp):
    """A collective over the process group ``group_name``: starts the
    communication; its result is ready at its ``wait_tensor``."""

    ranks = opt_prop_def(DenseArrayBase)
    """The group's global ranks, in group-rank order (None: not known)."""

    # (``group_name`` itself is the generated op's property, a StringAttr.)

    @property
    def group_ranks(self) -> tuple[int, ...] | None:
        return None if self.ranks is None else tuple(self.ranks.get_values())

    def set_group_ranks(self, ranks: list[int] | tuple[int, ...] | None) -> None:
        self.ranks = None if ranks is None else DenseArrayBase.from_list(builtin.i64, list(ranks))

    def print_clauses(self, printer: Printer) -> None:
        if (ranks := self.group_ranks) is not None:
            printer.print_string(f" ranks [{', '.join(str(r) for r in ranks)}]")

    @classmethod
    def parse_clauses(cls, parser: Parser) -> dict[str, Attribute]:
        if parser.parse_optional_keyword("ranks") is None:
            return {}
        if parser._current_token.text != "[":
            parser.raise_error("expected the group's ranks after 'ranks', e.g. ranks [0, 1]")
        ranks = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_integer)
        return {"ranks": DenseArrayBase.from_list(builtin.i64, ranks)}

    def verify_(self) -> None:
        super().verify_()
        ranks = self.group_ranks
        if ranks is None:
            return
        group = self.arg("group_name")
        if len(set(ranks)) != len(ranks) or any(r < 0 for r in ranks):
            raise VerifyException(
                f"{self.name}: the ranks of a group are distinct non-negative integers, "
                f"got {list(ranks)}"
            )
        size = self.properties.get("group_size")
        if isinstance(size, ExprAttr) and size.data.is_Integer and int(size.data) != len(ranks):
            raise VerifyException(
                f"{self.name}: group_size = {size.data}, but group '{group}' has "
                f"{len(ranks)} rank(s) {list(ranks)}"
            )
        for split in ("output_split_sizes", "input_split_sizes"):
            sizes = self.properties.get(split)
            if sizes is not None and sizes.data and len(sizes.data) != len(ranks):
                raise VerifyException(
                    f"{self.name}: {split} has {len(sizes.data)} entries, one per rank of "
                    f"group '{group}' ({len(ranks)} rank(s) {list(ranks)})"
                )


def is_collective_call(op: Operation) -> bool:
    """Whether ``op`` (an aten-level op) starts a collective: a generated
    :class:`CollectiveOp`, or an ``aten.operator`` of a c10d namespace (the
    in-place and ``_out`` forms torchgen's schema model cannot name)."""
    if isinstance(op, CollectiveOp):
        return True
    name = op.properties.get("overload")
    return (
        op.name == "aten.operator"
        and isinstance(name, StringAttr)
        and name.data.split("::")[0] in NAMESPACES
    )


def collective_waits(ops: Sequence[Operation]) -> dict[int, int]:
    """The collectives in flight among top-level ``ops`` (a function body at the
    buffer or host level): the position of each extern that starts a collective
    -> the position of the last ``wait_tensor`` extern of its results (the last
    op, for a result that is never waited). Between the two, NCCL or gloo reads
    the collective's inputs and writes its results in the background."""
    starts: dict[SSAValue, int] = {}
    spans: dict[int, int] = {}
    for k, op in enumerate(ops):
        called = op.callee if isinstance(op, ExternBase) else None
        if called is None:
            continue
        if called.name == WAIT_TENSOR:
            for arg in op.operands:
                if arg in starts:
                    spans[starts[arg]] = max(spans[starts[arg]], k)
        elif is_collective_call(called):
            spans[k] = -1
            starts.update(dict.fromkeys(op.results, k))
    return {k: w if w >= 0 else len(ops) - 1 for k, w in spans.items()}


__all__ = [
    "NAMESPACES",
    "WAIT_TENSOR",
    "C10dOp",
    "CollectiveOp",
    "collective_waits",
    "is_collective_call",
]
