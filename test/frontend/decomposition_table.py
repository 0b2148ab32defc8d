# RUN: %served_python %s | filecheck %s
# The decomposition table coil traces with (frontend/decompositions.py), as
# Inductor's differs from torch's core table:
# - linalg_vector_norm (F.normalize) is decomposed: a sum of powers and a root
#   the loop level fuses, never an ATen call; bf16 computes in f32 (torch's
#   reference decomposition upcasts);
# - baddbmm stays whole in its dtype (the core table's decomposition runs a
#   bf16 baddbmm as an f32 bmm).
import torch
import torch.nn.functional as F

from coil.testing import print_imported


def fn(x, bias, a, b):
    return F.normalize(x, dim=-1), torch.baddbmm(bias, a, b, alpha=0.5)


bf16 = torch.bfloat16
print_imported(
    fn,
    (
        torch.randn(4, 8, dtype=bf16),
        torch.randn(2, 1, 5, dtype=bf16),
        torch.randn(2, 3, 4, dtype=bf16),
        torch.randn(2, 4, 5, dtype=bf16),
    ),
)

# CHECK-LABEL: func.func @forward
# CHECK-NOT: linalg_vector_norm
# CHECK: aten._to_copy.default(%arg0, dtype = f32)
# CHECK: aten.sum.dim_IntList({{.*}}, dim = [-1], keepdim = true) : !aten.tensor<[4, 1], f32>
# CHECK-NOT: linalg_vector_norm
# CHECK: aten.baddbmm.default(%arg1, %arg2, %arg3, alpha = 0.5) : !aten.tensor<[2, 3, 5], bf16>
