"""``coil.testing.difference``: what the correctness checks of the tests and
benchmarks accept as eager's answer."""

import torch

from coil.testing import difference


def _sum_with_error(x: torch.Tensor, error: float) -> torch.Tensor:
    return (x.double().sum(0) + error).float()


def test_a_cancelling_sum_is_judged_by_its_rms_error_against_float64():
    # sum02 of test_split_finish: 32 sums of 32768 terms. One result off by
    # eager's own rounding there plus 4e-5 is beyond rtol * |result|
    # elementwise (the smallest result is about 0.2), but the RMS error over
    # the 32 is below eager's.
    torch.manual_seed(0)
    x = torch.randn(32768, 32)
    ref = x.double().sum(0)
    eager = x.sum(0)
    small = int(ref.abs().argmin())
    got = ref.float().clone()
    got[small] = float(ref[small] + (eager.double() - ref).abs()[small] + 4e-5)
    assert not torch.allclose(got, eager, rtol=1.3e-5, atol=1e-5)
    assert difference(got, eager, ref) is None


def test_stale_values_are_a_difference():
    torch.manual_seed(0)
    x = torch.randn(4096, 64)
    stale = torch.randn(4096, 64).sum(0)
    assert "values differ" in difference(stale, x.sum(0), x.double().sum(0))
    # one element off by far more than eager's rounding
    got = x.sum(0).clone()
    got[3] += 1.0
    assert "values differ" in difference(got, x.sum(0), x.double().sum(0))
    # one element of a large tensor off by 1e-3: below eager's RMS error once
    # averaged over a million elements, but a thousand times eager's worst
    y = torch.randn(1000, 1000)
    got = y.clone()
    got[5, 5] += 1e-3
    assert "values differ" in difference(got, y, y.double())


def test_non_finite_values_must_match_the_reference():
    e = torch.tensor([1.0, float("inf"), float("nan")])
    assert difference(e.clone(), e, e.double()) is None
    got = torch.tensor([1.0, 5.0, float("nan")])
    assert difference(got, e, e.double()) is not None
