# RUN: %served_python %s | filecheck %s
# A float computed from sizes as the Scalar operand of mul/div/add/sub/rsub
# (var's backward multiplies by 2 / (n - 1) so under dynamic=True; the fuzzer
# found it failing to import): the Tensor overload with the 0-d f64 tensor
# num / den, which promotes against a dimensioned float tensor as the Python
# float does; against a 0-d or an integer tensor (where the float gives that
# tensor's dtype or the default one, an f64 tensor f64) it is cast to the
# node's result dtype first.
import torch

from coil.testing import print_imported


def fn(x, n):
    s = 2 / (x.shape[0] - 1)
    return (
        torch.ops.aten.mul.Scalar(x, s),
        torch.ops.aten.mul.Scalar(x.sum(), s),
        torch.ops.aten.div.Scalar(n, s),
    )


print_imported(fn, (torch.randn(5, 8), torch.arange(5)), dynamic=True)

# CHECK-LABEL: func.func @forward
# CHECK-SAME: %arg2: !aten.tensor<{{\[}}[[S0:s[0-9]+]], [[S1:s[0-9]+]]], f32>
# CHECK-SAME: %arg3: !aten.tensor<{{\[}}[[S0]]], i64>
# CHECK: %[[TWO:.*]] = aten.scalar_tensor.default(s = 2, dtype = f64)
# CHECK: %[[DEN:.*]] = aten.scalar_tensor.default(s = [[S0]] - 1, dtype = f64)
# CHECK: %[[Q:.*]] = aten.div.Tensor(%[[TWO]], %[[DEN]]) : !aten.tensor<[], f64>
# CHECK: aten.mul.Tensor(%arg2, %[[Q]]) : !aten.tensor<{{\[}}[[S0]], [[S1]]], f32>
# CHECK: %[[SUM:.*]] = aten.sum.dim_IntList(%arg2
# CHECK: %[[Q2:.*]] = aten.div.Tensor({{.*}}) : !aten.tensor<[], f64>
# CHECK: %[[C2:.*]] = aten._to_copy.default(%[[Q2]], dtype = f32) : !aten.tensor<[], f32>
# CHECK: aten.mul.Tensor(%[[SUM]], %[[C2]]) : !aten.tensor<[], f32>
# CHECK: %[[Q3:.*]] = aten.div.Tensor({{.*}}) : !aten.tensor<[], f64>
# CHECK: %[[C3:.*]] = aten._to_copy.default(%[[Q3]], dtype = f32) : !aten.tensor<[], f32>
# CHECK: aten.div.Tensor(%arg3, %[[C3]]) : !aten.tensor<{{\[}}[[S0]]], f32>
