"""What a generated wrapper does per call, counted from its source (no GPU needed).

``python benchmarks/wrapper_census.py WRAPPER.py [OTHER.py ...]``: for each
``-t python`` module (a dump's ``wrapper.py``, ``fx-opt ... -t python`` output,
or the H200 wrapper of a CPU import re-stamped for CUDA), the host work of one
``call``, by kind, side by side:

* kernel launches, and those through a launcher that checks pointer alignment
  first (``checked=``: inputs, ATen results not known fresh, odd views);
* allocations, through the per-call bound allocator (``alloc_cuda0``) or the
  module's checking helper (``empty_cuda0``, a Python frame each);
* views (``reinterpret_tensor``), frees (``del`` statements), ATen calls through
  torch's public bindings (``torch.addmm`` ...) and through ``torch.ops``
  (an ``OpOverload.__call__`` frame each), the inputs checked, and whether a
  constants function (``buffer-hoist-constants``) is looked up.

A call's host time is roughly these counts times their unit costs (an H100
host's cProfile: ~1.6 us a view, ~3 us an allocation, ~5 us a launch's driver
call, 20-30 us a cuBLAS or cuDNN call, 40-80 us a cuDNN attention), so two
models, or two commits, compare here before any GPU time is spent.
"""

from __future__ import annotations

import re
import sys
from collections import Counter

_LAUNCHER = re.compile(r"^(\w+) = Launcher\(.*?\)$", re.M)
_CHECKED = re.compile(r"checked=\(")


def census(source: str) -> Counter:
    """The per-call counts of ``call`` in a ``-t python`` module's source."""
    start = source.find("\ndef call(args):")
    if start < 0:
        raise SystemExit("wrapper_census: no `def call(args):` (not a -t python module?)")
    body = source[start:]
    end = re.search(r"\n(?=\S)", body[1:])
    body = body[: end.start() + 1] if end else body
    checked = {m.group(1) for m in _LAUNCHER.finditer(source) if _CHECKED.search(m.group(0))}
    c: Counter = Counter()
    for line in body.splitlines():
        s = line.strip()
        if not s or s.startswith("#") or s.startswith("check_input("):
            continue
        launch = re.match(r"(\w+)\.run\(", s)
        if launch:
            c["launches"] += 1
            c["  checked launches"] += launch.group(1) in checked
            continue
        if s.startswith("del "):
            c["del statements"] += 1
            continue
        c["views (reinterpret_tensor)"] += s.count("reinterpret_tensor(")
        c["allocations, bound (alloc_*)"] += len(re.findall(r"= alloc_\w+\(\(", s))
        c["allocations, checking helper (empty_*)"] += len(re.findall(r"= empty_\w+\(\(", s))
        c["ATen calls, public bindings"] += len(
            re.findall(r"\btorch\.(?:addmm|mm|bmm|baddbmm|convolution)\(", s)
        )
        c["ATen calls, torch.ops"] += s.count("torch.ops.")
        c["constants lookups"] += s.count("_constants.get(")
    m = re.search(r"call takes (\d+) inputs", body)
    c["inputs"] = int(m.group(1)) if m else 0
    return c


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.splitlines()[2])
        return 2
    counts = [census(open(path).read()) for path in argv]
    keys = [k for k in counts[0]] + [k for c in counts[1:] for k in c if k not in counts[0]]
    width = max(len(k) for k in keys)
    print(f"{'':{width}}  " + "  ".join(f"{p[-28:]:>28}" for p in argv))
    for k in keys:
        print(f"{k:{width}}  " + "  ".join(f"{c[k]:>28}" for c in counts))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
