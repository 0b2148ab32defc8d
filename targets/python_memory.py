"""Memory in the Python wrapper (``-t python``): allocations through the
module's per-device helpers (bound once per call on a GPU), views of buffers
(``reinterpret_tensor``, or the tensor itself where the layout is the same),
and which of those values are fresh (their storage starts at offset 0) and
16-byte aligned. A mixin of ``targets/python.HostPrinter``, whose naming state
(``define``, ``name``, ``expr``, ``fresh``, ``aligned``) it uses."""

from __future__ import annotations

from typing import Any

import sympy
import torch

from coil.dialects import host as H
from coil.dialects.symbolic import to_expr


class MemoryPrinter:
    """How ``host.empty_strided`` and ``host.reinterpret`` print (see ``HostPrinter``)."""

    def print_empty_strided(self, op: H.EmptyStridedOp) -> None:
        """``buf = alloc(sizes, strides, dtype)`` (a view into a larger one at an
        offset): a fresh buffer, aligned where its offset is."""
        t = op.result.type
        name = self.define(op.result)
        self.fresh.add(op.result)
        if aligned_offset(t.offset_attr.data, t.dtype):
            self.aligned.add(op.result)
        sizes, strides = self.exprs(t.shape_attr.data), self.exprs(t.strides_attr.data)
        # Every allocation goes through the one helper (tests poison it).
        allocate = self.local_allocator(t.device_attr.data)
        if to_expr(t.offset_attr.data) == 0:
            self.emit(f"{name} = {allocate}({sizes}, {strides}, {t.dtype})")
        else:
            numel = self.expr(t.storage_numel())
            self.emit(
                f"{name} = {allocate}(({numel},), (1,), {t.dtype})"
                f".as_strided({sizes}, {strides}, {self.expr(t.offset_attr.data)})"
            )

    def local_allocator(self, device: str) -> str:
        """The name to allocate on ``device`` with in the function being printed.
        On a GPU, the module's helper checks that the current device is
        ``device`` (a wrapper runs wherever its caller left the current device);
        the first allocation of a call binds, once, the function the rest of the
        call allocates through (``runtime.wrapper.current_allocator``: torch's
        C++ helper itself where the device is current), rather than a Python
        frame and a device query per allocation (81 a call in HF's Swin)."""
        helper = self.allocator(device)
        if device == "cpu":
            return helper  # torch's C++ helper itself: nothing to bind
        local = self.local_allocators.get(device)
        if local is None:
            local = self.fresh_name("alloc_" + device.replace(":", ""), "alloc")
            self.local_allocators[device] = local
            self.emit(f"{local} = current_allocator({helper})")
        return local

    def allocator(self, device: str) -> str:
        """The module-level name of ``device``'s allocation helper
        (``runtime.wrapper.empty_strided_on``), defined on first use."""
        if device not in self.allocators:
            name = self.fresh_name("empty_" + device.replace(":", ""), "empty")
            self.allocators[device] = name
            self.module_lines.append(f'{name} = empty_strided_on("{device}")')
        return self.allocators[device]

    def print_reinterpret(self, op: H.ReinterpretOp) -> None:
        """A view of a buffer at another layout or offset, or the tensor itself
        where nothing changes."""
        src, t = op.source, op.result.type
        src_name = self.name(src)
        name = self.define(op.result, "view")
        sizes, strides = self.exprs(t.shape_attr.data), self.exprs(t.strides_attr.data)
        offset = to_expr(t.offset_attr.data)
        if src in self.fresh:
            # Storage of a fresh allocation starts at 0: the type's offset is absolute.
            self.fresh.add(op.result)
            if aligned_offset(offset, t.dtype):
                self.aligned.add(op.result)
        # Offsets in types count from where the root starts (an input or ATen
        # result may start anywhere in its storage): the view moves the
        # source's own offset by the difference.
        delta = sympy.expand(offset - to_expr(src.type.offset_attr.data))
        if src not in self.fresh and src in self.aligned and aligned_offset(delta, t.dtype):
            self.aligned.add(op.result)  # an aligned input moved by whole 16 bytes
        if (
            delta == 0
            and t.shape_attr == src.type.shape_attr
            and t.strides_attr == src.type.strides_attr
        ):
            # The same layout (a kernel writing its result over its input's
            # buffer): the tensor itself, not a new view (a view costs ~1.4 us
            # of host time a call).
            if src in self.aligned:
                self.aligned.add(op.result)
            self.emit(f"{name} = {src_name}")
            return
        self.emit(
            f"{name} = reinterpret_tensor({src_name}, {sizes}, {strides}, {self.expr(delta)})"
        )


def aligned_offset(offset: Any, dtype: torch.dtype) -> bool:
    """Whether ``offset`` elements of ``dtype`` are a multiple of 16 bytes for every
    value of the size symbols in it."""
    e = sympy.expand(to_expr(offset) * dtype.itemsize)
    if e.is_Integer:
        return int(e) % 16 == 0
    poly = e.as_poly() if e.free_symbols else None
    return poly is not None and all(c.is_Integer and int(c) % 16 == 0 for c in poly.coeffs())
