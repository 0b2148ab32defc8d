"""buffer-fold-concat end to end: bilinear upsamples (and a copied input) that a
concatenation reads are written straight into their slices of its buffer, on
odd sizes, non-integer scales, both align_corners, f32 and bf16, through the
C++ kernels and Triton's interpreter; the result matches eager and every
element of the concatenation is written (it is returned, so an unwritten
slice shows as the allocator's garbage)."""

from __future__ import annotations

import glob

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


def _inputs(dtype):
    g = torch.Generator().manual_seed(0)
    shapes = [(2, 5, 6, 5), (2, 3, 8, 7), (2, 4, 13, 11), (6, 5), (3, 19, 1, 1)]
    return [torch.randn(s, generator=g).to(dtype) for s in shapes]


@pytest.mark.parametrize(
    "kernels,dtype,align",
    [
        ("cpp", torch.float32, False),
        ("cpp", torch.bfloat16, True),
        ("triton", torch.float32, True),
        ("triton", torch.bfloat16, False),
    ],
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
