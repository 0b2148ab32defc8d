"""convert-decode-attention-to-tt: one-query attention as coil's own Triton kernels.

A decode step's ``scaled_dot_product_attention`` has a few query rows per
(batch, head) -- one token, or the query heads of a grouped-query group packed
as rows (``frontend/decode_attention.py``) -- over a static key/value cache,
and reaches the buffer level as an ATen call
(``_scaled_dot_product_efficient_attention``, ``_flash_attention``,
``_flash_attention_for_cpu``, ``_cudnn_attention``). ATen's kernels tile the
query rows: a batch-1 step runs one program per head (4 for a Llama with 4
key/value heads) walking the whole cache, and reads every slot of it, the
masked-off ones past the current position included.

This pass replaces such a ``buffer.extern`` (query rows at most
:data:`MAX_ROWS`, no dropout, not causal, its other results unused) by launches
of two kernels written in the tt dialect (flash-decoding, Inductor's
``flex_decoding`` template):

* ``coil_decode_attention``: program ``(bh, s)`` takes batch x head ``bh`` and
  the ``s``-th of ``S`` equal runs of keys; it loads the ``[rows, D]`` queries
  once and walks its keys in ``BLOCK_L`` steps: scores ``q . k`` (scaled) plus
  the additive mask, an online softmax (running max ``m``, sum ``l``,
  weighted values ``acc``, rescaled as the max grows). Keys that every row's
  mask sets to ``-inf`` (the static cache past the current position) are not
  loaded: the key and value loads are masked by the mask's column maximum, so
  a step reads the mask (2 bytes a key) and only the filled part of the cache.
  With ``S = 1`` it writes ``acc / l``; otherwise its partials ``(acc, m, l)``;
* ``coil_decode_attention_combine`` (``S > 1``): program ``(bh, row)`` rescales
  the ``S`` partials to their common max and writes ``sum(w acc) / sum(w l)``.

``S`` comes from the kernel strategy (``strategy/decode_attention.py``): splits
where ``batch x heads`` programs cannot fill the GPU and the keys are long
enough to pay for the combine's launch; ``splits=N`` forces it. A row whose
keys are all masked gives 0 (ATen's fused kernels do the same; eager's
composite gives NaN). Only CUDA buffers, unless ``all-devices=true`` (the CPU
tests, where the kernels run under Triton's interpreter).

Input: functions at the buffer level after ``memory-plan``. Output: the
extern replaced by ``buffer.alloc`` of its result (the memory plan's frees and
reuses of that result stay valid), the partials' allocations and frees, and
``host.launch``es of the new ``tt.func``s (identical ones are merged by
``convert-loop-to-tt``, which runs next).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import sympy
from torch.utils._sympy.functions import FloorDiv, PythonMod
from xdsl.context import Context
from xdsl.dialects import arith as xarith
from xdsl.dialects import builtin, func, scf
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import AnyFloat, ArrayAttr, StringAttr, f32, i64
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from coil.dialects import buffer as B
from coil.dialects import host, tt
from coil.dialects.aten_base import OperandRefAttr, OperatorOp
from coil.dialects.buffer import BufferType
from coil.dialects.symbolic import symbol
from coil.intmath import next_pow2
from coil.ir import source_line
from coil.lowering.loop_to_tt.builder import KernelBuilder
from coil.lowering.loop_to_tt.kernel_index import cdiv
from coil.lowering.loop_to_tt.reductions import reduce
from coil.passinfo import check_options
from coil.strategy import decode_attention as DA
from coil.strategy import hints
from coil.strategy.target import module_target
from coil.transforms.input_level import require_below_aten

MAX_ROWS = 16
"""The most query rows per (batch, head) taken: decode (one token; 2-16 packed
query heads of a group). Longer queries are prefill, ATen's tiled kernels'."""

MAX_WIDTH = 256
"""The widest head taken (the ``[rows, BLOCK_L, D]`` tile shrinks its keys for it)."""

NUM_WARPS = 4

# The overloads, and where their arguments sit: (mask argument or None,
# dropout, is_causal) by schema name.
OVERLOADS = {
    "aten::_scaled_dot_product_efficient_attention": "attn_bias",
    "aten::_scaled_dot_product_flash_attention": None,
    "aten::_scaled_dot_product_flash_attention_for_cpu": "attn_mask",
    "aten::_scaled_dot_product_cudnn_attention": "attn_bias",
}

PID_BH = symbol("pid_bh")
PID_S = symbol("pid_s")


@dataclass
class _Call:
    """A qualifying attention call: its buffers (``mask`` may be None) and scale."""

    extern: B.ExternOp
    q: SSAValue
    k: SSAValue
    v: SSAValue
    mask: SSAValue | None
    scale: float


def _arguments(op: OperatorOp) -> dict[str, object] | None:
    """The call's arguments by schema name (operands as their operand index)."""
    overload = op.resolve()
    if overload is None:
        return None
    names = [a.name for a in overload._schema.arguments]
    defaults = {
        a.name: a.default_value for a in overload._schema.arguments if a.has_default_value()
    }
    out: dict[str, object] = dict(defaults)

    def value(attr):
        if isinstance(attr, OperandRefAttr):
            return ("operand", attr.data)
        if isinstance(attr, builtin.FloatAttr):
            return attr.value.data
        if isinstance(attr, builtin.IntegerAttr):
            return attr.value.data
        if isinstance(attr, builtin.NoneAttr):
            return None
        return attr

    positional = [n for n in names if not _kwarg_only(overload, n)]
    for name, attr in zip(positional, op.args.data):
        out[name] = value(attr)
    for name, attr in op.kwargs.data.items():
        out[name if name in names else "?"] = value(attr)
    return out


def _kwarg_only(overload, name: str) -> bool:
    return any(a.name == name and a.kwarg_only for a in overload._schema.arguments)


def _static(e) -> int | None:
    e = sympy.sympify(e)
    return int(e) if e.is_Integer else None


def match(extern: B.ExternOp, all_devices: bool) -> _Call | None:
    """The attention call ``extern`` makes, if this pass takes it."""
    op = extern.callee
    if not isinstance(op, OperatorOp) or op.overload_name.data not in OVERLOADS:
        return None
    args = _arguments(op)
    if args is None:
        return None
    if args.get("dropout_p") not in (0, 0.0, None) or args.get("is_causal") not in (0, False, None):
        return None
    block_args = list(extern.body.block.args)

    def operand(name: str) -> SSAValue | None:
        ref = args.get(name)
        if not (isinstance(ref, tuple) and ref[0] == "operand"):
            return None
        inner = op.inputs[ref[1]]
        if inner not in block_args:
            return None
        return extern.args[block_args.index(inner)]

    q, k, v = operand("query"), operand("key"), operand("value")
    if q is None or k is None or v is None:
        return None
    mask_name = OVERLOADS[op.overload_name.data]
    mask = operand(mask_name) if mask_name else None
    if mask_name and args.get(mask_name) is not None and mask is None:
        return None
    roles = ("query", "key", "value", mask_name)
    refs = {args[n][1] for n in roles if n and isinstance(args.get(n), tuple)}
    if refs != set(range(len(op.inputs))) or "?" in args:
        return None  # an operand or argument this pass does not know the role of
    types = [t.type for t in (q, k, v, mask) if t is not None]
    if not all(isinstance(t, BufferType) for t in types):
        return None
    qt, kt, vt = types[:3]
    if not all_devices and not qt.device_attr.data.startswith("cuda"):
        return None
    if qt.rank != 4 or kt.rank != 4 or vt.rank != 4:
        return None
    if not all(isinstance(t.element_type, AnyFloat) for t in types):
        return None
    bq, hq, rows, d = qt.shape_attr.data
    bk, hk, keys, dk = kt.shape_attr.data
    bv, hv, keys_v, dv = vt.shape_attr.data
    if (bq, hq) != (bk, hk) or (bq, hq) != (bv, hv) or keys != keys_v or d != dk:
        return None  # grouped heads (enable_gqa) and broadcast batches stay ATen's
    if _static(rows) is None or _static(rows) > MAX_ROWS:
        return None
    if _static(d) is None or _static(dv) is None or max(_static(d), _static(dv)) > MAX_WIDTH:
        return None
    if mask is not None and not _broadcasts(mask.type, qt.shape_attr.data[:3] + (keys,)):
        return None
    # Every result but the output is unused (freed at most): the log-sum-exp,
    # philox state and debug values of the ATen kernels.
    for r in extern.res[1:]:
        if any(not isinstance(u.operation, B.DeallocOp) for u in r.uses):
            return None
    out = extern.res[0].type
    if not isinstance(out, BufferType) or tuple(out.shape_attr.data) != (bq, hq, rows, dv):
        return None
    scale = args.get("scale")
    if not isinstance(scale, int | float):
        scale = 1.0 / math.sqrt(_static(d))
    return _Call(extern, q, k, v, mask, float(scale))


def _broadcasts(t: BufferType, shape) -> bool:
    sizes = list(t.shape_attr.data)
    if len(sizes) > len(shape):
        return False
    for have, want in zip(reversed(sizes), reversed(list(shape))):
        if have != 1 and sympy.sympify(have - want) != 0:
            return False
    return True


def _mask_strides(t: BufferType, rank: int = 4) -> list[sympy.Expr]:
    """The mask's strides right-aligned to ``rank`` dims, 0 where it broadcasts."""
    sizes, strides = list(t.shape_attr.data), list(t.strides_attr.data)
    pad = rank - len(sizes)
    out = [sympy.Integer(0)] * pad
    for size, stride in zip(sizes, strides):
        out.append(sympy.Integer(0) if size == 1 else sympy.sympify(stride))
    return out


class _Kernel:
    """A ``tt.func`` under construction: pointer arguments, then size scalars."""

    def __init__(self, name: str, buffers: list[SSAValue], scalars: list[sympy.Symbol]):
        types = [tt.PointerType(b.type.element_type) for b in buffers] + [i64] * len(scalars)
        self.func = tt.FuncOp(name, types, [], visibility="public")
        block = self.func.body.block
        self.ptr = dict(zip(buffers, block.args))
        self.b = KernelBuilder(block, i64)
        for sym, arg in zip(scalars, block.args[len(buffers) :]):
            arg.name_hint = str(sym)
            self.b.bind(sym, arg)

    def arange(self, n: int, axis: int, rank: int) -> SSAValue:
        """``arange(n)`` (i64) along ``axis`` of a rank-``rank`` tile."""
        b = self.b
        v = b.cast_int(b.emit(tt.MakeRangeOp(0, n)), i64)
        for k in range(rank):
            if k != axis:
                v = b.emit(tt.ExpandDimsOp(v, k))
        return v

    def idx(self, expr) -> SSAValue:
        return self.b.emit_index(sympy.sympify(expr))

    def offset(self, base, *terms: tuple[SSAValue, object]) -> SSAValue:
        """``base + sum(tile * stride)`` (strides as expressions; 0 terms dropped)."""
        b = self.b
        acc = self.idx(base)
        for tile, stride in terms:
            stride = sympy.sympify(stride)
            if stride == 0:
                continue
            term = tile if stride == 1 else b.binary(xarith.MuliOp, tile, self.idx(stride))
            acc = b.binary(xarith.AddiOp, acc, term)
        return acc

    def load(self, buf: SSAValue, offsets: SSAValue, mask, other) -> SSAValue:
        b = self.b
        if mask is not None:  # a mask wider than the offsets (a broadcast row) widens them
            offsets, mask = b.common(offsets, mask)
        shape = tt.shape_of(offsets.type)
        ptr = b.broadcast_to(self.ptr[buf], shape)
        ptrs = b.emit(tt.AddPtrOp(ptr, offsets))
        if mask is None:
            return b.emit(tt.LoadOp(ptrs))
        elem = buf.type.element_type
        return b.emit(tt.LoadOp(ptrs, mask, b.const(other, elem, shape)))

    def store(self, buf: SSAValue, offsets: SSAValue, value: SSAValue, mask) -> None:
        b = self.b
        shape = tt.shape_of(offsets.type)
        value = b.broadcast_to(b.to_float(value, buf.type.element_type), shape)
        ptrs = b.emit(tt.AddPtrOp(b.broadcast_to(self.ptr[buf], shape), offsets))
        b.insert(tt.StoreOp(ptrs, value, None if mask is None else b.broadcast_to(mask, shape)))

    def lt(self, tile: SSAValue, bound, padded: int) -> SSAValue | None:
        """``tile < bound``, or None where the tile's padding is exact."""
        bound = sympy.sympify(bound)
        if bound.is_Integer and int(bound) == padded:
            return None
        return self.b.cmpi(tile, self.idx(bound), "slt")

    def expand(self, v: SSAValue, axis: int) -> SSAValue:
        return self.b.emit(tt.ExpandDimsOp(v, axis))

    def exp(self, v: SSAValue) -> SSAValue:
        return self.b.emit(xmath.ExpOp(v))

    def finish(self) -> tt.FuncOp:
        self.b.insert(tt.ReturnOp())
        return self.func


def _symbols(exprs) -> list[sympy.Symbol]:
    syms: set[sympy.Symbol] = set()
    for e in exprs:
        syms |= sympy.sympify(e).free_symbols
    return sorted(syms, key=str)


def _and(b: KernelBuilder, *masks):
    acc = None
    for m in masks:
        acc = b.and_(acc, m)
    return acc


@dataclass
class _Shape:
    batch: sympy.Expr
    heads: sympy.Expr
    rows: int
    keys: sympy.Expr
    width: int
    width_v: int
    rows_p: int
    width_p: int
    width_vp: int
    block_l: int


def _shape(call: _Call) -> _Shape:
    bq, hq, rows, d = call.q.type.shape_attr.data
    keys = call.k.type.shape_attr.data[2]
    dv = call.v.type.shape_attr.data[3]
    rows, d, dv = int(rows), int(d), int(dv)
    rows_p, dp, dvp = next_pow2(rows), next_pow2(d), next_pow2(dv)
    return _Shape(
        sympy.sympify(bq),
        sympy.sympify(hq),
        rows,
        sympy.sympify(keys),
        d,
        dv,
        rows_p,
        dp,
        dvp,
        DA.block_keys(rows_p, max(dp, dvp)),
    )


def build_attention(
    call: _Call, sh: _Shape, splits: int, outs: list[SSAValue], name: str
) -> tuple[tt.FuncOp, list[SSAValue], list[sympy.Symbol]]:
    """The first kernel: ``outs`` is ``[out]`` (one split) or ``[acc, m, l]``."""
    q, k, v, mask = call.q, call.k, call.v, call.mask
    ins = [q, k, v] + ([mask] if mask is not None else [])
    buffers = list(dict.fromkeys(ins + outs))
    exprs = [sh.batch, sh.heads, sh.keys]
    for t in buffers:
        exprs += list(t.type.strides_attr.data) + list(t.type.shape_attr.data)
    scalars = _symbols(exprs)
    kn = _Kernel(name, buffers, scalars)
    b = kn.b
    rp, bl, dp, dvp = sh.rows_p, sh.block_l, sh.width_p, sh.width_vp
    pid = b.cast_int(b.emit(tt.GetProgramIdOp(0)), i64)
    pid.name_hint = "pid_bh"
    b.bind(PID_BH, pid)
    spid = b.cast_int(b.emit(tt.GetProgramIdOp(1)), i64)
    spid.name_hint = "pid_s"
    b.bind(PID_S, spid)
    bi, hi = FloorDiv(PID_BH, sh.heads), PythonMod(PID_BH, sh.heads)
    sq, sk, sv = (list(t.type.strides_attr.data) for t in (q, k, v))

    rows3 = kn.arange(rp, 0, 3)
    keys3 = kn.arange(bl, 1, 3)
    d3 = kn.arange(dp, 2, 3)
    dv3 = kn.arange(dvp, 2, 3)
    rmask = kn.lt(rows3, sh.rows, rp)
    dmask = kn.lt(d3, sh.width, dp)
    dvmask = kn.lt(dv3, sh.width_v, dvp)

    # the queries, once, scaled (f32)
    qoff = kn.offset(bi * sq[0] + hi * sq[1], (rows3, sq[2]), (d3, sq[3]))
    qt = b.to_float(kn.load(q, qoff, _and(b, rmask, dmask), 0.0), f32)
    qt = b.binary(xarith.MulfOp, qt, b.const(call.scale, f32))

    # this program's keys: [start, end)
    per = cdiv(cdiv(sh.keys, splits), bl) * bl
    start = kn.idx(PID_S * per)
    end = kn.idx(sympy.Min(sh.keys, PID_S * per + per) if splits > 1 else sh.keys)

    m0 = b.const(-math.inf, f32, (rp, 1, 1))
    l0 = b.const(0.0, f32, (rp, 1, 1))
    a0 = b.const(0.0, f32, (rp, 1, dvp))
    body = Block(arg_types=[i64, m0.type, l0.type, a0.type])
    k0, m_i, l_i, acc = body.args
    k0.name_hint, m_i.name_hint, l_i.name_hint, acc.name_hint = "k0", "m_i", "l_i", "acc"
    with b.at(body):
        lanes = b.binary(xarith.AddiOp, k0, keys3)  # [1, BL, 1]
        inside = b.cmpi(lanes, end, "slt")
        # the additive mask [RP, BL, 1]; -inf past the run and on padded rows
        if mask is not None:
            sm = _mask_strides(mask.type)
            moff = kn.offset(bi * sm[0] + hi * sm[1], (rows3, sm[2]), (lanes, sm[3]))
            bias = b.to_float(kn.load(mask, moff, _and(b, inside, rmask), -math.inf), f32)
            # keys every row masks off are never loaded (the cache past the position)
            col = kn.expand(reduce(b, "max", [bias], axis=0)[0], 0)  # [1, BL, 1]
            wanted = b.cmpf(col, b.const(-math.inf, f32), "ogt")
            keymask = wanted
        else:
            bias = None
            keymask = inside
        koff = kn.offset(bi * sk[0] + hi * sk[1], (lanes, sk[2]), (d3, sk[3]))
        kt = b.to_float(kn.load(k, koff, _and(b, keymask, dmask), 0.0), f32)  # [1, BL, DP]
        prod = b.binary(xarith.MulfOp, qt, kt)  # [RP, BL, DP]
        s = kn.expand(reduce(b, "sum", [prod], axis=2)[0], 2)  # [RP, BL, 1]
        if bias is not None:
            s = b.binary(xarith.AddfOp, s, bias)
        else:
            s = b.select(_and(b, inside, rmask) or inside, s, b.const(-math.inf, f32))
        m_new = b.binary(
            xarith.MaximumfOp, m_i, kn.expand(reduce(b, "max", [s], axis=1)[0], 1)
        )  # [RP, 1, 1]
        # a row with no key yet keeps max -inf: exponents against 0 give 0, not NaN
        empty = b.cmpf(m_new, b.const(-math.inf, f32), "oeq")
        m_safe = b.select(empty, b.const(0.0, f32), m_new)
        alpha = kn.exp(b.binary(xarith.SubfOp, m_i, m_safe))
        p = kn.exp(b.binary(xarith.SubfOp, s, m_safe))  # [RP, BL, 1]
        l_new = b.binary(
            xarith.AddfOp,
            b.binary(xarith.MulfOp, l_i, alpha),
            kn.expand(reduce(b, "sum", [p], axis=1)[0], 1),
        )
        voff = kn.offset(bi * sv[0] + hi * sv[1], (lanes, sv[2]), (dv3, sv[3]))
        vt = b.to_float(kn.load(v, voff, _and(b, keymask, dvmask), 0.0), f32)  # [1, BL, DVP]
        pv = kn.expand(reduce(b, "sum", [b.binary(xarith.MulfOp, p, vt)], axis=1)[0], 1)
        acc_new = b.binary(xarith.AddfOp, b.binary(xarith.MulfOp, acc, alpha), pv)
        b.insert(scf.YieldOp(m_new, l_new, acc_new))
    loop = scf.ForOp(start, end, b.const(bl, i64), [m0, l0, a0], Region(body))
    b.insert(loop)
    m_f, l_f, acc_f = loop.res

    if splits == 1:
        (out,) = outs
        so = list(out.type.strides_attr.data)
        ooff = kn.offset(bi * so[0] + hi * so[1], (rows3, so[2]), (dv3, so[3]))
        kn.store(out, ooff, _normalized(b, acc_f, l_f), _and(b, rmask, dvmask))
    else:
        acc_buf, m_buf, l_buf = outs
        row0 = (PID_BH * splits + PID_S) * sh.rows
        aoff = kn.offset(row0 * sh.width_v, (rows3, sh.width_v), (dv3, 1))
        kn.store(acc_buf, aoff, acc_f, _and(b, rmask, dvmask))
        soff = kn.offset(row0, (rows3, 1))
        kn.store(m_buf, soff, m_f, rmask)
        kn.store(l_buf, soff, l_f, rmask)
    return kn.finish(), buffers, scalars


def _normalized(b: KernelBuilder, acc: SSAValue, total: SSAValue) -> SSAValue:
    """``acc / total``, 0 where no key was left (``total`` 0)."""
    zero = b.const(0.0, f32)
    has = b.cmpf(total, zero, "ogt")
    safe = b.select(has, total, b.const(1.0, f32))
    return b.select(has, b.binary(xarith.DivfOp, acc, safe), zero)


def build_combine(
    call: _Call, sh: _Shape, splits: int, parts: list[SSAValue], out: SSAValue, name: str
) -> tuple[tt.FuncOp, list[SSAValue], list[sympy.Symbol]]:
    """The second kernel: program ``(bh, row)`` combines its ``splits`` partials."""
    buffers = list(parts) + [out]
    exprs = [sh.heads] + list(out.type.strides_attr.data)
    scalars = _symbols(exprs)
    kn = _Kernel(name, buffers, scalars)
    b = kn.b
    acc_buf, m_buf, l_buf = parts
    sp, dvp = next_pow2(splits), sh.width_vp
    pid = b.cast_int(b.emit(tt.GetProgramIdOp(0)), i64)
    pid.name_hint = "pid_bh"
    b.bind(PID_BH, pid)
    row = b.cast_int(b.emit(tt.GetProgramIdOp(1)), i64)
    row.name_hint = "row"
    b.bind(PID_S, row)
    s2 = kn.arange(sp, 0, 2)  # [SP, 1]
    dv2 = kn.arange(dvp, 1, 2)  # [1, DVP]
    smask = kn.lt(s2, splits, sp)
    dvmask = kn.lt(dv2, sh.width_v, dvp)
    # partial (bh, s, row) sits at (bh * S + s) * rows + row
    first = PID_BH * splits * sh.rows + PID_S
    poff = kn.offset(first, (s2, sh.rows))
    m = kn.load(m_buf, poff, smask, -math.inf)  # [SP, 1]
    lp = kn.load(l_buf, poff, smask, 0.0)
    top = kn.expand(reduce(b, "max", [m], axis=0)[0], 0)  # [1, 1]
    empty = b.cmpf(top, b.const(-math.inf, f32), "oeq")
    top = b.select(empty, b.const(0.0, f32), top)
    w = kn.exp(b.binary(xarith.SubfOp, m, top))  # [SP, 1]
    total = kn.expand(reduce(b, "sum", [b.binary(xarith.MulfOp, w, lp)], axis=0)[0], 0)
    aoff = kn.offset(first * sh.width_v, (s2, sh.rows * sh.width_v), (dv2, 1))
    acc = kn.load(acc_buf, aoff, _and(b, smask, dvmask), 0.0)  # [SP, DVP]
    num = kn.expand(reduce(b, "sum", [b.binary(xarith.MulfOp, w, acc)], axis=0)[0], 0)
    so = list(out.type.strides_attr.data)
    bi, hi = FloorDiv(PID_BH, sh.heads), PythonMod(PID_BH, sh.heads)
    ooff = kn.offset(bi * so[0] + hi * so[1] + PID_S * so[2], (dv2, so[3]))
    kn.store(out, ooff, _normalized(b, num, total), dvmask)
    return kn.finish(), buffers, scalars


def _annotate(kernel: tt.FuncOp, call: _Call, device: str, plan: str) -> None:
    kernel.attributes["coil.kind"] = StringAttr("attention")
    kernel.attributes["coil.device"] = StringAttr(device)
    line = source_line(call.extern.location)
    kernel.attributes["coil.source_lines"] = ArrayAttr([StringAttr(line)] if line else [])
    kernel.attributes["coil.aten_ops"] = ArrayAttr(
        [StringAttr(call.extern.callee.overload_name.data)]
    )
    kernel.attributes["coil.plan"] = StringAttr(plan)


@dataclass(frozen=True)
class ConvertDecodeAttentionToTtPass(ModulePass):
    """Replace one-query attention ATen calls by coil's flash-decoding kernels.

    Options: ``splits`` (0: the strategy's choice; N: N runs of keys per
    (batch, head), a power of two), ``all-devices`` (also CPU buffers: the
    kernels run under Triton's interpreter).
    """

    name = "convert-decode-attention-to-tt"

    splits: int = 0
    """Runs of keys per (batch, head): 0 lets the strategy choose."""
    all_devices: bool = False
    """Also replace calls on CPU buffers (tests; the interpreter runs the kernels)."""

    def __post_init__(self) -> None:
        check_options(self)

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        require_below_aten(op, "convert-decode-attention-to-tt")
        target = module_target(op)
        counter = 0
        for f in list(op.body.block.ops):
            if not isinstance(f, func.FuncOp) or not f.body.blocks:
                continue
            for extern in [o for o in f.body.block.ops if isinstance(o, B.ExternOp)]:
                call = match(extern, self.all_devices)
                if call is None:
                    continue
                self._replace(call, f, target, counter)
                counter += 1

    def _replace(self, call: _Call, f: func.FuncOp, target, counter: int) -> None:
        sh = _shape(call)
        heads = hints.value(sh.batch * sh.heads, 1)
        keys = hints.value(sh.keys, 4096)
        key_bytes = sh.width * tt_bytes(call.k.type.element_type) + sh.width_v * tt_bytes(
            call.v.type.element_type
        )
        plan = DA.plan_splits(heads, sh.rows, sh.width_v, keys, key_bytes, target, sh.block_l)
        splits = self.splits or plan.splits
        note = plan.summary() + (f"; forced {splits}" if self.splits else "")
        note += f"; [{sh.rows_p}, {sh.block_l}, {max(sh.width_p, sh.width_vp)}] tiles"
        extern = call.extern
        out_type = extern.res[0].type
        device = out_type.device_attr.data
        new_ops: list[Operation] = []
        out = B.AllocOp(out_type)
        out.result.name_hint = "attn_out"
        new_ops.append(out)
        bh = sh.batch * sh.heads
        grid = [bh, sympy.Integer(splits), sympy.Integer(1)]
        tag = f"{counter}"
        launches: list[tuple[tt.FuncOp, host.LaunchOp]] = []
        frees: list[Operation] = []
        if splits == 1:
            kernel, args, scalars = build_attention(
                call, sh, 1, [out.result], f"coil_decode_attention_{tag}"
            )
            launches.append((kernel, _launch(kernel, grid, args, scalars)))
        else:
            parts = [
                B.AllocOp(BufferType([bh, splits, sh.rows, sh.width_v], f32, None, 0, device)),
                B.AllocOp(BufferType([bh, splits, sh.rows], f32, None, 0, device)),
                B.AllocOp(BufferType([bh, splits, sh.rows], f32, None, 0, device)),
            ]
            for p, hint in zip(parts, ("attn_acc", "attn_max", "attn_sum")):
                p.result.name_hint = hint
            new_ops += parts
            bufs = [p.result for p in parts]
            kernel, args, scalars = build_attention(
                call, sh, splits, bufs, f"coil_decode_attention_{tag}"
            )
            launches.append((kernel, _launch(kernel, grid, args, scalars)))
            comb, cargs, cscalars = build_combine(
                call, sh, splits, bufs, out.result, f"coil_decode_attention_combine_{tag}"
            )
            cgrid = [bh, sympy.Integer(sh.rows), sympy.Integer(1)]
            launches.append((comb, _launch(comb, cgrid, cargs, cscalars)))
            frees = [B.DeallocOp(p) for p in bufs]
        for kernel, launch in launches:
            _annotate(kernel, call, device, note)
            Rewriter.insert_op(kernel, InsertPoint.before(f))
            launch.location = extern.location
            new_ops.append(launch)
        new_ops += frees
        for o in new_ops:
            o.location = extern.location
        Rewriter.insert_op(new_ops, InsertPoint.before(extern))
        for r in extern.res[1:]:
            for use in list(r.uses):
                use.operation.detach()
                use.operation.erase()
        extern.res[0].replace_all_uses_with(out.result)
        extern.detach()
        extern.erase()


def _launch(kernel: tt.FuncOp, grid, args, scalars) -> host.LaunchOp:
    config = {
        "num_warps": builtin.IntegerAttr(NUM_WARPS, 64),
        "num_stages": builtin.IntegerAttr(1, 64),
    }
    return host.LaunchOp(kernel.sym_name.data, grid, args, scalars, config)


def tt_bytes(element) -> int:
    return max(1, element.bitwidth // 8) if isinstance(element, AnyFloat) else 8


__all__ = ["ConvertDecodeAttentionToTtPass", "MAX_ROWS", "match"]
