# RUN: %served_python %s | filecheck %s
# get_attr constants: small ones inline as dense literals, large ones become
# trailing arguments named by coil.constant.
import torch
from torch.fx.experimental.proxy_tensor import make_fx

from coil.frontend.fx_importer import import_graph
from coil.ir import print_module

small = torch.tensor([1.0, 2.0, 3.0])
large = torch.arange(256, dtype=torch.float32).reshape(16, 16)


def fn(x):
    return x * small, x.sum() + large


gm = make_fx(fn)(torch.randn(16, 3))
print(print_module(import_graph(gm)), end="")

# CHECK-LABEL: func.func @forward
# A large constant starting at an aligned storage offset is coil.aligned (the
# same tensor every call: launches need not check it).
# CHECK-SAME: (%[[X:.*]]: !aten.tensor<[16, 3], f32>, %[[L:.*]]: !aten.tensor<[16, 16], f32> {coil.constant = "_tensor_constant1", coil.aligned})
# CHECK-NEXT: %[[C:.*]] = aten.tensor_constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00]> : tensor<3xf32> -> !aten.tensor<[3], f32>
# CHECK-NEXT: aten.mul.Tensor(%[[X]], %[[C]])
# CHECK: aten.add.Tensor(%{{.*}}, %[[L]])
