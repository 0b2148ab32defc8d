# RUN: %served_python %s | filecheck %s
# softmax / log_softmax import as the _softmax/_log_softmax composites with
# their dim and half_to_float arguments.
import torch

from coil.testing import print_imported

print_imported(lambda x: (torch.softmax(x, -1), torch.log_softmax(x, 0)), (torch.randn(4, 16),))

# CHECK-LABEL: func.func @forward(%arg0: !aten.tensor<[4, 16], f32>) -> (!aten.tensor<[4, 16], f32>, !aten.tensor<[4, 16], f32>)
# CHECK-NEXT: %[[S:.*]] = aten._softmax.default(%arg0, dim = -1, half_to_float = false) : !aten.tensor<[4, 16], f32>
# CHECK-NEXT: %[[L:.*]] = aten._log_softmax.default(%arg0, dim = 0, half_to_float = false) : !aten.tensor<[4, 16], f32>
# CHECK-NEXT: func.return %[[S]], %[[L]]
