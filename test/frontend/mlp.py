# RUN: %served_python %s | filecheck %s
# An MLP: parameters are graph inputs (as AOTAutograd lifts them), linear
# layers are addmm of a permuted weight, gelu stays one op.
import torch

from coil.examples.models import MLP
from coil.testing import print_imported

print_imported(MLP(32, 64), (torch.randn(8, 32),))

# CHECK-LABEL: func.func @forward
# CHECK-SAME: (%arg0: !aten.tensor<[64, 32], f32>, %arg1: !aten.tensor<[64], f32>, %arg2: !aten.tensor<[8, 32], f32>
# CHECK-SAME: -> !aten.tensor<[8, 32], f32>
# CHECK: %[[T:.*]] = aten.permute.default(%arg0, dims = [1, 0]) : !aten.tensor<[32, 64], f32, strides [1, 32]>
# CHECK-NEXT: %[[MM:.*]] = aten.addmm.default(%arg1, %arg2, %[[T]]) : !aten.tensor<[8, 64], f32>
# CHECK-NEXT: %[[G:.*]] = aten.gelu.default(%[[MM]]) : !aten.tensor<[8, 64], f32>
# CHECK: aten.addmm.default(%arg4, %[[G]], %{{.*}}) : !aten.tensor<[8, 32], f32>
# CHECK: func.return
