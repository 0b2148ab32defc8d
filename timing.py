"""Where a compile spends its time: per-stage timing and progress on long compiles.

:class:`CompileTrace` follows one graph's compile through its stages (``import``,
``cache-lookup``, each pass by its spec, ``verify``, ``emit``, ``load``,
``cache-store``). Two outputs, both on stderr:

* ``COIL_LOG=timing`` (:func:`coil.config.log_timing`): when the graph is done,
  one table of the seconds each stage took, with the cache outcome::

      coil timing: graph 0 (forward): 3.84 s, cache miss (no entry)
           0.179 s  import
           0.586 s  canonicalize
           ...

* progress: once the compile has run ``progress`` seconds (default 5,
  ``COIL_PROGRESS`` or the backend option ``progress``; 0 turns it off), one
  line per stage saying what it is doing -- the stage running at that moment
  (a watchdog thread notices a single long stage), then each stage as it
  begins. A fast compile prints nothing.

The graph numbers count this process's compiled graphs (a counter, like
Inductor's graph ids; it decides nothing).
"""

from __future__ import annotations

import itertools
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

_graph_numbers = itertools.count()


def next_graph_label(kind: str | None = None) -> str:
    """``"graph N"`` (``"graph N (forward)"``) with this process's next graph number."""
    n = next(_graph_numbers)
    return f"graph {n}" + (f" ({kind})" if kind else "")


class CompileTrace:
    """One graph's compile: its stages' seconds and the progress lines.

    Use as a context manager around the whole compile; :meth:`begin` starts a
    stage (ending the one before), :meth:`end` ends it, :meth:`stage` wraps a
    block. ``progress_after`` is in seconds (``None``: no progress lines).
    """

    def __init__(
        self,
        label: str,
        *,
        timing: bool = False,
        progress_after: float | None = None,
        stream: TextIO | None = None,
    ) -> None:
        self.label = label
        self.timing = timing
        self.progress_after = progress_after
        self.stream = stream
        self.stages: list[tuple[str, float]] = []
        self.outcome = ""
        self._current: str | None = None
        self._since = 0.0
        self._start = 0.0
        self._announced: set[int] = set()  # indices of stages already announced
        self._lock = threading.Lock()
        self._watchdog: threading.Timer | None = None
        self._done = False

    # ---- lifetime ------------------------------------------------------------

    def __enter__(self) -> CompileTrace:
        self._start = time.perf_counter()
        if self.progress_after is not None:
            # A thread, because one stage alone may run far past the threshold.
            self._watchdog = threading.Timer(self.progress_after, self._announce_current)
            self._watchdog.daemon = True
            self._watchdog.start()
        return self

    def __exit__(self, kind, error, tb) -> None:
        self.end()
        with self._lock:
            self._done = True
        if self._watchdog is not None:
            self._watchdog.cancel()
        if error is not None and not self.outcome:
            self.outcome = f"failed ({type(error).__name__})"
        if self.timing:
            self._write(self.report())

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self._start

    # ---- stages --------------------------------------------------------------

    def begin(self, name: str) -> None:
        """Start stage ``name`` (ending the current one)."""
        self.end()
        with self._lock:
            self._current = name
            self._since = time.perf_counter()
        if self.progress_after is not None and self.elapsed >= self.progress_after:
            self._announce_current()

    def end(self) -> None:
        """End the current stage, if any, and record its seconds."""
        with self._lock:
            if self._current is None:
                return
            self.stages.append((self._current, time.perf_counter() - self._since))
            self._current = None

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        self.begin(name)
        try:
            yield
        finally:
            self.end()

    # ---- output --------------------------------------------------------------

    def report(self) -> str:
        """The timing table: a header line, then one line per stage in order."""
        total = sum(seconds for _, seconds in self.stages)
        outcome = f", {self.outcome}" if self.outcome else ""
        lines = [f"coil timing: {self.label}: {total:.2f} s{outcome}"]
        lines += [f"  {seconds:8.3f} s  {name}" for name, seconds in self.stages]
        return "\n".join(lines) + "\n"

    def _announce_current(self) -> None:
        # Written under the lock: the watchdog and the compiling thread never
        # print one stage twice or two stages out of order.
        with self._lock:
            index = len(self.stages)
            if self._done or self._current is None or index in self._announced:
                return
            self._announced.add(index)
            self._write(f"coil: {self.label}: {self._current} ({self.elapsed:.1f} s so far)\n")

    def _write(self, text: str) -> None:
        stream = self.stream or sys.stderr
        stream.write(text)
        stream.flush()
