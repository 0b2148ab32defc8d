"""How a loop nest becomes a kernel: the one place that decides, for every pass.

``target.py``   what the device is: SM count, L2, shared memory, registers,
                bandwidth, latency, read from ``torch.cuda.get_device_properties``
                or a named description (``h100``, ``h200``, ``a100``,
                ``cpu-interpreter``), carried by the module as ``coil.target``;
``access.py``   how a nest's loads and stores walk memory: strides per loop
                index, the order the output and the reduction are walked in,
                and *the* inner/outer/strided classification of a reduction;
``cost.py``     the roofline-style cost model: bytes at the device's bandwidth,
                latency of the loads a program waits for in turn, occupancy
                from warps and registers, launches;
``hints.py``    the number each size symbol stands for where a plan needs one:
                the example sizes Dynamo traced with (``coil.size_hints`` on
                the function), in force for one pass's ``apply``;
``plan.py``     the kernel plans built on it: a reduction's tile (persistent or
                looped, XBLOCK, RBLOCK, warps), whether and how to split it in
                two stages, a pointwise tile's estimate; each with the estimate
                that justifies it (``KernelPlan.summary``).

The package sits between the dialects and the passes: it imports ``coil.dialects``
only, so ``transforms/`` (``loop-split-reduction``) and ``lowering/``
(``convert-loop-to-tt``) both ask it the same questions without importing each
other (DESIGN.md: dialects <- transforms/lowering <- targets).
"""
