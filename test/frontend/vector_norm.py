# RUN: %python %s | filecheck %s
# linalg_vector_norm (F.normalize) is decomposed while tracing, as Inductor's
# table does: a sum of powers and a root the loop level fuses, never an ATen
# call. bf16 computes in f32 (torch's reference decomposition upcasts).
import torch
import torch.nn.functional as F

from coil.testing import print_imported


def fn(x):
    return F.normalize(x, dim=-1)


print_imported(fn, (torch.randn(4, 8, dtype=torch.bfloat16),))

# CHECK-LABEL: func.func @forward
# CHECK-NOT: linalg_vector_norm
# CHECK: aten._to_copy.default(%arg0, dtype = f32)
# CHECK: aten.sum.dim_IntList({{.*}}, dim = [-1], keepdim = true) : !aten.tensor<[4, 1], f32>
# CHECK-NOT: linalg_vector_norm
