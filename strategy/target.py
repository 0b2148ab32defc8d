"""The device kernels are planned for: read from the GPU, or a named description.

A :class:`Target` holds what the cost model (``cost.py``) needs: the SM count,
L2 and shared memory sizes, the threads, blocks and registers an SM holds, the
DRAM bandwidth and load latency, the clock, the cost of a launch. It is read
from ``torch.cuda.get_device_properties`` where the graph runs on a GPU
(:func:`read_cuda`; the bandwidth from the memory clock and bus width, as
``torch.cuda._device_limits`` computes it), or taken by name from
:data:`TARGETS` (``fx-opt --device=a100``, the backend option ``target``).

The module carries its target as the attribute ``coil.target`` (a dictionary of
the properties, like MLIR's DLTI target descriptions), set by the backend right
after import: every property is in the imported IR's text, which the graph
cache hashes, so a graph compiled for an H100 is never reused on an A100
(``runtime/graphcache.py``), and a dump's ``000-import.mlir`` replays with the
same plans on a machine without a GPU. A module without the attribute plans
for :data:`DEFAULT_GPU` when its tensors are on a CUDA device and for
``cpu-interpreter`` otherwise.

``cpu-interpreter`` is the default GPU's description run by Triton's
interpreter, which executes programs one after another: plans keep the GPU's
splits and tiles (the CPU tests check the kernels a GPU would run) but never
cut work into more programs only to occupy more SMs (``serial``).

The latencies and launch costs are not device properties CUDA reports; they
are per-architecture figures: ~600 ns for a load that misses L2 on Hopper and
~550 ns on Ampere (public pointer-chase microbenchmarks put an idle miss at
450-550 ns; a loaded machine adds to it), and ~2 us between dependent
launches (benchmarks/RESULTS.md: coil's mean gap between kernels on an H100
was 1.5 us, plus the ramp of the next grid).
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

from xdsl.dialects.builtin import (
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    f64,
    i64,
)
from xdsl.ir import Attribute

ATTR = "coil.target"
"""The module attribute holding the target's properties."""


@dataclass(frozen=True)
class Target:
    """What the cost model knows of a device (sizes in bytes, rates per second)."""

    name: str
    num_sms: int
    l2_bytes: int
    smem_per_sm: int
    smem_per_block: int
    max_threads_per_sm: int
    max_blocks_per_sm: int
    regs_per_sm: int
    warp_size: int
    dram_bytes_per_s: float
    clock_hz: float
    dram_latency_s: float
    launch_s: float
    serial: bool = False
    """Programs run one after another (Triton's interpreter): no work is cut
    into more programs for occupancy."""
    capability: int = 0
    """The CUDA compute capability as ``10 * major + minor`` (90: Hopper); 0 where
    unknown or not a GPU. Features of an architecture ask it (programmatic
    dependent launch needs 90: ``lowering/loop_to_tt/pdl.py``)."""

    # -- the module attribute ---------------------------------------------------

    def to_attr(self) -> DictionaryAttr:
        entries: dict[str, Attribute] = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if isinstance(v, bool):
                entries[f.name] = IntegerAttr(int(v), i64)
            elif isinstance(v, int):
                entries[f.name] = IntegerAttr(v, i64)
            elif isinstance(v, float):
                entries[f.name] = FloatAttr(v, f64)
            else:
                entries[f.name] = StringAttr(str(v))
        return DictionaryAttr(entries)

    @classmethod
    def from_attr(cls, attr: Attribute) -> Target:
        if not isinstance(attr, DictionaryAttr):
            raise ValueError(f"{ATTR} must be a dictionary of the target's properties, not {attr}")
        values = {}
        for f in dataclasses.fields(cls):
            held = attr.data.get(f.name)
            if held is None:
                if f.name in ("serial", "capability"):  # defaulted fields
                    continue
                raise ValueError(f"{ATTR} lacks the property {f.name!r}")
            if isinstance(held, StringAttr):
                values[f.name] = held.data
            elif isinstance(held, IntegerAttr):
                v = held.value.data
                values[f.name] = bool(v) if f.name == "serial" else int(v)
            elif isinstance(held, FloatAttr):
                values[f.name] = float(held.value.data)
            else:
                raise ValueError(f"{ATTR}: property {f.name!r} is {held}, not a number or string")
        for name in ("dram_bytes_per_s", "clock_hz", "dram_latency_s", "launch_s"):
            values[name] = float(values[name])
        return cls(**values)

    @property
    def pdl(self) -> bool:
        """Kernels may be launched with programmatic dependent launch: a CUDA
        GPU of compute capability 9.0 or later (not Triton's interpreter, whose
        programs run on the CPU and which has no grid dependency control)."""
        return self.capability >= 90 and not self.serial

    def summary(self) -> str:
        """One line for plans and logs."""
        return (
            f"{self.name}: {self.num_sms} SMs, {self.dram_bytes_per_s / 1e12:.2f} TB/s, "
            f"L2 {self.l2_bytes >> 20} MiB{', serial' if self.serial else ''}"
        )


# Named descriptions (NVIDIA's data sheets; the SXM parts). Reading the device
# replaces every field CUDA reports; these serve fx-opt without a GPU and tests.
_H100 = Target(
    name="h100",
    num_sms=132,
    l2_bytes=50 << 20,
    smem_per_sm=228 << 10,
    smem_per_block=227 << 10,
    max_threads_per_sm=2048,
    max_blocks_per_sm=32,
    regs_per_sm=65536,
    warp_size=32,
    dram_bytes_per_s=3.35e12,
    clock_hz=1.98e9,
    dram_latency_s=600e-9,
    launch_s=2e-6,
    capability=90,
)
TARGETS: dict[str, Target] = {
    "h100": _H100,
    # The H200 is the H100's chip with HBM3e: the same SMs, more bandwidth.
    "h200": dataclasses.replace(_H100, name="h200", dram_bytes_per_s=4.8e12),
    "a100": Target(
        name="a100",
        num_sms=108,
        l2_bytes=40 << 20,
        smem_per_sm=164 << 10,
        smem_per_block=163 << 10,
        max_threads_per_sm=2048,
        max_blocks_per_sm=32,
        regs_per_sm=65536,
        warp_size=32,
        dram_bytes_per_s=2.0e12,
        clock_hz=1.41e9,
        dram_latency_s=550e-9,
        launch_s=2e-6,
        capability=80,
    ),
}
DEFAULT_GPU = "h100"
"""What a CUDA module without ``coil.target`` is planned for."""
TARGETS["cpu-interpreter"] = dataclasses.replace(
    TARGETS[DEFAULT_GPU], name="cpu-interpreter", serial=True, capability=0
)

# Per-architecture figures CUDA does not report: (resident blocks per SM, load latency).
_ARCH = {(9, 0): (32, 600e-9), (8, 0): (32, 550e-9), (8, 6): (16, 550e-9), (8, 9): (24, 550e-9)}


def named(name: str) -> Target:
    """The named description; a sentence listing the names otherwise."""
    try:
        return TARGETS[name]
    except KeyError:
        known = ", ".join(TARGETS)
        raise ValueError(f"unknown target {name!r} (known: {known})") from None


def from_properties(props: object) -> Target:
    """A target from CUDA device properties (``torch.cuda.get_device_properties``);
    fields a torch build does not report keep the default GPU's."""
    base = TARGETS[DEFAULT_GPU]

    def get(field: str, default):
        v = getattr(props, field, None)
        return default if v in (None, 0) else v

    major, minor = get("major", 9), get("minor", 0)
    blocks, latency = _ARCH.get((major, minor), _ARCH.get((major, 0), (32, base.dram_latency_s)))
    bus, mem_khz = get("memory_bus_width", 0), get("memory_clock_rate", 0)
    bandwidth = 2 * bus / 8 * mem_khz * 1e3 if bus and mem_khz else base.dram_bytes_per_s
    smem_sm = get("shared_memory_per_multiprocessor", base.smem_per_sm)
    return Target(
        name=str(get("name", "cuda")),
        num_sms=int(get("multi_processor_count", base.num_sms)),
        l2_bytes=int(get("L2_cache_size", base.l2_bytes)),
        smem_per_sm=int(smem_sm),
        smem_per_block=int(get("shared_memory_per_block_optin", smem_sm)),
        max_threads_per_sm=int(get("max_threads_per_multi_processor", base.max_threads_per_sm)),
        max_blocks_per_sm=blocks,
        regs_per_sm=int(get("regs_per_multiprocessor", base.regs_per_sm)),
        warp_size=int(get("warp_size", base.warp_size)),
        dram_bytes_per_s=float(bandwidth),
        clock_hz=float(get("clock_rate", base.clock_hz / 1e3)) * 1e3,
        dram_latency_s=latency,
        launch_s=base.launch_s,
        capability=10 * int(major) + int(minor),
    )


def read_cuda(index: int | None = None) -> Target:
    """The target of CUDA device ``index`` (the current one by default)."""
    import torch

    if index is None:
        index = torch.cuda.current_device()
    return _read_cuda(index)


@functools.cache
def _read_cuda(index: int) -> Target:
    import torch

    return from_properties(torch.cuda.get_device_properties(index))


def for_device(device: str) -> Target:
    """The target a graph on ``device`` ("cuda:1", "cpu") compiles for: the GPU's
    properties as read, or ``cpu-interpreter``; a CUDA graph compiled where no
    GPU can be read (FakeTensors, a machine without one) gets :data:`DEFAULT_GPU`."""
    if not device.startswith("cuda"):
        return TARGETS["cpu-interpreter"]
    import torch

    if not torch.cuda.is_available():
        return TARGETS[DEFAULT_GPU]
    index = int(device.split(":", 1)[1]) if ":" in device else None
    return read_cuda(index)


def resolve(name: str, device: str) -> Target:
    """The backend option ``target``: "auto" reads the device; else a name."""
    return for_device(device) if name == "auto" else named(name)


# -- the module -----------------------------------------------------------------


def module_device(module: ModuleOp) -> str:
    """The device of the first tensor a function of ``module`` takes or returns."""
    from xdsl.dialects import func

    for fn in module.ops:
        if not isinstance(fn, func.FuncOp):
            continue
        for t in [*fn.function_type.inputs.data, *fn.function_type.outputs.data]:
            device = getattr(t, "device_attr", None)
            if device is not None:
                return device.data
    return "cpu"


def module_target(module: ModuleOp) -> Target:
    """The target ``module`` is compiled for: its ``coil.target``, else
    :data:`DEFAULT_GPU` for CUDA tensors and ``cpu-interpreter`` otherwise."""
    attr = module.attributes.get(ATTR)
    if attr is not None:
        return Target.from_attr(attr)
    if module_device(module).startswith("cuda"):
        return TARGETS[DEFAULT_GPU]
    return TARGETS["cpu-interpreter"]


def set_module_target(module: ModuleOp, target: Target) -> None:
    module.attributes[ATTR] = target.to_attr()


__all__ = [
    "ATTR",
    "DEFAULT_GPU",
    "TARGETS",
    "Target",
    "for_device",
    "from_properties",
    "module_target",
    "named",
    "read_cuda",
    "resolve",
    "set_module_target",
]
