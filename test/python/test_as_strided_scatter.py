"""as_strided_scatter, which AOTAutograd writes for the gradient of a view it
replays with as_strided (timm ConvNeXt's pooled features in training): a dense
row-major window of a contiguous input decomposes to a cat (frontend/
decompositions.py), and the as_strided of the forward's keepdim mean lowers to
an index map (aten_to_loop/views.py): the training step calls no ATen op."""

from __future__ import annotations

import copy
import logging

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from coil.frontend.decompositions import _as_strided_scatter
from coil.testing import assert_close_to_eager


@pytest.mark.parametrize(
    "base, size, stride, offset",
    [
        ((1536,), (2, 768), (768, 1), 0),  # the whole base (ConvNeXt's case)
        ((40,), (3, 4), (4, 1), 5),  # a block inside, pieces on both sides
        ((6, 5), (2, 1, 7), (7, 3, 1), 16),  # a size-1 dim with any stride
        ((12,), (3, 4), (4, 1), 0),  # a prefix
    ],
)
def test_dense_window_matches_aten(base, size, stride, offset):
    x = torch.randn(base)
    src = torch.randn(size)
    got = _as_strided_scatter(x, src, list(size), list(stride), offset)
    want = torch.as_strided_scatter(x, src, size, stride, offset)
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    assert got.data_ptr() not in (x.data_ptr(), src.data_ptr())


@pytest.mark.parametrize(
    "base, size, stride",
    [((12,), (3, 4), (1, 3)), ((12,), (2, 3), (6, 1))],  # transposed; gaps
)
def test_other_windows_stay_aten(base, size, stride):
    assert _as_strided_scatter(torch.randn(base), torch.randn(size), size, stride) is NotImplemented
    transposed = torch.randn(4, 3).t()
    assert _as_strided_scatter(transposed, torch.randn(12), [12], [1]) is NotImplemented


class _PooledHead(nn.Module):
    """ConvNeXt's tail: an NHWC Linear (channels-last strides after the permute
    back), adaptive average pooling to 1x1, a LayerNorm over channels through
    permutes, flatten, the classifier."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.mlp = nn.Linear(8, 8)
        self.norm = nn.LayerNorm(8)
        self.fc = nn.Linear(8, 5)

    def forward(self, x):
        x = self.mlp(self.conv(x).permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        x = F.adaptive_avg_pool2d(x, 1)
        x = self.norm(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        return self.fc(x.flatten(1)).sum()


def test_pooled_head_trains_without_aten_calls(caplog):
    from coil.lowering import convert_aten_to_loop

    convert_aten_to_loop._reported.clear()  # the fallback log is once per process
    torch.manual_seed(0)
    model = _PooledHead()
    eager = copy.deepcopy(model)
    x = torch.randn(2, 3, 7, 9)
    compiled = torch.compile(model, backend="coil", options={"fallback": "error"})
    with caplog.at_level(logging.WARNING, logger="coil"):
        compiled(x).backward()
    eager(x).backward()
    assert not [r for r in caplog.records if "no loop lowering" in r.getMessage()]
    for p, q in zip(model.parameters(), eager.parameters()):
        assert_close_to_eager(p.grad, q.grad)
