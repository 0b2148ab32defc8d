"""A loop body's scalar ops, cloned onto blocks of a tile.

Each body op becomes the same op on ``tensor<shape x T>`` (constants are splat
constants, ``cmpi``/``select``/casts coil's tensor-widened arith, ``math`` ops go
through ``loop_to_tt.math`` when it is there); ``loop.load`` becomes pointer
arithmetic and a masked ``tt.load``; ``loop.index`` the index expression;
``loop.rand``/``randn`` a call of ``tl.rand``/``tl.randn``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import sympy
from torch.utils._sympy.functions import FloorDiv, PythonMod
from xdsl.dialects import arith as xarith
from xdsl.dialects.builtin import AnyFloat, IndexType, IntegerType, f32, i1, i32, i64
from xdsl.ir import Attribute, Block, Operation, SSAValue

from coil.dialects import arith as A
from coil.dialects import loop as L
from coil.dialects import tt
from coil.dialects.buffer import BufferType
from coil.dialects.tt import block_of, element_of, shape_of
from coil.ir import source_line, source_op
from coil.lowering.loop_to_tt.builder import KernelBuilder, LoweringError, Shape
from coil.lowering.loop_to_tt.eviction import EvictionPlan
from coil.lowering.loop_to_tt.value_range import decided, within
from coil.transforms.extern_effects import may_share_storage, storage_holders

_WIDENED = {op.name: op for op in A.WIDENED}


@dataclass
class Tile:
    """Where a body is emitted: its block shape, its lane mask (None when every lane is
    in range), and how its index symbols read in the kernel's symbols."""

    shape: Shape
    mask: SSAValue | None
    subs: Mapping[sympy.Symbol, sympy.Expr] = field(default_factory=dict)

    def index(self, e: sympy.Expr) -> sympy.Expr:
        return e.xreplace(self.subs) if self.subs else e


def refold(
    offset: sympy.Expr, flat: sympy.Symbol, syms: Sequence[sympy.Symbol], sizes
) -> sympy.Expr:
    """``offset`` with ``sum(c * S_k * i_k)`` over a suffix ``k >= j`` of the nest's
    dimensions (``S_k`` their row-major strides, ``c`` common) replaced by
    ``c * (flat % prod(sizes[j:]))`` (``c * flat`` for the whole nest).

    A contiguous read of a 2-D nest ``[4096, 3072]`` otherwise computes
    ``(x // 3072) * 3072 + x % 3072``: an integer division and a remainder per
    element that Triton keeps (GPT-2's GELU kernel ran 20% slower than
    Inductor's, which indexes by ``x`` itself)."""
    n = len(syms)
    live = [k for k in range(n) if sizes[k] != 1]
    if not live or not (offset.free_symbols & set(syms)) or any(d == 0 for d in sizes):
        return offset  # an empty nest visits no point (decompose binds zeros)
    expanded = sympy.expand(offset)
    strides = [sympy.Mul(*sizes[k + 1 :]) for k in range(n)]  # the nest's row-major strides
    symset = set(syms)
    common = None
    start = None
    for k in reversed(live):
        coeff = expanded.coeff(syms[k])
        if coeff == 0 or coeff.free_symbols & symset:
            break
        ratio = sympy.cancel(coeff / strides[k])  # cheap: sizes are products
        if common is None:
            common = ratio
        elif ratio != common:
            break
        start = k
    if start is None or (start == live[-1] and start != live[0]):
        return offset  # nothing folds but a single index (no division saved)
    folded = [k for k in live if k >= start]
    rest = expanded - sum(common * strides[k] * syms[k] for k in folded)
    rest = sympy.expand(rest)
    if rest.free_symbols & {syms[k] for k in folded}:
        return offset  # the index appears non-linearly elsewhere
    if start == live[0]:
        term = flat
    else:
        term = PythonMod(flat, sympy.Mul(*sizes[start:]))
    return rest + common * term


def merge_divmod(offset: sympy.Expr) -> sympy.Expr:
    """``offset`` with each ``c*d*(e floordiv d) + c*(e mod d)`` replaced by ``c*e``:
    a flattened range read back row-major (a split reduction's chunk over a
    [s, s] input reads ``x[p // s, p % s]``, address ``s*(p // s) + p % s``)."""
    if not offset.has(FloorDiv):
        return offset
    terms = list(sympy.Add.make_args(sympy.expand(offset)))
    for t in list(terms):
        if t not in terms:
            continue
        coeff, factors = t.as_coeff_mul()
        divs = [f for f in factors if isinstance(f, FloorDiv)]
        if len(divs) != 1:
            continue
        (div,) = divs
        e, d = div.args
        scale = sympy.Mul(coeff, *[f for f in factors if f is not div]) / d
        mod = sympy.expand(scale * PythonMod(e, d))
        if mod in terms:
            terms.remove(t)
            terms.remove(mod)
            terms.append(sympy.expand(scale * e))
    return sympy.Add(*terms)


@dataclass
class BodyEmitter:
    """Clones loop bodies for one kernel.

    ``pointer(buffer)`` gives the kernel's pointer argument for a buffer;
    ``member_value(value, tile)`` the tile value of a group member's result (or
    None when ``value`` is not one); ``seed(value)`` the kernel's i64 argument.
    """

    b: KernelBuilder
    device: str
    pointer: Callable[[SSAValue], SSAValue]
    member_value: Callable[[SSAValue, Tile], SSAValue | None]
    seed: Callable[[SSAValue], SSAValue]
    n_indirect: int = 0
    bounds_check: bool = True
    """Assert on the device that every indirect index is in range (see ``check_bounds``)."""
    flat_groups: list[tuple[sympy.Symbol, tuple, tuple]] = field(default_factory=list)
    """(flat symbol, index symbols, sizes): indices bound as ``decompose(flat, sizes)``."""
    eviction: EvictionPlan = field(default_factory=EvictionPlan)
    """The L2 eviction hints of the kernel's loads (see ``eviction.py``)."""
    stored: list[set[SSAValue]] = field(default_factory=list)
    """The storage holders of each store emitted so far (``storage_holders``): a
    load is reused only while no store since may have written its storage."""
    preloaded: dict[Operation, SSAValue] = field(default_factory=dict)
    """Loads whose tile value the kernel built itself (a gemm template's operand
    loads through pointers it advances along K): ``emit`` uses the value."""

    def emit(self, block: Block, tile: Tile) -> list[SSAValue]:
        """The values the body yields, as blocks of ``tile.shape``."""
        vals: dict[SSAValue, SSAValue] = {}
        for op in block.ops:
            if isinstance(op, L.YieldOp):
                return [self._get(vals, v, tile) for v in op.values]
            for arg in op.operands:
                if arg.owner is block:
                    raise LoweringError(
                        f"convert-loop-to-tt: {op.name} uses a loop index as a value; "
                        "read indices with loop.index"
                    )
            results = self._emit_op(op, vals, tile)
            for r, v in zip(op.results, results):
                if r.name_hint and not v.name_hint:
                    v.name_hint = r.name_hint
                vals[r] = v
        raise LoweringError("convert-loop-to-tt: a loop body must end with loop.yield")

    def _get(self, vals: dict[SSAValue, SSAValue], v: SSAValue, tile: Tile) -> SSAValue:
        if v in vals:
            return vals[v]
        raise LoweringError(
            f"convert-loop-to-tt: body value {v.name_hint or v} is defined outside the body "
            "and is not a seed"
        )

    # ---- one op ----

    def _emit_op(self, op: Operation, vals, tile: Tile) -> list[SSAValue]:
        b = self.b
        if isinstance(op, L.LoadOp):
            if op in self.preloaded:
                return [self.preloaded[op]]
            return [self.load(op, vals, tile)]
        if isinstance(op, L.IndexOp):
            v = b.broadcast_to(b.emit_index(tile.index(op.value)), tile.shape)
            rt = op.result.type
            return [b.cast_int(v, b.index_type if isinstance(rt, IndexType) else rt)]
        if isinstance(op, L.RandOp | L.RandnOp):
            return [self.random(op, tile)]
        if isinstance(op, xarith.ConstantOp):
            attr = op.value
            value = attr.value.data
            return [b.const(value, op.result.type, tile.shape)]
        operands = [self._get(vals, v, tile) for v in op.operands]
        operands = [b.broadcast_to(v, tile.shape) for v in operands]
        result_types = [block_of(r.type, tile.shape) for r in op.results]
        if op.name.startswith("math."):
            return [self._math(op, operands, result_types[0])]
        if isinstance(op, xarith.SelectOp) and isinstance(operands[0].owner, Operation):
            # A select whose comparison the ranges decide is its arm: an
            # index's negative wrap (aten.index's ``i < 0 ? i + n : i``) of a
            # value clamped at 0, four per bilinear upsample element.
            which = decided(operands[0].owner, b.ranges)
            if which is not None:
                return [operands[1] if which else operands[2]]
        if op.name.startswith("arith."):
            cls = _WIDENED.get(op.name, type(op))
            new = cls.create(
                operands=operands,
                result_types=result_types,
                properties=dict(op.properties),
                attributes=dict(op.attributes),
            )
            b.insert(new)
            return list(new.results)
        raise LoweringError(f"convert-loop-to-tt: cannot lower {op.name} in a loop body")

    def _math(self, op: Operation, operands: list[SSAValue], result_type: Attribute) -> SSAValue:
        try:
            from coil.lowering.loop_to_tt.math import lower_math_op
        except ImportError:  # the math lowering is optional: keep the op on blocks
            lower_math_op = None
        if lower_math_op is not None:
            try:
                return lower_math_op(op.name, operands, result_type, self.device, self.b.insert)
            except NotImplementedError as e:
                raise LoweringError(f"convert-loop-to-tt: {e}") from e
        new = type(op).create(
            operands=operands,
            result_types=[result_type],
            properties=dict(op.properties),
            attributes=dict(op.attributes),
        )
        self.b.insert(new)
        return new.results[0]

    # ---- memory ----

    def address(self, buffer_type: BufferType, index: Sequence[sympy.Expr], tile: Tile):
        """``sum(index_k * stride_k)`` (no offset: the pointer is the first element),
        with the nest's flattened indices folded back where it reads them in order."""
        return self._fold(self._offset(buffer_type, index, tile))

    @staticmethod
    def _offset(buffer_type: BufferType, index: Sequence[sympy.Expr], tile: Tile) -> sympy.Expr:
        strides = buffer_type.strides_attr.data
        return sum((tile.index(e) * s for e, s in zip(index, strides)), sympy.Integer(0))

    def _fold(self, offset: sympy.Expr) -> sympy.Expr:
        for flat, syms, sizes in self.flat_groups:
            offset = refold(offset, flat, syms, sizes)
        return merge_divmod(offset)

    def pointers(self, buffer: SSAValue, offset: sympy.Expr, tile: Tile) -> SSAValue:
        b = self.b
        ptr = self.pointer(buffer)
        off = b.broadcast_to(b.emit_index(offset), tile.shape)
        base = b.broadcast_to(ptr, tile.shape)
        return b.cached(("addptr", base, off), lambda: b.emit(tt.AddPtrOp(base, off)))

    def load(self, op: L.LoadOp, vals, tile: Tile) -> SSAValue:
        b = self.b
        src = op.source
        member = self.member_value(src, tile) if not isinstance(src.type, BufferType) else None
        if member is not None:
            return self._member_load(op, member, vals, tile)
        if not isinstance(src.type, BufferType):
            raise LoweringError(
                f"convert-loop-to-tt: loop.load reads {src.type}, which is neither a buffer "
                "nor a member of the nest's group; run bufferize first"
            )
        subs = dict(tile.subs)
        raw: dict[sympy.Expr, SSAValue] = {}
        for k, t in enumerate(op.indirect):
            # t<k> is this load's own operand: bind it under a name no other load uses.
            self.n_indirect += 1
            fresh = sympy.Symbol(f"_indirect{self.n_indirect}", integer=True)
            raw[fresh] = self._get(vals, t, tile)
            b.bind(fresh, raw[fresh])
            subs[L.indirect_symbol(k)] = fresh
        inner = Tile(tile.shape, tile.mask, subs)
        unfolded = self._offset(src.type, op.index.data, inner)
        p = self.pointers(src, self._fold(unfolded), inner)
        mask = tile.mask
        guard = None  # the body's mask, applied to the loaded value instead
        if op.mask is not None:
            body_mask = b.broadcast_to(self._get(vals, op.mask, tile), tile.shape)
            if not op.indirect and self.in_bounds(src.type, op.index.data, inner):
                # The address is valid wherever the tile is: load without the
                # body's mask (a pool window's validity on a per-channel scale),
                # so the reads of all window points are one load, and give 0
                # where the mask is off, as the masked load would.
                guard = body_mask
            else:
                mask = b.and_(body_mask, mask)
        if op.indirect and self.bounds_check:
            self.check_bounds(op, inner, mask, raw)
        if mask is not None:
            mask = b.broadcast_to(mask, tile.shape)
        # The same elements read twice (members of a fused group reading one
        # input, the rows of a shared-rows tile reading a weight) are one load,
        # until a store may have changed them.
        key = ("load", p, mask, self._writes_to(src))
        value = b.lookup(key)
        if value is None:
            evict = self.eviction.policy(unfolded, self.flat_groups, bool(op.indirect))
            if mask is None:
                load = tt.LoadOp(p, evict=evict or "normal")
            else:
                other = b.const(0, element_of(src.type.element_type), tile.shape)
                load = tt.LoadOp(p, mask, other, evict=evict or "normal")
            self.eviction.record(load, src, evict is not None)
            value = b.remember(key, b.emit(load))
        # Each read keeps its own mask: a shared load is the raw value.
        if guard is not None:
            value = b.select(guard, value, b.const(0, element_of(value.type), tile.shape))
        return value

    def in_bounds(self, buffer_type: BufferType, index: Sequence[sympy.Expr], tile: Tile) -> bool:
        """Whether each of ``index`` (affine in the kernel's loop indices, whose
        extents ``flat_groups`` give) lies in ``[0, size)`` of its static
        dimension at every point of the nest: then a load there is valid without
        the body's mask (lanes past the nest keep the tile's mask)."""
        extent: dict[sympy.Expr, int] = {}
        for _, syms, sizes in self.flat_groups:
            for sym, size in zip(syms, sizes):
                size = sympy.sympify(size)
                if size.is_Integer:
                    extent[sym] = int(size)
        for e, size in zip(index, buffer_type.shape_attr.data):
            size = sympy.sympify(size)
            if not size.is_Integer:
                return False
            lo = hi = 0
            for term in sympy.Add.make_args(sympy.expand(tile.index(sympy.sympify(e)))):
                c, rest = term.as_coeff_Mul()
                if not c.is_Integer:
                    return False
                if rest == 1:
                    lo, hi = lo + int(c), hi + int(c)
                    continue
                if rest not in extent:
                    return False
                span = int(c) * (extent[rest] - 1)
                lo, hi = lo + min(0, span), hi + max(0, span)
            if lo < 0 or hi > int(size) - 1:
                return False
        return True

    def scatter(
        self,
        op: L.ScatterOp,
        value: SSAValue,
        indices: Sequence[SSAValue],
        tile: Tile,
    ) -> None:
        """Store ``value`` through the scatter's index into its out: a ``tt.store``
        (``store``) or a relaxed ``tt.atomic_rmw`` (``add``, ``max``, ``min``, as
        Inductor's ``atomic_add``), each lane at the element its indices name,
        after the bounds check of every indirect dimension."""
        b = self.b
        (out,) = op.outs
        subs = dict(tile.subs)
        raw: dict[sympy.Expr, SSAValue] = {}
        for k, t in enumerate(indices):
            self.n_indirect += 1
            fresh = sympy.Symbol(f"_indirect{self.n_indirect}", integer=True)
            raw[fresh] = t
            b.bind(fresh, t)
            subs[L.indirect_symbol(k)] = fresh
        inner = Tile(tile.shape, tile.mask, subs)
        p = self.pointers(out, self.address(out.type, op.index.data, inner), inner)
        mask = b.broadcast_to(tile.mask, tile.shape) if tile.mask is not None else None
        if self.bounds_check:
            self.check_bounds(op, inner, mask, raw)
        value = b.broadcast_to(value, tile.shape)
        mode = op.mode.data
        if mode == "store":
            b.insert(tt.StoreOp(p, value, mask))
        else:
            element = element_of(value.type)
            kind = {"add": "fadd" if is_float(element) else "add"}.get(mode, mode)
            b.insert(tt.AtomicRMWOp(kind, p, value, mask, sem="relaxed", scope="gpu"))
        self.stored.append(storage_holders(out))

    def _writes_to(self, src: SSAValue) -> int:
        """How many stores so far may have written ``src``'s storage."""
        if not self.stored:
            return 0
        holders = storage_holders(src)
        return sum(may_share_storage(holders, w) for w in self.stored)

    def check_bounds(
        self,
        op: L.LoadOp | L.ScatterOp,
        tile: Tile,
        mask: SSAValue | None,
        raw: Mapping[sympy.Expr, SSAValue],
    ) -> None:
        """``tt.assert`` that each dimension an indirect index reaches is in range,
        on the lanes that load (Inductor's ``assert_indirect_indexing``): eager
        raises on an out-of-range index, where an unchecked load would read
        whatever lies there. Negative indices have been wrapped by then (the
        lowering of aten.index adds the size), so the range is ``[0, size)``.
        An index that is an indirect operand itself is compared as loaded (i64),
        before its cast to a 32-bit index type could wrap it into range."""
        b = self.b
        ok = None
        bounds = []
        for d, size in checked_dims(op):
            e = tile.index(op.index.data[d])
            if e in raw and isinstance(element_of(raw[e].type), IntegerType):
                it = i64
                v = b.cast_int(raw[e], i64)
            else:
                it = b.index_type
                v = b.emit_index(e)
            bound = tile.index(size)
            if bound.is_Integer and within(v, int(bound), b.ranges):
                continue  # in range by construction (a clamped bucket): no assert
            v = b.broadcast_to(v, tile.shape)
            n = b.cast_int(b.emit_index(tile.index(size)), it)
            inside = b.and_(b.cmpi(v, b.const(0, it), "sge"), b.cmpi(v, n, "slt"))
            ok = b.and_(ok, inside)
            bounds.append(f"0 <= index < {size} (dim {d})")
        if ok is None:
            return
        ok = b.broadcast_to(ok, tile.shape)
        if mask is not None:  # lanes that load nothing may hold any index
            not_loaded = b.binary(xarith.XOrIOp, mask, b.const(1, i1, shape_of(mask.type)))
            ok = b.binary(xarith.OrIOp, ok, b.broadcast_to(not_loaded, tile.shape))
        where = [w for w in (source_op(op.location), source_line(op.location)) if w]
        message = f"index out of bounds: {', '.join(bounds)}"
        if where:
            message += f" in {' at '.join(where)}"
        b.insert(tt.AssertOp(ok, message))

    def _member_load(self, op: L.LoadOp, member: SSAValue, vals, tile: Tile) -> SSAValue:
        """A group member read at the tile's own point: its value (a gather from
        registers has no form). Masked-off lanes read 0, as a buffer load's
        ``other`` (``cat``/``stack`` read a broadcast member under masks)."""
        if op.indirect:
            raise LoweringError("convert-loop-to-tt: a group member is read with an indirect index")
        b = self.b
        value = b.broadcast_to(member, tile.shape)
        if op.mask is None:
            return value
        mask = b.broadcast_to(self._get(vals, op.mask, tile), tile.shape)
        zero = b.const(0, element_of(member.type), tile.shape)
        return b.select(mask, value, zero)

    def store(
        self, buffer: SSAValue, index: Sequence[sympy.Expr], value: SSAValue, tile: Tile
    ) -> None:
        b = self.b
        value = b.broadcast_to(value, tile.shape)
        p = self.pointers(buffer, self.address(buffer.type, index, tile), tile)
        mask = b.broadcast_to(tile.mask, tile.shape) if tile.mask is not None else None
        b.insert(tt.StoreOp(p, value, mask))
        self.stored.append(storage_holders(buffer))

    # ---- random numbers ----

    def random(self, op: L.RandOp | L.RandnOp, tile: Tile) -> SSAValue:
        b = self.b
        seed = self.seed(op.seed)  # tl.rand takes a 64-bit seed as it is
        offset = b.broadcast_to(b.emit_index(tile.index(op.offset.data[0])), tile.shape)
        if element_of(offset.type) not in (i32, i64):
            offset = b.cast_int(offset, i64)
        name = "tl.rand" if isinstance(op, L.RandOp) else "tl.randn"
        call = tt.CallOp(name, [seed, offset], [block_of(f32, tile.shape)])
        v = b.emit(call)
        want = op.result.type
        if want != f32:
            v = b.to_float(v, want)
        return v


def checked_dims(op: L.LoadOp | L.ScatterOp) -> list[tuple[int, sympy.Expr]]:
    """(dimension, size) of the source of ``op`` (a scatter's out) for each
    dimension whose index depends on an indirect operand: what the bounds
    check compares."""
    if isinstance(op, L.ScatterOp):
        n, buffer_type = op.n_indirect(), op.targets[0].type
    else:
        n, buffer_type = len(op.indirect), op.source.type
    indirect = {L.indirect_symbol(k) for k in range(n)}
    shape = buffer_type.shape_attr.data if isinstance(buffer_type, BufferType) else ()
    return [
        (d, sympy.sympify(size))
        for d, (e, size) in enumerate(zip(op.index.data, shape))
        if sympy.sympify(e).free_symbols & indirect
    ]


def is_integer(t: Attribute) -> bool:
    return isinstance(t, IntegerType)


def is_float(t: Attribute) -> bool:
    return isinstance(t, AnyFloat)
