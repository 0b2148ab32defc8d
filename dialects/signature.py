"""What a compiled function's attributes say about its interface, written by
the importer and read by the targets and the runtime.

- ``coil.output_tree``: the structure of the outputs (nested tuples, lists,
  dicts) as a Python literal whose ints index the flat results
  (:func:`encode_output_tree`, :func:`decode_output_tree`);
- ``coil.aligned``: the inputs whose storage offset keeps them
  :data:`ALIGNMENT`-byte aligned (:func:`aligned_by_offset`), which the
  kernels may assume without a check.

It sits with the dialects, below every layer that reads or writes those
attributes (frontend, targets, runtime), and needs no torch: a value can be a
tensor only once torch is imported.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable, Sequence
from typing import Any

ALIGNMENT = 16
"""Bytes of alignment Triton's compiled kernels assume of every pointer."""


def aligned_by_offset(val: Any) -> bool:
    """A tensor whose storage offset keeps it 16-byte aligned (storages of the
    caching allocator start aligned): Inductor's ``tensor_is_aligned``."""
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(val, torch.Tensor):
        return False
    offset = val.storage_offset()
    return isinstance(offset, int) and offset * val.element_size() % ALIGNMENT == 0


def encode_output_tree(structure: Any, leaf: Callable[[Any], int]) -> str:
    """A Python literal of the output's shape: result ``i`` is ``i``, e.g.
    ``(0, [1, (2, None)], 3)``; namedtuples (torch.return_types) become tuples."""
    if structure is None:
        return "None"
    if isinstance(structure, tuple):
        items = [encode_output_tree(s, leaf) for s in structure]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if isinstance(structure, list):
        return "[" + ", ".join(encode_output_tree(s, leaf) for s in structure) + "]"
    if isinstance(structure, dict):
        return (
            "{"
            + ", ".join(f"{k!r}: {encode_output_tree(v, leaf)}" for k, v in structure.items())
            + "}"
        )
    return str(leaf(structure))


def decode_output_tree(tree: str, values: Sequence[Any]) -> Any:
    """Rebuild the output structure from ``encode_output_tree``'s text."""

    def rebuild(node: Any) -> Any:
        if isinstance(node, int):
            return values[node]
        if isinstance(node, tuple | list):
            return type(node)(rebuild(n) for n in node)
        if isinstance(node, dict):
            return {k: rebuild(v) for k, v in node.items()}
        return node

    return rebuild(ast.literal_eval(tree))
