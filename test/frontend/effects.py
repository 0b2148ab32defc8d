# RUN: %served_python %s | filecheck %s
# An op with side effects reaches the backend wrapped in with_effects (an effect
# token in, the token out): linalg.inv checks its info result with
# aten._linalg_check_errors, which raises on a singular matrix. The op imports
# as a call with no results (an extern: kept, in program order) and the token
# passes through unchanged.
import torch

from coil.testing import print_imported


def fn(x):
    return torch.linalg.inv(x) * 2


print_imported(fn, (torch.randn(3, 3),))

# CHECK-LABEL: func.func @forward(%arg0: !aten.tensor<[0], f32>, %arg1: !aten.tensor<[3, 3], f32>)
# CHECK:         %[[INV:.*]], %[[INFO:.*]] = aten.operator "aten::linalg_inv_ex"(%arg1)
# CHECK-NEXT:    aten.operator "aten::_linalg_check_errors"(%[[INFO]], "linalg.inv", is_matrix = true)
# CHECK:         func.return %arg0, %{{.*}} : !aten.tensor<[0], f32>,
