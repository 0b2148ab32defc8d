"""Matrix products: whether one runs as coil's Triton template or as ATen's
(cuBLAS), and the template's configs per shape class.

The template (``lowering/loop_to_tt/gemm.py``) is a ``tl.dot`` loop over K
with the consumer's pointwise chain applied to the accumulator before the
one store (Inductor's ``mm`` template with epilogue fusion,
``torch/_inductor/kernel/mm.py``); an extern product writes its result and a
second kernel reads it back for the bias, activation or cast. The template
pays where that round trip (and its launch) costs more than what the
template loses to cuBLAS's kernels on the product itself.

:func:`choose` is that comparison, on the roofline of ``strategy/cost.py``:
the product's time is the larger of its flops over the tensor cores' peak
and its bytes over the DRAM bandwidth; the template's is the same divided
by :data:`TEMPLATE_EFFICIENCY`; the extern adds the epilogue kernel (its
result read and the output written, plus a launch). On the CPU interpreter
the template never pays (Triton's interpreter is far slower than ATen):
"auto" stays extern there.

:func:`configs` gives the template's candidate tiles (block sizes, warps,
stages, group-M swizzle) for a shape class, the first being the
heuristic's choice; ``mode="max-autotune"`` times them
(``runtime/gemm_autotune.py``).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from coil.strategy.target import Target

GEMM_MODES = ("auto", "triton", "extern")
"""The backend option ``gemm`` / ``convert-aten-to-loop{gemm=...}``."""

# Dense tensor-core flops per SM per clock (16-bit inputs, f32 accumulation):
# the data sheets' dense BF16 peaks over SMs x boost clock (H100 SXM: 989.4
# TFLOPS / (132 x 1.83 GHz) = 4096; A100: 312 TFLOPS / (108 x 1.41 GHz) = 2048).
# F32 products without TF32 run on the FMA units: 128 FMAs (256 flops) per SM
# per clock on both.
TENSOR_FLOPS_PER_SM_CLOCK = {"a100": 2048}
DEFAULT_TENSOR_FLOPS_PER_SM_CLOCK = 4096
FMA_FLOPS_PER_SM_CLOCK = 256

TEMPLATE_EFFICIENCY = 0.2
"""The template's speed on the product relative to cuBLAS, from the one GPU
measurement there is (thirteenth session, an H200, ``benchmarks/gemm.py``):
GPT-2 (12 layers, bf16, 8 x 512) ran 7.43 ms with the default selection
picking the template for its products with epilogues (the first guess, 0.85,
made the estimate pick it for every Linear with a bias) and 7.69 ms with
``gemm=triton`` for all, against Inductor's 4.19 ms and coil's 3.6 ms with
cuBLAS in earlier runs: about 0.7 TFLOP of block products took some 4 ms
more, the template running at roughly a fifth of cuBLAS's rate. At 0.2 the
estimate keeps cuBLAS for every product of that model (a test pins it) and
picks the template only where the epilogue's round trip dwarfs the product;
``mode="max-autotune"`` measures instead of estimating. That run is not the
template's rate on a plain product: its GPT-2 had the tanh GELU inlined as
c_proj's prologue (recomputed 6 times per element in the K loop; no longer,
:func:`cheap_prologue`), and GPT-2's other template kernels compile for sm90
to Inductor's form (cp.async stages, async wgmma). ``benchmarks/gemm.py
--shapes`` measures the rate per product; until then the value stays."""

ESTIMATE_CHOOSES = False
"""Whether ``gemm=auto`` acts on the estimate without a measurement. Off: with
the one measured efficiency the estimate keeps cuBLAS for every product of
a transformer's blocks, but still picks the template for tiny products
(where it saves the epilogue's launch), a regime no GPU run has timed, and
there the extern path carries the GEMM padding and matvec lowerings the GPU
tests check. ``mode="max-autotune"`` times the template against cuBLAS per
product and acts on that; ``gemm="triton"`` forces it."""

MARGIN = 0.05
"""The template must win by this fraction of the extern's estimate."""


PROLOGUE_MAX_OPS = 4
"""Arithmetic ops a producer of a template's operand may have and still be
computed in the K loop (``loop-inline``), the *prologue*. The template
computes each operand tile once per output tile along the other side
(``N / BLOCK_N`` times for A), in registers between the asynchronous copy
and the tensor-core op, so per element the prologue's ops are repeated that
often while the product does ``2 * BLOCK_N`` flops at 16-32x the FMA units'
rate: a cast, a scale, a dequantizing multiply-add (<= 4 ops) hide under the
product; GPT-2's tanh GELU (11 ops and a tanh, per element 6 times at N = 768)
made the next Linear's kernel compute-bound on its prologue. Inductor allows a
prologue only when it reads no more bytes than it writes and needs no f32
upcast in a 16-bit template (``check_prologue_fusion_heuristics_fusable``),
and benchmarks it; the stored activation is instead the previous product's
epilogue."""


def cheap_prologue(compute_ops: int, math_ops: int) -> bool:
    """Whether a producer of ``compute_ops`` arithmetic ops (``math_ops`` of them
    transcendental: ``math.tanh``, ``math.erf``, ``math.exp``) may be computed
    in a template's K loop rather than stored (:data:`PROLOGUE_MAX_OPS`)."""
    return math_ops == 0 and compute_ops <= PROLOGUE_MAX_OPS


@dataclass(frozen=True)
class GemmShape:
    """What the choice and the configs depend on."""

    m: int
    n: int
    k: int
    batch: int = 1
    in_bytes: int = 2  # bytes per input element
    out_bytes: int = 2  # bytes per element the epilogue writes
    tensor_cores: bool = True  # 16-bit inputs, or f32 with TF32
    epilogue_reads: int = 0  # bytes per output element the epilogue reads besides the product


def peak_flops(target: Target, tensor_cores: bool) -> float:
    per_clock = (
        TENSOR_FLOPS_PER_SM_CLOCK.get(target.name, DEFAULT_TENSOR_FLOPS_PER_SM_CLOCK)
        if tensor_cores
        else FMA_FLOPS_PER_SM_CLOCK
    )
    return per_clock * target.num_sms * target.clock_hz


def product_seconds(s: GemmShape, target: Target, out_bytes: int) -> float:
    flops = 2.0 * s.batch * s.m * s.n * s.k
    nbytes = s.batch * ((s.m * s.k + s.k * s.n) * s.in_bytes + s.m * s.n * out_bytes)
    return max(flops / peak_flops(target, s.tensor_cores), nbytes / target.dram_bytes_per_s)


def extern_seconds(s: GemmShape, target: Target, epilogue: bool) -> float:
    """cuBLAS's product (written in its output dtype) and, with an epilogue, the
    pointwise kernel that reads it back."""
    t = product_seconds(s, target, s.in_bytes) + target.launch_s
    if epilogue:
        points = s.batch * s.m * s.n
        t += points * (s.in_bytes + s.out_bytes + s.epilogue_reads) / target.dram_bytes_per_s
        t += target.launch_s
    return t


def template_seconds(s: GemmShape, target: Target) -> float:
    extra = s.batch * s.m * s.n * s.epilogue_reads / target.dram_bytes_per_s
    return product_seconds(s, target, s.out_bytes) / TEMPLATE_EFFICIENCY + extra + target.launch_s


def choose(s: GemmShape, target: Target, epilogue: bool) -> tuple[bool, str]:
    """(template?, why): the default selection of ``gemm=auto``."""
    if target.serial:
        return False, "the CPU interpreter: ATen's product is faster"
    if not epilogue:
        return False, "no epilogue to fuse: cuBLAS's product alone"
    ext, tpl = extern_seconds(s, target, True), template_seconds(s, target)
    why = f"template {tpl * 1e6:.1f} us against extern + epilogue {ext * 1e6:.1f} us"
    if not ESTIMATE_CHOOSES:
        # The estimate is logged, not acted on: see ESTIMATE_CHOOSES.
        return False, f"{why}; cuBLAS until measured (mode='max-autotune' measures)"
    return tpl < ext * (1 - MARGIN), why


@dataclass(frozen=True)
class GemmConfig:
    """One template config (Inductor's ``GemmConfig``: mm_common/template_heuristics)."""

    block_m: int
    block_n: int
    block_k: int
    num_warps: int
    num_stages: int
    group_m: int = 8
    k_split: int = 1
    """Decompose-K: the product as ``k_split`` products over slices of K, one
    batch of the template, summed after (``aten_to_loop/gemm.py``)."""

    def summary(self) -> str:
        split = f", K split {self.k_split}" if self.k_split > 1 else ""
        return (
            f"[BLOCK_M {self.block_m}, BLOCK_N {self.block_n}, BLOCK_K {self.block_k}], "
            f"{self.num_warps} warps, {self.num_stages} stages, GROUP_M {self.group_m}{split}"
        )

    def key(self) -> str:
        """The ``gemm-config`` spelling (:func:`parse_gemm_config` reads it back)."""
        split = f"k{self.k_split}" if self.k_split > 1 else ""
        return (
            f"{self.block_m}x{self.block_n}x{self.block_k}w{self.num_warps}s{self.num_stages}"
            f"g{self.group_m}{split}"
        )


# Inductor's mm configs (template_heuristics/triton.py, ``mm_configs`` for
# CUDA, whose tuples are (BM, BN, BK, stages, warps); these are (BM, BN, BK,
# warps, stages)), the ones its heuristic keeps for these shape classes, the
# default first. For large 16-bit products on Hopper: the 128 x 256 tile in 4
# stages ("wins on Hopper-class matmul" there), 256 x 128, deeper pipelines
# (5 stages) and BK 128, as its max-autotune list and persistent list hold;
# :func:`configs` drops what would not fit the target's shared memory.
_LARGE = [
    GemmConfig(128, 128, 64, 8, 3),
    GemmConfig(128, 256, 64, 8, 4),
    GemmConfig(128, 128, 64, 4, 3),
    GemmConfig(128, 128, 64, 8, 5),
    GemmConfig(256, 128, 64, 8, 4),
    GemmConfig(128, 128, 128, 8, 3),
    GemmConfig(128, 256, 64, 8, 3),
    GemmConfig(128, 128, 32, 4, 4),
    GemmConfig(64, 128, 64, 4, 4),
    GemmConfig(128, 64, 64, 4, 4),
]
_MEDIUM = [
    GemmConfig(64, 128, 32, 4, 4),
    GemmConfig(64, 64, 64, 4, 3),
    GemmConfig(128, 64, 32, 4, 4),
    GemmConfig(64, 64, 32, 4, 2),
]
_SMALL = [
    GemmConfig(32, 32, 32, 4, 2),
    GemmConfig(16, 32, 64, 2, 2),
    GemmConfig(32, 64, 32, 4, 3),
    GemmConfig(16, 16, 64, 2, 2),
]


def smem_bytes(c: GemmConfig, in_bytes: int) -> int:
    """Shared memory the pipelined K loop holds: each stage's A and B tiles."""
    return (c.block_m * c.block_k + c.block_k * c.block_n) * in_bytes * c.num_stages


def _fit_smem(c: GemmConfig, in_bytes: int, target: Target) -> GemmConfig | None:
    """``c`` with fewer stages (not under 2) where its tiles would not fit the
    target's shared memory per block (Triton fails such a compile: out of
    resources), or None."""
    while smem_bytes(c, in_bytes) > target.smem_per_block:
        if c.num_stages <= 2:
            return None
        c = GemmConfig(c.block_m, c.block_n, c.block_k, c.num_warps, c.num_stages - 1, c.group_m)
    return c


def _fit(c: GemmConfig, s: GemmShape) -> GemmConfig:
    """Blocks no larger than the (power-of-two rounded) extents, at least 16
    (``tl.dot``'s minimum)."""

    def clamp(block: int, extent: int) -> int:
        p = 16
        while p < extent and p < block:
            p *= 2
        return max(16, min(block, p))

    bm, bn, bk = clamp(c.block_m, s.m), clamp(c.block_n, s.n), clamp(c.block_k, s.k)
    warps = c.num_warps if bm * bn >= 64 * 64 else min(c.num_warps, 4)
    if bm * bn <= 32 * 32:
        warps = min(warps, 2)
    return GemmConfig(bm, bn, bk, warps, c.num_stages, c.group_m)


def configs(s: GemmShape, target: Target) -> list[GemmConfig]:
    """Candidate configs for ``s``, the heuristic's choice first, distinct."""
    big = max(s.m, s.n)
    if s.m >= 256 and s.n >= 256:
        table = _LARGE
    elif big >= 64 and min(s.m, s.n) >= 32:
        table = _MEDIUM
    else:
        table = _SMALL
    out: list[GemmConfig] = []
    for c in table + _MEDIUM + _SMALL:
        f = _fit_smem(_fit(c, s), s.in_bytes, target)
        if f is not None and f not in out:
            out.append(f)
    splits = decompose_k_splits(s)
    if splits and out:
        # Skinny outputs over a long K: the slices' products, one batch of
        # the template, are candidates right after the default (Inductor's
        # decompose-K choices, timed by max-autotune, never the default).
        extra = []
        for split in splits:
            part = GemmShape(s.m, s.n, s.k // split, split, s.in_bytes, s.out_bytes)
            c = configs(part, target)[0]
            extra.append(dataclasses.replace(c, k_split=split))
        return [out[0], *extra, *out[1:]]
    if out and waves(out[0], s, target) < FEW_WAVES:
        # Few output tiles per SM: the last wave runs part full (GPT-2's
        # 4096 x 768 outputs are 192 tiles of 128 x 128 on 132 SMs, 1.45
        # waves), so the half-size tiles are timed among the first candidates
        # (max-autotune times MAX_CONFIGS of them), right after the default.
        half = [c for c in out[1:] if c.block_m * c.block_n * 2 == out[0].block_m * out[0].block_n]
        out = [out[0], *half, *(c for c in out[1:] if c not in half)]
    return out


DECOMPOSE_K_RATIO = 32
"""K must be this many times M and N for decompose-K candidates (Inductor's
``triton.decompose_k_threshold``)."""
MAX_K_SPLITS = 3


def decompose_k_splits(s: GemmShape) -> list[int]:
    """Decompose-K's split counts for ``s`` (Inductor's ``get_k_splits``): for a
    single product whose K is at least :data:`DECOMPOSE_K_RATIO` times M and N,
    the divisors d of K up to ``min(K // M, K // N)`` leaving slices of at
    least 128, those with power-of-two slices first, then multiples of 32;
    :data:`MAX_K_SPLITS` of them, largest slices first."""
    if s.batch != 1 or s.k < DECOMPOSE_K_RATIO * max(s.m, s.n):
        return []
    top = min(s.k // s.m, s.k // s.n)
    pow2, mul32 = [], []
    for d in range(2, top + 1):
        part = s.k // d
        if s.k % d or part < 128:
            continue
        if part & (part - 1) == 0:
            pow2.append(d)
        elif part % 32 == 0:
            mul32.append(d)
    return (pow2 + mul32)[:MAX_K_SPLITS]


FEW_WAVES = 3.0
"""Waves of output tiles (:func:`waves`) under which :func:`configs` puts the
half-size tiles right after the default: with W waves the last one idles up
to 1 / ceil(W) of the machine, a quarter or more under three."""


def waves(c: GemmConfig, s: GemmShape, target: Target) -> float:
    """Output tiles of ``c`` per SM (one program a tile, one program an SM)."""
    tiles = -(-s.m // c.block_m) * -(-s.n // c.block_n) * s.batch
    return tiles / max(1, target.num_sms)


_CONFIG = re.compile(r"^(\d+)x(\d+)x(\d+)(?:w(\d+))?(?:s(\d+))?(?:g(\d+))?(?:k(\d+))?$")


def parse_gemm_config(text: str) -> GemmConfig:
    """``"BMxBNxBK[wWARPS][sSTAGES][gGROUP_M][kSPLIT]"`` (``convert-loop-to-tt{gemm-config=...}``;
    the K split acts only where max-autotune chose it, at ``convert-aten-to-loop``)."""
    m = _CONFIG.match(text.strip())
    if m is None:
        raise ValueError(
            f"gemm-config must read BMxBNxBK[wWARPS][sSTAGES][gGROUP_M], e.g. 64x64x32w4s3g8, "
            f"not {text!r}"
        )
    bm, bn, bk = (int(m.group(k)) for k in (1, 2, 3))
    for name, v in (("BM", bm), ("BN", bn), ("BK", bk)):
        if v < 16 or v & (v - 1):
            raise ValueError(f"gemm-config: {name} must be a power of two >= 16, not {v}")
    warps, stages, group, split = (
        int(m.group(k)) if m.group(k) else d for k, d in ((4, 4), (5, 2), (6, 8), (7, 1))
    )
    if split < 1:
        raise ValueError(f"gemm-config: the K split must be >= 1, not {split}")
    return GemmConfig(bm, bn, bk, warps, stages, group, split)


def heuristic(s: GemmShape, target: Target) -> GemmConfig:
    return configs(s, target)[0]


__all__ = [
    "GEMM_MODES",
    "PROLOGUE_MAX_OPS",
    "cheap_prologue",
    "GemmConfig",
    "GemmShape",
    "choose",
    "configs",
    "heuristic",
    "parse_gemm_config",
    "decompose_k_splits",
    "smem_bytes",
    "waves",
]
