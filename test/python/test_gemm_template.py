"""Matrix products as ``tt.dot`` templates (``lowering/aten_to_loop/gemm.py``,
``lowering/loop_to_tt/gemm.py``): with ``gemm=triton`` every product is one
Triton kernel with its epilogue (bias, activation, residual add, cast) and
prologue (a cast or scale of an operand) fused, no ATen call; the kernels run
under Triton's interpreter here. Odd sizes (masks at every edge, K not a
multiple of BLOCK_K), transposed, sliced and broadcast operands, batched
products, f32/f16/bf16. Fresh signed random inputs each case; operands
scaled by 1/sqrt(K) so outputs are near 1. Each result is checked against
eager elementwise and against a float64 reference: coil's relative error may
not exceed twice eager's own (plus f32's epsilon)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import coil
from coil.backend import run_pipeline
from coil.dialects import buffer as B
from coil.dialects import host
from coil.pipeline import PIPELINES
from coil.runtime.codecache import load_module
from coil.targets.python import emit_python
from coil.testing import assert_close_to_eager

DEFAULT = PIPELINES["default"]
TRITON = DEFAULT.replace("convert-aten-to-loop,", "convert-aten-to-loop{gemm=triton},")


def _compile(fn, args, pipeline=TRITON):
    module = coil.import_module(fn, args)
    run_pipeline(module, pipeline)
    launches = [op for op in module.walk() if isinstance(op, host.LaunchOp)]
    externs = [op for op in module.walk() if isinstance(op, host.ExternOp | B.ExternOp)]
    source = emit_python(module)
    return load_module(source, interpret=True), launches, externs, source


def _rand(*shape, dtype=torch.float32, scale=1.0):
    return (torch.randn(*shape) * scale).to(dtype)


def _rel(a, ref):
    return ((a.double() - ref).norm() / ref.norm()).item()


def _check(fn, make_args, kernels=1, reference=True):
    args = make_args()
    mod, launches, externs, source = _compile(fn, args)
    assert not externs, "a product stayed an ATen call"
    assert len(launches) == kernels
    assert source.count("tl.dot(") >= 1
    for _ in range(2):  # fresh inputs per call
        args = make_args()
        out = mod.call([a.clone() for a in args])[0]
        expected = fn(*args)
        assert_close_to_eager(out, expected)
        if not reference:  # fn casts inside: no float64 form
            continue
        ref = fn(*[a.double() if a.is_floating_point() else a for a in args])
        eps = torch.finfo(torch.float32).eps
        assert _rel(out, ref) <= 2 * _rel(expected, ref) + 4 * eps
    return source


DTYPES = [torch.float32, torch.float16, torch.bfloat16]
IDS = ["f32", "f16", "bf16"]


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_linear_gelu_is_one_kernel(dtype):
    def fn(x, w, b):
        return F.gelu(F.linear(x, w, b))

    k = 37
    source = _check(
        fn,
        lambda: [
            _rand(19, k, dtype=dtype),
            _rand(23, k, dtype=dtype, scale=k**-0.5),
            _rand(23, dtype=dtype),
        ],
    )
    kernel = source.split("@triton.jit")[1]
    # GELU once, after the K loop, on the accumulator.
    assert kernel.count("tl.erf(") == 1 and kernel.index("tl.dot(") < kernel.index("tl.erf(")


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_mm_odd_sizes_and_layouts(dtype):
    k = 45

    def plain(a, b):
        return a @ b

    def transposed(a, b):  # both operands read through transposes
        return a.t() @ b.t()

    def sliced(a, b):  # a strided column slice, an offset row slice
        return a[:, ::2] @ b[3:]

    _check(plain, lambda: [_rand(17, k, dtype=dtype), _rand(k, 33, dtype=dtype, scale=k**-0.5)])
    _check(
        transposed, lambda: [_rand(k, 17, dtype=dtype), _rand(33, k, dtype=dtype, scale=k**-0.5)]
    )
    _check(
        sliced,
        lambda: [_rand(17, 2 * k, dtype=dtype), _rand(k + 3, 9, dtype=dtype, scale=k**-0.5)],
    )


def test_dynamic_sizes():
    # Every size symbolic (rows, K, N): the operands' rows and columns wrapped
    # by a symbol (rm % s), the K loop to a symbolic bound, B's pointers
    # advanced by a symbolic stride; one compile, several shapes.
    def fn(x, w, b):
        return torch.relu(x @ w + b)

    module = coil.import_module(fn, [_rand(13, 24), _rand(24, 40), _rand(40)], dynamic=True)
    run_pipeline(module, TRITON)
    source = emit_python(module)
    assert "rm_wrapped" in source and "b_ptrs_2 = b_ptrs_1 +" in source
    mod = load_module(source, interpret=True)
    for rows, k, n in ((13, 24, 40), (37, 50, 7), (5, 70, 64)):
        args = [_rand(rows, k), _rand(k, n, scale=k**-0.5), _rand(n)]
        out = mod.call([rows, k, args[0].clone(), n, args[1].clone(), args[2].clone()])[0]
        assert_close_to_eager(out, fn(*args))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
def test_bmm_and_broadcast_matmul(dtype):
    k = 21

    def bmm(a, b):
        return torch.bmm(a, b)

    def broadcast(a, w):  # [B, S, K] @ [K, N]: one product over B*S rows
        return torch.relu(a @ w)

    def batched4(a, b):  # [2, 3, M, K] @ [2, 3, K, N]: batch dims flattened
        return a @ b

    _check(bmm, lambda: [_rand(3, 13, k, dtype=dtype), _rand(3, k, 18, dtype=dtype, scale=k**-0.5)])
    _check(
        broadcast, lambda: [_rand(2, 5, k, dtype=dtype), _rand(k, 19, dtype=dtype, scale=k**-0.5)]
    )
    _check(
        batched4,
        lambda: [_rand(2, 3, 9, k, dtype=dtype), _rand(2, 3, k, 7, dtype=dtype, scale=k**-0.5)],
    )


def test_epilogue_kinds():
    k = 29

    def residual(x, w, b, r):  # bias, activation, residual add: one kernel
        return torch.relu(F.linear(x, w, b)) + r

    def cast(x, w):  # an f32 product stored as bf16 in the epilogue
        return (x @ w).to(torch.bfloat16)

    def addmm_scaled(c, a, b):  # addmm's beta and alpha
        return torch.addmm(c, a, b, beta=0.5, alpha=2.0)

    def baddbmm(c, a, b):
        return torch.baddbmm(c, a, b)

    _check(
        residual,
        lambda: [_rand(11, k), _rand(14, k, scale=k**-0.5), _rand(14), _rand(11, 14)],
    )
    _check(cast, lambda: [_rand(11, k), _rand(k, 14, scale=k**-0.5)])
    _check(addmm_scaled, lambda: [_rand(11, 14), _rand(11, k), _rand(k, 14, scale=k**-0.5)])
    _check(baddbmm, lambda: [_rand(2, 5, 6), _rand(2, 5, k), _rand(2, k, 6, scale=k**-0.5)])


def test_prologue_cast_and_scale():
    k = 33

    def fn(x, w):  # the f32 activation scaled and cast to bf16 inside the kernel
        return (x * 0.5).to(torch.bfloat16) @ w

    source = _check(
        fn,
        lambda: [_rand(10, k), _rand(k, 12, dtype=torch.bfloat16, scale=k**-0.5)],
        reference=False,
    )
    kernel = source.split("@triton.jit")[1]
    # The scale and cast are applied to the A tile inside the K loop.
    loop = kernel[kernel.index("for k0") :]
    assert "0.5" in loop and "tl.bfloat16" in loop


def test_default_stays_extern_on_the_cpu():
    x, w = _rand(8, 16), _rand(16, 8)
    _, launches, externs, _ = _compile(lambda x, w: torch.relu(x @ w), [x, w], DEFAULT)
    assert len(externs) == 1
    off = DEFAULT.replace("convert-aten-to-loop,", "convert-aten-to-loop{gemm=extern},")
    _, launches, externs, _ = _compile(lambda x, w: torch.relu(x @ w), [x, w], off)
    assert len(externs) == 1


def test_backend_option():
    torch._dynamo.reset()
    model = torch.nn.Sequential(torch.nn.Linear(24, 40), torch.nn.GELU())
    x = torch.randn(6, 24)
    compiled = torch.compile(model, backend="coil", options={"gemm": "triton", "cache": False})
    assert_close_to_eager(compiled(x), model(x))
    with pytest.raises(Exception, match="option gemm must be one of 'auto', 'triton'"):
        torch.compile(model, backend="coil", options={"gemm": "cublas"})(x)


def test_autotune_candidates_and_forced_config():
    from coil.strategy.gemm import parse_gemm_config

    k = 64
    fn = lambda a, b: a @ b  # noqa: E731
    args = [_rand(64, k), _rand(k, 64)]
    tuned = TRITON.replace("convert-loop-to-tt,", "convert-loop-to-tt{gemm-autotune=3},")
    module = coil.import_module(fn, args)
    run_pipeline(module, tuned)
    (tune,) = [op for op in module.walk() if isinstance(op, host.AutotuneOp)]
    assert len(tune.launches) == 3
    forced = TRITON.replace(
        "convert-loop-to-tt,", 'convert-loop-to-tt{gemm-config="32x16x16w2s3g4"},'
    )
    mod, _, _, source = _compile(fn, args, forced)
    assert "[BLOCK_M 32, BLOCK_N 16, BLOCK_K 16], 2 warps, 3 stages, GROUP_M 4" in source
    assert_close_to_eager(mod.call([a.clone() for a in args])[0], fn(*args))
    with pytest.raises(ValueError, match="BMxBNxBK"):
        parse_gemm_config("64x64")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
def test_conv1x1_is_a_template(dtype):
    c = 12

    def block(x, w, b, r):  # 1x1 conv + bias + residual + ReLU: one kernel
        return torch.relu(F.conv2d(x, w, b) + r)

    _check(
        block,
        lambda: [
            _rand(2, c, 5, 3, dtype=dtype),
            _rand(7, c, 1, 1, dtype=dtype, scale=c**-0.5),
            _rand(7, dtype=dtype),
            _rand(2, 7, 5, 3, dtype=dtype),
        ],
    )
    # Channels-last input: the pixels' rows read along C.
    _check(
        lambda x, w: F.conv2d(x, w),
        lambda: [
            _rand(2, c, 4, 3, dtype=dtype).to(memory_format=torch.channels_last),
            _rand(5, c, 1, 1, dtype=dtype, scale=c**-0.5),
        ],
    )

    # A bottleneck's downsampling shortcut: stride 2 over odd spatial sizes
    # (7x5 -> 4x3), a folded batch norm's per-channel scale and shift, the
    # residual and ReLU, channels-last and not: one kernel.
    def shortcut(x, w, scale, shift, r):
        y = F.conv2d(x, w, stride=2) * scale[:, None, None] + shift[:, None, None]
        return torch.relu(y + r)

    for fmt in (torch.channels_last, torch.contiguous_format):
        _check(
            shortcut,
            lambda fmt=fmt: [
                _rand(2, c, 7, 5, dtype=dtype).to(memory_format=fmt),
                _rand(9, c, 1, 1, dtype=dtype, scale=c**-0.5).to(memory_format=fmt),
                _rand(9, dtype=dtype),
                _rand(9, dtype=dtype),
                _rand(2, 9, 4, 3, dtype=dtype),
            ],
        )


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
def test_depthwise_conv_is_a_reduction(dtype):
    # groups == C_in == C_out: one reduction over the 3x3 window (padding
    # masked to 0), its folded batch norm, residual and ReLU in the same
    # kernel; stride 2 over odd sizes channels-last, and stride 1 dilated
    # contiguous.
    c = 6

    def block(x, w, scale, shift, r):
        y = F.conv2d(x, w, stride=2, padding=1, groups=c)
        return torch.relu(y * scale[:, None, None] + shift[:, None, None] + r)

    def dilated(x, w, b):
        return F.conv2d(x, w, b, padding=2, dilation=2, groups=c)

    for fn, make in (
        (
            block,
            lambda: [
                _rand(2, c, 7, 5, dtype=dtype).to(memory_format=torch.channels_last),
                _rand(c, 1, 3, 3, dtype=dtype, scale=1 / 3),
                _rand(c, dtype=dtype),
                _rand(c, dtype=dtype),
                _rand(2, c, 4, 3, dtype=dtype),
            ],
        ),
        (
            dilated,
            lambda: [
                _rand(2, c, 5, 6, dtype=dtype),
                _rand(c, 1, 3, 3, dtype=dtype, scale=1 / 3),
                _rand(c, dtype=dtype),
            ],
        ),
    ):
        args = make()
        mod, launches, externs, _ = _compile(fn, args)
        assert not externs and len(launches) == 1
        for _ in range(2):
            args = make()
            assert_close_to_eager(mod.call([a.clone() for a in args])[0], fn(*args))
    # The default (and gemm=extern) keeps cuDNN's.
    _, _, externs, _ = _compile(block, _dw_args(c), DEFAULT)
    assert len(externs) == 1


def _dw_args(c):
    return [
        _rand(2, c, 7, 5),
        _rand(c, 1, 3, 3),
        _rand(c),
        _rand(c),
        _rand(2, c, 4, 3),
    ]


def test_other_convolutions_stay_cudnn():
    x, w = _rand(1, 4, 5, 5), _rand(3, 4, 1, 1)
    for fn in (
        lambda x, w: F.conv2d(x, w, padding=1),
        lambda x, w: F.conv2d(x, w, dilation=2, padding=2),
    ):
        _, launches, externs, _ = _compile(fn, [x, w])
        assert len(externs) == 1
    _, _, externs, _ = _compile(lambda x, w: F.conv2d(x, w), [x, _rand(3, 4, 3, 3)])
    assert len(externs) == 1


@pytest.mark.parametrize(
    "m,n,k",
    [(4096, 2304, 768), (4096, 768, 768), (4096, 3072, 768), (4096, 768, 3072), (16, 1003, 64)],
)
def test_auto_keeps_cublas_on_a_gpu(m, n, k):
    # The template ran at about a fifth of cuBLAS's rate on the GPU
    # (strategy/gemm.py TEMPLATE_EFFICIENCY): GPT-2's block products (bf16,
    # 8 x 512 rows, a bias or a GELU after) stay with cuBLAS under gemm=auto,
    # and so does a tiny product, where the estimate alone would take the
    # template to save a launch (ESTIMATE_CHOOSES: no run has measured it).
    from coil.strategy import gemm as G
    from coil.strategy.target import TARGETS

    shape = G.GemmShape(m=m, n=n, k=k, epilogue_reads=2)
    for target in ("h100", "h200"):
        chosen, why = G.choose(shape, TARGETS[target], epilogue=True)
        assert not chosen, why


def test_configs_fit_shared_memory():
    # Every candidate's pipelined tiles fit the target's shared memory (a
    # config that does not fails Triton's compile): f32 operands get fewer
    # stages or are dropped; the large 16-bit class offers Hopper's 128 x 256
    # and 256 x 128 tiles and deeper pipelines after the default.
    from coil.strategy import gemm as G
    from coil.strategy.target import TARGETS

    h100 = TARGETS["h100"]
    for in_bytes in (2, 4):
        shape = G.GemmShape(m=4096, n=2304, k=768, in_bytes=in_bytes)
        cfgs = G.configs(shape, h100)
        assert cfgs[0] == G.heuristic(shape, h100)
        assert len(set(cfgs)) == len(cfgs)
        assert all(G.smem_bytes(c, in_bytes) <= h100.smem_per_block for c in cfgs)
    keys = [c.key() for c in G.configs(G.GemmShape(m=4096, n=2304, k=768), h100)]
    assert keys[0] == "128x128x64w8s3g8"
    assert {"128x256x64w8s4g8", "256x128x64w8s4g8", "128x128x64w8s5g8"} <= set(keys)
    f32 = [c.key() for c in G.configs(G.GemmShape(m=4096, n=2304, k=768, in_bytes=4), h100)]
    assert "128x256x64w8s4g8" not in f32 and "128x256x64w8s2g8" in f32


def test_few_waves_time_half_tiles():
    # GPT-2's 4096 x 768 outputs are 1.45 waves of 128 x 128 tiles on an H100:
    # the half-size tiles are among the candidates max-autotune times.
    from coil.runtime.gemm_autotune import MAX_CONFIGS
    from coil.strategy import gemm as G
    from coil.strategy.target import TARGETS

    h100 = TARGETS["h100"]
    narrow = G.GemmShape(m=4096, n=768, k=3072)
    first = G.configs(narrow, h100)[:MAX_CONFIGS]
    assert G.waves(first[0], narrow, h100) < G.FEW_WAVES
    assert {(c.block_m, c.block_n) for c in first[1:3]} == {(64, 128), (128, 64)}
    wide = G.GemmShape(m=4096, n=50257, k=768)
    assert G.configs(wide, h100)[1].key() == "128x256x64w8s4g8"


def test_decompose_k_splits():
    # Inductor's rule: K >= 32 M and 32 N, slices of >= 128, power-of-two
    # slices first; never for a transformer's block products.
    from coil.strategy import gemm as G
    from coil.strategy.target import TARGETS

    assert G.decompose_k_splits(G.GemmShape(m=4096, n=768, k=3072)) == []
    assert G.decompose_k_splits(G.GemmShape(m=64, n=64, k=8192)) == [2, 4, 8]
    # 640 = 5 x 128 (a power-of-two slice) first, then slices of 320 and 160
    assert G.decompose_k_splits(G.GemmShape(m=16, n=16, k=640)) == [5, 2, 4]
    cfgs = G.configs(G.GemmShape(m=64, n=64, k=8192), TARGETS["h100"])
    assert cfgs[0].k_split == 1 and [c.k_split for c in cfgs[1:4]] == [2, 4, 8]
    assert G.parse_gemm_config(cfgs[2].key()) == cfgs[2]
