"""Convolution nets on channels-last tensors (transforms/aten_channels_last.py)
and convolution biases peeled into the next kernel (aten_peel_conv_bias.py):
the results match eager in eager's strides, on the CPU with both passes
forced on (ATen's CPU convolutions) and on the GPU under the default rules.
The IR is in test/transforms/aten-channels-last.mlir and aten-peel-conv-bias.mlir."""

from __future__ import annotations

import re

import pytest
import torch

from coil.pipeline import PIPELINES
from coil.testing import assert_close_to_eager

FORCED = (
    PIPELINES["default"]
    .replace("aten-channels-last", "aten-channels-last{mode=on}")
    .replace("aten-peel-conv-bias", "aten-peel-conv-bias{all-devices=true}")
)


class Block(torch.nn.Module):
    """conv-BN-ReLU, a residual add, a depthwise conv and a ConvNeXt-style MLP
    on permuted activations: the layouts a conv net mixes."""

    def __init__(self, c: int):
        super().__init__()
        self.conv = torch.nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn = torch.nn.BatchNorm2d(c)
        self.dw = torch.nn.Conv2d(c, c, 5, padding=2, groups=c)
        self.ln = torch.nn.LayerNorm(c)
        self.fc1 = torch.nn.Linear(c, 2 * c)
        self.fc2 = torch.nn.Linear(2 * c, c)

    def forward(self, x):
        y = torch.relu(self.bn(self.conv(x)) + x)
        z = self.dw(y).permute(0, 2, 3, 1)
        z = self.fc2(torch.nn.functional.gelu(self.fc1(self.ln(z))))
        return y + z.permute(0, 3, 1, 2)


class Net(torch.nn.Module):
    def __init__(self, c: int = 12):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, c, 3, stride=2, padding=1)
        self.block = Block(c)
        self.down = torch.nn.Conv2d(c, 2 * c, 2, stride=2)
        self.head = torch.nn.Linear(2 * c, 5)

    def forward(self, x):
        feats = self.down(self.block(self.stem(x)))
        return self.head(feats.mean((2, 3))), feats, feats.flatten(1)


def _check(model, x, pipeline, tmp_path=None, tol=None):
    options = {"pipeline": pipeline, "fallback": "error", "cache": False}
    if tmp_path is not None:
        options["dump_dir"] = str(tmp_path)
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="coil", options=options)
    with torch.no_grad():
        got, want = compiled(x), model(x)
    for g, w in zip(got, want):
        if tol is None:
            assert_close_to_eager(g, w)
        else:
            torch.testing.assert_close(g, w, **tol)
        assert g.stride() == w.stride()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_forced_on_the_cpu_matches_eager(dtype, tmp_path):
    torch.manual_seed(0)
    model = Net().eval().to(dtype)
    x = torch.randn(2, 3, 17, 15, dtype=dtype)  # odd sizes
    # bf16: the peeled bias is added after the convolution's rounding (as
    # ATen's cuDNN path does); the CPU's oneDNN adds it before.
    tol = dict(rtol=2e-2, atol=2e-2) if dtype == torch.bfloat16 else None
    _check(model, x, FORCED, tmp_path, tol)
    wrapper = next(tmp_path.glob("*/wrapper.py")).read_text()
    # The convolutions run on NHWC copies of the image and weights, without bias.
    assert "(2, 3, 17, 15), (765, 1, 45, 3)" in wrapper  # the image, NHWC
    assert wrapper.count("torch.convolution(") == 4
    assert wrapper.count(", None, [") == 4  # no bias argument


def test_forced_on_symbolic_sizes(tmp_path):
    """dynamic=True: batch and image sizes are symbols, the NHWC strides
    symbolic expressions; one compile serves three sizes, each matching eager
    in eager's strides, and the convolutions run on NHWC copies."""
    torch.manual_seed(0)
    model = Net().eval()
    options = {"pipeline": FORCED, "fallback": "error", "cache": False, "dump_dir": str(tmp_path)}
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="coil", options=options, dynamic=True)
    with torch.no_grad():
        for shape in [(2, 3, 17, 15), (3, 3, 20, 22), (4, 3, 9, 13)]:
            x = torch.randn(shape)
            for g, w in zip(compiled(x), model(x)):
                assert_close_to_eager(g, w)
                assert g.stride() == w.stride()
    graphs = list(tmp_path.glob("*/wrapper.py"))
    assert len(graphs) == 1, "one compile for every size"
    assert graphs[0].read_text().count("torch.convolution(") == 4
    mlir = next(tmp_path.glob("*/*-aten-channels-last*.mlir")).read_text()
    assert mlir.count("memory_format = channels_last") >= 4


def test_forced_on_a_strided_input(tmp_path):
    torch.manual_seed(0)
    model = Net().eval()
    x = torch.randn(2, 15, 17, 3).permute(0, 3, 2, 1)  # an NHWC-like, transposed view
    _check(model, x, FORCED)


class Stem(torch.nn.Module):
    """ResNet's stem and first 1x1 convolution: conv-BN-ReLU, max pool."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 16, 7, 2, 3, bias=False)
        self.bn = torch.nn.BatchNorm2d(16)
        self.pool = torch.nn.MaxPool2d(3, 2, 1)
        self.next = torch.nn.Conv2d(16, 8, 1, bias=False)

    def forward(self, x):
        return (self.next(self.pool(torch.relu(self.bn(self.conv(x))))),)


@pytest.mark.parametrize("batch", [1, 2])
def test_pool_writes_what_the_next_convolution_reads(batch, tmp_path):
    # At batch 1 loop-fuse drops the pool group's unit batch range and views the
    # result back to 4-D: the NHWC layout the convolution wants must reach the
    # group through that view, or the pool writes NCHW and a kernel copies it.
    torch.manual_seed(0)
    _check(Stem().eval(), torch.randn(batch, 3, 33, 29), FORCED, tmp_path)
    wrapper = next(tmp_path.glob("*/wrapper.py")).read_text()
    pool = next(line for line in wrapper.splitlines() if "max_pool2d_with_indices = empty" in line)
    assert pool.endswith(", 128, 16), torch.float32)")  # H, W strides of NHWC (C = 16)
    assert "to_nhwc" not in wrapper.split("max_pool2d_with_indices = empty")[1]


class Heads(torch.nn.Module):
    """The channels-last kernels the model sweep found slow: a max pool read by a
    concatenation (not by a convolution), a squeeze-excite mean over H*W of a
    stored activation, and a one-group GroupNorm (PoolFormer's) over NHWC."""

    def __init__(self, c: int = 16):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, c, 3, padding=1)
        self.branch = torch.nn.Conv2d(c, c, 3, stride=2, padding=1)
        self.mix = torch.nn.Conv2d(2 * c, c, 1)
        self.fc = torch.nn.Conv2d(c, c, 1)
        self.gn = torch.nn.GroupNorm(1, c)

    def forward(self, x):
        y = torch.nn.functional.silu(self.conv(x))
        s = y.mean((2, 3), keepdim=True)  # squeeze-excite
        y = y * torch.sigmoid(self.fc(s))
        pool = torch.nn.functional.max_pool2d(y, 3, 2, ceil_mode=True)
        z = self.mix(torch.cat([pool, self.branch(y)], 1))
        return (self.gn(z) + z,)


def test_channels_last_reductions_read_along_the_channels(tmp_path):
    # Layouts are known when the split is decided (transforms/loop_layout.py):
    # the activation the mean reads is stored NHWC, so the mean is an outer
    # reduction over 64*64 points, split in chunks of rows; the pool reads
    # NHWC and so writes NHWC (no copy before the concatenation's convolution);
    # the group norm's statistics walk (H, W, C), C innermost.
    torch.manual_seed(0)
    _check(Heads().eval(), torch.randn(2, 3, 64, 64), FORCED, tmp_path)
    stages = sorted(tmp_path.glob("*/*.mlir"))
    split = next(p for p in stages if "loop-split-reduction" in p.name).read_text()
    # The mean's stage 1: [chunks, N, C] over rows of the image, as partials.
    assert re.search(r"loop.reduction sum \[\d+, 2, 16, 1, 1\] \[\d+", split), split
    wrapper = next(tmp_path.glob("*/wrapper.py")).read_text()
    # The pool writes its slice of the NHWC concatenation (buffer-fold-concat):
    # channels 0..16 of 32, C innermost.
    pool = next(line for line in wrapper.splitlines() if "max_pool2d_with_indices = " in line)
    assert pool.endswith("= reinterpret_tensor(cat, (2, 16, 32, 32), (32768, 1, 1024, 32), 0)"), (
        pool
    )
    # Group norm: consecutive points of the flattened (C, H, W) differ in C.
    stats = next(line for line in split.splitlines() if "loop.load" in line and "mod 16" in line)
    assert stats


@pytest.mark.parametrize("batch", [1, 2])
def test_default_rules_run_cpu_inference_channels_last(batch, tmp_path):
    """Inductor's CPU rule (oneDNN present): an inference graph's convolutions
    run channels-last; the outputs keep eager's strides."""
    if not (torch.backends.mkldnn.enabled and torch.backends.mkldnn.is_available()):
        pytest.skip("needs oneDNN (mkldnn)")
    torch.manual_seed(0)
    model = Net().eval()
    _check(model, torch.randn(batch, 3, 16, 16), PIPELINES["default"], tmp_path)
    wrapper = next(tmp_path.glob("*/wrapper.py")).read_text()
    # CPU: the biases stay in the convolutions (the block's has none).
    assert wrapper.count(", None, [") == 1
    assert "channels_last" in next(tmp_path.glob("*/*-aten-channels-last*.mlir")).read_text()


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_inference_graphs_on_the_gpu_run_channels_last(dtype, tmp_path):
    torch.manual_seed(0)
    model = Net(32).eval().to("cuda", dtype)
    x = torch.randn(4, 3, 33, 31, device="cuda", dtype=dtype)
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="coil", options={"dump_dir": str(tmp_path)})
    # cuDNN picks other algorithms for NHWC; with TF32 (its f32 default) two
    # algorithms differ at ~1e-3, more than f32's tolerance.
    with torch.no_grad(), torch.backends.cudnn.flags(enabled=True, allow_tf32=False):
        got, want = compiled(x), model(x)
    for g, w in zip(got, want):
        assert_close_to_eager(g, w)
        assert g.stride() == w.stride()
    (ir,) = tmp_path.glob("*/*-aten-channels-last*.mlir")
    assert "memory_format = channels_last" in ir.read_text()
