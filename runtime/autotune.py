"""Run one of a nest's candidate launches: what a generated ``host.autotune`` calls.

``-t python`` prints ``host.autotune "coil_softmax_0" {...}`` as::

    autotune("coil_softmax_0", (s0, s1), [
        lambda: coil_softmax_0_c0[(g0, 1, 1)](arg0, buf0, s0, s1, num_warps=4, num_stages=1),
        lambda: coil_softmax_0_c1[(g1, 1, 1)](arg0, buf0, s0, s1, num_warps=8, num_stages=1),
    ], device="cuda:0")

The first candidate is the compiler's heuristic config. On a CUDA device the
first call for a key (the kernel name, the evaluated size symbols and the
device) times every candidate with ``triton.testing.do_bench`` and remembers
the fastest; later calls with that key run it directly. On the CPU (Triton's
interpreter, where times mean nothing) or with one candidate, the first one
runs untimed. The chosen launch always runs last, so the outputs are its own.

All state lives on one object, :data:`AUTOTUNER` (the process-wide registry
of choices; tests may set its ``force`` to pick a candidate by index).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

__all__ = ["AUTOTUNER", "Autotuner", "autotune"]

Key = tuple[str, tuple[int, ...], str]


@dataclass
class Autotuner:
    """The choices made in this process, by key, and how they were made.

    ``choices``: key -> index of the fastest candidate. ``timings``: key -> the
    measured milliseconds of each candidate. ``force``: when not ``None``, run
    candidate ``min(force, len - 1)`` untimed and remember nothing (tests use it
    to run every candidate of every kernel).
    """

    warmup_ms: int = 5
    rep_ms: int = 20
    force: int | None = None
    choices: dict[Key, int] = field(default_factory=dict)
    timings: dict[Key, list[float]] = field(default_factory=dict)

    def run(
        self,
        name: str,
        sizes: Sequence[Hashable],
        candidates: Sequence[Callable[[], Any]],
        device: str = "cpu",
    ) -> None:
        if not candidates:
            raise ValueError(f"autotune {name}: no candidate launch")
        if self.force is not None:
            candidates[min(self.force, len(candidates) - 1)]()
            return
        if len(candidates) == 1 or not device.startswith("cuda"):
            candidates[0]()
            return
        key = (name, tuple(int(s) for s in sizes), device)
        choice = self.choices.get(key)
        if choice is None:
            choice = self.choices[key] = self._measure(key, candidates)
        candidates[choice]()  # last: the outputs are the chosen launch's

    def _measure(self, key: Key, candidates: Sequence[Callable[[], Any]]) -> int:
        from triton.testing import do_bench

        times = [
            float(do_bench(c, warmup=self.warmup_ms, rep=self.rep_ms, return_mode="median"))
            for c in candidates
        ]
        self.timings[key] = times
        return min(range(len(times)), key=times.__getitem__)

    @contextmanager
    def forced(self, index: int):
        """Within the block every autotuned launch runs candidate ``index`` (or the last)."""
        previous, self.force = self.force, index
        try:
            yield self
        finally:
            self.force = previous

    def clear(self) -> None:
        self.choices.clear()
        self.timings.clear()


AUTOTUNER = Autotuner()


def autotune(
    name: str,
    sizes: Sequence[Hashable],
    candidates: Sequence[Callable[[], Any]],
    device: str = "cpu",
) -> None:
    """Run exactly one of ``candidates`` (see the module docstring)."""
    AUTOTUNER.run(name, sizes, candidates, device)
