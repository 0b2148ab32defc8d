# RUN: %served_python %s | filecheck %s
# The fusion goals of the default pipeline, on real models: row softmax and
# log_softmax are one kernel, layernorm is one kernel (a Welford reduction with
# its pointwise epilogue), a chain of 10 pointwise ops is one kernel. Top-level
# nests are the lines indented by 4; members of a group are indented further.
import torch
import torch.nn.functional as F

from coil.pipeline import PIPELINES
from coil.testing import print_imported

default = PIPELINES["buffer"]

print("// softmax")
print_imported(lambda x: torch.softmax(x, -1), (torch.randn(8, 64),), pipeline=default)
# CHECK-LABEL: // softmax
# CHECK: buffer.alloc : !buffer.buffer<[8, 64], f32>
# CHECK-NEXT: {{^    }}loop.fused [8] [64] outs(
# CHECK-NOT: {{^    }}loop.
# CHECK: func.return

print("// softmax, dynamic")
print_imported(
    lambda x: torch.softmax(x, -1), (torch.randn(8, 64),), dynamic=True, pipeline=default
)
# CHECK-LABEL: // softmax, dynamic
# CHECK: {{^    }}loop.fused [s{{[0-9]+}}] [s{{[0-9]+}}] outs(
# CHECK-NOT: {{^    }}loop.
# CHECK: func.return

print("// log_softmax")
print_imported(lambda x: torch.log_softmax(x, -1), (torch.randn(8, 64),), pipeline=default)
# CHECK-LABEL: // log_softmax
# CHECK: {{^    }}loop.fused [8] [64] outs(
# CHECK-NOT: {{^    }}loop.
# CHECK: func.return

print("// layernorm")
ln = torch.nn.LayerNorm(32)
print_imported(ln, (torch.randn(4, 8, 32),), pipeline=default)
# CHECK-LABEL: // layernorm
# CHECK: {{^    }}loop.fused [4, 8] [32] outs(
# CHECK: loop.reduction welford [4, 8] [32]
# CHECK: loop.pointwise [4, 8, 32]
# CHECK-NOT: {{^    }}loop.
# CHECK: func.return


def chain(x, y):
    for _ in range(5):
        x = torch.sigmoid(x * 1.5 + y)
    return x


print("// pointwise chain")
print_imported(chain, (torch.randn(16, 32), torch.randn(16, 32)), pipeline=default)
# CHECK-LABEL: // pointwise chain
# CHECK-COUNT-1: {{^    }}loop.pointwise [16, 32] outs(
# CHECK-NOT: {{^    }}loop.
# CHECK: func.return

print("// gelu mlp epilogue")
print_imported(lambda x: F.gelu(x) * 2 + 1, (torch.randn(8, 64),), pipeline=default)
# CHECK-LABEL: // gelu mlp epilogue
# CHECK-COUNT-1: {{^    }}loop.pointwise [8, 64] outs(
# CHECK-NOT: {{^    }}loop.
