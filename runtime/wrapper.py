"""What generated host modules import at run time: ``cdiv``, ``CoilInputError``,
``check_input``.

Kept tiny and cheap: ``check_input`` runs on every input of every call, so the
common case (everything matches) is a handful of comparisons and messages are
only built on failure.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import torch

__all__ = ["CoilInputError", "cdiv", "check_input"]


class CoilInputError(ValueError):
    """An input of a compiled function does not match what it was compiled for."""


def cdiv(a: int, b: int) -> int:
    """Ceiling division of integers (``b > 0``)."""
    return -(a // -b)


@functools.cache
def _device_key(device: str | torch.device) -> tuple[str, int]:
    # "cuda" means the device index 0, as the compiler writes it.
    d = torch.device(device)
    return d.type, d.index or 0


def check_input(
    name: str,
    t: object,
    sizes: Sequence[int],
    strides: Sequence[int],
    dtype: torch.dtype,
    device: str,
) -> None:
    """Raise :class:`CoilInputError` unless ``t`` is a tensor with these sizes,
    strides (dimensions of size 1 are not compared), dtype and device."""
    if not isinstance(t, torch.Tensor):
        raise CoilInputError(f"input {name}: expected a tensor, got {type(t).__name__}")
    got = tuple(t.shape)
    if got != tuple(sizes):
        raise CoilInputError(f"input {name}: expected size {tuple(sizes)}, got {got}")
    got_strides = t.stride()
    if got_strides != tuple(strides) and any(
        n != 1 and a != b for n, a, b in zip(got, got_strides, strides, strict=True)
    ):
        raise CoilInputError(
            f"input {name}: expected strides {tuple(strides)}, got {got_strides}"
            " (dimensions of size 1 are not compared)"
        )
    if t.dtype != dtype:
        raise CoilInputError(f"input {name}: expected dtype {dtype}, got {t.dtype}")
    if _device_key(t.device) != _device_key(device):
        raise CoilInputError(f"input {name}: expected device {device}, got {t.device}")
