# RUN: %served_python %s | filecheck %s
# Attention: views, transposes (non-contiguous strides in the types),
# expand + clone before bmm, and the softmax in between.
import torch

from coil.examples.models import Attention
from coil.testing import print_imported

print_imported(Attention(32, 4), (torch.randn(2, 16, 32),))

# CHECK-LABEL: func.func @forward
# CHECK: aten.split_with_sizes.default(%{{.*}}, split_sizes = [32, 32, 32], dim = 2)
# CHECK-SAME: (!aten.tensor<[2, 16, 32], f32, strides [1536, 96, 1]>
# CHECK: aten.view.default(%{{.*}}, size = [2, 16, 4, 8]) : !aten.tensor<[2, 16, 4, 8], f32, strides [1536, 96, 8, 1]>
# CHECK: aten.permute.default(%{{.*}}, dims = [0, 2, 1, 3]) : !aten.tensor<[2, 4, 16, 8], f32, strides [1536, 8, 96, 1]>
# CHECK: aten.bmm.default
# CHECK: aten._softmax.default(%{{.*}}, dim = -1, half_to_float = false) : !aten.tensor<[2, 4, 16, 16], f32>
# CHECK: aten.bmm.default
# CHECK: aten.clone.default(%{{.*}}, memory_format = contiguous_format) : !aten.tensor<[2, 16, 4, 8], f32>
# CHECK: func.return %{{.*}} : !aten.tensor<[2, 16, 32], f32>
