# RUN: %python %s | filecheck %s
# FX stack traces become op locations, printed with debuginfo.
import torch
from coil.testing import print_imported


def model(x):
    y = torch.relu(x)
    return y + 1


print_imported(model, (torch.randn(4),), debuginfo=True)

# CHECK: aten.relu.default(%{{.*}}) : !aten.tensor<[4], f32> loc("{{.*}}locations.py":9:0)
# CHECK: aten.add.Tensor(%{{.*}}, %{{.*}}) : !aten.tensor<[4], f32> loc("{{.*}}locations.py":10:0)
