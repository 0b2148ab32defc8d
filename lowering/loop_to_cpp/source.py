"""C++ source for ``cpu.func`` kernels: what ``-t cpp-kernels`` prints, and what
``convert-loop-to-cpp`` asks (by printing) whether a nest can become one.

Each ``cpu.func`` (made by ``convert-loop-to-cpp``) becomes ``extern "C" int
<name>(T* buf0, ..., int64_t s0, ...)``: its buffers as pointers to their first
element, its size symbols as integers; it returns nonzero when an indirect index
was out of range (the wrapper raises ``IndexError``, as eager does).

How a nest becomes loops (Inductor's ``cpp.py`` does the same with its
``CppKernel``/``CppVecKernel``, through explicit vector types):

* a pointwise nest (or a group with no reduction ranges) walks its output in
  memory order: the loops are ordered by the first output's strides, the outer
  ones flattened into one ``#pragma omp parallel for`` and the innermost (the
  contiguous one) ``#pragma omp simd``;
* a reduction or ``loop.fused`` group runs each output point (its ``ranges``,
  flattened, over OpenMP threads) through its members in order: a reduction
  loops over the reduction ranges into :data:`PARTIAL_BYTES` of partial
  accumulators (the innermost loop in blocks under ``omp simd``,
  ``KernelPrinter._blocked``; a float sum or product into vector
  accumulators whose lanes are added as a tree; a row shorter than two
  blocks into one accumulator with an ``omp simd reduction`` clause), a
  pointwise member over the ranges is a scalar, one over ``ranges ++
  reduction_ranges`` loops over the row and stores what the group yields. A
  member's value read by a later member at the same point is the scalar; a
  row member read by a later one is recomputed there (its body inlined),
  never stored, except its costly values and its bf16 reads of the row,
  which the first pass keeps in a per-row array (``define``);
* a pointwise nest's costly values that depend on its innermost index alone
  are computed once per index before its outer loop (``_track_inner``); a
  row member's bf16 reads at the row index alone (a LayerNorm's gamma and
  beta) are widened to f32 once per call, into an array before the group's
  outer loop (``_widen``), not once per row;
* bf16 and f16 are stored as such and computed in f32, as on the GPU: a
  ``truncf`` to them rounds (round-to-nearest-even), every other op sees floats;
* an OpenMP region opens only where the nest has ``PARALLEL_MIN_POINTS`` points
  or more (a fork/join costs microseconds: the small kernels of a batch-1
  graph run on the calling thread); a nest of static size gets the pragma or
  not (no ``if`` clause: a false one still calls into libgomp).

Anything this printer cannot write (an op, a kind, a dtype, a member read at
another point) raises :class:`CppUnsupported` naming it; ``convert-loop-to-cpp``
leaves such a nest to ``convert-loop-to-tt``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sympy
from xdsl.dialects import arith, builtin
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.ir import Attribute, Operation, SSAValue

from coil.dialects import cpu
from coil.dialects import loop as L
from coil.dialects.buffer import BufferType
from coil.dialects.symbolic import index_symbols, indirect_symbol

PARALLEL_MIN_POINTS = 16384
"""Points of a nest (ranges times reduction ranges) below which it runs on one
thread: an OpenMP fork/join is ~2-5 us on this class of machine, about the
time 16K simple points take on one core."""


ROW_CACHE_MAX = 8192
"""The longest row (elements) whose costly values a thread keeps in a stack
array (32 KB in f32, about an L1 cache) instead of recomputing them in a later
pass over the row."""

PARTIAL_BYTES = 128
"""Bytes of independent partial accumulators a row reduction keeps (32 floats,
16 doubles: four AVX2 vectors, one per stream of :data:`STREAMS`). With one
vector accumulator (``omp simd reduction``) every add waits for the previous
one (4 cycles of latency per 8 floats); four in flight keep the adder busy, as
ATen's cascade sums and Inductor's multi-accumulator reductions do. A 256x1024
f32 LayerNorm kernel (AVX2, g++ 12, one thread): 1.18x faster than one
accumulator; the bf16 softmax's max and sum passes: 1.11x. A row is reduced
in blocks of this many bytes (the streams' share of it: one vector each)."""

STREAMS = 4
"""Contiguous streams a blocked row reduction splits its row into, each with
its own accumulator (a scalar under ``omp simd reduction``: one vector
register), so the four vector adds of a step are independent."""

VECTOR_BYTES = 32
"""A stream's accumulator in a float sum or product (``coil_vf``/``coil_vd``,
PRELUDE): the lanes of one step are computed under ``omp simd`` into a vector
of this many bytes and added to it, and its lanes are added as a tree once per
row. Under ``omp simd reduction`` GCC 12 added an accumulator's lanes one after
another, a chain of 8 dependent adds (and 8 extracts) per stream and per row
pass, after every row: the 256x1024 f32 LayerNorm kernel alone (two such
passes per row; ctypes, a fresh output per call, one thread, process CPU time,
15 rounds of 200 calls, Xeon with AVX-512, 256-bit vectors, load 4.8) 98.3 ->
89.1 us, ATen 120.0; by hand, at load 7: 116.1 -> 109.3, hand-written AVX2
intrinsics 109.9 (RESULTS.md, twentieth session, branch cpuln).

A ``cpu.func`` with ``coil.vector_bytes = 64`` (``convert-loop-to-cpp``'s
``vector-bytes``: the backend sets it where the kernels compile for 512-bit
vectors) keeps 64-byte accumulators (``coil_vf16``/``coil_vd8``) and steps 16
floats at a time: the step's exp calls are then glibc's 16-wide AVX-512 ones
instead of two 8-wide AVX2 calls' worth. The 256x1024 f32 softmax kernel
alone (ctypes, one thread, interleaved best of 10 x 3 x 200 calls, AVX-512
Xeon): 300 -> 200 us, ATen 246; the LayerNorm kernel 95 -> 92 us (twenty-sixth
session)."""

WIDE_TYPES = {
    32: {"float": "coil_vf", "double": "coil_vd"},
    64: {"float": "coil_vf16", "double": "coil_vd8"},
}
"""The accumulator vector type of a float sum or product, by vector bytes."""
SPLAT = {"coil_vf": "splat", "coil_vd": "splat", "coil_vf16": "splat16", "coil_vd8": "splat8"}

SUM_CHUNK = 4096
"""Elements of a row after which a float sum's partials are added into a
double total (a cascade: each partial sums at most ``SUM_CHUNK / lanes``
terms in float)."""

_SIZEOF = {"float": 4, "double": 8, "int64_t": 8, "int32_t": 4, "int16_t": 2, "int8_t": 1}

_COSTLY = ("math.", "arith.divf")
"""Ops whose result is worth keeping for a later pass rather than recomputing."""

_NARROW_ROW_READ = re.compile(r"bf16_load\(buf\d+\[[^\]]*\br\d+\b[^\]]*\]\)")
"""A bf16 read that walks the row (its index names a row loop ``r<k>``): kept
widened in the row cache like a costly value when a later pass over the row
reads it again (a LayerNorm's x: the mean, the variance and the output pass),
so the later passes load floats instead of widening bf16 again (two vector ops
per 8 or 16 elements each). The 256x1024 bf16 LayerNorm kernel alone (ctypes,
a fresh output per call, one thread, process CPU time, median of 15 rounds of
200 calls; Xeon with AVX-512, g++ 12, 256-bit vectors, load 4.6): 118.5 ->
99.1 us, ATen's layer_norm 155.0 (RESULTS.md, twentieth session, branch
cpuln). Not in a group that keeps a costly value (``emit_kernel``)."""

_VAR = re.compile(r"\b(?:v|row)\d+\b")
_ARRAY_READ = re.compile(r"\b(buf\d+|row\d+|wide\d+_\d+|pre\d+)\[")
_BUF_READ = re.compile(r"\b(buf\d+)\[")


class CppUnsupported(Exception):
    """The C++ printer cannot write this nest; the message says what."""


@dataclass
class _Partial:
    """One result of a blocked row reduction (``KernelPrinter._blocked``)."""

    name: str  # the result's C++ name (declared by _blocked)
    ctype: str  # the partials' type
    init: str  # a partial's initial value
    update: str  # the statement adding a value: {p} the partial, {v} the value
    combine: str = ""  # the statement folding partial {b} into {a}
    clause: str = "+"  # its OpenMP reduction operator (+, *, max, min, |)
    into_double: bool = False  # a float sum: partials added into a double total
    result_type: str = ""  # the result's type when not ctype

    @property
    def slot(self) -> str:
        return f"{self.name}_p[j]"


PRELUDE = r"""// Generated by coil (-t cpp-kernels): CPU kernels, one per loop nest.
#include <cstdint>
#include <cstring>
#include <cmath>
#include <limits>
#include <algorithm>

// glibc's vector math (libmvec): exp, erf, tanh ... of floats in `omp simd`
// loops call the SIMD variants (max 4 ulp; the scalar ones: 1-2 ulp).
#if defined(__GLIBC__) && defined(__x86_64__) && defined(_OPENMP)
extern "C" {
#if __GLIBC_PREREQ(2, 22)
#pragma omp declare simd notinbranch
float expf(float);
#pragma omp declare simd notinbranch
float logf(float);
#pragma omp declare simd notinbranch
float sinf(float);
#pragma omp declare simd notinbranch
float cosf(float);
#pragma omp declare simd notinbranch
float powf(float, float);
#endif
#if __GLIBC_PREREQ(2, 35)
#pragma omp declare simd notinbranch
float erff(float);
#pragma omp declare simd notinbranch
float tanhf(float);
#pragma omp declare simd notinbranch
float expm1f(float);
#pragma omp declare simd notinbranch
float log1pf(float);
#pragma omp declare simd notinbranch
float exp2f(float);
#pragma omp declare simd notinbranch
float log2f(float);
#endif
}
#endif

// CPUs that run a 256-bit vector op as two 128-bit halves (GCC tunes them for
// 128-bit vectors: AMD Zen 1, the Bulldozer family): kernels that narrow
// floats to bf16 and call no vector math run 128-bit there (HALF_WIDTH_OPEN;
// the flags ask for 256-bit vectors elsewhere, 512-bit where ATen runs AVX-512).
#if defined(__GNUC__) && !defined(__clang__) && (defined(__tune_znver1__) || \
    defined(__tune_bdver1__) || defined(__tune_bdver2__) || defined(__tune_bdver3__) || \
    defined(__tune_bdver4__))
#define COIL_HALF_WIDTH_BF16 1
#endif

namespace {
inline float bf16_load(uint16_t v) {
  uint32_t u = uint32_t(v) << 16; float f; std::memcpy(&f, &u, 4); return f;
}
inline uint16_t bf16_store(float f) {
  uint32_t u; std::memcpy(&u, &f, 4);
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
  // NaN: c10's quiet NaN. A compare and a blend in a vector loop (ATen's
  // cvt_fp32_to_bf16); the integer range test before cost a bf16 LayerNorm
  // kernel 10 % (256x1024, AVX2).
  return f != f ? uint16_t(0x7fc0) : uint16_t(u >> 16);
}
inline float bf16_round(float f) { return bf16_load(bf16_store(f)); }
inline float f16_round(float f) { return float(_Float16(f)); }
template <typename T> inline T max_prop(T a, T b) {
  return a != a ? a : (b != b ? b : (a > b ? a : b));
}
template <typename T> inline T min_prop(T a, T b) {
  return a != a ? a : (b != b ? b : (a < b ? a : b));
}
template <typename T> inline T idiv(T a, T b) { return b == 0 ? T(0) : T(a / b); }
template <typename T> inline T irem(T a, T b) { return b == 0 ? T(0) : T(a % b); }
template <typename T> inline T ifloordiv(T a, T b) {
  if (b == 0) return T(0);
  T q = a / b; return (q * b != a && ((a < 0) != (b < 0))) ? T(q - 1) : q;
}
template <typename T> inline T ipow(T b, T e) {
  T r = 1;
  for (; e > 0; e >>= 1, b *= b) if (e & 1) r *= b;
  return r;
}
// erf of a float as ATen's CPU kernels compute it (Vectorized<float>::erf:
// Abramowitz-Stegun 7.1.26, |error| <= 1.5e-7, one exp), so torch.erf and the
// exact GELU give eager's values; in an `omp simd` loop it is FMAs, a division
// and libmvec's expf. libmvec's erff ran a 64x2048 GELU 2x slower than eager
// (AVX-512 Xeon, one thread, benchmarks/RESULTS.md, twenty-first session).
inline float coil_erf(float x) {
  const float t = 1.0f / std::fma(0.3275911f, std::fabs(x), 1.0f);
  const float r = std::fma(std::fma(std::fma(std::fma(1.061405429f, t, -1.453152027f), t,
                                             1.421413741f), t, -0.284496736f), t, 0.254829592f);
  return std::copysign(std::fma(-std::exp(-(x * x)) * t, r, 1.0f), x);
}
inline double coil_erf(double x) { return std::erf(x); }
// Triton's tl.rand / tl.randn (triton/language/random.py: Philox4x32 with 10
// rounds over the counter (offset, 0, 0, 0) and the key (seed low, seed high)),
// so a CPU kernel draws what the GPU kernel draws for offsets below 2**32 (the
// offset's high word goes in the second counter word beyond that).
inline void coil_philox(int64_t seed, int64_t offset, uint32_t c[4]) {
  uint32_t c0 = uint32_t(uint64_t(offset)), c1 = uint32_t(uint64_t(offset) >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = uint32_t(uint64_t(seed)), k1 = uint32_t(uint64_t(seed) >> 32);
  for (int r = 0; r < 10; ++r) {
    const uint32_t a = c0, b = c2;
    c0 = uint32_t((uint64_t(0xCD9E8D57u) * b) >> 32) ^ c1 ^ k0;
    c2 = uint32_t((uint64_t(0xD2511F53u) * a) >> 32) ^ c3 ^ k1;
    c1 = 0xCD9E8D57u * b;
    c3 = 0xD2511F53u * a;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  c[0] = c0; c[1] = c1; c[2] = c2; c[3] = c3;
}
inline float coil_uniform(uint32_t u) {
  int32_t x; std::memcpy(&x, &u, 4);
  x = x < 0 ? -x - 1 : x;
  return float(x) * 4.6566127342e-10f;
}
inline float coil_rand(int64_t seed, int64_t offset) {
  uint32_t c[4]; coil_philox(seed, offset, c); return coil_uniform(c[0]);
}
inline float coil_randn(int64_t seed, int64_t offset) {
  uint32_t c[4]; coil_philox(seed, offset, c);
  const float u1 = std::max(1.0e-7f, coil_uniform(c[0])), u2 = coil_uniform(c[1]);
  return std::sqrt(-2.0f * std::log(u1)) * std::cos(6.283185307179586f * u2);
}
// log(exp(x) + exp(y)) as ATen's CPU logcumsumexp combines (_log_add_exp_helper):
// NaN propagates, and two infinities of one sign stay as they are.
template <typename T> inline T coil_log_add_exp(T x, T y) {
  const T lo = y != y ? y : std::min(x, y);
  const T hi = y != y ? y : std::max(x, y);
  return (lo != hi || std::isfinite(lo)) ? T(std::log1p(std::exp(lo - hi)) + hi) : x;
}
inline int64_t imax(int64_t a, int64_t b) { return a > b ? a : b; }
inline int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }
// A float sum or product over a row: each stream's accumulator is one 32-byte
// vector (KernelPrinter._blocked); its lanes are folded as a tree at the end.
typedef float coil_vf __attribute__((vector_size(32)));
typedef double coil_vd __attribute__((vector_size(32)));
inline float lanes_sum(coil_vf v) {
  return ((v[0] + v[4]) + (v[2] + v[6])) + ((v[1] + v[5]) + (v[3] + v[7]));
}
inline double lanes_sum(coil_vd v) { return (v[0] + v[2]) + (v[1] + v[3]); }
inline float lanes_prod(coil_vf v) {
  return ((v[0] * v[4]) * (v[2] * v[6])) * ((v[1] * v[5]) * (v[3] * v[7]));
}
inline double lanes_prod(coil_vd v) { return (v[0] * v[2]) * (v[1] * v[3]); }
inline coil_vf splat(float x) { return coil_vf{x, x, x, x, x, x, x, x}; }
inline coil_vd splat(double x) { return coil_vd{x, x, x, x}; }
// 64-byte accumulators (a cpu.func's coil.vector_bytes = 64: 512-bit vectors):
// the two halves added, then folded as above.
typedef float coil_vf16 __attribute__((vector_size(64)));
typedef double coil_vd8 __attribute__((vector_size(64)));
inline float lanes_sum(coil_vf16 v) {
  return lanes_sum(coil_vf{v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]} +
                   coil_vf{v[8], v[9], v[10], v[11], v[12], v[13], v[14], v[15]});
}
inline double lanes_sum(coil_vd8 v) {
  return lanes_sum(coil_vd{v[0], v[1], v[2], v[3]} + coil_vd{v[4], v[5], v[6], v[7]});
}
inline float lanes_prod(coil_vf16 v) {
  return lanes_prod(coil_vf{v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]} *
                    coil_vf{v[8], v[9], v[10], v[11], v[12], v[13], v[14], v[15]});
}
inline double lanes_prod(coil_vd8 v) {
  return lanes_prod(coil_vd{v[0], v[1], v[2], v[3]} * coil_vd{v[4], v[5], v[6], v[7]});
}
inline coil_vf16 splat16(float x) { return coil_vf16{} + x; }
inline coil_vd8 splat8(double x) { return coil_vd8{} + x; }
}  // namespace
"""


# --------------------------------------------------------------------------
# Types
# --------------------------------------------------------------------------

_STORAGE = {
    "f32": "float",
    "f64": "double",
    "bf16": "uint16_t",
    "f16": "_Float16",
    "i64": "int64_t",
    "i32": "int32_t",
    "i16": "int16_t",
    "i8": "int8_t",
    "ui8": "uint8_t",
    "i1": "bool",
    "index": "int64_t",
}


def _key(t: Attribute) -> str:
    if isinstance(t, builtin.IndexType):
        return "index"
    text = str(t)
    if text not in _STORAGE:
        raise CppUnsupported(f"element type {text}")
    return text


def storage_type(t: Attribute) -> str:
    """The C++ type a buffer of element type ``t`` holds."""
    return _STORAGE[_key(t)]


def value_type(t: Attribute) -> str:
    """The C++ type a value of type ``t`` is computed in (bf16/f16 in float)."""
    k = _key(t)
    return "float" if k in ("bf16", "f16", "f32") else _STORAGE[k]


def _is_float(t: Attribute) -> bool:
    return _key(t) in ("f32", "f64", "bf16", "f16")


def _unsigned(t: Attribute) -> str:
    k = _key(t)
    return {"i64": "uint64_t", "i32": "uint32_t", "i16": "uint16_t", "i8": "uint8_t"}.get(
        k, "uint64_t" if k == "index" else _STORAGE[k]
    )


# --------------------------------------------------------------------------
# Index expressions
# --------------------------------------------------------------------------


def cexpr(e: Any, env: dict[sympy.Symbol, str]) -> str:
    """A sympy index expression as C++ (int64 arithmetic; index math is over
    nonnegative values, so truncating division is floor, as in the tt lowering)."""
    from torch.utils._sympy.functions import FloorDiv, ModularIndexing, PythonMod
    from torch.utils._sympy.functions import Max as TorchMax
    from torch.utils._sympy.functions import Min as TorchMin
    from torch.utils._sympy.functions import Mod as TorchMod

    e = sympy.sympify(e)
    if e.is_Integer:
        return f"int64_t({int(e)})" if int(e) < 0 else f"{int(e)}L"
    if e.is_Symbol:
        name = env.get(e)
        if name is None:
            raise CppUnsupported(f"index symbol {e} has no value in this loop")
        return name
    if isinstance(e, sympy.Add):
        return "(" + " + ".join(cexpr(a, env) for a in e.args) + ")"
    if isinstance(e, sympy.Mul):
        for a in e.args:
            if a.is_Number and not a.is_Integer:
                raise CppUnsupported(f"non-integer index expression {e}")
        return "(" + " * ".join(cexpr(a, env) for a in e.args) + ")"
    if isinstance(e, sympy.Pow) and e.args[1].is_Integer and int(e.args[1]) > 0:
        return "(" + " * ".join([cexpr(e.args[0], env)] * int(e.args[1])) + ")"
    if isinstance(e, FloorDiv):
        return f"({cexpr(e.args[0], env)} / {cexpr(e.args[1], env)})"
    if isinstance(e, PythonMod | TorchMod | sympy.Mod):
        return f"({cexpr(e.args[0], env)} % {cexpr(e.args[1], env)})"
    if isinstance(e, ModularIndexing):
        a, b, c = (cexpr(x, env) for x in e.args)
        return f"(({a} / {b}) % {c})"
    if isinstance(e, sympy.Max | sympy.Min | TorchMax | TorchMin):
        fn = "imax" if isinstance(e, sympy.Max | TorchMax) else "imin"
        args = [cexpr(a, env) for a in e.args]
        acc = args[0]
        for a in args[1:]:
            acc = f"{fn}({acc}, {a})"
        return acc
    raise CppUnsupported(f"index expression {e} ({type(e).__name__})")


def _float_literal(value: float, t: Attribute) -> str:
    double = _key(t) == "f64"
    if math.isnan(value):
        return "std::numeric_limits<double>::quiet_NaN()" if double else "NAN"
    if math.isinf(value):
        return ("-" if value < 0 else "") + ("double(INFINITY)" if double else "INFINITY")
    text = repr(float(value))
    return text if double else f"{text}f"


_CMPF = {
    "oeq": "({a} == {b})",
    "ogt": "({a} > {b})",
    "oge": "({a} >= {b})",
    "olt": "({a} < {b})",
    "ole": "({a} <= {b})",
    "one": "({a} < {b} || {a} > {b})",
    "ord": "({a} == {a} && {b} == {b})",
    "ueq": "!({a} < {b} || {a} > {b})",
    "ugt": "!({a} <= {b})",
    "uge": "!({a} < {b})",
    "ult": "!({a} >= {b})",
    "ule": "!({a} > {b})",
    "une": "({a} != {b})",
    "uno": "({a} != {a} || {b} != {b})",
    "true": "true",
    "false": "false",
}

_CMPI = {
    "eq": "==",
    "ne": "!=",
    "slt": "<",
    "sle": "<=",
    "sgt": ">",
    "sge": ">=",
    "ult": "<",
    "ule": "<=",
    "ugt": ">",
    "uge": ">=",
}

_FLOAT_BINARY = {
    "arith.addf": "({a} + {b})",
    "arith.subf": "({a} - {b})",
    "arith.mulf": "({a} * {b})",
    "arith.divf": "({a} / {b})",
    "arith.maximumf": "max_prop({a}, {b})",
    "arith.minimumf": "min_prop({a}, {b})",
    "arith.maxnumf": "std::fmax({a}, {b})",
    "arith.minnumf": "std::fmin({a}, {b})",
    "arith.remf": "std::fmod({a}, {b})",
    "math.atan2": "std::atan2({a}, {b})",
    "math.powf": "std::pow({a}, {b})",
    "math.copysign": "std::copysign({a}, {b})",
}

_INT_BINARY = {
    "arith.addi": "({a} + {b})",
    "arith.subi": "({a} - {b})",
    "arith.muli": "({a} * {b})",
    "arith.divsi": "idiv({a}, {b})",
    "arith.remsi": "irem({a}, {b})",
    "arith.floordivsi": "ifloordiv({a}, {b})",
    "arith.maxsi": "std::max({a}, {b})",
    "arith.minsi": "std::min({a}, {b})",
    "arith.andi": "({a} & {b})",
    "arith.ori": "({a} | {b})",
    "arith.xori": "({a} ^ {b})",
    "arith.shli": "({a} << {b})",
    "arith.shrsi": "({a} >> {b})",
    "math.ipowi": "ipow({a}, {b})",
}

_BOOL_BINARY = {
    "arith.addi": "({a} != {b})",
    "arith.subi": "({a} != {b})",
    "arith.muli": "({a} && {b})",
    "arith.andi": "({a} && {b})",
    "arith.ori": "({a} || {b})",
    "arith.xori": "({a} != {b})",
    "arith.maxsi": "({a} && {b})",  # i1 is signed: true is -1
    "arith.minsi": "({a} || {b})",
}

_UNARY = {
    "arith.negf": "(-{a})",
    "math.absf": "std::fabs({a})",
    "math.absi": "std::abs({a})",
    "math.acos": "std::acos({a})",
    "math.acosh": "std::acosh({a})",
    "math.asin": "std::asin({a})",
    "math.asinh": "std::asinh({a})",
    "math.atan": "std::atan({a})",
    "math.atanh": "std::atanh({a})",
    "math.cbrt": "std::cbrt({a})",
    "math.ceil": "std::ceil({a})",
    "math.cos": "std::cos({a})",
    "math.cosh": "std::cosh({a})",
    "math.erf": "coil_erf({a})",
    "math.exp": "std::exp({a})",
    "math.exp2": "std::exp2({a})",
    "math.expm1": "std::expm1({a})",
    "math.floor": "std::floor({a})",
    "math.log": "std::log({a})",
    "math.log10": "std::log10({a})",
    "math.log1p": "std::log1p({a})",
    "math.log2": "std::log2({a})",
    "math.round": "std::round({a})",
    "math.roundeven": "std::nearbyint({a})",
    "math.rsqrt": "({one} / std::sqrt({a}))",
    "math.sin": "std::sin({a})",
    "math.sinh": "std::sinh({a})",
    "math.sqrt": "std::sqrt({a})",
    "math.tan": "std::tan({a})",
    "math.tanh": "std::tanh({a})",
    "math.trunc": "std::trunc({a})",
}


# --------------------------------------------------------------------------
# One kernel
# --------------------------------------------------------------------------


class KernelPrinter:
    """Prints one ``cpu.func`` as a C++ function (all naming state lives here)."""

    def __init__(
        self,
        fn: cpu.FuncOp,
        keep: dict[tuple[int, str], tuple[str, str]] | None = None,
        hoist: dict[tuple[int, str], tuple[str, str, list[str], str]] | None = None,
    ):
        self.fn = fn
        # Values recomputed in a later pass over a row (the fusion inlines a
        # producer into each member that reads it: softmax's exp(x - max) in
        # the sum and in the output): each define inside the row loops gets a
        # canonical text (its operands' texts, buffer reads with the buffer's
        # store count), counted per group in a first printing (``keep`` None);
        # the second printing keeps those seen twice in a per-row array.
        self.keep = keep
        # (group, key) -> [count, type, whether a narrow read]
        self.seen: dict[tuple[int, str], list] = {}
        self.canon: dict[str, str] = {}
        self.version: dict[str, int] = {}
        self.group_id = -1
        self.row_depth = 0
        self.row_flat: str | None = None
        # A bf16 row member's reads that depend on the row index alone (a
        # LayerNorm's gamma and beta): widened to f32 once per call into an
        # array before the group's outer loop (inserted at ``widen_at``), not
        # once per row: a 256x1024 bf16 LayerNorm kernel 336.7 -> 314.9 us here.
        self.widened: dict[str, str] = {}  # read text -> array
        self.array_types: dict[str, str] = {}  # buffer or array name -> element type
        self.widen_at: tuple[int, int] | None = None  # (line, depth) of the group
        self.row_sizes: list[int] = []
        self.in_row_member = False
        self.kept: dict[str, list] = {}  # key -> [array, written]
        self.lines: list[str] = []
        self.wide_compares = 0  # 64-bit integer compares printed (see _blocked)
        wide = fn.attributes.get("coil.vector_bytes")
        self.vector_bytes = wide.value.data if isinstance(wide, IntegerAttr) else VECTOR_BYTES
        self.depth = 0
        self.names: dict[SSAValue, str] = {}
        self.count = 0
        self.checks_bounds = False
        self.symbols: dict[sympy.Symbol, str] = {}  # size symbols -> argument names
        # Values of group members computed at the current output point.
        self.member_values: dict[SSAValue, list[str]] = {}
        # Row members (pointwise over ranges ++ reduction ranges): inlined where read.
        self.row_members: dict[SSAValue, L.PointwiseOp] = {}
        self.row_stored: dict[SSAValue, SSAValue] = {}  # stored row members -> their out
        # Names whose value is the same at every point of a row (group members'
        # scalars, constants, what is computed from them only): a division by
        # one inside a row loop multiplies by its reciprocal, computed once.
        self.invariant: set[str] = set()
        # bf16/f16 values rounded by a truncf: name -> the float before rounding
        # (a store rounds anyway; rounding twice costs a third of a bf16 softmax's
        # output pass).
        self.rounded: dict[str, str] = {}
        # Costly values of a pointwise nest that depend on its innermost loop
        # index alone (a channels-last batch norm's 1 / sqrt(var[c] + eps)):
        # computed once per innermost index before the outer loop, into an
        # array. ``hoist`` (second printing): (group, key) -> (array, ctype,
        # the lines computing it, its name there); the first printing fills
        # ``hoistable`` with the same.
        self.hoist = hoist or {}
        self.hoistable: dict[tuple[int, str], tuple[str, list[str], str]] = {}
        self.inner_var: str | None = None  # the innermost index while eligible
        self.inner_sym: Any = None
        self.inner_only: set[str] = set()  # names depending on inner_var at most
        self.constants: set[str] = set()
        self.lines_of: dict[str, tuple[str, list[str]]] = {}  # name -> (line, operands)
        self.written: set[str] = set()  # buffers some nest of the kernel stores to
        self.escaping: set[str] = set()  # inner-only values read by other values

    # ---- text ------------------------------------------------------------------

    def emit(self, line: str) -> None:
        self.lines.append("  " * self.depth + line)

    def fresh(self, prefix: str = "v") -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    # ---- the function ------------------------------------------------------------

    def print(self) -> str:
        fn = self.fn
        params = []
        attrs = fn.arg_attrs.data if fn.arg_attrs else [None] * len(fn.args)
        nbuf = 0
        for arg, attr in zip(fn.args, attrs):
            if isinstance(arg.type, BufferType):
                name = f"buf{nbuf}"
                nbuf += 1
                self.names[arg] = name
                self.array_types[name] = storage_type(arg.type.element_type)
                params.append(f"{storage_type(arg.type.element_type)}* {name}")
            elif attr is not None and "coil.seed" in attr.data:
                name = f"seed{arg.index}"
                self.names[arg] = name
                params.append(f"int64_t {name}")
            else:
                sym = attr.data.get("coil.symbol") if attr is not None else None
                if sym is None:
                    raise CppUnsupported(f"argument {arg.index} is neither a buffer nor a size")
                expr = sym.data
                name = str(expr)
                self.names[arg] = name
                self.symbols[expr] = name
                params.append(f"int64_t {name}")
        cost = fn.attributes.get("coil.cost")
        if isinstance(cost, builtin.StringAttr):  # what it reads, writes, computes
            self.emit(f"// cost: {cost.data}")
        self.emit(f'extern "C" int {fn.sym_name.data}({", ".join(params)}) {{')
        self.depth += 1
        self.emit("int bad = 0;")
        body = [op for op in fn.body.block.ops if not isinstance(op, cpu.ReturnOp)]
        for nest in body:
            for out in getattr(nest, "outs", ()):
                if out in self.names:
                    self.written.add(self.names[out])
        for k, nest in enumerate(body):
            if k and self.checks_bounds:  # an index out of range stops the rest, as eager
                self.emit("if (bad) return bad;")
            if isinstance(nest, L.PointwiseOp):
                self.group(nest.ranges.data, (), [nest], self._pointwise_stores(nest))
            elif isinstance(nest, L.ReductionOp):
                self.group(
                    nest.ranges.data,
                    nest.reduction_ranges.data,
                    [nest],
                    {nest: list(nest.outs)},
                )
            elif isinstance(nest, L.ScanOp):
                self.scan(nest)
            elif isinstance(nest, L.ScatterOp):
                self.scatter(nest)
            elif isinstance(nest, L.FusedOp):
                term = nest.body.block.last_op
                yields: dict[Any, list[Any]] = {}
                for value, out in zip(term.values, nest.outs):
                    yields.setdefault(value, []).append(out)
                self.group(nest.ranges.data, nest.reduction_ranges.data, nest.members(), yields)
            else:
                raise CppUnsupported(f"{nest.name} at the top of a kernel")
        self.emit("return bad;")
        self.depth -= 1
        self.emit("}")
        return "\n".join(self.lines)

    def scan(self, nest: L.ScanOp) -> None:
        """An inclusive scan: the other dimensions in parallel (one flattened
        loop), the scanned one walked in order at each point, the running value
        stored at every step (as ATen's CPU scans: ``cumsum``, ``cummax`` ...).
        The first element starts the running value; ``argmax``/``argmin`` keep
        its position too (the last one on ties, the last NaN once there is one:
        ATen's ``cummax_cummin_helper``)."""
        env = dict(self.symbols)
        ranges = nest.ranges.data
        d = nest.scan_dim
        syms = index_symbols(len(ranges))
        kind = nest.kind.data
        ct = value_type(nest.body.block.last_op.values[0].type)
        self._start_row_cache(())
        self._no_members()
        self.emit("{")
        self.depth += 1
        others = [k for k in range(len(ranges)) if k != d]
        if others:
            points = " * ".join(cexpr(r, env) for r in ranges)
            static = sympy.Mul(*[sympy.sympify(r) for r in ranges])
            if static.is_Integer:
                pragma = "#pragma omp parallel for" if int(static) >= PARALLEL_MIN_POINTS else None
            else:
                pragma = f"#pragma omp parallel for if(({points}) >= {PARALLEL_MIN_POINTS}L)"
            self._flat_loop(others, ranges, env, syms, pragma)
        acc = self.fresh("acc")
        self.emit(f"{ct} {acc} = {ct}(0);")
        where = None
        if kind in ("argmax", "argmin"):
            where = self.fresh("pos")
            self.emit(f"int64_t {where} = 0;")
        i = f"i{d}"
        self.emit(f"for (int64_t {i} = 0; {i} < {cexpr(ranges[d], env)}; ++{i}) {{")
        self.depth += 1
        env[syms[d]] = i
        (v,) = self.body(nest.body.block, env)
        combine = {
            "sum": f"{acc} + {v}",
            "prod": f"{acc} * {v}",
            "max": f"max_prop({acc}, {v})",
            "min": f"min_prop({acc}, {v})",
            "logsumexp": f"coil_log_add_exp({acc}, {v})",
        }
        if where is not None:
            cmp = ">=" if kind == "argmax" else "<="
            self.emit(f"if ({i} == 0 || {v} != {v} || ({acc} == {acc} && {v} {cmp} {acc})) {{")
            self.emit(f"  {acc} = {v}; {where} = {i};")
            self.emit("}")
        elif kind in combine:
            self.emit(f"{acc} = {i} == 0 ? {ct}({v}) : {ct}({combine[kind]});")
        else:
            raise CppUnsupported(f"a {kind} scan")
        outs = list(nest.outs)
        self._store(outs[0], syms, env, acc)
        if where is not None:
            self._store(outs[1], syms, env, where)
        self.depth -= 1
        self.emit("}")
        if others:
            self.depth -= 1
            self.emit("}")
        self.depth -= 1
        self.emit("}")

    def scatter(self, nest: L.ScatterOp) -> None:
        """A scatter into its out (which holds the initial values already): the
        points in order on one thread (several may name one element: ``add``
        accumulates them, ``store`` keeps the last, as ATen's serial CPU
        ``index_put_``/``scatter_add`` kernels do), each data-dependent index
        checked as a gather's is (out of range: the ``bad`` flag, which the
        wrapper raises, and no write)."""
        env = dict(self.symbols)
        ranges = nest.ranges.data
        syms = index_symbols(len(ranges))
        mode = nest.mode.data
        (out,) = nest.outs
        t = out.type
        ptr = self.names.get(out)
        if ptr is None:
            raise CppUnsupported("a scatter into a buffer that is not a kernel argument")
        self._start_row_cache(())
        self._no_members()
        self.emit("{")
        self.depth += 1
        self._flat_loop(list(range(len(ranges))), ranges, env, syms, None)
        value, *indices = self.body(nest.body.block, env)
        lenv = dict(env)
        for k, v in enumerate(indices):
            lenv[indirect_symbol(k)] = f"int64_t({v})"
        checked = []
        for dim, e in enumerate(nest.index.data):
            ivar = self.fresh("ix")
            self.emit(f"const int64_t {ivar} = {cexpr(e, lenv)};")
            if any(str(s).startswith("t") for s in sympy.sympify(e).free_symbols):
                ok = f"(uint64_t){ivar} < (uint64_t){cexpr(t.shape_attr.data[dim], lenv)}"
                self.emit(f"if (!({ok})) {{ bad = 1; continue; }}")
                self.checks_bounds = True
            checked.append(ivar)
        addr = (
            " + ".join(
                f"{i} * {cexpr(st, lenv)}" for i, st in zip(checked, t.strides_attr.data) if st != 0
            )
            or "0"
        )
        k = _key(t.element_type)
        ct = value_type(t.element_type)
        old = f"bf16_load({ptr}[{addr}])" if k == "bf16" else f"{ct}({ptr}[{addr}])"
        new = {
            "store": value,
            "add": f"{old} + {value}",
            "max": f"max_prop({old}, {ct}({value}))",
            "min": f"min_prop({old}, {ct}({value}))",
        }.get(mode)
        if new is None:
            raise CppUnsupported(f"a {mode} scatter")
        self.version[ptr] = self.version.get(ptr, 0) + 1
        if k == "bf16":
            self.emit(f"{ptr}[{addr}] = bf16_store({new});")
        else:
            self.emit(f"{ptr}[{addr}] = {storage_type(t.element_type)}({new});")
        self.depth -= 1
        self.emit("}")
        self.depth -= 1
        self.emit("}")

    def _no_members(self) -> None:
        """A nest that is no fusion group (a scan, a scatter): no earlier group's
        members are values here; what it loads, it loads from memory."""
        self.inner_var = None
        self.member_values = {}
        self.row_members = {}
        self.row_stored = {}

    def _flat_loop(
        self, dims: Sequence[int], ranges: Sequence[Any], env: dict, syms, pragma: str | None
    ) -> None:
        """Open one loop over dimensions ``dims`` of ``ranges`` (outermost first),
        flattened: each index ``i<k>`` recovered by division and bound in
        ``env``; ``pragma`` (an OpenMP line) before it. The caller closes it."""
        sizes = [cexpr(ranges[k], env) for k in dims]
        x = self.fresh("x")
        if pragma:
            self.emit(pragma)
        self.emit(f"for (int64_t {x} = 0; {x} < {' * '.join(sizes) or '1L'}; ++{x}) {{")
        self.depth += 1
        rest = x
        for pos in range(len(dims) - 1, -1, -1):
            k = dims[pos]
            if pos == 0:
                self.emit(f"const int64_t i{k} = {rest};")
            else:
                self.emit(f"const int64_t i{k} = {rest} % {sizes[pos]};")
                q = self.fresh("q")
                self.emit(f"const int64_t {q} = {rest} / {sizes[pos]};")
                rest = q
            env[syms[k]] = f"i{k}"

    @staticmethod
    def _pointwise_stores(nest: L.PointwiseOp) -> dict[Any, list[Any]]:
        return {nest: list(nest.outs)}

    # ---- loops ---------------------------------------------------------------------

    def _order(self, ranges: Sequence[Any], out: BufferType | None) -> list[int]:
        """Loop dimensions outermost first: the output's memory order (largest
        stride first), row-major among equal strides."""
        n = len(ranges)
        if out is None or len(out.strides_attr.data) != n:
            return list(range(n))
        strides = out.strides_attr.data

        def key(k: int) -> tuple:
            # A size-1 dimension's stride is arbitrary and its loop runs once:
            # outermost (a batch of 1 must not turn a channels-last walk into
            # a strided one).
            if ranges[k] == 1:
                return (-1, 0, k)
            s = strides[k]
            try:
                value = int(s)
            except TypeError:
                value = None
            # Symbolic strides: assume larger than any constant (outer dims).
            return (0 if value is None else 1, -(value or 0), k)

        return sorted(range(n), key=key)

    def group(
        self,
        outer: Sequence[Any],
        inner: Sequence[Any],
        members: list[L.LoopOp],
        yields: dict[Any, list[Any]],
    ) -> None:
        """A nest or fusion group: parallel over ``outer``, each member per point."""
        env = dict(self.symbols)
        outs = [o for v in yields.values() for o in v]
        first_out = outs[0].type if outs and isinstance(outs[0].type, BufferType) else None
        n, m = len(outer), len(inner)
        osyms, rsyms = index_symbols(n, m)[:n], index_symbols(n, m)[n:]
        points = " * ".join(cexpr(r, env) for r in [*outer, *inner]) or "1L"
        self.emit("{")
        self.depth += 1
        self.widened = {}
        self.widen_at = (len(self.lines), self.depth)
        parallel = f"if(({points}) >= {PARALLEL_MIN_POINTS}L)"
        static = sympy.Mul(*[sympy.sympify(r) for r in [*outer, *inner]])
        if static.is_Integer:
            # Decided here: an `if(false)` clause still calls into libgomp, which
            # sets up a team of one (~3 us a call here: a [2, 8] LayerNorm kernel
            # took 4.4 us with it, ctypes' call included).
            parallel = "" if int(static) >= PARALLEL_MIN_POINTS else None
        if m == 0:
            order = self._order(outer, first_out)
        else:
            order = list(range(n))
        loop_outer = order if m else order[:-1]
        innermost = None if m else (order[-1] if order else None)
        self.inner_var = None
        if innermost is not None and loop_outer and sympy.sympify(outer[innermost]).is_Integer:
            length = int(outer[innermost])
            if length <= ROW_CACHE_MAX:
                self.inner_var, self.inner_sym = f"i{innermost}", osyms[innermost]
                self._hoisted_prologue(self.group_id + 1, length)
        self.inner_only = set()
        # The flattened outer loop.
        if loop_outer:
            pragma = None if parallel is None else f"#pragma omp parallel for {parallel}".rstrip()
            self._flat_loop(loop_outer, outer, env, osyms, pragma)
        if innermost is not None:
            k = innermost
            self.emit(
                "#pragma omp simd"
                if loop_outer or parallel is None
                else f"#pragma omp parallel for simd {parallel}".rstrip()
            )
            size = cexpr(outer[k], env)
            self.emit(f"for (int64_t i{k} = 0; i{k} < {size}; ++i{k}) {{")
            self.depth += 1
            env[osyms[k]] = f"i{k}"
        if not loop_outer and innermost is None:
            pass  # a 0-d nest: one point
        self.member_values = {}
        self.row_members = {}
        self.row_stored = {}
        self.n_outer = n
        self._start_row_cache(inner)
        for member in members:
            if isinstance(member, L.ReductionOp):
                values = self.reduction(member, inner, env, rsyms)
                self.member_values[member.targets[0]] = values
                for k, res in enumerate(member.targets):
                    self.member_values[res] = [values[k]]
                    for out in yields.get(res, []) + (
                        yields.get(member, [])[k : k + 1] if member in yields else []
                    ):
                        self.store(out, osyms, env, values[k], res.type)
            elif isinstance(member, L.PointwiseOp):
                if len(member.ranges.data) == n:
                    (value,) = self.body(member.body.block, env)
                    target = member.targets[0] if member.targets else member
                    self.member_values[target] = [value]
                    for out in yields.get(target, []) + yields.get(member, []):
                        self.store(out, osyms, env, value, member.body.block.last_op.values[0].type)
                else:
                    self.row_member(member, inner, env, rsyms, yields)
            else:
                raise CppUnsupported(f"{member.name} in a group")
        if innermost is not None:
            self.depth -= 1
            self.emit("}")
        if loop_outer:
            self.depth -= 1
            self.emit("}")
        self.depth -= 1
        self.emit("}")
        self.inner_var = None

    def _hoisted_prologue(self, group: int, length: int) -> None:
        """Before a pointwise nest's outer loop: the arrays of its values that
        depend on the innermost index alone (chosen by the first printing)."""
        var = self.inner_var
        for (gid, _key), (array, ctype, lines, name) in self.hoist.items():
            if gid != group:
                continue
            self.emit(f"{ctype} {array}[{length}];")
            self.array_types[array] = ctype
            self.emit("#pragma omp simd")
            self.emit(f"for (int64_t {var} = 0; {var} < {length}L; ++{var}) {{")
            for line in lines:
                self.emit("  " + line)
            self.emit(f"  {array}[{var}] = {name};")
            self.emit("}")

    def _start_row_cache(self, inner: Sequence[Any]) -> None:
        """A new group: its row index for kept values (rows of static length up
        to :data:`ROW_CACHE_MAX`), and the arrays the first printing chose."""
        self.group_id += 1
        self.kept = {}
        self.row_flat = None
        sizes = [sympy.sympify(e) for e in inner]
        if not sizes or not all(e.is_Integer for e in sizes):
            return
        length = math.prod(int(e) for e in sizes)
        if length > ROW_CACHE_MAX:
            return
        self.row_sizes = [int(e) for e in sizes]
        flat = "r0"
        for k in range(1, len(sizes)):
            flat = f"({flat} * {int(sizes[k])}L + r{k})"
        self.row_flat = flat
        for (gid, key), (array, ctype) in (self.keep or {}).items():
            if gid == self.group_id:
                self.emit(f"{ctype} {array}[{length}];")
                self.kept[key] = [array, False]
                self.array_types[array] = ctype

    def _row_loops(self, inner: Sequence[Any], env: dict, simd: str) -> int:
        """Open the loops over the reduction ranges (innermost ``simd``); their count."""
        if inner:
            self.row_depth += 1
        for k, size in enumerate(inner):
            if k == len(inner) - 1 and simd:
                self.emit(simd)
            self.emit(f"for (int64_t r{k} = 0; r{k} < {cexpr(size, env)}; ++r{k}) {{")
            self.depth += 1
        return len(inner)

    def _close(self, n: int) -> None:
        if n:
            self.row_depth -= 1
        for _ in range(n):
            self.depth -= 1
            self.emit("}")

    def row_member(
        self,
        member: L.PointwiseOp,
        inner: Sequence[Any],
        env: dict,
        rsyms: list[sympy.Symbol],
        yields: dict[Any, list[Any]],
    ) -> None:
        target = member.targets[0] if member.targets else member
        self.row_members[target] = member
        outs = yields.get(target, []) + yields.get(member, [])
        if not outs:
            return  # read by later members only: inlined there
        # Stored: later members read the stored row (it may overwrite, in place,
        # a buffer the member itself reads: recomputing it would read its own
        # results).
        self.row_stored[target] = outs[0]
        renv = dict(env)
        for k in range(len(inner)):
            renv[rsyms[k]] = f"r{k}"
        n = self._row_loops(inner, renv, "#pragma omp simd")
        self.in_row_member = True
        try:
            value = self.row_value(member, renv)
        finally:
            self.in_row_member = False
        syms = [s for s in index_symbols(len(member.ranges.data))]
        for out in outs:
            self.store_at(out, syms, self._row_env(member, renv), value, member)
        self._close(n)

    def _row_env(self, member: L.PointwiseOp, env: dict) -> dict:
        """A row member's own symbols: i0 .. i(n-1) are the group's, i(n+j) its r<j>."""
        own = dict(env)
        n = self.n_outer
        for j in range(len(member.ranges.data) - n):
            own[index_symbols(n + j + 1)[-1]] = f"r{j}"
        return own

    def row_value(self, member: L.PointwiseOp, env: dict) -> str:
        (value,) = self.body(member.body.block, self._row_env(member, env))
        return value

    def reduction(
        self, op: L.ReductionOp, inner: Sequence[Any], env: dict, rsyms: list[sympy.Symbol]
    ) -> list[str]:
        kind = op.kind.data
        yielded = op.body.block.last_op.values[0].type
        ct = value_type(yielded)
        is_float = _is_float(yielded)
        renv = dict(env)
        for k in range(len(inner)):
            renv[rsyms[k]] = f"r{k}"
        acc = self.fresh("acc")
        lanes = self._lanes(inner, ct)
        if kind in ("sum", "prod") and lanes:
            op_ = "+" if kind == "sum" else "*"
            part = _Partial(acc, ct, "0" if kind == "sum" else "1", "{p} " + op_ + "= {v};")
            part.combine = "{a} " + op_ + "= {b};"
            part.clause = op_
            part.into_double = kind == "sum" and ct == "float"

            def body() -> list[str]:
                (v,) = self.body(op.body.block, renv)
                return [part.update.format(p=part.slot, v=v)]

            self._blocked(inner, renv, lanes, [part], body)
            return [acc]
        if kind in ("sum", "prod"):
            self.emit(f"{ct} {acc} = {0 if kind == 'sum' else 1};")
            op_ = "+" if kind == "sum" else "*"
            simd = f"#pragma omp simd reduction({op_}:{acc})" if ct != "bool" else ""
            n = self._row_loops(inner, renv, simd)
            (v,) = self.body(op.body.block, renv)
            if ct == "bool":
                self.emit(f"{acc} = {acc} {'!=' if kind == 'sum' else '&&'} {v};")
            else:
                self.emit(f"{acc} {op_}= {v};")
            self._close(n)
            return [acc]
        if kind in ("max", "min"):
            lowest = "-" if kind == "max" else ""
            if is_float:
                init = f"{lowest}std::numeric_limits<{ct}>::infinity()"
            else:
                lim = "lowest" if kind == "max" else "max"
                init = f"std::numeric_limits<{ct}>::{lim}()"
            # std::max/min plus an integer "saw a NaN" flag: GCC vectorizes this
            # form (vmaxps); a ternary with a bool || flag stayed scalar and was
            # 200x slower on a 256K-element row.
            nan = self.fresh("nan") if is_float else None
            if lanes:
                part = _Partial(acc, ct, init, f"{{p}} = std::{kind}({{p}}, {{v}});")
                part.combine = f"{{a}} = std::{kind}({{a}}, {{b}});"
                part.clause = kind
                parts = [part]
                if nan:
                    flag = _Partial(nan, "int", "0", "{p} |= ({v} != {v});")
                    flag.combine = "{a} |= {b};"
                    flag.clause = "|"
                    parts.append(flag)

                def body() -> list[str]:
                    (v,) = self.body(op.body.block, renv)
                    return [q.update.format(p=q.slot, v=v) for q in parts]

                self._blocked(inner, renv, lanes, parts, body)
                if nan:
                    self.emit(f"if ({nan}) {acc} = std::numeric_limits<{ct}>::quiet_NaN();")
                return [acc]
            self.emit(f"{ct} {acc} = {init};")
            clauses = f"reduction({kind}:{acc})"
            if nan:
                self.emit(f"int {nan} = 0;")
                clauses += f" reduction(|:{nan})"
            n = self._row_loops(inner, renv, f"#pragma omp simd {clauses}" if ct != "bool" else "")
            (v,) = self.body(op.body.block, renv)
            if ct == "bool":
                self.emit(f"{acc} = {acc} {'||' if kind == 'max' else '&&'} {v};")
            else:
                self.emit(f"{acc} = std::{kind}({acc}, {v});")
            if nan:
                self.emit(f"{nan} |= ({v} != {v});")
            self._close(n)
            if nan:
                self.emit(f"if ({nan}) {acc} = std::numeric_limits<{ct}>::quiet_NaN();")
            return [acc]
        if kind in ("any", "all"):
            self.emit(f"bool {acc} = {'false' if kind == 'any' else 'true'};")
            n = self._row_loops(inner, renv, "")
            (v,) = self.body(op.body.block, renv)
            self.emit(f"{acc} = {acc} {'||' if kind == 'any' else '&&'} {v};")
            self._close(n)
            return [acc]
        if kind in ("argmax", "argmin"):
            idx = self.fresh("idx")
            bad_init = "-" if kind == "argmax" else ""
            if is_float:
                init = f"{bad_init}std::numeric_limits<{ct}>::infinity()"
            else:
                init = f"std::numeric_limits<{ct}>::{'lowest' if kind == 'argmax' else 'max'}()"
            self.emit(f"{ct} {acc} = {init};")
            self.emit(f"int64_t {idx} = 0;")
            first = self.fresh("first")
            self.emit(f"bool {first} = true;")
            n = self._row_loops(inner, renv, "")
            (v,) = self.body(op.body.block, renv)
            flat = "0L"
            for k, size in enumerate(inner):
                flat = f"({flat} * {cexpr(size, renv)} + r{k})"
            cmp = ">" if kind == "argmax" else "<"
            nan_take = f" || ({v} != {v} && {acc} == {acc})" if is_float else ""
            self.emit(f"if ({first} || {v} {cmp} {acc}{nan_take}) {{")
            self.emit(f"  {acc} = {v}; {idx} = {flat}; {first} = false;")
            self.emit("}")
            self._close(n)
            return [idx]
        if kind == "welford":
            # Two passes over the row (exact, and vectorizable): the mean, then m2.
            count = " * ".join(f"double({cexpr(s, renv)})" for s in inner) or "1.0"
            total = self.fresh("sum")
            wlanes = self._lanes(inner, ct)
            if wlanes:
                part = _Partial(total, ct, "0", "{p} += {v};", result_type="double")
                part.combine = "{a} += {b};"
                part.into_double = ct == "float"

                def first() -> list[str]:
                    (v,) = self.body(op.body.block, renv)
                    return [part.update.format(p=part.slot, v=v)]

                self._blocked(inner, renv, wlanes, [part], first)
            else:
                self.emit(f"double {total} = 0;")
                n = self._row_loops(inner, renv, f"#pragma omp simd reduction(+:{total})")
                (v,) = self.body(op.body.block, renv)
                self.emit(f"{total} += double({v});")
                self._close(n)
            mean, m2, cnt = self.fresh("mean"), self.fresh("m2"), self.fresh("count")
            self.emit(f"const {ct} {cnt} = {ct}({count});")
            self.emit(f"const {ct} {mean} = {cnt} > 0 ? {ct}({total} / ({count})) : {ct}(0);")
            if wlanes:
                sq = _Partial(m2, ct, "0", "{p} += {v} * {v};")
                sq.combine = "{a} += {b};"
                sq.into_double = ct == "float"

                def second() -> list[str]:
                    (v,) = self.body(op.body.block, renv)
                    d = self.fresh("d")
                    return [f"const {ct} {d} = {v} - {mean};", sq.update.format(p=sq.slot, v=d)]

                self._blocked(inner, renv, wlanes, [sq], second)
                return [mean, m2, cnt]
            self.emit(f"{ct} {m2} = 0;")
            n = self._row_loops(inner, renv, f"#pragma omp simd reduction(+:{m2})")
            (v,) = self.body(op.body.block, renv)
            d = self.fresh("d")
            self.emit(f"const {ct} {d} = {v} - {mean};")
            self.emit(f"{m2} += {d} * {d};")
            self._close(n)
            return [mean, m2, cnt]
        raise CppUnsupported(f"loop.reduction {kind}")

    # ---- blocked row reductions -----------------------------------------------------

    def _lanes(self, inner: Sequence[Any], ct: str) -> int:
        """Partial accumulators for a row reduction in ``ct`` (0: one accumulator,
        for a short static row, a bool or an unknown type)."""
        if not inner or ct not in _SIZEOF:
            return 0
        lanes = PARTIAL_BYTES * self.vector_bytes // VECTOR_BYTES // _SIZEOF[ct]
        size = sympy.sympify(inner[-1])
        if size.is_Integer and int(size) < 2 * lanes:
            return 0
        return lanes

    def _blocked(
        self,
        inner: Sequence[Any],
        env: dict,
        lanes: int,
        parts: list[_Partial],
        body: Any,
    ) -> None:
        """A row reduction into :data:`STREAMS` accumulators per result: the
        innermost row loop's first ``full`` elements (a multiple of ``lanes``)
        split into ``STREAMS`` contiguous streams walked together by one ``omp
        simd`` loop (stream s reads element ``s * rq + j`` into accumulator s;
        the compiler keeps each accumulator in one vector register), the
        remainder after it into stream 0, the streams then combined. ``body()``
        prints the row's body and returns the lines that update the partials
        (``part.slot``); it is printed once and written into each stream (in
        its own scope) and the remainder loop.

        A float sum or product (every part ``+=`` or ``*=`` in float or double)
        keeps each stream's accumulator as a vector (:data:`VECTOR_BYTES`): the
        loop steps a vector's lanes at a time, an inner ``omp simd`` loop
        writes each stream's terms into a vector, the step adds them in; the
        remainder goes into a scalar; the lanes are folded as a tree at the end
        (``lanes_sum``/``lanes_prod``).

        Why streams and not an array of partials indexed by the lane: GCC kept
        such an array in memory, a load and a store of each vector per block,
        so every block waited on the last one's store (a 256x1024 f32
        LayerNorm kernel, AVX2, g++ 12, one thread: 145 us with the array,
        123 us with four streams; ATen's 213)."""
        for q in parts:
            self.emit(f"{q.result_type or q.ctype} {q.name};")
        self.emit("{")
        self.depth += 1
        *outer_rows, last_size = inner
        size = sympy.sympify(last_size)
        full = int(size) // lanes * lanes if size.is_Integer else None
        chunked = any(q.into_double for q in parts) and (full is None or full > SUM_CHUNK)
        streams = {q.name: [f"{q.name}_s{s}" for s in range(STREAMS)] for q in parts}
        width = self.vector_bytes // _SIZEOF.get(parts[0].ctype, self.vector_bytes)
        vtype = WIDE_TYPES[self.vector_bytes].get(parts[0].ctype, "")
        decls = len(self.lines)  # the accumulators are declared here, below
        self.row_depth += 1
        last = len(inner) - 1
        for k, rsize in enumerate(outer_rows):
            self.emit(f"for (int64_t r{k} = 0; r{k} < {cexpr(rsize, env)}; ++r{k}) {{")
            self.depth += 1
        n_text = cexpr(size, env)
        if full is not None:
            full_text, tail = f"{full}L", int(size) - full
        else:
            tail = None
            full_text = self.fresh("nfull")
            self.emit(f"const int64_t {full_text} = {n_text} / {lanes} * {lanes};")
        # The body, printed once without indentation.
        start, depth = len(self.lines), self.depth
        self.depth = 0
        self.wide_compares = 0
        updates = body()
        lines = self.lines[start:] + updates
        del self.lines[start:]
        self.depth = depth
        n_streams = STREAMS
        if self.wide_compares:
            # One stream where the row compares 64-bit integers (a causal
            # mask's key <= query): g++ 12 at -O3 with 256-bit vectors summed
            # four such streams wrong (a causal softmax's rows from the 25th
            # of 64 on, up to 100x off; its 2- and 1-stream loops, and 32-bit
            # compares, were right), and the standalone loop reproduces it.
            n_streams = 1
            streams = {q.name: [f"{q.name}_s0"] for q in parts}
        # Vector accumulators where the lane loop's vectorization factor is the
        # vector's: every array the body reads holds the accumulator's type (a
        # bf16 read made GCC pick 16 lanes for the 8-lane loop and leave it
        # scalar: a 256x1024 bf16 LayerNorm kernel 4x slower).
        arrays = {m for line in lines for m in _ARRAY_READ.findall(line)}
        vector = (
            n_streams == STREAMS
            and lanes == STREAMS * width
            and all(self.array_types.get(a) == parts[0].ctype for a in arrays)
            and all(
                q.ctype in ("float", "double")
                and q.ctype == parts[0].ctype
                and q.clause in ("+", "*")
                and q.update.startswith("{p} " + q.clause + "= ")
                for q in parts
            )
        )
        pad = "  " * (self.depth - len(outer_rows))
        declared = []
        for q in parts:
            init = f"{SPLAT[vtype]}({q.ctype}({q.init}))" if vector else q.init
            names = ", ".join(f"{a} = {init}" for a in streams[q.name])
            declared.append(f"{vtype if vector else q.ctype} {names};")
            if vector:
                declared.append(f"{q.ctype} {q.name}_r = {q.init};")
            if chunked and q.into_double:
                declared.append(f"double {q.name}_t = 0;")
        self.lines[decls:decls] = [pad + line for line in declared]

        def into(s: int) -> list[str]:
            out = lines
            for q in parts:
                if vector:  # the term into lane jl of the step's vector
                    prefix = f"{q.slot} {q.clause}= "
                    out = [
                        line.replace(prefix, f"{q.name}_t{s}[jl] = ").replace(
                            q.slot, f"{q.name}_t{s}[jl]"
                        )
                        for line in out
                    ]
                else:
                    out = [line.replace(q.slot, streams[q.name][s]) for line in out]
            return out

        def into_tail() -> list[str]:
            if not vector:
                return into(0)
            out = lines
            for q in parts:
                out = [line.replace(q.slot, f"{q.name}_r") for line in out]
            return out

        def fold(q: _Partial) -> str:
            """Stream 0 (the streams combined) as a scalar, the remainder's
            scalar folded in."""
            if not vector:
                return streams[q.name][0]
            helper = "lanes_sum" if q.clause == "+" else "lanes_prod"
            return f"({helper}({streams[q.name][0]}) {q.clause} {q.name}_r)"

        lo, hi = "0", full_text
        if chunked:
            self.emit(f"for (int64_t rc = 0; rc < {full_text}; rc += {SUM_CHUNK}) {{")
            self.depth += 1
            self.emit(f"const int64_t re = imin(rc + {SUM_CHUNK}L, {full_text});")
            lo, hi = "rc", "re"
        quarter = f"{full // n_streams}L" if full is not None and not chunked else "rq"
        if quarter == "rq":
            self.emit(f"const int64_t rq = ({hi} - {lo}) / {n_streams};")
        if vector:
            self.emit(f"for (int64_t jb = 0; jb < {quarter}; jb += {width}) {{")
            self.depth += 1
            for q in parts:
                self.emit(f"{vtype} " + ", ".join(f"{q.name}_t{s}" for s in range(STREAMS)) + ";")
            self.emit("#pragma omp simd")
            self.emit(f"for (int64_t jl = 0; jl < {width}; ++jl) {{")
            self.depth += 1
            self.emit("const int64_t j = jb + jl;")
        else:
            clauses = " ".join(f"reduction({q.clause}:{', '.join(streams[q.name])})" for q in parts)
            self.emit(f"#pragma omp simd {clauses}")
            self.emit(f"for (int64_t j = 0; j < {quarter}; ++j) {{")
            self.depth += 1
        for s in range(n_streams):
            first = f"{lo} + j" if lo != "0" else "j"
            at = first if s == 0 else f"{first} + {s} * {quarter}"
            self.emit(f"{{  // stream {s}")
            self.depth += 1
            self.emit(f"const int64_t r{last} = {at};")
            for line in into(s):
                self.emit(line)
            self.depth -= 1
            self.emit("}")
        self.depth -= 1
        self.emit("}")
        if vector:
            for q in parts:
                self.emit(
                    " ".join(
                        f"{streams[q.name][s]} {q.clause}= {q.name}_t{s};" for s in range(STREAMS)
                    )
                )
            self.depth -= 1
            self.emit("}")
        if chunked:
            for q in parts:
                if q.into_double:
                    self._combine(q, streams[q.name])
                    self.emit(f"{q.name}_t += double({fold(q)});")
                    if vector:
                        self.emit(f"{q.name}_r = {q.init};")
                        zero = f"{SPLAT[vtype]}({q.ctype}({q.init}))"
                        self.emit(" ".join(f"{a} = {zero};" for a in streams[q.name]))
                    else:
                        self.emit(" ".join(f"{a} = {q.init};" for a in streams[q.name]))
            self.depth -= 1
            self.emit("}")
        if tail != 0:
            count = f"{tail}L" if tail is not None else f"{n_text} - {full_text}"
            self.emit(f"for (int64_t j = 0; j < {count}; ++j) {{")
            self.depth += 1
            self.emit(f"const int64_t r{last} = {full_text} + j;")
            for line in into_tail():
                self.emit(line)
            self.depth -= 1
            self.emit("}")
        for _ in outer_rows:
            self.depth -= 1
            self.emit("}")
        self.row_depth -= 1
        for q in parts:
            self._combine(q, streams[q.name])
            if chunked and q.into_double:
                self.emit(f"{q.name}_t += double({fold(q)});")
                self.emit(f"{q.name} = {q.result_type or q.ctype}({q.name}_t);")
            else:
                self.emit(f"{q.name} = {q.result_type or q.ctype}({fold(q)});")
        self.depth -= 1
        self.emit("}")

    def _combine(self, q: _Partial, names: list[str]) -> None:
        """Partial ``q``'s streams combined pairwise into the first."""
        w = len(names) // 2
        while w:
            self.emit(" ".join(q.combine.format(a=names[k], b=names[k + w]) for k in range(w)))
            w //= 2

    # ---- stores ----------------------------------------------------------------------

    def address(self, buf: SSAValue, index: Sequence[Any], env: dict) -> str:
        t = buf.type
        terms = [
            f"{cexpr(e, env)} * {cexpr(s, env)}"
            for e, s in zip(index, t.strides_attr.data)
            if s != 0
        ]
        return " + ".join(terms) or "0"

    def store(self, out: SSAValue, syms, env: dict, value: str, vtype: Attribute) -> None:
        self._store(out, syms, env, value)

    def store_at(self, out: SSAValue, syms, env: dict, value: str, member) -> None:
        self._store(out, syms, env, value)

    def _store(self, out: SSAValue, syms, env: dict, value: str) -> None:
        if out not in self.names:
            raise CppUnsupported("a nest writes a buffer that is not a kernel argument")
        t = out.type
        if len(t.shape_attr.data) != len(syms):
            raise CppUnsupported("an output of another rank than its loops")
        addr = self.address(out, syms, env)
        ptr = self.names[out]
        self.escaping.add(value)
        self.version[ptr] = self.version.get(ptr, 0) + 1  # later reads see new values
        k = _key(t.element_type)
        if k in ("bf16", "f16"):
            value = self.rounded.get(value, value)  # the store rounds (once)
        if k == "bf16":
            self.emit(f"{ptr}[{addr}] = bf16_store({value});")
        else:
            self.emit(f"{ptr}[{addr}] = {storage_type(t.element_type)}({value});")

    # ---- bodies ------------------------------------------------------------------------

    def body(self, block, env: dict) -> list[str]:
        """Print a nest body's ops; the yielded values' C++ names."""
        local: dict[SSAValue, str] = {}
        for op in block.ops:
            if isinstance(op, L.YieldOp):
                return [self.value(v, local) for v in op.values]
            self.op(op, env, local)
        raise CppUnsupported("a body without loop.yield")

    def value(self, v: SSAValue, local: dict) -> str:
        if v in local:
            return local[v]
        if v in self.names:
            return self.names[v]
        raise CppUnsupported(f"a value defined outside the body ({v.type})")

    def define(self, op: Operation, text: str, local: dict) -> None:
        r = op.results[0]
        name = self.fresh()
        ctype = value_type(r.type)
        local[r] = name
        key = _BUF_READ.sub(lambda m: f"{m[1]}@{self.version.get(m[1], 0)}[", text)
        key = _VAR.sub(lambda m: self.canon.get(m[0], m[0]), key)
        self.canon[name] = f"({key})"
        if self.inner_var is not None:
            self.lines_of[name] = (f"const {ctype} {name} = {text};", [])
            hoisted = self.hoist.get((self.group_id, key))
            if hoisted is not None:
                self.emit(f"const {ctype} {name} = {hoisted[0]}[{self.inner_var}];")
                return
        keepable = op.name.startswith(_COSTLY) or (
            isinstance(op, L.LoadOp) and _NARROW_ROW_READ.fullmatch(text) is not None
        )
        if self.row_depth == 0 or self.row_flat is None or not keepable:
            self.emit(f"const {ctype} {name} = {text};")
            return
        kept = self.kept.get(key)
        if kept is not None and kept[1]:  # computed by an earlier pass over this row
            self.emit(f"const {ctype} {name} = {kept[0]}[{self.row_flat}];")
            return
        self.emit(f"const {ctype} {name} = {text};")
        if kept is not None:
            self.emit(f"{kept[0]}[{self.row_flat}] = {name};")
            kept[1] = True
        seen = self.seen.setdefault((self.group_id, key), [0, ctype, isinstance(op, L.LoadOp)])
        seen[0] += 1

    def op(self, op: Operation, env: dict, local: dict) -> None:
        name = op.name
        args = [self.value(v, local) for v in op.operands] if not isinstance(op, L.LoadOp) else []
        if isinstance(op, L.LoadOp):
            self.load(op, env, local)
            return
        if isinstance(op, L.IndexOp):
            self.define(op, f"{value_type(op.result.type)}({cexpr(op.value, env)})", local)
            return
        if isinstance(op, L.RandOp | L.RandnOp):
            draw = "coil_rand" if isinstance(op, L.RandOp) else "coil_randn"
            offset = cexpr(op.offset.data[0], env)
            text = f"{draw}({self.value(op.seed, local)}, {offset})"
            self.define(op, f"{value_type(op.result.type)}({text})", local)
            return
        if isinstance(op, arith.ConstantOp):
            t = op.result.type
            value = op.value
            if isinstance(value, builtin.FloatAttr):
                text = _float_literal(value.value.data, t)
            elif isinstance(value, builtin.IntegerAttr):
                v = value.value.data
                text = ("true" if v else "false") if _key(t) == "i1" else f"{value_type(t)}({v}L)"
            else:
                raise CppUnsupported(f"arith.constant {value}")
            self.define(op, text, local)
            self.invariant.add(local[op.result])
            self.constants.add(local[op.result])
            return
        rtype = op.results[0].type if op.results else None
        if rtype is not None:
            _key(rtype)  # an unsupported result type fails here
        self._op(op, name, args, rtype, local)
        if op.results and all(a in self.invariant for a in args):
            self.invariant.add(local[op.results[0]])
        if self.inner_var is not None and op.results:
            self._track_inner(op, local[op.results[0]], args)
            if local[op.results[0]] not in self.inner_only:
                self.escaping.update(a for a in args if a in self.inner_only)

    def _track_inner(self, op: Operation, result: str, args: list[str]) -> None:
        """Whether ``result`` depends on the innermost index at most; a costly
        one that does (and is not constant) is recorded for hoisting."""
        if not all(a in self.inner_only or a in self.constants for a in args):
            return
        if not args:
            self.constants.add(result)
            return
        self.inner_only.add(result)
        line, _ = self.lines_of.get(result, ("", []))
        self.lines_of[result] = (line, args)
        if not op.name.startswith(_COSTLY) or all(a in self.constants for a in args):
            return
        key = self.canon[result][1:-1]
        if (self.group_id, key) in self.hoistable:
            return
        order, seen = [], set()

        def visit(n: str) -> None:
            if n in seen:
                return
            seen.add(n)
            for a in self.lines_of.get(n, ("", []))[1]:
                visit(a)
            order.append(n)

        visit(result)
        lines = [self.lines_of[n][0] for n in order]
        if all(lines):
            ctype = self.lines_of[result][0].split()[1]
            self.hoistable[(self.group_id, key)] = (ctype, lines, result)

    def _op(self, op: Operation, name: str, args: list[str], rtype: Any, local: dict) -> None:
        if (
            name == "arith.divf"
            and self.row_depth
            and args[1] in self.invariant
            and args[0] not in self.invariant
        ):
            # x / s over a row, s the same for the whole row (softmax's sum):
            # x * (1 / s), the reciprocal hoisted out of the loop (ATen's softmax
            # does the same); a vector division costs 4-8x a multiplication.
            one = "1.0" if _key(rtype) == "f64" else "1.0f"
            self.define(op, f"({args[0]} * ({one} / {args[1]}))", local)
            return
        if name in _FLOAT_BINARY and _is_float(op.operands[0].type):
            self.define(op, _FLOAT_BINARY[name].format(a=args[0], b=args[1]), local)
            return
        if name in _INT_BINARY and not _is_float(op.operands[0].type):
            if _key(op.operands[0].type) == "i1":
                if name not in _BOOL_BINARY:
                    raise CppUnsupported(f"{name} on i1")
                self.define(op, _BOOL_BINARY[name].format(a=args[0], b=args[1]), local)
                return
            self.define(op, _INT_BINARY[name].format(a=args[0], b=args[1]), local)
            return
        if name == "arith.shrui":
            u = _unsigned(op.operands[0].type)
            self.define(op, f"{value_type(rtype)}({u}({args[0]}) >> {args[1]})", local)
            return
        if name in ("arith.divui", "arith.remui"):
            u = _unsigned(op.operands[0].type)
            fn = "idiv" if name == "arith.divui" else "irem"
            self.define(op, f"{value_type(rtype)}({fn}<{u}>({args[0]}, {args[1]}))", local)
            return
        if name == "math.fpowi":
            base = value_type(op.operands[0].type)
            self.define(op, f"std::pow({args[0]}, {base}({args[1]}))", local)
            return
        if name in _UNARY:
            if name == "math.absi" and _key(op.operands[0].type) == "i1":
                self.define(op, args[0], local)
                return
            one = "1.0" if _key(rtype) == "f64" else "1.0f"
            text = _UNARY[name].format(a=args[0], one=one)
            self.define(op, f"{value_type(rtype)}({text})", local)
            return
        if name == "math.fma":
            self.define(op, f"std::fma({args[0]}, {args[1]}, {args[2]})", local)
            return
        if isinstance(op, arith.CmpfOp):
            pred = arith.CMPF_COMPARISON_OPERATIONS[op.predicate.value.data]
            self.define(op, _CMPF[pred].format(a=args[0], b=args[1]), local)
            return
        if isinstance(op, arith.CmpiOp):
            pred = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
            a, b = args
            if _key(op.operands[0].type) in ("index", "i64"):
                self.wide_compares += 1  # see _blocked
            if pred.startswith("u"):
                u = _unsigned(op.operands[0].type)
                a, b = f"{u}({a})", f"{u}({b})"
            self.define(op, f"({a} {_CMPI[pred]} {b})", local)
            return
        if isinstance(op, arith.SelectOp):
            c, a, b = args
            self.define(op, f"({c} ? {a} : {b})", local)
            return
        if isinstance(op, arith.TruncFOp):
            k = _key(rtype)
            if k == "bf16":
                self.define(op, f"bf16_round(float({args[0]}))", local)
                self.rounded[local[op.result]] = f"float({args[0]})"
            elif k == "f16":
                self.define(op, f"f16_round(float({args[0]}))", local)
                self.rounded[local[op.result]] = f"float({args[0]})"
            else:
                self.define(op, f"float({args[0]})", local)
            return
        if isinstance(op, arith.ExtFOp | arith.SIToFPOp | arith.FPToSIOp | arith.IndexCastOp):
            src = op.operands[0].type
            text = f"{value_type(rtype)}({args[0]})"
            if _key(rtype) == "i1":
                text = f"bool({args[0]})"
            if isinstance(op, arith.SIToFPOp) and _key(rtype) in ("bf16", "f16"):
                fn = "bf16_round" if _key(rtype) == "bf16" else "f16_round"
                text = f"{fn}(float({args[0]}))"
            if isinstance(op, arith.SIToFPOp) and _key(src) == "i1":
                text = f"{value_type(rtype)}({args[0]} ? -1 : 0)"
            self.define(op, text, local)
            return
        if isinstance(op, arith.ExtSIOp):
            src = op.operands[0].type
            text = (
                f"{value_type(rtype)}({args[0]} ? -1 : 0)"
                if _key(src) == "i1"
                else (f"{value_type(rtype)}({args[0]})")
            )
            self.define(op, text, local)
            return
        if isinstance(op, arith.TruncIOp):
            if _key(rtype) == "i1":
                self.define(op, f"bool({args[0]} & 1)", local)
            else:
                self.define(op, f"{value_type(rtype)}({args[0]})", local)
            return
        if isinstance(op, arith.ExtUIOp | arith.UIToFPOp):
            u = _unsigned(op.operands[0].type)
            src = f"{u}({args[0]})" if _key(op.operands[0].type) != "i1" else f"int({args[0]})"
            k = _key(rtype)
            if isinstance(op, arith.UIToFPOp) and k in ("bf16", "f16"):
                fn = "bf16_round" if k == "bf16" else "f16_round"
                self.define(op, f"{fn}(float({src}))", local)
            else:
                self.define(op, f"{value_type(rtype)}({src})", local)
            return
        raise CppUnsupported(f"{name}")

    def load(self, op: L.LoadOp, env: dict, local: dict) -> None:
        src = op.source
        if src in self.member_values:
            self._check_point(op, env, len(op.index.data))
            values = self.member_values[src]
            local[op.result] = values[0]
            self.invariant.add(values[0])
            return
        if src in self.row_stored:
            self._check_point(op, env, len(op.index.data))
            out = self.row_stored[src]
            n = self.n_outer
            names = [f"i{k}" for k in range(n)] + [f"r{j}" for j in range(len(op.index.data) - n)]
            addr = " + ".join(
                f"{v} * {cexpr(st, env)}" for v, st in zip(names, out.type.strides_attr.data)
            )
            ptr = self.names[out]
            if _key(out.type.element_type) == "bf16":
                read = f"bf16_load({ptr}[{addr or 0}])"
            else:
                read = f"{value_type(op.result.type)}({ptr}[{addr or 0}])"
            self.define(op, read, local)
            return
        if src in self.row_members:
            member = self.row_members[src]
            self._check_point(op, env, len(op.index.data))
            # Recompute the row member at this point (its symbols are the loops').
            renv = dict(env)
            value = self.row_value(member, renv)
            local[op.result] = value
            return
        if not isinstance(src.type, BufferType):
            raise CppUnsupported("a load of a tensor that is not a group member")
        lenv = dict(env)
        for k, v in enumerate(op.indirect):
            lenv[indirect_symbol(k)] = f"int64_t({self.value(v, local)})"
        mask = self.value(op.mask, local) if op.mask is not None else None
        index = list(op.index.data)
        if op.indirect:
            # Out-of-range indirect indices: flag (the wrapper raises) and read 0.
            checked = []
            shape = src.type.shape_attr.data
            for dim, e in enumerate(index):
                ivar = self.fresh("ix")
                self.emit(f"int64_t {ivar} = {cexpr(e, lenv)};")
                if any(str(s).startswith("t") for s in sympy.sympify(e).free_symbols):
                    ok = f"(uint64_t){ivar} < (uint64_t){cexpr(shape[dim], lenv)}"
                    guard = f"!({ok})" if mask is None else f"{mask} && !({ok})"
                    flag = "__atomic_store_n(&bad, 1, __ATOMIC_RELAXED)"
                    self.emit(f"if ({guard}) {{ {flag}; {ivar} = 0; }}")
                    self.checks_bounds = True
                checked.append(ivar)
            addr = (
                " + ".join(
                    f"{i} * {cexpr(s, lenv)}" for i, s in zip(checked, src.type.strides_attr.data)
                )
                or "0"
            )
        else:
            addr = self.address(src, index, lenv)
        ptr = self.names.get(src)
        if ptr is None:
            raise CppUnsupported("a load of a buffer that is not a kernel argument")
        k = _key(src.type.element_type)
        read = f"{value_type(op.result.type)}({ptr}[{addr}])"
        if k == "bf16":
            read = f"bf16_load({ptr}[{addr}])"
            if (
                self.in_row_member
                and self.row_flat is not None
                and not op.indirect
                and mask is None
                and ptr not in self.written
                and all(
                    sympy.sympify(e).free_symbols <= set(self._row_syms()) | set(self.symbols)
                    for e in index
                )
            ):
                read = f"{self._widen(read)}[{self.row_flat}]"
        if mask is not None:
            zero = "false" if k == "i1" else f"{value_type(op.result.type)}(0)"
            if not op.indirect:
                read = f"({mask} ? {read} : {zero})"
            else:
                read = f"({mask} ? {read} : {zero})"
        self.define(op, read, local)
        if (
            self.inner_var is not None
            and not op.indirect
            and mask is None
            and ptr not in self.written
            and all(
                sympy.sympify(e).free_symbols <= {self.inner_sym} | set(self.symbols) for e in index
            )
        ):
            self.inner_only.add(local[op.result])

    def _row_syms(self) -> list[sympy.Symbol]:
        """A row member's own symbols of the row's indices (``_row_env``: i(n+j) is
        r<j>)."""
        n = self.n_outer
        return [index_symbols(n + j + 1)[-1] for j in range(len(self.row_sizes))]

    def _widen(self, read: str) -> str:
        """The f32 array holding ``read`` (a narrow load indexed by r0 .. only) for
        every point of the row, filled once before the group's outer loop."""
        array = self.widened.get(read)
        if array is not None:
            return array
        array = self.widened[read] = f"wide{len(self.widened)}_{self.group_id}"
        self.array_types[array] = "float"
        at, depth = self.widen_at
        pad = "  " * depth
        sizes = self.row_sizes
        lines = [f"{pad}float {array}[{math.prod(sizes)}];"]
        for k, size in enumerate(sizes):
            if k == len(sizes) - 1:
                lines.append(f"{pad}{'  ' * k}#pragma omp simd")
            lines.append(f"{pad}{'  ' * k}for (int64_t r{k} = 0; r{k} < {size}L; ++r{k}) {{")
        lines.append(f"{pad}{'  ' * len(sizes)}{array}[{self.row_flat}] = {read};")
        lines += [f"{pad}{'  ' * k}}}" for k in range(len(sizes) - 1, -1, -1)]
        self.lines[at:at] = lines
        self.widen_at = (at + len(lines), depth)
        return array

    def _check_point(self, op: L.LoadOp, env: dict, rank: int) -> None:
        """A member is read at the current point only: its index names the loops
        (i0.. over the ranges, then r0.. for a row member)."""
        if op.indirect or op.mask is not None:
            raise CppUnsupported("an indirect or masked read of a group member")
        names = []
        for e in op.index.data:
            if not (isinstance(e, sympy.Symbol) and e in env):
                raise CppUnsupported(f"a group member read at {e}, not at the current point")
            names.append(env[e])
        n = self.n_outer
        want = [f"i{k}" for k in range(n)] + [f"r{j}" for j in range(rank - n)]
        if names != want:
            raise CppUnsupported("a group member read at another point than the current one")


def emit_kernel(fn: cpu.FuncOp) -> str:
    """One ``cpu.func`` as C++ (raises :class:`CppUnsupported`): printed once to
    find the costly values a later pass over a row would recompute, then again
    keeping each in a per-row array (``KernelPrinter.define``)."""
    first = KernelPrinter(fn)
    text = first.print()
    again = [k for k, (count, _, _) in first.seen.items() if count > 1]
    # A narrow read is not kept in a group that keeps a costly value: there the
    # later passes read that value (softmax's exp(x - max)) instead of
    # recomputing it from the read, and keeping x cost the 256x1024 bf16
    # softmax kernel 9 % (192 -> 210 and 208 -> 227 us, two processes; the
    # stores of the kept row in the max pass, for one pass that reads it).
    costly = {k[0] for k in again if not first.seen[k][2]}
    again = [k for k in again if not (first.seen[k][2] and k[0] in costly)]
    # Hoisted: the largest such values (read by values that vary otherwise, or
    # stored), not the steps that lead to them.
    hoistable = [(k, v) for k, v in first.hoistable.items() if v[2] in first.escaping]
    if not again and not hoistable:
        return text
    keep = {k: (f"row{n}", first.seen[k][1]) for n, k in enumerate(again)}
    hoist = {
        k: (f"pre{n}", ctype, lines, name) for n, (k, (ctype, lines, name)) in enumerate(hoistable)
    }
    return KernelPrinter(fn, keep, hoist).print()


def kernel_checks_bounds(fn: cpu.FuncOp) -> bool:
    printer = KernelPrinter(fn)
    printer.print()
    return printer.checks_bounds


_VECTOR_MATH = re.compile(
    r"(?:std::(?:exp|exp2|expm1|log|log2|log10|log1p|erf|tanh|sin|cos|pow)|coil_erf)\("
)
"""Calls that vectorize into glibc's libmvec variants (see PRELUDE)."""

HALF_WIDTH_OPEN = """#ifdef COIL_HALF_WIDTH_BF16
#pragma GCC push_options
#pragma GCC target("prefer-vector-width=128")
#endif"""
HALF_WIDTH_CLOSE = """#ifdef COIL_HALF_WIDTH_BF16
#pragma GCC pop_options
#endif"""


def half_width(text: str) -> bool:
    """Whether a kernel's text asks for 128-bit vectors where the CPU runs 256-bit
    ones as two halves (``COIL_HALF_WIDTH_BF16``, PRELUDE): it narrows floats
    to bf16 in its stores and calls no vector math.

    The evidence (AMD Zen 1, g++ 12, one thread, 256x1024, process CPU time,
    11 interleaved rounds): the bf16 LayerNorm kernel 383 us with 256-bit
    vectors, 330 us with 128-bit ones (its output pass's packs across the
    two halves, ``vpermq``, and split stores); the f32 LayerNorm kernel 124
    vs 140 and the bf16 softmax (exp: libmvec's 8-wide variant) 577 vs 595
    prefer 256, so only kernels of the first kind change."""
    return "bf16_store(" in text and _VECTOR_MATH.search(text) is None


def emit_cpp_kernels(module: ModuleOp) -> str:
    """Every ``cpu.func`` of ``module`` as one translation unit."""
    parts = [PRELUDE]
    for op in module.ops:
        if isinstance(op, cpu.FuncOp):
            text = emit_kernel(op)
            if half_width(text):
                text = f"{HALF_WIDTH_OPEN}\n{text}\n{HALF_WIDTH_CLOSE}"
            parts.append(text)
    return "\n\n".join(parts) + "\n"
