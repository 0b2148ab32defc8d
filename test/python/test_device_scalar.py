"""``runtime/wrapper.device_scalar``: the device copy of a CPU 0-d input that GPU
kernels only read, made once per value (test/targets/python/cpu-scalar-input.mlir
has the wrapper's side). The ``meta`` device stands in for a GPU here."""

from __future__ import annotations

import math

import torch

from coil.runtime.wrapper import device_scalar


def test_one_copy_per_value():
    a = device_scalar(torch.tensor(math.pi, dtype=torch.float64), "meta")
    b = device_scalar(torch.tensor(math.pi, dtype=torch.float64), "meta")
    assert a.device.type == "meta" and a.dtype == torch.float64
    assert a is b  # a new CPU tensor of the same value: the kept copy
    assert device_scalar(torch.tensor(math.e, dtype=torch.float64), "meta") is not a
    assert device_scalar(torch.tensor(math.pi, dtype=torch.float32), "meta") is not a


def test_signed_zero_and_nan_are_their_own_values():
    zero = device_scalar(torch.tensor(0.0), "meta")
    assert device_scalar(torch.tensor(-0.0), "meta") is not zero
    nan = device_scalar(torch.tensor(float("nan")), "meta")
    assert device_scalar(torch.tensor(float("nan")), "meta") is nan


def test_a_tensor_already_off_the_cpu_is_passed_as_it_is():
    t = torch.empty((), device="meta")
    assert device_scalar(t, "meta") is t
