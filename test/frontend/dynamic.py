# RUN: %served_python %s | filecheck %s
# dynamic=True: sizes are symbols, SymInt inputs are `index` arguments that
# bind their symbol, size arithmetic folds into expressions (no sym_size ops).
import torch

from coil.testing import print_imported


def fn(x, y):
    return (x.view(-1) * 2, x.shape[0] * 3 + 1, torch.cat([x, y], 0))


print_imported(fn, (torch.randn(5, 8), torch.randn(3, 8)), dynamic=True)

# CHECK-LABEL: func.func @forward
# CHECK-SAME: %arg0: index {coil.symbol = #coil.expr<[[S0:s[0-9]+]]>}
# CHECK-SAME: %arg2: !aten.tensor<{{\[}}[[S0]], [[S1:s[0-9]+]]], f32>
# CHECK-NOT: sym_size
# CHECK: aten.view.default(%arg2, size = [-1]) : !aten.tensor<{{\[}}[[S1]]*[[S0]]], f32>
# CHECK: aten.cat.default([%arg2, %arg4]) : !aten.tensor<{{\[}}[[S2:s[0-9]+]] + [[S0]], [[S1]]], f32>
# CHECK: %[[E:.*]] = aten.constant 3*[[S0]] + 1 : index
# CHECK: func.return %{{.*}}, %[[E]], %{{.*}} : !aten.tensor<{{.*}}>, index, !aten.tensor<{{.*}}>
