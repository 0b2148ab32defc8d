# RUN: %served_python %s | filecheck %s
# What the forward saves for the backward under each setting of the backend's
# `partition` option (coil/frontend/partition.py): the joint graph of one
# training step of Linear-GELU(tanh)-Linear, cut by torch's partitioners.
import torch

from coil.frontend.capture import capture_training
from coil.frontend.partition import partition_function


def saved(setting):
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(
        torch.nn.Linear(8, 32), torch.nn.GELU(approximate="tanh"), torch.nn.Linear(32, 8)
    )
    (graphs,) = capture_training(
        mlp, (torch.randn(4, 8),), partition_fn=partition_function(setting)
    )
    print(f"{setting}: {graphs.saved_bytes()} bytes")
    for node in graphs.saved_activations():
        made = graphs.producer(node)
        print(f"  {tuple(node.meta['val'].shape)} {made.target if made is not None else '-'}")


for setting in ("save-all", "min-cut", "budget=0"):
    saved(setting)

# save-all keeps every value the backward reads: the product, the GELU's
# output (the second product's weight gradient reads it) and the transposed
# weight view the input gradient reads.
# CHECK-LABEL: save-all: 2048 bytes
# CHECK-NEXT:  (4, 32) aten.addmm.default
# CHECK-NEXT:  (4, 32) aten.gelu.default
# CHECK-NEXT:  (32, 8) aten.permute.default
# The default (min-cut) recomputes the view in the backward; what it saves is
# the cut of fewest bytes among those that recompute no product.
# CHECK-LABEL: min-cut: 1024 bytes
# CHECK-NEXT:  (4, 32) aten.addmm.default
# CHECK-NEXT:  (4, 32) aten.gelu.default
# A budget of 0 keeps nothing beyond the step's inputs: the backward
# recomputes the forward (checkpointing the whole graph).
# CHECK-LABEL: budget=0: 0 bytes
# CHECK-NOT:   aten.


# An operand of an equality comparison is saved, never recomputed: amax's
# backward compares tanh(x) with the maximum, and a recomputed tanh(x) need
# not equal the forward's bit for bit (a vectorized and a scalar loop of the
# C++ kernels differ in the last bit). save-all saves it anyway; min-cut,
# which recomputes tanh without the rule, saves it too.
def saved_amax(setting):
    x = torch.randn(4, 8, requires_grad=True)
    fn = partition_function(setting)
    (graphs,) = capture_training(lambda x: torch.tanh(x).amax(-1), (x,), partition_fn=fn)
    made = [graphs.producer(n) for n in graphs.saved_activations()]
    print(f"amax {setting}: " + " ".join(str(m.target) for m in made if m is not None))


for setting in ("save-all", "min-cut"):
    saved_amax(setting)

# CHECK-LABEL: amax save-all:
# CHECK-SAME:  aten.tanh.default
# CHECK-LABEL: amax min-cut:
# CHECK-SAME:  aten.tanh.default
