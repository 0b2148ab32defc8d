# RUN: %served_python %s | filecheck %s
# LayerNorm is a multi-output op (output, mean, rstd): all three results are
# real SSA results; only the first is used.
import torch

from coil.examples.models import LayerNorm
from coil.testing import print_imported

print_imported(LayerNorm(32), (torch.randn(4, 8, 32),))

# CHECK-LABEL: func.func @forward
# CHECK: %[[Y:.*]], %{{.*}}, %{{.*}} = aten.native_layer_norm.default(%{{.*}}, normalized_shape = [32], %{{.*}}, %{{.*}}, eps = 1.0e-05)
# CHECK-SAME: : (!aten.tensor<[4, 8, 32], f32>, !aten.tensor<[4, 8, 1], f32>, !aten.tensor<[4, 8, 1], f32>)
# CHECK-NEXT: func.return %[[Y]] : !aten.tensor<[4, 8, 32], f32>
