# RUN: %served_python %s | filecheck %s
# RUN: %served_python %s | fx-opt --print-debuginfo | filecheck %s
# FX stack traces become op locations, printed with debuginfo and parsed back
# by fx-opt: each op names the user line it came from (the line above its CHECK).
import torch

from coil.testing import print_imported


def model(x):
    y = torch.relu(x)
    # CHECK: aten.relu.default(%{{.*}}) : !aten.tensor<[4], f32> loc("{{.*}}locations.py":[[# @LINE - 1]]:0)
    z = y + 1
    # CHECK: aten.add.Tensor(%{{.*}}, %{{.*}}) : !aten.tensor<[4], f32> loc("{{.*}}locations.py":[[# @LINE - 1]]:0)
    return z


print_imported(model, (torch.randn(4),), debuginfo=True)
