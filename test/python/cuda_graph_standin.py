"""A CPU stand-in for CUDA's stream and graph API, for the tests of coil's
CUDA-graph runner (runtime/cudagraphs.py) on a machine without a GPU.

It keeps CUDA's contract: capturing executes nothing and keeps the work (a
graph function under capture hands its work to :meth:`CudaGraphStandIn.keep`),
a replay executes it. ``events`` records "capture", "captured" and "replay" in
order, for tests of what the runner does around a capture.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import pytest
import torch

from coil.runtime import cudagraphs as cg


class _Stream:
    def wait_stream(self, other: object) -> None:
        pass


class _Graph:
    def __init__(self, standin: CudaGraphStandIn) -> None:
        self.standin = standin
        self.work: Callable[[], object] | None = None

    def replay(self) -> None:
        self.standin.events.append("replay")
        if self.work is not None:
            self.work()


class CudaGraphStandIn:
    """Installs itself on ``torch.cuda`` (undone with ``monkeypatch``)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.capturing: list[_Graph] = []
        self.events: list[str] = []
        for name, value in {
            "Stream": lambda device=None: _Stream(),
            "current_stream": lambda device=None: _Stream(),
            "stream": lambda s: contextlib.nullcontext(),
            "graph": self._capture,
            "CUDAGraph": lambda: _Graph(self),
            "graph_pool_handle": lambda: object(),
        }.items():
            monkeypatch.setattr(torch.cuda, name, value, raising=False)
        monkeypatch.setattr(cg.CudaGraphRunner, "_unrecordable", lambda self, args: None)

    @contextlib.contextmanager
    def _capture(self, graph: _Graph, pool: object = None, stream: object = None) -> Iterator[None]:
        self.events.append("capture")
        self.capturing.append(graph)
        try:
            yield
        finally:
            self.capturing.pop()
            self.events.append("captured")

    def keep(self, work: Callable[[], object]) -> bool:
        """Under capture, keep ``work`` for the graph's replays and return True;
        otherwise False (the caller runs it now)."""
        if not self.capturing:
            return False
        self.capturing[-1].work = work
        return True
