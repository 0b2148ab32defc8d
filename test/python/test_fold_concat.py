"""buffer-fold-concat end to end: bilinear upsamples (and a copied input) that a
concatenation reads are written straight into their slices of its buffer, on
odd sizes, non-integer scales, both align_corners, f32 and bf16, through the
C++ kernels and Triton's interpreter; the result matches eager and every
element of the concatenation is written (it is returned, so an unwritten
slice shows as the allocator's garbage)."""

from __future__ import annotations

import glob
import re

import pytest
import torch
import torch.nn.functional as F

from coil.testing import assert_close_to_eager


def _head(a, b, c, w, k, align):
    # A Linear's [B, HW, C] output viewed as an NCHW image (channels-last
    # strides), as SegFormer's decode head reads it, then upsampled.
    x = (
        F.linear(a.flatten(2).transpose(1, 2), w)
        .transpose(1, 2)
        .reshape(a.shape[0], -1, *a.shape[2:])
    )
    u = F.interpolate(x, size=(13, 11), mode="bilinear", align_corners=align)
    v = F.interpolate(b, scale_factor=1.7, mode="bilinear", align_corners=not align)[:, :, :13, :11]
    y = F.interpolate(x, scale_factor=2.7, mode="bilinear", align_corners=align)[:, :, 1:14, 2:13]
    cat = torch.cat([u, c, v, y], 1)
    return cat, F.conv2d(cat, k)


# Both CPU kernel kinds in f32 and bf16, each with a boolean option on and off.
KERNELS_DTYPES_FLAGS = [
    ("cpp", torch.float32, False),
    ("cpp", torch.bfloat16, True),
    ("triton", torch.float32, True),
    ("triton", torch.bfloat16, False),
]


def _inputs(dtype):
    g = torch.Generator().manual_seed(0)
    shapes = [(2, 5, 6, 5), (2, 3, 8, 7), (2, 4, 13, 11), (6, 5), (3, 19, 1, 1)]
    return [torch.randn(s, generator=g).to(dtype) for s in shapes]


@pytest.mark.parametrize(
    "kernels,dtype,align",
    KERNELS_DTYPES_FLAGS,
)
def test_upsamples_write_their_slices(tmp_path, kernels, dtype, align):
    args = _inputs(dtype)
    expected = _head(*args, align)
    exact = _head(*[t.double() for t in args], align)
    fn = torch.compile(
        lambda *t: _head(*t, align),
        backend="coil",
        options={"cpu_kernels": kernels, "dump_dir": str(tmp_path)},
    )
    got = fn(*args)
    assert_close_to_eager(got, expected)
    for a, e, r in zip(got, expected, exact):
        # No worse against float64 than eager's own error (plus rounding).
        ours = (a.double() - r).norm() / r.norm()
        eager = (e.double() - r).norm() / r.norm()
        assert ours <= 2 * eager + 1e-6, (ours, eager)
    (folded,) = glob.glob(f"{tmp_path}/graph_000/*-buffer-fold-concat.mlir")
    text = open(folded).read()
    # Three upsamples stored into slices; the input c copied by a restricted nest.
    assert text.count("= buffer.view %cat ") >= 3, text
    assert "loop.pointwise [2, 19, 13, 11] outs(%cat " not in text


# -- producers with other readers (issues 33, 36: GhostNet's peak memory) ------


class _Ghost(torch.nn.Module):
    """A ghost module: a 1x1 convolution's BN-ReLU half, a depthwise
    convolution of that half for the other, the two concatenated and read by a
    strided depthwise convolution (channels-last throughout)."""

    def __init__(self, both_read: bool = False):
        super().__init__()
        nn = torch.nn
        self.primary = nn.Sequential(nn.Conv2d(6, 5, 1, bias=False), nn.BatchNorm2d(5), nn.ReLU())
        self.cheap = nn.Sequential(
            nn.Conv2d(5, 5, 3, padding=1, groups=5, bias=False), nn.BatchNorm2d(5), nn.ReLU()
        )
        self.after = nn.Conv2d(10, 10, 3, stride=2, padding=1, groups=10, bias=False)
        self.side = nn.Conv2d(5, 3, 1) if both_read else None
        for m in self.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-1, 1)
                m.running_var.uniform_(0.5, 2)
                m.weight.data.uniform_(0.5, 2)
                m.bias.data.uniform_(-1, 1)

    def forward(self, x):
        a = self.primary(x)
        b = self.cheap(a)
        out = self.after(torch.cat([a, b], 1))
        if self.side is None:
            return out
        return out, self.side(b)


def _folded_ir(tmp_path) -> str:
    (folded,) = glob.glob(f"{tmp_path}/graph_000/*-buffer-fold-concat.mlir")
    return open(folded).read()


@pytest.mark.parametrize(
    "kernels,dtype,both_read",
    KERNELS_DTYPES_FLAGS,
)
def test_producer_read_by_convolution_writes_its_slice_too(tmp_path, kernels, dtype, both_read):
    # The first half is read by the depthwise convolution, which needs it dense
    # (its channel slice of the channels-last concatenation is not): its BN-ReLU
    # kernel stores it and its slice in one group, and the concatenation no
    # longer reads it. The second half (computed in the concatenation from the
    # convolution's result) is written by the concatenation restricted to its
    # slice; with both_read the second half is also stored for another
    # convolution and written beside its slice too.
    torch.manual_seed(0)
    model = _Ghost(both_read).eval().to(dtype)
    x = torch.randn(2, 6, 9, 7).to(dtype)
    with torch.no_grad():
        expected = model(x)
        fn = torch.compile(
            model, backend="coil", options={"cpu_kernels": kernels, "dump_dir": str(tmp_path)}
        )
        got = fn(x)
    assert_close_to_eager(got, expected)
    text = _folded_ir(tmp_path)
    groups = [line for line in text.splitlines() if "loop.fused" in line and "outs(%relu" in line]
    assert len(groups) == (2 if both_read else 1), text
    assert all("strides [630, 1, 70, 10]" in g for g in groups), groups  # the cat's NHWC slice
    assert "loop.pointwise [2, 10, 9, 7] outs(%cat " not in text


def _dim0(x, w1, w2, y):
    a = torch.relu(x) * 2
    c = F.conv2d(a, w1)
    return F.conv2d(torch.cat([a, y], 0), w2), c


@pytest.mark.parametrize("kernels", ["cpp", "triton"])
def test_convolution_reads_a_slice_with_its_own_strides(tmp_path, kernels):
    # Concatenated along the batch, the first input's slice has its own
    # (channels-last) strides: its producer writes the slice, and the
    # convolution that also reads it reads the slice; no buffer of its own.
    g = torch.Generator().manual_seed(0)
    shapes = [(2, 3, 6, 5), (4, 3, 1, 1), (5, 3, 3, 3), (1, 3, 6, 5)]
    args = [torch.randn(s, generator=g) for s in shapes]
    fn = torch.compile(
        _dim0, backend="coil", options={"cpu_kernels": kernels, "dump_dir": str(tmp_path)}
    )
    assert_close_to_eager(fn(*args), _dim0(*args))
    text = _folded_ir(tmp_path)
    view = re.search(r"(%\w+) = buffer\.view %cat : .* -> !buffer\.buffer<\[2, 3, 6, 5\]", text)
    assert view, text
    assert f'buffer.extern "aten.convolution.default" ({view.group(1)}, ' in text, text
    assert "loop.fused" not in text


def _extern_halves(x, w1, w2):
    return torch.cat([F.conv2d(x, w1), F.conv2d(x, w2, padding=1)], 1)


def test_extern_results_are_copied(tmp_path):
    # Convolution results are ATen's allocations: nothing to fold, the
    # concatenation stays one nest reading both.
    g = torch.Generator().manual_seed(0)
    args = [torch.randn(s, generator=g) for s in [(2, 3, 6, 5), (4, 3, 1, 1), (5, 3, 3, 3)]]
    fn = torch.compile(_extern_halves, backend="coil", options={"dump_dir": str(tmp_path)})
    assert_close_to_eager(fn(*args), _extern_halves(*args))
    text = _folded_ir(tmp_path)
    assert "= buffer.view %cat" not in text
    assert "loop.pointwise [2, 9, 6, 5] outs(%cat " in text
