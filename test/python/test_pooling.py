"""max_pool2d_with_indices lowered to a window max and argmax
(lowering/aten_to_loop/pooling.py): values and indices equal eager's on the
CPU (Triton's interpreter), with padding, strides, dilation, ceil_mode, a NaN,
bf16 and a channels-last input; nothing falls back to ATen. Windows whose real
elements are all -inf, and windows with two NaNs, get ATen's indices too."""

from __future__ import annotations

import pytest
import torch


@pytest.mark.parametrize(
    "kernel, stride, padding, dilation, ceil_mode, shape, dtype, channels_last",
    [
        (3, 2, 1, 1, False, (2, 3, 9, 11), torch.float32, False),
        (2, 2, 0, 1, True, (1, 2, 7, 7), torch.bfloat16, True),
        (3, 1, 1, 2, False, (2, 2, 8, 6), torch.float32, True),
        ((3, 2), (2, 1), (1, 0), 1, True, (1, 3, 10, 9), torch.float32, False),
    ],
)
def test_max_pool2d_with_indices(
    kernel, stride, padding, dilation, ceil_mode, shape, dtype, channels_last
):
    def f(x):
        return torch.nn.functional.max_pool2d(
            x, kernel, stride, padding, dilation, ceil_mode=ceil_mode, return_indices=True
        )

    torch.manual_seed(0)
    x = torch.randn(*shape, dtype=dtype)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    x[0, 0, 0, 0] = float("nan")  # a NaN is the window's maximum, as in eager
    # Two NaNs in one window: ATen's loop keeps the last it meets.
    x[0, 1, 2, 2] = x[0, 1, 2, 3] = float("nan")
    # A plane of -inf: ATen gives each window's first in-bounds point, never a
    # padding point (whose flat index would be negative or past the row).
    x[-1, -1] = float("-inf")
    torch._dynamo.reset()
    compiled = torch.compile(f, backend="coil", options={"fallback": "error", "cache": False})
    (got, got_index), (want, want_index) = compiled(x), f(x)
    torch.testing.assert_close(got, want, equal_nan=True)
    assert torch.equal(got_index, want_index)
