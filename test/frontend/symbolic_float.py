# RUN: %served_python %s | filecheck %s
# A float computed from sizes under dynamic=True (x.shape[0] / 2; a batch-norm
# backward's decomposition computes 1 / (n*h*w) so) imports as the 0-d f64
# tensor num / den on the consumer's device, which promotes with x as the
# Python float does. (1.0 / x.numel() Dynamo itself turns into tensor ops.)
import torch

from coil.testing import print_imported


def fn(x):
    return x * (x.shape[0] / 2), x * (1.0 / x.numel())


print_imported(fn, (torch.randn(5, 8),), dynamic=True)

# CHECK-LABEL: func.func @forward
# CHECK-SAME: %arg0: index {coil.symbol = #coil.expr<[[S0:s[0-9]+]]>}
# CHECK-SAME: %arg2: !aten.tensor<{{\[}}[[S0]], [[S1:s[0-9]+]]], f32>
# CHECK: %[[H:.*]] = aten.scalar_tensor.default(s = [[S0]], dtype = f64) : !aten.tensor<[], f64>
# CHECK: %[[TWO:.*]] = aten.scalar_tensor.default(s = 2, dtype = f64) : !aten.tensor<[], f64>
# CHECK: %[[Q:.*]] = aten.div.Tensor(%[[H]], %[[TWO]]) : !aten.tensor<[], f64>
# CHECK: aten.mul.Tensor(%arg2, %[[Q]]) : !aten.tensor<{{\[}}[[S0]], [[S1]]], f32>
# Dynamo's tensorify pass spells the second division true_divide, an alias
# of div imported as div (true_divide has no lowering of its own).
# CHECK-NOT: aten.operator "aten::true_divide
# CHECK: = aten.div.Tensor(
# CHECK-NOT: aten.operator "aten::true_divide
