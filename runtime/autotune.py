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

Choices are also kept on disk, so a second process starts tuned (Inductor's
``.best_config`` files): ``<cache_dir>/autotune/<digest>.json``, where the
digest (printed by ``-t python``) hashes the candidate launches and the
kernels they run, and each entry inside is keyed by the sizes, the GPU's name
and the Triton version. A file that does not parse, or names a candidate that
is not there, is ignored (and rewritten after measuring); an unwritable cache
directory costs the codecache's one warning and nothing else.

All state lives on one object, :data:`AUTOTUNER` (the process-wide registry
of choices; tests may set its ``force`` to pick a candidate by index).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
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
        digest: str | None = None,
    ) -> None:
        if not candidates:
            raise ValueError(f"autotune {name}: no candidate launch")
        if self.force is not None:
            candidates[min(self.force, len(candidates) - 1)]()
            return
        if len(candidates) == 1 or not device.startswith("cuda"):
            candidates[0]()
            return
        # Two modules may both have a "coil_softmax_0": the digest tells them apart.
        label = name if digest is None else f"{name}#{digest}"
        key = (label, tuple(int(s) for s in sizes), device)
        choice = self.choices.get(key)
        if choice is None:
            choice = self._stored(digest, key, len(candidates))
        if choice is None:
            choice = self._measure(key, candidates)
            self._store(digest, key, choice)
        self.choices[key] = choice
        candidates[choice]()  # last: the outputs are the chosen launch's

    # ---- the on-disk choices ----

    def _file(self, digest: str) -> Path:
        from coil import config

        return config.cache_dir() / "autotune" / f"{digest}.json"

    @staticmethod
    def _entry(key: Key) -> str:
        import torch
        import triton

        _, sizes, device = key
        gpu = torch.cuda.get_device_name(torch.device(device))
        return f"{','.join(map(str, sizes))}|{gpu}|triton {triton.__version__}"

    def _read(self, digest: str) -> dict[str, Any]:
        try:
            data = json.loads(self._file(digest).read_text())
        except (OSError, ValueError):  # missing, unreadable or damaged: measure
            return {}
        return data if isinstance(data, dict) else {}

    def _stored(self, digest: str | None, key: Key, n: int) -> int | None:
        if digest is None:
            return None
        entry = self._read(digest).get(self._entry(key))
        choice = entry.get("choice") if isinstance(entry, dict) else None
        if isinstance(choice, int) and 0 <= choice < n:
            return choice
        return None

    def _store(self, digest: str | None, key: Key, choice: int) -> None:
        if digest is None:
            return
        from coil.runtime.codecache import warn_unwritable, write_atomic

        path = self._file(digest)
        data = self._read(digest)
        data[self._entry(key)] = {"choice": choice, "ms": self.timings.get(key)}
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, json.dumps(data, indent=1, sort_keys=True))
        except OSError as error:
            warn_unwritable(path.parent.parent, error)

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
    digest: str | None = None,
) -> None:
    """Run exactly one of ``candidates`` (see the module docstring)."""
    AUTOTUNER.run(name, sizes, candidates, device, digest)
